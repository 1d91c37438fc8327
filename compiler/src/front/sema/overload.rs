//! Calls: finding the callee, choosing among overloads, and the built-in `print` and
//! `barrier`.
//!
//! Overload selection follows ISPC (`FindBestMatchCost`): each argument's conversion
//! has a cost (exact, widening, uniform→varying, arbitrary conversion and their
//! combinations; see [`super::conv::Cost`]), weighted as ISPC does and made 512 times
//! cheaper for a compile-time constant argument; a candidate is viable if every
//! argument converts; the viable candidate of least total cost is called. Two with that
//! least total are ambiguous (E0205); when another candidate converts some argument more
//! cheaply than the chosen one, the call is W0013 (ISPC warns too).

use super::builtins::{count_placeholders, BuiltinFn, BUILTIN_NAMES};
use super::conv::{self, Cost};
use super::expr::Site;
use super::types::{TypeId, TypeKind, Types};
use super::{Checker, FileName, FuncId, Res};
use crate::diag::{codes, suggest, Diagnostic};
use crate::front::ast::{self, Expr, ExprKind};
use cranelift_entity::EntityRef;
use smallvec::SmallVec;

/// Per-argument conversion costs of one candidate.
type Costs = SmallVec<[Cost; 8]>;

/// Most candidates listed in a "no matching overload" note.
const MAX_LISTED: usize = 8;

impl Checker<'_> {
    pub(super) fn check_call(
        &mut self,
        e: &Expr,
        callee: ast::Ident,
        args: &[Expr],
        targs: Option<&ast::TemplateArgs>,
    ) -> TypeId {
        if targs.is_some() || self.templates.is_template_name(callee.name) {
            return self.check_template_call(e, callee, args, targs);
        }
        if let Some(f) = self.syms.builtin_fn(callee.name) {
            if !self.overloads.contains_key(&callee.name)
                && self.scopes.lookup(callee.name).is_none()
            {
                return self.check_builtin_call(e, f, callee, args);
            }
        }
        if let Some(t) = self.call_through_variable(e, callee, args) {
            return t;
        }
        let arg_tys = self.argument_types(args);
        if let Some(l) = self.scopes.lookup(callee.name) {
            // Counts as a use: the E0208 says what is wrong with it.
            self.local_used[l.index()] = true;
        }
        if self.scopes.lookup(callee.name).is_some()
            || matches!(
                self.file_names.get(&callee.name),
                Some(FileName::Global(_) | FileName::EnumConst(..) | FileName::Builtin(_))
            )
        {
            self.set_res(e, Res::Error);
            self.emit(
                Diagnostic::error(
                    codes::NOT_A_FUNCTION,
                    format!("`{}` is not a function", self.name(callee.name)),
                )
                .with_primary(callee.span, "called here, but it is a variable")
                .with_help("call a function by its name, or give the variable a function pointer type (`typedef float (*F)(float);`)"),
            );
            return Types::ERROR;
        }
        let Some(all) = self.overloads.get(&callee.name).cloned() else {
            self.set_res(e, Res::Error);
            if !self.syntax_error_in_body() {
                self.unknown_function(callee);
            }
            return Types::ERROR;
        };
        // A function must be declared before it is called.
        let cands = self.visible_overloads(callee.name);
        if cands.is_empty() {
            self.set_res(e, Res::Error);
            self.called_before_declaration(callee, all[0]);
            return Types::ERROR;
        }
        if arg_tys.iter().any(|&t| self.out.types.is_error(t)) {
            // One argument already failed: don't guess an overload, don't cascade.
            self.set_res(e, Res::Error);
            return Types::ERROR;
        }
        let args: SmallVec<[&Expr; 8]> = args.iter().collect();
        self.call_selected(e, callee, &args, &arg_tys, &cands)
    }

    /// A call of a name that has function templates (with or without explicit
    /// template arguments): the ordinary overloads (unless arguments are explicit)
    /// and the templates' instances compete as one overload set.
    fn check_template_call(
        &mut self,
        e: &Expr,
        callee: ast::Ident,
        args: &[Expr],
        targs: Option<&ast::TemplateArgs>,
    ) -> TypeId {
        let arg_tys = self.argument_types(args);
        if arg_tys.iter().any(|&t| self.out.types.is_error(t)) {
            self.set_res(e, Res::Error);
            return Types::ERROR;
        }
        let mut cands = match targs {
            Some(_) => SmallVec::new(),
            None => self.visible_overloads(callee.name),
        };
        let ordinary = !cands.is_empty();
        match self.template_candidates(callee, targs, args, &arg_tys, ordinary) {
            Ok(found) => cands.extend(found),
            Err(()) => {
                self.set_res(e, Res::Error);
                return Types::ERROR;
            }
        }
        if cands.is_empty() {
            self.set_res(e, Res::Error);
            self.unknown_function(callee);
            return Types::ERROR;
        }
        let args: SmallVec<[&Expr; 8]> = args.iter().collect();
        self.call_selected(e, callee, &args, &arg_tys, &cands)
    }

    /// The arguments' types, checked, as rvalues.
    fn argument_types(&mut self, args: &[Expr]) -> SmallVec<[TypeId; 8]> {
        args.iter()
            .map(|a| {
                let t = self.check_expr(a);
                self.rvalue(a, t)
            })
            .collect()
    }

    /// Selects the overload among `cands` and records the call of it.
    pub(super) fn call_selected(
        &mut self,
        e: &Expr,
        callee: ast::Ident,
        args: &[&Expr],
        arg_tys: &[TypeId],
        cands: &[FuncId],
    ) -> TypeId {
        let Some(fid) = self.select_overload(e, callee, args, arg_tys, cands) else {
            self.set_res(e, Res::Error);
            return Types::ERROR;
        };
        self.finish_call(e, callee, args, arg_tys, fid)
    }

    /// Records the call of `fid` and converts the arguments to its parameters.
    fn finish_call(
        &mut self,
        e: &Expr,
        callee: ast::Ident,
        args: &[&Expr],
        arg_tys: &[TypeId],
        fid: FuncId,
    ) -> TypeId {
        self.set_res(e, Res::Func(fid));
        if self.out.funcs[fid].flags.task && self.launched_call != Some(e.id) {
            self.task_called_without_launch(fid, callee);
        }
        self.out.funcs[fid].called = true;
        self.first_calls.entry(fid).or_insert(callee.span);
        self.record_call(fid, callee.span);
        let params: SmallVec<[(TypeId, bool); 8]> = self.out.funcs[fid]
            .params
            .iter()
            .map(|p| (p.ty, p.by_ref))
            .collect();
        for (i, (a, &t)) in args.iter().zip(arg_tys).enumerate() {
            let site = Site::Arg {
                func: fid,
                index: i,
            };
            match params.get(i) {
                Some(&(p, true)) => {
                    self.bind_reference(a, p, site, true);
                }
                Some(&(p, false)) => {
                    self.coerce(a, t, p, site);
                }
                None => {}
            }
        }
        self.out.funcs[fid].ret
    }

    fn called_before_declaration(&mut self, callee: ast::Ident, later: FuncId) {
        let name = self.name(callee.name);
        let sig = self.signature(later);
        let span = self.out.funcs[later].span;
        self.emit(
            Diagnostic::error(
                codes::UNKNOWN_FUNCTION,
                format!("function `{name}` is called before it is declared"),
            )
            .with_primary(callee.span, "not declared yet")
            .with_secondary(span, "declared later here")
            .with_help(format!(
                "declare a prototype above this function: `{} {sig};`",
                self.ty_str(self.out.funcs[later].ret)
            )),
        );
    }

    fn unknown_function(&mut self, callee: ast::Ident) {
        let name = self.name(callee.name);
        let mut d = Diagnostic::error(
            codes::UNKNOWN_FUNCTION,
            format!("cannot find function `{name}`"),
        )
        .with_primary(callee.span, "not declared");
        let candidates: Vec<&str> = self
            .overloads
            .keys()
            .map(|s| self.interner.resolve(*s))
            .chain(BUILTIN_NAMES.iter().copied())
            .chain(self.options.stdlib_names.iter().copied())
            .collect();
        if let Some(best) = suggest::closest(name, candidates) {
            d = d.with_help(format!("did you mean `{best}`?"));
        }
        self.emit(d);
    }

    /// Picks the overload to call, or reports E0305/E0204/E0205 and returns None.
    /// With a single candidate, argument errors are left to `coerce` (which gives the
    /// precise E0407/E0300 at the argument).
    fn select_overload(
        &mut self,
        e: &Expr,
        callee: ast::Ident,
        args: &[&Expr],
        arg_tys: &[TypeId],
        cands: &[FuncId],
    ) -> Option<FuncId> {
        if let [only] = cands {
            if !self.accepts_count(*only, args.len()) {
                self.wrong_arg_count(e, callee, *only, args.len());
                return None;
            }
            return Some(*only);
        }
        let viable: Vec<(FuncId, Costs)> = cands
            .iter()
            .filter_map(|&f| self.call_cost(f, args, arg_tys).map(|c| (f, c)))
            .collect();
        let scales = self.argument_cost_scales(args);
        let total = |c: &Costs| -> u64 {
            c.iter()
                .zip(&scales)
                .map(|(x, s)| x.ispc_weight() * s)
                .sum()
        };
        let Some(best) = viable.iter().min_by_key(|(_, c)| total(c)) else {
            let any_arity = cands.iter().any(|&f| self.accepts_count(f, args.len()));
            self.no_overload(e, callee, arg_tys, cands, any_arity);
            return None;
        };
        let best_total = total(&best.1);
        let tied: Vec<FuncId> = viable
            .iter()
            .filter(|(_, c)| total(c) == best_total)
            .map(|(f, _)| *f)
            .collect();
        // As in C++, an ordinary function beats a template's function that converts
        // the arguments as cheaply.
        let ordinary: Vec<FuncId> = tied
            .iter()
            .copied()
            .filter(|&f| !self.templates.is_specialization_or_instance(f))
            .collect();
        let tied = if ordinary.is_empty() { tied } else { ordinary };
        if let [only] = tied[..] {
            if only != best.0 {
                return Some(only);
            }
        }
        if tied.len() > 1 {
            self.ambiguous(e, callee, arg_tys, &tied);
            return None;
        }
        // ISPC calls the least total even when a rival converts some argument more
        // cheaply, and warns.
        let better_somewhere: Vec<FuncId> = viable
            .iter()
            .filter(|(f, c)| *f != best.0 && c.iter().zip(&best.1).any(|(a, b)| a < b))
            .map(|(f, _)| *f)
            .collect();
        if !better_somewhere.is_empty() {
            self.chosen_by_total(e, callee, arg_tys, best.0, &better_somewhere);
        }
        Some(best.0)
    }

    /// ISPC's per-argument cost scale: `n + 1` for `n` arguments (so a worse bucket
    /// for one argument outweighs a better one for all others), times 512 unless the
    /// argument is a compile-time constant, whose conversions are cheap.
    fn argument_cost_scales(&self, args: &[&Expr]) -> SmallVec<[u64; 8]> {
        let base = args.len() as u64 + 1;
        args.iter()
            .map(|a| match self.eval_const(a) {
                Some(_) => base,
                None => base * 512,
            })
            .collect()
    }

    /// W0013: the overload of least total cost was chosen although another one takes
    /// some argument with a cheaper conversion.
    fn chosen_by_total(
        &mut self,
        e: &Expr,
        callee: ast::Ident,
        arg_tys: &[TypeId],
        chosen: FuncId,
        rivals: &[FuncId],
    ) {
        if self.in_stdlib(e.span) {
            return;
        }
        let mut d = Diagnostic::warning(
            codes::OVERLOAD_BY_TOTAL_COST,
            format!(
                "call to `{}` is ambiguous; calling `{}`",
                self.name(callee.name),
                self.signature(chosen)
            ),
        )
        .with_primary(
            e.span,
            format!("arguments are `{}`", self.arg_list(arg_tys)),
        )
        .with_secondary(
            self.out.funcs[chosen].span,
            "chosen: its conversions cost the least in total",
        );
        for &f in rivals.iter().take(MAX_LISTED) {
            d = d.with_secondary(
                self.out.funcs[f].span,
                format!(
                    "`{}` converts some argument more cheaply",
                    self.signature(f)
                ),
            );
        }
        self.emit(
            d.with_help("cast the arguments to the exact parameter types of the overload you mean"),
        );
    }

    /// The conversion cost of each argument when calling `fid`, None if not viable.
    /// Function `fid` can be called with `n` arguments: one per parameter, or fewer
    /// when every parameter left out has a default argument.
    fn accepts_count(&self, fid: FuncId, n: usize) -> bool {
        let params = &self.out.funcs[fid].params;
        n <= params.len() && params[n..].iter().all(|p| p.default.is_some())
    }

    fn call_cost(&mut self, fid: FuncId, args: &[&Expr], arg_tys: &[TypeId]) -> Option<Costs> {
        if !self.accepts_count(fid, args.len()) {
            return None;
        }
        let mut costs = Costs::new();
        for i in 0..args.len() {
            let p = &self.out.funcs[fid].params[i];
            let cost = match (p.ty, p.by_ref) {
                (p, true) => self.reference_cost(args[i], p, self.is_operator_function(fid)),
                (p, false) => {
                    let null = Self::is_null_const(args[i]);
                    let c = conv::implicit_cost(&mut self.out.types, arg_tys[i], p, null).ok();
                    // A reference given by value ranks below one given to a reference.
                    match c {
                        Some(Cost::Exact | Cost::AddConst) if self.is_reference(args[i]) => {
                            Some(Cost::RefToValue)
                        }
                        c => c,
                    }
                }
            };
            costs.push(cost?);
        }
        Some(costs)
    }

    fn signature(&self, fid: FuncId) -> String {
        let f = &self.out.funcs[fid];
        let params: Vec<String> = f
            .params
            .iter()
            .map(|p| match p.by_ref {
                true => format!("{} &", self.ty_str(p.ty)),
                false => self.ty_str(p.ty),
            })
            .collect();
        format!("{}({})", self.name(f.name), params.join(", "))
    }

    fn arg_list(&self, arg_tys: &[TypeId]) -> String {
        let v: Vec<String> = arg_tys.iter().map(|&t| self.ty_str(t)).collect();
        format!("({})", v.join(", "))
    }

    fn wrong_arg_count(&mut self, e: &Expr, callee: ast::Ident, fid: FuncId, given: usize) {
        let f = &self.out.funcs[fid];
        let want = f.params.len();
        let span = f.span;
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        self.emit(
            Diagnostic::error(
                codes::WRONG_ARG_COUNT,
                format!(
                    "`{}` takes {want} argument{} but {given} {} given",
                    self.name(callee.name),
                    plural(want),
                    if given == 1 { "was" } else { "were" }
                ),
            )
            .with_primary(e.span, format!("{given} argument{}", plural(given)))
            .with_secondary(span, format!("declared here: `{}`", self.signature(fid))),
        );
    }

    fn ambiguous(&mut self, e: &Expr, callee: ast::Ident, arg_tys: &[TypeId], tied: &[FuncId]) {
        let mut d = Diagnostic::error(
            codes::AMBIGUOUS_OVERLOAD,
            format!("call to `{}` is ambiguous", self.name(callee.name)),
        )
        .with_primary(
            e.span,
            format!("arguments are `{}`", self.arg_list(arg_tys)),
        );
        for &f in tied.iter().take(MAX_LISTED) {
            d = d.with_secondary(
                self.out.funcs[f].span,
                format!("candidate: `{}`", self.signature(f)),
            );
        }
        self.emit(
            d.with_help("cast the arguments to the exact parameter types of the overload you mean"),
        );
    }

    fn no_overload(
        &mut self,
        e: &Expr,
        callee: ast::Ident,
        arg_tys: &[TypeId],
        cands: &[FuncId],
        any_arity: bool,
    ) {
        let mut d = Diagnostic::error(
            codes::NO_MATCHING_OVERLOAD,
            format!(
                "no overload of `{}` accepts `{}`",
                self.name(callee.name),
                self.arg_list(arg_tys)
            ),
        )
        .with_primary(e.span, "no matching overload");
        for &f in cands.iter().take(MAX_LISTED) {
            d = d.with_note(format!("candidate: `{}`", self.signature(f)));
        }
        if cands.len() > MAX_LISTED {
            d = d.with_note(format!("... and {} more", cands.len() - MAX_LISTED));
        }
        if !any_arity {
            d = d.with_help("no overload takes this number of arguments");
        } else if arg_tys.iter().any(|&t| self.out.types.is_varying(t)) {
            d = d.with_help("a varying argument cannot be passed to a uniform parameter; reduce it first (`extract`, `reduce_add`, ...)");
        }
        self.emit(d);
    }

    // ------------------------------------------------------------ built-ins

    fn check_builtin_call(
        &mut self,
        e: &Expr,
        f: BuiltinFn,
        callee: ast::Ident,
        args: &[Expr],
    ) -> TypeId {
        self.set_res(e, Res::BuiltinFn(f));
        match f {
            BuiltinFn::Print => self.check_print(e, args),
            BuiltinFn::Barrier => {
                for a in args {
                    self.check_expr(a);
                }
                if !args.is_empty() {
                    self.emit(
                        Diagnostic::error(
                            codes::WRONG_ARG_COUNT,
                            format!("`barrier` takes no arguments but {} were given", args.len()),
                        )
                        .with_primary(e.span, "remove the arguments"),
                    );
                }
                self.check_barrier_context(callee.span);
                Types::VOID
            }
        }
    }

    /// `print("format with % placeholders", values...)`.
    fn check_print(&mut self, e: &Expr, args: &[Expr]) -> TypeId {
        let Some((fmt, rest)) = args.split_first() else {
            self.emit(
                Diagnostic::error(codes::PRINT_FORMAT, "`print` needs a format string")
                    .with_primary(e.span, "no arguments")
                    .with_help("write `print(\"value: %\\n\", x)`"),
            );
            return Types::VOID;
        };
        let placeholders = match &fmt.kind {
            ExprKind::Str(s) => {
                let ty = self.print_format_type();
                self.set_type(fmt, ty);
                Some(count_placeholders(s))
            }
            _ => {
                self.check_expr(fmt);
                self.emit(
                    Diagnostic::error(
                        codes::PRINT_FORMAT,
                        "the first argument of `print` must be a string literal",
                    )
                    .with_primary(fmt.span, "not a string literal")
                    .with_help("write the format inline: `print(\"x = %\\n\", x)`"),
                );
                None
            }
        };
        for a in rest {
            let t = self.check_expr(a);
            let t = self.rvalue(a, t);
            let printable = matches!(
                self.out.types.kind(t),
                TypeKind::Error
                    | TypeKind::Prim(_)
                    | TypeKind::Enum(_)
                    | TypeKind::Pointer(_)
                    | TypeKind::Null
            );
            if !printable {
                let ts = self.ty_str(t);
                self.emit(
                    Diagnostic::error(
                        codes::MISMATCHED_TYPES,
                        format!("`print` cannot print a value of type `{ts}`"),
                    )
                    .with_primary(a.span, format!("this has type `{ts}`"))
                    .with_help("print its members one by one"),
                );
            }
        }
        if let Some(n) = placeholders {
            if n != rest.len() {
                self.emit(
                    Diagnostic::error(
                        codes::PRINT_FORMAT,
                        format!(
                            "`print` format has {n} `%` placeholder{} but {} value{} given",
                            if n == 1 { "" } else { "s" },
                            rest.len(),
                            if rest.len() == 1 { " was" } else { "s were" }
                        ),
                    )
                    .with_primary(
                        fmt.span,
                        format!("{n} placeholder{}", if n == 1 { "" } else { "s" }),
                    )
                    .with_help("each `%` in the format prints the next value"),
                );
            }
        }
        Types::VOID
    }

    /// The type recorded for a `print` format literal: a uniform pointer to const int8.
    fn print_format_type(&mut self) -> TypeId {
        let c = self
            .out
            .types
            .prim(super::Prim::Int8, super::Variability::Uniform);
        let c = self.types().with_const(c, true);
        self.types().pointer(c, super::Variability::Uniform, false)
    }
}
