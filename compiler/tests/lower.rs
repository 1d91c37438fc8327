//! Lowering the checked AST to IR:
//! - every program of the corpora (`examples/`, `tests/ispc/`, `tests/parse/`,
//!   `tests/conformance/`) lowers without panicking and the module verifies; the only
//!   errors allowed are E0903 ("not supported yet"), listed exactly;
//! - snapshots of the IR of small kernels under `tests/lower/snapshots/`.

mod common;

use common::*;
use spmdc::driver::Stage;
use spmdc::front::sema::{self, Options, Target};
use spmdc::ir::{self, verify, write};
use spmdc::lower;

/// Lowers a checked front-end result for `lanes` lanes (re-checking if not the default).
fn lower_result(result: &spmdc::driver::FrontResult, lanes: u32) -> Result<ir::Module, String> {
    let fresh;
    let checked = if lanes == 16 {
        result.checked.as_ref().expect("checked")
    } else {
        let options = Options {
            target: Target {
                program_count: lanes,
                pointer_size: 8,
            },
        };
        let stdlib = result.stdlib_file.expect("stdlib");
        let (c, diags) = sema::check_with(
            &result.unit,
            &result.interner,
            &result.sources,
            stdlib,
            &options,
        );
        assert!(
            !diags.iter().any(|d| d.is_error()),
            "sema errors at {lanes} lanes"
        );
        fresh = c;
        &fresh
    };
    lower::lower(&result.unit, checked, &result.interner, &result.sources).map_err(|diags| {
        diags
            .iter()
            .map(|d| spmdc::diag::render_human(&result.sources, d, false))
            .collect::<String>()
    })
}

/// Lowers one file; `Err` holds the rendered diagnostics.
fn lower_file(path: &std::path::Path, lanes: u32) -> Result<ir::Module, String> {
    let result = check_file(path, Stage::Check);
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

/// Programs that use something lowering does not implement yet (transcendentals).
const UNSUPPORTED: &[&str] = &[
    "tests/ispc/transcendental.spmd",
    "tests/parse/stdlib_calls.spmd",
    "tests/conformance/stdlib_atomic_int64_float.spmd",
    "tests/conformance/stdlib_exp_log.spmd",
    "tests/conformance/stdlib_inverse_trig.spmd",
    "tests/conformance/stdlib_ldexp_frexp.spmd",
    "tests/conformance/stdlib_memory_barrier_clock.spmd",
    "tests/conformance/stdlib_pow_cbrt.spmd",
    "tests/conformance/stdlib_sincos.spmd",
    "tests/conformance/stdlib_trig.spmd",
];

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
