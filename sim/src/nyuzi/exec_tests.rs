//! Functional simulator tests: tiny programs built from [`Inst`] values, run on a
//! small machine, checked against the upstream emulator's semantics (notes §3–§6).

use super::asm::{br, cr, li, mem, mem_m, reg, si, vi, vi_m};
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
fn getcr(d: u8, index: u8) -> Inst {
    cr(true, d, index)
}
fn setcr(s: u8, index: u8) -> Inst {
    cr(false, s, index)
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
    let (r, mut m) = try_run(prog);
    if let Err(e) = r {
        panic!("unexpected fault: {e}");
    }
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

/// Runs `prog` with vector registers preset on thread 0.
fn run_with(vregs: &[(u8, [u32; 16])], sregs: &[(u8, u32)], prog: &[Inst]) -> Machine {
    let mut m = Machine::new(config());
    for &(r, v) in vregs {
        m.set_vector_reg(0, r, v);
    }
    for &(r, v) in sregs {
        m.set_scalar_reg(0, r, v);
    }
    let mut p = prog.to_vec();
    p.extend(halt());
    load(&mut m, 0, &p);
    m.run().unwrap();
    m
}

fn f(x: f32) -> u32 {
    x.to_bits()
}
fn fv(v: [f32; 16]) -> [u32; 16] {
    v.map(f32::to_bits)
}

#[test]
fn vector_arithmetic_forms() {
    use AluOp::*;
    let a = iota();
    let b: [u32; 16] = std::array::from_fn(|i| 100 * i as u32 + 1);
    let m = run_with(
        &[(1, a), (2, b)],
        &[(3, 1000)],
        &[
            vvv(AddI, 4, 1, 2),
            vvs(SubI, 5, 1, 3),
            vi(Shl, 6, 1, 2),
            vvs(Move, 7, 0, 3),
            vvv(Xor, 8, 1, 2),
            vvv(MullI, 9, 1, 2),
        ],
    );
    let v = |r| m.vector_reg(0, r);
    assert_eq!(v(4), std::array::from_fn(|i| a[i] + b[i]));
    assert_eq!(v(5), std::array::from_fn(|i| a[i].wrapping_sub(1000)));
    assert_eq!(v(6), std::array::from_fn(|i| a[i] << 2));
    assert_eq!(v(7), [1000; 16]);
    assert_eq!(v(8), std::array::from_fn(|i| a[i] ^ b[i]));
    assert_eq!(v(9), std::array::from_fn(|i| a[i] * b[i]));
}

#[test]
fn masked_forms_merge_into_old_dest() {
    use AluOp::*;
    let old = [0xdead_0000u32; 16];
    let a = iota();
    let mask = 0b1010_0000_1100_0101u32;
    let pick = |r: [u32; 16]| -> [u32; 16] {
        std::array::from_fn(|i| if mask >> i & 1 != 0 { r[i] } else { old[i] })
    };
    let m = run_with(
        &[(1, a), (4, old), (5, old), (6, old), (7, old), (8, old)],
        // Bits above 15 of the mask register are ignored.
        &[(2, mask | 0xffff_0000), (3, 7)],
        &[
            vvv_m(AddI, 4, 2, 1, 1),
            vvs_m(AddI, 5, 2, 1, 3),
            vi_m(AddI, 6, 2, 1, -79),
            vvs_m(Move, 7, 2, 0, 3),
            vvv_m(Shuffle, 8, 2, 1, 1),
        ],
    );
    let v = |r| m.vector_reg(0, r);
    assert_eq!(v(4), pick(std::array::from_fn(|i| 2 * a[i])));
    assert_eq!(v(5), pick(std::array::from_fn(|i| a[i] + 7)));
    assert_eq!(v(6), pick(std::array::from_fn(|i| a[i].wrapping_sub(79))));
    assert_eq!(v(7), pick([7; 16]));
    assert_eq!(v(8), pick(a));
    let st = m.stats();
    assert_eq!(st.masked, 5);
    assert_eq!(st.vector, 5);
    assert_eq!(st.vector_lane_slots, 80);
    assert_eq!(st.active_lanes, 5 * u64::from(mask.count_ones()));
}

#[test]
fn float_arithmetic_and_nan_canonicalization() {
    use AluOp::*;
    let a = fv(std::array::from_fn(|i| i as f32 * 1.5 - 4.0));
    let b = fv(std::array::from_fn(|i| 0.25 + i as f32));
    let specials = [f32::INFINITY, f32::NAN, 0.0, f32::from_bits(0xffc0_0001)]
        .iter()
        .cycle()
        .take(16)
        .map(|x| x.to_bits())
        .collect::<Vec<_>>();
    let sp: [u32; 16] = specials.try_into().unwrap();
    let m = run_with(
        &[(1, a), (2, b), (3, sp)],
        &[(4, f(f32::INFINITY)), (5, f(1.0))],
        &[
            vvv(AddF, 6, 1, 2),
            vvv(SubF, 7, 1, 2),
            vvv(MulF, 8, 1, 2),
            sss(SubF, 9, 4, 4),  // inf - inf = NaN
            vvs(MulF, 10, 3, 5), // NaN payloads canonicalize
            vvs(AddF, 11, 3, 4), // inf + inf = inf, NaN stays NaN
            sss(MulF, 12, 4, 0), // inf * 0 (s0 = 0) = NaN
        ],
    );
    let v = |r| m.vector_reg(0, r);
    let fa = a.map(f32::from_bits);
    let fb = b.map(f32::from_bits);
    assert_eq!(v(6), std::array::from_fn(|i| f(fa[i] + fb[i])));
    assert_eq!(v(7), std::array::from_fn(|i| f(fa[i] - fb[i])));
    assert_eq!(v(8), std::array::from_fn(|i| f(fa[i] * fb[i])));
    assert_eq!(m.scalar_reg(0, 9), 0x7fff_ffff);
    assert_eq!(m.scalar_reg(0, 12), 0x7fff_ffff);
    let expect10 = [f(f32::INFINITY), 0x7fff_ffff, f(0.0), 0x7fff_ffff];
    let expect11 = [f(f32::INFINITY), 0x7fff_ffff, f(f32::INFINITY), 0x7fff_ffff];
    for i in 0..16 {
        assert_eq!(v(10)[i], expect10[i % 4], "lane {i}");
        assert_eq!(v(11)[i], expect11[i % 4], "lane {i}");
    }
}

#[test]
fn reciprocal_estimate() {
    // Input truncated to 6 mantissa bits, result truncated to 6 bits (& 0xfffe0000).
    let cases: &[(u32, u32)] = &[
        (f(2.0), f(0.5)),
        (f(3.0), 0x3eaa_0000),
        (0x3f8c_cccd, 0x3f6a_0000), // 1.1 -> 1/1.09375
        (f(-4.0), f(-0.25)),
        (f(0.0), f(f32::INFINITY)),
        (f(-0.0), f(f32::NEG_INFINITY)),
        (f(f32::INFINITY), f(0.0)),
        (0x7fc0_0000, 0x7fff_ffff),
    ];
    let vin: [u32; 16] = std::array::from_fn(|i| cases[i % cases.len()].0);
    let mut p = Vec::new();
    for (i, &(x, _)) in cases.iter().enumerate() {
        p.extend(li(1, x));
        p.push(sss(AluOp::Reciprocal, 2 + i as u8, 0, 1));
    }
    p.push(vvv(AluOp::Reciprocal, 3, 0, 2));
    let m = run_with(&[(2, vin)], &[], &p);
    for (i, &(x, want)) in cases.iter().enumerate() {
        assert_eq!(m.scalar_reg(0, 2 + i as u8), want, "reciprocal({x:#x})");
    }
    let vr = m.vector_reg(0, 3);
    for i in 0..16 {
        assert_eq!(vr[i], cases[i % cases.len()].1);
    }
}

#[test]
fn ftoi_and_itof() {
    use AluOp::*;
    let cases: &[(u32, u32)] = &[
        (f(-2.7), (-2i32) as u32),
        (f(2.99), 2),
        (f(-0.5), 0),
        (f(f32::NAN), 0x8000_0000),
        (f(3e9), 0x8000_0000),
        (f(-3e9), 0x8000_0000),
        (f(-2_147_483_648.0), 0x8000_0000),
        (f(16_777_216.0), 16_777_216),
    ];
    let mut p = Vec::new();
    for (i, &(x, _)) in cases.iter().enumerate() {
        p.extend(li(1, x));
        p.push(sss(Ftoi, 2 + i as u8, 0, 1));
    }
    p.extend(li(1, (-5i32) as u32));
    p.push(sss(Itof, 20, 0, 1));
    p.extend(li(1, 0x7fff_ffff));
    p.push(sss(Itof, 21, 0, 1));
    p.extend(li(1, 16_777_217));
    p.push(sss(Itof, 22, 0, 1));
    p.push(vvv(Itof, 5, 0, 4));
    p.push(vvs(Ftoi, 6, 0, 1));
    let m = run_with(&[(4, iota())], &[], &p);
    for (i, &(x, want)) in cases.iter().enumerate() {
        assert_eq!(m.scalar_reg(0, 2 + i as u8), want, "ftoi({x:#x})");
    }
    assert_eq!(m.scalar_reg(0, 20), f(-5.0));
    assert_eq!(m.scalar_reg(0, 21), 0x4f00_0000);
    assert_eq!(m.scalar_reg(0, 22), f(16_777_216.0)); // round to nearest even
    assert_eq!(m.vector_reg(0, 5), iota().map(|i| f(i as f32)));
    // ftoi of the integer 16777217's bit pattern (a tiny float) is 0.
    assert_eq!(m.vector_reg(0, 6), [0; 16]);
}

#[test]
fn compares_make_masks() {
    use AluOp::*;
    let a: [u32; 16] = std::array::from_fn(|i| (i as i32 - 8) as u32);
    let fa = fv(std::array::from_fn(|i| i as f32 - 8.0));
    let mut fnan = fa;
    fnan[3] = 0x7fc0_0000;
    let m = run_with(
        &[(1, a), (2, iota()), (3, fnan)],
        &[
            (4, 0),
            (5, 5),
            (6, (-1i32) as u32),
            (7, f(0.0)),
            (8, 0x0f0f),
        ],
        &[
            vvs(CmpLtI, 10, 1, 4),      // signed a < 0: lanes 0..8
            vvs(CmpLtU, 11, 1, 5),      // unsigned a < 5: lanes 8..13
            vvv(CmpEqI, 12, 1, 2),      // never equal
            vi(CmpGeI, 13, 2, 14),      // lanes 14, 15
            vvs(CmpGtF, 14, 3, 7),      // lanes 9..15
            vvs(CmpNeF, 15, 3, 7),      // all but lane 8, and NaN lane 3 is "ne"
            vvs_m(CmpLeI, 16, 8, 2, 5), // the mask is ignored: lanes 0..=5
            sss(CmpGtI, 17, 5, 6),      // 5 > -1 signed: 0xffff
            sss(CmpGtU, 18, 5, 6),      // 5 > 0xffffffff unsigned: 0
            si(CmpEqI, 19, 5, 5),       // 0xffff
            vi_m(CmpEqI, 20, 8, 2, 3),  // masked immediate compare: lane 3
            sss(CmpEqF, 21, 7, 7),
        ],
    );
    let s = |r| m.scalar_reg(0, r);
    assert_eq!(s(10), 0x00ff);
    assert_eq!(s(11), 0x1f00);
    assert_eq!(s(12), 0);
    assert_eq!(s(13), 0xc000);
    assert_eq!(s(14), 0xfe00);
    assert_eq!(s(15), 0xfeff);
    assert_eq!(s(16), 0x003f);
    assert_eq!(s(17), 0xffff);
    assert_eq!(s(18), 0);
    assert_eq!(s(19), 0xffff);
    assert_eq!(s(20), 0x0008);
    assert_eq!(s(21), 0xffff);
}

#[test]
fn getlane_and_shuffle() {
    use AluOp::*;
    let a: [u32; 16] = std::array::from_fn(|i| 0x100 + i as u32);
    let idx: [u32; 16] = std::array::from_fn(|i| (15 - i as u32) | 0xf0);
    let m = run_with(
        &[(1, a), (2, idx)],
        &[(3, 0x25)],
        &[
            vvs(GetLane, 4, 1, 3), // 0x25 & 15 = 5
            vi(GetLane, 5, 1, 18), // 18 & 15 = 2
            vvv(Shuffle, 6, 1, 2),
        ],
    );
    assert_eq!(m.scalar_reg(0, 4), 0x105);
    assert_eq!(m.scalar_reg(0, 5), 0x102);
    assert_eq!(
        m.vector_reg(0, 6),
        std::array::from_fn(|i| 0x10f - i as u32)
    );
}

#[test]
fn block_loads_and_stores() {
    use MemOp::*;
    let mut m = Machine::new(config());
    let data: Vec<u32> = (0..32).map(|i| 0x5000 + i).collect();
    m.load_words(DATA, &data).unwrap();
    m.set_vector_reg(0, 2, [0xaaaa; 16]);
    m.set_vector_reg(0, 3, [0xbbbb; 16]);
    m.set_scalar_reg(0, 1, DATA);
    m.set_scalar_reg(0, 4, 0x00f3);
    m.set_scalar_reg(0, 5, 0);
    let mut p = vec![
        mem(Block, true, 1, 1, 64),
        mem_m(BlockMask, true, 2, 4, 1, 0),
        mem(Block, false, 3, 1, 128),
        mem_m(BlockMask, false, 2, 4, 1, 192),
        mem_m(BlockMask, false, 3, 5, 1, 192), // empty mask: no store
    ];
    p.extend(halt());
    load(&mut m, 0, &p);
    m.run().unwrap();
    assert_eq!(
        m.vector_reg(0, 1),
        std::array::from_fn(|i| 0x5010 + i as u32)
    );
    let want2: [u32; 16] = std::array::from_fn(|i| {
        if 0xf3 >> i & 1 != 0 {
            0x5000 + i as u32
        } else {
            0xaaaa
        }
    });
    assert_eq!(m.vector_reg(0, 2), want2);
    assert_eq!(read_words(&m, DATA + 128, 16), vec![0xbbbb; 16]);
    let stored: Vec<u32> = (0..16)
        .map(|i| if 0xf3 >> i & 1 != 0 { want2[i] } else { 0 })
        .collect();
    assert_eq!(read_words(&m, DATA + 192, 16), stored);
}

#[test]
fn block_access_must_be_64_byte_aligned() {
    let mut p = li(1, DATA + 4);
    p.push(mem(MemOp::Block, true, 1, 1, 0));
    let e = fault(&p);
    assert_eq!(e.kind, FaultKind::Misaligned);
    assert_eq!(e.address, Some(DATA + 4));
    assert_eq!(e.pc, 4 * (p.len() as u32 - 1));
    // A masked store with an empty mask still checks alignment, as upstream does.
    let mut p = li(1, DATA + 32);
    p.push(mem_m(MemOp::BlockMask, false, 1, 2, 1, 0));
    assert_eq!(fault(&p).kind, FaultKind::Misaligned);
}

#[test]
fn gather_and_scatter_with_masks() {
    use MemOp::*;
    let mut m = Machine::new(config());
    let data: Vec<u32> = (0..16).map(|i| 0x7000 + i).collect();
    m.load_words(DATA, &data).unwrap();
    // Reverse order pointers, 4 bytes below their targets (offset +4).
    let ptrs: [u32; 16] = std::array::from_fn(|i| DATA + 4 * (15 - i as u32) - 4);
    let mut bad = ptrs;
    bad[1] = 0x4000_0001; // inactive lane: misaligned and out of range
    bad[3] = 3;
    m.set_vector_reg(0, 1, ptrs);
    m.set_vector_reg(0, 2, bad);
    m.set_vector_reg(0, 4, [0xcccc; 16]);
    m.set_vector_reg(0, 5, std::array::from_fn(|i| 0x9000 + i as u32));
    m.set_scalar_reg(0, 6, 0xfff5); // lanes 1 and 3 off
    let mut p = vec![
        mem(Gather, true, 3, 1, 4),
        mem_m(GatherMask, true, 4, 6, 2, 4),
        mem_m(GatherMask, false, 5, 6, 2, 4 + 0x100),
    ];
    p.extend(halt());
    load(&mut m, 0, &p);
    let s = m.run().unwrap();
    assert_eq!(
        m.vector_reg(0, 3),
        std::array::from_fn(|i| 0x700f - i as u32)
    );
    let want4: [u32; 16] = std::array::from_fn(|i| {
        if i == 1 || i == 3 {
            0xcccc
        } else {
            0x700f - i as u32
        }
    });
    assert_eq!(m.vector_reg(0, 4), want4);
    let scattered = read_words(&m, DATA + 0x100, 16);
    for lane in 0..16u32 {
        let at = (15 - lane) as usize;
        let want = if lane == 1 || lane == 3 {
            0
        } else {
            0x9000 + lane
        };
        assert_eq!(scattered[at], want, "lane {lane}");
    }
    // Upstream counts each gather/scatter as 16 instructions.
    assert_eq!(s.emulator_instructions, s.instructions + 3 * 15);
}

#[test]
fn gather_active_lane_faults() {
    let mut m = Machine::new(config());
    let mut ptrs = [DATA; 16];
    ptrs[7] = DATA + 2;
    m.set_vector_reg(0, 1, ptrs);
    m.set_scalar_reg(0, 2, 0x0080);
    let mut p = vec![mem_m(MemOp::GatherMask, true, 3, 2, 1, 0)];
    p.extend(halt());
    load(&mut m, 0, &p);
    let e = m.run().unwrap_err();
    assert_eq!(e.kind, FaultKind::Misaligned);
    assert_eq!(e.address, Some(DATA + 2));
    let mut m = Machine::new(config());
    ptrs[7] = MEM;
    m.set_vector_reg(0, 1, ptrs);
    load(&mut m, 0, &[mem(MemOp::Gather, true, 3, 1, 0)]);
    let e = m.run().unwrap_err();
    assert_eq!((e.kind, e.address), (FaultKind::OutOfRange, Some(MEM)));
}

#[test]
fn load_sync_store_sync() {
    use MemOp::*;
    let mut p = li(1, DATA);
    p.extend(li(2, 0x1234));
    p.extend([
        // Success: reservation intact.
        mem(Sync, true, 3, 1, 0),
        si(AluOp::Move, 4, 2, 0),
        sss(AluOp::Move, 4, 0, 2),
        mem(Sync, false, 4, 1, 0),
        // Failure: a plain store to the same 64-byte line breaks the reservation.
        mem(Sync, true, 5, 1, 0),
        mem(W32, false, 2, 1, 60),
        si(AluOp::Move, 6, 0, 77),
        mem(Sync, false, 6, 1, 0),
        // Failure: no reservation for that line.
        si(AluOp::Move, 7, 0, 88),
        mem(Sync, false, 7, 1, 64),
    ]);
    let m = run(&p);
    assert_eq!(m.scalar_reg(0, 3), 0);
    assert_eq!(m.scalar_reg(0, 4), 1);
    assert_eq!(m.scalar_reg(0, 5), 0x1234);
    assert_eq!(m.scalar_reg(0, 6), 0);
    assert_eq!(m.scalar_reg(0, 7), 0);
    assert_eq!(read_words(&m, DATA, 1), vec![0x1234]);
    assert_eq!(read_words(&m, DATA + 64, 1), vec![0]);
}

#[test]
fn control_registers() {
    let mut p = vec![
        getcr(1, 0),
        getcr(2, 6),
        getcr(3, 6),
        getcr(4, 4),
        si(AluOp::Move, 5, 0, 1234),
        setcr(5, 11),
        getcr(6, 11),
        getcr(7, 18), // unimplemented: all ones
    ];
    p.extend(li(8, 0));
    let m = run(&p);
    assert_eq!(m.scalar_reg(0, 1), 0);
    assert_eq!(m.scalar_reg(0, 2), 2); // counts the current instruction
    assert_eq!(m.scalar_reg(0, 3), 3);
    assert_eq!(m.scalar_reg(0, 4), 4); // supervisor
    assert_eq!(m.scalar_reg(0, 6), 1234);
    assert_eq!(m.scalar_reg(0, 7), 0xffff_ffff);
}

/// Thread 0 resumes all threads; every thread stores its id and halts itself.
fn thread_program() -> Vec<Inst> {
    use AluOp::*;
    let mut p = vec![
        getcr(1, 0),
        br(BranchOp::Bnz, 1, 3),
        si(Move, 2, 0, -1),
        setcr(2, 21),
        si(Shl, 3, 1, 2),
    ];
    p.extend(li(4, DATA));
    p.extend([
        sss(AddI, 4, 4, 3),
        si(AddI, 5, 1, 100),
        mem(MemOp::W32, false, 5, 4, 0),
        si(Move, 6, 0, 1),
        sss(Shl, 6, 6, 1),
        setcr(6, 20),
        br(BranchOp::Jump, 0, 0),
    ]);
    p
}

#[test]
fn threads_resume_and_halt() {
    for quantum in [1, 3, DEFAULT_QUANTUM] {
        for (cores, tpc) in [(1, 4), (2, 4), (1, 1)] {
            let mut m = Machine::new(Config {
                cores,
                threads_per_core: tpc,
                ..config()
            });
            m.set_quantum(quantum);
            load(&mut m, 0, &thread_program());
            m.run().unwrap();
            assert!(m.all_halted());
            let n = cores * tpc;
            assert_eq!(m.hw_threads(), n as usize);
            let want: Vec<u32> = (0..n).map(|t| 100 + t).collect();
            assert_eq!(read_words(&m, DATA, n), want, "quantum {quantum}");
            assert_eq!(read_words(&m, DATA + 4 * n, 1), vec![0]);
        }
    }
}

#[test]
fn self_modifying_code_is_refetched() {
    use AluOp::*;
    // 0..: s1 = address of the patched word, s2 = the new word `move s3, 2`.
    let patched = si(Move, 3, 0, 2);
    let mut p = li(2, encode(&patched));
    let at = 4 * (p.len() as u32 + 5);
    p.extend([
        si(Move, 1, 0, at as i32),
        si(Move, 4, 0, 0),
        // loop: patch, then run the patched word on the second pass
        br(BranchOp::Jump, 0, 3),
        mem(MemOp::W32, false, 2, 1, 0),
        br(BranchOp::Jump, 0, 1),
        si(Move, 3, 0, 1), // <- `at`; becomes `move s3, 2`
        si(AddI, 4, 4, 1),
        si(CmpEqI, 5, 4, 2),
        br(BranchOp::Bz, 5, -5),
    ]);
    assert_eq!(decode(encode(&p[p.len() - 4])).unwrap(), si(Move, 3, 0, 1));
    let m = run(&p);
    assert_eq!(m.scalar_reg(0, 4), 2);
    assert_eq!(m.scalar_reg(0, 3), 2);
}

#[test]
fn faults_of_every_kind() {
    // Illegal instruction (R format 3).
    let mut m = Machine::new(config());
    m.load_words(0, &[0, 0xcc00_0000]).unwrap();
    let e = m.run().unwrap_err();
    assert_eq!(e.kind, FaultKind::IllegalInstruction(0xcc00_0000));
    assert_eq!((e.pc, e.thread), (4, 0));
    assert_eq!(m.pc(0), 4);
    // Upstream's reserved breakpoint word is illegal too.
    let mut m = Machine::new(config());
    m.load_words(0, &[0x707f_ffff]).unwrap();
    assert_eq!(
        m.run().unwrap_err().kind,
        FaultKind::IllegalInstruction(0x707f_ffff)
    );
    // Misaligned scalar access and pc.
    let e = fault(&[si(AluOp::Move, 1, 0, 2), mem(MemOp::W32, true, 2, 1, 0)]);
    assert_eq!((e.kind, e.address), (FaultKind::Misaligned, Some(2)));
    let e = fault(&[si(AluOp::Move, 1, 0, 2), br(BranchOp::Reg, 1, 0)]);
    assert_eq!(
        (e.kind, e.pc, e.address),
        (FaultKind::Misaligned, 2, Some(2))
    );
    // Out of range data access, fetch, bad MMIO width, dflush.
    let mut p = li(1, MEM);
    p.push(mem(MemOp::U8, true, 2, 1, 0));
    assert_eq!(fault(&p).kind, FaultKind::OutOfRange);
    let mut p = li(1, MEM);
    p.push(br(BranchOp::Reg, 1, 0));
    let e = fault(&p);
    assert_eq!((e.kind, e.pc), (FaultKind::OutOfRange, MEM));
    let mut p = li(1, 0xffff_0048);
    p.push(mem(MemOp::U8, false, 2, 1, 0));
    assert_eq!(fault(&p).kind, FaultKind::OutOfRange);
    let mut p = li(1, MEM);
    p.push(Inst::Cache {
        op: CacheOp::DFlush,
        ptr: 1,
        phys: 0,
        offset: 0,
        low: 0,
    });
    assert_eq!(fault(&p).kind, FaultKind::OutOfRange);
    // break and syscall.
    let e = fault(&[sss(AluOp::Break, 0, 0, 0)]);
    assert_eq!((e.kind, e.pc), (FaultKind::Breakpoint, 0));
    let e = fault(&[NOP, si(AluOp::Syscall, 0, 0, 17)]);
    assert_eq!((e.kind, e.pc), (FaultKind::Syscall(17), 4));
    // Leaving supervisor mode makes control registers privileged.
    let e = fault(&[si(AluOp::Move, 1, 0, 0), setcr(1, 4), getcr(2, 0)]);
    assert_eq!((e.kind, e.pc), (FaultKind::PrivilegeViolation, 8));
    // Stepping a thread that is not running.
    let mut m = Machine::new(config());
    assert_eq!(m.step(1).unwrap_err().kind, FaultKind::NotRunning);
    assert_eq!(m.step(99).unwrap_err().kind, FaultKind::NotRunning);
    // The message names pc, thread and address.
    let text = Fault {
        kind: FaultKind::OutOfRange,
        pc: 0x40,
        thread: 2,
        address: Some(0x0100_0000),
    }
    .to_string();
    assert!(
        text.contains("0x00000040") && text.contains("thread 2") && text.contains("0x01000000")
    );
}

#[test]
fn instruction_limit_stops_infinite_loops() {
    let mut m = Machine::new(Config {
        max_instructions: 1000,
        ..config()
    });
    load(&mut m, 0, &[br(BranchOp::Jump, 0, 0)]);
    let e = m.run().unwrap_err();
    assert_eq!(e.kind, FaultKind::InstructionLimit);
    assert_eq!(m.stats().retired, 1000);
    assert_eq!(m.step(0).unwrap_err().kind, FaultKind::InstructionLimit);
}

#[test]
fn mmio_reads_return_zero() {
    let mut p = li(1, 0xffff_0040);
    p.push(si(AluOp::Move, 2, 0, 5));
    p.push(mem(MemOp::W32, true, 2, 1, 0));
    p.push(mem(MemOp::W32, false, 1, 1, 0x100)); // ignored device store
    let m = run(&p);
    assert_eq!(m.scalar_reg(0, 2), 0);
    assert!(m.console().is_empty());
}

#[test]
fn step_describes_each_instruction() {
    use AluOp::*;
    let mut m = Machine::new(config());
    m.set_scalar_reg(0, 1, DATA);
    m.set_scalar_reg(0, 2, 0x0f0f);
    m.set_vector_reg(0, 3, std::array::from_fn(|i| DATA + 4 * i as u32));
    let prog = [
        vvv_m(AddF, 4, 2, 4, 4),
        mem(MemOp::Block, true, 5, 1, 64),
        mem_m(MemOp::GatherMask, false, 5, 2, 3, 0),
        mem(MemOp::S16, true, 6, 1, 2),
        br(BranchOp::Bnz, 2, 2),
        NOP,
        si(AddI, 7, 7, 1),
        setcr(2, 20),
    ];
    load(&mut m, 0, &prog);
    assert_eq!(m.fetch(0).unwrap(), prog[0]);
    let s = m.step(0).unwrap();
    assert_eq!((s.pc, s.inst, s.class), (0, prog[0], InstClass::Vector));
    assert!(s.masked && s.active_lanes == 8 && s.mem.is_none() && !s.branch_taken);
    let s = m.step(0).unwrap();
    assert_eq!(s.class, InstClass::Memory);
    assert_eq!(
        s.mem,
        Some(MemAccess::Block {
            addr: DATA + 64,
            store: false
        })
    );
    assert_eq!(s.active_lanes, 16);
    let s = m.step(0).unwrap();
    assert_eq!(
        s.mem,
        Some(MemAccess::Lanes {
            addrs: std::array::from_fn(|i| DATA + 4 * i as u32),
            mask: 0x0f0f,
            store: true
        })
    );
    let s = m.step(0).unwrap();
    assert_eq!(
        s.mem,
        Some(MemAccess::Scalar {
            addr: DATA + 2,
            bytes: 2,
            store: false
        })
    );
    assert_eq!(s.active_lanes, 0);
    let s = m.step(0).unwrap();
    assert_eq!((s.class, s.branch_taken), (InstClass::Branch, true));
    assert_eq!(m.pc(0), 24);
    let s = m.step(0).unwrap();
    assert_eq!(s.class, InstClass::Scalar);
    let s = m.step(0).unwrap();
    assert_eq!(s.class, InstClass::Control);
    assert!(m.all_halted());
    let st = m.stats();
    assert_eq!((st.retired, st.memory, st.branch, st.scalar), (7, 3, 1, 1));
}

#[test]
fn hex_round_trip_and_loading() {
    let text =
        "// entry\n@0\n00008022 /* two\n words */ 228001c0\n@10\n0a0b0c0d\n  0e0f1011 // end";
    let words = hex::parse(text).unwrap();
    assert_eq!(
        words,
        vec![
            (0, 0x2280_0000),
            (1, 0xc001_8022),
            (16, 0x0d0c_0b0a),
            (17, 0x1110_0f0e)
        ]
    );
    let written = hex::write(&words);
    assert_eq!(
        written,
        "22800000\nc0018022\n@10\n0a0b0c0d\n0e0f1011\n"
            .replace("22800000\nc0018022", "00008022\n228001c0")
    );
    assert_eq!(hex::parse(&written).unwrap(), words);
    // Short tokens are zero-extended values, byte-swapped like any other.
    assert_eq!(hex::parse("1").unwrap(), vec![(0, 0x0100_0000)]);
    for bad in ["123456789", "xyz", "@", "/* open", "12g4"] {
        assert!(hex::parse(bad).is_err(), "{bad}");
    }
    // A program in hex runs.
    let mut p = li(1, 0xffff_0048);
    p.push(si(AluOp::Move, 2, 0, i32::from(b'!')));
    p.push(mem(MemOp::W32, false, 2, 1, 0));
    p.extend(halt());
    let img: Vec<(u32, u32)> = p
        .iter()
        .enumerate()
        .map(|(i, x)| (i as u32, encode(x)))
        .collect();
    let mut m = Machine::new(config());
    m.load_hex(&hex::write(&img)).unwrap();
    m.run().unwrap();
    assert_eq!(m.console(), b"!");
    assert!(m.load_hex("@100000\n00000000").is_err());
}

#[test]
fn host_access_is_range_checked() {
    let mut m = Machine::new(config());
    assert_eq!(
        m.load_words(MEM - 4, &[1, 2]).unwrap_err().kind,
        FaultKind::OutOfRange
    );
    assert_eq!(
        m.load_words(2, &[1]).unwrap_err().kind,
        FaultKind::Misaligned
    );
    assert!(m.read_bytes(MEM - 1, 2).is_err());
    assert!(m.read_bytes(u32::MAX, 2).is_err());
    m.write_bytes(MEM - 2, &[7, 8]).unwrap();
    assert_eq!(m.read_bytes(MEM - 2, 2).unwrap(), &[7, 8]);
}

#[test]
fn atomic_increment_with_ll_sc_across_threads() {
    use AluOp::*;
    use MemOp::*;
    // Thread 0 resumes all; each thread adds 1 to a shared counter 50 times with a
    // load_sync/store_sync retry loop, then halts itself.
    let mut p = vec![
        getcr(1, 0),
        br(BranchOp::Bnz, 1, 3),
        si(Move, 2, 0, -1),
        setcr(2, 21),
    ];
    p.extend(li(10, DATA));
    p.push(si(Move, 11, 0, 50));
    let top = p.len() as i32;
    p.extend([
        mem(Sync, true, 3, 10, 0),
        si(AddI, 3, 3, 1),
        mem(Sync, false, 3, 10, 0),
        br(BranchOp::Bz, 3, -3),
        si(SubI, 11, 11, 1),
    ]);
    let here = p.len() as i32;
    p.push(br(BranchOp::Bnz, 11, top - here));
    p.extend([
        si(Move, 6, 0, 1),
        sss(Shl, 6, 6, 1),
        setcr(6, 20),
        br(BranchOp::Jump, 0, 0),
    ]);
    for quantum in [1, 2, 7, DEFAULT_QUANTUM] {
        let mut m = Machine::new(config());
        m.set_quantum(quantum);
        load(&mut m, 0, &p);
        m.run().unwrap();
        assert_eq!(read_words(&m, DATA, 1), vec![200], "quantum {quantum}");
    }
}

#[test]
fn register_calls_and_eret() {
    use AluOp::*;
    // 0: move s2, 4 ; 1: setcr s2, 8 (saved flags: supervisor, restored by eret)
    // 2: move s5, 24 ; 3: call s5 (-> 6, s31 = 16) ; 4: b +4 (-> 8)
    // 5: move s6, 99 (never) ; 6: move s7, 7 ; 7: b s31 (-> 4)
    // 8: move s1, 48 ; 9: setcr s1, 2 (trap pc) ; 10: eret (-> 12)
    // 11: move s6, 98 (never) ; 12: move s8, 8
    // 13: call s31 (upstream writes the link first: jumps to 56, the next word)
    let p = vec![
        si(Move, 2, 0, 4),
        setcr(2, 8),
        si(Move, 5, 0, 24),
        br(BranchOp::CallReg, 5, 0),
        br(BranchOp::Jump, 0, 4),
        si(Move, 6, 0, 99),
        si(Move, 7, 0, 7),
        br(BranchOp::Reg, 31, 0),
        si(Move, 1, 0, 48),
        setcr(1, 2),
        br(BranchOp::Eret, 0, 0),
        si(Move, 6, 0, 98),
        si(Move, 8, 0, 8),
        br(BranchOp::CallReg, 31, 0),
        si(Move, 9, 0, 9),
    ];
    let m = run(&p);
    assert_eq!(m.scalar_reg(0, 6), 0);
    assert_eq!(m.scalar_reg(0, 7), 7);
    assert_eq!(m.scalar_reg(0, 8), 8);
    assert_eq!(m.scalar_reg(0, 9), 9);
    assert_eq!(m.scalar_reg(0, 31), 56);
}

#[test]
fn hex_addresses_and_case() {
    let words = hex::parse("@A\nDEADBEEF\n@0 00000001").unwrap();
    assert_eq!(words, vec![(10, 0xefbe_adde), (0, 0x0100_0000)]);
    let text = hex::write(&words);
    assert_eq!(text, "@a\ndeadbeef\n@0\n00000001\n");
    assert_eq!(hex::parse(&text).unwrap(), words);
    assert_eq!(hex::write(&[]), "");
}
