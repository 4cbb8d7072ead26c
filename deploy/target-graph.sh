#!/usr/bin/env bash
# The package's target graph, drawn from Package.swift (`swift package describe`), as a Mermaid block.
#   deploy/target-graph.sh                 print the block
#   deploy/target-graph.sh --check FILE    fail if FILE's block (between the target-graph markers) differs
#   deploy/target-graph.sh --write FILE    replace FILE's block
# Test targets and the test-support library are left out; C system libraries and executables are drawn as such.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
json=$(swift package describe --type json)
block=$(python3 - "$json" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
targets = {t["name"]: t for t in d["targets"] if t["type"] != "test" and t["name"] != "RouseTestSupport"}
lines = ["```mermaid", "graph BT"]
for name in sorted(targets):
    t = targets[name]
    shape = {"system-target": f'{name}[("{name}")]', "executable": f'{name}[["{name}"]]'}.get(t["type"], f"{name}[{name}]")
    lines.append(f"    {shape}")
for name in sorted(targets):
    for dep in sorted(targets[name].get("target_dependencies", [])):
        if dep in targets:
            lines.append(f"    {name} --> {dep}")
lines.append("```")
print("\n".join(lines))
PY
)
begin='<!-- target-graph: begin (deploy/target-graph.sh --write docs/architecture.md) -->'
end='<!-- target-graph: end -->'
case "${1:-}" in
"")
    echo "$block"
    ;;
--check | --write)
    file=$2
    current=$(python3 - "$file" "$begin" "$end" <<'PY'
import sys
text = open(sys.argv[1]).read()
b, e = sys.argv[2], sys.argv[3]
if b not in text or e not in text:
    sys.exit(f"{sys.argv[1]}: no target-graph markers")
print(text.split(b, 1)[1].split(e, 1)[0].strip("\n"))
PY
)
    if [ "$1" = --check ]; then
        if [ "$current" != "$block" ]; then
            echo "target-graph: $file does not show Package.swift's targets; run deploy/target-graph.sh --write $file" >&2
            diff <(echo "$current") <(echo "$block") >&2 || true
            exit 1
        fi
    else
        python3 - "$file" "$begin" "$end" "$block" <<'PY'
import sys
path, b, e, block = sys.argv[1:5]
text = open(path).read()
head, rest = text.split(b, 1)
tail = rest.split(e, 1)[1]
open(path, "w").write(head + b + "\n" + block + "\n" + e + tail)
PY
    fi
    ;;
*)
    echo "usage: $0 [--check FILE | --write FILE]" >&2
    exit 64
    ;;
esac
