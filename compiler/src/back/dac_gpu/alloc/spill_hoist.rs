//! Reloads moved as early as their block allows (RegDem §3.4.2's "demoted loads
//! are hoisted as early as possible"; local reloads move the same, as nvcc's
//! scheduler moves its own).
//!
//! The allocator reloads a spilled value just before its first read, so the
//! warp waits out the whole load latency there unless other warps hide it. After
//! allocation, the reload's register is free from the last instruction before it
//! that reads or writes the register: nothing between holds a value in it that is
//! read later. So within its block a reload moves up to just after the latest of:
//!
//! * an instruction that reads or writes its register (or a register overlapping
//!   it: a pair's halves);
//! * a store to its slot (the value it reads is the one last stored);
//! * a call, return, exit or branch (the callee shares the registers; the others
//!   end blocks anyway);
//!
//! or to the block's start. Slots are private to a thread, so no other memory
//! access (nor a barrier) orders it. Every instruction of a block runs under the
//! same active lanes, so the reload loads the same lanes wherever it sits. Nothing
//! but reloads moves, and their order among themselves is kept where it matters
//! (two reloads of one register never cross). Linear in the block's length: each
//! register's and slot's last access is kept in a table, and the reordering is one
//! stable sort.

use sim::gpu::Op;

use super::{GpuInst, P};
use crate::back::common::mach::{MachFunction, MachInst, Operand, Reg as MReg};
use cranelift_entity::EntityRef;
use smallvec::SmallVec;

/// Moves every reload of the allocated `mf` as early as its block allows; returns how
/// many moved.
pub fn hoist(mf: &mut MachFunction<GpuInst>) -> u32 {
    let mut moved = 0;
    let mut scratch = Scratch::default();
    for block in mf.blocks.values_mut() {
        let targets = scratch.targets(block.insts.iter().map(|l| &l.inst));
        let here = targets.iter().enumerate().filter(|&(i, &t)| t != i).count();
        if here == 0 {
            continue;
        }
        moved += here as u32;
        // A reload going to `t` sorts just before the line that was at `t`.
        let mut keyed: Vec<_> = std::mem::take(&mut block.insts)
            .into_iter()
            .zip(targets)
            .enumerate()
            .map(|(i, (line, t))| ((t, t == i, i), line))
            .collect();
        keyed.sort_by_key(|&(key, _)| key);
        block.insts = keyed.into_iter().map(|(_, line)| line).collect();
    }
    moved
}

/// Per-block tables, kept between blocks to save allocations.
#[derive(Default)]
struct Scratch {
    /// Per 32-bit register: one past the index of the last line that touched it.
    reg_after: Vec<usize>,
    /// Per spill slot: one past the index of the last store to it.
    slot_after: Vec<usize>,
    ops: SmallVec<[Operand; 8]>,
}

impl Scratch {
    /// Where each line of a block goes: its own index, or, for a reload, the earliest
    /// index it may move to.
    fn targets<'a>(&mut self, insts: impl Iterator<Item = &'a GpuInst>) -> Vec<usize> {
        self.reg_after.clear();
        self.slot_after.clear();
        let mut fence_after = 0;
        let mut targets = Vec::new();
        for (i, inst) in insts.enumerate() {
            self.ops.clear();
            inst.operands(&mut self.ops);
            let regs: SmallVec<[usize; 12]> = registers(&self.ops).collect();
            let reload = matches!(inst.inst.op, Op::Ld { .. })
                .then_some(inst.slot)
                .flatten();
            let target = match reload {
                Some(slot) => regs
                    .iter()
                    .map(|&r| after(&self.reg_after, r))
                    .chain([fence_after, after(&self.slot_after, slot.index())])
                    .max()
                    .unwrap_or(0),
                None => i,
            };
            targets.push(target);
            for r in regs {
                record(&mut self.reg_after, r, i + 1);
            }
            match inst.inst.op {
                Op::St { .. } if let Some(slot) = inst.slot => {
                    record(&mut self.slot_after, slot.index(), i + 1);
                }
                Op::Call { .. } | Op::Ret | Op::Exit | Op::Bra { .. } => fence_after = i + 1,
                _ => {}
            }
        }
        targets
    }
}

/// One past the last line that touched entry `i` of `table` (0: none did).
fn after(table: &[usize], i: usize) -> usize {
    table.get(i).copied().unwrap_or(0)
}

/// Records that line `after - 1` touched entry `i` of `table`.
fn record(table: &mut Vec<usize>, i: usize, after: usize) {
    if table.len() <= i {
        table.resize(i + 1, 0);
    }
    table[i] = after;
}

/// The 32-bit registers (a pair's two halves) an instruction's operands name;
/// predicates are numbered after the 256 `%r`, as they never overlap them.
fn registers(ops: &[Operand]) -> impl Iterator<Item = usize> + '_ {
    ops.iter().flat_map(|op| {
        let MReg::Phys(p) = op.reg else {
            return 0..0;
        };
        let (lo, hi) = super::spill_clean::span(p);
        let file = if p.class == P { 256 } else { 0 };
        file + lo as usize..file + hi as usize + 1
    })
}

#[cfg(test)]
mod tests {
    use super::super::{sim_reg, spill_code, GpuTarget, D, R};
    use super::*;
    use crate::back::common::mach::{MachLine, OperandKind, PReg, RegTarget, SpillSlot};
    use sim::gpu::{BinOp, Inst, Src, Type};

    fn r(i: u8) -> PReg {
        PReg { class: R, index: i }
    }

    /// `add.u32 dst, a, b`, with its operands listed as the allocator sees them.
    fn add(dst: PReg, a: PReg, b: PReg) -> GpuInst {
        let op = Op::Bin {
            op: BinOp::Add,
            ty: Type::U32,
            dst: sim_reg(dst),
            a: Src::Reg(sim_reg(a)),
            b: Src::Reg(sim_reg(b)),
        };
        let mut inst = spill_code(Inst::new(op), a, OperandKind::Use, None);
        for (p, kind) in [(b, OperandKind::Use), (dst, OperandKind::Def)] {
            let more = spill_code(inst.inst, p, kind, None);
            inst.ops.extend(more.ops);
            inst.groups.extend(more.groups);
        }
        inst
    }

    fn block_text(insts: Vec<GpuInst>) -> (Vec<String>, u32) {
        let mut mf: MachFunction<GpuInst> = MachFunction::new("k");
        for _ in 0..3 {
            mf.spill_slots.push(R);
        }
        let b = mf.new_block();
        mf.blocks[b].insts = insts
            .into_iter()
            .map(|inst| MachLine { inst, span: None })
            .collect();
        let moved = hoist(&mut mf);
        let text = mf.blocks[b]
            .insts
            .iter()
            .map(|l| format!("{:?}", l.inst))
            .collect();
        (text, moved)
    }

    /// Each reload rises to just after the last access to its register (a pair's
    /// halves included) and the last store to its slot, and no further.
    #[test]
    fn reloads_rise_to_their_registers_last_access_or_their_slots_last_store() {
        let t = GpuTarget::new(32);
        let s = |i| SpillSlot::new(i);
        let pair = PReg { class: D, index: 8 };
        let (text, moved) = block_text(vec![
            add(r(1), r(1), r(1)),
            add(r(2), r(1), r(9)),
            t.spill(s(0), r(3))[0].clone(),
            add(r(4), r(4), r(4)),
            t.reload(s(1), r(5))[0].clone(),
            t.reload(s(0), r(6))[0].clone(),
            t.reload(s(1), r(2))[0].clone(),
            t.reload(s(2), pair)[0].clone(),
            add(r(7), r(5), r(6)),
        ]);
        assert_eq!(
            text,
            [
                "ld.local.b32 %r5, [0]",
                "add.u32 %r1, %r1, %r1",
                "add.u32 %r2, %r1, %r9",
                "ld.local.b32 %r2, [0]",
                "ld.local.b64 %rd8, [0]",
                "st.local.b32 [0], %r3",
                "ld.local.b32 %r6, [0]",
                "add.u32 %r4, %r4, %r4",
                "add.u32 %r7, %r5, %r6",
            ]
        );
        assert_eq!(moved, 4);
    }

    /// A call ends the window: the callee shares the registers.
    #[test]
    fn reloads_stay_below_calls() {
        let t = GpuTarget::new(32);
        let call = spill_code(
            Inst::new(Op::Call { func: 1 }),
            r(20),
            OperandKind::Use,
            None,
        );
        let (text, moved) = block_text(vec![
            add(r(1), r(1), r(1)),
            call,
            add(r(4), r(4), r(4)),
            t.reload(SpillSlot::new(0), r(5))[0].clone(),
        ]);
        assert_eq!(
            text,
            [
                "add.u32 %r1, %r1, %r1",
                "call f1",
                "ld.local.b32 %r5, [0]",
                "add.u32 %r4, %r4, %r4",
            ]
        );
        assert_eq!(moved, 1);
    }
}
