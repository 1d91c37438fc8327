//! Reductions and exclusive scans as log-step shuffle trees (`lang-spec/ir.md`,
//! "Order of combination"): five shuffle-and-combine steps over the warp instead of
//! one broadcast step per lane.
//!
//! Lanes off in the mask (and lanes past the block) first read as the operation's
//! identity (`selp`, none when the mask is known all-on in the full-warp version).
//!
//! * **Reductions** (`reduce_add/min/max/and/or`). A float sum must follow the
//!   documented order exactly (ISPC's, which at 32 lanes takes the halves first), rooted
//!   at lane 0: off lanes read as `+0.0`, then `shfl.down` by 16, 8, 4, 2, 1, each
//!   followed by `x = x + shuffled` (lane `i < s` gets `x[i] + x[i + s]`, the lower lane
//!   on the left), then a `shfl.idx` of lane 0.
//!   Every other combination is exact and order-free (integers; float `min`/`max`
//!   choose one operand, `-0.0` below `+0.0`), so they use a butterfly (`shfl.bfly`):
//!   every lane ends with the combination of all 32 and no broadcast is needed. Float
//!   `min`/`max` end with `min(x, +inf)` (`max(x, -inf)`): a result that is a NaN
//!   (every lane NaN) becomes the identity, as the sequential definition gives, and
//!   only then are the lanes' values (whose NaNs may differ) the same. The selector
//!   tells the uniform datapath that the butterfly's last instruction writes the same
//!   value in every lane ([`super::super::uniform::Marks::uniform_result`]).
//! * **Exclusive scans** (`scan_add/and/or`): `shfl.up` by 1 with lane 0 taking the
//!   start value (the identity; `+0.0` for float sums), then the Kogge-Stone steps
//!   `shfl.up t|p, y, d, 0; @p y = t OP y` for `d` = 1, 2, 4, 8, 16 (lane `i >= d`
//!   gets `y[i - d] OP y[i]`). A lane only reads lower lanes.
//!
//! **Lanes that do not run.** A decoupled kernel may launch in the block's real shape
//! (`super::super::run`): the lanes of a partial last warp past the block then never
//! run, and a shuffle reading them gets whatever their registers hold. Scans never read
//! them (they are the top lanes). In a kernel that may launch so, the general (not
//! full-warp) version's reductions clamp their shuffles at the last existing lane
//! (`popc(ballot(exists)) - 1`) and combine only where the shuffle's source was valid
//! (`@%p`): a missing lane is left out, which for the exact operations is the identity;
//! a float sum adds `+0.0` for it instead (`selp`), as for an off lane. The result is then at lane 0 for every operation
//! (a butterfly's lanes would not all see the same lanes), and broadcast.

use sim::gpu::{BinOp, Op, Reg, ShflMode, Src, Type as T, UnOp};

use super::{bty, fty, imm, rs, sty, uty, wide, Isel, Loc};
use crate::ir::{LaneOp, Scalar, Value};

/// How an operation combines two lanes, its identity (as the register holds it: an
/// 8/16-bit integer sign-extended to 32 bits) and a scan's start value.
struct Combine {
    op: BinOp,
    ty: T,
    identity: u64,
    start: u64,
}

fn combine(op: LaneOp, s: Scalar) -> Option<Combine> {
    let w = s.bits();
    let width_mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let sign_ext = |v: u64| {
        if w < 32 {
            ((((v << (64 - w)) as i64) >> (64 - w)) as u64) & 0xffff_ffff
        } else {
            v
        }
    };
    let float = |x: f64| {
        if s == Scalar::F32 {
            u64::from((x as f32).to_bits())
        } else {
            x.to_bits()
        }
    };
    let (op, ty, identity) = match op {
        _ if s == Scalar::Bool => return None,
        // Off lanes add +0.0 to a sum, as ISPC zeroes them; -0.0 to a scan.
        LaneOp::ReduceAdd if s.is_float() => (BinOp::Add, fty(s), float(0.0)),
        LaneOp::ScanAdd if s.is_float() => (BinOp::Add, fty(s), float(-0.0)),
        LaneOp::ReduceAdd | LaneOp::ScanAdd => (BinOp::Add, uty(s), 0),
        LaneOp::ReduceMin if s.is_float() => (BinOp::Min, fty(s), float(f64::INFINITY)),
        LaneOp::ReduceMax if s.is_float() => (BinOp::Max, fty(s), float(f64::NEG_INFINITY)),
        LaneOp::ReduceMin => (BinOp::Min, sty(s), sign_ext(width_mask >> 1)),
        LaneOp::ReduceMax => (BinOp::Max, sty(s), sign_ext(1 << (w - 1))),
        LaneOp::ReduceAnd | LaneOp::ScanAnd => (BinOp::And, bty(s), sign_ext(width_mask)),
        LaneOp::ReduceOr | LaneOp::ScanOr => (BinOp::Or, bty(s), 0),
        _ => return None,
    };
    // A float sum's scan starts from +0.0 (lane 0's result); off lanes add -0.0.
    let start = if s.is_float() && op == BinOp::Add {
        0
    } else {
        identity
    };
    Some(Combine {
        op,
        ty,
        identity,
        start,
    })
}

impl Isel<'_> {
    /// `shfl.MODE d{|p}, x, lane, clamp` on a 32-bit value or both halves of a pair
    /// (`p`, from the low half, is the same for both).
    pub(super) fn shfl_loc(
        &mut self,
        mode: ShflMode,
        d: Loc,
        p: Option<Reg>,
        x: Loc,
        lane: Src,
        c: Src,
    ) {
        let one = |me: &mut Self, dst: Reg, dst_pred: Option<Reg>, a: Reg| {
            me.op(Op::Shfl {
                mode,
                dst,
                dst_pred,
                a: rs(a),
                lane,
                clamp: c,
            })
        };
        one(self, d.reg(), p, x.reg());
        if let (Loc::D(dr), Loc::D(xr)) = (d, x) {
            one(self, Reg::r(dr.idx + 1), None, Reg::r(xr.idx + 1));
        }
    }

    /// `@p d = a OP b`: combines where the shuffle's source lane was valid.
    fn combine_where(&mut self, p: Reg, c: &Combine, d: Loc, a: Loc, b: Loc) {
        self.guarded(
            p,
            Op::Bin {
                op: c.op,
                ty: c.ty,
                dst: d.reg(),
                a: rs(a.reg()),
                b: rs(b.reg()),
            },
        );
    }

    /// The value of `args[0]` where mask `args[1]` is on, the identity elsewhere (and
    /// past the block): a fresh location, or `args[0]`'s own when every lane is on.
    fn lanes_on(&mut self, args: &[Value], identity: u64) -> Loc {
        let s = self.scalar(args[0]);
        let x = self.loc(args[0]);
        if self.on(args[1]) {
            return x;
        }
        let m = self.reg(args[1]);
        let m = self.existing(m);
        let v = self.fresh(s);
        let ty = if wide(s) { T::B64 } else { T::B32 };
        self.selp(ty, v.reg(), rs(x.reg()), imm(identity), m);
        v
    }

    /// The last lane of this warp that exists (its lanes that exist are the lowest).
    fn last_existing_lane(&mut self) -> Reg {
        self.shared_reg(super::shuffle::Shared::LastLane, |me| {
            let b = me.ballot(me.exists);
            let c = me.tmp();
            me.un(UnOp::Popc, T::B32, c, rs(b));
            me.bin(BinOp::Sub, T::U32, c, rs(c), imm(1));
            c
        })
    }

    /// `reduce_add/min/max/and/or v, m` into `d` (see the module docs).
    pub(super) fn reduce(&mut self, op: LaneOp, args: &[Value], d: Loc) {
        let s = self.scalar(args[0]);
        let Some(c) = combine(op, s) else {
            self.unsupported("a reduction of bools");
            return;
        };
        let mut x = self.lanes_on(args, c.identity);
        let float_sum = s.is_float() && c.op == BinOp::Add;
        // Lanes of a partial warp may not run: clamp at the last one that exists.
        let clamp = (!self.full_warp && self.ctx.dac.is_some()).then(|| self.last_existing_lane());
        let butterfly = !float_sum && clamp.is_none();
        // The last step of a float `min`/`max`: the identity.
        let fix = (s.is_float() && !float_sum).then_some(c.identity);
        // One register for every step's shuffled value: a pair written by halves reads
        // its old value, which register allocation then zeroes once, not every step.
        let t = self.fresh(s);
        if let Some(cl) = clamp {
            // Combined in place where the source lane is valid.
            if x == self.loc(args[0]) {
                let a = self.fresh(s);
                self.copy(a, x);
                x = a;
            }
            for step in [16, 8, 4, 2, 1] {
                let p = self.ptmp();
                self.shfl_loc(ShflMode::Down, t, Some(p), x, imm(step), rs(cl));
                if float_sum {
                    // A lane past the block adds +0.0, as an off lane does.
                    let ty = if wide(s) { T::B64 } else { T::B32 };
                    self.selp(ty, t.reg(), rs(t.reg()), imm(0), p);
                    self.bin(c.op, c.ty, x.reg(), rs(x.reg()), rs(t.reg()));
                } else {
                    self.combine_where(p, &c, x, x, t);
                }
            }
        } else {
            let mode = if butterfly {
                ShflMode::Bfly
            } else {
                ShflMode::Down
            };
            for step in [16, 8, 4, 2, 1] {
                self.shfl_loc(mode, t, None, x, imm(step), imm(31));
                let last = step == 1 && butterfly;
                let to = if last && fix.is_none() {
                    d
                } else {
                    self.fresh(s)
                };
                let combine = Op::Bin {
                    op: c.op,
                    ty: c.ty,
                    dst: to.reg(),
                    a: rs(x.reg()),
                    b: rs(t.reg()),
                };
                if last && fix.is_none() {
                    // Every lane combined all 32 with an exact operation.
                    self.emit_uniform_result(combine);
                } else {
                    self.op(combine);
                }
                x = to;
            }
        }
        if butterfly {
            if let Some(id) = fix {
                // Float min/max: a NaN (every lane NaN) becomes the identity, and then
                // every lane holds the same value.
                self.emit_uniform_result(Op::Bin {
                    op: c.op,
                    ty: c.ty,
                    dst: d.reg(),
                    a: rs(x.reg()),
                    b: imm(id),
                });
            }
        } else {
            self.shfl_loc(ShflMode::Idx, d, None, x, imm(0), imm(31));
            if let Some(id) = fix {
                self.bin(c.op, c.ty, d.reg(), rs(d.reg()), imm(id));
            }
        }
        if c.op == BinOp::Add {
            self.norm(s, d.reg());
        }
    }

    /// `scan_add/and/or v, m` (exclusive) into `d` (see the module docs).
    pub(super) fn scan(&mut self, op: LaneOp, args: &[Value], d: Loc) {
        let s = self.scalar(args[0]);
        let Some(c) = combine(op, s) else {
            self.unsupported("a scan of bools");
            return;
        };
        let x = self.lanes_on(args, c.identity);
        let ty = if wide(s) { T::B64 } else { T::B32 };
        // y[i] = x[i - 1], y[0] = the start.
        let t = self.fresh(s);
        let p = self.ptmp();
        self.shfl_loc(ShflMode::Up, t, Some(p), x, imm(1), imm(0));
        self.selp(ty, d.reg(), rs(t.reg()), imm(c.start), p);
        for step in [1, 2, 4, 8, 16] {
            let p = self.ptmp();
            self.shfl_loc(ShflMode::Up, t, Some(p), d, imm(step), imm(0));
            self.combine_where(p, &c, d, t, d);
        }
        if c.op == BinOp::Add {
            self.norm(s, d.reg());
        }
    }
}
