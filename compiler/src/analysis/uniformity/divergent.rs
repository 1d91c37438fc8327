//! `--warn-divergent` (W0008): the source branches whose condition may differ between
//! the program instances of a gang, each explained in source terms.
//!
//! **Which branches.** The report starts from the source: every `if`, `for`, `while`,
//! `do` (and their coherent forms) and `switch` whose condition is typed varying. A condition
//! typed uniform is the user's statement that the gang agrees, and is not looked at.
//! The lowering turned each of these statements into `brif any(mask)`s whose masks
//! are the enclosing mask combined with the condition ([`super::mask_conditions`]); a
//! mask conjunct whose definition lies inside the condition's span is that statement's
//! condition, wherever a pass moved or copied it (every pass keeps spans); so is one
//! defined where a variable the condition names is set (`bool even = ...; if (even)`:
//! promotion made `even` that value), when it is found in a `brif` the statement
//! lowered to (known by the span the lowering gives it, [`branch_span`]). Conjuncts
//! defined elsewhere are the compiler's own bookkeeping: the `foreach` tail test, the
//! "skip when no lane is on" checks, a loop's live lanes. They name no source branch
//! and are never reported, which is why this is keyed by source statements and not by
//! the `brif`s themselves (a side table keyed by instruction would not survive the
//! inliner and the CFG passes the analysis runs after).
//!
//! **The explanation** follows [`FunctionUniformity::chain`] from the condition to
//! where its divergence starts and tells each step that has a source span in source
//! terms: the variable it initializes or is assigned to, the load it comes from, the
//! `foreach` index, `programIndex`, a varying parameter. Values without a span (the
//! block parameters promotion made of variables) are passed over; no IR name is shown.

use rustc_hash::{FxHashMap, FxHashSet};

use super::{
    mask_conditions, masked_branches, span_within, value_span, visit_statements,
    FunctionUniformity, ModuleUniformity, Source, Why,
};
use crate::diag::{codes, Diagnostic};
use crate::driver::FrontResult;
use crate::front::ast;
use crate::ir::{Function, InstData, Module, SpecialReg, Value, ValueDef};
use crate::source::Span;

/// Most steps one warning explains; the rest of a long chain is elided.
const STEP_LIMIT: usize = 6;

/// Longest source text quoted in a message before it is cut.
const QUOTE_LIMIT: usize = 40;

/// A source statement with a varying condition.
struct CondStmt<'a> {
    keyword: &'static str,
    cond: Span,
    /// The span the lowering gives the statement's own `brif`s ([`branch_span`]).
    branch: Span,
    /// The identifiers its condition mentions.
    names: FxHashSet<&'a str>,
    function: &'a ast::Function,
}

/// The span the lowering gives the `brif`s of a conditional statement: the current
/// statement's span when it lowers the test (for a `do`, the condition's; for a `for`
/// whose init declares variables, the last declarator's).
fn branch_span(stmt: &ast::Stmt, cond: Span) -> Span {
    match &stmt.kind {
        ast::StmtKind::DoWhile { .. } => cond,
        ast::StmtKind::For { init, .. } => match init.as_deref() {
            Some(ast::ForInit::Decl(d)) => d.declarators.last().map_or(stmt.span, |dd| dd.span),
            _ => stmt.span,
        },
        _ => stmt.span,
    }
}

/// The identifiers in a piece of source text.
fn identifiers(text: &str) -> FxHashSet<&str> {
    text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        .collect()
}

/// What the source says about spans that the IR keeps: the conditional statements, the
/// `foreach` statements and the expressions whose value a variable holds.
struct SourceFacts<'a> {
    /// Sorted by condition span; conditions never overlap.
    conds: Vec<CondStmt<'a>>,
    /// A `foreach` statement's span: its innermost dimension (the varying index).
    foreach: FxHashMap<Span, &'a ast::ForeachDim>,
    /// An initializer's or an assignment's span (and its right-hand side's): the
    /// variable it sets, as the source writes it.
    vars: FxHashMap<Span, Span>,
    /// A `return` statement's span: its function.
    returns: FxHashMap<Span, &'a ast::Function>,
    functions: FxHashMap<&'a str, Vec<&'a ast::Function>>,
    /// A statement's [`CondStmt::branch`] span: the statement.
    branches: FxHashMap<Span, usize>,
    sources: &'a crate::source::SourceMap,
}

impl<'a> SourceFacts<'a> {
    fn collect(front: &'a FrontResult) -> Self {
        let mut facts = SourceFacts {
            conds: Vec::new(),
            foreach: FxHashMap::default(),
            vars: FxHashMap::default(),
            returns: FxHashMap::default(),
            functions: FxHashMap::default(),
            branches: FxHashMap::default(),
            sources: &front.sources,
        };
        let checked = front.checked.as_ref();
        visit_statements(&front.unit, |function, stmt, parts| {
            if let Some(cond) = parts.cond {
                let varying =
                    checked.is_some_and(|c| c.types.is_varying(c.converted_type(cond.id)));
                if varying {
                    facts.conds.push(CondStmt {
                        keyword: parts.keyword,
                        cond: cond.span,
                        branch: branch_span(stmt, cond.span),
                        names: identifiers(front.sources.snippet(cond.span)),
                        function,
                    });
                }
            }
            facts.statement_vars(function, stmt);
        });
        for item in &front.unit.items {
            if let ast::Item::Function(f) = item {
                let name = front.interner.resolve(f.name.name);
                facts.functions.entry(name).or_default().push(f);
            }
        }
        facts.conds.sort_by_key(|c| (c.cond.file, c.cond.start));
        facts.branches = (facts.conds.iter().enumerate())
            .map(|(i, c)| (c.branch, i))
            .collect();
        facts
    }

    /// Records the variables `stmt` sets and, for a `foreach`, its varying index.
    fn statement_vars(&mut self, function: &'a ast::Function, stmt: &'a ast::Stmt) {
        match &stmt.kind {
            ast::StmtKind::Decl(d) => self.decl_vars(d),
            ast::StmtKind::For { init, step, .. } => {
                match init.as_deref() {
                    Some(ast::ForInit::Decl(d)) => self.decl_vars(d),
                    Some(ast::ForInit::Expr(e)) => self.assign_var(e),
                    None => {}
                }
                if let Some(e) = step {
                    self.assign_var(e);
                }
            }
            ast::StmtKind::Expr(e) => self.assign_var(e),
            ast::StmtKind::Foreach { dims, .. } => {
                if let Some(last) = dims.last() {
                    self.foreach.insert(stmt.span, last);
                }
            }
            ast::StmtKind::Return(_) => {
                self.returns.insert(stmt.span, function);
            }
            _ => {}
        }
    }

    fn decl_vars(&mut self, d: &ast::Decl) {
        for dd in &d.declarators {
            if let Some(ast::Initializer::Expr(e)) = dd.init.as_deref() {
                self.vars.insert(e.span, dd.name.span);
            }
        }
    }

    fn assign_var(&mut self, e: &ast::Expr) {
        use ast::UnaryOp::{PostDec, PostInc, PreDec, PreInc};
        match &e.kind {
            ast::ExprKind::Assign { lhs, rhs, .. } => {
                self.vars.insert(e.span, lhs.span);
                self.vars.insert(rhs.span, lhs.span);
            }
            ast::ExprKind::Unary {
                op: PreInc | PreDec | PostInc | PostDec,
                operand,
            } => {
                self.vars.insert(e.span, operand.span);
            }
            _ => {}
        }
    }

    /// The statement whose condition `c` (defined at `span`) is, found in the mask of
    /// a `brif` the statement `owner` lowered to, if any: the statement whose condition
    /// contains `span`, or `owner` when `span` sets a variable `owner`'s condition names
    /// (`bool even = ...; if (even)`: promotion made the condition that value). The
    /// compiler's own masks are neither.
    fn statement_of(&self, span: Span, owner: Option<usize>) -> Option<usize> {
        self.cond_containing(span).or_else(|| {
            let owner = owner?;
            // A `switch` compares its value with each label at its own span.
            if span == self.conds[owner].branch {
                return Some(owner);
            }
            let var = self.sources.snippet(*self.vars.get(&span)?);
            self.conds[owner].names.contains(var).then_some(owner)
        })
    }

    /// The statement whose condition contains `span`.
    fn cond_containing(&self, span: Span) -> Option<usize> {
        let i = self
            .conds
            .partition_point(|c| (c.cond.file, c.cond.start) <= (span.file, span.start));
        let i = i.checked_sub(1)?;
        span_within(span, self.conds[i].cond).then_some(i)
    }
}

/// The `--warn-divergent` report: one warning ([`codes::DIVERGENT_BRANCH`]) per source
/// statement with a varying condition that the analysis finds divergent, its primary
/// span on the condition and its labels on the chain back to where divergence starts.
pub fn divergent_branches(
    front: &FrontResult,
    module: &Module,
    result: &ModuleUniformity,
) -> Vec<Diagnostic> {
    let facts = SourceFacts::collect(front);
    // Per statement, the first divergent condition found: an inlined callee's
    // statements are also in its callers' copies.
    let mut found: Vec<Option<(&Function, &FunctionUniformity, Value)>> =
        vec![None; facts.conds.len()];
    for (fref, func) in module.functions.iter() {
        let res = &result.functions[fref];
        for (term, mask) in masked_branches(func) {
            let owner = facts.branches.get(&func.spans[term]).copied();
            for c in mask_conditions(func, mask) {
                if res.is_uniform(c) {
                    continue;
                }
                let stmt = value_span(func, c).and_then(|s| facts.statement_of(s, owner));
                if let Some(i) = stmt.filter(|&i| found[i].is_none()) {
                    found[i] = Some((func, res, c));
                }
            }
        }
    }
    facts
        .conds
        .iter()
        .zip(found)
        .filter_map(|(stmt, f)| f.map(|(func, res, c)| (stmt, func, res, c)))
        .map(|(stmt, func, res, c)| {
            let cx = Explain {
                front,
                module,
                facts: &facts,
                func,
                res,
            };
            cx.diagnostic(stmt, c)
        })
        .collect()
}

/// One step of an explanation: what a value is, in source terms, and where.
struct Step {
    span: Option<Span>,
    text: String,
}

/// What explaining one condition needs.
struct Explain<'a> {
    front: &'a FrontResult,
    module: &'a Module,
    facts: &'a SourceFacts<'a>,
    func: &'a Function,
    res: &'a FunctionUniformity,
}

impl Explain<'_> {
    fn diagnostic(&self, stmt: &CondStmt, cond: Value) -> Diagnostic {
        let name = self.front.interner.resolve(stmt.function.name.name);
        let condition = self.quote(stmt.cond);
        let mut steps = self.steps(stmt.cond, cond);
        if steps.len() > STEP_LIMIT {
            steps.drain(STEP_LIMIT - 1..steps.len() - 1);
        }
        let mut d = Diagnostic::warning(
            codes::DIVERGENT_BRANCH,
            format!("divergent `{}` in `{name}`", stmt.keyword),
        )
        .with_primary(
            stmt.cond,
            match stmt.keyword {
                "switch" => "this value may differ between the program instances of a gang",
                _ => "this condition may differ between the program instances of a gang",
            },
        );
        for step in &steps {
            if let Some(span) = step.span {
                d = d.with_secondary(span, step.text.clone());
            }
        }
        let because = match steps.len() {
            0 => "it is computed from varying values".to_string(),
            _ => join_and(steps.iter().map(|s| s.text.as_str())),
        };
        d.with_note(format!("{condition} is varying because {because}"))
    }

    /// The steps from the condition `cond` (in `cond_span`) to where its divergence
    /// starts, one per source expression.
    fn steps(&self, cond_span: Span, cond: Value) -> Vec<Step> {
        let chain = self.res.chain(cond);
        let mut steps = Vec::new();
        let mut last_span = Some(cond_span);
        // Each variable is explained once, where the chain first reaches it.
        let mut vars_seen = FxHashSet::default();
        for &v in &chain {
            let why = self.res.why(v);
            if let Some(Why::Source(source)) = why {
                steps.push(self.source_step(v, source));
                break;
            }
            let Some(span) = value_span(self.func, v) else {
                continue;
            };
            if Some(span) == last_span || span_within(span, cond_span) {
                continue;
            }
            last_span = Some(span);
            if let Some(dim) = self.facts.foreach.get(&span) {
                let var = self.front.sources.snippet(dim.var.span);
                steps.push(Step {
                    span: Some(dim.span),
                    text: format!(
                        "`{var}` is the `foreach` index: each program instance has its own"
                    ),
                });
                break;
            }
            let var = self.facts.vars.get(&span).copied();
            if var.is_some_and(|var| !vars_seen.insert(self.front.sources.snippet(var))) {
                continue;
            }
            if let Some(step) = self.data_step(v, span, why) {
                steps.push(step);
            }
        }
        steps
    }

    /// A step through a variable, a load or a merge; `None` for an intermediate
    /// expression that no variable holds.
    fn data_step(&self, v: Value, span: Span, why: Option<Why>) -> Option<Step> {
        let var = self.facts.vars.get(&span).map(|&s| self.quote(s));
        let expr = self.quote(span);
        let is_load = matches!(
            self.func.values[v].def,
            ValueDef::Result(inst) if matches!(self.func.insts[inst], InstData::Load { .. })
        );
        if let Some(f) = self.facts.returns.get(&span) {
            let name = self.front.interner.resolve(f.name.name);
            return Some(Step {
                span: Some(span),
                text: format!(
                    "`{name}` returns at different points in different program instances"
                ),
            });
        }
        if let Some(i) = self.facts.cond_containing(span) {
            let stmt = &self.facts.conds[i];
            return (stmt.cond == span).then(|| Step {
                span: Some(span),
                text: format!(
                    "{expr} decides which program instances the `{}` takes",
                    stmt.keyword
                ),
            });
        }
        let text = match (why, var) {
            (Some(Why::Mask(_)), Some(var)) => {
                format!("{var} is set by {expr} in some program instances and not in others")
            }
            (Some(Why::Mask(_)), None) => {
                format!("{expr} depends on which program instances took a branch")
            }
            (_, Some(var)) if is_load => format!("{var} is loaded from {expr}"),
            (_, None) if is_load => {
                format!("{expr} reads a different address in each program instance")
            }
            (_, Some(var)) if var != expr => format!("{var} is computed by {expr}"),
            _ => return None,
        };
        Some(Step {
            span: Some(span),
            text,
        })
    }

    /// The step where divergence starts.
    fn source_step(&self, v: Value, source: Source) -> Step {
        let span = value_span(self.func, v);
        let subject = span
            .map(|s| self.facts.vars.get(&s).copied().unwrap_or(s))
            .map_or_else(|| "a value".to_string(), |s| self.quote(s));
        let (span, text) = match source {
            Source::Special(reg) => {
                let name = special_name(reg);
                // A special register is shared by every use (value numbering keeps
                // one), so its span is trusted only when it spells the register.
                let span = span.filter(|&s| self.front.sources.snippet(s) == name);
                (span, format!("`{name}` is different in each program instance"))
            }
            Source::Param(i) => match self.param(i) {
                Some(p) => (
                    Some(p.span),
                    format!(
                        "{} is a varying parameter: each program instance may pass its own",
                        self.quote(p.name.map_or(p.span, |n| n.span))
                    ),
                ),
                None => (
                    None,
                    "a varying parameter may differ in each program instance".to_string(),
                ),
            },
            Source::VectorLoad => (
                span,
                format!("{subject} is loaded by each program instance from its own address"),
            ),
            Source::Atomic => (
                span,
                format!("{subject} is the result of an atomic operation"),
            ),
            Source::Call(f) => {
                let callee = self
                    .module
                    .functions
                    .get(f)
                    .map_or("a function", |c| c.name.as_str());
                (
                    span,
                    format!("{subject} is the varying result of `{callee}`"),
                )
            }
            Source::CrossLane(op) => (
                span,
                format!(
                    "{subject} reads values of other program instances (`{}`)",
                    op.name()
                ),
            ),
            Source::Irreducible => (
                None,
                "the function's control flow is irreducible, so every varying value in it is treated as divergent"
                    .to_string(),
            ),
        };
        Step { span, text }
    }

    /// The source parameter the IR function's parameter `index` stands for, when the
    /// function is the only one of its name and the parameters line up (an `sret`
    /// pointer may come first; the mask comes last).
    fn param(&self, index: u32) -> Option<&ast::Param> {
        let [f] = self
            .facts
            .functions
            .get(self.func.name.as_str())?
            .as_slice()
        else {
            return None;
        };
        let entry = self.func.entry_block()?;
        let count = (self.func.blocks[entry].params.len())
            .saturating_sub(self.func.sig.takes_mask as usize);
        let offset = count.checked_sub(f.params.len()).filter(|&o| o <= 1)?;
        f.params.get((index as usize).checked_sub(offset)?)
    }

    /// Source text in backquotes, on one line and cut when long.
    fn quote(&self, span: Span) -> String {
        let text = self.front.sources.snippet(span);
        let line = text.lines().next().unwrap_or("").trim_end();
        let cut = line.char_indices().nth(QUOTE_LIMIT).map(|(i, _)| i);
        match cut {
            Some(i) => format!("`{}...`", &line[..i]),
            None if line.len() < text.len() => format!("`{line}...`"),
            None => format!("`{line}`"),
        }
    }
}

/// How the source spells a special register.
fn special_name(reg: SpecialReg) -> &'static str {
    match reg {
        SpecialReg::LaneIndex => "programIndex",
        SpecialReg::ThreadIdxX => "threadIdx.x",
        SpecialReg::ThreadIdxY => "threadIdx.y",
        SpecialReg::ThreadIdxZ => "threadIdx.z",
        _ => reg.name(),
    }
}

/// `a`, `a and b`, `a, b, and c`.
fn join_and<'s>(items: impl Iterator<Item = &'s str>) -> String {
    let items: Vec<&str> = items.collect();
    match items.as_slice() {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}
