#!/usr/bin/env python3
"""Where lavapipe's compiled kernels spend their time, from a perf sample
file and the kernels' machine code dumped from the running process
(scripts/jit-profile.sh collects both; see there).

lavapipe compiles each compute kernel to one machine-code function with no
symbol, so the samples are attributed here by address: each function found
in the dumped code, its share of the samples, and inside the hot ones

- the share in per-lane loops: lavapipe runs every storage-buffer load,
  store and atomic as a loop over the 8 lanes (`cmp $0x8` closing a short
  backward jump), so this is what memory accesses cost;
- the share at locked instructions (atomics), counted with the instruction
  after them, where a sample of a stalled instruction lands;
- the share at or after indexed loads and stores outside the stack (mostly
  cache misses);
- the hottest lane loops and the hottest 4 KiB of code, so that a reader can
  open the annotated disassembly (`annotated.txt`) where the time is.

usage: jit_profile.py DIR   (DIR holds ips.txt and region_<addr>.bin)
"""
import collections
import glob
import os
import re
import subprocess
import sys

LOAD_STORE = re.compile(r"\((%r\w+),(%r\w+),[48]\)")
JUMP = re.compile(r"j\w+\s+0x([0-9a-f]+)")


def main(d):
    ips = collections.Counter()
    for line in open(os.path.join(d, "ips.txt")):
        count, ip = line.split()
        ips[int(ip, 16)] += int(count)
    total = sum(ips.values())
    regions = []
    for f in glob.glob(os.path.join(d, "region_*.bin")):
        start = int(re.search(r"region_([0-9a-f]+)", f).group(1), 16)
        regions.append((start, start + os.path.getsize(f), f))
    regions.sort()
    in_code = sum(c for ip, c in ips.items() if any(a <= ip < b for a, b, _ in regions))
    print(f"samples {total}, in the dumped kernel code {in_code} ({100 * in_code / max(total, 1):.1f} %)")

    # Disassemble the regions that hold samples; split them into functions
    # at the first 16-byte aligned instruction after a `ret`.
    functions = []
    with open(os.path.join(d, "annotated.txt"), "w") as out:
        for a, b, f in regions:
            if not any(a <= ip < b for ip in ips):
                continue
            dis = subprocess.run(
                ["objdump", "-D", "-b", "binary", "-m", "i386:x86-64", f"--adjust-vma={a:#x}", f],
                capture_output=True, text=True, check=True).stdout
            after_ret = True
            for line in dis.splitlines():
                m = re.match(r"\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(.*)", line)
                if not m:
                    continue
                ip, text = int(m.group(1), 16), m.group(3).strip()
                c = ips.get(ip, 0)
                out.write(f"{c:7d} {line}\n")
                if not text:
                    continue  # the rest of a long instruction's bytes
                if after_ret and text and "nop" not in text and ip % 16 == 0:
                    functions.append([])
                    after_ret = False
                if functions:
                    functions[-1].append((ip, c, text))
                if re.search(r"\bret", text):
                    after_ret = True
    functions = [f for f in functions if f]
    functions.sort(key=lambda f: -sum(c for _, c, _ in f))
    print("\nfunctions by samples (each compiled kernel is one; the 427-byte ones are lavapipe's entry wrappers):")
    for f in functions[:6]:
        s = sum(c for _, c, _ in f)
        if s == 0:
            break
        locks = sum(1 for _, _, t in f if is_atomic(t))
        f64 = sum(1 for _, _, t in f if t.split()[0].endswith(("pd", "sd")))
        print(f"  {f[0][0]:#x}: {f[-1][0] - f[0][0]:7d} bytes, {locks:2d} atomics, {f64:4d} f64 instructions, "
              f"{s:6d} samples ({100 * s / total:.1f} % of all)")
    for f in functions[:3]:
        report(f, total)


def is_atomic(text):
    # A locked read-modify-write; `xchg` with memory is locked implicitly.
    return "lock" in text or (text.startswith("xchg") and "(" in text)


def report(f, total):
    s = sum(c for _, c, _ in f)
    if s == 0:
        return
    index = {ip: i for i, (ip, _, _) in enumerate(f)}
    in_loop = [False] * len(f)
    loops = []
    for i, (ip, _, t) in enumerate(f):
        m = JUMP.match(t)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target < ip and target in index:
            j = index[target]
            body = f[j:i + 1]
            if len(body) < 200 and any(re.match(r"cmp\s+\$0x8,", b[2]) for b in body):
                loops.append((sum(c for _, c, _ in body), f[j][0], len(body)))
                for k in range(j, i + 1):
                    in_loop[k] = True
    lane = sum(c for k, (_, c, _) in enumerate(f) if in_loop[k])
    atomics = sum(f[k][1] + f[k + 1][1] for k in range(len(f) - 1) if is_atomic(f[k][2]))
    memory = sum(f[k][1] + f[k + 1][1] for k in range(len(f) - 1)
                 if LOAD_STORE.search(f[k][2]) and "%rsp" not in f[k][2]
                 and not f[k][2].startswith("lea") and not is_atomic(f[k][2]))
    print(f"\nkernel at {f[0][0]:#x} ({100 * s / total:.1f} % of all samples):")
    print(f"  in per-lane loops {100 * lane / s:.1f} %, at atomics {100 * atomics / s:.1f} %, "
          f"at or after other indexed memory accesses {100 * memory / s:.1f} %")
    seen, top = set(), []
    for loop in sorted(loops, reverse=True):
        if loop[1] not in seen:
            seen.add(loop[1])
            top.append(loop)
    print("  hottest lane loops (samples, address, instructions): "
          + ", ".join(f"{c} {a:#x} {n}" for c, a, n in top[:8]))
    pages = collections.Counter()
    for ip, c, _ in f:
        pages[(ip - f[0][0]) // 4096] += c
    print("  samples by 4 KiB of code from its start: "
          + ", ".join(f"+{k * 4}K {100 * v / s:.1f}%" for k, v in sorted(pages.items()) if v > 0.01 * s))


if __name__ == "__main__":
    main(sys.argv[1])
