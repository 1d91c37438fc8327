#!/bin/sh
# Builds the fuzz targets' seed corpora from the repository's own programs, under
# compiler/fuzz/corpus/TARGET (not committed). Run from anywhere:
#     compiler/fuzz/seed-corpus.sh
# The nyuzi images come from `spmdc --emit hex`: $SPMDC names the binary (default: the
# workspace's release build, built if missing).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
corpus="$here/corpus"
spmdc=${SPMDC:-$root/target/release/spmdc}
[ -x "$spmdc" ] || (cd "$root" && cargo build --release -p spmdc)

mkdir -p "$corpus/front" "$corpus/ir" "$corpus/pipeline" "$corpus/gpu_sim" "$corpus/nyuzi_sim"

# Seeds are named by their path, so reruns overwrite rather than duplicate them.
name() { echo "$1" | sed "s|^$root/||; s|/|_|g"; }

# Source: every example and test program (the pipeline takes those of up to 4 KiB).
find "$root/examples" "$root/tests" "$root/lang-spec" -name '*.spmd' | while read -r f; do
    cp "$f" "$corpus/front/$(name "$f")"
    [ "$(wc -c <"$f")" -le 4096 ] && cp "$f" "$corpus/pipeline/$(name "$f")"
done

# IR text: the IR tests (valid and invalid) and the smaller prebuilt runtime pieces.
find "$root/tests" "$root/compiler/tests" -name '*.ir' -size -64k | while read -r f; do
    cp "$f" "$corpus/ir/$(name "$f")"
done
# `--emit ir` of the examples (its analysis notes are `;` comments).
for f in "$root"/examples/*.spmd; do
    "$spmdc" "$f" --emit ir >"$corpus/ir/$(name "$f").ir" 2>/dev/null || rm -f "$corpus/ir/$(name "$f").ir"
done

# dac-gpu assembly: the asm snapshots' listings (insta's header dropped).
for f in "$root"/tests/asm/snapshots/*dac-gpu*.snap; do
    awk 'n >= 2 { print } /^---$/ { n++ }' "$f" >"$corpus/gpu_sim/$(name "$f").s"
done

# Nyuzi images: the first 16 KiB (the target's cap: runtime, code, data, parameters)
# of launch images of generated programs, each with its own launch.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for seed in 0 1 2 3 4 5 6 7; do
    "$spmdc" gen --seed "$seed" -o "$tmp/g.spmd"
    # The second line is `// spmdc run --entry ... --arg ...`: its launch options.
    launch=$(sed -n 2p "$tmp/g.spmd" | cut -d' ' -f4-)
    # shellcheck disable=SC2086 # the launch options are words
    if "$spmdc" "$tmp/g.spmd" --target nyuzi --emit hex $launch -o "$tmp/g.hex" >/dev/null 2>&1; then
        head -n 4096 "$tmp/g.hex" | tr -d '\n' | xxd -r -p >"$corpus/nyuzi_sim/gen-$seed.bin"
    fi
done

for t in front ir pipeline gpu_sim nyuzi_sim; do
    echo "$t: $(ls "$corpus/$t" | wc -l) seeds"
done
