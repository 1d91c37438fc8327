//! Nyuzi machine instructions over [`Reg`] operands: what instruction selection
//! produces and the register allocator rewrites, before frame layout and encoding.
//!
//! Most variants mirror one [`sim::nyuzi::Inst`] format with registers still virtual;
//! a few are pseudo-instructions that need the frame layout or the final code address
//! and are expanded by [`super::emit`]: [`MInst::FrameAddr`], [`MInst::Spill`],
//! [`MInst::Reload`], [`MInst::AddrOf`] (`movehi`+`or` with a relocation), branches to
//! machine blocks, [`MInst::Call`] and [`MInst::Ret`] (the epilogue).
//!
//! Operand conventions for the allocator ([`MachInst`]): a masked instruction merges
//! into its destination's old value, so its destination is `UseDef`; `store_sync`
//! reads the value to store and writes the success flag into the same register
//! (`UseDef`). Calls name the physical argument registers they read and the result
//! registers they write, and clobber every caller-saved register.

use smallvec::SmallVec;

use sim::nyuzi::{AluOp, MemOp, RFmt};

use super::abi::{s, v, RuntimeFn, GP, SCALAR, VECTOR};
use super::object::RelocTarget;
use crate::back::common::mach::{
    MBlock, MachInst, Operand, OperandKind, PReg, Reg, RegClass, RegTarget, SpillSlot,
};
use crate::ir::StackSlot;

/// A frame object whose address instruction selection takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameObj {
    /// An IR stack slot of the function.
    Slot(StackSlot),
    /// The word a masked-off lane of a per-lane byte/halfword store writes to.
    Scratch,
}

/// What a call jumps to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callee {
    Function(String),
    Runtime(RuntimeFn),
}

impl Callee {
    pub fn reloc(&self) -> RelocTarget {
        match self {
            Callee::Function(n) => RelocTarget::Function(n.clone()),
            Callee::Runtime(r) => RelocTarget::Runtime(*r),
        }
    }
}

#[derive(Clone, Debug)]
pub enum MInst {
    /// Format R. `src1` is `None` for one-operand ops. With `mask`, `dest` merges.
    R {
        op: AluOp,
        fmt: RFmt,
        dest: Reg,
        src1: Option<Reg>,
        src2: Reg,
        mask: Option<Reg>,
    },
    /// Format I (fmt 0 scalar / 1 vector). `src1` is `None` for one-operand ops
    /// (`move sD, imm`).
    I {
        op: AluOp,
        vector: bool,
        dest: Reg,
        src1: Option<Reg>,
        imm: i32,
    },
    /// Format I fmt 3: masked vector op with a 9-bit immediate; `dest` merges.
    IMasked {
        op: AluOp,
        dest: Reg,
        src1: Option<Reg>,
        mask: Reg,
        imm: i32,
    },
    MoveHi {
        dest: Reg,
        imm: u32,
    },
    /// A load; masked vector loads merge into `dest`.
    Load {
        op: MemOp,
        dest: Reg,
        ptr: Reg,
        offset: i32,
        mask: Option<Reg>,
    },
    Store {
        op: MemOp,
        src: Reg,
        ptr: Reg,
        offset: i32,
        mask: Option<Reg>,
    },
    /// `store_sync flag, (ptr)`: stores `flag`, then writes 1 (success) or 0 into it.
    StoreSync {
        flag: Reg,
        ptr: Reg,
    },
    GetCr {
        dest: Reg,
        cr: u8,
    },
    /// A register copy (scalar `move sD, sS` or vector `move vD, vS`).
    Copy {
        dest: Reg,
        src: Reg,
        vector: bool,
    },
    /// `dest = sp + offset of obj + offset`.
    FrameAddr {
        dest: Reg,
        obj: FrameObj,
        offset: i32,
    },
    /// Loads an incoming stack argument: the word at `offset` from `sp` at the call.
    LoadArg {
        dest: Reg,
        offset: u32,
    },
    /// Stores an outgoing stack argument at `offset` from `sp`.
    StoreArg {
        src: Reg,
        offset: u32,
    },
    /// Stores `src` to a spill slot (after allocation, always physical).
    Spill {
        slot: SpillSlot,
        src: Reg,
    },
    Reload {
        slot: SpillSlot,
        dest: Reg,
    },
    /// `movehi dest, hi(target+addend) ; or dest, dest, lo(...)`.
    AddrOf {
        dest: Reg,
        target: RelocTarget,
        addend: i32,
    },
    Jump {
        target: MBlock,
    },
    /// `bnz cond, target` (`nz`) or `bz cond, target`.
    CondBr {
        nz: bool,
        cond: Reg,
        target: MBlock,
    },
    Call {
        callee: Callee,
        uses: SmallVec<[PReg; 8]>,
        defs: SmallVec<[PReg; 2]>,
        clobbers: &'static [PReg],
    },
    /// A `stack_alloc`: `bytes` holds the size on entry and the allocation's address
    /// on exit; `tmp` is clobbered. Expanded by the emitter, which knows the frame:
    /// a `break` when the size exceeds `sp` minus the gang's stack limit (context
    /// field [`super::abi::ctx::STACK_LIMIT`]), else `sp` moves down by the size rounded
    /// to 64 bytes and the address is the new `sp` plus the outgoing-argument area,
    /// which stays at the bottom of the frame for later calls.
    StackAlloc {
        bytes: Reg,
        tmp: Reg,
    },
    /// The epilogue and `ret`; `uses` are the result registers.
    Ret {
        uses: SmallVec<[PReg; 2]>,
    },
    /// Stops the thread: an IR `trap` (its cause, which a run reports), or a check the
    /// selector adds (a lane index outside the gang).
    Break {
        why: Option<crate::ir::TrapCode>,
    },
}

const fn scalars<const N: usize>(from: u8) -> [PReg; N] {
    let mut out = [s(0); N];
    let mut i = 0;
    while i < N {
        out[i] = s(from + i as u8);
        i += 1;
    }
    out
}

const fn vectors<const N: usize>(from: u8) -> [PReg; N] {
    let mut out = [v(0); N];
    let mut i = 0;
    while i < N {
        out[i] = v(from + i as u8);
        i += 1;
    }
    out
}

const fn concat<const A: usize, const B: usize, const C: usize>(
    a: [PReg; A],
    b: [PReg; B],
) -> [PReg; C] {
    let mut out = [s(0); C];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < B {
        out[A + j] = b[j];
        j += 1;
    }
    out
}

/// Registers a call destroys: every caller-saved scalar (`s0`–`s23`) and vector
/// (`v0`–`v25`) register.
pub static CALL_CLOBBERS: [PReg; 50] = concat::<24, 26, 50>(scalars::<24>(0), vectors::<26>(0));
/// Registers the barrier routine destroys: every allocatable register.
pub static BARRIER_CLOBBERS: [PReg; 60] = concat::<28, 32, 60>(scalars::<28>(0), vectors::<32>(0));

/// Allocatable scalar registers, caller-saved first (`s28`–`s31` are gp, fp, sp, ra;
/// fp is the emitter's scratch register for large frame offsets).
pub static ALLOC_SCALAR: [PReg; 28] = scalars::<28>(0);
pub static ALLOC_VECTOR: [PReg; 32] = vectors::<32>(0);

fn push(out: &mut SmallVec<[Operand; 8]>, reg: Reg, kind: OperandKind) {
    out.push(Operand { reg, kind });
}

impl MachInst for MInst {
    fn operands(&self, out: &mut SmallVec<[Operand; 8]>) {
        use OperandKind::*;
        match self {
            MInst::R {
                dest,
                src1,
                src2,
                mask,
                ..
            } => {
                if let Some(r) = src1 {
                    push(out, *r, Use);
                }
                push(out, *src2, Use);
                if let Some(m) = mask {
                    push(out, *m, Use);
                    push(out, *dest, UseDef);
                } else {
                    push(out, *dest, Def);
                }
            }
            MInst::I { dest, src1, .. } => {
                if let Some(r) = src1 {
                    push(out, *r, Use);
                }
                push(out, *dest, Def);
            }
            MInst::IMasked {
                dest, src1, mask, ..
            } => {
                if let Some(r) = src1 {
                    push(out, *r, Use);
                }
                push(out, *mask, Use);
                push(out, *dest, UseDef);
            }
            MInst::MoveHi { dest, .. } | MInst::GetCr { dest, .. } => push(out, *dest, Def),
            MInst::Load {
                dest, ptr, mask, ..
            } => {
                push(out, *ptr, Use);
                if let Some(m) = mask {
                    push(out, *m, Use);
                    push(out, *dest, UseDef);
                } else {
                    push(out, *dest, Def);
                }
            }
            MInst::Store { src, ptr, mask, .. } => {
                push(out, *src, Use);
                push(out, *ptr, Use);
                if let Some(m) = mask {
                    push(out, *m, Use);
                }
            }
            MInst::StoreSync { flag, ptr } => {
                push(out, *ptr, Use);
                push(out, *flag, UseDef);
            }
            MInst::Copy { dest, src, .. } => {
                push(out, *src, Use);
                push(out, *dest, Def);
            }
            MInst::FrameAddr { dest, .. } | MInst::AddrOf { dest, .. } => push(out, *dest, Def),
            MInst::Spill { src, .. } | MInst::StoreArg { src, .. } => push(out, *src, Use),
            MInst::LoadArg { dest, .. } => push(out, *dest, Def),
            MInst::Reload { dest, .. } => push(out, *dest, Def),
            MInst::Jump { .. } | MInst::Break { .. } => {}
            MInst::StackAlloc { bytes, tmp } => {
                push(out, *bytes, UseDef);
                push(out, *tmp, Def);
            }
            MInst::CondBr { cond, .. } => push(out, *cond, Use),
            MInst::Call { uses, defs, .. } => {
                for r in uses {
                    push(out, Reg::Phys(*r), Use);
                }
                for r in defs {
                    push(out, Reg::Phys(*r), Def);
                }
            }
            MInst::Ret { uses } => {
                for r in uses {
                    push(out, Reg::Phys(*r), Use);
                }
            }
        }
    }

    fn map_regs(&mut self, f: &mut dyn FnMut(Reg) -> Reg) {
        let mut m = |r: &mut Reg| *r = f(*r);
        match self {
            MInst::R {
                dest,
                src1,
                src2,
                mask,
                ..
            } => {
                if let Some(r) = src1 {
                    m(r);
                }
                m(src2);
                if let Some(k) = mask {
                    m(k);
                }
                m(dest);
            }
            MInst::I { dest, src1, .. } => {
                if let Some(r) = src1 {
                    m(r);
                }
                m(dest);
            }
            MInst::IMasked {
                dest, src1, mask, ..
            } => {
                if let Some(r) = src1 {
                    m(r);
                }
                m(mask);
                m(dest);
            }
            MInst::MoveHi { dest, .. } | MInst::GetCr { dest, .. } => m(dest),
            MInst::Load {
                dest, ptr, mask, ..
            } => {
                m(ptr);
                if let Some(k) = mask {
                    m(k);
                }
                m(dest);
            }
            MInst::Store { src, ptr, mask, .. } => {
                m(src);
                m(ptr);
                if let Some(k) = mask {
                    m(k);
                }
            }
            MInst::StoreSync { flag, ptr } => {
                m(ptr);
                m(flag);
            }
            MInst::Copy { dest, src, .. } => {
                m(src);
                m(dest);
            }
            MInst::FrameAddr { dest, .. } | MInst::AddrOf { dest, .. } => m(dest),
            MInst::Spill { src, .. } | MInst::StoreArg { src, .. } => m(src),
            MInst::LoadArg { dest, .. } => m(dest),
            MInst::Reload { dest, .. } => m(dest),
            MInst::Jump { .. } | MInst::Break { .. } => {}
            MInst::StackAlloc { bytes, tmp } => {
                m(bytes);
                m(tmp);
            }
            MInst::CondBr { cond, .. } => m(cond),
            MInst::Call { uses, defs, .. } => {
                // Physical operands: the allocator maps them to themselves.
                for r in uses.iter_mut().chain(defs.iter_mut()) {
                    if let Reg::Phys(p) = f(Reg::Phys(*r)) {
                        *r = p;
                    }
                }
            }
            MInst::Ret { uses } => {
                for r in uses.iter_mut() {
                    if let Reg::Phys(p) = f(Reg::Phys(*r)) {
                        *r = p;
                    }
                }
            }
        }
    }

    fn as_move(&self) -> Option<(Reg, Reg)> {
        match self {
            MInst::Copy { dest, src, .. } => Some((*dest, *src)),
            _ => None,
        }
    }

    fn clobbers(&self) -> &'static [PReg] {
        match self {
            MInst::Call { clobbers, .. } => clobbers,
            _ => &[],
        }
    }

    /// Register arithmetic, constants, copies, addresses, and loads from the context
    /// record (through `gp`, which cannot fault). Other loads may fault; stores,
    /// branches, calls and control-register reads are effects.
    fn is_pure(&self) -> bool {
        match self {
            MInst::R { .. }
            | MInst::I { .. }
            | MInst::IMasked { .. }
            | MInst::MoveHi { .. }
            | MInst::FrameAddr { .. }
            | MInst::AddrOf { .. }
            | MInst::Copy { .. } => true,
            MInst::Load { ptr, .. } => *ptr == Reg::Phys(GP),
            _ => false,
        }
    }

    /// Constants (an immediate `move`, `movehi`), addresses of frame objects and of
    /// symbols, and unmasked loads from the context record: `sp` changes only in
    /// the prologue and epilogue, generated code never writes `gp`, and the record
    /// does not change while the gang runs (the runtime writes only its scheduling
    /// fields, which generated code never reads). None of them can fault.
    fn rematerialize(&self) -> Option<MInst> {
        let constant = match self {
            MInst::I { src1: None, .. }
            | MInst::MoveHi { .. }
            | MInst::FrameAddr { .. }
            | MInst::AddrOf { .. } => true,
            MInst::Load {
                ptr, mask: None, ..
            } => *ptr == Reg::Phys(GP),
            _ => false,
        };
        constant.then(|| self.clone())
    }
}

/// The Nyuzi register target for the shared allocator.
#[derive(Clone, Copy, Debug, Default)]
pub struct NyuziTarget;

impl RegTarget for NyuziTarget {
    type Inst = MInst;

    fn allocatable(&self, class: RegClass) -> &[PReg] {
        if class == VECTOR {
            &ALLOC_VECTOR
        } else {
            &ALLOC_SCALAR
        }
    }

    fn spill_size(&self, class: RegClass) -> u32 {
        if class == VECTOR {
            64
        } else {
            4
        }
    }

    fn spill(&self, slot: SpillSlot, reg: PReg) -> SmallVec<[MInst; 2]> {
        smallvec::smallvec![MInst::Spill {
            slot,
            src: Reg::Phys(reg)
        }]
    }

    fn reload(&self, slot: SpillSlot, reg: PReg) -> SmallVec<[MInst; 2]> {
        smallvec::smallvec![MInst::Reload {
            slot,
            dest: Reg::Phys(reg)
        }]
    }

    fn copy(&self, dest: PReg, src: PReg) -> MInst {
        MInst::Copy {
            dest: Reg::Phys(dest),
            src: Reg::Phys(src),
            vector: dest.class == VECTOR,
        }
    }
}

/// Whether a class is the scalar one (for readability at call sites).
pub fn is_scalar(class: RegClass) -> bool {
    class == SCALAR
}
