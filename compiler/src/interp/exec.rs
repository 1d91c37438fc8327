//! Running one gang: its frame stack, its registers and the instruction loop.
//!
//! A gang's registers are one flat `Vec<u64>`: each frame owns `values * lane_count`
//! slots starting at its `base`, value `v` lane `i` at `base + v * lane_count + i` (a
//! uniform value uses lane 0 only). Calls push a frame on top; returns truncate.

use cranelift_entity::EntityRef;
use sim::record::{Recorder, TraceStep};
use sim::Dim3;

use super::decode::{AddrOf, DecodedFunc, LaneCount, Op, Opnd, Target};
use super::error::RuntimeError;
use super::lanes::{self, mask_bits};
use super::memory::{Memory, StackMark};
use super::ops::canonical;
use super::print::{self, PrintArg};
use super::{Limits, Stats};
use crate::ir::{FuncRef, Module, Scalar, Space, SpecialReg};

/// The widest gang the interpreter runs (`ballot` returns one bit per lane in an `i64`).
pub const MAX_LANES: usize = 64;

/// The launch coordinates every gang of a block shares.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub block_idx: Dim3,
    pub block_dim: Dim3,
    pub grid_dim: Dim3,
    /// Bytes of dynamic shared memory per block.
    pub dynamic_shared: u32,
}

/// One activation of a function.
#[derive(Clone, Copy, Debug)]
struct Frame {
    func: u32,
    /// The next op to run (kept up to date only across calls, barriers and errors).
    pc: u32,
    base: usize,
    /// Index of the frame's first stack-slot address in [`Gang::slot_addrs`].
    slots: usize,
    mark: StackMark,
    /// Where the caller wants the result.
    ret: Option<Opnd>,
}

/// One gang of the current block.
#[derive(Debug)]
pub struct Gang {
    pub index: usize,
    /// Bit `i` set when lane `i` is a thread of the block.
    pub exists: u64,
    regs: Vec<u64>,
    frames: Vec<Frame>,
    slot_addrs: Vec<u64>,
    /// `thread_idx.{x,y,z}` of each lane.
    tid: [Vec<u64>; 3],
    scratch: Vec<u64>,
    /// The barrier (function and op) the gang waits at.
    pub waiting_at: Option<(usize, usize)>,
}

impl Gang {
    /// Gang `index` of a block of `block_dim` threads, `lanes` wide.
    pub fn new(index: usize, lanes: usize, block_dim: Dim3) -> Gang {
        let threads = block_dim.count();
        let (bx, by) = (u64::from(block_dim.x), u64::from(block_dim.y));
        let mut tid = [vec![0; lanes], vec![0; lanes], vec![0; lanes]];
        let mut exists = 0;
        for i in 0..lanes {
            let t = (index * lanes + i) as u64;
            if t < threads {
                exists |= 1 << i;
            }
            let [x, y, z] = &mut tid;
            (x[i], y[i], z[i]) = (t % bx, t / bx % by, t / (bx * by));
        }
        Gang {
            index,
            exists,
            regs: Vec::new(),
            frames: Vec::new(),
            slot_addrs: Vec::new(),
            tid,
            scratch: Vec::new(),
            waiting_at: None,
        }
    }

    pub fn finished(&self) -> bool {
        self.frames.is_empty()
    }
}

/// Why a gang stopped running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Returned,
    Barrier,
}

/// What an op asks the loop to do next.
enum Flow {
    Next,
    Jump(u32),
    Call,
    Return(Option<Opnd>),
    Barrier,
}

/// An error inside an op, before the loop adds where it happened.
struct Fault {
    msg: String,
    lane: Option<u32>,
    addr: Option<u64>,
}

impl Fault {
    fn new(msg: impl Into<String>) -> Fault {
        Fault {
            msg: msg.into(),
            lane: None,
            addr: None,
        }
    }
}

/// Lane `i` of operand `o` in the frame at `base`.
#[inline(always)]
fn lane(regs: &[u64], base: usize, o: Opnd, i: usize) -> u64 {
    regs[base + o.off as usize + if o.var { i } else { 0 }]
}

/// Copies a value between frames (or within one), broadcasting a uniform source.
fn copy_value(regs: &mut [u64], sb: usize, src: Opnd, db: usize, dst: Opnd, n: usize) {
    let d = db + dst.off as usize;
    if dst.var {
        for i in 0..n {
            regs[d + i] = lane(regs, sb, src, i);
        }
    } else {
        regs[d] = regs[sb + src.off as usize];
    }
}

/// The interpreter state shared by the gangs of a launch.
pub struct Machine<'a> {
    pub module: &'a Module,
    pub funcs: &'a [DecodedFunc],
    pub memory: &'a mut Memory,
    pub lanes: usize,
    pub limits: Limits,
    pub stats: Stats,
    pub output: String,
    pub geo: Geometry,
    /// What the entry function returned in the first gang of the first block to
    /// finish it (gang 0 of block 0): an `export` function's result for the host.
    pub entry_return: Option<u64>,
    /// Executions per op (`[function][pc]`), when the caller asked for a profile.
    pub profile: Option<Vec<Vec<u64>>>,
    /// Per-op counters and one gang's path ([`sim::record`]; code = function
    /// index, index = op), when the caller asked for them.
    pub recorder: Option<&'a mut Recorder>,
    /// Gangs in a block, to number gangs over the launch for the trace.
    pub gangs_per_block: u64,
}

impl Machine<'_> {
    /// Pushes the entry frame of `func` on an idle gang: `args` are the uniform
    /// parameters, the hidden mask (if any) is the gang's existing lanes.
    pub fn start(&mut self, g: &mut Gang, func: FuncRef, args: &[u64]) -> Result<(), RuntimeError> {
        g.regs.clear();
        g.slot_addrs.clear();
        g.waiting_at = None;
        let f = &self.funcs[func.index()];
        let callee = &self.module.functions[func];
        g.regs.resize(f.frame_size, 0);
        for (j, p) in f.params.iter().enumerate() {
            let (x, scalar) = match args.get(j) {
                Some(&x) => (x, callee.sig.params[j].scalar),
                None => (1, Scalar::Bool),
            };
            let x = canonical(x, scalar);
            let d = p.off as usize;
            if p.var {
                for i in 0..self.lanes {
                    g.regs[d + i] = if j < args.len() { x } else { g.exists >> i & 1 };
                }
            } else {
                g.regs[d] = x;
            }
        }
        let mark = self.memory.stack_mark(g.index);
        self.memory
            .push_slots(g.index, f.slots.iter().copied(), &mut g.slot_addrs)
            .map_err(|e| RuntimeError::new(e.to_string()))?;
        g.frames.push(Frame {
            func: func.as_u32(),
            pc: 0,
            base: 0,
            slots: 0,
            mark,
            ret: None,
        });
        Ok(())
    }

    /// Runs `g` until it returns from its entry function or reaches a barrier.
    pub fn run_gang(&mut self, g: &mut Gang) -> Result<Stop, RuntimeError> {
        let funcs = self.funcs;
        g.waiting_at = None;
        loop {
            let Some(&fr) = g.frames.last() else {
                return Ok(Stop::Returned);
            };
            let fi = fr.func as usize;
            let f = &funcs[fi];
            let mut pc = fr.pc as usize;
            loop {
                self.stats.dynamic_instructions += 1;
                if self.stats.dynamic_instructions > self.limits.max_steps {
                    let msg = format!(
                        "step limit of {} instructions exceeded",
                        self.limits.max_steps
                    );
                    return Err(self.locate(g, fi, pc, Fault::new(msg)));
                }
                let lanes = self.lanes_on(g, fr.base, f.lane_counts[pc]);
                self.stats.lane_operations += u64::from(lanes.map_or(0, u64::count_ones));
                if let Some(p) = self.profile.as_mut() {
                    p[fi][pc] += 1;
                }
                if self.recorder.is_some() {
                    self.record(g, fi, pc, lanes);
                }
                let op = &f.ops[pc];
                match self.exec(g, op, fr.base, fr.slots) {
                    Ok(Flow::Next) => pc += 1,
                    Ok(Flow::Jump(t)) => pc = t as usize,
                    Ok(Flow::Barrier) => {
                        g.frames.last_mut().expect("running frame").pc = pc as u32 + 1;
                        g.waiting_at = Some((fi, pc));
                        return Ok(Stop::Barrier);
                    }
                    Ok(Flow::Call) => {
                        g.frames.last_mut().expect("running frame").pc = pc as u32 + 1;
                        if let Err(e) = self.call(g, op) {
                            return Err(self.locate(g, fi, pc, e));
                        }
                        break;
                    }
                    Ok(Flow::Return(v)) => {
                        self.ret(g, v);
                        break;
                    }
                    Err(e) => return Err(self.locate(g, fi, pc, e)),
                }
            }
        }
    }

    /// Where gang `g` is waiting, for deadlock reports.
    pub fn waiting_error(&self, g: &Gang, message: String) -> RuntimeError {
        let (fi, pc) = g.waiting_at.expect("a waiting gang");
        self.locate(g, fi, pc, Fault::new(message))
    }

    fn locate(&self, g: &Gang, fi: usize, pc: usize, e: Fault) -> RuntimeError {
        let func = &self.module.functions[FuncRef::new(fi)];
        let (block, inst) = self.funcs[fi].origin[pc];
        let span = func.spans[inst];
        RuntimeError {
            message: e.msg,
            span: (span != Default::default()).then_some(span),
            function: Some(func.name.clone()),
            block: Some(block),
            inst: Some(inst),
            lane: e.lane,
            gang: Some((self.geo.block_idx, g.index as u32)),
            address: e.addr,
        }
    }

    /// The lanes a varying op works on (`None` for a uniform op).
    #[inline]
    fn lanes_on(&self, g: &Gang, base: usize, count: LaneCount) -> Option<u64> {
        match count {
            LaneCount::None => None,
            LaneCount::Exists => Some(g.exists),
            LaneCount::Mask(m) => Some(self.mask(g, base, Some(m))),
        }
    }

    /// Records op `pc` of function `fi`, run by gang `g` on `lanes`.
    #[inline(never)]
    fn record(&mut self, g: &Gang, fi: usize, pc: usize, lanes: Option<u64>) {
        let geo = &self.geo;
        let block = u64::from(geo.block_idx.x)
            + u64::from(geo.grid_dim.x)
                * (u64::from(geo.block_idx.y)
                    + u64::from(geo.grid_dim.y) * u64::from(geo.block_idx.z));
        let unit = block * self.gangs_per_block + g.index as u64;
        let Some(r) = self.recorder.as_deref_mut() else {
            return;
        };
        let (code, index) = (fi as u32, pc as u32);
        if let Some(p) = r.profile.as_mut() {
            let slots = lanes.map_or(0, |_| g.exists.count_ones());
            let active = lanes.map_or(0, u64::count_ones);
            p.executed(code, index, u32::MAX, slots, active);
        }
        if let Some(t) = r.trace.as_mut().filter(|t| t.unit == unit) {
            t.push(TraceStep {
                code,
                index,
                mask: lanes,
            });
        }
    }

    /// The lanes on in a mask operand (all existing lanes without one).
    #[inline]
    fn mask(&self, g: &Gang, base: usize, m: Option<Opnd>) -> u64 {
        match m {
            None => g.exists,
            Some(o) if o.var => {
                let s = base + o.off as usize;
                mask_bits(&g.regs[s..s + self.lanes], g.exists)
            }
            Some(o) if g.regs[base + o.off as usize] & 1 != 0 => g.exists,
            Some(_) => 0,
        }
    }

    fn exec(&mut self, g: &mut Gang, op: &Op, base: usize, slots: usize) -> Result<Flow, Fault> {
        let n = self.lanes;
        match *op {
            Op::Const { dst, bits } => {
                let d = base + dst.off as usize;
                let count = if dst.var { n } else { 1 };
                g.regs[d..d + count].fill(bits);
            }
            Op::Unary { f, a, dst } => {
                let d = base + dst.off as usize;
                if dst.var {
                    for i in 0..n {
                        g.regs[d + i] = f(lane(&g.regs, base, a, i));
                    }
                } else {
                    g.regs[d] = f(g.regs[base + a.off as usize]);
                }
            }
            Op::Binary { f, a, b, dst } => {
                let d = base + dst.off as usize;
                if dst.var {
                    for i in 0..n {
                        g.regs[d + i] = f(lane(&g.regs, base, a, i), lane(&g.regs, base, b, i));
                    }
                } else {
                    g.regs[d] = f(g.regs[base + a.off as usize], g.regs[base + b.off as usize]);
                }
            }
            Op::Divide { f, a, b, dst } => self.divide(g, base, f, a, b, dst)?,
            Op::Select { c, a, b, dst } => {
                let d = base + dst.off as usize;
                let count = if dst.var { n } else { 1 };
                for i in 0..count {
                    let pick = if lane(&g.regs, base, c, i) & 1 != 0 {
                        a
                    } else {
                        b
                    };
                    g.regs[d + i] = lane(&g.regs, base, pick, i);
                }
            }
            Op::Special { reg, dst } => self.special(g, base, reg, dst),
            Op::Lane {
                op,
                scalar,
                args,
                comb,
                dst,
            } => {
                let mut bufs = [[0u64; MAX_LANES]; 3];
                for (buf, arg) in bufs.iter_mut().zip(args) {
                    if let Some(o) = arg {
                        for (i, x) in buf[..n].iter_mut().enumerate() {
                            *x = lane(&g.regs, base, o, i);
                        }
                    }
                }
                let mut out = [0u64; MAX_LANES];
                let [x, y, z] = &bufs;
                lanes::lane_op(
                    op,
                    scalar,
                    [&x[..n], &y[..n], &z[..n]],
                    n,
                    g.exists,
                    comb,
                    &mut out,
                )
                .map_err(Fault::new)?;
                let d = base + dst.off as usize;
                let count = if dst.var { n } else { 1 };
                g.regs[d..d + count].copy_from_slice(&out[..count]);
            }
            Op::Addr { of, dst } => {
                g.regs[base + dst.off as usize] = match of {
                    AddrOf::Stack(i) => g.slot_addrs[slots + i as usize],
                    AddrOf::Global(i) => self
                        .memory
                        .global_address(crate::ir::GlobalVar::from_u32(i))
                        .expect("globals are bound before a launch"),
                    AddrOf::Shared(i) => self
                        .memory
                        .shared_address(crate::ir::SharedVar::from_u32(i)),
                };
            }
            Op::StackAlloc {
                size,
                size_mask,
                dst,
            } => {
                let bytes = g.regs[base + size.off as usize] & size_mask;
                let addr = self
                    .memory
                    .push_dynamic(g.index, bytes, crate::ir::STACK_ALLOC_ALIGN)
                    .map_err(|_| Fault::new(crate::ir::TrapCode::StackExhausted.message()))?;
                g.regs[base + dst.off as usize] = addr;
            }
            Op::Load { .. } => self.load(g, base, op)?,
            Op::Store { .. } => self.store(g, base, op)?,
            Op::Atomic { .. } | Op::Cas { .. } => self.atomic(g, base, op)?,
            Op::Barrier => return Ok(Flow::Barrier),
            Op::Call { .. } => return Ok(Flow::Call),
            Op::Print {
                format,
                ref args,
                mask,
            } => {
                let m = self.mask(g, base, mask);
                if m != 0 {
                    let args: Vec<PrintArg<'_>> = args
                        .iter()
                        .map(|&(o, scalar)| {
                            let s = base + o.off as usize;
                            PrintArg {
                                scalar,
                                varying: o.var,
                                lanes: &g.regs[s..s + if o.var { n } else { 1 }],
                            }
                        })
                        .collect();
                    print::format(&self.module.strings[format], &args, m, &mut self.output);
                    if self.output.len() > self.limits.max_output_bytes {
                        return Err(Fault::new(format!(
                            "printed output exceeded the limit of {} bytes",
                            self.limits.max_output_bytes
                        )));
                    }
                }
            }
            Op::Trap { code } => return Err(Fault::new(code.message())),
            Op::Jump { ref dest } => return Ok(self.branch(g, base, dest)),
            Op::Brif {
                cond,
                ref then_dest,
                ref else_dest,
            } => {
                let taken = g.regs[base + cond.off as usize] & 1 != 0;
                return Ok(self.branch(g, base, if taken { then_dest } else { else_dest }));
            }
            Op::Return { value } => return Ok(Flow::Return(value)),
        }
        Ok(Flow::Next)
    }

    /// Moves the branch arguments into the target's parameters (a parallel copy: all
    /// arguments are read before any parameter is written).
    fn branch(&self, g: &mut Gang, base: usize, t: &Target) -> Flow {
        let n = self.lanes;
        if !t.moves.is_empty() {
            g.scratch.clear();
            for &(src, _) in t.moves.iter() {
                for i in 0..n {
                    g.scratch.push(lane(&g.regs, base, src, i));
                }
            }
            for (k, &(_, dst)) in t.moves.iter().enumerate() {
                let d = base + dst.off as usize;
                let count = if dst.var { n } else { 1 };
                g.regs[d..d + count].copy_from_slice(&g.scratch[k * n..k * n + count]);
            }
        }
        Flow::Jump(t.pc)
    }

    /// Integer division: a zero divisor in an existing lane (or a uniform one) traps.
    fn divide(
        &self,
        g: &mut Gang,
        base: usize,
        f: super::ops::DivFn,
        a: Opnd,
        b: Opnd,
        dst: Opnd,
    ) -> Result<(), Fault> {
        let d = base + dst.off as usize;
        let count = if dst.var { self.lanes } else { 1 };
        for i in 0..count {
            let r = f(lane(&g.regs, base, a, i), lane(&g.regs, base, b, i));
            g.regs[d + i] = match r {
                Some(x) => x,
                None if dst.var && g.exists >> i & 1 == 0 => 0,
                None => {
                    return Err(Fault {
                        msg: "integer division or remainder by zero".into(),
                        lane: dst.var.then_some(i as u32),
                        addr: None,
                    })
                }
            };
        }
        Ok(())
    }

    fn special(&self, g: &mut Gang, base: usize, reg: SpecialReg, dst: Opnd) {
        let d = base + dst.off as usize;
        let geo = &self.geo;
        let varying: Option<&[u64]> = match reg {
            SpecialReg::ThreadIdxX => Some(&g.tid[0]),
            SpecialReg::ThreadIdxY => Some(&g.tid[1]),
            SpecialReg::ThreadIdxZ => Some(&g.tid[2]),
            _ => None,
        };
        let uniform = match reg {
            SpecialReg::LaneCount => self.lanes as u64,
            SpecialReg::BlockIdxX => geo.block_idx.x.into(),
            SpecialReg::BlockIdxY => geo.block_idx.y.into(),
            SpecialReg::BlockIdxZ => geo.block_idx.z.into(),
            SpecialReg::BlockDimX => geo.block_dim.x.into(),
            SpecialReg::BlockDimY => geo.block_dim.y.into(),
            SpecialReg::BlockDimZ => geo.block_dim.z.into(),
            SpecialReg::GridDimX => geo.grid_dim.x.into(),
            SpecialReg::GridDimY => geo.grid_dim.y.into(),
            SpecialReg::GridDimZ => geo.grid_dim.z.into(),
            SpecialReg::GangIndex => g.index as u64,
            SpecialReg::DynSharedBytes => geo.dynamic_shared.into(),
            SpecialReg::Clock => {
                g.regs[d] = self.stats.dynamic_instructions;
                return;
            }
            _ => 0,
        };
        let count = if dst.var { self.lanes } else { 1 };
        for i in 0..count {
            g.regs[d + i] = match (reg, varying) {
                (SpecialReg::LaneIndex, _) => i as u64,
                (_, Some(t)) => t[i],
                _ => uniform,
            } & 0xffff_ffff;
        }
    }

    fn read(
        &mut self,
        g: &Gang,
        addr: u64,
        size: u32,
        space: Space,
        lane: usize,
    ) -> Result<u64, Fault> {
        self.stats.loads += 1;
        self.memory
            .read(addr, size, space, g.index)
            .map_err(|e| Fault {
                msg: e.to_string(),
                lane: Some(lane as u32),
                addr: Some(addr),
            })
    }

    fn write(
        &mut self,
        g: &Gang,
        addr: u64,
        size: u32,
        value: u64,
        space: Space,
        lane: usize,
    ) -> Result<(), Fault> {
        self.stats.stores += 1;
        self.memory
            .write(addr, size, value, space, g.index)
            .map_err(|e| Fault {
                msg: e.to_string(),
                lane: Some(lane as u32),
                addr: Some(addr),
            })
    }

    /// `load`: one access for a uniform result, else a gather: one access per active
    /// lane at its own address. Off lanes read as 0 and never touch memory.
    fn load(&mut self, g: &mut Gang, base: usize, op: &Op) -> Result<(), Fault> {
        let Op::Load {
            scalar,
            size,
            space,
            addr,
            mask,
            dst,
        } = *op
        else {
            unreachable!()
        };
        let m = self.mask(g, base, mask);
        let d = base + dst.off as usize;
        let count = if dst.var { self.lanes } else { 1 };
        for i in 0..count {
            g.regs[d + i] = if m >> i & 1 != 0 || (!dst.var && m != 0) {
                let a = lane(&g.regs, base, addr, i);
                canonical(self.read(g, a, size, space, i)?, scalar)
            } else {
                0
            };
        }
        Ok(())
    }

    /// `store`: a uniform value at a uniform address is one access; a varying address
    /// scatters, lane by lane in lane order (so of two lanes storing to one address the
    /// highest wins).
    fn store(&mut self, g: &mut Gang, base: usize, op: &Op) -> Result<(), Fault> {
        let Op::Store {
            size,
            space,
            addr,
            value,
            mask,
        } = *op
        else {
            unreachable!()
        };
        let m = self.mask(g, base, mask);
        if m == 0 {
            return Ok(());
        }
        if !addr.var && !value.var {
            let i = m.trailing_zeros() as usize;
            let (a, v) = (lane(&g.regs, base, addr, 0), lane(&g.regs, base, value, 0));
            return self.write(g, a, size, v, space, i);
        }
        for i in 0..self.lanes {
            if m >> i & 1 != 0 {
                let a = lane(&g.regs, base, addr, i);
                let v = lane(&g.regs, base, value, i);
                self.write(g, a, size, v, space, i)?;
            }
        }
        Ok(())
    }

    /// `atomic_rmw` and `atomic_cas`: uniform operands make one atomic access; with any
    /// varying operand each active lane does its own, in lane order, at its address
    /// (a uniform address is the same location for every lane), getting the value it
    /// found.
    fn atomic(&mut self, g: &mut Gang, base: usize, op: &Op) -> Result<(), Fault> {
        let (scalar, size, space, addr, mask, dst) = match *op {
            Op::Atomic {
                scalar,
                size,
                space,
                addr,
                mask,
                dst,
                ..
            }
            | Op::Cas {
                scalar,
                size,
                space,
                addr,
                mask,
                dst,
                ..
            } => (scalar, size, space, addr, mask, dst),
            _ => unreachable!(),
        };
        let m = self.mask(g, base, mask);
        let d = base + dst.off as usize;
        let count = if dst.var { self.lanes } else { 1 };
        for i in 0..count {
            let on = if dst.var { m >> i & 1 != 0 } else { m != 0 };
            if !on {
                g.regs[d + i] = 0;
                continue;
            }
            let a = lane(&g.regs, base, addr, i);
            let old = canonical(self.read(g, a, size, space, i)?, scalar);
            let new = match *op {
                Op::Atomic { f, value, .. } => Some(f(old, lane(&g.regs, base, value, i))),
                Op::Cas {
                    expected,
                    replacement,
                    ..
                } => (old == lane(&g.regs, base, expected, i))
                    .then(|| lane(&g.regs, base, replacement, i)),
                _ => unreachable!(),
            };
            if let Some(new) = new {
                self.write(g, a, size, new, space, i)?;
            }
            self.stats.atomics += 1;
            g.regs[d + i] = old;
        }
        Ok(())
    }

    /// Pushes the callee's frame for a `call` op; the caller's pc is already past it.
    fn call(&mut self, g: &mut Gang, op: &Op) -> Result<(), Fault> {
        let Op::Call {
            func,
            ref args,
            mask,
            dst,
        } = *op
        else {
            unreachable!()
        };
        if g.frames.len() >= self.limits.max_call_depth {
            return Err(Fault::new(format!(
                "call depth limit of {} frames exceeded (runaway recursion?)",
                self.limits.max_call_depth
            )));
        }
        let callee = &self.funcs[func.index()];
        if callee.external {
            let name = &self.module.functions[func].name;
            return Err(Fault::new(format!("call to @{name}, which has no body")));
        }
        let caller_base = g.frames.last().expect("a caller").base;
        let m = self.mask(g, caller_base, mask);
        let base = g.regs.len();
        g.regs.resize(base + callee.frame_size, 0);
        for (j, &p) in callee.params.iter().enumerate() {
            match args.get(j) {
                Some(&a) => copy_value(&mut g.regs, caller_base, a, base, p, self.lanes),
                None => {
                    let count = if p.var { self.lanes } else { 1 };
                    for i in 0..count {
                        g.regs[base + p.off as usize + i] = m >> i & 1;
                    }
                }
            }
        }
        let mark = self.memory.stack_mark(g.index);
        let slots = g.slot_addrs.len();
        self.memory
            .push_slots(g.index, callee.slots.iter().copied(), &mut g.slot_addrs)
            .map_err(|e| Fault::new(e.to_string()))?;
        g.frames.push(Frame {
            func: func.as_u32(),
            pc: 0,
            base,
            slots,
            mark,
            ret: dst,
        });
        self.stats.calls += 1;
        Ok(())
    }

    /// Pops the current frame, handing its result to the caller.
    fn ret(&mut self, g: &mut Gang, value: Option<Opnd>) {
        let fr = g.frames.pop().expect("a frame to return from");
        if g.frames.is_empty() && g.index == 0 && self.entry_return.is_none() {
            self.entry_return = value.map(|v| lane(&g.regs, fr.base, v, 0));
        }
        self.memory.pop_to(g.index, fr.mark);
        g.slot_addrs.truncate(fr.slots);
        if let (Some(caller), Some(dst), Some(v)) = (g.frames.last(), fr.ret, value) {
            copy_value(&mut g.regs, fr.base, v, caller.base, dst, self.lanes);
        }
        g.regs.truncate(fr.base);
    }
}
