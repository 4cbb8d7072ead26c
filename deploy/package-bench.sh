#!/usr/bin/env bash
# One-shot push, process start to exit: the packaged `rouse send voip` (release, Swift runtime linked statically)
# against `curl --http2` sending the same push to the same `rouse mock-apns` on loopback, in one hyperfine run
# (token authentication for both; curl gets a ready-made ES256 provider token, rouse signs its own). Then the
# package sizes and the idle RSS of the packaged daemons. Target: rouse ≤ 1.5 × curl.
#
#   deploy/package-bench.sh [--runs N]     (uses .build/debs from deploy/package.sh, building them if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
runs=100
[ "${1:-}" = --runs ] && runs=$2
for tool in hyperfine curl python3 dpkg-deb; do
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
C="$repo/certs"

"$bin/rouse" mock-apns --listen 127.0.0.1:0 --cert "$C/server.pem" --key "$C/server.key" --keys "$C/keys.json" \
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
hyperfine --style basic --warmup 10 --runs "$runs" --export-json "$work/oneshot.json" \
    -n "rouse send voip (packaged)" "$rouse_command" -n "curl --http2" "$curl_command" >&2
python3 - "$work/oneshot.json" <<'EOF'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
rouse, curl = results["rouse send voip (packaged)"], results["curl --http2"]
print("one-shot VoIP push, process start to exit (median of %d): rouse send %.1f ms, curl --http2 %.1f ms, ratio %.2f"
      % (len(rouse["times"]), rouse["median"] * 1000, curl["median"] * 1000, rouse["median"] / curl["median"]))
EOF

echo "packages:"
for deb in "${debs[@]}"; do
    printf '  %s: %s KiB, installed %s KiB\n' "$(basename "$deb")" "$(du -k "$deb" | cut -f1)" \
        "$(dpkg-deb -f "$deb" Installed-Size)"
done
printf '  binaries:'
for file in "$bin"/* "$work/root/usr/libexec/rouse"/*; do printf ' %s %s MiB' "$(basename "$file")" \
    "$(($(stat -c %s "$file") / 1048576))"; done
echo
