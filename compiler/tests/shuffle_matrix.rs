//! `--shuffle=all` on the dac-gpu and on nyuzi: every example launch and every
//! conformance program gives the interpreter's buffers and return values bit for bit
//! (on the dac-gpu with DAC off, where every pair becomes a shuffle, and on, where
//! prefetched loads stay loads); and the stencils do so on block shapes with partial
//! warps and gangs and rows narrower than a warp or a gang, with their shuffles really
//! in the code.

mod common;

use std::path::Path;

use common::launches::*;
use spmdc::back::dac_gpu::run::{self as dac, DacRunOptions};
use spmdc::back::dac_gpu::Options;
use spmdc::back::nyuzi::run::{self as nyuzi, NyuziRunOptions};
use spmdc::driver::{self, FrontResult};
use spmdc::front::sema;
use spmdc::launch::RunResult;

const MAX_STEPS: u64 = 100_000_000;

const TARGET: sema::Target = sema::Target {
    program_count: 32,
    pointer_size: 8,
};

fn options(decouple: bool) -> Options {
    Options {
        shuffle: true,
        dac: decouple,
        ..Default::default()
    }
}

/// The dac-gpu with `--shuffle=all`, DAC on or off.
struct Shuffled<const DAC: bool>;

impl<const DAC: bool> BackEnd for Shuffled<DAC> {
    type Compiled = spmdc::back::dac_gpu::Compiled;
    const NAME: &'static str = "dac-gpu";
    const KNOWN: &'static [(&'static str, &'static str, &'static str)] = &[];
    fn front_of(path: &Path) -> FrontResult {
        common::check_file_for(path, TARGET)
    }
    fn compile(front: &FrontResult) -> Result<Self::Compiled, String> {
        dac::compile(front, true, &options(DAC)).map_err(|e| run_error(e, front))
    }
    fn differential(
        front: &FrontResult,
        compiled: &Result<Self::Compiled, String>,
        spec: &LaunchSpec,
    ) -> Result<RunResult, String> {
        let req = spec.request(MAX_STEPS);
        let want = driver::run_on_interp(front, &req).map_err(|e| run_error(e, front))?;
        let got = dac::run_compiled(front, compiled.as_ref()?, &req, &DacRunOptions::default())
            .map_err(|e| run_error(e, front))?;
        compare("dac-gpu --shuffle=all", &want, &got)?;
        Ok(got)
    }
}

const NYUZI: sema::Target = sema::Target {
    program_count: 16,
    pointer_size: 4,
};

/// Nyuzi with `--shuffle=all`.
struct NyuziShuffled;

impl BackEnd for NyuziShuffled {
    type Compiled = (spmdc::ir::Module, spmdc::back::nyuzi::object::Object);
    const NAME: &'static str = "nyuzi";
    const KNOWN: &'static [(&'static str, &'static str, &'static str)] = &[];
    fn front_of(path: &Path) -> FrontResult {
        let mut front = common::check_file_for(path, NYUZI);
        front.switches.shuffle = true;
        front
    }
    fn compile(front: &FrontResult) -> Result<Self::Compiled, String> {
        nyuzi::compile(front, true).map_err(|e| run_error(e, front))
    }
    fn differential(
        front: &FrontResult,
        compiled: &Result<Self::Compiled, String>,
        spec: &LaunchSpec,
    ) -> Result<RunResult, String> {
        let req = spec.request(MAX_STEPS);
        let want = driver::run_on_interp(front, &req).map_err(|e| run_error(e, front))?;
        let (module, object) = compiled.as_ref()?;
        let opts = NyuziRunOptions::default();
        let mut built = nyuzi::prepare(front, &req)
            .and_then(|l| {
                nyuzi::place(l, module.clone(), object.clone(), opts.machine, &opts.image)
            })
            .map_err(|e| run_error(e, front))?;
        let got = nyuzi::run_built(&mut built, req.limits.max_steps, &opts)
            .map_err(|e| run_error(e, front))?;
        compare("nyuzi --shuffle=all", &want, &got)?;
        Ok(got)
    }
}

#[test]
fn examples_match_on_nyuzi() {
    examples_match::<NyuziShuffled>();
}

#[test]
fn conformance_matches_on_nyuzi() {
    let failures = ispc_failures::<NyuziShuffled>("tests/conformance", (0, 1));
    check_known("nyuzi", &[], failures, |l| {
        l.starts_with("tests/conformance/")
    });
}

#[test]
fn examples_match_without_dac() {
    examples_match::<Shuffled<false>>();
}

#[test]
fn examples_match_with_dac() {
    examples_match::<Shuffled<true>>();
}

#[test]
fn conformance_matches_without_dac() {
    let failures = ispc_failures::<Shuffled<false>>("tests/conformance", (0, 1));
    check_known("dac-gpu", &[], failures, |l| {
        l.starts_with("tests/conformance/")
    });
}

/// The shuffles in the selected code of `file`'s kernels (DAC off).
fn static_shuffles(front: &FrontResult) -> usize {
    let compiled = dac::compile(front, true, &options(false)).expect("compiles");
    let text = spmdc::back::dac_gpu::listing(&compiled, None);
    text.lines()
        .filter(|l| l.contains("shfl.up") || l.contains("shfl.down"))
        .count()
}

/// The stencils on random fields, on blocks whose warps are partial (24 x 3: 72
/// threads, the third warp has 8 lanes) and whose rows are narrower than a warp
/// (8 x 8, 16 x 4, 24 x 3): the row and edge reloads keep every lane exact.
#[test]
fn stencils_match_on_partial_warps_and_narrow_rows() {
    let root = common::repo_root();
    let cases: [(&str, &str, &[&str], usize); 3] = [
        (
            "examples/jacobi2d_gpu.spmd",
            "jacobi2d_gpu",
            &[
                "nx=40",
                "ny=20",
                "c0=0.5",
                "c1=0.1",
                "c2=0.025",
                "w0=random(800,7)",
                "w1=zeros(800)",
            ],
            2,
        ),
        (
            "examples/wave13pt_gpu.spmd",
            "wave13pt_gpu",
            &[
                "nx=20",
                "ny=12",
                "nz=6",
                "c0=1.5",
                "c1=0.1",
                "c2=-0.05",
                "w0=random(1440,3)",
                "w1=random(1440,4)",
                "w2=zeros(1440)",
            ],
            6,
        ),
        (
            "examples/laplacian3d.spmd",
            "laplacian3d",
            &[
                "n=12",
                "alpha=-6",
                "beta=1",
                "w0=random(1728,5)",
                "w1=zeros(1728)",
            ],
            12,
        ),
    ];
    for (file, entry, args, depth) in cases {
        let front = Shuffled::<false>::front_of(&root.join(file));
        assert!(static_shuffles(&front) > 0, "{file}: no shuffle selected");
        let compiled = Shuffled::<false>::compile(&front);
        let nyuzi_front = NyuziShuffled::front_of(&root.join(file));
        let nyuzi_compiled = NyuziShuffled::compile(&nyuzi_front);
        let (_, object) = nyuzi_compiled.as_ref().expect("compiles for nyuzi");
        let listing = spmdc::back::nyuzi::asm::listing(object, None);
        let moves = listing.lines().filter(|l| l.contains("shuffle")).count();
        assert!(moves > 0, "{file}: no nyuzi shuffle selected");
        for (block, grid) in [
            ("32,8", "2,3"),
            ("16,4", "3,5"),
            ("8,8", "5,3"),
            ("24,3", "2,7"),
            ("33,2", "2,10"),
        ] {
            let spec = LaunchSpec {
                entry: entry.into(),
                args: args.iter().map(|s| s.to_string()).collect(),
                grid: Some(format!("{grid},{depth}")),
                block: Some(block.into()),
                dynamic_shared: None,
            };
            if let Err(e) = Shuffled::<false>::differential(&front, &compiled, &spec) {
                panic!("{file} block {block}: {e}");
            }
            if let Err(e) = NyuziShuffled::differential(&nyuzi_front, &nyuzi_compiled, &spec) {
                panic!("nyuzi: {file} block {block}: {e}");
            }
        }
    }
}
