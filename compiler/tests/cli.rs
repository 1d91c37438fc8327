//! The `spmdc` command as a user meets it: exit codes, output formats, stdin, `explain`.

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn spmdc(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spmdc"))
        .args(args)
        .current_dir(common::repo_root())
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spmdc");
    let input = stdin.unwrap_or("").to_string();
    let mut pipe = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().expect("wait for spmdc");
    writer.join().unwrap();
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const FIVE_ERRORS: &str = "\
export void f(uniform float x[], uniform int n) {
    float a = 1
    float b = 2;
    a = (b + ;
    for (int i = 0; i < n; i++ {
        a += 1;
    }
    if (a > ) b = 3;
    x[programIndex] = a b;
}
";

#[test]
fn five_independent_syntax_errors_in_one_run() {
    let out = spmdc(&["check", "-", "--error-format=json"], Some(FIVE_ERRORS));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let diags: Vec<serde_json::Value> = stderr(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    let positions: Vec<(u64, u64)> = diags
        .iter()
        .map(|d| (d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap()))
        .collect();
    // Missing `;` is reported where it belongs: right after `1` on line 2.
    assert_eq!(positions, vec![(2, 16), (4, 14), (5, 32), (8, 13), (9, 25)]);
    let codes: Vec<&str> = diags.iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(codes, vec!["E0103", "E0100", "E0100", "E0100", "E0100"]);
    for d in &diags {
        assert_eq!(d["severity"], "error");
        assert_eq!(d["file"], "<stdin>");
        assert!(d["span"].as_array().unwrap().len() == 2);
        assert!(d["labels"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["primary"] == true));
    }
}

#[test]
fn human_diagnostics_are_rustc_style() {
    let out = spmdc(&["check", "-", "--color=never"], Some(FIVE_ERRORS));
    let err = stderr(&out);
    assert!(
        err.contains("error[E0103]: expected `;`, found `float`"),
        "{err}"
    );
    assert!(err.contains("┌─ <stdin>:2:16"), "{err}");
    assert!(
        err.contains("error: could not compile due to 5 errors"),
        "{err}"
    );
    assert!(!err.contains('\x1b'), "no colour was asked for");
    let colored = spmdc(&["check", "-", "--color=always"], Some(FIVE_ERRORS));
    assert!(stderr(&colored).contains('\x1b'), "--color=always colours");
}

#[test]
fn no_color_env_is_honoured_even_when_auto() {
    let out = Command::new(env!("CARGO_BIN_EXE_spmdc"))
        .args(["check", "-", "--color=auto"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!stderr(&out).contains('\x1b'));
}

#[test]
fn ispc_style_program_checks_unchanged() {
    let src = "\
task void f_fu(uniform float RET[], uniform float aFOO[], uniform float b) {
    float a = aFOO[programIndex];
    float sum = 0;
    foreach (i = 0 ... 6) { sum += aFOO[i]; }
    cif (a > 3) { RET[programIndex] = reduce_add(sum) + rotate(a, 1); }
    else { RET[programIndex] = b; }
}
task void result(uniform float RET[]) { RET[programIndex] = 5; }
";
    let out = spmdc(&["check", "-"], Some(src));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn emit_tokens_and_ast() {
    let src = "export void f(uniform int a[]) { a[0] = 1 + 2 * 3; }\n";
    let tokens = spmdc(&["-", "--emit", "tokens"], Some(src));
    assert_eq!(tokens.status.code(), Some(0));
    let t = stdout(&tokens);
    assert!(t.starts_with("1:1\tkeyword\texport\n"), "{t}");
    assert!(t.contains("1:45\tint\t2  = 2\n"), "{t}");
    let ast = spmdc(&["-", "--emit", "ast"], Some(src));
    assert_eq!(ast.status.code(), Some(0), "{}", stderr(&ast));
    assert!(
        stdout(&ast).contains("(= (index a 0) (+ 1 (* 2 3)))"),
        "{}",
        stdout(&ast)
    );
}

#[test]
fn emit_of_later_stages_is_a_clear_error() {
    // dac-gpu has no launch images: `--emit hex` is for nyuzi only.
    let out = spmdc(
        &[
            "examples/saxpy.spmd",
            "--emit",
            "hex",
            "--target",
            "dac-gpu",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("E0901") && err.contains("writes Nyuzi launch images"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
}

#[test]
fn several_stages_at_once_each_as_alone() {
    let alone = |stage: &str| {
        let out = spmdc(
            &["examples/saxpy.spmd", "--target", "nyuzi", "--emit", stage],
            None,
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    let both = spmdc(
        &[
            "examples/saxpy.spmd",
            "--target",
            "nyuzi",
            "--emit",
            "ir,asm",
        ],
        None,
    );
    assert_eq!(both.status.code(), Some(0), "{}", stderr(&both));
    let expected = format!(
        "==== ir ====\n{}==== asm ====\n{}",
        alone("ir"),
        alone("asm")
    );
    assert_eq!(stdout(&both), expected);
    // A launch image is files of its own: not with another stage.
    let hex = spmdc(
        &[
            "examples/saxpy.spmd",
            "--target",
            "nyuzi",
            "--emit",
            "asm,hex",
        ],
        None,
    );
    assert_eq!(hex.status.code(), Some(2), "{}", stderr(&hex));
    assert!(
        stderr(&hex).contains("cannot be combined"),
        "{}",
        stderr(&hex)
    );
}

#[test]
fn print_after_shows_the_ir_after_each_named_pass() {
    let all = spmdc(
        &[
            "examples/saxpy.spmd",
            "--emit",
            "ir",
            "--print-after",
            "all",
        ],
        None,
    );
    assert_eq!(all.status.code(), Some(0), "{}", stderr(&all));
    let err = stderr(&all);
    let headers: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with(";; IR after "))
        .collect();
    assert_eq!(headers.first(), Some(&";; IR after lower"), "{err}");
    assert!(headers.contains(&";; IR after promote"), "{err}");
    assert!(headers.contains(&";; IR after dce (2)"), "{err}");
    // Each printed module parses back (the IR text round-trips).
    for module in err.split(";; IR after ").skip(1) {
        let text = module.split_once('\n').map_or("", |(_, t)| t);
        spmdc::ir::parse::parse_module(text)
            .unwrap_or_else(|e| panic!("not IR text: {e:?}\n{text}"));
    }
    // The last one is the optimized IR `--emit ir` prints (without its annotations).
    let one = spmdc(
        &[
            "examples/saxpy.spmd",
            "--emit",
            "ir",
            "--print-after",
            "gvn",
        ],
        None,
    );
    assert_eq!(
        stderr(&one).matches(";; IR after gvn").count(),
        2,
        "the pipeline runs gvn twice"
    );
    let bad = spmdc(&["examples/saxpy.spmd", "--print-after", "gvm"], None);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("`gvn`"), "{}", stderr(&bad));
}

#[test]
fn dac_gpu_asm_and_run() {
    let out = spmdc(
        &[
            "examples/saxpy.spmd",
            "--emit",
            "asm",
            "--target",
            "dac-gpu",
            "--source-lines",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let asm = stdout(&out);
    assert!(asm.contains(".entry saxpy("), "{asm}");
    assert!(asm.contains("// examples/saxpy.spmd:"), "{asm}");
    let args = [
        "run",
        "examples/saxpy.spmd",
        "--target",
        "dac-gpu",
        "--entry",
        "saxpy",
        "--arg",
        "n=4",
        "--arg",
        "a=2",
        "--arg",
        "x=range(4)",
        "--arg",
        "y=zeros(4)",
        "--json",
    ];
    for extra in [
        &[][..],
        &["--timing", "--sched", "lrr", "--config", "maxwell"][..],
    ] {
        let all: Vec<&str> = args.iter().chain(extra).copied().collect();
        let out = spmdc(&all, None);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
        assert_eq!(v["buffers"]["y"], serde_json::json!([0.0, 2.0, 4.0, 6.0]));
        assert!(v["stats"]["dynamic_instructions"].as_u64().unwrap() > 0);
        if !extra.is_empty() {
            assert!(v["stats"]["cycles"].as_u64().unwrap() > 0);
        }
    }
    // An out-of-bounds store traps with exit 3 at its source line.
    let src = "export void k(uniform int a[]) {\n  a[programIndex + 100000000] = 1;\n}\n";
    let out = spmdc(
        &[
            "run",
            "-",
            "--target",
            "dac-gpu",
            "--entry",
            "k",
            "--arg",
            "a=zeros(4)",
        ],
        Some(src),
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains(":2:"), "{}", stderr(&out));
}

#[test]
fn nyuzi_asm_and_hex() {
    let out = spmdc(
        &[
            "examples/saxpy.spmd",
            "--emit",
            "asm",
            "--target",
            "nyuzi",
            "--source-lines",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let asm = stdout(&out);
    assert!(asm.contains("saxpy:"), "{asm}");
    assert!(asm.contains("y[i] = a * x[i] + y[i];"), "{asm}");
    // An image is one launch: --emit hex needs the entry and its arguments.
    let out = spmdc(
        &["examples/saxpy.spmd", "--emit", "hex", "--target", "nyuzi"],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--entry"), "{}", stderr(&out));
    let dir = std::env::temp_dir().join(format!("spmdc-cli-hex-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hex = dir.join("saxpy.hex");
    let hex_arg = hex.to_string_lossy().into_owned();
    let out = spmdc(
        &[
            "examples/saxpy.spmd",
            "--emit",
            "hex",
            "--target",
            "nyuzi",
            "--entry",
            "saxpy",
            "--arg",
            "n=10",
            "--arg",
            "a=2",
            "--arg",
            "x=range(10)",
            "--arg",
            "y=zeros(10)",
            "-o",
            &hex_arg,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let layout: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("saxpy.hex.json")).unwrap())
            .unwrap();
    assert_eq!(layout["buffers"][1]["name"], "y");
    assert_eq!(layout["buffers"][1]["elem"], "float");
    assert_eq!(layout["buffers"][1]["length"], 10);
    assert_eq!(
        (
            layout["cores"].as_u64(),
            layout["threads_per_core"].as_u64()
        ),
        (Some(1), Some(4))
    );
    assert!(std::fs::read_to_string(&hex).unwrap().lines().count() > 100);
    let _ = std::fs::remove_dir_all(&dir);
    // A launch error (a missing argument) is a usage error.
    let out = spmdc(
        &[
            "examples/saxpy.spmd",
            "--emit",
            "hex",
            "--target",
            "nyuzi",
            "--entry",
            "saxpy",
            "--arg",
            "n=1",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn output_file_with_dash_o() {
    let dir = std::env::temp_dir().join(format!("spmdc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out_path = dir.join("ast.txt");
    let out = spmdc(
        &[
            "examples/saxpy.spmd",
            "--emit",
            "ast",
            "-o",
            out_path.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&out_path).unwrap();
    assert!(text.contains("saxpy"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(
        spmdc(&["check", "no/such/file.spmd"], None).status.code(),
        Some(2)
    );
    assert_eq!(
        spmdc(&["--no-such-flag", "x.spmd"], None).status.code(),
        Some(2)
    );
    assert_eq!(spmdc(&[], None).status.code(), Some(2));
    assert_eq!(
        spmdc(&["x.spmd", "--emit", "bogus"], None).status.code(),
        Some(2)
    );
    let missing = spmdc(&["check", "no/such/file.spmd", "--error-format=json"], None);
    let line = stderr(&missing);
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("one JSON line");
    assert_eq!(v["code"], "E0902");
}

/// `--max-regs` outside the ISA's 1..=255 is a usage error (exit 2) that names the
/// range, not a budget silently clamped (0 was compiled as 1, and E0904 then
/// blamed `--max-regs 1`).
#[test]
fn max_regs_outside_the_isa_is_a_usage_error() {
    let file = "examples/saxpy_gpu.spmd";
    for bad in ["0", "256", "99999"] {
        let out = spmdc(&[file, "--target", "dac-gpu", "--max-regs", bad], None);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert!(stderr(&out).contains("1..=255"), "{bad}: {}", stderr(&out));
    }
    let top = spmdc(&[file, "--target", "dac-gpu", "--max-regs", "255"], None);
    assert_eq!(top.status.code(), Some(0), "{}", stderr(&top));
}

#[test]
fn help_documents_exit_codes() {
    let out = spmdc(&["--help"], None);
    let text = stdout(&out);
    for needle in [
        "0  success",
        "1  compile errors",
        "2  usage error",
        "3  runtime trap",
    ] {
        assert!(text.contains(needle), "--help lacks `{needle}`:\n{text}");
    }
}

#[test]
fn explain_every_code_and_reject_unknown() {
    for info in spmdc::diag::codes::ALL {
        let out = spmdc(&["explain", info.code.as_str()], None);
        assert_eq!(out.status.code(), Some(0));
        assert!(
            stdout(&out).starts_with(info.code.as_str()),
            "{}",
            info.code
        );
    }
    let lower = spmdc(&["explain", "e0200"], None);
    assert_eq!(lower.status.code(), Some(0));
    let bad = spmdc(&["explain", "E9999"], None);
    assert_eq!(bad.status.code(), Some(2));
    let list = spmdc(&["explain", "--list"], None);
    assert_eq!(stdout(&list).lines().count(), spmdc::diag::codes::ALL.len());
}

#[test]
fn includes_resolve_relative_to_the_including_file() {
    let dir = std::env::temp_dir().join(format!("spmdc-inc-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("sub/consts.h"),
        "#pragma once\n#define SCALE 2.0f\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("sub/helper.spmd"),
        "#include \"consts.h\"\ninline float scale(float x) { return x * SCALE; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.spmd"),
        "#include \"sub/helper.spmd\"\n#include \"sub/consts.h\"\n#pragma unknown_thing\nexport void k(uniform float a[]) { a[programIndex] = scale(a[programIndex]); }\n",
    )
    .unwrap();
    let out = spmdc(
        &[
            "check",
            dir.join("main.spmd").to_str().unwrap(),
            "--error-format=json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let notes: Vec<serde_json::Value> = stderr(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(notes.len(), 1, "one note for the unknown pragma");
    assert_eq!(notes[0]["code"], "W0001");
    assert_eq!(notes[0]["severity"], "note");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_saxpy_on_the_interpreter() {
    let out = spmdc(
        &[
            "run",
            "examples/saxpy.spmd",
            "--entry",
            "saxpy",
            "--target",
            "interp",
            "--arg",
            "n=1000",
            "--arg",
            "a=2",
            "--arg",
            "x=range(1000)",
            "--arg",
            "y=fill(1000,1)",
            "--print",
            "y",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // y[i] = 2 * i + 1, computed here independently of the run.
    let values: Vec<f64> = text
        .split(|c: char| c == '[' || c == ']' || c == ',' || c.is_whitespace())
        .filter_map(|w| w.parse().ok())
        .collect();
    let expected: Vec<f64> = (0..1000).map(|i| 2.0 * f64::from(i) + 1.0).collect();
    assert_eq!(values, expected, "{text}");
}

#[test]
fn run_errors_have_distinct_exit_codes() {
    // Out of bounds: n larger than the buffers is a runtime trap naming the source line.
    let trap = spmdc(
        &[
            "run",
            "examples/saxpy.spmd",
            "--entry",
            "saxpy",
            "--arg",
            "n=2000",
            "--arg",
            "a=2",
            "--arg",
            "x=range(1000)",
            "--arg",
            "y=fill(1000,1)",
        ],
        None,
    );
    assert_eq!(trap.status.code(), Some(3), "{}", stderr(&trap));
    assert!(
        stderr(&trap).contains("examples/saxpy.spmd:"),
        "{}",
        stderr(&trap)
    );
    assert!(stderr(&trap).contains("lane"), "{}", stderr(&trap));
    // A misspelt entry, a missing argument, a malformed spec: usage errors.
    for args in [
        vec!["--entry", "saxp", "--arg", "n=1"],
        vec![
            "--entry",
            "saxpy",
            "--arg",
            "n=1",
            "--arg",
            "a=2",
            "--arg",
            "x=range(4)",
        ],
        vec![
            "--entry",
            "saxpy",
            "--arg",
            "n=1",
            "--arg",
            "a=2",
            "--arg",
            "x=range(4",
            "--arg",
            "y=zeros(4)",
        ],
        vec![
            "--entry",
            "saxpy",
            "--arg",
            "n=1.5",
            "--arg",
            "a=2",
            "--arg",
            "x=range(4)",
            "--arg",
            "y=zeros(4)",
        ],
    ] {
        let mut all = vec!["run", "examples/saxpy.spmd"];
        all.extend(args);
        let out = spmdc(&all, None);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"));
    }
    // A program with errors: exit 1.
    let bad = spmdc(
        &["run", "-", "--entry", "f"],
        Some("export void f() { int x = ; }"),
    );
    assert_eq!(bad.status.code(), Some(1));
}

#[test]
fn run_json_holds_buffers_and_stats() {
    let out = spmdc(
        &[
            "run",
            "examples/saxpy.spmd",
            "--entry",
            "saxpy",
            "--arg",
            "n=4",
            "--arg",
            "a=2",
            "--arg",
            "x=range(4)",
            "--arg",
            "y=zeros(4)",
            "--json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    assert_eq!(v["buffers"]["y"], serde_json::json!([0.0, 2.0, 4.0, 6.0]));
    assert!(v["stats"]["dynamic_instructions"].as_u64().unwrap() > 0);
}

/// `spmdc FILE --emit ir` prints IR, annotated with the uniformity and affine analyses'
/// results as `;` comments, that the IR parser reads back to the same module: analyzing that
/// module again gives exactly the same annotated text.
#[test]
fn emit_ir_round_trips_through_the_parser() {
    for target in ["nyuzi", "dac-gpu"] {
        for path in common::spmd_files("examples") {
            let name = common::display_name(&path);
            let out = spmdc(&[name.as_str(), "--emit", "ir", "--target", target], None);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
            let text = stdout(&out);
            let module = spmdc::ir::parse::parse_module(&text)
                .unwrap_or_else(|e| panic!("{name} ({target}): {e:?}"));
            spmdc::ir::verify::verify_module(&module)
                .unwrap_or_else(|e| panic!("{name} ({target}): {e:?}"));
            let analysis = spmdc::analysis::uniformity::analyze_module(&module);
            let affine = spmdc::analysis::affine::analyze_module(&module);
            assert_eq!(
                spmdc::analysis::affine::annotated_module_text_with_uniformity(
                    &module, &analysis, &affine
                ),
                text,
                "{name} ({target}) does not round-trip"
            );
            assert!(
                text.contains("; divergent"),
                "{name} ({target}): no annotations"
            );
        }
    }
}

#[test]
fn run_reports_an_export_functions_return_value() {
    let src = "export uniform float total(uniform int n, uniform float x[]) {\n  float s = 0;\n  foreach (i = 0 ... n) { s += x[i]; }\n  return reduce_add(s);\n}\n";
    let out = spmdc(
        &[
            "run",
            "-",
            "--entry",
            "total",
            "--arg",
            "n=100",
            "--arg",
            "x=range(100)",
            "--json",
        ],
        Some(src),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    // 0 + 1 + ... + 99, exact in f32.
    assert_eq!(v["return"], serde_json::json!(4950.0));
    let text = spmdc(
        &[
            "run",
            "-",
            "--entry",
            "total",
            "--arg",
            "n=10",
            "--arg",
            "x=fill(10,0.5)",
            "--print",
            "return",
        ],
        Some(src),
    );
    assert_eq!(stdout(&text), "return = 5\n");
}

#[test]
fn assert_traps_only_for_active_lanes() {
    let src = "export void k(uniform int a[]) {\n  if (programIndex < 4) assert(programIndex < 4);\n  assert(a[0] == 0);\n  a[0] = 1;\n}\n";
    let ok = spmdc(
        &[
            "run",
            "-",
            "--entry",
            "k",
            "--arg",
            "a=zeros(1)",
            "--print",
            "a",
        ],
        Some(src),
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert_eq!(stdout(&ok), "a = [1]\n");
    let failed = spmdc(
        &["run", "-", "--entry", "k", "--arg", "a=fill(1,3)"],
        Some(src),
    );
    assert_eq!(failed.status.code(), Some(3));
    assert!(
        stderr(&failed).contains("<stdin>:3:3") && stderr(&failed).contains("assertion failed"),
        "{}",
        stderr(&failed)
    );
}

/// `--warn-divergent` lists divergent branches (W0008) with their source; without the
/// flag a clean program compiles silently.
#[test]
fn warn_divergent_lists_divergent_branches() {
    let out = spmdc(
        &[
            "examples/mandelbrot.spmd",
            "--emit",
            "ir",
            "--warn-divergent",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning[W0008]: divergent `for` in `mandelbrot`"),
        "{err}"
    );
    assert!(
        err.contains("`programIndex` is different in each program instance"),
        "{err}"
    );
    let quiet = spmdc(&["examples/mandelbrot.spmd", "--emit", "ir"], None);
    assert_eq!(quiet.status.code(), Some(0));
    assert!(!stderr(&quiet).contains("W0008"), "{}", stderr(&quiet));
}

/// `spmdc check --warn-divergent` reports W0008 as `spmdc FILE --warn-divergent`
/// does, at the condition, and exits 0 (warnings only); plain `check` does not.
#[test]
fn check_warn_divergent_reports_divergent_branches() {
    let file = "tests/warn_divergent/check_command.spmd";
    let out = spmdc(&["check", file, "--warn-divergent"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning[W0008]: divergent `do` in `halvings`")
            && err.contains("check_command.spmd:9:14"),
        "{err}"
    );
    let compiled = spmdc(&[file, "--warn-divergent", "--emit", "ir"], None);
    assert_eq!(stderr(&compiled), err);
    let quiet = spmdc(&["check", file], None);
    assert_eq!(quiet.status.code(), Some(0));
    assert!(!stderr(&quiet).contains("W0008"), "{}", stderr(&quiet));
}

/// `--no-scalar-datapath`: the same results, with the uniform work on the vector unit
/// (nyuzi) or datapath (dac-gpu), so more vector instructions and no `.uni` ones.
#[test]
fn no_scalar_datapath_keeps_results_and_moves_uniform_work_to_vectors() {
    let run = |target: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "examples/row_sums.spmd",
            "--entry",
            "row_sums",
            "--target",
            target,
            "--arg",
            "nrows=8",
            "--arg",
            "ncols=37",
            "--arg",
            "m=range(296)",
            "--arg",
            "out=zeros(37)",
            "--json",
            "--timing",
        ];
        args.extend(extra);
        let out = spmdc(&args, None);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
        v
    };
    for target in ["nyuzi", "dac-gpu"] {
        let on = run(target, &[]);
        let off = run(target, &["--no-scalar-datapath"]);
        assert_eq!(on["buffers"], off["buffers"], "{target}");
        let vector = |v: &serde_json::Value| v["stats"]["vector_instructions"].as_u64().unwrap();
        assert!(vector(&off) > vector(&on), "{target}: {off} vs {on}");
        if target == "dac-gpu" {
            assert_eq!(off["stats"]["uniform_instructions"].as_u64(), Some(0));
        }
    }
}

const SAXPY_RUN: [&str; 12] = [
    "run",
    "examples/saxpy.spmd",
    "--entry",
    "saxpy",
    "--arg",
    "n=4",
    "--arg",
    "a=2",
    "--arg",
    "x=range(4)",
    "--arg",
    "y=fill(4,1)",
];

/// `spmdc run` of saxpy with `extra` options.
fn saxpy_run(extra: &[&str]) -> Output {
    let args: Vec<&str> = SAXPY_RUN.iter().chain(extra).copied().collect();
    spmdc(&args, None)
}

#[test]
fn options_that_change_nothing_are_warned_about() {
    let cases: [(&[&str], &str); 8] = [
        (
            &["--cores", "2"],
            "warning[W0010]: `--cores` has no effect with `--target interp`",
        ),
        (
            &["--target", "dac-gpu", "--config", "maxwell"],
            "`--config` has no effect on the run without `--timing`",
        ),
        (
            &["--json", "--print", "y"],
            "`--print` has no effect with `--json`",
        ),
        (
            &["--trace-limit", "5"],
            "`--trace-limit` has no effect without `--trace`",
        ),
        (
            &["--target", "nyuzi", "--max-regs", "20"],
            "`--max-regs` has no effect with `--target nyuzi`",
        ),
        (
            &["--target", "dac-gpu", "--sched", "lrr"],
            "`--sched` has no effect without `--timing`",
        ),
        (
            &["--target", "dac-gpu", "--no-bounds-check"],
            "`--no-bounds-check` has no effect with `--target dac-gpu`",
        ),
        (
            &["--shuffle", "all"],
            "`--shuffle` has no effect with `--target interp`",
        ),
    ];
    for (extra, warning) in cases {
        let out = saxpy_run(extra);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(warning),
            "{extra:?}: {}",
            stderr(&out)
        );
    }
    let quiet = saxpy_run(&["--target", "nyuzi", "--cores", "2"]);
    assert!(!stderr(&quiet).contains("warning"), "{}", stderr(&quiet));
    let listing = spmdc(
        &["examples/saxpy.spmd", "--emit", "ir", "--source-lines"],
        None,
    );
    assert!(stderr(&listing).contains("`--source-lines` has no effect without `--emit asm`"));
    let launch = spmdc(
        &["examples/saxpy.spmd", "--entry", "saxpy", "--arg", "n=1"],
        None,
    );
    assert!(stderr(&launch).contains("`--entry` has no effect without `--emit hex`"));
    assert!(stderr(&launch).contains("`--arg` has no effect without `--emit hex`"));
    let tokens = spmdc(
        &["examples/saxpy.spmd", "--emit", "tokens", "--no-opt"],
        None,
    );
    assert_eq!(tokens.status.code(), Some(0));
    assert!(stderr(&tokens).contains("`--no-opt` has no effect with only `--emit tokens`"));
    // The back ends' options without machine code, each warned about once, for its
    // first reason.
    let ir = spmdc(
        &[
            "examples/saxpy_gpu.spmd",
            "--target",
            "dac-gpu",
            "--emit",
            "ir",
            "--regalloc",
            "auto",
            "--block",
            "64",
            "--shuffle",
            "all",
        ],
        None,
    );
    assert_eq!(ir.status.code(), Some(0), "{}", stderr(&ir));
    for flag in ["--regalloc", "--block", "--shuffle"] {
        let warning = format!("`{flag}` has no effect without `--emit asm` or `--emit hex`");
        assert_eq!(stderr(&ir).matches(&warning).count(), 1, "{}", stderr(&ir));
    }
    let nyuzi_ir = spmdc(
        &[
            "examples/saxpy.spmd",
            "--target",
            "nyuzi",
            "--emit",
            "ir",
            "--max-regs",
            "8",
        ],
        None,
    );
    assert_eq!(stderr(&nyuzi_ir).matches("`--max-regs`").count(), 1);
    assert!(stderr(&nyuzi_ir).contains("`--max-regs` has no effect with `--target nyuzi`"));
    let merge = spmdc(&["bench", "merge", "no-such-dir", "--jobs", "2"], None);
    assert!(stderr(&merge).contains("`--jobs` has no effect with `bench merge`"));
    // Under `--error-format json` the warning is a JSON line with its code, and the
    // run's status is unchanged.
    let json = saxpy_run(&["--cores", "2", "--error-format", "json"]);
    assert_eq!(json.status.code(), Some(0));
    let line: serde_json::Value = serde_json::from_str(stderr(&json).trim()).unwrap();
    assert_eq!(
        (line["code"].as_str(), line["severity"].as_str()),
        (Some("W0010"), Some("warning"))
    );
    let ablation = saxpy_run(&["--target", "dac-gpu", "--shuffle", "nocorner"]);
    assert!(
        stderr(&ablation).contains("warning[W0011]"),
        "{}",
        stderr(&ablation)
    );
    // The interpreter makes no shuffles: an ablation changes nothing there.
    let interp = saxpy_run(&["--shuffle", "noload"]);
    assert!(!stderr(&interp).contains("W0011"), "{}", stderr(&interp));
    assert!(stderr(&interp).contains("W0010"), "{}", stderr(&interp));
}

#[test]
fn help_and_diagnostics_hold_no_stale_text() {
    let mut texts = vec![];
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["bench", "--help"],
        &["check", "--help"],
        &["explain", "E0901"],
        &[
            "examples/saxpy.spmd",
            "--target",
            "dac-gpu",
            "--emit",
            "hex",
            "-o",
            "/dev/null",
        ],
    ] {
        let out = spmdc(args, None);
        texts.push((args.join(" "), stdout(&out) + &stderr(&out)));
    }
    for (args, text) in &texts {
        for stale in [
            "not implemented",
            "this version",
            "with their issues",
            "issue ",
            "not available yet",
        ] {
            assert!(
                !text.contains(stale),
                "`spmdc {args}` says `{stale}`:\n{text}"
            );
        }
    }
    // The bench help lists every built-in suite and says what --threads does.
    let bench = &texts[2].1;
    for suite in ["gpu", "uniformity", "dac", "regdem", "shuffle", "sim-speed"] {
        assert!(bench.contains(&format!("  {suite} ")), "{suite}: {bench}");
    }
    assert!(bench.contains("--threads <T>") && bench.contains("launches from it"));
}

#[test]
fn stats_are_grouped_and_rounded_and_the_json_keeps_exact_values() {
    let timing = ["--target", "dac-gpu", "--timing"];
    let text = stdout(&saxpy_run(&[&timing[..], &["--stats"]].concat()));
    for heading in [
        "Launch",
        "Instructions",
        "Memory hierarchy",
        "Occupancy",
        "Stalls",
    ] {
        assert!(text.lines().any(|l| l == heading), "{heading}:\n{text}");
    }
    let row = |label: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} in\n{text}"))
            .to_string()
    };
    let ipc = row("IPC");
    let shown: f64 = ipc.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(row("L1 hit rate").trim_end().ends_with('%'));
    let out = saxpy_run(&[&timing[..], &["--json"]].concat());
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let stats = &v["stats"];
    let exact = stats["ipc"].as_f64().unwrap();
    assert_eq!(
        exact,
        stats["thread_instructions"].as_f64().unwrap() / stats["cycles"].as_f64().unwrap()
    );
    assert_eq!(format!("{exact:.2}"), format!("{shown:.2}"), "{ipc}");
    // The run records its machine and compiler switches.
    assert_eq!(v["machine"]["config"], "gtx480");
    assert_eq!(v["machine"]["num_sms"], 15);
    assert_eq!(v["compiler"]["optimize"], true);
    assert_eq!(v["compiler"]["dac"], true);
    assert!(v.get("breakdown").is_none());
}

#[test]
fn stats_full_breaks_the_run_down_per_sm_and_per_function() {
    let out = saxpy_run(&["--target", "dac-gpu", "--timing", "--stats=full", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let b = &v["breakdown"];
    assert_eq!(b["unit_kind"], "SM");
    let units = b["units"].as_array().unwrap();
    assert_eq!(units.len(), 15);
    let sum = |key: &str| -> u64 { units.iter().map(|u| u[key].as_u64().unwrap()).sum() };
    for key in [
        "warp_instructions",
        "thread_instructions",
        "blocks",
        "stall_memory",
        "stall_idle",
    ] {
        assert_eq!(Some(sum(key)), v["stats"][key].as_u64(), "{key}");
    }
    let functions = b["functions"].as_array().unwrap();
    assert_eq!(functions[0]["function"], "saxpy");
    let instrs: u64 = functions
        .iter()
        .map(|f| f["stats"]["dynamic_instructions"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(instrs), v["stats"]["dynamic_instructions"].as_u64());
    let text = stdout(&saxpy_run(&[
        "--target",
        "nyuzi",
        "--timing",
        "--cores",
        "2",
        "--stats=full",
    ]));
    assert!(
        text.contains("\nPer core\n") && text.contains("  core 1 "),
        "{text}"
    );
    assert!(
        text.contains("\nPer function\n") && text.contains("  saxpy "),
        "{text}"
    );
}

#[test]
fn a_failed_run_under_json_is_one_object_on_stdout_whatever_the_stage() {
    for (extra, kind) in [
        (&["--grid", "0"][..], "usage"),
        (
            &["--target", "dac-gpu", "--config", "no-such-machine"],
            "usage",
        ),
        (&["--target", "nyuzi", "--program-count", "8"], "usage"),
        (&["--arg", "z=1"], "launch"),
    ] {
        let out = saxpy_run(&[extra, &["--json"]].concat());
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("{extra:?}: {e}: {}", stdout(&out)));
        assert_eq!(v["error"]["kind"], kind, "{extra:?}: {v}");
        assert_eq!(v["entry"], "saxpy");
    }
    let out = spmdc(
        &["run", "no-such-file.spmd", "--entry", "k", "--json"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["error"]["kind"], "usage");
}

#[test]
fn launch_errors_under_error_format_json_keep_notes_and_help_apart() {
    // saxpy's launch with a misspelt generator.
    let args: Vec<&str> = SAXPY_RUN
        .iter()
        .map(|&a| if a == "x=range(4)" { "x=rnage(4)" } else { a })
        .chain(["--error-format", "json"])
        .collect();
    let out = spmdc(&args, None);
    assert_eq!(out.status.code(), Some(2));
    let line: serde_json::Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(line["code"], "launch");
    assert!(!line["message"].as_str().unwrap().contains('\n'), "{line}");
    assert!(line["message"]
        .as_str()
        .unwrap()
        .contains("did you mean `range`?"));
    assert_eq!(line["help"].as_array().unwrap().len(), 1);
    let print = saxpy_run(&["--print", "zz", "--error-format", "json"]);
    assert_eq!(print.status.code(), Some(2));
    let line: serde_json::Value = serde_json::from_str(stderr(&print).trim()).unwrap();
    assert_eq!(line["notes"][0], "the buffers are: x, y");
}

#[test]
fn a_trap_under_json_is_json_too() {
    let src = "export void f(uniform int out[]) { out[programIndex + 1] = 1; }\n";
    let file = std::env::temp_dir().join(format!("spmdc-cli-trap-{}.spmd", std::process::id()));
    std::fs::write(&file, src).unwrap();
    let file = file.to_str().unwrap();
    for target in ["interp", "nyuzi", "dac-gpu"] {
        let base = [
            "run",
            file,
            "--entry",
            "f",
            "--target",
            target,
            "--arg",
            "out=zeros(16)",
        ];
        let args: Vec<&str> = base
            .iter()
            .chain(&["--block", "16", "--json"])
            .copied()
            .collect();
        let out = spmdc(&args, None);
        assert_eq!(out.status.code(), Some(3), "{target}: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("{target}: stdout is not JSON ({e}): {}", stdout(&out)));
        assert_eq!(v["error"]["kind"], "trap", "{v}");
        assert_eq!(v["error"]["line"], 1, "{v}");
        assert_eq!(v["target"], target);
        let args: Vec<&str> = base
            .iter()
            .chain(&["--block", "16", "--error-format", "json"])
            .copied()
            .collect();
        let out = spmdc(&args, None);
        assert_eq!(out.status.code(), Some(3), "{target}: {}", stderr(&out));
        let line: serde_json::Value =
            serde_json::from_str(stderr(&out).trim()).unwrap_or_else(|e| {
                panic!(
                    "{target}: stderr is not one JSON line ({e}): {}",
                    stderr(&out)
                )
            });
        assert_eq!(
            (line["code"].as_str(), line["line"].as_u64()),
            (Some("runtime"), Some(1))
        );
    }
    let launch = spmdc(
        &[
            "run",
            file,
            "--entry",
            "f",
            "--grid",
            "0",
            "--error-format",
            "json",
        ],
        None,
    );
    assert_eq!(launch.status.code(), Some(2), "{}", stderr(&launch));
    let line: serde_json::Value = serde_json::from_str(stderr(&launch).trim()).unwrap();
    assert_eq!(line["code"], "launch");
}

#[test]
fn a_misspelt_configuration_key_is_a_usage_error_with_a_suggestion() {
    let preset =
        std::fs::read_to_string(common::repo_root().join("sim/configs/gtx480.toml")).unwrap();
    let typo = preset.replacen("alu_latency", "alu_latncy", 1);
    let file = std::env::temp_dir().join(format!("spmdc-cli-typo-{}.toml", std::process::id()));
    std::fs::write(&file, typo).unwrap();
    let file = file.to_str().unwrap();
    let run = saxpy_run(&["--target", "dac-gpu", "--timing", "--config", file]);
    let bench = spmdc(&["bench", "dac", "--config", file], None);
    for out in [run, bench] {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("did you mean `alu_latency`?"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn generator_coverage_takes_a_campaigns_seed_ranges() {
    let o = spmdc(&["gen", "--coverage", "3..5,10..12"], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("4 programs\n"), "{out}");
    assert!(out.contains("| stmt: declaration | 4 | 100.0% |"), "{out}");
    let o = spmdc(&["gen", "--coverage", "4"], None);
    assert!(stdout(&o).starts_with("4 programs\n"));
    for bad in ["5..3", "0", "1..2,x"] {
        let o = spmdc(&["gen", "--coverage", bad], None);
        assert_eq!(o.status.code(), Some(2), "--coverage {bad}: {}", stderr(&o));
    }
}

#[test]
fn save_writes_buffers_that_read_back_unchanged_on_every_target() {
    let dir = std::env::temp_dir().join(format!("spmdc-cli-save-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let mut saved = Vec::new();
    for target in ["interp", "nyuzi", "dac-gpu"] {
        let (bin, txt, json) = (
            path(&format!("y-{target}.bin")),
            path(&format!("y-{target}.txt")),
            path(&format!("y-{target}.json")),
        );
        let out = saxpy_run(&[
            "--target",
            target,
            "--save",
            &format!("y={bin}"),
            "--save",
            &format!("y={txt}"),
            "--save",
            &format!("y={json}"),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        // y = 2 * range(4) + 1, as little-endian f32s, and as text and JSON.
        let expected: Vec<u8> = [1f32, 3.0, 5.0, 7.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(std::fs::read(&bin).unwrap(), expected, "{target}");
        assert_eq!(std::fs::read_to_string(&txt).unwrap(), "1\n3\n5\n7\n");
        assert_eq!(
            std::fs::read_to_string(&json).unwrap(),
            "[1.0,3.0,5.0,7.0]\n"
        );
        saved.push(bin);
    }
    // Each file is an input `@file` reads back: x = y, y = y gives y = 3y.
    for file in [&saved[0], &path("y-interp.txt"), &path("y-interp.json")] {
        let args = SAXPY_RUN.map(|a| match a {
            "a=2" => "a=2".to_string(),
            "x=range(4)" => format!("x=@{file}"),
            "y=fill(4,1)" => format!("y=@{file}"),
            other => other.to_string(),
        });
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        args.extend(["--print", "y"]);
        let out = spmdc(&args, None);
        assert_eq!(stdout(&out), "y = [3, 9, 15, 21]\n", "{file}");
    }
}

#[test]
fn save_errors_are_usage_errors() {
    let unknown = saxpy_run(&["--save", "yy=out.bin"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown)
        .contains("`--save yy`: `saxpy` has no buffer parameter named `yy`; did you mean `y`?"));
    assert!(stderr(&unknown).contains("the buffers are: x, y"));
    let unwritable = saxpy_run(&["--save", "y=/nonexistent-dir/y.bin"]);
    assert_eq!(unwritable.status.code(), Some(2));
    assert!(
        stderr(&unwritable).contains("cannot write it"),
        "{}",
        stderr(&unwritable)
    );
    let malformed = saxpy_run(&["--save", "y"]);
    assert_eq!(malformed.status.code(), Some(2));
    assert!(stderr(&malformed).contains("`y` is not NAME=PATH"));
}

#[test]
fn struct_and_nested_array_buffers_run_alike_on_every_target() {
    let dir = std::env::temp_dir().join(format!("spmdc-cli-records-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let src = "struct Tri { float p[3][4]; int id; };
struct Node { float lo[3]; uint8 axis; uint8 pad[3]; };
export void f(const uniform Tri tris[], uniform Node nodes[], const uniform float m[2][2],
              uniform float out[], uniform int n) {
    foreach (i = 0 ... n) {
        out[i] = tris[i].p[2][3] + tris[i].id + m[1][0] + nodes[i].lo[2] + nodes[i].axis;
        nodes[i].axis = (uint8)(10 + i);
    }
}
";
    std::fs::write(file("k.spmd"), src).unwrap();
    // Two triangles (52 bytes each), two nodes (16 bytes each), the 2x2 matrix.
    let mut tris = Vec::new();
    for id in [100i32, 200] {
        (0..12).for_each(|k| tris.extend((k as f32).to_le_bytes()));
        tris.extend(id.to_le_bytes());
    }
    let mut nodes = Vec::new();
    for axis in [1u8, 2] {
        [0.5f32, 0.25, 0.125]
            .iter()
            .for_each(|v| nodes.extend(v.to_le_bytes()));
        nodes.extend([axis, 0, 0, 0]);
    }
    let m: Vec<u8> = [1f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(file("tris.bin"), tris).unwrap();
    std::fs::write(file("nodes.bin"), &nodes).unwrap();
    std::fs::write(file("m.bin"), m).unwrap();
    for target in ["interp", "nyuzi", "dac-gpu"] {
        let out_nodes = file(&format!("nodes-{target}.bin"));
        let args = [
            "run".to_string(),
            file("k.spmd"),
            "--entry=f".into(),
            format!("--target={target}"),
            format!("--arg=tris=@{}", file("tris.bin")),
            format!("--arg=nodes=@{}", file("nodes.bin")),
            format!("--arg=m=@{}", file("m.bin")),
            "--arg=out=zeros(2)".into(),
            "--arg=n=2".into(),
            "--print=out".into(),
            format!("--save=nodes={out_nodes}"),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = spmdc(&args, None);
        assert_eq!(out.status.code(), Some(0), "{target}: {}", stderr(&out));
        // 11 + id + m[1][0] (3) + 0.125 + axis.
        assert_eq!(stdout(&out), "out = [115.125, 216.125]\n", "{target}");
        let mut expected = nodes.clone();
        (expected[12], expected[28]) = (10, 11);
        assert_eq!(std::fs::read(&out_nodes).unwrap(), expected, "{target}");
    }
}

#[test]
fn varying_element_buffers_hold_program_count_values_each() {
    let dir = std::env::temp_dir().join(format!("spmdc-cli-varying-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("k.spmd");
    std::fs::write(
        &file,
        "export void f(varying float a[], uniform int count, uniform float out[]) {
    float s = 0;
    for (uniform int i = 0; i < count; ++i) s += a[i];
    out[programIndex] = s;
    a[1] = programIndex;
}
",
    )
    .unwrap();
    for (target, lanes) in [("interp", 16), ("nyuzi", 16), ("dac-gpu", 32)] {
        let save = dir.join(format!("a-{target}.bin"));
        let args = [
            "run".to_string(),
            file.to_str().unwrap().into(),
            "--entry=f".into(),
            format!("--target={target}"),
            format!("--arg=a=range({})", 2 * lanes),
            "--arg=count=2".into(),
            format!("--arg=out=zeros({lanes})"),
            format!("--save=a={}", save.display()),
            "--print=out".into(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = spmdc(&args, None);
        assert_eq!(out.status.code(), Some(0), "{target}: {}", stderr(&out));
        // Instance i sums a[0] and a[1]: values i and lanes + i.
        let sums: Vec<u32> = (0..lanes).map(|i| lanes + 2 * i).collect();
        let printed: Vec<u32> = stdout(&out)
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|t| t.parse().ok())
            .collect();
        assert_eq!(printed, sums, "{target}");
        let saved = std::fs::read(&save).unwrap();
        let lane_values: Vec<f32> = saved
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let expected: Vec<f32> = (0..lanes).chain(0..lanes).map(|v| v as f32).collect();
        assert_eq!(lane_values, expected, "{target}: a[1] holds programIndex");
    }
}

/// `--time-passes` reports heap peaks: the allocator counts live bytes in a process
/// given the flag (and only there, since counting costs every allocation).
#[test]
fn time_passes_reports_heap_peaks() {
    let out = spmdc(
        &[
            "examples/saxpy.spmd",
            "--target",
            "nyuzi",
            "--emit",
            "asm",
            "--time-passes",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stderr(&out);
    let total = report
        .lines()
        .find(|l| l.starts_with("total"))
        .unwrap_or_else(|| panic!("no total line in:\n{report}"));
    let fields: Vec<&str> = total.split_whitespace().collect();
    // total, wall ms, heap peak "N.N" "MB", rss "N.N" "MB"
    assert_eq!(fields[3], "MB", "{total}");
    let peak: f64 = fields[2].parse().unwrap();
    assert!(peak > 0.0, "a compile's heap peak is above zero: {total}");
    let lower = report
        .lines()
        .find(|l| l.trim_start().starts_with("instruction selection"))
        .unwrap_or_else(|| panic!("no instruction selection line in:\n{report}"));
    assert!(lower.contains(" MB "), "{lower}");
}

/// `--regalloc auto` on dac-gpu says in the listing what it weighed, for the launch
/// `--block` and `--grid` give; the listing still assembles, and its `.reg` is the
/// chosen allocation's.
#[test]
fn regalloc_auto_lists_what_it_weighed_in_the_listing() {
    let file = "tests/regdem_bench/stencil25.spmd";
    let common = [file, "--target", "dac-gpu", "--config", "maxwell"];
    let out = spmdc(
        &[
            &common[..],
            &["--regalloc", "auto", "--block", "16,8", "--grid", "16,16"],
        ]
        .concat(),
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "no warning: {}", stderr(&out));
    let listing = stdout(&out);
    let head: Vec<&str> = listing
        .lines()
        .take_while(|l| l.starts_with("//"))
        .collect();
    assert!(
        head[0].contains("allocations weighed for blocks of 128 threads and a grid of 256 blocks"),
        "{}",
        head[0]
    );
    let rows = &head[2..];
    let chosen: Vec<&&str> = rows.iter().filter(|l| l.ends_with("<- chosen")).collect();
    assert_eq!(chosen.len(), 1, "{head:#?}");
    assert!(
        rows.len() >= 2,
        "the baseline and the cliffs below: {head:#?}"
    );
    // Fastest first: the predicted cycles never fall down the list.
    let cycles: Vec<u64> = rows
        .iter()
        .map(|l| {
            let field = l
                .split_whitespace()
                .find(|w| w.contains(',') && w.chars().all(|c| c.is_ascii_digit() || c == ','));
            field
                .expect("a cycle count")
                .replace(',', "")
                .parse()
                .unwrap()
        })
        .collect();
    assert!(cycles.windows(2).all(|w| w[0] <= w[1]), "{head:#?}");
    let regs: u32 = chosen[0]
        .split_whitespace()
        .nth(3)
        .unwrap()
        .parse()
        .unwrap();
    assert!(listing.contains(&format!("    .reg {regs};")), "{listing}");
    let program = sim::gpu::parse(&listing).expect("the listing assembles");
    assert_eq!(program.kernels.len(), 1);
    // Without `--regalloc auto` nothing is weighed: no remarks, and `--grid` is
    // ineffective.
    let plain = spmdc(&[&common[..], &["--grid", "16,16"]].concat(), None);
    assert!(!stdout(&plain).starts_with("//"));
    assert!(
        stderr(&plain).contains("`--grid` has no effect without `--emit hex` or `--regalloc auto`"),
        "{}",
        stderr(&plain)
    );
}

/// `--shuffle auto` says in the listing, per block, how many shuffles its cost model
/// kept and why it stopped, on both targets; `--shuffle all` weighs nothing.
#[test]
fn shuffle_auto_says_what_it_kept_and_why_in_the_listing() {
    let file = "tests/shuffle_bench/gaussblur_rows.spmd";
    let dac = spmdc(&[file, "--target", "dac-gpu", "--shuffle", "auto"], None);
    assert_eq!(dac.status.code(), Some(0), "{}", stderr(&dac));
    let listing = stdout(&dac);
    let remark = listing.lines().next().unwrap_or("");
    // The GTX 480 issues one warp instruction a cycle: the block is issue-bound.
    assert!(
        remark.starts_with("// --shuffle auto, block")
            && remark.contains("0 of 20 shuffles kept")
            && remark.contains("(bound by issue)")
            && remark.contains("the next, |N| = 1, would add"),
        "{remark}"
    );
    sim::gpu::parse(&listing).expect("the listing assembles");
    let nyuzi = spmdc(&[file, "--target", "nyuzi", "--shuffle", "auto"], None);
    assert_eq!(nyuzi.status.code(), Some(0), "{}", stderr(&nyuzi));
    let listing = stdout(&nyuzi);
    let lines: Vec<&str> = listing.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == "gaussblur_rows:")
        .expect("the entry's label");
    let remark = lines[at - 1];
    let kept: u32 = remark
        .split(": ")
        .nth(1)
        .and_then(|s| s.split(" of ").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{remark}"));
    // A `task` gets the core's 4 threads: gathers bound the block, and shuffles pay
    // until issue catches up.
    assert!(remark.starts_with("# --shuffle auto, block"), "{remark}");
    assert!(kept > 0 && kept < 20, "{remark}");
    assert!(
        remark.contains("(bound by the memory pipeline)"),
        "{remark}"
    );
    let all = spmdc(&[file, "--target", "nyuzi", "--shuffle", "all"], None);
    assert!(!stdout(&all).contains("--shuffle auto"));
}
