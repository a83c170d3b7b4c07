#!/usr/bin/env bash
# Where the time of lavapipe's compiled kernels goes, instruction by
# instruction: samples a running `strands bench` GPU row with perf, dumps the
# kernels' machine code from the process (lavapipe compiles them at run time,
# so they have no symbols), and attributes the samples
# (scripts/jit_profile.py): each kernel's share, its share in per-lane
# memory loops, at atomics and at cache-missing loads, the hottest loops, and
# an annotated disassembly to read. For a CPU adapter only; on a GPU use the
# bench's per-dispatch profile. Wall times on a shared VM drift by ±15 %
# between minutes, so compare builds A/B interleaved; this shows where to
# look, not by how much a change helps.
#
# usage: scripts/jit-profile.sh [STRANDS] [OUT]
#   STRANDS  hair strands of 32 vertices (default 1000)
#   OUT      output folder (default /tmp/jit-profile): perf.data, ips.txt,
#            region_<address>.bin (the dumped code), annotated.txt, report.txt
#
# Needs perf (apt-get install linux-perf), objdump (binutils) and python3.
# Takes about a minute: 12 s of shader compilation and warm-up, 10 s sampled.
set -euo pipefail
cd "$(dirname "$0")/.."
strands="${1:-1000}"
out="${2:-/tmp/jit-profile}"
for tool in perf objdump python3; do
    command -v "$tool" >/dev/null || { echo "jit-profile: needs $tool (perf: apt-get install linux-perf; objdump: binutils)" >&2; exit 1; }
done
cargo build --release
mkdir -p "$out"
rm -f "$out"/region_*.bin
: "${XDG_RUNTIME_DIR:=$(mktemp -d)}"
export XDG_RUNTIME_DIR
# Enough frames that the timed run is still going when sampling ends.
target/release/strands bench --workload hair --strands "$strands" --backend gpu --repeats 400 \
    --out "$out/bench.json" > "$out/bench.txt" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
sleep 12
perf record -F 4000 -p "$pid" -o "$out/perf.data" -- sleep 10 2> "$out/perf.log"
# The kernels' code: the process's executable anonymous mappings, read while
# it runs (the addresses perf sampled).
python3 - "$pid" "$out" <<'EOF'
import sys
pid, out = sys.argv[1], sys.argv[2]
mem = open(f"/proc/{pid}/mem", "rb")
for line in open(f"/proc/{pid}/maps"):
    f = line.split()
    if "x" in f[1] and len(f) < 6:
        a, b = (int(x, 16) for x in f[0].split("-"))
        try:
            mem.seek(a)
            open(f"{out}/region_{a:x}.bin", "wb").write(mem.read(b - a))
        except OSError:
            pass
EOF
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
trap - EXIT
perf script -i "$out/perf.data" -F ip 2>/dev/null | sort | uniq -c | sort -rn > "$out/ips.txt"
python3 scripts/jit_profile.py "$out" | tee "$out/report.txt"
