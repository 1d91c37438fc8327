//! `--shuffle=all` on nyuzi: a load that [`crate::analysis::shuffle`] pairs with an
//! earlier load of the same block takes that load's vector register moved by `N`
//! lanes (the native `shuffle` with the index vector `lane + N`), and only the lanes
//! the move cannot serve read memory, through the load's own selection (block load or
//! gather) under a smaller mask:
//!
//! ```text
//! ok   = (act >> N) & act [& row(N)]   // 16-bit lane masks; act << -N for N < 0
//! re   = act ^ ok                                   // ok is within act
//! d    = the load of addr under re                  // 0 in the other lanes
//! move_mask d, ok, shuffle(a, lane + N)
//! ```
//!
//! * `act`: the access's active lanes (its mask and the existing lanes), as for the
//!   load itself. Lane `l` takes the source's lane `l + N` only when that lane was on
//!   too: both loads have the same mask, so a lane off in it read 0, not the bytes.
//!   The shift also leaves out the lanes whose source is not in the gang
//!   (`l + N` outside `0..16`): a mask has no bit above lane 15.
//! * `row(N)`: when the address depends on `threadIdx` ([`Pair::row`]), the lanes whose
//!   source is in the same row of the block, `0 <= threadIdx.x + N < blockDim.x` (a
//!   gang of a 2-D block spans rows narrower than 16 lanes).
//!
//! The reload is the original access for the edge lanes, so every lane gets exactly
//! the bytes the load would give it. A gather costs one cycle per active lane, so an
//! access that gathered 16 lanes (an unaligned `a[i + 1]`) now gathers `|N|`; an
//! aligned one stays one block load and gains nothing. `N = 0` is a copy of the
//! source's register (same mask: the same lanes read 0). Only 32-bit values, one
//! vector register each, are moved; the source must be a selected vector value.
//!
//! The paper's ablations, wrong by design: `noload` takes the source's register as it
//! is (no move, no reload), `nocorner` the move alone (no reload of the edge lanes).

use sim::nyuzi::{AluOp, MemOp, RFmt};

use super::super::abi::ctx;
use super::{width, Isel, Reg};
use crate::analysis::shuffle::Pair;
use crate::ir::{Inst, Scalar, Value};
use crate::passes::ShuffleMode;

/// What the shuffles of one IR block compute once and share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Shared {
    /// The index vector `lane + N`.
    Index(i32),
    /// The lanes a move by `N` serves, of the active lanes of an access under the IR
    /// mask (and whether the rows are checked).
    Served(Option<Value>, i32, bool),
    /// The lanes that reload.
    Reload(Option<Value>, i32, bool),
}

/// How a shuffled load's lanes are served: `ok` lanes from `moved`, the others (of the
/// access's active lanes) by the reload under `reload`.
pub(super) struct Moved {
    ok: Reg,
    moved: Reg,
    pub(super) reload: Reg,
}

/// What the shuffle of one load gives.
pub(super) enum Served {
    /// `N = 0`: the source's register itself.
    Reuse(Reg),
    /// A lane move and the reload mask of the edge lanes.
    Moved(Moved),
}

impl Isel<'_> {
    /// The pair serving load `inst` (result `res`, element `s`), when shuffles are on
    /// and the pair can be selected: 32-bit varying values, the source selected in a
    /// vector register.
    fn selectable_pair(&self, inst: Inst, res: Value, s: Scalar) -> Option<(Pair, Value)> {
        let pair = *self.shuffles.as_ref()?.pair(inst)?;
        let src = self.f.inst_result(pair.source)?;
        let ok_value = |v: Value| {
            let ty = self.ty(v);
            ty.varying && !self.scal.contains(&self.facts.resolve(v))
        };
        let selectable = width(s) == 32
            && s != Scalar::Bool
            && ok_value(res)
            && ok_value(src)
            && self.live.contains(src)
            && !self.forward.contains_key(&src)
            && !self.vf.all.contains(&src);
        selectable.then_some((pair, src))
    }

    /// Serves load `inst` from its paired source when it has one (`act`: the access's
    /// active lanes under the IR mask `mask`); `None` selects the load as it is.
    pub(super) fn shuffled_load(
        &mut self,
        inst: Inst,
        res: Value,
        s: Scalar,
        mask: Option<Value>,
        act: Reg,
    ) -> Option<Served> {
        let (pair, src) = self.selectable_pair(inst, res, s)?;
        let a = self.reg(src);
        if pair.delta == 0 || self.shuffle_mode == ShuffleMode::NoLoad {
            return Some(Served::Reuse(a));
        }
        let n = pair.delta;
        let idx = self.shared(Shared::Index(n), |me| {
            let lane = me.ctx_load(MemOp::Block, ctx::LANE_INDEX);
            me.bin_imm(true, AluOp::AddI, lane, n)
        });
        let moved = self.bin(true, AluOp::Shuffle, a, idx);
        if self.shuffle_mode == ShuffleMode::NoCorner {
            return Some(Served::Reuse(moved));
        }
        let ok = self.shared(Shared::Served(mask, n, pair.row), |me| {
            // Lanes whose source lane is in the gang, and on.
            let from = if n > 0 {
                me.bin_imm(false, AluOp::Shr, act, n)
            } else {
                me.bin_imm(false, AluOp::Shl, act, -n)
            };
            let ok = me.bin(false, AluOp::And, from, act);
            if pair.row {
                let row = me.same_row(n);
                me.bin(false, AluOp::And, ok, row)
            } else {
                ok
            }
        });
        let reload = self.shared(Shared::Reload(mask, n, pair.row), |me| {
            me.bin(false, AluOp::Xor, act, ok)
        });
        Some(Served::Moved(Moved { ok, moved, reload }))
    }

    /// The register `key` names in the IR block being selected, computed by `make` the
    /// first time. Selection of one IR block is straight-line code whose branches (an
    /// access's alignment test) rejoin, so a value made there reaches the rest of it.
    fn shared(&mut self, key: Shared, make: impl FnOnce(&mut Self) -> Reg) -> Reg {
        let Some(block) = self.cur_ir else {
            return make(self);
        };
        if let Some(&r) = self.shfl_shared.get(&(block, key)) {
            return r;
        }
        let r = make(self);
        self.shfl_shared.insert((block, key), r);
        r
    }

    /// The reloaded lanes `loaded` with the moved lanes put in.
    pub(super) fn merge_moved(&mut self, m: &Moved, loaded: Reg) -> Reg {
        self.select_vec(m.ok, m.moved, loaded)
    }

    /// A lane mask: lane `l + delta`'s `threadIdx.x` is in lane `l`'s row
    /// (`0 <= threadIdx.x + delta < blockDim.x`).
    fn same_row(&mut self, delta: i32) -> Reg {
        let tx = self.ctx_load(MemOp::Block, ctx::THREAD_IDX_X);
        let (op, x, bound) = if delta > 0 {
            let t = self.bin_imm(true, AluOp::AddI, tx, delta);
            let nx = self.ctx_load(MemOp::W32, ctx::BLOCK_DIM_X);
            (AluOp::CmpLtU, t, nx)
        } else {
            (AluOp::CmpGeU, tx, self.li(delta.unsigned_abs()))
        };
        let d = self.ns();
        self.push(super::MInst::R {
            op,
            fmt: RFmt::Vvs,
            dest: d,
            src1: Some(x),
            src2: bound,
            mask: None,
        });
        d
    }
}
