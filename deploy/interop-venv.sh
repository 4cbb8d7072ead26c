#!/usr/bin/env bash
# Creates (or refreshes) the Python venv for the interop and attack tests: third-party Python APNs
# libraries (aioapns, kalyke-apns, pyapns-client, apns2-up) and h2, pinned in Tests/Interop/requirements.txt, driven by
# Tests/Interop/apns_client.py and Tests/Interop/h2_attack.py.
#
#   deploy/interop-venv.sh [VENV_DIR]     # default: <repo>/.build/interop-venv
#
# Idempotent: a stamp file in the venv holds the sha256 of requirements.txt; when it matches,
# the script exits at once without touching the network. Needs python3 with the venv module
# (Debian: apt-get install python3-venv) and access to PyPI (or a configured pip index).
# Prints the venv's python path on success; exits non-zero with a message on failure.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$repo_root/Tests/Interop/requirements.txt"
venv="${1:-$repo_root/.build/interop-venv}"
stamp="$venv/.rouse-interop-requirements.sha256"
python="$venv/bin/python"

fail() {
    echo "interop-venv: $*" >&2
    exit 1
}

[ -f "$requirements" ] || fail "missing $requirements"
command -v python3 >/dev/null 2>&1 || fail "python3 not found on PATH"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"

if [ -x "$python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
    && "$python" -c 'import aioapns, kalyke, h2, pyapns_client, apns2.client, pywebpush, http_ece' >/dev/null 2>&1; then
    echo "$python"
    exit 0
fi

if [ ! -x "$python" ]; then
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv" >&2 \
        || fail "python3 -m venv $venv failed (on Debian: apt-get install python3-venv)"
fi
rm -f "$stamp"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! "$python" -m pip install --quiet --disable-pip-version-check --no-input \
    -r "$requirements" >"$log" 2>&1; then
    cat "$log" >&2
    fail "pip install -r $requirements into $venv failed (see above)"
fi
"$python" -c 'import aioapns, kalyke, h2, pyapns_client, apns2.client, pywebpush, http_ece' >/dev/null 2>&1 \
    || fail "installed, but 'import aioapns, kalyke, h2, pyapns_client, apns2.client, pywebpush, http_ece' fails in $venv"

echo "$want" >"$stamp"
echo "$python"
