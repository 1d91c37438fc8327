//! Back ends: machine code for the `nyuzi` and `dac-gpu` targets.
//!
//! Each target has its own folder and never imports the other; what they share
//! (machine functions over virtual registers, register allocation, line tables) lives
//! in [`common`]. A back end reads the IR and the analyses' side tables; it never
//! changes the IR.

pub mod common;
pub mod dac_gpu;
pub mod nyuzi;
