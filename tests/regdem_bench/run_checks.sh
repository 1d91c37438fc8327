#!/bin/bash
# run_checks.sh [KERNEL.spmd ...]: the checks of every regdem_bench kernel.
#
# Run from the repository root. SPMDC names the spmdc binary (default: spmdc
# on the PATH); OUT the directory for the results (default /tmp/regdem_bench).
# For each kernel, with L = the suggested launch of its header without the
# --print options:
#   1. spmdc run L --target interp --json                 (the reference)
#   2. spmdc run L --target dac-gpu --json                (must equal 1)
#   3. spmdc run L --target dac-gpu --no-dac --json       (must equal 1)
#   4. spmdc run L --target dac-gpu --max-regs 24 --json  (must equal 1)
#   5. spmdc run L --target dac-gpu --timing --config maxwell --json (statistics)
#   6. spmdc run L --target dac-gpu --max-regs 255 --json (registers)
#   7. python3 tests/regdem_bench/check.py KERNEL.spmd <1's json>
# "Equal" means every buffer's printed values are the same text (so the same
# bits: the printer round-trips, and tells -0.0 from 0 and NaN from numbers).
set -u
S=${SPMDC:-spmdc}
O=${OUT:-/tmp/regdem_bench}
mkdir -p "$O"
D=tests/regdem_bench
FILES=("$@")
[ ${#FILES[@]} -eq 0 ] && FILES=($D/*.spmd)
status=0
for F in "${FILES[@]}"; do
    N=$(basename "$F" .spmd)
    # the launch: the header lines from "spmdc run" to the first line without a backslash
    L=$(awk '/^\/\/ +spmdc run/{on=1} on{sub(/^\/\/ +/,""); c=sub(/\\$/,""); printf "%s ", $0; if(!c) exit}' "$F" |
        sed -E 's/^spmdc run //; s/--print [A-Za-z_0-9]+//g')
    echo "== $N"
    eval "$S" run $L --target interp --json > "$O/$N.interp.json" 2> "$O/$N.stderr" || { echo "  interp FAILED"; status=1; continue; }
    for v in gpu nodac r24; do
        case $v in
            gpu) extra="" ;;
            nodac) extra="--no-dac" ;;
            r24) extra="--max-regs 24" ;;
        esac
        eval "$S" run $L --target dac-gpu $extra --json > "$O/$N.$v.json" 2>> "$O/$N.stderr" || { echo "  dac-gpu $extra FAILED"; status=1; continue; }
        python3 - "$O/$N.interp.json" "$O/$N.$v.json" "dac-gpu $extra" <<'PY' || status=1
import json, sys
load = lambda p: json.load(open(p), parse_float=str, parse_int=str)["buffers"]
a, b = load(sys.argv[1]), load(sys.argv[2])
bad = [k for k in a if a[k] != b.get(k)]
print("  %-22s %s" % (sys.argv[3], "identical to interp" if not bad else "MISMATCH in " + ", ".join(bad)))
sys.exit(1 if bad else 0)
PY
    done
    t0=$(date +%s.%N)
    eval "$S" run $L --target dac-gpu --timing --config maxwell --json > "$O/$N.timing.json" 2>> "$O/$N.stderr" || { echo "  timing FAILED"; status=1; }
    t1=$(date +%s.%N)
    eval "$S" run $L --target dac-gpu --max-regs 255 --json > "$O/$N.r255.json" 2>> "$O/$N.stderr"
    echo "  timing run: $(python3 -c "print(round($t1 - $t0, 1))") s wall"
    python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['stats']; [print('  %s = %s' % (k, s.get(k))) for k in 'registers spilled_values spill_bytes cycles theoretical_occupancy achieved_occupancy shared_bank_conflicts local_transactions'.split()]" "$O/$N.timing.json"
    echo "  --max-regs 255: registers = $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['stats'].get('registers'))" "$O/$N.r255.json")"
    python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['stats']; print('  --max-regs 24: registers = %s, spilled_values = %s, spill_bytes = %s' % (s.get('registers'), s.get('spilled_values'), s.get('spill_bytes')))" "$O/$N.r24.json"
    python3 $D/check.py "$F" "$O/$N.interp.json" | sed 's/^/  /' || status=1
done
exit $status
