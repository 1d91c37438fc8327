//! Conversions between semantic types: sema's implicit conversions (numeric, broadcast,
//! array decay, enum to int, null to pointer, pointer casts) and explicit casts.
//!
//! Implicit conversions are applied from `type_of(e)` to `converted_type(e)`, which
//! covers every [`ConvStep`](crate::front::sema::ConvStep) plus the conversions to
//! `bool` of conditions (including pointers, which `ConvStep` does not describe).

use super::func::{FnLower, Val};
use super::place::Place;
use super::types::{is_aggregate, num_of, Num};
use crate::front::sema::{ConstValue, TypeId, TypeKind};
use crate::ir::{ConvOp, FloatCC, IntCC, Scalar, Type, Value};

impl FnLower<'_, '_> {
    /// Converts a value of type `from` to type `to`.
    pub fn convert(&mut self, v: Val, from: TypeId, to: TypeId) -> Val {
        if from == to {
            return v;
        }
        let types = &self.cx.types;
        if types.is_void(to) || types.is_error(to) || types.is_error(from) {
            return v;
        }
        match (types.kind(from), types.kind(to), v) {
            (TypeKind::Vector(..), TypeKind::Vector(..), Val::Mem(p)) => {
                self.vector_to_vector(p, from, to)
            }
            (_, TypeKind::Vector(..), Val::S(x)) => self.scalar_to_vector(x, from, to),
            (TypeKind::Array(..), TypeKind::Pointer(_), Val::Mem(p)) => {
                let varying = types.is_varying(to);
                let a = if varying { self.splat(p.addr) } else { p.addr };
                Val::S(a)
            }
            (_, _, Val::Mem(p)) if is_aggregate(types, to) => {
                if types.var(from) == types.var(to) {
                    return Val::Mem(Place { ty: to, ..p });
                }
                // Broadcast of a uniform struct into a varying one: a copy.
                let dst = self.temp_place(to);
                let all = self.all_on();
                self.copy(dst, p, all);
                Val::Mem(dst)
            }
            (_, _, Val::S(x)) => {
                let (Some(fnum), Some(tnum)) = (num_of(types, from), num_of(types, to)) else {
                    return Val::S(x);
                };
                let y = self.convert_num(x, fnum, tnum);
                let y = if self.cx.types.is_varying(to) {
                    self.splat(y)
                } else {
                    y
                };
                Val::S(y)
            }
            _ => v,
        }
    }

    /// Converts the element type of a scalar (its variability is kept).
    pub fn convert_num(&mut self, x: Value, from: Num, to: Num) -> Value {
        use Num::*;
        if from == to {
            return x;
        }
        // float16 converts to and from everything but the floats through f32: exact
        // for its values, and for integers too (below 2^24 f32 is exact, and from
        // 65520 on both roundings give infinity).
        const HALF: Num = Float { bits: 16 };
        const SINGLE: Num = Float { bits: 32 };
        if from == HALF && !matches!(to, Float { .. }) {
            let w = self.conv(ConvOp::Fpromote, x, Scalar::F32);
            return self.convert_num(w, SINGLE, to);
        }
        if to == HALF && !matches!(from, Float { .. }) {
            let w = self.convert_num(x, from, SINGLE);
            return self.conv(ConvOp::Fdemote, w, Scalar::F16);
        }
        let vt = self.ty(x);
        match (from, to) {
            (_, Bool) => self.to_bool(x, from),
            (Bool, Int { bits, .. }) => self.conv(ConvOp::Zext, x, int_scalar(bits)),
            (Bool, Float { bits }) => {
                let i = self.conv(ConvOp::Zext, x, Scalar::I32);
                self.conv(ConvOp::FcvtFromUint, i, float_scalar(bits))
            }
            (Bool, Ptr) => {
                let i = self.to_ptr_int(x, false);
                self.conv(ConvOp::Bitcast, i, Scalar::Ptr)
            }
            (Int { bits: fb, signed }, Int { bits: tb, .. }) => {
                if tb > fb {
                    let op = if signed { ConvOp::Sext } else { ConvOp::Zext };
                    self.conv(op, x, int_scalar(tb))
                } else if tb < fb {
                    self.conv(ConvOp::Ireduce, x, int_scalar(tb))
                } else {
                    x
                }
            }
            (Int { signed, .. }, Float { bits }) => {
                let op = if signed {
                    ConvOp::FcvtFromSint
                } else {
                    ConvOp::FcvtFromUint
                };
                self.conv(op, x, float_scalar(bits))
            }
            (Float { .. }, Int { bits, signed }) => {
                if bits < 32 {
                    let w = self.conv(ConvOp::FcvtToSint, x, Scalar::I32);
                    self.conv(ConvOp::Ireduce, w, int_scalar(bits))
                } else {
                    let op = if signed {
                        ConvOp::FcvtToSint
                    } else {
                        ConvOp::FcvtToUint
                    };
                    self.conv(op, x, int_scalar(bits))
                }
            }
            (Float { bits: fb }, Float { bits: tb }) => {
                let op = if tb > fb {
                    ConvOp::Fpromote
                } else {
                    ConvOp::Fdemote
                };
                self.conv(op, x, float_scalar(tb))
            }
            (Int { signed, .. }, Ptr) => {
                let w = self.to_ptr_int(x, signed);
                self.conv(ConvOp::Bitcast, w, Scalar::Ptr)
            }
            (Ptr, Int { bits, .. }) => {
                // Addresses are unsigned: a wider integer gets them zero-extended.
                let pi = self.ptr_int();
                let w = self.conv(ConvOp::Bitcast, x, pi);
                match bits.cmp(&pi.bits()) {
                    std::cmp::Ordering::Less => self.conv(ConvOp::Ireduce, w, int_scalar(bits)),
                    std::cmp::Ordering::Greater => self.conv(ConvOp::Zext, w, int_scalar(bits)),
                    std::cmp::Ordering::Equal => w,
                }
            }
            (Ptr, Ptr) => x,
            _ => {
                let _ = vt;
                self.unsupported("this conversion");
                x
            }
        }
    }

    /// Nonzero (not NaN-aware: NaN is nonzero, hence true) to `bool`.
    fn to_bool(&mut self, x: Value, from: Num) -> Value {
        let t = self.ty(x);
        match from {
            Num::Bool => x,
            Num::Float { .. } => {
                let z = self.fconst(t.to_uniform(), 0.0);
                self.fcmp(FloatCC::Une, x, z)
            }
            Num::Int { .. } | Num::Ptr => {
                let z = self.iconst(t.to_uniform(), 0);
                self.icmp(IntCC::Ne, x, z)
            }
        }
    }

    /// A constant of semantic type `ty`.
    pub fn const_value(&mut self, cv: ConstValue, ty: TypeId) -> Val {
        let Some(t) = super::types::ir_type(&self.cx.types, ty) else {
            return Val::None;
        };
        Val::S(self.const_of(cv, t))
    }

    pub fn const_of(&mut self, cv: ConstValue, t: Type) -> Value {
        match (cv, t.scalar.is_ieee()) {
            (ConstValue::Float(f), true) => self.fconst(t, f),
            (ConstValue::Float(f), false) => self.iconst(t, f as i64),
            (ConstValue::Int(i), true) => self.fconst(t, i as f64),
            (ConstValue::Int(i), false) => {
                if t.scalar == Scalar::Bool {
                    self.iconst(t, (i != 0) as i64)
                } else {
                    self.iconst(t, i as i64)
                }
            }
            (ConstValue::Bool(b), true) => self.fconst(t, b as i64 as f64),
            (ConstValue::Bool(b), false) => self.iconst(t, b as i64),
            (ConstValue::Null, _) => self.iconst(t, 0),
        }
    }
}

pub(super) fn int_scalar(bits: u32) -> Scalar {
    match bits {
        8 => Scalar::I8,
        16 => Scalar::I16,
        32 => Scalar::I32,
        _ => Scalar::I64,
    }
}

pub(super) fn float_scalar(bits: u32) -> Scalar {
    match bits {
        16 => Scalar::F16,
        32 => Scalar::F32,
        _ => Scalar::F64,
    }
}
