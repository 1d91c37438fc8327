//! The `nyuzi` back end: the real Nyuzi 16-lane vector ISA
//! (`/work/shared/reference/nyuzi-isa.md`, "the notes"), encoded with [`sim::nyuzi`].
//!
//! * [`abi`]: registers, the calling convention, the gang context record and the
//!   memory map of launch images, shared by the code generator and the image builder.
//! * [`object`]: relocatable machine code for a module, before the image builder
//!   places it.

pub mod abi;
pub mod object;
