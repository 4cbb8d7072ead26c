#!/usr/bin/env bash
# Fails when a test run left something of ours behind, after saying what and removing it:
#   - processes that carry the run's name in their environment (ROUSE_TEST_RUN=RUN, inherited by everything the
#     tests start: rouse, rouse-gateway, rouse-agent, nghttpd, h2load, curl…, and handlers, whose allow-listed
#     environment keeps ROUSE_*). Nothing else is matched: a benchmark or a gateway a developer runs from this
#     checkout meanwhile is not ours to kill;
#   - network namespaces whose name carries the run's name (the fixtures put it there).
# The fixtures stop what they start; this is the guard rail that says when one did not.
# Usage: deploy/check-leftovers.sh RUN   (deploy/test.sh runs it after `swift test`)
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:?usage: deploy/check-leftovers.sh RUN}

leftover_processes() {
    { grep -lzxF -- "ROUSE_TEST_RUN=$run" /proc/[0-9]*/environ 2>/dev/null || true; } | cut -d/ -f3 | { grep -vx "$$" || true; } | sort -un
}

# A child killed as the test process exited may take a moment to be gone: allow it 5 s.
pids=$(leftover_processes)
for _ in $(seq 25); do
    [ -z "$pids" ] && break
    sleep 0.2
    pids=$(leftover_processes)
done
namespaces=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -e "-$run-" || true)

status=0
if [ -n "$pids" ]; then
    echo "== leftovers: processes of test run $run still running after the tests ended (killed now):" >&2
    # shellcheck disable=SC2086 # one pid per word
    ps -o pid,ppid,pgid,etime,args -p "$(echo $pids | tr ' ' ',')" >&2 || true
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    status=1
fi
if [ -n "$namespaces" ]; then
    echo "== leftovers: network namespaces of test run $run (deleted now):" >&2
    echo "$namespaces" >&2
    for namespace in $namespaces; do ip netns del "$namespace" || true; done
    status=1
fi
if [ "$status" -eq 0 ]; then echo "== leftovers: none (test run $run)" >&2; fi
exit "$status"
