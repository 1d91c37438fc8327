//! The lexer: raw tokens of one file, produced by logos.
//!
//! Raw tokens carry no values; [`super::preprocess`] interprets directives, parses
//! literal values (reporting malformed ones with spans) and produces the parser's
//! [`super::token::Tok`] stream.

use logos::Logos;

#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\f\v]+")]
// A backslash right before a newline joins the two lines, as in C (and ISPC).
#[logos(skip r"\\\r?\n")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
#[logos(skip r"/\*([^*]|\*+[^*/])*\*+/")]
pub enum RawTok {
    #[token("\n")]
    Newline,
    /// A whole preprocessor line, from `#` to the end of the line, with `\` continuations.
    #[regex(r"#([^\n\\]|\\[^\n]|\\\n)*", allow_greedy = true)]
    Directive,
    #[token("/*")]
    UnterminatedComment,

    #[regex(r"[A-Za-z_][A-Za-z0-9_]*")]
    Ident,
    /// Integer literal in C's pp-number style: digits, then letters for hex digits,
    /// prefixes and suffixes; validated when its value is parsed.
    #[regex(r"[0-9][0-9A-Za-z_]*")]
    Int,
    /// `0...6`: an integer glued to `...`, split in two by the preprocessor so that
    /// `foreach (i = 0...6)` works as in ISPC.
    #[regex(r"[0-9]+\.\.\.")]
    IntEllipsis,
    #[regex(r"[0-9]+\.[0-9]*([eE][+-]?[0-9]+)?([A-Za-z_][A-Za-z_0-9]*)?")]
    #[regex(r"\.[0-9]+([eE][+-]?[0-9]+)?([A-Za-z_][A-Za-z_0-9]*)?")]
    #[regex(r"[0-9]+[eE][+-]?[0-9]+([A-Za-z_][A-Za-z_0-9]*)?", priority = 4)]
    /// ISPC's "Fortran" doubles, with `d` in place of `e`: `1d-7`, `1.5d3`.
    #[regex(r"[0-9]+[dD][+-]?[0-9]+", priority = 5)]
    #[regex(r"[0-9]+\.[0-9]*[dD][+-]?[0-9]+")]
    #[regex(r"\.[0-9]+[dD][+-]?[0-9]+")]
    /// Hexadecimal floating point as ISPC has it: `0x1.8p1`, a leading `0` or `1`.
    /// A suffix may hold digits after its first letter (`f16`).
    #[regex(
        r"0[xX][01](\.[0-9a-fA-F]*)?[pP][+-]?[0-9]+([A-Za-z_][A-Za-z_0-9]*)?",
        priority = 5
    )]
    Float,
    #[regex(r#""([^"\\\n]|\\[^\n])*""#)]
    Str,
    #[regex(r#""([^"\\\n]|\\[^\n])*"#)]
    UnterminatedStr,
    #[regex(r"'([^'\\\n]|\\[^\n])*'")]
    Char,
    #[regex(r"'([^'\\\n]|\\[^\n])*")]
    UnterminatedChar,

    #[token("...")]
    Ellipsis,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(";")]
    Semi,
    #[token(",")]
    Comma,
    #[token(".")]
    Dot,
    #[token("->")]
    Arrow,
    #[token("?")]
    Question,
    #[token(":")]
    Colon,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("++")]
    PlusPlus,
    #[token("--")]
    MinusMinus,
    #[token("&")]
    Amp,
    #[token("|")]
    Pipe,
    #[token("^")]
    Caret,
    #[token("~")]
    Tilde,
    #[token("!")]
    Bang,
    #[token("<<")]
    Shl,
    #[token(">>")]
    Shr,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("==")]
    EqEq,
    #[token("!=")]
    Ne,
    #[token("=")]
    Assign,
    #[token("+=")]
    PlusAssign,
    #[token("-=")]
    MinusAssign,
    #[token("*=")]
    StarAssign,
    #[token("/=")]
    SlashAssign,
    #[token("%=")]
    PercentAssign,
    #[token("&=")]
    AmpAssign,
    #[token("|=")]
    PipeAssign,
    #[token("^=")]
    CaretAssign,
    #[token("<<=")]
    ShlAssign,
    #[token(">>=")]
    ShrAssign,
}

/// One raw token: kind and byte range in its file. `None` kind = a byte sequence that
/// starts no token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawToken {
    pub kind: Option<RawTok>,
    pub start: u32,
    pub end: u32,
}

/// Lexes a whole file (or a directive's operand text) into raw tokens, keeping error
/// tokens so the caller can report them; an unknown character yields one error token
/// and lexing goes on after it.
pub fn lex(text: &str) -> Vec<RawToken> {
    let mut out = Vec::with_capacity(text.len() / 4);
    let mut lexer = RawTok::lexer(text);
    while let Some(tok) = lexer.next() {
        let span = lexer.span();
        out.push(RawToken {
            kind: tok.ok(),
            start: span.start as u32,
            end: span.end as u32,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Option<RawTok>> {
        lex(src).into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn numbers() {
        use RawTok::*;
        assert_eq!(
            kinds("1 0x1F 1.5f .5 1e5 1.e-3d 2u"),
            vec![
                Some(Int),
                Some(Int),
                Some(Float),
                Some(Float),
                Some(Float),
                Some(Float),
                Some(Int)
            ]
        );
        assert_eq!(kinds("0...6"), vec![Some(IntEllipsis), Some(Int)]);
        assert_eq!(kinds("0 ... 6"), vec![Some(Int), Some(Ellipsis), Some(Int)]);
    }

    #[test]
    fn comments_and_errors() {
        use RawTok::*;
        assert_eq!(
            kinds("a /* x */ b // c\n"),
            vec![Some(Ident), Some(Ident), Some(Newline)]
        );
        assert_eq!(
            kinds("a /* x"),
            vec![Some(Ident), Some(UnterminatedComment), Some(Ident)]
        );
        assert_eq!(kinds("@"), vec![None]);
        assert_eq!(
            kinds("a =\\\n b"),
            vec![Some(Ident), Some(Assign), Some(Ident)]
        );
        assert_eq!(kinds("a \\ b"), vec![Some(Ident), None, Some(Ident)]);
        assert_eq!(kinds("\"ab"), vec![Some(UnterminatedStr)]);
        assert_eq!(
            kinds("#define X 1\nX"),
            vec![Some(Directive), Some(Newline), Some(Ident)]
        );
    }
}
