//! Machine functions: a target's instructions over virtual registers, in blocks with
//! their successors, before and after register allocation.
//!
//! A back end's instruction selection produces a [`MachFunction`] whose operands are
//! [`Reg::Virt`] (plus [`Reg::Phys`] where the calling convention pins a register);
//! the register allocator (shared by every target) replaces each virtual register by
//! a physical one, inserting spill and reload instructions that the target builds
//! through [`RegTarget`]. The target's instruction type tells the allocator what it
//! reads and writes through [`MachInst`]; the allocator knows nothing else about it.

use cranelift_entity::{entity_impl, PrimaryMap};
use smallvec::SmallVec;

use crate::source::Span;

/// A register file of the target (scalar and vector on Nyuzi; registers and predicates
/// on dac-gpu). Numbered by the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegClass(pub u8);

/// A virtual register: one value of one register class, defined by the instruction
/// selector. Its class is in [`MachFunction::vregs`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VReg(u32);
entity_impl!(VReg, "%");

/// A physical register: a class and the hardware register number within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PReg {
    pub class: RegClass,
    pub index: u8,
}

/// A register operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reg {
    Virt(VReg),
    Phys(PReg),
}

/// A block of a machine function.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MBlock(u32);
entity_impl!(MBlock, "mb");

/// A spill slot in the function's frame, sized for one register of its class.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpillSlot(u32);
entity_impl!(SpillSlot, "spill");

/// How an instruction accesses a register operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperandKind {
    Use,
    Def,
    /// Read and written by the same instruction, so both must be the same register:
    /// masked Nyuzi instructions merge into their destination's old value.
    UseDef,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Operand {
    pub reg: Reg,
    pub kind: OperandKind,
}

/// What the register allocator needs to know about one target instruction.
pub trait MachInst: Clone + std::fmt::Debug {
    /// Every register operand, each once per occurrence, uses before defs.
    fn operands(&self, out: &mut SmallVec<[Operand; 8]>);
    /// Replaces every register operand `r` by `f(r)`, in the order of `operands`.
    fn map_regs(&mut self, f: &mut dyn FnMut(Reg) -> Reg);
    /// `Some((dest, src))` for a plain register copy the allocator may coalesce.
    fn as_move(&self) -> Option<(Reg, Reg)>;
    /// Physical registers the instruction destroys besides its defs (calls).
    fn clobbers(&self) -> &'static [PReg];
    /// Whether the instruction's only effect is writing the registers `operands`
    /// lists as defs, so that deleting it changes nothing when none of them is read
    /// afterwards (dead-code elimination, [`super::dce`]): no memory access that can
    /// write or fault, no control flow, no queue, no register it does not list. A
    /// target answers `false` whenever unsure.
    fn is_pure(&self) -> bool;
    /// A copy of the instruction for the register allocator to place just before a
    /// read of the value it defines, instead of keeping that value in a register or a
    /// spill slot (rematerialization, [`super::regalloc`]), when executing it there
    /// gives the same value and does nothing else: it has no side effect and cannot
    /// fault, and it reads only immediates, registers that hold one value for the
    /// whole function and are never allocated (special registers, a context pointer
    /// the code never writes) and memory that does not change while the function runs
    /// (a read-only parameter space). `None` otherwise, and whenever unsure. The
    /// allocator rematerializes only an instruction whose one register operand
    /// besides such reads is the definition of a virtual register, the only one of
    /// that register. The copy may differ from the original in what does not reach
    /// the executed code (a target's bookkeeping, such as which input instruction it
    /// is).
    fn rematerialize(&self) -> Option<Self>;
}

/// What the register allocator needs to know about one target.
pub trait RegTarget {
    type Inst: MachInst;
    /// Registers the allocator may assign in `class`, in order of preference.
    /// Registers reserved by the ABI (stack pointer, context pointer) are not listed.
    fn allocatable(&self, class: RegClass) -> &[PReg];
    /// Bytes of a spill slot of `class`.
    fn spill_size(&self, class: RegClass) -> u32;
    /// Whether values of `class` can be spilled. A class the target cannot store
    /// to memory directly (dac-gpu's predicates) is never spilled: a function
    /// needing more of its registers at once than are allocatable fails to
    /// allocate. All classes by default.
    fn spillable(&self, class: RegClass) -> bool {
        let _ = class;
        true
    }
    /// Stores physical register `reg` to `slot`.
    fn spill(&self, slot: SpillSlot, reg: PReg) -> SmallVec<[Self::Inst; 2]>;
    /// Loads `slot` into physical register `reg`.
    fn reload(&self, slot: SpillSlot, reg: PReg) -> SmallVec<[Self::Inst; 2]>;
    /// A copy from `src` to `dest` (same class).
    fn copy(&self, dest: PReg, src: PReg) -> Self::Inst;
    /// Registers of other classes sharing storage with `reg`, such as a register
    /// pair and the two registers it is made of (dac-gpu's 64-bit values): the
    /// allocator never gives overlapping registers to values live at the same time,
    /// and a clobber of one clobbers what overlaps it. The relation may be given in
    /// one direction only. None by default.
    fn aliases(&self, reg: PReg) -> SmallVec<[PReg; 4]> {
        let _ = reg;
        SmallVec::new()
    }
    /// For classes sharing one register file: how many registers of its base class
    /// (the class counting 1) a register of `class` takes, such as 2 for a pair;
    /// 0 for a class not counted. With it, an allocation that stops at a spill can
    /// tell before scanning that a position needs more registers than there are.
    /// 0 for every class by default.
    fn storage_units(&self, class: RegClass) -> u32 {
        let _ = class;
        0
    }
    /// The operand register banks an instruction reading `reg` reads it from (two
    /// for a pair): an instruction reading two different registers of one bank
    /// waits a cycle for the second (dac-gpu models Maxwell's 4 banks, register
    /// number mod 4). Among free registers, the allocator prefers one whose banks
    /// differ from those of the other registers read with it. Banks are below 32;
    /// none by default.
    fn read_banks(&self, reg: PReg) -> SmallVec<[u32; 2]> {
        let _ = reg;
        SmallVec::new()
    }
}

/// One machine instruction and the source position it came from (for line tables
/// and fault reports).
#[derive(Clone, Debug)]
pub struct MachLine<I> {
    pub inst: I,
    pub span: Option<Span>,
}

#[derive(Clone, Debug)]
pub struct MachBlock<I> {
    pub insts: Vec<MachLine<I>>,
    /// Successors in the order the block's terminator names them.
    pub succs: SmallVec<[MBlock; 2]>,
}

impl<I> Default for MachBlock<I> {
    fn default() -> Self {
        MachBlock {
            insts: Vec::new(),
            succs: SmallVec::new(),
        }
    }
}

/// A function of target instructions. Blocks are laid out in `PrimaryMap` order; the
/// first is the entry. Before allocation the code is not in SSA form: instruction
/// selection turns block parameters into copies in the predecessors (splitting
/// critical edges), so a virtual register may be defined more than once.
#[derive(Clone, Debug)]
pub struct MachFunction<I> {
    pub name: String,
    pub blocks: PrimaryMap<MBlock, MachBlock<I>>,
    pub vregs: PrimaryMap<VReg, RegClass>,
    pub spill_slots: PrimaryMap<SpillSlot, RegClass>,
}

impl<I> MachFunction<I> {
    pub fn new(name: impl Into<String>) -> Self {
        MachFunction {
            name: name.into(),
            blocks: PrimaryMap::new(),
            vregs: PrimaryMap::new(),
            spill_slots: PrimaryMap::new(),
        }
    }

    pub fn new_vreg(&mut self, class: RegClass) -> VReg {
        self.vregs.push(class)
    }

    pub fn new_block(&mut self) -> MBlock {
        self.blocks.push(MachBlock::default())
    }
}
