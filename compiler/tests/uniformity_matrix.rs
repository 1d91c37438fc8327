//! The issue-6 switch matrix (and `--unroll`): every example launch and every conformance program gives
//! the same buffers and return values with each switch on as the interpreter gives with
//! the default compiler, on the interpreter itself (the switched pass pipeline) and on
//! both targets (nyuzi at programCount 16, dac-gpu at 32).
//!
//! The switches off are the default compiler, which `tests/nyuzi.rs` and
//! `tests/dac_gpu.rs` already check against the interpreter; here each switch is on
//! alone, one test per switch and target (ten tests), reusing `common::launches` with a
//! [`BackEnd`] whose front end carries the switch (`FrontResult::switches`, read by the
//! driver's lowering for the interpreter and for the back ends alike).

mod common;

use std::path::Path;

use common::launches::*;
use spmdc::back::dac_gpu::run::{self as dac, DacRunOptions};
use spmdc::back::nyuzi::image::MachineShape;
use spmdc::back::nyuzi::run::{self as nyuzi, NyuziRunOptions};
use spmdc::driver::{self, FrontOptions, FrontResult, Stage};
use spmdc::front::sema;
use spmdc::launch::RunResult;
use spmdc::passes::Switches;

const MAX_STEPS: u64 = 100_000_000;

/// `--no-uniformity`.
const NO_UNIFORMITY: u8 = 1;
/// `--no-skip-empty`.
const NO_SKIP_EMPTY: u8 = 2;
/// `--force-cfg-opts`.
const FORCE_CFG_OPTS: u8 = 4;
/// `--no-scalar-datapath` (which implies `--no-uniformity`, as on the command line).
const NO_SCALAR_DATAPATH: u8 = 8;
/// `--unroll`.
const UNROLL: u8 = 16;

fn switches(bits: u8) -> Switches {
    Switches {
        no_uniformity: bits & (NO_UNIFORMITY | NO_SCALAR_DATAPATH) != 0,
        no_skip_empty: bits & NO_SKIP_EMPTY != 0,
        force_cfg_opts: bits & FORCE_CFG_OPTS != 0,
        no_scalar_datapath: bits & NO_SCALAR_DATAPATH != 0,
        unroll: bits & UNROLL != 0,
        ..Switches::default()
    }
}

fn front_with(path: &Path, target: sema::Target, bits: u8) -> FrontResult {
    let text = std::fs::read_to_string(path).expect("readable program");
    let options = FrontOptions {
        target,
        ..FrontOptions::default()
    };
    let name = common::display_name(path);
    let mut front = driver::run_front(
        &name,
        Some(path.to_path_buf()),
        text,
        &options,
        Stage::Check,
    );
    front.switches = switches(bits);
    front
}

/// The reference (the interpreter, default compiler) and the interpreter with the
/// front end's switches, which must agree.
fn reference(front: &FrontResult, spec: &LaunchSpec) -> Result<RunResult, String> {
    let req = spec.request(MAX_STEPS);
    let module = driver::lower_front_with_switches(front, true, &Switches::default())
        .map_err(|e| format!("interp: {e:?}"))?;
    let want = driver::run_module_on_interp(front, &module, &req)
        .map_err(|e| format!("interp failed: {}", run_error(e, front)))?;
    let switched = driver::run_on_interp(front, &req)
        .map_err(|e| format!("switched interp failed: {}", run_error(e, front)))?;
    compare("switched interp", &want, &switched)?;
    Ok(want)
}

/// Nyuzi with the switches in `SW`.
struct NyuziWith<const SW: u8>;

impl<const SW: u8> BackEnd for NyuziWith<SW> {
    type Compiled = (spmdc::ir::Module, spmdc::back::nyuzi::object::Object);
    const NAME: &'static str = "nyuzi";
    const KNOWN: &'static [(&'static str, &'static str, &'static str)] = &[];
    fn front_of(path: &Path) -> FrontResult {
        let target = sema::Target {
            program_count: 16,
            pointer_size: 4,
        };
        front_with(path, target, SW)
    }
    fn compile(front: &FrontResult) -> Result<Self::Compiled, String> {
        nyuzi::compile(front, true).map_err(|e| run_error(e, front))
    }
    fn differential(
        front: &FrontResult,
        compiled: &Result<Self::Compiled, String>,
        spec: &LaunchSpec,
    ) -> Result<RunResult, String> {
        let want = reference(front, spec)?;
        let (module, object) = compiled.as_ref()?;
        let opts = NyuziRunOptions::default();
        let req = spec.request(MAX_STEPS);
        let shape = MachineShape::default();
        let mut built = nyuzi::prepare(front, &req)
            .and_then(|l| nyuzi::place(l, module.clone(), object.clone(), shape, &opts.image))
            .map_err(|e| run_error(e, front))?;
        let got =
            nyuzi::run_built(&mut built, MAX_STEPS, &opts).map_err(|e| run_error(e, front))?;
        compare("nyuzi", &want, &got)?;
        Ok(got)
    }
}

/// The dac-gpu with the switches in `SW`.
struct DacWith<const SW: u8>;

impl<const SW: u8> BackEnd for DacWith<SW> {
    type Compiled = spmdc::back::dac_gpu::Compiled;
    const NAME: &'static str = "dac-gpu";
    const KNOWN: &'static [(&'static str, &'static str, &'static str)] = &[];
    fn front_of(path: &Path) -> FrontResult {
        let target = sema::Target {
            program_count: 32,
            pointer_size: 8,
        };
        front_with(path, target, SW)
    }
    fn compile(front: &FrontResult) -> Result<Self::Compiled, String> {
        // The code generator's use of the analysis is its own option.
        let options = spmdc::back::dac_gpu::Options {
            uniformity: !front.switches.no_uniformity,
            ..Default::default()
        };
        dac::compile(front, true, &options).map_err(|e| run_error(e, front))
    }
    fn differential(
        front: &FrontResult,
        compiled: &Result<Self::Compiled, String>,
        spec: &LaunchSpec,
    ) -> Result<RunResult, String> {
        let want = reference(front, spec)?;
        let req = spec.request(MAX_STEPS);
        let got = dac::run_compiled(front, compiled.as_ref()?, &req, &DacRunOptions::default())
            .map_err(|e| run_error(e, front))?;
        compare("dac-gpu", &want, &got)?;
        Ok(got)
    }
}

/// Every example launch and every conformance program on `B`.
fn matrix<B: BackEnd>() {
    examples_match::<B>();
    let failures = ispc_failures::<B>("tests/conformance", (0, 1));
    check_known(B::NAME, B::KNOWN, failures, |l| {
        l.starts_with("tests/conformance/")
    });
}

#[test]
fn nyuzi_no_uniformity() {
    matrix::<NyuziWith<NO_UNIFORMITY>>();
}

#[test]
fn nyuzi_no_skip_empty() {
    matrix::<NyuziWith<NO_SKIP_EMPTY>>();
}

#[test]
fn nyuzi_force_cfg_opts() {
    matrix::<NyuziWith<FORCE_CFG_OPTS>>();
}

#[test]
fn nyuzi_no_scalar_datapath() {
    matrix::<NyuziWith<NO_SCALAR_DATAPATH>>();
}

#[test]
fn nyuzi_unroll() {
    matrix::<NyuziWith<UNROLL>>();
}

#[test]
fn dac_gpu_no_uniformity() {
    matrix::<DacWith<NO_UNIFORMITY>>();
}

#[test]
fn dac_gpu_no_skip_empty() {
    matrix::<DacWith<NO_SKIP_EMPTY>>();
}

#[test]
fn dac_gpu_force_cfg_opts() {
    matrix::<DacWith<FORCE_CFG_OPTS>>();
}

#[test]
fn dac_gpu_no_scalar_datapath() {
    matrix::<DacWith<NO_SCALAR_DATAPATH>>();
}

#[test]
fn dac_gpu_unroll() {
    matrix::<DacWith<UNROLL>>();
}

/// `examples/uniformity_demo.spmd` (docs/uniformity.md, "Divergence and the
/// code-duplicating CFG transforms"): the dynamic instruction counts of one launch on the interpreter
/// (gang instructions) and on the dac-gpu (warp instructions) under `bits`, with the
/// output checked against the default interpreter.
fn demo_counts(entry: &str, extra: &[&str], bits: u8) -> (u64, u64) {
    let path = common::repo_root().join("examples/uniformity_demo.spmd");
    let mut args = vec!["n=1024", "out=zeros(1024)"];
    args.extend(extra);
    let spec = LaunchSpec {
        entry: entry.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        grid: Some("4".into()),
        block: Some("256".into()),
        dynamic_shared: None,
    };
    let count = |r: &RunResult| match r.stats.get("dynamic_instructions") {
        Some(spmdc::launch::StatValue::Count(n)) => n,
        other => panic!("{entry}: dynamic_instructions {other:?}"),
    };
    let front = <DacWith<0>>::front_of(&path);
    let mut switched = <DacWith<0>>::front_of(&path);
    switched.switches = switches(bits);
    let want = reference(&front, &spec).unwrap();
    let interp = driver::run_on_interp(&switched, &spec.request(MAX_STEPS)).unwrap();
    let compiled = <DacWith<0>>::compile(&switched);
    let req = spec.request(MAX_STEPS);
    let gpu = dac::run_compiled(
        &switched,
        compiled.as_ref().unwrap(),
        &req,
        &Default::default(),
    )
    .unwrap();
    compare("dac-gpu", &want, &gpu).unwrap();
    (count(&interp), count(&gpu))
}

#[test]
fn demo_forced_unswitching_of_a_divergent_branch_costs_and_of_a_uniform_one_pays() {
    let default = demo_counts("divergent_branch", &["steps=64"], 0);
    let forced = demo_counts("divergent_branch", &["steps=64"], FORCE_CFG_OPTS);
    assert!(
        forced.0 > default.0 && forced.1 > default.1,
        "{forced:?} {default:?}"
    );
    let unswitched = demo_counts("uniform_branch", &["steps=64", "mode=1"], 0);
    let typed = demo_counts("uniform_branch", &["steps=64", "mode=1"], NO_UNIFORMITY);
    assert!(
        unswitched.0 < typed.0 && unswitched.1 < typed.1,
        "{unswitched:?} {typed:?}"
    );
}

/// Issue 6's demonstration with jump threading (paper 002's example): threading the
/// re-test of a divergent condition runs both paths and the code between the tests
/// twice; of a uniform condition, one path without the second test.
#[test]
fn demo_forced_threading_of_a_divergent_branch_costs_and_of_a_uniform_one_pays() {
    let default = demo_counts("divergent_thread", &[], 0);
    let forced = demo_counts("divergent_thread", &[], FORCE_CFG_OPTS);
    assert!(
        forced.0 > default.0 && forced.1 > default.1,
        "{forced:?} {default:?}"
    );
    for mode in ["mode=1", "mode=0"] {
        let threaded = demo_counts("uniform_thread", &[mode], 0);
        let typed = demo_counts("uniform_thread", &[mode], NO_UNIFORMITY);
        assert!(
            threaded.0 < typed.0 && threaded.1 < typed.1,
            "{mode}: {threaded:?} {typed:?}"
        );
    }
}
