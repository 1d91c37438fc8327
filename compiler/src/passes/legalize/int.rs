//! Integer operations Nyuzi lacks: division and remainder (every width), 64-bit
//! multiply, 64-bit shifts by a non-constant count, 64-bit min/max, population count
//! (every width) and 64-bit leading/trailing zero counts.
//!
//! Narrow (8- and 16-bit) operands are widened to 32 bits (sign- or zero-extended as
//! the operation reads them) and the 32-bit routine's result reduced back, which gives
//! the narrow operation's exact result (including `INT8_MIN / -1` wrapping). 64-bit
//! min/max become a native compare and select; a 64-bit shift whose count is a
//! constant only in disguise (a `splat` or extension of an `iconst`, as the lowering
//! writes `x << 3`) gets a plain `iconst` count instead of a call; division and
//! remainder by a constant power of two become shifts and masks.

use super::{const_int, is_iconst, variant, Cursor, Rewritten};
use crate::ir::{BinaryOp, ConvOp, Function, InstData, IntCC, Scalar, Type, UnaryOp, Value};

fn is_int(s: Scalar) -> bool {
    s.is_int()
}

/// Whether `data` is an integer operation Nyuzi cannot do natively.
pub fn is_illegal(func: &Function, data: &InstData) -> bool {
    match data {
        InstData::Binary { op, args } => {
            let s = func.value_type(args[0]).scalar;
            use BinaryOp::*;
            match op {
                Sdiv | Udiv | Srem | Urem => is_int(s),
                Imul | Smin | Smax | Umin | Umax => s == Scalar::I64,
                Ishl | Sshr | Ushr => s == Scalar::I64 && !is_iconst(func, args[1]),
                _ => false,
            }
        }
        InstData::Unary { op, arg } => {
            let s = func.value_type(*arg).scalar;
            match op {
                UnaryOp::Popcnt => is_int(s),
                UnaryOp::Clz | UnaryOp::Ctz => s == Scalar::I64,
                _ => false,
            }
        }
        _ => false,
    }
}

/// Rewrites an illegal integer operation (see the module docs).
pub fn rewrite(cur: &mut Cursor, data: &InstData) -> Result<Rewritten, String> {
    if !is_illegal(cur.func, data) {
        return Ok(Rewritten::Unchanged);
    }
    match data {
        InstData::Binary { op, args } => binary(cur, *op, args[0], args[1]),
        InstData::Unary { op, arg } => unary(cur, *op, *arg),
        _ => Ok(Rewritten::Unchanged),
    }
}

fn binary(cur: &mut Cursor, op: BinaryOp, a: Value, b: Value) -> Result<Rewritten, String> {
    use BinaryOp::*;
    let ta = cur.ty(a);
    let varying = ta.varying || cur.ty(b).varying;
    let rt = Type {
        scalar: ta.scalar,
        varying,
    };
    let v = variant(rt);
    match op {
        Sdiv | Udiv | Srem | Urem => {
            if let Some(r) = by_power_of_two(cur, op, a, b, rt)? {
                return Ok(Rewritten::Value(r));
            }
            let s = ta.scalar;
            let wide = if s == Scalar::I64 {
                Scalar::I64
            } else {
                Scalar::I32
            };
            let ext = if matches!(op, Sdiv | Srem) {
                ConvOp::Sext
            } else {
                ConvOp::Zext
            };
            let wa = cur.conv(ext, a, wide)?;
            let wb = cur.conv(ext, b, wide)?;
            let r = cur.call(
                &format!("{}_{}_{v}", op.name(), wide.name()),
                &[wa, wb],
                None,
            )?;
            let r = cur.conv(ConvOp::Ireduce, r, s)?;
            Ok(Rewritten::Value(r))
        }
        Imul => {
            let r = cur.call(&format!("imul_i64_{v}"), &[a, b], None)?;
            Ok(Rewritten::Value(r))
        }
        Ishl | Sshr | Ushr => {
            if let Some(k) = const_int(cur.func, b) {
                // A constant count in disguise: make it a plain constant in place.
                let kc = cur.iconst(cur.ty(b), k);
                if let InstData::Binary { args, .. } = &mut cur.func.insts[cur.inst] {
                    args[1] = kc;
                }
                return Ok(Rewritten::InPlace);
            }
            let c = cur.conv(ConvOp::Zext, b, Scalar::I64)?;
            let r = cur.call(&format!("{}_i64_{v}", op.name()), &[a, c], None)?;
            Ok(Rewritten::Value(r))
        }
        Smin | Smax | Umin | Umax => {
            // The interpreter keeps `a` on ties; so does `a <= b ? a : b`.
            let cc = match op {
                Smin => IntCC::Sle,
                Smax => IntCC::Sge,
                Umin => IntCC::Ule,
                _ => IntCC::Uge,
            };
            let keep_a = cur.ins(InstData::Icmp {
                cond: cc,
                args: [a, b],
            })?;
            let r = cur.ins(InstData::Select {
                args: [keep_a, a, b],
            })?;
            Ok(Rewritten::Value(r))
        }
        _ => Ok(Rewritten::Unchanged),
    }
}

/// Division and remainder by a constant power of two (as `foreach` divides by
/// `programCount`): shifts and masks, with the usual bias so signed division rounds
/// toward zero. `None` for other divisors (zero included: it must trap).
fn by_power_of_two(
    cur: &mut Cursor,
    op: BinaryOp,
    a: Value,
    b: Value,
    rt: Type,
) -> Result<Option<Value>, String> {
    use BinaryOp::*;
    let w = rt.scalar.bits();
    let Some(d) = cur.const_int(b) else {
        return by_selected_powers(cur, op, a, b, rt);
    };
    // Signed operations need a positive divisor: below the sign bit.
    let limit = if matches!(op, Sdiv | Srem) { w - 1 } else { w };
    if !d.is_power_of_two() || d.trailing_zeros() >= limit {
        return Ok(None);
    }
    let k = u64::from(d.trailing_zeros());
    let a = if rt.varying { cur.varying(a)? } else { a };
    let bin = |cur: &mut Cursor, op: BinaryOp, x: Value, c: u64| -> Result<Value, String> {
        let c = cur.iconst(rt, c);
        cur.ins(InstData::Binary { op, args: [x, c] })
    };
    Ok(Some(match op {
        Udiv => bin(cur, Ushr, a, k)?,
        Urem => bin(cur, Band, a, d - 1)?,
        // By 1 (the bias shift below would be by the full width).
        Sdiv if k == 0 => a,
        _ if k == 0 => cur.iconst(rt, 0),
        _ => {
            // q = (a + (a < 0 ? d - 1 : 0)) >> k, the bias made from the sign bits.
            let sign = bin(cur, Sshr, a, u64::from(w - 1))?;
            let bias = bin(cur, Ushr, sign, u64::from(w) - k)?;
            let biased = cur.ins(InstData::Binary {
                op: Iadd,
                args: [a, bias],
            })?;
            let q = bin(cur, Sshr, biased, k)?;
            if op == Sdiv {
                q
            } else {
                let back = bin(cur, Ishl, q, k)?;
                cur.ins(InstData::Binary {
                    op: Isub,
                    args: [a, back],
                })?
            }
        }
    }))
}

/// A divisor `select c, p, q` of two constant powers of two (the lowering's
/// `select mask, d, 1`, keeping inactive lanes' divisors nonzero): both quotients by
/// shifts, then the same select.
fn by_selected_powers(
    cur: &mut Cursor,
    op: BinaryOp,
    a: Value,
    b: Value,
    rt: Type,
) -> Result<Option<Value>, String> {
    let crate::ir::ValueDef::Result(i) = cur.func.values[b].def else {
        return Ok(None);
    };
    let InstData::Select { args: [c, p, q] } = cur.func.insts[i] else {
        return Ok(None);
    };
    if cur.const_int(p).is_none() || cur.const_int(q).is_none() {
        return Ok(None);
    }
    let Some(rp) = by_power_of_two(cur, op, a, p, rt)? else {
        return Ok(None);
    };
    let Some(rq) = by_power_of_two(cur, op, a, q, rt)? else {
        return Ok(None);
    };
    Ok(Some(cur.ins(InstData::Select { args: [c, rp, rq] })?))
}

fn unary(cur: &mut Cursor, op: UnaryOp, a: Value) -> Result<Rewritten, String> {
    let t = cur.ty(a);
    let v = variant(t);
    let r = match op {
        UnaryOp::Popcnt if t.scalar == Scalar::I64 => {
            cur.call(&format!("popcnt_i64_{v}"), &[a], None)?
        }
        UnaryOp::Popcnt => {
            let w = cur.conv(ConvOp::Zext, a, Scalar::I32)?;
            let r = cur.call(&format!("popcnt_i32_{v}"), &[w], None)?;
            cur.conv(ConvOp::Ireduce, r, t.scalar)?
        }
        UnaryOp::Clz => cur.call(&format!("clz_i64_{v}"), &[a], None)?,
        UnaryOp::Ctz => cur.call(&format!("ctz_i64_{v}"), &[a], None)?,
        _ => return Ok(Rewritten::Unchanged),
    };
    Ok(Rewritten::Value(r))
}
