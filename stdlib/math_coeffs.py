#!/usr/bin/env python3
"""The constants of the transcendental functions in stdlib.spmd (section 11).

Polynomials are Chebyshev fits (mpmath.chebyfit, near-minimax) of the reduced
functions on the reduced ranges, with the degrees used in stdlib.spmd; split
constants (Cody-Waite parts of pi/2 and ln 2, hi/lo pairs) are exact to 60 digits
before rounding. Prints NAME = value, with polynomials in Horner form as they appear
in the source (the variable is z, or r for exp, u and t for erfc). Needs mpmath (pip install mpmath).
"""
import struct
from mpmath import mp, mpf, chebyfit, sqrt, exp, log, sin, cos, tan, atan, asin, erf, erfc, pi, floor

mp.dps = 60
def g_exp(r): return (exp(r)-1-r)/r**2 if r != 0 else mpf(1)/2
def g_log(z):
    if z == 0: return mpf(2)/3
    s = sqrt(z); return (log((1+s)/(1-s))/s - 2)/z
def g_logq(z):
    if z == 0: return mpf(2)/3
    s = sqrt(z); return (log((1+s)/(1-s)) - 2*s)/s**3
def g_sin(z):
    if z == 0: return -mpf(1)/6
    t = sqrt(z); return (sin(t)-t)/t**3
def g_cos(z):
    if z == 0: return mpf(1)/24
    t = sqrt(z); return (cos(t)-1+z/2)/z**2
def g_tan(z):
    if z == 0: return mpf(1)/3
    t = sqrt(z); return (tan(t)-t)/t**3
def g_atan(z):
    if z == 0: return -mpf(1)/3
    t = sqrt(z); return (atan(t)-t)/t**3
def g_asin(z):
    if z == 0: return mpf(1)/6
    t = sqrt(z); return (asin(t)-t)/t**3
def g_tanh(z):
    if z == 0: return -mpf(1)/3
    t = sqrt(z); return (mp.tanh(t)-t)/t**3
def g_erf(z):
    if z == 0: return 2/sqrt(pi) - 1
    t = sqrt(z); return erf(t)/t - 1
# erfc(x) * e^(x^2) around x = 1.5 (variable u = x - 1.5), and x times it in t = 1/x
def g_erfc_mid(u): return erfc(u + mpf(3)/2) * exp((u + mpf(3)/2)**2)
def g_erfc_far(t): return erfc(1/t) * exp(1/t**2) / t
L2 = log(2)
jobs = {
 'exp': (g_exp, [-L2/2, L2/2]),
 'log': (g_log, [0, ((sqrt(2)-1)/(sqrt(2)+1))**2]),
 'logq': (g_logq, [0, ((sqrt(mpf('1.5'))-1)/(sqrt(mpf('1.5'))+1))**2]),
 'sin': (g_sin, [0, (pi/4)**2]),
 'cos': (g_cos, [0, (pi/4)**2]),
 'tan': (g_tan, [0, (pi/4)**2]),
 'atan': (g_atan, [0, mpf(7)/16*mpf(7)/16]),
 'asin': (g_asin, [0, mpf(1)/4]),
 'tanh': (g_tanh, [0, mpf(11)/20 * mpf(11)/20]),
 'erf': (g_erf, [0, mpf(27)/32 * mpf(27)/32]),
 'erfc_mid': (g_erfc_mid, [mpf(27)/32 - mpf(3)/2, mpf(1)/2]),
 'erfc_far': (g_erfc_far, [mpf(1)/28, mpf(1)/2]),
}
def f32(v):
    return struct.unpack('<f', struct.pack('<f', float(v)))[0]
def F(v):
    s = '%.9g' % f32(v)
    if 'e' not in s and '.' not in s: s += '.0'
    return s
def D(v):
    s = repr(float(v))
    if 'e' not in s and '.' not in s: s += '.0'
    return s + 'd'
def trunc_bits(v, bits):
    # v rounded to `bits` significant bits
    e = int(floor(mp.log(abs(v), 2)))
    q = mpf(2) ** (e - bits + 1)
    return floor(v / q + mpf(1)/2) * q
def split(v, bits, fmt, lowfmt=None):
    hi = trunc_bits(v, bits)
    return hi, v - hi
def horner(coefs, var, fmt):
    # coefs highest first -> c0 + var*(c1 + var*(...))
    cs = list(reversed(coefs))
    s = fmt(cs[-1])
    for c in reversed(cs[:-1]):
        s = '%s + %s * (%s)' % (fmt(c), var, s)
    return s
def poly(name, deg, fmt):
    g, iv = jobs[name]
    return horner(chebyfit(g, iv, deg + 1), 'z', fmt)
L2 = log(2)
C = {}
# float constants
C['INVLN2_F'] = F(1 / L2)
h, l = split(L2, 16, F); C['LN2HI_F'] = F(h); C['LN2LO_F'] = F(l)
h, l = split(L2, 32, D); C['LN2HI_D'] = D(h); C['LN2LO_D'] = D(l)
h, l = split(L2, 42, D); C['LN2HI42_D'] = D(h); C['LN2LO42_D'] = D(l)
C['INVLN2_D'] = D(1 / L2)
C['TWO_OVER_PI_F'] = F(2 / pi); C['TWO_OVER_PI_D'] = D(2 / pi)
p1 = trunc_bits(pi / 2, 11); p2 = trunc_bits(pi / 2 - p1, 11); p3 = pi / 2 - p1 - p2
C['PIO2_1_F'], C['PIO2_2_F'], C['PIO2_3_F'] = F(p1), F(p2), F(p3)
p1 = trunc_bits(pi / 2, 33); p2 = trunc_bits(pi / 2 - p1, 33); p3 = pi / 2 - p1 - p2
C['PIO2_1_D'], C['PIO2_2_D'], C['PIO2_3_D'] = D(p1), D(p2), D(p3)
for nm, v in [('PIO2', pi / 2), ('PI', pi), ('ATAN05', atan(mpf(1) / 2)), ('ATAN1', pi / 4), ('ATAN15', atan(mpf(3) / 2))]:
    hf = mpf(f32(v)); C[nm + '_HI_F'] = F(hf); C[nm + '_LO_F'] = F(v - hf)
    hd = mpf(float(v)); C[nm + '_HI_D'] = D(hd); C[nm + '_LO_D'] = D(v - hd)
lb = log(mpf(3) / 2); hd = mpf(float(lb)); C['LOG15_HI_D'] = D(hd); C['LOG15_LO_D'] = D(lb - hd)
C['SQRT3_D'] = D(sqrt(3)); C['SQRT15_D'] = D(sqrt(mpf(3) / 2))
C['EXP_P_F'] = poly('exp', 4, F).replace('z', 'r'); C['EXP_P_D'] = poly('exp', 10, D).replace('z', 'r')
C['LOG_P_F'] = poly('log', 3, F); C['LOG_P_D'] = poly('log', 7, D)
C['LOGQ_D'] = poly('logq', 6, D)
C['SIN_P_F'] = poly('sin', 3, F); C['SIN_P_D'] = poly('sin', 6, D)
C['COS_P_F'] = poly('cos', 3, F); C['COS_P_D'] = poly('cos', 6, D)
C['TAN_P_F'] = poly('tan', 8, F)
C['ATAN_P_F'] = poly('atan', 5, F); C['ATAN_P_D'] = poly('atan', 11, D)
C['ASIN_P_F'] = poly('asin', 6, F); C['ASIN_P_D'] = poly('asin', 13, D)
C['TANH_P_D'] = poly('tanh', 10, D)
C['ERF_P_D'] = poly('erf', 11, D)
C['ERFC_MID_D'] = poly('erfc_mid', 18, D).replace('z', 'u')
C['ERFC_FAR_D'] = poly('erfc_far', 22, D).replace('z', 't')
for name in sorted(C):
    print(name, '=', C[name])
