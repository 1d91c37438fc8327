//! Floating-point operations Nyuzi lacks (f32 division, rounding, conversions; every
//! non-bit f64 operation), rewritten into calls of `stdlib/runtime_float.spmd`.
//!
//! Owned by RT-F: this file is a stub that compiles. `is_illegal` states the contract
//! (nyuzi_ops.md) so [`super::remaining_illegal`] reports these operations; `rewrite`
//! does not rewrite anything yet.

use super::{Cursor, Rewritten};
use crate::ir::{BinaryOp, ConvOp, Function, InstData, Scalar, UnaryOp};

/// Whether `data` is a floating-point operation Nyuzi cannot do natively.
pub fn is_illegal(func: &Function, data: &InstData) -> bool {
    let ty = |v| func.value_type(v).scalar;
    match data {
        InstData::Binary { op, args } => {
            let s = ty(args[0]);
            use BinaryOp::*;
            match op {
                Fdiv | Frem | Fmin | Fmax => s.is_float(),
                Fadd | Fsub | Fmul => s == Scalar::F64,
                _ => false,
            }
        }
        InstData::Unary { op, arg } => {
            use UnaryOp::*;
            matches!(op, Sqrt | Floor | Ceil | Trunc | Nearest) && ty(*arg).is_float()
        }
        InstData::Fcmp { args, .. } => ty(args[0]) == Scalar::F64,
        InstData::Convert { op, arg, to } => {
            let (from, to) = (ty(*arg), to.scalar);
            match op {
                ConvOp::FcvtToSint | ConvOp::FcvtToUint | ConvOp::Fpromote | ConvOp::Fdemote => {
                    true
                }
                ConvOp::FcvtFromUint => true,
                ConvOp::FcvtFromSint => from == Scalar::I64 || to == Scalar::F64,
                ConvOp::ToBool => from == Scalar::F64,
                _ => false,
            }
        }
        _ => false,
    }
}

/// Rewrites an illegal floating-point operation; the stub rewrites nothing.
pub fn rewrite(cur: &mut Cursor, data: &InstData) -> Result<Rewritten, String> {
    let _ = (cur, data);
    Ok(Rewritten::Unchanged)
}
