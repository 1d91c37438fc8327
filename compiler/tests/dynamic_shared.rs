//! Dynamic shared memory: the unsized `shared` array, sized by the launch
//! (`--dynamic-shared BYTES`). Kernels that use it give the interpreter's exact
//! results on `nyuzi` and `dac-gpu` (each compared with the interpreter run for the
//! same target: 16 lanes and 4-byte pointers, or 32 lanes and 8-byte pointers), and
//! an index past the launch's bytes stops the launch on every target.

mod common;

use common::launches::*;

use spmdc::back::dac_gpu::run::{self as dac, DacRunOptions};
use spmdc::back::nyuzi::run::{self as nyuzi, NyuziRunOptions};
use spmdc::driver::{self, FrontResult, RunError};
use spmdc::front::sema::Target;
use spmdc::launch::RunResult;

const MAX_STEPS: u64 = 50_000_000;

const NYUZI: Target = Target {
    program_count: 16,
    pointer_size: 4,
};

/// A static `shared` array beside the dynamic one (which must come after it).
const REVERSE: &str = r#"
// Reverses each block's chunk, scaled by a factor kept in static shared memory.
task void reverse_scaled(uniform int data[], uniform int n) {
    shared int factor[3];
    shared int tile[];
    int t = threadIdx.x;
    uniform int base = blockIdx.x * blockDim.x;
    factor[0] = 3;
    if (base + t < n) {
        tile[t] = data[base + t];
    }
    barrier();
    if (base + t < n) {
        data[base + t] = tile[blockDim.x - 1 - t] * factor[0];
    }
}
"#;

/// A dynamic array read through a pointer at its second half.
const DOTS: &str = r#"
// Two tiles in one dynamic array: x in the first blockDim.x floats, y after them.
task void row_dots(uniform float x[], uniform float y[], uniform float out[]) {
    shared float buf[];
    uniform float * uniform ys = &buf[blockDim.x];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    buf[t] = x[i];
    ys[t] = y[i];
    barrier();
    uniform float sum = 0;
    for (uniform int k = 0; k < blockDim.x; k++) {
        sum += buf[k] * ys[k];
    }
    out[blockIdx.x] = sum;
}
"#;

/// A dynamic array that a uniform or a varying index may overrun.
const POKE: &str = r#"
// Writes element `at` (uniform) of the dynamic array, or element `threadIdx.x +
// shift` (varying) of each thread.
task void poke(uniform int out[], uniform int at, uniform int shift) {
    shared int d[];
    d[at] = 7;
    d[threadIdx.x + shift] = threadIdx.x;
    barrier();
    out[threadIdx.x] = d[threadIdx.x];
}
"#;

/// The program that defines `entry`.
fn source_of(entry: &str) -> &'static str {
    match entry {
        "reverse_scaled" => REVERSE,
        "row_dots" => DOTS,
        _ => POKE,
    }
}

fn front_for(entry: &str, target: Target) -> FrontResult {
    let front = common::check_source_for("dynamic.spmd", source_of(entry), target);
    assert!(!front.diags.has_errors(), "{}", common::render_all(&front));
    front
}

fn spec(entry: &str, args: &[&str], grid: &str, block: &str, bytes: u32) -> LaunchSpec {
    LaunchSpec {
        entry: entry.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        grid: Some(grid.into()),
        block: Some(block.into()),
        dynamic_shared: Some(bytes.to_string()),
    }
}

/// The launches that stay in bounds.
fn good_launches() -> Vec<LaunchSpec> {
    vec![
        spec(
            "reverse_scaled",
            &["data=range(200)", "n=200"],
            "3",
            "70",
            280,
        ),
        spec(
            "reverse_scaled",
            &["data=range(64)", "n=64"],
            "1",
            "64",
            4096,
        ),
        spec(
            "row_dots",
            &["x=range(256)", "y=range(256,1,0.5)", "out=zeros(4)"],
            "4",
            "64",
            512,
        ),
        spec(
            "poke",
            &["out=zeros(48)", "at=47", "shift=0"],
            "2",
            "48",
            192,
        ),
    ]
}

fn interp(front: &FrontResult, spec: &LaunchSpec) -> Result<RunResult, RunError> {
    driver::run_on_interp(front, &spec.request(MAX_STEPS))
}

fn on_nyuzi(front: &FrontResult, spec: &LaunchSpec) -> Result<RunResult, RunError> {
    nyuzi::run_on_nyuzi(front, &spec.request(MAX_STEPS), &NyuziRunOptions::default())
}

fn on_dac_gpu(front: &FrontResult, spec: &LaunchSpec) -> Result<RunResult, RunError> {
    dac::run_on_dac_gpu(front, &spec.request(MAX_STEPS), &DacRunOptions::default())
}

type Runner = fn(&FrontResult, &LaunchSpec) -> Result<RunResult, RunError>;

/// The machine targets, with the sema target their interpreter runs use.
fn targets() -> [(&'static str, Target, Runner); 2] {
    [
        ("nyuzi", NYUZI, on_nyuzi),
        ("dac-gpu", common::DAC_GPU, on_dac_gpu),
    ]
}

#[test]
fn the_dynamic_array_agrees_with_the_interpreter_on_every_target() {
    for (name, target, run) in targets() {
        for s in good_launches() {
            let front = front_for(&s.entry, target);
            let label = format!("{name} {} {:?}", s.entry, s.dynamic_shared);
            let want = interp(&front, &s).unwrap_or_else(|e| panic!("{label}: interp {e:?}"));
            let got = run(&front, &s).unwrap_or_else(|e| panic!("{label}: {e:?}"));
            compare(name, &want, &got).unwrap_or_else(|e| panic!("{label}: {e}"));
        }
    }
}

/// The reversal really went through the launch-sized tile: a hand-computed result.
#[test]
fn the_reversal_is_what_it_should_be() {
    let front = front_for("reverse_scaled", common::DAC_GPU);
    let s = spec("reverse_scaled", &["data=range(8)", "n=8"], "2", "4", 16);
    let r = interp(&front, &s).expect("runs");
    let data = r.buffers.iter().find(|(n, _)| n == "data").expect("data");
    let words: Vec<i32> = data
        .1
        .bytes()
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(words, [9, 6, 3, 0, 21, 18, 15, 12]);
}

/// What a run that should trap said.
fn trap_message(front: &FrontResult, run: Runner, s: &LaunchSpec) -> String {
    match run(front, s) {
        Err(RunError::Trap(t)) => t.message,
        other => panic!("{} {:?}: expected a trap, got {other:?}", s.entry, s.args),
    }
}

#[test]
fn an_index_past_the_launch_bytes_traps_on_every_target() {
    let bad = [
        // Element 48 of 48: the uniform index is one past the end.
        spec(
            "poke",
            &["out=zeros(48)", "at=48", "shift=0"],
            "1",
            "48",
            192,
        ),
        // Negative.
        spec(
            "poke",
            &["out=zeros(48)", "at=-1", "shift=0"],
            "1",
            "48",
            192,
        ),
        // Only the last thread's varying index is past the end.
        spec(
            "poke",
            &["out=zeros(48)", "at=0", "shift=1"],
            "1",
            "48",
            192,
        ),
        // No dynamic shared memory at all.
        spec("poke", &["out=zeros(48)", "at=0", "shift=0"], "1", "48", 0),
    ];
    let interp_run: Runner = interp;
    for (name, target, run) in targets() {
        let front = front_for("poke", target);
        for s in &bad {
            let want = trap_message(&front, interp_run, s);
            assert!(want.contains("dynamic `shared` array"), "interp: {want}");
            let got = trap_message(&front, run, s);
            assert!(
                got.contains("dynamic `shared` array"),
                "{name} {:?}: {got}",
                s.args
            );
        }
    }
}

/// A bad `--dynamic-shared` is a launch error; a dac-gpu program compiled for other
/// dynamic bytes than the launch gives is refused rather than run with a layout
/// that does not match.
#[test]
fn launch_sizes_are_checked() {
    let front = front_for("poke", common::DAC_GPU);
    let mut s = spec("poke", &["out=zeros(48)", "at=0", "shift=0"], "1", "48", 0);
    s.dynamic_shared = Some("lots".into());
    assert!(matches!(interp(&front, &s), Err(RunError::Launch(_))));
    s.dynamic_shared = Some("192".into());
    let compiled = dac::compile(
        &front,
        driver::OPTIMIZE_BY_DEFAULT,
        &spmdc::back::dac_gpu::Options::default(),
    )
    .expect("compiles");
    let refused = dac::run_compiled(
        &front,
        &compiled,
        &s.request(MAX_STEPS),
        &DacRunOptions::default(),
    );
    match refused {
        Err(RunError::Launch(e)) => assert!(e[0].message.contains("compiled for 0 bytes")),
        other => panic!("expected a launch error, got {other:?}"),
    }
}

/// On the dac-gpu the dynamic bytes are part of the kernel's `.shared`, after the
/// static variables, so occupancy counts them.
#[test]
fn dac_gpu_shared_bytes_count_the_dynamic_array() {
    let front = front_for("reverse_scaled", common::DAC_GPU);
    let shared_of = |bytes: u32| {
        let options = spmdc::back::dac_gpu::Options {
            dynamic_shared: bytes,
            ..Default::default()
        };
        let c = dac::compile(&front, driver::OPTIMIZE_BY_DEFAULT, &options).expect("compiles");
        c.program
            .kernel("reverse_scaled")
            .expect("kernel")
            .shared_bytes
    };
    // `factor` takes 12 bytes; the dynamic array starts at 12.
    assert_eq!(shared_of(0), 16);
    assert_eq!(shared_of(1000), 1016);
}
