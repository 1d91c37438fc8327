//! `--shuffle=all`: loads that [`crate::analysis::shuffle`] pairs with an earlier load
//! become a `shfl.up`/`shfl.down` of that load's register, with the original load kept
//! under one predicate for the lanes the shuffle cannot serve (paper 004's Listing 6,
//! no new branch). In a full warp with no mask (the full-warp version, the load's
//! mask known all on) every lane is on, and a lane's source is valid when it is in
//! the warp (the `shfl`'s validity) and in its row:
//!
//! ```text
//! shfl.down.b32   %d|%ok, %a, N, 31    // %ok: the source lane is in the warp
//! [setp.lt.u32    %row, %tid.x + N, %ntid.x; and.pred %ok, %ok, %row]
//! not.pred        %re, %ok
//! @%re ld         %d, [addr]           // the edge lanes
//! ```
//!
//! Under a mask, or in a warp whose lanes may not all exist (`exists`), the test is
//! made lane by lane from a ballot of the lanes on (`%on`: the mask's lanes that
//! exist), so a warp with lanes off still takes the shuffle wherever the source lane
//! is on: a lane `l` on takes its source's lane `l + N` when that lane is in the warp,
//! on, and (rows) in its row; the other lanes on reload; the lanes off read 0, as the
//! load gives them:
//!
//! ```text
//! vote.ballot.b32 %b, %on              // per mask (shared by the block's shuffles)
//! shr.u32         %hi, %b, %laneid     // per side: bit k is lane l + k's
//!                                      // (up: shl.b32 %lo, %b, 31 - %laneid)
//! and.b32         %t, %hi, K           // per N: K = 1 | 1 << N (up: bits 31, 31 + N)
//! setp.eq.u32     %take, %t, K         // the lane and its source are on
//! [and.pred       %take, %take, %row]
//! xor.pred        %re, %on, %take      // the lanes on that reload
//! shfl.down.b32   %d, %a, N, 31
//! @!%take mov.b32 %d, 0
//! @%re ld         %d, [addr]
//! ```
//!
//! The shifts bring in zeros, so a source lane past the warp's edge counts as off. A
//! `shfl` reading a lane that is off (or, in a decoupled kernel, a lane past the
//! block that does not run) gets that lane's register as it stands (the ISA defines
//! it: lang-spec/dac-gpu-isa.md, "Warp-level instructions"), but no lane keeps such
//! a value: `%take` holds only where the source lane's bit is set in the ballot,
//! which counts only the lanes active and on. Only 32-bit register values are
//! shuffled; loads the affine stream prefetches (DAC) stay as they are. `N = 0` is a
//! `mov` of the source's register (same mask, so the same lanes read 0).
//!
//! **Halos** ([`crate::analysis::shuffle`], "Halos"): a load whose pair has an
//! [`Edge`] takes its edge lanes from its side's carrier `B*` (whose own edge reload
//! is the side's halo vector) by a second move. In a full warp with no mask:
//!
//! ```text
//! shfl.down.b32   %d|%ok, %a, N, 31    // lanes with a source lane in the warp
//! shfl.up.b32     %h, %b*, N* - N, 0   // the others: B*'s lane l - (N* - N)
//! @!%ok mov.b32   %d, %h
//! [@!%aligned mov.b32 %d, 0; @!%aligned ld %d, [addr]]   // rows not warp-aligned
//! ```
//!
//! The halo's lanes are used there, for [`Pair::row`], only when `blockDim.x` is a
//! multiple of 32, so a warp lies in one row (`threadIdx.x = x0 + lane`): every edge
//! lane's halo lane `l - (N* - N)` is then in its row, and so is its source lane when
//! that is in the warp; else every lane reloads. Under a mask or in a warp whose
//! lanes may not all exist, lane by lane, with the ballot's test for `N` and for
//! `N - N*`: a lane on takes its source's lane when that is on, else `B*`'s lane
//! `l + N - N*` when that is on (and in its row: `B*` holds its own value in every lane
//! on), else reloads:
//!
//! ```text
//! or.pred         %srv, %take, %hok    // per N and N - N*
//! xor.pred        %re, %on, %srv
//! shfl.down.b32   %d, %a, N, 31
//! shfl.up.b32     %h, %b*, N* - N, 0
//! @!%take mov.b32 %d, %h
//! @!%srv mov.b32  %d, 0
//! @%re ld         %d, [addr]
//! ```
//!
//! A halo-served load is selected just before the first instruction that reads it (or
//! may write memory, or ends the block), after its carrier, whose reload then has the
//! loads in between to arrive; with DAC on, halos are not used (moving a load would
//! reorder the affine stream's queue).
//!
//! The paper's ablations, wrong by design: `noload` is the `mov` of the source's
//! register (no move, no reload), `nocorner` the `shfl` alone (no reload of the edge
//! lanes, nor of partial or masked warps).

use sim::gpu::{BinOp, Cmp, Inst, Op, Reg, ShflMode, Special, Src, Type as T, UnOp, VoteMode};

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
    /// `threadIdx.x`.
    ThreadX,
    /// The row check for a delta.
    Row(i32),
    /// `blockDim.x` is a multiple of 32: a warp lies in one row.
    AlignedRows,
    /// The lanes a halo-served load reloads in a full warp with no mask: every lane,
    /// when the rows are not aligned.
    Unaligned,
    /// The last lane of the warp that exists (the reductions' shuffle clamp).
    LastLane,
    /// `vote.ballot` of a mask's existing lanes (`None`: of `exists`).
    Ballot(Option<Value>),
    /// The ballot shifted so that bit 0 is the lane's own (`true`: bit `k` is lane
    /// `l + k`'s) or bit 31 is (`false`: bit `31 - k` is lane `l - k`'s).
    Bits(Option<Value>, bool),
    /// `31 - %laneid`.
    LaneFromTop,
    /// The lanes on whose lane `l + N` is on (and in their row, when checked): a mask,
    /// `N`, rows checked.
    SourceOn(Option<Value>, i32, bool),
    /// The lanes on that a move by `N` leaves to the reload.
    Reload(Option<Value>, i32, bool),
    /// The lanes a halo-served load takes from a move (its source's or its halo's):
    /// a mask, `N`, `N - N*`, rows checked.
    HaloServed(Option<Value>, i32, i32, bool),
    /// The lanes on such a load reloads.
    HaloLeft(Option<Value>, i32, i32, bool),
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
        let (mode, clamp) = shfl_mode(pair.delta);
        let lane = imm(u64::from(pair.delta.unsigned_abs()));
        // Lanes on, some perhaps off or missing: lane by lane, from the ballot.
        if let Some(on) = m.or((!self.full_warp).then_some(self.exists)) {
            let take = self.source_on(mask, on, pair.delta, pair.row);
            self.op(Op::Shfl {
                mode,
                dst: d,
                dst_pred: None,
                a: rs(a),
                lane,
                clamp: imm(clamp),
            });
            self.emit(Inst::guarded(take.idx, true, mov_op(d, imm(0))));
            let reload = self.shared_reg(Shared::Reload(mask, pair.delta, pair.row), |me| {
                let re = me.ptmp();
                me.bin(BinOp::Xor, T::Pred, re, rs(on), rs(take));
                re
            });
            self.reload_under(reload, (space, s, addr, d));
            return self.served(pair, EdgeService::Reload);
        }
        // A full warp, no mask: the shuffle's validity is the source lane's.
        let ok = self.ptmp();
        self.op(Op::Shfl {
            mode,
            dst: d,
            dst_pred: Some(ok),
            a: rs(a),
            lane,
            clamp: imm(clamp),
        });
        if pair.row {
            let row = self.same_row(pair.delta);
            self.bin(BinOp::And, T::Pred, ok, rs(ok), rs(row));
        }
        let reload = self.ptmp();
        self.un(UnOp::Not, T::Pred, reload, rs(ok));
        self.reload_under(reload, (space, s, addr, d));
        self.served(pair, EdgeService::Reload)
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
        if let Some(on) = m.or((!self.full_warp).then_some(self.exists)) {
            self.halo_served_lanes(pair, edge, [a, b, d], (space, s, addr), (mask, on));
            return;
        }
        // A full warp with no mask: the halo serves it whole unless its rows are not
        // aligned to the warp.
        let aligned = pair.row.then(|| self.aligned_rows());
        let ok = self.ptmp();
        let h = self.halo_moves(pair, edge, [a, b, d], Some(ok));
        self.emit(Inst::guarded(ok.idx, true, mov_op(d, rs(h))));
        let Some(w) = aligned else {
            return;
        };
        self.emit(Inst::guarded(w.idx, true, mov_op(d, imm(0))));
        let reload = self.shared_reg(Shared::Unaligned, |me| {
            let re = me.ptmp();
            me.un(UnOp::Not, T::Pred, re, rs(w));
            re
        });
        self.reload_under(reload, (space, s, addr, d));
    }

    /// A halo-served load in a warp with lanes off or missing (`on`: the existing lanes
    /// on in `mask`), lane by lane: a lane on takes its source's lane `l + N` when that
    /// lane is on (and in its row), else the carrier's lane `l + N - N*` when that one
    /// is, else reloads; a lane off reads 0.
    fn halo_served_lanes(
        &mut self,
        pair: &Pair,
        edge: &Edge,
        [a, b, d]: [Reg; 3],
        (space, s, addr): (Space, Scalar, Value),
        (mask, on): (Option<Value>, Reg),
    ) {
        let take = self.source_on(mask, on, pair.delta, pair.row);
        let key = (mask, pair.delta, edge.delta, pair.row);
        let served = self.shared_reg(Shared::HaloServed(key.0, key.1, key.2, key.3), |me| {
            let hok = me.source_on(mask, on, edge.delta, pair.row);
            let p = me.ptmp();
            me.bin(BinOp::Or, T::Pred, p, rs(take), rs(hok));
            p
        });
        let h = self.halo_moves(pair, edge, [a, b, d], None);
        self.emit(Inst::guarded(take.idx, true, mov_op(d, rs(h))));
        self.emit(Inst::guarded(served.idx, true, mov_op(d, imm(0))));
        let reload = self.shared_reg(Shared::HaloLeft(key.0, key.1, key.2, key.3), |me| {
            let re = me.ptmp();
            me.bin(BinOp::Xor, T::Pred, re, rs(on), rs(served));
            re
        });
        self.reload_under(reload, (space, s, addr, d));
    }

    /// The two moves of a halo-served load: `d` from the source `a`'s lane `l + N`
    /// (its validity into `ok`, when given), and a fresh register from the carrier
    /// `b`'s lane `l + N - N*`, returned.
    fn halo_moves(
        &mut self,
        pair: &Pair,
        edge: &Edge,
        [a, b, d]: [Reg; 3],
        ok: Option<Reg>,
    ) -> Reg {
        let (mode, clamp) = shfl_mode(pair.delta);
        self.op(Op::Shfl {
            mode,
            dst: d,
            dst_pred: ok,
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
        h
    }

    /// The lanes on in `on` (the existing lanes on in `mask`) whose lane `l + delta`
    /// is in the warp and on too, and, when `row`, in their row of the block: from
    /// `vote.ballot` of `on` (bit `j`: lane `j` is on), shifted so that bit 0 (`delta >
    /// 0`) or bit 31 is the lane's own, the lane's bit and its source's tested at once:
    ///
    /// ```text
    /// vote.ballot.b32 %b, %on             // once per mask
    /// shr.u32         %hi, %b, %laneid    // delta > 0: bit k is lane l + k's
    /// shl.b32         %lo, %b, 31 - %laneid   // delta < 0: bit 31 - k is lane l - k's
    /// and.b32         %t, %hi, K          // K = 1 | 1 << delta (or 1 << 31 | 1 << 31 + delta)
    /// setp.eq.u32     %take, %t, K        // [and.pred %take, %take, %row]
    /// ```
    ///
    /// The shifts bring in zeros, so a source lane past the warp's edge counts as off.
    /// A lane off (or not running) never serves another, so no lane's result depends on
    /// what a `shfl` reads from a lane off.
    fn source_on(&mut self, mask: Option<Value>, on: Reg, delta: i32, row: bool) -> Reg {
        self.shared_reg(Shared::SourceOn(mask, delta, row), |me| {
            let bits = me.shared_reg(Shared::Bits(mask, delta > 0), |me| {
                let ballot = me.shared_reg(Shared::Ballot(mask), |me| {
                    let r = me.tmp();
                    me.op(Op::Vote {
                        mode: VoteMode::Ballot,
                        dst: r,
                        p: on,
                    });
                    r
                });
                let r = me.tmp();
                if delta > 0 {
                    let lane = Src::Special(Special::LaneId);
                    me.bin(BinOp::Shr, T::U32, r, rs(ballot), lane);
                } else {
                    let rev = me.shared_reg(Shared::LaneFromTop, |me| {
                        let t = me.tmp();
                        let lane = Src::Special(Special::LaneId);
                        me.bin(BinOp::Sub, T::U32, t, imm(31), lane);
                        t
                    });
                    me.bin(BinOp::Shl, T::B32, r, rs(ballot), rs(rev));
                }
                r
            });
            let k = if delta > 0 {
                1u64 | 1 << delta
            } else {
                1u64 << 31 | 1 << (31 + delta)
            };
            let t = me.tmp();
            me.bin(BinOp::And, T::B32, t, rs(bits), imm(k));
            let take = me.ptmp();
            me.setp(Cmp::Eq, T::U32, take, rs(t), imm(k));
            if row {
                let same = me.same_row(delta);
                me.bin(BinOp::And, T::Pred, take, rs(take), rs(same));
            }
            take
        })
    }

    /// `blockDim.x` is a multiple of 32: a warp lies in one row.
    fn aligned_rows(&mut self) -> Reg {
        self.shared_reg(Shared::AlignedRows, |me| {
            let (t, p) = (me.tmp(), me.ptmp());
            let nx = me.ntid[0];
            me.bin(BinOp::And, T::B32, t, rs(nx), imm(31));
            me.setp(Cmp::Eq, T::U32, p, rs(t), imm(0));
            p
        })
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
