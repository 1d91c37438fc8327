//! Can control reach the end of a statement? Used for W0012 (a non-`void` function
//! whose end is reachable).
//!
//! The analysis is the usual conservative one: `return` ends a path; loops whose
//! condition is absent or a true constant end it unless they contain a `break` for
//! themselves; `if` needs both branches to end; a `switch` needs a `default`, no
//! `break` for itself, and a last arm that ends. Statements the parser could not read
//! count as ending a path, so a syntax error never causes W0012.

use super::{Checker, ConstValue};
use crate::front::ast::{Block, CaseLabel, Expr, ExprKind, ForInit, Initializer, Stmt, StmtKind};

/// Deepest statement nesting analysed; deeper code is assumed to end (no W0012).
const MAX_FLOW_DEPTH: u32 = 2000;

impl Checker<'_> {
    pub(super) fn block_falls_through(&self, stmts: &[Stmt]) -> bool {
        self.seq_falls(stmts, 0)
    }

    /// A statement list falls through if its last statement is reached and falls
    /// through; a labelled statement is reached whatever precedes it (a `goto` may jump
    /// there).
    fn seq_falls(&self, stmts: &[Stmt], depth: u32) -> bool {
        let mut reached = true;
        for s in stmts {
            reached |= matches!(s.kind, StmtKind::Labeled { .. });
            if reached && !self.falls(s, depth) {
                reached = false;
            }
        }
        reached
    }

    fn falls(&self, s: &Stmt, depth: u32) -> bool {
        if depth > MAX_FLOW_DEPTH {
            return false;
        }
        let d = depth + 1;
        match &s.kind {
            StmtKind::Return(_) | StmtKind::Error | StmtKind::Goto(_) => false,
            StmtKind::Labeled { body, .. } => self.falls(body, d),
            StmtKind::Block(b) | StmtKind::Unmasked(b) => self.seq_falls(&b.stmts, d),
            StmtKind::If {
                then,
                else_: Some(e),
                ..
            } => self.falls(then, d) || self.falls(e, d),
            StmtKind::If { else_: None, .. } => true,
            StmtKind::While { cond, body, .. } => !self.is_true(cond) || self.breaks(body, d),
            StmtKind::For { cond, body, .. } => {
                !cond.as_ref().is_none_or(|c| self.is_true(c)) || self.breaks(body, d)
            }
            StmtKind::DoWhile { body, cond, .. } => {
                if self.is_true(cond) {
                    self.breaks(body, d)
                } else {
                    self.falls(body, d) || self.breaks(body, d) || self.continues(body, d)
                }
            }
            StmtKind::Switch { arms, .. } => {
                let has_default = arms.iter().any(|a| {
                    a.labels
                        .iter()
                        .any(|l| matches!(l, crate::front::ast::CaseLabel::Default(_)))
                });
                let last_falls = arms.last().is_none_or(|a| self.seq_falls(&a.body, d));
                !has_default || last_falls || arms.iter().any(|a| self.seq_jumps(&a.body, d, true))
            }
            _ => true,
        }
    }

    /// Is a loop condition a true constant?
    fn is_true(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Bool(b) => *b,
            ExprKind::Int { value, .. } => *value != 0,
            _ => {
                matches!(self.eval_const(e), Some(ConstValue::Bool(true)))
                    || matches!(self.eval_const(e), Some(ConstValue::Int(v)) if v != 0)
            }
        }
    }
}

impl Checker<'_> {
    /// Does `s` reach a `break` that leaves the statement enclosing it (not one inside
    /// a nested loop or `switch`)?
    fn breaks(&self, s: &Stmt, depth: u32) -> bool {
        self.jumps(s, depth, true)
    }

    /// Does `s` reach a `continue` for the enclosing loop?
    fn continues(&self, s: &Stmt, depth: u32) -> bool {
        self.jumps(s, depth, false)
    }

    /// Is a `break` (or `continue`) reached in a statement list before control stops?
    fn seq_jumps(&self, stmts: &[Stmt], depth: u32, brk: bool) -> bool {
        let mut reached = true;
        for s in stmts {
            reached |= matches!(s.kind, StmtKind::Labeled { .. });
            if reached && self.jumps(s, depth, brk) {
                return true;
            }
            reached &= self.falls(s, depth);
        }
        false
    }

    fn jumps(&self, s: &Stmt, depth: u32, brk: bool) -> bool {
        if depth > MAX_FLOW_DEPTH {
            return true;
        }
        let d = depth + 1;
        match &s.kind {
            StmtKind::Break => brk,
            StmtKind::Continue => !brk,
            StmtKind::Labeled { body, .. } => self.jumps(body, d, brk),
            StmtKind::Block(b) | StmtKind::Unmasked(b) => self.seq_jumps(&b.stmts, d, brk),
            StmtKind::If { then, else_, .. } => {
                self.jumps(then, d, brk) || else_.as_ref().is_some_and(|e| self.jumps(e, d, brk))
            }
            // A `continue` inside a switch still continues the enclosing loop.
            StmtKind::Switch { arms, .. } if !brk => {
                arms.iter().any(|a| self.seq_jumps(&a.body, d, brk))
            }
            _ => false,
        }
    }
}

/// Does a block contain a statement or expression the parser could not read?
pub(super) fn block_has_error(b: &Block) -> bool {
    b.stmts.iter().any(|s| stmt_has_error(s, 0))
}

fn stmt_has_error(s: &Stmt, depth: u32) -> bool {
    if depth > MAX_FLOW_DEPTH {
        return false;
    }
    let d = depth + 1;
    let e = |x: &Expr| expr_has_error(x, d);
    let st = |x: &Stmt| stmt_has_error(x, d);
    match &s.kind {
        StmtKind::Error => true,
        StmtKind::Block(b) | StmtKind::Unmasked(b) => b.stmts.iter().any(st),
        StmtKind::Decl(decl) => decl_has_error(decl, d),
        StmtKind::Expr(x) => e(x),
        StmtKind::Return(x) => x.as_ref().is_some_and(e),
        StmtKind::Launch(l) => l.counts.iter().any(e) || e(&l.call),
        StmtKind::Delete { ptr, .. } => e(ptr),
        StmtKind::Empty
        | StmtKind::Sync
        | StmtKind::Typedef(_)
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Goto(_) => false,
        StmtKind::Labeled { body, .. } => st(body),
        StmtKind::If {
            cond, then, else_, ..
        } => e(cond) || st(then) || else_.as_deref().is_some_and(st),
        StmtKind::For {
            init,
            cond,
            step,
            body,
            ..
        } => {
            let init_err = match init.as_deref() {
                Some(ForInit::Decl(decl)) => decl_has_error(decl, d),
                Some(ForInit::Expr(x)) => e(x),
                None => false,
            };
            init_err || cond.as_deref().is_some_and(e) || step.as_deref().is_some_and(e) || st(body)
        }
        StmtKind::While { cond, body, .. } | StmtKind::DoWhile { cond, body, .. } => {
            e(cond) || st(body)
        }
        StmtKind::Switch { cond, arms } => {
            e(cond)
                || arms.iter().any(|a| {
                    a.body.iter().any(st)
                        || a.labels
                            .iter()
                            .any(|l| matches!(l, CaseLabel::Case(x) if e(x)))
                })
        }
        StmtKind::Foreach { dims, body, .. } => {
            dims.iter().any(|dm| e(&dm.start) || e(&dm.end)) || st(body)
        }
        StmtKind::ForeachActive { body, .. } => st(body),
        StmtKind::ForeachUnique { expr, body, .. } => e(expr) || st(body),
    }
}

fn decl_has_error(decl: &crate::front::ast::Decl, depth: u32) -> bool {
    decl.declarators
        .iter()
        .any(|dc| dc.init.as_ref().is_some_and(|i| init_has_error(i, depth)))
}

fn init_has_error(i: &Initializer, depth: u32) -> bool {
    if depth > MAX_FLOW_DEPTH {
        return false;
    }
    match i {
        Initializer::Expr(x) => expr_has_error(x, depth + 1),
        Initializer::List(items, _) => items.iter().any(|it| init_has_error(it, depth + 1)),
    }
}

fn expr_has_error(x: &Expr, depth: u32) -> bool {
    if depth > MAX_FLOW_DEPTH {
        return false;
    }
    let d = depth + 1;
    let e = |y: &Expr| expr_has_error(y, d);
    match &x.kind {
        ExprKind::Error => true,
        ExprKind::Unary { operand, .. } => e(operand),
        ExprKind::Binary { lhs, rhs, .. } | ExprKind::Assign { lhs, rhs, .. } => e(lhs) || e(rhs),
        ExprKind::Ternary { cond, then, else_ } => e(cond) || e(then) || e(else_),
        ExprKind::Cast { expr, .. } | ExprKind::SizeofExpr(expr) => e(expr),
        ExprKind::Call { args, .. } => args.iter().any(e),
        ExprKind::CallPtr { callee, args } => e(callee) || args.iter().any(e),
        ExprKind::Index { base, index } => e(base) || e(index),
        ExprKind::Member { base, .. } => e(base),
        ExprKind::New(n) => {
            n.count.as_ref().is_some_and(e) || n.init.as_ref().is_some_and(|i| init_has_error(i, d))
        }
        _ => false,
    }
}
