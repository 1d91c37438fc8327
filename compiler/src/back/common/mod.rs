//! What both back ends share: machine functions over virtual registers ([`mach`]),
//! the register allocator, and line tables.

pub mod dce;
pub mod liveness;
pub mod mach;
pub mod regalloc;
#[cfg(test)]
mod toy;
