//! `new` and `delete`: the allocated type and count, and the operand of `delete`.
//!
//! Both become calls of the standard library's heap routines (`__spmdc_heap_*` in
//! `stdlib/stdlib.spmd`), which sema finds here once so lowering can call them; the
//! driver brings those items along whenever a program uses either keyword.

use super::expr::Site;
use super::resolve::TypeCtx;
use super::types::{Prim, TypeId, TypeKind, Types, Variability};
use super::{Checker, FuncId};
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{Expr, NewExpr};
use crate::source::Span;

/// The heap routines a program's `new` and `delete` call (uniform and varying forms).
#[derive(Clone, Copy, Debug, Default)]
pub struct HeapFns {
    pub alloc_uniform: Option<FuncId>,
    pub alloc_varying: Option<FuncId>,
    pub free_uniform: Option<FuncId>,
    pub free_varying: Option<FuncId>,
}

impl Checker<'_> {
    /// `[uniform|varying] new T[count]` or `new T(init)`: a pointer to `T`, uniform
    /// for `uniform new`. `T` without a rate is `uniform` under either `new`, as ISPC
    /// compiles it (its documentation says `varying` under `uniform new`, but its own
    /// tests store `uniform new float[n]` in a `float * uniform`).
    pub(super) fn check_new(&mut self, e: &Expr, n: &NewExpr) -> TypeId {
        let ty = self.resolve_type_name(&n.ty, TypeCtx::New);
        let elem = self.types().bind(ty, Variability::Uniform);
        let count_ok = n
            .count
            .as_ref()
            .is_none_or(|c| self.check_new_count(c, n.uniform));
        if self.out.types.is_error(elem) || !self.allocatable(elem, n.ty.span) || !count_ok {
            return Types::ERROR;
        }
        if let Some(init) = &n.init {
            // Under a varying `new` each instance initializes its own object, through
            // its own pointer: the values may differ per instance, as in `*p = x`.
            let per_instance = match self.out.types.kind(elem) {
                TypeKind::Array(..) => elem,
                _ if !n.uniform => self.types().with_var(elem, Variability::Varying),
                _ => elem,
            };
            self.check_initializer(per_instance, init, false, crate::front::intern::NEW_OBJECT);
        }
        self.find_heap_fns(e.span);
        let var = if n.uniform {
            Variability::Uniform
        } else {
            Variability::Varying
        };
        self.types().pointer(elem, var, false)
    }

    /// E0338 for `void` (and E0212 for a struct not yet defined).
    fn allocatable(&mut self, elem: TypeId, span: Span) -> bool {
        if self.out.types.is_void(elem) {
            self.emit(
                Diagnostic::error(codes::NEW_OF_VOID, "`new` of `void`: it has no size")
                    .with_primary(span, "`void` here")
                    .with_help("allocate bytes with `new uint8[n]` and cast the pointer"),
            );
            return false;
        }
        self.require_complete(elem, span)
    }

    /// The count of `new T[count]`: an integer, uniform under `uniform new`;
    /// converted to `int64`.
    fn check_new_count(&mut self, c: &Expr, uniform: bool) -> bool {
        let t = self.check_expr(c);
        if self.out.types.is_error(t) {
            return false;
        }
        let t = self.float_as_int(c, t).unwrap_or(t);
        if !self.out.types.is_integral(t) {
            self.emit(
                Diagnostic::error(codes::NON_INTEGER, "the count of a `new` is not an integer")
                    .with_primary(c.span, format!("this has type `{}`", self.ty_str(t))),
            );
            return false;
        }
        let var = if uniform {
            Variability::Uniform
        } else {
            self.out.types.var(t)
        };
        let want = self.out.types.prim(Prim::Int64, var);
        self.coerce(c, t, want, Site::Uniform("the count of a `uniform new`"))
    }

    /// `delete p;`: `p` must be a pointer (E0339); `NULL` is allowed.
    pub(super) fn check_delete(&mut self, ptr: &Expr, span: Span) {
        let t = self.check_expr(ptr);
        if self.out.types.is_error(t) {
            return;
        }
        let ok = match self.out.types.kind(t) {
            TypeKind::Pointer(pointee) => !self.out.types.is_error(pointee),
            TypeKind::Null => true,
            _ => false,
        };
        if !ok {
            let what = match self.out.types.kind(t) {
                TypeKind::Array(..) => "an array, which `new` did not allocate",
                TypeKind::FnPtr(_) => "a function pointer",
                _ => "not a pointer",
            };
            self.emit(
                Diagnostic::error(
                    codes::DELETE_NOT_POINTER,
                    format!("`delete` of a `{}`: {what}", self.ty_str(t)),
                )
                .with_primary(ptr.span, "this is not a pointer `new` returned")
                .with_help("`delete` takes the pointer a `new` expression returned"),
            );
            return;
        }
        self.find_heap_fns(span);
    }

    /// Finds the heap routines once; they come with every program that uses `new` or
    /// `delete`, so a miss is the compiler's fault (reported, not a panic).
    fn find_heap_fns(&mut self, span: Span) {
        if self.out.heap.alloc_uniform.is_some() {
            return;
        }
        let find = |cx: &Self, name: &str| {
            cx.interner
                .get(name)
                .and_then(|s| cx.overloads.get(&s))
                .and_then(|o| o.first().copied())
        };
        let fns = HeapFns {
            alloc_uniform: find(self, "__spmdc_heap_alloc_u"),
            alloc_varying: find(self, "__spmdc_heap_alloc_v"),
            free_uniform: find(self, "__spmdc_heap_free_u"),
            free_varying: find(self, "__spmdc_heap_free_v"),
        };
        if fns.alloc_uniform.is_none()
            || fns.alloc_varying.is_none()
            || fns.free_uniform.is_none()
            || fns.free_varying.is_none()
        {
            self.emit(
                Diagnostic::error(
                    codes::NOT_SUPPORTED_YET,
                    "`new` and `delete` need the standard library's heap routines, which are missing",
                )
                .with_primary(span, "allocates or frees here")
                .with_help("compile with the standard library (without `--no-stdlib`)"),
            );
            return;
        }
        // Their bodies are checked as those of the stdlib functions a program calls.
        for f in [
            fns.alloc_uniform,
            fns.alloc_varying,
            fns.free_uniform,
            fns.free_varying,
        ]
        .into_iter()
        .flatten()
        {
            self.out.funcs[f].called = true;
        }
        self.out.heap = fns;
    }
}
