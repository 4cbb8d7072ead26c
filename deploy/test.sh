#!/usr/bin/env bash
# The whole test suite: dependencies, formatting, a warnings-as-errors build, every test, the Debian packages in a
# clean Debian 12 root, then a check that the tests left no process or network namespace behind. Network tests
# build their own namespaces and need root (CI runs as root).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

deploy/install-deps.sh
echo "== docs/architecture.md shows Package.swift's targets" >&2
deploy/target-graph.sh --check docs/architecture.md
echo "== the rules of docs/architecture.md (deploy/check-rules.sh)" >&2 && deploy/check-rules.sh
echo "== swift format lint" >&2
swift format lint --strict --recursive Package.swift Sources Tests
echo "== build (warnings are errors)" >&2
ROUSE_STRICT=1 swift build --build-tests
echo "== test" >&2
# The run's name reaches every process the tests start (through the environment) and the network namespaces they
# create; after the tests, deploy/check-leftovers.sh fails the run if any of them is still there.
run="run$$"
status=0
# Each stage's output is also kept in a log so the end of the run can say which stages and which tests failed (a CI
# page often shows only the last lines of a long run).
logs=$(mktemp -d "${TMPDIR:-/tmp}/rouse-test-$run.XXXXXX")
failed_stages=()
trap 'rm -rf "$logs"' EXIT
stage() { # stage NAME COMMAND...: runs the command, its output to the terminal and to the stage's log
    local name=$1 rc=0
    shift
    "$@" 2>&1 | tee "$logs/$name.log" || rc=$?
    if [ "$rc" -ne 0 ]; then
        status=1
        failed_stages+=("$name (exit $rc)")
    fi
}
run_tests() { ROUSE_TEST_RUN="$run" ROUSE_STRICT=1 ROUSE_LOOP_STALL_LIMIT_MS=2000 swift test --skip-build "$@"; }
if [ $# -gt 0 ]; then
    stage tests run_tests "$@"
else
    # Three runs, each parallel inside: the agent tests (real handler processes with deadlines of seconds), the
    # gateway tests (attack floods, PostgreSQL clusters, interop clients), then the rest. Together in one run on
    # two cores, the floods starved the deadlines of the agent tests.
    echo "== test: agent" >&2
    stage agent-tests run_tests --filter RouseAgentTests --skip AgentClockStepTests
    # Real clock steps reach every process that watches for them: alone, so no other test's agent sees them.
    echo "== test: agent, clock steps (alone)" >&2
    stage agent-clock-tests run_tests --filter AgentClockStepTests
    echo "== test: gateway" >&2
    stage gateway-tests run_tests --filter RouseGatewayTests
    echo "== test: the rest" >&2
    stage other-tests run_tests --skip "RouseAgentTests|RouseGatewayTests"
fi
# Three gateway nodes on one PostgreSQL under kills, database crashes and link drops for two minutes (docs/gateway.md,
# "Chaos"): fails when a push answered 200 is lost or one is delivered twice. Always in the full run; a filtered run
# adds it with ROUSE_CHAOS_TEST=1.
if [ $# -eq 0 ] || [ "${ROUSE_CHAOS_TEST:-0}" = 1 ]; then
    echo "== chaos: 3 gateway nodes, 3 agents, 120 s of faults (rouse-bench chaos)" >&2
    stage chaos env ROUSE_TEST_RUN="$run" .build/debug/rouse-bench chaos --seconds 120 --interval 5
fi
# Every parser that reads outside bytes under libFuzzer and AddressSanitizer, 15 s each (docs/fuzzing.md); the
# sanitizer build has its own scratch path (.build-fuzz). Always in the full run; a filtered run adds it with
# ROUSE_FUZZ_TEST=1.
if [ $# -eq 0 ] || [ "${ROUSE_FUZZ_TEST:-0}" = 1 ]; then
    echo "== fuzz (deploy/fuzz.sh)" >&2
    stage fuzz deploy/fuzz.sh
fi
# The Debian packages, installed with apt into a clean Debian 12 root without a Swift toolchain and run there
# (release build and root cached outside the checkout, in ~/.cache/rouse-package). Always in the full run; a
# filtered run (./deploy/test.sh --filter X) adds it with ROUSE_PACKAGE_TEST=1.
if [ $# -eq 0 ] || [ "${ROUSE_PACKAGE_TEST:-0}" = 1 ]; then
    echo "== packages in a clean Debian 12 root (deploy/package-test.sh)" >&2
    stage packages env ROUSE_TEST_RUN="$run" deploy/package-test.sh
fi
stage leftovers deploy/check-leftovers.sh "$run"
echo "== summary" >&2
if [ "$status" -eq 0 ]; then
    echo "every stage passed" >&2
else
    printf 'failed: %s\n' "${failed_stages[@]}" >&2
    # The failing tests and the issues they recorded (swift-testing marks both with ✘), and any crash.
    grep -h -E '✘|error: Exited|Fatal error|fatal error' "$logs"/*.log | head -n 80 >&2 || true
fi
exit "$status"
