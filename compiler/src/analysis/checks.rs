//! Run-time soundness checks of an analysis's claims, shared by the analyses.
//!
//! A test instruments a module so that every claim an analysis makes about a value
//! (uniform, or equal to an affine tuple) is checked when the value is defined, then
//! runs the module: a wrong claim traps instead of passing silently. [`instrument`]
//! does the block surgery; each analysis supplies the check of one value.

use crate::ir::{BinaryOp, Block, BlockCall, Function, Inst, InstData, TrapCode, Type, Value};
use crate::source::Span;

/// Emits `data` (with a result of type `ty`) at the end of `new`, the block's
/// instruction list under construction; returns the result.
pub fn emit(
    func: &mut Function,
    block: Block,
    new: &mut Vec<Inst>,
    data: InstData,
    ty: Type,
) -> Value {
    let inst = func.append_inst(block, data, Some(ty), Span::default());
    func.blocks[block].insts.pop();
    new.push(inst);
    func.results[inst].expect("the instruction has a result")
}

/// Instruments every block of `func`: after each value the block defines (its
/// parameters, then its instructions' results, in order), `check` may emit
/// instructions into the list it is given and return a uniform `bool` that must
/// hold. The block's terminator then runs only when all of its checks hold, and
/// control goes to a block that traps (`unreachable`) otherwise. All branches in the
/// IR are uniform, so every lane of the gang executes each check.
pub fn instrument(
    func: &mut Function,
    mut check: impl FnMut(&mut Function, Block, Value, &mut Vec<Inst>) -> Option<Value>,
) {
    if func.entry_block().is_none() {
        return;
    }
    let trap = func.create_block();
    let trap_data = InstData::Trap {
        code: TrapCode::Unreachable,
    };
    func.append_inst(trap, trap_data, None, Span::default());
    let blocks: Vec<Block> = func.layout.iter().copied().filter(|&b| b != trap).collect();
    for block in blocks {
        let Some(term) = func.terminator(block) else {
            continue;
        };
        let old = std::mem::take(&mut func.blocks[block].insts);
        let params = func.blocks[block].params.to_vec();
        let defs: Vec<(Option<Inst>, Option<Value>)> = params
            .into_iter()
            .map(|p| (None, Some(p)))
            .chain(
                old.iter()
                    .filter(|&&i| i != term)
                    .map(|&i| (Some(i), func.results[i])),
            )
            .collect();
        let mut new = Vec::with_capacity(old.len() * 2);
        let mut all_ok: Option<Value> = None;
        for (inst, value) in defs {
            new.extend(inst);
            let Some(ok) = value.and_then(|v| check(func, block, v, &mut new)) else {
                continue;
            };
            all_ok = Some(match all_ok {
                None => ok,
                Some(acc) => {
                    let band = InstData::Binary {
                        op: BinaryOp::Band,
                        args: [acc, ok],
                    };
                    emit(func, block, &mut new, band, Type::BOOL)
                }
            });
        }
        let Some(all_ok) = all_ok else {
            new.push(term);
            func.blocks[block].insts = new;
            continue;
        };
        // The original terminator moves to a block of its own, reached when all hold.
        let cont = func.create_block();
        func.blocks[cont].insts.push(term);
        let to = |block| BlockCall {
            block,
            args: Default::default(),
        };
        let brif = InstData::Brif {
            cond: all_ok,
            then_dest: to(cont),
            else_dest: to(trap),
        };
        let b = func.append_inst(block, brif, None, func.spans[term]);
        func.blocks[block].insts.clear();
        new.push(b);
        func.blocks[block].insts = new;
    }
}
