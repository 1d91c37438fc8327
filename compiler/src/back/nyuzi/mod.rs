//! The `nyuzi` back end: the real Nyuzi 16-lane vector ISA
//! (`/work/shared/reference/nyuzi-isa.md`, "the notes"), encoded with [`sim::nyuzi`].
//!
//! * [`abi`]: registers, the calling convention, the gang context record and the
//!   memory map of launch images, shared by the code generator and the image builder.
//! * [`object`]: relocatable machine code for a module, before the image builder
//!   places it.
//! * [`isel`] (IR to [`minst`] over virtual registers), [`emit`] (frame layout,
//!   encoding, relocations, line table), [`codegen`] ([`compile_module`]) and [`asm`]
//!   ([`listing`]): the code generator.
//! * [`image`], [`layout`], [`runtime`]: launch images (start-up stub, block
//!   scheduler and barrier fibers, arguments and buffers) and their memory map;
//!   [`protection`]: the regions a checked run lets the kernel access.

pub mod abi;
pub mod asm;
pub mod codegen;
pub mod emit;
pub mod image;
pub mod isel;
pub mod layout;
pub mod masks;
pub mod minst;
pub mod object;
pub mod protection;
pub mod run;
pub mod run_stats;
pub mod runtime;
pub mod scalarize;
pub mod vectorize;

pub use asm::listing;
pub use codegen::{compile_module, shared_layout};

/// What programs for Nyuzi are checked and lowered for: 16 lanes, 32-bit pointers.
pub const TARGET: crate::front::sema::Target = crate::front::sema::Target {
    program_count: abi::LANES,
    pointer_size: 4,
};

#[cfg(test)]
mod tests;
