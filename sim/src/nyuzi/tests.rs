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
    assert_eq!(decode(0).unwrap(), NOP);
    assert_eq!(NOP.to_string(), "nop");
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

/// More golden words from NyuziToolchain `test/MC/Nyuzi/assembler-tests.s` (a stored
/// version of the file the notes cite; its `syscall` line is left out, see
/// [`syscall_is_the_notes_i_format`]). Each line is checked in both directions and the
/// disassembly must reproduce the assembler's text.
const ASSEMBLER_TESTS: &str = "\
or v5, v6, s7                    # 0xa6,0x80,0x03,0xc4
or v13, v14, v15                 # 0xae,0x81,0x07,0xd0
or_mask v17, s20, v18, v19       # 0x32,0xd2,0x09,0xd4
or s21, s22, -68                 # 0xb6,0xf2,0xfe,0x00
or v24, v25, -58                 # 0x19,0x1b,0xff,0x20
or_mask v27, s1, v0, 110         # 0x60,0x07,0x37,0x60
and_mask v10, s13, v11, s12      # 0x4b,0x35,0x16,0xc8
and s22, s23, 6                  # 0xd7,0x1a,0x00,0x01
and_mask v0, s2, v1, -9          # 0x01,0x88,0xfb,0x61
xor_mask v19, s22, v20, v21      # 0x74,0xda,0x3a,0xd4
xor_mask v1, s3, v2, -42         # 0x22,0x0c,0xeb,0x63
add_i v8, v9, s10                # 0x09,0x01,0x55,0xc4
add_i_mask v12, s15, v13, s14    # 0x8d,0x3d,0x57,0xc8
add_i s24, s25, -105             # 0x19,0x5f,0xfe,0x05
add_i v27, v0, 87                # 0x60,0x5f,0x01,0x25
sub_i_mask v21, s24, v22, v23    # 0xb6,0xe2,0x6b,0xd4
sub_i_mask v3, s5, v4, -114      # 0x64,0x14,0xc7,0x66
mull_i s26, s27, 60              # 0x5b,0xf3,0x00,0x07
mull_i_mask v4, s6, v5, -113     # 0x85,0x98,0xc7,0x67
mulh_u s27, s0, -6               # 0x60,0xeb,0xff,0x08
mulh_u_mask v15, s18, v16, s17   # 0xf0,0xc9,0x88,0xc8
ashr v20, v21, v22               # 0x95,0x02,0x9b,0xd0
ashr s0, s1, -33                 # 0x01,0x7c,0xff,0x09
ashr_mask v6, s8, v7, 112        # 0xc7,0x20,0x38,0x69
shr v4, v5, 20                   # 0x85,0x50,0x00,0x2a
shl_mask v26, s1, v27, v0        # 0x5b,0x07,0xb0,0xd4
shl_mask v8, s10, v9, -2         # 0x09,0x29,0xff,0x6b
add_f s11, s12, s13              # 0x6c,0x81,0x06,0xc2
add_f_mask v27, s2, v0, v1       # 0x60,0x8b,0x00,0xd6
sub_f_mask v11, s14, v12, s13    # 0x6c,0xb9,0x16,0xca
mul_f v7, v8, v9                 # 0xe8,0x80,0x24,0xd2
mulh_i_mask v3, s6, v4, v5       # 0x64,0x98,0xf2,0xd5
mulh_i v10, v11, -43             # 0x4b,0x55,0xff,0x3f
mulh_i_mask v13, s15, v14, -67   # 0xae,0xbd,0xde,0x7f
clz s1, s2                       # 0x20,0x00,0xc1,0xc0
clz_mask v1, s3, s2              # 0x20,0x0c,0xc1,0xc8
ctz_mask v4, s6, v5              # 0x80,0x98,0xe2,0xd4
move s7, s8                      # 0xe0,0x00,0xf4,0xc0
move v7, s8                      # 0xe0,0x00,0xf4,0xc4
move_mask v7, s9, v8             # 0xe0,0x24,0xf4,0xd4
reciprocal_mask v10, s12, v11    # 0x40,0xb1,0xc5,0xd5
ftoi v13, s14                    # 0xa0,0x01,0xb7,0xc5
sext_8_mask v16, s18, s17        # 0x00,0xca,0xd8,0xc9
sext_16 v19, v20                 # 0x60,0x02,0xea,0xd1
itof_mask v22, s24, v23          # 0xc0,0xe2,0xab,0xd6
move s2, 72                      # 0x40,0x20,0x01,0x0f
move v3, 72                      # 0x60,0x20,0x01,0x2f
shuffle v1, v2, v3               # 0x22,0x80,0xd1,0xd0
nop                              # 0x00,0x00,0x00,0x00
cmpeq_i s1, s2, s3               # 0x22,0x80,0x01,0xc1
cmpeq_i s1, v2, s3               # 0x22,0x80,0x01,0xc5
cmpeq_i s1, s2, 13               # 0x22,0x34,0x00,0x10
cmpne_i s4, v5, 210              # 0x85,0x48,0x03,0x31
cmpgt_u s19, v20, v21            # 0x74,0x82,0x6a,0xd1
cmple_u s0, s1, 251              # 0x01,0xec,0x03,0x19
cmpgt_f s3, v4, s5               # 0x64,0x80,0xc2,0xc6
cmplt_f s9, s10, s11             # 0x2a,0x81,0xe5,0xc2
load_u8 s1, (s2)                 # 0x22,0x00,0x00,0xa0
load_u8 s1, 3(s2)                # 0x22,0x0c,0x00,0xa0
load_s8 s4, 6(s5)                # 0x85,0x18,0x00,0xa2
load_u16 s7, 9(s8)               # 0xe8,0x24,0x00,0xa4
load_s16 s10, 12(s11)            # 0x4b,0x31,0x00,0xa6
load_32 s13, 15(s14)             # 0xae,0x3d,0x00,0xa8
load_sync s16, 18(s17)           # 0x11,0x4a,0x00,0xaa
store_8 s19, 21(s20)             # 0x74,0x56,0x00,0x82
store_16 s22, 24(s23)            # 0xd7,0x62,0x00,0x86
store_32 s25, 27(s26)            # 0x3a,0x6f,0x00,0x88
store_sync s0, 2(s1)             # 0x01,0x08,0x00,0x8a
load_v v1, 136(s2)               # 0x22,0x20,0x02,0xae
load_v_mask v1, s3, 136(s2)      # 0x22,0x0c,0x44,0xb0
store_v v1, (s2)                 # 0x22,0x00,0x00,0x8e
store_v_mask v1, s3, 136(s2)     # 0x22,0x0c,0x44,0x90
load_gath v4, 148(v5)            # 0x85,0x50,0x02,0xba
load_gath_mask v4, s6, 148(v5)   # 0x85,0x18,0x4a,0xbc
store_scat v4, (v5)              # 0x85,0x00,0x00,0x9a
store_scat_mask v4, s6, (v5)     # 0x85,0x18,0x00,0x9c
dflush s7                        # 0x07,0x00,0x00,0xe4
dinvalidate s9                   # 0x09,0x00,0x00,0xe2
iinvalidate s11                  # 0x0b,0x00,0x00,0xe6
tlbinval s12                     # 0x0c,0x00,0x00,0xea
tlbinvalall                      # 0x00,0x00,0x00,0xec
dtlbinsert s1, s2                # 0x41,0x00,0x00,0xe0
itlbinsert s3, s4                # 0x83,0x00,0x00,0xee
";

#[test]
fn assembler_tests_words() {
    let mut n = 0;
    for line in ASSEMBLER_TESTS.lines() {
        let (text, bytes) = line.split_once('#').unwrap();
        let b: Vec<u8> = bytes
            .split(',')
            .map(|x| u8::from_str_radix(x.trim().trim_start_matches("0x"), 16).unwrap())
            .collect();
        let w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let inst = decode(w).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(inst.to_string(), text.trim(), "{w:#010x}");
        assert_eq!(encode(&inst), w, "{line}");
        n += 1;
    }
    assert_eq!(n, 83);
}

/// The notes (§3 I, §5; toolchain @7dc1780) encode `syscall n` as I fmt 0 op 2
/// (`syscall 17` = 0x02004400). The stored copy of assembler-tests.s instead has an
/// operand-less `syscall` = 0xc3f00000 (R fmt 0, op 0x3f), evidently another revision.
/// We follow the notes, so op 0x3f is undefined.
#[test]
fn syscall_is_the_notes_i_format() {
    assert_eq!(decode(0x0200_4400).unwrap().to_string(), "syscall 17");
    assert!(decode(0xc3f0_0000).is_err());
}
