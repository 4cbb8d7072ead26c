#!/usr/bin/env bash
# Runs the tests N times and reports every test that failed at least once (with how many times), so a flaky test shows
# up before it fails a good change at random in CI:
#   deploy/test-repeat.sh N                                  the test command's test stages, N times (after one build)
#   deploy/test-repeat.sh N --filter RouseReachabilityTests  one filter (any `swift test` arguments)
# Without arguments each run is the three stages of deploy/test.sh (the agent tests, the gateway tests, the rest: one
# `swift test --skip-build` each, as CI runs them); with arguments, one `swift test --skip-build` with them. Each has
# the test command's environment (ROUSE_TEST_RUN, ROUSE_STRICT, the stall detector's limit); the per-run logs stay in
# a temporary directory, named at the end. Exit status 1 when any test failed in any run.
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
swift_test() { # swift_test RUN LOG ARGS...: one `swift test` with the test command's environment, appended to LOG
    local run=$1 log=$2
    shift 2
    ROUSE_TEST_RUN="$run" ROUSE_STRICT=1 ROUSE_LOOP_STALL_LIMIT_MS="${ROUSE_LOOP_STALL_LIMIT_MS:-2000}" \
        swift test --skip-build "$@" >>"$log" 2>&1
}
one_run() { # one_run RUN LOG ARGS...: the given arguments, or the test command's three stages
    local run=$1 log=$2 rc=0
    shift 2
    if [ $# -gt 0 ]; then
        swift_test "$run" "$log" "$@" || rc=1
    else
        swift_test "$run" "$log" --filter RouseAgentTests || rc=1
        swift_test "$run" "$log" --filter RouseGatewayTests || rc=1
        swift_test "$run" "$log" --skip "RouseAgentTests|RouseGatewayTests" || rc=1
    fi
    return "$rc"
}
for i in $(seq 1 "$runs"); do
    log="$logs/run-$i.log"
    : >"$log"
    if one_run "repeat$$-$i" "$log" "$@"; then
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
    if os.path.exists(path.replace(".log", ".failed")):
        # A test process that crashed (a trap, the stall detector) names no test for what it had not finished.
        reasons = re.findall(r"Fatal error: .*|[Ee]xited with unexpected signal code \d+", text)
        if reasons:
            crashed += [f"{os.path.basename(path)}: {reason}" for reason in dict.fromkeys(reasons)]
        elif not names:
            crashed.append(f"{os.path.basename(path)}: failed without naming a test")
for name, count in sorted(failed.items(), key=lambda item: (-item[1], item[0])):
    print(f"{count}/{runs}  {name}")
for line in crashed:
    print(line)
if not failed and not crashed:
    print(f"no test failed in {runs} run(s)")
PY
echo "logs: $logs" >&2
exit "$status"
