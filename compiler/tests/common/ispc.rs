//! The ISPC-style test harness of `tests/ispc/README.md` on the reference interpreter:
//! a program's test entry (`f_v`, `f_f` or `f_fu`) and its `result` each run on a zeroed
//! 64-float `RET`, with `aFOO[i] = i + 1` and `b = 5` passed by position. Shared by the
//! tests that run the corpus lowered, optimized or legalized, so that they all launch it
//! the same way.

use spmdc::interp::{self, Launch, Limits, Memory};
use spmdc::ir::Module;

/// The names an ISPC-style test entry may have.
pub const ENTRIES: [&str; 3] = ["f_v", "f_f", "f_fu"];

/// The module's test entry, if it has one.
pub fn test_entry(module: &Module) -> Option<&'static str> {
    ENTRIES
        .into_iter()
        .find(|n| module.function_by_name(n).is_some())
}

/// What one entry's run left behind.
pub struct EntryRun {
    /// `RET`'s bytes.
    pub ret: Vec<u8>,
    /// The interpreter's dynamic instruction count.
    pub dynamic_instructions: u64,
}

/// Runs entry `name` of `module` at `lanes` lanes (one gang) for at most `max_steps`
/// steps; `Err` names the entry and says why it stopped.
pub fn run_entry(
    module: &Module,
    name: &str,
    lanes: u32,
    max_steps: u64,
) -> Result<EntryRun, String> {
    let func = module.function_by_name(name).ok_or("no entry")?;
    let mut mem = Memory::new();
    let ret = mem.add_buffer(vec![0u8; 64 * 4], "RET");
    // ISPC's func-tests read their input from `aFOO`: 1, 2, 3, ... as floats.
    let inputs: Vec<u8> = (0..64)
        .flat_map(|i| ((i + 1) as f32).to_le_bytes())
        .collect();
    let afoo = mem.add_buffer(inputs, "aFOO");
    let nparams = module.functions[func].sig.params.len();
    let args: Vec<u64> = [ret, afoo, interp::f32_arg(5.0)][..nparams].to_vec();
    let limits = Limits {
        max_steps,
        ..Limits::default()
    };
    let out = interp::run(
        module,
        func,
        &Launch::single_gang(lanes, args),
        &mut mem,
        limits,
    )
    .map_err(|e| format!("{name}: {e}"))?;
    let ret = mem.buffer(ret).ok_or("RET lost")?.to_vec();
    Ok(EntryRun {
        ret,
        dynamic_instructions: out.stats.dynamic_instructions,
    })
}

/// Little-endian 32-bit words of a buffer (`RET` as float bits).
pub fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
