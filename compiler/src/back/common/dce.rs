//! Dead-code elimination on machine functions, shared by every target.
//!
//! Instruction selection leaves instructions whose results nobody reads: prologue
//! loads overwritten before use, address arithmetic of accesses that took another
//! form, zero-initialisations of registers written again right after. Every warp or
//! hardware thread executes them, so [`eliminate_dead_code`] deletes them before
//! register allocation (which then also has fewer values to place).
//!
//! An instruction is dead when the target says it has no effect but writing its
//! defs ([`MachInst::is_pure`]) and none of those defs is live right after it. The
//! code is not SSA (a virtual register may be written in several places), so "live"
//! comes from the allocator's backward dataflow ([`liveness::solve`]): a write
//! overwritten on every path before any read is dead even though the register is
//! read elsewhere. A partial write (a masked or guarded instruction, a
//! [`OperandKind::UseDef`]) reads the old value, so the write before it stays live
//! while the partial write's own result is. Each block is walked backward from its
//! live-out set, so a chain of dead instructions within a block goes in one walk;
//! removing a block's last reader of a value defined in another block can kill that
//! definition too, so the whole is repeated until nothing changes (a round is repeated
//! only when it deleted such a reader: otherwise no block's live-in set changed).
//!
//! Physical registers are never considered dead: an instruction writing one is
//! kept, since the ABI may read it after the function (return values, the stack and
//! context registers) without any instruction here saying so.

use cranelift_entity::EntityRef;
use smallvec::SmallVec;

use super::liveness::{self, BitSet, BlockAccess, InstAccess};
use super::mach::{MachFunction, MachInst, Operand, OperandKind, Reg};

/// Deletes the dead instructions of `func` (see the module documentation) until none
/// is left; returns how many were deleted. A function naming a block or virtual
/// register it does not declare is left unchanged.
pub fn eliminate_dead_code<I: MachInst>(func: &mut MachFunction<I>) -> usize {
    let nvars = func.vregs.len();
    let Some((mut blocks, mut candidates)) = accesses(func) else {
        return 0;
    };
    let mut removed = 0;
    loop {
        let live = liveness::solve(&blocks, nvars);
        let dead: Vec<Vec<bool>> = blocks
            .iter()
            .zip(&candidates)
            .zip(&live.live_out)
            .map(|((b, c), out)| dead_in_block(b, c, out))
            .collect();
        let count: usize = dead.iter().flatten().filter(|&&d| d).count();
        if count == 0 {
            return removed;
        }
        removed += count;
        let again = reads_from_outside(&blocks, &dead, nvars);
        // The accesses of the instructions kept are unchanged: drop those of the dead.
        let kept = func
            .blocks
            .values_mut()
            .zip(&mut blocks)
            .zip(&mut candidates);
        for (((block, access), cands), dead) in kept.zip(dead) {
            remove_flagged(&mut block.insts, &dead);
            remove_flagged(&mut access.insts, &dead);
            remove_flagged(cands, &dead);
        }
        if !again {
            return removed;
        }
    }
}

/// Whether some deleted instruction read a register its block had not written before
/// it: only such a read can have kept a register live into the block, and so a
/// definition in another block alive. Without one, every block's live-in set is what
/// it was and the next round would delete nothing, so it is skipped.
fn reads_from_outside(blocks: &[BlockAccess], dead: &[Vec<bool>], nvars: usize) -> bool {
    // `written[v] == k + 1`: block `k` has written `v` so far.
    let mut written = vec![0u32; nvars];
    for (k, (block, dead)) in blocks.iter().zip(dead).enumerate() {
        let stamp = k as u32 + 1;
        for (inst, &gone) in block.insts.iter().zip(dead) {
            if gone && inst.uses.iter().any(|&u| written[u as usize] != stamp) {
                return true;
            }
            for &d in &inst.defs {
                written[d as usize] = stamp;
            }
        }
    }
    false
}

/// Removes the items of `items` whose flag in `dead` is set.
fn remove_flagged<T>(items: &mut Vec<T>, dead: &[bool]) {
    let mut flags = dead.iter();
    items.retain(|_| !flags.next().copied().unwrap_or(false));
}

/// What each instruction reads and writes of the virtual registers (physical ones are
/// not tracked), and whether it may be deleted when its results are dead: pure, and
/// writing no physical register. `None` if an instruction names a virtual register
/// the function does not declare or a block names a missing successor.
fn accesses<I: MachInst>(func: &MachFunction<I>) -> Option<(Vec<BlockAccess>, Vec<Vec<bool>>)> {
    let (nvars, nblocks) = (func.vregs.len(), func.blocks.len());
    let mut ops: SmallVec<[Operand; 8]> = SmallVec::new();
    let mut candidates = Vec::with_capacity(nblocks);
    let mut blocks = Vec::with_capacity(nblocks);
    for b in func.blocks.values() {
        if b.succs.iter().any(|s| s.index() >= nblocks) {
            return None;
        }
        let mut cands = Vec::with_capacity(b.insts.len());
        let mut insts = Vec::with_capacity(b.insts.len());
        for l in &b.insts {
            ops.clear();
            l.inst.operands(&mut ops);
            let undeclared = ops
                .iter()
                .any(|o| matches!(o.reg, Reg::Virt(v) if v.index() >= nvars));
            if undeclared {
                return None;
            }
            let writes_phys = ops
                .iter()
                .any(|o| o.kind != OperandKind::Use && matches!(o.reg, Reg::Phys(_)));
            cands.push(!writes_phys && l.inst.is_pure());
            insts.push(virtual_access(&ops));
        }
        candidates.push(cands);
        blocks.push(BlockAccess {
            insts,
            succs: b.succs.iter().map(|s| s.index()).collect(),
        });
    }
    Some((blocks, candidates))
}

/// The virtual registers among `ops` as liveness variables; a tied operand is both
/// read and written. (dac-gpu's zero-writes of unwritten registers use it too.)
pub fn virtual_access(ops: &[Operand]) -> InstAccess {
    let mut acc = InstAccess::default();
    for op in ops {
        let Reg::Virt(v) = op.reg else { continue };
        let var = v.index() as u32;
        if op.kind != OperandKind::Def {
            acc.uses.push(var);
        }
        if op.kind != OperandKind::Use {
            acc.defs.push(var);
        }
    }
    acc
}

/// Which instructions of one block are dead, walking backward from the registers
/// live out of it: a deleted instruction's reads do not keep anything alive.
fn dead_in_block(block: &BlockAccess, candidates: &[bool], live_out: &BitSet) -> Vec<bool> {
    let mut live = live_out.clone();
    let mut dead = vec![false; block.insts.len()];
    for (i, inst) in block.insts.iter().enumerate().rev() {
        if candidates[i] && inst.defs.iter().all(|&d| !live.contains(d)) {
            dead[i] = true;
            continue;
        }
        for &d in &inst.defs {
            live.remove(d);
        }
        for &u in &inst.uses {
            live.insert(u);
        }
    }
    dead
}

#[cfg(test)]
mod tests {
    use super::super::mach::{MBlock, MachFunction};
    use super::super::toy::{self, a, Builder, Toy, A, B};
    use super::*;

    /// The instructions of `func`, block by block.
    fn insts(func: &MachFunction<Toy>) -> Vec<Vec<Toy>> {
        func.blocks
            .values()
            .map(|b| b.insts.iter().map(|l| l.inst.clone()).collect())
            .collect()
    }

    /// Runs DCE on `func`, checking the output is unchanged; returns the deleted count.
    fn dce_same_output(func: &mut MachFunction<Toy>) -> usize {
        let before = toy::run(func, 10_000).expect("runs before");
        let n = eliminate_dead_code(func);
        assert_eq!(toy::run(func, 10_000).expect("runs after"), before);
        n
    }

    #[test]
    fn dead_chain_is_removed_across_blocks() {
        // b0: x = 1; y = x + x; z = 7  -> b1
        // b1: w = y + y (dead); out z; ret
        let mut bld = Builder::new();
        let x = bld.konst(A, 1);
        let y = bld.add(x, x);
        let z = bld.konst(A, 7);
        let b1 = bld.new_block();
        bld.end(Toy::Jump, &[b1]);
        bld.cur = b1;
        bld.add(y, y);
        bld.out(z);
        bld.end(Toy::Ret, &[]);
        let mut func = bld.func;
        assert_eq!(dce_same_output(&mut func), 3);
        assert_eq!(
            insts(&func),
            vec![
                vec![Toy::Const { dst: z, value: 7 }, Toy::Jump],
                vec![Toy::Out { src: z }, Toy::Ret],
            ]
        );
    }

    #[test]
    fn overwritten_write_is_dead_though_the_register_is_read() {
        // v = 1; v = 2; out v: the first write is never read.
        let mut bld = Builder::new();
        let v = bld.vreg(A);
        bld.push(Toy::Const { dst: v, value: 1 });
        bld.push(Toy::Const { dst: v, value: 2 });
        bld.out(v);
        bld.end(Toy::Ret, &[]);
        let mut func = bld.func;
        assert_eq!(dce_same_output(&mut func), 1);
        assert_eq!(
            insts(&func)[0],
            vec![
                Toy::Const { dst: v, value: 2 },
                Toy::Out { src: v },
                Toy::Ret
            ]
        );
    }

    /// b0: i = 3; s = 0; t = 5 -> b1
    /// b1: s = s + i; i = i - 1; t2 = t + t (dead); brnz i -> b1, b2
    /// b2: out s; ret
    fn counting_loop() -> (MachFunction<Toy>, MBlock) {
        let mut bld = Builder::new();
        let i = bld.konst(A, 3);
        let s = bld.konst(A, 0);
        let t = bld.konst(A, 5);
        let body = bld.new_block();
        let exit = bld.new_block();
        bld.end(Toy::Jump, &[body]);
        bld.cur = body;
        bld.push(Toy::Add { dst: s, x: s, y: i });
        bld.push(Toy::AddImm {
            dst: i,
            src: i,
            imm: -1,
        });
        bld.add(t, t);
        bld.end(Toy::BrNz { cond: i }, &[body, exit]);
        bld.cur = exit;
        bld.out(s);
        bld.end(Toy::Ret, &[]);
        (bld.func, body)
    }

    #[test]
    fn values_live_around_a_loop_are_kept() {
        let (mut func, body) = counting_loop();
        // The unused sum t + t and then t itself go; i and s, read in the next
        // iteration (s also after the loop), stay.
        assert_eq!(dce_same_output(&mut func), 2);
        assert_eq!(func.blocks[MBlock::new(0)].insts.len(), 3);
        let body_insts: Vec<Toy> = func.blocks[body]
            .insts
            .iter()
            .map(|l| l.inst.clone())
            .collect();
        assert_eq!(body_insts.len(), 3);
        assert!(matches!(body_insts[0], Toy::Add { .. }));
        assert!(matches!(body_insts[1], Toy::AddImm { .. }));
    }

    #[test]
    fn guarded_write_keeps_the_old_value_it_merges_into() {
        // v = 10; m = 0; x = 1; v += x where m (keeps 10); out v.
        let mut bld = Builder::new();
        let v = bld.konst(A, 10);
        let m = bld.konst(B, 0);
        let x = bld.konst(A, 1);
        bld.push(Toy::MaskedAdd { dst: v, x, mask: m });
        bld.out(v);
        // A second masked write nobody reads goes, and with it its operand w.
        let w = bld.konst(A, 2);
        bld.push(Toy::MaskedAdd {
            dst: v,
            x: w,
            mask: m,
        });
        bld.end(Toy::Ret, &[]);
        let mut func = bld.func;
        assert_eq!(dce_same_output(&mut func), 2);
        assert_eq!(toy::run(&func, 100), Ok(vec![10]));
        let left = &insts(&func)[0];
        assert_eq!(left.len(), 6);
        assert_eq!(left[0], Toy::Const { dst: v, value: 10 });
        assert_eq!(left[3], Toy::MaskedAdd { dst: v, x, mask: m });
    }

    #[test]
    fn side_effects_and_physical_writes_are_kept() {
        // a0 = 4; call (result in a0 unread); barrier; out of a constant; a1 = 1
        // (a physical register nothing here reads: the ABI may).
        let mut bld = Builder::new();
        let four = bld.konst(A, 4);
        bld.push(Toy::Copy {
            dst: Reg::Phys(a(0)),
            src: four,
        });
        bld.push(Toy::Call);
        bld.push(Toy::Barrier);
        let c = bld.konst(A, 9);
        bld.out(c);
        bld.push(Toy::Const {
            dst: Reg::Phys(a(1)),
            value: 1,
        });
        bld.end(Toy::Ret, &[]);
        let mut func = bld.func;
        let before = insts(&func);
        assert_eq!(dce_same_output(&mut func), 0);
        assert_eq!(insts(&func), before);
    }

    #[test]
    fn undeclared_registers_leave_the_function_unchanged() {
        let mut func: MachFunction<Toy> = MachFunction::new("bad");
        let b = func.new_block();
        func.blocks[b].insts.push(super::super::mach::MachLine {
            inst: Toy::Const {
                dst: Reg::Virt(toy::vreg(5)),
                value: 1,
            },
            span: None,
        });
        assert_eq!(eliminate_dead_code(&mut func), 0);
        assert_eq!(func.blocks[b].insts.len(), 1);
    }
}
