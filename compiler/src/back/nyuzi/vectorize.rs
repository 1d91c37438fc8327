//! Which uniform-typed values the Nyuzi instruction selector computes in vector
//! registers when the scalar datapath is off (`--no-scalar-datapath`): the mirror of
//! [`super::scalarize`], and the baseline that measures what scalar registers buy a
//! vector machine (issue 6; paper 003 on Nyuzi's scalar registers, and the dac-gpu
//! target's `--no-scalar-datapath`, which drops its `.uni`).
//!
//! Every uniform `i8`/`i16`/`i32`/`f32`/`ptr` value gets a vector form, all of whose
//! lanes hold the value ([`VectorForms::all`]). The values the scalar datapath would
//! *compute* are computed there, with vector instructions, on vectors
//! ([`VectorForms::computed`]):
//! * pure register operations (integer add/sub/mul, bitwise, shifts, min/max, f32
//!   add/sub/mul, negation, not, absolute value, leading/trailing zero counts, a
//!   conversion between those types);
//! * `select`s on a uniform `bool` (a predicated vector move: the bool is 0 or 0xffff,
//!   a full or empty lane mask);
//! * parameters of non-entry blocks (loop counters, accumulated addresses), whose
//!   incoming edges copy vectors.
//!
//! Their scalar form, which a scalar consumer still reads (a branch, a load or store
//! address, a call argument), is lane 0 taken with `getlane` where the value is
//! defined; dead-code removal drops it when nothing reads it. Compares of uniform
//! values are vector compares, whose 16-lane mask is 0 or 0xffff: the uniform bool.
//! The other uniform values (the entry's parameters, loads, calls, atomics, lane
//! operations, divisions: what needs memory, the runtime or control flow) are
//! produced in a scalar register as before and splatted once where they are defined,
//! so vector consumers do not splat them at every use.
//!
//! `bool`s, 64-bit values and everything varying are selected as usual. The Nyuzi ISA
//! has no vector branch or vector-addressed block access, so branches, uniform memory
//! accesses and calls keep their scalar instructions: this removes the scalar ALU
//! work, which is what a machine without a scalar datapath would do on its vector
//! unit.

use rustc_hash::FxHashSet;

use crate::ir::{Function, InstData, Scalar, UnaryOp, Value, ValueDef};

/// The uniform values with a vector form, and those computed in it.
#[derive(Clone, Debug, Default)]
pub struct VectorForms {
    /// Every uniform value with a vector form.
    pub all: FxHashSet<Value>,
    /// Those computed with vector instructions (the rest are splatted at their
    /// definition).
    pub computed: FxHashSet<Value>,
}

/// Whether a uniform value of element type `s` gets a vector form.
fn has_vector_form(s: Scalar) -> bool {
    matches!(
        s,
        Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::F32 | Scalar::Ptr
    )
}

fn vector_unary(op: UnaryOp) -> bool {
    matches!(
        op,
        UnaryOp::Ineg | UnaryOp::Bnot | UnaryOp::Fneg | UnaryOp::Fabs | UnaryOp::Clz | UnaryOp::Ctz
    )
}

/// Whether the uniform value `v` (with a vector form) is computed in vector
/// registers.
fn computed_in_vectors(f: &Function, v: Value) -> bool {
    match f.values[v].def {
        ValueDef::Param(b, _) => Some(b) != f.entry_block(),
        ValueDef::Result(i) => match &f.insts[i] {
            InstData::Unary { op, .. } => vector_unary(*op),
            // The operations the scalarization moves the other way.
            InstData::Binary { op, .. } => super::scalarize::allowed_binary(*op),
            InstData::Convert { arg, .. } => has_vector_form(f.value_type(*arg).scalar),
            InstData::Select { args } => !f.value_type(args[0]).varying,
            _ => false,
        },
    }
}

/// The vector forms of `f`'s uniform values.
pub fn vector_forms(f: &Function) -> VectorForms {
    let mut forms = VectorForms::default();
    for (v, _) in f.values.iter() {
        let ty = f.value_type(v);
        if ty.varying || !has_vector_form(ty.scalar) {
            continue;
        }
        forms.all.insert(v);
        if computed_in_vectors(f, v) {
            forms.computed.insert(v);
        }
    }
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(f: &Function, n: u32) -> Value {
        use cranelift_entity::EntityRef;
        let v = Value::new(n as usize);
        assert!(f.values.is_valid(v), "v{n} exists");
        v
    }

    #[test]
    fn arithmetic_selects_and_loop_values_are_computed_in_vectors() {
        let m = crate::ir::parse_module(
            "module lanes 16 ptr 4
function export @f(i32, ptr) -> i32 {
block0(v0: i32, v1: ptr):
    v2 = iconst.i32 0
    jump block1(v2)
block1(v3: i32):
    v4 = load.i32 global v1
    v5 = iadd v3, v4
    v6 = sdiv v5, v0
    v7 = icmp slt v5, v0
    v8 = select v7, v5, v6
    brif v7, block1(v8), block2
block2:
    return v3
}
",
        )
        .expect("IR parses");
        let f = m.functions.values().next().expect("one function");
        let forms = vector_forms(f);
        let v = |n| value(f, n);
        for n in [0, 1, 2, 3, 4, 5, 6, 8] {
            assert!(forms.all.contains(&v(n)), "v{n} has a vector form");
        }
        // The bool has none; parameters of the entry, constants, loads and
        // divisions are splatted; the rest is computed in vectors.
        assert!(!forms.all.contains(&v(7)));
        for n in [0, 1, 2, 4, 6] {
            assert!(!forms.computed.contains(&v(n)), "v{n} is splatted");
        }
        for n in [3, 5, 8] {
            assert!(
                forms.computed.contains(&v(n)),
                "v{n} is computed in vectors"
            );
        }
    }
}
