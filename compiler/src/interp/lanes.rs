//! Cross-lane operations on whole gang vectors (see [`LaneOp`] for the operands).
//!
//! Operands arrive as `n`-lane arrays (uniform operands already broadcast); masks as
//! bit sets already limited to the gang's existing lanes. Lane indices and offsets are
//! `i32`, read signed. Choices the IR docs leave open:
//!
//! * `extract`/`insert` with a lane outside `0..n` are runtime errors.
//! * `shuffle` and `rotate` take indices modulo `n`, `shuffle2` modulo `2n` (Euclidean,
//!   so `-1` is the last lane).
//! * Reductions and scans combine the active lanes with the type's own arithmetic. The
//!   order only shows in float sums, which follow the log-step orders every target
//!   implements with its shuffles (ISPC's, for `reduce_add`) ([`float_reduce_add`], [`float_scan_add`]; the
//!   definition is in `lang-spec/ir.md`); every other combination is exact and
//!   order-free, so it is folded in lane order. `reduce_min` and `reduce_max` compare
//!   integers as signed (the IR has no unsigned variants) and floats as `fmin`/`fmax`
//!   do (a NaN lane is ignored).
//! * `reduce_equal` compares floats with `==` (so `-0 == +0` and a NaN lane is unequal).
//! * `all m` asks whether every *existing* lane is on (lanes past the end of the block
//!   do not count against it).

use super::ops::{self, sext, width_mask, BinFn};
use crate::ir::{float_sum_distances, BinaryOp, LaneOp, Scalar};

/// The bit set of lanes on in a mask operand (one 0/1 per lane), limited to `exists`.
#[inline]
pub fn mask_bits(lanes: &[u64], exists: u64) -> u64 {
    let mut bits = 0;
    for (i, &x) in lanes.iter().enumerate() {
        bits |= (x & 1) << i;
    }
    bits & exists
}

/// How a reduction or scan combines lanes, and its identity (the result with no lane
/// on, and what an off lane contributes to a scan).
pub fn combiner(op: LaneOp, s: Scalar) -> Option<(BinFn, u64)> {
    let w = s.bits();
    let (bin, identity) = match op {
        LaneOp::ReduceAdd | LaneOp::ScanAdd if s != Scalar::Bool => (BinaryOp::Iadd, 0),
        LaneOp::ReduceMin if s.is_float() => (BinaryOp::Fmin, float_bits(s, f64::INFINITY)),
        LaneOp::ReduceMax if s.is_float() => (BinaryOp::Fmax, float_bits(s, f64::NEG_INFINITY)),
        LaneOp::ReduceMin if s.is_int() => (BinaryOp::Smin, width_mask(w) >> 1),
        LaneOp::ReduceMax if s.is_int() => (BinaryOp::Smax, 1 << (w - 1)),
        LaneOp::ReduceAnd | LaneOp::ScanAnd if !s.is_float() => (BinaryOp::Band, width_mask(w)),
        LaneOp::ReduceOr | LaneOp::ScanOr if !s.is_float() => (BinaryOp::Bor, 0),
        _ => return None,
    };
    let bin = match (bin, s.is_float()) {
        (BinaryOp::Iadd, true) => BinaryOp::Fadd,
        (b, _) => b,
    };
    Some((ops::binary(bin, s)?, identity))
}

fn float_bits(s: Scalar, v: f64) -> u64 {
    if s == Scalar::F32 {
        u64::from((v as f32).to_bits())
    } else {
        v.to_bits()
    }
}

/// A lane index or offset operand (`i32`).
fn index(x: u64) -> i64 {
    sext(x, 32)
}

/// Computes `op` over `args` (each `n` lanes). A varying result fills `out[..n]`, a
/// uniform one `out[0]`. `exists` is the gang's set of existing lanes; `comb` comes
/// from [`combiner`] for reductions and scans.
pub fn lane_op(
    op: LaneOp,
    s: Scalar,
    args: [&[u64]; 3],
    n: usize,
    exists: u64,
    comb: Option<(BinFn, u64)>,
    out: &mut [u64],
) -> Result<(), String> {
    let [a, b, c] = args;
    let lane_arg = |x: u64| -> Result<usize, String> {
        let i = index(x);
        usize::try_from(i)
            .ok()
            .filter(|&i| i < n)
            .ok_or_else(|| format!("lane index {i} outside the gang (0..{n})"))
    };
    match op {
        LaneOp::Extract => out[0] = a[lane_arg(b[0])?],
        LaneOp::Insert => {
            out[..n].copy_from_slice(&a[..n]);
            out[lane_arg(b[0])?] = c[0];
        }
        LaneOp::Shuffle => {
            for i in 0..n {
                out[i] = a[index(b[i]).rem_euclid(n as i64) as usize];
            }
        }
        LaneOp::Shuffle2 => {
            for i in 0..n {
                let k = index(c[i]).rem_euclid(2 * n as i64) as usize;
                out[i] = if k < n { a[k] } else { b[k - n] };
            }
        }
        LaneOp::Rotate => {
            let k = index(b[0]);
            for (i, o) in out[..n].iter_mut().enumerate() {
                *o = a[(i as i64 + k).rem_euclid(n as i64) as usize];
            }
        }
        LaneOp::Shift => {
            let k = index(b[0]);
            for (i, o) in out[..n].iter_mut().enumerate() {
                let j = i as i64 + k;
                *o = if (0..n as i64).contains(&j) {
                    a[j as usize]
                } else {
                    0
                };
            }
        }
        LaneOp::ReduceAdd if s.is_float() => {
            let (f, _) = comb.ok_or("reduction without a combiner")?;
            out[0] = float_reduce_add(f, s, &a[..n], mask_bits(&b[..n], exists));
        }
        LaneOp::ReduceAdd
        | LaneOp::ReduceMin
        | LaneOp::ReduceMax
        | LaneOp::ReduceAnd
        | LaneOp::ReduceOr => {
            let (f, id) = comb.ok_or("reduction without a combiner")?;
            let m = mask_bits(&b[..n], exists);
            out[0] = (0..n)
                .filter(|i| m >> i & 1 != 0)
                .fold(id, |acc, i| f(acc, a[i]));
        }
        LaneOp::ScanAdd if s.is_float() => {
            let (f, _) = comb.ok_or("scan without a combiner")?;
            float_scan_add(f, s, &a[..n], mask_bits(&b[..n], exists), &mut out[..n]);
        }
        LaneOp::ScanAdd | LaneOp::ScanAnd | LaneOp::ScanOr => {
            let (f, id) = comb.ok_or("scan without a combiner")?;
            let m = mask_bits(&b[..n], exists);
            let mut acc = id;
            for i in 0..n {
                out[i] = acc;
                if m >> i & 1 != 0 {
                    acc = f(acc, a[i]);
                }
            }
        }
        LaneOp::ReduceEqual => {
            let m = mask_bits(&b[..n], exists);
            let eq = ops::fcmp(crate::ir::FloatCC::Eq, s).unwrap_or(|x, y| u64::from(x == y));
            let mut lanes = (0..n).filter(|i| m >> i & 1 != 0);
            out[0] = u64::from(match lanes.next() {
                None => true,
                Some(first) => lanes.all(|i| eq(a[first], a[i]) != 0),
            });
        }
        LaneOp::Any => out[0] = u64::from(mask_bits(&a[..n], exists) != 0),
        LaneOp::All => out[0] = u64::from(mask_bits(&a[..n], exists) == exists),
        LaneOp::Ballot => out[0] = mask_bits(&a[..n], exists),
        LaneOp::FirstLane => {
            let m = mask_bits(&a[..n], exists);
            out[0] = if m == 0 {
                u64::from(u32::MAX)
            } else {
                u64::from(m.trailing_zeros())
            };
        }
    }
    Ok(())
}

/// The bits of `-0.0` in float type `s`.
fn negative_zero(s: Scalar) -> u64 {
    if s == Scalar::F32 {
        1 << 31
    } else {
        1 << 63
    }
}

/// `reduce_add` of floats over the lanes of `a` on in `m`: the butterfly of
/// [`float_sum_distances`] (ISPC's order). With `P` the gang width rounded up to a
/// power of two, lane `i` starts as its value if on and `+0.0` otherwise (lanes past
/// the gang are off, as ISPC zeroes the lanes off in the mask); for each distance `d`,
/// lane `i` with bit `d` clear becomes `x[i] + x[i + d]`; the result is `x[0]`.
pub fn float_reduce_add(f: BinFn, s: Scalar, a: &[u64], m: u64) -> u64 {
    let n = a.len();
    let p = n.next_power_of_two();
    let mut x = [0u64; 64];
    for (i, slot) in x[..p].iter_mut().enumerate() {
        *slot = if i < n && m >> i & 1 != 0 { a[i] } else { 0 };
    }
    for d in float_sum_distances(p as u32, s == Scalar::F64) {
        let d = d as usize;
        for i in (0..p).filter(|i| i & d == 0) {
            x[i] = f(x[i], x[i + d]);
        }
    }
    x[0]
}

/// `scan_add` of floats (exclusive) over the lanes of `a` on in `m`, into `out`: the
/// log-step (Kogge-Stone) scan of the lanes shifted up by one. Lane 0 starts as `+0.0`
/// and lane `i > 0` as lane `i - 1`'s value if that lane is on, `-0.0` otherwise; for
/// `d = 1, 2, 4, ..` below the gang width, every lane `i >= d` at once becomes
/// `y[i - d] + y[i]` (the lower lanes' partial sum on the left).
pub fn float_scan_add(f: BinFn, s: Scalar, a: &[u64], m: u64, out: &mut [u64]) {
    let n = a.len();
    for i in 0..n {
        out[i] = match i {
            0 => 0,
            _ if m >> (i - 1) & 1 != 0 => a[i - 1],
            _ => negative_zero(s),
        };
    }
    let mut d = 1;
    while d < n {
        for i in (d..n).rev() {
            out[i] = f(out[i - d], out[i]);
        }
        d *= 2;
    }
}

/// How many operands `op` takes.
pub fn arity(op: LaneOp) -> usize {
    match op {
        LaneOp::Any | LaneOp::All | LaneOp::Ballot | LaneOp::FirstLane => 1,
        LaneOp::Insert | LaneOp::Shuffle2 => 3,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 4;
    const ALL: u64 = 0b1111;

    fn run(op: LaneOp, s: Scalar, a: [u64; N], b: [u64; N], c: [u64; N]) -> [u64; N] {
        let mut out = [0; N];
        lane_op(op, s, [&a, &b, &c], N, ALL, combiner(op, s), &mut out).unwrap();
        out
    }

    fn i32s(v: [i32; N]) -> [u64; N] {
        v.map(|x| x as u32 as u64)
    }

    #[test]
    fn permutations() {
        let v = [10, 11, 12, 13];
        let z = [0; N];
        assert_eq!(
            run(LaneOp::Rotate, Scalar::I32, v, i32s([1; N]), z),
            [11, 12, 13, 10]
        );
        assert_eq!(
            run(LaneOp::Rotate, Scalar::I32, v, i32s([-1; N]), z),
            [13, 10, 11, 12]
        );
        assert_eq!(
            run(LaneOp::Shift, Scalar::I32, v, i32s([-1; N]), z),
            [0, 10, 11, 12]
        );
        assert_eq!(
            run(LaneOp::Shift, Scalar::I32, v, i32s([2; N]), z),
            [12, 13, 0, 0]
        );
        assert_eq!(
            run(LaneOp::Shuffle, Scalar::I32, v, i32s([3, 0, 5, -1]), z),
            [13, 10, 11, 13]
        );
        let w = [20, 21, 22, 23];
        assert_eq!(
            run(LaneOp::Shuffle2, Scalar::I32, v, w, i32s([7, 0, 4, 9])),
            [23, 10, 20, 11]
        );
        assert_eq!(run(LaneOp::Extract, Scalar::I32, v, [2; N], z)[0], 12);
        assert_eq!(
            run(LaneOp::Insert, Scalar::I32, v, [1; N], [99; N]),
            [10, 99, 12, 13]
        );
        let mut out = [0; N];
        let err = lane_op(
            LaneOp::Extract,
            Scalar::I32,
            [&v, &[4; N], &z],
            N,
            ALL,
            None,
            &mut out,
        );
        assert!(err.unwrap_err().contains("lane index 4"));
    }

    #[test]
    fn reductions_and_scans_over_partial_masks() {
        let v = i32s([5, -3, 7, 2]);
        let m = [1, 1, 0, 1];
        let z = [0; N];
        assert_eq!(run(LaneOp::ReduceAdd, Scalar::I32, v, m, z)[0], 4);
        assert_eq!(
            run(LaneOp::ReduceMin, Scalar::I32, v, m, z)[0],
            (-3i32) as u32 as u64
        );
        assert_eq!(run(LaneOp::ReduceMax, Scalar::I32, v, m, z)[0], 5);
        assert_eq!(
            run(LaneOp::ReduceMin, Scalar::I32, v, [0; N], z)[0],
            0x7fff_ffff
        );
        assert_eq!(
            run(LaneOp::ReduceMax, Scalar::I32, v, [0; N], z)[0],
            0x8000_0000
        );
        assert_eq!(
            run(LaneOp::ReduceAnd, Scalar::I32, [6, 3, 0, 7], m, z)[0],
            2
        );
        assert_eq!(
            run(LaneOp::ReduceOr, Scalar::I32, [1, 2, 4, 8], m, z)[0],
            11
        );
        assert_eq!(
            run(LaneOp::ScanAdd, Scalar::I32, v, m, z),
            i32s([0, 5, 2, 2]),
            "exclusive; the off lane adds nothing"
        );
        assert_eq!(
            run(LaneOp::ScanAnd, Scalar::I32, [6, 3, 0, 7], m, z),
            [0xffff_ffff, 6, 2, 2]
        );
        assert_eq!(
            run(LaneOp::ScanOr, Scalar::I32, [1, 2, 4, 8], m, z),
            [0, 1, 3, 3]
        );
        assert_eq!(
            run(LaneOp::ReduceEqual, Scalar::I32, [4, 4, 9, 4], m, z)[0],
            1
        );
        assert_eq!(
            run(LaneOp::ReduceEqual, Scalar::I32, [4, 5, 9, 4], m, z)[0],
            0
        );
        let f = |x: f32| u64::from(x.to_bits());
        let fv = [f(1.5), f(f32::NAN), f(-2.0), f(8.0)];
        assert_eq!(
            run(LaneOp::ReduceMin, Scalar::F32, fv, [1; N], z)[0],
            f(-2.0)
        );
        assert_eq!(
            run(LaneOp::ReduceMax, Scalar::F32, fv, [1, 1, 1, 0], z)[0],
            f(1.5)
        );
        assert_eq!(
            run(
                LaneOp::ReduceAdd,
                Scalar::F32,
                [f(1e8), f(1.0), f(-1e8), f(1.0)],
                [1; N],
                z
            )[0],
            f(0.0),
            "ISPC's order at 4 lanes: (1e8 + 1) + (-1e8 + 1), rounding in f32 at each \
             node (halving would give 2, lane order 1)"
        );
    }

    /// `reduce_add` of `v` (f32) under mask `m` on a gang of `v.len()` lanes.
    fn fsum(v: &[f32], m: u64) -> u32 {
        let a: Vec<u64> = v.iter().map(|x| u64::from(x.to_bits())).collect();
        let (f, _) = combiner(LaneOp::ReduceAdd, Scalar::F32).unwrap();
        float_reduce_add(f, Scalar::F32, &a, m) as u32
    }

    /// The exclusive `scan_add` of `v` (f32) under mask `m`.
    fn fscan(v: &[f32], m: u64) -> Vec<u32> {
        let a: Vec<u64> = v.iter().map(|x| u64::from(x.to_bits())).collect();
        let (f, _) = combiner(LaneOp::ScanAdd, Scalar::F32).unwrap();
        let mut out = vec![0; v.len()];
        float_scan_add(f, Scalar::F32, &a, m, &mut out);
        out.into_iter().map(|x| x as u32).collect()
    }

    #[test]
    fn float_sums_follow_the_documented_trees() {
        let b = |x: f32| x.to_bits();
        // Eight lanes, ISPC's avx512skx-x8 order (distances 1, 2, 4):
        // ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)).
        let v = [1e8, -1e8, 5.0, 7.0, 1.0, 1.0, 3.0, 1.0];
        let want = ((1e8f32 + -1e8) + (5.0f32 + 7.0)) + ((1.0f32 + 1.0) + (3.0f32 + 1.0));
        assert_eq!(fsum(&v, 0xff), b(want));
        // An off lane is +0.0, as ISPC zeroes it: lane 1 off leaves 1e8 unmatched (and
        // the rest absorbed by rounding at 1e8).
        let want = ((1e8f32 + 0.0) + (5.0f32 + 7.0)) + ((1.0f32 + 1.0) + (3.0f32 + 1.0));
        assert_eq!(fsum(&v, 0xfd), b(want));
        // Six lanes (not a power of two): lanes 6 and 7 of the tree are +0.0.
        let want = ((1e8f32 + -1e8) + (5.0f32 + 7.0)) + ((1.0f32 + 1.0) + (0.0f32 + 0.0));
        assert_eq!(fsum(&v[..6], 0x3f), b(want));
        // Sixteen lanes (distances 1, 2, 8, 4), checked against ISPC 1.30 on
        // avx512skx-x16: ((x0+x1)+(x2+x3)) + ((x8+x9)+(x10+x11)) then the same from 4
        // and 12. 1e8 in lane 0 absorbs lanes 1-3 before -1e8 (lane 8, which absorbs
        // 9-11) cancels it: 7.25, where halving (lane i with i + 8 first) gives 14.25.
        let mut v16 = [1.0f32; 16];
        (v16[0], v16[8], v16[4]) = (1e8, -1e8, 0.25);
        let q = |i: usize| (v16[i] + v16[i + 1]) + (v16[i + 2] + v16[i + 3]);
        let want = (q(0) + q(8)) + (q(4) + q(12));
        assert_eq!(fsum(&v16, 0xffff), b(want));
        assert_eq!(want, 7.25);
        // Signed zeros: -0.0 in every lane of the gang stays -0.0 (no lane is off);
        // any off lane, or no lane at all, makes a zero sum +0.0.
        assert_eq!(fsum(&[-0.0; 4], 0xf), b(-0.0));
        assert_eq!(fsum(&[-0.0; 4], 0x7), b(0.0));
        assert_eq!(fsum(&[-0.0; 4], 0x0), b(0.0));
        assert_eq!(fsum(&[-2.5, 9.0, 3.0, 4.0], 0x1), b(-2.5));
        // A signalling NaN meets an addition, which quiets it.
        let snan = f32::from_bits(0x7f80_0001);
        assert_eq!(fsum(&[snan, 1.0], 0x1), 0x7fc0_0001);
        // Two NaNs: the left operand of the node joining them wins (the first NaN
        // operand, quieted): lanes 1 and 3 meet at the root, lanes 0 and 1 first.
        let (n1, n2) = (f32::from_bits(0x7fc0_0011), f32::from_bits(0xffc0_0022));
        assert_eq!(fsum(&[1.0, n1, 2.0, n2], 0xf), 0x7fc0_0011);
        assert_eq!(fsum(&[n2, n1, 2.0, 1.0], 0xf), 0xffc0_0022);
    }

    #[test]
    fn float_sum_distances_are_ispcs() {
        let d = |lanes, double| float_sum_distances(lanes, double).to_vec();
        assert_eq!(d(1, false), Vec::<u32>::new());
        assert_eq!(d(2, true), [1]);
        assert_eq!(d(4, false), [1, 2]);
        assert_eq!(d(8, false), [1, 2, 4]);
        assert_eq!(d(8, true), [4, 1, 2]);
        assert_eq!(d(16, false), [1, 2, 8, 4]);
        assert_eq!(d(16, true), [4, 1, 8, 2]);
        assert_eq!(d(32, false), [16, 8, 4, 2, 1]);
        assert_eq!(d(64, true), [32, 16, 8, 4, 2, 1]);
        // Every order is a butterfly over each bit of the lane index once.
        for lanes in [2u32, 4, 8, 16, 32, 64] {
            for double in [false, true] {
                let mut bits = d(lanes, double);
                bits.sort();
                let all: Vec<u32> = (0..lanes.trailing_zeros()).map(|k| 1 << k).collect();
                assert_eq!(bits, all, "{lanes} {double}");
            }
        }
    }

    /// `reduce_add` of `v` (f64) on a whole gang.
    fn dsum(v: &[f64]) -> u64 {
        let a: Vec<u64> = v.iter().map(|x| x.to_bits()).collect();
        let (f, _) = combiner(LaneOp::ReduceAdd, Scalar::F64).unwrap();
        float_reduce_add(f, Scalar::F64, &a, u64::MAX >> (64 - v.len()))
    }

    #[test]
    fn double_sums_take_ispcs_double_order() {
        // Eight lanes (distances 4, 1, 2): ((x0 + x4) + (x1 + x5)) + ((x2 + x6) + (x3 + x7)).
        let v = [1e17, 3.0, 5.0, 7.0, -1e17, 1.0, 1.0, 1.0];
        let want = ((1e17f64 + -1e17) + (3.0f64 + 1.0)) + ((5.0f64 + 1.0) + (7.0f64 + 1.0));
        assert_eq!(dsum(&v), want.to_bits());
        assert_eq!(want, 18.0);
        // Sixteen (4, 1, 8, 2): ((x0+x4)+(x1+x5)) + ((x8+x12)+(x9+x13)), then from 2 and 10.
        let mut v16 = [1.0f64; 16];
        (v16[0], v16[12]) = (1e17, -1e17);
        let h = |i: usize| (v16[i] + v16[i + 4]) + (v16[i + 1] + v16[i + 5]);
        let want = (h(0) + h(8)) + (h(2) + h(10));
        assert_eq!(dsum(&v16), want.to_bits());
    }

    #[test]
    fn float_scans_follow_the_documented_trees() {
        let b = |x: f32| x.to_bits();
        let v = [1e8, 3.0, -1e8, 7.0, 1.0];
        // y = [+0, 1e8, 3, -1e8, 7]; d = 1: y[i] = y[i-1] + y[i]; d = 2; d = 4.
        let y1 = [0.0f32, 1e8, 1e8 + 3.0, 3.0 + -1e8, -1e8 + 7.0];
        let y2 = [y1[0], y1[1], y1[0] + y1[2], y1[1] + y1[3], y1[2] + y1[4]];
        let y4 = [y2[0], y2[1], y2[2], y2[3], y2[0] + y2[4]];
        assert_eq!(fscan(&v, 0x1f), y4.map(b));
        // Lane 0's +0.0 is in every lane's sum, so -0.0 lanes give +0.0 everywhere.
        assert_eq!(fscan(&[-0.0; 4], 0xf), [b(0.0); 4]);
        // Off lanes add -0.0: lane 1 off.
        assert_eq!(
            fscan(&[2.0, 1e30, 4.0, 8.0], 0b1101),
            [b(0.0), b(2.0), b(2.0), b(6.0)]
        );
    }

    #[test]
    fn mask_queries() {
        let z = [0; N];
        let m = [0, 1, 0, 1];
        assert_eq!(run(LaneOp::Any, Scalar::Bool, m, z, z)[0], 1);
        assert_eq!(run(LaneOp::Any, Scalar::Bool, z, z, z)[0], 0);
        assert_eq!(run(LaneOp::All, Scalar::Bool, m, z, z)[0], 0);
        assert_eq!(run(LaneOp::All, Scalar::Bool, [1; N], z, z)[0], 1);
        assert_eq!(run(LaneOp::Ballot, Scalar::Bool, m, z, z)[0], 0b1010);
        assert_eq!(run(LaneOp::FirstLane, Scalar::Bool, m, z, z)[0], 1);
        assert_eq!(
            run(LaneOp::FirstLane, Scalar::Bool, z, z, z)[0],
            0xffff_ffff
        );
        // Only lanes 0 and 1 exist: `all` ignores the others, `ballot` never shows them.
        let mut out = [0; N];
        lane_op(
            LaneOp::All,
            Scalar::Bool,
            [&[1, 1, 0, 0], &z, &z],
            N,
            0b11,
            None,
            &mut out,
        )
        .unwrap();
        assert_eq!(out[0], 1);
        lane_op(
            LaneOp::Ballot,
            Scalar::Bool,
            [&[1; N], &z, &z],
            N,
            0b11,
            None,
            &mut out,
        )
        .unwrap();
        assert_eq!(out[0], 0b11);
    }
}
