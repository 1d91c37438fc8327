//! `new` and `delete` misuse stops the launch on every target: an allocation the heap
//! cannot hold traps `heap_exhausted`, and a second `delete` of one pointer (or a
//! `delete` of a pointer into the middle of an allocation) traps `bad_delete`, at the
//! program's line, for uniform and varying pointers alike; lanes that are off neither
//! allocate nor free.

mod common;

use common::launches::LaunchSpec;

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

/// `mode` picks the misuse: 0 none, 1 a uniform allocation past the heap, 2 a varying
/// one past the heap in lane 3 only, 3 a uniform double delete, 4 a varying double
/// delete in lane 5 only, 5 a delete of a pointer into an allocation, 6 as 2 but with
/// lane 3 off.
const KERNEL: &str = r#"
export void heap(uniform float out[], uniform int mode) {
    uniform float * uniform u = uniform new uniform float[programCount];
    int * v = new int[programIndex + 1];
    u[programIndex] = programIndex;
    v[programIndex] = 2 * programIndex;
    out[programIndex] = u[programIndex] + v[programIndex];
    if (mode == 1) {
        uniform int8 * uniform big = uniform new uniform int8[5 << 20];
        big[0] = 1;
    }
    if (mode == 2 || mode == 6) {
        int n = programIndex == 3 ? 5 << 20 : 4;
        if (mode == 2 || programIndex != 3) {
            int8 * b = new int8[n];
            b[0] = 1;
        }
    }
    if (mode == 5) {
        delete u + 1;
    }
    delete[] u;
    if (mode == 3) {
        delete[] u;
    }
    delete v;
    if (mode == 4 && programIndex == 5) {
        delete v;
    }
}
"#;

#[allow(clippy::result_large_err)] // the driver's shared error type
type Runner = fn(&FrontResult, &LaunchSpec) -> Result<RunResult, RunError>;

#[allow(clippy::result_large_err)]
fn on_interp(front: &FrontResult, spec: &LaunchSpec) -> Result<RunResult, RunError> {
    driver::run_on_interp(front, &spec.request(MAX_STEPS))
}

#[allow(clippy::result_large_err)]
fn on_nyuzi(front: &FrontResult, spec: &LaunchSpec) -> Result<RunResult, RunError> {
    nyuzi::run_on_nyuzi(front, &spec.request(MAX_STEPS), &NyuziRunOptions::default())
}

#[allow(clippy::result_large_err)]
fn on_dac_gpu(front: &FrontResult, spec: &LaunchSpec) -> Result<RunResult, RunError> {
    dac::run_on_dac_gpu(front, &spec.request(MAX_STEPS), &DacRunOptions::default())
}

/// Every target, with the sema target it compiles for.
fn targets() -> [(&'static str, Target, Runner); 4] {
    [
        ("interp", NYUZI, on_interp),
        ("interp-32", common::DAC_GPU, on_interp),
        ("nyuzi", NYUZI, on_nyuzi),
        ("dac-gpu", common::DAC_GPU, on_dac_gpu),
    ]
}

fn front_for(target: Target) -> FrontResult {
    let front = common::check_source_for("heap.spmd", KERNEL, target);
    assert!(!front.diags.has_errors(), "{}", common::render_all(&front));
    front
}

fn launch(mode: i32) -> LaunchSpec {
    LaunchSpec {
        entry: "heap".into(),
        args: vec!["out=zeros(32)".into(), format!("mode={mode}")],
        grid: None,
        block: None,
        dynamic_shared: None,
    }
}

fn floats(r: &RunResult, name: &str) -> Vec<f32> {
    let (_, buf) = r
        .buffers
        .iter()
        .find(|(n, _)| n == name)
        .expect("the buffer is in the result");
    buf.bytes()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn allocations_that_fit_and_deletes_that_match_run_on_every_target() {
    for mode in [0, 6] {
        for (name, target, run) in targets() {
            let front = front_for(target);
            let r = run(&front, &launch(mode)).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let out = floats(&r, "out");
            for (i, &got) in out.iter().enumerate().take(target.program_count as usize) {
                assert_eq!(got, 3.0 * i as f32, "{name} mode {mode}: lane {i}");
            }
        }
    }
}

/// The runtime error of a launch that must trap.
fn trap_message(name: &str, front: &FrontResult, run: Runner, s: &LaunchSpec) -> String {
    match run(front, s) {
        Err(RunError::Trap(t)) => format!("{}\n{}", t.message, t.render(&front.sources)),
        other => panic!("{name} {:?}: expected a trap, got {other:?}", s.args),
    }
}

fn traps_on_every_target(modes: &[i32], message: &str) {
    for &mode in modes {
        for (name, target, run) in targets() {
            let front = front_for(target);
            let text = trap_message(name, &front, run, &launch(mode));
            // Nyuzi's trap is a `break` instruction: the machine says the kernel trapped.
            let expected = if name == "nyuzi" {
                "the kernel trapped"
            } else {
                message
            };
            assert!(text.contains(expected), "{name} mode {mode}: {text}");
            assert!(text.contains("heap.spmd:"), "{name} mode {mode}: {text}");
        }
    }
}

#[test]
fn an_allocation_past_the_heap_traps_on_every_target() {
    traps_on_every_target(&[1, 2], "the heap (4 MiB) cannot hold the allocation");
}

#[test]
fn a_double_delete_or_a_pointer_into_an_allocation_traps_on_every_target() {
    traps_on_every_target(&[3, 4, 5], "not the start of a live allocation");
}
