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

use crate::analysis::uniformity::analyze_divergence;
use crate::ir::dominance::DominatorTree;
use crate::ir::{BinaryOp, Block, Function, InstData, Module, Value, ValueDef};

use super::{cfg, Scope};

/// The largest loop (all its instructions) that is copied.
pub const MAX_LOOP: usize = 96;
/// The most unswitchings per function.
pub const MAX_UNSWITCH: usize = 2;
/// How deep an invariant condition's computation may be.
const MAX_DEPTH: u32 = 6;

/// Unswitches uniform branches in every function.
pub fn run_uniform(module: &mut Module) {
    super::each_function(module, |_, f| {
        unswitch_function(f, Scope::Uniform);
    });
}

/// The same, with every mask branch counted as divergent (`--no-uniformity`).
pub fn run_typed(module: &mut Module) {
    super::each_function(module, |_, f| {
        unswitch_function(f, Scope::Typed);
    });
}

/// Unswitches every invariant branch (`--force-cfg-opts`).
pub fn run_forced(module: &mut Module) {
    super::each_function(module, |_, f| {
        unswitch_function(f, Scope::All);
    });
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
pub fn unswitch_function(func: &mut Function, scope: Scope) -> usize {
    let mut done = 0;
    while done < MAX_UNSWITCH {
        if let Some(c) = find_candidate(func, scope) {
            apply(func, c);
        } else if let Some(s) = (scope == Scope::All).then(|| find_split(func)).flatten() {
            apply_split(func, s);
        } else {
            break;
        }
        done += 1;
    }
    if done > 0 {
        cfg::remove_trivial_params(func);
        cfg::merge_jump_chains(func);
    }
    done
}

/// A uniform invariant branch in a loop.
fn find_candidate(func: &Function, scope: Scope) -> Option<Candidate> {
    let res = analyze_divergence(func);
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
            let Some((cond, then_dest, else_dest)) = cfg::brif_of(func, b) else {
                continue;
            };
            if then_dest.block == else_dest.block
                || !invariant(func, &lp.blocks, cond, MAX_DEPTH)
                || super::branch_is_divergent(func, &res, cond)
                || scope.excludes(func, &res, cond)
            {
                continue;
            }
            return Some(Candidate { lp, block: b, cond });
        }
    }
    None
}

/// The natural loop of `header` ([`cfg::natural_loop`]), if it has a preheader.
fn natural_loop(
    func: &Function,
    dom: &DominatorTree,
    preds: &cranelift_entity::SecondaryMap<Block, Vec<Block>>,
    header: Block,
) -> Option<Loop> {
    let found = cfg::natural_loop(dom, preds, header)?;
    let [preheader] = found.entries[..] else {
        return None;
    };
    let jumps = func
        .terminator(preheader)
        .is_some_and(|t| matches!(func.insts[t], InstData::Jump { .. }));
    (jumps && dom.is_reachable(preheader)).then_some(Loop {
        header,
        blocks: found.blocks,
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
    let inside = |x: Value| def_block(func, x).is_some_and(|b| blocks.contains(&b));
    cfg::invariant_in(func, &inside, v, depth)
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

// ---------------------------------------------------------------------------------
// The divergent case (`--force-cfg-opts`): unswitching as a SIMT machine runs it.

/// A loop and a divergent, loop-invariant varying condition `cond` its masks test.
struct Split {
    lp: Loop,
    cond: Value,
    /// The loop's one exit: the exiting block and the index of its branch call.
    exiting: Block,
    call: usize,
}

/// A loop that can be split on a divergent invariant condition: every instruction
/// pure (no memory, calls, prints, traps), `any`/`all` only as branch conditions, the
/// exit a single uniform (not mask) branch to a block with no other predecessor.
fn find_split(func: &Function) -> Option<Split> {
    let res = analyze_divergence(func);
    let dom = DominatorTree::compute(func);
    let preds = cfg::predecessors(func);
    for &header in dom.rpo() {
        let Some(lp) = natural_loop(func, &dom, &preds, header) else {
            continue;
        };
        let size: usize = lp.blocks.iter().map(|&b| func.blocks[b].insts.len()).sum();
        let Some((exiting, call)) = single_exit(func, &lp, &preds) else {
            continue;
        };
        if size > MAX_LOOP || !splittable(func, &lp) {
            continue;
        }
        let cond = lp.blocks.iter().find_map(|&b| {
            let t = func.terminator(b)?;
            let InstData::Brif { cond, .. } = func.insts[t] else {
                return None;
            };
            let m = crate::analysis::uniformity::branch_mask(func, cond)?;
            leaves(func, m).into_iter().find(|&c| {
                func.value_type(c).varying
                    && !res.is_uniform(c)
                    && invariant(func, &lp.blocks, c, MAX_DEPTH)
                    && votes_only_branch(func, &lp, c)
            })
        });
        if let Some(cond) = cond {
            return Some(Split {
                lp,
                cond,
                exiting,
                call,
            });
        }
    }
    None
}

/// The loop's only exit edge, if its target has no other predecessor.
fn single_exit(
    func: &Function,
    lp: &Loop,
    preds: &cranelift_entity::SecondaryMap<Block, Vec<Block>>,
) -> Option<(Block, usize)> {
    let mut exits = Vec::new();
    for &b in &lp.blocks {
        let t = func.terminator(b)?;
        for (i, call) in func.insts[t].successors().iter().enumerate() {
            if !lp.blocks.contains(&call.block) {
                exits.push((b, i, call.block));
            }
        }
    }
    let [(b, i, target)] = exits[..] else {
        return None;
    };
    (preds[target].len() == 1).then_some((b, i))
}

/// Whether the loop's instructions are pure and its exits uniform (not on a mask), so
/// that each lane's results depend on that lane and on uniform values alone.
fn splittable(func: &Function, lp: &Loop) -> bool {
    lp.blocks.iter().all(|&b| {
        func.blocks[b].insts.iter().all(|&i| match &func.insts[i] {
            InstData::Jump { .. } => true,
            InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                let exits =
                    !lp.blocks.contains(&then_dest.block) || !lp.blocks.contains(&else_dest.block);
                !exits || crate::analysis::uniformity::branch_mask(func, *cond).is_none()
            }
            data => !data.is_terminator() && cfg::is_pure(data),
        })
    })
}

/// Whether every cross-lane vote (`any`/`all`) in the loop that depends on `cond` is
/// read only as a branch condition inside the loop: replacing `cond` by a constant may
/// change such votes, which may change which regions run, but no lane's values.
fn votes_only_branch(func: &Function, lp: &Loop, cond: Value) -> bool {
    // The loop's values that depend on `cond`, to a fixpoint (block parameters through
    // the arguments passed to them).
    let mut dep: FxHashSet<Value> = FxHashSet::default();
    dep.insert(cond);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in &lp.blocks {
            for &i in &func.blocks[b].insts {
                let data = &func.insts[i];
                if let Some(r) = func.results[i] {
                    if !dep.contains(&r) && data.operands().iter().any(|v| dep.contains(v)) {
                        changed |= dep.insert(r);
                    }
                }
                for call in data.successors() {
                    let params = &func.blocks[call.block].params;
                    for (&p, a) in params.iter().zip(call.args.iter()) {
                        if dep.contains(a) && !dep.contains(&p) {
                            changed |= dep.insert(p);
                        }
                    }
                }
            }
        }
    }
    let votes: FxHashSet<Value> = dep
        .iter()
        .copied()
        .filter(|&v| {
            matches!(func.values[v].def, ValueDef::Result(i)
                if matches!(func.insts[i], InstData::Lane { .. }))
        })
        .collect();
    func.layout.iter().all(|&b| {
        func.blocks[b].insts.iter().all(|&i| {
            let data = &func.insts[i];
            let as_branch = lp.blocks.contains(&b)
                && matches!(data, InstData::Brif { cond, then_dest, else_dest }
                    if votes.contains(cond)
                        && !then_dest.args.iter().chain(else_dest.args.iter()).any(|a| votes.contains(a)));
            as_branch || !data.operands().iter().any(|v| votes.contains(v))
        })
    })
}

/// The conditions a mask combines (through `band`, `bor`, `bnot`).
fn leaves(func: &Function, mask: Value) -> Vec<Value> {
    let mut out = Vec::new();
    let mut stack = vec![mask];
    let mut seen = FxHashSet::default();
    while let Some(v) = stack.pop() {
        if !seen.insert(v) {
            continue;
        }
        match func.values[v].def {
            ValueDef::Result(i) => match &func.insts[i] {
                InstData::Binary {
                    op: BinaryOp::Band | BinaryOp::Bor,
                    args,
                } => stack.extend(args),
                InstData::Unary {
                    op: crate::ir::UnaryOp::Bnot,
                    arg,
                } => stack.push(*arg),
                _ => out.push(v),
            },
            ValueDef::Param(..) => out.push(v),
        }
    }
    out
}

/// Runs the loop twice in a row, as a SIMT machine runs both sides of an unswitched
/// divergent branch: first with the condition true in every lane, then false, both
/// from the values the loop was entered with; after them each lane takes the values
/// of its side (`select cond, first, second`; uniform values agree).
fn apply_split(func: &mut Function, s: Split) {
    let Split {
        lp,
        cond,
        exiting,
        call,
    } = s;
    let pre = lp.preheader;
    let c = materialize(func, &lp.blocks, pre, cond);
    let ty = crate::ir::Type::BOOL.to_varying();
    let konst = |func: &mut Function, bits| {
        let term = func.blocks[pre].insts.pop().expect("a terminator");
        let i = func.append_inst(
            pre,
            InstData::Iconst { ty, bits },
            Some(ty),
            Default::default(),
        );
        func.blocks[pre].insts.push(term);
        func.results[i].expect("a constant")
    };
    let (on, off) = (konst(func, 1), konst(func, 0));
    let list: Vec<Block> = func
        .layout
        .iter()
        .copied()
        .filter(|b| lp.blocks.contains(b))
        .collect();
    let (bmap, vmap) = cfg::clone_blocks(func, &list);
    let second_cond = vmap.get(&cond).copied().unwrap_or(cond);
    for &b in &list {
        for i in func.blocks[b].insts.clone() {
            func.insts[i].map_operands(|v| if v == cond { on } else { v });
        }
        for i in func.blocks[bmap[&b]].insts.clone() {
            func.insts[i].map_operands(|v| if v == second_cond { off } else { v });
        }
    }
    // The first loop's exit enters the second with the preheader's arguments.
    let pre_term = func.terminator(pre).expect("the preheader's jump");
    let InstData::Jump { dest: entry_call } = func.insts[pre_term].clone() else {
        return;
    };
    let mid = func.create_block();
    let mut second_entry = entry_call.clone();
    second_entry.block = bmap[&lp.header];
    func.append_inst(
        mid,
        InstData::Jump { dest: second_entry },
        None,
        Default::default(),
    );
    let t1 = func.terminator(exiting).expect("the exit branch");
    let exit_call = func.insts[t1].successors()[call].clone();
    let post = func.create_block();
    if let Some(bc) = cfg::calls_mut(&mut func.insts[t1]).into_iter().nth(call) {
        *bc = crate::ir::BlockCall {
            block: mid,
            args: Default::default(),
        };
    }
    let t2 = func.terminator(bmap[&exiting]).expect("the exit branch");
    let exit_call2 = func.insts[t2].successors()[call].clone();
    if let Some(bc) = cfg::calls_mut(&mut func.insts[t2]).into_iter().nth(call) {
        *bc = crate::ir::BlockCall {
            block: post,
            args: Default::default(),
        };
    }
    // After both: each lane's values from its side.
    let mut merged = rustc_hash::FxHashMap::default();
    let mut merge = |func: &mut Function, v1: Value, v2: Value| -> Value {
        if v1 == v2 || !func.value_type(v1).varying {
            return v2;
        }
        *merged.entry((v1, v2)).or_insert_with(|| {
            let data = InstData::Select { args: [c, v1, v2] };
            let i = func.append_inst(post, data, Some(func.value_type(v1)), Default::default());
            func.results[i].expect("a select")
        })
    };
    let args: Vec<Value> = exit_call
        .args
        .iter()
        .zip(exit_call2.args.iter())
        .map(|(&a1, &a2)| merge(func, a1, a2))
        .collect();
    let inside: FxHashSet<Block> = list
        .iter()
        .flat_map(|b| [*b, bmap[b]])
        .chain([mid, post])
        .collect();
    let outside_uses: Vec<(crate::ir::Inst, Value)> = func
        .layout
        .iter()
        .filter(|b| !inside.contains(b))
        .flat_map(|&b| func.blocks[b].insts.iter().copied())
        .flat_map(|i| func.insts[i].operands().into_iter().map(move |v| (i, v)))
        .filter(|(_, v)| vmap.contains_key(v))
        .collect();
    let mut replace = rustc_hash::FxHashMap::default();
    for &(_, v) in &outside_uses {
        if let std::collections::hash_map::Entry::Vacant(e) = replace.entry(v) {
            e.insert(merge(func, v, vmap[&v]));
        }
    }
    for (i, _) in outside_uses {
        func.insts[i].map_operands(|v| replace.get(&v).copied().unwrap_or(v));
    }
    func.append_inst(
        post,
        InstData::Jump {
            dest: crate::ir::BlockCall {
                block: exit_call.block,
                args: args.into(),
            },
        },
        None,
        Default::default(),
    );
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
        // Two loops in a row, the condition replaced by constants (the first loop's
        // `any(true)` is then uniform and unswitched too), and each lane's result
        // picked by the hoisted condition afterwards.
        assert!(forced.contains("v4 = icmp slt v3, v1"), "{forced}");
        assert!(forced.contains("iconst.[bool] 1"), "{forced}");
        assert!(forced.contains("iconst.[bool] 0"), "{forced}");
        assert!(forced.contains("jump block6(v2, v1)"), "{forced}");
        assert!(
            forced.contains("= select v4, v29, v19\n    return"),
            "{forced}"
        );
    }
}
