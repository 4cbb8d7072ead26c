#!/usr/bin/env bash
# The whole test suite: dependencies, formatting, a warnings-as-errors build, every test, the Debian packages in a
# clean Debian 12 root, then a check that the tests left no process or network namespace behind. Network tests
# build their own namespaces and need root (CI runs as root).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

deploy/install-deps.sh
echo "== swift format lint" >&2
swift format lint --strict --recursive Package.swift Sources Tests
echo "== build (warnings are errors)" >&2
ROUSE_STRICT=1 swift build --build-tests
echo "== test" >&2
# The run's name reaches every process the tests start (through the environment) and the network namespaces they
# create; after the tests, deploy/check-leftovers.sh fails the run if any of them is still there.
run="run$$"
status=0
ROUSE_TEST_RUN="$run" ROUSE_STRICT=1 swift test --skip-build "$@" || status=$?
# The Debian packages, installed with apt into a clean Debian 12 root without a Swift toolchain and run there
# (release build and root cached outside the checkout: minutes the first time, about two after).
echo "== packages in a clean Debian 12 root (deploy/package-test.sh)" >&2
ROUSE_TEST_RUN="$run" deploy/package-test.sh || status=1
deploy/check-leftovers.sh "$run" || status=1
exit "$status"
