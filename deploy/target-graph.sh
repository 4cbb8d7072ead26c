#!/usr/bin/env bash
# The package's target graph, drawn from Package.swift (`swift package describe`), as a Mermaid block.
#   deploy/target-graph.sh                 print the block
#   deploy/target-graph.sh --check FILE    fail if FILE's block (between the target-graph markers) differs
#   deploy/target-graph.sh --write FILE    replace FILE's block
# Test targets and the test-support library are left out; C system libraries and executables are drawn as such.
# --check also fails when a target imports one of the package's own modules it does not declare as a dependency
# (it builds only because another dependency brings it along) or declares a Swift target it never imports.
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
        python3 - "$json" <<'PY'
import glob, json, os, re, sys
d = json.loads(sys.argv[1])
names = {t["name"] for t in d["targets"]}
importline = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:public |package |internal )?import\s+(?:\w+\s+)?(\w+)")
problems = []
for t in d["targets"]:
    if t["type"] == "system-target":
        continue
    declared = set(t.get("target_dependencies", []))
    imported = set()
    for f in glob.glob(os.path.join(t["path"], "**", "*.swift"), recursive=True):
        for line in open(f):
            m = importline.match(line)
            if m and m.group(1) in names:
                imported.add(m.group(1))
    undeclared = sorted(imported - declared - {t["name"]})
    # C targets are used through headers and link flags as much as imports; only Swift targets must be imported.
    unused = sorted(n for n in declared - imported if not n.startswith("C"))
    if undeclared:
        problems.append(f"{t['name']} imports {', '.join(undeclared)} without declaring it in Package.swift")
    if unused:
        problems.append(f"{t['name']} declares {', '.join(unused)} in Package.swift but imports it nowhere")
for p in problems:
    print(f"target-graph: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
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
