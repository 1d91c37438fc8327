//! `f16` for both back ends: neither ISA has a binary16 type or instruction, so an
//! `f16` becomes its 16 bits. Each conversion between `f16` and `f32`/`f64` is
//! rewritten into a call of an integer routine of `stdlib/runtime_half.spmd`
//! (`__spmdc_rt_fpromote_f16_f32_v`, `__spmdc_rt_fdemote_f64_f16_u`, ...), and then
//! [`retype`] gives every remaining `f16` value (loads, stores, selects, lane
//! movement, block parameters, signatures, constants) the type `i16`. Nothing else
//! touches an `f16` (its arithmetic is lowered through `f32`), so after this the back
//! ends see only integers of the same size in memory and registers.

use rustc_hash::FxHashMap;

use super::{variant, Cursor, Rewritten};
use crate::ir::{ConvOp, Function, InstData, Scalar, Type, Value};

/// Whether `data` converts to or from `f16`.
pub fn is_illegal(func: &Function, data: &InstData) -> bool {
    match data {
        InstData::Convert { op, arg, to } => {
            let from = func.value_type(*arg).scalar;
            match op {
                ConvOp::Fpromote => from == Scalar::F16,
                ConvOp::Fdemote => to.scalar == Scalar::F16,
                _ => false,
            }
        }
        _ => false,
    }
}

/// Rewrites a conversion to or from `f16` into a routine call on the bits.
pub fn rewrite(cur: &mut Cursor, data: &InstData) -> Result<Rewritten, String> {
    if !is_illegal(cur.func, data) {
        return Ok(Rewritten::Unchanged);
    }
    let InstData::Convert { op, arg, to } = *data else {
        return Ok(Rewritten::Unchanged);
    };
    let from = cur.ty(arg);
    let v = variant(from);
    let r = match op {
        ConvOp::Fpromote => {
            let bits = cur.conv(ConvOp::Bitcast, arg, Scalar::I16)?;
            let name = format!("fpromote_f16_{}_{v}", to.scalar.name());
            cur.call(&name, &[bits], None)?
        }
        _ => {
            let name = format!("fdemote_{}_f16_{v}", from.scalar.name());
            let bits = cur.call(&name, &[arg], None)?;
            cur.conv(ConvOp::Bitcast, bits, Scalar::F16)?
        }
    };
    Ok(Rewritten::Value(r))
}

/// `ty` with `f16` replaced by `i16`.
fn bits_type(ty: Type) -> Type {
    if ty.scalar == Scalar::F16 {
        Type {
            scalar: Scalar::I16,
            ..ty
        }
    } else {
        ty
    }
}

/// Gives every `f16` of `func` the type `i16`: values, the signature, `load` and
/// conversion types; an `fconst` becomes the `iconst` of its bits, and the bitcasts
/// between `f16` and `i16` (now from `i16` to itself) go away. Run after [`rewrite`],
/// when no conversion reads or makes an `f16` value.
pub fn retype(func: &mut Function) {
    if !func.values.values().any(|v| v.ty.scalar == Scalar::F16) {
        return;
    }
    for v in func.values.values_mut() {
        v.ty = bits_type(v.ty);
    }
    for p in &mut func.sig.params {
        *p = bits_type(*p);
    }
    func.sig.ret = func.sig.ret.map(bits_type);
    let mut alias: FxHashMap<Value, Value> = FxHashMap::default();
    for (inst, data) in func.insts.iter_mut() {
        match data {
            InstData::Fconst { ty, bits } if ty.scalar == Scalar::F16 => {
                let half = sim::fp16::f16_from_f64(f64::from_bits(*bits));
                *data = InstData::Iconst {
                    ty: bits_type(*ty),
                    bits: u64::from(half),
                };
            }
            InstData::Load { ty, .. } => *ty = bits_type(*ty),
            InstData::Convert { op, arg, to } => {
                *to = bits_type(*to);
                let same = func.values[*arg].ty == *to;
                if let (ConvOp::Bitcast, true, Some(r)) = (*op, same, func.results[inst]) {
                    alias.insert(r, *arg);
                }
            }
            _ => {}
        }
    }
    if alias.is_empty() {
        return;
    }
    for b in func.layout.clone() {
        let insts = &mut func.blocks[b].insts;
        insts.retain(|&i| !func.results[i].is_some_and(|r| alias.contains_key(&r)));
    }
    super::substitute(func, &alias);
}
