//! Floating-point operations Nyuzi lacks (f32 division, remainder, min/max, square
//! root, rounding and most conversions; every non-bit f64 operation), rewritten into
//! calls of the soft-float routines of `stdlib/runtime_float.spmd`.
//!
//! A routine is named `__spmdc_rt_<op>_<types>_<v|u>`: `<op>` is the IR opcode name
//! (`fdiv`, `sqrt`, `fcmp_lt`, `fcvt_to_sint`, ...), `<types>` the operand type, or for
//! a conversion the source and destination types (`f32_i8`, `i64_f32`), and the suffix
//! the variability of the operands (`v` when any is varying). Routines are `unmasked`:
//! they compute every lane, as the IR instruction they replace does.
//!
//! Results are the interpreter's bits: IEEE round to nearest even, subnormals kept, and
//! NaNs as the interpreter's x86-64 host makes them (a NaN operand comes back quieted,
//! the first one when both are; an invalid operation gives the negative default NaN;
//! floor/ceil/trunc/nearest, fmin/fmax return NaN operands unchanged). On a host with
//! other NaN rules (e.g. AArch64's positive default NaN) the interpreter itself would
//! differ; the routines follow x86-64.
//!
//! Narrow integers are widened at the boundary: a conversion to an 8- or 16-bit
//! integer calls the routine that returns the saturated value as an `i32` and reduces
//! it (exact, since the value is already in range); a conversion from `bool`, `i8` or
//! `i16` extends the operand to `i32` first, as the interpreter reads it, and to f32
//! then needs no routine: the native `i32` conversion is exact below 2^24. `to_bool` of
//! an f64 needs no routine: it is a native test of the bits without the sign.

use super::{variant, Cursor, Rewritten};
use crate::ir::{BinaryOp, ConvOp, FloatCC, Function, InstData, IntCC, Scalar, Type, Value};

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
            use crate::ir::UnaryOp::*;
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
                ConvOp::FcvtFromSint => {
                    from == Scalar::I64 || from == Scalar::Bool || to == Scalar::F64
                }
                ConvOp::ToBool => from == Scalar::F64,
                _ => false,
            }
        }
        _ => false,
    }
}

/// The name of a scalar type in routine names.
fn type_name(s: Scalar) -> Option<&'static str> {
    Some(match s {
        Scalar::F32 => "f32",
        Scalar::F64 => "f64",
        Scalar::I8 => "i8",
        Scalar::I16 => "i16",
        Scalar::I32 => "i32",
        Scalar::I64 => "i64",
        _ => return None,
    })
}

/// Rewrites an illegal floating-point operation into a routine call (see the module
/// docs); `Unchanged` for the operations no routine covers (conversions from or to
/// pointers).
pub fn rewrite(cur: &mut Cursor, data: &InstData) -> Result<Rewritten, String> {
    if !is_illegal(cur.func, data) {
        return Ok(Rewritten::Unchanged);
    }
    match data {
        InstData::Binary { op, args } => {
            let s = cur.ty(args[0]).scalar;
            let v = suffix(cur, args);
            call(cur, &format!("{}_{}_{v}", op.name(), fname(s)?), args)
        }
        InstData::Unary { op, arg } => {
            let s = cur.ty(*arg).scalar;
            let v = suffix(cur, &[*arg]);
            call(cur, &format!("{}_{}_{v}", op.name(), fname(s)?), &[*arg])
        }
        InstData::Fcmp { cond, args } => {
            let v = suffix(cur, args);
            call(cur, &format!("fcmp_{}_f64_{v}", cond_name(*cond)), args)
        }
        InstData::Convert { op, arg, to } => convert(cur, *op, *arg, to.scalar),
        _ => Ok(Rewritten::Unchanged),
    }
}

fn fname(s: Scalar) -> Result<&'static str, String> {
    type_name(s).ok_or_else(|| format!("legalize: no float routine for {s:?}"))
}

fn cond_name(cond: FloatCC) -> &'static str {
    cond.name()
}

/// `v` when any operand is varying, else `u`.
fn suffix(cur: &Cursor, args: &[Value]) -> &'static str {
    let varying = args.iter().any(|&a| cur.ty(a).varying);
    variant(Type {
        scalar: Scalar::F32,
        varying,
    })
}

fn call(cur: &mut Cursor, name: &str, args: &[Value]) -> Result<Rewritten, String> {
    Ok(Rewritten::Value(cur.call(name, args, None)?))
}

fn convert(cur: &mut Cursor, op: ConvOp, arg: Value, to: Scalar) -> Result<Rewritten, String> {
    let from = cur.ty(arg).scalar;
    let v = suffix(cur, &[arg]);
    match op {
        ConvOp::FcvtToSint | ConvOp::FcvtToUint => {
            let Some(tn) = type_name(to).filter(|_| to.is_int()) else {
                return Ok(Rewritten::Unchanged);
            };
            let name = format!("{}_{}_{tn}_{v}", op.name(), fname(from)?);
            let r = cur.call(&name, &[arg], None)?;
            // 8- and 16-bit results come back as an in-range i32.
            Ok(Rewritten::Value(cur.conv(ConvOp::Ireduce, r, to)?))
        }
        ConvOp::FcvtFromSint | ConvOp::FcvtFromUint => {
            let ext = if op == ConvOp::FcvtFromSint {
                ConvOp::Sext
            } else {
                ConvOp::Zext
            };
            let wide = match from {
                Scalar::Bool | Scalar::I8 | Scalar::I16 | Scalar::I32 => Scalar::I32,
                Scalar::I64 => Scalar::I64,
                _ => return Ok(Rewritten::Unchanged),
            };
            let a = cur.conv(ext, arg, wide)?;
            if to == Scalar::F32 && wide == Scalar::I32 && from != Scalar::I32 {
                // Below 2^16 in magnitude: the native signed conversion is exact.
                let r = cur.conv(ConvOp::FcvtFromSint, a, Scalar::F32)?;
                return Ok(Rewritten::Value(r));
            }
            let name = format!("{}_{}_{}_{v}", op.name(), fname(wide)?, fname(to)?);
            call(cur, &name, &[a])
        }
        ConvOp::Fpromote => call(cur, &format!("fpromote_f32_f64_{v}"), &[arg]),
        ConvOp::Fdemote => call(cur, &format!("fdemote_f64_f32_{v}"), &[arg]),
        ConvOp::ToBool => {
            // Nonzero apart from the sign bit (a NaN is true, as in C).
            let bits = cur.conv(ConvOp::Bitcast, arg, Scalar::I64)?;
            let ty = cur.ty(bits);
            let mask = cur.iconst(ty, 0x7fff_ffff_ffff_ffff);
            let mag = cur.ins(InstData::Binary {
                op: BinaryOp::Band,
                args: [bits, mask],
            })?;
            let zero = cur.iconst(ty, 0);
            let r = cur.ins(InstData::Icmp {
                cond: IntCC::Ne,
                args: [mag, zero],
            })?;
            Ok(Rewritten::Value(r))
        }
        _ => Ok(Rewritten::Unchanged),
    }
}
