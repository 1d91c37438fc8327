//! Cross-lane operations Nyuzi lacks: `rotate`, `shift`, `shuffle2`, the reductions
//! (`reduce_add/min/max/and/or`, `reduce_equal`) and the exclusive scans.
//!
//! Routines exist for 32- and 64-bit integers and (reductions, `reduce_equal`,
//! `scan_add`) for f32 and f64; other element types are mapped onto them: lane
//! movement moves floats and pointers as integers of their width (bitcasts, so every
//! bit is kept) and narrow integers and `bool` zero-extended to 32 bits; narrow
//! reductions run on 32 bits (sign-extended for min/max, whose empty-mask identity is
//! then clamped to the narrow one) and are reduced back. The reduction mask is an
//! explicit `bool` argument of the (unmasked) routine.

use super::{Cursor, Rewritten};
use crate::ir::{BinaryOp, ConvOp, Function, InstData, LaneOp, Scalar, Type, Value};

/// Whether `data` is a lane operation Nyuzi cannot do natively.
pub fn is_illegal(_func: &Function, data: &InstData) -> bool {
    use LaneOp::*;
    matches!(
        data,
        InstData::Lane {
            op: Rotate
                | Shift
                | Shuffle2
                | ReduceAdd
                | ReduceMin
                | ReduceMax
                | ReduceAnd
                | ReduceOr
                | ReduceEqual
                | ScanAdd
                | ScanAnd
                | ScanOr,
            ..
        }
    )
}

/// How an element type is carried through a routine.
#[derive(Clone, Copy)]
enum Carry {
    /// As is: i32, i64, f32, f64.
    Direct,
    /// Bitcast to the integer of the same width and back.
    Bits(Scalar),
    /// Extended to i32 (sign-extended when `signed`) and reduced back.
    Widen { signed: bool },
    /// binary16 moved as its bits: bitcast to i16, zero-extended to i32, and back.
    HalfBits,
}

/// Rewrites an illegal lane operation.
pub fn rewrite(cur: &mut Cursor, data: &InstData) -> Result<Rewritten, String> {
    if !is_illegal(cur.func, data) {
        return Ok(Rewritten::Unchanged);
    }
    let InstData::Lane { op, args } = data else {
        return Ok(Rewritten::Unchanged);
    };
    let elem = cur.ty(args[0]).scalar;
    let movement = matches!(op, LaneOp::Rotate | LaneOp::Shift | LaneOp::Shuffle2);
    let ptr_int = if cur.ptr_size == 4 {
        Scalar::I32
    } else {
        Scalar::I64
    };
    let carry = match elem {
        Scalar::I32 | Scalar::I64 => Carry::Direct,
        Scalar::F32 if movement || *op == LaneOp::ScanAnd || *op == LaneOp::ScanOr => {
            Carry::Bits(Scalar::I32)
        }
        Scalar::F64 if movement => Carry::Bits(Scalar::I64),
        Scalar::F32 | Scalar::F64 => Carry::Direct,
        Scalar::Ptr => Carry::Bits(ptr_int),
        Scalar::F16 if movement => Carry::HalfBits,
        Scalar::F16 => {
            return Err(format!(
                "{} of f16: the lowering computes it in f32",
                op.name()
            ))
        }
        Scalar::I8 | Scalar::I16 | Scalar::Bool => Carry::Widen {
            signed: elem != Scalar::Bool && matches!(op, LaneOp::ReduceMin | LaneOp::ReduceMax),
        },
    };
    // The operands that carry elements: all but the mask, offset and index ones.
    let elem_args: &[usize] = match op {
        LaneOp::Shuffle2 => &[0, 1],
        _ => &[0],
    };
    let mut vals: Vec<Value> = args.to_vec();
    for &i in elem_args {
        vals[i] = carry_in(cur, vals[i], carry)?;
    }
    let t = cur.ty(vals[0]).scalar;
    let name = format!("{}_{}_v", op.name(), t.name());
    let r = cur.call(&name, &vals, None)?;
    let r = match op {
        LaneOp::ReduceEqual => r,
        LaneOp::ReduceMin | LaneOp::ReduceMax => {
            let r = clamp_identity(cur, *op, r, elem, carry)?;
            carry_out(cur, r, elem, carry)?
        }
        _ => carry_out(cur, r, elem, carry)?,
    };
    Ok(Rewritten::Value(r))
}

fn carry_in(cur: &mut Cursor, v: Value, carry: Carry) -> Result<Value, String> {
    match carry {
        Carry::Direct => Ok(v),
        Carry::Bits(s) => cur.conv(ConvOp::Bitcast, v, s),
        Carry::Widen { signed } => {
            let op = if signed { ConvOp::Sext } else { ConvOp::Zext };
            cur.conv(op, v, Scalar::I32)
        }
        Carry::HalfBits => {
            let bits = cur.conv(ConvOp::Bitcast, v, Scalar::I16)?;
            cur.conv(ConvOp::Zext, bits, Scalar::I32)
        }
    }
}

fn carry_out(cur: &mut Cursor, v: Value, elem: Scalar, carry: Carry) -> Result<Value, String> {
    match carry {
        Carry::Direct => Ok(v),
        Carry::Bits(_) => cur.conv(ConvOp::Bitcast, v, elem),
        Carry::Widen { .. } if elem == Scalar::Bool => cur.conv(ConvOp::ToBool, v, elem),
        Carry::Widen { .. } => cur.conv(ConvOp::Ireduce, v, elem),
        Carry::HalfBits => {
            let bits = cur.conv(ConvOp::Ireduce, v, Scalar::I16)?;
            cur.conv(ConvOp::Bitcast, bits, elem)
        }
    }
}

/// A narrow min/max over no lane gives the 32-bit identity; clamping it to the narrow
/// type's range gives the narrow identity (and leaves every real result alone).
fn clamp_identity(
    cur: &mut Cursor,
    op: LaneOp,
    r: Value,
    elem: Scalar,
    carry: Carry,
) -> Result<Value, String> {
    let Carry::Widen { .. } = carry else {
        return Ok(r);
    };
    let bits = elem.bits();
    let (bop, bound) = if op == LaneOp::ReduceMin {
        (BinaryOp::Smin, (1u64 << (bits - 1)) - 1)
    } else {
        (BinaryOp::Smax, (!0u64) << (bits - 1))
    };
    let b = cur.iconst(Type::I32, bound);
    cur.ins(InstData::Binary {
        op: bop,
        args: [r, b],
    })
}
