#!/usr/bin/env bash
# Instructions executed by each of lavapipe's compute kernels in one step of
# the hair scene, counted by valgrind's callgrind: for comparing two builds of
# a kernel on a CPU adapter, where wall times on a shared VM vary by ±20 %
# between runs but these counts are the same in every run of the same build
# (to the instruction for the walked kernels, within 0.01 % for the blend).
# They are instructions, not time (an atomic or a cache miss costs more than
# its one instruction), so time the change in `strands bench` as well.
#
# usage: scripts/kernel-instructions.sh [STRANDS] [OUT_PREFIX]
#   STRANDS     hair strands of 32 vertices (default 200)
#   OUT_PREFIX  where the callgrind file and the table go
#               (default /tmp/kernel-instructions)
#
# Needs valgrind and python3 (apt-get install valgrind). Takes about five
# minutes at 200 strands, most of it valgrind running lavapipe's shader
# compiler; one step is 24 substeps ("auto").
#
# The kernels' machine code is compiled at run time, so it has no symbols:
# each row is one kernel, told apart by how often llvmpipe called it (once per
# 8 invocations: per rod for the walked kernels, per vertex for the splat and
# the blend, per grid node for grid_velocity) and, between kernels called
# equally often, by size. Compare rows of the same class across builds.
set -euo pipefail
cd "$(dirname "$0")/.."
strands="${1:-200}"
out="${2:-/tmp/kernel-instructions}"
command -v valgrind >/dev/null || { echo "kernel-instructions: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
cargo build --release
: "${XDG_RUNTIME_DIR:=$(mktemp -d)}"
export XDG_RUNTIME_DIR
valgrind --tool=callgrind --callgrind-out-file="$out.callgrind" --smc-check=all-non-file \
    target/release/strands run scenes/hair.toml --backend gpu --steps 1 \
    --set "rods.0.count=$strands" --set rods.0.segments=31 --set 'sim.substeps="auto"' \
    --out "$out.json" 2> "$out.log"
python3 - "$out.callgrind" "$strands" "$out.log" <<'EOF' | tee "$out.txt"
import re, subprocess, sys
path, strands = sys.argv[1], int(sys.argv[2])
grid = re.search(r"grid (\d+)×(\d+)×(\d+) nodes", open(sys.argv[3]).read())
nodes = int(grid.group(1)) * int(grid.group(2)) * int(grid.group(3)) if grid else 0
substeps = int(re.search(r"in (\d+) substeps", open(sys.argv[3]).read()).group(1))
text = subprocess.run(["callgrind_annotate", "--threshold=100", "--tree=caller", path],
                      capture_output=True, text=True, check=True).stdout.splitlines()
rows = []
for i, line in enumerate(text):
    m = re.match(r"\s*([\d,]+) \(.*\)\s+\*\s+\?\?\?:(0x[0-9a-f]+) \[\?\?\?\]", line)
    if not m:
        continue
    calls, j = 0, i - 1
    while j >= 0 and "<" in text[j]:
        c = re.search(r"\(([\d,]+)x\)", text[j])
        calls += int(c.group(1).replace(",", "")) if c else 0
        j -= 1
    rows.append((int(m.group(1).replace(",", "")), calls))
rows.sort(reverse=True)
vertices = strands * 32
total = sum(r[0] for r in rows)
print(f"hair, {strands} strands x 32 vertices, one step ({substeps} substeps): instructions executed in lavapipe's kernels")
# llvmpipe calls a kernel once per 8 invocations of each 64-wide workgroup.
calls_for = lambda n: -(-n // 64) * 8 * substeps
kinds = {calls_for(strands): "per rod: substep_start_rod, substep_finish_rod (the larger)",
         calls_for(vertices): "per vertex: grid_splat, grid_blend",
         calls_for(nodes): "per grid node: grid_velocity",
         calls_for(nodes) // 8: "per grid_velocity workgroup: its entry"}
for ir, calls in rows[:8]:
    print(f"{ir:>15,d}  {calls:>8d} calls  {kinds.get(calls, 'other')}")
print(f"{total:>15,d}  all kernels")
EOF
