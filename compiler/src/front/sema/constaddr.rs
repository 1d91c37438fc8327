//! Address constants: the initializers of pointer-typed file-scope and `static`
//! variables that name another such object (`&a`, `&m[1][2]`, `&s.f`, `table + 5`, an
//! array that decays to its first element, and casts of those), as C and ISPC allow.
//!
//! The value is an object plus a byte offset; the object's address is known only when
//! the program is loaded, so lowering records a relocation (`ir::DataReloc`) that the
//! loader of each target resolves. Offsets follow the target's layout of the types,
//! as the program's own address arithmetic does; an index or offset that is not an
//! integer constant, or a base that is not a file-scope or `static` object (a local,
//! a parameter, a `shared` variable), makes the initializer not constant (E0315).

use super::types::TypeKind;
use super::{Checker, LocalKind, Res};
use crate::front::ast::{BinaryOp, Expr, ExprKind, UnaryOp};

/// The object an address constant points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrBase {
    Global(super::GlobalId),
    /// A `static` local (one object for the program, as a global).
    Static(super::LocalId),
}

/// `base`'s address plus `offset` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstAddress {
    pub base: AddrBase,
    pub offset: i64,
}

impl ConstAddress {
    fn plus(self, bytes: i64) -> Option<ConstAddress> {
        Some(ConstAddress {
            offset: self.offset.checked_add(bytes)?,
            ..self
        })
    }
}

/// Deepest expression the evaluator descends into (as `consteval`'s).
const MAX_DEPTH: u32 = 256;

impl Checker<'_> {
    /// The address constant `e` evaluates to, as a pointer value.
    pub(super) fn eval_address(&self, e: &Expr) -> Option<ConstAddress> {
        self.address_value(e, 0)
    }

    /// The value of pointer-typed (or array-typed, decaying) `e`.
    fn address_value(&self, e: &Expr, depth: u32) -> Option<ConstAddress> {
        if depth > MAX_DEPTH {
            return None;
        }
        let d = depth + 1;
        if let TypeKind::Array(..) = self.out.types.kind(self.out.type_of(e.id)) {
            return self.object_address(e, d);
        }
        match &e.kind {
            ExprKind::Unary {
                op: UnaryOp::AddrOf,
                operand,
            } => self.object_address(operand, d),
            ExprKind::Cast { expr, .. } => self.address_value(expr, d),
            ExprKind::Binary {
                op: op @ (BinaryOp::Add | BinaryOp::Sub),
                lhs,
                rhs,
            } => {
                let (pointer, count) = if self.is_address(lhs) {
                    (lhs, rhs)
                } else if *op == BinaryOp::Add && self.is_address(rhs) {
                    (rhs, lhs)
                } else {
                    return None;
                };
                let ptr = self.address_value(pointer, d)?;
                let n = self.eval_const(count)?.as_int()?;
                let n = if *op == BinaryOp::Sub {
                    n.checked_neg()?
                } else {
                    n
                };
                let step = self.element_bytes(self.out.converted_type(pointer.id))?;
                ptr.plus(i64::try_from(n.checked_mul(i128::from(step))?).ok()?)
            }
            _ => None,
        }
    }

    /// The address of the object lvalue `e` names.
    fn object_address(&self, e: &Expr, depth: u32) -> Option<ConstAddress> {
        if depth > MAX_DEPTH {
            return None;
        }
        let d = depth + 1;
        match &e.kind {
            ExprKind::Ident(_) => {
                let base = match self.out.res(e.id) {
                    // A `shared` variable has an object per block: no one address.
                    Res::Global(g) if !self.out.globals[g].shared => AddrBase::Global(g),
                    Res::Local(l) if self.out.locals[l].kind == LocalKind::Static => {
                        AddrBase::Static(l)
                    }
                    _ => return None,
                };
                Some(ConstAddress { base, offset: 0 })
            }
            ExprKind::Index { base, index } => {
                let base_ty = self.out.type_of(base.id);
                let start = match self.out.types.kind(base_ty) {
                    TypeKind::Array(..) => self.object_address(base, d)?,
                    TypeKind::Pointer(_) => self.address_value(base, d)?,
                    _ => return None,
                };
                let i = self.eval_const(index)?.as_int()?;
                let step = self.element_bytes(base_ty)?;
                start.plus(i64::try_from(i.checked_mul(i128::from(step))?).ok()?)
            }
            ExprKind::Member { base, arrow, .. } => {
                let start = if *arrow {
                    self.address_value(base, d)?
                } else {
                    self.object_address(base, d)?
                };
                let struct_ty = if *arrow {
                    self.out.types.pointee(self.out.type_of(base.id))?
                } else {
                    self.out.type_of(base.id)
                };
                let TypeKind::Struct(sid) = self.out.types.kind(struct_ty) else {
                    return None;
                };
                let field = self.out.member_index(e.id)? as usize;
                let var = self.out.types.var(struct_ty);
                let offset = *self.out.types.structs[sid].layout(var).offsets.get(field)?;
                start.plus(i64::from(offset))
            }
            ExprKind::Unary {
                op: UnaryOp::Deref,
                operand,
            } => self.address_value(operand, d),
            _ => None,
        }
    }

    /// Whether `e` is a pointer or an array (which decays to one) where it is used.
    fn is_address(&self, e: &Expr) -> bool {
        matches!(
            self.out.types.kind(self.out.converted_type(e.id)),
            TypeKind::Pointer(_) | TypeKind::Array(..)
        )
    }

    /// Bytes between consecutive elements of an array type or a pointer's pointee.
    fn element_bytes(&self, ty: super::TypeId) -> Option<u32> {
        let elem = match self.out.types.kind(ty) {
            TypeKind::Array(elem, _) | TypeKind::Pointer(elem) => elem,
            _ => return None,
        };
        // An soa element steps by parts of a block, not by whole types.
        if matches!(self.out.types.kind(elem), TypeKind::Soa(..)) {
            return None;
        }
        Some(self.out.layout(elem).size).filter(|&s| s > 0)
    }
}
