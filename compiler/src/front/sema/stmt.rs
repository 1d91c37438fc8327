//! Statements, local declarations and the control-flow context of a function body.
//!
//! [`FnCtx`] tracks what surrounds the statement being checked: the enclosing loops,
//! `switch`es and `foreach`-family statements (for `break`/`continue`/`return` rules),
//! how many varying conditions enclose it (W0004), and whether the execution mask may
//! be partial (E0507: `barrier()` must be reached by every program instance).

use super::expr::Site;
use super::resolve::TypeCtx;
use super::types::{Prim, TypeId, TypeKind, Types, Variability};
use super::{Checker, ConstValue, DeclRef, FuncId, LocalId, LocalKind, LocalVar};
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{self, CaseLabel, Expr, ForInit, Stmt, StmtKind};
use crate::source::Span;
use cranelift_entity::EntityRef;
use rustc_hash::FxHashMap;

/// The `foreach` family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ForeachKind {
    Foreach,
    Active,
    Unique,
}

impl ForeachKind {
    fn keyword(self) -> &'static str {
        match self {
            ForeachKind::Foreach => "foreach",
            ForeachKind::Active => "foreach_active",
            ForeachKind::Unique => "foreach_unique",
        }
    }
}

/// A construct that `break`, `continue` or `return` must know about.
#[derive(Clone, Copy, Debug)]
enum Frame {
    /// `for`/`while`/`do`; `divergent` once some instances may have left via a varying
    /// `break`/`continue`.
    Loop {
        divergent: bool,
    },
    Switch,
    Foreach(ForeachKind, Span),
    /// `unmasked { }`: every instance is on again inside.
    Unmasked,
}

/// What the interprocedural barrier rule needs: which functions call `barrier()`
/// directly, every call between functions, and the calls made with a partial mask.
#[derive(Default)]
pub(super) struct BarrierCalls {
    direct: Vec<FuncId>,
    edges: Vec<(FuncId, FuncId)>,
    partial: Vec<(FuncId, Span)>,
    /// Calls through function pointers: the caller, the signature, where, and whether
    /// the callee may run with a partial mask. They may reach every function of the
    /// signature whose address the program takes (known once every body is checked).
    through_ptr: Vec<(FuncId, super::SigId, Span, bool)>,
}

/// Per-function checking state.
pub(super) struct FnCtx<'a> {
    pub func: FuncId,
    pub ret: TypeId,
    pub is_entry: bool,
    frames: Vec<Frame>,
    /// Enclosing varying conditions (if/loop/switch/?:/&&/|| with a varying condition).
    varying_cond: u32,
    /// Enclosing constructs that run with a partial mask (varying conditions, plus
    /// `foreach_active` and `foreach_unique`).
    partial_mask: u32,
    /// Some instances may have returned (a `return` under varying control).
    returned_divergent: bool,
    /// The body, for the on-demand syntax-error scan.
    body: Option<&'a ast::Block>,
    /// Does the body contain a node the parser could not read? (None: not scanned yet.)
    syntax_error: Option<bool>,
    /// The function is the stdlib's (no style warnings).
    from_stdlib: bool,
    /// The labels of the function body's own statements (the only places a label may
    /// be), by name: where each is defined.
    labels: rustc_hash::FxHashMap<crate::front::intern::Symbol, Span>,
    /// Where every label of the body's own statements is, repeated ones included.
    top_labels: rustc_hash::FxHashSet<(u32, u32)>,
}

impl<'a> Checker<'a> {
    // ------------------------------------------------------------ control context

    pub(super) fn enter_varying_cond(&mut self) {
        if let Some(f) = &mut self.fcx {
            f.varying_cond += 1;
            f.partial_mask += 1;
        }
    }

    pub(super) fn leave_varying_cond(&mut self) {
        if let Some(f) = &mut self.fcx {
            f.varying_cond = f.varying_cond.saturating_sub(1);
            f.partial_mask = f.partial_mask.saturating_sub(1);
        }
    }

    /// The number of varying conditions around the current point, if in a function.
    pub(super) fn varying_cond_depth(&self) -> Option<u32> {
        self.fcx.as_ref().map(|f| f.varying_cond)
    }

    /// Records a call to `callee` for the interprocedural barrier rule.
    pub(super) fn record_call(&mut self, callee: FuncId, span: Span) {
        let Some(caller) = self.fcx.as_ref().map(|f| f.func) else {
            return;
        };
        self.barrier_calls.edges.push((caller, callee));
        if self.mask_partial() {
            self.barrier_calls.partial.push((callee, span));
        }
    }

    /// A call through a function pointer of signature `sig`; through a varying pointer
    /// each function runs with only the instances that hold it.
    pub(super) fn record_ptr_call(&mut self, sig: super::SigId, span: Span, varying: bool) {
        let Some(caller) = self.fcx.as_ref().map(|f| f.func) else {
            return;
        };
        let partial = varying || self.mask_partial();
        self.barrier_calls
            .through_ptr
            .push((caller, sig, span, partial));
    }

    /// E0507 for calls, under varying control flow, of functions that (directly or
    /// through other calls) call `barrier()`.
    pub(super) fn check_barrier_callers(&mut self) {
        let mut by_sig: FxHashMap<super::SigId, Vec<FuncId>> = FxHashMap::default();
        for &(f, sig) in self.out.fn_ptr_targets() {
            by_sig.entry(sig).or_default().push(f);
        }
        for (caller, sig, span, partial) in std::mem::take(&mut self.barrier_calls.through_ptr) {
            for &callee in by_sig.get(&sig).map_or(&[][..], |v| v.as_slice()) {
                self.barrier_calls.edges.push((caller, callee));
                if partial {
                    self.barrier_calls.partial.push((callee, span));
                }
            }
        }
        let n = self.out.funcs.len();
        let mut calls_barrier = vec![false; n];
        let mut callers: Vec<Vec<FuncId>> = vec![Vec::new(); n];
        for &(caller, callee) in &self.barrier_calls.edges {
            callers[callee.index()].push(caller);
        }
        let mut work = std::mem::take(&mut self.barrier_calls.direct);
        while let Some(f) = work.pop() {
            if std::mem::replace(&mut calls_barrier[f.index()], true) {
                continue;
            }
            work.extend(callers[f.index()].iter().copied());
        }
        for (callee, span) in std::mem::take(&mut self.barrier_calls.partial) {
            if !calls_barrier[callee.index()] {
                continue;
            }
            let f = &self.out.funcs[callee];
            let (name, def) = (self.name(f.name), f.span);
            self.emit(
                Diagnostic::error(codes::BARRIER_IN_VARYING_CONTROL, format!("call to `{name}`, which calls `barrier()`, under varying control flow"))
                    .with_primary(span, "not every program instance may make this call")
                    .with_secondary(def, format!("`{name}` reaches a `barrier()`"))
                    .with_help("call it from uniform control flow, outside varying `if`s, loops and `foreach` bodies"),
            );
        }
    }

    /// May some program instances be inactive here?
    fn mask_partial(&self) -> bool {
        let Some(f) = &self.fcx else { return false };
        if f.partial_mask > 0 || f.returned_divergent {
            return true;
        }
        for fr in f.frames.iter().rev() {
            match fr {
                Frame::Unmasked => return false,
                Frame::Loop { divergent: true } => return true,
                _ => {}
            }
        }
        false
    }

    /// E0507: `barrier()` must be reached by all program instances together.
    pub(super) fn check_barrier_context(&mut self, span: Span) {
        if let Some(f) = self.fcx.as_ref().map(|f| f.func) {
            self.barrier_calls.direct.push(f);
        }
        if self.mask_partial() {
            self.emit(
                Diagnostic::error(codes::BARRIER_IN_VARYING_CONTROL, "`barrier()` under varying control flow")
                    .with_primary(span, "not every program instance may reach this barrier")
                    .with_note("a barrier waits for every instance of the block; one inside a varying `if`, loop or `switch` (or after a varying `return`/`break`) would wait forever")
                    .with_help("move the barrier out of the varying control flow, or make the condition uniform"),
            );
        }
    }

    // ------------------------------------------------------------ functions

    /// Checks the body of function `fid`. `scan` is the same body when it lives as
    /// long as the checker, to look for syntax errors only if needed; a template
    /// instance's copy is scanned at once.
    pub(super) fn check_function_body(
        &mut self,
        fid: FuncId,
        f: &ast::Function,
        body: &ast::Block,
        scan: Option<&'a ast::Block>,
    ) {
        let info = &self.out.funcs[fid];
        let (ret, is_entry, unmasked) = (info.ret, info.flags.is_entry(), info.flags.unmasked);
        let info_from_stdlib = info.from_stdlib;
        self.fcx = Some(FnCtx {
            func: fid,
            ret,
            is_entry,
            frames: if unmasked {
                vec![Frame::Unmasked]
            } else {
                Vec::new()
            },
            varying_cond: 0,
            partial_mask: 0,
            returned_divergent: false,
            body: scan,
            syntax_error: match scan {
                Some(_) => None,
                None => Some(super::flow::block_has_error(body)),
            },
            from_stdlib: info_from_stdlib,
            labels: Default::default(),
            top_labels: Default::default(),
        });
        self.collect_labels(&body.stmts);
        self.scopes.clear();
        self.scopes.push();
        let first = self.out.locals.len() as u32;
        let params = self.out.funcs[fid].params.clone();
        for (i, (p, ap)) in params.iter().zip(&f.params).enumerate() {
            let Some(name) = ap.name else { continue };
            let l = self.new_local(name, p.ty, LocalKind::Param(i as u32), None);
            self.out.locals[l].by_ref = p.by_ref;
            self.out.funcs[fid].params[i].local = Some(l);
        }
        self.check_stmts(&body.stmts);
        self.warn_unused_locals(first);
        self.scopes.pop();
        let end = self.out.locals.len() as u32;
        self.out.funcs[fid].locals = first..end;
        if !self.out.types.is_void(ret)
            && !self.out.types.is_error(ret)
            && self.block_falls_through(&body.stmts)
        {
            let close = Span::new(
                body.span.file,
                body.span.end.saturating_sub(1),
                body.span.end,
            );
            // C and ISPC accept this (the value is undefined there); spmdc defines it as
            // zero so that every target agrees, and warns as C compilers do.
            self.out.funcs[fid].falls_off_end = true;
            self.emit(
                Diagnostic::warning(
                    codes::MISSING_RETURN_VALUE,
                    format!(
                        "function `{}` can reach its end without returning a value",
                        self.name(f.name.name)
                    ),
                )
                .with_primary(close, "the end of the function is reachable")
                .with_secondary(
                    f.ret.span,
                    format!("declared to return `{}`", self.ty_str(ret)),
                )
                .with_note("reaching it returns zero")
                .with_help("add a `return` with a value on every path"),
            );
        }
        self.fcx = None;
    }

    /// Creates a local and binds it in the innermost scope (E0201 if taken).
    fn new_local(
        &mut self,
        name: ast::Ident,
        ty: TypeId,
        kind: LocalKind,
        const_value: Option<ConstValue>,
    ) -> LocalId {
        let func = self.fcx.as_ref().map_or(FuncId::from_u32(0), |f| f.func);
        let l = self.out.locals.push(LocalVar {
            name: name.name,
            ty,
            by_ref: false,
            span: name.span,
            kind,
            func,
            const_value,
        });
        let depth = self.fcx.as_ref().map_or(0, |f| f.varying_cond);
        if self.local_depth.len() <= l.index() {
            self.local_depth.resize(l.index() + 1, 0);
        }
        self.local_depth[l.index()] = depth;
        if self.local_used.len() <= l.index() {
            self.local_used.resize(l.index() + 1, false);
        }
        if let Err(prev) = self.scopes.declare(name.name, l) {
            // Not bound, so never read: no W0002 on top of the E0201.
            self.local_used[l.index()] = true;
            let prev_span = self.out.locals[prev].span;
            self.redefinition(name.name, name.span, Some(prev_span));
        }
        l
    }

    // ------------------------------------------------------------ statements

    fn check_block(&mut self, b: &ast::Block) {
        self.scopes.push();
        self.check_stmts(&b.stmts);
        self.scopes.pop();
    }

    /// Checks a statement list, with W0007 for the first statement after a `return`,
    /// `break` or `continue` (except the customary `break` right after a `return`).
    fn check_stmts(&mut self, stmts: &[Stmt]) {
        let mut jump: Option<&Stmt> = None;
        let mut reported = false;
        for s in stmts {
            if matches!(s.kind, StmtKind::Labeled { .. }) {
                // A `goto` may jump here.
                jump = None;
                reported = false;
            }
            if let Some(j) = jump {
                let customary =
                    matches!((&j.kind, &s.kind), (StmtKind::Return(_), StmtKind::Break));
                if !reported && !customary && !matches!(s.kind, StmtKind::Empty | StmtKind::Error) {
                    reported = true;
                    self.emit(
                        Diagnostic::warning(codes::UNREACHABLE_CODE, "unreachable statement")
                            .with_primary(s.span, "this statement can never run")
                            .with_secondary(j.span, "control never continues past this")
                            .with_help("remove the statement, or move it before the jump"),
                    );
                }
            }
            self.check_stmt(s);
            if jump.is_none()
                && matches!(
                    s.kind,
                    StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue | StmtKind::Goto(_)
                )
            {
                jump = Some(s);
            }
        }
    }

    /// W0002 for the function's locals that were never read.
    fn warn_unused_locals(&mut self, first: u32) {
        // After a syntax error or the nesting limit, reads may have gone unseen.
        if self.fcx.as_ref().is_some_and(|f| f.from_stdlib)
            || self.depth_reported
            || self.syntax_error_in_body()
        {
            return;
        }
        for i in first as usize..self.out.locals.len() {
            if self.local_used.get(i).copied().unwrap_or(true) {
                continue;
            }
            let l = &self.out.locals[LocalId::new(i)];
            if !matches!(
                l.kind,
                LocalKind::Var | LocalKind::Static | LocalKind::Shared
            ) || self.out.types.is_error(l.ty)
            {
                continue;
            }
            let name = self.name(l.name);
            if name.starts_with('_') {
                continue;
            }
            let span = l.span;
            self.emit(
                Diagnostic::warning(codes::UNUSED_VARIABLE, format!("unused variable `{name}`"))
                    .with_primary(span, "declared here but never read")
                    .with_help(format!(
                        "remove it, or name it `_{name}` if it is intentionally unused"
                    )),
            );
        }
    }

    /// Did the parser give up on part of this function's body? Then names it declared
    /// may be missing: don't report them as undeclared or unused. Computed on demand.
    pub(super) fn syntax_error_in_body(&mut self) -> bool {
        let Some(f) = &self.fcx else { return false };
        if let Some(known) = f.syntax_error {
            return known;
        }
        let found = f.body.is_some_and(super::flow::block_has_error);
        if let Some(f) = &mut self.fcx {
            f.syntax_error = Some(found);
        }
        found
    }

    /// Checks a statement that forms its own scope when it is not a block (`if (c) int x;`).
    fn check_scoped(&mut self, s: &Stmt) {
        self.scopes.push();
        self.check_stmt(s);
        self.scopes.pop();
    }

    fn check_stmt(&mut self, s: &Stmt) {
        if !self.enter(s.span) {
            return;
        }
        match &s.kind {
            StmtKind::Block(b) => self.check_block(b),
            StmtKind::Decl(d) => self.check_local_decl(d),
            StmtKind::Typedef(t) => self.declare_local_typedef(t),
            StmtKind::Expr(e) => {
                self.check_expr(e);
            }
            StmtKind::Empty | StmtKind::Error => {}
            StmtKind::If {
                cond,
                then,
                else_,
                coherent,
            } => self.check_if(cond, then, else_.as_deref(), *coherent),
            StmtKind::For {
                init,
                cond,
                step,
                body,
                coherent,
            } => self.check_for(
                s,
                init.as_deref(),
                cond.as_deref(),
                step.as_deref(),
                body,
                *coherent,
            ),
            StmtKind::While {
                cond,
                body,
                coherent,
            } => self.check_loop(s, Some(cond), None, body, *coherent, false),
            StmtKind::DoWhile {
                body,
                cond,
                coherent,
            } => self.check_loop(s, Some(cond), None, body, *coherent, true),
            StmtKind::Break => self.check_break(s.span),
            StmtKind::Continue => self.check_continue(s.span),
            StmtKind::Goto(label) => self.check_goto(s.span, *label),
            StmtKind::Labeled { label, body } => {
                self.check_label_placement(*label);
                self.check_stmt(body);
            }
            StmtKind::Return(v) => self.check_return(s.span, v.as_ref()),
            StmtKind::Switch { cond, arms } => self.check_switch(cond, arms),
            StmtKind::Foreach { dims, tiled, body } => self.check_foreach(s, dims, *tiled, body),
            StmtKind::ForeachActive { id, var, body } => {
                self.check_foreach_active(s, *id, *var, body)
            }
            StmtKind::ForeachUnique {
                id,
                var,
                expr,
                body,
            } => self.check_foreach_unique(s, *id, *var, expr, body),
            StmtKind::Unmasked(b) => self.check_unmasked(b),
            StmtKind::Launch(l) => self.check_launch(l),
            StmtKind::Sync => {}
            StmtKind::Delete { ptr, .. } => self.check_delete(ptr, s.span),
        }
        self.leave();
    }

    /// W0003: `cif`/`cfor`/... on a condition that is always uniform.
    fn coherent_hint(&mut self, cond: &Expr, cond_ty: TypeId, coherent: bool) {
        if coherent && !self.out.types.is_error(cond_ty) && !self.out.types.is_varying(cond_ty) {
            self.emit(
                Diagnostic::warning(
                    codes::UNNECESSARY_COHERENT_HINT,
                    "coherent control flow hint on a uniform condition",
                )
                .with_primary(
                    cond.span,
                    "this condition is uniform: the gang always agrees",
                )
                .with_help("use the plain form (`if`, `for`, `while`, `do`)"),
            );
        }
    }

    fn check_if(&mut self, cond: &Expr, then: &Stmt, else_: Option<&Stmt>, coherent: bool) {
        let ct = self.check_cond(cond);
        self.coherent_hint(cond, ct, coherent);
        let varying = self.out.types.is_varying(ct);
        if varying {
            self.enter_varying_cond();
        }
        self.check_scoped(then);
        if let Some(e) = else_ {
            self.check_scoped(e);
        }
        if varying {
            self.leave_varying_cond();
        }
    }

    fn check_for(
        &mut self,
        s: &Stmt,
        init: Option<&ForInit>,
        cond: Option<&Expr>,
        step: Option<&Expr>,
        body: &Stmt,
        coherent: bool,
    ) {
        self.scopes.push();
        match init {
            Some(ForInit::Decl(d)) => self.check_local_decl(d),
            Some(ForInit::Expr(e)) => {
                self.check_expr(e);
            }
            None => {}
        }
        self.check_loop(s, cond, step, body, coherent, false);
        self.scopes.pop();
    }

    /// A loop with condition (checked first, even for `do`, since it decides whether the
    /// body runs under varying control) and optional step.
    fn check_loop(
        &mut self,
        _s: &Stmt,
        cond: Option<&Expr>,
        step: Option<&Expr>,
        body: &Stmt,
        coherent: bool,
        _is_do: bool,
    ) {
        let varying = match cond {
            Some(c) => {
                let ct = self.check_cond(c);
                self.coherent_hint(c, ct, coherent);
                self.out.types.is_varying(ct)
            }
            None => false,
        };
        if varying {
            self.enter_varying_cond();
        }
        self.push_frame(Frame::Loop { divergent: false });
        self.check_scoped(body);
        if let Some(st) = step {
            self.check_expr(st);
        }
        self.pop_frame();
        if varying {
            self.leave_varying_cond();
        }
    }

    fn push_frame(&mut self, f: Frame) {
        if let Some(c) = &mut self.fcx {
            c.frames.push(f);
        }
    }

    fn pop_frame(&mut self) {
        if let Some(c) = &mut self.fcx {
            c.frames.pop();
        }
    }

    /// After a `break`/`continue` under varying control, the rest of the loop runs with
    /// some instances off.
    fn mark_loop_divergent(&mut self) {
        let partial = self.fcx.as_ref().is_some_and(|f| f.partial_mask > 0);
        let Some(f) = &mut self.fcx else { return };
        if !partial {
            return;
        }
        for fr in f.frames.iter_mut().rev() {
            if let Frame::Loop { divergent } = fr {
                *divergent = true;
                return;
            }
        }
    }

    // ------------------------------------------------------------ goto

    /// Records the labels of the function body's statements (`a: b: s` names two);
    /// a repeated one is E0201.
    fn collect_labels(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            let mut s = s;
            while let StmtKind::Labeled { label, body } = &s.kind {
                let Some(f) = self.fcx.as_mut() else { return };
                f.top_labels.insert((label.span.start, label.span.end));
                let prev = *f.labels.entry(label.name).or_insert(label.span);
                if prev != label.span {
                    self.redefinition(label.name, label.span, Some(prev));
                }
                s = body;
            }
        }
    }

    /// E0511: a label that is not one of the function body's own statements. A `goto`
    /// there could enter a loop, a `switch` or a varying `if` from outside, bypassing the
    /// mask set-up the construct's entry does.
    fn check_label_placement(&mut self, label: ast::Ident) {
        let at = (label.span.start, label.span.end);
        let top = self
            .fcx
            .as_ref()
            .is_some_and(|f| f.top_labels.contains(&at));
        if !top {
            self.emit(
                Diagnostic::error(
                    codes::LABEL_NOT_AT_TOP,
                    format!(
                        "label `{}` is inside another statement",
                        self.name(label.name)
                    ),
                )
                .with_primary(
                    label.span,
                    "labels must be statements of the function body itself",
                )
                .with_note("a `goto` to it would enter a block, loop or `switch` from outside")
                .with_help("move the label out to the function body's own statement list"),
            );
        }
    }

    /// `goto`: every instance must be running here (ISPC's rule), so it is a plain jump;
    /// E0510 otherwise, E0512 for a label the function does not define.
    fn check_goto(&mut self, span: Span, label: ast::Ident) {
        let Some(f) = self.fcx.as_ref() else { return };
        let known = f.labels.contains_key(&label.name);
        let varying = f.partial_mask > 0
            || f.frames.iter().any(|fr| {
                matches!(
                    fr,
                    Frame::Foreach(..) | Frame::Unmasked | Frame::Loop { divergent: true }
                )
            });
        if !known {
            let mut d = Diagnostic::error(
                codes::UNDEFINED_LABEL,
                format!("no label `{}` in this function", self.name(label.name)),
            )
            .with_primary(label.span, "undefined label");
            let names: Vec<&str> = f.labels.keys().map(|&n| self.interner.resolve(n)).collect();
            if let Some(best) =
                crate::diag::suggest::closest(self.name(label.name), names.iter().copied())
            {
                d = d.with_help(format!("did you mean `{best}`?"));
            }
            self.emit(d);
        }
        if varying {
            self.emit(
                Diagnostic::error(codes::GOTO_IN_VARYING_CONTROL, "`goto` under varying control flow")
                    .with_primary(span, "some program instances may not be running here")
                    .with_note("a `goto` must be taken by every instance together: it may not be inside a varying `if`, loop or `switch`, a `foreach`, `unmasked`, or a loop that instances may already have left by a varying `break` or `continue`")
                    .with_help("make the condition uniform (e.g. `if (all(c)) goto L;`), or use structured control flow"),
            );
        }
    }

    fn check_break(&mut self, span: Span) {
        let target = self.fcx.as_ref().and_then(|f| {
            f.frames
                .iter()
                .rev()
                .find(|fr| !matches!(fr, Frame::Unmasked))
                .copied()
        });
        match target {
            Some(Frame::Loop { .. }) => self.mark_loop_divergent(),
            Some(Frame::Switch) => {}
            Some(Frame::Foreach(kind, at)) => self.emit(
                Diagnostic::error(codes::BREAK_IN_FOREACH, format!("`break` inside `{}`", kind.keyword()))
                    .with_primary(span, "not allowed here")
                    .with_secondary(at, format!("inside this `{}`", kind.keyword()))
                    .with_note("every program instance must finish its points of the domain")
                    .with_help("use `continue` to skip the rest of this iteration, or an ordinary `for` loop if you need to stop early"),
            ),
            _ => self.emit(
                Diagnostic::error(codes::BREAK_OUTSIDE_LOOP, "`break` outside a loop or `switch`")
                    .with_primary(span, "nothing to break out of"),
            ),
        }
    }

    fn check_continue(&mut self, span: Span) {
        let target = self.fcx.as_ref().and_then(|f| {
            f.frames
                .iter()
                .rev()
                .find(|fr| matches!(fr, Frame::Loop { .. } | Frame::Foreach(..)))
                .copied()
        });
        match target {
            Some(Frame::Loop { .. }) => self.mark_loop_divergent(),
            Some(_) => {}
            None => self.emit(
                Diagnostic::error(codes::CONTINUE_OUTSIDE_LOOP, "`continue` outside a loop")
                    .with_primary(span, "no loop to continue"),
            ),
        }
    }

    fn check_return(&mut self, span: Span, value: Option<&Expr>) {
        let Some(fcx) = &self.fcx else { return };
        let (ret, func) = (fcx.ret, fcx.func);
        let in_foreach = fcx.frames.iter().rev().find_map(|f| match f {
            Frame::Foreach(k, at) => Some((*k, *at)),
            _ => None,
        });
        if let Some((kind, at)) = in_foreach {
            self.emit(
                Diagnostic::error(
                    codes::RETURN_IN_FOREACH,
                    format!("`return` inside `{}`", kind.keyword()),
                )
                .with_primary(span, "not allowed here")
                .with_secondary(at, format!("inside this `{}`", kind.keyword()))
                .with_help("record the result in a variable and return after the loop"),
            );
        }
        let ret_ref = self.out.funcs[func].ret_ref;
        match value {
            Some(e) if ret_ref => {
                self.check_expr(e);
                if self.bind_reference(e, ret, Site::Return, false) && self.mask_partial() {
                    self.divergent_reference_return(e);
                }
            }
            Some(e) => {
                let t = self.check_expr(e);
                let t = self.rvalue(e, t);
                if self.out.types.is_void(ret)
                    && !self.out.types.is_void(t)
                    && !self.out.types.is_error(t)
                {
                    self.emit(
                        Diagnostic::error(
                            codes::RETURN_MISMATCH,
                            format!(
                                "`{}` returns `void`, but a value is returned",
                                self.name(self.out.funcs[func].name)
                            ),
                        )
                        .with_primary(e.span, format!("this has type `{}`", self.ty_str(t)))
                        .with_help("remove the value, or declare a return type"),
                    );
                } else {
                    self.coerce(e, t, ret, Site::Return);
                }
            }
            None => {
                if !self.out.types.is_void(ret) && !self.out.types.is_error(ret) {
                    self.emit(
                        Diagnostic::error(
                            codes::RETURN_MISMATCH,
                            format!(
                                "`return` without a value in a function returning `{}`",
                                self.ty_str(ret)
                            ),
                        )
                        .with_primary(span, "a value is required"),
                    );
                }
            }
        }
        if self.mask_partial() {
            if let Some(f) = &mut self.fcx {
                f.returned_divergent = true;
            }
        }
    }

    /// E0411: a function returns one reference for the whole gang, so every program
    /// instance must take the same `return`.
    fn divergent_reference_return(&mut self, e: &Expr) {
        self.emit(
            Diagnostic::error(codes::REFERENCE_VARIABILITY, "a reference returned under varying control flow")
                .with_primary(e.span, "only some program instances may return this reference")
                .with_note("a function returns one reference for the whole gang; instances that return different objects cannot share it")
                .with_help("decide which object to return with a uniform condition, or return a pointer (`varying int * uniform` or `uniform int * varying`)"),
        );
    }

    fn check_switch(&mut self, cond: &Expr, arms: &[ast::SwitchArm]) {
        let ct = self.check_expr(cond);
        let ct = self.rvalue(cond, ct);
        let ct = self.float_as_int(cond, ct).unwrap_or(ct);
        let ok = self.out.types.is_error(ct) || self.out.types.is_integral(ct);
        if !ok {
            let cs = self.ty_str(ct);
            self.emit(
                Diagnostic::error(codes::NON_INTEGER, "`switch` value is not an integer")
                    .with_primary(cond.span, format!("this has type `{cs}`"))
                    .with_help("switch on an integer or enum value"),
            );
        }
        let label_ty = if ok {
            self.out.types.with_var(ct, Variability::Uniform)
        } else {
            Types::ERROR
        };
        let varying = self.out.types.is_varying(ct);
        if varying {
            self.enter_varying_cond();
        }
        self.scopes.push();
        self.push_frame(Frame::Switch);
        let mut seen: Vec<(i128, Span)> = Vec::new();
        let mut default: Option<Span> = None;
        for arm in arms {
            for label in &arm.labels {
                match label {
                    CaseLabel::Case(e) => self.check_case(e, label_ty, &mut seen),
                    CaseLabel::Default(sp) => {
                        if let Some(prev) = default {
                            self.emit(
                                Diagnostic::error(
                                    codes::DUPLICATE_DEFAULT,
                                    "two `default` labels in one `switch`",
                                )
                                .with_primary(*sp, "second `default`")
                                .with_secondary(prev, "first `default` here"),
                            );
                        } else {
                            default = Some(*sp);
                        }
                    }
                }
            }
            self.check_stmts(&arm.body);
        }
        self.pop_frame();
        self.scopes.pop();
        if varying {
            self.leave_varying_cond();
        }
    }

    /// A `case` label: an integer constant (E0315), distinct from the others (E0316).
    fn check_case(&mut self, e: &Expr, label_ty: TypeId, seen: &mut Vec<(i128, Span)>) {
        let t = self.check_expr(e);
        if self.out.types.is_error(t) {
            return;
        }
        if !self.out.types.is_integral(t) {
            self.emit(
                Diagnostic::error(codes::NON_INTEGER, "`case` label is not an integer")
                    .with_primary(e.span, format!("this has type `{}`", self.ty_str(t))),
            );
            return;
        }
        let Some(v) = self.eval_const(e).and_then(|v| v.as_int()) else {
            self.emit(
                Diagnostic::error(codes::NOT_CONSTANT, "`case` label is not a constant")
                    .with_primary(e.span, "not known at compile time")
                    .with_help("use a literal, an enumerator or a `const uniform` variable; use `if` for run-time comparisons"),
            );
            return;
        };
        let v = match self.out.types.arith_prim(label_ty) {
            Some(p) => super::consteval::wrap(v, p),
            None => v,
        };
        if !self.out.types.is_error(label_ty) && t != label_ty {
            self.set_conv(e, label_ty);
        }
        self.set_const(e, ConstValue::Int(v));
        if let Some((_, prev)) = seen.iter().find(|(pv, _)| *pv == v) {
            let prev = *prev;
            self.emit(
                Diagnostic::error(codes::DUPLICATE_CASE, format!("duplicate `case` value {v}"))
                    .with_primary(e.span, "repeated here")
                    .with_secondary(prev, "first used here"),
            );
        } else {
            seen.push((v, e.span));
        }
    }

    fn in_foreach(&self) -> Option<Span> {
        self.fcx
            .as_ref()?
            .frames
            .iter()
            .rev()
            .find_map(|f| match f {
                Frame::Foreach(ForeachKind::Foreach, at) => Some(*at),
                _ => None,
            })
    }

    fn check_foreach(&mut self, s: &Stmt, dims: &[ast::ForeachDim], tiled: bool, body: &Stmt) {
        let kw = if tiled { "foreach_tiled" } else { "foreach" };
        if let Some(outer) = self.in_foreach() {
            self.emit(
                Diagnostic::error(codes::NESTED_FOREACH, format!("`{kw}` nested inside another `foreach`"))
                    .with_primary(s.span, "nested here")
                    .with_secondary(outer, "outer `foreach`")
                    .with_help("use one multidimensional `foreach (i = ..., j = ...)`, or an ordinary `for` loop inside"),
            );
        }
        self.scopes.push();
        let int = self.out.types.prim(Prim::Int32, Variability::Varying);
        let idx_ty = self.types().with_const(int, true);
        let mut vars = Vec::with_capacity(dims.len());
        for d in dims {
            self.check_foreach_bound(&d.start, kw);
            self.check_foreach_bound(&d.end, kw);
            vars.push(d);
        }
        for (i, d) in vars.into_iter().enumerate() {
            let l = self.new_local(d.var, idx_ty, LocalKind::ForeachIndex(i as u32), None);
            self.record_decl(d.id, DeclRef::Local(l));
        }
        // The last pass of a `foreach` may run with some instances off.
        if let Some(f) = &mut self.fcx {
            f.partial_mask += 1;
        }
        self.push_frame(Frame::Foreach(ForeachKind::Foreach, s.span));
        self.check_scoped(body);
        self.pop_frame();
        if let Some(f) = &mut self.fcx {
            f.partial_mask = f.partial_mask.saturating_sub(1);
        }
        self.scopes.pop();
    }

    /// A `foreach` bound: a uniform integer (E0408); a floating-point one converts to
    /// `int` as ISPC converts it.
    fn check_foreach_bound(&mut self, e: &Expr, kw: &'static str) {
        let t = self.check_expr(e);
        if self.out.types.is_error(t) {
            return;
        }
        let t = self.float_as_int(e, t).unwrap_or(t);
        if !self.out.types.is_integral(t) {
            self.emit(
                Diagnostic::error(
                    codes::NON_INTEGER,
                    format!("`{kw}` bound is not an integer"),
                )
                .with_primary(e.span, format!("this has type `{}`", self.ty_str(t))),
            );
            return;
        }
        let want = self.out.types.prim(Prim::Int32, Variability::Uniform);
        let what = if kw == "foreach" {
            "`foreach` bounds"
        } else {
            "`foreach_tiled` bounds"
        };
        self.coerce(e, t, want, Site::Uniform(what));
    }

    fn check_foreach_active(&mut self, s: &Stmt, id: ast::DeclId, var: ast::Ident, body: &Stmt) {
        self.scopes.push();
        let t = self.out.types.prim(Prim::Int32, Variability::Uniform);
        let t = self.types().with_const(t, true);
        let l = self.new_local(var, t, LocalKind::ForeachActive, None);
        self.record_decl(id, DeclRef::Local(l));
        self.serial_body(s, ForeachKind::Active, body);
        self.scopes.pop();
    }

    fn check_foreach_unique(
        &mut self,
        s: &Stmt,
        id: ast::DeclId,
        var: ast::Ident,
        expr: &Expr,
        body: &Stmt,
    ) {
        let t = self.check_expr(expr);
        let t = self.rvalue(expr, t);
        let ok = matches!(
            self.out.types.kind(t),
            TypeKind::Error | TypeKind::Prim(_) | TypeKind::Enum(_) | TypeKind::Pointer(_)
        );
        if !ok {
            self.emit(
                Diagnostic::error(
                    codes::MISMATCHED_TYPES,
                    "`foreach_unique` needs a value of a basic, enum or pointer type",
                )
                .with_primary(expr.span, format!("this has type `{}`", self.ty_str(t))),
            );
        }
        self.scopes.push();
        let vt = self.types().with_var(t, Variability::Uniform);
        let vt = self.types().with_const(vt, true);
        let l = self.new_local(var, vt, LocalKind::ForeachUnique, None);
        self.record_decl(id, DeclRef::Local(l));
        self.serial_body(s, ForeachKind::Unique, body);
        self.scopes.pop();
    }

    /// The body of `foreach_active`/`foreach_unique`: runs with a partial mask.
    /// A `foreach_active`/`foreach_unique` body runs once per active instance (or
    /// value), one at a time. The mask is partial (so `barrier()` stays illegal), but a
    /// uniform store there is made once per iteration by design, whatever varying
    /// conditions surround the loop: W0004 counts only conditions inside the body.
    fn serial_body(&mut self, s: &Stmt, kind: ForeachKind, body: &Stmt) {
        let outer_cond = self.fcx.as_mut().map(|f| {
            f.partial_mask += 1;
            std::mem::take(&mut f.varying_cond)
        });
        self.push_frame(Frame::Foreach(kind, s.span));
        self.check_scoped(body);
        self.pop_frame();
        if let (Some(f), Some(cond)) = (&mut self.fcx, outer_cond) {
            f.partial_mask = f.partial_mask.saturating_sub(1);
            f.varying_cond = cond;
        }
    }

    fn check_unmasked(&mut self, b: &ast::Block) {
        let saved = self.fcx.as_mut().map(|f| {
            let s = (f.partial_mask, f.varying_cond, f.returned_divergent);
            f.partial_mask = 0;
            f.returned_divergent = false;
            s
        });
        self.push_frame(Frame::Unmasked);
        self.check_block(b);
        self.pop_frame();
        if let (Some(f), Some((p, v, r))) = (&mut self.fcx, saved) {
            f.partial_mask = p;
            f.varying_cond = v;
            f.returned_divergent |= r;
        }
    }

    // ------------------------------------------------------------ local declarations

    fn check_local_decl(&mut self, d: &ast::Decl) {
        let q = &d.spec.quals;
        let kind = if q.shared().is_some() {
            self.check_local_shared(d);
            LocalKind::Shared
        } else if q.static_().is_some() {
            LocalKind::Static
        } else {
            LocalKind::Var
        };
        for decl in &d.declarators {
            self.check_local_declarator(d, decl, kind);
        }
    }

    /// `shared` in a function: only in entry points, never varying, no initializer.
    fn check_local_shared(&mut self, d: &ast::Decl) {
        let q = &d.spec.quals;
        let Some(sh) = q.shared() else { return };
        if let Some(v) = q.varying() {
            self.shared_varying(sh, v);
        }
        if !self.fcx.as_ref().is_some_and(|f| f.is_entry) {
            self.emit(
                Diagnostic::error(codes::INVALID_SHARED, "`shared` variables are only allowed in `export` and `task` functions")
                    .with_primary(sh, "`shared` here")
                    .with_help("declare the `shared` array in the kernel and pass a pointer to it to this function"),
            );
        }
        for decl in &d.declarators {
            if let Some(init) = &decl.init {
                self.shared_initializer(sh, init.span());
            }
        }
    }

    fn check_local_declarator(&mut self, d: &ast::Decl, decl: &ast::Declarator, kind: LocalKind) {
        let ty = self.resolve_type(&d.spec, &decl.derived, TypeCtx::Var);
        let ty = self.finish_object_type(ty);
        let mut ty = self.check_object_type(ty, decl.name, decl.span, false);
        if let Some(amp) = Self::reference_span(&decl.derived) {
            self.check_local_reference(d, decl, ty, amp);
            return;
        }
        let is_const = self.out.types.get(ty).is_const;
        let l = self.new_local(decl.name, ty, kind, None);
        self.record_decl(decl.id, DeclRef::Local(l));
        match decl.init.as_deref() {
            Some(init) if kind != LocalKind::Shared => {
                ty = self.check_initializer(ty, init, kind == LocalKind::Static, decl.name.name);
                self.out.locals[l].ty = ty;
                if is_const && !self.out.types.is_varying(ty) {
                    if let ast::Initializer::Expr(e) = init {
                        let v = self.eval_const(e).and_then(|v| {
                            let p = self.out.types.arith_prim(ty)?;
                            super::consteval::convert(v, p)
                        });
                        self.out.locals[l].const_value = v;
                    }
                }
            }
            Some(_) => {}
            None if is_const && !self.out.types.is_error(ty) => self.emit(
                Diagnostic::error(
                    codes::INVALID_INITIALIZER,
                    format!(
                        "`const` variable `{}` is not initialized",
                        self.name(decl.name.name)
                    ),
                )
                .with_primary(decl.span, "needs an initializer")
                .with_help("give it a value here: it cannot be assigned later"),
            ),
            None => {}
        }
        if kind == LocalKind::Shared {
            self.require_sized_or_dynamic(ty, decl);
        } else {
            self.require_sized(ty, decl);
        }
    }

    /// `T &r = object;`: a reference local, bound once to its initializer.
    fn check_local_reference(
        &mut self,
        d: &ast::Decl,
        decl: &ast::Declarator,
        ty: TypeId,
        amp: Span,
    ) {
        let q = &d.spec.quals;
        if let Some(s) = q.static_().or(q.shared()) {
            self.emit(
                Diagnostic::error(codes::MISPLACED_REFERENCE, "a reference cannot be `static` or `shared`")
                    .with_primary(s, "storage class here")
                    .with_secondary(amp, "this `&` declares a reference")
                    .with_help("a reference names an existing object and has no storage of its own; drop the storage class"),
            );
        }
        // The initializer is checked before the name is declared: a reference cannot
        // be bound to itself (`float &r = r;` names an outer `r`, or none).
        if let Some(ast::Initializer::Expr(e)) = decl.init.as_deref() {
            self.check_expr(e);
        }
        let l = self.new_local(decl.name, ty, LocalKind::Var, None);
        self.out.locals[l].by_ref = true;
        self.record_decl(decl.id, DeclRef::Local(l));
        match decl.init.as_deref() {
            Some(ast::Initializer::Expr(e)) => {
                self.bind_reference(
                    e,
                    ty,
                    Site::Init {
                        name: decl.name.name,
                    },
                    true,
                );
            }
            Some(ast::Initializer::List(_, span)) => self.emit(
                Diagnostic::error(
                    codes::INVALID_REFERENCE_BINDING,
                    format!(
                        "reference `{}` cannot be initialized with a brace list",
                        self.name(decl.name.name)
                    ),
                )
                .with_primary(*span, "a list of values is not an object")
                .with_help(
                    "initialize the reference with the variable it refers to: `float &r = x;`",
                ),
            ),
            None => self.emit(
                Diagnostic::error(
                    codes::UNINITIALIZED_REFERENCE,
                    format!(
                        "reference `{}` is not bound to an object",
                        self.name(decl.name.name)
                    ),
                )
                .with_primary(decl.span, "needs an initializer")
                .with_help(format!(
                    "a reference is bound once, where it is declared: `{} = x;`",
                    self.name(decl.name.name)
                )),
            ),
        }
    }
}
