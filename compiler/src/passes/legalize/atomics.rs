//! Atomics Nyuzi lacks: any atomic with a varying operand (a loop over the active
//! lanes in increasing lane order doing the native uniform atomic), and every 64-bit
//! atomic (a global spin lock around a plain load, compute and store).
//!
//! Routines exist for i32 and i64; f32/f64 (exchange, compare-and-swap) and pointers
//! travel as integers of their width. The address is passed as a 32-bit integer (a
//! Nyuzi pointer) and the instruction's mask as an explicit `bool` argument (all-on
//! when the instruction has none): a uniform atomic happens when any lane of it is on,
//! a varying one once per lane on.

use super::{variant, Cursor, Rewritten};
use crate::ir::{ConvOp, Function, InstData, Scalar, Type};

/// Whether `data` is an atomic Nyuzi cannot do natively.
pub fn is_illegal(func: &Function, data: &InstData) -> bool {
    let value = match data {
        InstData::AtomicRmw { value, .. } => *value,
        InstData::AtomicCas { expected, .. } => *expected,
        _ => return false,
    };
    let mask = data.mask();
    let varying = data
        .operands()
        .iter()
        .any(|&v| Some(v) != mask && func.value_type(v).varying);
    // Pointers are 4 bytes on Nyuzi: their atomics are 32-bit.
    let s = func.value_type(value).scalar;
    varying || !matches!(s, Scalar::I32 | Scalar::F32 | Scalar::Ptr)
}

/// Rewrites an illegal atomic.
pub fn rewrite(cur: &mut Cursor, data: &InstData) -> Result<Rewritten, String> {
    if !is_illegal(cur.func, data) {
        return Ok(Rewritten::Unchanged);
    }
    let (name, addr, vals, mask) = match data {
        InstData::AtomicRmw {
            op,
            addr,
            value,
            mask,
            ..
        } => (op.name(), *addr, vec![*value], *mask),
        InstData::AtomicCas {
            addr,
            expected,
            replacement,
            mask,
            ..
        } => ("cas", *addr, vec![*expected, *replacement], *mask),
        _ => return Ok(Rewritten::Unchanged),
    };
    let elem = cur.ty(vals[0]).scalar;
    let carried = match elem {
        Scalar::I32 | Scalar::F32 => Scalar::I32,
        Scalar::I64 | Scalar::F64 => Scalar::I64,
        Scalar::Ptr if cur.ptr_size == 4 => Scalar::I32,
        Scalar::Ptr => Scalar::I64,
        // 8- and 16-bit atomics have no routine (the language has none).
        _ => return Ok(Rewritten::Unchanged),
    };
    if cur.ptr_size != 4 {
        return Err("atomic routines take 4-byte addresses (Nyuzi)".into());
    }
    let varying = [addr].iter().chain(&vals).any(|&v| cur.ty(v).varying);
    let rt = Type {
        scalar: carried,
        varying,
    };
    let mut args = vec![cur.conv(ConvOp::Bitcast, addr, Scalar::I32)?];
    for v in vals {
        args.push(cur.conv(ConvOp::Bitcast, v, carried)?);
    }
    let m = match mask {
        Some(m) => m,
        None => cur.all_on(),
    };
    args.push(m);
    let r = cur.call(
        &format!("atomic_{name}_{}_{}", carried.name(), variant(rt)),
        &args,
        None,
    )?;
    Ok(Rewritten::Value(cur.conv(ConvOp::Bitcast, r, elem)?))
}
