//! The programs the analyses' tests walk (test builds only): every example and
//! conformance or ISPC-style program, lowered and optimized once per test binary.

use crate::ir::Module;

/// The workspace's root folder.
pub(crate) fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the compiler crate sits in the workspace")
        .to_path_buf()
}

/// Every program of the corpora, lowered and optimized like `spmdc --emit ir`; lowered
/// once and shared by the tests that walk the corpus.
pub(crate) fn corpus_modules() -> &'static [(String, Module)] {
    static CORPUS: std::sync::OnceLock<Vec<(String, Module)>> = std::sync::OnceLock::new();
    CORPUS.get_or_init(lower_corpus)
}

fn lower_corpus() -> Vec<(String, Module)> {
    let root = root();
    let mut out = Vec::new();
    for dir in ["examples", "tests/conformance", "tests/ispc"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut paths: Vec<_> = entries
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "spmd"))
            .collect();
        paths.sort();
        for path in paths {
            if let Some(module) = lower_file(&path) {
                out.push((path.display().to_string(), module));
            }
        }
    }
    out
}

/// `path` lowered and optimized; `None` for programs that do not lower cleanly (the
/// corpora hold programs that are meant to fail).
pub(crate) fn lower_file(path: &std::path::Path) -> Option<Module> {
    let text = std::fs::read_to_string(path).ok()?;
    let name = path.file_name()?.to_string_lossy().to_string();
    let front = crate::driver::run_front(
        &name,
        Some(path.to_path_buf()),
        text,
        &crate::driver::FrontOptions::default(),
        crate::driver::Stage::Check,
    );
    let module = crate::driver::lower_front(&front).ok()?;
    Some(module)
}
