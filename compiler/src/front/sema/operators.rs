//! Operators overloaded for structs (ISPC's `operator*`, `operator==`, `operator+=`...):
//! the declarations of operator functions, and the expressions that call them.
//!
//! A function named `operator<op>` overloads `op`. An operator expression with a struct
//! operand is checked as a call of the overload set `operator<op>` with the operands as
//! arguments, by the same overload resolution as any call: a `struct S &` parameter and
//! a `struct S` one compete by ISPC's conversion costs, so an operand that is itself a
//! reference prefers the reference overload. The call is recorded on the operator's
//! expression (its [`Res::Func`] and [`Checked::operator_call`]), and lowering calls
//! the function there. As in C++:
//! - a struct operand with no overload declared is the built-in operator's error;
//! - a plain `=` of structs with no `operator=` copies, and an initializer never calls
//!   `operator=`;
//! - overloaded `&&` and `||` evaluate both operands, without short-circuit;
//! - postfix `s++` calls the `operator++` with a second, `int`, parameter, prefix `++s`
//!   the one without. Sema gives that parameter the default 0, so a postfix call passes
//!   it as any default argument.
//!
//! [`Checked::operator_call`]: super::Checked::operator_call

use super::types::{Prim, TypeId, TypeKind, Types};
use super::{Checker, ConstValue, FnFlags, ParamInfo};
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{self, Expr, UnaryOp};
use crate::front::intern::{operator_symbol, overloaded_operator};
use smallvec::SmallVec;

/// How many parameters an operator function may take.
fn allowed_arity(op: &str) -> &'static [usize] {
    match op {
        // Unary minus, or binary.
        "-" => &[1, 2],
        // Prefix, or postfix with its `int` parameter.
        "++" | "--" => &[1, 2],
        "!" | "~" => &[1],
        _ => &[2],
    }
}

impl Checker<'_> {
    /// Checks the declaration of an operator function (E0219): its parameter count, a
    /// struct among its parameters, and no `export` or `task`. Gives the `int`
    /// parameter of a postfix `++`/`--` its default.
    pub(super) fn check_operator_declaration(
        &mut self,
        f: &ast::Function,
        flags: FnFlags,
        params: &mut [ParamInfo],
    ) {
        let Some((op, _)) = overloaded_operator(f.name.name) else {
            return;
        };
        let arity = allowed_arity(op);
        if !arity.contains(&params.len()) {
            let want = match arity {
                [1, 2] if op == "-" => "one parameter (unary minus) or two".to_string(),
                [1, 2] => "one parameter (prefix) or two, the second an `int` (postfix)".into(),
                [1] => "one parameter".into(),
                _ => "two parameters".into(),
            };
            self.bad_operator_declaration(
                f,
                format!("`operator{op}` takes {want}, not {}", params.len()),
                "an operator function takes its operands as its parameters",
            );
            return;
        }
        if !params.iter().any(|p| self.is_struct(p.ty)) {
            self.bad_operator_declaration(
                f,
                format!("`operator{op}` has no struct parameter"),
                "operators are overloaded for structs: take a `struct` (or a reference to one) as an operand",
            );
            return;
        }
        if flags.export || flags.task {
            self.bad_operator_declaration(
                f,
                format!("`operator{op}` cannot be `export` or `task`"),
                "an operator is called by expressions in the program, not launched: remove the qualifier",
            );
        }
        if matches!(op, "++" | "--") && params.len() == 2 {
            self.postfix_parameter(f, op, &mut params[1]);
        }
    }

    /// The second parameter of a postfix `++`/`--` only tells it from the prefix one:
    /// an `int` (E0219 otherwise), passed as 0.
    fn postfix_parameter(&mut self, f: &ast::Function, op: &str, p: &mut ParamInfo) {
        let is_int = !p.by_ref && matches!(self.out.types.kind(p.ty), TypeKind::Prim(Prim::Int32));
        if !is_int {
            let ts = self.ty_str(p.ty);
            self.bad_operator_declaration(
                f,
                format!("the second parameter of postfix `operator{op}` is `{ts}`, not `int`"),
                "postfix `++`/`--` take `int` as their second parameter, which is always 0",
            );
            return;
        }
        p.default.get_or_insert(ConstValue::Int(0));
    }

    fn bad_operator_declaration(&mut self, f: &ast::Function, msg: String, help: &str) {
        self.emit(
            Diagnostic::error(codes::INVALID_OPERATOR_FUNCTION, msg)
                .with_primary(f.name.span, "declared here")
                .with_help(help.to_string()),
        );
    }

    /// For an operator the built-in rules reject on a struct operand: how to overload
    /// it (None for other operands).
    pub(super) fn overload_help(&self, op: &str, tys: &[TypeId]) -> Option<String> {
        let sid = tys.iter().find_map(|&t| match self.out.types.kind(t) {
            TypeKind::Struct(sid) => Some(sid),
            _ => None,
        })?;
        let ts = self.name(self.out.types.structs[sid].name);
        let sig = match tys.len() {
            1 => format!("{ts} operator{op}({ts} a)"),
            _ => format!("{ts} operator{op}({ts} a, {ts} b)"),
        };
        Some(format!(
            "to use `{op}` on `{ts}`, declare an operator function before this use, e.g. `{sig}`"
        ))
    }

    /// Does `f` overload an operator?
    pub(super) fn is_operator_function(&self, f: super::FuncId) -> bool {
        overloaded_operator(self.out.funcs[f].name).is_some()
    }

    pub(super) fn is_struct(&self, t: TypeId) -> bool {
        matches!(self.out.types.kind(t), TypeKind::Struct(_))
    }

    /// The number of parameters of the operator function a unary operator calls, if
    /// it can be overloaded (postfix `++`/`--` take a second, `int`, one).
    pub(super) fn overloadable_unary(op: UnaryOp) -> Option<usize> {
        use UnaryOp::*;
        match op {
            Neg | Not | BitNot | PreInc | PreDec => Some(1),
            PostInc | PostDec => Some(2),
            Plus | AddrOf | Deref => None,
        }
    }

    /// `operands` (checked, of types `tys`) as the arguments of a call of `operator<op>`
    /// that takes `params` parameters, when some operand is a struct and such an
    /// operator is declared; the call is recorded on `e`, and its result type
    /// returned. None where the built-in operator applies (or reports its error).
    pub(super) fn overloaded_operator_call(
        &mut self,
        e: &Expr,
        op: &str,
        operands: &[&Expr],
        tys: &[TypeId],
        params: usize,
    ) -> Option<TypeId> {
        if !tys.iter().any(|&t| self.is_struct(t)) {
            return None;
        }
        let sym = operator_symbol(op)?;
        if !self.overloads.contains_key(&sym) {
            return None;
        }
        let cands: SmallVec<[_; 2]> = self
            .visible_overloads(sym)
            .into_iter()
            .filter(|&f| self.out.funcs[f].params.len() == params)
            .collect();
        if cands.is_empty() {
            return None;
        }
        let callee = ast::Ident {
            name: sym,
            span: e.span,
        };
        if tys.iter().any(|&t| self.out.types.is_error(t)) {
            self.set_res(e, super::Res::Error);
            return Some(Types::ERROR);
        }
        let t = self.call_selected(e, callee, operands, tys, &cands);
        self.out.operator_calls.insert(e.id);
        Some(t)
    }
}
