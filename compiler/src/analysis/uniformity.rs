//! Uniformity (divergence) analysis: which values hold the same value in every active
//! program instance of the gang, and which branches of the source program are divergent.
//!
//! Every IR value already has a *type-level* variability from the language's rules
//! (`i32` uniform, `[i32]` varying), and divergent control flow has already become
//! masks: every `brif` branches on a uniform `bool`, usually `any(mask)`. The types are
//! conservative: `varying int x = 0;` is a varying value that is the same in every
//! lane. This analysis finds the varying-typed values that are *uniform-valued*, which
//! is what paper 002 asks a compiler to know to treat uniform and divergent branches
//! differently: a source-level `if` became `brif any(m)`, and that branch is divergent
//! exactly when the mask `m` may differ between the active lanes.
//!
//! **Lattice.** Each value is `uniform` (every lane that is on in the function's entry
//! mask holds the same value) or `divergent`; values typed uniform are always uniform.
//! The analysis is optimistic: it starts from "everything uniform" and marks values
//! divergent until nothing changes, which handles loops (block parameters fed back by
//! themselves stay uniform unless something divergent flows in). Each divergent value
//! records *why* ([`Why`]): the operand it got divergence from, the divergent mask that
//! selects between its inputs, or a [`Source`]; [`FunctionUniformity::chain`] follows
//! that back to the source for diagnostics.
//!
//! **Sources**: `lane_index` and thread indices; varying parameters (the caller's
//! lanes may differ); vector loads and loads from divergent addresses; atomics with a
//! varying result; calls with a varying result (no interprocedural refinement);
//! cross-lane operations that move values between lanes (`insert`, shuffles, rotates,
//! shifts, scans), since an inactive lane may hold anything. The entry mask itself is
//! uniform by definition (true in every active lane).
//!
//! **Data propagation**: an arithmetic, comparison or conversion result is divergent
//! when an operand is; a block parameter when an incoming argument is.
//!
//! **Sync dependence.** Because every `brif` is uniform, all lanes follow the same
//! CFG path, so block parameters never merge values from different paths per lane.
//! Merges after a divergent source-level branch are `select`s on the branch's mask (or
//! masked stores that `promote` turned into selects): a `select` whose condition is
//! divergent is divergent unless both inputs are the same value. A masked load or call
//! under a divergent mask is divergent (lanes off read 0).
//!
//! **Temporal divergence.** A value defined in a loop whose exit depends on a
//! divergent mask and used after it: the lowering updates every varying variable in such
//! a loop with a `select` on the loop's mask (lanes that left keep their value), and that
//! mask is divergent, so the sync rule above already makes the live-out value divergent.
//! Uniform-typed loop values are uniform because the whole gang leaves the loop together.
//!
//! **Irreducible control flow** is handled conservatively: if a function's CFG has a
//! retreating edge whose target does not dominate its source, every varying-typed value
//! of the function is divergent ([`Source::Irreducible`]).
//!
//! **Uniform among a region's lanes.** [`relative`] refines divergent values: a value
//! can be the same in every lane of a divergent region's mask `G` (a loop counter inside
//! `if (divergent)`), and may then be computed once when nothing looks at the lanes
//! outside `G`; [`FunctionUniformity::uniform_in`] gives `G`, `--emit ir` shows
//! `uniform in vG`. [`FunctionUniformity::is_uniform`] is unchanged by it.
//!
//! **Memory** is treated conservatively: a load is uniform only when it reads one scalar
//! from a uniform address (every lane reads the same location in one instruction) under
//! a uniform mask; a varying-typed load reads a different element per lane.

pub mod divergent;
pub mod relative;

use cranelift_entity::SecondaryMap;
use rustc_hash::FxHashSet;

use crate::diag::{codes, Diagnostic};
use crate::front::ast;
use crate::ir::dominance::DominatorTree;
use crate::ir::write::Names;
use crate::ir::{
    BinaryOp, ConvOp, FuncRef, Function, InstData, LaneOp, Module, Scalar, SpecialReg, UnaryOp,
    Value, ValueDef,
};
use crate::source::Span;

/// Where divergence starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `programIndex` or a thread index.
    Special(SpecialReg),
    /// A varying parameter (not the entry mask), by index.
    Param(u32),
    /// A load that reads one element per lane (`load.[T]`).
    VectorLoad,
    /// An atomic operation with a varying result.
    Atomic,
    /// The varying result of a call.
    Call(FuncRef),
    /// A cross-lane operation that moves values between lanes.
    CrossLane(LaneOp),
    /// The function has irreducible control flow.
    Irreducible,
}

/// Why a value is divergent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    Source(Source),
    /// Data dependence on a divergent operand (or block argument).
    Operand(Value),
    /// Sync dependence: chosen between inputs by a divergent mask.
    Mask(Value),
}

impl Why {
    /// The value divergence came from, if not a source.
    fn origin(self) -> Option<Value> {
        match self {
            Why::Operand(v) | Why::Mask(v) => Some(v),
            Why::Source(_) => None,
        }
    }
}

/// The results for one function: a side table from values to [`Why`] they are
/// divergent (`None`: uniform).
#[derive(Clone, Debug, Default)]
pub struct FunctionUniformity {
    divergent: SecondaryMap<Value, Option<Why>>,
    irreducible: bool,
    /// For divergent values uniform among a region mask's lanes and eligible to be
    /// computed once: that mask ([`relative`]).
    relative: SecondaryMap<Value, Option<Value>>,
}

impl FunctionUniformity {
    pub fn is_uniform(&self, v: Value) -> bool {
        self.divergent[v].is_none()
    }

    /// Why `v` is divergent; `None` when it is uniform.
    pub fn why(&self, v: Value) -> Option<Why> {
        self.divergent[v]
    }

    /// The region mask `G` when `v` is divergent but holds the same value in every lane
    /// of `G` and may be computed once (a scalar, splatted where a vector instruction
    /// reads it; wrong outside `G`, where nothing observes it). See [`relative`].
    /// [`FunctionUniformity::is_uniform`] stays false for such values.
    pub fn uniform_in(&self, v: Value) -> Option<Value> {
        self.relative.get(v).copied().flatten()
    }

    /// The region mask whose lanes decide a select `v` computed once on the varying
    /// condition `c`: `None` for a uniform condition (any lane decides), else `G` when
    /// `v` is uniform in `G` (any lane of `c & G` decides; all of them agree). Both back
    /// ends select on this.
    pub fn select_region(&self, v: Value, c: Value) -> Option<Value> {
        if self.is_uniform(c) {
            return None;
        }
        self.uniform_in(v)
    }

    /// Whether the function's CFG was found irreducible.
    pub fn irreducible(&self) -> bool {
        self.irreducible
    }

    /// The values from `v` back to where its divergence starts (`v` first; the last
    /// one's [`Why`] is a [`Source`]). Empty when `v` is uniform.
    pub fn chain(&self, v: Value) -> Vec<Value> {
        let mut chain = Vec::new();
        let mut seen = FxHashSet::default();
        let mut cur = Some(v).filter(|&v| !self.is_uniform(v));
        while let Some(v) = cur {
            if !seen.insert(v) {
                break;
            }
            chain.push(v);
            cur = self.why(v).and_then(Why::origin);
        }
        chain
    }
}

/// The results for every function of a module.
#[derive(Clone, Debug, Default)]
pub struct ModuleUniformity {
    pub functions: SecondaryMap<FuncRef, FunctionUniformity>,
}

/// Analyzes every function of `module`.
pub fn analyze_module(module: &Module) -> ModuleUniformity {
    analyze_each(module, analyze_function)
}

/// Every function of `module` analyzed by `analyze`.
fn analyze_each(module: &Module, analyze: fn(&Function) -> FunctionUniformity) -> ModuleUniformity {
    let mut out = ModuleUniformity::default();
    for (fref, func) in module.functions.iter() {
        out.functions[fref] = analyze(func);
    }
    out
}

/// Analyzes one function: which values are divergent, and which of those are uniform
/// among a region mask's lanes ([`relative`]).
pub fn analyze_function(func: &Function) -> FunctionUniformity {
    let dom = DominatorTree::compute(func);
    let mut result = divergence(func, &dom);
    result.relative = relative::analyze(func, &result, &dom);
    result
}

/// Only which values are divergent: [`FunctionUniformity::uniform_in`] is `None`
/// everywhere. For the CFG passes, which ask only [`FunctionUniformity::is_uniform`]
/// and re-analyze after every change: the region analysis would be most of their cost.
pub fn analyze_divergence(func: &Function) -> FunctionUniformity {
    divergence(func, &DominatorTree::compute(func))
}

/// The divergence of every value of `func`, whose dominator tree is `dom` (no
/// relative facts).
fn divergence(func: &Function, dom: &DominatorTree) -> FunctionUniformity {
    let mut result = FunctionUniformity {
        divergent: SecondaryMap::with_capacity(func.values.len()),
        irreducible: irreducible_with(func, dom),
        relative: SecondaryMap::new(),
    };
    if result.irreducible {
        for (v, data) in func.values.iter() {
            if data.ty.varying {
                result.divergent[v] = Some(Why::Source(Source::Irreducible));
            }
        }
        return result;
    }
    let incoming = incoming_args(func);
    // The varying-typed values not yet found divergent, in reverse postorder.
    let mut pending: Vec<Value> = dom
        .rpo()
        .iter()
        .flat_map(|&block| func.values_defined_in(block))
        .filter(|&v| func.value_type(v).varying)
        .collect();
    let mut changed = true;
    while changed {
        changed = false;
        pending.retain(|&v| match transfer(func, &result, &incoming, v) {
            Some(why) => {
                result.divergent[v] = Some(why);
                changed = true;
                false
            }
            None => true,
        });
    }
    result
}

/// For each block parameter, the arguments every branch passes to it.
fn incoming_args(func: &Function) -> SecondaryMap<Value, Vec<Value>> {
    let mut incoming: SecondaryMap<Value, Vec<Value>> =
        SecondaryMap::with_capacity(func.values.len());
    for &block in &func.layout {
        let Some(term) = func.terminator(block) else {
            continue;
        };
        for call in func.insts[term].successors() {
            let params = &func.blocks[call.block].params;
            for (&p, &a) in params.iter().zip(call.args.iter()) {
                incoming[p].push(a);
            }
        }
    }
    incoming
}

/// Why a varying-typed value is divergent given what is known so far; `None` if it
/// is (still) uniform.
fn transfer(
    func: &Function,
    state: &FunctionUniformity,
    incoming: &SecondaryMap<Value, Vec<Value>>,
    v: Value,
) -> Option<Why> {
    let div = |x: &Value| !state.is_uniform(*x);
    let first_div = |xs: &[Value]| xs.iter().copied().find(|x| div(x)).map(Why::Operand);
    let inst = match func.values[v].def {
        ValueDef::Param(block, index) if Some(block) == func.entry_block() => {
            let is_mask =
                func.sig.takes_mask && index as usize + 1 == func.blocks[block].params.len();
            return (!is_mask).then_some(Why::Source(Source::Param(index)));
        }
        ValueDef::Param(..) => return first_div(&incoming[v]),
        ValueDef::Result(inst) => inst,
    };
    match &func.insts[inst] {
        InstData::Iconst { .. } | InstData::Fconst { .. } | InstData::Splat { .. } => None,
        InstData::Special { reg } => reg
            .is_varying()
            .then_some(Why::Source(Source::Special(*reg))),
        InstData::Unary { arg, .. } | InstData::Convert { arg, .. } => first_div(&[*arg]),
        InstData::Binary { args, .. }
        | InstData::Icmp { args, .. }
        | InstData::Fcmp { args, .. } => first_div(args),
        InstData::Select { args: [c, a, b] } => {
            first_div(&[*a, *b]).or_else(|| (div(c) && a != b).then_some(Why::Mask(*c)))
        }
        InstData::Lane { op, .. } => Some(Why::Source(Source::CrossLane(*op))),
        InstData::Load { ty, addr, mask, .. } => {
            if div(addr) {
                Some(Why::Operand(*addr))
            } else if ty.varying {
                Some(Why::Source(Source::VectorLoad))
            } else {
                mask.filter(|m| div(m)).map(Why::Mask)
            }
        }
        InstData::AtomicRmw { .. } | InstData::AtomicCas { .. } => {
            Some(Why::Source(Source::Atomic))
        }
        InstData::Call { func: callee, .. } => Some(Why::Source(Source::Call(*callee))),
        // Instructions without a varying result; a malformed module gets "divergent".
        _ => Some(Why::Source(Source::Irreducible)),
    }
}

/// Whether the CFG has a retreating edge (to a block on the DFS stack) whose target
/// does not dominate its source: the definition of irreducibility.
pub fn is_irreducible(func: &Function) -> bool {
    irreducible_with(func, &DominatorTree::compute(func))
}

/// [`is_irreducible`], given the dominator tree `dom` of `func`.
fn irreducible_with(func: &Function, dom: &DominatorTree) -> bool {
    let Some(entry) = func.entry_block() else {
        return false;
    };
    let mut on_stack = FxHashSet::default();
    let mut seen = FxHashSet::default();
    let mut stack = vec![(entry, func.successors(entry), 0usize)];
    seen.insert(entry);
    on_stack.insert(entry);
    while let Some((block, succs, next)) = stack.last_mut() {
        let block = *block;
        let Some(&s) = succs.get(*next) else {
            on_stack.remove(&block);
            stack.pop();
            continue;
        };
        *next += 1;
        if on_stack.contains(&s) && !dom.dominates(s, block) {
            return true;
        }
        if seen.insert(s) {
            on_stack.insert(s);
            stack.push((s, func.successors(s), 0));
        }
    }
    false
}

/// The annotation `--emit ir` prints after a value: `uniform` for varying-typed values
/// found uniform, `divergent <- vN` / `divergent (source)` otherwise; nothing for values
/// typed uniform (their type already says it).
pub fn annotation(
    module: &Module,
    func: &Function,
    result: &FunctionUniformity,
    names: &Names,
    v: Value,
) -> Option<String> {
    if !func.values.get(v)?.ty.varying {
        return None;
    }
    let text = match result.why(v) {
        None => "uniform".to_string(),
        Some(Why::Operand(x)) => format!("divergent <- {}", names.value(x)),
        Some(Why::Mask(m)) => format!("divergent <- mask {}", names.value(m)),
        Some(Why::Source(s)) => format!("divergent ({})", source_text(module, s)),
    };
    Some(match result.uniform_in(v) {
        Some(g) => format!("{text}, uniform in {}", names.value(g)),
        None => text,
    })
}

/// `module` as text with the analysis results as comments.
pub fn annotated_module_text(module: &Module, result: &ModuleUniformity) -> String {
    let mut out = String::new();
    crate::ir::write::write_module_annotated(&mut out, module, &|fref, names, v| {
        annotation(
            module,
            &module.functions[fref],
            &result.functions[fref],
            names,
            v,
        )
    })
    .expect("writing to a String cannot fail");
    out
}

fn source_text(module: &Module, s: Source) -> String {
    match s {
        Source::Special(reg) => reg.name().to_string(),
        Source::Param(i) => format!("parameter {i}"),
        Source::VectorLoad => "vector load".to_string(),
        Source::Atomic => "atomic".to_string(),
        Source::Call(f) => match module.functions.get(f) {
            Some(callee) => format!("result of call to @{}", callee.name),
            None => format!("result of call {f}"),
        },
        Source::CrossLane(op) => format!("cross-lane {}", op.name()),
        Source::Irreducible => "irreducible control flow".to_string(),
    }
}

/// Every `brif` of `func` on `any`/`all` of a mask, with that mask ([`branch_mask`]).
fn masked_branches(func: &Function) -> impl Iterator<Item = (crate::ir::Inst, Value)> + '_ {
    func.layout.iter().filter_map(|&block| {
        let term = func.terminator(block)?;
        let InstData::Brif { cond, .. } = func.insts[term] else {
            return None;
        };
        Some((term, branch_mask(func, cond)?))
    })
}

/// The mask `brif cond` tests: `m` when `cond` is `any m` or `all m`, looking through
/// `bnot`.
pub fn branch_mask(func: &Function, cond: Value) -> Option<Value> {
    let mut cur = cond;
    loop {
        let ValueDef::Result(inst) = func.values.get(cur)?.def else {
            return None;
        };
        match &func.insts[inst] {
            InstData::Unary {
                op: UnaryOp::Bnot,
                arg,
            } => cur = *arg,
            InstData::Lane {
                op: LaneOp::Any | LaneOp::All,
                args,
            } => return args.first().copied(),
            _ => return None,
        }
    }
}

/// The conditions a mask is made of: its conjuncts and disjuncts through `band`/`bor`,
/// with `bnot` looked through (so an `if`'s then and else masks share a condition), and
/// without block parameters and the entry mask, which carry masks built elsewhere
/// (where their conditions are reported). Each `brif any(mask)` the lowering emits,
/// including the "skip when no lane is on" checks, tests the enclosing mask combined
/// with at most one new condition; the new one is what makes a source branch divergent.
fn mask_conditions(func: &Function, mask: Value) -> Vec<Value> {
    let mut out = Vec::new();
    let mut stack = vec![mask];
    let mut seen = FxHashSet::default();
    while let Some(v) = stack.pop() {
        if !seen.insert(v) {
            continue;
        }
        let ValueDef::Result(inst) = func.values[v].def else {
            continue;
        };
        match &func.insts[inst] {
            InstData::Binary {
                op: BinaryOp::Band | BinaryOp::Bor,
                args,
            } => stack.extend(args.iter().rev()),
            InstData::Unary {
                op: UnaryOp::Bnot,
                arg,
            } => stack.push(*arg),
            _ => out.push(v),
        }
    }
    out
}

/// The source span of a value's definition, if known.
fn value_span(func: &Function, v: Value) -> Option<Span> {
    match func.values[v].def {
        ValueDef::Result(inst) => Some(func.spans[inst]).filter(|s| *s != Span::default()),
        ValueDef::Param(..) => None,
    }
}

/// A `cif`/`cfor`/`cwhile`/`cdo` of the source: the statement, its condition and the
/// statements nested in it (whose branches are not its own).
struct CoherentStmt {
    span: Span,
    cond: Span,
    children: Vec<Span>,
}

/// What the uniformity reports need of one statement.
struct StmtParts<'a> {
    /// The condition of an `if`/`for`/`while`/`do` (and their coherent forms), or the
    /// value a `switch` tests.
    cond: Option<&'a ast::Expr>,
    coherent: bool,
    /// How the source spells the statement: `if`, `cfor`, `do`...
    keyword: &'static str,
    /// The statements nested in it.
    children: Vec<&'a ast::Stmt>,
}

fn stmt_parts(stmt: &ast::Stmt) -> StmtParts<'_> {
    let cond = |cond, coherent: bool, plain, coherent_kw, children| StmtParts {
        cond,
        coherent,
        keyword: if coherent { coherent_kw } else { plain },
        children,
    };
    match &stmt.kind {
        ast::StmtKind::If {
            cond: c,
            then,
            else_,
            coherent,
        } => cond(
            Some(c),
            *coherent,
            "if",
            "cif",
            std::iter::once(&**then).chain(else_.as_deref()).collect(),
        ),
        ast::StmtKind::For {
            cond: c,
            body,
            coherent,
            ..
        } => cond(c.as_deref(), *coherent, "for", "cfor", vec![&**body]),
        ast::StmtKind::While {
            cond: c,
            body,
            coherent,
        } => cond(Some(c), *coherent, "while", "cwhile", vec![&**body]),
        ast::StmtKind::DoWhile {
            body,
            cond: c,
            coherent,
        } => cond(Some(c), *coherent, "do", "cdo", vec![&**body]),
        ast::StmtKind::Block(b) | ast::StmtKind::Unmasked(b) => {
            cond(None, false, "", "", b.stmts.iter().collect())
        }
        ast::StmtKind::Switch { cond: c, arms } => cond(
            Some(c),
            false,
            "switch",
            "switch",
            arms.iter().flat_map(|a| &a.body).collect(),
        ),
        ast::StmtKind::Foreach { body, .. }
        | ast::StmtKind::ForeachActive { body, .. }
        | ast::StmtKind::ForeachUnique { body, .. }
        | ast::StmtKind::Labeled { body, .. } => cond(None, false, "", "", vec![&**body]),
        _ => cond(None, false, "", "", Vec::new()),
    }
}

/// Calls `visit` on every statement of every function body of `unit`, with the
/// function.
fn visit_statements<'a>(
    unit: &'a ast::TranslationUnit,
    mut visit: impl FnMut(&'a ast::Function, &'a ast::Stmt, &StmtParts<'a>),
) {
    for item in &unit.items {
        let ast::Item::Function(f) = item else {
            continue;
        };
        let mut stack: Vec<&ast::Stmt> = f.body.iter().flat_map(|b| &b.stmts).collect();
        while let Some(stmt) = stack.pop() {
            let parts = stmt_parts(stmt);
            visit(f, stmt, &parts);
            stack.extend(parts.children);
        }
    }
}

/// Every coherent statement with a condition in `unit`.
fn coherent_statements(unit: &ast::TranslationUnit) -> Vec<CoherentStmt> {
    let mut out = Vec::new();
    visit_statements(unit, |_, stmt, parts| {
        if let (Some(cond), true) = (parts.cond, parts.coherent) {
            out.push(CoherentStmt {
                span: stmt.span,
                cond: cond.span,
                children: parts.children.iter().map(|c| c.span).collect(),
            });
        }
    });
    out.sort_by_key(|s| (s.span.file, s.span.start));
    out
}

fn span_within(inner: Span, outer: Span) -> bool {
    inner.file == outer.file && inner.start >= outer.start && inner.end <= outer.end
}

/// Notes ([`codes::UNNECESSARY_COHERENT_HINT`], severity note) for `cif`, `cfor`,
/// `cwhile` and `cdo` whose condition is typed varying but the analysis proves
/// uniform-valued: the gang always agrees, so the coherence hint buys nothing. (A
/// condition typed uniform already gets the front end's W0003 warning.) A statement's
/// branches are the `brif any(mask)`s with a span inside the statement but not inside a
/// nested statement; its conditions are the conditions of those masks defined inside its
/// condition's span. The note is given when there is at least one and all are uniform.
pub fn unnecessary_coherent_hints(
    unit: &ast::TranslationUnit,
    module: &Module,
    result: &ModuleUniformity,
) -> Vec<Diagnostic> {
    let stmts = coherent_statements(unit);
    // Per statement: whether some condition was found, and whether all are uniform.
    let mut found = vec![(false, true); stmts.len()];
    for (fref, func) in module.functions.iter() {
        let res = &result.functions[fref];
        for (term, mask) in masked_branches(func) {
            let span = func.spans[term];
            for (i, st) in stmts.iter().enumerate() {
                let own = span_within(span, st.span)
                    && !st.children.iter().any(|&c| span_within(span, c));
                if !own {
                    continue;
                }
                let conds = mask_conditions(func, mask)
                    .into_iter()
                    .filter(|&c| value_span(func, c).is_some_and(|s| span_within(s, st.cond)));
                for c in conds {
                    found[i].0 = true;
                    found[i].1 &= res.is_uniform(c);
                }
            }
        }
    }
    stmts
        .iter()
        .zip(found)
        .filter(|(_, (any, all_uniform))| *any && *all_uniform)
        .map(|(st, _)| {
            Diagnostic::note(
                codes::UNNECESSARY_COHERENT_HINT,
                "coherent control flow hint on a condition that is always uniform",
            )
            .with_primary(
                st.cond,
                "this condition is varying but has the same value in every active program instance",
            )
            .with_help("use the plain form (`if`, `for`, `while`, `do`)")
        })
        .collect()
}

/// What the command line reports from this analysis for a program lowered from
/// `front` (the module of [`crate::driver::lower_front`], before legalization): the
/// [`unnecessary_coherent_hints`] notes always, and the [`divergent_branches`]
/// warnings when `warn_divergent` (`--warn-divergent`) is set. Diagnostics located in
/// the standard library are left out: they are not the user's to act on.
pub fn report(
    front: &crate::driver::FrontResult,
    module: &Module,
    warn_divergent: bool,
) -> Vec<Diagnostic> {
    if !warn_divergent && coherent_statements(&front.unit).is_empty() {
        return Vec::new();
    }
    // Both reports ask only which values diverge, never the region-relative facts.
    let result = analyze_each(module, analyze_divergence);
    let mut out = unnecessary_coherent_hints(&front.unit, module, &result);
    if warn_divergent {
        out.extend(divergent::divergent_branches(front, module, &result));
    }
    out.retain(|d| d.span().is_none_or(|s| Some(s.file) != front.stdlib_file));
    out
}

/// Instruments `module` to check the analysis at run time (the soundness test): after
/// the definition of every varying-typed value the analysis calls uniform, a
/// `reduce_equal` over the function's entry mask (all lanes for unmasked functions)
/// tests that every active lane holds the same value (floats by their bits: a NaN
/// in every lane is uniform, -0 in one lane and +0 in another is not); each block's terminator then runs
/// only if all of its block's checks hold, and traps (`unreachable`) otherwise. All
/// branches are uniform, so every lane of the gang executes each check.
pub fn insert_uniformity_checks(module: &mut Module, result: &ModuleUniformity) {
    for (fref, func) in module.functions.iter_mut() {
        insert_function_checks(func, &result.functions[fref]);
    }
}

fn insert_function_checks(func: &mut Function, result: &FunctionUniformity) {
    let Some(entry) = func.entry_block() else {
        return;
    };
    let span = Span::default();
    // The entry mask: the hidden last parameter, or all lanes on.
    let mask = match func.sig.takes_mask {
        true => match func.blocks[entry].params.last() {
            Some(&m) => m,
            None => return,
        },
        false => {
            let data = InstData::Iconst {
                ty: crate::ir::Type::BOOL.to_varying(),
                bits: 1,
            };
            let inst =
                func.append_inst(entry, data, Some(crate::ir::Type::BOOL.to_varying()), span);
            func.blocks[entry].insts.pop();
            func.blocks[entry].insts.insert(0, inst);
            func.results[inst].expect("a constant has a result")
        }
    };
    let checked = |func: &Function, v: Value| func.value_type(v).varying && result.is_uniform(v);
    super::checks::instrument(func, |func, block, v, new| {
        if !checked(func, v) {
            return None;
        }
        // `reduce_equal` compares floats as IEEE numbers, under which a NaN differs
        // from itself and -0 equals +0; the claim is about the value, so compare bits.
        let ty = func.value_type(v);
        let bits = match ty.scalar {
            Scalar::F32 => Some(Scalar::I32),
            Scalar::F64 => Some(Scalar::I64),
            _ => None,
        };
        let v = match bits {
            Some(int) => {
                let to = ty.with_scalar(int);
                let data = InstData::Convert {
                    op: ConvOp::Bitcast,
                    arg: v,
                    to,
                };
                super::checks::emit(func, block, new, data, to)
            }
            None => v,
        };
        let data = InstData::Lane {
            op: LaneOp::ReduceEqual,
            args: smallvec::smallvec![v, mask],
        };
        Some(super::checks::emit(
            func,
            block,
            new,
            data,
            crate::ir::Type::BOOL,
        ))
    });
}

#[cfg(test)]
mod tests;
