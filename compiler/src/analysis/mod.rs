//! Analyses over the IR whose results live in side tables, never in the IR itself.
//!
//! - [`uniformity`]: which varying-typed values hold the same value in every active
//!   program instance, and which language-level branches are divergent.

pub mod affine;
pub mod checks;
pub mod uniformity;
