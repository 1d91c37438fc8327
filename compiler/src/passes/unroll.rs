//! Full unrolling of loops whose trip count is a compile-time constant (`--unroll`).
//!
//! A loop is unrolled by *peeling*: its blocks are copied, the preheader enters the
//! copy, and the copy's back edges go to the original header, so the copy runs the
//! first iteration and the loop the rest. Peeling is always correct. When the loop's
//! induction values enter it as constants, the copy's header parameters receive
//! constants only ([`cfg::remove_trivial_params`]) and [`const_fold`] decides the
//! copy's exit test; peeling again runs the second iteration, and so on, until a copy's
//! test leaves the loop and the original loop is unreachable. No trip-count analysis is
//! needed: whatever the folding can decide is unrolled, whatever it cannot is left.
//!
//! A uniform loop inside a varying region also leaves when no lane is on (the
//! lowering's `brif any(m)` on the mask the loop was entered with): a test on a
//! loop-invariant condition. The first copy keeps it; past it, the condition is known
//! (the copies reached from its staying side see it as the constant it must have
//! been, [`fold_guards`]), so the masked updates of the counter fold and the later
//! copies' tests go.
//!
//! A loop is tried only when it is innermost (outer loops are tried once their inner
//! loops are gone), has a preheader (its one entry, ending in `jump`), and its copies'
//! exit tests all fold but such invariant ones: a copy whose exit test stays a `brif`
//! on a varying-per-iteration condition means a trip count that depends on run-time
//! values (a `foreach` over a varying range, a `while` on data), and the loop is left
//! as it was. The peeling runs on a copy of the function, kept
//! only when the loop disappears within [`MAX_TRIPS`] iterations and
//! [`MAX_GROWTH`] added instructions.
//!
//! Cost: a peel is a few linear passes over the function (dominators, folding, the
//! repair of the values the exits read), and a function gets at most [`MAX_TRIALS`]
//! trials of at most `MAX_TRIPS + 1` peels, so the pass is linear in the function's
//! size, with a large constant: it is off by default.
//!
//! Why: straight-line code lets the later passes and the back ends see across
//! iterations. Shuffle synthesis pairs only loads of one block, so a stencil that reads
//! its window in a loop (ISPC's examples do) gets its neighbouring loads paired once the
//! window is unrolled; the loop's counter, compare and branch go too.

use rustc_hash::FxHashSet;

use crate::ir::dominance::DominatorTree;
use crate::ir::{Block, Function, InstData, Module, Value};

use super::{cfg, const_fold};

/// The most iterations a loop may have to be unrolled.
pub const MAX_TRIPS: usize = 32;
/// The most instructions unrolling one loop may add.
pub const MAX_GROWTH: usize = 2048;
/// The most loops unrolled in one function.
pub const MAX_LOOPS: usize = 32;
/// The most loops tried in one function, unrolled or not: each trial costs a few
/// passes over the function, so this keeps the pass linear in the function's size.
pub const MAX_TRIALS: usize = 64;

/// Unrolls the constant-trip loops of every function.
pub fn run_module(module: &mut Module) {
    super::each_function(module, |_, f| {
        unroll_function(f);
    });
}

/// Unrolls what it can in `func`, innermost loops first; returns how many loops went.
pub fn unroll_function(func: &mut Function) -> usize {
    let mut done = 0;
    // Headers whose loops stay: block numbers are stable until the end.
    let mut kept: FxHashSet<Block> = FxHashSet::default();
    while done < MAX_LOOPS && done + kept.len() < MAX_TRIALS {
        let Some(header) = innermost_loop(func, &kept) else {
            break;
        };
        let mut trial = func.clone();
        if unroll_loop(&mut trial, header) {
            *func = trial;
            done += 1;
        } else {
            kept.insert(header);
        }
    }
    if done > 0 {
        cfg::remove_trivial_params(func);
        cfg::merge_jump_chains(func);
        cfg::remove_unreachable_blocks(func);
    }
    done
}

/// A loop not in `kept` that holds no other loop, with a preheader.
fn innermost_loop(func: &Function, kept: &FxHashSet<Block>) -> Option<Block> {
    let dom = DominatorTree::compute(func);
    let preds = cfg::predecessors(func);
    let headers: Vec<Block> = dom
        .rpo()
        .iter()
        .copied()
        .filter(|&h| preds[h].iter().any(|&p| dom.dominates(h, p)))
        .collect();
    headers.iter().copied().find(|&h| {
        if kept.contains(&h) {
            return false;
        }
        let Some(lp) = cfg::natural_loop(&dom, &preds, h) else {
            return false;
        };
        let inner = headers.iter().any(|&o| o != h && lp.blocks.contains(&o));
        !inner && preheader(func, &lp).is_some()
    })
}

/// The loop's one entry, when it ends in a `jump`.
fn preheader(func: &Function, lp: &cfg::NaturalLoop) -> Option<Block> {
    let [entry] = lp.entries[..] else {
        return None;
    };
    let t = func.terminator(entry)?;
    matches!(func.insts[t], InstData::Jump { .. }).then_some(entry)
}

/// Peels the loop of `header` until it is gone; false (with `func` half-peeled, to be
/// dropped) when a copy's exit test does not fold or a limit is reached.
fn unroll_loop(func: &mut Function, header: Block) -> bool {
    let mut added = 0;
    // `n` trips take `n + 1` copies: the last one's test leaves.
    let mut peeled = 0;
    loop {
        let dom = DominatorTree::compute(func);
        if !dom.is_reachable(header) {
            return true;
        }
        if peeled > MAX_TRIPS {
            return false;
        }
        let preds = cfg::predecessors(func);
        let Some(lp) = cfg::natural_loop(&dom, &preds, header) else {
            return false;
        };
        let Some(entry) = preheader(func, &lp) else {
            return false;
        };
        let size: usize = lp.blocks.iter().map(|&b| func.blocks[b].insts.len()).sum();
        added += size;
        if added > MAX_GROWTH {
            return false;
        }
        let copies = peel(func, &lp, header, entry);
        cfg::remove_trivial_params(func);
        let region: FxHashSet<Block> = copies.iter().chain(&lp.blocks).copied().collect();
        fold_guards(func, &copies, &region);
        // No launch mask: whether a call reaches this function is the module's to
        // know, and the clean-up before this pass folded what the launch mask decides.
        const_fold::run(func, None);
        if exit_test_stays(func, &copies, header, &region, peeled == 0) {
            return false;
        }
        peeled += 1;
    }
}

/// Copies the loop's blocks; the copy runs the first iteration, from `entry`, and goes
/// on to the original header. Returns the copies.
fn peel(func: &mut Function, lp: &cfg::NaturalLoop, header: Block, entry: Block) -> Vec<Block> {
    let list: Vec<Block> = func
        .layout
        .iter()
        .copied()
        .filter(|b| lp.blocks.contains(b))
        .collect();
    let (bmap, vmap) = cfg::clone_blocks(func, &list);
    let copy_header = bmap[&header];
    for b in &list {
        let t = func.terminator(bmap[b]).expect("a copied terminator");
        cfg::retarget(&mut func.insts[t], |s| {
            if s == copy_header {
                header
            } else {
                s
            }
        });
    }
    let t = func.terminator(entry).expect("the preheader's jump");
    cfg::retarget(&mut func.insts[t], |s| {
        if s == header {
            copy_header
        } else {
            s
        }
    });
    let skip: FxHashSet<Block> = list.iter().flat_map(|b| [*b, bmap[b]]).collect();
    // Only values read outside the loop and its copy need repair (the exits'): one scan
    // here instead of one per copied value in `repair_clones`.
    let read_outside = used_outside(func, &skip);
    let vmap = vmap
        .into_iter()
        .filter(|(orig, _)| read_outside.contains(orig))
        .collect();
    cfg::repair_clones(func, &[vmap], &skip);
    list.iter().map(|b| bmap[b]).collect()
}

/// The values read by the instructions of the blocks not in `inside`.
fn used_outside(func: &Function, inside: &FxHashSet<Block>) -> FxHashSet<Value> {
    func.layout
        .iter()
        .filter(|b| !inside.contains(b))
        .flat_map(|&b| func.blocks[b].insts.iter())
        .flat_map(|&i| func.insts[i].operands().to_vec())
        .collect()
}

/// Whether a reachable copy still ends in a `brif` one of whose targets leaves the
/// iteration (neither a copy nor the original header): an exit test that did not fold.
/// In the `first` copy, a test on a condition invariant in `region` may stay (a guard:
/// the later copies read it as a constant, [`fold_guards`]); in a later copy such a
/// test is one that changes from trip to trip (`i < n`, `n` a run-time value, once
/// `i` folded), and stays too.
fn exit_test_stays(
    func: &Function,
    copies: &[Block],
    header: Block,
    region: &FxHashSet<Block>,
    first: bool,
) -> bool {
    let reachable = cfg::reachable(func);
    let inside: FxHashSet<Block> = copies.iter().copied().chain([header]).collect();
    let defined = defined_in(func, region);
    copies.iter().any(|&b| {
        reachable[b]
            && cfg::brif_of(func, b).is_some_and(|(cond, then_dest, else_dest)| {
                let exits = [then_dest, else_dest]
                    .iter()
                    .any(|call| !inside.contains(&call.block));
                let guard = first && invariant(func, &defined, cond, GUARD_DEPTH);
                exits && !guard
            })
    })
}

/// How deep an invariant condition's computation may be.
const GUARD_DEPTH: u32 = 6;

/// The values `region`'s blocks define (parameters and results).
fn defined_in(func: &Function, region: &FxHashSet<Block>) -> FxHashSet<Value> {
    region
        .iter()
        .flat_map(|&b| func.values_defined_in(b))
        .collect()
}

/// Whether `v` is the same on every run of the region defining `defined`
/// ([`cfg::invariant_in`]).
fn invariant(func: &Function, defined: &FxHashSet<Value>, v: Value, depth: u32) -> bool {
    cfg::invariant_in(func, &|x| defined.contains(&x), v, depth)
}

/// For each `brif` ending a copy on a condition invariant in `region` (a guard), the
/// region's blocks reached only through one of its sides read the condition (and any
/// value computed the same way, [`cfg::same_value`]) as the constant that side means:
/// a block the side's target dominates, when the target's only predecessor is the
/// guard's block. The constant is defined at the top of that target.
fn fold_guards(func: &mut Function, copies: &[Block], region: &FxHashSet<Block>) {
    let defined = defined_in(func, region);
    let preds = cfg::predecessors(func);
    let mut sides = Vec::new();
    for &g in copies {
        let Some((cond, then_dest, else_dest)) = cfg::brif_of(func, g) else {
            continue;
        };
        if then_dest.block == else_dest.block || !invariant(func, &defined, cond, GUARD_DEPTH) {
            continue;
        }
        for (target, bits) in [(then_dest.block, 1), (else_dest.block, 0)] {
            if region.contains(&target) && preds[target][..] == [g] {
                sides.push((cond, target, bits));
            }
        }
    }
    if sides.is_empty() {
        return;
    }
    let dom = DominatorTree::compute(func);
    for (cond, target, bits) in sides {
        let ty = func.value_type(cond);
        let span = func.spans[func.terminator(target).expect("a terminator")];
        let k = func.append_inst(target, InstData::Iconst { ty, bits }, Some(ty), span);
        let moved = func.blocks[target].insts.pop().expect("the constant");
        func.blocks[target].insts.insert(0, moved);
        debug_assert_eq!(moved, k);
        let known = func.results[k].expect("a constant's result");
        for &d in region {
            if !dom.dominates(target, d) {
                continue;
            }
            for i in func.blocks[d].insts.clone() {
                if i == k {
                    continue;
                }
                let ops: Vec<Value> = func.insts[i].operands().to_vec();
                let replace: Vec<bool> = ops
                    .iter()
                    .map(|&v| v == cond || cfg::same_value(func, v, cond, GUARD_DEPTH))
                    .collect();
                if replace.iter().any(|&r| r) {
                    let mut n = 0;
                    func.insts[i].map_operands(|v| {
                        n += 1;
                        if replace[n - 1] {
                            known
                        } else {
                            v
                        }
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::passes::cfg::run_on_text;

    /// `s = 0; for (i = 0; i < N; i++) s += i * k; return s;`, with `N` in place.
    fn counted(n: u32) -> String {
        format!(
            "module lanes 16 ptr 8

function internal @f(i32) -> i32 {{
block0(v0: i32):
    v1 = iconst.i32 0
    jump block1(v1, v1)
block1(v2: i32, v3: i32):
    v4 = iconst.i32 {n}
    v5 = icmp slt v2, v4
    brif v5, block2, block3
block2:
    v6 = imul v2, v0
    v7 = iadd v3, v6
    v8 = iconst.i32 1
    v9 = iadd v2, v8
    jump block1(v9, v7)
block3:
    return v3
}}
"
        )
    }

    fn unroll_and_fold(m: &mut crate::ir::Module) {
        super::run_module(m);
        crate::passes::const_fold::run_module(m);
        crate::passes::dce::run_module(m);
    }

    /// Three trips: `0*k + 1*k + 2*k`, the counter, its test and the branch gone.
    #[test]
    fn a_counted_loop_becomes_straight_line_code() {
        let out = run_on_text(&counted(3), unroll_and_fold);
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function internal @f(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 2
    v2 = imul v1, v0
    v3 = iadd v0, v2
    return v3
}
"
        );
    }

    /// A loop of no trip is gone too; one of more than `MAX_TRIPS` stays as it was.
    #[test]
    fn trip_counts_from_zero_to_the_limit() {
        let none = run_on_text(&counted(0), unroll_and_fold);
        assert!(
            none.contains("return v1") && !none.contains("brif"),
            "{none}"
        );
        let limit = super::MAX_TRIPS as u32;
        let at = run_on_text(&counted(limit), unroll_and_fold);
        assert!(!at.contains("brif"), "{at}");
        let over = counted(limit + 1);
        assert_eq!(run_on_text(&over, super::run_module), over);
    }

    /// `for (i = 0; i < n; i++)`: the trip count is a run-time value, so the first
    /// copy's test does not fold and the loop stays as it was.
    #[test]
    fn a_loop_to_a_run_time_bound_stays() {
        let text = counted(3).replace("v4 = iconst.i32 3", "v4 = iadd v0, v0");
        assert_eq!(run_on_text(&text, super::run_module), text);
    }

    /// A uniform loop in a varying region also leaves when no lane is on: the test of
    /// `any m` (`m` from before the loop) stays once, before the first trip, and the
    /// masked counter updates (`select` on it) fold past it.
    #[test]
    fn a_loop_guarded_by_an_invariant_any_is_unrolled_behind_one_guard() {
        let text = "module lanes 16 ptr 8

function internal @f([bool], [i32]) -> [i32] {
block0(v0: [bool], v1: [i32]):
    v2 = iconst.i32 0
    jump block1(v2, v1)
block1(v3: i32, v4: [i32]):
    v5 = any v0
    brif v5, block2, block4
block2:
    v6 = iconst.i32 2
    v7 = icmp slt v3, v6
    brif v7, block3, block4
block3:
    v8 = iadd v4, v1
    v9 = select v0, v8, v4
    v10 = iconst.i32 1
    v11 = iadd v3, v10
    v12 = select v5, v11, v3
    jump block1(v12, v9)
block4:
    return v4
}
";
        let out = run_on_text(text, unroll_and_fold);
        assert_eq!(out.matches("brif").count(), 1, "{out}");
        assert_eq!(out.matches("any v0").count(), 1, "{out}");
        assert!(!out.contains("icmp"), "{out}");
        assert_eq!(out.matches("select v0").count(), 2, "{out}");
    }

    /// An inner loop goes first, then the outer one, whose body now holds its copies.
    #[test]
    fn nested_counted_loops_are_unrolled_inside_out() {
        let text = "module lanes 16 ptr 8

function internal @f(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 0
    jump block1(v1, v1)
block1(v2: i32, v3: i32):
    v4 = iconst.i32 2
    v5 = icmp slt v2, v4
    brif v5, block2, block6
block2:
    jump block3(v1, v3)
block3(v6: i32, v7: i32):
    v8 = icmp slt v6, v4
    brif v8, block4, block5
block4:
    v9 = iadd v7, v0
    v10 = iconst.i32 1
    v11 = iadd v6, v10
    jump block3(v11, v9)
block5:
    v12 = iconst.i32 1
    v13 = iadd v2, v12
    jump block1(v13, v7)
block6:
    return v3
}
";
        let out = run_on_text(text, unroll_and_fold);
        assert!(!out.contains("brif") && !out.contains("block1"), "{out}");
        // 0 + k + k + k + k, the first addition folded.
        assert_eq!(out.matches("iadd").count(), 3, "{out}");
    }
}
