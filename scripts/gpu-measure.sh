#!/usr/bin/env bash
# One command for whoever has a real GPU (docs/PERFORMANCE.md, "Measuring
# on a GPU"): build release, run the GPU test binaries, record the adapter
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
#   STRANDS_MEASURE_STEPS      the steps to run, space separated, from: tests
#                              bench-target bench-gpu bench-cpu bench-splat
#                              bench-stencil (default: all, in that order); a
#                              few a call split the measurement over several
#                              calls of a tool with a time limit per command

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
    local built
    built=$(cargo test --release --locked --no-run --color never "${tests[@]}" 2>&1) || {
        echo "$built" >&2
        return 1
    }
    rm -rf .gpu-bundle
    mkdir -p .gpu-bundle/stage/tests
    cp "$CARGO_TARGET_DIR/release/strands" .gpu-bundle/stage/strands || return 1
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
    strip .gpu-bundle/stage/strands .gpu-bundle/stage/tests/* || return 1
    {
        echo "commit $(git rev-parse HEAD) $(git status --short --untracked-files=no | wc -l) changed files"
        echo "sources $(sources_hash)"
        echo "built_at $(pwd -P)"
        echo "rustc $(rustc --version)"
    } >.gpu-bundle/stage/manifest
    tar cJf .gpu-bundle/bundle.tar.xz -C .gpu-bundle/stage . || return 1
    rm -rf .gpu-bundle/stage
    echo "bundle: .gpu-bundle/bundle.tar.xz $(du -h .gpu-bundle/bundle.tar.xz | cut -f1) ($n test executables and strands)"
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
all_steps="tests bench-target bench-gpu bench-cpu bench-splat bench-stencil"
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
    say "warning: no libvulkan on this machine; run 'scripts/gpu-measure.sh prepare' where there is internet and carry .gl/"
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

# The target size, 1 M vertices (32000 hair strands of 32 vertices; 1000
# when quick), in the schedule the simulator chooses: the hair as the
# bench runs it (the walked fused halves around the grid, the sorted
# splat) and `hair-nogrid` and grass (the whole frame a dispatch), with the
# contact and grid shares.
wanted bench-target && step bench-target "$strands" bench --min-time "$min_time" --backend gpu --workload hair,hair-nogrid,grass --strands "$timing_strands" \
    --out "$OUT/bench-target.json" --plot "$OUT/bench-target.svg"
# Each row once (--no-shares): the shares, which time each row again
# without colliders and without the grid, triple a row's frames and scene
# builds (~2.5 s each at 1 M vertices on a 2-core VM), and these steps
# compare whole rows. The sizes up to 4 M vertices (the performance
# page's table and plot), and the CPU reference at the small ones.
wanted bench-gpu && step bench-gpu "$strands" bench --min-time "$min_time" --backend gpu --no-shares --workload hair,hair-nogrid,grass --strands "$sizes" \
    --out "$OUT/bench.json" --plot "$OUT/bench.svg"
wanted bench-cpu && step bench-cpu "$strands" bench --min-time "$min_time" --backend cpu --no-shares --workload hair,grass --strands 1000,4000 \
    --out "$OUT/bench-cpu.json" --plot "$OUT/bench-cpu.svg"
# The two splats onto the hair–hair grid, the same run (`--gpu-splat`;
# the same grid either way): the walked window against the sorted splat
# with its default runs and with runs of 32 (the GPU's default).
wanted bench-splat && step bench-splat "$strands" bench --min-time "$min_time" --backend gpu --no-shares --workload hair --strands "$timing_strands" \
    --gpu-splat own,sorted,sorted:32 \
    --out "$OUT/bench-splat.json" --plot "$OUT/bench-splat.svg"
# The bending stencil in f64 (the default where the GPU has f64 in shaders)
# against f32, same run (docs/GPU.md, "Precision"): what resting below
# 1e-6 m/s costs on this GPU. At 1 M vertices (1000 strands when quick).
wanted bench-stencil && step bench-stencil "$strands" bench --min-time "$min_time" --backend gpu --no-shares --workload hair --strands "$timing_strands" \
    --gpu-stencil f64,f32 \
    --out "$OUT/bench-stencil.json" --plot "$OUT/bench-stencil.svg"

if [ ${#failed[@]} -eq 0 ]; then
    say "all steps passed; results in $OUT"
else
    say "failed: ${failed[*]}; results in $OUT"
    exit 1
fi
