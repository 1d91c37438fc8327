//! Build steps:
//! - the parser, from `src/front/grammar.lalrpop` (lalrpop);
//! - the standard library's source, `../stdlib/*.spmd` in order, as one file;
//! - its item index (`src/front/stdlib_scan.rs`, run here so a compile does not lex
//!   the library to find its items; `front::stdlib_index` includes the tables);
//! - where the functions of each prebuilt runtime (`../stdlib/prebuilt/*.ir`) start,
//!   with their names and signatures, when it was built from this library
//!   (`driver::prebuilt` cuts it there);
//! - the playground's examples gallery: every `../examples/*.spmd`, embedded.

use std::path::Path;

#[macro_use]
#[path = "src/front/keywords.rs"]
mod keywords;
#[path = "src/front/items.rs"]
mod items;
#[path = "src/front/lexer.rs"]
mod lexer;
#[path = "src/driver/prebuilt_scan.rs"]
mod prebuilt_scan;
#[path = "src/front/stdlib_scan.rs"]
mod stdlib_scan;

/// The standard library's files, in the order they are compiled: the library proper,
/// then the runtime routines legalization calls.
const STDLIB_FILES: &[&str] = &[
    "stdlib.spmd",
    "runtime_int.spmd",
    "runtime_float.spmd",
    "runtime_half.spmd",
    "runtime_print.spmd",
];

macro_rules! keyword_spellings {
    ($($spelling:literal => $tok:ident,)*) => {
        const KEYWORDS: &[&str] = &[$($spelling),*];
    };
}

with_keywords!(keyword_spellings);

fn main() {
    link_binaries_at_fixed_addresses();
    lalrpop::process_src().expect("lalrpop grammar failed to build");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let out = Path::new(&out);
    let mut source = String::new();
    for file in STDLIB_FILES {
        let path = format!("../stdlib/{file}");
        println!("cargo:rerun-if-changed={path}");
        source.push_str(&std::fs::read_to_string(&path).expect("a standard library file"));
    }
    let tables = stdlib_scan::tables(&source, |w| KEYWORDS.contains(&w));
    write_if_changed(&out.join("stdlib.spmd"), &source);
    // The prebuilt runtime's stamp (`driver::prebuilt`): hashed here, not per process.
    let hash = source.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    write_if_changed(&out.join("stdlib_hash.rs"), &format!("{hash:#018x}\n"));
    write_if_changed(
        &out.join("prebuilt_functions.rs"),
        &prebuilt_functions(hash),
    );
    write_if_changed(&out.join("stdlib_index.rs"), &tables.to_rust());
    write_if_changed(&out.join("playground_examples.rs"), &examples_table());
    for input in [
        "build.rs",
        "src/front/grammar.lalrpop",
        "src/front/keywords.rs",
        "src/front/items.rs",
        "src/front/lexer.rs",
        "src/front/stdlib_scan.rs",
        "src/driver/prebuilt_scan.rs",
    ] {
        println!("cargo:rerun-if-changed={input}");
    }
}

/// `&[(name, include_str!(path)), ...]` of the examples, by name.
fn examples_table() -> String {
    let dir = std::fs::canonicalize("../examples").expect("the examples directory");
    let names = files_ending(&dir, ".spmd");
    let mut out = String::from("&[\n");
    for name in names {
        let path = dir.join(&name);
        println!("cargo:rerun-if-changed={}", path.display());
        out.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    out.push_str("]\n");
    out
}

/// `&[(file, Some(&[(offset, name, first line), ...])), ...]`: per prebuilt runtime,
/// where its functions start in the text after its stamp line, their names and
/// signature lines, or `None` when the stamp is not `hash`.
fn prebuilt_functions(hash: u64) -> String {
    let mut out = String::from("&[\n");
    for file in files_ending(Path::new("../stdlib/prebuilt"), ".ir") {
        let path = format!("../stdlib/prebuilt/{file}");
        println!("cargo:rerun-if-changed={path}");
        let text = std::fs::read_to_string(&path).expect("a prebuilt runtime");
        match prebuilt_scan::body_for(&text, hash).and_then(prebuilt_scan::functions) {
            Some(functions) => out.push_str(&format!("    ({file:?}, Some(&{functions:?})),\n")),
            None => out.push_str(&format!("    ({file:?}, None),\n")),
        }
    }
    out.push_str("]\n");
    out
}

/// The names of the files in `dir` ending with `suffix`, sorted; the build reruns
/// when the directory changes.
fn files_ending(dir: &Path, suffix: &str) -> Vec<String> {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(suffix))
        .collect();
    names.sort();
    names
}

/// Writes `text` to `path` unless it is there already (so its timestamp, and what
/// depends on it, stay as they are).
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).expect("writes to OUT_DIR");
    }
}

/// Links the `spmdc` binary as a position-dependent executable on x86-64 Linux: a
/// PIE's 13,000 relative relocations make the loader write 60 pages of pointer tables
/// at every start (67 copy-on-write page faults, before `main`), which a short
/// process pays on every call. The crate's objects stay position-independent (the
/// flag affects only the binaries' link, not proc-macros or libraries).
fn link_binaries_at_fixed_addresses() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target == "x86_64-unknown-linux-gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
