//! The `dac-gpu` SIMT machine: its instruction set ([`isa`]), text assembler and
//! printer ([`asm`]), machine configuration ([`config`]) and the CUDA-style occupancy
//! calculation ([`occupancy`]). The timing simulator arrives with a later issue.

pub mod asm;
pub mod isa;

pub use asm::{parse, print, AsmError};
pub use isa::*;

#[cfg(test)]
mod tests;
