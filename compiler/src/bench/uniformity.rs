//! `spmdc bench uniformity`: what the uniformity analysis buys in code generation.
//!
//! Each kernel of [`KERNELS`] (examples, most dominated by uniform loop control and
//! address arithmetic, some divergent) runs on both targets in timing mode under each
//! [`Setting`]: the default, `--no-uniformity` (only `uniform`-typed values use the
//! scalar/uniform datapath), `--no-skip-empty`, `--force-cfg-opts` and
//! `--no-scalar-datapath` (no scalar/uniform datapath at all: on nyuzi uniform ALU work
//! runs on the vector unit, `back::nyuzi::vectorize`; on dac-gpu no `.uni`: the
//! baseline SIMT compiler). dac-gpu runs compile without Decoupled Affine Computation
//! (`--no-dac`), so that the uniform datapath alone is compared; `bench dac` measures
//! decoupling. Each run reports dynamic vector and scalar instructions (on
//! nyuzi: vector and scalar instructions; on dac-gpu: vector and uniform-datapath warp
//! instructions), cycles and lane utilization, and whether its output buffers equal the
//! default setting's. The `vector vs --no-uniformity` column ([`vector_change`]) is
//! the figure issue 6 asks about: the change of dynamic vector instructions from
//! `--no-uniformity` to the default, per kernel and target. The default row also
//! gives the kernel's *uniform share* ([`share_of`], [`super::uniform_share`]): how much
//! of its dynamic IR work is uniform, by type or only by analysis, which says how
//! dominated by uniform work a kernel is and bounds what the analysis can buy.
//!
//! Most uniform-dominated examples declare their loop counters and offsets `uniform`
//! (or use `foreach`), so on nyuzi their types alone already put that work in scalar
//! registers and the analysis has little left to find. Seven of them therefore also
//! run as unannotated twins from `examples/uniformity_unannotated.spmd` (named
//! `KERNEL (plain int)`, listed right after the annotated kernel, with the same
//! launch): the same algorithm written as CUDA or C code is, with `int` counters and
//! offsets that only the analysis proves uniform.

use super::{BenchError, BenchOptions, Cell, Table};
use crate::back::dac_gpu::{self, DacRunOptions};
use crate::back::nyuzi::run::{run_on_nyuzi, NyuziRunOptions};
use crate::driver::{self, FrontOptions, RunError, RunRequest, Stage};
use crate::launch::{Buffer, RunResult};
use crate::passes::Switches;

use super::uniform_share::UniformShare;

/// What a kernel is dominated by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Uniform loop control and address arithmetic.
    Uniform,
    /// Divergent control flow.
    Divergent,
}

/// One benchmark kernel: an example and its launch.
#[derive(Clone, Copy, Debug)]
pub struct BenchKernel {
    pub name: &'static str,
    /// The example's path in the repository (for the docs).
    pub file: &'static str,
    pub source: &'static str,
    pub entry: &'static str,
    pub args: &'static [&'static str],
    pub grid: Option<&'static str>,
    pub block: Option<&'static str>,
    pub kind: Kind,
}

impl BenchKernel {
    fn arg_strings(&self) -> Vec<String> {
        self.args.iter().map(|a| a.to_string()).collect()
    }

    /// The kernel's launch, optimized, with `args` from [`BenchKernel::arg_strings`].
    fn request<'a>(&self, args: &'a [String]) -> RunRequest<'a> {
        RunRequest {
            optimize: true,
            entry: self.entry,
            args,
            grid: self.grid,
            block: self.block,
            dynamic_shared: None,
            limits: crate::interp::Limits::default(),
        }
    }

    /// The example's path, so that its `#include`s resolve.
    pub fn path(&self) -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(self.file)
    }
}

macro_rules! example {
    ($name:literal, $file:literal, $entry:literal, $kind:ident, $grid:expr, $block:expr, [$($arg:literal),* $(,)?]) => {
        BenchKernel {
            name: $name,
            file: concat!("examples/", $file),
            source: include_str!(concat!("../../../examples/", $file)),
            entry: $entry,
            args: &[$($arg),*],
            grid: $grid,
            block: $block,
            kind: Kind::$kind,
        }
    };
}

// The kernels that have an unannotated twin, named so the twin can copy its launch.
const SAXPY: BenchKernel = example!(
    "saxpy",
    "saxpy.spmd",
    "saxpy",
    Uniform,
    None,
    None,
    ["n=1000", "a=2", "x=range(1000)", "y=fill(1000,1)"]
);
const JACOBI2D: BenchKernel = example!(
    "jacobi2d",
    "jacobi2d.spmd",
    "jacobi2d",
    Uniform,
    None,
    None,
    [
        "nx=64",
        "ny=32",
        "c0=0.5",
        "c1=0.1",
        "c2=0.025",
        "w0=fill(2048,1)",
        "w1=zeros(2048)"
    ]
);
const JACOBI2D_GPU: BenchKernel = example!(
    "jacobi2d_gpu",
    "jacobi2d_gpu.spmd",
    "jacobi2d_gpu",
    Uniform,
    Some("2,4"),
    Some("32,8"),
    [
        "nx=64",
        "ny=32",
        "c0=0.5",
        "c1=0.1",
        "c2=0.025",
        "w0=range(2048)",
        "w1=zeros(2048)"
    ]
);
const WAVE13PT: BenchKernel = example!(
    "wave13pt",
    "wave13pt.spmd",
    "wave13pt",
    Uniform,
    None,
    None,
    [
        "nx=16",
        "ny=16",
        "nz=16",
        "c0=1.5",
        "c1=0.1",
        "c2=-0.05",
        "w0=fill(4096,1)",
        "w1=fill(4096,1)",
        "w2=zeros(4096)"
    ]
);
const MATMUL_TILED: BenchKernel = example!(
    "matmul_tiled",
    "matmul_tiled.spmd",
    "matmul_tiled",
    Uniform,
    Some("3,3"),
    Some("16,16"),
    ["n=40", "a=fill(1600,1)", "b=fill(1600,2)", "c=zeros(1600)"]
);
const STENCIL1D: BenchKernel = example!(
    "stencil1d",
    "stencil1d.spmd",
    "stencil1d",
    Uniform,
    Some("4"),
    Some("256"),
    ["n=1000", "src=fill(1000,1)", "dst=zeros(1000)"]
);
const REDUCE_SUM: BenchKernel = example!(
    "reduce_sum",
    "reduce_sum.spmd",
    "reduce_sum",
    Uniform,
    None,
    None,
    ["n=1000", "x=range(1000)", "result=zeros(3)"]
);

/// An unannotated twin (in `examples/uniformity_unannotated.spmd`) of the kernel `of`:
/// the same launch and kind, so the two rows compare like for like.
const fn unannotated(of: BenchKernel, name: &'static str, entry: &'static str) -> BenchKernel {
    BenchKernel {
        name,
        file: "examples/uniformity_unannotated.spmd",
        source: include_str!("../../../examples/uniformity_unannotated.spmd"),
        entry,
        ..of
    }
}

/// The kernels, with the examples' suggested launches (a few made smaller).
pub const KERNELS: &[BenchKernel] = &[
    SAXPY,
    unannotated(SAXPY, "saxpy (plain int)", "saxpy_plain"),
    example!(
        "row_sums",
        "row_sums.spmd",
        "row_sums",
        Uniform,
        None,
        None,
        ["nrows=64", "ncols=64", "m=range(4096)", "out=zeros(64)"]
    ),
    example!(
        "strided_copy",
        "strided_copy.spmd",
        "strided_copy",
        Uniform,
        Some("2"),
        Some("64"),
        ["n=32", "stride=3", "src=range(12288)", "dst=zeros(4096)"]
    ),
    JACOBI2D,
    unannotated(JACOBI2D, "jacobi2d (plain int)", "jacobi2d_plain"),
    JACOBI2D_GPU,
    unannotated(
        JACOBI2D_GPU,
        "jacobi2d_gpu (plain int)",
        "jacobi2d_gpu_plain",
    ),
    WAVE13PT,
    unannotated(WAVE13PT, "wave13pt (plain int)", "wave13pt_plain"),
    example!(
        "gaussblur",
        "gaussblur.spmd",
        "gaussblur",
        Uniform,
        None,
        None,
        [
            "nx=32",
            "ny=32",
            "s0=12",
            "s1=6",
            "s2=4",
            "s4=2",
            "s5=1",
            "s8=0.5",
            "w0=fill(1024,3)",
            "w1=zeros(1024)"
        ]
    ),
    MATMUL_TILED,
    unannotated(
        MATMUL_TILED,
        "matmul_tiled (plain int)",
        "matmul_tiled_plain",
    ),
    STENCIL1D,
    unannotated(STENCIL1D, "stencil1d (plain int)", "stencil1d_plain"),
    REDUCE_SUM,
    unannotated(REDUCE_SUM, "reduce_sum (plain int)", "reduce_sum_plain"),
    example!(
        "mandelbrot",
        "mandelbrot.spmd",
        "mandelbrot",
        Divergent,
        None,
        None,
        [
            "x0=-2",
            "y0=-1",
            "x1=1",
            "y1=1",
            "width=32",
            "height=16",
            "rowStart=0",
            "rowEnd=16",
            "maxIter=64",
            "out=zeros(512)"
        ]
    ),
    example!(
        "histogram",
        "histogram.spmd",
        "histogram",
        Divergent,
        Some("8"),
        Some("128"),
        [
            "n=1000",
            "x=range(1000)",
            "lo=0",
            "hi=1000",
            "bins=zeros(64)"
        ]
    ),
    example!(
        "switch_ops",
        "switch_ops.spmd",
        "switch_ops",
        Divergent,
        None,
        None,
        [
            "n=13",
            "ops=range(13)",
            "a=fill(13,6)",
            "b=fill(13,3)",
            "out=zeros(13)"
        ]
    ),
];

/// A target of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Nyuzi,
    DacGpu,
}

impl Target {
    pub const ALL: [Target; 2] = [Target::Nyuzi, Target::DacGpu];

    pub fn name(self) -> &'static str {
        match self {
            Target::Nyuzi => "nyuzi",
            Target::DacGpu => "dac-gpu",
        }
    }

    fn sema_target(self) -> crate::front::sema::Target {
        match self {
            Target::Nyuzi => crate::front::sema::Target {
                program_count: 16,
                pointer_size: 4,
            },
            Target::DacGpu => crate::front::sema::Target {
                program_count: 32,
                pointer_size: 8,
            },
        }
    }
}

/// A compilation setting: the issue-6 switches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    pub name: &'static str,
    pub switches: Switches,
}

/// The default, each switch alone, and the baseline without the scalar/uniform
/// datapath (`--no-scalar-datapath`).
pub fn settings() -> Vec<Setting> {
    let on = Switches::default();
    vec![
        Setting {
            name: "default",
            switches: on,
        },
        Setting {
            name: "--no-uniformity",
            switches: Switches {
                no_uniformity: true,
                ..on
            },
        },
        Setting {
            name: "--no-skip-empty",
            switches: Switches {
                no_skip_empty: true,
                ..on
            },
        },
        Setting {
            name: "--force-cfg-opts",
            switches: Switches {
                force_cfg_opts: true,
                ..on
            },
        },
        Setting {
            name: "--no-scalar-datapath",
            switches: Switches {
                no_uniformity: true,
                no_scalar_datapath: true,
                ..on
            },
        },
    ]
}

/// One run's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    pub kernel: &'static str,
    pub kind: Kind,
    pub target: Target,
    pub setting: &'static str,
    /// Dynamic vector (nyuzi) or vector-datapath warp (dac-gpu) instructions.
    pub vector: u64,
    /// Dynamic scalar (nyuzi) or uniform-datapath (dac-gpu) instructions.
    pub scalar: u64,
    pub cycles: u64,
    /// Active lanes per vector instruction over the gang width.
    pub lane_utilization: f64,
    /// The output buffers equal the default setting's (None for the default itself).
    pub same_output: Option<bool>,
    /// The kernel's uniform share of dynamic work at this target's gang width (on the
    /// default setting's row only; see [`share_of`]).
    pub share: Option<UniformShare>,
}

fn stat_u64(r: &RunResult, key: &str) -> u64 {
    match r.stats.get(key) {
        Some(crate::launch::StatValue::Count(v)) => v,
        Some(crate::launch::StatValue::Ratio(v)) => v as u64,
        None => 0,
    }
}

fn stat_f64(r: &RunResult, key: &str) -> f64 {
    match r.stats.get(key) {
        Some(crate::launch::StatValue::Count(v)) => v as f64,
        Some(crate::launch::StatValue::Ratio(v)) => v,
        None => 0.0,
    }
}

fn describe(e: RunError) -> String {
    match e {
        RunError::Compile(d) => d
            .first()
            .map_or("compile error".to_string(), |d| d.message.clone()),
        other => format!("{other:?}"),
    }
}

/// Runs `k` on `target` under `setting` in timing mode.
pub fn run_one(
    k: &BenchKernel,
    target: Target,
    setting: &Setting,
    config: &str,
) -> Result<RunResult, String> {
    // The pass pipeline and both code generators read the switches from the front
    // result.
    let front = front_for(k, target, setting.switches)?;
    let args = k.arg_strings();
    let req = k.request(&args);
    match target {
        Target::Nyuzi => {
            let opts = NyuziRunOptions {
                timing: true,
                ..NyuziRunOptions::default()
            };
            run_on_nyuzi(&front, &req, &opts).map_err(describe)
        }
        Target::DacGpu => {
            let opts = DacRunOptions {
                timing: true,
                config: config.to_string(),
                // On the SIMT baseline (`--no-dac`): decoupling moves uniform and
                // affine work to the affine warp, which `bench dac` measures; here the
                // uniform datapath alone is compared.
                // (`dac_gpu::run::compile` applies the switches to the rest.)
                codegen: dac_gpu::Options {
                    dac: false,
                    ..dac_gpu::Options::default()
                },
                ..DacRunOptions::default()
            };
            dac_gpu::run::run_on_dac_gpu(&front, &req, &opts).map_err(describe)
        }
    }
}

/// `k` checked for `target`, with the pass pipeline's `switches`.
fn front_for(
    k: &BenchKernel,
    target: Target,
    switches: Switches,
) -> Result<driver::FrontResult, String> {
    let options = FrontOptions {
        target: target.sema_target(),
        ..FrontOptions::default()
    };
    let mut front = driver::run_front(
        k.file,
        Some(k.path()),
        k.source.to_string(),
        &options,
        Stage::Check,
    );
    if front.diags.has_errors() {
        return Err("front end errors".into());
    }
    front.switches = switches;
    Ok(front)
}

/// How much of `k`'s dynamic work at `target`'s gang width is uniform, by type and by
/// analysis ([`super::uniform_share`]), from a profiled run of the default pipeline's
/// IR on the reference interpreter.
pub fn share_of(k: &BenchKernel, target: Target) -> Result<UniformShare, String> {
    let front = front_for(k, target, Switches::default())?;
    let module =
        driver::lower_front_with(&front, true).map_err(|d| describe(RunError::Compile(d)))?;
    let args = k.arg_strings();
    let (_, counts) =
        driver::profile_module_on_interp(&front, &module, &k.request(&args)).map_err(describe)?;
    Ok(super::uniform_share::classify(&module, &counts))
}

fn figures(k: &BenchKernel, target: Target, setting: &Setting, r: &RunResult) -> Measurement {
    let (vector, scalar) = match target {
        Target::Nyuzi => (
            stat_u64(r, "vector_instructions"),
            stat_u64(r, "scalar_instructions"),
        ),
        Target::DacGpu => (
            stat_u64(r, "vector_instructions"),
            stat_u64(r, "uniform_instructions"),
        ),
    };
    Measurement {
        kernel: k.name,
        kind: k.kind,
        target,
        setting: setting.name,
        vector,
        scalar,
        cycles: stat_u64(r, crate::launch::Stats::CYCLES),
        lane_utilization: stat_f64(r, "lane_utilization"),
        same_output: None,
        share: None,
    }
}

fn buffers(r: &RunResult) -> Vec<(String, Buffer)> {
    r.buffers.clone()
}

/// Measures every kernel on every target under every setting. A run that fails is reported as an error row.
pub fn measure(
    kernels: &[BenchKernel],
    settings: &[Setting],
    config: &str,
) -> Vec<Result<Measurement, String>> {
    let mut out = Vec::new();
    for k in kernels {
        for target in Target::ALL {
            let mut reference = None;
            for s in settings {
                let r = run_one(k, target, s, config)
                    .map_err(|e| format!("{} on {} ({}): {e}", k.name, target.name(), s.name));
                let r = r.and_then(|r| {
                    let mut m = figures(k, target, s, &r);
                    match &reference {
                        None => {
                            reference = Some(buffers(&r));
                            m.share = Some(share_of(k, target).map_err(|e| {
                                format!("{} on {} (profile): {e}", k.name, target.name())
                            })?);
                        }
                        Some(b) => m.same_output = Some(*b == buffers(&r)),
                    }
                    Ok(m)
                });
                out.push(r);
            }
        }
    }
    out
}

/// The table's columns.
pub const COLUMNS: &[&str] = &[
    "kernel",
    "kind",
    "target",
    "setting",
    "vector instr",
    "scalar instr",
    "vector vs --no-uniformity",
    "cycles",
    "lane util",
    "uniform work %",
    "by analysis only %",
    "output",
];

/// The change of `m`'s vector instructions from the `--no-uniformity` run of the same
/// kernel and target, in percent (negative: fewer), when there is one.
pub fn vector_change(rows: &[Measurement], m: &Measurement) -> Option<f64> {
    let off = rows
        .iter()
        .find(|o| o.kernel == m.kernel && o.target == m.target && o.setting == "--no-uniformity")?;
    (off.vector > 0).then(|| 100.0 * (m.vector as f64 - off.vector as f64) / off.vector as f64)
}

/// The table of `rows`: one row per run; errors and outputs that differ from the
/// default setting's are the table's failures.
pub fn table(rows: Vec<Result<Measurement, String>>) -> Table {
    let mut t = Table::new("uniformity", COLUMNS);
    let ok: Vec<Measurement> = rows
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .cloned()
        .collect();
    for r in rows {
        let m = match r {
            Ok(m) => m,
            Err(e) => {
                t.failures.push(e);
                continue;
            }
        };
        if m.same_output == Some(false) {
            t.failures.push(format!(
                "{} on {} ({}): output differs from the default setting's",
                m.kernel,
                m.target.name(),
                m.setting
            ));
        }
        let change =
            vector_change(&ok, &m).map_or_else(|| "-".to_string(), |c| format!("{c:+.1}%"));
        t.rows.push(vec![
            Cell::Text(m.kernel.to_string()),
            Cell::Text(
                match m.kind {
                    Kind::Uniform => "uniform",
                    Kind::Divergent => "divergent",
                }
                .into(),
            ),
            Cell::Text(m.target.name().into()),
            Cell::Text(m.setting.into()),
            Cell::Count(m.vector),
            Cell::Count(m.scalar),
            Cell::Text(change),
            Cell::Count(m.cycles),
            Cell::Real(m.lane_utilization, 3),
            share_cell(m.share.map(|s| s.uniform_percent())),
            share_cell(m.share.map(|s| s.analysis_percent())),
            Cell::Text(
                match m.same_output {
                    None => "reference",
                    Some(true) => "same",
                    Some(false) => "DIFFERENT",
                }
                .into(),
            ),
        ]);
    }
    t
}

fn share_cell(percent: Option<f64>) -> Cell {
    percent.map_or_else(|| Cell::Text("-".into()), |p| Cell::Real(p, 1))
}

/// `spmdc bench uniformity`: every kernel of [`KERNELS`] under every [`settings`] on
/// both targets (dac-gpu on `opts.config`; the kernels' sizes are fixed, so
/// `opts.min_threads` is not used).
pub fn run(opts: &BenchOptions) -> Result<Table, BenchError> {
    sim::gpu::GpuConfig::load(&opts.config).map_err(BenchError::Options)?;
    Ok(table(measure(KERNELS, &settings(), &opts.config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(name: &str) -> BenchKernel {
        *KERNELS.iter().find(|k| k.name == name).expect("kernel")
    }

    #[test]
    fn the_analysis_moves_uniform_loop_work_off_the_vector_datapath() {
        let s = settings();
        let two = [s[0], s[1]];
        let t = table(measure(&[kernel("row_sums")], &two, "gtx480"));
        assert!(t.failures.is_empty(), "{:?}", t.failures);
        assert_eq!(t.rows.len(), 4, "two settings on two targets");
        let count = |row: usize, col: &str| match t.cell(row, col) {
            Some(Cell::Count(n)) => *n,
            other => panic!("{col}: {other:?}"),
        };
        // Rows: nyuzi default, nyuzi --no-uniformity, dac-gpu default, dac-gpu off.
        assert_eq!(t.cell(2, "setting"), Some(&Cell::Text("default".into())));
        assert!(count(2, "vector instr") < count(3, "vector instr"));
        assert!(count(2, "scalar instr") > count(3, "scalar instr"));
        assert!(count(2, "cycles") > 0);
        assert_eq!(t.cell(3, "output"), Some(&Cell::Text("same".into())));
    }

    /// The unannotated twins run exactly their annotated kernel's launch, right after
    /// it in the table, so the two rows compare the same work.
    #[test]
    fn each_unannotated_kernel_follows_its_twin_with_the_same_launch() {
        let mut twins = 0;
        for (i, k) in KERNELS.iter().enumerate() {
            let Some(base) = k.name.strip_suffix(" (plain int)") else {
                continue;
            };
            twins += 1;
            let twin = KERNELS[..i]
                .iter()
                .rev()
                .find(|t| !t.name.ends_with(" (plain int)"))
                .expect("an annotated kernel before it");
            assert_eq!(twin.name, base, "{} follows {}", k.name, twin.name);
            assert_eq!(k.file, "examples/uniformity_unannotated.spmd");
            assert_eq!(k.entry, format!("{}_plain", twin.entry));
            assert_eq!(
                (k.kind, k.grid, k.block, k.args),
                (twin.kind, twin.grid, twin.block, twin.args),
                "{}",
                k.name
            );
        }
        assert_eq!(twins, 7);
    }

    #[test]
    fn every_kernel_compiles_for_both_targets() {
        for k in KERNELS {
            for target in Target::ALL {
                let options = FrontOptions {
                    target: target.sema_target(),
                    ..FrontOptions::default()
                };
                let front = driver::run_front(
                    k.file,
                    Some(k.path()),
                    k.source.to_string(),
                    &options,
                    Stage::Check,
                );
                let errors: Vec<String> = front.diags.iter().map(|d| d.message.clone()).collect();
                assert!(
                    !front.diags.has_errors(),
                    "{} on {}: {errors:?}",
                    k.name,
                    target.name()
                );
            }
        }
    }
}
