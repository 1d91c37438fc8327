//! Dead-code elimination: deletes the pure instructions whose results nothing
//! observable reads, and the block parameters (with their branch arguments) nothing
//! reads either.
//!
//! Lowering, [`super::promote`], [`super::const_fold`] and [`super::gvn`] leave such
//! values behind (the initial values of promoted slots, folded operands, the second
//! copy of an address). A back end would spend a register and an instruction on each.
//!
//! The pass marks rather than counts: a value is live when a non-removable
//! instruction (a store, a load, a call, a terminator's condition or returned value...)
//! reads it, when a live instruction reads it, or when it is passed to a live block
//! parameter. Everything else goes, including cycles through loop-carried parameters
//! that only feed themselves, which use counting ([`super::cfg::remove_dead_from`])
//! cannot see. Entry block parameters are the function's arguments and stay.
//!
//! What may be removed is [`removable`]: [`cfg::is_pure`] instructions and addresses
//! that cannot trap. An integer division whose divisor may be zero stops the program in the
//! interpreter, so even an unused one stays (removing it would turn a trap into a
//! normal exit).

use cranelift_entity::EntitySet;
use rustc_hash::FxHashSet;
use smallvec::{smallvec, SmallVec};

use super::cfg;
use super::const_fold::constant_value;
use crate::ir::{BinaryOp, Function, InstData, Module, Value, ValueDef};

/// Whether an unused instance of `data` (in `func`) may be deleted: it is pure (or the
/// address of a slot, global or shared variable) and cannot trap ([`may_trap`]).
pub fn removable(func: &Function, data: &InstData) -> bool {
    let address = matches!(
        data,
        InstData::StackAddr { .. } | InstData::GlobalAddr { .. } | InstData::SharedAddr { .. }
    );
    (cfg::is_pure(data) || address) && !may_trap(func, data)
}

/// Whether a pure instruction may stop the program: an integer division or remainder
/// whose divisor is not a nonzero constant (the interpreter traps on a zero divisor).
pub fn may_trap(func: &Function, data: &InstData) -> bool {
    match data {
        InstData::Binary {
            op: BinaryOp::Sdiv | BinaryOp::Udiv | BinaryOp::Srem | BinaryOp::Urem,
            args,
        } => {
            !func.value_type(args[0]).scalar.is_float()
                && constant_value(func, args[1]).is_none_or(|d| d == 0)
        }
        _ => false,
    }
}

/// Runs [`run`] on every function of the module.
pub fn run_module(module: &mut Module) {
    super::each_function(module, |_, f| {
        run(f);
    });
}

/// Deletes the dead instructions and block parameters of `func`; returns how many of
/// each (instructions, parameters).
pub fn run(func: &mut Function) -> (usize, usize) {
    let live = live_values(func);
    let is_live = |v: Option<Value>| v.is_some_and(|v| live.contains(v));
    let mut insts = 0;
    for &b in &func.layout {
        let before = func.blocks[b].insts.len();
        let (data, results) = (&func.insts, &func.results);
        let keep: Vec<_> = func.blocks[b]
            .insts
            .iter()
            .copied()
            .filter(|&i| !removable(func, &data[i]) || is_live(results[i]))
            .collect();
        insts += before - keep.len();
        func.blocks[b].insts = keep;
    }
    let params = remove_dead_params(func, &live);
    (insts, params)
}

/// Removes the parameters of non-entry blocks that are not live, with their arguments.
fn remove_dead_params(func: &mut Function, live: &EntitySet<Value>) -> usize {
    let entry = func.entry_block();
    let values = &func.values;
    let dead = |p: Value| {
        !live.contains(p) && matches!(values[p].def, ValueDef::Param(b, _) if Some(b) != entry)
    };
    let doomed: FxHashSet<Value> = func
        .layout
        .iter()
        .flat_map(|&b| func.blocks[b].params.iter().copied())
        .filter(|&p| dead(p))
        .collect();
    cfg::remove_params_where(func, |p| doomed.contains(&p));
    doomed.len()
}

/// The values something observable depends on (see the module documentation).
fn live_values(func: &Function) -> EntitySet<Value> {
    let incoming = cfg::incoming_args(func);
    let mut live = EntitySet::with_capacity(func.values.len());
    let mut work: Vec<Value> = Vec::new();
    if let Some(entry) = func.entry_block() {
        work.extend(func.blocks[entry].params.iter().copied());
    }
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            work.extend_from_slice(&root_operands(func, &func.insts[i]));
        }
    }
    while let Some(v) = work.pop() {
        if !live.insert(v) {
            continue;
        }
        match func.values[v].def {
            ValueDef::Result(inst) => func.insts[inst].for_each_operand(|x| work.push(x)),
            ValueDef::Param(block, index) => work.extend(
                incoming[block]
                    .iter()
                    .filter_map(|args| args.get(index as usize).copied()),
            ),
        }
    }
    live
}

/// The operands of an instruction that are live whatever else is: all of them for a
/// non-removable instruction except branch arguments (live only through a live
/// parameter), none for a removable one.
fn root_operands(func: &Function, data: &InstData) -> SmallVec<[Value; 8]> {
    match data {
        InstData::Jump { .. } => SmallVec::new(),
        InstData::Brif { cond, .. } => smallvec![*cond],
        d if removable(func, d) => SmallVec::new(),
        d => d.operands(),
    }
}

#[cfg(test)]
mod tests {
    use crate::passes::cfg::run_on_text;

    fn dce(m: &mut crate::ir::Module) {
        super::run_module(m);
    }

    /// The chain `v3 -> v4 -> v5` feeds nothing observable and goes, and so does the
    /// loop-carried `v8`/`v11` that only feeds itself (with its branch arguments). The
    /// unused load (it may fault), the division by a parameter (it may trap) and the
    /// entry parameters stay; the division by a nonzero constant goes.
    #[test]
    fn dead_chains_and_self_feeding_params_go() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @f(i32, i32, ptr) -> i32 {
block0(v0: i32, v1: i32, v2: ptr):
    v3 = iadd v0, v1
    v4 = imul v3, v3
    v5 = icmp slt v4, v0
    v6 = load.i32 generic v2
    v7 = sdiv v0, v1
    v20 = iconst.i32 3
    v21 = sdiv v0, v20
    jump block1(v0, v0)
block1(v8: i32, v9: i32):
    v10 = iconst.i32 1
    v11 = iadd v8, v10
    v12 = iadd v9, v10
    v13 = icmp slt v12, v1
    brif v13, block1(v11, v12), block2
block2:
    return v12
}
",
            dce,
        );
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function internal @f(i32, i32, ptr) -> i32 {
block0(v0: i32, v1: i32, v2: ptr):
    v3 = load.i32 generic v2
    v4 = sdiv v0, v1
    jump block1(v0)
block1(v5: i32):
    v6 = iconst.i32 1
    v7 = iadd v5, v6
    v8 = icmp slt v7, v1
    brif v8, block1(v7), block2
block2:
    return v7
}
"
        );
    }
}
