//! The uniform datapath in the dac-gpu back end: which selected instructions carry
//! `.uni` (computed once per warp on the scalar unit, see the "Uniform datapath"
//! section of `lang-spec/dac-gpu-isa.md`).
//!
//! Two steps, so that the IR analysis decides and the machine code stays correct:
//!
//! 1. **Candidates** ([`Marks`]): while selecting, every machine instruction emitted for
//!    an IR value that is uniform is a candidate. Uniform means typed uniform, or, when
//!    [`super::Options::uniformity`] is on, proven uniform by
//!    [`crate::analysis::uniformity`] (computed once per function, cached), or
//!    uniform among the lanes of a divergent region's mask `G` and eligible to be
//!    computed once ([`FunctionUniformity::uniform_in`]: lanes outside `G` then read
//!    `G`'s value, where the analysis proved nothing observes them; a `select` among
//!    such values on a divergent mask `c` is decided by `vote.any(c & G)`, see
//!    [`Marks::relative_mask`]; a mask computed from `G` never passes the
//!    confirmation, since `G`'s predicate is not uniform). Copies into
//!    a block parameter are candidates when the parameter is uniform; the prologue's
//!    parameter loads and block/gang address arithmetic are candidates too.
//! 2. **Confirmation** ([`mark`]): on the selected kernel (before register allocation,
//!    where registers are still per value), an optimistic fixed point over registers
//!    keeps a register uniform only when every instruction writing it is a candidate
//!    (or an operation whose result is the same in every lane: a vote, a ballot, a
//!    shuffle from one uniform lane, the last step of a butterfly reduction the selector
//!    vouches for with [`Marks::uniform_result`]) with a uniform guard and uniform
//!    operands (registers, immediates and the special registers equal across a warp),
//!    a vouched-for step excepted: it stays a vector instruction. Selection
//!    may expand a uniform IR value through lane-dependent steps (a reduction's
//!    shuffles, a uniform atomic done by one lane); those fail the check and stay
//!    vector instructions. Candidates whose destination is confirmed get `.uni`.
//!
//! Why this is sound: generated code never diverges the SIMT stack (every branch is a
//! `bra.uni`), so every lane of a warp executes every instruction and a register is
//! warp-uniform when all its writes are; a guarded write keeps the old value where the
//! guard is false, which is why the guard must be uniform too. The simulator checks the
//! result at run time (`FaultKind::NonUniformOperand`).

use rustc_hash::FxHashMap;

use sim::gpu::{AddrBase, Inst, Kernel, Op, RegFile, ShflMode, Space, Special, Src, VoteMode};

use crate::analysis::uniformity::{analyze_function, FunctionUniformity};
use crate::ir::{Function, Value};

/// Candidate instructions of one kernel being selected.
#[derive(Debug, Default)]
pub struct Marks {
    /// Use the uniformity analysis (else only the types).
    analysis: bool,
    /// The analysis per function, keyed by the function's address (inlined callees
    /// are selected several times but analyzed once).
    cache: FxHashMap<usize, FunctionUniformity>,
    /// Whether instructions emitted now compute a uniform value.
    current: bool,
    /// Indices of the candidate instructions.
    candidates: Vec<usize>,
    /// Indices of vector instructions whose result is the same in every lane by
    /// construction ([`Marks::uniform_result`]).
    uniform_results: Vec<usize>,
}

impl Marks {
    pub fn new(analysis: bool) -> Marks {
        Marks {
            analysis,
            ..Marks::default()
        }
    }

    /// Whether `v` of `f` is uniform: by type, or by the analysis when it is on.
    pub fn value_uniform(&mut self, f: &Function, v: Value) -> bool {
        if !f.value_type(v).varying {
            return true;
        }
        if !self.analysis {
            return false;
        }
        let a = self.analysis_of(f);
        a.is_uniform(v) || a.uniform_in(v).is_some()
    }

    fn analysis_of(&mut self, f: &Function) -> &FunctionUniformity {
        let key = f as *const Function as usize;
        self.cache.entry(key).or_insert_with(|| analyze_function(f))
    }

    /// Whether the load `v` and its address `addr` are uniform among the lanes of the
    /// same region mask `G`: the analysis then guarantees the load's mask is an exact
    /// subset of `G`, so the selector loads once when any lane of the mask is on (like
    /// a uniform load) and the result can be uniform.
    pub fn relative_load(&mut self, f: &Function, v: Value, addr: Value) -> bool {
        if !self.analysis {
            return false;
        }
        let a = self.analysis_of(f);
        a.uniform_in(v).is_some() && a.uniform_in(v) == a.uniform_in(addr)
    }

    /// For a `select` result `v` that is uniform only among the lanes of a region mask
    /// `G` and whose condition `c` is a divergent mask: `G`. The selector then decides
    /// the select by `vote.any(c & G)` (every lane of `G` agrees on `c`), a uniform
    /// predicate, so the `selp` can be uniform.
    pub fn relative_mask(&mut self, f: &Function, v: Value, c: Value) -> Option<Value> {
        if !self.analysis || !f.value_type(c).varying {
            return None;
        }
        self.analysis_of(f).select_region(v, c)
    }

    /// Instructions emitted from now on compute the IR instruction `inst`'s result:
    /// candidates when it is uniform (never for an instruction without a result).
    pub fn enter(&mut self, f: &Function, inst: crate::ir::Inst) {
        self.current = f
            .inst_result(inst)
            .is_some_and(|v| self.value_uniform(f, v));
    }

    /// Sets whether instructions emitted from now on are candidates.
    pub fn set(&mut self, uniform: bool) {
        self.current = uniform;
    }

    /// Instruction `index` was just emitted.
    pub fn note(&mut self, index: usize) {
        if self.current {
            self.candidates.push(index);
        }
    }

    /// Instruction `index` is a candidate whatever the current state.
    pub fn force(&mut self, index: usize) {
        self.candidates.push(index);
    }

    /// Instruction `index` writes the same value in every lane although its operands
    /// differ between lanes: the last step of a butterfly reduction with an exact,
    /// order-free operation, where every lane has combined the values of all 32. It
    /// stays a vector instruction (it reads other lanes' values), but what it writes
    /// counts as uniform (when its guard is), so the reduction's uses can be uniform.
    pub fn uniform_result(&mut self, index: usize) {
        self.uniform_results.push(index);
    }
}

/// Uniform-register facts of a kernel: per `%r` and per `%p`.
struct Facts {
    r: Vec<bool>,
    p: Vec<bool>,
}

impl Facts {
    fn reg(&self, file: RegFile, idx: u32, wide: bool) -> bool {
        let i = idx as usize;
        match file {
            RegFile::R => {
                let n = if wide { 2 } else { 1 };
                (i..i + n).all(|j| self.r.get(j).copied().unwrap_or(false))
            }
            RegFile::P => self.p.get(i).copied().unwrap_or(false),
            RegFile::Ur => true,
            RegFile::A => false,
        }
    }

    fn src(&self, s: Src) -> bool {
        match s {
            Src::Imm(_) => true,
            Src::Reg(r) => self.reg(r.file, r.idx, false),
            Src::Special(sp) => !matches!(sp, Special::Tid(_) | Special::LaneId),
        }
    }

    fn clear(&mut self, file: RegFile, idx: u32, wide: bool) -> bool {
        let i = idx as usize;
        let v = match file {
            RegFile::R => &mut self.r,
            RegFile::P => &mut self.p,
            _ => return false,
        };
        let n = if wide && file == RegFile::R { 2 } else { 1 };
        let mut changed = false;
        for j in i..(i + n).min(v.len()) {
            changed |= std::mem::replace(&mut v[j], false);
        }
        changed
    }
}

/// The special registers among an instruction's source operands.
fn specials_uniform(op: &Op, f: &Facts) -> bool {
    let srcs: [Option<Src>; 3] = match *op {
        Op::Bin { a, b, .. } | Op::Setp { a, b, .. } | Op::Selp { a, b, .. } => {
            [Some(a), Some(b), None]
        }
        Op::Un { a, .. } | Op::Cvt { a, .. } => [Some(a), None, None],
        Op::Mad { a, b, c, .. } => [Some(a), Some(b), Some(c)],
        Op::Shfl { a, lane, .. } => [Some(a), Some(lane), None],
        _ => [None; 3],
    };
    srcs.into_iter().flatten().all(|s| f.src(s))
}

/// Whether `inst`'s result is the same in every lane, given the facts so far.
fn result_uniform(inst: &Inst, candidate: bool, f: &Facts) -> bool {
    if let Some(g) = inst.guard {
        if !f.reg(RegFile::P, g.pred, false) {
            return false;
        }
    }
    match inst.op {
        // Same value in every lane by definition (every lane executes).
        Op::Vote {
            mode: VoteMode::Any | VoteMode::All | VoteMode::Ballot,
            ..
        } => true,
        // A broadcast from one lane, the same lane for all.
        Op::Shfl {
            mode: ShflMode::Idx,
            lane,
            dst_pred: None,
            ..
        } => f.src(lane),
        Op::Ld {
            space: Space::Param,
            ..
        } => true,
        op if candidate && op.uni_allowed() => {
            let mut ok = specials_uniform(&op, f);
            let reads = Inst {
                guard: None,
                ..*inst
            };
            reads.for_each_reg(|a| ok &= a.def || f.reg(a.reg.file, a.reg.idx, a.wide));
            if let Op::Ld { addr, .. } = op {
                ok &= !matches!(addr.base, AddrBase::DeqAddr | AddrBase::DeqData);
            }
            ok
        }
        _ => false,
    }
}

/// Marks the confirmed candidates of `k` (selected, not yet allocated) with `.uni`;
/// returns how many were marked.
pub fn mark(k: &mut Kernel, marks: &Marks) -> usize {
    let mut candidate = vec![false; k.insts.len()];
    for &i in &marks.candidates {
        if let Some(c) = candidate.get_mut(i) {
            *c = true;
        }
    }
    let mut by_construction = vec![false; k.insts.len()];
    for &i in &marks.uniform_results {
        if let Some(c) = by_construction.get_mut(i) {
            *c = true;
        }
    }
    let holds = |i: usize, inst: &Inst, f: &Facts| {
        if by_construction[i] {
            inst.guard.is_none_or(|g| f.reg(RegFile::P, g.pred, false))
        } else {
            result_uniform(inst, candidate[i], f)
        }
    };
    let mut f = Facts {
        r: vec![true; k.num_regs as usize],
        p: vec![true; k.num_preds as usize],
    };
    // Optimistic: everything uniform until a write says otherwise.
    let mut changed = true;
    while changed {
        changed = false;
        for (i, inst) in k.insts.iter().enumerate() {
            if holds(i, inst, &f) {
                continue;
            }
            inst.for_each_reg(|a| {
                if a.def {
                    changed |= f.clear(a.reg.file, a.reg.idx, a.wide);
                }
            });
        }
    }
    let mut n = 0;
    for (i, inst) in k.insts.iter_mut().enumerate() {
        if !candidate[i]
            || by_construction[i]
            || !inst.op.uni_allowed()
            || !result_uniform(inst, true, &f)
        {
            continue;
        }
        let mut dst_uniform = true;
        inst.for_each_reg(|a| {
            if a.def {
                dst_uniform &= f.reg(a.reg.file, a.reg.idx, a.wide);
            }
        });
        if dst_uniform {
            inst.uni = true;
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::gpu::{parse, Program};

    /// Marks `text`'s only kernel with every instruction a candidate; returns the
    /// `.uni` flags.
    fn marked(text: &str) -> Vec<bool> {
        let mut p: Program = parse(text).expect("assembles");
        let k = &mut p.kernels[0];
        let marks = Marks {
            candidates: (0..k.insts.len()).collect(),
            ..Marks::default()
        };
        mark(k, &marks);
        k.insts.iter().map(|i| i.uni).collect()
    }

    #[test]
    fn lane_dependent_values_and_what_they_reach_stay_vector() {
        let flags = marked(
            ".entry k(.param .u32 n) { .reg 6; .pred 2;
               ld.param.u32 %r0, [n];
               add.u32 %r1, %r0, 1;
               mov.u32 %r2, %tid.x;
               add.u32 %r3, %r1, %r2;
               mul.u32 %r4, %r1, %r1;
               exit; }",
        );
        assert_eq!(flags, [true, true, false, false, true, false]);
    }

    #[test]
    fn a_write_under_a_varying_guard_makes_its_register_varying() {
        let flags = marked(
            ".entry k() { .reg 4; .pred 2;
               mov.u32 %r0, 5;
               setp.lt.u32 %p0, %tid.x, 3;
               @%p0 mov.u32 %r0, 7;
               add.u32 %r1, %r0, 1;
               vote.any.pred %p1, %p0;
               @%p1 mov.u32 %r2, 9;
               add.u32 %r3, %r2, 1;
               exit; }",
        );
        // %r0 is written under a varying guard: neither its writes nor its reader
        // are uniform. %p1 (a vote) is uniform, so %r2 and %r3 are.
        assert_eq!(
            flags,
            [false, false, false, false, false, true, true, false]
        );
    }

    #[test]
    fn loop_carried_values_are_uniform_unless_something_varying_flows_in() {
        let flags = marked(
            ".entry k(.param .u32 n) { .reg 6; .pred 2;
               ld.param.u32 %r0, [n];
               mov.u32 %r1, 0;
               mov.u32 %r2, 0;
             L:
               add.u32 %r1, %r1, 1;
               add.u32 %r2, %r2, %laneid;
               setp.lt.u32 %p0, %r1, %r0;
               @%p0 bra.uni L;
               exit; }",
        );
        assert_eq!(flags, [true, true, false, true, false, true, false, false]);
    }

    #[test]
    fn only_candidates_are_marked() {
        let mut p = parse(
            ".entry k(.param .u32 n) { .reg 3;
               ld.param.u32 %r0, [n];
               add.u32 %r1, %r0, 1;
               add.u32 %r2, %r1, 1;
               exit; }",
        )
        .unwrap();
        let k = &mut p.kernels[0];
        let marks = Marks {
            candidates: vec![0, 2],
            ..Marks::default()
        };
        assert_eq!(mark(k, &marks), 1);
        // %r1 is not a candidate, so it is not known uniform and %r2 is not either.
        let flags: Vec<bool> = k.insts.iter().map(|i| i.uni).collect();
        assert_eq!(flags, [true, false, false, false]);
    }
}
