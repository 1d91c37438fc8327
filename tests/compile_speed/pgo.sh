#!/usr/bin/env bash
# Builds spmdc with profile-guided optimization, as rustc and clang ship theirs:
# target/pgo/spmdc.
#
#   bash tests/compile_speed/pgo.sh
#
# 1. an instrumented release build (`-Cprofile-generate`) in target/pgo/gen;
# 2. training: it compiles every conformance program (tests/conformance) for nyuzi
#    and dac-gpu. The examples are not in the training set, since they are what
#    tests/compile_speed/medians.py measures;
# 3. `llvm-profdata merge` of the profiles, by the first of rustup's llvm-tools, the
#    Debian llvm-NN packages (newest first) and `llvm-profdata` on the PATH that reads
#    them (Debian 12's llvm-19 reads those of rustc 1.95's LLVM 22; its llvm-14 does not);
# 4. a release build that uses them (`-Cprofile-use`) in target/pgo/use, copied to
#    target/pgo/spmdc.
#
# Both builds name the host target explicitly, so that RUSTFLAGS reach spmdc and its
# dependencies but not the build scripts and procedural macros cargo runs on the host.
# The binary's output is the plain release build's, byte for byte (docs/performance.md
# gives the check and the speed-up). Takes two release builds and a minute of training.
set -euo pipefail
cd "$(dirname "$0")/../.."

host=$(rustc -vV | sed -n 's/^host: //p')
# LLVM's profile tool, newest first: an older one cannot read the raw profiles of a
# newer LLVM ("unsupported instrumentation profile format version").
profdata_candidates() {
    ls "$(rustc --print sysroot)"/lib/rustlib/*/bin/llvm-profdata 2>/dev/null || true
    ls /usr/lib/llvm-*/bin/llvm-profdata 2>/dev/null | sort -V -r || true
    command -v llvm-profdata || true
}

out=$PWD/target/pgo
rm -rf "$out/profiles"
mkdir -p "$out/profiles"

echo "+ instrumented build"
RUSTFLAGS="-Cprofile-generate=$out/profiles" \
    cargo build --release -p spmdc --target "$host" --target-dir "$out/gen"

echo "+ training on tests/conformance"
gen="$out/gen/$host/release/spmdc"
for f in tests/conformance/*.spmd; do
    for target in nyuzi dac-gpu; do
        # Programs that are meant to be rejected train the diagnostics' paths.
        "$gen" "$f" --target "$target" --emit asm >/dev/null 2>&1 || true
    done
done

merged=
for profdata in $(profdata_candidates); do
    echo "+ $profdata merge"
    if "$profdata" merge -o "$out/spmdc.profdata" "$out/profiles"; then
        merged=yes
        break
    fi
done
if [ -z "$merged" ]; then
    echo "error: no llvm-profdata here reads these profiles (rustc's LLVM: $(rustc -vV | sed -n 's/^LLVM version: //p'));" \
        "install a recent Debian llvm-NN package or rustup's llvm-tools" >&2
    exit 2
fi

echo "+ optimized build"
RUSTFLAGS="-Cprofile-use=$out/spmdc.profdata" \
    cargo build --release -p spmdc --target "$host" --target-dir "$out/use"
cp "$out/use/$host/release/spmdc" "$out/spmdc"
echo "built $out/spmdc"
