//! Shuffle detection: which loads can be served by another load's register, from a
//! neighbouring lane of the same gang (a warp shuffle) or from the same lane (plain
//! reuse), instead of going to memory.
//!
//! **What a pair claims.** For a load `B` the analysis may name an earlier load `A` and
//! an integer `delta` (`N`, with `|N| < programCount`) such that, for every value of
//! the uniform inputs and in every lane `l` whose *source lane* `l + N`
//!
//! 1. exists in the same gang (`0 <= programIndex + N < programCount`),
//! 2. is on in the loads' mask (both loads have the same mask, or none),
//! 3. and, when the address depends on `threadIdx` ([`Pair::row`]), lies in the same
//!    row of the block (`0 <= threadIdx.x + N < blockDim.x`),
//!
//! `B` reads in lane `l` the very bytes `A` read in lane `l + N`, and no store, atomic,
//! call or barrier that may touch them comes between the two. So `B(l) = A(l + N)`:
//! a shuffle down (`N > 0`) or up (`N < 0`) of `A`'s register gives `B` in those lanes,
//! and the lanes without a source (gang or row edges, lanes off) must reload. For
//! `N = 0` the source lane is the lane itself: `B` is `A` wherever `B`'s mask is on.
//! Only neighbours along `programIndex` / `threadIdx.x` share a gang row: lanes of one
//! gang in two rows of a 2-D block (a row narrower than the gang) differ in
//! `threadIdx.y`, which condition 3 leaves to the reload.
//!
//! **The rule.** Every integer or pointer value gets a linear [`Form`] modulo `2^w`,
//! `constant + sum(coef * leaf)`, built in dominance order (no recursion) through
//! `iadd`, `isub`, `ineg`, `bnot`, `imul` and `ishl` by constants, `splat` and
//! same-width `bitcast`. Leaves are the index registers (`programIndex` and
//! `threadIdx.x` move by `N` from lane `l` to `l + N`; `threadIdx.y/z` do not within a
//! row), other special registers (uniform), extensions `sext`/`zext` of a form
//! (interned, so equal extensions are one leaf), and opaque values whose affine tuple
//! ([`super::affine`]) is exact (no no-wrap assumption) with compile-time `programIndex`
//! and `threadIdx.x` strides: such a leaf moves by `(stride_lane + stride_x) * N`,
//! whatever its (uniform, possibly run-time) base.
//!
//! An address is then split into a *channel*: the one linear form that carries the
//! lane, with its constant `k` and its lane slope `s`, under a lane-free *context*
//! (the outer forms around an extension of the channel, each of slope 0). Two
//! addresses with the same context and channel terms (the [`ChannelKey`]) differ only
//! in `k`: moving `N` lanes adds `s * N` to the channel, and a context is a function
//! of the channel and of lane-free values only, so
//! `A(l + N) = B(l)` whenever `k_A + s*N = k_B (mod 2^w)`, exactly, for every value of
//! the symbolic terms: no solver, no assumption about overflow (an extension is never
//! pushed through its operand; equal operands give equal extensions). An address whose
//! lane dependence passes through two extensions, or mixes an extension with other
//! lane terms, is not a candidate.
//!
//! **Selection.** Loads are visited block by block (straight-line code: one block is
//! one iteration of any loop around it; a value from another block may come from
//! another iteration, so pairs never cross blocks). Candidates are grouped in a hash
//! map by (key, type, space, mask, `k`); for each load `B` the `2 * programCount - 1`
//! possible `k_A` are looked up in the order `N = 0, 1, -1, 2, -2, ...`, so the
//! smallest `|N|` wins (down before up), and the latest load at that `k` is taken. A
//! load that got a pair is never a source (no shuffle of a shuffled value). Stores
//! and atomics invalidate the candidates of the spaces they may alias (generic aliases
//! every space) by bumping a per-space epoch; calls and barriers (other gangs' stores
//! become visible) invalidate all. The cost is linear in the instructions times
//! `programCount`.
//!
//! **Halos.** When several shuffled loads `B1..Bk` take their values from one source
//! `A` on one side (`N > 0`, the right; `N < 0`, the left), each would reload its own
//! edge lanes, though together they read one run of elements past the warp's row
//! segment. [`FunctionShuffles::plan_halos`] names, per side, the load `B*` with the
//! largest `|N|` (the first of them on a tie): its edge reload reads the `|N*|`
//! elements just past the segment (right: its lanes `W - N*..W`, at its own addresses;
//! left: its lanes `0..-N*`), the side's *halo vector*. Every other `Bi` of the side
//! takes its edge lanes from `B*`'s register by a second move, [`Edge`]:
//! `Bi(l) = B*(l + Ni - N*)`. Proof: `B*(m) = A(m + N*)` and `Bi(l) = A(l + Ni)` hold
//! as identities of the channel (both pairs share `A`'s key, so moving `m` to
//! `l + Ni - N*` moves the channel by exactly the difference), so both name the bytes
//! of the address `A`'s form gives at `l + Ni`, in lane `l` as long as lane
//! `l + Ni - N*` exists, is on, and (for [`Pair::row`]) is in `l`'s row. An edge lane
//! `l` (`l + Ni` past the warp, `0 < |Ni| < |N*| < W`) always has that lane in the
//! warp: `l + Ni - N*` lies in `B*`'s own edge, whose value its reload gave it. Nothing
//! new is read: the halo is `B*`'s own reload, at `B*`'s addresses, in `B*`'s lanes
//! (so predicated as the program's access is, it reads only what an active lane of
//! `B*` would have read and cannot fault where the program does not). Which lanes may
//! use the halo (whole warps, rows, lanes off) is the code generator's rule, as for
//! the first move; the others reload.
//!
//! `B*` may come after `Bi` in the block (stencils load their row's offsets in any
//! order). Then `Bi` is selected right after `B*`, a move past pure instructions and
//! loads only (both pairs share `A`'s epoch: no store, call or barrier between), which
//! the plan allows only when nothing reads `Bi`'s result before `B*` (uses in later
//! blocks come after the whole block). Plain reuse and ties (`Ni = N*`) get no edge.
//!
//! Results live in a side table ([`FunctionShuffles`]), never in the IR.

use cranelift_entity::SecondaryMap;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::affine::{wrap, Dim, FunctionAffine, ModuleAffine};
use crate::ir::dominance::DominatorTree;
use crate::ir::write::Names;
use crate::ir::{
    BinaryOp, ConvOp, FuncRef, Function, Inst, InstData, Module, Scalar, Space, SpecialReg, Type,
    UnaryOp, Value,
};

/// One load served from another: `load(l) = source(l + delta)` in the lanes the module
/// documentation lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    /// The load replaced (`B`).
    pub load: Inst,
    /// The earlier load whose register serves it (`A`), never itself replaced.
    pub source: Inst,
    /// `N`: lane `l` takes the source's value of lane `l + N` (0: plain reuse).
    pub delta: i32,
    /// The address depends on `threadIdx`: lanes whose source lane is in another row
    /// of the block (`threadIdx.x + N` outside `0..blockDim.x`) must reload.
    pub row: bool,
    /// Where the edge lanes (those without a source lane) take their value instead of
    /// reloading: the side's halo ([`FunctionShuffles::plan_halos`]); `None`: reload.
    pub edge: Option<Edge>,
}

/// The edge lanes of a shuffled load served from its side's halo: `load(l) =
/// carrier(l + delta)`, where the carrier is the load of the same source and side
/// with the largest `|N|`, whose own edge reload is the halo vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The side's farthest load (`B*`), itself a shuffled load that reloads its edge.
    pub carrier: Inst,
    /// `N - N*`: towards the warp's middle (negative on the right side, where `N > 0`).
    pub delta: i32,
}

impl Pair {
    /// A cross-lane move (not plain reuse).
    pub fn is_shuffle(&self) -> bool {
        self.delta != 0
    }
}

/// The pairs of one function, in program order.
#[derive(Clone, Debug, Default)]
pub struct FunctionShuffles {
    pub pairs: Vec<Pair>,
    by_load: FxHashMap<Inst, usize>,
    sources: rustc_hash::FxHashSet<Inst>,
    /// Loads that reload their own edge lanes though a halo could serve them (the
    /// `auto` cost model's choice): [`FunctionShuffles::plan_halos`] leaves them out.
    own_edges: rustc_hash::FxHashSet<Inst>,
    /// Loads with a varying address (the denominator of the statistics).
    pub varying_loads: u32,
}

impl FunctionShuffles {
    /// The pair serving `load`, if any.
    pub fn pair(&self, load: Inst) -> Option<&Pair> {
        self.by_load.get(&load).map(|&i| &self.pairs[i])
    }

    /// Pairs with `delta != 0`.
    pub fn shuffles(&self) -> usize {
        self.pairs.iter().filter(|p| p.is_shuffle()).count()
    }

    /// Pairs with `delta == 0`.
    pub fn reuses(&self) -> usize {
        self.pairs.len() - self.shuffles()
    }

    /// Whether some pair takes its value from `load`.
    pub fn is_source(&self, load: Inst) -> bool {
        self.sources.contains(&load)
    }

    /// Plans the halos of `func`'s pairs (module documentation, "Halos"): for each
    /// source and side, the pairs with a smaller `|N|` than the side's farthest take
    /// their edge lanes from it, when they may be selected after it. Replaces every
    /// earlier plan, so it is run again when pairs are dropped.
    pub fn plan_halos(&mut self, func: &Function) {
        let (pos, first_use) = self.positions(func);
        let mut sides: FxHashMap<(Inst, bool), SmallVec<[usize; 4]>> = FxHashMap::default();
        for (i, p) in self.pairs.iter_mut().enumerate() {
            p.edge = None;
            if p.is_shuffle() {
                sides.entry((p.source, p.delta > 0)).or_default().push(i);
            }
        }
        for members in sides.values() {
            let far = members
                .iter()
                .copied()
                .reduce(|a, b| {
                    let (na, nb) = (self.pairs[a].delta.abs(), self.pairs[b].delta.abs());
                    if nb > na {
                        b
                    } else {
                        a
                    }
                })
                .expect("a side has a pair");
            let carrier = self.pairs[far];
            for &i in members {
                let p = self.pairs[i];
                let before = pos[&p.load] < pos[&carrier.load];
                let unread = first_use
                    .get(&p.load)
                    .is_none_or(|&u| u > pos[&carrier.load]);
                let own = self.own_edges.contains(&p.load);
                if p.delta.abs() < carrier.delta.abs() && (!before || unread) && !own {
                    self.pairs[i].edge = Some(Edge {
                        carrier: carrier.load,
                        delta: p.delta - carrier.delta,
                    });
                }
            }
        }
    }

    /// The position of each paired load in its block, and of the first instruction of
    /// that block that reads its result (pairs never cross blocks).
    fn positions(&self, func: &Function) -> (FxHashMap<Inst, usize>, FxHashMap<Inst, usize>) {
        let mut pos = FxHashMap::default();
        let mut first_use = FxHashMap::default();
        let loads: FxHashMap<Value, Inst> = self
            .pairs
            .iter()
            .filter_map(|p| Some((func.inst_result(p.load)?, p.load)))
            .collect();
        for &block in &func.layout {
            for (k, &inst) in func.blocks[block].insts.iter().enumerate() {
                if self.by_load.contains_key(&inst) {
                    pos.insert(inst, k);
                }
                func.insts[inst].for_each_operand(|v| {
                    if let Some(&load) = loads.get(&v) {
                        first_use.entry(load).or_insert(k);
                    }
                });
            }
        }
        (pos, first_use)
    }

    /// Makes `loads` reload their own edge lanes at the next [`Self::plan_halos`].
    pub fn keep_own_edges(&mut self, loads: impl IntoIterator<Item = Inst>) {
        self.own_edges.extend(loads);
    }

    /// Keeps the pairs `keep` accepts (the others' loads stay loads).
    pub fn retain(&mut self, keep: impl Fn(&Pair) -> bool) {
        self.pairs.retain(|p| keep(p));
        self.by_load = self
            .pairs
            .iter()
            .enumerate()
            .map(|(i, p)| (p.load, i))
            .collect();
        self.sources = self.pairs.iter().map(|p| p.source).collect();
    }
}

/// How code generation served one IR load from another register ([`ServedCounts::of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Served {
    /// The pair's `N`.
    pub delta: i32,
    /// What became of its edge lanes.
    pub edge: EdgeService,
}

/// The edge lanes of a served load: the lanes the move from the source cannot serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeService {
    /// None to serve (plain reuse), or left wrong on purpose (the ablations).
    Nothing,
    /// The load reloads them itself (a carrier's reload is also its side's halo).
    Reload,
    /// Taken from the halo of this carrier ([`Edge`]).
    Halo(Inst),
}

impl Served {
    /// A load served without edge handling (plain reuse, ablations).
    pub fn bare(delta: i32) -> Served {
        Served {
            delta,
            edge: EdgeService::Nothing,
        }
    }
}

/// What code generation made of a function's pairs: the statistics `--stats` reports
/// (`static_*`). A back end counts each IR load it served from another register once,
/// however many copies of the load it emitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServedCounts {
    /// Loads with a varying address ([`FunctionShuffles::varying_loads`]).
    pub loads: u32,
    /// Loads served by a cross-lane move (`N != 0`).
    pub shuffles: u32,
    /// Loads served by the same lane's register (`N = 0`).
    pub reuses: u32,
    /// The sum of `|N|` over the shuffles.
    pub distance: u64,
    /// Shuffled loads that reload their own edge lanes (the halo carriers among them).
    pub edge_reloads: u32,
    /// Halo vectors: the carriers whose edge reload serves other loads' edge lanes.
    pub halo_loads: u32,
    /// Shuffled loads whose edge lanes come from a halo, with no reload of their own
    /// in a whole warp or gang.
    pub halo_shuffles: u32,
}

impl ServedCounts {
    /// The counts of the loads `served` lists, over `loads` varying loads.
    pub fn of(loads: u32, served: impl IntoIterator<Item = Served>) -> ServedCounts {
        let mut c = ServedCounts {
            loads,
            ..ServedCounts::default()
        };
        let mut carriers = rustc_hash::FxHashSet::default();
        for s in served {
            if s.delta == 0 {
                c.reuses += 1;
            } else {
                c.shuffles += 1;
                c.distance += u64::from(s.delta.unsigned_abs());
            }
            match s.edge {
                EdgeService::Nothing => {}
                EdgeService::Reload => c.edge_reloads += 1,
                EdgeService::Halo(carrier) => {
                    c.halo_shuffles += 1;
                    carriers.insert(carrier);
                }
            }
        }
        c.halo_loads = carriers.len() as u32;
        c
    }

    /// The mean `|N|` of the shuffles (NaN without one).
    pub fn mean_distance(&self) -> f64 {
        self.distance as f64 / f64::from(self.shuffles)
    }

    /// Sets the `static_*` statistics of these counts (both targets report them alike;
    /// the mean distance only when there is a shuffle to average).
    pub fn record(&self, stats: &mut crate::launch::Stats) {
        stats
            .set("static_loads", u64::from(self.loads))
            .set("static_shuffles", u64::from(self.shuffles))
            .set("static_reuses", u64::from(self.reuses))
            .set("static_edge_reloads", u64::from(self.edge_reloads))
            .set("static_halo_loads", u64::from(self.halo_loads))
            .set("static_halo_shuffles", u64::from(self.halo_shuffles));
        if self.shuffles > 0 {
            stats.set("static_shuffle_distance", self.mean_distance());
        }
    }
}

/// The pairs of every function of a module.
#[derive(Clone, Debug, Default)]
pub struct ModuleShuffles {
    pub functions: SecondaryMap<FuncRef, FunctionShuffles>,
}

/// Detects the pairs of every function of `module`, given its affine analysis.
pub fn analyze_module(module: &Module, affine: &ModuleAffine) -> ModuleShuffles {
    let mut out = ModuleShuffles::default();
    for (fref, func) in module.functions.iter() {
        out.functions[fref] = analyze_function(module, func, &affine.functions[fref]);
    }
    out
}

/// Detects the pairs of `func`, a function of `module` (for its gang width and pointer
/// size), given `func`'s affine analysis.
pub fn analyze_function(
    module: &Module,
    func: &Function,
    affine: &FunctionAffine,
) -> FunctionShuffles {
    let forms = Forms::compute(module, func, affine);
    let mut out = FunctionShuffles::default();
    let lanes = module.lane_count.max(1) as i64;
    for &block in &func.layout {
        let mut avail = Available::default();
        for &inst in &func.blocks[block].insts {
            match &func.insts[inst] {
                InstData::Load {
                    ty,
                    space,
                    addr,
                    mask,
                } if func.value_type(*addr).varying => {
                    out.varying_loads += 1;
                    let Some(ch) = forms.channel(*addr, *mask) else {
                        continue;
                    };
                    let group = Group {
                        key: ch.key.clone(),
                        ty: *ty,
                        space: *space,
                        mask: *mask,
                    };
                    match avail.best_source(&group, &ch, lanes) {
                        Some((source, delta)) => {
                            out.by_load.insert(inst, out.pairs.len());
                            out.sources.insert(source);
                            out.pairs.push(Pair {
                                load: inst,
                                source,
                                delta,
                                row: ch.row,
                                edge: None,
                            });
                        }
                        None => avail.insert(group, ch.k, inst),
                    }
                }
                InstData::Store { space, .. }
                | InstData::AtomicRmw { space, .. }
                | InstData::AtomicCas { space, .. } => avail.clobber(*space),
                InstData::Call { .. } | InstData::Barrier => avail.clobber_all(),
                _ => {}
            }
        }
    }
    out.plan_halos(func);
    out
}

// ---------------------------------------------------------------------------------
// Linear forms.

/// What a term of a [`Form`] multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Leaf {
    /// A special register (each register is one leaf, however many reads of it).
    Special(SpecialReg),
    /// An opaque value with an exact affine tuple (uniform values included).
    Value(Value),
    /// An interned extension ([`Ext`]).
    Ext(u32),
}

impl Leaf {
    /// The order terms are kept in (any fixed total order does).
    fn order(self) -> (u8, usize) {
        use cranelift_entity::EntityRef;
        match self {
            Leaf::Special(r) => (0, r as usize),
            Leaf::Value(v) => (1, v.index()),
            Leaf::Ext(id) => (2, id as usize),
        }
    }
}

/// `constant + sum(coef * leaf)` modulo `2^width`, terms sorted by leaf, coefficients
/// and constant kept sign-extended from `width` bits (so equal forms compare equal).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Form {
    width: u32,
    constant: i64,
    terms: SmallVec<[(Leaf, i64); 4]>,
    /// The mask the leaves' tuples are claimed under (`None`: every lane).
    under: Option<Value>,
}

/// Forms with more terms than this are not followed (they stay opaque), which keeps
/// the analysis linear.
const MAX_TERMS: usize = 12;

impl Form {
    fn constant(c: i64, width: u32) -> Form {
        Form {
            width,
            constant: wrap(c, width),
            terms: SmallVec::new(),
            under: None,
        }
    }

    fn leaf(leaf: Leaf, width: u32, under: Option<Value>) -> Form {
        Form {
            width,
            constant: 0,
            terms: smallvec::smallvec![(leaf, 1)],
            under,
        }
    }

    fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    fn add(&self, other: &Form) -> Option<Form> {
        let w = self.width;
        let under = match (self.under, other.under) {
            (Some(a), Some(b)) if a != b => return None,
            (a, b) => a.or(b),
        };
        let mut terms = self.terms.clone();
        for &(leaf, c) in &other.terms {
            match terms.iter_mut().find(|(l, _)| *l == leaf) {
                Some((_, k)) => *k = wrap(k.wrapping_add(c), w),
                None => terms.push((leaf, c)),
            }
        }
        terms.retain(|(_, c)| *c != 0);
        terms.sort_by_key(|(l, _)| l.order());
        (terms.len() <= MAX_TERMS).then(|| Form {
            width: w,
            constant: wrap(self.constant.wrapping_add(other.constant), w),
            terms,
            under,
        })
    }

    fn scale(&self, k: i64) -> Form {
        let w = self.width;
        let mut terms: SmallVec<[(Leaf, i64); 4]> = self
            .terms
            .iter()
            .map(|&(l, c)| (l, wrap(c.wrapping_mul(k), w)))
            .collect();
        terms.retain(|(_, c)| *c != 0);
        Form {
            width: w,
            constant: wrap(self.constant.wrapping_mul(k), w),
            terms,
            under: self.under,
        }
    }
}

/// An extension of a form to a wider integer: a leaf of the wider form.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Ext {
    signed: bool,
    to: u32,
    inner: Form,
}

/// How a leaf moves when the lane moves by `N`.
#[derive(Clone, Copy, Debug, Default)]
struct Motion {
    /// The leaf grows by `slope * N` (modulo its width).
    slope: i64,
    /// The leaf depends on `threadIdx` (its value at another row differs).
    row: bool,
    /// The leaf is an extension whose operand moves: not linear in `N`.
    nonlinear: bool,
}

/// The lane-carrying part of an address (module documentation).
#[derive(Clone, Debug)]
struct Channel {
    key: ChannelKey,
    /// The channel's constant.
    k: i64,
    /// How much the channel grows per lane.
    slope: i64,
    width: u32,
    row: bool,
}

/// What two addresses must share to differ only in their channel's constant: the
/// channel's terms and, around an extension of it, the context's forms.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ChannelKey {
    Linear {
        width: u32,
        terms: SmallVec<[(Leaf, i64); 4]>,
    },
    /// `rest + coef * ext(inner)`, where `rest` (constant included) does not move.
    Extended {
        rest: Form,
        coef: i64,
        signed: bool,
        to: u32,
        inner: Box<ChannelKey>,
    },
}

/// The forms of one function's values, and the leaves they use.
struct Forms<'a> {
    func: &'a Function,
    affine: &'a FunctionAffine,
    ptr_size: u32,
    forms: SecondaryMap<Value, Option<Form>>,
    exts: Vec<Ext>,
    ext_ids: FxHashMap<Ext, u32>,
}

/// The width in bits of an integer or pointer type (`None` for other types).
fn int_width(ty: Type, ptr_size: u32) -> Option<u32> {
    match ty.scalar {
        Scalar::Ptr => Some(ptr_size * 8),
        Scalar::Bool => None,
        s if s.is_int() => Some(s.bits()),
        _ => None,
    }
}

impl<'a> Forms<'a> {
    /// The forms of every value of `func`, defined before use in reverse postorder.
    fn compute(module: &Module, func: &'a Function, affine: &'a FunctionAffine) -> Forms<'a> {
        let mut f = Forms {
            func,
            affine,
            ptr_size: module.ptr_size,
            forms: SecondaryMap::with_capacity(func.values.len()),
            exts: Vec::new(),
            ext_ids: FxHashMap::default(),
        };
        let dom = DominatorTree::compute(func);
        for &block in dom.rpo() {
            for &p in &func.blocks[block].params {
                f.forms[p] = f.opaque(p);
            }
            for &inst in &func.blocks[block].insts {
                if let Some(r) = func.results[inst] {
                    f.forms[r] = f.transfer(r, &func.insts[inst]);
                }
            }
        }
        f
    }

    fn width(&self, v: Value) -> Option<u32> {
        int_width(self.func.value_type(v), self.ptr_size)
    }

    fn form(&self, v: Value) -> Option<&Form> {
        self.forms.get(v).and_then(Option::as_ref)
    }

    fn transfer(&mut self, v: Value, data: &InstData) -> Option<Form> {
        let w = self.width(v)?;
        let derived = match data {
            InstData::Iconst { bits, .. } => Some(Form::constant(*bits as i64, w)),
            InstData::Special { reg } => Some(Form::leaf(Leaf::Special(*reg), w, None)),
            InstData::Splat { arg } => self.form(*arg).cloned(),
            InstData::Unary { op, arg } => self.unary(*op, *arg),
            InstData::Binary { op, args } => self.binary(*op, args[0], args[1]),
            InstData::Convert { op, arg, .. } => self.convert(*op, *arg, w),
            _ => None,
        };
        derived.filter(|f| f.width == w).or_else(|| self.opaque(v))
    }

    fn unary(&self, op: UnaryOp, arg: Value) -> Option<Form> {
        let a = self.form(arg)?;
        match op {
            UnaryOp::Ineg => Some(a.scale(-1)),
            UnaryOp::Bnot => a.scale(-1).add(&Form::constant(-1, a.width)),
            _ => None,
        }
    }

    fn binary(&self, op: BinaryOp, x: Value, y: Value) -> Option<Form> {
        let (a, b) = (self.form(x)?, self.form(y)?);
        if a.width != b.width {
            return None;
        }
        match op {
            BinaryOp::Iadd => a.add(b),
            BinaryOp::Isub => a.add(&b.scale(-1)),
            BinaryOp::Imul => match (a.as_const(), b.as_const()) {
                (_, Some(k)) => Some(a.scale(k)),
                (Some(k), _) => Some(b.scale(k)),
                _ => None,
            },
            BinaryOp::Ishl => {
                let k = b.as_const()?.rem_euclid(i64::from(a.width));
                Some(a.scale(1i64.wrapping_shl(k as u32)))
            }
            _ => None,
        }
    }

    fn convert(&mut self, op: ConvOp, arg: Value, to: u32) -> Option<Form> {
        let inner = self.form(arg)?.clone();
        match op {
            ConvOp::Bitcast if inner.width == to => Some(inner),
            ConvOp::Sext | ConvOp::Zext if inner.width < to => {
                if let Some(c) = inner.as_const() {
                    let c = if op == ConvOp::Zext && inner.width < 64 {
                        c & ((1i64 << inner.width) - 1)
                    } else {
                        c
                    };
                    return Some(Form::constant(c, to));
                }
                let under = inner.under;
                let ext = Ext {
                    signed: op == ConvOp::Sext,
                    to,
                    inner,
                };
                let next = self.exts.len() as u32;
                let id = *self.ext_ids.entry(ext.clone()).or_insert(next);
                if id == next {
                    self.exts.push(ext);
                }
                Some(Form::leaf(Leaf::Ext(id), to, under))
            }
            _ => None,
        }
    }

    /// A value the rules do not see through: a leaf when its affine tuple is exact with
    /// compile-time lane and `threadIdx.x` strides.
    fn opaque(&self, v: Value) -> Option<Form> {
        let w = self.width(v)?;
        let t = self.affine.tuple(v)?;
        if !t.exact() || t.width != w {
            return None;
        }
        t.const_stride(Dim::Lane)?;
        t.const_stride(Dim::ThreadX)?;
        Some(Form::leaf(Leaf::Value(v), w, t.under))
    }

    /// How `leaf` moves with the lane, in a form of width `w`.
    fn motion(&self, leaf: Leaf) -> Motion {
        match leaf {
            Leaf::Special(SpecialReg::LaneIndex) => Motion {
                slope: 1,
                ..Motion::default()
            },
            Leaf::Special(SpecialReg::ThreadIdxX) => Motion {
                slope: 1,
                row: true,
                ..Motion::default()
            },
            Leaf::Special(SpecialReg::ThreadIdxY | SpecialReg::ThreadIdxZ) => Motion {
                row: true,
                ..Motion::default()
            },
            Leaf::Special(_) => Motion::default(),
            Leaf::Value(v) => {
                let Some(t) = self.affine.tuple(v) else {
                    return Motion::default();
                };
                let lane = t.const_stride(Dim::Lane).unwrap_or(0);
                let x = t.const_stride(Dim::ThreadX).unwrap_or(0);
                Motion {
                    slope: lane.wrapping_add(x),
                    row: [Dim::ThreadX, Dim::ThreadY, Dim::ThreadZ]
                        .iter()
                        .any(|&d| !t.stride(d).is_zero()),
                    nonlinear: false,
                }
            }
            Leaf::Ext(id) => {
                let inner = &self.exts[id as usize].inner;
                let (slope, row, nonlinear) = self.sum_motion(inner);
                Motion {
                    slope: 0,
                    row,
                    nonlinear: nonlinear || slope != 0,
                }
            }
        }
    }

    /// The slope of `form` and whether it depends on the row or on a moving extension.
    fn sum_motion(&self, form: &Form) -> (i64, bool, bool) {
        let mut slope = 0i64;
        let (mut row, mut nonlinear) = (false, false);
        for &(leaf, c) in &form.terms {
            let m = self.motion(leaf);
            slope = wrap(slope.wrapping_add(c.wrapping_mul(m.slope)), form.width);
            row |= m.row;
            nonlinear |= m.nonlinear;
        }
        (slope, row, nonlinear)
    }

    /// The channel of the address `addr` of a load under `mask`, when it has one and
    /// its leaves are claimed in the load's lanes.
    fn channel(&self, addr: Value, mask: Option<Value>) -> Option<Channel> {
        let form = self.form(addr)?;
        self.split(form, mask, 0)
    }

    fn split(&self, form: &Form, mask: Option<Value>, depth: u32) -> Option<Channel> {
        if form.under.is_some() && form.under != mask {
            return None;
        }
        let moving: SmallVec<[(Leaf, i64); 2]> = form
            .terms
            .iter()
            .copied()
            .filter(|&(l, _)| self.motion(l).nonlinear)
            .collect();
        let (slope, row, _) = self.sum_motion(form);
        match moving[..] {
            [] => Some(Channel {
                key: ChannelKey::Linear {
                    width: form.width,
                    terms: form.terms.clone(),
                },
                k: form.constant,
                slope,
                width: form.width,
                row,
            }),
            // An extension of the channel, under a context that does not move.
            [(Leaf::Ext(id), coef)] if slope == 0 && depth < 4 => {
                let ext = &self.exts[id as usize];
                let inner = self.split(&ext.inner, mask, depth + 1)?;
                let mut rest = form.clone();
                rest.terms.retain(|(l, _)| *l != Leaf::Ext(id));
                Some(Channel {
                    key: ChannelKey::Extended {
                        rest,
                        coef,
                        signed: ext.signed,
                        to: ext.to,
                        inner: Box::new(inner.key),
                    },
                    row: inner.row || row,
                    ..inner
                })
            }
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------
// Candidate sources within a block.

/// What two loads must share to serve one another, besides the channel constant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Group {
    key: ChannelKey,
    ty: Type,
    space: Space,
    mask: Option<Value>,
}

/// The loads of the current block that can still serve as sources, by (group, `k`).
#[derive(Default)]
struct Available {
    by_constant: FxHashMap<(Group, i64), (Inst, u32)>,
    /// Per [`Space`] (in [`Space::ALL`] order): bumped by every store that may alias it.
    epochs: [u32; 5],
}

fn space_index(space: Space) -> usize {
    Space::ALL.iter().position(|&s| s == space).unwrap_or(0)
}

impl Available {
    fn insert(&mut self, group: Group, k: i64, inst: Inst) {
        let epoch = self.epochs[space_index(group.space)];
        self.by_constant.insert((group, k), (inst, epoch));
    }

    /// A store to `space`: candidates of that space and of generic memory (which may
    /// be any space) go; a generic store may touch every space.
    fn clobber(&mut self, space: Space) {
        match space {
            Space::Generic => self.clobber_all(),
            Space::Param => {}
            s => {
                self.epochs[space_index(s)] += 1;
                self.epochs[space_index(Space::Generic)] += 1;
            }
        }
    }

    fn clobber_all(&mut self) {
        for e in &mut self.epochs {
            *e += 1;
        }
    }

    /// The source for a load in `group` with channel `ch`: the smallest `|N|`
    /// (`N = 0, 1, -1, 2, -2, ...`) with `k_A + slope*N = k_B`, `|N| < lanes`.
    fn best_source(&self, group: &Group, ch: &Channel, lanes: i64) -> Option<(Inst, i32)> {
        let live = group.clone();
        let epoch = self.epochs[space_index(group.space)];
        let mut key = (live, 0i64);
        let deltas = std::iter::once(0).chain((1..lanes).flat_map(|n| [n, -n]));
        for n in deltas {
            if n != 0 && ch.slope == 0 {
                break;
            }
            key.1 = wrap(ch.k.wrapping_sub(ch.slope.wrapping_mul(n)), ch.width);
            if let Some(&(inst, e)) = self.by_constant.get(&key) {
                if e == epoch {
                    return Some((inst, n as i32));
                }
            }
        }
        None
    }
}

/// Whether a load whose edge lanes come from a halo, held back by a code generator
/// until its first reader, must be selected before `data`: `data` may write memory
/// (the held load's reload must read it unchanged), synchronizes, calls, or ends the
/// block (pairs never cross blocks).
pub fn ends_hold(data: &InstData) -> bool {
    data.is_terminator()
        || matches!(
            data,
            InstData::Store { .. }
                | InstData::AtomicRmw { .. }
                | InstData::AtomicCas { .. }
                | InstData::Call { .. }
                | InstData::Barrier
        )
}

// ---------------------------------------------------------------------------------
// Text for tests and `--emit`.

/// The pairs of `func` as text, one a line: `v9 = v5 lane+1 (row), edge v12 lane-1`:
/// the load defining `v9` takes `v5`'s value of lane `l + 1`, and in its edge lanes
/// `v12`'s value of lane `l - 1` (its side's halo).
pub fn pairs_text(func: &Function, result: &FunctionShuffles) -> String {
    let names = Names::new(func);
    let name = |inst: Inst| match func.results[inst] {
        Some(v) => format!("{}", names.value(v)),
        None => "?".to_string(),
    };
    let mut out = String::new();
    for p in &result.pairs {
        let how = match p.delta {
            0 => "same lane".to_string(),
            n if n > 0 => format!("lane+{n}"),
            n => format!("lane{n}"),
        };
        let row = if p.row { " (row)" } else { "" };
        let edge = match p.edge {
            Some(e) if e.delta > 0 => format!(", edge {} lane+{}", name(e.carrier), e.delta),
            Some(e) => format!(", edge {} lane{}", name(e.carrier), e.delta),
            None => String::new(),
        };
        out.push_str(&format!(
            "{} = {} {how}{row}{edge}\n",
            name(p.load),
            name(p.source)
        ));
    }
    out
}

pub mod cost;

#[cfg(test)]
mod tests;
