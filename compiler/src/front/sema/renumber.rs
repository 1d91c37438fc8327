//! Fresh [`ExprId`]s and [`DeclId`]s for a copy of a function template's body.
//!
//! Sema's side tables are indexed by these ids, and each instantiation of a template
//! is checked with its own types: every instantiation therefore checks (and lowering
//! reads) its own copy of the template's AST, renumbered past the ids handed out so
//! far. Sema then grows its tables to the new count.

use crate::front::ast::*;

/// Deepest nesting the walk descends into; deeper copies are refused (sema reports
/// E0325 as for any tree that deep).
const MAX_DEPTH: u32 = 1500;

pub(super) struct Renumber {
    pub next_expr: u32,
    pub next_decl: u32,
    depth: u32,
    pub too_deep: bool,
}

impl Renumber {
    pub fn new(next_expr: u32, next_decl: u32) -> Self {
        Renumber {
            next_expr,
            next_decl,
            depth: 0,
            too_deep: false,
        }
    }

    fn expr_id(&mut self) -> ExprId {
        let id = ExprId(self.next_expr);
        self.next_expr += 1;
        id
    }

    fn decl_id(&mut self) -> DeclId {
        let id = DeclId(self.next_decl);
        self.next_decl += 1;
        id
    }

    /// Enters one level; false once too deep (the rest is left as it was).
    fn enter(&mut self) -> bool {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return false;
        }
        self.depth += 1;
        true
    }

    pub fn function(&mut self, f: &mut Function) {
        self.type_name(&mut f.ret);
        self.params(&mut f.params);
        if let Some(body) = &mut f.body {
            self.stmts(&mut body.stmts);
        }
    }

    fn params(&mut self, params: &mut [Param]) {
        for p in params {
            self.type_name(&mut p.ty);
            if let Some(d) = &mut p.default {
                self.expr(d);
            }
        }
    }

    fn type_name(&mut self, t: &mut TypeName) {
        self.derived(&mut t.derived);
    }

    fn derived(&mut self, parts: &mut [Derived]) {
        for part in parts {
            match part {
                Derived::Array {
                    size: Some(size), ..
                } => self.expr(size),
                Derived::FnPtr { params, .. } => self.params(params),
                Derived::Array { size: None, .. }
                | Derived::Pointer { .. }
                | Derived::Reference { .. } => {}
            }
        }
    }

    fn decl(&mut self, d: &mut Decl) {
        for dc in &mut d.declarators {
            dc.id = self.decl_id();
            self.derived(&mut dc.derived);
            if let Some(init) = &mut dc.init {
                self.initializer(init);
            }
        }
    }

    fn initializer(&mut self, init: &mut Initializer) {
        match init {
            Initializer::Expr(e) => self.expr(e),
            Initializer::List(items, _) => {
                if !self.enter() {
                    return;
                }
                for i in items {
                    self.initializer(i);
                }
                self.depth -= 1;
            }
        }
    }

    fn stmts(&mut self, stmts: &mut [Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &mut Stmt) {
        if !self.enter() {
            return;
        }
        match &mut s.kind {
            StmtKind::Block(b) | StmtKind::Unmasked(b) => self.stmts(&mut b.stmts),
            StmtKind::Decl(d) => self.decl(d),
            StmtKind::Typedef(t) => self.type_name(&mut t.ty),
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.expr(e),
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
                match init.as_deref_mut() {
                    Some(ForInit::Decl(d)) => self.decl(d),
                    Some(ForInit::Expr(e)) => self.expr(e),
                    None => {}
                }
                for e in [cond, step].into_iter().flatten() {
                    self.expr(e);
                }
                self.stmt(body);
            }
            StmtKind::While { cond, body, .. } | StmtKind::DoWhile { body, cond, .. } => {
                self.expr(cond);
                self.stmt(body);
            }
            StmtKind::Labeled { body, .. } => self.stmt(body),
            StmtKind::Switch { cond, arms } => {
                self.expr(cond);
                for arm in arms {
                    for label in &mut arm.labels {
                        if let CaseLabel::Case(e) = label {
                            self.expr(e);
                        }
                    }
                    self.stmts(&mut arm.body);
                }
            }
            StmtKind::Foreach { dims, body, .. } => {
                for d in dims {
                    d.id = self.decl_id();
                    self.expr(&mut d.start);
                    self.expr(&mut d.end);
                }
                self.stmt(body);
            }
            StmtKind::ForeachActive { id, body, .. } => {
                *id = self.decl_id();
                self.stmt(body);
            }
            StmtKind::ForeachUnique { id, expr, body, .. } => {
                *id = self.decl_id();
                self.expr(expr);
                self.stmt(body);
            }
            StmtKind::Launch(l) => {
                for c in &mut l.counts {
                    self.expr(c);
                }
                self.expr(&mut l.call);
            }
            StmtKind::Delete { ptr, .. } => self.expr(ptr),
            StmtKind::Return(None)
            | StmtKind::Sync
            | StmtKind::Empty
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Goto(_)
            | StmtKind::Error => {}
        }
        self.depth -= 1;
    }

    fn expr(&mut self, e: &mut Expr) {
        if !self.enter() {
            return;
        }
        e.id = self.expr_id();
        match &mut e.kind {
            ExprKind::Unary { operand: x, .. }
            | ExprKind::SizeofExpr(x)
            | ExprKind::Member { base: x, .. } => self.expr(x),
            ExprKind::Binary { lhs, rhs, .. }
            | ExprKind::Assign { lhs, rhs, .. }
            | ExprKind::Index {
                base: lhs,
                index: rhs,
            } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Ternary { cond, then, else_ } => {
                self.expr(cond);
                self.expr(then);
                self.expr(else_);
            }
            ExprKind::Cast { ty, expr } => {
                self.type_name(ty);
                self.expr(expr);
            }
            ExprKind::SizeofType(ty) => self.type_name(ty),
            ExprKind::Call { args, targs, .. } => {
                if let Some(targs) = targs {
                    self.template_args(targs);
                }
                for a in args {
                    self.expr(a);
                }
            }
            ExprKind::CallPtr { callee, args } => {
                self.expr(callee);
                for a in args {
                    self.expr(a);
                }
            }
            ExprKind::New(n) => {
                self.type_name(&mut n.ty);
                if let Some(c) = &mut n.count {
                    self.expr(c);
                }
                if let Some(i) = &mut n.init {
                    self.initializer(i);
                }
            }
            ExprKind::Int { .. }
            | ExprKind::Float { .. }
            | ExprKind::Bool(_)
            | ExprKind::Char(_)
            | ExprKind::Str(_)
            | ExprKind::Null
            | ExprKind::Ident(_)
            | ExprKind::Error => {}
        }
        self.depth -= 1;
    }

    fn template_args(&mut self, targs: &mut TemplateArgs) {
        for a in &mut targs.args {
            match a {
                TemplateArg::Type(t) => self.type_name(t),
                TemplateArg::Value(e) => self.expr(e),
            }
        }
    }
}
