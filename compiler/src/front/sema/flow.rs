//! Can control reach the end of a statement? Used for E0506 (a non-`void` function
//! whose end is reachable).
//!
//! The analysis is the usual conservative one: `return` ends a path; loops whose
//! condition is absent or a true constant end it unless they contain a `break` for
//! themselves; `if` needs both branches to end; a `switch` needs a `default`, no
//! `break` for itself, and a last arm that ends. Statements the parser could not read
//! count as ending a path, so a syntax error never causes E0506.

use super::{Checker, ConstValue};
use crate::front::ast::{Expr, ExprKind, Stmt, StmtKind};

/// Deepest statement nesting analysed; deeper code is assumed to end (no E0506).
const MAX_FLOW_DEPTH: u32 = 2000;

impl Checker<'_> {
    pub(super) fn block_falls_through(&self, stmts: &[Stmt]) -> bool {
        self.seq_falls(stmts, 0)
    }

    fn seq_falls(&self, stmts: &[Stmt], depth: u32) -> bool {
        stmts.iter().all(|s| self.falls(s, depth))
    }

    fn falls(&self, s: &Stmt, depth: u32) -> bool {
        if depth > MAX_FLOW_DEPTH {
            return false;
        }
        let d = depth + 1;
        match &s.kind {
            StmtKind::Return(_) | StmtKind::Error => false,
            StmtKind::Block(b) | StmtKind::Unmasked(b) => self.seq_falls(&b.stmts, d),
            StmtKind::If { then, else_, .. } => match else_ {
                Some(e) => self.falls(then, d) || self.falls(e, d),
                None => true,
            },
            StmtKind::While { cond, body, .. } => !self.is_true(cond) || breaks(body, d),
            StmtKind::For { cond, body, .. } => {
                !cond.as_ref().is_none_or(|c| self.is_true(c)) || breaks(body, d)
            }
            StmtKind::DoWhile { body, cond, .. } => {
                if self.is_true(cond) {
                    breaks(body, d)
                } else {
                    self.falls(body, d) || breaks(body, d) || continues(body, d)
                }
            }
            StmtKind::Switch { arms, .. } => {
                let has_default = arms.iter().any(|a| {
                    a.labels
                        .iter()
                        .any(|l| matches!(l, crate::front::ast::CaseLabel::Default(_)))
                });
                let last_falls = arms.last().is_none_or(|a| self.seq_falls(&a.body, d));
                !has_default
                    || last_falls
                    || arms.iter().any(|a| a.body.iter().any(|s| breaks(s, d)))
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

/// Does `s` contain a `break` that leaves the statement enclosing it (not one inside a
/// nested loop or `switch`)?
fn breaks(s: &Stmt, depth: u32) -> bool {
    jumps(s, depth, true)
}

/// Does `s` contain a `continue` for the enclosing loop?
fn continues(s: &Stmt, depth: u32) -> bool {
    jumps(s, depth, false)
}

fn jumps(s: &Stmt, depth: u32, brk: bool) -> bool {
    if depth > MAX_FLOW_DEPTH {
        return true;
    }
    let d = depth + 1;
    match &s.kind {
        StmtKind::Break => brk,
        StmtKind::Continue => !brk,
        StmtKind::Block(b) | StmtKind::Unmasked(b) => b.stmts.iter().any(|s| jumps(s, d, brk)),
        StmtKind::If { then, else_, .. } => {
            jumps(then, d, brk) || else_.as_ref().is_some_and(|e| jumps(e, d, brk))
        }
        // A `continue` inside a switch still continues the enclosing loop.
        StmtKind::Switch { arms, .. } if !brk => {
            arms.iter().any(|a| a.body.iter().any(|s| jumps(s, d, brk)))
        }
        _ => false,
    }
}
