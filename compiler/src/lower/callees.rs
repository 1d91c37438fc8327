//! The order in which lowering meets the standard-library functions a body calls,
//! read from the checked AST without lowering it.
//!
//! Lowering declares a stdlib function with a body when it first lowers a call of it,
//! so a module's function order (and the `.N` names of overloads) follow the order
//! in which bodies are lowered and their calls met. The runtime is built in parts
//! ([`super::lower_runtime`]), yet each part must order and name its functions as the
//! whole runtime does; [`runtime_order`] computes that order from the syntax tree.
//! The walk visits subexpressions in the order lowering lowers them: a callee before
//! its arguments, the right side of a plain assignment before its target, a loop's
//! condition before its body and its body before its step. A test compares the result
//! with the whole runtime's lowering.

use rustc_hash::FxHashSet;

use crate::front::ast::{
    CaseLabel, Expr, ExprKind, ForInit, Initializer, Stmt, StmtKind, TranslationUnit,
};
use crate::front::intern::Interner;
use crate::front::sema::{Checked, DeclRef, FuncId, LocalId, LocalKind, Res};

/// The functions lowering the whole runtime lowers ([`super::lower_with_runtime`] of a
/// program without functions), in its order, each with the name it gets there.
pub fn runtime_order(
    unit: &TranslationUnit,
    checked: &Checked,
    interner: &Interner,
) -> Vec<(FuncId, String)> {
    let prefix = crate::passes::legalize::RUNTIME_PREFIX;
    let mut order: Vec<FuncId> = checked
        .defined_funcs()
        .filter(|(_, f)| f.from_stdlib && interner.resolve(f.name).starts_with(prefix))
        .map(|(id, _)| id)
        .collect();
    let mut seen: FxHashSet<FuncId> = order.iter().copied().collect();
    let mut i = 0;
    while let Some(&id) = order.get(i) {
        i += 1;
        for callee in stdlib_callees(unit, checked, id) {
            if seen.insert(callee) {
                order.push(callee);
            }
        }
    }
    let mut count: rustc_hash::FxHashMap<&str, u32> = Default::default();
    order
        .into_iter()
        .map(|id| {
            let base = interner.resolve(checked.funcs[id].name);
            let n = count.entry(base).or_insert(0);
            let name = if *n > 0 {
                format!("{base}.{n}")
            } else {
                base.to_string()
            };
            *n += 1;
            (id, name)
        })
        .collect()
}

/// The stdlib functions with bodies that function `id`'s body calls, each once, in the
/// order lowering first meets their calls.
pub fn stdlib_callees(unit: &TranslationUnit, checked: &Checked, id: FuncId) -> Vec<FuncId> {
    walk(unit, checked, id).callees
}

/// The `static` and `shared` locals function `id` declares, in the order lowering
/// creates their objects, with their initializers.
pub fn static_locals<'u>(
    unit: &'u TranslationUnit,
    checked: &'u Checked,
    id: FuncId,
) -> Vec<(LocalId, Option<&'u Initializer>)> {
    walk(unit, checked, id).statics
}

fn walk<'u>(unit: &'u TranslationUnit, checked: &'u Checked, id: FuncId) -> Walk<'u, 'u> {
    let mut walk = Walk {
        checked,
        callees: Vec::new(),
        statics: Vec::new(),
    };
    let body = checked.func_def(unit, id).and_then(|f| f.body.as_ref());
    if let Some(body) = body {
        walk.stmts(&body.stmts);
    }
    walk
}

struct Walk<'u, 'c> {
    checked: &'c Checked,
    callees: Vec<FuncId>,
    statics: Vec<(LocalId, Option<&'u Initializer>)>,
}

impl<'u> Walk<'u, '_> {
    fn stmts(&mut self, stmts: &'u [Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &'u Stmt) {
        match &s.kind {
            StmtKind::Block(b) | StmtKind::Unmasked(b) => self.stmts(&b.stmts),
            StmtKind::Decl(d) => self.decl(d),
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::If {
                cond, then, else_, ..
            } => {
                self.expr(cond);
                self.stmt(then);
                if let Some(e) = else_ {
                    self.stmt(e);
                }
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
                ..
            } => {
                match init.as_deref() {
                    Some(ForInit::Decl(d)) => self.decl(d),
                    Some(ForInit::Expr(e)) => self.expr(e),
                    None => {}
                }
                self.opt(cond.as_deref());
                self.stmt(body);
                self.opt(step.as_deref());
            }
            StmtKind::While { cond, body, .. } | StmtKind::DoWhile { body, cond, .. } => {
                self.expr(cond);
                self.stmt(body);
            }
            StmtKind::Return(e) => self.opt(e.as_ref()),
            StmtKind::Launch(l) => {
                for c in &l.counts {
                    self.expr(c);
                }
                self.expr(&l.call);
            }
            StmtKind::Switch { cond, arms } => {
                self.expr(cond);
                for arm in arms {
                    for label in &arm.labels {
                        if let CaseLabel::Case(e) = label {
                            self.expr(e);
                        }
                    }
                    self.stmts(&arm.body);
                }
            }
            StmtKind::Foreach { dims, body, .. } => {
                for d in dims {
                    self.expr(&d.start);
                    self.expr(&d.end);
                }
                self.stmt(body);
            }
            StmtKind::ForeachActive { body, .. } | StmtKind::Labeled { body, .. } => {
                self.stmt(body)
            }
            StmtKind::ForeachUnique { expr, body, .. } => {
                self.expr(expr);
                self.stmt(body);
            }
            StmtKind::Delete { ptr, .. } => self.expr(ptr),
            StmtKind::Empty
            | StmtKind::Typedef(_)
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Goto(_)
            | StmtKind::Sync
            | StmtKind::Error => {}
        }
    }

    /// A `static` or `shared` local's initializer is its object's contents, not code.
    fn decl(&mut self, d: &'u crate::front::ast::Decl) {
        for declarator in &d.declarators {
            let Some(DeclRef::Local(l)) = self.checked.decl(declarator) else {
                continue;
            };
            match self.checked.locals[l].kind {
                LocalKind::Static | LocalKind::Shared => {
                    self.statics.push((l, declarator.init.as_deref()));
                }
                _ => {
                    if let Some(init) = &declarator.init {
                        self.init(init);
                    }
                }
            }
        }
    }

    fn init(&mut self, init: &Initializer) {
        match init {
            Initializer::Expr(e) => self.expr(e),
            Initializer::List(items, _) => items.iter().for_each(|i| self.init(i)),
        }
    }

    fn opt(&mut self, e: Option<&Expr>) {
        if let Some(e) = e {
            self.expr(e);
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Call { args, .. } => {
                if let Res::Func(fid) = self.checked.res(e.id) {
                    let f = &self.checked.funcs[fid];
                    if f.from_stdlib && f.def_item.is_some() && !self.callees.contains(&fid) {
                        self.callees.push(fid);
                    }
                }
                args.iter().for_each(|a| self.expr(a));
            }
            ExprKind::CallPtr { callee, args } => {
                self.expr(callee);
                args.iter().for_each(|a| self.expr(a));
            }
            ExprKind::Assign {
                op: None, lhs, rhs, ..
            } => {
                self.expr(rhs);
                self.expr(lhs);
            }
            ExprKind::Assign { lhs, rhs, .. } | ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Ternary { cond, then, else_ } => {
                self.expr(cond);
                self.expr(then);
                self.expr(else_);
            }
            ExprKind::Index { base, index } => {
                self.expr(base);
                self.expr(index);
            }
            ExprKind::Unary { operand: x, .. }
            | ExprKind::Cast { expr: x, .. }
            | ExprKind::Member { base: x, .. } => self.expr(x),
            // The runtime allocates nothing: the heap routines never come from here.
            ExprKind::New(n) => {
                self.opt(n.count.as_ref());
                if let Some(init) = &n.init {
                    self.init(init);
                }
            }
            // `sizeof` is a constant sema evaluated: nothing is lowered.
            ExprKind::SizeofExpr(_)
            | ExprKind::SizeofType(_)
            | ExprKind::Int { .. }
            | ExprKind::Float { .. }
            | ExprKind::Bool(_)
            | ExprKind::Char(_)
            | ExprKind::Str(_)
            | ExprKind::Null
            | ExprKind::Ident(_)
            | ExprKind::Error => {}
        }
    }
}
