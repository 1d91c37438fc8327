//! Function pointers: a function's name used as a value (`f`, `&f`), and calls through
//! a pointer (`p(x)`, `table[i](x)`, `(c ? f : g)(x)`).
//!
//! A function pointer type points to a signature ([`FnSig`]); a function converts to a
//! pointer of exactly its own signature, so a call through a pointer can only reach
//! functions whose parameters and return type are those the call was checked against.
//! The value of a function's name is a constant: the function's number among those
//! whose address the program takes ([`Checked::fn_ptr_targets`](super::Checked)), 0
//! being `NULL`. Lowering turns a call through a pointer into a dispatch over those
//! functions (see `lower::fn_ptr`).

use smallvec::SmallVec;

use super::expr::Site;
use super::types::{FnSig, SigId, TypeId, TypeKind, Types, Variability};
use super::{Checker, ConstValue, FuncId, Res};
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{self, Expr, ExprId};

/// An overloaded function's name used as a value, waiting for the conversion to a
/// function pointer type that picks one overload.
#[derive(Clone, Copy, Debug)]
pub(super) struct PendingFn {
    ident: ast::Ident,
    /// The name's own expression (the pending one may be `&name` around it).
    name_expr: ExprId,
}
use crate::source::Span;

impl Checker<'_> {
    /// The signature of function `f` as a function pointer type sees it.
    fn func_sig(&mut self, f: FuncId) -> SigId {
        let params = self.out.funcs[f].params.clone();
        let ret = self.out.funcs[f].ret;
        let key = self.signature_key(&params);
        let ret = self.types().with_const(ret, false);
        let task = self.out.funcs[f].flags.task;
        self.types().sig(FnSig {
            ret,
            params: key,
            task,
        })
    }

    /// A function's name used as a value: a uniform pointer to it, whose value is a
    /// constant. An overloaded name waits for the function pointer type it converts to,
    /// which picks the overload ([`Self::resolve_pending_fn`]), as in C++.
    pub(super) fn function_designator(&mut self, e: &Expr, id: ast::Ident) -> TypeId {
        self.set_res(e, Res::Error);
        let visible = self.visible_overloads(id.name);
        match visible.as_slice() {
            [] => {
                let all = self.overloads.get(&id.name).cloned().unwrap_or_default();
                if let Some(&later) = all.first() {
                    let span = self.out.funcs[later].span;
                    let name = self.name(id.name);
                    self.emit(
                        Diagnostic::error(
                            codes::UNKNOWN_FUNCTION,
                            format!("function `{name}` is used before it is declared"),
                        )
                        .with_primary(id.span, "not declared yet")
                        .with_secondary(span, "declared later here")
                        .with_help("declare a prototype of the function above this use"),
                    );
                }
                Types::ERROR
            }
            [f] => self.designate(*f, id, e.id, None),
            _ => {
                let pending = PendingFn {
                    ident: id,
                    name_expr: e.id,
                };
                self.pending_fns.insert(e.id, pending);
                Types::ERROR
            }
        }
    }

    /// The overloads of `name` declared before the current item.
    pub(super) fn visible_overloads(
        &self,
        name: crate::front::intern::Symbol,
    ) -> SmallVec<[FuncId; 2]> {
        let cur = self.cur_item;
        self.overloads
            .get(&name)
            .map(|all| {
                all.iter()
                    .copied()
                    .filter(|&f| {
                        self.out.funcs[f]
                            .decl_items
                            .first()
                            .is_some_and(|&i| i <= cur)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Makes the name expression `name_expr` (and `&name`, `outer`, around it) a pointer
    /// to function `f`, if a pointer can hold `f` (E0329 if not).
    fn designate(
        &mut self,
        f: FuncId,
        id: ast::Ident,
        name_expr: ExprId,
        outer: Option<ExprId>,
    ) -> TypeId {
        let name = self.name(id.name);
        let info = &self.out.funcs[f];
        let why = if info.ret_ref {
            Some((
                format!("`{name}` returns a reference; function pointers to such functions are not supported"),
                "return a pointer or a value instead".to_string(),
            ))
        } else if info.from_stdlib
            && info.def_item.is_none()
            && self.syms.builtin_fn(id.name).is_some()
        {
            Some((
                format!("`{name}` is built into the compiler and has no address"),
                format!("call `{name}` from a function of your own, and point at that"),
            ))
        } else {
            None
        };
        if let Some((msg, help)) = why {
            self.emit(
                Diagnostic::error(codes::NO_FUNCTION_ADDRESS, msg)
                    .with_primary(id.span, "its address is taken here")
                    .with_help(help),
            );
            return Types::ERROR;
        }
        let sig = self.func_sig(f);
        let value = ConstValue::Int(i128::from(self.out.take_fn_address(f, sig)));
        let ty = self.types().fn_ptr(sig, Variability::Uniform, false);
        for e in std::iter::once(name_expr).chain(outer) {
            self.out.consts.insert(e, value);
            if let Some(slot) = self.out.expr_ty.get_mut(e.index()) {
                *slot = ty;
            }
            if let Some(slot) = self.out.expr_conv.get_mut(e.index()) {
                *slot = ty;
            }
        }
        if let Some(slot) = self.out.expr_res.get_mut(name_expr.index()) {
            *slot = Res::Func(f);
        }
        // Its body is needed (a stdlib one is checked only when used), and it must be
        // defined somewhere (E0211).
        self.out.funcs[f].called = true;
        self.first_calls.entry(f).or_insert(id.span);
        ty
    }

    /// An overloaded name converted to type `to`: the overload whose signature is
    /// `to`'s (E0329 if none is, or `to` is no function pointer). Returns the name's
    /// type after that, or None if `e` is not such a name.
    pub(super) fn resolve_pending_fn(&mut self, e: &Expr, to: TypeId) -> Option<TypeId> {
        if !self.pending_fns.contains_key(&e.id) || self.out.types.is_error(to) {
            return None;
        }
        let p = self.pending_fns.remove(&e.id)?;
        self.pending_fns.remove(&p.name_expr);
        let outer = (p.name_expr != e.id).then_some(e.id);
        let name = self.name(p.ident.name);
        let Some(sig) = self.out.types.fn_ptr_sig(to) else {
            self.ambiguous_fn(p);
            return Some(Types::ERROR);
        };
        let found = self
            .visible_overloads(p.ident.name)
            .into_iter()
            .find(|&f| self.func_sig(f) == sig);
        match found {
            Some(f) => Some(self.designate(f, p.ident, p.name_expr, outer)),
            None => {
                let ts = self.ty_str(to);
                self.emit(
                    Diagnostic::error(
                        codes::NO_FUNCTION_ADDRESS,
                        format!("no overload of `{name}` has the signature of `{ts}`"),
                    )
                    .with_primary(p.ident.span, "converted to a function pointer here")
                    .with_help("a function pointer holds only a function of exactly its parameter and return types"),
                );
                Some(Types::ERROR)
            }
        }
    }

    /// E0329 for an overloaded name used as a value where no function pointer type
    /// picks the overload.
    fn ambiguous_fn(&mut self, p: PendingFn) {
        let name = self.name(p.ident.name);
        let visible = self.visible_overloads(p.ident.name);
        let mut d = Diagnostic::error(
            codes::NO_FUNCTION_ADDRESS,
            format!(
                "`{name}` names {} overloaded functions; which one is meant is not known here",
                visible.len()
            ),
        )
        .with_primary(p.ident.span, "which overload?");
        for &g in visible.iter().take(3) {
            if !self.in_stdlib(self.out.funcs[g].span) {
                d = d.with_secondary(self.out.funcs[g].span, "an overload");
            }
        }
        self.emit(d.with_help(
            "convert it to a function pointer type (`FuncType f = name;`), which picks the overload of that signature",
        ));
    }

    /// Reports the overloaded names no conversion resolved, once each.
    pub(super) fn report_pending_fns(&mut self) {
        let mut left: Vec<PendingFn> = self.pending_fns.drain().map(|(_, p)| p).collect();
        left.sort_by_key(|p| (p.ident.span.file, p.ident.span.start, p.name_expr));
        left.dedup_by_key(|p| p.name_expr);
        for p in left {
            self.ambiguous_fn(p);
        }
    }

    /// `&name` of an overloaded name: pending as the name is.
    pub(super) fn pending_address_of(&mut self, e: &Expr, operand: &Expr) -> bool {
        match self.pending_fns.get(&operand.id).copied() {
            Some(p) => {
                self.pending_fns.insert(e.id, p);
                true
            }
            None => false,
        }
    }

    /// Is `e` a function's name (after [`Self::function_designator`])?
    pub(super) fn is_function_designator(&self, e: &Expr) -> bool {
        matches!(e.kind, ast::ExprKind::Ident(_)) && matches!(self.out.res(e.id), Res::Func(_))
    }

    /// `&f` and `*p` on function pointers: the same pointer (`&f` is `f`; `*p` is the
    /// function, which decays back to the pointer wherever it is used).
    pub(super) fn fn_ptr_unary(&mut self, e: &Expr, operand: &Expr, t0: TypeId) -> TypeId {
        if let Some(v) = self.out.const_value(operand.id) {
            self.set_const(e, v);
        }
        t0
    }

    /// A call of a name that holds a function pointer (a local or global variable),
    /// if `callee` is one; None if it names something else.
    pub(super) fn call_through_variable(
        &mut self,
        e: &Expr,
        callee: ast::Ident,
        args: &[Expr],
    ) -> Option<TypeId> {
        let (res, ty) = match self.scopes.lookup(callee.name) {
            Some(l) => (Res::Local(l), self.out.locals[l].ty),
            None => match self.file_names.get(&callee.name) {
                Some(super::FileName::Global(g)) => (Res::Global(*g), self.out.globals[*g].ty),
                _ => return None,
            },
        };
        if !matches!(self.out.types.kind(ty), TypeKind::FnPtr(_)) {
            return None;
        }
        if let Res::Local(l) = res {
            self.local_used[cranelift_entity::EntityRef::index(l)] = true;
        }
        self.set_res(e, res);
        Some(self.check_ptr_call(e, callee.span, ty, args))
    }

    /// `callee(args)` for a callee expression that is not a name.
    pub(super) fn check_call_expr(&mut self, e: &Expr, callee: &Expr, args: &[Expr]) -> TypeId {
        let t = self.check_expr(callee);
        self.check_ptr_call(e, callee.span, t, args)
    }

    /// A call through a pointer of type `fty`: the arguments convert to the signature's
    /// parameters. Through a varying pointer the result is varying (each program
    /// instance may have called a different function).
    fn check_ptr_call(&mut self, e: &Expr, callee: Span, fty: TypeId, args: &[Expr]) -> TypeId {
        let sig = match self.out.types.kind(fty) {
            TypeKind::FnPtr(sig) => Some(sig),
            TypeKind::Error => None,
            _ => {
                let ts = self.ty_str(fty);
                self.emit(
                    Diagnostic::error(
                        codes::NOT_A_FUNCTION,
                        format!("a value of type `{ts}` is called"),
                    )
                    .with_primary(
                        callee,
                        format!("this has type `{ts}`, not a function pointer"),
                    )
                    .with_help("only functions and function pointers can be called"),
                );
                None
            }
        };
        let Some(sig) = sig else {
            for a in args {
                self.check_expr(a);
            }
            return Types::ERROR;
        };
        let FnSig { ret, params, task } = self.out.types.sig_data(sig).clone();
        if !self.check_ptr_launch(e, callee, fty, task) {
            for a in args {
                self.check_expr(a);
            }
            return Types::ERROR;
        }
        if args.len() != params.len() {
            for a in args {
                self.check_expr(a);
            }
            let ts = self.ty_str(fty);
            self.emit(
                Diagnostic::error(
                    codes::WRONG_ARG_COUNT,
                    format!(
                        "this function pointer takes {} argument{}, but {} {} given",
                        params.len(),
                        if params.len() == 1 { "" } else { "s" },
                        args.len(),
                        if args.len() == 1 { "was" } else { "were" }
                    ),
                )
                .with_primary(e.span, "wrong number of arguments")
                .with_secondary(callee, format!("the pointer has type `{ts}`"))
                .with_note("a call through a pointer passes every argument (default arguments do not apply)")
                .with_help(format!("pass {} argument{}", params.len(), if params.len() == 1 { "" } else { "s" })),
            );
            return Types::ERROR;
        }
        self.record_ptr_call(sig, e.span, self.out.types.is_varying(fty));
        for (index, (a, &(pt, by_ref))) in args.iter().zip(&params).enumerate() {
            let site = Site::PtrArg { index };
            let t = self.check_expr(a);
            if by_ref {
                self.bind_reference(a, pt, site, true);
            } else {
                let t = self.rvalue(a, t);
                self.coerce(a, t, pt, site);
            }
        }
        let scalar = !matches!(
            self.out.types.kind(ret),
            TypeKind::Void | TypeKind::Struct(_) | TypeKind::Array(..)
        );
        if self.out.types.is_varying(fty) && scalar {
            self.types().with_var(ret, Variability::Varying)
        } else {
            ret
        }
    }

    /// A call through a pointer of type `fty` (of a `task` signature if `task`): a task
    /// pointer only in a `launch` (E0517), a launch only through a uniform task pointer
    /// (E0513, E0408; ISPC's rule: the launch must know which task it starts). Returns
    /// whether the call may go on.
    fn check_ptr_launch(&mut self, e: &Expr, callee: Span, fty: TypeId, task: bool) -> bool {
        let launched = self.launched_call == Some(e.id);
        let ts = self.ty_str(fty);
        let d = match (task, launched) {
            (true, false) => Diagnostic::error(
                codes::TASK_CALLED_WITHOUT_LAUNCH,
                "a pointer to a `task` function is called without `launch`",
            )
            .with_primary(callee, format!("this has type `{ts}`"))
            .with_help("launch it: `launch[n] p(args);` (a task runs only as a task)"),
            (false, true) => Diagnostic::error(
                codes::LAUNCH_NOT_TASK,
                "a pointer to an ordinary function cannot be launched",
            )
            .with_primary(callee, format!("this has type `{ts}`, not a `task` pointer"))
            .with_help("launch a pointer of a `task` type (`typedef task void (*TaskFn)(...);`), or call this one without `launch`"),
            (true, true) if self.out.types.is_varying(fty) => Diagnostic::error(
                codes::VARYING_WHERE_UNIFORM_REQUIRED,
                "a `launch` through a varying function pointer",
            )
            .with_primary(callee, format!("this has type `{ts}`"))
            .with_note("every program instance takes part in one launch, so it must start one task function, as in ISPC")
            .with_help("launch through a `uniform` task pointer"),
            _ => return true,
        };
        self.emit(d);
        false
    }
}
