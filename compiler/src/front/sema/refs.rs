//! References (`float &r = x;`, `void f(float &a)`, `T &f()`): what a reference may be
//! bound to, as ISPC rules it.
//!
//! A reference holds one address for the whole gang (ISPC's references are uniform
//! pointers). It binds to an lvalue of exactly its type at a uniform address; a `const`
//! reference also binds to any other value of its type through a temporary. Everything
//! else is E0326 (not an lvalue of the type) or E0411 (the other variability, or an
//! object at a varying address).

use super::conv::Cost;
use super::expr::Site;
use super::types::{TypeId, Variability};
use super::{Checker, DeclRef, LocalKind, Res};
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{Expr, ExprKind};

/// How a value binds to a reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Binding {
    /// To the lvalue itself: the reference holds its address.
    Lvalue,
    /// To a temporary holding the value (`const` references only).
    Temporary,
}

/// Why a value cannot bind to a reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefError {
    /// Not an lvalue, and the reference is not `const`.
    NotLvalue,
    /// An lvalue of another type.
    Type,
    /// The same type but the other variability.
    Variability,
    /// A `const` object for a reference that is not `const`.
    DropsConst,
    /// An lvalue whose address differs per program instance.
    VaryingAddress,
    /// An element of soa storage or a part of one, which no address designates.
    Soa,
}

impl Checker<'_> {
    /// The overload cost of binding `e` to a reference to `target`, None if it cannot.
    /// `operand`: `e` is an operand of an overloaded operator, which ISPC lets bind
    /// any reference to a temporary (`a * b << c` with `S &operator<<(S &, S &)`).
    pub(super) fn reference_cost(
        &mut self,
        e: &Expr,
        target: TypeId,
        operand: bool,
    ) -> Option<Cost> {
        self.reference_binding(e, target, operand)
            .ok()
            .map(|(_, c)| c)
    }

    /// Binds `e` (already checked) to a reference to `target`, recording a temporary if
    /// one is needed, or reports why it cannot (`allow_temp`: a `return` may not bind a
    /// temporary, which would end with the function). Returns whether it bound.
    pub(super) fn bind_reference(
        &mut self,
        e: &Expr,
        target: TypeId,
        site: Site,
        allow_temp: bool,
    ) -> bool {
        let operand = matches!(site, Site::Arg { func, .. } if self.is_operator_function(func));
        let err = match self.reference_binding(e, target, operand) {
            Ok((Binding::Temporary, _)) if !allow_temp => RefError::NotLvalue,
            Ok((Binding::Temporary, _)) => {
                self.out.ref_temps.insert(e.id);
                self.set_conv(e, target);
                return true;
            }
            Ok((Binding::Lvalue, _)) => return self.check_dangling(e, site),
            Err(err) => err,
        };
        self.reference_error(e, target, site, err);
        false
    }

    fn reference_binding(
        &mut self,
        e: &Expr,
        target: TypeId,
        operand: bool,
    ) -> Result<(Binding, Cost), RefError> {
        let t = self.out.type_of(e.id);
        if self.out.types.is_error(t) || self.out.types.is_error(target) {
            return Ok((Binding::Lvalue, Cost::Exact));
        }
        let (tc, rc) = (
            self.out.types.get(t).is_const,
            self.out.types.get(target).is_const,
        );
        let (bare_t, bare_r) = (
            self.types().with_const(t, false),
            self.types().with_const(target, false),
        );
        if bare_t != bare_r {
            let (ut, ur) = (
                self.types().with_var(bare_t, Variability::Uniform),
                self.types().with_var(bare_r, Variability::Uniform),
            );
            return Err(if ut == ur {
                RefError::Variability
            } else {
                RefError::Type
            });
        }
        // ISPC's ranks: a reference passed on to a reference of the same type is
        // exact, an object bound to one costs a little, adding `const` more.
        let cost = match (tc == rc, self.is_reference(e)) {
            (true, true) => Cost::Exact,
            (true, false) => Cost::BindRef,
            (false, _) => Cost::BindConstRef,
        };
        match self.place_of(e, 0) {
            Some(p) if p.soa.is_some() && !rc => Err(RefError::Soa),
            Some(p) if !p.addr_varying && p.soa.is_none() => match tc && !rc {
                true => Err(RefError::DropsConst),
                false => Ok((Binding::Lvalue, cost)),
            },
            _ if rc || operand => Ok((Binding::Temporary, Cost::BindConstRef)),
            Some(_) => Err(RefError::VaryingAddress),
            None => Err(RefError::NotLvalue),
        }
    }

    /// Is `e` a reference itself: a reference variable or a call returning one?
    pub(super) fn is_reference(&self, e: &Expr) -> bool {
        match (&e.kind, self.out.res(e.id)) {
            (ExprKind::Ident(_), Res::Local(l)) => self.out.locals[l].by_ref,
            (ExprKind::Call { .. }, _) => self.out.returns_reference(e.id),
            _ => self.out.operator_returns_reference(e.id),
        }
    }

    /// A `return` of a reference to one of the function's own variables: the object
    /// ends with the call, so the caller would get a dangling reference (E0326).
    fn check_dangling(&mut self, e: &Expr, site: Site) -> bool {
        if !matches!(site, Site::Return) {
            return true;
        }
        let Some(DeclRef::Local(l)) = self.place_of(e, 0).and_then(|p| p.root) else {
            return true;
        };
        let local = &self.out.locals[l];
        if matches!(local.kind, LocalKind::Static | LocalKind::Shared) {
            return true;
        }
        let (name, span) = (self.name(local.name), local.span);
        self.emit(
            Diagnostic::error(
                codes::INVALID_REFERENCE_BINDING,
                format!("returning a reference to local variable `{name}`"),
            )
            .with_primary(e.span, "this object ends when the function returns")
            .with_secondary(span, "declared here")
            .with_help("return a reference to something the caller owns (a reference parameter), or return the value"),
        );
        false
    }

    fn reference_error(&mut self, e: &Expr, target: TypeId, site: Site, err: RefError) {
        let (ts, rs) = (self.ty_str(self.out.type_of(e.id)), self.ty_str(target));
        let whom = self.reference_site(site);
        let (code, msg, label, help) = match err {
            RefError::NotLvalue => (
                codes::INVALID_REFERENCE_BINDING,
                format!("{whom} must refer to an object, not to a temporary value"),
                "this value is not stored in an object".to_string(),
                match site {
                    Site::Return => "return a reference to something the caller owns, or return the value".to_string(),
                    _ => format!("store the value in a variable first, or make the reference `const {rs} &` to bind a temporary copy"),
                },
            ),
            RefError::Type => (
                codes::INVALID_REFERENCE_BINDING,
                format!("{whom} refers to `{rs}` but is given `{ts}`"),
                format!("this has type `{ts}`"),
                format!("a reference binds only to an object of its type; copy the value into a `{rs}` variable first"),
            ),
            RefError::DropsConst => (
                codes::INVALID_REFERENCE_BINDING,
                format!("{whom} refers to non-`const` `{rs}` but is given a `const` object"),
                format!("this has type `{ts}`"),
                format!("make the reference `const {rs} &`, or refer to a non-`const` object"),
            ),
            RefError::Variability => (
                codes::REFERENCE_VARIABILITY,
                format!("{whom} refers to `{rs}` but is given `{ts}`"),
                format!("this has type `{ts}`"),
                "a reference to varying data needs a varying object and a reference to uniform data a uniform one; declare the reference with the object's variability".to_string(),
            ),
            RefError::Soa => (
                codes::SOA_MEMBER_ADDRESS,
                format!("{whom} cannot refer to an object in soa storage"),
                "the members of this object are spread over its soa block".to_string(),
                format!("copy the value into a `{rs}` variable first, or make the reference `const {rs} &` to bind a temporary copy"),
            ),
            RefError::VaryingAddress => (
                codes::REFERENCE_VARIABILITY,
                format!("{whom} cannot refer to an object at a varying address"),
                "each program instance addresses a different object here".to_string(),
                "a reference holds one address for the whole gang: index with a uniform value, or use a pointer (`uniform float * varying p = &a[i];`)".to_string(),
            ),
        };
        let mut d = Diagnostic::error(code, msg)
            .with_primary(e.span, label)
            .with_help(help);
        if let Site::Arg { func, index } = site {
            if let Some(p) = self.out.funcs[func].params.get(index) {
                d = d.with_secondary(p.span, "reference parameter declared here");
            }
        }
        self.emit(d);
    }

    /// "reference parameter 2 of `f`", "reference `r`", "the returned reference".
    fn reference_site(&self, site: Site) -> String {
        match site {
            Site::Arg { func, index } => {
                let f = &self.out.funcs[func];
                match f.params.get(index).and_then(|p| p.name) {
                    Some(n) => format!(
                        "reference parameter `{}` of `{}`",
                        self.name(n),
                        self.name(f.name)
                    ),
                    None => format!(
                        "reference parameter {} of `{}`",
                        index + 1,
                        self.name(f.name)
                    ),
                }
            }
            Site::Init { name } => format!("reference `{}`", self.name(name)),
            Site::PtrArg { index } => {
                format!("reference parameter {} of the function pointer", index + 1)
            }
            _ => "the returned reference".to_string(),
        }
    }
}
