//! The real Nyuzi instruction set (jbush001/NyuziProcessor, NyuziToolchain): the
//! instruction definition, a bit-exact encoder and decoder, and a disassembler in the
//! toolchain's mnemonics, plus a functional simulator ([`Machine`]) that executes
//! machine code like the upstream emulator and reads its hex image format ([`hex`]).
//! Shared by the compiler's Nyuzi back end and the timing model; see
//! `/work/shared/reference/nyuzi-isa.md` ("the notes").

#[doc(hidden)]
pub mod asm;
pub mod energy;
pub(crate) mod exec;
pub mod hex;
pub mod isa;
pub mod machine;
pub mod protect;
pub mod timing;

pub use isa::*;
pub use machine::{
    Config, Fault, FaultKind, InstClass, Machine, MemAccess, Stats, Step, Summary, DEFAULT_QUANTUM,
};
pub use protect::{Protection, Region};

#[cfg(test)]
mod energy_tests;
#[cfg(test)]
mod exec_tests;
#[cfg(test)]
mod tests;
