//! Differential tests of the Nyuzi target against the reference interpreter.
//!
//! Every launch runs twice from one front end (checked for Nyuzi: 16 lanes, 4-byte
//! pointers): on the interpreter (`driver::run_on_interp`) and compiled, placed in a
//! launch image and run on the functional simulator (`back::nyuzi::run`). Every buffer
//! must come back byte for byte identical (floats bit for bit) and the returned values
//! must agree.
//!
//! The launches: the command each example's header suggests (an `@file` input replaced
//! by random data of the same length) plus a few more shapes, and every ISPC-style
//! program of `tests/ispc` and `tests/conformance` (the test entry and `result`, as
//! `tests/lower.rs` runs them). A launch that fails because of a known compiler or
//! runtime limitation is listed in [`KNOWN_FAILURES`] with the reason; the list is
//! checked exactly, so regressions and fixes both show.
//!
//! Also: an image written by `spmdc --emit hex` parses back, runs on a fresh machine
//! and leaves the same buffer bytes at the layout's addresses; machines of 1×1, 1×4
//! and 2×4 threads agree; blocks of 256 instances with barriers run on 1×4; faults
//! and runaway kernels are reported with their place.

mod common;

use std::path::Path;
use std::process::Command;

use common::launches::*;
use spmdc::back::nyuzi::image::MachineShape;
use spmdc::back::nyuzi::run::{self as nyuzi, NyuziRunOptions};
use spmdc::driver::{self, FrontResult};
use spmdc::front::sema;
use spmdc::launch::RunResult;

/// Instructions per launch before a run is stopped.
const MAX_STEPS: u64 = 100_000_000;

/// A launch known not to match, by its label (`FILE` or `FILE#entry`): a part of the
/// message it must fail with, and the reason.
const KNOWN_FAILURES: &[(&str, &str, &str)] = &[];

// ---------------------------------------------------------------------------------

fn nyuzi_target() -> sema::Target {
    sema::Target {
        program_count: 16,
        pointer_size: 4,
    }
}

fn front_of(path: &Path) -> FrontResult {
    common::check_file_for(path, nyuzi_target())
}

/// A program compiled for Nyuzi once, for several launches.
type Compiled = (spmdc::ir::Module, spmdc::back::nyuzi::object::Object);

fn compile(front: &FrontResult) -> Result<Compiled, String> {
    nyuzi::compile(front, driver::OPTIMIZE_BY_DEFAULT).map_err(|e| run_error(e, front))
}

fn run_compiled(
    front: &FrontResult,
    compiled: &Compiled,
    spec: &LaunchSpec,
    shape: MachineShape,
) -> Result<RunResult, String> {
    let opts = NyuziRunOptions {
        machine: shape,
        ..NyuziRunOptions::default()
    };
    let req = spec.request(MAX_STEPS);
    let mut built = nyuzi::prepare(front, &req)
        .and_then(|l| {
            nyuzi::place(
                l,
                compiled.0.clone(),
                compiled.1.clone(),
                shape,
                &opts.image,
            )
        })
        .map_err(|e| run_error(e, front))?;
    nyuzi::run_built(&mut built, req.limits.max_steps, &opts).map_err(|e| run_error(e, front))
}

fn run_nyuzi(
    front: &FrontResult,
    spec: &LaunchSpec,
    shape: MachineShape,
) -> Result<RunResult, String> {
    run_compiled(front, &compile(front)?, spec, shape)
}

/// Runs one launch on both targets; `Err` says how they differ.
fn differential(
    front: &FrontResult,
    compiled: &Result<Compiled, String>,
    spec: &LaunchSpec,
) -> Result<RunResult, String> {
    let want = driver::run_on_interp(front, &spec.request(MAX_STEPS))
        .map_err(|e| format!("interp failed: {}", run_error(e, front)))?;
    let got = run_compiled(front, compiled.as_ref()?, spec, MachineShape::default())?;
    compare("nyuzi", &want, &got)?;
    Ok(got)
}

fn is_known(label: &str) -> bool {
    KNOWN_FAILURES.iter().any(|k| k.0 == label)
}

// ---------------------------------------------------------------------------------
// Example launches

/// This suite's target.
struct Nyuzi;

impl BackEnd for Nyuzi {
    type Compiled = Compiled;
    const NAME: &'static str = "nyuzi";
    const KNOWN: &'static [(&'static str, &'static str, &'static str)] = KNOWN_FAILURES;
    fn front_of(path: &Path) -> FrontResult {
        front_of(path)
    }
    fn compile(front: &FrontResult) -> Result<Compiled, String> {
        compile(front)
    }
    fn differential(
        front: &FrontResult,
        compiled: &Result<Compiled, String>,
        spec: &LaunchSpec,
    ) -> Result<RunResult, String> {
        differential(front, compiled, spec)
    }
}

#[test]
fn examples_match_the_interpreter() {
    examples_match::<Nyuzi>();
}

#[test]
fn ispc_programs_match_the_interpreter() {
    ispc_programs_match::<Nyuzi>();
}

#[test]
fn conformance_programs_match_the_interpreter_0() {
    conformance_half::<Nyuzi>(0);
}

#[test]
fn conformance_programs_match_the_interpreter_1() {
    conformance_half::<Nyuzi>(1);
}

// ---------------------------------------------------------------------------------
// Images, machine shapes, barriers, faults

fn header_launch(file: &str) -> (FrontResult, LaunchSpec) {
    let path = common::repo_root().join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let spec = header_launches(&text).remove(0);
    (front_of(&path), spec)
}

#[test]
fn machine_shapes_agree() {
    // Grids of several blocks: each thread count splits them differently.
    for file in [
        "examples/block_reduce.spmd",
        "examples/matmul_tiled.spmd",
        "examples/gameoflife.spmd",
        "examples/stencil1d.spmd",
        "examples/histogram.spmd",
        "examples/tasks.spmd",
    ] {
        let (front, spec) = header_launch(file);
        let want = driver::run_on_interp(&front, &spec.request(MAX_STEPS)).unwrap();
        for (cores, threads) in [(1, 1), (1, 4), (2, 4)] {
            let shape = MachineShape {
                cores,
                threads_per_core: threads,
            };
            match run_nyuzi(&front, &spec, shape) {
                Ok(got) => {
                    assert_eq!(
                        got.stats.get("hardware_threads").map(|v| v.to_string()),
                        Some((cores * threads).min(want.config.block_count()).to_string())
                    );
                    if let Err(e) = compare("nyuzi", &want, &got) {
                        panic!("{file} on {cores}x{threads}: {e}");
                    }
                }
                Err(e) => {
                    let l = label(file, &spec);
                    assert!(is_known(&l), "{file} on {cores}x{threads}: {e}");
                }
            }
        }
    }
}

#[test]
fn blocks_of_256_with_barriers_on_the_default_machine() {
    // 16 gangs per block on 1 core x 4 threads: barrier() switches gangs.
    for file in ["examples/stencil1d.spmd", "examples/matmul_tiled.spmd"] {
        let (front, spec) = header_launch(file);
        assert_eq!(
            spec.block.as_deref().map(|b| b
                .split(',')
                .map(|x| x.parse::<u32>().unwrap())
                .product::<u32>()),
            Some(256)
        );
        let l = label(file, &spec);
        match differential(&front, &compile(&front), &spec) {
            Ok(got) => {
                assert_eq!(got.stats.get("gangs_per_block").unwrap().to_string(), "16");
                assert!(
                    got.stats.get("barriers").unwrap().to_string() != "0",
                    "{file}"
                );
            }
            Err(e) => assert!(is_known(&l), "{file}: {e}"),
        }
    }
}

#[test]
fn emitted_hex_images_run_on_a_fresh_machine() {
    let file = "examples/block_reduce.spmd";
    let (front, spec) = header_launch(file);
    let expected = match run_nyuzi(&front, &spec, MachineShape::default()) {
        Ok(r) => r,
        Err(e) => {
            assert!(is_known(&label(file, &spec)), "{e}");
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("spmdc-nyuzi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hex = dir.join("image.hex");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spmdc"));
    cmd.current_dir(common::repo_root())
        .args([
            file,
            "--target",
            "nyuzi",
            "--emit",
            "hex",
            "--entry",
            &spec.entry,
        ])
        .args(spec.grid.iter().flat_map(|g| ["--grid", g.as_str()]))
        .args(spec.block.iter().flat_map(|b| ["--block", b.as_str()]))
        .args(spec.args.iter().flat_map(|a| ["--arg", a.as_str()]))
        .arg("-o")
        .arg(&hex);
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&hex).unwrap();
    let layout = spmdc::back::nyuzi::layout::Layout::from_json(
        &std::fs::read_to_string(dir.join("image.hex.json")).unwrap(),
    )
    .unwrap();
    assert_eq!((layout.cores, layout.threads_per_core), (1, 4));
    assert!(layout.image_end <= 16 << 20);
    let words = sim::nyuzi::hex::parse(&text).unwrap();
    assert_eq!(
        words.len() as u32 * 4,
        layout.image_end,
        "every word up to the end is explicit"
    );
    let mut m = sim::nyuzi::Machine::new(sim::nyuzi::Config::default());
    for (i, w) in words {
        m.load_words(i * 4, &[w]).unwrap();
    }
    m.run().unwrap();
    assert!(m.all_halted());
    for (name, b) in &expected.buffers {
        let l = layout.buffer(name).unwrap();
        assert_eq!(l.bytes as usize, b.bytes().len());
        assert_eq!(l.elem, b.elem().name());
        assert_eq!(
            m.read_bytes(l.address, l.bytes).unwrap(),
            b.bytes(),
            "{name}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn spmdc(args: &[&str], stdin: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_spmdc"))
        .args(args)
        .current_dir(common::repo_root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `spmdc run - --target TARGET --entry ENTRY REST...` with `src` on stdin.
fn run_stdin(target: &str, entry: &str, rest: &[&str], src: &str) -> std::process::Output {
    let head = ["run", "-", "--target", target, "--entry", entry];
    spmdc(&[&head[..], rest].concat(), src)
}

#[test]
fn faults_name_pc_thread_address_and_source_line() {
    let src = "export void f(uniform float x[], uniform int k) {\n    x[programIndex] = 1;\n    x[k] = 2;\n}\n";
    let out = run_stdin(
        "nyuzi",
        "f",
        &["--arg", "x=zeros(16)", "--arg", "k=8000000"],
        src,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("<stdin>:3:"), "{err}");
    assert!(err.contains("at pc 0x"), "{err}");
    assert!(err.contains("hardware thread 0"), "{err}");
    assert!(err.contains("address 0x"), "{err}");
}

#[test]
fn runaway_kernels_stop_at_the_step_limit() {
    let src = "export void f(uniform int x[]) {\n    uniform int i = 0;\n    while (x[0] == 0) { i++; }\n    x[1] = i;\n}\n";
    let out = run_stdin(
        "nyuzi",
        "f",
        &["--arg", "x=zeros(4)", "--max-steps", "100000"],
        src,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("--max-steps"), "{err}");
}

#[test]
fn timing_runs_report_cycles_and_caches() {
    let out = spmdc(
        &[
            "run",
            "examples/saxpy.spmd",
            "--target",
            "nyuzi",
            "--timing",
            "--json",
            "--entry",
            "saxpy",
            "--arg",
            "n=100",
            "--arg",
            "a=2",
            "--arg",
            "x=range(100)",
            "--arg",
            "y=fill(100,1)",
        ],
        "",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["target"], "nyuzi");
    assert_eq!(v["buffers"]["y"][99], serde_json::json!(199.0));
    for key in [
        "cycles",
        "ipc",
        "dynamic_instructions",
        "l1d_read_misses",
        "l2_read_hits",
        "stall_dcache",
        "lane_utilization",
    ] {
        assert!(v["stats"].get(key).is_some(), "no {key} in {}", v["stats"]);
    }
    let mut stats = spmdc::launch::Stats::new();
    for (k, val) in v["stats"].as_object().unwrap() {
        stats.set(k, val.as_u64().unwrap_or(0));
    }
    stats.check_convention(true).unwrap();
}

#[test]
fn gangs_at_different_barriers_are_a_deadlock_on_both_targets() {
    // A uniform condition that differs between the gangs of a block.
    let src = "export void f(uniform int x[]) {\n    if (extract(threadIdx.x, 0) == 0) {\n        barrier();\n    } else {\n        barrier();\n    }\n    x[threadIdx.x] = 1;\n}\n";
    for target in ["interp", "nyuzi"] {
        let out = run_stdin(target, "f", &["--block", "48", "--arg", "x=zeros(48)"], src);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{target}: {err}");
        assert!(
            err.contains("<stdin>:3:9: runtime error: barrier deadlock: gang 0"),
            "{target}: {err}"
        );
        assert!(
            err.contains("gang 1 waits at another one (in @f inst"),
            "{target}: {err}"
        );
    }
}

#[test]
fn returned_values_come_back_from_block_0_gang_0() {
    let src = "export uniform double total(uniform int n, uniform float x[]) {\n  float s = 0;\n  foreach (i = 0 ... n) { s += x[i]; }\n  return (double)reduce_add(s) + blockIdx.x;\n}\n";
    for target in ["interp", "nyuzi"] {
        let out = run_stdin(
            target,
            "total",
            &[
                "--grid",
                "3",
                "--arg",
                "n=40",
                "--arg",
                "x=range(40)",
                "--print",
                "return",
            ],
            src,
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(text, "return = 780\n", "{target}");
    }
}

#[test]
fn stack_overflows_are_reported_and_gang_stack_fixes_them() {
    // A 400-element varying array is 25.6 KB of stack: more than the default 16 KiB.
    let src = "export void f(uniform float x[]) {\n    float a[400];\n    for (uniform int i = 0; i < 400; i++) { a[i] = x[programIndex] + i; }\n    float s = 0;\n    for (uniform int i = 0; i < 400; i += 7) { s += a[i]; }\n    x[programIndex] = s;\n}\n";
    let args = [
        "run",
        "-",
        "--entry",
        "f",
        "--arg",
        "x=range(16)",
        "--print",
        "x",
    ];
    let interp = spmdc(&args, src);
    assert_eq!(interp.status.code(), Some(0));
    let small = spmdc(&[&args[..], &["--target", "nyuzi"]].concat(), src);
    let err = String::from_utf8_lossy(&small.stderr);
    assert_eq!(small.status.code(), Some(3), "{err}");
    assert!(
        err.contains("stack overflow") && err.contains("--gang-stack"),
        "{err}"
    );
    let big = spmdc(
        &[&args[..], &["--target", "nyuzi", "--gang-stack", "65536"]].concat(),
        src,
    );
    assert_eq!(
        big.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&big.stderr)
    );
    assert_eq!(big.stdout, interp.stdout);
}

#[test]
fn traps_are_reported_at_the_users_line() {
    let src = "export void f(uniform int x[]) {\n    int v = x[programIndex];\n    assert(v < 5);\n    x[programIndex] = v / (v - 3);\n}\n";
    let run = |arg: &str| {
        let out = run_stdin("nyuzi", "f", &["--arg", arg], src);
        assert_eq!(out.status.code(), Some(3));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run("x=range(16)");
    assert!(
        err.contains("<stdin>:3:5: runtime error: assertion failed"),
        "{err}"
    );
    let err = run("x=fill(16,3)");
    assert!(err.contains("<stdin>:4:"), "{err}");
    assert!(
        err.contains("integer division or remainder by zero"),
        "{err}"
    );
}

#[test]
fn the_timing_model_computes_what_the_functional_machine_does() {
    for file in ["examples/block_reduce.spmd", "examples/stencil1d.spmd"] {
        let (front, spec) = header_launch(file);
        let functional = run_nyuzi(&front, &spec, MachineShape::default()).unwrap();
        let opts = NyuziRunOptions {
            timing: true,
            ..NyuziRunOptions::default()
        };
        let timed = nyuzi::run_on_nyuzi(&front, &spec.request(MAX_STEPS), &opts).unwrap();
        compare("nyuzi", &functional, &timed).unwrap_or_else(|e| panic!("{file}: {e}"));
        timed.stats.check_convention(true).unwrap();
        assert_eq!(
            timed.stats.get("dynamic_instructions"),
            functional.stats.get("dynamic_instructions"),
            "{file}"
        );
    }
}

/// The statistics report the spill code register allocation placed (static
/// counts) and the values it rematerialized: some in a kernel that keeps many vectors
/// live across its loops and barriers, none in saxpy.
#[test]
fn statistics_report_the_spill_code() {
    let root = common::repo_root();
    let spills = |file: &str| {
        let front = front_of(&root.join(file));
        let compiled = compile(&front).unwrap_or_else(|e| panic!("{file}: {e}"));
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let spec = header_launches(&text).into_iter().next().expect("a launch");
        let r = run_compiled(&front, &compiled, &spec, MachineShape::default())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let stat = |k: &str| match r.stats.get(k) {
            Some(spmdc::launch::StatValue::Count(n)) => n,
            other => panic!("{file}: {k}: {other:?}"),
        };
        let (stores, loads) = (stat("spill_stores"), stat("spill_loads"));
        assert_eq!(
            stat("rematerialized_values"),
            u64::from(compiled.1.rematerialized_values),
            "{file}"
        );
        assert_eq!(
            (stores, loads),
            (
                u64::from(compiled.1.spill_stores),
                u64::from(compiled.1.spill_loads)
            ),
            "{file}"
        );
        (stores, loads, stat("rematerialized_values"))
    };
    let (stores, loads, remat) = spills("examples/matmul_rect.spmd");
    assert!(
        stores > 0 && loads > 0 && remat > 0,
        "{stores} {loads} {remat}"
    );
    assert_eq!(spills("examples/saxpy_gpu.spmd"), (0, 0, 0));
}
