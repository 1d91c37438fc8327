//! Functional simulator tests: tiny programs built from [`Inst`] values, run on a
//! small machine, checked against the upstream emulator's semantics (notes §3–§6).

#![allow(dead_code)] // helpers for the tests still to come

use super::*;

const MEM: u32 = 0x1_0000;
/// Scratch data area of the test programs.
const DATA: u32 = 0x8000;
/// The register the halt sequence clobbers; tests avoid it.
const HALT_REG: u8 = 29;

fn config() -> Config {
    Config {
        cores: 1,
        threads_per_core: 4,
        memory_size: MEM,
        max_instructions: 100_000,
    }
}

fn reg(fmt: RFmt, op: AluOp, dest: u8, src1: u8, src2: u8, mask: u8) -> Inst {
    Inst::Reg {
        fmt,
        op,
        dest,
        src1,
        src2,
        mask,
    }
}
fn sss(op: AluOp, d: u8, a: u8, b: u8) -> Inst {
    reg(RFmt::Sss, op, d, a, b, 0)
}
fn vvv(op: AluOp, d: u8, a: u8, b: u8) -> Inst {
    reg(RFmt::Vvv, op, d, a, b, 0)
}
fn vvs(op: AluOp, d: u8, a: u8, b: u8) -> Inst {
    reg(RFmt::Vvs, op, d, a, b, 0)
}
fn vvv_m(op: AluOp, d: u8, m: u8, a: u8, b: u8) -> Inst {
    reg(RFmt::VvvMask, op, d, a, b, m)
}
fn vvs_m(op: AluOp, d: u8, m: u8, a: u8, b: u8) -> Inst {
    reg(RFmt::VvsMask, op, d, a, b, m)
}
fn si(op: AluOp, d: u8, a: u8, imm: i32) -> Inst {
    Inst::Imm {
        fmt: IFmt::S,
        op,
        dest: d,
        src1: a,
        imm,
    }
}
fn vi(op: AluOp, d: u8, a: u8, imm: i32) -> Inst {
    Inst::Imm {
        fmt: IFmt::V,
        op,
        dest: d,
        src1: a,
        imm,
    }
}
fn vi_m(op: AluOp, d: u8, m: u8, a: u8, imm: i32) -> Inst {
    Inst::ImmMasked {
        op,
        dest: d,
        src1: a,
        mask: m,
        imm,
    }
}
/// `li d, v` as the assembler expands it (notes §3 I).
fn li(d: u8, v: u32) -> Vec<Inst> {
    let s = v as i32;
    if (-8192..8192).contains(&s) {
        return vec![si(AluOp::Move, d, 0, s)];
    }
    let mut out = vec![Inst::MoveHi {
        dest: d,
        imm: v >> 13,
    }];
    if v & 0x1fff != 0 {
        out.push(si(AluOp::Or, d, d, (v & 0x1fff) as i32));
    }
    out
}
fn mem(op: MemOp, load: bool, sd: u8, ptr: u8, offset: i32) -> Inst {
    Inst::Mem {
        op,
        load,
        srcdest: sd,
        ptr,
        mask: 0,
        offset,
    }
}
fn mem_m(op: MemOp, load: bool, sd: u8, mask: u8, ptr: u8, offset: i32) -> Inst {
    Inst::Mem {
        op,
        load,
        srcdest: sd,
        ptr,
        mask,
        offset,
    }
}
fn br(op: BranchOp, reg: u8, offset: i32) -> Inst {
    Inst::Branch { op, reg, offset }
}
fn getcr(d: u8, cr: u8) -> Inst {
    mem(MemOp::ControlReg, true, d, cr, 0)
}
fn setcr(s: u8, cr: u8) -> Inst {
    mem(MemOp::ControlReg, false, s, cr, 0)
}
/// Halts all threads (crt0's `halt_all_threads`).
fn halt() -> Vec<Inst> {
    vec![
        si(AluOp::Move, HALT_REG, 0, -1),
        setcr(HALT_REG, 20),
        br(BranchOp::Jump, 0, 0),
    ]
}

fn load(m: &mut Machine, at: u32, prog: &[Inst]) {
    let words: Vec<u32> = prog.iter().map(encode).collect();
    m.load_words(at, &words).unwrap();
}

/// Loads `prog` followed by the halt sequence at 0 and runs it to completion.
fn run(prog: &[Inst]) -> Machine {
    let mut m = try_run(prog).1;
    assert!(m.all_halted());
    m.set_quantum(DEFAULT_QUANTUM);
    m
}

fn try_run(prog: &[Inst]) -> (Result<Summary, Fault>, Machine) {
    let mut m = Machine::new(config());
    let mut p = prog.to_vec();
    p.extend(halt());
    load(&mut m, 0, &p);
    (m.run(), m)
}

fn fault(prog: &[Inst]) -> Fault {
    let (r, _) = try_run(prog);
    r.expect_err("expected a fault")
}

fn iota() -> [u32; 16] {
    std::array::from_fn(|i| i as u32)
}

fn read_words(m: &Machine, addr: u32, n: u32) -> Vec<u32> {
    m.read_bytes(addr, n * 4)
        .unwrap()
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

// ---------------------------------------------------------------------------------

#[test]
fn scalar_arithmetic() {
    use AluOp::*;
    let mut p = li(1, 0xdead_beef);
    p.extend(li(2, 7));
    p.extend(li(3, 0xffff_fff0)); // -16
    p.extend([
        sss(AddI, 4, 1, 2),
        sss(SubI, 5, 2, 1),
        sss(MullI, 6, 3, 2),
        sss(MulhU, 7, 1, 1),
        sss(MulhI, 8, 3, 1),
        sss(Ashr, 9, 3, 2),
        sss(Shr, 10, 3, 2),
        sss(Shl, 11, 2, 3), // shift amount & 31 = 16
        sss(Xor, 12, 1, 3),
        sss(And, 13, 1, 3),
        sss(Or, 14, 2, 3),
        sss(Clz, 15, 0, 2),
        sss(Ctz, 16, 0, 3),
        sss(Clz, 17, 0, 0),
        sss(Sext8, 18, 0, 1),
        sss(Sext16, 19, 0, 1),
        si(AddI, 20, 2, -8192),
        si(Ashr, 21, 3, 33), // & 31 = 1
        sss(Ctz, 22, 0, 0),
    ]);
    let m = run(&p);
    let s = |r| m.scalar_reg(0, r);
    assert_eq!(s(1), 0xdead_beef);
    assert_eq!(s(4), 0xdead_bef6);
    assert_eq!(s(5), 7u32.wrapping_sub(0xdead_beef));
    assert_eq!(s(6), (-112i32) as u32);
    assert_eq!(s(7), ((0xdead_beefu64 * 0xdead_beefu64) >> 32) as u32);
    assert_eq!(
        s(8),
        ((-16i64 * i64::from(0xdead_beefu32 as i32)) >> 32) as u32
    );
    assert_eq!(s(9), (-1i32) as u32);
    assert_eq!(s(10), 0xffff_fff0 >> 7);
    assert_eq!(s(11), 7 << 16);
    assert_eq!(s(12), 0xdead_beef ^ 0xffff_fff0);
    assert_eq!(s(13), 0xdead_bee0);
    assert_eq!(s(14), 0xffff_fff7);
    assert_eq!(s(15), 29);
    assert_eq!(s(16), 4);
    assert_eq!(s(17), 32);
    assert_eq!(s(18), 0xffff_ffef);
    assert_eq!(s(19), 0xffff_beef);
    assert_eq!(s(20), (7 - 8192i32) as u32);
    assert_eq!(s(21), (-8i32) as u32);
    assert_eq!(s(22), 32);
}

#[test]
fn movehi_and_li() {
    let mut p = li(9, 0xdead_beef);
    p.push(Inst::MoveHi { dest: 10, imm: 7 });
    let m = run(&p);
    assert_eq!(m.scalar_reg(0, 9), 0xdead_beef);
    assert_eq!(m.scalar_reg(0, 10), 7 << 13);
}

#[test]
fn branches_and_calls() {
    use AluOp::*;
    // 0: move s1, 0
    // 1: bz s1, +2      -> 3 (taken)
    // 2: move s2, 99    (skipped)
    // 3: bnz s1, +2     (not taken)
    // 4: call +3        -> 7, s31 = 20
    // 5: move s4, 5
    // 6: b +4           -> 10 (halt)
    // 7: move s3, 3
    // 8: b s31          -> 5 (ret)
    // 9: move s2, 98    (never)
    let p = vec![
        si(Move, 1, 0, 0),
        br(BranchOp::Bz, 1, 2),
        si(Move, 2, 0, 99),
        br(BranchOp::Bnz, 1, 2),
        br(BranchOp::Call, 0, 3),
        si(Move, 4, 0, 5),
        br(BranchOp::Jump, 0, 4),
        si(Move, 3, 0, 3),
        br(BranchOp::Reg, 31, 0),
        si(Move, 2, 0, 98),
    ];
    let m = run(&p);
    assert_eq!(m.scalar_reg(0, 2), 0);
    assert_eq!(m.scalar_reg(0, 3), 3);
    assert_eq!(m.scalar_reg(0, 4), 5);
    assert_eq!(m.scalar_reg(0, 31), 20);
}

#[test]
fn scalar_loads_and_stores() {
    use MemOp::*;
    let mut p = li(1, DATA);
    p.extend(li(2, 0x8180_fffe));
    p.extend([
        mem(W32, false, 2, 1, 0),
        mem(U8, true, 3, 1, 1),
        mem(S8, true, 4, 1, 3),
        mem(U16, true, 5, 1, 2),
        mem(S16, true, 6, 1, 2),
        mem(W32, true, 7, 1, 0),
        mem(U8, false, 2, 1, 8),
        mem(S16, false, 2, 1, 10),
        mem(W32, true, 8, 1, 8),
    ]);
    let m = run(&p);
    assert_eq!(m.scalar_reg(0, 3), 0xff);
    assert_eq!(m.scalar_reg(0, 4), 0xffff_ff81);
    assert_eq!(m.scalar_reg(0, 5), 0x8180);
    assert_eq!(m.scalar_reg(0, 6), 0xffff_8180);
    assert_eq!(m.scalar_reg(0, 7), 0x8180_fffe);
    assert_eq!(m.scalar_reg(0, 8), 0xfffe_00fe);
    assert_eq!(m.read_bytes(DATA, 4).unwrap(), &[0xfe, 0xff, 0x80, 0x81]);
}

#[test]
fn halting_all_threads_ends_run() {
    let mut m = Machine::new(config());
    load(&mut m, 0, &halt());
    assert!(m.is_running(0) && !m.is_running(1));
    let s = m.run().unwrap();
    assert!(m.all_halted());
    assert_eq!(s.instructions, 2);
    assert_eq!(m.stats().retired, 2);
}

#[test]
fn console_output() {
    let mut p = li(1, 0xffff_0048);
    for c in b"hi\n" {
        p.push(si(AluOp::Move, 2, 0, i32::from(*c)));
        p.push(mem(MemOp::W32, false, 2, 1, 0));
    }
    let m = run(&p);
    assert_eq!(m.console(), b"hi\n");
}
