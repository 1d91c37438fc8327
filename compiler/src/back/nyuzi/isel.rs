//! Instruction selection: one IR function to a [`MachFunction`] of [`MInst`] over
//! virtual registers.
//!
//! # Value representation
//!
//! * Uniform `bool`: one scalar register holding `0` or `0xffff` (what a scalar
//!   compare writes), so a uniform condition is also the mask "all lanes or none" and
//!   `splat` of a `bool` is a copy.
//! * Varying `bool` (a mask): the low 16 bits of one scalar register, bits 31..16 zero.
//! * Uniform `i8`/`i16`/`i32`/`ptr`/`f32`: one scalar register; varying: one vector
//!   register. Narrow integers are kept zero-extended (the interpreter's canonical
//!   form), so every operation that can carry out of the width masks its result and
//!   signed operations sign-extend their operands first.
//! * `i64`/`f64`: two registers of the class (low word, high word).
//!
//! # Masks
//!
//! Every mask operand of an effect (loads, stores, atomics, a call's hidden mask) and
//! of `any`/`all`/`ballot`/`first_lane` is ANDed with the gang's existing lanes
//! (`ctx::EXISTS` in the context record at `gp`), as the interpreter limits masks to
//! existing lanes; the AND is skipped for masks known to be within the existing lanes
//! already (the hidden mask parameter, which callers and launchers limit, and `band`s
//! with it). Selects on a varying condition are `move_mask` into a copy of the
//! false value. Uniform-address accesses under a mask are skipped with a branch when
//! no lane is on (a masked-off load yields 0).
//!
//! # Memory
//!
//! Uniform addresses use scalar loads and stores. Varying addresses use masked
//! gather/scatter on 32-bit words; 8- and 16-bit elements gather the containing word
//! and extract the element, and scatter lane by lane with scalar stores in increasing
//! lane order (a masked-off lane writes to a scratch word of the frame instead), as the
//! interpreter's scatters go. 64-bit elements take two accesses per lane. A varying
//! 32-bit access whose address is `splat(base) + (lane_index [+ splat(k)]) * 4` (the
//! lowering's form for `a[programIndex + k]`, foreach indices and private per-lane
//! slots) becomes a masked block `load_v`/`store_v` when `base + 4k` is 64-byte
//! aligned at run time (statically for 64-byte-aligned stack slots), gather/scatter
//! otherwise. Within a block, an unmasked load of a per-lane private slot that an
//! all-on store just wrote takes the stored value (store-to-load forwarding), which
//! keeps `foreach` indices recognizable.
//!
//! # Clean-up
//!
//! Constants are materialized at each use (immediates where they fit, `VVS` forms for
//! broadcast operands); pure instructions whose IR results are dead and block
//! parameters nothing depends on are not selected; machine instructions whose results
//! nothing reads are removed after selection.
//!
//! # Lane operations
//!
//! `extract`/`insert` use `getlane`/a one-bit `move_mask` and stop with `break` on a
//! lane index outside `0..16` (the interpreter's runtime error); `shuffle` is the
//! native `shuffle` (indices modulo 16, as the interpreter's Euclidean rule gives for
//! 16 lanes); a mask shuffles as a 0/1 vector. `any`/`all`/`ballot`/`first_lane`
//! work on the mask ANDed with the existing lanes. The other cross-lane operations
//! arrive as runtime calls (legalization).
//!
//! # Known differences from the interpreter
//!
//! * A NaN produced by f32 `fadd`/`fsub`/`fmul` has the machine's canonical bits
//!   (`0x7fffffff`, as the upstream emulator and the simulator give), not the host's
//!   that the interpreter returns; non-NaN results and every compare are identical.
//! * `print` arrives as runtime calls that format on the device and write the serial
//!   port (legalization: `passes::legalize::print`); the text is the interpreter's.
//!
//! # Control flow and calls
//!
//! Block parameters become copies in the predecessors (through fresh temporaries, so
//! the parallel assignment is safe); `brif` edges that pass arguments get their own
//! block. Arguments and results follow [`super::abi`]; a takes-mask callee gets the
//! call's mask (limited to existing lanes) as its last scalar argument.

use cranelift_entity::{EntityRef, EntitySet, SecondaryMap};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::{smallvec, SmallVec};

use sim::nyuzi::{AluOp, MemOp, RFmt};

use super::abi::{ctx, RuntimeFn, GP, LANES, SCALAR, SCALAR_ARGS, VECTOR, VECTOR_ARGS};
use super::minst::{Callee, FrameObj, MInst, BARRIER_CLOBBERS, CALL_CLOBBERS};
use super::object::RelocTarget;
use crate::back::common::mach::{MBlock, MachFunction, MachLine, PReg, Reg, RegClass};
use crate::diag::{codes, Diagnostic};
use crate::ir::{
    AtomicOp, BinaryOp, Block, BlockCall, ConvOp, FloatCC, FuncRef, Function, InstData, IntCC,
    LaneOp, Module, Scalar, SpecialReg, Type, UnaryOp, Value, ValueDef,
};
use crate::source::Span;
use crate::timing;

mod shuffle;

/// A selected function: its machine code and what the frame needs.
pub struct Selected {
    pub mf: MachFunction<MInst>,
    /// Whether the function calls (then `ra` is saved).
    pub has_calls: bool,
    /// Whether per-lane narrow scatters need the scratch word.
    pub needs_scratch: bool,
    /// Bytes of outgoing stack arguments (at `sp`, 64-byte aligned).
    pub out_args: u32,
    /// Whether the function moves `sp` with `stack_alloc` (then its frame is
    /// addressed from `fp`, see [`super::emit`]).
    pub dynamic_stack: bool,
    /// The IR stack slots whose address the code takes (the others get no space).
    pub used_slots: Vec<bool>,
    /// Under `--shuffle`: the function's loads served from another register.
    pub shuffles: Option<crate::analysis::shuffle::ServedCounts>,
    /// Under `--shuffle auto`: the cost model's choices as listing comments.
    pub shuffle_remarks: String,
}

type Regs = SmallVec<[Reg; 2]>;

/// Registers per value and their class.
pub fn layout(ty: Type) -> (RegClass, usize) {
    if ty.scalar == Scalar::Bool {
        return (SCALAR, 1);
    }
    let n = if matches!(ty.scalar, Scalar::I64 | Scalar::F64) {
        2
    } else {
        1
    };
    (if ty.varying { VECTOR } else { SCALAR }, n)
}

/// Bit width of an element as held in registers (pointers are 32-bit here).
fn width(s: Scalar) -> u32 {
    match s {
        Scalar::Bool => 1,
        Scalar::I8 => 8,
        Scalar::I16 => 16,
        Scalar::I64 | Scalar::F64 => 64,
        _ => 32,
    }
}

/// Where one argument travels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgLoc {
    /// In these registers (two for a 64-bit value).
    Regs(SmallVec<[PReg; 2]>),
    /// In words at this byte offset from `sp` at the call (one word per 4 bytes).
    Stack(u32),
}

/// Where the arguments of a call with these parameter types go (plus the hidden
/// mask, last among the scalars), per the ABI and the image builder's launcher: scalar
/// values in `s0`-`s7` while a whole value fits, then every later scalar value on the
/// stack; varying values in `v0`-`v7`. `None` when varying values do not fit.
pub fn assign_args(params: &[Type], takes_mask: bool) -> Option<Vec<ArgLoc>> {
    let (mut ns, mut nv, mut stack) = (0usize, 0usize, 0u32);
    let mut spilled = false;
    let mut out = Vec::new();
    let mut all: Vec<Type> = params.to_vec();
    if takes_mask {
        all.push(Type::MASK);
    }
    for ty in all {
        let (class, n) = layout(ty);
        if class == VECTOR {
            if nv + n > VECTOR_ARGS.len() {
                return None;
            }
            out.push(ArgLoc::Regs(
                VECTOR_ARGS[nv..nv + n].iter().copied().collect(),
            ));
            nv += n;
        } else if !spilled && ns + n <= SCALAR_ARGS.len() {
            out.push(ArgLoc::Regs(
                SCALAR_ARGS[ns..ns + n].iter().copied().collect(),
            ));
            ns += n;
        } else {
            spilled = true;
            out.push(ArgLoc::Stack(stack));
            stack += 4 * n as u32;
        }
    }
    Some(out)
}

/// Bytes of stack arguments of a call (64-byte aligned).
pub fn stack_arg_bytes(locs: &[ArgLoc], params: &[Type], takes_mask: bool) -> u32 {
    let mut end = 0;
    for (i, l) in locs.iter().enumerate() {
        if let ArgLoc::Stack(off) = l {
            let n = params.get(i).map_or(1, |t| layout(*t).1) as u32;
            end = end.max(off + 4 * n);
        }
    }
    let _ = takes_mask;
    end.div_ceil(64) * 64
}

/// Result registers of a return type.
pub fn result_regs(ty: Type) -> SmallVec<[PReg; 2]> {
    let (class, n) = layout(ty);
    let bank = if class == VECTOR {
        &VECTOR_ARGS
    } else {
        &SCALAR_ARGS
    };
    bank[..n].iter().copied().collect()
}

fn shift_op(op: BinaryOp) -> Option<AluOp> {
    match op {
        BinaryOp::Ishl => Some(AluOp::Shl),
        BinaryOp::Ushr => Some(AluOp::Shr),
        BinaryOp::Sshr => Some(AluOp::Ashr),
        _ => None,
    }
}

/// The values the function's effects depend on: operands of instructions with
/// effects, branch conditions and returned values, and transitively the operands of
/// the instructions and the branch arguments that define live values. Pure
/// instructions with a dead result are not selected and dead block parameters get no
/// copies (the lowering leaves unused constants, masks and loop-carried copies
/// behind).
fn live_values(f: &Function) -> EntitySet<Value> {
    // Incoming branch arguments of each block.
    let mut incoming: FxHashMap<Block, Vec<SmallVec<[Value; 4]>>> = FxHashMap::default();
    let mut work: Vec<Value> = Vec::new();
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            let data = &f.insts[i];
            match data {
                InstData::Jump { dest } => {
                    incoming
                        .entry(dest.block)
                        .or_default()
                        .push(dest.args.clone());
                }
                InstData::Brif {
                    cond,
                    then_dest,
                    else_dest,
                } => {
                    work.push(*cond);
                    for d in [then_dest, else_dest] {
                        incoming.entry(d.block).or_default().push(d.args.clone());
                    }
                }
                _ if data.has_side_effects() => data.for_each_operand(|x| work.push(x)),
                _ => {}
            }
        }
    }
    let mut live = EntitySet::with_capacity(f.values.len());
    while let Some(v) = work.pop() {
        if !live.insert(v) {
            continue;
        }
        match f.values[v].def {
            ValueDef::Result(i) => f.insts[i].for_each_operand(|x| work.push(x)),
            ValueDef::Param(b, k) => {
                for args in incoming.get(&b).into_iter().flatten() {
                    if let Some(&a) = args.get(k as usize) {
                        work.push(a);
                    }
                }
            }
        }
    }
    live
}

fn fits(x: i64, bits: u32) -> bool {
    let lim = 1i64 << (bits - 1);
    (-lim..lim).contains(&x)
}

fn int_cc(cond: IntCC) -> AluOp {
    match cond {
        IntCC::Eq => AluOp::CmpEqI,
        IntCC::Ne => AluOp::CmpNeI,
        IntCC::Slt => AluOp::CmpLtI,
        IntCC::Sle => AluOp::CmpLeI,
        IntCC::Sgt => AluOp::CmpGtI,
        IntCC::Sge => AluOp::CmpGeI,
        IntCC::Ult => AluOp::CmpLtU,
        IntCC::Ule => AluOp::CmpLeU,
        IntCC::Ugt => AluOp::CmpGtU,
        IntCC::Uge => AluOp::CmpGeU,
    }
}

fn is_signed(cond: IntCC) -> bool {
    matches!(cond, IntCC::Slt | IntCC::Sle | IntCC::Sgt | IntCC::Sge)
}

struct Isel<'a> {
    m: &'a Module,
    f: &'a Function,
    /// Identifies the function in barrier identifiers.
    fidx: u32,
    mf: MachFunction<MInst>,
    order: Vec<MBlock>,
    cur: MBlock,
    span: Option<Span>,
    vals: SecondaryMap<Value, Regs>,
    blocks: FxHashMap<Block, MBlock>,
    diags: Vec<Diagnostic>,
    has_calls: bool,
    needs_scratch: bool,
    out_args: u32,
    dynamic_stack: bool,
    used_slots: Vec<bool>,
    live: EntitySet<Value>,
    /// Context-record loads already made in a machine block.
    ctx_cache: FxHashMap<(MBlock, i32), Reg>,
    /// Loads of a per-lane private slot that read what a store in the same block
    /// just wrote, and that value (see [`Isel::forwarded_loads`]).
    forward: FxHashMap<Value, Value>,
    /// The affine analysis of `f` (block accesses at affine addresses).
    affine: crate::analysis::affine::FunctionAffine,
    /// Varying-typed values computed in scalar registers (see [`super::scalarize`]).
    scal: FxHashSet<Value>,
    /// While set, scalarized values read as uniform-typed, in their scalar registers.
    scalar_mode: bool,
    /// The scalar registers of scalarized values.
    svals: SecondaryMap<Value, Regs>,
    /// The uniformity analysis of `f` (`None` with `--no-uniformity`).
    uni: Option<crate::analysis::uniformity::FunctionUniformity>,
    /// Full masks and what they make redundant (see [`super::masks`]).
    facts: super::masks::MaskFacts,
    /// The IR block being selected.
    cur_ir: Option<Block>,
    /// Uniform values with a vector form (`--no-scalar-datapath`, see
    /// [`super::vectorize`]); empty otherwise.
    vf: super::vectorize::VectorForms,
    /// While set, values with a vector form read as varying-typed, in their vector
    /// registers.
    vector_mode: bool,
    /// The vector registers of values with a vector form.
    vvals: SecondaryMap<Value, Regs>,
    /// `--shuffle`: the loads served by another load's register ([`shuffle`]).
    shuffles: Option<crate::analysis::shuffle::FunctionShuffles>,
    /// How they are served (the ablations drop the edge reload or the move).
    shuffle_mode: crate::passes::ShuffleMode,
    /// What the shuffles of an IR block share ([`shuffle`]).
    shfl_shared: FxHashMap<(Block, shuffle::Shared), Reg>,
    /// Loads selected so far and loads waiting for their halo's carrier ([`shuffle`]).
    halo: shuffle::HaloState,
    /// The IR loads selected as a move from their pair's source, and how.
    served: FxHashMap<crate::ir::Inst, crate::analysis::shuffle::Served>,
}

/// What the selector computes in scalar registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarUse {
    /// `uniform`-typed values, and the varying-typed ones the uniformity analysis
    /// proves uniform ([`super::scalarize`]): the default.
    Analysis,
    /// `uniform`-typed values only (`--no-uniformity`).
    Types,
    /// Only what the ISA needs in scalar registers: uniform ALU work runs on the
    /// vector unit ([`super::vectorize`], `--no-scalar-datapath`).
    Minimal,
}

/// What the selector does beyond the defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelectOptions {
    /// What is computed in scalar registers.
    pub scalars: ScalarUse,
    /// `--shuffle`: loads another load of the same block serves from a neighbouring
    /// lane become lane moves with a masked reload ([`shuffle`]).
    pub shuffle: crate::passes::ShuffleMode,
    /// The hardware threads of a core the launch runs on, when the compile knows the
    /// launch (`spmdc run`): `--shuffle=auto`'s latency term shares a thread's waits
    /// among them. `None`: taken from each function's linkage
    /// ([`crate::analysis::shuffle::cost::Machine::nyuzi_threads`]).
    pub threads: Option<u32>,
}

impl Default for SelectOptions {
    fn default() -> Self {
        SelectOptions {
            scalars: ScalarUse::Analysis,
            shuffle: crate::passes::ShuffleMode::Off,
            threads: None,
        }
    }
}

/// Selects one function. `fidx` is its index in the module (barrier identifiers).
pub fn select(m: &Module, f: &Function, fidx: u32) -> Result<Selected, Vec<Diagnostic>> {
    let called = m.called_functions()[FuncRef::from_u32(fidx)];
    select_with(m, f, fidx, called, SelectOptions::default())
}

/// [`select`], with `opts` deciding what is computed in scalar registers and whether
/// loads become shuffles.
pub fn select_with(
    m: &Module,
    f: &Function,
    fidx: u32,
    called: bool,
    opts: SelectOptions,
) -> Result<Selected, Vec<Diagnostic>> {
    let scalars = opts.scalars;
    let mut mf = MachFunction::new(f.name.clone());
    let entry = mf.new_block();
    let uni = timing::stage("uniformity", || {
        (scalars == ScalarUse::Analysis).then(|| crate::analysis::uniformity::analyze_function(f))
    });
    let facts = timing::stage("masks", || {
        super::masks::MaskFacts::compute(f, called, uni.as_ref())
    });
    let scal = timing::stage("scalarize", || {
        super::scalarize::scalarized(f, uni.as_ref(), &facts)
    });
    let vf = match scalars {
        ScalarUse::Minimal => super::vectorize::vector_forms(f),
        _ => super::vectorize::VectorForms::default(),
    };
    let affine = timing::stage("affine", || {
        crate::analysis::affine::analyze_called(m, f, called)
    });
    let mut shuffle_remarks = String::new();
    let shuffles = opts.shuffle.is_on().then(|| {
        use crate::analysis::shuffle::{analyze_function, cost};
        let mut pairs = analyze_function(m, f, &affine);
        if opts.shuffle == crate::passes::ShuffleMode::Auto {
            let threads = opts
                .threads
                .unwrap_or_else(|| cost::Machine::nyuzi_threads(f));
            let choices = cost::select(f, &mut pairs, &cost::Machine::nyuzi(threads));
            shuffle_remarks = cost::remarks(&choices, "#");
        }
        pairs
    });
    let mut s = Isel {
        m,
        f,
        fidx,
        mf,
        order: vec![entry],
        cur: entry,
        span: None,
        vals: SecondaryMap::with_capacity(f.values.len()),
        blocks: FxHashMap::default(),
        diags: Vec::new(),
        has_calls: false,
        needs_scratch: false,
        out_args: 0,
        dynamic_stack: false,
        used_slots: vec![false; f.stack_slots.len()],
        live: EntitySet::new(),
        ctx_cache: FxHashMap::default(),
        forward: FxHashMap::default(),
        affine,
        scal,
        scalar_mode: false,
        svals: SecondaryMap::with_capacity(f.values.len()),
        uni,
        facts,
        cur_ir: None,
        vf,
        vector_mode: false,
        vvals: SecondaryMap::with_capacity(f.values.len()),
        shuffles,
        shuffle_mode: opts.shuffle,
        shfl_shared: FxHashMap::default(),
        halo: shuffle::HaloState::default(),
        served: FxHashMap::default(),
    };
    timing::stage("select", || s.run());
    if !s.diags.is_empty() {
        return Err(s.diags);
    }
    let shuffles = s.shuffles.as_ref().map(|p| {
        crate::analysis::shuffle::ServedCounts::of(p.varying_loads, s.served.values().copied())
    });
    let mut mf = reorder(s.mf, &s.order);
    // Address vectors of accesses that became block accesses, unused context loads.
    timing::stage("dce", || {
        crate::back::common::dce::eliminate_dead_code(&mut mf)
    });
    Ok(Selected {
        mf,
        has_calls: s.has_calls,
        needs_scratch: s.needs_scratch,
        out_args: s.out_args,
        dynamic_stack: s.dynamic_stack,
        used_slots: s.used_slots,
        shuffles,
        shuffle_remarks,
    })
}

/// Renumbers blocks so that `PrimaryMap` order is the layout order.
fn reorder(mut mf: MachFunction<MInst>, order: &[MBlock]) -> MachFunction<MInst> {
    let mut map: FxHashMap<MBlock, MBlock> = FxHashMap::default();
    let mut out = MachFunction::new(mf.name.clone());
    out.vregs = std::mem::take(&mut mf.vregs);
    out.spill_slots = std::mem::take(&mut mf.spill_slots);
    for &b in order {
        map.insert(b, out.new_block());
    }
    for &b in order {
        let nb = map[&b];
        let mut blk = std::mem::take(&mut mf.blocks[b]);
        for l in &mut blk.insts {
            match &mut l.inst {
                MInst::Jump { target } | MInst::CondBr { target, .. } => *target = map[target],
                _ => {}
            }
        }
        for sb in blk.succs.iter_mut() {
            *sb = map[sb];
        }
        out.blocks[nb] = blk;
    }
    out
}

impl<'a> Isel<'a> {
    fn run(&mut self) {
        let f = self.f;
        // One machine block per reachable IR block, in IR layout order (the entry
        // first); unreachable blocks (the lowering's `trap unreachable` ends) are
        // dropped, so they do not sit between a block and its successor.
        let reachable: Vec<Block> = f
            .layout
            .iter()
            .copied()
            .enumerate()
            .filter(|&(i, b)| i == 0 || self.facts.reachable(b))
            .map(|(_, b)| b)
            .collect();
        for (i, &b) in reachable.iter().enumerate() {
            let mb = if i == 0 {
                self.cur
            } else {
                let nb = self.mf.new_block();
                self.order.push(nb);
                nb
            };
            self.blocks.insert(b, mb);
        }
        let Some(entry) = f.entry_block() else {
            return;
        };
        self.live = live_values(f);
        self.forward = self.forwarded_loads();
        self.entry_params(entry);
        for p in f.blocks[entry].params.clone() {
            if self.vf.all.contains(&p) {
                self.vector_from_scalar(p);
            }
        }
        for &b in &reachable {
            self.cur = self.blocks[&b];
            self.cur_ir = Some(b);
            self.splat_scalar_params(b);
            self.lane0_of_vector_params(b);
            for &inst in &f.blocks[b].insts {
                self.release_held(inst);
                let dead = !f.insts[inst].has_side_effects()
                    && f.inst_result(inst).is_some_and(|r| !self.live.contains(r));
                // A result that stands for an operand, or an `any`/`all` known true,
                // needs no code (see `regs` and `const_bits`).
                let folded = f.inst_result(inst).is_some_and(|r| {
                    self.facts.aliases().contains_key(&r) || self.facts.is_true(r)
                });
                if dead || folded {
                    continue;
                }
                self.span = Some(f.spans[inst]);
                self.inst_or_scalar(inst);
            }
        }
    }

    // ------------------------------------------------------- scalarized values

    /// Selects `inst`, in scalar registers when its result is scalarized: the scalar
    /// result is then splatted into the value's vector register for vector consumers
    /// (dead-code removal drops the splat when none reads it).
    fn inst_or_scalar(&mut self, inst: crate::ir::Inst) {
        if !self.vf.all.is_empty() {
            return self.inst_or_vector(inst);
        }
        let f = self.f;
        let res = f.inst_result(inst).filter(|r| self.scal.contains(r));
        let Some(r) = res else {
            // A compare of scalarized values is a scalar compare: its 0 / 0xffff is
            // the mask the vector compare of equal lanes writes.
            let scalar = self.compares_scalarized(inst);
            self.scalar_mode = scalar;
            self.inst(inst);
            self.scalar_mode = false;
            return;
        };
        match &f.insts[inst] {
            InstData::Iconst { .. } | InstData::Fconst { .. } => {}
            InstData::Splat { .. } if self.const_bits(r).is_some() => {}
            InstData::Splat { arg } => {
                let arg = *arg;
                let src = self.reg(arg);
                self.sdefine(r, src);
                self.inst(inst);
            }
            InstData::Select { args } => {
                let (c, x, y) = (args[0], args[1], args[2]);
                // A uniform mask holds one bit for every existing lane (scalarized
                // selects on masks are only made in lane-0 functions, where lane 0
                // exists and is on at entry), so lane 0's bit decides: a branch over
                // the copy of the true value (taken only when the mask is off).
                let relative = self.uni.as_ref().and_then(|u| u.select_region(r, c));
                let on = match relative {
                    // Uniform among the lanes of the region mask `g` (see scalarize).
                    Some(g) if self.ty(c).varying => {
                        let (cr, gr) = (self.reg(c), self.reg(g));
                        self.bin(false, AluOp::And, cr, gr)
                    }
                    _ if self.ty(c).varying => self.lane0_bit(c),
                    _ => self.reg(c),
                };
                self.scalar_mode = true;
                let (a, b) = (self.regs(x), self.regs(y));
                let d = self.select_by_branch(on, &a, &b);
                self.define(Some(r), &d);
                self.scalar_mode = false;
                let src = self.sregs(r)[0];
                let dst = self.reg(r);
                self.splat_into(dst, src);
            }
            _ => {
                self.scalar_mode = true;
                self.inst(inst);
                self.scalar_mode = false;
                let src = self.sregs(r)[0];
                let dst = self.reg(r);
                self.splat_into(dst, src);
            }
        }
    }

    /// Whether `inst` is an `icmp`/`fcmp` whose varying operands are all scalarized
    /// (at least one varying).
    fn compares_scalarized(&self, inst: crate::ir::Inst) -> bool {
        let args = match &self.f.insts[inst] {
            InstData::Icmp { args, .. } | InstData::Fcmp { args, .. } => args,
            _ => return false,
        };
        let varying: Vec<Value> = args
            .iter()
            .copied()
            .filter(|&a| self.f.value_type(a).varying)
            .collect();
        !varying.is_empty() && varying.iter().all(|a| self.scal.contains(a))
    }

    /// The scalar registers of a scalarized value (created on first mention).
    fn sregs(&mut self, v: Value) -> Regs {
        if self.vals_is_empty_s(v) {
            let r = self.ns();
            self.svals[v] = smallvec![r];
        }
        self.svals[v].clone()
    }

    fn vals_is_empty_s(&self, v: Value) -> bool {
        self.svals[v].is_empty()
    }

    /// Copies `src` into the scalar register of the scalarized value `v`.
    fn sdefine(&mut self, v: Value, src: Reg) {
        let d = self.sregs(v)[0];
        self.push(MInst::Copy {
            dest: d,
            src,
            vector: false,
        });
    }

    fn splat_into(&mut self, d: Reg, s: Reg) {
        self.push(MInst::R {
            op: AluOp::Move,
            fmt: RFmt::Vvs,
            dest: d,
            src1: None,
            src2: s,
            mask: None,
        });
    }

    /// At the top of block `b`: the vector registers of its scalarized parameters are
    /// splats of their scalar registers (which the incoming edges wrote).
    fn splat_scalar_params(&mut self, b: Block) {
        let params = self.f.blocks[b].params.clone();
        for p in params {
            if self.scal.contains(&p) && self.live.contains(p) {
                let src = self.sregs(p)[0];
                let dst = self.reg(p);
                self.splat_into(dst, src);
            }
        }
    }

    // ------------------------------------------ vector forms (no scalar datapath)

    /// Selects `inst` with the scalar datapath off ([`super::vectorize`]): a result
    /// computed in vectors is selected on its operands' vector forms and gets lane 0
    /// as its scalar form; another uniform result with a vector form is splatted
    /// where it is defined; a compare of uniform values is a vector compare (its mask
    /// of 16 equal lanes is the uniform bool's 0 / 0xffff).
    fn inst_or_vector(&mut self, inst: crate::ir::Inst) {
        let res = self.f.inst_result(inst);
        if let Some(r) = res.filter(|r| self.vf.computed.contains(r)) {
            self.vector_mode = true;
            self.inst(inst);
            self.vector_mode = false;
            self.scalar_from_lane0(r);
            return;
        }
        self.vector_mode = self.compares_vector_forms(inst);
        self.inst(inst);
        self.vector_mode = false;
        if let Some(r) = res.filter(|r| self.vf.all.contains(r)) {
            self.vector_from_scalar(r);
        }
    }

    /// Whether `inst` is an `icmp`/`fcmp` of uniform values with vector forms.
    fn compares_vector_forms(&self, inst: crate::ir::Inst) -> bool {
        match &self.f.insts[inst] {
            InstData::Icmp { args, .. } | InstData::Fcmp { args, .. } => args
                .iter()
                .any(|a| self.vf.all.contains(&self.facts.resolve(*a))),
            _ => false,
        }
    }

    /// The vector registers of a value with a vector form (created on first mention).
    fn vregs(&mut self, v: Value) -> Regs {
        if self.vvals[v].is_empty() {
            let ty = Type {
                varying: true,
                ..self.f.value_type(v)
            };
            let (class, n) = layout(ty);
            self.vvals[v] = (0..n).map(|_| Reg::Virt(self.mf.new_vreg(class))).collect();
        }
        self.vvals[v].clone()
    }

    /// The scalar form of `v`, computed in vectors: its lane 0.
    fn scalar_from_lane0(&mut self, v: Value) {
        let src = self.vregs(v)[0];
        let dest = self.regs(v)[0];
        self.push(MInst::I {
            op: AluOp::GetLane,
            vector: true,
            dest,
            src1: Some(src),
            imm: 0,
        });
    }

    /// The vector form of `v`, computed in a scalar register: its splat.
    fn vector_from_scalar(&mut self, v: Value) {
        if self.const_bits(v).is_some() || !self.live.contains(v) {
            return;
        }
        let src = self.regs(v)[0];
        let dst = self.vregs(v)[0];
        self.splat_into(dst, src);
    }

    /// At the top of block `b`: the scalar forms of its parameters computed in
    /// vectors (the incoming edges wrote their vector forms).
    fn lane0_of_vector_params(&mut self, b: Block) {
        let params = self.f.blocks[b].params.clone();
        for p in params {
            if self.vf.computed.contains(&p) && self.live.contains(p) {
                self.scalar_from_lane0(p);
            }
        }
    }

    /// The value of a 32-bit-or-narrower constant operand (uniform, or a splat of
    /// one), as the register holds it.
    fn const_val(&self, v: Value) -> Option<i32> {
        let v = self.facts.resolve(v);
        let ty = self.ty(v);
        if width(ty.scalar) > 32 || ty.scalar == Scalar::Bool || ty.scalar.is_float() {
            return None;
        }
        let f = self.f;
        match f.values[v].def {
            ValueDef::Result(i) => match &f.insts[i] {
                InstData::Iconst { bits, .. } => {
                    let w = width(ty.scalar);
                    Some((*bits & ((1u64 << w) - 1)) as u32 as i32)
                }
                InstData::Splat { arg } => self.const_val(*arg),
                _ => None,
            },
            ValueDef::Param(..) => None,
        }
    }

    // ---------------------------------------------------------------- basics

    fn push(&mut self, inst: MInst) {
        let span = self.span;
        self.mf.blocks[self.cur].insts.push(MachLine { inst, span });
    }

    fn ns(&mut self) -> Reg {
        Reg::Virt(self.mf.new_vreg(SCALAR))
    }

    fn nv(&mut self) -> Reg {
        Reg::Virt(self.mf.new_vreg(VECTOR))
    }

    fn nreg(&mut self, vector: bool) -> Reg {
        if vector {
            self.nv()
        } else {
            self.ns()
        }
    }

    fn unsupported(&mut self, what: impl Into<String>) {
        let what = what.into();
        let mut d = Diagnostic::error(
            codes::NOT_SUPPORTED_YET,
            format!("the nyuzi code generator does not support {what} yet"),
        );
        if let Some(span) = self.span {
            d = d.with_primary(span, "not supported on nyuzi");
        }
        self.diags.push(d);
    }

    /// The registers of an IR value (created on first mention); a constant is
    /// materialized afresh at each use, so immediates and dead constants cost nothing
    /// and no definition has to dominate its uses.
    fn regs(&mut self, v: Value) -> Regs {
        let v = self.facts.resolve(v);
        if self.scalar_mode && self.scal.contains(&v) && self.const_bits(v).is_none() {
            // A scalarized splat is its operand (no copy).
            if let Some(&InstData::Splat { arg }) = self.def_of(v) {
                return self.regs(arg);
            }
            return self.sregs(v);
        }
        if let Some(bits) = self.const_bits(v) {
            let ty = self.ty(v);
            return self.const_regs(ty, bits);
        }
        if self.vector_mode && self.vf.all.contains(&v) {
            return self.vregs(v);
        }
        if self.vals[v].is_empty() {
            let (class, n) = layout(self.f.value_type(v));
            let regs: Regs = (0..n).map(|_| Reg::Virt(self.mf.new_vreg(class))).collect();
            self.vals[v] = regs;
        }
        self.vals[v].clone()
    }

    fn reg(&mut self, v: Value) -> Reg {
        self.regs(v)[0]
    }

    fn ty(&self, v: Value) -> Type {
        let v = self.facts.resolve(v);
        let ty = self.f.value_type(v);
        if self.scalar_mode && self.scal.contains(&v) {
            return Type {
                varying: false,
                ..ty
            };
        }
        if self.vector_mode && self.vf.all.contains(&v) {
            return Type {
                varying: true,
                ..ty
            };
        }
        ty
    }

    /// The registers of `v` as vectors: a uniform non-bool value is splatted.
    fn vec_regs(&mut self, v: Value) -> Regs {
        let r = self.facts.resolve(v);
        if self.vf.all.contains(&r) && self.const_bits(r).is_none() {
            return self.vregs(r);
        }
        let regs = self.regs(v);
        let ty = self.ty(v);
        if ty.varying || ty.scalar == Scalar::Bool {
            regs
        } else {
            regs.iter().map(|&r| self.splat(r)).collect()
        }
    }

    /// Defines the result of the current instruction as `regs` (copied in).
    fn define(&mut self, result: Option<Value>, regs: &[Reg]) {
        let Some(res) = result else { return };
        let dst = self.regs(res);
        let vector = layout(self.ty(res)).0 == VECTOR;
        for (&d, &s) in dst.iter().zip(regs) {
            self.push(MInst::Copy {
                dest: d,
                src: s,
                vector,
            });
        }
    }

    fn iconst_of(&self, v: Value) -> Option<u64> {
        let v = self.facts.resolve(v);
        match self.f.values[v].def {
            ValueDef::Result(i) => match self.f.insts[i] {
                InstData::Iconst { bits, .. } => Some(bits),
                _ => None,
            },
            ValueDef::Param(..) => None,
        }
    }

    fn new_block_after(&mut self, anchor: MBlock) -> MBlock {
        let b = self.mf.new_block();
        let pos = self
            .order
            .iter()
            .position(|&x| x == anchor)
            .map_or(self.order.len(), |p| p + 1);
        self.order.insert(pos, b);
        b
    }

    fn jump(&mut self, target: MBlock) {
        self.push(MInst::Jump { target });
        self.mf.blocks[self.cur].succs = smallvec![target];
    }

    fn cond_br(&mut self, nz: bool, cond: Reg, taken: MBlock, other: MBlock) {
        self.push(MInst::CondBr {
            nz,
            cond,
            target: taken,
        });
        self.push(MInst::Jump { target: other });
        self.mf.blocks[self.cur].succs = smallvec![taken, other];
    }

    /// Starts code that runs only when `active` is nonzero; returns the join block
    /// for [`Isel::end_guard`].
    fn guard(&mut self, active: Reg) -> MBlock {
        let body = self.new_block_after(self.cur);
        let join = self.new_block_after(body);
        self.cond_br(false, active, join, body);
        self.cur = body;
        join
    }

    fn end_guard(&mut self, join: MBlock) {
        self.jump(join);
        self.cur = join;
    }

    // ------------------------------------------------------- arithmetic helpers

    fn li_into(&mut self, d: Reg, x: u32) {
        let sx = x as i32;
        if fits(i64::from(sx), 14) {
            self.push(MInst::I {
                op: AluOp::Move,
                vector: false,
                dest: d,
                src1: None,
                imm: sx,
            });
            return;
        }
        self.push(MInst::MoveHi {
            dest: d,
            imm: x >> 13,
        });
        if x & 0x1fff != 0 {
            self.push(MInst::I {
                op: AluOp::Or,
                vector: false,
                dest: d,
                src1: Some(d),
                imm: (x & 0x1fff) as i32,
            });
        }
    }

    fn li(&mut self, x: u32) -> Reg {
        let d = self.ns();
        self.li_into(d, x);
        d
    }

    /// A vector with `x` in every lane.
    fn vconst(&mut self, x: u32) -> Reg {
        let d = self.nv();
        if fits(i64::from(x as i32), 14) {
            self.push(MInst::I {
                op: AluOp::Move,
                vector: true,
                dest: d,
                src1: None,
                imm: x as i32,
            });
        } else {
            let s = self.li(x);
            self.push(MInst::R {
                op: AluOp::Move,
                fmt: RFmt::Vvs,
                dest: d,
                src1: None,
                src2: s,
                mask: None,
            });
        }
        d
    }

    fn splat(&mut self, s: Reg) -> Reg {
        let d = self.nv();
        self.push(MInst::R {
            op: AluOp::Move,
            fmt: RFmt::Vvs,
            dest: d,
            src1: None,
            src2: s,
            mask: None,
        });
        d
    }

    /// `a op b`, both scalar or both vector; compares write a scalar.
    fn bin(&mut self, vector: bool, op: AluOp, a: Reg, b: Reg) -> Reg {
        let d = self.nreg(vector && !op.scalar_dest());
        self.push(MInst::R {
            op,
            fmt: if vector { RFmt::Vvv } else { RFmt::Sss },
            dest: d,
            src1: Some(a),
            src2: b,
            mask: None,
        });
        d
    }

    /// `a op imm` (through a scalar register when `imm` does not fit 14 bits).
    fn bin_imm(&mut self, vector: bool, op: AluOp, a: Reg, imm: i32) -> Reg {
        let d = self.nreg(vector && !op.scalar_dest());
        if fits(i64::from(imm), 14) && op.bits() < 32 {
            self.push(MInst::I {
                op,
                vector,
                dest: d,
                src1: Some(a),
                imm,
            });
        } else {
            let t = self.li(imm as u32);
            self.push(MInst::R {
                op,
                fmt: if vector { RFmt::Vvs } else { RFmt::Sss },
                dest: d,
                src1: Some(a),
                src2: t,
                mask: None,
            });
        }
        d
    }

    fn unary(&mut self, vector: bool, op: AluOp, a: Reg) -> Reg {
        let d = self.nreg(vector);
        self.push(MInst::R {
            op,
            fmt: if vector { RFmt::Vvv } else { RFmt::Sss },
            dest: d,
            src1: None,
            src2: a,
            mask: None,
        });
        d
    }

    fn zero(&mut self, vector: bool) -> Reg {
        if vector {
            self.vconst(0)
        } else {
            self.li(0)
        }
    }

    /// Keeps the low `w` bits (canonical narrow integers).
    fn wrap(&mut self, vector: bool, r: Reg, w: u32) -> Reg {
        match w {
            8 => self.bin_imm(vector, AluOp::And, r, 0xff),
            16 => self.bin_imm(vector, AluOp::And, r, 0xffff),
            _ => r,
        }
    }

    fn sext_w(&mut self, vector: bool, r: Reg, w: u32) -> Reg {
        match w {
            8 => self.unary(vector, AluOp::Sext8, r),
            16 => self.unary(vector, AluOp::Sext16, r),
            _ => r,
        }
    }

    /// A uniform bool (0 / 0xffff) widened to 0 / -1.
    fn full32(&mut self, c: Reg) -> Reg {
        let t = self.bin_imm(false, AluOp::Shl, c, 16);
        self.bin_imm(false, AluOp::Ashr, t, 16)
    }

    /// Scalar `c ? a : b` for a uniform bool `c`.
    fn select_scalar(&mut self, c: Reg, a: Reg, b: Reg) -> Reg {
        let m = self.full32(c);
        let t = self.bin(false, AluOp::Xor, a, b);
        let t = self.bin(false, AluOp::And, t, m);
        self.bin(false, AluOp::Xor, b, t)
    }

    /// Vector `m ? a : b` per lane, `m` a mask (or a uniform bool).
    fn select_vec(&mut self, m: Reg, a: Reg, b: Reg) -> Reg {
        let d = self.nv();
        self.push(MInst::Copy {
            dest: d,
            src: b,
            vector: true,
        });
        self.push(MInst::R {
            op: AluOp::Move,
            fmt: RFmt::VvvMask,
            dest: d,
            src1: None,
            src2: a,
            mask: Some(m),
        });
        d
    }

    /// Mask (or uniform bool) `c ? a : b` for mask operands.
    fn select_mask(&mut self, c: Reg, a: Reg, b: Reg) -> Reg {
        let t1 = self.bin(false, AluOp::And, c, a);
        let nc = self.bin_imm(false, AluOp::Xor, c, -1);
        let t2 = self.bin(false, AluOp::And, nc, b);
        self.bin(false, AluOp::Or, t1, t2)
    }

    /// `!m` within 16 bits.
    fn not16(&mut self, m: Reg) -> Reg {
        self.bin_imm(false, AluOp::Xor, m, 0xffff)
    }

    /// The hidden mask parameter of a lane-0 function (it is the existing lanes).
    fn entry_mask_param(&self) -> Option<Value> {
        let f = self.f;
        if !(self.facts.lane0 && f.sig.takes_mask) {
            return None;
        }
        let entry = f.entry_block()?;
        f.blocks[entry].params.last().copied()
    }

    /// The existing lanes: the hidden mask parameter of a lane-0 function when the
    /// code reads it anyway (a register kept live only for this would cost more in
    /// spills around calls than the load), else the context record's.
    fn existing(&mut self) -> Reg {
        match self.entry_mask_param().filter(|&p| self.live.contains(p)) {
            Some(p) => self.reg(p),
            None => self.exists(),
        }
    }

    fn exists(&mut self) -> Reg {
        self.ctx_load(MemOp::W32, ctx::EXISTS)
    }

    /// A load from the context record, reused within the current machine block (the
    /// record does not change while the gang runs).
    fn ctx_load(&mut self, op: MemOp, offset: i32) -> Reg {
        let key = (self.cur, offset);
        if let Some(&r) = self.ctx_cache.get(&key) {
            return r;
        }
        let d = self.nreg(op == MemOp::Block);
        self.push(MInst::Load {
            op,
            dest: d,
            ptr: Reg::Phys(GP),
            offset,
            mask: None,
        });
        self.ctx_cache.insert(key, d);
        d
    }

    /// The lanes a masked effect runs on: `mask & exists` (all existing lanes without
    /// a mask).
    fn active(&mut self, mask: Option<Value>) -> Reg {
        if let Some(m) = mask.filter(|&m| self.within_exists(m, 8)) {
            return self.reg(m);
        }
        if let (Some(m), Some(b)) = (mask, self.cur_ir) {
            if self.facts.full_at(self.f, m, b) {
                return self.existing();
            }
        }
        let e = self.exists();
        match mask {
            // An all-on constant mask adds nothing to the existing lanes.
            Some(m) if self.const_bits(m).is_some_and(|b| b & 1 == 1) => e,
            Some(m) => {
                let m = self.reg(m);
                self.bin(false, AluOp::And, m, e)
            }
            None => e,
        }
    }

    /// Whether mask `m` is known to have no lane on that does not exist: the hidden
    /// mask parameter (callers pass `mask & exists`, launchers the existing lanes), or
    /// a `band` with such a mask (looking `depth` definitions deep).
    fn within_exists(&self, m: Value, depth: u32) -> bool {
        self.facts.within_exists(self.f, m, depth)
    }

    /// A mask as a vector of 0/1 words.
    fn mask_to_vec(&mut self, m: Reg) -> Reg {
        let z = self.vconst(0);
        self.push(MInst::IMasked {
            op: AluOp::Move,
            dest: z,
            src1: None,
            mask: m,
            imm: 1,
        });
        z
    }

    // ------------------------------------------------------------ instructions

    fn entry_params(&mut self, entry: Block) {
        let f = self.f;
        let params = f.blocks[entry].params.clone();
        let Some(assign) = assign_args(&f.sig.params, f.sig.takes_mask) else {
            self.unsupported("more varying arguments than fit in v0-v7");
            return;
        };
        for (&p, loc) in params.iter().zip(&assign) {
            if !self.live.contains(p) {
                continue;
            }
            let regs = self.regs(p);
            let ty = self.ty(p);
            let vector = layout(ty).0 == VECTOR;
            for (k, &d) in regs.iter().enumerate() {
                match loc {
                    ArgLoc::Regs(phys) => self.push(MInst::Copy {
                        dest: d,
                        src: Reg::Phys(phys[k]),
                        vector,
                    }),
                    ArgLoc::Stack(off) => self.push(MInst::LoadArg {
                        dest: d,
                        offset: off + 4 * k as u32,
                    }),
                }
            }
            if ty == Type::BOOL {
                // Launchers pass a uniform bool as 0/1: make it 0/0xffff.
                let t = self.bin_imm(false, AluOp::CmpNeI, regs[0], 0);
                self.push(MInst::Copy {
                    dest: regs[0],
                    src: t,
                    vector: false,
                });
            }
        }
    }

    fn inst(&mut self, inst: crate::ir::Inst) {
        let f = self.f;
        let res = f.inst_result(inst);
        match &f.insts[inst] {
            // Constants are materialized at each use (see `regs`).
            InstData::Iconst { .. } | InstData::Fconst { .. } => {}
            InstData::Unary { op, arg } => self.unary_inst(res, *op, *arg),
            InstData::Binary { op, args } => self.binary_inst(res, *op, args[0], args[1]),
            InstData::Icmp { cond, args } => self.icmp(res, *cond, args[0], args[1]),
            InstData::Fcmp { cond, args } => self.fcmp(res, *cond, args[0], args[1]),
            InstData::Select { args } => self.select(res, args[0], args[1], args[2]),
            InstData::Convert { op, arg, to } => self.convert(res, *op, *arg, *to),
            InstData::Splat { .. } if res.is_some_and(|r| self.const_bits(r).is_some()) => {}
            InstData::Splat { arg } => {
                let regs = self.vec_regs(*arg);
                self.define(res, &regs);
            }
            InstData::Special { reg } => self.special(res, *reg),
            InstData::Lane { op, args } => self.lane(res, *op, args),
            InstData::StackAlloc { size } => self.stack_alloc(res, *size),
            InstData::StackAddr { slot } => {
                self.used_slots[slot.index()] = true;
                let d = self.ns();
                self.push(MInst::FrameAddr {
                    dest: d,
                    obj: FrameObj::Slot(*slot),
                    offset: 0,
                });
                self.define(res, &[d]);
            }
            InstData::GlobalAddr { global } => {
                let d = self.ns();
                self.push(MInst::AddrOf {
                    dest: d,
                    target: RelocTarget::Data(global.index()),
                    addend: 0,
                });
                self.define(res, &[d]);
            }
            InstData::SharedAddr { shared } => {
                let base = self.ns();
                self.push(MInst::Load {
                    op: MemOp::W32,
                    dest: base,
                    ptr: Reg::Phys(GP),
                    offset: ctx::SHARED_BASE,
                    mask: None,
                });
                let off = super::shared_layout(self.m).0[shared.index()];
                let d = self.bin_imm(false, AluOp::AddI, base, off as i32);
                self.define(res, &[d]);
            }
            InstData::Load { .. } if res.is_some_and(|r| self.forward.contains_key(&r)) => {
                let src = res.and_then(|r| self.forward.get(&r).copied());
                if let Some(src) = src {
                    let regs = self.regs(src);
                    self.define(res, &regs);
                }
            }
            // A load whose edge lanes come from a halo waits for its first reader.
            InstData::Load { .. } if res.is_some_and(|r| self.hold_for_halo(inst, r)) => {}
            InstData::Load { ty, addr, mask, .. } => {
                self.load(inst, res, *ty, *addr, *mask);
                self.load_selected(inst);
            }
            InstData::Store {
                addr, value, mask, ..
            } => self.store(*addr, *value, *mask),
            InstData::AtomicRmw {
                op,
                addr,
                value,
                mask,
                ..
            } => self.atomic_rmw(res, *op, *addr, *value, *mask),
            InstData::AtomicCas {
                addr,
                expected,
                replacement,
                mask,
                ..
            } => self.atomic_cas(res, *addr, *expected, *replacement, *mask),
            InstData::Barrier => {
                let id = self.f.inst_id(inst) | (self.fidx << 16);
                self.li_into(Reg::Phys(SCALAR_ARGS[0]), id);
                self.has_calls = true;
                self.push(MInst::Call {
                    callee: Callee::Runtime(RuntimeFn::Barrier),
                    uses: smallvec![SCALAR_ARGS[0]],
                    defs: SmallVec::new(),
                    clobbers: &BARRIER_CLOBBERS,
                });
            }
            InstData::Call { func, args, mask } => self.call(res, *func, args, *mask),
            InstData::Print { .. } => self.unsupported("a `print` legalization did not rewrite"),
            InstData::Trap { code } => {
                self.push(MInst::Break { why: Some(*code) });
                self.mf.blocks[self.cur].succs = SmallVec::new();
            }
            InstData::Jump { dest } => {
                let target = self.edge(dest);
                self.jump(target);
            }
            InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                if self.facts.is_true(*cond) {
                    // `any`/`all` of a full mask: the else edge is never taken.
                    let target = self.edge(then_dest);
                    return self.jump(target);
                }
                let c = self.branch_test(*cond);
                let from = self.cur;
                let t = self.edge_block(from, then_dest);
                let e = self.edge_block(from, else_dest);
                self.cur = from;
                self.cond_br(true, c, t, e);
            }
            InstData::Return { value } => {
                let uses = match value {
                    Some(v) => {
                        let regs = self.regs(*v);
                        let ty = self.ty(*v);
                        let phys = result_regs(ty);
                        let vector = layout(ty).0 == VECTOR;
                        for (&p, &r) in phys.iter().zip(&regs) {
                            self.push(MInst::Copy {
                                dest: Reg::Phys(p),
                                src: r,
                                vector,
                            });
                        }
                        phys
                    }
                    None => SmallVec::new(),
                };
                self.push(MInst::Ret { uses });
                self.mf.blocks[self.cur].succs = SmallVec::new();
            }
        }
    }

    /// Copies a jump's arguments into the target's parameters (through temporaries)
    /// and returns the target's machine block.
    fn edge(&mut self, call: &BlockCall) -> MBlock {
        let params = self.f.blocks[call.block].params.clone();
        let mut temps: Vec<(Reg, Reg, bool)> = Vec::new();
        for (&p, &a) in params.iter().zip(&call.args) {
            if !self.live.contains(p) {
                continue;
            }
            // A scalarized parameter takes its (scalarized) argument's scalar register.
            let scalar = self.scal.contains(&p);
            self.scalar_mode = scalar;
            // A parameter computed in vectors takes its argument's vector form.
            self.vector_mode = self.vf.computed.contains(&p);
            let pr = if scalar { self.sregs(p) } else { self.regs(p) };
            let ar = self.regs(a);
            let vector = layout(self.ty(p)).0 == VECTOR;
            self.scalar_mode = false;
            self.vector_mode = false;
            for (&d, &s) in pr.iter().zip(&ar) {
                let t = self.nreg(vector);
                self.push(MInst::Copy {
                    dest: t,
                    src: s,
                    vector,
                });
                temps.push((d, t, vector));
            }
        }
        for (d, t, vector) in temps {
            self.push(MInst::Copy {
                dest: d,
                src: t,
                vector,
            });
        }
        self.blocks[&call.block]
    }

    /// The block a conditional branch goes to for `call`: the target itself without
    /// arguments, else a new block with the copies.
    fn edge_block(&mut self, from: MBlock, call: &BlockCall) -> MBlock {
        let params = &self.f.blocks[call.block].params;
        if params.iter().all(|&p| !self.live.contains(p)) {
            return self.blocks[&call.block];
        }
        let b = self.new_block_after(from);
        self.cur = b;
        let target = self.edge(call);
        self.jump(target);
        b
    }

    /// Registers holding the constant `bits` of type `ty` (fresh at each use).
    fn const_regs(&mut self, ty: Type, bits: u64) -> Regs {
        let (class, n) = layout(ty);
        if ty.scalar == Scalar::Bool {
            return smallvec![self.li(if bits & 1 != 0 { 0xffff } else { 0 })];
        }
        let w = width(ty.scalar).min(64);
        let bits = if w < 64 {
            bits & ((1u64 << w) - 1)
        } else {
            bits
        };
        (0..n)
            .map(|i| {
                let word = (bits >> (32 * i)) as u32;
                if class == VECTOR {
                    self.vconst(word)
                } else {
                    self.li(word)
                }
            })
            .collect()
    }

    /// The bits of a constant value: an `iconst`/`fconst` (f32 bits for f32), or a
    /// splat of one.
    fn const_bits(&self, v: Value) -> Option<u64> {
        let f = self.f;
        let v = self.facts.resolve(v);
        if self.facts.is_true(v) {
            return Some(1);
        }
        match f.values[v].def {
            ValueDef::Result(i) => match &f.insts[i] {
                InstData::Iconst { bits, .. } => Some(*bits),
                InstData::Fconst { ty, bits } => Some(if ty.scalar == Scalar::F32 {
                    u64::from((f64::from_bits(*bits) as f32).to_bits())
                } else {
                    *bits
                }),
                InstData::Splat { arg } => self.const_bits(*arg),
                _ => None,
            },
            ValueDef::Param(..) => None,
        }
    }

    fn unary_inst(&mut self, res: Option<Value>, op: UnaryOp, arg: Value) {
        let ty = self.ty(arg);
        let s = ty.scalar;
        let vector = ty.varying && s != Scalar::Bool;
        let a = self.regs(arg);
        let w = width(s);
        let out: Regs = match (op, s) {
            (UnaryOp::Bnot, Scalar::Bool) => smallvec![self.not16(a[0])],
            (UnaryOp::Bnot, Scalar::F32 | Scalar::F64) => {
                return self.unsupported("bnot on floats")
            }
            (UnaryOp::Bnot, _) => {
                let mut out = Regs::new();
                for &r in &a {
                    let x = self.bin_imm(vector, AluOp::Xor, r, -1);
                    out.push(self.wrap(vector, x, w));
                }
                out
            }
            (UnaryOp::Ineg, Scalar::I64) => {
                let lo = self.bin_imm(vector, AluOp::Xor, a[0], -1);
                let hi = self.bin_imm(vector, AluOp::Xor, a[1], -1);
                let one = if vector { self.vconst(1) } else { self.li(1) };
                let zero = if vector { self.vconst(0) } else { self.li(0) };
                return self.add64(res, vector, [lo, hi], [one, zero]);
            }
            (UnaryOp::Ineg, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::Ptr) => {
                let z = self.zero(vector);
                let d = self.bin(vector, AluOp::SubI, z, a[0]);
                smallvec![self.wrap(vector, d, w)]
            }
            (UnaryOp::Fneg | UnaryOp::Fabs, Scalar::F32 | Scalar::F64) => {
                let (opc, c) = if op == UnaryOp::Fneg {
                    (AluOp::Xor, 0x8000_0000u32)
                } else {
                    (AluOp::And, 0x7fff_ffff)
                };
                let top = a.len() - 1;
                let mut out = Regs::new();
                for (i, &r) in a.iter().enumerate() {
                    out.push(if i == top {
                        self.bin_imm(vector, opc, r, c as i32)
                    } else {
                        r
                    });
                }
                out
            }
            (UnaryOp::Clz, Scalar::I8 | Scalar::I16 | Scalar::I32) => {
                let d = self.unary(vector, AluOp::Clz, a[0]);
                if w < 32 {
                    smallvec![self.bin_imm(vector, AluOp::SubI, d, 32 - w as i32)]
                } else {
                    smallvec![d]
                }
            }
            (UnaryOp::Ctz, Scalar::I8 | Scalar::I16 | Scalar::I32) => {
                let x = if w < 32 {
                    self.bin_imm(vector, AluOp::Or, a[0], 1 << w)
                } else {
                    a[0]
                };
                smallvec![self.unary(vector, AluOp::Ctz, x)]
            }
            _ => {
                return self.unsupported(format!("`{}` on {}", op.name(), ty));
            }
        };
        self.define(res, &out);
    }

    fn add64(&mut self, res: Option<Value>, vector: bool, a: [Reg; 2], b: [Reg; 2]) {
        let lo = self.bin(vector, AluOp::AddI, a[0], b[0]);
        let c = self.bin(vector, AluOp::CmpLtU, lo, a[0]);
        let hi = self.bin(vector, AluOp::AddI, a[1], b[1]);
        let hi = self.add_carry(vector, hi, c, AluOp::AddI);
        self.define(res, &[lo, hi]);
    }

    /// `hi op 1` where the compare result `c` is set (a mask or 0/0xffff).
    fn add_carry(&mut self, vector: bool, hi: Reg, c: Reg, op: AluOp) -> Reg {
        if vector {
            let d = self.nv();
            self.push(MInst::Copy {
                dest: d,
                src: hi,
                vector: true,
            });
            self.push(MInst::IMasked {
                op,
                dest: d,
                src1: Some(d),
                mask: c,
                imm: 1,
            });
            d
        } else {
            let c1 = self.bin_imm(false, AluOp::Shr, c, 15);
            self.bin(false, op, hi, c1)
        }
    }

    fn binary_inst(&mut self, res: Option<Value>, op: BinaryOp, x: Value, y: Value) {
        let Some(rv) = res else { return };
        let rty = self.ty(rv);
        let s = rty.scalar;
        let vector = rty.varying && s != Scalar::Bool;
        use BinaryOp::*;
        let imm = self.const_val(y).filter(|&c| fits(i64::from(c), 14));
        let imm_form = imm.is_some()
            && matches!(
                op,
                Iadd | Isub | Imul | Band | Bor | Bxor | Ishl | Ushr | Sshr
            );
        if vector && !imm_form && width(s) <= 32 && self.vector_scalar(res, op, s, x, y) {
            return;
        }
        let (a, b) = if vector {
            let b = if imm_form {
                smallvec![]
            } else {
                self.vec_regs(y)
            };
            (self.vec_regs(x), b)
        } else {
            let b = if imm_form { smallvec![] } else { self.regs(y) };
            (self.regs(x), b)
        };
        let w = width(s);
        let out: Regs = match s {
            Scalar::Bool => {
                let opc = match op {
                    Band => AluOp::And,
                    Bor => AluOp::Or,
                    Bxor => AluOp::Xor,
                    _ => return self.unsupported(format!("`{}` on bool", op.name())),
                };
                smallvec![self.bin(false, opc, a[0], b[0])]
            }
            Scalar::F32 => {
                let opc = match op {
                    Fadd => AluOp::AddF,
                    Fsub => AluOp::SubF,
                    Fmul => AluOp::MulF,
                    _ => return self.unsupported(format!("`{}` on f32", op.name())),
                };
                smallvec![self.bin(vector, opc, a[0], b[0])]
            }
            Scalar::F64 => return self.unsupported(format!("`{}` on f64", op.name())),
            Scalar::I64 => return self.binary64(res, vector, op, &a, &b, y),
            _ => {
                let a = a[0];
                let b = b.first().copied().unwrap_or(a);
                let simple = |op| match op {
                    Iadd => Some(AluOp::AddI),
                    Isub => Some(AluOp::SubI),
                    Imul => Some(AluOp::MullI),
                    Band => Some(AluOp::And),
                    Bor => Some(AluOp::Or),
                    Bxor => Some(AluOp::Xor),
                    _ => None,
                };
                if let (Some(opc), Some(c)) = (simple(op), imm) {
                    let d = self.bin_imm(vector, opc, a, c);
                    smallvec![self.wrap(vector, d, w)]
                } else if let (Some(opc), Ishl | Ushr | Sshr, Some(c)) = (shift_op(op), op, imm) {
                    let c = c & (w as i32 - 1);
                    let src = if op == Sshr {
                        self.sext_w(vector, a, w)
                    } else {
                        a
                    };
                    let d = self.bin_imm(vector, opc, src, c);
                    smallvec![self.wrap(vector, d, w)]
                } else if let Some(opc) = simple(op) {
                    let d = self.bin(vector, opc, a, b);
                    smallvec![self.wrap(vector, d, w)]
                } else {
                    match op {
                        Ishl | Ushr | Sshr => {
                            let c = if w < 32 {
                                self.bin_imm(vector, AluOp::And, b, w as i32 - 1)
                            } else {
                                b
                            };
                            let d = match op {
                                Ishl => self.bin(vector, AluOp::Shl, a, c),
                                Ushr => self.bin(vector, AluOp::Shr, a, c),
                                _ => {
                                    let sa = self.sext_w(vector, a, w);
                                    self.bin(vector, AluOp::Ashr, sa, c)
                                }
                            };
                            smallvec![self.wrap(vector, d, w)]
                        }
                        Smin | Smax | Umin | Umax => {
                            let (ca, cb) = if matches!(op, Smin | Smax) {
                                (self.sext_w(vector, a, w), self.sext_w(vector, b, w))
                            } else {
                                (a, b)
                            };
                            let cmp = match op {
                                Smin => AluOp::CmpLeI,
                                Smax => AluOp::CmpGeI,
                                Umin => AluOp::CmpLeU,
                                _ => AluOp::CmpGeU,
                            };
                            let c = self.bin(vector, cmp, ca, cb);
                            smallvec![if vector {
                                self.select_vec(c, a, b)
                            } else {
                                self.select_scalar(c, a, b)
                            }]
                        }
                        _ => return self.unsupported(format!("`{}` on {}", op.name(), rty)),
                    }
                }
            }
        };
        self.define(res, &out);
    }

    /// The uniform value a vector operand broadcasts: itself when uniform, the
    /// operand of a `splat`.
    fn broadcast_of(&self, v: Value) -> Option<Value> {
        if !self.ty(v).varying || self.scal.contains(&self.facts.resolve(v)) {
            return Some(v);
        }
        match self.def_of(v)? {
            InstData::Splat { arg } => Some(*arg),
            _ => None,
        }
    }

    /// The scalar register of a [`Isel::broadcast_of`] value (a scalarized value's
    /// scalar register, so its splat is not needed).
    fn broadcast_reg(&mut self, u: Value) -> Reg {
        let was = (self.scalar_mode, self.vector_mode);
        self.scalar_mode = true;
        self.vector_mode = false;
        let r = self.reg(u);
        (self.scalar_mode, self.vector_mode) = was;
        r
    }

    /// `vector op splat(scalar)` in the `VVS` form (no splat instruction), for the
    /// simple integer and f32 operations; operands of commutative operations are
    /// swapped when the broadcast one comes first. Returns whether it applied.
    fn vector_scalar(
        &mut self,
        res: Option<Value>,
        op: BinaryOp,
        s: Scalar,
        x: Value,
        y: Value,
    ) -> bool {
        use BinaryOp::*;
        let opc = match (op, s) {
            (Fadd, Scalar::F32) => AluOp::AddF,
            (Fsub, Scalar::F32) => AluOp::SubF,
            (Fmul, Scalar::F32) => AluOp::MulF,
            (_, Scalar::F32 | Scalar::Bool) => return false,
            (Iadd, _) => AluOp::AddI,
            (Isub, _) => AluOp::SubI,
            (Imul, _) => AluOp::MullI,
            (Band, _) => AluOp::And,
            (Bor, _) => AluOp::Or,
            (Bxor, _) => AluOp::Xor,
            _ => return false,
        };
        let commutative = !matches!(op, Isub | Fsub);
        let (vec, uni) = match (self.broadcast_of(x), self.broadcast_of(y)) {
            (_, Some(u))
                if self.ty(x).varying
                    && self
                        .def_of(x)
                        .is_none_or(|d| !matches!(d, InstData::Splat { .. })) =>
            {
                (x, u)
            }
            (Some(u), None) if commutative => (y, u),
            _ => return false,
        };
        let a = self.vec_regs(vec)[0];
        let b = self.broadcast_reg(uni);
        let d = self.nv();
        self.push(MInst::R {
            op: opc,
            fmt: RFmt::Vvs,
            dest: d,
            src1: Some(a),
            src2: b,
            mask: None,
        });
        let d = self.wrap(true, d, width(s));
        self.define(res, &[d]);
        true
    }

    /// A vector compare against a broadcast operand in the `VVS` form: `op` when the
    /// broadcast is second, `flipped` (the swapped condition) when it is first.
    fn compare_vs(&mut self, op: AluOp, flipped: AluOp, x: Value, y: Value) -> Option<Reg> {
        let is_splat = |s: &Self, v: Value| matches!(s.def_of(v), Some(InstData::Splat { .. }));
        let (opc, vec, uni) = match (self.broadcast_of(x), self.broadcast_of(y)) {
            (_, Some(u)) if self.ty(x).varying && !is_splat(self, x) => (op, x, u),
            (Some(u), None) => (flipped, y, u),
            _ => return None,
        };
        let a = self.vec_regs(vec)[0];
        let b = self.broadcast_reg(uni);
        let d = self.ns();
        self.push(MInst::R {
            op: opc,
            fmt: RFmt::Vvs,
            dest: d,
            src1: Some(a),
            src2: b,
            mask: None,
        });
        Some(d)
    }

    fn binary64(
        &mut self,
        res: Option<Value>,
        vector: bool,
        op: BinaryOp,
        a: &[Reg],
        b: &[Reg],
        count: Value,
    ) {
        use BinaryOp::*;
        match op {
            Iadd => self.add64(res, vector, [a[0], a[1]], [b[0], b[1]]),
            Isub => {
                let lo = self.bin(vector, AluOp::SubI, a[0], b[0]);
                let borrow = self.bin(vector, AluOp::CmpLtU, a[0], b[0]);
                let hi = self.bin(vector, AluOp::SubI, a[1], b[1]);
                let hi = self.add_carry(vector, hi, borrow, AluOp::SubI);
                self.define(res, &[lo, hi]);
            }
            Band | Bor | Bxor => {
                let opc = match op {
                    Band => AluOp::And,
                    Bor => AluOp::Or,
                    _ => AluOp::Xor,
                };
                let lo = self.bin(vector, opc, a[0], b[0]);
                let hi = self.bin(vector, opc, a[1], b[1]);
                self.define(res, &[lo, hi]);
            }
            Ishl | Ushr | Sshr => {
                let Some(k) = self.iconst_of(count) else {
                    return self.unsupported("a 64-bit shift by a non-constant count");
                };
                let out = self.shift64(vector, op, [a[0], a[1]], (k & 63) as i32);
                self.define(res, &out);
            }
            _ => self.unsupported(format!("`{}` on i64", op.name())),
        }
    }

    fn shift64(&mut self, vector: bool, op: BinaryOp, a: [Reg; 2], k: i32) -> [Reg; 2] {
        let [lo, hi] = a;
        if k == 0 {
            return [lo, hi];
        }
        let sh = |s: &mut Self, opc, r, n| s.bin_imm(vector, opc, r, n);
        match op {
            BinaryOp::Ishl if k < 32 => {
                let h1 = sh(self, AluOp::Shl, hi, k);
                let h2 = sh(self, AluOp::Shr, lo, 32 - k);
                let h = self.bin(vector, AluOp::Or, h1, h2);
                [sh(self, AluOp::Shl, lo, k), h]
            }
            BinaryOp::Ishl => {
                let h = if k == 32 {
                    lo
                } else {
                    sh(self, AluOp::Shl, lo, k - 32)
                };
                [self.zero(vector), h]
            }
            _ if k < 32 => {
                let l1 = sh(self, AluOp::Shr, lo, k);
                let l2 = sh(self, AluOp::Shl, hi, 32 - k);
                let l = self.bin(vector, AluOp::Or, l1, l2);
                let opc = if op == BinaryOp::Sshr {
                    AluOp::Ashr
                } else {
                    AluOp::Shr
                };
                [l, sh(self, opc, hi, k)]
            }
            _ => {
                let opc = if op == BinaryOp::Sshr {
                    AluOp::Ashr
                } else {
                    AluOp::Shr
                };
                let l = if k == 32 {
                    hi
                } else {
                    sh(self, opc, hi, k - 32)
                };
                let h = if op == BinaryOp::Sshr {
                    sh(self, AluOp::Ashr, hi, 31)
                } else {
                    self.zero(vector)
                };
                [l, h]
            }
        }
    }

    fn icmp(&mut self, res: Option<Value>, cond: IntCC, x: Value, y: Value) {
        if let Some(bits) = self.lane_bit_of(cond, x, y) {
            // Lane i's bit of a ballot: the ballot is the mask.
            let r = self.reg(bits);
            return self.define(res, &[r]);
        }
        let ty = self.ty(x);
        let s = ty.scalar;
        let vector = (ty.varying || self.ty(y).varying) && s != Scalar::Bool;
        let plain = s == Scalar::I32 || s == Scalar::Ptr || (!is_signed(cond) && width(s) < 32);
        if vector && plain {
            let flipped = match cond {
                IntCC::Slt => IntCC::Sgt,
                IntCC::Sle => IntCC::Sge,
                IntCC::Sgt => IntCC::Slt,
                IntCC::Sge => IntCC::Sle,
                IntCC::Ult => IntCC::Ugt,
                IntCC::Ule => IntCC::Uge,
                IntCC::Ugt => IntCC::Ult,
                IntCC::Uge => IntCC::Ule,
                c => c,
            };
            if let Some(d) = self.compare_vs(int_cc(cond), int_cc(flipped), x, y) {
                return self.define(res, &[d]);
            }
        }
        let (a, b) = if vector {
            (self.vec_regs(x), self.vec_regs(y))
        } else {
            (self.regs(x), self.regs(y))
        };
        let d = match s {
            Scalar::Bool => self.icmp_bool(cond, a[0], b[0]),
            Scalar::I64 => self.icmp64(vector, cond, &a, &b),
            Scalar::F32 | Scalar::F64 => return self.unsupported("icmp on floats"),
            _ => {
                let w = width(s);
                let (ca, cb) = if is_signed(cond) && w < 32 {
                    (self.sext_w(vector, a[0], w), self.sext_w(vector, b[0], w))
                } else {
                    (a[0], b[0])
                };
                self.bin(vector, int_cc(cond), ca, cb)
            }
        };
        self.define(res, &[d]);
    }

    /// `X` when `x != y` is `((X >> programIndex) & 1) != 0` for `X` a `packmask`
    /// (`ireduce.i32` of a `ballot`, so only the gang's 16 low bits can be set): the
    /// usual way to turn a bit set of lanes back into a mask, which the runtime's
    /// reductions use to leave out the lanes past the block. Lane `i`'s result is bit
    /// `i` of `X`, whichever shift (`i < 16`), so the mask register is `X`'s.
    fn lane_bit_of(&self, cond: IntCC, x: Value, y: Value) -> Option<Value> {
        let f = self.f;
        let def = |v: Value| match f.values[self.facts.resolve(v)].def {
            ValueDef::Result(i) => Some(&f.insts[i]),
            ValueDef::Param(..) => None,
        };
        if cond != IntCC::Ne || self.const_val(y) != Some(0) || self.ty(x).scalar != Scalar::I32 {
            return None;
        }
        let InstData::Binary {
            op: BinaryOp::Band,
            args: [a, b],
        } = def(x)?
        else {
            return None;
        };
        let shifted = match (self.const_val(*a), self.const_val(*b)) {
            (_, Some(1)) => *a,
            (Some(1), _) => *b,
            _ => return None,
        };
        let InstData::Binary {
            op: BinaryOp::Sshr | BinaryOp::Ushr,
            args: [set, by],
        } = def(shifted)?
        else {
            return None;
        };
        let InstData::Special {
            reg: SpecialReg::LaneIndex,
        } = def(*by)?
        else {
            return None;
        };
        let InstData::Splat { arg } = def(*set)? else {
            return None;
        };
        let InstData::Convert {
            op: ConvOp::Ireduce,
            arg: ballot,
            ..
        } = def(*arg)?
        else {
            return None;
        };
        let is_ballot = matches!(
            def(*ballot)?,
            InstData::Lane {
                op: LaneOp::Ballot,
                ..
            }
        );
        (is_ballot && self.ty(*arg) == Type::I32).then_some(*arg)
    }

    /// Compares of bools (true is -1 when signed, 1 when unsigned).
    fn icmp_bool(&mut self, cond: IntCC, a: Reg, b: Reg) -> Reg {
        let and_not = |s: &mut Self, x, y| {
            let ny = s.not16(y);
            s.bin(false, AluOp::And, x, ny)
        };
        let or_not = |s: &mut Self, x, y| {
            let ny = s.not16(y);
            s.bin(false, AluOp::Or, x, ny)
        };
        match cond {
            IntCC::Eq => {
                let t = self.bin(false, AluOp::Xor, a, b);
                self.not16(t)
            }
            IntCC::Ne => self.bin(false, AluOp::Xor, a, b),
            IntCC::Slt | IntCC::Ugt => and_not(self, a, b),
            IntCC::Sgt | IntCC::Ult => and_not(self, b, a),
            IntCC::Sle | IntCC::Uge => or_not(self, a, b),
            IntCC::Sge | IntCC::Ule => or_not(self, b, a),
        }
    }

    fn icmp64(&mut self, vector: bool, cond: IntCC, a: &[Reg], b: &[Reg]) -> Reg {
        let eq_lo = self.bin(vector, AluOp::CmpEqI, a[0], b[0]);
        let eq_hi = self.bin(vector, AluOp::CmpEqI, a[1], b[1]);
        match cond {
            IntCC::Eq => self.bin(false, AluOp::And, eq_lo, eq_hi),
            IntCC::Ne => {
                let e = self.bin(false, AluOp::And, eq_lo, eq_hi);
                if vector {
                    self.not16(e)
                } else {
                    self.bin_imm(false, AluOp::Xor, e, 0xffff)
                }
            }
            _ => {
                let (hi_op, lo_op) = match cond {
                    IntCC::Slt => (AluOp::CmpLtI, AluOp::CmpLtU),
                    IntCC::Sle => (AluOp::CmpLtI, AluOp::CmpLeU),
                    IntCC::Sgt => (AluOp::CmpGtI, AluOp::CmpGtU),
                    IntCC::Sge => (AluOp::CmpGtI, AluOp::CmpGeU),
                    IntCC::Ult => (AluOp::CmpLtU, AluOp::CmpLtU),
                    IntCC::Ule => (AluOp::CmpLtU, AluOp::CmpLeU),
                    IntCC::Ugt => (AluOp::CmpGtU, AluOp::CmpGtU),
                    _ => (AluOp::CmpGtU, AluOp::CmpGeU),
                };
                let h = self.bin(vector, hi_op, a[1], b[1]);
                let l = self.bin(vector, lo_op, a[0], b[0]);
                let t = self.bin(false, AluOp::And, eq_hi, l);
                self.bin(false, AluOp::Or, h, t)
            }
        }
    }

    fn fcmp(&mut self, res: Option<Value>, cond: FloatCC, x: Value, y: Value) {
        let ty = self.ty(x);
        if ty.scalar != Scalar::F32 {
            return self.unsupported(format!("fcmp on {}", ty));
        }
        let vector = ty.varying || self.ty(y).varying;
        let ops = match cond {
            FloatCC::Eq => Some((AluOp::CmpEqF, AluOp::CmpEqF)),
            FloatCC::Une => Some((AluOp::CmpNeF, AluOp::CmpNeF)),
            FloatCC::Lt => Some((AluOp::CmpLtF, AluOp::CmpGtF)),
            FloatCC::Le => Some((AluOp::CmpLeF, AluOp::CmpGeF)),
            FloatCC::Gt => Some((AluOp::CmpGtF, AluOp::CmpLtF)),
            FloatCC::Ge => Some((AluOp::CmpGeF, AluOp::CmpLeF)),
            FloatCC::Uno => None,
        };
        if let (true, Some((op, flipped))) = (vector, ops) {
            if let Some(d) = self.compare_vs(op, flipped, x, y) {
                return self.define(res, &[d]);
            }
        }
        let (a, b) = if vector {
            (self.vec_regs(x)[0], self.vec_regs(y)[0])
        } else {
            (self.reg(x), self.reg(y))
        };
        let d = match cond {
            FloatCC::Eq => self.bin(vector, AluOp::CmpEqF, a, b),
            FloatCC::Une => self.bin(vector, AluOp::CmpNeF, a, b),
            FloatCC::Lt => self.bin(vector, AluOp::CmpLtF, a, b),
            FloatCC::Le => self.bin(vector, AluOp::CmpLeF, a, b),
            FloatCC::Gt => self.bin(vector, AluOp::CmpGtF, a, b),
            FloatCC::Ge => self.bin(vector, AluOp::CmpGeF, a, b),
            FloatCC::Uno => {
                let na = self.bin(vector, AluOp::CmpNeF, a, a);
                let nb = self.bin(vector, AluOp::CmpNeF, b, b);
                self.bin(false, AluOp::Or, na, nb)
            }
        };
        self.define(res, &[d]);
    }

    fn select(&mut self, res: Option<Value>, c: Value, x: Value, y: Value) {
        let Some(rv) = res else { return };
        let rty = self.ty(rv);
        let cr = self.reg(c);
        if rty.scalar == Scalar::Bool {
            let (a, b) = (self.reg(x), self.reg(y));
            let d = self.select_mask(cr, a, b);
            return self.define(res, &[d]);
        }
        let out: Regs = if rty.varying {
            let a = self.vec_regs(x);
            let b = self.vec_regs(y);
            a.iter()
                .zip(&b)
                .map(|(&p, &q)| self.select_vec(cr, p, q))
                .collect()
        } else {
            let a = self.regs(x);
            let b = self.regs(y);
            self.select_by_branch(cr, &a, &b)
        };
        self.define(res, &out);
    }

    /// Scalar `on != 0 ? a : b`: `b` copied, then a branch over the copy of `a`
    /// (taken only when `on` is zero). Three instructions, against five dependent
    /// ones for the arithmetic select, and loop masks are usually on.
    fn select_by_branch(&mut self, on: Reg, a: &[Reg], b: &[Reg]) -> Regs {
        let d: Regs = b
            .iter()
            .map(|&q| {
                let d = self.ns();
                self.push(MInst::Copy {
                    dest: d,
                    src: q,
                    vector: false,
                });
                d
            })
            .collect();
        let join = self.guard(on);
        for (&dd, &p) in d.iter().zip(a) {
            self.push(MInst::Copy {
                dest: dd,
                src: p,
                vector: false,
            });
        }
        self.end_guard(join);
        d
    }

    fn convert(&mut self, res: Option<Value>, op: ConvOp, arg: Value, to: Type) {
        let from = self.ty(arg);
        let (fs, ts) = (from.scalar, to.scalar);
        let varying = from.varying;
        let vector = varying && ts != Scalar::Bool;
        let a = self.regs(arg);
        let (fw, tw) = (width(fs), width(ts));
        let out: Regs = match op {
            ConvOp::Sext | ConvOp::Zext if fs == Scalar::Bool => {
                // true is 1 (zext) or all ones (sext); a mask becomes a vector first.
                let one = if op == ConvOp::Zext {
                    1u32
                } else if tw >= 32 {
                    u32::MAX
                } else {
                    (1u32 << tw) - 1
                };
                let lo = if varying {
                    let z = self.vconst(0);
                    let k = self.li(one);
                    self.push(MInst::R {
                        op: AluOp::Move,
                        fmt: RFmt::VvsMask,
                        dest: z,
                        src1: None,
                        src2: k,
                        mask: Some(a[0]),
                    });
                    z
                } else {
                    let k = self.li(one);
                    let m = self.full32(a[0]);
                    self.bin(false, AluOp::And, m, k)
                };
                if tw == 64 {
                    let hi = if op == ConvOp::Sext {
                        lo
                    } else {
                        self.zero(vector)
                    };
                    smallvec![lo, hi]
                } else {
                    smallvec![lo]
                }
            }
            ConvOp::Sext => {
                let lo = if fw < 32 {
                    let x = self.sext_w(vector, a[0], fw);
                    self.wrap(vector, x, tw)
                } else {
                    a[0]
                };
                if tw == 64 {
                    if fw == 64 {
                        a.clone()
                    } else {
                        let hi = self.bin_imm(vector, AluOp::Ashr, lo, 31);
                        smallvec![lo, hi]
                    }
                } else {
                    smallvec![lo]
                }
            }
            ConvOp::Zext => {
                if tw == 64 && fw < 64 {
                    smallvec![a[0], self.zero(vector)]
                } else {
                    a.clone()
                }
            }
            ConvOp::Ireduce => {
                if ts == Scalar::Bool {
                    let t = self.bin_imm(varying, AluOp::And, a[0], 1);
                    smallvec![self.bin_imm(varying, AluOp::CmpNeI, t, 0)]
                } else {
                    smallvec![self.wrap(vector, a[0], tw)]
                }
            }
            ConvOp::Bitcast => {
                let n = layout(to).1;
                if n == 2 && a.len() == 1 {
                    smallvec![a[0], self.zero(vector)]
                } else {
                    let first = self.wrap(vector, a[0], tw);
                    let mut out: Regs = smallvec![first];
                    out.extend(a.iter().skip(1).take(n - 1).copied());
                    out
                }
            }
            ConvOp::ToBool => match fs {
                Scalar::Bool => a.clone(),
                Scalar::F32 => {
                    let z = self.zero(varying);
                    smallvec![self.bin(varying, AluOp::CmpNeF, a[0], z)]
                }
                Scalar::F64 => {
                    // Nonzero unless +-0.0 (NaN is true), from the bits.
                    let mag = self.bin_imm(varying, AluOp::And, a[1], 0x7fff_ffff);
                    let t = self.bin(varying, AluOp::Or, a[0], mag);
                    smallvec![self.bin_imm(varying, AluOp::CmpNeI, t, 0)]
                }
                Scalar::I64 => {
                    let t = self.bin(varying, AluOp::Or, a[0], a[1]);
                    smallvec![self.bin_imm(varying, AluOp::CmpNeI, t, 0)]
                }
                _ => smallvec![self.bin_imm(varying, AluOp::CmpNeI, a[0], 0)],
            },
            ConvOp::FcvtFromSint if ts == Scalar::F32 && fw <= 32 => {
                let x = if fs == Scalar::Bool {
                    // true converts as -1 (a 1-bit signed integer).
                    if varying {
                        let z = self.vconst(0);
                        self.push(MInst::IMasked {
                            op: AluOp::Move,
                            dest: z,
                            src1: None,
                            mask: a[0],
                            imm: -1,
                        });
                        z
                    } else {
                        self.full32(a[0])
                    }
                } else {
                    self.sext_w(vector, a[0], fw)
                };
                smallvec![self.unary(vector, AluOp::Itof, x)]
            }
            _ => {
                return self.unsupported(format!("`{}` from {} to {}", op.name(), from, to));
            }
        };
        self.define(res, &out);
    }

    fn special(&mut self, res: Option<Value>, reg: SpecialReg) {
        use SpecialReg::*;
        let vec_off = match reg {
            LaneIndex => Some(ctx::LANE_INDEX),
            ThreadIdxX => Some(ctx::THREAD_IDX_X),
            ThreadIdxY => Some(ctx::THREAD_IDX_Y),
            ThreadIdxZ => Some(ctx::THREAD_IDX_Z),
            _ => None,
        };
        if let Some(off) = vec_off {
            let d = self.ctx_load(MemOp::Block, off);
            return self.define(res, &[d]);
        }
        let off = match reg {
            LaneCount => {
                let d = self.li(LANES);
                return self.define(res, &[d]);
            }
            Clock => {
                let lo = self.ns();
                self.push(MInst::GetCr { dest: lo, cr: 6 });
                let hi = self.li(0);
                return self.define(res, &[lo, hi]);
            }
            GangIndex => ctx::GANG_INDEX,
            BlockIdxX => ctx::BLOCK_IDX_X,
            BlockIdxY => ctx::BLOCK_IDX_Y,
            BlockIdxZ => ctx::BLOCK_IDX_Z,
            BlockDimX => ctx::BLOCK_DIM_X,
            BlockDimY => ctx::BLOCK_DIM_Y,
            BlockDimZ => ctx::BLOCK_DIM_Z,
            GridDimX => ctx::GRID_DIM_X,
            GridDimY => ctx::GRID_DIM_Y,
            DynSharedBytes => ctx::DYN_SHARED_BYTES,
            _ => ctx::GRID_DIM_Z,
        };
        let d = self.ns();
        self.push(MInst::Load {
            op: MemOp::W32,
            dest: d,
            ptr: Reg::Phys(GP),
            offset: off,
            mask: None,
        });
        self.define(res, &[d]);
    }

    fn lane(&mut self, res: Option<Value>, op: LaneOp, args: &[Value]) {
        let Some(&first) = args.first() else { return };
        let ty = self.ty(first);
        let is_mask = ty.scalar == Scalar::Bool;
        let out: Regs = match op {
            LaneOp::Any | LaneOp::All if self.uniform_in_lane0(first) => {
                // Every existing lane holds lane 0's bit.
                let t = self.lane0_bit(first);
                if self.exact(first) {
                    smallvec![t]
                } else {
                    smallvec![self.bin_imm(false, AluOp::CmpNeI, t, 0)]
                }
            }
            LaneOp::Any | LaneOp::All | LaneOp::Ballot | LaneOp::FirstLane => {
                // `first` limited to the existing lanes (no work when it is known to be
                // within them, or is the all-on constant).
                let x = self.active(Some(first));
                let e = self.exists();
                match op {
                    LaneOp::Any => smallvec![self.bin_imm(false, AluOp::CmpNeI, x, 0)],
                    LaneOp::All => smallvec![self.bin(false, AluOp::CmpEqI, x, e)],
                    LaneOp::Ballot => smallvec![x, self.li(0)],
                    _ => {
                        let t = self.unary(false, AluOp::Ctz, x);
                        let z = self.bin_imm(false, AluOp::CmpEqI, x, 0);
                        let m32 = self.full32(z);
                        smallvec![self.bin(false, AluOp::Or, t, m32)]
                    }
                }
            }
            LaneOp::Extract => {
                let idx = self.reg(args[1]);
                if !self
                    .const_val(args[1])
                    .is_some_and(|k| (0..LANES as i32).contains(&k))
                {
                    self.check_lane(idx);
                }
                if is_mask {
                    let m = self.reg(first);
                    let t = self.bin(false, AluOp::Shr, m, idx);
                    let t = self.bin_imm(false, AluOp::And, t, 1);
                    smallvec![self.bin_imm(false, AluOp::CmpNeI, t, 0)]
                } else {
                    let v = self.vec_regs(first);
                    v.iter()
                        .map(|&r| {
                            let d = self.ns();
                            self.push(MInst::R {
                                op: AluOp::GetLane,
                                fmt: RFmt::Vvs,
                                dest: d,
                                src1: Some(r),
                                src2: idx,
                                mask: None,
                            });
                            d
                        })
                        .collect()
                }
            }
            LaneOp::Insert => {
                let idx = self.reg(args[1]);
                if !self
                    .const_val(args[1])
                    .is_some_and(|k| (0..LANES as i32).contains(&k))
                {
                    self.check_lane(idx);
                }
                let one = self.li(1);
                let bit = self.bin(false, AluOp::Shl, one, idx);
                if is_mask {
                    let m = self.reg(first);
                    let x = self.reg(args[2]);
                    smallvec![self.select_mask(bit, x, m)]
                } else {
                    let v = self.vec_regs(first);
                    let x = self.regs(args[2]);
                    v.iter()
                        .zip(&x)
                        .map(|(&r, &s)| {
                            let d = self.nv();
                            self.push(MInst::Copy {
                                dest: d,
                                src: r,
                                vector: true,
                            });
                            self.push(MInst::R {
                                op: AluOp::Move,
                                fmt: RFmt::VvsMask,
                                dest: d,
                                src1: None,
                                src2: s,
                                mask: Some(bit),
                            });
                            d
                        })
                        .collect()
                }
            }
            LaneOp::Shuffle => {
                let idx = self.vec_regs(args[1])[0];
                let shuffle = |s: &mut Self, r| s.bin(true, AluOp::Shuffle, r, idx);
                if is_mask {
                    let m = self.reg(first);
                    let v = self.mask_to_vec(m);
                    let sh = shuffle(self, v);
                    smallvec![self.bin_imm(true, AluOp::CmpNeI, sh, 0)]
                } else {
                    let v = self.vec_regs(first);
                    v.iter().map(|&r| shuffle(self, r)).collect()
                }
            }
            _ => return self.unsupported(format!("lane operation `{}`", op.name())),
        };
        self.define(res, &out);
    }

    /// Whether mask `m` is proven uniform in a function whose entry-active lanes are
    /// the existing lanes (then lane 0's bit is every existing lane's).
    fn uniform_in_lane0(&self, m: Value) -> bool {
        self.facts.lane0
            && self.f.value_type(m) == Type::MASK
            && self.uni.as_ref().is_some_and(|u| u.is_uniform(m))
    }

    /// Whether the register of mask `m` is 0 or 0xffff (all lanes or none): a
    /// constant, a scalar compare of scalarized values, a uniform bool, or logic of
    /// those.
    fn exact(&self, m: Value) -> bool {
        self.exact_depth(m, 8)
    }

    fn exact_depth(&self, m: Value, depth: u32) -> bool {
        let f = self.f;
        let m = self.facts.resolve(m);
        if !f.value_type(m).varying || self.const_bits(m).is_some() {
            return true;
        }
        let ValueDef::Result(i) = f.values[m].def else {
            return false;
        };
        match &f.insts[i] {
            InstData::Icmp { .. } | InstData::Fcmp { .. } => self.compares_scalarized(i),
            InstData::Splat { arg } => !f.value_type(*arg).varying,
            InstData::Binary {
                op: BinaryOp::Band | BinaryOp::Bor | BinaryOp::Bxor,
                args,
            } if depth > 0 => args.iter().all(|&a| self.exact_depth(a, depth - 1)),
            InstData::Unary {
                op: UnaryOp::Bnot,
                arg,
            } if depth > 0 => self.exact_depth(*arg, depth - 1),
            _ => false,
        }
    }

    /// A register that is nonzero exactly when lane 0 of mask `m` is on (`m` itself
    /// when it is all lanes or none).
    fn lane0_bit(&mut self, m: Value) -> Reg {
        let m = self.strip_full(m, 8);
        let r = self.reg(m);
        if self.exact(m) {
            r
        } else {
            self.bin_imm(false, AluOp::And, r, 1)
        }
    }

    /// `m` without the `band` operands that are full in the current block (their
    /// lane 0 is on).
    fn strip_full(&self, m: Value, depth: u32) -> Value {
        let m = self.facts.resolve(m);
        let (
            Some(b),
            Some(InstData::Binary {
                op: BinaryOp::Band,
                args,
            }),
        ) = (self.cur_ir, self.def_of(m))
        else {
            return m;
        };
        if depth == 0 {
            return m;
        }
        if self.facts.full_at(self.f, args[0], b) {
            self.strip_full(args[1], depth - 1)
        } else if self.facts.full_at(self.f, args[1], b) {
            self.strip_full(args[0], depth - 1)
        } else {
            m
        }
    }

    /// A register that is nonzero exactly when the uniform bool `cond` (a branch
    /// condition) is true. `any(m)` is tested without its compare: `m` limited to the
    /// existing lanes, or lane 0's bit of a uniform `m` in a lane-0 function.
    fn branch_test(&mut self, cond: Value) -> Reg {
        let any_of = match self.def_of(cond) {
            Some(InstData::Lane {
                op: LaneOp::Any,
                args,
            }) => args.first().copied(),
            _ => None,
        };
        match any_of {
            Some(m) if self.uniform_in_lane0(m) => self.lane0_bit(m),
            Some(m) => self.active(Some(m)),
            None => self.reg(cond),
        }
    }

    /// `stack_alloc size`: the size (a 32-bit `size_t` here) is copied into the
    /// register that receives the address, and the emitter expands the check and the
    /// move of `sp` ([`MInst::StackAlloc`]).
    fn stack_alloc(&mut self, res: Option<Value>, size: Value) {
        if self.f.value_type(size).scalar != Scalar::I32 {
            self.unsupported("a `stack_alloc` of a 64-bit size (`size_t` is 32-bit on nyuzi)");
            return;
        }
        self.dynamic_stack = true;
        let bytes = self.ns();
        let src = self.reg(size);
        self.push(MInst::Copy {
            dest: bytes,
            src,
            vector: false,
        });
        let tmp = self.ns();
        self.push(MInst::StackAlloc { bytes, tmp });
        self.define(res, &[bytes]);
    }

    /// Stops with `break` when a lane index is outside the gang (the interpreter's
    /// runtime error for `extract`/`insert`).
    fn check_lane(&mut self, idx: Reg) {
        let bad = self.bin_imm(false, AluOp::CmpGeU, idx, LANES as i32);
        let trap = self.new_block_after(self.cur);
        let cont = self.new_block_after(trap);
        self.cond_br(false, bad, cont, trap);
        self.cur = trap;
        self.push(MInst::Break { why: None });
        self.mf.blocks[self.cur].succs = SmallVec::new();
        self.cur = cont;
    }

    // ----------------------------------------------------------------- memory

    fn narrow_op(s: Scalar) -> MemOp {
        match s {
            Scalar::Bool | Scalar::I8 => MemOp::U8,
            Scalar::I16 => MemOp::U16,
            _ => MemOp::W32,
        }
    }

    fn load(
        &mut self,
        inst: crate::ir::Inst,
        res: Option<Value>,
        ty: Type,
        addr: Value,
        mask: Option<Value>,
    ) {
        let Some(rv) = res else { return };
        let rty = self.ty(rv);
        let s = ty.scalar;
        let aty = self.ty(addr);
        if !aty.varying {
            if rty.varying {
                return self.unsupported("a varying load from a uniform address");
            }
            let a = self.reg(addr);
            let (_, n) = layout(rty);
            let dst: Regs = (0..n).map(|_| self.ns()).collect();
            let join = mask.map(|m| {
                for &d in &dst {
                    self.li_into(d, 0);
                }
                let act = self.active(Some(m));
                self.guard(act)
            });
            for (i, &d) in dst.iter().enumerate() {
                self.push(MInst::Load {
                    op: Self::narrow_op(s),
                    dest: d,
                    ptr: a,
                    offset: 4 * i as i32,
                    mask: None,
                });
            }
            if s == Scalar::Bool {
                let t = self.bin_imm(false, AluOp::CmpNeI, dst[0], 0);
                self.push(MInst::Copy {
                    dest: dst[0],
                    src: t,
                    vector: false,
                });
            }
            if let Some(j) = join {
                self.end_guard(j);
            }
            return self.define(res, &dst);
        }
        let act = self.active(mask);
        let va = self.reg(addr);
        let served = self.shuffled_load(inst, rv, s, mask, act);
        let act = match &served {
            Some(shuffle::Served::Reuse(a)) => return self.define(res, &[*a]),
            Some(shuffle::Served::Moved(m)) => m.reload,
            None => act,
        };
        let mut out = self.varying_load(s, addr, mask, va, act);
        if let Some(shuffle::Served::Moved(m)) = &served {
            out[0] = self.merge_moved(m, out[0]);
        }
        self.define(res, &out);
    }

    /// The lanes `act` of a load of `s` at the varying address `addr` (`va` its
    /// register; `mask` the IR's); the other lanes are 0.
    fn varying_load(
        &mut self,
        s: Scalar,
        addr: Value,
        mask: Option<Value>,
        va: Reg,
        act: Reg,
    ) -> Regs {
        if let Some((base, off)) = self.consecutive(addr) {
            if width(s) == 32 {
                return smallvec![self.block_or_gather_load(base, off, va, act)];
            }
        }
        if width(s) == 32 {
            if let Some(base) = self.affine_block_base(addr, mask, va) {
                return smallvec![self.block_or_gather_load_at(base, false, va, act)];
            }
        }
        match s {
            Scalar::I64 | Scalar::F64 => {
                smallvec![self.gather(va, 0, act), self.gather(va, 4, act)]
            }
            Scalar::Bool | Scalar::I8 | Scalar::I16 => {
                let word = self.bin_imm(true, AluOp::And, va, -4);
                let byte = self.bin_imm(true, AluOp::And, va, 3);
                let shift = self.bin_imm(true, AluOp::Shl, byte, 3);
                let w = self.gather(word, 0, act);
                let x = self.bin(true, AluOp::Shr, w, shift);
                let x = self.wrap(true, x, if s == Scalar::I16 { 16 } else { 8 });
                if s == Scalar::Bool {
                    smallvec![self.bin_imm(true, AluOp::CmpNeI, x, 0)]
                } else {
                    smallvec![x]
                }
            }
            _ => smallvec![self.gather(va, 0, act)],
        }
    }

    /// Masked gather of words at `va + offset`; masked-off lanes are 0.
    fn gather(&mut self, va: Reg, offset: i32, act: Reg) -> Reg {
        let d = self.vconst(0);
        self.push(MInst::Load {
            op: MemOp::GatherMask,
            dest: d,
            ptr: va,
            offset,
            mask: Some(act),
        });
        d
    }

    fn def_of(&self, v: Value) -> Option<&'a InstData> {
        let f = self.f;
        let v = self.facts.resolve(v);
        if let Some(&src) = self.forward.get(&v) {
            return self.def_of(src);
        }
        match f.values[v].def {
            ValueDef::Result(i) => Some(&f.insts[i]),
            ValueDef::Param(..) => None,
        }
    }

    /// `Some((base, index))` when the varying address is provably
    /// `splat(base) + (lane_index [+ splat(index)]) * 4` (through bitcasts; `* 4` as
    /// `imul` by a splatted 4 or `ishl` by 2): the lowering's form for `a[programIndex
    /// + k]`, foreach indices and private per-lane slots.
    fn consecutive(&self, addr: Value) -> Option<(Value, Option<Value>)> {
        let InstData::Binary {
            op: BinaryOp::Iadd,
            args,
        } = self.def_of(addr)?
        else {
            return None;
        };
        for (x, y) in [(args[0], args[1]), (args[1], args[0])] {
            if let Some(InstData::Splat { arg }) = self.def_of(x) {
                if let Some(index) = self.lane_times4(y) {
                    return Some((*arg, index));
                }
            }
        }
        None
    }

    /// The uniform address of lane 0 of a varying address the affine analysis proves
    /// to be exactly `base + 4 * lane_index` (no other index, no no-wrap assumption) in
    /// every lane of the access's `mask`:
    /// computed on the scalar side from the base's linear form when its atoms are
    /// 32-bit uniform values (so the per-lane address arithmetic becomes dead), read
    /// from lane 0 of the address vector `va` otherwise. Catches what
    /// [`Isel::consecutive`]'s pattern misses: `a[programIndex + i + 1]`, `a[2 * i +
    /// programIndex]`, addresses built in other orders or through loop parameters.
    fn affine_block_base(&mut self, addr: Value, mask: Option<Value>, va: Reg) -> Option<Reg> {
        use crate::analysis::affine::{Dim, Part};
        let t = self.affine.address_tuple(addr, mask)?;
        let qualified = t.under.is_some();
        let block = t.exact()
            && t.width == 32
            && t.const_stride(Dim::Lane) == Some(4)
            && Dim::ALL[1..].iter().all(|&d| t.stride(d).is_zero());
        if !block {
            return None;
        }
        // Atoms in scalar registers: uniform-typed, or scalarized.
        let scalar_atoms = match &t.base {
            Part::Known(l) => l.terms.iter().all(|(a, _)| {
                let ty = self.f.value_type(a.value);
                let scalar = !ty.varying || self.scal.contains(&self.facts.resolve(a.value));
                scalar && width(ty.scalar) == 32
            }),
            Part::Runtime => false,
        };
        if let (true, Part::Known(l)) = (scalar_atoms, t.base.clone()) {
            let mut acc = (l.constant != 0).then(|| self.li(l.constant as u32));
            for (a, c) in l.terms {
                self.scalar_mode = true;
                let r = self.reg(a.value);
                self.scalar_mode = false;
                let term = if c == 1 {
                    r
                } else {
                    let k = self.li(c as u32);
                    self.bin(false, AluOp::MullI, r, k)
                };
                acc = Some(match acc {
                    None => term,
                    Some(x) => self.bin(false, AluOp::AddI, x, term),
                });
            }
            return Some(acc.unwrap_or_else(|| self.li(0)));
        }
        if qualified {
            // Lane 0 may be off in the tuple's mask, where the address is not the tuple's.
            return None;
        }
        let d = self.ns();
        self.push(MInst::I {
            op: AluOp::GetLane,
            vector: true,
            dest: d,
            src1: Some(va),
            imm: 0,
        });
        Some(d)
    }

    /// `Some(index)` when `v` is `(lane_index [+ splat(index)]) * 4`.
    fn lane_times4(&self, v: Value) -> Option<Option<Value>> {
        match self.def_of(v)? {
            InstData::Convert {
                op: ConvOp::Bitcast,
                arg,
                ..
            } => self.lane_times4(*arg),
            InstData::Binary {
                op: BinaryOp::Imul,
                args,
            } => {
                if self.const_val(args[1]) == Some(4) {
                    self.lane_plus(args[0])
                } else if self.const_val(args[0]) == Some(4) {
                    self.lane_plus(args[1])
                } else {
                    None
                }
            }
            InstData::Binary {
                op: BinaryOp::Ishl,
                args,
            } if self.const_val(args[1]) == Some(2) => self.lane_plus(args[0]),
            _ => None,
        }
    }

    /// `Some(index)` when `v` is `lane_index` or `lane_index + splat(index)` (32-bit).
    fn lane_plus(&self, v: Value) -> Option<Option<Value>> {
        let is_lane = |v: Value| {
            matches!(
                self.def_of(v),
                Some(InstData::Special {
                    reg: SpecialReg::LaneIndex
                })
            )
        };
        if is_lane(v) {
            return Some(None);
        }
        let InstData::Binary {
            op: BinaryOp::Iadd,
            args,
        } = self.def_of(v)?
        else {
            return None;
        };
        if width(self.ty(v).scalar) != 32 {
            return None;
        }
        for (x, y) in [(args[0], args[1]), (args[1], args[0])] {
            if is_lane(x) {
                if let Some(InstData::Splat { arg }) = self.def_of(y) {
                    return Some(Some(*arg));
                }
            }
        }
        None
    }

    /// The per-lane private slot (and lane-index offset) a varying address designates,
    /// when it is a [`Isel::consecutive`] access of a stack slot.
    fn slot_key(&self, addr: Value) -> Option<(crate::ir::StackSlot, Option<Value>)> {
        let (base, index) = self.consecutive(addr)?;
        match self.def_of(base)? {
            InstData::StackAddr { slot } => Some((*slot, index)),
            _ => None,
        }
    }

    /// Whether a mask operand is absent or the all-on constant.
    fn all_on(&self, mask: Option<Value>) -> bool {
        mask.is_none_or(|m| self.const_bits(m).is_some_and(|b| b & 1 == 1))
    }

    /// Store-to-load forwarding for per-lane private slots (the lowering keeps
    /// `foreach` indices and varying locals whose address is taken there): within a
    /// block, an unmasked load of the slot a store with an all-on mask just wrote
    /// yields the stored value, when nothing that may write memory comes between.
    /// Lanes that do not exist may differ, which nothing observes. The loaded value
    /// is then as recognizable as the stored one (block accesses of `a[i]`).
    fn forwarded_loads(&self) -> FxHashMap<Value, Value> {
        let f = self.f;
        let mut fwd = FxHashMap::default();
        for &b in &f.layout {
            let mut known: FxHashMap<(crate::ir::StackSlot, Option<Value>), Value> =
                FxHashMap::default();
            for &i in &f.blocks[b].insts {
                match &f.insts[i] {
                    InstData::Store {
                        addr, value, mask, ..
                    } => {
                        let key = self.slot_key(*addr);
                        known.clear();
                        if let Some(key) = key.filter(|_| self.all_on(*mask)) {
                            known.insert(key, *value);
                        }
                    }
                    InstData::Load { addr, mask, .. } => {
                        let (Some(r), Some(key)) = (f.inst_result(i), self.slot_key(*addr)) else {
                            continue;
                        };
                        if let Some(&v) = known.get(&key) {
                            if self.all_on(*mask) && f.value_type(v) == f.value_type(r) {
                                fwd.insert(r, v);
                            }
                        }
                    }
                    InstData::AtomicRmw { .. }
                    | InstData::AtomicCas { .. }
                    | InstData::Call { .. }
                    | InstData::Barrier => known.clear(),
                    _ => {}
                }
            }
        }
        fwd
    }

    /// The per-lane addresses `addr + lane_index * 4` of a consecutive access, built
    /// in the (rare) misaligned branch, so the selected address vector `_va` is left
    /// for dead-code removal when nothing else reads it.
    fn lane_addresses(&mut self, addr: Reg, _va: Reg) -> Reg {
        let lane = self.ctx_load(MemOp::Block, ctx::LANE_INDEX);
        let off = self.bin_imm(true, AluOp::Shl, lane, 2);
        let d = self.nv();
        self.push(MInst::R {
            op: AluOp::AddI,
            fmt: RFmt::Vvs,
            dest: d,
            src1: Some(off),
            src2: addr,
            mask: None,
        });
        d
    }

    /// Whether `base + index*4` is known to be 64-byte aligned: a stack slot aligned
    /// to 64 (the frame keeps that alignment) with no index or a constant index that
    /// is a multiple of 16.
    fn aligned_slot(&self, base: Value, index: Option<Value>) -> bool {
        let Some(InstData::StackAddr { slot }) = self.def_of(base) else {
            return false;
        };
        let index_ok = match index {
            None => true,
            Some(i) => self.const_val(i).is_some_and(|k| k % 16 == 0),
        };
        self.f.stack_slots[*slot].align >= 64 && index_ok
    }

    /// The uniform address of lane 0 of a [`Isel::consecutive`] access.
    fn block_base(&mut self, base: Value, index: Option<Value>) -> Reg {
        let b = self.reg(base);
        match index {
            None => b,
            Some(i) => {
                let i = self.reg(i);
                let off = self.bin_imm(false, AluOp::Shl, i, 2);
                self.bin(false, AluOp::AddI, b, off)
            }
        }
    }

    /// A block load when `base + off` is 64-byte aligned, else a gather; masked-off
    /// lanes are 0 either way.
    fn block_or_gather_load(
        &mut self,
        base: Value,
        index: Option<Value>,
        va: Reg,
        act: Reg,
    ) -> Reg {
        let addr = self.block_base(base, index);
        let aligned = self.aligned_slot(base, index);
        self.block_or_gather_load_at(addr, aligned, va, act)
    }

    /// [`Isel::block_or_gather_load`] from the uniform address `addr` of lane 0
    /// (`aligned`: known 64-byte aligned).
    fn block_or_gather_load_at(&mut self, addr: Reg, aligned: bool, va: Reg, act: Reg) -> Reg {
        let d = self.vconst(0);
        if aligned {
            self.push(MInst::Load {
                op: MemOp::BlockMask,
                dest: d,
                ptr: addr,
                offset: 0,
                mask: Some(act),
            });
            return d;
        }
        let low = self.bin_imm(false, AluOp::And, addr, 63);
        let from = self.cur;
        let blk = self.new_block_after(from);
        let gat = self.new_block_after(blk);
        let join = self.new_block_after(gat);
        self.cond_br(true, low, gat, blk);
        self.cur = blk;
        self.push(MInst::Load {
            op: MemOp::BlockMask,
            dest: d,
            ptr: addr,
            offset: 0,
            mask: Some(act),
        });
        self.jump(join);
        self.cur = gat;
        let va = self.lane_addresses(addr, va);
        self.push(MInst::Load {
            op: MemOp::GatherMask,
            dest: d,
            ptr: va,
            offset: 0,
            mask: Some(act),
        });
        self.jump(join);
        self.cur = join;
        d
    }

    fn store(&mut self, addr: Value, value: Value, mask: Option<Value>) {
        let vty = self.ty(value);
        let s = vty.scalar;
        let aty = self.ty(addr);
        if !aty.varying {
            if vty.varying {
                return self.unsupported("a varying store to a uniform address");
            }
            let a = self.reg(addr);
            let regs = self.regs(value);
            let join = mask.map(|m| {
                let act = self.active(Some(m));
                self.guard(act)
            });
            let src = if s == Scalar::Bool {
                smallvec![self.bin_imm(false, AluOp::And, regs[0], 1)]
            } else {
                regs
            };
            for (i, &r) in src.iter().enumerate() {
                self.push(MInst::Store {
                    op: Self::narrow_op(s),
                    src: r,
                    ptr: a,
                    offset: 4 * i as i32,
                    mask: None,
                });
            }
            if let Some(j) = join {
                self.end_guard(j);
            }
            return;
        }
        let act = self.active(mask);
        let va = self.reg(addr);
        let vals = if s == Scalar::Bool {
            let m = self.reg(value);
            let m = if vty.varying {
                m
            } else {
                // A uniform bool is already a mask of all lanes or none.
                m
            };
            smallvec![self.mask_to_vec(m)]
        } else {
            self.vec_regs(value)
        };
        if width(s) == 32 {
            if let Some((base, off)) = self.consecutive(addr) {
                return self.block_or_scatter_store(base, off, va, vals[0], act);
            }
            if let Some(base) = self.affine_block_base(addr, mask, va) {
                return self.block_or_scatter_store_at(base, false, va, vals[0], act);
            }
        }
        match s {
            Scalar::I64 | Scalar::F64 => {
                self.scatter(va, 0, vals[0], act);
                self.scatter(va, 4, vals[1], act);
            }
            Scalar::Bool | Scalar::I8 | Scalar::I16 => self.lane_stores(va, vals[0], act, s),
            _ => self.scatter(va, 0, vals[0], act),
        }
    }

    fn scatter(&mut self, va: Reg, offset: i32, val: Reg, act: Reg) {
        self.push(MInst::Store {
            op: MemOp::GatherMask,
            src: val,
            ptr: va,
            offset,
            mask: Some(act),
        });
    }

    fn block_or_scatter_store(
        &mut self,
        base: Value,
        index: Option<Value>,
        va: Reg,
        val: Reg,
        act: Reg,
    ) {
        let addr = self.block_base(base, index);
        let aligned = self.aligned_slot(base, index);
        self.block_or_scatter_store_at(addr, aligned, va, val, act)
    }

    /// [`Isel::block_or_scatter_store`] to the uniform address `addr` of lane 0
    /// (`aligned`: known 64-byte aligned).
    fn block_or_scatter_store_at(&mut self, addr: Reg, aligned: bool, va: Reg, val: Reg, act: Reg) {
        if aligned {
            self.push(MInst::Store {
                op: MemOp::BlockMask,
                src: val,
                ptr: addr,
                offset: 0,
                mask: Some(act),
            });
            return;
        }
        let low = self.bin_imm(false, AluOp::And, addr, 63);
        let from = self.cur;
        let blk = self.new_block_after(from);
        let sct = self.new_block_after(blk);
        let join = self.new_block_after(sct);
        self.cond_br(true, low, sct, blk);
        self.cur = blk;
        self.push(MInst::Store {
            op: MemOp::BlockMask,
            src: val,
            ptr: addr,
            offset: 0,
            mask: Some(act),
        });
        self.jump(join);
        self.cur = sct;
        let va = self.lane_addresses(addr, va);
        self.scatter(va, 0, val, act);
        self.jump(join);
        self.cur = join;
    }

    /// Byte/halfword scatter: one scalar store per lane in lane order; masked-off
    /// lanes store to the frame's scratch word.
    fn lane_stores(&mut self, va: Reg, val: Reg, act: Reg, s: Scalar) {
        self.needs_scratch = true;
        let scratch = self.ns();
        self.push(MInst::FrameAddr {
            dest: scratch,
            obj: FrameObj::Scratch,
            offset: 0,
        });
        let addrs = self.splat(scratch);
        self.push(MInst::R {
            op: AluOp::Move,
            fmt: RFmt::VvvMask,
            dest: addrs,
            src1: None,
            src2: va,
            mask: Some(act),
        });
        for lane in 0..LANES as i32 {
            let a = self.ns();
            self.push(MInst::I {
                op: AluOp::GetLane,
                vector: true,
                dest: a,
                src1: Some(addrs),
                imm: lane,
            });
            let x = self.ns();
            self.push(MInst::I {
                op: AluOp::GetLane,
                vector: true,
                dest: x,
                src1: Some(val),
                imm: lane,
            });
            self.push(MInst::Store {
                op: Self::narrow_op(s),
                src: x,
                ptr: a,
                offset: 0,
                mask: None,
            });
        }
    }

    // ---------------------------------------------------------------- atomics

    fn atomic_prologue(&mut self, addr: Value, value_ty: Type, varying: bool) -> Option<Reg> {
        if self.ty(addr).varying || varying {
            self.unsupported("an atomic operation with a varying address or operand");
            return None;
        }
        if width(value_ty.scalar) != 32 {
            self.unsupported(format!("an atomic operation on {}", value_ty));
            return None;
        }
        Some(self.reg(addr))
    }

    fn atomic_rmw(
        &mut self,
        res: Option<Value>,
        op: AtomicOp,
        addr: Value,
        value: Value,
        mask: Option<Value>,
    ) {
        let vty = self.ty(value);
        let varying = res.is_some_and(|r| self.ty(r).varying);
        let Some(a) = self.atomic_prologue(addr, vty, varying) else {
            return;
        };
        let x = self.reg(value);
        let old = self.ns();
        self.li_into(old, 0);
        let join = mask.map(|m| {
            let act = self.active(Some(m));
            self.guard(act)
        });
        let lp = self.new_block_after(self.cur);
        self.jump(lp);
        self.cur = lp;
        self.push(MInst::Load {
            op: MemOp::Sync,
            dest: old,
            ptr: a,
            offset: 0,
            mask: None,
        });
        let float = vty.scalar == Scalar::F32;
        let new = match op {
            AtomicOp::Add if float => self.bin(false, AluOp::AddF, old, x),
            AtomicOp::Sub if float => self.bin(false, AluOp::SubF, old, x),
            _ if float && op != AtomicOp::Xchg => {
                self.unsupported(format!("atomic `{}` on f32", op.name()));
                return;
            }
            AtomicOp::Add => self.bin(false, AluOp::AddI, old, x),
            AtomicOp::Sub => self.bin(false, AluOp::SubI, old, x),
            AtomicOp::And => self.bin(false, AluOp::And, old, x),
            AtomicOp::Or => self.bin(false, AluOp::Or, old, x),
            AtomicOp::Xor => self.bin(false, AluOp::Xor, old, x),
            AtomicOp::Xchg => x,
            AtomicOp::Smin | AtomicOp::Smax | AtomicOp::Umin | AtomicOp::Umax => {
                let cmp = match op {
                    AtomicOp::Smin => AluOp::CmpLeI,
                    AtomicOp::Smax => AluOp::CmpGeI,
                    AtomicOp::Umin => AluOp::CmpLeU,
                    _ => AluOp::CmpGeU,
                };
                let c = self.bin(false, cmp, old, x);
                self.select_scalar(c, old, x)
            }
        };
        let flag = self.ns();
        self.push(MInst::Copy {
            dest: flag,
            src: new,
            vector: false,
        });
        self.push(MInst::StoreSync { flag, ptr: a });
        let after = self.new_block_after(lp);
        self.cond_br(false, flag, lp, after);
        self.cur = after;
        if let Some(j) = join {
            self.end_guard(j);
        }
        self.define(res, &[old]);
    }

    fn atomic_cas(
        &mut self,
        res: Option<Value>,
        addr: Value,
        expected: Value,
        replacement: Value,
        mask: Option<Value>,
    ) {
        let vty = self.ty(expected);
        let varying = res.is_some_and(|r| self.ty(r).varying);
        let Some(a) = self.atomic_prologue(addr, vty, varying) else {
            return;
        };
        let e = self.reg(expected);
        let r = self.reg(replacement);
        let old = self.ns();
        self.li_into(old, 0);
        let join = mask.map(|m| {
            let act = self.active(Some(m));
            self.guard(act)
        });
        let lp = self.new_block_after(self.cur);
        self.jump(lp);
        self.cur = lp;
        self.push(MInst::Load {
            op: MemOp::Sync,
            dest: old,
            ptr: a,
            offset: 0,
            mask: None,
        });
        let eq = self.bin(false, AluOp::CmpEqI, old, e);
        let st = self.new_block_after(lp);
        let done = self.new_block_after(st);
        self.cond_br(false, eq, done, st);
        self.cur = st;
        let flag = self.ns();
        self.push(MInst::Copy {
            dest: flag,
            src: r,
            vector: false,
        });
        self.push(MInst::StoreSync { flag, ptr: a });
        self.cond_br(false, flag, lp, done);
        self.cur = done;
        if let Some(j) = join {
            self.end_guard(j);
        }
        self.define(res, &[old]);
    }

    // ------------------------------------------------------------------ calls

    fn call(
        &mut self,
        res: Option<Value>,
        func: crate::ir::FuncRef,
        args: &[Value],
        mask: Option<Value>,
    ) {
        let Some(callee) = self.m.functions.get(func) else {
            return self.unsupported("a call of an unknown function");
        };
        let Some(assign) = assign_args(&callee.sig.params, callee.sig.takes_mask) else {
            return self.unsupported("a call with more varying arguments than fit in v0-v7");
        };
        let out_bytes = stack_arg_bytes(&assign, &callee.sig.params, callee.sig.takes_mask);
        self.out_args = self.out_args.max(out_bytes);
        // Evaluate everything into virtual registers first, then pin.
        let mut moves: Vec<(PReg, Reg, bool)> = Vec::new();
        let mut stores: Vec<(u32, Reg)> = Vec::new();
        let mut place = |loc: &ArgLoc, regs: &[Reg], vector: bool| match loc {
            ArgLoc::Regs(phys) => {
                for (&p, &r) in phys.iter().zip(regs) {
                    moves.push((p, r, vector));
                }
            }
            ArgLoc::Stack(off) => {
                for (k, &r) in regs.iter().enumerate() {
                    stores.push((off + 4 * k as u32, r));
                }
            }
        };
        for ((&arg, pty), loc) in args.iter().zip(&callee.sig.params).zip(&assign) {
            let regs = if pty.varying && pty.scalar != Scalar::Bool {
                self.vec_regs(arg)
            } else {
                self.regs(arg)
            };
            place(loc, &regs, layout(*pty).0 == VECTOR);
        }
        if callee.sig.takes_mask {
            let act = self.active(mask);
            if let Some(loc) = assign.last() {
                place(loc, &[act], false);
            }
        }
        for (offset, src) in stores {
            self.push(MInst::StoreArg { src, offset });
        }
        let mut uses: SmallVec<[PReg; 8]> = SmallVec::new();
        for (p, r, vector) in moves {
            self.push(MInst::Copy {
                dest: Reg::Phys(p),
                src: r,
                vector,
            });
            uses.push(p);
        }
        let defs = callee.sig.ret.map(result_regs).unwrap_or_default();
        self.has_calls = true;
        self.push(MInst::Call {
            callee: Callee::Function(callee.name.clone()),
            uses,
            defs: defs.clone(),
            clobbers: &CALL_CLOBBERS,
        });
        if let (Some(rv), Some(rty)) = (res, callee.sig.ret) {
            let dst = self.regs(rv);
            let vector = layout(rty).0 == VECTOR;
            for (&d, &p) in dst.iter().zip(&defs) {
                self.push(MInst::Copy {
                    dest: d,
                    src: Reg::Phys(p),
                    vector,
                });
            }
        }
    }
}
