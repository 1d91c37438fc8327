//! Functional semantics of the dac-gpu instructions over the 32 lanes of a warp.
//!
//! A warp executes one instruction for all its active lanes: operands are read for
//! all 32 lanes into small arrays, the operation runs lane by lane (one `match` per
//! instruction, not per lane, so the lane loops stay tight), and results are written
//! back only in the lanes that execute (active and guard true).
//!
//! Divergence follows the ISA page: each warp has a SIMT reconvergence stack (as in
//! GPGPU-Sim). A divergent `bra` sets the current entry's pc to the branch's immediate
//! post-dominator (computed here from each kernel's control-flow graph) and pushes the
//! two paths; an entry is popped when its pc reaches its reconvergence pc or its mask
//! empties. `call` pushes an entry for the function that reconverges at the function's
//! end (`ret`); `exit` removes lanes from every entry.
//!
//! The executor records what the timing model needs (the lane addresses of memory
//! accesses) in a [`MemTrace`], and reports barriers and warp completion as [`Flow`].

use super::isa::*;
use super::lanes32::{bin32, bin64, cvt_int, is32, is64, mad32, setp32, Halves};
use super::machine::{FaultKind, GlobalMemory, GpuFault};

/// Lanes per warp: the machine's warp size (both presets use 32).
pub const WARP: usize = 32;

/// Reconvergence pc meaning "the end of the current function or kernel".
const END: u32 = u32::MAX;
/// Reconvergence pc of the bottom entry: never reached.
const NEVER: u32 = u32::MAX - 1;
/// Deepest call nesting before a fault (runaway recursion).
const MAX_CALL_DEPTH: usize = 256;

/// Per-kernel (or function) facts computed once: the immediate post-dominator of
/// every instruction, the reconvergence point of a divergent branch there.
#[derive(Clone, Debug)]
pub struct Code {
    /// `ipdom[i]`: instruction index, or `u32::MAX` when only the end post-dominates.
    pub ipdom: Vec<u32>,
    pub is_func: bool,
}

impl Code {
    pub fn new(k: &Kernel) -> Code {
        Code {
            ipdom: post_dominators(k),
            is_func: k.kind == KernelKind::Func,
        }
    }
}

/// Successors of instruction `i` in a kernel of `n` instructions (`n` = the end).
fn successors(k: &Kernel, i: usize) -> ([usize; 2], usize) {
    let n = k.insts.len();
    let inst = &k.insts[i];
    match inst.op {
        Op::Bra { target, .. } if inst.guard.is_none() => ([target as usize, 0], 1),
        Op::Bra { target, .. } => ([target as usize, i + 1], 2),
        Op::Exit | Op::Ret => ([n, 0], 1),
        _ => ([i + 1, 0], 1),
    }
}

/// Immediate post-dominators by the Cooper-Harvey-Kennedy algorithm on the reversed
/// control-flow graph, rooted at a virtual end node. Instructions that cannot reach
/// the end (infinite loops) get [`END`].
fn post_dominators(k: &Kernel) -> Vec<u32> {
    let n = k.insts.len();
    let mut preds_rev: Vec<Vec<usize>> = vec![Vec::new(); n + 1]; // forward preds
    for i in 0..n {
        let (s, c) = successors(k, i);
        for &t in &s[..c] {
            preds_rev[t.min(n)].push(i);
        }
    }
    // Postorder of the reverse graph from the end node.
    let mut order = Vec::with_capacity(n + 1);
    let mut seen = vec![false; n + 1];
    let mut stack = vec![(n, 0usize)];
    seen[n] = true;
    while let Some((v, idx)) = stack.pop() {
        if idx < preds_rev[v].len() {
            stack.push((v, idx + 1));
            let w = preds_rev[v][idx];
            if !seen[w] {
                seen[w] = true;
                stack.push((w, 0));
            }
        } else {
            order.push(v);
        }
    }
    let mut po_num = vec![usize::MAX; n + 1];
    for (i, &v) in order.iter().enumerate() {
        po_num[v] = i;
    }
    let mut idom = vec![usize::MAX; n + 1];
    idom[n] = n;
    let mut changed = true;
    while changed {
        changed = false;
        for &v in order.iter().rev().skip(1) {
            let (s, c) = successors(k, v);
            let mut new = usize::MAX;
            for &t in &s[..c] {
                let t = t.min(n);
                if idom[t] == usize::MAX {
                    continue;
                }
                new = if new == usize::MAX {
                    t
                } else {
                    intersect(&idom, &po_num, new, t)
                };
            }
            if new != usize::MAX && idom[v] != new {
                idom[v] = new;
                changed = true;
            }
        }
    }
    (0..n)
        .map(|i| match idom[i] {
            d if d == usize::MAX || d == n => END,
            d => d as u32,
        })
        .collect()
}

fn intersect(idom: &[usize], po: &[usize], mut a: usize, mut b: usize) -> usize {
    while a != b {
        while po[a] < po[b] {
            a = idom[a];
        }
        while po[b] < po[a] {
            b = idom[b];
        }
    }
    a
}

/// One SIMT stack entry: run `mask` from `pc` of code `code` until `rpc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub code: u32,
    pub pc: u32,
    pub rpc: u32,
    pub mask: u32,
}

/// What a step did to the warp's flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// The warp arrived at `bar.sync id` (its pc is past the barrier).
    Barrier(u32),
    /// Every lane of the warp has exited.
    Done,
}

/// The lane addresses of the last memory instruction, for the timing model.
#[derive(Clone, Debug)]
pub struct MemTrace {
    /// True when the last step accessed memory.
    pub valid: bool,
    pub space: Space,
    pub write: bool,
    pub atomic: bool,
    pub bytes: u32,
    /// Lanes that accessed memory.
    pub mask: u32,
    pub addrs: [u64; WARP],
}

impl Default for MemTrace {
    fn default() -> Self {
        MemTrace {
            valid: false,
            space: Space::Global,
            write: false,
            atomic: false,
            bytes: 0,
            mask: 0,
            addrs: [0; WARP],
        }
    }
}

/// What a step writes besides the warp: the memory trace for the timing model and
/// lane-value buffers reused from step to step (not zeroed each instruction).
#[derive(Clone, Debug, Default)]
pub struct StepBuffers {
    pub trace: MemTrace,
    lanes: [[u64; WARP]; 4],
    /// 32-bit lane buffers of the 32-bit path.
    l32: [[u32; WARP]; 6],
    /// Functional runs need no lane addresses: `trace` then records only `valid`.
    no_addrs: bool,
}

impl StepBuffers {
    /// Buffers for a functional run (no memory trace wanted).
    pub fn functional() -> StepBuffers {
        StepBuffers {
            no_addrs: true,
            ..StepBuffers::default()
        }
    }
}

/// The state of one warp: registers of its 32 lanes (register-major: register `r` of
/// lane `l` at `r * 32 + l`), predicates as lane bit masks, uniform registers, local
/// memory and the reconvergence stack.
#[derive(Clone, Debug)]
pub struct WarpState {
    pub regs: Vec<u32>,
    pub preds: Vec<u32>,
    pub uregs: Vec<u32>,
    /// `local_bytes` per lane, lane-major.
    pub local: Vec<u8>,
    pub local_bytes: u32,
    pub stack: Vec<Entry>,
    /// Warp index within its block.
    pub warp_id: u32,
    /// Thread indices of the lanes (x, y, z).
    pub tid: [[u32; WARP]; 3],
    /// Lanes that hold a thread of the block.
    pub valid: u32,
    /// DAC: this warp's queues when its kernel has an affine stream.
    pub dac: Option<Box<super::affine::WarpQueues>>,
    /// What `%clock64` reads; [`step`] never changes it, its driver does: the timing
    /// model sets the SM's cycle before each issue, the functional machine counts the
    /// warp's instructions (both never go backwards, the latter deterministically).
    pub clock: u64,
}

/// A block's shared state during execution.
#[derive(Clone, Debug)]
pub struct CtaInfo {
    pub ctaid: [u32; 3],
    pub ntid: [u32; 3],
    pub nctaid: [u32; 3],
    pub shared: Vec<u8>,
}

/// Everything a step reads besides the warp and its block.
pub struct Env<'a> {
    pub program: &'a Program,
    pub codes: &'a [Code],
    /// Index of the launched kernel in `program.kernels`.
    pub entry: u32,
    pub params: &'a [u8],
    pub global: &'a mut GlobalMemory,
}

impl WarpState {
    /// Warp `warp_id` of a block of `ntid` threads running `k`.
    #[allow(clippy::needless_range_loop)] // four arrays indexed by lane
    pub fn new(k: &Kernel, entry: u32, warp_id: u32, ntid: [u32; 3]) -> WarpState {
        let nthreads = ntid[0] * ntid[1] * ntid[2];
        let mut tid = [[0u32; WARP]; 3];
        let mut valid = 0u32;
        // Divide once, then count x, y, z up (x fastest).
        let t0 = warp_id * WARP as u32;
        let (mut x, mut y, mut z) = (
            t0 % ntid[0],
            (t0 / ntid[0]) % ntid[1],
            t0 / (ntid[0] * ntid[1]),
        );
        for l in 0..WARP {
            if t0 + (l as u32) < nthreads {
                valid |= 1 << l;
            }
            [tid[0][l], tid[1][l], tid[2][l]] = [x, y, z];
            x += 1;
            if x == ntid[0] {
                x = 0;
                y += 1;
                if y == ntid[1] {
                    y = 0;
                    z += 1;
                }
            }
        }
        WarpState {
            regs: vec![0; k.num_regs as usize * WARP],
            preds: vec![0; k.num_preds as usize],
            uregs: vec![0; k.num_uregs as usize],
            local: vec![0; k.local_bytes as usize * WARP],
            local_bytes: k.local_bytes,
            stack: vec![Entry {
                code: entry,
                pc: 0,
                rpc: NEVER,
                mask: valid,
            }],
            warp_id,
            tid,
            valid,
            dac: None,
            clock: 0,
        }
    }

    /// Back to the state of [`WarpState::new`] for another block of the same kernel
    /// and geometry, reusing the allocations (thread indices stay as they are).
    pub fn reset(&mut self, entry: u32) {
        zero(&mut self.regs);
        zero(&mut self.preds);
        zero(&mut self.uregs);
        zero(&mut self.local);
        self.stack.clear();
        self.stack.push(Entry {
            code: entry,
            pc: 0,
            rpc: NEVER,
            mask: self.valid,
        });
    }

    pub fn done(&self) -> bool {
        self.stack.is_empty()
    }

    /// The code index and pc of the next instruction (`None` when done).
    pub fn next_pc(&self) -> Option<(u32, u32)> {
        self.stack.last().map(|e| (e.code, e.pc))
    }

    pub fn active_mask(&self) -> u32 {
        self.stack.last().map_or(0, |e| e.mask)
    }

    /// Pops finished entries: reached their reconvergence pc or lost every lane.
    fn settle(&mut self) {
        while let Some(top) = self.stack.last() {
            if top.mask == 0 || top.pc == top.rpc {
                self.stack.pop();
            } else {
                break;
            }
        }
    }

    fn guard_mask(&self, g: Option<Guard>) -> u32 {
        match g {
            None => u32::MAX,
            Some(g) => {
                let p = self.preds.get(g.pred as usize).copied().unwrap_or(0);
                if g.negate {
                    !p
                } else {
                    p
                }
            }
        }
    }

    fn special(&self, s: Special, cta: &CtaInfo, out: &mut [u64; WARP]) {
        let d = |d: Dim| d as usize;
        match s {
            Special::Tid(dim) => {
                for (o, &v) in out.iter_mut().zip(self.tid[d(dim)].iter()) {
                    *o = u64::from(v);
                }
            }
            Special::Ntid(dim) => *out = [u64::from(cta.ntid[d(dim)]); WARP],
            Special::Ctaid(dim) => *out = [u64::from(cta.ctaid[d(dim)]); WARP],
            Special::Nctaid(dim) => *out = [u64::from(cta.nctaid[d(dim)]); WARP],
            Special::LaneId => {
                for (l, o) in out.iter_mut().enumerate() {
                    *o = l as u64;
                }
            }
            Special::WarpId => *out = [u64::from(self.warp_id); WARP],
            Special::Clock64 => *out = [self.clock; WARP],
        }
    }

    /// Reads a register (pair when `wide`) of every lane.
    #[inline]
    fn read_reg(&self, r: Reg, wide: bool, out: &mut [u64; WARP]) -> Result<(), String> {
        match r.file {
            RegFile::R => {
                let b = r.idx as usize * WARP;
                let lo = lanes_of(&self.regs, b)
                    .ok_or_else(|| format!("register %r{} is not declared", { r.idx }))?;
                if wide {
                    let hi = lanes_of(&self.regs, b + WARP)
                        .ok_or_else(|| format!("register %r{} is not declared", r.idx + 1))?;
                    for l in 0..WARP {
                        out[l] = u64::from(lo[l]) | (u64::from(hi[l]) << 32);
                    }
                } else {
                    for l in 0..WARP {
                        out[l] = u64::from(lo[l]);
                    }
                }
            }
            RegFile::P => {
                let p = self.preds.get(r.idx as usize).copied().unwrap_or(0);
                for (l, o) in out.iter_mut().enumerate() {
                    *o = u64::from((p >> l) & 1);
                }
            }
            RegFile::Ur => {
                let i = r.idx as usize;
                let lo = *self.uregs.get(i).ok_or("uniform register not declared")?;
                let v = if wide {
                    u64::from(lo) | u64::from(*self.uregs.get(i + 1).unwrap_or(&0)) << 32
                } else {
                    u64::from(lo)
                };
                *out = [v; WARP];
            }
            RegFile::A => return Err("affine registers run only on the DAC simulator".into()),
        }
        Ok(())
    }

    #[inline]
    fn read_src(
        &self,
        s: Src,
        wide: bool,
        cta: &CtaInfo,
        out: &mut [u64; WARP],
    ) -> Result<(), String> {
        match s {
            Src::Reg(r) => self.read_reg(r, wide, out)?,
            Src::Imm(v) => *out = [v; WARP],
            Src::Special(sp) => self.special(sp, cta, out),
        }
        Ok(())
    }

    /// Reads the low 32 bits of a source in every lane (the 32-bit path).
    #[inline]
    fn read32(&self, s: Src, cta: &CtaInfo, out: &mut [u32; WARP]) -> Result<(), String> {
        match s {
            Src::Reg(Reg {
                file: RegFile::R,
                idx,
            }) => {
                *out = *lanes_of(&self.regs, idx as usize * WARP)
                    .ok_or_else(|| format!("register %r{idx} is not declared"))?;
            }
            Src::Imm(v) => *out = [v as u32; WARP],
            Src::Special(Special::Tid(d)) => *out = self.tid[d as usize],
            Src::Special(Special::Ntid(d)) => *out = [cta.ntid[d as usize]; WARP],
            Src::Special(Special::Ctaid(d)) => *out = [cta.ctaid[d as usize]; WARP],
            _ => {
                let mut t = [0u64; WARP];
                self.read_src(s, false, cta, &mut t)?;
                for l in 0..WARP {
                    out[l] = t[l] as u32;
                }
            }
        }
        Ok(())
    }

    /// Reads a wide source as low and high halves (the split 64-bit path).
    #[inline]
    fn read_halves(
        &self,
        s: Src,
        cta: &CtaInfo,
        lo: &mut [u32; WARP],
        hi: &mut [u32; WARP],
    ) -> Result<(), String> {
        match s {
            Src::Reg(Reg {
                file: RegFile::R,
                idx,
            }) => {
                let b = idx as usize * WARP;
                *lo = *lanes_of(&self.regs, b)
                    .ok_or_else(|| format!("register %r{idx} is not declared"))?;
                *hi = *lanes_of(&self.regs, b + WARP)
                    .ok_or_else(|| format!("register %r{} is not declared", idx + 1))?;
            }
            Src::Imm(v) => {
                *lo = [v as u32; WARP];
                *hi = [(v >> 32) as u32; WARP];
            }
            _ => {
                let mut t = [0u64; WARP];
                self.read_src(s, true, cta, &mut t)?;
                for l in 0..WARP {
                    lo[l] = t[l] as u32;
                    hi[l] = (t[l] >> 32) as u32;
                }
            }
        }
        Ok(())
    }

    /// False when `s` is a general register whose pair partner is not declared (the
    /// general path reports that).
    fn pair_declared(&self, s: Src) -> bool {
        match s {
            Src::Reg(Reg {
                file: RegFile::R,
                idx,
            }) => self.regs.len() >= (idx as usize + 2) * WARP,
            _ => true,
        }
    }

    /// Writes a wide value given as halves into `%r{idx}` and the next register.
    #[inline]
    fn write_pair(
        &mut self,
        idx: u32,
        mask: u32,
        lo: &[u32; WARP],
        hi: &[u32; WARP],
    ) -> Result<(), String> {
        if self.regs.len() < (idx as usize + 2) * WARP {
            return Err(format!("register %r{idx} is not declared"));
        }
        self.write32(idx, mask, lo)?;
        self.write32(idx + 1, mask, hi)
    }

    /// Writes 32-bit `vals` into general register `%r{idx}` in the lanes of `mask`.
    #[inline]
    fn write32(&mut self, idx: u32, mask: u32, vals: &[u32; WARP]) -> Result<(), String> {
        let r = lanes_of_mut(&mut self.regs, idx as usize * WARP)
            .ok_or_else(|| format!("register %r{idx} is not declared"))?;
        if mask == u32::MAX {
            *r = *vals;
        } else {
            // A select per lane (vectorizes) rather than a loop over the mask's bits.
            for l in 0..WARP {
                r[l] = if mask >> l & 1 != 0 { vals[l] } else { r[l] };
            }
        }
        Ok(())
    }

    /// Writes `vals` of type `ty` into `dst` in the lanes of `mask`.
    #[inline]
    fn write(&mut self, dst: Reg, ty: Type, mask: u32, vals: &[u64; WARP]) -> Result<(), String> {
        match dst.file {
            RegFile::R => {
                let b = dst.idx as usize * WARP;
                let missing = || format!("register %r{} is not declared", { dst.idx });
                let wide = ty.is_wide();
                let lo = lanes_of_mut(&mut self.regs, b).ok_or_else(missing)?;
                if mask == u32::MAX {
                    for l in 0..WARP {
                        lo[l] = vals[l] as u32;
                    }
                } else {
                    for_lanes(mask, |l| lo[l] = vals[l] as u32);
                }
                if wide {
                    let hi = lanes_of_mut(&mut self.regs, b + WARP).ok_or_else(missing)?;
                    if mask == u32::MAX {
                        for l in 0..WARP {
                            hi[l] = (vals[l] >> 32) as u32;
                        }
                    } else {
                        for_lanes(mask, |l| hi[l] = (vals[l] >> 32) as u32);
                    }
                }
            }
            RegFile::P => {
                let mut bits = 0u32;
                for (l, &v) in vals.iter().enumerate() {
                    bits |= ((v & 1) as u32) << l;
                }
                let p = self
                    .preds
                    .get_mut(dst.idx as usize)
                    .ok_or_else(|| format!("predicate %p{} is not declared", { dst.idx }))?;
                *p = (*p & !mask) | (bits & mask);
            }
            RegFile::Ur => {
                // One value per warp: the first executing lane's.
                if mask != 0 {
                    let v = vals[mask.trailing_zeros() as usize];
                    let i = dst.idx as usize;
                    let n = if ty.is_wide() { 2 } else { 1 };
                    let u = self
                        .uregs
                        .get_mut(i..i + n)
                        .ok_or("uniform register not declared")?;
                    u[0] = v as u32;
                    if n == 2 {
                        u[1] = (v >> 32) as u32;
                    }
                }
            }
            RegFile::A => return Err("affine registers run only on the DAC simulator".into()),
        }
        Ok(())
    }

    fn write_pred_bits(&mut self, dst: Reg, mask: u32, bits: u32) -> Result<(), String> {
        let p = self
            .preds
            .get_mut(dst.idx as usize)
            .filter(|_| dst.file == RegFile::P)
            .ok_or_else(|| format!("predicate %p{} is not declared", { dst.idx }))?;
        *p = (*p & !mask) | (bits & mask);
        Ok(())
    }

    /// Lane addresses of `a` for a `space` access.
    fn addresses(&self, a: Address, kernel: &Kernel, out: &mut [u64; WARP]) -> Result<(), String> {
        match a.base {
            AddrBase::None => *out = [0; WARP],
            AddrBase::Reg(r) => self.read_reg(r, false, out)?,
            AddrBase::RegPair(r) => self.read_reg(r, true, out)?,
            AddrBase::Param(i) => {
                let p = kernel.params.get(i as usize).ok_or("no such parameter")?;
                *out = [u64::from(p.offset); WARP];
            }
            AddrBase::DeqAddr | AddrBase::DeqData => match &self.dac {
                // Popped at the start of the step (`affine::pop_addr`).
                Some(q) => *out = q.addrs,
                None => return Err("a deq in a kernel without an affine stream".into()),
            },
        }
        let off = a.offset as i64 as u64;
        if off != 0 {
            for v in out.iter_mut() {
                *v = v.wrapping_add(off);
            }
        }
        Ok(())
    }
}

/// Zeroes `xs`. An empty slice is skipped: libc's AVX-512 memset stores zero bytes
/// with a masked store to the slice's dangling address, which costs a microcode
/// assist of hundreds of cycles (it was a sixth of a functional saxpy run).
#[inline]
pub(crate) fn zero<T: Copy + Default>(xs: &mut [T]) {
    if !xs.is_empty() {
        xs.fill(T::default());
    }
}

/// The 32 lanes of the register starting at `b`.
#[inline]
fn lanes_of(regs: &[u32], b: usize) -> Option<&[u32; WARP]> {
    regs.get(b..b + WARP)?.try_into().ok()
}

#[inline]
fn lanes_of_mut(regs: &mut [u32], b: usize) -> Option<&mut [u32; WARP]> {
    regs.get_mut(b..b + WARP)?.try_into().ok()
}

/// Where a fault happened, to build a [`GpuFault`].
struct At<'a> {
    kernel: &'a str,
    pc: u32,
    cta: [u32; 3],
    warp: u32,
}

impl At<'_> {
    fn fault(
        &self,
        kind: FaultKind,
        lane: Option<u32>,
        address: Option<u64>,
        msg: String,
    ) -> GpuFault {
        GpuFault {
            kind,
            kernel: self.kernel.to_string(),
            pc: self.pc as usize,
            cta: (self.cta[0], self.cta[1], self.cta[2]),
            warp: self.warp,
            lane,
            address,
            message: msg,
        }
    }
}

macro_rules! lanes2 {
    ($o:ident, $a:ident, $b:ident, |$x:ident, $y:ident| $e:expr) => {
        for l in 0..WARP {
            let $x = $a[l];
            let $y = $b[l];
            $o[l] = $e;
        }
    };
}
macro_rules! lanes1 {
    ($o:ident, $a:ident, |$x:ident| $e:expr) => {
        for l in 0..WARP {
            let $x = $a[l];
            $o[l] = $e;
        }
    };
}

#[inline]
fn f32v(x: u64) -> f32 {
    f32::from_bits(x as u32)
}
#[inline]
fn f64v(x: u64) -> f64 {
    f64::from_bits(x)
}
#[inline]
fn of32(x: f32) -> u64 {
    u64::from(x.to_bits())
}
#[inline]
fn of64(x: f64) -> u64 {
    x.to_bits()
}
/// `op(x, y)` on `f32`, except that a NaN operand gives the first NaN operand, quieted
/// (the x86 rule the interpreter defines for `fadd`/`fsub`/`fmul`/`fdiv`): the host
/// leaves the payload of a NaN result unspecified and the optimizer may commute the
/// operands, so without this the payload would depend on how the simulator was built.
#[inline(always)]
pub(crate) fn arith32(x: f32, y: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    if x.is_nan() || y.is_nan() {
        let nan = if x.is_nan() { x } else { y };
        return f32::from_bits(nan.to_bits() | 0x0040_0000);
    }
    op(x, y)
}

/// [`arith32`] on `f64`.
#[inline(always)]
pub(crate) fn arith64(x: f64, y: f64, op: impl Fn(f64, f64) -> f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        let nan = if x.is_nan() { x } else { y };
        return f64::from_bits(nan.to_bits() | 0x0008_0000_0000_0000);
    }
    op(x, y)
}

/// Whether `min.f` of `x` and `y` is `x`: IEEE minNum with `-0.0` below `+0.0`, so
/// the result never depends on the operand order except that of two NaNs, where it is
/// the second (the interpreter's `fmin`). `f32` operands are compared widened, which
/// keeps their order, signs and NaN-ness.
#[inline]
pub(crate) fn fmin_takes_first(x: f64, y: f64) -> bool {
    !x.is_nan() && (y.is_nan() || x < y || (x == y && x.is_sign_negative()))
}

/// Whether `max.f` of `x` and `y` is `x`: IEEE maxNum with `+0.0` above `-0.0` (the
/// interpreter's `fmax`).
#[inline]
pub(crate) fn fmax_takes_first(x: f64, y: f64) -> bool {
    !x.is_nan() && (y.is_nan() || x > y || (x == y && !x.is_sign_negative()))
}

/// `x` if `first`, else `y`.
#[inline]
pub(crate) fn pick<T>(first: bool, x: T, y: T) -> T {
    if first {
        x
    } else {
        y
    }
}

#[inline]
fn s32(x: u64) -> i32 {
    x as u32 as i32
}

/// The lane-wise binary operation; `Err` for a combination the ISA does not define.
pub(crate) fn bin(
    op: BinOp,
    ty: Type,
    a: &[u64; WARP],
    b: &[u64; WARP],
    o: &mut [u64; WARP],
) -> Result<(), ()> {
    use Type::*;
    match (op, ty) {
        (BinOp::Add, U32 | S32) => {
            lanes2!(o, a, b, |x, y| u64::from((x as u32).wrapping_add(y as u32)))
        }
        (BinOp::Add, U64 | S64) => lanes2!(o, a, b, |x, y| x.wrapping_add(y)),
        (BinOp::Add, F32) => lanes2!(
            o,
            a,
            b,
            |x, y| of32(arith32(f32v(x), f32v(y), |x, y| x + y))
        ),
        (BinOp::Add, F64) => lanes2!(
            o,
            a,
            b,
            |x, y| of64(arith64(f64v(x), f64v(y), |x, y| x + y))
        ),
        (BinOp::Sub, U32 | S32) => {
            lanes2!(o, a, b, |x, y| u64::from((x as u32).wrapping_sub(y as u32)))
        }
        (BinOp::Sub, U64 | S64) => lanes2!(o, a, b, |x, y| x.wrapping_sub(y)),
        (BinOp::Sub, F32) => lanes2!(
            o,
            a,
            b,
            |x, y| of32(arith32(f32v(x), f32v(y), |x, y| x - y))
        ),
        (BinOp::Sub, F64) => lanes2!(
            o,
            a,
            b,
            |x, y| of64(arith64(f64v(x), f64v(y), |x, y| x - y))
        ),
        (BinOp::Mul, U32 | S32) => {
            lanes2!(o, a, b, |x, y| u64::from((x as u32).wrapping_mul(y as u32)))
        }
        (BinOp::Mul, U64 | S64) => lanes2!(o, a, b, |x, y| x.wrapping_mul(y)),
        (BinOp::Mul, F32) => lanes2!(
            o,
            a,
            b,
            |x, y| of32(arith32(f32v(x), f32v(y), |x, y| x * y))
        ),
        (BinOp::Mul, F64) => lanes2!(
            o,
            a,
            b,
            |x, y| of64(arith64(f64v(x), f64v(y), |x, y| x * y))
        ),
        (BinOp::MulHi, U32) => lanes2!(o, a, b, |x, y| ((x & 0xffff_ffff) * (y & 0xffff_ffff))
            >> 32),
        (BinOp::MulHi, S32) => lanes2!(o, a, b, |x, y| u64::from(
            ((i64::from(s32(x)) * i64::from(s32(y))) >> 32) as u32
        )),
        (BinOp::MulHi, U64) => lanes2!(o, a, b, |x, y| ((u128::from(x) * u128::from(y)) >> 64)
            as u64),
        (BinOp::MulHi, S64) => lanes2!(o, a, b, |x, y| ((i128::from(x as i64)
            * i128::from(y as i64))
            >> 64) as u64),
        (BinOp::Div, U32) => lanes2!(o, a, b, |x, y| u64::from(
            (x as u32).checked_div(y as u32).unwrap_or(u32::MAX)
        )),
        (BinOp::Div, S32) => lanes2!(o, a, b, |x, y| u64::from(match s32(y) {
            0 => u32::MAX,
            d => s32(x).wrapping_div(d) as u32,
        })),
        (BinOp::Div, U64) => lanes2!(o, a, b, |x, y| x.checked_div(y).unwrap_or(u64::MAX)),
        (BinOp::Div, S64) => lanes2!(o, a, b, |x, y| match y as i64 {
            0 => u64::MAX,
            d => (x as i64).wrapping_div(d) as u64,
        }),
        (BinOp::Div, F32) => lanes2!(
            o,
            a,
            b,
            |x, y| of32(arith32(f32v(x), f32v(y), |x, y| x / y))
        ),
        (BinOp::Div, F64) => lanes2!(
            o,
            a,
            b,
            |x, y| of64(arith64(f64v(x), f64v(y), |x, y| x / y))
        ),
        (BinOp::Rem, U32) => lanes2!(o, a, b, |x, y| u64::from(
            (x as u32).checked_rem(y as u32).unwrap_or(x as u32)
        )),
        (BinOp::Rem, S32) => lanes2!(o, a, b, |x, y| u64::from(match s32(y) {
            0 => x as u32,
            d => s32(x).wrapping_rem(d) as u32,
        })),
        (BinOp::Rem, U64) => lanes2!(o, a, b, |x, y| x.checked_rem(y).unwrap_or(x)),
        (BinOp::Rem, S64) => lanes2!(o, a, b, |x, y| match y as i64 {
            0 => x,
            d => (x as i64).wrapping_rem(d) as u64,
        }),
        (BinOp::Min, U32) => lanes2!(o, a, b, |x, y| (x as u32).min(y as u32).into()),
        (BinOp::Min, S32) => lanes2!(o, a, b, |x, y| u64::from(s32(x).min(s32(y)) as u32)),
        (BinOp::Min, U64) => lanes2!(o, a, b, |x, y| x.min(y)),
        (BinOp::Min, S64) => lanes2!(o, a, b, |x, y| (x as i64).min(y as i64) as u64),
        (BinOp::Min, F32) => lanes2!(o, a, b, |x, y| pick(
            fmin_takes_first(f32v(x).into(), f32v(y).into()),
            x,
            y
        )),
        (BinOp::Min, F64) => lanes2!(o, a, b, |x, y| pick(
            fmin_takes_first(f64v(x), f64v(y)),
            x,
            y
        )),
        (BinOp::Max, U32) => lanes2!(o, a, b, |x, y| (x as u32).max(y as u32).into()),
        (BinOp::Max, S32) => lanes2!(o, a, b, |x, y| u64::from(s32(x).max(s32(y)) as u32)),
        (BinOp::Max, U64) => lanes2!(o, a, b, |x, y| x.max(y)),
        (BinOp::Max, S64) => lanes2!(o, a, b, |x, y| (x as i64).max(y as i64) as u64),
        (BinOp::Max, F32) => lanes2!(o, a, b, |x, y| pick(
            fmax_takes_first(f32v(x).into(), f32v(y).into()),
            x,
            y
        )),
        (BinOp::Max, F64) => lanes2!(o, a, b, |x, y| pick(
            fmax_takes_first(f64v(x), f64v(y)),
            x,
            y
        )),
        (BinOp::And, Pred | B32 | B64) => lanes2!(o, a, b, |x, y| x & y),
        (BinOp::Or, Pred | B32 | B64) => lanes2!(o, a, b, |x, y| x | y),
        (BinOp::Xor, Pred | B32 | B64) => lanes2!(o, a, b, |x, y| x ^ y),
        (BinOp::Shl, B32) => lanes2!(o, a, b, |x, y| if (y as u32) >= 32 {
            0
        } else {
            u64::from((x as u32) << (y as u32))
        }),
        (BinOp::Shl, B64) => lanes2!(o, a, b, |x, y| if (y as u32) >= 64 {
            0
        } else {
            x << (y as u32)
        }),
        (BinOp::Shr, B32 | U32) => lanes2!(o, a, b, |x, y| if (y as u32) >= 32 {
            0
        } else {
            u64::from((x as u32) >> (y as u32))
        }),
        (BinOp::Shr, S32) => lanes2!(o, a, b, |x, y| u64::from(
            (s32(x) >> (y as u32).min(31)) as u32
        )),
        (BinOp::Shr, B64 | U64) => lanes2!(o, a, b, |x, y| if (y as u32) >= 64 {
            0
        } else {
            x >> (y as u32)
        }),
        (BinOp::Shr, S64) => lanes2!(o, a, b, |x, y| ((x as i64) >> (y as u32).min(63)) as u64),
        _ => return Err(()),
    }
    Ok(())
}

fn unary(op: UnOp, ty: Type, a: &[u64; WARP], o: &mut [u64; WARP]) -> Result<(), ()> {
    use Type::*;
    match (op, ty) {
        (UnOp::Mov, _) => *o = *a,
        (UnOp::Neg, S32) => lanes1!(o, a, |x| u64::from((x as u32).wrapping_neg())),
        (UnOp::Neg, S64) => lanes1!(o, a, |x| x.wrapping_neg()),
        (UnOp::Neg, F32) => lanes1!(o, a, |x| (x ^ 0x8000_0000) & 0xffff_ffff),
        (UnOp::Neg, F64) => lanes1!(o, a, |x| x ^ (1 << 63)),
        (UnOp::Not, Pred) => lanes1!(o, a, |x| (x & 1) ^ 1),
        (UnOp::Not, B32) => lanes1!(o, a, |x| !x & 0xffff_ffff),
        (UnOp::Not, B64) => lanes1!(o, a, |x| !x),
        (UnOp::Abs, S32) => lanes1!(o, a, |x| u64::from(s32(x).wrapping_abs() as u32)),
        (UnOp::Abs, S64) => lanes1!(o, a, |x| (x as i64).wrapping_abs() as u64),
        (UnOp::Abs, F32) => lanes1!(o, a, |x| x & 0x7fff_ffff),
        (UnOp::Abs, F64) => lanes1!(o, a, |x| x & !(1 << 63)),
        (UnOp::Sqrt, F32) => lanes1!(o, a, |x| of32(f32v(x).sqrt())),
        (UnOp::Sqrt, F64) => lanes1!(o, a, |x| of64(f64v(x).sqrt())),
        (UnOp::Popc, B32) => lanes1!(o, a, |x| u64::from((x as u32).count_ones())),
        (UnOp::Popc, B64) => lanes1!(o, a, |x| u64::from(x.count_ones())),
        (UnOp::Clz, B32) => lanes1!(o, a, |x| u64::from((x as u32).leading_zeros())),
        (UnOp::Clz, B64) => lanes1!(o, a, |x| u64::from(x.leading_zeros())),
        _ => return Err(()),
    }
    Ok(())
}

/// The register value of the low `ty` bits of `x`, extended by `ty`'s signedness to 64
/// bits (the canonical integer value of a narrow or 32-bit type).
#[inline]
fn int_value(x: u64, ty: Type) -> u64 {
    let bits = ty.bits();
    if bits >= 64 {
        return x;
    }
    let sh = 64 - bits;
    if ty.is_signed() {
        (((x << sh) as i64) >> sh) as u64
    } else {
        (x << sh) >> sh
    }
}

/// A narrow or 32-bit integer result as held in registers (extended to 32 bits).
#[inline]
fn hold(x: u64, ty: Type) -> u64 {
    if ty.is_wide() {
        x
    } else {
        int_value(x, ty) & 0xffff_ffff
    }
}

fn round_integral_f64(x: f64, r: Round) -> f64 {
    match r {
        Round::Rni | Round::Rn => x.round_ties_even(),
        Round::Rzi | Round::Rz => x.trunc(),
        Round::Rmi | Round::Rm => x.floor(),
        Round::Rpi | Round::Rp => x.ceil(),
    }
}

fn round_integral_f32(x: f32, r: Round) -> f32 {
    match r {
        Round::Rni | Round::Rn => x.round_ties_even(),
        Round::Rzi | Round::Rz => x.trunc(),
        Round::Rmi | Round::Rm => x.floor(),
        Round::Rpi | Round::Rp => x.ceil(),
    }
}

/// Float to integer: rounded by `r` (toward zero by default), saturated to `dty`,
/// NaN to 0.
fn f_to_int(v: f64, r: Round, dty: Type) -> u64 {
    if v.is_nan() {
        return 0;
    }
    let v = round_integral_f64(v, r);
    let bits = dty.bits();
    let out = if dty.is_signed() {
        let lo = -(2f64.powi(bits as i32 - 1));
        let hi = 2f64.powi(bits as i32 - 1) - 1.0;
        (v.clamp(lo, hi) as i64) as u64
    } else {
        let hi = if bits == 64 {
            u64::MAX as f64
        } else {
            2f64.powi(bits as i32) - 1.0
        };
        v.clamp(0.0, hi) as u64
    };
    hold(out, dty)
}

/// Rounds `n` (exact integer) to f32 or f64 in direction `r`.
fn int_to_float(n: i128, r: Round, dty: Type) -> u64 {
    let dir = |cmp: std::cmp::Ordering, up: bool| -> bool {
        // true when the rounded value must move one step in the `up` direction
        use std::cmp::Ordering::*;
        matches!((cmp, up), (Less, true) | (Greater, false))
    };
    if dty == Type::F32 {
        let mut f = n as f32;
        let cmp = (f as i128).cmp(&n);
        match r {
            Round::Rp | Round::Rpi if dir(cmp, true) => f = f.next_up(),
            Round::Rm | Round::Rmi if dir(cmp, false) => f = f.next_down(),
            Round::Rz | Round::Rzi if (n >= 0 && cmp.is_gt()) || (n < 0 && cmp.is_lt()) => {
                f = if n >= 0 { f.next_down() } else { f.next_up() }
            }
            _ => {}
        }
        of32(f)
    } else {
        let mut f = n as f64;
        let cmp = (f as i128).cmp(&n);
        match r {
            Round::Rp | Round::Rpi if dir(cmp, true) => f = f.next_up(),
            Round::Rm | Round::Rmi if dir(cmp, false) => f = f.next_down(),
            Round::Rz | Round::Rzi if (n >= 0 && cmp.is_gt()) || (n < 0 && cmp.is_lt()) => {
                f = if n >= 0 { f.next_down() } else { f.next_up() }
            }
            _ => {}
        }
        of64(f)
    }
}

/// `cvt` of one value.
pub(crate) fn cvt(dty: Type, sty: Type, rnd: Option<Round>, x: u64) -> u64 {
    match (sty.is_float(), dty.is_float()) {
        (false, false) => hold(int_value(x, sty), dty),
        (false, true) => {
            let n = if sty.is_signed() {
                i128::from(int_value(x, sty) as i64)
            } else {
                i128::from(int_value(x, sty))
            };
            int_to_float(n, rnd.unwrap_or(Round::Rn), dty)
        }
        (true, false) => {
            let v = if sty == Type::F32 {
                f64::from(f32v(x))
            } else {
                f64v(x)
            };
            f_to_int(v, rnd.unwrap_or(Round::Rzi), dty)
        }
        (true, true) => match (sty, dty) {
            (Type::F32, Type::F32) => match rnd {
                Some(r @ (Round::Rni | Round::Rzi | Round::Rmi | Round::Rpi)) => {
                    of32(round_integral_f32(f32v(x), r))
                }
                _ => x & 0xffff_ffff,
            },
            (Type::F64, Type::F64) => match rnd {
                Some(r @ (Round::Rni | Round::Rzi | Round::Rmi | Round::Rpi)) => {
                    of64(round_integral_f64(f64v(x), r))
                }
                _ => x,
            },
            (Type::F32, _) => {
                let v = f64::from(f32v(x));
                match rnd {
                    Some(r @ (Round::Rni | Round::Rzi | Round::Rmi | Round::Rpi)) => {
                        of64(round_integral_f64(v, r))
                    }
                    _ => of64(v),
                }
            }
            _ => {
                let v = f64v(x);
                let r = rnd.unwrap_or(Round::Rn);
                if matches!(r, Round::Rni | Round::Rzi | Round::Rmi | Round::Rpi) {
                    return of32(round_integral_f64(v, r) as f32);
                }
                let mut f = v as f32;
                if f.is_finite() && !v.is_nan() {
                    let fd = f64::from(f);
                    match r {
                        Round::Rp if fd < v => f = f.next_up(),
                        Round::Rm if fd > v => f = f.next_down(),
                        Round::Rz if fd.abs() > v.abs() => {
                            f = if v > 0.0 { f.next_down() } else { f.next_up() }
                        }
                        _ => {}
                    }
                } else if f.is_infinite() && v.is_finite() {
                    // Overflow: toward zero (or away from the infinity) gives MAX.
                    let to_max = match r {
                        Round::Rz => true,
                        Round::Rp => v < 0.0,
                        Round::Rm => v > 0.0,
                        _ => false,
                    };
                    if to_max {
                        f = f32::MAX.copysign(f);
                    }
                }
                of32(f)
            }
        },
    }
}

pub(crate) fn compare(cmp: Cmp, ty: Type, x: u64, y: u64) -> bool {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match ty {
        Type::F32 => f32v(x).partial_cmp(&f32v(y)),
        Type::F64 => f64v(x).partial_cmp(&f64v(y)),
        t if t.is_signed() => Some((int_value(x, t) as i64).cmp(&(int_value(y, t) as i64))),
        t => Some(int_value(x, t).cmp(&int_value(y, t))),
    };
    match (cmp, ord) {
        (Cmp::Num, o) => o.is_some(),
        (Cmp::Nan, o) => o.is_none(),
        (Cmp::Eq, Some(o)) | (Cmp::Equ, Some(o)) => o.is_eq(),
        (Cmp::Ne, Some(o)) | (Cmp::Neu, Some(o)) => o.is_ne(),
        (Cmp::Lt, Some(o)) | (Cmp::Ltu, Some(o)) => o.is_lt(),
        (Cmp::Le, Some(o)) | (Cmp::Leu, Some(o)) => o.is_le(),
        (Cmp::Gt, Some(o)) | (Cmp::Gtu, Some(o)) => o.is_gt(),
        (Cmp::Ge, Some(o)) | (Cmp::Geu, Some(o)) => o.is_ge(),
        (Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu, None) => true,
        (_, None) => false,
    }
}

/// The new memory value of an atomic `op` on `old` with operands `a`, `b`.
fn atom_value(op: AtomOp, ty: Type, old: u64, a: u64, b: u64) -> u64 {
    let w = |v: u64| if ty.is_wide() { v } else { v & 0xffff_ffff };
    match op {
        AtomOp::Add => match ty {
            Type::F32 => of32(f32v(old) + f32v(a)),
            Type::F64 => of64(f64v(old) + f64v(a)),
            _ => w(old.wrapping_add(a)),
        },
        AtomOp::Min | AtomOp::Max => {
            let take_a = match ty {
                Type::F32 => {
                    let m = if op == AtomOp::Min {
                        f32v(old).min(f32v(a))
                    } else {
                        f32v(old).max(f32v(a))
                    };
                    return of32(m);
                }
                Type::F64 => {
                    let m = if op == AtomOp::Min {
                        f64v(old).min(f64v(a))
                    } else {
                        f64v(old).max(f64v(a))
                    };
                    return of64(m);
                }
                t => {
                    let lt = if t.is_signed() {
                        (int_value(a, t) as i64) < (int_value(old, t) as i64)
                    } else {
                        int_value(a, t) < int_value(old, t)
                    };
                    (op == AtomOp::Min) == lt && int_value(a, t) != int_value(old, t)
                }
            };
            if take_a {
                w(a)
            } else {
                old
            }
        }
        AtomOp::And => old & a,
        AtomOp::Or => old | a,
        AtomOp::Xor => old ^ a,
        AtomOp::Exch => w(a),
        AtomOp::Cas => {
            if w(old) == w(a) {
                w(b)
            } else {
                old
            }
        }
    }
}

#[inline]
fn load_le(bytes: &[u8]) -> u64 {
    match bytes.len() {
        4 => u64::from(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
        8 => u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8])),
        2 => u64::from(u16::from_le_bytes([bytes[0], bytes[1]])),
        1 => u64::from(bytes[0]),
        _ => 0,
    }
}

#[inline]
fn store_le(bytes: &mut [u8], v: u64) {
    match bytes.len() {
        4 => bytes.copy_from_slice(&(v as u32).to_le_bytes()),
        8 => bytes.copy_from_slice(&v.to_le_bytes()),
        2 => bytes.copy_from_slice(&(v as u16).to_le_bytes()),
        1 => bytes[0] = v as u8,
        _ => {}
    }
}

/// Executes the next instruction of warp `w` of a block. Fills `bufs.trace` for
/// memory instructions (its `valid` says whether it did).
pub fn step(
    env: &mut Env<'_>,
    warp: &mut WarpState,
    cta: &mut CtaInfo,
    bufs: &mut StepBuffers,
) -> Result<Flow, GpuFault> {
    let StepBuffers {
        trace,
        lanes,
        l32,
        no_addrs,
    } = bufs;
    let [a32, b32, c32, o32, ah, oh] = l32;
    let no_addrs = *no_addrs;
    let [a, b, c, o] = lanes;
    trace.valid = false;
    let Some(&top) = warp.stack.last() else {
        return Ok(Flow::Done);
    };
    let program = env.program;
    let kernel = &program.kernels[top.code as usize];
    let at = At {
        kernel: &kernel.name,
        pc: top.pc,
        cta: cta.ctaid,
        warp: warp.warp_id,
    };
    let code = &env.codes[top.code as usize];
    let implicit_end = if code.is_func { Op::Ret } else { Op::Exit };
    let inst = kernel
        .insts
        .get(top.pc as usize)
        .copied()
        .unwrap_or(Inst::new(implicit_end));
    let active = top.mask;
    let exec = active & warp.guard_mask(inst.guard);
    let err = |m: String| at.fault(FaultKind::Invalid, None, None, m);
    if inst.uni {
        // Uniform datapath: with equal operands the vector execution below is the
        // once-per-warp result broadcast to the executing lanes.
        super::uniform::check_operands(warp, &inst, exec)
            .map_err(|(l, m)| at.fault(FaultKind::NonUniformOperand, Some(l), None, m))?;
    }
    if warp.dac.is_some() {
        if let Some((data, space, bytes)) = super::affine::deq_use(&inst) {
            super::affine::pop_addr(warp, data, space, bytes)
                .map_err(|m| at.fault(FaultKind::DacQueue, None, None, m))?;
        }
    }
    let mut next_pc = top.pc + 1;
    match inst.op {
        Op::Bin {
            op,
            ty,
            dst,
            a: sa,
            b: sb,
        } if dst.file == RegFile::R && is32(ty) && {
            warp.read32(sa, cta, a32).map_err(err)?;
            warp.read32(sb, cta, b32).map_err(err)?;
            bin32(op, ty, a32, b32, o32)
        } =>
        {
            let idx = dst.idx;
            warp.write32(idx, exec, o32).map_err(err)?;
        }
        Op::Bin {
            op,
            ty,
            dst,
            a: sa,
            b: sb,
        } if dst.file == RegFile::R && is64(ty) && {
            warp.read_halves(sa, cta, a32, ah).map_err(err)?;
            if op.is_shift() {
                warp.read32(sb, cta, b32).map_err(err)?;
            } else {
                warp.read_halves(sb, cta, b32, c32).map_err(err)?;
            }
            let (a, b) = (Halves { lo: a32, hi: ah }, Halves { lo: b32, hi: c32 });
            bin64(op, ty, a, b, o32, oh)
        } =>
        {
            let idx = dst.idx;
            warp.write_pair(idx, exec, o32, oh).map_err(err)?;
        }
        Op::Bin {
            op,
            ty,
            dst,
            a: sa,
            b: sb,
        } => {
            warp.read_src(sa, ty.is_wide(), cta, a).map_err(err)?;
            let bw = ty.is_wide() && !op.is_shift();
            warp.read_src(sb, bw, cta, b).map_err(err)?;
            bin(op, ty, a, b, o)
                .map_err(|_| err(format!("{}.{} is not defined", op.name(), ty.name())))?;
            warp.write(dst, ty, exec, o).map_err(err)?;
        }
        Op::Un {
            op: UnOp::Mov,
            ty,
            dst: Reg {
                file: RegFile::R,
                idx,
            },
            a: sa,
        } => {
            if ty.is_wide() {
                warp.read_halves(sa, cta, o32, oh).map_err(err)?;
                warp.write_pair(idx, exec, o32, oh).map_err(err)?;
            } else {
                warp.read32(sa, cta, o32).map_err(err)?;
                warp.write32(idx, exec, o32).map_err(err)?;
            }
        }
        Op::Un { op, ty, dst, a: sa } => {
            warp.read_src(sa, ty.is_wide(), cta, a).map_err(err)?;
            unary(op, ty, a, o)
                .map_err(|_| err(format!("{}.{} is not defined", op.name(), ty.name())))?;
            warp.write(dst, ty, exec, o).map_err(err)?;
        }
        Op::Mad {
            ty,
            dst,
            a: sa,
            b: sb,
            c: sc,
        } if dst.file == RegFile::R && !ty.is_wide() => {
            let idx = dst.idx;
            warp.read32(sa, cta, a32).map_err(err)?;
            warp.read32(sb, cta, b32).map_err(err)?;
            warp.read32(sc, cta, c32).map_err(err)?;
            mad32(ty, a32, b32, c32, o32);
            warp.write32(idx, exec, o32).map_err(err)?;
        }
        Op::Mad {
            ty,
            dst,
            a: sa,
            b: sb,
            c: sc,
        } => {
            let wide = ty.is_wide();
            warp.read_src(sa, wide, cta, a).map_err(err)?;
            warp.read_src(sb, wide, cta, b).map_err(err)?;
            warp.read_src(sc, wide, cta, c).map_err(err)?;
            match ty {
                Type::F32 => {
                    for l in 0..WARP {
                        o[l] = of32(f32v(a[l]).mul_add(f32v(b[l]), f32v(c[l])));
                    }
                }
                Type::F64 => {
                    for l in 0..WARP {
                        o[l] = of64(f64v(a[l]).mul_add(f64v(b[l]), f64v(c[l])));
                    }
                }
                t if t.is_wide() => {
                    for l in 0..WARP {
                        o[l] = a[l].wrapping_mul(b[l]).wrapping_add(c[l]);
                    }
                }
                _ => {
                    for l in 0..WARP {
                        o[l] = u64::from(
                            (a[l] as u32)
                                .wrapping_mul(b[l] as u32)
                                .wrapping_add(c[l] as u32),
                        );
                    }
                }
            }
            warp.write(dst, ty, exec, o).map_err(err)?;
        }
        Op::Cvt {
            dty,
            sty,
            dst,
            a: sa,
            ..
        } if dst.file == RegFile::R && (!sty.is_wide() || warp.pair_declared(sa)) && {
            warp.read32(sa, cta, a32).map_err(err)?;
            cvt_int(dty, sty, a32, o32, oh)
        } =>
        {
            let idx = dst.idx;
            if dty.is_wide() {
                warp.write_pair(idx, exec, o32, oh).map_err(err)?;
            } else {
                warp.write32(idx, exec, o32).map_err(err)?;
            }
        }
        Op::Cvt {
            rnd,
            dty,
            sty,
            dst,
            a: sa,
        } => {
            warp.read_src(sa, sty.is_wide(), cta, a).map_err(err)?;
            for l in 0..WARP {
                o[l] = cvt(dty, sty, rnd, a[l]);
            }
            warp.write(dst, dty, exec, o).map_err(err)?;
        }
        Op::Setp {
            cmp,
            ty,
            dst,
            a: sa,
            b: sb,
        } if is32(ty) => {
            warp.read32(sa, cta, a32).map_err(err)?;
            warp.read32(sb, cta, b32).map_err(err)?;
            let bits = setp32(cmp, ty, a32, b32);
            warp.write_pred_bits(dst, exec, bits).map_err(err)?;
        }
        Op::Setp {
            cmp,
            ty,
            dst,
            a: sa,
            b: sb,
        } => {
            warp.read_src(sa, ty.is_wide(), cta, a).map_err(err)?;
            warp.read_src(sb, ty.is_wide(), cta, b).map_err(err)?;
            let mut bits = 0u32;
            for l in 0..WARP {
                bits |= u32::from(compare(cmp, ty, a[l], b[l])) << l;
            }
            warp.write_pred_bits(dst, exec, bits).map_err(err)?;
        }
        Op::Selp {
            ty,
            dst,
            a: sa,
            b: sb,
            p,
        } => {
            warp.read_src(sa, ty.is_wide(), cta, a).map_err(err)?;
            warp.read_src(sb, ty.is_wide(), cta, b).map_err(err)?;
            let pm = warp.preds.get(p.idx as usize).copied().unwrap_or(0);
            for l in 0..WARP {
                o[l] = if pm >> l & 1 != 0 { a[l] } else { b[l] };
            }
            warp.write(dst, ty, exec, o).map_err(err)?;
        }
        Op::Ld {
            space: Space::Param,
            ty,
            dst,
            addr:
                addr @ Address {
                    base: AddrBase::Param(_) | AddrBase::None,
                    ..
                },
        } => {
            // A uniform parameter read: one access for the warp.
            warp.addresses(addr, kernel, a).map_err(err)?;
            let p = env.params;
            let (at_, n) = (a[0], ty.bytes() as usize);
            let bytes = usize::try_from(at_)
                .ok()
                .and_then(|s| p.get(s..s.checked_add(n)?))
                .filter(|_| at_ % n as u64 == 0);
            if exec != 0 {
                let Some(bytes) = bytes else {
                    let lane = Some(exec.trailing_zeros());
                    let kind = if at_ % n as u64 != 0 {
                        FaultKind::Misaligned
                    } else {
                        FaultKind::OutOfBounds
                    };
                    let msg = format!(
                        "{n}-byte .param access (parameter block of {} bytes)",
                        p.len()
                    );
                    return Err(at.fault(kind, lane, Some(at_), msg));
                };
                let v = load_le(bytes);
                let v = if ty.is_float() { v } else { hold(v, ty) };
                match dst.file {
                    RegFile::R if ty.is_wide() => {
                        let (lo, hi) = ([v as u32; WARP], [(v >> 32) as u32; WARP]);
                        warp.write_pair(dst.idx, exec, &lo, &hi).map_err(err)?;
                    }
                    RegFile::R => warp
                        .write32(dst.idx, exec, &[v as u32; WARP])
                        .map_err(err)?,
                    _ => {
                        *o = [v; WARP];
                        warp.write(dst, ty, exec, o).map_err(err)?;
                    }
                }
            }
        }
        Op::Ld {
            space,
            ty,
            dst,
            addr,
        } => {
            warp.addresses(addr, kernel, a).map_err(err)?;
            if let Some((base, mem, lin)) = span(env, cta, space, exec, a, ty.bytes(), true) {
                let n = ty.bytes() as usize;
                if n == 4 && dst.file == RegFile::R {
                    // The 32-bit path: a 4-byte value needs no extension.
                    if lin {
                        // Coalesced: lane l reads the l-th word.
                        for (o, w) in o32.iter_mut().zip(mem.chunks_exact(4)) {
                            *o = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                        }
                    } else {
                        for_lanes(exec, |l| {
                            let off = (a[l] - base) as usize;
                            o32[l] = u32::from_le_bytes(word(mem, off));
                        });
                    }
                    warp.write32(dst.idx, exec, o32).map_err(err)?;
                    record(trace, space, false, false, 4, exec, a, no_addrs);
                    advance(warp, next_pc);
                    return Ok(flow_after(warp));
                }
                for_lanes(exec, |l| {
                    let off = (a[l] - base) as usize;
                    o[l] = load_le(&mem[off..off + n]);
                });
            } else {
                mem_access(
                    env,
                    warp,
                    cta,
                    &at,
                    space,
                    ty,
                    exec,
                    a,
                    |m, _| {
                        let v = load_le(m);
                        Ok((None, v))
                    },
                    o,
                )?;
            }
            if ty.bits() < 32 {
                // Only narrow integers need extending to the register's 32 bits.
                for v in o.iter_mut() {
                    *v = hold(*v, ty);
                }
            }
            warp.write(dst, ty, exec, o).map_err(err)?;
            record(trace, space, false, false, ty.bytes(), exec, a, no_addrs);
        }
        Op::St {
            space,
            ty,
            addr,
            a: sa,
        } => {
            if space == Space::Param {
                return Err(err("the parameter space is read-only".into()));
            }
            warp.addresses(addr, kernel, a).map_err(err)?;
            warp.read_src(sa, ty.is_wide(), cta, b).map_err(err)?;
            if let Some((base, mem, lin)) = span(env, cta, space, exec, a, ty.bytes(), false) {
                let n = ty.bytes() as usize;
                if n == 4 && lin {
                    for (w, v) in mem.chunks_exact_mut(4).zip(b.iter()) {
                        w.copy_from_slice(&(*v as u32).to_le_bytes());
                    }
                } else if n == 4 {
                    for_lanes(exec, |l| {
                        let off = (a[l] - base) as usize;
                        if let Some(m) = mem.get_mut(off..off + 4) {
                            m.copy_from_slice(&(b[l] as u32).to_le_bytes());
                        }
                    });
                } else {
                    for_lanes(exec, |l| {
                        let off = (a[l] - base) as usize;
                        store_le(&mut mem[off..off + n], b[l]);
                    });
                }
                if space == Space::Global && env.global.logging() {
                    if lin {
                        env.global.note_write(base, WARP * n);
                    } else {
                        for_lanes(exec, |l| env.global.note_write(a[l], n));
                    }
                }
            } else {
                mem_access(
                    env,
                    warp,
                    cta,
                    &at,
                    space,
                    ty,
                    exec,
                    a,
                    |_, l| Ok((Some(b[l]), 0)),
                    o,
                )?;
            }
            record(trace, space, true, false, ty.bytes(), exec, a, no_addrs);
        }
        Op::Atom {
            space,
            op,
            ty,
            dst,
            addr,
            a: sa,
            b: sb,
        } => {
            if !matches!(space, Space::Global | Space::Shared) {
                return Err(err("atomics act on .global and .shared only".into()));
            }
            warp.addresses(addr, kernel, a).map_err(err)?;
            warp.read_src(sa, ty.is_wide(), cta, b).map_err(err)?;
            if let Some(sb) = sb {
                warp.read_src(sb, ty.is_wide(), cta, c).map_err(err)?;
            }
            mem_access(
                env,
                warp,
                cta,
                &at,
                space,
                ty,
                exec,
                a,
                |m, l| {
                    let old = load_le(m);
                    Ok((Some(atom_value(op, ty, old, b[l], c[l])), old))
                },
                o,
            )?;
            warp.write(dst, ty, exec, o).map_err(err)?;
            record(trace, space, true, true, ty.bytes(), exec, a, no_addrs);
        }
        Op::Bra { uni, target } => {
            let taken = exec;
            if taken == active || inst.guard.is_none() {
                next_pc = target;
            } else if taken != 0 {
                if uni {
                    return Err(at.fault(
                        FaultKind::DivergentUniformBranch,
                        Some((taken ^ active).trailing_zeros()),
                        None,
                        format!("bra.uni with disagreeing lanes (taken {taken:#010x} of {active:#010x})"),
                    ));
                }
                let rpc = code.ipdom[top.pc as usize];
                if top.rpc == rpc {
                    // Same reconvergence point as the current entry (a loop's
                    // divergent exit): the paths replace it, so the stack does
                    // not grow with the trip count.
                    warp.stack.pop();
                } else {
                    warp.stack.last_mut().expect("stack top").pc = rpc;
                }
                for (pc, mask) in [(top.pc + 1, active & !taken), (target, taken)] {
                    if pc != rpc {
                        warp.stack.push(Entry {
                            code: top.code,
                            pc,
                            rpc,
                            mask,
                        });
                    }
                }
                warp.settle();
                return Ok(Flow::Continue);
            }
        }
        Op::Call { func } => {
            if exec != 0 {
                if program
                    .kernels
                    .get(func as usize)
                    .is_none_or(|k| k.kind != KernelKind::Func)
                {
                    return Err(err(format!(
                        "call of function {func}, which does not exist"
                    )));
                }
                if warp.stack.len() >= MAX_CALL_DEPTH {
                    return Err(at.fault(
                        FaultKind::Runaway,
                        None,
                        None,
                        "call stack overflow".into(),
                    ));
                }
                // The caller's entry (all its lanes) waits after the call; only the
                // guarded lanes run the function.
                warp.stack.last_mut().expect("stack top").pc = top.pc + 1;
                warp.stack.push(Entry {
                    code: func,
                    pc: 0,
                    rpc: END,
                    mask: exec,
                });
                warp.settle();
                return Ok(Flow::Continue);
            }
        }
        Op::Ret => {
            if exec == active {
                if code.is_func {
                    next_pc = END;
                } else {
                    return Ok(exit_lanes(warp, exec));
                }
            } else if exec != 0 {
                return Err(err(
                    "a guarded ret with disagreeing lanes is not supported".into()
                ));
            }
        }
        Op::Exit => {
            if exec != 0 {
                return Ok(exit_lanes(warp, exec));
            }
        }
        Op::Bar { id } => {
            if id > 15 {
                return Err(err(format!("barrier {id} is not in 0..15")));
            }
            if exec != 0 {
                advance(warp, next_pc);
                return Ok(Flow::Barrier(id));
            }
        }
        Op::Fence { .. } | Op::Nop => {}
        Op::Vote { mode, dst, p } => {
            let pm = warp.preds.get(p.idx as usize).copied().unwrap_or(0) & exec;
            match mode {
                VoteMode::Any => {
                    warp.write_pred_bits(dst, exec, if pm != 0 { u32::MAX } else { 0 })
                }
                VoteMode::All => {
                    warp.write_pred_bits(dst, exec, if pm == exec { u32::MAX } else { 0 })
                }
                VoteMode::Ballot => {
                    *o = [u64::from(pm); WARP];
                    warp.write(dst, Type::B32, exec, o)
                }
            }
            .map_err(err)?;
        }
        Op::Shfl {
            mode,
            dst,
            dst_pred,
            a: sa,
            lane,
            clamp,
        } => {
            warp.read_src(sa, false, cta, a).map_err(err)?;
            warp.read_src(lane, false, cta, b).map_err(err)?;
            warp.read_src(clamp, false, cta, c).map_err(err)?;
            let mut valid = 0u32;
            let wmask = (WARP - 1) as u64;
            for l in 0..WARP {
                let lane_i = l as i64;
                let bval = (b[l] & wmask) as i64;
                let cval = (c[l] & wmask) as i64;
                let seg = ((c[l] >> 8) & wmask) as i64;
                let max = (lane_i & seg) | (cval & !seg);
                let min = lane_i & seg;
                let (j, ok) = match mode {
                    ShflMode::Up => (lane_i - bval, lane_i - bval >= max),
                    ShflMode::Down => (lane_i + bval, lane_i + bval <= max),
                    ShflMode::Bfly => (lane_i ^ bval, (lane_i ^ bval) <= max),
                    ShflMode::Idx => {
                        let j = min | (bval & !seg);
                        (j, j <= max)
                    }
                };
                if ok && (0..WARP as i64).contains(&j) {
                    o[l] = a[j as usize];
                    valid |= 1 << l;
                } else {
                    o[l] = a[l];
                }
            }
            warp.write(dst, Type::B32, exec, o).map_err(err)?;
            if let Some(p) = dst_pred {
                warp.write_pred_bits(p, exec, valid).map_err(err)?;
            }
        }
        Op::DeqPred { dst } => {
            let bits = super::affine::pop_pred(warp)
                .map_err(|m| at.fault(FaultKind::DacQueue, None, None, m))?;
            warp.write_pred_bits(dst, exec, bits).map_err(err)?;
        }
        Op::EnqData { .. } | Op::EnqAddr { .. } | Op::EnqSel { .. } | Op::EnqPred { .. } => {
            return Err(at.fault(
                FaultKind::Unsupported,
                None,
                None,
                "enq instructions belong to the affine stream (`.affine`)".into(),
            ));
        }
    }
    advance(warp, next_pc);
    Ok(if warp.done() {
        Flow::Done
    } else {
        Flow::Continue
    })
}

fn advance(warp: &mut WarpState, pc: u32) {
    if let Some(e) = warp.stack.last_mut() {
        e.pc = pc;
    }
    warp.settle();
}

/// The flow after a step that did not exit lanes or wait.
#[inline]
fn flow_after(warp: &WarpState) -> Flow {
    if warp.done() {
        Flow::Done
    } else {
        Flow::Continue
    }
}

/// The 4 bytes at `off` (inside `mem`: `span` checked the whole range).
#[inline(always)]
fn word(mem: &[u8], off: usize) -> [u8; 4] {
    mem.get(off..off + 4)
        .and_then(|m| m.try_into().ok())
        .unwrap_or([0; 4])
}

/// Retires `lanes` from every stack entry.
fn exit_lanes(warp: &mut WarpState, lanes: u32) -> Flow {
    for e in warp.stack.iter_mut() {
        e.mask &= !lanes;
    }
    let top = warp.stack.len() - 1;
    warp.stack[top].pc += 1;
    warp.settle();
    if warp.done() {
        Flow::Done
    } else {
        Flow::Continue
    }
}

#[allow(clippy::too_many_arguments)]
fn record(
    trace: &mut MemTrace,
    space: Space,
    write: bool,
    atomic: bool,
    bytes: u32,
    mask: u32,
    addrs: &[u64; WARP],
    no_addrs: bool,
) {
    trace.valid = true;
    trace.space = space;
    trace.write = write;
    trace.atomic = atomic;
    trace.bytes = bytes;
    trace.mask = mask;
    if !no_addrs {
        trace.addrs = *addrs;
    }
}

/// Calls `f` for every lane of `mask`, in lane order.
#[inline(always)]
fn for_lanes(mask: u32, mut f: impl FnMut(usize)) {
    if mask == u32::MAX {
        (0..WARP).for_each(f);
    } else {
        let mut m = mask;
        while m != 0 {
            f(m.trailing_zeros() as usize);
            m &= m - 1;
        }
    }
}

/// The fast path of a warp's global or shared access: when every lane of `mask` is
/// aligned and all of them fall in one buffer (or the block's shared memory), the
/// memory from the lowest address on, with that address, and whether the lanes are
/// coalesced (all active, lane `l` at the lowest address plus `l * size`). `None` sends the access to
/// the lane-by-lane path, which reports the precise fault.
#[inline]
fn span<'m>(
    env: &'m mut Env<'_>,
    cta: &'m mut CtaInfo,
    space: Space,
    mask: u32,
    addrs: &[u64; WARP],
    size: u32,
    read: bool,
) -> Option<(u64, &'m mut [u8], bool)> {
    if mask == 0 {
        return None;
    }
    let n = u64::from(size);
    let lin = mask == u32::MAX && linear(addrs, n);
    let (lo, hi, or) = if lin {
        // Coalesced: lane l at addrs[0] + l * size, no bound search needed.
        (addrs[0], addrs[WARP - 1], addrs[0])
    } else {
        let (mut lo, mut hi, mut or) = (u64::MAX, 0u64, 0u64);
        for_lanes(mask, |l| {
            lo = lo.min(addrs[l]);
            hi = hi.max(addrs[l]);
            or |= addrs[l];
        });
        (lo, hi, or)
    };
    if or % n != 0 {
        return None;
    }
    let len = usize::try_from(hi.checked_add(n)? - lo).ok()?;
    match space {
        Space::Global => env.global.access(lo, len, read).map(|m| (lo, m, lin)),
        Space::Shared => slice_in(&mut cta.shared, lo, len).map(|m| (lo, m, lin)),
        _ => None,
    }
}

/// Whether lane `l`'s address is `addrs[0] + l * n` for every lane (without wrapping).
#[inline]
fn linear(addrs: &[u64; WARP], n: u64) -> bool {
    let mut ok = addrs[0] <= u64::MAX - n * WARP as u64;
    let mut want = addrs[0];
    for &a in addrs {
        ok &= a == want;
        want = want.wrapping_add(n);
    }
    ok
}

/// Performs a memory access in every lane of `mask`, in lane order: `f` gets the
/// bytes and the lane and returns the bytes to store (if any) and the value loaded.
#[allow(clippy::too_many_arguments)]
fn mem_access(
    env: &mut Env<'_>,
    warp: &mut WarpState,
    cta: &mut CtaInfo,
    at: &At<'_>,
    space: Space,
    ty: Type,
    mask: u32,
    addrs: &[u64; WARP],
    mut f: impl FnMut(&[u8], usize) -> Result<(Option<u64>, u64), String>,
    out: &mut [u64; WARP],
) -> Result<(), GpuFault> {
    let size = ty.bytes().max(1);
    let mut m = mask;
    while m != 0 {
        let l = m.trailing_zeros() as usize;
        m &= m - 1;
        let addr = addrs[l];
        if !addr.is_multiple_of(u64::from(size)) {
            return Err(at.fault(
                FaultKind::Misaligned,
                Some(l as u32),
                Some(addr),
                format!("misaligned {}-byte .{} access", size, space.name()),
            ));
        }
        let oob = |what: &str| {
            at.fault(
                FaultKind::OutOfBounds,
                Some(l as u32),
                Some(addr),
                format!("{}-byte .{} access out of bounds{what}", size, space.name()),
            )
        };
        let n = size as usize;
        let bytes: &mut [u8] = match space {
            Space::Global => env.global.access(addr, n, true).ok_or_else(|| oob(""))?,
            Space::Shared => {
                let len = cta.shared.len();
                slice_in(&mut cta.shared, addr, n)
                    .ok_or_else(|| oob(&format!(" (shared size {len})")))?
            }
            Space::Local => {
                let lb = warp.local_bytes as usize;
                let lane_mem = &mut warp.local[l * lb..(l + 1) * lb];
                slice_in(lane_mem, addr, n).ok_or_else(|| oob(&format!(" (local size {lb})")))?
            }
            Space::Param => {
                let p = env.params;
                if addr
                    .checked_add(n as u64)
                    .is_none_or(|e| e > p.len() as u64)
                {
                    return Err(oob(&format!(" (parameter block of {} bytes)", p.len())));
                }
                out[l] = load_le(&p[addr as usize..addr as usize + n]);
                continue;
            }
        };
        let (store, load) =
            f(bytes, l).map_err(|m| at.fault(FaultKind::Invalid, Some(l as u32), Some(addr), m))?;
        if let Some(v) = store {
            store_le(bytes, v);
            if space == Space::Global && env.global.logging() {
                env.global.note_write(addr, n);
            }
        }
        out[l] = load;
    }
    Ok(())
}

fn slice_in(mem: &mut [u8], addr: u64, n: usize) -> Option<&mut [u8]> {
    let start = usize::try_from(addr).ok()?;
    mem.get_mut(start..start.checked_add(n)?)
}
