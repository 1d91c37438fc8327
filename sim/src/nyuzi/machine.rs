//! The functional Nyuzi machine: memory, hardware threads, and the run loop.
//!
//! It executes real Nyuzi machine code with the upstream emulator's semantics
//! (NyuziProcessor `tools/emulator/processor.c`; notes §1–§6); the per-instruction
//! semantics live in `exec.rs`. Two entry points share that core:
//!
//! * [`Machine::run`], the fast functional mode: threads take turns, each running a
//!   *quantum* of instructions ([`DEFAULT_QUANTUM`]) before the next enabled thread.
//!   Upstream interleaves one instruction per thread; results of race-free programs
//!   do not depend on the interleaving (only instruction counts of spin loops do).
//!   [`Machine::set_quantum`]`(1)` gives upstream's round-robin order.
//! * [`Machine::step`], one instruction of one thread with a description of what it
//!   did ([`Step`]), for the timing model.
//!
//! Differences from upstream, all deliberate: memory starts zeroed (upstream fills it
//! with random values outside the image); there is no MMU, TLB, interrupt or trap
//! handler, so every trap (including `syscall`) stops with a [`Fault`]; accesses
//! outside memory fault with [`FaultKind::OutOfRange`] instead of crashing the
//! emulator; MMIO reads return 0 and MMIO stores other than the console are ignored;
//! control register 6 returns the instruction count (as the notes say), not a clock.
//! A thread resumed with CR21 continues at its own pc, which is 0 for a thread that
//! never ran.
//!
//! With a [`Recorder`] ([`Machine::set_recorder`]) both entry points also count every
//! instruction per word address and trace one hardware thread ([`crate::record`]):
//! code 0, index `pc / 4`. [`Machine::run`] then takes a separate loop, so the fast
//! one is unchanged.

use std::fmt;

use super::exec::{self, Effects, Sys, Thread, MMIO_BASE, NO_LINE};
use super::isa::{decode, Inst};
use super::protect::Protection;
use crate::record::{Recorder, TraceStep};

/// Instructions a thread runs before [`Machine::run`] switches to the next one.
pub const DEFAULT_QUANTUM: u32 = 256;

/// Machine shape and limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub cores: u32,
    pub threads_per_core: u32,
    /// Bytes of RAM at address 0 (upstream default 16 MiB).
    pub memory_size: u32,
    /// [`Machine::run`] and [`Machine::step`] fault with
    /// [`FaultKind::InstructionLimit`] rather than retire more than this.
    pub max_instructions: u64,
}

impl Default for Config {
    /// Upstream's defaults: 1 core, 4 threads, 16 MiB.
    fn default() -> Config {
        Config {
            cores: 1,
            threads_per_core: 4,
            memory_size: 0x100_0000,
            max_instructions: 4_000_000_000,
        }
    }
}

/// Coarse instruction class, for statistics and the timing model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InstClass {
    /// Scalar arithmetic, scalar compares, `movehi`, `nop`.
    Scalar,
    /// Vector arithmetic, vector compares, `getlane`, `shuffle`.
    Vector,
    /// Loads and stores of every kind (scalar, sync, block, gather/scatter).
    Memory,
    /// Branches, calls, `eret`.
    Branch,
    /// `getcr`/`setcr`, cache control, `syscall`, `break`.
    Control,
}

/// The memory access an instruction made (absent for a failed `store_sync` and a
/// block store with an empty mask, which do not touch memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemAccess {
    Scalar {
        addr: u32,
        bytes: u8,
        store: bool,
    },
    /// A 64-byte aligned block (`load_v`/`store_v`, masked or not).
    Block {
        addr: u32,
        store: bool,
    },
    /// Gather/scatter: the per-lane addresses and the lanes actually accessed.
    Lanes {
        addrs: [u32; 16],
        mask: u16,
        store: bool,
    },
}

/// What one [`Machine::step`] executed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    pub pc: u32,
    pub inst: Inst,
    pub class: InstClass,
    /// A masked form (vector ops, masked block and gather/scatter accesses).
    pub masked: bool,
    /// Popcount of the effective mask for vector instructions, 16 if unmasked, 0 for
    /// scalar ones.
    pub active_lanes: u8,
    pub mem: Option<MemAccess>,
    pub branch_taken: bool,
}

/// Counters over all threads. Lane utilization = `active_lanes / vector_lane_slots`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instructions retired (a gather/scatter counts once).
    pub retired: u64,
    pub scalar: u64,
    /// Instructions on vector registers: vector ALU ops and vector memory accesses.
    pub vector: u64,
    /// Masked vector instructions (compares ignore their mask and are not counted).
    pub masked: u64,
    pub memory: u64,
    pub branch: u64,
    pub vector_lane_slots: u64,
    pub active_lanes: u64,
}

/// Result of a completed [`Machine::run`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Instructions retired, a gather/scatter counting once.
    pub instructions: u64,
    /// The count upstream prints ("N total instructions"): gather/scatter count 16.
    pub emulator_instructions: u64,
}

/// Why execution stopped abnormally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The word does not decode (or is upstream's reserved breakpoint word).
    IllegalInstruction(u32),
    /// Unaligned pc or data access (scalar: natural size; block: 64; lanes: 4).
    Misaligned,
    /// An access (or fetch) outside RAM that is not a legal MMIO access.
    OutOfRange,
    /// `break`.
    Breakpoint,
    /// `syscall n` (no trap handler is modeled).
    Syscall(u32),
    /// More than [`Config::max_instructions`] would retire.
    InstructionLimit,
    /// A supervisor-only instruction after the program cleared CR4's supervisor bit.
    PrivilegeViolation,
    /// [`Machine::step`] on a thread that does not exist or is not running.
    NotRunning,
    /// A data access outside the regions of the machine's [`Protection`] (only with
    /// one set: the hardware itself has no such check).
    Protection,
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::IllegalInstruction(w) => write!(f, "illegal instruction {w:#010x}"),
            FaultKind::Misaligned => f.write_str("misaligned access"),
            FaultKind::OutOfRange => f.write_str("memory access out of range"),
            FaultKind::Breakpoint => f.write_str("breakpoint"),
            FaultKind::Syscall(n) => write!(f, "syscall {n}"),
            FaultKind::InstructionLimit => f.write_str("instruction limit reached"),
            FaultKind::PrivilegeViolation => f.write_str("privileged instruction"),
            FaultKind::NotRunning => f.write_str("thread is not running"),
            FaultKind::Protection => f.write_str("access outside the memory the program was given"),
        }
    }
}

/// A fault with where it happened. Host-side accesses ([`Machine::load_words`] etc.)
/// report pc 0 on thread 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    pub pc: u32,
    pub thread: u32,
    pub address: Option<u32>,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at pc {:#010x} on thread {}",
            self.kind, self.pc, self.thread
        )?;
        if let Some(a) = self.address {
            write!(f, ", address {a:#010x}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Fault {}

/// A Nyuzi processor: `cores × threads_per_core` hardware threads sharing RAM.
pub struct Machine {
    config: Config,
    threads: Vec<Thread>,
    sys: Sys,
    quantum: u32,
    /// What a profiled or traced run records, and the first word address (/ 4) past
    /// the instructions worth counting one by one.
    recorder: Option<Box<Recorder>>,
    record_limit: u32,
}

impl Machine {
    /// A machine at reset: RAM zeroed, only thread 0 enabled, every pc 0.
    pub fn new(config: Config) -> Machine {
        // The enable mask is a u64; upstream allows at most 32 threads.
        let n = ((config.cores as usize) * (config.threads_per_core as usize)).min(64);
        let mem_size = config.memory_size.min(MMIO_BASE);
        let words = (mem_size / 4) as usize;
        let pages = (mem_size as usize).div_ceil(4096).max(1);
        let all_threads = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
        Machine {
            threads: vec![Thread::new(); n],
            sys: Sys {
                mem: vec![0; mem_size as usize],
                mem_size,
                dcache: vec![0; words],
                code_pages: vec![false; pages],
                enable: 1 & all_threads,
                all_threads,
                ll: vec![NO_LINE; n],
                ll_any: false,
                console: Vec::new(),
                counts: [0; 64],
                total: 0,
                masked_active: 0,
                extra_subcycles: 0,
                protect: None,
            },
            config,
            quantum: DEFAULT_QUANTUM,
            recorder: None,
            record_limit: 0,
        }
    }

    /// Records every later instruction into `recorder` (`None`: stop recording):
    /// instructions at addresses below `code_end` one by one, the others together
    /// in [`crate::record::Profile::elsewhere`]; a trace follows hardware thread
    /// [`crate::record::Trace::unit`].
    pub fn set_recorder(&mut self, recorder: Option<Recorder>, code_end: u32) {
        self.recorder = recorder.filter(Recorder::is_active).map(Box::new);
        self.record_limit = code_end / 4;
    }

    /// What was recorded so far, ending the recording.
    pub fn take_recorder(&mut self) -> Option<Recorder> {
        self.recorder.take().map(|r| *r)
    }

    /// Charges stall cycles to the instruction thread `t` is about to issue (for the
    /// timing model, when recording).
    pub(crate) fn record_stalls(&mut self, t: usize, stalls: &[u64]) {
        let pc = self.pc(t);
        let limit = self.record_limit;
        if let Some(p) = self
            .recorder
            .as_deref_mut()
            .and_then(|r| r.profile.as_mut())
        {
            for (cause, &cycles) in stalls.iter().enumerate() {
                if cycles > 0 {
                    p.stalled(Some((0, pc / 4)), limit, cause, cycles);
                }
            }
        }
    }

    /// Whether a recorder is set (the timing model then notes stalls).
    pub(crate) fn is_recording(&self) -> bool {
        self.recorder.is_some()
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Checks every later data access against `protection` (`None`: no checks, as
    /// on the hardware).
    pub fn set_protection(&mut self, protection: Option<Protection>) {
        self.sys.protect = protection.map(Box::new);
    }

    /// Sets the scheduling quantum of [`Machine::run`] (at least 1; 1 = upstream's
    /// one-instruction round robin).
    pub fn set_quantum(&mut self, quantum: u32) {
        self.quantum = quantum.max(1);
    }

    fn host_fault(kind: FaultKind, address: u32) -> Fault {
        Fault {
            kind,
            pc: 0,
            thread: 0,
            address: Some(address),
        }
    }

    fn check_range(&self, addr: u32, len: usize) -> Result<(), Fault> {
        let end = u64::from(addr) + len as u64;
        if end > u64::from(self.sys.mem_size) {
            return Err(Self::host_fault(FaultKind::OutOfRange, addr));
        }
        Ok(())
    }

    /// Stores words little-endian from `byte_addr` (4-aligned).
    pub fn load_words(&mut self, byte_addr: u32, words: &[u32]) -> Result<(), Fault> {
        if byte_addr & 3 != 0 {
            return Err(Self::host_fault(FaultKind::Misaligned, byte_addr));
        }
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.write_bytes(byte_addr, &bytes)
    }

    pub fn write_bytes(&mut self, addr: u32, bytes: &[u8]) -> Result<(), Fault> {
        self.check_range(addr, bytes.len())?;
        self.sys.write_ram(addr, bytes);
        Ok(())
    }

    pub fn read_bytes(&self, addr: u32, len: u32) -> Result<&[u8], Fault> {
        self.check_range(addr, len as usize)?;
        Ok(&self.sys.mem[addr as usize..(addr + len) as usize])
    }

    /// Loads an image in the upstream hex format ([`super::hex`]).
    pub fn load_hex(&mut self, text: &str) -> Result<(), String> {
        for (index, word) in super::hex::parse(text)? {
            let addr = u64::from(index) * 4;
            let fits = u32::try_from(addr)
                .ok()
                .filter(|&a| self.check_range(a, 4).is_ok());
            let Some(a) = fits else {
                return Err(format!(
                    "hex image word {index:#x} lies beyond memory ({:#x} bytes)",
                    self.sys.mem_size
                ));
            };
            self.sys.write_ram(a, &word.to_le_bytes());
        }
        Ok(())
    }

    /// `cores * threads_per_core` (at most 64); thread `t` is on core
    /// `t / threads_per_core`.
    pub fn hw_threads(&self) -> usize {
        self.threads.len()
    }

    /// Whether thread `t` is enabled (not suspended with CR20 / never resumed).
    pub fn is_running(&self, t: usize) -> bool {
        t < self.threads.len() && self.sys.enable >> t & 1 != 0
    }

    pub fn all_halted(&self) -> bool {
        self.sys.enable == 0
    }

    /// The raw thread enable mask (bit t = thread t), as CR20/CR21 manipulate it.
    pub fn enable_mask(&self) -> u64 {
        self.sys.enable
    }

    pub fn pc(&self, t: usize) -> u32 {
        self.threads.get(t).map_or(0, |th| th.pc)
    }

    pub fn set_pc(&mut self, t: usize, pc: u32) {
        if let Some(th) = self.threads.get_mut(t) {
            th.pc = pc;
        }
    }

    pub fn scalar_reg(&self, t: usize, r: u8) -> u32 {
        self.threads
            .get(t)
            .map_or(0, |th| th.s[usize::from(r & 31)])
    }

    pub fn vector_reg(&self, t: usize, r: u8) -> [u32; 16] {
        self.threads
            .get(t)
            .map_or([0; 16], |th| th.v[usize::from(r & 31)])
    }

    pub fn set_scalar_reg(&mut self, t: usize, r: u8, v: u32) {
        if let Some(th) = self.threads.get_mut(t) {
            th.s[usize::from(r & 31)] = v;
        }
    }

    pub fn set_vector_reg(&mut self, t: usize, r: u8, v: [u32; 16]) {
        if let Some(th) = self.threads.get_mut(t) {
            th.v[usize::from(r & 31)] = v;
        }
    }

    /// Bytes the program stored to the console register (0xffff0048).
    pub fn console(&self) -> &[u8] {
        &self.sys.console
    }

    /// Retired-instruction statistics so far, computed from the per-class counters on
    /// demand (keeping them current on every step would cost the timing model's
    /// inner loop).
    pub fn stats(&self) -> Stats {
        self.sys.stats()
    }

    /// Instructions as upstream counts them (gather/scatter = 16).
    pub fn emulator_instructions(&self) -> u64 {
        self.sys.retired() + self.sys.extra_subcycles
    }

    fn fault(&self, t: usize, (kind, address): exec::Trap) -> Fault {
        Fault {
            kind,
            pc: self.pc(t),
            thread: t as u32,
            address,
        }
    }

    /// The decoded instruction at thread `t`'s pc, without executing it.
    pub fn fetch(&mut self, t: usize) -> Result<Inst, Fault> {
        if t >= self.threads.len() {
            return Err(self.fault(t, (FaultKind::NotRunning, None)));
        }
        let pc = self.threads[t].pc;
        self.sys.uop_at(pc).map_err(|e| self.fault(t, e))?;
        let word = self.sys.word_at(pc);
        decode(word).map_err(|_| self.fault(t, (FaultKind::IllegalInstruction(word), None)))
    }

    /// Executes one instruction of thread `t` (a whole gather/scatter) and describes
    /// it. On a fault the thread's state is left at the faulting instruction.
    pub fn step(&mut self, t: usize) -> Result<Step, Fault> {
        let mut eff = Effects::default();
        let (pc, u) = self.step_uop(t, &mut eff)?;
        let inst = decode(self.sys.word_at(pc)).unwrap_or(super::isa::NOP);
        Ok(Step {
            pc,
            inst,
            class: exec::kind_of(u),
            masked: eff.masked,
            active_lanes: eff.lanes,
            mem: eff.mem,
            branch_taken: eff.branch_taken,
        })
    }

    /// [`Machine::step`] for the timing model's inner loop: reports the memory access
    /// and taken branch in `eff` (which the caller resets: only the fields an
    /// instruction produces are written) and returns the pc and the executed micro-op,
    /// without decoding the word again or building a [`Step`].
    #[inline]
    pub(crate) fn step_uop(
        &mut self,
        t: usize,
        eff: &mut Effects,
    ) -> Result<(u32, exec::Uop), Fault> {
        if !self.is_running(t) {
            return Err(self.fault(t, (FaultKind::NotRunning, None)));
        }
        if self.sys.total >= self.config.max_instructions {
            return Err(self.fault(t, (FaultKind::InstructionLimit, None)));
        }
        let pc = self.threads[t].pc;
        let u = self.sys.uop_at(pc).map_err(|e| self.fault(t, e))?;
        exec::exec::<true>(&mut self.threads[t], t, &mut self.sys, u, eff)
            .map_err(|e| self.fault(t, e))?;
        self.sys.counts[usize::from(exec::uop_class(u))] += 1;
        self.sys.total += 1;
        if let Some(r) = self.recorder.as_deref_mut() {
            record(r, self.record_limit, t, pc, u, eff);
        }
        Ok((pc, u))
    }

    /// Runs every enabled thread until all have halted (suspended themselves), a
    /// fault, or the instruction limit.
    pub fn run(&mut self) -> Result<Summary, Fault> {
        let recording = self.recorder.is_some();
        while self.sys.enable != 0 {
            for t in 0..self.threads.len() {
                if self.sys.enable >> t & 1 == 0 {
                    continue;
                }
                let left = self.config.max_instructions
                    - self.sys.retired().min(self.config.max_instructions);
                if left == 0 {
                    return Err(self.fault(t, (FaultKind::InstructionLimit, None)));
                }
                let n = u64::from(self.quantum).min(left);
                let ran = if recording {
                    self.run_quantum::<true>(t, n)
                } else {
                    self.run_quantum::<false>(t, n)
                };
                self.sys.total = self.sys.retired();
                ran?;
            }
        }
        Ok(Summary {
            instructions: self.sys.retired(),
            emulator_instructions: self.emulator_instructions(),
        })
    }

    /// Runs up to `n` instructions of thread `t`, stopping early when the thread
    /// enable mask changes; with `RECORD`, records each in the recorder.
    fn run_quantum<const RECORD: bool>(&mut self, t: usize, n: u64) -> Result<(), Fault> {
        let th = &mut self.threads[t];
        let sys = &mut self.sys;
        let mut recorder = self.recorder.as_deref_mut();
        let limit = self.record_limit;
        let mut eff = Effects::default();
        let mut result = Ok(());
        for _ in 0..n {
            let u = match sys.uop_at(th.pc) {
                Ok(u) => u,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            let pc = th.pc;
            match exec::exec::<false>(th, t, sys, u, &mut eff) {
                Ok(yielded) => {
                    sys.counts[usize::from(exec::uop_class(u))] += 1;
                    if let (true, Some(r)) = (RECORD, recorder.as_deref_mut()) {
                        record(r, limit, t, pc, u, &eff);
                    }
                    if yielded {
                        break;
                    }
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        result.map_err(|e| self.fault(t, e))
    }
}

/// Counts instruction `u` at `pc` of thread `t` (with its effects `eff`) in the
/// profile and, for the traced thread, the trace.
#[inline(never)]
fn record(r: &mut Recorder, limit: u32, t: usize, pc: u32, u: exec::Uop, eff: &Effects) {
    let vector = exec::is_vector_class(exec::uop_class(u));
    let mask = vector.then_some(eff.mask);
    if let Some(p) = r.profile.as_mut() {
        let active = mask.map_or(0, |m| m.count_ones());
        p.executed(0, pc / 4, limit, if vector { 16 } else { 0 }, active);
    }
    if let Some(tr) = r.trace.as_mut().filter(|tr| tr.unit == t as u64) {
        tr.push(TraceStep {
            code: 0,
            index: pc / 4,
            mask: mask.map(u64::from),
        });
    }
}
