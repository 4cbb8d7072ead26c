#!/usr/bin/env bash
# The packaged programs as a user meets them (issue 31; docs/benchmarks.md, "Footprint"):
# - one-shot push, process start to exit: the packaged `rouse send voip` against `curl --http2` sending the same
#   push to the same `rouse mock-apns` on loopback, run in alternation (pair after pair, so both see the same load)
#   and compared by their medians (token authentication for both; curl gets a ready-made ES256 provider token,
#   rouse signs its own); wall time, CPU and peak RSS of each. Target: rouse ≤ 1.5 × curl.
# - start-up to ready: rouse-gateway (its "ready" line, SQLite store migrated before) and rouse-agent (enrolled
#   before, its "ready" line), median of 5 starts each. Target ≤ 50 ms.
# - idle RSS: rouse-agent 10 s after a VoIP push woke its handler (the channel open, the handler suspended), the
#   handler's, and the gateway's with that channel. Targets: agent ≤ 15 MB, handler ≤ 5 MB.
# - the package sizes and the binaries' sizes.
#
#   deploy/package-bench.sh [--runs N] [--breakdown [--page-out]]
#       N one-shot pairs, default 20; uses .build/debs from deploy/package.sh, building them if missing.
#       --breakdown: where the idle processes' RSS is (deploy/rss-breakdown.py: by ELF section, library, heap,
#       arenas, stacks); the mock and the gateway then run from a copy of the binary, so that the agent's figures
#       are those of a machine where it is the only Rouse process. --page-out: then the agent's and the handler's
#       file pages paged out (process_madvise MADV_PAGEOUT), a second push, 10 s, and the breakdown again.
#       ROUSE_BENCH_AGENT_ENV="NAME=VALUE ..." starts the agent with these variables too, and passes them on to the
#       handler (a lever's measurement, e.g. GLIBC_TUNABLES=glibc.malloc.arena_max=1).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
runs=20
breakdown=no
page_out=no
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --breakdown) breakdown=yes; shift ;;
    --page-out) page_out=yes; shift ;;
    *) echo "usage: deploy/package-bench.sh [--runs N] [--breakdown [--page-out]]" >&2; exit 64 ;;
    esac
done
read -r -a agent_env <<<"${ROUSE_BENCH_AGENT_ENV:-}"
for tool in curl python3 dpkg-deb; do
    command -v "$tool" >/dev/null || { echo "package-bench: $tool is missing (deploy/install-deps.sh)" >&2; exit 1; }
done
shopt -s nullglob
debs=(.build/debs/rouse_*.deb)
[ ${#debs[@]} -gt 0 ] || deploy/package.sh >/dev/null
debs=(.build/debs/*.deb)
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$work/root"; done
bin="$work/root/usr/bin"
# The mock and the gateway: the packaged binary, or with --breakdown a copy of it (see above).
servers=$bin
if [ "$breakdown" = yes ]; then
    servers=$work/servers
    mkdir -p "$servers"
    cp "$bin/rouse" "$servers/rouse"
    ln -s rouse "$servers/rouse-gateway"
fi
C="$repo/certs"

"$servers/rouse" mock-apns --listen 127.0.0.1:0 --cert "$C/server.pem" --key "$C/server.key" --keys "$C/keys.json" \
    >"$work/mock.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$work/mock.out" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/mock.out")
[ -n "$port" ] || { echo "package-bench: the mock did not start: $(cat "$work/mock.out")" >&2; exit 1; }

# An ES256 provider token for curl (JWS: the DER signature from openssl turned into r || s).
jwt=$(python3 - "$C/apns-key.p8" <<'EOF'
import base64, json, subprocess, sys, time
def b64(data): return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
signing_input = b64(json.dumps({"alg": "ES256", "kid": "ROUSEKEY01"}).encode()) + "." + \
    b64(json.dumps({"iss": "ROUSETEAM1", "iat": int(time.time())}).encode())
der = subprocess.run(["openssl", "dgst", "-sha256", "-sign", sys.argv[1]], input=signing_input.encode(),
                     capture_output=True, check=True).stdout
def integer(data, at):  # an ASN.1 INTEGER at `at`: its value as 32 bytes, and where the next one starts
    length = data[at + 1]
    value = data[at + 2:at + 2 + length].lstrip(b"\0")
    return value.rjust(32, b"\0"), at + 2 + length
r, next_at = integer(der, 2)
s, _ = integer(der, next_at)
print(signing_input + "." + b64(r + s))
EOF
)
token=$(printf 'ab%.0s' $(seq 32))
rouse_command="$bin/rouse send voip --token $token --topic com.example.rouse --env https://127.0.0.1:$port \
--ca-file $C/ca.pem --auth-key $C/apns-key.p8 --key-id ROUSEKEY01 --team-id ROUSETEAM1"
curl_command="curl --http2 -s -o /dev/null -f --cacert $C/ca.pem -H 'authorization: bearer $jwt' \
-H 'apns-push-type: voip' -H 'apns-topic: com.example.rouse.voip' -H 'apns-expiration: 0' -d '{\"aps\":{}}' \
https://127.0.0.1:$port/3/device/$token"
# Both must succeed before they are timed.
eval "$rouse_command" >/dev/null || { echo "package-bench: rouse send failed" >&2; exit 1; }
eval "$curl_command" || { echo "package-bench: curl failed" >&2; exit 1; }
# Pairs in alternation after 3 warm-up pairs; each process's wall time, CPU (user + system) and peak RSS from wait4.
python3 - "$runs" "$rouse_command" "$curl_command" <<'EOF'
import os, shlex, statistics, subprocess, sys, time
runs, commands = int(sys.argv[1]), {"rouse send voip": sys.argv[2], "curl --http2": sys.argv[3]}
samples = {name: [] for name in commands}
for pair in range(runs + 3):
    for name, command in commands.items():
        started = time.perf_counter()
        child = subprocess.Popen(shlex.split(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        if status != 0:
            sys.exit("package-bench: %s failed (status %d)" % (name, status))
        if pair >= 3:
            samples[name].append((wall * 1000, (usage.ru_utime + usage.ru_stime) * 1000, usage.ru_maxrss / 1024))
median = {name: [statistics.median(s[i] for s in values) for i in range(3)] for name, values in samples.items()}
for name, (wall, cpu, rss) in median.items():
    print("one-shot VoIP push, %s: %.1f ms wall, %.1f ms CPU, peak RSS %.1f MiB (median of %d pairs)"
          % (name, wall, cpu, rss, runs))
print("ratio rouse send / curl --http2: %.2f (target <= 1.5); load average %.2f"
      % (median["rouse send voip"][0] / median["curl --http2"][0], os.getloadavg()[0]))
EOF

# --- start-up to ready, idle RSS: a gateway (SQLite) and an agent enrolled with it, the example handler woken ---
milliseconds() { echo $(($(date +%s%N) / 1000000)); }
# start_until PATTERN FILE COMMAND...: starts COMMAND (output to FILE) in the background, waits for PATTERN;
# sets started_pid and ready_ms.
start_until() {
    local pattern=$1 file=$2 begin
    shift 2
    begin=$(milliseconds)
    # Emptied here, not by the child's redirection: that one may come after the first grep below, which would
    # then find the previous start's "ready" line.
    : >"$file"
    "$@" >>"$file" 2>&1 &
    started_pid=$!
    pids+=("$started_pid")
    local deadline=$((SECONDS + 30))
    while [ $SECONDS -lt $deadline ]; do
        grep -q "$pattern" "$file" && break
        kill -0 "$started_pid" 2>/dev/null || { echo "package-bench: $1 ended: $(cat "$file")" >&2; exit 1; }
        sleep 0.002
    done
    grep -q "$pattern" "$file" || { echo "package-bench: no '$pattern' from $1 in 30 s: $(cat "$file")" >&2; exit 1; }
    ready_ms=$(($(milliseconds) - begin))
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
median() { tr ' ' '\n' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
cat >"$work/gateway.json" <<JSON
{"environment": "sandbox",
 "provider": {"listen": "127.0.0.1:0", "certificate": "$C/server.pem", "privateKey": "$C/server.key"},
 "device": {"listen": "127.0.0.1:0", "certificate": "$C/server.pem", "privateKey": "$C/server.key"},
 "admin": {"listen": "127.0.0.1:0"}, "database": "$work/gateway.sqlite",
 "keys": [{"keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1", "publicKey": "$C/apns-key.pub.pem",
           "topics": ["com.example.rouse"]}]}
JSON
"$servers/rouse" gateway migrate --config "$work/gateway.json" >/dev/null
gateway_ready=()
for i in 1 2 3 4 5; do
    start_until "rouse-gateway ready" "$work/gateway.out" "$servers/rouse-gateway" --config "$work/gateway.json" \
        --log-level warning
    gateway_ready+=("$ready_ms")
    [ "$i" = 5 ] || stop "$started_pid"
done
gateway=$started_pid
devices=$(sed -n 's/.*device=\([^ ]*\).*/\1/p' "$work/gateway.out")
provider=$(sed -n 's/.*provider=\([^ ]*\).*/\1/p' "$work/gateway.out")
mkdir -p "$work/handlers.d"
printf 'topic = "com.example.rouse"\ncommand = ["%s", "--mode", "report"]\npush-types = ["voip"]\nallow-root = true\n' \
    "$work/root/usr/libexec/rouse/rouse-example-handler" >"$work/handlers.d/example.toml"
if [ ${#agent_env[@]} -gt 0 ]; then
    names=$(printf '"%s", ' "${agent_env[@]%%=*}")
    echo "environment = [${names%, }]" >>"$work/handlers.d/example.toml"
fi
(umask 077 && "$bin/rouse" gateway devices enroll-secret --database "$work/gateway.sqlite" >"$work/secret")
agent_command=(env "${agent_env[@]}" "$bin/rouse-agent" --gateway "https://$devices" --ca "$C/ca.pem" --handlers "$work/handlers.d"
    --state-dir "$work/state" --socket "$work/agent.sock" --log-level notice)
# wait_for_token: until the agent (enrolled, channel open) has its handler's VoIP token; sets voip.
wait_for_token() {
    voip=""
    for _ in $(seq 400); do
        voip=$("$bin/rouse" agent status --json --socket "$work/agent.sock" 2>/dev/null |
            sed -n 's/.*"com.example.rouse.voip" *: *"\([0-9a-f]*\)".*/\1/p' || true)
        [ -n "$voip" ] && return 0
        sleep 0.05
    done
    echo "package-bench: the agent got no token: $(cat "$work/agent.out")" >&2
    exit 1
}
# The first start enrolls (after "ready"); the timed starts are of the enrolled agent.
start_until "rouse-agent ready" "$work/agent.out" "${agent_command[@]}" --enroll-secret-file "$work/secret"
wait_for_token
stop "$started_pid"
agent_ready=()
for _ in 1 2 3 4 5; do
    start_until "rouse-agent ready" "$work/agent.out" "${agent_command[@]}"
    agent_ready+=("$ready_ms")
    agent=$started_pid
    [ ${#agent_ready[@]} = 5 ] || stop "$agent"
done
echo "start-up to ready (median of 5): rouse-gateway $(echo "${gateway_ready[*]}" | median) ms" \
    "(${gateway_ready[*]}), rouse-agent $(echo "${agent_ready[*]}" | median) ms (${agent_ready[*]}); target <= 50 ms"
wait_for_token
"$bin/rouse" send voip --token "$voip" --topic com.example.rouse --env "https://$provider" --ca-file "$C/ca.pem" \
    --auth-key "$C/apns-key.p8" --key-id ROUSEKEY01 --team-id ROUSETEAM1 >/dev/null
sleep 10
rss() { awk '/^VmRSS/ {printf "%.1f MiB", $2 / 1024}' "/proc/$1/status"; }
handler=$(pgrep -P "$agent" | head -n 1 || true)
echo "idle RSS, 10 s after a VoIP push: rouse-agent $(rss "$agent") (channel open; target <= 15 MB)," \
    "example handler $(if [ -n "$handler" ]; then rss "$handler"; else echo "not running"; fi) (target <= 5 MB)," \
    "rouse-gateway $(rss "$gateway") (one channel)${agent_env[*]:+; agent and handler with ${agent_env[*]}}"
if [ "$breakdown" = yes ]; then
    "$repo/deploy/rss-breakdown.py" "$agent" rouse-agent
    [ -z "$handler" ] || "$repo/deploy/rss-breakdown.py" "$handler" rouse-example-handler
    "$repo/deploy/rss-breakdown.py" "$gateway" rouse-gateway
fi
if [ "$page_out" = yes ]; then
    "$repo/deploy/rss-breakdown.py" --page-out "$agent" ${handler:+"$handler"}
    "$bin/rouse" send voip --token "$voip" --topic com.example.rouse --env "https://$provider" \
        --ca-file "$C/ca.pem" --auth-key "$C/apns-key.p8" --key-id ROUSEKEY01 --team-id ROUSETEAM1 >/dev/null
    sleep 10
    "$repo/deploy/rss-breakdown.py" "$agent" "rouse-agent, paged out, 10 s after a second push"
    [ -z "$handler" ] || "$repo/deploy/rss-breakdown.py" "$handler" "example handler, paged out, after that push"
fi
stop "$agent"
[ -z "$handler" ] || kill -KILL "$handler" 2>/dev/null || true
stop "$gateway"

echo "packages:"
for deb in "${debs[@]}"; do
    printf '  %s: %s KiB, installed %s KiB\n' "$(basename "$deb")" "$(du -k "$deb" | cut -f1)" \
        "$(dpkg-deb -f "$deb" Installed-Size)"
done
printf '  binaries:'
for file in "$bin"/* "$work/root/usr/libexec/rouse"/*; do
    if [ -L "$file" ]; then printf ' %s -> %s' "$(basename "$file")" "$(readlink "$file")"; continue; fi
    if [ -x "$file" ]; then printf ' %s %s MiB' "$(basename "$file")" "$(($(stat -c %s "$file") / 1048576))"; fi
done
echo
