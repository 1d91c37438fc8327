//! Occupancy: how many blocks of a kernel fit on one SM at once, by the rules of the
//! CUDA occupancy calculator. Each resource gives a block limit and the smallest wins:
//!
//! * warps and blocks: `min(max_blocks_per_sm, floor(max_warps / warps_per_block))`,
//!   where `max_warps` also respects `max_threads_per_sm`;
//! * registers (warp granularity): a warp takes `regs * warp_size` rounded up to the
//!   register allocation unit; a block-sized pool of `max_registers_per_block` holds
//!   `floor(pool / regs_per_warp)` warps rounded down to the warp allocation
//!   granularity, so `floor(that / warps_per_block)` blocks, times the number of such
//!   pools in the SM (`floor(registers_per_sm / max_registers_per_block)`);
//!   (block granularity, compute capability 1.x: a block's warps are rounded up to the
//!   warp granularity and its registers to the unit, and the SM's file is divided);
//! * shared memory: `floor(shared_mem_per_sm / round_up(shared, unit))`.
//!
//! A resource the kernel does not use (0 registers, 0 bytes of shared memory) does
//! not limit it.

use super::config::{AllocGranularity, GpuConfig};
use std::fmt;

/// What a kernel asks of an SM for each block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockResources {
    pub threads_per_block: u32,
    /// 32-bit registers per thread ([`super::Kernel::num_regs`]).
    pub regs_per_thread: u32,
    /// Shared memory per block in bytes.
    pub shared_per_block: u32,
}

impl BlockResources {
    /// The resources of `threads_per_block` threads of `kernel`.
    pub fn of(kernel: &super::Kernel, threads_per_block: u32) -> BlockResources {
        BlockResources {
            threads_per_block,
            regs_per_thread: kernel.num_regs,
            shared_per_block: kernel.shared_bytes,
        }
    }
}

/// The resource that bounds the number of resident blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limiter {
    /// The SM's warp (thread) slots.
    Warps,
    /// The SM's maximum number of resident blocks.
    Blocks,
    Registers,
    SharedMemory,
}

impl fmt::Display for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limiter::Warps => "warps per SM",
            Limiter::Blocks => "blocks per SM",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
        })
    }
}

/// The result of the occupancy calculation for one SM.
#[derive(Clone, Debug, PartialEq)]
pub struct Occupancy {
    pub warps_per_block: u32,
    /// Blocks resident at once.
    pub blocks_per_sm: u32,
    pub active_warps: u32,
    pub active_threads: u32,
    /// Active warps over the SM's maximum warps, in 0..=1.
    pub occupancy: f64,
    /// Every resource whose limit equals `blocks_per_sm`, in the order
    /// warps, blocks, registers, shared memory; the first is the one reported.
    pub limiters: Vec<Limiter>,
    /// Per-resource block limits: warps, blocks, registers, shared memory.
    pub limit_by_warps: u32,
    pub limit_by_blocks: u32,
    pub limit_by_regs: u32,
    pub limit_by_shared: u32,
}

impl Occupancy {
    /// The primary limiting resource.
    pub fn limiter(&self) -> Limiter {
        self.limiters.first().copied().unwrap_or(Limiter::Warps)
    }
}

/// Why a block cannot run at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OccupancyError {
    NoThreads,
    TooManyThreads {
        threads: u32,
        max: u32,
    },
    TooManyRegisters {
        regs: u32,
        max: u32,
    },
    TooMuchShared {
        bytes: u32,
        max: u32,
    },
    /// The block's registers exceed what one block may hold.
    BlockRegistersExceeded,
}

impl fmt::Display for OccupancyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OccupancyError::NoThreads => write!(f, "a block needs at least one thread"),
            OccupancyError::TooManyThreads { threads, max } => {
                write!(f, "{threads} threads per block exceed the maximum of {max}")
            }
            OccupancyError::TooManyRegisters { regs, max } => {
                write!(f, "{regs} registers per thread exceed the maximum of {max}")
            }
            OccupancyError::TooMuchShared { bytes, max } => {
                write!(
                    f,
                    "{bytes} bytes of shared memory per block exceed the maximum of {max}"
                )
            }
            OccupancyError::BlockRegistersExceeded => {
                write!(
                    f,
                    "one block's registers do not fit in the registers a block may use"
                )
            }
        }
    }
}

fn round_up(x: u64, unit: u64) -> u64 {
    x.div_ceil(unit) * unit
}

fn round_down(x: u64, unit: u64) -> u64 {
    x / unit * unit
}

/// Block limit from registers.
fn regs_limit(cfg: &GpuConfig, regs: u32, warps_per_block: u32) -> u32 {
    if regs == 0 {
        return cfg.max_blocks_per_sm;
    }
    let (regs, wpb, ws) = (
        u64::from(regs),
        u64::from(warps_per_block),
        u64::from(cfg.warp_size),
    );
    let unit = u64::from(cfg.register_alloc_unit);
    let gran = u64::from(cfg.warp_alloc_granularity);
    let limit = match cfg.register_alloc_granularity {
        AllocGranularity::Warp => {
            let per_warp = round_up(regs * ws, unit);
            let warps_in_pool = round_down(u64::from(cfg.max_registers_per_block) / per_warp, gran);
            let pools = u64::from(cfg.registers_per_sm / cfg.max_registers_per_block);
            warps_in_pool / wpb * pools
        }
        AllocGranularity::Block => {
            let per_block = round_up(round_up(wpb, gran) * regs * ws, unit);
            u64::from(cfg.registers_per_sm) / per_block
        }
    };
    u32::try_from(limit).unwrap_or(u32::MAX)
}

/// Block limit from shared memory.
fn shared_limit(cfg: &GpuConfig, bytes: u32) -> u32 {
    if bytes == 0 {
        return cfg.max_blocks_per_sm;
    }
    let per_block = round_up(u64::from(bytes), u64::from(cfg.shared_mem_alloc_unit));
    (u64::from(cfg.shared_mem_per_sm) / per_block) as u32
}

/// The CUDA occupancy calculator's answer for `res` on `cfg`.
pub fn occupancy(cfg: &GpuConfig, res: BlockResources) -> Result<Occupancy, OccupancyError> {
    let BlockResources {
        threads_per_block: threads,
        regs_per_thread: regs,
        shared_per_block: shared,
    } = res;
    if threads == 0 {
        return Err(OccupancyError::NoThreads);
    }
    if threads > cfg.max_threads_per_block {
        return Err(OccupancyError::TooManyThreads {
            threads,
            max: cfg.max_threads_per_block,
        });
    }
    if regs > cfg.max_registers_per_thread {
        return Err(OccupancyError::TooManyRegisters {
            regs,
            max: cfg.max_registers_per_thread,
        });
    }
    if shared > cfg.max_shared_mem_per_block {
        return Err(OccupancyError::TooMuchShared {
            bytes: shared,
            max: cfg.max_shared_mem_per_block,
        });
    }
    let warps_per_block = threads.div_ceil(cfg.warp_size);
    let max_warps = cfg
        .max_warps_per_sm
        .min(cfg.max_threads_per_sm / cfg.warp_size);
    let limit_by_warps = max_warps / warps_per_block;
    let limit_by_blocks = cfg.max_blocks_per_sm;
    let limit_by_regs = regs_limit(cfg, regs, warps_per_block);
    if limit_by_regs == 0 {
        return Err(OccupancyError::BlockRegistersExceeded);
    }
    let limit_by_shared = shared_limit(cfg, shared);
    let blocks = limit_by_warps
        .min(limit_by_blocks)
        .min(limit_by_regs)
        .min(limit_by_shared);
    // An unused resource reports the block maximum, as the calculator does, but is
    // never named as a limiter.
    let limiters = [
        (Limiter::Warps, limit_by_warps, true),
        (Limiter::Blocks, limit_by_blocks, true),
        (Limiter::Registers, limit_by_regs, regs > 0),
        (Limiter::SharedMemory, limit_by_shared, shared > 0),
    ]
    .into_iter()
    .filter(|&(_, l, used)| used && l == blocks)
    .map(|(r, _, _)| r)
    .collect();
    let active_warps = blocks * warps_per_block;
    Ok(Occupancy {
        warps_per_block,
        blocks_per_sm: blocks,
        active_warps,
        active_threads: blocks * threads,
        occupancy: f64::from(active_warps) / f64::from(cfg.max_warps_per_sm),
        limiters,
        limit_by_warps,
        limit_by_blocks,
        limit_by_regs,
        limit_by_shared,
    })
}

/// One occupancy level a kernel can reach by its register count: with at most `regs`
/// registers per thread, `blocks_per_sm` blocks are resident, and one register more
/// loses at least one block (an occupancy cliff).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cliff {
    pub regs: u32,
    pub blocks_per_sm: u32,
    pub occupancy: f64,
}

/// The occupancy cliffs of a block of `threads` threads using `shared` bytes of shared
/// memory (static and dynamic): for every number of resident blocks some register
/// count reaches, the largest such count, from the fewest registers (most blocks) to
/// the most. A register allocator aiming at an occupancy level uses the cliff's `regs`
/// as its budget: any fewer registers buy nothing. Empty when no register count lets
/// the block run (too many threads or too much shared memory).
pub fn register_cliffs(cfg: &GpuConfig, threads: u32, shared: u32) -> Vec<Cliff> {
    let mut cliffs: Vec<Cliff> = Vec::new();
    for regs in 1..=cfg.max_registers_per_thread {
        let res = BlockResources {
            threads_per_block: threads,
            regs_per_thread: regs,
            shared_per_block: shared,
        };
        let Ok(occ) = occupancy(cfg, res) else { break };
        let cliff = Cliff {
            regs,
            blocks_per_sm: occ.blocks_per_sm,
            occupancy: occ.occupancy,
        };
        match cliffs.last_mut() {
            Some(last) if last.blocks_per_sm == occ.blocks_per_sm => *last = cliff,
            _ => cliffs.push(cliff),
        }
    }
    cliffs
}
