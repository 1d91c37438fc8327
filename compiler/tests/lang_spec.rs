//! lang-spec/ stays true: every ```spmd sample in it (and in the `spmdc explain` texts)
//! compiles, or fails with the code its fence names (```spmd error=E0400), and the
//! diagnostics index lists every code.

mod common;

use std::path::{Path, PathBuf};

use common::*;

struct Sample {
    file: String,
    line: usize,
    expect: Option<String>,
    code: String,
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// Fenced blocks whose info string starts with `spmd`.
fn samples(path: &Path) -> Vec<Sample> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut current: Option<Sample> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut current {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let mut words = info.split_whitespace();
                    if words.next() == Some("spmd") {
                        let expect = words
                            .find_map(|w| w.strip_prefix("error="))
                            .map(str::to_string);
                        current = Some(Sample {
                            file: display_name(path),
                            line: i + 1,
                            expect,
                            code: String::new(),
                        });
                    }
                }
            }
            Some(sample) => {
                if trimmed.starts_with("```") {
                    out.push(current.take().unwrap());
                } else {
                    sample.code.push_str(line);
                    sample.code.push('\n');
                }
            }
        }
    }
    out
}

fn check_samples(dirs: &[PathBuf]) -> usize {
    let mut files = Vec::new();
    for d in dirs {
        markdown_files(d, &mut files);
    }
    files.sort();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in &files {
        for s in samples(file) {
            count += 1;
            let result = check_source(&format!("{}:{}", s.file, s.line), &s.code);
            let first_error = result
                .diags
                .iter()
                .find(|d| d.is_error())
                .map(|d| d.code.to_string());
            let ok = match &s.expect {
                None => first_error.is_none(),
                Some(code) => first_error.as_deref() == Some(code.as_str()),
            };
            if !ok {
                failures.push(format!(
                    "{}:{}: expected {}, got {}\n{}",
                    s.file,
                    s.line,
                    s.expect.as_deref().unwrap_or("no errors"),
                    first_error.as_deref().unwrap_or("no errors"),
                    render_all(&result)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} sample(s) disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
    count
}

#[test]
fn lang_spec_samples_compile_as_stated() {
    let n = check_samples(&[repo_root().join("lang-spec")]);
    assert!(
        n >= 30,
        "lang-spec should show the language by example; found only {n} samples"
    );
}

#[test]
fn explain_samples_compile_as_stated() {
    check_samples(&[repo_root().join("compiler/src/diag/explain")]);
}

#[test]
fn diagnostics_index_lists_every_code() {
    let index = std::fs::read_to_string(repo_root().join("lang-spec/diagnostics.md")).unwrap();
    let missing: Vec<&str> = spmdc::diag::codes::ALL
        .iter()
        .map(|c| c.code.as_str())
        .filter(|c| !index.contains(c))
        .collect();
    assert!(
        missing.is_empty(),
        "lang-spec/diagnostics.md lacks {missing:?}"
    );
}

#[test]
fn every_code_has_a_real_explanation() {
    for info in spmdc::diag::codes::ALL {
        let text = info.explanation;
        assert!(
            text.starts_with(&format!("{}: ", info.code)),
            "{} explanation must start with its code",
            info.code
        );
        assert!(
            !text.contains("being written"),
            "{} has a placeholder explanation",
            info.code
        );
        assert!(
            text.lines().count() >= 5,
            "{} explanation is too short",
            info.code
        );
    }
}

/// Every nonterminal of the parser's grammar has a rule in lang-spec/grammar.md.
#[test]
fn ebnf_covers_every_nonterminal() {
    let lalrpop =
        std::fs::read_to_string(repo_root().join("compiler/src/front/grammar.lalrpop")).unwrap();
    let ebnf = std::fs::read_to_string(repo_root().join("lang-spec/grammar.md")).unwrap();
    // `Name ::= ...` or `Name<T> ::= ...` at the start of a line.
    let ebnf_rules: std::collections::HashSet<&str> = ebnf
        .lines()
        .filter_map(|l| l.split_once("::="))
        .map(|(lhs, _)| lhs.split('<').next().unwrap_or("").trim())
        .collect();
    let mut missing = Vec::new();
    for line in lalrpop.lines() {
        let line = line.strip_prefix("pub ").unwrap_or(line);
        let name: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let rest = &line[name.len()..];
        let is_rule = name.starts_with(|c: char| c.is_ascii_uppercase())
            && (rest.starts_with(':') || rest.starts_with('<'));
        if is_rule && !ebnf_rules.contains(name.as_str()) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "lang-spec/grammar.md has no rule for {missing:?}"
    );
}

/// Every ```ir block under lang-spec/ is a complete module that parses, verifies, and
/// prints back to exactly its own text.
#[test]
fn ir_samples_parse_verify_and_round_trip() {
    let mut files = Vec::new();
    markdown_files(&repo_root().join("lang-spec"), &mut files);
    files.sort();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let mut current: Option<(usize, String)> = None;
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            match &mut current {
                None => {
                    let info = trimmed.strip_prefix("```");
                    if info.and_then(|i| i.split_whitespace().next()) == Some("ir") {
                        current = Some((i + 1, String::new()));
                    }
                }
                Some((start, code)) => {
                    if !trimmed.starts_with("```") {
                        code.push_str(line);
                        code.push('\n');
                        continue;
                    }
                    count += 1;
                    let at = format!("{}:{}", display_name(file), start);
                    match spmdc::ir::parse::parse_module(code) {
                        Err(errors) => {
                            let errors: Vec<String> =
                                errors.iter().map(|e| e.to_string()).collect();
                            failures.push(format!("{at}: does not parse:\n{}", errors.join("\n")));
                        }
                        Ok(module) => {
                            if let Err(errors) = spmdc::ir::verify::verify_module(&module) {
                                let errors: Vec<String> =
                                    errors.iter().map(|e| e.to_string()).collect();
                                failures
                                    .push(format!("{at}: does not verify:\n{}", errors.join("\n")));
                            }
                            let printed = spmdc::ir::write::module_to_string(&module);
                            if printed != *code {
                                failures.push(format!(
                                    "{at}: prints differently:\n--- sample\n{code}--- printed\n{printed}"
                                ));
                            }
                        }
                    }
                    current = None;
                }
            }
        }
    }
    assert!(count > 0, "lang-spec has no ```ir samples");
    assert!(
        failures.is_empty(),
        "{} IR sample(s) fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
