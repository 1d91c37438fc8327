//! Compaction of a function's instruction and value arenas.
//!
//! Passes delete instructions by dropping them from their block, and the arenas keep
//! them: after inlining, promotion and the clean-up, a kernel's arenas can be eight
//! times the size of its code. Every later table indexed by instruction or value (the
//! back ends' analyses, instruction selection, the nyuzi copy of the module) is sized
//! by the arenas, so [`compact`] renumbers what the blocks still hold densely. Handles
//! keep their relative order, so whatever visits values or instructions by handle
//! visits them in the same order as before, and [`Function::inst_id`] keeps the
//! numbers instructions had.

use cranelift_entity::{EntityRef, PrimaryMap, SecondaryMap};

use crate::ir::{Function, Inst, InstData, Value, ValueData, ValueDef};

/// Compacts `f` when its arenas hold more than twice what its blocks use: the copying
/// then costs less than what the tables it shrinks would.
pub fn compact_if_sparse(f: &mut Function) {
    let used: usize = f.blocks.values().map(|b| b.insts.len()).sum();
    if f.insts.len() > 2 * used.max(1) {
        compact(f);
    }
}

/// Renumbers the instructions of `f`'s blocks and the values they define densely,
/// dropping the rest. Leaves `f` unchanged if a used instruction reads a value no
/// block defines (no pass should leave one, and the verifier reports it).
pub fn compact(f: &mut Function) {
    let Some((inst_map, value_map)) = renumbering(f) else {
        return;
    };
    let kept = (0..f.insts.len()).filter(|&i| inst_map[i].is_some());
    f.inst_ids = f.inst_ids.compacted(kept.map(Inst::new), f.insts.len());
    let old_insts = std::mem::take(&mut f.insts);
    let kept = inst_map.iter().flatten().count();
    let mut insts = PrimaryMap::with_capacity(kept);
    let mut results = SecondaryMap::with_capacity(kept);
    let mut spans = SecondaryMap::with_capacity(kept);
    for (old, mut data) in old_insts.into_iter() {
        if inst_map[old.index()].is_none() {
            continue;
        }
        data.map_operands(|v| value_map[v.index()].expect("checked by renumbering"));
        let new = insts.push(data);
        results[new] = f.results[old].and_then(|r: Value| value_map[r.index()]);
        spans[new] = f.spans[old];
    }
    let mut values = PrimaryMap::with_capacity(value_map.iter().flatten().count());
    for (old, data) in f.values.iter() {
        if value_map[old.index()].is_none() {
            continue;
        }
        let def = match data.def {
            ValueDef::Result(i) => ValueDef::Result(inst_map[i.index()].expect("defined")),
            param @ ValueDef::Param(..) => param,
        };
        values.push(ValueData { ty: data.ty, def });
    }
    for block in f.blocks.values_mut() {
        for p in block.params.iter_mut() {
            *p = value_map[p.index()].expect("kept");
        }
        for i in block.insts.iter_mut() {
            *i = inst_map[i.index()].expect("kept");
        }
    }
    f.insts = insts;
    f.results = results;
    f.spans = spans;
    f.values = values;
}

/// The new handle of every instruction and value that stays, or `None` when a used
/// instruction reads a value that does not stay.
#[allow(clippy::type_complexity)]
fn renumbering(f: &Function) -> Option<(Vec<Option<Inst>>, Vec<Option<Value>>)> {
    let mut keep_inst = vec![false; f.insts.len()];
    let mut keep_value = vec![false; f.values.len()];
    for block in f.blocks.values() {
        for &p in &block.params {
            keep_value[p.index()] = true;
        }
        for &i in &block.insts {
            keep_inst[i.index()] = true;
            if let Some(r) = f.results[i] {
                keep_value[r.index()] = true;
            }
        }
    }
    // A value stays only with its definition.
    for (v, data) in f.values.iter() {
        if let ValueDef::Result(i) = data.def {
            keep_value[v.index()] &= keep_inst[i.index()];
        }
    }
    let mut params = f.blocks.values().flat_map(|b| &b.params);
    if params.any(|p| !keep_value[p.index()]) {
        return None;
    }
    let reads_dropped = |data: &InstData| !data.all_operands(|v| keep_value[v.index()]);
    let used = f.insts.iter().filter(|(i, _)| keep_inst[i.index()]);
    if used.map(|(_, data)| data).any(reads_dropped) {
        return None;
    }
    Some((dense(&keep_inst), dense(&keep_value)))
}

/// Consecutive handles for the kept positions, in order.
fn dense<K: EntityRef>(keep: &[bool]) -> Vec<Option<K>> {
    let mut next = 0;
    let number = |&k: &bool| {
        k.then(|| {
            next += 1;
            K::new(next - 1)
        })
    };
    keep.iter().map(number).collect()
}
