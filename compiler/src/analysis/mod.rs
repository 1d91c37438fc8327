//! Analyses over the IR whose results live in side tables, never in the IR itself.
//!
//! - [`uniformity`]: which varying-typed values hold the same value in every active
//!   program instance, and which language-level branches are divergent.
//! - [`affine`]: which integer and pointer values are affine tuples in the thread
//!   indices.
//! - [`cycles`]: the strongly connected components of a control-flow graph.
//! - [`shuffle`]: which loads another load's register serves, from a neighbouring lane
//!   (a shuffle) or the same lane, on top of the affine tuples.

pub mod affine;
pub mod checks;
#[cfg(test)]
pub(crate) mod corpus;
pub mod cycles;
pub mod shuffle;
pub mod uniformity;
