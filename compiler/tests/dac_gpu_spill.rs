//! Spilling on the dac-gpu: programs compiled under tiny register budgets
//! (`--max-regs`), so that the register allocator keeps values in local memory or
//! demotes them to shared memory (`--regalloc shared|mixed`), must still give the
//! interpreter's exact results; the spill code shows in the statistics, and the
//! timing model counts its local-memory traffic.
//!
//! Every example launch runs with 16 registers per thread in local memory, 12 in
//! shared memory and 10 mixed, and samples of the conformance programs (a quarter
//! each) with 12 in local and in shared memory; the default budget's differential
//! runs are `tests/dac_gpu.rs`. Every placement at every budget down to the smallest
//! that allocates, on every example, ISPC program and conformance program, is the
//! three ignored `every_placement_at_every_budget` tests (see their doc for the
//! command).

mod common;

use std::path::Path;

use common::launches::*;

use spmdc::back::dac_gpu::alloc::Placement;
use spmdc::back::dac_gpu::run::{self as dac, DacRunOptions};
use spmdc::back::dac_gpu::Options;
use spmdc::diag::codes;
use spmdc::driver::{self, FrontResult, RunError};
use spmdc::launch::{RunResult, StatValue};

const MAX_STEPS: u64 = 100_000_000;

/// Launches that fail on the dac-gpu whatever the budget (none: see
/// `tests/dac_gpu.rs`).
const KNOWN_FAILURES: &[(&str, &str, &str)] = &[];

fn front_of(path: &Path) -> FrontResult {
    common::check_file_for(path, common::DAC_GPU)
}

type Compiled = spmdc::back::dac_gpu::Compiled;

fn compile(front: &FrontResult, max_regs: u32) -> Result<Compiled, String> {
    compile_placed(front, &options(max_regs, Placement::Local))
}

fn compile_placed(front: &FrontResult, options: &Options) -> Result<Compiled, String> {
    dac::compile(front, driver::OPTIMIZE_BY_DEFAULT, options).map_err(|e| run_error(e, front))
}

/// `max_regs` registers, spilled values placed as `placement` says.
fn options(max_regs: u32, placement: Placement) -> Options {
    Options {
        max_regs,
        placement,
        ..Options::default()
    }
}

fn run(
    front: &FrontResult,
    compiled: &Compiled,
    spec: &LaunchSpec,
    opts: &DacRunOptions,
) -> Result<RunResult, String> {
    dac::run_compiled(front, compiled, &spec.request(MAX_STEPS), opts)
        .map_err(|e| run_error(e, front))
}

/// `Placement` as a const generic parameter ([`AUTO`]: the predictor's choice).
const fn placement(p: u8) -> Placement {
    match p {
        SHARED => Placement::Shared,
        MIXED => Placement::Mixed,
        _ => Placement::Local,
    }
}

/// The options of budget `n` and strategy `p`.
fn strategy(n: u32, p: u8) -> Options {
    Options {
        predict: p == AUTO,
        fixed_budget: true,
        ..options(n, placement(p))
    }
}

/// The dac-gpu with a budget of `N` registers per thread, spilling as `placement(P)`
/// says. Shared-memory slots are laid out for each launch's block, as `spmdc run`
/// compiles them, so those placements compile once per launch.
struct Budget<const N: u32, const P: u8>;

impl<const N: u32, const P: u8> BackEnd for Budget<N, P> {
    type Compiled = Compiled;
    const NAME: &'static str = "dac-gpu (tiny register budget)";
    const KNOWN: &'static [(&'static str, &'static str, &'static str)] = KNOWN_FAILURES;
    fn front_of(path: &Path) -> FrontResult {
        front_of(path)
    }
    fn compile(front: &FrontResult) -> Result<Compiled, String> {
        within_budget(compile_placed(front, &strategy(N, P))?, N)
    }
    fn differential(
        front: &FrontResult,
        compiled: &Result<Compiled, String>,
        spec: &LaunchSpec,
    ) -> Result<RunResult, String> {
        let opts = DacRunOptions {
            codegen: strategy(N, P),
            ..DacRunOptions::default()
        };
        differential(front, compiled, spec, &opts)
    }
}

/// `c`, or why one of its kernels uses more than `n` registers.
fn within_budget(c: Compiled, n: u32) -> Result<Compiled, String> {
    match c.program.kernels.iter().find(|k| k.num_regs > n) {
        Some(k) => Err(format!("{} uses {} registers", k.name, k.num_regs)),
        None => Ok(c),
    }
}

/// Runs `spec` on the interpreter and on the dac-gpu as `opts` says (compiled for the
/// launch's block when values go to shared memory, `compiled` otherwise).
fn differential(
    front: &FrontResult,
    compiled: &Result<Compiled, String>,
    spec: &LaunchSpec,
    opts: &DacRunOptions,
) -> Result<RunResult, String> {
    let want = driver::run_on_interp(front, &spec.request(MAX_STEPS))
        .map_err(|e| format!("interp failed: {}", run_error(e, front)))?;
    let for_launch;
    let compiled = match opts.codegen.placement {
        Placement::Local if !opts.codegen.predict => compiled.as_ref()?,
        _ => {
            let codegen = dac::for_launch(&opts.codegen, &spec.request(MAX_STEPS));
            for_launch =
                compile_placed(front, &codegen).and_then(|c| within_budget(c, codegen.max_regs))?;
            &for_launch
        }
    };
    let got = run(front, compiled, spec, opts)?;
    compare("dac-gpu", &want, &got)?;
    Ok(got)
}

const LOCAL: u8 = 0;
const SHARED: u8 = 1;
const MIXED: u8 = 2;
/// `--regalloc auto` under a fixed budget: the predictor picks the placement.
const AUTO: u8 = 3;

#[test]
fn examples_match_the_interpreter_with_16_registers() {
    examples_match::<Budget<16, LOCAL>>();
}

#[test]
fn examples_match_with_12_registers_demoted_to_shared_memory() {
    examples_match::<Budget<12, SHARED>>();
}

#[test]
fn examples_match_with_10_registers_mixed() {
    examples_match::<Budget<10, MIXED>>();
}

#[test]
fn examples_match_with_12_registers_placed_by_the_predictor() {
    examples_match::<Budget<12, AUTO>>();
}

/// The conformance programs at positions `part` modulo 4, on `B`.
fn conformance_quarter<B: BackEnd>(part: usize) {
    let files = common::spmd_files("tests/conformance");
    let mine: Vec<String> = files
        .iter()
        .skip(part)
        .step_by(4)
        .map(|p| common::display_name(p))
        .collect();
    check_known(
        B::NAME,
        KNOWN_FAILURES,
        ispc_failures::<B>("tests/conformance", (part, 4)),
        |l| mine.iter().any(|m| m == l),
    );
}

#[test]
fn a_quarter_of_the_conformance_programs_match_with_12_registers() {
    conformance_quarter::<Budget<12, LOCAL>>(0);
}

#[test]
fn another_quarter_matches_with_12_registers_in_shared_memory() {
    conformance_quarter::<Budget<12, SHARED>>(1);
}

fn count(r: &RunResult, key: &str) -> u64 {
    match r.stats.get(key) {
        Some(StatValue::Count(v)) => v,
        other => panic!("statistic {key}: {other:?}"),
    }
}

/// A budget under which the small kernels below spill to slots: with 12 registers,
/// they keep every value but constants, indices and parameters, which they load again
/// where they read them (rematerialization) rather than spill.
const SPILLING: u32 = 8;

/// Tiny budgets really spill (the tests above would pass vacuously otherwise), the
/// default does not, and the statistics say so.
#[test]
fn tiny_budgets_spill_and_the_statistics_show_it() {
    let root = common::repo_root();
    let mut spilling = 0;
    // Kernels whose default allocation needs more than 12 registers (stencil1d and
    // block_reduce fit in 12 since the dac-gpu back end falls through to the next
    // block and decouples `.shared` addresses); `SPILLING` spills some of their
    // values.
    for file in [
        "examples/saxpy.spmd",
        "examples/row_sums.spmd",
        "examples/histogram.spmd",
        "examples/reduce_sum.spmd",
    ] {
        let front = front_of(&root.join(file));
        let tiny = compile(&front, SPILLING).unwrap_or_else(|e| panic!("{file}: {e}"));
        let roomy = compile(&front, Options::default().max_regs).unwrap();
        for (t, r) in tiny.regs.iter().zip(&roomy.regs) {
            assert!(
                t.num_regs <= SPILLING && r.num_regs <= 63,
                "{file}: {t:?} {r:?}"
            );
            let roomy_spill = (r.spill_stores, r.spill_loads, r.rematerialized_values);
            assert_eq!(roomy_spill, (0, 0, 0), "{file}: {r:?}");
            if t.spill_stores > 0 {
                assert!(t.spill_loads > 0 && t.spill_bytes > 0, "{file}: {t:?}");
                spilling += 1;
            }
        }
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let spec = header_launches(&text).into_iter().next().expect("a launch");
        let opts = DacRunOptions {
            timing: true,
            codegen: Options {
                max_regs: SPILLING,
                ..Options::default()
            },
            ..DacRunOptions::default()
        };
        let timed = run(&front, &tiny, &spec, &opts).unwrap_or_else(|e| panic!("{file}: {e}"));
        let k = tiny
            .program
            .kernels
            .iter()
            .position(|k| k.name == spec.entry)
            .unwrap();
        let report = &tiny.regs[k];
        assert_eq!(count(&timed, "registers"), u64::from(report.num_regs));
        assert_eq!(
            count(&timed, "spill_stores"),
            u64::from(report.spill_stores)
        );
        assert_eq!(count(&timed, "spill_loads"), u64::from(report.spill_loads));
        assert_eq!(
            count(&timed, "rematerialized_values"),
            u64::from(report.rematerialized_values)
        );
        if report.spill_stores > 0 {
            assert!(count(&timed, "local_transactions") > 0, "{file}");
            assert!(count(&timed, "local_store_instructions") > 0, "{file}");
            assert!(count(&timed, "local_load_instructions") > 0, "{file}");
        }
    }
    assert!(
        spilling >= 3,
        "only {spilling} kernels spilled with {SPILLING} registers"
    );
}

/// With `--regalloc shared`, the same tiny budgets demote every slot to shared
/// memory: no local spill code, the kernel's `.shared` grows by the slots' layout
/// (4 bytes per unit and thread of the launch's block, in whole warps), and the
/// timing model sees no local-memory traffic and no bank conflict from them.
#[test]
fn tiny_budgets_demote_to_shared_memory_and_the_statistics_show_it() {
    let root = common::repo_root();
    let mut demoting = 0;
    for file in [
        "examples/saxpy.spmd",
        "examples/row_sums.spmd",
        "examples/reduce_sum.spmd",
    ] {
        let front = front_of(&root.join(file));
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let spec = header_launches(&text).into_iter().next().expect("a launch");
        let opts = DacRunOptions {
            timing: true,
            codegen: options(SPILLING, Placement::Shared),
            ..DacRunOptions::default()
        };
        let codegen = dac::for_launch(&opts.codegen, &spec.request(MAX_STEPS));
        let compiled = compile_placed(&front, &codegen).unwrap_or_else(|e| panic!("{file}: {e}"));
        let local = compile(&front, SPILLING).unwrap();
        let k = compiled
            .program
            .kernels
            .iter()
            .position(|k| k.name == spec.entry)
            .unwrap();
        let report = &compiled.regs[k];
        if local.regs[k].spill_stores == 0 {
            continue;
        }
        demoting += 1;
        assert!(report.num_regs <= SPILLING, "{file}: {report:?}");
        assert_eq!(
            (report.spill_stores, report.spill_loads),
            (0, 0),
            "{file}: {report:?}"
        );
        assert!(
            report.demoted_stores > 0 && report.demoted_loads > 0,
            "{file}: {report:?}"
        );
        let n = report.shared_threads;
        assert_eq!(n % 32, 0, "{file}: {report:?}");
        assert_eq!(report.demoted_bytes % (4 * n), 0, "{file}: {report:?}");
        let kernel = &compiled.program.kernels[k];
        let own = local.program.kernels[k].shared_bytes.div_ceil(4) * 4;
        assert_eq!(kernel.shared_bytes, own + report.demoted_bytes, "{file}");
        let timed = run(&front, &compiled, &spec, &opts).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(
            count(&timed, "demoted_stores"),
            u64::from(report.demoted_stores)
        );
        assert_eq!(
            count(&timed, "demoted_shared_bytes"),
            u64::from(report.demoted_bytes)
        );
        assert_eq!(count(&timed, "local_transactions"), 0, "{file}");
        assert_eq!(count(&timed, "shared_bank_conflicts"), 0, "{file}");
    }
    assert!(
        demoting >= 2,
        "only {demoting} kernels demoted with {SPILLING} registers"
    );
}

/// A launch with more threads per block than the shared slots are laid out for is
/// refused, not run with overlapping slots.
#[test]
fn a_block_larger_than_the_slots_layout_is_refused() {
    let root = common::repo_root();
    let file = "examples/reduce_sum.spmd";
    let front = front_of(&root.join(file));
    let codegen = Options {
        block_threads: Some(32),
        ..options(8, Placement::Shared)
    };
    let compiled = compile_placed(&front, &codegen).unwrap();
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    let mut spec = header_launches(&text).into_iter().next().expect("a launch");
    spec.block = Some("64".into());
    let err = dac::run_compiled(
        &front,
        &compiled,
        &spec.request(MAX_STEPS),
        &DacRunOptions::default(),
    )
    .expect_err("refused");
    let message = run_error(err, &front);
    assert!(message.contains("at most 32 threads"), "{message}");
}

/// A budget below what one instruction needs is error E0904, never a panic.
#[test]
fn a_budget_too_small_for_an_instruction_is_e0904() {
    let front = front_of(&common::repo_root().join("examples/saxpy.spmd"));
    let err = dac::compile(
        &front,
        true,
        &Options {
            max_regs: 2,
            ..Options::default()
        },
    )
    .expect_err("too few");
    let spmdc::driver::RunError::Compile(diags) = err else {
        panic!("not a compile error");
    };
    assert_eq!(diags[0].code.as_str(), "E0904", "{:?}", diags[0]);
    assert!(
        diags[0].message.contains("smallest budget"),
        "{}",
        diags[0].message
    );
}

/// The whole matrix, too slow for CI: every example launch, ISPC program
/// (`tests/ispc/`) and conformance program (`tests/conformance/`), in local, shared
/// and mixed placement, at every budget from the registers the kernel needs without
/// spilling (at most 40) down to the smallest that allocates it, equal to the
/// interpreter. The three tests share the filter; run them with
///
/// ```text
/// cargo test --release -p spmdc --test dac_gpu_spill -- --ignored every_placement
/// ```
#[test]
#[ignore = "the full spilling matrix: minutes in release (see its doc)"]
fn every_placement_at_every_budget() {
    let launches = example_launches();
    let mut files: Vec<String> = launches.iter().map(|(f, _)| f.clone()).collect();
    files.dedup();
    every_placement_over(&files, |file, _| {
        Ok(launches
            .iter()
            .filter(|(f, _)| f == file)
            .map(|(_, s)| s.clone())
            .collect())
    });
}

/// [`every_placement_at_every_budget`] on the ISPC programs.
#[test]
#[ignore = "the full spilling matrix: minutes in release (see its doc)"]
fn every_placement_at_every_budget_on_the_ispc_programs() {
    every_placement_over(&program_names("tests/ispc"), |_, front| {
        ispc_launches(front)
    });
}

/// [`every_placement_at_every_budget`] on the conformance programs.
#[test]
#[ignore = "the full spilling matrix: minutes in release (see its doc)"]
fn every_placement_at_every_budget_on_the_conformance_programs() {
    every_placement_over(&program_names("tests/conformance"), |_, front| {
        ispc_launches(front)
    });
}

/// The files of `dir` as the tests name them (relative to the repository).
fn program_names(dir: &str) -> Vec<String> {
    common::spmd_files(dir)
        .iter()
        .map(|p| common::display_name(p))
        .collect()
}

/// Runs every launch `launches_of` gives each of `files` at every placement and
/// budget ([`every_budget`]), the files split over the machine's cores, and fails
/// with every mismatch.
fn every_placement_over(
    files: &[String],
    launches_of: impl Fn(&str, &FrontResult) -> Result<Vec<LaunchSpec>, String> + Sync,
) {
    let root = common::repo_root();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (runs, failures) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|k| {
                let (root, launches_of) = (&root, &launches_of);
                scope.spawn(move || {
                    let mut tally = (0, Vec::new());
                    for file in files.iter().skip(k).step_by(threads) {
                        let front = front_of(&root.join(file));
                        match launches_of(file, &front) {
                            Ok(specs) => {
                                for spec in specs {
                                    every_budget(file, &front, &spec, &mut tally);
                                }
                            }
                            Err(e) => tally.1.push(format!("{file}: {e}")),
                        }
                    }
                    tally
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a worker panicked"))
            .fold((0, Vec::new()), |(n, mut all), (m, f)| {
                all.extend(f);
                (n + m, all)
            })
    });
    assert!(runs >= files.len(), "only {runs} runs");
    assert!(
        failures.is_empty(),
        "{} failures in {runs} runs:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "{runs} runs of {} files, all equal to the interpreter",
        files.len()
    );
}

/// Runs `spec` of `file` in every placement at every budget from what its kernels
/// need without spilling (at most 40) down to the smallest that allocates (below it,
/// compiling is E0904), counting the runs and recording each mismatch or other
/// failure in `tally`.
fn every_budget(
    file: &str,
    front: &FrontResult,
    spec: &LaunchSpec,
    tally: &mut (usize, Vec<String>),
) {
    let label = label(file, spec);
    let want = match driver::run_on_interp(front, &spec.request(MAX_STEPS)) {
        Ok(w) => w,
        Err(e) => {
            return tally
                .1
                .push(format!("{label}: interp: {}", run_error(e, front)))
        }
    };
    let need = match compile(front, 255) {
        Ok(c) => c
            .program
            .kernels
            .iter()
            .map(|k| k.num_regs)
            .max()
            .unwrap_or(0),
        Err(e) => return tally.1.push(format!("{label}: compile: {e}")),
    };
    for placement in [Placement::Local, Placement::Shared, Placement::Mixed] {
        for budget in (2..=need.min(40)).rev() {
            let opts = DacRunOptions {
                codegen: options(budget, placement),
                ..DacRunOptions::default()
            };
            let codegen = dac::for_launch(&opts.codegen, &spec.request(MAX_STEPS));
            let compiled = match dac::compile(front, driver::OPTIMIZE_BY_DEFAULT, &codegen) {
                Ok(c) => c,
                Err(RunError::Compile(d)) if d.iter().any(|d| d.code == codes::REGISTER_BUDGET) => {
                    break;
                }
                Err(e) => {
                    tally.1.push(format!(
                        "{label} {placement:?} @{budget}: {}",
                        run_error(e, front)
                    ));
                    break;
                }
            };
            tally.0 += 1;
            let got = within_budget(compiled, budget)
                .and_then(|c| run(front, &c, spec, &opts))
                .and_then(|got| compare("dac-gpu", &want, &got));
            if let Err(e) = got {
                tally
                    .1
                    .push(format!("{label} {placement:?} @{budget}: {e}"));
            }
        }
    }
}

/// A recursive kernel (out-of-line calls with a software stack per gang) with more
/// values live across its calls than a tiny budget holds.
const RECURSIVE: &str = r#"
static float walk(float x, int depth) {
    if (depth == 0) {
        return x;
    }
    float a = x * 1.5 + 1, b = x - 2, c = x * x, d = a * b;
    float e = c + d, f = a - c, g = b * e, h = f + g;
    float r = walk(a + b * 0.25, depth - 1);
    return r + a * b + c * d + e * f + g * h + a + h;
}

task void recurse(uniform float out[], uniform float x[]) {
    int t = threadIdx.x;
    out[t] = walk(x[t] * 0.01, t % 5 + 1);
}
"#;

/// A kernel that keeps many values live while it uses dynamic shared memory.
const DYNAMIC: &str = r#"
task void blend(uniform float out[], uniform float x[]) {
    shared float tile[];
    int t = threadIdx.x;
    tile[t] = x[t];
    barrier();
    float a = tile[t], b = tile[(t + 1) % blockDim.x], c = tile[(t + 2) % blockDim.x];
    float d = a * b, e = b * c, f = c * a, g = a + b + c;
    float acc = 0;
    for (uniform int k = 0; k < 8; k++) {
        float v = tile[(t + k) % blockDim.x];
        acc += v * d + e * f - g * v + a * k;
        d = d * 0.5 + v;
        e = e - f * 0.25;
    }
    out[t] = acc + a + b + c + d + e + f + g;
}
"#;

/// NVIDIA's shared-memory spilling refuses recursion and dynamic shared memory; ours
/// demotes both under `--regalloc shared|mixed|auto` with results identical to the
/// interpreter's, and really demotes (shared spill code, no local spill code for
/// `shared`).
#[test]
fn recursion_and_dynamic_shared_memory_demote_like_any_kernel() {
    let launches = [
        (RECURSIVE, "recurse", None),
        (DYNAMIC, "blend", Some("384".to_string())),
    ];
    for (src, entry, dynamic_shared) in launches {
        let front = common::check_source_for("restricted.spmd", src, common::DAC_GPU);
        assert!(!front.diags.has_errors(), "{}", common::render_all(&front));
        let spec = LaunchSpec {
            entry: entry.into(),
            args: vec!["out=zeros(96)".into(), "x=range(96)".into()],
            grid: None,
            block: Some("96".into()),
            dynamic_shared,
        };
        for p in [SHARED, MIXED, AUTO] {
            let opts = DacRunOptions {
                codegen: strategy(10, p),
                ..DacRunOptions::default()
            };
            let got = differential(&front, &Err("unused".into()), &spec, &opts)
                .unwrap_or_else(|e| panic!("{entry} placement {p}: {e}"));
            if p != AUTO {
                assert!(count(&got, "demoted_stores") > 0, "{entry} placement {p}");
            }
            if p == SHARED {
                assert_eq!(count(&got, "spill_stores"), 0, "{entry}");
            }
        }
    }
}

/// The demoted slots' base `S` is past the dynamic shared memory: with 1000 dynamic
/// bytes the kernel's `.shared` is its own layout (the dynamic array included) plus
/// the slots, and the base register starts at that layout's end.
#[test]
fn the_demoted_layout_starts_after_the_dynamic_shared_memory() {
    let front = common::check_source_for("restricted.spmd", DYNAMIC, common::DAC_GPU);
    let compiled_for = |dynamic_shared| {
        let options = Options {
            dynamic_shared,
            block_threads: Some(96),
            ..strategy(10, SHARED)
        };
        compile_placed(&front, &options).expect("compiles")
    };
    let plain = compiled_for(0);
    let dynamic = compiled_for(1000);
    let (r0, r1) = (&plain.regs[0], &dynamic.regs[0]);
    assert!(r1.demoted_slots > 0, "{r1:?}");
    assert_eq!(r0.demoted_bytes, r1.demoted_bytes);
    let k = &dynamic.program.kernels[0];
    let base = k.shared_bytes - r1.demoted_bytes;
    assert_eq!(base, 1000);
    assert_eq!(plain.program.kernels[0].shared_bytes, r0.demoted_bytes);
    // The entry code's last step: `%rB = 4·t + S`.
    let text = sim::gpu::print(&dynamic.program);
    assert!(text.contains(", 4, 1000;"), "{text}");
}
