//! Affine analysis: which IR values are *affine tuples* in the thread indices, the
//! values Decoupled Affine Computation (paper 000, Wang and Lin, ISCA 2017) computes once
//! per batch of warps on an affine warp instead of once per warp.
//!
//! **What a tuple means.** An affine value `v` of integer or pointer type of width `w`
//! (pointers: the module's pointer width) holds, in every existing program instance
//! (only in those where the mask [`Tuple::under`] is on, when it is set),
//!
//! ```text
//! v = base + stride_lane * lane_index + stride_x * thread_idx.x
//!          + stride_y * thread_idx.y + stride_z * thread_idx.z   (mod 2^w)
//! ```
//!
//! where the index registers are read as signed `i32`s, and `base` and the strides are
//! the same in every instance of the gang (uniform, possibly run-time values). The
//! paper's tuple is `(base, offset)` over one linear thread id; we keep one stride per
//! index *register* of the IR, so `threadIdx.y` and `programIndex` are separate
//! dimensions and the expansion hardware can apply its 2-D adjustment. `blockIdx`,
//! `blockDim`, parameters, uniform loads and every other uniform-typed value are
//! uniform: they can appear in the base and the strides (the paper's "scalars").
//!
//! Each part of a tuple ([`Part`]) is either a [`Linear`] form known at compile time
//! (a constant plus constant multiples of uniform IR values, the *atoms*), or
//! [`Part::Runtime`]: uniform, but only computable at run time by replaying the same
//! instructions on tuples (which is what the affine warp does: `add` adds bases and
//! strides, `mul` by a uniform scales both). A value whose strides are all zero is
//! *uniform*; a tuple with a nonzero (or run-time) stride is *affine*.
//!
//! **Rules** (all arithmetic is modulo `2^w`, where add, sub, neg, bnot (`-x-1`), mul by a
//! uniform and shl by a constant are exact, so these rules need no assumption):
//! - constants, `splat u`, uniform-typed values: uniform (a uniform-typed value is its
//!   own atom); `lane_index`, `thread_idx.{x,y,z}`: stride 1 in their dimension;
//! - `iadd`, `isub`, `ineg`, `bnot`: componentwise; `imul` of an affine by a uniform:
//!   both parts scaled (a product of two run-time values is [`Part::Runtime`]); `ishl`
//!   by a constant: scaled by `2^k`; by a run-time uniform: run-time strides; the
//!   product of two non-uniform tuples is non-affine;
//! - pointer `iadd` is the IR's address arithmetic (`gep`): the same rule; `bitcast`
//!   between pointers and integers of one width keeps the tuple; `ireduce` keeps it
//!   (reduction modulo `2^w` commutes with the ring operations);
//! - `sext`/`zext` of a non-uniform tuple are *not* exact under the wrapping semantics
//!   of lang-spec (signed overflow wraps in spmdc): `sext(b + s*i) = sext(b) + sext(s)*i`
//!   only when the narrow computation does not overflow. The analysis pushes the
//!   extension through the form (atoms, coefficients and constants read as signed for
//!   `sext`, unsigned for `zext`) and records the assumption as a [`NoWrap`] on the
//!   tuple: "the narrow operand's value is the exact integer value of that form", as a
//!   C compiler may assume for signed `int` indices (ISPC treats the overflow as
//!   undefined). Exact without assumption: extensions of uniform values (a lone atom
//!   keeps its form, others become run-time), `sext` of an index register itself, and
//!   constant-base lane-only tuples whose range over `0..programCount` fits. A consumer
//!   that must be exact either guards at run time (the operand's range over the block's
//!   index box) or refuses tuples with assumptions ([`Tuple::exact`]);
//! - §4.6 extras, where representable soundly (the paper's section is not in our
//!   transcription; these are our rules): `smin`/`smax`/`umin`/`umax`, `sdiv`, `srem`,
//!   `udiv`, `urem`, floats and every other operation of uniform operands are uniform;
//!   `urem` by a power of two `c` (and `band` with `c - 1`) of a tuple whose strides are
//!   known multiples of `c` is uniform (exact: `c` divides `2^w`); `udiv` / `ushr` by
//!   `c = 2^k` dividing every stride divide the strides (assumes no unsigned wrap),
//!   `sshr` likewise (floor division; assumes no signed wrap); `sdiv` of a non-uniform
//!   tuple truncates toward zero, which is not affine when lanes straddle zero, so it is
//!   non-affine; min/max of two tuples one of which varies are select tuples
//!   (below: `smin(a, b)` is `a < b ? a : b`, signed or unsigned as the operation,
//!   on the very wrapped values the lanes compare), non-affine in their plain view;
//! - `select c, a, b`: `a` or `b` for a constant `c`; the meet of both for a uniform `c`
//!   (a gang takes one side as a whole: equal known parts stay, different ones become
//!   run-time); for a varying `c`, `a`'s tuple qualified by `c` (it holds where `c` is
//!   on, which is where masked uses look); when `c` is a varying affine predicate and
//!   both arms are tuples holding in every lane, the *select tuple* `c ? a : b`
//!   ([`Class::Piecewise`]; hotspot's `r > 0 ? i - cols : i`), which every other rule
//!   applies to both arms when the operands are select tuples on one `c`
//!   (`Ctx::lift`: per lane a rule is exact on the arm the lane takes), falling back
//!   to the qualified `then` tuple ([`Class::plain`], the claim above) otherwise.
//!   Block parameters: the meet of the incoming
//!   arguments (every `brif` is uniform, so a gang takes one edge as a whole);
//! - a call to an internal function is *summarized* per call site: the callee is
//!   analyzed with the arguments' classes as its parameters (its own uniforms become
//!   run-time values, depth at most 3) and the meet of its `return`s is the result's
//!   class, qualified by the call's mask unless that is the all-on constant (lanes off
//!   read 0);
//! - `icmp` of a non-uniform tuple with a uniform value, or of two uniform values, is an
//!   *affine predicate* (the paper's `enq.pred`, [`Pred`]);
//! - varying loads, atomics, cross-lane operations and varying entry parameters are
//!   non-affine (they start no tuple).
//!
//! **Masks.** The IR keeps divergence in masks, so after `if (i >= n) return;` every
//! value is computed under a mask. A claim qualified by a mask `m` ([`Tuple::under`])
//! needs only hold where `m` is on; combining claims under two different masks gives
//! no claim. A block parameter leaves out the else edge of `brif any(m)` (taken only
//! when no lane of `m` is on: the lowering's skip of empty regions) when the other
//! edges are qualified by `m`, and keeps `m` only when `m` is defined before the block.
//! An access may use a tuple qualified by its own mask
//! ([`FunctionAffine::address_tuple`]). The hidden mask of an entry point that no call
//! in the module reaches is the all-on constant: a launch passes every existing lane
//! (and claims are only about existing lanes), so `band` with it and loops it guards
//! stay uniform.
//!
//! **Loops.** The analysis is optimistic (values start unknown) and iterates in reverse
//! postorder to a fixpoint, meeting each value's new class with its old one so it only
//! descends: `i = phi(i0, i + step)` with a uniform `step` keeps `i0`'s strides and gets
//! a run-time base. Atoms in a form always dominate the value (operands do, the
//! block-parameter meet keeps a form only when every kept edge has it, and forms whose
//! atoms do not dominate the block after a left-out edge become run-time), so a form
//! can be evaluated wherever the value is live. (The values named in [`NoWrap`]s need
//! not dominate.)
//!
//! Soundness is checked at run time by [`insert_affine_checks`], which instruments a
//! module to compare every claim with the interpreter's per-lane values; the tests run
//! every example and the ISPC-style corpora that way.
//!
//! **API** for the passes that use it: [`analyze_module`] / [`analyze_function`] give a
//! [`FunctionAffine`] per function: [`FunctionAffine::class`], [`FunctionAffine::tuple`],
//! [`FunctionAffine::is_affine`], [`FunctionAffine::is_uniform`],
//! [`FunctionAffine::predicate`], [`FunctionAffine::address_tuple`]; [`access_stats`]
//! counts affine addresses; [`annotated_module_text_with_uniformity`] is `--emit ir`.

use cranelift_entity::SecondaryMap;
use smallvec::SmallVec;

use crate::ir::dominance::DominatorTree;
use crate::ir::write::Names;
use crate::ir::{
    BinaryOp, Block, ConvOp, FuncRef, Function, InstData, IntCC, Module, Scalar, SpecialReg, Type,
    UnaryOp, Value, ValueDef,
};

/// The thread-index dimensions of a tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// `programIndex` (`lane_index`).
    Lane,
    ThreadX,
    ThreadY,
    ThreadZ,
}

impl Dim {
    pub const ALL: [Dim; 4] = [Dim::Lane, Dim::ThreadX, Dim::ThreadY, Dim::ThreadZ];

    pub fn index(self) -> usize {
        self as usize
    }

    /// The special register holding this index.
    pub fn reg(self) -> SpecialReg {
        match self {
            Dim::Lane => SpecialReg::LaneIndex,
            Dim::ThreadX => SpecialReg::ThreadIdxX,
            Dim::ThreadY => SpecialReg::ThreadIdxY,
            Dim::ThreadZ => SpecialReg::ThreadIdxZ,
        }
    }

    fn of_reg(reg: SpecialReg) -> Option<Dim> {
        Dim::ALL.into_iter().find(|d| d.reg() == reg)
    }

    fn name(self) -> &'static str {
        match self {
            Dim::Lane => "lane",
            Dim::ThreadX => "tid.x",
            Dim::ThreadY => "tid.y",
            Dim::ThreadZ => "tid.z",
        }
    }
}

/// A uniform IR value read as a mathematical integer: sign-extended (`signed`) or
/// zero-extended from its own width, then reduced modulo the width of the form it
/// appears in (so a wider atom is truncated).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Atom {
    pub value: Value,
    pub signed: bool,
}

/// `constant + sum(coef * atom)` modulo `2^w`. Coefficients are kept sign-extended
/// from `w` bits and terms sorted by atom, so equal forms compare equal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Linear {
    pub constant: i64,
    pub terms: SmallVec<[(Atom, i64); 2]>,
}

/// The low `w` bits of `x`, sign-extended: the canonical representative modulo `2^w`.
pub(crate) fn wrap(x: i64, w: u32) -> i64 {
    if w >= 64 {
        x
    } else {
        let shift = 64 - w;
        (x << shift) >> shift
    }
}

impl Linear {
    pub fn constant(c: i64, w: u32) -> Linear {
        Linear {
            constant: wrap(c, w),
            terms: SmallVec::new(),
        }
    }

    pub fn atom(value: Value) -> Linear {
        Linear {
            constant: 0,
            terms: smallvec::smallvec![(
                Atom {
                    value,
                    signed: true
                },
                1
            )],
        }
    }

    /// The constant, if the form has no atoms.
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    fn add(&self, other: &Linear, w: u32) -> Linear {
        let mut terms = self.terms.clone();
        for &(a, c) in &other.terms {
            match terms.iter_mut().find(|(b, _)| *b == a) {
                Some((_, k)) => *k = wrap(k.wrapping_add(c), w),
                None => terms.push((a, c)),
            }
        }
        terms.retain(|(_, c)| *c != 0);
        terms.sort_by_key(|(a, _)| *a);
        Linear {
            constant: wrap(self.constant.wrapping_add(other.constant), w),
            terms,
        }
    }

    fn scale(&self, k: i64, w: u32) -> Linear {
        let mut terms: SmallVec<[(Atom, i64); 2]> = self
            .terms
            .iter()
            .map(|&(a, c)| (a, wrap(c.wrapping_mul(k), w)))
            .collect();
        terms.retain(|(_, c)| *c != 0);
        Linear {
            constant: wrap(self.constant.wrapping_mul(k), w),
            terms,
        }
    }

    /// The same form read at another width `to`, after `from`-bit arithmetic: with
    /// `ext` (`Some(signed)`) widening reads every constant and atom as a signed or
    /// unsigned integer; `None` truncates (exact modulo `2^to`).
    fn rewidth(&self, from: u32, to: u32, ext: Option<bool>) -> Linear {
        let read = |c: i64| match ext {
            Some(false) if from < 64 => c & ((1i64 << from) - 1),
            _ => c,
        };
        let mut terms: SmallVec<[(Atom, i64); 2]> = self
            .terms
            .iter()
            .map(|&(a, c)| {
                let a = match ext {
                    Some(signed) => Atom { signed, ..a },
                    None => a,
                };
                (a, wrap(read(c), to))
            })
            .collect();
        terms.retain(|(_, c)| *c != 0);
        Linear {
            constant: wrap(read(self.constant), to),
            terms,
        }
    }
}

/// A base or stride: a compile-time [`Linear`] form, or a uniform value known only at
/// run time (computed by replaying the instructions on tuples).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    Known(Linear),
    Runtime,
}

impl Part {
    fn zero() -> Part {
        Part::Known(Linear::default())
    }

    pub fn is_zero(&self) -> bool {
        matches!(self, Part::Known(l) if l.as_const() == Some(0))
    }

    /// The constant, when known to be one.
    pub fn as_const(&self) -> Option<i64> {
        match self {
            Part::Known(l) => l.as_const(),
            Part::Runtime => None,
        }
    }

    fn add(&self, other: &Part, w: u32) -> Part {
        match (self, other) {
            (Part::Known(a), Part::Known(b)) => Part::Known(a.add(b, w)),
            _ => Part::Runtime,
        }
    }

    fn scale(&self, k: i64, w: u32) -> Part {
        match self {
            Part::Known(a) => Part::Known(a.scale(k, w)),
            Part::Runtime if k == 0 => Part::zero(),
            Part::Runtime => Part::Runtime,
        }
    }

    fn mul(&self, other: &Part, w: u32) -> Part {
        if let Some(k) = other.as_const() {
            return self.scale(k, w);
        }
        if let Some(k) = self.as_const() {
            return other.scale(k, w);
        }
        Part::Runtime
    }

    fn meet(&self, other: &Part) -> Part {
        if self == other {
            self.clone()
        } else {
            Part::Runtime
        }
    }

    fn rewidth(&self, from: u32, to: u32, ext: Option<bool>) -> Part {
        match self {
            Part::Known(l) => Part::Known(l.rewidth(from, to, ext)),
            Part::Runtime => Part::Runtime,
        }
    }
}

/// An assumption a tuple rests on: the narrow value `value` (the operand of a `sext`,
/// `zext`, `udiv`, `ushr` or `sshr`) equals the exact integer evaluation of its own tuple
/// in every thread, i.e. its computation does not overflow (signed or unsigned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NoWrap {
    pub value: Value,
    pub signed: bool,
}

/// An affine tuple (see the module documentation for its meaning).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tuple {
    /// The width in bits the parts are computed modulo.
    pub width: u32,
    pub base: Part,
    /// One stride per [`Dim`], indexed by [`Dim::index`].
    pub strides: [Part; 4],
    /// What the tuple assumes about narrower computations (empty: exact).
    pub assumes: SmallVec<[NoWrap; 1]>,
    /// `Some(m)`: the tuple holds only in the lanes where the mask `m` is on (the value
    /// is unspecified elsewhere): values computed by a call under `m`, or chosen by
    /// `select m, a, b`. `None`: in every lane.
    pub under: Option<Value>,
}

impl Tuple {
    fn uniform(base: Part, width: u32) -> Tuple {
        Tuple {
            width,
            base,
            strides: [Part::zero(), Part::zero(), Part::zero(), Part::zero()],
            assumes: SmallVec::new(),
            under: None,
        }
    }

    /// Every stride is zero: the same value in every thread.
    pub fn is_uniform(&self) -> bool {
        self.strides.iter().all(Part::is_zero)
    }

    /// The tuple holds under the wrapping semantics without any [`NoWrap`] assumption.
    pub fn exact(&self) -> bool {
        self.assumes.is_empty()
    }

    pub fn stride(&self, d: Dim) -> &Part {
        &self.strides[d.index()]
    }

    /// The stride in `d` when it is a compile-time constant.
    pub fn const_stride(&self, d: Dim) -> Option<i64> {
        self.stride(d).as_const()
    }

    fn assumes_union(&self, other: &Tuple) -> SmallVec<[NoWrap; 1]> {
        let mut a = self.assumes.clone();
        a.extend(other.assumes.iter().copied());
        a.sort();
        a.dedup();
        a
    }

    fn add(&self, other: &Tuple) -> Tuple {
        let w = self.width;
        Tuple {
            width: w,
            base: self.base.add(&other.base, w),
            strides: std::array::from_fn(|d| self.strides[d].add(&other.strides[d], w)),
            assumes: self.assumes_union(other),
            under: None,
        }
    }

    fn scale(&self, k: i64) -> Tuple {
        let w = self.width;
        Tuple {
            width: w,
            base: self.base.scale(k, w),
            strides: std::array::from_fn(|d| self.strides[d].scale(k, w)),
            assumes: self.assumes.clone(),
            under: None,
        }
    }

    /// `self * u` where `u` is uniform.
    fn mul_uniform(&self, u: &Tuple) -> Tuple {
        let w = self.width;
        Tuple {
            width: w,
            base: self.base.mul(&u.base, w),
            strides: std::array::from_fn(|d| self.strides[d].mul(&u.base, w)),
            assumes: self.assumes_union(u),
            under: None,
        }
    }

    fn meet(&self, other: &Tuple) -> Tuple {
        Tuple {
            width: self.width,
            base: self.base.meet(&other.base),
            strides: std::array::from_fn(|d| self.strides[d].meet(&other.strides[d])),
            assumes: self.assumes_union(other),
            under: None,
        }
    }

    /// The strides divided by `c` when each is a known multiple of `c` (`None`
    /// otherwise); the base becomes a run-time value.
    fn div_strides(&self, c: i64) -> Option<[Part; 4]> {
        let mut out = [Part::zero(), Part::zero(), Part::zero(), Part::zero()];
        for (o, s) in out.iter_mut().zip(&self.strides) {
            let s = s.as_const()?;
            if s % c != 0 {
                return None;
            }
            *o = Part::Known(Linear::constant(s / c, self.width));
        }
        Some(out)
    }
}

/// An affine predicate: `icmp cond args[0], args[1]` where one side is a tuple and the
/// other uniform (or both uniform: `uniform` is set, one comparison serves the gang).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pred {
    pub cond: IntCC,
    pub args: [Value; 2],
    pub uniform: bool,
    /// As [`Tuple::under`]: the lanes the comparison's operands are claimed in.
    pub under: Option<Value>,
}

/// What the analysis knows about a value.
// Most classified values are tuples, so boxing the large variant would allocate for
// nearly every value instead of saving space.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Class {
    #[default]
    NonAffine,
    /// A tuple (uniform when its strides are all zero).
    Affine(Tuple),
    /// A comparison the predicate expansion can produce.
    Predicate(Pred),
    /// A piecewise-affine value: `then` where the predicate `cond` holds, `els`
    /// elsewhere ([`Piecewise`]).
    Piecewise(Box<Piecewise>),
}

/// A *select tuple*: `pred ? then : els` per lane, where `pred` compares two tuples
/// and both arms are tuples holding in every lane. It is what `select c, a, b` of a
/// varying affine predicate `c` gives (hotspot's and srad's clamped neighbours
/// `r > 0 ? i - cols : i`; `key` is `c`), and `smin`/`smax`/`umin`/`umax` of two
/// tuples one of which varies (`min(a, b)` is `a < b ? a : b` in every lane, with
/// the signedness of the operation and the wrapped `w`-bit values the lanes
/// compute; `key` is the min/max itself). It is closed under the tuple rules
/// applied to both arms (adding a uniform or a tuple, scaling, shifts, conversions:
/// each rule is exact per lane, so applying it to the arm a lane takes computes that
/// lane's value). Rules that do not apply to both arms, and every consumer that does
/// not know select tuples, see [`Piecewise::plain`]: for a select, the older claim
/// of the `then` tuple qualified by `c`; for min/max, non-affine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Piecewise {
    /// What chooses the arm: the `select`'s condition, or the min/max instruction's
    /// result (in the function analyzed). Operations applied to both arms keep it.
    pub key: Value,
    /// The comparison choosing `then` (its `args` are the compared values).
    pub pred: Pred,
    /// `Class::Affine` of the `then` tuple (holding in every lane).
    pub then: Class,
    /// `Class::Affine` of the `else` tuple (holding in every lane).
    pub els: Class,
    /// The class for consumers that do not know select tuples.
    pub plain: Class,
}

impl Piecewise {
    /// The tuples of both arms: (then, else).
    pub fn arms(&self) -> Option<(&Tuple, &Tuple)> {
        Some((self.then.tuple()?, self.els.tuple()?))
    }
}

impl Class {
    fn uniform_runtime(width: u32) -> Class {
        Class::Affine(Tuple::uniform(Part::Runtime, width))
    }

    pub fn tuple(&self) -> Option<&Tuple> {
        match self.plain() {
            Class::Affine(t) => Some(t),
            _ => None,
        }
    }

    /// The class as consumers that do not know select tuples see it: a
    /// [`Class::Piecewise`]'s qualified `then` tuple, any other class itself.
    pub fn plain(&self) -> &Class {
        match self {
            Class::Piecewise(p) => &p.plain,
            c => c,
        }
    }

    /// The select tuple, when the value is one.
    pub fn piecewise(&self) -> Option<&Piecewise> {
        match self {
            Class::Piecewise(p) => Some(p),
            _ => None,
        }
    }

    pub fn is_uniform(&self) -> bool {
        match self.plain() {
            Class::Affine(t) => t.is_uniform(),
            Class::Predicate(p) => p.uniform,
            _ => false,
        }
    }

    fn meet(&self, other: &Class) -> Class {
        if self == other {
            return self.clone();
        }
        let (this, other) = (self.plain(), other.plain());
        let Some(under) = merge_under(this.under(), other.under()) else {
            return Class::NonAffine;
        };
        let met = match (this, other) {
            (Class::Affine(a), Class::Affine(b)) if a.width == b.width => Class::Affine(a.meet(b)),
            (a, b) if a == b => a.clone(),
            (a, b) if a.is_uniform() && b.is_uniform() => Class::uniform_runtime(1),
            _ => Class::NonAffine,
        };
        met.with_under(under)
    }

    /// The mask the claim is qualified by ([`Tuple::under`]).
    pub fn under(&self) -> Option<Value> {
        match self.plain() {
            Class::Affine(t) => t.under,
            Class::Predicate(p) => p.under,
            _ => None,
        }
    }

    fn with_under(self, under: Option<Value>) -> Class {
        // A select tuple holds in every lane: qualifying it keeps it only when the
        // qualifier adds nothing to its plain view's.
        let mut c = match self {
            Class::Piecewise(p) if under.is_none() || under == p.plain.under() => {
                return Class::Piecewise(p)
            }
            Class::Piecewise(p) => p.plain,
            c => c,
        };
        match &mut c {
            Class::Affine(t) => t.under = under,
            Class::Predicate(p) => p.under = under,
            _ => {}
        }
        c
    }
}

/// The qualifier of a claim that needs both `a` and `b`: the one that is set, or
/// `None` (outer) when they are two different masks (no claim).
fn merge_under(a: Option<Value>, b: Option<Value>) -> Option<Option<Value>> {
    match (a, b) {
        (Some(x), Some(y)) if x != y => None,
        (x, y) => Some(x.or(y)),
    }
}

/// The results for one function.
#[derive(Clone, Debug, Default)]
pub struct FunctionAffine {
    /// The solver's final state, kept as it is (`None`: non-affine) rather than
    /// copied into a second table of large classes.
    classes: SecondaryMap<Value, Option<Class>>,
}

/// The class of a value the solver left unknown.
static NON_AFFINE: Class = Class::NonAffine;

impl FunctionAffine {
    pub fn class(&self, v: Value) -> &Class {
        self.classes[v].as_ref().unwrap_or(&NON_AFFINE)
    }

    /// The tuple of `v`, if it has one (uniform values included).
    pub fn tuple(&self, v: Value) -> Option<&Tuple> {
        self.class(v).tuple()
    }

    /// `v` is a tuple with some stride not known to be zero.
    pub fn is_affine(&self, v: Value) -> bool {
        self.tuple(v).is_some_and(|t| !t.is_uniform())
    }

    /// `v` is the same in every thread of the gang (tuple or predicate).
    pub fn is_uniform(&self, v: Value) -> bool {
        self.class(v).is_uniform()
    }

    /// The tuple of the address of an access under `mask`, when it holds in every lane
    /// the access makes (its qualifier is absent or that very mask).
    pub fn address_tuple(&self, addr: Value, mask: Option<Value>) -> Option<&Tuple> {
        self.tuple(addr)
            .filter(|t| t.under.is_none() || t.under == mask)
    }

    pub fn predicate(&self, v: Value) -> Option<Pred> {
        match self.class(v) {
            Class::Predicate(p) => Some(*p),
            _ => None,
        }
    }
}

/// The results for every function of a module.
#[derive(Clone, Debug, Default)]
pub struct ModuleAffine {
    pub functions: SecondaryMap<FuncRef, FunctionAffine>,
}

/// Analyzes every function of `module`.
pub fn analyze_module(module: &Module) -> ModuleAffine {
    let mut out = ModuleAffine::default();
    for (fref, func) in module.functions.iter() {
        out.functions[fref] = analyze_function(module, func);
    }
    out
}

/// The width in bits tuples of type `ty` are computed modulo (`None`: no tuple, only
/// uniformity: floats).
fn int_width(ty: Type, ptr_size: u32) -> Option<u32> {
    match ty.scalar {
        Scalar::Ptr => Some(ptr_size * 8),
        s if s.is_int() || s == Scalar::Bool => Some(s.bits()),
        _ => None,
    }
}

/// How deep call summaries nest (a call inside a summarized callee is summarized
/// too, up to this depth; deeper calls are non-affine).
const MAX_CALL_DEPTH: u32 = 3;

struct Ctx<'a> {
    module: &'a Module,
    func: &'a Function,
    ptr_size: u32,
    lane_count: u32,
    /// `None`: not yet known (optimistic top).
    state: SecondaryMap<Value, Option<Class>>,
    incoming: Incoming,
    /// When summarizing a callee for one call site: the classes of the caller's
    /// arguments, in the caller's atoms. Uniform values of the callee are then never
    /// atoms themselves (they mean nothing in the caller): run-time uniforms.
    seed: Option<&'a [Class]>,
    depth: u32,
    /// Summaries already computed: (callee, argument classes) to the result's class.
    summaries: std::cell::RefCell<rustc_hash::FxHashMap<(FuncRef, Vec<Class>), Class>>,
    dom: DominatorTree,
    /// `func` is an entry point that no call in the module reaches.
    launched: bool,
    /// The block each value is defined in.
    def_block: SecondaryMap<Value, Option<Block>>,
    /// `Some(c)`: operands that are select tuples on `c` read as their `else` arm
    /// (while a rule is applied to that arm, [`Ctx::lift`]); otherwise they read as
    /// their plain view.
    view: std::cell::Cell<Option<(Value, bool)>>,
}

/// Analyzes `func`, a function of `module` (whose pointer width, gang width and
/// callees it reads).
pub fn analyze_function(module: &Module, func: &Function) -> FunctionAffine {
    let called = module
        .function_by_name(&func.name)
        .is_some_and(|r| module.called_functions()[r]);
    analyze_called(module, func, called)
}

/// [`analyze_function`], told whether some function of `module` calls `func` (from
/// [`Module::called_functions`], which a loop over the functions computes once).
pub fn analyze_called(module: &Module, func: &Function, called: bool) -> FunctionAffine {
    let launched = func.linkage.is_entry() && !called;
    let mut ctx = Ctx::new(module, func, None, 0, launched);
    ctx.solve();
    FunctionAffine {
        classes: std::mem::take(&mut ctx.state),
    }
}

impl<'a> Ctx<'a> {
    fn new(
        module: &'a Module,
        func: &'a Function,
        seed: Option<&'a [Class]>,
        depth: u32,
        launched: bool,
    ) -> Self {
        Ctx {
            module,
            func,
            ptr_size: module.ptr_size,
            lane_count: module.lane_count,
            state: presized(func.values.len()),
            incoming: incoming_args(func),
            seed,
            depth,
            summaries: Default::default(),
            dom: DominatorTree::compute(func),
            launched,
            def_block: def_blocks(func),
            view: std::cell::Cell::new(None),
        }
    }

    /// Iterates in reverse postorder until nothing changes; each value's class only
    /// descends (meet with its previous class). A value is transferred again only
    /// when something it reads changed (an operand, or an argument passed to it as a
    /// block parameter): the same sequence of transfers as sweeping every value each
    /// round, less those that would recompute what they already hold (a transfer
    /// reads nothing else, and meeting a class with what it already met changes
    /// nothing), so each value costs its readers' work once per change rather than
    /// once per round.
    fn solve(&mut self) {
        let func = self.func;
        let order: Vec<Value> = self
            .dom
            .rpo()
            .iter()
            .flat_map(|&block| func.values_defined_in(block))
            .collect();
        let readers = Readers::of(func, &order, &self.incoming);
        let mut dirty = vec![true; order.len()];
        let mut again = true;
        while again {
            again = false;
            for (at, &v) in order.iter().enumerate() {
                if !std::mem::take(&mut dirty[at]) {
                    continue;
                }
                let Some(new) = self.transfer(v) else {
                    continue;
                };
                if self.descend(v, new) {
                    for &r in readers.of_value(at) {
                        dirty[r as usize] = true;
                        // A reader at or before this value waits for the next sweep.
                        again |= r as usize <= at;
                    }
                }
            }
        }
    }

    /// Meets `v`'s class with `new`; returns whether it changed. (A class met with
    /// itself is itself, so an unchanged result costs one comparison.)
    fn descend(&mut self, v: Value, new: Class) -> bool {
        let next = match &self.state[v] {
            Some(old) if *old == new => return false,
            Some(old) => old.meet(&new),
            None => new,
        };
        if self.state[v].as_ref() == Some(&next) {
            return false;
        }
        self.state[v] = Some(next);
        true
    }

    /// The class of what `callee` returns when called with arguments of classes
    /// `args` (the meet over its `return`s), or non-affine past [`MAX_CALL_DEPTH`].
    fn summary(&self, callee: FuncRef, args: Vec<Class>) -> Class {
        let Some(cf) = self.module.functions.get(callee) else {
            return Class::NonAffine;
        };
        if self.depth >= MAX_CALL_DEPTH || cf.linkage.is_entry() {
            return Class::NonAffine;
        }
        let key = (callee, args);
        if let Some(c) = self.summaries.borrow().get(&key) {
            return c.clone();
        }
        // A callee summarized at a call is called: never a launched entry.
        let mut sub = Ctx::new(self.module, cf, Some(&key.1), self.depth + 1, false);
        sub.solve();
        let mut out: Option<Class> = None;
        for &block in &cf.layout {
            let Some(term) = cf.terminator(block) else {
                continue;
            };
            if let InstData::Return { value: Some(r) } = cf.insts[term] {
                let c = sub.state[r].clone().unwrap_or(Class::NonAffine);
                out = Some(match out {
                    None => c,
                    Some(prev) => prev.meet(&c),
                });
            }
        }
        let out = out.unwrap_or(Class::NonAffine);
        self.summaries.borrow_mut().insert(key, out.clone());
        out
    }
}

/// For each value (by its position in the solver's order), the positions of the
/// values whose transfer reads it: the results of instructions using it, and the
/// block parameters it is passed to. Stored flat (one offset per value).
struct Readers {
    start: Vec<u32>,
    list: Vec<u32>,
}

impl Readers {
    fn of(func: &Function, order: &[Value], incoming: &Incoming) -> Readers {
        let mut position: SecondaryMap<Value, u32> = SecondaryMap::with_capacity(func.values.len());
        for (at, &v) in order.iter().enumerate() {
            position[v] = at as u32;
        }
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for (at, &v) in order.iter().enumerate() {
            let at = at as u32;
            match func.values[v].def {
                ValueDef::Result(inst) => {
                    for op in func.insts[inst].operands() {
                        pairs.push((position[op], at));
                    }
                }
                ValueDef::Param(..) => {
                    for &(arg, _) in &incoming[v] {
                        pairs.push((position[arg], at));
                    }
                }
            }
        }
        let mut start = vec![0u32; order.len() + 1];
        for &(from, _) in &pairs {
            start[from as usize + 1] += 1;
        }
        for i in 0..order.len() {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut list = vec![0u32; pairs.len()];
        for (from, to) in pairs {
            list[fill[from as usize] as usize] = to;
            fill[from as usize] += 1;
        }
        Readers { start, list }
    }

    fn of_value(&self, at: usize) -> &[u32] {
        &self.list[self.start[at] as usize..self.start[at + 1] as usize]
    }
}

/// One argument a branch passes to a block parameter: the value, and `Some(m)` when
/// the branch is the else edge of `brif any(m)` (taken only when no lane of `m` is
/// on, so a claim qualified by `m` holds vacuously along it).
type Incoming = SecondaryMap<Value, Vec<(Value, Option<Value>)>>;

/// A table with an entry for each of `len` values from the start, so that writes are
/// plain stores rather than a bounds check and a resize each.
fn presized<V: Clone + Default>(len: usize) -> SecondaryMap<Value, V> {
    let mut map = SecondaryMap::with_capacity(len);
    map.resize(len);
    map
}

/// For each block parameter, the arguments every branch passes to it.
fn incoming_args(func: &Function) -> Incoming {
    let mut incoming: Incoming = presized(func.values.len());
    for &block in &func.layout {
        let Some(term) = func.terminator(block) else {
            continue;
        };
        let empty_mask = match &func.insts[term] {
            InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } if then_dest.block != else_dest.block => any_mask(func, *cond),
            _ => None,
        };
        let succs = func.insts[term].successors();
        for (k, call) in succs.iter().enumerate() {
            let skip = if k == 1 { empty_mask } else { None };
            let params = &func.blocks[call.block].params;
            for (&p, &a) in params.iter().zip(call.args.iter()) {
                incoming[p].push((a, skip));
            }
        }
    }
    incoming
}

/// `m` when `cond` is `any m`.
fn any_mask(func: &Function, cond: Value) -> Option<Value> {
    let ValueDef::Result(inst) = func.values.get(cond)?.def else {
        return None;
    };
    match &func.insts[inst] {
        InstData::Lane {
            op: crate::ir::LaneOp::Any,
            args,
        } => args.first().copied(),
        _ => None,
    }
}

/// The block that defines each value.
fn def_blocks(func: &Function) -> SecondaryMap<Value, Option<Block>> {
    let mut out = presized(func.values.len());
    for &block in &func.layout {
        for &p in &func.blocks[block].params {
            out[p] = Some(block);
        }
        for &i in &func.blocks[block].insts {
            if let Some(r) = func.results[i] {
                out[r] = Some(block);
            }
        }
    }
    out
}

impl Ctx<'_> {
    fn width(&self, v: Value) -> Option<u32> {
        int_width(self.func.value_type(v), self.ptr_size)
    }

    /// The class of `v` given what is known so far; `None` while an operand is unknown.
    fn transfer(&self, v: Value) -> Option<Class> {
        let ty = self.func.value_type(v);
        let summarizing = self.seed.is_some();
        let inst = match self.func.values[v].def {
            ValueDef::Param(block, i) if Some(block) == self.func.entry_block() => {
                return Some(match self.seed {
                    Some(seed) => seed.get(i as usize).cloned().unwrap_or_default(),
                    None if self.launch_mask(i) => {
                        Class::Affine(Tuple::uniform(Part::Known(Linear::constant(1, 1)), 1))
                    }
                    None if ty.varying => Class::NonAffine,
                    None => self.uniform_typed(v),
                });
            }
            _ if !ty.varying && !summarizing => return Some(self.uniform_typed(v)),
            ValueDef::Param(..) => return self.block_param(v),
            ValueDef::Result(inst) => inst,
        };
        let data = &self.func.insts[inst];
        if !data.all_operands(|op| self.state[op].is_some()) {
            return None;
        }
        let Some(w) = self.width(v) else {
            return Some(self.float_like(data));
        };
        if !ty.varying {
            // Summarizing: a uniform computed from the arguments keeps its form when
            // its operation has a rule; otherwise it is a run-time uniform.
            return Some(match data {
                InstData::Iconst { .. }
                | InstData::Unary { .. }
                | InstData::Binary { .. }
                | InstData::Convert { .. }
                | InstData::Select { .. }
                | InstData::Icmp { .. } => self.qualify(data, self.varying_inst(data, w)),
                _ => Class::uniform_runtime(w),
            });
        }
        if let Some(c) = self.min_max(v, data) {
            return Some(c);
        }
        let plain = self.qualify(data, self.varying_inst(data, w));
        Some(self.lift(data, w, plain))
    }

    /// A rule applied to select-tuple operands: when the operands are select tuples
    /// with one key (the others plain tuples) and the rule, applied to the operands'
    /// `then` arms and to their `else` arms, gives a tuple holding in every lane each
    /// time, the result is the select tuple of the two results, with `plain` (the
    /// rule on the plain views) as its plain view; otherwise `plain`. Calls are left
    /// to their own rule.
    fn lift(&self, data: &InstData, w: u32, plain: Class) -> Class {
        if w <= 1 || self.seed.is_some() || matches!(data, InstData::Call { .. }) {
            return plain;
        }
        let mut on: Option<&Piecewise> = None;
        for op in data.operands() {
            if let Some(Class::Piecewise(p)) = self.state[op].as_ref() {
                match on {
                    Some(q) if q.key != p.key => return plain,
                    _ => on = Some(p),
                }
            }
        }
        let Some(p) = on else {
            return plain;
        };
        if matches!(data, InstData::Select { args } if args[0] == p.key) {
            return plain;
        }
        let side = |s: bool| {
            self.view.set(Some((p.key, s)));
            let r = self.qualify(data, self.varying_inst(data, w));
            self.view.set(None);
            r
        };
        match (side(true), side(false)) {
            (Class::Affine(t), Class::Affine(e))
                if t.under.is_none() && e.under.is_none() && t.width == e.width =>
            {
                Class::Piecewise(Box::new(Piecewise {
                    key: p.key,
                    pred: p.pred,
                    then: Class::Affine(t),
                    els: Class::Affine(e),
                    plain,
                }))
            }
            _ => plain,
        }
    }

    /// `smin`/`smax`/`umin`/`umax` `v` of two tuples holding in every lane, one
    /// varying: the select tuple `a < b ? a : b` (`>` for max; signed or unsigned as
    /// the operation), keyed by `v`, plain view non-affine. Exact per lane: the
    /// operation compares the very `w`-bit values the compare does.
    fn min_max(&self, v: Value, data: &InstData) -> Option<Class> {
        let InstData::Binary { op, args } = data else {
            return None;
        };
        let cond = match op {
            BinaryOp::Smin => IntCC::Slt,
            BinaryOp::Umin => IntCC::Ult,
            BinaryOp::Smax => IntCC::Sgt,
            BinaryOp::Umax => IntCC::Ugt,
            _ => return None,
        };
        if self.seed.is_some() || self.view.get().is_some() {
            return None;
        }
        let arm = |x: Value| match self.state[x].as_ref() {
            Some(Class::Affine(t)) if t.under.is_none() && t.width > 1 => Some(t.clone()),
            _ => None,
        };
        let (ta, tb) = (arm(args[0])?, arm(args[1])?);
        if ta.width != tb.width || (ta.is_uniform() && tb.is_uniform()) {
            return None;
        }
        Some(Class::Piecewise(Box::new(Piecewise {
            key: v,
            pred: Pred {
                cond,
                args: *args,
                uniform: false,
                under: None,
            },
            then: Class::Affine(ta),
            els: Class::Affine(tb),
            plain: Class::NonAffine,
        })))
    }

    /// Qualifies the class of an arithmetic result by its operands' masks: it holds
    /// where all of theirs do (non-affine when two differ). Selects and calls
    /// qualify their results themselves.
    fn qualify(&self, data: &InstData, class: Class) -> Class {
        match data {
            InstData::Select { .. } | InstData::Call { .. } => return class,
            _ => {}
        }
        let mut under = class.under();
        for op in data.operands() {
            match merge_under(under, self.class(op).under()) {
                Some(u) => under = u,
                None => return Class::NonAffine,
            }
        }
        class.with_under(under)
    }

    fn class(&self, v: Value) -> &Class {
        match self.state[v].as_ref() {
            Some(Class::Piecewise(p)) => match self.view.get() {
                Some((k, true)) if k == p.key => &p.then,
                Some((k, false)) if k == p.key => &p.els,
                _ => &p.plain,
            },
            Some(c) => c.plain(),
            None => &Class::NonAffine,
        }
    }

    fn tuple(&self, v: Value) -> Option<&Tuple> {
        self.class(v).tuple()
    }

    /// A uniform-typed value is its own atom (constants fold).
    fn uniform_typed(&self, v: Value) -> Class {
        let ty = self.func.value_type(v);
        let Some(w) = int_width(ty, self.ptr_size).filter(|_| ty.scalar != Scalar::Bool) else {
            return Class::uniform_runtime(ty.scalar.bits());
        };
        if let ValueDef::Result(inst) = self.func.values[v].def {
            if let InstData::Iconst { bits, .. } = self.func.insts[inst] {
                return Class::Affine(Tuple::uniform(
                    Part::Known(Linear::constant(bits as i64, w)),
                    w,
                ));
            }
        }
        Class::Affine(Tuple::uniform(Part::Known(Linear::atom(v)), w))
    }

    /// The meet over the incoming arguments known so far. When some argument's claim is
    /// qualified by a mask `q`, edges taken only when no lane of `q` is on are left out
    /// and the result is qualified by `q`, which must be defined before the block.
    fn block_param(&self, v: Value) -> Option<Class> {
        let known: Vec<(&Class, Option<Value>)> = self.incoming[v]
            .iter()
            .filter_map(|&(a, skip)| Some((self.state[a].as_ref()?, skip)))
            .collect();
        let q = known.iter().find_map(|(c, _)| c.under());
        // When summarizing, masks are the caller's values: nothing in the callee tests
        // them, and they are defined before the call.
        let caller = self.seed.is_none();
        let skipping = caller && q.is_some() && known.iter().any(|&(_, skip)| skip == q);
        let mut acc: Option<Class> = None;
        for &(c, skip) in &known {
            if skipping && skip == q {
                continue;
            }
            acc = Some(match acc {
                None => c.clone(),
                Some(prev) => prev.meet(c),
            });
        }
        let mut acc = acc.or_else(|| known.first().map(|(c, _)| (*c).clone()))?;
        if skipping {
            acc = match merge_under(acc.under(), q) {
                Some(u) => acc.with_under(u),
                None => Class::NonAffine,
            };
        }
        let block = self.def_block[v];
        if let (Some(m), Some(b), true) = (acc.under(), block, caller) {
            if !self.defined_before(m, b) {
                return Some(Class::NonAffine);
            }
        }
        if let (Class::Affine(t), Some(b), true) = (&mut acc, block, skipping) {
            // A skipped edge may come from where an atom of the kept forms is not
            // defined: such parts are known only at run time here.
            for part in std::iter::once(&mut t.base).chain(t.strides.iter_mut()) {
                if let Part::Known(l) = part {
                    if !l.terms.iter().all(|(a, _)| self.defined_before(a.value, b)) {
                        *part = Part::Runtime;
                    }
                }
            }
        }
        Some(acc)
    }

    /// Whether `m` is available at the start of block `b` (after its parameters).
    fn defined_before(&self, m: Value, b: Block) -> bool {
        let Some(d) = self.def_block[m] else {
            return false;
        };
        let is_param = matches!(self.func.values[m].def, ValueDef::Param(..));
        self.dom.dominates(d, b) && (d != b || is_param)
    }

    /// Float (and other non-integer) varying results: uniform when every operand is.
    fn float_like(&self, data: &InstData) -> Class {
        let uniform = match data {
            InstData::Fconst { .. } | InstData::Splat { .. } => true,
            InstData::Unary { .. }
            | InstData::Binary { .. }
            | InstData::Convert { .. }
            | InstData::Select { .. } => {
                data.operands().iter().all(|&x| self.class(x).is_uniform())
            }
            _ => false,
        };
        if uniform {
            Class::uniform_runtime(64)
        } else {
            Class::NonAffine
        }
    }

    fn varying_inst(&self, data: &InstData, w: u32) -> Class {
        match data {
            InstData::Iconst { bits, .. } => Class::Affine(Tuple::uniform(
                Part::Known(Linear::constant(*bits as i64, w)),
                w,
            )),
            InstData::Splat { arg } => self.class(*arg).clone(),
            InstData::Special { reg } => match Dim::of_reg(*reg) {
                Some(d) => {
                    let mut t = Tuple::uniform(Part::zero(), w);
                    t.strides[d.index()] = Part::Known(Linear::constant(1, w));
                    Class::Affine(t)
                }
                None => Class::uniform_runtime(w),
            },
            InstData::Unary { op, arg } => self.unary(*op, *arg, w),
            InstData::Binary { op, args } => self.binary(*op, args[0], args[1], w),
            InstData::Convert { op, arg, .. } => self.convert(*op, *arg, w),
            InstData::Select { args: [c, a, b] } => self.select(*c, *a, *b),
            InstData::Icmp { cond, args } => self.icmp(*cond, *args),
            InstData::Fcmp { args, .. } => self.all_uniform(args, w),
            InstData::Call { func, args, mask } => self.call(*func, args, *mask),
            _ => Class::NonAffine,
        }
    }

    /// Whether entry parameter `i` is the hidden mask of an entry point that nothing in
    /// the module calls: a launch passes every existing lane, so it is all on there.
    fn launch_mask(&self, i: u32) -> bool {
        let f = self.func;
        f.sig.takes_mask && i as usize == f.sig.params.len() && self.launched
    }

    /// Whether a call's mask is absent or the all-on constant: a call under another
    /// mask returns 0 in the lanes off, which its summary does not describe.
    fn all_on(&self, mask: Option<Value>) -> bool {
        let Some(m) = mask else {
            return true;
        };
        match self.func.values[m].def {
            ValueDef::Result(i) => {
                matches!(self.func.insts[i], InstData::Iconst { bits, .. } if bits & 1 == 1)
            }
            ValueDef::Param(..) => false,
        }
    }

    /// `select c, a, b`: `a` (or `b`) for a constant `c`; the meet of both for a
    /// uniform `c`; otherwise `a` in the lanes where `c` is on (not when summarizing a
    /// callee, whose masks mean nothing to the caller).
    fn select(&self, c: Value, a: Value, b: Value) -> Class {
        let cond = self.class(c);
        let known = cond
            .tuple()
            .filter(|t| t.is_uniform())
            .and_then(|t| t.base.as_const());
        let (class, under) = if a == b {
            (self.class(a).clone(), None)
        } else if let Some(k) = known {
            (self.class(if k != 0 { a } else { b }).clone(), cond.under())
        } else if cond.is_uniform() {
            (self.class(a).meet(self.class(b)), cond.under())
        } else if let Some(p) = self.select_tuple(c, a, b) {
            return p;
        } else if self.seed.is_none() && self.class(a) != &Class::NonAffine {
            (self.class(a).clone(), Some(c))
        } else {
            return Class::NonAffine;
        };
        match merge_under(class.under(), under) {
            Some(u) => class.with_under(u),
            None => Class::NonAffine,
        }
    }

    /// `select c, a, b` of a varying affine predicate `c` and two tuples holding in
    /// every lane: the select tuple (not when summarizing, nor for arms that are
    /// select tuples themselves, nor for a predicate qualified by a mask).
    fn select_tuple(&self, c: Value, a: Value, b: Value) -> Option<Class> {
        if self.seed.is_some() || self.view.get().is_some() {
            return None;
        }
        let Some(Class::Predicate(pred)) = self.state[c].as_ref() else {
            return None;
        };
        if pred.uniform || pred.under.is_some() {
            return None;
        }
        let arm = |v: Value| match self.state[v].as_ref() {
            Some(Class::Affine(t)) if t.under.is_none() && t.width > 1 => Some(t.clone()),
            _ => None,
        };
        let (then, els) = (arm(a)?, arm(b)?);
        if then.width != els.width {
            return None;
        }
        let mut plain = then.clone();
        plain.under = Some(c);
        Some(Class::Piecewise(Box::new(Piecewise {
            key: c,
            pred: *pred,
            then: Class::Affine(then),
            els: Class::Affine(els),
            plain: Class::Affine(plain),
        })))
    }

    /// A call to an internal function: its summary for the arguments' classes, with
    /// the hidden mask all on in the lanes of the call's mask; the result is qualified
    /// by that mask (lanes off read 0) unless it is the all-on constant.
    fn call(&self, callee: FuncRef, args: &[Value], mask: Option<Value>) -> Class {
        let q = if self.all_on(mask) { None } else { mask };
        if q.is_some() && self.seed.is_some() {
            return Class::NonAffine;
        }
        let mut classes: Vec<Class> = args.iter().map(|&a| self.class(a).clone()).collect();
        let mut all_on = Tuple::uniform(Part::Known(Linear::constant(1, 1)), 1);
        all_on.under = q;
        classes.push(Class::Affine(all_on));
        let class = self.summary(callee, classes);
        match merge_under(class.under(), q) {
            Some(u) => class.with_under(u),
            None => Class::NonAffine,
        }
    }

    fn all_uniform(&self, args: &[Value], w: u32) -> Class {
        if args.iter().all(|&x| self.class(x).is_uniform()) {
            Class::uniform_runtime(w)
        } else {
            Class::NonAffine
        }
    }

    fn unary(&self, op: UnaryOp, arg: Value, w: u32) -> Class {
        let Some(t) = self.tuple(arg).filter(|_| w > 1) else {
            return self.all_uniform(&[arg], w);
        };
        match op {
            UnaryOp::Ineg => Class::Affine(t.scale(-1)),
            // ~x = -x - 1.
            UnaryOp::Bnot => {
                let minus_one = Tuple::uniform(Part::Known(Linear::constant(-1, w)), w);
                Class::Affine(t.scale(-1).add(&minus_one))
            }
            _ => self.all_uniform(&[arg], w),
        }
    }

    fn binary(&self, op: BinaryOp, a: Value, b: Value, w: u32) -> Class {
        let (Some(ta), Some(tb)) = (self.tuple(a), self.tuple(b)) else {
            return self.all_uniform(&[a, b], w);
        };
        if w == 1 {
            return self.all_uniform(&[a, b], w);
        }
        let cb = tb.is_uniform().then(|| tb.base.as_const()).flatten();
        let shift = |k: i64| k.rem_euclid(i64::from(w)) as u32;
        match op {
            BinaryOp::Iadd => Class::Affine(ta.add(tb)),
            BinaryOp::Isub => Class::Affine(ta.add(&tb.scale(-1))),
            BinaryOp::Imul if tb.is_uniform() => Class::Affine(ta.mul_uniform(tb)),
            BinaryOp::Imul if ta.is_uniform() => Class::Affine(tb.mul_uniform(ta)),
            BinaryOp::Ishl => match cb {
                Some(k) => Class::Affine(ta.scale(1i64.wrapping_shl(shift(k)))),
                None if tb.is_uniform() => Class::Affine(Tuple {
                    width: w,
                    base: Part::Runtime,
                    strides: ta.strides.clone().map(|s| s.mul(&Part::Runtime, w)),
                    assumes: ta.assumes_union(tb),
                    under: None,
                }),
                None => Class::NonAffine,
            },
            _ if ta.is_uniform() && tb.is_uniform() => Class::uniform_runtime(w),
            BinaryOp::Urem => self.low_bits(ta, cb, w),
            BinaryOp::Band => self.low_bits(ta, cb.map(|m| m.wrapping_add(1)), w),
            BinaryOp::Udiv => self.divide(a, ta, cb, false),
            BinaryOp::Ushr | BinaryOp::Sshr => {
                let c = cb.map(|k| 1i64.wrapping_shl(shift(k)));
                self.divide(a, ta, c, op == BinaryOp::Sshr)
            }
            _ => Class::NonAffine,
        }
    }

    /// `t mod c` for a power of two `c` dividing every stride: the same in every
    /// thread (exact even with wrapping, since `c` divides `2^w`).
    fn low_bits(&self, t: &Tuple, c: Option<i64>, w: u32) -> Class {
        match c {
            Some(c) if c > 0 && (c as u64).is_power_of_two() && t.div_strides(c).is_some() => {
                Class::uniform_runtime(w)
            }
            _ => Class::NonAffine,
        }
    }

    /// `t / c` (floor) for a positive `c` dividing every stride: strides divided, base at
    /// run time, assuming `operand` does not wrap.
    fn divide(&self, operand: Value, t: &Tuple, c: Option<i64>, signed: bool) -> Class {
        let Some(c) = c.filter(|&c| c > 0) else {
            return Class::NonAffine;
        };
        let Some(strides) = t.div_strides(c) else {
            return Class::NonAffine;
        };
        let mut assumes = t.assumes.clone();
        assumes.push(NoWrap {
            value: operand,
            signed,
        });
        assumes.sort();
        assumes.dedup();
        Class::Affine(Tuple {
            width: t.width,
            base: Part::Runtime,
            strides,
            assumes,
            under: None,
        })
    }

    fn convert(&self, op: ConvOp, arg: Value, w: u32) -> Class {
        let from_ty = self.func.value_type(arg);
        let (Some(t), Some(from)) = (self.tuple(arg), int_width(from_ty, self.ptr_size)) else {
            return self.all_uniform(&[arg], w);
        };
        match op {
            ConvOp::Bitcast if from == w => Class::Affine(t.clone()),
            ConvOp::Ireduce => Class::Affine(Tuple {
                width: w,
                base: t.base.rewidth(from, w, None),
                strides: t.strides.clone().map(|s| s.rewidth(from, w, None)),
                assumes: t.assumes.clone(),
                under: None,
            }),
            ConvOp::Sext | ConvOp::Zext if from > 1 => {
                let signed = op == ConvOp::Sext;
                Class::Affine(self.extend(arg, t, from, w, signed))
            }
            _ => self.all_uniform(&[arg], w),
        }
    }

    /// `sext`/`zext` of tuple `t` of width `from` to width `to` (see the module docs).
    fn extend(&self, arg: Value, t: &Tuple, from: u32, to: u32, signed: bool) -> Tuple {
        // A constant, or a lone atom of exactly the narrow width, extends exactly.
        // When summarizing a callee, atoms may be the caller's values (from the
        // seeds), which this function's types do not describe: no lone atoms then.
        let lone_atom = |l: &Linear| {
            self.seed.is_none()
                && l.constant == 0
                && matches!(l.terms[..], [(a, 1)] if self.width(a.value) == Some(from))
        };
        let base = match &t.base {
            Part::Known(l) if l.as_const().is_some() || lone_atom(l) => {
                Part::Known(l.rewidth(from, to, Some(signed)))
            }
            _ if t.is_uniform() => Part::Runtime,
            other => other.rewidth(from, to, Some(signed)),
        };
        if t.is_uniform() {
            return Tuple {
                width: to,
                base,
                strides: [Part::zero(), Part::zero(), Part::zero(), Part::zero()],
                assumes: t.assumes.clone(),
                under: None,
            };
        }
        let mut assumes = t.assumes.clone();
        if !self.lane_range_fits(t, from, signed) {
            assumes.push(NoWrap { value: arg, signed });
            assumes.sort();
            assumes.dedup();
        }
        Tuple {
            width: to,
            base,
            strides: t.strides.clone().map(|s| s.rewidth(from, to, Some(signed))),
            assumes,
            under: None,
        }
    }

    /// Whether extending `t` (width `from`) is provably exact: `t` is one index register
    /// (read as a signed `i32`, the meaning of an index in a tuple), or has a constant
    /// base and a constant stride in the lane dimension only and stays in the signed or
    /// unsigned range of its width over `0..lane_count` (thread indices have no static
    /// bound).
    fn lane_range_fits(&self, t: &Tuple, from: u32, signed: bool) -> bool {
        // An index register itself: indices are read as signed `i32` by definition.
        let nonzero: Vec<Dim> = Dim::ALL
            .into_iter()
            .filter(|&d| !t.stride(d).is_zero())
            .collect();
        if let [d] = nonzero[..] {
            if signed && from == 32 && t.base.is_zero() && t.const_stride(d) == Some(1) {
                return true;
            }
        }
        let (Some(b), Some(s)) = (t.base.as_const(), t.const_stride(Dim::Lane)) else {
            return false;
        };
        if Dim::ALL[1..].iter().any(|&d| !t.stride(d).is_zero()) || from >= 64 {
            return false;
        }
        let read = |c: i64| -> i128 {
            if signed {
                i128::from(c)
            } else {
                i128::from(c) & ((1i128 << from) - 1)
            }
        };
        let (lo, hi) = if signed {
            (-(1i128 << (from - 1)), (1i128 << (from - 1)) - 1)
        } else {
            (0, (1i128 << from) - 1)
        };
        let last = read(b) + read(s) * i128::from(self.lane_count.max(1) - 1);
        [read(b), last].iter().all(|x| (lo..=hi).contains(x))
    }

    fn icmp(&self, cond: IntCC, args: [Value; 2]) -> Class {
        let (Some(a), Some(b)) = (self.tuple(args[0]), self.tuple(args[1])) else {
            return Class::NonAffine;
        };
        if !a.is_uniform() && !b.is_uniform() {
            return Class::NonAffine;
        }
        Class::Predicate(Pred {
            cond,
            args,
            uniform: a.is_uniform() && b.is_uniform(),
            under: None,
        })
    }
}

// ---------------------------------------------------------------------------------
// Text: the `--emit ir` annotations.

fn linear_text(func: &Function, ptr_size: u32, names: &Names, l: &Linear, w: u32) -> String {
    let mut parts: Vec<(bool, String)> = Vec::new();
    // In the order of the printed names, so the text does not depend on numbering.
    let mut terms = l.terms.to_vec();
    terms.sort_by_key(|(a, _)| (names.value(a.value), a.signed));
    for (a, c) in terms {
        let name = names.value(a.value);
        let aw = int_width(func.value_type(a.value), ptr_size).unwrap_or(w);
        let atom = if aw < w {
            format!("{}({name})", if a.signed { "sext" } else { "zext" })
        } else if aw > w {
            format!("trunc({name})")
        } else {
            name.to_string()
        };
        parts.push(match c {
            1 => (false, atom),
            -1 => (true, atom),
            c if c < 0 => (true, format!("{}*{atom}", c.unsigned_abs())),
            c => (false, format!("{c}*{atom}")),
        });
    }
    if l.constant != 0 || parts.is_empty() {
        parts.push((l.constant < 0, l.constant.unsigned_abs().to_string()));
    }
    join_signed(parts)
}

fn join_signed(parts: Vec<(bool, String)>) -> String {
    let mut out = String::new();
    for (i, (neg, text)) in parts.into_iter().enumerate() {
        match (i, neg) {
            (0, false) => {}
            (0, true) => out.push('-'),
            (_, false) => out.push_str(" + "),
            (_, true) => out.push_str(" - "),
        }
        out.push_str(&text);
    }
    out
}

/// `v42 + 4*sext(v37) + 4*lane`; run-time parts print as `base(vN)` / `stride(vN)`.
pub fn tuple_text(func: &Function, ptr_size: u32, names: &Names, v: Value, t: &Tuple) -> String {
    let me = names.value(v);
    let mut out = match &t.base {
        Part::Known(l) if l.as_const() == Some(0) && !t.is_uniform() => String::new(),
        Part::Known(l) => linear_text(func, ptr_size, names, l, t.width),
        Part::Runtime => format!("base({me})"),
    };
    for d in Dim::ALL {
        let (neg, stride) = match t.stride(d) {
            s if s.is_zero() => continue,
            Part::Known(l) => match l.as_const() {
                Some(1) => (false, String::new()),
                Some(-1) => (true, String::new()),
                Some(c) => (c < 0, format!("{}*", c.unsigned_abs())),
                None => (
                    false,
                    format!("({})*", linear_text(func, ptr_size, names, l, t.width)),
                ),
            },
            Part::Runtime => (false, format!("stride({me})*")),
        };
        let sep = match (out.is_empty(), neg) {
            (true, false) => "",
            (true, true) => "-",
            (false, false) => " + ",
            (false, true) => " - ",
        };
        out.push_str(&format!("{sep}{stride}{}", d.name()));
    }
    if !t.assumes.is_empty() {
        let list: Vec<String> = t
            .assumes
            .iter()
            .map(|n| {
                let kind = if n.signed { "signed" } else { "unsigned" };
                format!("{} {kind}", names.value(n.value))
            })
            .collect();
        out.push_str(&format!(" [no wrap: {}]", list.join(", ")));
    }
    if let Some(m) = t.under {
        out.push_str(&format!(" [under {}]", names.value(m)));
    }
    out
}

/// The annotation `--emit ir` prints after a varying-typed value: `affine ...`,
/// `uniform ...`, `affine predicate ...` or `non-affine`; nothing for values typed
/// uniform (their type already says it).
pub fn annotation(
    func: &Function,
    ptr_size: u32,
    result: &FunctionAffine,
    names: &Names,
    v: Value,
) -> Option<String> {
    if !func.values.get(v)?.ty.varying {
        return None;
    }
    Some(match result.class(v) {
        Class::NonAffine => "non-affine".to_string(),
        Class::Affine(t) if t.width <= 1 || int_width(func.value_type(v), ptr_size).is_none() => {
            debug_assert!(t.is_uniform());
            "uniform".to_string()
        }
        Class::Affine(t) => {
            let kind = if t.is_uniform() { "uniform" } else { "affine" };
            format!("{kind} {}", tuple_text(func, ptr_size, names, v, t))
        }
        Class::Piecewise(p) => match p.arms() {
            Some((t, e)) => format!(
                "select {} {}, {} ? {} : {}",
                p.pred.cond.name(),
                names.value(p.pred.args[0]),
                names.value(p.pred.args[1]),
                tuple_text(
                    func,
                    ptr_size,
                    names,
                    v,
                    &Tuple {
                        under: None,
                        ..t.clone()
                    }
                ),
                tuple_text(func, ptr_size, names, v, e)
            ),
            None => "non-affine".to_string(),
        },
        Class::Predicate(p) => format!(
            "{} predicate {} {}, {}{}",
            if p.uniform { "uniform" } else { "affine" },
            p.cond.name(),
            names.value(p.args[0]),
            names.value(p.args[1]),
            p.under
                .map(|m| format!(" [under {}]", names.value(m)))
                .unwrap_or_default()
        ),
    })
}

/// `module` as text with the affine classes as comments.
pub fn annotated_module_text(module: &Module, result: &ModuleAffine) -> String {
    let mut out = String::new();
    crate::ir::write::write_module_annotated(&mut out, module, &|fref, names, v| {
        let func = &module.functions[fref];
        annotation(func, module.ptr_size, &result.functions[fref], names, v)
    })
    .expect("writing to a String cannot fail");
    out
}

/// `module` with both the uniformity and the affine annotations (`--emit ir`):
/// `divergent <- v56; affine v42 + 4*lane`.
pub fn annotated_module_text_with_uniformity(
    module: &Module,
    uniformity: &super::uniformity::ModuleUniformity,
    affine: &ModuleAffine,
) -> String {
    let mut out = String::new();
    crate::ir::write::write_module_annotated(&mut out, module, &|fref, names, v| {
        let func = &module.functions[fref];
        let u = super::uniformity::annotation(module, func, &uniformity.functions[fref], names, v);
        let a = annotation(func, module.ptr_size, &affine.functions[fref], names, v);
        match (u, a) {
            (Some(u), Some(a)) => Some(format!("{u}; {a}")),
            (u, a) => u.or(a),
        }
    })
    .expect("writing to a String cannot fail");
    out
}

// ---------------------------------------------------------------------------------
// Statistics.

/// Static counts of memory accesses by the class of their address: what share of a
/// kernel's gathers and scatters DAC can decouple.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccessStats {
    /// Loads with a varying address (one access per lane).
    pub loads: u32,
    /// ... of which the address is a tuple (affine or uniform-valued).
    pub affine_loads: u32,
    /// Stores with a varying address.
    pub stores: u32,
    pub affine_stores: u32,
    /// Loads and stores with a uniform-typed address (one access per gang).
    pub scalar_accesses: u32,
}

impl AccessStats {
    /// Affine varying-address loads over all varying-address loads (1 when none).
    pub fn load_fraction(&self) -> f64 {
        fraction(self.affine_loads, self.loads)
    }

    /// Affine varying-address loads and stores over all of them (1 when none).
    pub fn access_fraction(&self) -> f64 {
        fraction(
            self.affine_loads + self.affine_stores,
            self.loads + self.stores,
        )
    }

    pub fn add(&mut self, other: &AccessStats) {
        self.loads += other.loads;
        self.affine_loads += other.affine_loads;
        self.stores += other.stores;
        self.affine_stores += other.affine_stores;
        self.scalar_accesses += other.scalar_accesses;
    }
}

fn fraction(a: u32, b: u32) -> f64 {
    if b == 0 {
        1.0
    } else {
        f64::from(a) / f64::from(b)
    }
}

/// Counts the loads and stores of `func` (reachable or not) whose space `keep` accepts.
pub fn access_stats(
    func: &Function,
    result: &FunctionAffine,
    keep: impl Fn(crate::ir::Space) -> bool,
) -> AccessStats {
    let mut s = AccessStats::default();
    for &block in &func.layout {
        for &inst in &func.blocks[block].insts {
            let (is_load, space, addr, mask) = match &func.insts[inst] {
                InstData::Load {
                    space, addr, mask, ..
                } => (true, *space, *addr, *mask),
                InstData::Store {
                    space, addr, mask, ..
                } => (false, *space, *addr, *mask),
                _ => continue,
            };
            if !keep(space) {
                continue;
            }
            if !func.value_type(addr).varying {
                s.scalar_accesses += 1;
                continue;
            }
            let affine = u32::from(result.address_tuple(addr, mask).is_some());
            if is_load {
                s.loads += 1;
                s.affine_loads += affine;
            } else {
                s.stores += 1;
                s.affine_stores += affine;
            }
        }
    }
    s
}

// ---------------------------------------------------------------------------------
// Soundness checks at run time.

/// Instruments `module` to check the analysis at run time (the soundness test): after
/// the definition of every varying integer or pointer value with a tuple whose strides
/// are all known, it computes `d = v - sum(stride * index)` and checks that `d` is the
/// same in every existing lane (`reduce_equal`) and, when the base is known, equal to
/// it. Each block's terminator runs only if all of the block's checks hold and traps
/// (`unreachable`) otherwise. Claims are about every lane, so the checks use an all-on
/// mask. Assumptions ([`NoWrap`]) are checked too, through the wide tuple's value.
/// A select tuple ([`Piecewise`]) is checked arm by arm: its `then` tuple in the lanes
/// where its comparison holds, its `else` tuple in the others.
pub fn insert_affine_checks(module: &mut Module, result: &ModuleAffine) {
    insert_affine_checks_where(module, result, &|_| true);
}

/// [`insert_affine_checks`] for the tuples `keep` accepts (e.g. only the exact ones).
pub fn insert_affine_checks_where(
    module: &mut Module,
    result: &ModuleAffine,
    keep: &dyn Fn(&Tuple) -> bool,
) {
    let ptr_size = module.ptr_size;
    for (fref, func) in module.functions.iter_mut() {
        insert_function_checks(func, &result.functions[fref], ptr_size, keep);
    }
}

/// The integer type of width `w` (`None` for widths without one).
fn int_type(w: u32) -> Option<Scalar> {
    match w {
        8 => Some(Scalar::I8),
        16 => Some(Scalar::I16),
        32 => Some(Scalar::I32),
        64 => Some(Scalar::I64),
        _ => None,
    }
}

/// Appends instructions to a list under construction (the block's new order).
struct Emitter<'a> {
    func: &'a mut Function,
    block: Block,
    new: &'a mut Vec<crate::ir::Inst>,
    ptr_size: u32,
}

impl Emitter<'_> {
    fn emit(&mut self, data: InstData, ty: Type) -> Value {
        super::checks::emit(self.func, self.block, self.new, data, ty)
    }

    fn iconst(&mut self, ty: Type, bits: i64) -> Value {
        self.emit(
            InstData::Iconst {
                ty,
                bits: bits as u64,
            },
            ty,
        )
    }

    fn binary(&mut self, op: BinaryOp, a: Value, b: Value, ty: Type) -> Value {
        self.emit(InstData::Binary { op, args: [a, b] }, ty)
    }

    /// `x` (integer or pointer) as the integer type `to`, extending as `signed` says.
    fn int_of(&mut self, x: Value, signed: bool, to: Scalar) -> Value {
        let ty = self.func.value_type(x);
        let from = int_width(ty, self.ptr_size).unwrap_or(64);
        let target = Type {
            scalar: to,
            varying: ty.varying,
        };
        let op = if ty.scalar == to {
            return x;
        } else if from == to.bits() {
            ConvOp::Bitcast
        } else if from > to.bits() {
            ConvOp::Ireduce
        } else if signed {
            ConvOp::Sext
        } else {
            ConvOp::Zext
        };
        self.emit(
            InstData::Convert {
                op,
                arg: x,
                to: target,
            },
            target,
        )
    }

    /// The uniform value of `l` as an integer of type `s`.
    fn linear(&mut self, l: &Linear, s: Scalar) -> Value {
        let ty = Type::uniform(s);
        let mut acc = self.iconst(ty, l.constant);
        for &(a, c) in &l.terms {
            let x = self.int_of(a.value, a.signed, s);
            let k = self.iconst(ty, c);
            let term = self.binary(BinaryOp::Imul, x, k, ty);
            acc = self.binary(BinaryOp::Iadd, acc, term, ty);
        }
        acc
    }

    /// The uniform `bool` that holds when `v` matches its tuple `t` in every lane.
    fn check(&mut self, v: Value, t: &Tuple) -> Option<Value> {
        self.check_in(v, t, None)
    }

    /// The uniform `bool` that holds when select tuple `p`'s arms hold: `v` matches
    /// the `then` tuple in the lanes where `p`'s comparison holds and the `else` tuple
    /// in the others.
    fn check_piecewise(&mut self, v: Value, p: &Piecewise) -> Option<Value> {
        let (t, e) = p.arms()?;
        let taken = self.emit(
            InstData::Icmp {
                cond: p.pred.cond,
                args: p.pred.args,
            },
            Type::MASK,
        );
        let mut not_taken = self.emit(
            InstData::Unary {
                op: UnaryOp::Bnot,
                arg: taken,
            },
            Type::MASK,
        );
        let mut taken = taken;
        if let Some(m) = p.pred.under {
            // The comparison is claimed only in `m`'s lanes.
            taken = self.binary(BinaryOp::Band, taken, m, Type::MASK);
            not_taken = self.binary(BinaryOp::Band, not_taken, m, Type::MASK);
        }
        let then_ok = self.check_in(v, t, Some(taken))?;
        let else_ok = self.check_in(v, e, Some(not_taken))?;
        Some(self.binary(BinaryOp::Band, then_ok, else_ok, Type::BOOL))
    }

    /// The uniform `bool` that holds when `v` matches `t` in the lanes of `lanes`
    /// (all when `None`) that `t` is claimed in.
    fn check_in(&mut self, v: Value, t: &Tuple, lanes: Option<Value>) -> Option<Value> {
        let s = int_type(t.width)?;
        let vty = Type::varying(s);
        let mut diff = self.int_of(v, true, s);
        for d in Dim::ALL {
            let Part::Known(l) = t.stride(d) else {
                return None;
            };
            if l.as_const() == Some(0) {
                continue;
            }
            let stride = self.linear(l, s);
            let stride = self.emit(InstData::Splat { arg: stride }, vty);
            let index = self.emit(
                InstData::Special { reg: d.reg() },
                Type::varying(Scalar::I32),
            );
            let index = self.int_of(index, true, s);
            let term = self.binary(BinaryOp::Imul, index, stride, vty);
            diff = self.binary(BinaryOp::Isub, diff, term, vty);
        }
        let under = match (t.under, lanes) {
            (Some(m), Some(l)) => Some(self.binary(BinaryOp::Band, m, l, Type::MASK)),
            (m, l) => m.or(l),
        };
        let all = match under {
            Some(m) => m,
            None => self.iconst(Type::MASK, 1),
        };
        Some(match &t.base {
            Part::Known(l) => {
                let base = self.linear(l, s);
                let base = self.emit(InstData::Splat { arg: base }, vty);
                let mut eq = self.emit(
                    InstData::Icmp {
                        cond: IntCC::Eq,
                        args: [diff, base],
                    },
                    Type::MASK,
                );
                if let Some(m) = under {
                    // Lanes off in `m` pass.
                    let off = self.emit(
                        InstData::Unary {
                            op: UnaryOp::Bnot,
                            arg: m,
                        },
                        Type::MASK,
                    );
                    eq = self.binary(BinaryOp::Bor, eq, off, Type::MASK);
                }
                self.emit(
                    InstData::Lane {
                        op: crate::ir::LaneOp::All,
                        args: smallvec::smallvec![eq],
                    },
                    Type::BOOL,
                )
            }
            Part::Runtime => self.emit(
                InstData::Lane {
                    op: crate::ir::LaneOp::ReduceEqual,
                    args: smallvec::smallvec![diff, all],
                },
                Type::BOOL,
            ),
        })
    }
}

fn insert_function_checks(
    func: &mut Function,
    result: &FunctionAffine,
    ptr_size: u32,
    keep: &dyn Fn(&Tuple) -> bool,
) {
    super::checks::instrument(func, |func, block, v, new| {
        if !func.value_type(v).varying {
            return None;
        }
        int_width(func.value_type(v), ptr_size)?;
        // (An instruction's result: the compared values are defined before it.)
        let defined_here = matches!(func.values[v].def, crate::ir::ValueDef::Result(_));
        if let Some(p) = result.class(v).piecewise().filter(|_| defined_here) {
            let (t, e) = p.arms()?;
            if t.width <= 1 || !keep(t) || !keep(e) {
                return None;
            }
            let p = p.clone();
            let mut em = Emitter {
                func,
                block,
                new,
                ptr_size,
            };
            return em.check_piecewise(v, &p);
        }
        let t = result.tuple(v).filter(|t| t.width > 1 && keep(t))?.clone();
        let mut em = Emitter {
            func,
            block,
            new,
            ptr_size,
        };
        em.check(v, &t)
    });
}

#[cfg(test)]
mod tests;
