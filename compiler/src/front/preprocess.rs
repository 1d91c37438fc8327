//! The preprocessor: raw tokens of the main file and its includes to parser tokens.
//!
//! It handles `#include "file"` (relative to the including file, then `-I` paths),
//! object-like and function-like `#define` (with `#` and `##`, in [`macros`]) and `#undef`, `#ifdef`/`#ifndef`/`#if`/`#elif`/`#else`/`#endif`
//! with integer conditions, `#error`, and `#pragma` (recorded; unknown ones get a
//! note). It parses literal values, reporting malformed literals with their spans, and
//! finally runs the type-name pre-scan ([`mark_type_names`]) that lets an LR grammar
//! parse C's declarations.

mod macros;

use std::collections::HashSet;
use std::ops::Range;

use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};

use super::ast::{FloatSuffix, IntSuffix};
use super::intern::{Interner, Symbol};
use super::lexer::{lex, RawTok, RawToken};
use super::token::{keyword, Tok, Token};
use crate::diag::{codes, Diagnostic};
use crate::source::{read_limited, FileId, SourceMap, Span, MAX_SOURCE_BYTES};
use macros::{PTok, Piece};
use sim::fp16;

/// Pragmas spmdc understands. Others are ignored with a note.
/// Headers of ISPC's standard library that spmdc carries, served to an `#include` of
/// the name that no file on the include path answers (ISPC installs them in its own
/// include directory).
/// The name of a variadic macro's trailing arguments in its body.
const VA_ARGS: &str = "__VA_ARGS__";

const BUILT_IN_HEADERS: &[(&str, &str)] = &[(
    "short_vec.isph",
    include_str!("../../../stdlib/include/short_vec.isph"),
)];

const KNOWN_PRAGMAS: &[&str] = &["once", "unroll", "nounroll", "ignore", "coherent"];

/// Include nesting deeper than this is reported rather than followed.
const MAX_INCLUDE_DEPTH: usize = 64;
/// Macro expansion depth guard (expansion is also cycle-checked).
const MAX_EXPANSION_DEPTH: usize = 64;
/// The most tokens one macro use may expand to. Object-like macros that each repeat
/// the previous one twice grow exponentially; this turns them into an error (E0014)
/// long before they exhaust memory.
pub const MAX_USE_EXPANSION: usize = 1 << 16;
/// The most tokens all macro uses of one preprocessing run may expand to together.
pub const MAX_UNIT_EXPANSION: usize = 1 << 21;

#[derive(Clone, Debug, PartialEq)]
pub struct Pragma {
    pub name: String,
    pub args: String,
    pub span: Span,
}

#[derive(Debug, Default)]
pub struct Preprocessed {
    pub tokens: Vec<Token>,
    pub pragmas: Vec<Pragma>,
}

pub struct Options<'a> {
    pub include_dirs: &'a [PathBuf],
    /// `-D NAME[=VALUE]` definitions from the command line.
    pub defines: &'a [(String, String)],
    /// The compiler's own definitions (ISPC's predefined symbols), made before any
    /// file and before `defines`.
    pub predefined: &'a [(String, String)],
}

struct Macro {
    /// The parameters of a function-like macro; `None` for an object-like one.
    params: Option<Vec<Symbol>>,
    body: Vec<Piece>,
    span: Span,
}

/// One open `#if` group.
struct Cond {
    /// Tokens in this group are kept.
    active: bool,
    /// Some branch of this group has been taken already.
    taken: bool,
    /// The enclosing group was active.
    parent_active: bool,
    seen_else: bool,
    span: Span,
}

struct Pp<'a> {
    sources: &'a mut SourceMap,
    interner: &'a mut Interner,
    diags: &'a mut Vec<Diagnostic>,
    include_dirs: &'a [PathBuf],
    macros: FxHashMap<Symbol, Macro>,
    include_stack: Vec<FileId>,
    once_files: HashSet<PathBuf>,
    out: Preprocessed,
    /// Tokens produced by macro expansion so far (bounded by [`MAX_UNIT_EXPANSION`]).
    expanded: usize,
    /// Macros whose expansion was too large: reported once, their later uses expand
    /// to nothing.
    oversized: FxHashSet<Symbol>,
    /// The whole-run expansion limit was reached: every later use expands to nothing.
    expansion_stopped: bool,
}

/// Preprocesses `files` in order (the stdlib first, then the user's file) into one stream.
pub fn preprocess(
    sources: &mut SourceMap,
    interner: &mut Interner,
    files: &[FileId],
    options: &Options,
    diags: &mut Vec<Diagnostic>,
) -> Preprocessed {
    let mut out = preprocess_user(sources, interner, files, options, diags);
    mark_type_names(&mut out.tokens);
    out
}

/// [`preprocess`] without the type-name pre-scan: for the user's files alone, the
/// first half of a compile that takes only part of the library
/// ([`super::stdlib_index`]), whose pre-scan [`join`] runs.
pub fn preprocess_user(
    sources: &mut SourceMap,
    interner: &mut Interner,
    files: &[FileId],
    options: &Options,
    diags: &mut Vec<Diagnostic>,
) -> Preprocessed {
    let mut pp = Pp::new(sources, interner, diags, options.include_dirs);
    pp.define_all("<built-in>", options.predefined);
    pp.define_all("<command line>", options.defines);
    for &file in files {
        pp.process_file(file);
    }
    pp.out
}

/// Preprocesses the byte ranges `parts` of `file`, in order, with no macros defined:
/// the library's items a program reaches. Each range starts and ends between tokens.
pub fn preprocess_parts(
    sources: &mut SourceMap,
    interner: &mut Interner,
    file: FileId,
    parts: &[Range<u32>],
    diags: &mut Vec<Diagnostic>,
) -> Preprocessed {
    let mut pp = Pp::new(sources, interner, diags, &[]);
    pp.process_parts(file, parts);
    pp.out
}

/// The library's tokens followed by the user's, with the type-name pre-scan run over
/// both: the stream [`preprocess`] makes of the two.
pub fn join(library: Preprocessed, user: Preprocessed) -> Preprocessed {
    let mut tokens = library.tokens;
    tokens.extend(user.tokens);
    let mut pragmas = library.pragmas;
    pragmas.extend(user.pragmas);
    mark_type_names(&mut tokens);
    Preprocessed { tokens, pragmas }
}

impl<'a> Pp<'a> {
    fn new(
        sources: &'a mut SourceMap,
        interner: &'a mut Interner,
        diags: &'a mut Vec<Diagnostic>,
        include_dirs: &'a [PathBuf],
    ) -> Self {
        Pp {
            sources,
            interner,
            diags,
            include_dirs,
            macros: FxHashMap::default(),
            include_stack: Vec::new(),
            once_files: HashSet::new(),
            out: Preprocessed::default(),
            expanded: 0,
            oversized: FxHashSet::default(),
            expansion_stopped: false,
        }
    }

    /// Defines `defines` as if from a file called `origin` (which diagnostics of a
    /// later redefinition name).
    fn define_all(&mut self, origin: &str, defines: &[(String, String)]) {
        if defines.is_empty() {
            return;
        }
        let text: String = defines
            .iter()
            .map(|(n, v)| format!("#define {n} {v}\n"))
            .collect();
        let file = self.sources.add(origin, None, text);
        self.process_file(file);
    }

    fn error(&mut self, diag: Diagnostic) {
        self.diags.push(diag);
    }

    fn process_file(&mut self, file: FileId) {
        let len = self.sources.get(file).text.len() as u32;
        self.process_parts(file, &[0..len]);
    }

    /// Preprocesses the byte ranges `parts` of `file` as if they were the whole file.
    fn process_parts(&mut self, file: FileId, parts: &[Range<u32>]) {
        if self.include_stack.len() >= MAX_INCLUDE_DEPTH {
            return;
        }
        self.include_stack.push(file);
        // Cloned so that includes can add files to the map while we walk this one.
        let text = self.sources.get(file).text.clone();
        let raw: Vec<RawToken> = parts
            .iter()
            .flat_map(|part| {
                lex(&text[part.start as usize..part.end as usize])
                    .into_iter()
                    .map(move |t| RawToken {
                        start: t.start + part.start,
                        end: t.end + part.start,
                        ..t
                    })
            })
            .collect();
        self.out.tokens.reserve(raw.len());
        let mut conds: Vec<Cond> = Vec::new();
        let mut i = 0;
        while i < raw.len() {
            let t = raw[i];
            i += 1;
            let active = conds.last().is_none_or(|c| c.active);
            let span = Span::new(file, t.start, t.end);
            match t.kind {
                Some(RawTok::Newline) => {}
                Some(RawTok::Directive) => {
                    let dtext = &text[t.start as usize..t.end as usize];
                    self.directive(file, t.start, dtext, &mut conds, active);
                }
                _ if !active => {}
                Some(RawTok::UnterminatedComment) => {
                    self.error(
                        Diagnostic::error(
                            codes::UNTERMINATED_COMMENT,
                            "unterminated block comment",
                        )
                        .with_primary(span, "comment starts here and never ends")
                        .with_help("close the comment with `*/`"),
                    );
                    break;
                }
                None => {
                    // Merge a run of bad bytes into one diagnostic.
                    let mut end = t.end;
                    while i < raw.len() && raw[i].kind.is_none() && raw[i].start == end {
                        end = raw[i].end;
                        i += 1;
                    }
                    let bad = Span::new(file, t.start, end);
                    let what = &text[t.start as usize..end as usize];
                    let mut d = Diagnostic::error(
                        codes::UNKNOWN_CHARACTER,
                        format!(
                            "unknown character{} `{}`",
                            if what.chars().count() > 1 { "s" } else { "" },
                            what.escape_debug()
                        ),
                    )
                    .with_primary(bad, "not valid in spmdc source");
                    if what.starts_with('`') || what.starts_with('@') || what.starts_with('$') {
                        d = d.with_help("identifiers may contain only letters, digits and `_`");
                    }
                    self.error(d);
                }
                Some(RawTok::Ident)
                    if self.is_function_macro(&text[t.start as usize..t.end as usize]) =>
                {
                    i = self.function_macro_use(file, &raw, i - 1, &text);
                }
                Some(kind) => {
                    self.token(file, kind, t, &text[t.start as usize..t.end as usize], span)
                }
            }
        }
        for c in conds {
            self.error(
                Diagnostic::error(
                    codes::UNBALANCED_CONDITIONAL,
                    "unterminated conditional directive",
                )
                .with_primary(c.span, "this `#if` has no matching `#endif`")
                .with_help("add `#endif` at the end of the conditional block"),
            );
        }
        self.include_stack.pop();
    }

    /// The macro a keyword token names, if a `#define` made it one (`#define bool int`).
    pub(super) fn keyword_macro(&self, tok: &Tok) -> Option<Symbol> {
        if self.macros.is_empty() {
            return None;
        }
        let sym = self.interner.get(tok.spelling())?;
        self.macros.contains_key(&sym).then_some(sym)
    }

    /// `name` is a function-like macro.
    fn is_function_macro(&mut self, name: &str) -> bool {
        if self.macros.is_empty() || keyword(name).is_some() {
            return false;
        }
        let sym = self.interner.intern(name);
        self.macros.get(&sym).is_some_and(|m| m.params.is_some())
    }

    /// Expands the function-like macro named by `raw[at]` with the argument list that
    /// follows it (on any later line, up to its `)`); without a `(` the name is an
    /// ordinary identifier. Returns the index of the first raw token after the use.
    fn function_macro_use(
        &mut self,
        file: FileId,
        raw: &[RawToken],
        at: usize,
        text: &str,
    ) -> usize {
        let name = raw[at];
        let s = &text[name.start as usize..name.end as usize];
        let sym = self.interner.intern(s);
        let mut toks = self.plain_tokens(file, name, s);
        let mut k = at + 1;
        while raw.get(k).is_some_and(|t| t.kind == Some(RawTok::Newline)) {
            k += 1;
        }
        let mut depth = 0usize;
        let mut end = name.end;
        if raw.get(k).is_some_and(|t| t.kind == Some(RawTok::LParen)) {
            while let Some(&t) = raw.get(k) {
                match t.kind {
                    Some(RawTok::Directive) => break,
                    Some(RawTok::LParen) => depth += 1,
                    Some(RawTok::RParen) => depth -= 1,
                    _ => {}
                }
                k += 1;
                end = t.end;
                toks.extend(self.plain_tokens(file, t, &text[t.start as usize..t.end as usize]));
                if depth == 0 {
                    break;
                }
            }
        } else {
            k = at + 1;
        }
        self.expand_use(sym, Span::new(file, name.start, end), &toks);
        k
    }

    /// Converts one raw token (whose text is `s`) and appends it, expanding macros.
    fn token(&mut self, file: FileId, kind: RawTok, t: RawToken, s: &str, span: Span) {
        let tok = match kind {
            RawTok::Ident => {
                if let Some(k) = keyword(s) {
                    if let Some(sym) = self.keyword_macro(&k) {
                        let name = PTok {
                            tok: k,
                            span,
                            text: s.to_string(),
                        };
                        self.expand_use(sym, span, &[name]);
                        return;
                    }
                    k
                } else {
                    let sym = self.interner.intern(s);
                    if !self.macros.is_empty() && self.macros.contains_key(&sym) {
                        let name = PTok {
                            tok: Tok::Ident(sym),
                            span,
                            text: s.to_string(),
                        };
                        self.expand_use(sym, span, &[name]);
                        return;
                    }
                    Tok::Ident(sym)
                }
            }
            RawTok::Int if is_bare_half(s) => match parse_float(s) {
                Ok((v, suf)) => Tok::Float(v, suf),
                Err(_) => Tok::Float(0.0, FloatSuffix::F16),
            },
            RawTok::Int if is_bare_float(s) => {
                self.diags.push(
                    Diagnostic::warning(
                        codes::FLOAT_WITHOUT_RADIX,
                        format!("float literal `{s}` has no radix separator"),
                    )
                    .with_primary(span, "read as a `float`")
                    .with_help(format!(
                        "write `{}.f`, as ISPC recommends",
                        &s[..s.len() - 1]
                    )),
                );
                let digits = &s[..s.len() - 1];
                match digits.parse::<f32>() {
                    Ok(v) => Tok::Float(f64::from(v), FloatSuffix::F),
                    Err(_) => Tok::Float(0.0, FloatSuffix::F),
                }
            }
            RawTok::Int => self.int_literal(s, span),
            RawTok::IntEllipsis => {
                let split = t.end - 3;
                let digits = Span::new(file, t.start, split);
                let v = self.int_literal(&s[..s.len() - 3], digits);
                self.push(v, digits);
                self.push(Tok::Ellipsis, Span::new(file, split, t.end));
                return;
            }
            RawTok::Float => match parse_float(s) {
                Ok((v, suf)) => Tok::Float(v, suf),
                Err(msg) => {
                    self.error(
                        Diagnostic::error(
                            codes::INVALID_FLOAT_LITERAL,
                            format!("invalid floating-point literal `{s}`"),
                        )
                        .with_primary(span, msg.0)
                        .with_help(msg.1),
                    );
                    Tok::Float(0.0, FloatSuffix::None)
                }
            },
            RawTok::Str => match unescape(&s[1..s.len() - 1]) {
                Ok(bytes) => Tok::Str(String::from_utf8_lossy(&bytes).into()),
                Err((off, len, msg)) => {
                    let at = Span::new(
                        file,
                        t.start + 1 + off as u32,
                        t.start + 1 + (off + len) as u32,
                    );
                    self.bad_escape(at, msg);
                    Tok::Str("".into())
                }
            },
            RawTok::Char => self.char_literal(file, t, s, span),
            RawTok::UnterminatedStr => {
                self.error(
                    Diagnostic::error(codes::UNTERMINATED_STRING, "unterminated string literal")
                        .with_primary(
                            span,
                            "the string starts here and the line ends before its closing `\"`",
                        )
                        .with_help("add a closing `\"`; strings cannot span lines"),
                );
                Tok::Str("".into())
            }
            RawTok::UnterminatedChar => {
                self.error(
                    Diagnostic::error(
                        codes::INVALID_CHAR_LITERAL,
                        "unterminated character literal",
                    )
                    .with_primary(span, "missing closing `'`")
                    .with_help(
                        "a character literal is one character between single quotes, like `'a'`",
                    ),
                );
                Tok::Char(0)
            }
            RawTok::Newline | RawTok::Directive | RawTok::UnterminatedComment => return,
            punct => punct_tok(punct),
        };
        self.push(tok, span);
    }

    /// An integer literal's token; a malformed one is reported and reads as 0.
    fn int_literal(&mut self, s: &str, span: Span) -> Tok {
        match parse_int(s) {
            Ok((v, suf)) => Tok::Int(v, suf),
            Err((label, help)) => {
                self.error(
                    Diagnostic::error(
                        codes::INVALID_INT_LITERAL,
                        format!("invalid integer literal `{s}`"),
                    )
                    .with_primary(span, label)
                    .with_help(help),
                );
                Tok::Int(0, IntSuffix::default())
            }
        }
    }

    fn char_literal(&mut self, file: FileId, t: RawToken, s: &str, span: Span) -> Tok {
        match unescape(&s[1..s.len() - 1]) {
            Ok(bytes) if bytes.len() == 1 => Tok::Char(bytes[0]),
            Ok(bytes) => {
                let msg = if bytes.is_empty() {
                    "empty character literal"
                } else {
                    "character literal holds more than one character"
                };
                self.error(
                    Diagnostic::error(codes::INVALID_CHAR_LITERAL, msg)
                        .with_primary(span, "a character literal holds exactly one character")
                        .with_help("use a string literal (double quotes) for text, which only `print` accepts"),
                );
                Tok::Char(bytes.first().copied().unwrap_or(0))
            }
            Err((off, len, msg)) => {
                let at = Span::new(
                    file,
                    t.start + 1 + off as u32,
                    t.start + 1 + (off + len) as u32,
                );
                self.bad_escape(at, msg);
                Tok::Char(0)
            }
        }
    }

    fn bad_escape(&mut self, at: Span, msg: String) {
        self.error(
            Diagnostic::error(codes::INVALID_ESCAPE, msg)
                .with_primary(at, "unknown escape")
                .with_help("valid escapes are \\n \\t \\r \\0 \\\\ \\' \\\" \\a \\b \\f \\v \\xHH and octal \\ooo"),
        );
    }

    fn push(&mut self, tok: Tok, span: Span) {
        self.out.tokens.push(Token { tok, span });
    }

    /// Expands a use of macro `sym` at `at` (`toks`: its name, then for a
    /// function-like macro its argument list) within [`MAX_USE_EXPANSION`] and what is
    /// left of [`MAX_UNIT_EXPANSION`]; past either, reports E0014 and drops the use.
    fn expand_use(&mut self, sym: Symbol, at: Span, toks: &[PTok]) {
        if self.expansion_stopped || self.oversized.contains(&sym) {
            return;
        }
        let start = self.out.tokens.len();
        let left = MAX_UNIT_EXPANSION - self.expanded;
        let budget = MAX_USE_EXPANSION.min(left);
        if self.rescan(toks, at, &mut Vec::new(), start + budget) {
            self.expanded += self.out.tokens.len() - start;
            return;
        }
        self.out.tokens.truncate(start);
        let name = self.interner.resolve(sym).to_string();
        let defined = self.macros[&sym].span;
        let diag = if budget == MAX_USE_EXPANSION {
            self.oversized.insert(sym);
            Diagnostic::error(
                codes::MACRO_EXPANSION_TOO_LARGE,
                format!("macro `{name}` expands to more than {MAX_USE_EXPANSION} tokens"),
            )
            .with_primary(at, "this use is too large to expand")
        } else {
            self.expansion_stopped = true;
            Diagnostic::error(
                codes::MACRO_EXPANSION_TOO_LARGE,
                format!("macro uses expand to more than {MAX_UNIT_EXPANSION} tokens in all"),
            )
            .with_primary(at, format!("expanding `{name}` here passes the limit"))
        };
        self.error(diag.with_secondary(defined, "defined here").with_help(
            "macros that repeat other macros grow exponentially; use a function or a loop instead",
        ));
    }

    /// Handles one directive line; `start` is its byte offset in `file`.
    fn directive(
        &mut self,
        file: FileId,
        start: u32,
        text: &str,
        conds: &mut Vec<Cond>,
        active: bool,
    ) {
        let span = Span::new(file, start, start + text.trim_end().len() as u32);
        let body = &text[1..];
        let lead = body.len() - body.trim_start().len();
        let body_trim = body.trim_start();
        let name_len = body_trim
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(body_trim.len());
        let name = &body_trim[..name_len];
        let rest_off = 1 + lead + name_len;
        let rest = &text[rest_off..];
        let rest_start = start + rest_off as u32;
        match name {
            "ifdef" | "ifndef" | "if" => {
                let value = if !active {
                    false
                } else if name == "if" {
                    self.eval_condition(file, rest_start, rest, span)
                } else {
                    let defined = self.macro_operand(file, rest_start, rest, span).is_some_and(|s| self.macros.contains_key(&s));
                    defined == (name == "ifdef")
                };
                conds.push(Cond { active: active && value, taken: value, parent_active: active, seen_else: false, span });
            }
            "elif" | "else" => {
                let Some(c) = conds.last_mut() else {
                    self.unbalanced(span, name);
                    return;
                };
                if c.seen_else {
                    self.error(
                        Diagnostic::error(codes::UNBALANCED_CONDITIONAL, format!("`#{name}` after `#else`"))
                            .with_primary(span, "")
                            .with_secondary(c.span, "in this conditional"),
                    );
                    return;
                }
                let parent_active = c.parent_active;
                let taken = c.taken;
                let value = if name == "else" {
                    c.seen_else = true;
                    !taken
                } else if parent_active && !taken {
                    self.eval_condition(file, rest_start, rest, span)
                } else {
                    false
                };
                let c = conds.last_mut().expect("checked above");
                c.active = parent_active && value;
                c.taken |= value;
            }
            "endif" => {
                if conds.pop().is_none() {
                    self.unbalanced(span, name);
                }
            }
            _ if !active => {}
            "include" => self.include(file, rest, span),
            "define" => self.define(file, rest_start, rest, span),
            "undef" => {
                if let Some(sym) = self.macro_operand(file, rest_start, rest, span) {
                    self.macros.remove(&sym);
                    self.oversized.remove(&sym);
                }
            }
            "pragma" => self.pragma(rest, span),
            "error" => self.error(
                Diagnostic::error(codes::ERROR_DIRECTIVE, format!("#error {}", rest.trim()))
                    .with_primary(span, "`#error` reached"),
            ),
            "" if rest.trim().is_empty() => {}
            _ => self.error(
                Diagnostic::error(codes::UNKNOWN_DIRECTIVE, format!("unknown preprocessor directive `#{name}`"))
                    .with_primary(span, "not a directive spmdc knows")
                    .with_help("spmdc supports #include, #define, #undef, #if, #ifdef, #ifndef, #elif, #else, #endif, #error and #pragma"),
            ),
        }
    }

    fn unbalanced(&mut self, span: Span, name: &str) {
        self.error(
            Diagnostic::error(
                codes::UNBALANCED_CONDITIONAL,
                format!("`#{name}` without `#if`"),
            )
            .with_primary(span, "no open conditional to match")
            .with_help("remove it, or add the `#if`/`#ifdef` it belongs to"),
        );
    }

    /// The single identifier operand of `#ifdef`/`#undef`.
    fn macro_operand(&mut self, file: FileId, at: u32, rest: &str, span: Span) -> Option<Symbol> {
        let toks = lex(rest);
        match toks.first() {
            Some(t) if t.kind == Some(RawTok::Ident) && toks.len() == 1 => Some(
                self.interner
                    .intern(&rest[t.start as usize..t.end as usize]),
            ),
            _ => {
                let sp = if rest.trim().is_empty() {
                    span
                } else {
                    Span::new(file, at, at + rest.trim_end().len() as u32)
                };
                self.error(
                    Diagnostic::error(codes::MALFORMED_DIRECTIVE, "expected one macro name")
                        .with_primary(sp, "a single identifier is required here"),
                );
                None
            }
        }
    }

    fn include(&mut self, file: FileId, rest: &str, span: Span) {
        let arg = rest.trim();
        let name = if arg.len() >= 2
            && ((arg.starts_with('"') && arg.ends_with('"'))
                || (arg.starts_with('<') && arg.ends_with('>')))
        {
            &arg[1..arg.len() - 1]
        } else {
            self.error(
                Diagnostic::error(
                    codes::MALFORMED_DIRECTIVE,
                    "`#include` expects \"FILE\" or <FILE>",
                )
                .with_primary(span, "")
                .with_help("write `#include \"header.spmd\"`"),
            );
            return;
        };
        let base = self
            .sources
            .get(file)
            .path
            .as_ref()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        let candidates = base
            .into_iter()
            .chain(self.include_dirs.iter().cloned())
            .map(|d| d.join(name));
        let found = candidates
            .chain(std::iter::once(PathBuf::from(name)))
            .find(|p| p.is_file());
        if found.is_none() {
            if let Some(&(_, text)) = BUILT_IN_HEADERS.iter().find(|(n, _)| *n == name) {
                return self.include_built_in(name, text);
            }
        }
        let Some(path) = found else {
            let mut d = Diagnostic::error(
                codes::INCLUDE_NOT_FOUND,
                format!("cannot find include file `{name}`"),
            )
            .with_primary(span, "not found");
            d = d.with_note(
                "includes are searched relative to the including file, then in each `-I` directory",
            );
            self.error(d);
            return;
        };
        let canon = path.canonicalize().unwrap_or(path.clone());
        if self.once_files.contains(&canon) {
            return;
        }
        if let Some(&cycle) = self.include_stack.iter().find(|&&f| {
            self.sources
                .get(f)
                .path
                .as_ref()
                .and_then(|p| p.canonicalize().ok())
                .as_ref()
                == Some(&canon)
        }) {
            let cycle_name = self.sources.get(cycle).name.clone();
            self.error(
                Diagnostic::error(codes::RECURSIVE_INCLUDE, format!("`{name}` includes itself"))
                    .with_primary(span, "this include is already being processed")
                    .with_note(format!("the include chain returns to `{cycle_name}`"))
                    .with_help("guard the header with `#pragma once` or `#ifndef NAME`/`#define NAME`/`#endif`"),
            );
            return;
        }
        if self.include_stack.len() >= MAX_INCLUDE_DEPTH {
            self.error(
                Diagnostic::error(codes::RECURSIVE_INCLUDE, "includes nested too deeply")
                    .with_primary(
                        span,
                        format!("more than {MAX_INCLUDE_DEPTH} levels of `#include`"),
                    ),
            );
            return;
        }
        let read = std::fs::File::open(&path)
            .and_then(|f| read_limited(f, MAX_SOURCE_BYTES))
            .and_then(|bytes| {
                let bytes = bytes.ok_or_else(|| {
                    std::io::Error::other(format!("it is larger than {MAX_SOURCE_BYTES} bytes"))
                })?;
                String::from_utf8(bytes).map_err(|_| {
                    std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text")
                })
            });
        match read {
            Ok(text) => {
                let shown = path.display().to_string();
                let id = self.sources.add(shown, Some(path), text);
                self.process_file(id);
            }
            Err(e) => self.error(
                Diagnostic::error(
                    codes::INCLUDE_NOT_FOUND,
                    format!("cannot read include file `{name}`: {e}"),
                )
                .with_primary(span, ""),
            ),
        }
    }

    /// Includes a header the compiler carries (once per compile, as if it had
    /// `#pragma once`): its diagnostics name it `<spmdc>/NAME`.
    fn include_built_in(&mut self, name: &str, text: &str) {
        let path = PathBuf::from(format!("<spmdc>/{name}"));
        if !self.once_files.insert(path.clone()) {
            return;
        }
        let id = self
            .sources
            .add(path.display().to_string(), Some(path), text.to_string());
        self.process_file(id);
    }

    fn define(&mut self, file: FileId, at: u32, rest: &str, span: Span) {
        let raw = lex(rest);
        let Some(first) = raw.first().filter(|t| t.kind == Some(RawTok::Ident)) else {
            self.error(
                Diagnostic::error(codes::MALFORMED_DIRECTIVE, "`#define` needs a macro name")
                    .with_primary(span, "expected an identifier after `#define`"),
            );
            return;
        };
        let name = &rest[first.start as usize..first.end as usize];
        let sym = self.interner.intern(name);
        // A keyword may name an object-like macro, as in C (`#define bool int`, as ISPC's
        // examples write); a function-like one would need `(` to tell its uses apart.
        let function_like_name = raw
            .get(1)
            .is_some_and(|t| t.kind == Some(RawTok::LParen) && t.start == first.end);
        if keyword(name).is_some() && function_like_name {
            self.error(
                Diagnostic::error(
                    codes::MALFORMED_DIRECTIVE,
                    format!("keyword `{name}` cannot name a function-like macro"),
                )
                .with_primary(
                    Span::new(file, at + first.start, at + first.end),
                    "a keyword",
                )
                .with_help("a keyword may only name an object-like macro (no parameter list)"),
            );
            return;
        }
        // A `(` right after the name makes a function-like macro.
        let function_like = raw
            .get(1)
            .is_some_and(|t| t.kind == Some(RawTok::LParen) && t.start == first.end);
        let (params, body_at) = if function_like {
            match self.macro_params(file, at, rest, &raw[2..]) {
                Some((ps, close)) => (Some(ps), close),
                None => return,
            }
        } else {
            (None, first.end)
        };
        // Lex the body with the real lexer, so its literals are checked like any others.
        let body_text = &rest[body_at as usize..];
        let Some(body) = self.body_pieces(file, at + body_at, body_text, params.as_deref()) else {
            return;
        };
        let def_span = Span::new(file, at + first.start, at + first.end);
        if let Some(old) = self.macros.get(&sym) {
            if old.body != body || old.params != params {
                self.diags.push(
                    Diagnostic::warning(
                        codes::MACRO_REDEFINED,
                        format!("macro `{name}` redefined"),
                    )
                    .with_primary(def_span, "redefined here")
                    .with_secondary(old.span, "previous definition"),
                );
            }
        }
        self.macros.insert(
            sym,
            Macro {
                params,
                body,
                span: def_span,
            },
        );
    }

    /// The parameter list of a function-like macro, from the raw tokens after its `(`;
    /// returns the names and the byte offset in `rest` after the `)`.
    fn macro_params(
        &mut self,
        file: FileId,
        at: u32,
        rest: &str,
        raw: &[RawToken],
    ) -> Option<(Vec<Symbol>, u32)> {
        let mut params: Vec<Symbol> = Vec::new();
        let mut toks = raw.iter().filter(|t| t.kind != Some(RawTok::Newline));
        let mut expect_name = true;
        let mut last = raw.first().map_or(0, |t| t.start);
        while let Some(t) = toks.next() {
            let text = &rest[t.start as usize..t.end as usize];
            let span = Span::new(file, at + t.start, at + t.end);
            last = t.end;
            match t.kind {
                Some(RawTok::RParen) if !expect_name || params.is_empty() => {
                    return Some((params, t.end));
                }
                Some(RawTok::Comma) if !expect_name => expect_name = true,
                Some(RawTok::Ident) if expect_name && text == VA_ARGS => {
                    self.error(
                        Diagnostic::error(
                            codes::MALFORMED_DIRECTIVE,
                            "`__VA_ARGS__` cannot name a macro parameter",
                        )
                        .with_primary(span, "reserved for the arguments of `...`")
                        .with_help("write `...` to take the remaining arguments as `__VA_ARGS__`"),
                    );
                    return None;
                }
                Some(RawTok::Ident) if expect_name && keyword(text).is_none() => {
                    let p = self.interner.intern(text);
                    if params.contains(&p) {
                        self.error(
                            Diagnostic::error(
                                codes::MALFORMED_DIRECTIVE,
                                format!("duplicate macro parameter `{text}`"),
                            )
                            .with_primary(span, "named twice")
                            .with_help("give each parameter its own name"),
                        );
                        return None;
                    }
                    params.push(p);
                    expect_name = false;
                }
                // `...` last: the arguments from there on, commas included, are
                // `__VA_ARGS__` (C99's variadic macros, which ISPC's preprocessor has).
                Some(RawTok::Ellipsis) if expect_name => {
                    params.push(self.interner.intern(VA_ARGS));
                    match toks.next() {
                        Some(close) if close.kind == Some(RawTok::RParen) => {
                            return Some((params, close.end));
                        }
                        _ => {
                            self.error(
                                Diagnostic::error(
                                    codes::MALFORMED_DIRECTIVE,
                                    "`...` must be the last macro parameter",
                                )
                                .with_primary(span, "`...` here")
                                .with_help(
                                    "write `#define NAME(a, ...) body` and use `__VA_ARGS__`",
                                ),
                            );
                            return None;
                        }
                    }
                }
                _ => {
                    self.error(
                        Diagnostic::error(
                            codes::MALFORMED_DIRECTIVE,
                            "malformed macro parameter list",
                        )
                        .with_primary(
                            span,
                            if expect_name {
                                "expected a parameter name"
                            } else {
                                "expected `,` or `)`"
                            },
                        )
                        .with_help("write `#define NAME(a, b) body`"),
                    );
                    return None;
                }
            }
        }
        self.error(
            Diagnostic::error(
                codes::MALFORMED_DIRECTIVE,
                "macro parameter list is not closed",
            )
            .with_primary(Span::new(file, at + last, at + last), "expected `)`")
            .with_help("write `#define NAME(a, b) body`"),
        );
        None
    }

    fn pragma(&mut self, rest: &str, span: Span) {
        let rest = rest.trim();
        let name_len = rest
            .find(|c: char| c.is_whitespace() || c == '(')
            .unwrap_or(rest.len());
        let (name, args) = rest.split_at(name_len);
        if name == "once" {
            if let Some(p) = self
                .include_stack
                .last()
                .and_then(|&f| self.sources.get(f).path.clone())
            {
                self.once_files.insert(p.canonicalize().unwrap_or(p));
            }
        } else if !KNOWN_PRAGMAS.contains(&name) {
            self.diags.push(
                Diagnostic::note(
                    codes::UNKNOWN_PRAGMA,
                    format!("unknown pragma `{name}` ignored"),
                )
                .with_primary(span, "")
                .with_note(format!("known pragmas: {}", KNOWN_PRAGMAS.join(", "))),
            );
        }
        self.out.pragmas.push(Pragma {
            name: name.to_string(),
            args: args.trim().to_string(),
            span,
        });
    }

    /// Evaluates an `#if`/`#elif` condition: integers, `defined NAME`, `defined(NAME)`,
    /// macros (an undefined name is 0, as in C), `! ~ - + * / % + - << >> < > <= >= == != & ^ | && || ?:` and parentheses.
    fn eval_condition(&mut self, file: FileId, at: u32, rest: &str, span: Span) -> bool {
        let raw = lex(rest);
        let mut toks: Vec<CondTok> = Vec::new();
        for t in raw.iter() {
            let s = &rest[t.start as usize..t.end as usize];
            match t.kind {
                Some(RawTok::Int) => match parse_int(s) {
                    Ok((v, _)) => toks.push(CondTok::Num(v as i64)),
                    Err(_) => return self.bad_condition(file, at, rest, span),
                },
                Some(RawTok::Ident) if s == "defined" => toks.push(CondTok::Defined),
                Some(RawTok::Ident) => toks.push(CondTok::Name(self.interner.intern(s))),
                Some(RawTok::Newline) => {}
                Some(RawTok::LParen) => toks.push(CondTok::LParen),
                Some(RawTok::RParen) => toks.push(CondTok::RParen),
                Some(k) => match punct_tok(k) {
                    tok if cond_binary_prec(&tok).is_some()
                        || matches!(tok, Tok::Bang | Tok::Tilde | Tok::Question | Tok::Colon) =>
                    {
                        toks.push(CondTok::Op(tok))
                    }
                    _ => return self.bad_condition(file, at, rest, span),
                },
                None => return self.bad_condition(file, at, rest, span),
            }
        }
        let mut ev = CondEval {
            toks: &toks,
            pos: 0,
            macros: &self.macros,
        };
        match ev.expr(0) {
            Some(v) if ev.pos == toks.len() => v != 0,
            _ => self.bad_condition(file, at, rest, span),
        }
    }

    fn bad_condition(&mut self, file: FileId, at: u32, rest: &str, span: Span) -> bool {
        let sp = if rest.trim().is_empty() {
            span
        } else {
            Span::new(file, at, at + rest.trim_end().len() as u32)
        };
        self.error(
            Diagnostic::error(codes::MALFORMED_DIRECTIVE, "invalid `#if` condition")
                .with_primary(sp, "expected an integer expression")
                .with_help("conditions may use integers, macros, `defined(NAME)`, arithmetic, comparisons and `&&`/`||`/`!`"),
        );
        false
    }
}

#[derive(Clone, Debug)]
enum CondTok {
    Num(i64),
    Name(Symbol),
    Defined,
    LParen,
    RParen,
    Op(Tok),
}

fn cond_binary_prec(tok: &Tok) -> Option<u8> {
    use Tok::*;
    Some(match tok {
        OrOr => 1,
        AndAnd => 2,
        Pipe => 3,
        Caret => 4,
        Amp => 5,
        EqEq | Ne => 6,
        Lt | Gt | Le | Ge => 7,
        Shl | Shr => 8,
        Plus | Minus => 9,
        Star | Slash | Percent => 10,
        _ => return None,
    })
}

/// Precedence-climbing evaluator for `#if` conditions. `None` = malformed.
struct CondEval<'a> {
    toks: &'a [CondTok],
    pos: usize,
    macros: &'a FxHashMap<Symbol, Macro>,
}

impl CondEval<'_> {
    fn next(&mut self) -> Option<CondTok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn peek_op(&self) -> Option<&Tok> {
        match self.toks.get(self.pos) {
            Some(CondTok::Op(t)) => Some(t),
            _ => None,
        }
    }

    fn expr(&mut self, min_prec: u8) -> Option<i64> {
        let mut lhs = self.unary()?;
        while let Some(op) = self.peek_op().cloned() {
            if op == Tok::Question && min_prec == 0 {
                self.pos += 1;
                let a = self.expr(0)?;
                if !matches!(self.next(), Some(CondTok::Op(Tok::Colon))) {
                    return None;
                }
                let b = self.expr(0)?;
                lhs = if lhs != 0 { a } else { b };
                continue;
            }
            let Some(prec) = cond_binary_prec(&op) else {
                break;
            };
            if prec < min_prec.max(1) {
                break;
            }
            self.pos += 1;
            let rhs = self.expr(prec + 1)?;
            lhs = apply_cond_op(&op, lhs, rhs)?;
        }
        Some(lhs)
    }

    fn unary(&mut self) -> Option<i64> {
        match self.next()? {
            CondTok::Num(v) => Some(v),
            CondTok::Name(sym) => Some(self.macro_value(sym)),
            CondTok::Defined => {
                let paren = matches!(self.toks.get(self.pos), Some(CondTok::LParen));
                if paren {
                    self.pos += 1;
                }
                let CondTok::Name(sym) = self.next()? else {
                    return None;
                };
                if paren && !matches!(self.next(), Some(CondTok::RParen)) {
                    return None;
                }
                Some(i64::from(self.macros.contains_key(&sym)))
            }
            CondTok::LParen => {
                let v = self.expr(0)?;
                matches!(self.next(), Some(CondTok::RParen)).then_some(v)
            }
            CondTok::Op(Tok::Bang) => Some(i64::from(self.unary()? == 0)),
            CondTok::Op(Tok::Tilde) => Some(!self.unary()?),
            CondTok::Op(Tok::Minus) => Some(self.unary()?.wrapping_neg()),
            CondTok::Op(Tok::Plus) => self.unary(),
            _ => None,
        }
    }

    /// A macro whose body is one integer stands for it; anything else is 0.
    fn macro_value(&self, sym: Symbol) -> i64 {
        match self
            .macros
            .get(&sym)
            .and_then(|m| m.plain_body())
            .as_deref()
        {
            Some([Tok::Int(v, _)]) => *v as i64,
            _ => 0,
        }
    }
}

fn apply_cond_op(op: &Tok, a: i64, b: i64) -> Option<i64> {
    use Tok::*;
    Some(match op {
        OrOr => i64::from(a != 0 || b != 0),
        AndAnd => i64::from(a != 0 && b != 0),
        Pipe => a | b,
        Caret => a ^ b,
        Amp => a & b,
        EqEq => i64::from(a == b),
        Ne => i64::from(a != b),
        Lt => i64::from(a < b),
        Gt => i64::from(a > b),
        Le => i64::from(a <= b),
        Ge => i64::from(a >= b),
        Shl => a.wrapping_shl(b as u32),
        Shr => a.wrapping_shr(b as u32),
        Plus => a.wrapping_add(b),
        Minus => a.wrapping_sub(b),
        Star => a.wrapping_mul(b),
        Slash => a.checked_div(b)?,
        Percent => a.checked_rem(b)?,
        _ => return None,
    })
}

fn punct_tok(kind: RawTok) -> Tok {
    use RawTok as R;
    match kind {
        R::Ellipsis => Tok::Ellipsis,
        R::LParen => Tok::LParen,
        R::RParen => Tok::RParen,
        R::LBracket => Tok::LBracket,
        R::RBracket => Tok::RBracket,
        R::LBrace => Tok::LBrace,
        R::RBrace => Tok::RBrace,
        R::Semi => Tok::Semi,
        R::Comma => Tok::Comma,
        R::Dot => Tok::Dot,
        R::Arrow => Tok::Arrow,
        R::Question => Tok::Question,
        R::Colon => Tok::Colon,
        R::Plus => Tok::Plus,
        R::Minus => Tok::Minus,
        R::Star => Tok::Star,
        R::Slash => Tok::Slash,
        R::Percent => Tok::Percent,
        R::PlusPlus => Tok::PlusPlus,
        R::MinusMinus => Tok::MinusMinus,
        R::Amp => Tok::Amp,
        R::Pipe => Tok::Pipe,
        R::Caret => Tok::Caret,
        R::Tilde => Tok::Tilde,
        R::Bang => Tok::Bang,
        R::Shl => Tok::Shl,
        R::Shr => Tok::Shr,
        R::AndAnd => Tok::AndAnd,
        R::OrOr => Tok::OrOr,
        R::Lt => Tok::Lt,
        R::Gt => Tok::Gt,
        R::Le => Tok::Le,
        R::Ge => Tok::Ge,
        R::EqEq => Tok::EqEq,
        R::Ne => Tok::Ne,
        R::Assign => Tok::Assign,
        R::PlusAssign => Tok::PlusAssign,
        R::MinusAssign => Tok::MinusAssign,
        R::StarAssign => Tok::StarAssign,
        R::SlashAssign => Tok::SlashAssign,
        R::PercentAssign => Tok::PercentAssign,
        R::AmpAssign => Tok::AmpAssign,
        R::PipeAssign => Tok::PipeAssign,
        R::CaretAssign => Tok::CaretAssign,
        R::ShlAssign => Tok::ShlAssign,
        R::ShrAssign => Tok::ShrAssign,
        // Identifiers, literals, newlines and directives never reach here.
        _ => Tok::Semi,
    }
}

/// A literal's error: (label, help).
type LitError = (String, String);

/// Parses a C integer literal: decimal, `0x` hex, `0b` binary or leading-`0` octal,
/// with suffixes `u`, `l`, `ll` (any case and order) and ISPC's `k`/`M`/`G` multipliers.
pub fn parse_int(s: &str) -> Result<(u64, IntSuffix), LitError> {
    if s.len() > 1
        && s[..s.len() - 1].bytes().all(|b| b.is_ascii_digit())
        && s.ends_with(['d', 'D'])
    {
        return Err((
            "a double literal needs a radix separator".into(),
            format!("write `{}.d`", &s[..s.len() - 1]),
        ));
    }
    let (radix, digits_start) = if s.len() > 1 && (s.starts_with("0x") || s.starts_with("0X")) {
        (16, 2)
    } else if s.len() > 1 && (s.starts_with("0b") || s.starts_with("0B")) {
        (2, 2)
    } else if s.len() > 1 && s.starts_with('0') && s.as_bytes()[1].is_ascii_digit() {
        (8, 1)
    } else {
        (10, 0)
    };
    let body = &s[digits_start..];
    if radix == 8
        && body
            .bytes()
            .take_while(u8::is_ascii_digit)
            .any(|b| b >= b'8')
    {
        return Err((
            "`8` and `9` are not octal digits".into(),
            "a leading `0` makes an octal literal; remove it for decimal".into(),
        ));
    }
    let digits_len = body
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(body.len());
    let (digits, suffix) = body.split_at(digits_len);
    if digits.is_empty() {
        return Err((
            "no digits after the prefix".into(),
            "write digits after `0x` or `0b`, like `0x1F`".into(),
        ));
    }
    let mut suf = IntSuffix::default();
    let mut multiplier: u64 = 1;
    let lower = suffix.to_ascii_lowercase();
    let mut rest = lower.as_str();
    let mut seen_l = false;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("ll") {
            if seen_l {
                return Err(bad_suffix(suffix));
            }
            (seen_l, suf.long) = (true, true);
            rest = r;
        } else if let Some(r) = rest.strip_prefix('l') {
            // As in ISPC, one `l` does not widen the literal: only `ll` does.
            if seen_l {
                return Err(bad_suffix(suffix));
            }
            seen_l = true;
            rest = r;
        } else if let Some(r) = rest.strip_prefix('u') {
            if suf.unsigned {
                return Err(bad_suffix(suffix));
            }
            suf.unsigned = true;
            rest = r;
        } else if multiplier == 1
            && (rest.starts_with('k') || rest.starts_with('m') || rest.starts_with('g'))
        {
            // ISPC: 1k = 1024, 1M = 1024*1024, 1G = 1024^3 (upper or lower case).
            multiplier = match rest.as_bytes()[0] {
                b'k' => 1 << 10,
                b'm' => 1 << 20,
                _ => 1 << 30,
            };
            rest = &rest[1..];
        } else {
            return Err(bad_suffix(suffix));
        }
    }
    let value = u64::from_str_radix(digits, radix)
        .ok()
        .and_then(|v| v.checked_mul(multiplier))
        .ok_or_else(|| {
            (
                "does not fit in 64 bits".to_string(),
                "the largest integer literal is 18446744073709551615 (0xFFFFFFFFFFFFFFFF)"
                    .to_string(),
            )
        })?;
    Ok((value, suf))
}

fn bad_suffix(suffix: &str) -> LitError {
    (
        format!("invalid suffix `{suffix}`"),
        "integer suffixes are `u`, `l`, `ll` and combinations like `ul`, and ISPC's `k`, `M`, `G`"
            .into(),
    )
}

/// Parses a floating literal. `f` or no suffix gives a float, rounded once from the
/// decimal text to binary32 (never through binary64, which could round twice); `d` gives
/// a double; `f16` a float16, also rounded once.
pub fn parse_float(s: &str) -> Result<(f64, FloatSuffix), LitError> {
    if s.starts_with("0x") || s.starts_with("0X") {
        return parse_hex_float(&s[2..]);
    }
    if let Some(num) = s.strip_suffix("f16").or_else(|| s.strip_suffix("F16")) {
        return parse_decimal(num, FloatSuffix::F16);
    }
    if let Some(exp) = fortran_exponent(s) {
        let text = format!("{}e{}", &s[..exp], &s[exp + 1..]);
        return parse_decimal(&text, FloatSuffix::D);
    }
    let split = s
        .rfind(|c: char| c.is_ascii_digit() || c == '.')
        .map_or(0, |i| i + 1);
    let (num, suffix) = s.split_at(split);
    let suf =
        match suffix {
            "" => FloatSuffix::None,
            "f" | "F" => FloatSuffix::F,
            "d" | "D" => FloatSuffix::D,
            _ => return Err((
                format!("invalid suffix `{suffix}`"),
                "floating-point suffixes are `f` (float), `d` (double) and `f16` (float16); no suffix means float"
                    .into(),
            )),
        };
    parse_decimal(num, suf)
}

/// `2f16`: digits and `f16`, a float16 (a suffix makes the radix point optional).
fn is_bare_half(s: &str) -> bool {
    let digits = s.strip_suffix("f16").or_else(|| s.strip_suffix("F16"));
    digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// `2f`: digits and an `f`, which ISPC reads as a float (deprecated there, with a
/// warning, as here).
fn is_bare_float(s: &str) -> bool {
    s.len() > 1 && s[..s.len() - 1].bytes().all(|b| b.is_ascii_digit()) && s.ends_with(['f', 'F'])
}

/// Where the `d` of a "Fortran" double (`1.5d-3`) is, if `s` is one: a `d` between the
/// number and an exponent's signed digits.
fn fortran_exponent(s: &str) -> Option<usize> {
    let at = s.find(['d', 'D'])?;
    let exp = &s[at + 1..];
    let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
    let is_exponent = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    let is_number = s[..at].bytes().all(|b| b.is_ascii_digit() || b == b'.');
    (is_exponent && is_number).then_some(at)
}

/// A hexadecimal floating literal after its `0x`: `1.8p1` is 1.5 * 2^1. The mantissa is
/// read exactly (at most 13 fraction digits, which fit a double's 52 bits) and rounded
/// once to the literal's type.
fn parse_hex_float(s: &str) -> Result<(f64, FloatSuffix), LitError> {
    let bad = || {
        (
            "not a valid hexadecimal floating-point number".to_string(),
            "write `0x`, `0` or `1`, an optional `.` and hex digits, then `p` and a decimal exponent, like `0x1.8p1`".to_string(),
        )
    };
    let p = s.find(['p', 'P']).ok_or_else(bad)?;
    let (mantissa, rest) = (&s[..p], &s[p + 1..]);
    let exp_len = rest
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '+' || c == '-'))))
        .map_or(rest.len(), |(i, _)| i);
    let (exp, suffix) = rest.split_at(exp_len);
    let suf = match suffix {
        "" => FloatSuffix::None,
        "f" | "F" => FloatSuffix::F,
        "d" | "D" => FloatSuffix::D,
        "f16" | "F16" => FloatSuffix::F16,
        _ => return Err(bad()),
    };
    let exp: i32 = exp.parse().map_err(|_| bad())?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if frac.len() > 13 {
        return Err((
            "too many hexadecimal digits".into(),
            "a hexadecimal floating-point literal has at most 13 digits after the `.`".into(),
        ));
    }
    let bits = u64::from_str_radix(&format!("{int}{frac}"), 16).map_err(|_| bad())?;
    let value = bits as f64 * 2f64.powi(exp.saturating_sub(4 * frac.len() as i32));
    Ok(match suf {
        FloatSuffix::D => (value, suf),
        FloatSuffix::F16 => (fp16::f64_from_f16(fp16::f16_from_f64(value)), suf),
        _ => (f64::from(value as f32), suf),
    })
}

/// The float16 nearest the decimal `text` (no sign), given `v`, the nearest f64 to it.
/// Rounding through f64 errs only when `v` lands exactly on the midpoint of two float16
/// values; then the exact decimal decides which side the literal is on.
fn decimal_to_half(text: &str, v: f64) -> f64 {
    let h = fp16::f16_from_f64(v);
    let hv = fp16::f64_from_f16(h);
    let lower = if hv > v { h - 1 } else { h };
    // Above the largest finite value 65504 the next step would be 65536.
    let upper = match lower + 1 {
        0x7c00 => 65536.0,
        u => fp16::f64_from_f16(u),
    };
    let is_midpoint = hv != v && (fp16::f64_from_f16(lower) + upper) / 2.0 == v;
    if !is_midpoint {
        return hv;
    }
    let pick = match decimal_digits(text).cmp(&decimal_digits(&format!("{v:.80e}"))) {
        std::cmp::Ordering::Less => lower,
        std::cmp::Ordering::Greater => lower + 1,
        std::cmp::Ordering::Equal => h,
    };
    fp16::f64_from_f16(pick)
}

/// A positive decimal `d.ddd[e±x]` as (exponent, significant digits) with value
/// 0.DIGITS * 10^exponent: two of them compare as numbers (when nonzero).
fn decimal_digits(text: &str) -> (i64, String) {
    let (mantissa, exp) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i64>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{int}{frac}");
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all[lead..].trim_end_matches('0').to_string();
    (exp + int.len() as i64 - lead as i64, digits)
}

/// A decimal number's text (digits, `.`, exponent) as the literal's type.
fn parse_decimal(num: &str, suf: FloatSuffix) -> Result<(f64, FloatSuffix), LitError> {
    let mut text = num.to_string();
    if text.ends_with('.') {
        text.push('0');
    }
    if let Some(i) = text.find(['e', 'E']) {
        if text[..i].ends_with('.') {
            text.insert(i, '0');
        }
    }
    let value = match suf {
        FloatSuffix::D => text.parse::<f64>().ok(),
        FloatSuffix::F16 => text.parse::<f64>().ok().map(|v| decimal_to_half(&text, v)),
        _ => text.parse::<f32>().ok().map(f64::from),
    };
    match value {
        Some(v) => Ok((v, suf)),
        None => Err((
            "not a valid number".into(),
            "write digits with an optional fraction and exponent, like `1.5e-3f`".into(),
        )),
    }
}

/// Processes escape sequences. On error gives (byte offset, length, message).
pub fn unescape(s: &str) -> Result<Vec<u8>, (usize, usize, String)> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let Some(&c) = b.get(i + 1) else {
            return Err((i, 1, "escape at end of literal".into()));
        };
        let (v, len) = match c {
            b'n' => (b'\n', 2),
            b't' => (b'\t', 2),
            b'r' => (b'\r', 2),
            b'a' => (7, 2),
            b'b' => (8, 2),
            b'f' => (12, 2),
            b'v' => (11, 2),
            b'\\' | b'\'' | b'"' | b'?' => (c, 2),
            b'x' => {
                let hex: String = s[i + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_hexdigit())
                    .take(2)
                    .collect();
                match u8::from_str_radix(&hex, 16) {
                    Ok(v) => (v, 2 + hex.len()),
                    Err(_) => return Err((i, 2, "`\\x` needs hexadecimal digits".into())),
                }
            }
            b'0'..=b'7' => {
                let oct: String = s[i + 1..]
                    .chars()
                    .take_while(|c| ('0'..='7').contains(c))
                    .take(3)
                    .collect();
                match u8::from_str_radix(&oct, 8) {
                    Ok(v) => (v, 1 + oct.len()),
                    Err(_) => return Err((i, 1 + oct.len(), "octal escape out of range".into())),
                }
            }
            _ => {
                let clen = s[i + 1..].chars().next().map_or(1, char::len_utf8);
                return Err((
                    i,
                    1 + clen,
                    format!("unknown escape sequence `\\{}`", &s[i + 1..i + 1 + clen]),
                ));
            }
        };
        out.push(v);
        i += len;
    }
    Ok(out)
}

/// The type-name pre-scan. C's grammar needs to know which identifiers name types
/// (`(T)x` is a cast only if `T` is a type; `T * p;` declares `p` only then). This pass
/// finds every name introduced by `struct NAME`, `enum NAME` and `typedef ... NAME;`
/// anywhere in the unit and retags all its uses as [`Tok::TypeName`], except after
/// `.`/`->` (member names). Type names are therefore file-global: a variable may not
/// reuse a type's name, which the spec documents.
pub fn mark_type_names(tokens: &mut [Token]) {
    let mut names: FxHashSet<Symbol> = super::intern::POINTER_SIZED_TYPES
        .iter()
        .map(|&(s, _, _)| s)
        .collect();
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i].tok {
            Tok::KwStruct | Tok::KwEnum => {
                if let Some(Token {
                    tok: Tok::Ident(s), ..
                }) = tokens.get(i + 1)
                {
                    names.insert(*s);
                }
            }
            Tok::KwTypedef => {
                let mut depth = 0i32;
                let mut last = None;
                // `typedef R (*NAME)(...);` names the type inside its first parentheses.
                let mut fn_ptr_name = None;
                let mut j = i + 1;
                while j < tokens.len() {
                    match &tokens[j].tok {
                        Tok::LParen
                            if depth == 0
                                && fn_ptr_name.is_none()
                                && matches!(tokens.get(j + 1).map(|t| &t.tok), Some(Tok::Star)) =>
                        {
                            fn_ptr_name = tokens[j + 2..]
                                .iter()
                                .take_while(|t| !matches!(t.tok, Tok::RParen | Tok::Semi))
                                .find_map(|t| match t.tok {
                                    Tok::Ident(s) => Some(s),
                                    _ => None,
                                });
                            depth += 1;
                        }
                        Tok::LBrace | Tok::LParen | Tok::LBracket => depth += 1,
                        Tok::RBrace | Tok::RParen | Tok::RBracket => depth -= 1,
                        Tok::Ident(s) if depth == 0 => last = Some(*s),
                        Tok::Semi if depth <= 0 => break,
                        _ => {}
                    }
                    j += 1;
                }
                if let Some(s) = fn_ptr_name.or(last) {
                    names.insert(s);
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    let template_names = mark_template_items(tokens);
    for i in 0..tokens.len() {
        if let Tok::Ident(s) = tokens[i].tok {
            let after_member = i > 0 && matches!(tokens[i - 1].tok, Tok::Dot | Tok::Arrow);
            let before_lt = matches!(tokens.get(i + 1).map(|t| &t.tok), Some(Tok::Lt));
            if names.contains(&s) && !after_member {
                tokens[i].tok = Tok::TypeName(s);
            } else if template_names.contains(&s) && before_lt && !after_member {
                tokens[i].tok = Tok::TemplateName(s);
            }
        }
    }
}

/// The template part of the pre-scan. In each item that starts with `template`, the
/// type parameters (`typename T`) are retagged as type names up to the item's end, so
/// that `T x;` and `(T)x` parse as they do for a typedef. Returns the names of the
/// functions such items declare: where one is followed by `<`, that starts template
/// arguments, not a comparison.
fn mark_template_items(tokens: &mut [Token]) -> FxHashSet<Symbol> {
    let mut functions = FxHashSet::default();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i].tok != Tok::KwTemplate {
            i += 1;
            continue;
        }
        let end = item_end(tokens, i);
        let mut params = Vec::new();
        let mut j = i + 1;
        if matches!(tokens.get(j).map(|t| &t.tok), Some(Tok::Lt)) {
            while j < end && tokens[j].tok != Tok::Gt {
                if let (Tok::KwTypename, Some(Tok::Ident(s))) =
                    (&tokens[j].tok, tokens.get(j + 1).map(|t| &t.tok))
                {
                    params.push(*s);
                }
                j += 1;
            }
        }
        for k in i..end {
            let after_member = k > 0 && matches!(tokens[k - 1].tok, Tok::Dot | Tok::Arrow);
            match tokens[k].tok {
                Tok::Ident(s) if params.contains(&s) && !after_member => {
                    tokens[k].tok = Tok::TypeName(s);
                }
                _ => {}
            }
        }
        // The function's name: the identifier before the first `(` or `<` after the
        // parameter list (the parameters are type names by now).
        let name = tokens[j..end]
            .windows(2)
            .find_map(|w| match (&w[0].tok, &w[1].tok) {
                (Tok::Ident(s), Tok::LParen | Tok::Lt) => Some(*s),
                _ => None,
            });
        functions.extend(name);
        i = end.max(i + 1);
    }
    functions
}

/// Where the item starting at `start` ends: after its `;` at brace depth 0, or after
/// the `}` that closes its body.
fn item_end(tokens: &[Token], start: usize) -> usize {
    let mut depth = 0usize;
    for (k, t) in tokens.iter().enumerate().skip(start) {
        match t.tok {
            Tok::LBrace => depth += 1,
            Tok::RBrace if depth <= 1 => return k + 1,
            Tok::RBrace => depth -= 1,
            Tok::Semi if depth == 0 => return k + 1,
            _ => {}
        }
    }
    tokens.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tokens of `src` after preprocessing, spelled, and the diagnostics' codes.
    fn pp(src: &str) -> (Vec<String>, Vec<&'static str>) {
        pp_with(src, &[])
    }

    /// [`pp`] with the compiler's own definitions `predefined`.
    fn pp_with(src: &str, predefined: &[(String, String)]) -> (Vec<String>, Vec<&'static str>) {
        let mut sources = SourceMap::new();
        let mut interner = Interner::new();
        let file = sources.add("t.spmd", None, src.to_string());
        let mut diags = Vec::new();
        let options = Options {
            include_dirs: &[],
            defines: &[],
            predefined,
        };
        let out = preprocess(&mut sources, &mut interner, &[file], &options, &mut diags);
        let toks = out
            .tokens
            .iter()
            .map(|t| match &t.tok {
                Tok::Ident(s) | Tok::TypeName(s) | Tok::TemplateName(s) => {
                    interner.resolve(*s).to_string()
                }
                Tok::Int(v, _) => v.to_string(),
                Tok::Str(s) => format!("{s:?}"),
                other => other.spelling().to_string(),
            })
            .collect();
        (toks, diags.iter().map(|d| d.code.0).collect())
    }

    #[test]
    fn function_like_macros() {
        let (toks, codes) = pp("#define F(a, b) a * (b)\n#define G F\nF(1 + 2, x) G(3,\n4) F G");
        assert!(codes.is_empty(), "{codes:?}");
        // An expansion that ends in a function-like macro's name does not take its
        // arguments from the text after the use (C would): `G(3, 4)` stays a call of F.
        let want = "1 + 2 * ( x ) F ( 3 , 4 ) F F";
        assert_eq!(toks.join(" "), want);
        // Arguments are expanded first, except next to `#` and `##`.
        let (toks, codes) = pp(
            "#define N 7\n#define S(x) #x\n#define C(a, b) a ## b\n#define XC(a, b) C(a, b)\nS(a  +b(N)) C(N, 1) XC(N, 1) C(x, N)",
        );
        assert!(codes.is_empty(), "{codes:?}");
        assert_eq!(toks.join(" "), "\"a +b(N)\" N1 71 xN");
        // A macro is not expanded inside its own expansion.
        let (toks, _) = pp("#define R(x) R(x + 1)\nR(0)");
        assert_eq!(toks.join(" "), "R ( 0 + 1 )");
        let (_, codes) = pp("#define F(a, b) a\nF(1) F(1, 2, 3) F(1,");
        assert_eq!(codes, ["E0015", "E0015", "E0015"]);
        let (_, codes) = pp(
            "#define A(x, x) x\n#define B(x) #y\n#define C(x) ## x\n#define D(..., x) 1\n#define E(__VA_ARGS__) 1",
        );
        assert_eq!(codes, ["E0010", "E0010", "E0010", "E0010", "E0010"]);
        // `...` takes the remaining arguments, commas and all, or none.
        let (toks, codes) = pp(
            "#define V(a, ...) f(a, __VA_ARGS__)\n#define S(...) #__VA_ARGS__\nV(1, 2, (3, 4)) V(1) S(x,  y) S()",
        );
        assert!(codes.is_empty(), "{codes:?}");
        assert_eq!(
            toks.join(" "),
            "f ( 1 , 2 , ( 3 , 4 ) ) f ( 1 , ) \"x, y\" \"\""
        );
        let (_, codes) = pp("#define V(a, b, ...) a\nV(1)");
        assert_eq!(codes, ["E0015"]);
    }

    #[test]
    fn ints() {
        assert_eq!(parse_int("42").unwrap().0, 42);
        assert_eq!(parse_int("0x1F").unwrap().0, 31);
        assert_eq!(parse_int("0b101").unwrap().0, 5);
        assert_eq!(parse_int("010").unwrap().0, 8);
        assert_eq!(parse_int("0").unwrap().0, 0);
        assert_eq!(parse_int("4k").unwrap().0, 4096);
        let (v, s) = parse_int("7ull").unwrap();
        assert_eq!((v, s.unsigned, s.long), (7, true, true));
        // One `l` keeps the literal's width (ISPC's lexer); `ll` makes it 64-bit.
        let (v, s) = parse_int("7ul").unwrap();
        assert_eq!((v, s.unsigned, s.long), (7, true, false));
        let (v, s) = parse_int("7L").unwrap();
        assert_eq!((v, s.unsigned, s.long), (7, false, false));
        assert!(parse_int("7lll").is_err());
        assert!(parse_int("7lul").is_err());
        assert!(parse_int("7llL").is_err());
        assert!(parse_int("12abc").is_err());
        assert!(parse_int("99999999999999999999").is_err());
        assert!(parse_int("09").is_err());
        assert!(parse_int("0x").is_err());
    }

    #[test]
    fn floats() {
        assert_eq!(parse_float("1.5").unwrap(), (1.5, FloatSuffix::None));
        assert_eq!(parse_float("2.f").unwrap(), (2.0, FloatSuffix::F));
        assert_eq!(parse_float("1.e3d").unwrap(), (1000.0, FloatSuffix::D));
        assert_eq!(parse_float("0.1").unwrap().0, f64::from(0.1f32));
        assert_eq!(parse_float("0.1d").unwrap().0, 0.1f64);
        assert!(parse_float("1.5q").is_err());
    }

    #[test]
    fn fortran_and_hex_floats() {
        assert_eq!(parse_float("1d-7").unwrap(), (1e-7, FloatSuffix::D));
        assert_eq!(parse_float("1.0d0").unwrap(), (1.0, FloatSuffix::D));
        assert_eq!(parse_float(".5D+2").unwrap(), (50.0, FloatSuffix::D));
        assert_eq!(parse_float("0x1.8p1").unwrap(), (3.0, FloatSuffix::None));
        assert_eq!(parse_float("0x1p-2d").unwrap(), (0.25, FloatSuffix::D));
        // Rounded once to binary32: 1 + 2^-24 + 2^-52 rounds up, not to even.
        let v = parse_float("0x1.0000010000001p0").unwrap().0;
        assert_eq!(v, f64::from(1.0f32 + f32::EPSILON));
        assert!(parse_float("0x1.8p").is_err());
        assert!(parse_float("0x1.00000000000000p0").is_err());
        assert!(parse_int("2d").unwrap_err().1.contains("2.d"));
        assert!(is_bare_float("0f") && !is_bare_float("0x1f") && !is_bare_float("f"));
    }

    #[test]
    fn escapes() {
        assert_eq!(unescape(r"a\n\x41\101\0").unwrap(), b"a\nAA\0");
        assert!(unescape(r"\q").is_err());
    }

    #[test]
    fn predefined_macros_expand_and_a_redefinition_warns() {
        let pre = [("TARGET_WIDTH".to_string(), "16".to_string())];
        let (toks, codes) = pp_with("#if TARGET_WIDTH == 16\nyes TARGET_WIDTH\n#endif\n", &pre);
        assert_eq!(toks, ["yes", "16"]);
        assert!(codes.is_empty());
        let (toks, codes) = pp_with("#define TARGET_WIDTH 8\nTARGET_WIDTH\n", &pre);
        assert_eq!((toks, codes), (vec!["8".to_string()], vec!["W0006"]));
    }
}
