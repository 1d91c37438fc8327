//! The launch runtime of a Nyuzi image, generated as real instructions: the start-up
//! stub at address 0, the block scheduler, the fiber switch behind `barrier()` and the
//! trampoline that calls the entry function. The image builder ([`super::image`])
//! places it at address 0 and fills the records it reads.
//!
//! # The scheme
//!
//! * **Start-up.** Every hardware thread starts at address 0 (thread 0 by reset, the
//!   others when thread 0 writes their bits to control register 21). Each reads its id
//!   (control register 0) and looks it up in the *thread table* (32 words, one per
//!   hardware thread id): the address of its scheduler record, or 0 for a thread the
//!   image does not use, which halts itself at once. So an image planned for 4 threads
//!   also runs on a machine with more.
//! * **Workers and blocks.** The image plans `W = min(threads, blocks)` workers, spread
//!   over the cores (worker `w` is thread `w / cores` of core `w % cores`, so a few
//!   blocks still use every core). Worker `w` runs blocks `w, w+W, w+2W, ...` (linear
//!   index `x + gx*(y + gy*z)`): static and deterministic. Each worker has its own
//!   area: a [scheduler record](sched), the block's shared memory, one
//!   [context record](super::abi::ctx) and one stack per gang of a block.
//! * **Gangs are fibers.** For each block the scheduler zeroes the shared memory, sets
//!   the block index in every gang's context record, points each gang's saved `sp` at
//!   the top of its stack and its saved `ra` at the trampoline, and resumes gang 0.
//!   A gang runs until it calls `barrier()` or returns. The barrier routine saves the
//!   gang's `sp`, `ra` and barrier id in its record and resumes the next gang (in
//!   index order) that has not finished; a gang that returns is marked finished and
//!   does the same. After the last gang, a round ends: if every gang has finished the
//!   block is done; if the unfinished gangs all wait at the same barrier they are all
//!   released and run again from the lowest index; if they wait at different barriers
//!   the runtime records the two gangs and ids in the scheduler record and stops with
//!   `break` (a barrier deadlock). This is exactly the reference interpreter's order,
//!   so a block may have any number of gangs, however few hardware threads there are.
//! * **End.** A thread with no blocks left marks its record done and halts itself
//!   (its bit in control register 20); the machine stops when every thread halted.
//!
//! Only `gp`, `sp` (and `ra` on return) survive a switch, as the ABI says; the runtime
//! uses the other registers freely. Every constant address is loaded with a two-word
//! `movehi`/`or` pair, so the code's size never depends on where things land.

use sim::nyuzi::{AluOp, BranchOp, IFmt, Inst, MemOp, RFmt, Reg};

use super::abi::{ctx, GP, RA, SP};

/// The per-hardware-thread scheduler record: byte offsets. The image builder fills the
/// static fields; the runtime updates the others. [`SIZE`](sched::SIZE) bytes.
pub mod sched {
    /// Linear index of the block being run (`x + gx*(y + gy*z)`).
    pub const BLOCK: i32 = 0;
    pub const BLOCK_X: i32 = 4;
    pub const BLOCK_Y: i32 = 8;
    pub const BLOCK_Z: i32 = 12;
    /// Blocks in the grid.
    pub const BLOCKS: i32 = 16;
    /// Workers (the stride between a worker's blocks).
    pub const STRIDE: i32 = 20;
    pub const GRID_X: i32 = 24;
    pub const GRID_Y: i32 = 28;
    /// Gangs per block.
    pub const GANGS: i32 = 32;
    /// Address of gang 0's context record (the others follow, `ctx::SIZE` apart).
    pub const CTX_BASE: i32 = 36;
    /// Lowest address of the gang stacks; gang `g`'s stack top is
    /// `STACK_BASE + (g+1)*STACK_SIZE`.
    pub const STACK_BASE: i32 = 40;
    pub const STACK_SIZE: i32 = 44;
    pub const SHARED_BASE: i32 = 48;
    /// Bytes of shared memory (a multiple of 64), zeroed per block.
    pub const SHARED_SIZE: i32 = 52;
    /// [`STATUS_RUNNING`], [`STATUS_DONE`] or [`STATUS_DEADLOCK`].
    pub const STATUS: i32 = 56;
    /// Barrier releases (statistics).
    pub const BARRIERS: i32 = 60;
    /// A deadlock: the first waiting gang and its barrier id, another gang waiting at a
    /// different barrier and its id.
    pub const DEADLOCK_GANG_A: i32 = 64;
    pub const DEADLOCK_ID_A: i32 = 68;
    pub const DEADLOCK_GANG_B: i32 = 72;
    pub const DEADLOCK_ID_B: i32 = 76;
    /// The gang last resumed (for fault reports).
    pub const CURRENT_GANG: i32 = 80;
    /// Blocks this thread started (statistics).
    pub const BLOCKS_RUN: i32 = 84;
    pub const SIZE: u32 = 128;

    pub const STATUS_RUNNING: u32 = 0;
    pub const STATUS_DONE: u32 = 1;
    pub const STATUS_DEADLOCK: u32 = 2;
}

/// Entries of the thread table: the largest machine has 32 hardware threads.
pub const THREAD_TABLE_LEN: u32 = 32;

/// Context-record `STATE` values.
pub const STATE_READY: u32 = 0;
pub const STATE_WAITING: u32 = 1;
pub const STATE_FINISHED: u32 = 2;

/// How the trampoline passes one argument word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgWord {
    /// From the parameter block at this byte offset into scalar register `s<reg>`.
    Reg {
        reg: Reg,
        param_offset: u32,
    },
    /// From the parameter block onto the stack at `sp + stack_offset` at the call.
    Stack {
        stack_offset: u32,
        param_offset: u32,
    },
    /// The hidden mask (the gang's `EXISTS`) into a register or onto the stack.
    MaskReg {
        reg: Reg,
    },
    MaskStack {
        stack_offset: u32,
    },
}

/// The addresses and counts the runtime needs; everything else it reads from the
/// scheduler and context records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeParams {
    /// The hardware threads thread 0 starts (bit per thread id; bit 0 is ignored).
    pub resume_mask: u32,
    /// Address of the thread table: [`THREAD_TABLE_LEN`] words, the scheduler record of
    /// each hardware thread id or 0.
    pub thread_table: u32,
    /// Address of the parameter block (the result slot, 8 bytes, is at its start).
    pub params: u32,
    /// Absolute address of the entry function.
    pub entry: u32,
    /// How each argument word reaches the entry.
    pub args: Vec<ArgWord>,
    /// Bytes reserved below `sp` for stack arguments (a multiple of 64).
    pub stack_args_bytes: u32,
}

/// The runtime's code and where its routines start (byte offsets from address 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runtime {
    pub code: Vec<Inst>,
    pub barrier: u32,
    pub trampoline: u32,
    pub next: u32,
}

// ---------------------------------------------------------------------------------
// A small assembler: instructions plus label fixups.

/// Scratch registers of the runtime (never `gp`, `sp`, `ra`).
const SCHED: Reg = 20;

#[derive(Default)]
struct Asm {
    code: Vec<Inst>,
    labels: Vec<Option<u32>>,
    /// (instruction index, label)
    fixups: Vec<(usize, usize)>,
}

impl Asm {
    fn label(&mut self) -> usize {
        self.labels.push(None);
        self.labels.len() - 1
    }

    fn bind(&mut self, l: usize) {
        self.labels[l] = Some(self.code.len() as u32);
    }

    fn here(&self) -> u32 {
        self.code.len() as u32 * 4
    }

    fn emit(&mut self, i: Inst) {
        self.code.push(i);
    }

    fn rr(&mut self, op: AluOp, d: Reg, a: Reg, b: Reg) {
        self.emit(Inst::Reg {
            fmt: RFmt::Sss,
            op,
            dest: d,
            src1: a,
            src2: b,
            mask: 0,
        });
    }

    fn ri(&mut self, op: AluOp, d: Reg, a: Reg, imm: i32) {
        self.emit(Inst::Imm {
            fmt: IFmt::S,
            op,
            dest: d,
            src1: a,
            imm,
        });
    }

    fn mov_i(&mut self, d: Reg, imm: i32) {
        self.ri(AluOp::Move, d, 0, imm);
    }

    fn mov(&mut self, d: Reg, s: Reg) {
        self.rr(AluOp::Move, d, 0, s);
    }

    /// Always two words (see the module docs).
    fn li(&mut self, d: Reg, v: u32) {
        self.emit(Inst::MoveHi {
            dest: d,
            imm: v >> 13,
        });
        self.ri(AluOp::Or, d, d, (v & 0x1fff) as i32);
    }

    fn mem(&mut self, op: MemOp, load: bool, r: Reg, base: Reg, offset: i32) {
        self.emit(Inst::Mem {
            op,
            load,
            srcdest: r,
            ptr: base,
            mask: 0,
            offset,
        });
    }

    fn ld(&mut self, d: Reg, base: Reg, off: i32) {
        self.mem(MemOp::W32, true, d, base, off);
    }

    fn st(&mut self, s: Reg, base: Reg, off: i32) {
        self.mem(MemOp::W32, false, s, base, off);
    }

    fn getcr(&mut self, d: Reg, cr: Reg) {
        self.mem(MemOp::ControlReg, true, d, cr, 0);
    }

    fn setcr(&mut self, s: Reg, cr: Reg) {
        self.mem(MemOp::ControlReg, false, s, cr, 0);
    }

    fn branch(&mut self, op: BranchOp, reg: Reg, l: usize) {
        self.fixups.push((self.code.len(), l));
        self.emit(Inst::Branch { op, reg, offset: 0 });
    }

    fn b(&mut self, l: usize) {
        self.branch(BranchOp::Jump, 0, l);
    }

    fn bz(&mut self, r: Reg, l: usize) {
        self.branch(BranchOp::Bz, r, l);
    }

    fn bnz(&mut self, r: Reg, l: usize) {
        self.branch(BranchOp::Bnz, r, l);
    }

    fn b_reg(&mut self, r: Reg) {
        self.emit(Inst::Branch {
            op: BranchOp::Reg,
            reg: r,
            offset: 0,
        });
    }

    /// Resolves the label fixups (every label is bound by construction).
    fn finish(mut self) -> Vec<Inst> {
        for &(at, l) in &self.fixups {
            let target = self.labels[l].unwrap_or(at as u32);
            if let Inst::Branch { offset, .. } = &mut self.code[at] {
                *offset = target as i32 - at as i32;
            }
        }
        self.code
    }
}

/// Bytes between consecutive context records, as an immediate.
const CTX_STRIDE: i32 = ctx::SIZE as i32;

/// Generates the runtime for `p`. Its length depends only on `p.args.len()`, never on
/// the addresses, so the builder can size it before placing anything.
pub fn generate(p: &RuntimeParams) -> Runtime {
    let mut a = Asm::default();
    let (gp, sp, ra) = (GP.index, SP.index, RA.index);
    let halt_self = a.label();
    let run_block = a.label();
    let block_done = a.label();
    let next = a.label();
    let resume = a.label();
    let trampoline = a.label();

    // ---- start-up stub (address 0)
    let started = a.label();
    a.getcr(0, 0);
    a.bnz(0, started);
    a.li(1, p.resume_mask & !1);
    a.setcr(1, 21);
    a.bind(started);
    a.li(1, THREAD_TABLE_LEN);
    a.rr(AluOp::CmpGeU, 2, 0, 1);
    a.bnz(2, halt_self);
    a.li(1, p.thread_table);
    a.ri(AluOp::Shl, 2, 0, 2);
    a.rr(AluOp::AddI, 1, 1, 2);
    a.ld(SCHED, 1, 0);
    a.bz(SCHED, halt_self);
    a.b(run_block);

    // ---- halt the current thread (s0 = its id)
    a.bind(halt_self);
    a.mov_i(1, 1);
    a.rr(AluOp::Shl, 1, 1, 0);
    a.setcr(1, 20);
    let spin = a.label();
    a.bind(spin);
    a.b(spin);

    // ---- next block of this thread (s20 = scheduler record)
    let finished = a.label();
    a.bind(block_done);
    a.ld(1, SCHED, sched::BLOCK);
    a.ld(2, SCHED, sched::STRIDE);
    a.rr(AluOp::AddI, 1, 1, 2);
    a.st(1, SCHED, sched::BLOCK);
    a.ld(3, SCHED, sched::BLOCKS);
    a.rr(AluOp::CmpGeU, 4, 1, 3);
    a.bnz(4, finished);
    a.ld(5, SCHED, sched::BLOCK_X);
    a.ld(6, SCHED, sched::BLOCK_Y);
    a.ld(7, SCHED, sched::BLOCK_Z);
    a.ld(8, SCHED, sched::GRID_X);
    a.ld(9, SCHED, sched::GRID_Y);
    a.rr(AluOp::AddI, 5, 5, 2);
    // x += P, carrying into y and z (no divide instruction; P is small).
    let (carry_x, carry_y, carried) = (a.label(), a.label(), a.label());
    a.bind(carry_x);
    a.rr(AluOp::CmpLtU, 4, 5, 8);
    a.bnz(4, carry_y);
    a.rr(AluOp::SubI, 5, 5, 8);
    a.ri(AluOp::AddI, 6, 6, 1);
    a.b(carry_x);
    a.bind(carry_y);
    a.rr(AluOp::CmpLtU, 4, 6, 9);
    a.bnz(4, carried);
    a.rr(AluOp::SubI, 6, 6, 9);
    a.ri(AluOp::AddI, 7, 7, 1);
    a.b(carry_y);
    a.bind(carried);
    a.st(5, SCHED, sched::BLOCK_X);
    a.st(6, SCHED, sched::BLOCK_Y);
    a.st(7, SCHED, sched::BLOCK_Z);

    // ---- start a block (s20 = scheduler record)
    a.bind(run_block);
    a.ld(1, SCHED, sched::BLOCKS_RUN);
    a.ri(AluOp::AddI, 1, 1, 1);
    a.st(1, SCHED, sched::BLOCKS_RUN);
    a.ld(1, SCHED, sched::SHARED_BASE);
    a.ld(2, SCHED, sched::SHARED_SIZE);
    a.emit(Inst::Imm {
        fmt: IFmt::V,
        op: AluOp::Move,
        dest: 0,
        src1: 0,
        imm: 0,
    });
    let (zero, zeroed) = (a.label(), a.label());
    a.bind(zero);
    a.bz(2, zeroed);
    a.mem(MemOp::Block, false, 0, 1, 0);
    a.ri(AluOp::AddI, 1, 1, 64);
    a.ri(AluOp::SubI, 2, 2, 64);
    a.b(zero);
    a.bind(zeroed);
    a.ld(1, SCHED, sched::CTX_BASE);
    a.ld(2, SCHED, sched::GANGS);
    a.ld(3, SCHED, sched::STACK_BASE);
    a.ld(4, SCHED, sched::STACK_SIZE);
    a.ld(5, SCHED, sched::BLOCK_X);
    a.ld(6, SCHED, sched::BLOCK_Y);
    a.ld(7, SCHED, sched::BLOCK_Z);
    let tramp_fixup = a.code.len();
    a.li(8, 0); // the trampoline's address, patched below
    a.mov_i(9, STATE_READY as i32);
    let (init, inited) = (a.label(), a.label());
    a.bind(init);
    a.bz(2, inited);
    a.rr(AluOp::AddI, 3, 3, 4);
    a.st(5, 1, ctx::BLOCK_IDX_X);
    a.st(6, 1, ctx::BLOCK_IDX_Y);
    a.st(7, 1, ctx::BLOCK_IDX_Z);
    a.st(9, 1, ctx::STATE);
    a.st(3, 1, ctx::SAVED_SP);
    a.st(8, 1, ctx::SAVED_RA);
    a.ri(AluOp::AddI, 1, 1, CTX_STRIDE);
    a.ri(AluOp::SubI, 2, 2, 1);
    a.b(init);
    a.bind(inited);
    a.ld(gp, SCHED, sched::CTX_BASE);
    a.b(resume);

    // ---- no blocks left: record it and halt
    a.bind(finished);
    a.mov_i(1, sched::STATUS_DONE as i32);
    a.st(1, SCHED, sched::STATUS);
    a.getcr(0, 0);
    a.b(halt_self);

    // ---- barrier(): s0 = barrier id; save the fiber and switch
    let barrier = a.here();
    a.st(sp, gp, ctx::SAVED_SP);
    a.st(ra, gp, ctx::SAVED_RA);
    a.st(0, gp, ctx::BARRIER_ID);
    a.mov_i(1, STATE_WAITING as i32);
    a.st(1, gp, ctx::STATE);

    // ---- switch to the next unfinished gang after gp's, or end the round
    let next_addr = a.here();
    a.bind(next);
    let (scan, end_round) = (a.label(), a.label());
    a.ld(SCHED, gp, ctx::SCHEDULER);
    a.ld(3, gp, ctx::GANG_INDEX);
    a.ld(4, SCHED, sched::GANGS);
    a.ld(5, SCHED, sched::CTX_BASE);
    a.bind(scan);
    a.ri(AluOp::AddI, 3, 3, 1);
    a.rr(AluOp::CmpGeU, 6, 3, 4);
    a.bnz(6, end_round);
    a.ri(AluOp::MullI, 7, 3, CTX_STRIDE);
    a.rr(AluOp::AddI, 7, 7, 5);
    a.ld(8, 7, ctx::STATE);
    a.ri(AluOp::CmpEqI, 6, 8, STATE_FINISHED as i32);
    a.bnz(6, scan);
    a.mov(gp, 7);
    a.b(resume);

    // End of a round: every unfinished gang waits at a barrier. s10 = first such
    // gang's record (0: none), s11 its id, s12 its index.
    a.bind(end_round);
    let (check, skip, checked, deadlock, compare) =
        (a.label(), a.label(), a.label(), a.label(), a.label());
    a.mov_i(3, 0);
    a.mov_i(10, 0);
    a.bind(check);
    a.rr(AluOp::CmpGeU, 6, 3, 4);
    a.bnz(6, checked);
    a.ri(AluOp::MullI, 7, 3, CTX_STRIDE);
    a.rr(AluOp::AddI, 7, 7, 5);
    a.ld(8, 7, ctx::STATE);
    a.ri(AluOp::CmpEqI, 6, 8, STATE_FINISHED as i32);
    a.bnz(6, skip);
    a.bnz(10, compare);
    a.mov(10, 7);
    a.ld(11, 7, ctx::BARRIER_ID);
    a.mov(12, 3);
    a.b(skip);
    a.bind(compare);
    a.ld(13, 7, ctx::BARRIER_ID);
    a.rr(AluOp::CmpEqI, 6, 13, 11);
    a.bz(6, deadlock);
    a.bind(skip);
    a.ri(AluOp::AddI, 3, 3, 1);
    a.b(check);
    a.bind(checked);
    a.bz(10, block_done);
    a.ld(1, SCHED, sched::BARRIERS);
    a.ri(AluOp::AddI, 1, 1, 1);
    a.st(1, SCHED, sched::BARRIERS);
    a.mov(gp, 10);
    a.b(resume);

    a.bind(deadlock);
    a.st(12, SCHED, sched::DEADLOCK_GANG_A);
    a.st(11, SCHED, sched::DEADLOCK_ID_A);
    a.st(3, SCHED, sched::DEADLOCK_GANG_B);
    a.st(13, SCHED, sched::DEADLOCK_ID_B);
    a.mov_i(1, sched::STATUS_DEADLOCK as i32);
    a.st(1, SCHED, sched::STATUS);
    a.rr(AluOp::Break, 0, 0, 0);

    // ---- resume the gang whose record is at gp
    a.bind(resume);
    a.ld(SCHED, gp, ctx::SCHEDULER);
    a.ld(1, gp, ctx::GANG_INDEX);
    a.st(1, SCHED, sched::CURRENT_GANG);
    a.mov_i(1, STATE_READY as i32);
    a.st(1, gp, ctx::STATE);
    a.ld(sp, gp, ctx::SAVED_SP);
    a.ld(ra, gp, ctx::SAVED_RA);
    a.b_reg(ra);

    // ---- trampoline: a gang's first resumption. Load the arguments, call the entry,
    // keep block 0 gang 0's result, finish.
    let tramp_addr = a.here();
    a.bind(trampoline);
    const PARAMS: Reg = 24;
    a.li(PARAMS, p.params);
    if p.stack_args_bytes > 0 {
        a.li(1, p.stack_args_bytes);
        a.rr(AluOp::SubI, sp, sp, 1);
    }
    // Stack words first (they use a scratch register), then the registers.
    for w in &p.args {
        match *w {
            ArgWord::Stack {
                stack_offset,
                param_offset,
            } => {
                a.ld(25, PARAMS, param_offset as i32);
                a.st(25, sp, stack_offset as i32);
            }
            ArgWord::MaskStack { stack_offset } => {
                a.ld(25, gp, ctx::EXISTS);
                a.st(25, sp, stack_offset as i32);
            }
            _ => {}
        }
    }
    for w in &p.args {
        match *w {
            ArgWord::Reg { reg, param_offset } => a.ld(reg, PARAMS, param_offset as i32),
            ArgWord::MaskReg { reg } => a.ld(reg, gp, ctx::EXISTS),
            _ => {}
        }
    }
    a.li(25, p.entry);
    a.emit(Inst::Branch {
        op: BranchOp::CallReg,
        reg: 25,
        offset: 0,
    });
    let keep = a.label();
    a.ld(SCHED, gp, ctx::SCHEDULER);
    a.ld(10, SCHED, sched::BLOCK);
    a.ld(11, gp, ctx::GANG_INDEX);
    a.rr(AluOp::Or, 10, 10, 11);
    a.bnz(10, keep);
    a.li(12, p.params);
    a.st(0, 12, 0);
    a.st(1, 12, 4);
    a.bind(keep);
    a.mov_i(1, STATE_FINISHED as i32);
    a.st(1, gp, ctx::STATE);
    a.b(next);

    let mut code = a.finish();
    // The trampoline's address for the scheduler's `li`.
    code[tramp_fixup] = Inst::MoveHi {
        dest: 8,
        imm: tramp_addr >> 13,
    };
    code[tramp_fixup + 1] = Inst::Imm {
        fmt: IFmt::S,
        op: AluOp::Or,
        dest: 8,
        src1: 8,
        imm: (tramp_addr & 0x1fff) as i32,
    };
    Runtime {
        code,
        barrier,
        trampoline: tramp_addr,
        next: next_addr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_does_not_depend_on_addresses() {
        let mut p = RuntimeParams {
            resume_mask: 0xf,
            args: vec![
                ArgWord::Reg {
                    reg: 0,
                    param_offset: 8,
                },
                ArgWord::MaskReg { reg: 1 },
            ],
            ..Default::default()
        };
        let small = generate(&p);
        p.resume_mask = 0xffff_ffff;
        p.thread_table = 0x00ff_ff00;
        p.params = 0x0080_0000;
        p.entry = 0x0001_0000;
        let big = generate(&p);
        assert_eq!(small.code.len(), big.code.len());
        assert_eq!(small.trampoline, big.trampoline);
        for i in &big.code {
            assert_eq!(i.check(), Ok(()), "{i:?}");
        }
    }
}
