//! What both back ends share: machine functions over virtual registers ([`mach`]),
//! the register allocator, and line tables.

pub mod mach;
