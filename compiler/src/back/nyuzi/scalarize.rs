//! Which varying-typed values the Nyuzi instruction selector computes once, in a
//! scalar register with scalar instructions (issue 6, point 2: uniform values live in
//! scalar registers).
//!
//! A value is scalarized when its type is a varying `i8`/`i16`/`i32`/`f32`, the
//! uniformity analysis proves it uniform, and it is one of:
//! * a constant (`iconst`/`fconst`, or a `splat` of one);
//! * a `splat` of a uniform value;
//! * a pure register operation (integer add/sub/mul, bitwise, shifts, min/max, f32
//!   add/sub/mul, negation, not, absolute value, a conversion between those types)
//!   whose varying operands are all scalarized, or a `select` of such operands on a
//!   uniform condition (a uniform `bool`, or a mask the analysis proves uniform);
//! * a parameter of a non-entry block whose incoming arguments on every edge are all
//!   scalarized;
//! * a `select` or `band` that stands for one of its operands because its mask is
//!   full ([`super::masks`]), when that operand is scalarized (no analysis needed).
//!
//! Selects on a varying mask are scalarized only in functions whose entry-active
//! lanes are the existing lanes ([`super::masks::lane0_function`]): there lane 0's
//! bit of a uniform mask decides for the gang; elsewhere lane 0 may be off.
//!
//! **Uniform among a region's lanes.** The same rules apply to values the analysis
//! finds uniform only among the lanes of a divergent region's mask `G`
//! ([`FunctionUniformity::uniform_in`], e.g. a loop counter inside a divergent `if`):
//! their scalar is the value of `G`'s lanes and the splat a vector consumer reads is
//! wrong outside `G`, where the analysis proved nothing looks. A select among such
//! values on a varying condition `c` (uniform in `G`, or `G` itself) is decided by
//! `c & G` being non-zero ([`FunctionUniformity::select_region`]); this needs no lane 0. A compare of
//! scalarized values writes 0 or 0xffff, right in `G`'s lanes, which the analysis
//! counts as such a partial value too. A load of one element from an address uniform
//! in `G` is scalarized too (a scalar load when a lane of its mask is on).
//!
//! Varying-typed pointers (32 bits here) are scalarized like `i32` values, so the
//! address of a table entry indexed by such a counter is scalar too.
//!
//! The set is the greatest fixed point of these rules (loop counters feed themselves
//! through their block parameter). Every lane of such a value holds the same bits by
//! construction (control flow in the IR is uniform and these operations are not
//! masked), so one scalar computation plus a splat where a vector consumer reads it
//! gives the same lanes. Division, remainder, other loads, lane operations, masks
//! and 64-bit values stay vector.

use rustc_hash::{FxHashMap, FxHashSet};

use super::masks::MaskFacts;
use crate::analysis::uniformity::FunctionUniformity;
use crate::ir::{BinaryOp, Block, Function, InstData, Scalar, UnaryOp, Value, ValueDef};

/// Whether `s` is an element type the scalarization handles.
fn allowed_scalar(s: Scalar) -> bool {
    matches!(s, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::F32)
}

/// Whether the varying pointer `v` may be scalarized (32 bits on Nyuzi): a value
/// uniform only among a region's lanes (the address of a table entry indexed by a
/// loop counter inside a divergent `if`), or a uniform one (what such an address is
/// computed from, including the strength-reduced copy's start value).
fn pointer_candidate(f: &Function, uni: &FunctionUniformity, v: Value) -> bool {
    f.value_type(v).scalar == Scalar::Ptr && (uni.uniform_in(v).is_some() || uni.is_uniform(v))
}

/// Binary operations with one scalar and one vector instruction each.
pub(super) fn allowed_binary(op: BinaryOp) -> bool {
    use BinaryOp::*;
    matches!(
        op,
        Iadd | Isub
            | Imul
            | Band
            | Bor
            | Bxor
            | Ishl
            | Sshr
            | Ushr
            | Smin
            | Smax
            | Umin
            | Umax
            | Fadd
            | Fsub
            | Fmul
    )
}

fn allowed_unary(op: UnaryOp) -> bool {
    matches!(
        op,
        UnaryOp::Ineg | UnaryOp::Bnot | UnaryOp::Fneg | UnaryOp::Fabs
    )
}

/// The incoming arguments of every block parameter, over all jumps and branches.
fn incoming(f: &Function) -> FxHashMap<(Block, usize), Vec<Value>> {
    let mut map: FxHashMap<(Block, usize), Vec<Value>> = FxHashMap::default();
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            let calls = match &f.insts[i] {
                InstData::Jump { dest } => vec![dest],
                InstData::Brif {
                    then_dest,
                    else_dest,
                    ..
                } => vec![then_dest, else_dest],
                _ => continue,
            };
            for call in calls {
                for (k, &a) in call.args.iter().enumerate() {
                    map.entry((call.block, k)).or_default().push(a);
                }
            }
        }
    }
    map
}

/// The operands a candidate depends on (`None`: not a candidate at all).
fn operands(
    f: &Function,
    uni: &FunctionUniformity,
    facts: &MaskFacts,
    v: Value,
    inc: &FxHashMap<(Block, usize), Vec<Value>>,
) -> Option<Vec<Value>> {
    let entry = f.entry_block();
    match f.values[v].def {
        ValueDef::Param(b, k) => {
            if Some(b) == entry {
                return None;
            }
            inc.get(&(b, k as usize)).cloned()
        }
        ValueDef::Result(i) => match &f.insts[i] {
            InstData::Iconst { .. } | InstData::Fconst { .. } | InstData::Splat { .. } => {
                Some(Vec::new())
            }
            InstData::Unary { op, arg } if allowed_unary(*op) => Some(vec![*arg]),
            InstData::Binary { op, args } if allowed_binary(*op) => Some(args.to_vec()),
            InstData::Convert { arg, .. } => Some(vec![*arg]),
            // One element from an address uniform among a region's lanes: the selector
            // loads it once when a lane of the mask is on (0 otherwise), as for a
            // uniform address. The analysis keeps such a load only when its mask is an
            // exact subset of the region mask, so "a lane is on" means "the region's
            // lanes read".
            InstData::Load { ty, addr, .. }
                if !ty.varying
                    && uni.uniform_in(v).is_some()
                    && uni.uniform_in(*addr) == uni.uniform_in(v) =>
            {
                Some(vec![*addr])
            }
            // A select on a uniform condition (a uniform bool, or a mask the analysis
            // proves uniform) picks one operand for every lane.
            InstData::Select { args } => {
                let c = args[0];
                let varying = f.value_type(c).varying;
                let lane0 = facts.lane0 && uni.is_uniform(c);
                (!varying || lane0 || relative_condition(uni, v, c)).then(|| args[1..].to_vec())
            }
            _ => None,
        },
    }
}

/// Whether the varying condition `c` of the select `v` decides it for the lanes of
/// the region mask `G` that `v` is uniform in: `c` is `G` itself or uniform in `G`
/// too (the selector then tests `c & G`, see [`FunctionUniformity::select_region`]).
fn relative_condition(uni: &FunctionUniformity, v: Value, c: Value) -> bool {
    uni.uniform_in(v)
        .is_some_and(|g| c == g || uni.uniform_in(c) == Some(g))
}

/// The scalarized values of `f` (none without the uniformity analysis `uni`).
pub fn scalarized(
    f: &Function,
    uni: Option<&FunctionUniformity>,
    facts: &MaskFacts,
) -> FxHashSet<Value> {
    let Some(uni) = uni else {
        return FxHashSet::default();
    };
    let inc = incoming(f);
    let mut deps: FxHashMap<Value, Vec<Value>> = FxHashMap::default();
    for (v, _) in f.values.iter() {
        let ty = f.value_type(v);
        if !ty.varying || !(allowed_scalar(ty.scalar) || pointer_candidate(f, uni, v)) {
            continue;
        }
        if let Some(&x) = facts.aliases().get(&v) {
            deps.insert(v, vec![x]);
            continue;
        }
        if !uni.is_uniform(v) && uni.uniform_in(v).is_none() {
            continue;
        }
        if let Some(ops) = operands(f, uni, facts, v, &inc) {
            let ok = ops.iter().all(|&o| {
                let s = f.value_type(o).scalar;
                allowed_scalar(s) || s == Scalar::Ptr
            });
            if ok {
                deps.insert(v, ops);
            }
        }
    }
    let mut set: FxHashSet<Value> = deps.keys().copied().collect();
    loop {
        let drop: Vec<Value> = set
            .iter()
            .copied()
            .filter(|v| {
                deps[v]
                    .iter()
                    .any(|&o| f.value_type(o).varying && !set.contains(&o))
            })
            .collect();
        if drop.is_empty() {
            return set;
        }
        for v in drop {
            set.remove(&v);
        }
    }
}
