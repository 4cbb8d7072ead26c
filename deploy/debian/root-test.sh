#!/bin/bash
# Runs inside the clean Debian 12 root that deploy/package-test.sh made and booted (systemd-nspawn: systemd is PID
# 1, the network is loopback only): the three packages installed by apt with their dependencies, and nothing else
# of Rouse (no Swift toolchain, no repository: only the test PKI in /root/certs). The units are started with
# systemctl, as an operator would.
#
#   root-test.sh VERSION COMMIT
set -euo pipefail
version=$1
commit=$2
C=/root/certs
export LC_ALL=C.UTF-8

step() { echo "== $*" >&2; }
fail() {
    echo "root-test: FAILED: $*" >&2
    for log in /tmp/*.out /tmp/*.err; do
        [ -s "$log" ] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }
    done
    exit 1
}
children=()
stop_children() {
    for pid in "${children[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${children[@]}"; do wait "$pid" 2>/dev/null || true; done
    children=()
}
trap stop_children EXIT
# wait_for FILE PATTERN SECONDS: until FILE has a line matching PATTERN.
wait_for() {
    local deadline=$((SECONDS + $3))
    until grep -q -E "$2" "$1" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || fail "no '$2' in $1 within $3 s"
        sleep 0.1
    done
}
# json_string NAME: the value of "NAME":"…" in stdin (the root has no jq on purpose: an operator's minimal box).
json_string() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" | head -n 1; }
rss() { awk '/^VmRSS/ {printf "%.1f MiB", $2 / 1024}' "/proc/$1/status"; }

step "no Swift toolchain in this root"
if command -v swift >/dev/null || [ -e /opt/swift ] || ls /usr/lib/swift* >/dev/null 2>&1; then
    fail "a Swift toolchain or runtime is present"
fi

step "--version of every binary"
for program in rouse rouse-gateway rouse-agent rouse-pushd; do
    text=$("$program" --version)
    case "$text" in
        "$version (commit $commit, release build"*) echo "$program --version: $text" ;;
        *) fail "$program --version printed '$text', expected '$version (commit $commit, release build…'" ;;
    esac
done

step "the handler user from sysusers.d"
getent passwd rouse-handler >/dev/null || fail "no user rouse-handler (the agent's --handler-user)"
echo "rouse-handler: $(getent passwd rouse-handler)"

step "man pages and shell completions installed"
for program in rouse rouse-gateway rouse-agent; do
    page=/usr/share/man/man1/$program.1.gz
    zcat "$page" | grep -q "^\.Nm $program\$" || fail "$page is not $program's man page"
    bash -n "/usr/share/bash-completion/completions/$program" || fail "the bash completion of $program does not parse"
    [ -s "/usr/share/zsh/vendor-completions/_$program" ] && [ -s "/usr/share/fish/vendor_completions.d/$program.fish" ] ||
        fail "no zsh or fish completion for $program"
done
zcat /usr/share/man/man1/rouse.1.gz | grep -q "^\.It Em init" || fail "rouse's man page lacks rouse gateway init"
bash -c 'source /usr/share/bash-completion/completions/rouse && complete -p rouse' || fail "rouse's completion does not load"

step "ldd: every binary of the packages links Debian's libraries only"
for package in rouse rouse-gateway rouse-agent; do
    libraries=()
    while IFS= read -r file; do
        [ -f "$file" ] && [ -x "$file" ] && [ "$(head -c 4 "$file" | tail -c 3)" = ELF ] || continue
        ldd "$file" >/tmp/ldd.out 2>&1 || fail "ldd $file failed: $(cat /tmp/ldd.out)"
        if grep -q "not found" /tmp/ldd.out; then fail "$file: $(grep "not found" /tmp/ldd.out)"; fi
        while read -r path; do
            real=$(readlink -f "$path")
            owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$real" 2>/dev/null || dpkg -S "/usr$real" 2>/dev/null ||
                dpkg -S "${real#/usr}" 2>/dev/null) || fail "$file links $path, which no Debian package installed"
            libraries+=("${owner%%:*}")
        done < <(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' /tmp/ldd.out)
    done < <(dpkg -L "$package")
    echo "$package links: $(printf '%s\n' "${libraries[@]}" | sort -u | tr '\n' ' ')"
done

step "handler client libraries: librouse-handler.so.0 (C), rouse_handler (Python), the protocol document"
library=$(dpkg -L rouse-agent | grep '/librouse-handler\.so\.0$' || true)
[ -n "$library" ] && [ -f "$library" ] && [ -f /usr/include/rouse-handler.h ] &&
    dpkg -L rouse-agent | grep -q '/pkgconfig/rouse-handler\.pc$' ||
    fail "librouse-handler.so.0, its header or its pkg-config file is missing"
ldd "$library" >/tmp/ldd.out 2>&1 || fail "ldd $library: $(cat /tmp/ldd.out)"
grep -q "not found" /tmp/ldd.out && fail "$library: $(grep "not found" /tmp/ldd.out)"
pc=$(dpkg -L rouse-agent | grep '/rouse-handler\.pc$')
grep -qx "libdir=$(dirname "$library")" "$pc" && grep -q -- '-Wl,-rpath,${libdir}' "$pc" ||
    fail "rouse-handler.pc does not give the library's run path: $(cat "$pc")"
[ -f /usr/share/rouse/python/rouse_handler.py ] || fail "rouse_handler.py is missing"
[ -f /usr/share/doc/rouse-agent/handler-protocol.md ] && [ -f /usr/share/doc/rouse-agent/softphone.md ] &&
    [ -f /usr/share/doc/rouse-agent/examples/sip/kamailio-rouse-push.cfg ] ||
    fail "the handler protocol, softphone documents or the SIP recipe are missing"
echo "librouse-handler.so.0 links: $(awk '$2 == "=>" {print $1}' /tmp/ldd.out | tr '\n' ' ')"

step "the commented examples in /etc/rouse pass the installed parsers"
# gateway.json.example without its // comments, its files made to exist under /tmp/example, migrated there (the
# gateway's own parser; unknown or mistyped members fail). Tests/RouseFirstRunTests checks that it shows every
# member and the defaults.
mkdir -p /tmp/example
cp $C/server.pem $C/server.key /tmp/example/
cp $C/ca.pem /tmp/example/provider-ca.pem
cp $C/apns-key.pub.pem /tmp/example/ABCDE12345.pub.pem
sed -E -e 's@(^|[[:space:]])//.*$@\1@' -e 's@/etc/rouse/gateway/@/tmp/example/@g' \
    -e 's@/var/lib/rouse-gateway/@/tmp/example/@g' /etc/rouse/gateway.json.example >/tmp/example/gateway.json
rouse gateway migrate --config /tmp/example/gateway.json >/tmp/example.out 2>&1 ||
    fail "gateway.json.example: $(cat /tmp/example.out)"
grep -q -E '^schema version 0 -> [1-9]' /tmp/example.out || fail "migrate of a new database said: $(cat /tmp/example.out)"
echo "gateway.json.example parsed; $(cat /tmp/example.out)"
# The handler example as shipped, then with every commented key line taken in.
handler_example=/etc/rouse/handlers.d/example.toml.example
cp $handler_example /tmp/example/example.toml
rouse agent handlers check /tmp/example/example.toml || fail "example.toml.example does not pass handlers check"
sed -E 's/^# ([a-z-]+ = |\[limits\])/\1/' $handler_example >/tmp/example/all.toml
grep -q '^allow-root = ' /tmp/example/all.toml && grep -q '^voip-deadline-seconds = ' /tmp/example/all.toml ||
    fail "the uncommented handler example lacks keys: $(cat /tmp/example/all.toml)"
rouse agent handlers check /tmp/example/all.toml || fail "example.toml.example with every key does not pass"

step "rouse mock-apns and rouse send, end to end"
rouse mock-apns --listen 127.0.0.1:2197 --cert $C/server.pem --key $C/server.key --keys $C/keys.json \
    >/tmp/mock.out 2>/tmp/mock.err &
children+=($!)
wait_for /tmp/mock.out "listening on" 10
send=(--topic com.example.rouse --env https://127.0.0.1:2197 --ca-file $C/ca.pem --auth-key $C/apns-key.p8
    --key-id ROUSEKEY01 --team-id ROUSETEAM1)
rouse send voip --token 00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0 \
    --payload '{"aps":{},"caller":"Alice"}' "${send[@]}" >/tmp/send.out 2>&1 || fail "rouse send: $(cat /tmp/send.out)"
grep -q '^delivered ' /tmp/send.out || fail "rouse send: $(cat /tmp/send.out)"
cat /tmp/send.out

step "a closed output pipe ends rouse send quietly (SIGPIPE, no trap)"
for i in $(seq 1 3000); do printf '%064x\n' "$i"; done >/tmp/tokens
set +o pipefail
rouse send voip --tokens-file /tmp/tokens --json "${send[@]}" 2>/tmp/pipe.err | head -c 1 >/dev/null
status=${PIPESTATUS[0]}
set -o pipefail
[ "$status" -eq 141 ] || fail "rouse send | head -c 1: exit $status (expected 141, SIGPIPE)"
[ ! -s /tmp/pipe.err ] || fail "rouse send | head -c 1 wrote to stderr: $(head -c 500 /tmp/pipe.err)"
echo "rouse send --json | head -c 1: exit $status, nothing on stderr"

step "rouse-pushd: enabled, not started before its configuration; then a push through it with rouse send --via"
[ "$(systemctl is-enabled rouse-pushd.service)" = enabled ] || fail "rouse-pushd.service is not enabled"
systemctl start rouse-pushd.service
[ "$(systemctl show -P ConditionResult rouse-pushd.service)" = no ] && ! systemctl -q is-active rouse-pushd.service ||
    fail "rouse-pushd.service started before /etc/rouse/pushd.json existed"
install -m 0640 -g rouse-pushd $C/apns-key.p8 /etc/rouse/pushd-test.p8
install -m 0644 $C/ca.pem /etc/rouse/pushd-test-ca.pem
cat >/etc/rouse/pushd.json <<JSON
{"unix": {"path": "/run/rouse-pushd/api.sock", "mode": "0660", "allowUIDs": [0]},
 "apps": {"test": {"topic": "com.example.rouse", "endpoint": "https://127.0.0.1:2197",
   "caFile": "/etc/rouse/pushd-test-ca.pem", "keyFile": "/etc/rouse/pushd-test.p8",
   "keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1"}}}
JSON
systemctl start rouse-pushd.service || fail "rouse-pushd did not start: $(journalctl -u rouse-pushd -n 20 --no-pager)"
rouse send voip --token 00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0 --topic com.example.rouse \
    --via /run/rouse-pushd/api.sock --app test >/tmp/via.out 2>&1 || fail "rouse send --via: $(cat /tmp/via.out)"
grep -q '^delivered ' /tmp/via.out || fail "rouse send --via: $(cat /tmp/via.out)"
systemctl reload rouse-pushd.service
systemctl -q is-active rouse-pushd.service || fail "rouse-pushd ended on reload"
curl -sf --unix-socket /run/rouse-pushd/api.sock http://localhost/health | grep -q '"status":"ok"' ||
    fail "rouse-pushd /health after reload"
systemctl stop rouse-pushd.service
rm -f /etc/rouse/pushd.json /etc/rouse/pushd-test.p8 /etc/rouse/pushd-test-ca.pem
cat /tmp/via.out
stop_children

step "the units before the first-run commands: enabled, not started"
for unit in rouse-gateway rouse-agent; do
    [ "$(systemctl is-enabled $unit.service)" = enabled ] || fail "$unit.service is not enabled after installation"
    systemctl start $unit.service
    [ "$(systemctl show -P ConditionResult $unit.service)" = no ] && ! systemctl -q is-active $unit.service ||
        fail "$unit.service started before it was configured"
done
echo "rouse-gateway and rouse-agent: enabled, start skipped (ConditionPathExists)"

step "rouse gateway init --self-signed, then the unit"
rouse gateway init --hostname localhost --self-signed --provider-listen 127.0.0.1:2297 \
    --device-listen 127.0.0.1:2298 >/tmp/init.out 2>&1 || fail "gateway init: $(cat /tmp/init.out)"
cat /tmp/init.out
[ "$(stat -c '%U %a' /var/lib/rouse-gateway/gateway.sqlite)" = "rouse-gateway 640" ] ||
    fail "the database is $(stat -c '%U %a' /var/lib/rouse-gateway/gateway.sqlite)"
[ "$(stat -c '%U:%G %a' /etc/rouse/gateway/server.key)" = "root:rouse-gateway 640" ] ||
    fail "server.key is $(stat -c '%U:%G %a' /etc/rouse/gateway/server.key)"
if rouse gateway init --hostname localhost --self-signed >/tmp/again.out 2>&1; then fail "a second init overwrote"; fi
rouse gateway keys add --config /etc/rouse/gateway.json --key-id ROUSEKEY01 --team-id ROUSETEAM1 \
    --public-key $C/apns-key.pub.pem --topic com.example.rouse
# The schema is this build's (init created it); migrate says so, as root and as the service user.
rouse gateway migrate --config /etc/rouse/gateway.json >/tmp/migrate.out 2>&1 || fail "migrate: $(cat /tmp/migrate.out)"
grep -q -E '^schema version [1-9][0-9]*: up to date$' /tmp/migrate.out || fail "migrate said: $(cat /tmp/migrate.out)"
runuser -u rouse-gateway -- rouse gateway migrate --config /etc/rouse/gateway.json --json >/tmp/migrate.out 2>&1 ||
    fail "migrate as rouse-gateway: $(cat /tmp/migrate.out)"
grep -q -E '^\{"from":([1-9][0-9]*),"to":\1\}$' /tmp/migrate.out || fail "migrate --json said: $(cat /tmp/migrate.out)"
echo "rouse gateway migrate: $(cat /tmp/migrate.out)"
systemctl start rouse-gateway.service || fail "systemctl start rouse-gateway: $(journalctl -u rouse-gateway | tail)"
[ "$(systemctl show -P User rouse-gateway.service)" = rouse-gateway ] || fail "the gateway does not run as rouse-gateway"
admin=(curl -sf --unix-socket /run/rouse-gateway/admin.sock --http2-prior-knowledge)
"${admin[@]}" http://localhost/health >/dev/null || fail "admin /health on the Unix socket"
gateway=$(systemctl show -P MainPID rouse-gateway.service)
echo "rouse-gateway.service active, pid $gateway, user $(stat -c %U /proc/$gateway)"

step "a push through the gateway to a device channel (curl)"
tls=(--cacert /etc/rouse/gateway/server.pem)
secret=$(rouse gateway devices enroll-secret --config /etc/rouse/gateway.json)
credential=$(curl -sf "${tls[@]}" -d "{\"secret\":\"$secret\"}" https://localhost:2298/device/v1/enroll | json_string credential)
[ -n "$credential" ] || fail "device enrollment with curl"
token=$(curl -sf "${tls[@]}" -H "authorization: Bearer $credential" -d '{"topic":"com.example.rouse.voip"}' \
    https://localhost:2298/device/v1/tokens | json_string token)
[ -n "$token" ] || fail "push token with curl"
gateway_send=(--topic com.example.rouse --env https://localhost:2297 --ca-file /etc/rouse/gateway/server.pem
    --auth-key $C/apns-key.p8 --key-id ROUSEKEY01 --team-id ROUSETEAM1)
# The device's channel is open (rouse send gives VoIP pushes apns-expiration 0: now or never, as APNs does).
curl -s -N --max-time 20 "${tls[@]}" -H "authorization: Bearer $credential" https://localhost:2298/device/v1/channel \
    >/tmp/channel.out &
children+=($!)
wait_for /tmp/channel.out '"type":"hello"' 10
rouse send voip --token "$token" --payload '{"call":"alice"}' "${gateway_send[@]}" >/tmp/send-gateway.out 2>&1 ||
    fail "rouse send to the gateway: $(cat /tmp/send-gateway.out)"
wait_for /tmp/channel.out "\"payload\":\"$(printf '{"call":"alice"}' | base64)\"" 10
grep '"type":"push"' /tmp/channel.out
stop_children

step "rouse agent enroll, handlers add/check, systemctl enable --now rouse-agent, a push to the handler"
rouse gateway devices enroll-secret --config /etc/rouse/gateway.json >/root/enroll-secret
rouse agent enroll --gateway https://localhost:2298 --ca /etc/rouse/gateway/server.pem \
    --secret-file /root/enroll-secret >/tmp/enroll.out 2>&1 || fail "agent enroll: $(cat /tmp/enroll.out)"
cat /tmp/enroll.out
dropin=/etc/systemd/system/rouse-agent.service.d/enrollment.conf
[ -f "$dropin" ] && [ -f /var/lib/rouse/secrets/device.credential ] || fail "no drop-in or credential"
[ -f /var/lib/rouse/keys/state-key.cred ] || fail "the state key is not a systemd credential: $(ls -l /var/lib/rouse/keys)"
if rouse agent enroll --gateway https://localhost:2298 --secret-file /root/enroll-secret >/tmp/again.out 2>&1; then
    fail "a second enroll did not refuse"
fi
rouse agent handlers add example --topic com.example.rouse \
    --command /usr/libexec/rouse/rouse-example-handler --mode report
rouse agent handlers check
printf 'topic = "com.example.bad"\ncommand = ["bin/handler"]\n' >/tmp/bad.toml
if rouse agent handlers check /tmp/bad.toml >/tmp/check.out 2>&1; then fail "a bad handler file passed"; fi
grep -q "command\[0\] must be an absolute path" /tmp/check.out || fail "check said: $(cat /tmp/check.out)"
cat /tmp/check.out
systemctl enable --now rouse-agent.service || fail "systemctl enable --now rouse-agent: $(journalctl -u rouse-agent | tail)"
deadline=$((SECONDS + 20))
until rouse agent status --json >/tmp/status.out 2>&1 && grep -q '"channel":"open"' /tmp/status.out &&
    voip=$(json_string com.example.rouse.voip </tmp/status.out) && [ -n "$voip" ]; do
    [ $SECONDS -lt $deadline ] ||
        fail "no open channel or no token: $(cat /tmp/status.out; journalctl -u rouse-agent | tail)"
    sleep 0.2
done
rouse send voip --token "$voip" --payload '{"call":"bob"}' "${gateway_send[@]}" >/tmp/send-agent.out 2>&1 ||
    fail "rouse send to the agent's token: $(cat /tmp/send-agent.out)"
# The agent acknowledges a VoIP push to the gateway once its handler reported the call.
deadline=$((SECONDS + 20))
until "${admin[@]}" http://localhost/metrics | grep -q -E '^rouse_gateway_acks_total [1-9]'; do
    [ $SECONDS -lt $deadline ] || fail "the handler never reported the call: $(journalctl -u rouse-agent | tail -20)"
    sleep 0.2
done
journalctl -u rouse-agent -o cat | grep -E "^(push|reported) " || true
rouse agent status
agent=$(systemctl show -P MainPID rouse-agent.service)

step "per-user mode: alice enrolls (rouse agent enroll --user), her user manager runs rouse-agent --user, her handler reports a push"
useradd --create-home --shell /bin/bash alice
uid=$(id -u alice)
# Her user manager without a login (a desktop session starts it at login); its runtime directory with it.
loginctl enable-linger alice
deadline=$((SECONDS + 30))
until systemctl -q is-active "user@$uid.service" && [ -S "/run/user/$uid/systemd/private" ]; do
    [ $SECONDS -lt $deadline ] || fail "alice's user manager did not start: $(systemctl status user@$uid.service)"
    sleep 0.2
done
as_alice() {
    runuser -u alice -- /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/alice USER=alice \
        LOGNAME=alice XDG_RUNTIME_DIR=/run/user/$uid "$@"
}
as_alice systemctl --user start rouse-agent.service
[ "$(as_alice systemctl --user show -P ConditionResult rouse-agent.service)" = no ] &&
    ! as_alice systemctl --user -q is-active rouse-agent.service || fail "alice's agent started before she enrolled"
rouse gateway devices enroll-secret --config /etc/rouse/gateway.json >/home/alice/enroll-secret
chown alice: /home/alice/enroll-secret
as_alice rouse agent enroll --user --gateway https://localhost:2298 --ca /etc/rouse/gateway/server.pem \
    --secret-file /home/alice/enroll-secret >/tmp/enroll-user.out 2>&1 || fail "enroll --user: $(cat /tmp/enroll-user.out)"
cat /tmp/enroll-user.out
user_dropin=/home/alice/.config/systemd/user/rouse-agent.service.d/enrollment.conf
[ -f "$user_dropin" ] || fail "no drop-in $user_dropin"
keys=$(find /home/alice/.local/state/rouse/keys -type f -printf '%u %m\n' | sort -u)
[ "$keys" = "alice 600" ] || fail "alice's data key files: '$keys' (expected alice 600)"
as_alice rouse agent handlers add example --directory /home/alice/.config/rouse/handlers.d \
    --topic com.example.rouse --command /usr/libexec/rouse/rouse-example-handler --mode report >/tmp/add-user.out
cat /tmp/add-user.out
grep -q "systemctl --user reload rouse-agent" /tmp/add-user.out || fail "handlers add named the system agent's reload"
as_alice rouse agent handlers check /home/alice/.config/rouse/handlers.d
as_alice systemctl --user enable --now rouse-agent.service ||
    fail "systemctl --user enable --now rouse-agent: $(journalctl _SYSTEMD_USER_UNIT=rouse-agent.service | tail)"
user_socket=/run/user/$uid/rouse/agent.sock
deadline=$((SECONDS + 20))
until as_alice rouse agent status --json --socket "$user_socket" >/tmp/status-user.out 2>&1 &&
    grep -q '"channel":"open"' /tmp/status-user.out &&
    alice_voip=$(json_string com.example.rouse.voip </tmp/status-user.out) && [ -n "$alice_voip" ]; do
    [ $SECONDS -lt $deadline ] || fail "alice's agent: no open channel or no token: $(cat /tmp/status-user.out;
        journalctl _SYSTEMD_USER_UNIT=rouse-agent.service | tail)"
    sleep 0.2
done
[ "$alice_voip" != "$voip" ] || fail "alice's agent has the system agent's token"
user_agent=$(as_alice systemctl --user show -P MainPID rouse-agent.service)
[ "$(stat -c %U "/proc/$user_agent")" = alice ] || fail "the per-user agent does not run as alice"
acks=$("${admin[@]}" http://localhost/metrics | sed -n 's/^rouse_gateway_acks_total //p')
rouse send voip --token "$alice_voip" --payload '{"call":"carol"}' "${gateway_send[@]}" >/tmp/send-user.out 2>&1 ||
    fail "rouse send to alice's token: $(cat /tmp/send-user.out)"
deadline=$((SECONDS + 20))
until [ "$("${admin[@]}" http://localhost/metrics | sed -n 's/^rouse_gateway_acks_total //p')" -gt "$acks" ]; do
    [ $SECONDS -lt $deadline ] ||
        fail "alice's handler never reported the call: $(journalctl _SYSTEMD_USER_UNIT=rouse-agent.service | tail -20)"
    sleep 0.2
done
as_alice rouse agent status --socket "$user_socket"
echo "alice's rouse-agent --user (pid $user_agent) woke her handler; the push was acknowledged"

step "systemd-analyze verify on the installed units (with the package's and enroll's drop-ins)"
systemd-analyze verify /lib/systemd/system/rouse-gateway.service /lib/systemd/system/rouse-agent.service \
    /lib/systemd/system/rouse-pushd.service >/tmp/verify.out 2>&1 || fail "systemd-analyze verify: $(cat /tmp/verify.out)"
if grep -E "rouse-(gateway|agent|pushd)" /tmp/verify.out; then fail "systemd-analyze verify warned"; fi
as_alice systemd-analyze verify --user /usr/lib/systemd/user/rouse-agent.service >/tmp/verify.out 2>&1 ||
    fail "systemd-analyze verify --user: $(cat /tmp/verify.out)"
if grep -E "rouse-agent" /tmp/verify.out; then fail "systemd-analyze verify --user warned"; fi
as_alice systemctl --user cat rouse-agent.service |
    grep -q "^ExecStart=/usr/bin/rouse-agent --user --gateway https://localhost:2298 --ca /home/alice/" ||
    fail "alice's agent unit does not run the enrolled command line: $(as_alice systemctl --user cat rouse-agent.service)"
systemctl cat rouse-agent.service | grep -q "^ExecStart=/usr/bin/rouse-agent .*--gateway https://localhost:2298" ||
    fail "the agent unit does not run the enrolled command line"
echo "verified"

step "idle RSS (10 s after the last push)"
sleep 10
echo "rouse-gateway $(rss "$gateway"), rouse-agent $(rss "$agent"), rouse-agent --user $(rss "$user_agent")" \
    "(channels open, one suspended handler each)"
as_alice systemctl --user disable --now rouse-agent.service

step "purge keeps the state unless asked"
export DEBIAN_FRONTEND=noninteractive
apt-get purge -y -qq rouse-agent >/tmp/purge.out 2>&1 || fail "purge rouse-agent: $(cat /tmp/purge.out)"
[ -d /var/lib/rouse/secrets ] || fail "purging rouse-agent removed its state without being asked"
[ ! -e "$dropin" ] || fail "purging rouse-agent left its enrollment drop-in"
echo "rouse-gateway rouse-gateway/purge-database boolean true" | debconf-set-selections
apt-get purge -y -qq rouse-gateway >/tmp/purge.out 2>&1 || fail "purge rouse-gateway: $(cat /tmp/purge.out)"
[ ! -e /var/lib/rouse-gateway ] || fail "purging rouse-gateway when asked kept the database"
[ ! -e /etc/rouse/gateway.json ] || fail "purging rouse-gateway kept gateway.json"
[ -e /etc/rouse/gateway/server.pem ] && [ -e /etc/rouse/gateway/server.key ] ||
    fail "purging rouse-gateway deleted the TLS certificate or key in /etc/rouse/gateway (the operator's files)"
echo "agent state kept (not asked), gateway database removed (asked through debconf)"
echo "root-test: passed" >&2
