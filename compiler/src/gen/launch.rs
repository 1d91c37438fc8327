//! The launch a program is generated for: a random grid and block, with partial
//! gangs and warps (block sizes that are not multiples of 16 or 32) as often as
//! whole ones, 2-D and 3-D shapes, and the inputs' seed.

use super::emit::SHARED_LEN;
use super::model::Launch;
use super::rng::Rng;

/// A random launch of at most [`SHARED_LEN`] threads per block (the prologue's
/// `shared` array has one element per thread) and a few blocks.
pub fn random_launch(rng: &mut Rng) -> Launch {
    let block = match rng.below(6) {
        // One gang of the interpreter or nyuzi, one warp of dac-gpu.
        0 => [*rng.pick(&[16, 32]), 1, 1],
        // Whole warps (so whole gangs everywhere).
        1 => [32 * rng.range(1, 4) as u32, 1, 1],
        // Any size: partial gangs and warps.
        2 | 3 => [rng.range(1, 100) as u32, 1, 1],
        // 2-D.
        4 => [rng.range(1, 16) as u32, rng.range(1, 8) as u32, 1],
        // 3-D.
        _ => [
            rng.range(1, 8) as u32,
            rng.range(1, 4) as u32,
            rng.range(1, 4) as u32,
        ],
    };
    debug_assert!(block.iter().product::<u32>() <= SHARED_LEN);
    let grid = match rng.below(4) {
        0 | 1 => [1, 1, 1],
        2 => [rng.range(2, 3) as u32, 1, 1],
        _ => [rng.range(1, 2) as u32, rng.range(1, 2) as u32, 1],
    };
    Launch {
        grid,
        block,
        input_seed: rng.below(1 << 20) as u32,
        k0: rng.range(-5, 20) as i32,
    }
}

impl Launch {
    /// Every gang and warp of every block is whole: the block is a multiple of 32
    /// threads (the widest gang any target runs).
    pub fn whole_gangs(&self) -> bool {
        self.block_threads().is_multiple_of(32)
    }
}
