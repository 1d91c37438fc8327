//! Strength reduction of address arithmetic in loops (issue 7, point 4: the nyuzi back
//! end's use of affine reasoning beyond block loads).
//!
//! **What it computes.** In a natural loop with a preheader and one back edge, an
//! *induction variable* is a header parameter `p` whose back-edge argument is
//! `p + s` (`s` loop-invariant), or `select c, p + s, p` (the lowering's guarded
//! update of a counter under the loop's mask or `any` of it). A value `v` computed in
//! the loop from `p` by `iadd`/`isub` with anything invariant, `imul` by an invariant,
//! `ishl` by an invariant count, `ineg`, `splat`, `ireduce` and `bitcast` between
//! integers and pointers is an affine function of `p` in the ring of integers modulo
//! `2^w`: `v = f(p)` with `f(p + s) = f(p) + D`, where `D` is `f`'s derivative applied
//! to `s` (computed symbolically, folded when constant). Each such `v` that contains a
//! multiply or shift, has the counter's variability (a uniform counter's reductions
//! stay uniform: the scalar `k * stride` that a `splat` feeds into a varying address,
//! not the varying address itself, which would cost a vector register and a vector add
//! per iteration and hide the block access's scalar base), and has a use outside these
//! chains (a load or store address, a `splat`, a compare, a branch argument) becomes a
//! new header parameter `q`: initialised in the
//! preheader to `f(init)` (the chain copied there with `p` replaced by its initial
//! value) and advanced on the back edge by `q + D` (under the same `select c` when the
//! counter's update is guarded and `c` cannot be shown true), so the multiply, shift
//! and add chain leaves the loop body. The chain's now-dead instructions are removed.
//!
//! **Why exact.** Every operation admitted above is a ring homomorphism or an
//! affine map modulo `2^w` (two's-complement wrapping is the IR's integer semantics;
//! the shift count is taken modulo the width, so `x << k` is `x * 2^(k mod w)`), so
//! `f(p + s) - f(p)` is the same `D` for every `p`, without any assumption about
//! overflow. `sext` and `zext` are not affine modulo `2^w` (the affine analysis records
//! them as [`crate::analysis::affine::NoWrap`] assumptions); the pass stops at them, so
//! it never needs an assumption. The mirrored `select` keeps `q == f(p)` per lane even
//! when the guard is off in some iterations or lanes. The guard is dropped when it is
//! a true constant, or `any m` with `m` defined before the loop and the preheader
//! entering the loop on the true edge of `brif any m` (the same `m`): `any m` then
//! holds throughout the loop.
//!
//! **Why.** The lowering recomputes `base + (row * n + k) * 4` in every iteration; on
//! nyuzi that is a multiply, a shift or multiply and two adds per access per
//! iteration, against one add on the back edge. The pass runs on the nyuzi back end's
//! copy of the module only (`back::nyuzi::codegen`), so the interpreter, the shared pipeline
//! and the dac-gpu decoupling see the IR unchanged.
//!
//! Limits: at most [`MAX_NEW_PARAMS`] new parameters per loop; loops with several back
//! edges or without a unique outside predecessor are left alone; values depending on
//! two induction variables, or through `sext`/`zext`, are not reduced.

use cranelift_entity::packed_option::PackedOption;
use cranelift_entity::{EntitySet, SecondaryMap};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::dominance::DominatorTree;
use crate::ir::{
    BinaryOp, Block, ConvOp, Function, Inst, InstData, LaneOp, Module, Scalar, Type, UnaryOp,
    Value, ValueDef,
};

use super::cfg;

/// The most new loop-carried parameters one loop gets (each holds a register).
pub const MAX_NEW_PARAMS: usize = 6;

/// How deep the invariance and linearity queries follow operands.
const MAX_DEPTH: u32 = 24;

/// Strength-reduces every function of `module`; returns how many values were reduced.
pub fn run_module(module: &mut Module) -> usize {
    module.functions.values_mut().map(reduce_function).sum()
}

/// A natural loop with one back edge and a preheader.
struct Loop {
    header: Block,
    blocks: FxHashSet<Block>,
    /// `blocks` as a dense set, for the membership tests of every operand.
    members: EntitySet<Block>,
    preheader: Block,
    latch: Block,
}

/// Strength-reduces the loops of one function, innermost (smallest) first; returns
/// how many values were reduced.
pub fn reduce_function(func: &mut Function) -> usize {
    let dom = DominatorTree::compute(func);
    let preds = cfg::predecessors(func);
    let mut loops: Vec<Loop> = dom
        .rpo()
        .iter()
        .filter_map(|&h| natural_loop(&dom, &preds, h))
        .collect();
    loops.sort_by_key(|l| l.blocks.len());
    // Shared by the loops: reducing one only adds instructions (which it records), and
    // the ones it deletes are read by nothing.
    let mut def_block = DefBlocks::with_capacity(func.insts.len());
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            def_block[i] = b.into();
        }
    }
    loops
        .iter()
        .map(|lp| reduce_loop(func, lp, &mut def_block))
        .sum()
}

/// The natural loop of `header` ([`cfg::natural_loop`]), if it has exactly one back
/// edge and one entry edge.
fn natural_loop(
    dom: &DominatorTree,
    preds: &cranelift_entity::SecondaryMap<Block, Vec<Block>>,
    header: Block,
) -> Option<Loop> {
    let found = cfg::natural_loop(dom, preds, header)?;
    let (&[latch], &[preheader]) = (&found.latches[..], &found.entries[..]) else {
        return None;
    };
    let mut members = EntitySet::new();
    for &b in &found.blocks {
        members.insert(b);
    }
    dom.is_reachable(preheader).then_some(Loop {
        header,
        blocks: found.blocks,
        members,
        preheader,
        latch,
    })
}

/// The arguments `from`'s terminator passes to `to` (its only edge there).
fn edge_args(func: &Function, from: Block, to: Block) -> Option<Vec<Value>> {
    let t = func.terminator(from)?;
    let calls: Vec<_> = func.insts[t]
        .successors()
        .into_iter()
        .filter(|c| c.block == to)
        .collect();
    let [call] = calls[..] else {
        return None;
    };
    Some(call.args.to_vec())
}

/// An induction variable: header parameter `param` starts at `init` and steps by the
/// invariant `step` on the back edge, under `guard` when that is `Some`.
#[derive(Clone, Copy)]
struct Iv {
    param: Value,
    init: Value,
    step: Value,
    guard: Option<Value>,
}

/// How a loop value depends on the induction variable.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The same in every iteration.
    Inv,
    /// An affine function of the variable; `mul` when the chain multiplies or shifts.
    Lin { mul: bool },
    /// Anything else.
    Other,
}

/// A derivative: a constant or a value available in the preheader.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sym {
    Const(i64),
    Val(Value),
}

/// [`Kind`]s found so far, per value (dense: every value of the loop is asked).
type KindMemo = SecondaryMap<Value, Option<Kind>>;

/// The block of each instruction in a laid-out block (a dense table: every operand of
/// a loop is looked up).
type DefBlocks = SecondaryMap<Inst, PackedOption<Block>>;

/// The queries and rewrites on one loop.
struct Ctx<'a> {
    func: &'a mut Function,
    lp: &'a Loop,
    /// The block of every instruction of the function.
    def_block: &'a mut DefBlocks,
    /// Per value: 0 not yet asked, 1 variant, 2 invariant (dense: every operand of
    /// the loop is asked).
    invariant: SecondaryMap<Value, u8>,
    hoisted: FxHashMap<Value, Value>,
}

impl Ctx<'_> {
    fn in_loop(&self, v: Value) -> bool {
        match self.func.values[v].def {
            ValueDef::Param(b, _) => self.lp.members.contains(b),
            ValueDef::Result(i) => self
                .def_block
                .get(i)
                .and_then(|b| b.expand())
                .is_some_and(|b| self.lp.members.contains(b)),
        }
    }

    fn inst_of(&self, v: Value) -> Option<Inst> {
        match self.func.values[v].def {
            ValueDef::Result(i) => Some(i),
            ValueDef::Param(..) => None,
        }
    }

    /// Same value in every iteration: defined outside the loop, or computed inside by
    /// pure, non-trapping instructions from invariant operands.
    fn is_invariant(&mut self, v: Value, depth: u32) -> bool {
        if !self.in_loop(v) {
            return true;
        }
        match self.invariant[v] {
            1 => return false,
            2 => return true,
            _ => {}
        }
        let ok = depth > 0
            && self.inst_of(v).is_some_and(|i| {
                let data = &self.func.insts[i];
                cfg::is_speculatable(data) && {
                    let operands = data.operands();
                    operands.iter().all(|&x| self.is_invariant(x, depth - 1))
                }
            });
        self.invariant[v] = 1 + u8::from(ok);
        ok
    }

    /// The preheader's copy of invariant `v` (`v` itself when defined outside).
    fn hoist(&mut self, v: Value) -> Value {
        if !self.in_loop(v) {
            return v;
        }
        if let Some(&h) = self.hoisted.get(&v) {
            return h;
        }
        let i = self
            .inst_of(v)
            .expect("an invariant loop value is a result");
        let mut data = self.func.insts[i].clone();
        let ops: Vec<Value> = data.operands().iter().map(|&x| self.hoist(x)).collect();
        let mut k = 0;
        data.map_operands(|_| {
            k += 1;
            ops[k - 1]
        });
        let h = self.emit(self.lp.preheader, data, self.func.value_type(v));
        self.hoisted.insert(v, h);
        h
    }

    /// Appends `data` before `block`'s terminator; its result.
    fn emit(&mut self, block: Block, data: InstData, ty: Type) -> Value {
        let term = self.func.blocks[block].insts.pop().expect("a terminator");
        let span = self.func.spans[term];
        let ni = self.func.append_inst(block, data, Some(ty), span);
        self.func.blocks[block].insts.push(term);
        self.def_block[ni] = block.into();
        self.func.results[ni].expect("a result")
    }

    /// How `v` depends on `iv` (memoized in `memo`).
    fn kind(&mut self, iv: &Iv, v: Value, memo: &mut KindMemo, depth: u32) -> Kind {
        if v == iv.param {
            return Kind::Lin { mul: false };
        }
        if let Some(k) = memo[v] {
            return k;
        }
        let k = if self.is_invariant(v, MAX_DEPTH) {
            Kind::Inv
        } else if depth == 0 {
            Kind::Other
        } else {
            match self.inst_of(v).map(|i| self.func.insts[i].clone()) {
                Some(data) => self.kind_of_inst(iv, v, &data, memo, depth - 1),
                None => Kind::Other,
            }
        };
        memo[v] = Some(k);
        k
    }

    fn kind_of_inst(
        &mut self,
        iv: &Iv,
        v: Value,
        data: &InstData,
        memo: &mut KindMemo,
        depth: u32,
    ) -> Kind {
        let lin = |mul| Kind::Lin { mul };
        let is_int = |t: Type| t.scalar.is_int() || t.scalar == Scalar::Ptr;
        if !is_int(self.func.value_type(v)) {
            return Kind::Other;
        }
        match data {
            InstData::Binary { op, args } => {
                let a = self.kind(iv, args[0], memo, depth);
                let b = self.kind(iv, args[1], memo, depth);
                match (op, a, b) {
                    (
                        BinaryOp::Iadd | BinaryOp::Isub,
                        Kind::Lin { mul: x },
                        Kind::Lin { mul: y },
                    ) => lin(x || y),
                    (BinaryOp::Iadd | BinaryOp::Isub, Kind::Lin { mul }, Kind::Inv)
                    | (BinaryOp::Iadd | BinaryOp::Isub, Kind::Inv, Kind::Lin { mul }) => lin(mul),
                    (BinaryOp::Imul, Kind::Lin { .. }, Kind::Inv)
                    | (BinaryOp::Imul, Kind::Inv, Kind::Lin { .. }) => lin(true),
                    (BinaryOp::Ishl, Kind::Lin { .. }, Kind::Inv)
                        if self.func.value_type(v).scalar != Scalar::Ptr =>
                    {
                        lin(true)
                    }
                    _ => Kind::Other,
                }
            }
            InstData::Unary {
                op: UnaryOp::Ineg,
                arg,
            }
            | InstData::Splat { arg } => self.kind(iv, *arg, memo, depth),
            InstData::Convert {
                op: ConvOp::Ireduce | ConvOp::Bitcast,
                arg,
                ..
            } if is_int(self.func.value_type(*arg)) => self.kind(iv, *arg, memo, depth),
            _ => Kind::Other,
        }
    }

    /// `v` with the induction variable replaced by `at`, computed in the preheader.
    fn eval_at(
        &mut self,
        iv: &Iv,
        v: Value,
        at: Value,
        memo: &mut FxHashMap<Value, Value>,
    ) -> Value {
        if v == iv.param {
            return at;
        }
        if let Some(&x) = memo.get(&v) {
            return x;
        }
        let x = if self.is_invariant(v, MAX_DEPTH) {
            self.hoist(v)
        } else {
            let i = self.inst_of(v).expect("a linear value is a result");
            let mut data = self.func.insts[i].clone();
            let ops: Vec<Value> = data
                .operands()
                .iter()
                .map(|&o| self.eval_at(iv, o, at, memo))
                .collect();
            let mut k = 0;
            data.map_operands(|_| {
                k += 1;
                ops[k - 1]
            });
            self.emit(self.lp.preheader, data, self.func.value_type(v))
        };
        memo.insert(v, x);
        x
    }

    /// The constant `v` holds, if it is an integer constant or a splat of one.
    fn const_of(&self, v: Value) -> Option<i64> {
        match self.inst_of(v).map(|i| &self.func.insts[i])? {
            InstData::Iconst { bits, .. } => Some(*bits as i64),
            InstData::Splat { arg } => self.const_of(*arg),
            _ => None,
        }
    }

    /// `f(p + s) - f(p)` for the linear `v = f(p)`, in the preheader.
    fn deriv(&mut self, iv: &Iv, v: Value, memo: &mut FxHashMap<Value, Sym>) -> Sym {
        if let Some(&d) = memo.get(&v) {
            return d;
        }
        let d = if v == iv.param {
            let s = self.hoist(iv.step);
            self.const_of(s).map_or(Sym::Val(s), Sym::Const)
        } else if self.is_invariant(v, MAX_DEPTH) {
            Sym::Const(0)
        } else {
            let i = self.inst_of(v).expect("a linear value is a result");
            let data = self.func.insts[i].clone();
            self.deriv_of_inst(iv, v, &data, memo)
        };
        memo.insert(v, d);
        d
    }

    fn deriv_of_inst(
        &mut self,
        iv: &Iv,
        v: Value,
        data: &InstData,
        memo: &mut FxHashMap<Value, Sym>,
    ) -> Sym {
        let ty = self.func.value_type(v);
        match data {
            InstData::Binary { op, args } => {
                let (ta, tb) = (self.func.value_type(args[0]), self.func.value_type(args[1]));
                let da = self.deriv(iv, args[0], memo);
                let db = self.deriv(iv, args[1], memo);
                match op {
                    BinaryOp::Iadd | BinaryOp::Isub => self.binary(*op, [(da, ta), (db, tb)], ty),
                    // The invariant factor, as `kind_of_inst` found it: a factor
                    // computed from `p` can have a zero derivative (`i - i`) without
                    // being invariant, and cannot be hoisted.
                    BinaryOp::Imul if self.is_invariant(args[1], MAX_DEPTH) => {
                        let b = self.operand_sym(args[1]);
                        self.binary(*op, [(da, ta), (b, tb)], ty)
                    }
                    BinaryOp::Imul => {
                        let a = self.operand_sym(args[0]);
                        self.binary(*op, [(a, ta), (db, tb)], ty)
                    }
                    _ => {
                        let k = self.operand_sym(args[1]);
                        self.binary(*op, [(da, ta), (k, tb)], ty)
                    }
                }
            }
            InstData::Unary { op, arg } => match self.deriv(iv, *arg, memo) {
                Sym::Const(c) => Sym::Const(c.wrapping_neg()),
                Sym::Val(x) => {
                    Sym::Val(self.emit(self.lp.preheader, InstData::Unary { op: *op, arg: x }, ty))
                }
            },
            InstData::Splat { arg } => match self.deriv(iv, *arg, memo) {
                Sym::Const(c) => Sym::Const(c),
                Sym::Val(x) => {
                    Sym::Val(self.emit(self.lp.preheader, InstData::Splat { arg: x }, ty))
                }
            },
            InstData::Convert { op, arg, to } => match self.deriv(iv, *arg, memo) {
                Sym::Const(c) => Sym::Const(c),
                Sym::Val(x) => Sym::Val(self.emit(
                    self.lp.preheader,
                    InstData::Convert {
                        op: *op,
                        arg: x,
                        to: *to,
                    },
                    ty,
                )),
            },
            _ => unreachable!("deriv of a non-linear value"),
        }
    }

    /// An invariant operand as a symbol (hoisted when not a constant).
    fn operand_sym(&mut self, v: Value) -> Sym {
        let h = self.hoist(v);
        self.const_of(h).map_or(Sym::Val(h), Sym::Const)
    }

    /// `op a b` folded when possible, else emitted in the preheader with operand types
    /// `ta`, `tb` (those of the original instruction) and result type `ty`.
    fn binary(&mut self, op: BinaryOp, [(a, ta), (b, tb)]: [(Sym, Type); 2], ty: Type) -> Sym {
        let bits = ty.scalar.bits().min(64);
        match (op, a, b) {
            (BinaryOp::Iadd, Sym::Const(x), Sym::Const(y)) => return Sym::Const(x.wrapping_add(y)),
            (BinaryOp::Isub, Sym::Const(x), Sym::Const(y)) => return Sym::Const(x.wrapping_sub(y)),
            (BinaryOp::Imul, Sym::Const(x), Sym::Const(y)) => return Sym::Const(x.wrapping_mul(y)),
            (BinaryOp::Ishl, Sym::Const(x), Sym::Const(k)) => {
                return Sym::Const(x.wrapping_shl((k as u64 % bits as u64) as u32))
            }
            (BinaryOp::Iadd, x, Sym::Const(0)) | (BinaryOp::Isub, x, Sym::Const(0)) if ta == ty => {
                return x;
            }
            (BinaryOp::Iadd, Sym::Const(0), y) if tb == ty => return y,
            (BinaryOp::Imul, Sym::Const(0), _) | (BinaryOp::Imul, _, Sym::Const(0)) => {
                return Sym::Const(0)
            }
            (BinaryOp::Ishl, Sym::Const(0), _) => return Sym::Const(0),
            _ => {}
        }
        let x = self.sym_value(self.lp.preheader, a, ta);
        let y = self.sym_value(self.lp.preheader, b, tb);
        Sym::Val(self.emit(self.lp.preheader, InstData::Binary { op, args: [x, y] }, ty))
    }

    /// A symbol as a value of type `ty`, emitted in `block` when constant.
    fn sym_value(&mut self, block: Block, s: Sym, ty: Type) -> Value {
        match s {
            Sym::Val(v) => v,
            Sym::Const(c) => self.emit(block, InstData::Iconst { ty, bits: c as u64 }, ty),
        }
    }
}

/// The induction variables of `lp`'s header.
fn induction_vars(cx: &mut Ctx, entry: &[Value], back: &[Value]) -> Vec<Iv> {
    let params = cx.func.blocks[cx.lp.header].params.clone();
    let mut ivs = Vec::new();
    for (k, &p) in params.iter().enumerate() {
        let (Some(&init), Some(&arg)) = (entry.get(k), back.get(k)) else {
            continue;
        };
        let (update, guard) = match cx.inst_of(arg).map(|i| cx.func.insts[i].clone()) {
            Some(InstData::Select { args: [c, x, y] }) if y == p => (x, Some(c)),
            _ => (arg, None),
        };
        let Some(InstData::Binary {
            op: BinaryOp::Iadd,
            args: [a, b],
        }) = cx.inst_of(update).map(|i| cx.func.insts[i].clone())
        else {
            continue;
        };
        let step = if a == p {
            b
        } else if b == p {
            a
        } else {
            continue;
        };
        if step == p || !cx.is_invariant(step, MAX_DEPTH) {
            continue;
        }
        let guard = guard.filter(|&c| !guard_holds(&*cx, c));
        ivs.push(Iv {
            param: p,
            init,
            step,
            guard,
        });
    }
    ivs
}

/// Whether the guard `c` is true throughout the loop: a true constant, or `any m`
/// with `m` defined before the loop when the preheader enters on the true edge of
/// `brif any m`.
fn guard_holds(cx: &Ctx, c: Value) -> bool {
    let func = &*cx.func;
    let data = cx.inst_of(c).map(|i| &func.insts[i]);
    if let Some(InstData::Iconst { bits, .. }) = data {
        return bits & 1 == 1;
    }
    let Some(InstData::Lane {
        op: LaneOp::Any,
        args,
    }) = data
    else {
        return false;
    };
    let [m] = args[..] else { return false };
    if cx.in_loop(m) {
        return false;
    }
    let Some((cond, then_dest, else_dest)) = cfg::brif_of(func, cx.lp.preheader) else {
        return false;
    };
    then_dest.block == cx.lp.header
        && else_dest.block != cx.lp.header
        && cfg::same_value(func, cond, c, 2)
}

/// One value to reduce: `root = f(iv)`.
struct Root {
    iv: Iv,
    root: Value,
}

/// The values of `lp` worth reducing: linear in one induction variable, with a multiply
/// or shift in their chain, and a use that is not itself such a chain.
fn find_roots(cx: &mut Ctx, ivs: &[Iv]) -> Vec<Root> {
    let blocks: Vec<Block> = cx
        .func
        .layout
        .iter()
        .copied()
        .filter(|b| cx.lp.blocks.contains(b))
        .collect();
    let insts: Vec<Inst> = blocks
        .iter()
        .flat_map(|&b| cx.func.blocks[b].insts.clone())
        .collect();
    // The users of the loop's values (the only ones asked for), wherever they are:
    // a pass over the whole function, so made only once a candidate needs it.
    let mut users: Option<FxHashMap<Value, Vec<Inst>>> = None;
    let mut roots = Vec::new();
    for iv in ivs {
        let mut memo = KindMemo::with_capacity(cx.func.values.len());
        for &i in &insts {
            let Some(v) = cx.func.inst_result(i) else {
                continue;
            };
            // A uniform counter keeps its reductions uniform: a varying root would hold
            // a vector register and a vector add per iteration where the original adds a
            // splat scalar to an invariant vector (and may hide a block access's base).
            let varying_iv = cx.func.value_type(iv.param).varying;
            if cx.kind(iv, v, &mut memo, MAX_DEPTH) != (Kind::Lin { mul: true })
                || cx.func.value_type(v).varying != varying_iv
            {
                continue;
            }
            let users = users.get_or_insert_with(|| loop_value_users(cx));
            let escapes = users.get(&v).into_iter().flatten().any(|&u| {
                cx.func.inst_result(u).is_none_or(|r| {
                    cx.func.value_type(r).varying != varying_iv
                        || matches!(cx.kind(iv, r, &mut memo, MAX_DEPTH), Kind::Other)
                })
            });
            if escapes && roots.len() < MAX_NEW_PARAMS {
                roots.push(Root { iv: *iv, root: v });
            }
        }
    }
    roots
}

/// The instructions reading each value of the loop, wherever they are.
fn loop_value_users(cx: &Ctx) -> FxHashMap<Value, Vec<Inst>> {
    let mut users: FxHashMap<Value, Vec<Inst>> = FxHashMap::default();
    for &b in &cx.func.layout {
        for &i in &cx.func.blocks[b].insts {
            for v in cx.func.insts[i].operands() {
                if cx.in_loop(v) {
                    users.entry(v).or_default().push(i);
                }
            }
        }
    }
    users
}

/// Adds `arg` to the call from `from` to `to`.
fn push_edge_arg(func: &mut Function, from: Block, to: Block, arg: Value) {
    let t = func.terminator(from).expect("a terminator");
    for call in cfg::calls_mut(&mut func.insts[t]) {
        if call.block == to {
            call.args.push(arg);
        }
    }
}

/// Reduces the roots of one loop; returns how many.
fn reduce_loop(func: &mut Function, lp: &Loop, def_block: &mut DefBlocks) -> usize {
    let (Some(entry), Some(back)) = (
        edge_args(func, lp.preheader, lp.header),
        edge_args(func, lp.latch, lp.header),
    ) else {
        return 0;
    };
    let func_values = func.values.len();
    let mut cx = Ctx {
        func,
        lp,
        def_block,
        invariant: SecondaryMap::with_capacity(func_values),
        hoisted: FxHashMap::default(),
    };
    let ivs = induction_vars(&mut cx, &entry, &back);
    let roots = find_roots(&mut cx, &ivs);
    let mut replaced = Vec::new();
    for r in &roots {
        let ty = cx.func.value_type(r.root);
        let init = cx.eval_at(&r.iv, r.root, r.iv.init, &mut FxHashMap::default());
        let d = cx.deriv(&r.iv, r.root, &mut FxHashMap::default());
        let q = cx.func.append_block_param(lp.header, ty);
        let dv = cx.sym_value(lp.latch, d, ty);
        let inc = cx.emit(
            lp.latch,
            InstData::Binary {
                op: BinaryOp::Iadd,
                args: [q, dv],
            },
            ty,
        );
        let next = match r.iv.guard {
            Some(c) => cx.emit(lp.latch, InstData::Select { args: [c, inc, q] }, ty),
            None => inc,
        };
        push_edge_arg(cx.func, lp.preheader, lp.header, init);
        push_edge_arg(cx.func, lp.latch, lp.header, next);
        replaced.push((r.root, q));
    }
    // One sweep for all the roots: each becomes a fresh parameter, which no root is.
    let mut uses = cfg::Replacements::default();
    for &(root, q) in &replaced {
        uses.insert(root, q);
    }
    uses.apply(cx.func);
    let mut cleaned = lp.blocks.clone();
    cleaned.insert(lp.preheader);
    remove_dead(cx.func, &cleaned, cx.def_block);
    replaced.len()
}

/// Deletes the unused pure instructions of `blocks` (the reduced chains), to a fixpoint:
/// one count of every value's uses in the function, then a worklist that deletes each
/// pure instruction of `blocks` whose result has no use left and takes its operands'
/// uses off (the same instructions as deleting the unused ones round after round, in
/// one pass over the function instead of one per round).
fn remove_dead(func: &mut Function, blocks: &FxHashSet<Block>, def_block: &DefBlocks) {
    let mut uses: SecondaryMap<Value, u32> = SecondaryMap::with_capacity(func.values.len());
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            for v in func.insts[i].operands() {
                uses[v] += 1;
            }
        }
    }
    let in_blocks: Vec<Block> = func
        .layout
        .iter()
        .copied()
        .filter(|b| blocks.contains(b))
        .collect();
    let removable = |func: &Function, i: Inst, uses: &SecondaryMap<Value, u32>| {
        cfg::is_pure(&func.insts[i]) && func.inst_result(i).is_some_and(|r| uses[r] == 0)
    };
    let mut dead: EntitySet<Inst> = EntitySet::with_capacity(func.insts.len());
    let mut work: Vec<Inst> = in_blocks
        .iter()
        .flat_map(|&b| func.blocks[b].insts.iter().copied())
        .filter(|&i| removable(func, i, &uses))
        .collect();
    while let Some(i) = work.pop() {
        if !dead.insert(i) {
            continue;
        }
        for v in func.insts[i].operands() {
            uses[v] -= 1;
            let ValueDef::Result(d) = func.values[v].def else {
                continue;
            };
            let in_loop = def_block[d].expand().is_some_and(|b| blocks.contains(&b));
            if uses[v] == 0 && in_loop && removable(func, d, &uses) {
                work.push(d);
            }
        }
    }
    for b in in_blocks {
        func.blocks[b].insts.retain(|i| !dead.contains(*i));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::cfg::run_on_text;

    fn pass(m: &mut Module) {
        run_module(m);
    }

    /// The text of `block` (its header line to the next block's).
    fn block_text<'a>(out: &'a str, block: &str) -> &'a str {
        let start = out.find(&format!("\n{block}")).expect("block present") + 1;
        let rest = &out[start..];
        let end = rest[1..].find("\nblock").map_or(rest.len(), |e| e + 1);
        &rest[..end]
    }

    /// A uniform counter stepped under `any m`, entered on `brif any m`: two addresses
    /// (`a + 4k` uniform, `b + 64k + 4 lane` varying).
    const UNIFORM_LOOP: &str = "module lanes 16 ptr 4

function export @f(i32, ptr, ptr) masked {
block0(v0: i32, v1: ptr, v2: ptr, v3: [bool]):
    v4 = iconst.i32 0
    v5 = any v3
    brif v5, block1(v4), block3
block1(v6: i32):
    v7 = icmp slt v6, v0
    brif v7, block2, block3
block2:
    v8 = iconst.i32 4
    v9 = imul v6, v8
    v10 = bitcast.ptr v9
    v11 = iadd v1, v10
    v12 = load.i32 generic v11
    v13 = iconst.i32 64
    v14 = imul v6, v13
    v15 = splat v14
    v16 = special lane_index
    v17 = iconst.i32 4
    v18 = splat v17
    v19 = imul v16, v18
    v20 = iadd v15, v19
    v21 = bitcast.ptr v20
    v22 = splat v2
    v23 = iadd v22, v21
    v24 = splat v12
    store generic v23, v24 mask v3
    v25 = iconst.i32 1
    v26 = iadd v6, v25
    v27 = any v3
    v28 = select v27, v26, v6
    jump block1(v28)
block3:
    return
}
";

    #[test]
    fn uniform_counter_addresses_become_loop_carried() {
        let out = run_on_text(UNIFORM_LOOP, pass);
        let header = block_text(&out, "block1");
        assert!(
            header.starts_with("block1(v12: i32, v13: ptr, v14: i32)"),
            "{out}"
        );
        assert_eq!(
            header.lines().next().unwrap().matches(": ").count(),
            3,
            "{out}"
        );
        let body = block_text(&out, "block2");
        // The multiplies by the counter left the body (`lane * 4` is invariant).
        assert_eq!(body.matches("imul").count(), 1, "{out}");
        // `any v3` holds throughout the loop: no guard on the new updates.
        assert_eq!(body.matches("select").count(), 1, "{out}");
        // Initial values are computed in the entry block, from the counter's start.
        let entry = block_text(&out, "block0");
        assert!(entry.contains("imul"), "{out}");
        assert!(entry.contains("brif v5, block1(v4, v"), "{out}");
    }

    /// A varying counter stepped under a varying mask: the update is mirrored.
    const MASKED_LOOP: &str = "module lanes 16 ptr 4

function export @f(i32, ptr, [bool]) {
block0(v0: i32, v1: ptr, v2: [bool]):
    v3 = iconst.[i32] 0
    jump block1(v3, v2)
block1(v4: [i32], v5: [bool]):
    v6 = splat v0
    v7 = icmp slt v4, v6
    v8 = band v5, v7
    v9 = any v8
    brif v9, block2, block3
block2:
    v10 = iconst.i32 12
    v11 = splat v10
    v12 = imul v4, v11
    v13 = iconst.i32 2
    v14 = splat v13
    v15 = ishl v12, v14
    v16 = bitcast.ptr v15
    v17 = splat v1
    v18 = iadd v17, v16
    v19 = load.i32 generic v18 mask v8
    store generic v18, v19 mask v8
    v20 = iconst.i32 1
    v21 = splat v20
    v22 = iadd v4, v21
    v23 = select v8, v22, v4
    jump block1(v23, v8)
block3:
    return
}
";

    #[test]
    fn masked_counter_update_is_mirrored() {
        let out = run_on_text(MASKED_LOOP, pass);
        let body = block_text(&out, "block2");
        assert!(!body.contains("imul") && !body.contains("ishl"), "{out}");
        assert_eq!(body.matches("select v18").count(), 2, "{out}");
        // The step is folded: 1 * 12 << 2 = 48.
        assert!(body.contains("iconst.[ptr] 48"), "{out}");
    }

    /// `sext` of the counter is not affine modulo 2^64: nothing changes.
    const SEXT_LOOP: &str = "module lanes 16 ptr 8

function export @f(i32, ptr) {
block0(v0: i32, v1: ptr):
    v2 = iconst.i32 0
    jump block1(v2)
block1(v3: i32):
    v4 = icmp slt v3, v0
    brif v4, block2, block3
block2:
    v5 = sext.i64 v3
    v6 = iconst.i64 4
    v7 = imul v5, v6
    v8 = bitcast.ptr v7
    v9 = iadd v1, v8
    v10 = load.i32 generic v9
    store generic v9, v10
    v11 = iconst.i32 1
    v12 = iadd v3, v11
    jump block1(v12)
block3:
    return
}
";

    #[test]
    fn sign_extended_counters_are_left_alone() {
        let out = run_on_text(SEXT_LOOP, pass);
        assert!(out.contains("block1(v3: i32):"), "{out}");
        assert_eq!(
            out,
            crate::ir::write::module_to_string(&crate::ir::parse_module(SEXT_LOOP).unwrap())
        );
        assert!(block_text(&out, "block2").contains("imul"), "{out}");
    }

    /// A counter stepped by a value computed in the loop is not an induction variable.
    #[test]
    fn variant_steps_are_left_alone() {
        let text = SEXT_LOOP
            .replace("ptr 8", "ptr 4")
            .replace("sext.i64 v3", "iadd v3, v3")
            .replace("iconst.i64 4", "iconst.i32 4")
            .replace("iadd v3, v11", "iadd v3, v10");
        let out = run_on_text(&text, pass);
        assert!(out.contains("block1(v3: i32):"), "{out}");
    }

    /// Every example, lowered and legalized for nyuzi, still verifies after the pass, and
    /// the pass finds something to reduce in the loop-heavy ones.
    #[test]
    fn examples_verify_after_the_pass() {
        use crate::driver::{self, FrontOptions, Stage};
        use crate::front::sema::Target;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let mut total = 0;
        for entry in std::fs::read_dir(&dir).expect("examples") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "spmd") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("readable");
            let options = FrontOptions {
                target: Target {
                    program_count: 16,
                    pointer_size: 4,
                },
                ..FrontOptions::default()
            };
            let name = path.display().to_string();
            let front = driver::run_front(&name, Some(path.clone()), text, &options, Stage::Check);
            let mut m = driver::lower_for_target(&front, true, driver::LegalTarget::Nyuzi)
                .unwrap_or_else(|_| panic!("{name} lowers"));
            total += run_module(&mut m);
            if let Err(e) = crate::ir::verify_module(&m) {
                panic!("{name}: {:?}", &e[..e.len().min(3)]);
            }
        }
        assert!(total >= 5, "only {total} values reduced over the examples");
    }
}
