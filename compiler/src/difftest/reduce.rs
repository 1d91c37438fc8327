//! The reducer: shrinks a generated program while it still fails the same way
//! under one configuration. It edits the program's tree ([`crate::gen::model`]), not
//! its text, so every candidate stays free of undefined behaviour (the safety is in
//! the nodes no edit removes), and keeps a candidate only when it still compiles on
//! the reference and still shows the failure.
//!
//! The edits, repeated until none helps: drop a generated function, drop a
//! statement, replace a compound statement by its body, drop an output slot, replace
//! an expression by a literal or by one of its operands, make literals small, and
//! shrink the launch to one block.

use super::config::Config;
use super::run::LaunchLine;
use super::{check_source, FailureKind};
use crate::gen::emit::program_text;
use crate::gen::model::*;

/// What must persist: the configuration and the kind of failure it shows (for a
/// panic or a compile error, also the first line of its message).
#[derive(Clone, Debug)]
pub struct Target {
    pub config: Config,
    pub kind: FailureKind,
    pub message: Option<String>,
}

impl Target {
    /// Whether `p` still fails this way.
    pub fn holds(&self, p: &Program) -> bool {
        let source = program_text(p);
        let checked = check_source(&source, std::slice::from_ref(&self.config));
        checked.failures.iter().any(|f| {
            f.kind == self.kind
                && self
                    .message
                    .as_ref()
                    .is_none_or(|m| f.detail.lines().next() == Some(m.as_str()))
        })
    }

    /// The failure `p` shows under `config`, to reduce; `None` if it passes.
    pub fn of(p: &Program, config: &Config) -> Option<Target> {
        let source = program_text(p);
        let checked = check_source(&source, std::slice::from_ref(config));
        let f = checked.failures.first()?;
        let message = matches!(f.kind, FailureKind::Panic | FailureKind::CompileError)
            .then(|| f.detail.lines().next().unwrap_or_default().to_string());
        Some(Target {
            config: config.clone(),
            kind: f.kind,
            message,
        })
    }
}

/// Shrinks `p` while `target` holds; `log` hears about each accepted edit. Gives the
/// smallest program found and how many candidates were tried.
pub fn reduce(p: &Program, target: &Target, log: &mut dyn FnMut(&str)) -> (Program, u32) {
    reduce_while(p, &|q| target.holds(q), log)
}

/// [`reduce`] with any property of the program in place of a failure.
pub fn reduce_while(
    p: &Program,
    holds: &dyn Fn(&Program) -> bool,
    log: &mut dyn FnMut(&str),
) -> (Program, u32) {
    let mut best = p.clone();
    let mut tries = 0;
    loop {
        let before = program_text(&best).len();
        for pass in PASSES {
            let mut i = 0;
            while let Some(candidate) = (pass.edit)(&best, i) {
                tries += 1;
                if holds(&candidate) {
                    best = candidate;
                    log(&format!(
                        "{}: {} bytes",
                        pass.name,
                        program_text(&best).len()
                    ));
                } else {
                    i += 1;
                }
            }
        }
        if program_text(&best).len() >= before {
            return (best, tries);
        }
    }
}

/// One kind of edit: `edit(p, i)` is the `i`-th candidate, `None` past the last.
struct Pass {
    name: &'static str,
    edit: fn(&Program, usize) -> Option<Program>,
}

const PASSES: &[Pass] = &[
    Pass {
        name: "launch",
        edit: shrink_launch,
    },
    Pass {
        name: "drop function",
        edit: drop_function,
    },
    Pass {
        name: "drop statement",
        edit: drop_statement,
    },
    Pass {
        name: "flatten statement",
        edit: flatten_statement,
    },
    Pass {
        name: "drop output",
        edit: drop_sink,
    },
    Pass {
        name: "simplify expression",
        edit: simplify_expression,
    },
];

fn shrink_launch(p: &Program, i: usize) -> Option<Program> {
    let mut q = p.clone();
    match i {
        0 if q.launch.grid != [1, 1, 1] => q.launch.grid = [1, 1, 1],
        1 if q.shared_prologue => q.shared_prologue = false,
        _ => return None,
    }
    Some(q)
}

fn drop_function(p: &Program, i: usize) -> Option<Program> {
    let mut q = p.clone();
    (i < q.functions.len()).then(|| {
        q.functions.remove(i);
        q
    })
}

fn drop_sink(p: &Program, i: usize) -> Option<Program> {
    let mut q = p.clone();
    (i < q.sinks.len() && q.sinks.len() > 1).then(|| {
        q.sinks.remove(i);
        q
    })
}

/// Offers `edit` each statement of the program in a fixed order (functions first,
/// a list's own statements before the nested ones) until it returns true: it made
/// its edit. Gives whether it did.
fn edit_statements(p: &mut Program, edit: &mut dyn FnMut(&mut Vec<Stmt>, usize) -> bool) -> bool {
    fn walk(list: &mut Vec<Stmt>, edit: &mut dyn FnMut(&mut Vec<Stmt>, usize) -> bool) -> bool {
        for at in 0..list.len() {
            if edit(list, at) {
                return true;
            }
        }
        list.iter_mut()
            .any(|s| s.blocks_mut().into_iter().any(|b| walk(b, edit)))
    }
    p.functions.iter_mut().any(|f| walk(&mut f.body, edit)) || walk(&mut p.body, edit)
}

/// `p` with its `i`-th statement among those `counts` accepts changed by `change`.
fn edit_nth_statement(
    p: &Program,
    i: usize,
    counts: fn(&Stmt) -> bool,
    change: fn(&mut Vec<Stmt>, usize),
) -> Option<Program> {
    let mut q = p.clone();
    let mut left = i;
    let done = edit_statements(&mut q, &mut |list, at| {
        if !counts(&list[at]) {
            return false;
        }
        if left > 0 {
            left -= 1;
            return false;
        }
        change(list, at);
        true
    });
    done.then_some(q)
}

fn drop_statement(p: &Program, i: usize) -> Option<Program> {
    edit_nth_statement(
        p,
        i,
        |_| true,
        |list, at| {
            list.remove(at);
        },
    )
}

/// Whether a statement holds a block that [`flatten_statement`] can put in its place.
fn is_compound(s: &Stmt) -> bool {
    matches!(
        s,
        Stmt::If { .. } | Stmt::Block(_) | Stmt::For { .. } | Stmt::While { .. }
    ) || matches!(s, Stmt::Switch { arms, .. } if !arms.is_empty())
}

/// Replaces a compound statement by its first block's statements (an `if` by its
/// `then` part, a loop by one pass of its body, whose counter it may still name: a
/// candidate that no longer compiles is rejected like any other).
fn flatten_statement(p: &Program, i: usize) -> Option<Program> {
    edit_nth_statement(p, i, is_compound, |list, at| {
        let body = match &mut list[at] {
            Stmt::If { then, .. } => std::mem::take(then),
            Stmt::Block(b) | Stmt::For { body: b, .. } | Stmt::While { body: b, .. } => {
                std::mem::take(b)
            }
            Stmt::Switch { arms, .. } => std::mem::take(&mut arms[0].body),
            _ => return,
        };
        list.splice(at..=at, body);
    })
}

/// The replacements tried for an expression: zero, one, then each operand of its
/// type.
fn replacements(e: &Expr) -> Vec<Expr> {
    let mut out = Vec::new();
    if !matches!(e.kind, ExprKind::Lit(_)) {
        out.push(Expr::zero(e.ty.scalar));
    }
    if let ExprKind::Lit(Literal::Int(v)) = e.kind {
        if v != 0 && v != 1 {
            out.push(Expr::lit(Literal::Int(1), Ty::uniform(e.ty.scalar)));
        }
    }
    for c in e.children() {
        if c.ty.fits(e.ty) {
            out.push(c.clone());
        }
    }
    out
}

/// Replaces the `i`-th (expression, replacement) candidate of `e`'s tree, counting
/// down `i`; gives whether it did.
fn replace_in(e: &mut Expr, i: &mut usize) -> bool {
    let options = replacements(e);
    if *i < options.len() {
        *e = options[*i].clone();
        return true;
    }
    *i -= options.len();
    e.children_mut().into_iter().any(|c| replace_in(c, i))
}

/// The `i`-th candidate over (expression, replacement) pairs: statements' expressions
/// first, then the output slots'.
fn simplify_expression(p: &Program, i: usize) -> Option<Program> {
    let mut q = p.clone();
    let mut left = i;
    let in_statements = edit_statements(&mut q, &mut |list, at| {
        list[at]
            .exprs_mut()
            .into_iter()
            .any(|e| replace_in(e, &mut left))
    });
    let done = in_statements || q.sinks.iter_mut().any(|e| replace_in(e, &mut left));
    done.then_some(q)
}

/// A failing file's reduction: its program regenerated from the seed and size in its
/// header, the failure under `config` checked, then reduced.
pub fn reduce_source(
    source: &str,
    config: &Config,
    log: &mut dyn FnMut(&str),
) -> Result<(Program, Target, u32), String> {
    let (seed, size) = header_seed(source).ok_or(
        "the file has no `// Generated by `spmdc gen --seed N --size S`` header: the reducer \
         edits generated programs",
    )?;
    let program = crate::gen::generate(seed, size);
    if program_text(&program) != source {
        log("note: the file differs from what its seed generates; reducing the generated program");
    }
    LaunchLine::from_source(source)?;
    let target = Target::of(&program, config)
        .ok_or_else(|| format!("the program does not fail under `{}`", config.spelled()))?;
    let (reduced, tries) = reduce(&program, &target, log);
    Ok((reduced, target, tries))
}

/// The seed and size of a generated program's header.
pub fn header_seed(source: &str) -> Option<(u64, u32)> {
    let line = source.lines().next()?;
    let rest = line.split("--seed ").nth(1)?;
    let mut words = rest.split_whitespace();
    let seed = words.next()?.parse().ok()?;
    let size = match words.next() {
        Some("--size") => words.next()?.trim_end_matches(['`', '.']).parse().ok()?,
        _ => crate::gen::DEFAULT_SIZE,
    };
    Some((seed, size))
}

/// The text of a reduced regression case: the program with a line naming the
/// configuration it failed under and how.
pub fn regression_text(p: &Program, target: &Target) -> String {
    let text = program_text(p);
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let rest: Vec<&str> = lines.collect();
    format!(
        "{first}\n// difftest: {} ({} before the fix)\n{}\n",
        target.config.spelled(),
        target.kind.name(),
        rest.join("\n")
    )
}

/// The configurations a regression case names on its `// difftest:` lines.
pub fn regression_configs(source: &str) -> Result<Vec<Config>, String> {
    source
        .lines()
        .take_while(|l| l.starts_with("//"))
        .filter_map(|l| l.strip_prefix("// difftest:"))
        .map(|l| Config::parse(l.split(" (").next().unwrap_or_default()))
        .collect()
}
