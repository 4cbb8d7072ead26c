#!/usr/bin/env bash
# Runs the tests N times and reports every test that failed at least once (with how many times), so a flaky test shows
# up before it fails a good change at random in CI:
#   deploy/test-repeat.sh N                                  every test, N times (after one build)
#   deploy/test-repeat.sh N --filter RouseReachabilityTests  one filter (any `swift test` arguments)
# Each run is `swift test --skip-build` with the test command's environment (ROUSE_TEST_RUN, ROUSE_STRICT, the stall
# detector's limit); the per-run logs stay in a temporary directory, named at the end. Exit status 1 when any test
# failed in any run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ]; then
    echo "usage: $0 N [swift test arguments, e.g. --filter RouseReachabilityTests]" >&2
    exit 64
fi
runs=$1
shift
logs=$(mktemp -d "${TMPDIR:-/tmp}/rouse-test-repeat.XXXXXX")
ROUSE_STRICT=1 swift build --build-tests >"$logs/build.log" 2>&1 || {
    echo "test-repeat: the build failed (see $logs/build.log)" >&2
    exit 1
}
status=0
for i in $(seq 1 "$runs"); do
    log="$logs/run-$i.log"
    if ROUSE_TEST_RUN="repeat$$-$i" ROUSE_STRICT=1 ROUSE_LOOP_STALL_LIMIT_MS="${ROUSE_LOOP_STALL_LIMIT_MS:-2000}" \
        swift test --skip-build "$@" >"$log" 2>&1; then
        echo "run $i/$runs: passed" >&2
    else
        echo "run $i/$runs: FAILED" >&2
        touch "$logs/run-$i.failed"
        status=1
    fi
    deploy/check-leftovers.sh "repeat$$-$i" >>"$log" 2>&1 || {
        echo "run $i/$runs: left processes or namespaces behind" >&2
        status=1
    }
done
# Swift Testing prints `✘ Test name() failed` (or `recorded an issue`) per failing test; XCTest `Test Case '…' failed`.
python3 - "$logs" "$runs" <<'PY'
import collections, glob, os, re, sys
logs, runs = sys.argv[1], int(sys.argv[2])
failed = collections.Counter()
crashed = []
for path in sorted(glob.glob(os.path.join(logs, "run-*.log"))):
    text = open(path, errors="replace").read()
    names = set(re.findall(r"✘ Test (.+?) (?:failed|recorded an issue)", text))
    names |= set(re.findall(r"Test Case '(.+?)' failed", text))
    for name in names:
        failed[name] += 1
    if not names and os.path.exists(path.replace(".log", ".failed")):
        # The run failed without naming a test: the test process crashed (a trap, the stall detector) or did not build.
        reason = re.search(r"Fatal error: .*|exited with unexpected signal code \d+", text)
        crashed.append(f"{os.path.basename(path)}: {reason.group(0) if reason else 'failed without naming a test'}")
for name, count in sorted(failed.items(), key=lambda item: (-item[1], item[0])):
    print(f"{count}/{runs}  {name}")
for line in crashed:
    print(line)
if not failed and not crashed:
    print(f"no test failed in {runs} run(s)")
PY
echo "logs: $logs" >&2
exit "$status"
