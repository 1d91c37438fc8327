//! Instruction selection: each IR entry function becomes one `.entry` kernel of
//! [`sim::gpu`] instructions, built with [`KernelBuilder`].
//!
//! Every IR value gets its own location (a `%r`, an `%rd` pair or a `%p`), so no
//! register allocation runs yet; block parameters are assigned through fresh
//! temporaries (a parallel copy). 8- and 16-bit integers are kept sign-extended in
//! 32-bit registers: operations that could leave other high bits re-extend their
//! result, and unsigned operations zero-extend their operands first. See the module
//! docs of [`super`] for the mask discipline and the memory layout.

use rustc_hash::{FxHashMap, FxHashSet};

use cranelift_entity::EntityRef;

use sim::gpu::{
    AddrBase, Address, AtomOp, BinOp, Cmp, Guard, Inst, KernelBuilder, KernelKind, LabelId, Op,
    Reg, Round, ShflMode, Space, Special, Src, Type as T, UnOp, VoteMode,
};

mod calls;
mod dac;
pub mod full_warp;
mod reduce;
mod shuffle;

use super::spaces::{Spaces, SHARED_WINDOW};
use super::{Compiled, Options};
use crate::diag::{codes, Diagnostic};
use crate::ir::{
    AtomicOp, BinaryOp, Block, BlockCall, ConvOp, FloatCC, FuncRef, Function, InstData, IntCC,
    LaneOp, Module, Scalar, SharedVar, SpecialReg, Type, UnaryOp, Value,
};
use crate::parallel;
use crate::source::Span;
use crate::timing;

/// Names of the hidden kernel parameters, after the entry's own.
pub const HIDDEN_PARAMS: [&str; 9] = [
    "__globals",
    "__shared",
    "__frames",
    "__ntid_x",
    "__ntid_y",
    "__ntid_z",
    "__console",
    "__result",
    "__dyn_shared",
];

/// Index of `__console` in [`HIDDEN_PARAMS`]: the console buffer, a 32-bit cursor
/// (bytes written so far) at offset 0 and the text from [`CONSOLE_TEXT`] on.
const CONSOLE: usize = 6;
/// Index of `__result`: 8 bytes for the entry's return value.
const RESULT: usize = 7;
/// Index of `__dyn_shared`: the launch's dynamic shared bytes (a 32-bit value).
const DYN_SHARED: usize = 8;
/// Offset of the console's text in its buffer.
pub const CONSOLE_TEXT: u64 = 8;
/// Bytes of console text kept (more is counted by the cursor but dropped).
pub const CONSOLE_CAPACITY: u64 = 1 << 20;
/// Bytes of each gang's `alloca` area (as Nyuzi's default gang stack), for the kernels
/// of a module that calls `alloca`: it follows the gang's frames in `__frames`, plus
/// 64 bytes to align its start.
pub const ALLOCA_BYTES: u32 = 16 * 1024;
/// The serial port the print runtime (`stdlib/runtime_print.spmd`) stores its
/// characters to, as on Nyuzi: on the dac-gpu, a store to it appends to the console.
const SERIAL_OUTPUT: u64 = 0xffff_0048;

/// Where a value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    /// A 32-bit register (8/16/32-bit integers, `f32`).
    R(Reg),
    /// An even-aligned pair (`i64`, `f64`, pointers).
    D(Reg),
    /// A predicate (`bool`).
    P(Reg),
}

impl Loc {
    fn reg(self) -> Reg {
        match self {
            Loc::R(r) | Loc::D(r) | Loc::P(r) => r,
        }
    }
}

/// A kernel's `alloca` area ([`ALLOCA_BYTES`] per gang, after its frames): the
/// registers holding its current top and its end, and the prologue instruction whose
/// immediate is the area's offset from the frame base (patched once the frames are
/// sized). A `stack_alloc` takes bytes from the top; an inlined call that allocates
/// restores the top when it returns, which frees its allocations.
#[derive(Clone, Copy, Debug)]
struct AllocaArea {
    top: Reg,
    end: Reg,
    patch: usize,
}

/// Where an `alloca`-ing function instance keeps the [`AllocaArea`]'s top from its
/// start, to put it back when it returns.
#[derive(Clone, Copy, Debug)]
enum AllocaMark {
    /// A register: an instance inlined into the entry.
    Reg(Reg),
    /// Bytes at this offset of the frame: an instance inside an out-of-line
    /// (recursive) body, whose registers a nested activation of the same body
    /// overwrites, while each activation has a frame of its own.
    Frame(u32),
}

/// Whether `f` has a `stack_alloc`.
fn allocates(f: &Function) -> bool {
    f.insts
        .values()
        .any(|d| matches!(d, InstData::StackAlloc { .. }))
}

/// Byte offsets of a set of objects laid out one after another, each aligned.
fn layout(items: impl Iterator<Item = (u32, u32)>) -> (Vec<u32>, u32) {
    let mut offsets = Vec::new();
    let mut end = 0u32;
    for (size, align) in items {
        let a = align.max(1);
        let at = end.div_ceil(a) * a;
        offsets.push(at);
        end = at + size;
    }
    (offsets, end.div_ceil(8) * 8)
}

/// Compiles every entry function of `module`.
pub fn compile_module(module: &Module, options: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    if module.lane_count != 32 || module.ptr_size != 8 {
        return Err(vec![Diagnostic::error(
            codes::INTERNAL_ERROR,
            format!(
                "dac-gpu needs 32 lanes and 8-byte pointers (the module has {} and {})",
                module.lane_count, module.ptr_size
            ),
        )]);
    }
    let (global_offsets, globals_size) = layout(module.globals.values().map(|g| (g.size, g.align)));
    let mut globals = vec![0u8; globals_size as usize];
    let mut global_relocs = Vec::new();
    for (g, &off) in module.globals.values().zip(&global_offsets) {
        let o = off as usize;
        let n = g.init.len().min(g.size as usize);
        globals[o..o + n].copy_from_slice(&g.init[..n]);
        for r in &g.relocs {
            let target = u64::from(global_offsets[r.target.index()]).wrapping_add_signed(r.addend);
            global_relocs.push((off + r.offset, target));
        }
    }
    let spaces = Spaces::of(module);
    let out_of_line = calls::out_of_line_functions(module);
    // The global fallback: shared variables without a static space, per block.
    let (shared_offsets, shared_size) = layout(module.shared.iter().map(|(v, s)| {
        if spaces.is_resident(v) {
            (0, 1)
        } else {
            (s.bytes(options.dynamic_shared), s.align)
        }
    }));
    let mut out = Compiled {
        program: sim::gpu::Program::default(),
        lines: Vec::new(),
        globals,
        global_relocs,
        shared_bytes: Vec::new(),
        frame_bytes: Vec::new(),
        traps: Vec::new(),
        regs: Vec::new(),
        candidates: Vec::new(),
        dac_split: Vec::new(),
        shuffles: Vec::new(),
        shuffle_remarks: Vec::new(),
        dynamic_shared: options.dynamic_shared,
    };
    let mut errors = Vec::new();
    let facts = super::decouple::ModuleFacts::of(module);
    let affine = options
        .shuffle
        .is_on()
        .then(|| crate::analysis::affine::analyze_module(module));
    let shared = SharedCtx {
        module,
        options,
        global_offsets: &global_offsets,
        shared_offsets: &shared_offsets,
        shared_size,
        spaces: &spaces,
        out_of_line: &out_of_line,
        facts: &facts,
        affine: affine.as_ref(),
    };
    let entries: Vec<(FuncRef, &Function)> = module
        .functions
        .iter()
        .filter(|(_, f)| f.linkage.is_entry())
        .collect();
    let compiled = parallel::map_in_order(
        entries,
        |(_, f)| f.insts.len(),
        |(fref, func)| compile_entry(&shared, fref, func),
    );
    for entry in compiled {
        match entry {
            Ok(e) => {
                out.candidates.push(e.candidates);
                out.regs.push(e.regs);
                out.program.kernels.push(e.kernel);
                out.dac_split.push(e.dac_split);
                out.lines.push(e.lines);
                out.shared_bytes.push(shared_size);
                out.frame_bytes.push(e.frame);
                out.traps.push(e.traps);
                out.shuffles.push(e.shuffles);
                out.shuffle_remarks.push(e.shuffle_remarks);
            }
            Err(e) => errors.extend(e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// What every entry's compilation reads: the module and its module-wide layouts.
struct SharedCtx<'a> {
    module: &'a Module,
    options: &'a Options,
    global_offsets: &'a [u32],
    shared_offsets: &'a [u32],
    shared_size: u32,
    spaces: &'a Spaces,
    out_of_line: &'a FxHashSet<FuncRef>,
    facts: &'a super::decouple::ModuleFacts,
    affine: Option<&'a crate::analysis::affine::ModuleAffine>,
}

/// One entry compiled: its kernel and what [`Compiled`] records of it.
struct CompiledEntry {
    kernel: sim::gpu::Kernel,
    lines: Vec<Option<Span>>,
    frame: u32,
    traps: Vec<(usize, &'static str)>,
    regs: super::alloc::RegReport,
    candidates: Vec<super::regdem::Candidate>,
    dac_split: Option<u32>,
    shuffles: Option<crate::analysis::shuffle::ServedCounts>,
    shuffle_remarks: String,
}

/// Selects, allocates and decouples the entry `fref`: everything that depends on the
/// entry alone, so entries compile in parallel ([`parallel`]).
fn compile_entry(
    shared: &SharedCtx<'_>,
    fref: FuncRef,
    func: &Function,
) -> Result<CompiledEntry, Vec<Diagnostic>> {
    let SharedCtx {
        module, options, ..
    } = *shared;
    let spaces = shared.spaces;
    let (resident_offsets, resident_size) = spaces.layout(module, fref, options.dynamic_shared);
    let dac = if options.dac {
        timing::stage("decouple: plan", || {
            super::decouple::Plan::of(
                module,
                shared.facts,
                fref,
                |i| spaces.is_shared_access(fref, i),
                &resident_offsets,
            )
        })
    } else {
        None
    };
    let mut shuffle_remarks = String::new();
    let ctx = ModuleCtx {
        module,
        uniformity: options.uniformity,
        global_offsets: shared.global_offsets,
        shared_offsets: shared.shared_offsets,
        shared_size: shared.shared_size,
        spaces,
        out_of_line: shared.out_of_line.clone(),
        resident_offsets,
        resident_size,
        dac,
        shuffles: shared.affine.map(|a| {
            use crate::analysis::shuffle::{analyze_function, cost};
            let mut pairs = analyze_function(module, func, &a.functions[fref]);
            if options.shuffle == crate::passes::ShuffleMode::Auto {
                let machine = cost::Machine::dac_gpu(&options.machine);
                shuffle_remarks = cost::remarks(&cost::select(func, &mut pairs, &machine), "//");
            }
            (fref, pairs)
        }),
        shuffle_mode: options.shuffle,
        served: Default::default(),
    };
    // The full-warp split ([`full_warp`]) is a uniformity-driven transform, kept
    // only when it pays.
    let split = options.uniformity;
    let (mut kernel, mut lines, frame, mut traps, _) =
        timing::stage("instruction selection", || {
            match Isel::new(&ctx, fref, split).run() {
                Ok((.., false)) if split => {
                    ctx.served.borrow_mut().clear();
                    Isel::new(&ctx, fref, false).run()
                }
                other => other,
            }
        })?;
    let (regs, candidates) = timing::stage("register allocation", || {
        super::regdem::allocate(&mut kernel, &mut lines, &mut traps, options)
    })
    .map_err(|d| vec![d])?;
    if let Some(plan) = &ctx.dac {
        let affine = timing::stage("decouple: affine stream", || {
            plan.affine_stream(module, &kernel)
        })
        .map_err(|e| vec![Diagnostic::error(codes::INTERNAL_ERROR, e)])?;
        kernel.set_affine(affine);
    }
    Ok(CompiledEntry {
        kernel,
        lines,
        frame,
        traps,
        regs,
        candidates,
        dac_split: ctx.dac.as_ref().and_then(|p| p.split()),
        shuffles: ctx.served_counts(),
        shuffle_remarks,
    })
}

/// The blocks of `f` reachable from its entry, in layout order.
fn reachable_in_layout(f: &Function) -> Vec<Block> {
    let dom = crate::ir::dominance::DominatorTree::compute(f);
    f.layout
        .iter()
        .copied()
        .filter(|&b| dom.is_reachable(b))
        .collect()
}

struct ModuleCtx<'a> {
    module: &'a Module,
    /// `Options::uniformity`: the uniform datapath follows the analysis, not only types.
    uniformity: bool,
    global_offsets: &'a [u32],
    /// The global fallback's layout (per block) of shared variables not in `.shared`.
    shared_offsets: &'a [u32],
    shared_size: u32,
    spaces: &'a Spaces,
    /// Functions selected out of line ([`calls`]): the recursive ones and the print
    /// runtime's routines.
    out_of_line: FxHashSet<FuncRef>,
    /// This kernel's `.shared` layout.
    resident_offsets: FxHashMap<SharedVar, u32>,
    resident_size: u32,
    /// The decoupling of this entry ([`super::decouple`]), when `Options::dac`.
    dac: Option<super::decouple::Plan>,
    /// `Options::shuffle`: the entry and its loads served by shuffles ([`shuffle`]).
    shuffles: Option<(FuncRef, crate::analysis::shuffle::FunctionShuffles)>,
    /// How they are served (the ablations drop the edge reload or the move).
    shuffle_mode: crate::passes::ShuffleMode,
    /// The IR loads selected as a move from their pair's source, and how.
    served: std::cell::RefCell<FxHashMap<crate::ir::Inst, crate::analysis::shuffle::Served>>,
}

/// A selected kernel, its line table, its frame bytes per gang, its trap sites and
/// whether its entry body was split into a full-warp and a general version
/// ([`full_warp`]) that pays.
type Selected = (
    sim::gpu::Kernel,
    Vec<Option<Span>>,
    u32,
    Vec<(usize, &'static str)>,
    bool,
);

/// The selector of one function.
struct Isel<'a> {
    ctx: &'a ModuleCtx<'a>,
    f: &'a Function,
    /// The function being selected (the entry or an inlined callee).
    fref: FuncRef,
    b: KernelBuilder,
    /// Keyed by inline instance (0 = the entry itself) and value or block.
    locs: FxHashMap<(u32, Value), Loc>,
    labels: FxHashMap<(u32, Block), LabelId>,
    /// The block selected right after the current one in this instance (a branch
    /// there falls through instead).
    next_block: Option<Block>,
    /// The IR block the instruction being selected is in.
    cur_block: Option<Block>,
    /// Predicates and indices the shuffles of one block share ([`shuffle`]).
    shfl_shared: FxHashMap<(u32, Block, shuffle::Shared), Reg>,
    /// Loads selected so far and loads waiting for their halo's carrier ([`shuffle`]).
    halo: shuffle::HaloState,
    /// The current inline instance, the next instance number, and the functions
    /// being inlined (to refuse recursion).
    instance: u32,
    instances: u32,
    inline_stack: Vec<crate::ir::FuncRef>,
    /// Where a `return` of the current inline instance goes: its result and the
    /// continuation.
    ret: Option<(Option<Loc>, LabelId)>,
    /// Frame bytes used so far (the entry's slots, then each inlined call's).
    frame_end: u32,
    /// The entry's mask parameter: set to `exists` once that is computed.
    entry_mask: Option<Reg>,
    traps: Vec<(usize, &'static str)>,
    /// The block's real extents (the launch is one-dimensional, rounded up to whole
    /// warps) and whether this thread is one of the block's (an existing lane).
    ntid: [Reg; 3],
    exists: Reg,
    /// Split the entry's body into a full-warp and a general version ([`full_warp`]),
    /// and whether the code selected now is the full-warp version (`exists` is true
    /// in every lane).
    specialize: bool,
    full_warp: bool,
    /// The instance number of the entry's full-warp version, once split.
    full_instance: Option<u32>,
    /// In the full-warp version, the current instance's bool values that are true in
    /// every lane ([`full_warp::all_on`]).
    all_on: FxHashSet<Value>,
    lines: Vec<Option<Span>>,
    span: Option<Span>,
    errors: Vec<Diagnostic>,
    next_label: u32,
    /// Bases of the globals, this block's shared variables and this gang's frame.
    globals_base: Reg,
    shared_base: Reg,
    frame_base: Reg,
    slot_offsets: Vec<u32>,
    /// Out-of-line calls ([`calls`]), the frame root being selected (None: the
    /// entry; else a recursive function's body), each lane's save-area offset and the
    /// highest frame base of an activation.
    calls: calls::Calls,
    root: Option<FuncRef>,
    lane_offset: Reg,
    stack_limit: Option<Reg>,
    /// The `alloca` area, when the module allocates on the stack (set by the prologue).
    alloca: Option<AllocaArea>,
    /// The hidden parameters' indices (as [`HIDDEN_PARAMS`]).
    hidden: Vec<u16>,
    /// Uniform-datapath candidates ([`super::uniform`]).
    uni: super::uniform::Marks,
}

fn imm(x: u64) -> Src {
    Src::Imm(x)
}

fn rs(r: Reg) -> Src {
    Src::Reg(r)
}

/// The low 32-bit half of a pair.
fn lo(r: Reg) -> Reg {
    r
}

fn hi(r: Reg) -> Reg {
    Reg::r(r.idx + 1)
}

fn wide(s: Scalar) -> bool {
    matches!(s, Scalar::I64 | Scalar::F64 | Scalar::Ptr)
}

fn uty(s: Scalar) -> T {
    if wide(s) {
        T::U64
    } else {
        T::U32
    }
}

fn sty(s: Scalar) -> T {
    if wide(s) {
        T::S64
    } else {
        T::S32
    }
}

fn bty(s: Scalar) -> T {
    if wide(s) {
        T::B64
    } else {
        T::B32
    }
}

fn fty(s: Scalar) -> T {
    if s == Scalar::F64 {
        T::F64
    } else {
        T::F32
    }
}

/// The memory type of a load or store of `s` (bools are bytes).
fn mem_ty(s: Scalar) -> T {
    match s {
        Scalar::Bool => T::U8,
        Scalar::I8 => T::S8,
        // binary16 travels as its 16 bits, like an `i16`.
        Scalar::I16 | Scalar::F16 => T::S16,
        Scalar::I32 => T::B32,
        Scalar::F32 => T::F32,
        Scalar::I64 | Scalar::Ptr => T::B64,
        Scalar::F64 => T::F64,
    }
}

impl<'a> Isel<'a> {
    fn new(ctx: &'a ModuleCtx<'a>, fref: FuncRef, specialize: bool) -> Self {
        let f = &ctx.module.functions[fref];
        let mut b = KernelBuilder::new(&f.name, KernelKind::Entry);
        let globals_base = b.reg64();
        let shared_base = b.reg64();
        let frame_base = b.reg64();
        let (slot_offsets, _) = layout(f.stack_slots.values().map(|s| (s.size, s.align)));
        Isel {
            ctx,
            f,
            fref,
            b,
            locs: FxHashMap::default(),
            labels: FxHashMap::default(),
            next_block: None,
            cur_block: None,
            shfl_shared: FxHashMap::default(),
            halo: shuffle::HaloState::default(),
            instance: 0,
            instances: 0,
            inline_stack: Vec::new(),
            ret: None,
            frame_end: 0,
            entry_mask: None,
            traps: Vec::new(),
            ntid: [Reg::r(0); 3],
            exists: Reg::p(0),
            specialize,
            full_warp: false,
            full_instance: None,
            all_on: Default::default(),
            lines: Vec::new(),
            span: None,
            errors: Vec::new(),
            next_label: 0,
            globals_base,
            shared_base,
            frame_base,
            slot_offsets,
            uni: super::uniform::Marks::new(ctx.uniformity),
            hidden: Vec::new(),
            calls: calls::Calls::default(),
            root: None,
            lane_offset: Reg::r(0),
            stack_limit: None,
            alloca: None,
        }
    }

    fn unsupported(&mut self, what: &str) {
        let mut d = Diagnostic::error(
            codes::INTERNAL_ERROR,
            format!(
                "dac-gpu back end: {what} is not supported yet (in `{}`)",
                self.f.name
            ),
        );
        if let Some(s) = self.span {
            d = d.with_primary(s, "");
        }
        self.errors.push(d);
    }

    // ---- emission helpers ------------------------------------------------------

    fn emit(&mut self, inst: Inst) {
        let i = self.b.push(inst);
        self.uni.note(i);
        self.lines.push(self.span);
    }

    fn op(&mut self, op: Op) {
        self.emit(Inst::new(op));
    }

    /// Emits `op`, a vector instruction whose result is nonetheless the same in every
    /// lane by construction (the last step of a butterfly reduction): the uniform
    /// datapath may take its destination as uniform, not compute it once.
    fn emit_uniform_result(&mut self, op: Op) {
        let i = self.b.push(Inst::new(op));
        self.uni.uniform_result(i);
        self.lines.push(self.span);
    }

    fn guarded(&mut self, p: Reg, op: Op) {
        self.emit(Inst::guarded(p.idx, false, op));
    }

    fn bra(&mut self, guard: Option<Guard>, target: LabelId) {
        self.b.bra(guard, true, target);
        self.lines.push(self.span);
    }

    fn new_label(&mut self) -> LabelId {
        self.next_label += 1;
        self.b.label(&format!("$L{}", self.next_label))
    }

    fn bin(&mut self, op: BinOp, ty: T, dst: Reg, a: Src, b: Src) {
        self.op(Op::Bin { op, ty, dst, a, b });
    }

    fn un(&mut self, op: UnOp, ty: T, dst: Reg, a: Src) {
        self.op(Op::Un { op, ty, dst, a });
    }

    fn mov(&mut self, ty: T, dst: Reg, a: Src) {
        self.un(UnOp::Mov, ty, dst, a);
    }

    fn cvt(&mut self, rnd: Option<Round>, dty: T, sty: T, dst: Reg, a: Src) {
        self.op(Op::Cvt {
            rnd,
            dty,
            sty,
            dst,
            a,
        });
    }

    fn setp(&mut self, cmp: Cmp, ty: T, dst: Reg, a: Src, b: Src) {
        self.op(Op::Setp { cmp, ty, dst, a, b });
    }

    fn selp(&mut self, ty: T, dst: Reg, a: Src, b: Src, p: Reg) {
        self.op(Op::Selp { ty, dst, a, b, p });
    }

    fn tmp(&mut self) -> Reg {
        self.b.reg()
    }

    fn tmp64(&mut self) -> Reg {
        self.b.reg64()
    }

    fn ptmp(&mut self) -> Reg {
        self.b.pred()
    }

    /// A fresh location for a value of scalar `s`.
    fn fresh(&mut self, s: Scalar) -> Loc {
        match s {
            Scalar::Bool => Loc::P(self.b.pred()),
            s if wide(s) => Loc::D(self.tmp64()),
            _ => Loc::R(self.b.reg()),
        }
    }

    fn loc(&mut self, v: Value) -> Loc {
        if let Some(&l) = self.locs.get(&(self.instance, v)) {
            return l;
        }
        let l = self.fresh(self.f.value_type(v).scalar);
        self.locs.insert((self.instance, v), l);
        l
    }

    fn reg(&mut self, v: Value) -> Reg {
        self.loc(v).reg()
    }

    fn scalar(&self, v: Value) -> Scalar {
        self.f.value_type(v).scalar
    }

    /// Re-extends an 8/16-bit result held in `r`.
    fn norm(&mut self, s: Scalar, r: Reg) {
        match s {
            Scalar::I8 => self.cvt(None, T::S32, T::S8, r, rs(r)),
            Scalar::I16 => self.cvt(None, T::S32, T::S16, r, rs(r)),
            _ => {}
        }
    }

    /// `r` zero-extended (a temporary for 8/16-bit values, `r` otherwise).
    fn zext_small(&mut self, s: Scalar, r: Reg) -> Reg {
        let m = match s {
            Scalar::I8 => 0xff,
            Scalar::I16 => 0xffff,
            _ => return r,
        };
        let t = self.tmp();
        self.bin(BinOp::And, T::B32, t, rs(r), imm(m));
        t
    }

    /// A predicate as a 0/1 word.
    fn pred_to_word(&mut self, p: Reg) -> Reg {
        let t = self.tmp();
        self.selp(T::B32, t, imm(1), imm(0), p);
        t
    }

    /// A predicate holding the constant `v`.
    fn const_pred(&mut self, dst: Reg, v: bool) {
        self.setp(Cmp::Eq, T::U32, dst, imm(0), imm(u64::from(!v)));
    }

    // ---- the function ----------------------------------------------------------

    fn run(mut self) -> Result<Selected, Vec<Diagnostic>> {
        let f = self.f;
        let Some(entry) = f.entry_block() else {
            self.unsupported("an entry without a body");
            return Err(self.errors);
        };
        let (_, frame) = layout(f.stack_slots.values().map(|s| (s.size, s.align)));
        self.frame_end = frame;
        // The prologue's parameter loads and block/gang arithmetic are uniform.
        self.uni.set(true);
        let patch = self.prologue(entry);
        self.uni.set(false);
        self.uni.force(patch);
        let split = self.specialize.then(|| self.split_body(entry));
        if split.is_none() {
            self.body();
        }
        let frame = self.frame_end.div_ceil(8) * 8;
        self.emit_out_of_line();
        // A label bound past the last instruction needs an instruction to point at.
        self.op(Op::Exit);
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        let lines = self.lines;
        let uni = self.uni;
        let self_traps = self.traps;
        let alloca = self.alloca;
        self.b.set_shared_bytes(self.ctx.resident_size);
        let mut kernel = self.b.finish().map_err(|e| {
            vec![Diagnostic::error(
                codes::INTERNAL_ERROR,
                format!("dac-gpu back end: {e}"),
            )]
        })?;
        let mut frame = self.calls.finish(&mut kernel, frame);
        if let Some(area) = alloca {
            if let Op::Bin { b, .. } = &mut kernel.insts[area.patch].op {
                *b = imm(u64::from(frame));
            }
            frame += ALLOCA_BYTES + 64;
        }
        if let Op::Mad { b, .. } = &mut kernel.insts[patch].op {
            *b = imm(u64::from(frame));
        }
        super::uniform::mark(&mut kernel, &uni);
        let pays = split.is_some_and(|s| s.pays(&kernel));
        Ok((kernel, lines, frame, self_traps, pays))
    }

    /// The reachable blocks of the current function (instance), in layout order
    /// (the others, left as `trap unreachable` by the passes, would only stand
    /// between a block and the one it falls through to).
    fn body(&mut self) {
        let f = self.f;
        let blocks = reachable_in_layout(f);
        for &blk in &blocks {
            let l = self
                .b
                .label(&format!("$B{}_{}", self.instance, blk.as_u32()));
            self.labels.insert((self.instance, blk), l);
        }
        let outer_next = self.next_block;
        for (k, &blk) in blocks.iter().enumerate() {
            let l = self.labels[&(self.instance, blk)];
            self.b.bind(l);
            for &inst in &f.blocks[blk].insts {
                // (An inlined call's body in between selects its own blocks.)
                self.next_block = blocks.get(k + 1).copied();
                self.cur_block = Some(blk);
                self.release_held(inst);
                self.span = Some(f.spans[inst]);
                self.uni.enter(f, inst);
                self.inst(inst);
            }
        }
        self.next_block = outer_next;
    }

    /// A call, inlined: the callee's blocks are selected in a new instance whose
    /// entry parameters are the arguments (and the caller's mask), whose stack slots
    /// follow the frame so far, and whose `return`s assign the result and branch to
    /// the continuation. Recursive functions are not inlined ([`calls`]).
    fn inline_call(
        &mut self,
        func: crate::ir::FuncRef,
        args: &[Value],
        mask: Option<Value>,
        result: Option<Value>,
    ) {
        if self.inline_stack.contains(&func) || self.inline_stack.len() >= 16 {
            self.unsupported("a recursive call");
            return;
        }
        let callee: &'a Function = &self.ctx.module.functions[func];
        let Some(entry) = callee.entry_block() else {
            self.unsupported("a call of a function without a body");
            return;
        };
        let mut from: Vec<Loc> = args.iter().map(|&a| self.loc(a)).collect();
        if callee.sig.takes_mask {
            match mask {
                Some(m) => from.push(self.loc(m)),
                None => from.push(Loc::P(self.exists)),
            }
        }
        let res = result.map(|r| self.loc(r));
        let callee_on = self.full_warp.then(|| {
            let mut on: Vec<bool> = args.iter().map(|a| self.all_on.contains(a)).collect();
            if callee.sig.takes_mask {
                on.push(mask.is_none_or(|m| self.all_on.contains(&m)));
            }
            full_warp::all_on(callee, &on)
        });
        let saved_on = std::mem::replace(&mut self.all_on, callee_on.unwrap_or_default());
        let cont = self.new_label();
        let (slot_offsets, size) = layout(callee.stack_slots.values().map(|s| (s.size, s.align)));
        let base = self.frame_end.div_ceil(64) * 64;
        self.frame_end = base + size;
        let saved = (
            self.f,
            self.fref,
            self.instance,
            std::mem::replace(
                &mut self.slot_offsets,
                slot_offsets.iter().map(|o| o + base).collect(),
            ),
            self.ret.take(),
            self.span,
        );
        self.instances += 1;
        self.instance = self.instances;
        self.f = callee;
        self.fref = func;
        self.inline_stack.push(func);
        self.ret = Some((res, cont));
        let params: Vec<Value> = callee.blocks[entry].params.to_vec();
        for (&p, l) in params.iter().zip(from) {
            let to = self.loc(p);
            self.copy(to, l);
        }
        // The callee's `alloca`s are freed when it returns: the top goes back.
        let alloca_mark = self.save_alloca_top(callee);
        self.body();
        self.inline_stack.pop();
        (
            self.f,
            self.fref,
            self.instance,
            self.slot_offsets,
            self.ret,
            self.span,
        ) = saved;
        self.all_on = saved_on;
        self.b.bind(cont);
        self.restore_alloca_top(alloca_mark);
    }

    /// Loads the parameters and computes the three memory bases; returns the index of
    /// the instruction whose immediate is the frame size (patched at the end).
    fn prologue(&mut self, entry: Block) -> usize {
        let f = self.f;
        let mut params: Vec<Value> = f.blocks[entry].params.to_vec();
        if f.sig.takes_mask {
            // A launched entry runs with every existing lane on; lanes that do not
            // exist are threads the simulator never activates.
            if let Some(m) = params.pop() {
                let p = self.reg(m);
                self.entry_mask = Some(p);
            }
        }
        let mut idx = Vec::new();
        for (i, &v) in params.iter().enumerate() {
            let s = self.scalar(v);
            let ty = match s {
                Scalar::Bool => T::U8,
                s => mem_ty(s),
            };
            idx.push((self.b.param(&format!("p{i}"), ty), v, ty));
        }
        let hidden: Vec<u16> = HIDDEN_PARAMS
            .iter()
            .map(|n| self.b.param(n, T::U64))
            .collect();
        for (pi, v, ty) in idx {
            let addr = Address {
                base: AddrBase::Param(pi),
                offset: 0,
            };
            match self.loc(v) {
                Loc::P(p) => {
                    let t = self.tmp();
                    self.op(Op::Ld {
                        space: sim::gpu::Space::Param,
                        ty,
                        dst: t,
                        addr,
                    });
                    self.setp(Cmp::Ne, T::U32, p, rs(t), imm(0));
                }
                l => self.op(Op::Ld {
                    space: sim::gpu::Space::Param,
                    ty,
                    dst: l.reg(),
                    addr,
                }),
            }
        }
        // The block's real extents: the launch is a one-dimensional block rounded up
        // to whole warps, so lanes past the block (which the interpreter computes but
        // never lets have effects) run too, under `exists` = linear id < threads.
        self.hidden = hidden.clone();
        for (d, &pi) in hidden[3..6].iter().enumerate() {
            let r = self.tmp();
            self.op(Op::Ld {
                space: sim::gpu::Space::Param,
                ty: T::U32,
                dst: r,
                addr: Address {
                    base: AddrBase::Param(pi),
                    offset: 0,
                },
            });
            self.ntid[d] = r;
        }
        let total = self.tmp();
        self.bin(
            BinOp::Mul,
            T::U32,
            total,
            rs(self.ntid[0]),
            rs(self.ntid[1]),
        );
        self.bin(BinOp::Mul, T::U32, total, rs(total), rs(self.ntid[2]));
        self.exists = self.ptmp();
        self.setp(
            Cmp::Lt,
            T::U32,
            self.exists,
            Src::Special(Special::Tid(sim::gpu::Dim::X)),
            rs(total),
        );
        if let Some(m) = self.entry_mask {
            self.bin(BinOp::And, T::Pred, m, rs(self.exists), rs(self.exists));
        }
        let bases = [self.globals_base, self.shared_base, self.frame_base];
        let fallback = self.ctx.shared_size > 0;
        for (i, (&pi, dst)) in hidden.iter().zip(bases).enumerate() {
            if i == 1 && !fallback {
                continue; // no shared variable lives in the global fallback
            }
            self.op(Op::Ld {
                space: sim::gpu::Space::Param,
                ty: T::U64,
                dst,
                addr: Address {
                    base: AddrBase::Param(pi),
                    offset: 0,
                },
            });
        }
        // Linear block index: ctaid.x + nctaid.x * (ctaid.y + nctaid.y * ctaid.z).
        let blk = self.tmp();
        let t = self.tmp();
        use sim::gpu::Dim;
        self.mov(T::U32, t, Src::Special(Special::Ctaid(Dim::Z)));
        self.op(Op::Mad {
            ty: T::U32,
            dst: blk,
            a: Src::Special(Special::Nctaid(Dim::Y)),
            b: rs(t),
            c: Src::Special(Special::Ctaid(Dim::Y)),
        });
        self.op(Op::Mad {
            ty: T::U32,
            dst: blk,
            a: Src::Special(Special::Nctaid(Dim::X)),
            b: rs(blk),
            c: Src::Special(Special::Ctaid(Dim::X)),
        });
        let wide_blk = self.tmp64();
        self.cvt(None, T::U64, T::U32, wide_blk, rs(blk));
        let shared_size = u64::from(self.ctx.shared_size);
        if fallback {
            self.op(Op::Mad {
                ty: T::U64,
                dst: self.shared_base,
                a: rs(wide_blk),
                b: imm(shared_size),
                c: rs(self.shared_base),
            });
        }
        // Gang slot: block * gangs per block + warp.
        let n = self.tmp();
        self.mov(T::U32, n, Src::Special(Special::Ntid(Dim::X)));
        self.bin(
            BinOp::Mul,
            T::U32,
            n,
            rs(n),
            Src::Special(Special::Ntid(Dim::Y)),
        );
        self.bin(
            BinOp::Mul,
            T::U32,
            n,
            rs(n),
            Src::Special(Special::Ntid(Dim::Z)),
        );
        self.bin(BinOp::Add, T::U32, n, rs(n), imm(31));
        self.bin(BinOp::Shr, T::U32, n, rs(n), imm(5));
        self.op(Op::Mad {
            ty: T::U32,
            dst: n,
            a: rs(n),
            b: rs(blk),
            c: Src::Special(Special::WarpId),
        });
        let wide_gang = self.tmp64();
        self.cvt(None, T::U64, T::U32, wide_gang, rs(n));
        let patch = self.b.push(Inst::new(Op::Mad {
            ty: T::U64,
            dst: self.frame_base,
            a: rs(wide_gang),
            b: imm(0),
            c: rs(self.frame_base),
        }));
        self.lines.push(self.span);
        self.recursion_prologue();
        self.alloca_prologue();
        patch
    }

    /// In the prologue, when some function of the module calls `alloca`: the
    /// [`AllocaArea`]'s top (64-byte aligned) and end.
    fn alloca_prologue(&mut self) {
        if !self.ctx.module.functions.values().any(allocates) {
            return;
        }
        let (top, end) = (self.b.reg64(), self.b.reg64());
        let patch = self.lines.len();
        self.bin(BinOp::Add, T::U64, top, rs(self.frame_base), imm(0));
        self.bin(BinOp::Add, T::U64, top, rs(top), imm(63));
        self.bin(BinOp::And, T::B64, top, rs(top), imm(!63));
        self.bin(
            BinOp::Add,
            T::U64,
            end,
            rs(top),
            imm(u64::from(ALLOCA_BYTES)),
        );
        self.alloca = Some(AllocaArea { top, end, patch });
    }

    /// Keeps the `alloca` top at the start of an instance of `f` that allocates
    /// ([`AllocaMark`]); `None` when `f` does not.
    fn save_alloca_top(&mut self, f: &Function) -> Option<AllocaMark> {
        let area = self.alloca.filter(|_| allocates(f))?;
        if self.root.is_none() {
            let mark = self.tmp64();
            self.mov(T::B64, mark, rs(area.top));
            return Some(AllocaMark::Reg(mark));
        }
        let off = self.frame_end.div_ceil(8) * 8;
        self.frame_end = off + 8;
        self.op(Op::St {
            space: Space::Global,
            ty: T::B64,
            addr: self.frame_address(off),
            a: rs(area.top),
        });
        Some(AllocaMark::Frame(off))
    }

    /// Puts the `alloca` top back as [`Self::save_alloca_top`] kept it, which frees
    /// the instance's allocations.
    fn restore_alloca_top(&mut self, mark: Option<AllocaMark>) {
        let (Some(area), Some(mark)) = (self.alloca, mark) else {
            return;
        };
        match mark {
            AllocaMark::Reg(r) => self.mov(T::B64, area.top, rs(r)),
            AllocaMark::Frame(off) => {
                let addr = self.frame_address(off);
                self.op(Op::Ld {
                    space: Space::Global,
                    ty: T::B64,
                    dst: area.top,
                    addr,
                });
            }
        }
    }

    fn frame_address(&self, off: u32) -> Address {
        Address {
            base: AddrBase::RegPair(self.frame_base),
            offset: off as i32,
        }
    }

    /// `stack_alloc size`: a trap when the size exceeds the room left in the
    /// [`AllocaArea`], else the top, which moves up by the size rounded to 64 bytes.
    fn stack_alloc(&mut self, size: Value, result: Option<Value>) {
        let Some(area) = self.alloca else {
            self.unsupported("a `stack_alloc` without an `alloca` area");
            return;
        };
        let n = self.tmp64();
        match self.loc(size) {
            Loc::R(r) => self.cvt(None, T::U64, T::U32, n, rs(r)),
            Loc::D(r) => self.mov(T::B64, n, rs(r)),
            Loc::P(_) => {
                self.unsupported("a `stack_alloc` of a `bool` size");
                return;
            }
        }
        let room = self.tmp64();
        self.bin(BinOp::Sub, T::U64, room, rs(area.end), rs(area.top));
        let p = self.ptmp();
        self.setp(Cmp::Gt, T::U64, p, rs(n), rs(room));
        let fits = self.new_label();
        self.bra(
            Some(Guard {
                pred: p.idx,
                negate: true,
            }),
            fits,
        );
        self.trap(crate::ir::TrapCode::StackExhausted.message());
        self.b.bind(fits);
        let d = match result {
            Some(r) => self.reg(r),
            None => self.tmp64(),
        };
        self.mov(T::B64, d, rs(area.top));
        // The room is a multiple of 64, so the rounded size fits too.
        self.bin(BinOp::Add, T::U64, n, rs(n), imm(63));
        self.bin(BinOp::And, T::B64, n, rs(n), imm(!63));
        self.bin(BinOp::Add, T::U64, area.top, rs(area.top), rs(n));
    }

    fn block_label(&self, b: Block) -> LabelId {
        self.labels[&(self.instance, b)]
    }

    /// Assigns a branch's arguments to its target's parameters (through temporaries,
    /// so a parameter read by another argument is not overwritten first).
    fn copies(&mut self, call: &BlockCall) {
        let params: Vec<Value> = self.f.blocks[call.block].params.to_vec();
        let mut staged = Vec::new();
        for (&arg, &param) in call.args.iter().zip(&params) {
            let u = self.uni.value_uniform(self.f, param);
            self.uni.set(u);
            let from = self.loc(arg);
            let t = self.fresh(self.scalar(arg));
            self.copy(t, from);
            staged.push((param, t));
        }
        for (param, t) in staged {
            let u = self.uni.value_uniform(self.f, param);
            self.uni.set(u);
            let to = self.loc(param);
            self.copy(to, t);
        }
        self.uni.set(false);
    }

    fn copy(&mut self, to: Loc, from: Loc) {
        match (to, from) {
            (Loc::P(d), Loc::P(s)) => self.bin(BinOp::And, T::Pred, d.to_owned(), rs(s), rs(s)),
            (Loc::D(d), Loc::D(s)) => self.mov(T::B64, d, rs(s)),
            (Loc::R(d), Loc::R(s)) => self.mov(T::B32, d, rs(s)),
            _ => self.unsupported("a block argument of another type than its parameter"),
        }
    }

    fn jump(&mut self, call: &BlockCall) {
        self.copies(call);
        let l = self.block_label(call.block);
        self.bra(None, l);
    }

    /// [`Self::jump`] as the last instruction of the block: none when the target is
    /// the next block (control falls through).
    fn jump_last(&mut self, call: &BlockCall) {
        if self.next_block == Some(call.block) {
            self.copies(call);
        } else {
            self.jump(call);
        }
    }

    /// A branch to `target` taken where predicate `p` holds (`negate`: where it does
    /// not).
    fn bra_if(&mut self, p: Reg, negate: bool, target: LabelId) {
        self.bra(
            Some(Guard {
                pred: p.idx,
                negate,
            }),
            target,
        );
    }

    fn inst(&mut self, inst: crate::ir::Inst) {
        if self.dac_dead(inst) {
            return;
        }
        let f = self.f;
        let data = &f.insts[inst];
        let result = f.inst_result(inst);
        match data {
            InstData::Iconst { ty, bits } => {
                let d = self.loc(result.expect("iconst has a result"));
                self.iconst(d, ty.scalar, *bits);
            }
            InstData::Fconst { ty, bits } => {
                let d = self.reg(result.expect("fconst has a result"));
                if ty.scalar == Scalar::F32 {
                    let v = f64::from_bits(*bits) as f32;
                    self.mov(T::B32, d, imm(u64::from(v.to_bits())));
                } else {
                    self.mov(T::B64, d, imm(*bits));
                }
            }
            InstData::Unary { op, arg } => self.unary(*op, *arg, result.expect("result")),
            InstData::Binary { op, args } => self.binary(*op, *args, result.expect("result")),
            InstData::Icmp { .. } if self.dac_decoupled(inst) => {
                self.dac_compare(result.expect("result"))
            }
            InstData::Icmp { cond, args } => self.icmp(*cond, *args, result.expect("result")),
            InstData::Fcmp { cond, args } => self.fcmp(*cond, *args, result.expect("result")),
            InstData::Select { args } => self.select(*args, result.expect("result")),
            InstData::Convert { op, arg, to } => {
                self.convert(*op, *arg, *to, result.expect("result"))
            }
            InstData::Splat { arg } => {
                let from = self.loc(*arg);
                let to = self.loc(result.expect("result"));
                self.copy(to, from);
            }
            InstData::Special { reg } => self.special(*reg, result.expect("result")),
            InstData::Lane { op, args } => self.lane(*op, args, result),
            InstData::StackAlloc { size } => self.stack_alloc(*size, result),
            InstData::StackAddr { slot } => {
                let off = self.slot_offsets[slot.index()];
                let d = self.reg(result.expect("result"));
                let base = self.frame_base;
                self.bin(BinOp::Add, T::U64, d, rs(base), imm(u64::from(off)));
            }
            InstData::GlobalAddr { global } => {
                let off = self.ctx.global_offsets[global.index()];
                let d = self.reg(result.expect("result"));
                let base = self.globals_base;
                self.bin(BinOp::Add, T::U64, d, rs(base), imm(u64::from(off)));
            }
            InstData::SharedAddr { shared } => {
                let d = self.reg(result.expect("result"));
                if let Some(&off) = self.ctx.resident_offsets.get(shared) {
                    self.mov(T::B64, d, imm(SHARED_WINDOW + u64::from(off)));
                } else {
                    let off = self.ctx.shared_offsets[shared.index()];
                    let base = self.shared_base;
                    self.bin(BinOp::Add, T::U64, d, rs(base), imm(u64::from(off)));
                }
            }
            InstData::Load { ty, mask, .. } if self.dac_decoupled(inst) => {
                self.dac_load(inst, ty.scalar, *mask, result.expect("result"))
            }
            InstData::Store { value, mask, .. } if self.dac_decoupled(inst) => {
                self.dac_store(inst, *value, *mask)
            }
            InstData::Load { .. } if self.hold_for_halo(inst) => {}
            InstData::Load { ty, addr, mask, .. } => {
                let sp = self.space_of(inst);
                let res = result.expect("result");
                if !self.shuffled_load(inst, sp, ty.scalar, *addr, *mask, res) {
                    self.load(sp, ty.scalar, *addr, *mask, res)
                }
                self.load_selected(inst);
            }
            InstData::Store {
                addr, value, mask, ..
            } => {
                let sp = self.space_of(inst);
                self.store(sp, *addr, *value, *mask)
            }
            InstData::AtomicRmw {
                op,
                addr,
                value,
                mask,
                ..
            } => {
                let sp = self.space_of(inst);
                self.atomic(sp, Some(*op), *addr, None, *value, *mask, result)
            }
            InstData::AtomicCas {
                addr,
                expected,
                replacement,
                mask,
                ..
            } => {
                let sp = self.space_of(inst);
                self.atomic(
                    sp,
                    None,
                    *addr,
                    Some(*expected),
                    *replacement,
                    *mask,
                    result,
                )
            }
            InstData::Barrier => self.op(Op::Bar { id: 0 }),
            InstData::Call { func, args, mask } => self.call(inst, *func, args, *mask, result),
            InstData::Print { .. } => self.unsupported("print"),
            InstData::Trap { code } => {
                // An access to address 0 faults; the run reports it at this line.
                self.trap(code.message());
            }
            InstData::Jump { dest } => {
                self.dac_drain(inst, Some(dest.block));
                self.jump_last(dest)
            }
            InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                let p = self.reg(*cond);
                // An edge with no block arguments and nothing to drain is a bare branch.
                let plain = |this: &Self, d: &BlockCall| {
                    d.args.is_empty() && !this.dac_has_drains(inst, Some(d.block))
                };
                let (then_plain, else_plain) = (plain(self, then_dest), plain(self, else_dest));
                if then_plain && (self.next_block == Some(else_dest.block) || !else_plain) {
                    // `if (p) goto then;`, then the else edge (falling through when
                    // its block follows).
                    let l = self.block_label(then_dest.block);
                    self.bra_if(p, false, l);
                    self.dac_drain(inst, Some(else_dest.block));
                    self.jump_last(else_dest);
                } else if else_plain {
                    let l = self.block_label(else_dest.block);
                    self.bra_if(p, true, l);
                    self.dac_drain(inst, Some(then_dest.block));
                    self.jump_last(then_dest);
                } else {
                    let other = self.new_label();
                    self.bra_if(p, true, other);
                    self.dac_drain(inst, Some(then_dest.block));
                    self.jump(then_dest);
                    self.b.bind(other);
                    self.dac_drain(inst, Some(else_dest.block));
                    self.jump_last(else_dest);
                }
            }
            InstData::Return { value } => match self.ret {
                Some((res, cont)) => {
                    if let (Some(v), Some(to)) = (value, res) {
                        let from = self.loc(*v);
                        self.copy(to, from);
                    }
                    self.bra(None, cont);
                }
                None => match self.root {
                    Some(func) => self.return_out_of_line(func, *value),
                    None => {
                        if let Some(v) = value {
                            self.entry_return(*v);
                        }
                        self.dac_drain(inst, None);
                        self.op(Op::Exit);
                    }
                },
            },
        }
    }

    /// A trap: an access to address 0 faults, and the run reports `what` at this line.
    fn trap(&mut self, what: &'static str) {
        self.traps.push((self.lines.len(), what));
        let t = self.tmp();
        self.op(Op::Ld {
            space: sim::gpu::Space::Global,
            ty: T::U32,
            dst: t,
            addr: Address {
                base: AddrBase::None,
                offset: 0,
            },
        });
        self.op(Op::Exit);
    }

    fn iconst(&mut self, d: Loc, s: Scalar, bits: u64) {
        match d {
            Loc::P(p) => self.const_pred(p, bits & 1 != 0),
            Loc::D(r) => self.mov(T::B64, r, imm(bits)),
            Loc::R(r) => {
                let w = s.bits();
                let v = if w < 32 {
                    let sh = 64 - w;
                    (((bits << sh) as i64) >> sh) as u64
                } else {
                    bits
                };
                self.mov(T::B32, r, imm(v & 0xffff_ffff));
            }
        }
    }

    fn unary(&mut self, op: UnaryOp, arg: Value, res: Value) {
        let s = self.scalar(arg);
        let a = self.loc(arg);
        let d = self.loc(res);
        let (ar, dr) = (a.reg(), d.reg());
        match op {
            UnaryOp::Ineg => {
                self.un(UnOp::Neg, sty(s), dr, rs(ar));
                self.norm(s, dr);
            }
            UnaryOp::Bnot if s == Scalar::Bool => self.un(UnOp::Not, T::Pred, dr, rs(ar)),
            UnaryOp::Bnot => self.un(UnOp::Not, bty(s), dr, rs(ar)),
            UnaryOp::Fneg => self.un(UnOp::Neg, fty(s), dr, rs(ar)),
            UnaryOp::Fabs => self.un(UnOp::Abs, fty(s), dr, rs(ar)),
            UnaryOp::Sqrt => self.un(UnOp::Sqrt, fty(s), dr, rs(ar)),
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Nearest => {
                let r = match op {
                    UnaryOp::Floor => Round::Rmi,
                    UnaryOp::Ceil => Round::Rpi,
                    UnaryOp::Trunc => Round::Rzi,
                    _ => Round::Rni,
                };
                self.cvt(Some(r), fty(s), fty(s), dr, rs(ar));
            }
            UnaryOp::Popcnt => {
                let x = self.zext_small(s, ar);
                self.popc(s, dr, x);
            }
            UnaryOp::Clz => {
                let x = self.zext_small(s, ar);
                self.clz(s, dr, x);
                if s.bits() < 32 {
                    self.bin(
                        BinOp::Sub,
                        T::U32,
                        dr,
                        rs(dr),
                        imm(u64::from(32 - s.bits())),
                    );
                }
            }
            UnaryOp::Ctz => {
                // ctz(x) = popc((x & -x) - 1); a bit past the width bounds small types.
                let x = if s.bits() < 32 {
                    let t = self.tmp();
                    self.bin(BinOp::Or, T::B32, t, rs(ar), imm(1 << s.bits()));
                    t
                } else {
                    ar
                };
                let (neg, t) = if wide(s) {
                    (self.tmp64(), self.tmp64())
                } else {
                    (self.tmp(), self.tmp())
                };
                self.bin(BinOp::Sub, uty(s), neg, imm(0), rs(x));
                self.bin(BinOp::And, bty(s), t, rs(x), rs(neg));
                self.bin(BinOp::Sub, uty(s), t, rs(t), imm(1));
                self.popc(s, dr, t);
            }
        }
    }

    /// popc into `d` (a pair for 64-bit operands, upper half zero).
    fn popc(&mut self, s: Scalar, d: Reg, x: Reg) {
        if wide(s) {
            let t = self.tmp();
            self.un(UnOp::Popc, T::B32, t, rs(lo(x)));
            self.un(UnOp::Popc, T::B32, lo(d), rs(hi(x)));
            self.bin(BinOp::Add, T::U32, lo(d), rs(lo(d)), rs(t));
            self.mov(T::B32, hi(d), imm(0));
        } else {
            self.un(UnOp::Popc, T::B32, d, rs(x));
        }
    }

    fn clz(&mut self, s: Scalar, d: Reg, x: Reg) {
        if wide(s) {
            // clz(hi) if hi != 0, else 32 + clz(lo).
            let (a, b) = (self.tmp(), self.tmp());
            let p = self.ptmp();
            self.un(UnOp::Clz, T::B32, a, rs(hi(x)));
            self.un(UnOp::Clz, T::B32, b, rs(lo(x)));
            self.bin(BinOp::Add, T::U32, b, rs(b), imm(32));
            self.setp(Cmp::Ne, T::U32, p, rs(hi(x)), imm(0));
            self.selp(T::B32, lo(d), rs(a), rs(b), p);
            self.mov(T::B32, hi(d), imm(0));
        } else {
            self.un(UnOp::Clz, T::B32, d, rs(x));
        }
    }

    fn binary(&mut self, op: BinaryOp, args: [Value; 2], res: Value) {
        if op == BinaryOp::Band {
            // An all-on operand (full-warp version): the result is the other one.
            if self.on(args[0]) {
                return self.alias(res, args[1]);
            }
            if self.on(args[1]) {
                return self.alias(res, args[0]);
            }
        }
        let s = self.scalar(args[0]);
        let (a, b) = (self.reg(args[0]), self.reg(args[1]));
        let d = self.reg(res);
        use BinaryOp as B;
        match op {
            B::Iadd | B::Isub | B::Imul => {
                let o = match op {
                    B::Iadd => BinOp::Add,
                    B::Isub => BinOp::Sub,
                    _ => BinOp::Mul,
                };
                self.bin(o, uty(s), d, rs(a), rs(b));
                self.norm(s, d);
            }
            B::Sdiv | B::Srem => {
                let o = if op == B::Sdiv {
                    BinOp::Div
                } else {
                    BinOp::Rem
                };
                self.bin(o, sty(s), d, rs(a), rs(b));
                self.norm(s, d);
            }
            B::Udiv | B::Urem | B::Umin | B::Umax => {
                let o = match op {
                    B::Udiv => BinOp::Div,
                    B::Urem => BinOp::Rem,
                    B::Umin => BinOp::Min,
                    _ => BinOp::Max,
                };
                let (za, zb) = (self.zext_small(s, a), self.zext_small(s, b));
                self.bin(o, uty(s), d, rs(za), rs(zb));
                self.norm(s, d);
            }
            B::Smin | B::Smax => {
                let o = if op == B::Smin {
                    BinOp::Min
                } else {
                    BinOp::Max
                };
                self.bin(o, sty(s), d, rs(a), rs(b));
            }
            B::Band | B::Bor | B::Bxor => {
                let o = match op {
                    B::Band => BinOp::And,
                    B::Bor => BinOp::Or,
                    _ => BinOp::Xor,
                };
                let ty = if s == Scalar::Bool { T::Pred } else { bty(s) };
                self.bin(o, ty, d, rs(a), rs(b));
            }
            B::Ishl | B::Sshr | B::Ushr => {
                let count = self.tmp();
                self.bin(
                    BinOp::And,
                    T::B32,
                    count,
                    rs(lo(b)),
                    imm(u64::from(s.bits() - 1)),
                );
                match op {
                    B::Ishl => self.bin(BinOp::Shl, bty(s), d, rs(a), rs(count)),
                    B::Sshr => self.bin(BinOp::Shr, sty(s), d, rs(a), rs(count)),
                    _ => {
                        let za = self.zext_small(s, a);
                        self.bin(BinOp::Shr, uty(s), d, rs(za), rs(count));
                    }
                }
                self.norm(s, d);
            }
            B::Fadd | B::Fsub | B::Fmul | B::Fdiv | B::Fmin | B::Fmax => {
                let o = match op {
                    B::Fadd => BinOp::Add,
                    B::Fsub => BinOp::Sub,
                    B::Fmul => BinOp::Mul,
                    B::Fdiv => BinOp::Div,
                    B::Fmin => BinOp::Min,
                    _ => BinOp::Max,
                };
                self.bin(o, fty(s), d, rs(a), rs(b));
            }
            B::Frem => self.unsupported("frem"),
        }
    }

    fn icmp(&mut self, cond: IntCC, args: [Value; 2], res: Value) {
        let s = self.scalar(args[0]);
        let (a, b) = (self.reg(args[0]), self.reg(args[1]));
        let d = self.reg(res);
        if s == Scalar::Bool {
            match cond {
                IntCC::Eq => {
                    self.bin(BinOp::Xor, T::Pred, d, rs(a), rs(b));
                    self.un(UnOp::Not, T::Pred, d, rs(d));
                }
                IntCC::Ne => self.bin(BinOp::Xor, T::Pred, d, rs(a), rs(b)),
                _ => self.unsupported("an ordered comparison of bools"),
            }
            return;
        }
        let (cmp, signed) = match cond {
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
        if signed {
            self.setp(cmp, sty(s), d, rs(a), rs(b));
        } else {
            let (za, zb) = (self.zext_small(s, a), self.zext_small(s, b));
            self.setp(cmp, uty(s), d, rs(za), rs(zb));
        }
    }

    fn fcmp(&mut self, cond: FloatCC, args: [Value; 2], res: Value) {
        let s = self.scalar(args[0]);
        let (a, b) = (self.reg(args[0]), self.reg(args[1]));
        let d = self.reg(res);
        let cmp = match cond {
            FloatCC::Eq => Cmp::Eq,
            FloatCC::Une => Cmp::Neu,
            FloatCC::Lt => Cmp::Lt,
            FloatCC::Le => Cmp::Le,
            FloatCC::Gt => Cmp::Gt,
            FloatCC::Ge => Cmp::Ge,
            FloatCC::Uno => Cmp::Nan,
        };
        self.setp(cmp, fty(s), d, rs(a), rs(b));
    }

    fn select(&mut self, args: [Value; 3], res: Value) {
        if self.on(args[0]) {
            return self.alias(res, args[1]);
        }
        let mut c = self.reg(args[0]);
        if let Some(g) = self.uni.relative_mask(self.f, res, args[0]) {
            // Uniform among the lanes of `g` (see uniform.rs): any lane of `c & g`
            // decides for all of them, as a uniform predicate.
            let gp = self.reg(g);
            let t = self.ptmp();
            self.bin(BinOp::And, T::Pred, t, rs(c), rs(gp));
            let t = self.existing(t);
            let any = self.ptmp();
            self.op(Op::Vote {
                mode: VoteMode::Any,
                dst: any,
                p: t,
            });
            c = any;
        }
        let (a, b) = (self.loc(args[1]), self.loc(args[2]));
        let d = self.loc(res);
        match d {
            Loc::P(dp) => {
                let (t1, t2) = (self.ptmp(), self.ptmp());
                self.bin(BinOp::And, T::Pred, t1, rs(c), rs(a.reg()));
                self.un(UnOp::Not, T::Pred, t2, rs(c));
                self.bin(BinOp::And, T::Pred, t2, rs(t2), rs(b.reg()));
                self.bin(BinOp::Or, T::Pred, dp, rs(t1), rs(t2));
            }
            Loc::D(r) => self.selp(T::B64, r, rs(a.reg()), rs(b.reg()), c),
            Loc::R(r) => self.selp(T::B32, r, rs(a.reg()), rs(b.reg()), c),
        }
    }

    fn convert(&mut self, op: ConvOp, arg: Value, to: Type, res: Value) {
        let from = self.scalar(arg);
        let to = to.scalar;
        let a = self.reg(arg);
        let d = self.reg(res);
        match op {
            ConvOp::Sext | ConvOp::Zext if from == Scalar::Bool => {
                let one = if op == ConvOp::Sext { u64::MAX } else { 1 };
                if wide(to) {
                    self.selp(T::B64, d, imm(one), imm(0), a);
                } else {
                    self.selp(T::B32, d, imm(one & 0xffff_ffff), imm(0), a);
                    self.norm(to, d);
                }
            }
            ConvOp::Sext => {
                if wide(to) {
                    self.cvt(None, T::S64, T::S32, d, rs(a));
                } else {
                    self.mov(T::B32, d, rs(a));
                }
            }
            ConvOp::Zext => {
                let z = self.zext_small(from, a);
                if wide(to) {
                    self.cvt(None, T::U64, T::U32, d, rs(z));
                } else {
                    self.mov(T::B32, d, rs(z));
                    self.norm(to, d);
                }
            }
            ConvOp::Ireduce => {
                self.mov(T::B32, d, rs(lo(a)));
                self.norm(to, d);
            }
            ConvOp::FcvtToSint | ConvOp::FcvtToUint => {
                let signed = op == ConvOp::FcvtToSint;
                let dty = match (to, signed) {
                    (Scalar::I8, true) => T::S8,
                    (Scalar::I16, true) => T::S16,
                    (Scalar::I8, false) => T::U8,
                    (Scalar::I16, false) => T::U16,
                    (s, true) => sty(s),
                    (s, false) => uty(s),
                };
                self.cvt(Some(Round::Rzi), dty, fty(from), d, rs(a));
                if to.bits() < 32 {
                    let st = if to == Scalar::I8 { T::S8 } else { T::S16 };
                    self.cvt(None, T::S32, st, d, rs(d));
                }
            }
            ConvOp::FcvtFromSint => self.cvt(Some(Round::Rn), fty(to), sty(from), d, rs(a)),
            ConvOp::FcvtFromUint => {
                let z = self.zext_small(from, a);
                self.cvt(Some(Round::Rn), fty(to), uty(from), d, rs(z));
            }
            ConvOp::Fpromote => self.cvt(None, T::F64, T::F32, d, rs(a)),
            ConvOp::Fdemote => self.cvt(Some(Round::Rn), T::F32, T::F64, d, rs(a)),
            ConvOp::Bitcast => {
                if wide(to) != wide(from) {
                    self.unsupported("a bitcast between widths");
                } else {
                    self.mov(bty(to), d, rs(a));
                }
            }
            ConvOp::ToBool => {
                if from == Scalar::Bool {
                    self.bin(BinOp::And, T::Pred, d, rs(a), rs(a));
                } else if from.is_float() {
                    self.setp(Cmp::Neu, fty(from), d, rs(a), imm(0));
                } else {
                    self.setp(Cmp::Ne, uty(from), d, rs(a), imm(0));
                }
            }
        }
    }

    fn special(&mut self, reg: SpecialReg, res: Value) {
        use sim::gpu::Dim;
        use SpecialReg as S;
        let d = self.reg(res);
        let src = match reg {
            S::LaneIndex => Special::LaneId,
            S::LaneCount => {
                self.mov(T::U32, d, imm(32));
                return;
            }
            S::ThreadIdxX | S::ThreadIdxY | S::ThreadIdxZ => {
                self.thread_idx(reg, d);
                return;
            }
            S::BlockIdxX => Special::Ctaid(Dim::X),
            S::BlockIdxY => Special::Ctaid(Dim::Y),
            S::BlockIdxZ => Special::Ctaid(Dim::Z),
            S::BlockDimX | S::BlockDimY | S::BlockDimZ => {
                let i = match reg {
                    S::BlockDimX => 0,
                    S::BlockDimY => 1,
                    _ => 2,
                };
                let n = self.ntid[i];
                self.mov(T::U32, d, rs(n));
                return;
            }
            S::DynSharedBytes => {
                self.load_param(self.hidden[DYN_SHARED], T::U32, d);
                return;
            }
            S::GridDimX => Special::Nctaid(Dim::X),
            S::GridDimY => Special::Nctaid(Dim::Y),
            S::GridDimZ => Special::Nctaid(Dim::Z),
            S::GangIndex => Special::WarpId,
            S::Clock => {
                self.mov(T::B64, d, Src::Special(Special::Clock64));
                return;
            }
        };
        self.mov(T::U32, d, Src::Special(src));
    }

    /// A thread index component from the linear id (x fastest).
    fn thread_idx(&mut self, reg: SpecialReg, d: Reg) {
        let lin = Src::Special(Special::Tid(sim::gpu::Dim::X));
        let [nx, ny, _] = self.ntid;
        match reg {
            SpecialReg::ThreadIdxX => self.bin(BinOp::Rem, T::U32, d, lin, rs(nx)),
            SpecialReg::ThreadIdxY => {
                self.bin(BinOp::Div, T::U32, d, lin, rs(nx));
                self.bin(BinOp::Rem, T::U32, d, rs(d), rs(ny));
            }
            _ => {
                let t = self.tmp();
                self.bin(BinOp::Mul, T::U32, t, rs(nx), rs(ny));
                self.bin(BinOp::Div, T::U32, d, lin, rs(t));
            }
        }
        self.dac_thread_idx(reg, d);
    }

    /// Whether the code selected now is the entry function itself (either version of
    /// its body), not an inlined or out-of-line callee's.
    fn entry_instance(&self) -> bool {
        self.instance == 0 || Some(self.instance) == self.full_instance
    }

    /// `res` is a copy of `v`: it shares `v`'s location when it has none yet (no
    /// instruction), else it is a move. Sharing is safe in SSA: `v`'s location is
    /// written only where `v` is defined (or, for a block parameter, on the edges into
    /// its block), which dominates `res`'s definition, so a path from `res`'s
    /// definition that rewrites it defines `res` again before any use of `res`; and
    /// block-argument copies read every argument before writing a parameter.
    fn alias(&mut self, res: Value, v: Value) {
        let from = self.loc(v);
        match self.locs.entry((self.instance, res)) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(from);
            }
            std::collections::hash_map::Entry::Occupied(e) => {
                let to = *e.get();
                self.copy(to, from);
            }
        }
    }

    /// Whether bool value `v` is known true in every lane (full-warp version only).
    fn on(&self, v: Value) -> bool {
        self.full_warp && self.all_on.contains(&v)
    }

    /// `m` restricted to the existing lanes (`m` itself in the full-warp version).
    fn existing(&mut self, m: Reg) -> Reg {
        if self.full_warp {
            return m;
        }
        let p = self.ptmp();
        self.bin(BinOp::And, T::Pred, p, rs(m), rs(self.exists));
        p
    }

    // ---- cross-lane ------------------------------------------------------------

    /// `d = x` of lane `lane` (a location of `x`'s kind).
    fn bcast(&mut self, d: Loc, x: Loc, lane: Src) {
        let shfl = |me: &mut Self, dst: Reg, a: Reg| {
            me.op(Op::Shfl {
                mode: ShflMode::Idx,
                dst,
                dst_pred: None,
                a: rs(a),
                lane,
                clamp: imm(31),
            })
        };
        match (d, x) {
            (Loc::R(dr), Loc::R(xr)) => shfl(self, dr, xr),
            (Loc::D(dr), Loc::D(xr)) => {
                shfl(self, lo(dr), lo(xr));
                shfl(self, hi(dr), hi(xr));
            }
            (Loc::P(dp), Loc::P(xp)) => {
                let w = self.pred_to_word(xp);
                let t = self.tmp();
                shfl(self, t, w);
                self.setp(Cmp::Ne, T::U32, dp, rs(t), imm(0));
            }
            _ => self.unsupported("a broadcast between kinds"),
        }
    }

    fn ballot(&mut self, p: Reg) -> Reg {
        let t = self.tmp();
        self.op(Op::Vote {
            mode: VoteMode::Ballot,
            dst: t,
            p,
        });
        t
    }

    /// The lowest set bit's index of `b` (a 32-bit word), or 32 when `b` is 0.
    fn ctz32(&mut self, b: Reg) -> Reg {
        let (neg, t, d) = (self.tmp(), self.tmp(), self.tmp());
        self.bin(BinOp::Sub, T::U32, neg, imm(0), rs(b));
        self.bin(BinOp::And, T::B32, t, rs(b), rs(neg));
        self.bin(BinOp::Sub, T::U32, t, rs(t), imm(1));
        self.un(UnOp::Popc, T::B32, d, rs(t));
        d
    }

    fn lane(&mut self, op: LaneOp, args: &[Value], res: Option<Value>) {
        let res = match res {
            Some(r) => r,
            None => return,
        };
        let d = self.loc(res);
        match op {
            LaneOp::Any | LaneOp::All if self.on(args[0]) => self.const_pred(d.reg(), true),
            LaneOp::Any | LaneOp::All => {
                let m = self.reg(args[0]);
                // any: some existing lane on; all: every existing lane on.
                let m = if op == LaneOp::Any || self.full_warp {
                    self.existing(m)
                } else {
                    let p = self.ptmp();
                    self.un(UnOp::Not, T::Pred, p, rs(self.exists));
                    self.bin(BinOp::Or, T::Pred, p, rs(p), rs(m));
                    p
                };
                let mode = if op == LaneOp::Any {
                    VoteMode::Any
                } else {
                    VoteMode::All
                };
                self.op(Op::Vote {
                    mode,
                    dst: d.reg(),
                    p: m,
                });
            }
            LaneOp::Ballot => {
                let m = self.reg(args[0]);
                let m = self.existing(m);
                let b = self.ballot(m);
                let dr = d.reg();
                self.mov(T::B32, lo(dr), rs(b));
                self.mov(T::B32, hi(dr), imm(0));
            }
            LaneOp::FirstLane => {
                let m = self.reg(args[0]);
                let m = self.existing(m);
                let b = self.ballot(m);
                let c = self.ctz32(b);
                let p = self.ptmp();
                self.setp(Cmp::Eq, T::U32, p, rs(b), imm(0));
                self.selp(T::B32, d.reg(), imm(0xffff_ffff), rs(c), p);
            }
            LaneOp::Extract => {
                let x = self.loc(args[0]);
                let l = match self.constant(args[1]) {
                    Some(c) if c < 32 => imm(c),
                    _ => rs(self.reg(args[1])),
                };
                self.bcast(d, x, l);
            }
            LaneOp::Insert => {
                let x = self.loc(args[0]);
                let l = self.reg(args[1]);
                let v = self.loc(args[2]);
                self.copy(d, x);
                let p = self.ptmp();
                self.setp(Cmp::Eq, T::U32, p, Src::Special(Special::LaneId), rs(l));
                self.masked_copy(d, v, p);
            }
            // `shfl.idx` reads lane `b & 31`: the index modulo the warp, as `shuffle`
            // and `rotate` take it.
            LaneOp::Shuffle => {
                let x = self.loc(args[0]);
                let i = self.reg(args[1]);
                self.bcast(d, x, rs(i));
            }
            LaneOp::Shift if !matches!(d, Loc::P(_)) && self.constant(args[1]).is_some() => {
                let k = self.constant(args[1]).unwrap_or(0) as u32 as i32;
                let x = self.loc(args[0]);
                self.shift_by(d, x, k);
            }
            LaneOp::Rotate | LaneOp::Shift => {
                let x = self.loc(args[0]);
                let k = match self.constant(args[1]) {
                    Some(c) => imm(c & 0xffff_ffff),
                    None => rs(self.reg(args[1])),
                };
                let j = self.tmp();
                self.bin(BinOp::Add, T::U32, j, Src::Special(Special::LaneId), k);
                self.bcast(d, x, rs(j));
                if op == LaneOp::Shift {
                    let p = self.ptmp();
                    self.setp(Cmp::Ge, T::U32, p, rs(j), imm(32));
                    self.masked_zero(d, p);
                }
            }
            LaneOp::Shuffle2 => {
                let (x, y) = (self.loc(args[0]), self.loc(args[1]));
                let i = self.reg(args[2]);
                let (t, k) = (self.tmp(), self.tmp());
                self.bin(BinOp::And, T::B32, k, rs(i), imm(63));
                self.bin(BinOp::And, T::B32, t, rs(k), imm(31));
                let other = self.fresh(self.scalar(args[1]));
                self.bcast(d, x, rs(t));
                self.bcast(other, y, rs(t));
                let p = self.ptmp();
                self.setp(Cmp::Ge, T::U32, p, rs(k), imm(32));
                self.masked_copy(d, other, p);
            }
            LaneOp::ReduceAdd
            | LaneOp::ReduceMin
            | LaneOp::ReduceMax
            | LaneOp::ReduceAnd
            | LaneOp::ReduceOr => self.reduce(op, args, d),
            LaneOp::ScanAdd | LaneOp::ScanAnd | LaneOp::ScanOr => self.scan(op, args, d),
            LaneOp::ReduceEqual => self.reduce_equal(args, d),
        }
    }

    /// `shift x, k` for a constant `k`: lane `i` reads lane `i + k` with `shfl.down`
    /// (`shfl.up` for `k < 0`), whose validity predicate is false exactly where that
    /// lane is outside the warp; those lanes get 0.
    fn shift_by(&mut self, d: Loc, x: Loc, k: i32) {
        if k == 0 {
            self.copy(d, x);
            return;
        }
        if k.unsigned_abs() >= 32 {
            let ty = if matches!(d, Loc::D(_)) {
                T::B64
            } else {
                T::B32
            };
            self.mov(ty, d.reg(), imm(0));
            return;
        }
        let (mode, clamp) = if k > 0 {
            (ShflMode::Down, 31)
        } else {
            (ShflMode::Up, 0)
        };
        let p = self.ptmp();
        self.shfl_loc(
            mode,
            d,
            Some(p),
            x,
            imm(u64::from(k.unsigned_abs())),
            imm(clamp),
        );
        let ty = if matches!(d, Loc::D(_)) {
            T::B64
        } else {
            T::B32
        };
        self.emit(Inst::guarded(
            p.idx,
            true,
            Op::Un {
                op: UnOp::Mov,
                ty,
                dst: d.reg(),
                a: imm(0),
            },
        ));
    }

    /// `@p d = v`.
    fn masked_copy(&mut self, d: Loc, v: Loc, p: Reg) {
        match (d, v) {
            (Loc::R(dr), Loc::R(vr)) => self.guarded(
                p,
                Op::Un {
                    op: UnOp::Mov,
                    ty: T::B32,
                    dst: dr,
                    a: rs(vr),
                },
            ),
            (Loc::D(dr), Loc::D(vr)) => self.guarded(
                p,
                Op::Un {
                    op: UnOp::Mov,
                    ty: T::B64,
                    dst: dr,
                    a: rs(vr),
                },
            ),
            (Loc::P(dp), Loc::P(vp)) => self.guarded(
                p,
                Op::Bin {
                    op: BinOp::And,
                    ty: T::Pred,
                    dst: dp,
                    a: rs(vp),
                    b: rs(vp),
                },
            ),
            _ => self.unsupported("a lane copy between kinds"),
        }
    }

    /// `@p d = 0`.
    fn masked_zero(&mut self, d: Loc, p: Reg) {
        match d {
            Loc::R(r) => self.guarded(
                p,
                Op::Un {
                    op: UnOp::Mov,
                    ty: T::B32,
                    dst: r,
                    a: imm(0),
                },
            ),
            Loc::D(r) => self.guarded(
                p,
                Op::Un {
                    op: UnOp::Mov,
                    ty: T::B64,
                    dst: r,
                    a: imm(0),
                },
            ),
            Loc::P(dp) => self.guarded(
                p,
                Op::Setp {
                    cmp: Cmp::Ne,
                    ty: T::U32,
                    dst: dp,
                    a: imm(0),
                    b: imm(0),
                },
            ),
        }
    }

    /// Whether every on lane holds the value of the first on lane.
    fn reduce_equal(&mut self, args: &[Value], d: Loc) {
        let s = self.scalar(args[0]);
        let x = self.loc(args[0]);
        let m = self.reg(args[1]);
        let m = self.existing(m);
        let b = self.ballot(m);
        let first = self.ctz32(b);
        self.bin(BinOp::And, T::B32, first, rs(first), imm(31));
        let v = self.fresh(s);
        self.bcast(v, x, rs(first));
        let ne = self.ptmp();
        match (x, v) {
            (Loc::P(xp), Loc::P(vp)) => self.bin(BinOp::Xor, T::Pred, ne, rs(xp), rs(vp)),
            _ if s.is_float() => {
                self.setp(Cmp::Eq, fty(s), ne, rs(x.reg()), rs(v.reg()));
                self.un(UnOp::Not, T::Pred, ne, rs(ne));
            }
            _ => self.setp(Cmp::Ne, uty(s), ne, rs(x.reg()), rs(v.reg())),
        }
        self.bin(BinOp::And, T::Pred, ne, rs(ne), rs(m));
        let any = self.ptmp();
        self.op(Op::Vote {
            mode: VoteMode::Any,
            dst: any,
            p: ne,
        });
        self.un(UnOp::Not, T::Pred, d.reg(), rs(any));
    }

    // ---- memory ----------------------------------------------------------------

    /// The simulator space of the access `inst` of the current function.
    fn space_of(&self, inst: crate::ir::Inst) -> Space {
        if self.ctx.spaces.is_shared_access(self.fref, inst) {
            Space::Shared
        } else {
            Space::Global
        }
    }

    /// The address operand for pointer `v` in `space` (`.shared` pointers hold the
    /// window plus the offset).
    fn addr(&mut self, space: Space, v: Value) -> Address {
        let r = self.reg(v);
        let offset = if space == Space::Shared {
            -(SHARED_WINDOW as i32)
        } else {
            0
        };
        Address {
            base: AddrBase::RegPair(r),
            offset,
        }
    }

    fn load(&mut self, space: Space, s: Scalar, addr: Value, mask: Option<Value>, res: Value) {
        let mask = mask.filter(|&m| !self.on(m));
        let a = self.addr(space, addr);
        let d = self.loc(res);
        let mut mask = mask.map(|m| self.reg(m)).map(|m| self.existing(m));
        let relative = self.uni.relative_load(self.f, res, addr);
        if let (Some(m), false) = (mask, self.f.value_type(res).varying && !relative) {
            // A uniform load under a mask happens when any lane is on, and every lane
            // gets the value (else lanes would disagree on a uniform value). So does
            // one uniform among a region's lanes (see uniform.rs).
            let any = self.ptmp();
            self.op(Op::Vote {
                mode: VoteMode::Any,
                dst: any,
                p: m,
            });
            mask = Some(any);
        }
        let ty = mem_ty(s);
        let dst = match d {
            Loc::P(_) => self.tmp(),
            l => l.reg(),
        };
        let ld = Op::Ld {
            space,
            ty,
            dst,
            addr: a,
        };
        match mask {
            Some(m) => {
                let zty = if ty.is_wide() { T::B64 } else { T::B32 };
                self.mov(zty, dst, imm(0));
                self.guarded(m, ld);
            }
            None => self.op(ld),
        }
        if let Loc::P(p) = d {
            self.setp(Cmp::Ne, T::U32, p, rs(dst), imm(0));
        }
    }

    fn store(&mut self, space: Space, addr: Value, value: Value, mask: Option<Value>) {
        let mask = mask.filter(|&m| !self.on(m));
        if self.constant(addr) == Some(SERIAL_OUTPUT) {
            self.console_write(value, mask);
            return;
        }
        let a = self.addr(space, addr);
        let s = self.scalar(value);
        let v = self.loc(value);
        let src = match v {
            Loc::P(p) => self.pred_to_word(p),
            l => l.reg(),
        };
        let st = Op::St {
            space,
            ty: mem_ty(s),
            addr: a,
            a: rs(src),
        };
        match mask {
            Some(m) => {
                let m = self.reg(m);
                let m = self.existing(m);
                self.guarded(m, st);
            }
            None => self.op(st),
        }
    }

    /// The value of `v` when it is an integer constant (through conversions).
    fn constant(&self, v: Value) -> Option<u64> {
        let f = self.f;
        let crate::ir::ValueDef::Result(inst) = f.values[v].def else {
            return None;
        };
        match &f.insts[inst] {
            InstData::Iconst { bits, .. } => Some(*bits),
            InstData::Convert {
                op: ConvOp::Bitcast | ConvOp::Zext,
                arg,
                ..
            } => self.constant(*arg),
            _ => None,
        }
    }

    /// Loads hidden parameter `i` (a 64-bit address) into a fresh pair.
    fn hidden_param(&mut self, i: usize) -> Reg {
        let d = self.tmp64();
        self.load_param(self.hidden[i], T::U64, d);
        d
    }

    /// `ld.param` of kernel parameter `pi` into `dst`.
    fn load_param(&mut self, pi: u16, ty: T, dst: Reg) {
        self.op(Op::Ld {
            space: Space::Param,
            ty,
            dst,
            addr: Address {
                base: AddrBase::Param(pi),
                offset: 0,
            },
        });
    }

    /// A store of a character to the serial port: once per gang (by its first on
    /// lane), the console cursor is bumped atomically and the byte stored at the old
    /// cursor, if within [`CONSOLE_CAPACITY`]. Blocks and gangs print in the order
    /// they run, which is the interpreter's in the functional simulator.
    fn console_write(&mut self, value: Value, mask: Option<Value>) {
        let c = self.reg(value);
        let on = match mask {
            Some(m) => {
                let m = self.reg(m);
                self.existing(m)
            }
            None => self.exists,
        };
        let b = self.ballot(on);
        let first = self.ctz32(b);
        let me = self.ptmp();
        self.setp(
            Cmp::Eq,
            T::U32,
            me,
            Src::Special(Special::LaneId),
            rs(first),
        );
        let base = self.hidden_param(CONSOLE);
        let pos = self.tmp();
        self.mov(T::B32, pos, imm(CONSOLE_CAPACITY));
        self.guarded(
            me,
            Op::Atom {
                space: Space::Global,
                op: AtomOp::Add,
                ty: T::U32,
                dst: pos,
                addr: Address {
                    base: AddrBase::RegPair(base),
                    offset: 0,
                },
                a: imm(1),
                b: None,
            },
        );
        let fits = self.ptmp();
        self.setp(Cmp::Lt, T::U32, fits, rs(pos), imm(CONSOLE_CAPACITY));
        let wide = self.tmp64();
        self.cvt(None, T::U64, T::U32, wide, rs(pos));
        self.bin(BinOp::Add, T::U64, wide, rs(wide), rs(base));
        self.bin(BinOp::And, T::Pred, fits, rs(fits), rs(me));
        self.guarded(
            fits,
            Op::St {
                space: Space::Global,
                ty: T::U8,
                addr: Address {
                    base: AddrBase::RegPair(wide),
                    offset: CONSOLE_TEXT as i32,
                },
                a: rs(c),
            },
        );
    }

    /// The entry's return value: lane 0 of gang 0 of block 0 (where the interpreter
    /// reads it) stores it to the hidden `__result`.
    fn entry_return(&mut self, v: Value) {
        use sim::gpu::Dim;
        let s = self.scalar(v);
        let src = match self.loc(v) {
            Loc::P(p) => self.pred_to_word(p),
            l => l.reg(),
        };
        let first = self.ptmp();
        self.setp(
            Cmp::Eq,
            T::U32,
            first,
            Src::Special(Special::Tid(Dim::X)),
            imm(0),
        );
        let t = self.ptmp();
        for d in Dim::ALL {
            self.setp(Cmp::Eq, T::U32, t, Src::Special(Special::Ctaid(d)), imm(0));
            self.bin(BinOp::And, T::Pred, first, rs(first), rs(t));
        }
        self.dac_first_thread(first);
        let base = self.hidden_param(RESULT);
        self.guarded(
            first,
            Op::St {
                space: Space::Global,
                ty: mem_ty(s),
                addr: Address {
                    base: AddrBase::RegPair(base),
                    offset: 0,
                },
                a: rs(src),
            },
        );
    }

    /// An atomic read-modify-write (`op`) or compare-and-swap (`op` = None). A
    /// uniform atomic (uniform address and operands) happens once per gang, in its
    /// first on lane, and every lane gets the old value.
    #[allow(clippy::too_many_arguments)]
    fn atomic(
        &mut self,
        space: Space,
        op: Option<AtomicOp>,
        addr: Value,
        expected: Option<Value>,
        value: Value,
        mask: Option<Value>,
        res: Option<Value>,
    ) {
        let s = self.scalar(value);
        if !matches!(s.bits(), 32 | 64) || s == Scalar::Bool {
            self.unsupported("an atomic on a type other than 32 or 64 bits");
            return;
        }
        let uniform = !self.f.value_type(addr).varying
            && !self.f.value_type(value).varying
            && expected.is_none_or(|e| !self.f.value_type(e).varying);
        let a = self.addr(space, addr);
        let vr = self.reg(value);
        let (aop, ty, operand) = match op {
            None => (AtomOp::Cas, bty(s), vr),
            Some(o) => {
                let (aop, ty) = match o {
                    AtomicOp::Add => (AtomOp::Add, if s.is_float() { fty(s) } else { uty(s) }),
                    AtomicOp::Sub => (AtomOp::Add, uty(s)),
                    AtomicOp::And => (AtomOp::And, bty(s)),
                    AtomicOp::Or => (AtomOp::Or, bty(s)),
                    AtomicOp::Xor => (AtomOp::Xor, bty(s)),
                    AtomicOp::Smin => (AtomOp::Min, sty(s)),
                    AtomicOp::Smax => (AtomOp::Max, sty(s)),
                    AtomicOp::Umin => (AtomOp::Min, uty(s)),
                    AtomicOp::Umax => (AtomOp::Max, uty(s)),
                    AtomicOp::Xchg => (AtomOp::Exch, bty(s)),
                };
                let operand = if o == AtomicOp::Sub {
                    let n = if wide(s) { self.tmp64() } else { self.tmp() };
                    self.bin(BinOp::Sub, uty(s), n, imm(0), rs(vr));
                    n
                } else {
                    vr
                };
                (aop, ty, operand)
            }
        };
        let (first, second) = match expected {
            Some(e) => {
                let er = self.reg(e);
                (er, Some(rs(operand)))
            }
            None => (operand, None),
        };
        let dst = match res {
            Some(r) => self.reg(r),
            None => {
                if wide(s) {
                    self.tmp64()
                } else {
                    self.tmp()
                }
            }
        };
        let zty = if wide(s) { T::B64 } else { T::B32 };
        self.mov(zty, dst, imm(0));
        let mut guard = mask.filter(|&m| !self.on(m)).map(|m| self.reg(m));
        let exists = self.exists;
        guard = Some(match guard {
            Some(m) => self.existing(m),
            None => exists,
        });
        let mut leader = None;
        if uniform {
            // Once per gang: the first lane on (lane 0 of the existing ones if no mask).
            let on = guard.unwrap_or(exists);
            let b = self.ballot(on);
            let l = self.ctz32(b);
            let p = self.ptmp();
            self.setp(Cmp::Eq, T::U32, p, Src::Special(Special::LaneId), rs(l));
            guard = Some(p);
            leader = Some(l);
        }
        let atom = Op::Atom {
            space,
            op: aop,
            ty,
            dst,
            addr: a,
            a: rs(first),
            b: second,
        };
        match guard {
            Some(g) => self.guarded(g, atom),
            None => self.op(atom),
        }
        if let (Some(l), Some(_)) = (leader, res) {
            self.bin(BinOp::And, T::B32, l, rs(l), imm(31));
            let loc = if wide(s) { Loc::D(dst) } else { Loc::R(dst) };
            self.bcast(loc, loc, rs(l));
        }
    }
}
