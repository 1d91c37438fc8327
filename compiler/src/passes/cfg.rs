//! CFG surgery shared by the code-duplicating transforms ([`super::jump_thread`],
//! [`super::thread_split`], [`super::tail_dup`], [`super::unswitch`]) and the skip removal of
//! [`super::skip_empty`]: predecessor lists, cloning a set of blocks, repairing SSA after
//! a value got a second definition, folding block parameters that always receive the
//! same value, emptying blocks no path reaches any more, and deleting the computation
//! of a branch condition a transform made unused.
//!
//! Cloning leaves every value defined in the cloned blocks with two definitions (the
//! original and the copy); [`repair_ssa`] rewrites the uses outside both to the
//! definition that reaches them, adding block parameters where paths from the two meet
//! (Braun et al., "Simple and Efficient Construction of SSA Form", read on demand).

use cranelift_entity::packed_option::PackedOption;
use cranelift_entity::SecondaryMap;
use rustc_hash::FxHashMap;

use crate::ir::dominance::DominatorTree;
use crate::ir::{Block, BlockCall, Function, InstData, TrapCode, Value, ValueDef};
use crate::source::Span;

/// Each block's predecessors, once per branch edge (a `brif` with both targets the same
/// block counts twice).
pub fn predecessors(func: &Function) -> SecondaryMap<Block, Vec<Block>> {
    let mut preds: SecondaryMap<Block, Vec<Block>> = SecondaryMap::new();
    for &b in &func.layout {
        for s in func.successors(b) {
            preds[s].push(b);
        }
    }
    preds
}

/// The number of non-terminator instructions of a block: the size limits' measure.
pub fn body_len(func: &Function, block: Block) -> usize {
    func.blocks[block].insts.len().saturating_sub(1)
}

/// Copies `blocks` (parameters, instructions, spans) to new blocks at the end of the
/// layout. Inside the copies, operands and branch targets that name the originals name
/// their copies instead. Returns the block map and the value map (original to copy).
pub fn clone_blocks(
    func: &mut Function,
    blocks: &[Block],
) -> (FxHashMap<Block, Block>, FxHashMap<Value, Value>) {
    let mut bmap = FxHashMap::default();
    let mut vmap = FxHashMap::default();
    for &b in blocks {
        let nb = func.create_block();
        bmap.insert(b, nb);
        for p in func.blocks[b].params.clone() {
            let np = func.append_block_param(nb, func.value_type(p));
            vmap.insert(p, np);
        }
    }
    for &b in blocks {
        let nb = bmap[&b];
        for inst in func.blocks[b].insts.clone() {
            let data = func.insts[inst].clone();
            let ty = func.results[inst].map(|r| func.value_type(r));
            let ni = func.append_inst(nb, data, ty, func.spans[inst]);
            if let (Some(r), Some(nr)) = (func.results[inst], func.results[ni]) {
                vmap.insert(r, nr);
            }
        }
    }
    for &b in blocks {
        let nb = bmap[&b];
        for inst in func.blocks[nb].insts.clone() {
            let data = &mut func.insts[inst];
            data.map_operands(|v| vmap.get(&v).copied().unwrap_or(v));
            retarget(data, |t| bmap.get(&t).copied().unwrap_or(t));
        }
    }
    (bmap, vmap)
}

/// The condition and the two branch calls of the `brif` ending `block`, if it ends in
/// one.
pub fn brif_of(func: &Function, block: Block) -> Option<(Value, &BlockCall, &BlockCall)> {
    match &func.insts[func.terminator(block)?] {
        InstData::Brif {
            cond,
            then_dest,
            else_dest,
        } => Some((*cond, then_dest, else_dest)),
        _ => None,
    }
}

/// Replaces each branch target `t` of a terminator by `f(t)`.
pub fn retarget(data: &mut InstData, mut f: impl FnMut(Block) -> Block) {
    match data {
        InstData::Jump { dest } => dest.block = f(dest.block),
        InstData::Brif {
            then_dest,
            else_dest,
            ..
        } => {
            then_dest.block = f(then_dest.block);
            else_dest.block = f(else_dest.block);
        }
        _ => {}
    }
}

/// The branch calls of a terminator, mutably.
pub fn calls_mut(data: &mut InstData) -> Vec<&mut BlockCall> {
    match data {
        InstData::Jump { dest } => vec![dest],
        InstData::Brif {
            then_dest,
            else_dest,
            ..
        } => vec![then_dest, else_dest],
        _ => Vec::new(),
    }
}

/// Makes every use of `orig` reach the right one of its definitions: `defs` lists each
/// block that now defines it (the original's block with `orig`, each copy's with its
/// copy). Uses inside a defining block keep their value; every other use reads the
/// definition reaching its block's entry, through new block parameters where paths
/// from different definitions meet.
pub fn repair_ssa(
    func: &mut Function,
    orig: Value,
    defs: &[(Block, Value)],
    skip: &rustc_hash::FxHashSet<Block>,
) {
    let def_at: FxHashMap<Block, Value> = defs.iter().copied().collect();
    let preds = predecessors(func);
    let mut at_entry: FxHashMap<Block, Value> = FxHashMap::default();
    let users: Vec<(Block, crate::ir::Inst)> = func
        .layout
        .iter()
        .flat_map(|&b| func.blocks[b].insts.iter().map(move |&i| (b, i)))
        .filter(|&(b, i)| {
            !def_at.contains_key(&b)
                && !skip.contains(&b)
                && func.insts[i].operands().contains(&orig)
        })
        .collect();
    for (block, inst) in users {
        let v = read_entry(func, &preds, &def_at, &mut at_entry, orig, block);
        func.insts[inst].map_operands(|x| if x == orig { v } else { x });
    }
}

/// After [`clone_blocks`] (once per map in `copies`) and the redirection of edges to the
/// copies: empties the blocks that became unreachable and repairs SSA for every cloned
/// value ([`repair_ssa`]); uses in `skip` are already right and are left alone.
pub fn repair_clones(
    func: &mut Function,
    copies: &[FxHashMap<Value, Value>],
    skip: &rustc_hash::FxHashSet<Block>,
) {
    clear_unreachable(func);
    let dom = DominatorTree::compute(func);
    let mut def_block: FxHashMap<Value, Block> = FxHashMap::default();
    for &b in &func.layout {
        def_block.extend(func.blocks[b].params.iter().map(|&p| (p, b)));
        def_block.extend(
            func.blocks[b]
                .insts
                .iter()
                .filter_map(|&i| Some((func.results[i]?, b))),
        );
    }
    let mut origs: Vec<Value> = copies.iter().flat_map(|m| m.keys().copied()).collect();
    origs.sort();
    origs.dedup();
    for orig in origs {
        let mut defs: Vec<(Block, Value)> = Vec::new();
        if let Some(&b) = def_block.get(&orig).filter(|&&b| dom.is_reachable(b)) {
            defs.push((b, orig));
        }
        for m in copies {
            if let Some(&c) = m.get(&orig) {
                if let Some(&b) = def_block.get(&c).filter(|&&b| dom.is_reachable(b)) {
                    defs.push((b, c));
                }
            }
        }
        repair_ssa(func, orig, &defs, skip);
    }
}

/// The definition of `orig` reaching the end of `block`.
fn read_end(
    func: &mut Function,
    preds: &SecondaryMap<Block, Vec<Block>>,
    def_at: &FxHashMap<Block, Value>,
    memo: &mut FxHashMap<Block, Value>,
    orig: Value,
    block: Block,
) -> Value {
    match def_at.get(&block) {
        Some(&v) => v,
        None => read_entry(func, preds, def_at, memo, orig, block),
    }
}

/// The definition of `orig` reaching the entry of `block`; a parameter when its
/// predecessors may disagree.
fn read_entry(
    func: &mut Function,
    preds: &SecondaryMap<Block, Vec<Block>>,
    def_at: &FxHashMap<Block, Value>,
    memo: &mut FxHashMap<Block, Value>,
    orig: Value,
    block: Block,
) -> Value {
    if let Some(&v) = memo.get(&block) {
        return v;
    }
    let ps = preds[block].clone();
    let mut distinct = ps.clone();
    distinct.dedup();
    if distinct.len() == 1 && ps.len() == 1 {
        let v = read_end(func, preds, def_at, memo, orig, ps[0]);
        memo.insert(block, v);
        return v;
    }
    if ps.is_empty() {
        // Unreachable or the entry: nothing defines it here; the original stands.
        memo.insert(block, orig);
        return orig;
    }
    let param = func.append_block_param(block, func.value_type(orig));
    memo.insert(block, param);
    let mut seen = rustc_hash::FxHashSet::default();
    for p in ps {
        if !seen.insert(p) {
            continue;
        }
        let v = read_end(func, preds, def_at, memo, orig, p);
        let term = func.terminator(p).expect("a predecessor ends in a branch");
        for call in calls_mut(&mut func.insts[term]) {
            if call.block == block {
                call.args.push(v);
            }
        }
    }
    param
}

/// Folds block parameters that always receive one value (or themselves) into that
/// value, until none is left; returns how many were removed.
///
/// Linear in the function's size: the branch arguments are read once, a parameter is
/// looked at again only when a value it receives was folded (a worklist over the
/// parameters each value flows into), and the uses and arguments are rewritten in one
/// sweep at the end. Folding is confluent (a parameter that receives one value keeps
/// receiving one value as others fold), so the result is the one folding one
/// parameter at a time in layout order gives.
pub fn remove_trivial_params(func: &mut Function) -> usize {
    let Some(entry) = func.entry_block() else {
        return 0;
    };
    let incoming = incoming_args(func);
    // For each value, the (block, index) parameters it is passed to, directly or
    // through parameters folded into it.
    let mut flows_to: FxHashMap<Value, Vec<(Block, usize)>> = FxHashMap::default();
    let mut work: Vec<(Block, usize)> = Vec::new();
    for &b in func.layout.iter().rev().filter(|&&b| b != entry) {
        for i in (0..func.blocks[b].params.len()).rev() {
            work.push((b, i));
            for args in &incoming[b] {
                if let Some(&a) = args.get(i) {
                    flows_to.entry(a).or_default().push((b, i));
                }
            }
        }
    }
    let mut folded = Replacements::default();
    while let Some((b, i)) = work.pop() {
        let param = func.blocks[b].params[i];
        if folded.contains(param) {
            continue;
        }
        let Some(value) = single_incoming(&incoming, b, i, param, &folded) else {
            continue;
        };
        folded.insert(param, value);
        // Whatever received `param` now receives `value`: look at those parameters
        // again, and again when `value` folds (merging the smaller list into the
        // larger keeps the moves at n log n).
        if let Some(mut users) = flows_to.remove(&param) {
            work.extend(users.iter().rev());
            let into = flows_to.entry(value).or_default();
            if into.len() < users.len() {
                std::mem::swap(into, &mut users);
            }
            into.extend(users);
        }
    }
    let removed = folded.len();
    if removed > 0 {
        folded.apply(func);
        remove_params_where(func, |p| folded.contains(p));
    }
    removed
}

/// For each block, the argument lists of every branch to it (borrowed from the
/// branches).
pub fn incoming_args(func: &Function) -> SecondaryMap<Block, Vec<&[Value]>> {
    let mut incoming: SecondaryMap<Block, Vec<&[Value]>> = SecondaryMap::new();
    for &b in &func.layout {
        if let Some(t) = func.terminator(b) {
            for call in func.insts[t].successors() {
                incoming[call.block].push(&call.args);
            }
        }
    }
    incoming
}

/// The one value other than `param` itself that parameter `index` of `block` receives,
/// reading every argument through the replacements made so far.
fn single_incoming(
    incoming: &SecondaryMap<Block, Vec<&[Value]>>,
    block: Block,
    index: usize,
    param: Value,
    folded: &Replacements,
) -> Option<Value> {
    let mut only = None;
    for args in &incoming[block] {
        let a = folded.resolve(*args.get(index)?);
        if a == param || Some(a) == only {
            continue;
        }
        if only.is_some() {
            return None;
        }
        only = Some(a);
    }
    only
}

/// Values to be replaced by others, collected while a pass decides and applied to every
/// operand in one sweep ([`Replacements::apply`]): replacing each value as it is found
/// would cost a sweep of the function per value, quadratic in its size.
#[derive(Default)]
pub struct Replacements {
    /// By value number (values are dense): what each value is replaced by, if anything.
    map: SecondaryMap<Value, PackedOption<Value>>,
    /// How many values are replaced.
    len: usize,
}

impl Replacements {
    /// Replace `from` by `to` (which may itself be replaced later).
    pub fn insert(&mut self, from: Value, to: Value) {
        if from != to {
            self.len += usize::from(!self.contains(from));
            self.map[from] = to.into();
        }
    }

    pub fn contains(&self, v: Value) -> bool {
        self.get(v).is_some()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn get(&self, v: Value) -> Option<Value> {
        self.map.get(v).and_then(|to| to.expand())
    }

    /// What `v` becomes: the end of its chain of replacements (a cycle, which no pass
    /// makes, stops after one round of the map instead of hanging).
    pub fn resolve(&self, mut v: Value) -> Value {
        for _ in 0..=self.len {
            match self.get(v) {
                Some(to) => v = to,
                None => break,
            }
        }
        v
    }

    /// Rewrites every operand of every instruction in the layout (branch arguments
    /// included).
    pub fn apply(&self, func: &mut Function) {
        if self.is_empty() {
            return;
        }
        for &b in &func.layout {
            for &i in &func.blocks[b].insts {
                func.insts[i].map_operands(|x| self.resolve(x));
            }
        }
    }
}

/// Replaces every use of `from` by `to`. One sweep of the function: a pass replacing
/// many values collects them in [`Replacements`] instead.
pub fn replace_uses(func: &mut Function, from: Value, to: Value) {
    let mut r = Replacements::default();
    r.insert(from, to);
    r.apply(func);
}

/// Removes parameter `index` of `block` and the matching argument of every branch to it.
/// One sweep of the function: a pass removing many parameters uses
/// [`remove_params_where`].
pub fn remove_param(func: &mut Function, block: Block, index: usize) {
    let p = func.blocks[block].params[index];
    remove_params_where(func, |v| v == p);
}

/// Removes every block parameter for which `doomed` holds, with the
/// matching argument of every branch to its block, in one sweep of the function.
pub fn remove_params_where(func: &mut Function, doomed: impl Fn(Value) -> bool) {
    // Per block, which parameter positions go (empty: none of this block's).
    let mut drop: SecondaryMap<Block, Vec<bool>> = SecondaryMap::new();
    let mut any = false;
    for &b in &func.layout {
        let params = &func.blocks[b].params;
        if params.iter().any(|&p| doomed(p)) {
            drop[b] = params.iter().map(|&p| doomed(p)).collect();
            any = true;
        }
    }
    if !any {
        return;
    }
    for &b in &func.layout {
        if drop[b].is_empty() {
            continue;
        }
        let mut i = 0;
        func.blocks[b].params.retain(|_| {
            i += 1;
            !drop[b][i - 1]
        });
        for (i, &p) in func.blocks[b].params.iter().enumerate() {
            func.values[p].def = ValueDef::Param(b, i as u32);
        }
    }
    for &b in &func.layout {
        if let Some(t) = func.terminator(b) {
            for call in calls_mut(&mut func.insts[t]) {
                let gone = &drop[call.block];
                if gone.is_empty() {
                    continue;
                }
                let mut i = 0;
                call.args.retain(|_| {
                    i += 1;
                    !gone.get(i - 1).copied().unwrap_or(false)
                });
            }
        }
    }
}

/// Merges each block reached by a single `jump` from a predecessor (its only edge) into
/// that predecessor, its parameters replaced by the jump's arguments; returns how many.
/// The merged blocks are left empty (`trap unreachable`).
pub fn merge_jump_chains(func: &mut Function) -> usize {
    let Some(entry) = func.entry_block() else {
        return 0;
    };
    let mut merged = 0;
    let mut preds = predecessors(func);
    let mut replaced = Replacements::default();
    for block in func.layout.clone() {
        // `block` may have absorbed its successor already: keep going down the chain.
        while let Some(t) = func.terminator(block) {
            let InstData::Jump { dest } = func.insts[t].clone() else {
                break;
            };
            let s = dest.block;
            if s == entry || s == block || preds[s].len() != 1 {
                break;
            }
            for (&p, &a) in func.blocks[s].params.iter().zip(dest.args.iter()) {
                replaced.insert(p, a);
            }
            func.blocks[block].insts.pop();
            let moved = std::mem::take(&mut func.blocks[s].insts);
            func.blocks[block].insts.extend(moved);
            func.blocks[s].params.clear();
            let trap = InstData::Trap {
                code: TrapCode::Unreachable,
            };
            func.append_inst(s, trap, None, Span::default());
            for x in func.successors(block) {
                for p in preds[x].iter_mut().filter(|p| **p == s) {
                    *p = block;
                }
            }
            merged += 1;
        }
    }
    replaced.apply(func);
    merged
}

/// Empties every block no path from the entry reaches: no parameters, a lone `trap
/// unreachable` (the verifier wants every arena block in the layout, so they stay).
pub fn clear_unreachable(func: &mut Function) {
    let dom = DominatorTree::compute(func);
    let dead: Vec<Block> = func
        .layout
        .iter()
        .copied()
        .filter(|&b| !dom.is_reachable(b))
        .collect();
    for b in dead {
        let already = func.blocks[b].params.is_empty()
            && func.blocks[b].insts.len() == 1
            && matches!(
                func.insts[func.blocks[b].insts[0]],
                InstData::Trap {
                    code: TrapCode::Unreachable
                }
            );
        if already {
            continue;
        }
        func.blocks[b].params.clear();
        func.blocks[b].insts.clear();
        let trap = InstData::Trap {
            code: TrapCode::Unreachable,
        };
        func.append_inst(b, trap, None, Span::default());
    }
}

/// Whether each block is reached from the entry (a depth-first walk of the branches).
pub fn reachable(func: &Function) -> SecondaryMap<Block, bool> {
    let mut seen: SecondaryMap<Block, bool> = SecondaryMap::new();
    let mut stack: Vec<Block> = func.entry_block().into_iter().collect();
    while let Some(b) = stack.pop() {
        if std::mem::replace(&mut seen[b], true) {
            continue;
        }
        stack.extend(func.successors(b).into_iter().filter(|&s| !seen[s]));
    }
    seen
}

/// Deletes the blocks no path from the entry reaches, renumbering the others in layout
/// order; returns how many went. Lowering ends a function with such blocks after its
/// `return`s, every inlined call copies the callee's and leaves the emptied
/// continuation ([`merge_jump_chains`] empties merged blocks too): left in place they
/// grow every later walk over blocks and parameters with the number of call sites.
///
/// The verifier wants every arena block in the layout, so the block arena is rebuilt.
/// The deleted blocks' instructions stay in the instruction arena, outside any block,
/// as result-less `trap unreachable` (no scan of the arena finds a call there); their
/// values stay unused in the value arena.
pub fn remove_unreachable_blocks(func: &mut Function) -> usize {
    let seen = reachable(func);
    let removed = func.layout.iter().filter(|&&b| !seen[b]).count();
    if removed == 0 {
        return 0;
    }
    let mut old = std::mem::take(&mut func.blocks);
    let mut renamed: SecondaryMap<Block, PackedOption<Block>> = SecondaryMap::new();
    let layout = std::mem::take(&mut func.layout);
    for &b in &layout {
        let data = std::mem::take(&mut old[b]);
        if seen[b] {
            let nb = func.blocks.push(data);
            renamed[b] = nb.into();
            func.layout.push(nb);
        } else {
            for inst in data.insts {
                func.insts[inst] = InstData::Trap {
                    code: TrapCode::Unreachable,
                };
                func.results[inst] = None;
            }
        }
    }
    for &b in &func.layout {
        for (i, &p) in func.blocks[b].params.iter().enumerate() {
            func.values[p].def = ValueDef::Param(b, i as u32);
        }
        if let Some(t) = func.terminator(b) {
            // A reachable block branches to reachable blocks only.
            retarget(&mut func.insts[t], |s| {
                renamed[s].expect("reachable target")
            });
        }
    }
    removed
}

/// Structural equality of two values computed by pure instructions (constants,
/// arithmetic, comparisons, conversions, splats, non-clock special registers, `any` and
/// `all`), up to `depth` levels: re-tests of a condition are separate instructions in
/// this IR (there is no value numbering), and threading has to see them as one.
pub fn same_value(func: &Function, a: Value, b: Value, depth: u32) -> bool {
    if a == b {
        return true;
    }
    if depth == 0 {
        return false;
    }
    let (ValueDef::Result(ia), ValueDef::Result(ib)) = (func.values[a].def, func.values[b].def)
    else {
        return false;
    };
    let (da, db) = (&func.insts[ia], &func.insts[ib]);
    if !is_pure(da) || func.value_type(a) != func.value_type(b) {
        return false;
    }
    let (oa, ob) = (da.operands(), db.operands());
    let mut sa = da.clone();
    sa.map_operands(|_| a);
    let mut sb = db.clone();
    sb.map_operands(|_| a);
    sa == sb
        && oa.len() == ob.len()
        && oa
            .iter()
            .zip(&ob)
            .all(|(&x, &y)| same_value(func, x, y, depth - 1))
}

/// Whether `v` has the same value on every run of a region of code: it is not defined
/// there (`inside(v)` false), or computed there by pure instructions (no division,
/// which may trap) from such values, at most `depth` instructions deep. Shared by the
/// loop passes.
pub fn invariant_in(func: &Function, inside: &dyn Fn(Value) -> bool, v: Value, depth: u32) -> bool {
    if !inside(v) {
        return true;
    }
    let ValueDef::Result(i) = func.values[v].def else {
        return false;
    };
    let data = &func.insts[i];
    depth > 0
        && is_speculatable(data)
        && data
            .operands()
            .iter()
            .all(|&x| invariant_in(func, inside, x, depth - 1))
}

/// Whether an instruction computes its result from its operands alone.
pub fn is_pure(data: &InstData) -> bool {
    use crate::ir::{LaneOp, SpecialReg};
    match data {
        InstData::Iconst { .. }
        | InstData::Fconst { .. }
        | InstData::Unary { .. }
        | InstData::Binary { .. }
        | InstData::Icmp { .. }
        | InstData::Fcmp { .. }
        | InstData::Select { .. }
        | InstData::Convert { .. }
        | InstData::Splat { .. } => true,
        InstData::Special { reg } => *reg != SpecialReg::Clock,
        InstData::Lane { op, .. } => matches!(op, LaneOp::Any | LaneOp::All),
        _ => false,
    }
}

/// Pure and unable to trap ([`is_pure`] without integer division or remainder): safe
/// to execute where the original might not run, e.g. hoisted to a loop's preheader.
pub fn is_speculatable(data: &InstData) -> bool {
    let divides = matches!(
        data,
        InstData::Binary {
            op: crate::ir::BinaryOp::Sdiv
                | crate::ir::BinaryOp::Udiv
                | crate::ir::BinaryOp::Srem
                | crate::ir::BinaryOp::Urem,
            ..
        }
    );
    is_pure(data) && !divides
}

/// The natural loop of `header`: the sources of its back edges (`latches`, blocks
/// `header` dominates), every block that reaches one without passing `header`
/// (`blocks`, `header` included) and the predecessors of `header` outside it
/// (`entries`). `None` when no back edge enters `header`.
pub struct NaturalLoop {
    pub latches: Vec<Block>,
    pub blocks: rustc_hash::FxHashSet<Block>,
    pub entries: Vec<Block>,
}

/// Finds the [`NaturalLoop`] headed by `header`; shared by the loop passes.
pub fn natural_loop(
    dom: &DominatorTree,
    preds: &SecondaryMap<Block, Vec<Block>>,
    header: Block,
) -> Option<NaturalLoop> {
    let latches: Vec<Block> = preds[header]
        .iter()
        .copied()
        .filter(|&p| dom.dominates(header, p))
        .collect();
    if latches.is_empty() {
        return None;
    }
    let mut blocks = rustc_hash::FxHashSet::default();
    blocks.insert(header);
    let mut stack = latches.clone();
    while let Some(b) = stack.pop() {
        if blocks.insert(b) {
            stack.extend(preds[b].iter().copied());
        }
    }
    let entries = preds[header]
        .iter()
        .copied()
        .filter(|p| !blocks.contains(p))
        .collect();
    Some(NaturalLoop {
        latches,
        blocks,
        entries,
    })
}

/// Deletes the pure instructions ([`super::dce::removable`]: not a division that may
/// trap) that no longer have a use because the instructions
/// reading `seeds` went away (a guard decided into a jump leaves its `any` and mask
/// computation behind), following operands back until something is still read.
/// Instructions that were unused before are left alone: only the seeds' chains go.
pub fn remove_dead_from(func: &mut Function, seeds: &[Value]) -> usize {
    let mut uses: FxHashMap<Value, usize> = FxHashMap::default();
    let mut def_at: FxHashMap<crate::ir::Inst, Block> = FxHashMap::default();
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            def_at.insert(i, b);
            for v in func.insts[i].operands() {
                *uses.entry(v).or_default() += 1;
            }
        }
    }
    let mut removed = 0;
    let mut work: Vec<Value> = seeds.to_vec();
    while let Some(v) = work.pop() {
        let ValueDef::Result(inst) = func.values[v].def else {
            continue;
        };
        let Some(&block) = def_at.get(&inst) else {
            continue;
        };
        if uses.get(&v).copied().unwrap_or(0) > 0 || !super::dce::removable(func, &func.insts[inst])
        {
            continue;
        }
        func.blocks[block].insts.retain(|&i| i != inst);
        def_at.remove(&inst);
        removed += 1;
        for x in func.insts[inst].operands() {
            if let Some(n) = uses.get_mut(&x) {
                *n -= 1;
                if *n == 0 {
                    work.push(x);
                }
            }
        }
    }
    removed
}

/// IR text in, pass, verifier, IR text out: the helper of the CFG passes' tests.
#[cfg(test)]
pub(crate) fn run_on_text(text: &str, pass: fn(&mut crate::ir::Module)) -> String {
    let mut module = crate::ir::parse_module(text).unwrap_or_else(|e| panic!("{e:?}"));
    crate::ir::verify_module(&module).unwrap_or_else(|e| panic!("input: {e:?}"));
    pass(&mut module);
    crate::ir::verify_module(&module).unwrap_or_else(|e| panic!("output: {e:?}"));
    crate::ir::write::module_to_string(&module)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn simplify(m: &mut crate::ir::Module) {
        for (_, f) in m.functions.iter_mut() {
            remove_trivial_params(f);
            merge_jump_chains(f);
        }
    }

    #[test]
    fn trivial_params_fold_and_chains_merge() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @f(i32) -> i32 {
block0(v0: i32):
    jump block1(v0)
block1(v1: i32):
    v2 = iconst.i32 1
    v3 = iadd v1, v2
    jump block2(v1, v3)
block2(v4: i32, v5: i32):
    v6 = iadd v4, v5
    return v6
}
",
            simplify,
        );
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function internal @f(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 1
    v2 = iadd v0, v1
    v3 = iadd v0, v2
    return v3
block1:
    trap unreachable
block2:
    trap unreachable
}
"
        );
    }

    #[test]
    fn loop_carried_params_stay() {
        let text = "module lanes 16 ptr 8

function internal @f(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 0
    jump block1(v1)
block1(v2: i32):
    v3 = iconst.i32 1
    v4 = iadd v2, v3
    v5 = icmp slt v4, v0
    brif v5, block1(v4), block2
block2:
    return v4
}
";
        assert_eq!(run_on_text(text, simplify), text);
    }
}
