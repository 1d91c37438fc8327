//! Legalization for Nyuzi on the whole corpus: every program of `tests/ispc/` and
//! `tests/conformance/` (the ISPC harness: test entry and `result` on a 64-float
//! `RET`) and every suggested launch of `examples/` runs on the interpreter at 16 lanes
//! (4-byte pointers) once as lowered and once through `driver::lower_for_target`; the
//! results must be bit-identical (or both runs trap). The legalized module must
//! verify and leave nothing illegal (`remaining_illegal` empty).

mod common;

use common::*;
use spmdc::driver::{self, FrontOptions, FrontResult, LegalTarget, RunRequest, Stage};
use spmdc::front::sema;
use spmdc::interp::Limits;
use spmdc::ir::Module;
use spmdc::passes::legalize::remaining_illegal;

const LANES: u32 = 16;

fn nyuzi_front(path: &std::path::Path) -> FrontResult {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
    let opts = FrontOptions {
        target: sema::Target {
            program_count: LANES,
            pointer_size: 4,
        },
        include_dirs: vec![repo_root().join("examples/include")],
        ..FrontOptions::default()
    };
    driver::run_front(
        &display_name(path),
        Some(path.to_path_buf()),
        text,
        &opts,
        Stage::Check,
    )
}

/// Both modules for a file: as lowered (optimized) and legalized for Nyuzi.
fn both(path: &std::path::Path) -> Result<(FrontResult, Module, Module), String> {
    let front = nyuzi_front(path);
    if front.diags.has_errors() {
        return Err("does not check at 16 lanes with 4-byte pointers".into());
    }
    let plain = driver::lower_front_with(&front, true).map_err(|e| format!("lower: {e:?}"))?;
    let legal = driver::lower_for_target(&front, true, LegalTarget::Nyuzi)
        .map_err(|e| format!("lower_for_target: {e:?}"))?;
    let left = remaining_illegal(&legal);
    if !left.is_empty() {
        return Err(format!("left illegal: {left:?}"));
    }
    Ok((front, plain, legal))
}

/// The ISPC harness: RET after the test entry and after `result`.
fn ispc_run(module: &Module) -> Result<Vec<Vec<u8>>, String> {
    let entry = ispc::test_entry(module).ok_or("no test entry")?;
    [entry, "result"]
        .into_iter()
        .map(|name| ispc::run_entry(module, name, LANES, 20_000_000).map(|r| r.ret))
        .collect()
}

fn compare<T: PartialEq + std::fmt::Debug, E: std::fmt::Debug>(
    want: Result<T, E>,
    got: Result<T, E>,
) -> Result<(), String> {
    match (want, got) {
        (Ok(w), Ok(g)) if w == g => Ok(()),
        (Ok(_), Ok(_)) => Err("legalized results differ".into()),
        (Err(_), Err(_)) => Ok(()),
        (w, g) => Err(format!(
            "only one run trapped: plain {w:?}, legalized {g:?}"
        )),
    }
}

#[test]
fn ispc_and_conformance_programs_agree_legalized() {
    let mut failures = Vec::new();
    let mut count = 0;
    for dir in ["tests/ispc", "tests/conformance"] {
        for path in spmd_files(dir) {
            let name = display_name(&path);
            let outcome = both(&path)
                .and_then(|(_, plain, legal)| compare(ispc_run(&plain), ispc_run(&legal)));
            count += 1;
            if let Err(why) = outcome {
                failures.push(format!("{name}: {why}"));
            }
        }
    }
    assert!(count > 100, "the corpus went missing");
    assert!(
        failures.is_empty(),
        "{} of {count} programs:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The `spmdc run` commands of an example's header comment, as argument lists.
fn suggested_launches(text: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        let Some(body) = line.strip_prefix("//") else {
            break;
        };
        let body = body.trim();
        if let Some(c) = cur.as_mut() {
            c.push(' ');
            c.push_str(body.trim_end_matches('\\'));
        } else if body.starts_with("spmdc run") {
            cur = Some(body.trim_end_matches('\\').to_string());
        }
        if !body.ends_with('\\') {
            if let Some(c) = cur.take() {
                commands.push(shell_words(&c));
            }
        }
    }
    commands
}

/// Splits a command line on spaces, keeping single-quoted parts whole.
fn shell_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut w = String::new();
    let mut quoted = false;
    for ch in s.chars() {
        match ch {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !w.is_empty() {
                    words.push(std::mem::take(&mut w));
                }
            }
            c => w.push(c),
        }
    }
    if !w.is_empty() {
        words.push(w);
    }
    words
}

/// Smaller versions of the heaviest suggested launches (the debug-build interpreter
/// runs each twice here): mandelbrot's 48 rows become 6.
fn shrink(arg: &str) -> String {
    match arg {
        "height=48" => "height=6".into(),
        "rowEnd=48" => "rowEnd=6".into(),
        a => a.to_string(),
    }
}

/// The value after each `flag` in `words`.
fn flag_values(words: &[String], flag: &str) -> Vec<String> {
    words
        .windows(2)
        .filter(|p| p[0] == flag)
        .map(|p| p[1].clone())
        .collect()
}

#[test]
fn example_launches_agree_legalized() {
    let mut failures = Vec::new();
    let mut launches = 0;
    for path in spmd_files("examples") {
        let name = display_name(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        let (front, plain, legal) = match both(&path) {
            Ok(b) => b,
            Err(why) => {
                failures.push(format!("{name}: {why}"));
                continue;
            }
        };
        for words in suggested_launches(&text) {
            let args: Vec<String> = flag_values(&words, "--arg")
                .into_iter()
                .map(|a| shrink(&a))
                .collect();
            if args.iter().any(|a| a.contains('@')) {
                continue; // reads a file the header only describes
            }
            let entry = flag_values(&words, "--entry");
            let grid = flag_values(&words, "--grid");
            let block = flag_values(&words, "--block");
            let req = RunRequest {
                optimize: true,
                entry: entry.first().map_or("", String::as_str),
                args: &args,
                grid: grid.first().map(String::as_str),
                block: block.first().map(String::as_str),
                dynamic_shared: None,
                limits: Limits {
                    max_steps: 50_000_000,
                    ..Limits::default()
                },
            };
            let run = |m: &Module| {
                driver::run_module_on_interp(&front, m, &req)
                    .map(|r| (r.buffers, r.ret, r.output))
                    .map_err(|e| format!("{e:?}"))
            };
            launches += 1;
            if let Err(why) = compare(run(&plain), run(&legal)) {
                failures.push(format!("{name} --entry {}: {why}", req.entry));
            }
        }
    }
    assert!(launches >= 15, "only {launches} launches found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
