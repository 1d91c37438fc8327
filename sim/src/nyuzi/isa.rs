//! Nyuzi instruction words (notes §2–§5).
//!
//! Design: every variant of [`Inst`] mirrors one instruction *format* bit for bit, so
//! every bit of a word lands in some field. [`decode`] only rejects what the notes call
//! illegal (unknown formats, opcodes, branch types, memory ops, and opcode/format pairs
//! the notes rule out); bits the hardware ignores (the mask field of an unmasked R
//! instruction, src1 of a one-operand op, bits 24..5 of `b sR`/`call sR`/`eret`, …) are
//! kept in their fields rather than dropped. Hence `encode(&decode(w)?) == w` for every
//! word that decodes, and there are no don't-care bits to document at this layer. The
//! disassembler ([`std::fmt::Display`]) omits the ignored fields, like the assembler.

use std::fmt;

/// A register number, 0..=31 (scalar `sN` or vector `vN` depending on the operand).
pub type Reg = u8;

/// Why a word is not a legal instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub word: u32,
    pub reason: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "illegal Nyuzi instruction {:#010x}: {}",
            self.word, self.reason
        )
    }
}

impl std::error::Error for DecodeError {}

macro_rules! op_enum {
    ($(#[$m:meta])* $name:ident { $($var:ident = $val:expr, $mn:expr;)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($var = $val,)* }
        impl $name {
            /// Every opcode, in encoding order.
            pub const ALL: &'static [$name] = &[$($name::$var,)*];
            /// The opcode field's value.
            pub fn bits(self) -> u32 { self as u32 }
            /// The opcode for a field value, if it is defined.
            pub fn from_bits(v: u32) -> Option<$name> {
                match v { $($val => Some($name::$var),)* _ => None }
            }
            /// The base mnemonic.
            pub fn mnemonic(self) -> &'static str {
                match self { $($name::$var => $mn,)* }
            }
        }
    };
}

op_enum! {
    /// Arithmetic opcodes (notes §4): 6 bits in format R, the low 5 bits in format I.
    AluOp {
        Or = 0x00, "or";
        And = 0x01, "and";
        Syscall = 0x02, "syscall";
        Xor = 0x03, "xor";
        AddI = 0x05, "add_i";
        SubI = 0x06, "sub_i";
        MullI = 0x07, "mull_i";
        MulhU = 0x08, "mulh_u";
        Ashr = 0x09, "ashr";
        Shr = 0x0a, "shr";
        Shl = 0x0b, "shl";
        Clz = 0x0c, "clz";
        Shuffle = 0x0d, "shuffle";
        Ctz = 0x0e, "ctz";
        Move = 0x0f, "move";
        CmpEqI = 0x10, "cmpeq_i";
        CmpNeI = 0x11, "cmpne_i";
        CmpGtI = 0x12, "cmpgt_i";
        CmpGeI = 0x13, "cmpge_i";
        CmpLtI = 0x14, "cmplt_i";
        CmpLeI = 0x15, "cmple_i";
        CmpGtU = 0x16, "cmpgt_u";
        CmpGeU = 0x17, "cmpge_u";
        CmpLtU = 0x18, "cmplt_u";
        CmpLeU = 0x19, "cmple_u";
        GetLane = 0x1a, "getlane";
        Ftoi = 0x1b, "ftoi";
        Reciprocal = 0x1c, "reciprocal";
        Sext8 = 0x1d, "sext_8";
        Sext16 = 0x1e, "sext_16";
        MulhI = 0x1f, "mulh_i";
        AddF = 0x20, "add_f";
        SubF = 0x21, "sub_f";
        MulF = 0x22, "mul_f";
        Itof = 0x2a, "itof";
        CmpGtF = 0x2c, "cmpgt_f";
        CmpGeF = 0x2d, "cmpge_f";
        CmpLtF = 0x2e, "cmplt_f";
        CmpLeF = 0x2f, "cmple_f";
        CmpEqF = 0x30, "cmpeq_f";
        CmpNeF = 0x31, "cmpne_f";
        Break = 0x3e, "break";
    }
}

impl AluOp {
    /// One-operand ops take their operand from src2 and ignore src1 (notes §3 R).
    pub fn is_unary(self) -> bool {
        use AluOp::*;
        matches!(
            self,
            Move | Clz | Ctz | Reciprocal | Ftoi | Itof | Sext8 | Sext16
        )
    }

    /// Compares write a scalar mask even in the vector forms (notes §3, §4).
    pub fn is_compare(self) -> bool {
        (0x10..=0x19).contains(&(self as u32)) || (0x2c..=0x31).contains(&(self as u32))
    }

    /// Ops whose destination is a scalar register in every form: compares and `getlane`.
    pub fn scalar_dest(self) -> bool {
        self.is_compare() || self == AluOp::GetLane
    }
}

/// Format R `fmt` field (bits 28..26, notes §3 R); 3, 6 and 7 are illegal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RFmt {
    /// `sD = sA op sB`
    Sss = 0,
    /// `vD = vA op splat(sB)`
    Vvs = 1,
    /// masked `vD = vA op splat(sB)`
    VvsMask = 2,
    /// `vD = vA op vB`
    Vvv = 4,
    /// masked `vD = vA op vB`
    VvvMask = 5,
}

impl RFmt {
    pub const ALL: &'static [RFmt] = &[
        RFmt::Sss,
        RFmt::Vvs,
        RFmt::VvsMask,
        RFmt::Vvv,
        RFmt::VvvMask,
    ];

    pub fn from_bits(v: u32) -> Option<RFmt> {
        Some(match v {
            0 => RFmt::Sss,
            1 => RFmt::Vvs,
            2 => RFmt::VvsMask,
            4 => RFmt::Vvv,
            5 => RFmt::VvvMask,
            _ => return None,
        })
    }

    pub fn masked(self) -> bool {
        matches!(self, RFmt::VvsMask | RFmt::VvvMask)
    }

    pub fn vector(self) -> bool {
        self != RFmt::Sss
    }

    /// Whether src2 is a vector register.
    pub fn vector_src2(self) -> bool {
        matches!(self, RFmt::Vvv | RFmt::VvvMask)
    }
}

/// Format I unmasked `fmt` (bits 30..29 = 0 scalar, 1 vector; notes §3 I). Format 2 is
/// [`Inst::MoveHi`] and format 3 is [`Inst::ImmMasked`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IFmt {
    /// `sD = sA op sext(imm14)`
    S = 0,
    /// `vD = vA op splat(sext(imm14))`
    V = 1,
}

op_enum! {
    /// Format M op field (bits 28..25, notes §3 M); the mnemonic is the load's (see
    /// [`mem_mnemonic`] for stores). Ops 9–12 and 15 are illegal.
    MemOp {
        U8 = 0, "load_u8";
        S8 = 1, "load_s8";
        U16 = 2, "load_u16";
        S16 = 3, "load_s16";
        W32 = 4, "load_32";
        Sync = 5, "load_sync";
        ControlReg = 6, "getcr";
        Block = 7, "load_v";
        BlockMask = 8, "load_v_mask";
        Gather = 13, "load_gath";
        GatherMask = 14, "load_gath_mask";
    }
}

impl MemOp {
    /// Masked ops have a 10-bit offset and a mask field (notes §3 M).
    pub fn masked(self) -> bool {
        matches!(self, MemOp::BlockMask | MemOp::GatherMask)
    }
    /// Whether srcdest is a vector register.
    pub fn vector_data(self) -> bool {
        matches!(
            self,
            MemOp::Block | MemOp::BlockMask | MemOp::Gather | MemOp::GatherMask
        )
    }
    /// Whether the pointer is a vector register (scatter/gather).
    pub fn vector_ptr(self) -> bool {
        matches!(self, MemOp::Gather | MemOp::GatherMask)
    }
}

/// The mnemonic of a memory op in the load (`load == true`) or store direction.
/// Stores of ops 0/1 are both `store_8` and 2/3 both `store_16` (notes §3 M table).
pub fn mem_mnemonic(op: MemOp, load: bool) -> &'static str {
    if load {
        return op.mnemonic();
    }
    match op {
        MemOp::U8 | MemOp::S8 => "store_8",
        MemOp::U16 | MemOp::S16 => "store_16",
        MemOp::W32 => "store_32",
        MemOp::Sync => "store_sync",
        MemOp::ControlReg => "setcr",
        MemOp::Block => "store_v",
        MemOp::BlockMask => "store_v_mask",
        MemOp::Gather => "store_scat",
        MemOp::GatherMask => "store_scat_mask",
    }
}

op_enum! {
    /// Format C op field (bits 27..25, notes §3 C); all eight values are defined.
    CacheOp {
        DtlbInsert = 0, "dtlbinsert";
        DInvalidate = 1, "dinvalidate";
        DFlush = 2, "dflush";
        IInvalidate = 3, "iinvalidate";
        Membar = 4, "membar";
        TlbInval = 5, "tlbinval";
        TlbInvalAll = 6, "tlbinvalall";
        ItlbInsert = 7, "itlbinsert";
    }
}

op_enum! {
    /// Format B branch type (bits 27..25, notes §3 B); 5 (formerly `bnall`) is illegal.
    BranchOp {
        Reg = 0, "b";
        Bz = 1, "bz";
        Bnz = 2, "bnz";
        Jump = 3, "b";
        Call = 4, "call";
        CallReg = 6, "call";
        Eret = 7, "eret";
    }
}

impl BranchOp {
    /// `b label` and `call label` have a 25-bit offset and no register (notes §3 B).
    pub fn long_offset(self) -> bool {
        matches!(self, BranchOp::Jump | BranchOp::Call)
    }
}

/// One Nyuzi instruction. Immediates and offsets are held sign-extended (except
/// `movehi`'s, which is unsigned); see [`Inst::check`] for their ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Inst {
    /// Format R (bits 31..29 = 110). `mask` is ignored unless `fmt` is masked; `src1` is
    /// ignored by one-operand ops (the toolchain writes 0 in both).
    Reg {
        fmt: RFmt,
        op: AluOp,
        dest: Reg,
        src1: Reg,
        src2: Reg,
        mask: Reg,
    },
    /// Format I, fmt 0/1: 14-bit signed immediate (−8192..=8191). `syscall n` is
    /// `fmt S, op Syscall, imm n`.
    Imm {
        fmt: IFmt,
        op: AluOp,
        dest: Reg,
        src1: Reg,
        imm: i32,
    },
    /// Format I, fmt 3: masked vector op with a 9-bit signed immediate (−256..=255).
    ImmMasked {
        op: AluOp,
        dest: Reg,
        src1: Reg,
        mask: Reg,
        imm: i32,
    },
    /// Format I, fmt 2, op 0x0f: `sD = imm19 << 13` (imm19 in 0..2^19).
    MoveHi { dest: Reg, imm: u32 },
    /// Format M (bits 31..30 = 10). `offset` is in bytes: 15-bit signed for unmasked
    /// ops, 10-bit signed for masked ones (`mask` must be 0 for unmasked ops: those
    /// bits belong to the offset). For [`MemOp::ControlReg`] (`getcr`/`setcr`), `ptr` is
    /// the control-register index and `offset` is ignored by the hardware.
    Mem {
        op: MemOp,
        load: bool,
        srcdest: Reg,
        ptr: Reg,
        mask: Reg,
        offset: i32,
    },
    /// Format C (bits 31..28 = 1110). `offset` (10-bit signed, bits 24..15) is used by
    /// dflush/dinvalidate/tlbinval; `low` is bits 14..10, which no op uses.
    Cache {
        op: CacheOp,
        ptr: Reg,
        phys: Reg,
        offset: i32,
        low: u8,
    },
    /// Format B (bits 31..28 = 1111). `offset` is in words relative to the branch's own
    /// address: 25-bit signed for `b label`/`call label` (then `reg` must be 0, those
    /// bits are the offset's), 20-bit signed otherwise (ignored by `b sR`, `call sR`,
    /// `eret`; the toolchain repeats the register there for `call sR`).
    Branch { op: BranchOp, reg: Reg, offset: i32 },
}

fn sext(v: u32, bits: u32) -> i32 {
    ((v << (32 - bits)) as i32) >> (32 - bits)
}

fn fits(v: i32, bits: u32) -> bool {
    let lim = 1i32 << (bits - 1);
    (-lim..lim).contains(&v)
}

fn field(w: u32, lo: u32, width: u32) -> u32 {
    (w >> lo) & ((1 << width) - 1)
}

fn r(w: u32, lo: u32) -> Reg {
    field(w, lo, 5) as Reg
}

fn imm_bits(v: i32, bits: u32) -> u32 {
    (v as u32) & ((1 << bits) - 1)
}

/// Which arithmetic op/format pairs are legal (notes §3, §4): `syscall` only as
/// I fmt 0; `break` only as R fmt 0; `shuffle` only as R fmt 4/5; `getlane` only as
/// R fmt 1 or I fmt 1; ops ≥ 32 have no immediate form.
fn alu_legal_r(fmt: RFmt, op: AluOp) -> Result<(), &'static str> {
    match op {
        AluOp::Syscall => Err("syscall has no register form"),
        AluOp::Break if fmt != RFmt::Sss => Err("break is R fmt 0 only"),
        AluOp::Shuffle if !fmt.vector_src2() => Err("shuffle is R fmt 4/5 only"),
        AluOp::GetLane if fmt != RFmt::Vvs => Err("getlane is R fmt 1 only"),
        _ => Ok(()),
    }
}

fn alu_legal_i(fmt: Option<IFmt>, op: AluOp) -> Result<(), &'static str> {
    match op {
        _ if op.bits() >= 32 => Err("op has no immediate form"),
        AluOp::Syscall if fmt != Some(IFmt::S) => Err("syscall is I fmt 0 only"),
        AluOp::Shuffle => Err("shuffle has no immediate form"),
        AluOp::GetLane if fmt != Some(IFmt::V) => Err("getlane immediate is I fmt 1 only"),
        _ => Ok(()),
    }
}

impl Inst {
    /// Whether the instruction is legal and every field is in range; exactly the
    /// instructions [`encode`] maps to words that [`decode`] maps back to them.
    pub fn check(&self) -> Result<(), &'static str> {
        let regs_ok = |rs: &[Reg]| rs.iter().all(|&r| r < 32);
        let ok = match *self {
            Inst::Reg {
                fmt,
                op,
                dest,
                src1,
                src2,
                mask,
            } => {
                alu_legal_r(fmt, op)?;
                regs_ok(&[dest, src1, src2, mask])
            }
            Inst::Imm {
                fmt,
                op,
                dest,
                src1,
                imm,
            } => {
                alu_legal_i(Some(fmt), op)?;
                regs_ok(&[dest, src1]) && fits(imm, 14)
            }
            Inst::ImmMasked {
                op,
                dest,
                src1,
                mask,
                imm,
            } => {
                alu_legal_i(None, op)?;
                regs_ok(&[dest, src1, mask]) && fits(imm, 9)
            }
            Inst::MoveHi { dest, imm } => dest < 32 && imm < (1 << 19),
            Inst::Mem {
                op,
                srcdest,
                ptr,
                mask,
                offset,
                ..
            } => {
                regs_ok(&[srcdest, ptr, mask])
                    && if op.masked() {
                        fits(offset, 10)
                    } else {
                        mask == 0 && fits(offset, 15)
                    }
            }
            Inst::Cache {
                ptr,
                phys,
                offset,
                low,
                ..
            } => regs_ok(&[ptr, phys]) && fits(offset, 10) && low < 32,
            Inst::Branch { op, reg, offset } => {
                if op.long_offset() {
                    reg == 0 && fits(offset, 25)
                } else {
                    reg < 32 && fits(offset, 20)
                }
            }
        };
        if ok {
            Ok(())
        } else {
            Err("field out of range")
        }
    }
}

/// Encodes an instruction. Out-of-range fields are truncated to their width (never a
/// panic); use [`Inst::check`] first when the instruction is not known to be valid.
pub fn encode(inst: &Inst) -> u32 {
    let reg = |x: Reg| u32::from(x) & 31;
    match *inst {
        Inst::Reg {
            fmt,
            op,
            dest,
            src1,
            src2,
            mask,
        } => {
            0xc000_0000
                | (fmt as u32) << 26
                | (op.bits() & 0x3f) << 20
                | reg(src2) << 15
                | reg(mask) << 10
                | reg(dest) << 5
                | reg(src1)
        }
        Inst::Imm {
            fmt,
            op,
            dest,
            src1,
            imm,
        } => {
            (fmt as u32) << 29
                | (op.bits() & 0x1f) << 24
                | imm_bits(imm, 14) << 10
                | reg(dest) << 5
                | reg(src1)
        }
        Inst::ImmMasked {
            op,
            dest,
            src1,
            mask,
            imm,
        } => {
            3 << 29
                | (op.bits() & 0x1f) << 24
                | imm_bits(imm, 9) << 15
                | reg(mask) << 10
                | reg(dest) << 5
                | reg(src1)
        }
        Inst::MoveHi { dest, imm } => {
            2 << 29 | 0x0f << 24 | ((imm >> 5) & 0x3fff) << 10 | reg(dest) << 5 | (imm & 31)
        }
        Inst::Mem {
            op,
            load,
            srcdest,
            ptr,
            mask,
            offset,
        } => {
            let off = if op.masked() {
                imm_bits(offset, 10) << 15 | reg(mask) << 10
            } else {
                imm_bits(offset, 15) << 10
            };
            0x8000_0000
                | u32::from(load) << 29
                | op.bits() << 25
                | off
                | reg(srcdest) << 5
                | reg(ptr)
        }
        Inst::Cache {
            op,
            ptr,
            phys,
            offset,
            low,
        } => {
            0xe000_0000
                | op.bits() << 25
                | imm_bits(offset, 10) << 15
                | (u32::from(low) & 31) << 10
                | reg(phys) << 5
                | reg(ptr)
        }
        Inst::Branch {
            op,
            reg: rg,
            offset,
        } => {
            let body = if op.long_offset() {
                imm_bits(offset, 25)
            } else {
                imm_bits(offset, 20) << 5 | reg(rg)
            };
            0xf000_0000 | op.bits() << 25 | body
        }
    }
}

/// Decodes a word (notes §2 top-level decode). Never panics.
pub fn decode(w: u32) -> Result<Inst, DecodeError> {
    let err = |reason| DecodeError { word: w, reason };
    let inst = if w & 0x8000_0000 == 0 {
        // Format I.
        let fmt = field(w, 29, 2);
        let op5 = field(w, 24, 5);
        match fmt {
            2 => {
                if op5 != 0x0f {
                    return Err(err("I fmt 2 is only movehi (op 0x0f)"));
                }
                Inst::MoveHi {
                    dest: r(w, 5),
                    imm: field(w, 10, 14) << 5 | field(w, 0, 5),
                }
            }
            _ => {
                let op = AluOp::from_bits(op5).ok_or(err("undefined arithmetic op"))?;
                if fmt == 3 {
                    alu_legal_i(None, op).map_err(err)?;
                    Inst::ImmMasked {
                        op,
                        dest: r(w, 5),
                        src1: r(w, 0),
                        mask: r(w, 10),
                        imm: sext(field(w, 15, 9), 9),
                    }
                } else {
                    let fmt = if fmt == 0 { IFmt::S } else { IFmt::V };
                    alu_legal_i(Some(fmt), op).map_err(err)?;
                    Inst::Imm {
                        fmt,
                        op,
                        dest: r(w, 5),
                        src1: r(w, 0),
                        imm: sext(field(w, 10, 14), 14),
                    }
                }
            }
        }
    } else if w & 0xc000_0000 == 0x8000_0000 {
        // Format M.
        let op = MemOp::from_bits(field(w, 25, 4)).ok_or(err("undefined memory op"))?;
        let (mask, offset) = if op.masked() {
            (r(w, 10), sext(field(w, 15, 10), 10))
        } else {
            (0, sext(field(w, 10, 15), 15))
        };
        Inst::Mem {
            op,
            load: field(w, 29, 1) == 1,
            srcdest: r(w, 5),
            ptr: r(w, 0),
            mask,
            offset,
        }
    } else if w & 0xe000_0000 == 0xc000_0000 {
        // Format R.
        let fmt = RFmt::from_bits(field(w, 26, 3)).ok_or(err("illegal R format"))?;
        let op = AluOp::from_bits(field(w, 20, 6)).ok_or(err("undefined arithmetic op"))?;
        alu_legal_r(fmt, op).map_err(err)?;
        Inst::Reg {
            fmt,
            op,
            dest: r(w, 5),
            src1: r(w, 0),
            src2: r(w, 15),
            mask: r(w, 10),
        }
    } else if w & 0xf000_0000 == 0xe000_0000 {
        // Format C: every op is defined.
        let op = CacheOp::from_bits(field(w, 25, 3)).ok_or(err("undefined cache op"))?;
        Inst::Cache {
            op,
            ptr: r(w, 0),
            phys: r(w, 5),
            offset: sext(field(w, 15, 10), 10),
            low: field(w, 10, 5) as u8,
        }
    } else {
        // Format B.
        let op = BranchOp::from_bits(field(w, 25, 3)).ok_or(err("illegal branch type"))?;
        if op.long_offset() {
            Inst::Branch {
                op,
                reg: 0,
                offset: sext(field(w, 0, 25), 25),
            }
        } else {
            Inst::Branch {
                op,
                reg: r(w, 0),
                offset: sext(field(w, 5, 20), 20),
            }
        }
    };
    Ok(inst)
}

/// The word `0x00000000`, `or s0, s0, 0`, which the assembler spells `nop` (notes §2).
pub const NOP: Inst = Inst::Imm {
    fmt: IFmt::S,
    op: AluOp::Or,
    dest: 0,
    src1: 0,
    imm: 0,
};

/// A memory offset as the assembler writes it: `(s2)` when zero, else `136(s2)`.
struct Off(i32);

impl fmt::Display for Off {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 != 0 {
            write!(f, "{}", self.0)?;
        }
        Ok(())
    }
}

struct R(bool, Reg);

impl fmt::Display for R {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names from a table: a listing prints two or three registers a line.
        const NAMES: [[&str; 32]; 2] = [
            [
                "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12",
                "s13", "s14", "s15", "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24",
                "s25", "s26", "s27", "s28", "s29", "s30", "s31",
            ],
            [
                "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12",
                "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24",
                "v25", "v26", "v27", "v28", "v29", "v30", "v31",
            ],
        ];
        match NAMES[usize::from(self.0)].get(usize::from(self.1)) {
            Some(name) => f.write_str(name),
            None => write!(f, "{}{}", if self.0 { 'v' } else { 's' }, self.1),
        }
    }
}

/// Disassembly in the toolchain's syntax (notes §3–§5): `op_mask dest, sMask, src1,
/// src2`; one-operand ops omit src1; memory operands are `offset(ptr)`, or `(ptr)` when
/// the offset is 0; the zero word is `nop`; branch targets are printed as a signed word offset (`b .+4*N` style is the
/// assembler's business): `bz s1, -3`.
impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Inst::Reg {
                fmt,
                op,
                dest,
                src1,
                src2,
                mask,
            } => {
                if op == AluOp::Break {
                    return f.write_str("break");
                }
                let v = fmt.vector();
                let suffix = if fmt.masked() { "_mask" } else { "" };
                write!(
                    f,
                    "{}{} {}",
                    op.mnemonic(),
                    suffix,
                    R(v && !op.scalar_dest(), dest)
                )?;
                if fmt.masked() {
                    write!(f, ", {}", R(false, mask))?;
                }
                if !op.is_unary() {
                    write!(f, ", {}", R(v, src1))?;
                }
                write!(f, ", {}", R(fmt.vector_src2(), src2))
            }
            Inst::Imm {
                fmt,
                op,
                dest,
                src1,
                imm,
            } => {
                if op == AluOp::Syscall {
                    return write!(f, "syscall {imm}");
                }
                if *self == NOP {
                    return f.write_str("nop");
                }
                let v = fmt == IFmt::V;
                write!(f, "{} {}", op.mnemonic(), R(v && !op.scalar_dest(), dest))?;
                if !op.is_unary() {
                    write!(f, ", {}", R(v, src1))?;
                }
                write!(f, ", {imm}")
            }
            Inst::ImmMasked {
                op,
                dest,
                src1,
                mask,
                imm,
            } => {
                write!(
                    f,
                    "{}_mask {}, {}",
                    op.mnemonic(),
                    R(!op.scalar_dest(), dest),
                    R(false, mask)
                )?;
                if !op.is_unary() {
                    write!(f, ", {}", R(true, src1))?;
                }
                write!(f, ", {imm}")
            }
            Inst::MoveHi { dest, imm } => write!(f, "movehi s{dest}, {imm}"),
            Inst::Mem {
                op,
                load,
                srcdest,
                ptr,
                mask,
                offset,
            } => {
                let mn = mem_mnemonic(op, load);
                if op == MemOp::ControlReg {
                    return write!(f, "{mn} s{srcdest}, {ptr}");
                }
                write!(f, "{mn} {}, ", R(op.vector_data(), srcdest))?;
                if op.masked() {
                    write!(f, "s{mask}, ")?;
                }
                write!(f, "{}({})", Off(offset), R(op.vector_ptr(), ptr))
            }
            Inst::Cache {
                op,
                ptr,
                phys,
                offset,
                ..
            } => {
                let mn = op.mnemonic();
                match op {
                    CacheOp::DtlbInsert | CacheOp::ItlbInsert => write!(f, "{mn} s{ptr}, s{phys}"),
                    CacheOp::DInvalidate | CacheOp::DFlush | CacheOp::TlbInval => {
                        if offset == 0 {
                            write!(f, "{mn} s{ptr}")
                        } else {
                            write!(f, "{mn} {offset}(s{ptr})")
                        }
                    }
                    CacheOp::IInvalidate => write!(f, "{mn} s{ptr}"),
                    CacheOp::Membar | CacheOp::TlbInvalAll => f.write_str(mn),
                }
            }
            Inst::Branch { op, reg, offset } => match op {
                BranchOp::Reg if reg == 31 => f.write_str("ret"),
                BranchOp::Reg | BranchOp::CallReg => write!(f, "{} s{reg}", op.mnemonic()),
                BranchOp::Bz | BranchOp::Bnz => write!(f, "{} s{reg}, {offset}", op.mnemonic()),
                BranchOp::Jump | BranchOp::Call => write!(f, "{} {offset}", op.mnemonic()),
                BranchOp::Eret => f.write_str("eret"),
            },
        }
    }
}
