//! Affine tuples and the geometry of the warps they are expanded for.
//!
//! An affine value (paper §3, equation 1) is the same linear function of the thread
//! index in every thread: `base + Σ stride[d] · tid[d]`. DAC's affine warp serves all
//! the CTAs of a batch at once, so a tuple also carries a per-CTA term
//! `Σ cta_stride[d] · ctaid[d]` (the paper's "base + block offset × block index",
//! §4.2, computed once per CTA by the expansion units). [`WarpGeom`] says which
//! threads a non-affine warp holds, in the machine's thread order (x fastest, then
//! y, then z, `warp_size` consecutive linear ids per warp), so the expansion units
//! and their brute-force references agree on which lane is which thread.
//!
//! Values are exact integers (`i128`) reduced to the width of the ISA type: the
//! affine arithmetic of a 32-bit (or 64-bit) register is arithmetic modulo 2^32
//! (2^64), so reducing the exact value gives the register's value whatever the
//! order of operations.

use std::fmt;

/// Thread-index (and CTA-index) dimensions: x, y, z.
pub const DIMS: usize = 3;

/// The largest warp the expansion units serve (masks are `u32`).
pub const MAX_WARP: u32 = 32;

/// `base + Σ cta_strides[d]·ctaid[d] + Σ strides[d]·tid[d]` (paper §3, equation 1,
/// with one offset per thread-index dimension and the per-CTA block offsets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AffineTuple {
    /// The value of thread (0,0,0) of CTA (0,0,0): scalars such as kernel parameters.
    pub base: i64,
    /// Offset per unit of `%tid.x`, `%tid.y`, `%tid.z`.
    pub strides: [i64; DIMS],
    /// Offset per unit of `%ctaid.x`, `%ctaid.y`, `%ctaid.z`.
    pub cta_strides: [i64; DIMS],
}

impl AffineTuple {
    /// A value equal in every thread of every CTA (paper Figure 1's `(0x200, 0)`).
    pub fn scalar(base: i64) -> AffineTuple {
        AffineTuple {
            base,
            ..AffineTuple::default()
        }
    }

    /// `base + stride · tid.x` (paper Figure 1's `(0x100, 4)`).
    pub fn linear(base: i64, stride_x: i64) -> AffineTuple {
        AffineTuple {
            base,
            strides: [stride_x, 0, 0],
            cta_strides: [0; DIMS],
        }
    }

    /// True when the value is the same in all threads of a CTA (a "scalar operand"
    /// of §4.3: the PEU then needs one compare per CTA).
    pub fn is_cta_uniform(&self) -> bool {
        self.strides == [0; DIMS]
    }

    /// The CTA's start value `base + Σ cta_strides[d]·ctaid[d]`, exact: what the
    /// expansion units compute once per CTA and keep in its accumulator (§4.2, ①②).
    pub fn cta_start(&self, ctaid: [u32; DIMS]) -> i128 {
        let terms = self.cta_strides.iter().zip(ctaid);
        i128::from(self.base)
            + terms
                .map(|(&s, c)| i128::from(s) * i128::from(c))
                .sum::<i128>()
    }

    /// The exact value in thread `tid` of CTA `ctaid` (the brute-force definition).
    pub fn eval(&self, ctaid: [u32; DIMS], tid: [u32; DIMS]) -> i128 {
        let terms = self.strides.iter().zip(tid);
        self.cta_start(ctaid)
            + terms
                .map(|(&s, t)| i128::from(s) * i128::from(t))
                .sum::<i128>()
    }

    /// Affine addition (§3, equation 2): bases add, offsets add.
    pub fn add(&self, o: &AffineTuple) -> AffineTuple {
        self.zip(o, i64::wrapping_add)
    }

    /// Affine subtraction.
    pub fn sub(&self, o: &AffineTuple) -> AffineTuple {
        self.zip(o, i64::wrapping_sub)
    }

    /// Multiplication by a scalar (§3, equation 3): base and offsets scale.
    pub fn scale(&self, k: i64) -> AffineTuple {
        self.zip(&AffineTuple::default(), |a, _| a.wrapping_mul(k))
    }

    /// Shift left by a uniform amount: multiplication by `2^k` (modulo 2^64).
    pub fn shl(&self, k: u32) -> AffineTuple {
        self.scale(1i64.checked_shl(k).unwrap_or(0))
    }

    /// `self · k + c` with a scalar `k` (the affine `mad`).
    pub fn mad(&self, k: i64, c: &AffineTuple) -> AffineTuple {
        self.scale(k).add(c)
    }

    /// True when the value is the same in every thread of every CTA.
    pub fn is_scalar(&self) -> bool {
        self.is_cta_uniform() && self.cta_strides == [0; DIMS]
    }

    fn zip(&self, o: &AffineTuple, f: impl Fn(i64, i64) -> i64) -> AffineTuple {
        let mut r = AffineTuple::scalar(f(self.base, o.base));
        for d in 0..DIMS {
            r.strides[d] = f(self.strides[d], o.strides[d]);
            r.cta_strides[d] = f(self.cta_strides[d], o.cta_strides[d]);
        }
        r
    }
}

/// The integer type an affine value is read as (the `.T` of `enq.pred.CMP.T`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntType {
    U32,
    S32,
    U64,
    S64,
}

impl IntType {
    /// Reduces an exact value modulo 2^width and reads it as this type.
    pub fn reduce(self, v: i128) -> i128 {
        match self {
            IntType::U32 => i128::from(v as u32),
            IntType::S32 => i128::from(v as i32),
            IntType::U64 => i128::from(v as u64),
            IntType::S64 => i128::from(v as i64),
        }
    }

    /// True when `v` is representable, i.e. [`IntType::reduce`] leaves it unchanged.
    pub fn holds(self, v: i128) -> bool {
        self.reduce(v) == v
    }
}

/// A comparison of a predicate tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn eval(self, a: i128, b: i128) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }

    /// True for the order comparisons, whose result is a monotone function of the
    /// compared value (what makes the 2-compare fast path exact, see [`super::peu`]).
    pub fn is_order(self) -> bool {
        !matches!(self, CmpOp::Eq | CmpOp::Ne)
    }
}

/// The predicate `lhs CMP rhs` read as `ty`, one bit per thread (`enq.pred.CMP.T`).
/// The PEU's fast paths need one side CTA-uniform (§4.3, "the scalar operand");
/// any pair of tuples is accepted and expanded lane by lane otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PredTuple {
    pub lhs: AffineTuple,
    pub op: CmpOp,
    pub rhs: AffineTuple,
    pub ty: IntType,
}

impl PredTuple {
    /// The predicate in one thread (the brute-force definition).
    pub fn eval(&self, ctaid: [u32; DIMS], tid: [u32; DIMS]) -> bool {
        let a = self.ty.reduce(self.lhs.eval(ctaid, tid));
        let b = self.ty.reduce(self.rhs.eval(ctaid, tid));
        self.op.eval(a, b)
    }
}

/// A malformed warp geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeomError {
    /// `warp_size` is 0 or above [`MAX_WARP`].
    WarpSize(u32),
    /// A block dimension is 0.
    EmptyBlock,
    /// The warp starts past the block's last thread.
    WarpOutsideBlock { warp: u32, threads: u64 },
}

impl fmt::Display for GeomError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GeomError::WarpSize(w) => write!(f, "warp size {w} is not in 1..={MAX_WARP}"),
            GeomError::EmptyBlock => write!(f, "a block dimension is 0"),
            GeomError::WarpOutsideBlock { warp, threads } => {
                write!(f, "warp {warp} starts past the block's {threads} threads")
            }
        }
    }
}

impl std::error::Error for GeomError {}

/// One non-affine warp: its CTA's shape and index, and its index within the CTA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WarpGeom {
    /// `%ntid`: the block dimensions.
    pub block_dim: [u32; DIMS],
    /// `%ctaid`: the CTA's index in the grid.
    pub ctaid: [u32; DIMS],
    /// The warp's index within its CTA (lanes hold linear ids `warp·warp_size + lane`).
    pub warp: u32,
    pub warp_size: u32,
}

impl WarpGeom {
    /// Checks the geometry; every other method assumes it holds.
    pub fn validate(&self) -> Result<(), GeomError> {
        if self.warp_size == 0 || self.warp_size > MAX_WARP {
            return Err(GeomError::WarpSize(self.warp_size));
        }
        if self.block_dim.contains(&0) {
            return Err(GeomError::EmptyBlock);
        }
        let threads = self.block_threads();
        if u64::from(self.warp) * u64::from(self.warp_size) >= threads {
            return Err(GeomError::WarpOutsideBlock {
                warp: self.warp,
                threads,
            });
        }
        Ok(())
    }

    /// Threads in the block.
    pub fn block_threads(&self) -> u64 {
        self.block_dim.iter().map(|&d| u64::from(d)).product()
    }

    /// Warps in the block (the last may be partial).
    pub fn warps_per_block(&self) -> u32 {
        let ws = u64::from(self.warp_size.max(1));
        u32::try_from(self.block_threads().div_ceil(ws)).unwrap_or(u32::MAX)
    }

    /// Lanes holding a thread: `warp_size` except in a partial last warp.
    pub fn lanes(&self) -> u32 {
        let first = u64::from(self.warp) * u64::from(self.warp_size);
        let left = self.block_threads().saturating_sub(first);
        left.min(u64::from(self.warp_size)) as u32
    }

    /// The mask of lanes holding a thread.
    pub fn lane_mask(&self) -> u32 {
        match self.lanes() {
            32 => u32::MAX,
            n => (1u32 << n) - 1,
        }
    }

    /// The thread index of `lane` (x fastest, as the machine numbers threads).
    pub fn tid(&self, lane: u32) -> [u32; DIMS] {
        let t = u64::from(self.warp) * u64::from(self.warp_size) + u64::from(lane);
        let [bx, by, _] = self.block_dim.map(u64::from);
        [
            (t % bx) as u32,
            ((t / bx) % by) as u32,
            (t / (bx * by)) as u32,
        ]
    }

    /// The same warp of another CTA.
    pub fn with_cta(&self, ctaid: [u32; DIMS]) -> WarpGeom {
        WarpGeom { ctaid, ..*self }
    }

    /// The same CTA's warp `warp`.
    pub fn with_warp(&self, warp: u32) -> WarpGeom {
        WarpGeom { warp, ..*self }
    }
}

/// How a tuple's value changes from one lane to the next, computed once per tuple
/// and block shape (the §4.2 "adjustment ⑦", the same for all threads): `+x` within
/// a row, `+row` when `tid.x` wraps to 0, `+plane` when `tid.y` wraps too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steps {
    pub x: i128,
    pub row: i128,
    pub plane: i128,
}

impl Steps {
    pub fn new(t: &AffineTuple, block_dim: [u32; DIMS]) -> Steps {
        let [sx, sy, sz] = t.strides.map(i128::from);
        let [bx, by, _] = block_dim.map(i128::from);
        let row = sy - sx * (bx - 1);
        Steps {
            x: sx,
            row,
            plane: sz - sy * (by - 1) - sx * (bx - 1),
        }
    }
}

/// One lane's exact value produced by accumulation (what the expansion units do
/// instead of multiplying per thread): the lane, its value and the step taken to
/// reach it from the previous lane (`None` for lane 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accumulated {
    pub lane: u32,
    pub value: i128,
    pub step: Option<StepKind>,
}

/// Which increment of [`Steps`] a lane took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    X,
    Row,
    Plane,
}

/// The exact values of `t` in the lanes of `g`, by accumulation from the warp's
/// first thread: one add per lane, the row or plane adjustment where `tid.x` wraps.
pub fn accumulate(t: &AffineTuple, g: &WarpGeom) -> impl Iterator<Item = Accumulated> {
    let steps = Steps::new(t, g.block_dim);
    let first = g.tid(0);
    let start = t.eval(g.ctaid, first);
    let [bx, by, _] = g.block_dim;
    let mut value = start;
    let [mut x, mut y] = [first[0], first[1]];
    (0..g.lanes()).map(move |lane| {
        if lane == 0 {
            return Accumulated {
                lane,
                value,
                step: None,
            };
        }
        let kind = if x + 1 < bx {
            x += 1;
            value += steps.x;
            StepKind::X
        } else if y + 1 < by {
            (x, y) = (0, y + 1);
            value += steps.row;
            StepKind::Row
        } else {
            (x, y) = (0, 0);
            value += steps.plane;
            StepKind::Plane
        };
        Accumulated {
            lane,
            value,
            step: Some(kind),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_follows_the_paper_figure_1() {
        let a = AffineTuple::linear(0x100, 4);
        let b = AffineTuple::scalar(0x200);
        let c = a.add(&b);
        assert_eq!(c, AffineTuple::linear(0x300, 4));
        assert_eq!(c.eval([0; 3], [5, 0, 0]), 0x300 + 20);
        assert_eq!(c.sub(&b), a);
        assert_eq!(a.scale(3), AffineTuple::linear(0x300, 12));
        assert!(b.is_cta_uniform() && !a.is_cta_uniform());
        assert_eq!(a.shl(3), AffineTuple::linear(0x800, 32));
        assert_eq!(a.shl(64), AffineTuple::default(), "shifted out");
        // blockIdx.x * blockDim.x + threadIdx.x with blockDim.x = 256, then * 4 + A.
        let tid = AffineTuple {
            base: 0,
            strides: [1, 0, 0],
            cta_strides: [256, 0, 0],
        };
        let addr = tid.mad(4, &AffineTuple::scalar(0x1000));
        assert_eq!(addr.eval([3, 0, 0], [5, 0, 0]), 0x1000 + 4 * (3 * 256 + 5));
        assert!(b.is_scalar() && !tid.is_scalar() && !tid.is_cta_uniform());
    }

    #[test]
    fn geometry_numbers_threads_x_fastest() {
        let g = WarpGeom {
            block_dim: [5, 3, 4],
            ctaid: [0; 3],
            warp: 1,
            warp_size: 32,
        };
        g.validate().unwrap();
        // Linear id 32 = z 2 (30 threads per plane), y 0, x 2.
        assert_eq!(g.tid(0), [2, 0, 2]);
        assert_eq!(g.lanes(), 28);
        assert_eq!(g.lane_mask(), (1 << 28) - 1);
        assert_eq!(g.warps_per_block(), 2);
        assert_eq!(
            g.with_warp(2).validate(),
            Err(GeomError::WarpOutsideBlock {
                warp: 2,
                threads: 60
            })
        );
        assert_eq!(
            WarpGeom { warp_size: 33, ..g }.validate(),
            Err(GeomError::WarpSize(33))
        );
    }

    #[test]
    fn accumulation_with_adjustments_equals_evaluation() {
        let t = AffineTuple {
            base: -7,
            strides: [3, 100, -1000],
            cta_strides: [5000, 7, 0],
        };
        for dims in [[32, 1, 1], [16, 16, 1], [5, 3, 4], [1, 7, 9], [3, 1, 40]] {
            let g0 = WarpGeom {
                block_dim: dims,
                ctaid: [2, 1, 0],
                warp: 0,
                warp_size: 32,
            };
            for w in 0..g0.warps_per_block() {
                let g = g0.with_warp(w);
                for a in accumulate(&t, &g) {
                    assert_eq!(a.value, t.eval(g.ctaid, g.tid(a.lane)), "{dims:?} w{w}");
                }
                assert_eq!(accumulate(&t, &g).count() as u32, g.lanes());
            }
        }
    }

    #[test]
    fn int_types_wrap_like_registers() {
        assert_eq!(IntType::U32.reduce(-1), i128::from(u32::MAX));
        assert_eq!(IntType::S32.reduce(i128::from(u32::MAX)), -1);
        assert!(IntType::S64.holds(-5) && !IntType::U64.holds(-5));
    }
}
