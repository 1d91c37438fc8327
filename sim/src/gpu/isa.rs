//! The `dac-gpu` SIMT instruction set: a PTX-flavoured assembly decoded into plain Rust
//! values. The same values are what the assembler produces, what a back end builds
//! directly (see [`KernelBuilder`]) and what the simulator executes: instructions sit in a
//! `Vec` per kernel, operands are small enums holding register indices, and branch
//! targets are already instruction indices, so nothing is looked up by name at run time.
//!
//! Registers are 32 bits wide. 64-bit values (`.u64`, `.s64`, `.b64`, `.f64`) occupy an
//! even-aligned pair of 32-bit registers, named by the low one (`%rd4` is `%r4:%r5`),
//! so the register file and the occupancy calculation count only 32-bit registers.
//! Addresses are 64 bits: an address register is a pair (`[%rd2]`) or a 32-bit register
//! whose value is zero-extended (`[%r1]`), so a back end may keep pointers in either.
//!
//! The decoupled affine computation (DAC) extension is defined here already: affine
//! registers (`%a`), the `enq.*` instructions of the affine stream and the `deq.*`
//! forms of the non-affine stream, with the operand shapes of Wang and Lin (ISCA'17).
//! The uniform datapath: an instruction marked `.uni` ([`Inst::uni`]) or writing a
//! uniform register (`%ur`) computes one value per warp on the scalar unit.

use std::fmt;

/// A scalar type and width, as the suffix of a mnemonic (`.s32`, `.f64`, `.pred`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Pred,
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F32,
    F64,
}

impl Type {
    pub const ALL: [Type; 15] = [
        Type::Pred,
        Type::B8,
        Type::B16,
        Type::B32,
        Type::B64,
        Type::U8,
        Type::U16,
        Type::U32,
        Type::U64,
        Type::S8,
        Type::S16,
        Type::S32,
        Type::S64,
        Type::F32,
        Type::F64,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Type::Pred => "pred",
            Type::B8 => "b8",
            Type::B16 => "b16",
            Type::B32 => "b32",
            Type::B64 => "b64",
            Type::U8 => "u8",
            Type::U16 => "u16",
            Type::U32 => "u32",
            Type::U64 => "u64",
            Type::S8 => "s8",
            Type::S16 => "s16",
            Type::S32 => "s32",
            Type::S64 => "s64",
            Type::F32 => "f32",
            Type::F64 => "f64",
        }
    }

    pub fn from_name(s: &str) -> Option<Type> {
        Type::ALL.iter().copied().find(|t| t.name() == s)
    }

    /// Width in bits (1 for predicates).
    pub fn bits(self) -> u32 {
        match self {
            Type::Pred => 1,
            Type::B8 | Type::U8 | Type::S8 => 8,
            Type::B16 | Type::U16 | Type::S16 => 16,
            Type::B32 | Type::U32 | Type::S32 | Type::F32 => 32,
            Type::B64 | Type::U64 | Type::S64 | Type::F64 => 64,
        }
    }

    /// Size in memory in bytes (a predicate is stored as one byte).
    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    /// True when a register value of this type takes a register pair.
    pub fn is_wide(self) -> bool {
        self.bits() == 64
    }

    pub fn is_float(self) -> bool {
        matches!(self, Type::F32 | Type::F64)
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Type::S8 | Type::S16 | Type::S32 | Type::S64)
    }

    /// An integer or bit type (not float, not predicate).
    pub fn is_int(self) -> bool {
        !self.is_float() && self != Type::Pred
    }

    /// True for the register-sized types that arithmetic operates on (32 or 64 bits).
    pub fn is_reg_sized(self) -> bool {
        matches!(self.bits(), 32 | 64)
    }
}

/// A register file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegFile {
    /// Per-thread 32-bit registers, `%r<n>` (`%rd<n>` for the pair at n, n+1).
    R,
    /// Per-thread predicates, `%p<n>`.
    P,
    /// Uniform (one per warp) 32-bit registers, `%ur<n>` (`%urd<n>` for pairs): reserved
    /// for the uniform datapath.
    Ur,
    /// DAC affine registers, `%a<n>`: each holds an affine tuple (base, offset) of the
    /// affine warp. Used only by the affine stream.
    A,
}

impl RegFile {
    pub const ALL: [RegFile; 4] = [RegFile::R, RegFile::P, RegFile::Ur, RegFile::A];

    /// The register name's prefix (`%r`, `%p`, `%ur`, `%a`).
    pub fn prefix(self) -> &'static str {
        match self {
            RegFile::R => "%r",
            RegFile::P => "%p",
            RegFile::Ur => "%ur",
            RegFile::A => "%a",
        }
    }

    /// The most registers of this file a kernel may use on the machine. `%r` is the
    /// per-thread register file: 255, the largest per-thread count of any
    /// configuration (8-bit register fields); code for it is register-allocated. The
    /// other files are not allocated by the compiler (the affine stream keeps its
    /// virtual numbering, predicates may be left at 256 and more), so they are bounded
    /// only to keep a warp's state within reason.
    pub fn limit(self) -> u32 {
        match self {
            RegFile::R => 255,
            RegFile::P | RegFile::Ur => 1 << 16,
            RegFile::A => 1 << 20,
        }
    }
}

/// A register: a file and an index within it. For 64-bit operands `idx` is the low
/// register of an even-aligned pair.
///
/// Indices are 32-bit: instruction selection numbers a value per register before
/// allocation (large unoptimized kernels name far more than 65,536), and the DAC affine
/// stream keeps that numbering. The machine's own register file is much smaller; a
/// launch checks each kernel against it ([`Kernel::check_register_files`]). Packed to
/// 2-byte alignment so that a `Reg` takes 6 bytes and [`Inst`] stays at 72.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(Rust, packed(2))]
pub struct Reg {
    pub file: RegFile,
    pub idx: u32,
}

impl Reg {
    pub const fn r(idx: u32) -> Reg {
        Reg {
            file: RegFile::R,
            idx,
        }
    }
    pub const fn p(idx: u32) -> Reg {
        Reg {
            file: RegFile::P,
            idx,
        }
    }
    pub const fn ur(idx: u32) -> Reg {
        Reg {
            file: RegFile::Ur,
            idx,
        }
    }
    pub const fn a(idx: u32) -> Reg {
        Reg {
            file: RegFile::A,
            idx,
        }
    }
}

/// A dimension of a three-dimensional special register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    X,
    Y,
    Z,
}

impl Dim {
    pub const ALL: [Dim; 3] = [Dim::X, Dim::Y, Dim::Z];
    pub fn name(self) -> &'static str {
        match self {
            Dim::X => "x",
            Dim::Y => "y",
            Dim::Z => "z",
        }
    }
}

/// A read-only special register (all `.u32` except the 64-bit `%clock64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Special {
    /// Thread index within the block.
    Tid(Dim),
    /// Block extent (threads).
    Ntid(Dim),
    /// Block index within the grid.
    Ctaid(Dim),
    /// Grid extent (blocks).
    Nctaid(Dim),
    /// Lane within the warp, 0..warp size.
    LaneId,
    /// Warp index within the block.
    WarpId,
    /// A 64-bit counter that never goes backwards, equal in all lanes of a warp: the
    /// SM's cycle in timing mode, the warp's executed instructions in functional mode.
    Clock64,
}

impl Special {
    /// Every special register, for tests and tables.
    pub fn all() -> Vec<Special> {
        let mut v = Vec::new();
        for d in Dim::ALL {
            v.extend([
                Special::Tid(d),
                Special::Ntid(d),
                Special::Ctaid(d),
                Special::Nctaid(d),
            ]);
        }
        v.extend([Special::LaneId, Special::WarpId, Special::Clock64]);
        v
    }

    pub fn name(self) -> String {
        match self {
            Special::Tid(d) => format!("%tid.{}", d.name()),
            Special::Ntid(d) => format!("%ntid.{}", d.name()),
            Special::Ctaid(d) => format!("%ctaid.{}", d.name()),
            Special::Nctaid(d) => format!("%nctaid.{}", d.name()),
            Special::LaneId => "%laneid".into(),
            Special::WarpId => "%warpid".into(),
            Special::Clock64 => "%clock64".into(),
        }
    }

    /// Whether the register is 64 bits wide (a `.u64`/`.s64`/`.b64` operand).
    pub fn is_wide(self) -> bool {
        self == Special::Clock64
    }
}

/// A source operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Src {
    Reg(Reg),
    /// An immediate: the bit pattern of a value of the operand's type, zero-extended
    /// (a `-1` in an `.s32` slot is `0xffff_ffff`; `1.0` in `.f32` is `0x3f80_0000`).
    Imm(u64),
    Special(Special),
}

/// A memory space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    Global,
    Shared,
    Local,
    Param,
}

impl Space {
    pub const ALL: [Space; 4] = [Space::Global, Space::Shared, Space::Local, Space::Param];
    pub fn name(self) -> &'static str {
        match self {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Local => "local",
            Space::Param => "param",
        }
    }
}

/// What an address is relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddrBase {
    /// An absolute address (`[offset]`).
    None,
    /// A 32-bit register holding an address, zero-extended (`[%r1+8]`).
    Reg(Reg),
    /// A 64-bit register pair holding an address (`[%rd2+8]`), as the language's
    /// 8-byte pointers are kept.
    RegPair(Reg),
    /// A kernel parameter by index (`[n]`, `[n+4]`), only in `.param` accesses.
    Param(u16),
    /// DAC: the next address record of this warp's address queue (`[deq.addr]`).
    DeqAddr,
    /// DAC: the next prefetched datum of this warp's data queue (`[deq.data]`), loads only.
    DeqData,
}

/// A memory operand `[base+offset]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Address {
    pub base: AddrBase,
    pub offset: i32,
}

/// Two-operand arithmetic and logic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    /// Integer: the low half of the product; float: the product.
    Mul,
    /// Integer only: the high half of the full product.
    MulHi,
    Div,
    Rem,
    Min,
    Max,
    And,
    Or,
    Xor,
    Shl,
    /// Arithmetic for `.s` types, logical otherwise.
    Shr,
}

impl BinOp {
    pub const ALL: [BinOp; 13] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::MulHi,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Min,
        BinOp::Max,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Shr,
    ];
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::MulHi => "mulhi",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
        }
    }
    /// Whether the operation is defined on `ty`.
    pub fn accepts(self, ty: Type) -> bool {
        match self {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Min | BinOp::Max => {
                ty.is_reg_sized() && !matches!(ty, Type::B32 | Type::B64)
            }
            BinOp::MulHi | BinOp::Rem => {
                ty.is_reg_sized() && ty.is_int() && !matches!(ty, Type::B32 | Type::B64)
            }
            BinOp::And | BinOp::Or | BinOp::Xor => {
                ty == Type::Pred || matches!(ty, Type::B32 | Type::B64)
            }
            BinOp::Shl => matches!(ty, Type::B32 | Type::B64),
            BinOp::Shr => ty.is_reg_sized() && ty.is_int(),
        }
    }
    /// Shift amounts are always `.u32`, whatever the width shifted.
    pub fn is_shift(self) -> bool {
        matches!(self, BinOp::Shl | BinOp::Shr)
    }
}

/// One-operand operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Mov,
    Neg,
    Not,
    Abs,
    /// Correctly rounded square root (floats).
    Sqrt,
    /// Population count (result `.u32`... written to a register of the operand's width).
    Popc,
    /// Count leading zeros.
    Clz,
}

impl UnOp {
    pub const ALL: [UnOp; 7] = [
        UnOp::Mov,
        UnOp::Neg,
        UnOp::Not,
        UnOp::Abs,
        UnOp::Sqrt,
        UnOp::Popc,
        UnOp::Clz,
    ];
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Mov => "mov",
            UnOp::Neg => "neg",
            UnOp::Not => "not",
            UnOp::Abs => "abs",
            UnOp::Sqrt => "sqrt",
            UnOp::Popc => "popc",
            UnOp::Clz => "clz",
        }
    }
    pub fn accepts(self, ty: Type) -> bool {
        match self {
            UnOp::Mov => true,
            UnOp::Neg | UnOp::Abs => ty.is_reg_sized() && (ty.is_float() || ty.is_signed()),
            UnOp::Not => ty == Type::Pred || matches!(ty, Type::B32 | Type::B64),
            UnOp::Sqrt => ty.is_float(),
            UnOp::Popc | UnOp::Clz => matches!(ty, Type::B32 | Type::B64),
        }
    }
}

/// A comparison. For floats the plain forms are ordered (false if either is NaN) and
/// the `u` forms unordered (true if either is NaN); integers use only the plain forms,
/// signed or unsigned by the type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    /// Both are numbers.
    Num,
    /// Either is NaN.
    Nan,
}

impl Cmp {
    pub const ALL: [Cmp; 14] = [
        Cmp::Eq,
        Cmp::Ne,
        Cmp::Lt,
        Cmp::Le,
        Cmp::Gt,
        Cmp::Ge,
        Cmp::Equ,
        Cmp::Neu,
        Cmp::Ltu,
        Cmp::Leu,
        Cmp::Gtu,
        Cmp::Geu,
        Cmp::Num,
        Cmp::Nan,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Cmp::Eq => "eq",
            Cmp::Ne => "ne",
            Cmp::Lt => "lt",
            Cmp::Le => "le",
            Cmp::Gt => "gt",
            Cmp::Ge => "ge",
            Cmp::Equ => "equ",
            Cmp::Neu => "neu",
            Cmp::Ltu => "ltu",
            Cmp::Leu => "leu",
            Cmp::Gtu => "gtu",
            Cmp::Geu => "geu",
            Cmp::Num => "num",
            Cmp::Nan => "nan",
        }
    }
    pub fn accepts(self, ty: Type) -> bool {
        let ordered = matches!(
            self,
            Cmp::Eq | Cmp::Ne | Cmp::Lt | Cmp::Le | Cmp::Gt | Cmp::Ge
        );
        ty.is_reg_sized() && (ty.is_float() || ordered)
    }
}

/// A rounding modifier of `cvt`: `rn rz rm rp` round a float result; `rni rzi rmi rpi`
/// round to an integral value (to an integer type, or float to float of the same width).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Round {
    Rn,
    Rz,
    Rm,
    Rp,
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

impl Round {
    pub const ALL: [Round; 8] = [
        Round::Rn,
        Round::Rz,
        Round::Rm,
        Round::Rp,
        Round::Rni,
        Round::Rzi,
        Round::Rmi,
        Round::Rpi,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Round::Rn => "rn",
            Round::Rz => "rz",
            Round::Rm => "rm",
            Round::Rp => "rp",
            Round::Rni => "rni",
            Round::Rzi => "rzi",
            Round::Rmi => "rmi",
            Round::Rpi => "rpi",
        }
    }
}

/// Read-modify-write operations of `atom`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
    Exch,
    /// Compare and swap: stores the second operand if memory equals the first.
    Cas,
}

impl AtomOp {
    pub const ALL: [AtomOp; 8] = [
        AtomOp::Add,
        AtomOp::Min,
        AtomOp::Max,
        AtomOp::And,
        AtomOp::Or,
        AtomOp::Xor,
        AtomOp::Exch,
        AtomOp::Cas,
    ];
    pub fn name(self) -> &'static str {
        match self {
            AtomOp::Add => "add",
            AtomOp::Min => "min",
            AtomOp::Max => "max",
            AtomOp::And => "and",
            AtomOp::Or => "or",
            AtomOp::Xor => "xor",
            AtomOp::Exch => "exch",
            AtomOp::Cas => "cas",
        }
    }
    pub fn accepts(self, ty: Type) -> bool {
        match self {
            AtomOp::Add | AtomOp::Min | AtomOp::Max => {
                matches!(
                    ty,
                    Type::U32 | Type::S32 | Type::U64 | Type::S64 | Type::F32 | Type::F64
                )
            }
            AtomOp::And | AtomOp::Or | AtomOp::Xor | AtomOp::Exch | AtomOp::Cas => {
                matches!(ty, Type::B32 | Type::B64)
            }
        }
    }
}

/// Warp vote modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VoteMode {
    /// `vote.any.pred %pd, %ps`: true if the predicate holds in any active lane.
    Any,
    /// `vote.all.pred %pd, %ps`: true if it holds in every active lane.
    All,
    /// `vote.ballot.b32 %rd, %ps`: bit i set when lane i is active and the predicate holds.
    Ballot,
}

impl VoteMode {
    pub const ALL: [VoteMode; 3] = [VoteMode::Any, VoteMode::All, VoteMode::Ballot];
    pub fn name(self) -> &'static str {
        match self {
            VoteMode::Any => "any",
            VoteMode::All => "all",
            VoteMode::Ballot => "ballot",
        }
    }
}

/// Warp shuffle modes (PTX `shfl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShflMode {
    Up,
    Down,
    Idx,
    Bfly,
}

impl ShflMode {
    pub const ALL: [ShflMode; 4] = [ShflMode::Up, ShflMode::Down, ShflMode::Idx, ShflMode::Bfly];
    pub fn name(self) -> &'static str {
        match self {
            ShflMode::Up => "up",
            ShflMode::Down => "down",
            ShflMode::Idx => "idx",
            ShflMode::Bfly => "bfly",
        }
    }
}

/// Scope of a memory fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FenceScope {
    Cta,
    Gl,
}

/// An instruction's operation and operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `op.ty d, a, b`
    Bin {
        op: BinOp,
        ty: Type,
        dst: Reg,
        a: Src,
        b: Src,
    },
    /// `op.ty d, a`
    Un {
        op: UnOp,
        ty: Type,
        dst: Reg,
        a: Src,
    },
    /// `mad.ty d, a, b, c`: d = a*b + c; for floats a fused multiply-add, rounded once.
    Mad {
        ty: Type,
        dst: Reg,
        a: Src,
        b: Src,
        c: Src,
    },
    /// `cvt{.rnd}.dty.sty d, a`
    Cvt {
        rnd: Option<Round>,
        dty: Type,
        sty: Type,
        dst: Reg,
        a: Src,
    },
    /// `setp.cmp.ty %p, a, b`
    Setp {
        cmp: Cmp,
        ty: Type,
        dst: Reg,
        a: Src,
        b: Src,
    },
    /// `selp.ty d, a, b, %p`: d = p ? a : b
    Selp {
        ty: Type,
        dst: Reg,
        a: Src,
        b: Src,
        p: Reg,
    },
    /// `ld.space.ty d, [addr]`: 8- and 16-bit loads extend by the type's signedness.
    Ld {
        space: Space,
        ty: Type,
        dst: Reg,
        addr: Address,
    },
    /// `st.space.ty [addr], a`
    St {
        space: Space,
        ty: Type,
        addr: Address,
        a: Src,
    },
    /// `atom.space.op.ty d, [addr], a{, b}`: d receives the old value.
    Atom {
        space: Space,
        op: AtomOp,
        ty: Type,
        dst: Reg,
        addr: Address,
        a: Src,
        b: Option<Src>,
    },
    /// `bra target` (divergent) or `bra.uni target` (the compiler asserts that every
    /// active lane agrees on the guard).
    Bra {
        uni: bool,
        target: u32,
    },
    /// `call f`: pushes a return point and jumps to function `func` (index in
    /// [`Program::kernels`]); registers are shared with the caller.
    Call {
        func: u32,
    },
    Ret,
    Exit,
    /// `bar.sync id`
    Bar {
        id: u32,
    },
    Fence {
        scope: FenceScope,
    },
    /// `vote.any.pred d, p` / `vote.all.pred d, p` / `vote.ballot.b32 d, p`
    Vote {
        mode: VoteMode,
        dst: Reg,
        p: Reg,
    },
    /// `shfl.mode.b32 d{|p}, a, lane, clamp`
    Shfl {
        mode: ShflMode,
        dst: Reg,
        dst_pred: Option<Reg>,
        a: Src,
        lane: Src,
        clamp: Src,
    },
    Nop,
    /// DAC, affine stream: `enq.data.space.ty %a` (or a pair `%ad`): expand the affine address tuple per
    /// non-affine warp, prefetch the data and queue it for `ld [deq.data]`.
    EnqData {
        space: Space,
        ty: Type,
        addr: Reg,
        /// The tuple's base is 64 bits (`%ad`, `%urd`): an address register pair.
        wide: bool,
    },
    /// DAC, affine stream: `enq.addr.space.ty %a`: expand the affine address tuple into
    /// per-warp address records for `[deq.addr]`.
    EnqAddr {
        space: Space,
        ty: Type,
        addr: Reg,
        /// The tuple's base is 64 bits (`%ad`, `%urd`): an address register pair.
        wide: bool,
    },
    /// DAC, affine stream: `enq.pred.cmp.ty a, b`: the predicate expansion unit
    /// evaluates the comparison of two affine operands per non-affine warp and queues
    /// the bit masks for `deq.pred`.
    EnqPred {
        cmp: Cmp,
        ty: Type,
        a: Src,
        b: Src,
    },
    /// DAC, affine stream: `enq.data.sel.space.ty.cmp.cty %then, %else, a, b` (or
    /// `enq.addr.sel...`): a *select tuple*, the address `a cmp b ? %then : %else` per
    /// lane (hotspot's clamped neighbours); the expansion units evaluate the compare
    /// per lane (as the PEU's slow path) and expand the address of the arm each lane
    /// takes. A non-affine warp pops it with `[deq.data]` / `[deq.addr]` as a plain
    /// entry.
    EnqSel {
        /// `enq.data` (prefetched) when true, else `enq.addr`.
        data: bool,
        space: Space,
        ty: Type,
        then: Reg,
        els: Reg,
        /// The address tuples are 64-bit pairs (`%ad`).
        wide: bool,
        cmp: Cmp,
        /// The compared operands' type.
        cty: Type,
        a: Src,
        b: Src,
    },
    /// DAC, non-affine stream: `deq.pred %p`: pop this warp's next predicate mask.
    DeqPred {
        dst: Reg,
    },
}

/// A guard `@%p` (or `@!%p`): lanes where it is false do nothing. Packed like
/// [`Reg`], for the size of [`Inst`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(Rust, packed(2))]
pub struct Guard {
    pub pred: u32,
    pub negate: bool,
}

/// One instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Inst {
    pub guard: Option<Guard>,
    pub op: Op,
    /// The `.uni` modifier (`add.uni.s32`): an instruction of the uniform datapath,
    /// computed once per warp and broadcast to the executing lanes; its operands must
    /// be equal in every executing lane (see [`Op::uni_allowed`] for which ops).
    pub uni: bool,
}

impl Inst {
    pub fn new(op: Op) -> Inst {
        Inst {
            guard: None,
            op,
            uni: false,
        }
    }
    pub fn guarded(pred: u32, negate: bool, op: Op) -> Inst {
        Inst {
            guard: Some(Guard { pred, negate }),
            op,
            uni: false,
        }
    }
    /// The same instruction on the uniform datapath (`.uni`).
    pub fn with_uni(self, uni: bool) -> Inst {
        Inst { uni, ..self }
    }
}

impl Op {
    /// The memory operand of a load, store or atomic: its space, element type and
    /// address (`None` for every other operation).
    pub fn memory_access(&self) -> Option<(Space, Type, Address)> {
        match *self {
            Op::Ld {
                space, ty, addr, ..
            }
            | Op::St {
                space, ty, addr, ..
            }
            | Op::Atom {
                space, ty, addr, ..
            } => Some((space, ty, addr)),
            _ => None,
        }
    }

    /// Whether the operation may carry `.uni`: arithmetic, logic, moves, conversions,
    /// comparisons and selections, and loads from every space but `.local` (which is
    /// per thread). Effects, warp-level operations and control flow may not.
    pub fn uni_allowed(&self) -> bool {
        match self {
            Op::Bin { .. }
            | Op::Un { .. }
            | Op::Mad { .. }
            | Op::Cvt { .. }
            | Op::Setp { .. }
            | Op::Selp { .. } => true,
            Op::Ld { space, addr, .. } => {
                *space != Space::Local
                    && !matches!(addr.base, AddrBase::DeqAddr | AddrBase::DeqData)
            }
            _ => false,
        }
    }
}

/// A register an instruction reads or writes, with its width: what a scoreboard, a
/// register allocator or a liveness analysis needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegAccess {
    pub reg: Reg,
    /// A 64-bit pair (`reg.idx` and `reg.idx + 1`).
    pub wide: bool,
    /// Written (true) or read (false).
    pub def: bool,
}

/// The functional unit class of an instruction, which decides its latency and issue
/// cost in the timing model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Integer and single-precision add, logic, shifts, moves, compares, conversions.
    Alu,
    /// Integer multiply and multiply-add.
    Mul,
    /// Double-precision arithmetic.
    F64,
    /// Divide, remainder and square root.
    Div,
    /// Loads, stores and atomics to a memory space (and the DAC accesses).
    Mem(Space),
    /// Branches, calls, exit, barriers and fences.
    Ctrl,
    /// Votes and shuffles.
    Warp,
    /// DAC queue operations.
    Queue,
}

impl Inst {
    /// Calls `f` for every register the instruction reads (guard included) and writes,
    /// reads first.
    pub fn for_each_reg(&self, mut f: impl FnMut(RegAccess)) {
        if let Some(g) = self.guard {
            f(RegAccess {
                reg: Reg::p(g.pred),
                wide: false,
                def: false,
            });
        }
        let use_src = |s: Src, ty: Type, f: &mut dyn FnMut(RegAccess)| {
            if let Src::Reg(reg) = s {
                f(RegAccess {
                    reg,
                    wide: ty.is_wide(),
                    def: false,
                });
            }
        };
        let addr_use = |a: Address, f: &mut dyn FnMut(RegAccess)| match a.base {
            AddrBase::Reg(reg) => f(RegAccess {
                reg,
                wide: false,
                def: false,
            }),
            AddrBase::RegPair(reg) => f(RegAccess {
                reg,
                wide: true,
                def: false,
            }),
            _ => {}
        };
        let def = |reg: Reg, ty: Type| RegAccess {
            reg,
            wide: ty.is_wide(),
            def: true,
        };
        let wide_ty = |w: bool| if w { Type::U64 } else { Type::U32 };
        match self.op {
            Op::Bin { op, ty, dst, a, b } => {
                use_src(a, ty, &mut f);
                use_src(b, if op.is_shift() { Type::U32 } else { ty }, &mut f);
                f(def(dst, ty));
            }
            Op::Un { ty, dst, a, .. } => {
                use_src(a, ty, &mut f);
                f(def(dst, ty));
            }
            Op::Mad { ty, dst, a, b, c } => {
                for s in [a, b, c] {
                    use_src(s, ty, &mut f);
                }
                f(def(dst, ty));
            }
            Op::Cvt {
                dty, sty, dst, a, ..
            } => {
                use_src(a, sty, &mut f);
                f(def(dst, dty));
            }
            Op::Setp { ty, dst, a, b, .. } => {
                use_src(a, ty, &mut f);
                use_src(b, ty, &mut f);
                f(def(dst, Type::Pred));
            }
            Op::Selp { ty, dst, a, b, p } => {
                use_src(a, ty, &mut f);
                use_src(b, ty, &mut f);
                f(RegAccess {
                    reg: p,
                    wide: false,
                    def: false,
                });
                f(def(dst, ty));
            }
            Op::Ld { ty, dst, addr, .. } => {
                addr_use(addr, &mut f);
                f(def(dst, ty));
            }
            Op::St { ty, addr, a, .. } => {
                addr_use(addr, &mut f);
                use_src(a, ty, &mut f);
            }
            Op::Atom {
                ty,
                dst,
                addr,
                a,
                b,
                ..
            } => {
                addr_use(addr, &mut f);
                use_src(a, ty, &mut f);
                if let Some(b) = b {
                    use_src(b, ty, &mut f);
                }
                f(def(dst, ty));
            }
            Op::Vote { mode, dst, p } => {
                f(RegAccess {
                    reg: p,
                    wide: false,
                    def: false,
                });
                f(def(
                    dst,
                    if mode == VoteMode::Ballot {
                        Type::B32
                    } else {
                        Type::Pred
                    },
                ));
            }
            Op::Shfl {
                dst,
                dst_pred,
                a,
                lane,
                clamp,
                ..
            } => {
                use_src(a, Type::B32, &mut f);
                use_src(lane, Type::U32, &mut f);
                use_src(clamp, Type::U32, &mut f);
                f(def(dst, Type::B32));
                if let Some(p) = dst_pred {
                    f(def(p, Type::Pred));
                }
            }
            Op::EnqData { addr, wide, .. } | Op::EnqAddr { addr, wide, .. } => {
                use_src(Src::Reg(addr), wide_ty(wide), &mut f);
            }
            Op::EnqPred { ty, a, b, .. } => {
                use_src(a, ty, &mut f);
                use_src(b, ty, &mut f);
            }
            Op::EnqSel {
                then,
                els,
                wide,
                cty,
                a,
                b,
                ..
            } => {
                use_src(Src::Reg(then), wide_ty(wide), &mut f);
                use_src(Src::Reg(els), wide_ty(wide), &mut f);
                use_src(a, cty, &mut f);
                use_src(b, cty, &mut f);
            }
            Op::DeqPred { dst } => f(def(dst, Type::Pred)),
            Op::Bra { .. } | Op::Call { .. } | Op::Ret | Op::Exit | Op::Bar { .. } => {}
            Op::Fence { .. } | Op::Nop => {}
        }
    }

    /// The functional unit that executes the instruction.
    pub fn unit(&self) -> Unit {
        match self.op {
            Op::Bin {
                op: BinOp::Div | BinOp::Rem,
                ..
            }
            | Op::Un { op: UnOp::Sqrt, .. } => Unit::Div,
            Op::Bin { ty: Type::F64, .. }
            | Op::Un { ty: Type::F64, .. }
            | Op::Mad { ty: Type::F64, .. }
            | Op::Setp { ty: Type::F64, .. } => Unit::F64,
            Op::Cvt { dty, sty, .. } if dty == Type::F64 || sty == Type::F64 => Unit::F64,
            Op::Bin {
                op: BinOp::Mul | BinOp::MulHi,
                ty,
                ..
            } if ty.is_int() => Unit::Mul,
            Op::Mad { ty, .. } if ty.is_int() => Unit::Mul,
            Op::Ld { space, .. } | Op::St { space, .. } | Op::Atom { space, .. } => {
                Unit::Mem(space)
            }
            Op::Bra { .. }
            | Op::Call { .. }
            | Op::Ret
            | Op::Exit
            | Op::Bar { .. }
            | Op::Fence { .. } => Unit::Ctrl,
            Op::Vote { .. } | Op::Shfl { .. } => Unit::Warp,
            Op::EnqData { .. }
            | Op::EnqAddr { .. }
            | Op::EnqSel { .. }
            | Op::EnqPred { .. }
            | Op::DeqPred { .. } => Unit::Queue,
            _ => Unit::Alu,
        }
    }

    /// True for an instruction of the uniform datapath: marked `.uni`, or writing a
    /// uniform register.
    pub fn is_uniform(&self) -> bool {
        if self.uni {
            return true;
        }
        let mut uniform = false;
        self.for_each_reg(|a| uniform |= a.def && a.reg.file == RegFile::Ur);
        uniform
    }
}

/// A kernel parameter: name, type and byte offset in the parameter block.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    pub name: String,
    pub ty: Type,
    pub offset: u32,
}

/// A branch label: a name bound to an instruction index (`at == insts.len()` is the end).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    pub name: String,
    pub at: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKind {
    /// `.entry`: launchable, takes parameters.
    Entry,
    /// `.func`: a subroutine reached by `call`.
    Func,
    /// `.affine`: the DAC affine stream of the `.entry` of the same name, held in
    /// that entry's [`Kernel::affine`] (never in [`Program::kernels`]).
    Affine,
}

/// A kernel or function with everything the simulator and the occupancy calculator
/// need: register counts, shared and local memory, the parameter layout and the code.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    pub name: String,
    pub kind: KernelKind,
    pub params: Vec<Param>,
    /// 32-bit registers per thread (`%r0..`): what occupancy counts.
    pub num_regs: u32,
    pub num_preds: u32,
    pub num_uregs: u32,
    pub num_aregs: u32,
    /// Shared memory per block, bytes.
    pub shared_bytes: u32,
    /// Local (per-thread private) memory, bytes.
    pub local_bytes: u32,
    pub insts: Vec<Inst>,
    /// Sorted by `at`; every branch target has at least one.
    pub labels: Vec<Label>,
    /// DAC: the affine stream of a decoupled entry (kind [`KernelKind::Affine`], the
    /// entry's name and parameters, its own code and labels; see `sim::gpu::affine`).
    /// `None` for an ordinary kernel.
    pub affine: Option<Box<Kernel>>,
}

impl Kernel {
    pub fn new(name: &str, kind: KernelKind) -> Kernel {
        Kernel {
            name: name.to_string(),
            kind,
            params: Vec::new(),
            num_regs: 0,
            num_preds: 0,
            num_uregs: 0,
            num_aregs: 0,
            shared_bytes: 0,
            local_bytes: 0,
            insts: Vec::new(),
            labels: Vec::new(),
            affine: None,
        }
    }

    /// Attaches `stream` as this entry's DAC affine stream: it takes the entry's name
    /// and parameters and the kind [`KernelKind::Affine`].
    pub fn set_affine(&mut self, mut stream: Kernel) {
        stream.name = self.name.clone();
        stream.kind = KernelKind::Affine;
        stream.params = self.params.clone();
        stream.affine = None;
        self.affine = Some(Box::new(stream));
    }

    /// The registers the kernel uses of each file: `.reg`, `.pred`, `.ureg`, `.areg`.
    pub fn register_counts(&self) -> [(RegFile, u32); 4] {
        [
            (RegFile::R, self.num_regs),
            (RegFile::P, self.num_preds),
            (RegFile::Ur, self.num_uregs),
            (RegFile::A, self.num_aregs),
        ]
    }

    /// Checks that the kernel's register files (and its affine stream's) fit the
    /// machine ([`RegFile::limit`]); a launch does before allocating any warp state.
    pub fn check_register_files(&self) -> Result<(), String> {
        let over = self
            .register_counts()
            .into_iter()
            .find(|&(file, n)| n > file.limit());
        if let Some((file, n)) = over {
            return Err(format!(
                "`{}` uses {n} {} registers; the machine has {}",
                self.name,
                file.prefix(),
                file.limit()
            ));
        }
        self.affine
            .as_deref()
            .map_or(Ok(()), Kernel::check_register_files)
    }

    /// Size of the parameter block in bytes.
    pub fn param_bytes(&self) -> u32 {
        self.params
            .iter()
            .map(|p| p.offset + p.ty.bytes())
            .max()
            .unwrap_or(0)
    }

    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }

    /// Appends a parameter at the next offset aligned to its size.
    pub fn add_param(&mut self, name: &str, ty: Type) -> u16 {
        let align = ty.bytes().max(1);
        let offset = self.param_bytes().div_ceil(align) * align;
        self.params.push(Param {
            name: name.to_string(),
            ty,
            offset,
        });
        (self.params.len() - 1) as u16
    }
}

/// A whole program: kernels and functions, indexed by `call`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Program {
    pub kernels: Vec<Kernel>,
}

impl Program {
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// A label handle of a [`KernelBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LabelId(pub u32);

/// Builds a [`Kernel`] without text: allocates registers, binds labels and resolves
/// branches to instruction indices when finished.
pub struct KernelBuilder {
    kernel: Kernel,
    label_names: Vec<String>,
    label_at: Vec<Option<u32>>,
    fixups: Vec<(usize, LabelId)>,
}

impl KernelBuilder {
    pub fn new(name: &str, kind: KernelKind) -> Self {
        KernelBuilder {
            kernel: Kernel::new(name, kind),
            label_names: Vec::new(),
            label_at: Vec::new(),
            fixups: Vec::new(),
        }
    }

    /// Declares a parameter; returns its index for [`AddrBase::Param`].
    pub fn param(&mut self, name: &str, ty: Type) -> u16 {
        self.kernel.add_param(name, ty)
    }

    /// A fresh 32-bit register.
    pub fn reg(&mut self) -> Reg {
        let r = Reg::r(self.kernel.num_regs);
        self.kernel.num_regs += 1;
        r
    }

    /// A fresh even-aligned register pair for a 64-bit value.
    pub fn reg64(&mut self) -> Reg {
        self.kernel.num_regs += self.kernel.num_regs % 2;
        let r = Reg::r(self.kernel.num_regs);
        self.kernel.num_regs += 2;
        r
    }

    pub fn pred(&mut self) -> Reg {
        let r = Reg::p(self.kernel.num_preds);
        self.kernel.num_preds += 1;
        r
    }

    pub fn ureg(&mut self) -> Reg {
        let r = Reg::ur(self.kernel.num_uregs);
        self.kernel.num_uregs += 1;
        r
    }

    pub fn areg(&mut self) -> Reg {
        let r = Reg::a(self.kernel.num_aregs);
        self.kernel.num_aregs += 1;
        r
    }

    /// A fresh even-aligned uniform register pair (`%urd`).
    pub fn ureg64(&mut self) -> Reg {
        self.kernel.num_uregs += self.kernel.num_uregs % 2;
        let r = Reg::ur(self.kernel.num_uregs);
        self.kernel.num_uregs += 2;
        r
    }

    /// A fresh even-aligned affine register pair (`%ad`, a 64-bit tuple).
    pub fn areg64(&mut self) -> Reg {
        self.kernel.num_aregs += self.kernel.num_aregs % 2;
        let r = Reg::a(self.kernel.num_aregs);
        self.kernel.num_aregs += 2;
        r
    }

    pub fn set_shared_bytes(&mut self, n: u32) {
        self.kernel.shared_bytes = n;
    }

    pub fn set_local_bytes(&mut self, n: u32) {
        self.kernel.local_bytes = n;
    }

    /// A new, unbound label; names must be unique within the kernel.
    pub fn label(&mut self, name: &str) -> LabelId {
        self.label_names.push(name.to_string());
        self.label_at.push(None);
        LabelId((self.label_names.len() - 1) as u32)
    }

    /// Binds `l` to the next instruction pushed.
    pub fn bind(&mut self, l: LabelId) {
        self.label_at[l.0 as usize] = Some(self.kernel.insts.len() as u32);
    }

    /// Appends an instruction; returns its index.
    pub fn push(&mut self, inst: Inst) -> usize {
        self.kernel.insts.push(inst);
        self.kernel.insts.len() - 1
    }

    /// Appends a branch to `target` (guarded when `guard` is given).
    pub fn bra(&mut self, guard: Option<Guard>, uni: bool, target: LabelId) -> usize {
        let i = self.push(Inst {
            guard,
            op: Op::Bra {
                uni,
                target: u32::MAX,
            },
            uni: false,
        });
        self.fixups.push((i, target));
        i
    }

    /// Resolves branches and returns the kernel, or the names of labels never bound.
    pub fn finish(mut self) -> Result<Kernel, String> {
        for &(i, l) in &self.fixups {
            let at = self.label_at[l.0 as usize].ok_or_else(|| {
                format!("label `{}` is never bound", self.label_names[l.0 as usize])
            })?;
            if let Op::Bra { target, .. } = &mut self.kernel.insts[i].op {
                *target = at;
            }
        }
        let mut labels: Vec<Label> = self
            .label_names
            .into_iter()
            .zip(self.label_at)
            .filter_map(|(name, at)| at.map(|at| Label { name, at }))
            .collect();
        labels.sort_by_key(|l| l.at);
        self.kernel.labels = labels;
        Ok(self.kernel)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
