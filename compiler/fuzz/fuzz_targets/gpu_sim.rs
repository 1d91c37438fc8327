//! The dac-gpu assembler and simulator on arbitrary assembly text: parsing, the
//! well-formedness check, the printer (whose text must parse back to the same
//! program) and, for a program that checks, its first `.entry` launched on the
//! functional simulator and on the timing model (GTX 480 configuration, GTO), each
//! ending in results or a fault within small limits. Every parameter of 8 bytes is
//! given a buffer of its own; the others small values.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sim::gpu::{
    self, pack_params, run_functional, run_timing, GlobalMemory, GpuConfig, KernelKind, Launch,
    Limits, Program, SchedulerKind,
};

const MAX_INPUT: usize = 32 << 10;
const BUFFER_BYTES: usize = 4 << 10;
const LIMITS: Limits = Limits {
    max_warp_insts: 20_000,
    max_cycles: 200_000,
};

/// A launch of `program`'s first entry, with its parameter buffers in a fresh memory.
fn launch(program: &Program) -> Option<(Launch, GlobalMemory)> {
    let kernel = program
        .kernels
        .iter()
        .find(|k| k.kind == KernelKind::Entry)?;
    let mut mem = GlobalMemory::new();
    let values: Vec<u64> = (0..kernel.params.len())
        .map(|i| match kernel.params[i].ty.bytes() {
            8 => mem.add_zeroed(BUFFER_BYTES, &kernel.params[i].name),
            _ => i as u64 + 1,
        })
        .collect();
    let launch = Launch {
        kernel: kernel.name.clone(),
        grid: (2, 1, 1),
        block: (48, 1, 1),
        params: pack_params(kernel, &values),
    };
    Some((launch, mem))
}

fuzz_target!(
    init: {
        // One host thread per run: libFuzzer measures one process, and the blocks
        // then run in order.
        std::env::set_var("SPMDC_SIM_THREADS", "1");
    },
    |data: &[u8]| {
    let Some(text) = spmdc_fuzz::text(data, MAX_INPUT) else {
        return;
    };
    let Ok(program) = gpu::parse(&text) else {
        return;
    };
    let printed = gpu::print(&program);
    let again =
        gpu::parse(&printed).unwrap_or_else(|e| panic!("printed asm does not parse: {e:?}\n{printed}"));
    assert_eq!(again, program, "print/parse round trip\n{printed}");
    if gpu::check(&program).is_err() {
        return;
    }
    let Some((launch_, mut mem)) = launch(&program) else {
        return;
    };
    if let Err(fault) = run_functional(&program, &launch_, &mut mem, LIMITS) {
        let _ = fault.to_string();
    }
    let (launch_, mut mem) = launch(&program).expect("launched once");
    let config = GpuConfig::gtx480();
    let _ = run_timing(&program, &launch_, &mut mem, &config, LIMITS, SchedulerKind::Gto);
}
);
