//! Implicit conversions: which exist, what they cost (ISPC's overload ranks), the usual
//! arithmetic conversions, and a step-by-step description for lowering.
//!
//! The one rule that makes SPMD typing special: a uniform value widens to varying
//! (a broadcast) implicitly; a varying value never narrows to uniform.

use super::types::{Prim, TypeId, TypeKind, Types, Variability};

/// Why a value cannot be converted implicitly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ConvError {
    /// The shapes would convert, but the value is varying and the target uniform.
    VaryingToUniform,
    /// The shapes do not convert implicitly (a cast may still work).
    Incompatible,
}

/// The cost of an implicit conversion, cheapest first. These are ISPC's overload ranks
/// (exact, const, the reference bindings, lossless widening, uniform→varying, arbitrary
/// conversion, and the combinations with uniform→varying).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Cost {
    Exact = 0,
    AddConst = 1,
    /// An object bound to a reference parameter of its type: worse than passing it by
    /// value, so `f(float)` wins over `f(float &)` for a plain variable (ISPC's rule).
    BindRef = 2,
    /// A reference (a reference variable, a call returning one) passed by value.
    RefToValue = 3,
    /// A non-`const` object, or a temporary, bound to a `const` reference.
    BindConstRef = 4,
    Widen = 5,
    Broadcast = 6,
    Convert = 7,
    WidenBroadcast = 8,
    ConvertBroadcast = 9,
}

impl Cost {
    /// ISPC's weight for this conversion in an overload's total cost
    /// (`computeOverloadCost`): the buckets are spaced so that the next worse
    /// conversion of one argument outweighs better ones of all the others.
    pub(super) fn ispc_weight(self) -> u64 {
        match self {
            Cost::Exact => 0,
            Cost::AddConst => 1,
            Cost::BindRef => 2,
            Cost::RefToValue => 3,
            Cost::BindConstRef => 4,
            Cost::Widen => 8,
            Cost::Broadcast => 16,
            Cost::Convert => 64,
            Cost::WidenBroadcast => 128,
            Cost::ConvertBroadcast => 192,
        }
    }

    fn with_broadcast(self) -> Cost {
        match self {
            Cost::Exact
            | Cost::AddConst
            | Cost::BindRef
            | Cost::RefToValue
            | Cost::BindConstRef
            | Cost::Broadcast => Cost::Broadcast,
            Cost::Widen | Cost::WidenBroadcast => Cost::WidenBroadcast,
            Cost::Convert | Cost::ConvertBroadcast => Cost::ConvertBroadcast,
        }
    }
}

/// One step of an implicit conversion, in the order lowering applies them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvStep {
    /// An array becomes a uniform pointer to its first element.
    ArrayDecay,
    /// An enum value becomes an `int`.
    EnumToInt,
    /// A numeric conversion between basic types (including to/from `bool`).
    Numeric { from: Prim, to: Prim },
    /// `NULL` or the constant `0` becomes a null pointer.
    NullToPointer,
    /// A pointer becomes another pointer type (to `void`, or adding `const`): a no-op
    /// on the bits.
    PointerCast,
    /// A uniform value is replicated into every program instance.
    Broadcast,
    /// A scalar becomes a short vector with the value in every element (after any
    /// `Numeric` step to the element type).
    ScalarToVector { len: u32 },
}

/// Does `to` represent every value of `from` (a conversion that loses nothing)?
pub(super) fn lossless(from: Prim, to: Prim) -> bool {
    if from == to || from == Prim::Bool {
        return true;
    }
    if to == Prim::Bool {
        return false;
    }
    if from.is_integer() && to.is_integer() {
        return to.bits() > from.bits() && (to.is_signed() || !from.is_signed());
    }
    if from.is_integer() && to.is_float() {
        let significand = match to {
            Prim::Float16 => 8,
            Prim::Float => 16,
            _ => 32,
        };
        return from.bits() <= significand;
    }
    from.is_float() && to.is_float() && to.bits() > from.bits()
}

/// Does `from → to` risk losing range or precision badly enough to warn (W0005)?
/// Floating to integer, to a narrower float (`double` to `float`, either to `float16`),
/// and integer to a narrower integer.
pub(super) fn narrowing(from: Prim, to: Prim) -> bool {
    (from.is_float() && to.is_integer())
        || (from.is_float() && to.is_float() && to.bits() < from.bits())
        || (from.is_integer() && to.is_integer() && to.bits() < from.bits())
}

/// The common type of two arithmetic operands: the more general one in ISPC's order.
pub(super) fn common_prim(a: Prim, b: Prim) -> Prim {
    if a.rank() >= b.rank() {
        a
    } else {
        b
    }
}

/// The cost of converting a value of type `from` to `to` implicitly, or why it cannot.
/// `null_const` says the value is the integer constant 0, which converts to a pointer.
pub(super) fn implicit_cost(
    types: &mut Types,
    from: TypeId,
    to: TypeId,
    null_const: bool,
) -> Result<Cost, ConvError> {
    if from == to || types.is_error(from) || types.is_error(to) {
        return Ok(Cost::Exact);
    }
    let fd = types.get(from);
    let td = types.get(to);
    // Arrays decay to a uniform pointer to their first element.
    if let (TypeKind::Array(elem, _), TypeKind::Pointer(_)) = (fd.kind, td.kind) {
        let decayed = types.pointer(elem, Variability::Uniform, false);
        return implicit_cost(types, decayed, to, false);
    }
    if fd.var == Variability::Varying && td.var == Variability::Uniform {
        // Check the shapes first: a struct given for an int is a type error, not a
        // variability error.
        return match shape_cost(types, from, to, null_const) {
            Ok(_) => Err(ConvError::VaryingToUniform),
            Err(e) => Err(e),
        };
    }
    let cost = shape_cost(types, from, to, null_const)?;
    let broadcast = fd.var != Variability::Varying && td.var == Variability::Varying;
    Ok(if broadcast {
        cost.with_broadcast()
    } else {
        cost
    })
}

/// The cost of converting the shape (ignoring the outer variability).
fn shape_cost(
    types: &Types,
    from: TypeId,
    to: TypeId,
    null_const: bool,
) -> Result<Cost, ConvError> {
    let fd = types.get(from);
    let td = types.get(to);
    use TypeKind as K;
    let prim_cost = |a: Prim, b: Prim| {
        if a == b {
            Cost::Exact
        } else if lossless(a, b) {
            Cost::Widen
        } else {
            Cost::Convert
        }
    };
    match (fd.kind, td.kind) {
        (K::Prim(a), K::Prim(b)) => Ok(prim_cost(a, b)),
        // Short vectors convert element by element, between equal lengths only; a
        // scalar (or an enumerator, as its `int`) fills every element.
        (K::Vector(a, n), K::Vector(b, m)) if n == m => Ok(prim_cost(a, b)),
        (K::Prim(a), K::Vector(b, _)) => Ok(prim_cost(a, b).max(Cost::Widen)),
        (K::Enum(_), K::Vector(b, _)) => Ok(prim_cost(Prim::Int32, b).max(Cost::Widen)),
        // An enumerator converts as the `int` it is (C's rule, which ISPC keeps: to
        // any arithmetic type, `float` included).
        (K::Enum(_), K::Prim(b)) => Ok(
            if (b.is_integer() && b.bits() >= 32) || lossless(Prim::Int32, b) {
                Cost::Widen
            } else {
                Cost::Convert
            },
        ),
        (K::Enum(a), K::Enum(b)) if a == b => Ok(Cost::Exact),
        (K::Null, K::Pointer(_)) | (K::Null, K::Null) => Ok(Cost::Convert),
        (K::Prim(p), K::Pointer(_)) if null_const && p.is_integer() => Ok(Cost::Convert),
        (K::Pointer(p), K::Pointer(q)) => pointee_cost(types, p, q),
        // Function pointers convert only between equal signatures (and from `NULL`/0).
        (K::FnPtr(a), K::FnPtr(b)) if a == b => Ok(Cost::Exact),
        (K::Null, K::FnPtr(_)) => Ok(Cost::Convert),
        (K::Prim(p), K::FnPtr(_)) if null_const && p.is_integer() => Ok(Cost::Convert),
        (K::Struct(a), K::Struct(b)) if a == b => Ok(Cost::Exact),
        (K::Soa(a, n), K::Soa(b, m)) if a == b && n == m => Ok(Cost::Exact),
        (K::Void, K::Void) => Ok(Cost::Exact),
        _ => Err(ConvError::Incompatible),
    }
}

/// Pointer to `p` → pointer to `q`: the same pointee, or adding `const`, or to `void`
/// (keeping `const`).
fn pointee_cost(types: &Types, p: TypeId, q: TypeId) -> Result<Cost, ConvError> {
    if p == q {
        return Ok(Cost::Exact);
    }
    let pd = types.get(p);
    let qd = types.get(q);
    if pd.is_const && !qd.is_const {
        return Err(ConvError::Incompatible);
    }
    // A pointer to soa data addresses an element within a block: it converts only to
    // a pointer to the same soa type (ISPC: not even to `void *`).
    if matches!(pd.kind, TypeKind::Soa(..)) || matches!(qd.kind, TypeKind::Soa(..)) {
        return match pd.kind == qd.kind {
            true => Ok(Cost::AddConst),
            false => Err(ConvError::Incompatible),
        };
    }
    if qd.kind == TypeKind::Void {
        return Ok(Cost::Convert);
    }
    // Rows of a multi-dimensional array (`float (*)[3]` to `const float (*)[3]`): the
    // elements may gain `const` too.
    if let (TypeKind::Array(pe, pn), TypeKind::Array(qe, qn)) = (pd.kind, qd.kind) {
        if pn == qn && pd.var == qd.var && !types.is_void(qe) {
            return pointee_cost(types, pe, qe);
        }
    }
    let same_but_const = pd.kind == qd.kind && pd.var == qd.var;
    if same_but_const {
        Ok(Cost::AddConst)
    } else {
        Err(ConvError::Incompatible)
    }
}

/// The steps that turn a value of type `from` into `to`, for lowering. Empty when the
/// types are equal or either is the error type.
pub fn describe_conversion(types: &Types, from: TypeId, to: TypeId) -> Vec<ConvStep> {
    let mut steps = Vec::new();
    if from == to || types.is_error(from) || types.is_error(to) {
        return steps;
    }
    let fd = types.get(from);
    let td = types.get(to);
    use TypeKind as K;
    match (fd.kind, td.kind) {
        (K::Array(..), K::Pointer(_)) => {
            steps.push(ConvStep::ArrayDecay);
            if types.get(to).var == Variability::Varying {
                steps.push(ConvStep::Broadcast);
            }
            return steps;
        }
        (K::Prim(a), K::Prim(b)) if a != b => steps.push(ConvStep::Numeric { from: a, to: b }),
        (K::Vector(a, _), K::Vector(b, _)) if a != b => {
            steps.push(ConvStep::Numeric { from: a, to: b })
        }
        (K::Prim(_) | K::Enum(_), K::Vector(b, len)) => {
            let a = types.arith_prim(from).unwrap_or(Prim::Int32);
            if matches!(fd.kind, K::Enum(_)) {
                steps.push(ConvStep::EnumToInt);
            }
            if a != b {
                steps.push(ConvStep::Numeric { from: a, to: b });
            }
            steps.push(ConvStep::ScalarToVector { len });
        }
        (K::Enum(_), K::Prim(b)) => {
            steps.push(ConvStep::EnumToInt);
            if b != Prim::Int32 {
                steps.push(ConvStep::Numeric {
                    from: Prim::Int32,
                    to: b,
                });
            }
        }
        (K::Null | K::Prim(_), K::Pointer(_) | K::FnPtr(_)) => steps.push(ConvStep::NullToPointer),
        (K::Pointer(p), K::Pointer(q)) if p != q => steps.push(ConvStep::PointerCast),
        _ => {}
    }
    if fd.var != Variability::Varying && td.var == Variability::Varying {
        steps.push(ConvStep::Broadcast);
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lossless_widening() {
        assert!(lossless(Prim::Int16, Prim::Int32));
        assert!(lossless(Prim::UInt8, Prim::Int16));
        assert!(!lossless(Prim::Int32, Prim::UInt64));
        assert!(lossless(Prim::Int16, Prim::Float));
        assert!(!lossless(Prim::Int32, Prim::Float));
        assert!(lossless(Prim::Int32, Prim::Double));
        assert!(lossless(Prim::Float, Prim::Double));
        assert!(!lossless(Prim::Double, Prim::Float));
        assert!(!lossless(Prim::Int32, Prim::Bool));
    }

    #[test]
    fn ispc_promotion_order() {
        assert_eq!(common_prim(Prim::Int64, Prim::Float), Prim::Int64);
        assert_eq!(common_prim(Prim::UInt32, Prim::Float), Prim::Float);
        assert_eq!(common_prim(Prim::Int8, Prim::UInt8), Prim::UInt8);
        assert_eq!(common_prim(Prim::Double, Prim::UInt64), Prim::Double);
    }

    #[test]
    fn costs() {
        let mut t = Types::new();
        let ui = t.prim(Prim::Int32, Variability::Uniform);
        let vi = t.prim(Prim::Int32, Variability::Varying);
        let vf = t.prim(Prim::Float, Variability::Varying);
        assert_eq!(implicit_cost(&mut t, ui, vi, false), Ok(Cost::Broadcast));
        assert_eq!(
            implicit_cost(&mut t, vi, ui, false),
            Err(ConvError::VaryingToUniform)
        );
        assert_eq!(
            implicit_cost(&mut t, ui, vf, false),
            Ok(Cost::ConvertBroadcast)
        );
        let uf = t.prim(Prim::Float, Variability::Uniform);
        let arr = t.array(uf, Some(4));
        let p = t.pointer(uf, Variability::Uniform, false);
        assert_eq!(implicit_cost(&mut t, arr, p, false), Ok(Cost::Exact));
    }
}
