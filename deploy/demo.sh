#!/usr/bin/env bash
# Rouse's main job, end to end on loopback (installs what it needs, builds in release mode):
#   1. `rouse send` sends a VoIP push to `rouse mock-apns`, which checks it the way APNs does;
#   2. `rouse send` sends a VoIP push to `rouse-gateway`, which stores it durably and hands it to a Linux
#      device's channel, and the device acknowledges it;
#   3. the same through `rouse-agent`: the push wakes (launches) a handler program, which reports the call;
#   4. a SIP call (SIPp) to a softphone that was asleep: Kamailio holds the INVITE and sends a VoIP push, the agent
#      launches a Python handler that reports the call and starts baresip, which registers and answers (deploy/sip).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
root=$PWD
certs=$root/certs

deploy/install-deps.sh
echo "== building rouse, rouse-gateway, rouse-agent and the example handler (release)"
for product in rouse rouse-gateway rouse-agent rouse-example-handler; do
    swift build -c release --product "$product" >/dev/null
done
bin=$root/.build/release

work=$(mktemp -d /tmp/rouse-demo.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Waits (10 s at most) until FILE has a line matching PATTERN and prints that line.
wait_line() {
    local file=$1 pattern=$2
    for _ in $(seq 1 200); do
        if grep -m1 -E "$pattern" "$file" 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    echo "demo: timed out waiting for '$pattern' in $file" >&2
    cat "$file" >&2 || true
    return 1
}
json_field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p" | head -n1; }

token_auth=(--auth-key "$certs/apns-key.p8" --key-id ROUSEKEY01 --team-id ROUSETEAM1 --ca-file "$certs/ca.pem")
payload='{"aps":{},"call":{"id":"demo-1","caller":"Alice"}}'

echo
echo "== 1. rouse send → rouse mock-apns (Apple's rules, token auth)"
"$bin/rouse" mock-apns --listen 127.0.0.1:0 --cert "$certs/server.pem" --key "$certs/server.key" \
    --keys "$certs/keys.json" --json --log-level warning >"$work/mock.jsonl" &
pids+=($!)
mock=$(wait_line "$work/mock.jsonl" '"event":"listening"' | json_field address)
device_token=a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90
echo "\$ rouse send voip --token ${device_token:0:8}… --topic com.example.rouse --env https://$mock …"
"$bin/rouse" send voip --token "$device_token" --topic com.example.rouse --payload "$payload" \
    --env "https://$mock" "${token_auth[@]}" --quiet
echo "-- what the mock recorded:"
wait_line "$work/mock.jsonl" '"outcome"' | cut -c1-220
echo "\$ rouse send voip … --priority 7   (refused before a byte is sent)"
"$bin/rouse" send voip --token "$device_token" --topic com.example.rouse --payload "$payload" --priority 7 \
    --env "https://$mock" "${token_auth[@]}" --quiet || echo "(exit code $?)"

echo
echo "== 2. rouse send → rouse-gateway → a Linux device's channel"
cat >"$work/gateway.json" <<JSON
{"environment": "sandbox",
 "provider": {"listen": "127.0.0.1:0", "certificate": "$certs/server.pem", "privateKey": "$certs/server.key"},
 "device": {"listen": "127.0.0.1:0", "certificate": "$certs/server.pem", "privateKey": "$certs/server.key"},
 "admin": {"listen": "127.0.0.1:0"},
 "database": "$work/gateway.sqlite",
 "keys": [{"keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1", "publicKey": "$certs/apns-key.pub.pem",
           "topics": ["com.example.rouse", "com.example.phone"]}]}
JSON
"$bin/rouse-gateway" --config "$work/gateway.json" --log-level warning >"$work/gateway.out" &
pids+=($!)
ready=$(wait_line "$work/gateway.out" 'rouse-gateway ready')
echo "$ready"
provider=$(sed -n 's/.*provider=\([^ ]*\).*/\1/p' <<<"$ready")
devices=$(sed -n 's/.*device=\([^ ]*\).*/\1/p' <<<"$ready")
secret=$("$bin/rouse" gateway devices enroll-secret --database "$work/gateway.sqlite")
credential=$(curl -s --cacert "$certs/ca.pem" -d "{\"secret\":\"$secret\"}" "https://$devices/device/v1/enroll" |
    json_field credential)
gw_token=$(curl -s --cacert "$certs/ca.pem" -H "authorization: Bearer $credential" \
    -d '{"topic":"com.example.rouse.voip"}' "https://$devices/device/v1/tokens" | json_field token)
echo "device enrolled (${credential%%.*}), push token for com.example.rouse.voip: ${gw_token:0:16}…"
curl -sN --cacert "$certs/ca.pem" -H "authorization: Bearer $credential" \
    "https://$devices/device/v1/channel" >"$work/channel.ndjson" &
pids+=($!)
wait_line "$work/channel.ndjson" '"type":"hello"' >/dev/null
echo "device channel open"
echo "\$ rouse send voip --token ${gw_token:0:8}… --topic com.example.rouse --env https://$provider …"
start=$(date +%s%N)
"$bin/rouse" send voip --token "$gw_token" --topic com.example.rouse --payload "$payload" \
    --env "https://$provider" "${token_auth[@]}" --quiet
record=$(wait_line "$work/channel.ndjson" '"type":"push"')
end=$(date +%s%N)
echo "-- the device received:"
echo "$record" | cut -c1-220
echo "-- payload: $(json_field payload <<<"$record" | base64 -d)"
id=$(json_field id <<<"$record")
echo "-- acknowledged: $(curl -s --cacert "$certs/ca.pem" -H "authorization: Bearer $credential" \
    -d "{\"ids\":[\"$id\"]}" "https://$devices/device/v1/ack")"
echo "send command start → record on the device channel: $(((end - start) / 1000000)) ms (includes process start)"

echo
echo "== 3. rouse send → rouse-gateway → rouse-agent → a handler program woken for the call"
mkdir -p "$work/handlers.d"
cat >"$work/handlers.d/example.toml" <<TOML
topic = "com.example.rouse"
command = ["$bin/rouse-example-handler", "--mode", "report", "--log", "$work/handler.log"]
push-types = ["voip"]
# The demo's handler is in the build tree, run as the demo's user; a real one runs as --handler-user.
allow-root = true
TOML
# The secret goes through a 0600 file, never the command line (other local users read every process's argv).
(umask 077 && "$bin/rouse" gateway devices enroll-secret --database "$work/gateway.sqlite" >"$work/enroll-secret")
"$bin/rouse-agent" --gateway "https://$devices" --ca "$certs/ca.pem" --enroll-secret-file "$work/enroll-secret" \
    --handlers "$work/handlers.d" --state-dir "$work/state" --socket "$work/agent.sock" --log-level notice \
    >"$work/agent.out" 2>&1 &
agent_pid=$!
pids+=($!)
wait_line "$work/agent.out" 'rouse-agent ready'
for _ in $(seq 1 200); do
    # The agent's state is sealed (docs/state.md): the token comes from its status document.
    agent_token=$("$bin/rouse" agent status --json --socket "$work/agent.sock" 2>/dev/null \
        | sed -n 's/.*"com.example.rouse.voip" *: *"\([0-9a-f]*\)".*/\1/p' || true)
    [ -n "$agent_token" ] && break
    sleep 0.05
done
[ -n "$agent_token" ] || { echo "demo: the agent got no push token" >&2; cat "$work/agent.out" >&2; exit 1; }
echo "agent enrolled; its handler's VoIP push token: ${agent_token:0:16}…"
echo "\$ rouse send voip --token ${agent_token:0:8}… --topic com.example.rouse --env https://$provider …"
"$bin/rouse" send voip --token "$agent_token" --topic com.example.rouse \
    --payload "{\"call\":\"alice\",\"sentAt\":$(date +%s%3N)}" --env "https://$provider" "${token_auth[@]}" --quiet
wait_line "$work/handler.log" 'reported id=' >/dev/null
echo "-- the handler it launched (its own log; its stdout is its own journal stream, or the agent's log metadata):"
grep -E 'registered launchReason|^push id=|reported id=' "$work/handler.log" | cut -c1-160
echo "-- the agent:"
grep -E 'call reported' "$work/agent.out" | cut -c1-160
echo "(latencyMs: provider request → gateway → device channel → agent → handler launched and holding the payload)"
"$bin/rouse" agent status --socket "$work/agent.sock"
echo "-- what it keeps on disk is sealed; the data key can be rotated while it runs:"
ls "$work/state/secrets"
echo "\$ rouse agent rotate-key"
"$bin/rouse" agent rotate-key --socket "$work/agent.sock"

echo
echo "== 4. SIPp calls a softphone that is asleep (not running): Kamailio → push → agent → handler → baresip answers"
# deploy/sip: the Kamailio fragment, the push script it runs, the Python handler (on clients/python/rouse_handler.py)
# and the SIPp scenario, as the SIP end-to-end test runs them; docs/softphone.md explains each.
sip=$work/sip
mkdir -p "$sip/baresip"
# baresip also listens for SIP over TLS on its port + 1: the phone's port comes with the next one free too.
read -r proxy_port phone_port ctrl_port caller_port < <(python3 -c '
import socket
held = []
def bound(port, kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        return None
    held.append(s)
    return s.getsockname()[1]
def phone():
    while True:
        port = bound(0)
        if port < 65535 and bound(port + 1) and bound(port + 1, socket.SOCK_DGRAM):
            return port
proxy = bound(0); phone_port = phone(); ctrl = bound(0); caller = bound(0)
print(proxy, phone_port, ctrl, caller)')
cat >"$sip/kamailio.cfg" <<CFG
#!KAMAILIO
debug=1
listen=udp:127.0.0.1:$proxy_port
include_file "$root/deploy/sip/kamailio-rouse-push.cfg"
modparam("ctl", "binrpc", "unix:$sip/kamailio.ctl")
CFG
cat >"$sip/baresip/config" <<CFG
sip_listen        127.0.0.1:$phone_port
net_interface     127.0.0.1
module_path       /usr/lib/baresip/modules
call_max_calls    1
audio_player      alsa,null
audio_alert       alsa,null
audio_source      ausine,440
ausrc_srate       48000
ausrc_channels    2
module            g711.so
module            alsa.so
module            ausine.so
module_tmp        account.so
module_app        ctrl_tcp.so
ctrl_tcp_listen   127.0.0.1:$ctrl_port
CFG
echo "<sip:bob@127.0.0.1:$proxy_port;transport=udp>;answermode=auto;regint=300;audio_codecs=PCMU" >"$sip/baresip/accounts"
: >"$sip/baresip/contacts"
cat >"$work/handlers.d/phone.toml" <<TOML
topic = "com.example.phone"
command = ["/usr/bin/python3", "$root/deploy/sip/rouse-sip-handler.py", "--name", "phone", "--baresip-config", "$sip/baresip", "--ctrl", "127.0.0.1:$ctrl_port", "--log", "$sip/phone.jsonl"]
push-types = ["voip"]
allow-root = true
environment = ["PYTHONPATH=$root/clients/python"]
TOML
kill -HUP "$agent_pid" # the agent reloads handlers.d and gets the new handler's token
for _ in $(seq 1 200); do
    phone_token=$("$bin/rouse" agent status --json --socket "$work/agent.sock" 2>/dev/null \
        | sed -n 's/.*"com.example.phone.voip" *: *"\([0-9a-f]*\)".*/\1/p' || true)
    [ -n "$phone_token" ] && break
    sleep 0.05
done
[ -n "$phone_token" ] || { echo "demo: no push token for the phone handler" >&2; exit 1; }
ROUSE_SIP_PUSH="$root/deploy/sip/rouse-sip-push" ROUSE_BIN="$bin/rouse" ROUSE_PUSH_URL="https://$provider" \
    ROUSE_TOPIC=com.example.phone ROUSE_CA_FILE="$certs/ca.pem" ROUSE_AUTH_KEY="$certs/apns-key.p8" \
    ROUSE_KEY_ID=ROUSEKEY01 ROUSE_TEAM_ID=ROUSETEAM1 ROUSE_PUSH_LOG="$sip/push.jsonl" \
    /usr/sbin/kamailio -DD -E -m 32 -M 8 -Y "$sip" -w "$sip" -f "$sip/kamailio.cfg" >/dev/null 2>"$sip/kamailio.log" &
pids+=($!)
for _ in $(seq 1 200); do
    /usr/sbin/kamcmd -s "unix:$sip/kamailio.ctl" core.version >/dev/null 2>&1 && break
    sleep 0.05
done
# The phone's token goes to the proxy, as an app uploads its PushKit token (baresip cannot send RFC 8599's pn-*).
/usr/sbin/kamcmd -s "unix:$sip/kamailio.ctl" htable.sets pn bob "$phone_token" >/dev/null
echo "kamailio on 127.0.0.1:$proxy_port knows bob's VoIP token ${phone_token:0:16}…; bob is registered: $(
    /usr/sbin/kamcmd -s "unix:$sip/kamailio.ctl" ul.dump | grep -q 'AoR: bob' && echo yes || echo no), baresip running: $(
    pgrep -x baresip >/dev/null && echo yes || echo no)"
echo "\$ sipp -sf deploy/sip/sipp-uac.xml -s bob -m 1 127.0.0.1:$proxy_port"
(cd "$sip" && /usr/bin/sipp -sf "$root/deploy/sip/sipp-uac.xml" -s bob -i 127.0.0.1 -p "$caller_port" -m 1 -l 1 \
    -d 500 -trace_logs -log_file "$sip/sipp.log" -recv_timeout 15000 -timeout 30 -nostdin \
    "127.0.0.1:$proxy_port" >"$sip/sipp.out" 2>&1) || { echo "demo: the call failed" >&2; tail -30 "$sip/sipp.out" >&2; exit 1; }
answered=$(awk '$1 == "answered" {printf "%.1f", $3 / 1000}' "$sip/sipp.log")
for _ in $(seq 1 200); do grep -q '"callEnded"' "$sip/phone.jsonl" 2>/dev/null && break; sleep 0.05; done
python3 - "$sip/kamailio.log" "$sip/phone.jsonl" "$answered" <<'PY'
import json, re, sys
kamailio = open(sys.argv[1]).read()
pushed = float(re.search(r"rouse PUSH .* t=([0-9.]+)", kamailio).group(1)) * 1000
woken = float(re.search(r"rouse WOKEN .* t=([0-9.]+)", kamailio).group(1)) * 1000
events = {}
for line in open(sys.argv[2]):
    event = json.loads(line)
    events.setdefault(event["event"], event)
print("-- the call, as the proxy and the handler saw it (ms after Kamailio suspended the INVITE and pushed):")
print("   push script sends          %6.1f" % (events["reported"]["sentAt"] - pushed))
print("   handler launched, registered %6.1f" % (events["registered"]["t"] - pushed))
print("   reportCall sent            %6.1f" % (events["reported"]["t"] - pushed))
print("   baresip's REGISTER at proxy %5.1f  (the INVITE resumed)" % (woken - pushed))
print("INVITE → 200 OK at the caller: %s ms (an awake, registered phone answers in a few ms: rouse-bench sip)" % sys.argv[3])
PY
echo "-- after the call: baresip quit (un-REGISTERed) before the handler ended the call and exited:"
echo "   bob registered: $(/usr/sbin/kamcmd -s "unix:$sip/kamailio.ctl" ul.dump | grep -q 'AoR: bob' && echo yes || echo no);" \
    "baresip running: $(pgrep -x baresip >/dev/null && echo yes || echo no);" \
    "strikes: $("$bin/rouse" agent status --json --socket "$work/agent.sock" | python3 -c '
import json, sys
print([h["strikes"] for h in json.load(sys.stdin)["handlers"] if h["name"] == "phone"][0])')"

echo
echo "demo complete"
