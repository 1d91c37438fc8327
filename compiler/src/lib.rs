//! spmdc: a compiler for a C-like SPMD kernel language whose core is source-compatible
//! with ISPC, plus GPU launch built-ins.
//!
//! The pipeline: [`front`] (preprocess, lex, parse, check) turns source into a checked
//! AST; later stages lower it to IR, optimize it and emit code for the `nyuzi` and
//! `dac-gpu` targets. [`driver`] strings the stages together for the command line, the
//! tests and any other front end (the playground).

pub mod analysis;
pub mod back;
pub mod bench;
pub mod diag;
pub mod difftest;
pub mod driver;
pub mod front;
pub mod gen;
pub mod heap;
pub mod interp;
pub mod ir;
pub mod ispc_examples;
pub mod ispc_suite;
pub mod launch;
pub mod lower;
pub mod parallel;
pub mod passes;
pub mod playground;
pub mod profile;
pub mod run_progress;
pub mod source;
pub mod timing;
