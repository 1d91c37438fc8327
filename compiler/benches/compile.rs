//! Whole-pipeline compile time: `cargo bench -p spmdc --bench compile`.
//!
//! Each measurement is what `spmdc FILE --target T --emit asm` does in a new process,
//! minus starting the process and printing: the front end (with the standard library),
//! lowering, the pass pipeline, the runtime routines the program needs (built anew:
//! the per-process caches are cleared before every iteration), legalization and the
//! back end. Three groups:
//! - `examples`: every file in `examples/`, for nyuzi and for dac-gpu;
//! - `generated`: sources of 1,000 and 10,000 lines (the front-end benchmark's kernel,
//!   repeated with fresh names), for both targets, so scaling shows: criterion's
//!   "elements" are source lines;
//! - `regalloc`: the register-limited kernels of `spmdc bench regdem`
//!   (`tests/regdem_bench/`) for dac-gpu's `maxwell` preset, with the default
//!   allocation (`local`) and with `--regalloc auto`, which allocates each kernel
//!   for up to ten budgets and placements and predicts each.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use spmdc::driver::{self, FrontOptions, FrontResult, Stage};
use spmdc::front::sema;

mod common;

// The allocator the `spmdc` binary uses, so the figures are the command's.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Clone, Copy)]
enum Target {
    Nyuzi,
    DacGpu,
}

impl Target {
    const ALL: [Target; 2] = [Target::Nyuzi, Target::DacGpu];

    fn name(self) -> &'static str {
        match self {
            Target::Nyuzi => "nyuzi",
            Target::DacGpu => "dac-gpu",
        }
    }

    fn sema(self) -> sema::Target {
        match self {
            Target::Nyuzi => spmdc::back::nyuzi::TARGET,
            Target::DacGpu => spmdc::back::dac_gpu::TARGET,
        }
    }
}

/// Compiles `text` for `target` as a new `spmdc` process would; panics on an error.
fn compile(name: &str, path: Option<&Path>, text: &str, target: Target) {
    compile_with(name, path, text, target, &Default::default());
}

/// [`compile`] with the dac-gpu's code generation `gpu` options.
fn compile_with(
    name: &str,
    path: Option<&Path>,
    text: &str,
    target: Target,
    gpu: &spmdc::back::dac_gpu::Options,
) {
    driver::runtime::clear_caches();
    let options = FrontOptions {
        target: target.sema(),
        ..FrontOptions::default()
    };
    let front: FrontResult = driver::run_front(
        name,
        path.map(Path::to_path_buf),
        text.to_string(),
        &options,
        Stage::Check,
    );
    assert!(!front.diags.has_errors(), "{name} does not check");
    let ok = match target {
        Target::Nyuzi => spmdc::back::nyuzi::run::compile(&front, true).is_ok(),
        Target::DacGpu => spmdc::back::dac_gpu::run::compile(&front, true, gpu).is_ok(),
    };
    assert!(ok, "{name} does not compile for {}", target.name());
}

/// The `.spmd` files of `dir` (relative to the repository), sorted.
fn sources(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the directory is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "spmd"))
        .collect();
    files.sort();
    files
}

fn bench_examples(c: &mut Criterion) {
    let mut group = c.benchmark_group("examples");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(1));
    for path in sources("examples") {
        let text = std::fs::read_to_string(&path).expect("an example is readable");
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let name = format!("examples/{stem}.spmd");
        for target in Target::ALL {
            let id = BenchmarkId::new(target.name(), &stem);
            group.bench_function(id, |b| {
                b.iter(|| compile(&name, Some(&path), &text, target))
            });
        }
    }
    group.finish();
}

fn bench_generated(c: &mut Criterion) {
    let mut group = c.benchmark_group("generated");
    group.sample_size(10);
    for lines in [1_000, 10_000] {
        let text = common::source(lines, true);
        group.throughput(Throughput::Elements(text.lines().count() as u64));
        for target in Target::ALL {
            let id = BenchmarkId::new(target.name(), lines);
            group.bench_function(id, |b| {
                b.iter(|| compile("generated.spmd", None, &text, target))
            });
        }
    }
    group.finish();
}

fn bench_regalloc(c: &mut Criterion) {
    let mut group = c.benchmark_group("regalloc");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(2));
    let machine = sim::gpu::GpuConfig::maxwell();
    let local = spmdc::back::dac_gpu::Options::for_machine(machine);
    let auto = spmdc::back::dac_gpu::Options {
        predict: true,
        ..local.clone()
    };
    for path in sources("tests/regdem_bench") {
        let text = std::fs::read_to_string(&path).expect("a kernel is readable");
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let name = format!("tests/regdem_bench/{stem}.spmd");
        for (mode, options) in [("local", &local), ("auto", &auto)] {
            let id = BenchmarkId::new(mode, &stem);
            group.bench_function(id, |b| {
                b.iter(|| compile_with(&name, Some(&path), &text, Target::DacGpu, options))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_examples, bench_generated, bench_regalloc);
criterion_main!(benches);
