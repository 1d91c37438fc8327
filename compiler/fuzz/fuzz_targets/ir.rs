//! IR text: parsing, verification, and for a module that verifies, the printer
//! (whose output must parse back to the same text) and the analyses `--emit ir`
//! prints (uniformity, affine). None may panic on any input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spmdc::ir::{parse, verify, write};

const MAX_INPUT: usize = 64 << 10;

fuzz_target!(|data: &[u8]| {
    spmdc_fuzz::on_text(data, MAX_INPUT, move |text| {
        let Ok(module) = parse::parse_module(&text) else {
            return;
        };
        if verify::verify_module(&module).is_err() {
            return;
        }
        let printed = write::module_to_string(&module);
        let again = parse::parse_module(&printed)
            .unwrap_or_else(|e| panic!("printed IR does not parse: {e:?}\n{printed}"));
        assert_eq!(
            printed,
            write::module_to_string(&again),
            "print/parse round trip"
        );
        let _ = spmdc::analysis::affine::annotated_module_text_with_uniformity(
            &module,
            &spmdc::analysis::uniformity::analyze_module(&module),
            &spmdc::analysis::affine::analyze_module(&module),
        );
    });
});
