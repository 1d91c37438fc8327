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
//! argument) leaves the slot in memory. Promotion places block parameters where a slot
//! is live and its values may differ: on each reachable block with several predecessors
//! into which the slot is live (a load may read it before a store); a block with one
//! predecessor starts from that predecessor's values, and unreachable blocks are emptied
//! first. Liveness is found per slot by walking back from its loads to its stores, so
//! the work is the size of the live ranges: the slots of an inlined call are live only
//! around it, and giving every slot a parameter on every block made promotion, and every
//! pass after it, grow with blocks times slots, i.e. with the square of the call sites.
//! Blocks are rewritten in reverse postorder: loads become the current value, stores
//! replace it, and every branch passes the values its target needs. A store under a mask
//! that is not the constant all-on mask (which reads the old value) becomes
//! `select mask, new, old` (varying slot) or `select (any mask), new, old` (uniform slot).
//! A slot starts as zero, like the interpreter's fresh stack memory. Masked loads read the
//! current value in every lane (the interpreter would give 0 in off lanes; no lowering
//! pattern observes off lanes of a loaded local).

use cranelift_entity::SecondaryMap;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::dominance::DominatorTree;
use crate::ir::{
    BinaryOp, Block, ConvOp, Function, InstData, LaneOp, Module, SpecialReg, StackSlot, Type,
    Value, ValueData, ValueDef,
};

/// Promotes the slots of every function of the module.
pub fn run_module(module: &mut Module) {
    let (lanes, ptr) = (module.lane_count, module.ptr_size);
    super::each_function(module, |_, f| {
        promote_function(f, lanes, ptr);
    });
}

/// The address kind of each value that is one (a dense table: every operand of the
/// function is looked up).
struct Kinds(SecondaryMap<Value, Option<Kind>>);

impl Kinds {
    fn get(&self, v: &Value) -> Option<&Kind> {
        self.0[*v].as_ref()
    }

    fn insert(&mut self, v: Value, k: Kind) {
        self.0[v] = Some(k);
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
    let mut kind = Kinds(SecondaryMap::with_capacity(f.values.len()));
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
    let mut index: SecondaryMap<StackSlot, Option<usize>> = SecondaryMap::new();
    for (i, &s) in promoted.iter().enumerate() {
        index[s] = Some(i);
    }
    let slot_ty: Vec<Type> = promoted.iter().map(|s| tys[s]).collect();
    let promoted_kind = |v: &Value| kind.get(v).filter(|k| index[k.slot()].is_some()).copied();

    // Only reachable blocks are rewritten; the others become `trap unreachable`.
    super::cfg::clear_unreachable(f);
    let dom = DominatorTree::compute(f);
    let rpo: Vec<Block> = dom.rpo().to_vec();
    let preds = super::cfg::predecessors(f);
    let slot_of = |addr: Value| promoted_kind(&addr).and_then(|k| index[k.slot()]);
    let access = block_accesses(f, &rpo, slot_of);
    let live = live_in(&rpo, &preds, &access);
    let mut zeros = Zeros::new(slot_ty.len());

    // A parameter per live slot on the blocks with several predecessors (or none but
    // the entry); a block with one predecessor starts from that predecessor's values.
    let mut params: FxHashMap<Block, Vec<(usize, Value)>> = FxHashMap::default();
    for &b in &rpo {
        if b == entry || preds[b].len() == 1 {
            continue;
        }
        if let Some(slots) = live.get(&b) {
            let ps = slots
                .iter()
                .map(|&s| (s, f.append_block_param(b, slot_ty[s])))
                .collect();
            params.insert(b, ps);
        }
    }
    let mut inherited: FxHashMap<Block, FxHashMap<usize, Value>> = FxHashMap::default();

    let mut alias: SecondaryMap<Value, Option<Value>> = SecondaryMap::new();
    for &b in &rpo {
        let mut cur: FxHashMap<usize, Value> = match params.get(&b) {
            Some(ps) => ps.iter().copied().collect(),
            None => inherited.remove(&b).unwrap_or_default(),
        };
        let old = std::mem::take(&mut f.blocks[b].insts);
        let mut new = Vec::with_capacity(old.len());
        for inst in old {
            let result = f.results[inst];
            match Shape::of(&f.insts[inst]) {
                Shape::StackAddr(slot) if index[slot].is_some() => continue,
                Shape::Derived if result.and_then(|r| promoted_kind(&r)).is_some() => continue,
                Shape::Load(addr) => {
                    if let Some(i) = slot_of(addr) {
                        let v = current(f, &mut cur, &mut zeros, &slot_ty, i);
                        alias[result.unwrap()] = Some(v);
                        continue;
                    }
                }
                Shape::Store { addr, value, mask } => {
                    if let Some(i) = slot_of(addr) {
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
                                let old = current(f, &mut cur, &mut zeros, &slot_ty, i);
                                let (si, sv) = make_inst(
                                    f,
                                    InstData::Select {
                                        args: [cond, value, old],
                                    },
                                    ty,
                                    Some(inst),
                                );
                                new.push(si);
                                cur.insert(i, sv);
                            }
                            _ => {
                                cur.insert(i, value);
                            }
                        }
                        continue;
                    }
                }
                _ => {}
            }
            if f.insts[inst].is_terminator() {
                pass_values(
                    f,
                    inst,
                    &mut cur,
                    &mut zeros,
                    &slot_ty,
                    &params,
                    &live,
                    &mut inherited,
                );
            }
            new.push(inst);
        }
        f.blocks[b].insts = new;
    }
    f.blocks[entry].insts.splice(0..0, zeros.insts);
    let resolve = |mut v: Value| {
        while let Some(w) = alias[v] {
            v = w;
        }
        v
    };
    for &b in &rpo {
        for &inst in &f.blocks[b].insts {
            f.insts[inst].map_operands(resolve);
        }
    }
    promoted.len()
}

/// The operands the rewrite reads of an instruction: copied out, so that the
/// instruction is not cloned (with its operand lists) while the function changes.
enum Shape {
    StackAddr(StackSlot),
    /// A `splat` or binary operation: a promoted address when its result is one.
    Derived,
    Load(Value),
    Store {
        addr: Value,
        value: Value,
        mask: Option<Value>,
    },
    Other,
}

impl Shape {
    fn of(data: &InstData) -> Shape {
        match *data {
            InstData::StackAddr { slot } => Shape::StackAddr(slot),
            InstData::Splat { .. } | InstData::Binary { .. } => Shape::Derived,
            InstData::Load { addr, .. } => Shape::Load(addr),
            InstData::Store {
                addr, value, mask, ..
            } => Shape::Store { addr, value, mask },
            _ => Shape::Other,
        }
    }
}

/// What a block does with the promoted slots (by index): the slots it loads before
/// storing them (a store under a mask reads the old value too), and those it stores.
#[derive(Default)]
struct Access {
    exposed: Vec<usize>,
    stored: FxHashSet<usize>,
}

/// The [`Access`] of every block of `rpo`; `slot_of` gives the promoted slot an address
/// names.
fn block_accesses(
    f: &Function,
    rpo: &[Block],
    slot_of: impl Fn(Value) -> Option<usize>,
) -> FxHashMap<Block, Access> {
    let mut out: FxHashMap<Block, Access> = FxHashMap::default();
    for &b in rpo {
        let mut a = Access::default();
        for &inst in &f.blocks[b].insts {
            let (slot, reads, writes) = match &f.insts[inst] {
                InstData::Load { addr, .. } => (slot_of(*addr), true, false),
                InstData::Store { addr, mask, .. } => {
                    let masked = mask.is_some_and(|m| !is_const_true(f, m));
                    (slot_of(*addr), masked, true)
                }
                _ => (None, false, false),
            };
            let Some(s) = slot else { continue };
            if reads && !a.stored.contains(&s) && !a.exposed.contains(&s) {
                a.exposed.push(s);
            }
            if writes {
                a.stored.insert(s);
            }
        }
        out.insert(b, a);
    }
    out
}

/// The promoted slots live at the entry of each block (sorted), found by walking back
/// from each exposed load to the stores that reach it: the work is the size of the
/// live ranges, not blocks times slots (the slots of an inlined call are live only
/// around it).
fn live_in(
    rpo: &[Block],
    preds: &SecondaryMap<Block, Vec<Block>>,
    access: &FxHashMap<Block, Access>,
) -> FxHashMap<Block, Vec<usize>> {
    let mut seen: FxHashSet<(Block, usize)> = FxHashSet::default();
    let mut work: Vec<(Block, usize)> = rpo
        .iter()
        .flat_map(|&b| access[&b].exposed.iter().map(move |&s| (b, s)))
        .collect();
    let mut live: FxHashMap<Block, Vec<usize>> = FxHashMap::default();
    while let Some((b, s)) = work.pop() {
        if !seen.insert((b, s)) {
            continue;
        }
        live.entry(b).or_default().push(s);
        for &p in &preds[b] {
            if access.get(&p).is_some_and(|a| !a.stored.contains(&s)) {
                work.push((p, s));
            }
        }
    }
    for slots in live.values_mut() {
        slots.sort_unstable();
    }
    live
}

/// The zero constants slots start from, made on first use and placed at the start of
/// the entry block.
struct Zeros {
    values: Vec<Option<Value>>,
    insts: Vec<crate::ir::Inst>,
}

impl Zeros {
    fn new(slots: usize) -> Zeros {
        Zeros {
            values: vec![None; slots],
            insts: Vec::new(),
        }
    }

    fn get(&mut self, f: &mut Function, slot: usize, ty: Type) -> Value {
        if let Some(v) = self.values[slot] {
            return v;
        }
        let data = if ty.scalar.is_ieee() {
            InstData::Fconst { ty, bits: 0 }
        } else {
            InstData::Iconst { ty, bits: 0 }
        };
        let (inst, v) = make_inst(f, data, ty, None);
        self.insts.push(inst);
        self.values[slot] = Some(v);
        v
    }
}

/// The value of `slot` at this point of the block: its last store or what the block
/// started with; zero where nothing stored it (only at the entry, for a live slot).
fn current(
    f: &mut Function,
    cur: &mut FxHashMap<usize, Value>,
    zeros: &mut Zeros,
    slot_ty: &[Type],
    slot: usize,
) -> Value {
    match cur.get(&slot) {
        Some(&v) => v,
        None => {
            let z = zeros.get(f, slot, slot_ty[slot]);
            cur.insert(slot, z);
            z
        }
    }
}

/// At the terminator `inst`, hands each successor the values of the slots live into
/// it: as branch arguments to a block with parameters, or as the starting values of a
/// block whose only predecessor this is.
#[allow(clippy::too_many_arguments)]
fn pass_values(
    f: &mut Function,
    inst: crate::ir::Inst,
    cur: &mut FxHashMap<usize, Value>,
    zeros: &mut Zeros,
    slot_ty: &[Type],
    params: &FxHashMap<Block, Vec<(usize, Value)>>,
    live: &FxHashMap<Block, Vec<usize>>,
    inherited: &mut FxHashMap<Block, FxHashMap<usize, Value>>,
) {
    let targets: Vec<Block> = f.insts[inst].successors().iter().map(|c| c.block).collect();
    for (k, t) in targets.into_iter().enumerate() {
        if let Some(ps) = params.get(&t) {
            let args: Vec<Value> = ps
                .iter()
                .map(|&(s, _)| current(f, cur, zeros, slot_ty, s))
                .collect();
            if let Some(call) = super::cfg::calls_mut(&mut f.insts[inst]).into_iter().nth(k) {
                call.args.extend(args);
            }
        } else if let Some(slots) = live.get(&t) {
            let vals = slots
                .iter()
                .map(|&s| (s, current(f, cur, zeros, slot_ty, s)))
                .collect();
            inherited.insert(t, vals);
        }
    }
}
