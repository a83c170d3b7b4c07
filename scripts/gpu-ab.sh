#!/usr/bin/env bash
# A/B timing of builds of `strands` from several git refs on one GPU, in
# one call of a lent machine (docs/BENCHMARKS.md, "Measuring on a real
# GPU"): the same bench rows from each build, the builds taking turns
# round after round, so that the machine's drift between calls (6 % on
# the H200 in the twenty-eighth session) does not pass for a difference.
#
#   scripts/gpu-ab.sh build REF...   here, where Rust is: each ref's release
#                                    `strands` (a git worktree each, one
#                                    target/gpu-ab folder), stripped and
#                                    xz-compressed into .gpu-ab/NAME.xz
#                                    (NAME: the ref, / as -), ~5 MB each
#   scripts/gpu-ab.sh run [ROUNDS] -- BENCH-ARGS...
#                                    there (carry .gl and .gpu-ab): every
#                                    build in .gpu-ab, ROUNDS rounds
#                                    (default 2), each running
#                                    `strands bench BENCH-ARGS --out ...`;
#                                    logs and JSON under $OUT (default
#                                    ./gpu-ab-out), and the table rows
#                                    printed with the build and round
#
# Example (the prefetch experiment against main):
#   scripts/gpu-ab.sh build main exp/twist-prefetch exp/twist-prefetch3
#   run carry=[".gl", ".gpu-ab"]: scripts/gpu-ab.sh run 2 -- --min-time 0.5 \
#       --backend gpu --no-shares --workload hair-nogrid --strands 32000 \
#       --gpu-form walked,walked-frame

set -uo pipefail
cd "$(dirname "$0")/.."
PATH=$PATH:/usr/sbin:/sbin

build() {
    [ $# -gt 0 ] || {
        echo "gpu-ab build: name the git refs to build (e.g. main exp/twist-prefetch)" >&2
        return 2
    }
    # A target folder of its own under the checkout's: the dependencies are
    # built once, each ref rebuilds only this crate. (Not the checkout's
    # target/release itself: a worktree's build overwrote its `strands`,
    # and cargo, whose fingerprints go by the source's path, then took the
    # checkout's build for fresh and kept the other ref's binary.)
    local target=$PWD/target/gpu-ab ref name tree
    mkdir -p .gpu-ab
    for ref in "$@"; do
        git rev-parse --verify --quiet "$ref^{commit}" >/dev/null || {
            echo "gpu-ab build: no git ref '$ref'" >&2
            return 1
        }
    done
    for ref in "$@"; do
        name=${ref//\//-}
        tree=$(mktemp -d /tmp/gpu-ab-XXXXXX)
        git worktree add --detach --quiet "$tree" "$ref" || return 1
        echo "gpu-ab build: $ref ($(git rev-parse --short "$ref")) in $tree"
        if ! (cd "$tree" && CARGO_TARGET_DIR=$target cargo build --release --locked --bin strands); then
            git worktree remove --force "$tree"
            echo "gpu-ab build: $ref did not build" >&2
            return 1
        fi
        strip -o ".gpu-ab/$name" "$target/release/strands" &&
            xz -f -T2 ".gpu-ab/$name" &&
            echo "$ref $(git rev-parse "$ref")" >".gpu-ab/$name.ref"
        git worktree remove --force "$tree"
        echo "gpu-ab build: .gpu-ab/$name.xz ($(du -h ".gpu-ab/$name.xz" | cut -f1))"
    done
}

run() {
    local rounds=2
    if [ $# -gt 0 ] && [ "$1" != -- ]; then
        rounds=$1
        shift
    fi
    [[ $rounds =~ ^[1-9][0-9]*$ ]] || {
        echo "gpu-ab run: ROUNDS is a whole number of rounds, not '$rounds'" >&2
        return 2
    }
    [ "${1:-}" = -- ] || {
        echo "usage: $0 run [ROUNDS] -- BENCH-ARGS..." >&2
        return 2
    }
    shift
    compgen -G ".gpu-ab/*.xz" >/dev/null || {
        echo "gpu-ab run: no builds in .gpu-ab (run '$0 build REF...' where Rust is, and carry .gpu-ab)" >&2
        return 1
    }
    local out=${OUT:-./gpu-ab-out} bin=/tmp/gpu-ab-bin
    mkdir -p "$out" "$bin"
    # Vulkan loader and the NVIDIA ICD, as scripts/gpu-measure.sh finds them.
    if compgen -G ".gl/*.deb" >/dev/null && ! grep -q libvulkan < <(ldconfig -p); then
        for f in .gl/*.deb; do dpkg -x "$f" /; done
        ldconfig
    fi
    local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f "$icd" ] &&
        ! compgen -G "/usr/share/vulkan/icd.d/nvidia*.json" >/dev/null &&
        ! compgen -G "/etc/vulkan/icd.d/nvidia*.json" >/dev/null; then
        export VK_DRIVER_FILES=$icd
    fi
    export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
    local names=() f
    for f in .gpu-ab/*.xz; do
        local name
        name=$(basename "$f" .xz)
        xz -dc "$f" >"$bin/$name" && chmod +x "$bin/$name" || return 1
        names+=("$name")
        echo "gpu-ab: $name = $(cat ".gpu-ab/$name.ref" 2>/dev/null || echo "unknown ref")"
    done
    local r i k n failed=0
    for ((r = 1; r <= rounds; r++)); do
        # Each round starts one build later, so no build always runs first.
        for ((k = 0; k < ${#names[@]}; k++)); do
            i=$(((k + r - 1) % ${#names[@]}))
            n=${names[$i]}
            if ! "$bin/$n" bench "$@" --out "$out/$n-$r.json" --plot "$out/$n-$r.svg" >"$out/$n-$r.log" 2>&1; then
                echo "gpu-ab: $n round $r FAILED ($out/$n-$r.log):"
                tail -5 "$out/$n-$r.log"
                failed=1
            fi
            grep -E "^(bench: GPU |[a-z][a-z-]* +(cpu|gpu)|profile )" "$out/$n-$r.log" | sed "s/^/$n $r: /"
        done
    done
    return $failed
}

case "${1:-}" in
build)
    shift
    build "$@"
    ;;
run)
    shift
    run "$@"
    ;;
*)
    echo "usage: $0 build REF... | $0 run [ROUNDS] -- BENCH-ARGS..." >&2
    exit 2
    ;;
esac
