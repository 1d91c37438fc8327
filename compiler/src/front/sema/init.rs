//! Initializers: an expression converted to the declared type, or a brace list that
//! follows the shape of an array, struct or short vector (and completes `int a[] =
//! {...}`), or gives a varying scalar one value per program instance (ISPC's rule).
//!
//! File-scope and `static` initializers must be constant (E0315); their constant
//! leaves are recorded in [`super::Checked::const_value`] for lowering.

use super::expr::Site;
use super::types::{TypeId, TypeKind, Types, Variability};
use super::Checker;
use crate::diag::{codes, Diagnostic};
use crate::front::ast::Initializer;
use crate::front::intern::Symbol;
use crate::source::Span;

/// What an initializer belongs to.
#[derive(Clone, Copy)]
struct InitCx {
    /// File-scope or `static`: every leaf must be constant.
    constant: bool,
    /// The declared variable, for messages.
    name: Symbol,
}

impl Checker<'_> {
    /// Checks an initializer for an object of type `ty`; returns the type, completed
    /// when it was an array of unknown size.
    pub(super) fn check_initializer(
        &mut self,
        ty: TypeId,
        init: &Initializer,
        constant: bool,
        name: Symbol,
    ) -> TypeId {
        let cx = InitCx { constant, name };
        let ty = self.size_unsized_arrays(ty, init, 0);
        self.check_init_depth(ty, init, cx, 0)
    }

    /// Sizes every unsized dimension of an array type from its brace list, as ISPC
    /// does: a dimension takes the length of its list, and the next one the length of
    /// the first nested list, which every sibling list must share (E0322 otherwise:
    /// `int x[][] = { { 1 }, { 1, 2 } }` has no one size). A dimension whose list holds
    /// no nested list stays unsized and is reported by the declaration's size check.
    fn size_unsized_arrays(&mut self, ty: TypeId, init: &Initializer, depth: u32) -> TypeId {
        let TypeKind::Array(elem, len) = self.out.types.kind(ty) else {
            return ty;
        };
        let Initializer::List(items, _) = init else {
            return ty;
        };
        if items.is_empty() || depth > 64 {
            return ty;
        }
        let len = len.unwrap_or(items.len() as u32);
        let Some(first @ Initializer::List(first_items, _)) = items.first() else {
            return self.types().array(elem, Some(len));
        };
        if let TypeKind::Array(_, None) = self.out.types.kind(elem) {
            let odd = items.iter().find(|it| match it {
                Initializer::List(l, _) => l.len() != first_items.len(),
                Initializer::Expr(_) => true,
            });
            if let Some(odd) = odd {
                self.emit(
                    Diagnostic::error(
                        codes::INVALID_INITIALIZER,
                        "nested brace lists of different lengths cannot size an array dimension",
                    )
                    .with_primary(
                        odd.span(),
                        "this list's length differs from the first one's",
                    )
                    .with_secondary(
                        first.span(),
                        format!(
                            "the first list, of length {}, sizes the dimension",
                            first_items.len()
                        ),
                    )
                    .with_help("give the inner dimension a size in the brackets"),
                );
                return Types::ERROR;
            }
        }
        let elem = self.size_unsized_arrays(elem, first, depth + 1);
        if self.out.types.is_error(elem) {
            return Types::ERROR;
        }
        self.types().array(elem, Some(len))
    }

    fn check_init_depth(
        &mut self,
        ty: TypeId,
        init: &Initializer,
        cx: InitCx,
        depth: u32,
    ) -> TypeId {
        if depth > 64 || self.out.types.is_error(ty) {
            if let Initializer::Expr(e) = init {
                self.check_expr(e);
            }
            return ty;
        }
        match init {
            Initializer::Expr(e) => {
                if let TypeKind::Array(..) = self.out.types.kind(ty) {
                    let et = self.check_expr(e);
                    if !self.out.types.is_error(et) {
                        self.emit(
                            Diagnostic::error(
                                codes::INVALID_INITIALIZER,
                                "an array must be initialized with a brace list",
                            )
                            .with_primary(e.span, format!("this has type `{}`", self.ty_str(et)))
                            .with_help("write `{ a, b, ... }`"),
                        );
                    }
                    return ty;
                }
                let et = self.check_expr(e);
                let et = self.rvalue(e, et);
                if self.coerce(e, et, ty, Site::Init { name: cx.name }) && cx.constant {
                    self.require_constant(e);
                }
                ty
            }
            Initializer::List(items, span) => self.check_init_list(ty, items, *span, cx, depth),
        }
    }

    fn require_constant(&mut self, e: &crate::front::ast::Expr) {
        if let Some(v) = self.eval_const(e) {
            return self.set_const(e, v);
        }
        let ty = self.out.converted_type(e.id);
        if let TypeKind::Pointer(_) = self.out.types.kind(ty) {
            if let Some(a) = self.eval_address(e) {
                return self.set_const_address(e, a);
            }
        }
        let per_lane = self
            .out
            .types
            .is_varying(self.out.converted_type(e.id))
            .then(|| self.eval_const_lanes(e))
            .flatten();
        match per_lane {
            Some(lanes) => self.set_lane_consts(e, lanes),
            None => self.emit(
                Diagnostic::error(codes::NOT_CONSTANT, "initializer is not a constant")
                    .with_primary(e.span, "not known at compile time")
                    .with_note(
                        "file-scope and `static` variables are initialized before the program runs",
                    )
                    .with_help("use a constant expression, or assign the value in a function"),
            ),
        }
    }

    fn check_init_list(
        &mut self,
        ty: TypeId,
        items: &[Initializer],
        span: Span,
        cx: InitCx,
        depth: u32,
    ) -> TypeId {
        match self.out.types.kind(ty) {
            TypeKind::Array(elem, len) => {
                if let Some(n) = len {
                    if items.len() > n as usize {
                        self.too_many(items, n as usize, span, "array", cx);
                    }
                }
                for it in items.iter().take(len.map_or(usize::MAX, |n| n as usize)) {
                    self.check_init_depth(elem, it, cx, depth + 1);
                }
                if len.is_none() {
                    if items.is_empty() {
                        self.emit(
                            Diagnostic::error(
                                codes::INVALID_ARRAY_SIZE,
                                "array of unknown size initialized with an empty list",
                            )
                            .with_primary(span, "no elements"),
                        );
                        return ty;
                    }
                    return self.types().array(elem, Some(items.len() as u32));
                }
                ty
            }
            TypeKind::Struct(sid) => {
                if !self.require_complete(ty, span) {
                    return ty;
                }
                let n = self.out.types.structs[sid].fields.len();
                if items.len() > n {
                    self.too_many(items, n, span, "struct", cx);
                }
                for (i, it) in items.iter().take(n).enumerate() {
                    let mt = self.types().member_type(ty, i);
                    self.check_init_depth(mt, it, cx, depth + 1);
                }
                ty
            }
            // An soa block as the struct of its members' soa forms: `{ {x0, x1, ...},
            // {y0, y1, ...} }`, as ISPC initializes it.
            TypeKind::Soa(sid, _) => {
                let n = self.out.types.structs[sid].fields.len();
                if items.len() > n {
                    self.too_many(items, n, span, "soa block", cx);
                }
                let target = self.out.target;
                for (i, it) in items.iter().take(n).enumerate() {
                    let mt = self.types().soa_member_type(ty, i, target);
                    self.check_init_depth(mt, it, cx, depth + 1);
                }
                ty
            }
            TypeKind::Vector(_, n) => {
                // ISPC: at most one value per element; the rest are zero.
                if items.len() > n as usize {
                    self.too_many(items, n as usize, span, "vector", cx);
                }
                let elem = self.types().vector_elem(ty);
                for it in items.iter().take(n as usize) {
                    self.check_init_depth(elem, it, cx, depth + 1);
                }
                ty
            }
            _ => {
                let scalar = matches!(
                    self.out.types.kind(ty),
                    TypeKind::Prim(_) | TypeKind::Enum(_) | TypeKind::Pointer(_)
                );
                // C (and ISPC) allow one pair of braces around a scalar's initializer.
                if let (true, [item @ Initializer::Expr(_)]) = (scalar, items) {
                    return self.check_init_depth(ty, item, cx, depth + 1);
                }
                // ISPC: a varying scalar takes one value per program instance.
                let lanes = self.out.target.program_count as usize;
                if scalar && self.out.types.is_varying(ty) && items.len() > 1 {
                    if items.len() == lanes {
                        let lane_ty = self.types().with_var(ty, Variability::Uniform);
                        for it in items {
                            self.check_init_depth(lane_ty, it, cx, depth + 1);
                        }
                        return ty;
                    }
                    self.emit(
                        Diagnostic::error(
                            codes::INVALID_INITIALIZER,
                            format!(
                                "a brace list for `{}` needs one value per program instance: {lanes}, not {}",
                                self.ty_str(ty),
                                items.len()
                            ),
                        )
                        .with_primary(span, format!("{} values", items.len()))
                        .with_help("give `programCount` values, one per program instance, or one value for all of them"),
                    );
                    for it in items {
                        let cx = InitCx {
                            constant: false,
                            ..cx
                        };
                        self.check_init_depth(Types::ERROR, it, cx, depth + 1);
                    }
                    return ty;
                }
                let mut d = Diagnostic::error(
                    codes::INVALID_INITIALIZER,
                    format!("a brace list cannot initialize `{}`", self.ty_str(ty)),
                )
                .with_primary(span, "brace list here");
                if scalar {
                    d = d.with_help("a scalar takes one expression, with or without braces");
                }
                self.emit(d);
                for it in items {
                    let cx = InitCx {
                        constant: false,
                        ..cx
                    };
                    self.check_init_depth(Types::ERROR, it, cx, depth + 1);
                }
                ty
            }
        }
    }

    fn too_many(&mut self, items: &[Initializer], n: usize, span: Span, what: &str, cx: InitCx) {
        let extra = items.get(n).map_or(span, |i| i.span());
        self.emit(
            Diagnostic::error(
                codes::TOO_MANY_INITIALIZERS,
                format!(
                    "too many initializers for {what} of {n} element{}",
                    if n == 1 { "" } else { "s" }
                ),
            )
            .with_primary(extra, "this one is beyond the end")
            .with_secondary(span, format!("{} initializers", items.len())),
        );
        for it in &items[n..] {
            self.check_init_depth(
                Types::ERROR,
                it,
                InitCx {
                    constant: false,
                    ..cx
                },
                1,
            );
        }
    }
}
