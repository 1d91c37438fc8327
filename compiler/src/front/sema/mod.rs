//! Semantic analysis: names, types and ISPC's uniform/varying rules.
//!
//! [`check`] walks a parsed [`ast::TranslationUnit`] (the stdlib's items first, then the
//! user's) and produces a [`Checked`] program plus diagnostics. The AST is never changed:
//! every result lives in a side table, most of them indexed by [`ExprId`], so the
//! lowering stage reads the AST and asks `Checked` what each node means.
//!
//! The work is split by concern:
//! - [`types`]: the interned type arena, structs, enums, layouts;
//! - `resolve`: written types ([`ast::TypeName`]) to semantic types;
//! - `decls`: file-scope items (structs, enums, typedefs, globals, function signatures,
//!   prototypes and overload sets);
//! - `scope`: the block scopes of locals;
//! - `expr`: expressions, lvalues and the uniform/varying rules on them;
//! - `conv`: implicit conversions, their costs, the usual arithmetic conversions;
//! - `overload`: choosing among overloads;
//! - `fnptr`: function names as values and calls through function pointers;
//! - `builtins`: `programIndex`, `threadIdx.x`, `print`, `barrier`...;
//! - `consteval`: constant expressions (array sizes, enum values, case labels);
//! - `init`: initializers and brace lists;
//! - `refs`: what a reference may be bound to;
//! - `stmt`: statements and control-flow context (loops, `foreach`, varying control);
//! - `flow`: can the end of a function be reached (missing `return`).

mod builtins;
mod constaddr;
mod consteval;
mod conv;
mod decls;
mod expr;
mod flow;
mod fnptr;
mod heap;
mod init;
mod launch;
mod operators;
mod overload;
mod refs;
mod renumber;
mod resolve;
mod scope;
mod stmt;
mod templates;
pub mod types;

#[cfg(test)]
mod tests;

pub use builtins::{Axis, BuiltinFn, BuiltinVar};
pub use constaddr::{AddrBase, ConstAddress};
pub use conv::{describe_conversion, ConvStep};
pub use types::{
    EnumId, EnumInfo, FieldInfo, FnSig, GpuVar, Layout, Prim, SigId, StructId, StructInfo,
    StructLayout, Target, TypeData, TypeId, TypeKind, Types, Variability,
};

use crate::diag::Diagnostic;
use crate::front::ast::{self, ExprId};
use crate::front::intern::{Interner, Symbol};
use crate::source::{FileId, SourceMap, Span};
use cranelift_entity::{entity_impl, PrimaryMap};
use rustc_hash::{FxHashMap, FxHashSet};

/// Handle of a function (one per distinct signature; a prototype and its definition
/// share one).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(u32);
entity_impl!(FuncId, "fn");

/// Handle of a file-scope variable.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalId(u32);
entity_impl!(GlobalId, "global");

/// Handle of a local variable or parameter. Numbered across the whole program; each
/// function owns a contiguous range (see [`FuncInfo::locals`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(u32);
entity_impl!(LocalId, "local");

/// What a name (or a call) resolved to. Indexed by [`ExprId`] in [`Checked::res`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Res {
    /// The expression is not a name, or was never checked.
    #[default]
    None,
    Local(LocalId),
    Global(GlobalId),
    /// On a `Call` expression: the selected overload.
    Func(FuncId),
    /// An enumerator: its enum and index in [`EnumInfo::variants`].
    EnumConst(EnumId, u32),
    /// A built-in value (`programIndex`; `threadIdx.x` is recorded on the `Member`).
    BuiltinVar(BuiltinVar),
    /// On a `Call` expression: `print` or `barrier`.
    BuiltinFn(BuiltinFn),
    /// A name that failed to resolve (already reported).
    Error,
}

/// A compile-time constant value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConstValue {
    /// An integer or enum value (wrapped to its type's width, sign-extended if signed).
    Int(i128),
    Float(f64),
    Bool(bool),
    /// `NULL` (or `0` converted to a pointer).
    Null,
}

impl ConstValue {
    pub fn as_int(self) -> Option<i128> {
        match self {
            ConstValue::Int(v) => Some(v),
            ConstValue::Bool(b) => Some(i128::from(b)),
            _ => None,
        }
    }
}

/// Function qualifiers that matter after checking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FnFlags {
    pub export: bool,
    pub task: bool,
    pub static_: bool,
    pub inline: bool,
    pub noinline: bool,
    pub extern_: bool,
    pub unmasked: bool,
}

impl FnFlags {
    /// An entry point: launched by the host.
    pub fn is_entry(self) -> bool {
        self.export || self.task
    }
}

#[derive(Clone, Debug)]
pub struct ParamInfo {
    pub name: Option<Symbol>,
    /// The parameter's type after array decay; for a reference, the referred-to type.
    pub ty: TypeId,
    /// Declared with `&`: the callee gets the argument's address.
    pub by_ref: bool,
    pub span: Span,
    /// The local that holds it in the definition's body (None for a prototype only).
    pub local: Option<LocalId>,
    /// The constant a call that leaves this parameter out passes (`float f = 1`).
    pub default: Option<ConstValue>,
}

/// One function: its signature, where it is defined and its locals.
#[derive(Clone, Debug)]
pub struct FuncInfo {
    pub name: Symbol,
    /// The name's span in the first declaration.
    pub span: Span,
    pub params: Vec<ParamInfo>,
    /// The return type; for a function returning a reference, the referred-to type.
    pub ret: TypeId,
    /// Declared `T &f(...)`: a call is an lvalue, the returned object.
    pub ret_ref: bool,
    pub flags: FnFlags,
    /// Index in `unit.items` of the definition (the item with a body), if any.
    pub def_item: Option<usize>,
    /// Indices in `unit.items` of every declaration (prototypes and definition).
    pub decl_items: Vec<usize>,
    /// Declared in the stdlib file: provided by the implementation when it has no body.
    pub from_stdlib: bool,
    /// The locals of the definition (parameters first), as a range of [`LocalId`]s.
    pub locals: std::ops::Range<u32>,
    /// Called from somewhere in the program.
    pub called: bool,
    /// A non-`void` definition whose end is reachable without `return` (W0012): it then
    /// returns zero, which lowering stores in the return slot before the body.
    pub falls_off_end: bool,
    /// An instance of a function template: its index in [`Checked::instances`], the
    /// copy of the template's function it was checked as.
    pub instance: Option<u32>,
    /// For an instance or explicit specialization: its name with the template
    /// arguments (`goo<varying int32, uniform float>`).
    pub template_name: Option<Box<str>>,
}

impl FuncInfo {
    /// A function as its first declaration `f` (item `item`) declares it.
    fn declared(
        f: &ast::Function,
        item: usize,
        flags: FnFlags,
        ret: TypeId,
        params: Vec<ParamInfo>,
        from_stdlib: bool,
    ) -> Self {
        FuncInfo {
            name: f.name.name,
            span: f.name.span,
            params,
            ret,
            ret_ref: false,
            flags,
            def_item: f.body.as_ref().map(|_| item),
            decl_items: vec![item],
            from_stdlib,
            locals: 0..0,
            called: false,
            falls_off_end: false,
            instance: None,
            template_name: None,
        }
    }

    pub fn is_entry(&self) -> bool {
        self.flags.is_entry()
    }

    /// The locals of the definition, parameters first.
    pub fn local_ids(&self) -> impl Iterator<Item = LocalId> {
        self.locals.clone().map(LocalId::from_u32)
    }
}

/// How a local lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalKind {
    /// Parameter number `n`.
    Param(u32),
    /// An ordinary automatic variable.
    Var,
    /// A `static` local: one object for the whole program.
    Static,
    /// A `shared` local: one object per block.
    Shared,
    /// A `foreach`/`foreach_tiled` iteration variable (dimension `n`).
    ForeachIndex(u32),
    /// The `foreach_active` lane variable.
    ForeachActive,
    /// The `foreach_unique` value variable.
    ForeachUnique,
}

#[derive(Clone, Debug)]
pub struct LocalVar {
    pub name: Symbol,
    /// The variable's type; for a reference, the referred-to type.
    pub ty: TypeId,
    /// A reference (`float &r = x;` or a `&` parameter): it holds the address of the
    /// object it names, and every use is that object.
    pub by_ref: bool,
    pub span: Span,
    pub kind: LocalKind,
    pub func: FuncId,
    /// For `const uniform` locals with a constant initializer: the value.
    pub const_value: Option<ConstValue>,
}

#[derive(Clone, Debug)]
pub struct GlobalVar {
    pub name: Symbol,
    pub ty: TypeId,
    pub span: Span,
    pub shared: bool,
    pub static_: bool,
    pub extern_: bool,
    pub from_stdlib: bool,
    /// Index in `unit.items` of the declaring item.
    pub item: usize,
    /// For `const` globals with a constant scalar initializer: the value. (Every
    /// constant leaf of any global initializer is also in [`Checked::const_value`].)
    pub const_value: Option<ConstValue>,
}

/// What a declarator, `foreach` dimension or `foreach_active`/`foreach_unique` statement
/// declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeclRef {
    Local(LocalId),
    Global(GlobalId),
}

/// What sema needs beyond the program: target constants such as `programCount` and
/// `sizeof`, and how much of the standard library to check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    pub target: Target,
    /// Check the body of every stdlib function, not only of those the program calls
    /// (directly or through other stdlib functions). The stdlib is trusted and large,
    /// so ordinary compiles check only what they use; its own tests check it all.
    pub check_all_stdlib: bool,
    /// Every name the whole standard library declares, for "did you mean" help when
    /// the program was given only the library items it reaches
    /// ([`crate::front::stdlib_index`]).
    pub stdlib_names: &'static [&'static str],
}

impl Default for Options {
    fn default() -> Self {
        Options {
            target: Target {
                program_count: 16,
                pointer_size: 8,
            },
            check_all_stdlib: false,
            stdlib_names: &[],
        }
    }
}

/// The checked program: what lowering consumes, next to the AST it describes.
///
/// Expression tables are dense vectors indexed by [`ExprId`]. Declarations are found
/// through [`Checked::decl`] and friends, keyed by the sites' [`ast::DeclId`]s.
#[derive(Debug)]
pub struct Checked {
    pub target: Target,
    pub types: Types,
    pub funcs: PrimaryMap<FuncId, FuncInfo>,
    pub globals: PrimaryMap<GlobalId, GlobalVar>,
    pub locals: PrimaryMap<LocalId, LocalVar>,
    /// Type of every expression, before any implicit conversion. Unchecked → ERROR.
    expr_ty: Vec<TypeId>,
    /// Type each expression is implicitly converted to where it is used (equal to
    /// `expr_ty` when there is no conversion). See [`describe_conversion`].
    expr_conv: Vec<TypeId>,
    /// What each name / call resolved to.
    expr_res: Vec<Res>,
    /// Values of constant expressions sema evaluated: array sizes, enumerator values,
    /// case labels, `sizeof`, and the leaves of global initializers.
    consts: FxHashMap<ExprId, ConstValue>,
    /// Varying initializer leaves of file-scope and `static` variables whose value
    /// depends on `programIndex` (`static int a = 1 + programIndex;`): one constant per
    /// program instance, as ISPC evaluates them at compile time.
    lane_consts: FxHashMap<ExprId, Vec<ConstValue>>,
    /// Pointer-typed initializer leaves of file-scope and `static` variables that are
    /// the address of another such object (`&a`, `table + 5`).
    addr_consts: FxHashMap<ExprId, ConstAddress>,
    /// For compound assignments (`a op= b`): the type the operation is computed in.
    compound: FxHashMap<ExprId, TypeId>,
    /// For `Member` expressions on structs: the member's index in [`StructInfo::fields`].
    members: FxHashMap<ExprId, u32>,
    /// For `Member` expressions on short vectors (`v.x`, `v.zyx`): the index of each
    /// element named, in order. One element is an lvalue of the element type; several
    /// make a new vector.
    swizzles: FxHashMap<ExprId, smallvec::SmallVec<[u8; 4]>>,
    /// Expressions bound to a `const` reference through a temporary holding their value
    /// (they are not lvalues of the referred-to type); every other expression bound to
    /// a reference is an lvalue whose address is taken.
    ref_temps: rustc_hash::FxHashSet<ExprId>,
    /// Operator expressions on structs that call an overloaded operator (`a + b` with
    /// `operator+` declared): the function called is the expression's [`Res::Func`].
    operator_calls: rustc_hash::FxHashSet<ExprId>,
    /// What each declaration site declared, indexed by [`ast::DeclId`].
    decls: Vec<Option<DeclRef>>,
    /// `unit.items[i]` is a function → its [`FuncId`].
    item_funcs: Vec<Option<FuncId>>,
    /// The functions whose address the program takes, in the order sema met them, each
    /// with its signature: function `fn_targets[i]` is the function pointer value
    /// `i + 1` (0 is `NULL`).
    fn_targets: Vec<(FuncId, SigId)>,
    fn_target_ids: FxHashMap<FuncId, u32>,
    /// The functions of template instances, each a copy of its template's function
    /// with its own expression ids (see [`FuncInfo::instance`]).
    pub instances: Vec<std::sync::Arc<ast::Function>>,
    /// The heap routines `new` and `delete` call (found when a program uses them).
    pub heap: heap::HeapFns,
}

impl Checked {
    fn new(unit: &ast::TranslationUnit, target: Target) -> Self {
        let n = unit.expr_count as usize;
        Checked {
            target,
            types: Types::new(),
            funcs: PrimaryMap::new(),
            globals: PrimaryMap::new(),
            locals: PrimaryMap::new(),
            expr_ty: vec![Types::ERROR; n],
            expr_conv: vec![Types::ERROR; n],
            expr_res: vec![Res::None; n],
            consts: FxHashMap::default(),
            lane_consts: FxHashMap::default(),
            addr_consts: FxHashMap::default(),
            compound: FxHashMap::default(),
            members: FxHashMap::default(),
            swizzles: FxHashMap::default(),
            ref_temps: Default::default(),
            operator_calls: Default::default(),
            decls: vec![None; unit.decl_count as usize],
            item_funcs: vec![None; unit.items.len()],
            fn_targets: Vec::new(),
            fn_target_ids: FxHashMap::default(),
            instances: Vec::new(),
            heap: heap::HeapFns::default(),
        }
    }

    /// The definition of function `f`: an item of `unit` (a function, or a template
    /// specialization), or the copy an instance of a template was checked as.
    pub fn func_def<'u>(
        &'u self,
        unit: &'u ast::TranslationUnit,
        f: FuncId,
    ) -> Option<&'u ast::Function> {
        let info = &self.funcs[f];
        if let Some(i) = info.instance {
            return self.instances.get(i as usize).map(|r| &**r);
        }
        match unit.items.get(info.def_item?)? {
            ast::Item::Function(def) => Some(def),
            ast::Item::Template(t) => Some(&t.func),
            _ => None,
        }
    }

    /// The name function `f` has in the IR: its own, or for a template's function
    /// its name with the template arguments, spelled with IR-safe characters
    /// (`goo<varying int32>` is `goo__varying_int32`).
    pub fn ir_name(&self, f: FuncId, interner: &Interner) -> String {
        let info = &self.funcs[f];
        let name = interner.resolve(info.name);
        // `operator+` is `operator.add`: assemblers take the name as a label.
        let name = match crate::front::intern::overloaded_operator(info.name) {
            Some((_, word)) => std::borrow::Cow::Owned(format!("operator.{word}")),
            None => std::borrow::Cow::Borrowed(name),
        };
        let Some(full) = &info.template_name else {
            return name.into_owned();
        };
        let args = full
            .strip_prefix(interner.resolve(info.name))
            .unwrap_or(full)
            .trim_start_matches('<')
            .trim_end_matches('>');
        let mangled: String = args
            .chars()
            .map(|c| match c {
                c if c.is_ascii_alphanumeric() => c,
                '*' => 'p',
                '-' => 'm',
                '[' | ']' => 'a',
                ',' => '_',
                _ => '_',
            })
            .collect();
        format!("{name}__{mangled}")
    }

    /// The type of an expression before implicit conversion.
    pub fn type_of(&self, e: ExprId) -> TypeId {
        self.expr_ty.get(e.index()).copied().unwrap_or(Types::ERROR)
    }

    /// The type an expression is converted to where it is used.
    pub fn converted_type(&self, e: ExprId) -> TypeId {
        self.expr_conv
            .get(e.index())
            .copied()
            .unwrap_or(Types::ERROR)
    }

    /// The implicit conversion applied to an expression, as steps, or empty if none.
    pub fn conversion(&self, e: ExprId) -> Vec<ConvStep> {
        describe_conversion(&self.types, self.type_of(e), self.converted_type(e))
    }

    pub fn res(&self, e: ExprId) -> Res {
        self.expr_res.get(e.index()).copied().unwrap_or(Res::None)
    }

    pub fn const_value(&self, e: ExprId) -> Option<ConstValue> {
        self.consts.get(&e).copied()
    }

    /// For a varying initializer leaf that is constant per program instance but not
    /// for the gang (it reads `programIndex`): its value in each instance.
    pub fn lane_const_values(&self, e: ExprId) -> Option<&[ConstValue]> {
        self.lane_consts.get(&e).map(Vec::as_slice)
    }

    /// For a pointer-typed initializer leaf that is an address constant: the object
    /// and the byte offset.
    pub fn const_address(&self, e: ExprId) -> Option<ConstAddress> {
        self.addr_consts.get(&e).copied()
    }

    /// For a compound assignment expression: the type `a op b` is computed in.
    pub fn compound_op_type(&self, e: ExprId) -> Option<TypeId> {
        self.compound.get(&e).copied()
    }

    /// For a struct member access (`s.m`, `p->m`): the member's index.
    pub fn member_index(&self, e: ExprId) -> Option<u32> {
        self.members.get(&e).copied()
    }

    /// For an element access or swizzle of a short vector (`v.x`, `p->zyx`): the
    /// indices of the elements named.
    pub fn swizzle(&self, e: ExprId) -> Option<&[u8]> {
        self.swizzles.get(&e).map(|s| s.as_slice())
    }

    /// Is `e`, bound to a `const` reference, copied into a temporary (not an lvalue)?
    pub fn binds_temporary(&self, e: ExprId) -> bool {
        self.ref_temps.contains(&e)
    }

    /// Does a call expression return a reference (an lvalue)?
    pub fn returns_reference(&self, call: ExprId) -> bool {
        matches!(self.res(call), Res::Func(f) if self.funcs[f].ret_ref)
    }

    /// The overloaded operator an operator expression calls (`operator+` for `a + b`
    /// on structs), if it calls one.
    pub fn operator_call(&self, e: ExprId) -> Option<FuncId> {
        match self.res(e) {
            Res::Func(f) if self.operator_calls.contains(&e) => Some(f),
            _ => None,
        }
    }

    /// Is `e` a call of an overloaded operator that returns a reference (`++s` with
    /// `S &operator++(S &)`)? It is then an lvalue, as a call returning one is.
    pub fn operator_returns_reference(&self, e: ExprId) -> bool {
        self.operator_call(e).is_some_and(|f| self.funcs[f].ret_ref)
    }

    /// What a declarator declared (a local or, at file scope, a global).
    pub fn decl(&self, d: &ast::Declarator) -> Option<DeclRef> {
        self.decl_ref(d.id)
    }

    fn decl_ref(&self, id: ast::DeclId) -> Option<DeclRef> {
        self.decls.get(id.index()).copied().flatten()
    }

    fn decl_local(&self, id: ast::DeclId) -> Option<LocalId> {
        match self.decl_ref(id) {
            Some(DeclRef::Local(l)) => Some(l),
            _ => None,
        }
    }

    /// The local of a `foreach` dimension's iteration variable.
    pub fn foreach_dim_local(&self, d: &ast::ForeachDim) -> Option<LocalId> {
        self.decl_local(d.id)
    }

    /// The local declared by a `foreach_active` or `foreach_unique` statement.
    pub fn stmt_local(&self, s: &ast::Stmt) -> Option<LocalId> {
        match &s.kind {
            ast::StmtKind::ForeachActive { id, .. } | ast::StmtKind::ForeachUnique { id, .. } => {
                self.decl_local(*id)
            }
            _ => None,
        }
    }

    /// The function an item declares or defines.
    pub fn item_func(&self, item: usize) -> Option<FuncId> {
        self.item_funcs.get(item).copied().flatten()
    }

    /// Every function whose address the program takes, with its signature, in the
    /// order of their function pointer values (the first is 1; 0 is `NULL`).
    pub fn fn_ptr_targets(&self) -> &[(FuncId, SigId)] {
        &self.fn_targets
    }

    /// The function pointer value of function `f`, if its address is taken.
    pub fn fn_ptr_value(&self, f: FuncId) -> Option<u32> {
        self.fn_target_ids.get(&f).copied()
    }

    /// Gives function `f` (of signature `sig`) a function pointer value, once.
    fn take_fn_address(&mut self, f: FuncId, sig: SigId) -> u32 {
        if let Some(&v) = self.fn_target_ids.get(&f) {
            return v;
        }
        self.fn_targets.push((f, sig));
        let v = self.fn_targets.len() as u32;
        self.fn_target_ids.insert(f, v);
        v
    }

    /// Size and alignment of a type on the target.
    pub fn layout(&self, ty: TypeId) -> Layout {
        self.types.layout(ty, self.target)
    }

    /// Functions with a body, in definition order.
    pub fn defined_funcs(&self) -> impl Iterator<Item = (FuncId, &FuncInfo)> {
        self.funcs.iter().filter(|(_, f)| f.def_item.is_some())
    }
}

/// Checks a translation unit with the default target (16 lanes, 64-bit pointers).
pub fn check(
    unit: &ast::TranslationUnit,
    interner: &Interner,
    sources: &SourceMap,
    stdlib_file: FileId,
) -> (Checked, Vec<Diagnostic>) {
    check_with(unit, interner, sources, stdlib_file, &Options::default())
}

/// Checks a translation unit for a given target.
pub fn check_with(
    unit: &ast::TranslationUnit,
    interner: &Interner,
    sources: &SourceMap,
    stdlib_file: FileId,
    options: &Options,
) -> (Checked, Vec<Diagnostic>) {
    let mut cx = Checker::new(unit, interner, sources, stdlib_file, options);
    cx.run();
    (cx.out, cx.diags)
}

/// A name at file scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FileName {
    Global(GlobalId),
    /// One or more function overloads (in `Checker::overloads`).
    Funcs,
    EnumConst(EnumId, u32),
    Builtin(BuiltinVar),
    Typedef(TypeId),
    Struct(StructId),
    Enum(EnumId),
}

/// The checker's state: the tables being built plus the current context.
struct Checker<'a> {
    unit: &'a ast::TranslationUnit,
    options: Options,
    interner: &'a Interner,
    #[allow(dead_code)]
    sources: &'a SourceMap,
    stdlib_file: FileId,
    out: Checked,
    diags: Vec<Diagnostic>,
    syms: builtins::Syms,
    /// Names at file scope (variables, functions, enumerators, types): one namespace.
    file_names: FxHashMap<Symbol, FileName>,
    /// The unsized `shared` array (the launch's dynamic shared memory), once declared.
    dynamic_shared: Option<Span>,
    /// Where each file-scope name was declared (for "previous declaration" labels).
    file_name_spans: FxHashMap<Symbol, Span>,
    /// Struct tags (`struct Foo`), which may also be used bare.
    struct_tags: FxHashMap<Symbol, StructId>,
    enum_tags: FxHashMap<Symbol, EnumId>,
    overloads: FxHashMap<Symbol, smallvec::SmallVec<[FuncId; 2]>>,
    scopes: scope::Scopes,
    /// The function being checked, if any.
    fcx: Option<stmt::FnCtx<'a>>,
    /// The first call of each called function (for E0211).
    first_calls: FxHashMap<FuncId, Span>,
    /// For each local: the varying-condition depth at its declaration (for W0004).
    local_depth: Vec<u32>,
    /// Current nesting depth of expressions and statements (see [`MAX_DEPTH`]).
    depth: u32,
    /// Set once the depth limit was reported, to report it only once.
    depth_reported: bool,
    /// The call a `launch` statement is checking: the one call of a task allowed.
    launched_call: Option<ExprId>,
    /// The program instance constant evaluation gives `programIndex`, while it
    /// evaluates a varying initializer one instance at a time (`None`: not constant).
    const_lane: std::cell::Cell<Option<u32>>,
    /// Index in `unit.items` of the item being checked (declaration order rules).
    cur_item: usize,
    /// For each local: has its value been read (for W0002)?
    local_used: Vec<bool>,
    /// Calls between user functions, and which of them run with a partial mask, for
    /// the interprocedural part of E0507.
    barrier_calls: stmt::BarrierCalls,
    /// Struct-typed expressions that name a uniform struct in memory through a
    /// varying address (`a[i]` with a varying `i`, and their struct members): a member
    /// read through them is gathered per instance, even one declared `uniform`.
    varying_addr_structs: FxHashSet<ExprId>,
    /// The index expression that a member access is about to read through, so E0401
    /// waits for the whole struct to be used.
    member_base: Option<ExprId>,
    /// Anonymous structs by their [`ast::StructDef::anon`] number.
    anon_structs: FxHashMap<u32, StructId>,
    /// Overloaded function names used as values, until a conversion picks the overload.
    pending_fns: FxHashMap<ExprId, fnptr::PendingFn>,
    /// Function templates, their specializations and instances.
    templates: templates::Templates<'a>,
}

/// Deepest nesting of expressions plus statements that sema descends into. Deeper trees
/// get one E0325 instead of a stack overflow.
const MAX_DEPTH: u32 = 1500;

impl<'a> Checker<'a> {
    fn new(
        unit: &'a ast::TranslationUnit,
        interner: &'a Interner,
        sources: &'a SourceMap,
        stdlib_file: FileId,
        options: &Options,
    ) -> Self {
        let mut cx = Checker {
            unit,
            options: *options,
            interner,
            sources,
            stdlib_file,
            out: Checked::new(unit, options.target),
            diags: Vec::new(),
            syms: builtins::Syms::new(interner),
            file_names: FxHashMap::default(),
            dynamic_shared: None,
            file_name_spans: FxHashMap::default(),
            struct_tags: FxHashMap::default(),
            enum_tags: FxHashMap::default(),
            overloads: FxHashMap::default(),
            scopes: scope::Scopes::default(),
            fcx: None,
            first_calls: FxHashMap::default(),
            local_depth: Vec::new(),
            depth: 0,
            depth_reported: false,
            launched_call: None,
            const_lane: std::cell::Cell::new(None),
            cur_item: 0,
            local_used: Vec::new(),
            barrier_calls: stmt::BarrierCalls::default(),
            varying_addr_structs: FxHashSet::default(),
            member_base: None,
            anon_structs: FxHashMap::default(),
            pending_fns: FxHashMap::default(),
            templates: Default::default(),
        };
        cx.declare_builtins();
        cx
    }

    fn run(&mut self) {
        self.declare_items();
        self.check_bodies();
        self.report_pending_fns();
        self.check_barrier_callers();
        self.check_undefined_calls();
        let target = self.out.target;
        self.out.types.compute_struct_layouts(target);
    }

    // ------------------------------------------------------------ small helpers

    fn name(&self, sym: Symbol) -> &'a str {
        self.interner.resolve(sym)
    }

    fn ty_str(&self, ty: TypeId) -> String {
        self.out.types.display(ty, self.interner)
    }

    fn emit(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn in_stdlib(&self, span: Span) -> bool {
        span.file == self.stdlib_file
    }

    fn types(&mut self) -> &mut Types {
        &mut self.out.types
    }

    fn set_type(&mut self, e: &ast::Expr, ty: TypeId) {
        if let Some(slot) = self.out.expr_ty.get_mut(e.id.index()) {
            *slot = ty;
        }
        if let Some(slot) = self.out.expr_conv.get_mut(e.id.index()) {
            *slot = ty;
        }
    }

    fn set_conv(&mut self, e: &ast::Expr, ty: TypeId) {
        if let Some(slot) = self.out.expr_conv.get_mut(e.id.index()) {
            *slot = ty;
        }
    }

    fn set_res(&mut self, e: &ast::Expr, res: Res) {
        if let Some(slot) = self.out.expr_res.get_mut(e.id.index()) {
            *slot = res;
        }
    }

    fn set_const(&mut self, e: &ast::Expr, v: ConstValue) {
        self.out.consts.insert(e.id, v);
    }

    fn set_lane_consts(&mut self, e: &ast::Expr, lanes: Vec<ConstValue>) {
        self.out.lane_consts.insert(e.id, lanes);
    }

    fn set_const_address(&mut self, e: &ast::Expr, a: ConstAddress) {
        self.out.addr_consts.insert(e.id, a);
    }

    fn record_decl(&mut self, site: ast::DeclId, d: DeclRef) {
        if let Some(slot) = self.out.decls.get_mut(site.index()) {
            *slot = Some(d);
        }
    }

    /// Enters one nesting level; false (after reporting once) when too deep.
    fn enter(&mut self, span: Span) -> bool {
        if self.depth >= MAX_DEPTH {
            if !self.depth_reported {
                self.depth_reported = true;
                self.emit(
                    Diagnostic::error(
                        crate::diag::codes::NESTED_TOO_DEEPLY,
                        format!("expression or statement nested more than {MAX_DEPTH} levels deep"),
                    )
                    .with_primary(span, "nesting limit reached here")
                    .with_help("split the expression using temporary variables"),
                );
            }
            return false;
        }
        self.depth += 1;
        true
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }
}
