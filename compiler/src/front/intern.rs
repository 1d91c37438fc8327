//! Interned identifiers: the lexer turns every name into a [`Symbol`] once, so later
//! stages compare and hash names as integers. The map uses the Fx hash: names are short
//! and not adversarial, and SipHash would dominate lexing.

use rustc_hash::FxHashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Symbol(pub u32);

#[derive(Debug, Default, Clone)]
pub struct Interner {
    map: FxHashMap<Box<str>, Symbol>,
    names: Vec<Box<str>>,
}

/// The name every anonymous struct (`struct { ... }`) is shown by; no identifier can
/// spell it. [`Interner::new`] interns it first.
pub const ANON_STRUCT: Symbol = Symbol(0);

/// ISPC's integer types as wide as a pointer (`size_t`, `ptrdiff_t`, `intptr_t`,
/// `uintptr_t`), built-in type names whose width depends on the target; interned by
/// [`Interner::new`] right after [`ANON_STRUCT`].
pub const POINTER_SIZED_TYPES: [(Symbol, &str, bool); 4] = [
    (Symbol(1), "size_t", false),
    (Symbol(2), "ptrdiff_t", true),
    (Symbol(3), "intptr_t", true),
    (Symbol(4), "uintptr_t", false),
];

/// The name the object of a `new` expression goes by in initializer messages (the
/// keyword, which no identifier can spell); interned right after the pointer-sized types.
pub const NEW_OBJECT: Symbol = Symbol(5);

/// The operators a program may overload for its structs, as written after `operator`,
/// each with the word its functions' IR names use. The function `operator+` has the
/// name [`operator_symbol`]`("+")`, which no identifier can spell; [`Interner::new`]
/// interns these names right after [`NEW_OBJECT`], in this order.
pub const OVERLOADABLE_OPERATORS: [(&str, &str); 33] = [
    ("*", "mul"),
    ("/", "div"),
    ("%", "rem"),
    ("+", "add"),
    ("-", "sub"),
    (">>", "shr"),
    ("<<", "shl"),
    ("==", "eq"),
    ("!=", "ne"),
    ("<", "lt"),
    (">", "gt"),
    ("<=", "le"),
    (">=", "ge"),
    ("&", "and"),
    ("|", "or"),
    ("^", "xor"),
    ("&&", "land"),
    ("||", "lor"),
    ("++", "inc"),
    ("--", "dec"),
    ("!", "not"),
    ("~", "bitnot"),
    ("=", "assign"),
    ("+=", "add_assign"),
    ("-=", "sub_assign"),
    ("*=", "mul_assign"),
    ("/=", "div_assign"),
    ("%=", "rem_assign"),
    ("<<=", "shl_assign"),
    (">>=", "shr_assign"),
    ("&=", "and_assign"),
    ("|=", "or_assign"),
    ("^=", "xor_assign"),
];

/// The first symbol of [`OVERLOADABLE_OPERATORS`]' names.
const FIRST_OPERATOR: u32 = NEW_OBJECT.0 + 1;

/// The name of the function overloading `op` (`"+"` → `operator+`), if `op` can be
/// overloaded.
pub fn operator_symbol(op: &str) -> Option<Symbol> {
    OVERLOADABLE_OPERATORS
        .iter()
        .position(|&(o, _)| o == op)
        .map(|i| Symbol(FIRST_OPERATOR + i as u32))
}

/// The operator a function overloads, if its name is one of [`operator_symbol`]'s:
/// its spelling and its IR word.
pub fn overloaded_operator(name: Symbol) -> Option<(&'static str, &'static str)> {
    let i = name.0.checked_sub(FIRST_OPERATOR)?;
    OVERLOADABLE_OPERATORS.get(i as usize).copied()
}

impl Interner {
    pub fn new() -> Self {
        let mut interner = Self::default();
        let anon = interner.intern("(anonymous struct)");
        debug_assert_eq!(anon, ANON_STRUCT);
        for (sym, name, _) in POINTER_SIZED_TYPES {
            let s = interner.intern(name);
            debug_assert_eq!(s, sym);
        }
        let new = interner.intern("new");
        debug_assert_eq!(new, NEW_OBJECT);
        for (op, _) in OVERLOADABLE_OPERATORS {
            let s = interner.intern(&format!("operator{op}"));
            debug_assert_eq!(Some(s), operator_symbol(op));
        }
        interner
    }

    pub fn intern(&mut self, name: &str) -> Symbol {
        if let Some(&sym) = self.map.get(name) {
            return sym;
        }
        let sym = Symbol(self.names.len() as u32);
        self.names.push(name.into());
        self.map.insert(name.into(), sym);
        sym
    }

    /// The symbol for `name` if it was ever interned.
    pub fn get(&self, name: &str) -> Option<Symbol> {
        self.map.get(name).copied()
    }

    pub fn resolve(&self, sym: Symbol) -> &str {
        &self.names[sym.0 as usize]
    }

    /// Every interned name (for "did you mean" searches).
    pub fn names(&self) -> impl Iterator<Item = (Symbol, &str)> {
        self.names
            .iter()
            .enumerate()
            .map(|(i, n)| (Symbol(i as u32), &**n))
    }
}
