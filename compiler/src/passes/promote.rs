//! SSA promotion of private stack slots ("mem2reg").
//!
//! Lowering keeps every local in a stack slot. A slot is promoted when every use of every
//! `stack_addr` of it is one of exactly two shapes, and all its accesses agree on one
//! scalar element type filling the slot:
//! - **uniform**: `load.T private (stack_addr ssN)` / `store private (stack_addr ssN), v`
//!   with a uniform `T` of the slot's size;
//! - **varying**: the per-lane address `iadd (splat (stack_addr ssN)), off` where `off` is
//!   lowering's lane offset `bitcast.ptr (imul (sext.i64 lane_index), splat (iconst.i64 K)))`
//!   with `K` the element size and the slot `lane_count * K` bytes.
//!
//! Any other use (a call argument, a stored value, a comparison, another offset, a block
//! argument) leaves the slot in memory. Promotion uses the simple "a block parameter per
//! promoted slot on every block but the entry" construction: each block starts from its
//! parameters, loads become the current value, stores replace it, and every branch passes
//! the values at its end. A store under a mask that is not the constant all-on mask becomes
//! `select mask, new, old` (varying slot) or `select (any mask), new, old` (uniform slot).
//! A slot starts as zero, like the interpreter's fresh stack memory. Masked loads read the
//! current value in every lane (the interpreter would give 0 in off lanes; no lowering
//! pattern observes off lanes of a loaded local).

use rustc_hash::FxHashMap;

use crate::ir::{
    BinaryOp, Block, ConvOp, Function, InstData, LaneOp, Module, SpecialReg, StackSlot, Type,
    Value, ValueData, ValueDef,
};

/// Promotes the slots of every function of the module.
pub fn run_module(module: &mut Module) {
    let (lanes, ptr) = (module.lane_count, module.ptr_size);
    for (_, f) in module.functions.iter_mut() {
        promote_function(f, lanes, ptr);
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Addr(StackSlot),
    Splat(StackSlot),
    Lane(StackSlot, u32),
}

impl Kind {
    fn slot(self) -> StackSlot {
        match self {
            Kind::Addr(s) | Kind::Splat(s) | Kind::Lane(s, _) => s,
        }
    }
}

fn def_inst(f: &Function, v: Value) -> Option<&InstData> {
    match f.values[v].def {
        ValueDef::Result(i) => Some(&f.insts[i]),
        ValueDef::Param(..) => None,
    }
}

/// `Some(K)` when `v` is `bitcast.ptr (imul (sext.i64 lane_index), splat (iconst.i64 K)))`,
/// or the same without the `sext` when pointers are 32 bits wide.
fn lane_offset_size(f: &Function, v: Value) -> Option<u32> {
    let InstData::Convert {
        op: ConvOp::Bitcast,
        arg,
        ..
    } = def_inst(f, v)?
    else {
        return None;
    };
    let InstData::Binary {
        op: BinaryOp::Imul,
        args: [x, y],
    } = def_inst(f, *arg)?
    else {
        return None;
    };
    // With 8-byte pointers the lane index is widened first; with 4-byte pointers
    // (nyuzi) it is multiplied as is.
    let l = match def_inst(f, *x)? {
        InstData::Convert {
            op: ConvOp::Sext,
            arg,
            ..
        } => arg,
        _ => x,
    };
    if !matches!(
        def_inst(f, *l)?,
        InstData::Special {
            reg: SpecialReg::LaneIndex
        }
    ) {
        return None;
    }
    let InstData::Splat { arg: c } = def_inst(f, *y)? else {
        return None;
    };
    match def_inst(f, *c)? {
        InstData::Iconst { bits, .. } if *bits < 64 => Some(*bits as u32),
        _ => None,
    }
}

fn is_const_true(f: &Function, v: Value) -> bool {
    matches!(def_inst(f, v), Some(InstData::Iconst { bits, .. }) if bits & 1 == 1)
}

/// Creates an instruction outside any block, with a result of type `ty`.
fn make_inst(
    f: &mut Function,
    data: InstData,
    ty: Type,
    like: Option<crate::ir::Inst>,
) -> (crate::ir::Inst, Value) {
    let inst = f.insts.push(data);
    if let Some(l) = like {
        f.spans[inst] = f.spans[l];
    }
    let v = f.values.push(ValueData {
        ty,
        def: ValueDef::Result(inst),
    });
    f.results[inst] = Some(v);
    (inst, v)
}

/// Promotes what it can in one function; returns the number of slots promoted.
pub fn promote_function(f: &mut Function, lanes: u32, ptr: u32) -> usize {
    let Some(entry) = f.entry_block() else {
        return 0;
    };
    if f.layout.iter().any(|&b| f.successors(b).contains(&entry)) {
        return 0;
    }
    let all: Vec<crate::ir::Inst> = f
        .layout
        .iter()
        .flat_map(|&b| f.blocks[b].insts.iter().copied())
        .collect();
    // Classify addresses.
    let mut kind: FxHashMap<Value, Kind> = FxHashMap::default();
    for &i in &all {
        if let (InstData::StackAddr { slot }, Some(r)) = (&f.insts[i], f.results[i]) {
            kind.insert(r, Kind::Addr(*slot));
        }
    }
    for &i in &all {
        if let (InstData::Splat { arg }, Some(r)) = (&f.insts[i], f.results[i]) {
            if let Some(Kind::Addr(s)) = kind.get(arg) {
                kind.insert(r, Kind::Splat(*s));
            }
        }
    }
    for &i in &all {
        if let (
            InstData::Binary {
                op: BinaryOp::Iadd,
                args: [a, b],
            },
            Some(r),
        ) = (&f.insts[i], f.results[i])
        {
            if let Some(Kind::Splat(s)) = kind.get(a) {
                if let Some(k) = lane_offset_size(f, *b) {
                    kind.insert(r, Kind::Lane(*s, k));
                }
            }
        }
    }
    // Check every use.
    let mut ok: FxHashMap<StackSlot, bool> = FxHashMap::default();
    let mut tys: FxHashMap<StackSlot, Type> = FxHashMap::default();
    let mut mark = |ok: &mut FxHashMap<StackSlot, bool>, s: StackSlot, ty: Option<Type>| {
        let e = ok.entry(s).or_insert(true);
        match ty {
            None => *e = false,
            Some(t) => {
                if *tys.entry(s).or_insert(t) != t {
                    *e = false;
                }
            }
        }
    };
    for &i in &all {
        let data = &f.insts[i];
        let ops = data.operands();
        let size_of = |s: StackSlot| f.stack_slots[s].size;
        let allowed0 = match data {
            InstData::Splat { arg } => matches!(kind.get(arg), Some(Kind::Addr(_))),
            InstData::Binary { .. } => {
                matches!(
                    f.results[i].and_then(|r| kind.get(&r)),
                    Some(Kind::Lane(..))
                )
            }
            InstData::Load { ty, addr, .. } => match kind.get(addr) {
                Some(Kind::Addr(s)) => {
                    let good = !ty.varying && ty.scalar.bytes(ptr) == size_of(*s);
                    mark(&mut ok, *s, good.then_some(*ty));
                    good
                }
                Some(Kind::Lane(s, k)) => {
                    let b = ty.scalar.bytes(ptr);
                    let good = !ty.varying && b == *k && size_of(*s) == lanes * b;
                    mark(&mut ok, *s, good.then_some(ty.to_varying()));
                    good
                }
                _ => false,
            },
            InstData::Store { addr, value, .. } => {
                let vt = f.values[*value].ty;
                let b = vt.scalar.bytes(ptr);
                match kind.get(addr) {
                    Some(Kind::Addr(s)) => {
                        let good = !vt.varying && b == size_of(*s);
                        mark(&mut ok, *s, good.then_some(vt));
                        good
                    }
                    Some(Kind::Lane(s, k)) => {
                        let good = vt.varying && b == *k && size_of(*s) == lanes * b;
                        mark(&mut ok, *s, good.then_some(vt));
                        good
                    }
                    _ => false,
                }
            }
            _ => false,
        };
        for (idx, op) in ops.iter().enumerate() {
            if idx == 0 && allowed0 {
                continue;
            }
            if let Some(k) = kind.get(op) {
                mark(&mut ok, k.slot(), None);
            }
        }
    }
    let mut promoted: Vec<StackSlot> = ok
        .iter()
        .filter(|(s, good)| **good && tys.contains_key(s))
        .map(|(s, _)| *s)
        .collect();
    promoted.sort();
    if promoted.is_empty() {
        return 0;
    }
    let index: FxHashMap<StackSlot, usize> =
        promoted.iter().enumerate().map(|(i, s)| (*s, i)).collect();
    let slot_ty: Vec<Type> = promoted.iter().map(|s| tys[s]).collect();
    let promoted_kind = |v: &Value| {
        kind.get(v)
            .filter(|k| index.contains_key(&k.slot()))
            .copied()
    };

    // Initial values and block parameters.
    let mut zeros = Vec::new();
    let mut zero_insts = Vec::new();
    for &ty in &slot_ty {
        let data = if ty.scalar.is_float() {
            InstData::Fconst { ty, bits: 0 }
        } else {
            InstData::Iconst { ty, bits: 0 }
        };
        let (inst, v) = make_inst(f, data, ty, None);
        zero_insts.push(inst);
        zeros.push(v);
    }
    let mut params: FxHashMap<Block, Vec<Value>> = FxHashMap::default();
    let layout = f.layout.clone();
    for &b in &layout[1..] {
        let ps = slot_ty
            .iter()
            .map(|&ty| f.append_block_param(b, ty))
            .collect();
        params.insert(b, ps);
    }

    let mut alias: FxHashMap<Value, Value> = FxHashMap::default();
    for &b in &layout {
        let mut cur = if b == entry {
            zeros.clone()
        } else {
            params[&b].clone()
        };
        let old = std::mem::take(&mut f.blocks[b].insts);
        let mut new = Vec::with_capacity(old.len());
        if b == entry {
            new.extend(zero_insts.iter().copied());
        }
        for inst in old {
            let result = f.results[inst];
            match f.insts[inst].clone() {
                InstData::StackAddr { slot } if index.contains_key(&slot) => continue,
                InstData::Splat { .. } | InstData::Binary { .. }
                    if result.and_then(|r| promoted_kind(&r)).is_some() =>
                {
                    continue
                }
                InstData::Load { addr, .. } => {
                    if let Some(k) = promoted_kind(&addr) {
                        alias.insert(result.unwrap(), cur[index[&k.slot()]]);
                        continue;
                    }
                }
                InstData::Store {
                    addr, value, mask, ..
                } => {
                    if let Some(k) = promoted_kind(&addr) {
                        let i = index[&k.slot()];
                        let ty = slot_ty[i];
                        match mask {
                            Some(m) if !is_const_true(f, m) => {
                                let cond = if !ty.varying && f.values[m].ty.varying {
                                    let (ai, av) = make_inst(
                                        f,
                                        InstData::Lane {
                                            op: LaneOp::Any,
                                            args: smallvec::smallvec![m],
                                        },
                                        Type::BOOL,
                                        Some(inst),
                                    );
                                    new.push(ai);
                                    av
                                } else {
                                    m
                                };
                                let (si, sv) = make_inst(
                                    f,
                                    InstData::Select {
                                        args: [cond, value, cur[i]],
                                    },
                                    ty,
                                    Some(inst),
                                );
                                new.push(si);
                                cur[i] = sv;
                            }
                            _ => cur[i] = value,
                        }
                        continue;
                    }
                }
                _ => {}
            }
            match &mut f.insts[inst] {
                InstData::Jump { dest } => dest.args.extend(cur.iter().copied()),
                InstData::Brif {
                    then_dest,
                    else_dest,
                    ..
                } => {
                    then_dest.args.extend(cur.iter().copied());
                    else_dest.args.extend(cur.iter().copied());
                }
                _ => {}
            }
            new.push(inst);
        }
        f.blocks[b].insts = new;
    }
    let resolve = |mut v: Value| {
        while let Some(&w) = alias.get(&v) {
            v = w;
        }
        v
    };
    for &b in &layout {
        for &inst in &f.blocks[b].insts {
            f.insts[inst].map_operands(resolve);
        }
    }
    promoted.len()
}
