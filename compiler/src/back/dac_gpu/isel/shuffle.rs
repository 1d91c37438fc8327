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
//! The paper's ablations, wrong by design: `noload` is the `mov` of the source's
//! register (no move, no reload), `nocorner` the `shfl` alone (no reload of the edge
//! lanes, nor of partial or masked warps).

use sim::gpu::{BinOp, Cmp, Inst, Op, Reg, ShflMode, Type as T, UnOp, VoteMode};

use super::{imm, rs, Isel, Loc};
use crate::analysis::shuffle::{Pair, ServedCounts};
use crate::ir::{Scalar, SpecialReg, Value};
use crate::passes::ShuffleMode;

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
            return self.served(pair);
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
            return self.served(pair);
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
            self.emit(Inst::guarded(
                f.idx,
                true,
                Op::Un {
                    op: UnOp::Mov,
                    ty: T::B32,
                    dst: d,
                    a: imm(0),
                },
            ));
        }
        if pair.row {
            let row = self.same_row(pair.delta);
            self.bin(BinOp::And, T::Pred, ok, rs(ok), rs(row));
        }
        let reload = self.ptmp();
        self.un(UnOp::Not, T::Pred, reload, rs(ok));
        if let Some(m) = m {
            self.bin(BinOp::And, T::Pred, reload, rs(reload), rs(m));
        }
        let address = self.addr(space, addr);
        let ld = Op::Ld {
            space,
            ty: super::mem_ty(s),
            dst: d,
            addr: address,
        };
        self.guarded(reload, ld);
        self.served(pair)
    }

    /// Counts `pair`'s load as served (once, however many copies are selected).
    fn served(&self, pair: Pair) -> bool {
        self.ctx.served.borrow_mut().insert(pair.load, pair.delta);
        true
    }

    /// `vote.all` of `p`, the existing lanes of `mask` (`None`: `exists`).
    fn vote_all(&mut self, mask: Option<Value>, p: Reg) -> Reg {
        self.shared_reg(Shared::Whole(mask), |me| {
            let f = me.ptmp();
            me.op(Op::Vote {
                mode: VoteMode::All,
                dst: f,
                p,
            });
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

/// `shfl.down` with clamp 31 for `delta > 0`, `shfl.up` with clamp 0 otherwise.
fn shfl_mode(delta: i32) -> (ShflMode, u64) {
    if delta > 0 {
        (ShflMode::Down, 31)
    } else {
        (ShflMode::Up, 0)
    }
}
