//! The execute core of the functional Nyuzi simulator: pre-decoded micro-ops and the
//! semantics of every instruction, bit-exact with the upstream emulator
//! (NyuziProcessor `tools/emulator/processor.c`; notes §1–§6).
//!
//! Why micro-ops: [`Inst`] mirrors the encoding, so executing it would need two or
//! three nested matches per instruction. [`predecode`] flattens each word once into a
//! `u64` ([`Uop`]: a class byte naming format *and* operand shape, the ALU/memory op,
//! four register fields and a 32-bit immediate). The all-zero `u64` means "not decoded
//! yet", so the per-word cache can be a zero-allocated `Vec<u64>` as large as memory
//! that costs only the pages a program actually executes.
//!
//! Deliberate simplifications (documented in the machine module as well): no MMU/TLB,
//! no interrupts and no trap handler: every trap is a [`FaultKind`] that stops the
//! machine, as upstream does when the trap handler (CR1) is 0. `syscall` is reported as
//! a fault too (upstream would jump to the handler at 0).

use super::isa::{decode, AluOp, BranchOp, CacheOp, IFmt, Inst, MemOp, RFmt};
use super::machine::{FaultKind, MemAccess, Stats};
use super::protect::Protection;

/// A packed micro-op: class `[0,6)`, op `[6,12)`, d `[12,17)`, a `[17,22)`,
/// b `[22,27)`, m `[27,32)`, imm `[32,64)`.
pub(crate) type Uop = u64;

/// Upstream's debugger breakpoint word: decodes as a masked compare, but the
/// emulator raises an illegal-instruction trap for it when no breakpoint is set.
const UPSTREAM_BREAKPOINT_WORD: u32 = 0x707f_ffff;

/// First MMIO address (notes §6): device registers live at 0xffff0000 and above.
pub(crate) const MMIO_BASE: u32 = 0xffff_0000;
/// `store_32` here appends a byte to the console (REG_SERIAL_OUTPUT).
pub(crate) const SERIAL_OUTPUT: u32 = 0xffff_0048;
/// No load-sync reservation.
pub(crate) const NO_LINE: u32 = u32::MAX;

/// Micro-op classes. Each names a format *and* an operand shape, so execution is a
/// single match.
pub(crate) mod class {
    pub const UNDECODED: u8 = 0;
    pub const ILLEGAL: u8 = 1; // imm = the word
    pub const NOP: u8 = 2;
    pub const ALU_SS: u8 = 3; // sD = sA op sB
    pub const ALU_SI: u8 = 4; // sD = sA op imm (movehi: op move)
    pub const CMP_SS: u8 = 5; // sD = 0xffff / 0
    pub const CMP_SI: u8 = 6;
    pub const ALU_VS: u8 = 7; // vD = vA op splat(sB)
    pub const ALU_VS_M: u8 = 8;
    pub const ALU_VV: u8 = 9;
    pub const ALU_VV_M: u8 = 10;
    pub const ALU_VI: u8 = 11;
    pub const ALU_VI_M: u8 = 12;
    pub const CMP_VS: u8 = 13; // sD = lane mask
    pub const CMP_VV: u8 = 14;
    pub const CMP_VI: u8 = 15;
    pub const GETLANE_S: u8 = 16;
    pub const GETLANE_I: u8 = 17;
    pub const SHUF: u8 = 18;
    pub const SHUF_M: u8 = 19;
    pub const SYSCALL: u8 = 20;
    pub const BREAK: u8 = 21;
    pub const LOAD: u8 = 22; // op = MemOp bits
    pub const STORE: u8 = 23;
    pub const LOAD_SYNC: u8 = 24;
    pub const STORE_SYNC: u8 = 25;
    pub const GETCR: u8 = 26; // a = CR index
    pub const SETCR: u8 = 27;
    pub const LOADV: u8 = 28;
    pub const LOADV_M: u8 = 29;
    pub const STOREV: u8 = 30;
    pub const STOREV_M: u8 = 31;
    pub const GATHER: u8 = 32;
    pub const GATHER_M: u8 = 33;
    pub const SCATTER: u8 = 34;
    pub const SCATTER_M: u8 = 35;
    pub const DCHECK: u8 = 36; // dflush / dinvalidate (op 1 = privileged)
    pub const CACHE_NOP: u8 = 37; // iinvalidate, membar
    pub const CACHE_PRIV: u8 = 38; // TLB ops: privileged no-ops (no MMU model)
    pub const B_REG: u8 = 39;
    pub const BZ: u8 = 40;
    pub const BNZ: u8 = 41;
    pub const JUMP: u8 = 42;
    pub const CALL: u8 = 43;
    pub const CALL_REG: u8 = 44;
    pub const ERET: u8 = 45;
}

fn pack(cls: u8, op: u32, d: u8, a: u8, b: u8, m: u8, imm: u32) -> Uop {
    u64::from(cls)
        | u64::from(op & 63) << 6
        | u64::from(d & 31) << 12
        | u64::from(a & 31) << 17
        | u64::from(b & 31) << 22
        | u64::from(m & 31) << 27
        | u64::from(imm) << 32
}

#[inline(always)]
pub(crate) fn uop_class(u: Uop) -> u8 {
    (u & 63) as u8
}
#[inline(always)]
fn f_op(u: Uop) -> u8 {
    ((u >> 6) & 63) as u8
}
#[inline(always)]
fn f_d(u: Uop) -> usize {
    ((u >> 12) & 31) as usize
}
#[inline(always)]
fn f_a(u: Uop) -> usize {
    ((u >> 17) & 31) as usize
}
#[inline(always)]
fn f_b(u: Uop) -> usize {
    ((u >> 22) & 31) as usize
}
#[inline(always)]
fn f_m(u: Uop) -> usize {
    ((u >> 27) & 31) as usize
}
#[inline(always)]
fn f_imm(u: Uop) -> u32 {
    (u >> 32) as u32
}

/// Flattens one instruction word into a micro-op (never [`class::UNDECODED`]).
pub(crate) fn predecode(word: u32) -> Uop {
    use class::*;
    if word == UPSTREAM_BREAKPOINT_WORD {
        return pack(ILLEGAL, 0, 0, 0, 0, 0, word);
    }
    let Ok(inst) = decode(word) else {
        return pack(ILLEGAL, 0, 0, 0, 0, 0, word);
    };
    match inst {
        Inst::Reg {
            fmt,
            op,
            dest,
            src1,
            src2,
            mask,
        } => {
            let cls = match (op, fmt) {
                (AluOp::Break, _) => BREAK,
                (AluOp::GetLane, _) => GETLANE_S,
                (AluOp::Shuffle, RFmt::VvvMask) => SHUF_M,
                (AluOp::Shuffle, _) => SHUF,
                // Compares ignore the mask field (notes §4).
                (_, RFmt::Sss) if op.is_compare() => CMP_SS,
                (_, RFmt::Vvs | RFmt::VvsMask) if op.is_compare() => CMP_VS,
                (_, RFmt::Vvv | RFmt::VvvMask) if op.is_compare() => CMP_VV,
                (_, RFmt::Sss) => ALU_SS,
                (_, RFmt::Vvs) => ALU_VS,
                (_, RFmt::VvsMask) => ALU_VS_M,
                (_, RFmt::Vvv) => ALU_VV,
                (_, RFmt::VvvMask) => ALU_VV_M,
            };
            pack(cls, op.bits(), dest, src1, src2, mask, 0)
        }
        Inst::Imm {
            fmt,
            op,
            dest,
            src1,
            imm,
        } => {
            let cls = match (op, fmt) {
                (AluOp::Syscall, _) => SYSCALL,
                (AluOp::GetLane, _) => GETLANE_I,
                _ if word == 0 => NOP,
                (_, IFmt::S) if op.is_compare() => CMP_SI,
                (_, IFmt::V) if op.is_compare() => CMP_VI,
                (_, IFmt::S) => ALU_SI,
                (_, IFmt::V) => ALU_VI,
            };
            pack(cls, op.bits(), dest, src1, 0, 0, imm as u32)
        }
        Inst::ImmMasked {
            op,
            dest,
            src1,
            mask,
            imm,
        } => {
            let cls = if op.is_compare() { CMP_VI } else { ALU_VI_M };
            pack(cls, op.bits(), dest, src1, 0, mask, imm as u32)
        }
        Inst::MoveHi { dest, imm } => pack(ALU_SI, AluOp::Move.bits(), dest, 0, 0, 0, imm << 13),
        Inst::Mem {
            op,
            load,
            srcdest,
            ptr,
            mask,
            offset,
        } => {
            let cls = match (op, load) {
                (MemOp::Sync, true) => LOAD_SYNC,
                (MemOp::Sync, false) => STORE_SYNC,
                (MemOp::ControlReg, true) => GETCR,
                (MemOp::ControlReg, false) => SETCR,
                (MemOp::Block, true) => LOADV,
                (MemOp::Block, false) => STOREV,
                (MemOp::BlockMask, true) => LOADV_M,
                (MemOp::BlockMask, false) => STOREV_M,
                (MemOp::Gather, true) => GATHER,
                (MemOp::Gather, false) => SCATTER,
                (MemOp::GatherMask, true) => GATHER_M,
                (MemOp::GatherMask, false) => SCATTER_M,
                (_, true) => LOAD,
                (_, false) => STORE,
            };
            pack(cls, op.bits(), srcdest, ptr, 0, mask, offset as u32)
        }
        Inst::Cache {
            op, ptr, offset, ..
        } => match op {
            CacheOp::DFlush => pack(DCHECK, 0, 0, ptr, 0, 0, offset as u32),
            CacheOp::DInvalidate => pack(DCHECK, 1, 0, ptr, 0, 0, offset as u32),
            CacheOp::IInvalidate | CacheOp::Membar => pack(CACHE_NOP, 0, 0, 0, 0, 0, 0),
            _ => pack(CACHE_PRIV, 0, 0, 0, 0, 0, 0),
        },
        Inst::Branch { op, reg, offset } => {
            let cls = match op {
                BranchOp::Reg => B_REG,
                BranchOp::Bz => BZ,
                BranchOp::Bnz => BNZ,
                BranchOp::Jump => JUMP,
                BranchOp::Call => CALL,
                BranchOp::CallReg => CALL_REG,
                BranchOp::Eret => ERET,
            };
            pack(cls, 0, 0, reg, 0, 0, (offset as u32).wrapping_mul(4))
        }
    }
}

/// Whether micro-op class `c` works on vector registers (what [`Stats::vector`]
/// counts, and what has lanes in a profile or trace).
#[inline(always)]
pub(crate) fn is_vector_class(c: u8) -> bool {
    use class::*;
    (ALU_VS..=SHUF_M).contains(&c) || (LOADV..=SCATTER_M).contains(&c)
}

/// The coarse kind of a micro-op, for [`super::machine::InstClass`] and statistics.
pub(crate) fn kind_of(u: Uop) -> super::machine::InstClass {
    use super::machine::InstClass as K;
    use class::*;
    match uop_class(u) {
        NOP | ALU_SS | ALU_SI | CMP_SS | CMP_SI => K::Scalar,
        ALU_VS..=SHUF_M => K::Vector,
        LOAD..=STORE_SYNC | LOADV..=SCATTER_M => K::Memory,
        B_REG..=ERET => K::Branch,
        _ => K::Control,
    }
}

/// One hardware thread's architectural state.
#[derive(Clone)]
pub(crate) struct Thread {
    pub s: [u32; 32],
    pub v: [[u32; 16]; 32],
    pub pc: u32,
    /// CR4: bit0 interrupt enable, bit1 MMU enable, bit2 supervisor.
    pub flags: u32,
    /// Stored control registers (trap pc, scratchpads, ...), indexed by CR number.
    pub cr: [u32; 32],
}

impl Thread {
    pub fn new() -> Thread {
        Thread {
            s: [0; 32],
            v: [[0; 16]; 32],
            pc: 0,
            flags: 4,
            cr: [0; 32],
        }
    }
}

/// Everything but the threads' registers: memory, the decoded-word cache, the thread
/// enable mask, load-sync reservations, the console and statistics.
pub(crate) struct Sys {
    pub mem: Vec<u8>,
    pub mem_size: u32,
    /// Pre-decoded micro-op per memory word (0 = not decoded yet).
    pub dcache: Vec<Uop>,
    /// Per 4 KiB page: whether any word of it was pre-decoded (stores then invalidate).
    pub code_pages: Vec<bool>,
    pub enable: u64,
    pub all_threads: u64,
    /// Per thread: the 64-byte line of the last `load_sync`, or [`NO_LINE`].
    pub ll: Vec<u32>,
    pub ll_any: bool,
    pub console: Vec<u8>,
    /// Retired instructions per micro-op class: the hot loop's only counter.
    pub counts: [u64; 64],
    /// Their sum, kept current by `step` and after each quantum of `run` (so the
    /// instruction limit of `step` costs no summing).
    pub total: u64,
    /// Active lanes summed over masked vector instructions.
    pub masked_active: u64,
    /// Extra instructions upstream would count: 15 per gather/scatter (16 subcycles).
    pub extra_subcycles: u64,
    /// The regions checked code may access ([`super::protect`]); `None`: the bare
    /// hardware, which checks nothing.
    pub protect: Option<Box<Protection>>,
}

/// A fault before the machine adds pc and thread: kind and access address.
pub(crate) type Trap = (FaultKind, Option<u32>);

/// What a trace-mode execution reports besides state changes.
#[derive(Default)]
pub(crate) struct Effects {
    pub mem: Option<MemAccess>,
    pub branch_taken: bool,
    pub masked: bool,
    pub lanes: u8,
    /// The active lanes of a vector instruction (bit i = lane i).
    pub mask: u16,
}

impl Sys {
    /// The micro-op at `pc`, pre-decoding and caching it on first use.
    #[inline(always)]
    pub fn uop_at(&mut self, pc: u32) -> Result<Uop, Trap> {
        if pc & 3 != 0 {
            return Err((FaultKind::Misaligned, Some(pc)));
        }
        let i = (pc >> 2) as usize;
        match self.dcache.get(i) {
            Some(&u) if u != u64::from(class::UNDECODED) => Ok(u),
            Some(_) => Ok(self.decode_word(i)),
            None => Err((FaultKind::OutOfRange, Some(pc))),
        }
    }

    #[cold]
    fn decode_word(&mut self, i: usize) -> Uop {
        let b = i * 4;
        let w = u32::from_le_bytes([
            self.mem[b],
            self.mem[b + 1],
            self.mem[b + 2],
            self.mem[b + 3],
        ]);
        let u = predecode(w);
        self.dcache[i] = u;
        self.code_pages[b >> 12] = true;
        u
    }

    /// Faults unless the protection, if any, lets code at `pc` access `len` bytes
    /// from `addr`.
    #[inline(always)]
    fn check_protection(&self, pc: u32, addr: u32, len: u32, store: bool) -> Result<(), Trap> {
        match &self.protect {
            Some(p) if !p.allows(pc, addr, len, store) => Err((FaultKind::Protection, Some(addr))),
            _ => Ok(()),
        }
    }

    /// The instruction word at `pc` (already range-checked by [`Sys::uop_at`]).
    pub fn word_at(&self, pc: u32) -> u32 {
        self.read32(pc)
    }

    #[inline(always)]
    fn in_ram(&self, addr: u32, len: u32) -> bool {
        addr < MMIO_BASE && u64::from(addr) + u64::from(len) <= u64::from(self.mem_size)
    }

    #[inline(always)]
    fn read32(&self, addr: u32) -> u32 {
        let a = addr as usize;
        u32::from_le_bytes(self.mem[a..a + 4].try_into().unwrap_or([0; 4]))
    }

    /// Called after every store to RAM: drops stale decoded words and the
    /// load-sync reservations of the line (upstream `invalidate_sync_address`).
    #[inline(always)]
    fn stored(&mut self, addr: u32, len: u32) {
        if self.code_pages[(addr >> 12) as usize] {
            let first = (addr >> 2) as usize;
            let end = (((addr + len - 1) >> 2) as usize + 1).min(self.dcache.len());
            if first < end {
                self.dcache[first..end].fill(0);
            }
        }
        if self.ll_any {
            let line = addr / 64;
            for l in &mut self.ll {
                if *l == line {
                    *l = NO_LINE;
                }
            }
        }
    }

    /// Writes bytes to RAM (range already checked) and invalidates as a store does.
    pub fn write_ram(&mut self, addr: u32, bytes: &[u8]) {
        let a = addr as usize;
        self.mem[a..a + bytes.len()].copy_from_slice(bytes);
        if !bytes.is_empty() {
            // A host write may span pages: invalidate page by page.
            let end = addr + bytes.len() as u32;
            let mut p = addr;
            while p < end {
                let next = ((p >> 12) + 1) << 12;
                let chunk_end = next.min(end);
                self.stored(p, chunk_end - p);
                p = chunk_end;
            }
        }
    }

    fn write32(&mut self, addr: u32, v: u32) {
        let a = addr as usize;
        self.mem[a..a + 4].copy_from_slice(&v.to_le_bytes());
        self.stored(addr, 4);
    }

    fn cycle_count(&self) -> u32 {
        // Upstream counts the current instruction at fetch, and gathers 16 times.
        (self.retired() + self.extra_subcycles + 1) as u32
    }

    /// Instructions retired so far (the sum of the per-class counts).
    pub fn retired(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Statistics from the per-class counts.
    pub fn stats(&self) -> Stats {
        use class::*;
        let c = &self.counts;
        let sum = |r: std::ops::RangeInclusive<u8>| -> u64 { r.map(|k| c[usize::from(k)]).sum() };
        let vector = sum(ALU_VS..=SHUF_M) + sum(LOADV..=SCATTER_M);
        let masked: u64 = [
            ALU_VS_M, ALU_VV_M, ALU_VI_M, SHUF_M, LOADV_M, STOREV_M, GATHER_M, SCATTER_M,
        ]
        .iter()
        .map(|&k| c[usize::from(k)])
        .sum();
        Stats {
            retired: self.retired(),
            scalar: sum(NOP..=CMP_SI),
            vector,
            masked,
            memory: sum(LOAD..=STORE_SYNC) + sum(LOADV..=SCATTER_M),
            branch: sum(B_REG..=ERET),
            vector_lane_slots: 16 * vector,
            active_lanes: 16 * (vector - masked) + self.masked_active,
        }
    }
}

// ---------------------------------------------------------------------------------
// Arithmetic (upstream `scalar_arithmetic_op`).

/// A float result as a register value: NaN is canonicalized to 0x7fffffff.
#[inline(always)]
fn fbits(f: f32) -> u32 {
    if f.is_nan() {
        0x7fff_ffff
    } else {
        f.to_bits()
    }
}

#[inline(always)]
fn fl(x: u32) -> f32 {
    f32::from_bits(x)
}

/// `ftoi`: C's `(int32_t)` cast on x86: truncation, and 0x80000000 for NaN and
/// out-of-range values (what cvttss2si returns).
#[inline(always)]
pub(crate) fn ftoi(x: u32) -> u32 {
    let f = fl(x);
    if f.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&f) {
        0x8000_0000
    } else {
        f as i32 as u32
    }
}

/// `reciprocal`: an estimate from the input truncated to 6 mantissa bits, with the
/// result truncated the same way (unless it is NaN, which is canonicalized).
pub(crate) fn reciprocal(x: u32) -> u32 {
    let r = 1.0f32 / fl(x & 0xfffe_0000);
    if r.is_nan() {
        0x7fff_ffff
    } else {
        r.to_bits() & 0xfffe_0000
    }
}

/// Dispatches on `op` over the common ops, each given to `$apply!` as a closure of
/// `(x, y)`; any other op goes to `$other`. One table for the scalar [`alu`] and the
/// vector [`map2`] (which specializes a loop per op so that each vectorizes).
macro_rules! common_ops {
    ($op:expr, $apply:ident, $other:expr) => {
        match $op {
            0x00 => $apply!(|x: u32, y: u32| x | y),
            0x01 => $apply!(|x: u32, y: u32| x & y),
            0x03 => $apply!(|x: u32, y: u32| x ^ y),
            0x05 => $apply!(|x: u32, y: u32| x.wrapping_add(y)),
            0x06 => $apply!(|x: u32, y: u32| x.wrapping_sub(y)),
            0x07 => $apply!(|x: u32, y: u32| x.wrapping_mul(y)),
            0x09 => $apply!(|x: u32, y: u32| ((x as i32) >> (y & 31)) as u32),
            0x0a => $apply!(|x: u32, y: u32| x >> (y & 31)),
            0x0b => $apply!(|x: u32, y: u32| x << (y & 31)),
            0x0f => $apply!(|_x: u32, y: u32| y),
            0x20 => $apply!(|x: u32, y: u32| fbits(fl(x) + fl(y))),
            0x21 => $apply!(|x: u32, y: u32| fbits(fl(x) - fl(y))),
            0x22 => $apply!(|x: u32, y: u32| fbits(fl(x) * fl(y))),
            0x2a => $apply!(|_x: u32, y: u32| fbits(y as i32 as f32)),
            _ => $other,
        }
    };
}

/// Every two-operand arithmetic op; one-operand ops use `y` (src2 or the immediate).
#[inline(always)]
pub(crate) fn alu(op: u8, x: u32, y: u32) -> u32 {
    macro_rules! apply {
        ($f:expr) => {
            ($f)(x, y)
        };
    }
    common_ops!(
        op,
        apply,
        match op {
            0x08 => ((u64::from(x) * u64::from(y)) >> 32) as u32,
            0x0c => y.leading_zeros(),
            0x0e => y.trailing_zeros(),
            0x1b => ftoi(y),
            0x1c => reciprocal(y),
            0x1d => y as u8 as i8 as i32 as u32,
            0x1e => y as u16 as i16 as i32 as u32,
            0x1f => ((i64::from(x as i32) * i64::from(y as i32)) >> 32) as u32,
            // Compares used as values (never reached: compares have their own classes).
            _ if is_cmp(op) => u32::from(cmp(op, x, y)),
            _ => 0,
        }
    )
}

fn is_cmp(op: u8) -> bool {
    (0x10..=0x19).contains(&op) || (0x2c..=0x31).contains(&op)
}

#[inline(always)]
pub(crate) fn cmp(op: u8, x: u32, y: u32) -> bool {
    match op {
        0x10 => x == y,
        0x11 => x != y,
        0x12 => (x as i32) > (y as i32),
        0x13 => (x as i32) >= (y as i32),
        0x14 => (x as i32) < (y as i32),
        0x15 => (x as i32) <= (y as i32),
        0x16 => x > y,
        0x17 => x >= y,
        0x18 => x < y,
        0x19 => x <= y,
        0x2c => fl(x) > fl(y),
        0x2d => fl(x) >= fl(y),
        0x2e => fl(x) < fl(y),
        0x2f => fl(x) <= fl(y),
        0x30 => fl(x) == fl(y),
        0x31 => fl(x) != fl(y),
        _ => false,
    }
}

/// `out[i] = op(a[i], b[i])` with the common ops specialized so each loop vectorizes.
#[inline(always)]
fn map2(op: u8, a: &[u32; 16], b: &[u32; 16]) -> [u32; 16] {
    let mut out = [0u32; 16];
    macro_rules! go {
        ($f:expr) => {{
            let f = $f;
            for i in 0..16 {
                out[i] = f(a[i], b[i]);
            }
        }};
    }
    common_ops!(op, go, go!(|x: u32, y: u32| alu(op, x, y)));
    out
}

/// Lane mask of a vector compare: bit i = lane i.
#[inline(always)]
fn cmp_mask(op: u8, a: &[u32; 16], b: &[u32; 16]) -> u32 {
    let mut m = 0u32;
    for i in 0..16 {
        m |= u32::from(cmp(op, a[i], b[i])) << i;
    }
    m
}

/// Writes the lanes of `r` selected by `mask` into `dest` (masked merge).
#[inline(always)]
fn merge(dest: &mut [u32; 16], r: &[u32; 16], mask: u32) {
    for i in 0..16 {
        if mask >> i & 1 != 0 {
            dest[i] = r[i];
        }
    }
}

// ---------------------------------------------------------------------------------
// Execution.

/// Executes the micro-op `u` of thread `t` (whose pc is the instruction's address),
/// advancing its pc. Returns whether the thread enable mask changed (the caller ends
/// the thread's quantum). With `TRACE`, memory accesses are reported in `eff`.
#[inline(always)]
pub(crate) fn exec<const TRACE: bool>(
    th: &mut Thread,
    t: usize,
    sys: &mut Sys,
    u: Uop,
    eff: &mut Effects,
) -> Result<bool, Trap> {
    use class::*;
    let (op, d, a, b) = (f_op(u), f_d(u), f_a(u), f_b(u));
    let imm = f_imm(u);
    let pc = th.pc;
    let mut next = pc.wrapping_add(4);
    match uop_class(u) {
        NOP => {}
        ALU_SS => {
            th.s[d] = alu(op, th.s[a], th.s[b]);
        }
        ALU_SI => {
            th.s[d] = alu(op, th.s[a], imm);
        }
        CMP_SS => {
            th.s[d] = if cmp(op, th.s[a], th.s[b]) { 0xffff } else { 0 };
        }
        CMP_SI => {
            th.s[d] = if cmp(op, th.s[a], imm) { 0xffff } else { 0 };
        }
        // The common unmasked vector-vector form, without copying its operands.
        ALU_VV => {
            th.v[d] = map2(op, &th.v[a], &th.v[b]);
            note_vector(sys, eff, false, 0xffff);
        }
        ALU_VS | ALU_VS_M | ALU_VV_M | ALU_VI | ALU_VI_M => {
            let cls = uop_class(u);
            let y = match cls {
                ALU_VS | ALU_VS_M => [th.s[b]; 16],
                ALU_VV | ALU_VV_M => th.v[b],
                _ => [imm; 16],
            };
            let r = map2(op, &th.v[a], &y);
            let masked = matches!(cls, ALU_VS_M | ALU_VV_M | ALU_VI_M);
            write_v(th, sys, eff, u, &r, masked);
        }
        CMP_VS | CMP_VV | CMP_VI => {
            let y = match uop_class(u) {
                CMP_VS => [th.s[b]; 16],
                CMP_VV => th.v[b],
                _ => [imm; 16],
            };
            th.s[d] = cmp_mask(op, &th.v[a], &y);
            note_vector(sys, eff, false, 0xffff);
        }
        GETLANE_S => {
            th.s[d] = th.v[a][(th.s[b] & 15) as usize];
            note_vector(sys, eff, false, 0xffff);
        }
        GETLANE_I => {
            th.s[d] = th.v[a][(imm & 15) as usize];
            note_vector(sys, eff, false, 0xffff);
        }
        SHUF | SHUF_M => {
            let (src, idx) = (th.v[a], th.v[b]);
            let mut r = [0u32; 16];
            for i in 0..16 {
                r[i] = src[(idx[i] & 15) as usize];
            }
            write_v(th, sys, eff, u, &r, uop_class(u) == SHUF_M);
        }
        SYSCALL => return Err((FaultKind::Syscall(imm & 0x3fff), None)),
        BREAK => return Err((FaultKind::Breakpoint, None)),
        ILLEGAL => return Err((FaultKind::IllegalInstruction(imm), None)),
        LOAD | STORE | LOAD_SYNC | STORE_SYNC => scalar_mem::<TRACE>(th, t, sys, u, eff)?,
        LOADV | LOADV_M | STOREV | STOREV_M => block_mem::<TRACE>(th, sys, u, eff)?,
        GATHER | GATHER_M | SCATTER | SCATTER_M => lanes_mem::<TRACE>(th, sys, u, eff)?,
        GETCR | SETCR => {
            supervisor(th)?;
            if uop_class(u) == GETCR {
                th.s[d] = get_cr(th, t, sys, a);
            } else {
                th.pc = next;
                return Ok(set_cr(th, sys, a, th.s[d]));
            }
        }
        DCHECK => {
            if op == 1 {
                supervisor(th)?;
            }
            let addr = th.s[a].wrapping_add(imm);
            if addr < MMIO_BASE && addr >= sys.mem_size {
                return Err((FaultKind::OutOfRange, Some(addr)));
            }
        }
        CACHE_NOP => {}
        CACHE_PRIV => {
            supervisor(th)?;
        }
        B_REG => {
            next = th.s[a];
            branch(eff);
        }
        BZ | BNZ => {
            if (th.s[a] == 0) == (uop_class(u) == BZ) {
                next = pc.wrapping_add(imm);
                eff.branch_taken = true;
            }
        }
        JUMP => {
            next = pc.wrapping_add(imm);
            branch(eff);
        }
        CALL => {
            th.s[31] = pc.wrapping_add(4);
            next = pc.wrapping_add(imm);
            branch(eff);
        }
        CALL_REG => {
            // Upstream writes the link register before reading the target.
            th.s[31] = pc.wrapping_add(4);
            next = th.s[a];
            branch(eff);
        }
        ERET => {
            supervisor(th)?;
            next = th.cr[2];
            th.flags = th.cr[8] & 7;
            branch(eff);
        }
        _ => return Err((FaultKind::IllegalInstruction(sys.word_at(pc)), None)),
    }
    th.pc = next;
    Ok(false)
}

/// Faults unless the thread runs in supervisor mode (flags bit 2).
#[inline(always)]
fn supervisor(th: &Thread) -> Result<(), Trap> {
    if th.flags & 4 == 0 {
        return Err((FaultKind::PrivilegeViolation, None));
    }
    Ok(())
}

/// The active lanes: the mask register's low 16 bits in the masked forms, else all.
#[inline(always)]
fn lane_mask(th: &Thread, u: Uop, masked: bool) -> u32 {
    if masked {
        th.s[f_m(u)] & 0xffff
    } else {
        0xffff
    }
}

/// Writes a vector result to vD (merged into the active lanes in the masked forms) and
/// notes its lanes.
#[inline(always)]
fn write_v(th: &mut Thread, sys: &mut Sys, eff: &mut Effects, u: Uop, r: &[u32; 16], masked: bool) {
    let mask = lane_mask(th, u, masked);
    let d = f_d(u);
    if masked {
        merge(&mut th.v[d], r, mask);
    } else {
        th.v[d] = *r;
    }
    note_vector(sys, eff, masked, mask);
}

#[inline(always)]
fn branch(eff: &mut Effects) {
    eff.branch_taken = true;
}

/// Notes a vector instruction's active lanes. Only masked forms need counting here:
/// everything else in [`Stats`] follows from the per-class counts.
#[inline(always)]
fn note_vector(sys: &mut Sys, eff: &mut Effects, masked: bool, mask: u32) {
    let lanes = (mask & 0xffff).count_ones();
    if masked {
        sys.masked_active += u64::from(lanes);
    }
    eff.masked = masked;
    eff.lanes = lanes as u8;
    eff.mask = mask as u16;
}

#[inline(never)]
fn get_cr(th: &Thread, t: usize, sys: &Sys, idx: usize) -> u32 {
    match idx {
        0 => t as u32,
        4 => th.flags,
        6 => sys.cycle_count(),
        // Interrupt pending: no interrupts are modeled.
        16 => 0,
        1..=3 | 5 | 7..=14 => th.cr[idx],
        // Write-only or unimplemented registers read as all ones (upstream default).
        _ => 0xffff_ffff,
    }
}

/// Writes a control register; returns whether the thread enable mask changed.
#[inline(never)]
fn set_cr(th: &mut Thread, sys: &mut Sys, idx: usize, v: u32) -> bool {
    match idx {
        4 => th.flags = v & 7,
        20 => {
            sys.enable &= !u64::from(v);
            return true;
        }
        21 => {
            sys.enable |= u64::from(v) & sys.all_threads;
            return true;
        }
        1..=3 | 5 | 7..=14 | 17 => th.cr[idx] = v,
        _ => {}
    }
    false
}

/// Scalar loads and stores, including `load_sync`/`store_sync` and MMIO.
#[inline(always)]
fn scalar_mem<const TRACE: bool>(
    th: &mut Thread,
    t: usize,
    sys: &mut Sys,
    u: Uop,
    eff: &mut Effects,
) -> Result<(), Trap> {
    use class::*;
    let cls = uop_class(u);
    let op = f_op(u) as u32;
    let d = f_d(u);
    let addr = th.s[f_a(u)].wrapping_add(f_imm(u));
    let store = matches!(cls, STORE | STORE_SYNC);
    let size: u32 = match op {
        0 | 1 => 1,
        2 | 3 => 2,
        _ => 4,
    };
    if addr & (size - 1) != 0 {
        return Err((FaultKind::Misaligned, Some(addr)));
    }
    if TRACE {
        eff.mem = Some(MemAccess::Scalar {
            addr,
            bytes: size as u8,
            store,
        });
    }
    if addr >= MMIO_BASE {
        return mmio(th, sys, op, d, addr, store);
    }
    if !sys.in_ram(addr, size) {
        return Err((FaultKind::OutOfRange, Some(addr)));
    }
    sys.check_protection(th.pc, addr, size, store)?;
    let a = addr as usize;
    match cls {
        LOAD => {
            th.s[d] = match op {
                0 => u32::from(sys.mem[a]),
                1 => sys.mem[a] as i8 as i32 as u32,
                2 => u32::from(u16::from_le_bytes([sys.mem[a], sys.mem[a + 1]])),
                3 => u16::from_le_bytes([sys.mem[a], sys.mem[a + 1]]) as i16 as i32 as u32,
                _ => sys.read32(addr),
            }
        }
        STORE => {
            let v = th.s[d];
            match size {
                1 => sys.mem[a] = v as u8,
                2 => sys.mem[a..a + 2].copy_from_slice(&(v as u16).to_le_bytes()),
                _ => sys.mem[a..a + 4].copy_from_slice(&v.to_le_bytes()),
            }
            sys.stored(addr, size);
        }
        LOAD_SYNC => {
            th.s[d] = sys.read32(addr);
            sys.ll[t] = addr / 64;
            sys.ll_any = true;
        }
        _ => {
            // store_sync: succeeds only if this thread's reservation is intact.
            if sys.ll[t] == addr / 64 {
                let v = th.s[d];
                sys.write32(addr, v);
                th.s[d] = 1;
            } else {
                th.s[d] = 0;
                if TRACE {
                    eff.mem = None;
                }
            }
        }
    }
    Ok(())
}

/// 16 little-endian words from a 64-byte slice.
#[inline(always)]
fn load_line(r: &mut [u32; 16], line: &[u8]) {
    for (x, c) in r.iter_mut().zip(line.chunks_exact(4)) {
        *x = u32::from_le_bytes(c.try_into().unwrap_or([0; 4]));
    }
}

/// Stores 16 words little-endian into a 64-byte slice.
#[inline(always)]
fn store_line(line: &mut [u8], src: &[u32; 16]) {
    let mut bytes = [0u8; 64];
    for (c, v) in bytes.chunks_exact_mut(4).zip(src) {
        c.copy_from_slice(&v.to_le_bytes());
    }
    line.copy_from_slice(&bytes);
}

/// A device register access (notes §6): only plain 32-bit accesses are allowed;
/// the console register takes stores, every other register reads 0 and ignores stores.
#[inline(never)]
fn mmio(
    th: &mut Thread,
    sys: &mut Sys,
    op: u32,
    d: usize,
    addr: u32,
    store: bool,
) -> Result<(), Trap> {
    if op != MemOp::W32.bits() {
        return Err((FaultKind::OutOfRange, Some(addr)));
    }
    if store {
        if addr == SERIAL_OUTPUT {
            sys.console.push(th.s[d] as u8);
        }
    } else {
        th.s[d] = 0;
    }
    Ok(())
}

/// Block vector loads and stores (64-byte aligned, optionally masked).
#[inline(always)]
fn block_mem<const TRACE: bool>(
    th: &mut Thread,
    sys: &mut Sys,
    u: Uop,
    eff: &mut Effects,
) -> Result<(), Trap> {
    use class::*;
    let cls = uop_class(u);
    let masked = matches!(cls, LOADV_M | STOREV_M);
    let mask = lane_mask(th, u, masked);
    let addr = th.s[f_a(u)].wrapping_add(f_imm(u));
    if addr & 63 != 0 {
        return Err((FaultKind::Misaligned, Some(addr)));
    }
    if !sys.in_ram(addr, 64) {
        return Err((FaultKind::OutOfRange, Some(addr)));
    }
    let store = matches!(cls, STOREV | STOREV_M);
    let lanes = mask & 0xffff;
    if sys.protect.is_some() && lanes != 0 {
        // The words accessed: from the first active lane's to the last one's; a
        // fault names the first active lane's word that is off limits.
        let (first, last) = (lanes.trailing_zeros(), 31 - lanes.leading_zeros());
        let span = sys.check_protection(th.pc, addr + 4 * first, 4 * (last - first + 1), store);
        if span.is_err() {
            for lane in (first..=last).filter(|l| lanes >> l & 1 != 0) {
                sys.check_protection(th.pc, addr + 4 * lane, 4, store)?;
            }
            span?;
        }
    }
    note_vector(sys, eff, masked, mask);
    if TRACE {
        eff.mem = Some(MemAccess::Block { addr, store });
    }
    let a = addr as usize;
    let d = f_d(u);
    if store {
        if mask == 0 {
            // The hardware ignores block stores with an empty mask.
            if TRACE {
                eff.mem = None;
            }
            return Ok(());
        }
        let line: &mut [u8] = &mut sys.mem[a..a + 64];
        let src = &th.v[d];
        if mask == 0xffff {
            store_line(line, src);
        } else {
            for (i, (chunk, v)) in line.chunks_exact_mut(4).zip(src).enumerate() {
                if mask >> i & 1 != 0 {
                    chunk.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
        sys.stored(addr, 64);
    } else {
        let line = &sys.mem[a..a + 64];
        if masked {
            let mut r = [0u32; 16];
            load_line(&mut r, line);
            merge(&mut th.v[d], &r, mask);
        } else {
            load_line(&mut th.v[d], line);
        }
    }
    Ok(())
}

/// Gather loads and scatter stores, lane by lane in lane order (upstream's 16
/// subcycles); only active lanes are checked and accessed.
#[inline(never)]
fn lanes_mem<const TRACE: bool>(
    th: &mut Thread,
    sys: &mut Sys,
    u: Uop,
    eff: &mut Effects,
) -> Result<(), Trap> {
    use class::*;
    let cls = uop_class(u);
    let masked = matches!(cls, GATHER_M | SCATTER_M);
    let mask = lane_mask(th, u, masked);
    let store = matches!(cls, SCATTER | SCATTER_M);
    let (d, p, off) = (f_d(u), f_a(u), f_imm(u));
    let addrs: [u32; 16] = th.v[p].map(|x| x.wrapping_add(off));
    if !store && mask & 0xffff == 0xffff && sys.protect.is_none() && all_plain_words(sys, &addrs) {
        // Every lane loads an aligned word of RAM: no per-lane checks (same result).
        for (lane, &addr) in addrs.iter().enumerate() {
            th.v[d][lane] = sys.read32(addr);
        }
    } else {
        lanes_mem_checked(th, sys, d, store, mask, &addrs)?;
    }
    sys.extra_subcycles += 15;
    note_vector(sys, eff, masked, mask);
    if TRACE {
        eff.mem = Some(MemAccess::Lanes {
            addrs,
            mask: mask as u16,
            store,
        });
    }
    Ok(())
}

/// Whether every address is word-aligned and inside RAM (branch-free over the lanes).
#[inline(always)]
fn all_plain_words(sys: &Sys, addrs: &[u32; 16]) -> bool {
    let low_bits = addrs.iter().fold(0, |acc, &a| acc | a);
    let highest = addrs.iter().fold(0, |acc, &a| acc.max(a));
    low_bits & 3 == 0 && sys.in_ram(highest, 4)
}

/// The lane-by-lane path: each active lane checked, then accessed, in lane order.
fn lanes_mem_checked(
    th: &mut Thread,
    sys: &mut Sys,
    d: usize,
    store: bool,
    mask: u32,
    addrs: &[u32; 16],
) -> Result<(), Trap> {
    for (lane, &addr) in addrs.iter().enumerate() {
        if mask >> lane & 1 == 0 {
            continue;
        }
        if addr & 3 != 0 {
            return Err((FaultKind::Misaligned, Some(addr)));
        }
        if !sys.in_ram(addr, 4) {
            return Err((FaultKind::OutOfRange, Some(addr)));
        }
        sys.check_protection(th.pc, addr, 4, store)?;
        if store {
            let v = th.v[d][lane];
            sys.write32(addr, v);
        } else {
            th.v[d][lane] = sys.read32(addr);
        }
    }
    Ok(())
}
