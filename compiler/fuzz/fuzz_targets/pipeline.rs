//! The whole pipeline from source, as `spmdc FILE --emit asm` runs it for each target:
//! front end (checked for the target's gang width), lowering, the pass pipeline, the
//! runtime routines, legalization and code generation, ending in the assembly
//! listing. Two inputs in three compile optimized, the others with `--no-opt` (by
//! length, so an input always takes the same path). A diagnostic is a fine outcome,
//! except an internal compiler error (E0999), which is a crash here.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spmdc::back::{dac_gpu, nyuzi};
use spmdc::driver::{self, FrontResult, RunError};
use spmdc::front::sema;
use spmdc::ir::Module;
use spmdc_fuzz::{checked, front, no_internal_error};

/// Bytes of source per input: small programs cover every pass, and keep each input
/// well under libFuzzer's timeout at the compiler's speed.
const MAX_INPUT: usize = 4 << 10;

fn failed(f: &FrontResult, e: RunError) {
    match e {
        RunError::Compile(diags) => no_internal_error(f, &diags),
        other => panic!("compiling gave a non-compile error: {other:?}"),
    }
}

/// The checked and lowered program for `target`'s gang width, when it compiles.
fn lowered(text: String, target: sema::Target, optimize: bool) -> Option<(FrontResult, Module)> {
    let f = front(text, target);
    if !checked(&f) {
        return None;
    }
    match driver::lower_front_with(&f, optimize) {
        Ok(m) => Some((f, m)),
        Err(diags) => {
            no_internal_error(&f, &diags);
            None
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let optimize = data.len() % 3 != 0;
    spmdc_fuzz::on_text(data, MAX_INPUT, move |text| {
        if let Some((f, m)) = lowered(text.clone(), nyuzi::TARGET, optimize) {
            match nyuzi::run::compile_lowered(&f, m, optimize) {
                Ok((_, obj)) => drop(nyuzi::listing(&obj, Some(&f.sources))),
                Err(e) => failed(&f, e),
            }
        }
        if let Some((f, m)) = lowered(text, dac_gpu::TARGET, optimize) {
            let options = dac_gpu::Options::default();
            match dac_gpu::run::compile_lowered(&f, m, optimize, &options) {
                Ok(c) => drop(dac_gpu::listing(&c, Some(&f.sources))),
                Err(e) => failed(&f, e),
            }
        }
    });
});
