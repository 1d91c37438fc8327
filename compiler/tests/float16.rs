//! `float16` on every target. On the reference interpreter, every program of
//! `tests/float16/` (ISPC-style, a test entry and `result`) is lowered at 16 and 32
//! lanes, verified, printed and parsed back to the same text, optimized (verified
//! again), and run; the test entry must write what `result` writes, bit for bit, before
//! and after optimization. On Nyuzi and dac-gpu, both entries of every program must
//! write the interpreter's bits, and so must the kernels of `data/float16_bits.spmd`:
//! every binary16 value widened to float and double and narrowed back, float and double
//! values at and next to every rounding boundary, NaN payloads, subnormals, values out
//! of binary16's range and signed zeros narrowed.

mod common;

use std::path::Path;

use common::launches::{compare, ispc_launches, run_error, LaunchSpec};
use common::{
    check_file, check_file_for, display_name, ispc, lower_result, render_all, spmd_files,
};
use spmdc::back::dac_gpu::run::{run_on_dac_gpu, DacRunOptions};
use spmdc::back::nyuzi::run::{run_on_nyuzi, NyuziRunOptions};
use spmdc::driver::{self, FrontResult, RunError, RunRequest, Stage};
use spmdc::front::sema::Target;
use spmdc::ir::{parse_module, verify_module, write, Module};
use spmdc::launch::RunResult;

/// `RET`'s first `lanes` words after running `name`.
fn run(module: &Module, name: &str, lanes: u32) -> Vec<u32> {
    let ret = ispc::run_entry(module, name, lanes, 20_000_000)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .ret;
    ispc::words(&ret).into_iter().take(lanes as usize).collect()
}

fn verified(module: &Module, what: &str) {
    if let Err(errors) = verify_module(module) {
        let list: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        panic!("{what} does not verify:\n{}", list.join("\n"));
    }
}

fn check_program(path: &std::path::Path, lanes: u32) {
    let name = format!("{} at {lanes} lanes", display_name(path));
    let result = check_file(path, Stage::Check);
    assert!(
        !result.diags.has_errors(),
        "{name}:\n{}",
        render_all(&result)
    );
    let mut module = lower_result(&result, lanes).unwrap_or_else(|e| panic!("{name}: {e}"));
    verified(&module, &name);
    let text = write::module_to_string(&module);
    let parsed = parse_module(&text).unwrap_or_else(|_| panic!("{name}: printed IR parses"));
    assert_eq!(write::module_to_string(&parsed), text, "{name}: round trip");
    let entry = ispc::test_entry(&module).expect("a test entry");
    let want = run(&module, "result", lanes);
    assert_eq!(run(&module, entry, lanes), want, "{name}: lowered");
    spmdc::passes::optimize(&mut module).unwrap_or_else(|e| panic!("{name}: {e}"));
    verified(&module, &name);
    assert_eq!(run(&module, entry, lanes), want, "{name}: optimized");
}

#[test]
fn float16_programs_pass_on_the_interpreter() {
    let files = spmd_files("tests/float16");
    assert!(files.len() >= 3, "expected the float16 programs");
    for path in &files {
        for lanes in [16, 32] {
            check_program(path, lanes);
        }
    }
}

/// Instructions per launch before a run is stopped.
const MAX_STEPS: u64 = 200_000_000;

/// A back end: its gang shape and how it runs a launch.
struct BackEnd {
    name: &'static str,
    shape: Target,
    run: fn(&FrontResult, &RunRequest) -> Result<RunResult, RunError>,
}

const NYUZI: BackEnd = BackEnd {
    name: "nyuzi",
    shape: Target {
        program_count: 16,
        pointer_size: 4,
    },
    run: |front, req| run_on_nyuzi(front, req, &NyuziRunOptions::default()),
};

const DAC_GPU: BackEnd = BackEnd {
    name: "dac-gpu",
    shape: common::DAC_GPU,
    run: |front, req| run_on_dac_gpu(front, req, &DacRunOptions::default()),
};

/// `spec` on `target` and on the interpreter (at the target's gang shape): `Err`
/// names the first difference.
fn differential(
    target: &BackEnd,
    front: &FrontResult,
    spec: &LaunchSpec,
) -> Result<RunResult, String> {
    let req = spec.request(MAX_STEPS);
    let want = driver::run_on_interp(front, &req).map_err(|e| run_error(e, front))?;
    let got = (target.run)(front, &req).map_err(|e| run_error(e, front))?;
    compare(target.name, &want, &got)?;
    Ok(got)
}

/// Every program of `tests/float16/`: both entries write the interpreter's bits on
/// `target`, and the test entry writes what `result` writes.
fn programs_match(target: &BackEnd) {
    for path in spmd_files("tests/float16") {
        let name = format!("{} on {}", display_name(&path), target.name);
        let front = check_file_for(&path, target.shape);
        let launches = ispc_launches(&front).unwrap_or_else(|e| panic!("{name}: {e}"));
        let runs: Vec<RunResult> = launches
            .iter()
            .map(|spec| differential(target, &front, spec))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        compare("the test entry", &runs[1], &runs[0]).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// The kernels of `data/float16_bits.spmd` write the interpreter's bits on `target`.
fn conversion_bits_match(target: &BackEnd) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/float16_bits.spmd");
    let front = check_file_for(&path, target.shape);
    assert!(!front.diags.has_errors(), "{}", render_all(&front));
    let launches: [(&str, &[&str]); 3] = [
        (
            "widen",
            &[
                "wide=zeros(65536)",
                "wide64=zeros(65536)",
                "back=zeros(65536)",
            ],
        ),
        ("narrow", &["out=zeros(253944)"]),
        ("specials", &["out=zeros(16384)"]),
    ];
    for (entry, args) in launches {
        let spec = LaunchSpec {
            entry: entry.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            grid: None,
            block: None,
            dynamic_shared: None,
        };
        differential(target, &front, &spec)
            .unwrap_or_else(|e| panic!("{entry} on {}: {e}", target.name));
    }
}

#[test]
fn float16_programs_match_the_interpreter_on_nyuzi() {
    programs_match(&NYUZI);
}

#[test]
fn float16_programs_match_the_interpreter_on_dac_gpu() {
    programs_match(&DAC_GPU);
}

#[test]
fn conversion_bits_match_the_interpreter_on_nyuzi() {
    conversion_bits_match(&NYUZI);
}

#[test]
fn conversion_bits_match_the_interpreter_on_dac_gpu() {
    conversion_bits_match(&DAC_GPU);
}

/// The interpreter's conversions are `sim::fp16`'s (tested exhaustively there): the
/// reference the back ends are held to.
#[test]
fn interpreter_conversions_are_the_binary16_module() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/float16_bits.spmd");
    let front = check_file(&path, Stage::Check);
    let spec = LaunchSpec {
        entry: "widen".into(),
        args: [
            "wide=zeros(65536)",
            "wide64=zeros(65536)",
            "back=zeros(65536)",
        ]
        .map(String::from)
        .to_vec(),
        grid: None,
        block: None,
        dynamic_shared: None,
    };
    let got = driver::run_on_interp(&front, &spec.request(MAX_STEPS)).expect("runs");
    let words = |i: usize| ispc::words(got.buffers[i].1.bytes());
    let (wide, back) = (words(0), words(2));
    for h in 0..=0xffffu16 {
        let f = sim::fp16::f32_from_f16(h);
        assert_eq!(wide[h as usize], f.to_bits(), "{h:#06x}");
        assert_eq!(back[h as usize], u32::from(h) * 0x1_0001, "{h:#06x}");
    }
}
