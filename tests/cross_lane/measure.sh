#!/bin/bash
# measure.sh: the cost of each cross-lane built-in on nyuzi and dac-gpu, as a Markdown
# table (docs/cross-lane.md shows it for two builds, before -> after).
#
# Run from the repository root. SPMDC names the spmdc binary (default:
# target/release/spmdc); OUT the scratch directory (default /tmp/cross_lane_measure).
#
# Each row is a pair of kernels that differ only in the built-in: the "with" kernel
#
#     export void k(uniform T a[], uniform T vout[], uniform R out[], uniform R wout[],
#                   uniform R z) {
#         T v = a[programIndex];
#         vout[programIndex] = v;
#         if (true) {
#             STMT
#         }
#         out[1] = z;
#     }
#
# where STMT stores the built-in's result (a uniform result to out[0], a varying one to
# wout[programIndex]), and the "without" kernel, whose STMT stores v (varying) or
# the parameter z (uniform; both kernels read it) instead. A column is the difference between the two: "lines" in the
# assembly listing (`spmdc FILE --target T`, every line of the file), "dyn" in dynamic
# instructions (`spmdc run --json`, `stats.dynamic_instructions`: machine instructions on
# nyuzi, warp instructions on dac-gpu) for one gang with every lane on (one 16-lane
# gang on nyuzi, one 32-thread block, a full warp, on dac-gpu). "masked" is the same
# difference with the built-in under `if (v % 3 != 1)` (a divergent mask) in both
# kernels.
set -u
S=${SPMDC:-target/release/spmdc}
O=${OUT:-/tmp/cross_lane_measure}
mkdir -p "$O"

# name | T | R | built-in call on v | uniform result?
ROWS=(
    "reduce_add int|int32|int64|reduce_add(v)|u"
    "reduce_add int16|int16|int32|reduce_add(v)|u"
    "reduce_add int64|int64|int64|reduce_add(v)|u"
    "reduce_add float|float|float|reduce_add(v)|u"
    "reduce_add double|double|double|reduce_add(v)|u"
    "reduce_min int|int32|int32|reduce_min(v)|u"
    "reduce_max uint|uint32|uint32|reduce_max(v)|u"
    "reduce_min float|float|float|reduce_min(v)|u"
    "reduce_max double|double|double|reduce_max(v)|u"
    "reduce_equal int|int32|bool|reduce_equal(v)|u"
    "reduce_equal float|float|bool|reduce_equal(v)|u"
    "exclusive_scan_add int|int32|int32|exclusive_scan_add(v)|v"
    "exclusive_scan_add float|float|float|exclusive_scan_add(v)|v"
    "exclusive_scan_add double|double|double|exclusive_scan_add(v)|v"
    "exclusive_scan_and int|int32|int32|exclusive_scan_and(v)|v"
    "exclusive_scan_or int64|int64|int64|exclusive_scan_or(v)|v"
    "broadcast int|int32|int32|broadcast(v, 5)|v"
    "broadcast double|double|double|broadcast(v, 5)|v"
    "rotate int|int32|int32|rotate(v, 3)|v"
    "rotate float (variable)|float|float|rotate(v, a[0] > 0 ? 3 : 1)|v"
    "shift int|int32|int32|shift(v, 1)|v"
    "shift int (-2)|int32|int32|shift(v, -2)|v"
    "shift double|double|double|shift(v, 1)|v"
)

kernel() { # T R STMT MASKED
    local cond="true"
    [ "$4" = m ] && cond="v % 3 != 1"
    [ "$1" = float ] || [ "$1" = double ] && [ "$4" = m ] && cond="(int)v % 3 != 1"
    cat <<K
export void k(uniform $1 a[], uniform $1 vout[], uniform $2 out[], uniform $2 wout[],
              uniform $2 z) {
    $1 v = a[programIndex];
    vout[programIndex] = v;
    if ($cond) {
        $3
    }
    out[1] = z;
}
K
}

# prints "lines dyn" of FILE on TARGET (N lanes)
cost() {
    local f=$1 t=$2 n=$3 e
    local lines
    lines=$("$S" "$f" --target "$t" 2>/dev/null | wc -l)
    local dyn
    dyn=$("$S" run "$f" --entry k --target "$t" --block "$n" --arg "a=range($n,1)" \
        --arg "vout=zeros($n)" --arg "out=zeros(2)" --arg "wout=zeros($n)" --arg z=0 --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["dynamic_instructions"])' 2>/dev/null)
    echo "$lines ${dyn:-?}"
}

echo "| built-in | nyuzi lines | nyuzi dyn | nyuzi dyn masked | dac-gpu lines | dac-gpu dyn | dac-gpu dyn masked |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for row in "${ROWS[@]}"; do
    IFS='|' read -r name ty rt call kind <<<"$row"
    if [ "$kind" = u ]; then
        with="out[0] = $call;"
        without="out[0] = z;"
    else
        with="wout[programIndex] = $call;"
        without="wout[programIndex] = v;"
    fi
    cells=()
    for t in nyuzi dac-gpu; do
        n=16
        [ "$t" = dac-gpu ] && n=32
        for m in a m; do
            kernel "$ty" "$rt" "$with" $m >"$O/with_$m.spmd"
            kernel "$ty" "$rt" "$without" $m >"$O/without_$m.spmd"
            read -r lw dw <<<"$(cost "$O/with_$m.spmd" $t $n)"
            read -r lo do <<<"$(cost "$O/without_$m.spmd" $t $n)"
            if [ $m = a ]; then
                cells+=("$((lw - lo))" "$((dw - do))")
            else
                cells+=("$((dw - do))")
            fi
        done
    done
    echo "| \`$name\` | ${cells[0]} | ${cells[1]} | ${cells[2]} | ${cells[3]} | ${cells[4]} | ${cells[5]} |"
done
