//! Global value numbering: common-subexpression elimination over the dominator tree.
//!
//! Lowering computes every expression where the source writes it: `x[i]` and `y[i]`
//! each compute `sext(i) * 4`, each block makes its own constants, and the CFG
//! transforms copy computations. An instruction identical to one that dominates it (same
//! opcode, same operands after numbering, same result type) computes the same value,
//! so its uses can read the earlier result and it goes away.
//!
//! The walk visits the dominator tree depth first with a scoped table of the
//! expressions available at each block (Briggs, Cooper and Simpson, "Value Numbering",
//! the dominator-based variant): what a block computes is visible in the blocks it
//! dominates and forgotten on the way back up, so nothing is replaced by a value from a
//! sibling that does not dominate it.
//!
//! Only [`numberable`] instructions take part: those whose result is a function of
//! their operands alone and that cannot trap. That is constants, arithmetic except
//! integer division and remainder (a trap must stay where it is), comparisons,
//! selects, conversions, splats, the addresses of slots, globals and shared variables,
//! the launch and lane indices (one value throughout a function's execution; not the
//! clock), and `any`/`all` of an explicit mask. Stores, atomics, calls, barriers,
//! `print` and the other cross-lane operations are left alone. A load is redundant
//! only after an identical one (type, space, address and mask) in the same block with
//! nothing between them that is not numberable or a load: memory may change at any
//! other instruction (`x[i]` read twice in one statement, `min(lo, x[i])` then
//! `max(hi, x[i])`). Integer operations that commute are numbered with their operands ordered;
//! float ones are not, because the interpreter returns the *first* NaN operand, so
//! `a + b` and `b + a` may differ in a NaN's payload.

use cranelift_entity::SecondaryMap;
use rustc_hash::FxHashMap;

use super::cfg;
use crate::interp::ops;
use crate::ir::dominance::DominatorTree;
use crate::ir::{
    BinaryOp, Block, ConvOp, FloatCC, Function, Inst, InstData, IntCC, LaneOp, Module, SpecialReg,
    Type, UnaryOp, Value,
};

/// Whether `data` may be numbered (see the module documentation).
pub fn numberable(data: &InstData) -> bool {
    let divides = matches!(
        data,
        InstData::Binary {
            op: BinaryOp::Sdiv | BinaryOp::Udiv | BinaryOp::Srem | BinaryOp::Urem,
            ..
        }
    );
    match data {
        InstData::StackAddr { .. } | InstData::GlobalAddr { .. } | InstData::SharedAddr { .. } => {
            true
        }
        InstData::Special { reg } => *reg != SpecialReg::Clock,
        InstData::Lane { op, .. } => matches!(op, LaneOp::Any | LaneOp::All),
        _ => cfg::is_pure(data) && !divides,
    }
}

/// What identifies a numberable instruction's value, besides its result type.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    /// An `iconst` or `fconst` by its canonical bits ([`ops::constant`]).
    Const(bool, u64),
    Unary(UnaryOp, Value),
    Binary(BinaryOp, Value, Value),
    Icmp(IntCC, Value, Value),
    Fcmp(FloatCC, Value, Value),
    Select(Value, Value, Value),
    Convert(ConvOp, Value),
    Splat(Value),
    Special(SpecialReg),
    Lane(LaneOp, Vec<Value>),
    Stack(u32),
    Global(u32),
    Shared(u32),
}

/// The key of a numberable instruction, operands as they are.
fn key(data: &InstData) -> Option<Key> {
    Some(match data {
        InstData::Iconst { .. } => Key::Const(false, ops::constant(data)?),
        InstData::Fconst { .. } => Key::Const(true, ops::constant(data)?),
        InstData::Unary { op, arg } => Key::Unary(*op, *arg),
        InstData::Binary { op, args } => {
            let [a, b] = *args;
            let (a, b) = if commutes(*op) && b < a {
                (b, a)
            } else {
                (a, b)
            };
            Key::Binary(*op, a, b)
        }
        InstData::Icmp { cond, args } => {
            let [a, b] = *args;
            let sym = matches!(cond, IntCC::Eq | IntCC::Ne);
            let (a, b) = if sym && b < a { (b, a) } else { (a, b) };
            Key::Icmp(*cond, a, b)
        }
        InstData::Fcmp { cond, args } => Key::Fcmp(*cond, args[0], args[1]),
        InstData::Select { args } => Key::Select(args[0], args[1], args[2]),
        InstData::Convert { op, arg, .. } => Key::Convert(*op, *arg),
        InstData::Splat { arg } => Key::Splat(*arg),
        InstData::Special { reg } => Key::Special(*reg),
        InstData::Lane { op, args } => Key::Lane(*op, args.to_vec()),
        InstData::StackAddr { slot } => Key::Stack(slot.as_u32()),
        InstData::GlobalAddr { global } => Key::Global(global.as_u32()),
        InstData::SharedAddr { shared } => Key::Shared(shared.as_u32()),
        _ => return None,
    })
}

/// Integer operations whose operands may be swapped.
fn commutes(op: BinaryOp) -> bool {
    use BinaryOp::*;
    matches!(
        op,
        Iadd | Imul | Band | Bor | Bxor | Smin | Smax | Umin | Umax
    )
}

/// Runs [`run`] on every function of the module.
pub fn run_module(module: &mut Module) {
    super::each_function(module, |_, f| {
        run(f);
    });
}

/// Replaces every numberable instruction that a dominating identical one makes
/// redundant; returns how many were removed.
pub fn run(func: &mut Function) -> usize {
    let dom = DominatorTree::compute(func);
    let Some(&entry) = dom.rpo().first() else {
        return 0;
    };
    let children = dom_children(&dom);
    let mut table: FxHashMap<(Type, Key), Value> = FxHashMap::default();
    let mut alias: FxHashMap<Value, Value> = FxHashMap::default();
    let mut removed = 0;
    // Depth-first over the dominator tree; `Exit` forgets what the block added.
    enum Step {
        Enter(Block),
        Exit(Vec<(Type, Key)>),
    }
    let mut stack = vec![Step::Enter(entry)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Enter(b) => {
                let added = number_block(func, b, &mut table, &mut alias, &mut removed);
                stack.push(Step::Exit(added));
                stack.extend(children[b].iter().map(|&c| Step::Enter(c)));
            }
            Step::Exit(added) => {
                for k in added {
                    table.remove(&k);
                }
            }
        }
    }
    // Uses in blocks the walk does not reach (unreachable ones).
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            func.insts[i].map_operands(|v| alias.get(&v).copied().unwrap_or(v));
        }
    }
    removed
}

/// Numbers the instructions of block `b` in order: rewrites operands to their numbers'
/// values, deletes the redundant ones (recording them in `alias`) and adds the new
/// expressions to `table`; returns the keys it added.
fn number_block(
    func: &mut Function,
    b: Block,
    table: &mut FxHashMap<(Type, Key), Value>,
    alias: &mut FxHashMap<Value, Value>,
    removed: &mut usize,
) -> Vec<(Type, Key)> {
    let mut added = Vec::new();
    let mut kept: Vec<Inst> = Vec::with_capacity(func.blocks[b].insts.len());
    // The loads since the last instruction that may write memory.
    type LoadKey = (Type, crate::ir::Space, Value, Option<Value>);
    let mut loads: FxHashMap<LoadKey, Value> = FxHashMap::default();
    for i in std::mem::take(&mut func.blocks[b].insts) {
        // Operands are defined in dominating blocks or earlier here: already numbered.
        func.insts[i].map_operands(|v| alias.get(&v).copied().unwrap_or(v));
        if let (
            &InstData::Load {
                ty,
                space,
                addr,
                mask,
            },
            Some(r),
        ) = (&func.insts[i], func.results[i])
        {
            let k = (ty, space, addr, mask);
            match loads.get(&k) {
                Some(&earlier) => {
                    alias.insert(r, earlier);
                    *removed += 1;
                }
                None => {
                    loads.insert(k, r);
                    kept.push(i);
                }
            }
            continue;
        }
        if !numberable(&func.insts[i]) {
            loads.clear();
        }
        let entry = func.results[i].and_then(|r| {
            let data = &func.insts[i];
            numberable(data)
                .then(|| key(data))
                .flatten()
                .map(|k| (r, (func.value_type(r), k)))
        });
        match entry {
            Some((r, k)) => match table.get(&k) {
                Some(&earlier) => {
                    alias.insert(r, earlier);
                    *removed += 1;
                }
                None => {
                    table.insert(k.clone(), r);
                    added.push(k);
                    kept.push(i);
                }
            },
            None => kept.push(i),
        }
    }
    func.blocks[b].insts = kept;
    added
}

/// Each reachable block's children in the dominator tree.
fn dom_children(dom: &DominatorTree) -> SecondaryMap<Block, Vec<Block>> {
    let mut children: SecondaryMap<Block, Vec<Block>> = SecondaryMap::new();
    for &b in dom.rpo() {
        if let Some(p) = dom.idom(b) {
            children[p].push(b);
        }
    }
    children
}

#[cfg(test)]
mod tests {
    use crate::passes::cfg::run_on_text;

    fn gvn(m: &mut crate::ir::Module) {
        super::run_module(m);
    }

    /// `x[i]` computed in block0 and again (operands commuted) in block1, which block0
    /// dominates: the second address goes. The constant 7 of the two sibling arms stays
    /// twice, and once more at the join neither arm dominates.
    #[test]
    fn dominated_address_reused_sibling_constants_kept() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @f(i32, ptr, bool) -> i32 {
block0(v0: i32, v1: ptr, v2: bool):
    v3 = sext.i64 v0
    v4 = iconst.i64 4
    v5 = imul v3, v4
    v6 = bitcast.ptr v5
    v7 = iadd v1, v6
    v8 = load.i32 generic v7
    brif v2, block1, block2
block1:
    v9 = sext.i64 v0
    v10 = iconst.i64 4
    v11 = imul v10, v9
    v12 = bitcast.ptr v11
    v13 = iadd v1, v12
    v14 = load.i32 generic v13
    v15 = iconst.i32 7
    v16 = iadd v14, v15
    jump block3(v16)
block2:
    v17 = iconst.i32 7
    v18 = iadd v8, v17
    jump block3(v18)
block3(v19: i32):
    v20 = iconst.i32 7
    v21 = iadd v19, v20
    return v21
}
",
            gvn,
        );
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function internal @f(i32, ptr, bool) -> i32 {
block0(v0: i32, v1: ptr, v2: bool):
    v3 = sext.i64 v0
    v4 = iconst.i64 4
    v5 = imul v3, v4
    v6 = bitcast.ptr v5
    v7 = iadd v1, v6
    v8 = load.i32 generic v7
    brif v2, block1, block2
block1:
    v9 = load.i32 generic v7
    v10 = iconst.i32 7
    v11 = iadd v9, v10
    jump block3(v11)
block2:
    v12 = iconst.i32 7
    v13 = iadd v8, v12
    jump block3(v13)
block3(v14: i32):
    v15 = iconst.i32 7
    v16 = iadd v14, v15
    return v16
}
"
        );
    }

    /// A load identical to an earlier one of the block, with only numberable
    /// instructions and loads between, reads the same value (the second unmasked load
    /// goes, its use reads `v3`); after a store or in another block it is kept, and a
    /// different mask is another load.
    #[test]
    fn loads_of_one_address_merge_until_memory_may_change() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @f(i32, ptr, [bool]) -> i32 {
block0(v0: i32, v1: ptr, v2: [bool]):
    v3 = load.i32 generic v1
    v4 = iadd v3, v0
    v5 = load.i32 generic v1
    v6 = load.i32 generic v1 mask v2
    store generic v1, v4
    v7 = load.i32 generic v1
    v8 = iadd v5, v7
    jump block1
block1:
    v9 = load.i32 generic v1
    v10 = iadd v8, v9
    return v10
}
",
            gvn,
        );
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function internal @f(i32, ptr, [bool]) -> i32 {
block0(v0: i32, v1: ptr, v2: [bool]):
    v3 = load.i32 generic v1
    v4 = iadd v3, v0
    v5 = load.i32 generic v1 mask v2
    store generic v1, v4
    v6 = load.i32 generic v1
    v7 = iadd v3, v6
    jump block1
block1:
    v8 = load.i32 generic v1
    v9 = iadd v7, v8
    return v9
}
"
        );
    }

    /// Loads (memory may change between them) and divisions (they may trap) are never
    /// merged; the pure `iadd` after them is.
    #[test]
    fn loads_and_divisions_not_merged() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @f(i32, i32, ptr) -> i32 {
block0(v0: i32, v1: i32, v2: ptr):
    v3 = load.i32 generic v2
    store generic v2, v0
    v4 = load.i32 generic v2
    v5 = sdiv v0, v1
    v6 = sdiv v0, v1
    v7 = urem v0, v1
    v8 = urem v0, v1
    v9 = iadd v3, v4
    v10 = iadd v5, v6
    v11 = iadd v7, v8
    v12 = iadd v4, v3
    v13 = iadd v9, v10
    v14 = iadd v11, v12
    v15 = iadd v13, v14
    return v15
}
",
            gvn,
        );
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function internal @f(i32, i32, ptr) -> i32 {
block0(v0: i32, v1: i32, v2: ptr):
    v3 = load.i32 generic v2
    store generic v2, v0
    v4 = load.i32 generic v2
    v5 = sdiv v0, v1
    v6 = sdiv v0, v1
    v7 = urem v0, v1
    v8 = urem v0, v1
    v9 = iadd v3, v4
    v10 = iadd v5, v6
    v11 = iadd v7, v8
    v12 = iadd v9, v10
    v13 = iadd v11, v9
    v14 = iadd v12, v13
    return v14
}
"
        );
    }
}
