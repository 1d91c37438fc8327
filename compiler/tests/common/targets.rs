//! Running one launch on every target: the interpreter at 16 and 32 lanes, `nyuzi`
//! and `dac-gpu`, each compiled for its own shape, and reading what a run gives back
//! (a buffer of floats, or the text of the runtime error that stopped it).

use super::launches::LaunchSpec;

use spmdc::back::dac_gpu::run::{self as dac, DacRunOptions};
use spmdc::back::nyuzi::run::{self as nyuzi, NyuziRunOptions};
use spmdc::driver::{self, FrontResult, RunError};
use spmdc::front::sema::Target;
use spmdc::launch::RunResult;

/// Nyuzi's shape: 16 lanes, 32-bit pointers.
pub const NYUZI: Target = Target {
    program_count: 16,
    pointer_size: 4,
};

/// Runs a checked program's launch, stopped after the given number of steps.
pub type Runner = fn(&FrontResult, &LaunchSpec, u64) -> Result<RunResult, RunError>;

fn on_interp(front: &FrontResult, spec: &LaunchSpec, steps: u64) -> Result<RunResult, RunError> {
    driver::run_on_interp(front, &spec.request(steps))
}

fn on_nyuzi(front: &FrontResult, spec: &LaunchSpec, steps: u64) -> Result<RunResult, RunError> {
    nyuzi::run_on_nyuzi(front, &spec.request(steps), &NyuziRunOptions::default())
}

fn on_dac_gpu(front: &FrontResult, spec: &LaunchSpec, steps: u64) -> Result<RunResult, RunError> {
    dac::run_on_dac_gpu(front, &spec.request(steps), &DacRunOptions::default())
}

/// Every target, with the sema target it compiles for.
pub fn targets() -> [(&'static str, Target, Runner); 4] {
    [
        ("interp", NYUZI, on_interp),
        ("interp-32", super::DAC_GPU, on_interp),
        ("nyuzi", NYUZI, on_nyuzi),
        ("dac-gpu", super::DAC_GPU, on_dac_gpu),
    ]
}

/// Buffer `name` of a run, read as floats.
pub fn floats(r: &RunResult, name: &str) -> Vec<f32> {
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

/// The message and rendering of the runtime error of a launch that must trap.
pub fn trap_message(
    name: &str,
    front: &FrontResult,
    run: Runner,
    s: &LaunchSpec,
    steps: u64,
) -> String {
    match run(front, s, steps) {
        Err(RunError::Trap(t)) => format!("{}\n{}", t.message, t.render(&front.sources)),
        other => panic!("{name} {:?}: expected a trap, got {other:?}", s.args),
    }
}
