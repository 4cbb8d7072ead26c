#!/usr/bin/env bash
# The whole test suite: dependencies, formatting, a warnings-as-errors build, every test.
# Network tests build their own namespaces and need root (CI runs as root).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

deploy/install-deps.sh
echo "== swift format lint" >&2
swift format lint --strict --recursive Package.swift Sources Tests
echo "== build (warnings are errors)" >&2
ROUSE_STRICT=1 swift build --build-tests
echo "== test" >&2
log=$(mktemp /tmp/rouse-test.XXXXXX)
trap 'rm -f "$log"' EXIT
run_tests() {
    set +e
    ROUSE_STRICT=1 swift test --skip-build "$@" 2>&1 | tee "$log"
    local status=${PIPESTATUS[0]}
    set -e
    return "$status"
}
if run_tests "$@"; then exit 0; fi
# Swift 6.3.1's Foundation.Process.run() can over-read a dirent buffer and die of SIGSEGV
# (swift-corelibs-foundation PR #5472, fixed after 6.3.1). Only that crash — the crashed thread inside
# Process.run in libFoundation — gets one more run; any test failure or other crash fails at once.
if grep -A4 ' crashed:$' "$log" | grep -q 'Process.run() .* in libFoundation.so'; then
    echo "== the test process died in Foundation's Process.run (swift-corelibs-foundation#5472): running again" >&2
    run_tests "$@"
else
    exit 1
fi
