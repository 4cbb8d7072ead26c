#!/usr/bin/env bash
# Rouse's main job, end to end on loopback (installs what it needs, builds in release mode):
#   1. `rouse send` sends a VoIP push to `rouse mock-apns`, which checks it the way APNs does;
#   2. `rouse send` sends a VoIP push to `rouse-gateway`, which stores it durably and hands it to a Linux
#      device's channel, and the device acknowledges it;
#   3. the same through `rouse-agent`: the push wakes (launches) a handler program, which reports the call.
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
           "topics": ["com.example.rouse"]}]}
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
echo "demo complete"
