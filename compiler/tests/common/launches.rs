//! Launches as `spmdc run` takes them, for the differential tests of the back ends:
//! the commands in a file's header comment, the ISPC-style harness's launches (test
//! entry and `result` on `RET = zeros(64)`, `aFOO = range(64,1)`, `b = 5`), and the
//! rendering of a run's error. Shared so that every target is tested on the same
//! launches.

use spmdc::driver::{self, FrontResult, RunError, RunRequest};
use spmdc::interp::Limits;
use spmdc::launch::RunResult;
use std::path::Path;

/// One launch: entry, arguments and shape.
#[derive(Clone, Debug)]
pub struct LaunchSpec {
    pub entry: String,
    pub args: Vec<String>,
    pub grid: Option<String>,
    pub block: Option<String>,
    /// `--dynamic-shared BYTES`.
    pub dynamic_shared: Option<String>,
}

impl LaunchSpec {
    /// The request for `spmdc run`'s defaults, stopped after `max_steps` steps.
    pub fn request(&self, max_steps: u64) -> RunRequest<'_> {
        RunRequest {
            optimize: driver::OPTIMIZE_BY_DEFAULT,
            entry: &self.entry,
            args: &self.args,
            grid: self.grid.as_deref(),
            block: self.block.as_deref(),
            dynamic_shared: self.dynamic_shared.as_deref(),
            limits: Limits {
                max_steps,
                ..Limits::default()
            },
        }
    }
}

/// Why a run failed, one line.
pub fn run_error(e: RunError, front: &FrontResult) -> String {
    match e {
        RunError::Compile(d) => format!(
            "compile: {}",
            d.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        RunError::Launch(e) => format!(
            "launch: {}",
            e.iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        RunError::Trap(t) => format!("trap: {}", t.render(&front.sources)),
    }
}

/// A launch's label in failure lists: `FILE#entry`.
pub fn label(file: &str, spec: &LaunchSpec) -> String {
    format!("{file}#{}", spec.entry)
}

// ---- header comments

/// Splits a shell command line (single and double quotes, no escapes inside quotes).
pub fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// The `spmdc run` commands in a file's header comment, as launches.
pub fn header_launches(text: &str) -> Vec<LaunchSpec> {
    let mut commands = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        let Some(body) = line.trim_start().strip_prefix("//") else {
            continue;
        };
        let body = body.trim();
        if let Some(c) = cur.as_mut() {
            c.push(' ');
            c.push_str(body.trim_end_matches('\\'));
            if !body.ends_with('\\') {
                commands.push(cur.take().unwrap_or_default());
            }
        } else if body.starts_with("spmdc run") {
            if body.ends_with('\\') {
                cur = Some(body.trim_end_matches('\\').to_string());
            } else {
                commands.push(body.to_string());
            }
        }
    }
    commands.iter().map(|c| parse_command(c)).collect()
}

/// One `spmdc run` command line as a launch (an `@file` input becomes random data).
pub fn parse_command(cmd: &str) -> LaunchSpec {
    let words = shell_words(cmd);
    let mut spec = LaunchSpec {
        entry: String::new(),
        args: Vec::new(),
        grid: None,
        block: None,
        dynamic_shared: None,
    };
    let mut it = words.iter();
    while let Some(w) = it.next() {
        let mut value = || it.next().cloned().unwrap_or_default();
        match w.as_str() {
            "--entry" => spec.entry = value(),
            "--grid" => spec.grid = Some(value()),
            "--block" => spec.block = Some(value()),
            "--dynamic-shared" => spec.dynamic_shared = Some(value()),
            "--arg" => spec.args.push(value()),
            _ => {}
        }
    }
    // An `@file` input (the game of life board): random cells of the same length.
    for a in &mut spec.args {
        if let Some((name, v)) = a.split_once('=') {
            if v.starts_with('@') {
                *a = format!("{name}=random(4096,7,0,2)");
            }
        }
    }
    spec
}

/// The test entry and `result` of an ISPC-style program, each on a zeroed 64-element
/// `RET`, `aFOO[i] = i + 1` and `b = 5` (by position).
pub fn ispc_launches(front: &FrontResult) -> Result<Vec<LaunchSpec>, String> {
    let checked = front.checked.as_ref().ok_or("not checked")?;
    if front.diags.has_errors() {
        return Err("does not compile".into());
    }
    let mut out = Vec::new();
    let entry = super::ispc::ENTRIES
        .into_iter()
        .find(|n| spmdc::launch::find_entry(checked, &front.interner, n).is_ok())
        .ok_or("no test entry")?;
    for name in [entry, "result"] {
        let func =
            spmdc::launch::find_entry(checked, &front.interner, name).map_err(|e| e.message)?;
        let sig =
            spmdc::launch::signature_of(checked, func, &front.interner).map_err(|e| e.message)?;
        let values = ["zeros(64)", "range(64,1)", "5"];
        let args = sig
            .params
            .iter()
            .zip(values)
            .map(|(p, v)| format!("{}={v}", p.name))
            .collect();
        out.push(LaunchSpec {
            entry: name.to_string(),
            args,
            grid: None,
            block: None,
            dynamic_shared: None,
        });
    }
    Ok(out)
}

/// The first difference between two results' buffers and return values.
pub fn compare(target: &str, want: &RunResult, got: &RunResult) -> Result<(), String> {
    for ((name, w), (_, g)) in want.buffers.iter().zip(&got.buffers) {
        if w.bytes() != g.bytes() {
            let size = w.elem().size();
            let i = w
                .bytes()
                .chunks(size)
                .zip(g.bytes().chunks(size))
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return Err(format!(
                "buffer `{name}`[{i}]: interp {:?}, {target} {:?}",
                w.get(i),
                g.get(i)
            ));
        }
    }
    let bits = |r: &RunResult| r.ret.map(|v| v.to_bits());
    if bits(want) != bits(got) {
        return Err(format!(
            "return: interp {:?}, {target} {:?}",
            want.ret, got.ret
        ));
    }
    Ok(())
}

/// Checks the failures (label, message) against [`known`] for the labels in
/// `scope`: exactly the listed ones fail, each with its message.
pub fn check_known(
    target: &str,
    known: &[(&str, &str, &str)],
    mut failures: Vec<(String, String)>,
    scope: impl Fn(&str) -> bool,
) {
    failures.sort();
    let report: Vec<String> = failures.iter().map(|(l, m)| format!("{l}: {m}")).collect();
    let got: Vec<&str> = failures.iter().map(|(l, _)| l.as_str()).collect();
    let mut want: Vec<&str> = known.iter().map(|k| k.0).filter(|l| scope(l)).collect();
    want.sort();
    assert_eq!(
        got,
        want,
        "{target} differential results changed; failures now:\n{}",
        report.join("\n")
    );
    for (label, message) in &failures {
        let known = known.iter().find(|k| k.0 == label).map(|k| k.1);
        assert!(
            known.is_some_and(|m| message.contains(m)),
            "{label} fails differently now: {message}"
        );
    }
}

/// Extra launches beyond the headers: other shapes and partial gangs/blocks.
pub fn extra_launches() -> Vec<(&'static str, LaunchSpec)> {
    let spec = |entry: &str, args: &[&str], grid: Option<&str>, block: Option<&str>| LaunchSpec {
        entry: entry.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        grid: grid.map(Into::into),
        block: block.map(Into::into),
        dynamic_shared: None,
    };
    vec![
        (
            "examples/saxpy.spmd",
            spec(
                "saxpy",
                &["n=37", "a=-1.5", "x=random(40,3)", "y=random(40,4)"],
                None,
                None,
            ),
        ),
        (
            "examples/block_reduce.spmd",
            spec(
                "block_reduce",
                &["n=700", "x=random(700,5)", "partial=zeros(3)"],
                Some("3"),
                Some("256"),
            ),
        ),
        (
            "examples/stencil1d.spmd",
            spec(
                "stencil1d",
                &["n=600", "src=random(600,9)", "dst=zeros(600)"],
                Some("3"),
                Some("256"),
            ),
        ),
        (
            "examples/histogram.spmd",
            spec(
                "histogram",
                &[
                    "n=333",
                    "x=random(333,2,0,100)",
                    "lo=0",
                    "hi=100",
                    "bins=zeros(64)",
                ],
                Some("3"),
                Some("50"),
            ),
        ),
    ]
}

pub fn example_launches() -> Vec<(String, LaunchSpec)> {
    let mut out = Vec::new();
    for path in super::spmd_files("examples") {
        let name = super::display_name(&path);
        let text = std::fs::read_to_string(&path).expect("readable");
        for spec in header_launches(&text) {
            out.push((name.clone(), spec));
        }
    }
    for (file, spec) in extra_launches() {
        out.push((file.to_string(), spec));
    }
    // Grouped by file (stable), so each file compiles once.
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A back end under differential test: how a program is checked and compiled for it,
/// and how one launch runs on it and on the interpreter.
pub trait BackEnd {
    type Compiled;
    /// The target's name in messages.
    const NAME: &'static str;
    /// Launches that fail because of a known compiler bug: (label, message part, why).
    const KNOWN: &'static [(&'static str, &'static str, &'static str)];
    fn front_of(path: &Path) -> FrontResult;
    fn compile(front: &FrontResult) -> Result<Self::Compiled, String>;
    /// Runs `spec` on the interpreter and on the target; `Err` says how they differ.
    fn differential(
        front: &FrontResult,
        compiled: &Result<Self::Compiled, String>,
        spec: &LaunchSpec,
    ) -> Result<RunResult, String>;
}

/// Every example launch on `B` and on the interpreter, against `B`'s known failures.
pub fn examples_match<B: BackEnd>() {
    let root = super::repo_root();
    let mut failures = Vec::new();
    let mut ran = 0;
    let mut seen = std::collections::BTreeSet::new();
    let mut current: Option<(String, FrontResult, Result<B::Compiled, String>)> = None;
    for (file, spec) in example_launches() {
        if current.as_ref().map(|c| &c.0) != Some(&file) {
            let front = B::front_of(&root.join(&file));
            let compiled = B::compile(&front);
            current = Some((file.clone(), front, compiled));
        }
        let Some((_, front, compiled)) = current.as_ref() else {
            continue;
        };
        let l = label(&file, &spec);
        ran += 1;
        if let Err(e) = B::differential(front, compiled, &spec) {
            if seen.insert(l.clone()) {
                failures.push((l, e));
            }
        }
    }
    assert!(ran >= 20, "only {ran} example launches found");
    check_known(B::NAME, B::KNOWN, failures, |l| l.starts_with("examples/"));
}

/// The failures among the programs of `dir` (those whose index modulo `parts.1` is
/// `parts.0`, so a large directory can be split over tests that run in parallel).
pub fn ispc_failures<B: BackEnd>(dir: &str, parts: (usize, usize)) -> Vec<(String, String)> {
    let mut failures = Vec::new();
    let files = super::spmd_files(dir);
    for path in files.iter().skip(parts.0).step_by(parts.1) {
        let name = super::display_name(path);
        let front = B::front_of(path);
        let launches = match ispc_launches(&front) {
            Ok(l) => l,
            Err(e) => {
                failures.push((name, e));
                continue;
            }
        };
        let compiled = B::compile(&front);
        for spec in launches {
            if let Err(e) = B::differential(&front, &compiled, &spec) {
                failures.push((name.clone(), format!("{}: {e}", spec.entry)));
                break;
            }
        }
    }
    failures
}

/// Every program of `tests/ispc/` on `B` and on the interpreter.
pub fn ispc_programs_match<B: BackEnd>() {
    check_known(
        B::NAME,
        B::KNOWN,
        ispc_failures::<B>("tests/ispc", (0, 1)),
        |l| l.starts_with("tests/ispc/"),
    );
}

/// The conformance programs in two halves (even and odd positions), run in parallel.
pub fn conformance_half<B: BackEnd>(half: usize) {
    let files = super::spmd_files("tests/conformance");
    let mine: Vec<String> = files
        .iter()
        .skip(half)
        .step_by(2)
        .map(|p| super::display_name(p))
        .collect();
    check_known(
        B::NAME,
        B::KNOWN,
        ispc_failures::<B>("tests/conformance", (half, 2)),
        |l| mine.iter().any(|m| m == l),
    );
}
