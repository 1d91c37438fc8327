//! Uniformity relative to a divergent region's mask ("uniform among the active lanes").
//!
//! A source `if (c) { for (k = ..; ..; k++) .. }` with a divergent `c` lowers to a
//! region guarded by the mask `G = band(outer, c)`; inside it the loop counter is
//! updated with `k' = select(band(G, loopmask), k + 1, k)`. The base analysis calls
//! `k` divergent (it is merged under the divergent mask `G`), yet every lane of `G`
//! holds the same `k`: lanes outside `G` keep their old value, lanes inside all step
//! together. This module finds such values and decides which of them the back ends
//! may compute once (scalar) although lanes outside `G` then see the wrong value.
//!
//! **G-uniform.** A value `v` is *G-uniform* when, every time it is computed, all lanes
//! that are on in the current `G` hold the same value in it. The rules (a greatest fixed
//! point, like the base analysis, so loop counters feed themselves):
//! * values the base analysis proves uniform, and `G` itself (true in every lane of
//!   `G`), are G-uniform;
//! * a lane-wise operation (`unary`, `binary`, compares, conversions, `splat`) is
//!   G-uniform when its operands are; a `select` when its condition and both inputs
//!   are (or both inputs are one G-uniform value);
//! * a block parameter when every incoming argument is;
//! * a load of one scalar per lane from a G-uniform address under a G-uniform mask
//!   (all lanes of `G` read the same location, or all read 0);
//! * nothing else (atomics, calls, cross-lane operations, vector loads).
//!
//! The candidates of `G` are the G-uniform values that are not uniform, not `G`, and
//! defined where `G` cannot change under them: in a block dominated by `G`'s definition
//! (after it) and not on a cycle through `G`'s block. *Soundness of the rules:* then
//! every dynamic instance of a candidate and of each of its operands is computed after
//! the latest instance of `G` (an operand instance before it would give a path from the
//! operand's block back through `G`'s block to the use, a cycle through `G`'s block that
//! the scope excludes), so by induction over the execution every rule above keeps "all
//! lanes of the current `G` agree". The masks considered are those of the divergent
//! `brif any(G)` branches, outermost first; a value is a candidate of at most one mask,
//! and candidates of one mask depend only on uniform values, that mask and candidates
//! of the same mask (values taken by an earlier mask count as divergent).
//!
//! **Computing a candidate once** (a scalar, splatted where a vector instruction reads
//! it) gives the right value in the lanes of `G` and the *wrong* one elsewhere: such a
//! value is *partial*. Partiality spreads through lane-wise operations and block
//! arguments, and stops where the lanes outside `G` are provably not looked at:
//! * `band(x, y)` where one operand is exact (not partial) and a *subset of `G`* (false
//!   in every lane outside `G`: `G` itself, a `band` with such an operand, a `select` or
//!   block parameter whose inputs all are, the constant false; all within the scope) is
//!   exact: outside `G` it is false, inside `G` the other operand is right;
//! * `select(c, a, b)` with an exact subset-of-`G` condition and an exact `b` is exact
//!   even when `a` is partial (it picks `a` only inside `G`);
//! * a load under an exact subset-of-`G` mask is exact whatever its address (lanes off
//!   read 0, lanes on use addresses that are right).
//!
//! A partial value is *observed* (and so unusable) where lanes outside `G` can matter:
//! as the address, value or mask of a store, load or atomic whose mask is not an exact
//! subset of `G` (or that has none), as a mask, as an operand of a cross-lane operation
//! (`any`, reductions, shuffles, extracts), a call, a return, a `print`, or of an integer
//! division or remainder (a wrong divisor may trap). So a value after the region's join
//! that keeps the inactive lanes' old values, a store under the outer mask and a
//! reduction over the wider mask all make the candidates that reach them ineligible.
//!
//! **Eligible** candidates: all candidates, minus every candidate from which an
//! observed partial value is reachable through partial values (its backward closure
//! over partial operands and block arguments). Removing a candidate's whole backward
//! closure leaves the observed value computed from exact values only, and partiality is
//! monotone in the set of candidates computed once, so a back end may compute any
//! subset of the eligible values once: no partial value it creates is observed. Where a
//! back end needs the scalar truth of an eligible `select`'s varying condition `c`, it
//! is `any(c & G)` (all lanes of `G` agree on `c`; when `G` is empty nothing observes
//! the value). An eligible load whose address is eligible has a mask that is an exact
//! subset of `G` (otherwise the load observes its partial address), so a back end may
//! load once, when a lane of the mask is on: that is exactly when `G`'s lanes read.

use cranelift_entity::SecondaryMap;
use rustc_hash::{FxHashMap, FxHashSet};

use super::FunctionUniformity;
use crate::ir::dominance::DominatorTree;
use crate::ir::{BinaryOp, Block, Function, InstData, Value, ValueDef};

/// Where each value is defined: its block and position (block parameters at 0,
/// the `i`-th instruction at `i + 1`).
fn positions(func: &Function) -> SecondaryMap<Value, Option<(Block, usize)>> {
    let mut pos = SecondaryMap::with_capacity(func.values.len());
    for &b in &func.layout {
        for &p in &func.blocks[b].params {
            pos[p] = Some((b, 0));
        }
        for (i, &inst) in func.blocks[b].insts.iter().enumerate() {
            if let Some(r) = func.results[inst] {
                pos[r] = Some((b, i + 1));
            }
        }
    }
    pos
}

/// The function-wide facts every mask's analysis shares.
struct Ctx<'a> {
    func: &'a Function,
    base: &'a FunctionUniformity,
    dom: &'a DominatorTree,
    pos: SecondaryMap<Value, Option<(Block, usize)>>,
    incoming: SecondaryMap<Value, Vec<Value>>,
    /// Every instruction's operands with the instruction, for the observation scan.
    insts: Vec<crate::ir::Inst>,
    /// Each reachable block's children in the dominator tree.
    children: FxHashMap<Block, Vec<Block>>,
    /// Each block's values with their positions ([`positions`]).
    values_in: FxHashMap<Block, Vec<(Value, usize)>>,
    /// The cycle each block is on, if any ([`crate::analysis::cycles`]).
    cycle_of: FxHashMap<Block, u32>,
    /// The values computed from each value ([`Ctx::inputs`] reversed), so that fixed
    /// points revisit only what a change can affect.
    users: SecondaryMap<Value, Vec<Value>>,
}

impl<'a> Ctx<'a> {
    fn new(func: &'a Function, base: &'a FunctionUniformity, dom: &'a DominatorTree) -> Ctx<'a> {
        let mut succ: FxHashMap<Block, Vec<Block>> = FxHashMap::default();
        let mut insts = Vec::new();
        for &b in dom.rpo() {
            for s in func.successors(b) {
                succ.entry(b).or_default().push(s);
            }
            insts.extend(func.blocks[b].insts.iter().copied());
        }
        let mut children: FxHashMap<Block, Vec<Block>> = FxHashMap::default();
        for &b in dom.rpo() {
            if let Some(parent) = dom.idom(b) {
                children.entry(parent).or_default().push(b);
            }
        }
        let pos = positions(func);
        let mut values_in: FxHashMap<Block, Vec<(Value, usize)>> = FxHashMap::default();
        for (v, at) in pos.iter() {
            if let Some((b, i)) = *at {
                values_in.entry(b).or_default().push((v, i));
            }
        }
        let cycle_of = crate::analysis::cycles::cycles(dom.rpo(), &succ);
        let mut cx = Ctx {
            func,
            base,
            cycle_of,
            pos,
            incoming: super::incoming_args(func),
            dom,
            insts,
            children,
            values_in,
            users: SecondaryMap::new(),
        };
        let mut users: SecondaryMap<Value, Vec<Value>> = SecondaryMap::new();
        for (v, at) in cx.pos.iter() {
            if at.is_some() {
                for x in cx.inputs(v) {
                    users[x].push(v);
                }
            }
        }
        cx.users = users;
        cx
    }

    /// The values defined in the blocks `top` dominates (itself included), with their
    /// positions: a walk of the dominator tree below `top`, so a region costs what it
    /// holds rather than the whole function.
    fn dominated_values(&self, top: Block) -> impl Iterator<Item = (Block, Value, usize)> + '_ {
        let mut stack = if self.dom.is_reachable(top) {
            vec![top]
        } else {
            Vec::new()
        };
        let mut blocks = Vec::new();
        while let Some(b) = stack.pop() {
            blocks.push(b);
            stack.extend(self.children.get(&b).into_iter().flatten().copied());
        }
        blocks.into_iter().flat_map(move |b| {
            let values = self.values_in.get(&b).into_iter().flatten();
            values.map(move |&(v, i)| (b, v, i))
        })
    }

    fn inst_of(&self, v: Value) -> Option<&'a InstData> {
        match self.func.values.get(v)?.def {
            ValueDef::Result(i) => Some(&self.func.insts[i]),
            ValueDef::Param(..) => None,
        }
    }

    /// The operands `v`'s value is computed from (block arguments for a parameter).
    fn inputs(&self, v: Value) -> Vec<Value> {
        match self.func.values[v].def {
            ValueDef::Param(..) => self.incoming[v].clone(),
            ValueDef::Result(i) => {
                let mut ops = Vec::new();
                self.func.insts[i].for_each_operand(|x| ops.push(x));
                ops
            }
        }
    }
}

/// One region mask's analysis.
struct Region<'c, 'a> {
    cx: &'c Ctx<'a>,
    g: Value,
    /// Values defined where `g` cannot change under them.
    scope: FxHashSet<Value>,
}

impl<'c, 'a> Region<'c, 'a> {
    fn new(cx: &'c Ctx<'a>, g: Value) -> Option<Region<'c, 'a>> {
        let (gb, gi) = cx.pos[g]?;
        // The blocks on a cycle through `gb`: those that it reaches and that reach it.
        let cycle = cx.cycle_of.get(&gb);
        let on_cycle = |b: &Block| cycle.is_some() && cx.cycle_of.get(b) == cycle;
        let scope = cx
            .dominated_values(gb)
            .filter(|&(b, _, i)| !on_cycle(&b) && (b != gb || i > gi))
            .map(|(_, v, _)| v)
            .collect();
        Some(Region { cx, g, scope })
    }

    /// The values false in every lane outside `g` (greatest fixed point over the
    /// `bool` values in scope, plus `g`).
    fn subsets(&self) -> FxHashSet<Value> {
        let cx = self.cx;
        let set: FxHashSet<Value> = self
            .scope
            .iter()
            .copied()
            .filter(|&v| cx.func.value_type(v).scalar == crate::ir::Scalar::Bool)
            .chain([self.g])
            .collect();
        greatest_fixed_point(cx, set, |v, set| v == self.g || self.subset_rule(v, set))
    }

    fn subset_rule(&self, v: Value, set: &FxHashSet<Value>) -> bool {
        let cx = self.cx;
        let Some(data) = cx.inst_of(v) else {
            let ins = &cx.incoming[v];
            return !ins.is_empty() && ins.iter().all(|x| set.contains(x));
        };
        match data {
            InstData::Binary {
                op: BinaryOp::Band,
                args,
            } => args.iter().any(|x| set.contains(x)),
            InstData::Select { args: [_, a, b] } => set.contains(a) && set.contains(b),
            InstData::Iconst { bits, .. } => *bits == 0,
            _ => false,
        }
    }

    /// The partial values when the values in `roots` are computed once (least fixed
    /// point), given the subset-of-`g` values `sub`.
    fn partial(&self, roots: &FxHashSet<Value>, sub: &FxHashSet<Value>) -> FxHashSet<Value> {
        let cx = self.cx;
        let mut set = roots.clone();
        // `becomes_partial` only grows with the set and reads only the value's own
        // operands, so revisiting the users of each new member reaches the least fixed
        // point in time linear in the edges.
        let mut work: Vec<Value> = set.iter().copied().collect();
        while let Some(x) = work.pop() {
            for &v in &cx.users[x] {
                if !set.contains(&v) && cx.pos[v].is_some() && self.becomes_partial(v, &set, sub) {
                    set.insert(v);
                    work.push(v);
                }
            }
        }
        set
    }

    fn becomes_partial(&self, v: Value, p: &FxHashSet<Value>, sub: &FxHashSet<Value>) -> bool {
        let cx = self.cx;
        let part = |x: &Value| p.contains(x);
        let exact_sub = |x: &Value| sub.contains(x) && !p.contains(x);
        let Some(data) = cx.inst_of(v) else {
            return cx.incoming[v].iter().any(part);
        };
        match data {
            InstData::Binary {
                op: BinaryOp::Band,
                args,
            } => args.iter().any(part) && !args.iter().any(exact_sub),
            InstData::Select { args: [c, a, b] } => {
                part(c) || part(b) || (part(a) && !exact_sub(c))
            }
            InstData::Load { addr, mask, .. } => match mask {
                Some(m) => part(m) || (part(addr) && !exact_sub(m)),
                None => part(addr),
            },
            InstData::Unary { .. }
            | InstData::Binary { .. }
            | InstData::Icmp { .. }
            | InstData::Fcmp { .. }
            | InstData::Convert { .. }
            | InstData::Splat { .. } => data.operands().iter().any(part),
            // Other results reading a partial operand are observations (see
            // `observed`); calling them partial as well keeps the closure simple.
            _ => data.operands().iter().any(part),
        }
    }

    /// The partial values some instruction observes outside `g`.
    fn observed(&self, p: &FxHashSet<Value>, sub: &FxHashSet<Value>) -> Vec<Value> {
        let cx = self.cx;
        let exact_sub = |m: &Option<Value>| m.is_some_and(|m| sub.contains(&m) && !p.contains(&m));
        let mut out = Vec::new();
        for &inst in &cx.insts {
            let data = &cx.func.insts[inst];
            let ops = data.operands();
            if !ops.iter().any(|x| p.contains(x)) {
                continue;
            }
            let seen: Vec<Value> = match data {
                InstData::Unary { .. }
                | InstData::Icmp { .. }
                | InstData::Fcmp { .. }
                | InstData::Convert { .. }
                | InstData::Splat { .. }
                | InstData::Select { .. }
                | InstData::Jump { .. } => Vec::new(),
                InstData::Binary { op, args } => match op {
                    BinaryOp::Sdiv | BinaryOp::Udiv | BinaryOp::Srem | BinaryOp::Urem => {
                        args.to_vec()
                    }
                    _ => Vec::new(),
                },
                // A uniform branch condition is never partial (partial values are
                // varying); its block arguments only propagate.
                InstData::Brif { cond, .. } => vec![*cond],
                InstData::Load { mask, .. }
                | InstData::Store { mask, .. }
                | InstData::AtomicRmw { mask, .. }
                | InstData::AtomicCas { mask, .. } => {
                    if exact_sub(mask)
                        && !matches!(
                            data,
                            InstData::AtomicRmw { .. } | InstData::AtomicCas { .. }
                        )
                    {
                        Vec::new()
                    } else {
                        ops.to_vec()
                    }
                }
                _ => ops.to_vec(),
            };
            out.extend(seen.into_iter().filter(|x| p.contains(x)));
        }
        out
    }

    /// The eligible candidates of this mask. `taken` holds the values earlier masks
    /// made eligible: they are roots of partiality here too (wrong somewhere), so a
    /// value mixing both kinds is tracked by both analyses.
    fn eligible(
        &self,
        taken: &SecondaryMap<Value, Option<Value>>,
        cand: &FxHashSet<Value>,
    ) -> FxHashSet<Value> {
        let sub = self.subsets();
        let mut roots: FxHashSet<Value> = cand
            .iter()
            .copied()
            .filter(|&v| self.computed_as_splat(v))
            .collect();
        roots.extend(taken.iter().filter(|(_, g)| g.is_some()).map(|(v, _)| v));
        let p = self.partial(&roots, &sub);
        let mut drop = FxHashSet::default();
        let mut stack = self.observed(&p, &sub);
        while let Some(v) = stack.pop() {
            if p.contains(&v) && drop.insert(v) {
                stack.extend(self.cx.inputs(v));
            }
        }
        let mut keep: FxHashSet<Value> = cand
            .iter()
            .copied()
            .filter(|v| !drop.contains(v) && (self.computed_as_splat(*v) || sub.contains(v)))
            .collect();
        // Close the set: a value computed once needs its candidate operands computed
        // once (fewer values computed once only removes partial values).
        loop {
            let lost: Vec<Value> = keep
                .iter()
                .copied()
                .filter(|&v| {
                    self.cx
                        .inputs(v)
                        .iter()
                        .any(|x| cand.contains(x) && !keep.contains(x))
                })
                .collect();
            if lost.is_empty() {
                return keep;
            }
            for v in lost {
                keep.remove(&v);
            }
        }
    }

    /// Whether computing candidate `v` once gives a splat (a partial value): every
    /// non-`bool` value, and compares (a compare of scalars is one truth value for all
    /// lanes). Other masks (`band`, `select`, parameters) computed once are materialized
    /// as `splat(s) & G`, which is exact for a subset of `G`; masks not known to be a
    /// subset are not eligible (a back end computes them lane by lane).
    fn computed_as_splat(&self, v: Value) -> bool {
        self.cx.func.value_type(v).scalar != crate::ir::Scalar::Bool
            || matches!(
                self.cx.inst_of(v),
                Some(InstData::Icmp { .. } | InstData::Fcmp { .. })
            )
    }
}

/// The values that are G-uniform for *some* region mask `G` (the rules of
/// [`g_uniform_rule`] with every mask counting as `G`, over the whole function): a
/// superset of every mask's candidates. A greatest fixed point computed with a
/// worklist, so its cost is linear in the function.
fn relatively_uniform(cx: &Ctx, masks: &[Value]) -> FxHashSet<Value> {
    let masks: FxHashSet<Value> = masks.iter().copied().collect();
    let set: FxHashSet<Value> = cx
        .pos
        .iter()
        .filter(|(v, at)| at.is_some() && cx.func.value_type(*v).varying && !cx.base.is_uniform(*v))
        .map(|(v, _)| v)
        .collect();
    greatest_fixed_point(cx, set, |v, set| {
        g_uniform_rule(cx, v, |x| {
            masks.contains(x) || cx.base.is_uniform(*x) || set.contains(x)
        })
    })
}

/// The candidates of mask `g` among `initial` (values in its scope that may be
/// G-uniform, not uniform, not `g`, not taken by an earlier mask): those that are
/// G-uniform, a greatest fixed point.
fn candidates(cx: &Ctx, g: Value, initial: FxHashSet<Value>) -> FxHashSet<Value> {
    greatest_fixed_point(cx, initial, |v, set| {
        g_uniform_rule(cx, v, |x| {
            *x == g || cx.base.is_uniform(*x) || set.contains(x)
        })
    })
}

/// The largest subset of `set` whose members all satisfy `holds` given the subset,
/// where `holds` for a value reads only the membership of its inputs: a worklist
/// revisits the users of each removed value, so the cost is linear in the edges
/// rather than in rounds times the set.
fn greatest_fixed_point(
    cx: &Ctx,
    mut set: FxHashSet<Value>,
    holds: impl Fn(Value, &FxHashSet<Value>) -> bool,
) -> FxHashSet<Value> {
    let mut work: Vec<Value> = set.iter().copied().collect();
    while let Some(v) = work.pop() {
        if set.contains(&v) && !holds(v, &set) {
            set.remove(&v);
            work.extend(cx.users[v].iter().copied().filter(|u| set.contains(u)));
        }
    }
    set
}

/// The G-uniform rules of the module documentation for `v`, given which operands
/// count as G-uniform (`ok`).
fn g_uniform_rule(cx: &Ctx, v: Value, ok: impl Fn(&Value) -> bool) -> bool {
    let Some(data) = cx.inst_of(v) else {
        let entry = cx.func.entry_block();
        let is_entry = matches!(cx.func.values[v].def, ValueDef::Param(b, _) if Some(b) == entry);
        return !is_entry && cx.incoming[v].iter().all(&ok);
    };
    match data {
        InstData::Unary { arg, .. } | InstData::Convert { arg, .. } | InstData::Splat { arg } => {
            ok(arg)
        }
        InstData::Binary { args, .. }
        | InstData::Icmp { args, .. }
        | InstData::Fcmp { args, .. } => args.iter().all(&ok),
        InstData::Select { args: [c, a, b] } => (ok(a) && ok(b) && ok(c)) || (a == b && ok(a)),
        InstData::Load { ty, addr, mask, .. } => {
            !ty.varying && ok(addr) && mask.as_ref().is_none_or(&ok)
        }
        _ => false,
    }
}

/// Dominance in constant time: each reachable block's entry and exit numbers in a
/// depth-first walk of the dominator tree (`a` dominates `b` when `b`'s interval lies
/// in `a`'s).
struct DomIntervals {
    enter: FxHashMap<Block, u32>,
    exit: FxHashMap<Block, u32>,
}

impl DomIntervals {
    fn new(cx: &Ctx) -> DomIntervals {
        let (mut enter, mut exit) = (FxHashMap::default(), FxHashMap::default());
        let mut clock = 0u32;
        let mut stack: Vec<(Block, bool)> = cx
            .dom
            .rpo()
            .first()
            .map(|&b| (b, false))
            .into_iter()
            .collect();
        while let Some((b, done)) = stack.pop() {
            clock += 1;
            if done {
                exit.insert(b, clock);
                continue;
            }
            enter.insert(b, clock);
            stack.push((b, true));
            stack.extend(
                cx.children
                    .get(&b)
                    .into_iter()
                    .flatten()
                    .map(|&c| (c, false)),
            );
        }
        DomIntervals { enter, exit }
    }

    fn dominates(&self, a: Block, b: Block) -> bool {
        match (
            self.enter.get(&a),
            self.enter.get(&b),
            self.exit.get(&a),
            self.exit.get(&b),
        ) {
            (Some(ea), Some(eb), Some(xa), Some(xb)) => ea <= eb && xb <= xa,
            _ => false,
        }
    }
}

/// The region masks: the divergent masks tested by `brif any(mask)` / `all`, in
/// reverse postorder of their branches (outer regions first), without repeats.
fn region_masks(cx: &Ctx) -> Vec<Value> {
    let mut out = Vec::new();
    let mut seen = FxHashSet::default();
    for &b in cx.dom.rpo() {
        let Some(term) = cx.func.terminator(b) else {
            continue;
        };
        let InstData::Brif { cond, .. } = cx.func.insts[term] else {
            continue;
        };
        let Some(m) = super::branch_mask(cx.func, cond) else {
            continue;
        };
        if !cx.base.is_uniform(m) && seen.insert(m) {
            out.push(m);
        }
    }
    out
}

/// For each varying value of `func` that is uniform among the lanes of a region mask
/// `G` and eligible to be computed once, `Some(G)` (see the module documentation).
/// `dom` is the dominator tree of `func`.
pub fn analyze(
    func: &Function,
    base: &FunctionUniformity,
    dom: &DominatorTree,
) -> SecondaryMap<Value, Option<Value>> {
    let mut out: SecondaryMap<Value, Option<Value>> = SecondaryMap::new();
    if base.irreducible() {
        return out;
    }
    let cx = Ctx::new(func, base, dom);
    let masks = region_masks(&cx);
    let maybe = relatively_uniform(&cx, &masks);
    let tree = DomIntervals::new(&cx);
    for g in masks {
        // Most masks have no candidate at all; finding that from the few values that
        // could be one keeps nested regions from costing their whole scope each.
        let Some((gb, gi)) = cx.pos[g] else { continue };
        let cycle = cx.cycle_of.get(&gb);
        let could_be = |v: &Value| {
            let Some((b, i)) = cx.pos[*v] else {
                return false;
            };
            *v != g
                && out[*v].is_none()
                && tree.dominates(gb, b)
                && (b != gb || i > gi)
                && !(cycle.is_some() && cx.cycle_of.get(&b) == cycle)
        };
        let initial: FxHashSet<Value> = maybe.iter().copied().filter(could_be).collect();
        if initial.is_empty() {
            continue;
        }
        let cand = candidates(&cx, g, initial);
        if cand.is_empty() {
            continue;
        }
        let Some(region) = Region::new(&cx, g) else {
            continue;
        };
        for v in region.eligible(&out, &cand) {
            out[v] = Some(g);
        }
    }
    out
}
