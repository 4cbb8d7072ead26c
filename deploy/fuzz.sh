#!/usr/bin/env bash
# Fuzzes every parser that reads outside bytes with libFuzzer (docs/fuzzing.md): builds `rouse-fuzz` with
# `-sanitize=fuzzer,address` into .build-fuzz (ROUSE_FUZZ=1 adds the target; the normal build never sees it), then
# runs each target for a bounded time from the seeds in Tests/Fuzz/corpus/<target>. Fails on the first crash, leak,
# timeout or out-of-memory, printing the reproducer's path and the command that replays it.
#   deploy/fuzz.sh                    every target, 15 s each (deploy/test.sh runs this)
#   deploy/fuzz.sh --seconds 600      the long run: 10 min each
#   deploy/fuzz.sh jwt netlink        only these targets
#   deploy/fuzz.sh --build-only       build, run nothing
# New inputs that add coverage collect in .build-fuzz/corpus/<target> (kept between runs, never committed);
# reproducers land in .build-fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

seconds=15
build_only=0
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
    --seconds)
        seconds=$2
        shift 2
        ;;
    --build-only)
        build_only=1
        shift
        ;;
    -*)
        echo "usage: deploy/fuzz.sh [--seconds N] [--build-only] [TARGET...]" >&2
        exit 2
        ;;
    *)
        targets+=("$1")
        shift
        ;;
    esac
done

scratch=.build-fuzz
# A failed harness check (fatalError) ends as a plain deadly signal: Swift's backtracer, which would otherwise
# print the backtrace, reads foreign stacks and trips AddressSanitizer itself.
export SWIFT_BACKTRACE=enable=no
started=$(date +%s)
# Debug (-Onone): the modules are built with testability, so the harness reaches internal parsers (DeviceAPI,
# SealedFile) through @testable import without product code widening its access; most inputs spend their time in
# Foundation's JSONDecoder, which is optimized either way.
ROUSE_FUZZ=1 swift build --scratch-path "$scratch" --product rouse-fuzz \
    -Xswiftc -sanitize=fuzzer,address 2>&1 | { grep -v -E "Cannot export local symbol '__asan" || true; } >&2
binary="$scratch/debug/rouse-fuzz"
echo "fuzz: build took $(($(date +%s) - started)) s" >&2
[ "$build_only" = 1 ] && exit 0

if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <("$binary" --list | cut -f1)
fi

status=0
printf '%-16s %12s %10s %8s %8s\n' target executions exec/s cov corpus >&2
for target in "${targets[@]}"; do
    seeds="Tests/Fuzz/corpus/$target"
    work="$scratch/corpus/$target"
    artifacts="$scratch/artifacts/$target"
    log="$scratch/logs/$target.log"
    mkdir -p "$work" "$artifacts" "$(dirname "$log")"
    [ -d "$seeds" ] || { echo "fuzz: no seeds in $seeds" >&2; status=1; continue; }
    # -timeout: one input may take 10 s; -rss_limit_mb: 2 GiB; -max_len 16 KiB (the largest seed is a few KiB).
    # ASan's leak check stays on: a parser that leaks per input fails the run.
    if "$binary" "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" "$seeds" >"$log" 2>&1; then
        executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
        cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
        corpus=$(find "$work" -type f | wc -l)
        printf '%-16s %12s %10s %8s %8s\n' "$target" "$executions" "$rate" "${cov:-?}" "$corpus" >&2
    else
        status=1
        echo "fuzz: $target FAILED (log: $log)" >&2
        grep -E 'ERROR: |SUMMARY: |Fatal error|deadly signal|Test unit written to' "$log" | head -20 >&2 || true
        for reproducer in $(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log"); do
            echo "fuzz: reproducer $reproducer; replay: $binary $target $reproducer" >&2
        done
    fi
done
echo "fuzz: $((${#targets[@]})) targets, ${seconds} s each, $(($(date +%s) - started)) s in all" >&2
exit "$status"
