//! Constant evaluation of already-checked expressions: literals, enumerators,
//! `const uniform` variables with constant initializers, `programCount`, `sizeof`,
//! casts, and the arithmetic, bitwise, comparison, logical and conditional operators.
//!
//! Evaluation follows the types and conversions sema recorded, so the value is exactly
//! what the program computes: integer arithmetic wraps at the operation type's width.

use super::builtins::BuiltinVar;
use super::types::{Prim, TypeId, TypeKind};
use super::{Checker, ConstValue, Res};
use crate::front::ast::{BinaryOp, Expr, ExprKind, FloatSuffix, UnaryOp};

/// Deepest expression the evaluator descends into.
const MAX_EVAL_DEPTH: u32 = 256;

/// Wraps an integer to the width of `p` (sign-extending signed types).
pub(super) fn wrap(v: i128, p: Prim) -> i128 {
    if p == Prim::Bool {
        return i128::from(v != 0);
    }
    let bits = p.bits();
    let masked = v & ((1i128 << bits) - 1);
    if p.is_signed() && masked >> (bits - 1) & 1 == 1 {
        masked - (1i128 << bits)
    } else {
        masked
    }
}

/// `f` rounded to float16 (to nearest, ties to even).
fn round_half(f: f64) -> f64 {
    sim::fp16::f64_from_f16(sim::fp16::f16_from_f64(f))
}

/// Converts a constant to basic type `p`.
pub(super) fn convert(v: ConstValue, p: Prim) -> Option<ConstValue> {
    Some(match (v, p) {
        (ConstValue::Null, _) => return None,
        (ConstValue::Bool(b), Prim::Bool) => ConstValue::Bool(b),
        (ConstValue::Int(i), Prim::Bool) => ConstValue::Bool(i != 0),
        (ConstValue::Float(f), Prim::Bool) => ConstValue::Bool(f != 0.0),
        (ConstValue::Bool(b), p) => return convert(ConstValue::Int(i128::from(b)), p),
        (ConstValue::Int(i), p) if p.is_integer() => ConstValue::Int(wrap(i, p)),
        (ConstValue::Int(i), Prim::Float) => ConstValue::Float(f64::from(i as f32)),
        // Through f32, as the lowering converts: exact below 2^24, infinite beyond 65520.
        (ConstValue::Int(i), Prim::Float16) => ConstValue::Float(round_half(f64::from(i as f32))),
        (ConstValue::Int(i), _) => ConstValue::Float(i as f64),
        (ConstValue::Float(f), p) if p.is_integer() => {
            if !f.is_finite() {
                return None;
            }
            ConstValue::Int(wrap(f.trunc() as i128, p))
        }
        (ConstValue::Float(f), Prim::Float) => ConstValue::Float(f64::from(f as f32)),
        (ConstValue::Float(f), Prim::Float16) => ConstValue::Float(round_half(f)),
        (ConstValue::Float(f), _) => ConstValue::Float(f),
    })
}

/// Does converting `v` to `p` keep its value exactly?
pub(super) fn fits(v: ConstValue, p: Prim) -> bool {
    let Some(c) = convert(v, p) else { return false };
    match (v, c) {
        (ConstValue::Int(a), ConstValue::Int(b)) => a == b,
        (ConstValue::Float(a), ConstValue::Float(b)) => a == b,
        (ConstValue::Float(a), ConstValue::Int(b)) => a == b as f64,
        (ConstValue::Int(a), ConstValue::Float(b)) => a as f64 == b && b as i128 == a,
        _ => true,
    }
}

impl Checker<'_> {
    /// The value of a checked expression in its own type, if it is constant.
    pub(super) fn eval_const(&self, e: &Expr) -> Option<ConstValue> {
        self.eval(e, 0)
    }

    /// The value of a checked expression in each program instance, with
    /// `programIndex` the instance's number: for a varying initializer that is
    /// constant per instance but not for the gang (ISPC's `programIndex` is a
    /// compile-time vector).
    pub(super) fn eval_const_lanes(&self, e: &Expr) -> Option<Vec<ConstValue>> {
        let lanes = (0..self.out.target.program_count)
            .map(|lane| {
                self.const_lane.set(Some(lane));
                self.eval(e, 0)
            })
            .collect();
        self.const_lane.set(None);
        lanes
    }

    /// The value converted to the type the expression is used as.
    fn eval_converted(&self, e: &Expr, depth: u32) -> Option<ConstValue> {
        let v = self.eval(e, depth)?;
        self.convert_to(v, self.out.converted_type(e.id))
    }

    fn convert_to(&self, v: ConstValue, ty: TypeId) -> Option<ConstValue> {
        match self.out.types.kind(ty) {
            TypeKind::Pointer(_) | TypeKind::Null => match v {
                ConstValue::Null | ConstValue::Int(0) => Some(ConstValue::Null),
                _ => None,
            },
            // A function pointer's constant is the function's number (0 for `NULL`).
            TypeKind::FnPtr(_) => match v {
                ConstValue::Null => Some(ConstValue::Int(0)),
                ConstValue::Int(i) => Some(ConstValue::Int(i)),
                _ => None,
            },
            _ => convert(v, self.out.types.arith_prim(ty)?),
        }
    }

    fn eval(&self, e: &Expr, depth: u32) -> Option<ConstValue> {
        if depth > MAX_EVAL_DEPTH {
            return None;
        }
        let d = depth + 1;
        match &e.kind {
            ExprKind::Int { value, .. } => Some(ConstValue::Int(i128::from(*value))),
            ExprKind::Float { value, suffix } => {
                Some(ConstValue::Float(match suffix {
                    // The parser already rounded an `f16` literal to float16.
                    FloatSuffix::D | FloatSuffix::F16 => *value,
                    _ => f64::from(*value as f32),
                }))
            }
            ExprKind::Bool(b) => Some(ConstValue::Bool(*b)),
            ExprKind::Char(c) => Some(ConstValue::Int(i128::from(*c as i8))),
            ExprKind::Null => Some(ConstValue::Null),
            ExprKind::Ident(_) => self.eval_name(e),
            ExprKind::SizeofType(_) | ExprKind::SizeofExpr(_) => self.out.const_value(e.id),
            // `&f` and `*f` of a function: sema recorded the function's number.
            ExprKind::Unary {
                op: UnaryOp::AddrOf | UnaryOp::Deref,
                ..
            } if matches!(
                self.out.types.kind(self.out.type_of(e.id)),
                TypeKind::FnPtr(_)
            ) =>
            {
                self.out.const_value(e.id)
            }
            ExprKind::Unary { op, operand } => self.eval_unary(e, *op, operand, d),
            ExprKind::Binary { op, lhs, rhs } => self.eval_binary(e, *op, lhs, rhs, d),
            ExprKind::Ternary { cond, then, else_ } => {
                let c = self.eval_converted(cond, d)?;
                let pick = if matches!(c, ConstValue::Bool(true)) {
                    then
                } else {
                    else_
                };
                let v = self.eval_converted(pick, d)?;
                self.convert_to(v, self.out.type_of(e.id))
            }
            ExprKind::Cast { expr, .. } => {
                let v = self.eval(expr, d)?;
                self.convert_to(v, self.out.type_of(e.id))
            }
            _ => None,
        }
    }

    fn eval_name(&self, e: &Expr) -> Option<ConstValue> {
        if let ExprKind::Ident(id) = &e.kind {
            if let Some((v, _)) = self.template_value(id.name) {
                return Some(ConstValue::Int(v));
            }
        }
        match self.out.res(e.id) {
            Res::Func(f) => self
                .out
                .fn_ptr_value(f)
                .map(|v| ConstValue::Int(i128::from(v))),
            Res::Local(l) => self.out.locals[l].const_value,
            Res::Global(g) => self.out.globals[g].const_value,
            Res::EnumConst(en, i) => {
                let (_, v) = self.out.types.enums[en].variants.get(i as usize)?;
                Some(ConstValue::Int(i128::from(*v)))
            }
            Res::BuiltinVar(BuiltinVar::ProgramCount) => {
                Some(ConstValue::Int(i128::from(self.out.target.program_count)))
            }
            Res::BuiltinVar(BuiltinVar::ProgramIndex) => self
                .const_lane
                .get()
                .map(|lane| ConstValue::Int(i128::from(lane))),
            _ => None,
        }
    }

    fn eval_unary(&self, e: &Expr, op: UnaryOp, operand: &Expr, d: u32) -> Option<ConstValue> {
        let v = self.eval_converted(operand, d)?;
        let rt = self.out.type_of(e.id);
        let r = match (op, v) {
            (UnaryOp::Plus, v) => v,
            (UnaryOp::Neg, ConstValue::Int(i)) => ConstValue::Int(i.wrapping_neg()),
            (UnaryOp::Neg, ConstValue::Float(f)) => ConstValue::Float(-f),
            (UnaryOp::Not, ConstValue::Bool(b)) => ConstValue::Bool(!b),
            (UnaryOp::BitNot, ConstValue::Int(i)) => ConstValue::Int(!i),
            _ => return None,
        };
        self.convert_to(r, rt)
    }

    fn eval_binary(
        &self,
        e: &Expr,
        op: BinaryOp,
        lhs: &Expr,
        rhs: &Expr,
        d: u32,
    ) -> Option<ConstValue> {
        use BinaryOp::*;
        if matches!(op, LogicalAnd | LogicalOr) {
            let l = self.eval_converted(lhs, d)?;
            let short = matches!(
                (op, l),
                (LogicalAnd, ConstValue::Bool(false)) | (LogicalOr, ConstValue::Bool(true))
            );
            if short {
                return Some(l);
            }
            return self.eval_converted(rhs, d);
        }
        if op == Comma {
            return None;
        }
        let l = self.eval_converted(lhs, d)?;
        let r = self.eval_converted(rhs, d)?;
        let v = match (l, r) {
            (ConstValue::Int(a), ConstValue::Int(b)) => int_op(op, a, b)?,
            (ConstValue::Float(a), ConstValue::Float(b)) => float_op(op, a, b)?,
            (ConstValue::Bool(a), ConstValue::Bool(b)) => {
                let (a, b) = (i128::from(a), i128::from(b));
                match int_op(op, a, b)? {
                    ConstValue::Int(v) => ConstValue::Bool(v != 0),
                    other => other,
                }
            }
            _ => return None,
        };
        self.convert_to(v, self.out.type_of(e.id))
    }
}

fn int_op(op: BinaryOp, a: i128, b: i128) -> Option<ConstValue> {
    use BinaryOp::*;
    Some(match op {
        Add => ConstValue::Int(a.wrapping_add(b)),
        Sub => ConstValue::Int(a.wrapping_sub(b)),
        Mul => ConstValue::Int(a.wrapping_mul(b)),
        Div => ConstValue::Int(a.checked_div(b)?),
        Rem => ConstValue::Int(a.checked_rem(b)?),
        Shl => ConstValue::Int(a.checked_shl(u32::try_from(b).ok().filter(|&c| c < 64)?)?),
        Shr => ConstValue::Int(a.checked_shr(u32::try_from(b).ok().filter(|&c| c < 64)?)?),
        BitAnd => ConstValue::Int(a & b),
        BitOr => ConstValue::Int(a | b),
        BitXor => ConstValue::Int(a ^ b),
        _ => ConstValue::Bool(compare(op, a, b)?),
    })
}

/// A comparison operator applied to two constants; None for other operators.
fn compare<T: PartialOrd>(op: BinaryOp, a: T, b: T) -> Option<bool> {
    use BinaryOp::*;
    Some(match op {
        Lt => a < b,
        Gt => a > b,
        Le => a <= b,
        Ge => a >= b,
        Eq => a == b,
        Ne => a != b,
        _ => return None,
    })
}

fn float_op(op: BinaryOp, a: f64, b: f64) -> Option<ConstValue> {
    use BinaryOp::*;
    Some(match op {
        Add => ConstValue::Float(a + b),
        Sub => ConstValue::Float(a - b),
        Mul => ConstValue::Float(a * b),
        Div => ConstValue::Float(a / b),
        _ => ConstValue::Bool(compare(op, a, b)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping() {
        assert_eq!(wrap(300, Prim::UInt8), 44);
        assert_eq!(wrap(200, Prim::Int8), -56);
        assert_eq!(wrap(-1, Prim::UInt32), 0xffff_ffff);
        assert_eq!(wrap(i128::from(u64::MAX), Prim::Int64), -1);
    }

    #[test]
    fn fitting() {
        assert!(fits(ConstValue::Int(5), Prim::Int8));
        assert!(!fits(ConstValue::Int(300), Prim::Int8));
        assert!(fits(ConstValue::Float(2.0), Prim::Int32));
        assert!(!fits(ConstValue::Float(2.5), Prim::Int32));
    }
}
