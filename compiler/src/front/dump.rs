//! A readable dump of the AST, for `--emit ast` and the parser's snapshot tests.
//!
//! Items and statements go one per line, indented; expressions print on one line in
//! prefix form with parentheses, so the tree's shape (and thus precedence) is explicit:
//! `a + b * c` dumps as `(+ a (* b c))`. Spans print as `@line:col` on items and
//! statements.

use std::fmt::Write;

use super::ast::*;
use super::intern::Interner;
use super::parse::prim_name;
use crate::source::{FileId, SourceMap, Span};

pub struct Dumper<'a> {
    interner: &'a Interner,
    sources: &'a SourceMap,
    out: String,
    indent: usize,
}

/// Dumps the items whose span lies in one of `files` (normally the user's files, not the stdlib).
pub fn dump_unit(
    unit: &TranslationUnit,
    interner: &Interner,
    sources: &SourceMap,
    skip_file: Option<FileId>,
) -> String {
    let mut d = Dumper {
        interner,
        sources,
        out: String::new(),
        indent: 0,
    };
    for item in &unit.items {
        if Some(item_span(item).file) == skip_file {
            continue;
        }
        d.item(item);
    }
    d.out
}

fn item_span(item: &Item) -> Span {
    match item {
        Item::Function(f) => f.span,
        Item::Global(d) => d.span,
        Item::Struct(s) => s.span,
        Item::StructDecl(n) => n.span,
        Item::Enum(e) => e.span,
        Item::Typedef(t) => t.span,
        Item::Template(t) => t.span,
    }
}

impl Dumper<'_> {
    fn name(&self, id: &Ident) -> &str {
        self.interner.resolve(id.name)
    }

    fn line(&mut self, text: &str, span: Span) {
        let (l, c) = self.sources.get(span.file).line_col(span.start);
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        let _ = writeln!(self.out, "{text} @{l}:{c}");
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self)) {
        self.indent += 1;
        f(self);
        self.indent -= 1;
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Function(f) => self.function(f),
            Item::Global(d) => self.decl("global", d),
            Item::StructDecl(n) => self.line(&format!("struct {};", self.name(n)), n.span),
            Item::Struct(s) => {
                self.line(&format!("struct {}", self.name(&s.name)), s.span);
                self.nested(|d| {
                    for f in &s.fields {
                        let ty = d.type_str(&f.spec, &f.derived);
                        d.line(&format!("field {}: {ty}", d.name(&f.name)), f.span);
                    }
                });
            }
            Item::Enum(e) => {
                let name = e
                    .name
                    .as_ref()
                    .map_or("<anonymous>".to_string(), |n| self.name(n).to_string());
                self.line(&format!("enum {name}"), e.span);
                self.nested(|d| {
                    for v in &e.variants {
                        let value = v
                            .value
                            .as_ref()
                            .map(|x| format!(" = {}", d.expr(x)))
                            .unwrap_or_default();
                        d.line(&format!("{}{value}", d.name(&v.name)), v.span);
                    }
                });
            }
            Item::Typedef(t) => self.typedef(t),
            Item::Template(t) => {
                let head = match &t.kind {
                    TemplateKind::Primary(params) => {
                        let ps: Vec<String> = params
                            .iter()
                            .map(|p| match &p.value_ty {
                                None => format!("typename {}", self.name(&p.name)),
                                Some(ty) => {
                                    format!("{} {}", self.type_str(ty, &[]), self.name(&p.name))
                                }
                            })
                            .collect();
                        format!("template <{}>", ps.join(", "))
                    }
                    TemplateKind::Specialization(args) => {
                        let args = args
                            .as_ref()
                            .map(|a| self.template_args(a))
                            .unwrap_or_default();
                        format!("specialization {args}")
                    }
                    TemplateKind::Instantiation(args) => {
                        format!("instantiation {}", self.template_args(args))
                    }
                };
                self.line(&head, t.span);
                self.nested(|d| d.function(&t.func));
            }
        }
    }

    fn template_args(&self, args: &TemplateArgs) -> String {
        let v: Vec<String> = args
            .args
            .iter()
            .map(|a| match a {
                TemplateArg::Type(t) => self.type_name(t),
                TemplateArg::Value(e) => self.expr(e),
            })
            .collect();
        format!("<{}>", v.join(", "))
    }

    fn function(&mut self, f: &Function) {
        let q = &f.quals;
        let quals: String = [
            (q.export, "export "),
            (q.task, "task "),
            (q.static_, "static "),
            (q.extern_, "extern "),
            (q.inline, "inline "),
            (q.noinline, "noinline "),
            (q.unmasked, "unmasked "),
        ]
        .iter()
        .filter(|(s, _)| s.is_some())
        .map(|(_, w)| *w)
        .collect();
        let kind = if f.body.is_some() {
            "function"
        } else {
            "prototype"
        };
        let ret = self.type_name(&f.ret);
        self.line(
            &format!("{kind} {quals}{}() -> {ret}", self.name(&f.name)),
            f.span,
        );
        self.nested(|d| {
            for p in &f.params {
                let name = p
                    .name
                    .as_ref()
                    .map_or("_".to_string(), |n| d.name(n).to_string());
                let ty = d.type_name(&p.ty);
                d.line(&format!("param {name}: {ty}"), p.span);
            }
            if let Some(body) = &f.body {
                d.block(body);
            }
        });
    }

    fn decl(&mut self, what: &str, decl: &Decl) {
        for dcl in &decl.declarators {
            let ty = self.type_str(&decl.spec, &dcl.derived);
            let init = dcl
                .init
                .as_ref()
                .map(|i| format!(" = {}", self.init(i)))
                .unwrap_or_default();
            self.line(
                &format!("{what} {}: {ty}{init}", self.name(&dcl.name)),
                dcl.span,
            );
        }
    }

    fn init(&self, init: &Initializer) -> String {
        match init {
            Initializer::Expr(e) => self.expr(e),
            Initializer::List(items, _) => {
                let parts: Vec<String> = items.iter().map(|i| self.init(i)).collect();
                format!("{{{}}}", parts.join(", "))
            }
        }
    }

    fn typedef(&mut self, t: &Typedef) {
        let ty = self.type_name(&t.ty);
        self.line(&format!("typedef {} = {ty}", self.name(&t.name)), t.span);
    }

    fn block(&mut self, b: &Block) {
        self.line("block", b.span);
        self.nested(|d| {
            for s in &b.stmts {
                d.stmt(s);
            }
        });
    }

    fn stmt(&mut self, s: &Stmt) {
        let c = |coherent: bool, plain: &'static str, hinted: &'static str| {
            if coherent {
                hinted
            } else {
                plain
            }
        };
        match &s.kind {
            StmtKind::Block(b) => self.block(b),
            StmtKind::Decl(d) => self.decl("let", d),
            StmtKind::Expr(e) => self.line(&format!("expr {}", self.expr(e)), s.span),
            StmtKind::Empty => self.line("empty", s.span),
            StmtKind::Typedef(t) => self.typedef(t),
            StmtKind::If {
                cond,
                then,
                else_,
                coherent,
            } => {
                self.line(
                    &format!("{} {}", c(*coherent, "if", "cif"), self.expr(cond)),
                    s.span,
                );
                self.nested(|d| {
                    d.stmt(then);
                    if let Some(e) = else_ {
                        d.line("else", e.span);
                        d.nested(|d| d.stmt(e));
                    }
                });
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
                coherent,
            } => {
                let opt =
                    |e: &Option<Box<Expr>>| e.as_ref().map_or("_".to_string(), |e| self.expr(e));
                let header = format!(
                    "{} cond={} step={}",
                    c(*coherent, "for", "cfor"),
                    opt(cond),
                    opt(step)
                );
                self.line(&header, s.span);
                self.nested(|d| {
                    match init.as_deref() {
                        Some(ForInit::Decl(decl)) => d.decl("init", decl),
                        Some(ForInit::Expr(e)) => d.line(&format!("init {}", d.expr(e)), e.span),
                        None => {}
                    }
                    d.stmt(body);
                });
            }
            StmtKind::While {
                cond,
                body,
                coherent,
            } => {
                self.line(
                    &format!("{} {}", c(*coherent, "while", "cwhile"), self.expr(cond)),
                    s.span,
                );
                self.nested(|d| d.stmt(body));
            }
            StmtKind::DoWhile {
                body,
                cond,
                coherent,
            } => {
                self.line(
                    &format!("{} while={}", c(*coherent, "do", "cdo"), self.expr(cond)),
                    s.span,
                );
                self.nested(|d| d.stmt(body));
            }
            StmtKind::Launch(l) => {
                let counts: Vec<String> = l.counts.iter().map(|c| self.expr(c)).collect();
                let line = format!("launch [{}] {}", counts.join(", "), self.expr(&l.call));
                self.line(&line, s.span);
            }
            StmtKind::Sync => self.line("sync", s.span),
            StmtKind::Delete { ptr, array } => {
                let kw = if *array { "delete[]" } else { "delete" };
                self.line(&format!("{kw} {}", self.expr(ptr)), s.span);
            }
            StmtKind::Break => self.line("break", s.span),
            StmtKind::Continue => self.line("continue", s.span),
            StmtKind::Goto(label) => self.line(&format!("goto {}", self.name(label)), s.span),
            StmtKind::Labeled { label, body } => {
                self.line(&format!("label {}", self.name(label)), s.span);
                self.nested(|d| d.stmt(body));
            }
            StmtKind::Return(e) => {
                let v = e
                    .as_ref()
                    .map(|e| format!(" {}", self.expr(e)))
                    .unwrap_or_default();
                self.line(&format!("return{v}"), s.span);
            }
            StmtKind::Switch { cond, arms } => {
                self.line(&format!("switch {}", self.expr(cond)), s.span);
                self.nested(|d| {
                    for arm in arms {
                        let labels: Vec<String> = arm
                            .labels
                            .iter()
                            .map(|l| match l {
                                CaseLabel::Case(e) => format!("case {}", d.expr(e)),
                                CaseLabel::Default(_) => "default".to_string(),
                            })
                            .collect();
                        d.line(&format!("arm {}", labels.join(", ")), arm.span);
                        d.nested(|d| arm.body.iter().for_each(|s| d.stmt(s)));
                    }
                });
            }
            StmtKind::Foreach { dims, tiled, body } => {
                let dims: Vec<String> = dims
                    .iter()
                    .map(|dim| {
                        format!(
                            "{} = {} ... {}",
                            self.name(&dim.var),
                            self.expr(&dim.start),
                            self.expr(&dim.end)
                        )
                    })
                    .collect();
                let kw = if *tiled { "foreach_tiled" } else { "foreach" };
                self.line(&format!("{kw} {}", dims.join(", ")), s.span);
                self.nested(|d| d.stmt(body));
            }
            StmtKind::ForeachActive { var, body, .. } => {
                self.line(&format!("foreach_active {}", self.name(var)), s.span);
                self.nested(|d| d.stmt(body));
            }
            StmtKind::ForeachUnique {
                var, expr, body, ..
            } => {
                self.line(
                    &format!("foreach_unique {} in {}", self.name(var), self.expr(expr)),
                    s.span,
                );
                self.nested(|d| d.stmt(body));
            }
            StmtKind::Unmasked(b) => {
                self.line("unmasked", s.span);
                self.nested(|d| d.block(b));
            }
            StmtKind::Error => self.line("<error>", s.span),
        }
    }

    /// One expression in prefix form.
    pub fn expr(&self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::Int { value, suffix } => {
                let u = if suffix.unsigned { "u" } else { "" };
                let l = if suffix.long { "ll" } else { "" };
                format!("{value}{u}{l}")
            }
            ExprKind::Float { value, suffix } => {
                let s = match suffix {
                    FloatSuffix::None => "",
                    FloatSuffix::F => "f",
                    FloatSuffix::D => "d",
                    FloatSuffix::F16 => "f16",
                };
                format!("{value:?}{s}")
            }
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Char(c) => format!("'{}'", (*c as char).escape_default()),
            ExprKind::Str(s) => format!("{s:?}"),
            ExprKind::Null => "NULL".into(),
            ExprKind::Ident(id) => self.name(id).to_string(),
            ExprKind::Unary { op, operand } => {
                let o = self.expr(operand);
                match op {
                    UnaryOp::PostInc | UnaryOp::PostDec => format!("(post{} {o})", op.symbol()),
                    UnaryOp::PreInc | UnaryOp::PreDec => format!("(pre{} {o})", op.symbol()),
                    _ => format!("({} {o})", op.symbol()),
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                format!("({} {} {})", op.symbol(), self.expr(lhs), self.expr(rhs))
            }
            ExprKind::Assign { op, lhs, rhs } => {
                let sym = op.map_or("=".to_string(), |o| format!("{}=", o.symbol()));
                format!("({sym} {} {})", self.expr(lhs), self.expr(rhs))
            }
            ExprKind::Ternary { cond, then, else_ } => {
                format!(
                    "(? {} {} {})",
                    self.expr(cond),
                    self.expr(then),
                    self.expr(else_)
                )
            }
            ExprKind::Cast { ty, expr } => {
                format!("(cast <{}> {})", self.type_name(ty), self.expr(expr))
            }
            ExprKind::SizeofType(ty) => format!("(sizeof <{}>)", self.type_name(ty)),
            ExprKind::SizeofExpr(e) => format!("(sizeof {})", self.expr(e)),
            ExprKind::Call {
                callee,
                args,
                targs,
            } => {
                let targs = targs
                    .as_ref()
                    .map(|t| self.template_args(t))
                    .unwrap_or_default();
                let mut s = format!("(call {}{targs}", self.name(callee));
                for a in args {
                    s.push(' ');
                    s.push_str(&self.expr(a));
                }
                s.push(')');
                s
            }
            ExprKind::CallPtr { callee, args } => {
                let mut s = format!("(call-ptr {}", self.expr(callee));
                for a in args {
                    s.push(' ');
                    s.push_str(&self.expr(a));
                }
                s.push(')');
                s
            }
            ExprKind::Index { base, index } => {
                format!("(index {} {})", self.expr(base), self.expr(index))
            }
            ExprKind::Member { base, field, arrow } => {
                let op = if *arrow { "->" } else { "." };
                format!("({op} {} {})", self.expr(base), self.name(field))
            }
            ExprKind::New(n) => {
                let rate = if n.uniform { "uniform" } else { "varying" };
                let mut s = format!("(new {rate} <{}>", self.type_name(&n.ty));
                if let Some(c) = &n.count {
                    s.push_str(&format!(" [{}]", self.expr(c)));
                }
                if let Some(i) = &n.init {
                    s.push(' ');
                    s.push_str(&self.init(i));
                }
                s.push(')');
                s
            }
            ExprKind::Error => "<error>".into(),
        }
    }

    pub fn type_name(&self, t: &TypeName) -> String {
        self.type_str(&t.spec, &t.derived)
    }

    fn base_str(&self, base: &BaseType) -> String {
        match base {
            BaseType::Primitive(p) => prim_name(*p).to_string(),
            BaseType::Named(n) => self.name(n).to_string(),
            BaseType::Struct(n) => format!("struct {}", self.name(n)),
            BaseType::Enum(n) => format!("enum {}", self.name(n)),
            BaseType::AnonStruct(k) => format!("struct (anonymous #{k})"),
            BaseType::Vector { elem, len } => {
                let n = match len {
                    VecLen::Lit(v, _) => v.to_string(),
                    VecLen::Name(id) => self.name(id).to_string(),
                };
                format!("{}<{n}>", self.base_str(elem))
            }
            BaseType::Soa { elem, width, .. } => {
                let n = match width {
                    VecLen::Lit(v, _) => v.to_string(),
                    VecLen::Name(id) => self.name(id).to_string(),
                };
                format!("soa<{n}> {}", self.base_str(elem))
            }
        }
    }

    /// C-like spelling of a type as written: `uniform float * uniform [4]`.
    fn type_str(&self, spec: &TypeSpec, derived: &[Derived]) -> String {
        let mut s = quals_str(&spec.quals);
        s.push_str(&self.base_str(&spec.base));
        for d in derived {
            match d {
                Derived::Pointer { quals, .. } => {
                    s.push_str(" *");
                    let q = quals_str(quals);
                    if !q.is_empty() {
                        s.push(' ');
                        s.push_str(q.trim_end());
                    }
                }
                Derived::Array { size, .. } => match size {
                    Some(e) => {
                        let _ = write!(s, " [{}]", self.expr(e));
                    }
                    None => s.push_str(" []"),
                },
                Derived::Reference { .. } => s.push_str(" &"),
                Derived::FnPtr { params, quals, .. } => {
                    s.push_str(" (*");
                    let q = quals_str(quals);
                    if !q.is_empty() {
                        s.push(' ');
                        s.push_str(q.trim_end());
                    }
                    s.push_str(")(");
                    let ps: Vec<String> = params.iter().map(|p| self.type_name(&p.ty)).collect();
                    s.push_str(&ps.join(", "));
                    s.push(')');
                }
            }
        }
        s
    }
}

fn quals_str(q: &Qualifiers) -> String {
    Qual::ALL
        .iter()
        .filter(|&&k| q.has(k))
        .map(|k| format!("{} ", k.keyword()))
        .collect()
}
