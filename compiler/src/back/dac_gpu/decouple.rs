//! Decoupled Affine Computation on `dac-gpu`: which global accesses of
//! an entry move their address computation to the affine stream, in which order the
//! affine stream enqueues them, and the affine stream itself (paper 000, Wang and Lin,
//! ISCA 2017; `lang-spec/dac-gpu-isa.md`, "The DAC extension").
//!
//! Enabled by [`super::Options::dac`], on by default (`spmdc run --target dac-gpu`;
//! `--no-dac` compiles the baseline): every example, ISPC-style and conformance
//! program gives the interpreter's results with it on
//! (`compiler/tests/dac_decouple.rs`), and so does the rest of the dac-gpu suite, which
//! runs with the default options.
//!
//! **What qualifies** (a [`Plan`] exists only for an entry with at least one decoupled
//! access; else the kernel is the baseline unchanged):
//! - no function but the entry has a barrier; each barrier of the entry lies either
//!   outside every loop on every path from the entry to a `return`, or in a
//!   replicated uniform loop (below) in a block every iteration passes (it dominates
//!   the loop's latch), so every warp meets it as often as the affine stream's
//!   replicated `bar.sync` (paper §4.2: barriers are replicated in both streams;
//!   the affine stream leaves out those no decoupled load follows, [`drop_barriers`]);
//!   a barrier in any other loop disqualifies the kernel;
//! - an access qualifies when it is a `load` or a `store` of a
//!   32- or 64-bit value (`i32`, `i64`, `f32`, `f64`, pointers), in the entry itself
//!   (not in an inlined or out-of-line callee's body), outside every loop or directly
//!   in a replicated *uniform loop* (below; not in a loop inside it that is not
//!   replicated), to the global space or to `.shared`, whose address is a
//!   non-uniform affine tuple under the access's mask
//!   ([`FunctionAffine::address_tuple`]; for loads a uniform one too: a tuple with
//!   zero strides, one line for the whole warp, conv2d's filter taps; a load with a
//!   uniform result then runs in every lane when any lane of its mask is on, as the
//!   baseline's `ld.uni`, so every lane gets the value) and whose definition chain
//!   replays on tuples:
//!   constants, uniform entry parameters, the addresses of the shared variables
//!   resident in `.shared`, thread, block and grid indices and extents,
//!   `iadd`, `isub`, `imul` with a uniform factor, `ishl` by a constant, `ineg`,
//!   `sext`/`zext`/`ireduce`/`bitcast` between 32/64-bit integers and pointers,
//!   `splat`; scalar work on values the same in every thread of every block
//!   ([`launch_uniform`]: the affine warp computes scalars once for all CTAs, so
//!   nothing of `blockIdx`): `sdiv`/`udiv`/`srem`/`urem`, `band`/`bor`/`bxor`,
//!   min/max, shifts by constants, `select` on an integer compare of such values and
//!   block parameters merging the two arms of a `brif` on one ([`uniform_merge`];
//!   nw's `first = diag < nb ? 0 : diag - nb + 1`), both as `setp` + `selp` (the
//!   arms may be tuples; both are computed, which is safe: the affine warp's
//!   division by zero does not trap); through calls made under the access's mask (the callee's single returned
//!   value, its parameters being the call's arguments), `select` on that mask (the
//!   inliner's "lanes off read 0"), and entry block parameters with a single incoming
//!   edge besides the else edges of `brif any(mask)` (taken only when no lane of the
//!   mask is on, when the guard disables every lane anyway), `select any(entry mask),
//!   a, _` (every warp has a lane on), and the header parameters of a uniform loop
//!   (kept in registers). Entry-level values of the chain must have a tuple.
//!
//! **`.shared` accesses** (loads and stores, [`Access::shared`]): the affine warp
//! never touches shared memory, so they are [`Kind::Addr`] entries whatever their
//! direction: `enq.addr.shared` of the offset (the address less [`SHARED_WINDOW`],
//! which the baseline subtracts in the access's immediate) and `ld.shared` /
//! `st.shared [deq.addr]` in the non-affine stream, which loses their address
//! arithmetic (paper §4.1: the affine stream computes the addresses of the accesses
//! it does not prefetch, as it does for stores). The barriers the affine stream
//! replicates are those decoupled global loads need: no shared access of the affine
//! warp has to be ordered by one.
//!
//! **Select tuples** (our extension; hotspot's and srad's clamped neighbours
//! `r > 0 ? i - cols : i`, and `min`/`max` clamps): an access whose address the
//! affine analysis gives as a select tuple ([`crate::analysis::affine::Piecewise`],
//! keyed by an entry compare `c` or by a min/max) qualifies when the compared
//! operands replay in every lane (one varying) and the address replays with every
//! select on `c` (or the min/max itself) read as its `then` arm and as its `else` arm
//! ([`select_tuple`], `Replay::arm`). The affine stream computes both arms apart
//! and emits `enq.data.sel` / `enq.addr.sel .SPACE.T.CMP.CT %then, %else, a, b`; the
//! non-affine stream pops a plain `[deq.data]` / `[deq.addr]`, and the selects, the
//! compares and the index arithmetic leave it. A compare used only as such selects'
//! condition gets no `enq.pred` of its own ([`Plan::of`] plans again without it).
//!
//! **Decoupled compares** (paper §4.3, `enq.pred` / `deq.pred`): an integer compare
//! of 32- or 64-bit values in the entry, outside every loop or directly in a
//! replicated uniform loop, whose two operands replay on tuples (in every lane: no
//! mask) and at least one of which varies with the thread index (`i < n` with `i =
//! blockIdx.x * blockDim.x + threadIdx.x`; two affine operands are fine too, the PEU
//! compares per lane when the fast path does not apply). The affine stream emits
//! `enq.pred.CMP.T a, b` at the compare's place in the enqueue order (a [`Kind::Pred`]
//! entry among the accesses, in program order within its block), the non-affine
//! stream `deq.pred %p` instead of the `setp`, whatever the compare then feeds (a
//! branch's `any`, a mask, a select). The PEU evaluates the tuples in every lane, so
//! the predicate equals the baseline's `setp` in every lane that runs (lanes past the
//! block only ever see it `and`ed with `exists`). Its operands leave the non-affine
//! stream when nothing else reads them (the index arithmetic: `%ctaid.x * ntid + tid`
//! and the linear id's `rem`). Compares of values the same in every thread stay `setp`s
//! (uniform loop tests included: a decoupled test would leave the counter's increment,
//! which only feeds itself, in the non-affine stream anyway). Skipped compares are
//! drained like accesses, with `deq.pred` into a temporary.
//!
//! **Uniform loops** ([`ULoop`], [`uniform_loops`], [`uniform_loop`]): a natural
//! loop, contiguous in the enqueue order, with a single latch ending in `jump
//! header(..)`, entered from a single preheader edge. Only its *test* block leaves
//! it (besides branches that never leave: `any` of a mask on in every thread), and
//! every iteration passes the test (it dominates the latch). The test is an `icmp`
//! `c`, or `any(m & c)` with `m` on in every thread ([`full`]: the entry mask, a
//! loop-carried mask that starts full and is `and`ed with `c`); `c` compares values
//! the same in every warp of every block ([`launch_uniform`]: constants, uniform entry
//! parameters, block and grid extents, integer arithmetic (division, remainder,
//! min/max and logic included, selects and branch merges on compares of such values),
//! `select any(entry mask)`,
//! the latches' `select`s on full masks, and header parameters of replicated loops
//! whose incoming values are such). This covers `for (uniform int k ..)` and
//! ISPC-style `for (int k ..)` loops over uniform bounds, including grid-stride loops
//! (`base += gridDim.x * blockDim.x`: the same trip count in every block). Inside, the
//! body may branch: skip regions (`if (i < n)`) are drained by the warps that skip
//! them as at top level, and it may hold inner loops. A top-level uniform loop lies
//! on every path from the entry to a `return` (the else edge of `brif any(entry
//! mask)`, which the optimizer makes when it unswitches a loop, is never taken); an
//! inner one lies on every path through an iteration of its enclosing loop (its
//! header dominates that loop's latch), leaves into that loop, and is replicated only
//! while that loop is (so all warps are in the same iteration of both). So every warp
//! runs each replicated loop with the affine stream's trip counts. The affine stream
//! replicates it: the header parameters that replay (carried: both incoming values
//! replay, the parameter taken to replay meanwhile) get their own `%a`/`%ad`
//! registers set before the header label; then the loop's enqueues and barriers in
//! block order, a `setp` on the replayed comparison and `@p bra.uni` out at the end of
//! the test block, inner loops, the next values through temporaries (a parallel
//! copy), `bra.uni` back. What a loop changed is forgotten after it; a computation
//! goes before the innermost loop that changes one of its operands (loop-invariant
//! address arithmetic leaves the loops, `Stream::settle`). A loop with no access,
//! barrier or carried register is not emitted ([`prune_loops`]).
//!
//! **Loops in skipped regions** (conv2d's filter loops after the bound check's
//! `return`, backprop's inner loop under `if (j < nout)`): a loop some warps skip,
//! because it lies in a region `brif any(m), region, after` (on every path, or on
//! every path through an iteration of the enclosing loop; every path from `region`
//! to `after` passes the loop's header; no `return` in between), qualifies when its
//! trip count is a constant ([`trip_count`]: the counters start at constants and step
//! by constants) and so are those of the loops inside it; the loops' `any(x)`
//! branches and `select any(x)` counter updates with `x` covering `m` ([`covers`])
//! are taken as always true, which they are in every warp that enters the region
//! (`ULoop::region`). The affine stream runs such loops for every warp; the warps
//! that skip the region drain each entry as many times as it was enqueued (the
//! product of the trip counts, plus one for the part before a test on its last
//! visit) with a counted loop of all-off dequeues ([`Plan::drains`]). Barriers in
//! such loops disqualify the kernel (warps that skip them would not meet them).
//!
//! A trip count that depends on the block (`k < blockIdx.x`) does not qualify, and
//! cannot in this model: the affine warp runs once for a whole batch of CTAs (paper
//! §4.1; functionally once per launch, its tuples having per-CTA offsets), so its
//! control flow is one for all of them. A skipped loop whose trip count is not a
//! constant (a parameter) does not qualify either: the skipping warps would have to
//! compute how many entries to drain.
//!
//! **The queue contract.** The affine stream runs once per launch and enqueues every
//! planned access once, in a reverse postorder of their blocks that keeps loops
//! contiguous where it can ([`loop_contiguous_rpo`]; irreducible loops disqualify the
//! kernel) and program order within a block. A warp of the non-affine stream
//! visits a subsequence of that order along its path; on every edge `u -> v` it drains
//! (issues, with an all-off guard, a `[deq.data]` load or `[deq.addr]` store, or a
//! `deq.pred`) the entries it skips, those between the end of `u` and the start of
//! `v`, and before its exit those after its last block, in the order the affine
//! stream enqueued them ([`Plan::drains`]: skipped loops as counted loops of their
//! bodies; draining one kind ahead of another would fill that kind's queue and
//! deadlock the expansion units in the timing model). So every warp pops exactly the
//! entries pushed, whatever its path (`brif any(m)` skips of empty regions included,
//! inside loops too: the body of a replicated loop is visited in the same order each
//! iteration); loops not replicated hold no decoupled access, so their edges drain
//! nothing, and an edge leaving a uniform loop (from its test) drains from the end of
//! its latch (the warp dequeued the whole body each iteration and the part up to the
//! test on the last visit, as the affine stream enqueued them). Only
//! skipping warps pay for the drains; the
//! simulator counts them in `deq_data_instructions` but not as decoupled loads
//! (`decoupled_load_instructions`, `loads_decoupled`), since they access no memory,
//! like all-off loads in `global_load_instructions`. Decoupled accesses are
//! guarded by the access mask and the `exists` predicate (lanes past the block). The
//! address arithmetic left unused in the non-affine stream is not selected there.
//!
//! **Thread indices.** A decoupled kernel launches with a one-dimensional block
//! rounded up to whole warps when its block is one-dimensional, and in the block's
//! real shape otherwise ([`super::run`]): the AEU steps the accumulated address
//! where `tid.x` wraps with the block shape (paper §4.2 ⑦, `sim::gpu::dac::tuple`), so
//! the affine stream reads `thread_idx.x/y/z` as `%tid.x/y/z` (`%tid.y/z` are 0 in
//! the one-dimensional launch). The non-affine stream adds `%tid.y/z` to the
//! baseline's indices from the linear id (`isel/dac.rs`), right in both launches; in
//! the real-shaped one, lanes past the block of a partial last warp do not run at all.
//!
//! **`%` and `/` of the thread index** (paper §4.6; lud's `tx = threadIdx.x % 16`,
//! `ty = threadIdx.x / 16`): a tuple has no `%` or `/` of an index, but when the entry
//! reads `thread_idx.x` only as `% c` and `/ c` for one constant `c` (and no
//! callee reads a thread index, nor the entry `thread_idx.y/z`; [`x_split`]), the
//! plan reads them as the `thread_idx.x` and `thread_idx.y` of a virtual block `(c,
//! blockDim.x / c)` ([`split_module`]: the analysis and the affine stream see two
//! index dimensions) and the kernel launches in that shape ([`Plan::split`],
//! `super::run`): the same threads with the same linear ids, so warps are unchanged,
//! and the AEU steps the rows. The non-affine stream computes `thread_idx.x` as the
//! linear id `%tid.y * c + %tid.x`. A launch whose block is not one-dimensional or
//! not a multiple of `c` runs the baseline instead (checked at launch). The divisor
//! may be the lowering's `select mask, c, 1` on the entry mask (on in every thread:
//! the virtual block has no lanes past its end).
//!
//! **Not yet:** accesses in loops some warps leave early, loops some warps skip
//! whose trip count is not a constant, loops whose trip count depends on the block
//! (see above), scalar work on the block index other than the tuple rules
//! (`blockIdx.x & 1`: per-CTA offsets of a tuple are linear), merges of more than two
//! edges or after a branch on a varying value, `/` and `%` of the thread index other
//! than the split above (`tid.x % 12`; `tid.x % 16` with `tid.x` also read directly),
//! stores to one address for the whole warp, compares in callees or in loops not
//! replicated, decoupled uniform loop tests (their counters would need a dead-cycle
//! elimination to leave the non-affine stream), local-memory accesses, 8/16-bit
//! accesses, barriers in callees.

use rustc_hash::{FxHashMap, FxHashSet};

use sim::gpu::{
    AddrBase, Address, BinOp, Cmp, Dim as GDim, Guard, Inst as GInst, Kernel, KernelBuilder,
    KernelKind, LabelId, Op, Reg, Space, Special, Src, Type as T, UnOp,
};

use super::spaces::SHARED_WINDOW;
use crate::analysis::affine::{analyze_called, FunctionAffine};
use crate::ir::dominance::DominatorTree;
use crate::ir::{
    BinaryOp, Block, ConvOp, FuncRef, Function, Inst, InstData, IntCC, LaneOp, Module, Scalar,
    SharedVar, SpecialReg, UnaryOp, Value, ValueDef,
};

/// Whether an entry of the queues is a global load's address (`enq.data`), the
/// address of a store or a `.shared` access (`enq.addr`) or a compare's per-warp
/// masks (`enq.pred`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Data,
    Addr,
    Pred,
}

/// One decoupled access, or one decoupled integer compare (`Kind::Pred`).
#[derive(Clone, Copy, Debug)]
pub struct Access {
    pub inst: Inst,
    /// The address; for a compare, its left operand.
    pub addr: Value,
    pub kind: Kind,
    /// The scalar accessed (its memory type is the enq's and the deq's); for a
    /// compare, its operands' integer type.
    pub scalar: Scalar,
    /// The access's mask (its lanes are the only ones whose address matters); `None`
    /// for a compare (its value matters in every lane).
    pub mask: Option<Value>,
    /// For a compare: its condition and right operand.
    pub cmp: Option<(IntCC, Value)>,
    /// A *select tuple* address (`enq.data.sel` / `enq.addr.sel`).
    pub sel: Option<Sel>,
    /// A `.shared` access (a load or a store, [`Kind::Addr`]): `enq.addr.shared` of
    /// its offset in `.shared` (the address less [`SHARED_WINDOW`]).
    pub shared: bool,
}

/// The choice of a select-tuple address: the entry's selects on `key` (an `icmp`),
/// or the min/max `key` itself, take their `then` arm where `args[0] cc args[1]`
/// holds (hotspot's `r > 0 ? i - cols : i`, `min(i + 1, n - 1)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sel {
    pub key: Value,
    pub cc: IntCC,
    pub args: [Value; 2],
}

/// `v`'s arm when `d` (defining `v`) is a choice keyed by `key`: a `select` on
/// `key`, or the min/max `key` itself.
fn arm_of(d: &InstData, v: Value, key: Value, then: bool) -> Option<Value> {
    let pick = |x: Value, y: Value| if then { x } else { y };
    match d {
        InstData::Select { args } if args[0] == key => Some(pick(args[1], args[2])),
        InstData::Binary {
            op: BinaryOp::Smin | BinaryOp::Smax | BinaryOp::Umin | BinaryOp::Umax,
            args,
        } if v == key => Some(pick(args[0], args[1])),
        _ => None,
    }
}

/// A step of a drain ([`Plan::drains`]).
#[derive(Clone, Debug)]
pub enum Drain {
    /// Pop one entry of the access (all lanes off) or compare.
    One(Access),
    /// The steps, this many times (a replicated loop the warp skipped).
    Repeat(u64, Vec<Drain>),
}

impl Drain {
    /// The entries of `inst` this drain pops.
    pub fn entries(&self, inst: Inst) -> u64 {
        match self {
            Drain::One(a) => u64::from(a.inst == inst),
            Drain::Repeat(n, body) => n * body.iter().map(|d| d.entries(inst)).sum::<u64>(),
        }
    }
}

impl Access {
    /// The values the affine stream computes for it: the address, or both operands
    /// of a compare.
    pub fn operands(&self) -> Vec<Value> {
        let mut v = vec![self.addr];
        v.extend(self.cmp.map(|(_, y)| y));
        v
    }
}

/// The decoupling of one entry.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The entry function.
    pub fref: FuncRef,
    /// The accesses in enqueue order.
    pub accesses: Vec<Access>,
    index: FxHashMap<Inst, usize>,
    /// Per block: the first access index at or after its start, and after its end.
    start: FxHashMap<Block, usize>,
    end: FxHashMap<Block, usize>,
    /// The block of each terminator (for edges).
    term_block: FxHashMap<Inst, Block>,
    /// Address arithmetic only the decoupled accesses used.
    dead: FxHashSet<Inst>,
    /// The callee instances the replayed addresses go through.
    frames: Frames,
    /// The affine stream's program: accesses, barriers and the replicated loops'
    /// structure, in enqueue order.
    events: Vec<Ev>,
    /// The uniform loops the affine stream replicates, in enqueue order.
    loops: Vec<ULoop>,
    /// `Some(c)`: the entry reads `thread_idx.x` only as `% c` and `/ c` and launches
    /// in the virtual block `(c, blockDim.x / c)` ([`x_split`]).
    split: Option<u32>,
}

/// What the plan knows of `.shared` memory: which accesses go there and where the
/// entry's resident shared variables lie.
struct Shared<'a> {
    access: &'a dyn Fn(Inst) -> bool,
    offsets: &'a FxHashMap<SharedVar, u32>,
}

/// One step of the affine stream (indices into [`Plan::accesses`] and [`Plan::loops`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    /// Before the loop's header: its carried registers, its label.
    Open(usize),
    Access(usize),
    Bar,
    /// The end of the loop's test block: the exit branch.
    Test(usize),
    /// The end of the latch: the next carried values, the branch back.
    Close(usize),
}

/// The memory type of an access of `s` (as the baseline selects it).
pub fn mem_type(s: Scalar) -> T {
    match s {
        Scalar::I32 => T::B32,
        Scalar::F32 => T::F32,
        Scalar::I64 | Scalar::Ptr => T::B64,
        Scalar::F64 => T::F64,
        Scalar::Bool => T::U8,
        Scalar::I8 => T::S8,
        // binary16 travels as its 16 bits, like an `i16`.
        Scalar::I16 | Scalar::F16 => T::S16,
    }
}

fn word_scalar(s: Scalar) -> bool {
    matches!(
        s,
        Scalar::I32 | Scalar::I64 | Scalar::F32 | Scalar::F64 | Scalar::Ptr
    )
}

fn int_width(s: Scalar) -> Option<u32> {
    match s {
        Scalar::I32 => Some(32),
        Scalar::I64 | Scalar::Ptr => Some(64),
        _ => None,
    }
}

/// What planning an entry asks about the rest of its module, found once for all the
/// entries (asking per entry would make a module of many kernels quadratic).
pub struct ModuleFacts {
    /// Which functions some function calls.
    called: cranelift_entity::SecondaryMap<FuncRef, bool>,
    /// The functions that hold a `barrier`.
    with_barrier: Vec<FuncRef>,
}

impl ModuleFacts {
    pub fn of(module: &Module) -> ModuleFacts {
        let with_barrier = module
            .functions
            .iter()
            .filter(|(_, f)| f.insts.values().any(|d| matches!(d, InstData::Barrier)))
            .map(|(r, _)| r)
            .collect();
        ModuleFacts {
            called: module.called_functions(),
            with_barrier,
        }
    }
}

impl Plan {
    /// The plan for entry `fref`, or `None` when nothing qualifies. `shared(inst)`
    /// tells whether an access is to `.shared` memory, `shared_offsets` where the
    /// entry's resident shared variables lie in it; `facts` are `module`'s.
    pub fn of(
        module: &Module,
        facts: &ModuleFacts,
        fref: FuncRef,
        shared: impl Fn(Inst) -> bool,
        shared_offsets: &FxHashMap<SharedVar, u32>,
    ) -> Option<Plan> {
        let shared = Shared {
            access: &shared,
            offsets: shared_offsets,
        };
        let plan = Self::build(module, facts, fref, &shared, &FxHashSet::default())?;
        // The compares that only choose select tuples' arms are left to the expansion
        // units (no `enq.pred` of their own): plan again without them.
        let skip = plan.sel_only_compares(module);
        if skip.is_empty() {
            return Some(plan);
        }
        Self::build(module, facts, fref, &shared, &skip)
    }

    /// The compares of select-tuple accesses whose every use is a select.
    fn sel_only_compares(&self, module: &Module) -> FxHashSet<Value> {
        let module = match self.split {
            Some(c) => &split_module(module, self.fref, c),
            None => module,
        };
        let f = &module.functions[self.fref];
        let conds: FxHashSet<Value> = self
            .accesses
            .iter()
            .filter_map(|a| a.sel)
            .map(|s| s.key)
            .collect();
        let mut other_use = FxHashSet::default();
        for d in f
            .layout
            .iter()
            .flat_map(|&b| f.blocks[b].insts.iter().map(|&i| &f.insts[i]))
        {
            let select = matches!(d, InstData::Select { .. });
            for (k, x) in d.operands().into_iter().enumerate() {
                if conds.contains(&x) && !(select && k == 0) {
                    other_use.insert(x);
                }
            }
        }
        conds.difference(&other_use).copied().collect()
    }

    /// The plan, with the compares of `skip` not decoupled.
    fn build(
        module: &Module,
        facts: &ModuleFacts,
        fref: FuncRef,
        shared: &Shared,
        skip: &FxHashSet<Value>,
    ) -> Option<Plan> {
        // `tid.x % c` and `tid.x / c` are the virtual block's `tid.x` and `tid.y`.
        let split = x_split(module, fref);
        let owned;
        let module = match split {
            Some(c) => {
                owned = split_module(module, fref, c);
                &owned
            }
            None => module,
        };
        let f = &module.functions[fref];
        f.entry_block()?;
        // Barriers only in the entry itself (callees' would need their call sites).
        if facts.with_barrier.iter().any(|&g| g != fref) {
            return None;
        }
        let dom = DominatorTree::compute(f);
        let rpo = loop_contiguous_rpo(f, &dom)?;
        let number: FxHashMap<Block, usize> =
            rpo.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        let spans = loop_nest(f, &rpo, &number);
        let aff = analyze_called(module, f, facts.called[fref]);
        let mut plan = Plan {
            fref,
            accesses: Vec::new(),
            index: FxHashMap::default(),
            start: FxHashMap::default(),
            end: FxHashMap::default(),
            term_block: FxHashMap::default(),
            dead: FxHashSet::default(),
            frames: Frames::new(fref, shared.offsets.clone()),
            events: Vec::new(),
            loops: Vec::new(),
            split,
        };
        let mut memo = FxHashMap::default();
        let cands = uniform_loops(f, &rpo, &number, &spans, &dom);
        plan.loops = plan.settle_loops(module, &aff, cands, &mut memo);
        let by = |pick: fn(&ULoop) -> Block| -> FxHashMap<Block, usize> {
            plan.loops
                .iter()
                .enumerate()
                .map(|(i, l)| (pick(l), i))
                .collect()
        };
        let (heads, tests, latches) = (by(|l| l.header), by(|l| l.test), by(|l| l.latch));
        // The replicated loop whose body holds `b` directly (`Some(None)`: outside every
        // loop; `None`: in a loop that is not replicated).
        let home = |b: Block| -> Option<Option<usize>> {
            match innermost(&spans, number[&b]) {
                None => Some(None),
                Some(sp) => heads.get(&rpo[sp.0]).map(|&i| Some(i)),
            }
        };
        let mut events = Vec::new();
        for &b in &rpo {
            if let Some(&li) = heads.get(&b) {
                events.push(Ev::Open(li));
            }
            plan.start.insert(b, plan.accesses.len());
            let at = home(b);
            for &inst in &f.blocks[b].insts {
                if matches!(f.insts[inst], InstData::Barrier) {
                    // Every warp must meet it as often as the affine stream does: once,
                    // or once per iteration of the replicated loop it is in.
                    let every = match at {
                        Some(None) => on_every_path(f, &rpo, b),
                        Some(Some(li)) => {
                            plan.loops[li].region.is_none()
                                && dom.dominates(b, plan.loops[li].latch)
                        }
                        None => false,
                    };
                    if !every {
                        return None;
                    }
                    events.push(Ev::Bar);
                }
                if let Some(mut a) = candidate(f, inst).filter(|_| at.is_some()) {
                    let root = Node {
                        frame: 0,
                        v: a.addr,
                    };
                    // Loads may take a uniform tuple (one address for the warp).
                    let load = a.kind == Kind::Data;
                    if (shared.access)(inst) {
                        // The affine warp never touches `.shared`: its accesses
                        // take their addresses from `enq.addr` (no prefetch).
                        a.shared = true;
                        a.kind = Kind::Addr;
                    }
                    a.sel = select_tuple(module, &aff, &mut plan.frames, &mut memo, f, &a);
                    let replays = |memo: &mut FxHashMap<_, _>, frames: &mut Frames| {
                        aff.address_tuple(a.addr, a.mask)
                            .is_some_and(|t| !t.is_uniform() || load)
                            && Replay {
                                module,
                                aff: &aff,
                                frames,
                                mask: a.mask,
                                memo,
                                arm: None,
                            }
                            .replays(root, 0)
                    };
                    let ok = (!a.shared || cheap_to_expand(&aff, &a))
                        && (a.sel.is_some() || replays(&mut memo, &mut plan.frames));
                    if ok {
                        events.push(Ev::Access(plan.accesses.len()));
                        plan.index.insert(inst, plan.accesses.len());
                        plan.accesses.push(a);
                    }
                }
                let skipped = f.results[inst].is_some_and(|v| skip.contains(&v));
                if let Some(p) = compare_candidate(f, inst).filter(|_| at.is_some() && !skipped) {
                    let mut r = Replay {
                        module,
                        aff: &aff,
                        frames: &mut plan.frames,
                        mask: None,
                        memo: &mut memo,
                        arm: None,
                    };
                    if r.thread_compare(&p) {
                        events.push(Ev::Access(plan.accesses.len()));
                        plan.index.insert(inst, plan.accesses.len());
                        plan.accesses.push(p);
                    }
                }
            }
            plan.end.insert(b, plan.accesses.len());
            if let Some(&t) = f.blocks[b].insts.last() {
                plan.term_block.insert(t, b);
            }
            if let Some(&li) = tests.get(&b) {
                events.push(Ev::Test(li));
                plan.loops[li].mid = plan.accesses.len();
            }
            if let Some(&li) = latches.get(&b) {
                events.push(Ev::Close(li));
                plan.loops[li].end = plan.accesses.len();
            }
        }
        for &b in &rpo {
            if let Some(&li) = heads.get(&b) {
                plan.loops[li].start = plan.start[&b];
            }
        }
        if plan.accesses.is_empty() {
            return None;
        }
        let events = drop_barriers(events, &plan.accesses);
        plan.events = prune_loops(events, &plan.loops);
        plan.dead = plan.dead_code(f, &rpo);
        Some(plan)
    }

    /// The loops of `cands` that stay replicated: each loop's enclosing loop stays,
    /// its condition is launch-uniform (given the loops kept) and replays, with the
    /// header parameters that replay (registered in the frames). A loop dropped may
    /// have been used by another's, so this repeats until nothing changes.
    fn settle_loops(
        &mut self,
        module: &Module,
        aff: &FunctionAffine,
        mut cands: Vec<ULoop>,
        memo: &mut FxHashMap<(Node, Option<Value>), (bool, bool)>,
    ) -> Vec<ULoop> {
        let f = &module.functions[self.fref];
        for _ in 0..16 {
            self.frames.loops = cands
                .iter()
                .map(|l| (l.header, (l.pre_args.clone(), l.latch_args.clone())))
                .collect();
            self.frames.full_selects = cands.iter().flat_map(|l| l.full_selects.clone()).collect();
            self.frames.carried.clear();
            memo.clear();
            let before = cands.len();
            let heads: FxHashSet<Block> = cands.iter().map(|l| l.header).collect();
            let mut kept = Vec::new();
            for mut l in cands {
                if l.parent.is_some_and(|p| !heads.contains(&p)) {
                    continue;
                }
                let uniform = l
                    .cmp_args
                    .iter()
                    .all(|&a| launch_uniform(f, &self.frames, a, &mut FxHashSet::default(), 0));
                if !uniform {
                    continue;
                }
                l.carried.clear();
                for (i, &p) in f.blocks[l.header].params.iter().enumerate() {
                    let mut r = Replay {
                        module,
                        aff,
                        frames: &mut self.frames,
                        mask: None,
                        memo,
                        arm: None,
                    };
                    let ok = r.check(Node { frame: 0, v: p }, 0);
                    if ok.0 {
                        l.carried.push(i);
                    } else {
                        // Provisional results under this parameter are void.
                        memo.clear();
                    }
                    self.frames.carried.insert(p, ok);
                }
                let mut r = Replay {
                    module,
                    aff,
                    frames: &mut self.frames,
                    mask: None,
                    memo,
                    arm: None,
                };
                if l.cmp_args
                    .iter()
                    .all(|&a| r.replays(Node { frame: 0, v: a }, 0))
                {
                    kept.push(l);
                }
            }
            cands = kept;
            if cands.len() == before {
                memo.clear();
                return cands;
            }
        }
        self.frames.loops.clear();
        self.frames.carried.clear();
        self.frames.full_selects.clear();
        memo.clear();
        Vec::new()
    }

    /// The pure instructions left without uses once the decoupled accesses no longer
    /// read their addresses (the address arithmetic the affine stream took over).
    fn dead_code(&self, f: &Function, rpo: &[Block]) -> FxHashSet<Inst> {
        let mut uses: FxHashMap<Value, usize> = FxHashMap::default();
        for &b in rpo {
            for &inst in &f.blocks[b].insts {
                let mut ops = f.insts[inst].operands();
                if let Some(&i) = self.index.get(&inst) {
                    for x in self.accesses[i].operands() {
                        if let Some(k) = ops.iter().position(|&o| o == x) {
                            ops.remove(k);
                        }
                    }
                }
                for x in ops {
                    *uses.entry(x).or_default() += 1;
                }
            }
        }
        let mut dead = FxHashSet::default();
        let mut work: Vec<Value> = self.accesses.iter().flat_map(|a| a.operands()).collect();
        while let Some(v) = work.pop() {
            let ValueDef::Result(inst) = f.values[v].def else {
                continue;
            };
            // A decoupled compare still pops its `deq.pred`.
            if self.index.contains_key(&inst) {
                continue;
            }
            if uses.get(&v).copied().unwrap_or(0) > 0 || !pure(&f.insts[inst]) {
                continue;
            }
            if dead.insert(inst) {
                for x in f.insts[inst].operands() {
                    if let Some(n) = uses.get_mut(&x) {
                        *n -= 1;
                    }
                    work.push(x);
                }
            }
        }
        dead
    }

    /// `Some(c)` when the kernel launches in the virtual block `(c, blockDim.x / c)`
    /// ([`x_split`]); only a launch of a one-dimensional block whose extent `c`
    /// divides can run it (else the baseline runs, `super::run`).
    pub fn split(&self) -> Option<u32> {
        self.split
    }

    /// Whether `inst` (of the entry) is left out of the non-affine stream.
    pub fn dead(&self, inst: Inst) -> bool {
        self.dead.contains(&inst)
    }

    /// Whether `inst` (of the entry) is decoupled.
    pub fn decoupled(&self, inst: Inst) -> bool {
        self.index.contains_key(&inst)
    }

    /// The decoupled access or compare `inst` (of the entry).
    pub fn access(&self, inst: Inst) -> Option<&Access> {
        self.index.get(&inst).map(|&i| &self.accesses[i])
    }

    /// What a warp pops on the edge from terminator `term` to block `to` (`None`: the
    /// exit), in the affine stream's enqueue order: the entries between the end of
    /// `term`'s block and the start of `to`, the replicated loops wholly in that
    /// range repeated as the affine stream ran them (their constant trip counts, the
    /// part before the test once more for the last visit). Keeping the order across
    /// kinds matters: an access's entries in the address queue and a compare's in
    /// the predicate queue come through one affine tuple queue, so a warp draining
    /// one kind ahead of the other fills its queue of the other and holds the
    /// expansion units (a deadlock), and loads and stores share the address queue.
    pub fn drains(&self, term: Inst, to: Option<Block>) -> Vec<Drain> {
        let Some(&from) = self.term_block.get(&term) else {
            return Vec::new();
        };
        let mut lo = self.end.get(&from).copied().unwrap_or(0);
        // Leaving a replicated loop (from its test): its whole body was enqueued.
        for l in &self.loops {
            let inside = |b: &Block| l.blocks.contains(b);
            if inside(&from) && !to.as_ref().is_some_and(inside) {
                lo = lo.max(l.end);
            }
        }
        let hi = match to {
            Some(b) => self.start.get(&b).copied().unwrap_or(lo),
            None => self.accesses.len(),
        };
        self.drain_range(lo, hi.max(lo), from, &mut Vec::new())
    }

    /// The drains of entries `lo..hi` (see [`Self::drains`]); `open` holds the loops
    /// already expanded around the range.
    fn drain_range(&self, lo: usize, hi: usize, from: Block, open: &mut Vec<usize>) -> Vec<Drain> {
        let mut out = Vec::new();
        let mut k = lo;
        while k < hi {
            // The outermost skipped loop whose entries start at `k` (loops are in
            // enqueue order of their headers: outer ones first).
            let next = self.loops.iter().enumerate().find(|(i, l)| {
                !open.contains(i)
                    && !l.blocks.contains(&from)
                    && l.start == k
                    && l.start < l.end
                    && l.end <= hi
            });
            let Some((i, l)) = next else {
                out.push(Drain::One(self.accesses[k]));
                k += 1;
                continue;
            };
            open.push(i);
            let before = self.drain_range(l.start, l.mid, from, open);
            let mut body = before.clone();
            body.extend(self.drain_range(l.mid, l.end, from, open));
            open.pop();
            out.push(Drain::Repeat(l.trips.unwrap_or(0), body));
            out.extend(before);
            k = l.end;
        }
        out
    }

    /// The affine stream for `entry` (the selected entry, for its parameter indices).
    pub fn affine_stream(&self, module: &Module, entry: &Kernel) -> Result<Kernel, String> {
        let owned;
        let module = match self.split {
            Some(c) => {
                owned = split_module(module, self.fref, c);
                &owned
            }
            None => module,
        };
        let mut s = Stream {
            module,
            frames: self.frames.clone(),
            mask: None,
            entry,
            b: KernelBuilder::new(&entry.name, KernelKind::Affine),
            regs: FxHashMap::default(),
            ops: Vec::new(),
            cse: FxHashMap::default(),
            arm: None,
            wide_regs: FxHashSet::default(),
            open: Vec::new(),
            level: FxHashMap::default(),
            carried_regs: FxHashMap::default(),
        };
        for &ev in &self.events {
            match ev {
                Ev::Open(li) => s.loop_open(&self.loops[li], li)?,
                Ev::Test(li) => s.loop_branch(&self.loops[li], li)?,
                Ev::Close(li) => s.loop_close(&self.loops[li], li)?,
                Ev::Bar => s.op(Op::Bar { id: 0 }),
                Ev::Access(k) if self.accesses[k].kind == Kind::Pred => {
                    s.enq_pred(&self.accesses[k])?
                }
                Ev::Access(k) if self.accesses[k].sel.is_some() => s.enq_sel(&self.accesses[k])?,
                Ev::Access(k) => {
                    let a = self.accesses[k];
                    s.mask = a.mask;
                    let r = s.value(Node {
                        frame: 0,
                        v: a.addr,
                    })?;
                    let (r, space) = s.in_space(r, &a);
                    let ty = mem_type(a.scalar);
                    let op = match a.kind {
                        Kind::Data => Op::EnqData {
                            space,
                            ty,
                            addr: r,
                            wide: true,
                        },
                        Kind::Addr => Op::EnqAddr {
                            space,
                            ty,
                            addr: r,
                            wide: true,
                        },
                        Kind::Pred => return Err("decoupling: a compare as an access".into()),
                    };
                    s.op(op);
                }
            }
        }
        if !s.open.is_empty() {
            return Err("decoupling: a loop left open".into());
        }
        s.op(Op::Exit);
        s.flush();
        s.b.finish()
    }
}

/// A loop of the affine stream being emitted: its labels, the values in registers
/// before it (the header's parameters included), and its code so far.
struct Open {
    at: usize,
    head: LabelId,
    exit: LabelId,
    regs: FxHashMap<Node, Reg>,
    /// Computations that read no register the loop changes: before the header label.
    hoisted: Vec<Op>,
    /// The loop's code: instructions, inner loops' labels and branches.
    items: Vec<Item>,
}

/// A reverse postorder of `f` in which loops tend to be contiguous: the depth-first
/// search takes the successors leaving the current block's innermost loop first, so
/// they finish first and come after the loop. `None` when a retreating edge does not
/// go to a dominator (an irreducible loop).
fn loop_contiguous_rpo(f: &Function, dom: &DominatorTree) -> Option<Vec<Block>> {
    let base = dom.rpo();
    let mut preds: FxHashMap<Block, Vec<Block>> = FxHashMap::default();
    for &b in base {
        for s in f.successors(b) {
            preds.entry(s).or_default().push(b);
        }
    }
    // Natural loops (header -> body) from the back edges.
    let number: FxHashMap<Block, usize> = base.iter().enumerate().map(|(i, &b)| (b, i)).collect();
    let mut loops: FxHashMap<Block, FxHashSet<Block>> = FxHashMap::default();
    for (i, &u) in base.iter().enumerate() {
        for h in f.successors(u) {
            if number.get(&h).is_some_and(|&j| j <= i) {
                if !dom.dominates(h, u) {
                    return None;
                }
                let body = loops.entry(h).or_insert_with(|| FxHashSet::from_iter([h]));
                let mut work = vec![u];
                while let Some(x) = work.pop() {
                    if body.insert(x) {
                        work.extend(preds.get(&x).into_iter().flatten().copied());
                    }
                }
            }
        }
    }
    let innermost = |b: Block| {
        loops
            .values()
            .filter(|l| l.contains(&b))
            .min_by_key(|l| l.len())
    };
    let mut order: Vec<Block> = Vec::new();
    let mut seen: FxHashSet<Block> = FxHashSet::default();
    let mut stack: Vec<(Block, Vec<Block>)> = Vec::new();
    let entry = *base.first()?;
    let succs = |b: Block| {
        let mut v: Vec<Block> = f.successors(b).to_vec();
        let inner = innermost(b);
        // Popped from the back: the successors leaving the loop go last in `v`.
        v.sort_by_key(|s| inner.is_none_or(|l| l.contains(s)));
        v.reverse();
        v
    };
    seen.insert(entry);
    stack.push((entry, succs(entry)));
    while let Some((b, rest)) = stack.last_mut() {
        match rest.pop() {
            Some(s) if !seen.contains(&s) => {
                seen.insert(s);
                let next = succs(s);
                stack.push((s, next));
            }
            Some(_) => {}
            None => {
                order.push(*b);
                stack.pop();
            }
        }
    }
    order.reverse();
    Some(order)
}

/// The loops of `f` as spans of the reverse postorder: `(header, last)` numbers, from
/// a header to its last latch, with the number of back edges into the header; sorted
/// by header. With [`loop_contiguous_rpo`] a span usually holds exactly its loop.
type Span = (usize, usize, usize);

fn loop_nest(f: &Function, rpo: &[Block], number: &FxHashMap<Block, usize>) -> Vec<Span> {
    let mut by_head: FxHashMap<usize, (usize, usize)> = FxHashMap::default();
    for (i, &b) in rpo.iter().enumerate() {
        for s in f.successors(b) {
            if let Some(&j) = number.get(&s) {
                if j <= i {
                    let e = by_head.entry(j).or_insert((i, 0));
                    e.0 = e.0.max(i);
                    e.1 += 1;
                }
            }
        }
    }
    let mut spans: Vec<Span> = by_head.into_iter().map(|(j, (i, n))| (j, i, n)).collect();
    spans.sort();
    spans
}

/// The smallest span holding reverse-postorder number `k`.
fn innermost(spans: &[Span], k: usize) -> Option<Span> {
    spans
        .iter()
        .filter(|&&(j, i, _)| j <= k && k <= i)
        .min_by_key(|&&(j, i, _)| i - j)
        .copied()
}

/// The Open and Close events of a loop holding no access, barrier or carried value
/// are left out: the affine stream has nothing to do in it.
/// `events` without the barriers no decoupled load comes after (later in the
/// stream, or earlier in a loop around the barrier: its next iteration). The affine
/// stream replicates barriers so that its early loads do not pass a barrier the data
/// they read may be written before (paper §4.2); an `enq.addr` reads nothing, so
/// after the last load a barrier only holds the affine warp back (nw: its 31
/// sweeps' barriers delayed the write-back's address expansion).
fn drop_barriers(events: Vec<Ev>, accesses: &[Access]) -> Vec<Ev> {
    let load = |e: &Ev| matches!(e, Ev::Access(i) if accesses[*i].kind == Kind::Data);
    let mut open: Vec<usize> = Vec::new();
    let mut keep = vec![true; events.len()];
    for (k, e) in events.iter().enumerate() {
        match e {
            Ev::Open(_) => open.push(k),
            Ev::Close(_) => {
                open.pop();
            }
            Ev::Bar => {
                let after = events[k + 1..].iter().any(load);
                let around = open.first().is_some_and(|&o| events[o..k].iter().any(load));
                keep[k] = after || around;
            }
            _ => {}
        }
    }
    events
        .into_iter()
        .zip(keep)
        .filter_map(|(e, k)| k.then_some(e))
        .collect()
}

fn prune_loops(events: Vec<Ev>, loops: &[ULoop]) -> Vec<Ev> {
    let mut busy = vec![false; loops.len()];
    let mut open: Vec<usize> = Vec::new();
    for &e in &events {
        match e {
            Ev::Open(i) => open.push(i),
            Ev::Close(_) => {
                open.pop();
            }
            Ev::Access(_) | Ev::Bar => open.iter().for_each(|&i| busy[i] = true),
            Ev::Test(_) => {}
        }
    }
    for (i, l) in loops.iter().enumerate() {
        busy[i] |= !l.carried.is_empty();
    }
    // A busy loop's enclosing loops are busy (their Open/Close bracket it).
    let mut open: Vec<usize> = Vec::new();
    for &e in events.iter().rev() {
        match e {
            Ev::Close(i) => {
                if busy[i] {
                    open.iter().for_each(|&o| busy[o] = true);
                }
                open.push(i);
            }
            Ev::Open(_) => {
                open.pop();
            }
            _ => {}
        }
    }
    events
        .into_iter()
        .filter(|e| match e {
            Ev::Open(i) | Ev::Test(i) | Ev::Close(i) => busy[*i],
            _ => true,
        })
        .collect()
}

/// A uniform loop the affine stream replicates: a natural loop, contiguous in the
/// enqueue order, with a single latch ending in `jump header(..)`, entered from a
/// single preheader edge, leaving only at its test block (which every iteration
/// passes: it dominates the latch), its test an integer comparison of values the same
/// for every warp of every block (see [`launch_uniform`]). Blocks inside may branch
/// (skip regions, whose warps drain) and hold inner loops. A top-level loop lies on
/// every path from the entry to a `return`; an inner one on every path through an
/// iteration of its enclosing loop (its header dominates that loop's latch), leaves
/// to a block of that loop, and is replicated only while that loop is.
#[derive(Clone, Debug)]
struct ULoop {
    header: Block,
    latch: Block,
    /// The loop's blocks in order (header first, latch last).
    blocks: Vec<Block>,
    /// The header of the enclosing loop, if any.
    parent: Option<Block>,
    /// When the loop (or an enclosing one) lies in a region that warps with no lane
    /// of `m` on skip (`brif any(m), region, after`): `m`. Every warp that runs the
    /// loop has a lane of `m` on, so `any` of a mask covering `m` is true in it.
    region: Option<Value>,
    /// The times the test lets the loop go on, when constant (skipped loops must
    /// have one: the skipping warps drain that many iterations' entries).
    trips: Option<u64>,
    /// The block whose branch is the real exit test (the others' never leave).
    test: Block,
    /// The latch's `select m, a, _` whose `m` is on in every thread (see [`full`]).
    full_selects: FxHashSet<Value>,
    /// Per header parameter: the preheader edge's and the back edge's argument.
    pre_args: Vec<Value>,
    latch_args: Vec<Value>,
    /// The header parameters the affine stream keeps in registers.
    carried: Vec<usize>,
    cond: IntCC,
    cmp_args: [Value; 2],
    /// Whether the loop goes on when the condition holds.
    on_true: bool,
    /// The accesses enqueued before the header, before the end of the test block,
    /// and before the end of the latch.
    start: usize,
    mid: usize,
    end: usize,
}

/// The entry's candidate uniform loops (see [`ULoop`]), by shape; whether their
/// tests are launch-uniform and replay is settled later ([`Plan::settle_loops`]).
fn uniform_loops(
    f: &Function,
    rpo: &[Block],
    number: &FxHashMap<Block, usize>,
    spans: &[Span],
    dom: &DominatorTree,
) -> Vec<ULoop> {
    let mut preds: FxHashMap<Block, Vec<Block>> = FxHashMap::default();
    for &b in rpo {
        for s in f.successors(b) {
            preds.entry(s).or_default().push(b);
        }
    }
    let mut out = Vec::new();
    for &(j, i, back) in spans {
        // Properly nested in every other span, a single latch, exactly its loop.
        let nested = spans
            .iter()
            .all(|&(a, b, _)| b < j || i < a || (a <= j && i <= b) || (j <= a && b <= i));
        if !nested || back != 1 || i == j {
            continue;
        }
        let blocks = &rpo[j..=i];
        let (h, l) = (rpo[j], rpo[i]);
        let mut body: FxHashSet<Block> = FxHashSet::from_iter([h]);
        let mut work = vec![l];
        while let Some(x) = work.pop() {
            if body.insert(x) {
                work.extend(preds.get(&x).into_iter().flatten().copied());
            }
        }
        if body.len() != blocks.len() || blocks.iter().any(|b| !body.contains(b)) {
            continue;
        }
        let parent = spans
            .iter()
            .filter(|&&(a, b, _)| a <= j && i <= b && (a, b) != (j, i))
            .min_by_key(|&&(a, b, _)| b - a)
            .copied();
        // Every warp runs the loop (region `None`), or every warp with a lane of a
        // skip region's mask on.
        let inherited = parent.and_then(|(a, _, _)| {
            out.iter()
                .find(|l: &&ULoop| l.header == rpo[a])
                .map(|l| l.region)
        });
        let region = match parent {
            None if on_every_path(f, rpo, h) => Some(None),
            None => skip_region(f, rpo, h, |g| on_every_path(f, rpo, g)).map(Some),
            Some((a, b, _)) if a < j => {
                let within = |g: Block| {
                    number.get(&g).is_some_and(|&k| a < k && k <= b)
                        && innermost(spans, number[&g]).map(|s| s.0) == Some(a)
                        && dom.dominates(g, rpo[b])
                };
                let own = if dom.dominates(h, rpo[b]) {
                    Some(None)
                } else {
                    skip_region(f, rpo, h, within).map(Some)
                };
                // An enclosing region's mask still holds inside.
                match (own, inherited.flatten()) {
                    (Some(None), Some(m)) => Some(Some(m)),
                    (own, _) => own,
                }
            }
            Some(_) => None,
        };
        let Some(region) = region else {
            continue;
        };
        let Some(mut lp) = uniform_loop(f, blocks, dom, region) else {
            continue;
        };
        // The warps that skip a region drain its loops' entries: a constant count.
        if lp.region.is_some() && lp.trips.is_none() {
            continue;
        }
        // The test is the loop's own (not an inner loop's) and leaves into the
        // enclosing loop (the affine stream's exit label is inside it).
        if innermost(spans, number[&lp.test]).map(|s| (s.0, s.1)) != Some((j, i)) {
            continue;
        }
        if let Some((a, b, _)) = parent {
            let exits_inside = f.successors(lp.test).iter().all(|s| {
                number
                    .get(s)
                    .is_some_and(|&k| (j <= k && k <= i) || (a <= k && k <= b))
            });
            if !exits_inside {
                continue;
            }
            lp.parent = Some(rpo[a]);
        }
        out.push(lp);
    }
    out.sort_by_key(|l| number[&l.header]);
    out
}

/// The [`ULoop`] of `blocks` (header first, latch last, the whole natural loop), when
/// the shape and the test fit: the latch jumps back; the blocks whose branch leaves
/// the loop are the test (an `icmp`, or `any(m & icmp)` with `m` [`full`]) and `brif
/// any(m)` with `m` full (always taken into the loop), as ISPC-style `for` loops
/// with a varying counter the uniformity analysis proves uniform are lowered.
fn uniform_loop(
    f: &Function,
    blocks: &[Block],
    dom: &DominatorTree,
    region: Option<Value>,
) -> Option<ULoop> {
    let (h, l) = (*blocks.first()?, *blocks.last()?);
    let inside: FxHashSet<Block> = blocks.iter().copied().collect();
    let term = |b: Block| f.blocks[b].insts.last().map(|&t| &f.insts[t]);
    let latch_args = match term(l)? {
        InstData::Jump { dest } if dest.block == h => dest.args.to_vec(),
        _ => return None,
    };
    // Per block leaving the loop: (branch condition, whether `then` stays inside).
    let mut branches = Vec::new();
    for &b in &blocks[..blocks.len() - 1] {
        let t = term(b)?;
        if t.successors().iter().all(|d| inside.contains(&d.block)) {
            continue;
        }
        match t {
            InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                let (ti, ei) = (
                    inside.contains(&then_dest.block),
                    inside.contains(&else_dest.block),
                );
                if ti && !ei {
                    branches.push((b, *cond, true));
                } else if ei && !ti {
                    branches.push((b, *cond, false));
                } else {
                    return None;
                }
            }
            _ => return None,
        }
    }
    // Two edges into the header: the preheader's and the back edge.
    let mut pre_args = None;
    for &b in &f.layout {
        let Some(&t) = f.blocks[b].insts.last() else {
            continue;
        };
        for call in f.insts[t].successors() {
            if call.block != h || b == l {
                continue;
            }
            if inside.contains(&b) || pre_args.is_some() {
                return None;
            }
            pre_args = Some(call.args.to_vec());
        }
    }
    let pre_args = pre_args?;
    if pre_args.len() != latch_args.len() {
        return None;
    }
    // The test: the single branch on a comparison.
    let icmp_of = |v: Value| match f.values[v].def {
        ValueDef::Result(i) => match f.insts[i] {
            InstData::Icmp { cond, args } => Some((cond, args)),
            _ => None,
        },
        ValueDef::Param(..) => None,
    };
    let band_args = |v: Value| match f.values[v].def {
        ValueDef::Result(i) => match &f.insts[i] {
            InstData::Binary {
                op: BinaryOp::Band,
                args,
            } => Some(*args),
            _ => None,
        },
        ValueDef::Param(..) => None,
    };
    let any_arg = |v: Value| f.any_of(v);
    // Candidates: (block, compare value, the mask it is `and`ed with, continues on true).
    let mut tests = Vec::new();
    for &(b, cond, on_true) in &branches {
        // `any` of a mask covering the region's: true in every warp that runs the
        // loop (checked below), not a test.
        let in_region = |x: Value| region.is_some_and(|m| covers(f, x, m, 0));
        if icmp_of(cond).is_some() && !f.value_type(cond).varying {
            tests.push((b, cond, None, on_true));
        } else if let Some([x, y]) = any_arg(cond).filter(|&x| !in_region(x)).and_then(band_args) {
            if icmp_of(y).is_some() {
                tests.push((b, y, Some(x), on_true));
            } else if icmp_of(x).is_some() {
                tests.push((b, x, Some(y), on_true));
            }
        }
    }
    let [(test, c, m, on_true)] = tests.as_slice() else {
        return None;
    };
    // Every iteration passes the test.
    if !dom.dominates(*test, l) {
        return None;
    }
    let (cc, args) = icmp_of(*c)?;
    let mut lp = ULoop {
        header: h,
        latch: l,
        blocks: blocks.to_vec(),
        parent: None,
        region,
        trips: None,
        test: *test,
        full_selects: FxHashSet::default(),
        pre_args,
        latch_args,
        carried: Vec::new(),
        cond: cc,
        cmp_args: args,
        on_true: *on_true,
        start: 0,
        mid: 0,
        end: 0,
    };
    let is_full = |v: Value| {
        full(f, &lp, *c, v, &mut FxHashSet::default(), 0)
            || region.is_some_and(|m| covers(f, v, m, 0))
    };
    if m.is_some_and(|m| !is_full(m)) {
        return None;
    }
    // The other branches never leave: `any` of a full mask, staying on `then`.
    for &(b, cond, stays_on_true) in &branches {
        if b != *test && !(stays_on_true && any_arg(cond).is_some_and(is_full)) {
            return None;
        }
    }
    let selects: FxHashSet<Value> = f.blocks[l]
        .insts
        .iter()
        .filter_map(|&i| match &f.insts[i] {
            InstData::Select { args }
                if is_full(args[0]) || any_arg(args[0]).is_some_and(is_full) =>
            {
                f.inst_result(i)
            }
            _ => None,
        })
        .collect();
    lp.full_selects = selects;
    lp.trips = trip_count(f, &lp);
    Some(lp)
}

/// Whether mask `x` is on wherever mask `m` is: `m` itself, the entry's mask, `band`
/// of masks covering `m`, or a mask covering an operand of `m = band(p, q)`.
fn covers(f: &Function, x: Value, m: Value, d: u32) -> bool {
    if x == m {
        return true;
    }
    let entry = f.entry_block();
    if f.sig.takes_mask && entry.and_then(|e| f.blocks[e].params.last().copied()) == Some(x) {
        return true;
    }
    if d > 16 {
        return false;
    }
    let band = |v: Value| match f.values[v].def {
        ValueDef::Result(i) => match &f.insts[i] {
            InstData::Binary {
                op: BinaryOp::Band,
                args,
            } => Some(*args),
            _ => None,
        },
        ValueDef::Param(..) => None,
    };
    if let Some([a, b]) = band(x) {
        if covers(f, a, m, d + 1) && covers(f, b, m, d + 1) {
            return true;
        }
    }
    band(m).is_some_and(|[p, q]| covers(f, x, p, d + 1) || covers(f, x, q, d + 1))
}

/// The region mask of loop header `h` when it lies in a skip region: a block `g`
/// that `placed(g)` accepts, ending in `brif any(m), r, after` with `after` accepted
/// too, every path from `r` reaching `after` through `h` and without returning.
/// The innermost such `g` (the last in `rpo`) gives `m`.
fn skip_region(
    f: &Function,
    rpo: &[Block],
    h: Block,
    placed: impl Fn(Block) -> bool,
) -> Option<Value> {
    for &g in rpo.iter().rev() {
        let Some(&t) = f.blocks[g].insts.last() else {
            continue;
        };
        let InstData::Brif {
            cond,
            then_dest,
            else_dest,
        } = &f.insts[t]
        else {
            continue;
        };
        let m = match f.values[*cond].def {
            ValueDef::Result(i) => match &f.insts[i] {
                InstData::Lane {
                    op: LaneOp::Any,
                    args,
                } if args.len() == 1 => args[0],
                _ => continue,
            },
            ValueDef::Param(..) => continue,
        };
        let (r, after) = (then_dest.block, else_dest.block);
        if r == after || !placed(g) || !placed(after) {
            continue;
        }
        // From `r`, avoiding `h`: neither `after`, `g` nor a `return` is reachable.
        let mut seen: FxHashSet<Block> = FxHashSet::default();
        let mut work = vec![r];
        let mut ok = true;
        while let Some(x) = work.pop() {
            if x == h || !seen.insert(x) {
                continue;
            }
            let returns = f.blocks[x]
                .insts
                .last()
                .is_some_and(|&t| matches!(f.insts[t], InstData::Return { .. }));
            if x == after || x == g || returns {
                ok = false;
                break;
            }
            work.extend(taken_successors(f, x));
        }
        if ok {
            return Some(m);
        }
    }
    None
}

/// The number of times `lp`'s test lets the loop go on, when its operands are
/// constants or header parameters starting at constants and stepped by constants
/// (at most 2^16 iterations).
fn trip_count(f: &Function, lp: &ULoop) -> Option<u64> {
    let params = &f.blocks[lp.header].params;
    let mut env: FxHashMap<Value, i64> = FxHashMap::default();
    for (i, &p) in params.iter().enumerate() {
        if int_width(f.value_type(p).scalar).is_some() {
            if let Some(v) = const_eval(f, lp, lp.pre_args[i], &FxHashMap::default(), 0) {
                env.insert(p, v);
            }
        }
    }
    let w = int_width(f.value_type(lp.cmp_args[0]).scalar)?;
    for n in 0..=(1u64 << 16) {
        let x = const_eval(f, lp, lp.cmp_args[0], &env, 0)?;
        let y = const_eval(f, lp, lp.cmp_args[1], &env, 0)?;
        if compare_const(lp.cond, w, x, y) != lp.on_true {
            return Some(n);
        }
        let mut next = FxHashMap::default();
        for (i, &p) in params.iter().enumerate() {
            if env.contains_key(&p) {
                if let Some(v) = const_eval(f, lp, lp.latch_args[i], &env, 0) {
                    next.insert(p, v);
                }
            }
        }
        env = next;
    }
    None
}

/// `v` evaluated on constants and the header parameters of `env` (integers wrapped
/// to their width, sign-extended).
fn const_eval(
    f: &Function,
    lp: &ULoop,
    v: Value,
    env: &FxHashMap<Value, i64>,
    d: u32,
) -> Option<i64> {
    if d > 32 {
        return None;
    }
    let w = int_width(f.value_type(v).scalar)?;
    let wrap = |x: i64| if w == 32 { x as i32 as i64 } else { x };
    if let Some(&x) = env.get(&v) {
        return Some(x);
    }
    let sub = |x: Value| const_eval(f, lp, x, env, d + 1);
    let ValueDef::Result(inst) = f.values[v].def else {
        return None;
    };
    match &f.insts[inst] {
        InstData::Iconst { bits, .. } => Some(wrap(*bits as i64)),
        InstData::Binary { op, args } => {
            let (a, b) = (sub(args[0])?, sub(args[1])?);
            Some(wrap(match op {
                BinaryOp::Iadd => a.wrapping_add(b),
                BinaryOp::Isub => a.wrapping_sub(b),
                BinaryOp::Imul => a.wrapping_mul(b),
                _ => return None,
            }))
        }
        InstData::Splat { arg } => sub(*arg),
        InstData::Unary {
            op: UnaryOp::Ineg,
            arg,
        } => Some(wrap(sub(*arg)?.wrapping_neg())),
        InstData::Select { args } if lp.full_selects.contains(&v) => sub(args[1]),
        _ => None,
    }
}

/// `x cc y` on `w`-bit integers (held sign-extended).
fn compare_const(cc: IntCC, w: u32, x: i64, y: i64) -> bool {
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let (ux, uy) = (x as u64 & mask, y as u64 & mask);
    match cc {
        IntCC::Eq => x == y,
        IntCC::Ne => x != y,
        IntCC::Slt => x < y,
        IntCC::Sle => x <= y,
        IntCC::Sgt => x > y,
        IntCC::Sge => x >= y,
        IntCC::Ult => ux < uy,
        IntCC::Ule => ux <= uy,
        IntCC::Ugt => ux > uy,
        IntCC::Uge => ux >= uy,
    }
}

/// Whether mask `v` is on in every thread of the launch at the loop's latch (and in
/// the blocks after its test): the entry's mask, a true constant, `band` of such
/// masks or of one with the loop's test `c` (true there), and a header parameter
/// whose incoming values are such (the preheader's not reading the loop).
fn full(f: &Function, lp: &ULoop, c: Value, v: Value, seen: &mut FxHashSet<Value>, d: u32) -> bool {
    if d > 64 {
        return false;
    }
    let entry = f.entry_block();
    if f.sig.takes_mask && entry.and_then(|e| f.blocks[e].params.last().copied()) == Some(v) {
        return true;
    }
    match f.values[v].def {
        ValueDef::Param(b, i) if b == lp.header => {
            let i = i as usize;
            if !seen.insert(v) {
                return true;
            }
            let pre = lp.pre_args[i];
            let outside = |x: Value| match f.values[x].def {
                ValueDef::Param(pb, _) => !lp.blocks.contains(&pb),
                ValueDef::Result(r) => !lp.blocks.iter().any(|&lb| f.blocks[lb].insts.contains(&r)),
            };
            outside(pre)
                && full(f, lp, c, pre, &mut FxHashSet::default(), d + 1)
                && full(f, lp, c, lp.latch_args[i], seen, d + 1)
        }
        ValueDef::Param(..) => false,
        ValueDef::Result(inst) => match &f.insts[inst] {
            InstData::Iconst { bits, .. } => f.value_type(v).scalar == Scalar::Bool && *bits != 0,
            InstData::Binary {
                op: BinaryOp::Band,
                args,
            } => args
                .iter()
                .all(|&x| x == c || full(f, lp, c, x, seen, d + 1)),
            _ => false,
        },
    }
}

/// Whether `v` is the same in every warp of every block: constants, uniform entry
/// parameters, block and grid extents, integer arithmetic on them, `select
/// any(entry mask), a, _` (every warp has a lane on), the replicated loops' latch
/// `select`s on full masks, and the header parameters of the loops in `fr` (uniform
/// loops: every warp is in the same iteration) whose incoming values are such.
fn launch_uniform(
    f: &Function,
    fr: &Frames,
    v: Value,
    seen: &mut FxHashSet<Value>,
    d: u32,
) -> bool {
    if d > 64 || int_width(f.value_type(v).scalar).is_none() {
        return false;
    }
    let sub = |x: Value, seen: &mut FxHashSet<Value>| launch_uniform(f, fr, x, seen, d + 1);
    match f.values[v].def {
        ValueDef::Param(b, i) if fr.loops.contains_key(&b) => {
            let (pre, latch) = &fr.loops[&b];
            let i = i as usize;
            !seen.insert(v) || (sub(pre[i], seen) && sub(latch[i], seen))
        }
        ValueDef::Param(b, i) if entry_param(f, v).is_none() => {
            // A merge after a branch on a launch-uniform compare.
            uniform_merge(f, b, i as usize).is_some_and(|(c, x, y)| {
                launch_uniform_cond(f, fr, c, seen, d + 1) && sub(x, seen) && sub(y, seen)
            })
        }
        ValueDef::Param(..) => !f.value_type(v).varying,
        ValueDef::Result(inst) => match &f.insts[inst] {
            InstData::Iconst { .. } => true,
            InstData::Special { reg } => matches!(
                reg,
                SpecialReg::BlockDimX
                    | SpecialReg::BlockDimY
                    | SpecialReg::BlockDimZ
                    | SpecialReg::DynSharedBytes
                    | SpecialReg::GridDimX
                    | SpecialReg::GridDimY
                    | SpecialReg::GridDimZ
            ),
            InstData::Binary { op, args } => {
                let shift = matches!(op, BinaryOp::Ishl | BinaryOp::Sshr | BinaryOp::Ushr);
                let known = matches!(
                    op,
                    BinaryOp::Iadd
                        | BinaryOp::Isub
                        | BinaryOp::Imul
                        | BinaryOp::Sdiv
                        | BinaryOp::Udiv
                        | BinaryOp::Srem
                        | BinaryOp::Urem
                        | BinaryOp::Band
                        | BinaryOp::Bor
                        | BinaryOp::Bxor
                        | BinaryOp::Smin
                        | BinaryOp::Smax
                        | BinaryOp::Umin
                        | BinaryOp::Umax
                ) || (shift && const_of(f, args[1]).is_some());
                known && sub(args[0], seen) && sub(args[1], seen)
            }
            InstData::Convert { op, arg, .. } => {
                matches!(
                    op,
                    ConvOp::Sext | ConvOp::Zext | ConvOp::Ireduce | ConvOp::Bitcast
                ) && sub(*arg, seen)
            }
            InstData::Splat { arg } => sub(*arg, seen),
            InstData::Unary {
                op: UnaryOp::Ineg,
                arg,
            } => sub(*arg, seen),
            InstData::Select { args }
                if any_of_entry_mask(f, args[0]) || fr.full_selects.contains(&v) =>
            {
                sub(args[1], seen)
            }
            InstData::Select { args } => {
                launch_uniform_cond(f, fr, args[0], seen, d + 1)
                    && sub(args[1], seen)
                    && sub(args[2], seen)
            }
            _ => false,
        },
    }
}

/// Whether `c` is an integer compare (maybe splat) of [`launch_uniform`] values.
fn launch_uniform_cond(
    f: &Function,
    fr: &Frames,
    c: Value,
    seen: &mut FxHashSet<Value>,
    d: u32,
) -> bool {
    let ValueDef::Result(i) = f.values[c].def else {
        return false;
    };
    match &f.insts[i] {
        InstData::Splat { arg } => d < 64 && launch_uniform_cond(f, fr, *arg, seen, d + 1),
        InstData::Icmp { args, .. } => args.iter().all(|&v| launch_uniform(f, fr, v, seen, d + 1)),
        _ => false,
    }
}

/// Whether `c` is `any` of the entry's mask parameter (on in every warp: a warp has
/// at least one thread).
fn any_of_entry_mask(f: &Function, c: Value) -> bool {
    let Some(entry) = f.entry_block() else {
        return false;
    };
    let mask = f
        .sig
        .takes_mask
        .then(|| f.blocks[entry].params.last())
        .flatten();
    let ValueDef::Result(i) = f.values[c].def else {
        return false;
    };
    matches!(&f.insts[i], InstData::Lane { op: LaneOp::Any, args }
        if args.len() == 1 && Some(&args[0]) == mask)
}

/// The successors of `b` a warp may take: not the else edge of `brif any(entry
/// mask)` (every warp has a lane on; the optimizer unswitches loops on it).
fn taken_successors(f: &Function, b: Block) -> Vec<Block> {
    let Some(&t) = f.blocks[b].insts.last() else {
        return Vec::new();
    };
    match &f.insts[t] {
        InstData::Brif {
            cond, then_dest, ..
        } if any_of_entry_mask(f, *cond) => vec![then_dest.block],
        _ => f.successors(b).to_vec(),
    }
}

/// Whether every path from the entry to a `return` of `f` passes `b`: no `return`
/// is reachable from the entry once `b` is removed.
fn on_every_path(f: &Function, rpo: &[Block], b: Block) -> bool {
    let mut seen: FxHashSet<Block> = FxHashSet::default();
    let mut work = vec![rpo[0]];
    while let Some(x) = work.pop() {
        if x == b || !seen.insert(x) {
            continue;
        }
        let returns = f.blocks[x]
            .insts
            .last()
            .is_some_and(|&t| matches!(f.insts[t], InstData::Return { .. }));
        if returns {
            return false;
        }
        work.extend(taken_successors(f, x));
    }
    true
}

/// `inst` as an access that may be decoupled (by its kind and type).
fn candidate(f: &Function, inst: Inst) -> Option<Access> {
    match &f.insts[inst] {
        InstData::Load { ty, addr, .. } if word_scalar(ty.scalar) => Some(Access {
            inst,
            addr: *addr,
            kind: Kind::Data,
            scalar: ty.scalar,
            mask: f.insts[inst].mask(),
            cmp: None,
            sel: None,
            shared: false,
        }),
        InstData::Store { addr, value, .. } => {
            let s = f.value_type(*value).scalar;
            word_scalar(s).then_some(Access {
                inst,
                addr: *addr,
                kind: Kind::Addr,
                scalar: s,
                mask: f.insts[inst].mask(),
                cmp: None,
                sel: None,
                shared: false,
            })
        }
        _ => None,
    }
}

/// The compare of a select-tuple address for access `a` (`None` when its address is
/// none): the affine analysis gives a select tuple ([`crate::analysis::affine::Piecewise`])
/// on a compare `c` of the entry whose operands replay in every lane (one varying),
/// and the address replays with every select on `c` read as its `then` arm and as
/// its `else` arm (each an exact per-lane computation: a lane takes the arm its
/// compare picks, which is what the expansion units do).
fn select_tuple(
    module: &Module,
    aff: &FunctionAffine,
    frames: &mut Frames,
    memo: &mut FxHashMap<(Node, Option<Value>), (bool, bool)>,
    f: &Function,
    a: &Access,
) -> Option<Sel> {
    let p = aff.class(a.addr).piecewise()?;
    let (t, e) = p.arms()?;
    if t.is_uniform() && e.is_uniform() && a.kind != Kind::Data {
        return None;
    }
    let args = p.pred.args;
    int_width(f.value_type(args[0]).scalar)?;
    let mut r = Replay {
        module,
        aff,
        frames: &mut *frames,
        mask: None,
        memo,
        arm: None,
    };
    let (x, y) = (
        r.check(
            Node {
                frame: 0,
                v: args[0],
            },
            0,
        ),
        r.check(
            Node {
                frame: 0,
                v: args[1],
            },
            0,
        ),
    );
    if !(x.0 && y.0 && (x.1 || y.1)) {
        return None;
    }
    for side in [true, false] {
        let mut own = FxHashMap::default();
        let mut r = Replay {
            module,
            aff,
            frames: &mut *frames,
            mask: a.mask,
            memo: &mut own,
            arm: Some((p.key, side)),
        };
        if !r.replays(
            Node {
                frame: 0,
                v: a.addr,
            },
            0,
        ) {
            return None;
        }
    }
    Some(Sel {
        key: p.key,
        cc: p.pred.cond,
        args,
    })
}

/// How `thread_idx.x` is split when every read of it in the entry is `% c` or `/ c`
/// for one constant `c` (`srem`/`urem` and `sdiv`/`udiv`; for a power of two also
/// `band c - 1` and shifts right by `log2 c`: equal on the non-negative index), the
/// entry reads neither
/// `thread_idx.y` nor `thread_idx.z` and no other function reads a thread index (lud's
/// `tx = threadIdx.x % 16`, `ty = threadIdx.x / 16`). Launched in the virtual block
/// `(c, blockDim.x / c)`, the hardware's `%tid.x` is `thread_idx.x % c` and `%tid.y`
/// is `thread_idx.x / c`, with the same linear ids, so warps hold the same threads;
/// the affine stream then reads them as two dimensions, which the AEU steps with the
/// block shape (paper §4.2 ⑦), where the tuple model has no `%` or `/` of an index
/// (paper §4.6). Exact whenever `c` divides the extent, which the launch checks.
pub fn x_split(module: &Module, fref: FuncRef) -> Option<u32> {
    use SpecialReg as S;
    let reads = |g: &Function, regs: &[SpecialReg]| {
        g.insts
            .values()
            .any(|d| matches!(d, InstData::Special { reg } if regs.contains(reg)))
    };
    // The functions the entry calls (the affine stream replays callees' bodies).
    let mut called: FxHashSet<FuncRef> = FxHashSet::default();
    let mut work = vec![fref];
    while let Some(g) = work.pop() {
        // Only the instructions in the layout: a pass may leave detached calls to
        // functions no longer in the module (no panic on them).
        let Some(gf) = module.functions.get(g) else {
            continue;
        };
        let live = gf.layout.iter().flat_map(|&b| gf.blocks[b].insts.iter());
        for d in live.map(|&i| &gf.insts[i]) {
            if let InstData::Call { func, .. } = d {
                if called.insert(*func) {
                    work.push(*func);
                }
            }
        }
    }
    let all = [S::ThreadIdxX, S::ThreadIdxY, S::ThreadIdxZ];
    let others = called
        .iter()
        .any(|&g| g != fref && reads(&module.functions[g], &all));
    let f = &module.functions[fref];
    if others || reads(f, &[S::ThreadIdxY, S::ThreadIdxZ]) {
        return None;
    }
    let xs: FxHashSet<Value> = f
        .insts
        .iter()
        .filter(|(_, d)| matches!(d, InstData::Special { reg: S::ThreadIdxX }))
        .filter_map(|(i, _)| f.inst_result(i))
        .collect();
    let mut c = None;
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            let d = &f.insts[i];
            if !d.operands().iter().any(|v| xs.contains(v)) {
                continue;
            }
            let (_, k) = split_use(f, d, &xs)?;
            if c.is_some_and(|c| c != k) {
                return None;
            }
            c = Some(k);
        }
    }
    c
}

/// `d` as `(true: thread_idx.x / c, false: thread_idx.x % c)` with its `c` (2 to 1024;
/// a power of two for the mask and shift forms), when it is one of the forms
/// [`x_split`] accepts. Any `c` that divides the block works: the virtual block
/// `(c, blockDim.x / c)` holds the same threads in the same order (paper §4.6's
/// division and modulo by constants).
fn split_use(f: &Function, d: &InstData, xs: &FxHashSet<Value>) -> Option<(bool, u32)> {
    let InstData::Binary { op, args } = d else {
        return None;
    };
    if !xs.contains(&args[0]) || xs.contains(&args[1]) {
        return None;
    }
    let k = divisor(f, args[1])?;
    let (div, c) = match op {
        BinaryOp::Srem | BinaryOp::Urem => (false, k),
        BinaryOp::Band => (false, k.checked_add(1).filter(|c| c.is_power_of_two())?),
        BinaryOp::Sdiv | BinaryOp::Udiv => (true, k),
        BinaryOp::Sshr | BinaryOp::Ushr if k < 11 => (true, 1u64 << k),
        _ => return None,
    };
    (2..=1024).contains(&c).then_some((div, c as u32))
}

/// A constant divisor: `c`, or `select m, c, _` with `m` the entry's mask (the
/// lowering's guard of division in lanes off: on in every thread of a launch whose
/// block has no lanes past its end, as the virtual block has none).
fn divisor(f: &Function, v: Value) -> Option<u64> {
    let ValueDef::Result(i) = f.values[v].def else {
        return None;
    };
    match &f.insts[i] {
        InstData::Iconst { bits, .. } => Some(*bits),
        InstData::Splat { arg } => const_of(f, *arg),
        InstData::Select { args } => {
            let entry = f.entry_block()?;
            let mask = f.sig.takes_mask.then(|| f.blocks[entry].params.last())??;
            (args[0] == *mask).then(|| divisor(f, args[1]))?
        }
        _ => None,
    }
}

/// `module` with the entry's `thread_idx.x % c` and `/ c` ([`x_split`]) read as the
/// virtual block's `thread_idx.x` and `thread_idx.y` (the same values, the same
/// instruction and value numbers).
fn split_module(module: &Module, fref: FuncRef, c: u32) -> Module {
    let mut m = module.clone();
    let f = &module.functions[fref];
    let xs: FxHashSet<Value> = f
        .insts
        .iter()
        .filter(|(_, d)| {
            matches!(
                d,
                InstData::Special {
                    reg: SpecialReg::ThreadIdxX
                }
            )
        })
        .filter_map(|(i, _)| f.inst_result(i))
        .collect();
    let g = &mut m.functions[fref];
    for (i, d) in f.insts.iter() {
        if let Some((div, _)) = split_use(f, d, &xs).filter(|&(_, k)| k == c) {
            let reg = if div {
                SpecialReg::ThreadIdxY
            } else {
                SpecialReg::ThreadIdxX
            };
            g.insts[i] = InstData::Special { reg };
        }
    }
    m
}

/// `inst` as an integer compare that may be decoupled (`enq.pred`): 32- or 64-bit
/// integer operands.
fn compare_candidate(f: &Function, inst: Inst) -> Option<Access> {
    let InstData::Icmp { cond, args } = f.insts[inst] else {
        return None;
    };
    let scalar = f.value_type(args[0]).scalar;
    int_width(scalar)?;
    Some(Access {
        inst,
        addr: args[0],
        kind: Kind::Pred,
        scalar,
        mask: None,
        cmp: Some((cond, args[1])),
        sel: None,
        shared: false,
    })
}

/// The largest thread-x stride (bytes) of a `.shared` access worth decoupling: two
/// lines per 32-thread warp.
const MAX_SHARED_STRIDE: i64 = 8;

/// Whether the AEU expands `.shared` access `a` cheaply: it steps one line per cycle
/// (§4.2), so a warp of a strided access (a tile's column, nw's anti-diagonal: up to
/// 32 lines) costs more expansion cycles than the two or three address instructions
/// each warp saves, on a unit every warp of the SM waits on; such an access keeps its
/// address arithmetic. Global accesses decouple whatever their stride: their early
/// requests hide memory latency.
fn cheap_to_expand(aff: &FunctionAffine, a: &Access) -> bool {
    let small = |t: &crate::analysis::affine::Tuple| {
        t.const_stride(crate::analysis::affine::Dim::ThreadX)
            .is_some_and(|s| s.abs() <= MAX_SHARED_STRIDE)
    };
    match aff.class(a.addr).piecewise().and_then(|p| p.arms()) {
        Some((t, e)) if a.sel.is_some() => small(t) && small(e),
        _ => aff.address_tuple(a.addr, a.mask).is_some_and(small),
    }
}

/// An instruction of the tuple rules, without effects (removable when unused).
fn pure(d: &InstData) -> bool {
    match d {
        InstData::Iconst { .. }
        | InstData::Special { .. }
        | InstData::Splat { .. }
        | InstData::SharedAddr { .. } => true,
        // (min/max: a select tuple's choice.)
        InstData::Binary { op, .. } => matches!(
            op,
            BinaryOp::Iadd
                | BinaryOp::Isub
                | BinaryOp::Imul
                | BinaryOp::Ishl
                | BinaryOp::Smin
                | BinaryOp::Smax
                | BinaryOp::Umin
                | BinaryOp::Umax
        ),
        InstData::Unary { op, .. } => *op == UnaryOp::Ineg,
        // A select tuple's choice (its compare is pure too).
        InstData::Select { .. } | InstData::Icmp { .. } => true,
        InstData::Convert { op, .. } => matches!(
            op,
            ConvOp::Sext | ConvOp::Zext | ConvOp::Ireduce | ConvOp::Bitcast
        ),
        _ => false,
    }
}

/// The entry's own (non-mask) parameter number of `v`, when it is one.
fn entry_param(f: &Function, v: Value) -> Option<u32> {
    let ValueDef::Param(b, i) = f.values[v].def else {
        return None;
    };
    let entry = f.entry_block()?;
    let n = f.blocks[entry].params.len() as u32 - u32::from(f.sig.takes_mask);
    (b == entry && i < n).then_some(i)
}

/// A value of the entry (frame 0) or of an inlined callee instance (a frame per call
/// site the replayed addresses go through).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Node {
    frame: u32,
    v: Value,
}

/// The callee instances: each frame's function and its arguments (nodes of the
/// caller's frame).
#[derive(Clone, Debug)]
struct Frames {
    list: Vec<(FuncRef, Vec<Node>)>,
    by_call: FxHashMap<(u32, Inst), u32>,
    /// The replicated loops' headers: (preheader arguments, back edge arguments).
    loops: FxHashMap<Block, (Vec<Value>, Vec<Value>)>,
    /// The header parameters decided: (replays, varies with the thread index).
    carried: FxHashMap<Value, (bool, bool)>,
    /// The replicated loops' latch `select`s on masks on in every thread.
    full_selects: FxHashSet<Value>,
    /// The `.shared` offsets of the entry's resident shared variables: their
    /// addresses (`SHARED_WINDOW` + offset) are constants the affine stream replays.
    shared_offsets: FxHashMap<SharedVar, u32>,
}

impl Frames {
    fn new(entry: FuncRef, shared_offsets: FxHashMap<SharedVar, u32>) -> Frames {
        Frames {
            list: vec![(entry, Vec::new())],
            by_call: FxHashMap::default(),
            loops: FxHashMap::default(),
            carried: FxHashMap::default(),
            full_selects: FxHashSet::default(),
            shared_offsets,
        }
    }

    /// The address of resident shared variable `v` (`None`: not in `.shared`).
    fn shared_addr(&self, v: SharedVar) -> Option<u64> {
        self.shared_offsets
            .get(&v)
            .map(|&off| SHARED_WINDOW + u64::from(off))
    }

    fn func<'m>(&self, m: &'m Module, frame: u32) -> &'m Function {
        &m.functions[self.list[frame as usize].0]
    }

    /// `n` followed through copies that are not computations: block parameters (in
    /// the entry: the single incoming edge other than the `brif any(mask)` skips,
    /// which no warp with a lane of the access's `mask` on takes), calls made under
    /// the access's mask (the callee's single returned value) and callee parameters
    /// (the call's arguments). Ends at an instruction result or an entry parameter.
    fn resolve(&mut self, m: &Module, mut n: Node, mask: Option<Value>) -> Option<Node> {
        for _ in 0..64 {
            let f = self.func(m, n.frame);
            match f.values[n.v].def {
                ValueDef::Param(b, i) => {
                    if Some(b) == f.entry_block() {
                        entry_param(f, n.v)?;
                        if n.frame == 0 {
                            return Some(n);
                        }
                        n = *self.list[n.frame as usize].1.get(i as usize)?;
                        continue;
                    }
                    if n.frame != 0 {
                        return None;
                    }
                    if self.loops.contains_key(&b) {
                        // A loop-carried value: a register of the affine stream.
                        return Some(n);
                    }
                    match single_incoming(f, b, i as usize, mask) {
                        Some(v) => n = Node { frame: 0, v },
                        // Two values merged after a branch: a `selp` when it is uniform.
                        None => return uniform_merge(f, b, i as usize).map(|_| n),
                    }
                }
                ValueDef::Result(inst) => match &f.insts[inst] {
                    InstData::Call {
                        func,
                        args,
                        mask: cm,
                    } => {
                        if n.frame != 0 || (cm.is_some() && *cm != mask) {
                            return None;
                        }
                        let ret = single_return(&m.functions[*func])?;
                        let key = (n.frame, inst);
                        let fr = match self.by_call.get(&key) {
                            Some(&x) => x,
                            None => {
                                let a = args.iter().map(|&v| Node { frame: n.frame, v }).collect();
                                self.list.push((*func, a));
                                let x = (self.list.len() - 1) as u32;
                                self.by_call.insert(key, x);
                                x
                            }
                        };
                        n = Node { frame: fr, v: ret };
                    }
                    // `select m, a, 0` on the mask the access runs under (a callee's
                    // entry mask is the call's, the access's): `a` where it matters.
                    // `select any(entry mask), a, _`: every warp has a lane on.
                    InstData::Select { args }
                        if self.is_mask(f, n.frame, args[0], mask)
                            || (n.frame == 0
                                && (any_of_entry_mask(f, args[0])
                                    || self.full_selects.contains(&n.v))) =>
                    {
                        n = Node {
                            frame: n.frame,
                            v: args[1],
                        };
                    }
                    _ => return Some(n),
                },
            }
        }
        None
    }
}

impl Frames {
    /// Whether `c` (of `frame`) is on in every lane where the access's `mask` is.
    fn is_mask(&self, f: &Function, frame: u32, c: Value, mask: Option<Value>) -> bool {
        if frame == 0 {
            return mask == Some(c);
        }
        let Some(entry) = f.entry_block() else {
            return false;
        };
        f.sig.takes_mask && f.blocks[entry].params.last() == Some(&c)
    }
}

/// The argument `i` of block `b`'s single incoming edge that is not the skip edge of
/// a `brif any(mask)`.
fn single_incoming(f: &Function, b: Block, i: usize, mask: Option<Value>) -> Option<Value> {
    let mut found = Vec::new();
    for &blk in &f.layout {
        let Some(&t) = f.blocks[blk].insts.last() else {
            continue;
        };
        let data = &f.insts[t];
        let skip_else = match data {
            InstData::Brif { cond, .. } => is_any_of(f, *cond, mask),
            _ => false,
        };
        for (k, call) in data.successors().iter().enumerate() {
            if call.block != b || (skip_else && k == 1) {
                continue;
            }
            found.push(*call.args.get(i)?);
        }
    }
    match found.as_slice() {
        [v] => Some(*v),
        _ => None,
    }
}

/// Whether `c` is `any(mask)`.
fn is_any_of(f: &Function, c: Value, mask: Option<Value>) -> bool {
    let (ValueDef::Result(i), Some(m)) = (f.values[c].def, mask) else {
        return false;
    };
    matches!(&f.insts[i], InstData::Lane { op: LaneOp::Any, args } if args.as_slice() == [m])
}

/// The value of `g`'s single `return` (none when it has several or returns nothing).
fn single_return(g: &Function) -> Option<Value> {
    let mut rets = g.layout.iter().flat_map(|&b| {
        g.blocks[b].insts.iter().filter_map(|&i| match g.insts[i] {
            InstData::Return { value } => Some(value),
            _ => None,
        })
    });
    let first = rets.next()??;
    rets.next().is_none().then_some(first)
}

/// The replay check of one access's address.
struct Replay<'a> {
    module: &'a Module,
    aff: &'a FunctionAffine,
    frames: &'a mut Frames,
    mask: Option<Value>,
    memo: &'a mut FxHashMap<(Node, Option<Value>), (bool, bool)>,
    /// `Some((c, side))`: the entry's selects on `c` read as their `then` (`true`)
    /// or `else` arm (the replay of one arm of a select tuple; its own memo).
    arm: Option<(Value, bool)>,
}

impl Replay<'_> {
    /// Whether `n`'s definition chain replays on tuples.
    fn replays(&mut self, n: Node, depth: u32) -> bool {
        self.check(n, depth).0
    }

    /// (replays, varies with the thread index).
    fn check(&mut self, n: Node, depth: u32) -> (bool, bool) {
        let Some(n) = self.frames.resolve(self.module, n, self.mask) else {
            return (false, true);
        };
        if let Some(r) = self.header_param(n, depth) {
            return r;
        }
        if let Some(&r) = self.memo.get(&(n, self.mask)) {
            return r;
        }
        // (A select tuple's plain view may be non-affine: min/max.)
        let typed = n.frame != 0
            || self.aff.tuple(n.v).is_some()
            || self.aff.class(n.v).piecewise().is_some();
        let r = if depth < 64 && typed {
            self.check_def(n, depth)
        } else {
            (false, true)
        };
        self.memo.insert((n, self.mask), r);
        r
    }

    /// The check of a replicated loop's header parameter (`None`: `n` is none): as
    /// decided, else (while the loops are settled) its two incoming values, the
    /// parameter itself taken to replay meanwhile.
    fn header_param(&mut self, n: Node, depth: u32) -> Option<(bool, bool)> {
        let f = self.frames.func(self.module, n.frame);
        let ValueDef::Param(b, i) = f.values[n.v].def else {
            return None;
        };
        if n.frame != 0 {
            return None;
        }
        let (pre, latch) = self.frames.loops.get(&b)?;
        let (pre, latch) = (pre[i as usize], latch[i as usize]);
        if let Some(&r) = self.frames.carried.get(&n.v) {
            return Some(r);
        }
        let key = (n, None);
        if let Some(&r) = self.memo.get(&key) {
            return Some(r);
        }
        if depth >= 64 || int_width(f.value_type(n.v).scalar).is_none() {
            return Some((false, true));
        }
        self.memo.insert(key, (true, false));
        let saved = self.mask.take();
        let x = self.check(Node { frame: 0, v: pre }, depth + 1);
        let y = self.check(Node { frame: 0, v: latch }, depth + 1);
        self.mask = saved;
        let r = (x.0 && y.0, x.1 || y.1);
        self.memo.insert(key, r);
        Some(r)
    }

    fn check_def(&mut self, n: Node, depth: u32) -> (bool, bool) {
        const NO: (bool, bool) = (false, true);
        let f = self.frames.func(self.module, n.frame);
        let ty = f.value_type(n.v);
        if int_width(ty.scalar).is_none() {
            return NO;
        }
        let sub = |this: &mut Self, v: Value| this.check(Node { frame: n.frame, v }, depth + 1);
        let inst = match f.values[n.v].def {
            ValueDef::Param(b, i) if n.frame == 0 && Some(b) != f.entry_block() => {
                // Resolved: a merge after a uniform branch (`uniform_merge`).
                let Some((c, x, y)) = uniform_merge(f, b, i as usize) else {
                    return NO;
                };
                let (x, y) = (sub(self, x), sub(self, y));
                return (
                    self.uniform_cond(n.frame, c, depth) && x.0 && y.0,
                    x.1 || y.1,
                );
            }
            // Resolved: an entry parameter of the entry.
            ValueDef::Param(..) => return (!ty.varying, false),
            ValueDef::Result(i) => i,
        };
        match &f.insts[inst] {
            // One arm of a select tuple.
            d if n.frame == 0
                && self
                    .arm
                    .is_some_and(|(k, s)| arm_of(d, n.v, k, s).is_some()) =>
            {
                match self.arm.and_then(|(k, s)| arm_of(d, n.v, k, s)) {
                    Some(x) => sub(self, x),
                    None => NO,
                }
            }
            InstData::Iconst { .. } => (true, false),
            InstData::SharedAddr { shared } => (self.frames.shared_addr(*shared).is_some(), false),
            InstData::Special { reg } => match reg {
                SpecialReg::LaneIndex | SpecialReg::GangIndex | SpecialReg::Clock => NO,
                r => (true, r.is_varying()),
            },
            InstData::Binary { op, args } => {
                let (a, b) = (sub(self, args[0]), sub(self, args[1]));
                // Both operands the same in every thread: any integer operation
                // replays on scalars (paper §4.6: the affine warp's scalar work).
                // The affine warp computes scalars once for every block: operands
                // must not depend on the block index (`launch_uniform`).
                let scalar = a.0 && b.0 && self.launch_scalar(n.frame, args);
                match op {
                    BinaryOp::Iadd | BinaryOp::Isub => (a.0 && b.0, a.1 || b.1),
                    BinaryOp::Sdiv
                    | BinaryOp::Udiv
                    | BinaryOp::Srem
                    | BinaryOp::Urem
                    | BinaryOp::Band
                    | BinaryOp::Bor
                    | BinaryOp::Bxor
                    | BinaryOp::Smin
                    | BinaryOp::Smax
                    | BinaryOp::Umin
                    | BinaryOp::Umax => (scalar, false),
                    BinaryOp::Sshr | BinaryOp::Ushr => {
                        let k = const_of(f, args[1]);
                        let bits = u64::from(ty.scalar.bits());
                        (scalar && k.is_some_and(|k| k < bits), false)
                    }
                    // A product needs a factor the same in every thread of every
                    // block (else it is no tuple): the affine warp's tuples carry
                    // `%ctaid` as a dimension of its own, so `blockIdx.x * t` with a
                    // thread-varying `t` is not one.
                    BinaryOp::Imul => {
                        let scalar = |v: Value| {
                            const_of(f, v).is_some() || self.launch_scalar(n.frame, &[v])
                        };
                        (
                            a.0 && b.0 && (scalar(args[0]) || scalar(args[1])),
                            a.1 || b.1,
                        )
                    }
                    BinaryOp::Ishl => {
                        let k = const_of(f, args[1]);
                        (
                            a.0 && k.is_some_and(|k| k < u64::from(ty.scalar.bits())),
                            a.1,
                        )
                    }
                    _ => NO,
                }
            }
            InstData::Unary {
                op: UnaryOp::Ineg,
                arg,
            } => sub(self, *arg),
            InstData::Convert { op, arg, .. } => {
                let conv = matches!(
                    op,
                    ConvOp::Sext | ConvOp::Zext | ConvOp::Ireduce | ConvOp::Bitcast
                ) && int_width(f.value_type(*arg).scalar).is_some();
                let a = sub(self, *arg);
                (conv && a.0, a.1)
            }
            InstData::Splat { arg } => sub(self, *arg),
            // A select on a condition the same in every thread: a `selp`.
            InstData::Select { args } => {
                let (x, y) = (sub(self, args[1]), sub(self, args[2]));
                let c = self.uniform_cond(n.frame, args[0], depth);
                (c && x.0 && y.0, x.1 || y.1)
            }
            _ => NO,
        }
    }

    /// Whether compare `p` ([`compare_candidate`]) decouples: both operands replay
    /// (in every lane: no mask) and one varies with the thread index (a compare of
    /// values the same in every thread stays a `setp` of the uniform datapath).
    fn thread_compare(&mut self, p: &Access) -> bool {
        let Some((_, rhs)) = p.cmp else {
            return false;
        };
        let x = self.check(
            Node {
                frame: 0,
                v: p.addr,
            },
            0,
        );
        let y = self.check(Node { frame: 0, v: rhs }, 0);
        x.0 && y.0 && (x.1 || y.1)
    }

    /// Whether `c` (of `frame`) is an integer compare (maybe splat) of values that
    /// replay and are the same in every thread (a `setp` of the affine stream).
    fn uniform_cond(&mut self, frame: u32, c: Value, depth: u32) -> bool {
        let f = self.frames.func(self.module, frame);
        let ValueDef::Result(i) = f.values[c].def else {
            return false;
        };
        match &f.insts[i] {
            InstData::Splat { arg } => depth < 64 && self.uniform_cond(frame, *arg, depth + 1),
            InstData::Icmp { args, .. } => {
                self.launch_scalar(frame, args)
                    && args
                        .iter()
                        .all(|&v| self.replays(Node { frame, v }, depth + 1))
            }
            _ => false,
        }
    }

    /// Whether `args` (of `frame`) are the same in every thread of every block (the
    /// entry's values only).
    fn launch_scalar(&self, frame: u32, args: &[Value]) -> bool {
        let f = self.frames.func(self.module, frame);
        frame == 0
            && args
                .iter()
                .all(|&v| launch_uniform(f, self.frames, v, &mut FxHashSet::default(), 0))
    }
}

/// Block `b`'s parameter `i` when it merges the two arms of a branch: `b`'s only two
/// incoming edges come from the two sides of one `brif c` (directly, or through a
/// block whose only predecessor is the `brif`'s and which jumps to `b`). Returns
/// (`c`, the value on the `then` side, the value on the `else` side). On a uniform
/// `c` this is `select c, then, else` in every thread.
fn uniform_merge(f: &Function, b: Block, i: usize) -> Option<(Value, Value, Value)> {
    // Every edge into `b` and into each block: (source block, successor index).
    let mut into: FxHashMap<Block, Vec<(Block, usize)>> = FxHashMap::default();
    for &blk in &f.layout {
        let Some(&t) = f.blocks[blk].insts.last() else {
            continue;
        };
        for (k, call) in f.insts[t].successors().iter().enumerate() {
            into.entry(call.block).or_default().push((blk, k));
        }
    }
    let edges = into.get(&b)?;
    let [(p, pk), (q, qk)] = edges.as_slice() else {
        return None;
    };
    let arg = |src: Block, k: usize| -> Option<Value> {
        let t = *f.blocks[src].insts.last()?;
        f.insts[t].successors().get(k)?.args.get(i).copied()
    };
    // The branch block and side (0: then, 1: else) an edge into `b` comes from.
    let side = |src: Block, k: usize| -> Option<(Block, usize)> {
        let t = *f.blocks[src].insts.last()?;
        if matches!(f.insts[t], InstData::Brif { .. }) {
            return Some((src, k));
        }
        match into.get(&src)?.as_slice() {
            [(d, dk)] if matches!(f.insts[*f.blocks[*d].insts.last()?], InstData::Brif { .. }) => {
                Some((*d, *dk))
            }
            _ => None,
        }
    };
    let ((d1, s1), (d2, s2)) = (side(*p, *pk)?, side(*q, *qk)?);
    if d1 != d2 || s1 == s2 {
        return None;
    }
    let t = *f.blocks[d1].insts.last()?;
    let InstData::Brif { cond, .. } = f.insts[t] else {
        return None;
    };
    let (x, y) = (arg(*p, *pk)?, arg(*q, *qk)?);
    Some(if s1 == 0 { (cond, x, y) } else { (cond, y, x) })
}

/// The `setp` comparison and operand type of an IR integer compare of `w` bits.
fn compare_of(cc: IntCC, w: u32) -> (Cmp, T) {
    let (cmp, signed) = match cc {
        IntCC::Eq => (Cmp::Eq, false),
        IntCC::Ne => (Cmp::Ne, false),
        IntCC::Slt => (Cmp::Lt, true),
        IntCC::Sle => (Cmp::Le, true),
        IntCC::Sgt => (Cmp::Gt, true),
        IntCC::Sge => (Cmp::Ge, true),
        IntCC::Ult => (Cmp::Lt, false),
        IntCC::Ule => (Cmp::Le, false),
        IntCC::Ugt => (Cmp::Gt, false),
        IntCC::Uge => (Cmp::Ge, false),
    };
    let ty = match (w, signed) {
        (64, true) => T::S64,
        (64, false) => T::U64,
        (_, true) => T::S32,
        (_, false) => T::U32,
    };
    (cmp, ty)
}

fn const_of(f: &Function, v: Value) -> Option<u64> {
    match f.values[v].def {
        ValueDef::Result(i) => match f.insts[i] {
            InstData::Iconst { bits, .. } => Some(bits),
            _ => None,
        },
        ValueDef::Param(..) => None,
    }
}

/// The affine stream being built: each replayed value in an `%a`/`%ad` register.
struct Stream<'a> {
    module: &'a Module,
    frames: Frames,
    /// The mask of the access being replayed (for [`Frames::resolve`]).
    mask: Option<Value>,
    entry: &'a Kernel,
    b: KernelBuilder,
    regs: FxHashMap<Node, Reg>,
    /// The straight-line code so far (pushed into `b` at the end).
    ops: Vec<Op>,
    /// Each computation already emitted (its text with the destination left out) and
    /// its register: equal tuples are computed once.
    cse: FxHashMap<String, Reg>,
    /// As [`Replay::arm`]: the arm of a select tuple being computed.
    arm: Option<(Value, bool)>,
    /// The loop-carried registers that are 64-bit pairs.
    wide_regs: FxHashSet<Reg>,
    /// The loops being emitted, outermost first (each one's code is pushed at its
    /// end, after what it hoisted).
    open: Vec<Open>,
    /// Per register computed in loops: how many of the open loops it is computed in
    /// (0, or absent: before them all). A computation goes before the innermost loop
    /// its operands allow.
    level: FxHashMap<Reg, usize>,
    /// Every replicated loop's header parameters and their carried registers. After
    /// the loop, such a register holds the parameter's value from the loop's last
    /// run, which is the value any later use the header dominates reads, also after
    /// the loops around it close.
    carried_regs: FxHashMap<Node, Reg>,
}

enum Item {
    Op(Op),
    Label(LabelId),
    Bra(Option<Guard>, LabelId),
}

/// The registers `op` reads, when it is a computation the stream may hoist.
fn hoistable_sources(op: &Op) -> Option<Vec<Reg>> {
    let regs = |s: &[Src]| {
        s.iter()
            .filter_map(|x| match x {
                Src::Reg(r) => Some(*r),
                _ => None,
            })
            .collect()
    };
    match op {
        Op::Bin { a, b, .. } | Op::Setp { a, b, .. } => Some(regs(&[*a, *b])),
        Op::Selp { a, b, p, .. } => Some(regs(&[*a, *b, Src::Reg(*p)])),
        Op::Un { a, .. } | Op::Cvt { a, .. } => Some(regs(&[*a])),
        Op::Ld {
            space: Space::Param,
            ..
        } => Some(Vec::new()),
        _ => None,
    }
}

fn a(r: Reg) -> Src {
    Src::Reg(r)
}

impl Stream<'_> {
    fn op(&mut self, op: Op) {
        self.ops.push(op);
    }

    /// Moves the code so far into the innermost open loop, or the kernel.
    fn flush(&mut self) {
        for op in std::mem::take(&mut self.ops) {
            self.put(Item::Op(op));
        }
    }

    fn put(&mut self, item: Item) {
        if let Some(o) = self.open.last_mut() {
            o.items.push(item);
            return;
        }
        match item {
            Item::Op(op) => {
                self.b.push(GInst::new(op));
            }
            Item::Label(l) => self.b.bind(l),
            Item::Bra(g, l) => {
                self.b.bra(g, true, l);
            }
        }
    }

    fn level_of(&self, r: Reg) -> usize {
        self.level.get(&r).copied().unwrap_or(0)
    }

    /// `d` after [`Self::reuse`]; inside loops, the computation of `d` goes before the
    /// innermost loop in which it reads something the loop changes.
    fn settle(&mut self, d: Reg) -> Reg {
        let r = self.reuse(d);
        if r != d {
            return r;
        }
        let depth = self.open.len();
        if depth == 0 {
            return d;
        }
        let lvl = self
            .ops
            .last()
            .and_then(hoistable_sources)
            .map_or(depth, |srcs| {
                srcs.iter().map(|&x| self.level_of(x)).max().unwrap_or(0)
            })
            .min(depth);
        if lvl < depth {
            if let Some(op) = self.ops.pop() {
                self.open[lvl].hoisted.push(op);
            }
        }
        self.level.insert(d, lvl);
        d
    }

    /// A fresh affine register for `v`, marked wide when `v` is 64-bit.
    fn fresh(&mut self, v: Value) -> Result<Reg, String> {
        let f = self.frames.func(self.module, 0);
        Ok(match int_width(f.value_type(v).scalar) {
            Some(64) => {
                let r = self.b.areg64();
                self.wide_regs.insert(r);
                r
            }
            Some(_) => self.b.areg(),
            None => return Err("decoupling: a non-integer loop-carried value".into()),
        })
    }

    fn copy(&mut self, dst: Reg, src: Reg) {
        let ty = if !self.wide(dst) { T::B32 } else { T::B64 };
        self.mov(ty, dst, a(src));
    }

    fn wide(&self, r: Reg) -> bool {
        self.wide_regs.contains(&r)
    }

    /// Before the loop: the carried parameters' first values in their own registers,
    /// then (when the loop closes) the header's label.
    fn loop_open(&mut self, l: &ULoop, at: usize) -> Result<(), String> {
        self.mask = None;
        let f = self.frames.func(self.module, 0);
        let params = f.blocks[l.header].params.clone();
        let mut carried = Vec::new();
        for &i in &l.carried {
            let x = self.value(Node {
                frame: 0,
                v: l.pre_args[i],
            })?;
            let d = self.fresh(params[i])?;
            self.copy(d, x);
            let node = Node {
                frame: 0,
                v: params[i],
            };
            self.regs.insert(node, d);
            self.carried_regs.insert(node, d);
            carried.push(d);
        }
        self.flush();
        let head = self.b.label(&format!("LOOP{at}"));
        let exit = self.b.label(&format!("DONE{at}"));
        self.open.push(Open {
            at,
            head,
            exit,
            regs: self.regs.clone(),
            hoisted: Vec::new(),
            items: Vec::new(),
        });
        // Changed by the loop: computed in it.
        let depth = self.open.len();
        for d in carried {
            self.level.insert(d, depth);
        }
        Ok(())
    }

    /// The test block's exit: `setp` on the replayed operands, `bra.uni` out.
    fn loop_branch(&mut self, l: &ULoop, at: usize) -> Result<(), String> {
        if self.open.last().map(|o| o.at) != Some(at) {
            return Err("decoupling: a loop test outside its loop".into());
        }
        self.mask = None;
        let x = self.value(Node {
            frame: 0,
            v: l.cmp_args[0],
        })?;
        let y = self.value(Node {
            frame: 0,
            v: l.cmp_args[1],
        })?;
        let f = self.frames.func(self.module, 0);
        let w = int_width(f.value_type(l.cmp_args[0]).scalar).ok_or("decoupling: compare")?;
        let (cmp, ty) = compare_of(l.cond, w);
        let p = self.b.pred();
        self.op(Op::Setp {
            cmp,
            ty,
            dst: p,
            a: a(x),
            b: a(y),
        });
        self.flush();
        // Out when the condition says the loop stops.
        let guard = Guard {
            pred: p.idx,
            negate: l.on_true,
        };
        let exit = self.open.last().map(|o| o.exit).ok_or("decoupling: loop")?;
        self.put(Item::Bra(Some(guard), exit));
        Ok(())
    }
    /// The latch: the carried parameters' next values (through temporaries: a
    /// parallel copy), the jump back, the exit label; values computed inside the loop
    /// are forgotten.
    fn loop_close(&mut self, l: &ULoop, at: usize) -> Result<(), String> {
        if self.open.last().map(|o| o.at) != Some(at) {
            return Err("decoupling: loops closed out of order".into());
        }
        self.mask = None;
        let f = self.frames.func(self.module, 0);
        let params = f.blocks[l.header].params.clone();
        let mut temps = Vec::new();
        for &i in &l.carried {
            let x = self.value(Node {
                frame: 0,
                v: l.latch_args[i],
            })?;
            let t = self.fresh(params[i])?;
            self.copy(t, x);
            temps.push((i, t));
        }
        let node = |i: usize| Node {
            frame: 0,
            v: params[i],
        };
        let mut carried = Vec::new();
        for (i, t) in temps {
            let d = *self
                .open
                .last()
                .and_then(|o| o.regs.get(&node(i)))
                .ok_or("decoupling: a carried register")?;
            self.copy(d, t);
            carried.push(d);
        }
        self.flush();
        let o = self.open.pop().ok_or("decoupling: no loop open")?;
        for op in o.hoisted {
            self.put(Item::Op(op));
        }
        self.put(Item::Label(o.head));
        for item in o.items {
            self.put(item);
        }
        self.put(Item::Bra(None, o.head));
        self.put(Item::Label(o.exit));
        // What the loop changed is forgotten (but the carried registers of this loop
        // and of the loops it holds, which hold the values their last runs left);
        // what it hoisted stays valid.
        let depth = self.open.len();
        for d in carried {
            self.level.insert(d, depth);
        }
        for (n, &d) in &self.carried_regs {
            if self.regs.get(n) == Some(&d) && self.level.get(&d).is_some_and(|&l| l > depth) {
                self.level.insert(d, depth);
            }
        }
        let level = &self.level;
        let lv = |r: &Reg| level.get(r).copied().unwrap_or(0);
        self.regs
            .retain(|n, r| lv(r) <= depth || o.regs.contains_key(n));
        self.cse.retain(|_, r| lv(r) <= depth);
        Ok(())
    }

    fn mov(&mut self, ty: T, dst: Reg, a: Src) {
        self.op(Op::Un {
            op: UnOp::Mov,
            ty,
            dst,
            a,
        });
    }

    fn param(&mut self, name: &str, ty: T, dst: Reg) -> Result<(), String> {
        let pi = self
            .entry
            .param_index(name)
            .ok_or_else(|| format!("decoupling: no parameter `{name}`"))?;
        self.op(Op::Ld {
            space: Space::Param,
            ty,
            dst,
            addr: Address {
                base: AddrBase::Param(pi as u16),
                offset: 0,
            },
        });
        Ok(())
    }

    /// The register holding `v`'s tuple, emitting its chain first.
    fn value(&mut self, n: Node) -> Result<Reg, String> {
        let n = self
            .frames
            .resolve(self.module, n, self.mask)
            .ok_or("decoupling: an address that does not resolve")?;
        if let Some(&r) = self.regs.get(&n) {
            return Ok(r);
        }
        let module = self.module;
        let f = self.frames.func(module, n.frame);
        let v = n.v;
        let at = |v: Value| Node { frame: n.frame, v };
        let w = int_width(f.value_type(v).scalar).ok_or("decoupling: a non-integer tuple")?;
        let (ity, bty) = if w == 64 {
            (T::U64, T::B64)
        } else {
            (T::U32, T::B32)
        };
        let d = if w == 64 {
            self.b.areg64()
        } else {
            self.b.areg()
        };
        let inst = match f.values[v].def {
            ValueDef::Param(b, i) if n.frame == 0 && Some(b) != f.entry_block() => {
                let (c, x, y) = uniform_merge(f, b, i as usize)
                    .ok_or("decoupling: a merge that is not a uniform branch's")?;
                self.selp(n, c, x, y, bty, d)?;
                let d = self.settle(d);
                self.regs.insert(n, d);
                return Ok(d);
            }
            ValueDef::Param(..) => {
                let i = entry_param(f, v).ok_or("decoupling: a non-entry parameter")?;
                self.param(&format!("p{i}"), bty, d)?;
                let d = self.settle(d);
                self.regs.insert(n, d);
                return Ok(d);
            }
            ValueDef::Result(i) => i,
        };
        match &f.insts[inst] {
            d if n.frame == 0 && self.arm.is_some_and(|(k, s)| arm_of(d, v, k, s).is_some()) => {
                let x = self
                    .arm
                    .and_then(|(k, s)| arm_of(d, v, k, s))
                    .ok_or("decoupling: a select tuple's arm")?;
                let x = self.value(at(x))?;
                self.regs.insert(n, x);
                return Ok(x);
            }
            InstData::Iconst { bits, .. } => self.mov(bty, d, Src::Imm(*bits)),
            InstData::SharedAddr { shared } => {
                let addr = self
                    .frames
                    .shared_addr(*shared)
                    .ok_or("decoupling: a shared variable not in .shared")?;
                self.mov(bty, d, Src::Imm(addr))
            }
            InstData::Special { reg } => self.special(*reg, d)?,
            InstData::Binary { op, args } => {
                let x = self.value(at(args[0]))?;
                let sty = if w == 64 { T::S64 } else { T::S32 };
                let (bop, ty) = match op {
                    BinaryOp::Iadd => (BinOp::Add, ity),
                    BinaryOp::Isub => (BinOp::Sub, ity),
                    BinaryOp::Imul => (BinOp::Mul, ity),
                    BinaryOp::Ishl => (BinOp::Shl, bty),
                    BinaryOp::Sdiv => (BinOp::Div, sty),
                    BinaryOp::Udiv => (BinOp::Div, ity),
                    BinaryOp::Srem => (BinOp::Rem, sty),
                    BinaryOp::Urem => (BinOp::Rem, ity),
                    BinaryOp::Band => (BinOp::And, bty),
                    BinaryOp::Bor => (BinOp::Or, bty),
                    BinaryOp::Bxor => (BinOp::Xor, bty),
                    BinaryOp::Sshr => (BinOp::Shr, sty),
                    BinaryOp::Ushr => (BinOp::Shr, ity),
                    BinaryOp::Smin => (BinOp::Min, sty),
                    BinaryOp::Smax => (BinOp::Max, sty),
                    BinaryOp::Umin => (BinOp::Min, ity),
                    BinaryOp::Umax => (BinOp::Max, ity),
                    _ => return Err("decoupling: an operation off the tuple rules".into()),
                };
                let y = match op {
                    // Shifts by constants (the IR takes the count modulo the width).
                    BinaryOp::Ishl | BinaryOp::Sshr | BinaryOp::Ushr => {
                        Src::Imm(const_of(f, args[1]).ok_or("decoupling: shift")?)
                    }
                    _ => a(self.value(at(args[1]))?),
                };
                self.op(Op::Bin {
                    op: bop,
                    ty,
                    dst: d,
                    a: a(x),
                    b: y,
                });
            }
            InstData::Unary { arg, .. } => {
                let x = self.value(at(*arg))?;
                self.op(Op::Un {
                    op: UnOp::Neg,
                    ty: if w == 64 { T::S64 } else { T::S32 },
                    dst: d,
                    a: a(x),
                });
            }
            InstData::Convert { op, arg, .. } => {
                let x = self.value(at(*arg))?;
                let from = int_width(f.value_type(*arg).scalar).ok_or("decoupling: convert")?;
                let (dty, sty) = match (op, from, w) {
                    (ConvOp::Sext, 32, 64) => (T::S64, T::S32),
                    (ConvOp::Zext, 32, 64) => (T::U64, T::U32),
                    (ConvOp::Ireduce, 64, 32) => (T::U32, T::U64),
                    _ => (bty, bty), // same width: a move
                };
                if dty == sty {
                    // Same width: the same tuple.
                    self.regs.insert(n, x);
                    return Ok(x);
                } else {
                    self.op(Op::Cvt {
                        rnd: None,
                        dty,
                        sty,
                        dst: d,
                        a: a(x),
                    });
                }
            }
            InstData::Splat { arg } => {
                let x = self.value(at(*arg))?;
                self.regs.insert(n, x);
                return Ok(x);
            }
            InstData::Select { args } => self.selp(n, args[0], args[1], args[2], bty, d)?,
            _ => return Err("decoupling: an instruction off the tuple rules".into()),
        }
        let d = self.settle(d);
        self.regs.insert(n, d);
        Ok(d)
    }

    /// Access `acc`'s address tuple `r` as its `enq` takes it, and the space: a
    /// `.shared` access enqueues its offset (the address less the window, which the
    /// baseline's access subtracts in its immediate; a dequeued address takes none).
    fn in_space(&mut self, r: Reg, acc: &Access) -> (Reg, Space) {
        if !acc.shared {
            return (r, Space::Global);
        }
        let d = self.b.areg64();
        self.op(Op::Bin {
            op: BinOp::Sub,
            ty: T::U64,
            dst: d,
            a: a(r),
            b: Src::Imm(SHARED_WINDOW),
        });
        (self.settle(d), Space::Shared)
    }

    /// `d = c ? x : y` (values of `n`'s frame) with `c` a uniform compare.
    fn selp(&mut self, n: Node, c: Value, x: Value, y: Value, ty: T, d: Reg) -> Result<(), String> {
        let at = |v: Value| Node { frame: n.frame, v };
        let p = self.cond(at(c))?;
        let (x, y) = (self.value(at(x))?, self.value(at(y))?);
        self.op(Op::Selp {
            ty,
            dst: d,
            a: a(x),
            b: a(y),
            p,
        });
        Ok(())
    }

    /// `enq.data.sel` / `enq.addr.sel` of a select-tuple access: the address with the
    /// selects on its compare read as their `then` arm and as their `else` arm (each
    /// computed apart: what depends on the select is not kept for later accesses),
    /// and the compare's operands (in every lane, as for `enq.pred`).
    fn enq_sel(&mut self, acc: &Access) -> Result<(), String> {
        let sel = acc
            .sel
            .ok_or("decoupling: a select tuple without its compare")?;
        let (c, cond, args) = (sel.key, sel.cc, sel.args);
        let f = self.frames.func(self.module, 0);
        let w = int_width(f.value_type(args[0]).scalar).ok_or("decoupling: compare")?;
        let root = Node {
            frame: 0,
            v: acc.addr,
        };
        let mut arms = [None, None];
        for (k, side) in [true, false].into_iter().enumerate() {
            let kept = self.regs.clone();
            self.mask = acc.mask;
            self.arm = Some((c, side));
            let r = self.value(root);
            self.arm = None;
            self.regs = kept;
            arms[k] = Some(r?);
        }
        let [Some(then), Some(els)] = arms else {
            return Err("decoupling: a select tuple's arm".into());
        };
        let ((then, space), (els, _)) = (self.in_space(then, acc), self.in_space(els, acc));
        self.mask = None;
        let x = self.value(Node {
            frame: 0,
            v: args[0],
        })?;
        let y = self.value(Node {
            frame: 0,
            v: args[1],
        })?;
        let (cmp, cty) = compare_of(cond, w);
        self.op(Op::EnqSel {
            data: acc.kind == Kind::Data,
            space,
            ty: mem_type(acc.scalar),
            then,
            els,
            wide: true,
            cmp,
            cty,
            a: a(x),
            b: a(y),
        });
        Ok(())
    }

    /// `enq.pred` of a decoupled compare: the predicate expansion unit evaluates it
    /// in every lane of every non-affine warp.
    fn enq_pred(&mut self, p: &Access) -> Result<(), String> {
        let (cc, rhs) = p.cmp.ok_or("decoupling: a predicate without a compare")?;
        self.mask = None;
        let x = self.value(Node {
            frame: 0,
            v: p.addr,
        })?;
        let y = self.value(Node { frame: 0, v: rhs })?;
        let w = int_width(p.scalar).ok_or("decoupling: compare")?;
        let (cmp, ty) = compare_of(cc, w);
        self.op(Op::EnqPred {
            cmp,
            ty,
            a: a(x),
            b: a(y),
        });
        Ok(())
    }

    /// The predicate of a uniform integer compare (`Replay::uniform_cond`).
    fn cond(&mut self, n: Node) -> Result<Reg, String> {
        let f = self.frames.func(self.module, n.frame);
        let ValueDef::Result(i) = f.values[n.v].def else {
            return Err("decoupling: a condition that is not a compare".into());
        };
        let (cc, args) = match &f.insts[i] {
            InstData::Splat { arg } => {
                return self.cond(Node {
                    frame: n.frame,
                    v: *arg,
                })
            }
            InstData::Icmp { cond, args } => (*cond, *args),
            _ => return Err("decoupling: a condition that is not a compare".into()),
        };
        let w = int_width(f.value_type(args[0]).scalar).ok_or("decoupling: compare")?;
        let at = |v: Value| Node { frame: n.frame, v };
        let (x, y) = (self.value(at(args[0]))?, self.value(at(args[1]))?);
        let (cmp, ty) = compare_of(cc, w);
        let p = self.b.pred();
        self.op(Op::Setp {
            cmp,
            ty,
            dst: p,
            a: a(x),
            b: a(y),
        });
        Ok(self.settle(p))
    }

    /// `d`, or the register of an equal computation emitted before, when the last
    /// instruction (the one computing `d`) repeats it.
    fn reuse(&mut self, d: Reg) -> Reg {
        let name = format!("{d:?}");
        let Some(last) = self.ops.last() else {
            return d;
        };
        // Operands are older registers than the fresh `d`: the text names `d` only
        // as the result.
        let text = format!("{last:?}");
        if !text.contains(&name) {
            return d;
        }
        let key = text.replace(&name, "_");
        match self.cse.get(&key) {
            Some(&r) => {
                self.ops.pop();
                r
            }
            None => {
                self.cse.insert(key, d);
                d
            }
        }
    }

    fn special(&mut self, reg: SpecialReg, d: Reg) -> Result<(), String> {
        use SpecialReg as S;
        let src = match reg {
            // The launch has the block's real shape when it is not one-dimensional
            // (see the module docs): `%tid.y/z` are the indices, 0 otherwise.
            S::ThreadIdxX => Src::Special(Special::Tid(GDim::X)),
            S::ThreadIdxY => Src::Special(Special::Tid(GDim::Y)),
            S::ThreadIdxZ => Src::Special(Special::Tid(GDim::Z)),
            S::BlockIdxX => Src::Special(Special::Ctaid(GDim::X)),
            S::BlockIdxY => Src::Special(Special::Ctaid(GDim::Y)),
            S::BlockIdxZ => Src::Special(Special::Ctaid(GDim::Z)),
            S::GridDimX => Src::Special(Special::Nctaid(GDim::X)),
            S::GridDimY => Src::Special(Special::Nctaid(GDim::Y)),
            S::GridDimZ => Src::Special(Special::Nctaid(GDim::Z)),
            S::LaneCount => Src::Imm(32),
            S::BlockDimX | S::BlockDimY | S::BlockDimZ => {
                let name = match reg {
                    S::BlockDimX => "__ntid_x",
                    S::BlockDimY => "__ntid_y",
                    _ => "__ntid_z",
                };
                return self.param(name, T::U32, d);
            }
            S::DynSharedBytes => return self.param("__dyn_shared", T::U32, d),
            _ => return Err("decoupling: a special register off the tuple rules".into()),
        };
        self.mov(T::U32, d, src);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::dac_gpu::run::{compile, run_on_dac_gpu, DacRunOptions};
    use crate::back::dac_gpu::Options;
    use crate::driver::{self, FrontOptions, FrontResult, RunRequest, Stage};
    use crate::front::sema::Target;
    use crate::interp::Limits;

    const SAXPY: &str = "task void saxpy(uniform int n, uniform float a, uniform float x[],
        uniform float y[]) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }";

    /// Warps skip the first region, the second or both: the drains keep the queues
    /// balanced; the uniform loop after them is replicated in the affine stream.
    const REGIONS: &str = "task void k(uniform int n, uniform float x[], uniform float y[]) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < 40) y[i] = x[i] * 2;
        if (i >= 70 && i < n) y[i] = x[i + 1] + 1;
        float s = 0;
        for (uniform int k = 0; k < 3; k++) s += x[i + k];
        if (i < n) x[i] = s;
    }";

    /// The number of the plan's entries of kind `k`.
    fn count(plan: &Plan, k: Kind) -> usize {
        plan.accesses.iter().filter(|a| a.kind == k).count()
    }

    /// `f` lowered for dac-gpu, and its (only) entry.
    fn lowered_entry(f: &FrontResult) -> (Module, FuncRef) {
        let module =
            driver::lower_for_target(f, true, driver::LegalTarget::DacGpu).expect("lowers");
        let (fref, _) = module
            .functions
            .iter()
            .find(|(_, g)| g.linkage.is_entry())
            .expect("entry");
        (module, fref)
    }

    /// The plan of the (only) entry of `f`, lowered for dac-gpu, no shared accesses.
    fn entry_plan(f: &FrontResult) -> Option<Plan> {
        let (module, fref) = lowered_entry(f);
        Plan::of(
            &module,
            &ModuleFacts::of(&module),
            fref,
            |_| false,
            &FxHashMap::default(),
        )
    }

    /// [`entry_plan`] with the module's `.shared` spaces decided as the back end does.
    fn entry_plan_with_shared(f: &FrontResult) -> Option<Plan> {
        let (module, fref) = lowered_entry(f);
        let spaces = super::super::spaces::Spaces::of(&module);
        let (offsets, _) = spaces.layout(&module, fref, 0);
        Plan::of(
            &module,
            &ModuleFacts::of(&module),
            fref,
            |i| spaces.is_shared_access(fref, i),
            &offsets,
        )
    }

    fn front(src: &str) -> FrontResult {
        let opts = FrontOptions {
            target: Target {
                program_count: 32,
                pointer_size: 8,
            },
            ..FrontOptions::default()
        };
        driver::run_front("t.spmd", None, src.to_string(), &opts, Stage::Check)
    }

    fn dac() -> Options {
        Options {
            dac: true,
            ..Options::default()
        }
    }

    #[test]
    fn saxpy_has_both_streams_in_queue_order() {
        let c = compile(&front(SAXPY), true, &dac()).expect("compiles");
        let k = &c.program.kernels[0];
        let aff = k.affine.as_ref().expect("decoupled");
        let enqs: Vec<Kind> = aff
            .insts
            .iter()
            .filter_map(|i| match i.op {
                Op::EnqData { .. } => Some(Kind::Data),
                Op::EnqAddr { .. } => Some(Kind::Addr),
                _ => None,
            })
            .collect();
        assert_eq!(enqs, [Kind::Data, Kind::Data, Kind::Addr]);
        let deq = |b: AddrBase| {
            k.insts
                .iter()
                .filter(|i| match &i.op {
                    Op::Ld { addr, .. } | Op::St { addr, .. } => addr.base == b,
                    _ => false,
                })
                .count()
        };
        // Two loads, one store; the drains of the skip edge add one of each kind; in
        // each of the body's full-warp and general versions (isel/full_warp.rs).
        assert_eq!(deq(AddrBase::DeqData), 2 * 4);
        assert_eq!(deq(AddrBase::DeqAddr), 2 * 2);
        assert!(crate::back::dac_gpu::listing(&c, None).contains(".affine"));
    }

    #[test]
    fn uniform_loop_decouples_and_skipped_regions_drain() {
        let f = front(REGIONS);
        let plan = entry_plan(&f).expect("decouples");
        // x[i], y[i], x[i + 1], y[i], the loop's load x[i + k] and the store after
        // the loop; the compares i < 40, i >= 70, i < n of the bound checks (the
        // second i < n is the first one's value when the optimizer numbers values).
        assert_eq!(count(&plan, Kind::Data) + count(&plan, Kind::Addr), 6);
        assert!((3..=4).contains(&count(&plan, Kind::Pred)));
        assert_eq!(plan.loops.len(), 1);
        let l = &plan.loops[0];
        // i < 40, x[i], y[i], i >= 70, i < n, x[i + 1], y[i] before the loop.
        assert_eq!((l.start, l.end), (7, 8));
        let args: Vec<String> = ["n=100", "x=random(200,3)", "y=zeros(200)"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let req = RunRequest {
            optimize: true,
            entry: "k",
            args: &args,
            grid: Some("2"),
            block: Some("96"),
            dynamic_shared: None,
            limits: Limits::default(),
        };
        let want = driver::run_on_interp(&f, &req).expect("interp runs");
        let opts = DacRunOptions {
            codegen: dac(),
            ..DacRunOptions::default()
        };
        let got = run_on_dac_gpu(&f, &req, &opts).expect("decoupled run");
        assert_eq!(format!("{:?}", want.buffers), format!("{:?}", got.buffers));
        // The affine stream's loop: one exit test, one branch back.
        let c = compile(&f, true, &dac()).expect("compiles");
        let aff = c.program.kernels[0].affine.as_ref().expect("decoupled");
        let bras = aff.insts.iter().filter(|i| matches!(i.op, Op::Bra { .. }));
        assert_eq!(bras.count(), 2);
    }

    /// An ISPC-style loop (varying counter, `any` of a loop-carried mask): three
    /// blocks, the test in the second, the counter's `select` resolved.
    #[test]
    fn varying_counter_loop_is_replicated() {
        let f = front(
            "task void k(uniform int n, uniform float x[], uniform float y[]) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                for (int k = 0; k < n; k++) y[i + k * 64] = x[i + k * 64];
            }",
        );
        let plan = entry_plan(&f).expect("decouples");
        assert_eq!(plan.loops.len(), 1);
        let l = &plan.loops[0];
        assert_eq!(l.blocks.len(), 3);
        assert_ne!(l.test, l.header);
        assert!(!l.full_selects.is_empty());
        assert_eq!(plan.accesses.len(), 2);
        assert_eq!((l.start, l.end), (0, 2));
    }

    /// A loop that warps may skip (under a bound check) with a trip count the
    /// skipping warps do not know (a parameter), and one whose trip count depends on
    /// the block, are not replicated.
    #[test]
    fn skipped_or_block_dependent_loops_are_not_replicated() {
        for src in [
            "task void k(uniform int n, uniform float x[], uniform float y[]) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) { float s = 0;
                    for (uniform int k = 0; k < n / 64; k++) s += x[i + k];
                    y[i] = s; }
            }",
            "task void k(uniform int n, uniform float x[], uniform float y[]) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                float s = 0;
                for (uniform int k = 0; k < blockIdx.x; k++) s += x[i + k];
                y[i] = s;
            }",
        ] {
            let f = front(src);
            let plan = entry_plan(&f).expect("the store decouples");
            assert!(plan.loops.is_empty());
            assert_eq!(count(&plan, Kind::Addr) + count(&plan, Kind::Data), 1);
        }
    }

    /// Runs `f`'s entry `k` on the interpreter and decoupled on dac-gpu (functional:
    /// any enq/deq mismatch faults) and asserts equal buffers.
    fn assert_exact(f: &FrontResult, args: &[&str], grid: &str, block: &str) {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let req = RunRequest {
            optimize: true,
            entry: "k",
            args: &args,
            grid: Some(grid),
            block: Some(block),
            dynamic_shared: None,
            limits: Limits::default(),
        };
        let want = driver::run_on_interp(f, &req).expect("interp runs");
        let opts = DacRunOptions {
            codegen: dac(),
            ..DacRunOptions::default()
        };
        let got = run_on_dac_gpu(f, &req, &opts).expect("decoupled run");
        assert_eq!(format!("{:?}", want.buffers), format!("{:?}", got.buffers));
    }

    /// The affine stream's instructions of the compiled entry.
    fn affine_ops(f: &FrontResult) -> Vec<Op> {
        let c = compile(f, true, &dac()).expect("compiles");
        let aff = c.program.kernels[0].affine.as_ref().expect("decoupled");
        aff.insts.iter().map(|i| i.op).collect()
    }

    /// Barriers inside a uniform loop (pathfinder's row steps): the loop is
    /// replicated with its barriers, so the affine stream has as many per iteration.
    #[test]
    fn barriers_in_uniform_loops_are_replicated() {
        let f = front(
            "task void k(uniform int n, uniform int steps, uniform int w[], uniform int out[]) {
                shared uniform int row[64];
                int tx = threadIdx.x;
                int x = blockIdx.x * 64 + tx;
                row[tx] = x;
                barrier();
                for (uniform int r = 0; r < steps; r++) {
                    int c = x < n ? w[r * n + x] : 0;
                    int nb = row[(tx + 1) % 64];
                    barrier();
                    row[tx] = nb + c;
                    barrier();
                }
                if (x < n) out[x] = row[tx];
            }",
        );
        let ops = affine_ops(&f);
        let bars = ops.iter().filter(|o| matches!(o, Op::Bar { .. })).count();
        assert_eq!(bars, 3, "one barrier before the loop, two in it");
        let enq = ops
            .iter()
            .filter(|o| matches!(o, Op::EnqData { .. }))
            .count();
        assert_eq!(enq, 1, "the loop's global load");
        assert_exact(
            &f,
            &["n=150", "steps=5", "w=random(750,3)", "out=zeros(150)"],
            "3",
            "64",
        );
    }

    /// `.shared` accesses with affine addresses (a tiled product's `ta[ty][k]` and
    /// `tb[k][tx]`, 2-D blocks) take their offsets from `enq.addr.shared`: the
    /// non-affine stream's shared accesses all read `[deq.addr]`, none computes an
    /// address, and the results are exact.
    #[test]
    fn shared_accesses_decouple_through_enq_addr() {
        let f = front(
            "task void k(uniform int n, uniform float a[], uniform float b[], uniform float c[]) {
                shared uniform float ta[8][8];
                shared uniform float tb[8][8];
                int tx = threadIdx.x;
                int ty = threadIdx.y;
                int row = blockIdx.y * 8 + ty;
                int col = blockIdx.x * 8 + tx;
                float acc = 0;
                for (uniform int t = 0; t < n / 8; t++) {
                    ta[ty][tx] = a[row * n + t * 8 + tx];
                    tb[ty][tx] = b[(t * 8 + ty) * n + col];
                    barrier();
                    for (uniform int k = 0; k < 8; k++)
                        acc += ta[ty][k] * tb[k][tx];
                    barrier();
                }
                c[row * n + col] = acc;
            }",
        );
        let c = compile(&f, true, &dac()).expect("compiles");
        let k = &c.program.kernels[0];
        let aff = k.affine.as_ref().expect("decoupled");
        let shared_enqs = aff
            .insts
            .iter()
            .filter(|i| {
                matches!(
                    i.op,
                    Op::EnqAddr {
                        space: Space::Shared,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(shared_enqs, 4, "two tile stores, two tile loads");
        let shared_accesses: Vec<AddrBase> = k
            .insts
            .iter()
            .filter_map(|i| match &i.op {
                Op::Ld {
                    space: Space::Shared,
                    addr,
                    ..
                }
                | Op::St {
                    space: Space::Shared,
                    addr,
                    ..
                } => Some(addr.base),
                _ => None,
            })
            .collect();
        assert!(!shared_accesses.is_empty());
        assert!(
            shared_accesses.iter().all(|&b| b == AddrBase::DeqAddr),
            "{shared_accesses:?}"
        );
        assert_exact(
            &f,
            &["n=16", "a=random(256,3)", "b=random(256,4)", "c=zeros(256)"],
            "2,2",
            "8,8",
        );
    }

    /// A strided `.shared` access (a column of a row-major tile: 36 bytes between
    /// threads) keeps its address arithmetic ([`cheap_to_expand`]); the contiguous
    /// ones decouple, and the results are exact.
    #[test]
    fn strided_shared_accesses_keep_their_addresses() {
        let f = front(
            "task void k(uniform float x[], uniform float y[]) {
                shared uniform float t[32][9];
                shared uniform float u[32];
                int tx = threadIdx.x;
                int i = blockIdx.x * 32 + tx;
                t[tx][0] = x[i];
                u[tx] = x[i] * 2;
                barrier();
                y[i] = t[31 - tx][0] + u[31 - tx];
            }",
        );
        let plan = entry_plan_with_shared(&f).expect("decouples");
        let shared = plan.accesses.iter().filter(|a| a.shared).count();
        assert_eq!(shared, 2, "u[tx] and u[31 - tx], not t's column");
        assert_exact(&f, &["x=random(64,3)", "y=zeros(64)"], "2", "32");
    }

    /// Barriers after the last decoupled load (nw's sweeps before its write-back)
    /// are not replicated: the stores' `enq.addr` read nothing a barrier protects.
    #[test]
    fn barriers_after_the_last_load_are_dropped() {
        let f = front(
            "task void k(uniform int n, uniform int w[], uniform int out[]) {
                shared uniform int row[65];
                int tx = threadIdx.x;
                int x = blockIdx.x * 64 + tx;
                row[tx] = w[x];
                barrier();
                for (uniform int r = 0; r < 8; r++) {
                    int nb = row[(tx + 1) % 64];
                    barrier();
                    row[tx] = nb + r;
                    barrier();
                }
                out[x] = row[tx];
            }",
        );
        let ops = affine_ops(&f);
        let count = |p: fn(&Op) -> bool| ops.iter().filter(|o| p(o)).count();
        assert_eq!(count(|o| matches!(o, Op::Bar { .. })), 0);
        assert_eq!(count(|o| matches!(o, Op::EnqData { .. })), 1);
        assert_eq!(
            count(|o| matches!(
                o,
                Op::EnqAddr {
                    space: Space::Global,
                    ..
                }
            )),
            1,
            "out[x]"
        );
        // row[tx] = w[x], row[tx] = nb + r, row[tx] read back (`row[(tx + 1) % 64]`
        // is no tuple).
        assert_eq!(
            count(|o| matches!(
                o,
                Op::EnqAddr {
                    space: Space::Shared,
                    ..
                }
            )),
            3
        );
        assert_exact(
            &f,
            &["n=128", "w=random(128,3)", "out=zeros(128)"],
            "2",
            "64",
        );
    }

    /// A grid-stride loop whose body is a skip region (scale+copy): replicated with
    /// four blocks; warps past the end drain inside the loop.
    #[test]
    fn loops_with_skip_regions_are_replicated() {
        let f = front(
            "task void k(uniform int n, uniform float a[], uniform float b[]) {
                uniform int stride = gridDim.x * blockDim.x;
                int i0 = blockIdx.x * blockDim.x + threadIdx.x;
                for (uniform int base = 0; base < n; base += stride) {
                    int i = base + i0;
                    if (i < n) b[i] = 2 * a[i];
                }
            }",
        );
        let plan = entry_plan(&f).expect("decouples");
        assert_eq!(plan.loops.len(), 1);
        assert!(plan.loops[0].blocks.len() >= 4);
        assert_eq!(count(&plan, Kind::Data) + count(&plan, Kind::Addr), 2);
        // `i < n` in the loop: enqueued each iteration, drained by no warp.
        assert_eq!(count(&plan, Kind::Pred), 1);
        assert_exact(&f, &["n=300", "a=random(300,2)", "b=zeros(300)"], "2", "64");
    }

    /// Nested uniform loops: both replicated, the inner one inside the outer one;
    /// the loop-invariant part of the address stays out of both.
    #[test]
    fn nested_uniform_loops_are_replicated() {
        let f = front(
            "task void k(uniform int n, uniform int m, uniform float x[], uniform float y[]) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                float s = 0;
                for (uniform int r = 0; r < m; r++)
                    for (uniform int c = 0; c < 3; c++)
                        s += x[i + r * n + c];
                y[i] = s;
            }",
        );
        let plan = entry_plan(&f).expect("decouples");
        assert_eq!(plan.loops.len(), 2);
        assert_eq!(plan.loops[1].parent, Some(plan.loops[0].header));
        assert_eq!(plan.accesses.len(), 2);
        let ops = affine_ops(&f);
        let bras = ops.iter().filter(|o| matches!(o, Op::Bra { .. })).count();
        assert_eq!(bras, 4, "an exit test and a branch back per loop");
        assert_exact(
            &f,
            &["n=128", "m=4", "x=random(700,5)", "y=zeros(128)"],
            "2",
            "64",
        );
    }

    /// Uniform scalar work in an address (nw's first block of an anti-diagonal):
    /// division, remainder, min and a merge after a uniform branch replay as
    /// scalar `div`/`rem`/`min` and a `setp` + `selp` in the affine stream, exactly
    /// on both sides of the branch.
    #[test]
    fn uniform_scalar_work_and_merges_replay() {
        let f = front(
            "task void k(uniform int n, uniform int d, uniform float x[], uniform float y[]) {
                uniform int nb = n / 16;
                uniform int first = d < nb ? 0 : d - nb + 1;
                uniform int off = min(first * 3, n % 7) + (d >> 1);
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                y[i] = x[i + first + off];
            }",
        );
        let plan = entry_plan(&f).expect("decouples");
        assert_eq!(plan.accesses.len(), 2);
        let ops = affine_ops(&f);
        let has = |want: BinOp| {
            ops.iter()
                .any(|o| matches!(o, Op::Bin { op, .. } if *op == want))
        };
        assert!(has(BinOp::Div) && has(BinOp::Rem) && has(BinOp::Min));
        assert!(ops.iter().any(|o| matches!(o, Op::Selp { .. })));
        for d in ["d=1", "d=9"] {
            assert_exact(
                &f,
                &["n=128", d, "x=random(200,5)", "y=zeros(128)"],
                "2",
                "64",
            );
        }
    }

    /// Loads from one address for the whole warp (conv2d's filter taps) decouple as
    /// tuples with zero strides; under a varying mask every lane gets the value when
    /// any lane is on, as in the baseline, so a uniform loop may test it (here in
    /// warps the bound check leaves partly on, and lanes past the block).
    #[test]
    fn uniform_address_loads_are_decoupled() {
        let f = front(
            "task void k(uniform int n, uniform float w[], uniform int cnt[],
                         uniform float x[], uniform float y[]) {
                uniform float c = w[0];
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i >= n) return;
                float s = c * x[i];
                uniform int m = cnt[(n >> 1) & 1];
                for (uniform int k = 0; k < m; k++)
                    s += w[k + 1] * x[i];
                y[i] = s;
            }",
        );
        let module =
            driver::lower_for_target(&f, true, driver::LegalTarget::DacGpu).expect("lowers");
        let plan = entry_plan(&f).expect("decouples");
        let f0 = &module.functions[plan.fref];
        let uniform_loads = plan
            .accesses
            .iter()
            .filter(|a| a.kind == Kind::Data)
            .filter(|a| !f0.value_type(f0.inst_result(a.inst).expect("load")).varying)
            .count();
        assert_eq!(uniform_loads, 2, "w[0] and cnt[..]");
        assert_exact(
            &f,
            &[
                "n=100",
                "w=random(8,3)",
                "cnt=fill(2,3)",
                "x=random(100,4)",
                "y=zeros(100)",
            ],
            "2",
            "64",
        );
    }

    /// A barrier in a loop the affine stream cannot replicate (its trip count
    /// depends on the block) disqualifies the kernel.
    #[test]
    fn barriers_in_other_loops_disqualify() {
        let f = front(
            "task void k(uniform int n, uniform float x[], uniform float y[]) {
                shared uniform float t[64];
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                float s = 0;
                for (uniform int k = 0; k < blockIdx.x; k++) {
                    t[threadIdx.x] = x[i + k];
                    barrier();
                    s += t[63 - threadIdx.x];
                    barrier();
                }
                y[i] = s;
            }",
        );
        assert!(entry_plan(&f).is_none());
    }

    /// Nested loops with constant trip counts in a region whole warps skip (conv2d's
    /// filter loops after the bound check's `return`): replicated; the skipping
    /// warps drain 3 x 4 entries of the load with a counted loop.
    #[test]
    fn skipped_loops_with_constant_trips_are_replicated() {
        let f = front(
            "task void k(uniform int n, uniform float x[], uniform float y[]) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i >= n) return;
                float s = 0;
                for (uniform int a = -1; a <= 1; a++)
                    for (uniform int b = 0; b < 4; b++)
                        s += x[i + a * 4 + b + 4];
                y[i] = s;
            }",
        );
        let module =
            driver::lower_for_target(&f, true, driver::LegalTarget::DacGpu).expect("lowers");
        let (fref, g) = module
            .functions
            .iter()
            .find(|(_, g)| g.linkage.is_entry())
            .expect("entry");
        let plan = Plan::of(
            &module,
            &ModuleFacts::of(&module),
            fref,
            |_| false,
            &FxHashMap::default(),
        )
        .expect("decouples");
        assert_eq!(plan.loops.len(), 2);
        assert!(plan.loops.iter().all(|l| l.region.is_some()));
        let trips: Vec<_> = plan.loops.iter().map(|l| l.trips).collect();
        assert_eq!(trips, [Some(3), Some(4)]);
        // The skip edge drains the load's 12 entries (and the store's one).
        let most = g
            .layout
            .iter()
            .filter_map(|&b| g.blocks[b].insts.last().map(|&t| (b, t)))
            .flat_map(|(b, t)| {
                let succ = g.successors(b);
                succ.into_iter()
                    .flat_map(|to| plan.drains(t, Some(to)))
                    .collect::<Vec<_>>()
            })
            .flat_map(|d| plan.accesses.iter().map(move |a| d.entries(a.inst)))
            .max();
        assert_eq!(most, Some(12));
        // n = 100 of 3 x 64 threads: the last block's warps and one of the second's
        // skip the loops.
        assert_exact(&f, &["n=100", "x=random(200,7)", "y=zeros(192)"], "3", "64");
    }
}
