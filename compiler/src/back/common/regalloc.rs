//! Register allocation by linear scan, shared by every target.
//!
//! [`allocate`] gives every virtual register of a [`MachFunction`] one physical
//! register of its class for its whole life, or spills it. Liveness comes from
//! backward dataflow over the CFG ([`super::liveness`]), so a value live around a
//! loop occupies its register over the whole loop, and the code need not be SSA. Each
//! virtual register's lifetime is a list of position ranges (with holes where it is
//! dead between a read and a later write); the scan visits them by start position,
//! as Poletto and Sarkar's linear scan does, and gives each the first register whose
//! current holders and fixed uses do not overlap it. Physical operands in the input
//! (arguments, results) and the registers an instruction clobbers are fixed ranges
//! that virtual registers avoid.
//!
//! When no register is free, the cheapest to spill of the current interval and the
//! holders of a register it could take is spilled, by spill weight (accesses, ten
//! times more per enclosing loop, per position of lifetime). It gets a [`SpillSlot`]
//! and its live range is *split* (see `spill`): in each block its value is held by
//! *pieces*, new virtual registers sharing the slot. Each write goes to a new piece,
//! stored to the slot just after; a read uses the block's current piece, or reloads
//! a new one just before. A piece ends at the block's end and before any line where
//! the round found the victim's register file full without it (a crowded region), so
//! that reads close together share one reload, a value stays in a register from a
//! write to the reads after it, and it is in memory only across the crowded regions
//! and the blocks that do not read it. Allocation then starts over, and the pieces
//! get registers like any value. A piece that does not fit is spilled *everywhere*:
//! each instruction reading it reloads it into a fresh short-lived virtual register
//! just before (unless the previous instruction wrote it), each writing it stores a
//! fresh one just after. These fresh registers are never spilled, nor are pieces
//! that only one instruction accesses; pieces are never split again. So each round
//! removes at least one spillable register for good (one of the input, split; or a
//! piece), and the process terminates; if even the fresh registers do not fit, the
//! instruction needs more registers than exist and allocation fails with an
//! [`AllocError`]. Values of a class the target cannot spill
//! ([`RegTarget::spillable`]) are treated like those temporaries. Splitting is one
//! pass over the code per round, and measuring the crowding one pass over the
//! lifetimes and one over the positions.
//!
//! The design is the "split, then spill what still does not fit" of allocators such
//! as LLVM's greedy allocator, at the granularity of blocks and crowded regions
//! within them: no value moves between registers, so no code is needed on CFG edges,
//! and since the slot holds the value after every write, any piece can reload it
//! anywhere. It does not yet hoist a reload out of a loop whose body reads the
//! value: each iteration reloads it once per block that reads it.
//!
//! A value whose only definition the target can execute again anywhere
//! ([`MachInst::rematerialize`]: a constant, an address, a read of a register or of
//! memory that never changes), or is a copy of such a value, and that this definition
//! reaches before every read, is *rematerialized* instead (the `remat` module): it gets
//! no slot, its definition is deleted, and a copy of the definition writes the fresh
//! register (a piece, shared by the reads that follow, as above) before the reads,
//! where a reload would have been. Its spill weight counts only its reads (each one
//! instruction executed again; no store), so such values are the first to leave
//! their registers. The fresh registers are never spilled either, so termination
//! is as above.
//!
//! A value live across an instruction that clobbers every register of its class (a
//! barrier) could never keep a register there; rather than spilling it everywhere,
//! it is stored to its slot just before such instructions and reloaded just after
//! (or, if it can be rematerialized, only written again just after), and keeps a
//! register elsewhere.
//!
//! A copy's destination prefers its source's register (and the physical register it
//! is copied from or to), so most copies that instruction selection makes for block
//! parameters and calls become copies of a register to itself, which are deleted.
//! Otherwise a value takes the first free register of its class, except on a target
//! with operand register banks ([`RegTarget::read_banks`]): when that register shares
//! a bank with a register already given to a value read by the same instruction, the
//! first free one that shares none is taken instead (no further into the class's list
//! than the registers given so far), so that the instruction reads its operands in one
//! cycle. Spill temporaries and pieces are chosen the same way.
//!
//! What the allocator assumes of a target:
//! * an instruction reads all its operands before writing any, so a result may
//!   share a register with an operand read for the last time (tied operands are
//!   [`OperandKind::UseDef`]);
//! * the instruction ending a block (a branch) writes no virtual register, since
//!   spill code goes right after the instruction writing a value;
//! * [`RegTarget::spill`] and [`RegTarget::reload`] use only the register given and
//!   registers that are not allocatable (the stack pointer), and so does a copy
//!   [`MachInst::rematerialize`] gives besides the register it writes;
//! * physical registers in the input are live from each write to the reads it
//!   reaches, like virtual ones; a physical register read but never written is
//!   live from the function's entry (an argument);
//! * registers of different classes sharing storage (a pair and its halves) are
//!   declared by [`RegTarget::aliases`]; each class is otherwise independent.

use std::collections::{BTreeMap, BTreeSet};

use std::fmt;

use cranelift_entity::{EntityRef, PrimaryMap};
use smallvec::SmallVec;

use super::liveness::{self, BlockAccess, InstAccess, Layout, Pos, Range, SLOT};
use super::mach::{
    MachFunction, MachInst, MachLine, Operand, OperandKind, PReg, Reg, RegClass, RegTarget,
    SpillSlot, VReg,
};
use crate::source::Span;
use crate::timing;
use remat::RematDef;

/// What allocation did, for the target's frame layout and prologue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// Every physical register the final code writes or clobbers, sorted (the target
    /// saves the callee-saved ones in its prologue). A register pair appears as the
    /// pair, not its halves.
    pub used: Vec<PReg>,
    /// Spill slots of the function (`func.spill_slots.len()`).
    pub spill_slots: u32,
    /// Virtual registers of the input given a spill slot: spilled everywhere, or
    /// only stored and reloaded around instructions clobbering their whole class.
    pub spilled_vregs: u32,
    /// Virtual registers of the input rematerialized instead ([`MachInst::rematerialize`]):
    /// their definition copied before each read, everywhere or only after
    /// instructions clobbering their whole class. They take no slot.
    pub rematerialized_vregs: u32,
    /// The most base-class registers ([`RegTarget::storage_units`]) the virtual
    /// registers held at one position, when the code needed no spill and clobbers no
    /// register: then it is what every budget's first round finds too, and no budget
    /// below it allocates the code ([`base_capacity`]). Measured by
    /// [`allocate_measured`] only.
    pub peak_units: Option<u32>,
}

/// Why a function cannot be allocated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocError {
    pub message: String,
    /// The source position of the instruction that needs more registers than
    /// exist, when that is the reason and the instruction has one.
    pub span: Option<Span>,
}

impl AllocError {
    fn new(message: String) -> Self {
        AllocError {
            message,
            span: None,
        }
    }
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "register allocation failed: {}", self.message)
    }
}

impl std::error::Error for AllocError {}

/// A line of code during allocation: an instruction of the input, a copy of a
/// rematerializable definition the allocator placed, or a spill or reload that the
/// target builds once the register it moves is known.
#[derive(Clone, Debug)]
enum Line<I> {
    Inst(MachLine<I>),
    /// Writes a value again instead of reloading it ([`MachInst::rematerialize`]).
    /// Kept apart from `Inst` so that a failed allocation gives back only the
    /// input's instructions.
    Remat(MachLine<I>),
    Reload {
        slot: SpillSlot,
        vreg: VReg,
        span: Option<Span>,
    },
    Spill {
        slot: SpillSlot,
        vreg: VReg,
        span: Option<Span>,
    },
}

/// The allocatable physical registers of every class in use. Liveness variables
/// number them first (`0..phys.len()`), then virtual registers.
struct PhysTable {
    phys: Vec<PReg>,
    /// Each register's number, at [`PhysTable::slot`] (`u32::MAX`: not allocatable):
    /// a table, since every operand of every round is looked up.
    index: Vec<u32>,
    by_class: BTreeMap<RegClass, Vec<usize>>,
    /// Per register: the registers sharing its storage, itself first.
    overlaps: Vec<SmallVec<[usize; 4]>>,
    /// Per class in use: its [`RegTarget::storage_units`].
    units: BTreeMap<RegClass, u32>,
    /// Allocatable registers of the base class (storage units 1).
    capacity: u32,
    /// Per register: the operand banks reading it takes, as a bit set
    /// ([`RegTarget::read_banks`]); all empty when the target has none.
    banks: Vec<u32>,
}

impl PhysTable {
    fn new<T: RegTarget>(target: &T, classes: &BTreeSet<RegClass>) -> Self {
        let mut table = PhysTable {
            phys: Vec::new(),
            index: Vec::new(),
            by_class: BTreeMap::new(),
            overlaps: Vec::new(),
            units: classes
                .iter()
                .map(|&c| (c, target.storage_units(c)))
                .collect(),
            capacity: 0,
            banks: Vec::new(),
        };
        for &class in classes {
            let mut regs = Vec::new();
            for &p in target.allocatable(class) {
                if p.class == class && table.number(p).is_none() {
                    let slot = Self::slot(p);
                    if table.index.len() <= slot {
                        table.index.resize(slot + 1, u32::MAX);
                    }
                    table.index[slot] = table.phys.len() as u32;
                    regs.push(table.phys.len());
                    table.phys.push(p);
                }
            }
            if table.units[&class] == 1 {
                table.capacity += regs.len() as u32;
            }
            table.by_class.insert(class, regs);
        }
        let bank_set = |p: PReg| {
            target
                .read_banks(p)
                .iter()
                .fold(0u32, |set, &b| set | 1 << (b % 32))
        };
        table.banks = table.phys.iter().map(|&p| bank_set(p)).collect();
        table.overlaps = (0..table.phys.len())
            .map(|r| smallvec::smallvec![r])
            .collect();
        for r in 0..table.phys.len() {
            for alias in target.aliases(table.phys[r]) {
                let Some(a) = table.number(alias) else {
                    continue;
                };
                if !table.overlaps[r].contains(&a) {
                    table.overlaps[r].push(a);
                }
                if !table.overlaps[a].contains(&r) {
                    table.overlaps[a].push(r);
                }
            }
        }
        table
    }

    /// Where `p` is in `index`.
    fn slot(p: PReg) -> usize {
        usize::from(p.class.0) << 8 | usize::from(p.index)
    }

    /// The number of allocatable register `p`.
    fn number(&self, p: PReg) -> Option<usize> {
        let n = *self.index.get(Self::slot(p))?;
        (n != u32::MAX).then_some(n as usize)
    }

    fn class_regs(&self, class: RegClass) -> &[usize] {
        self.by_class.get(&class).map_or(&[], |r| r)
    }
}

/// The function being allocated: its code, registers and slots, written back to the
/// [`MachFunction`] only when allocation succeeds.
struct Work<I> {
    name: String,
    blocks: Vec<Vec<Line<I>>>,
    succs: Vec<SmallVec<[usize; 2]>>,
    vregs: PrimaryMap<VReg, RegClass>,
    slots: PrimaryMap<SpillSlot, RegClass>,
    /// Per virtual register: made by spilling, so never spilled itself.
    unspillable: Vec<bool>,
    /// Per virtual register: its spill slot, once it needs one.
    slot_of: Vec<Option<SpillSlot>>,
    /// Per virtual register: spilled everywhere (it no longer occurs in the code).
    spilled: Vec<bool>,
    spilled_vregs: u32,
    /// Per virtual register of the input: how to write it again where it is read,
    /// when it can be ([`remat::remat_defs`]).
    remat_def: Vec<Option<RematDef<I>>>,
    /// Per virtual register of the input: how many instructions of the input read it.
    reads: Vec<u32>,
    /// Per virtual register: rematerialized somewhere (around a barrier or everywhere).
    rematerialized: Vec<bool>,
    /// Per virtual register: the spilled register it is a piece of ([`split`]), if it
    /// is one. A piece is never split again: spilled, it is spilled everywhere.
    piece_of: Vec<Option<VReg>>,
    /// Pieces made so far (each can be spilled once more: see the rounds' bound).
    pieces: usize,
}

/// A virtual register to take out of registers, and how: rematerialized where it
/// is read, or given a spill slot.
#[derive(Clone, Copy, Debug)]
struct Victim {
    vreg: VReg,
    remat: bool,
}

/// Allocates registers for `func` in place: afterwards every operand is
/// [`Reg::Phys`], spill and reload code is inserted and copies of a register to
/// itself are deleted. On error `func` is unchanged.
pub fn allocate<T: RegTarget>(
    func: &mut MachFunction<T::Inst>,
    target: &T,
) -> Result<Allocation, AllocError> {
    allocate_or_stop(func, target, false, false)?
        .ok_or_else(|| AllocError::new("the allocator stopped at a spill it must make".into()))
}

/// [`allocate`], also measuring [`Allocation::peak_units`] (when it applies), for a
/// caller that goes on to search for fewer registers.
pub fn allocate_measured<T: RegTarget>(
    func: &mut MachFunction<T::Inst>,
    target: &T,
) -> Result<Allocation, AllocError> {
    allocate_or_stop(func, target, false, true)?
        .ok_or_else(|| AllocError::new("the allocator stopped at a spill it must make".into()))
}

/// [`allocate`], unless that would spill: then `Ok(None)`, without the spilling
/// rounds (`func` unchanged). For a caller that searches for the fewest registers
/// that need no spill, and discards an allocation that spills.
pub fn allocate_without_spills<T: RegTarget>(
    func: &mut MachFunction<T::Inst>,
    target: &T,
) -> Result<Option<Allocation>, AllocError> {
    allocate_or_stop(func, target, true, false)
}

fn allocate_or_stop<T: RegTarget>(
    func: &mut MachFunction<T::Inst>,
    target: &T,
    stop_at_spill: bool,
    measure_peak: bool,
) -> Result<Option<Allocation>, AllocError> {
    let classes = validate(func)?;
    let phys = PhysTable::new(target, &classes);
    let mut work = Work {
        name: func.name.clone(),
        // Moved, not copied: a failed allocation puts them back (`give_back`).
        blocks: func
            .blocks
            .values_mut()
            .map(|b| {
                std::mem::take(&mut b.insts)
                    .into_iter()
                    .map(Line::Inst)
                    .collect()
            })
            .collect(),
        succs: func
            .blocks
            .values()
            .map(|b| b.succs.iter().map(|s| s.index()).collect())
            .collect(),
        vregs: func.vregs.clone(),
        slots: func.spill_slots.clone(),
        unspillable: func.vregs.values().map(|&c| !target.spillable(c)).collect(),
        slot_of: vec![None; func.vregs.len()],
        spilled: vec![false; func.vregs.len()],
        spilled_vregs: 0,
        remat_def: Vec::new(),
        reads: Vec::new(),
        rematerialized: vec![false; func.vregs.len()],
        piece_of: vec![None; func.vregs.len()],
        pieces: 0,
    };
    (work.remat_def, work.reads) = remat::remat_defs(&work, &phys);
    split_around_full_clobbers(&mut work, &phys);
    // The input's code, copied before the first spill rewrites it.
    let mut input = None;
    let mut measure = measure_peak && !clobbers_any(&work);
    // Each round that spills removes a spillable register for good: a register of
    // the input (split into pieces, which are never split again) or a piece (spilled
    // everywhere, through temporaries that are never spilled).
    let mut round = 0;
    // The liveness a round starts from, when the previous round's spill code leaves
    // it known (see `scan_round`).
    let mut carried: Option<liveness::Liveness> = None;
    while round <= func.vregs.len() + work.pieces + 1 {
        round += 1;
        let known = carried.take();
        match timing::stage("round", || {
            scan_round(&work, &phys, stop_at_spill, measure, known)
        }) {
            Round::Done(assign, peak) => {
                return Ok(Some(finish(func, target, work, &assign, peak)));
            }
            Round::Spill(..) if stop_at_spill => {
                give_back(func, work, input);
                return Ok(None);
            }
            Round::Spill(victims, crowding, live) => {
                measure = false;
                input.get_or_insert_with(|| input_lines(&work.blocks));
                timing::stage("spill", || spill(&mut work, &victims, &crowding));
                // Spilling replaces each victim, everywhere, by registers that live
                // within one block (pieces, reloads, rematerialized copies). Unless a
                // rematerialized definition reads registers (whose reads then move),
                // it touches no other register, whose liveness is then unchanged.
                if !victims.iter().any(|v| remat_reads_registers(&work, v)) {
                    let gone = victims.iter().map(|v| virt_var(v.vreg, &phys));
                    let nvars = phys.phys.len() + work.vregs.len();
                    carried = Some(live.without(gone, nvars));
                }
            }
            Round::Stuck(err) => {
                give_back(func, work, input);
                return Err(err);
            }
        }
    }
    let err = AllocError::new(format!("function {}: spilling did not converge", work.name));
    give_back(func, work, input);
    Err(err)
}

/// Whether `victim` is rematerialized from a definition that reads a virtual
/// register, or through a chain of copies.
fn remat_reads_registers<I: MachInst>(work: &Work<I>, victim: &Victim) -> bool {
    let Some(def) = work.remat_def[victim.vreg.index()]
        .as_ref()
        .filter(|_| victim.remat)
    else {
        return false;
    };
    let mut ops: SmallVec<[Operand; 8]> = SmallVec::new();
    def.inst.operands(&mut ops);
    let reads = ops
        .iter()
        .any(|o| o.kind != OperandKind::Def && matches!(o.reg, Reg::Virt(_)));
    reads || !def.via.is_empty()
}

/// The input's instructions in `blocks`: the lines other than the stores and reloads
/// the barrier split added, as long as no spill has rewritten them.
fn input_lines<I: Clone>(blocks: &[Vec<Line<I>>]) -> Vec<Vec<MachLine<I>>> {
    let insts = |lines: &Vec<Line<I>>| {
        let inst = |l: &Line<I>| match l {
            Line::Inst(ml) => Some(ml.clone()),
            _ => None,
        };
        lines.iter().filter_map(inst).collect()
    };
    blocks.iter().map(insts).collect()
}

/// Puts the input's instructions back into `func` after a failed allocation: `input`
/// when a spill rewrote `work`, else `work`'s own.
fn give_back<I>(func: &mut MachFunction<I>, work: Work<I>, input: Option<Vec<Vec<MachLine<I>>>>) {
    let lines = input.unwrap_or_else(|| {
        let insts = |lines: Vec<Line<I>>| {
            let inst = |l: Line<I>| match l {
                Line::Inst(ml) => Some(ml),
                _ => None,
            };
            lines.into_iter().filter_map(inst).collect()
        };
        work.blocks.into_iter().map(insts).collect()
    });
    for (block, insts) in func.blocks.values_mut().zip(lines) {
        block.insts = insts;
    }
}

/// Checks that every operand names an existing virtual register and every successor
/// an existing block; returns the register classes the function uses.
fn validate<I: MachInst>(func: &MachFunction<I>) -> Result<BTreeSet<RegClass>, AllocError> {
    let mut classes: BTreeSet<RegClass> = func.vregs.values().copied().collect();
    let mut ops = SmallVec::new();
    for (b, block) in func.blocks.iter() {
        if let Some(s) = block.succs.iter().find(|s| s.index() >= func.blocks.len()) {
            return Err(AllocError::new(format!(
                "function {}: block {b} names a missing successor {s}",
                func.name
            )));
        }
        for line in &block.insts {
            ops.clear();
            line.inst.operands(&mut ops);
            for op in &ops {
                match op.reg {
                    Reg::Virt(v) if !func.vregs.is_valid(v) => {
                        return Err(AllocError::new(format!(
                            "function {}: `{:?}` in block {b} uses undeclared register {v}",
                            func.name, line.inst
                        )))
                    }
                    Reg::Virt(_) => {}
                    Reg::Phys(p) => {
                        classes.insert(p.class);
                    }
                }
            }
            classes.extend(line.inst.clobbers().iter().map(|p| p.class));
        }
    }
    Ok(classes)
}

/// The outcome of one scan over the function.
enum Round {
    /// A register for every virtual register (indexed by [`VReg`]), and the peak of
    /// [`peak_units`] when it was measured.
    Done(Vec<Option<PReg>>, Option<u32>),
    /// Virtual registers to spill or rematerialize before trying again, where the
    /// code is too crowded for them to stay in a register, and the round's liveness.
    Spill(Vec<Victim>, Crowding, liveness::Liveness),
    Stuck(AllocError),
}

fn virt_var(v: VReg, phys: &PhysTable) -> u32 {
    (phys.phys.len() + v.index()) as u32
}

/// The liveness variable of a register, if it is tracked (reserved physical
/// registers are not).
fn var_of(reg: Reg, phys: &PhysTable) -> Option<u32> {
    match reg {
        Reg::Phys(p) => phys.number(p).map(|i| i as u32),
        Reg::Virt(v) => Some(virt_var(v, phys)),
    }
}

/// What one line reads, writes and clobbers, as liveness variables.
fn access<I: MachInst>(line: &Line<I>, phys: &PhysTable) -> InstAccess {
    let mut acc = InstAccess::default();
    match line {
        Line::Inst(ml) | Line::Remat(ml) => {
            let mut ops: SmallVec<[Operand; 8]> = SmallVec::new();
            ml.inst.operands(&mut ops);
            for op in &ops {
                let Some(var) = var_of(op.reg, phys) else {
                    continue;
                };
                if matches!(op.kind, OperandKind::Use | OperandKind::UseDef) {
                    acc.uses.push(var);
                }
                if matches!(op.kind, OperandKind::Def | OperandKind::UseDef) {
                    acc.defs.push(var);
                }
            }
            let clobbered = ml.inst.clobbers().iter();
            acc.clobbers
                .extend(clobbered.filter_map(|&p| var_of(Reg::Phys(p), phys)));
        }
        Line::Reload { vreg, .. } => acc.defs.push(virt_var(*vreg, phys)),
        Line::Spill { vreg, .. } => acc.uses.push(virt_var(*vreg, phys)),
    }
    acc
}

/// For each virtual register, the registers it is copied from or to.
fn move_hints<I: MachInst>(work: &Work<I>) -> Vec<SmallVec<[Reg; 2]>> {
    // Built empty, not cloned (`vec![x; n]` clones a SmallVec element by element).
    let mut hints: Vec<SmallVec<[Reg; 2]>> =
        (0..work.vregs.len()).map(|_| SmallVec::new()).collect();
    for line in work.blocks.iter().flatten() {
        let Line::Inst(ml) = line else { continue };
        if let Some((dest, src)) = ml.inst.as_move() {
            // `get_mut`: a move the operands do not list was never validated.
            if let Some(h) = virt(dest).and_then(|d| hints.get_mut(d.index())) {
                h.push(src);
            }
            if let Some(h) = virt(src).and_then(|s| hints.get_mut(s.index())) {
                h.push(dest);
            }
        }
    }
    hints
}

/// For each virtual register, when the target has operand banks: the other
/// registers read by the instructions that read it (each pair of an instruction's
/// reads once per instruction and side); empty lists otherwise. One pass over the
/// code.
fn read_partners<I: MachInst>(work: &Work<I>, phys: &PhysTable) -> Vec<SmallVec<[Reg; 4]>> {
    let mut partners: Vec<SmallVec<[Reg; 4]>> =
        (0..work.vregs.len()).map(|_| SmallVec::new()).collect();
    if phys.banks.iter().all(|&b| b == 0) {
        return partners;
    }
    let mut ops: SmallVec<[Operand; 8]> = SmallVec::new();
    let mut reads: SmallVec<[Reg; 8]> = SmallVec::new();
    for line in work.blocks.iter().flatten() {
        let Line::Inst(ml) = line else { continue };
        ops.clear();
        ml.inst.operands(&mut ops);
        reads.clear();
        for op in ops.iter().filter(|o| o.kind != OperandKind::Def) {
            if !reads.contains(&op.reg) {
                reads.push(op.reg);
            }
        }
        for &r in &reads {
            let Some(list) = virt(r).and_then(|v| partners.get_mut(v.index())) else {
                continue;
            };
            list.extend(reads.iter().copied().filter(|&o| o != r));
        }
    }
    partners
}

fn virt(r: Reg) -> Option<VReg> {
    match r {
        Reg::Virt(v) => Some(v),
        Reg::Phys(_) => None,
    }
}

fn block_accesses<I: MachInst>(work: &Work<I>, phys: &PhysTable) -> Vec<BlockAccess> {
    work.blocks
        .iter()
        .zip(&work.succs)
        .map(|(lines, succs)| BlockAccess {
            insts: lines.iter().map(|l| access(l, phys)).collect(),
            succs: succs.clone(),
        })
        .collect()
}

/// The register classes all of whose allocatable registers `inst` clobbers.
fn fully_clobbered<I: MachInst>(inst: &I, phys: &PhysTable) -> SmallVec<[RegClass; 2]> {
    let clobbers = inst.clobbers();
    if clobbers.is_empty() {
        return SmallVec::new();
    }
    let clobbered = |r: usize| {
        phys.overlaps[r]
            .iter()
            .any(|&o| clobbers.contains(&phys.phys[o]))
    };
    phys.by_class
        .iter()
        .filter(|(_, regs)| !regs.is_empty() && regs.iter().all(|&r| clobbered(r)))
        .map(|(&class, _)| class)
        .collect()
}

/// Stores each virtual register live across an instruction that clobbers every
/// register of its class (a barrier) to its spill slot just before, and reloads it
/// just after; one that can be rematerialized is only written again just after.
/// Such a register could never keep a register across the instruction; split this
/// way it still can everywhere else, instead of being spilled everywhere.
fn split_around_full_clobbers<I: MachInst>(work: &mut Work<I>, phys: &PhysTable) {
    // Most functions have no barrier: then nothing is split and liveness is not needed.
    let is_barrier = |line: &Line<I>| match line {
        Line::Inst(ml) => !fully_clobbered(&ml.inst, phys).is_empty(),
        _ => false,
    };
    if !work.blocks.iter().flatten().any(is_barrier) {
        return;
    }
    let blocks = block_accesses(work, phys);
    let nphys = phys.phys.len() as u32;
    let live = liveness::solve(&blocks, nphys as usize + work.vregs.len());
    let remat = remat::rematerializable(work, phys, &live);
    for (b, block) in blocks.iter().enumerate() {
        // (line, registers live across it), found walking backward.
        let mut crossing: Vec<(usize, Vec<VReg>)> = Vec::new();
        let mut live_now = live.live_out[b].clone();
        for (i, acc) in block.insts.iter().enumerate().rev() {
            let classes = match &work.blocks[b][i] {
                Line::Inst(ml) => fully_clobbered(&ml.inst, phys),
                _ => SmallVec::new(),
            };
            if !classes.is_empty() {
                let across: Vec<VReg> = live_now
                    .iter()
                    .filter(|&var| var >= nphys && !acc.defs.contains(&var))
                    .map(|var| VReg::new((var - nphys) as usize))
                    .filter(|&v| classes.contains(&work.vregs[v]) && !work.unspillable[v.index()])
                    .collect();
                if !across.is_empty() {
                    crossing.push((i, across));
                }
            }
            for &d in acc.defs.iter().chain(&acc.clobbers) {
                live_now.remove(d);
            }
            for &u in &acc.uses {
                live_now.insert(u);
            }
        }
        if crossing.is_empty() {
            continue;
        }
        let lines = std::mem::take(&mut work.blocks[b]);
        let mut out = Vec::with_capacity(lines.len() + 2 * crossing.len());
        for (i, line) in lines.into_iter().enumerate() {
            let across = match crossing.last() {
                Some((at, _)) if *at == i => crossing.pop().map(|c| c.1).unwrap_or_default(),
                _ => Vec::new(),
            };
            let span = match &line {
                Line::Inst(ml) => ml.span,
                _ => None,
            };
            for &v in across.iter().filter(|v| !remat[v.index()]) {
                let slot = slot_for(work, v);
                out.push(Line::Spill {
                    slot,
                    vreg: v,
                    span,
                });
            }
            out.push(line);
            for &v in &across {
                let copy = work.remat_def[v.index()].as_ref();
                let line = match copy.filter(|_| remat[v.index()]) {
                    Some(def) => {
                        let inst = def.inst.clone();
                        work.rematerialized[v.index()] = true;
                        Line::Remat(MachLine { inst, span })
                    }
                    None => Line::Reload {
                        slot: slot_for(work, v),
                        vreg: v,
                        span,
                    },
                };
                out.push(line);
            }
        }
        work.blocks[b] = out;
    }
}

/// Computes liveness (unless `known` gives it) and runs the linear scan once. When the
/// caller stops at a spill, a function needing more registers at some position than
/// there are spills without a scan.
fn scan_round<I: MachInst>(
    work: &Work<I>,
    phys: &PhysTable,
    stop_at_spill: bool,
    measure: bool,
    known: Option<liveness::Liveness>,
) -> Round {
    let blocks = timing::stage("accesses", || block_accesses(work, phys));
    let nvars = phys.phys.len() + work.vregs.len();
    let live = match known {
        Some(live) => {
            debug_assert!(
                live == liveness::solve(&blocks, nvars),
                "function {}: the liveness carried over a spill is not the code's",
                work.name
            );
            live
        }
        None => timing::stage("liveness", || liveness::solve(&blocks, nvars)),
    };
    let layout = liveness::layout(&blocks);
    let ranges = timing::stage("live ranges", || {
        liveness::live_ranges(&blocks, nvars, &live, &layout)
    });
    let vranges = &ranges[phys.phys.len()..];
    let peak = (stop_at_spill || measure).then(|| peak_units(work, phys, vranges));
    if stop_at_spill && phys.capacity > 0 && peak.is_some_and(|p| p > phys.capacity) {
        return Round::Spill(Vec::new(), Crowding::default(), live);
    }
    let (hints, remat, weights, partners) = timing::stage("weights and hints", || {
        let hints = move_hints(work);
        let remat = remat::rematerializable(work, phys, &live);
        let weights = spill_weights(work, vranges, &remat);
        (hints, remat, weights, read_partners(work, phys))
    });
    let scan = Scan {
        work,
        phys,
        fixed: &ranges[..phys.phys.len()],
        ranges: vranges,
        hints: &hints,
        weights: &weights,
        partners: &partners,
    };
    match timing::stage("scan", || scan.run()) {
        Ok(assign) => Round::Done(assign, peak.filter(|_| measure)),
        Err(ScanFail::Spill(victims)) => {
            let victim = |vreg: VReg| Victim {
                vreg,
                remat: remat[vreg.index()],
            };
            let victims: Vec<Victim> = victims.into_iter().map(victim).collect();
            let crowding = timing::stage("crowding", || {
                Crowding::new(work, phys, &ranges, &layout, &victims)
            });
            Round::Spill(victims, crowding, live)
        }
        Err(ScanFail::Stuck(v)) => Round::Stuck(stuck_error(work, &layout, &scan, v)),
    }
}

/// Whether any line of `work` clobbers a register (then the split around clobbers,
/// and the ranges, depend on the budget).
fn clobbers_any<I: MachInst>(work: &Work<I>) -> bool {
    work.blocks.iter().flatten().any(|line| match line {
        Line::Inst(ml) => !ml.inst.clobbers().is_empty(),
        _ => true,
    })
}

/// The allocatable base-class registers `target` gives `func`'s classes: a first round
/// whose [`Allocation::peak_units`] exceeds it stops at once (0: no base class).
pub fn base_capacity<T: RegTarget>(
    func: &MachFunction<T::Inst>,
    target: &T,
) -> Result<u32, AllocError> {
    Ok(PhysTable::new(target, &validate(func)?).capacity)
}

/// The most base-class registers ([`RegTarget::storage_units`]) the virtual registers
/// hold at one position: no allocation fits in fewer (fixed registers only add to it).
fn peak_units<I>(work: &Work<I>, phys: &PhysTable, ranges: &[Vec<Range>]) -> u32 {
    let end = ranges
        .iter()
        .filter_map(|r| r.last())
        .map(|r| r.end)
        .max()
        .unwrap_or(0) as usize;
    // Units coming live at each position, minus those going dead.
    let mut delta = vec![0i64; end + 2];
    for (v, rs) in ranges.iter().enumerate() {
        let units = phys
            .units
            .get(&work.vregs[VReg::new(v)])
            .copied()
            .unwrap_or(0);
        for r in rs.iter().filter(|_| units > 0) {
            delta[r.start as usize] += i64::from(units);
            delta[r.end as usize + 1] -= i64::from(units);
        }
    }
    let mut live = 0i64;
    let peak = delta.iter().map(|d| {
        live += d;
        live
    });
    peak.max().unwrap_or(0).max(0) as u32
}

/// Loop depth of each block: how many back edges (to a block at or before their
/// source in layout order) span it.
pub fn loop_depths(succs: &[SmallVec<[usize; 2]>]) -> Vec<u32> {
    let mut depth = vec![0u32; succs.len()];
    for (b, targets) in succs.iter().enumerate() {
        for &s in targets.iter().filter(|&&s| s <= b) {
            for d in &mut depth[s..=b] {
                *d += 1;
            }
        }
    }
    depth
}

/// What spilling each virtual register costs per position it frees: its reads and
/// writes, ten times more per enclosing loop, over the length of its lifetime. A
/// register `remat` marks costs its reads only: each is one instruction executed
/// again, and its definition goes (no store).
fn spill_weights<I: MachInst>(work: &Work<I>, ranges: &[Vec<Range>], remat: &[bool]) -> Vec<f64> {
    let depth = loop_depths(&work.succs);
    let mut weight = vec![0f64; work.vregs.len()];
    let mut ops: SmallVec<[Operand; 8]> = SmallVec::new();
    for (lines, &d) in work.blocks.iter().zip(&depth) {
        let per_access = 10f64.powi(d.min(4) as i32);
        for line in lines {
            let Line::Inst(ml) = line else { continue };
            ops.clear();
            ml.inst.operands(&mut ops);
            for op in &ops {
                let Reg::Virt(v) = op.reg else { continue };
                if !(remat[v.index()] && op.kind == OperandKind::Def) {
                    weight[v.index()] += per_access;
                }
            }
        }
    }
    for (w, r) in weight.iter_mut().zip(ranges) {
        if let (Some(first), Some(last)) = (r.first(), r.last()) {
            *w /= f64::from((last.end - first.start) / SLOT + 1);
        }
    }
    weight
}

enum ScanFail {
    Spill(Vec<VReg>),
    Stuck(VReg),
}

/// Which virtual registers hold each physical register during a scan.
struct Holding {
    /// Per physical register: the virtual registers given it (those whose ranges
    /// ended may be left in).
    holders: Vec<Vec<usize>>,
    /// Per physical register: the positions its holders cover together from the
    /// current value's start on, so that whether it is free is one intersection test.
    taken: Vec<Vec<Range>>,
    /// Per physical register: a position up to which it is known busy (fixed or
    /// taken) without a gap from an earlier value's start on. The scan visits values
    /// by start and every value holds its first position, so a value starting by
    /// then cannot have the register: most candidates are turned down by this one
    /// comparison instead of two intersection tests. Only an eviction frees positions,
    /// and it resets the register's entry.
    busy_through: Vec<Option<Pos>>,
}

/// One linear scan over the virtual registers' lifetimes.
struct Scan<'a, I> {
    work: &'a Work<I>,
    phys: &'a PhysTable,
    /// Positions where each allocatable physical register is fixed or clobbered.
    fixed: &'a [Vec<Range>],
    /// Lifetime of each virtual register (empty if it never occurs).
    ranges: &'a [Vec<Range>],
    hints: &'a [SmallVec<[Reg; 2]>],
    /// Spill weight of each virtual register (see [`spill_weights`]).
    weights: &'a [f64],
    /// The registers read with each virtual register ([`read_partners`]).
    partners: &'a [SmallVec<[Reg; 4]>],
}

impl<I> Scan<'_, I> {
    fn end(&self, v: usize) -> Pos {
        self.ranges[v].last().map_or(0, |r| r.end)
    }

    fn start(&self, v: usize) -> Pos {
        self.ranges[v].first().map_or(0, |r| r.start)
    }

    /// Registers the copies of `v` suggest, among `regs`.
    fn hinted(&self, v: usize, regs: &[usize], assign: &[Option<usize>]) -> SmallVec<[usize; 4]> {
        let mut out = SmallVec::new();
        for hint in &self.hints[v] {
            let r = match *hint {
                Reg::Phys(p) => self.phys.number(p),
                Reg::Virt(w) => assign.get(w.index()).copied().flatten(),
            };
            if let Some(r) = r.filter(|r| regs.contains(r)) {
                out.push(r);
            }
        }
        out
    }

    fn run(&self) -> Result<Vec<Option<PReg>>, ScanFail> {
        let nv = self.ranges.len();
        let mut order: Vec<usize> = (0..nv).filter(|&v| !self.ranges[v].is_empty()).collect();
        order.sort_by_key(|&v| (self.start(v), v));
        let mut assign: Vec<Option<usize>> = vec![None; nv];
        let nphys = self.phys.phys.len();
        let mut held = Holding {
            holders: vec![Vec::new(); nphys],
            taken: vec![Vec::new(); nphys],
            busy_through: vec![None; nphys],
        };
        let mut victims = Vec::new();
        // Per class: the furthest register into its allocatable list given so far.
        let mut top: BTreeMap<RegClass, usize> = BTreeMap::new();
        for &v in &order {
            let start = self.start(v);
            let regs = self.phys.class_regs(self.work.vregs[VReg::new(v)]);
            let hinted = self.hinted(v, regs, &assign);
            let mut free = hinted
                .iter()
                .copied()
                .find(|&r| self.free(r, v, start, &mut held));
            if free.is_none() && self.hints[v].is_empty() {
                free = self.first_free_apart(v, regs, &assign, &top, start, &mut held);
            } else if free.is_none() {
                // A copy's register may still be the one a later value is hinted to:
                // keep the first free one, as without banks.
                free = regs
                    .iter()
                    .copied()
                    .find(|&r| self.free(r, v, start, &mut held));
            }
            if let Some(r) = free {
                assign[v] = Some(r);
                self.hold(&mut held, r, v);
                let class = self.work.vregs[VReg::new(v)];
                let at = regs.iter().position(|&x| x == r).unwrap_or(0);
                let high = top.entry(class).or_insert(at);
                *high = (*high).max(at);
                continue;
            }
            match self.eviction(v, regs, &mut held.holders) {
                Some((r, cost)) if self.work.unspillable[v] || cost < self.weights[v] => {
                    for &o in &self.phys.overlaps[r] {
                        held.holders[o].retain(|&h| {
                            let keep = !liveness::intersects(&self.ranges[h], &self.ranges[v]);
                            if !keep {
                                assign[h] = None;
                                victims.push(VReg::new(h));
                            }
                            keep
                        });
                        held.taken[o] = self.coverage(&held.holders[o], self.start(v));
                        held.busy_through[o] = None;
                    }
                    assign[v] = Some(r);
                    self.hold(&mut held, r, v);
                }
                _ if self.work.unspillable[v] => return Err(ScanFail::Stuck(VReg::new(v))),
                _ => victims.push(VReg::new(v)),
            }
        }
        if victims.is_empty() {
            Ok(assign
                .into_iter()
                .map(|r| r.map(|r| self.phys.phys[r]))
                .collect())
        } else {
            victims.sort();
            Err(ScanFail::Spill(victims))
        }
    }

    /// The first register of `regs` free for `v`; when the target has operand banks
    /// and it shares a bank with a register read with `v` ([`read_partners`]) that
    /// already has its register, the first free one that shares none instead, if
    /// there is one no further into `regs` than the registers given so far (`top`,
    /// per class), so that avoiding a conflict does not by itself take a new
    /// register (the final count can still differ, since later choices change).
    fn first_free_apart(
        &self,
        v: usize,
        regs: &[usize],
        assign: &[Option<usize>],
        top: &BTreeMap<RegClass, usize>,
        start: Pos,
        held: &mut Holding,
    ) -> Option<usize> {
        let (at, first) = regs
            .iter()
            .enumerate()
            .find(|&(_, &r)| self.free(r, v, start, held))?;
        let mut taken = 0u32;
        for &p in &self.partners[v] {
            let r = match p {
                Reg::Phys(p) => self.phys.number(p),
                Reg::Virt(w) => assign.get(w.index()).copied().flatten(),
            };
            if let Some(r) = r {
                taken |= self.phys.banks[r];
            }
        }
        if taken & self.phys.banks[*first] == 0 {
            return Some(*first);
        }
        let class = self.work.vregs[VReg::new(v)];
        let limit = top.get(&class).copied().unwrap_or(0).max(at);
        let apart = regs[at + 1..=limit.min(regs.len() - 1)].iter().copied();
        apart
            .filter(|&r| taken & self.phys.banks[r] == 0)
            .find(|&r| self.free(r, v, start, held))
            .or(Some(*first))
    }

    /// Whether register `r` (and every register overlapping it) is free for all of
    /// `v`'s ranges (which begin at `start`), given the positions each register is
    /// taken at.
    #[inline]
    fn free(&self, r: usize, v: usize, start: Pos, held: &mut Holding) -> bool {
        let overlaps = &self.phys.overlaps[r];
        if overlaps
            .iter()
            .any(|&o| held.busy_through[o].is_some_and(|end| start <= end))
        {
            return false;
        }
        self.free_after_all(overlaps, v, start, held)
    }

    /// [`Scan::free`] past its first test: no overlapping register is known busy at
    /// `start`. Kept out of line so that the test, which turns down most candidates,
    /// is inlined in the scan's loop.
    #[inline(never)]
    fn free_after_all(&self, overlaps: &[usize], v: usize, start: Pos, held: &mut Holding) -> bool {
        overlaps.iter().all(|&o| {
            let (fixed, taken) = (&self.fixed[o], &held.taken[o]);
            let busy = covering_end(fixed, start).max(covering_end(taken, start));
            if busy.is_some() {
                held.busy_through[o] = busy;
                return false;
            }
            !liveness::intersects(fixed, &self.ranges[v])
                && !liveness::intersects(taken, &self.ranges[v])
        })
    }

    /// Gives register `r` to `v`. The positions before `v` starts are dropped from
    /// what `r` is taken at: the scan visits values by start, so nothing later can
    /// overlap them.
    fn hold(&self, held: &mut Holding, r: usize, v: usize) {
        held.holders[r].push(v);
        let taken = &mut held.taken[r];
        let start = self.start(v);
        taken.drain(..taken.partition_point(|x| x.end < start));
        taken.extend_from_slice(&self.ranges[v]);
        liveness::normalize(taken);
    }

    /// The positions from `start` on that the virtual registers `holders` cover.
    fn coverage(&self, holders: &[usize], start: Pos) -> Vec<Range> {
        let ranges = holders.iter().flat_map(|&h| &self.ranges[h]);
        let mut out: Vec<Range> = ranges.copied().filter(|x| x.end >= start).collect();
        liveness::normalize(&mut out);
        out
    }

    /// The register `v` could take by spilling the holders overlapping it, choosing
    /// the one whose such holders weigh least; with their total weight. Holders whose
    /// ranges ended before `v` starts are dropped from `holders` first: they can
    /// overlap nothing from here on.
    fn eviction(
        &self,
        v: usize,
        regs: &[usize],
        holders: &mut [Vec<usize>],
    ) -> Option<(usize, f64)> {
        let start = self.start(v);
        let mut best: Option<(usize, f64)> = None;
        for &r in regs {
            let overlaps = &self.phys.overlaps[r];
            for &o in overlaps {
                holders[o].retain(|&h| self.end(h) >= start);
            }
            if overlaps
                .iter()
                .any(|&o| liveness::intersects(&self.fixed[o], &self.ranges[v]))
            {
                continue;
            }
            let overlapping = overlaps
                .iter()
                .flat_map(|&o| &holders[o])
                .filter(|&&h| liveness::intersects(&self.ranges[h], &self.ranges[v]));
            let mut cost = 0f64;
            let mut evictable = true;
            for &h in overlapping {
                evictable &= !self.work.unspillable[h];
                cost += self.weights[h];
            }
            if evictable && best.is_none_or(|(_, c)| cost < c) {
                best = Some((r, cost));
            }
        }
        best
    }
}

/// The end of the range of `ranges` (sorted, disjoint) that holds `pos`, if any.
fn covering_end(ranges: &[Range], pos: Pos) -> Option<Pos> {
    let r = ranges.get(ranges.partition_point(|r| r.end < pos))?;
    (r.start <= pos).then_some(r.end)
}

/// The error for a spill temporary `v` that found no register: names the
/// instruction it serves.
fn stuck_error<I: MachInst>(
    work: &Work<I>,
    layout: &Layout,
    scan: &Scan<'_, I>,
    v: VReg,
) -> AllocError {
    let pos = scan.start(v.index());
    let b = layout
        .block_from
        .partition_point(|&from| from <= pos)
        .max(1)
        - 1;
    let first = ((pos - layout.block_from[b]) / SLOT).saturating_sub(1) as usize;
    let served = work.blocks[b].iter().skip(first).find_map(|l| match l {
        Line::Inst(ml) => Some((format!("{:?}", ml.inst), ml.span)),
        _ => None,
    });
    let (inst, span) = served.unwrap_or_else(|| ("?".to_string(), None));
    let class = work.vregs[v];
    let n = scan.phys.class_regs(class).len();
    AllocError {
        message: format!(
            "function {}: instruction `{inst}` in block {} needs more registers of class {} \
             than the {n} allocatable ones not fixed or clobbered there",
            work.name, b, class.0
        ),
        span,
    }
}

/// The spill slot of `v`, made on first use.
fn slot_for<I>(work: &mut Work<I>, v: VReg) -> SpillSlot {
    if let Some(slot) = work.slot_of[v.index()] {
        return slot;
    }
    let slot = work.slots.push(work.vregs[v]);
    work.slot_of[v.index()] = Some(slot);
    work.spilled_vregs += 1;
    slot
}

/// Where the code of the round that chose the victims was too crowded for a value of
/// each victim's class to stay in a register: per line, how many registers of the
/// class's register file the other values (not the victims) and the fixed and
/// clobbered registers held there. [`spill`] ends a victim's piece before such a
/// line, so that its pieces stay out of the regions where it could not keep a
/// register.
#[derive(Default)]
struct Crowding {
    /// First position of each line, per block ([`Layout::inst_base`]).
    base: Vec<Vec<Pos>>,
    /// Per register file of a victim: its allocatable registers (in base-class units
    /// for the classes counting them, [`RegTarget::storage_units`]), and how many the
    /// others held at each line (the most over the line's positions).
    files: Vec<(u32, Vec<u32>)>,
    /// Per class of a victim: its file (an index into `files`) and the registers of
    /// the file one of its values takes.
    file_of: BTreeMap<RegClass, (usize, u32)>,
}

impl Crowding {
    /// Measures the crowding of the code whose lifetimes (physical registers first,
    /// as liveness numbers them) are `ranges`, for the classes of `victims`. One pass
    /// over the ranges and one over the positions.
    fn new<I>(
        work: &Work<I>,
        phys: &PhysTable,
        ranges: &[Vec<Range>],
        layout: &Layout,
        victims: &[Victim],
    ) -> Self {
        let mut out = Crowding {
            base: layout.inst_base.clone(),
            ..Crowding::default()
        };
        // The classes counting storage units share one file (a pair and its halves).
        let mut file_by_key: BTreeMap<Option<RegClass>, usize> = BTreeMap::new();
        let mut file_of_class = |class: RegClass, files: &mut Vec<(u32, Vec<u32>)>| {
            let units = phys.units.get(&class).copied().unwrap_or(0);
            let (key, capacity, size) = if units > 0 {
                (None, phys.capacity, units)
            } else {
                (Some(class), phys.class_regs(class).len() as u32, 1)
            };
            let file = *file_by_key.entry(key).or_insert_with(|| {
                files.push((capacity, Vec::new()));
                files.len() - 1
            });
            (file, size)
        };
        for victim in victims {
            let class = work.vregs[victim.vreg];
            let file = file_of_class(class, &mut out.files);
            out.file_of.insert(class, file);
        }
        let end = layout.block_to.last().map_or(0, |&e| e as usize + 1);
        let mut delta = vec![vec![0i64; end + 1]; out.files.len()];
        let nphys = phys.phys.len();
        let mut is_victim = vec![false; work.vregs.len()];
        for victim in victims {
            is_victim[victim.vreg.index()] = true;
        }
        for (var, rs) in ranges.iter().enumerate() {
            let class = match var.checked_sub(nphys) {
                None => phys.phys[var].class,
                Some(v) if is_victim[v] => continue,
                Some(v) => work.vregs[VReg::new(v)],
            };
            let units = phys.units.get(&class).copied().unwrap_or(0);
            let (key, size) = if units > 0 {
                (None, units)
            } else {
                (Some(class), 1)
            };
            let Some(&file) = file_by_key.get(&key) else {
                continue;
            };
            for r in rs {
                delta[file][r.start as usize] += i64::from(size);
                delta[file][r.end as usize + 1] -= i64::from(size);
            }
        }
        for (file, delta) in out.files.iter_mut().zip(delta) {
            let mut held = 0i64;
            let mut per_line = vec![0u32; end.div_ceil(SLOT as usize)];
            for (pos, d) in delta.iter().take(end).enumerate() {
                held += d;
                let line = &mut per_line[pos / SLOT as usize];
                *line = (*line).max(held.max(0) as u32);
            }
            file.1 = per_line;
        }
        out
    }

    /// Whether a value of `class` could not stay in a register across line `i` of
    /// block `b`, the others holding what they held there.
    fn crowded(&self, b: usize, i: usize, class: RegClass) -> bool {
        let Some(&(file, size)) = self.file_of.get(&class) else {
            return false;
        };
        let Some(&pos) = self.base.get(b).and_then(|lines| lines.get(i)) else {
            return false;
        };
        let (capacity, held) = &self.files[file];
        held.get((pos / SLOT) as usize)
            .is_some_and(|&h| h + size > *capacity)
    }
}

/// The state of [`spill`] within one block: the piece each split victim is in a
/// register as, and the pieces made.
struct Pieces {
    /// Per virtual register when the round began: a victim to split.
    split: Vec<bool>,
    /// (split victim, its piece holding its value here): at most one per victim.
    current: SmallVec<[(VReg, VReg); 4]>,
    /// Pieces made in this block, and how many instructions access each.
    made: Vec<(VReg, u32)>,
}

impl Pieces {
    fn is_split(&self, v: VReg) -> bool {
        self.split.get(v.index()).copied().unwrap_or(false)
    }

    fn current(&self, v: VReg) -> Option<VReg> {
        self.current.iter().find(|c| c.0 == v).map(|c| c.1)
    }

    /// Notes an instruction's access to piece `p`.
    fn accessed(&mut self, p: VReg) {
        if let Some(m) = self.made.iter_mut().rev().find(|m| m.0 == p) {
            m.1 += 1;
        }
    }
}

/// Takes the victims out of their registers: each gets a spill slot, or is marked
/// rematerialized, and every line that touches it is rewritten.
///
/// A victim of the input is *split*: in each block its value is held by *pieces*,
/// new virtual registers that share its slot (or its rematerializable definition).
/// An instruction writing it writes a new piece, stored to the slot just after; an
/// instruction reading it reads the current piece of the block, or, when there is
/// none, a new piece reloaded (or written by a copy of its definition) just before.
/// So reads close together in a block share one reload, and the value stays in a
/// register from a write to the reads after it. A piece ends at the block's end
/// (each block's first read reloads), and before a line where the round found no
/// register of the victim's class free ([`Crowding`]): the next read reloads after
/// the crowded region. Pieces are ordinary spillable registers: the next round gives
/// them registers where they fit, and spills those that do not. The slot holds the
/// value after every write, so a piece's value is the slot's, and spilling a piece
/// needs no new slot. A piece accessed by one instruction only is as short as a
/// temporary can be, and is made unspillable like one.
///
/// A piece chosen as a victim in a later round is spilled *everywhere*, as a victim of
/// the input was before splitting: each instruction reading it reloads into a fresh
/// unspillable register just before, each writing it stores one just after, and an
/// instruction reading what the previous one wrote uses its register. Pieces are never
/// split again, so every register of the input is split once at most and the rounds
/// end.
///
/// A rematerialized victim's definition is deleted, with those of the registers it was
/// copied from that nothing else reads.
fn spill<I: MachInst>(work: &mut Work<I>, victims: &[Victim], crowding: &Crowding) {
    let mut split = vec![false; work.vregs.len()];
    for &Victim { vreg: v, remat } in victims {
        let piece = work.piece_of[v.index()].is_some();
        // A piece is of its victim's kind: rematerialized when it has no slot.
        let remat = if piece {
            work.slot_of[v.index()].is_none()
        } else {
            remat
        };
        if remat {
            if !piece {
                work.rematerialized[v.index()] = true;
                // Deleted like a rematerialized register's definition: no slot.
                for u in remat::dead_sources(work, v) {
                    work.spilled[u.index()] = true;
                }
            }
        } else {
            slot_for(work, v);
        }
        work.spilled[v.index()] = true;
        split[v.index()] = !piece;
    }
    let mut pieces = Pieces {
        split,
        current: SmallVec::new(),
        made: Vec::new(),
    };
    let blocks = std::mem::take(&mut work.blocks);
    work.blocks = blocks
        .into_iter()
        .enumerate()
        .map(|(b, lines)| {
            // Room for a reload or a store beside most lines: growing a block's
            // vector of large lines by doubling copied it over and over.
            let mut out = Vec::with_capacity(lines.len() * 2);
            let mut prev_writes = SmallVec::new();
            pieces.current.clear();
            pieces.made.clear();
            for (i, line) in lines.into_iter().enumerate() {
                let crowded = |class: RegClass| crowding.crowded(b, i, class);
                match line {
                    Line::Inst(ml) => {
                        prev_writes =
                            rewrite_inst(work, ml, &prev_writes, &mut pieces, &crowded, &mut out)
                    }
                    line => {
                        pieces.current.retain(|c| !crowded(work.vregs[c.0]));
                        match line {
                            // Stores and reloads of a register around a call (see
                            // `split_around_full_clobbers`) are redundant once it
                            // lives in its slot.
                            Line::Reload { vreg, .. } | Line::Spill { vreg, .. }
                                if work.spilled[vreg.index()] => {}
                            // So are its copies after such instructions, once it is
                            // rematerialized where read. (A register with a copy is
                            // one `rematerializable` marks in every round, never
                            // given a slot.)
                            Line::Remat(ml) if remat_writes_spilled(work, &ml.inst) => {}
                            other => out.push(other),
                        }
                    }
                }
            }
            for &(p, accesses) in &pieces.made {
                if accesses <= 1 {
                    work.unspillable[p.index()] = true;
                }
            }
            out
        })
        .collect();
}

/// Whether `inst`, a copy of a rematerializable definition, writes a spilled register.
fn remat_writes_spilled<I: MachInst>(work: &Work<I>, inst: &I) -> bool {
    let mut ops: SmallVec<[Operand; 8]> = SmallVec::new();
    inst.operands(&mut ops);
    ops.iter().any(|op| match op.reg {
        Reg::Virt(v) => op.kind != OperandKind::Use && work.spilled[v.index()],
        Reg::Phys(_) => false,
    })
}

/// A new virtual register of `class` for spill code: never spilled itself.
fn fresh_temp<I>(work: &mut Work<I>, class: RegClass) -> VReg {
    work.unspillable.push(true);
    work.slot_of.push(None);
    work.spilled.push(false);
    work.remat_def.push(None);
    work.reads.push(0);
    work.rematerialized.push(false);
    work.piece_of.push(None);
    work.vregs.push(class)
}

/// A new piece of the split victim `v` ([`spill`]): spillable, sharing `v`'s slot or
/// its rematerializable definition, and from now on `v`'s current piece in the block.
fn new_piece<I: MachInst>(work: &mut Work<I>, v: VReg, pieces: &mut Pieces) -> VReg {
    let p = fresh_temp(work, work.vregs[v]);
    work.unspillable[p.index()] = false;
    work.slot_of[p.index()] = work.slot_of[v.index()];
    if work.slot_of[v.index()].is_none() {
        let def = work.remat_def[v.index()].as_ref();
        work.remat_def[p.index()] = def.map(|d| RematDef {
            inst: d.writing(v, p),
            via: SmallVec::new(),
        });
    }
    work.piece_of[p.index()] = Some(v);
    work.pieces += 1;
    pieces.current.retain(|c| c.0 != v);
    pieces.current.push((v, p));
    pieces.made.push((p, 0));
    p
}

/// Appends `ml` to `out` with each spilled register replaced by a register holding
/// it: for a victim split this round, its current piece in the block or a new one
/// (see [`spill`]); for one spilled everywhere, a fresh one per instruction. It is
/// reloaded before if read (unless the piece already holds the value) and stored
/// after if written; tied operands are both. A value spilled everywhere that the
/// previous instruction of the block wrote (`prev_writes`: spilled register and the
/// fresh one that held it) is read from that register instead of reloaded. A
/// rematerialized register is written before by a copy of its definition instead of
/// reloaded, and its definition (which writes nothing else) is left out. Pieces that
/// would stay in a register across this line where their class is `crowded` end
/// first. Returns
/// what this instruction writes.
fn rewrite_inst<I: MachInst>(
    work: &mut Work<I>,
    mut ml: MachLine<I>,
    prev_writes: &[(VReg, VReg)],
    pieces: &mut Pieces,
    crowded: &dyn Fn(RegClass) -> bool,
    out: &mut Vec<Line<I>>,
) -> SmallVec<[(VReg, VReg); 2]> {
    let mut ops: SmallVec<[Operand; 8]> = SmallVec::new();
    ml.inst.operands(&mut ops);
    // (spilled, read, written)
    let mut accessed: SmallVec<[(VReg, bool, bool); 4]> = SmallVec::new();
    for op in &ops {
        let Reg::Virt(v) = op.reg else { continue };
        if !work.spilled[v.index()] {
            continue;
        }
        let i = accessed.iter().position(|a| a.0 == v).unwrap_or_else(|| {
            accessed.push((v, false, false));
            accessed.len() - 1
        });
        accessed[i].1 |= matches!(op.kind, OperandKind::Use | OperandKind::UseDef);
        accessed[i].2 |= matches!(op.kind, OperandKind::Def | OperandKind::UseDef);
    }
    if !pieces.current.is_empty() {
        let touched = |v: VReg| accessed.iter().any(|a| a.0 == v);
        pieces
            .current
            .retain(|c| touched(c.0) || !crowded(work.vregs[c.0]));
    }
    if accessed.is_empty() {
        out.push(Line::Inst(ml));
        return SmallVec::new();
    }
    let remat = |v: VReg| work.slot_of[v.index()].is_none();
    if accessed.iter().any(|&(v, _, written)| written && remat(v)) {
        return SmallVec::new();
    }
    // (spilled, register holding it, needs a reload, written)
    let mut temps: SmallVec<[(VReg, VReg, bool, bool); 4]> = SmallVec::new();
    for &(v, read, written) in &accessed {
        if pieces.is_split(v) {
            let (p, reload) = match pieces.current(v) {
                Some(p) if read => (p, false),
                _ => (new_piece(work, v, pieces), read),
            };
            pieces.accessed(p);
            temps.push((v, p, reload, written));
            continue;
        }
        let forwarded = prev_writes.iter().find(|w| w.0 == v && read);
        let t = match forwarded {
            Some(&(_, t)) => t,
            None => fresh_temp(work, work.vregs[v]),
        };
        temps.push((v, t, read && forwarded.is_none(), written));
    }
    for &(v, t, read, _) in &temps {
        if !read {
            continue;
        }
        let remat = work.remat_def[v.index()].as_ref();
        out.push(match (work.slot_of[v.index()], remat) {
            (Some(slot), _) => Line::Reload {
                slot,
                vreg: t,
                span: ml.span,
            },
            (None, Some(def)) => Line::Remat(MachLine {
                inst: def.writing(v, t),
                span: ml.span,
            }),
            // A spilled register has a slot or a copy of its definition.
            (None, None) => continue,
        });
    }
    let slot = |v: VReg| work.slot_of[v.index()].unwrap_or(SpillSlot::new(0));
    ml.inst.map_regs(&mut |r| match r {
        Reg::Virt(v) => temps
            .iter()
            .find(|t| t.0 == v)
            .map_or(r, |t| Reg::Virt(t.1)),
        Reg::Phys(_) => r,
    });
    let span = ml.span;
    out.push(Line::Inst(ml));
    for &(v, t, _, written) in &temps {
        if written {
            out.push(Line::Spill {
                slot: slot(v),
                vreg: t,
                span,
            });
        }
    }
    temps
        .iter()
        .filter(|t| t.3)
        .map(|&(v, t, _, _)| (v, t))
        .collect()
}

/// Writes the allocated code back into `func`: physical registers in every operand,
/// spill and reload code built by the target, copies of a register to itself gone.
fn finish<T: RegTarget>(
    func: &mut MachFunction<T::Inst>,
    target: &T,
    work: Work<T::Inst>,
    assign: &[Option<PReg>],
    peak_units: Option<u32>,
) -> Allocation {
    // Every occurring virtual register has a register (the scan saw all of them).
    let reg_of = |v: VReg| assign.get(v.index()).copied().flatten();
    for (block, lines) in func.blocks.values_mut().zip(work.blocks) {
        let mut insts = Vec::with_capacity(lines.len());
        for line in lines {
            match line {
                Line::Inst(mut ml) | Line::Remat(mut ml) => {
                    ml.inst.map_regs(&mut |r| match r {
                        Reg::Virt(v) => reg_of(v).map_or(r, Reg::Phys),
                        Reg::Phys(_) => r,
                    });
                    match ml.inst.as_move() {
                        Some((dest, src)) if dest == src => {}
                        _ => insts.push(ml),
                    }
                }
                Line::Reload { slot, vreg, span } => {
                    if let Some(p) = reg_of(vreg) {
                        let code = target.reload(slot, p);
                        insts.extend(code.into_iter().map(|inst| MachLine { inst, span }));
                    }
                }
                Line::Spill { slot, vreg, span } => {
                    if let Some(p) = reg_of(vreg) {
                        let code = target.spill(slot, p);
                        insts.extend(code.into_iter().map(|inst| MachLine { inst, span }));
                    }
                }
            }
        }
        block.insts = insts;
    }
    func.vregs = work.vregs;
    func.spill_slots = work.slots;
    Allocation {
        used: written_regs(func),
        spill_slots: func.spill_slots.len() as u32,
        spilled_vregs: work.spilled_vregs,
        rematerialized_vregs: work.rematerialized.iter().filter(|&&r| r).count() as u32,
        peak_units,
    }
}

/// Every physical register the code writes or clobbers, sorted.
fn written_regs<I: MachInst>(func: &MachFunction<I>) -> Vec<PReg> {
    let mut used: BTreeSet<PReg> = BTreeSet::new();
    let mut ops: SmallVec<[Operand; 8]> = SmallVec::new();
    for line in func.blocks.values().flat_map(|b| &b.insts) {
        ops.clear();
        line.inst.operands(&mut ops);
        for op in &ops {
            if let (Reg::Phys(p), OperandKind::Def | OperandKind::UseDef) = (op.reg, op.kind) {
                used.insert(p);
            }
        }
        used.extend(line.inst.clobbers().iter().copied());
    }
    used.into_iter().collect()
}

mod remat;
#[cfg(test)]
mod tests;
