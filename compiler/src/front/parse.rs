//! The parser: tokens to AST, with error recovery.
//!
//! The token stream is first cut into top-level items (a declaration ends at `;` at
//! brace depth 0, a function at its closing `}`), and each item is parsed on its own by
//! the lalrpop grammar (`grammar.lalrpop`). An error therefore never spreads past its
//! item, and inside function bodies the grammar's `!` productions resynchronize at
//! statement boundaries. Together they let one run report many independent errors.

use std::cell::{Cell, RefCell};
use std::ops::Range;

use lalrpop_util::{lalrpop_mod, ErrorRecovery, ParseError};
use smallvec::SmallVec;

use super::ast::*;
use super::items::{item_ranges, ItemTok};
use super::token::{Pos, Tok, Token};
use crate::diag::{codes, Diagnostic};
use crate::source::{FileId, SourceMap, Span};

lalrpop_mod!(
    #[allow(clippy::all, unused_parens, dead_code, clippy::pedantic)]
    grammar,
    "/front/grammar.rs"
);

/// Items nested deeper than this (brackets of any kind) are rejected before parsing, so
/// later recursive passes cannot overflow the stack.
pub const MAX_NESTING: usize = 256;

/// A specifier word as parsed, before it is filed into qualifiers or a base type.
#[derive(Clone, Debug)]
pub enum SpecPart {
    Qual(Tok, Span),
    Base(BaseType, Span),
    /// `soa<N>`: wraps the base type once the whole specifier is read.
    Soa(VecLen, Span),
}

/// What follows `template` in a template item.
pub enum TemplateHead {
    Primary(Vec<TemplateParam>),
    Specialization(Option<TemplateArgs>),
    Instantiation(TemplateArgs),
}

/// What follows the type of a `new`.
pub enum NewTail {
    One,
    Count(Expr),
    /// `(a, b, ...)` and the parentheses' span.
    Init(Vec<Expr>, Span),
}

/// A `case`/`default` label or a statement, in a `switch` body.
pub enum SwitchItem {
    Label(CaseLabel),
    Stmt(Stmt),
}

/// The bracketed task counts of a `launch`, as written.
pub enum LaunchDims {
    /// `launch f(...)`: one task.
    None,
    /// `launch[x, y, z]`: dimension 0 first.
    List(Vec<Expr>, Span),
    /// `launch[z][y][x]`: dimension 0 last (ISPC's array-like order).
    Nested(Vec<Expr>, Span),
}

/// What one item parses to: usually one [`Item`], sometimes two
/// (`typedef struct Tag {...} Name;`) or none (a stray `;`).
pub struct ItemsOut(pub Vec<Item>);

impl ItemsOut {
    pub fn one(item: Item) -> Self {
        ItemsOut(vec![item])
    }
    pub fn none() -> Self {
        ItemsOut(Vec::new())
    }
}

/// State shared by the grammar's actions: the expression id counter and the
/// diagnostics that actions find (misplaced qualifiers and the like).
pub struct ParseCtx {
    next_expr: Cell<u32>,
    next_decl: Cell<u32>,
    /// Anonymous structs (`struct { ... }`) of the item being parsed, hoisted to file
    /// scope before it when it is done ([`ParseCtx::hoist`]).
    anon_structs: RefCell<Vec<StructDef>>,
    next_anon: Cell<u32>,
    diags: RefCell<Vec<Diagnostic>>,
}

/// Parses a whole preprocessed token stream.
///
/// The fast path parses the unit in one go. If that finds any syntax error, the unit is
/// parsed again item by item, so that each item recovers on its own and errors are
/// reported per item (see [`split_items`]).
pub fn parse(
    tokens: &[Token],
    sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> TranslationUnit {
    let parser = grammar::ItemsParser::new();
    let ctx = ParseCtx::new();
    let mut errors = Vec::new();
    if check_nesting(tokens).is_none() {
        if let Ok(items) = parser.parse(&ctx, &mut errors, stream(tokens)) {
            if errors.is_empty() {
                return ctx.finish(items, diags);
            }
        }
    }
    let ctx = ParseCtx::new();
    let mut items = Vec::new();
    for range in split_items(tokens) {
        let item = &tokens[range];
        if let Some(d) = check_nesting(item) {
            diags.push(d);
            continue;
        }
        errors.clear();
        let result = parser.parse(&ctx, &mut errors, stream(item));
        let found: Vec<ParseError<Pos, Tok, ()>> = errors
            .drain(..)
            .map(|e| e.error)
            .chain(result.as_ref().err().cloned())
            .collect();
        report_cascade_free(found, item, sources, diags);
        if let Ok(parsed) = result {
            items.extend(parsed);
        }
    }
    ctx.finish(items, diags)
}

/// The grammar's view of a token slice, in [`read_order`].
fn stream(tokens: &[Token]) -> impl Iterator<Item = Result<(Pos, Tok, Pos), ()>> + '_ {
    read_order(tokens).into_iter().map(|i| &tokens[i]).map(|t| {
        let l = Pos {
            file: t.span.file,
            offset: t.span.start,
        };
        let r = Pos {
            file: t.span.file,
            offset: t.span.end,
        };
        Ok((l, t.tok.clone(), r))
    })
}

/// The order in which the grammar reads `tokens`: as written, except that a sign word
/// written before type qualifiers (`unsigned uniform int64`, which ISPC accepts) is
/// read just before its integer type, the one place the grammar takes it. Moving it
/// there keeps the grammar LALR(1): a sign word alone also names `int`.
fn read_order(tokens: &[Token]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..tokens.len()).collect();
    let mut i = 0;
    while i < tokens.len() {
        if matches!(tokens[i].tok, Tok::KwUnsigned | Tok::KwSigned) {
            let quals = tokens[i + 1..]
                .iter()
                .take_while(|t| is_type_qualifier(&t.tok))
                .count();
            let int = i + 1 + quals;
            if quals > 0 && tokens.get(int).is_some_and(|t| is_integer_word(&t.tok)) {
                order[i..int].rotate_left(1);
                i = int;
            }
        }
        i += 1;
    }
    order
}

fn is_type_qualifier(tok: &Tok) -> bool {
    matches!(
        tok,
        Tok::KwUniform | Tok::KwVarying | Tok::KwConst | Tok::KwStatic | Tok::KwExtern
    )
}

fn is_integer_word(tok: &Tok) -> bool {
    use Tok::*;
    matches!(
        tok,
        KwInt8
            | KwUInt8
            | KwInt16
            | KwUInt16
            | KwInt
            | KwInt32
            | KwUInt
            | KwUInt32
            | KwInt64
            | KwUInt64
    )
}

/// Cuts the stream into top-level items (see [`item_ranges`]).
fn split_items(tokens: &[Token]) -> Vec<Range<usize>> {
    item_ranges(tokens.len(), |i| match &tokens[i].tok {
        Tok::LBrace => ItemTok::LBrace,
        Tok::RBrace => ItemTok::RBrace,
        Tok::Semi => ItemTok::Semi,
        Tok::KwTypedef => ItemTok::Typedef,
        Tok::KwStruct | Tok::KwEnum => ItemTok::StructOrEnum,
        Tok::Ident(_) => ItemTok::Ident,
        _ => ItemTok::Other,
    })
}

fn check_nesting(item: &[Token]) -> Option<Diagnostic> {
    let mut depth = 0usize;
    for t in item {
        match t.tok {
            Tok::LParen | Tok::LBracket | Tok::LBrace => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(
                        Diagnostic::error(codes::INVALID_DECLARATOR, "brackets nested too deeply")
                            .with_primary(
                                t.span,
                                format!("more than {MAX_NESTING} levels of nesting"),
                            )
                            .with_help("split the expression or the block into smaller pieces"),
                    );
                }
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

// ------------------------------------------------------------------ syntax errors

/// Reports an item's syntax errors, dropping those that merely follow from the previous
/// one. Recovery resumes at the next token that can follow a statement, which may sit in
/// the middle of the broken statement; an error is kept only if the parser got to a new
/// statement since the last error reported (see [`is_independent`]).
fn report_cascade_free(
    found: Vec<ParseError<Pos, Tok, ()>>,
    item: &[Token],
    sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
) {
    let mut last: Option<usize> = None;
    for err in found {
        let at = error_index(&err, item);
        if last.is_some_and(|prev| !is_independent(item, prev, at, sources)) {
            continue;
        }
        last = Some(at);
        diags.push(syntax_error(err, item, sources));
    }
}

/// Whether an error at `item[at]` is independent of the last one reported, at
/// `item[prev]`: the last one's token began a line (as after a missing `;`, where
/// recovery resumes at the next line's statement) or ended a statement (`;`, `{`, `}`),
/// or a statement boundary lies between them and the new error is on a later line (a
/// broken statement's other errors share its line).
fn is_independent(item: &[Token], prev: usize, at: usize, sources: &SourceMap) -> bool {
    let ends_statement = |t: &Token| matches!(t.tok, Tok::Semi | Tok::LBrace | Tok::RBrace);
    if starts_line(item, prev, sources) || item.get(prev).is_some_and(ends_statement) {
        return true;
    }
    let boundary = item[(prev + 1).min(at)..at].iter().any(ends_statement);
    boundary && line_of(item, at, sources) != line_of(item, prev, sources)
}

/// Whether `item[i]` is the first token on its line.
fn starts_line(item: &[Token], i: usize, sources: &SourceMap) -> bool {
    i < item.len() && (i == 0 || line_of(item, i - 1, sources) != line_of(item, i, sources))
}

/// The file and line of `item[i]` (the end of the item past its last token).
fn line_of(item: &[Token], i: usize, sources: &SourceMap) -> Option<(FileId, usize)> {
    let t = item.get(i)?;
    Some((
        t.span.file,
        sources.get(t.span.file).line_index(t.span.start),
    ))
}

/// Index in the item of the token an error points at (`item.len()` at the end).
fn error_index(err: &ParseError<Pos, Tok, ()>, item: &[Token]) -> usize {
    let loc = match err {
        ParseError::UnrecognizedToken { token: (l, ..), .. }
        | ParseError::ExtraToken { token: (l, ..) } => *l,
        ParseError::InvalidToken { location } => *location,
        _ => return item.len(),
    };
    item.iter()
        .position(|t| t.span.file == loc.file && t.span.start == loc.offset)
        .unwrap_or(item.len())
}

fn syntax_error(err: ParseError<Pos, Tok, ()>, item: &[Token], sources: &SourceMap) -> Diagnostic {
    match err {
        ParseError::UnrecognizedToken {
            token: (l, tok, r),
            expected,
        } => {
            let found = Span::new(l.file, l.offset, r.offset);
            unexpected_token(found, &tok, &expected, item, sources)
        }
        ParseError::ExtraToken { token: (l, tok, r) } => {
            let found = Span::new(l.file, l.offset, r.offset);
            Diagnostic::error(
                codes::UNEXPECTED_TOKEN,
                format!("unexpected {}", tok.describe()),
            )
            .with_primary(found, "unexpected here")
        }
        ParseError::UnrecognizedEof { location, expected } => {
            unexpected_eof(location, &expected, item)
        }
        ParseError::InvalidToken { location } => {
            let at = Span::new(location.file, location.offset, location.offset + 1);
            Diagnostic::error(codes::UNEXPECTED_TOKEN, "invalid token").with_primary(at, "")
        }
        ParseError::User { .. } => Diagnostic::error(codes::UNEXPECTED_TOKEN, "syntax error"),
    }
}

fn unexpected_token(
    found: Span,
    tok: &Tok,
    expected: &[String],
    item: &[Token],
    sources: &SourceMap,
) -> Diagnostic {
    let found_text = match tok {
        Tok::Ident(_) | Tok::TypeName(_) | Tok::TemplateName(_) | Tok::Int(..) | Tok::Float(..) => {
            format!("{} `{}`", tok.describe(), sources.snippet(found))
        }
        _ => tok.describe(),
    };
    let prev_index = item
        .iter()
        .position(|t| t.span == found)
        .and_then(|i| i.checked_sub(1));
    let prev = prev_index.map(|i| item[i].span);
    let prev_tok = prev_index.map(|i| &item[i].tok);
    let wants_semi = expected.iter().any(|e| e == "\";\"");
    let prev_ends_statement =
        prev_tok.is_some_and(|t| matches!(t, Tok::Semi | Tok::LBrace | Tok::RBrace));
    let only_semi = expected.len() == 1 && wants_semi;
    if let Some(prev) = prev.filter(|p| {
        only_semi || (wants_semi && !prev_ends_statement && on_later_line(sources, *p, found))
    }) {
        let at = Span::new(prev.file, prev.end, prev.end);
        return Diagnostic::error(
            codes::MISSING_SEMICOLON,
            format!("expected `;`, found {found_text}"),
        )
        .with_primary(at, "expected `;` here")
        .with_secondary(found, "unexpected token")
        .with_help(
            if matches!(prev_tok, Some(Tok::RBrace)) && matches!(tok, Tok::Ident(_)) {
                "a struct or enum definition cannot also declare variables; declare them separately"
            } else {
                "add `;` at the end of the statement or declaration"
            },
        );
    }
    let mut d = Diagnostic::error(
        codes::UNEXPECTED_TOKEN,
        format!(
            "expected {}, found {found_text}",
            describe_expected(expected)
        ),
    )
    .with_primary(found, "unexpected token");
    if let Some(help) = token_help(tok, expected) {
        d = d.with_help(help);
    }
    d
}

fn on_later_line(sources: &SourceMap, a: Span, b: Span) -> bool {
    if a.file != b.file {
        return true;
    }
    let f = sources.get(a.file);
    f.line_index(b.start) > f.line_index(a.end.saturating_sub(1))
}

/// Advice for common slips.
fn token_help(tok: &Tok, expected: &[String]) -> Option<String> {
    let has = |s: &str| expected.iter().any(|e| e == s);
    match tok {
        Tok::Ident(_) if has("\";\"") => Some("a `;` or an operator may be missing before this name".into()),
        Tok::TypeName(_) if has("Ident") => {
            Some("this name is a type (declared with `typedef`, `struct` or `enum`); types and variables share one namespace".into())
        }
        Tok::KwElse => Some("`else` must follow the statement of an `if`; check for a stray `;` or a missing `{`".into()),
        Tok::RParen | Tok::RBracket | Tok::RBrace => Some("this closing delimiter may have no matching opener, or something is missing before it".into()),
        Tok::LParen if has("\"=\"") && has("\";\"") => {
            Some("functions cannot be declared or defined inside another function; move it to file scope".into())
        }
        _ => None,
    }
}

fn unexpected_eof(location: Pos, expected: &[String], item: &[Token]) -> Diagnostic {
    let at = Span::new(location.file, location.offset, location.offset);
    if let Some(open) = unclosed_delimiter(item) {
        let close = match open.tok {
            Tok::LParen => ")",
            Tok::LBracket => "]",
            _ => "}",
        };
        return Diagnostic::error(
            codes::UNCLOSED_DELIMITER,
            format!("unclosed delimiter `{}`", open.tok.spelling()),
        )
        .with_primary(open.span, "this delimiter is never closed")
        .with_secondary(at, format!("expected `{close}` by here"))
        .with_help(format!("add the missing `{close}`"));
    }
    if expected.iter().any(|e| e == "\";\"") {
        return Diagnostic::error(codes::MISSING_SEMICOLON, "expected `;`")
            .with_primary(at, "expected `;` here")
            .with_help("declarations and statements end with `;`");
    }
    Diagnostic::error(
        codes::UNEXPECTED_EOF,
        format!(
            "unexpected end of input; expected {}",
            describe_expected(expected)
        ),
    )
    .with_primary(at, "input ends here")
}

fn unclosed_delimiter(item: &[Token]) -> Option<&Token> {
    let mut stack: Vec<&Token> = Vec::new();
    for t in item {
        match t.tok {
            Tok::LParen | Tok::LBracket | Tok::LBrace => stack.push(t),
            Tok::RParen | Tok::RBracket | Tok::RBrace => {
                stack.pop();
            }
            _ => {}
        }
    }
    stack.first().copied()
}

/// "one of `;`, `,` or an operator": a readable summary of lalrpop's expected set.
pub fn describe_expected(expected: &[String]) -> String {
    let has = |s: &str| expected.iter().any(|e| e == s);
    let expr_start = has("Ident") && has("IntLit");
    let type_start = has("\"int\"") && has("\"float\"");
    let stmt_start = has("\"if\"");
    // Operators that only continue an expression (unary ones could also start one).
    const OPERATORS: &[&str] = &[
        "/", "%", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "|", "^", "&&", "||", "?", "+=",
        "-=", "*=", "/=", "=", ".", "->", "[", "++", "--",
    ];
    const KEY: &[&str] = &[
        ";", ")", "]", "}", ",", ":", "=", "{", "(", "...", "in", "while", "else",
    ];
    if expected.len() <= 5 && !expr_start && !type_start {
        let names: Vec<String> = expected.iter().map(|e| terminal_name(e)).collect();
        return join_alternatives(&names);
    }
    let mut parts: Vec<String> = Vec::new();
    for k in KEY {
        if has(&format!("\"{k}\"")) && !(expr_start && *k == "(") && !(*k == "=" && has("\"+=\"")) {
            parts.push(format!("`{k}`"));
        }
    }
    if stmt_start {
        // Keywords that may start a statement are part of "a statement".
        parts.retain(|p| p == "`;`" || p == "`}`");
        parts.push("a statement".into());
    } else if expr_start {
        parts.push("an expression".into());
    }
    if type_start && !stmt_start {
        parts.push("a type".into());
    }
    if !stmt_start && has("Ident") && !expr_start {
        parts.push("an identifier".into());
    }
    // After a type, `<` opens a short vector's length (`float<3>`), not a comparison:
    // only where `>` may follow too does it mean an expression goes on.
    let operator = |o: &&&str| has(&format!("\"{o}\"")) && (**o != "<" || has("\">\""));
    if OPERATORS.iter().filter(operator).count() > 3 {
        parts.push("an operator".into());
    }
    if parts.is_empty() {
        let names: Vec<String> = expected.iter().take(6).map(|e| terminal_name(e)).collect();
        return join_alternatives(&names);
    }
    join_alternatives(&parts)
}

fn join_alternatives(parts: &[String]) -> String {
    match parts {
        [] => "something else".into(),
        [one] => one.clone(),
        [init @ .., last] => format!("one of {} or {}", init.join(", "), last),
    }
}

fn terminal_name(t: &str) -> String {
    match t {
        "Ident" => "an identifier".into(),
        "TypeName" => "a type name".into(),
        "IntLit" => "an integer literal".into(),
        "FloatLit" => "a floating-point literal".into(),
        "CharLit" => "a character literal".into(),
        "StrLit" => "a string literal".into(),
        quoted => format!("`{}`", quoted.trim_matches('"')),
    }
}

// ------------------------------------------------------------------ grammar actions

impl ParseCtx {
    fn new() -> Self {
        ParseCtx {
            next_expr: Cell::new(0),
            next_decl: Cell::new(0),
            anon_structs: RefCell::new(Vec::new()),
            next_anon: Cell::new(0),
            diags: RefCell::new(Vec::new()),
        }
    }

    /// `struct { ... }` as a type: a definition with a fresh number, hoisted to file scope
    /// (a struct type is the same wherever it is written), and a reference to it.
    pub fn anon_struct(&self, fields: Vec<Vec<Field>>, span: Span) -> SpecPart {
        let k = self.next_anon.get();
        self.next_anon.set(k + 1);
        self.anon_structs.borrow_mut().push(StructDef {
            name: Ident {
                name: crate::front::intern::ANON_STRUCT,
                span: Span::new(span.file, span.start, span.start),
            },
            fields: fields.into_iter().flatten().collect(),
            span,
            anon: Some(k),
        });
        SpecPart::Base(BaseType::AnonStruct(k), span)
    }

    /// An item, preceded by the anonymous structs written inside it (inner ones first).
    pub fn hoist(&self, item: ItemsOut) -> ItemsOut {
        let mut defs = self.anon_structs.take();
        if defs.is_empty() {
            return item;
        }
        let mut items: Vec<Item> = defs.drain(..).map(Item::Struct).collect();
        items.extend(item.0);
        ItemsOut(items)
    }

    /// The unit, with the diagnostics the grammar actions reported.
    fn finish(self, items: Vec<Item>, diags: &mut Vec<Diagnostic>) -> TranslationUnit {
        diags.extend(self.diags.into_inner());
        TranslationUnit {
            items,
            expr_count: self.next_expr.get(),
            decl_count: self.next_decl.get(),
        }
    }

    /// A fresh declaration-site id.
    pub fn decl_id(&self) -> DeclId {
        let id = DeclId(self.next_decl.get());
        self.next_decl.set(id.0 + 1);
        id
    }

    pub fn span(&self, l: Pos, r: Pos) -> Span {
        let end = if r.file == l.file && r.offset >= l.offset {
            r.offset
        } else {
            l.offset
        };
        Span::new(l.file, l.offset, end)
    }

    fn error(&self, d: Diagnostic) {
        self.diags.borrow_mut().push(d);
    }

    pub fn expr(&self, kind: ExprKind, l: Pos, r: Pos) -> Expr {
        let id = ExprId(self.next_expr.get());
        self.next_expr.set(id.0 + 1);
        Expr {
            id,
            kind,
            span: self.span(l, r),
        }
    }

    pub fn binary(&self, op: BinaryOp, lhs: Expr, rhs: Expr, l: Pos, r: Pos) -> Expr {
        self.expr(
            ExprKind::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            },
            l,
            r,
        )
    }

    /// Folds `first op1 e1 op2 e2 ...` into a tree by operator precedence (all binary
    /// operators are left-associative), with explicit stacks so long chains cannot
    /// overflow the stack.
    pub fn binary_chain(&self, first: Expr, rest: Vec<(BinaryOp, Expr)>) -> Expr {
        let mut operands: SmallVec<[Expr; 4]> = SmallVec::new();
        let mut operators: SmallVec<[BinaryOp; 4]> = SmallVec::new();
        operands.push(first);
        for (op, rhs) in rest {
            while operators
                .last()
                .is_some_and(|top| top.precedence() >= op.precedence())
            {
                self.reduce_top(&mut operands, &mut operators);
            }
            operators.push(op);
            operands.push(rhs);
        }
        while !operators.is_empty() {
            self.reduce_top(&mut operands, &mut operators);
        }
        operands.pop().expect("one operand remains")
    }

    fn reduce_top(
        &self,
        operands: &mut SmallVec<[Expr; 4]>,
        operators: &mut SmallVec<[BinaryOp; 4]>,
    ) {
        let (Some(op), Some(rhs), Some(lhs)) = (operators.pop(), operands.pop(), operands.pop())
        else {
            unreachable!("operators always have two operands")
        };
        let span = lhs.span.to(rhs.span);
        let id = ExprId(self.next_expr.get());
        self.next_expr.set(id.0 + 1);
        let kind = ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        };
        operands.push(Expr { id, kind, span });
    }

    pub fn unary(&self, op: UnaryOp, operand: Expr, l: Pos, r: Pos) -> Expr {
        self.expr(
            ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            l,
            r,
        )
    }

    /// Parentheses only group: the inner expression keeps its id, and its span grows to
    /// cover them.
    pub fn paren(&self, mut inner: Expr, l: Pos, r: Pos) -> Expr {
        inner.span = self.span(l, r);
        inner
    }

    /// Adjacent string literals concatenate, as in C.
    pub fn string(&self, parts: Vec<Box<str>>, l: Pos, r: Pos) -> Expr {
        let text: String = parts.iter().map(|s| &**s).collect();
        self.expr(ExprKind::Str(text.into()), l, r)
    }

    pub fn stmt(&self, kind: StmtKind, l: Pos, r: Pos) -> Stmt {
        Stmt {
            kind,
            span: self.span(l, r),
        }
    }

    /// A `new` expression; without a rate it is a `varying new`.
    pub fn new_expr(
        &self,
        uniform: Option<bool>,
        spec: Vec<SpecPart>,
        tail: NewTail,
        l: Pos,
        r: Pos,
    ) -> Expr {
        let span = self.span(l, r);
        let spec_span = spec
            .iter()
            .map(|p| match p {
                SpecPart::Qual(_, s) | SpecPart::Base(_, s) | SpecPart::Soa(_, s) => *s,
            })
            .reduce(|a, b| a.to(b))
            .unwrap_or(span);
        let ty = self.type_name(spec, Vec::new(), Vec::new(), spec_span);
        let (count, init) = match tail {
            NewTail::One => (None, None),
            NewTail::Count(c) => (Some(c), None),
            NewTail::Init(args, s) => {
                let items = args.into_iter().map(Initializer::Expr).collect();
                (None, Some(Initializer::List(items, s)))
            }
        };
        let new = NewExpr {
            uniform: uniform.unwrap_or(false),
            ty,
            count,
            init,
        };
        self.expr(ExprKind::New(Box::new(new)), l, r)
    }

    /// `launch[counts] call;`, its counts put in dimension order (dimension 0 first).
    pub fn launch(&self, dims: LaunchDims, call: Expr, l: Pos, r: Pos) -> Stmt {
        let (counts, counts_span) = match dims {
            LaunchDims::None => (Vec::new(), None),
            LaunchDims::List(v, span) => (v, Some(span)),
            LaunchDims::Nested(mut v, span) => {
                v.reverse();
                (v, Some(span))
            }
        };
        let launch = Launch {
            counts,
            counts_span,
            call,
        };
        self.stmt(StmtKind::Launch(Box::new(launch)), l, r)
    }

    /// Groups a `switch` body into arms: each run of labels starts an arm that takes the
    /// statements up to the next label. Statements before the first label can never run;
    /// they are reported.
    pub fn switch(&self, cond: Expr, items: Vec<SwitchItem>, l: Pos, r: Pos) -> Stmt {
        let mut arms: Vec<SwitchArm> = Vec::new();
        let mut in_labels = false;
        for item in items {
            match item {
                SwitchItem::Label(label) => {
                    let span = match &label {
                        CaseLabel::Case(e) => e.span,
                        CaseLabel::Default(s) => *s,
                    };
                    match arms.last_mut() {
                        Some(arm) if in_labels => {
                            arm.labels.push(label);
                            arm.span = arm.span.to(span);
                        }
                        _ => arms.push(SwitchArm {
                            labels: vec![label],
                            body: Vec::new(),
                            span,
                        }),
                    }
                    in_labels = true;
                }
                SwitchItem::Stmt(stmt) => {
                    in_labels = false;
                    match arms.last_mut() {
                        Some(arm) => {
                            arm.span = arm.span.to(stmt.span);
                            arm.body.push(stmt);
                        }
                        None => self.error(
                            Diagnostic::error(codes::UNEXPECTED_TOKEN, "statement before the first `case` label")
                                .with_primary(stmt.span, "this statement can never run")
                                .with_help("put a `case` or `default` label before it, or move it out of the `switch`"),
                        ),
                    }
                }
            }
        }
        self.stmt(StmtKind::Switch { cond, arms }, l, r)
    }

    pub fn spec(&self, pre: Vec<SpecPart>, base: SpecPart, post: Vec<SpecPart>) -> Vec<SpecPart> {
        let mut v = pre;
        v.push(base);
        v.extend(post);
        v
    }

    /// `T<N>`: a short vector of base type `T`.
    pub fn vector_base(&self, base: SpecPart, len: VecLen, span: Span) -> SpecPart {
        match base {
            SpecPart::Base(elem, _) => SpecPart::Base(
                BaseType::Vector {
                    elem: Box::new(elem),
                    len,
                },
                span,
            ),
            q => q,
        }
    }

    /// `unsigned T`/`signed T`/`unsigned` alone, folded to a primitive.
    pub fn signed_base(&self, signed: bool, prim: Option<Primitive>, span: Span) -> SpecPart {
        use Primitive::*;
        let p = match (signed, prim.unwrap_or(Int32)) {
            (false, Int8 | UInt8) => UInt8,
            (false, Int16 | UInt16) => UInt16,
            (false, Int32 | UInt32) => UInt32,
            (false, Int64 | UInt64) => UInt64,
            (true, Int8 | UInt8) => Int8,
            (true, Int16 | UInt16) => Int16,
            (true, Int32 | UInt32) => Int32,
            (true, Int64 | UInt64) => Int64,
            (_, other) => {
                let word = if signed { "signed" } else { "unsigned" };
                self.error(
                    Diagnostic::error(
                        codes::CONFLICTING_QUALIFIERS,
                        format!("`{word}` cannot apply to `{}`", prim_name(other)),
                    )
                    .with_primary(span, format!("`{word}` applies only to integer types"))
                    .with_help("remove it"),
                );
                other
            }
        };
        SpecPart::Base(BaseType::Primitive(p), span)
    }

    /// Files specifier words into type qualifiers and function qualifiers, reporting
    /// duplicates. `what` names the declaration for messages about misplaced words.
    fn split_spec(&self, parts: Vec<SpecPart>, what: Allowed) -> (TypeSpec, FnQualifiers) {
        let mut quals = Qualifiers::default();
        let mut fnq = FnQualifiers::default();
        let mut base = BaseType::Primitive(Primitive::Int32);
        let mut span: Option<Span> = None;
        let mut soa: Option<(VecLen, Span)> = None;
        for part in parts {
            let (tok, s) = match part {
                SpecPart::Base(b, s) => {
                    base = b;
                    span = Some(span.map_or(s, |sp| sp.to(s)));
                    continue;
                }
                SpecPart::Soa(width, s) => {
                    span = Some(span.map_or(s, |sp| sp.to(s)));
                    match soa {
                        Some((_, first)) => self.duplicate(&Tok::KwSoa, s, first),
                        None => soa = Some((width, s)),
                    }
                    continue;
                }
                SpecPart::Qual(t, s) => (t, s),
            };
            span = Some(span.map_or(s, |sp| sp.to(s)));
            if let Some(q) = type_qual(&tok, what) {
                match quals.get(q) {
                    Some(first) => self.duplicate(&tok, s, first),
                    None => quals.set(q, s),
                }
                continue;
            }
            let slot = match (&tok, what) {
                (Tok::KwStatic, Allowed::Function) => &mut fnq.static_,
                (Tok::KwExtern, Allowed::Function) => &mut fnq.extern_,
                (Tok::KwExport, Allowed::Function) => &mut fnq.export,
                (Tok::KwTask, Allowed::Function) => &mut fnq.task,
                (Tok::KwInline, Allowed::Function) => &mut fnq.inline,
                (Tok::KwNoinline, Allowed::Function) => &mut fnq.noinline,
                (Tok::KwUnmasked, Allowed::Function) => &mut fnq.unmasked,
                _ => {
                    self.misplaced(&tok, s, what);
                    continue;
                }
            };
            match *slot {
                // C lets a function specifier repeat, and ISPC's own tests write
                // `noinline R noinline f()`.
                Some(_) if matches!(tok, Tok::KwInline | Tok::KwNoinline) => {}
                Some(first) => self.duplicate(&tok, s, first),
                None => *slot = Some(s),
            }
        }
        if let Some((width, span)) = soa {
            base = BaseType::Soa {
                elem: Box::new(base),
                width,
                span,
            };
        }
        let spec = TypeSpec {
            quals,
            base,
            span: span.unwrap_or_default(),
        };
        (spec, fnq)
    }

    fn duplicate(&self, tok: &Tok, at: Span, first: Span) {
        self.error(
            Diagnostic::error(
                codes::CONFLICTING_QUALIFIERS,
                format!("duplicate `{}`", tok.spelling()),
            )
            .with_primary(at, "repeated here")
            .with_secondary(first, "first written here")
            .with_help("remove the repetition"),
        );
    }

    fn misplaced(&self, tok: &Tok, s: Span, what: Allowed) {
        let word = tok.spelling();
        let (place, help) = match what {
            Allowed::Var => (
                "a variable",
                "function qualifiers belong on function declarations",
            ),
            Allowed::Function => (
                "a function",
                "`shared` applies to block-shared arrays, not functions",
            ),
            Allowed::Param => (
                "a parameter",
                "parameters take only `uniform`, `varying` and `const`",
            ),
            Allowed::Field => (
                "a struct member",
                "members take only `uniform`, `varying` and `const`",
            ),
            Allowed::Type => (
                "a type name",
                "casts, `sizeof` and `typedef` take only `uniform`, `varying` and `const`",
            ),
        };
        self.error(
            Diagnostic::error(
                codes::CONFLICTING_QUALIFIERS,
                format!("`{word}` cannot be applied to {place}"),
            )
            .with_primary(s, "not allowed here")
            .with_help(help),
        );
    }

    /// `&&` in a declarator: a reference to a reference, which sema rejects.
    pub fn double_reference(&self, span: Span) -> Vec<Derived> {
        let first = Span::new(span.file, span.start, span.start + 1);
        let second = Span::new(span.file, span.start + 1, span.end);
        vec![
            Derived::Reference { span: first },
            Derived::Reference { span: second },
        ]
    }

    pub fn pointer(&self, quals: Vec<SpecPart>, span: Span) -> Derived {
        let (spec, _) = self.split_spec(quals, Allowed::Type);
        Derived::Pointer {
            quals: spec.quals,
            span,
        }
    }

    pub fn type_name(
        &self,
        spec: Vec<SpecPart>,
        ptrs: Vec<Derived>,
        arrays: Vec<Derived>,
        span: Span,
    ) -> TypeName {
        let (spec, _) = self.split_spec(spec, Allowed::Type);
        TypeName {
            spec,
            derived: derived(ptrs, arrays),
            span,
        }
    }

    pub fn param(
        &self,
        spec: Vec<SpecPart>,
        ptrs: Vec<Derived>,
        name: Option<Ident>,
        arrays: Vec<Derived>,
        default: Option<Expr>,
        span: Span,
    ) -> Param {
        let (spec, _) = self.split_spec(spec, Allowed::Param);
        Param {
            ty: Box::new(TypeName {
                spec,
                derived: derived(ptrs, arrays),
                span,
            }),
            name,
            default: default.map(Box::new),
            span,
        }
    }

    pub fn declarator(
        &self,
        ptrs: Vec<Derived>,
        name: Ident,
        arrays: Vec<Derived>,
        init: Option<Initializer>,
        span: Span,
    ) -> Declarator {
        Declarator {
            id: self.decl_id(),
            name,
            derived: derived(ptrs, arrays),
            init: init.map(Box::new),
            span,
        }
    }

    /// The `(*name)(params)` part of a function pointer declarator (`f(void)` style
    /// parameter lists declare none).
    pub fn fn_ptr_part(
        &self,
        quals: Vec<SpecPart>,
        name: Option<Ident>,
        arrays: Vec<Derived>,
        mut params: Vec<Param>,
        span: Span,
    ) -> ParenPart {
        let (spec, _) = self.split_spec(quals, Allowed::Type);
        drop_void_param(&mut params);
        ParenPart {
            outer: vec![Derived::FnPtr {
                params,
                quals: spec.quals,
                span,
            }],
            name,
            arrays,
            span,
        }
    }

    /// The `(*name)[N]` part of a declarator of a pointer to an array (`int (*p)[10]`:
    /// a pointer to arrays of ten `int`, as C and ISPC read it): the arrays after the
    /// parentheses apply to the element type first, then the pointer, then the arrays
    /// inside the parentheses (`int (*ps[2])[10]`: an array of two such pointers).
    pub fn array_ptr_part(
        &self,
        quals: Vec<SpecPart>,
        name: Option<Ident>,
        arrays: Vec<Derived>,
        outer_arrays: Vec<Derived>,
        span: Span,
    ) -> ParenPart {
        let (spec, _) = self.split_spec(quals, Allowed::Type);
        let mut outer: Vec<Derived> = outer_arrays.into_iter().rev().collect();
        outer.push(Derived::Pointer {
            quals: spec.quals,
            span,
        });
        ParenPart {
            outer,
            name,
            arrays,
            span,
        }
    }

    /// A declarator's parts when it declares a function pointer: the pointers before
    /// the parentheses apply to the return type, then the pointer to the function, then
    /// the arrays inside the parentheses (`float (*fs[2])(float)`: an array of two).
    fn paren_derived(ptrs: Vec<Derived>, f: ParenPart) -> Vec<Derived> {
        let mut d = ptrs;
        d.extend(f.outer);
        d.extend(f.arrays.into_iter().rev());
        d
    }

    /// The name of a function pointer declarator the grammar required one of.
    fn paren_name(f: &ParenPart) -> Ident {
        f.name.unwrap_or(Ident {
            name: crate::front::intern::Symbol(0),
            span: f.span,
        })
    }

    pub fn paren_declarator(
        &self,
        ptrs: Vec<Derived>,
        f: ParenPart,
        init: Option<Initializer>,
        span: Span,
    ) -> Declarator {
        let name = Self::paren_name(&f);
        Declarator {
            id: self.decl_id(),
            name,
            derived: Self::paren_derived(ptrs, f),
            init: init.map(Box::new),
            span,
        }
    }

    pub fn paren_param(
        &self,
        spec: Vec<SpecPart>,
        ptrs: Vec<Derived>,
        f: ParenPart,
        span: Span,
    ) -> Param {
        let (spec, _) = self.split_spec(spec, Allowed::Param);
        let name = f.name;
        Param {
            ty: Box::new(TypeName {
                spec,
                derived: Self::paren_derived(ptrs, f),
                span,
            }),
            name,
            default: None,
            span,
        }
    }

    pub fn paren_field(
        &self,
        ptrs: Vec<Derived>,
        f: ParenPart,
        span: Span,
    ) -> (Vec<Derived>, Ident, Vec<Derived>, Span) {
        let name = Self::paren_name(&f);
        (Self::paren_derived(ptrs, f), name, Vec::new(), span)
    }

    pub fn paren_typedef(&self, mut ty: TypeName, f: ParenPart, span: Span) -> ItemsOut {
        let name = Self::paren_name(&f);
        ty.derived = Self::paren_derived(std::mem::take(&mut ty.derived), f);
        ItemsOut::one(Item::Typedef(Typedef { ty, name, span }))
    }

    pub fn local_paren_typedef(&self, mut ty: TypeName, f: ParenPart, l: Pos, r: Pos) -> Stmt {
        let name = Self::paren_name(&f);
        ty.derived = Self::paren_derived(std::mem::take(&mut ty.derived), f);
        let t = Typedef {
            ty,
            name,
            span: self.span(l, r),
        };
        self.stmt(StmtKind::Typedef(Box::new(t)), l, r)
    }

    pub fn decl(&self, spec: Vec<SpecPart>, declarators: Vec<Declarator>, span: Span) -> Decl {
        let (spec, _) = self.split_spec(spec, Allowed::Var);
        Decl {
            spec,
            declarators,
            span,
        }
    }

    pub fn global(&self, decl: Decl) -> ItemsOut {
        ItemsOut::one(Item::Global(decl))
    }

    pub fn fields(
        &self,
        spec: Vec<SpecPart>,
        ds: Vec<(Vec<Derived>, Ident, Vec<Derived>, Span)>,
    ) -> Vec<Field> {
        let (spec, _) = self.split_spec(spec, Allowed::Field);
        ds.into_iter()
            .map(|(ptrs, name, arrays, span)| Field {
                spec: spec.clone(),
                name,
                derived: derived(ptrs, arrays),
                span,
            })
            .collect()
    }

    pub fn function(
        &self,
        spec: Vec<SpecPart>,
        decl: (Vec<Derived>, Ident, Vec<Param>),
        body: Option<Block>,
        span: Span,
    ) -> ItemsOut {
        let (ptrs, name, mut params) = decl;
        let (spec, quals) = self.split_spec(spec, Allowed::Function);
        drop_void_param(&mut params);
        let ret_span = spec.span;
        let ret = TypeName {
            spec,
            derived: ptrs,
            span: ret_span,
        };
        ItemsOut::one(Item::Function(Function {
            quals,
            ret,
            name,
            params,
            body,
            span,
        }))
    }

    /// A template item: the function as [`ParseCtx::function`] builds it, under its
    /// template head.
    pub fn template(
        &self,
        head: TemplateHead,
        spec: Vec<SpecPart>,
        decl: (Vec<Derived>, Ident, Vec<Param>),
        body: Option<Block>,
        span: Span,
    ) -> ItemsOut {
        let mut out = self.function(spec, decl, body, span);
        let Some(Item::Function(func)) = out.0.pop() else {
            unreachable!("`function` builds one function item")
        };
        let kind = match head {
            TemplateHead::Primary(params) => TemplateKind::Primary(params),
            TemplateHead::Specialization(args) => TemplateKind::Specialization(args),
            TemplateHead::Instantiation(args) => TemplateKind::Instantiation(args),
        };
        ItemsOut::one(Item::Template(Template { kind, func, span }))
    }

    /// `int N` in a template's parameter list: qualifiers other than `uniform`/`const`
    /// are reported by sema with the rest of the parameter's rules.
    pub fn template_value_param(
        &self,
        spec: Vec<SpecPart>,
        name: Ident,
        span: Span,
    ) -> TemplateParam {
        let (spec, _) = self.split_spec(spec, Allowed::Param);
        TemplateParam {
            name,
            value_ty: Some(spec),
            span,
        }
    }

    pub fn typedef(&self, ty: TypeName, name: Ident, arrays: Vec<Derived>, span: Span) -> ItemsOut {
        if let BaseType::AnonStruct(k) = ty.spec.base {
            if ty.derived.is_empty() && arrays.is_empty() && self.name_anon_struct(k, name) {
                // `typedef struct { ... } Name;`: the struct is `struct Name`, as if tagged.
                return ItemsOut::none();
            }
        }
        ItemsOut::one(Item::Typedef(typedef_of(ty, name, arrays, span)))
    }

    /// Gives the pending anonymous struct `k` the tag `name`; false if it is gone.
    fn name_anon_struct(&self, k: u32, name: Ident) -> bool {
        let mut defs = self.anon_structs.borrow_mut();
        match defs.iter_mut().find(|d| d.anon == Some(k)) {
            Some(def) => {
                def.name = name;
                def.anon = None;
                true
            }
            None => false,
        }
    }

    pub fn local_typedef(
        &self,
        ty: TypeName,
        name: Ident,
        arrays: Vec<Derived>,
        l: Pos,
        r: Pos,
    ) -> Stmt {
        let t = typedef_of(ty, name, arrays, self.span(l, r));
        self.stmt(StmtKind::Typedef(Box::new(t)), l, r)
    }

    /// `typedef struct Tag { ... } [*...] Name;`: the struct plus, when needed, the alias.
    /// (Without a tag, the struct is anonymous and [`ParseCtx::typedef`] names it.)
    pub fn typedef_struct(
        &self,
        tag: Ident,
        fields: Vec<Field>,
        ptrs: Vec<Derived>,
        name: Ident,
        span: Span,
    ) -> ItemsOut {
        let struct_name = tag;
        let def = Item::Struct(StructDef {
            name: struct_name,
            fields,
            span,
            anon: None,
        });
        if struct_name.name == name.name && ptrs.is_empty() {
            return ItemsOut::one(def);
        }
        let spec = TypeSpec {
            quals: Qualifiers::default(),
            base: BaseType::Struct(struct_name),
            span: struct_name.span,
        };
        let alias = Item::Typedef(Typedef {
            ty: TypeName {
                spec,
                derived: ptrs,
                span,
            },
            name,
            span,
        });
        ItemsOut(vec![def, alias])
    }

    pub fn typedef_enum(&self, mut e: EnumDef, name: Ident, span: Span) -> ItemsOut {
        match e.name {
            None => {
                e.name = Some(name);
                ItemsOut::one(Item::Enum(e))
            }
            Some(tag) if tag.name == name.name => ItemsOut::one(Item::Enum(e)),
            Some(tag) => {
                let spec = TypeSpec {
                    quals: Qualifiers::default(),
                    base: BaseType::Enum(tag),
                    span: tag.span,
                };
                let alias = Item::Typedef(Typedef {
                    ty: TypeName {
                        spec,
                        derived: Vec::new(),
                        span,
                    },
                    name,
                    span,
                });
                ItemsOut(vec![Item::Enum(e), alias])
            }
        }
    }
}

/// The type qualifier a word stands for, where this kind of declaration allows it.
fn type_qual(tok: &Tok, what: Allowed) -> Option<Qual> {
    Some(match (tok, what) {
        (Tok::KwUniform, _) => Qual::Uniform,
        (Tok::KwVarying, _) => Qual::Varying,
        (Tok::KwConst, _) => Qual::Const,
        (Tok::KwShared, Allowed::Var) => Qual::Shared,
        (Tok::KwStatic, Allowed::Var) => Qual::Static,
        (Tok::KwExtern, Allowed::Var) => Qual::Extern,
        // A pointer to a `task` function (`typedef task void (*F)(...)`); sema
        // rejects `task` on a type that is not a function pointer.
        (Tok::KwTask, Allowed::Var | Allowed::Param | Allowed::Field | Allowed::Type) => Qual::Task,
        _ => return None,
    })
}

/// Which specifier words a declaration may carry.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Allowed {
    Var,
    Function,
    Param,
    Field,
    Type,
}

/// `typedef TY NAME[...]`: the array suffixes apply to TY innermost last.
fn typedef_of(mut ty: TypeName, name: Ident, arrays: Vec<Derived>, span: Span) -> Typedef {
    ty.derived.extend(arrays.into_iter().rev());
    Typedef { ty, name, span }
}

/// `f(void)` declares no parameters.
fn drop_void_param(params: &mut Vec<Param>) {
    if let [p] = params.as_slice() {
        if p.name.is_none()
            && p.ty.derived.is_empty()
            && p.ty.spec.base == BaseType::Primitive(Primitive::Void)
        {
            params.clear();
        }
    }
}

/// The parts of a parenthesized declarator from its `(` on, as the grammar reads them
/// (see [`ParseCtx::fn_ptr_part`] and [`ParseCtx::array_ptr_part`]).
pub struct ParenPart {
    /// What the parentheses' pointer points to, applied to the type built so far
    /// before the arrays inside the parentheses: a function pointer, or arrays and then
    /// the pointer.
    outer: Vec<Derived>,
    name: Option<Ident>,
    arrays: Vec<Derived>,
    span: Span,
}

/// Declarator parts in application order: pointers as written, arrays reversed.
fn derived(ptrs: Vec<Derived>, arrays: Vec<Derived>) -> Vec<Derived> {
    let mut d = ptrs;
    d.extend(arrays.into_iter().rev());
    d
}

pub fn prim_name(p: Primitive) -> &'static str {
    use Primitive::*;
    match p {
        Void => "void",
        Bool => "bool",
        Int8 => "int8",
        UInt8 => "uint8",
        Int16 => "int16",
        UInt16 => "uint16",
        Int32 => "int32",
        UInt32 => "uint32",
        Int64 => "int64",
        UInt64 => "uint64",
        Float => "float",
        Double => "double",
        Float16 => "float16",
    }
}

/// Recovery entries as the grammar records them.
pub type Recovered = ErrorRecovery<Pos, Tok, ()>;
