//! The front end (preprocess, lex, parse, check) on arbitrary source text: it ends in
//! diagnostics or a checked AST, never a panic, a hang or unbounded memory.
#![no_main]

use libfuzzer_sys::fuzz_target;

/// Bytes of source per input (the CLI takes 16 MiB; coverage needs no more).
const MAX_INPUT: usize = 64 << 10;

fuzz_target!(|data: &[u8]| {
    spmdc_fuzz::on_text(data, MAX_INPUT, move |text| {
        spmdc_fuzz::front(text, spmdc::back::nyuzi::TARGET);
    });
});
