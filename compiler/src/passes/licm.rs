//! Loop-invariant code motion: pure, non-trapping instructions of a loop whose operands
//! are all defined outside it move to the loop's preheader.
//!
//! **What it computes.** For each natural loop with one entry edge (its preheader, the
//! single predecessor outside the loop), innermost first, the instructions of the
//! loop's blocks are visited in reverse postorder; one that [`cfg::is_pure`] admits,
//! that cannot trap (no integer division or remainder), that is not a splat (see
//! [`movable`]), and whose operands are defined
//! outside the loop (or were moved out before it) is moved before the preheader's
//! terminator. A value moved out of an inner loop is then a candidate for the outer
//! one.
//!
//! **Why it is exact.** The preheader dominates every block of the loop, and every
//! operand's definition dominates the preheader (it dominates a use inside the loop,
//! which every path reaches through the preheader), so the moved instruction still
//! dominates its uses and reads the same operand values. It computes the same value in
//! every iteration, and it may now also run when the loop body does not: that is
//! harmless for an instruction with no side effect that cannot trap. The IR's pure
//! operations are unmasked (masks reach only memory, selects and lane reductions of
//! explicit mask operands), so hoisting out of a masked region changes no lane.
//!
//! **Why.** The lowering emits constants, splats, the lane index and invariant address
//! arithmetic where the source uses them, inside loops; on nyuzi the lane index alone
//! is a vector load per iteration. The pass runs on the nyuzi back end's copy of the
//! module (with [`super::strength_reduce`]), so the interpreter, the shared pipeline and
//! the dac-gpu back end see the IR unchanged.

use cranelift_entity::SecondaryMap;
use rustc_hash::FxHashSet;

use crate::ir::dominance::DominatorTree;
use crate::ir::{Block, Function, Inst, InstData, Module, ValueDef};

use super::cfg;

/// Hoists the loop invariants of every function of `module`; returns how many
/// instructions moved.
pub fn run_module(module: &mut Module) -> usize {
    module.functions.values_mut().map(hoist_function).sum()
}

/// Hoists the loop invariants of `func`, innermost loops first; returns how many
/// instructions moved.
pub fn hoist_function(func: &mut Function) -> usize {
    let dom = DominatorTree::compute(func);
    let preds = cfg::predecessors(func);
    let mut loops: Vec<(Block, cfg::NaturalLoop)> = dom
        .rpo()
        .iter()
        .filter_map(|&h| cfg::natural_loop(&dom, &preds, h).map(|l| (h, l)))
        .filter(|(_, l)| l.entries.len() == 1)
        .collect();
    loops.sort_by_key(|(_, l)| l.blocks.len());
    let order: Vec<Block> = dom.rpo().to_vec();
    let mut def_block = inst_blocks(func);
    loops
        .iter()
        .map(|(_, l)| hoist_loop(func, l, &order, &mut def_block))
        .sum()
}

/// The block of every instruction in the layout.
fn inst_blocks(func: &Function) -> SecondaryMap<Inst, Option<Block>> {
    let mut map = SecondaryMap::new();
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            map[i] = Some(b);
        }
    }
    map
}

/// Moves the invariants of one loop (`order`: the function's blocks in reverse
/// postorder) to its preheader; returns how many.
fn hoist_loop(
    func: &mut Function,
    lp: &cfg::NaturalLoop,
    order: &[Block],
    def_block: &mut SecondaryMap<Inst, Option<Block>>,
) -> usize {
    let preheader = lp.entries[0];
    let mut moved = 0;
    for &b in order.iter().filter(|b| lp.blocks.contains(b)) {
        let mut hoisted = Vec::new();
        for &inst in &func.blocks[b].insts {
            if !movable(&func.insts[inst]) || !operands_outside(func, &lp.blocks, inst, def_block) {
                continue;
            }
            def_block[inst] = Some(preheader);
            hoisted.push(inst);
        }
        if hoisted.is_empty() {
            continue;
        }
        // One sweep per block, not one per hoisted instruction.
        func.blocks[b]
            .insts
            .retain(|&i| def_block[i] != Some(preheader));
        let insts = &mut func.blocks[preheader].insts;
        let at = insts.len().saturating_sub(1);
        insts.splice(at..at, hoisted.iter().copied());
        moved += hoisted.len();
    }
    moved
}

/// Pure, unable to trap, and not a splat. A splat inside the loop costs nothing on
/// nyuzi (the instruction selector folds it into a vector instruction's scalar
/// operand); moved out, it would be a vector register live across the loop, which in
/// matmul_tiled's inner loop forced spills (+17% cycles when splats were hoisted).
fn movable(data: &InstData) -> bool {
    cfg::is_speculatable(data) && !matches!(data, InstData::Splat { .. })
}

/// Whether every operand of `inst` is defined outside the loop's `blocks`.
fn operands_outside(
    func: &Function,
    blocks: &FxHashSet<Block>,
    inst: Inst,
    def_block: &SecondaryMap<Inst, Option<Block>>,
) -> bool {
    func.insts[inst]
        .operands()
        .iter()
        .all(|&v| match func.values[v].def {
            ValueDef::Param(b, _) => !blocks.contains(&b),
            ValueDef::Result(i) => def_block[i].is_some_and(|b| !blocks.contains(&b)),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::cfg::run_on_text;

    fn pass(m: &mut Module) {
        run_module(m);
    }

    /// A counted loop over `v0` with invariant arithmetic on the parameters, the lane
    /// index, a splat, a division, a load and values of the counter in its body.
    const LOOP: &str = "module lanes 4 ptr 4

function export @f(i32, i32, ptr) masked {
block0(v0: i32, v1: i32, v2: ptr, v3: [bool]):
    v4 = iconst.i32 0
    jump block1(v4)
block1(v5: i32):
    v6 = icmp slt v5, v0
    brif v6, block2, block3
block2:
    v7 = iconst.i32 3
    v8 = imul v1, v7
    v9 = special lane_index
    v10 = splat v8
    v11 = iadd v9, v10
    v12 = sdiv v1, v7
    v13 = load.i32 generic v2
    v14 = iadd v5, v8
    v15 = iconst.i32 1
    v16 = iadd v5, v15
    jump block1(v16)
block3:
    return
}
";

    /// The constants, the product and the lane index move before the preheader's
    /// jump, in order (the writer renumbers values in layout order). The splat stays
    /// (free on nyuzi) and so does its user; the division may trap; the load reads
    /// memory; the counter's values change every iteration.
    const LOOP_HOISTED: &str = "module lanes 4 ptr 4

function export @f(i32, i32, ptr) masked {
block0(v0: i32, v1: i32, v2: ptr, v3: [bool]):
    v4 = iconst.i32 0
    v5 = iconst.i32 3
    v6 = imul v1, v5
    v7 = special lane_index
    v8 = iconst.i32 1
    jump block1(v4)
block1(v9: i32):
    v10 = icmp slt v9, v0
    brif v10, block2, block3
block2:
    v11 = splat v6
    v12 = iadd v7, v11
    v13 = sdiv v1, v5
    v14 = load.i32 generic v2
    v15 = iadd v9, v6
    v16 = iadd v9, v8
    jump block1(v16)
block3:
    return
}
";

    #[test]
    fn invariants_move_to_the_preheader_and_the_rest_stays() {
        assert_eq!(run_on_text(LOOP, pass), LOOP_HOISTED);
    }

    #[test]
    fn a_loop_without_invariants_is_unchanged() {
        assert_eq!(run_on_text(LOOP_HOISTED, pass), LOOP_HOISTED);
    }

    /// An invariant of an inner loop (`ishl v1, v1`) leaves the inner and then the
    /// outer loop; the inner counter's and the outer counter's updates stay.
    #[test]
    fn an_inner_invariant_leaves_both_loops() {
        let nested = "module lanes 4 ptr 4

function export @g(i32, i32) masked {
block0(v0: i32, v1: i32, v2: [bool]):
    v3 = iconst.i32 0
    jump block1(v3)
block1(v4: i32):
    v5 = icmp slt v4, v0
    brif v5, block2(v3), block5
block2(v6: i32):
    v7 = icmp slt v6, v0
    brif v7, block3, block4
block3:
    v8 = ishl v1, v1
    v9 = iadd v6, v8
    jump block2(v9)
block4:
    v10 = iadd v4, v1
    jump block1(v10)
block5:
    return
}
";
        let hoisted = "module lanes 4 ptr 4

function export @g(i32, i32) masked {
block0(v0: i32, v1: i32, v2: [bool]):
    v3 = iconst.i32 0
    v4 = ishl v1, v1
    jump block1(v3)
block1(v5: i32):
    v6 = icmp slt v5, v0
    brif v6, block2(v3), block5
block2(v7: i32):
    v8 = icmp slt v7, v0
    brif v8, block3, block4
block3:
    v9 = iadd v7, v4
    jump block2(v9)
block4:
    v10 = iadd v5, v1
    jump block1(v10)
block5:
    return
}
";
        assert_eq!(run_on_text(nested, pass), hoisted);
    }

    /// A loop entered from two blocks has no preheader: nothing moves (the output is
    /// the input, its blocks renumbered in layout order).
    #[test]
    fn a_loop_with_two_entries_is_left_alone() {
        let text = "module lanes 4 ptr 4

function export @h(i32, i32) masked {
block0(v0: i32, v1: i32, v2: [bool]):
    v3 = iconst.i32 0
    v4 = icmp slt v0, v1
    brif v4, block1(v3), block2
block2:
    jump block1(v1)
block1(v5: i32):
    v6 = imul v1, v1
    v7 = iadd v5, v6
    v8 = icmp slt v7, v0
    brif v8, block1(v7), block3
block3:
    return
}
";
        let out = run_on_text(text, pass);
        assert_eq!(out, run_on_text(text, |_| {}));
        assert!(
            out.contains("block2(v5: i32):\n    v6 = imul v1, v1\n"),
            "{out}"
        );
    }
}
