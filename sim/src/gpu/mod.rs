//! The `dac-gpu` SIMT machine: its instruction set ([`isa`]), text assembler and
//! printer ([`asm`]), machine configuration ([`config`]) and the CUDA-style occupancy
//! calculation ([`mod@occupancy`]), and the simulator: functional semantics ([`exec`]),
//! launches and global memory ([`machine`], [`run_functional`]), the timing model
//! ([`timing`], [`run_timing`]), statistics ([`stats`]) and the energy model
//! ([`energy`]).

pub mod affine;
pub mod asm;
pub mod config;
pub mod dac;
pub mod energy;
pub mod exec;
pub mod isa;
mod lanes32;
pub mod machine;
pub mod occupancy;
pub mod per_sm;
pub mod stats;
pub mod timing;
mod timing_dac;
pub mod uniform;

pub use asm::{check, parse, print, AsmError};
pub use config::{AtqCursor, BarrierGate, GpuConfig};
pub use isa::*;
pub use machine::{
    pack_params, run_functional, run_functional_recorded, FaultKind, FunctionalReport,
    GlobalMemory, GpuFault, Launch, Limits, MAX_BLOCK_THREADS,
};
pub use occupancy::{
    occupancy, register_cliffs, BlockResources, Cliff, Limiter, Occupancy, OccupancyError,
};

pub use stats::{StatValue, Stats};
pub use timing::{run_timing, run_timing_recorded, SchedulerKind, TimingReport, STALL_NAMES};

#[cfg(test)]
mod affine_tests;
#[cfg(test)]
mod energy_tests;
#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod uniform_tests;
