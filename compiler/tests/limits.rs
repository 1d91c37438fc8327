//! Hostile inputs end in a diagnostic, a trap or a result, in bounded time and memory.
//! Each test runs the `spmdc` binary as a user would, under a cap on its virtual memory
//! (so an unbounded allocation fails the test instead of the machine) and with a
//! timeout that only catches hangs.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Exit status of a usage error.
const USAGE: i32 = 2;
/// Exit status of a runtime trap.
const TRAP: i32 = 3;
/// Exit status of compile errors.
const COMPILE_ERROR: i32 = 1;

/// Virtual memory the child may map, in KiB: room for the allocator's reservations,
/// far below what the unbounded behaviours took (gigabytes).
const VMEM_KIB: u64 = 2 << 20;
/// Only a hang takes this long.
const HANG: Duration = Duration::from_secs(300);

/// What a bounded run produced: its exit code and (the first MiB of) its output, with
/// the full byte counts.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    stderr_bytes: usize,
}

/// Reads a stream to its end, keeping the first MiB; gives the text and the total.
fn drain(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<(String, usize)> {
    std::thread::spawn(move || {
        let (mut kept, mut total, mut buf) = (Vec::new(), 0, vec![0u8; 1 << 16]);
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n;
            if kept.len() < 1 << 20 {
                kept.extend_from_slice(&buf[..n]);
            }
        }
        (String::from_utf8_lossy(&kept).into_owned(), total)
    })
}

/// A scratch file holding `text`, named for the test.
fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spmdc-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write scratch file");
    path
}

/// Runs `spmdc ARGS` with at most `vmem_kib` KiB of virtual memory.
fn spmdc_within(vmem_kib: u64, args: &[&str]) -> Run {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {vmem_kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_spmdc"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spmdc");
    let out = drain(child.stdout.take().expect("stdout"));
    let err = drain(child.stderr.take().expect("stderr"));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            panic!("spmdc {args:?} still running after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, _) = out.join().expect("stdout reader");
    let (stderr, stderr_bytes) = err.join().expect("stderr reader");
    Run {
        code: status.code(),
        stdout,
        stderr,
        stderr_bytes,
    }
}

fn spmdc(args: &[&str]) -> Run {
    spmdc_within(VMEM_KIB, args)
}

/// Asserts the exit code and that stderr says `needle`.
fn expect(run: &Run, code: i32, needle: &str) {
    assert_eq!(
        run.code,
        Some(code),
        "exit code; stderr:\n{}\nstdout:\n{}",
        run.stderr,
        run.stdout
    );
    assert!(
        run.stderr.contains(needle),
        "stderr lacks `{needle}`:\n{}",
        run.stderr
    );
}

const STORE_ONE: &str =
    "export void f(uniform int out[]) { if (programIndex < 16) out[programIndex] = 1; }\n";

#[test]
fn interp_buffer_too_large_for_its_memory_is_a_usage_error() {
    let src = scratch(
        "big.spmd",
        "export void f(uniform double out[]) { out[programIndex] = 1; }\n",
    );
    // 2^28 doubles are within the documented buffer limit but larger than the
    // interpreter's 2 GiB global memory. The zeroed buffer is mapped, never touched,
    // so the cap is on address space only.
    let run = spmdc_within(
        8 << 20,
        &[
            "run",
            src.to_str().unwrap(),
            "--entry",
            "f",
            "--arg",
            "out=zeros(268435456)",
        ],
    );
    expect(
        &run,
        USAGE,
        "does not fit in the interpreter's global memory",
    );
}

#[test]
fn endless_printing_on_interp_stops_at_the_output_limit() {
    let src = scratch(
        "print.spmd",
        "export void f() { while (true) { print(\"hello %\\n\", programIndex); } }\n",
    );
    let run = spmdc(&["run", src.to_str().unwrap(), "--entry", "f"]);
    expect(&run, TRAP, "printed output exceeded the limit");
    assert!(run.stdout.is_empty(), "a trapped run prints no result");
}

#[test]
fn endless_input_files_are_usage_errors() {
    let run = run_dac(&["--config", "/dev/zero"]);
    expect(&run, USAGE, "larger than");
    let run = spmdc(&["check", "/dev/zero"]);
    expect(&run, USAGE, "larger than");
    let huge = scratch("huge.h", &" ".repeat(17 << 20));
    let includer = scratch(
        "includer.spmd",
        &format!("#include \"{}\"\n", huge.display()),
    );
    let run = spmdc(&["check", includer.to_str().unwrap()]);
    expect(&run, COMPILE_ERROR, "larger than");
}

#[test]
fn many_diagnostics_on_one_long_line_print_a_bounded_report() {
    // 20,000 unused variables on one 378 KB line: printing each with its source line
    // would be gigabytes.
    let body: String = (0..20_000).map(|i| format!("int v{i} = {i}; ")).collect();
    let src = scratch(
        "unused.spmd",
        &format!("export void f(uniform int out[]) {{ {body} out[programIndex] = 1; }}\n"),
    );
    let run = spmdc(&["check", src.to_str().unwrap()]);
    expect(&run, 0, "19900 more diagnostics not shown");
    assert!(run.stderr.contains("warning: 20000 warnings emitted"));
    assert!(
        run.stderr_bytes < 64 << 10,
        "{} bytes of diagnostics",
        run.stderr_bytes
    );
}

/// `spmdc run --target dac-gpu` of [`STORE_ONE`] with `extra` flags.
fn run_dac(extra: &[&str]) -> Run {
    let kernel = scratch("store.spmd", STORE_ONE);
    let mut args = vec![
        "run",
        kernel.to_str().unwrap(),
        "--target",
        "dac-gpu",
        "--entry",
        "f",
        "--arg",
        "out=zeros(16)",
    ];
    args.extend(extra);
    spmdc(&args)
}

#[test]
fn huge_dac_gpu_grids_are_refused_before_allocating() {
    let run = run_dac(&["--grid", "100000000"]);
    expect(&run, USAGE, "launch fewer blocks");
}

#[test]
fn launch_and_machine_usage_errors_exit_2_before_compiling() {
    // The kernel does not even compile: a usage error must be found first.
    let broken = scratch("broken.spmd", "export void f( {\n");
    let broken = broken.to_str().unwrap();
    let run = spmdc(&[
        "run", broken, "--target", "dac-gpu", "--entry", "f", "--block", "1025",
    ]);
    expect(&run, USAGE, "at most 1024");
    let run = spmdc(&["run", broken, "--entry", "f", "--grid", "0"]);
    expect(&run, USAGE, "--grid 0");
    let preset = include_str!("../../sim/configs/gtx480.toml");
    let narrow = scratch(
        "narrow.toml",
        &preset.replace("warp_size = 32", "warp_size = 16"),
    );
    assert!(std::fs::read_to_string(&narrow)
        .unwrap()
        .contains("warp_size = 16"));
    let run = spmdc(&[
        "run",
        broken,
        "--target",
        "dac-gpu",
        "--entry",
        "f",
        "--config",
        narrow.to_str().unwrap(),
    ]);
    expect(&run, USAGE, "warp_size 16");
    let run = spmdc(&[
        "run", broken, "--target", "dac-gpu", "--entry", "f", "--config", "nope",
    ]);
    expect(&run, USAGE, "--config");
}

#[test]
fn a_launch_the_machine_cannot_hold_is_a_usage_error() {
    // Found only once the kernel is compiled (its shared memory), but still the
    // request's fault, not the kernel's.
    let preset = include_str!("../../sim/configs/gtx480.toml");
    let small = preset
        .lines()
        .map(|l| {
            if l.starts_with("max_shared_mem_per_block") {
                "max_shared_mem_per_block = 16"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let small = scratch("small.toml", &small);
    let kernel = scratch(
        "shared.spmd",
        "export void f(uniform int out[]) { uniform shared int t[64]; t[programIndex] = 1; barrier(); out[programIndex] = t[programIndex]; }\n",
    );
    let run = spmdc(&[
        "run",
        kernel.to_str().unwrap(),
        "--target",
        "dac-gpu",
        "--timing",
        "--entry",
        "f",
        "--arg",
        "out=zeros(32)",
        "--config",
        small.to_str().unwrap(),
    ]);
    expect(&run, USAGE, "cannot launch `f`");
}

/// `#define M0 1`, then `#define Mi M(i-1) + M(i-1)` up to `M{levels}`, used once.
fn doubling_macros(levels: usize) -> String {
    let mut text = String::from("#define M0 1\n");
    for i in 1..=levels {
        text += &format!("#define M{i} M{} + M{}\n", i - 1, i - 1);
    }
    text + &format!("export void f(uniform int out[]) {{ out[programIndex] = M{levels}; }}\n")
}

#[test]
fn exponential_macro_expansion_is_an_error() {
    for levels in [22, 24, 40] {
        let src = scratch(&format!("macros{levels}.spmd"), &doubling_macros(levels));
        let run = spmdc(&["check", src.to_str().unwrap()]);
        expect(&run, COMPILE_ERROR, "error[E0014]");
    }
}

#[test]
fn an_expression_chain_of_a_million_terms_is_reported_without_overflowing() {
    let src = scratch(
        "chain.spmd",
        &format!(
            "export void f(uniform int out[]) {{ out[programIndex] = {}1; }}\n",
            "1 + ".repeat(1_000_000)
        ),
    );
    let run = spmdc(&["check", src.to_str().unwrap()]);
    expect(&run, COMPILE_ERROR, "E0325");
}

#[test]
fn deeply_nested_divergent_branches_compile() {
    // Each nested divergent `if` is a region mask of the relative-uniformity analysis;
    // its cost used to grow with the cube of the depth (21 s at 1450 levels).
    let depth = 1450;
    let src = scratch(
        "nested.spmd",
        &format!(
            "export void f(uniform int out[]) {{ int x = 0;\n{}x = 1;\nout[programIndex] = x; }}\n",
            "if (programIndex > 0)\n".repeat(depth)
        ),
    );
    let run = spmdc(&[src.to_str().unwrap(), "--emit", "ir"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // The innermost region's `x = 1` is still found uniform among its active lanes.
    assert!(
        run.stdout.contains("uniform 1 [under"),
        "{}",
        &run.stdout[..2000.min(run.stdout.len())]
    );
}
