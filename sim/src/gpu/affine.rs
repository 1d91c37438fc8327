//! Functional semantics of the DAC affine stream (Wang and Lin, ISCA'17, §3-§4.4;
//! `lang-spec/dac-gpu-isa.md`, "The DAC extension").
//!
//! A decoupled entry carries its affine stream in [`Kernel::affine`]. The affine warp
//! reads only read-only data (parameters, `%ntid`, `%nctaid`, thread and block
//! indices) and writes no memory, so what it enqueues is the same for every block of
//! a launch and independent of the non-affine warps. Functionally it therefore runs
//! once per launch, before any block ([`run_stream`]): its `%a` registers hold affine
//! tuples over the whole grid ([`AffineTuple`]: base, per-`%tid` strides, per-`%ctaid`
//! block offsets), its `%ur` registers and predicates hold uniform scalars, and every
//! `enq` becomes an [`AffineEvent`] of the [`AffineTrace`]. Each non-affine warp then
//! owns cursors into that trace ([`WarpQueues`]): a `deq` pops the warp's next entry
//! and evaluates the tuple in the warp's lanes (the per-lane definition that the
//! hardware's AEU/PEU expansions reproduce). A `deq` with nothing left, of the wrong
//! kind, space or width, or entries left when the block ends are
//! [`FaultKind::DacQueue`] faults, as is an affine-stream instruction whose result is
//! not affine.
//!
//! Tuple arithmetic wraps modulo 2^64, so reading a tuple modulo 2^32 (a `%a`
//! register) or 2^64 (`%ad`) gives exactly the per-thread result of the same `add`,
//! `sub`, `mul`/`shl` by a scalar or `mad` on ordinary registers. Widening (`cvt.u64.u32`,
//! `cvt.s64.s32`) is linear only when no thread's 32-bit value wraps; the widened tuple
//! records that condition and every lane checks it when the tuple is expanded.

use std::sync::Arc;

use super::dac::{AffineTuple, IntType};
use super::exec::{bin, compare, cvt, WarpState, WARP};
use super::isa::*;
use super::machine::{FaultKind, GpuFault};

/// An affine register's value: the tuple, and the no-wrap conditions of the widenings
/// it went through (the tuple must hold in the type in every thread).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AffValue {
    pub tuple: AffineTuple,
    pub checks: Vec<(AffineTuple, IntType)>,
}

impl AffValue {
    fn scalar(v: u64) -> AffValue {
        AffValue {
            tuple: AffineTuple::scalar(v as i64),
            checks: Vec::new(),
        }
    }

    fn of(tuple: AffineTuple, a: &AffValue, b: Option<&AffValue>) -> AffValue {
        let mut checks = a.checks.clone();
        if let Some(b) = b {
            checks.extend(b.checks.iter().cloned());
        }
        AffValue { tuple, checks }
    }

    /// The value as a uniform scalar, when it is one (no widening conditions).
    fn as_scalar(&self) -> Option<u64> {
        (self.tuple.is_scalar() && self.checks.is_empty()).then_some(self.tuple.base as u64)
    }

    /// The value in thread `tid` of block `ctaid`, modulo 2^`bits`; an error when a
    /// widening condition fails there.
    pub fn lane(&self, ctaid: [u32; 3], tid: [u32; 3], bits: u32) -> Result<u64, String> {
        for (t, ty) in &self.checks {
            let v = t.eval(ctaid, tid);
            if !ty.holds(v) {
                return Err(format!(
                    "a widened affine value ({v}) does not fit its 32-bit type in thread {tid:?} of block {ctaid:?}: the widening is not affine there"
                ));
            }
        }
        let v = self.tuple.eval(ctaid, tid) as u64;
        Ok(if bits >= 64 {
            v
        } else {
            v & ((1u64 << bits) - 1)
        })
    }
}

/// What one `enq` of the affine stream queued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AffineEvent {
    /// `enq.data` (`data`: a load's address, requested early) or `enq.addr`.
    Addr {
        data: bool,
        space: Space,
        /// Access size in bytes (the `.T` of the `enq`).
        bytes: u32,
        /// A 64-bit tuple (`%ad`); a 32-bit one is zero-extended like `[%r]`.
        wide: bool,
        value: AffValue,
        /// `enq.data.sel` / `enq.addr.sel`: `value` is the `then` address, taken in
        /// the lanes where the compare holds; the others take the `else` address.
        sel: Option<Box<AddrSel>>,
        /// The `enq`'s instruction index in the affine stream.
        pc: u32,
    },
    /// `enq.pred.CMP.T a, b`.
    Pred {
        cmp: Cmp,
        ty: Type,
        a: AffValue,
        b: AffValue,
        pc: u32,
    },
    /// `bar.sync id` of the affine stream (the AEU's expansion gate in timing mode).
    Barrier { id: u32, pc: u32 },
}

/// The choice of a select tuple (`enq.*.sel.SPACE.T.CMP.CT %then, %else, a, b`):
/// lanes where `a CMP b` (read as `ty`) holds take the `then` address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrSel {
    pub cmp: Cmp,
    pub ty: Type,
    pub a: AffValue,
    pub b: AffValue,
    /// The address of the lanes where the compare fails.
    pub els: AffValue,
}

impl AddrSel {
    /// Whether thread `tid` of block `ctaid` takes the `then` address.
    pub fn holds(&self, ctaid: [u32; 3], tid: [u32; 3]) -> Result<bool, String> {
        let bits = self.ty.bits();
        let (x, y) = (
            self.a.lane(ctaid, tid, bits)?,
            self.b.lane(ctaid, tid, bits)?,
        );
        Ok(compare(self.cmp, self.ty, x, y))
    }
}

/// Everything the affine stream of a launch enqueued, in order.
#[derive(Clone, Debug, Default)]
pub struct AffineTrace {
    pub events: Vec<AffineEvent>,
    /// Indices into `events` of the address entries (`enq.data`, `enq.addr`): one
    /// per-warp address queue's contents, in order.
    pub addr_events: Vec<u32>,
    /// Indices of the predicate entries: one per-warp predicate queue's contents.
    pub pred_events: Vec<u32>,
    /// Affine-warp instructions executed (once; the timing model runs the stream per
    /// batch of blocks).
    pub insts: u64,
    /// The stream's instruction index of each executed instruction, in order, when
    /// recorded (the timing model replays them).
    pub pcs: Vec<u32>,
}

impl AffineTrace {
    fn push(&mut self, e: AffineEvent) {
        let i = self.events.len() as u32;
        match e {
            AffineEvent::Addr { .. } => self.addr_events.push(i),
            AffineEvent::Pred { .. } => self.pred_events.push(i),
            AffineEvent::Barrier { .. } => {}
        }
        self.events.push(e);
    }
}

/// A launch's geometry, what the affine stream may read besides parameters.
#[derive(Clone, Copy, Debug)]
pub struct StreamLaunch<'a> {
    pub params: &'a [u8],
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Affine-warp instructions before a [`FaultKind::Runaway`] fault.
    pub max_insts: u64,
    /// Record [`AffineTrace::pcs`].
    pub record_pcs: bool,
}

/// The affine warp's state while the stream runs.
struct AffineWarp<'a> {
    k: &'a Kernel,
    l: StreamLaunch<'a>,
    aregs: Vec<AffValue>,
    uregs: Vec<u32>,
    preds: Vec<bool>,
}

/// Runs the affine stream `k` of a launch to its end; see the module comment.
pub fn run_stream(k: &Kernel, l: StreamLaunch<'_>) -> Result<AffineTrace, GpuFault> {
    let mut w = AffineWarp {
        k,
        l,
        aregs: vec![AffValue::default(); k.num_aregs as usize + 1],
        uregs: vec![0; k.num_uregs as usize + 1],
        preds: vec![false; k.num_preds as usize],
    };
    let mut trace = AffineTrace::default();
    let mut pc = 0u32;
    let fault = |kind: FaultKind, pc: u32, message: String| GpuFault {
        kind,
        kernel: format!("{}.affine", k.name),
        pc: pc as usize,
        cta: (0, 0, 0),
        warp: 0,
        lane: None,
        address: None,
        message,
    };
    while let Some(inst) = k.insts.get(pc as usize) {
        if trace.insts >= l.max_insts {
            let m = format!("more than {} affine-warp instructions", l.max_insts);
            return Err(fault(FaultKind::Runaway, pc, m));
        }
        trace.insts += 1;
        if l.record_pcs {
            trace.pcs.push(pc);
        }
        match w.step(inst, pc, &mut trace) {
            Ok(Some(next)) => pc = next,
            Ok(None) => break,
            Err(m) => {
                return Err(fault(
                    FaultKind::DacQueue,
                    pc,
                    format!("affine stream: {m}"),
                ))
            }
        }
    }
    Ok(trace)
}

type R<T> = Result<T, String>;

fn int_type(ty: Type) -> R<IntType> {
    match ty {
        Type::U32 | Type::B32 => Ok(IntType::U32),
        Type::S32 => Ok(IntType::S32),
        Type::U64 | Type::B64 => Ok(IntType::U64),
        Type::S64 => Ok(IntType::S64),
        _ => Err(format!(
            "`.{ty}` is not an affine type (32- or 64-bit integers only)"
        )),
    }
}

impl AffineWarp<'_> {
    /// Executes `inst` at `pc`: the next pc, or `None` at `exit`.
    fn step(&mut self, inst: &Inst, pc: u32, trace: &mut AffineTrace) -> R<Option<u32>> {
        let next = pc + 1;
        if let Some(g) = inst.guard {
            let p = *self
                .preds
                .get(g.pred as usize)
                .ok_or_else(|| format!("predicate %p{} is not declared", { g.pred }))?;
            if p == g.negate {
                return Ok(Some(next));
            }
        }
        match inst.op {
            Op::Bin { op, ty, dst, a, b } => self.binary(op, ty, dst, a, b)?,
            Op::Mad { ty, dst, a, b, c } => self.mad(ty, dst, a, b, c)?,
            Op::Un { op, ty, dst, a } => self.unary(op, ty, dst, a)?,
            Op::Cvt {
                rnd,
                dty,
                sty,
                dst,
                a,
            } => self.convert(rnd, dty, sty, dst, a)?,
            Op::Setp { cmp, ty, dst, a, b } => {
                let (x, y) = (self.scalar(a, ty)?, self.scalar(b, ty)?);
                self.set_pred(dst, compare(cmp, ty, x, y))?;
            }
            Op::Selp { ty, dst, a, b, p } => {
                let c = *self.preds.get(p.idx as usize).ok_or("predicate not declared")?;
                let v = if c { self.tuple(a, ty)? } else { self.tuple(b, ty)? };
                self.write(dst, ty, v)?;
            }
            Op::Ld {
                space: Space::Param,
                ty,
                dst,
                addr,
            } => {
                let v = self.param(addr, ty)?;
                self.write(dst, ty, AffValue::scalar(v))?;
            }
            Op::Bra { target, .. } => return Ok(Some(target)),
            Op::Exit | Op::Ret => return Ok(None),
            Op::Bar { id } => trace.push(AffineEvent::Barrier { id, pc }),
            Op::Nop | Op::Fence { .. } => {}
            Op::EnqData {
                space,
                ty,
                addr,
                wide,
            }
            | Op::EnqAddr {
                space,
                ty,
                addr,
                wide,
            } => {
                let data = matches!(inst.op, Op::EnqData { .. });
                if space == Space::Param || (data && space == Space::Shared) {
                    return Err(format!("enq of a .{} address", space.name()));
                }
                let value = self.tuple(Src::Reg(addr), if wide { Type::U64 } else { Type::U32 })?;
                let bytes = ty.bytes();
                trace.push(AffineEvent::Addr {
                    data,
                    space,
                    bytes,
                    wide,
                    value,
                    sel: None,
                    pc,
                });
            }
            Op::EnqSel {
                data,
                space,
                ty,
                then,
                els,
                wide,
                cmp,
                cty,
                a,
                b,
            } => {
                if space == Space::Param || (data && space == Space::Shared) {
                    return Err(format!("enq of a .{} address", space.name()));
                }
                int_type(cty)?;
                if !cmp.accepts(cty) {
                    return Err(format!("enq.sel.{}.{cty} is not a comparison", cmp.name()));
                }
                let aty = if wide { Type::U64 } else { Type::U32 };
                let value = self.tuple(Src::Reg(then), aty)?;
                let sel = AddrSel {
                    cmp,
                    ty: cty,
                    a: self.tuple(a, cty)?,
                    b: self.tuple(b, cty)?,
                    els: self.tuple(Src::Reg(els), aty)?,
                };
                trace.push(AffineEvent::Addr {
                    data,
                    space,
                    bytes: ty.bytes(),
                    wide,
                    value,
                    sel: Some(Box::new(sel)),
                    pc,
                });
            }
            Op::EnqPred { cmp, ty, a, b } => {
                int_type(ty)?;
                if !cmp.accepts(ty) {
                    return Err(format!("enq.pred.{}.{ty} is not a comparison", cmp.name()));
                }
                let (a, b) = (self.tuple(a, ty)?, self.tuple(b, ty)?);
                trace.push(AffineEvent::Pred { cmp, ty, a, b, pc });
            }
            _ => {
                return Err(format!(
                    "`{:?}` has no place in the affine stream (it reads only parameters and indices, writes no memory)",
                    inst.op
                ))
            }
        }
        Ok(Some(next))
    }

    /// A source as a tuple.
    fn tuple(&self, s: Src, ty: Type) -> R<AffValue> {
        Ok(match s {
            Src::Reg(r) if r.file == RegFile::A => self
                .aregs
                .get(r.idx as usize)
                .cloned()
                .ok_or_else(|| format!("affine register %a{} is not declared", { r.idx }))?,
            Src::Special(Special::Tid(d)) => {
                let mut t = AffineTuple::default();
                t.strides[d as usize] = 1;
                AffValue {
                    tuple: t,
                    checks: Vec::new(),
                }
            }
            Src::Special(Special::Ctaid(d)) => {
                let mut t = AffineTuple::default();
                t.cta_strides[d as usize] = 1;
                AffValue {
                    tuple: t,
                    checks: Vec::new(),
                }
            }
            _ => AffValue::scalar(self.scalar(s, ty)?),
        })
    }

    /// A source as a uniform scalar of type `ty` (its bit pattern).
    fn scalar(&self, s: Src, ty: Type) -> R<u64> {
        let wide = ty.is_wide();
        let v = match s {
            Src::Imm(v) => v,
            Src::Reg(r) => match r.file {
                RegFile::Ur => {
                    let i = r.idx as usize;
                    let lo = *self.uregs.get(i).ok_or("uniform register not declared")?;
                    let hi = if wide {
                        *self
                            .uregs
                            .get(i + 1)
                            .ok_or("uniform register not declared")?
                    } else {
                        0
                    };
                    u64::from(lo) | u64::from(hi) << 32
                }
                RegFile::A => self.tuple(s, ty)?.as_scalar().ok_or_else(|| {
                    format!(
                        "%a{} varies across threads where a uniform value is needed",
                        { r.idx }
                    )
                })?,
                RegFile::P => {
                    u64::from(*self.preds.get(r.idx as usize).ok_or("no such predicate")?)
                }
                RegFile::R => return Err("the affine warp has no per-thread registers (%r)".into()),
            },
            Src::Special(sp) => match sp {
                Special::Ntid(d) => u64::from(self.l.block[d as usize]),
                Special::Nctaid(d) => u64::from(self.l.grid[d as usize]),
                _ => {
                    return Err(format!(
                        "{} is not uniform (an affine register may hold %tid and %ctaid)",
                        sp.name()
                    ))
                }
            },
        };
        Ok(if wide { v } else { v & 0xffff_ffff })
    }

    fn param(&self, a: Address, ty: Type) -> R<u64> {
        let base = match a.base {
            AddrBase::Param(i) => {
                self.k
                    .params
                    .get(i as usize)
                    .ok_or("no such parameter")?
                    .offset
            }
            AddrBase::None => 0,
            _ => return Err("the affine warp reads only parameters from memory".into()),
        };
        let at = (i64::from(base) + i64::from(a.offset)) as usize;
        let n = ty.bytes() as usize;
        let bytes = self
            .l
            .params
            .get(at..at + n)
            .filter(|_| at.is_multiple_of(n))
            .ok_or_else(|| format!("{n}-byte .param access at {at} outside the parameters"))?;
        let mut v = 0u64;
        for (i, b) in bytes.iter().enumerate() {
            v |= u64::from(*b) << (8 * i);
        }
        Ok(v)
    }

    fn set_pred(&mut self, dst: Reg, v: bool) -> R<()> {
        match self.preds.get_mut(dst.idx as usize) {
            Some(p) if dst.file == RegFile::P => {
                *p = v;
                Ok(())
            }
            _ => Err(format!("predicate %p{} is not declared", { dst.idx })),
        }
    }

    /// Writes a value: a tuple to `%a`, a scalar to `%ur` (pairs for 64 bits) or `%p`.
    fn write(&mut self, dst: Reg, ty: Type, v: AffValue) -> R<()> {
        let i = dst.idx as usize;
        match dst.file {
            RegFile::A => {
                *self
                    .aregs
                    .get_mut(i)
                    .ok_or("affine register not declared")? = v;
            }
            RegFile::Ur => {
                let s = v.as_scalar().ok_or(
                    "a value that varies across threads written to a uniform register (use %a)",
                )?;
                let n = if ty.is_wide() { 2 } else { 1 };
                let regs = self
                    .uregs
                    .get_mut(i..i + n)
                    .ok_or("uniform register not declared")?;
                regs[0] = s as u32;
                if n == 2 {
                    regs[1] = (s >> 32) as u32;
                }
            }
            RegFile::P => {
                let s = v
                    .as_scalar()
                    .ok_or("a varying predicate in the affine warp")?;
                self.set_pred(dst, s & 1 != 0)?;
            }
            RegFile::R => return Err("the affine warp has no per-thread registers (%r)".into()),
        }
        Ok(())
    }

    /// A scalar operation through the vector executor's definition (lane 0).
    fn scalar_bin(op: BinOp, ty: Type, x: u64, y: u64) -> R<u64> {
        let (a, b, mut o) = ([x; WARP], [y; WARP], [0u64; WARP]);
        bin(op, ty, &a, &b, &mut o).map_err(|()| format!("{}.{ty} is not defined", op.name()))?;
        Ok(o[0])
    }

    fn binary(&mut self, op: BinOp, ty: Type, dst: Reg, a: Src, b: Src) -> R<()> {
        let bty = if op.is_shift() { Type::U32 } else { ty };
        let (ta, tb) = (self.tuple(a, ty)?, self.tuple(b, bty)?);
        let v = match (ta.as_scalar(), tb.as_scalar()) {
            (Some(x), Some(y)) => AffValue::scalar(Self::scalar_bin(op, ty, x, y)?),
            (sa, sb) if ty.is_int() => {
                let t = match (op, sa, sb) {
                    (BinOp::Add, ..) => ta.tuple.add(&tb.tuple),
                    (BinOp::Sub, ..) => ta.tuple.sub(&tb.tuple),
                    (BinOp::Mul, Some(k), _) => tb.tuple.scale(k as i64),
                    (BinOp::Mul, _, Some(k)) => ta.tuple.scale(k as i64),
                    (BinOp::Shl, _, Some(k)) if k < 64 => ta.tuple.shl(k as u32),
                    _ => {
                        return Err(format!(
                            "{}.{ty} of these operands is not affine (add, sub, and mul/shl by a uniform value are)",
                            op.name()
                        ))
                    }
                };
                AffValue::of(t, &ta, Some(&tb))
            }
            _ => {
                return Err(format!(
                    "{}.{ty} on a varying value is not affine",
                    op.name()
                ))
            }
        };
        self.write(dst, ty, v)
    }

    fn mad(&mut self, ty: Type, dst: Reg, a: Src, b: Src, c: Src) -> R<()> {
        let (ta, tb, tc) = (self.tuple(a, ty)?, self.tuple(b, ty)?, self.tuple(c, ty)?);
        let (t, k) = match (ta.as_scalar(), tb.as_scalar()) {
            (_, Some(k)) => (&ta, k),
            (Some(k), None) => (&tb, k),
            (None, None) => return Err("mad of two varying values is not affine".into()),
        };
        if !ty.is_int() {
            return match (t.as_scalar(), tc.as_scalar()) {
                (Some(_), Some(_)) => Err("float mad in the affine warp".into()),
                _ => Err("float arithmetic is not affine".into()),
            };
        }
        let v = AffValue::of(t.tuple.mad(k as i64, &tc.tuple), t, Some(&tc));
        self.write(dst, ty, v)
    }

    fn unary(&mut self, op: UnOp, ty: Type, dst: Reg, a: Src) -> R<()> {
        let ta = self.tuple(a, ty)?;
        let v = match (op, ta.as_scalar()) {
            (UnOp::Mov, _) => ta,
            (UnOp::Neg, _) if ty.is_int() => AffValue::of(ta.tuple.scale(-1), &ta, None),
            (UnOp::Not, Some(x)) => AffValue::scalar(!x),
            _ => return Err(format!("{}.{ty} is not affine here", op.name())),
        };
        self.write(dst, ty, v)
    }

    fn convert(&mut self, rnd: Option<Round>, dty: Type, sty: Type, dst: Reg, a: Src) -> R<()> {
        let ta = self.tuple(a, sty)?;
        if let Some(x) = ta.as_scalar() {
            return self.write(dst, dty, AffValue::scalar(cvt(dty, sty, rnd, x)));
        }
        int_type(dty)?;
        let st = int_type(sty)?;
        if dty.bits() <= sty.bits() {
            // Same width or narrower: the tuple modulo the smaller width.
            return self.write(dst, dty, ta);
        }
        // The 32-bit value read in the source's signedness: base reduced, offsets as
        // signed 32-bit steps; exact where no thread's value leaves the type.
        let mut t = ta.tuple;
        t.base = st.reduce(i128::from(t.base)) as i64;
        for s in t.strides.iter_mut().chain(t.cta_strides.iter_mut()) {
            *s = i64::from(*s as i32);
        }
        let mut v = AffValue::of(t, &ta, None);
        v.checks.push((t, st));
        self.write(dst, dty, v)
    }
}

/// One non-affine warp's view of the queues: cursors into the launch's trace.
#[derive(Clone, Debug)]
pub struct WarpQueues {
    pub trace: Arc<AffineTrace>,
    pub ctaid: [u32; 3],
    /// Next entry of the address queue (index into `trace.addr_events`).
    pub next_addr: usize,
    /// Next entry of the predicate queue (index into `trace.pred_events`).
    pub next_pred: usize,
    /// Lane addresses of the address entry popped by the current instruction.
    pub addrs: [u64; WARP],
    /// The trace event the last `deq` popped (for the timing model).
    pub last_event: Option<u32>,
}

impl WarpQueues {
    pub fn new(trace: Arc<AffineTrace>, ctaid: [u32; 3]) -> WarpQueues {
        WarpQueues {
            trace,
            ctaid,
            next_addr: 0,
            next_pred: 0,
            addrs: [0; WARP],
            last_event: None,
        }
    }

    /// Entries enqueued for this warp and not dequeued: (addresses, predicates).
    pub fn left(&self) -> (usize, usize) {
        (
            self.trace.addr_events.len() - self.next_addr.min(self.trace.addr_events.len()),
            self.trace.pred_events.len() - self.next_pred.min(self.trace.pred_events.len()),
        )
    }
}

/// The `[deq.data]`/`[deq.addr]` use of a memory instruction: (data, space, bytes).
pub fn deq_use(inst: &Inst) -> Option<(bool, Space, u32)> {
    let (space, ty, addr) = inst.op.memory_access()?;
    match addr.base {
        AddrBase::DeqData => Some((true, space, ty.bytes())),
        AddrBase::DeqAddr => Some((false, space, ty.bytes())),
        _ => None,
    }
}

fn queues(warp: &mut WarpState) -> R<&mut WarpQueues> {
    warp.dac.as_deref_mut().ok_or_else(|| {
        "a deq in a kernel launched without an affine stream (no .affine for this entry)".into()
    })
}

/// Pops the warp's next address entry for a `[deq.data]` (`data`) or `[deq.addr]`
/// access of `bytes` bytes to `space`, leaving its lane addresses in
/// [`WarpQueues::addrs`].
pub(crate) fn pop_addr(warp: &mut WarpState, data: bool, space: Space, bytes: u32) -> R<()> {
    let tid = warp.tid;
    let q = queues(warp)?;
    let Some(&ev) = q.trace.addr_events.get(q.next_addr) else {
        return Err(format!(
            "deq.{} on an empty address queue (the affine stream enqueued {} addresses)",
            if data { "data" } else { "addr" },
            q.trace.addr_events.len()
        ));
    };
    let AffineEvent::Addr {
        data: d,
        space: s,
        bytes: n,
        wide,
        ref value,
        ref sel,
        pc,
    } = q.trace.events[ev as usize]
    else {
        return Err("internal: an address queue entry that is not an address".into());
    };
    let name = |d: bool| if d { "enq.data" } else { "enq.addr" };
    if d != data || s != space || n != bytes {
        return Err(format!(
            "the next address entry ({} .{} of {n} bytes, affine pc {pc}) does not match this access ({} .{} of {bytes} bytes)",
            name(d),
            s.name(),
            name(data),
            space.name()
        ));
    }
    let bits = if wide { 64 } else { 32 };
    let mut out = [0u64; WARP];
    for (l, o) in out.iter_mut().enumerate() {
        let t = [tid[0][l], tid[1][l], tid[2][l]];
        // A select tuple: only the arm the lane takes is evaluated (and checked).
        let arm = match sel {
            Some(s) if !s.holds(q.ctaid, t)? => &s.els,
            _ => value,
        };
        *o = arm.lane(q.ctaid, t, bits)?;
    }
    q.addrs = out;
    q.next_addr += 1;
    q.last_event = Some(ev);
    Ok(())
}

/// Pops the warp's next predicate entry: the mask of lanes where it holds.
pub(crate) fn pop_pred(warp: &mut WarpState) -> R<u32> {
    let tid = warp.tid;
    let q = queues(warp)?;
    let Some(&ev) = q.trace.pred_events.get(q.next_pred) else {
        return Err(format!(
            "deq.pred on an empty predicate queue (the affine stream enqueued {} predicates)",
            q.trace.pred_events.len()
        ));
    };
    let AffineEvent::Pred {
        cmp,
        ty,
        ref a,
        ref b,
        ..
    } = q.trace.events[ev as usize]
    else {
        return Err("internal: a predicate queue entry that is not a predicate".into());
    };
    let mut mask = 0u32;
    #[allow(clippy::needless_range_loop)] // three arrays indexed by lane
    for l in 0..WARP {
        let t = [tid[0][l], tid[1][l], tid[2][l]];
        let (x, y) = (
            a.lane(q.ctaid, t, ty.bits())?,
            b.lane(q.ctaid, t, ty.bits())?,
        );
        mask |= u32::from(compare(cmp, ty, x, y)) << l;
    }
    q.next_pred += 1;
    q.last_event = Some(ev);
    Ok(mask)
}

/// The fault of a block whose warp `w` ends with entries left in its queues.
pub fn check_drained(warp: &WarpState, kernel: &str, ctaid: [u32; 3]) -> Result<(), GpuFault> {
    let Some(q) = warp.dac.as_deref() else {
        return Ok(());
    };
    let (a, p) = q.left();
    if a == 0 && p == 0 {
        return Ok(());
    }
    Err(GpuFault {
        kind: FaultKind::DacQueue,
        kernel: kernel.to_string(),
        pc: 0,
        cta: (ctaid[0], ctaid[1], ctaid[2]),
        warp: warp.warp_id,
        lane: None,
        address: None,
        message: format!(
            "the warp finished with {a} address and {p} predicate entries not dequeued (enq and deq counts differ)"
        ),
    })
}

/// Gives every warp of a block fresh cursors into `trace`.
pub fn attach(warps: &mut [WarpState], trace: &Arc<AffineTrace>, ctaid: [u32; 3]) {
    for w in warps {
        match w.dac.as_deref_mut() {
            Some(q) => *q = WarpQueues::new(trace.clone(), ctaid),
            None => w.dac = Some(Box::new(WarpQueues::new(trace.clone(), ctaid))),
        }
    }
}

/// The affine stream of `launch`'s entry run once ([`run_stream`]), when the entry
/// has one.
pub(crate) fn trace_for(
    program: &Program,
    entry: u32,
    launch: &super::machine::Launch,
    max_insts: u64,
    record_pcs: bool,
) -> Result<Option<Arc<AffineTrace>>, GpuFault> {
    let Some(stream) = program
        .kernels
        .get(entry as usize)
        .and_then(|k| k.affine.as_deref())
    else {
        return Ok(None);
    };
    let l = StreamLaunch {
        params: &launch.params,
        grid: [launch.grid.0, launch.grid.1, launch.grid.2],
        block: [launch.block.0, launch.block.1, launch.block.2],
        max_insts,
        record_pcs,
    };
    run_stream(stream, l).map(|t| Some(Arc::new(t)))
}
