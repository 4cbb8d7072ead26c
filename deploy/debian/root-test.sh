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
for program in rouse rouse-gateway rouse-agent; do
    text=$("$program" --version)
    case "$text" in
        "$version (commit $commit, release build"*) echo "$program --version: $text" ;;
        *) fail "$program --version printed '$text', expected '$version (commit $commit, release build…'" ;;
    esac
done

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

step "systemd-analyze verify on the installed units (with the package's and enroll's drop-ins)"
systemd-analyze verify /lib/systemd/system/rouse-gateway.service /lib/systemd/system/rouse-agent.service \
    >/tmp/verify.out 2>&1 || fail "systemd-analyze verify: $(cat /tmp/verify.out)"
if grep -E "rouse-(gateway|agent)" /tmp/verify.out; then fail "systemd-analyze verify warned"; fi
systemctl cat rouse-agent.service | grep -q "^ExecStart=/usr/bin/rouse-agent .*--gateway https://localhost:2298" ||
    fail "the agent unit does not run the enrolled command line"
echo "verified"

step "idle RSS (10 s after the last push)"
sleep 10
echo "rouse-gateway $(rss "$gateway"), rouse-agent $(rss "$agent") (channel open, one suspended handler)"

step "purge keeps the state unless asked"
export DEBIAN_FRONTEND=noninteractive
apt-get purge -y -qq rouse-agent >/tmp/purge.out 2>&1 || fail "purge rouse-agent: $(cat /tmp/purge.out)"
[ -d /var/lib/rouse/secrets ] || fail "purging rouse-agent removed its state without being asked"
[ ! -e "$dropin" ] || fail "purging rouse-agent left its enrollment drop-in"
echo "rouse-gateway rouse-gateway/purge-database boolean true" | debconf-set-selections
apt-get purge -y -qq rouse-gateway >/tmp/purge.out 2>&1 || fail "purge rouse-gateway: $(cat /tmp/purge.out)"
[ ! -e /var/lib/rouse-gateway ] || fail "purging rouse-gateway when asked kept the database"
[ ! -e /etc/rouse/gateway.json ] || fail "purging rouse-gateway kept gateway.json"
echo "agent state kept (not asked), gateway database removed (asked through debconf)"
echo "root-test: passed" >&2
