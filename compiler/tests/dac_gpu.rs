//! Differential tests of the dac-gpu target (baseline SIMT) against the reference
//! interpreter.
//!
//! Every launch runs twice from one front end (checked for dac-gpu: 32 lanes, 8-byte
//! pointers): on the interpreter (`driver::run_on_interp`) and compiled by
//! `back::dac_gpu` and run on the functional `sim::gpu` simulator. Every buffer must
//! come back byte for byte identical (floats bit for bit).
//!
//! The launches: the command each example's header suggests (an `@file` input
//! replaced by random data of the same length) plus a few more shapes, and every
//! ISPC-style program of `tests/ispc` and `tests/conformance` (the test entry and
//! `result`, as `tests/lower.rs` runs them). A launch that fails because of a known
//! back-end limitation is listed in [`KNOWN_FAILURES`] with the reason; the list is
//! checked exactly, so regressions and fixes both show. A timing-mode run checks
//! that statistics are present and plausible.

mod common;

use std::path::Path;

use spmdc::back::dac_gpu::run::{self as dac, DacRunOptions};
use spmdc::back::dac_gpu::Options;
use spmdc::driver::{self, FrontOptions, FrontResult, RunError, RunRequest, Stage};
use spmdc::front::sema;
use spmdc::interp::Limits;
use spmdc::launch::RunResult;

/// Instructions per launch before a run is stopped.
const MAX_STEPS: u64 = 100_000_000;

/// A launch known not to match, by its label (`FILE` or `FILE#entry`): a part of the
/// message it must fail with, and the reason.
const KNOWN_FAILURES: &[(&str, &str, &str)] = &[
    (
        "tests/conformance/func_mutual_recursion.spmd",
        "a recursive call is not supported yet",
        "calls are inlined; recursion needs .func call/ret with a stack, not implemented yet",
    ),
    (
        "tests/conformance/func_recursion_uniform.spmd",
        "a recursive call is not supported yet",
        "calls are inlined; recursion needs .func call/ret with a stack, not implemented yet",
    ),
    (
        "tests/conformance/func_recursion_varying.spmd",
        "a recursive call is not supported yet",
        "calls are inlined; recursion needs .func call/ret with a stack, not implemented yet",
    ),
    (
        "tests/conformance/func_recursion_varying_divergent_return.spmd",
        "a recursive call is not supported yet",
        "calls are inlined; recursion needs .func call/ret with a stack, not implemented yet",
    ),
];

// ---------------------------------------------------------------------------------

fn dac_target() -> sema::Target {
    sema::Target {
        program_count: 32,
        pointer_size: 8,
    }
}

fn front_of(path: &Path) -> FrontResult {
    let text = std::fs::read_to_string(path).expect("readable example");
    let options = FrontOptions {
        target: dac_target(),
        ..FrontOptions::default()
    };
    let name = common::display_name(path);
    driver::run_front(
        &name,
        Some(path.to_path_buf()),
        text,
        &options,
        Stage::Check,
    )
}

/// One launch: entry, arguments and shape.
#[derive(Clone, Debug)]
struct LaunchSpec {
    entry: String,
    args: Vec<String>,
    grid: Option<String>,
    block: Option<String>,
}

impl LaunchSpec {
    fn request(&self) -> RunRequest<'_> {
        RunRequest {
            optimize: driver::OPTIMIZE_BY_DEFAULT,
            entry: &self.entry,
            args: &self.args,
            grid: self.grid.as_deref(),
            block: self.block.as_deref(),
            limits: Limits {
                max_steps: MAX_STEPS,
                ..Limits::default()
            },
        }
    }
}

fn run_error(e: RunError, front: &FrontResult) -> String {
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

/// A program compiled for the dac-gpu once, for several launches.
type Compiled = spmdc::back::dac_gpu::Compiled;

fn compile(front: &FrontResult) -> Result<Compiled, String> {
    dac::compile(front, driver::OPTIMIZE_BY_DEFAULT, &Options::default())
        .map_err(|e| run_error(e, front))
}

fn run_compiled(
    front: &FrontResult,
    compiled: &Compiled,
    spec: &LaunchSpec,
    opts: &DacRunOptions,
) -> Result<RunResult, String> {
    dac::run_compiled(front, compiled, &spec.request(), opts).map_err(|e| run_error(e, front))
}

/// The first difference between two results' buffers and return values.
fn compare(want: &RunResult, got: &RunResult) -> Result<(), String> {
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
                "buffer `{name}`[{i}]: interp {:?}, dac-gpu {:?}",
                w.get(i),
                g.get(i)
            ));
        }
    }
    let bits = |r: &RunResult| r.ret.map(|v| v.to_bits());
    if bits(want) != bits(got) {
        return Err(format!(
            "return: interp {:?}, dac-gpu {:?}",
            want.ret, got.ret
        ));
    }
    Ok(())
}

/// Runs one launch on both targets; `Err` says how they differ.
fn differential(
    front: &FrontResult,
    compiled: &Result<Compiled, String>,
    spec: &LaunchSpec,
) -> Result<RunResult, String> {
    let want = driver::run_on_interp(front, &spec.request())
        .map_err(|e| format!("interp failed: {}", run_error(e, front)))?;
    let got = run_compiled(front, compiled.as_ref()?, spec, &DacRunOptions::default())?;
    compare(&want, &got)?;
    Ok(got)
}

/// Checks the failures (label, message) against [`KNOWN_FAILURES`] for the labels in
/// `scope`: exactly the listed ones fail, each with its message.
fn check_known(mut failures: Vec<(String, String)>, scope: impl Fn(&str) -> bool) {
    failures.sort();
    let report: Vec<String> = failures.iter().map(|(l, m)| format!("{l}: {m}")).collect();
    let got: Vec<&str> = failures.iter().map(|(l, _)| l.as_str()).collect();
    let mut want: Vec<&str> = KNOWN_FAILURES
        .iter()
        .map(|k| k.0)
        .filter(|l| scope(l))
        .collect();
    want.sort();
    assert_eq!(
        got,
        want,
        "dac-gpu differential results changed; failures now:\n{}",
        report.join("\n")
    );
    for (label, message) in &failures {
        let known = KNOWN_FAILURES.iter().find(|k| k.0 == label).map(|k| k.1);
        assert!(
            known.is_some_and(|m| message.contains(m)),
            "{label} fails differently now: {message}"
        );
    }
}

// ---------------------------------------------------------------------------------
// Example launches

/// Splits a shell command line (single and double quotes, no escapes inside quotes).
fn shell_words(line: &str) -> Vec<String> {
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
fn header_launches(text: &str) -> Vec<LaunchSpec> {
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

fn parse_command(cmd: &str) -> LaunchSpec {
    let words = shell_words(cmd);
    let mut spec = LaunchSpec {
        entry: String::new(),
        args: Vec::new(),
        grid: None,
        block: None,
    };
    let mut it = words.iter();
    while let Some(w) = it.next() {
        let mut value = || it.next().cloned().unwrap_or_default();
        match w.as_str() {
            "--entry" => spec.entry = value(),
            "--grid" => spec.grid = Some(value()),
            "--block" => spec.block = Some(value()),
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

/// Extra launches beyond the headers: other shapes and partial gangs/blocks.
fn extra_launches() -> Vec<(&'static str, LaunchSpec)> {
    let spec = |entry: &str, args: &[&str], grid: Option<&str>, block: Option<&str>| LaunchSpec {
        entry: entry.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        grid: grid.map(Into::into),
        block: block.map(Into::into),
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

fn example_launches() -> Vec<(String, LaunchSpec)> {
    let mut out = Vec::new();
    for path in common::spmd_files("examples") {
        let name = common::display_name(&path);
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

fn label(file: &str, spec: &LaunchSpec) -> String {
    format!("{file}#{}", spec.entry)
}

#[test]
fn examples_match_the_interpreter() {
    let root = common::repo_root();
    let mut failures = Vec::new();
    let mut ran = 0;
    let mut seen = std::collections::BTreeSet::new();
    let mut current: Option<(String, FrontResult, Result<Compiled, String>)> = None;
    for (file, spec) in example_launches() {
        if current.as_ref().map(|c| &c.0) != Some(&file) {
            let front = front_of(&root.join(&file));
            let compiled = compile(&front);
            current = Some((file.clone(), front, compiled));
        }
        let Some((_, front, compiled)) = current.as_ref() else {
            continue;
        };
        let l = label(&file, &spec);
        ran += 1;
        if let Err(e) = differential(front, compiled, &spec) {
            if seen.insert(l.clone()) {
                failures.push((l, e));
            }
        }
    }
    assert!(ran >= 20, "only {ran} example launches found");
    check_known(failures, |l| l.starts_with("examples/"));
}

// ---------------------------------------------------------------------------------
// ISPC-style programs

/// The test entry and `result` of an ISPC-style program, each on a zeroed 64-element
/// `RET`, `aFOO[i] = i + 1` and `b = 5` (by position).
fn ispc_launches(front: &FrontResult) -> Result<Vec<LaunchSpec>, String> {
    let checked = front.checked.as_ref().ok_or("not checked")?;
    if front.diags.has_errors() {
        return Err("does not compile".into());
    }
    let mut out = Vec::new();
    let entry = common::ispc::ENTRIES
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
        });
    }
    Ok(out)
}

/// The failures among the programs of `dir` (those whose index modulo `parts.1` is
/// `parts.0`, so a large directory can be split over tests that run in parallel).
fn ispc_failures(dir: &str, parts: (usize, usize)) -> Vec<(String, String)> {
    let mut failures = Vec::new();
    let files = common::spmd_files(dir);
    for path in files.iter().skip(parts.0).step_by(parts.1) {
        let name = common::display_name(path);
        let front = front_of(path);
        let launches = match ispc_launches(&front) {
            Ok(l) => l,
            Err(e) => {
                failures.push((name, e));
                continue;
            }
        };
        let compiled = compile(&front);
        for spec in launches {
            if let Err(e) = differential(&front, &compiled, &spec) {
                failures.push((name.clone(), format!("{}: {e}", spec.entry)));
                break;
            }
        }
    }
    failures
}

#[test]
fn ispc_programs_match_the_interpreter() {
    check_known(ispc_failures("tests/ispc", (0, 1)), |l| {
        l.starts_with("tests/ispc/")
    });
}

/// The conformance programs in two halves (even and odd positions), run in parallel.
fn conformance_half(half: usize) {
    let files = common::spmd_files("tests/conformance");
    let mine: Vec<String> = files
        .iter()
        .skip(half)
        .step_by(2)
        .map(|p| common::display_name(p))
        .collect();
    check_known(ispc_failures("tests/conformance", (half, 2)), |l| {
        mine.iter().any(|m| m == l)
    });
}

#[test]
fn conformance_programs_match_the_interpreter_0() {
    conformance_half(0);
}

#[test]
fn conformance_programs_match_the_interpreter_1() {
    conformance_half(1);
}

// ---------------------------------------------------------------------------------
// Timing

#[test]
fn timing_runs_report_plausible_statistics() {
    let root = common::repo_root();
    for file in [
        "examples/saxpy.spmd",
        "examples/stencil1d.spmd",
        "examples/histogram.spmd",
    ] {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let Some(spec) = header_launches(&text).into_iter().next() else {
            panic!("{file}: no launch in the header");
        };
        let front = front_of(&path);
        let compiled = compile(&front).unwrap_or_else(|e| panic!("{file}: {e}"));
        let functional = run_compiled(&front, &compiled, &spec, &DacRunOptions::default()).unwrap();
        let timing = run_compiled(
            &front,
            &compiled,
            &spec,
            &DacRunOptions {
                timing: true,
                ..DacRunOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{file}: {e}"));
        timing.stats.check_convention(true).unwrap();
        compare(&functional, &timing).unwrap();
        let get = |r: &RunResult, k: &str| match r.stats.get(k) {
            Some(spmdc::launch::StatValue::Count(v)) => v,
            other => panic!("{file}: statistic {k}: {other:?}"),
        };
        let insts = get(&timing, "dynamic_instructions");
        assert_eq!(insts, get(&functional, "dynamic_instructions"), "{file}");
        let cycles = get(&timing, "cycles");
        assert!(
            insts > 0 && cycles > 0,
            "{file}: {insts} insts, {cycles} cycles"
        );
        // One SM issues at most a few warp instructions per cycle.
        assert!(
            cycles * 64 >= insts,
            "{file}: {insts} insts in {cycles} cycles"
        );
    }
}
