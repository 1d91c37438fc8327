//! Redundant spill code, removed after allocation (RegDem §3.4's "redundant
//! demoted loads and stores"; it serves local slots the same).
//!
//! The allocator stores a spilled value after each write and reloads it before each
//! read, so a block that reads a spilled value twice reloads it twice, and a value
//! reloaded and stored back unchanged is stored again. Within each basic block,
//! this pass follows which physical register holds a copy of which slot's value:
//!
//! * a reload of slot `s` into the register that already holds `s` is deleted;
//! * a reload of `s` into another register while one holds `s` becomes a register
//!   copy (a move instead of a memory access);
//! * a store of a register to the slot it already equals is deleted.
//!
//! A copy is forgotten when its register (or either half of a pair) is written by
//! anything else, and a slot's copies when the slot is stored from another register.
//! Blocks are handled alone (nothing is known at a block's start), so control flow
//! needs no reasoning; only instructions the allocator placed (spill code) change.

use smallvec::SmallVec;

use sim::gpu::{Inst, Op, Src, UnOp};

use super::{class_ty, sim_reg, GpuInst, D, P};
use crate::back::common::mach::{
    MachFunction, MachInst, Operand, OperandKind, PReg, Reg as MReg, SpillSlot,
};

/// Which registers hold a copy of which slot, in one block.
#[derive(Default)]
struct Copies {
    /// (slot, register holding its value).
    held: SmallVec<[(SpillSlot, PReg); 16]>,
}

impl Copies {
    fn holder(&self, slot: SpillSlot, class: PReg) -> Option<PReg> {
        self.held
            .iter()
            .find(|(s, r)| *s == slot && r.class == class.class)
            .map(|&(_, r)| r)
    }

    fn holds(&self, slot: SpillSlot, reg: PReg) -> bool {
        self.held.contains(&(slot, reg))
    }

    /// `reg` was written: it holds no slot's value any more (nor does any register
    /// overlapping it).
    fn clobber(&mut self, reg: PReg) {
        self.held.retain(|(_, r)| !overlaps(*r, reg));
    }

    fn record(&mut self, slot: SpillSlot, reg: PReg) {
        if !self.holds(slot, reg) {
            self.held.push((slot, reg));
        }
    }

    /// `slot` was stored from `reg`: only `reg` (and copies made since) hold it.
    fn stored(&mut self, slot: SpillSlot, reg: PReg) {
        self.held.retain(|(s, _)| *s != slot);
        self.held.push((slot, reg));
    }
}

/// The 32-bit registers `r` occupies (a predicate: its own number, in its own file).
pub(super) fn span(r: PReg) -> (u32, u32) {
    let lo = u32::from(r.index);
    (lo, lo + u32::from(r.class == D))
}

fn overlaps(a: PReg, b: PReg) -> bool {
    if (a.class == P) != (b.class == P) {
        return false;
    }
    let (a0, a1) = span(a);
    let (b0, b1) = span(b);
    a0 <= b1 && b0 <= a1
}

/// The spill code's physical register (its only operand).
fn spill_reg(inst: &GpuInst) -> Option<PReg> {
    match inst.ops.first()?.reg {
        MReg::Phys(p) => Some(p),
        MReg::Virt(_) => None,
    }
}

/// A register-to-register copy `dest = src` standing in for a reload.
fn copy_inst(dest: PReg, src: PReg) -> GpuInst {
    let op = Op::Un {
        op: UnOp::Mov,
        ty: class_ty(dest.class),
        dst: sim_reg(dest),
        a: Src::Reg(sim_reg(src)),
    };
    let mut inst = super::spill_code(Inst::new(op), src, OperandKind::Use, None);
    let def = super::spill_code(inst.inst, dest, OperandKind::Def, None);
    inst.ops.extend(def.ops);
    inst.groups.extend(def.groups);
    inst
}

/// Removes redundant spill code from every block of the allocated `mf`; returns
/// how many reloads became copies or vanished, and how many stores vanished.
pub fn clean(mf: &mut MachFunction<GpuInst>) -> (u32, u32) {
    let (mut reloads, mut stores) = (0, 0);
    let mut ops: SmallVec<[Operand; 8]> = SmallVec::new();
    for block in mf.blocks.values_mut() {
        let mut copies = Copies::default();
        let old = std::mem::take(&mut block.insts);
        block.insts.reserve(old.len());
        for mut line in old {
            if let (Some(slot), Some(reg)) = (line.inst.slot, spill_reg(&line.inst)) {
                match line.inst.inst.op {
                    Op::Ld { .. } if copies.holds(slot, reg) => {
                        reloads += 1;
                        continue;
                    }
                    Op::Ld { .. } => {
                        if let Some(from) = copies.holder(slot, reg) {
                            line.inst = copy_inst(reg, from);
                            reloads += 1;
                        }
                        copies.clobber(reg);
                        copies.record(slot, reg);
                    }
                    Op::St { .. } if copies.holds(slot, reg) => {
                        stores += 1;
                        continue;
                    }
                    Op::St { .. } => copies.stored(slot, reg),
                    _ => {}
                }
                block.insts.push(line);
                continue;
            }
            ops.clear();
            line.inst.operands(&mut ops);
            for op in &ops {
                if let (MReg::Phys(p), OperandKind::Def | OperandKind::UseDef) = (op.reg, op.kind) {
                    copies.clobber(p);
                }
            }
            block.insts.push(line);
        }
    }
    (reloads, stores)
}

#[cfg(test)]
mod tests {
    use super::super::{GpuTarget, R};
    use super::*;
    use crate::back::common::mach::{MachLine, RegTarget};
    use cranelift_entity::EntityRef;

    fn r(i: u8) -> PReg {
        PReg { class: R, index: i }
    }

    fn text(mf: &MachFunction<GpuInst>) -> Vec<String> {
        mf.blocks
            .values()
            .flat_map(|b| b.insts.iter().map(|l| format!("{:?}", l.inst)))
            .collect()
    }

    /// A reload of what a register holds vanishes, one from another holder becomes a
    /// copy, a write forgets the copy, and a store of an unchanged value vanishes.
    #[test]
    fn redundant_reloads_and_stores_go() {
        let t = GpuTarget::new(16);
        let s0 = SpillSlot::new(0);
        let mut mf: MachFunction<GpuInst> = MachFunction::new("k");
        mf.spill_slots.push(R);
        let b = mf.new_block();
        let write_r1 = super::super::spill_code(
            Inst::new(Op::Un {
                op: UnOp::Mov,
                ty: sim::gpu::Type::B32,
                dst: sim::gpu::Reg::r(1),
                a: Src::Imm(0),
            }),
            r(1),
            OperandKind::Def,
            None,
        );
        let lines = [
            t.spill(s0, r(1))[0].clone(),
            t.reload(s0, r(1))[0].clone(),
            t.reload(s0, r(2))[0].clone(),
            write_r1,
            t.reload(s0, r(3))[0].clone(),
            t.spill(s0, r(3))[0].clone(),
            t.reload(s0, r(1))[0].clone(),
        ];
        mf.blocks[b].insts = lines
            .into_iter()
            .map(|inst| MachLine { inst, span: None })
            .collect();
        let (reloads, stores) = clean(&mut mf);
        assert_eq!(
            text(&mf),
            [
                "st.local.b32 [0], %r1",
                "mov.b32 %r2, %r1",
                "mov.b32 %r1, 0x0",
                "mov.b32 %r3, %r2",
                "mov.b32 %r1, %r2",
            ]
        );
        assert_eq!((reloads, stores), (4, 1));
    }
}
