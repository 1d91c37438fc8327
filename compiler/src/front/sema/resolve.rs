//! Written types ([`ast::TypeSpec`] plus [`ast::Derived`] parts) to semantic types.
//!
//! The result keeps unbound variability where nothing was written, because the default
//! depends on the context: declarations make it varying ([`Checker::finish_object_type`]),
//! casts take the operand's, struct members and typedefs stay unbound. A pointer's
//! pointee defaults to uniform as soon as the pointer is formed (ISPC's rule).

use super::types::{Prim, StructState, TypeId, TypeKind, Types, Variability};
use super::{Checker, FileName};
use crate::diag::{codes, suggest, Diagnostic};
use crate::front::ast::{self, BaseType, Derived, Qualifiers};
use crate::source::Span;

/// The longest short vector: ISPC sets no limit, but every operation on a vector is
/// lowered element by element.
pub(super) const MAX_VECTOR_LEN: u32 = 1024;

/// The widest `soa<N>`: blocks are aligned to `N` bytes (see `Types::soa_layout`),
/// and 64 is the largest alignment the targets give every object.
pub(super) const MAX_SOA_WIDTH: u32 = 64;

/// Where a written type appears; decides which qualifiers are allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TypeCtx {
    /// A local variable declaration: `shared` allowed.
    Var,
    /// A file-scope variable declaration: `shared` allowed, references not.
    Global,
    Param,
    Return,
    Field,
    Typedef,
    Cast,
    Sizeof,
    /// The type a `new` allocates.
    New,
}

impl TypeCtx {
    fn what(self) -> &'static str {
        match self {
            TypeCtx::Var => "a variable",
            TypeCtx::Global => "a file-scope variable",
            TypeCtx::Param => "a parameter",
            TypeCtx::Return => "a return type",
            TypeCtx::Field => "a struct member",
            TypeCtx::Typedef => "a typedef",
            TypeCtx::Cast => "a cast",
            TypeCtx::Sizeof => "`sizeof`",
            TypeCtx::New => "`new`",
        }
    }
}

impl Checker<'_> {
    /// Resolves a type as written; outer variability stays unbound if none was written.
    pub(super) fn resolve_type(
        &mut self,
        spec: &ast::TypeSpec,
        derived: &[Derived],
        ctx: TypeCtx,
    ) -> TypeId {
        self.check_spec_quals(&spec.quals, ctx);
        let mut ty = self.resolve_base(spec);
        ty = match &spec.base {
            // `uniform T` and `varying T` (and `uniform T<N>`) override the variability
            // `T` is bound to.
            base if self.is_template_type_param(base) => {
                match (spec.quals.uniform(), spec.quals.varying()) {
                    (Some(_), None) => self.types().with_var(ty, Variability::Uniform),
                    (None, Some(_)) => self.types().with_var(ty, Variability::Varying),
                    _ => ty,
                }
            }
            BaseType::Soa { .. } => {
                self.check_soa_rate(&spec.quals);
                ty
            }
            _ => self.apply_variability(ty, &spec.quals, spec.span),
        };
        if spec.quals.shared().is_some() && spec.quals.varying().is_none() {
            ty = self.types().bind(ty, Variability::Uniform);
        }
        if spec.quals.const_().is_some() {
            ty = self.types().with_const(ty, true);
        }
        // `task` makes the function the first function pointer part points to a task
        // (`task void (*f)(...)`); on any other type it means nothing.
        let task_part = match spec.quals.task() {
            Some(at) => {
                let part = derived
                    .iter()
                    .position(|d| matches!(d, Derived::FnPtr { .. }));
                if part.is_none() {
                    self.misplaced_task(at, ctx);
                }
                part
            }
            None => None,
        };
        for (i, part) in derived.iter().enumerate() {
            match part {
                // A reference does not change the type: the declaration is of a
                // `T` that lives elsewhere (see `reference_span`).
                Derived::Reference { span } => {
                    if !self.check_reference_part(&derived[i + 1..], *span, ctx) {
                        ty = Types::ERROR;
                    }
                }
                Derived::FnPtr { params, quals, .. } => {
                    let task = spec.quals.task().filter(|_| task_part == Some(i));
                    ty = self.fn_ptr_type(ty, params, quals, task);
                }
                // A struct member may be an array of no elements (C's and ISPC's
                // trailing array, reached past the struct's end).
                _ => ty = self.apply_derived(ty, part, matches!(ctx, TypeCtx::Field)),
            }
        }
        ty
    }

    /// E0327 for a `&` anywhere but as the whole declarator of a local variable, a
    /// parameter or a return type: `rest` is what the declarator applies after it.
    /// Returns whether the `&` is allowed (the declaration's type is an error if not,
    /// so its uses report nothing more).
    fn check_reference_part(&mut self, rest: &[Derived], span: Span, ctx: TypeCtx) -> bool {
        let what = match rest.first() {
            Some(Derived::Reference { .. }) => "a reference to a reference".to_string(),
            Some(Derived::Pointer { .. }) => "a pointer to a reference".to_string(),
            Some(Derived::Array { .. }) => "an array of references".to_string(),
            Some(Derived::FnPtr { .. }) => {
                "a pointer to a function returning a reference".to_string()
            }
            None if matches!(ctx, TypeCtx::Var | TypeCtx::Param | TypeCtx::Return) => return true,
            None => format!("a reference as {}", ctx.what()),
        };
        let help = match ctx {
            TypeCtx::Field | TypeCtx::Global => "use a pointer instead: `float * uniform p`",
            _ => "a reference names one object; use a pointer (`float * uniform p`) for anything else",
        };
        self.emit(
            Diagnostic::error(codes::MISPLACED_REFERENCE, format!("{what} is not allowed"))
                .with_primary(span, "this `&` declares a reference")
                .with_help(help),
        );
        false
    }

    /// Where the `&` of a reference declaration is, if `derived` declares one (a
    /// reference is the outermost part; misplaced ones are reported by `resolve_type`).
    pub(super) fn reference_span(derived: &[Derived]) -> Option<Span> {
        match derived.last() {
            Some(Derived::Reference { span }) => Some(*span),
            _ => None,
        }
    }

    /// Resolves a [`ast::TypeName`] (casts and `sizeof`).
    pub(super) fn resolve_type_name(&mut self, tn: &ast::TypeName, ctx: TypeCtx) -> TypeId {
        self.resolve_type(&tn.spec, &tn.derived, ctx)
    }

    /// Binds what is still unbound to varying (the default for objects, parameters and
    /// return types).
    pub(super) fn finish_object_type(&mut self, ty: TypeId) -> TypeId {
        self.types().bind(ty, Variability::Varying)
    }

    /// Is `base` a template type parameter bound in the current instance (alone or as
    /// a short vector's element)?
    fn is_template_type_param(&self, base: &BaseType) -> bool {
        match base {
            BaseType::Named(id) => self.template_type(id.name).is_some(),
            BaseType::Vector { elem, .. } => self.is_template_type_param(elem),
            _ => false,
        }
    }

    /// Reports `uniform varying`, `signed unsigned` and `shared` where it is not allowed.
    fn check_spec_quals(&mut self, q: &Qualifiers, ctx: TypeCtx) {
        if let (Some(u), Some(v)) = (q.uniform(), q.varying()) {
            self.conflicting_variability(u, v);
        }
        if let Some(s) = q.shared() {
            if !matches!(ctx, TypeCtx::Var | TypeCtx::Global) {
                self.emit(
                    Diagnostic::error(
                        codes::INVALID_SHARED,
                        format!("`shared` is not allowed on {}", ctx.what()),
                    )
                    .with_primary(s, "`shared` here")
                    .with_help("`shared` only declares variables, at file scope or in an `export`/`task` function"),
                );
            }
        }
    }

    /// E0104 for `task` on a type that declares no function pointer.
    fn misplaced_task(&mut self, at: Span, ctx: TypeCtx) {
        self.emit(
            Diagnostic::error(
                codes::CONFLICTING_QUALIFIERS,
                format!("`task` cannot be applied to {}", ctx.what()),
            )
            .with_primary(at, "not a function or a pointer to one")
            .with_note(
                "`task` qualifies functions, and pointers to them written with `(*name)(params)`",
            )
            .with_help(
                "declare a task pointer type as `typedef task void (*TaskFn)(uniform int n);`",
            ),
        );
    }

    fn conflicting_variability(&mut self, uniform: Span, varying: Span) {
        self.emit(
            Diagnostic::error(
                codes::CONFLICTING_VARIABILITY,
                "a type cannot be both `uniform` and `varying`",
            )
            .with_primary(varying, "`varying` here")
            .with_secondary(uniform, "`uniform` here")
            .with_help(
                "keep `uniform` for one value per gang, or `varying` for one per program instance",
            ),
        );
    }

    /// Applies `uniform`/`varying` written in a specifier to the base type.
    fn apply_variability(&mut self, ty: TypeId, q: &Qualifiers, span: Span) -> TypeId {
        let (want, at) = match (q.uniform(), q.varying()) {
            (Some(u), None) => (Variability::Uniform, u),
            (None, Some(v)) => (Variability::Varying, v),
            _ => return ty,
        };
        let have = self.out.types.var(ty);
        if have != Variability::Unbound && have != want && !self.out.types.is_error(ty) {
            let tys = self.ty_str(ty);
            self.emit(
                Diagnostic::error(
                    codes::CONFLICTING_VARIABILITY,
                    format!(
                        "`{}` applied to `{tys}`, which is already `{}`",
                        want.as_str(),
                        have.as_str()
                    ),
                )
                .with_primary(at, format!("`{}` here", want.as_str()))
                .with_secondary(span, "the type already has a variability")
                .with_help("remove the qualifier, or remove it from the typedef"),
            );
            return ty;
        }
        self.types().bind(ty, want)
    }

    /// The base type of a specifier (the parser has folded `signed`/`unsigned` in).
    fn resolve_base(&mut self, spec: &ast::TypeSpec) -> TypeId {
        self.resolve_base_type(&spec.base, spec.span)
    }

    fn resolve_base_type(&mut self, base: &BaseType, span: Span) -> TypeId {
        match base {
            BaseType::Vector { elem, len } => self.resolve_vector(elem, *len, span),
            BaseType::Soa { elem, width, span } => self.resolve_soa(elem, *width, *span),
            BaseType::Primitive(p) => match Prim::from_ast(*p) {
                Some(prim) => self.out.types.prim(prim, Variability::Unbound),
                None => Types::VOID,
            },
            BaseType::Named(id) => self.resolve_named_type(*id),
            BaseType::Struct(id) => {
                let sid = self.struct_by_tag(*id);
                self.types().struct_ty(sid, Variability::Unbound, false)
            }
            BaseType::AnonStruct(k) => match self.anon_structs.get(k) {
                Some(&sid) => self.types().struct_ty(sid, Variability::Unbound, false),
                None => Types::ERROR,
            },
            BaseType::Enum(id) => match self.enum_tags.get(&id.name) {
                Some(&eid) => self.types().enum_ty(eid, Variability::Unbound),
                None => {
                    self.unknown_type(*id, "enum ");
                    Types::ERROR
                }
            },
        }
    }

    /// `T<N>`: a short vector of basic type `T` (possibly through a typedef, whose
    /// variability and constness the vector keeps).
    fn resolve_vector(&mut self, elem: &BaseType, len: ast::VecLen, span: Span) -> TypeId {
        let et = self.resolve_base_type(elem, span);
        let n = self.vector_len(len);
        if self.out.types.is_error(et) {
            return Types::ERROR;
        }
        let d = self.out.types.get(et);
        let TypeKind::Prim(p) = d.kind else {
            let what = match d.kind {
                TypeKind::Vector(..) => "a short vector cannot hold short vectors",
                TypeKind::Void => "`void` has no values",
                _ => "only basic types can be vector elements",
            };
            let ts = self.ty_str(et);
            self.emit(
                Diagnostic::error(
                    codes::INVALID_VECTOR_TYPE,
                    format!("`{ts}` cannot be the element type of a short vector"),
                )
                .with_primary(span, what)
                .with_help("use `bool`, an integer type, `float16`, `float` or `double`; for a vector of structs or arrays, use an array"),
            );
            return Types::ERROR;
        };
        let Some(n) = n else {
            return Types::ERROR;
        };
        self.types().vector(p, n, d.var, d.is_const)
    }

    /// `soa<N> S`: struct `S` (possibly through a typedef) in blocks of `N` elements.
    /// `S` must be complete, leave its members' variability unbound (E0413) and not be
    /// bound `uniform`/`varying` itself (E0412); `N` is a power of two (E0335).
    fn resolve_soa(&mut self, elem: &BaseType, width: ast::VecLen, span: Span) -> TypeId {
        let et = self.resolve_base_type(elem, span);
        let width = self.soa_width(width);
        if self.out.types.is_error(et) {
            return Types::ERROR;
        }
        let d = self.out.types.get(et);
        let TypeKind::Struct(sid) = d.kind else {
            let ts = self.ty_str(et);
            self.emit(
                Diagnostic::error(
                    codes::SOA_NOT_STRUCT,
                    format!("`soa` cannot apply to `{ts}`"),
                )
                .with_primary(span, "`soa<N>` applies only to struct types")
                .with_help("for numbers, use an array or a varying value; wrap the members in a struct to lay them out as soa"),
            );
            return Types::ERROR;
        };
        if d.var != Variability::Unbound {
            self.soa_rate_conflict(span, d.var.as_str(), "through its typedef");
            return Types::ERROR;
        }
        if !self.require_complete(et, span) || !self.soa_members_unbound(sid, span, 0) {
            return Types::ERROR;
        }
        let Some(width) = width else {
            return Types::ERROR;
        };
        let target = self.out.target;
        let ty = self.types().soa(sid, width, target);
        self.types().with_const(ty, d.is_const)
    }

    /// The width of `soa<N>`: a constant power of two from 1 to [`MAX_SOA_WIDTH`].
    fn soa_width(&mut self, width: ast::VecLen) -> Option<u32> {
        let (value, span) = match width {
            ast::VecLen::Lit(v, s) => (Some(i128::from(v)), s),
            ast::VecLen::Name(id) => (self.named_constant(id.name), id.span),
        };
        match value {
            Some(v) if v > 0 && v <= i128::from(MAX_SOA_WIDTH) && (v & (v - 1)) == 0 => {
                Some(v as u32)
            }
            _ => {
                let what = match value {
                    Some(v) => format!("`soa<{v}>` has an invalid width"),
                    None => "the width of `soa<N>` must be a constant".to_string(),
                };
                self.emit(
                    Diagnostic::error(codes::INVALID_SOA_WIDTH, what)
                        .with_primary(span, format!("the width must be a power of two from 1 to {MAX_SOA_WIDTH}"))
                        .with_help("write a power of two such as `soa<8>`; the gang size `programCount` is a good choice"),
                );
                None
            }
        }
    }

    /// E0413 for a member of `sid` (or of a struct it holds by value) whose
    /// variability is bound: soa storage holds one uniform value per element.
    fn soa_members_unbound(&mut self, sid: super::StructId, span: Span, depth: u32) -> bool {
        if depth > 64 {
            return true;
        }
        let fields = self.out.types.structs[sid].fields.clone();
        let mut ok = true;
        for f in fields {
            let mut t = f.ty;
            while let TypeKind::Array(e, _) = self.out.types.kind(t) {
                t = e;
            }
            let d = self.out.types.get(t);
            if let TypeKind::Struct(inner) = d.kind {
                if d.var == Variability::Unbound {
                    ok &= self.soa_members_unbound(inner, span, depth + 1);
                    continue;
                }
            }
            if d.var == Variability::Unbound {
                continue;
            }
            let (fname, sname, fs) = (
                self.name(f.name).to_string(),
                self.name(self.out.types.structs[sid].name).to_string(),
                self.ty_str(f.ty),
            );
            let why = match d.kind {
                TypeKind::Soa(..) => "it is itself in soa layout".to_string(),
                _ => format!("it is declared `{}`", d.var.as_str()),
            };
            self.emit(
                Diagnostic::error(
                    codes::SOA_BOUND_MEMBER,
                    format!("struct `{sname}` cannot be laid out as soa: member `{fname}` has type `{fs}`"),
                )
                .with_primary(span, "`soa<N>` applied here")
                .with_secondary(f.span, format!("{why}, but soa storage holds one plain value of each member per element"))
                .with_help("leave the member's variability unbound (no `uniform` or `varying`) in structs used with `soa`"),
            );
            ok = false;
        }
        ok
    }

    /// E0412: `uniform` or `varying` written with `soa<N>`, which is a rate of its own.
    fn check_soa_rate(&mut self, q: &Qualifiers) {
        if let Some(u) = q.uniform() {
            self.soa_rate_conflict(u, "uniform", "here");
        }
        if let Some(v) = q.varying() {
            self.soa_rate_conflict(v, "varying", "here");
        }
    }

    fn soa_rate_conflict(&mut self, at: Span, word: &str, how: &str) {
        self.emit(
            Diagnostic::error(
                codes::SOA_WITH_RATE,
                format!("`{word}` and `soa<N>` cannot both qualify a type"),
            )
            .with_primary(at, format!("`{word}` {how}"))
            .with_note("`soa<N>` is a rate of its own: each element is one uniform-sized value per member, indexed like an array")
            .with_help(format!("remove `{word}`: a uniform index of an soa array gives a uniform struct, a varying index a varying one")),
        );
    }

    /// The length of a short vector: a positive constant, at most [`MAX_VECTOR_LEN`].
    fn vector_len(&mut self, len: ast::VecLen) -> Option<u32> {
        let (value, span) = match len {
            ast::VecLen::Lit(v, s) => (Some(i128::from(v)), s),
            ast::VecLen::Name(id) => (self.named_constant(id.name), id.span),
        };
        let Some(v) = value else {
            let ast::VecLen::Name(id) = len else {
                return None;
            };
            let name = self.name(id.name);
            self.emit(
                Diagnostic::error(
                    codes::INVALID_VECTOR_TYPE,
                    format!("the length of a short vector must be a constant, and `{name}` is not one"),
                )
                .with_primary(span, "not known at compile time")
                .with_help("write a literal (`float<3>`), or name a `const uniform int` initialized with a constant or an enumerator"),
            );
            return None;
        };
        if v <= 0 || v > i128::from(MAX_VECTOR_LEN) {
            self.emit(
                Diagnostic::error(
                    codes::INVALID_VECTOR_TYPE,
                    format!("a short vector of {v} elements"),
                )
                .with_primary(
                    span,
                    format!("the length must be from 1 to {MAX_VECTOR_LEN}"),
                )
                .with_help("for more elements, use an array"),
            );
            return None;
        }
        Some(v as u32)
    }

    /// The value of a name that is an integer constant: an enumerator, or a `const
    /// uniform` variable with a constant initializer.
    fn named_constant(&self, name: crate::front::intern::Symbol) -> Option<i128> {
        if let Some((v, _)) = self.template_value(name) {
            return Some(v);
        }
        let cv = if let Some(l) = self.scopes.lookup(name) {
            self.out.locals[l].const_value
        } else {
            match self.file_names.get(&name)? {
                FileName::Global(g) => self.out.globals[*g].const_value,
                FileName::EnumConst(e, i) => {
                    let v = self.out.types.enums[*e].variants.get(*i as usize)?.1;
                    Some(super::ConstValue::Int(i128::from(v)))
                }
                _ => None,
            }
        };
        match cv? {
            super::ConstValue::Int(v) => Some(v),
            _ => None,
        }
    }

    /// A bare type name: a typedef, struct or enum.
    fn resolve_named_type(&mut self, id: ast::Ident) -> TypeId {
        if let Some(t) = self.template_type(id.name) {
            return t;
        }
        if let Some(t) = self.scopes.lookup_type(id.name) {
            return t;
        }
        match self.file_names.get(&id.name) {
            Some(FileName::Typedef(t)) => *t,
            Some(FileName::Struct(s)) => {
                let s = *s;
                self.types().struct_ty(s, Variability::Unbound, false)
            }
            Some(FileName::Enum(e)) => {
                let e = *e;
                self.types().enum_ty(e, Variability::Unbound)
            }
            _ => match (
                self.struct_tags.get(&id.name),
                self.pointer_sized_prim(id.name),
            ) {
                (Some(&s), _) => self.types().struct_ty(s, Variability::Unbound, false),
                (None, Some(prim)) => self.out.types.prim(prim, Variability::Unbound),
                (None, None) => {
                    self.unknown_type(id, "");
                    Types::ERROR
                }
            },
        }
    }

    /// `size_t`, `ptrdiff_t`, `intptr_t`, `uintptr_t`: the integer type of the
    /// target's pointer width, as in ISPC.
    fn pointer_sized_prim(&self, name: crate::front::intern::Symbol) -> Option<Prim> {
        let (_, _, signed) = crate::front::intern::POINTER_SIZED_TYPES
            .iter()
            .find(|(s, _, _)| *s == name)?;
        let wide = self.out.target.pointer_size == 8;
        Some(match (signed, wide) {
            (true, true) => Prim::Int64,
            (true, false) => Prim::Int32,
            (false, true) => Prim::UInt64,
            (false, false) => Prim::UInt32,
        })
    }

    fn unknown_type(&mut self, id: ast::Ident, prefix: &str) {
        if self.syntax_error_in_body() {
            return;
        }
        let name = self.name(id.name);
        let mut d = Diagnostic::error(
            codes::UNKNOWN_TYPE,
            format!("unknown type `{prefix}{name}`"),
        )
        .with_primary(id.span, "not a declared type");
        let candidates: Vec<&str> = self
            .file_names
            .iter()
            .filter(|(_, n)| {
                matches!(
                    n,
                    FileName::Typedef(_) | FileName::Struct(_) | FileName::Enum(_)
                )
            })
            .map(|(s, _)| self.interner.resolve(*s))
            .chain(Prim::ALL.iter().map(|p| p.name()))
            .collect();
        if let Some(best) = suggest::closest(name, candidates) {
            d = d.with_help(format!("did you mean `{best}`?"));
        }
        self.emit(d);
    }

    /// The struct named by `struct Foo`; an unknown tag declares an incomplete struct
    /// (usable behind a pointer, as in C).
    pub(super) fn struct_by_tag(&mut self, id: ast::Ident) -> super::StructId {
        if let Some(&s) = self.struct_tags.get(&id.name) {
            return s;
        }
        let sid = self.out.types.structs.push(super::types::StructInfo {
            name: id.name,
            span: id.span,
            item: None,
            fields: Vec::new(),
            state: StructState::Pending,
            layouts: Default::default(),
        });
        self.struct_tags.insert(id.name, sid);
        sid
    }

    /// The variability written after a `*` (unbound if none).
    fn pointer_variability(&mut self, quals: &Qualifiers) -> Variability {
        match (quals.uniform(), quals.varying()) {
            (Some(u), Some(v)) => {
                self.conflicting_variability(u, v);
                Variability::Unbound
            }
            (Some(_), None) => Variability::Uniform,
            (None, Some(_)) => Variability::Varying,
            (None, None) => Variability::Unbound,
        }
    }

    /// `ret (* quals)(params)`: a pointer to a function returning `ret`. The signature
    /// is bound as a function declaration's is (unqualified types are varying, arrays
    /// decay), so that it equals the signature of the functions it may point to.
    /// With `task` (where it was written), a pointer to a `task` function, which is
    /// only launched.
    fn fn_ptr_type(
        &mut self,
        ret: TypeId,
        params: &[ast::Param],
        quals: &Qualifiers,
        task: Option<Span>,
    ) -> TypeId {
        let var = self.pointer_variability(quals);
        let mut key = Vec::with_capacity(params.len());
        for p in params {
            let ty = self.resolve_type_name(&p.ty, TypeCtx::Param);
            let ty = self.finish_object_type(ty);
            let by_ref = Self::reference_span(&p.ty.derived).is_some();
            let ty = match self.out.types.kind(ty) {
                TypeKind::Array(elem, _) if !by_ref => {
                    self.types().pointer(elem, Variability::Uniform, false)
                }
                _ => ty,
            };
            if self.out.types.is_void(ty) {
                self.emit(
                    Diagnostic::error(
                        codes::VOID_OBJECT,
                        "a function pointer's parameter is declared `void`",
                    )
                    .with_primary(p.span, "`void` has no values")
                    .with_help("write `(void)` alone for a function without parameters"),
                );
                return Types::ERROR;
            }
            if self.out.types.is_error(ty) || !self.require_complete(ty, p.span) {
                return Types::ERROR;
            }
            let ty = if by_ref {
                ty
            } else {
                self.types().with_const(ty, false)
            };
            key.push((ty, by_ref));
        }
        if self.out.types.is_error(ret) {
            return Types::ERROR;
        }
        if let (Some(at), false) = (task, self.out.types.is_void(ret)) {
            let rs = self.ty_str(ret);
            self.emit(
                Diagnostic::error(
                    codes::TASK_NOT_VOID,
                    format!("a pointer to a `task` function returning `{rs}`"),
                )
                .with_primary(at, "a `task` returns nothing")
                .with_help("a task returns `void`: write results through a pointer parameter"),
            );
            return Types::ERROR;
        }
        let ret = self.finish_object_type(ret);
        let ret = self.types().with_const(ret, false);
        let sig = self.types().sig(super::types::FnSig {
            ret,
            params: key,
            task: task.is_some(),
        });
        self.types().fn_ptr(sig, var, quals.const_().is_some())
    }

    /// Applies one pointer or array declarator part.
    fn apply_derived(&mut self, ty: TypeId, part: &Derived, zero_len_ok: bool) -> TypeId {
        match part {
            Derived::FnPtr { params, quals, .. } => self.fn_ptr_type(ty, params, quals, None),
            Derived::Pointer { quals, span } => {
                // The pointed-to type defaults to uniform.
                let pointee = self.types().bind(ty, Variability::Uniform);
                let var = self.pointer_variability(quals);
                if let Some(s) = quals.shared() {
                    self.emit(
                        Diagnostic::error(
                            codes::INVALID_SHARED,
                            "`shared` cannot qualify a pointer",
                        )
                        .with_primary(s, "`shared` here")
                        .with_secondary(*span, "this pointer"),
                    );
                }
                if self.out.types.is_error(ty) {
                    return Types::ERROR;
                }
                self.types().pointer(pointee, var, quals.const_().is_some())
            }
            Derived::Array { size, span } => {
                if self.out.types.is_void(ty) {
                    self.emit(
                        Diagnostic::error(codes::VOID_OBJECT, "array of `void`")
                            .with_primary(*span, "an array's elements need a type with values"),
                    );
                    return Types::ERROR;
                }
                let len = match size {
                    Some(e) => match self.check_array_size(e, zero_len_ok) {
                        Some(n) => Some(n),
                        None => return Types::ERROR,
                    },
                    None => None,
                };
                if self.out.types.is_error(ty) {
                    return Types::ERROR;
                }
                self.types().array(ty, len)
            }
            Derived::Reference { .. } => ty,
        }
    }

    /// Checks an array size: a positive, uniform integer constant (or 0 where
    /// `zero_len_ok`).
    fn check_array_size(&mut self, e: &ast::Expr, zero_len_ok: bool) -> Option<u32> {
        let ty = self.check_expr(e);
        if self.out.types.is_error(ty) {
            return None;
        }
        if self.out.types.is_varying(ty) {
            self.emit(
                Diagnostic::error(codes::VARYING_ARRAY_SIZE, "array size is varying")
                    .with_primary(e.span, format!("this has type `{}`", self.ty_str(ty)))
                    .with_help("an array size must be a uniform integer constant, such as a literal or a `const uniform int`"),
            );
            return None;
        }
        if !self.out.types.is_integral(ty) {
            self.emit(
                Diagnostic::error(codes::INVALID_ARRAY_SIZE, "array size is not an integer")
                    .with_primary(e.span, format!("this has type `{}`", self.ty_str(ty))),
            );
            return None;
        }
        let Some(v) = self.eval_const(e).and_then(|v| v.as_int()) else {
            self.emit(
                Diagnostic::error(codes::INVALID_ARRAY_SIZE, "array size is not a constant")
                    .with_primary(e.span, "not known at compile time")
                    .with_help("use a literal, an enumerator or a `const uniform int` initialized with a constant"),
            );
            return None;
        };
        if (v == 0 && !zero_len_ok) || v < 0 || v > i128::from(i32::MAX) {
            self.emit(
                Diagnostic::error(
                    codes::INVALID_ARRAY_SIZE,
                    format!("array size {v} is not positive"),
                )
                .with_primary(e.span, "an array needs at least one element")
                .with_help(if v == 0 {
                    "only a struct member may have size 0 (a trailing array reached past the struct's end)"
                } else {
                    "use a positive size"
                }),
            );
            return None;
        }
        self.set_const(e, super::ConstValue::Int(v));
        Some(v as u32)
    }

    /// Requires a type used by value to be complete: a struct (or array of structs) must
    /// be defined, and not contain itself. Resolves a pending struct on the way.
    pub(super) fn require_complete(&mut self, ty: TypeId, span: Span) -> bool {
        let mut t = ty;
        while let TypeKind::Array(e, _) = self.out.types.kind(t) {
            t = e;
        }
        let TypeKind::Struct(sid) = self.out.types.kind(t) else {
            return true;
        };
        let info = &self.out.types.structs[sid];
        let (state, item, name, def_span) =
            (info.state, info.item, self.name(info.name), info.span);
        let d = match (state, item) {
            (_, Some(i)) if i > self.cur_item => Diagnostic::error(
                codes::INCOMPLETE_TYPE,
                format!("struct `{name}` is used by value before its definition"),
            )
            .with_primary(span, "used here")
            .with_secondary(def_span, "defined later here")
            .with_help(format!("move the definition of `{name}` above this use")),
            (StructState::Done, _) => return true,
            (StructState::Pending, Some(_)) => {
                self.resolve_struct(sid);
                return true;
            }
            (StructState::Resolving, _) => Diagnostic::error(
                codes::INCOMPLETE_TYPE,
                format!("struct `{name}` contains itself"),
            )
            .with_primary(span, "a struct cannot contain itself by value")
            .with_secondary(def_span, "the struct being defined")
            .with_help("use a pointer to the struct instead"),
            (_, None) => {
                Diagnostic::error(codes::UNKNOWN_TYPE, format!("unknown type `struct {name}`"))
                    .with_primary(span, "this struct is never defined")
                    .with_help(format!(
                        "define `struct {name} {{ ... }};` before using it by value"
                    ))
            }
        };
        self.emit(d);
        false
    }
}
