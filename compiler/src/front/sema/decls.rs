//! File-scope items: structs, enums, typedefs, globals and function signatures, with
//! prototypes matched to definitions and overload sets built.
//!
//! Pass 1 names every struct (so they may refer to each other through pointers in any
//! order). Pass 2 handles the items in order. Function bodies are checked afterwards
//! (see [`Checker::check_bodies`]), so a body sees every file-scope name.

use super::resolve::TypeCtx;
use super::types::{StructId, StructInfo, StructState, TypeId, TypeKind, Types, Variability};
use super::{
    Checker, ConstValue, DeclRef, FileName, FnFlags, FuncId, FuncInfo, GlobalId, GlobalVar,
    ParamInfo,
};
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{self, Item};
use crate::front::intern::Symbol;
use crate::source::Span;

impl Checker<'_> {
    pub(super) fn declare_items(&mut self) {
        let unit = self.unit;
        for (i, item) in unit.items.iter().enumerate() {
            if let Item::Struct(s) = item {
                self.name_struct(s, i);
            }
        }
        for (i, item) in unit.items.iter().enumerate() {
            self.cur_item = i;
            match item {
                Item::Struct(s) => {
                    self.define_struct(s, i);
                    // Later items may take `sizeof` of it: lay it out now, not only at
                    // the end.
                    if let Some(sid) = self.struct_of_def(s) {
                        let target = self.out.target;
                        self.out.types.compute_struct_layout(sid, target);
                    }
                }
                // Names the tag (incomplete until a definition, if any, completes it).
                Item::StructDecl(n) => {
                    self.struct_by_tag(*n);
                }
                Item::Enum(e) => self.declare_enum(e),
                Item::Typedef(t) => self.declare_typedef(t),
                Item::Global(d) => self.declare_globals(d, i),
                Item::Function(f) => self.declare_function(f, i),
                Item::Template(t) => self.declare_template(t, i),
            }
        }
    }

    /// Binds a file-scope name; reports E0201 if it is taken.
    pub(super) fn bind_file_name(&mut self, name: Symbol, span: Span, what: FileName) -> bool {
        if let Some(prev) = self.file_names.get(&name).copied() {
            if let FileName::Builtin(_) = prev {
                self.emit(
                    Diagnostic::error(
                        codes::REDEFINITION,
                        format!("`{}` is a built-in name", self.name(name)),
                    )
                    .with_primary(span, "cannot be redeclared at file scope")
                    .with_help("choose another name"),
                );
                return false;
            }
            self.redefinition(name, span, self.file_name_spans.get(&name).copied());
            return false;
        }
        self.file_names.insert(name, what);
        self.file_name_spans.insert(name, span);
        true
    }

    pub(super) fn redefinition(&mut self, name: Symbol, span: Span, prev: Option<Span>) {
        let mut d = Diagnostic::error(
            codes::REDEFINITION,
            format!("`{}` is already declared in this scope", self.name(name)),
        )
        .with_primary(span, "redeclared here");
        if let Some(p) = prev {
            d = d.with_secondary(p, "previous declaration");
        }
        self.emit(d.with_help("rename one of them"));
    }

    // ------------------------------------------------------------ structs

    /// The struct a definition defines: by its tag, or by its number if anonymous.
    fn struct_of_def(&self, s: &ast::StructDef) -> Option<super::StructId> {
        match s.anon {
            Some(k) => self.anon_structs.get(&k).copied(),
            None => self.struct_tags.get(&s.name.name).copied(),
        }
    }

    fn name_struct(&mut self, s: &ast::StructDef, item: usize) {
        if let Some(k) = s.anon {
            let sid = self.new_struct(s.name.name, s.span, item);
            self.anon_structs.insert(k, sid);
            return;
        }
        if let Some(&prev) = self.struct_tags.get(&s.name.name) {
            let info = &self.out.types.structs[prev];
            if info.item.is_none() {
                // Forward-named by `struct Foo *` before its definition: complete it here.
                self.out.types.structs[prev].item = Some(item);
                self.out.types.structs[prev].span = s.name.span;
            }
            return;
        }
        let sid = self.new_struct(s.name.name, s.name.span, item);
        self.struct_tags.insert(s.name.name, sid);
    }

    /// A struct defined by `item`, its fields still to be resolved.
    fn new_struct(&mut self, name: Symbol, span: Span, item: usize) -> StructId {
        self.out.types.structs.push(StructInfo {
            name,
            span,
            item: Some(item),
            fields: Vec::new(),
            state: StructState::Pending,
            layouts: Default::default(),
        })
    }

    fn define_struct(&mut self, s: &ast::StructDef, item: usize) {
        let Some(sid) = self.struct_of_def(s) else {
            return;
        };
        if s.anon.is_some() {
            self.resolve_struct(sid);
            return;
        }
        if self.out.types.structs[sid].item != Some(item) {
            let prev = self.out.types.structs[sid].span;
            self.redefinition(s.name.name, s.name.span, Some(prev));
            return;
        }
        self.bind_file_name(s.name.name, s.name.span, FileName::Struct(sid));
        if self.out.types.structs[sid].state == StructState::Pending {
            self.resolve_struct(sid);
        }
    }

    /// Resolves a struct's member types (on first by-value use or at its definition).
    pub(super) fn resolve_struct(&mut self, sid: super::StructId) {
        let Some(item) = self.out.types.structs[sid].item else {
            return;
        };
        let Some(Item::Struct(def)) = self.unit.items.get(item) else {
            return;
        };
        self.out.types.structs[sid].state = StructState::Resolving;
        let mut fields: Vec<super::FieldInfo> = Vec::with_capacity(def.fields.len());
        for f in &def.fields {
            let ty = self.resolve_type(&f.spec, &f.derived, TypeCtx::Field);
            let ty = self.check_object_type(ty, f.name, f.span, true);
            if let Some(prev) = fields.iter().find(|p| p.name == f.name.name) {
                let prev_span = prev.span;
                self.redefinition(f.name.name, f.name.span, Some(prev_span));
                continue;
            }
            fields.push(super::FieldInfo {
                name: f.name.name,
                ty,
                span: f.name.span,
            });
        }
        let info = &mut self.out.types.structs[sid];
        info.fields = fields;
        info.state = StructState::Done;
    }

    /// Rejects `void` objects and incomplete structs by value; unsized arrays are
    /// allowed only where `allow_unsized` says so. Returns the type or ERROR.
    pub(super) fn check_object_type(
        &mut self,
        ty: TypeId,
        name: ast::Ident,
        span: Span,
        is_field: bool,
    ) -> TypeId {
        if self.out.types.is_void(ty) {
            self.emit(
                Diagnostic::error(
                    codes::VOID_OBJECT,
                    format!("`{}` is declared `void`", self.name(name.name)),
                )
                .with_primary(span, "`void` has no values")
                .with_help("use `void` only as a return type or as `void *`"),
            );
            return Types::ERROR;
        }
        if is_field && self.has_unsized_dimension(ty) {
            {
                self.emit(
                    Diagnostic::error(codes::INVALID_ARRAY_SIZE, "struct member array has no size")
                        .with_primary(span, "give the array a size"),
                );
                return Types::ERROR;
            }
        }
        if !self.require_complete(ty, name.span) {
            return Types::ERROR;
        }
        ty
    }

    // ------------------------------------------------------------ enums and typedefs

    fn declare_enum(&mut self, e: &ast::EnumDef) {
        let eid = self.out.types.enums.push(super::EnumInfo {
            name: e.name.map(|n| n.name),
            span: e.name.map_or(e.span, |n| n.span),
            variants: Vec::new(),
        });
        if let Some(n) = e.name {
            if let std::collections::hash_map::Entry::Vacant(e) = self.enum_tags.entry(n.name) {
                e.insert(eid);
                self.bind_file_name(n.name, n.span, FileName::Enum(eid));
            } else {
                let prev = self.file_name_spans.get(&n.name).copied();
                self.redefinition(n.name, n.span, prev);
            }
        }
        let mut next: i64 = 0;
        for (i, v) in e.variants.iter().enumerate() {
            if let Some(expr) = &v.value {
                next = self.enum_value(expr).unwrap_or(next);
            }
            self.out.types.enums[eid].variants.push((v.name.name, next));
            self.bind_file_name(v.name.name, v.name.span, FileName::EnumConst(eid, i as u32));
            next = next.wrapping_add(1);
        }
    }

    /// An enumerator's value: a uniform integer constant (E0315).
    fn enum_value(&mut self, e: &ast::Expr) -> Option<i64> {
        let ty = self.check_expr(e);
        if self.out.types.is_error(ty) {
            return None;
        }
        let v = if self.out.types.is_integral(ty) {
            self.eval_const(e).and_then(|v| v.as_int())
        } else {
            None
        };
        match v {
            Some(v) => {
                self.set_const(e, ConstValue::Int(v));
                Some(v as i64)
            }
            None => {
                self.emit(
                    Diagnostic::error(
                        codes::NOT_CONSTANT,
                        "enumerator value is not an integer constant",
                    )
                    .with_primary(
                        e.span,
                        format!("this has type `{}` and is not constant", self.ty_str(ty)),
                    ),
                );
                None
            }
        }
    }

    fn declare_typedef(&mut self, t: &ast::Typedef) {
        let ty = self.resolve_type_name(&t.ty, TypeCtx::Typedef);
        // `typedef struct Foo Foo;` names the struct it already names: fine.
        if let Some(FileName::Struct(s)) = self.file_names.get(&t.name.name).copied() {
            if self.out.types.kind(ty) == TypeKind::Struct(s) {
                return;
            }
        }
        if let Some(FileName::Typedef(prev)) = self.file_names.get(&t.name.name).copied() {
            if prev == ty {
                return;
            }
        }
        self.bind_file_name(t.name.name, t.name.span, FileName::Typedef(ty));
    }

    /// A typedef in a function body: bound to the end of the enclosing block, where it
    /// shadows a file-scope or outer name as in C. Repeating it with the same type in
    /// one block is allowed (C11); with another type it is E0201.
    pub(super) fn declare_local_typedef(&mut self, t: &ast::Typedef) {
        let ty = self.resolve_type_name(&t.ty, TypeCtx::Typedef);
        if let Err(prev) = self.scopes.declare_type(t.name.name, ty) {
            if prev != ty {
                self.redefinition(t.name.name, t.name.span, None);
            }
        }
    }

    // ------------------------------------------------------------ globals

    fn declare_globals(&mut self, d: &ast::Decl, item: usize) {
        let q = &d.spec.quals;
        let shared = q.shared().is_some();
        if let (Some(s), Some(v)) = (q.shared(), q.varying()) {
            self.shared_varying(s, v);
        }
        for decl in &d.declarators {
            let ty = self.resolve_type(&d.spec, &decl.derived, TypeCtx::Global);
            let ty = self.finish_object_type(ty);
            let mut ty = self.check_object_type(ty, decl.name, decl.span, false);
            if let Some(init) = &decl.init {
                if let Some(s) = q.shared() {
                    self.shared_initializer(s, init.span());
                } else {
                    ty = self.check_initializer(ty, init, true, decl.name.name);
                }
            }
            if shared {
                self.require_sized_or_dynamic(ty, decl);
            } else {
                self.require_sized(ty, decl);
            }
            let const_value = match decl.init.as_deref() {
                Some(ast::Initializer::Expr(e)) if self.out.types.get(ty).is_const => {
                    self.out.consts.get(&e.id).copied()
                }
                _ => None,
            };
            let is_extern = q.extern_().is_some() && decl.init.is_none();
            if let Some(prev) = self.redeclared_global(decl, ty, is_extern) {
                if !is_extern {
                    // The definition after `extern` declarations: it gives the object.
                    let g = &mut self.out.globals[prev];
                    g.extern_ = false;
                    g.span = decl.name.span;
                    g.item = item;
                    g.const_value = const_value;
                }
                self.record_decl(decl.id, DeclRef::Global(prev));
                continue;
            }
            let gid = self.out.globals.push(GlobalVar {
                name: decl.name.name,
                ty,
                span: decl.name.span,
                shared,
                static_: q.static_().is_some(),
                extern_: q.extern_().is_some(),
                from_stdlib: self.in_stdlib(decl.span),
                item,
                const_value,
            });
            self.record_decl(decl.id, DeclRef::Global(gid));
            self.bind_file_name(decl.name.name, decl.name.span, FileName::Global(gid));
        }
    }

    /// The global `decl` declares again, as C allows: `extern` declarations of one
    /// object of one type, and at most one definition. Anything else is left to
    /// `bind_file_name`, which reports the redefinition.
    fn redeclared_global(
        &self,
        decl: &ast::Declarator,
        ty: TypeId,
        is_extern: bool,
    ) -> Option<GlobalId> {
        let Some(&FileName::Global(prev)) = self.file_names.get(&decl.name.name) else {
            return None;
        };
        let g = &self.out.globals[prev];
        ((g.extern_ || is_extern) && g.ty == ty).then_some(prev)
    }

    /// An array with a dimension whose size is still unknown after its initializer
    /// (the outermost or a nested one, `float a[2][]`): E0309.
    pub(super) fn require_sized(&mut self, ty: TypeId, decl: &ast::Declarator) {
        if self.has_unsized_dimension(ty) {
            self.emit(
                Diagnostic::error(
                    codes::INVALID_ARRAY_SIZE,
                    format!("array `{}` has no size", self.name(decl.name.name)),
                )
                .with_primary(decl.span, "size missing")
                .with_help("write the size in the brackets, or give an initializer list"),
            );
        }
    }

    /// Some dimension of array type `ty` has no size.
    fn has_unsized_dimension(&self, mut ty: TypeId) -> bool {
        while let TypeKind::Array(elem, len) = self.out.types.kind(ty) {
            if len.is_none() {
                return true;
            }
            ty = elem;
        }
        false
    }

    /// A `shared` array may leave its size out: it is then the launch's dynamic shared
    /// memory, and a program has at most one such array (E0406 for another).
    pub(super) fn require_sized_or_dynamic(&mut self, ty: TypeId, decl: &ast::Declarator) {
        if !matches!(self.out.types.kind(ty), TypeKind::Array(_, None)) {
            return;
        }
        match self.dynamic_shared {
            None => self.dynamic_shared = Some(decl.span),
            Some(first) => self.emit(
                Diagnostic::error(
                    codes::INVALID_SHARED,
                    "a program has at most one unsized `shared` array",
                )
                .with_primary(decl.span, "a second unsized `shared` array")
                .with_secondary(first, "the program's dynamic shared memory is this array")
                .with_help(
                    "give this array a size, or reach the dynamic shared memory through a \
                     pointer into the first array",
                ),
            ),
        }
    }

    pub(super) fn shared_varying(&mut self, shared: Span, varying: Span) {
        self.emit(
            Diagnostic::error(
                codes::INVALID_SHARED,
                "`shared` storage cannot be `varying`",
            )
            .with_primary(varying, "`varying` here")
            .with_secondary(shared, "`shared` makes the elements uniform")
            .with_help("remove `varying`: one `shared` object is common to the whole block"),
        );
    }

    pub(super) fn shared_initializer(&mut self, shared: Span, init: Span) {
        self.emit(
            Diagnostic::error(
                codes::INVALID_SHARED,
                "a `shared` variable cannot have an initializer",
            )
            .with_primary(init, "initializer here")
            .with_secondary(shared, "declared `shared` here")
            .with_help("assign the elements in the function body, then call `barrier()`"),
        );
    }

    // ------------------------------------------------------------ functions

    fn fn_flags(q: &ast::FnQualifiers) -> FnFlags {
        FnFlags {
            export: q.export.is_some(),
            task: q.task.is_some(),
            static_: q.static_.is_some(),
            inline: q.inline.is_some(),
            noinline: q.noinline.is_some(),
            extern_: q.extern_.is_some(),
            unmasked: q.unmasked.is_some(),
        }
    }

    /// A function's flags, return type (and whether it is a reference) and
    /// parameters, checked as for any declaration.
    pub(super) fn function_signature(
        &mut self,
        f: &ast::Function,
    ) -> (FnFlags, TypeId, bool, Vec<ParamInfo>) {
        let flags = Self::fn_flags(&f.quals);
        self.check_fn_qualifiers(f);
        let ret = self.resolve_type_name(&f.ret, TypeCtx::Return);
        let ret = self.finish_object_type(ret);
        let ret_ref = Self::reference_span(&f.ret.derived);
        let ret = match ret_ref {
            Some(amp) => self.check_reference_target(ret, amp),
            None => ret,
        };
        let mut params = self.param_types(f);
        self.check_operator_declaration(f, flags, &mut params);
        self.check_entry_signature(f, flags, ret, &params);
        if flags.is_entry() {
            self.entry_references(f);
        }
        (flags, ret, ret_ref.is_some(), params)
    }

    fn declare_function(&mut self, f: &ast::Function, item: usize) {
        let (flags, ret, is_ref, params) = self.function_signature(f);
        let ret_ref = is_ref.then_some(());
        let fid = match self.find_same_signature(f.name.name, &params) {
            Some(prev) => {
                if self.out.funcs[prev].ret_ref != ret_ref.is_some() {
                    self.reference_return_mismatch(prev, f);
                }
                self.merge_declaration(prev, f, item, flags, ret, params);
                prev
            }
            None => self.new_function(f, item, flags, ret, params),
        };
        self.out.funcs[fid].ret_ref = ret_ref.is_some();
        if let Some(slot) = self.out.item_funcs.get_mut(item) {
            *slot = Some(fid);
        }
    }

    fn check_fn_qualifiers(&mut self, f: &ast::Function) {
        let q = &f.quals;
        if let (Some(e), Some(t)) = (q.export, q.task) {
            self.emit(
                Diagnostic::error(codes::INVALID_ENTRY_QUALIFIERS, "a function cannot be both `export` and `task`")
                    .with_primary(t, "`task` here")
                    .with_secondary(e, "`export` here")
                    .with_help("use `export` for a kernel called from the host, `task` for one launched over a grid"),
            );
        }
        if let (Some(i), Some(n)) = (q.inline, q.noinline) {
            self.emit(
                Diagnostic::error(
                    codes::CONFLICTING_QUALIFIERS,
                    "`inline` and `noinline` on one function",
                )
                .with_primary(n, "`noinline` here")
                .with_secondary(i, "`inline` here"),
            );
        }
        // A `static task` is one the program launches itself (ISPC's examples write them
        // so); an `export` function exists to be called by the host.
        if let (Some(entry), Some(s)) = (q.export, q.static_) {
            self.emit(
                Diagnostic::error(
                    codes::INVALID_ENTRY_QUALIFIERS,
                    "an `export` function cannot be `static`",
                )
                .with_primary(s, "`static` here")
                .with_secondary(entry, "`export` here")
                .with_help("remove `static`: the host must be able to call the function"),
            );
        }
    }

    /// Parameter types, with arrays decayed to uniform pointers; `(void)` is no parameters.
    fn param_types(&mut self, f: &ast::Function) -> Vec<ParamInfo> {
        if let [p] = f.params.as_slice() {
            if p.name.is_none()
                && p.ty.derived.is_empty()
                && p.ty.spec.base == ast::BaseType::Primitive(ast::Primitive::Void)
            {
                return Vec::new();
            }
        }
        let mut out = Vec::with_capacity(f.params.len());
        for p in &f.params {
            let ty = self.resolve_type_name(&p.ty, TypeCtx::Param);
            let ty = self.finish_object_type(ty);
            let amp = Self::reference_span(&p.ty.derived);
            let ty = match self.out.types.kind(ty) {
                // A reference to an array refers to the whole array.
                TypeKind::Array(elem, _) if amp.is_none() => {
                    self.types().pointer(elem, Variability::Uniform, false)
                }
                _ => ty,
            };
            let name = p.name.unwrap_or(ast::Ident {
                name: f.name.name,
                span: p.span,
            });
            let ty = self.check_object_type(ty, name, p.span, false);
            if let (Some(amp), Some(d)) = (amp, p.default.as_deref()) {
                self.reference_default(amp, d);
            }
            let default = p
                .default
                .as_deref()
                .and_then(|d| self.default_argument(d, ty, name.name));
            out.push(ParamInfo {
                name: p.name.map(|n| n.name),
                ty,
                by_ref: amp.is_some(),
                span: p.span,
                local: None,
                default,
            });
        }
        out
    }

    /// A parameter's default argument: a constant of an arithmetic type converted to
    /// the parameter's, as ISPC requires (E0315 for one not known at compile time,
    /// E0322 for a parameter that is not a number).
    /// After an error the parameter still counts as having a default (a zero, never
    /// lowered), so calls that rely on it are not reported again.
    fn default_argument(&mut self, d: &ast::Expr, ty: TypeId, name: Symbol) -> Option<ConstValue> {
        const RECOVERED: Option<ConstValue> = Some(ConstValue::Int(0));
        let et = self.check_expr(d);
        let et = self.rvalue(d, et);
        if !self.coerce(d, et, ty, super::expr::Site::Init { name }) {
            return RECOVERED;
        }
        let Some(prim) = self.out.types.arith_prim(ty) else {
            self.emit(
                Diagnostic::error(
                    codes::INVALID_INITIALIZER,
                    "only a number parameter can have a default argument",
                )
                .with_primary(d.span, format!("a default for `{}`", self.ty_str(ty)))
                .with_help("pass the value at every call instead"),
            );
            return RECOVERED;
        };
        let v = self
            .eval_const(d)
            .and_then(|v| super::consteval::convert(v, prim));
        if v.is_none() {
            self.emit(
                Diagnostic::error(codes::NOT_CONSTANT, "default argument is not a constant")
                    .with_primary(d.span, "not known at compile time")
                    .with_help(
                        "use a constant expression, such as a literal or a `const` variable",
                    ),
            );
            return RECOVERED;
        }
        v
    }

    /// `export`/`task` rules: uniform parameters (E0402), uniform or void return
    /// (E0403), tasks return void (E0505). A task may take varying parameters, as in
    /// ISPC: it is then only launched from code, never by the host (the launcher
    /// refuses it as an entry point).
    fn check_entry_signature(
        &mut self,
        f: &ast::Function,
        flags: FnFlags,
        ret: TypeId,
        params: &[ParamInfo],
    ) {
        if !flags.is_entry() {
            return;
        }
        let kind = if flags.task { "task" } else { "export" };
        for p in params {
            if !flags.task && self.varying_entry_param(p.ty) {
                let tys = self.ty_str(p.ty);
                let help = match self.out.types.kind(p.ty) {
                    TypeKind::Pointer(_) => {
                        "declare it as `uniform T * uniform` (or `uniform T name[]`)".to_string()
                    }
                    _ => format!(
                        "declare it `uniform`: `{}`",
                        tys.replace("varying", "uniform")
                    ),
                };
                self.emit(
                    Diagnostic::error(
                        codes::EXPORT_VARYING_PARAM,
                        format!("parameter of `{kind}` function `{}` is varying", self.name(f.name.name)),
                    )
                    .with_primary(p.span, format!("this has type `{tys}`"))
                    .with_note("the host passes one value for the whole launch, so entry-point parameters must be uniform")
                    .with_help(help),
                );
            }
        }
        if flags.task && !self.out.types.is_void(ret) && !self.out.types.is_error(ret) {
            self.emit(
                Diagnostic::error(
                    codes::TASK_NOT_VOID,
                    format!(
                        "`task` function `{}` must return `void`",
                        self.name(f.name.name)
                    ),
                )
                .with_primary(f.ret.span, format!("returns `{}`", self.ty_str(ret)))
                .with_help("write results through a pointer parameter instead"),
            );
        } else if flags.export && self.out.types.contains_varying(ret) {
            let tys = self.ty_str(ret);
            self.emit(
                Diagnostic::error(
                    codes::EXPORT_VARYING_RETURN,
                    format!(
                        "`export` function `{}` returns a varying value",
                        self.name(f.name.name)
                    ),
                )
                .with_primary(f.ret.span, format!("returns `{tys}`"))
                .with_help(format!(
                    "return `{}` (reduce the value first, e.g. with `reduce_add`), or `void`",
                    tys.replace("varying", "uniform")
                )),
            );
        }
    }

    /// An `export` parameter the host cannot give one value for the whole launch: a
    /// varying value or a struct holding one. A uniform pointer (or array) to varying
    /// data is one address, as ISPC allows (`varying float array[]`).
    fn varying_entry_param(&self, ty: TypeId) -> bool {
        match self.out.types.kind(ty) {
            TypeKind::Pointer(_) | TypeKind::Array(..) => self.out.types.is_varying(ty),
            _ => self.out.types.contains_varying(ty),
        }
    }

    /// Parameter types for signature comparison: top-level `const` does not count,
    /// except on what a reference refers to (`f(float &)` and `f(const float &)` are
    /// two overloads, as in ISPC and C++); `f(float)` and `f(float &)` are two too.
    pub(super) fn signature_key(&mut self, params: &[ParamInfo]) -> Vec<(TypeId, bool)> {
        params
            .iter()
            .map(|p| match p.by_ref {
                true => (p.ty, true),
                false => (self.out.types.with_const(p.ty, false), false),
            })
            .collect()
    }

    /// E0210: a prototype and a definition that disagree on returning a reference.
    fn reference_return_mismatch(&mut self, prev: FuncId, f: &ast::Function) {
        let name = self.name(f.name.name);
        self.emit(
            Diagnostic::error(
                codes::PROTOTYPE_MISMATCH,
                format!("`{name}` is declared both returning a reference and returning a value"),
            )
            .with_primary(f.ret.span, "declared here")
            .with_secondary(self.out.funcs[prev].span, "previous declaration")
            .with_help("write `&` before the name in every declaration, or in none"),
        );
    }

    /// A reference refers to an object: not to `void` (the type becomes an error).
    fn check_reference_target(&mut self, ty: TypeId, amp: Span) -> TypeId {
        if self.out.types.is_void(ty) {
            self.emit(
                Diagnostic::error(codes::MISPLACED_REFERENCE, "a reference to `void` is not allowed")
                    .with_primary(amp, "this `&` declares a reference")
                    .with_help("`void` has no objects to refer to; return `void`, or a reference to a real type"),
            );
            return Types::ERROR;
        }
        ty
    }

    /// E0327 for a default argument on a reference parameter: a constant is no object.
    fn reference_default(&mut self, amp: Span, d: &ast::Expr) {
        self.emit(
            Diagnostic::error(
                codes::MISPLACED_REFERENCE,
                "a reference parameter cannot have a default argument",
            )
            .with_primary(d.span, "a default argument here")
            .with_secondary(amp, "the parameter is a reference")
            .with_help("pass the argument at every call, or make the parameter a value"),
        );
    }

    /// E0327 for an entry point that returns a reference: the host gets values.
    /// Reference parameters are allowed, as in ISPC (its C++ header passes them as
    /// references); `spmdc run` refuses to launch such an entry itself, as it refuses
    /// struct parameters, so it is launched from code.
    fn entry_references(&mut self, f: &ast::Function) {
        let Some(amp) = Self::reference_span(&f.ret.derived) else {
            return;
        };
        self.emit(
            Diagnostic::error(
                codes::MISPLACED_REFERENCE,
                format!(
                    "`export` and `task` function `{}` cannot return a reference",
                    self.name(f.name.name)
                ),
            )
            .with_primary(amp, "this `&` declares a reference")
            .with_note("the host gets the values an entry point returns")
            .with_help("return a value instead"),
        );
    }

    fn find_same_signature(&mut self, name: Symbol, params: &[ParamInfo]) -> Option<FuncId> {
        let cands = self.overloads.get(&name)?.clone();
        let key = self.signature_key(params);
        cands.into_iter().find(|&fid| {
            let other = self.out.funcs[fid].params.clone();
            self.signature_key(&other) == key
        })
    }

    fn new_function(
        &mut self,
        f: &ast::Function,
        item: usize,
        flags: FnFlags,
        ret: TypeId,
        params: Vec<ParamInfo>,
    ) -> FuncId {
        let from_stdlib = self.in_stdlib(f.span);
        let fid = self
            .out
            .funcs
            .push(FuncInfo::declared(f, item, flags, ret, params, from_stdlib));
        // A function template of the name has bound it already: they overload.
        let first = !self.overloads.contains_key(&f.name.name)
            && !self.templates.is_template_name(f.name.name);
        if first {
            self.bind_file_name(f.name.name, f.name.span, FileName::Funcs);
        }
        self.overloads.entry(f.name.name).or_default().push(fid);
        fid
    }

    /// A second declaration of an existing signature: a prototype and its definition
    /// (E0210 if they disagree), or a redefinition (E0207).
    fn merge_declaration(
        &mut self,
        fid: FuncId,
        f: &ast::Function,
        item: usize,
        flags: FnFlags,
        ret: TypeId,
        params: Vec<ParamInfo>,
    ) {
        let prev_span = self.out.funcs[fid].span;
        let name = self.name(f.name.name);
        if f.body.is_some() && self.out.funcs[fid].def_item.is_some() {
            self.emit(
                Diagnostic::error(
                    codes::FUNCTION_REDEFINED,
                    format!("function `{name}` is defined twice"),
                )
                .with_primary(f.name.span, "redefined here")
                .with_secondary(prev_span, "first defined here")
                .with_help(
                    "remove one definition, or change its parameter types to make an overload",
                ),
            );
            return;
        }
        let prev = &self.out.funcs[fid];
        let (prev_ret, prev_flags) = (prev.ret, prev.flags);
        if prev_ret != ret {
            let (a, b) = (self.ty_str(ret), self.ty_str(prev_ret));
            self.emit(
                Diagnostic::error(codes::PROTOTYPE_MISMATCH, format!("`{name}` is declared with two return types"))
                    .with_primary(f.ret.span, format!("returns `{a}` here"))
                    .with_secondary(prev_span, format!("previously declared returning `{b}`"))
                    .with_help("make the declarations agree (functions cannot be overloaded on the return type alone)"),
            );
        } else if prev_flags.export != flags.export || prev_flags.task != flags.task {
            self.emit(
                Diagnostic::error(
                    codes::PROTOTYPE_MISMATCH,
                    format!("declarations of `{name}` disagree on `export`/`task`"),
                )
                .with_primary(f.name.span, "declared here")
                .with_secondary(prev_span, "previous declaration")
                .with_help("write the same qualifiers on the prototype and the definition"),
            );
        }
        let info = &mut self.out.funcs[fid];
        info.decl_items.push(item);
        info.flags.export |= flags.export;
        info.flags.task |= flags.task;
        info.flags.inline |= flags.inline;
        info.flags.noinline |= flags.noinline;
        info.flags.unmasked |= flags.unmasked;
        if f.body.is_some() {
            info.def_item = Some(item);
            // A default given on a prototype still holds for the definition.
            let prev: Vec<_> = info.params.iter().map(|p| p.default).collect();
            info.params = params;
            for (p, d) in info.params.iter_mut().zip(prev) {
                p.default = p.default.or(d);
            }
            info.flags.extern_ = flags.extern_;
        }
    }

    // ------------------------------------------------------------ bodies

    /// Checks function bodies: every body of the program, then the bodies of the stdlib
    /// functions it calls, transitively (all of them with `check_all_stdlib`). Lowering
    /// only lowers called stdlib functions, so nothing needs the others' side tables.
    pub(super) fn check_bodies(&mut self) {
        let unit = self.unit;
        let mut pending_stdlib = Vec::new();
        for (i, item) in unit.items.iter().enumerate() {
            let f = match item {
                Item::Function(f) => f,
                Item::Template(t) if !matches!(t.kind, ast::TemplateKind::Primary(_)) => &t.func,
                _ => continue,
            };
            let Some(body) = &f.body else { continue };
            let Some(fid) = self.out.item_funcs.get(i).copied().flatten() else {
                continue;
            };
            if self.out.funcs[fid].def_item != Some(i) {
                continue; // a redefinition, already reported
            }
            if self.in_stdlib(f.span) && !self.options.check_all_stdlib {
                pending_stdlib.push((i, fid));
                continue;
            }
            self.cur_item = i;
            self.check_function_body(fid, f, body, Some(body));
        }
        // Called stdlib functions and template instances may call others: repeat
        // until nothing new is called or instantiated.
        loop {
            let instances = self.check_pending_instances();
            let (called, rest): (Vec<_>, Vec<_>) = pending_stdlib
                .into_iter()
                .partition(|&(_, fid)| self.out.funcs[fid].called);
            pending_stdlib = rest;
            if called.is_empty() && !instances {
                break;
            }
            for (i, fid) in called {
                if let Item::Function(f) = &unit.items[i] {
                    if let Some(body) = &f.body {
                        self.cur_item = i;
                        self.check_function_body(fid, f, body, Some(body));
                    }
                }
            }
        }
    }

    /// E0211: user functions that are called but have no definition.
    pub(super) fn check_undefined_calls(&mut self) {
        let mut missing: Vec<(FuncId, Span)> = self
            .first_calls
            .iter()
            .filter(|(fid, _)| {
                let f = &self.out.funcs[**fid];
                f.def_item.is_none() && !f.from_stdlib
            })
            .map(|(f, s)| (*f, *s))
            .collect();
        missing.sort_by_key(|(f, _)| *f);
        for (fid, call) in missing {
            let f = &self.out.funcs[fid];
            let (name, span) = (self.name(f.name), f.span);
            self.emit(
                Diagnostic::error(
                    codes::UNDEFINED_FUNCTION,
                    format!("function `{name}` is called but never defined"),
                )
                .with_primary(call, "called here")
                .with_secondary(span, "declared here, without a body")
                .with_help(format!("define `{name}`, or remove the call")),
            );
        }
    }
}
