//! The Predicate Expansion Unit (paper §4.3): turns a predicate tuple
//! `lhs CMP rhs` into each non-affine warp's predicate mask.
//!
//! Three paths, cheapest first:
//! * **Uniform**: both operands are the same in every thread of the CTA (64% of the
//!   paper's decoupled predicates): one compare decides the whole CTA.
//! * **Fast** (with the uniform case, 93% in the paper): one operand is CTA-uniform
//!   (the bound `b`), the other's values across the warp's lanes are monotone, and
//!   its first and last lanes agree; 2 compares give the whole warp's mask.
//! * **Slow**: the remaining warps compare all lanes on the SIMT lanes.
//!
//! Why the fast path is exact. Let `v_0 … v_{n-1}` be the lanes' exact values (lane
//! order) and `b` the bound. The PEU uses the fast path only when
//! 1. the sequence is monotone: every lane-to-lane increment that occurs in the warp
//!    (the x offset within a row, and the row or plane adjustments where `tid.x`
//!    wraps, [`Steps`]) has the same sign. In a 1-D block, or a 2-D block whose
//!    rows hold whole warps, only the x offset occurs, so this always holds; with
//!    `blockDim.x` < 32 the row adjustment `stride.y − stride.x·(blockDim.x − 1)`
//!    may have the other sign (e.g. the value `tid.x`), and then it does not;
//! 2. `v_0` and `v_{n-1}` fit the compared type, so by monotonicity every `v_i`
//!    lies between them and fits too: no lane wraps modulo 2^32 or 2^64, and the
//!    register values are the exact values;
//! 3. the two end compares agree: for `<`, `<=`, `>`, `>=` the result is a monotone
//!    function of `v`, so over a monotone sequence the results are monotone in the
//!    lane and equal ends force equal results in between. For `==` and `!=` that is
//!    not enough (`0, 4, 8` against 4), so the ends must lie strictly on the same
//!    side of `b` (or both equal it): `sign(v − b)` is monotone in `v`, and every
//!    comparison is a function of that sign.
//!
//! A non-monotone warp (condition 1 fails) whose ends happen to agree can still
//! differ in the middle (`tid.x − 20·tid.y < 10` in a 16×16 block: lanes 10-15 are
//! false, lanes 0 and 31 true), so such a warp takes the slow path.

use super::tuple::{
    accumulate, AffineTuple, CmpOp, GeomError, IntType, PredTuple, StepKind, Steps, WarpGeom,
};

/// Which PEU path produced a mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeuPath {
    /// Both operands CTA-uniform: one compare for the whole CTA.
    Uniform,
    /// One CTA-uniform operand, monotone warp, agreeing ends: 2 compares.
    Fast,
    /// One compare per lane on the SIMT lanes.
    Slow,
}

/// A warp's predicate mask and how it was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PredOutcome {
    /// Bit `lane` set when the predicate holds in that lane (lanes without a thread
    /// are clear).
    pub mask: u32,
    pub path: PeuPath,
    /// Comparisons performed (1, 2 or the warp's lanes).
    pub compares: u32,
}

/// Expands `p` for warp `g`.
pub fn expand(p: &PredTuple, g: &WarpGeom) -> Result<PredOutcome, GeomError> {
    g.validate()?;
    let all = g.lane_mask();
    let uniform = (p.lhs.is_cta_uniform(), p.rhs.is_cta_uniform());
    if uniform == (true, true) {
        let hold = p.eval(g.ctaid, [0; 3]);
        return Ok(PredOutcome {
            mask: if hold { all } else { 0 },
            path: PeuPath::Uniform,
            compares: 1,
        });
    }
    let oriented = match uniform {
        (false, true) => Some((p.lhs, p.op, p.rhs)),
        (true, false) => Some((p.rhs, flip(p.op), p.lhs)),
        _ => None,
    };
    if let Some((var, op, bound)) = oriented {
        let b = p.ty.reduce(bound.cta_start(g.ctaid));
        if let Some(hold) = fast_path(&var, op, b, p.ty, g) {
            return Ok(PredOutcome {
                mask: if hold { all } else { 0 },
                path: PeuPath::Fast,
                compares: 2,
            });
        }
    }
    Ok(slow_path(p, g))
}

/// `a op b` as `b op' a`.
pub fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        CmpOp::Eq | CmpOp::Ne => op,
    }
}

/// The warp's common result when the fast path applies (see the module doc).
fn fast_path(var: &AffineTuple, op: CmpOp, b: i128, ty: IntType, g: &WarpGeom) -> Option<bool> {
    if !monotone(var, g) {
        return None;
    }
    let first = var.eval(g.ctaid, g.tid(0));
    let last = var.eval(g.ctaid, g.tid(g.lanes() - 1));
    if !ty.holds(first) || !ty.holds(last) {
        return None;
    }
    let (r0, r1) = (op.eval(first, b), op.eval(last, b));
    let same_side = (first - b).signum() == (last - b).signum();
    let agree = r0 == r1 && (op.is_order() || same_side);
    agree.then_some(r0)
}

/// True when the lane-to-lane increments occurring in warp `g` all have one sign.
pub fn monotone(t: &AffineTuple, g: &WarpGeom) -> bool {
    let steps = Steps::new(t, g.block_dim);
    let (mut up, mut down) = (false, false);
    for kind in accumulate(t, g).filter_map(|a| a.step) {
        let d = match kind {
            StepKind::X => steps.x,
            StepKind::Row => steps.row,
            StepKind::Plane => steps.plane,
        };
        up |= d > 0;
        down |= d < 0;
    }
    !(up && down)
}

/// Compares every lane (the SIMT lanes' fallback).
fn slow_path(p: &PredTuple, g: &WarpGeom) -> PredOutcome {
    let lhs = accumulate(&p.lhs, g);
    let rhs = accumulate(&p.rhs, g);
    let mut mask = 0u32;
    for (a, b) in lhs.zip(rhs) {
        if p.op.eval(p.ty.reduce(a.value), p.ty.reduce(b.value)) {
            mask |= 1 << a.lane;
        }
    }
    PredOutcome {
        mask,
        path: PeuPath::Slow,
        compares: g.lanes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::dac::testutil::Rng;
    use crate::gpu::dac::tuple::DIMS;

    fn geom(block_dim: [u32; DIMS], warp: u32) -> WarpGeom {
        WarpGeom {
            block_dim,
            ctaid: [0; DIMS],
            warp,
            warp_size: 32,
        }
    }

    fn pred(lhs: AffineTuple, op: CmpOp, bound: i64, ty: IntType) -> PredTuple {
        PredTuple {
            lhs,
            op,
            rhs: AffineTuple::scalar(bound),
            ty,
        }
    }

    /// Per-lane reference.
    fn brute(p: &PredTuple, g: &WarpGeom) -> u32 {
        (0..g.lanes())
            .filter(|&l| p.eval(g.ctaid, g.tid(l)))
            .fold(0, |m, l| m | 1 << l)
    }

    fn check(p: &PredTuple, g: &WarpGeom) -> PredOutcome {
        let o = expand(p, g).unwrap();
        assert_eq!(o.mask, brute(p, g), "{p:?} {g:?} {o:?}");
        o
    }

    #[test]
    fn uniform_predicates_take_one_compare() {
        let p = PredTuple {
            lhs: AffineTuple::scalar(7),
            op: CmpOp::Ne,
            rhs: AffineTuple {
                base: 3,
                cta_strides: [4, 0, 0],
                ..AffineTuple::default()
            },
            ty: IntType::S32,
        };
        let o = check(&p, &geom([40, 1, 1], 1));
        assert_eq!((o.mask, o.path, o.compares), (0xff, PeuPath::Uniform, 1));
        let o = check(&p, &geom([40, 1, 1], 1).with_cta([1, 0, 0]));
        assert_eq!(o.mask, 0, "7 == 3 + 4·1 in CTA 1");
    }

    #[test]
    fn fast_path_when_first_and_last_lanes_agree() {
        // tid.x + 64·ctaid.x < n, the usual bounds check.
        let i = AffineTuple {
            base: 0,
            strides: [1, 0, 0],
            cta_strides: [64, 0, 0],
        };
        let p = pred(i, CmpOp::Lt, 100, IntType::S32);
        let g = geom([64, 1, 1], 0);
        let o = check(&p, &g);
        assert_eq!((o.mask, o.path, o.compares), (u32::MAX, PeuPath::Fast, 2));
        // CTA 1, warp 1: ids 96..127 straddle 100: slow, lanes 0-3.
        let o = check(&p, &g.with_cta([1, 0, 0]).with_warp(1));
        assert_eq!((o.mask, o.path, o.compares), (0xf, PeuPath::Slow, 32));
        // CTA 2: all past the bound.
        let o = check(&p, &g.with_cta([2, 0, 0]));
        assert_eq!((o.mask, o.path), (0, PeuPath::Fast));
        // `<=` with the last lane on the bound is still uniform.
        let o = check(&pred(i, CmpOp::Le, 31, IntType::S32), &g);
        assert_eq!((o.mask, o.path), (u32::MAX, PeuPath::Fast));
        // The scalar on the left: 100 > i.
        let q = PredTuple {
            lhs: AffineTuple::scalar(100),
            op: CmpOp::Gt,
            rhs: i,
            ty: IntType::S32,
        };
        let o = check(&q, &g);
        assert_eq!((o.mask, o.path), (u32::MAX, PeuPath::Fast));
    }

    #[test]
    fn equality_needs_both_ends_on_one_side() {
        let v = AffineTuple::linear(0, 4);
        let g = geom([32, 1, 1], 0);
        // 0, 4, .., 124 against 8: the ends are both `!=` but lane 2 is equal.
        let o = check(&pred(v, CmpOp::Ne, 8, IntType::U32), &g);
        assert_eq!((o.mask, o.path), (!0b100, PeuPath::Slow));
        let o = check(&pred(v, CmpOp::Eq, 6, IntType::U32), &g);
        assert_eq!((o.mask, o.path), (0, PeuPath::Slow));
        let o = check(&pred(v, CmpOp::Eq, 200, IntType::U32), &g);
        assert_eq!((o.mask, o.path), (0, PeuPath::Fast));
        let o = check(
            &pred(AffineTuple::linear(-9, -1), CmpOp::Ne, 0, IntType::S64),
            &g,
        );
        assert_eq!((o.mask, o.path), (u32::MAX, PeuPath::Fast));
    }

    #[test]
    fn non_monotone_2d_warps_never_take_the_fast_path() {
        // tid.x - 20·tid.y < 10 in a 16×16 block: lanes 0 and 31 agree (0 and -5),
        // lanes 10-15 do not.
        let v = AffineTuple {
            base: 0,
            strides: [1, -20, 0],
            cta_strides: [0; DIMS],
        };
        let p = pred(v, CmpOp::Lt, 10, IntType::S32);
        let g = geom([16, 16, 1], 0);
        assert!(!monotone(&v, &g));
        let o = check(&p, &g);
        assert_eq!((o.mask, o.path), (!0xfc00, PeuPath::Slow));
        // The linear id tid.x + 16·tid.y is monotone across rows: fast.
        let id = AffineTuple {
            strides: [1, 16, 0],
            ..v
        };
        assert!(monotone(&id, &g));
        for w in 0..8 {
            let o = check(&pred(id, CmpOp::Lt, 1000, IntType::S32), &g.with_warp(w));
            assert_eq!(o.path, PeuPath::Fast);
        }
        // tid.x alone in 8-wide rows wraps back each row: slow even when uniform.
        let x = AffineTuple::linear(0, 1);
        let o = check(&pred(x, CmpOp::Lt, 8, IntType::S32), &geom([8, 8, 4], 1));
        assert_eq!((o.mask, o.path), (u32::MAX, PeuPath::Slow));
    }

    #[test]
    fn wrapping_values_take_the_slow_path() {
        // 0xfffffff0 + lane as u32 wraps to 0 at lane 16.
        let v = AffineTuple::linear(0xffff_fff0, 1);
        let o = check(
            &pred(v, CmpOp::Ge, 0x8000_0000, IntType::U32),
            &geom([32, 1, 1], 0),
        );
        assert_eq!((o.mask, o.path), (0xffff, PeuPath::Slow));
        let o = check(
            &pred(v, CmpOp::Ge, 0x8000_0000, IntType::U64),
            &geom([32, 1, 1], 0),
        );
        assert_eq!((o.mask, o.path), (u32::MAX, PeuPath::Fast));
    }

    #[test]
    fn two_varying_operands_compare_every_lane() {
        let p = PredTuple {
            lhs: AffineTuple::linear(0, 2),
            op: CmpOp::Lt,
            rhs: AffineTuple::linear(20, 1),
            ty: IntType::S32,
        };
        let o = check(&p, &geom([40, 1, 1], 1));
        assert_eq!((o.mask, o.path, o.compares), (0, PeuPath::Slow, 8));
        let o = check(&p, &geom([40, 1, 1], 0));
        assert_eq!(o.mask, (1 << 20) - 1);
    }

    #[test]
    fn random_predicates_equal_the_per_lane_reference() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let dims = [
            [32, 1, 1],
            [100, 1, 1],
            [16, 16, 1],
            [8, 8, 4],
            [5, 7, 3],
            [1, 40, 1],
            [33, 2, 1],
        ];
        let ops = [
            CmpOp::Eq,
            CmpOp::Ne,
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
        ];
        let tys = [IntType::U32, IntType::S32, IntType::U64, IntType::S64];
        let (mut fast, mut slow) = (0, 0);
        for _ in 0..3000 {
            let mut small = || rng.below(9) as i64 - 4;
            let var = AffineTuple {
                base: small() * 10,
                strides: [small(), small() * 8, small() * 64],
                cta_strides: [small() * 32, 0, 0],
            };
            let edge = rng.pick(&[0i64, 1 << 31, -(1 << 31), 1 << 32, i64::MIN, i64::MAX]);
            let var = AffineTuple {
                base: var.base.wrapping_add(edge),
                ..var
            };
            let bound = var.base.wrapping_add(rng.below(400) as i64 - 200);
            let mut p = pred(var, rng.pick(&ops), bound, rng.pick(&tys));
            if rng.below(4) == 0 {
                (p.lhs, p.rhs, p.op) = (p.rhs, p.lhs, flip(p.op));
            }
            let g0 = WarpGeom {
                block_dim: rng.pick(&dims),
                ctaid: [rng.below(4) as u32, 0, 0],
                warp: 0,
                warp_size: 32,
            };
            for w in 0..g0.warps_per_block() {
                match check(&p, &g0.with_warp(w)).path {
                    PeuPath::Fast => fast += 1,
                    PeuPath::Slow => slow += 1,
                    PeuPath::Uniform => {}
                }
            }
        }
        assert!(
            fast > 1000 && slow > 1000,
            "both paths exercised: {fast} {slow}"
        );
    }
}
