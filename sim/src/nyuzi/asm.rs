//! Instruction builders for hand-assembled Nyuzi programs: one short constructor per
//! [`Inst`] form, and `li` as the toolchain's assembler expands it (notes §3 I). Shared
//! by the simulator's tests and the benchmarks so that every hand-written program is
//! spelled the same way; not a stable API (the compiler's back end has its own emitter).

use super::isa::{AluOp, BranchOp, IFmt, Inst, MemOp, RFmt, Reg};

/// A register-form instruction; `mask` matters only in the masked formats.
pub fn reg(fmt: RFmt, op: AluOp, dest: Reg, src1: Reg, src2: Reg, mask: Reg) -> Inst {
    Inst::Reg {
        fmt,
        op,
        dest,
        src1,
        src2,
        mask,
    }
}

/// A register-form instruction without a mask.
pub fn rr(fmt: RFmt, op: AluOp, dest: Reg, src1: Reg, src2: Reg) -> Inst {
    reg(fmt, op, dest, src1, src2, 0)
}

/// `op sD, sA, imm` (scalar immediate form).
pub fn si(op: AluOp, dest: Reg, src1: Reg, imm: i32) -> Inst {
    Inst::Imm {
        fmt: IFmt::S,
        op,
        dest,
        src1,
        imm,
    }
}

/// `op vD, vA, imm` (vector immediate form).
pub fn vi(op: AluOp, dest: Reg, src1: Reg, imm: i32) -> Inst {
    Inst::Imm {
        fmt: IFmt::V,
        op,
        dest,
        src1,
        imm,
    }
}

/// `op vD{vM}, vA, imm` (masked vector immediate form).
pub fn vi_m(op: AluOp, dest: Reg, mask: Reg, src1: Reg, imm: i32) -> Inst {
    Inst::ImmMasked {
        op,
        dest,
        src1,
        mask,
        imm,
    }
}

/// `sD = v` as the assembler expands `li`: one `move` when `v` fits 14 signed bits,
/// else `movehi` and an `or` of the low 13 bits (left out when they are zero).
pub fn li(dest: Reg, v: u32) -> Vec<Inst> {
    let s = v as i32;
    if (-8192..8192).contains(&s) {
        return vec![si(AluOp::Move, dest, 0, s)];
    }
    let mut out = vec![Inst::MoveHi { dest, imm: v >> 13 }];
    if v & 0x1fff != 0 {
        out.push(si(AluOp::Or, dest, dest, (v & 0x1fff) as i32));
    }
    out
}

/// A memory access with lane mask register `mask` (ignored by unmasked ops).
pub fn mem_m(op: MemOp, load: bool, srcdest: Reg, mask: Reg, ptr: Reg, offset: i32) -> Inst {
    Inst::Mem {
        op,
        load,
        srcdest,
        ptr,
        mask,
        offset,
    }
}

/// An unmasked memory access.
pub fn mem(op: MemOp, load: bool, srcdest: Reg, ptr: Reg, offset: i32) -> Inst {
    mem_m(op, load, srcdest, 0, ptr, offset)
}

/// `getcr` (`load`) or `setcr` of control register `index` from/to `reg`.
pub fn cr(load: bool, reg: Reg, index: Reg) -> Inst {
    mem(MemOp::ControlReg, load, reg, index, 0)
}

/// A branch `offset` words from its own address.
pub fn br(op: BranchOp, reg: Reg, offset: i32) -> Inst {
    Inst::Branch { op, reg, offset }
}

/// Appends a branch to instruction index `target` of `p`.
pub fn br_to(p: &mut Vec<Inst>, op: BranchOp, reg: Reg, target: usize) {
    let offset = target as i32 - p.len() as i32;
    p.push(br(op, reg, offset));
}

/// Appends `body` as a streaming loop and the end of a pass: the body runs while
/// s1 < s2, with s1 (source) and s3 (destination) advanced by 64 bytes after each run
/// (s4 is clobbered); then s20 (passes left) counts down and, while not zero, the pass
/// restarts at instruction index `pass_start`. The benchmarks' inner loops.
pub fn stream_passes(p: &mut Vec<Inst>, pass_start: usize, body: &[Inst]) {
    use AluOp::*;
    let inner = p.len();
    p.extend_from_slice(body);
    p.extend([
        si(AddI, 1, 1, 64),
        si(AddI, 3, 3, 64),
        rr(RFmt::Sss, CmpLtU, 4, 1, 2),
    ]);
    br_to(p, BranchOp::Bnz, 4, inner);
    p.push(si(SubI, 20, 20, 1));
    br_to(p, BranchOp::Bnz, 20, pass_start);
}
