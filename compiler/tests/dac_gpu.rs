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
//! checked exactly, so regressions and fixes both show. The printed text and the
//! entry's return value must be the interpreter's too. A timing-mode run checks
//! that statistics are present and plausible.
//!
//! `print` is formatted on the device by the runtime routines of
//! `stdlib/runtime_print.spmd` (as on Nyuzi) and written to the simulator's console
//! buffer; the print tests below run programs printing every type under partial
//! masks, from several gangs and blocks, and entries returning values.

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
const KNOWN_FAILURES: &[(&str, &str, &str)] = &[];

// ---------------------------------------------------------------------------------

fn dac_target() -> sema::Target {
    sema::Target {
        program_count: 32,
        pointer_size: 8,
    }
}

fn front_of(path: &Path) -> FrontResult {
    common::check_file_for(path, dac_target())
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
    if want.output != got.output {
        return Err(format!(
            "printed text differs:\ninterp:\n{}\ndac-gpu:\n{}",
            want.output, got.output
        ));
    }
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
// Register names

/// Compiles `file` unoptimized with `options`, runs `spec` on it and on the
/// interpreter, and returns the entry's register report.
fn unoptimized_matches(
    file: &str,
    spec: &LaunchSpec,
    options: &Options,
) -> spmdc::back::dac_gpu::alloc::RegReport {
    let front = front_of(&common::repo_root().join(file));
    let request = driver::RunRequest {
        optimize: false,
        ..spec.request(MAX_STEPS)
    };
    let fail = |e| format!("{file}: {}", run_error(e, &front));
    let compiled = dac::compile(&front, false, options).unwrap_or_else(|e| panic!("{}", fail(e)));
    let want = driver::run_on_interp(&front, &request).unwrap_or_else(|e| panic!("{}", fail(e)));
    let got = dac::run_compiled(&front, &compiled, &request, &DacRunOptions::default())
        .unwrap_or_else(|e| panic!("{}", fail(e)));
    compare("dac-gpu", &want, &got).unwrap_or_else(|e| panic!("{file}: {e}"));
    let k = compiled
        .program
        .kernels
        .iter()
        .position(|k| k.name == spec.entry);
    compiled.regs[k.expect("the entry is a kernel")].clone()
}

/// Unoptimized code takes a register per value, and register operands were 16-bit
/// indices: these programs stopped with E0999 ("needs N %r registers before
/// allocation"). A generated program (seed 450) whose selected code names more than
/// 65,536 `%r`, and fmod's special cases (21 lines, the smallest program known to
/// stop so: its full-warp candidate named 74,610), compile within the default budget
/// and give the interpreter's results.
#[test]
fn unoptimized_kernels_naming_more_than_65536_registers_compile_and_match() {
    let file = "tests/difftest/dac_gpu_no_opt_names_more_than_65536_registers.spmd";
    let text = std::fs::read_to_string(common::repo_root().join(file)).unwrap();
    let launch = spmdc::difftest::run::LaunchLine::from_source(&text).unwrap();
    let spec = LaunchSpec {
        entry: launch.entry,
        args: launch.args,
        grid: launch.grid,
        block: launch.block,
        dynamic_shared: None,
    };
    let options = Options {
        uniformity: false,
        ..Options::default()
    };
    let report = unoptimized_matches(file, &spec, &options);
    assert!(report.virtual_regs > 65_536, "{report:?}");
    assert!(report.num_regs <= report.budget, "{report:?}");

    let spec = LaunchSpec {
        entry: "f_f".into(),
        args: vec!["RET=zeros(32)".into(), "aFOO=range(32,1)".into()],
        grid: None,
        block: None,
        dynamic_shared: None,
    };
    let file = "tests/conformance/stdlib_fmod_special.spmd";
    unoptimized_matches(file, &spec, &Options::default());
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

// ---------------------------------------------------------------------------------
// print and entry return values

fn front_src(src: &str) -> FrontResult {
    let options = FrontOptions {
        target: dac_target(),
        ..FrontOptions::default()
    };
    driver::run_front("print.spmd", None, src.to_string(), &options, Stage::Check)
}

/// Runs `entry(args)` on the interpreter and the dac-gpu: the printed text and the
/// return value must agree; returns the text and the value.
fn print_both(
    src: &str,
    entry: &str,
    args: &[&str],
    grid: Option<&str>,
    block: Option<&str>,
) -> (String, Option<spmdc::launch::Value>) {
    let front = front_src(src);
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let req = spmdc::driver::RunRequest {
        optimize: driver::OPTIMIZE_BY_DEFAULT,
        entry,
        args: &args,
        grid,
        block,
        dynamic_shared: None,
        limits: spmdc::interp::Limits {
            max_steps: MAX_STEPS,
            ..spmdc::interp::Limits::default()
        },
    };
    let want = driver::run_on_interp(&front, &req).unwrap_or_else(|e| panic!("interp: {e:?}"));
    let got = dac::run_on_dac_gpu(&front, &req, &DacRunOptions::default())
        .unwrap_or_else(|e| panic!("dac-gpu: {e:?}"));
    assert_eq!(got.output, want.output, "printed text differs");
    assert_eq!(got.ret, want.ret, "return value differs");
    (want.output, want.ret)
}

#[test]
fn print_integers_and_bools() {
    let src = r#"
export void ints(uniform int n) {
    print("hello, world\n");
    print("% and %\n", n, -n);
    uniform int8 a = -128;
    uniform uint16 d = 65535;
    uniform int64 e = -9223372036854775807 - 1;
    print("% % % %\n", a, d, e, 2147483647);
    uniform bool t = n > 3;
    print("bools % %\n", t, !t);
    if (programIndex > 100)
        print("never %\n", programIndex);
    print("é ü ∑ end\n");
}
"#;
    let (out, _) = print_both(src, "ints", &["n=5"], None, None);
    assert_eq!(
        out,
        "hello, world\n5 and -5\n-128 -1 -9223372036854775808 2147483647\n\
         bools true false\né ü ∑ end\n"
    );
}

#[test]
fn print_varying_values_and_pointers_under_masks() {
    let src = r#"
export void lanes(uniform int n) {
    if (programIndex < n) {
        print("lanes % %\n", programIndex, (int16)(programIndex * -3000));
        print("wide %\n", (int64)programIndex * 1000000000000);
        print("bool %\n", programIndex % 2 == 0);
    }
    uniform int arr[4];
    uniform int * uniform p = &arr[0];
    print("% %\n", &arr[3] - p, (uniform int * uniform)(uniform uint64)0xffff0048u);
}
"#;
    let (out, _) = print_both(src, "lanes", &["n=5"], None, None);
    assert!(out.starts_with("lanes [0,1,2,3,4,((5))"), "{out}");
    assert!(
        out.contains("bool [true,false,true,false,true,_________,"),
        "{out}"
    );
    assert!(out.ends_with("3 0xffff0048\n"), "{out}");
}

/// Many prints in one kernel: the print routines are called out of line, so the
/// kernel stays small.
#[test]
fn print_many_values_in_one_kernel() {
    let src = r#"
export void ints(uniform int n) {
    print("hello, world\n");
    print("% and %\n", n, -n);
    uniform int8 a = -128;
    uniform uint16 d = 65535;
    uniform int64 e = -9223372036854775807 - 1;
    uniform uint64 f = 18446744073709551615u;
    print("% % % % %\n", a, d, e, f, 2147483647);
    uniform bool t = n > 3;
    print("bools % %\n", t, !t);
    if (programIndex < n) {
        print("lanes % % %\n", programIndex, (int8)(programIndex * 20),
              (int16)(programIndex * -3000));
        print("wide % %\n", (int64)programIndex * 1000000000000, (uint32)programIndex - 8);
        print("bool %\n", programIndex % 2 == 0);
    }
    if (programIndex > 100)
        print("never %\n", programIndex);
    uniform int arr[4];
    uniform int * uniform p = &arr[0];
    print("% %\n", &arr[3] - p, (uniform int * uniform)(uniform uint64)0xffff0048u);
    print("é ü ∑ end\n");
}
"#;
    let front = front_src(src);
    let compiled = compile(&front).expect("compiles");
    let insts: usize = compiled.program.kernels.iter().map(|k| k.insts.len()).sum();
    assert!(insts < 20_000, "{insts} instructions");
    let (out, _) = print_both(src, "ints", &["n=5"], None, None);
    assert!(out.ends_with("3 0xffff0048\né ü ∑ end\n"), "{out}");
}

#[test]
fn print_floats_uniform_and_varying() {
    let src = r#"
export void floats(uniform int n) {
    print("% % % %\n", 0.1f, -2.5f, floatbits(0x7f800000u), doublebits(0xfff8000000000000ull));
    print("% %\n", 123456789.0d, 1e-7d);
    float x = programIndex * 0.37f - 3;
    double y = (double)programIndex / 7;
    if (programIndex % 4 != 1)
        print("% %\n", x, y);
}
"#;
    let (out, _) = print_both(src, "floats", &["n=3"], None, None);
    assert!(out.starts_with("0.100000 -2.500000 inf -nan\n"), "{out}");
}

#[test]
fn print_from_several_gangs_and_blocks_and_in_callees() {
    let src = r#"
void show(int x, uniform int tag) {
    print("tag % x %\n", tag, x);
}
task void gangs(uniform int n) {
    print("gang % of block %: %\n", threadIdx.x / 32, blockIdx.x, threadIdx.x);
    if (threadIdx.x % 3 == 1)
        show(threadIdx.x, 7);
    for (int i = 0; i < threadIdx.x % 32; i++) {
        if (i >= n)
            break;
        print("i=%\n", i);
    }
}
"#;
    let (out, _) = print_both(src, "gangs", &["n=2"], Some("3"), Some("80"));
    assert_eq!(out.matches("gang ").count(), 9, "{out}");
}

#[test]
fn entry_return_values_are_the_interpreters() {
    let src = r#"
export uniform int ri(uniform int a[], uniform int n) {
    a[programIndex] = programIndex;
    return n * 7 - 100;
}
export uniform double rd(uniform int n) {
    return n / 3.0d;
}
export uniform bool rb(uniform int n) {
    return n > 2;
}
export uniform int8 r8(uniform int n) {
    return (int8)(n - 200);
}
export uniform float rv(uniform int n) {
    float x = programIndex + 0.5f;
    return extract(x, 0) + n;
}
"#;
    let (_, r) = print_both(src, "ri", &["a=zeros(40)", "n=5"], None, Some("40"));
    assert_eq!(r.map(|v| v.to_bits() as u32 as i32), Some(-65));
    for (entry, arg) in [
        ("rd", "n=5"),
        ("rb", "n=3"),
        ("rb", "n=1"),
        ("r8", "n=7"),
        ("rv", "n=2"),
    ] {
        let (_, r) = print_both(src, entry, &[arg], None, None);
        assert!(r.is_some(), "{entry}");
    }
}

/// `clock()` reads `%clock64`: a loop between two reads makes the second larger, in
/// functional mode (warp instructions) and in timing mode (cycles). Only the dac-gpu
/// runs: clock values differ between targets by design.
#[test]
fn clock_advances_across_a_loop_functionally_and_in_timing() {
    let src = r#"
export uniform int64 elapsed(uniform int a[], uniform int n) {
    uniform int64 t0 = clock();
    uniform int s = 0;
    for (uniform int i = 0; i < n; i++) {
        s += a[i] * i;
    }
    a[0] = s;
    uniform int64 t1 = clock();
    return t1 - t0;
}
"#;
    let front = front_src(src);
    let args = vec!["a=zeros(40)".to_string(), "n=40".to_string()];
    let req = spmdc::driver::RunRequest {
        optimize: driver::OPTIMIZE_BY_DEFAULT,
        entry: "elapsed",
        args: &args,
        grid: None,
        block: None,
        dynamic_shared: None,
        limits: spmdc::interp::Limits {
            max_steps: MAX_STEPS,
            ..spmdc::interp::Limits::default()
        },
    };
    for timing in [false, true] {
        let opts = DacRunOptions {
            timing,
            ..DacRunOptions::default()
        };
        let got = dac::run_on_dac_gpu(&front, &req, &opts)
            .unwrap_or_else(|e| panic!("timing {timing}: {e:?}"));
        let dt = got.ret.map(|v| v.to_bits() as i64);
        // 40 iterations of at least a load, a multiply-add and the loop test.
        assert!(dt.is_some_and(|d| d > 40 * 3), "timing {timing}: {dt:?}");
    }
}

// ---------------------------------------------------------------------------------
// Recursion

#[test]
fn recursion_deeper_than_the_stack_traps_and_shallow_recursion_matches() {
    let src = r#"
static int down(int n, uniform int * uniform hits) {
    if (n <= 0)
        return 0;
    hits[0] += 1;
    return 1 + down(n - 1, hits);
}
export void deep(uniform int out[], uniform int n, uniform int hits[]) {
    out[programIndex] = down(n + programIndex % 3, hits);
}
"#;
    for n in ["n=3", "n=40"] {
        let (_, r) = print_both(
            src,
            "deep",
            &["out=zeros(32)", n, "hits=zeros(1)"],
            None,
            None,
        );
        assert!(r.is_none());
    }
    let front = front_src(src);
    let args: Vec<String> = ["out=zeros(32)", "n=100000", "hits=zeros(1)"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let req = spmdc::driver::RunRequest {
        optimize: driver::OPTIMIZE_BY_DEFAULT,
        entry: "deep",
        args: &args,
        grid: None,
        block: None,
        dynamic_shared: None,
        limits: spmdc::interp::Limits::default(),
    };
    match dac::run_on_dac_gpu(&front, &req, &DacRunOptions::default()) {
        Err(spmdc::driver::RunError::Trap(e)) => {
            assert!(e.message.contains("stack overflow"), "{}", e.message)
        }
        other => panic!("expected a stack overflow, got {other:?}"),
    }
}
