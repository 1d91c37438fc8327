//! `--no-skip-empty`: removes the optional runtime skips of divergent regions, so each
//! region always runs under its mask, even an empty one (paper 002's runtime
//! uniformity checks turned off, to measure what they buy).
//!
//! The lowering guards each region of a varying `if` (and the rest of a function after
//! a masked `return`) with `brif any(m), region, after`. A user's `if (any(c))` has the
//! same shape, `brif any(c & mask), ..`, but its region runs under the enclosing mask,
//! not under `c & mask`; running it with no lane having `c` would be wrong. So a branch
//! is an *optional skip* only when the region provably runs under `m`:
//! - its condition is `any m`, and every path from the region's first block reaches
//!   `after` (or a `trap`) without coming back to the branch and without a `return`
//!   (the skip is then not a loop's test, which is loop control);
//! - every masked instruction in the region (load, store, atomic, call, `print`) takes
//!   a mask derived from `m` ([`derived_from`]: `m`, `m & x`, and block parameters that
//!   only ever receive such masks), at least one instruction does (or selects on one),
//!   and no store, atomic, call or `print` in it is unmasked;
//! - every loop in the region is controlled by `any` of such a mask (a uniform loop
//!   whose counter updates are masked would never end under an empty mask), and no call
//!   in it reaches a function that loops or recurses ([`functions_that_may_spin`]);
//! - the region has no barrier (a gang with no lane in the region must not wait at one).
//!
//! A region that runs under `m` is correct under an empty `m`: masked memory
//! operations, `print` and reductions do nothing, uniform updates are `select(any(m),
//! ..)` or stores masked by `m`. The optional skips become `jump region`; every other
//! branch stays, which is always correct.

use cranelift_entity::SecondaryMap;
use rustc_hash::{FxHashMap, FxHashSet};

use super::cfg;
use crate::analysis;
use crate::ir::dominance::DominatorTree;
use crate::ir::{
    BinaryOp, Block, BlockCall, FuncRef, Function, Inst, InstData, Module, Value, ValueDef,
};

/// Removes the optional skips of every function.
pub fn run_module(module: &mut Module) {
    let may_spin = functions_that_may_spin(module);
    for (_, f) in module.functions.iter_mut() {
        remove_skips(f, &may_spin);
    }
}

/// Turns the optional skips of `func` into jumps; returns how many. `may_spin` holds
/// the functions a call in a region must not reach.
pub fn remove_skips(func: &mut Function, may_spin: &FxHashSet<FuncRef>) -> usize {
    let skips = optional_skips(func, may_spin);
    for &(term, ref dest) in &skips {
        func.insts[term] = InstData::Jump { dest: dest.clone() };
    }
    skips.len()
}

/// The optional skips of `func`: each `brif`, with the region it jumps to instead.
fn optional_skips(func: &Function, may_spin: &FxHashSet<FuncRef>) -> Vec<(Inst, BlockCall)> {
    let incoming = cfg::incoming_args(func);
    let mut skips = Vec::new();
    for &block in &func.layout {
        let Some(term) = func.terminator(block) else {
            continue;
        };
        let InstData::Brif {
            cond,
            then_dest,
            else_dest,
        } = &func.insts[term]
        else {
            continue;
        };
        let Some(m) = func.any_of(*cond) else {
            continue;
        };
        let Some(region) = region_blocks(func, block, then_dest.block, else_dest.block) else {
            continue;
        };
        if runs_under(func, &region, m, &incoming, may_spin) {
            skips.push((term, then_dest.clone()));
        }
    }
    skips
}

/// The blocks of the region entered at `start` from `branch` that rejoins at `after`,
/// or `None` when a path comes back to the branch, returns, or meets a barrier.
fn region_blocks(func: &Function, branch: Block, start: Block, after: Block) -> Option<Vec<Block>> {
    if start == after || start == branch {
        return None;
    }
    let mut seen = FxHashSet::default();
    let mut order = Vec::new();
    let mut stack = vec![start];
    while let Some(b) = stack.pop() {
        if b == after || !seen.insert(b) {
            continue;
        }
        if b == branch {
            return None;
        }
        let stops = func.blocks[b]
            .insts
            .iter()
            .any(|&i| matches!(func.insts[i], InstData::Barrier | InstData::Return { .. }));
        if stops {
            return None;
        }
        order.push(b);
        stack.extend(func.successors(b));
    }
    Some(order)
}

/// Whether the region's effects all happen under `m` (see the module doc).
fn runs_under(
    func: &Function,
    region: &[Block],
    m: Value,
    incoming: &SecondaryMap<Block, Vec<&[Value]>>,
    may_spin: &FxHashSet<FuncRef>,
) -> bool {
    let derived = derived_from(func, region, m, incoming);
    let mut evidence = false;
    for &b in region {
        for &i in &func.blocks[b].insts {
            let data = &func.insts[i];
            if let InstData::Call { func: callee, .. } = data {
                if may_spin.contains(callee) {
                    return false;
                }
            }
            match data.mask() {
                Some(mask) if derived.contains(&mask) => evidence = true,
                Some(_) => return false,
                None if has_effect(data) => return false,
                None => {}
            }
            if let InstData::Select { args } = data {
                evidence |= derived.contains(&args[0]);
            }
        }
    }
    evidence && loops_test_masks(func, region, &derived)
}

/// Instructions whose effect a mask would gate: unmasked, they act whatever `m` is.
fn has_effect(data: &InstData) -> bool {
    matches!(
        data,
        InstData::Store { .. }
            | InstData::AtomicRmw { .. }
            | InstData::AtomicCas { .. }
            | InstData::Call { .. }
            | InstData::Print { .. }
    )
}

/// The masks derived from `m` in the region: `m`, `band`s with a derived operand, and
/// block parameters every incoming edge passes a derived value (the greatest such set,
/// so a loop's mask parameter, fed by `m & c` and by itself narrowed, belongs).
fn derived_from(
    func: &Function,
    region: &[Block],
    m: Value,
    incoming: &SecondaryMap<Block, Vec<&[Value]>>,
) -> FxHashSet<Value> {
    let mut set = FxHashSet::default();
    set.insert(m);
    let mut candidates = Vec::new();
    for &b in region {
        candidates.extend(func.blocks[b].params.iter().copied());
        for &i in &func.blocks[b].insts {
            if let InstData::Binary {
                op: BinaryOp::Band, ..
            } = func.insts[i]
            {
                candidates.extend(func.inst_result(i));
            }
        }
    }
    set.extend(candidates.iter().copied());
    let mut changed = true;
    while changed {
        changed = false;
        for &v in &candidates {
            if v != m && set.contains(&v) && !still_derived(func, v, &set, incoming) {
                set.remove(&v);
                changed = true;
            }
        }
    }
    set
}

fn still_derived(
    func: &Function,
    v: Value,
    set: &FxHashSet<Value>,
    incoming: &SecondaryMap<Block, Vec<&[Value]>>,
) -> bool {
    match func.values[v].def {
        ValueDef::Result(i) => match &func.insts[i] {
            InstData::Binary { args, .. } => args.iter().any(|a| set.contains(a)),
            _ => false,
        },
        ValueDef::Param(b, k) => {
            let edges = &incoming[b];
            !edges.is_empty()
                && edges
                    .iter()
                    .all(|args| args.get(k as usize).is_some_and(|a| set.contains(a)))
        }
    }
}

/// Whether every loop in the region is controlled by `any` of a derived mask: each
/// conditional branch in a cycle of the region's blocks tests one.
fn loops_test_masks(func: &Function, region: &[Block], derived: &FxHashSet<Value>) -> bool {
    let on_cycle = cycles(func, region);
    region
        .iter()
        .filter(|b| on_cycle.contains_key(b))
        .all(|&b| {
            let Some(term) = func.terminator(b) else {
                return true;
            };
            match func.insts[term] {
                InstData::Brif { cond, .. } => {
                    func.any_of(cond).is_some_and(|x| derived.contains(&x))
                }
                _ => true,
            }
        })
}

/// The cycles of the edges among `blocks` ([`analysis::cycles`]).
fn cycles(func: &Function, blocks: &[Block]) -> FxHashMap<Block, u32> {
    let inside: FxHashSet<Block> = blocks.iter().copied().collect();
    let succ: FxHashMap<Block, Vec<Block>> = blocks
        .iter()
        .map(|&b| {
            let within = func
                .successors(b)
                .into_iter()
                .filter(|s| inside.contains(s));
            (b, within.collect())
        })
        .collect();
    analysis::cycles::cycles(blocks, &succ)
}

/// The functions a call must not reach from a region run under an empty mask: those
/// with a loop (its test may not read the mask), those that may recurse (the skip is
/// what ends a recursion whose lanes have all stopped), and their callers.
pub fn functions_that_may_spin(module: &Module) -> FxHashSet<FuncRef> {
    let calls: Vec<(FuncRef, Vec<FuncRef>)> = module
        .functions
        .iter()
        .map(|(r, f)| (r, callees(f)))
        .collect();
    let mut spin: FxHashSet<FuncRef> = module
        .functions
        .iter()
        .filter(|(_, f)| !cycles(f, DominatorTree::compute(f).rpo()).is_empty())
        .map(|(r, _)| r)
        .collect();
    spin.extend(recursive_functions(module));
    let mut changed = true;
    while changed {
        changed = false;
        for (f, cs) in &calls {
            let reaches = cs
                .iter()
                .any(|c| spin.contains(c) || module.functions.get(*c).is_none());
            if !spin.contains(f) && reaches {
                spin.insert(*f);
                changed = true;
            }
        }
    }
    spin
}

fn callees(f: &Function) -> Vec<FuncRef> {
    f.layout
        .iter()
        .flat_map(|&b| f.blocks[b].insts.iter())
        .filter_map(|&i| match f.insts[i] {
            InstData::Call { func, .. } => Some(func),
            _ => None,
        })
        .collect()
}

/// The functions that can reach themselves through calls.
pub fn recursive_functions(module: &Module) -> FxHashSet<FuncRef> {
    let mut out = FxHashSet::default();
    for (f, func) in module.functions.iter() {
        let mut seen = FxHashSet::default();
        let mut stack = callees(func);
        while let Some(g) = stack.pop() {
            if g == f {
                out.insert(f);
                break;
            }
            if seen.insert(g) {
                if let Some(callee) = module.functions.get(g) {
                    stack.extend(callees(callee));
                }
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
    #[test]
    fn a_uniform_if_on_any_stays() {
        // `if (any(c)) { out[lane] = 1; }`: the region stores under the enclosing mask
        // v1, not under `c & v1`.
        let text = "module lanes 16 ptr 8

function export @f(ptr) masked {
block0(v0: ptr, v1: [bool]):
    v2 = special lane_index
    v3 = iconst.i32 100
    v4 = splat v3
    v5 = icmp sgt v2, v4
    v6 = band v5, v1
    v7 = any v6
    brif v7, block1, block2
block1:
    v8 = iconst.i32 1
    store generic v0, v8 mask v1
    jump block2
block2:
    return
}
";
        assert_eq!(run_on_text(text, super::run_module), text);
    }

    #[test]
    fn a_uniform_loop_or_a_looping_callee_in_the_region_keeps_the_skip() {
        // A uniform loop's test does not read the mask: under an empty mask its masked
        // updates do nothing and it would never end. So too in a function it calls.
        let text = "module lanes 16 ptr 8

function internal @g() masked {
block0(v0: [bool]):
    v1 = iconst.i32 0
    jump block1(v1)
block1(v2: i32):
    v3 = iconst.i32 4
    v4 = icmp slt v2, v3
    brif v4, block2, block3
block2:
    v5 = iconst.i32 1
    v6 = iadd v2, v5
    jump block1(v6)
block3:
    return
}

function export @f(ptr) masked {
block0(v0: ptr, v1: [bool]):
    v2 = special lane_index
    v3 = load.i32 generic v0 mask v1
    v4 = icmp slt v2, v3
    v5 = band v1, v4
    v6 = any v5
    brif v6, block1, block2
block1:
    call @g() mask v5
    store generic v0, v3 mask v5
    jump block2
block2:
    v7 = any v5
    brif v7, block3, block5(v3)
block3:
    v8 = iconst.i32 0
    jump block4(v8)
block4(v9: i32):
    v10 = iconst.i32 1
    v11 = iadd v9, v10
    store generic v0, v9 mask v5
    v12 = icmp slt v11, v3
    brif v12, block4(v11), block5(v9)
block5(v13: i32):
    return
}
";
        assert_eq!(run_on_text(text, super::run_module), text);
    }

    #[test]
    fn a_varying_loop_under_the_region_mask_goes() {
        // The region's loop narrows its mask parameter from `m`: it still runs under
        // `m`, and its test reads it, so the skip is optional.
        let out = run_on_text(
            "module lanes 16 ptr 8

function export @f(ptr) masked {
block0(v0: ptr, v1: [bool]):
    v2 = special lane_index
    v3 = load.i32 generic v0 mask v1
    v4 = icmp slt v2, v3
    v5 = band v1, v4
    v6 = any v5
    brif v6, block1(v5), block3
block1(v7: [bool]):
    store generic v0, v3 mask v7
    v8 = icmp sgt v2, v3
    v9 = band v7, v8
    v10 = any v9
    brif v10, block1(v9), block2
block2:
    jump block3
block3:
    return
}
",
            super::run_module,
        );
        assert!(out.contains("jump block1(v5)\n"), "{out}");
        assert!(out.contains("brif v10, block1(v9), block2"), "{out}");
    }
}
