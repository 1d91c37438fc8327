//! Memory spaces of a module's accesses: which `shared` variables can live in the
//! SM's `.shared` memory, which accesses are `ld.shared`/`st.shared`/`atom.shared`,
//! and the per-kernel `.shared` layout.
//!
//! The IR marks only direct accesses of a shared variable as `shared`; a pointer to
//! one may be taken, passed to a function, offset and selected between. A
//! provenance analysis over the whole module (context-insensitive across calls)
//! tells, for every value, the set of shared variables it may be derived from and
//! whether it may be derived from anything else (an entry's parameter, a global, a
//! stack slot, a pointer loaded from memory). An access whose address derives only
//! from shared variables goes to `.shared`; one that also derives from something
//! else has no static space, so the shared variables involved move to the global
//! fallback (a per-block slice of the hidden `__shared` buffer), as does a shared
//! variable whose address is stored to memory other than a stack slot (what each
//! stack slot may hold is tracked, so pointers kept in local variables keep their
//! provenance). The analysis repeats until no variable moves.
//!
//! A pointer to a `.shared` variable holds [`SHARED_WINDOW`] plus its offset, so it is
//! never null nor equal to a global address (the simulator's global buffers start at
//! `0x1000_0000`); accesses subtract the window in their address immediate.

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap, FxHashSet};

use cranelift_entity::EntityRef;

use crate::ir::{FuncRef, Inst, InstData, Module, Scalar, SharedVar};

/// Where pointers to `.shared` variables point: a window below global memory.
pub const SHARED_WINDOW: u64 = 0x0100_0000;

/// What a value may be derived from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Prov {
    /// `.shared`-resident shared variables (by index).
    shared: BTreeSet<u32>,
    /// Stack slots, by (function, slot) index: their contents are tracked, so a
    /// pointer kept in a local variable keeps its provenance.
    slots: BTreeSet<(u32, u32)>,
    /// Anything else that may be an address.
    other: bool,
}

impl Prov {
    fn other() -> Prov {
        Prov {
            other: true,
            ..Prov::default()
        }
    }

    /// Joins `p` in; true when that changed `self`.
    fn join(&mut self, p: &Prov) -> bool {
        let before = (self.shared.len(), self.slots.len(), self.other);
        self.shared.extend(p.shared.iter().copied());
        self.slots.extend(p.slots.iter().copied());
        self.other |= p.other;
        before != (self.shared.len(), self.slots.len(), self.other)
    }

    /// As an address: it may point outside `.shared` (a stack slot or elsewhere).
    fn elsewhere(&self) -> bool {
        self.other || !self.slots.is_empty()
    }
}

/// The spaces decided for a module.
#[derive(Clone, Debug, Default)]
pub struct Spaces {
    /// Per shared variable (by index): in `.shared` (true) or the global fallback.
    pub resident: Vec<bool>,
    /// The accesses (loads, stores, atomics) that go to `.shared`.
    pub shared_accesses: FxHashSet<(FuncRef, Inst)>,
}

impl Spaces {
    /// Decides the spaces of `module`.
    pub fn of(module: &Module) -> Spaces {
        let mut resident = vec![true; module.shared.len()];
        loop {
            let a = Analysis::run(module, &resident);
            let moved = a.unplaceable();
            if moved.is_empty() {
                let shared_accesses = a.shared_accesses();
                drop(a);
                return Spaces {
                    resident,
                    shared_accesses,
                };
            }
            for v in moved {
                resident[v as usize] = false;
            }
        }
    }

    pub fn is_resident(&self, v: SharedVar) -> bool {
        self.resident.get(v.index()).copied().unwrap_or(false)
    }

    pub fn is_shared_access(&self, f: FuncRef, inst: Inst) -> bool {
        self.shared_accesses.contains(&(f, inst))
    }

    /// The `.shared` offsets (and total bytes) of the resident variables that `entry`
    /// and the functions it calls name, for a launch with `dynamic_bytes` of dynamic
    /// shared memory. The dynamic array comes last, so the others' offsets do not
    /// depend on the launch.
    pub fn layout(
        &self,
        module: &Module,
        entry: FuncRef,
        dynamic_bytes: u32,
    ) -> (FxHashMap<SharedVar, u32>, u32) {
        let mut used = BTreeSet::new();
        let mut seen = BTreeSet::new();
        let mut todo = vec![entry];
        while let Some(f) = todo.pop() {
            if !seen.insert(f) {
                continue;
            }
            for (_, data) in live_insts(&module.functions[f]) {
                match data {
                    InstData::SharedAddr { shared } if self.is_resident(*shared) => {
                        used.insert(*shared);
                    }
                    InstData::Call { func, .. } => todo.push(*func),
                    _ => {}
                }
            }
        }
        let mut offsets = FxHashMap::default();
        let mut end = 0u32;
        let (dynamic, fixed): (Vec<SharedVar>, Vec<SharedVar>) =
            used.into_iter().partition(|&v| module.shared[v].dynamic);
        for v in fixed.into_iter().chain(dynamic) {
            let d = &module.shared[v];
            let a = d.align.max(1);
            let at = end.div_ceil(a) * a;
            offsets.insert(v, at);
            end = at.saturating_add(d.bytes(dynamic_bytes));
        }
        (offsets, end.div_ceil(8) * 8)
    }
}

/// The provenance of every value of every function, with the parameters and
/// returns joined over all calls.
struct Analysis<'m> {
    module: &'m Module,
    resident: &'m [bool],
    vals: FxHashMap<FuncRef, Vec<Prov>>,
    params: FxHashMap<FuncRef, Vec<Prov>>,
    rets: FxHashMap<FuncRef, Prov>,
    /// What each stack slot may hold.
    cells: FxHashMap<(u32, u32), Prov>,
}

impl<'m> Analysis<'m> {
    fn run(module: &'m Module, resident: &'m [bool]) -> Analysis<'m> {
        let mut a = Analysis {
            module,
            resident,
            vals: FxHashMap::default(),
            params: FxHashMap::default(),
            rets: FxHashMap::default(),
            cells: FxHashMap::default(),
        };
        for (fr, f) in module.functions.iter() {
            a.vals.insert(fr, vec![Prov::default(); f.values.len()]);
            let n = f.entry_block().map_or(0, |b| f.blocks[b].params.len());
            let mut ps = vec![Prov::default(); n];
            if f.linkage.is_entry() {
                // The host's buffers (and any 64-bit integer, which may hold one).
                if let Some(b) = f.entry_block() {
                    for (p, &v) in ps.iter_mut().zip(&f.blocks[b].params) {
                        if may_hold_address(f.value_type(v).scalar) {
                            *p = Prov::other();
                        }
                    }
                }
            }
            a.params.insert(fr, ps);
            a.rets.insert(fr, Prov::default());
        }
        while a.pass() {}
        a
    }

    /// One pass over every instruction; true when anything grew.
    fn pass(&mut self) -> bool {
        let mut changed = false;
        let module = self.module;
        for (fr, f) in module.functions.iter() {
            let Some(entry) = f.entry_block() else {
                continue;
            };
            let ps = self.params[&fr].clone();
            let mut vals = std::mem::take(self.vals.get_mut(&fr).expect("every function"));
            for (p, &v) in ps.iter().zip(&f.blocks[entry].params) {
                changed |= vals[v.index()].join(p);
            }
            for &b in &f.layout {
                for &inst in &f.blocks[b].insts {
                    changed |= self.transfer(fr, inst, &mut vals);
                }
            }
            self.vals.insert(fr, vals);
        }
        changed
    }

    fn transfer(&mut self, fr: FuncRef, inst: Inst, vals: &mut [Prov]) -> bool {
        let f = &self.module.functions[fr];
        let data = &f.insts[inst];
        let of = |v: crate::ir::Value| vals[v.index()].clone();
        let result: Prov = match data {
            InstData::Unary { .. }
            | InstData::Binary { .. }
            | InstData::Convert { .. }
            | InstData::Splat { .. }
            | InstData::Select { .. }
            | InstData::Lane { .. } => {
                let mut p = Prov::default();
                for v in data.operands() {
                    p.join(&of(v));
                }
                p
            }
            InstData::StackAddr { slot } => Prov {
                slots: BTreeSet::from([(fr.index() as u32, slot.index() as u32)]),
                ..Prov::default()
            },
            // `alloca` memory is in the gang's part of the hidden `__frames` buffer.
            InstData::GlobalAddr { .. } | InstData::StackAlloc { .. } => Prov::other(),
            InstData::SharedAddr { shared } => {
                if self.resident[shared.index()] {
                    Prov {
                        shared: BTreeSet::from([shared.index() as u32]),
                        ..Prov::default()
                    }
                } else {
                    Prov::other()
                }
            }
            InstData::Load { addr, .. }
            | InstData::AtomicRmw { addr, .. }
            | InstData::AtomicCas { addr, .. } => {
                let a = of(*addr);
                let mut changed = false;
                // What is stored to a stack slot is what the slot may hold.
                let stored = match data {
                    InstData::AtomicRmw { value, .. } => Some(*value),
                    InstData::AtomicCas { replacement, .. } => Some(*replacement),
                    _ => None,
                };
                if let Some(v) = stored {
                    let pv = of(v);
                    for k in &a.slots {
                        changed |= self.cells.entry(*k).or_default().join(&pv);
                    }
                }
                let mut p = Prov::default();
                for k in &a.slots {
                    if let Some(c) = self.cells.get(k) {
                        p.join(c);
                    }
                }
                let r = f.inst_result(inst);
                let outside = a.other || !a.shared.is_empty() || a.slots.is_empty();
                if outside && r.is_some_and(|r| may_hold_address(f.value_type(r).scalar)) {
                    p.other = true;
                }
                return changed | set(r, vals, &p);
            }
            InstData::Store { addr, value, .. } => {
                let (a, pv) = (of(*addr), of(*value));
                let mut changed = false;
                for k in &a.slots {
                    changed |= self.cells.entry(*k).or_default().join(&pv);
                }
                return changed;
            }
            InstData::Call { func, args, .. } => {
                let mut changed = false;
                let ps = self.params.get_mut(func).expect("every function");
                for (p, &a) in ps.iter_mut().zip(args.iter()) {
                    changed |= p.join(&vals[a.index()]);
                }
                let r = self.rets[func].clone();
                return changed | set(f.inst_result(inst), vals, &r);
            }
            InstData::Jump { .. } | InstData::Brif { .. } => {
                let mut changed = false;
                for call in data.successors() {
                    let params = &f.blocks[call.block].params;
                    for (&p, &a) in params.iter().zip(call.args.iter()) {
                        let pa = vals[a.index()].clone();
                        changed |= vals[p.index()].join(&pa);
                    }
                }
                return changed;
            }
            InstData::Return { value: Some(v) } => {
                let pv = of(*v);
                return self.rets.get_mut(&fr).expect("every function").join(&pv);
            }
            _ => return false,
        };
        set(f.inst_result(inst), vals, &result)
    }

    /// Resident variables that cannot stay: reached by an access that may also go
    /// elsewhere, or whose address is stored to memory.
    fn unplaceable(&self) -> BTreeSet<u32> {
        let mut out = BTreeSet::new();
        self.each_access(|p, escaped| {
            if p.elsewhere() || escaped {
                out.extend(p.shared.iter().copied());
            }
        });
        out
    }

    /// The accesses whose address derives only from resident variables.
    fn shared_accesses(&self) -> FxHashSet<(FuncRef, Inst)> {
        let mut out = FxHashSet::default();
        for (fr, f) in self.module.functions.iter() {
            let vals = &self.vals[&fr];
            for (inst, data) in live_insts(f) {
                if let Some(addr) = access_addr(data) {
                    let p = &vals[addr.index()];
                    if !p.shared.is_empty() && !p.elsewhere() {
                        out.insert((fr, inst));
                    }
                }
            }
        }
        out
    }

    /// Calls `f(provenance, escaped)` for every access address (escaped = false) and
    /// every value stored to memory other than a tracked stack slot (escaped = true).
    fn each_access(&self, mut f: impl FnMut(&Prov, bool)) {
        for (fr, func) in self.module.functions.iter() {
            let vals = &self.vals[&fr];
            for (_, data) in live_insts(func) {
                if let Some(addr) = access_addr(data) {
                    f(&vals[addr.index()], false);
                }
                let stored: &[crate::ir::Value] = match data {
                    InstData::Store { value, .. } | InstData::AtomicRmw { value, .. } => {
                        std::slice::from_ref(value)
                    }
                    InstData::AtomicCas { replacement, .. } => std::slice::from_ref(replacement),
                    _ => &[],
                };
                let addr = access_addr(data).map(|a| &vals[a.index()]);
                let untracked =
                    addr.is_none_or(|a| a.other || !a.shared.is_empty() || a.slots.is_empty());
                for v in stored {
                    if untracked {
                        f(&vals[v.index()], true);
                    }
                }
            }
        }
    }
}

/// Sets the provenance of `r` (joins, as values are defined once); true on change.
fn set(r: Option<crate::ir::Value>, vals: &mut [Prov], p: &Prov) -> bool {
    match r {
        Some(r) => vals[r.index()].join(p),
        None => false,
    }
}

/// Whether a value of this type may carry a pointer's bits.
fn may_hold_address(s: Scalar) -> bool {
    matches!(s, Scalar::Ptr | Scalar::I64)
}

/// The address operand of a memory access.
fn access_addr(data: &InstData) -> Option<crate::ir::Value> {
    match data {
        InstData::Load { addr, .. }
        | InstData::Store { addr, .. }
        | InstData::AtomicRmw { addr, .. }
        | InstData::AtomicCas { addr, .. } => Some(*addr),
        _ => None,
    }
}

/// The instructions of `f`'s blocks (not the dead ones left in its arena).
pub fn live_insts(f: &crate::ir::Function) -> impl Iterator<Item = (Inst, &InstData)> {
    f.layout
        .iter()
        .flat_map(move |&b| f.blocks[b].insts.iter().map(move |&i| (i, &f.insts[i])))
}
