//! `launch` statements: ISPC's task launches (E0513-E0517).
//!
//! A launch names a `task` function in an ordinary call, or calls through a uniform
//! pointer to a `task` function, with up to three uniform integer task counts. The call is checked as any call is (overloads, conversions,
//! default arguments); this module adds what is particular to launching.

use super::types::{Prim, Variability};
use super::{Checker, Res};
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{Expr, ExprKind, Launch};

/// ISPC's task grids have at most three dimensions.
const MAX_LAUNCH_DIMS: usize = 3;

impl Checker<'_> {
    pub(super) fn check_launch(&mut self, l: &Launch) {
        for c in &l.counts {
            self.check_launch_count(c);
        }
        if l.counts.len() > MAX_LAUNCH_DIMS {
            let extra = &l.counts[MAX_LAUNCH_DIMS..];
            let span = extra
                .iter()
                .skip(1)
                .fold(extra[0].span, |s, e| s.to(e.span));
            self.emit(
                Diagnostic::error(
                    codes::LAUNCH_TOO_MANY_DIMS,
                    format!(
                        "a launch has at most {MAX_LAUNCH_DIMS} task counts, this one has {}",
                        l.counts.len()
                    ),
                )
                .with_primary(span, "counts past the third")
                .with_help(
                    "fold the extra dimensions into one count and split `taskIndex` in the task",
                ),
            );
        }
        let is_call = matches!(
            l.call.kind,
            ExprKind::Call { .. } | ExprKind::CallPtr { .. }
        );
        if !is_call {
            // A bare name is reported here alone (not also as a function's address).
            if !matches!(l.call.kind, ExprKind::Ident(_)) {
                self.check_expr(&l.call);
            }
            self.emit(
                Diagnostic::error(
                    codes::LAUNCH_NOT_CALL,
                    "`launch` needs a call of a `task` function",
                )
                .with_primary(l.call.span, "this is not a call")
                .with_help("write the call with its arguments: `launch[n] work(args);`"),
            );
            return;
        }
        let outer = self.launched_call.replace(l.call.id);
        let ty = self.check_expr(&l.call);
        self.launched_call = outer;
        if self.out.types.is_error(ty) {
            return;
        }
        self.check_launched_callee(&l.call);
    }

    /// A task count: a uniform integer, converted to `uniform int` (E0514).
    fn check_launch_count(&mut self, e: &Expr) {
        let t = self.check_expr(e);
        let t = self.rvalue(e, t);
        if self.out.types.is_error(t) {
            return;
        }
        let why = if !self.out.types.is_integral(t) {
            Some("not an integer")
        } else if self.out.types.is_varying(t) {
            Some("varying")
        } else {
            None
        };
        if let Some(why) = why {
            self.emit(
                Diagnostic::error(
                    codes::LAUNCH_COUNT_NOT_UNIFORM_INT,
                    "a task count must be a uniform integer",
                )
                .with_primary(e.span, format!("this is {why}: `{}`", self.ty_str(t)))
                .with_help(
                    "every program instance launches the same tasks: count them with a uniform \
                     value (`reduce_max(n)` makes one of a varying `n`)",
                ),
            );
            return;
        }
        let want = self.out.types.prim(Prim::Int32, Variability::Uniform);
        self.coerce(e, t, want, super::expr::Site::Uniform("task counts"));
    }

    /// The launched function must be a `task` (E0513); a launch through a pointer is
    /// checked with the call through it (`check_ptr_launch`).
    fn check_launched_callee(&mut self, call: &Expr) {
        let callee_span = match &call.kind {
            ExprKind::Call { callee, .. } => callee.span,
            ExprKind::CallPtr { callee, .. } => callee.span,
            _ => call.span,
        };
        if matches!(call.kind, ExprKind::CallPtr { .. }) {
            // Checked with the call (see `check_ptr_launch`).
            return;
        }
        match self.out.res(call.id) {
            Res::Func(f) if self.out.funcs[f].flags.task => {}
            // A variable holding a function pointer: checked with the call.
            Res::Local(_) | Res::Global(_) => {}
            Res::Func(f) => {
                let name = self.name(self.out.funcs[f].name).to_string();
                self.emit(
                    Diagnostic::error(
                        codes::LAUNCH_NOT_TASK,
                        format!("`{name}` is not a `task` function and cannot be launched"),
                    )
                    .with_primary(callee_span, "launched here")
                    .with_help(format!(
                        "declare it `task void {name}(...)`, or call it without `launch`"
                    )),
                );
            }
            _ => {
                self.emit(
                    Diagnostic::error(
                        codes::LAUNCH_NOT_TASK,
                        "only a `task` function, or a pointer to one, can be launched",
                    )
                    .with_primary(callee_span, "this is not a `task` function")
                    .with_help("launch a task by name (`launch[n] work(args);`) or through a `task` pointer"),
                );
            }
        }
    }

    /// E0517: a `task` function called as an ordinary function.
    pub(super) fn task_called_without_launch(
        &mut self,
        f: super::FuncId,
        callee: crate::front::ast::Ident,
    ) {
        let name = self.name(self.out.funcs[f].name).to_string();
        self.emit(
            Diagnostic::error(
                codes::TASK_CALLED_WITHOUT_LAUNCH,
                format!("`task` function `{name}` is called without `launch`"),
            )
            .with_primary(callee.span, "called here")
            .with_help(format!(
                "launch it (`launch {name}(...);`), or move its work into an ordinary function that both call"
            )),
        );
    }
}
