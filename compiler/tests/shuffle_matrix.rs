//! `--shuffle=all` and `--shuffle=auto` on the dac-gpu and on nyuzi: every example
//! launch, ISPC program and conformance program gives the interpreter's buffers and return
//! values bit for bit (on the dac-gpu with DAC off, where every pair becomes a
//! shuffle, and on, where prefetched loads stay loads; `auto` on the Maxwell preset,
//! where its cost model keeps some shuffles); the stencils do so on block shapes with
//! partial warps and gangs and rows narrower than a warp or a gang, with their
//! shuffles really in the code; and the paper's ablations really give wrong results.

mod common;

use std::path::Path;

use common::launches::*;
use spmdc::back::dac_gpu::run::{self as dac, DacRunOptions};
use spmdc::back::dac_gpu::Options;
use spmdc::back::nyuzi::run::{self as nyuzi, NyuziRunOptions};
use spmdc::driver::{self, FrontResult};
use spmdc::front::sema;
use spmdc::launch::RunResult;
use spmdc::passes::ShuffleMode;

const MAX_STEPS: u64 = 100_000_000;

const TARGET: sema::Target = sema::Target {
    program_count: 32,
    pointer_size: 8,
};

fn options(decouple: bool) -> Options {
    Options {
        shuffle: ShuffleMode::All,
        dac: decouple,
        ..Default::default()
    }
}

/// `--shuffle=all`, or `auto` when `AUTO`.
fn mode(auto: bool) -> ShuffleMode {
    if auto {
        ShuffleMode::Auto
    } else {
        ShuffleMode::All
    }
}

/// The dac-gpu with `--shuffle=all` (or `auto`, for the Maxwell preset), DAC on or off.
struct Shuffled<const DAC: bool, const AUTO: bool = false>;

impl<const DAC: bool, const AUTO: bool> BackEnd for Shuffled<DAC, AUTO> {
    type Compiled = spmdc::back::dac_gpu::Compiled;
    const NAME: &'static str = "dac-gpu";
    const KNOWN: &'static [(&'static str, &'static str, &'static str)] = &[];
    fn front_of(path: &Path) -> FrontResult {
        common::check_file_for(path, TARGET)
    }
    fn compile(front: &FrontResult) -> Result<Self::Compiled, String> {
        let opts = Options {
            shuffle: mode(AUTO),
            machine: sim::gpu::GpuConfig::maxwell(),
            ..options(DAC)
        };
        dac::compile(front, true, &opts).map_err(|e| run_error(e, front))
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

/// Nyuzi with `--shuffle=all` (or `auto`).
struct NyuziShuffled<const AUTO: bool = false>;

impl<const AUTO: bool> BackEnd for NyuziShuffled<AUTO> {
    type Compiled = (spmdc::ir::Module, spmdc::back::nyuzi::object::Object);
    const NAME: &'static str = "nyuzi";
    const KNOWN: &'static [(&'static str, &'static str, &'static str)] = &[];
    fn front_of(path: &Path) -> FrontResult {
        let mut front = common::check_file_for(path, NYUZI);
        front.switches.shuffle = mode(AUTO);
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
fn examples_match_on_nyuzi_auto() {
    examples_match::<NyuziShuffled<true>>();
}

#[test]
fn conformance_matches_on_nyuzi_auto() {
    let failures = ispc_failures::<NyuziShuffled<true>>("tests/conformance", (0, 1));
    check_known("nyuzi", &[], failures, |l| {
        l.starts_with("tests/conformance/")
    });
}

#[test]
fn examples_match_auto_without_dac() {
    examples_match::<Shuffled<false, true>>();
}

#[test]
fn conformance_matches_auto_without_dac() {
    let failures = ispc_failures::<Shuffled<false, true>>("tests/conformance", (0, 1));
    check_known("dac-gpu", &[], failures, |l| {
        l.starts_with("tests/conformance/")
    });
}

/// `noload` and `nocorner` are ablations: on jacobi2d_gpu (every warp has edge lanes)
/// both differ from the interpreter, on dac-gpu and on nyuzi.
#[test]
fn ablations_give_wrong_results() {
    let root = common::repo_root();
    let path = root.join("examples/jacobi2d_gpu.spmd");
    let spec = LaunchSpec {
        entry: "jacobi2d_gpu".into(),
        args: [
            "nx=64",
            "ny=8",
            "c0=0.5",
            "c1=0.1",
            "c2=0.025",
            "w0=random(512,9)",
            "w1=zeros(512)",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        grid: Some("2,1".into()),
        block: Some("32,8".into()),
        dynamic_shared: None,
    };
    for ablation in [ShuffleMode::NoLoad, ShuffleMode::NoCorner] {
        let front = Shuffled::<false>::front_of(&path);
        let opts = Options {
            shuffle: ablation,
            ..options(false)
        };
        let compiled = dac::compile(&front, true, &opts).map_err(|e| run_error(e, &front));
        let req = spec.request(MAX_STEPS);
        let want = driver::run_on_interp(&front, &req).expect("interpreter runs");
        let got = dac::run_compiled(
            &front,
            compiled.as_ref().unwrap(),
            &req,
            &DacRunOptions::default(),
        )
        .expect("dac-gpu runs");
        assert!(
            compare("dac-gpu", &want, &got).is_err(),
            "{ablation:?} on dac-gpu"
        );
        let mut front = NyuziShuffled::<false>::front_of(&path);
        front.switches.shuffle = ablation;
        let compiled = NyuziShuffled::<false>::compile(&front);
        let err = NyuziShuffled::<false>::differential(&front, &compiled, &spec);
        assert!(err.is_err(), "{ablation:?} on nyuzi");
    }
}

/// The programs of `tests/ispc/` with `all` and `auto`, on both targets (DAC off and
/// on for `all` on the dac-gpu).
#[test]
fn ispc_programs_match_with_shuffles() {
    ispc_programs_match::<Shuffled<false>>();
    ispc_programs_match::<Shuffled<true>>();
    ispc_programs_match::<Shuffled<false, true>>();
    ispc_programs_match::<NyuziShuffled>();
    ispc_programs_match::<NyuziShuffled<true>>();
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
    let cases: [(&str, &str, &[&str], usize); 4] = [
        (
            "tests/shuffle_bench/gaussblur_rows.spmd",
            "gaussblur_rows",
            &[
                "nx=40",
                "ny=20",
                "s0=12",
                "s1=6",
                "s2=4",
                "s4=2",
                "s5=1",
                "s8=0.5",
                "w0=random(800,8)",
                "w1=zeros(800)",
            ],
            1,
        ),
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
        let nyuzi_front = NyuziShuffled::<false>::front_of(&root.join(file));
        let nyuzi_compiled = NyuziShuffled::<false>::compile(&nyuzi_front);
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
            if let Err(e) =
                NyuziShuffled::<false>::differential(&nyuzi_front, &nyuzi_compiled, &spec)
            {
                panic!("nyuzi: {file} block {block}: {e}");
            }
        }
    }
}

/// A static count of `got`'s statistics (0 when absent).
fn stat(got: &RunResult, name: &str) -> f64 {
    match got.stats.get(name) {
        Some(spmdc::launch::StatValue::Count(v)) => v as f64,
        Some(spmdc::launch::StatValue::Ratio(v)) => v,
        None => 0.0,
    }
}

/// Halos (each side's farthest load's edge reload serving the nearer loads' edge
/// lanes), with `all` and `auto`: a 1-D five-point stencil whose last active lane
/// reads the array's last element (a halo lane past it would read outside the
/// buffer, which nyuzi's bounds check traps), on whole warps and gangs, on blocks of
/// 48, 24 and 16 threads (partial warps, rows not a multiple of a warp) and of 64; the
/// 2-D stencils on 16 x 8 blocks (rows narrower than a warp, two per gang on nyuzi).
#[test]
fn halos_match_on_partial_warps_and_at_the_array_end() {
    let root = common::repo_root();
    let path = root.join("tests/shuffle_bench/halo1d.spmd");
    let args = ["n=130", "w0=random(130,1)", "w1=zeros(130)"];
    let (front, nyuzi_front) = (
        Shuffled::<false>::front_of(&path),
        NyuziShuffled::<false>::front_of(&path),
    );
    let compiled = Shuffled::<false>::compile(&front);
    let nyuzi_compiled = NyuziShuffled::<false>::compile(&nyuzi_front);
    let auto_front = NyuziShuffled::<true>::front_of(&path);
    let auto_compiled = NyuziShuffled::<true>::compile(&auto_front);
    let auto_gpu = Shuffled::<false, true>::compile(&front);
    for (block, grid) in [
        ("32", "5"),
        ("48", "3"),
        ("24", "6"),
        ("16", "9"),
        ("64", "3"),
    ] {
        let spec = LaunchSpec {
            entry: "halo1d".into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            grid: Some(grid.into()),
            block: Some(block.into()),
            dynamic_shared: None,
        };
        let got = Shuffled::<false>::differential(&front, &compiled, &spec)
            .unwrap_or_else(|e| panic!("dac-gpu block {block}: {e}"));
        assert_eq!(stat(&got, "static_halo_shuffles"), 2.0, "dac-gpu");
        assert_eq!(stat(&got, "static_halo_loads"), 2.0, "dac-gpu");
        let got = NyuziShuffled::<false>::differential(&nyuzi_front, &nyuzi_compiled, &spec)
            .unwrap_or_else(|e| panic!("nyuzi block {block}: {e}"));
        assert_eq!(stat(&got, "static_halo_shuffles"), 2.0, "nyuzi");
        assert_eq!(stat(&got, "static_shuffles"), 4.0, "nyuzi");
        NyuziShuffled::<true>::differential(&auto_front, &auto_compiled, &spec)
            .unwrap_or_else(|e| panic!("nyuzi auto block {block}: {e}"));
        Shuffled::<false, true>::differential(&front, &auto_gpu, &spec)
            .unwrap_or_else(|e| panic!("dac-gpu auto block {block}: {e}"));
    }
    for (file, entry, args) in [
        (
            "tests/shuffle_bench/gaussblur_rows.spmd",
            "gaussblur_rows",
            &[
                "nx=40",
                "ny=24",
                "s0=12",
                "s1=6",
                "s2=4",
                "s4=2",
                "s5=1",
                "s8=0.5",
                "w0=random(960,8)",
                "w1=zeros(960)",
            ][..],
        ),
        (
            "examples/jacobi2d_gpu.spmd",
            "jacobi2d_gpu",
            &[
                "nx=40",
                "ny=24",
                "c0=0.5",
                "c1=0.1",
                "c2=0.025",
                "w0=random(960,7)",
                "w1=zeros(960)",
            ][..],
        ),
    ] {
        let spec = LaunchSpec {
            entry: entry.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            grid: Some("3,3".into()),
            block: Some("16,8".into()),
            dynamic_shared: None,
        };
        let front = Shuffled::<false>::front_of(&root.join(file));
        let compiled = Shuffled::<false>::compile(&front);
        let got = Shuffled::<false>::differential(&front, &compiled, &spec)
            .unwrap_or_else(|e| panic!("dac-gpu {file}: {e}"));
        assert!(stat(&got, "static_halo_shuffles") > 0.0, "{file}");
        let nyuzi_front = NyuziShuffled::<false>::front_of(&root.join(file));
        let nyuzi_compiled = NyuziShuffled::<false>::compile(&nyuzi_front);
        NyuziShuffled::<false>::differential(&nyuzi_front, &nyuzi_compiled, &spec)
            .unwrap_or_else(|e| panic!("nyuzi {file}: {e}"));
    }
}

/// `spec` on the GTX 480 timing model with `shuffle` (DAC off), checked against the
/// interpreter bit for bit: the run's statistics.
fn timed_on_gtx480(front: &FrontResult, shuffle: ShuffleMode, spec: &LaunchSpec) -> RunResult {
    let opts = Options {
        shuffle,
        ..options(false)
    };
    let compiled = dac::compile(front, true, &opts).expect("compiles");
    let req = spec.request(MAX_STEPS);
    let want = driver::run_on_interp(front, &req).expect("the interpreter runs");
    let run = DacRunOptions {
        timing: true,
        codegen: opts,
        ..DacRunOptions::default()
    };
    let got = dac::run_compiled(front, &compiled, &req, &run).expect("dac-gpu runs");
    if let Err(e) = compare("dac-gpu --timing", &want, &got) {
        panic!("{}: {shuffle:?}: {e}", spec.entry);
    }
    got
}

/// Warps with lanes off take the shuffle lane by lane: a lane whose source lane is on
/// (in the warp and, for rows, in its row) takes the shuffled value, and only the
/// others reload. Launches where *every* warp has a lane off or missing: a border
/// `if` inside a 3-D stencil (laplacian3d and wave13pt_gpu on cubes whose rows are one
/// warp: `i = 0` or `i = n - 1` is off in each), partial warps (halo1d on blocks of 16
/// threads, with its halo-served loads; jacobi2d_gpu on 24 x 3 blocks, three rows in a
/// warp and 8 lanes in the last), rows narrower than a warp with a border (gaussblur
/// rows on 16 x 8 blocks of a 20-wide image), and `foreach` tails (ISPC-style
/// tricubic, wave13pt and jacobi2d, rows of 5, 8 and 10 points in a 32-lane gang). Each is bit-identical to the interpreter with
/// `all` and `auto` on the dac-gpu (DAC off and on) and nyuzi, and with `all` its
/// global loads read fewer lanes than with `off` (where every lane reloaded before,
/// as many): the shuffles served lanes in those warps.
#[test]
fn warps_with_lanes_off_take_the_shuffle_lane_by_lane() {
    let root = common::repo_root();
    type Case<'a> = (&'a str, &'a str, &'a [&'a str], Option<(&'a str, &'a str)>);
    let cases: [Case; 8] = [
        (
            "examples/laplacian3d.spmd",
            "laplacian3d",
            &[
                "n=32",
                "alpha=-6",
                "beta=1",
                "w0=random(32768,5)",
                "w1=zeros(32768)",
            ],
            Some(("1,6,6", "32,1")),
        ),
        (
            "examples/wave13pt_gpu.spmd",
            "wave13pt_gpu",
            &[
                "nx=32",
                "ny=8",
                "nz=6",
                "c0=1.5",
                "c1=0.1",
                "c2=-0.05",
                "w0=random(1536,3)",
                "w1=random(1536,4)",
                "w2=zeros(1536)",
            ],
            Some(("1,8,6", "32,1")),
        ),
        (
            "tests/shuffle_bench/halo1d.spmd",
            "halo1d",
            &["n=130", "w0=random(130,1)", "w1=zeros(130)"],
            Some(("9", "16")),
        ),
        (
            "examples/jacobi2d_gpu.spmd",
            "jacobi2d_gpu",
            &[
                "nx=24",
                "ny=12",
                "c0=0.5",
                "c1=0.1",
                "c2=0.025",
                "w0=random(288,7)",
                "w1=zeros(288)",
            ],
            Some(("1,4", "24,3")),
        ),
        (
            "tests/shuffle_bench/gaussblur_rows.spmd",
            "gaussblur_rows",
            &[
                "nx=20",
                "ny=24",
                "s0=12",
                "s1=6",
                "s2=4",
                "s4=2",
                "s5=1",
                "s8=0.5",
                "w0=random(480,8)",
                "w1=zeros(480)",
            ],
            Some(("2,3", "16,8")),
        ),
        (
            "examples/tricubic.spmd",
            "tricubic",
            &[
                "nx=8",
                "ny=8",
                "nz=8",
                "ta=random(512,11)",
                "tb=random(512,12)",
                "tc=random(512,13)",
                "u0=random(512,14)",
                "u1=zeros(512)",
            ],
            None,
        ),
        (
            "examples/wave13pt.spmd",
            "wave13pt",
            &[
                "nx=12",
                "ny=8",
                "nz=8",
                "c0=1.5",
                "c1=0.1",
                "c2=-0.05",
                "w0=random(768,8)",
                "w1=random(768,9)",
                "w2=zeros(768)",
            ],
            None,
        ),
        (
            "examples/jacobi2d.spmd",
            "jacobi2d",
            &[
                "nx=12",
                "ny=6",
                "c0=0.5",
                "c1=0.1",
                "c2=0.025",
                "w0=random(72,6)",
                "w1=zeros(72)",
            ],
            None,
        ),
    ];
    for (file, entry, args, launch) in cases {
        let path = root.join(file);
        let spec = LaunchSpec {
            entry: entry.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            grid: launch.map(|l| l.0.into()),
            block: launch.map(|l| l.1.into()),
            dynamic_shared: None,
        };
        let front = Shuffled::<false>::front_of(&path);
        assert!(static_shuffles(&front) > 0, "{file}: no shuffle selected");
        let off = timed_on_gtx480(&front, ShuffleMode::Off, &spec);
        let all = timed_on_gtx480(&front, ShuffleMode::All, &spec);
        timed_on_gtx480(&front, ShuffleMode::Auto, &spec);
        let lanes = |r: &RunResult| stat(r, "global_load_lanes");
        assert!(lanes(&off) > 0.0, "{file}: no load lanes counted");
        assert!(
            lanes(&all) < lanes(&off),
            "{file}: all reads {} load lanes, off {}",
            lanes(&all),
            lanes(&off)
        );
        for compiled in [
            Shuffled::<true>::compile(&front),
            Shuffled::<false, true>::compile(&front),
            Shuffled::<true, true>::compile(&front),
        ] {
            if let Err(e) = Shuffled::<false>::differential(&front, &compiled, &spec) {
                panic!("{file}: {e}");
            }
        }
        for auto in [false, true] {
            let mut nyuzi_front = NyuziShuffled::<false>::front_of(&path);
            nyuzi_front.switches.shuffle = mode(auto);
            let compiled = NyuziShuffled::<false>::compile(&nyuzi_front);
            if let Err(e) = NyuziShuffled::<false>::differential(&nyuzi_front, &compiled, &spec) {
                panic!("nyuzi {file} (auto {auto}): {e}");
            }
        }
    }
}

/// `spmdc run` on nyuzi compiles for its launch: `--shuffle=auto`'s latency term
/// shares one thread's waits among the hardware threads the launch gives a core, so
/// jacobi2d_gpu's grid of one or two blocks (one or two threads) declines the
/// shuffles a grid of eight (the core's four threads) takes, and both runs give the
/// interpreter's buffers.
#[test]
fn nyuzi_auto_weighs_the_launchs_threads() {
    let path = common::repo_root().join("examples/jacobi2d_gpu.spmd");
    let front = NyuziShuffled::<true>::front_of(&path);
    let args = [
        "nx=64",
        "ny=32",
        "c0=0.5",
        "c1=0.1",
        "c2=0.025",
        "w0=random(2048,3)",
        "w1=zeros(2048)",
    ];
    let shuffles = |grid: &str| {
        let spec = LaunchSpec {
            entry: "jacobi2d_gpu".into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            grid: Some(grid.into()),
            block: Some("32,8".into()),
            dynamic_shared: None,
        };
        let req = spec.request(MAX_STEPS);
        let want = driver::run_on_interp(&front, &req).unwrap_or_else(|e| panic!("{e:?}"));
        let got = nyuzi::run_on_nyuzi(&front, &req, &NyuziRunOptions::default())
            .unwrap_or_else(|e| panic!("grid {grid}: {}", run_error(e, &front)));
        compare("nyuzi --shuffle=auto", &want, &got).unwrap_or_else(|e| panic!("{e}"));
        (
            stat(&got, "hardware_threads"),
            stat(&got, "static_shuffles"),
        )
    };
    assert_eq!(shuffles("1,1"), (1.0, 0.0));
    assert_eq!(shuffles("2,1"), (2.0, 0.0));
    let (threads, kept) = shuffles("2,4");
    assert_eq!(threads, 4.0);
    assert!(kept > 0.0, "four threads take shuffles");
}
