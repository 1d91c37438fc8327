//! Register allocation for the dac-gpu under a per-thread register budget, with the
//! shared linear-scan allocator ([`crate::back::common::regalloc`]).
//!
//! Instruction selection gives every value its own `%r` register, even-aligned
//! `%rd` pair or `%p` predicate (virtual numbering). [`allocate`] turns the selected
//! kernel into a [`MachFunction`] (basic blocks split at labels, branch targets and
//! after branches and exits), deletes the instructions whose results nobody reads
//! ([`crate::back::common::dce`]), lets the shared allocator assign physical
//! registers within the budget, and writes the kernel back with new instruction
//! indices.
//!
//! * **Classes.** `%r` (32-bit, [`R`]), even-aligned pairs (64-bit, [`D`], aliasing
//!   the two `%r` they are made of, so a pair and a single never overlap while both
//!   live) and predicates ([`P`]). A register accessed with a 64-bit type anywhere
//!   is a pair; its halves, when an instruction reads or writes just one, are
//!   accesses to the pair.
//! * **Operand kinds.** A guarded definition (`@%p`) or a write of one half of a pair
//!   keeps the old value in the lanes or half it does not write, so it reads the
//!   register too (`UseDef`): the old value stays live up to it.
//! * **Budget.** `%r0..%r{budget-1}` are allocatable; the kernel's `.reg` count is the
//!   highest register the final code names, plus one, so with the default budget (63,
//!   the Fermi limit) a kernel that needs no spill gets about the fewest registers
//!   its values need at once (the scan takes the lowest free register first).
//! * **Spills** go to per-thread local memory: `st.local`/`ld.local` at fixed offsets
//!   (`[N]`, no address register, so spill code needs no register of its own) past
//!   whatever local bytes the kernel already had; `Kernel::local_bytes` grows by the
//!   slots. 32-bit slots take 4 bytes, pairs 8 (8-aligned). Local memory is private
//!   per thread, so lanes never see each other's slots, and the timing model counts
//!   the accesses as memory traffic through L1/L2 (`local_transactions`). A value
//!   defined by an immediate, a special register other than the clock or `ld.param`
//!   (possibly through copies) takes no slot: it is rematerialized, computed again
//!   just before each read ([`GpuInst`]'s `rematerialize`). After allocation,
//!   redundant spill code goes ([`spill_clean`]) and each reload moves as early as
//!   its block allows ([`spill_hoist`]), so its latency overlaps the work before it.
//! * **Predicates** are allocated too (so `.pred` is compact), from 256 registers and
//!   never spilled: memory holds no `.pred` values, and no kernel keeps that many
//!   masks live. Needing more is an allocation error.
//!
//! A budget too small for some instruction's operands (even with everything else
//! spilled) is reported as E0904 with the smallest budget that works.

use std::fmt;

use cranelift_entity::EntityRef;
use rustc_hash::FxHashMap;
use smallvec::{smallvec, SmallVec};

use sim::gpu::{
    AddrBase, Address, Inst, Kernel, Op, Reg, RegFile, Space, Special, Src, Type, UnOp,
};

use crate::back::common::dce;
use crate::back::common::liveness::{self, BlockAccess};
use crate::back::common::mach::{
    MBlock, MachFunction, MachInst, MachLine, Operand, OperandKind, PReg, Reg as MReg, RegClass,
    RegTarget, SpillSlot, VReg,
};
use crate::back::common::regalloc::{self, AllocError};
use crate::diag::{codes, Diagnostic};
use crate::source::Span;
use crate::timing;

mod shared;
mod spill_clean;
mod spill_hoist;

use shared::Demoted;
pub use shared::{unit_offset, Placement, SharedRoom};

/// 32-bit registers `%rN`.
pub const R: RegClass = RegClass(0);
/// Even-aligned pairs `%rdN` (`PReg::index` is the low register, even).
pub const D: RegClass = RegClass(1);
/// Predicates `%pN`.
pub const P: RegClass = RegClass(2);

/// The default budget: Fermi's 63 registers per thread.
pub const DEFAULT_MAX_REGS: u32 = 63;
/// The largest budget (`PReg` indices are bytes; Maxwell's limit is 255 too).
pub const MAX_BUDGET: u32 = 255;
/// Predicate registers the allocator may use.
const NUM_PREDS: u32 = 256;
/// Operand register banks the allocator avoids conflicts in ([`RegTarget::read_banks`]):
/// Maxwell's 4 (the `maxwell` preset's `register_banks`). On a machine without
/// banks (the GTX 480 preset) the choice costs nothing.
const REGISTER_BANKS: u32 = 4;

/// What allocation did to one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegReport {
    /// The budget allocated under (`--max-regs`, at most [`MAX_BUDGET`]).
    pub budget: u32,
    /// 32-bit registers selection numbered before allocation (a value each, so
    /// unoptimized code names tens of thousands).
    pub virtual_regs: u32,
    /// 32-bit registers the final code uses (`Kernel::num_regs`).
    pub num_regs: u32,
    pub num_preds: u32,
    /// Values of the selected code given a spill slot.
    pub spilled_values: u32,
    /// Values of the selected code rematerialized instead: a constant, special
    /// register or parameter load executed again before each read, with no slot.
    pub rematerialized_values: u32,
    pub spill_slots: u32,
    /// Local bytes per thread taken by the spill slots.
    pub spill_bytes: u32,
    /// `st.local` and `ld.local` instructions of spill code in the kernel (static).
    pub spill_stores: u32,
    pub spill_loads: u32,
    /// Slots demoted to shared memory ([`Placement::Shared`], [`Placement::Mixed`]).
    pub demoted_slots: u32,
    /// Shared bytes per block the demoted slots take.
    pub demoted_bytes: u32,
    /// Threads per block the demoted slots' layout strides by (0 without demoted
    /// slots): a launch with more threads per block cannot run the kernel.
    pub shared_threads: u32,
    /// `st.shared` and `ld.shared` instructions of demoted spill code (static).
    pub demoted_stores: u32,
    pub demoted_loads: u32,
}

/// An allocated kernel's new line table and instruction numbering.
#[derive(Clone, Debug)]
pub struct Allocated {
    /// Source span of each instruction of the allocated kernel.
    pub lines: Vec<Option<Span>>,
    /// For each instruction index of the selected kernel (and its length), the index
    /// of the same instruction afterwards; a deleted copy or dead instruction maps to
    /// what follows it.
    pub new_pc: Vec<u32>,
    pub report: RegReport,
}

/// Why a kernel cannot be allocated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegError {
    pub kernel: String,
    pub budget: u32,
    pub message: String,
    pub span: Option<Span>,
    /// The smallest budget that works, if the budget was the problem and one does.
    pub smallest: Option<u32>,
}

impl RegError {
    /// An error of `k` under `budget` that no budget helps: a bug.
    pub fn internal(k: &Kernel, budget: u32, message: String) -> RegError {
        RegError {
            kernel: k.name.clone(),
            budget: budget.clamp(1, MAX_BUDGET),
            message,
            span: None,
            smallest: None,
        }
    }

    /// The diagnostic: E0904 when the budget is too small, an internal error
    /// otherwise.
    pub fn diagnostic(&self) -> Diagnostic {
        let mut d = match self.smallest {
            Some(n) => Diagnostic::error(
                codes::REGISTER_BUDGET,
                format!(
                    "kernel `{}` cannot be compiled with --max-regs {}: an instruction needs \
                     more registers at once; the smallest budget that works is {n}",
                    self.kernel, self.budget
                ),
            )
            .with_note(self.message.clone()),
            None => Diagnostic::error(
                codes::INTERNAL_ERROR,
                format!(
                    "dac-gpu back end: kernel `{}`: {}",
                    self.kernel, self.message
                ),
            ),
        };
        if let Some(s) = self.span {
            d = d.with_primary(s, "this instruction's operands do not fit");
        }
        d
    }
}

// ---- the instruction wrapper the shared allocator sees ---------------------------

/// A register of the selected (virtual) numbering: a single, a pair or a predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Group {
    file: RegFile,
    base: u32,
    pair: bool,
}

impl Group {
    fn holds(&self, r: Reg) -> bool {
        r.file == self.file && r.idx >= self.base && r.idx - self.base <= u32::from(self.pair)
    }
}

/// One instruction with its register operands, one per register group it touches
/// (`groups[i]` is where `ops[i]` sits in the instruction's own numbering).
#[derive(Clone)]
pub struct GpuInst {
    inst: Inst,
    ops: SmallVec<[Operand; 6]>,
    groups: SmallVec<[Group; 6]>,
    /// Index in the selected kernel; `None` for spill code.
    orig: Option<u32>,
    /// The spill slot a spill or reload accesses (its offset is set at the end).
    slot: Option<SpillSlot>,
}

impl fmt::Debug for GpuInst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = |t: u32| format!("pc{t}");
        let func = |t: u32| format!("f{t}");
        let text = sim::gpu::asm::inst_text(&self.inst, &[], &label, &func);
        write!(f, "{}", text.trim_end_matches(';'))
    }
}

impl MachInst for GpuInst {
    fn operands(&self, out: &mut SmallVec<[Operand; 8]>) {
        out.extend_from_slice(&self.ops);
    }

    fn map_regs(&mut self, f: &mut dyn FnMut(MReg) -> MReg) {
        for op in &mut self.ops {
            op.reg = f(op.reg);
        }
    }

    fn as_move(&self) -> Option<(MReg, MReg)> {
        let Op::Un {
            op: UnOp::Mov,
            a: Src::Reg(_),
            ..
        } = self.inst.op
        else {
            return None;
        };
        if self.inst.guard.is_some() {
            return None;
        }
        // A full copy: one register read and one of the same class written whole.
        match (&self.ops[..], &self.groups[..]) {
            ([src, dst], [gs, gd])
                if src.kind == OperandKind::Use
                    && dst.kind == OperandKind::Def
                    && gs.file == gd.file
                    && gs.pair == gd.pair =>
            {
                Some((dst.reg, src.reg))
            }
            _ => None,
        }
    }

    fn clobbers(&self) -> &'static [PReg] {
        &[]
    }

    /// Arithmetic, conversions, comparisons and selections, and parameter loads.
    /// Every other load can fault (and `[deq.data]` pops a DAC queue); stores,
    /// atomics, queues, votes and shuffles, barriers and control flow are kept.
    /// So is spill code, and anything writing a register the allocator does not
    /// see (uniform or affine files): its write is not among the operands.
    fn is_pure(&self) -> bool {
        if self.slot.is_some() || writes_unlisted_register(&self.inst) {
            return false;
        }
        match self.inst.op {
            Op::Bin { .. }
            | Op::Un { .. }
            | Op::Mad { .. }
            | Op::Cvt { .. }
            | Op::Setp { .. }
            | Op::Selp { .. } => true,
            Op::Ld { space, addr, .. } => {
                space == Space::Param && matches!(addr.base, AddrBase::Param(_))
            }
            _ => false,
        }
    }

    /// Unguarded arithmetic, conversions and comparisons of immediates and special
    /// registers other than the clock (a thread's indices and the launch's extents do
    /// not change while it runs), and parameter loads (the parameter space is
    /// read-only; [`GpuInst::is_pure`]). The copy has no input index, as spill code
    /// has none: the line table and the trap sites keep the original's.
    fn rematerialize(&self) -> Option<GpuInst> {
        if self.slot.is_some() || self.inst.guard.is_some() || writes_unlisted_register(&self.inst)
        {
            return None;
        }
        let mut reads_register = false;
        self.inst.for_each_reg(|a| reads_register |= !a.def);
        let fixed = |s: Src| match s {
            Src::Imm(_) => true,
            Src::Special(sp) => sp != Special::Clock64,
            Src::Reg(_) => false,
        };
        let constant = match self.inst.op {
            Op::Bin { a, b, .. } | Op::Setp { a, b, .. } => fixed(a) && fixed(b),
            Op::Un { a, .. } | Op::Cvt { a, .. } => fixed(a),
            Op::Mad { a, b, c, .. } => fixed(a) && fixed(b) && fixed(c),
            Op::Ld {
                space: Space::Param,
                addr,
                ..
            } => matches!(addr.base, AddrBase::Param(_)),
            _ => false,
        };
        (constant && !reads_register).then(|| GpuInst {
            orig: None,
            ..self.clone()
        })
    }
}

/// Whether `inst` writes a register outside the files the allocator numbers.
fn writes_unlisted_register(inst: &Inst) -> bool {
    let mut found = false;
    inst.for_each_reg(|a| found |= a.def && !matches!(a.reg.file, RegFile::R | RegFile::P));
    found
}

/// How an instruction accesses one register group.
#[derive(Clone, Copy, Default)]
struct Access {
    read: bool,
    /// Written whole and unconditionally.
    def: bool,
    /// Written in part (one half of a pair) or under a guard.
    partial: bool,
}

/// The register groups of a selected kernel and their virtual registers.
struct Numbering {
    /// Per `%r` index: the low register of a pair.
    pair_base: Vec<bool>,
    vregs: FxHashMap<Group, VReg>,
    /// The group of each virtual register.
    groups: Vec<Group>,
}

impl Numbering {
    /// Finds the pairs: every register accessed with a 64-bit type.
    fn new(k: &Kernel) -> Result<Numbering, String> {
        let mut pair_base = Vec::new();
        for inst in &k.insts {
            let mut bad = None;
            inst.for_each_reg(|a| {
                if a.wide && a.reg.file == RegFile::R {
                    let i = a.reg.idx as usize;
                    if i % 2 == 1 {
                        bad = Some(a.reg.idx);
                    }
                    if pair_base.len() <= i {
                        pair_base.resize(i + 1, false);
                    }
                    pair_base[i] = true;
                }
            });
            if let Some(r) = bad {
                return Err(format!("64-bit access to the odd register %r{r}"));
            }
        }
        Ok(Numbering {
            pair_base,
            vregs: FxHashMap::default(),
            groups: Vec::new(),
        })
    }

    fn group(&self, r: Reg) -> Group {
        let is_base = |i: u32| self.pair_base.get(i as usize).copied() == Some(true);
        match r.file {
            RegFile::R if is_base(r.idx) => Group {
                file: r.file,
                base: r.idx,
                pair: true,
            },
            RegFile::R if r.idx > 0 && is_base(r.idx - 1) => Group {
                file: r.file,
                base: r.idx - 1,
                pair: true,
            },
            _ => Group {
                file: r.file,
                base: r.idx,
                pair: false,
            },
        }
    }

    fn vreg(&mut self, g: Group, mf: &mut MachFunction<GpuInst>) -> VReg {
        let groups = &mut self.groups;
        *self.vregs.entry(g).or_insert_with(|| {
            groups.push(g);
            mf.new_vreg(match (g.file, g.pair) {
                (RegFile::P, _) => P,
                (_, true) => D,
                _ => R,
            })
        })
    }

    /// The allocator's view of `inst` (at `pc` of the selected kernel).
    fn wrap(&mut self, inst: Inst, pc: u32, mf: &mut MachFunction<GpuInst>) -> GpuInst {
        let mut seen: SmallVec<[(Group, Access); 6]> = SmallVec::new();
        let guarded = inst.guard.is_some();
        inst.for_each_reg(|a| {
            // Uniform and affine registers are not allocated here.
            if !matches!(a.reg.file, RegFile::R | RegFile::P) {
                return;
            }
            let g = self.group(a.reg);
            let i = seen.iter().position(|s| s.0 == g).unwrap_or_else(|| {
                seen.push((g, Access::default()));
                seen.len() - 1
            });
            let acc = &mut seen[i].1;
            if !a.def {
                acc.read = true;
            } else if a.wide == g.pair && !guarded {
                acc.def = true;
            } else {
                acc.partial = true;
            }
        });
        let mut ops = SmallVec::new();
        let mut groups = SmallVec::new();
        // Uses first, then tied operands, then definitions.
        for pass in 0..3 {
            for &(g, acc) in &seen {
                let kind = match pass {
                    0 if acc.read && !acc.partial => OperandKind::Use,
                    1 if acc.partial => OperandKind::UseDef,
                    2 if acc.def && !acc.partial => OperandKind::Def,
                    _ => continue,
                };
                ops.push(Operand {
                    reg: MReg::Virt(self.vreg(g, mf)),
                    kind,
                });
                groups.push(g);
            }
        }
        GpuInst {
            inst,
            ops,
            groups,
            orig: Some(pc),
            slot: None,
        }
    }
}

// ---- the target -------------------------------------------------------------------

/// The dac-gpu register file under a budget.
struct GpuTarget {
    r: Vec<PReg>,
    d: Vec<PReg>,
    p: Vec<PReg>,
}

impl GpuTarget {
    fn new(budget: u32) -> GpuTarget {
        let budget = budget.min(MAX_BUDGET);
        let preg = |class, index: u32| PReg {
            class,
            index: index as u8,
        };
        GpuTarget {
            r: (0..budget).map(|i| preg(R, i)).collect(),
            d: (0..budget / 2).map(|i| preg(D, 2 * i)).collect(),
            p: (0..NUM_PREDS).map(|i| preg(P, i)).collect(),
        }
    }
}

fn class_ty(class: RegClass) -> Type {
    match class {
        D => Type::B64,
        P => Type::Pred,
        _ => Type::B32,
    }
}

fn sim_reg(p: PReg) -> Reg {
    match p.class {
        P => Reg::p(u32::from(p.index)),
        _ => Reg::r(u32::from(p.index)),
    }
}

/// A spill or reload of `p`: its only operand is `p` itself.
fn spill_code(inst: Inst, p: PReg, kind: OperandKind, slot: Option<SpillSlot>) -> GpuInst {
    let r = sim_reg(p);
    GpuInst {
        inst,
        ops: smallvec![Operand {
            reg: MReg::Phys(p),
            kind,
        }],
        groups: smallvec![Group {
            file: r.file,
            base: r.idx,
            pair: p.class == D,
        }],
        orig: None,
        slot,
    }
}

/// The address of a slot before layout: patched in [`finish_inst`].
const UNPLACED: Address = Address {
    base: AddrBase::None,
    offset: 0,
};

impl RegTarget for GpuTarget {
    type Inst = GpuInst;

    fn allocatable(&self, class: RegClass) -> &[PReg] {
        match class {
            R => &self.r,
            D => &self.d,
            P => &self.p,
            _ => &[],
        }
    }

    fn spill_size(&self, class: RegClass) -> u32 {
        if class == D {
            8
        } else {
            4
        }
    }

    fn spillable(&self, class: RegClass) -> bool {
        class != P
    }

    fn spill(&self, slot: SpillSlot, reg: PReg) -> SmallVec<[GpuInst; 2]> {
        let st = Op::St {
            space: Space::Local,
            ty: class_ty(reg.class),
            addr: UNPLACED,
            a: Src::Reg(sim_reg(reg)),
        };
        smallvec![spill_code(Inst::new(st), reg, OperandKind::Use, Some(slot))]
    }

    fn reload(&self, slot: SpillSlot, reg: PReg) -> SmallVec<[GpuInst; 2]> {
        let ld = Op::Ld {
            space: Space::Local,
            ty: class_ty(reg.class),
            dst: sim_reg(reg),
            addr: UNPLACED,
        };
        smallvec![spill_code(Inst::new(ld), reg, OperandKind::Def, Some(slot))]
    }

    fn copy(&self, dest: PReg, src: PReg) -> GpuInst {
        let mov = Op::Un {
            op: UnOp::Mov,
            ty: class_ty(dest.class),
            dst: sim_reg(dest),
            a: Src::Reg(sim_reg(src)),
        };
        let mut inst = spill_code(Inst::new(mov), src, OperandKind::Use, None);
        let def = spill_code(inst.inst, dest, OperandKind::Def, None);
        inst.ops.extend(def.ops);
        inst.groups.extend(def.groups);
        inst
    }

    fn storage_units(&self, class: RegClass) -> u32 {
        match class {
            R => 1,
            D => 2,
            _ => 0,
        }
    }

    /// Maxwell's operand banks, as the simulator models them
    /// (`sim::gpu::timing::register_bank_conflicts`): register number mod 4, a
    /// pair reading both halves' banks. Predicates are not in the banked file.
    fn read_banks(&self, reg: PReg) -> SmallVec<[u32; 2]> {
        let bank = |k: u8| u32::from(k) % REGISTER_BANKS;
        match reg.class {
            R => smallvec![bank(reg.index)],
            D => smallvec![bank(reg.index), bank(reg.index + 1)],
            _ => SmallVec::new(),
        }
    }

    /// A pair and its two halves.
    fn aliases(&self, reg: PReg) -> SmallVec<[PReg; 4]> {
        match reg.class {
            D => smallvec![
                PReg {
                    class: R,
                    index: reg.index,
                },
                PReg {
                    class: R,
                    index: reg.index + 1,
                }
            ],
            _ => SmallVec::new(),
        }
    }
}

// ---- kernel to machine function and back ---------------------------------------

/// Whether control can fall through past `inst`.
fn falls_through(inst: &Inst) -> bool {
    inst.guard.is_some() || !matches!(inst.op, Op::Bra { .. } | Op::Exit | Op::Ret)
}

/// Block starts: the entry, every label and branch target, and what follows a
/// branch, exit or return. Returns, per instruction index (and the end), its block.
fn block_of_pcs(k: &Kernel) -> Vec<u32> {
    let n = k.insts.len();
    let mut leader = vec![false; n + 1];
    leader[0] = true;
    for l in &k.labels {
        if let Some(x) = leader.get_mut(l.at as usize) {
            *x = true;
        }
    }
    for (pc, inst) in k.insts.iter().enumerate() {
        if let Op::Bra { target, .. } = inst.op {
            if let Some(x) = leader.get_mut(target as usize) {
                *x = true;
            }
        }
        if matches!(inst.op, Op::Bra { .. } | Op::Exit | Op::Ret) {
            leader[pc + 1] = true;
        }
    }
    let mut block = Vec::with_capacity(n + 1);
    let mut b = 0u32;
    for (pc, &is_leader) in leader.iter().enumerate() {
        if is_leader && pc > 0 {
            b += 1;
        }
        block.push(b);
    }
    block
}

/// The selected kernel as a machine function over virtual registers.
fn to_mach(
    k: &Kernel,
    lines: &[Option<Span>],
) -> Result<(MachFunction<GpuInst>, Vec<u32>), String> {
    let mut numbering = Numbering::new(k)?;
    let block_of = block_of_pcs(k);
    let n = k.insts.len();
    let mut mf = MachFunction::new(k.name.clone());
    let nblocks = block_of.last().map_or(0, |&b| b as usize + 1);
    for _ in 0..nblocks {
        mf.new_block();
    }
    // Each block's size up front: a machine line is large, and growing the vectors by
    // doubling copied them over and over.
    let mut sizes = vec![0usize; nblocks];
    for &b in &block_of[..n] {
        sizes[b as usize] += 1;
    }
    for (b, size) in sizes.into_iter().enumerate() {
        mf.blocks[MBlock::new(b)].insts.reserve_exact(size);
    }
    for (pc, inst) in k.insts.iter().enumerate() {
        let b = MBlock::new(block_of[pc] as usize);
        let g = numbering.wrap(*inst, pc as u32, &mut mf);
        let span = lines.get(pc).copied().flatten();
        mf.blocks[b].insts.push(MachLine { inst: g, span });
        let ends_block = block_of[pc + 1] != block_of[pc];
        if !ends_block {
            continue;
        }
        let mut succs: SmallVec<[MBlock; 2]> = SmallVec::new();
        if let Op::Bra { target, .. } = inst.op {
            if target as usize > n {
                return Err(format!("branch at {pc} to {target}, past the end"));
            }
            succs.push(MBlock::new(block_of[target as usize] as usize));
        }
        if falls_through(inst) && pc + 1 < n {
            let next = MBlock::new(block_of[pc + 1] as usize);
            if !succs.contains(&next) {
                succs.push(next);
            }
        }
        mf.blocks[b].succs = succs;
    }
    // Before the zero-writes: a read deleted with dead code needs none.
    crate::back::common::dce::eliminate_dead_code(&mut mf);
    init_unwritten(&mut mf, &numbering.groups);
    Ok((mf, block_of))
}

/// An instruction writing zero to the virtual register `v` of group `g`.
fn zero(v: VReg, g: Group) -> GpuInst {
    let dst = Reg {
        file: g.file,
        idx: g.base,
    };
    let op = match (g.file, g.pair) {
        // Predicates take no immediates: `0 != 0` is false.
        (RegFile::P, _) => Op::Setp {
            cmp: sim::gpu::Cmp::Ne,
            ty: Type::U32,
            dst,
            a: Src::Imm(0),
            b: Src::Imm(0),
        },
        (_, pair) => Op::Un {
            op: UnOp::Mov,
            ty: if pair { Type::B64 } else { Type::B32 },
            dst,
            a: Src::Imm(0),
        },
    };
    GpuInst {
        inst: Inst::new(op),
        ops: smallvec![Operand {
            reg: MReg::Virt(v),
            kind: OperandKind::Def,
        }],
        groups: smallvec![g],
        orig: None,
        slot: None,
    }
}

/// Writes zero explicitly where a register is read, or live, before anything can
/// have written it ([`liveness::unwritten_reads`]). Registers start at zero, so
/// this changes no result; but a value only ever written under a guard (a masked
/// result, an inlined call's return value) would otherwise be live, and hold a
/// register, from the kernel's entry to its first write.
fn init_unwritten(mf: &mut MachFunction<GpuInst>, groups: &[Group]) {
    let mut ops: SmallVec<[Operand; 8]> = SmallVec::new();
    let blocks: Vec<BlockAccess> = mf
        .blocks
        .values()
        .map(|b| BlockAccess {
            insts: b
                .insts
                .iter()
                .map(|l| {
                    ops.clear();
                    l.inst.operands(&mut ops);
                    dce::virtual_access(&ops)
                })
                .collect(),
            succs: b.succs.iter().map(|s| s.index()).collect(),
        })
        .collect();
    let nvars = mf.vregs.len();
    let live = liveness::solve(&blocks, nvars);
    let found = liveness::unwritten_reads(&blocks, nvars, &live, |_| true);
    // Per block: (insert before this instruction index, register), in order.
    let mut inserts: Vec<Vec<(usize, VReg)>> = vec![Vec::new(); blocks.len()];
    for &(b, i, v) in &found.before {
        inserts[b].push((i, VReg::new(v as usize)));
    }
    for &(b, v) in &found.at_end {
        let insts = &mf.blocks[MBlock::new(b)].insts;
        let at = match insts.last() {
            Some(l) if !falls_through(&l.inst.inst) || matches!(l.inst.inst.op, Op::Bra { .. }) => {
                insts.len() - 1
            }
            _ => insts.len(),
        };
        inserts[b].push((at, VReg::new(v as usize)));
    }
    for (b, mut list) in inserts.into_iter().enumerate() {
        if list.is_empty() {
            continue;
        }
        list.sort_by_key(|x| x.0);
        let block = &mut mf.blocks[MBlock::new(b)];
        let old = std::mem::take(&mut block.insts);
        let mut next = list.into_iter().peekable();
        let span_at = |i: usize| old.get(i).or(old.last()).and_then(|l| l.span);
        for i in 0..=old.len() {
            while let Some(&(at, v)) = next.peek() {
                if at != i {
                    break;
                }
                let span = span_at(i);
                block.insts.push(MachLine {
                    inst: zero(v, groups[v.index()]),
                    span,
                });
                next.next();
            }
            if let Some(l) = old.get(i) {
                block.insts.push(l.clone());
            }
        }
    }
}

/// Calls `f` on every register of `inst` (guard included), allowing a rewrite.
fn map_sim_regs(inst: &mut Inst, mut f: impl FnMut(Reg) -> Reg) {
    if let Some(g) = &mut inst.guard {
        g.pred = f(Reg::p(g.pred)).idx;
    }
    let src = |s: &mut Src, f: &mut dyn FnMut(Reg) -> Reg| {
        if let Src::Reg(r) = s {
            *r = f(*r);
        }
    };
    let addr = |a: &mut Address, f: &mut dyn FnMut(Reg) -> Reg| match &mut a.base {
        AddrBase::Reg(r) | AddrBase::RegPair(r) => *r = f(*r),
        _ => {}
    };
    match &mut inst.op {
        Op::Bin { dst, a, b, .. } | Op::Setp { dst, a, b, .. } => {
            src(a, &mut f);
            src(b, &mut f);
            *dst = f(*dst);
        }
        Op::Un { dst, a, .. } | Op::Cvt { dst, a, .. } => {
            src(a, &mut f);
            *dst = f(*dst);
        }
        Op::Mad { dst, a, b, c, .. } => {
            for s in [a, b, c] {
                src(s, &mut f);
            }
            *dst = f(*dst);
        }
        Op::Selp { dst, a, b, p, .. } => {
            src(a, &mut f);
            src(b, &mut f);
            *p = f(*p);
            *dst = f(*dst);
        }
        Op::Ld { dst, addr: ad, .. } => {
            addr(ad, &mut f);
            *dst = f(*dst);
        }
        Op::St { addr: ad, a, .. } => {
            addr(ad, &mut f);
            src(a, &mut f);
        }
        Op::Atom {
            dst,
            addr: ad,
            a,
            b,
            ..
        } => {
            addr(ad, &mut f);
            src(a, &mut f);
            if let Some(b) = b {
                src(b, &mut f);
            }
            *dst = f(*dst);
        }
        Op::Vote { dst, p, .. } => {
            *p = f(*p);
            *dst = f(*dst);
        }
        Op::Shfl {
            dst,
            dst_pred,
            a,
            lane,
            clamp,
            ..
        } => {
            for s in [a, lane, clamp] {
                src(s, &mut f);
            }
            *dst = f(*dst);
            if let Some(p) = dst_pred {
                *p = f(*p);
            }
        }
        Op::EnqData { addr: r, .. } | Op::EnqAddr { addr: r, .. } => *r = f(*r),
        Op::EnqPred { a, b, .. } => {
            src(a, &mut f);
            src(b, &mut f);
        }
        Op::EnqSel {
            then, els, a, b, ..
        } => {
            *then = f(*then);
            *els = f(*els);
            src(a, &mut f);
            src(b, &mut f);
        }
        Op::DeqPred { dst } => *dst = f(*dst),
        Op::Bra { .. } | Op::Call { .. } | Op::Ret | Op::Exit | Op::Bar { .. } => {}
        Op::Fence { .. } | Op::Nop => {}
    }
}

/// The sim instruction of an allocated line: physical registers, spill slots at
/// their offsets.
fn finish_inst(g: &GpuInst, slot_offsets: &[u32]) -> Inst {
    let mut inst = g.inst;
    map_sim_regs(&mut inst, |r| {
        let hit = g.groups.iter().zip(&g.ops).find(|(grp, _)| grp.holds(r));
        match hit {
            Some((grp, op)) => match op.reg {
                MReg::Phys(p) => Reg {
                    file: r.file,
                    idx: u32::from(p.index) + (r.idx - grp.base),
                },
                // Unreachable after allocation: every operand is physical.
                MReg::Virt(_) => r,
            },
            None => r,
        }
    });
    if let Some(slot) = g.slot {
        let offset = slot_offsets.get(slot.index()).copied().unwrap_or(0);
        match &mut inst.op {
            Op::Ld { addr, .. } | Op::St { addr, .. } => addr.offset = offset as i32,
            _ => {}
        }
    }
    inst
}

/// Lays the spill slots out in local memory from `base`, skipping the `demoted`
/// ones: (offsets, end).
fn slot_layout(
    slots: impl Iterator<Item = RegClass>,
    demoted: impl Fn(usize) -> bool,
    base: u32,
) -> (Vec<u32>, u32) {
    let mut end = base;
    let offsets = slots
        .enumerate()
        .map(|(i, c)| {
            if demoted(i) {
                return 0;
            }
            let size = if c == D { 8 } else { 4 };
            let at = end.div_ceil(size) * size;
            end = at + size;
            at
        })
        .collect();
    (offsets, end)
}

/// Registers (`%r` count, `%p` count) the code names.
fn register_counts(insts: &[Inst]) -> (u32, u32) {
    let (mut r, mut p) = (0u32, 0u32);
    for inst in insts {
        inst.for_each_reg(|a| {
            let top = a.reg.idx + 1 + u32::from(a.wide);
            match a.reg.file {
                RegFile::R => r = r.max(top),
                RegFile::P => p = p.max(top),
                _ => {}
            }
        });
    }
    (r, p)
}

/// The slots an allocation demotes to shared memory.
struct Demotion {
    /// The first unit of each slot, `None` for a slot in local memory.
    units: Vec<Option<u32>>,
    /// Units taken.
    used: u32,
    at: Demoted,
    /// The kernel's own shared bytes (static and dynamic), rounded up to a word:
    /// where the units start.
    static_bytes: u32,
}

/// Writes the allocated function back into `k`; returns the line table, the new
/// instruction numbering and the report.
fn write_back(
    k: &mut Kernel,
    mf: &MachFunction<GpuInst>,
    block_of: &[u32],
    budget: u32,
    alloc: &regalloc::Allocation,
    demotion: Option<&Demotion>,
) -> Allocated {
    let base = k.local_bytes.div_ceil(8) * 8;
    let unit_of = |slot: SpillSlot| demotion.and_then(|d| shared::unit_of(&d.units, slot));
    let (slot_offsets, local_end) = slot_layout(
        mf.spill_slots.values().copied(),
        |i| unit_of(SpillSlot::new(i)).is_some(),
        base,
    );
    let old_n = k.insts.len();
    let mut insts = Vec::new();
    let mut lines = Vec::new();
    let mut block_start = Vec::with_capacity(mf.blocks.len() + 1);
    let mut new_pc = vec![u32::MAX; old_n + 1];
    let mut report = RegReport {
        budget,
        spilled_values: alloc.spilled_vregs,
        rematerialized_values: alloc.rematerialized_vregs,
        spill_slots: mf.spill_slots.len() as u32,
        ..RegReport::default()
    };
    for block in mf.blocks.values() {
        block_start.push(insts.len() as u32);
        for line in &block.insts {
            if let Some(pc) = line.inst.orig {
                new_pc[pc as usize] = insts.len() as u32;
            }
            let inst = finish_inst(&line.inst, &slot_offsets);
            let demoted = line
                .inst
                .slot
                .and_then(|s| Some((demotion?.at, unit_of(s)?)));
            if let Some((at, unit)) = demoted {
                for inst in at.rewrite(&inst, unit) {
                    match inst.op {
                        Op::St { .. } => report.demoted_stores += 1,
                        _ => report.demoted_loads += 1,
                    }
                    insts.push(inst);
                    lines.push(line.span);
                }
                continue;
            }
            match (line.inst.slot, inst.op) {
                (Some(_), Op::St { .. }) => report.spill_stores += 1,
                (Some(_), Op::Ld { .. }) => report.spill_loads += 1,
                _ => {}
            }
            insts.push(inst);
            lines.push(line.span);
        }
    }
    block_start.push(insts.len() as u32);
    // Deleted copies map to whatever follows them.
    let mut next = insts.len() as u32;
    for x in new_pc.iter_mut().rev() {
        if *x == u32::MAX {
            *x = next;
        } else {
            next = *x;
        }
    }
    let end = insts.len() as u32;
    let start_of = |pc: u32| -> u32 {
        match block_of.get(pc as usize) {
            Some(&b) if (pc as usize) < old_n => block_start[b as usize],
            _ => end,
        }
    };
    let targets: Vec<u32> = insts
        .iter()
        .map(|i| match i.op {
            Op::Bra { target, .. } => start_of(target),
            _ => 0,
        })
        .collect();
    for (inst, t) in insts.iter_mut().zip(targets) {
        if let Op::Bra { target, .. } = &mut inst.op {
            *target = t;
        }
    }
    for l in &mut k.labels {
        l.at = start_of(l.at);
    }
    let (num_regs, num_preds) = register_counts(&insts);
    report.num_regs = num_regs;
    report.num_preds = num_preds;
    report.spill_bytes = local_end - base;
    k.insts = insts;
    k.num_regs = num_regs;
    k.num_preds = num_preds;
    if local_end > base {
        k.local_bytes = local_end.div_ceil(8) * 8;
    }
    if let Some(d) = demotion {
        report.demoted_slots = d.units.iter().flatten().count() as u32;
        report.demoted_bytes = 4 * d.used * d.at.threads;
        report.shared_threads = d.at.threads;
        k.shared_bytes = d.static_bytes + report.demoted_bytes;
    }
    Allocated {
        lines,
        new_pc,
        report,
    }
}

/// Allocates the registers of a selected kernel in place under `budget` 32-bit
/// registers (clamped to 1..=[`MAX_BUDGET`]), spilling to local memory as needed.
/// `lines` is the selected kernel's line table. On error `k` is unchanged.
pub fn allocate(
    k: &mut Kernel,
    lines: &[Option<Span>],
    budget: u32,
) -> Result<Allocated, RegError> {
    allocate_placed(k, lines, budget, Placement::Local, None)
}

/// [`allocate`], with the spilled values placed as `placement` says: in shared
/// memory ([`shared`]) within `room`, when the kernel spills at all and a slot fits.
pub fn allocate_placed(
    k: &mut Kernel,
    lines: &[Option<Span>],
    budget: u32,
    placement: Placement,
    room: Option<SharedRoom>,
) -> Result<Allocated, RegError> {
    let prepared = Prepared::new(k, lines).map_err(|m| RegError::internal(k, budget, m))?;
    allocate_prepared(k, &prepared, budget, placement, room)
}

/// The outcome of one linear scan of a [`Prepared`] kernel.
type Scan = Result<(MachFunction<GpuInst>, regalloc::Allocation), AllocError>;

/// A selected kernel in machine form, with the linear scans made of it so far, by
/// budget. `--regalloc auto` weighs three placements at each budget, and each
/// scans under the budget (a demoting one under one register fewer as well, for
/// the slots' base): five scans of two kinds. A scan is a pure function of the
/// machine form and the budget, so the cache gives each placement exactly what a
/// scan of its own would, and makes each once.
pub struct Prepared {
    mf: MachFunction<GpuInst>,
    block_of: Vec<u32>,
    scans: std::sync::Mutex<FxHashMap<u32, Scan>>,
}

impl Prepared {
    /// `k` (with its line table `lines`) in machine form, before any scan.
    pub fn new(k: &Kernel, lines: &[Option<Span>]) -> Result<Prepared, String> {
        let (mf, block_of) = timing::stage("to machine form", || to_mach(k, lines))?;
        Ok(Prepared {
            mf,
            block_of,
            scans: Default::default(),
        })
    }

    /// The scans made so far, by budget.
    fn scans(&self) -> std::sync::MutexGuard<'_, FxHashMap<u32, Scan>> {
        self.scans.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The linear scan under `budget` registers, made once.
    fn scan(&self, budget: u32) -> Scan {
        self.scan_ahead(&[budget]);
        self.scans()[&budget.min(MAX_BUDGET)].clone()
    }

    /// Makes the scans under each of `budgets` (at most [`MAX_BUDGET`]) not made
    /// yet, on every core ([`crate::parallel`]): the scans of one kernel are
    /// independent, and each gives what it would alone.
    pub fn scan_ahead(&self, budgets: &[u32]) {
        let mut todo: Vec<u32> = budgets
            .iter()
            .map(|&b| b.min(MAX_BUDGET))
            .filter(|b| !self.scans().contains_key(b))
            .collect();
        todo.sort_unstable();
        todo.dedup();
        let done = crate::parallel::map_in_order(
            todo.clone(),
            |&b| b as usize,
            |b| run_allocator(&self.mf, b),
        );
        self.scans().extend(todo.into_iter().zip(done));
    }
}

/// [`allocate_placed`] of the kernel `prepared` was made from, `k`.
pub fn allocate_prepared(
    k: &mut Kernel,
    prepared: &Prepared,
    budget: u32,
    placement: Placement,
    room: Option<SharedRoom>,
) -> Result<Allocated, RegError> {
    let budget = budget.clamp(1, MAX_BUDGET);
    let virtual_regs = k.num_regs;
    let (mf, block_of) = (&prepared.mf, &prepared.block_of);
    let mut done = match prepared.scan(budget) {
        Ok((mut out, a)) if a.spilled_vregs > 0 => {
            spill_clean::clean(&mut out);
            spill_hoist::hoist(&mut out);
            let demoted = room
                .filter(|_| placement != Placement::Local)
                .and_then(|room| demote(k, prepared, budget, placement, room));
            demoted.unwrap_or_else(|| write_back(k, &out, block_of, budget, &a, None))
        }
        Ok((out, a)) => timing::stage("fewest registers", || {
            fewest_without_spills(k, mf, out, block_of, budget, a)
        }),
        Err(e) => {
            return Err(RegError {
                kernel: k.name.clone(),
                budget,
                message: e.message,
                span: e.span,
                smallest: smallest_budget(prepared, budget),
            });
        }
    };
    done.report.virtual_regs = virtual_regs;
    Ok(done)
}

/// Allocates `mf` under `budget - 1` registers, the last one being the demoted
/// slots' base, and writes it back with the slots `placement` demotes within `room`;
/// `None` (and `k` unchanged) when none is, or the smaller budget does not allocate.
fn demote(
    k: &mut Kernel,
    prepared: &Prepared,
    budget: u32,
    placement: Placement,
    room: SharedRoom,
) -> Option<Allocated> {
    let (mut out, a) = prepared.scan(budget.checked_sub(1)?).ok()?;
    spill_clean::clean(&mut out);
    spill_hoist::hoist(&mut out);
    let classes = shared::slot_classes(&out);
    let weights = shared::slot_weights(&out);
    let (units, used) = shared::choose_units(&classes, &weights, room, placement);
    if used == 0 {
        return None;
    }
    let at = Demoted {
        base: Reg::r(registers_used(&a.used)),
        threads: room.threads,
    };
    let static_bytes = k.shared_bytes.div_ceil(4) * 4;
    shared::prepend_entry_code(&mut out, &at.entry_code(static_bytes));
    let demotion = Demotion {
        units,
        used,
        at,
        static_bytes,
    };
    Some(write_back(
        k,
        &out,
        &prepared.block_of,
        budget,
        &a,
        Some(&demotion),
    ))
}

/// 32-bit registers up to the highest one of `used` (a pair counts both halves).
fn registers_used(used: &[PReg]) -> u32 {
    used.iter()
        .map(|p| match p.class {
            R => u32::from(p.index) + 1,
            D => u32::from(p.index) + 2,
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// Writes back the spill-free allocation `out` (`alloc`; it may rematerialize values)
/// with the fewest registers: the scan takes the lowest free register, which is
/// usually but not always minimal, so smaller budgets are tried while they still need
/// no spill nor rematerialization (issue 5: by default, the fewest registers that
/// avoid spills). A budget with fewer base registers than `alloc`'s
/// [`regalloc::Allocation::peak_units`] is not tried: its trial would stop before its
/// scan, having found that peak.
fn fewest_without_spills(
    k: &mut Kernel,
    mf: &MachFunction<GpuInst>,
    mut out: MachFunction<GpuInst>,
    block_of: &[u32],
    budget: u32,
    mut alloc: regalloc::Allocation,
) -> Allocated {
    let original = k.clone();
    let peak_units = alloc.peak_units;
    let mut best = write_back(k, &out, block_of, budget, &alloc, None);
    while best.report.num_regs > 1 {
        let target = GpuTarget::new(best.report.num_regs - 1);
        let below =
            |peak: u32| regalloc::base_capacity(mf, &target).is_ok_and(|cap| cap > 0 && peak > cap);
        if peak_units.is_some_and(below) {
            break;
        }
        // An allocation that spills is not wanted here: stop at its first spill.
        let mut tighter = mf.clone();
        match timing::stage("linear scan", || {
            regalloc::allocate_without_spills(&mut tighter, &target)
        }) {
            Ok(Some(a)) => (out, alloc) = (tighter, a),
            _ => break,
        }
        let mut candidate = original.clone();
        let done = write_back(&mut candidate, &out, block_of, budget, &alloc, None);
        if done.report.num_regs >= best.report.num_regs {
            break;
        }
        *k = candidate;
        best = done;
    }
    best
}

fn run_allocator(
    mf: &MachFunction<GpuInst>,
    budget: u32,
) -> Result<(MachFunction<GpuInst>, regalloc::Allocation), AllocError> {
    timing::stage("linear scan", || {
        let mut out = mf.clone();
        let a = regalloc::allocate_measured(&mut out, &GpuTarget::new(budget))?;
        Ok((out, a))
    })
}

/// The smallest budget above `failed` that allocates `prepared`, if any (binary search:
/// an instruction that fits in n registers fits in more).
fn smallest_budget(prepared: &Prepared, failed: u32) -> Option<u32> {
    let works = |b: u32| prepared.scan(b).is_ok();
    if failed >= MAX_BUDGET || !works(MAX_BUDGET) {
        return None;
    }
    let (mut lo, mut hi) = (failed, MAX_BUDGET);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if works(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// Allocates the kernel `prepared` was made from, `k` (fresh from instruction
/// selection), and renumbers what refers to its instruction indices (the line table
/// and the trap sites). The scans of `prepared` are shared with the other budgets
/// and placements tried on it.
pub fn allocate_selected(
    k: &mut Kernel,
    prepared: &Prepared,
    lines: &mut Vec<Option<Span>>,
    traps: &mut [(usize, &'static str)],
    budget: u32,
    placement: Placement,
    room: Option<SharedRoom>,
) -> Result<RegReport, Diagnostic> {
    let done =
        allocate_prepared(k, prepared, budget, placement, room).map_err(|e| e.diagnostic())?;
    for t in traps.iter_mut() {
        t.0 = done.new_pc.get(t.0).map_or(t.0, |&p| p as usize);
    }
    *lines = done.lines;
    Ok(done.report)
}

#[cfg(test)]
mod tests;
