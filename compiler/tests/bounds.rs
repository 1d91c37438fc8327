//! Out-of-bounds accesses trap on every target, at their source line: the interpreter
//! and dac-gpu by their own memory models, nyuzi by the checked run's protection
//! (`back::nyuzi::protection`). `--no-bounds-check` gives nyuzi's bare hardware, where
//! the same programs run to the end; in-bounds launches of the same kernels (tails,
//! partial gangs, masked lanes) never trap.

use std::path::PathBuf;
use std::process::{Command, Output};

const TRAP: i32 = 3;
const TARGETS: [&str; 3] = ["interp", "dac-gpu", "nyuzi"];

/// A kernel, one launch that runs off a buffer and one that stays inside.
struct Case {
    name: &'static str,
    source: &'static str,
    bad: &'static [&'static str],
    good: &'static [&'static str],
    /// `file:line:col` of the faulting access.
    line: &'static str,
    /// What nyuzi's message says of the address.
    nyuzi_says: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "past_end",
        source: "export void past_end(uniform float out[], uniform int n) {\n    foreach (i = 0 ... n) {\n        out[i + 1] = i;\n    }\n}\n",
        bad: &["--arg", "out=zeros(16)", "--arg", "n=16"],
        good: &["--arg", "out=zeros(16)", "--arg", "n=15"],
        line: "past_end.spmd:3:9",
        nyuzi_says: "0 bytes past the end of buffer `out`",
    },
    Case {
        name: "before_start",
        source: "export void before_start(uniform int out[], uniform int n) {\n    foreach (i = 0 ... n) {\n        out[i - 1] = i;\n    }\n}\n",
        bad: &["--arg", "out=zeros(16)", "--arg", "n=16"],
        good: &["--arg", "out=zeros(16)", "--arg", "n=0"],
        line: "before_start.spmd:3:9",
        nyuzi_says: "4 bytes before the start of buffer `out`",
    },
    Case {
        name: "null_store",
        source: "export void null_store(uniform int out[], uniform int lane) {\n    uniform int * uniform p = NULL;\n    if (programIndex == lane) {\n        *p = 7;\n    }\n    out[programIndex] = 1;\n}\n",
        bad: &["--arg", "out=zeros(16)", "--arg", "lane=3", "--block", "16"],
        good: &["--arg", "out=zeros(16)", "--arg", "lane=-1", "--block", "16"],
        line: "null_store.spmd:4:9",
        nyuzi_says: "through a null pointer",
    },
    Case {
        name: "short_input",
        source: "export void short_input(uniform float src[], uniform float out[], uniform int n) {\n    foreach (i = 0 ... n) {\n        out[i] = src[i] + 1;\n    }\n}\n",
        bad: &["--arg", "src=range(31)", "--arg", "out=zeros(32)", "--arg", "n=32"],
        good: &["--arg", "src=range(31)", "--arg", "out=zeros(32)", "--arg", "n=31"],
        line: "short_input.spmd:3:18",
        nyuzi_says: "0 bytes past the end of buffer `src`",
    },
    Case {
        name: "stencil_rows",
        source: "// A 5-point stencil on a 16-wide grid: one block per row.\nexport void stencil_rows(uniform float src[], uniform float out[], uniform int w) {\n    int x = threadIdx.x + 1;\n    int y = blockIdx.y + 1;\n    float s = src[y * w + x] + src[(y - 1) * w + x] + src[(y + 1) * w + x]\n        + src[y * w + x - 1] + src[y * w + x + 1];\n    out[y * w + x] = 0.2 * s;\n}\n",
        // Rows 1..=9 of a 10-row grid: the last reads row 10, one too many.
        bad: &[
            "--arg", "src=range(160)", "--arg", "out=zeros(160)", "--arg", "w=16",
            "--block", "14", "--grid", "1,9",
        ],
        good: &[
            "--arg", "src=range(160)", "--arg", "out=zeros(160)", "--arg", "w=16",
            "--block", "14", "--grid", "1,8",
        ],
        line: "stencil_rows.spmd:5:55",
        nyuzi_says: "4 bytes past the end of buffer `src`",
    },
];

/// A file holding `text`, in a directory of the test's own (`test`): the tests run
/// at once.
fn scratch(test: &str, name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spmdc-bounds-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{name}.spmd"));
    std::fs::write(&path, text).expect("write scratch file");
    path
}

fn run(test: &str, case: &Case, target: &str, launch: &[&str], extra: &[&str]) -> Output {
    let file = scratch(test, case.name, case.source);
    Command::new(env!("CARGO_BIN_EXE_spmdc"))
        .arg("run")
        .arg(&file)
        .args(["--entry", case.name, "--target", target, "--print", "out"])
        .args(launch)
        .args(extra)
        .output()
        .expect("spawn spmdc")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn running_off_a_buffer_traps_at_the_access_on_every_target() {
    for case in CASES {
        for target in TARGETS {
            let out = run("trap", case, target, case.bad, &[]);
            let err = stderr(&out);
            assert_eq!(
                out.status.code(),
                Some(TRAP),
                "{} on {target}: {err}",
                case.name
            );
            assert!(
                err.contains(case.line),
                "{} on {target}: expected the trap at {}:\n{err}",
                case.name,
                case.line
            );
            if target == "nyuzi" {
                assert!(
                    err.contains(case.nyuzi_says),
                    "{}: expected `{}`:\n{err}",
                    case.name,
                    case.nyuzi_says
                );
            }
        }
    }
}

#[test]
fn without_bounds_checks_nyuzi_runs_them_as_the_hardware_does() {
    for case in CASES {
        let out = run("bare", case, "nyuzi", case.bad, &["--no-bounds-check"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            case.name,
            stderr(&out)
        );
    }
}

#[test]
fn in_bounds_launches_run_alike_everywhere() {
    for case in CASES {
        let outputs: Vec<String> = TARGETS
            .iter()
            .map(|target| {
                let out = run("good", case, target, case.good, &[]);
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{} on {target}: {}",
                    case.name,
                    stderr(&out)
                );
                String::from_utf8_lossy(&out.stdout).into_owned()
            })
            .collect();
        assert!(
            outputs
                .iter()
                .all(|o| o == &outputs[0] && o.contains("out = [")),
            "{}: outputs differ: {outputs:#?}",
            case.name
        );
    }
}
