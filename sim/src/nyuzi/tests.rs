//! ISA layer tests: the notes' §5 golden encodings, exhaustive round trips over every
//! form, and random words.

use super::*;

/// Notes §5 (from NyuziToolchain test/MC/Nyuzi/assembler-tests.s), bytes in memory order.
const GOLDEN: &[(&str, [u8; 4])] = &[
    ("or s1, s2, s3", [0x22, 0x80, 0x01, 0xc0]),
    ("or_mask v9, s12, v10, s11", [0x2a, 0xb1, 0x05, 0xc8]),
    ("or_mask v27, s1, v0, 71", [0x60, 0x87, 0x23, 0x60]),
    ("add_i_mask v2, s4, v3, -79", [0x43, 0x90, 0xd8, 0x65]),
    ("movehi s2, 371769", [0x59, 0x84, 0xb5, 0x4f]),
    ("getlane s4, v5, s6", [0x85, 0x00, 0xa3, 0xc5]),
    ("getlane s4, v5, 7", [0x85, 0x1c, 0x00, 0x3a]),
    ("cmpeq_i s1, v2, 228", [0x22, 0x90, 0x03, 0x30]),
    ("cmple_f s12, v13, v14", [0x8d, 0x01, 0xf7, 0xd2]),
    ("move_mask v7, s9, s8", [0xe0, 0x24, 0xf4, 0xc8]),
    ("shuffle_mask v1, s4, v2, v3", [0x22, 0x90, 0xd1, 0xd4]),
    ("load_v v1, 400(s2)", [0x22, 0x40, 0x06, 0xae]),
    ("load_v_mask v1, s3, 400(s2)", [0x22, 0x0c, 0xc8, 0xb0]),
    ("store_scat_mask v4, s6, 120(v5)", [0x85, 0x18, 0x3c, 0x9c]),
    ("getcr s7, 9", [0xe9, 0x00, 0x00, 0xac]),
    ("setcr s11, 13", [0x6d, 0x01, 0x00, 0x8c]),
    ("ret", [0x1f, 0x00, 0x00, 0xf0]),
    ("eret", [0x00, 0x00, 0x00, 0xfe]),
    ("break", [0x00, 0x00, 0xe0, 0xc3]),
    ("syscall 17", [0x00, 0x44, 0x00, 0x02]),
    ("membar", [0x00, 0x00, 0x00, 0xe8]),
];

fn golden_insts() -> Vec<Inst> {
    use AluOp::*;
    let reg = |fmt, op, dest, src1, src2, mask| Inst::Reg {
        fmt,
        op,
        dest,
        src1,
        src2,
        mask,
    };
    vec![
        reg(RFmt::Sss, Or, 1, 2, 3, 0),
        reg(RFmt::VvsMask, Or, 9, 10, 11, 12),
        Inst::ImmMasked {
            op: Or,
            dest: 27,
            src1: 0,
            mask: 1,
            imm: 71,
        },
        Inst::ImmMasked {
            op: AddI,
            dest: 2,
            src1: 3,
            mask: 4,
            imm: -79,
        },
        Inst::MoveHi {
            dest: 2,
            imm: 371769,
        },
        reg(RFmt::Vvs, GetLane, 4, 5, 6, 0),
        Inst::Imm {
            fmt: IFmt::V,
            op: GetLane,
            dest: 4,
            src1: 5,
            imm: 7,
        },
        Inst::Imm {
            fmt: IFmt::V,
            op: CmpEqI,
            dest: 1,
            src1: 2,
            imm: 228,
        },
        reg(RFmt::Vvv, CmpLeF, 12, 13, 14, 0),
        reg(RFmt::VvsMask, Move, 7, 0, 8, 9),
        reg(RFmt::VvvMask, Shuffle, 1, 2, 3, 4),
        Inst::Mem {
            op: MemOp::Block,
            load: true,
            srcdest: 1,
            ptr: 2,
            mask: 0,
            offset: 400,
        },
        Inst::Mem {
            op: MemOp::BlockMask,
            load: true,
            srcdest: 1,
            ptr: 2,
            mask: 3,
            offset: 400,
        },
        Inst::Mem {
            op: MemOp::GatherMask,
            load: false,
            srcdest: 4,
            ptr: 5,
            mask: 6,
            offset: 120,
        },
        Inst::Mem {
            op: MemOp::ControlReg,
            load: true,
            srcdest: 7,
            ptr: 9,
            mask: 0,
            offset: 0,
        },
        Inst::Mem {
            op: MemOp::ControlReg,
            load: false,
            srcdest: 11,
            ptr: 13,
            mask: 0,
            offset: 0,
        },
        Inst::Branch {
            op: BranchOp::Reg,
            reg: 31,
            offset: 0,
        },
        Inst::Branch {
            op: BranchOp::Eret,
            reg: 0,
            offset: 0,
        },
        reg(RFmt::Sss, Break, 0, 0, 0, 0),
        Inst::Imm {
            fmt: IFmt::S,
            op: Syscall,
            dest: 0,
            src1: 0,
            imm: 17,
        },
        Inst::Cache {
            op: CacheOp::Membar,
            ptr: 0,
            phys: 0,
            offset: 0,
            low: 0,
        },
    ]
}

#[test]
fn golden_encodings_both_directions() {
    let insts = golden_insts();
    assert_eq!(insts.len(), GOLDEN.len());
    for (inst, (text, bytes)) in insts.iter().zip(GOLDEN) {
        let word = u32::from_le_bytes(*bytes);
        assert_eq!(inst.check(), Ok(()), "{text}");
        assert_eq!(
            encode(inst),
            word,
            "encode {text}: got {:#010x}",
            encode(inst)
        );
        assert_eq!(decode(word), Ok(*inst), "decode {text}");
        assert_eq!(inst.to_string(), *text);
    }
}

#[test]
fn other_known_words() {
    // Notes §3 B: the toolchain's `call s3` repeats the register in bits 9..5.
    let w = 0xfc00_0063;
    let i = decode(w).unwrap();
    assert_eq!(i.to_string(), "call s3");
    assert_eq!(encode(&i), w);
    // elf2hex's entry jump `0xf6000000 | entry/4` is `call`-free `b` type 3.
    let i = decode(0xf600_0010).unwrap();
    assert_eq!(
        i,
        Inst::Branch {
            op: BranchOp::Jump,
            reg: 0,
            offset: 16
        }
    );
    assert_eq!(decode(0).unwrap().to_string(), "or s0, s0, 0"); // nop
    assert_eq!(decode(0xc3e0_0000).unwrap().to_string(), "break");
}

#[test]
fn illegal_encodings_are_errors() {
    for (w, why) in [
        (0xcc00_0000u32, "R fmt 3"),
        (0xd800_0000, "R fmt 6"),
        (0xdc00_0000, "R fmt 7"),
        (0xc040_0000, "R op 4 undefined"),
        (0xc020_0000, "syscall in R"),
        (0xc0d0_0000, "shuffle in R fmt 0"),
        (0xc1a0_0000, "getlane in R fmt 0"),
        (0xc7e0_0000, "break in R fmt 1"),
        (0x0400_0000, "I op 4 undefined"),
        (0x4000_0000, "I fmt 2 not movehi"),
        (0x2200_0000, "syscall in I fmt 1"),
        (0x0d00_0000, "shuffle immediate"),
        (0x1a00_0000, "getlane in I fmt 0"),
        (0x9200_0000, "mem op 9"),
        (0x9e00_0000, "mem op 15"),
        (0xfa00_0000, "branch type 5 (bnall)"),
    ] {
        assert!(decode(w).is_err(), "{why}: {w:#010x}");
    }
}

/// Representative immediates: the edges of an n-bit signed range, and a few inside.
fn simm_edges(bits: u32) -> Vec<i32> {
    let lim = 1i32 << (bits - 1);
    vec![-lim, -lim + 1, -1, 0, 1, 7, lim - 2, lim - 1]
}

const REGS: &[Reg] = &[0, 1, 17, 30, 31];

/// Every form with representative fields; the check rejects illegal op/format pairs.
fn all_forms() -> Vec<Inst> {
    let mut v = Vec::new();
    for &op in AluOp::ALL {
        for &fmt in RFmt::ALL {
            for (i, &r) in REGS.iter().enumerate() {
                let s = |k: usize| REGS[(i + k) % REGS.len()];
                v.push(Inst::Reg {
                    fmt,
                    op,
                    dest: r,
                    src1: s(1),
                    src2: s(2),
                    mask: s(3),
                });
            }
        }
        for fmt in [IFmt::S, IFmt::V] {
            for imm in simm_edges(14) {
                v.push(Inst::Imm {
                    fmt,
                    op,
                    dest: 31,
                    src1: 1,
                    imm,
                });
            }
        }
        for imm in simm_edges(9) {
            v.push(Inst::ImmMasked {
                op,
                dest: 3,
                src1: 31,
                mask: 17,
                imm,
            });
        }
    }
    for imm in [0, 1, 371769, (1 << 19) - 1] {
        v.push(Inst::MoveHi { dest: 30, imm });
    }
    for &op in MemOp::ALL {
        for load in [false, true] {
            let bits = if op.masked() { 10 } else { 15 };
            for offset in simm_edges(bits) {
                v.push(Inst::Mem {
                    op,
                    load,
                    srcdest: 31,
                    ptr: 17,
                    mask: if op.masked() { 30 } else { 0 },
                    offset,
                });
            }
        }
    }
    for &op in CacheOp::ALL {
        for offset in simm_edges(10) {
            v.push(Inst::Cache {
                op,
                ptr: 5,
                phys: 31,
                offset,
                low: 0,
            });
        }
    }
    for &op in BranchOp::ALL {
        let long = op.long_offset();
        for offset in simm_edges(if long { 25 } else { 20 }) {
            v.push(Inst::Branch {
                op,
                reg: if long { 0 } else { 31 },
                offset,
            });
        }
    }
    v
}

#[test]
fn every_form_round_trips() {
    let mut legal = 0;
    for inst in all_forms() {
        let w = encode(&inst);
        match inst.check() {
            Ok(()) => {
                legal += 1;
                assert_eq!(decode(w), Ok(inst), "{inst:?} -> {w:#010x}");
                assert!(!inst.to_string().is_empty());
            }
            // Illegal op/format pairs must not decode to a different instruction.
            Err(_) => assert!(decode(w).is_err() || decode(w) != Ok(inst), "{inst:?}"),
        }
    }
    assert!(legal > 1000, "{legal}");
}

#[test]
fn out_of_range_fields_fail_check() {
    let bad = [
        Inst::Imm {
            fmt: IFmt::S,
            op: AluOp::AddI,
            dest: 0,
            src1: 0,
            imm: 8192,
        },
        Inst::ImmMasked {
            op: AluOp::AddI,
            dest: 0,
            src1: 0,
            mask: 0,
            imm: -257,
        },
        Inst::Imm {
            fmt: IFmt::S,
            op: AluOp::AddF,
            dest: 0,
            src1: 0,
            imm: 0,
        },
        Inst::MoveHi {
            dest: 0,
            imm: 1 << 19,
        },
        Inst::Mem {
            op: MemOp::BlockMask,
            load: true,
            srcdest: 0,
            ptr: 0,
            mask: 0,
            offset: 512,
        },
        Inst::Mem {
            op: MemOp::W32,
            load: true,
            srcdest: 0,
            ptr: 0,
            mask: 1,
            offset: 0,
        },
        Inst::Branch {
            op: BranchOp::Jump,
            reg: 1,
            offset: 0,
        },
        Inst::Branch {
            op: BranchOp::Bz,
            reg: 32,
            offset: 0,
        },
    ];
    for i in bad {
        assert!(i.check().is_err(), "{i:?}");
        let _ = encode(&i); // truncates, never panics
    }
}

fn xorshift(state: &mut u64) -> u32 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 16) as u32
}

/// Every word that decodes re-encodes to itself (no don't-care bits are lost), and is
/// valid; nothing panics. Covers every top-12-bit prefix (format, fmt and op fields)
/// with random low bits, plus plain random words.
#[test]
fn random_words_round_trip() {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let check = |w: u32| {
        if let Ok(i) = decode(w) {
            assert_eq!(encode(&i), w, "{i:?}");
            assert_eq!(i.check(), Ok(()), "{w:#010x}");
            let _ = i.to_string();
        }
    };
    for top in 0u32..4096 {
        for _ in 0..64 {
            check(top << 20 | (xorshift(&mut s) & 0xf_ffff));
        }
        check(top << 20);
        check(top << 20 | 0xf_ffff);
    }
    for _ in 0..200_000 {
        check(xorshift(&mut s));
    }
}
