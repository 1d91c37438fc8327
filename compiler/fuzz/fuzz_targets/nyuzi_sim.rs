//! The Nyuzi decoder and simulator on arbitrary images: the bytes are little-endian
//! words loaded at address 0, where thread 0 starts. Every word must decode to an
//! instruction that encodes back to it, or be rejected; the image then runs on the
//! functional machine (unchecked, as the hardware) and on the timing model (with the
//! image's words read-only and the rest of RAM writable, as `spmdc run` protects a
//! launch), each ending in a halt or a fault within its small limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sim::nyuzi::timing::{run_timing, TimingConfig};
use sim::nyuzi::{decode, encode, Config, Machine, Protection, Region};

/// Instruction words per image.
const MAX_WORDS: usize = 4096;
/// RAM of the fuzzed machine: the image and room to store into.
const MEMORY: u32 = 256 << 10;
const MAX_INSTRUCTIONS: u64 = 20_000;
const MAX_CYCLES: u64 = 100_000;

fn machine(words: &[u32]) -> Option<Machine> {
    let mut m = Machine::new(Config {
        cores: 1,
        threads_per_core: 4,
        memory_size: MEMORY,
        max_instructions: MAX_INSTRUCTIONS,
    });
    m.load_words(0, words).ok()?;
    Some(m)
}

fuzz_target!(|data: &[u8]| {
    if data.len() > 4 * MAX_WORDS {
        return;
    }
    let words: Vec<u32> = data
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect();
    for &w in &words {
        if let Ok(inst) = decode(w) {
            assert_eq!(
                encode(&inst),
                w,
                "{inst:?} does not encode back to {w:#010x}"
            );
            let _ = inst.to_string();
        }
    }
    let Some(mut m) = machine(&words) else {
        return;
    };
    if let Err(fault) = m.run() {
        let _ = fault.to_string();
    }
    let _ = m.stats();
    let Some(mut m) = machine(&words) else {
        return;
    };
    let code_end = 4 * words.len() as u32;
    let regions = [
        Region {
            start: 0,
            end: code_end,
            writable: false,
        },
        Region {
            start: code_end,
            end: MEMORY,
            writable: true,
        },
    ];
    m.set_protection(Some(Protection::new(regions, (0, 0))));
    let config = TimingConfig {
        max_cycles: MAX_CYCLES,
        ..TimingConfig::default()
    };
    let _ = run_timing(&mut m, &config);
});
