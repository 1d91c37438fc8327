//! The real Nyuzi instruction set (jbush001/NyuziProcessor, NyuziToolchain): the
//! instruction definition, a bit-exact encoder and decoder, and a disassembler in the
//! toolchain's mnemonics. Shared by the compiler's Nyuzi back end and the (future)
//! simulator; see `/work/shared/reference/nyuzi-isa.md` ("the notes").

pub mod isa;

pub use isa::*;

#[cfg(test)]
mod tests;
