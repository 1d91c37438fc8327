//! The 32-bit lane path of the functional executor: most instructions of a kernel
//! operate on 32-bit values (`.u32`, `.s32`, `.b32`, `.f32`), so they read, compute
//! and write `[u32; 32]` lane arrays straight from and to the register file instead
//! of widening every lane to `u64`. Every function here computes exactly what the
//! general `u64` path of `exec.rs` computes for the same instruction (the general
//! path only ever uses the low 32 bits of a 32-bit operand and writes the low 32
//! bits of a 32-bit result); a combination not handled here returns `false` and the
//! caller falls back to the general path (which also reports undefined ones).

use super::exec::{arith32, fmax_takes_first, fmin_takes_first, pick, WARP};
use super::isa::{BinOp, Cmp, Type};

/// Whether `ty` is a 32-bit type handled by this path.
#[inline]
pub(crate) fn is32(ty: Type) -> bool {
    matches!(ty, Type::U32 | Type::S32 | Type::B32 | Type::F32)
}

#[inline(always)]
fn map2(a: &[u32; WARP], b: &[u32; WARP], o: &mut [u32; WARP], f: impl Fn(u32, u32) -> u32) {
    for l in 0..WARP {
        o[l] = f(a[l], b[l]);
    }
}

#[inline(always)]
fn fl(x: u32) -> f32 {
    f32::from_bits(x)
}

/// `op.ty` lane by lane on 32-bit lanes; `false` when not handled here.
pub(crate) fn bin32(
    op: BinOp,
    ty: Type,
    a: &[u32; WARP],
    b: &[u32; WARP],
    o: &mut [u32; WARP],
) -> bool {
    use Type::*;
    match (op, ty) {
        (BinOp::Add, U32 | S32) => map2(a, b, o, |x, y| x.wrapping_add(y)),
        (BinOp::Add, F32) => map2(a, b, o, |x, y| {
            arith32(fl(x), fl(y), |x, y| x + y).to_bits()
        }),
        (BinOp::Sub, U32 | S32) => map2(a, b, o, |x, y| x.wrapping_sub(y)),
        (BinOp::Sub, F32) => map2(a, b, o, |x, y| {
            arith32(fl(x), fl(y), |x, y| x - y).to_bits()
        }),
        (BinOp::Mul, U32 | S32) => map2(a, b, o, |x, y| x.wrapping_mul(y)),
        (BinOp::Mul, F32) => map2(a, b, o, |x, y| {
            arith32(fl(x), fl(y), |x, y| x * y).to_bits()
        }),
        (BinOp::MulHi, U32) => map2(a, b, o, |x, y| ((u64::from(x) * u64::from(y)) >> 32) as u32),
        (BinOp::MulHi, S32) => map2(a, b, o, |x, y| {
            ((i64::from(x as i32) * i64::from(y as i32)) >> 32) as u32
        }),
        (BinOp::Div, U32) => map2(a, b, o, |x, y| x.checked_div(y).unwrap_or(u32::MAX)),
        (BinOp::Div, S32) => map2(a, b, o, |x, y| match y as i32 {
            0 => u32::MAX,
            d => (x as i32).wrapping_div(d) as u32,
        }),
        (BinOp::Div, F32) => map2(a, b, o, |x, y| {
            arith32(fl(x), fl(y), |x, y| x / y).to_bits()
        }),
        (BinOp::Rem, U32) => map2(a, b, o, |x, y| x.checked_rem(y).unwrap_or(x)),
        (BinOp::Rem, S32) => map2(a, b, o, |x, y| match y as i32 {
            0 => x,
            d => (x as i32).wrapping_rem(d) as u32,
        }),
        (BinOp::Min, U32) => map2(a, b, o, |x, y| x.min(y)),
        (BinOp::Min, S32) => map2(a, b, o, |x, y| (x as i32).min(y as i32) as u32),
        (BinOp::Min, F32) => map2(a, b, o, |x, y| {
            pick(fmin_takes_first(fl(x).into(), fl(y).into()), x, y)
        }),
        (BinOp::Max, U32) => map2(a, b, o, |x, y| x.max(y)),
        (BinOp::Max, S32) => map2(a, b, o, |x, y| (x as i32).max(y as i32) as u32),
        (BinOp::Max, F32) => map2(a, b, o, |x, y| {
            pick(fmax_takes_first(fl(x).into(), fl(y).into()), x, y)
        }),
        (BinOp::And, B32) => map2(a, b, o, |x, y| x & y),
        (BinOp::Or, B32) => map2(a, b, o, |x, y| x | y),
        (BinOp::Xor, B32) => map2(a, b, o, |x, y| x ^ y),
        (BinOp::Shl, B32) => map2(a, b, o, |x, y| if y >= 32 { 0 } else { x << y }),
        (BinOp::Shr, B32 | U32) => map2(a, b, o, |x, y| if y >= 32 { 0 } else { x >> y }),
        (BinOp::Shr, S32) => map2(a, b, o, |x, y| ((x as i32) >> y.min(31)) as u32),
        _ => return false,
    }
    true
}

/// `mad` of a non-wide type on 32-bit lanes (`f32` fused, integers wrapping).
pub(crate) fn mad32(
    ty: Type,
    a: &[u32; WARP],
    b: &[u32; WARP],
    c: &[u32; WARP],
    o: &mut [u32; WARP],
) {
    if ty == Type::F32 {
        for l in 0..WARP {
            o[l] = fl(a[l]).mul_add(fl(b[l]), fl(c[l])).to_bits();
        }
    } else {
        for l in 0..WARP {
            o[l] = a[l].wrapping_mul(b[l]).wrapping_add(c[l]);
        }
    }
}

#[inline(always)]
fn bits(a: &[u32; WARP], b: &[u32; WARP], f: impl Fn(u32, u32) -> bool) -> u32 {
    let mut m = 0u32;
    for l in 0..WARP {
        m |= u32::from(f(a[l], b[l])) << l;
    }
    m
}

/// The lane bits of `setp.cmp.ty` for a 32-bit `ty` (see `is32`).
pub(crate) fn setp32(cmp: Cmp, ty: Type, a: &[u32; WARP], b: &[u32; WARP]) -> u32 {
    match ty {
        Type::F32 => setp_f32(cmp, a, b),
        Type::S32 => setp_int(cmp, a, b, |x| x ^ 0x8000_0000),
        _ => setp_int(cmp, a, b, |x| x),
    }
}

/// Integer comparisons on keys that order like the values (signed values are
/// mapped to unsigned keys by flipping the sign bit).
#[inline(always)]
fn setp_int(cmp: Cmp, a: &[u32; WARP], b: &[u32; WARP], key: impl Fn(u32) -> u32) -> u32 {
    match cmp {
        Cmp::Num => u32::MAX,
        Cmp::Nan => 0,
        Cmp::Eq | Cmp::Equ => bits(a, b, |x, y| x == y),
        Cmp::Ne | Cmp::Neu => bits(a, b, |x, y| x != y),
        Cmp::Lt | Cmp::Ltu => bits(a, b, |x, y| key(x) < key(y)),
        Cmp::Le | Cmp::Leu => bits(a, b, |x, y| key(x) <= key(y)),
        Cmp::Gt | Cmp::Gtu => bits(a, b, |x, y| key(x) > key(y)),
        Cmp::Ge | Cmp::Geu => bits(a, b, |x, y| key(x) >= key(y)),
    }
}

/// Float comparisons: ordered ones are false on NaN, the `u` forms true.
// `!(x >= y)` is exactly "less than or unordered": the negations are the point.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn setp_f32(cmp: Cmp, a: &[u32; WARP], b: &[u32; WARP]) -> u32 {
    match cmp {
        Cmp::Num => bits(a, b, |x, y| !fl(x).is_nan() && !fl(y).is_nan()),
        Cmp::Nan => bits(a, b, |x, y| fl(x).is_nan() || fl(y).is_nan()),
        Cmp::Eq => bits(a, b, |x, y| fl(x) == fl(y)),
        Cmp::Equ => bits(a, b, |x, y| {
            fl(x).partial_cmp(&fl(y)).is_none_or(|o| o.is_eq())
        }),
        Cmp::Ne => bits(a, b, |x, y| fl(x) < fl(y) || fl(x) > fl(y)),
        Cmp::Neu => bits(a, b, |x, y| fl(x) != fl(y)),
        Cmp::Lt => bits(a, b, |x, y| fl(x) < fl(y)),
        Cmp::Ltu => bits(a, b, |x, y| !(fl(x) >= fl(y))),
        Cmp::Le => bits(a, b, |x, y| fl(x) <= fl(y)),
        Cmp::Leu => bits(a, b, |x, y| !(fl(x) > fl(y))),
        Cmp::Gt => bits(a, b, |x, y| fl(x) > fl(y)),
        Cmp::Gtu => bits(a, b, |x, y| !(fl(x) <= fl(y))),
        Cmp::Ge => bits(a, b, |x, y| fl(x) >= fl(y)),
        Cmp::Geu => bits(a, b, |x, y| !(fl(x) < fl(y))),
    }
}

/// Whether `ty` is a 64-bit integer type (held as a register pair).
#[inline]
pub(crate) fn is64(ty: Type) -> bool {
    matches!(ty, Type::U64 | Type::S64 | Type::B64)
}

/// A wide register value as its low and high 32-bit halves, one array each.
pub(crate) struct Halves<'a> {
    pub lo: &'a [u32; WARP],
    pub hi: &'a [u32; WARP],
}

/// The 64-bit integer operations on register halves that kernels use for address
/// arithmetic: add and sub (with carry and borrow), bitwise ops, shifts (`b.lo` is
/// the shift amount); `false` when not handled here.
pub(crate) fn bin64(
    op: BinOp,
    ty: Type,
    a: Halves<'_>,
    b: Halves<'_>,
    lo: &mut [u32; WARP],
    hi: &mut [u32; WARP],
) -> bool {
    use Type::*;
    let join = |h: u32, l: u32| (u64::from(h) << 32) | u64::from(l);
    match (op, ty) {
        (BinOp::Add, U64 | S64) => {
            for l in 0..WARP {
                let s = a.lo[l].wrapping_add(b.lo[l]);
                lo[l] = s;
                hi[l] = a.hi[l]
                    .wrapping_add(b.hi[l])
                    .wrapping_add(u32::from(s < a.lo[l]));
            }
        }
        (BinOp::Sub, U64 | S64) => {
            for l in 0..WARP {
                lo[l] = a.lo[l].wrapping_sub(b.lo[l]);
                hi[l] = a.hi[l]
                    .wrapping_sub(b.hi[l])
                    .wrapping_sub(u32::from(a.lo[l] < b.lo[l]));
            }
        }
        (BinOp::And | BinOp::Or | BinOp::Xor, B64) => {
            let f = |x: u32, y: u32| match op {
                BinOp::And => x & y,
                BinOp::Or => x | y,
                _ => x ^ y,
            };
            map2(a.lo, b.lo, lo, f);
            map2(a.hi, b.hi, hi, f);
        }
        (BinOp::Shl, B64) | (BinOp::Shr, B64 | U64) => {
            let left = op == BinOp::Shl;
            for l in 0..WARP {
                let (x, n) = (join(a.hi[l], a.lo[l]), b.lo[l]);
                let r = match (n >= 64, left) {
                    (true, _) => 0,
                    (false, true) => x << n,
                    (false, false) => x >> n,
                };
                lo[l] = r as u32;
                hi[l] = (r >> 32) as u32;
            }
        }
        _ => return false,
    }
    true
}

/// Integer `cvt` between 32- and 64-bit integer types on halves: widening extends
/// by the source's signedness, narrowing keeps the low word (what the general
/// `cvt` computes for these pairs); `false` for other pairs.
pub(crate) fn cvt_int(
    dty: Type,
    sty: Type,
    a: &[u32; WARP],
    lo: &mut [u32; WARP],
    hi: &mut [u32; WARP],
) -> bool {
    let int32 = |t| matches!(t, Type::U32 | Type::S32 | Type::B32);
    if int32(sty) && is64(dty) {
        *lo = *a;
        if sty == Type::S32 {
            for l in 0..WARP {
                hi[l] = ((a[l] as i32) >> 31) as u32;
            }
        } else {
            *hi = [0; WARP];
        }
        true
    } else if (int32(sty) || is64(sty)) && int32(dty) {
        *lo = *a;
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 32-bit comparisons agree with the general `compare` on edge values.
    #[test]
    fn setp32_matches_general_compare() {
        let vals: [u32; 8] = [
            0,
            1,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_ffff,
            1.5f32.to_bits(),
            f32::NAN.to_bits(),
            (-0.0f32).to_bits(),
        ];
        let cmps = [
            Cmp::Eq,
            Cmp::Ne,
            Cmp::Lt,
            Cmp::Le,
            Cmp::Gt,
            Cmp::Ge,
            Cmp::Equ,
            Cmp::Neu,
            Cmp::Ltu,
            Cmp::Leu,
            Cmp::Gtu,
            Cmp::Geu,
            Cmp::Num,
            Cmp::Nan,
        ];
        let mut a = [0u32; WARP];
        let mut b = [0u32; WARP];
        for l in 0..WARP {
            a[l] = vals[l % 8];
            b[l] = vals[(l / 8 + l) % 8];
        }
        for ty in [Type::U32, Type::S32, Type::B32, Type::F32] {
            for cmp in cmps {
                let got = setp32(cmp, ty, &a, &b);
                for l in 0..WARP {
                    let want =
                        super::super::exec::compare(cmp, ty, u64::from(a[l]), u64::from(b[l]));
                    assert_eq!(got >> l & 1 == 1, want, "{cmp:?} {ty:?} lane {l}");
                }
            }
        }
    }

    /// Float arithmetic with a NaN operand gives the first NaN operand, quieted, on the
    /// 32-bit path and the general one, in either operand order.
    #[test]
    fn float_arithmetic_gives_the_first_nan_quieted() {
        let (q, s) = (0x7fc0_0011u32, 0xff80_0022u32);
        let one = 1.0f32.to_bits();
        // (a, b, result)
        let cases = [
            (q, s, q),
            (s, q, 0xffc0_0022),
            (one, s, 0xffc0_0022),
            (q, one, q),
        ];
        for op in [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div] {
            let mut a = [0u32; WARP];
            let mut b = [0u32; WARP];
            for l in 0..WARP {
                (a[l], b[l]) = (cases[l % 4].0, cases[l % 4].1);
            }
            let mut o = [0u32; WARP];
            assert!(bin32(op, Type::F32, &a, &b, &mut o));
            let wide = |x: &[u32; WARP]| x.map(u64::from);
            let mut o64 = [0u64; WARP];
            super::super::exec::bin(op, Type::F32, &wide(&a), &wide(&b), &mut o64).unwrap();
            for l in 0..WARP {
                assert_eq!(o[l], cases[l % 4].2, "{op:?} lane {l}");
                assert_eq!(
                    o64[l],
                    u64::from(cases[l % 4].2),
                    "{op:?} lane {l}, general"
                );
            }
        }
    }

    /// `min.f`/`max.f`: `-0.0` below `+0.0` in either operand order, a NaN operand
    /// gives the other one and two NaNs the second; the same on both paths and for f64.
    #[test]
    fn float_min_max_order_zeros_and_ignore_nans() {
        let (p0, n0) = (0.0f32.to_bits(), (-0.0f32).to_bits());
        let (q1, q2) = (0x7fc0_0011u32, 0xff80_0022u32);
        let one = 1.0f32.to_bits();
        // (a, b, min, max)
        let cases = [
            (p0, n0, n0, p0),
            (n0, p0, n0, p0),
            (q1, one, one, one),
            (one, q1, one, one),
            (q1, q2, q2, q2),
            (q2, q1, q1, q1),
            (n0, one, n0, one),
        ];
        let mut a = [0u32; WARP];
        let mut b = [0u32; WARP];
        for (l, c) in cases.iter().enumerate() {
            a[l] = c.0;
            b[l] = c.1;
        }
        let widen = |x: u32| f64::from(f32::from_bits(x)).to_bits();
        let f64_bits = |x: u32| {
            // The f64 NaN with the same payload bits as an f32 NaN.
            if f32::from_bits(x).is_nan() {
                (u64::from(x >> 31) << 63) | 0x7ff8_0000_0000_0000 | u64::from(x & 0xff)
            } else {
                widen(x)
            }
        };
        for (op, pick) in [(BinOp::Min, 2), (BinOp::Max, 3)] {
            let mut o = [0u32; WARP];
            assert!(bin32(op, Type::F32, &a, &b, &mut o));
            let mut wo = [0u64; WARP];
            let (wa, wb) = (a.map(u64::from), b.map(u64::from));
            super::super::exec::bin(op, Type::F32, &wa, &wb, &mut wo).unwrap();
            let (da, db) = (a.map(f64_bits), b.map(f64_bits));
            let mut d = [0u64; WARP];
            super::super::exec::bin(op, Type::F64, &da, &db, &mut d).unwrap();
            for (l, c) in cases.iter().enumerate() {
                let want = [c.0, c.1, c.2, c.3][pick];
                assert_eq!(o[l], want, "{op:?} case {l}");
                assert_eq!(wo[l], u64::from(want), "{op:?} case {l}, general path");
                assert_eq!(d[l], f64_bits(want), "{op:?} f64 case {l}");
            }
        }
    }

    /// Every 32-bit binary operation agrees with the general `u64` path.
    #[test]
    fn bin32_matches_general_bin() {
        let vals: [u32; 8] = [0, 1, 31, 33, 0x8000_0000, 0xffff_fff0, 2.5f32.to_bits(), 7];
        let mut a = [0u32; WARP];
        let mut b = [0u32; WARP];
        for l in 0..WARP {
            a[l] = vals[l % 8].wrapping_add(l as u32 / 8);
            b[l] = vals[(l / 8 + 3 * l) % 8];
        }
        let (wa, wb) = (a.map(u64::from), b.map(u64::from));
        for ty in [Type::U32, Type::S32, Type::B32, Type::F32] {
            for op in BinOp::ALL {
                let mut o = [0u32; WARP];
                let mut w = [0u64; WARP];
                let general = super::super::exec::bin(op, ty, &wa, &wb, &mut w).is_ok();
                if bin32(op, ty, &a, &b, &mut o) {
                    assert!(general, "{op:?} {ty:?} is undefined in the general path");
                    for l in 0..WARP {
                        assert_eq!(
                            u64::from(o[l]),
                            w[l] & 0xffff_ffff,
                            "{op:?} {ty:?} lane {l}"
                        );
                    }
                }
            }
        }
    }

    fn wide_vals() -> [u64; WARP] {
        let v: [u64; 8] = [
            0,
            1,
            63,
            64,
            0xffff_ffff,
            0x1_0000_0000,
            u64::MAX,
            0x8000_0000_0000_0001,
        ];
        std::array::from_fn(|l| v[l % 8].wrapping_add((l / 8) as u64 * 0x7fff_ffff))
    }

    /// The split 64-bit operations agree with the general `u64` path.
    #[test]
    fn bin64_matches_general_bin() {
        let wa = wide_vals();
        let wb: [u64; WARP] = std::array::from_fn(|l| wa[(l * 5 + 3) % WARP]);
        let split = |w: &[u64; WARP]| (w.map(|x| x as u32), w.map(|x| (x >> 32) as u32));
        let ((alo, ahi), (blo, bhi)) = (split(&wa), split(&wb));
        for ty in [Type::U64, Type::S64, Type::B64] {
            for op in BinOp::ALL {
                let (mut lo, mut hi) = ([0u32; WARP], [0u32; WARP]);
                let a = Halves { lo: &alo, hi: &ahi };
                let b = Halves { lo: &blo, hi: &bhi };
                if !bin64(op, ty, a, b, &mut lo, &mut hi) {
                    continue;
                }
                // Shifts read their amount as a 32-bit value.
                let wb2 = if op.is_shift() {
                    blo.map(u64::from)
                } else {
                    wb
                };
                let mut w = [0u64; WARP];
                assert!(super::super::exec::bin(op, ty, &wa, &wb2, &mut w).is_ok());
                for l in 0..WARP {
                    let got = u64::from(lo[l]) | u64::from(hi[l]) << 32;
                    assert_eq!(got, w[l], "{op:?} {ty:?} lane {l}");
                }
            }
        }
    }

    /// Integer conversions between 32- and 64-bit types agree with the general `cvt`.
    #[test]
    fn cvt_int_matches_general_cvt() {
        let wa = wide_vals();
        let a = wa.map(|x| x as u32);
        let tys = [
            Type::U32,
            Type::S32,
            Type::B32,
            Type::U64,
            Type::S64,
            Type::B64,
        ];
        for sty in tys {
            for dty in tys {
                let (mut lo, mut hi) = ([0u32; WARP], [0u32; WARP]);
                if !cvt_int(dty, sty, &a, &mut lo, &mut hi) {
                    continue;
                }
                for l in 0..WARP {
                    let src = if sty.is_wide() {
                        wa[l]
                    } else {
                        u64::from(a[l])
                    };
                    let want = super::super::exec::cvt(dty, sty, None, src);
                    let got = if dty.is_wide() {
                        u64::from(lo[l]) | u64::from(hi[l]) << 32
                    } else {
                        u64::from(lo[l])
                    };
                    assert_eq!(got, want, "cvt.{dty:?}.{sty:?} lane {l}");
                }
            }
        }
    }

    /// Coalesced and permuted (reversed) word loads and stores give the same data.
    #[test]
    fn reversed_and_linear_word_accesses() {
        use crate::gpu::*;
        let text = r"
.entry rev(.param .u64 inp, .param .u64 out)
{
    .reg 8;
    mov.u32 %r0, %tid.x;
    xor.b32 %r1, %r0, 31;
    cvt.u64.u32 %rd2, %r1;
    shl.b64 %rd2, %rd2, 2;
    ld.param.u64 %rd4, [inp];
    add.u64 %rd4, %rd4, %rd2;
    ld.global.u32 %r6, [%rd4];
    cvt.u64.u32 %rd2, %r0;
    shl.b64 %rd2, %rd2, 2;
    ld.param.u64 %rd4, [inp];
    add.u64 %rd4, %rd4, %rd2;
    ld.global.u32 %r7, [%rd4];
    add.u32 %r6, %r6, %r7;
    ld.param.u64 %rd4, [out];
    add.u64 %rd4, %rd4, %rd2;
    st.global.u32 [%rd4], %r6;
    xor.b32 %r1, %r0, 31;
    cvt.u64.u32 %rd2, %r1;
    shl.b64 %rd2, %rd2, 2;
    ld.param.u64 %rd4, [out];
    add.u64 %rd4, %rd4, %rd2;
    add.u64 %rd4, %rd4, 128;
    st.global.u32 [%rd4], %r0;
    exit;
}
";
        let p = parse(text).expect("assembles");
        let mut mem = GlobalMemory::new();
        let inp: Vec<u8> = (0..32u32).flat_map(|i| (i * 1000).to_le_bytes()).collect();
        let a = mem.add_buffer(inp, "in");
        let b = mem.add_zeroed(256, "out");
        let k = p.kernel("rev").expect("kernel");
        let l = Launch {
            kernel: "rev".into(),
            grid: (1, 1, 1),
            block: (32, 1, 1),
            params: pack_params(k, &[a, b]),
        };
        run_functional(&p, &l, &mut mem, Limits::default()).expect("runs");
        let out = mem.buffer(b).expect("out");
        for t in 0..32u32 {
            let w = |i: u32| {
                let i = i as usize * 4;
                u32::from_le_bytes([out[i], out[i + 1], out[i + 2], out[i + 3]])
            };
            assert_eq!(w(t), (31 - t) * 1000 + t * 1000, "sum at {t}");
            assert_eq!(w(32 + (31 - t)), t, "reversed store at {t}");
        }
    }
}
