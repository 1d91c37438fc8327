//! `float16` on the reference interpreter: every program of `tests/float16/` (ISPC-style,
//! a test entry and `result`) is lowered at 16 and 32 lanes, verified, printed and parsed
//! back to the same text, optimized (verified again), and run; the test entry must
//! write what `result` writes, bit for bit, before and after optimization.
//!
//! These programs join `tests/conformance/` once the Nyuzi and dac-gpu back ends
//! compile `float16`.

mod common;

use common::{check_file, display_name, ispc, lower_result, render_all, spmd_files};
use spmdc::driver::Stage;
use spmdc::ir::{parse_module, verify_module, write, Module};

/// `RET`'s first `lanes` words after running `name`.
fn run(module: &Module, name: &str, lanes: u32) -> Vec<u32> {
    let ret = ispc::run_entry(module, name, lanes, 20_000_000)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .ret;
    ispc::words(&ret).into_iter().take(lanes as usize).collect()
}

fn verified(module: &Module, what: &str) {
    if let Err(errors) = verify_module(module) {
        let list: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        panic!("{what} does not verify:\n{}", list.join("\n"));
    }
}

fn check_program(path: &std::path::Path, lanes: u32) {
    let name = format!("{} at {lanes} lanes", display_name(path));
    let result = check_file(path, Stage::Check);
    assert!(
        !result.diags.has_errors(),
        "{name}:\n{}",
        render_all(&result)
    );
    let mut module = lower_result(&result, lanes).unwrap_or_else(|e| panic!("{name}: {e}"));
    verified(&module, &name);
    let text = write::module_to_string(&module);
    let parsed = parse_module(&text).unwrap_or_else(|_| panic!("{name}: printed IR parses"));
    assert_eq!(write::module_to_string(&parsed), text, "{name}: round trip");
    let entry = ispc::test_entry(&module).expect("a test entry");
    let want = run(&module, "result", lanes);
    assert_eq!(run(&module, entry, lanes), want, "{name}: lowered");
    spmdc::passes::optimize(&mut module).unwrap_or_else(|e| panic!("{name}: {e}"));
    verified(&module, &name);
    assert_eq!(run(&module, entry, lanes), want, "{name}: optimized");
}

#[test]
fn float16_programs_pass_on_the_interpreter() {
    let files = spmd_files("tests/float16");
    assert!(files.len() >= 3, "expected the float16 programs");
    for path in &files {
        for lanes in [16, 32] {
            check_program(path, lanes);
        }
    }
}
