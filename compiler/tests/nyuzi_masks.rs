//! Nyuzi's full-mask folding and scalar branches (`back::nyuzi::masks`, issue 6):
//! kernels whose masks are proven full run without the mask work and give the
//! interpreter's buffers, with the analysis on and off; a function called with lane 0
//! off (where lane 0's bit of a uniform mask says nothing) keeps exact results; and
//! on row_sums the analysis takes vector instructions off without adding cycles.

use spmdc::back::nyuzi::run::{run_on_nyuzi, NyuziRunOptions};
use spmdc::driver::{self, FrontOptions, FrontResult, RunRequest, Stage};
use spmdc::front::sema;
use spmdc::interp::Limits;
use spmdc::launch::{RunResult, StatValue};

fn front(src: &str, no_uniformity: bool) -> FrontResult {
    let options = FrontOptions {
        target: sema::Target {
            program_count: 16,
            pointer_size: 4,
        },
        ..FrontOptions::default()
    };
    let mut front = driver::run_front("k.spmd", None, src.to_string(), &options, Stage::Check);
    assert!(!front.diags.has_errors(), "front end errors");
    front.switches.no_uniformity = no_uniformity;
    front
}

fn count(r: &RunResult, key: &str) -> u64 {
    match r.stats.get(key) {
        Some(StatValue::Count(n)) => n,
        other => panic!("{key}: {other:?}"),
    }
}

/// Runs on the interpreter and on the Nyuzi timing model with the analysis on and
/// off; asserts the three agree and returns the (on, off) runs.
fn check(src: &str, entry: &str, args: &[&str], block: Option<&str>) -> (RunResult, RunResult) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let req = RunRequest {
        optimize: driver::OPTIMIZE_BY_DEFAULT,
        entry,
        args: &args,
        grid: None,
        block,
        dynamic_shared: None,
        limits: Limits::default(),
    };
    let opts = NyuziRunOptions {
        timing: true,
        ..NyuziRunOptions::default()
    };
    let want =
        driver::run_on_interp(&front(src, false), &req).unwrap_or_else(|e| panic!("interp: {e:?}"));
    let on = run_on_nyuzi(&front(src, false), &req, &opts).unwrap_or_else(|e| panic!("{e:?}"));
    let off = run_on_nyuzi(&front(src, true), &req, &opts).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        on.buffers, want.buffers,
        "nyuzi differs from the interpreter"
    );
    assert_eq!(off.buffers, want.buffers, "--no-uniformity differs");
    (on, off)
}

/// A varying-typed counter and a varying-typed but uniform `if` inside a loop: the
/// counter's select and the `if`'s masks fold away.
const UNIFORM_IF: &str = "
export void k(uniform int n, uniform int out[]) {
    int acc = programIndex;
    for (int i = 0; i < n; i++) {
        int half = i / 2;
        if (half * 2 == i)
            acc += i;
        else
            acc -= 1;
    }
    out[programIndex] = acc;
}
";

#[test]
fn uniform_if_in_a_varying_counter_loop_matches_the_interpreter() {
    let (on, off) = check(UNIFORM_IF, "k", &["n=9", "out=zeros(16)"], None);
    assert!(count(&on, "vector_instructions") < count(&off, "vector_instructions"));
}

#[test]
fn partial_gangs_keep_exact_results() {
    // 12 threads: lanes 12..15 do not exist.
    check(UNIFORM_IF, "k", &["n=7", "out=zeros(16)"], Some("12"));
}

/// `f` runs with lane 0 off: its uniform masks must not be read from lane 0.
const LANE0_OFF: &str = "
noinline int f(int k) {
    int x = 0;
    for (int i = 0; i < k; i++)
        x += 2;
    return x;
}

export void k(uniform int n, uniform int out[]) {
    int r = -1;
    if (programIndex > 3)
        r = f(n);
    out[programIndex] = r;
}
";

#[test]
fn function_called_with_lane_0_off_matches_the_interpreter() {
    check(LANE0_OFF, "k", &["n=5", "out=zeros(16)"], None);
}

#[test]
fn row_sums_takes_vector_instructions_off_without_adding_cycles() {
    let src = include_str!("../../examples/row_sums.spmd");
    let (on, off) = check(
        src,
        "row_sums",
        &["nrows=16", "ncols=40", "m=range(640)", "out=zeros(40)"],
        None,
    );
    let (v_on, v_off) = (
        count(&on, "vector_instructions"),
        count(&off, "vector_instructions"),
    );
    assert!(4 * v_on <= 3 * v_off, "vector {v_on} vs {v_off}");
    let (c_on, c_off) = (count(&on, "cycles"), count(&off, "cycles"));
    assert!(c_on <= c_off, "cycles {c_on} vs {c_off}");
}
