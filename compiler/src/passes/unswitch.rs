//! Loop unswitching: a `brif` inside a loop on a condition that does not change while
//! the loop runs is tested once before the loop instead, which picks one of two copies
//! of the loop, each with the branch replaced by a jump to its side.
//!
//! A condition is loop-invariant when it is defined outside the loop, or computed inside
//! by pure instructions (no division, which may trap) from invariant operands; such a
//! computation is copied into the preheader. The loop needs a preheader: its header's
//! only predecessor outside the loop, ending in `jump header`.
//!
//! **Divergence.** In this IR a source-level divergent branch is a mask split with
//! `brif any(m)` skips of its regions. An invariant divergent condition gives an
//! invariant `any(m)`, and unswitching on it picks, per gang, one copy of the loop with
//! the region always entered or always skipped: correct, and the gang runs one copy.
//! A SIMT machine unswitching a divergent branch runs both copies, which is paper 002's
//! warning. By default only branches the uniformity analysis proves uniform are
//! unswitched ([`super::branch_is_divergent`]); `--force-cfg-opts` unswitches the
//! divergent skips too.
//!
//! Limits: loops of at most [`MAX_LOOP`] instructions, at most [`MAX_UNSWITCH`] per
//! function (each doubles a loop).

use rustc_hash::FxHashSet;

use crate::analysis::uniformity::analyze_function;
use crate::ir::dominance::DominatorTree;
use crate::ir::{BinaryOp, Block, Function, InstData, Module, Value, ValueDef};

use super::cfg;

/// The largest loop (all its instructions) that is copied.
pub const MAX_LOOP: usize = 96;
/// The most unswitchings per function.
pub const MAX_UNSWITCH: usize = 2;
/// How deep an invariant condition's computation may be.
const MAX_DEPTH: u32 = 6;

/// Unswitches uniform branches in every function.
pub fn run_uniform(module: &mut Module) {
    for (_, f) in module.functions.iter_mut() {
        unswitch_function(f, false);
    }
}

/// Unswitches every invariant branch (`--force-cfg-opts`).
pub fn run_forced(module: &mut Module) {
    for (_, f) in module.functions.iter_mut() {
        unswitch_function(f, true);
    }
}

/// A natural loop.
struct Loop {
    header: Block,
    blocks: FxHashSet<Block>,
    preheader: Block,
}

/// One unswitching: the `brif` ending `block` in `lp`.
struct Candidate {
    lp: Loop,
    block: Block,
    cond: Value,
}

/// Unswitches what it can in one function; returns how many loops were unswitched.
pub fn unswitch_function(func: &mut Function, force: bool) -> usize {
    let mut done = 0;
    while done < MAX_UNSWITCH {
        let Some(c) = find_candidate(func, force) else {
            break;
        };
        apply(func, c);
        done += 1;
    }
    if done > 0 {
        cfg::remove_trivial_params(func);
        cfg::merge_jump_chains(func);
    }
    done
}

fn find_candidate(func: &Function, force: bool) -> Option<Candidate> {
    let res = analyze_function(func);
    let dom = DominatorTree::compute(func);
    let preds = cfg::predecessors(func);
    for &header in dom.rpo() {
        let Some(lp) = natural_loop(func, &dom, &preds, header) else {
            continue;
        };
        let size: usize = lp.blocks.iter().map(|&b| func.blocks[b].insts.len()).sum();
        if size > MAX_LOOP {
            continue;
        }
        let order: Vec<Block> = dom
            .rpo()
            .iter()
            .copied()
            .filter(|b| lp.blocks.contains(b))
            .collect();
        for b in order {
            let Some(t) = func.terminator(b) else {
                continue;
            };
            let InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } = &func.insts[t]
            else {
                continue;
            };
            if then_dest.block == else_dest.block
                || !invariant(func, &lp.blocks, *cond, MAX_DEPTH)
                || (!force && super::branch_is_divergent(func, &res, *cond))
            {
                continue;
            }
            return Some(Candidate {
                lp,
                block: b,
                cond: *cond,
            });
        }
    }
    None
}

/// The natural loop of `header` (its back edges' sources and what reaches them
/// without passing `header`), if it has a preheader.
fn natural_loop(
    func: &Function,
    dom: &DominatorTree,
    preds: &cranelift_entity::SecondaryMap<Block, Vec<Block>>,
    header: Block,
) -> Option<Loop> {
    let latches: Vec<Block> = preds[header]
        .iter()
        .copied()
        .filter(|&p| dom.dominates(header, p))
        .collect();
    if latches.is_empty() {
        return None;
    }
    let mut blocks: FxHashSet<Block> = FxHashSet::default();
    blocks.insert(header);
    let mut stack = latches;
    while let Some(b) = stack.pop() {
        if blocks.insert(b) {
            stack.extend(preds[b].iter().copied());
        }
    }
    let outside: Vec<Block> = preds[header]
        .iter()
        .copied()
        .filter(|p| !blocks.contains(p))
        .collect();
    let [preheader] = outside[..] else {
        return None;
    };
    let jumps = func
        .terminator(preheader)
        .is_some_and(|t| matches!(func.insts[t], InstData::Jump { .. }));
    (jumps && dom.is_reachable(preheader)).then_some(Loop {
        header,
        blocks,
        preheader,
    })
}

/// The block defining `v`, if it is an instruction's result.
fn def_block(func: &Function, v: Value) -> Option<Block> {
    match func.values[v].def {
        ValueDef::Param(b, _) => Some(b),
        ValueDef::Result(i) => func
            .layout
            .iter()
            .copied()
            .find(|&b| func.blocks[b].insts.contains(&i)),
    }
}

/// Whether `v` has the same value on every iteration of the loop made of `blocks`.
fn invariant(func: &Function, blocks: &FxHashSet<Block>, v: Value, depth: u32) -> bool {
    if !def_block(func, v).is_some_and(|b| blocks.contains(&b)) {
        return true;
    }
    let ValueDef::Result(i) = func.values[v].def else {
        return false;
    };
    let data = &func.insts[i];
    let divides = matches!(
        data,
        InstData::Binary {
            op: BinaryOp::Sdiv | BinaryOp::Udiv | BinaryOp::Srem | BinaryOp::Urem,
            ..
        }
    );
    depth > 0
        && cfg::is_pure(data)
        && !divides
        && data
            .operands()
            .iter()
            .all(|&x| invariant(func, blocks, x, depth - 1))
}

/// Copies the computation of invariant `v` to the end of `block` (before its
/// terminator); the value there.
fn materialize(func: &mut Function, blocks: &FxHashSet<Block>, block: Block, v: Value) -> Value {
    if !def_block(func, v).is_some_and(|b| blocks.contains(&b)) {
        return v;
    }
    let ValueDef::Result(i) = func.values[v].def else {
        return v;
    };
    let mut data = func.insts[i].clone();
    let ops: Vec<Value> = data.operands().to_vec();
    let new_ops: Vec<Value> = ops
        .iter()
        .map(|&x| materialize(func, blocks, block, x))
        .collect();
    let mut k = 0;
    data.map_operands(|_| {
        k += 1;
        new_ops[k - 1]
    });
    let term = func.blocks[block].insts.pop().expect("a terminator");
    let ni = func.append_inst(block, data, Some(func.value_type(v)), func.spans[i]);
    func.blocks[block].insts.push(term);
    func.results[ni].expect("a pure instruction has a result")
}

fn apply(func: &mut Function, c: Candidate) {
    let Candidate { lp, block, cond } = c;
    let hoisted = materialize(func, &lp.blocks, lp.preheader, cond);
    let list: Vec<Block> = func
        .layout
        .iter()
        .copied()
        .filter(|b| lp.blocks.contains(b))
        .collect();
    let (bmap, vmap) = cfg::clone_blocks(func, &list);
    // The original loop takes the then side, the copy the else side.
    for (b, then) in [(block, true), (bmap[&block], false)] {
        let t = func.terminator(b).expect("the brif");
        if let InstData::Brif {
            then_dest,
            else_dest,
            ..
        } = func.insts[t].clone()
        {
            let dest = if then { then_dest } else { else_dest };
            func.insts[t] = InstData::Jump { dest };
        }
    }
    let t = func.terminator(lp.preheader).expect("the preheader's jump");
    if let InstData::Jump { dest } = func.insts[t].clone() {
        let mut other = dest.clone();
        other.block = bmap[&lp.header];
        func.insts[t] = InstData::Brif {
            cond: hoisted,
            then_dest: dest,
            else_dest: other,
        };
    }
    let skip: FxHashSet<Block> = list.iter().flat_map(|b| [*b, bmap[b]]).collect();
    cfg::repair_clones(func, &[vmap], &skip);
}

#[cfg(test)]
mod tests {
    use crate::passes::cfg::run_on_text;

    /// `for (i = 0; i < n; i++) { if (flag > 0) s += i; else s -= i; }`.
    const LOOP: &str = "module lanes 16 ptr 8

function internal @f(i32, i32) -> i32 {
block0(v0: i32, v1: i32):
    v2 = iconst.i32 0
    jump block1(v2, v2)
block1(v3: i32, v4: i32):
    v5 = icmp slt v3, v0
    brif v5, block2, block5
block2:
    v6 = iconst.i32 0
    v7 = icmp sgt v1, v6
    brif v7, block3, block4
block3:
    v8 = iadd v4, v3
    v9 = iconst.i32 1
    v10 = iadd v3, v9
    jump block1(v10, v8)
block4:
    v11 = isub v4, v3
    v12 = iconst.i32 1
    v13 = iadd v3, v12
    jump block1(v13, v11)
block5:
    return v4
}
";

    #[test]
    fn invariant_uniform_test_is_hoisted_and_the_loop_copied() {
        let out = run_on_text(LOOP, super::run_uniform);
        // The flag is tested once, before the loops; each loop keeps its exit test.
        assert!(
            out.starts_with(
                "module lanes 16 ptr 8

function internal @f(i32, i32) -> i32 {
block0(v0: i32, v1: i32):
    v2 = iconst.i32 0
    v3 = iconst.i32 0
    v4 = icmp sgt v1, v3
    brif v4, block1(v2, v2), block6(v2, v2)
"
            ),
            "{out}"
        );
        assert_eq!(out.matches("brif").count(), 3, "{out}");
        assert!(out.contains("isub") && out.contains("iadd v"), "{out}");
        // Both loops exit to one return, through a parameter for the sum.
        assert_eq!(out.matches("return").count(), 1, "{out}");
    }

    /// The same loop on a divergent skip: `any(lane_index < v1)`.
    const DIVERGENT: &str = "module lanes 16 ptr 8

function internal @f(i32, [i32]) -> [i32] {
block0(v0: i32, v1: [i32]):
    v2 = iconst.i32 0
    jump block1(v2, v1)
block1(v3: i32, v4: [i32]):
    v5 = icmp slt v3, v0
    brif v5, block2, block5
block2:
    v6 = special lane_index
    v7 = icmp slt v6, v1
    v8 = any v7
    brif v8, block3, block4(v4)
block3:
    v9 = iadd v4, v4
    v10 = select v7, v9, v4
    jump block4(v10)
block4(v11: [i32]):
    v12 = iconst.i32 1
    v13 = iadd v3, v12
    jump block1(v13, v11)
block5:
    return v4
}
";

    #[test]
    fn divergent_skip_is_unswitched_only_when_forced() {
        assert_eq!(run_on_text(DIVERGENT, super::run_uniform), DIVERGENT);
        let forced = run_on_text(DIVERGENT, super::run_forced);
        assert!(forced.contains("any v"), "{forced}");
        assert_eq!(forced.matches("brif").count(), 3, "{forced}");
    }
}
