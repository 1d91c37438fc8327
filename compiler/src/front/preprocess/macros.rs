//! Macro bodies and their expansion: object-like and function-like macros, with the
//! `#` (stringize) and `##` (paste) operators.
//!
//! A body is kept as [`Piece`]s: tokens with their spellings (pasting joins spellings
//! and lexes the result again), parameter uses, and the two operators. Expansion works
//! on token lists: a use's tokens are rescanned, each macro name in them is replaced
//! (a function-like one only when `(` follows it in the list), and a macro is not
//! expanded again inside its own expansion, as in C. Arguments are expanded before
//! they are substituted, except where they are operands of `#` or `##`.

use super::{lex, Macro, Pp, RawTok, RawToken, MAX_EXPANSION_DEPTH};
use crate::diag::{codes, Diagnostic};
use crate::front::intern::Symbol;
use crate::front::token::{keyword, Tok, Token};
use crate::source::{FileId, Span};

/// A token with its spelling, for `#` and `##`.
#[derive(Clone, Debug)]
pub(super) struct PTok {
    pub tok: Tok,
    pub span: Span,
    pub text: String,
}

/// One element of a macro body.
#[derive(Clone, Debug)]
pub(super) enum Piece {
    Tok(PTok),
    /// The argument of the parameter at this index.
    Param(usize),
    /// `#param`: the argument's spelling as a string literal.
    Stringize(usize),
    /// `##`: the tokens on either side become one.
    Paste,
}

impl PartialEq for Piece {
    /// Bodies are equal when their tokens are (spans and spellings aside): a
    /// redefinition with the same body is silent.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Piece::Tok(a), Piece::Tok(b)) => a.tok == b.tok,
            (Piece::Param(a), Piece::Param(b)) | (Piece::Stringize(a), Piece::Stringize(b)) => {
                a == b
            }
            (Piece::Paste, Piece::Paste) => true,
            _ => false,
        }
    }
}

/// Why a macro call could not be expanded.
enum CallError {
    /// No `)` closes the argument list.
    Unclosed,
    /// The number of arguments differs from the parameters'.
    Count(usize),
}

impl Pp<'_> {
    /// The tokens of raw token `t` (spelled `s`), without macro expansion: identifiers
    /// stay identifiers, literals are parsed (and reported) as anywhere else.
    pub(super) fn plain_tokens(&mut self, file: FileId, t: RawToken, s: &str) -> Vec<PTok> {
        let span = Span::new(file, t.start, t.end);
        let Some(kind) = t.kind else {
            return Vec::new();
        };
        if kind == RawTok::Ident {
            let tok = keyword(s).unwrap_or_else(|| Tok::Ident(self.interner.intern(s)));
            return vec![PTok {
                tok,
                span,
                text: s.to_string(),
            }];
        }
        let saved = std::mem::take(&mut self.out.tokens);
        self.token(file, kind, t, s, span);
        let toks = std::mem::replace(&mut self.out.tokens, saved);
        let one = toks.len() == 1;
        toks.into_iter()
            .map(|tk| PTok {
                text: if one {
                    s.to_string()
                } else {
                    self.spell(&tk.tok)
                },
                tok: tk.tok,
                span: tk.span,
            })
            .collect()
    }

    /// A token's spelling as far as it is needed for `#` and `##` of tokens that came
    /// from an expansion (literals lose their suffixes).
    fn spell(&self, tok: &Tok) -> String {
        match tok {
            Tok::Ident(s) | Tok::TypeName(s) | Tok::TemplateName(s) => {
                self.interner.resolve(*s).to_string()
            }
            Tok::Int(v, _) => v.to_string(),
            Tok::Float(v, _) => format!("{v:?}"),
            Tok::Char(c) => format!("'\\x{c:02x}'"),
            Tok::Str(s) => format!("{s:?}"),
            other => other.spelling().to_string(),
        }
    }

    /// The pieces of a macro body `text` at byte `at` of `file`; `None` after an error
    /// (reported). `params` are the parameters of a function-like macro.
    pub(super) fn body_pieces(
        &mut self,
        file: FileId,
        at: u32,
        text: &str,
        params: Option<&[Symbol]>,
    ) -> Option<Vec<Piece>> {
        let mut pieces = Vec::new();
        let mut hashes = Vec::new();
        let mut pastes = Vec::new();
        let mut pos = 0usize;
        'relex: while pos < text.len() {
            for t in lex(&text[pos..]) {
                let (start, end) = (pos + t.start as usize, pos + t.end as usize);
                if t.kind == Some(RawTok::Directive) {
                    // The lexer reads `#` to the end of the line as a directive: take the
                    // operator and lex what follows it again.
                    let paste = text[start..].starts_with("##");
                    pos = start + if paste { 2 } else { 1 };
                    if paste {
                        pastes.push(start);
                        pieces.push(Piece::Paste);
                    } else {
                        hashes.push((pieces.len(), start));
                        pieces.push(Piece::Paste); // replaced below
                    }
                    continue 'relex;
                }
                let s = &text[start..end];
                let param = params.and_then(|ps| {
                    (t.kind == Some(RawTok::Ident))
                        .then(|| ps.iter().position(|p| self.interner.resolve(*p) == s))
                        .flatten()
                });
                if let Some(i) = param {
                    pieces.push(Piece::Param(i));
                    continue;
                }
                let raw = RawToken {
                    start: at + start as u32,
                    end: at + end as u32,
                    ..t
                };
                let toks = self.plain_tokens(file, raw, s);
                pieces.extend(toks.into_iter().map(Piece::Tok));
            }
            break;
        }
        self.finish_body(file, at, pieces, &hashes, &pastes, params.is_some())
    }

    /// Turns each `#` (at `hashes`: piece index, byte offset) into a stringized
    /// parameter and checks that `##` has an operand on each side.
    fn finish_body(
        &mut self,
        file: FileId,
        at: u32,
        mut pieces: Vec<Piece>,
        hashes: &[(usize, usize)],
        pastes: &[usize],
        function_like: bool,
    ) -> Option<Vec<Piece>> {
        let mut drop = Vec::new();
        for &(i, off) in hashes {
            let span = Span::new(file, at + off as u32, at + off as u32 + 1);
            match pieces.get(i + 1) {
                Some(Piece::Param(p)) if function_like => {
                    pieces[i] = Piece::Stringize(*p);
                    drop.push(i + 1);
                }
                _ => {
                    self.error(
                        Diagnostic::error(
                            codes::MALFORMED_DIRECTIVE,
                            "`#` in a macro body must be followed by a parameter",
                        )
                        .with_primary(span, "`#` stringizes a parameter of a function-like macro")
                        .with_help("write `#name` with `name` one of the macro's parameters"),
                    );
                    return None;
                }
            }
        }
        for i in drop.into_iter().rev() {
            pieces.remove(i);
        }
        let bad_paste = if matches!(pieces.first(), Some(Piece::Paste)) {
            pastes.first()
        } else if matches!(pieces.last(), Some(Piece::Paste)) {
            pastes.last()
        } else {
            None
        };
        if let Some(&off) = bad_paste {
            self.error(
                Diagnostic::error(
                    codes::MALFORMED_DIRECTIVE,
                    "`##` cannot be at either end of a macro body",
                )
                .with_primary(
                    Span::new(file, at + off as u32, at + off as u32 + 2),
                    "nothing to join on one side",
                )
                .with_help("`##` joins the tokens on its two sides into one"),
            );
            return None;
        }
        Some(pieces)
    }

    /// Expands `toks` (rescanning them for macro uses) into the output, every token at
    /// `at`. `false` when the output would pass `end` tokens.
    pub(super) fn rescan(
        &mut self,
        toks: &[PTok],
        at: Span,
        expanding: &mut Vec<Symbol>,
        end: usize,
    ) -> bool {
        let mut i = 0;
        while i < toks.len() {
            if self.out.tokens.len() >= end {
                return false;
            }
            let t = &toks[i];
            i += 1;
            let macro_sym = match t.tok {
                Tok::Ident(sym) => self.macros.contains_key(&sym).then_some(sym),
                ref tok => self.keyword_macro(tok),
            };
            let sym = match macro_sym {
                Some(sym) => sym,
                None => {
                    self.out.tokens.push(Token {
                        tok: t.tok.clone(),
                        span: at,
                    });
                    continue;
                }
            };
            if expanding.contains(&sym) || expanding.len() >= MAX_EXPANSION_DEPTH {
                // A self-referential macro stands for itself, as in C.
                self.out.tokens.push(Token {
                    tok: t.tok.clone(),
                    span: at,
                });
                continue;
            }
            let m = &self.macros[&sym];
            let (params, body) = (m.params.clone(), m.body.clone());
            let args = match params {
                None => Vec::new(),
                Some(_) if toks.get(i).is_none_or(|n| n.tok != Tok::LParen) => {
                    // A function-like macro's name without `(` is an ordinary name.
                    self.out.tokens.push(Token {
                        tok: Tok::Ident(sym),
                        span: at,
                    });
                    continue;
                }
                Some(ref ps) => match call_arguments(&toks[i..], ps.len(), self.is_variadic(ps)) {
                    Ok((args, used)) => {
                        i += used;
                        args
                    }
                    Err(e) => {
                        self.bad_call(sym, t.span, e);
                        // A `0` in its place keeps the expression around it whole, so
                        // the parser reports nothing more about this call.
                        self.out.tokens.push(Token {
                            tok: Tok::Int(0, Default::default()),
                            span: at,
                        });
                        return true;
                    }
                },
            };
            let Some(replaced) = self.substitute(&body, &args, at, expanding, end) else {
                return false;
            };
            expanding.push(sym);
            let ok = self.rescan(&replaced, at, expanding, end);
            expanding.pop();
            if !ok {
                return false;
            }
        }
        true
    }

    /// Whether a macro with parameters `params` is variadic (its last is `...`).
    fn is_variadic(&self, params: &[Symbol]) -> bool {
        params
            .last()
            .is_some_and(|&p| self.interner.resolve(p) == super::VA_ARGS)
    }

    fn bad_call(&mut self, sym: Symbol, span: Span, e: CallError) {
        let name = self.interner.resolve(sym).to_string();
        let m = &self.macros[&sym];
        let (defined, n) = (m.span, m.params.as_ref().map_or(0, Vec::len));
        let at_least = m.params.as_deref().is_some_and(|ps| self.is_variadic(ps));
        let (n, n_words) = if at_least {
            (n - 1, "at least ")
        } else {
            (n, "")
        };
        let d = match e {
            CallError::Unclosed => Diagnostic::error(
                codes::BAD_MACRO_CALL,
                format!("the arguments of macro `{name}` are never closed"),
            )
            .with_primary(span, "no `)` ends this call")
            .with_help("close the argument list with `)`; a call may span lines"),
            CallError::Count(got) => Diagnostic::error(
                codes::BAD_MACRO_CALL,
                format!(
                    "macro `{name}` takes {n_words}{n} argument{}, but {got} {} given",
                    if n == 1 { "" } else { "s" },
                    if got == 1 { "was" } else { "were" }
                ),
            )
            .with_primary(span, "this call")
            .with_help("arguments are separated by commas outside parentheses"),
        };
        self.error(d.with_secondary(defined, "defined here"));
    }

    /// The body with each parameter replaced by its argument: expanded, or as written
    /// next to `#` and `##`; pastes are done here. `None` past the token limit.
    fn substitute(
        &mut self,
        body: &[Piece],
        args: &[Vec<PTok>],
        at: Span,
        expanding: &mut Vec<Symbol>,
        end: usize,
    ) -> Option<Vec<PTok>> {
        let mut out: Vec<PTok> = Vec::new();
        let mut paste_next = false;
        for (k, piece) in body.iter().enumerate() {
            let pasted = paste_next || matches!(body.get(k + 1), Some(Piece::Paste));
            let toks = match piece {
                Piece::Paste => {
                    paste_next = true;
                    continue;
                }
                Piece::Tok(t) => vec![t.clone()],
                Piece::Stringize(p) => vec![stringize(&args[*p], at)],
                Piece::Param(p) if pasted => args[*p].clone(),
                Piece::Param(p) => self.expand_argument(&args[*p], at, expanding, end)?,
            };
            if std::mem::take(&mut paste_next) {
                self.paste(&mut out, toks, at);
            } else {
                out.extend(toks);
            }
        }
        Some(out)
    }

    /// An argument macro-expanded on its own, as C expands arguments before
    /// substitution.
    fn expand_argument(
        &mut self,
        arg: &[PTok],
        at: Span,
        expanding: &mut Vec<Symbol>,
        end: usize,
    ) -> Option<Vec<PTok>> {
        let left = end.saturating_sub(self.out.tokens.len());
        let saved = std::mem::take(&mut self.out.tokens);
        let ok = self.rescan(arg, at, expanding, left);
        let toks = std::mem::replace(&mut self.out.tokens, saved);
        ok.then(|| {
            toks.into_iter()
                .map(|t| PTok {
                    text: self.spell(&t.tok),
                    tok: t.tok,
                    span: t.span,
                })
                .collect()
        })
    }

    /// Joins the last token of `out` and the first of `right` into one token (an empty
    /// side leaves the other as it is).
    fn paste(&mut self, out: &mut Vec<PTok>, mut right: Vec<PTok>, at: Span) {
        let Some(left) = out.pop() else {
            out.extend(right);
            return;
        };
        if right.is_empty() {
            out.push(left);
            return;
        }
        let first = right.remove(0);
        let text = format!("{}{}", left.text, first.text);
        let raw = lex(&text);
        let whole =
            matches!(raw.as_slice(), [t] if t.kind.is_some() && t.end as usize == text.len());
        if !whole {
            self.error(
                Diagnostic::error(
                    codes::BAD_MACRO_CALL,
                    format!(
                        "pasting `{}` and `{}` does not give one token",
                        left.text, first.text
                    ),
                )
                .with_primary(at, format!("`{text}` is not a single token"))
                .with_help("`##` may only join pieces of one identifier, number or operator"),
            );
            out.push(left);
            out.push(first);
        } else {
            // Literals are checked as they would be if written out; the span is the use's.
            let t = RawToken {
                start: at.start,
                end: at.start + text.len() as u32,
                ..raw[0]
            };
            let toks = self.plain_tokens(at.file, t, &text);
            out.extend(toks.into_iter().map(|p| PTok { span: at, ..p }));
        }
        out.extend(right);
    }
}

/// The arguments of a call whose `(` is `toks[0]`, split at commas outside
/// parentheses, and how many tokens the call takes (through its `)`). `()` is one
/// empty argument, which a macro with no parameters accepts.
/// The arguments of a call of a macro of `params` parameters, the last of them `...`
/// when `variadic`: that one takes every argument from there on, commas included, and
/// may be left out (`F(a)` for `F(x, ...)`).
fn call_arguments(
    toks: &[PTok],
    params: usize,
    variadic: bool,
) -> Result<(Vec<Vec<PTok>>, usize), CallError> {
    let mut args = vec![Vec::new()];
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(1) {
        match t.tok {
            Tok::LParen => depth += 1,
            Tok::RParen if depth == 0 => {
                if params == 0 && args.len() == 1 && args[0].is_empty() {
                    args.clear();
                }
                if variadic && args.len() + 1 == params {
                    args.push(Vec::new());
                }
                if args.len() != params {
                    return Err(CallError::Count(args.len()));
                }
                return Ok((args, k + 1));
            }
            Tok::RParen => depth -= 1,
            Tok::Comma if depth == 0 && !(variadic && args.len() == params) => {
                args.push(Vec::new());
                continue;
            }
            _ => {}
        }
        args.last_mut()
            .expect("one argument at least")
            .push(t.clone());
    }
    Err(CallError::Unclosed)
}

/// `#arg`: the argument's spelling as a string literal, one space where the source
/// had space between two tokens.
fn stringize(arg: &[PTok], at: Span) -> PTok {
    let mut s = String::new();
    for (k, t) in arg.iter().enumerate() {
        if k > 0 && arg[k - 1].span.end < t.span.start {
            s.push(' ');
        }
        s.push_str(&t.text);
    }
    PTok {
        text: format!("{s:?}"),
        tok: Tok::Str(s.into()),
        span: at,
    }
}

impl Macro {
    /// The tokens of an object-like macro whose body is plain tokens (for `#if`).
    pub(super) fn plain_body(&self) -> Option<Vec<&Tok>> {
        self.body
            .iter()
            .map(|p| match p {
                Piece::Tok(t) => Some(&t.tok),
                _ => None,
            })
            .collect()
    }
}
