//! The non-affine side of decoupling ([`super::super::decouple`]): decoupled accesses
//! through `[deq.data]` / `[deq.addr]`, guarded by their mask and `exists`, decoupled
//! compares as `deq.pred`, and the drains that keep every warp's dequeues equal to
//! the affine stream's enqueues.

use sim::gpu::{AddrBase, Address, BinOp, Cmp, Guard, Inst, Op, Reg, Space, VoteMode};

use super::{imm, rs, Isel, Loc, T};
use crate::back::dac_gpu::decouple::{mem_type, Access, Drain, Kind, Plan};
use crate::ir::{Block, Value};

const DEQ_DATA: Address = Address {
    base: AddrBase::DeqData,
    offset: 0,
};
const DEQ_ADDR: Address = Address {
    base: AddrBase::DeqAddr,
    offset: 0,
};

impl Isel<'_> {
    /// Thread index `reg` in `d`, computed by the baseline from the linear id, adjusted
    /// for a decoupled kernel: it launches in its block's real shape when that is two-
    /// or three-dimensional (the AEU needs the shape to step `tid.x` wraps,
    /// [`crate::back::dac_gpu::run`]), where `%tid.x` is then `thread_idx.x` (the
    /// baseline's `lin % ntid.x` is unchanged, `lin / ntid.x` is 0) and
    /// `thread_idx.y/z` come from `%tid.y/z`. Adding `%tid.y/z` holds for both launch
    /// shapes: in the one-dimensional one they are 0. A kernel split in the virtual
    /// block `(c, blockDim.x / c)` ([`Plan::split`]) gets `thread_idx.x` back as the
    /// linear id `%tid.y * c + %tid.x`.
    pub(super) fn dac_thread_idx(&mut self, reg: crate::ir::SpecialReg, d: Reg) {
        use crate::ir::SpecialReg as S;
        use sim::gpu::{Dim, Special, Src};
        let Some(plan) = self.ctx.dac.as_ref() else {
            return;
        };
        if let (S::ThreadIdxX, Some(c)) = (reg, plan.split()) {
            // The virtual block (c, blockDim.x / c): the linear id is tid.y * c + tid.x
            // (the baseline's `%tid.x % ntid.x` is `%tid.x` there).
            let t = self.tmp();
            self.bin(
                BinOp::Mul,
                T::U32,
                t,
                Src::Special(Special::Tid(Dim::Y)),
                imm(u64::from(c)),
            );
            self.bin(BinOp::Add, T::U32, d, rs(d), rs(t));
            return;
        }
        let dim = match reg {
            S::ThreadIdxY => Dim::Y,
            S::ThreadIdxZ => Dim::Z,
            _ => return,
        };
        self.bin(
            BinOp::Add,
            T::U32,
            d,
            rs(d),
            Src::Special(Special::Tid(dim)),
        );
    }

    /// Narrows predicate `first` (`%tid.x == 0` in block 0) to the first thread when a
    /// decoupled kernel may launch in its block's real shape (see [`Self::dac_thread_idx`]).
    pub(super) fn dac_first_thread(&mut self, first: Reg) {
        use sim::gpu::{Dim, Special, Src};
        if self.ctx.dac.is_none() {
            return;
        }
        let t = self.ptmp();
        for d in [Dim::Y, Dim::Z] {
            self.setp(Cmp::Eq, T::U32, t, Src::Special(Special::Tid(d)), imm(0));
            self.bin(BinOp::And, T::Pred, first, rs(first), rs(t));
        }
    }

    /// The plan, when the current code is the entry itself and the kernel is decoupled.
    fn plan(&self) -> Option<&Plan> {
        let p = self.ctx.dac.as_ref()?;
        (self.entry_instance() && self.root.is_none() && self.fref == p.fref).then_some(p)
    }

    /// Whether IR instruction `inst` is selected as a decoupled access.
    pub(super) fn dac_decoupled(&self, inst: crate::ir::Inst) -> bool {
        self.plan().is_some_and(|p| p.decoupled(inst))
    }

    /// Whether IR instruction `inst` is address arithmetic left to the affine stream.
    pub(super) fn dac_dead(&self, inst: crate::ir::Inst) -> bool {
        self.plan().is_some_and(|p| p.dead(inst))
    }

    /// The access's guard: its mask (if any) and `exists`; none in the full-warp
    /// version when the mask is absent or on in every lane (every lane exists there).
    fn dac_guard(&mut self, mask: Option<Value>) -> Option<Reg> {
        match mask.filter(|&m| !self.on(m)) {
            Some(m) => {
                let m = self.reg(m);
                Some(self.existing(m))
            }
            None if self.full_warp => None,
            None => Some(self.exists),
        }
    }

    /// Where decoupled access `inst` reads its address: a `.shared` access from
    /// `[deq.addr]` (the affine warp does not prefetch shared memory), a global load
    /// from `[deq.data]`, a global store from `[deq.addr]`.
    fn dac_address(&self, inst: crate::ir::Inst) -> (Space, Address) {
        let a = self.plan().and_then(|p| p.access(inst));
        match a {
            Some(a) if a.shared => (Space::Shared, DEQ_ADDR),
            Some(a) if a.kind == Kind::Data => (Space::Global, DEQ_DATA),
            _ => (Space::Global, DEQ_ADDR),
        }
    }

    /// `res = load [deq.data]` (`[deq.addr]` for `.shared`) under `mask`.
    /// A load whose result is uniform (typed so; its address is then a tuple with zero
    /// strides, one line for the whole warp) happens as the baseline's does: in every
    /// lane, when any lane of its mask is on, so every lane gets the same value (a
    /// uniform branch may test it).
    pub(super) fn dac_load(
        &mut self,
        inst: crate::ir::Inst,
        s: crate::ir::Scalar,
        mask: Option<Value>,
        res: Value,
    ) {
        let (space, addr) = self.dac_address(inst);
        let g = if self.f.value_type(res).varying {
            self.dac_guard(mask)
        } else {
            self.dac_uniform_guard(mask)
        };
        let (Loc::R(d) | Loc::D(d)) = self.loc(res) else {
            self.unsupported("a decoupled load of a predicate");
            return;
        };
        let ty = mem_type(s);
        let zty = if ty.is_wide() { T::B64 } else { T::B32 };
        let ld = Op::Ld {
            space,
            ty,
            dst: d,
            addr,
        };
        match g {
            Some(g) => {
                self.mov(zty, d, imm(0));
                self.guarded(g, ld);
            }
            None => self.op(ld),
        }
    }

    /// A uniform load's guard: `any` of its mask's existing lanes, none without a mask
    /// (or with one on everywhere).
    fn dac_uniform_guard(&mut self, mask: Option<Value>) -> Option<Reg> {
        let m = mask.filter(|&m| !self.on(m))?;
        let m = self.reg(m);
        let m = self.existing(m);
        let any = self.ptmp();
        self.op(Op::Vote {
            mode: VoteMode::Any,
            dst: any,
            p: m,
        });
        Some(any)
    }

    /// `store [deq.addr], value` under `mask`.
    pub(super) fn dac_store(&mut self, inst: crate::ir::Inst, value: Value, mask: Option<Value>) {
        let (space, addr) = self.dac_address(inst);
        let g = self.dac_guard(mask);
        let s = self.scalar(value);
        let v = self.reg(value);
        let st = Op::St {
            space,
            ty: mem_type(s),
            addr,
            a: rs(v),
        };
        match g {
            Some(g) => self.guarded(g, st),
            None => self.op(st),
        }
    }

    /// A decoupled compare: `deq.pred` pops this warp's mask of it into `res`'s
    /// predicate (the lanes running write their bit, as a `setp` would).
    pub(super) fn dac_compare(&mut self, res: Value) {
        let Loc::P(d) = self.loc(res) else {
            self.unsupported("a decoupled compare whose result is not a predicate");
            return;
        };
        self.op(Op::DeqPred { dst: d });
    }

    /// Whether the edge from terminator `term` to `to` (None: the exit) drains.
    pub(super) fn dac_has_drains(&self, term: crate::ir::Inst, to: Option<Block>) -> bool {
        self.plan().is_some_and(|p| !p.drains(term, to).is_empty())
    }

    /// Pops, with an all-off guard, the entries the edge from `term` to `to` skips,
    /// in the affine stream's order ([`Plan::drains`]): the skipped loops' entries
    /// with counted loops.
    pub(super) fn dac_drain(&mut self, term: crate::ir::Inst, to: Option<Block>) {
        let Some(p) = self.plan() else { return };
        let skipped = p.drains(term, to);
        if skipped.is_empty() {
            return;
        }
        let off = self.ptmp();
        self.const_pred(off, false);
        self.dac_drain_steps(&skipped, off);
    }

    fn dac_drain_steps(&mut self, steps: &[Drain], off: Reg) {
        for d in steps {
            match d {
                Drain::One(a) => self.dac_drain_one(*a, off),
                Drain::Repeat(0, _) => {}
                Drain::Repeat(1, body) => self.dac_drain_steps(body, off),
                Drain::Repeat(n, body) => {
                    // for (c = n; c != 0; c--) body
                    let (c, more) = (self.tmp(), self.ptmp());
                    let top = self.new_label();
                    self.mov(T::U32, c, imm(*n));
                    self.b.bind(top);
                    self.dac_drain_steps(body, off);
                    self.op(Op::Bin {
                        op: BinOp::Sub,
                        ty: T::U32,
                        dst: c,
                        a: rs(c),
                        b: imm(1),
                    });
                    self.op(Op::Setp {
                        cmp: Cmp::Ne,
                        ty: T::U32,
                        dst: more,
                        a: rs(c),
                        b: imm(0),
                    });
                    self.bra(
                        Some(Guard {
                            pred: more.idx,
                            negate: false,
                        }),
                        top,
                    );
                }
            }
        }
    }

    /// One all-off `[deq.data]` load or `[deq.addr]` store of `a`'s entry, or a
    /// `deq.pred` into a temporary (it pops whatever the guard).
    fn dac_drain_one(&mut self, a: Access, off: Reg) {
        let ty = mem_type(a.scalar);
        let op = match a.kind {
            Kind::Pred => {
                let dst = self.ptmp();
                self.op(Op::DeqPred { dst });
                return;
            }
            Kind::Data => {
                let dst = if ty.is_wide() {
                    self.tmp64()
                } else {
                    self.tmp()
                };
                Op::Ld {
                    space: Space::Global,
                    ty,
                    dst,
                    addr: DEQ_DATA,
                }
            }
            Kind::Addr => Op::St {
                space: if a.shared {
                    Space::Shared
                } else {
                    Space::Global
                },
                ty,
                addr: DEQ_ADDR,
                a: imm(0),
            },
        };
        self.emit(Inst::guarded(off.idx, false, op));
    }
}
