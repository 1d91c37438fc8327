//! The user's tokens as `--emit tokens` lists them and the playground shows them:
//! where each is, its kind and its spelling.

use serde::Serialize;

use super::FrontResult;
use crate::front::token::Tok;

/// One token of the user's files.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TokenRow {
    /// One-based.
    pub line: usize,
    /// One-based, in characters.
    pub column: usize,
    /// `ident`, `type-name`, `int`, `float`, `char`, `string`, `keyword` or `punct`.
    pub kind: &'static str,
    pub text: String,
    /// The value of a literal, when it has one.
    pub value: Option<String>,
    /// Byte offsets in its file.
    pub span: [u32; 2],
}

fn kind(tok: &Tok) -> &'static str {
    match tok {
        Tok::Ident(_) => "ident",
        Tok::TypeName(_) => "type-name",
        Tok::TemplateName(_) => "template-name",
        Tok::Int(..) => "int",
        Tok::Float(..) => "float",
        Tok::Char(_) => "char",
        Tok::Str(_) => "string",
        other
            if other
                .spelling()
                .starts_with(|c: char| c.is_ascii_alphabetic()) =>
        {
            "keyword"
        }
        _ => "punct",
    }
}

fn value(tok: &Tok) -> Option<String> {
    match tok {
        Tok::Int(v, _) => Some(v.to_string()),
        Tok::Float(v, _) => Some(format!("{v:?}")),
        Tok::Char(c) => Some(c.to_string()),
        _ => None,
    }
}

/// The tokens of the user's files (not the standard library's), in order.
pub fn token_rows(result: &FrontResult) -> Vec<TokenRow> {
    result
        .user_tokens()
        .map(|t| {
            let file = result.sources.get(t.span.file);
            let (line, column) = file.line_col(t.span.start);
            TokenRow {
                line,
                column,
                kind: kind(&t.tok),
                text: result.sources.snippet(t.span).to_string(),
                value: value(&t.tok),
                span: [t.span.start, t.span.end],
            }
        })
        .collect()
}

/// `--emit tokens`: one token a line, `LINE:COL<tab>KIND<tab>TEXT[  = VALUE]`.
pub fn tokens_listing(result: &FrontResult) -> String {
    token_rows(result)
        .into_iter()
        .map(|t| {
            let value = t.value.map(|v| format!("  = {v}")).unwrap_or_default();
            format!("{}:{}\t{}\t{}{value}\n", t.line, t.column, t.kind, t.text)
        })
        .collect()
}
