//! Tail duplication: a small join block reached only by unconditional jumps is copied
//! into each of its predecessors, so each path runs its own copy without the jump, and a
//! branch at the join's end can then be threaded per path ([`super::jump_thread`]).
//!
//! **Divergence.** A join whose paths split at a divergent branch (the terminator of
//! its immediate dominator is a `brif any(m)` with `m` divergent, see
//! [`super::branch_is_divergent`]) is a reconvergence point of the source program: a
//! SIMT machine would run every copy, one per path. By default such joins (and joins
//! ending in a divergent skip) are left alone; `--force-cfg-opts` duplicates them too.
//! In this IR every path is gang-uniform, so the gang still runs one copy per visit.
//!
//! Limits: joins of at most [`MAX_BODY`] instructions and [`MAX_PREDS`] predecessors,
//! never a loop header or the entry.

use crate::analysis::uniformity::{analyze_divergence, FunctionUniformity};
use crate::ir::dominance::DominatorTree;
use crate::ir::{Block, Function, InstData, Module};

use super::{cfg, Scope};

/// The largest join (non-terminator instructions) that is copied.
pub const MAX_BODY: usize = 8;
/// The most predecessors a duplicated join may have.
pub const MAX_PREDS: usize = 4;
/// The most joins duplicated per function.
const MAX_DUPS: usize = 32;

/// Duplicates the joins of uniform branches in every function.
pub fn run_uniform(module: &mut Module) {
    super::each_function(module, |_, f| {
        dup_function(f, Scope::Uniform);
    });
}

/// The same, with every mask branch counted as divergent (`--no-uniformity`).
pub fn run_typed(module: &mut Module) {
    super::each_function(module, |_, f| {
        dup_function(f, Scope::Typed);
    });
}

/// Duplicates every small join (`--force-cfg-opts`).
pub fn run_forced(module: &mut Module) {
    super::each_function(module, |_, f| {
        dup_function(f, Scope::All);
    });
}

/// Duplicates what it can in one function; returns how many joins were duplicated.
pub fn dup_function(func: &mut Function, scope: Scope) -> usize {
    let mut done = 0;
    while done < MAX_DUPS {
        let res = analyze_divergence(func);
        let Some(block) = find_join(func, &res, scope) else {
            break;
        };
        duplicate(func, block);
        done += 1;
    }
    done
}

fn find_join(func: &Function, res: &FunctionUniformity, scope: Scope) -> Option<Block> {
    let entry = func.entry_block()?;
    let dom = DominatorTree::compute(func);
    let preds = cfg::predecessors(func);
    dom.rpo().iter().copied().find(|&b| {
        let ps = &preds[b];
        let by_jumps = ps.iter().all(|&p| {
            p != b
                && func
                    .terminator(p)
                    .is_some_and(|t| matches!(func.insts[t], InstData::Jump { .. }))
        });
        b != entry
            && (2..=MAX_PREDS).contains(&ps.len())
            && by_jumps
            && !ps.iter().any(|&p| dom.dominates(b, p))
            && cfg::body_len(func, b) <= MAX_BODY
            && !divergent_join(func, res, &dom, b, scope)
    })
}

/// Whether `block` joins the paths of a branch out of `scope` or ends in one.
fn divergent_join(
    func: &Function,
    res: &FunctionUniformity,
    dom: &DominatorTree,
    block: Block,
    scope: Scope,
) -> bool {
    let divergent_brif = |b: Block| {
        func.terminator(b).is_some_and(|t| match func.insts[t] {
            InstData::Brif { cond, .. } => scope.excludes(func, res, cond),
            _ => false,
        })
    };
    divergent_brif(block) || dom.idom(block).is_some_and(divergent_brif)
}

/// Replaces each predecessor's jump to `block` by a copy of `block`'s instructions.
fn duplicate(func: &mut Function, block: Block) {
    let preds = cfg::predecessors(func)[block].clone();
    let params = func.blocks[block].params.clone();
    let results: Vec<_> = func.blocks[block]
        .insts
        .iter()
        .filter_map(|&i| func.results[i])
        .collect();
    // Per original value, the predecessor now defining it and its value there.
    let mut defs: rustc_hash::FxHashMap<crate::ir::Value, Vec<(Block, crate::ir::Value)>> =
        Default::default();
    for p in preds {
        let t = func.terminator(p).expect("a predecessor ends in a jump");
        let InstData::Jump { dest } = func.insts[t].clone() else {
            continue;
        };
        let (bmap, vmap) = cfg::clone_blocks(func, &[block]);
        let copy = bmap[&block];
        cfg::retarget(&mut func.insts[t], |_| copy);
        merge_into(func, p, copy);
        for (&orig, &arg) in params.iter().zip(dest.args.iter()) {
            defs.entry(orig).or_default().push((p, arg));
        }
        for &r in &results {
            defs.entry(r).or_default().push((p, vmap[&r]));
        }
    }
    cfg::clear_unreachable(func);
    let mut origs: Vec<_> = defs.keys().copied().collect();
    origs.sort();
    for orig in origs {
        cfg::repair_ssa(func, orig, &defs[&orig], &Default::default());
    }
}

/// `pred` ends in `jump copy(args)` and is `copy`'s only predecessor: moves `copy`'s
/// instructions into `pred`, its parameters replaced by the arguments.
pub fn merge_into(func: &mut Function, pred: Block, copy: Block) {
    let t = func.terminator(pred).expect("a jump");
    let InstData::Jump { dest } = func.insts[t].clone() else {
        return;
    };
    let params = func.blocks[copy].params.clone();
    for (&p, &a) in params.iter().zip(dest.args.iter()) {
        cfg::replace_uses(func, p, a);
    }
    func.blocks[pred].insts.pop();
    let moved = std::mem::take(&mut func.blocks[copy].insts);
    func.blocks[pred].insts.extend(moved);
    func.blocks[copy].params.clear();
    let trap = InstData::Trap {
        code: crate::ir::TrapCode::Unreachable,
    };
    func.append_inst(copy, trap, None, crate::source::Span::default());
}

#[cfg(test)]
mod tests {
    use crate::passes::cfg::run_on_text;

    #[test]
    fn small_join_of_a_uniform_branch_is_copied_into_its_predecessors() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @f(bool, i32) -> i32 {
block0(v0: bool, v1: i32):
    brif v0, block1, block2
block1:
    v2 = iadd v1, v1
    jump block3(v2)
block2:
    v3 = imul v1, v1
    jump block3(v3)
block3(v4: i32):
    v5 = iconst.i32 1
    v6 = iadd v4, v5
    return v6
}
",
            super::run_uniform,
        );
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function internal @f(bool, i32) -> i32 {
block0(v0: bool, v1: i32):
    brif v0, block1, block2
block1:
    v2 = iadd v1, v1
    v3 = iconst.i32 1
    v4 = iadd v2, v3
    return v4
block2:
    v5 = imul v1, v1
    v6 = iconst.i32 1
    v7 = iadd v5, v6
    return v7
block3:
    trap unreachable
block4:
    trap unreachable
block5:
    trap unreachable
}
"
        );
    }

    /// The join of a divergent `if` (both regions' skips test `lane_index` masks).
    const DIVERGENT_JOIN: &str = "module lanes 16 ptr 8

function internal @f([i32]) -> [i32] {
block0(v0: [i32]):
    v1 = special lane_index
    v2 = icmp slt v1, v0
    v3 = any v2
    brif v3, block1, block2
block1:
    v4 = iadd v0, v0
    jump block3(v4)
block2:
    v5 = imul v0, v0
    jump block3(v5)
block3(v6: [i32]):
    v7 = iadd v6, v0
    return v7
}
";

    #[test]
    fn divergent_join_is_left_alone_unless_forced() {
        assert_eq!(
            run_on_text(DIVERGENT_JOIN, super::run_uniform),
            DIVERGENT_JOIN
        );
        let forced = run_on_text(DIVERGENT_JOIN, super::run_forced);
        assert_eq!(forced.matches("return").count(), 2, "{forced}");
    }

    #[test]
    fn value_used_after_the_join_gets_a_parameter() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @f(bool, i32) -> i32 {
block0(v0: bool, v1: i32):
    brif v0, block1, block2
block1:
    jump block3
block2:
    jump block3
block3:
    v2 = iadd v1, v1
    jump block4
block4:
    v3 = iadd v2, v1
    v4 = iadd v3, v1
    v5 = iadd v4, v1
    v6 = iadd v5, v1
    v7 = iadd v6, v1
    v8 = iadd v7, v1
    v9 = iadd v8, v1
    v10 = iadd v9, v1
    v11 = iadd v10, v1
    return v11
}
",
            super::run_uniform,
        );
        // block4 is too big to copy: it reads the copy of v2 its path computed, through
        // a new parameter.
        assert!(out.contains("block4(v"), "{out}");
        assert!(out.contains("jump block4(v"), "{out}");
    }
}
