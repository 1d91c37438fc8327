//! Helpers shared by the integration tests: locating the repository's corpora and
//! running the front end on a file the way `spmdc check` does; `ispc` runs the
//! ISPC-style harness on the interpreter.

#![allow(dead_code)]

pub mod ispc;
pub mod launches;
pub mod targets;

use std::path::{Path, PathBuf};

use spmdc::diag::{self, Diagnostic};
use spmdc::driver::{self, FrontOptions, FrontResult, Stage};
use spmdc::front::sema;

/// The workspace root (the parent of `compiler/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `*.spmd` files directly in `dir` (relative to the repository root), sorted.
pub fn spmd_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo_root().join(dir))
        .unwrap_or_else(|e| panic!("cannot read {dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "spmd"))
        .collect();
    files.sort();
    files
}

/// The path relative to the repository root, with `/` separators: stable names for
/// snapshots and messages on every machine.
pub fn display_name(path: &Path) -> String {
    path.strip_prefix(repo_root())
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Runs the front end on a file, as `spmdc check` would.
pub fn check_file(path: &Path, stage: Stage) -> FrontResult {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    driver::run_front(
        &display_name(path),
        Some(path.to_path_buf()),
        text,
        &FrontOptions::default(),
        stage,
    )
}

/// Runs the front end on a file for `target` (a back end's gang width and pointer
/// size), as `spmdc run --target ...` would.
pub fn check_file_for(path: &Path, target: spmdc::front::sema::Target) -> FrontResult {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let options = FrontOptions {
        target,
        ..FrontOptions::default()
    };
    driver::run_front(
        &display_name(path),
        Some(path.to_path_buf()),
        text,
        &options,
        Stage::Check,
    )
}

/// Runs the front end on source `text` (named `name`) for `target`.
pub fn check_source_for(name: &str, text: &str, target: spmdc::front::sema::Target) -> FrontResult {
    let options = FrontOptions {
        target,
        ..FrontOptions::default()
    };
    driver::run_front(name, None, text.to_string(), &options, Stage::Check)
}

/// The dac-gpu's program instances: warps of 32, 8-byte pointers.
pub const DAC_GPU: spmdc::front::sema::Target = spmdc::front::sema::Target {
    program_count: 32,
    pointer_size: 8,
};

pub fn check_source(name: &str, text: &str) -> FrontResult {
    driver::run_front(
        name,
        None,
        text.to_string(),
        &FrontOptions::default(),
        Stage::Check,
    )
}

/// Every diagnostic rendered without colour, as the terminal shows them.
pub fn render_all(result: &FrontResult) -> String {
    result
        .diags
        .iter()
        .map(|d| diag::render_human(&result.sources, d, false))
        .collect()
}

pub fn codes(result: &FrontResult) -> Vec<String> {
    result
        .diags
        .iter()
        .map(|d: &Diagnostic| d.code.to_string())
        .collect()
}

/// Lowers a checked front-end result for `lanes` lanes (re-checking if not the default).
pub fn lower_result(
    result: &spmdc::driver::FrontResult,
    lanes: u32,
) -> Result<spmdc::ir::Module, String> {
    let fresh;
    let checked = if lanes == 16 {
        result.checked.as_ref().expect("checked")
    } else {
        let options = sema::Options {
            target: sema::Target {
                program_count: lanes,
                pointer_size: 8,
            },
            ..sema::Options::default()
        };
        let stdlib = result.stdlib_file.expect("stdlib");
        let (c, diags) = sema::check_with(
            &result.unit,
            &result.interner,
            &result.sources,
            stdlib,
            &options,
        );
        assert!(
            !diags.iter().any(|d| d.is_error()),
            "sema errors at {lanes} lanes"
        );
        fresh = c;
        &fresh
    };
    spmdc::lower::lower(&result.unit, checked, &result.interner, &result.sources).map_err(|diags| {
        diags
            .iter()
            .map(|d| spmdc::diag::render_human(&result.sources, d, false))
            .collect::<String>()
    })
}

/// Asserts an insta snapshot named `name` stored under `dir` (relative to the repository
/// root), with `description` recorded in the snapshot file.
pub fn assert_snapshot_in(dir: &str, name: &str, description: &str, text: &str) {
    insta::with_settings!({
        snapshot_path => repo_root().join(dir),
        prepend_module_to_snapshot => false,
        description => description,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, text);
    });
}

/// A deterministic generator (xorshift64*) for test inputs.
pub struct XorShiftRng(pub u64);

impl XorShiftRng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// Runs `module`'s `k(bufs..., n)` on the interpreter as one gang of `lanes` lanes, for
/// at most `max_steps` steps; the buffers afterwards, or why the run stopped.
pub fn run_k(
    module: &spmdc::ir::Module,
    bufs: &[Vec<u8>],
    n: u64,
    lanes: u32,
    max_steps: u64,
) -> Result<Vec<Vec<u8>>, String> {
    use spmdc::interp::{self, Launch, Limits, Memory};
    let func = module.function_by_name("k").ok_or("no entry k")?;
    let mut mem = Memory::new();
    let addrs: Vec<u64> = bufs
        .iter()
        .enumerate()
        .map(|(i, b)| mem.add_buffer(b.clone(), &format!("b{i}")))
        .collect();
    let mut args = addrs.clone();
    args.push(n);
    let limits = Limits {
        max_steps,
        ..Limits::default()
    };
    interp::run(
        module,
        func,
        &Launch::single_gang(lanes, args),
        &mut mem,
        limits,
    )
    .map_err(|e| e.to_string())?;
    addrs
        .iter()
        .map(|&a| Ok(mem.buffer(a).ok_or("buffer lost")?.to_vec()))
        .collect()
}
