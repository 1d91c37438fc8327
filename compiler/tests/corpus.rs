//! The corpora under `tests/` and `examples/`:
//! - every example, ISPC-style test and parse-corpus program checks without errors;
//! - parse-corpus programs have AST snapshots;
//! - each invalid program in `tests/diagnostics/` reports exactly the codes its
//!   `// expect:` header names, and its rendered diagnostics have a snapshot.

mod common;

use common::*;
use spmdc::driver::Stage;
use spmdc::front::dump;

fn assert_clean(dir: &str) -> usize {
    let files = spmd_files(dir);
    let mut failures = Vec::new();
    for path in &files {
        let result = check_file(path, Stage::Check);
        if result.diags.has_errors() {
            failures.push(format!("{}:\n{}", display_name(path), render_all(&result)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} file(s) in {dir} failed to check:\n{}",
        failures.len(),
        failures.join("\n")
    );
    files.len()
}

#[test]
fn examples_check_cleanly() {
    let n = assert_clean("examples");
    assert!(n >= 12, "expected at least 12 examples, found {n}");
}

#[test]
fn ispc_style_tests_check_cleanly() {
    let n = assert_clean("tests/ispc");
    assert!(n >= 1, "no ISPC-style tests found");
}

#[test]
fn conformance_programs_check_cleanly() {
    let n = assert_clean("tests/conformance");
    assert!(
        n >= 150,
        "expected at least 150 conformance programs, found {n}"
    );
}

#[test]
fn parse_corpus_ast_snapshots() {
    let files = spmd_files("tests/parse");
    assert!(
        files.len() >= 20,
        "expected a parse corpus of at least 20 programs"
    );
    let mut failures = Vec::new();
    for path in &files {
        let result = check_file(path, Stage::Check);
        if result.diags.has_errors() {
            failures.push(format!("{}:\n{}", display_name(path), render_all(&result)));
            continue;
        }
        let ast = dump::dump_unit(
            &result.unit,
            &result.interner,
            &result.sources,
            result.stdlib_file,
        );
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        assert_snapshot_in("tests/parse/snapshots", &name, &display_name(path), &ast);
    }
    assert!(
        failures.is_empty(),
        "parse corpus programs with errors:\n{}",
        failures.join("\n")
    );
}

/// The codes named on the file's `// expect:` line.
fn expected_codes(text: &str, name: &str) -> Vec<String> {
    let first = text.lines().next().unwrap_or("");
    let list = first
        .strip_prefix("// expect:")
        .unwrap_or_else(|| panic!("{name}: first line must be `// expect: CODE...`"));
    list.split_whitespace().map(str::to_string).collect()
}

#[test]
fn diagnostics_corpus() {
    let files = spmd_files("tests/diagnostics");
    let mut failures = Vec::new();
    let mut distinct = std::collections::BTreeSet::new();
    for path in &files {
        let name = display_name(path);
        let text = std::fs::read_to_string(path).unwrap();
        let mut expected = expected_codes(&text, &name);
        let result = check_file(path, Stage::Check);
        let mut got = codes(&result);
        expected.sort();
        got.sort();
        if expected != got {
            failures.push(format!(
                "{name}: expected {expected:?}, got {got:?}\n{}",
                render_all(&result)
            ));
            continue;
        }
        distinct.extend(got);
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        assert_snapshot_in(
            "tests/diagnostics/snapshots",
            &stem,
            &name,
            &render_all(&result),
        );
    }
    assert!(
        failures.is_empty(),
        "{} diagnostics file(s) disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        files.len() >= 60,
        "expected at least 60 error situations, found {}",
        files.len()
    );
    assert!(
        distinct.len() >= 40,
        "expected at least 40 distinct codes exercised, found {}",
        distinct.len()
    );
}

/// Ordinary compiles check only the stdlib functions a program calls; here every stdlib
/// body is checked, for both gang widths, and must give no diagnostic at all.
#[test]
fn the_whole_stdlib_checks_cleanly() {
    use spmdc::front::sema;
    let result = spmdc::driver::run_front(
        "empty.spmd",
        None,
        String::new(),
        &spmdc::driver::FrontOptions {
            whole_stdlib: true,
            ..Default::default()
        },
        Stage::Ast,
    );
    for (program_count, pointer_size) in [(16, 4), (16, 8), (32, 8)] {
        let options = sema::Options {
            target: sema::Target {
                program_count,
                pointer_size,
            },
            check_all_stdlib: true,
            ..sema::Options::default()
        };
        let stdlib = result.stdlib_file.expect("the stdlib is loaded");
        let (_, diags) = sema::check_with(
            &result.unit,
            &result.interner,
            &result.sources,
            stdlib,
            &options,
        );
        let rendered: String = diags
            .iter()
            .map(|d| spmdc::diag::render_human(&result.sources, d, false))
            .collect();
        assert!(
            diags.is_empty(),
            "stdlib at {program_count} lanes:\n{rendered}"
        );
    }
}

/// A program is given only the standard library items it reaches
/// (`spmdc::front::stdlib_index`): for every example, conformance program and invalid
/// program, that must check, warn and lower exactly as with the whole library.
#[test]
fn reachable_library_items_compile_as_the_whole_library() {
    let mut files = spmd_files("examples");
    files.extend(spmd_files("tests/conformance"));
    files.extend(spmd_files("tests/diagnostics"));
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let run = |whole_stdlib| {
            let options = spmdc::driver::FrontOptions {
                whole_stdlib,
                ..Default::default()
            };
            let name = display_name(path);
            let result = spmdc::driver::run_front(
                &name,
                Some(path.clone()),
                text.clone(),
                &options,
                Stage::Check,
            );
            let ir = match result.diags.has_errors() {
                true => String::new(),
                false => spmdc::driver::lower_front(&result)
                    .map(|m| {
                        let mut text = String::new();
                        spmdc::ir::write::write_module(&mut text, &m).unwrap();
                        text
                    })
                    .unwrap_or_else(|e| format!("{e:?}")),
            };
            (result.stdlib_whole, render_all(&result), ir)
        };
        let (part, whole) = (run(false), run(true));
        assert!(!part.0 && whole.0);
        assert_eq!(
            part.1,
            whole.1,
            "{}: diagnostics differ",
            display_name(path)
        );
        assert_eq!(part.2, whole.2, "{}: IR differs", display_name(path));
    }
}
