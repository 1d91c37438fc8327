//! Jump threading of a re-tested source-level `if`: paper 002's example, in this IR's
//! form of a divergent branch (a mask split).
//!
//! A source `if (c) A; else B;` under a parent mask `P` is lowered to a *mask split*:
//! the masks `P & c` and `P & !c`, and a *guard* `brif any(mask), region, skip` in front
//! of each side's region. When the same condition splits the same parent mask again
//! after a stretch of code `T`,
//!
//! ```text
//! if (c) A; else B;   T;   if (c) C; else D;
//! ```
//!
//! the second test is decided on each path through the first split. Jump threading
//! copies `T` onto each path and drops the decided tests: `[A; T; C]` and `[B; T; D]`.
//!
//! **Uniform condition** (both masks proven uniform by the uniformity analysis and `P`
//! within the function's entry mask, so a non-empty `P & c` means `P & !c` is empty):
//! the area between the first guard and the join after the second split is copied once
//! per state of knowledge (`A` entered, `B` entered, neither), each copy's guards replaced
//! by jumps where its state decides them. The gang runs exactly the instructions it ran
//! before minus the decided tests, so anything may be in the area; the copies' values are
//! rejoined by SSA repair ([`cfg::repair_clones`]). By default only this case is
//! threaded ([`super::Scope`]).
//!
//! **Divergent condition** (`--force-cfg-opts` only): a SIMT machine that threads a
//! divergent branch runs *both* threaded paths, one after the other, each under its
//! lanes, and `T` twice: paper 002's ~50% harm. The pass builds exactly that, as
//! [`super::unswitch`]'s forced split does for loops: the path of the `c` side with every
//! guard decided for it (`A` and `C` entered, `B` and `D` skipped), then the path of the
//! `!c` side from the same inputs, then `select c, first, second` for every value the
//! area passes on. This is exact when each lane's results depend on that lane alone:
//! the area must be acyclic and pure (no memory, calls, barriers, traps), its `any`/`all`
//! votes read only as branch conditions (they decide which regions run, never a lane's
//! value), and everything it passes on varying. Integer division may trap, so it is
//! allowed only inside the guarded regions, where the lanes that are on hold exact
//! values and the lowering keeps the other lanes' divisors nonzero; never in `T`, which
//! runs the other side's lanes on the wrong side's values. A region whose guard is
//! decided "enter" may run under an empty mask, which changes no lane (what
//! `--no-skip-empty` relies on).
//!
//! Limits: an area of at most [`MAX_AREA`] instructions, at most two guards per split,
//! at most [`MAX_SPLITS`] threadings per function.

use cranelift_entity::SecondaryMap;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::analysis::uniformity::{analyze_divergence, FunctionUniformity};
use crate::ir::dominance::DominatorTree;
use crate::ir::{
    BinaryOp, Block, BlockCall, Function, InstData, LaneOp, Type, UnaryOp, Value, ValueDef,
};

use super::{cfg, Scope};

/// The largest area (all its instructions) that is copied.
pub const MAX_AREA: usize = 160;
/// The most threadings per function.
pub const MAX_SPLITS: usize = 4;
/// The most blocks of one guarded region, and of the stretch between the splits.
const MAX_BLOCKS: usize = 16;
/// How deep the structural comparison of the two splits' masks goes.
const DEPTH: u32 = 6;

/// Threads what it can in one function; returns how many re-tests were threaded.
pub fn split_function(func: &mut Function, scope: Scope) -> usize {
    let mut done = 0;
    while done < MAX_SPLITS {
        let res = analyze_divergence(func);
        let Some((site, style)) = find_site(func, &res, scope) else {
            break;
        };
        match style {
            Style::Uniform { implied } => apply_uniform(func, &site, implied),
            Style::Simt => apply_simt(func, &site),
        }
        done += 1;
    }
    if done > 0 {
        cfg::remove_trivial_params(func);
    }
    done
}

/// `brif any(P & c), region, skip` (or `P & !c`: `side` false) ending `block`.
#[derive(Clone, Debug)]
struct Guard {
    block: Block,
    side: bool,
    mask: Value,
    region: Vec<Block>,
    skip: Block,
}

/// Two splits on `c` under `P`, with the blocks of `T` between them.
#[derive(Debug)]
struct Site {
    first: Vec<Guard>,
    middle: Vec<Block>,
    second: Vec<Guard>,
    /// The join after the second split.
    exit: Block,
    parent: Value,
    cond: Value,
}

impl Site {
    /// The block ending in the first guard (not part of the area).
    fn head(&self) -> Block {
        self.first[0].block
    }

    fn guards(&self) -> impl Iterator<Item = &Guard> {
        self.first.iter().chain(&self.second)
    }

    /// Every block copied: all but the head and the exit.
    fn area(&self) -> Vec<Block> {
        let mut out: Vec<Block> = self.first[1..].iter().map(|g| g.block).collect();
        out.extend(self.middle.iter().copied());
        out.extend(self.second[1..].iter().map(|g| g.block));
        for g in self.guards() {
            out.extend(g.region.iter().copied());
        }
        out
    }
}

/// How a site is threaded.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Style {
    /// One path per state of knowledge; `implied`: entering one side decides the other.
    Uniform { implied: bool },
    /// Both paths in a row, merged per lane (`--force-cfg-opts` on a divergent split).
    Simt,
}

/// The parts of a guard's condition: `(P, c, side, mask)`.
fn guard_parts(func: &Function, block: Block) -> Option<(Value, Value, bool, Value)> {
    let (cond, then_dest, else_dest) = cfg::brif_of(func, block)?;
    if then_dest.block == else_dest.block {
        return None;
    }
    let ValueDef::Result(i) = func.values[cond].def else {
        return None;
    };
    let InstData::Lane {
        op: LaneOp::Any,
        args,
    } = &func.insts[i]
    else {
        return None;
    };
    let [mask] = args[..] else {
        return None;
    };
    let ValueDef::Result(mi) = func.values[mask].def else {
        return None;
    };
    let InstData::Binary {
        op: BinaryOp::Band,
        args: [parent, mut c],
    } = func.insts[mi]
    else {
        return None;
    };
    let mut side = true;
    while let ValueDef::Result(ni) = func.values[c].def {
        let InstData::Unary {
            op: UnaryOp::Bnot,
            arg,
        } = func.insts[ni]
        else {
            break;
        };
        side = !side;
        c = arg;
    }
    Some((parent, c, side, mask))
}

/// The guard ending `block`, if it splits `parent` on `cond` and its region is a
/// single-entry region whose every exit goes to the skip target.
fn guard_on(
    func: &Function,
    preds: &SecondaryMap<Block, Vec<Block>>,
    block: Block,
    parent: Value,
    cond: Value,
) -> Option<Guard> {
    let (p, c, side, mask) = guard_parts(func, block)?;
    if !cfg::same_value(func, p, parent, DEPTH) || !cfg::same_value(func, c, cond, DEPTH) {
        return None;
    }
    let (_, then_dest, else_dest) = cfg::brif_of(func, block)?;
    let (entry, skip) = (then_dest.block, else_dest.block);
    let region = region(func, preds, block, entry, skip)?;
    Some(Guard {
        block,
        side,
        mask,
        region,
        skip,
    })
}

/// The blocks from `entry` up to `skip`, if `guard` is the only way in and `skip` the
/// only way out.
fn region(
    func: &Function,
    preds: &SecondaryMap<Block, Vec<Block>>,
    guard: Block,
    entry: Block,
    skip: Block,
) -> Option<Vec<Block>> {
    if preds[entry][..] != [guard] {
        return None;
    }
    let mut blocks = vec![entry];
    let mut seen: FxHashSet<Block> = [entry].into_iter().collect();
    let mut i = 0;
    while i < blocks.len() {
        let b = blocks[i];
        i += 1;
        let t = func.terminator(b)?;
        if !matches!(func.insts[t], InstData::Jump { .. } | InstData::Brif { .. }) {
            return None;
        }
        for s in func.successors(b) {
            if s != skip && seen.insert(s) {
                if s == guard || blocks.len() >= MAX_BLOCKS {
                    return None;
                }
                blocks.push(s);
            }
        }
    }
    let closed = blocks[1..]
        .iter()
        .all(|b| preds[*b].iter().all(|p| seen.contains(p)));
    let joins = preds[skip].iter().all(|p| *p == guard || seen.contains(p));
    (closed && joins).then_some(blocks)
}

/// The guards of one split starting at `block`: one, or two of opposite sides.
fn split_at(
    func: &Function,
    preds: &SecondaryMap<Block, Vec<Block>>,
    block: Block,
    parent: Value,
    cond: Value,
) -> Option<Vec<Guard>> {
    let g = guard_on(func, preds, block, parent, cond)?;
    let next = guard_on(func, preds, g.skip, parent, cond).filter(|n| n.side != g.side);
    Some(match next {
        Some(n) => vec![g, n],
        None => vec![g],
    })
}

/// The first threadable site in reverse postorder, with how to thread it.
fn find_site(func: &Function, res: &FunctionUniformity, scope: Scope) -> Option<(Site, Style)> {
    let dom = DominatorTree::compute(func);
    let preds = cfg::predecessors(func);
    dom.rpo().iter().find_map(|&head| {
        let site = site_at(func, &preds, head)?;
        let style = style_of(func, res, scope, &site, &dom)?;
        Some((site, style))
    })
}

/// The site whose first guard ends `head`, if it has the expected shape.
fn site_at(func: &Function, preds: &SecondaryMap<Block, Vec<Block>>, head: Block) -> Option<Site> {
    let (parent, cond, _, _) = guard_parts(func, head)?;
    if !func.value_type(cond).varying {
        return None;
    }
    let first = split_at(func, preds, head, parent, cond)?;
    let mut middle = vec![first.last()?.skip];
    let second = loop {
        let cur = *middle.last()?;
        if let Some(s) = split_at(func, preds, cur, parent, cond) {
            break s;
        }
        let t = func.terminator(cur)?;
        let InstData::Jump { dest } = &func.insts[t] else {
            return None;
        };
        let next = dest.block;
        if preds[next].len() != 1 || middle.contains(&next) || middle.len() >= MAX_BLOCKS {
            return None;
        }
        middle.push(next);
    };
    let exit = second.last()?.skip;
    let site = Site {
        first,
        middle,
        second,
        exit,
        parent,
        cond,
    };
    closed(func, preds, &site).then_some(site)
}

/// Whether the area is entered only from the head and left only to the exit, each block
/// once, within the size limit.
fn closed(func: &Function, preds: &SecondaryMap<Block, Vec<Block>>, site: &Site) -> bool {
    let area = site.area();
    let set: FxHashSet<Block> = area.iter().copied().collect();
    let (head, exit) = (site.head(), site.exit);
    let size: usize = area.iter().map(|&b| func.blocks[b].insts.len()).sum();
    set.len() == area.len()
        && !set.contains(&head)
        && !set.contains(&exit)
        && head != exit
        && size <= MAX_AREA
        && area.iter().all(|&b| {
            preds[b].iter().all(|p| *p == head || set.contains(p))
                && func
                    .successors(b)
                    .iter()
                    .all(|s| *s == exit || set.contains(s))
        })
}

/// How the site may be threaded in `scope`, if at all.
fn style_of(
    func: &Function,
    res: &FunctionUniformity,
    scope: Scope,
    site: &Site,
    dom: &DominatorTree,
) -> Option<Style> {
    let cond_of = |g: &Guard| match func.terminator(g.block).map(|t| &func.insts[t]) {
        Some(InstData::Brif { cond, .. }) => Some(*cond),
        _ => None,
    };
    let uniform = site.guards().all(|g| {
        res.is_uniform(g.mask) && cond_of(g).is_some_and(|c| !scope.excludes(func, res, c))
    });
    if uniform {
        let implied = within_entry_mask(func, site.parent, DEPTH);
        return Some(Style::Uniform { implied });
    }
    (scope == Scope::All && simt_legal(func, site, dom)).then_some(Style::Simt)
}

/// Whether the mask `v` is contained in the function's entry mask: the entry mask
/// itself or a conjunction with it (every mask is, in an unmasked function).
fn within_entry_mask(func: &Function, v: Value, depth: u32) -> bool {
    let Some(entry) = func.entry_block() else {
        return false;
    };
    if !func.sig.takes_mask || func.blocks[entry].params.last() == Some(&v) {
        return true;
    }
    let ValueDef::Result(i) = func.values[v].def else {
        return false;
    };
    match func.insts[i] {
        InstData::Binary {
            op: BinaryOp::Band,
            args: [a, b],
        } if depth > 0 => {
            within_entry_mask(func, a, depth - 1) || within_entry_mask(func, b, depth - 1)
        }
        _ => false,
    }
}

/// Whether running the two threaded paths in a row and merging per lane is exact: see
/// the module documentation.
fn simt_legal(func: &Function, site: &Site, dom: &DominatorTree) -> bool {
    let area = site.area();
    let set: FxHashSet<Block> = area.iter().copied().collect();
    // Blocks under the parent mask run the lanes of the other side on that side's
    // values; a region's blocks run only lanes of their side on exact values, and the
    // lowering keeps the divisors of the other lanes nonzero (`select mask, d, 1`).
    let under_parent: FxHashSet<Block> = site.first[1..]
        .iter()
        .map(|g| g.block)
        .chain(site.middle.iter().copied())
        .chain(site.second[1..].iter().map(|g| g.block))
        .collect();
    let pure = area.iter().all(|&b| {
        func.blocks[b].insts.iter().all(|&i| match &func.insts[i] {
            InstData::Jump { .. } | InstData::Brif { .. } => true,
            data => cfg::is_pure(data) && !(divides(data) && under_parent.contains(&b)),
        })
    });
    let acyclic = acyclic(func, &area, &set) && dom.is_reachable(site.head());
    let bool_cond = func.value_type(site.cond) == Type::BOOL.to_varying();
    let exit_varying = func.blocks[site.exit]
        .params
        .iter()
        .all(|&p| func.value_type(p).varying);
    pure && acyclic && bool_cond && exit_varying && uses_ok(func, &set)
}

/// Whether the edges between the area's blocks form no cycle (Kahn's algorithm).
fn acyclic(func: &Function, area: &[Block], set: &FxHashSet<Block>) -> bool {
    let mut indegree: FxHashMap<Block, usize> = area.iter().map(|&b| (b, 0)).collect();
    for &b in area {
        for s in func.successors(b) {
            if let Some(n) = indegree.get_mut(&s) {
                *n += 1;
            }
        }
    }
    let mut ready: Vec<Block> = area.iter().copied().filter(|b| indegree[b] == 0).collect();
    let mut seen = 0;
    while let Some(b) = ready.pop() {
        seen += 1;
        for s in func.successors(b) {
            if set.contains(&s) {
                let n = indegree.get_mut(&s).expect("an area block");
                *n -= 1;
                if *n == 0 {
                    ready.push(s);
                }
            }
        }
    }
    seen == area.len()
}

/// Integer division or remainder (traps on a zero divisor in a lane that is on).
fn divides(data: &InstData) -> bool {
    matches!(
        data,
        InstData::Binary {
            op: BinaryOp::Sdiv | BinaryOp::Udiv | BinaryOp::Srem | BinaryOp::Urem,
            ..
        }
    )
}

/// Whether the area's votes are read only as branch conditions and everything it
/// defines that is read after it is varying (and so can be merged per lane).
fn uses_ok(func: &Function, area: &FxHashSet<Block>) -> bool {
    let mut votes = FxHashSet::default();
    let mut defined = FxHashSet::default();
    for &b in area {
        defined.extend(func.blocks[b].params.iter().copied());
        for &i in &func.blocks[b].insts {
            if let Some(r) = func.results[i] {
                defined.insert(r);
                if matches!(func.insts[i], InstData::Lane { .. }) {
                    votes.insert(r);
                }
            }
        }
    }
    func.layout.iter().all(|&b| {
        func.blocks[b].insts.iter().all(|&i| {
            let data = &func.insts[i];
            let vote_ok = match data {
                InstData::Brif {
                    then_dest,
                    else_dest,
                    ..
                } => !then_dest
                    .args
                    .iter()
                    .chain(else_dest.args.iter())
                    .any(|a| votes.contains(a)),
                _ => !data.operands().iter().any(|v| votes.contains(v)),
            };
            let outside_ok = area.contains(&b)
                || data
                    .operands()
                    .iter()
                    .all(|&v| !defined.contains(&v) || func.value_type(v).varying);
            vote_ok && outside_ok
        })
    })
}

// ---------------------------------------------------------------------------------
// Threading

/// What a path knows about each side's mask, indexed by side (`false`, `true`):
/// `Some(true)` non-empty, `Some(false)` empty, `None` unknown.
type State = [Option<bool>; 2];

/// The state after a guard of `side` is entered (`enter`) or skipped.
fn step(mut s: State, side: bool, enter: bool, implied: bool) -> State {
    s[side as usize] = Some(enter);
    if enter && implied {
        s[!side as usize] = Some(false);
    }
    s
}

/// One copy of the area: its block and value maps.
struct Copy {
    bmap: FxHashMap<Block, Block>,
    vmap: FxHashMap<Value, Value>,
}

impl Copy {
    /// The copy of `b`, or `b` itself when it is not in the area (the exit).
    fn at(&self, b: Block) -> Block {
        self.bmap.get(&b).copied().unwrap_or(b)
    }
}

/// Replaces a copied guard by a jump to the side its state decides; the condition it
/// tested (to delete if nothing else reads it).
fn decide(func: &mut Function, block: Block, enter: bool) -> Option<Value> {
    let t = func.terminator(block)?;
    let InstData::Brif {
        cond,
        then_dest,
        else_dest,
    } = func.insts[t].clone()
    else {
        return None;
    };
    let dest = if enter { then_dest } else { else_dest };
    func.insts[t] = InstData::Jump { dest };
    Some(cond)
}

/// The uniform case: one copy of the area per state, the head's guard and each
/// undecided guard branching to the copies of its two successor states.
fn apply_uniform(func: &mut Function, site: &Site, implied: bool) {
    let area = site.area();
    let mut copies: FxHashMap<State, Copy> = FxHashMap::default();
    let mut order: Vec<State> = Vec::new();
    let first = &site.first[0];
    let start: State = [None, None];
    let targets = [
        step(start, first.side, true, implied),
        step(start, first.side, false, implied),
    ];
    // Copies are made as states are reached; each copy's guards are then resolved.
    let mut work: Vec<State> = targets.to_vec();
    while let Some(s) = work.pop() {
        if copies.contains_key(&s) {
            continue;
        }
        let (bmap, vmap) = cfg::clone_blocks(func, &area);
        copies.insert(s, Copy { bmap, vmap });
        order.push(s);
        for g in site.guards().skip(1) {
            if s[g.side as usize].is_none() {
                work.push(step(s, g.side, true, implied));
                work.push(step(s, g.side, false, implied));
            }
        }
    }
    let guards: Vec<Guard> = site.guards().skip(1).cloned().collect();
    let mut decided = Vec::new();
    for &s in &order {
        for g in &guards {
            let block = copies[&s].bmap[&g.block];
            match s[g.side as usize] {
                Some(enter) => decided.extend(decide(func, block, enter)),
                None => {
                    let then_copy = &copies[&step(s, g.side, true, implied)];
                    let else_copy = &copies[&step(s, g.side, false, implied)];
                    let (tb, eb) = (then_copy.at(g.region[0]), else_copy.at(g.skip));
                    route(func, block, tb, eb);
                }
            }
        }
    }
    let (tb, eb) = (
        copies[&targets[0]].at(first.region[0]),
        copies[&targets[1]].at(first.skip),
    );
    route(func, site.head(), tb, eb);
    let maps: Vec<FxHashMap<Value, Value>> = order.iter().map(|s| copies[s].vmap.clone()).collect();
    unrename(func, &copies, &order);
    cfg::repair_clones(func, &maps, &Default::default());
    cfg::remove_dead_from(func, &decided);
}

/// Points the two calls of the `brif` ending `block` at `then_block` and `else_block`.
fn route(func: &mut Function, block: Block, then_block: Block, else_block: Block) {
    let t = func.terminator(block).expect("a guard");
    if let InstData::Brif {
        then_dest,
        else_dest,
        ..
    } = &mut func.insts[t]
    {
        then_dest.block = then_block;
        else_dest.block = else_block;
    }
}

/// Paths now cross between copies, so a copy's block may be reached from another copy's
/// definitions: every use of a copied value outside its defining block reads the
/// original name again, and [`cfg::repair_clones`] finds the definition that reaches it.
fn unrename(func: &mut Function, copies: &FxHashMap<State, Copy>, order: &[State]) {
    let mut back: FxHashMap<Value, Value> = FxHashMap::default();
    for s in order {
        back.extend(copies[s].vmap.iter().map(|(&o, &c)| (c, o)));
    }
    for s in order {
        for &b in copies[s].bmap.values() {
            let mut own: FxHashSet<Value> = func.blocks[b].params.iter().copied().collect();
            own.extend(func.blocks[b].insts.iter().filter_map(|&i| func.results[i]));
            for i in func.blocks[b].insts.clone() {
                func.insts[i].map_operands(|v| match back.get(&v) {
                    Some(&o) if !own.contains(&v) => o,
                    _ => v,
                });
            }
        }
    }
}

/// The divergent case: the `c` path, then the `!c` path from the same inputs, then each
/// lane's values from its side (`select c, first, second`).
fn apply_simt(func: &mut Function, site: &Site) {
    let area = site.area();
    let mut decided = Vec::new();
    let paths: Vec<Copy> = [true, false]
        .into_iter()
        .map(|side| {
            let (bmap, vmap) = cfg::clone_blocks(func, &area);
            for g in site.guards().skip(1) {
                decided.extend(decide(func, bmap[&g.block], g.side == side));
            }
            Copy { bmap, vmap }
        })
        .collect();
    let head_term = func.terminator(site.head()).expect("the first guard");
    let InstData::Brif {
        then_dest,
        else_dest,
        ..
    } = func.insts[head_term].clone()
    else {
        return;
    };
    let first_side = site.first[0].side;
    let entry_of = |side: bool, copy: &Copy| {
        let mut call = if first_side == side {
            then_dest.clone()
        } else {
            else_dest.clone()
        };
        call.block = copy.at(call.block);
        call
    };
    let (into_first, into_second) = (entry_of(true, &paths[0]), entry_of(false, &paths[1]));
    decided.extend(decide(func, site.head(), true));
    func.insts[head_term] = InstData::Jump { dest: into_first };
    let exit_types: Vec<Type> = func.blocks[site.exit]
        .params
        .iter()
        .map(|&p| func.value_type(p))
        .collect();
    let mid = new_block(func, &exit_types);
    let post = new_block(func, &exit_types);
    redirect_exits(func, &paths[0], site.exit, mid);
    redirect_exits(func, &paths[1], site.exit, post);
    jump(func, mid, into_second);
    // After both: each lane's values from its side.
    let c = site.cond;
    let mut merged: FxHashMap<(Value, Value), Value> = FxHashMap::default();
    let mut merge = |func: &mut Function, a: Value, b: Value| -> Value {
        if a == b {
            return a;
        }
        *merged.entry((a, b)).or_insert_with(|| {
            let ty = func.value_type(a);
            let i = func.append_inst(
                post,
                InstData::Select { args: [c, a, b] },
                Some(ty),
                Default::default(),
            );
            func.results[i].expect("a select")
        })
    };
    let pairs: Vec<(Value, Value)> = func.blocks[mid]
        .params
        .clone()
        .into_iter()
        .zip(func.blocks[post].params.clone())
        .collect();
    let args: Vec<Value> = pairs.into_iter().map(|(a, b)| merge(func, a, b)).collect();
    let inside: FxHashSet<Block> = area
        .iter()
        .copied()
        .chain(paths.iter().flat_map(|p| p.bmap.values().copied()))
        .chain([mid, post])
        .collect();
    let outside: Vec<crate::ir::Inst> = func
        .layout
        .iter()
        .filter(|b| !inside.contains(b))
        .flat_map(|&b| func.blocks[b].insts.clone())
        .collect();
    for i in outside {
        let ops = func.insts[i].operands();
        let mut replace: FxHashMap<Value, Value> = FxHashMap::default();
        for v in ops {
            if let (Some(&a), Some(&b)) = (paths[0].vmap.get(&v), paths[1].vmap.get(&v)) {
                replace.insert(v, merge(func, a, b));
            }
        }
        func.insts[i].map_operands(|v| replace.get(&v).copied().unwrap_or(v));
    }
    jump(
        func,
        post,
        BlockCall {
            block: site.exit,
            args: args.into(),
        },
    );
    cfg::clear_unreachable(func);
    cfg::remove_dead_from(func, &decided);
}

/// A new block with parameters of `types`.
fn new_block(func: &mut Function, types: &[Type]) -> Block {
    let b = func.create_block();
    for &ty in types {
        func.append_block_param(b, ty);
    }
    b
}

/// Appends `jump dest` to `block`.
fn jump(func: &mut Function, block: Block, dest: BlockCall) {
    func.append_inst(block, InstData::Jump { dest }, None, Default::default());
}

/// Points the copy's branches to `exit` at `to` instead (same arguments).
fn redirect_exits(func: &mut Function, copy: &Copy, exit: Block, to: Block) {
    for &b in copy.bmap.values() {
        if let Some(t) = func.terminator(b) {
            cfg::retarget(&mut func.insts[t], |x| if x == exit { to } else { x });
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::passes::cfg::run_on_text;
    use crate::passes::{jump_thread, Scope};

    /// `if (c) x += x; else x -= x; y = x * x; if (c) y /= x; else y = max(y, x);` under
    /// the entry mask `v2`, with `c` from `LEFT op RIGHT`, and `EXTRA` in `T`.
    fn retest(cond: &str, extra: &str) -> String {
        format!(
            "module lanes 16 ptr 8

function internal @f(i32, [f32], ptr) -> [f32] masked {{
block0(v0: i32, v1: [f32], v30: ptr, v2: [bool]):
    v3 = splat v0
    v4 = special lane_index
    {cond}
    v6 = band v2, v5
    v7 = bnot v5
    v8 = band v2, v7
    v9 = any v6
    brif v9, block1, block2(v1)
block1:
    v10 = fadd v1, v1
    v11 = select v6, v10, v1
    jump block2(v11)
block2(v12: [f32]):
    v13 = any v8
    brif v13, block3, block4(v12)
block3:
    v14 = fsub v12, v1
    v15 = select v8, v14, v12
    jump block4(v15)
block4(v16: [f32]):
    v17 = fmul v16, v16
    v18 = select v2, v17, v16
{extra}    v19 = band v2, v5
    v20 = bnot v5
    v21 = band v2, v20
    v22 = any v19
    brif v22, block5, block6(v18)
block5:
    v23 = fdiv v18, v16
    v24 = select v19, v23, v18
    jump block6(v24)
block6(v25: [f32]):
    v26 = any v21
    brif v26, block7, block8(v25)
block7:
    v27 = fmax v25, v16
    v28 = select v21, v27, v25
    jump block8(v28)
block8(v29: [f32]):
    return v29
}}
"
        )
    }

    /// `c = v0 > 0` for a uniform `v0`: both masks uniform.
    const UNIFORM: &str = "v31 = iconst.[i32] 0\n    v5 = icmp sgt v3, v31";
    /// `c = lane_index < v0`: divergent.
    const DIVERGENT: &str = "v5 = icmp slt v4, v3";

    /// Forced threading, then the jump chains merged (as the pipeline ends).
    fn forced_then_merged(module: &mut crate::ir::Module) {
        jump_thread::run_forced(module);
        crate::passes::merge_blocks(module);
    }

    fn count(text: &str, what: &str) -> usize {
        text.matches(what).count()
    }

    #[test]
    fn uniform_retest_is_threaded_by_default() {
        let out = run_on_text(&retest(UNIFORM, ""), jump_thread::run_uniform);
        // The head's test and, when its side was skipped, the other side's test: the
        // second split's two tests are decided on every path and gone, with their masks.
        assert_eq!(count(&out, "brif"), 2, "{out}");
        assert_eq!(count(&out, "any"), 2, "{out}");
        // `T` once per path (then side, else side, neither); each region once.
        assert_eq!(count(&out, "fmul"), 3, "{out}");
        for op in ["fadd", "fsub", "fdiv", "fmax"] {
            assert_eq!(count(&out, op), 1, "{op}: {out}");
        }
    }

    #[test]
    fn uniform_retest_is_left_alone_without_the_analysis() {
        let text = retest(UNIFORM, "");
        let mut typed = crate::ir::parse_module(&text).unwrap();
        for (_, f) in typed.functions.iter_mut() {
            assert_eq!(super::split_function(f, Scope::Typed), 0);
        }
    }

    #[test]
    fn divergent_retest_is_threaded_only_when_forced_and_runs_both_paths() {
        let text = retest(DIVERGENT, "");
        let mut module = crate::ir::parse_module(&text).unwrap();
        for (_, f) in module.functions.iter_mut() {
            assert_eq!(super::split_function(f, Scope::Uniform), 0);
        }
        let out = run_on_text(&text, forced_then_merged);
        // One straight block, in execution order. No test left: the `c` path (first region, `T`, second then-region), then the
        // `!c` path from the same inputs, then each lane's result by `c`.
        assert_eq!(count(&out, "brif"), 0, "{out}");
        assert_eq!(count(&out, "any"), 0, "{out}");
        assert_eq!(count(&out, "fmul"), 2, "{out}");
        let c = out
            .lines()
            .find_map(|l| l.trim().strip_suffix(" = icmp slt v5, v4"))
            .unwrap_or_else(|| panic!("{out}"));
        let merge = format!("select {c}, ");
        let order: Vec<usize> = ["fadd", "fdiv", "fsub", "fmax", &merge, "return"]
            .iter()
            .map(|op| out.find(op).unwrap_or_else(|| panic!("{op}: {out}")))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{out}");
    }

    #[test]
    fn forced_threading_needs_a_pure_middle() {
        // A store in `T` would run twice; a vote read as a value would see other lanes.
        let store = "    v33 = splat v30\n    store generic v33, v17 mask v2\n";
        let vote = "    v31 = any v5\n    v32 = select v31, v17, v16\n";
        for extra in [store, vote] {
            let text = retest(DIVERGENT, extra);
            let mut module = crate::ir::parse_module(&text).unwrap();
            for (_, f) in module.functions.iter_mut() {
                assert_eq!(super::split_function(f, Scope::All), 0, "{extra}");
            }
        }
        // On a uniform condition the gang runs each instruction as often as before, so a
        // store in `T` is no obstacle.
        let out = run_on_text(&retest(UNIFORM, store), jump_thread::run_uniform);
        assert_eq!(count(&out, "store"), 3, "{out}");
        assert_eq!(count(&out, "brif"), 2, "{out}");
    }

    #[test]
    fn a_different_condition_is_not_threaded() {
        let text = retest(UNIFORM, "").replace("v19 = band v2, v5", "v19 = band v2, v2");
        let mut module = crate::ir::parse_module(&text).unwrap();
        for (_, f) in module.functions.iter_mut() {
            assert_eq!(super::split_function(f, Scope::All), 0);
        }
    }
}
