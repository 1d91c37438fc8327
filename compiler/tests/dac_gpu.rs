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

use common::launches::*;

use spmdc::back::dac_gpu::run::{self as dac, DacRunOptions};
use spmdc::back::dac_gpu::Options;
use spmdc::driver::{self, FrontOptions, FrontResult, Stage};
use spmdc::front::sema;
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
    dac::run_compiled(front, compiled, &spec.request(MAX_STEPS), opts)
        .map_err(|e| run_error(e, front))
}

/// Runs one launch on both targets; `Err` says how they differ.
fn differential(
    front: &FrontResult,
    compiled: &Result<Compiled, String>,
    spec: &LaunchSpec,
) -> Result<RunResult, String> {
    let want = driver::run_on_interp(front, &spec.request(MAX_STEPS))
        .map_err(|e| format!("interp failed: {}", run_error(e, front)))?;
    let got = run_compiled(front, compiled.as_ref()?, spec, &DacRunOptions::default())?;
    compare("dac-gpu", &want, &got)?;
    Ok(got)
}

// ---------------------------------------------------------------------------------
// Example launches

/// This suite's target.
struct DacGpu;

impl BackEnd for DacGpu {
    type Compiled = Compiled;
    const NAME: &'static str = "dac-gpu";
    const KNOWN: &'static [(&'static str, &'static str, &'static str)] = KNOWN_FAILURES;
    fn front_of(path: &Path) -> FrontResult {
        front_of(path)
    }
    fn compile(front: &FrontResult) -> Result<Compiled, String> {
        compile(front)
    }
    fn differential(
        front: &FrontResult,
        compiled: &Result<Compiled, String>,
        spec: &LaunchSpec,
    ) -> Result<RunResult, String> {
        differential(front, compiled, spec)
    }
}

#[test]
fn examples_match_the_interpreter() {
    examples_match::<DacGpu>();
}

#[test]
fn ispc_programs_match_the_interpreter() {
    ispc_programs_match::<DacGpu>();
}

#[test]
fn conformance_programs_match_the_interpreter_0() {
    conformance_half::<DacGpu>(0);
}

#[test]
fn conformance_programs_match_the_interpreter_1() {
    conformance_half::<DacGpu>(1);
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
        compare("dac-gpu", &functional, &timing).unwrap();
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
