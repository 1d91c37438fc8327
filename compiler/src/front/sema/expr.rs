//! Expressions: types, name resolution, lvalues and the uniform/varying rules on them.
//!
//! [`Checker::check_expr`] records the type of every expression (before conversion) and
//! returns it. Consumers then record the implicit conversion they apply with
//! [`Checker::coerce`] (which reports the E04xx variability errors with a message that
//! fits the context) or [`Checker::rvalue`] (array decay). An expression that failed has
//! the error type, which converts silently, so one mistake gives one diagnostic.

use super::builtins::{BuiltinVar, BUILTIN_NAMES};
use super::conv::{self, ConvError, Cost};
use super::resolve::TypeCtx;
use super::types::{Prim, TypeId, TypeKind, Types, Variability};
use super::{Checker, ConstValue, DeclRef, FileName, FuncId, Res};
use crate::diag::{codes, suggest, Diagnostic};
use crate::front::ast::{self, BinaryOp, Expr, ExprKind, FloatSuffix, IntSuffix, UnaryOp};
use crate::front::intern::Symbol;
use crate::source::Span;
use cranelift_entity::EntityRef;

/// Where a value is being converted to a required type: decides the diagnostic.
#[derive(Clone, Copy, Debug)]
pub(super) enum Site {
    /// The right side of `=`; `via_ptr` when the left side is reached through a pointer.
    Assign { via_ptr: bool },
    /// The initializer of variable `name`.
    Init { name: Symbol },
    /// Argument `index` of a call to `func`.
    Arg { func: FuncId, index: usize },
    /// Argument `index` of a call through a function pointer.
    PtrArg { index: usize },
    /// A `return` value.
    Return,
    /// A `foreach` bound or other place the language requires a uniform value.
    Uniform(&'static str),
}

/// A binary operation whose operands have been checked: the expression, the operator,
/// and each operand with its type (after array decay).
#[derive(Clone, Copy)]
struct Operands<'e> {
    e: &'e Expr,
    op: BinaryOp,
    lhs: &'e Expr,
    lt: TypeId,
    rhs: &'e Expr,
    rt: TypeId,
}

/// An lvalue: the object it designates and how its address is computed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Place {
    /// The type of the object in memory (before a varying address makes the value varying).
    pub obj_ty: TypeId,
    /// Reached through a pointer (`*p`, `p[i]`, `p->m`).
    pub via_ptr: bool,
    /// The address differs per program instance (varying pointer or varying index).
    pub addr_varying: bool,
    /// The variable at the root, when not reached through a pointer.
    pub root: Option<DeclRef>,
    /// Whether the object is (part of) an element of soa storage.
    pub soa: Option<SoaPlace>,
}

/// An lvalue in soa storage ([`TypeKind::Soa`]): its members are spread over a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SoaPlace {
    /// A whole element of `soa<N>` storage (`pts[i]`, `*p`): its address is a pointer
    /// to the `soa<N>` block type.
    Element(u32),
    /// A member of an element, or a part of one (`pts[i].x`, `pts[i].a[2]`): it has
    /// no address of its own.
    Part,
}

impl Checker<'_> {
    /// Checks an expression, records and returns its type (before any conversion).
    pub(super) fn check_expr(&mut self, e: &Expr) -> TypeId {
        if !self.enter(e.span) {
            self.set_type(e, Types::ERROR);
            return Types::ERROR;
        }
        let ty = self.check_expr_kind(e);
        self.leave();
        self.set_type(e, ty);
        ty
    }

    fn check_expr_kind(&mut self, e: &Expr) -> TypeId {
        match &e.kind {
            ExprKind::Int { value, suffix } => {
                let p = int_literal_prim(*value, *suffix);
                self.out.types.prim(p, Variability::Uniform)
            }
            ExprKind::Float { suffix, .. } => {
                let p = match suffix {
                    FloatSuffix::D => Prim::Double,
                    FloatSuffix::F16 => Prim::Float16,
                    _ => Prim::Float,
                };
                self.out.types.prim(p, Variability::Uniform)
            }
            ExprKind::Bool(_) => self.out.types.prim(Prim::Bool, Variability::Uniform),
            ExprKind::Char(_) => self.out.types.prim(Prim::Int8, Variability::Uniform),
            ExprKind::Str(_) => {
                self.emit(
                    Diagnostic::error(
                        codes::STRING_NOT_ALLOWED,
                        "string literals are only allowed as the format of `print`",
                    )
                    .with_primary(e.span, "a string here")
                    .with_help(
                        "spmdc has no string type; use `print(\"...\", values)` to print text",
                    ),
                );
                Types::ERROR
            }
            ExprKind::Null => self.types().null(),
            ExprKind::Ident(id) => self.check_ident(e, *id),
            ExprKind::Unary { op, operand } => self.check_unary(e, *op, operand),
            ExprKind::Binary { op, lhs, rhs } => self.check_binary(e, *op, lhs, rhs),
            ExprKind::Assign { op, lhs, rhs } => self.check_assign(e, *op, lhs, rhs),
            ExprKind::Ternary { cond, then, else_ } => self.check_ternary(cond, then, else_),
            ExprKind::Cast { ty, expr } => self.check_cast(e, ty, expr),
            ExprKind::SizeofType(tn) => self.check_sizeof_type(e, tn),
            ExprKind::SizeofExpr(inner) => self.check_sizeof_expr(e, inner),
            ExprKind::Call {
                callee,
                args,
                targs,
            } => self.check_call(e, *callee, args, targs.as_deref()),
            ExprKind::CallPtr { callee, args } => self.check_call_expr(e, callee, args),
            ExprKind::Index { base, index } => self.check_index(e, base, index),
            ExprKind::Member { base, field, arrow } => self.check_member(e, base, *field, *arrow),
            ExprKind::New(n) => self.check_new(e, n),
            ExprKind::Error => Types::ERROR,
        }
    }

    // ------------------------------------------------------------ conversions

    /// An array used as a value decays to a uniform pointer to its first element.
    pub(super) fn rvalue(&mut self, e: &Expr, ty: TypeId) -> TypeId {
        match self.out.types.kind(ty) {
            TypeKind::Array(..)
                if self
                    .place_of(e, 0)
                    .is_some_and(|p| p.soa == Some(SoaPlace::Part)) =>
            {
                self.soa_part_address(
                    e,
                    "an array inside an soa element cannot decay to a pointer",
                );
                Types::ERROR
            }
            TypeKind::Array(elem, _) => {
                let p = self.types().pointer(elem, Variability::Uniform, false);
                self.set_conv(e, p);
                p
            }
            _ => ty,
        }
    }

    /// Is `e` the integer constant 0 (which converts to a null pointer)?
    pub(super) fn is_null_const(e: &Expr) -> bool {
        matches!(e.kind, ExprKind::Int { value: 0, .. })
    }

    /// Converts `e` (of type `from`) to `to`, recording the conversion, or reports why
    /// it cannot be converted, in terms of `site`. Returns whether it converted.
    pub(super) fn coerce(&mut self, e: &Expr, from: TypeId, to: TypeId, site: Site) -> bool {
        let from = self.resolve_pending_fn(e, to).unwrap_or(from);
        match conv::implicit_cost(&mut self.out.types, from, to, Self::is_null_const(e)) {
            Ok(cost) => {
                if from != to && !self.out.types.is_error(from) && !self.out.types.is_error(to) {
                    self.set_conv(e, to);
                    if cost >= Cost::Convert {
                        self.check_narrowing(e, from, to);
                    }
                }
                true
            }
            Err(ConvError::VaryingToUniform) => {
                self.varying_to_uniform(e, from, to, site);
                false
            }
            Err(ConvError::Incompatible) => {
                self.mismatched(e, from, to, site);
                false
            }
        }
    }

    /// W0005 for an implicit conversion that may lose range or precision.
    fn check_narrowing(&mut self, e: &Expr, from: TypeId, to: TypeId) {
        // Short vectors narrow when their elements do.
        let prim = |ty| {
            let t = &self.out.types;
            t.as_vector(ty).map(|v| v.0).or_else(|| t.as_prim(ty))
        };
        let (Some(f), Some(t)) = (prim(from), prim(to)) else {
            return;
        };
        if !conv::narrowing(f, t) {
            return;
        }
        if let Some(v) = self.eval_const(e) {
            if super::consteval::fits(v, t) {
                return;
            }
        }
        let (fs, ts) = (self.ty_str(from), self.ty_str(to));
        self.emit(
            Diagnostic::warning(
                codes::IMPLICIT_NARROWING,
                format!("implicit conversion from `{fs}` to `{ts}` may lose information"),
            )
            .with_primary(e.span, format!("converted to `{ts}` here"))
            .with_help(format!(
                "write a cast to show it is intended: `({}) ...`",
                match self.out.types.as_vector(to) {
                    Some((_, n)) => format!("{}<{n}>", t.name()),
                    None => t.name().to_string(),
                }
            )),
        );
    }

    fn mismatched(&mut self, e: &Expr, from: TypeId, to: TypeId, site: Site) {
        let (fs, ts) = (self.ty_str(from), self.ty_str(to));
        if self.is_soa_pointer(from) || self.is_soa_pointer(to) {
            self.soa_pointer_conversion(e, from, to);
            return;
        }
        if let (Some((_, n)), Some((_, m))) =
            (self.out.types.as_vector(from), self.out.types.as_vector(to))
        {
            if n != m {
                self.emit(
                    Diagnostic::error(
                        codes::VECTOR_LENGTH_MISMATCH,
                        format!("cannot convert `{fs}` to `{ts}`: the vectors have different lengths"),
                    )
                    .with_primary(e.span, format!("this has {n} element{}", plural(n)))
                    .with_note(format!("`{ts}` has {m} element{}", plural(m)))
                    .with_help("short vectors convert only to vectors of the same length; pick elements with a swizzle (`v.xy`) or build the vector with `{ ... }`"),
                );
                return;
            }
        }
        let code = if matches!(site, Site::Return) {
            codes::RETURN_MISMATCH
        } else {
            codes::MISMATCHED_TYPES
        };
        let mut d = Diagnostic::error(
            code,
            format!("mismatched types: expected `{ts}`, found `{fs}`"),
        )
        .with_primary(e.span, format!("this has type `{fs}`"));
        if let Site::Arg { func, index } = site {
            if let Some(p) = self.out.funcs[func].params.get(index) {
                d = d.with_secondary(p.span, "parameter declared here");
            }
        }
        let (fk, tk) = (self.out.types.kind(from), self.out.types.kind(to));
        let help = match (fk, tk) {
            (TypeKind::Prim(_), TypeKind::Enum(_)) | (TypeKind::Enum(_), TypeKind::Enum(_)) => {
                Some(format!("convert with a cast: `({ts})`"))
            }
            (TypeKind::Pointer(_), TypeKind::Pointer(_)) => {
                Some("pointer types differ; cast explicitly if this is intended".to_string())
            }
            (TypeKind::FnPtr(a), TypeKind::FnPtr(b))
                if self.out.types.sig_data(a).task != self.out.types.sig_data(b).task =>
            {
                Some(if self.out.types.sig_data(a).task {
                    "a `task` function is only launched: hold it in a pointer of a `task` type, `typedef task void (*TaskFn)(...);`".to_string()
                } else {
                    "a `task` pointer holds only `task` functions (which it launches); an ordinary function needs a pointer type without `task`".to_string()
                })
            }
            (TypeKind::FnPtr(_), TypeKind::FnPtr(_)) => Some(
                "a function pointer points only to functions of its exact signature: the parameter and return types must match".to_string(),
            ),
            (TypeKind::FnPtr(_), _) => Some(
                "this is a function (or a pointer to one): call it, `f(...)`, to use its result".to_string(),
            ),
            (_, TypeKind::FnPtr(_)) => Some(
                "a function pointer holds a function (`f` or `&f`), another pointer of its type, or `NULL`".to_string(),
            ),
            (TypeKind::Dim3(g), _) => {
                Some(format!("use one component: `{}.x`, `.y` or `.z`", g.name()))
            }
            _ => None,
        };
        if let Some(h) = help {
            d = d.with_help(h);
        }
        self.emit(d);
    }

    /// The E04xx family: a varying value where a uniform one is required.
    fn varying_to_uniform(&mut self, e: &Expr, from: TypeId, to: TypeId, site: Site) {
        let (fs, ts) = (self.ty_str(from), self.ty_str(to));
        let culprit = self.varying_culprit(e, 0);
        if matches!(site, Site::Init { .. } | Site::Assign { via_ptr: false }) {
            if let Some(index) = self.find_varying_index(e, 0) {
                self.emit(
                    Diagnostic::error(codes::VARYING_INDEX_IN_UNIFORM_CONTEXT, "a varying index gives a varying value, but a uniform one is required")
                        .with_primary(index, "this index is varying")
                        .with_secondary(e.span, format!("so this value is `{fs}`"))
                        .with_note(format!("the value is stored into `{ts}`, which holds one value for the whole gang"))
                        .with_help("make the variable varying (drop `uniform`), use a uniform index, or pick one value with `extract(v, lane)` or `reduce_max(v)`"),
                );
                return;
            }
        }
        let mut d = match site {
            Site::Init { name } if name == crate::front::intern::NEW_OBJECT => Diagnostic::error(
                codes::VARYING_TO_UNIFORM,
                "cannot initialize the one object of a `uniform new` with a varying value",
            )
            .with_primary(e.span, format!("this value is `{fs}`"))
            .with_help("allocate `varying` elements (`uniform new varying T(...)`), one object per program instance (`new T(...)`), or reduce the value to one for the gang (`reduce_add`, `extract(v, 0)`, ...)"),
            Site::Init { name } => Diagnostic::error(
                codes::VARYING_TO_UNIFORM,
                format!("cannot initialize uniform variable `{}` with a varying value", self.name(name)),
            )
            .with_primary(e.span, format!("this value is `{fs}`"))
            .with_help(format!(
                "declare `{}` without `uniform` to make it varying, or reduce the value to one for the gang (`reduce_add`, `extract(v, 0)`, ...)",
                self.name(name)
            )),
            Site::Assign { via_ptr: false } => Diagnostic::error(codes::VARYING_TO_UNIFORM, "cannot assign a varying value to a uniform variable")
                .with_primary(e.span, format!("this value is `{fs}`"))
                .with_note(format!("the target has type `{ts}`: one value for the whole gang"))
                .with_help("make the target varying, or reduce the value first (`reduce_add`, `extract(v, 0)`, ...)"),
            Site::Assign { via_ptr: true } => Diagnostic::error(codes::VARYING_THROUGH_UNIFORM_POINTER, "cannot store a varying value through a uniform pointer to uniform data")
                .with_primary(e.span, format!("this value is `{fs}`"))
                .with_note(format!("the location has type `{ts}`: one value for the whole gang"))
                .with_help("store a uniform value, index with a varying index (a scatter), or point at varying data (`varying T * uniform`)"),
            Site::Arg { func, index } => {
                let f = &self.out.funcs[func];
                let (fname, pspan) = (self.name(f.name), f.params.get(index).map(|p| p.span));
                let mut d = Diagnostic::error(codes::VARYING_ARG_TO_UNIFORM_PARAM, format!("varying argument passed to a uniform parameter of `{fname}`"))
                    .with_primary(e.span, format!("this argument is `{fs}`"))
                    .with_help("pass a uniform value (e.g. `extract(v, 0)` or `reduce_add(v)`), or add an overload that takes a varying parameter");
                if let Some(s) = pspan {
                    d = d.with_secondary(s, format!("parameter has type `{ts}`"));
                }
                d
            }
            Site::PtrArg { index } => Diagnostic::error(codes::VARYING_ARG_TO_UNIFORM_PARAM, "varying argument passed to a uniform parameter of a function pointer")
                .with_primary(e.span, format!("argument {} is `{fs}`, the parameter `{ts}`", index + 1))
                .with_help("pass a uniform value (e.g. `extract(v, 0)` or `reduce_add(v)`), or point at functions that take a varying parameter"),
            Site::Return => Diagnostic::error(codes::VARYING_RETURN_TO_UNIFORM, format!("returning a varying value from a function that returns `{ts}`"))
                .with_primary(e.span, format!("this value is `{fs}`"))
                .with_help("drop `uniform` from the return type to return a varying value, or reduce the value first (`reduce_add`, `extract`)"),
            Site::Uniform(what) => Diagnostic::error(codes::VARYING_WHERE_UNIFORM_REQUIRED, format!("{what} must be uniform"))
                .with_primary(e.span, format!("this value is `{fs}`"))
                .with_help("use a uniform value here (for example a `uniform` variable or `reduce_max(v)`)"),
        };
        if let Some(c) = culprit {
            if c != e.span {
                d = d.with_secondary(c, "varying because of this");
            }
        }
        self.emit(d);
    }

    /// The innermost name or call that makes `e` varying, for a secondary label.
    fn varying_culprit(&self, e: &Expr, depth: u32) -> Option<Span> {
        if depth > 32 || !self.out.types.is_varying(self.out.type_of(e.id)) {
            return None;
        }
        match &e.kind {
            ExprKind::Binary { lhs, rhs, .. } => self
                .varying_culprit(lhs, depth + 1)
                .or_else(|| self.varying_culprit(rhs, depth + 1)),
            ExprKind::Unary { operand, .. } => self.varying_culprit(operand, depth + 1),
            ExprKind::Cast { expr, .. } => self.varying_culprit(expr, depth + 1),
            ExprKind::Ternary { cond, then, else_ } => self
                .varying_culprit(cond, depth + 1)
                .or_else(|| self.varying_culprit(then, depth + 1))
                .or_else(|| self.varying_culprit(else_, depth + 1)),
            ExprKind::Index { base, index } => self
                .varying_culprit(index, depth + 1)
                .or_else(|| self.varying_culprit(base, depth + 1)),
            _ => Some(e.span),
        }
    }

    /// A varying index into uniform data inside `e` (the cause of E0401).
    fn find_varying_index(&self, e: &Expr, depth: u32) -> Option<Span> {
        if depth > 32 {
            return None;
        }
        let t = &self.out.types;
        match &e.kind {
            ExprKind::Index { base, index } => {
                let bt = self.out.type_of(base.id);
                let elem_uniform = match t.kind(bt) {
                    TypeKind::Array(elem, _) => !t.is_varying(elem),
                    TypeKind::Vector(..) => !t.is_varying(bt),
                    TypeKind::Pointer(p) => !t.is_varying(bt) && !t.is_varying(p),
                    _ => false,
                };
                if elem_uniform && t.is_varying(self.out.type_of(index.id)) {
                    return Some(index.span);
                }
                self.find_varying_index(base, depth + 1)
            }
            ExprKind::Binary { lhs, rhs, .. } => self
                .find_varying_index(lhs, depth + 1)
                .or_else(|| self.find_varying_index(rhs, depth + 1)),
            ExprKind::Unary { operand, .. } => self.find_varying_index(operand, depth + 1),
            ExprKind::Cast { expr, .. } => self.find_varying_index(expr, depth + 1),
            ExprKind::Member { base, .. } => self.find_varying_index(base, depth + 1),
            _ => None,
        }
    }

    /// Checks a condition and converts it to `bool` (E0311 if it cannot be).
    pub(super) fn check_cond(&mut self, e: &Expr) -> TypeId {
        let ty = self.check_expr(e);
        self.to_bool(e, ty, codes::NOT_A_CONDITION)
    }

    /// Converts an already-checked value to `bool` of its variability.
    fn to_bool(&mut self, e: &Expr, ty: TypeId, code: crate::diag::Code) -> TypeId {
        let ty = self.rvalue(e, ty);
        if self.out.types.is_error(ty) {
            return Types::ERROR;
        }
        let var = match self.out.types.var(ty) {
            Variability::Varying => Variability::Varying,
            _ => Variability::Uniform,
        };
        let b = self.out.types.prim(Prim::Bool, var);
        match self.out.types.kind(ty) {
            TypeKind::Prim(_)
            | TypeKind::Enum(_)
            | TypeKind::Pointer(_)
            | TypeKind::Null
            | TypeKind::FnPtr(_) => {
                if b != ty {
                    self.set_conv(e, b);
                }
                b
            }
            _ => {
                let tys = self.ty_str(ty);
                self.emit(
                    Diagnostic::error(code, format!("`{tys}` cannot be used as a condition"))
                        .with_primary(e.span, format!("this has type `{tys}`"))
                        .with_help("compare it with something to get a `bool`"),
                );
                Types::ERROR
            }
        }
    }

    // ------------------------------------------------------------ names

    fn check_ident(&mut self, e: &Expr, id: ast::Ident) -> TypeId {
        if let Some(ty) = self.check_template_value(e, id.name) {
            return ty;
        }
        if let Some(l) = self.scopes.lookup(id.name) {
            self.set_res(e, Res::Local(l));
            if let Some(u) = self.local_used.get_mut(l.index()) {
                *u = true;
            }
            return self.out.locals[l].ty;
        }
        match self.file_names.get(&id.name).copied() {
            Some(FileName::Global(g)) => {
                self.set_res(e, Res::Global(g));
                self.out.globals[g].ty
            }
            Some(FileName::EnumConst(en, i)) => {
                self.set_res(e, Res::EnumConst(en, i));
                self.types().enum_ty(en, Variability::Uniform)
            }
            Some(FileName::Builtin(BuiltinVar::Gpu(g))) => {
                self.set_res(e, Res::Error);
                self.emit(
                    Diagnostic::error(
                        codes::NOT_A_VALUE,
                        format!("`{}` is not a value by itself", g.name()),
                    )
                    .with_primary(id.span, "used without a component")
                    .with_help(format!(
                        "use one component: `{0}.x`, `{0}.y` or `{0}.z`",
                        g.name()
                    )),
                );
                Types::ERROR
            }
            Some(FileName::Builtin(v)) => {
                self.set_res(e, Res::BuiltinVar(v));
                self.builtin_var_type(v)
            }
            Some(FileName::Funcs) => self.function_designator(e, id),
            Some(FileName::Typedef(_) | FileName::Struct(_) | FileName::Enum(_)) => {
                self.set_res(e, Res::Error);
                self.emit(
                    Diagnostic::error(
                        codes::NOT_A_VALUE,
                        format!("type `{}` used as a value", self.name(id.name)),
                    )
                    .with_primary(id.span, "a type, not a value"),
                );
                Types::ERROR
            }
            None => {
                self.set_res(e, Res::Error);
                if !self.syntax_error_in_body() {
                    self.undeclared(id);
                }
                Types::ERROR
            }
        }
    }

    fn undeclared(&mut self, id: ast::Ident) {
        let name = self.name(id.name);
        let mut d = Diagnostic::error(
            codes::UNDECLARED_NAME,
            format!("cannot find `{name}` in this scope"),
        )
        .with_primary(id.span, "not declared");
        let interner = self.interner;
        let candidates: Vec<&str> = self
            .scopes
            .visible()
            .chain(
                self.file_names
                    .iter()
                    .filter(|(_, n)| {
                        !matches!(
                            n,
                            FileName::Typedef(_) | FileName::Struct(_) | FileName::Enum(_)
                        )
                    })
                    .map(|(s, _)| *s),
            )
            .map(|s| interner.resolve(s))
            .chain(BUILTIN_NAMES.iter().copied())
            .chain(self.options.stdlib_names.iter().copied())
            .collect();
        if let Some(best) = suggest::closest(name, candidates) {
            d = d.with_help(format!("did you mean `{best}`?"));
        }
        self.emit(d);
    }

    // ------------------------------------------------------------ operators

    fn check_unary(&mut self, e: &Expr, op: UnaryOp, operand: &Expr) -> TypeId {
        let t0 = self.check_expr(operand);
        if op == UnaryOp::AddrOf && self.pending_address_of(e, operand) {
            return Types::ERROR;
        }
        if self.out.types.is_error(t0) {
            return Types::ERROR;
        }
        if let Some(params) = Self::overloadable_unary(op) {
            if let Some(t) =
                self.overloaded_operator_call(e, op.symbol(), &[operand], &[t0], params)
            {
                return t;
            }
        }
        match op {
            UnaryOp::PreInc | UnaryOp::PreDec | UnaryOp::PostInc | UnaryOp::PostDec => {
                self.check_incdec(e, op, operand, t0)
            }
            UnaryOp::AddrOf if self.is_function_designator(operand) => {
                self.fn_ptr_unary(e, operand, t0)
            }
            UnaryOp::Deref if matches!(self.out.types.kind(t0), TypeKind::FnPtr(_)) => {
                self.fn_ptr_unary(e, operand, t0)
            }
            UnaryOp::AddrOf => self.check_addr_of(operand),
            UnaryOp::Deref => self.check_deref(operand, t0),
            UnaryOp::Not if self.out.types.as_vector(t0).is_some() => {
                self.vector_to_bool(operand, t0, codes::INVALID_UNARY_OPERAND)
            }
            UnaryOp::Not => self.to_bool(operand, t0, codes::INVALID_UNARY_OPERAND),
            UnaryOp::Neg | UnaryOp::Plus | UnaryOp::BitNot => {
                let t = self.rvalue(operand, t0);
                let var = self.out.types.var(t);
                let len = self.out.types.as_vector(t).map(|v| v.1);
                let p = match self.elem_prim(t) {
                    Some(Prim::Bool) if op != UnaryOp::BitNot => Some(Prim::Int32),
                    Some(p) if op != UnaryOp::BitNot || p.is_integer() => Some(p),
                    _ => None,
                };
                let Some(p) = p else {
                    self.bad_unary(op, operand, t);
                    return Types::ERROR;
                };
                let r = self.types().with_elem(p, len, var);
                if r != t {
                    self.set_conv(operand, r);
                }
                r
            }
        }
    }

    fn bad_unary(&mut self, op: UnaryOp, operand: &Expr, t: TypeId) {
        let ts = self.ty_str(t);
        let help = self.overload_help(op.symbol(), &[t]);
        let what = match op {
            UnaryOp::BitNot => "an integer",
            UnaryOp::Neg | UnaryOp::Plus => "a number",
            _ => "a number or a pointer",
        };
        let mut d = Diagnostic::error(
            codes::INVALID_UNARY_OPERAND,
            format!("cannot apply unary `{}` to `{ts}`", op.symbol()),
        )
        .with_primary(operand.span, format!("this has type `{ts}`"))
        .with_note(format!("`{}` needs {what}", op.symbol()));
        if let Some(help) = help {
            d = d.with_help(help);
        }
        self.emit(d);
    }

    fn check_incdec(&mut self, e: &Expr, op: UnaryOp, operand: &Expr, t: TypeId) -> TypeId {
        let ok = match self.out.types.kind(t) {
            TypeKind::Prim(p) | TypeKind::Vector(p, _) => p != Prim::Bool,
            TypeKind::Enum(_) => true,
            TypeKind::Pointer(p) => !self.out.types.is_void(p),
            _ => false,
        };
        if !ok {
            self.bad_unary(op, operand, t);
            return Types::ERROR;
        }
        if let Some(place) = self.check_store_target(operand, t) {
            self.check_uniform_store(e, t, place);
        }
        t
    }

    fn check_addr_of(&mut self, operand: &Expr) -> TypeId {
        let Some(place) = self.place_of(operand, 0) else {
            self.emit(
                Diagnostic::error(
                    codes::ADDRESS_OF_RVALUE,
                    "cannot take the address of this expression",
                )
                .with_primary(operand.span, "this value is not stored in memory")
                .with_help("store it in a variable first, then take the variable's address"),
            );
            return Types::ERROR;
        };
        let var = if place.addr_varying {
            Variability::Varying
        } else {
            Variability::Uniform
        };
        match place.soa {
            None => self.types().pointer(place.obj_ty, var, false),
            Some(SoaPlace::Element(width)) => {
                let d = self.out.types.get(place.obj_ty);
                let TypeKind::Struct(sid) = d.kind else {
                    return Types::ERROR;
                };
                let target = self.out.target;
                let block = self.types().soa(sid, width, target);
                let block = self.types().with_const(block, d.is_const);
                self.types().pointer(block, var, false)
            }
            Some(SoaPlace::Part) => {
                self.soa_part_address(
                    operand,
                    "cannot take the address of a part of an soa element",
                );
                Types::ERROR
            }
        }
    }

    /// Is `ty` a pointer to soa data, or an array of it (which decays to one)?
    fn is_soa_pointer(&self, ty: TypeId) -> bool {
        self.out.types.soa_elements(ty).is_some()
    }

    /// E0337: a conversion between a pointer to soa data and another pointer type.
    fn soa_pointer_conversion(&mut self, e: &Expr, from: TypeId, to: TypeId) {
        let (fs, ts) = (self.ty_str(from), self.ty_str(to));
        self.emit(
            Diagnostic::error(codes::SOA_CONVERSION, format!("cannot convert `{fs}` to `{ts}`"))
                .with_primary(e.span, format!("this has type `{fs}`"))
                .with_note("a pointer to soa data addresses one element inside a block; it converts only to a pointer to the same soa type")
                .with_help("copy the element into a struct (`S s = ptr[i];`) to work with it elsewhere"),
        );
    }

    /// E0336: an address of a member or part of an soa element is needed for `e`.
    pub(super) fn soa_part_address(&mut self, e: &Expr, message: &str) {
        self.emit(
            Diagnostic::error(codes::SOA_MEMBER_ADDRESS, message)
            .with_primary(e.span, "this is stored in soa layout, spread over its block")
            .with_note("the members of an soa element are not contiguous in memory, so no pointer addresses them")
            .with_help("copy the value into a variable first, or take the address of the whole element: `&pts[i]`"),
        );
    }

    fn check_deref(&mut self, operand: &Expr, t0: TypeId) -> TypeId {
        let t = self.rvalue(operand, t0);
        if let Some((sid, _)) = self.out.types.soa_elements(t) {
            let var = self.out.types.is_varying(t);
            return self.soa_element_type(t, sid, var);
        }
        match self.out.types.kind(t) {
            TypeKind::Pointer(p) if !self.out.types.is_void(p) => {
                if self.out.types.is_varying(t) {
                    self.types().with_var(p, Variability::Varying)
                } else {
                    p
                }
            }
            _ => {
                let ts = self.ty_str(t);
                self.emit(
                    Diagnostic::error(codes::DEREF_NON_POINTER, format!("cannot dereference a value of type `{ts}`"))
                        .with_primary(operand.span, format!("this has type `{ts}`"))
                        .with_help("only pointers to a complete type can be dereferenced (cast a `void *` first)"),
                );
                Types::ERROR
            }
        }
    }

    fn check_binary(&mut self, e: &Expr, op: BinaryOp, lhs: &Expr, rhs: &Expr) -> TypeId {
        match op {
            BinaryOp::LogicalAnd | BinaryOp::LogicalOr => {
                return self.check_logical(e, op, lhs, rhs)
            }
            BinaryOp::Comma => {
                self.check_expr(lhs);
                return self.check_expr(rhs);
            }
            _ => {}
        }
        let lt = self.check_expr(lhs);
        let rt = self.check_expr(rhs);
        if let Some(t) = self.overloaded_operator_call(e, op.symbol(), &[lhs, rhs], &[lt, rt], 2) {
            return t;
        }
        self.binary_types(e, op, lhs, lt, rhs, rt)
    }

    /// The type of `lhs op rhs` given the operands' types; records operand conversions.
    fn binary_types(
        &mut self,
        e: &Expr,
        op: BinaryOp,
        lhs: &Expr,
        lt: TypeId,
        rhs: &Expr,
        rt: TypeId,
    ) -> TypeId {
        let lt = self.rvalue(lhs, lt);
        let rt = self.rvalue(rhs, rt);
        let t = &self.out.types;
        if t.is_error(lt) || t.is_error(rt) {
            return Types::ERROR;
        }
        let o = Operands {
            e,
            op,
            lhs,
            lt,
            rhs,
            rt,
        };
        let is_ptr = |k| matches!(k, TypeKind::Pointer(_) | TypeKind::Null);
        let (lk, rk) = (t.kind(lt), t.kind(rt));
        let is_fn = |k| matches!(k, TypeKind::FnPtr(_));
        if matches!(op, BinaryOp::Eq | BinaryOp::Ne) && (is_fn(lk) || is_fn(rk)) {
            return self.fn_ptr_compare(o);
        }
        let Ok(len) = self.operands_len(o) else {
            return Types::ERROR;
        };
        let t = &self.out.types;
        if len.is_none() && op.is_comparison() && (is_ptr(lk) || is_ptr(rk)) {
            return self.pointer_compare(o);
        }
        if len.is_none() && (is_ptr(lk) || is_ptr(rk)) {
            return self.pointer_arith(o);
        }
        let var = t.var(lt).join(t.var(rt));
        // Short vectors work element by element; a scalar operand fills every element.
        let (Some(lp), Some(rp)) = (self.elem_prim(lt), self.elem_prim(rt)) else {
            self.bad_binary(o);
            return Types::ERROR;
        };
        if matches!(op, BinaryOp::Shl | BinaryOp::Shr) {
            return self.shift_types(op, lhs, lp, rhs, rp, var, len);
        }
        let bitwise = matches!(op, BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor);
        let mut common = conv::common_prim(lp, rp);
        if common == Prim::Bool && !bitwise && !matches!(op, BinaryOp::Eq | BinaryOp::Ne) {
            common = Prim::Int32;
        }
        let needs_int = bitwise || op == BinaryOp::Rem;
        if needs_int && !(common.is_integer() || (bitwise && common == Prim::Bool)) {
            self.bad_binary(o);
            return Types::ERROR;
        }
        let opty = self.types().with_elem(common, len, var);
        self.set_conv(lhs, opty);
        self.set_conv(rhs, opty);
        if matches!(op, BinaryOp::Div | BinaryOp::Rem) && common.is_integer() {
            self.check_div_zero(op, rhs);
        }
        if op.is_comparison() {
            self.types().with_elem(Prim::Bool, len, var)
        } else {
            opty
        }
    }

    /// The basic type a value computes in: its own, an enum's `int`, or a short
    /// vector's element type.
    pub(super) fn elem_prim(&self, ty: TypeId) -> Option<Prim> {
        match self.out.types.kind(ty) {
            TypeKind::Vector(p, _) => Some(p),
            _ => self.out.types.arith_prim(ty),
        }
    }

    /// The length of the short vector operands of `o` (`None` when both are scalars),
    /// or `Err` after E0331 when two vectors differ in length.
    fn operands_len(&mut self, o: Operands) -> Result<Option<u32>, ()> {
        let t = &self.out.types;
        match (t.as_vector(o.lt), t.as_vector(o.rt)) {
            (Some((_, n)), Some((_, m))) if n != m => {
                self.vector_lengths_differ(o, n, m);
                Err(())
            }
            (Some((_, n)), _) | (_, Some((_, n))) => Ok(Some(n)),
            _ => Ok(None),
        }
    }

    /// E0331: two vector operands of different lengths.
    fn vector_lengths_differ(&mut self, o: Operands, n: u32, m: u32) {
        let (ls, rs) = (self.ty_str(o.lt), self.ty_str(o.rt));
        self.emit(
            Diagnostic::error(
                codes::VECTOR_LENGTH_MISMATCH,
                format!("cannot apply `{}` to vectors of different lengths", o.op.symbol()),
            )
            .with_primary(o.e.span, format!("{n} elements against {m}"))
            .with_secondary(o.lhs.span, format!("`{ls}`"))
            .with_secondary(o.rhs.span, format!("`{rs}`"))
            .with_help("operators on short vectors work element by element, so the lengths must agree; pick elements with a swizzle (`v.xy`)"),
        );
    }

    /// A short vector converted element by element to `bool` (for `!`, `&&`, `||`,
    /// and the condition of `?:`): the `bool` vector of its length and variability.
    fn vector_to_bool(&mut self, e: &Expr, ty: TypeId, code: crate::diag::Code) -> TypeId {
        let Some((_, n)) = self.out.types.as_vector(ty) else {
            return self.to_bool(e, ty, code);
        };
        let var = match self.out.types.var(ty) {
            Variability::Varying => Variability::Varying,
            _ => Variability::Uniform,
        };
        let b = self.types().vector(Prim::Bool, n, var, false);
        if b != ty {
            self.set_conv(e, b);
        }
        b
    }

    #[allow(clippy::too_many_arguments)]
    fn shift_types(
        &mut self,
        op: BinaryOp,
        lhs: &Expr,
        lp: Prim,
        rhs: &Expr,
        rp: Prim,
        var: Variability,
        len: Option<u32>,
    ) -> TypeId {
        if !lp.is_integer() || !rp.is_integer() {
            let bad = if lp.is_integer() { rhs } else { lhs };
            let bt = self.out.type_of(bad.id);
            let bs = self.ty_str(bt);
            self.emit(
                Diagnostic::error(
                    codes::NON_INTEGER,
                    format!("`{}` needs integer operands", op.symbol()),
                )
                .with_primary(bad.span, format!("this has type `{bs}`"))
                .with_help("cast the operand to an integer type"),
            );
            return Types::ERROR;
        }
        let r = self.types().with_elem(lp, len, var);
        self.set_conv(lhs, r);
        let count = self.types().with_elem(rp, len, var);
        self.set_conv(rhs, count);
        r
    }

    fn check_div_zero(&mut self, op: BinaryOp, rhs: &Expr) {
        if let Some(ConstValue::Int(0)) = self.eval_const(rhs) {
            let what = if op == BinaryOp::Div {
                "division"
            } else {
                "remainder"
            };
            self.emit(
                Diagnostic::error(codes::DIVISION_BY_ZERO, format!("integer {what} by zero"))
                    .with_primary(rhs.span, "this is zero"),
            );
        }
    }

    fn bad_binary(&mut self, o: Operands) {
        let Operands {
            e,
            op,
            lhs,
            lt,
            rhs,
            rt,
        } = o;
        let (ls, rs) = (self.ty_str(lt), self.ty_str(rt));
        let mut d = Diagnostic::error(
            codes::INVALID_BINARY_OPERANDS,
            format!("cannot apply `{}` to `{ls}` and `{rs}`", op.symbol()),
        )
        .with_primary(e.span, "invalid operands")
        .with_secondary(lhs.span, format!("`{ls}`"))
        .with_secondary(rhs.span, format!("`{rs}`"));
        if matches!(
            op,
            BinaryOp::Rem | BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor
        ) {
            d = d.with_note(format!("`{}` needs integer operands", op.symbol()));
        }
        if let Some(help) = self.overload_help(op.symbol(), &[lt, rt]) {
            d = d.with_help(help);
        }
        self.emit(d);
    }

    fn check_logical(&mut self, e: &Expr, op: BinaryOp, lhs: &Expr, rhs: &Expr) -> TypeId {
        let lt = self.check_expr(lhs);
        if self.is_struct(lt) {
            // An overloaded `&&`/`||` takes both operands, evaluated (as in C++).
            let rt = self.check_expr(rhs);
            if let Some(t) =
                self.overloaded_operator_call(e, op.symbol(), &[lhs, rhs], &[lt, rt], 2)
            {
                return t;
            }
            self.to_bool(lhs, lt, codes::INVALID_BINARY_OPERANDS);
            return Types::ERROR;
        }
        if self.out.types.as_vector(lt).is_some() {
            let rt = self.check_expr(rhs);
            return self.vector_logical(e, op, lhs, lt, rhs, rt);
        }
        let lb = self.to_bool(lhs, lt, codes::INVALID_BINARY_OPERANDS);
        // With a varying left side, the right side runs under a narrowed mask.
        let varying = self.out.types.is_varying(lb);
        if varying {
            self.enter_varying_cond();
        }
        let rt = self.check_expr(rhs);
        if self.out.types.as_vector(rt).is_some() {
            if varying {
                self.leave_varying_cond();
            }
            if self.out.types.is_error(lb) {
                return Types::ERROR;
            }
            return self.vector_logical(e, op, lhs, lt, rhs, rt);
        }
        let rb = self.to_bool(rhs, rt, codes::INVALID_BINARY_OPERANDS);
        if varying {
            self.leave_varying_cond();
        }
        if self.out.types.is_error(lb) || self.out.types.is_error(rb) {
            return Types::ERROR;
        }
        let var = self.out.types.var(lb).join(self.out.types.var(rb));
        self.out.types.prim(Prim::Bool, var)
    }

    /// `&&` and `||` with a short vector operand: element by element, both operands
    /// evaluated (no short circuit, as in ISPC), the result a `bool` vector.
    fn vector_logical(
        &mut self,
        e: &Expr,
        op: BinaryOp,
        lhs: &Expr,
        lt: TypeId,
        rhs: &Expr,
        rt: TypeId,
    ) -> TypeId {
        let lt = self.rvalue(lhs, lt);
        let rt = self.rvalue(rhs, rt);
        if self.out.types.is_error(lt) || self.out.types.is_error(rt) {
            return Types::ERROR;
        }
        let o = Operands {
            e,
            op,
            lhs,
            lt,
            rhs,
            rt,
        };
        let Ok(Some(len)) = self.operands_len(o) else {
            return Types::ERROR;
        };
        if self.elem_prim(lt).is_none() || self.elem_prim(rt).is_none() {
            self.bad_binary(o);
            return Types::ERROR;
        }
        let var = self.out.types.var(lt).join(self.out.types.var(rt));
        let b = self.types().vector(Prim::Bool, len, var, false);
        self.set_conv(lhs, b);
        self.set_conv(rhs, b);
        b
    }

    /// Two pointers, or a pointer and a null constant, compared.
    fn pointer_compare(&mut self, o: Operands) -> TypeId {
        let Operands {
            lhs, lt, rhs, rt, ..
        } = o;
        let var = self.out.types.var(lt).join(self.out.types.var(rt));
        let ok = match (self.out.types.kind(lt), self.out.types.kind(rt)) {
            (TypeKind::Pointer(p), TypeKind::Pointer(q)) => self.pointees_compatible(p, q),
            (TypeKind::Pointer(_) | TypeKind::Null, TypeKind::Null)
            | (TypeKind::Null, TypeKind::Pointer(_)) => true,
            (TypeKind::Pointer(_), _) => Self::is_null_const(rhs),
            (_, TypeKind::Pointer(_)) => Self::is_null_const(lhs),
            _ => false,
        };
        if !ok {
            self.bad_binary(o);
            return Types::ERROR;
        }
        for (side, t) in [(lhs, lt), (rhs, rt)] {
            if self.out.types.pointee(t).is_some() {
                let v = self.types().with_var(t, var);
                if v != t {
                    self.set_conv(side, v);
                }
            }
        }
        self.out.types.prim(Prim::Bool, var)
    }

    /// `==` and `!=` with a function pointer: against one of the same signature, `NULL`
    /// or 0. Both sides convert to the (joined) function pointer type.
    fn fn_ptr_compare(&mut self, o: Operands) -> TypeId {
        let Operands {
            lhs, lt, rhs, rt, ..
        } = o;
        let t = &self.out.types;
        let var = t.var(lt).join(t.var(rt));
        let (lk, rk) = (t.kind(lt), t.kind(rt));
        let fn_ty = match (lk, rk) {
            (TypeKind::FnPtr(a), TypeKind::FnPtr(b)) if a == b => Some(lt),
            (TypeKind::FnPtr(_), TypeKind::Null) => Some(lt),
            (TypeKind::Null, TypeKind::FnPtr(_)) => Some(rt),
            (TypeKind::FnPtr(_), _) if Self::is_null_const(rhs) => Some(lt),
            (_, TypeKind::FnPtr(_)) if Self::is_null_const(lhs) => Some(rt),
            _ => None,
        };
        let Some(fn_ty) = fn_ty else {
            let both = matches!((lk, rk), (TypeKind::FnPtr(_), TypeKind::FnPtr(_)));
            if !both {
                self.bad_binary(o);
                return Types::ERROR;
            }
            let (ls, rs) = (self.ty_str(lt), self.ty_str(rt));
            let task = |k| match k {
                TypeKind::FnPtr(s) => self.out.types.sig_data(s).task,
                _ => false,
            };
            let help = if task(lk) != task(rk) {
                "one points to `task` functions, the other to ordinary ones: compare pointers of one function pointer type, or with `NULL`"
            } else {
                "compare pointers of one function pointer type, or with `NULL`"
            };
            self.emit(
                Diagnostic::error(
                    codes::INVALID_BINARY_OPERANDS,
                    "function pointers of different signatures are compared",
                )
                .with_primary(o.e.span, "these can never point to the same function")
                .with_secondary(lhs.span, format!("`{ls}`"))
                .with_secondary(rhs.span, format!("`{rs}`"))
                .with_help(help),
            );
            return Types::ERROR;
        };
        let joined = self.types().with_var(fn_ty, var);
        let joined = self.types().with_const(joined, false);
        for (side, t) in [(lhs, lt), (rhs, rt)] {
            if t != joined {
                self.set_conv(side, joined);
            }
        }
        self.out.types.prim(Prim::Bool, var)
    }

    /// Pointees that may be compared or subtracted: equal up to `const`, or one `void`.
    fn pointees_compatible(&self, p: TypeId, q: TypeId) -> bool {
        let t = &self.out.types;
        let (pd, qd) = (t.get(p), t.get(q));
        p == q || (pd.kind == qd.kind && pd.var == qd.var) || t.is_void(p) || t.is_void(q)
    }

    /// `p + n`, `n + p`, `p - n` and `p - q`.
    fn pointer_arith(&mut self, o: Operands) -> TypeId {
        let Operands {
            e,
            op,
            lhs,
            lt,
            rhs,
            rt,
        } = o;
        let t = &self.out.types;
        let var = t.var(lt).join(t.var(rt));
        let (lp, rp) = (t.pointee(lt), t.pointee(rt));
        let void_ptr = lp.is_some_and(|p| t.is_void(p)) || rp.is_some_and(|p| t.is_void(p));
        let result = match (op, lp, rp) {
            _ if void_ptr => None,
            (BinaryOp::Sub, Some(p), Some(q)) if self.pointees_compatible(p, q) => {
                Some(self.out.types.prim(Prim::Int64, var))
            }
            (BinaryOp::Add | BinaryOp::Sub, Some(_), None) if t.is_integral(rt) => {
                let r = self.types().with_var(lt, var);
                self.set_conv(lhs, r);
                Some(r)
            }
            (BinaryOp::Add, None, Some(_)) if t.is_integral(lt) => {
                let r = self.types().with_var(rt, var);
                self.set_conv(rhs, r);
                Some(r)
            }
            _ => None,
        };
        match result {
            Some(r) => r,
            None => {
                let (ls, rs) = (self.ty_str(lt), self.ty_str(rt));
                let mut d = Diagnostic::error(codes::INVALID_POINTER_ARITH, format!("invalid pointer arithmetic: `{ls}` {} `{rs}`", op.symbol()))
                    .with_primary(e.span, "not defined on these operands")
                    .with_note("a pointer may be offset by an integer, and two pointers to the same type subtracted");
                if void_ptr {
                    d = d.with_help("cast the `void *` to a pointer to a concrete type first");
                }
                self.emit(d);
                Types::ERROR
            }
        }
    }

    // ------------------------------------------------------------ assignment

    fn check_assign(&mut self, e: &Expr, op: Option<BinaryOp>, lhs: &Expr, rhs: &Expr) -> TypeId {
        let lt = self.check_store_lhs(lhs, op.is_none());
        let rt = self.check_expr(rhs);
        if self.is_struct(lt) {
            let sym = op.map_or_else(|| "=".to_string(), |b| format!("{}=", b.symbol()));
            if let Some(t) = self.overloaded_operator_call(e, &sym, &[lhs, rhs], &[lt, rt], 2) {
                return t;
            }
        }
        let Some(place) = self.check_store_target(lhs, lt) else {
            return Types::ERROR;
        };
        if self.out.types.is_error(lt) {
            return Types::ERROR;
        }
        let site = Site::Assign {
            via_ptr: place.via_ptr && !place.addr_varying,
        };
        match op {
            None => {
                let rt = self.rvalue(rhs, rt);
                self.coerce(rhs, rt, lt, site);
            }
            Some(bop) => {
                let r = self.binary_types(e, bop, lhs, lt, rhs, rt);
                // `s += v` with a scalar `s` and a vector `v`: the vector result cannot
                // be stored back.
                if self.out.types.as_vector(r).is_some()
                    && self.out.types.as_vector(lt).is_none()
                    && !self.out.types.is_error(lt)
                {
                    self.mismatched(rhs, r, lt, site);
                    return Types::ERROR;
                }
                if !self.out.types.is_error(r) {
                    self.out.compound.insert(e.id, r);
                    if self.out.types.is_varying(r) && !self.out.types.is_varying(lt) {
                        self.varying_to_uniform(rhs, r, lt, site);
                    }
                }
            }
        }
        self.check_uniform_store(e, lt, place);
        lt
    }

    /// Checks the left side of an assignment. A plain `x = ...` does not read `x`, so it
    /// does not count as a use for W0002 (unless `x` is a reference: the store is to
    /// an object that lives on).
    fn check_store_lhs(&mut self, lhs: &Expr, plain: bool) -> TypeId {
        let before = match (&lhs.kind, plain) {
            (ExprKind::Ident(id), true) => self
                .scopes
                .lookup(id.name)
                .filter(|&l| !self.out.locals[l].by_ref)
                .map(|l| (l, self.local_used.get(l.index()).copied())),
            _ => None,
        };
        let lt = self.check_expr(lhs);
        if let Some((l, Some(was))) = before {
            self.local_used[l.index()] = was;
        }
        lt
    }

    /// Checks that `lhs` can be stored to: an lvalue (E0303), not an array, not const
    /// (E0304). Returns its place, or None after reporting.
    pub(super) fn check_store_target(&mut self, lhs: &Expr, lt: TypeId) -> Option<Place> {
        if self.out.types.is_error(lt) {
            return None;
        }
        let Some(place) = self.place_of(lhs, 0) else {
            let swizzle = self.out.swizzle(lhs.id).is_some_and(|s| s.len() > 1);
            let label = match self.out.res(lhs.id) {
                Res::EnumConst(..) => "an enumerator is a constant",
                Res::BuiltinVar(_) => "a built-in value cannot be assigned",
                _ if swizzle => {
                    "a swizzle of several elements is a new vector, not a place to store to"
                }
                _ => "not a variable, array element, member or dereferenced pointer",
            };
            let mut d =
                Diagnostic::error(codes::NOT_ASSIGNABLE, "cannot assign to this expression")
                    .with_primary(lhs.span, label);
            if swizzle {
                d = d.with_help(
                    "assign the elements one at a time (`v.x = a.x; v.y = a.y;`), as in ISPC",
                );
            }
            self.emit(d);
            return None;
        };
        if let TypeKind::Array(..) = self.out.types.kind(lt) {
            self.emit(
                Diagnostic::error(
                    codes::NOT_ASSIGNABLE,
                    "arrays cannot be assigned as a whole",
                )
                .with_primary(lhs.span, format!("this is an array, `{}`", self.ty_str(lt)))
                .with_help("assign the elements one at a time"),
            );
            return None;
        }
        if self.out.types.get(lt).is_const {
            let mut d =
                Diagnostic::error(codes::ASSIGN_TO_CONST, "cannot assign to a `const` object")
                    .with_primary(lhs.span, format!("this has type `{}`", self.ty_str(lt)));
            if let Some(DeclRef::Local(l)) = place.root {
                let local = &self.out.locals[l];
                let label = match local.kind {
                    super::LocalKind::ForeachIndex(_)
                    | super::LocalKind::ForeachActive
                    | super::LocalKind::ForeachUnique => {
                        "iteration variables of `foreach` loops are const"
                    }
                    _ => "declared `const` here",
                };
                d = d.with_secondary(local.span, label);
            }
            self.emit(d);
            return None;
        }
        Some(place)
    }

    /// W0004: a store to a uniform variable declared outside the varying `if`/loop
    /// the store is in: whether it happens depends on whether any instance took the path.
    fn check_uniform_store(&mut self, e: &Expr, lt: TypeId, place: Place) {
        if self.out.types.is_varying(lt) || place.addr_varying {
            return;
        }
        let Some(depth) = self.varying_cond_depth() else {
            return;
        };
        let decl_depth = match place.root {
            Some(DeclRef::Local(l)) => self.local_depth.get(l.index()).copied().unwrap_or(0),
            Some(DeclRef::Global(_)) => 0,
            None => return,
        };
        if depth > decl_depth {
            self.emit(
                Diagnostic::warning(codes::UNIFORM_STORE_UNDER_VARYING_CONTROL, "store to a uniform variable under varying control flow")
                    .with_primary(e.span, "this store happens if any program instance reaches it")
                    .with_note("the condition around it is varying, so instances may disagree about whether the store should happen")
                    .with_help("make the variable varying, or compute the value outside the varying `if`/loop"),
            );
        }
    }

    /// The place an lvalue expression designates, or None if it is not an lvalue.
    pub(super) fn place_of(&mut self, e: &Expr, depth: u32) -> Option<Place> {
        if depth > 256 {
            return None;
        }
        match &e.kind {
            ExprKind::Ident(_) => {
                let (root, obj_ty) = match self.out.res(e.id) {
                    // A reference is the object it refers to, at an address (uniform)
                    // it holds: like `*p`.
                    Res::Local(l) if self.out.locals[l].by_ref => {
                        return Some(Self::referred_place(self.out.locals[l].ty));
                    }
                    Res::Local(l) => (DeclRef::Local(l), self.out.locals[l].ty),
                    Res::Global(g) => (DeclRef::Global(g), self.out.globals[g].ty),
                    _ => return None,
                };
                Some(Place {
                    obj_ty,
                    via_ptr: false,
                    addr_varying: false,
                    root: Some(root),
                    soa: None,
                })
            }
            ExprKind::Index { base, index } => {
                let bt = self.out.type_of(base.id);
                let iv = self.out.types.is_varying(self.out.type_of(index.id));
                if let Some((_, width)) = self.out.types.soa_elements(bt) {
                    // An element of an soa array or of the soa data a pointer points to.
                    let array = match self.out.types.kind(bt) {
                        TypeKind::Array(..) => Some(self.place_of(base, depth + 1)?),
                        _ => None,
                    };
                    return Some(Place {
                        obj_ty: self.out.type_of(e.id),
                        via_ptr: array.is_none_or(|p| p.via_ptr),
                        addr_varying: array.is_some_and(|p| p.addr_varying)
                            || self.out.types.is_varying(bt)
                            || iv,
                        root: array.and_then(|p| p.root),
                        soa: Some(SoaPlace::Element(width)),
                    });
                }
                match self.out.types.kind(bt) {
                    TypeKind::Array(..) | TypeKind::Vector(..) => {
                        let p = self.place_of(base, depth + 1)?;
                        let obj_ty = match self.out.types.kind(p.obj_ty) {
                            TypeKind::Array(elem, _) => elem,
                            _ => self.types().vector_elem(p.obj_ty),
                        };
                        Some(Place {
                            obj_ty,
                            addr_varying: p.addr_varying || iv,
                            soa: p.soa.map(|_| SoaPlace::Part),
                            ..p
                        })
                    }
                    TypeKind::Pointer(pt) => Some(Place {
                        obj_ty: pt,
                        via_ptr: true,
                        addr_varying: self.out.types.is_varying(bt) || iv,
                        root: None,
                        soa: None,
                    }),
                    _ => None,
                }
            }
            ExprKind::Member { base, arrow, .. } if self.out.swizzles.contains_key(&e.id) => {
                // One element of a short vector is an lvalue; a swizzle of several is not.
                if self.out.swizzles[&e.id].len() != 1 {
                    return None;
                }
                if *arrow {
                    let bt = self.out.converted_type(base.id);
                    let pt = self.out.types.pointee(bt)?;
                    let obj_ty = self.types().vector_elem(pt);
                    Some(Place {
                        obj_ty,
                        via_ptr: true,
                        addr_varying: self.out.types.is_varying(bt),
                        root: None,
                        soa: None,
                    })
                } else {
                    let p = self.place_of(base, depth + 1)?;
                    let obj_ty = self.types().vector_elem(p.obj_ty);
                    Some(Place {
                        obj_ty,
                        soa: p.soa.map(|_| SoaPlace::Part),
                        ..p
                    })
                }
            }
            ExprKind::Member { base, arrow, .. } => {
                let idx = *self.out.members.get(&e.id)? as usize;
                if *arrow {
                    let bt = self.out.converted_type(base.id);
                    let pt = self.out.types.pointee(bt)?;
                    let soa = self.out.types.as_soa(pt).map(|_| SoaPlace::Part);
                    let obj_ty = match soa {
                        Some(_) => self.out.type_of(e.id),
                        None => self.types().member_type(pt, idx),
                    };
                    Some(Place {
                        obj_ty,
                        via_ptr: true,
                        addr_varying: self.out.types.is_varying(bt),
                        root: None,
                        soa,
                    })
                } else {
                    let p = self.place_of(base, depth + 1)?;
                    let obj_ty = self.types().member_type(p.obj_ty, idx);
                    Some(Place {
                        obj_ty,
                        soa: p.soa.map(|_| SoaPlace::Part),
                        ..p
                    })
                }
            }
            ExprKind::Unary {
                op: UnaryOp::Deref,
                operand,
            } => {
                let pt = self.out.converted_type(operand.id);
                let obj_ty = self.out.types.pointee(pt)?;
                let soa = self
                    .out
                    .types
                    .as_soa(obj_ty)
                    .map(|(_, n)| SoaPlace::Element(n));
                Some(Place {
                    obj_ty: if soa.is_some() {
                        self.out.type_of(e.id)
                    } else {
                        obj_ty
                    },
                    via_ptr: true,
                    addr_varying: self.out.types.is_varying(pt),
                    root: None,
                    soa,
                })
            }
            ExprKind::Call { .. } if self.out.returns_reference(e.id) => {
                Some(Self::referred_place(self.out.type_of(e.id)))
            }
            _ if self.out.operator_returns_reference(e.id) => {
                Some(Self::referred_place(self.out.type_of(e.id)))
            }
            _ => None,
        }
    }

    /// The place a reference refers to.
    fn referred_place(obj_ty: TypeId) -> Place {
        Place {
            obj_ty,
            via_ptr: true,
            addr_varying: false,
            root: None,
            soa: None,
        }
    }

    // ------------------------------------------------------------ other expressions

    fn check_ternary(&mut self, cond: &Expr, then: &Expr, else_: &Expr) -> TypeId {
        let ct0 = self.check_expr(cond);
        // A short vector condition selects element by element (ISPC evaluates both
        // sides then, with no mask).
        let cond_len = self.out.types.as_vector(ct0).map(|v| v.1);
        let ct = match cond_len {
            Some(_) => self.vector_to_bool(cond, ct0, codes::NOT_A_CONDITION),
            None => self.to_bool(cond, ct0, codes::NOT_A_CONDITION),
        };
        let varying = self.out.types.is_varying(ct);
        if varying {
            self.enter_varying_cond();
        }
        let tt = self.check_expr(then);
        let tt = self.rvalue(then, tt);
        let et = self.check_expr(else_);
        let et = self.rvalue(else_, et);
        if varying {
            self.leave_varying_cond();
        }
        // An overloaded function's name opposite a function pointer takes the overload
        // of that pointer's signature.
        let tt = self.resolve_pending_fn(then, et).unwrap_or(tt);
        let et = self.resolve_pending_fn(else_, tt).unwrap_or(et);
        let t = &self.out.types;
        if t.is_error(ct) || t.is_error(tt) || t.is_error(et) {
            return Types::ERROR;
        }
        let var = t.var(ct).join(t.var(tt)).join(t.var(et));
        let (tl, el) = (t.as_vector(tt).map(|v| v.1), t.as_vector(et).map(|v| v.1));
        if tl.is_some() || el.is_some() || cond_len.is_some() {
            return self.vector_ternary(cond, ct, then, tt, else_, et, var);
        }
        let result = match (t.kind(tt), t.kind(et)) {
            (TypeKind::Enum(a), TypeKind::Enum(b)) if a == b => Some(self.types().enum_ty(a, var)),
            (TypeKind::Prim(_) | TypeKind::Enum(_), TypeKind::Prim(_) | TypeKind::Enum(_)) => {
                let (a, b) = (t.arith_prim(tt), t.arith_prim(et));
                a.zip(b).map(|(a, b)| t.prim(conv::common_prim(a, b), var))
            }
            (TypeKind::Pointer(p), TypeKind::Pointer(q)) if self.pointees_compatible(p, q) => {
                Some(self.types().with_var(tt, var))
            }
            (TypeKind::Pointer(_), TypeKind::Null) => Some(self.types().with_var(tt, var)),
            (TypeKind::Null, TypeKind::Pointer(_)) => Some(self.types().with_var(et, var)),
            (TypeKind::Pointer(_), _) if Self::is_null_const(else_) => {
                Some(self.types().with_var(tt, var))
            }
            (_, TypeKind::Pointer(_)) if Self::is_null_const(then) => {
                Some(self.types().with_var(et, var))
            }
            (TypeKind::Struct(a), TypeKind::Struct(b)) if a == b => {
                Some(self.types().with_var(tt, var))
            }
            (TypeKind::FnPtr(a), TypeKind::FnPtr(b)) if a == b => {
                Some(self.types().with_var(tt, var))
            }
            (TypeKind::FnPtr(_), TypeKind::Null) => Some(self.types().with_var(tt, var)),
            (TypeKind::Null, TypeKind::FnPtr(_)) => Some(self.types().with_var(et, var)),
            (TypeKind::FnPtr(_), _) if Self::is_null_const(else_) => {
                Some(self.types().with_var(tt, var))
            }
            (_, TypeKind::FnPtr(_)) if Self::is_null_const(then) => {
                Some(self.types().with_var(et, var))
            }
            (TypeKind::Void, TypeKind::Void) => Some(Types::VOID),
            (TypeKind::Null, TypeKind::Null) => Some(tt),
            _ => None,
        };
        let Some(r) = result else {
            let (ts, es) = (self.ty_str(tt), self.ty_str(et));
            self.emit(
                Diagnostic::error(
                    codes::MISMATCHED_TYPES,
                    format!("the branches of `?:` have incompatible types `{ts}` and `{es}`"),
                )
                .with_primary(then.span, format!("`{ts}`"))
                .with_secondary(else_.span, format!("`{es}`")),
            );
            return Types::ERROR;
        };
        if r != tt {
            self.set_conv(then, r);
        }
        if r != et {
            self.set_conv(else_, r);
        }
        r
    }

    /// `?:` where the condition or a branch is a short vector: the branches convert to
    /// one vector type (of the more general element type; a scalar fills every
    /// element), and every length present must agree.
    #[allow(clippy::too_many_arguments)]
    fn vector_ternary(
        &mut self,
        cond: &Expr,
        ct: TypeId,
        then: &Expr,
        tt: TypeId,
        else_: &Expr,
        et: TypeId,
        var: Variability,
    ) -> TypeId {
        let t = &self.out.types;
        let lens = [
            (cond, t.as_vector(ct).map(|v| v.1)),
            (then, t.as_vector(tt).map(|v| v.1)),
            (else_, t.as_vector(et).map(|v| v.1)),
        ];
        let mut len: Option<(u32, &Expr)> = None;
        for (side, l) in lens {
            let Some(l) = l else { continue };
            match len {
                None => len = Some((l, side)),
                Some((n, first)) if n != l => {
                    self.emit(
                        Diagnostic::error(
                            codes::VECTOR_LENGTH_MISMATCH,
                            "the operands of `?:` are vectors of different lengths",
                        )
                        .with_primary(side.span, format!("this has {l} element{}", plural(l)))
                        .with_secondary(first.span, format!("this has {n} element{}", plural(n)))
                        .with_help("a vector `?:` selects element by element, so every vector in it must have the same length"),
                    );
                    return Types::ERROR;
                }
                _ => {}
            }
        }
        let Some((n, _)) = len else {
            return Types::ERROR;
        };
        let (Some(a), Some(b)) = (self.elem_prim(tt), self.elem_prim(et)) else {
            let (ts, es) = (self.ty_str(tt), self.ty_str(et));
            self.emit(
                Diagnostic::error(
                    codes::MISMATCHED_TYPES,
                    format!("the branches of `?:` have incompatible types `{ts}` and `{es}`"),
                )
                .with_primary(then.span, format!("`{ts}`"))
                .with_secondary(else_.span, format!("`{es}`")),
            );
            return Types::ERROR;
        };
        let r = self.types().vector(conv::common_prim(a, b), n, var, false);
        for (side, st) in [(then, tt), (else_, et)] {
            if r != st {
                self.set_conv(side, r);
            }
        }
        r
    }

    fn check_cast(&mut self, e: &Expr, tn: &ast::TypeName, inner: &Expr) -> TypeId {
        let from = self.check_expr(inner);
        let from = self.rvalue(inner, from);
        let to = self.resolve_type_name(tn, TypeCtx::Cast);
        if self.out.types.is_error(to) || self.out.types.is_error(from) {
            return Types::ERROR;
        }
        // A cast without variability keeps the operand's (ISPC).
        let fv = match self.out.types.var(from) {
            Variability::Varying => Variability::Varying,
            _ => Variability::Uniform,
        };
        let to = self.types().bind(to, fv);
        if self.out.types.is_void(to) {
            return Types::VOID;
        }
        if fv == Variability::Varying && self.out.types.var(to) == Variability::Uniform {
            let (fs, ts) = (self.ty_str(from), self.ty_str(to));
            self.emit(
                Diagnostic::error(codes::INVALID_CAST, format!("cannot cast from varying `{fs}` to uniform `{ts}`"))
                    .with_primary(e.span, "a cast cannot make a varying value uniform")
                    .with_help("pick one value for the gang with `extract(v, lane)`, or combine them with `reduce_add(v)`, `reduce_max(v)`, ..."),
            );
            return Types::ERROR;
        }
        if let (Some((_, n)), Some((_, m))) =
            (self.out.types.as_vector(from), self.out.types.as_vector(to))
        {
            if n != m {
                self.mismatched(inner, from, to, Site::Uniform("a cast"));
                return Types::ERROR;
            }
        }
        let soa_cast = self.is_soa_pointer(from) || self.is_soa_pointer(to);
        if soa_cast && (self.out.types.soa_elements(from) != self.out.types.soa_elements(to)) {
            self.soa_pointer_conversion(inner, from, to);
            return Types::ERROR;
        }
        if !self.cast_allowed(inner, from, to) {
            let (fs, ts) = (self.ty_str(from), self.ty_str(to));
            let mut d = Diagnostic::error(
                codes::INVALID_CAST,
                format!("invalid cast from `{fs}` to `{ts}`"),
            )
            .with_primary(e.span, "this cast is not allowed");
            if self.out.types.pointee(from).is_some() || self.out.types.pointee(to).is_some() {
                d = d.with_help("pointers convert only to other pointers and to/from 64-bit integers (`int64`, `uint64`) or the pointer-sized `intptr_t`, `uintptr_t`");
            }
            self.emit(d);
            return Types::ERROR;
        }
        to
    }

    /// Explicit conversions: arithmetic types among themselves (and enums), pointers
    /// among themselves and to/from 64-bit integers and integers of the target's
    /// pointer width (`intptr_t`), a struct to itself.
    fn cast_allowed(&self, inner: &Expr, from: TypeId, to: TypeId) -> bool {
        let t = &self.out.types;
        let narrow_pointers = self.out.target.pointer_size == 4;
        let wide_int = |ty: TypeId| match t.as_prim(ty) {
            Some(Prim::Int64 | Prim::UInt64) => true,
            Some(Prim::Int32 | Prim::UInt32) => narrow_pointers,
            _ => false,
        };
        match (t.kind(from), t.kind(to)) {
            (TypeKind::Prim(_) | TypeKind::Enum(_), TypeKind::Prim(_) | TypeKind::Enum(_)) => true,
            (TypeKind::Pointer(_) | TypeKind::Null, TypeKind::Pointer(_)) => true,
            (TypeKind::Pointer(_), TypeKind::Prim(_)) => wide_int(to) || to == from,
            (TypeKind::Prim(_), TypeKind::Pointer(_)) => {
                wide_int(from) || Self::is_null_const(inner)
            }
            (TypeKind::Struct(a), TypeKind::Struct(b)) => a == b,
            (TypeKind::Vector(_, n), TypeKind::Vector(_, m)) => n == m,
            (TypeKind::Prim(_) | TypeKind::Enum(_), TypeKind::Vector(..)) => true,
            _ => false,
        }
    }

    fn sizeof_result(&mut self, e: &Expr, ty: TypeId) -> TypeId {
        let size = self.types_layout_size(ty);
        self.set_const(e, ConstValue::Int(i128::from(size)));
        self.out.types.prim(Prim::UInt64, Variability::Uniform)
    }

    fn types_layout_size(&self, ty: TypeId) -> u32 {
        self.out.types.layout(ty, self.out.target).size
    }

    fn check_sizeof_type(&mut self, e: &Expr, tn: &ast::TypeName) -> TypeId {
        let ty = self.resolve_type_name(tn, TypeCtx::Sizeof);
        let ty = self.finish_object_type(ty);
        if self.out.types.is_error(ty) {
            return Types::ERROR;
        }
        if self.out.types.is_void(ty) {
            self.emit(
                Diagnostic::error(codes::VOID_OBJECT, "`sizeof(void)` is not defined")
                    .with_primary(e.span, "`void` has no size"),
            );
            return Types::ERROR;
        }
        if !self.require_complete(ty, tn.span) {
            return Types::ERROR;
        }
        self.sizeof_result(e, ty)
    }

    fn check_sizeof_expr(&mut self, e: &Expr, inner: &Expr) -> TypeId {
        let ty = self.check_expr(inner);
        if self.out.types.is_error(ty) {
            return Types::ERROR;
        }
        if !self.require_complete(ty, inner.span) {
            return Types::ERROR;
        }
        self.sizeof_result(e, ty)
    }

    /// ISPC converts a floating-point array index or `switch` value to `int`, as a cast
    /// would (truncating toward zero): records that conversion of `e` (of type `ty`) and
    /// gives the `int` type, or `None` when `ty` is not floating point.
    pub(super) fn float_as_int(&mut self, e: &Expr, ty: TypeId) -> Option<TypeId> {
        if !self.out.types.as_prim(ty).is_some_and(Prim::is_float) {
            return None;
        }
        let int = self.out.types.prim(Prim::Int32, self.out.types.var(ty));
        self.set_conv(e, int);
        Some(int)
    }

    fn check_index(&mut self, e: &Expr, base: &Expr, index: &Expr) -> TypeId {
        let bt = self.check_expr(base);
        let it = self.check_expr(index);
        if self.out.types.is_error(bt) {
            return Types::ERROR;
        }
        let mut iv = false;
        if !self.out.types.is_error(it) {
            if let Some(int) = self.float_as_int(index, it) {
                iv = self.out.types.is_varying(int);
            } else if !self.out.types.is_integral(it) {
                let its = self.ty_str(it);
                self.emit(
                    Diagnostic::error(codes::NON_INTEGER, "array index is not an integer")
                        .with_primary(index.span, format!("this has type `{its}`"))
                        .with_help("convert the index with a cast, e.g. `(int)`"),
                );
            } else {
                iv = self.out.types.is_varying(it);
            }
        }
        if let Some((sid, _)) = self.out.types.soa_elements(bt) {
            let var = iv || self.out.types.is_varying(bt);
            return self.soa_element_type(bt, sid, var);
        }
        match self.out.types.kind(bt) {
            TypeKind::Array(elem, _) => {
                if iv {
                    self.check_varying_struct_index(e, elem, index);
                    self.types().with_var(elem, Variability::Varying)
                } else {
                    elem
                }
            }
            TypeKind::Vector(_, n) => {
                if let Some(k) = self.eval_const(index).and_then(|v| v.as_int()) {
                    if k < 0 || k >= i128::from(n) {
                        let bs = self.ty_str(bt);
                        self.emit(
                            Diagnostic::error(
                                codes::INVALID_VECTOR_ELEMENT,
                                format!("index {k} is out of range for `{bs}`"),
                            )
                            .with_primary(index.span, format!("`{bs}` has elements 0 to {}", n - 1))
                            .with_secondary(base.span, format!("this has type `{bs}`"))
                            .with_help("index a short vector from 0 to its length minus one"),
                        );
                        return Types::ERROR;
                    }
                }
                let elem = self.types().vector_elem(bt);
                if iv {
                    self.types().with_var(elem, Variability::Varying)
                } else {
                    elem
                }
            }
            TypeKind::Pointer(p) if !self.out.types.is_void(p) => {
                if iv || self.out.types.is_varying(bt) {
                    if iv {
                        self.check_varying_struct_index(e, p, index);
                    }
                    self.types().with_var(p, Variability::Varying)
                } else {
                    p
                }
            }
            _ => {
                let bs = self.ty_str(bt);
                let mut d = Diagnostic::error(
                    codes::NOT_INDEXABLE,
                    format!("cannot index a value of type `{bs}`"),
                )
                .with_primary(base.span, format!("this has type `{bs}`"))
                .with_secondary(e.span, "indexed here");
                if self.out.types.pointee(bt).is_some() {
                    d = d.with_help("cast the `void *` to a pointer to a concrete type first");
                } else {
                    d = d.with_note("only arrays, pointers and short vectors can be indexed");
                }
                self.emit(d);
                Types::ERROR
            }
        }
    }

    /// The type of one element of the soa data an array or pointer of type `holder`
    /// holds: the struct, uniform or varying as the index or pointer is (ISPC's rule:
    /// the element is reached as from a uniform or varying pointer).
    fn soa_element_type(&mut self, holder: TypeId, sid: super::StructId, varying: bool) -> TypeId {
        let var = if varying {
            Variability::Varying
        } else {
            Variability::Uniform
        };
        let block = match self.out.types.kind(holder) {
            TypeKind::Pointer(p) | TypeKind::Array(p, _) => p,
            _ => holder,
        };
        let is_const = self.out.types.get(block).is_const;
        self.types().struct_ty(sid, var, is_const)
    }

    /// E0401: loading a uniform struct with a member bound `uniform` through a varying
    /// index: the varying result would need one value of that member per instance.
    /// Reading one member through it is fine (ISPC gathers it, as through a varying
    /// pointer), so `e` is remembered as a varying address and a member access about to
    /// read through it ([`Self::member_base`]) waits for the whole struct to be used.
    fn check_varying_struct_index(&mut self, e: &Expr, elem: TypeId, index: &Expr) {
        let d = self.out.types.get(elem);
        let TypeKind::Struct(sid) = d.kind else {
            return;
        };
        if d.var != Variability::Uniform {
            return;
        }
        self.varying_addr_structs.insert(e.id);
        if self.member_base == Some(e.id) {
            return;
        }
        let info = &self.out.types.structs[sid];
        let bound = info.fields.iter().find(|f| {
            self.out.types.var(f.ty) == Variability::Uniform
                && self.out.types.pointee(f.ty).is_none()
        });
        if let Some(f) = bound {
            let (fname, fspan, sname) = (self.name(f.name), f.span, self.name(info.name));
            self.emit(
                Diagnostic::error(codes::VARYING_INDEX_IN_UNIFORM_CONTEXT, format!("cannot index an array of `uniform {sname}` with a varying index"))
                    .with_primary(index.span, "this index is varying")
                    .with_secondary(fspan, format!("member `{fname}` is declared `uniform`, so a varying `{sname}` still has only one"))
                    .with_help("leave the member's variability unbound (no `uniform`), or use a uniform index"),
            );
        }
    }

    fn check_member(&mut self, e: &Expr, base: &Expr, field: ast::Ident, arrow: bool) -> TypeId {
        if let ExprKind::Ident(id) = &base.kind {
            if self.scopes.lookup(id.name).is_none() {
                if let Some(FileName::Builtin(BuiltinVar::Gpu(g))) =
                    self.file_names.get(&id.name).copied()
                {
                    return self.check_gpu_member(e, base, g, field, arrow);
                }
            }
        }
        let outer_base = self.member_base.replace(base.id);
        let bt = self.check_expr(base);
        self.member_base = outer_base;
        if self.out.types.is_error(bt) {
            return Types::ERROR;
        }
        let bt = if arrow { self.rvalue(base, bt) } else { bt };
        let through_varying_addr = !arrow && self.varying_addr_structs.contains(&base.id);
        let t = &self.out.types;
        let vector_pointee = t
            .pointee(bt)
            .filter(|&p| matches!(t.kind(p), TypeKind::Vector(..)));
        match (arrow, t.kind(bt), vector_pointee) {
            (false, TypeKind::Vector(..), _) => {
                return self.check_swizzle(e, base, bt, field, false)
            }
            (true, _, Some(p)) => {
                let varying_ptr = t.is_varying(bt);
                return self.check_swizzle(e, base, p, field, varying_ptr);
            }
            (false, _, Some(_)) => {
                self.wrong_member_op(base, bt, field, "`.` on a pointer", "->");
                return Types::ERROR;
            }
            (true, TypeKind::Vector(..), _) => {
                self.wrong_member_op(
                    base,
                    bt,
                    field,
                    "`->` on a short vector that is not a pointer",
                    ".",
                );
                return Types::ERROR;
            }
            _ => {}
        }
        let struct_pointee = t
            .pointee(bt)
            .filter(|&p| matches!(t.kind(p), TypeKind::Struct(_)));
        if let (true, Some((sid, _))) = (arrow, t.soa_elements(bt)) {
            let var = t.is_varying(bt);
            let sty = self.soa_element_type(bt, sid, var);
            return self.member_of(e, base, sty, field, false);
        }
        if let TypeKind::Soa(_, n) = t.kind(bt) {
            let bs = self.ty_str(bt);
            self.emit(
                Diagnostic::error(
                    codes::SOA_CONVERSION,
                    format!("`{bs}` is a whole block of {n} elements, not one element"),
                )
                .with_primary(base.span, format!("this has type `{bs}`"))
                .with_secondary(field.span, "member access here")
                .with_help(
                    "reach an element through an soa array or pointer: `pts[i].x`, `(&block)[i].x`",
                ),
            );
            return Types::ERROR;
        }
        let (sty, varying_ptr) = match (arrow, t.kind(bt), struct_pointee) {
            (false, TypeKind::Struct(_), _) if through_varying_addr => {
                (self.types().with_var(bt, Variability::Uniform), true)
            }
            (false, TypeKind::Struct(_), _) => (bt, false),
            (true, _, Some(p)) => (p, t.is_varying(bt)),
            (false, _, Some(_)) => {
                self.wrong_member_op(base, bt, field, "`.` on a pointer", "->");
                return Types::ERROR;
            }
            (true, TypeKind::Struct(_), _) => {
                self.wrong_member_op(
                    base,
                    bt,
                    field,
                    "`->` on a struct that is not a pointer",
                    ".",
                );
                return Types::ERROR;
            }
            _ => {
                let bs = self.ty_str(bt);
                self.emit(
                    Diagnostic::error(codes::NOT_A_STRUCT, format!("`{bs}` has no members"))
                        .with_primary(base.span, format!("this has type `{bs}`"))
                        .with_secondary(field.span, "member access here")
                        .with_note("only structs and short vectors (`float<3>`) have members"),
                );
                return Types::ERROR;
            }
        };
        self.member_of(e, base, sty, field, varying_ptr)
    }

    /// Member `field` of a struct of type `sty` (read through a varying address when
    /// `varying_ptr`).
    fn member_of(
        &mut self,
        e: &Expr,
        base: &Expr,
        sty: TypeId,
        field: ast::Ident,
        varying_ptr: bool,
    ) -> TypeId {
        if !self.require_complete(sty, base.span) {
            return Types::ERROR;
        }
        let TypeKind::Struct(sid) = self.out.types.kind(sty) else {
            return Types::ERROR;
        };
        let Some(idx) = self.out.types.structs[sid].field_index(field.name) else {
            self.no_such_member(sid, field);
            return Types::ERROR;
        };
        self.out.members.insert(e.id, idx as u32);
        let mt = self.types().member_type(sty, idx);
        if !varying_ptr {
            return mt;
        }
        if self.out.types.var(mt) == Variability::Uniform
            && matches!(self.out.types.kind(mt), TypeKind::Struct(_))
        {
            // `a[i].inner` is itself a uniform struct at a varying address.
            self.varying_addr_structs.insert(e.id);
        }
        self.types().with_var(mt, Variability::Varying)
    }

    /// `v.x`, `v.zyx`, `p->y`: elements of a short vector of type `vty` by letter. One
    /// letter gives the element (an lvalue when `v` is one), several a new vector of
    /// the named elements in order.
    fn check_swizzle(
        &mut self,
        e: &Expr,
        base: &Expr,
        vty: TypeId,
        field: ast::Ident,
        varying_ptr: bool,
    ) -> TypeId {
        let Some((p, n)) = self.out.types.as_vector(vty) else {
            return Types::ERROR;
        };
        let name = self.name(field.name);
        let mut idx = smallvec::SmallVec::<[u8; 4]>::new();
        for (at, c) in name.char_indices() {
            let letter = crate::source::Span::new(
                field.span.file,
                field.span.start + at as u32,
                field.span.start + (at + c.len_utf8()) as u32,
            );
            let vs = self.ty_str(vty);
            match swizzle_index(c) {
                None => {
                    self.emit(
                        Diagnostic::error(
                            codes::INVALID_VECTOR_ELEMENT,
                            format!("`{c}` does not name an element of a short vector"),
                        )
                        .with_primary(letter, "not an element letter")
                        .with_secondary(base.span, format!("this has type `{vs}`"))
                        .with_help("name elements with `x`, `y`, `z`, `w` (or `r`, `g`, `b`, `a`; `u`, `v`), and others with `[i]`"),
                    );
                    return Types::ERROR;
                }
                Some(i) if u32::from(i) >= n => {
                    self.emit(
                        Diagnostic::error(
                            codes::INVALID_VECTOR_ELEMENT,
                            format!("`{vs}` has no element `{c}`"),
                        )
                        .with_primary(letter, format!("`{c}` names element {i}, past the end"))
                        .with_secondary(base.span, format!("this has {n} element{}", plural(n)))
                        .with_help(format!(
                            "use {} for this vector",
                            ["`x`", "`x` or `y`", "`x`, `y` or `z`"][(n as usize).clamp(1, 3) - 1]
                        )),
                    );
                    return Types::ERROR;
                }
                Some(i) => idx.push(i),
            }
        }
        if idx.len() > super::resolve::MAX_VECTOR_LEN as usize {
            let max = super::resolve::MAX_VECTOR_LEN;
            self.emit(
                Diagnostic::error(
                    codes::INVALID_VECTOR_ELEMENT,
                    format!("a swizzle of {} elements", idx.len()),
                )
                .with_primary(
                    field.span,
                    format!("a swizzle makes a vector of at most {max} elements"),
                )
                .with_help("build the vector from shorter swizzles, element by element"),
            );
            return Types::ERROR;
        }
        if idx.is_empty() {
            return Types::ERROR;
        }
        let k = idx.len() as u32;
        self.out.swizzles.insert(e.id, idx);
        let var = if varying_ptr {
            Variability::Varying
        } else {
            self.out.types.var(vty)
        };
        if k == 1 {
            let elem = self.types().vector_elem(vty);
            self.types().with_var(elem, var)
        } else {
            self.types().vector(p, k, var, false)
        }
    }

    fn wrong_member_op(
        &mut self,
        base: &Expr,
        bt: TypeId,
        field: ast::Ident,
        what: &str,
        use_op: &str,
    ) {
        let bs = self.ty_str(bt);
        self.emit(
            Diagnostic::error(codes::WRONG_MEMBER_OPERATOR, what.to_string())
                .with_primary(base.span, format!("this has type `{bs}`"))
                .with_help(format!("use `{use_op}{}`", self.name(field.name))),
        );
    }

    fn no_such_member(&mut self, sid: super::StructId, field: ast::Ident) {
        let info = &self.out.types.structs[sid];
        let (sname, fname) = (self.name(info.name), self.name(field.name));
        let names: Vec<&str> = info
            .fields
            .iter()
            .map(|f| self.interner.resolve(f.name))
            .collect();
        let mut d = Diagnostic::error(
            codes::NO_SUCH_MEMBER,
            format!("struct `{sname}` has no member `{fname}`"),
        )
        .with_primary(field.span, "unknown member")
        .with_secondary(info.span, format!("`{sname}` defined here"));
        if let Some(best) = suggest::closest(fname, names.iter().copied()) {
            d = d.with_help(format!("did you mean `{best}`?"));
        } else if !names.is_empty() {
            d = d.with_note(format!("its members are: {}", names.join(", ")));
        }
        self.emit(d);
    }

    /// `threadIdx.x` and friends.
    fn check_gpu_member(
        &mut self,
        e: &Expr,
        base: &Expr,
        g: super::GpuVar,
        field: ast::Ident,
        arrow: bool,
    ) -> TypeId {
        let dim = self.types().dim3(g, g.variability());
        self.set_type(base, dim);
        self.set_res(base, Res::BuiltinVar(BuiltinVar::Gpu(g)));
        let axis = self.syms.axis(field.name);
        let Some(axis) = axis.filter(|_| !arrow) else {
            self.emit(
                Diagnostic::error(
                    codes::NO_SUCH_MEMBER,
                    format!("`{}` has no member `{}`", g.name(), self.name(field.name)),
                )
                .with_primary(field.span, "unknown member")
                .with_help(format!("use `{0}.x`, `{0}.y` or `{0}.z`", g.name())),
            );
            return Types::ERROR;
        };
        let v = BuiltinVar::GpuAxis(g, axis);
        self.set_res(e, Res::BuiltinVar(v));
        self.builtin_var_type(v)
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The element a swizzle letter names: ISPC's `x`/`r`/`u`, `y`/`g`/`v`, `z`/`b` and
/// `w`/`a`.
fn swizzle_index(c: char) -> Option<u8> {
    Some(match c {
        'x' | 'r' | 'u' => 0,
        'y' | 'g' | 'v' => 1,
        'z' | 'b' => 2,
        'w' | 'a' => 3,
        _ => return None,
    })
}

/// The type of an integer literal, as ISPC types it: `int` if it fits, else `uint32`,
/// else `int64`, else `uint64`; `u` makes it unsigned, `ll` 64-bit (one `l` does not).
fn int_literal_prim(value: u64, suffix: IntSuffix) -> Prim {
    match (suffix.unsigned, suffix.long) {
        (false, false) if value <= i32::MAX as u64 => Prim::Int32,
        (false, false) if value <= u64::from(u32::MAX) => Prim::UInt32,
        (false, _) if value <= i64::MAX as u64 => Prim::Int64,
        (true, false) if value <= u64::from(u32::MAX) => Prim::UInt32,
        _ => Prim::UInt64,
    }
}
