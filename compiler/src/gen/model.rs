//! The generated program as a tree: types, expressions, statements, functions and the
//! launch. The generator builds it, [`super::emit`] prints it and the reducer
//! ([`crate::difftest::reduce`]) shrinks it.
//!
//! Safety is structural, so that no edit of the reducer can bring undefined behaviour
//! in: an index is a node that masks its subscript to the array's power-of-two length,
//! a division masks its divisor into `1..=8`, a shift masks its count below the
//! operand's width and a float-to-integer conversion is guarded against values out of
//! range. Whatever the subexpressions become, the printed program stays defined.

/// A basic type of the language: the launcher's element types are exactly these.
pub use crate::launch::ElemType as Scalar;

/// The integer types.
/// The fewest elements an array read by [`ExprKind::LaneIndex`] has: lane 31, offset 15
/// and `k` 16 read element 62.
pub const NEIGHBOUR_MIN_LEN: u32 = 64;

pub const INTS: [Scalar; 8] = [
    Scalar::I8,
    Scalar::U8,
    Scalar::I16,
    Scalar::U16,
    Scalar::I32,
    Scalar::U32,
    Scalar::I64,
    Scalar::U64,
];

/// What the generator asks of a basic type beyond what the launcher does.
pub trait ScalarInfo: Copy {
    /// The width in bits of an integer type.
    fn bits(self) -> u32;
    fn is_int(self) -> bool;
    fn is_signed(self) -> bool;
}

impl ScalarInfo for Scalar {
    fn bits(self) -> u32 {
        self.size() as u32 * 8
    }

    fn is_int(self) -> bool {
        self.is_integer()
    }

    fn is_signed(self) -> bool {
        self.int_range().is_some_and(|(lo, _)| lo < 0)
    }
}

/// A basic type with its variability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ty {
    pub scalar: Scalar,
    pub uniform: bool,
}

impl Ty {
    pub fn uniform(scalar: Scalar) -> Ty {
        Ty {
            scalar,
            uniform: true,
        }
    }

    pub fn varying(scalar: Scalar) -> Ty {
        Ty {
            scalar,
            uniform: false,
        }
    }

    /// `uniform int32`, `varying float`, ...
    pub fn spelled(self) -> String {
        let q = if self.uniform { "uniform" } else { "varying" };
        format!("{q} {}", self.scalar.name())
    }

    /// Whether a value of type `self` may be used where `want` is expected: the same
    /// basic type, and a uniform value fits a varying place.
    pub fn fits(self, want: Ty) -> bool {
        self.scalar == want.scalar && (self.uniform || !want.uniform)
    }
}

/// A literal value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Literal {
    Bool(bool),
    Int(i128),
    Float(f64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    BitNot,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Floats only (IEEE division is defined for every operand).
    Div,
    And,
    Or,
    Xor,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
        CmpOp::Eq,
        CmpOp::Ne,
    ];

    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }
}

/// An expression and its type.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A literal, printed with a cast to its type: `((int8)-5)`.
    Lit(Literal),
    /// A variable, parameter, struct member (`s1.m0`, `ps->m2`) or built-in value.
    Name(String),
    Unary(UnOp, Box<Expr>),
    /// Both operands have the result's basic type.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `lhs / ((rhs & 7) + 1)` or `%`: the divisor is in `1..=8`.
    SafeDiv {
        rem: bool,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `lhs << (count & (bits - 1))` or `>>`.
    Shift {
        left: bool,
        lhs: Box<Expr>,
        count: Box<Expr>,
    },
    /// A comparison of two operands of one basic type; gives `bool`.
    Compare(CmpOp, Box<Expr>, Box<Expr>),
    /// `&&` (`and` true) or `||` on `bool`s.
    Logic {
        and: bool,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `c ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A conversion that is defined for every value: between integers, from an
    /// integer or `bool` to a float, between floats, from an integer to `bool`.
    Cast(Box<Expr>),
    /// `((varying T)(x))`: a uniform value made varying, for the cross-lane
    /// functions whose uniform overloads mean something else (`popcnt(bool)`).
    Varying(Box<Expr>),
    /// A float converted to an integer type, 0 when it is not strictly inside
    /// `(-1e6, 1e6)` (NaN included).
    FloatToInt(Box<Expr>),
    /// `base[(index) & (len - 1)]`: an array, a buffer or a pointer into an array.
    Index {
        base: String,
        len: u32,
        index: Box<Expr>,
    },
    /// `base[lane + ((offset) & 15) + k]`, `k <= 16`, of an array of at least
    /// [`NEIGHBOUR_MIN_LEN`] elements, where `lane` is `programIndex` (in bounds for
    /// gangs of at most 32 lanes) or `threadIdx.x` (for blocks at most 32 threads
    /// wide). Two of them with one `offset` are neighbouring lanes' loads (shuffle
    /// synthesis).
    LaneIndex {
        base: String,
        lane: &'static str,
        offset: Box<Expr>,
        k: u32,
    },
    /// A call of a generated function or of a standard-library function.
    Call {
        name: String,
        args: Vec<Expr>,
    },
}

impl Expr {
    pub fn new(kind: ExprKind, ty: Ty) -> Expr {
        Expr { kind, ty }
    }

    pub fn lit(lit: Literal, ty: Ty) -> Expr {
        Expr::new(ExprKind::Lit(lit), ty)
    }

    pub fn name(name: impl Into<String>, ty: Ty) -> Expr {
        Expr::new(ExprKind::Name(name.into()), ty)
    }

    /// The literal zero (or `false`) of `scalar`, uniform.
    pub fn zero(scalar: Scalar) -> Expr {
        let lit = match scalar {
            Scalar::Bool => Literal::Bool(false),
            s if s.is_float() => Literal::Float(0.0),
            _ => Literal::Int(0),
        };
        Expr::lit(lit, Ty::uniform(scalar))
    }

    /// The direct subexpressions.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Lit(_) | ExprKind::Name(_) => vec![],
            ExprKind::Unary(_, a)
            | ExprKind::Cast(a)
            | ExprKind::Varying(a)
            | ExprKind::FloatToInt(a) => vec![a],
            ExprKind::Index { index, .. } => vec![index],
            ExprKind::LaneIndex { offset, .. } => vec![offset],
            ExprKind::Binary(_, a, b) | ExprKind::Compare(_, a, b) => vec![a, b],
            ExprKind::SafeDiv { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Shift { lhs, count, .. } => vec![lhs, count],
            ExprKind::Logic { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Cond(c, a, b) => vec![c, a, b],
            ExprKind::Call { args, .. } => args.iter().collect(),
        }
    }

    /// The direct subexpressions, to edit.
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match &mut self.kind {
            ExprKind::Lit(_) | ExprKind::Name(_) => vec![],
            ExprKind::Unary(_, a)
            | ExprKind::Cast(a)
            | ExprKind::Varying(a)
            | ExprKind::FloatToInt(a) => vec![a],
            ExprKind::Index { index, .. } => vec![index],
            ExprKind::LaneIndex { offset, .. } => vec![offset],
            ExprKind::Binary(_, a, b) | ExprKind::Compare(_, a, b) => vec![a, b],
            ExprKind::SafeDiv { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Shift { lhs, count, .. } => vec![lhs, count],
            ExprKind::Logic { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Cond(c, a, b) => vec![c, a, b],
            ExprKind::Call { args, .. } => args.iter_mut().collect(),
        }
    }

    /// The number of nodes of the tree.
    pub fn size(&self) -> usize {
        1 + self.children().iter().map(|c| c.size()).sum::<usize>()
    }
}

/// The assignment operators the generator uses: each is defined for every value
/// (integer arithmetic wraps, lang-spec/types.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignOp {
    Set,
    Add,
    Sub,
    Mul,
    And,
    Or,
    Xor,
}

impl AssignOp {
    pub fn symbol(self) -> &'static str {
        match self {
            AssignOp::Set => "=",
            AssignOp::Add => "+=",
            AssignOp::Sub => "-=",
            AssignOp::Mul => "*=",
            AssignOp::And => "&=",
            AssignOp::Or => "|=",
            AssignOp::Xor => "^=",
        }
    }
}

/// The atomic read-modify-write operations whose final value does not depend on the
/// order the lanes and threads apply them in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Min,
    Max,
    Or,
    Xor,
}

impl AtomicOp {
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Min => "min",
            AtomicOp::Max => "max",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
        }
    }
}

/// A statement. Blocks are `Vec<Stmt>`.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `ty name = init;`
    Decl {
        name: String,
        ty: Ty,
        init: Expr,
    },
    /// `elem name[len] = { init... };` (`len` a power of two).
    ArrayDecl {
        name: String,
        elem: Ty,
        len: u32,
        init: Vec<Expr>,
    },
    /// `uniform S name;` or `varying S name;` then one assignment per member, and
    /// optionally a pointer `S * uniform alias = &name;` whose members are places too.
    StructDecl {
        name: String,
        strukt: usize,
        uniform: bool,
        init: Vec<Expr>,
        alias: Option<String>,
    },
    /// `elem * uniform name = &array[offset];`: a pointer the index nodes use with
    /// length `len` (so the array holds `offset + len` elements).
    PtrDecl {
        name: String,
        elem: Ty,
        array: String,
        offset: u32,
    },
    /// `place op value;`
    Assign {
        place: String,
        op: AssignOp,
        value: Expr,
    },
    /// `base[(index) & (len - 1)] = value;`
    Store {
        base: String,
        len: u32,
        index: Expr,
        value: Expr,
    },
    /// `if`/`cif` with an optional `else`.
    If {
        cond: Expr,
        then: Vec<Stmt>,
        els: Option<Vec<Stmt>>,
        coherent: bool,
    },
    /// `for (uniform int32 var = 0; var < count [&& extra]; var++) body`
    For {
        var: String,
        count: u32,
        extra: Option<Expr>,
        body: Vec<Stmt>,
    },
    /// `uniform int32 var = 0; while (var < count && cond) { var++; body }`, or the
    /// `do ... while` form.
    While {
        var: String,
        count: u32,
        cond: Expr,
        body: Vec<Stmt>,
        do_while: bool,
    },
    /// `foreach (var = start ... end) body`
    Foreach {
        var: String,
        start: i32,
        end: i32,
        body: Vec<Stmt>,
    },
    /// `foreach_active (var) body`
    ForeachActive {
        var: String,
        body: Vec<Stmt>,
    },
    /// `foreach_unique (var in value) body`
    ForeachUnique {
        var: String,
        value: Expr,
        body: Vec<Stmt>,
    },
    /// `switch (value) { case ...: body [break;] ... }`: the value is masked to
    /// `0..8`; `None` is `default`.
    Switch {
        value: Expr,
        arms: Vec<SwitchArm>,
    },
    Break,
    Continue,
    /// `return;` in the entry, `return value;` in a generated function.
    Return(Option<Expr>),
    /// `atomic_OP_global(&acc[slot], value);`, its result unused.
    Atomic {
        op: AtomicOp,
        slot: u32,
        value: Expr,
    },
    /// `name(&place, args...);` a call of a generated `void` function that writes its
    /// result through the pointer.
    CallVoid {
        name: String,
        place: String,
        args: Vec<Expr>,
    },
    /// `{ body }`
    Block(Vec<Stmt>),
}

/// One `case` (or `default`) of a [`Stmt::Switch`].
#[derive(Clone, Debug, PartialEq)]
pub struct SwitchArm {
    pub label: Option<i32>,
    pub body: Vec<Stmt>,
    pub ends_with_break: bool,
}

impl Stmt {
    /// The nested statement lists, to walk or edit.
    pub fn blocks_mut(&mut self) -> Vec<&mut Vec<Stmt>> {
        match self {
            Stmt::If { then, els, .. } => {
                let mut v = vec![then];
                if let Some(e) = els {
                    v.push(e);
                }
                v
            }
            Stmt::For { body, .. }
            | Stmt::While { body, .. }
            | Stmt::Foreach { body, .. }
            | Stmt::ForeachActive { body, .. }
            | Stmt::ForeachUnique { body, .. }
            | Stmt::Block(body) => vec![body],
            Stmt::Switch { arms, .. } => arms.iter_mut().map(|a| &mut a.body).collect(),
            _ => vec![],
        }
    }

    /// The expressions the statement holds directly, to edit.
    pub fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Stmt::Decl { init, .. } => vec![init],
            Stmt::ArrayDecl { init, .. } | Stmt::StructDecl { init, .. } => {
                init.iter_mut().collect()
            }
            Stmt::Assign { value, .. } | Stmt::Atomic { value, .. } => vec![value],
            Stmt::Store { index, value, .. } => vec![index, value],
            Stmt::If { cond, .. } => vec![cond],
            Stmt::For { extra, .. } => extra.iter_mut().collect(),
            Stmt::While { cond, .. } => vec![cond],
            Stmt::ForeachUnique { value, .. } | Stmt::Switch { value, .. } => vec![value],
            Stmt::Return(v) => v.iter_mut().collect(),
            Stmt::CallVoid { args, .. } => args.iter_mut().collect(),
            _ => vec![],
        }
    }
}

/// A struct type: `struct S<index> { member types };` with unbound members `m0`...
#[derive(Clone, Debug, PartialEq)]
pub struct StructDef {
    pub members: Vec<Scalar>,
}

/// A generated function.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    /// `None`: a `void` function whose first parameter is `varying T * uniform out`.
    pub ret: Option<Ty>,
    /// The `void` function's output type.
    pub out: Option<Scalar>,
    pub params: Vec<(String, Ty)>,
    pub body: Vec<Stmt>,
}

/// The launch the program is generated for: its shape and scalar input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// The seed of the input buffers' `random(...)`.
    pub input_seed: u32,
    /// The scalar argument `k0`.
    pub k0: i32,
}

impl Launch {
    pub fn block_threads(&self) -> u32 {
        self.block.iter().product()
    }

    pub fn total_threads(&self) -> u32 {
        self.grid.iter().product::<u32>() * self.block_threads()
    }
}

/// A whole generated program.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub seed: u64,
    pub size: u32,
    pub structs: Vec<StructDef>,
    pub functions: Vec<Function>,
    /// The entry's statements after its fixed prologue.
    pub body: Vec<Stmt>,
    /// Whether the entry's prologue goes through `shared` memory and `barrier()`.
    pub shared_prologue: bool,
    /// The values each thread stores to its own output slots at the end.
    pub sinks: Vec<Expr>,
    pub launch: Launch,
}
