//! Function templates, as ISPC has them: primary templates with type and non-type
//! parameters, explicit specializations, explicit instantiations, and calls with
//! explicit, partly explicit or deduced template arguments.
//!
//! A template's body is never checked by itself. Each distinct argument list is
//! instantiated once: the template's function is copied with fresh expression ids
//! ([`super::renumber`]), its signature resolved with the parameters bound (the
//! template environment, which `resolve` and `expr` consult before any other name),
//! and its body queued to be checked like an ordinary function's. An instance is a
//! [`FuncInfo`] like any other (not in the name's overload set), whose AST lowering
//! finds through [`super::Checked::func_def`].
//!
//! Diagnostics inside an instance point at the template's code, with the call that
//! instantiated it as a secondary label. Instantiation chains are cut at
//! [`MAX_INSTANTIATION_DEPTH`] (E0218), so a template that instantiates itself with
//! ever new arguments stops with a diagnostic.

use std::sync::Arc as Rc;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::resolve::TypeCtx;
use super::types::{Prim, TypeId, TypeKind, Types, Variability};
use super::{Checker, ConstValue, FnFlags, FuncId, FuncInfo};
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{self, Expr};
use crate::front::intern::Symbol;
use crate::source::Span;

/// Deepest chain of instantiations (a template instantiated from an instance of one
/// instantiated from ...).
pub(super) const MAX_INSTANTIATION_DEPTH: u32 = 64;

/// Most instances in one program: a bound on templates that instantiate themselves
/// several times over at each level.
const MAX_INSTANCES: usize = 4096;

/// Longest instance name shown in full in a diagnostic (types nest without bound).
const MAX_SHOWN_NAME: usize = 80;

/// A template argument, resolved: a type with its variability, or a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum TArg {
    Type(TypeId),
    Value(i128),
}

/// Handle of a primary template: its index in [`Templates::defs`].
pub(super) type TemplateId = usize;

pub(super) struct TemplateDef<'a> {
    pub name: Symbol,
    pub item: usize,
    pub params: &'a [ast::TemplateParam],
    pub func: &'a ast::Function,
    /// For each parameter: `None` for a type parameter, the (uniform) type of a
    /// non-type one.
    pub value_tys: Vec<Option<TypeId>>,
}

/// An instance whose body is still to be checked.
struct Pending {
    func: FuncId,
    /// The item being checked where the instance was made: its point of
    /// instantiation, up to which the program's declarations are visible to it.
    at_item: usize,
    template: TemplateId,
    args: Vec<TArg>,
    ast: Rc<ast::Function>,
}

/// Sema's template state.
#[derive(Default)]
pub(super) struct Templates<'a> {
    pub defs: Vec<TemplateDef<'a>>,
    by_name: FxHashMap<Symbol, SmallVec<[TemplateId; 2]>>,
    /// `(template, arguments)` → the function called for them: an explicit
    /// specialization or an instance.
    funcs: FxHashMap<(TemplateId, Vec<TArg>), FuncId>,
    /// Explicit specializations: the item that declares each.
    specializations: FxHashMap<FuncId, usize>,
    /// The bindings of the instance being resolved or checked.
    env: Vec<(Symbol, TArg, TypeId)>,
    pending: Vec<Pending>,
    /// Instantiation depth of each instance, and the call that made it.
    origin: FxHashMap<FuncId, (u32, Span)>,
    count: usize,
    limit_reported: bool,
}

impl<'a> Templates<'a> {
    pub fn is_template_name(&self, name: Symbol) -> bool {
        self.by_name.contains_key(&name)
    }

    pub fn is_specialization_or_instance(&self, f: FuncId) -> bool {
        self.specializations.contains_key(&f) || self.origin.contains_key(&f)
    }
}

impl<'a> Checker<'a> {
    // ------------------------------------------------------------ the environment

    /// The type a template type parameter is bound to in the current instance.
    pub(super) fn template_type(&self, name: Symbol) -> Option<TypeId> {
        self.templates
            .env
            .iter()
            .rev()
            .find_map(|&(n, a, _)| match a {
                TArg::Type(t) if n == name => Some(t),
                _ => None,
            })
    }

    /// The value and type of a non-type template parameter in the current instance.
    pub(super) fn template_value(&self, name: Symbol) -> Option<(i128, TypeId)> {
        self.templates
            .env
            .iter()
            .rev()
            .find_map(|&(n, a, ty)| match a {
                TArg::Value(v) if n == name => Some((v, ty)),
                _ => None,
            })
    }

    /// A name that is a non-type template parameter, used as a value.
    pub(super) fn check_template_value(&mut self, e: &Expr, name: Symbol) -> Option<TypeId> {
        let (v, ty) = self.template_value(name)?;
        let cv = if matches!(self.out.types.get(ty).kind, TypeKind::Prim(Prim::Bool)) {
            ConstValue::Bool(v != 0)
        } else {
            ConstValue::Int(v)
        };
        self.set_const(e, cv);
        Some(ty)
    }

    fn bind_env(&mut self, t: TemplateId, args: &[TArg]) -> Vec<(Symbol, TArg, TypeId)> {
        let def = &self.templates.defs[t];
        let bound: Vec<_> = def
            .params
            .iter()
            .zip(args)
            .zip(&def.value_tys)
            .map(|((p, &a), vt)| (p.name.name, a, vt.unwrap_or(Types::ERROR)))
            .collect();
        std::mem::replace(&mut self.templates.env, bound)
    }

    // ------------------------------------------------------------ declarations

    pub(super) fn declare_template(&mut self, t: &'a ast::Template, item: usize) {
        match &t.kind {
            ast::TemplateKind::Primary(params) => self.declare_primary(t, params, item),
            ast::TemplateKind::Specialization(Some(args)) => {
                self.declare_specialization(t, args, item)
            }
            ast::TemplateKind::Specialization(None) => {
                self.emit(
                    Diagnostic::error(
                        codes::CANNOT_DEDUCE_TEMPLATE_ARGS,
                        format!(
                            "the specialization of `{}` does not name its template arguments",
                            self.name(t.func.name.name)
                        ),
                    )
                    .with_primary(
                        t.func.name.span,
                        "template arguments expected after this name",
                    )
                    .with_note("template arguments are not deduced in a specialization")
                    .with_help(format!(
                        "write them: `{}<int>(...)`",
                        self.name(t.func.name.name)
                    )),
                );
            }
            ast::TemplateKind::Instantiation(args) => {
                let Some((tid, targs)) = self.specialized_template(t, args) else {
                    return;
                };
                self.instantiate(tid, targs, t.func.name.span);
            }
        }
    }

    fn declare_primary(
        &mut self,
        t: &'a ast::Template,
        params: &'a [ast::TemplateParam],
        item: usize,
    ) {
        let f = &t.func;
        self.check_template_qualifiers(f);
        let value_tys = params
            .iter()
            .map(|p| {
                p.value_ty
                    .as_ref()
                    .map(|spec| self.value_param_type(p, spec))
            })
            .collect();
        for (i, p) in params.iter().enumerate() {
            if let Some(prev) = params[..i].iter().find(|q| q.name.name == p.name.name) {
                self.redefinition(p.name.name, p.name.span, Some(prev.name.span));
            }
        }
        if !self.templates.is_template_name(f.name.name)
            && !self.overloads.contains_key(&f.name.name)
        {
            self.bind_file_name(f.name.name, f.name.span, super::FileName::Funcs);
        }
        let id = self.templates.defs.len();
        self.templates.defs.push(TemplateDef {
            name: f.name.name,
            item,
            params,
            func: f,
            value_tys,
        });
        self.templates
            .by_name
            .entry(f.name.name)
            .or_default()
            .push(id);
    }

    /// ISPC's rules for qualifiers on templates: no `export`, `task` or `extern`.
    fn check_template_qualifiers(&mut self, f: &ast::Function) {
        let q = &f.quals;
        for (span, word) in [(q.export, "export"), (q.task, "task")] {
            if let Some(s) = span {
                self.emit(
                    Diagnostic::error(
                        codes::INVALID_ENTRY_QUALIFIERS,
                        format!("a function template cannot be `{word}`"),
                    )
                    .with_primary(s, format!("`{word}` here"))
                    .with_help("call the template from an ordinary entry point"),
                );
            }
        }
    }

    /// The type of a non-type template parameter: a uniform integer, `bool` or enum
    /// (unbound means uniform); E0333 otherwise.
    fn value_param_type(&mut self, p: &ast::TemplateParam, spec: &ast::TypeSpec) -> TypeId {
        let ty = self.resolve_type(spec, &[], TypeCtx::Param);
        if self.out.types.is_error(ty) {
            return Types::ERROR;
        }
        let d = self.out.types.get(ty);
        let integral = match d.kind {
            TypeKind::Prim(p) => p.is_integer() || p == Prim::Bool,
            TypeKind::Enum(_) => true,
            _ => false,
        };
        if d.var == Variability::Varying || !integral {
            let why = if integral {
                "a non-type template parameter is a compile-time constant, so it cannot be `varying`"
            } else {
                "only integer, `bool` and enum types can be non-type template parameters"
            };
            let tys = self.ty_str(ty);
            self.emit(
                Diagnostic::error(
                    codes::INVALID_TEMPLATE_ARGUMENT,
                    format!("a template parameter of type `{tys}`"),
                )
                .with_primary(p.span, why)
                .with_help("use `int N`, `uint N`, `bool B` or an enum type"),
            );
            return Types::ERROR;
        }
        let ty = self.types().bind(ty, Variability::Uniform);
        self.types().with_const(ty, true)
    }

    /// The primary template a specialization or explicit instantiation names, with
    /// its arguments resolved; E0217 if there is none.
    fn specialized_template(
        &mut self,
        t: &ast::Template,
        args: &ast::TemplateArgs,
    ) -> Option<(TemplateId, Vec<TArg>)> {
        let f = &t.func;
        let cands: SmallVec<[TemplateId; 2]> = self
            .templates
            .by_name
            .get(&f.name.name)
            .cloned()
            .unwrap_or_default();
        let mut found = Vec::new();
        for tid in cands {
            let def = &self.templates.defs[tid];
            if def.params.len() != args.args.len() || def.func.params.len() != f.params.len() {
                continue;
            }
            if let Some(targs) = self.resolve_template_args(tid, args, true) {
                found.push((tid, targs));
            }
        }
        match found.len() {
            1 => found.pop(),
            0 => {
                self.emit(
                    Diagnostic::error(
                        codes::NO_TEMPLATE_TO_SPECIALIZE,
                        format!(
                            "no function template `{}` matches this specialization",
                            self.name(f.name.name)
                        ),
                    )
                    .with_primary(args.span, "these template arguments match no template")
                    .with_help("declare the primary template first (`template <typename T> ...`), with as many parameters as arguments here"),
                );
                None
            }
            _ => {
                self.emit(
                    Diagnostic::error(
                        codes::AMBIGUOUS_TEMPLATE,
                        format!(
                            "this specialization of `{}` matches several templates",
                            self.name(f.name.name)
                        ),
                    )
                    .with_primary(args.span, "matches more than one primary template"),
                );
                None
            }
        }
    }

    fn declare_specialization(
        &mut self,
        t: &'a ast::Template,
        args: &ast::TemplateArgs,
        item: usize,
    ) {
        let Some((tid, targs)) = self.specialized_template(t, args) else {
            return;
        };
        let f = &t.func;
        let (flags, ret, ret_ref, params) = self.function_signature(f);
        let key = (tid, targs);
        let fid = match self.templates.funcs.get(&key).copied() {
            Some(prev) => {
                if f.body.is_some() && self.out.funcs[prev].def_item.is_some() {
                    self.emit(
                        Diagnostic::error(
                            codes::FUNCTION_REDEFINED,
                            format!(
                                "the specialization `{}` is defined twice",
                                self.instance_name(tid, &key.1)
                            ),
                        )
                        .with_primary(f.name.span, "redefined here")
                        .with_secondary(self.out.funcs[prev].span, "first defined here")
                        .with_help("remove one definition"),
                    );
                    return;
                }
                let info = &mut self.out.funcs[prev];
                info.decl_items.push(item);
                if f.body.is_some() {
                    info.def_item = Some(item);
                    info.params = params;
                }
                prev
            }
            None => {
                let display = self.instance_name(tid, &key.1);
                let fid = self.push_template_func(f, Some(item), flags, ret, params, display);
                self.templates.specializations.insert(fid, item);
                self.templates.funcs.insert(key, fid);
                fid
            }
        };
        self.out.funcs[fid].ret_ref = ret_ref;
        if let Some(slot) = self.out.item_funcs.get_mut(item) {
            *slot = Some(fid);
        }
    }

    /// A function of a template (a specialization or an instance): not in its
    /// name's overload set, which holds only ordinary functions.
    fn push_template_func(
        &mut self,
        f: &ast::Function,
        def_item: Option<usize>,
        flags: FnFlags,
        ret: TypeId,
        params: Vec<super::ParamInfo>,
        display: String,
    ) -> FuncId {
        let item = def_item.unwrap_or(self.cur_item);
        let from_stdlib = self.in_stdlib(f.span);
        let mut info = FuncInfo::declared(f, item, flags, ret, params, from_stdlib);
        info.def_item = info.def_item.filter(|_| def_item.is_some());
        info.template_name = Some(display.into());
        self.out.funcs.push(info)
    }

    // ------------------------------------------------------------ arguments

    /// `goo<int, 3>`: the written arguments resolved against template `t`'s
    /// parameters; None if an argument does not fit its parameter (reported with
    /// E0333 when `report`).
    fn resolve_template_args(
        &mut self,
        t: TemplateId,
        args: &ast::TemplateArgs,
        report: bool,
    ) -> Option<Vec<TArg>> {
        let value_tys = self.templates.defs[t].value_tys.clone();
        let mut out = Vec::with_capacity(args.args.len());
        for (a, vt) in args.args.iter().zip(value_tys) {
            let arg = match (a, vt) {
                (ast::TemplateArg::Type(tn), None) => TArg::Type(self.template_type_arg(tn)),
                (ast::TemplateArg::Value(e), None) => {
                    // A name the parser could not tell from a value: a type after all?
                    match self.value_arg_as_type(e) {
                        Some(ty) => TArg::Type(ty),
                        None => {
                            if report {
                                self.template_arg_kind(a_span(a), "a type", "a value");
                            }
                            return None;
                        }
                    }
                }
                (ast::TemplateArg::Value(e), Some(ty)) => {
                    TArg::Value(self.template_value_arg(e, ty, report)?)
                }
                (ast::TemplateArg::Type(tn), Some(_)) => {
                    if report {
                        self.template_arg_kind(tn.span, "a constant", "a type");
                    }
                    return None;
                }
            };
            out.push(arg);
        }
        Some(out)
    }

    /// A type argument: unbound variability means varying, as for any object.
    fn template_type_arg(&mut self, tn: &ast::TypeName) -> TypeId {
        let ty = self.resolve_type_name(tn, TypeCtx::Param);
        self.finish_object_type(ty)
    }

    fn value_arg_as_type(&mut self, e: &Expr) -> Option<TypeId> {
        let ast::ExprKind::Ident(id) = &e.kind else {
            return None;
        };
        self.template_type(id.name)
    }

    /// A non-type argument: an integer or enum constant, or a parameter of an
    /// enclosing template.
    fn template_value_arg(&mut self, e: &Expr, ty: TypeId, report: bool) -> Option<i128> {
        let t = self.check_expr(e);
        if self.out.types.is_error(t) || self.out.types.is_error(ty) {
            return None;
        }
        match self.eval_const(e).and_then(ConstValue::as_int) {
            // The value as the parameter's type holds it (`uint8 N` given 300 is 44).
            Some(v) => Some(match self.out.types.get(ty).kind {
                TypeKind::Prim(Prim::Bool) => i128::from(v != 0),
                TypeKind::Prim(p) => super::consteval::wrap(v, p),
                _ => v,
            }),
            None if !report => None,
            None => {
                self.emit(
                    Diagnostic::error(
                        codes::INVALID_TEMPLATE_ARGUMENT,
                        "a non-type template argument must be a constant",
                    )
                    .with_primary(e.span, "not known at compile time")
                    .with_help("write an integer literal, an enumerator or a template parameter"),
                );
                None
            }
        }
    }

    fn template_arg_kind(&mut self, span: Span, want: &str, found: &str) {
        self.emit(
            Diagnostic::error(
                codes::INVALID_TEMPLATE_ARGUMENT,
                format!("template argument is {found}, but the parameter expects {want}"),
            )
            .with_primary(span, format!("{found} here"))
            .with_help("give the arguments in the order of the template's parameters"),
        );
    }

    // ------------------------------------------------------------ calls

    /// The template functions a call of `callee` may select: one per template of the
    /// name whose arguments are given or can be deduced. With explicit arguments
    /// (`goo<int>(...)`) and no candidate at all, the reason is reported (E0213,
    /// E0214, E0215) and `Err` returned, unless `ordinary` (non-template overloads of
    /// the name compete too).
    pub(super) fn template_candidates(
        &mut self,
        callee: ast::Ident,
        targs: Option<&ast::TemplateArgs>,
        args: &[Expr],
        arg_tys: &[TypeId],
        ordinary: bool,
    ) -> Result<SmallVec<[FuncId; 2]>, ()> {
        let cur = self.cur_item;
        let tids: SmallVec<[TemplateId; 2]> = self
            .templates
            .by_name
            .get(&callee.name)
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|&t| self.templates.defs[t].item <= cur)
                    .collect()
            })
            .unwrap_or_default();
        if tids.is_empty() {
            if let Some(targs) = targs {
                self.emit(
                    Diagnostic::error(
                        codes::UNKNOWN_TEMPLATE,
                        format!(
                            "`{}` is not a function template declared before this call",
                            self.name(callee.name)
                        ),
                    )
                    .with_primary(targs.span, "template arguments given here")
                    .with_help("declare it with `template <typename T> ...` before this call, or call it without `<...>`"),
                );
                return Err(());
            }
            return Ok(SmallVec::new());
        }
        let explicit = targs;
        let mut found = SmallVec::new();
        let mut failures: Vec<(TemplateId, &'static str)> = Vec::new();
        // With one template of the name, a misfit argument is reported as such.
        let only_one = tids.len() == 1;
        for tid in tids {
            let def = &self.templates.defs[tid];
            let n_params = def.params.len();
            let n_fn_params = def.func.params.len();
            let given = explicit.map_or(0, |t| t.args.len());
            if given > n_params {
                failures.push((tid, "too many template arguments"));
                continue;
            }
            if args.len() != n_fn_params {
                failures.push((tid, "takes another number of arguments"));
                continue;
            }
            let mut bound: Vec<Option<TArg>> = vec![None; n_params];
            if let Some(t) = explicit {
                let Some(resolved) = self.resolve_template_args(tid, t, only_one) else {
                    if only_one {
                        return Err(());
                    }
                    failures.push((tid, "the template arguments do not fit its parameters"));
                    continue;
                };
                for (slot, a) in bound.iter_mut().zip(resolved) {
                    *slot = Some(a);
                }
            }
            if !self.deduce(tid, arg_tys, &mut bound) {
                failures.push((tid, "conflicting deductions from the arguments"));
                continue;
            }
            let Some(complete) = bound.into_iter().collect::<Option<Vec<TArg>>>() else {
                failures.push((tid, "some template parameter cannot be deduced"));
                continue;
            };
            match self.instantiate(tid, complete, callee.span) {
                Some(fid) => found.push(fid),
                None => return Err(()), // past the limits, reported
            }
        }
        // With ordinary overloads of the name, a template that does not fit is simply
        // not a candidate (as in C++): overload resolution reports if none fits.
        if found.is_empty() && !failures.is_empty() && !ordinary {
            self.no_template_fits(callee, targs, arg_tys, &failures);
            return Err(());
        }
        Ok(found)
    }

    fn no_template_fits(
        &mut self,
        callee: ast::Ident,
        targs: Option<&ast::TemplateArgs>,
        arg_tys: &[TypeId],
        failures: &[(TemplateId, &'static str)],
    ) {
        let name = self.name(callee.name);
        let too_many = failures
            .iter()
            .all(|(_, why)| *why == "too many template arguments");
        let (code, msg) = if too_many {
            (
                codes::WRONG_TEMPLATE_ARG_COUNT,
                format!("too many template arguments for `{name}`"),
            )
        } else {
            let args: Vec<String> = arg_tys.iter().map(|&t| self.ty_str(t)).collect();
            (
                codes::CANNOT_DEDUCE_TEMPLATE_ARGS,
                format!(
                    "no template `{name}` can be called with arguments `({})`",
                    args.join(", ")
                ),
            )
        };
        let at = targs.map_or(callee.span, |t| t.span);
        let mut d = Diagnostic::error(code, msg).with_primary(at, "in this call");
        for &(tid, why) in failures.iter().take(8) {
            let def = &self.templates.defs[tid];
            d = d.with_secondary(
                def.func.name.span,
                format!("this template ({} parameters): {why}", def.params.len()),
            );
        }
        self.emit(d.with_help(format!(
            "give the template arguments explicitly: `{name}<int>(...)`"
        )));
    }

    /// Deduces the unbound parameters of template `t` from the argument types, as
    /// ISPC does: a parameter written `T` takes the argument's type, `uniform T` makes
    /// `T` varying and `varying T` makes it uniform (the keyword was written "on
    /// purpose"). False on a contradiction.
    fn deduce(&mut self, t: TemplateId, arg_tys: &[TypeId], bound: &mut [Option<TArg>]) -> bool {
        let def = &self.templates.defs[t];
        let names: Vec<Symbol> = def.params.iter().map(|p| p.name.name).collect();
        let fparams = def.func.params.clone();
        // Parameters given explicitly are not deduced: their arguments just convert.
        let explicit: Vec<bool> = bound.iter().map(Option::is_some).collect();
        for (p, &arg) in fparams.iter().zip(arg_tys) {
            let arg = self.out.types.with_const(arg, false);
            if !self.deduce_one(&names, &explicit, &p.ty.spec, &p.ty.derived, arg, bound) {
                return false;
            }
        }
        true
    }

    fn deduce_one(
        &mut self,
        names: &[Symbol],
        explicit: &[bool],
        spec: &ast::TypeSpec,
        derived: &[ast::Derived],
        arg: TypeId,
        bound: &mut [Option<TArg>],
    ) -> bool {
        // Peel pointers and arrays off both sides, outermost first.
        let mut arg = arg;
        for part in derived.iter().rev() {
            match part {
                ast::Derived::Pointer { .. } | ast::Derived::Array { .. } => {
                    let d = self.out.types.get(arg);
                    arg = match d.kind {
                        TypeKind::Pointer(p) | TypeKind::Array(p, _) => p,
                        _ => return true, // not deducible here; conversion decides
                    };
                }
                ast::Derived::Reference { .. } => {}
                ast::Derived::FnPtr { .. } => return true,
            }
        }
        let named = match &spec.base {
            ast::BaseType::Named(id) => id,
            // `T<N>`: the element type and the length, from a short vector argument.
            ast::BaseType::Vector { elem, len } => {
                let TypeKind::Vector(_, n) = self.out.types.kind(arg) else {
                    return true; // not deducible here; conversion decides
                };
                if let ast::VecLen::Name(id) = len {
                    let k = names.iter().position(|&name| name == id.name);
                    if let Some(k) = k.filter(|&k| !explicit[k]) {
                        match bound[k] {
                            None => bound[k] = Some(TArg::Value(i128::from(n))),
                            Some(TArg::Value(v)) if v == i128::from(n) => {}
                            Some(_) => return false,
                        }
                    }
                }
                let ast::BaseType::Named(id) = elem.as_ref() else {
                    return true;
                };
                let elem_ty = self.types().vector_elem(arg);
                return self.bind_type_param(names, explicit, spec, id, elem_ty, bound);
            }
            _ => return true,
        };
        self.bind_type_param(names, explicit, spec, named, arg, bound)
    }

    /// Deduces template type parameter `id` (if it is one, and not given explicitly)
    /// from `arg`, the type an argument gives the parameter written with `spec`.
    fn bind_type_param(
        &mut self,
        names: &[Symbol],
        explicit: &[bool],
        spec: &ast::TypeSpec,
        id: &ast::Ident,
        arg: TypeId,
        bound: &mut [Option<TArg>],
    ) -> bool {
        let Some(k) = names.iter().position(|&n| n == id.name) else {
            return true;
        };
        if explicit[k] {
            return true;
        }
        let mut ty = self.out.types.with_const(arg, false);
        let var = self.out.types.var(ty);
        if spec.quals.uniform().is_some() {
            if var == Variability::Varying {
                return false;
            }
            ty = self.types().with_var(ty, Variability::Varying);
        } else if spec.quals.varying().is_some() {
            ty = self.types().with_var(ty, Variability::Uniform);
        }
        let ty = self.finish_object_type(ty);
        match bound[k] {
            None => {
                bound[k] = Some(TArg::Type(ty));
                true
            }
            // Two arguments that differ only in variability deduce the varying type
            // (the uniform one converts to it); any other difference is a conflict.
            Some(TArg::Type(prev)) => {
                let (pv, tv) = (
                    self.types().with_var(prev, Variability::Varying),
                    self.types().with_var(ty, Variability::Varying),
                );
                if pv != tv {
                    return false;
                }
                bound[k] = Some(TArg::Type(pv));
                true
            }
            Some(TArg::Value(_)) => false,
        }
    }

    // ------------------------------------------------------------ instantiation

    /// The function for `template<args>`: a specialization, an earlier instance, or a
    /// new instance whose body is queued. None (after a diagnostic) past the limits.
    pub(super) fn instantiate(
        &mut self,
        t: TemplateId,
        args: Vec<TArg>,
        site: Span,
    ) -> Option<FuncId> {
        let key = (t, args);
        if let Some(&fid) = self.templates.funcs.get(&key) {
            if let Some(&spec_item) = self.templates.specializations.get(&fid) {
                if spec_item > self.cur_item && !self.in_stdlib(site) {
                    self.late_specialization(fid, site);
                }
            }
            return Some(fid);
        }
        let depth = self.current_instance_depth() + 1;
        if depth > MAX_INSTANTIATION_DEPTH || self.templates.count >= MAX_INSTANCES {
            self.instantiation_limit(t, &key.1, site);
            return None;
        }
        let def_func = self.templates.defs[t].func;
        let mut copy = def_func.clone();
        let mut renumber = super::renumber::Renumber::new(
            self.out.expr_ty.len() as u32,
            self.out.decls.len() as u32,
        );
        renumber.function(&mut copy);
        if renumber.too_deep {
            self.emit(
                Diagnostic::error(
                    codes::NESTED_TOO_DEEPLY,
                    "the template's body is nested too deeply to instantiate",
                )
                .with_primary(def_func.name.span, "this template")
                .with_help("split the expression using temporary variables"),
            );
            return None;
        }
        let n = renumber.next_expr as usize;
        self.out.expr_ty.resize(n, Types::ERROR);
        self.out.expr_conv.resize(n, Types::ERROR);
        self.out.expr_res.resize(n, super::Res::None);
        self.out.decls.resize(renumber.next_decl as usize, None);
        let display = self.instance_name(t, &key.1);
        let first_diag = self.diags.len();
        let saved = self.bind_env(t, &key.1);
        let (flags, ret, ret_ref, params) = self.function_signature(&copy);
        self.templates.env = saved;
        let ast = Rc::new(copy);
        let item = self.templates.defs[t].item;
        let fid = self.push_template_func(&ast, None, flags, ret, params, display);
        let index = self.out.instances.len() as u32;
        self.out.instances.push(Rc::clone(&ast));
        let info = &mut self.out.funcs[fid];
        info.ret_ref = ret_ref;
        info.instance = Some(index);
        info.decl_items = vec![item];
        // Defined where the template is (its copy is in `instances`).
        info.def_item = ast.body.as_ref().map(|_| item);
        self.templates.count += 1;
        self.templates.origin.insert(fid, (depth, site));
        self.templates.funcs.insert(key.clone(), fid);
        self.templates.pending.push(Pending {
            func: fid,
            at_item: self.cur_item,
            template: t,
            args: key.1,
            ast,
        });
        self.note_instantiation(first_diag, fid);
        Some(fid)
    }

    /// How deep the instance whose body is being checked is (0 outside instances).
    fn current_instance_depth(&self) -> u32 {
        self.fcx
            .as_ref()
            .and_then(|f| self.templates.origin.get(&f.func))
            .map_or(0, |&(d, _)| d)
    }

    fn instantiation_limit(&mut self, t: TemplateId, args: &[TArg], site: Span) {
        if std::mem::replace(&mut self.templates.limit_reported, true) {
            return;
        }
        let name = shorten(self.instance_name(t, args));
        let span = self.templates.defs[t].func.name.span;
        self.emit(
            Diagnostic::error(
                codes::TEMPLATE_INSTANTIATION_DEPTH,
                format!("instantiating `{name}` exceeds the template instantiation limits"),
            )
            .with_primary(site, "instantiated here")
            .with_secondary(span, "the template")
            .with_note(format!(
                "instantiations may nest {MAX_INSTANTIATION_DEPTH} deep, and a program may have {MAX_INSTANCES} of them"
            ))
            .with_help("a template that instantiates itself must reach an end: with new arguments at every level it never does"),
        );
    }

    fn late_specialization(&mut self, fid: FuncId, site: Span) {
        let name = self.out.funcs[fid]
            .template_name
            .clone()
            .unwrap_or_default();
        let span = self.out.funcs[fid].span;
        self.emit(
            Diagnostic::error(
                codes::NO_TEMPLATE_TO_SPECIALIZE,
                format!("the specialization `{name}` is declared after its first use"),
            )
            .with_primary(site, "used here")
            .with_secondary(span, "specialized later here")
            .with_help("declare the specialization before the first call that uses it"),
        );
    }

    /// Adds "instantiated from" to the diagnostics from `first` on, made while
    /// resolving or checking instance `fid`.
    fn note_instantiation(&mut self, first: usize, fid: FuncId) {
        let Some(&(_, site)) = self.templates.origin.get(&fid) else {
            return;
        };
        let name = shorten(
            self.out.funcs[fid]
                .template_name
                .as_deref()
                .unwrap_or_default()
                .to_string(),
        );
        for d in &mut self.diags[first..] {
            d.secondary.push(crate::diag::Label {
                span: site,
                message: format!("in `{name}`, instantiated here"),
            });
        }
    }

    /// Checks the bodies of queued instances (which may queue more).
    pub(super) fn check_pending_instances(&mut self) -> bool {
        let mut any = false;
        while let Some(p) = self.templates.pending.pop() {
            any = true;
            let Some(body) = &p.ast.body else { continue };
            let first_diag = self.diags.len();
            let saved = self.bind_env(p.template, &p.args);
            self.cur_item = self.templates.defs[p.template].item.max(p.at_item);
            self.check_function_body(p.func, &p.ast, body, None);
            self.templates.env = saved;
            self.note_instantiation(first_diag, p.func);
        }
        any
    }

    /// `goo<varying int32, 3>`: the name an instance is shown with.
    pub(super) fn instance_name(&self, t: TemplateId, args: &[TArg]) -> String {
        let parts: Vec<String> = args
            .iter()
            .map(|a| match a {
                TArg::Type(ty) => self.ty_str(*ty),
                TArg::Value(v) => v.to_string(),
            })
            .collect();
        format!(
            "{}<{}>",
            self.name(self.templates.defs[t].name),
            parts.join(", ")
        )
    }
}

/// An instance's name cut to [`MAX_SHOWN_NAME`] characters for a diagnostic.
fn shorten(mut name: String) -> String {
    if name.len() > MAX_SHOWN_NAME {
        let cut = (0..=MAX_SHOWN_NAME)
            .rev()
            .find(|&i| name.is_char_boundary(i))
            .unwrap_or(0);
        name.truncate(cut);
        name.push_str("...>");
    }
    name
}

fn a_span(a: &ast::TemplateArg) -> Span {
    match a {
        ast::TemplateArg::Type(t) => t.span,
        ast::TemplateArg::Value(e) => e.span,
    }
}
