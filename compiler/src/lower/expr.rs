//! Expressions: operators, names, built-ins, calls, `?:` and short-circuit logic under
//! masks.

use smallvec::SmallVec;
use std::borrow::Borrow;

use super::func::{FnLower, Val};
use super::place::Place;
use super::types::{ir_type, is_aggregate, num_of, Num};
use crate::front::ast::{BinaryOp as Op, Expr, ExprKind, UnaryOp};
use crate::front::sema::{
    Axis, BuiltinFn, BuiltinVar, ConstValue, FuncId, GpuVar, Res, TypeId, TypeKind, Types,
};
use crate::ir::{self, BinaryOp, FloatCC, InstData, IntCC, Scalar, SpecialReg, Type, Value};

impl FnLower<'_, '_> {
    /// An expression's value converted to the type its context wants.
    pub fn rvalue(&mut self, e: &Expr) -> Val {
        let v = self.expr(e);
        let from = self.cx.checked.type_of(e.id);
        let to = self.cx.checked.converted_type(e.id);
        self.convert(v, from, to)
    }

    /// A converted scalar value (a placeholder after an error).
    pub fn scalar(&mut self, e: &Expr) -> Value {
        match self.rvalue(e) {
            Val::S(v) => v,
            _ => {
                let span = e.span;
                self.cx.unsupported(span, "an aggregate value here");
                self.iconst(Type::I32, 0)
            }
        }
    }

    /// An expression's value in its own type (before the implicit conversion).
    pub fn expr(&mut self, e: &Expr) -> Val {
        let saved = self.span;
        self.span = e.span;
        let v = self.expr_inner(e);
        self.span = saved;
        v
    }

    fn expr_inner(&mut self, e: &Expr) -> Val {
        let ty = self.cx.checked.type_of(e.id);
        if let Some(cv) = self.cx.checked.const_value(e.id) {
            if ir_type(&self.cx.types, ty).is_some() && !has_side_effects(e, self.cx.checked) {
                return self.const_value(cv, ty);
            }
        }
        if let Some(f) = self.cx.checked.operator_call(e.id) {
            return self.operator_value(e, f, ty);
        }
        match &e.kind {
            ExprKind::Int { value, .. } => self.const_value(ConstValue::Int(*value as i128), ty),
            ExprKind::Float { value, .. } => self.const_value(ConstValue::Float(*value), ty),
            ExprKind::Bool(b) => self.const_value(ConstValue::Bool(*b), ty),
            ExprKind::Char(c) => self.const_value(ConstValue::Int(*c as i128), ty),
            ExprKind::Null => Val::S(self.iconst(Type::PTR, 0)),
            ExprKind::Str(_) => {
                self.unsupported("a string literal outside `print`");
                Val::None
            }
            ExprKind::Ident(_) => self.ident(e, ty),
            ExprKind::Unary { op, operand } => self.unary(e, *op, operand, ty),
            ExprKind::Binary { op, lhs, rhs } => self.binary(e, *op, lhs, rhs, ty),
            ExprKind::Assign { op, lhs, rhs } => self.assign(e, *op, lhs, rhs),
            ExprKind::Ternary { cond, then, else_ } => self.ternary(cond, then, else_, ty),
            ExprKind::Cast { expr, .. } => {
                let v = self.rvalue(expr);
                let from = self.cx.checked.converted_type(expr.id);
                self.convert(v, from, ty)
            }
            ExprKind::SizeofType(_) | ExprKind::SizeofExpr(_) => {
                self.unsupported("a `sizeof` sema did not evaluate");
                self.dummy(ty)
            }
            ExprKind::Call { .. } if self.cx.checked.returns_reference(e.id) => {
                match self.place(e) {
                    Some(p) => self.load(p),
                    None => self.dummy(ty),
                }
            }
            ExprKind::Call { callee, args, .. } => self.call(e, callee.name, args, ty),
            ExprKind::CallPtr { callee, args } => self.call_ptr_expr(callee, args, ty),
            ExprKind::Index { .. } | ExprKind::Member { .. } => {
                if let Res::BuiltinVar(b) = self.cx.checked.res(e.id) {
                    return Val::S(self.builtin(b));
                }
                match self.place(e) {
                    Some(p) => self.load(p),
                    None => self.dummy(ty),
                }
            }
            ExprKind::New(n) => self.lower_new(n, ty),
            ExprKind::Error => self.dummy(ty),
        }
    }

    fn ident(&mut self, e: &Expr, ty: TypeId) -> Val {
        match self.cx.checked.res(e.id) {
            Res::Local(_) | Res::Global(_) => match self.place(e) {
                Some(p) => self.load(p),
                None => self.dummy(ty),
            },
            Res::EnumConst(id, idx) => {
                let v = self.cx.types.enums[id]
                    .variants
                    .get(idx as usize)
                    .map_or(0, |v| v.1);
                self.const_value(ConstValue::Int(v as i128), ty)
            }
            Res::BuiltinVar(b) => Val::S(self.builtin(b)),
            _ => self.dummy(ty),
        }
    }

    /// `programIndex`, `taskIndex`, `threadIdx.x`...
    pub fn builtin(&mut self, b: BuiltinVar) -> Value {
        use SpecialReg as R;
        if let Some(g) = self.task_geometry {
            if let Some(v) = self.launched_task_builtin(g, b) {
                return v;
            }
        }
        match b {
            BuiltinVar::ProgramIndex => self.special(R::LaneIndex),
            BuiltinVar::ProgramCount => self.special(R::LaneCount),
            BuiltinVar::TaskIndex => {
                // blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)
                let (bx, by, bz) = (
                    self.special(R::BlockIdxX),
                    self.special(R::BlockIdxY),
                    self.special(R::BlockIdxZ),
                );
                let (gx, gy) = (self.special(R::GridDimX), self.special(R::GridDimY));
                let t = self.bin(BinaryOp::Imul, gy, bz);
                let t = self.bin(BinaryOp::Iadd, by, t);
                let t = self.bin(BinaryOp::Imul, gx, t);
                self.bin(BinaryOp::Iadd, bx, t)
            }
            BuiltinVar::TaskCount => {
                let (gx, gy, gz) = (
                    self.special(R::GridDimX),
                    self.special(R::GridDimY),
                    self.special(R::GridDimZ),
                );
                let t = self.bin(BinaryOp::Imul, gx, gy);
                self.bin(BinaryOp::Imul, t, gz)
            }
            BuiltinVar::TaskIndexDim(d) => {
                self.special([R::BlockIdxX, R::BlockIdxY, R::BlockIdxZ][d.min(2) as usize])
            }
            BuiltinVar::TaskCountDim(d) => {
                self.special([R::GridDimX, R::GridDimY, R::GridDimZ][d.min(2) as usize])
            }
            BuiltinVar::GpuAxis(v, a) => {
                let i = match a {
                    Axis::X => 0,
                    Axis::Y => 1,
                    Axis::Z => 2,
                };
                let regs = match v {
                    GpuVar::ThreadIdx => [R::ThreadIdxX, R::ThreadIdxY, R::ThreadIdxZ],
                    GpuVar::BlockIdx => [R::BlockIdxX, R::BlockIdxY, R::BlockIdxZ],
                    GpuVar::BlockDim => [R::BlockDimX, R::BlockDimY, R::BlockDimZ],
                    GpuVar::GridDim => [R::GridDimX, R::GridDimY, R::GridDimZ],
                };
                self.special(regs[i])
            }
            BuiltinVar::Gpu(_) => {
                self.unsupported("a bare launch built-in");
                self.iconst(Type::I32, 0)
            }
        }
    }

    // ------------------------------------------------------------ places

    /// The place an lvalue designates; aggregates that are not lvalues are materialized
    /// (their value is already in memory).
    pub fn place(&mut self, e: &Expr) -> Option<Place> {
        match &e.kind {
            ExprKind::Ident(_) => match self.cx.checked.res(e.id) {
                Res::Local(l) => Some(self.local_place(l)),
                Res::Global(g) => {
                    let st = *self.cx.globals.get(&g)?;
                    let ty = self.cx.checked.globals[g].ty;
                    Some(self.storage_place(st, ty))
                }
                _ => None,
            },
            ExprKind::Unary {
                op: UnaryOp::Deref,
                operand,
            } => {
                let p = self.scalar(operand);
                let pty = self.cx.checked.converted_type(operand.id);
                let ty = self.cx.types.pointee(pty)?;
                if self.cx.types.as_soa(ty).is_some() {
                    return self.soa_element(p, false, None, ty, ir::Space::Generic);
                }
                Some(Place {
                    addr: p,
                    ty,
                    space: ir::Space::Generic,
                    soa: None,
                })
            }
            ExprKind::Index { base, index } => self.index_place(base, index),
            ExprKind::Member { base, arrow, .. } => self.member_place(e, base, *arrow),
            ExprKind::Call { callee, args, .. } if self.cx.checked.returns_reference(e.id) => {
                let ty = self.cx.checked.type_of(e.id);
                let addr = self.call(e, callee.name, args, ty);
                Self::returned_place(addr, ty)
            }
            _ if self.cx.checked.operator_returns_reference(e.id) => {
                let ty = self.cx.checked.type_of(e.id);
                let f = self.cx.checked.operator_call(e.id)?;
                let addr = self.operator_call(e, f, ty);
                Self::returned_place(addr, ty)
            }
            _ => match self.expr(e) {
                Val::Mem(p) => Some(p),
                _ => None,
            },
        }
    }

    /// The object a call returning a reference (its address, `addr`) refers to.
    fn returned_place(addr: Val, ty: TypeId) -> Option<Place> {
        match addr {
            Val::S(addr) => Some(Place {
                addr,
                ty,
                space: ir::Space::Generic,
                soa: None,
            }),
            _ => None,
        }
    }

    /// The value of an operator expression that calls the overloaded operator `f`
    /// (`a + b` on structs calls `operator+`); through the reference it returns, if
    /// it returns one.
    fn operator_value(&mut self, e: &Expr, f: FuncId, ty: TypeId) -> Val {
        if self.cx.checked.funcs[f].ret_ref {
            return match self.place(e) {
                Some(p) => self.load(p),
                None => self.dummy(ty),
            };
        }
        self.operator_call(e, f, ty)
    }

    /// Calls the overloaded operator `f` with the operands of `e`, left to right: both
    /// operands of `&&` and `||` too, as C++ does for overloads.
    fn operator_call(&mut self, e: &Expr, f: FuncId, ty: TypeId) -> Val {
        let operands: SmallVec<[&Expr; 2]> = match &e.kind {
            ExprKind::Unary { operand, .. } => smallvec::smallvec![&**operand],
            ExprKind::Binary { lhs, rhs, .. } | ExprKind::Assign { lhs, rhs, .. } => {
                smallvec::smallvec![&**lhs, &**rhs]
            }
            _ => SmallVec::new(),
        };
        let name = self.cx.checked.funcs[f].name;
        self.call_function(f, name, &operands, ty)
    }

    /// The address an expression bound to a reference gives it: its lvalue's, or a
    /// fresh temporary's holding its value (a `const` reference to a value).
    pub fn reference_addr(&mut self, e: &Expr) -> Value {
        if self.cx.checked.binds_temporary(e.id) {
            let v = self.rvalue(e);
            let tmp = self.temp_place(self.cx.checked.converted_type(e.id));
            let all = self.all_on();
            self.store_masked(tmp, v, all);
            return tmp.addr;
        }
        match self.place(e) {
            Some(p) => p.addr,
            None => self.iconst(Type::PTR, 0),
        }
    }

    fn index_place(&mut self, base: &Expr, index: &Expr) -> Option<Place> {
        let bt = self.cx.checked.type_of(base.id);
        if let Some(place) = self.soa_index_place(base, index, bt) {
            return place;
        }
        let (start, elem) = match self.cx.types.kind(bt) {
            TypeKind::Array(..) | TypeKind::Vector(..) => {
                let bp = self.place(base)?;
                let elem = match self.cx.types.kind(bp.ty) {
                    TypeKind::Array(elem, _) => elem,
                    TypeKind::Vector(..) => self.cx.types.vector_elem(bp.ty),
                    _ => return None,
                };
                (bp, elem)
            }
            _ => {
                let p = self.scalar(base);
                let pty = self.cx.checked.converted_type(base.id);
                let elem = self.cx.types.pointee(pty)?;
                let place = Place {
                    addr: p,
                    ty: elem,
                    space: ir::Space::Generic,
                    soa: None,
                };
                (place, elem)
            }
        };
        let i = self.scalar(index);
        let it = self.cx.checked.converted_type(index.id);
        let signed = !matches!(
            num_of(&self.cx.types, it),
            Some(Num::Int { signed: false, .. })
        );
        let size = self.cx.types.layout(elem, self.cx.checked.target).size;
        let unsized_array = matches!(self.cx.types.kind(start.ty), TypeKind::Array(_, None));
        if start.space == ir::Space::Shared && unsized_array {
            self.check_dynamic_shared_index(i, signed, size);
        }
        let off = self.scaled_index(i, signed, size);
        let addr = self.bin(BinaryOp::Iadd, start.addr, off);
        Some(Place {
            addr,
            ty: elem,
            space: start.space,
            soa: None,
        })
    }

    /// `base[index]` where `base` holds soa data (an element) or is a part of an soa
    /// element (an array member); `None` for every other indexing.
    fn soa_index_place(&mut self, base: &Expr, index: &Expr, bt: TypeId) -> Option<Option<Place>> {
        let signed_index = |s: &mut Self| {
            let i = s.scalar(index);
            let it = s.cx.checked.converted_type(index.id);
            let signed = !matches!(
                num_of(&s.cx.types, it),
                Some(Num::Int { signed: false, .. })
            );
            (i, signed)
        };
        if self.cx.types.soa_elements(bt).is_some() {
            let (ptr, array, space, block) = match self.cx.types.kind(bt) {
                TypeKind::Array(block, _) => {
                    let Some(bp) = self.place(base) else {
                        return Some(None);
                    };
                    (bp.addr, true, bp.space, block)
                }
                _ => {
                    let p = self.scalar(base);
                    let pty = self.cx.checked.converted_type(base.id);
                    let block = self.cx.types.pointee(pty).unwrap_or(Types::ERROR);
                    (p, false, ir::Space::Generic, block)
                }
            };
            let i = signed_index(self);
            return Some(self.soa_element(ptr, array, Some(i), block, space));
        }
        let indexable = matches!(
            self.cx.types.kind(bt),
            TypeKind::Array(..) | TypeKind::Vector(..)
        );
        if !indexable || !self.in_soa(base) {
            return None;
        }
        let bp = self.place(base)?;
        let Some(soa) = bp.soa else {
            return Some(None);
        };
        let (i, signed) = signed_index(self);
        Some(self.soa_index(bp, soa, i, signed))
    }

    /// Is `e` a part of an soa element (so that its place carries one)? Decided from the
    /// expression's shape, before lowering it.
    fn in_soa(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Index { base, .. } => {
                let bt = self.cx.checked.type_of(base.id);
                self.cx.types.soa_elements(bt).is_some()
                    || (matches!(
                        self.cx.types.kind(bt),
                        TypeKind::Array(..) | TypeKind::Vector(..)
                    ) && self.in_soa(base))
            }
            ExprKind::Member {
                base, arrow: true, ..
            } => {
                let bt = self.cx.checked.converted_type(base.id);
                self.cx.types.soa_elements(bt).is_some()
            }
            ExprKind::Member { base, .. } => self.in_soa(base),
            ExprKind::Unary {
                op: UnaryOp::Deref,
                operand,
            } => {
                let pt = self.cx.checked.converted_type(operand.id);
                self.cx.types.soa_elements(pt).is_some()
            }
            _ => false,
        }
    }

    /// An index of the dynamic `shared` array must address a whole element of the
    /// launch's dynamic shared memory: an active lane with an index past it (or
    /// negative, as unsigned) stops the launch, on every target alike.
    fn check_dynamic_shared_index(&mut self, index: Value, signed: bool, elem_size: u32) {
        if elem_size == 0 {
            return;
        }
        let index = self.to_ptr_int(index, signed);
        let bytes = self.special(SpecialReg::DynSharedBytes);
        let bytes = self.to_ptr_int(bytes, false);
        let int = Type::uniform(self.ptr_int());
        let count = if elem_size.is_power_of_two() {
            let shift = self.iconst(int, i64::from(elem_size.trailing_zeros()));
            self.bin(BinaryOp::Ushr, bytes, shift)
        } else {
            let size = self.iconst(int, i64::from(elem_size));
            self.bin(BinaryOp::Udiv, bytes, size)
        };
        let failed = self.icmp(IntCC::Uge, index, count);
        self.trap_if_any(failed, ir::TrapCode::SharedOutOfBounds);
    }

    fn member_place(&mut self, e: &Expr, base: &Expr, arrow: bool) -> Option<Place> {
        let swizzle = self.cx.checked.swizzle(e.id).map(|s| s.to_vec());
        let sp = if arrow {
            let p = self.scalar(base);
            let pty = self.cx.checked.converted_type(base.id);
            let ty = self.cx.types.pointee(pty)?;
            if self.cx.types.as_soa(ty).is_some() {
                let elem = self.soa_element(p, false, None, ty, ir::Space::Generic)?;
                let idx = self.cx.checked.member_index(e.id)? as usize;
                return self.soa_member(elem, elem.soa?, idx);
            }
            Place {
                addr: p,
                ty,
                space: ir::Space::Generic,
                soa: None,
            }
        } else {
            self.place(base)?
        };
        if let Some(indices) = swizzle {
            if !matches!(self.cx.types.kind(sp.ty), TypeKind::Vector(..)) {
                return None;
            }
            if let Some(soa) = sp.soa {
                if let [i] = indices.as_slice() {
                    return self.soa_vec_elem(sp, soa, u32::from(*i));
                }
                // Several elements make a new vector: read the vector out first.
                let Val::Mem(v) = self.soa_load(sp, soa) else {
                    return None;
                };
                let ty = self.cx.checked.type_of(e.id);
                return Some(self.swizzle(v, &indices, ty));
            }
            return Some(match indices.as_slice() {
                [i] => self.vec_elem_place(sp, u32::from(*i)),
                _ => {
                    let ty = self.cx.checked.type_of(e.id);
                    self.swizzle(sp, &indices, ty)
                }
            });
        }
        let TypeKind::Struct(sid) = self.cx.types.kind(sp.ty) else {
            return None;
        };
        let idx = self.cx.checked.member_index(e.id)? as usize;
        if let Some(soa) = sp.soa {
            return self.soa_member(sp, soa, idx);
        }
        let var = self.cx.types.var(sp.ty);
        let off = *self.cx.types.structs[sid].layout(var).offsets.get(idx)?;
        let fty = self.cx.types.member_type(sp.ty, idx);
        Some(self.offset(sp, off, fty))
    }

    // ------------------------------------------------------------ operators

    fn unary(&mut self, e: &Expr, op: UnaryOp, operand: &Expr, ty: TypeId) -> Val {
        if let TypeKind::FnPtr(_) = self.cx.types.kind(ty) {
            // `*p` and `&f` of function pointers are the pointer itself.
            if matches!(op, UnaryOp::Deref | UnaryOp::AddrOf) {
                return self.rvalue(operand);
            }
        }
        match op {
            UnaryOp::Deref => match self.place(e) {
                Some(p) => self.load(p),
                None => self.dummy(ty),
            },
            UnaryOp::AddrOf => match self.place(operand) {
                Some(p @ Place { soa: Some(soa), .. }) => {
                    let varying = self.cx.types.is_varying(ty);
                    Val::S(self.soa_address(p, soa, varying))
                }
                Some(p) => {
                    let a = if self.cx.types.is_varying(ty) {
                        self.splat(p.addr)
                    } else {
                        p.addr
                    };
                    Val::S(a)
                }
                None => self.dummy(ty),
            },
            UnaryOp::Plus | UnaryOp::Neg | UnaryOp::Not | UnaryOp::BitNot
                if self.vec_len(ty).is_some() =>
            {
                let v = self.rvalue(operand);
                self.vector_unary(op, v, ty)
            }
            UnaryOp::Plus => self.rvalue(operand),
            UnaryOp::Neg => {
                let v = self.scalar(operand);
                let op = if self.ty(v).scalar.is_ieee() {
                    ir::UnaryOp::Fneg
                } else {
                    ir::UnaryOp::Ineg
                };
                Val::S(self.un(op, v))
            }
            UnaryOp::Not | UnaryOp::BitNot => {
                let v = self.scalar(operand);
                Val::S(self.un(ir::UnaryOp::Bnot, v))
            }
            UnaryOp::PreInc | UnaryOp::PreDec | UnaryOp::PostInc | UnaryOp::PostDec => {
                self.incdec(op, operand, ty)
            }
        }
    }

    fn incdec(&mut self, op: UnaryOp, operand: &Expr, ty: TypeId) -> Val {
        let Some(p) = self.place(operand) else {
            return self.dummy(ty);
        };
        if self.vec_len(ty).is_some() {
            return self.vector_incdec(op, p, ty);
        }
        let Val::S(old) = self.load(p) else {
            return self.dummy(ty);
        };
        let up = matches!(op, UnaryOp::PreInc | UnaryOp::PostInc);
        let t = self.ty(old);
        let new = match num_of(&self.cx.types, ty) {
            Some(Num::Ptr) if self.cx.types.soa_elements(ty).is_some() => {
                let block = self.cx.types.pointee(ty).unwrap_or(ty);
                let one = self.iconst(Type::I32, 1);
                self.soa_ptr_add(old, one, true, !up, block)
            }
            Some(Num::Ptr) => {
                let elem = self.cx.types.pointee(ty).unwrap_or(ty);
                let size = self.cx.types.layout(elem, self.cx.checked.target).size as i64;
                let d = self.ptr_offset_const(if up { size } else { -size });
                self.bin(BinaryOp::Iadd, old, d)
            }
            Some(Num::Float { .. }) => {
                let one = self.fconst(t.to_uniform(), 1.0);
                let op = if up { BinaryOp::Fadd } else { BinaryOp::Fsub };
                self.bin(op, old, one)
            }
            _ => {
                let one = self.iconst(t.to_uniform(), 1);
                let op = if up { BinaryOp::Iadd } else { BinaryOp::Isub };
                self.bin(op, old, one)
            }
        };
        self.store(p, Val::S(new));
        Val::S(if matches!(op, UnaryOp::PreInc | UnaryOp::PreDec) {
            new
        } else {
            old
        })
    }

    fn binary(&mut self, e: &Expr, op: Op, lhs: &Expr, rhs: &Expr, ty: TypeId) -> Val {
        match op {
            Op::Comma => {
                self.expr(lhs);
                return self.expr(rhs);
            }
            Op::LogicalAnd | Op::LogicalOr => return self.logical(op, lhs, rhs, ty),
            _ => {}
        }
        let _ = e;
        if self.vec_len(ty).is_some() {
            let a = self.rvalue(lhs);
            let b = self.rvalue(rhs);
            let lt = self.cx.checked.converted_type(lhs.id);
            let rt = self.cx.checked.converted_type(rhs.id);
            return self.vector_binop(op, a, lt, b, rt, ty);
        }
        let a = self.scalar(lhs);
        let b = self.scalar(rhs);
        let lt = self.cx.checked.converted_type(lhs.id);
        let rt = self.cx.checked.converted_type(rhs.id);
        Val::S(self.binop(op, a, lt, b, rt))
    }

    /// `a op b` on converted operands of types `lt` and `rt`.
    pub fn binop(&mut self, op: Op, a: Value, lt: TypeId, b: Value, rt: TypeId) -> Value {
        let ln = num_of(&self.cx.types, lt);
        let rn = num_of(&self.cx.types, rt);
        if ln == Some(Num::Ptr) || rn == Some(Num::Ptr) {
            return self.pointer_op(op, a, lt, b, rt);
        }
        let n = ln.unwrap_or(Num::Int {
            bits: 32,
            signed: true,
        });
        let signed = match n {
            Num::Int { signed, .. } => signed,
            _ => true,
        };
        let float = matches!(n, Num::Float { .. });
        use BinaryOp as B;
        let arith = |o: Op| -> Option<B> {
            Some(match (o, float, signed) {
                (Op::Add, false, _) => B::Iadd,
                (Op::Add, true, _) => B::Fadd,
                (Op::Sub, false, _) => B::Isub,
                (Op::Sub, true, _) => B::Fsub,
                (Op::Mul, false, _) => B::Imul,
                (Op::Mul, true, _) => B::Fmul,
                (Op::Div, true, _) => B::Fdiv,
                (Op::Div, false, true) => B::Sdiv,
                (Op::Div, false, false) => B::Udiv,
                (Op::Rem, true, _) => B::Frem,
                (Op::Rem, false, true) => B::Srem,
                (Op::Rem, false, false) => B::Urem,
                (Op::BitAnd, ..) => B::Band,
                (Op::BitOr, ..) => B::Bor,
                (Op::BitXor, ..) => B::Bxor,
                (Op::Shl, ..) => B::Ishl,
                (Op::Shr, _, true) => B::Sshr,
                (Op::Shr, _, false) => B::Ushr,
                _ => return None,
            })
        };
        if let Some(bop) = arith(op) {
            let b = if matches!(bop, B::Sdiv | B::Udiv | B::Srem | B::Urem) {
                self.safe_divisor(a, b)
            } else {
                b
            };
            let b = if matches!(op, Op::Shl | Op::Shr) {
                // The count has its own type: bring it to the shifted value's width.
                let (Some(from), Some(to)) = (rn, ln) else {
                    return a;
                };
                self.convert_num(b, from, to)
            } else {
                b
            };
            return self.bin(bop, a, b);
        }
        if float {
            let cc = match op {
                Op::Lt => FloatCC::Lt,
                Op::Le => FloatCC::Le,
                Op::Gt => FloatCC::Gt,
                Op::Ge => FloatCC::Ge,
                Op::Eq => FloatCC::Eq,
                _ => FloatCC::Une,
            };
            self.fcmp(cc, a, b)
        } else {
            let cc = int_cc(op, signed && n != Num::Bool);
            self.icmp(cc, a, b)
        }
    }

    /// A varying integer divisor with the inactive lanes set to 1: every lane computes,
    /// and a lane that is off must not trap on a zero it never asked to divide by.
    fn safe_divisor(&mut self, a: Value, b: Value) -> Value {
        if !self.ty(a).varying && !self.ty(b).varying {
            return b;
        }
        let m = self.cur_mask();
        let one = self.iconst(self.ty(b).to_uniform(), 1);
        self.select(m, b, one)
    }

    /// Pointer comparison, `p ± n`, `n + p` and `p - q`.
    fn pointer_op(&mut self, op: Op, a: Value, lt: TypeId, b: Value, rt: TypeId) -> Value {
        let types = &self.cx.types;
        let (lp, rp) = (types.pointee(lt), types.pointee(rt));
        let is_ptr = |t: TypeId| matches!(types.kind(t), TypeKind::Pointer(_) | TypeKind::Null);
        let (l_is, r_is) = (is_ptr(lt), is_ptr(rt));
        if op.is_comparison() {
            // A literal 0 compared with a pointer is the null pointer.
            let a = if l_is { a } else { self.iconst(Type::PTR, 0) };
            let b = if r_is { b } else { self.iconst(Type::PTR, 0) };
            return self.icmp(int_cc(op, false), a, b);
        }
        let target = self.cx.checked.target;
        let soa_block = lp.or(rp).filter(|&p| self.cx.types.as_soa(p).is_some());
        if let Some(block) = soa_block {
            return match (l_is, r_is) {
                (true, true) => self.soa_ptr_diff(a, b, block),
                (true, false) | (false, true) => {
                    let (p, n, nty) = if l_is { (a, b, rt) } else { (b, a, lt) };
                    let signed = !matches!(
                        num_of(&self.cx.types, nty),
                        Some(Num::Int { signed: false, .. })
                    );
                    self.soa_ptr_add(p, n, signed, op == Op::Sub, block)
                }
                _ => a,
            };
        }
        match (l_is, r_is) {
            (true, true) => {
                let size = lp.map_or(1, |p| self.cx.types.layout(p, target).size.max(1));
                let pi = self.ptr_int();
                let d = self.bin(BinaryOp::Isub, a, b);
                let d = self.conv(ir::ConvOp::Bitcast, d, pi);
                let s = self.iconst(Type::uniform(pi), i64::from(size));
                let q = self.bin(BinaryOp::Sdiv, d, s);
                // The difference of two pointers is an int64 in the language.
                if pi == Scalar::I64 {
                    q
                } else {
                    self.conv(ir::ConvOp::Sext, q, Scalar::I64)
                }
            }
            (true, false) | (false, true) => {
                let (p, pty, n, nty) = if l_is { (a, lp, b, rt) } else { (b, rp, a, lt) };
                let size = pty.map_or(1, |p| self.cx.types.layout(p, target).size);
                let signed = !matches!(
                    num_of(&self.cx.types, nty),
                    Some(Num::Int { signed: false, .. })
                );
                let off = self.scaled_index(n, signed, size);
                let bop = if op == Op::Sub {
                    BinaryOp::Isub
                } else {
                    BinaryOp::Iadd
                };
                self.bin(bop, p, off)
            }
            _ => a,
        }
    }

    fn assign(&mut self, e: &Expr, op: Option<Op>, lhs: &Expr, rhs: &Expr) -> Val {
        let lt = self.cx.checked.type_of(lhs.id);
        match op {
            None => {
                let v = self.rvalue(rhs);
                let Some(p) = self.place(lhs) else {
                    return v;
                };
                self.store(p, v);
                match v {
                    Val::Mem(_) if p.soa.is_none() => Val::Mem(p),
                    v => v,
                }
            }
            Some(bop) => {
                let Some(p) = self.place(lhs) else {
                    return self.dummy(lt);
                };
                let cur = self.load(p);
                let clt = self.cx.checked.converted_type(lhs.id);
                let opty = self.cx.checked.compound_op_type(e.id).unwrap_or(clt);
                if self.vec_len(opty).is_some() {
                    let a = self.convert(cur, lt, clt);
                    let b = self.rvalue(rhs);
                    let rt = self.cx.checked.converted_type(rhs.id);
                    let r = self.vector_binop(bop, a, clt, b, rt, opty);
                    let back = self.convert(r, opty, lt);
                    self.store(p, back);
                    return match back {
                        Val::Mem(_) => Val::Mem(p),
                        v => v,
                    };
                }
                let Val::S(a) = self.convert(cur, lt, clt) else {
                    return self.dummy(lt);
                };
                let b = self.scalar(rhs);
                let rt = self.cx.checked.converted_type(rhs.id);
                let r = self.binop(bop, a, clt, b, rt);
                let opty = self.cx.checked.compound_op_type(e.id).unwrap_or(clt);
                let back = self.convert(Val::S(r), opty, lt);
                // A varying result stored to a uniform place is not allowed by sema;
                // the value has the place's variability here.
                self.store(p, back);
                back
            }
        }
    }

    // ------------------------------------------------------------ masks in expressions

    /// `&&` and `||`: the right operand runs only for the lanes that need it (under the
    /// narrowed mask, and not at all when that mask is empty and it has side effects).
    fn logical(&mut self, op: Op, lhs: &Expr, rhs: &Expr, ty: TypeId) -> Val {
        let and = op == Op::LogicalAnd;
        if self.vec_len(ty).is_some() {
            let a = self.rvalue(lhs);
            let b = self.rvalue(rhs);
            return self.vector_logical(and, a, b, ty);
        }
        let a = self.scalar(lhs);
        let result_varying = self.cx.types.is_varying(ty);
        if !self.ty(a).varying {
            // Uniform left side: a real branch.
            let rhs_block = self.new_block();
            let join = self.new_block();
            let rt = Type {
                scalar: Scalar::Bool,
                varying: result_varying,
            };
            let param = self.func.append_block_param(join, rt);
            let short = self.iconst(rt, (!and) as i64);
            let mut b = crate::ir::builder::FuncBuilder::new(&mut self.func);
            b.switch_to(self.block);
            b.set_span(self.span);
            if and {
                b.brif(a, rhs_block, &[], join, &[short]);
            } else {
                b.brif(a, join, &[short], rhs_block, &[]);
            }
            self.switch_to(rhs_block);
            let v = self.scalar(rhs);
            let v = if result_varying { self.splat(v) } else { v };
            self.jump_args(join, &[v]);
            self.switch_to(join);
            return Val::S(param);
        }
        // Varying left side: lanes that still need the right side.
        let m = self.cur_mask();
        let need = if and { a } else { self.not(a) };
        let rm = self.and(m, need);
        let b = self.under_mask(rm, rhs, Type::varying(Scalar::Bool));
        let b = self.splat(b);
        let op = if and { BinaryOp::Band } else { BinaryOp::Bor };
        Val::S(self.bin(op, a, b))
    }

    /// Evaluates `e` (a scalar of IR type `t` after conversion) under mask `m`; if it has
    /// side effects, only when some lane of `m` is on (else the result is zero).
    fn under_mask(&mut self, m: Value, e: &Expr, t: Type) -> Value {
        let saved = self.mask;
        self.mask = Some(m);
        self.varying_depth += 1;
        let v = if has_side_effects(e, self.cx.checked) {
            let body = self.new_block();
            let join = self.new_block();
            let param = self.func.append_block_param(join, t);
            let zero = self.zero(t);
            let any = self.any(m);
            let mut b = crate::ir::builder::FuncBuilder::new(&mut self.func);
            b.switch_to(self.block);
            b.set_span(self.span);
            b.brif(any, body, &[], join, &[zero]);
            self.switch_to(body);
            let v = self.scalar(e);
            let v = if t.varying { self.splat(v) } else { v };
            self.jump_args(join, &[v]);
            self.switch_to(join);
            param
        } else {
            let v = self.scalar(e);
            if t.varying {
                self.splat(v)
            } else {
                v
            }
        };
        self.varying_depth -= 1;
        self.mask = saved;
        v
    }

    /// `c ? a : b`. A uniform condition branches; a varying one evaluates both sides
    /// under their masks (side effects happen only in their lanes), then selects.
    fn ternary(&mut self, cond: &Expr, then: &Expr, else_: &Expr, ty: TypeId) -> Val {
        if self
            .vec_len(self.cx.checked.converted_type(cond.id))
            .is_some()
        {
            let c = self.rvalue(cond);
            let a = self.rvalue(then);
            let b = self.rvalue(else_);
            return self.vector_select(c, a, b, ty);
        }
        let c = self.scalar(cond);
        if is_aggregate(&self.cx.types, ty) || self.cx.types.is_void(ty) {
            return self.ternary_mem(c, then, else_, ty);
        }
        let Some(t) = ir_type(&self.cx.types, ty) else {
            return Val::None;
        };
        if !self.ty(c).varying {
            let tb = self.new_block();
            let eb = self.new_block();
            let join = self.new_block();
            let param = self.func.append_block_param(join, t);
            self.brif(c, tb, eb);
            for (b, side) in [(tb, then), (eb, else_)] {
                self.switch_to(b);
                let v = self.scalar(side);
                let v = if t.varying { self.splat(v) } else { v };
                self.jump_args(join, &[v]);
            }
            self.switch_to(join);
            return Val::S(param);
        }
        let m = self.cur_mask();
        let tm = self.and(m, c);
        let nc = self.not(c);
        let em = self.and(m, nc);
        let tv = self.under_mask(tm, then, t);
        let ev = self.under_mask(em, else_, t);
        Val::S(self.select(c, tv, ev))
    }

    /// `?:` on aggregates (or `void`): each side stores into a temporary under its mask.
    fn ternary_mem(&mut self, c: Value, then: &Expr, else_: &Expr, ty: TypeId) -> Val {
        let tmp = (!self.cx.types.is_void(ty)).then(|| self.temp_place(ty));
        let m = self.cur_mask();
        let (tm, em) = if self.ty(c).varying {
            let nc = self.not(c);
            (self.and(m, c), self.and(m, nc))
        } else {
            let t = self.select(c, m, m);
            let z = self.all_off();
            let tm = self.select(c, t, z);
            let em = self.select(c, z, t);
            (tm, em)
        };
        for (side, sm) in [(then, tm), (else_, em)] {
            let body = self.new_block();
            let next = self.new_block();
            let any = self.any(sm);
            self.brif(any, body, next);
            self.switch_to(body);
            let saved = self.mask;
            self.mask = Some(sm);
            let v = self.rvalue(side);
            if let Some(p) = tmp {
                self.store_masked(p, v, sm);
            }
            self.mask = saved;
            self.jump(next);
            self.switch_to(next);
        }
        match tmp {
            Some(p) => Val::Mem(p),
            None => Val::None,
        }
    }

    // ------------------------------------------------------------ calls

    fn call(
        &mut self,
        e: &Expr,
        name: crate::front::intern::Symbol,
        args: &[Expr],
        ty: TypeId,
    ) -> Val {
        match self.cx.checked.res(e.id) {
            Res::BuiltinFn(BuiltinFn::Barrier) => {
                self.ins(InstData::Barrier);
                Val::None
            }
            Res::BuiltinFn(BuiltinFn::Print) => {
                self.print(args);
                Val::None
            }
            // A variable holding a function pointer.
            res @ (Res::Local(_) | Res::Global(_)) => match self.fn_ptr_variable(res) {
                Some((fty, p)) => self.call_through(p, fty, args, ty),
                None => self.dummy(ty),
            },
            Res::Func(fid) => self.call_function(fid, name, args, ty),
            _ => self.dummy(ty),
        }
    }

    /// The type and value of the function pointer held by variable `res` (a local or
    /// global the call names).
    pub(super) fn fn_ptr_variable(&mut self, res: Res) -> Option<(TypeId, Value)> {
        let place = match res {
            Res::Local(l) => Some(self.local_place(l)),
            Res::Global(g) => self.cx.globals.get(&g).copied().map(|st| {
                let gty = self.cx.checked.globals[g].ty;
                self.storage_place(st, gty)
            }),
            _ => None,
        };
        match place.map(|p| (p.ty, self.load(p))) {
            Some((fty, Val::S(p))) => Some((fty, p)),
            _ => None,
        }
    }

    /// A call of function `fid` (named `name` in the source) with `args`: of its lowered
    /// body, or of a standard-library routine lowered in place.
    fn call_function<A: Borrow<Expr>>(
        &mut self,
        fid: FuncId,
        name: crate::front::intern::Symbol,
        args: &[A],
        ty: TypeId,
    ) -> Val {
        if self.cx.abis.contains_key(&fid) || self.cx.declare_stdlib_body(fid) {
            self.user_call(fid, args, ty)
        } else if self.cx.checked.funcs[fid].from_stdlib {
            let fname = self.cx.name(name);
            self.stdlib_call(fname, args, ty)
        } else {
            let fname = self.cx.name(name);
            self.unsupported(format!("calling `{fname}`, which has no definition,"));
            self.dummy(ty)
        }
    }

    /// `callee(args)` for a callee expression: a direct call when the pointer is a
    /// constant (`(&f)(x)`), else a dispatch on its value.
    fn call_ptr_expr(&mut self, callee: &Expr, args: &[Expr], ty: TypeId) -> Val {
        if let Some(ConstValue::Int(v)) = self.cx.checked.const_value(callee.id) {
            let target = usize::try_from(v - 1)
                .ok()
                .and_then(|i| self.cx.checked.fn_ptr_targets().get(i))
                .map(|&(f, _)| f);
            if let Some(f) = target {
                if self.cx.abis.contains_key(&f) || self.cx.declare_stdlib_body(f) {
                    return self.user_call(f, args, ty);
                }
            }
        }
        let fty = self.cx.checked.converted_type(callee.id);
        match self.rvalue(callee) {
            Val::S(p) => self.call_through(p, fty, args, ty),
            _ => self.dummy(ty),
        }
    }

    fn user_call<A: Borrow<Expr>>(
        &mut self,
        fid: crate::front::sema::FuncId,
        args: &[A],
        ty: TypeId,
    ) -> Val {
        let abi = self.cx.abis[&fid].clone();
        let mut vals: SmallVec<[Value; 6]> = SmallVec::new();
        let ret_place = abi.sret.then(|| self.temp_place(ty));
        if let Some(p) = ret_place {
            vals.push(p.addr);
        }
        if !self.call_args(fid, args, &abi, &mut vals) {
            return self.dummy(ty);
        }
        let mask = abi.sig.takes_mask.then(|| self.cur_mask());
        let r = match (mask, abi.sig.ret) {
            // After a masked `break`/`continue`/`return` the mask may be empty: skip
            // the call then (a recursive call would never end).
            (Some(m), ret) if self.epoch > 0 && ret_place.is_none() => {
                self.guarded_call(&abi, vals, m, ret)
            }
            _ => self.call_inst(abi.func, abi.sig.ret, vals, mask),
        };
        match (ret_place, r) {
            (Some(p), _) => Val::Mem(p),
            (None, Some(v)) => Val::S(v),
            _ => Val::None,
        }
    }

    /// Appends the IR arguments of a call of `fid` with `args` to `vals` (after any sret
    /// pointer): references as addresses, aggregates as copies, then the defaults of
    /// the parameters the call leaves out. False if an argument failed to lower.
    pub(super) fn call_args<A: Borrow<Expr>>(
        &mut self,
        fid: crate::front::sema::FuncId,
        args: &[A],
        abi: &super::CallAbi,
        vals: &mut SmallVec<[Value; 6]>,
    ) -> bool {
        let by_ref: SmallVec<[bool; 8]> = self.cx.checked.funcs[fid]
            .params
            .iter()
            .map(|p| p.by_ref)
            .collect();
        for (i, a) in args.iter().map(Borrow::borrow).enumerate() {
            if by_ref.get(i) == Some(&true) {
                vals.push(self.reference_addr(a));
                continue;
            }
            match self.rvalue(a) {
                Val::S(v) => vals.push(v),
                Val::Mem(p) => {
                    // By value: the callee gets a pointer to a copy.
                    let at = self.cx.checked.converted_type(a.id);
                    let tmp = self.temp_place(at);
                    let all = self.all_on();
                    self.copy(tmp, p, all);
                    vals.push(tmp.addr);
                }
                Val::None => return false,
            }
        }
        // The parameters the call leaves out take their default arguments (sema
        // checked that each has one).
        let params = &self.cx.checked.funcs[fid].params;
        let defaults: SmallVec<[_; 4]> = params[args.len().min(params.len())..]
            .iter()
            .map(|p| (p.default, p.ty))
            .collect();
        for (d, pty) in defaults {
            match d.map(|cv| self.const_value(cv, pty)) {
                Some(Val::S(v)) => vals.push(v),
                _ => return false,
            }
        }
        // Match the signature's variability (a uniform argument to a varying parameter
        // was converted by sema; this only guards the IR's typing).
        let n = vals.len();
        for (i, v) in vals.iter_mut().enumerate().take(n) {
            if let Some(pt) = abi.sig.params.get(i) {
                if pt.varying && !self.func.value_type(*v).varying {
                    *v = self.val(InstData::Splat { arg: *v });
                }
            }
        }
        true
    }

    /// `any(m) ? call : 0`.
    pub(super) fn guarded_call(
        &mut self,
        abi: &super::CallAbi,
        vals: SmallVec<[Value; 6]>,
        m: Value,
        ret: Option<Type>,
    ) -> Option<Value> {
        let call_b = self.new_block();
        let join = self.new_block();
        let param = ret.map(|t| self.func.append_block_param(join, t));
        let zero = ret.map(|t| self.zero(t));
        let any = self.any(m);
        let mut b = crate::ir::builder::FuncBuilder::new(&mut self.func);
        b.switch_to(self.block);
        b.set_span(self.span);
        let zargs: Vec<Value> = zero.into_iter().collect();
        b.brif(any, call_b, &[], join, &zargs);
        self.switch_to(call_b);
        // An `unmasked` callee takes no mask: `m` only guards the call then.
        let r = self.call_inst(abi.func, ret, vals, abi.sig.takes_mask.then_some(m));
        let rargs: Vec<Value> = r.into_iter().collect();
        self.jump_args(join, &rargs);
        self.switch_to(join);
        param
    }

    fn print(&mut self, args: &[Expr]) {
        let Some(first) = args.first() else { return };
        let ExprKind::Str(s) = &first.kind else {
            self.unsupported("a `print` format that is not a string literal");
            return;
        };
        let format = self.cx.string(s);
        let mut vals: SmallVec<[Value; 4]> = SmallVec::new();
        for a in &args[1..] {
            if let Val::S(v) = self.rvalue(a) {
                // A float16 prints as the float it equals.
                vals.push(self.widen_half(v));
            }
        }
        let mask = Some(self.cur_mask());
        self.ins(InstData::Print {
            format,
            args: vals,
            mask,
        });
    }
}

fn int_cc(op: Op, signed: bool) -> IntCC {
    match (op, signed) {
        (Op::Lt, true) => IntCC::Slt,
        (Op::Lt, false) => IntCC::Ult,
        (Op::Le, true) => IntCC::Sle,
        (Op::Le, false) => IntCC::Ule,
        (Op::Gt, true) => IntCC::Sgt,
        (Op::Gt, false) => IntCC::Ugt,
        (Op::Ge, true) => IntCC::Sge,
        (Op::Ge, false) => IntCC::Uge,
        (Op::Eq, _) => IntCC::Eq,
        _ => IntCC::Ne,
    }
}

/// Could evaluating `e` have an effect (a store, a call, a print)? An operator on
/// structs may call an overloaded operator, a function.
pub(super) fn has_side_effects(e: &Expr, checked: &crate::front::sema::Checked) -> bool {
    let effects = |x: &Expr| has_side_effects(x, checked);
    if checked.operator_call(e.id).is_some() {
        return true;
    }
    match &e.kind {
        ExprKind::Assign { .. }
        | ExprKind::Call { .. }
        | ExprKind::CallPtr { .. }
        | ExprKind::New(_) => true,
        ExprKind::Unary { op, operand } => {
            matches!(
                op,
                UnaryOp::PreInc | UnaryOp::PreDec | UnaryOp::PostInc | UnaryOp::PostDec
            ) || effects(operand)
        }
        ExprKind::Binary { lhs, rhs, .. } => effects(lhs) || effects(rhs),
        ExprKind::Ternary { cond, then, else_ } => effects(cond) || effects(then) || effects(else_),
        ExprKind::Cast { expr, .. } => effects(expr),
        ExprKind::Index { base, index } => effects(base) || effects(index),
        ExprKind::Member { base, .. } => effects(base),
        _ => false,
    }
}
