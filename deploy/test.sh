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
ROUSE_STRICT=1 swift test --skip-build "$@"
