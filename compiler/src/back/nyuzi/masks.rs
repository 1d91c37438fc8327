//! Masks the Nyuzi instruction selector knows to be *full* (every existing lane on)
//! at a point of the function, and the mask work that knowledge removes.
//!
//! A mask register is full when it has the bit of every existing lane of the gang
//! set (the lanes in the context record's `EXISTS`). Facts come from:
//! * constants: an all-on mask constant (0xffff);
//! * run-time checks: past the then-edge of `brif any(m)` for a mask `m` the
//!   uniformity analysis proves uniform, `m` is full, in a function whose entry-active
//!   lanes are the existing lanes ([`lane0_function`]: uniform then means "the same
//!   in every existing lane", and one existing lane on means all are); past the
//!   then-edge of `brif all(m)`, `m` is full for any `m`; a `band` that is full has
//!   full operands;
//! * combination: `band` of full masks, `bor` with a full mask, a block parameter
//!   whose incoming argument is full on every edge (the greatest fixed point, so loop
//!   masks fed back by themselves stay full; sound by induction over the run, since
//!   every argument's fact holds when its edge is taken).
//!
//! What it buys ([`MaskFacts::alias`], used by `isel`): a `select` on a full mask is
//! its true operand and a `band` with a full mask is the other operand (no
//! instruction); `any`/`all` of a full mask are true, so the `brif` that tests them
//! is a jump; an effect under a full mask runs on the existing lanes. Lanes that do
//! not exist may then hold other values than the interpreter's, which nothing
//! observes (their effects are masked off; the same rule as `isel`'s store-to-load
//! forwarding and the scalarized values).

use rustc_hash::{FxHashMap, FxHashSet};

use crate::analysis::uniformity::FunctionUniformity;
use crate::ir::dominance::DominatorTree;
#[cfg(doc)]
use crate::ir::Module;
use crate::ir::{BinaryOp, Block, Function, InstData, LaneOp, Type, Value, ValueDef};

/// How deep [`MaskFacts::full_at`] looks through `band`/`bor` definitions.
const DEPTH: u32 = 12;

/// Whether `f`'s entry-active lanes are exactly the gang's existing lanes (so lane 0
/// is one of them): it takes no mask (it runs with every lane on), or it is a launch
/// entry that no function of the module calls (launchers pass the existing lanes).
/// `called`: whether some function of the module calls `f` ([`Module::called_functions`]).
pub fn lane0_function(f: &Function, called: bool) -> bool {
    !f.sig.takes_mask || (f.linkage.is_entry() && !called)
}

/// The mask facts of one function.
pub struct MaskFacts {
    /// See [`lane0_function`].
    pub lane0: bool,
    dom: DominatorTree,
    /// Blocks entered only through the then-edge of a check, with the masks the check
    /// proves full there.
    checks: FxHashMap<Block, Vec<Value>>,
    /// Block parameters that are full wherever they are defined.
    full_params: FxHashSet<Value>,
    /// Values that are another value (see the module docs), resolved to the end.
    alias: FxHashMap<Value, Value>,
    /// `any`/`all` results known true.
    known_true: FxHashSet<Value>,
}

impl MaskFacts {
    /// Computes the facts of `f`; `called` says whether some function of its module
    /// calls it; `uni` is the uniformity analysis (`None` with `--no-uniformity`: only
    /// constants and `all` checks count).
    pub fn compute(f: &Function, called: bool, uni: Option<&FunctionUniformity>) -> MaskFacts {
        let mut facts = MaskFacts {
            lane0: lane0_function(f, called),
            dom: DominatorTree::compute(f),
            checks: FxHashMap::default(),
            full_params: FxHashSet::default(),
            alias: FxHashMap::default(),
            known_true: FxHashSet::default(),
        };
        facts.find_checks(f, uni);
        facts.solve_params(f);
        facts.find_aliases(f);
        facts
    }

    /// The value `v` stands for (itself when not an alias).
    pub fn resolve(&self, v: Value) -> Value {
        let mut cur = v;
        while let Some(&n) = self.alias.get(&cur) {
            cur = n;
        }
        cur
    }

    /// The select and `band` results that are one of their operands.
    pub fn aliases(&self) -> &FxHashMap<Value, Value> {
        &self.alias
    }

    /// Whether mask `m` is known to have no lane on that does not exist: the hidden
    /// mask parameter (callers pass `mask & exists`, launchers the existing lanes), or
    /// a `band` with such a mask (looking `depth` definitions deep), through aliases.
    pub fn within_exists(&self, f: &Function, m: Value, depth: u32) -> bool {
        let m = self.resolve(m);
        match f.values[m].def {
            ValueDef::Param(b, k) => {
                f.sig.takes_mask
                    && Some(b) == f.entry_block()
                    && k as usize + 1 == f.blocks[b].params.len()
            }
            ValueDef::Result(i) => match &f.insts[i] {
                InstData::Binary {
                    op: BinaryOp::Band,
                    args,
                } if depth > 0 && f.value_type(m) == Type::MASK => {
                    self.within_exists(f, args[0], depth - 1)
                        || self.within_exists(f, args[1], depth - 1)
                }
                _ => false,
            },
        }
    }

    /// Whether block `b` is reachable from the entry.
    pub fn reachable(&self, b: Block) -> bool {
        self.dom.is_reachable(b)
    }

    /// Whether the `any`/`all` result `v` is known true.
    pub fn is_true(&self, v: Value) -> bool {
        self.known_true.contains(&v)
    }

    /// Whether mask `v` is full in block `b` (at any point of it where `v` is
    /// defined).
    pub fn full_at(&self, f: &Function, v: Value, b: Block) -> bool {
        self.full_depth(f, v, b, DEPTH)
    }

    fn full_depth(&self, f: &Function, v: Value, b: Block, depth: u32) -> bool {
        if f.value_type(v).scalar != crate::ir::Scalar::Bool {
            return false;
        }
        if self.full_params.contains(&v) || self.checked(v, b) {
            return true;
        }
        let i = match f.values[v].def {
            ValueDef::Result(i) => i,
            // In a lane-0 function the hidden mask parameter is the existing lanes.
            ValueDef::Param(pb, k) => {
                return self.lane0
                    && f.sig.takes_mask
                    && Some(pb) == f.entry_block()
                    && k as usize + 1 == f.blocks[pb].params.len();
            }
        };
        match &f.insts[i] {
            InstData::Iconst { bits, .. } => bits & 1 == 1,
            InstData::Splat { arg } => self.full_depth(f, *arg, b, depth),
            InstData::Binary { op, args } if depth > 0 => {
                let a = self.full_depth(f, args[0], b, depth - 1);
                match op {
                    BinaryOp::Band => a && self.full_depth(f, args[1], b, depth - 1),
                    BinaryOp::Bor => a || self.full_depth(f, args[1], b, depth - 1),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// Whether a check proves `v` full in every run of `b`.
    fn checked(&self, v: Value, b: Block) -> bool {
        let mut cur = Some(b);
        while let Some(x) = cur {
            if self.checks.get(&x).is_some_and(|ms| ms.contains(&v)) {
                return true;
            }
            cur = self.dom.idom(x);
        }
        false
    }

    /// Records, for each `brif any(m)` (uniform `m`, lane-0 function) or `brif
    /// all(m)` whose then-target is entered by that edge alone, the masks it proves
    /// full there: `m` and the operands of the `band`s it is made of.
    fn find_checks(&mut self, f: &Function, uni: Option<&FunctionUniformity>) {
        let mut edges_into: FxHashMap<Block, usize> = FxHashMap::default();
        for &b in &f.layout {
            for s in f.successors(b) {
                *edges_into.entry(s).or_default() += 1;
            }
        }
        for &b in &f.layout {
            let Some(t) = f.terminator(b) else { continue };
            let InstData::Brif {
                cond, then_dest, ..
            } = &f.insts[t]
            else {
                continue;
            };
            let target = then_dest.block;
            if edges_into.get(&target) != Some(&1) || Some(target) == f.entry_block() {
                continue;
            }
            let Some(m) = self.checked_mask(f, *cond, uni) else {
                continue;
            };
            let mut proven = Vec::new();
            conjuncts(f, m, DEPTH, &mut proven);
            self.checks.entry(target).or_default().extend(proven);
        }
    }

    /// The mask a true `cond` proves full, if any.
    fn checked_mask(
        &self,
        f: &Function,
        cond: Value,
        uni: Option<&FunctionUniformity>,
    ) -> Option<Value> {
        let ValueDef::Result(i) = f.values[cond].def else {
            return None;
        };
        match &f.insts[i] {
            InstData::Lane {
                op: LaneOp::All,
                args,
            } => args.first().copied(),
            InstData::Lane {
                op: LaneOp::Any,
                args,
            } => {
                let m = *args.first()?;
                let uniform = uni.is_some_and(|u| u.is_uniform(m));
                (uniform && self.lane0).then_some(m)
            }
            _ => None,
        }
    }

    /// The greatest set of mask block parameters whose incoming arguments are full on
    /// every edge (on its source block, or proven by the edge's own check).
    fn solve_params(&mut self, f: &Function) {
        let entry = f.entry_block();
        let mut incoming: FxHashMap<Value, Vec<(Block, Value)>> = FxHashMap::default();
        for &b in &f.layout {
            let Some(t) = f.terminator(b) else { continue };
            for call in f.insts[t].successors() {
                let params = &f.blocks[call.block].params;
                for (&p, &a) in params.iter().zip(&call.args) {
                    incoming.entry(p).or_default().push((b, a));
                }
            }
        }
        self.full_params = incoming
            .keys()
            .copied()
            .filter(|&p| {
                f.value_type(p) == Type::MASK
                    && !matches!(f.values[p].def, ValueDef::Param(b, _) if Some(b) == entry)
            })
            .collect();
        loop {
            let drop: Vec<Value> = self
                .full_params
                .iter()
                .copied()
                .filter(|p| !incoming[p].iter().all(|&(src, a)| self.full_at(f, a, src)))
                .collect();
            if drop.is_empty() {
                return;
            }
            for p in drop {
                self.full_params.remove(&p);
            }
        }
    }

    /// Selects on full masks, `band`s with a full mask, `any`/`all` of full masks.
    fn find_aliases(&mut self, f: &Function) {
        for &b in &f.layout {
            for &i in &f.blocks[b].insts {
                let Some(r) = f.inst_result(i) else { continue };
                // Only an operand of the result's own type can stand for it.
                let same = |x: Value| f.value_type(x) == f.value_type(r);
                match &f.insts[i] {
                    InstData::Select { args } if same(args[1]) && self.full_at(f, args[0], b) => {
                        self.alias.insert(r, args[1]);
                    }
                    InstData::Binary {
                        op: BinaryOp::Band,
                        args,
                    } if f.value_type(r) == Type::MASK => {
                        // Not when that would lose the bound to the existing lanes:
                        // each effect under the mask would AND it again.
                        let keeps = |s: &Self, full: Value, other: Value| {
                            same(other)
                                && s.full_at(f, full, b)
                                && (!s.within_exists(f, full, 8) || s.within_exists(f, other, 8))
                        };
                        if keeps(self, args[0], args[1]) {
                            self.alias.insert(r, args[1]);
                        } else if keeps(self, args[1], args[0]) {
                            self.alias.insert(r, args[0]);
                        }
                    }
                    InstData::Lane {
                        op: LaneOp::Any | LaneOp::All,
                        args,
                    } if args.first().is_some_and(|&m| self.full_at(f, m, b)) => {
                        self.known_true.insert(r);
                    }
                    _ => {}
                }
            }
        }
    }
}

/// `m` and, through `band`s, the masks it is the conjunction of.
fn conjuncts(f: &Function, m: Value, depth: u32, out: &mut Vec<Value>) {
    out.push(m);
    if depth == 0 {
        return;
    }
    if let ValueDef::Result(i) = f.values[m].def {
        if let InstData::Binary {
            op: BinaryOp::Band,
            args,
        } = &f.insts[i]
        {
            conjuncts(f, args[0], depth - 1, out);
            conjuncts(f, args[1], depth - 1, out);
        }
    }
}
