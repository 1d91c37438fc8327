//! Register demotion policy (RegDem, paper 001; issue 19): for a kernel and its
//! launch, how much shared memory spilled values may take, and (with the
//! occupancy cliffs of the machine) which budget and placement to allocate under.
//!
//! The mechanism, slots in shared memory with the paper's bank-conflict-free layout,
//! is [`super::alloc`]'s; this module only decides.
//!
//! * **The layout's block** `n`: the launch's threads per block (`--block`, or what
//!   `spmdc run` launches) rounded up to whole warps, as the hardware block is;
//!   without a launch, the machine's largest block, as CUDA assumes without launch
//!   bounds.
//! * **Room** for [`Placement::Shared`]: all the shared memory a block may have
//!   (`max_shared_mem_per_block`) beyond the kernel's own. For [`Placement::Mixed`]:
//!   only what leaves the occupancy the budget gives intact, i.e. the shared memory
//!   per block at which exactly as many blocks fit an SM as the registers allow.

use sim::gpu::{occupancy, BlockResources, GpuConfig};

use super::alloc::{Placement, SharedRoom};

/// Warp size of the dac-gpu.
const WARP: u32 = 32;

/// Threads per block the demoted slots' layout strides by, for a launch of
/// `block_threads` threads per block (`None`: unknown) on `machine`.
pub fn layout_threads(machine: &GpuConfig, block_threads: Option<u32>) -> u32 {
    let threads = block_threads
        .unwrap_or(machine.max_threads_per_block)
        .max(1);
    threads.div_ceil(WARP) * WARP
}

/// The shared memory the demoted slots of a kernel with `static_shared` bytes of its
/// own may take per block, when it is allocated under `budget` registers for blocks of
/// `threads` threads (already whole warps). `None` when nothing may be demoted.
pub fn room(
    machine: &GpuConfig,
    placement: Placement,
    threads: u32,
    static_shared: u32,
    budget: u32,
) -> Option<SharedRoom> {
    let own = static_shared.div_ceil(4) * 4;
    let limit = match placement {
        Placement::Local => return None,
        Placement::Shared => machine.max_shared_mem_per_block,
        Placement::Mixed => shared_keeping_blocks(machine, threads, own, budget)?,
    };
    let bytes = limit.checked_sub(own).filter(|&b| b > 0)?;
    Some(SharedRoom { threads, bytes })
}

/// The most shared bytes per block at which as many blocks of `threads` threads and
/// `budget` registers fit an SM as with `own` shared bytes.
fn shared_keeping_blocks(machine: &GpuConfig, threads: u32, own: u32, budget: u32) -> Option<u32> {
    let resources = |shared| BlockResources {
        threads_per_block: threads,
        regs_per_thread: budget,
        shared_per_block: shared,
    };
    let blocks = occupancy(machine, resources(own)).ok()?.blocks_per_sm;
    let unit = machine.shared_mem_alloc_unit.max(1);
    let per_block = (machine.shared_mem_per_sm / blocks.max(1)) / unit * unit;
    let most = per_block.min(machine.max_shared_mem_per_block);
    // The allocation unit rounds down; check it, as the calculator rounds up.
    let keeps = |s| occupancy(machine, resources(s)).is_ok_and(|o| o.blocks_per_sm >= blocks);
    keeps(most).then_some(most)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_block_is_the_launch_in_whole_warps_or_the_largest() {
        let m = GpuConfig::maxwell();
        assert_eq!(layout_threads(&m, Some(100)), 128);
        assert_eq!(layout_threads(&m, Some(256)), 256);
        assert_eq!(layout_threads(&m, None), m.max_threads_per_block);
    }

    /// Mixed room keeps the blocks the registers allow: Maxwell, 256 threads at 32
    /// registers fit 8 blocks (64 warps), so each may have 96 KiB / 8 = 12 KiB.
    #[test]
    fn mixed_room_keeps_the_occupancy_of_the_budget() {
        let m = GpuConfig::maxwell();
        let r = room(&m, Placement::Mixed, 256, 1000, 32).expect("room");
        assert_eq!(r.bytes, m.shared_mem_per_sm / 8 - 1000);
        let shared = room(&m, Placement::Shared, 256, 1000, 32).expect("room");
        assert_eq!(shared.bytes, m.max_shared_mem_per_block - 1000);
        assert_eq!(room(&m, Placement::Local, 256, 0, 32), None);
    }
}
