//! The front end: source text to a checked AST.
//!
//! Stages, each in its own module:
//! - [`lexer`]: raw tokens of one file (logos);
//! - [`preprocess`]: `#include`, `#define`, `#pragma`, conditionals; literal values;
//!   the type-name pre-scan; produces parser [`token::Tok`]s;
//! - [`parse`]: the lalrpop grammar with error recovery, producing the [`ast`];
//! - [`stdlib_index`]: the standard library's items by the names they declare, so a
//!   program parses only the items it reaches ([`items`] cuts a stream into items,
//!   [`stdlib_scan`] builds the index's tables, at build time);
//! - [`sema`]: names, types and ISPC's uniform/varying rules, with results in side tables.
//!
//! The front end knows nothing of the IR.

#[macro_use]
mod keywords;

pub mod ast;
pub mod dump;
pub mod intern;
pub mod items;
pub mod lexer;
pub mod parse;
pub mod preprocess;
pub mod sema;
pub mod stdlib_index;
pub mod stdlib_scan;
pub mod token;

/// The standard library's source, compiled ahead of every user program as if included
/// at the top of it. Its functions are the implementation's: sema does not require
/// definitions for its prototypes. The runtime routines that legalization calls
/// (`__spmdc_rt_*`, see [`crate::passes::legalize`]) follow the library proper: the
/// build script joins `stdlib/*.spmd` in that order (and indexes the result,
/// [`stdlib_index`]).
pub const STDLIB_NAME: &str = "<stdlib>/stdlib.spmd";
pub const STDLIB_SOURCE: &str = include_str!(concat!(env!("OUT_DIR"), "/stdlib.spmd"));
