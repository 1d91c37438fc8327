//! Semantic types to IR types, and the scalar leaves of aggregates.

use crate::front::sema::{Prim, Target, TypeId, TypeKind, Types, Variability};
use crate::ir::{Scalar, Type};

/// The IR element type of a scalar semantic type (basic types, enums, pointers).
pub(super) fn scalar_of(types: &Types, ty: TypeId) -> Option<Scalar> {
    Some(match types.kind(ty) {
        TypeKind::Prim(p) => prim_scalar(p),
        TypeKind::Enum(_) => Scalar::I32,
        TypeKind::Pointer(_) | TypeKind::Null => Scalar::Ptr,
        TypeKind::FnPtr(_) => super::fn_ptr::FN_PTR,
        _ => return None,
    })
}

pub(super) fn prim_scalar(p: Prim) -> Scalar {
    match p {
        Prim::Bool => Scalar::Bool,
        Prim::Int8 | Prim::UInt8 => Scalar::I8,
        Prim::Int16 | Prim::UInt16 => Scalar::I16,
        Prim::Int32 | Prim::UInt32 => Scalar::I32,
        Prim::Int64 | Prim::UInt64 => Scalar::I64,
        Prim::Float => Scalar::F32,
        Prim::Double => Scalar::F64,
        Prim::Float16 => Scalar::F16,
    }
}

/// The IR type of a scalar semantic type, with its variability (unbound counts as
/// uniform), or `None` for aggregates and `void`.
pub(super) fn ir_type(types: &Types, ty: TypeId) -> Option<Type> {
    let scalar = scalar_of(types, ty)?;
    Some(Type {
        scalar,
        varying: types.var(ty) == Variability::Varying,
    })
}

/// Structs, arrays and short vectors: values that live in memory. A short vector's
/// value is an object of its layout (sema's), and every operation on it is lowered
/// element by element: the IR and the back ends see only its scalar elements.
pub(super) fn is_aggregate(types: &Types, ty: TypeId) -> bool {
    matches!(
        types.kind(ty),
        TypeKind::Struct(_) | TypeKind::Array(..) | TypeKind::Vector(..) | TypeKind::Soa(..)
    )
}

/// Element `i` of a short vector of type `ty` (as laid out): its byte offset and type.
pub(super) fn vector_elem(types: &mut Types, target: Target, ty: TypeId, i: u32) -> (u32, TypeId) {
    let elem = types.vector_elem(ty);
    let size = types.layout(elem, target).size;
    (i * size, elem)
}

/// How a scalar converts: its arithmetic kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Num {
    Bool,
    Int { bits: u32, signed: bool },
    Float { bits: u32 },
    Ptr,
}

pub(super) fn num_of(types: &Types, ty: TypeId) -> Option<Num> {
    Some(match types.kind(ty) {
        TypeKind::Prim(p) => prim_num(p),
        TypeKind::Enum(_) => Num::Int {
            bits: 32,
            signed: true,
        },
        TypeKind::Pointer(_) | TypeKind::Null => Num::Ptr,
        // A function's number (see `fn_ptr`): compared and converted as an integer.
        TypeKind::FnPtr(_) => Num::Int {
            bits: 32,
            signed: false,
        },
        _ => return None,
    })
}

pub(super) fn prim_num(p: Prim) -> Num {
    match p {
        Prim::Bool => Num::Bool,
        Prim::Float => Num::Float { bits: 32 },
        Prim::Double => Num::Float { bits: 64 },
        Prim::Float16 => Num::Float { bits: 16 },
        _ => Num::Int {
            bits: p.bits(),
            signed: p.is_signed(),
        },
    }
}

/// Every scalar leaf of a type: its byte offset in the object and its type (as laid out:
/// a varying leaf is a block of `programCount` elements). Unknown-size arrays have no
/// leaves.
pub(super) fn leaves(types: &mut Types, target: Target, ty: TypeId) -> Vec<(u32, TypeId)> {
    let mut out = Vec::new();
    walk_leaves(types, target, ty, 0, &mut out, 0);
    out
}

fn walk_leaves(
    types: &mut Types,
    target: Target,
    ty: TypeId,
    base: u32,
    out: &mut Vec<(u32, TypeId)>,
    depth: u32,
) {
    if depth > 64 {
        return;
    }
    match types.kind(ty) {
        TypeKind::Array(elem, n) => {
            let size = types.layout(elem, target).size;
            for i in 0..n.unwrap_or(0) {
                walk_leaves(types, target, elem, base + i * size, out, depth + 1);
            }
        }
        TypeKind::Struct(sid) => {
            let var = types.var(ty);
            let offsets = types.structs[sid].layout(var).offsets.clone();
            for (i, off) in offsets.into_iter().enumerate() {
                let f = types.member_type(ty, i);
                walk_leaves(types, target, f, base + off, out, depth + 1);
            }
        }
        TypeKind::Vector(_, n) => {
            for i in 0..n {
                let (off, elem) = vector_elem(types, target, ty, i);
                out.push((base + off, elem));
            }
        }
        // An soa block: its members' soa forms, in memory order.
        TypeKind::Soa(sid, width) => {
            let offsets = types.soa_layout(sid, width, target).offsets;
            for (i, off) in offsets.into_iter().enumerate() {
                let f = types.soa_member_type(ty, i, target);
                walk_leaves(types, target, f, base + off, out, depth + 1);
            }
        }
        TypeKind::Void | TypeKind::Error | TypeKind::Dim3(_) => {}
        _ => out.push((base, ty)),
    }
}
