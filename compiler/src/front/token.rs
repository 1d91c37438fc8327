//! The parser's tokens: what the preprocessor hands to the grammar.

use super::ast::{FloatSuffix, IntSuffix};
use super::intern::Symbol;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(Symbol),
    /// An identifier that names a type (a typedef, struct or enum name), found by the
    /// preprocessor's pre-scan so the grammar can tell `(T)x` and `T * p;` apart.
    TypeName(Symbol),
    /// The name of a function template followed by `<`: the start of a template
    /// argument list (`goo<int>(x)`), which the pre-scan tells from a less-than.
    TemplateName(Symbol),
    Int(u64, IntSuffix),
    Float(f64, FloatSuffix),
    Char(u8),
    Str(Box<str>),

    // type keywords
    KwVoid,
    KwBool,
    KwInt8,
    KwUInt8,
    KwInt16,
    KwUInt16,
    KwInt,
    KwInt32,
    KwUInt,
    KwUInt32,
    KwInt64,
    KwUInt64,
    KwFloat,
    KwDouble,
    KwFloat16,
    KwUnsigned,
    KwSigned,
    // qualifiers and storage
    KwUniform,
    KwVarying,
    KwConst,
    KwShared,
    KwStatic,
    KwExtern,
    KwInline,
    KwNoinline,
    KwExport,
    KwTask,
    KwStruct,
    KwTypedef,
    KwEnum,
    // statements
    KwIf,
    KwElse,
    KwCif,
    KwFor,
    KwCfor,
    KwWhile,
    KwCwhile,
    KwDo,
    KwCdo,
    KwBreak,
    KwContinue,
    KwGoto,
    KwReturn,
    KwSwitch,
    KwCase,
    KwDefault,
    KwForeach,
    KwForeachTiled,
    KwForeachActive,
    KwForeachUnique,
    KwIn,
    KwUnmasked,
    KwLaunch,
    KwSync,
    KwOperator,
    KwTemplate,
    KwTypename,
    /// `soa`, as in `soa<8> Point pts[10];`.
    KwSoa,
    // expressions
    KwSizeof,
    KwNew,
    KwDelete,
    KwTrue,
    KwFalse,
    KwNull,

    // punctuation
    Ellipsis,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Semi,
    Comma,
    Dot,
    Arrow,
    Question,
    Colon,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    PlusPlus,
    MinusMinus,
    Amp,
    Pipe,
    Caret,
    Tilde,
    Bang,
    Shl,
    Shr,
    AndAnd,
    OrOr,
    Lt,
    Gt,
    Le,
    Ge,
    EqEq,
    Ne,
    Assign,
    PlusAssign,
    MinusAssign,
    StarAssign,
    SlashAssign,
    PercentAssign,
    AmpAssign,
    PipeAssign,
    CaretAssign,
    ShlAssign,
    ShrAssign,
}

/// Builds [`keyword`] from the keyword list ([`super::keywords`]).
macro_rules! keyword_fn {
    ($($spelling:literal => $tok:ident,)*) => {
        /// Keywords, by spelling.
        pub fn keyword(text: &str) -> Option<Tok> {
            use Tok::*;
            Some(match text {
                $($spelling => $tok,)*
                _ => return None,
            })
        }
    };
}

with_keywords!(keyword_fn);

impl Tok {
    /// How the token is shown in "expected ..." messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(_) => "identifier".into(),
            Tok::TypeName(_) => "type name".into(),
            Tok::TemplateName(_) => "template name".into(),
            Tok::Int(..) => "integer literal".into(),
            Tok::Float(..) => "floating-point literal".into(),
            Tok::Char(_) => "character literal".into(),
            Tok::Str(_) => "string literal".into(),
            other => format!("`{}`", other.spelling()),
        }
    }

    /// The source spelling of keywords and punctuation.
    pub fn spelling(&self) -> &'static str {
        use Tok::*;
        match self {
            Ident(_) | TypeName(_) | TemplateName(_) | Int(..) | Float(..) | Char(_) | Str(_) => "",
            KwVoid => "void",
            KwBool => "bool",
            KwInt8 => "int8",
            KwUInt8 => "uint8",
            KwInt16 => "int16",
            KwUInt16 => "uint16",
            KwInt => "int",
            KwInt32 => "int32",
            KwUInt => "uint",
            KwUInt32 => "uint32",
            KwInt64 => "int64",
            KwUInt64 => "uint64",
            KwFloat => "float",
            KwDouble => "double",
            KwFloat16 => "float16",
            KwUnsigned => "unsigned",
            KwSigned => "signed",
            KwUniform => "uniform",
            KwVarying => "varying",
            KwConst => "const",
            KwShared => "shared",
            KwStatic => "static",
            KwExtern => "extern",
            KwInline => "inline",
            KwNoinline => "noinline",
            KwExport => "export",
            KwTask => "task",
            KwStruct => "struct",
            KwTypedef => "typedef",
            KwEnum => "enum",
            KwIf => "if",
            KwElse => "else",
            KwCif => "cif",
            KwFor => "for",
            KwCfor => "cfor",
            KwWhile => "while",
            KwCwhile => "cwhile",
            KwDo => "do",
            KwCdo => "cdo",
            KwBreak => "break",
            KwContinue => "continue",
            KwGoto => "goto",
            KwReturn => "return",
            KwSwitch => "switch",
            KwCase => "case",
            KwDefault => "default",
            KwForeach => "foreach",
            KwForeachTiled => "foreach_tiled",
            KwForeachActive => "foreach_active",
            KwForeachUnique => "foreach_unique",
            KwIn => "in",
            KwUnmasked => "unmasked",
            KwLaunch => "launch",
            KwSync => "sync",
            KwOperator => "operator",
            KwTemplate => "template",
            KwTypename => "typename",
            KwSoa => "soa",
            KwSizeof => "sizeof",
            KwNew => "new",
            KwDelete => "delete",
            KwTrue => "true",
            KwFalse => "false",
            KwNull => "NULL",
            Ellipsis => "...",
            LParen => "(",
            RParen => ")",
            LBracket => "[",
            RBracket => "]",
            LBrace => "{",
            RBrace => "}",
            Semi => ";",
            Comma => ",",
            Dot => ".",
            Arrow => "->",
            Question => "?",
            Colon => ":",
            Plus => "+",
            Minus => "-",
            Star => "*",
            Slash => "/",
            Percent => "%",
            PlusPlus => "++",
            MinusMinus => "--",
            Amp => "&",
            Pipe => "|",
            Caret => "^",
            Tilde => "~",
            Bang => "!",
            Shl => "<<",
            Shr => ">>",
            AndAnd => "&&",
            OrOr => "||",
            Lt => "<",
            Gt => ">",
            Le => "<=",
            Ge => ">=",
            EqEq => "==",
            Ne => "!=",
            Assign => "=",
            PlusAssign => "+=",
            MinusAssign => "-=",
            StarAssign => "*=",
            SlashAssign => "/=",
            PercentAssign => "%=",
            AmpAssign => "&=",
            PipeAssign => "|=",
            CaretAssign => "^=",
            ShlAssign => "<<=",
            ShrAssign => ">>=",
        }
    }
}

/// A token with its source span.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: crate::source::Span,
}

/// A parser location: a byte offset in a file. The grammar's `@L`/`@R` produce these.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    pub file: crate::source::FileId,
    pub offset: u32,
}
