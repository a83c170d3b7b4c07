#!/usr/bin/env bash
# One command for whoever has a real GPU (docs/BENCHMARKS.md, "Measuring on
# a real GPU"): build release, run the GPU test binaries, record the adapter
# and driver, and run `strands bench` on the GPU up to 131072 strands of 32
# vertices (4 M vertices), with a CPU bench at the small sizes beside it.
# Everything goes under $OUT (default ./gpu-measure-out).
#
#   scripts/gpu-measure.sh           the measurement
#   scripts/gpu-measure.sh prepare   on a machine with internet and this
#                                    repository built: put the Vulkan loader
#                                    packages in .gl/ and the crates Cargo.lock
#                                    names in .cargo-registry/, to carry to a
#                                    machine without internet
#   scripts/gpu-measure.sh bundle    build here, for a machine without Rust
#                                    (the lent GPU machines have none): the
#                                    release binary and the GPU test
#                                    executables, stripped, in
#                                    .gpu-bundle/bundle.tar.xz (~40 MB), which
#                                    the measurement runs where there is no
#                                    cargo
#
# Settings (environment):
#   OUT                        where logs and results go (./gpu-measure-out)
#   STRANDS_MEASURE_QUICK=1    1000 and 4000 strands only (a trial run)
#   STRANDS_MEASURE_TESTS      test binaries to run, space separated
#                              (default: every tests/gpu_*.rs and stability;
#                              "none" for none)
#   STRANDS_MEASURE_ALLOW_CPU=1  go on when the adapter is a CPU (lavapipe);
#                              implied by STRANDS_MEASURE_QUICK
#   STRANDS_MEASURE_ALLOW_STALE=1  run a bundle built from other sources
#                              than the checkout's (else the run stops)
#   STRANDS_MEASURE_MIN_TIME   seconds of frames each bench row times at
#                              least (`strands bench --min-time`; 0.3:
#                              ~150 frames at 1 M vertices at the target's
#                              0.2 ms a substep, and the bench steps stay
#                              within a call)
#   STRANDS_MEASURE_TEST_TIMEOUT  seconds each test binary may run (and
#                              kernel-times) before it is stopped and its
#                              step counted failed (default: no limit)
#   STRANDS_MEASURE_TEST_JOBS  test binaries to run at once (default 1)
#   STRANDS_MEASURE_DEADLINE   seconds from the start by which every step
#                              must end: each runs under `timeout` with the
#                              time left, and a step with none left is
#                              skipped and counted failed (default: none)
#   STRANDS_MEASURE_PACK       a .tar.gz file to pack everything under $OUT
#                              into when the script ends (also on an error
#                              or SIGTERM; not when killed with SIGKILL),
#                              for a tool that returns few files
#   STRANDS_MEASURE_DRIVER_CACHE  a .tar.gz file of the driver's shader
#                              caches (NVIDIA's ~/.cache/nvidia and ~/.nv):
#                              where it exists, unpacked into $HOME at the
#                              start; where it does not, the caches are
#                              packed into it when the script ends (after
#                              STRANDS_MEASURE_PACK), so that a later call
#                              on a fresh machine of the same driver need
#                              not compile the kernels again. Like OUT and
#                              STRANDS_MEASURE_PACK, a relative path is
#                              taken from the repository's root
#   STRANDS_MEASURE_PROFILE_TIMEOUT  seconds each Nsight Compute run of the
#                              profile step may take (default 90)
#   STRANDS_MEASURE_STEPS      the steps to run, space separated, from: tests
#                              kernel-stats kernel-times bench-target
#                              bench-candidates bench-frame bench-memory
#                              bench-splat profile
#                              probe-tridiagonal
#                              bench-gpu bench-cpu bench-packs bench-forms
#                              bench-stencil
#                              (default: all, in that order); a few a
#                              call split the measurement over several
#                              calls of a tool with a time limit per
#                              command

set -uo pipefail
cd "$(dirname "$0")/.."
# ldconfig and dpkg, for the Vulkan loader below, live in sbin.
PATH=$PATH:/usr/sbin:/sbin

prepare() {
    # Vulkan loader and GL dispatch libraries (amd64 packages of this
    # machine's distribution), unpacked into / by the measurement when
    # the lent machine has no libvulkan.
    mkdir -p .gl /tmp/amd64/partial
    local o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
    if ! { apt-get "${o[@]}" update &&
        (cd .gl && apt-get "${o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2); }; then
        echo "prepare: could not download the Vulkan loader packages into .gl/" >&2
        return 1
    fi
    # The registry index entries and .crate files of Cargo.lock's packages,
    # from this machine's cargo cache (only those this platform builds are
    # there; that is all an x86_64 Linux build needs).
    local reg=${CARGO_HOME:-$HOME/.cargo}/registry
    local index cache
    index=$(ls -d "$reg"/index/index.crates.io-* | head -1)
    cache=$(ls -d "$reg"/cache/index.crates.io-* | head -1)
    local to=.cargo-registry
    rm -rf "$to"
    mkdir -p "$to/index/$(basename "$index")/.cache" "$to/cache/$(basename "$cache")"
    cp "$index/config.json" "$to/index/$(basename "$index")/" 2>/dev/null || true
    local name="" crates=0 entries=0
    while IFS= read -r line; do
        case $line in
        'name = '*) name=${line#name = \"}; name=${name%\"} ;;
        'version = '*)
            local version=${line#version = \"}; version=${version%\"}
            local lower=${name,,} path
            case ${#lower} in
            1) path=1/$lower ;;
            2) path=2/$lower ;;
            3) path=3/${lower:0:1}/$lower ;;
            *) path=${lower:0:2}/${lower:2:2}/$lower ;;
            esac
            if [ -f "$index/.cache/$path" ] && [ ! -f "$to/index/$(basename "$index")/.cache/$path" ]; then
                mkdir -p "$to/index/$(basename "$index")/.cache/$(dirname "$path")"
                cp "$index/.cache/$path" "$to/index/$(basename "$index")/.cache/$path"
                entries=$((entries + 1))
            fi
            if [ -f "$cache/$name-$version.crate" ]; then
                cp "$cache/$name-$version.crate" "$to/cache/$(basename "$cache")/"
                crates=$((crates + 1))
            fi
            ;;
        esac
    done <Cargo.lock
    echo "prepare: .gl/ $(du -sh .gl | cut -f1), $to/ $(du -sh "$to" | cut -f1) ($entries index entries, $crates crates)"
}

# The GPU test binaries (and the stability tests), by name.
gpu_tests() {
    for f in tests/gpu_*.rs tests/stability.rs; do basename "$f" .rs; done
}

# One hash of the files the executables are built from and read (the
# bundle's manifest records it; the measurement compares it with its own
# checkout's, which may have no git).
sources_hash() {
    find src tests examples shaders scenes Cargo.toml Cargo.lock -type f -print0 | LC_ALL=C sort -z |
        xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}

# The release binary and the GPU tests' executables, built here, stripped,
# for a machine without Rust; with the commit and the path they were built at
# (the tests find the binary and the scenes through that path, baked in by
# cargo: the measurement links it to its own checkout).
bundle() {
    local tests=()
    for t in $(gpu_tests); do tests+=(--test "$t"); done
    # The target folder in the checkout, so that the path cargo bakes into
    # the tests for `strands` is under the one the manifest records.
    export CARGO_TARGET_DIR
    CARGO_TARGET_DIR="$(pwd -P)/target"
    cargo build --release --locked || return 1
    cargo build --release --locked --example kernel_stats || return 1
    local built
    built=$(cargo test --release --locked --no-run --color never "${tests[@]}" 2>&1) || {
        echo "$built" >&2
        return 1
    }
    rm -rf .gpu-bundle
    mkdir -p .gpu-bundle/stage/tests
    cp "$CARGO_TARGET_DIR/release/strands" .gpu-bundle/stage/strands || return 1
    cp "$CARGO_TARGET_DIR/release/examples/kernel_stats" .gpu-bundle/stage/kernel_stats || return 1
    # cargo names each test executable: "Executable tests/NAME.rs (PATH)".
    local n=0
    while read -r name path; do
        cp "$path" ".gpu-bundle/stage/tests/$name" || return 1
        n=$((n + 1))
    done < <(echo "$built" | sed -n 's|.*Executable tests/\(.*\)\.rs (\(.*\))$|\1 \2|p')
    if [ "$n" -ne $((${#tests[@]} / 2)) ]; then
        echo "bundle: found $n test executables in cargo's output, expected $((${#tests[@]} / 2))" >&2
        return 1
    fi
    strip .gpu-bundle/stage/strands .gpu-bundle/stage/kernel_stats .gpu-bundle/stage/tests/* || return 1
    {
        echo "commit $(git rev-parse HEAD) $(git status --short --untracked-files=no | wc -l) changed files"
        echo "sources $(sources_hash)"
        echo "built_at $(pwd -P)"
        echo "rustc $(rustc --version)"
    } >.gpu-bundle/stage/manifest
    tar cJf .gpu-bundle/bundle.tar.xz -C .gpu-bundle/stage . || return 1
    rm -rf .gpu-bundle/stage
    echo "bundle: .gpu-bundle/bundle.tar.xz $(du -h .gpu-bundle/bundle.tar.xz | cut -f1) ($n test executables, strands and kernel_stats)"
}

case "${1:-}" in
prepare)
    prepare
    exit
    ;;
bundle)
    bundle
    exit
    ;;
esac
if [ $# -gt 0 ]; then
    echo "usage: $0 [prepare | bundle]" >&2
    exit 2
fi

OUT=${OUT:-./gpu-measure-out}
mkdir -p "$OUT"
: >"$OUT/summary.txt"
failed=()
say() { echo "== $*" | tee -a "$OUT/summary.txt"; }
# The driver's shader caches (where NVIDIA's driver keeps compiled
# pipelines between runs), relative to $HOME, where they exist.
driver_caches() {
    local d
    for d in .cache/nvidia .nv; do [ -d "$HOME/$d" ] && echo "$d"; done
}
# Where to save the driver's caches at the end (empty: nowhere).
save_cache_to=
if [ -n "${STRANDS_MEASURE_DRIVER_CACHE:-}" ]; then
    driver_cache=$(realpath -m "$STRANDS_MEASURE_DRIVER_CACHE")
    if [ -z "${HOME:-}" ]; then
        say "driver shader cache: HOME is not set; not restored or saved"
    elif [ -f "$driver_cache" ]; then
        if tar xzf "$driver_cache" -C "$HOME"; then
            say "driver shader cache: $(tar tzf "$driver_cache" | grep -vc '/$') files from $driver_cache unpacked into $HOME"
        else
            say "driver shader cache: could not unpack $driver_cache; the kernels compile cold"
        fi
    else
        say "driver shader cache: no $driver_cache yet; the kernels compile cold, and the caches go there at the end"
        save_cache_to=$driver_cache
    fi
fi
# The driver's caches into `save_cache_to`, through a temporary file.
save_driver_cache() {
    [ -n "$save_cache_to" ] || return 0
    local caches
    caches=$(driver_caches | xargs)
    if [ -z "$caches" ]; then
        echo "== driver shader cache: none found in $HOME/.cache/nvidia or $HOME/.nv; nothing saved"
    elif tar czf "$save_cache_to.tmp" -C "$HOME" $caches && mv "$save_cache_to.tmp" "$save_cache_to"; then
        echo "== driver shader cache: $caches ($(du -sh "$save_cache_to" | cut -f1)) saved into $save_cache_to"
    else
        echo "== driver shader cache: could not write $save_cache_to"
    fi
}
pack=
if [ -n "${STRANDS_MEASURE_PACK:-}" ]; then
    pack=$(realpath -m "$STRANDS_MEASURE_PACK")
fi
# On exit (also an error, or SIGTERM from `timeout`): everything under $OUT
# into STRANDS_MEASURE_PACK first, the results being what must come back,
# then the driver's caches (their line is printed, not in the summary).
on_exit() {
    if [ -n "$pack" ]; then
        tar czf "$pack" -C "$OUT" . && echo "== packed $OUT into $pack"
    fi
    save_driver_cache
}
trap on_exit EXIT
# Seconds left before STRANDS_MEASURE_DEADLINE (empty without one).
started=$SECONDS
time_left() {
    [ -z "${STRANDS_MEASURE_DEADLINE:-}" ] || echo $((STRANDS_MEASURE_DEADLINE - (SECONDS - started)))
}
# Run a step, its output to $OUT/$1.log (and the terminal); note failures.
# Under a deadline a program runs under `timeout` with the time left (a
# test binary through `run_test`), and a step with none left is skipped.
step() {
    local name=$1
    shift
    local left limit=()
    left=$(time_left)
    if [ -n "$left" ]; then
        if [ "$left" -le 5 ]; then
            failed+=("$name")
            say "$name: skipped, $((SECONDS - started)) s of STRANDS_MEASURE_DEADLINE=${STRANDS_MEASURE_DEADLINE} gone"
            return 1
        fi
        declare -F "$1" >/dev/null || limit=(timeout --kill-after=5 "$left")
    fi
    say "$name: $*"
    "${limit[@]}" "$@" 2>&1 | tee "$OUT/$name.log"
    local rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        failed+=("$name")
        say "$name: FAILED (exit $rc; $OUT/$name.log)"
    fi
    return "$rc"
}

# The steps STRANDS_MEASURE_STEPS may name.
all_steps="tests kernel-stats kernel-times bench-target bench-candidates bench-frame bench-memory bench-splat profile probe-tridiagonal bench-gpu bench-cpu bench-packs bench-forms bench-stencil"
# Whether step $1 is among STRANDS_MEASURE_STEPS (all when unset).
wanted() {
    # shellcheck disable=SC2206 # split on any whitespace, as the check below
    local steps=(${STRANDS_MEASURE_STEPS:-})
    [ ${#steps[@]} -eq 0 ] || [[ " ${steps[*]} " == *" $1 "* ]]
}
for s in ${STRANDS_MEASURE_STEPS:-}; do
    if [[ " $all_steps " != *" $s "* ]]; then
        echo "STRANDS_MEASURE_STEPS: no step '$s' ($all_steps)" >&2
        exit 2
    fi
done

if [[ ! ${STRANDS_MEASURE_PROFILE_TIMEOUT:-90} =~ ^[0-9]+$ ]]; then
    echo "STRANDS_MEASURE_PROFILE_TIMEOUT: '$STRANDS_MEASURE_PROFILE_TIMEOUT' is not a whole number of seconds" >&2
    exit 2
fi

quick=${STRANDS_MEASURE_QUICK:-}
timing_strands=32000
min_time=${STRANDS_MEASURE_MIN_TIME:-0.3}
if [ -n "$quick" ]; then
    timing_strands=1000
    sizes=1000,4000
else
    sizes=1000,4000,16000,32000,65536,131072
fi

# Vulkan loader: unpack the carried packages where the machine has none.
if compgen -G ".gl/*.deb" >/dev/null; then
    say "unpacking $(ls .gl/*.deb | wc -l) packages from .gl/ into /"
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
if ! grep -q libvulkan < <(ldconfig -p); then
    say "warning: no libvulkan on this machine; see docs/BENCHMARKS.md for preparing .gl/"
fi
# The NVIDIA driver's ICD where the loader's usual places have none (else
# the loader finds only lavapipe, or nothing).
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f "$nvidia_icd" ] &&
    ! compgen -G "/usr/share/vulkan/icd.d/nvidia*.json" >/dev/null &&
    ! compgen -G "/etc/vulkan/icd.d/nvidia*.json" >/dev/null; then
    export VK_DRIVER_FILES=$nvidia_icd
    say "VK_DRIVER_FILES=$VK_DRIVER_FILES"
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}

# Crates carried for a machine without internet.
if [ -d .cargo-registry ]; then
    reg=${CARGO_HOME:-$HOME/.cargo}/registry
    mkdir -p "$reg"
    cp -r .cargo-registry/. "$reg/"
    say "crates from .cargo-registry/ copied into $reg"
fi

# The machine.
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse HEAD 2>/dev/null) $(git status --short 2>/dev/null | wc -l) changed files"
    echo "kernel: $(uname -srm)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) ($(nproc) threads)"
    echo "rust: $(rustc --version 2>/dev/null || echo "none (running .gpu-bundle)") / $(cargo --version 2>/dev/null || echo none)"
    echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-} WGPU_ADAPTER_NAME=${WGPU_ADAPTER_NAME:-} WGPU_BACKEND=${WGPU_BACKEND:-}"
} | tee "$OUT/machine.txt"
if command -v nvidia-smi >/dev/null; then
    nvidia-smi 2>&1 | tee "$OUT/nvidia-smi.txt"
else
    echo "no nvidia-smi" | tee "$OUT/nvidia-smi.txt"
fi
if command -v vulkaninfo >/dev/null; then
    vulkaninfo --summary >"$OUT/vulkaninfo.txt" 2>&1
    grep -E "deviceName|deviceType|driverName|driverInfo|apiVersion" "$OUT/vulkaninfo.txt"
else
    echo "no vulkaninfo" | tee "$OUT/vulkaninfo.txt"
fi

# Build: offline first (carried or cached crates), else from the network;
# where there is no cargo, the executables of .gpu-bundle/ (`bundle`).
offline=--offline
runner=cargo
if command -v cargo >/dev/null; then
    cargo build --release --locked --offline >"$OUT/build.log" 2>&1 || offline=
    if [ -z "$offline" ]; then
        step build cargo build --release --locked || {
            say "cannot build; stopping"
            exit 1
        }
    else
        say "build: cargo build --release --locked --offline (ok)"
    fi
elif [ -f .gpu-bundle/bundle.tar.xz ]; then
    runner=bundle
    rm -rf .gpu-bundle/run
    mkdir -p .gpu-bundle/run target/release
    # tar needs the xz program for this; Python's tarfile does not.
    tar xJf .gpu-bundle/bundle.tar.xz -C .gpu-bundle/run 2>/dev/null ||
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
            .gpu-bundle/bundle.tar.xz .gpu-bundle/run || {
        say "cannot unpack .gpu-bundle/bundle.tar.xz (with tar or python3); stopping"
        exit 1
    }
    cp .gpu-bundle/run/strands target/release/strands
    say "no cargo here: running the executables of .gpu-bundle ($(head -1 .gpu-bundle/run/manifest))"
    # Measuring other code than the checkout's would be measuring the wrong
    # thing: stop, unless told to go on.
    if [ "$(sed -n 's/^sources //p' .gpu-bundle/run/manifest)" != "$(sources_hash)" ]; then
        say "the bundle was built from other sources than this checkout's (src, tests, shaders, scenes, Cargo.*): build it again ('scripts/gpu-measure.sh bundle') and carry it, or set STRANDS_MEASURE_ALLOW_STALE=1 to measure it anyway"
        [ -n "${STRANDS_MEASURE_ALLOW_STALE:-}" ] || exit 1
    fi
    # The tests reach the binary and the scenes through the path they were
    # built at.
    built_at=$(sed -n 's/^built_at //p' .gpu-bundle/run/manifest)
    if [ -z "$built_at" ] || [ "$built_at" -ef "$PWD" ]; then
        :
    elif [ -L "$built_at" ] || [ ! -e "$built_at" ]; then
        mkdir -p "$(dirname "$built_at")" && ln -sfn "$PWD" "$built_at" &&
            say "linked $built_at to $PWD (where the bundle was built)"
    else
        say "$built_at, where the bundle was built, exists and is not this checkout: the tests would read their scenes and strands binary there; stopping"
        exit 1
    fi
else
    say "no cargo here and no .gpu-bundle/bundle.tar.xz: run 'scripts/gpu-measure.sh bundle' where Rust is, and carry .gpu-bundle; stopping"
    exit 1
fi
strands=./target/release/strands
# examples/kernel_stats (the driver's registers, shared memory and spills a
# kernel), built or from the bundle.
if [ "$runner" = cargo ]; then
    kernel_stats=./target/release/examples/kernel_stats
else
    kernel_stats=.gpu-bundle/run/kernel_stats
fi

# Test binary $1 with the arguments after it, through cargo or the bundle.
# With STRANDS_MEASURE_TEST_TIMEOUT, stopped after that many seconds (exit
# 124, a failed step), so that one slow binary leaves time for the rest;
# under a deadline, at it at the latest.
run_test() {
    local name=$1
    shift
    local limit=() cap left
    cap=${STRANDS_MEASURE_TEST_TIMEOUT:-}
    left=$(time_left)
    if [ -n "$left" ] && { [ -z "$cap" ] || [ "$left" -lt "$cap" ]; }; then
        cap=$left
    fi
    if [ -n "$cap" ]; then
        limit=(timeout --kill-after=5 "$cap")
    fi
    if [ "$runner" = cargo ]; then
        "${limit[@]}" cargo test --release --locked $offline --test "$name" -- "$@"
    else
        "${limit[@]}" ".gpu-bundle/run/tests/$name" "$@"
    fi
}

# The adapter wgpu picks, as the bench sees it.
step adapter "$strands" bench --backend gpu --no-shares --workload hair --strands 1 --vertices 3 \
    --warmup 0 --repeats 1 --min-time 0 --substeps 1 --out "$OUT/adapter.json" --plot "$OUT/adapter.svg" ||
    exit 1
adapter=$(grep -m1 '"gpu":' "$OUT/adapter.json" | cut -d'"' -f4)
say "adapter: $adapter"
if [[ $adapter == *", Cpu"* ]] && [ -z "$quick" ] && [ -z "${STRANDS_MEASURE_ALLOW_CPU:-}" ]; then
    say "the adapter is a CPU (software Vulkan), not the GPU: check the driver (VK_DRIVER_FILES, $OUT/vulkaninfo.txt) or set STRANDS_MEASURE_ALLOW_CPU=1"
    exit 1
fi

# GPU tests.
if [ -n "${STRANDS_MEASURE_TESTS:-}" ]; then
    read -ra tests <<<"$STRANDS_MEASURE_TESTS"
else
    read -ra tests <<<"$(gpu_tests | xargs)"
fi
# With STRANDS_MEASURE_TEST_JOBS=N, N binaries at a time, each with two
# test threads (on a lent H200 most of a binary's time was the driver
# compiling and the CPU reference, not the GPU), their summary lines
# written as they end.
jobs=${STRANDS_MEASURE_TEST_JOBS:-1}
if wanted tests && [ "$jobs" -gt 1 ]; then
    for t in "${tests[@]}"; do
        [ "$t" = none ] && continue
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        (
            failed=()
            step "test-$t" run_test "$t" --test-threads 2 >/dev/null
            [ ${#failed[@]} -eq 0 ] || echo "${failed[*]}" >"$OUT/test-$t.failed"
        ) &
    done
    wait
    grep '^== test-' "$OUT/summary.txt"
    for t in "${tests[@]}"; do
        [ -s "$OUT/test-$t.failed" ] && failed+=("test-$t")
        rm -f "$OUT/test-$t.failed"
    done
elif wanted tests; then
    for t in "${tests[@]}"; do
        [ "$t" = none ] && continue
        step "test-$t" run_test "$t"
    done
fi

# Each kernel alone, packed against walked, and every dispatch of a substep,
# at 1 M vertices (32000 hair strands × 32; 1000 when quick): where a
# substep's time goes.
export STRANDS_TIMING_STRANDS=$timing_strands
wanted kernel-times && step kernel-times run_test gpu_pack_timing --ignored --nocapture --test-threads 1

# What the driver compiled each kernel into (examples/kernel_stats.rs,
# VK_KHR_pipeline_executable_properties): registers, shared memory, spills,
# as far as the driver says; the substep and per-stage kernels, the
# per-pack ones on 32- and 256-row packs, for the hair's colliders and
# its interleaved layout (the tool's defaults: --kinds sphere,capsule,
# --interleave 32). Whether register pressure caps how
# many warps the fused kernels run at once (the packed fused kernels on
# 32-row packs run a strand a warp, 32x the walks' invocations, and were no
# faster on the H200).
kernel_stats_step() {
    if [ "$runner" = cargo ]; then
        cargo build --release --locked $offline --example kernel_stats || return 1
    fi
    "$kernel_stats" --rows 32,256 substep_rod substep_start_rod substep_finish_rod frame_rod \
        substep substep_start substep_finish frame_pack \
        frames frames_rod twist twist_rod forces forces_rod project_fast project_fast_rod \
        contact_packed contact_rod integrate project_velocity grid_splat grid_blend
}
wanted kernel-stats && step kernel-stats kernel_stats_step

# Issue 12's target, 1 M vertices (32000 hair strands × 32; 1000 when
# quick) in the default form: the hair as the bench runs it, and
# `hair-nogrid`, the target's workload as the issue states it (twist, the
# projection, head contact), without the hair–hair grid.
wanted bench-target && step bench-target "$strands" bench --min-time "$min_time" --backend gpu --workload hair,hair-nogrid --strands "$timing_strands" \
    --out "$OUT/bench-target.json" --plot "$OUT/bench-target.svg"

# The candidates for the GPU defaults together, each measured alone on the
# H200 before: the whole frame a dispatch (walked-frame), on the target's
# hair-nogrid and grass; on the hair (with the grid) the sorted splat with
# runs of 32. 1 M vertices (1000 strands when quick).
wanted bench-candidates && step bench-candidates "$strands" bench --min-time "$min_time" --backend gpu --no-shares --workload hair-nogrid,grass --strands "$timing_strands" \
    --gpu-form walked-fused,walked-frame \
    --out "$OUT/bench-candidates.json" --plot "$OUT/bench-candidates.svg" &&
    step bench-candidates-hair "$strands" bench --min-time "$min_time" --backend gpu --no-shares --workload hair --strands "$timing_strands" \
        --gpu-form walked-fused --gpu-splat own,sorted:32 \
        --out "$OUT/bench-candidates-hair.json" --plot "$OUT/bench-candidates-hair.svg"

# The whole frame in one dispatch where no grid couples the rods
# (`walked-frame`: each invocation takes its rod through every substep of
# the frame, so that its state can stay in the caches between substeps)
# against the default walked-fused, which dispatches each substep: the
# target's `hair-nogrid` and grass, the bench's 10 substeps a frame, at 1 M
# vertices (1000 strands when quick). The same bits as walked-fused on
# lavapipe, and 6-14 % faster there at 4000 strands (twenty-seventh
# session). (fused-frame,
# the packed fused substep a frame a dispatch, is timed with the other
# forms in `bench-forms`.)
wanted bench-frame && step bench-frame "$strands" bench --min-time "$min_time" --backend gpu --no-shares --workload hair-nogrid,grass --strands "$timing_strands" \
    --gpu-form walked-fused,walked-frame \
    --out "$OUT/bench-frame.json" --plot "$OUT/bench-frame.svg"

# Whether device memory is what holds the target's substep: the default
# walked-frame and fused-frame on 32-row packs, at 1 M vertices (1000 strands when quick), each in 8 short runs
# of 40 frames one after another while nvidia-smi samples the memory
# controller's busy fraction every 200 ms (utilization.memory) and, where
# DCGM answers, dcgmi its DRAM activity (field 1005, DRAM_ACTIVE: the
# fraction of cycles the DRAM interface moved data) and SM activity and
# occupancy (1002, 1003); then both forms at 2000 to 32000 strands, whose
# time a vertex falls where the state fits the L2 cache if memory is what
# holds it (thirtieth session: walked-frame's did not; a rod's walk holds
# it). Short runs, not one long one: past simulated t ~ 0.9 s the hair
# workload's projection runs its whole iteration budget every substep
# (docs/BENCHMARKS.md, thirtieth session), which a run of 8 s reached and
# measured instead; 40 frames of the bench's 10 substeps are t = 0.31 s.
# Samples in $OUT/memory-FORM-*.csv; the bench rows beside them.
memory_step() {
    local form extra smi dcgm p r rc=0
    for form in walked-frame fused-frame; do
        extra=()
        [ "$form" = fused-frame ] && extra=(--gpu-pack-rows 32)
        smi=
        dcgm=
        if command -v nvidia-smi >/dev/null; then
            nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory,clocks.sm,clocks.mem,power.draw \
                --format=csv -lms 200 >"$OUT/memory-$form-smi.csv" 2>&1 &
            smi=$!
        fi
        if command -v dcgmi >/dev/null; then
            dcgmi dmon -e 1002,1003,1005 -d 200 >"$OUT/memory-$form-dcgm.csv" 2>&1 &
            dcgm=$!
        fi
        for r in 1 2 3 4 5 6 7 8; do
            "$strands" bench --min-time 0 --warmup 2 --repeats 40 --backend gpu --no-shares --workload hair-nogrid --strands "$timing_strands" \
                --gpu-form "$form" "${extra[@]}" --out "$OUT/memory-$form-$r.json" --plot "$OUT/memory-$form-$r.svg" || rc=1
        done
        for p in $smi $dcgm; do
            kill "$p" 2>/dev/null
            wait "$p" 2>/dev/null
        done
        if [ -s "$OUT/memory-$form-smi.csv" ]; then
            # The median of the memory column over the samples with the GPU
            # at least 90 % busy (the bench's frames, not its scene build).
            local busy n
            busy=$(awk -F', ' 'NR > 1 && $2 + 0 >= 90 { print $3 + 0 }' "$OUT/memory-$form-smi.csv" | sort -n)
            n=$(printf '%s' "$busy" | grep -c .)
            if [ "$n" -eq 0 ]; then
                echo "$form: no sample with the GPU 90 % busy"
            else
                echo "$form: memory controller busy $(printf '%s\n' "$busy" | sed -n "$((n / 2 + 1))p") % (median of $n samples with the GPU >= 90 % busy)"
            fi
        fi
        [ -s "$OUT/memory-$form-dcgm.csv" ] && tail -5 "$OUT/memory-$form-dcgm.csv"
    done
    local sizes=2000,4000,8000,16000,32000
    [ -n "$quick" ] && sizes=1000,2000
    # 40 frames each, as above: at --min-time the fastest rows ran past t
    # = 0.85 s into the contact regime.
    "$strands" bench --min-time 0 --warmup 2 --repeats 40 --backend gpu --no-shares --workload hair-nogrid --strands "$sizes" \
        --gpu-form walked-frame --out "$OUT/memory-sizes-walked-frame.json" --plot "$OUT/memory-sizes-walked-frame.svg" || rc=1
    "$strands" bench --min-time 0 --warmup 2 --repeats 40 --backend gpu --no-shares --workload hair-nogrid --strands "$sizes" \
        --gpu-form fused-frame --gpu-pack-rows 32 \
        --out "$OUT/memory-sizes-fused-frame.json" --plot "$OUT/memory-sizes-fused-frame.svg" || rc=1
    return "$rc"
}
wanted bench-memory && step bench-memory memory_step

# The grid's splat (README, "On the GPU"): the walked fused form's own
# (the walked window) against the vertices sorted by cell first, each run
# of 8, 16 (`sorted`) or 32 sorted vertices walked by one invocation
# (`--gpu-splat sorted:RUN`: 4.3, 2.3 and 1.3 atomic adds a vertex where
# the walked window makes 11.5, tests/splat_atomics.rs; longer runs are
# fewer invocations, each a longer chain of reads). The profile times
# the sorted splat's kernels as dispatches of their own; the walked
# window is inside `substep_start_rod`, so the rows compare as whole
# substeps and by that dispatch (the staged walked form, whose profile
# times `grid_splat` apart, is not re-run). Hair at 1 M vertices (1000
# strands when quick).
wanted bench-splat && step bench-splat "$strands" bench --min-time "$min_time" --backend gpu --no-shares --workload hair --strands "$timing_strands" \
    --gpu-form walked-fused --gpu-splat own,sorted:8,sorted,sorted:32 \
    --out "$OUT/bench-splat.json" --plot "$OUT/bench-splat.svg"

# Nsight Compute (`ncu`, on the lent machines' Firecracker runtime with
# `--clock-control none`, /work/.library/device/H200.md) on the default
# form's substep kernels at 1 M vertices (1000 strands when quick): the
# target's workload without the grid (`substep_rod`), then the hair with it
# (`substep_start_rod`, `substep_finish_rod`), two substeps each. What no
# bench row can say: registers a thread and achieved occupancy (the walks
# run 1,000 warps at 1 M vertices, 12 % of an H200's warp slots), why warps
# stall (waiting on memory, "long scoreboard", would confirm that a walk is
# its chain of loads; waiting on arithmetic would not), DRAM and L2
# throughput against the card's peak, and L1 wavefronts and sectors a
# request (a warp walking 32 rods laid out one after another touches 32
# lines a load: if those requests are what a step waits on, the interleaved
# layout, 4 to 16 lines a load by the element's size, is the remedy). Whether ncu profiles Vulkan
# compute dispatches, and by what names, is not known here: where it
# profiles no kernel named substep* in the first workload, a second run
# takes the 8 dispatches after the bench's copy measurement, of any name,
# with the launch and occupancy sections only, and the step ends there.
# Where ncu reports an error (==ERROR==) the step fails and stops; where
# there is no ncu it says so and passes.
ncu_path() {
    local c found
    found=$(command -v ncu)
    if [ -z "$found" ]; then
        # The newest of those installed (the globs expand in sorted order).
        for c in /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu; do
            if [ -x "$c" ]; then found=$c; fi
        done
    fi
    echo "$found"
}
# Dispatches of the copy-bandwidth measurement, which every `strands bench`
# makes before its first row (src/gpu/bandwidth.rs: a warm-up pass and 5
# timed passes of 4 copies each): what the fallback run skips.
copy_dispatches=24
# Seconds the next ncu run may take: STRANDS_MEASURE_PROFILE_TIMEOUT, or
# the time left before the deadline where that is less.
profile_cap() {
    local cap=${STRANDS_MEASURE_PROFILE_TIMEOUT:-90} left
    left=$(time_left)
    if [ -n "$left" ] && [ "$left" -lt "$cap" ]; then cap=$left; fi
    echo "$cap"
}
# ncu ($ncu) under a cap of $1 seconds, its output to $2 and the log; the
# rest are ncu's arguments.
run_ncu() {
    local cap=$1 out=$2 rc=0
    shift 2
    timeout --kill-after=5 "$cap" "$ncu" --clock-control none --target-processes all "$@" >"$out" 2>&1 || rc=$?
    cat "$out"
    return "$rc"
}
profile_kernels() {
    local cap w count rc=0
    ncu=$(ncu_path)
    if [ -z "$ncu" ]; then
        echo "no ncu (Nsight Compute) on this machine: nothing profiled"
        return 0
    fi
    "$ncu" --version
    for w in hair-nogrid hair; do
        cap=$(profile_cap)
        if [ "$cap" -le 5 ]; then
            say "profile: no time left for $w"
            return 1
        fi
        # hair-nogrid: `substep_rod` a substep; hair: `substep_start_rod`
        # and `substep_finish_rod` a substep (2 substeps).
        count=2
        [ "$w" = hair ] && count=4
        local bench=("$strands" bench --backend gpu --no-shares --workload "$w" --strands "$timing_strands"
            --warmup 0 --repeats 1 --min-time 0 --substeps 2
            --out "$OUT/profile-$w.json" --plot "$OUT/profile-$w.svg")
        echo "== $w: ncu on the first $count substep kernels (at most $cap s)"
        run_ncu "$cap" "$OUT/profile-$w.txt" --kernel-name regex:substep --launch-count "$count" \
            --section SpeedOfLight --section Occupancy --section LaunchStats \
            --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
            --section MemoryWorkloadAnalysis_Tables \
            "${bench[@]}" || rc=$?
        if grep -q "==ERROR==" "$OUT/profile-$w.txt"; then
            say "profile: ncu failed on $w (==ERROR== in $OUT/profile-$w.txt); nothing more profiled"
            return 1
        fi
        if grep -q "No kernels were profiled" "$OUT/profile-$w.txt"; then
            cap=$(profile_cap)
            if [ "$cap" -le 5 ]; then
                say "profile: ncu named no substep kernel of $w, and no time is left for a run over any"
                return 1
            fi
            echo "== $w: no kernel named substep*: the 8 dispatches after the copy measurement's $copy_dispatches, any name, launch and occupancy sections (at most $cap s)"
            run_ncu "$cap" "$OUT/profile-$w-any.txt" --launch-skip "$copy_dispatches" --launch-count 8 \
                --section LaunchStats --section Occupancy "${bench[@]}" || rc=$?
            if grep -q "No kernels were profiled" "$OUT/profile-$w-any.txt"; then
                say "profile: ncu profiled no dispatch of $w at all"
            else
                say "profile: ncu names no kernel substep*; what it names is in $OUT/profile-$w-any.txt"
            fi
            # The other workload's kernels are named the same way: once is
            # enough.
            return "$rc"
        fi
    done
    return "$rc"
}
wanted profile && step profile profile_kernels

# One tridiagonal solve a strand (the core of the projection's and the
# twist's Newton steps) in the three shapes a form could give it, on the
# same systems, checked against f64 and timed (tests/gpu_tridiagonal_probe.rs):
# walked by an invocation a strand (strands one after another, and
# interleaved by 8), cyclic reduction through workgroup memory with a
# barrier a level (the packed forms), and by subgroup shuffles, a strand a
# subgroup (the design not built). 8 and 32 rows, 32000 strands (1000
# when quick): whether a strand spread over a warp's lanes beats the walk
# on this GPU before anyone builds a form on it. Then a chain of 20 solves
# a strand in one dispatch, each reading the one before's solution (a
# substep's ~40 walks), at 2048, 8000 and 32000 strands (STRANDS_CHAIN_
# STRANDS): walked, walked with loads two rows ahead, and split over 2 to
# 32 lanes a strand (the partition method, subgroup shuffles): whether
# loads ahead, or a rod split among invocations, shorten walked-frame's
# chain.
wanted probe-tridiagonal && step probe-tridiagonal run_test gpu_tridiagonal_probe --ignored --nocapture --test-threads 1

# The benchmark: GPU up to 4 M vertices, CPU at the small sizes. The
# steps other than the target's time each row once (`--no-shares`): timing a
# row again without its head and without its grid, for the contact and
# grid columns, triples a hair row's frames and scene builds (~2.5 s each
# at 1 M vertices on a 2-core VM), and these steps compare whole rows.
wanted bench-gpu && step bench-gpu "$strands" bench --min-time "$min_time" --backend gpu --no-shares --workload hair,grass --strands "$sizes" \
    --out "$OUT/bench.json" --plot "$OUT/bench.svg"
wanted bench-cpu && step bench-cpu "$strands" bench --min-time "$min_time" --backend cpu --no-shares --workload hair,grass --strands 1000,4000 \
    --out "$OUT/bench-cpu.json" --plot "$OUT/bench-cpu.svg"
# The packed forms on packs of each shape (`--gpu-pack-rows`, README "On
# the GPU"): whether smaller packs, which hold less workgroup memory and so
# fit more workgroups on a multiprocessor (32 rows: a warp a pack), speed
# the strand-per-workgroup design up; and with the frame a dispatch
# (`fused-frame`: at 32 rows a strand a warp, its positions in workgroup
# memory for the whole frame). The target's hair-nogrid (without the grid,
# which the frame a dispatch needs) at 1 M vertices (1000 strands when
# quick), against 256 rows in the same run; before the forms, which an
# H200 has measured, so that a deadline cuts those first.
wanted bench-packs && step bench-packs "$strands" bench --min-time "$min_time" --backend gpu --no-shares --workload hair-nogrid --strands "$timing_strands" \
    --gpu-form packed,fused,fused-frame --gpu-pack-rows 32,64,256 \
    --out "$OUT/bench-packs.json" --plot "$OUT/bench-packs.svg"
# The seven GPU forms side by side (README, "On the GPU"): which to make the
# default on this GPU, what resident state gains (fused against
# fused-buffer), and what a frame a dispatch gains (walked-frame against
# walked-fused, fused-frame against fused, on grass: with the hair's grid
# each runs its twin's schedule, a second row of it). At 1 M vertices
# (32000 hair strands; 1000 when quick).
wanted bench-forms && step bench-forms "$strands" bench --min-time "$min_time" --backend gpu --no-shares --workload hair,grass --strands "$timing_strands" \
    --gpu-form walked,walked-fused,walked-frame,packed,fused,fused-buffer,fused-frame \
    --out "$OUT/bench-forms.json" --plot "$OUT/bench-forms.svg"
# The bending stencil in f64 (the default where the GPU has f64 in shaders)
# against f32, same run (README, "Precision"): what resting below 1e-6 m/s
# costs on this GPU. At 1 M vertices (1000 strands when quick).
wanted bench-stencil && step bench-stencil "$strands" bench --min-time "$min_time" --backend gpu --no-shares --workload hair --strands "$timing_strands" \
    --gpu-stencil f64,f32 \
    --out "$OUT/bench-stencil.json" --plot "$OUT/bench-stencil.svg"

if [ ${#failed[@]} -eq 0 ]; then
    say "all steps passed; results in $OUT"
else
    say "failed: ${failed[*]}; results in $OUT"
    exit 1
fi
