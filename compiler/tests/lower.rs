//! Lowering the checked AST to IR:
//! - every program of the corpora (`examples/`, `tests/ispc/`, `tests/parse/`,
//!   `tests/conformance/`) lowers without panicking and the module verifies; the only
//!   errors allowed are E0903 ("not supported yet"), listed exactly;
//! - snapshots of the IR of small kernels under `tests/lower/snapshots/`.

mod common;

use common::*;
use spmdc::ir::{self, verify, write};

/// Lowers one file; `Err` holds the rendered diagnostics.
fn lower_file(path: &std::path::Path, lanes: u32) -> Result<ir::Module, String> {
    // Preprocessed for `lanes` too: `TARGET_WIDTH` is the gang width.
    let target = spmdc::front::sema::Target {
        program_count: lanes,
        pointer_size: 8,
    };
    let result = check_file_for(path, target);
    assert!(
        !result.diags.has_errors(),
        "{} does not check:\n{}",
        display_name(path),
        render_all(&result)
    );
    lower_result(&result, lanes)
}

/// Lowers every file of the corpora. Returns the files lowering rejected (with E0903
/// only) and fails on panics, other errors and verifier errors.
fn lower_corpora(lanes: u32) -> Vec<String> {
    let mut unsupported = Vec::new();
    let mut failures = Vec::new();
    for dir in ["examples", "tests/ispc", "tests/parse", "tests/conformance"] {
        for path in spmd_files(dir) {
            let name = display_name(&path);
            let outcome = std::panic::catch_unwind(|| lower_file(&path, lanes));
            match outcome {
                Err(_) => failures.push(format!("{name}: lowering panicked")),
                Ok(Err(diags)) => {
                    if diags
                        .lines()
                        .any(|l| l.starts_with("error[") && !l.starts_with("error[E0903]"))
                    {
                        failures.push(format!("{name}: unexpected errors:\n{diags}"));
                    } else {
                        unsupported.push(name);
                    }
                }
                Ok(Ok(module)) => {
                    if let Err(errs) = verify::verify_module(&module) {
                        let msgs: Vec<String> =
                            errs.iter().take(5).map(|e| e.to_string()).collect();
                        failures.push(format!("{name}: verifier:\n  {}", msgs.join("\n  ")));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} file(s) failed at {lanes} lanes:\n{}",
        failures.len(),
        failures.join("\n")
    );
    unsupported
}

/// Programs that use something lowering does not implement yet (none at the moment).
const UNSUPPORTED: &[&str] = &[];

#[test]
fn corpora_lower_and_verify_16() {
    let got = lower_corpora(16);
    assert_eq!(
        got, UNSUPPORTED,
        "the list of programs rejected with E0903 changed"
    );
}

#[test]
fn corpora_lower_and_verify_32() {
    let got = lower_corpora(32);
    assert_eq!(
        got, UNSUPPORTED,
        "the list of programs rejected with E0903 changed"
    );
}

// ---------------------------------------------------------------- end to end

/// Runs an ISPC-style test program (see `tests/ispc/README.md`) at `lanes` lanes: the test
/// entry and `result` each on a zeroed 64-float `RET`, with `aFOO[i] = i + 1` and `b = 5`.
/// `Err` says why it does not pass.
fn run_ispc_test(path: &std::path::Path, lanes: u32) -> Result<(), String> {
    let module = lower_file(path, lanes).map_err(|_| "not lowered (E0903)".to_string())?;
    let entry_name = ispc::test_entry(&module).ok_or("no test entry")?;
    let run = |name: &str| -> Result<Vec<f32>, String> {
        let ret = ispc::run_entry(&module, name, lanes, 20_000_000)?.ret;
        Ok(ispc::words(&ret)
            .into_iter()
            .take(lanes as usize)
            .map(f32::from_bits)
            .collect())
    };
    let got = run(entry_name)?;
    let want = run("result")?;
    let same = |a: f32, b: f32| a == b || (a.is_nan() && b.is_nan());
    match got.iter().zip(&want).position(|(a, b)| !same(*a, *b)) {
        None => Ok(()),
        Some(i) => Err(format!("RET[{i}] = {} but result says {}", got[i], want[i])),
    }
}

/// Runs every ISPC-style program of `tests/ispc/` and `tests/conformance/`; returns the
/// failures as `name: why`, sorted.
fn run_ispc_corpora(lanes: u32) -> Vec<String> {
    let mut failures = Vec::new();
    for dir in ["tests/ispc", "tests/conformance"] {
        for path in spmd_files(dir) {
            let name = display_name(&path);
            match std::panic::catch_unwind(|| run_ispc_test(&path, lanes)) {
                Ok(Ok(())) => {}
                Ok(Err(why)) => failures.push(format!("{name}: {why}")),
                Err(_) => failures.push(format!("{name}: panicked")),
            }
        }
    }
    failures
}

/// Checks the failing programs against a known list exactly: a program that starts to
/// pass must be removed from the list.
fn check_known_failures(lanes: u32, known: &[&str]) {
    let failures = run_ispc_corpora(lanes);
    let names: Vec<&str> = failures
        .iter()
        .map(|f| f.split(": ").next().unwrap_or(f))
        .collect();
    assert_eq!(
        names,
        known,
        "end-to-end results at {lanes} lanes changed; failures now:\n{}",
        failures.join("\n")
    );
}

#[test]
fn ispc_tests_run_16() {
    check_known_failures(16, KNOWN_FAILURES_16);
}

#[test]
fn ispc_tests_run_32() {
    check_known_failures(32, KNOWN_FAILURES_32);
}

/// Programs that do not pass end to end yet (the assertion message gives each one's
/// reason when the list is out of date).
const KNOWN_FAILURES_16: &[&str] = &[
    // The test expects the `else` branch for every lane, but lanes 3.. have a > 3.
    "tests/ispc/cif_reduce_rotate.spmd",
];

const KNOWN_FAILURES_32: &[&str] = KNOWN_FAILURES_16;

// ---------------------------------------------------------------- snapshots

/// Lowers a source text (16 lanes) and snapshots its IR under `tests/lower/snapshots/`.
fn snapshot(name: &str, src: &str) {
    let result = check_source(name, src);
    assert!(!result.diags.has_errors(), "{}", render_all(&result));
    let module = lower_result(&result, 16).unwrap_or_else(|e| panic!("{e}"));
    verify::verify_module(&module).unwrap_or_else(|e| panic!("{e:?}"));
    let text = write::module_to_string(&module);
    assert_snapshot_in("tests/lower/snapshots", name, src, &text);
}

#[test]
fn snapshot_if_uniform_and_varying() {
    snapshot(
        "if_uniform_and_varying",
        "export void f(uniform int out[], uniform int n) {
    int x = programIndex;
    if (n > 2) { x = 1; }
    if (x < 8) { x = x + 10; } else { x = 0; }
    out[programIndex] = x;
}
",
    );
}

#[test]
fn snapshot_loop_break_continue_return() {
    snapshot(
        "loop_break_continue_return",
        "static int find(int a) {
    for (int i = 0; i < 8; ++i) {
        if (i == a) return i;
        if (i > 5) break;
        if ((i & 1) == 0) continue;
        a = a - 1;
    }
    return -1;
}
",
    );
}

#[test]
fn snapshot_foreach_remainder() {
    snapshot(
        "foreach_remainder",
        "export void scale(uniform float a[], uniform int n) {
    foreach (i = 0 ... n) { a[i] = a[i] * 2; }
}
",
    );
}

#[test]
fn snapshot_call() {
    snapshot(
        "call",
        "static float twice(float x) { return x * 2; }
export void f(uniform float a[]) {
    float v = a[programIndex];
    if (v > 0) { a[programIndex] = twice(v); }
}
",
    );
}
