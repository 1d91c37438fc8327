//! `--no-skip-empty`: removes the optional runtime skips of divergent regions, so each
//! region always runs under its mask, even an empty one (paper 002's runtime
//! uniformity checks turned off, to measure what they buy).
//!
//! The lowering guards each region of a varying `if` (and the rest of a function after
//! a masked `return`) with `brif any(m), region, after`. Such a branch is an *optional
//! skip* when running the region with `m` empty is equivalent to skipping it:
//! - its condition is `any m` itself;
//! - every path from the region's first block reaches `after` (or a `trap`) without
//!   coming back to the branch: the branch is not the test of a loop (loop tests on
//!   `any(mask)` are loop control: with them gone the loop would never end) and the
//!   region does not `return`;
//! - the region has no barrier (a gang with no lane in the region must not wait at
//!   one) and calls no function that may recurse (the skip is what ends a recursion
//!   whose lanes have all stopped).
//!
//! Everything else in a region is already correct under an empty mask: masked memory
//! operations, `print` and reductions do nothing, uniform updates are `select(any(m),
//! ..)`, and the lowering guards the loops inside varying regions with their own
//! `any(mask)` loop tests. The optional skips become `jump region`.

use rustc_hash::FxHashSet;

use crate::ir::{Block, FuncRef, Function, InstData, LaneOp, Module, ValueDef};

/// Removes the optional skips of every function.
pub fn run_module(module: &mut Module) {
    let recursive = recursive_functions(module);
    for (_, f) in module.functions.iter_mut() {
        remove_skips(f, &recursive);
    }
}

/// Turns the optional skips of `func` into jumps; returns how many.
pub fn remove_skips(func: &mut Function, recursive: &FxHashSet<FuncRef>) -> usize {
    let mut removed = 0;
    for block in func.layout.clone() {
        let Some(term) = func.terminator(block) else {
            continue;
        };
        let InstData::Brif {
            cond,
            then_dest,
            else_dest,
        } = func.insts[term].clone()
        else {
            continue;
        };
        let is_any = matches!(func.values[cond].def, ValueDef::Result(i)
            if matches!(func.insts[i], InstData::Lane { op: LaneOp::Any, .. }));
        if is_any && optional_region(func, block, then_dest.block, else_dest.block, recursive) {
            func.insts[term] = InstData::Jump { dest: then_dest };
            removed += 1;
        }
    }
    removed
}

/// Whether the region entered at `start` from `branch` rejoins at `after` on every
/// path, without returning, without a barrier or a possibly recursive call.
fn optional_region(
    func: &Function,
    branch: Block,
    start: Block,
    after: Block,
    recursive: &FxHashSet<FuncRef>,
) -> bool {
    if start == after || start == branch {
        return false;
    }
    let mut seen = FxHashSet::default();
    let mut stack = vec![start];
    while let Some(b) = stack.pop() {
        if b == after || !seen.insert(b) {
            continue;
        }
        if b == branch {
            return false;
        }
        for &i in &func.blocks[b].insts {
            match &func.insts[i] {
                InstData::Barrier | InstData::Return { .. } => return false,
                InstData::Call { func: callee, .. } if recursive.contains(callee) => return false,
                _ => {}
            }
        }
        stack.extend(func.successors(b));
    }
    true
}

/// The functions that can reach themselves through calls.
pub fn recursive_functions(module: &Module) -> FxHashSet<FuncRef> {
    let callees = |f: FuncRef| -> Vec<FuncRef> {
        let func = &module.functions[f];
        func.layout
            .iter()
            .flat_map(|&b| func.blocks[b].insts.iter())
            .filter_map(|&i| match func.insts[i] {
                InstData::Call { func, .. } => Some(func),
                _ => None,
            })
            .collect()
    };
    let mut out = FxHashSet::default();
    for (f, _) in module.functions.iter() {
        let mut seen = FxHashSet::default();
        let mut stack = callees(f);
        while let Some(g) = stack.pop() {
            if g == f {
                out.insert(f);
                break;
            }
            if seen.insert(g) && module.functions.get(g).is_some() {
                stack.extend(callees(g));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::passes::cfg::run_on_text;

    #[test]
    fn region_skip_goes_loop_test_stays() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @f([i32]) -> [i32] {
block0(v0: [i32]):
    v1 = special lane_index
    v2 = icmp slt v1, v0
    v3 = any v2
    brif v3, block1, block2(v0)
block1:
    v4 = iadd v0, v0
    v5 = select v2, v4, v0
    jump block2(v5)
block2(v6: [i32]):
    jump block3(v6)
block3(v7: [i32]):
    v8 = icmp slt v7, v1
    v9 = any v8
    brif v9, block4, block5
block4:
    v10 = iadd v7, v7
    v11 = select v8, v10, v7
    jump block3(v11)
block5:
    return v7
}
",
            super::run_module,
        );
        assert!(out.contains("jump block1\n"), "{out}");
        assert!(out.contains("brif v9, block4, block5"), "{out}");
    }

    #[test]
    fn skip_over_a_barrier_or_a_return_stays() {
        let text = "module lanes 16 ptr 8

function internal @f([i32]) -> [i32] {
block0(v0: [i32]):
    v1 = special lane_index
    v2 = icmp slt v1, v0
    v3 = any v2
    brif v3, block1, block2
block1:
    barrier
    jump block2
block2:
    v4 = any v2
    brif v4, block3, block4
block3:
    return v0
block4:
    return v1
}
";
        assert_eq!(run_on_text(text, super::run_module), text);
    }
}
