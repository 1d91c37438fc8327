//! The `dac-gpu` SIMT machine: its instruction set ([`isa`]), text assembler and
//! printer ([`asm`]), machine configuration ([`config`]) and the CUDA-style occupancy
//! calculation ([`mod@occupancy`]). The timing simulator arrives with a later issue.

pub mod asm;
pub mod config;
pub mod isa;
pub mod occupancy;

pub use asm::{check, parse, print, AsmError};
pub use config::GpuConfig;
pub use isa::*;
pub use occupancy::{occupancy, BlockResources, Limiter, Occupancy, OccupancyError};

#[cfg(test)]
mod tests;
