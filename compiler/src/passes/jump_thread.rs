//! Jump threading: when the condition of a block's `brif` is already decided on one of
//! its incoming edges, that edge gets a copy of the block that jumps straight to the
//! decided successor, and the test is gone from that path.
//!
//! A condition is decided on an edge `P -> B` when it is (structurally, see
//! [`cfg::same_value`]) the condition of a `brif` that every path into `P` took on one
//! known side (found by walking up single-predecessor blocks from `P`, `P`'s own branch
//! included), a uniform `bool` constant, or a parameter of `B` that the edge passes
//! such a value; `bnot` is looked through.
//!
//! **Divergence.** Every `brif` of this IR is gang-uniform; a source-level divergent
//! branch is a mask split plus `brif any(m)` runtime skips of its regions, with `m`
//! divergent ([`super::branch_is_divergent`]). Paper 002's harm comes from a SIMT
//! machine running every duplicated path of a divergent branch. By default this pass
//! only threads branches the uniformity analysis proves uniform (plain uniform
//! conditions, or `any(m)` with `m` uniform-valued); `--force-cfg-opts` threads the
//! divergent skips too. Here threading a skip duplicates code on a path the gang takes
//! at most once, so it costs code size, not executed instructions.
//!
//! The entry points first run [`super::thread_split`], which threads a whole re-tested
//! source-level `if` (`if (c) A; else B; T; if (c) C; else D;`, two mask splits on the
//! same condition) across `T`: paper 002's example, where forcing it on a divergent
//! condition runs both paths and `T` twice, as a SIMT machine does.
//!
//! Limits: a block of at most [`MAX_BODY`] instructions, not a loop header (no new
//! irreducible loops), at most [`MAX_THREADS`] threadings per function.

use crate::analysis::uniformity::{analyze_divergence, FunctionUniformity};
use crate::ir::dominance::DominatorTree;
use crate::ir::{Block, Function, InstData, Module, UnaryOp, Value, ValueDef};

use super::{cfg, thread_split, Scope};

/// The largest block (non-terminator instructions) that is copied.
pub const MAX_BODY: usize = 16;
/// The most threadings per function (bounds the code growth).
pub const MAX_THREADS: usize = 32;
/// How far up single-predecessor chains a decided condition is looked for.
const MAX_WALK: usize = 8;

/// Threads the uniform branches of every function.
pub fn run_uniform(module: &mut Module) {
    super::each_function(module, |_, f| {
        thread_split::split_function(f, Scope::Uniform);
        thread_function(f, Scope::Uniform);
    });
}

/// The same, with every mask branch counted as divergent (`--no-uniformity`).
pub fn run_typed(module: &mut Module) {
    super::each_function(module, |_, f| {
        thread_split::split_function(f, Scope::Typed);
        thread_function(f, Scope::Typed);
    });
}

/// Threads every branch, divergent skips included (`--force-cfg-opts`).
pub fn run_forced(module: &mut Module) {
    super::each_function(module, |_, f| {
        thread_split::split_function(f, Scope::All);
        thread_function(f, Scope::All);
    });
}

/// One threading: the edge `pred -> block` (the `call`-th branch call of `pred`'s
/// terminator) goes to a copy of `block` that takes `then` (or the else side).
struct Thread {
    pred: Block,
    call: usize,
    block: Block,
    then: bool,
}

/// Threads what it can in one function; returns how many edges were threaded.
pub fn thread_function(func: &mut Function, scope: Scope) -> usize {
    let mut done = 0;
    while done < MAX_THREADS {
        let res = analyze_divergence(func);
        let Some(t) = find_thread(func, &res, scope) else {
            break;
        };
        apply(func, &t);
        done += 1;
    }
    if done > 0 {
        cfg::remove_trivial_params(func);
    }
    done
}

fn find_thread(func: &Function, res: &FunctionUniformity, scope: Scope) -> Option<Thread> {
    let entry = func.entry_block()?;
    let dom = DominatorTree::compute(func);
    let preds = cfg::predecessors(func);
    for &block in dom.rpo() {
        let Some(term) = func.terminator(block) else {
            continue;
        };
        let InstData::Brif { cond, .. } = func.insts[term] else {
            continue;
        };
        let loop_header = preds[block].iter().any(|&p| dom.dominates(block, p));
        if block == entry || loop_header || cfg::body_len(func, block) > MAX_BODY {
            continue;
        }
        if scope.excludes(func, res, cond) {
            continue;
        }
        let mut seen = rustc_hash::FxHashSet::default();
        for &pred in &preds[block] {
            if !seen.insert(pred) || pred == block {
                continue;
            }
            let pterm = func.terminator(pred)?;
            for (call, bc) in func.insts[pterm].successors().iter().enumerate() {
                if bc.block != block {
                    continue;
                }
                let edge = Edge {
                    pred,
                    call,
                    block,
                    args: &bc.args,
                };
                if let Some(then) = decided(func, &preds, &edge, cond) {
                    return Some(Thread {
                        pred,
                        call,
                        block,
                        then,
                    });
                }
            }
        }
    }
    None
}

/// An edge into `block`, with the arguments it passes.
struct Edge<'a> {
    pred: Block,
    call: usize,
    block: Block,
    args: &'a [Value],
}

/// The value `v` of `edge.block` has on `edge`, if decided.
fn decided(
    func: &Function,
    preds: &cranelift_entity::SecondaryMap<Block, Vec<Block>>,
    edge: &Edge,
    v: Value,
) -> Option<bool> {
    match func.values[v].def {
        ValueDef::Param(b, i) if b == edge.block => decided_at(
            func,
            preds,
            edge.pred,
            Some(edge.call),
            edge.args[i as usize],
        ),
        ValueDef::Result(inst) if func.blocks[edge.block].insts.contains(&inst) => {
            match func.insts[inst] {
                InstData::Unary {
                    op: UnaryOp::Bnot,
                    arg,
                } => decided(func, preds, edge, arg).map(|b| !b),
                // Compared structurally with the conditions decided before `block`
                // (which cannot name its parameters: it is not a loop header).
                _ => decided_at(func, preds, edge.pred, Some(edge.call), v),
            }
        }
        _ => decided_at(func, preds, edge.pred, Some(edge.call), v),
    }
}

/// The value of `v` (defined outside the edge's target) when control leaves `block`
/// through its `call`-th branch call (`None`: anywhere at the end of `block`).
fn decided_at(
    func: &Function,
    preds: &cranelift_entity::SecondaryMap<Block, Vec<Block>>,
    block: Block,
    call: Option<usize>,
    v: Value,
) -> Option<bool> {
    if let ValueDef::Result(inst) = func.values[v].def {
        match func.insts[inst] {
            InstData::Iconst { ty, bits } if ty == crate::ir::Type::BOOL => {
                return Some(bits & 1 == 1)
            }
            InstData::Unary {
                op: UnaryOp::Bnot,
                arg,
            } => return decided_at(func, preds, block, call, arg).map(|b| !b),
            _ => {}
        }
    }
    // The branch taken out of `block` itself, then up single-predecessor chains.
    let mut cur = block;
    let mut side = call;
    for _ in 0..MAX_WALK {
        if let (Some(s), Some((cond, then_dest, else_dest))) = (side, cfg::brif_of(func, cur)) {
            if then_dest.block != else_dest.block && cfg::same_value(func, v, cond, 4) {
                return Some(s == 0);
            }
        }
        let [p] = preds[cur][..] else {
            return None;
        };
        if p == cur {
            return None;
        }
        let t = func.terminator(p)?;
        side = func.insts[t]
            .successors()
            .iter()
            .position(|c| c.block == cur);
        cur = p;
    }
    None
}

/// Redirects the edge to a copy of the block that jumps to the decided side.
fn apply(func: &mut Function, t: &Thread) {
    let (bmap, vmap) = cfg::clone_blocks(func, &[t.block]);
    let copy = bmap[&t.block];
    let term = func.terminator(copy).expect("a brif block");
    let InstData::Brif {
        then_dest,
        else_dest,
        ..
    } = func.insts[term].clone()
    else {
        return;
    };
    let dest = if t.then { then_dest } else { else_dest };
    func.insts[term] = InstData::Jump { dest };
    let pterm = func
        .terminator(t.pred)
        .expect("a predecessor ends in a branch");
    if let Some(call) = cfg::calls_mut(&mut func.insts[pterm])
        .into_iter()
        .nth(t.call)
    {
        call.block = copy;
    }
    cfg::repair_clones(func, &[vmap], &Default::default());
}

#[cfg(test)]
mod tests {
    use crate::passes::cfg::run_on_text;

    /// `if (n > 2) A; X; if (n > 2) B else C` with the second test a separate `icmp`.
    const RETEST: &str = "module lanes 16 ptr 8

function internal @f(i32, [i32]) -> [i32] {
block0(v0: i32, v1: [i32]):
    v2 = iconst.i32 2
    v3 = icmp sgt v0, v2
    brif v3, block1, block2(v1)
block1:
    v4 = iadd v1, v1
    jump block2(v4)
block2(v5: [i32]):
    v6 = iconst.i32 2
    v7 = icmp sgt v0, v6
    brif v7, block3, block4
block3:
    v8 = iadd v5, v5
    return v8
block4:
    return v5
}
";

    #[test]
    fn uniform_retest_is_threaded_on_both_edges() {
        let out = run_on_text(RETEST, super::run_uniform);
        // No path tests the condition twice: block2 is gone, each edge has its copy.
        assert_eq!(out.matches("brif").count(), 1, "{out}");
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function internal @f(i32, [i32]) -> [i32] {
block0(v0: i32, v1: [i32]):
    v2 = iconst.i32 2
    v3 = icmp sgt v0, v2
    brif v3, block1, block5
block1:
    v4 = iadd v1, v1
    jump block6
block2:
    trap unreachable
block3:
    v5 = iadd v4, v4
    return v5
block4:
    return v1
block5:
    v6 = iconst.i32 2
    v7 = icmp sgt v0, v6
    jump block4
block6:
    v8 = iconst.i32 2
    v9 = icmp sgt v0, v8
    jump block3
}
"
        );
    }

    /// The same shape on a divergent skip: `any(m)` with `m` from `lane_index`.
    const DIVERGENT: &str = "module lanes 16 ptr 8

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
    v7 = any v2
    brif v7, block3, block4
block3:
    v8 = iadd v6, v6
    v9 = select v2, v8, v6
    return v9
block4:
    return v6
}
";

    #[test]
    fn divergent_skip_is_left_alone_unless_forced() {
        assert_eq!(run_on_text(DIVERGENT, super::run_uniform), DIVERGENT);
        let forced = run_on_text(DIVERGENT, super::run_forced);
        assert_eq!(forced.matches("brif").count(), 1, "{forced}");
    }

    #[test]
    fn constant_block_argument_decides_the_branch() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @f(bool) -> i32 {
block0(v0: bool):
    brif v0, block1, block2
block1:
    v1 = iconst.bool 1
    jump block3(v1)
block2:
    v2 = iconst.bool 0
    jump block3(v2)
block3(v3: bool):
    brif v3, block4, block5
block4:
    v4 = iconst.i32 1
    return v4
block5:
    v5 = iconst.i32 2
    return v5
}
",
            super::run_uniform,
        );
        assert_eq!(out.matches("brif").count(), 1, "{out}");
        assert!(!out.contains("block3(v"), "{out}");
    }
}
