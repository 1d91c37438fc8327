#!/usr/bin/env python3
"""Reference values of erf and erfc for compiler/tests/stdlib_math.rs, which has no
correctly rounded erf to compare with (Rust's is unstable).

Writes compiler/tests/data/erf_reference.txt: one line per input, `d X ERF ERFC` with
the bits of double X and of erf(X) and erfc(X) correctly rounded to double, or
`f X ERF ERFC` with float bits rounded to float. The values come from mpmath at 60
digits, rounded once to the format (mpmath's own rounding of its mpf, which is exact
at that precision). Inputs are pseudo-random, fixed by the seed. Needs mpmath.
"""
import random
import struct
from mpmath import mp, mpf, erf, erfc

mp.dps = 60

def d_bits(v):
    return struct.unpack('<Q', struct.pack('<d', v))[0]

def f_bits(v):
    return struct.unpack('<I', struct.pack('<f', v))[0]

def to_f32(v):
    # mpf -> float32, rounded once: mpmath rounds to 24 bits, then the exponent range
    # is that of float32 (subnormals rounded by struct from an exact double)
    with mp.workprec(24):
        r = +mpf(v)
    return struct.unpack('<f', struct.pack('<f', float(r)))[0] if abs(r) >= mpf(2) ** -126 else \
        struct.unpack('<f', struct.pack('<f', float(mpf(v))))[0]

def inputs(rng, n_lin, lin, n_log, log_lo, tail):
    xs = [rng.uniform(*lin) for _ in range(n_lin)]
    xs += [rng.uniform(0.8, 2.2) for _ in range(n_lin // 3)]
    xs += [rng.uniform(2.0, tail) for _ in range(n_lin // 2)]
    xs += [rng.choice([-1, 1]) * 2.0 ** rng.uniform(log_lo, -1) for _ in range(n_log)]
    return xs

def main():
    rng = random.Random(2024)
    lines = []
    for x in inputs(rng, 300, (-7.0, 7.0), 60, -1074, 27.3):
        lines.append('d %016x %016x %016x' % (d_bits(x), d_bits(float(erf(mpf(x)))), d_bits(float(erfc(mpf(x))))))
    for x in inputs(rng, 200, (-5.0, 5.0), 40, -149, 10.1):
        x = struct.unpack('<f', struct.pack('<f', x))[0]
        lines.append('f %08x %08x %08x' % (f_bits(x), f_bits(to_f32(erf(mpf(x)))), f_bits(to_f32(erfc(mpf(x))))))
    with open('compiler/tests/data/erf_reference.txt', 'w') as out:
        out.write('\n'.join(lines) + '\n')

main()
