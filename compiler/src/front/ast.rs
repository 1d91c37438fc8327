//! The abstract syntax tree, as the parser builds it.
//!
//! Every node carries a [`Span`]. Expressions also carry an [`ExprId`], unique within a
//! translation unit and dense from 0, so that semantic analysis can record each
//! expression's type, resolved name and implicit conversions in side tables
//! (see [`super::sema`]) instead of mutating the tree.
//!
//! Types are kept as written ([`TypeSpec`] plus [`Derived`] declarator parts, C style);
//! sema resolves them to semantic types.

use super::intern::Symbol;
use crate::source::{FileId, Span};

/// Index of an expression node; `0..unit.expr_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExprId(pub u32);

impl ExprId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ident {
    pub name: Symbol,
    pub span: Span,
}

/// Index of a declaration site (a declarator, a `foreach` dimension, the variable of a
/// `foreach_active`/`foreach_unique`); `0..unit.decl_count`. Sema records what each site
/// declared in a side table keyed by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeclId(pub u32);

impl DeclId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A whole program: the user's file with its includes (and, separately parsed, the stdlib).
#[derive(Clone, Debug, Default)]
pub struct TranslationUnit {
    pub items: Vec<Item>,
    /// Number of [`ExprId`]s handed out, so side tables can be sized up front.
    pub expr_count: u32,
    /// Number of [`DeclId`]s handed out.
    pub decl_count: u32,
}

#[derive(Clone, Debug)]
pub enum Item {
    Function(Function),
    /// A file-scope variable declaration (`uniform int table[4] = {...};`, `shared float tile[256];`).
    Global(Decl),
    Struct(StructDef),
    /// `struct Foo;`: declares the tag; the struct stays incomplete until defined.
    StructDecl(Ident),
    Enum(EnumDef),
    Typedef(Typedef),
    /// A function template, an explicit specialization or an explicit instantiation.
    Template(Template),
}

// ---------------------------------------------------------------- types as written

/// A storage class or qualifier keyword that may prefix a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Qual {
    Uniform,
    Varying,
    Const,
    /// `shared`: block-shared storage (GPU `__shared__`).
    Shared,
    Static,
    Extern,
    /// `task` on a function pointer type (`typedef task void (*F)(...)`): the pointer
    /// holds a `task` function and is launched. Sema rejects it on any other type.
    Task,
}

impl Qual {
    pub const ALL: [Qual; 7] = [
        Qual::Static,
        Qual::Extern,
        Qual::Task,
        Qual::Shared,
        Qual::Const,
        Qual::Uniform,
        Qual::Varying,
    ];

    pub fn keyword(self) -> &'static str {
        match self {
            Qual::Uniform => "uniform",
            Qual::Varying => "varying",
            Qual::Const => "const",
            Qual::Shared => "shared",
            Qual::Static => "static",
            Qual::Extern => "extern",
            Qual::Task => "task",
        }
    }
}

/// The qualifiers written on a type, each with where it was written (for diagnostics).
/// The parser records each as written; sema rejects contradictions.
///
/// Stored compactly (a keyword's span is its start plus the keyword's length) because
/// type specifiers are everywhere in the AST and the parser moves them often.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Qualifiers {
    file: FileId,
    /// Start offset + 1 of each [`Qual`]'s keyword; 0 = absent.
    starts: [u32; 7],
}

impl Qualifiers {
    pub fn get(&self, q: Qual) -> Option<Span> {
        let start = self.starts[q as usize].checked_sub(1)?;
        Some(Span::new(
            self.file,
            start,
            start + q.keyword().len() as u32,
        ))
    }

    /// Records `q` written at `span` (the keyword's own span).
    pub fn set(&mut self, q: Qual, span: Span) {
        self.file = span.file;
        self.starts[q as usize] = span.start + 1;
    }

    pub fn has(&self, q: Qual) -> bool {
        self.starts[q as usize] != 0
    }

    pub fn is_empty(&self) -> bool {
        self.starts.iter().all(|&s| s == 0)
    }

    pub fn uniform(&self) -> Option<Span> {
        self.get(Qual::Uniform)
    }
    pub fn varying(&self) -> Option<Span> {
        self.get(Qual::Varying)
    }
    pub fn const_(&self) -> Option<Span> {
        self.get(Qual::Const)
    }
    pub fn shared(&self) -> Option<Span> {
        self.get(Qual::Shared)
    }
    pub fn static_(&self) -> Option<Span> {
        self.get(Qual::Static)
    }
    pub fn extern_(&self) -> Option<Span> {
        self.get(Qual::Extern)
    }
    pub fn task(&self) -> Option<Span> {
        self.get(Qual::Task)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Primitive {
    Void,
    Bool,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Float,
    Double,
    Float16,
}

#[derive(Clone, Debug, PartialEq)]
pub enum BaseType {
    /// A primitive; the parser folds `unsigned`/`signed` in (`unsigned int8` is `UInt8`,
    /// `unsigned` alone is `UInt32`).
    Primitive(Primitive),
    /// A typedef, struct or enum name used bare (ISPC allows `Foo x;` for `struct Foo`).
    Named(Ident),
    /// `struct Foo` with the keyword.
    Struct(Ident),
    /// `enum Foo` with the keyword.
    Enum(Ident),
    /// `struct { ... }` without a tag: the [`StructDef::anon`] number of its definition.
    AnonStruct(u32),
    /// A short vector, `float<3>`: ISPC's `type<N>` on a basic type (or a typedef of
    /// one); sema rejects other element types.
    Vector { elem: Box<BaseType>, len: VecLen },
    /// `soa<N> S`: struct `S` in structure-of-arrays layout, `N` elements per block
    /// (`span` is the `soa<N>` qualifier's); sema rejects other element types.
    Soa {
        elem: Box<BaseType>,
        width: VecLen,
        span: Span,
    },
}

/// The length of a short vector as written: a literal (`float<3>`) or the name of a
/// compile-time constant (`float<N>`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum VecLen {
    Lit(u64, Span),
    Name(Ident),
}

impl VecLen {
    pub fn span(&self) -> Span {
        match self {
            VecLen::Lit(_, s) => *s,
            VecLen::Name(id) => id.span,
        }
    }
}

/// The specifier part of a declaration: qualifiers and a base type.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeSpec {
    pub quals: Qualifiers,
    pub base: BaseType,
    pub span: Span,
}

/// A declarator part. A declaration's parts are listed in the order they apply to the
/// base type, from the base outwards; see [`TypeName`].
#[derive(Clone, Debug)]
pub enum Derived {
    /// `*` with the qualifiers written after it (`* uniform`, `* const`).
    Pointer { quals: Qualifiers, span: Span },
    /// `[N]` or `[]`.
    Array { size: Option<Box<Expr>>, span: Span },
    /// `&`: the declared name refers to an existing object (a C++ reference). Valid only
    /// as the outermost part of a variable, parameter or return type; sema says why
    /// anywhere else.
    Reference { span: Span },
    /// `(* quals name)(params)`: a pointer to a function returning the type built so
    /// far and taking `params` (a C function pointer declarator, `float (*f)(float)`).
    FnPtr {
        params: Vec<Param>,
        quals: Qualifiers,
        span: Span,
    },
}

/// A full type as written in a cast, `sizeof` or declaration: the spec plus the
/// declarator parts, innermost (nearest the name) last.
///
/// `uniform float * uniform a[4]` gives `derived = [Pointer{uniform}, Array(4)]`:
/// apply them in order to the base type: pointer to uniform float, then array of 4 of
/// those. Pointers apply in written order, arrays in reverse written order, so
/// `float m[2][3]` gives `[Array(3), Array(2)]`: an array of 2 arrays of 3 floats.
#[derive(Clone, Debug)]
pub struct TypeName {
    pub spec: TypeSpec,
    pub derived: Vec<Derived>,
    pub span: Span,
}

// ---------------------------------------------------------------- declarations

#[derive(Clone, Debug)]
pub enum Initializer {
    Expr(Expr),
    /// `{ a, b, {c, d} }`
    List(Vec<Initializer>, Span),
}

impl Initializer {
    pub fn span(&self) -> Span {
        match self {
            Initializer::Expr(e) => e.span,
            Initializer::List(_, s) => *s,
        }
    }
}

/// One declared name in a declaration: `*p = &x` in `float *p = &x, y;`.
#[derive(Clone, Debug)]
pub struct Declarator {
    pub id: DeclId,
    pub name: Ident,
    /// Declarator parts in application order (see [`TypeName`]).
    pub derived: Vec<Derived>,
    pub init: Option<Box<Initializer>>,
    pub span: Span,
}

/// `const uniform int a = 1, b[4];`
#[derive(Clone, Debug)]
pub struct Decl {
    pub spec: TypeSpec,
    pub declarators: Vec<Declarator>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Field {
    pub spec: TypeSpec,
    pub name: Ident,
    pub derived: Vec<Derived>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct StructDef {
    /// The tag; for an anonymous struct, [`crate::front::intern::ANON_STRUCT`].
    pub name: Ident,
    pub fields: Vec<Field>,
    pub span: Span,
    /// For `struct { ... }` without a tag: its number in the unit, which
    /// [`BaseType::AnonStruct`] refers to. The parser hoists each to a file-scope item
    /// just before the item it appears in.
    pub anon: Option<u32>,
}

#[derive(Clone, Debug)]
pub struct Enumerator {
    pub name: Ident,
    pub value: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct EnumDef {
    pub name: Option<Ident>,
    pub variants: Vec<Enumerator>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Typedef {
    pub ty: TypeName,
    pub name: Ident,
    pub span: Span,
}

// ---------------------------------------------------------------- functions

/// Function qualifiers, each with the span where it was written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FnQualifiers {
    /// `export`: an entry point callable from the host (ISPC).
    pub export: Option<Span>,
    /// `task`: an entry point launched over a grid of tasks/blocks.
    pub task: Option<Span>,
    pub static_: Option<Span>,
    pub inline: Option<Span>,
    pub noinline: Option<Span>,
    pub extern_: Option<Span>,
    /// `unmasked` on a function: it runs with all lanes on, as in ISPC.
    pub unmasked: Option<Span>,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub ty: Box<TypeName>,
    pub name: Option<Ident>,
    /// A default argument (`float f = 1`), used when a call leaves it out.
    pub default: Option<Box<Expr>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Function {
    pub quals: FnQualifiers,
    /// The return type (its `derived` holds any pointer parts).
    pub ret: TypeName,
    pub name: Ident,
    pub params: Vec<Param>,
    /// `None` for a prototype.
    pub body: Option<Block>,
    pub span: Span,
}

// ---------------------------------------------------------------- templates

/// `template <...> R f(...) {...}` and its relatives, as written.
#[derive(Clone, Debug)]
pub struct Template {
    pub kind: TemplateKind,
    /// The function: for a primary template, its parameters and body mention the
    /// template parameters.
    pub func: Function,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum TemplateKind {
    /// `template <typename T, int N> R f(...)`: a primary template (its body is
    /// checked once per distinct argument list it is instantiated with).
    Primary(Vec<TemplateParam>),
    /// `template <> R f<int>(...)`: an explicit specialization; `None` when written
    /// without template arguments (`template <> R f(int)`), which ISPC does not deduce.
    Specialization(Option<TemplateArgs>),
    /// `template R f<int>(int);`: an explicit instantiation.
    Instantiation(TemplateArgs),
}

#[derive(Clone, Debug)]
pub struct TemplateParam {
    pub name: Ident,
    /// `None` for a type parameter (`typename T`); the type of a non-type parameter
    /// (`int N`) otherwise.
    pub value_ty: Option<TypeSpec>,
    pub span: Span,
}

/// One template argument: a type (`uniform int`) or a constant (`3`, `N`, `B`).
#[derive(Clone, Debug)]
pub enum TemplateArg {
    Type(TypeName),
    Value(Expr),
}

/// `<int, 3>`: explicit template arguments.
#[derive(Clone, Debug)]
pub struct TemplateArgs {
    pub args: Vec<TemplateArg>,
    pub span: Span,
}

// ---------------------------------------------------------------- statements

#[derive(Clone, Debug)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

/// `for (init; cond; step)`: the init clause.
#[derive(Clone, Debug)]
pub enum ForInit {
    Decl(Decl),
    Expr(Expr),
}

#[derive(Clone, Debug)]
pub struct ForeachDim {
    pub id: DeclId,
    pub var: Ident,
    pub start: Box<Expr>,
    pub end: Box<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum CaseLabel {
    Case(Expr),
    Default(Span),
}

/// One arm of a `switch`: its labels and the statements up to the next label.
/// Falling off the end of an arm falls through into the next, as in C.
#[derive(Clone, Debug)]
pub struct SwitchArm {
    pub labels: Vec<CaseLabel>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum StmtKind {
    Block(Block),
    Decl(Box<Decl>),
    /// A typedef in a function body: the name is bound to the end of the block.
    Typedef(Box<Typedef>),
    Expr(Expr),
    Empty,
    /// `if`, or `cif` when `coherent` is set.
    If {
        cond: Expr,
        then: Box<Stmt>,
        else_: Option<Box<Stmt>>,
        coherent: bool,
    },
    /// `for`/`cfor`.
    For {
        init: Option<Box<ForInit>>,
        cond: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
        body: Box<Stmt>,
        coherent: bool,
    },
    /// `while`/`cwhile`.
    While {
        cond: Expr,
        body: Box<Stmt>,
        coherent: bool,
    },
    /// `do ... while`/`cdo`.
    DoWhile {
        body: Box<Stmt>,
        cond: Expr,
        coherent: bool,
    },
    Break,
    Continue,
    /// `goto label;` (only in uniform control flow, to a label of the function body).
    Goto(Ident),
    /// `label: statement`.
    Labeled {
        label: Ident,
        body: Box<Stmt>,
    },
    Return(Option<Expr>),
    Switch {
        cond: Expr,
        arms: Vec<SwitchArm>,
    },
    /// `foreach (i = a ... b, j = c ... d)` or `foreach_tiled (...)`.
    Foreach {
        dims: Vec<ForeachDim>,
        tiled: bool,
        body: Box<Stmt>,
    },
    /// `foreach_active (i) body`
    ForeachActive {
        id: DeclId,
        var: Ident,
        body: Box<Stmt>,
    },
    /// `foreach_unique (v in expr) body`
    ForeachUnique {
        id: DeclId,
        var: Ident,
        expr: Expr,
        body: Box<Stmt>,
    },
    /// `unmasked { ... }`
    Unmasked(Block),
    /// `launch[counts] f(args);`: runs task `f` once per point of the count grid.
    Launch(Box<Launch>),
    /// `sync;`: waits for the tasks this function launched.
    Sync,
    /// `delete ptr;` or `delete[] ptr;` (`array`): frees what `new` returned.
    Delete {
        ptr: Expr,
        array: bool,
    },
    /// A statement the parser could not read; its error was already reported.
    Error,
}

/// A `new` expression: `uniform new T[count]`, `new T(init...)`, `new T`.
#[derive(Clone, Debug)]
pub struct NewExpr {
    /// `uniform new`: one allocation for the gang; otherwise one per program instance.
    pub uniform: bool,
    /// The allocated type as written (its variability defaults to the opposite of the
    /// `new`'s: `varying` under `uniform new`, `uniform` otherwise, as in ISPC).
    pub ty: TypeName,
    /// `[count]`: an array of `count` elements (one element without it).
    pub count: Option<Expr>,
    /// `(a, b, ...)`: the initializer of the one element, as a brace list.
    pub init: Option<Initializer>,
}

/// A `launch` statement.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The task counts, dimension 0 first (at most three are valid; none means one task).
    pub counts: Vec<Expr>,
    /// The brackets that hold the counts, if any.
    pub counts_span: Option<Span>,
    /// The launched call: a `Call` or `CallPtr` expression (sema checks which).
    pub call: Expr,
}

// ---------------------------------------------------------------- expressions

#[derive(Clone, Debug)]
pub struct Expr {
    pub id: ExprId,
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    LogicalAnd,
    LogicalOr,
    /// The comma operator.
    Comma,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Mul => "*",
            Div => "/",
            Rem => "%",
            Add => "+",
            Sub => "-",
            Shl => "<<",
            Shr => ">>",
            Lt => "<",
            Gt => ">",
            Le => "<=",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            BitAnd => "&",
            BitXor => "^",
            BitOr => "|",
            LogicalAnd => "&&",
            LogicalOr => "||",
            Comma => ",",
        }
    }

    /// C's binding strength of a binary operator: higher binds tighter. All are
    /// left-associative. (The comma operator is handled by the grammar.)
    pub fn precedence(self) -> u8 {
        use BinaryOp::*;
        match self {
            Mul | Div | Rem => 10,
            Add | Sub => 9,
            Shl | Shr => 8,
            Lt | Gt | Le | Ge => 7,
            Eq | Ne => 6,
            BitAnd => 5,
            BitXor => 4,
            BitOr => 3,
            LogicalAnd => 2,
            LogicalOr => 1,
            Comma => 0,
        }
    }

    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Lt | Gt | Le | Ge | Eq | Ne)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `+x`
    Plus,
    /// `!x`
    Not,
    /// `~x`
    BitNot,
    /// `*p`
    Deref,
    /// `&x`
    AddrOf,
    PreInc,
    PreDec,
    PostInc,
    PostDec,
}

impl UnaryOp {
    pub fn symbol(self) -> &'static str {
        use UnaryOp::*;
        match self {
            Neg => "-",
            Plus => "+",
            Not => "!",
            BitNot => "~",
            Deref => "*",
            AddrOf => "&",
            PreInc | PostInc => "++",
            PreDec | PostDec => "--",
        }
    }
}

/// Integer literal suffixes: `u`/`U` makes it unsigned, `ll` makes it 64-bit (`long`).
/// A single `l` is accepted and, as in ISPC, changes nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntSuffix {
    pub unsigned: bool,
    pub long: bool,
}

/// The type a floating literal asks for: no suffix or `f` = float (ISPC's rule), `d` =
/// double, `f16` = float16.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatSuffix {
    None,
    F,
    D,
    F16,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Int {
        value: u64,
        suffix: IntSuffix,
    },
    Float {
        value: f64,
        suffix: FloatSuffix,
    },
    Bool(bool),
    /// A character literal's value (its byte).
    Char(u8),
    /// A string literal, escapes processed (only `print` takes one).
    Str(Box<str>),
    /// `NULL`
    Null,
    Ident(Ident),
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `lhs = rhs`, or a compound assignment `lhs op= rhs`.
    Assign {
        op: Option<BinaryOp>,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Ternary {
        cond: Box<Expr>,
        then: Box<Expr>,
        else_: Box<Expr>,
    },
    Cast {
        ty: Box<TypeName>,
        expr: Box<Expr>,
    },
    SizeofType(Box<TypeName>),
    SizeofExpr(Box<Expr>),
    /// A call of a name: a function (its overloads), or a variable holding a function
    /// pointer (sema tells which).
    Call {
        callee: Ident,
        args: Vec<Expr>,
        /// Explicit template arguments: `goo<int>(x)`.
        targs: Option<Box<TemplateArgs>>,
    },
    /// A call through a function pointer computed by an expression: `fs[i](x)`,
    /// `(c ? f : g)(x)`, `s.f(x)`.
    CallPtr {
        callee: Box<Expr>,
        args: Vec<Expr>,
    },
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    /// `base.field`, or `base->field` when `arrow`.
    Member {
        base: Box<Expr>,
        field: Ident,
        arrow: bool,
    },
    /// `new T[n]` and its forms (see [`NewExpr`]).
    New(Box<NewExpr>),
    /// An expression the parser could not read; its error was already reported.
    Error,
}

// ---------------------------------------------------------------- dropping deep trees

/// Expressions are dropped with an explicit stack instead of recursion: a left-deep
/// chain such as `1 + 1 + ... + 1` of a million terms (a long source line, or a
/// macro expansion) would otherwise overflow the thread's stack while being freed.
impl Drop for Expr {
    fn drop(&mut self) {
        let mut pending = Vec::new();
        self.kind.move_children_to(&mut pending);
        while let Some(mut e) = pending.pop() {
            e.kind.move_children_to(&mut pending);
        }
    }
}

impl ExprKind {
    /// Moves the direct sub-expressions into `out`, leaving `self` a leaf.
    fn move_children_to(&mut self, out: &mut Vec<Expr>) {
        use ExprKind as K;
        if matches!(
            self,
            K::Int { .. }
                | K::Float { .. }
                | K::Bool(_)
                | K::Char(_)
                | K::Str(_)
                | K::Null
                | K::Ident(_)
                | K::SizeofType(_)
                | K::Error
        ) {
            return;
        }
        match std::mem::replace(self, K::Error) {
            K::Unary { operand: e, .. }
            | K::SizeofExpr(e)
            | K::Cast { expr: e, .. }
            | K::Member { base: e, .. } => out.push(*e),
            K::Binary { lhs, rhs, .. }
            | K::Assign { lhs, rhs, .. }
            | K::Index {
                base: lhs,
                index: rhs,
            } => out.extend([*lhs, *rhs]),
            K::Ternary { cond, then, else_ } => out.extend([*cond, *then, *else_]),
            K::Call { args, .. } => out.extend(args),
            K::CallPtr { callee, args } => {
                out.push(*callee);
                out.extend(args);
            }
            K::New(n) => out.extend(n.count),
            _ => {}
        }
    }
}

/// Statements too: `if (c) if (c) ...` nests without brackets, as deep as the source
/// is long.
impl Drop for Stmt {
    fn drop(&mut self) {
        let mut pending = Vec::new();
        self.kind.move_children_to(&mut pending);
        while let Some(mut s) = pending.pop() {
            s.kind.move_children_to(&mut pending);
        }
    }
}

impl StmtKind {
    /// Moves the direct sub-statements into `out` (expressions free themselves
    /// iteratively), leaving `self` without any.
    fn move_children_to(&mut self, out: &mut Vec<Stmt>) {
        use StmtKind as K;
        match self {
            K::Block(b) | K::Unmasked(b) => out.append(&mut b.stmts),
            K::Switch { arms, .. } => {
                for arm in arms {
                    out.append(&mut arm.body);
                }
            }
            K::If { then, else_, .. } => {
                out.push(std::mem::replace(then.as_mut(), Stmt::EMPTY));
                if let Some(e) = else_ {
                    out.push(std::mem::replace(e.as_mut(), Stmt::EMPTY));
                }
            }
            K::For { body, .. }
            | K::While { body, .. }
            | K::DoWhile { body, .. }
            | K::Foreach { body, .. }
            | K::ForeachActive { body, .. }
            | K::ForeachUnique { body, .. }
            | K::Labeled { body, .. } => out.push(std::mem::replace(body.as_mut(), Stmt::EMPTY)),
            K::Decl(_)
            | K::Typedef(_)
            | K::Expr(_)
            | K::Empty
            | K::Break
            | K::Continue
            | K::Goto(_)
            | K::Return(_)
            | K::Launch(_)
            | K::Sync
            | K::Delete { .. }
            | K::Error => {}
        }
    }
}

impl Stmt {
    /// A placeholder left where a sub-statement was moved out.
    const EMPTY: Stmt = Stmt {
        kind: StmtKind::Empty,
        span: Span {
            file: crate::source::FileId(0),
            start: 0,
            end: 0,
        },
    };
}
