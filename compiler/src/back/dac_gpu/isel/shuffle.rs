//! `--shuffle=all`: loads that [`crate::analysis::shuffle`] pairs with an earlier load
//! become a `shfl.up`/`shfl.down` of that load's register, with the original load kept
//! under one predicate for the lanes the shuffle cannot serve (paper 004's Listing 6,
//! no new branch):
//!
//! ```text
//! vote.all.pred   %full, %m            // every lane of the warp exists and is on
//! shfl.down.b32   %d|%ok, %a, N, 31    // %ok: the source lane is in the warp
//! and.pred        %ok, %ok, %full
//! @!%full mov.b32 %d, 0                // lanes off read 0, as the load gives them
//! [setp.lt.u32    %row, %tid.x + N, %ntid.x; and.pred %ok, %ok, %row]
//! not.pred        %re, %ok; and.pred %re, %re, %m
//! @%re ld         %d, [addr]           // edge lanes, partial or masked warps
//! ```
//!
//! `N = 0` is a `mov` of the source's register (same mask, so the same lanes read 0).
//! The row check is there when the address depends on `threadIdx`: a source lane in
//! another row of the block holds another row's value. Only 32-bit register values are
//! shuffled; loads the affine stream prefetches (DAC) stay as they are.
//!
//! **Halos** ([`crate::analysis::shuffle`], "Halos"): a load whose pair has an
//! [`Edge`] takes its edge lanes from its side's carrier `B*` (whose own edge reload
//! is the side's halo vector) by a second move, with no reload of its own in a whole
//! warp:
//!
//! ```text
//! shfl.down.b32   %d|%ok, %a, N, 31    // lanes with a source lane in the warp
//! shfl.up.b32     %h, %b*, N* - N, 0   // the others: B*'s lane l - (N* - N)
//! @!%ok mov.b32   %d, %h
//! @!%whole mov.b32 %d, 0               // %whole: vote.all [and the rows are aligned]
//! @%re ld         %d, [addr]           // %re = !%whole and %m: every lane on reloads
//! ```
//!
//! The halo's lanes are used only in a *whole* warp (every lane exists and is on: a
//! lane off holds no value of `B*`), and for [`Pair::row`] only when `blockDim.x` is a
//! multiple of 32, so a warp lies in one row (`threadIdx.x = x0 + lane`): every edge
//! lane's halo lane `l - (N* - N)` is then in its row, and so is its source lane when
//! that is in the warp. Blocks with rows narrower than a warp, or not a multiple of it,
//! have row edges inside the warp: there, and in partial or masked warps, every lane on
//! reloads, as the load would read (the carrier keeps its own per-lane reload). A
//! halo-served load is selected just before the first instruction that reads it (or
//! may write memory, or ends the block), after its carrier, whose reload then has the
//! loads in between to arrive; with DAC on, halos are not used (moving a load would
//! reorder the affine stream's queue).
//!
//! The paper's ablations, wrong by design: `noload` is the `mov` of the source's
//! register (no move, no reload), `nocorner` the `shfl` alone (no reload of the edge
//! lanes, nor of partial or masked warps).

use sim::gpu::{BinOp, Cmp, Inst, Op, Reg, ShflMode, Type as T, UnOp, VoteMode};

use rustc_hash::FxHashSet;
use sim::gpu::Space;

use super::{imm, rs, Isel, Loc};
use crate::analysis::shuffle::{Edge, EdgeService, Pair, Served, ServedCounts};
use crate::ir::{Inst as IrInst, Scalar, SpecialReg, Value};
use crate::passes::ShuffleMode;

/// The loads selected so far and those waiting for their halo's carrier, per inline
/// instance.
#[derive(Default)]
pub(super) struct HaloState {
    selected: FxHashSet<(u32, IrInst)>,
    /// (instance, load, its result), in program order.
    held: Vec<(u32, IrInst, Value)>,
    released: FxHashSet<(u32, IrInst)>,
}

/// What the shuffles of one IR block compute once and share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Shared {
    /// A mask's lanes that exist.
    Existing(Value),
    /// `vote.all` of a mask's existing lanes (`None`: of `exists`).
    Whole(Option<Value>),
    /// `threadIdx.x`.
    ThreadX,
    /// The row check for a delta.
    Row(i32),
    /// `blockDim.x` is a multiple of 32: a warp lies in one row.
    AlignedRows,
    /// A whole warp whose rows are aligned, for a mask.
    WholeRows(Option<Value>),
    /// The lanes a halo-served load reloads (on, in a warp that is not whole), for a
    /// mask and whether rows are checked.
    HaloReload(Option<Value>, bool),
    /// The last lane of the warp that exists (the reductions' shuffle clamp).
    LastLane,
}

impl super::ModuleCtx<'_> {
    /// What the entry's selection served (`None` when shuffles are off).
    pub(super) fn served_counts(&self) -> Option<ServedCounts> {
        let (_, pairs) = self.shuffles.as_ref()?;
        let served = self.served.borrow();
        (self.shuffle_mode.is_on())
            .then(|| ServedCounts::of(pairs.varying_loads, served.values().copied()))
    }

    /// Whether halos may be used: the full rewrite (not an ablation), DAC off.
    fn halos_on(&self) -> bool {
        matches!(self.shuffle_mode, ShuffleMode::All | ShuffleMode::Auto) && self.dac.is_none()
    }
}

impl Isel<'_> {
    /// The register `key` names in the current block, computed by `make` the first time.
    pub(super) fn shared_reg(&mut self, key: Shared, make: impl FnOnce(&mut Self) -> Reg) -> Reg {
        let Some(block) = self.cur_block else {
            return make(self);
        };
        let k = (self.instance, block, key);
        if let Some(&r) = self.shfl_shared.get(&k) {
            return r;
        }
        let r = make(self);
        self.shfl_shared.insert(k, r);
        r
    }

    /// The pair serving IR load `inst` of the entry being selected, if shuffles are on.
    fn shuffle_pair(&self, inst: crate::ir::Inst) -> Option<Pair> {
        let (entry, shuffles) = self.ctx.shuffles.as_ref()?;
        (*entry == self.fref).then(|| shuffles.pair(inst).copied())?
    }

    /// Selects load `inst` (result `res`, address `addr`, mask `mask`) as a shuffle of
    /// its paired source when it has one, and counts it; `false` (nothing emitted)
    /// otherwise.
    pub(super) fn shuffled_load(
        &mut self,
        inst: crate::ir::Inst,
        space: sim::gpu::Space,
        s: Scalar,
        addr: Value,
        mask: Option<Value>,
        res: Value,
    ) -> bool {
        let Some(pair) = self.shuffle_pair(inst) else {
            return false;
        };
        let Some(src) = self.f.inst_result(pair.source) else {
            return false;
        };
        let source = self.locs.get(&(self.instance, src)).copied();
        let (Some(Loc::R(a)), Loc::R(d)) = (source, self.loc(res)) else {
            return false;
        };
        if !self.f.value_type(res).varying || self.uni.relative_load(self.f, res, addr) {
            return false;
        }
        let mode = self.ctx.shuffle_mode;
        if pair.delta == 0 || mode == ShuffleMode::NoLoad {
            self.mov(T::B32, d, rs(a));
            return self.served(pair, EdgeService::Nothing);
        }
        if let Some((edge, b)) = self.halo_carrier(&pair) {
            self.halo_served_load(&pair, &edge, [a, b, d], space, s, addr, mask);
            return self.served(pair, EdgeService::Halo(edge.carrier));
        }
        if mode == ShuffleMode::NoCorner {
            let (mode, clamp) = shfl_mode(pair.delta);
            let lane = imm(u64::from(pair.delta.unsigned_abs()));
            self.op(Op::Shfl {
                mode,
                dst: d,
                dst_pred: None,
                a: rs(a),
                lane,
                clamp: imm(clamp),
            });
            return self.served(pair, EdgeService::Nothing);
        }
        let mask = mask.filter(|&m| !self.on(m));
        let m = mask.map(|v| {
            self.shared_reg(Shared::Existing(v), |me| {
                let r = me.reg(v);
                me.existing(r)
            })
        });
        // The warp is whole and every lane on: else every lane reloads (lanes off or
        // missing hold no source value).
        let whole = match m {
            Some(p) => Some(self.vote_all(mask, p)),
            None if !self.full_warp => Some(self.vote_all(None, self.exists)),
            None => None,
        };
        let n = pair.delta.unsigned_abs();
        let (mode, clamp) = shfl_mode(pair.delta);
        let ok = self.ptmp();
        self.op(Op::Shfl {
            mode,
            dst: d,
            dst_pred: Some(ok),
            a: rs(a),
            lane: imm(u64::from(n)),
            clamp: imm(clamp),
        });
        if let Some(f) = whole {
            self.bin(BinOp::And, T::Pred, ok, rs(ok), rs(f));
            self.emit(Inst::guarded(f.idx, true, mov_op(d, imm(0))));
        }
        if pair.row {
            let row = self.same_row(pair.delta);
            self.bin(BinOp::And, T::Pred, ok, rs(ok), rs(row));
        }
        let reload = self.ptmp();
        self.lanes_left(reload, ok, m);
        self.reload_under(reload, (space, s, addr, d));
        self.served(pair, EdgeService::Reload)
    }

    /// `re = !p [and m]`: the lanes `p` leaves out, of those on in `m`.
    fn lanes_left(&mut self, re: Reg, p: Reg, m: Option<Reg>) {
        self.un(UnOp::Not, T::Pred, re, rs(p));
        if let Some(m) = m {
            self.bin(BinOp::And, T::Pred, re, rs(re), rs(m));
        }
    }

    /// `@re ld d, [addr]`: the original load (of `s` in `space`) in the lanes `re`.
    fn reload_under(&mut self, re: Reg, (space, s, addr, d): (Space, Scalar, Value, Reg)) {
        let address = self.addr(space, addr);
        let ld = Op::Ld {
            space,
            ty: super::mem_ty(s),
            dst: d,
            addr: address,
        };
        self.guarded(re, ld);
    }

    /// Counts `pair`'s load as served (once, however many copies are selected).
    fn served(&self, pair: Pair, edge: EdgeService) -> bool {
        let served = Served {
            delta: pair.delta,
            edge,
        };
        self.ctx.served.borrow_mut().insert(pair.load, served);
        true
    }

    /// The halo of `pair` and its carrier's register, when halos are on, the pair has
    /// one and the carrier was selected into a 32-bit register of this instance.
    fn halo_carrier(&mut self, pair: &Pair) -> Option<(Edge, sim::gpu::Reg)> {
        let edge = pair.edge.filter(|_| self.ctx.halos_on())?;
        if !self.halo.selected.contains(&(self.instance, edge.carrier)) {
            return None;
        }
        let res = self.f.inst_result(edge.carrier)?;
        match self.locs.get(&(self.instance, res)) {
            Some(&Loc::R(b)) => Some((edge, b)),
            _ => None,
        }
    }

    /// Selects a load served by `pair`'s source `a` and, in its edge lanes, by its
    /// halo's carrier `b` (module documentation), into `d`.
    #[allow(clippy::too_many_arguments)] // the load's operands, as `shuffled_load` takes them
    fn halo_served_load(
        &mut self,
        pair: &Pair,
        edge: &Edge,
        [a, b, d]: [sim::gpu::Reg; 3],
        space: Space,
        s: Scalar,
        addr: Value,
        mask: Option<Value>,
    ) {
        let mask = mask.filter(|&m| !self.on(m));
        let m = mask.map(|v| {
            self.shared_reg(Shared::Existing(v), |me| {
                let r = me.reg(v);
                me.existing(r)
            })
        });
        let whole = self.whole_warp(mask, m, pair.row);
        let ok = self.ptmp();
        let (mode, clamp) = shfl_mode(pair.delta);
        self.op(Op::Shfl {
            mode,
            dst: d,
            dst_pred: Some(ok),
            a: rs(a),
            lane: imm(u64::from(pair.delta.unsigned_abs())),
            clamp: imm(clamp),
        });
        let h = self.tmp();
        let (mode, clamp) = shfl_mode(edge.delta);
        self.op(Op::Shfl {
            mode,
            dst: h,
            dst_pred: None,
            a: rs(b),
            lane: imm(u64::from(edge.delta.unsigned_abs())),
            clamp: imm(clamp),
        });
        self.emit(Inst::guarded(ok.idx, true, mov_op(d, rs(h))));
        let Some(w) = whole else {
            return;
        };
        self.emit(Inst::guarded(w.idx, true, mov_op(d, imm(0))));
        let reload = self.shared_reg(Shared::HaloReload(mask, pair.row), |me| {
            let re = me.ptmp();
            me.lanes_left(re, w, m);
            re
        });
        self.reload_under(reload, (space, s, addr, d));
    }

    /// The predicate of a whole warp (every lane exists and is on in `mask`, whose
    /// existing lanes are `m`) whose rows, when `row`, are aligned to the warp;
    /// `None` when that is known true (the full-warp version, no mask, no rows).
    fn whole_warp(&mut self, mask: Option<Value>, m: Option<Reg>, row: bool) -> Option<Reg> {
        let whole = match m {
            Some(p) => Some(self.vote_all(mask, p)),
            None if !self.full_warp => Some(self.vote_all(None, self.exists)),
            None => None,
        };
        if !row {
            return whole;
        }
        let aligned = self.shared_reg(Shared::AlignedRows, |me| {
            let (t, p) = (me.tmp(), me.ptmp());
            let nx = me.ntid[0];
            me.bin(BinOp::And, T::B32, t, rs(nx), imm(31));
            me.setp(Cmp::Eq, T::U32, p, rs(t), imm(0));
            p
        });
        let Some(w) = whole else {
            return Some(aligned);
        };
        Some(self.shared_reg(Shared::WholeRows(mask), |me| {
            let p = me.ptmp();
            me.bin(BinOp::And, T::Pred, p, rs(w), rs(aligned));
            p
        }))
    }

    /// Holds back load `inst` when its edge lanes come from a halo: it is selected
    /// just before the first instruction that reads it or may write memory, or the
    /// block's terminator ([`Isel::release_held`]). By then its carrier has been
    /// selected (the plan puts every read after the carrier), and the carrier's
    /// reload has had the loads in between to arrive, where a move right after it
    /// would wait for it.
    pub(super) fn hold_for_halo(&mut self, inst: IrInst) -> bool {
        let key = (self.instance, inst);
        if !self.ctx.halos_on() || self.halo.released.contains(&key) {
            return false;
        }
        if self.shuffle_pair(inst).and_then(|p| p.edge).is_none() {
            return false;
        }
        let Some(res) = self.f.inst_result(inst) else {
            return false;
        };
        self.halo.held.push((self.instance, inst, res));
        self.halo.released.insert(key);
        true
    }

    /// Load `inst` was selected (a carrier, perhaps).
    pub(super) fn load_selected(&mut self, inst: IrInst) {
        self.halo.selected.insert((self.instance, inst));
    }

    /// Selects the held loads that `inst`, about to be selected, needs selected
    /// first: those it reads, or all when it may write memory, synchronizes, calls
    /// or ends the block.
    pub(super) fn release_held(&mut self, inst: IrInst) {
        if self.halo.held.is_empty() {
            return;
        }
        let data = &self.f.insts[inst];
        let all = crate::analysis::shuffle::ends_hold(data);
        let instance = self.instance;
        let operands = data.operands();
        let (go, stay): (Vec<_>, Vec<_>) = std::mem::take(&mut self.halo.held)
            .into_iter()
            .partition(|&(i, _, res)| i == instance && (all || operands.contains(&res)));
        self.halo.held = stay;
        for (_, load, _) in go {
            self.select_held(load);
        }
    }

    /// Selects the held-back load `load` where the selector stands, with its own span.
    fn select_held(&mut self, load: IrInst) {
        let f = self.f;
        let saved = self.span.replace(f.spans[load]);
        self.uni.enter(f, load);
        self.inst(load);
        self.span = saved;
    }
    /// `vote.all` of `p`, the existing lanes of `mask` (`None`: `exists`). With DAC on
    /// the kernel may launch in its block's real shape, where the lanes of a partial
    /// warp past the block do not run and so do not vote (`split_body`): there the
    /// warp is whole when all 32 lanes are in the ballot of `p`.
    fn vote_all(&mut self, mask: Option<Value>, p: Reg) -> Reg {
        self.shared_reg(Shared::Whole(mask), |me| {
            let f = me.ptmp();
            if me.ctx.dac.is_some() {
                let b = me.ballot(p);
                me.setp(Cmp::Eq, T::U32, f, rs(b), imm(0xffff_ffff));
            } else {
                me.op(Op::Vote {
                    mode: VoteMode::All,
                    dst: f,
                    p,
                });
            }
            f
        })
    }

    /// A predicate: lane `l + delta`'s `threadIdx.x` is in this lane's row
    /// (`0 <= threadIdx.x + delta < blockDim.x`).
    fn same_row(&mut self, delta: i32) -> Reg {
        self.shared_reg(Shared::Row(delta), |me| {
            let tx = me.shared_reg(Shared::ThreadX, |me| {
                let tx = me.tmp();
                me.thread_idx(SpecialReg::ThreadIdxX, tx);
                tx
            });
            let row = me.ptmp();
            let n = u64::from(delta.unsigned_abs());
            if delta > 0 {
                let t = me.tmp();
                me.bin(BinOp::Add, T::U32, t, rs(tx), imm(n));
                let nx = me.ntid[0];
                me.setp(Cmp::Lt, T::U32, row, rs(t), rs(nx));
            } else {
                me.setp(Cmp::Ge, T::U32, row, rs(tx), imm(n));
            }
            row
        })
    }
}

/// `mov.b32 d, a`.
fn mov_op(d: Reg, a: sim::gpu::Src) -> Op {
    Op::Un {
        op: UnOp::Mov,
        ty: T::B32,
        dst: d,
        a,
    }
}

/// `shfl.down` with clamp 31 for `delta > 0`, `shfl.up` with clamp 0 otherwise.
fn shfl_mode(delta: i32) -> (ShflMode, u64) {
    if delta > 0 {
        (ShflMode::Down, 31)
    } else {
        (ShflMode::Up, 0)
    }
}
