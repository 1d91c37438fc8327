//! Short vectors (`float<3>`, `uniform int<4>`): every operation element by element.
//!
//! A short vector is an aggregate ([`super::types::is_aggregate`]): its value is an
//! object in memory laid out as sema says (varying: `n` varying elements one after the
//! other; uniform: `n` elements padded to ISPC's power-of-two vector), and an rvalue of
//! vector type is [`Val::Mem`] (a temporary for computed values). Locals, parameters
//! (a pointer to a copy), returns (through the sret pointer), struct members, array
//! elements, copies, `?:` on a uniform or varying scalar condition and initializers
//! take the paths of structs and arrays. What is particular to vectors is here: the
//! element-wise operators, conversions between element types, the scalar-to-vector
//! broadcast, swizzles, and `?:` with a vector condition. Each expands to one scalar
//! operation per element, so the IR and both back ends are unchanged.
//!
//! The element places are computed from the place's own type (the object as laid out
//! in memory), which may differ from sema's type of the expression in variability: a
//! uniform vector at a varying address (`a[i]` with a varying `i`) is a varying value
//! whose elements are gathered one by one.

use super::func::{FnLower, Val};
use super::place::Place;
use super::types::vector_elem;
use crate::front::ast::{BinaryOp as Op, UnaryOp};
use crate::front::sema::{ConstValue, TypeId, TypeKind};
use crate::ir::{self, BinaryOp, Value};

impl FnLower<'_, '_> {
    /// The place of element `i` of the vector at `p`.
    pub fn vec_elem_place(&mut self, p: Place, i: u32) -> Place {
        let target = self.cx.checked.target;
        let (off, elem) = vector_elem(self.types(), target, p.ty, i);
        self.offset(p, off, elem)
    }

    /// The length of a short vector type.
    pub fn vec_len(&self, ty: TypeId) -> Option<u32> {
        self.cx.types.as_vector(ty).map(|v| v.1)
    }

    /// Element `i` of a vector value (a scalar value stands for every element).
    fn vec_elem_value(&mut self, v: Val, i: u32) -> Option<Value> {
        match v {
            Val::Mem(p) if matches!(self.cx.types.kind(p.ty), TypeKind::Vector(..)) => {
                let ep = self.vec_elem_place(p, i);
                match self.load(ep) {
                    Val::S(x) => Some(x),
                    _ => None,
                }
            }
            Val::S(x) => Some(x),
            _ => None,
        }
    }

    /// A fresh vector of type `ty` whose element `i` is `f(self, i)` (converted to the
    /// element type's variability): every lane of the temporary is written.
    fn build_vector(
        &mut self,
        ty: TypeId,
        mut f: impl FnMut(&mut Self, u32) -> Option<Value>,
    ) -> Val {
        let Some(n) = self.vec_len(ty) else {
            self.unsupported("this short vector operation");
            return Val::None;
        };
        let dst = self.temp_place(ty);
        let all = self.all_on();
        for i in 0..n {
            let Some(x) = f(self, i) else {
                return Val::None;
            };
            let d = self.vec_elem_place(dst, i);
            self.store_masked(d, Val::S(x), all);
        }
        Val::Mem(dst)
    }

    /// `a op b` on operands converted to the vector types `lt` and `rt` (a shift count
    /// keeps its own element type); `res` is the result's vector type (`bool` elements
    /// for a comparison).
    pub fn vector_binop(
        &mut self,
        op: Op,
        a: Val,
        lt: TypeId,
        b: Val,
        rt: TypeId,
        res: TypeId,
    ) -> Val {
        let le = self.elem_type(lt);
        let re = self.elem_type(rt);
        self.build_vector(res, |s, i| {
            let x = s.vec_elem_value(a, i)?;
            let y = s.vec_elem_value(b, i)?;
            Some(s.binop(op, x, le, y, re))
        })
    }

    /// The element type of a vector type, or the type itself for a scalar.
    fn elem_type(&mut self, ty: TypeId) -> TypeId {
        match self.cx.types.kind(ty) {
            TypeKind::Vector(..) => self.cx.types.vector_elem(ty),
            _ => ty,
        }
    }

    /// `&&` and `||` with vector operands (already converted to `bool` vectors): both
    /// sides are evaluated, then combined element by element.
    pub fn vector_logical(&mut self, and: bool, a: Val, b: Val, res: TypeId) -> Val {
        let op = if and { BinaryOp::Band } else { BinaryOp::Bor };
        self.build_vector(res, |s, i| {
            let x = s.vec_elem_value(a, i)?;
            let y = s.vec_elem_value(b, i)?;
            Some(s.bin(op, x, y))
        })
    }

    /// `-v`, `+v`, `~v` and `!v` on an operand converted to the result type `res`.
    pub fn vector_unary(&mut self, op: UnaryOp, v: Val, res: TypeId) -> Val {
        if op == UnaryOp::Plus {
            return v;
        }
        let float = self
            .cx
            .types
            .as_vector(res)
            .is_some_and(|(p, _)| p.is_float());
        self.build_vector(res, |s, i| {
            let x = s.vec_elem_value(v, i)?;
            let uop = match op {
                UnaryOp::Neg if float => ir::UnaryOp::Fneg,
                UnaryOp::Neg => ir::UnaryOp::Ineg,
                _ => ir::UnaryOp::Bnot,
            };
            Some(s.un(uop, x))
        })
    }

    /// `c ? a : b` with a vector condition: both sides are evaluated, then each element
    /// selected by its condition element.
    pub fn vector_select(&mut self, c: Val, a: Val, b: Val, res: TypeId) -> Val {
        self.build_vector(res, |s, i| {
            let ci = s.vec_elem_value(c, i)?;
            let x = s.vec_elem_value(a, i)?;
            let y = s.vec_elem_value(b, i)?;
            Some(s.select(ci, x, y))
        })
    }

    /// `++v`, `v--`...: every element stepped by one, stored back under the current
    /// mask; the vector after (prefix) or a copy of the one before (postfix).
    pub fn vector_incdec(&mut self, op: UnaryOp, p: Place, ty: TypeId) -> Val {
        let up = matches!(op, UnaryOp::PreInc | UnaryOp::PostInc);
        let post = matches!(op, UnaryOp::PostInc | UnaryOp::PostDec);
        let old = if post {
            let t = self.temp_place(ty);
            let all = self.all_on();
            self.copy(t, p, all);
            Some(t)
        } else {
            None
        };
        let Some(n) = self.vec_len(p.ty) else {
            return Val::None;
        };
        let elem = self.elem_type(ty);
        let bop = if up { Op::Add } else { Op::Sub };
        for i in 0..n {
            let ep = self.vec_elem_place(p, i);
            let x = self.load(ep);
            let one = self.const_value(ConstValue::Int(1), elem);
            let (Val::S(x), Val::S(one)) = (x, one) else {
                return Val::None;
            };
            let r = self.binop(bop, x, elem, one, elem);
            self.store(ep, Val::S(r));
        }
        Val::Mem(old.unwrap_or(p))
    }

    /// A scalar of type `from` as a vector of type `to`: converted to the element type
    /// and stored into every element.
    pub fn scalar_to_vector(&mut self, x: Value, from: TypeId, to: TypeId) -> Val {
        let elem = self.cx.types.vector_elem(to);
        let Val::S(y) = self.convert(Val::S(x), from, elem) else {
            return Val::None;
        };
        self.build_vector(to, |_, _| Some(y))
    }

    /// A vector at `p` (sema type `from`) as a vector of type `to` of the same length:
    /// each element converted. The place itself when nothing changes.
    pub fn vector_to_vector(&mut self, p: Place, from: TypeId, to: TypeId) -> Val {
        let (fd, td, pd) = (
            self.cx.types.get(from),
            self.cx.types.get(to),
            self.cx.types.get(p.ty),
        );
        if fd.kind == td.kind && pd.kind == td.kind && pd.var == td.var {
            return Val::Mem(Place { ty: to, ..p });
        }
        let fe = self.elem_type(from);
        let te = self.elem_type(to);
        let v = Val::Mem(p);
        self.build_vector(to, |s, i| {
            let x = s.vec_elem_value(v, i)?;
            match s.convert(Val::S(x), fe, te) {
                Val::S(y) => Some(y),
                _ => None,
            }
        })
    }

    /// A swizzle of several elements (`v.zyx`) of the vector at `p`: a new vector of
    /// type `ty` holding the named elements in order.
    pub fn swizzle(&mut self, p: Place, indices: &[u8], ty: TypeId) -> Place {
        let v = Val::Mem(p);
        match self.build_vector(ty, |s, j| {
            s.vec_elem_value(v, u32::from(indices[j as usize]))
        }) {
            Val::Mem(t) => t,
            _ => p,
        }
    }
}
