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
//! **Halos** ([`crate::analysis::shuffle`], "Halos"): a load whose pair has an
//! [`crate::analysis::shuffle::Edge`] takes its edge lanes from its side's carrier
//! `B*` (whose own edge reload is the side's halo vector) by a second move, lane by
//! lane as the first:
//!
//! ```text
//! hok  = (act << (N* - N)) & act [& row(N - N*)]    // act >> (N - N*) on the left
//! re   = act ^ (ok | hok)
//! d    = the load of addr under re                  // no lane in a whole gang
//! move_mask d, hok, shuffle(b*, lane + N - N*)
//! move_mask d, ok, shuffle(a, lane + N)
//! ```
//!
//! A lane takes `B*`'s lane `l + N - N*` only when that lane is on (it read `B*`'s
//! bytes there; both loads have the same mask) and, for rows, in its row; the masks
//! decide per lane, so partial gangs and narrow rows keep the halo wherever it holds,
//! and the lanes left reload. A halo-served load is selected just before the first
//! instruction that reads it (or may write memory, or ends the block), after its
//! carrier, whose reload then has the loads in between to arrive.
//!
//! The paper's ablations, wrong by design: `noload` takes the source's register as it
//! is (no move, no reload), `nocorner` the move alone (no reload of the edge lanes).

use sim::nyuzi::{AluOp, MemOp, RFmt};

use super::super::abi::ctx;
use super::{width, Isel, Reg};
use crate::analysis::shuffle::{Edge, EdgeService, Pair, Served as ServedLoad};
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
    /// The lanes a halo-served load reloads: (mask, `N`, `N - N*`, rows checked).
    HaloReload(Option<Value>, i32, i32, bool),
}

/// The loads selected so far and those waiting for their halo's carrier.
#[derive(Default)]
pub(super) struct HaloState {
    selected: rustc_hash::FxHashSet<Inst>,
    /// (load, its result), in program order.
    held: Vec<(Inst, Value)>,
    released: rustc_hash::FxHashSet<Inst>,
}

/// How a shuffled load's lanes are served: `ok` lanes from `moved`, the others (of the
/// access's active lanes) by the reload under `reload`.
pub(super) struct Moved {
    ok: Reg,
    moved: Reg,
    /// The halo's lanes and moved carrier, when the edge lanes come from a halo.
    halo: Option<(Reg, Reg)>,
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
            self.count_served(&pair, EdgeService::Nothing);
            return Some(Served::Reuse(a));
        }
        let n = pair.delta;
        let moved = self.lane_move(a, n);
        if self.shuffle_mode == ShuffleMode::NoCorner {
            self.count_served(&pair, EdgeService::Nothing);
            return Some(Served::Reuse(moved));
        }
        let ok = self.served_lanes(mask, n, pair.row, act);
        if let Some((edge, b)) = self.halo_carrier(&pair) {
            let e = edge.delta;
            let hmoved = self.lane_move(b, e);
            let hok = self.served_lanes(mask, e, pair.row, act);
            let reload = self.shared(Shared::HaloReload(mask, n, e, pair.row), |me| {
                let both = me.bin(false, AluOp::Or, ok, hok);
                me.bin(false, AluOp::Xor, act, both)
            });
            self.count_served(&pair, EdgeService::Halo(edge.carrier));
            let halo = Some((hok, hmoved));
            return Some(Served::Moved(Moved {
                ok,
                moved,
                halo,
                reload,
            }));
        }
        let reload = self.shared(Shared::Reload(mask, n, pair.row), |me| {
            me.bin(false, AluOp::Xor, act, ok)
        });
        self.count_served(&pair, EdgeService::Reload);
        Some(Served::Moved(Moved {
            ok,
            moved,
            halo: None,
            reload,
        }))
    }

    /// `a` moved by `n` lanes: lane `l` takes lane `l + n` (modulo the gang).
    fn lane_move(&mut self, a: Reg, n: i32) -> Reg {
        let idx = self.shared(Shared::Index(n), |me| {
            let lane = me.ctx_load(MemOp::Block, ctx::LANE_INDEX);
            me.bin_imm(true, AluOp::AddI, lane, n)
        });
        self.bin(true, AluOp::Shuffle, a, idx)
    }

    /// The lanes of `act` (the active lanes of an access under `mask`) whose lane
    /// `l + n` is in the gang, on and, when `row`, in their row of the block.
    fn served_lanes(&mut self, mask: Option<Value>, n: i32, row: bool, act: Reg) -> Reg {
        self.shared(Shared::Served(mask, n, row), |me| {
            let from = if n > 0 {
                me.bin_imm(false, AluOp::Shr, act, n)
            } else {
                me.bin_imm(false, AluOp::Shl, act, -n)
            };
            let ok = me.bin(false, AluOp::And, from, act);
            if row {
                let r = me.same_row(n);
                me.bin(false, AluOp::And, ok, r)
            } else {
                ok
            }
        })
    }

    /// Counts `pair`'s load as served, and how its edge lanes are.
    fn count_served(&mut self, pair: &Pair, edge: EdgeService) {
        let served = ServedLoad {
            delta: pair.delta,
            edge,
        };
        self.served.insert(pair.load, served);
    }

    /// The halo of `pair` and its carrier's vector register, when halos are on (the
    /// full rewrite), the pair has one and the carrier was selected as a vector value.
    fn halo_carrier(&mut self, pair: &Pair) -> Option<(Edge, Reg)> {
        let on = matches!(self.shuffle_mode, ShuffleMode::All | ShuffleMode::Auto);
        let edge = pair.edge.filter(|_| on)?;
        if !self.halo.selected.contains(&edge.carrier) {
            return None;
        }
        let res = self.f.inst_result(edge.carrier)?;
        self.vector_value(res).then(|| (edge, self.reg(res)))
    }

    /// Whether `v` lives in a vector register of its own (a selectable source).
    fn vector_value(&self, v: Value) -> bool {
        self.ty(v).varying
            && !self.scal.contains(&self.facts.resolve(v))
            && self.live.contains(v)
            && !self.forward.contains_key(&v)
            && !self.vf.all.contains(&v)
    }

    /// Holds back load `inst` (result `res`) when its edge lanes come from a halo: it
    /// is selected just before the first instruction that reads it or may write
    /// memory, or the block's terminator ([`Isel::release_held`]). By then its carrier
    /// has been selected (the plan puts every read after the carrier), and the
    /// carrier's reload has had the loads in between to arrive. Only vector loads
    /// selected in neither scalar nor vector-form mode wait (they select alike
    /// wherever they stand).
    pub(super) fn hold_for_halo(&mut self, inst: Inst, res: Value) -> bool {
        let on = matches!(self.shuffle_mode, ShuffleMode::All | ShuffleMode::Auto);
        if !on || self.scalar_mode || self.vector_mode || self.halo.released.contains(&inst) {
            return false;
        }
        let edge = self.shuffles.as_ref().and_then(|s| s.pair(inst)?.edge);
        if edge.is_none() || !self.vector_value(res) {
            return false;
        }
        self.halo.held.push((inst, res));
        self.halo.released.insert(inst);
        true
    }

    /// Load `inst` was selected (a carrier, perhaps).
    pub(super) fn load_selected(&mut self, inst: Inst) {
        self.halo.selected.insert(inst);
    }

    /// Selects the held loads that `inst`, about to be selected, needs selected
    /// first: those it reads, or all when it may write memory, synchronizes, calls
    /// or ends the block.
    pub(super) fn release_held(&mut self, inst: Inst) {
        if self.halo.held.is_empty() {
            return;
        }
        let data = &self.f.insts[inst];
        let all = crate::analysis::shuffle::ends_hold(data);
        let operands = data.operands();
        let (go, stay): (Vec<_>, Vec<_>) = std::mem::take(&mut self.halo.held)
            .into_iter()
            .partition(|&(_, res)| all || operands.contains(&res));
        self.halo.held = stay;
        for (load, _) in go {
            self.select_held(load);
        }
    }

    /// Selects the held-back load `load` where the selector stands, with its own span.
    fn select_held(&mut self, load: Inst) {
        let saved = (self.span, self.scalar_mode, self.vector_mode);
        self.span = Some(self.f.spans[load]);
        (self.scalar_mode, self.vector_mode) = (false, false);
        self.inst(load);
        (self.span, self.scalar_mode, self.vector_mode) = saved;
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

    /// The reloaded lanes `loaded` with the moved lanes (and the halo's) put in.
    pub(super) fn merge_moved(&mut self, m: &Moved, loaded: Reg) -> Reg {
        let loaded = match m.halo {
            Some((hok, hmoved)) => self.select_vec(hok, hmoved, loaded),
            None => loaded,
        };
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
