//! Instructions: opcodes, operand formats, and what each means.
//!
//! Every instruction has at most one result. Operations on varying operands work lane
//! by lane; an instruction whose result is varying computes all lanes (dead lanes are
//! harmless because nothing observable depends on them). Operations with effects that a
//! dead lane must not have (stores, loads that may fault, atomics, calls, cross-lane
//! reductions and scans, `print`) take an explicit execution mask: the SPMD builder's
//! mask stack becomes data here, so later passes and both back ends see exactly which
//! lanes are live.
//!
//! Control flow is uniform only: `brif` branches on a uniform `bool`. Divergent control
//! flow has already been turned into masks by the builder; the "skip when no lane is
//! on" checks of paper 002 are `brif`s on `any(mask)`.

use smallvec::SmallVec;

use super::entities::{Block, FuncRef, GlobalVar, SharedVar, StackSlot, StrConst, Value};
use super::types::{Space, Type};

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $text:literal,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $var,)*
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var,)*];

            pub fn name(self) -> &'static str {
                match self {
                    $($name::$var => $text,)*
                }
            }

            pub fn from_name(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$var),)*
                    _ => None,
                }
            }
        }
    };
}

named_enum! {
    /// One-operand arithmetic; the result has the operand's type.
    UnaryOp {
        /// Two's-complement negation.
        Ineg = "ineg",
        /// Bitwise not (logical not on `bool`).
        Bnot = "bnot",
        Fneg = "fneg",
        Fabs = "fabs",
        /// Correctly rounded square root.
        Sqrt = "sqrt",
        Floor = "floor",
        Ceil = "ceil",
        /// Round toward zero.
        Trunc = "trunc",
        /// Round to nearest, ties to even.
        Nearest = "nearest",
        Popcnt = "popcnt",
        /// Count leading zeros (the operand's width for 0).
        Clz = "clz",
        /// Count trailing zeros (the operand's width for 0).
        Ctz = "ctz",
    }
}

named_enum! {
    /// Two-operand arithmetic on operands of one element type. If either operand is
    /// varying the result is varying (the builder splats the uniform one first).
    BinaryOp {
        Iadd = "iadd",
        Isub = "isub",
        Imul = "imul",
        /// Signed division, truncating; the result for a zero divisor is defined by
        /// lang-spec (the interpreter traps).
        Sdiv = "sdiv",
        Udiv = "udiv",
        Srem = "srem",
        Urem = "urem",
        Band = "band",
        Bor = "bor",
        Bxor = "bxor",
        /// Shift left; the count is taken modulo the width.
        Ishl = "ishl",
        /// Arithmetic shift right.
        Sshr = "sshr",
        /// Logical shift right.
        Ushr = "ushr",
        Smin = "smin",
        Smax = "smax",
        Umin = "umin",
        Umax = "umax",
        Fadd = "fadd",
        Fsub = "fsub",
        Fmul = "fmul",
        Fdiv = "fdiv",
        /// IEEE minNum: a NaN operand yields the other operand.
        Fmin = "fmin",
        Fmax = "fmax",
        /// Truncated floating remainder (C's `fmod`).
        Frem = "frem",
    }
}

named_enum! {
    /// Integer comparison conditions.
    IntCC {
        Eq = "eq",
        Ne = "ne",
        Slt = "slt",
        Sle = "sle",
        Sgt = "sgt",
        Sge = "sge",
        Ult = "ult",
        Ule = "ule",
        Ugt = "ugt",
        Uge = "uge",
    }
}

named_enum! {
    /// Floating comparison conditions. The ordered ones are false when either operand
    /// is NaN; `une` (C's `!=`) is true then.
    FloatCC {
        Eq = "eq",
        Une = "une",
        Lt = "lt",
        Le = "le",
        Gt = "gt",
        Ge = "ge",
        Uno = "uno",
    }
}

named_enum! {
    /// Conversions between element types (variability is kept).
    ConvOp {
        /// Sign-extend to a wider integer.
        Sext = "sext",
        /// Zero-extend to a wider integer (also `bool` to 0/1).
        Zext = "zext",
        /// Keep the low bits of a narrower integer.
        Ireduce = "ireduce",
        /// Float to signed integer, toward zero; saturating, NaN to 0.
        FcvtToSint = "fcvt_to_sint",
        FcvtToUint = "fcvt_to_uint",
        FcvtFromSint = "fcvt_from_sint",
        FcvtFromUint = "fcvt_from_uint",
        Fpromote = "fpromote",
        Fdemote = "fdemote",
        /// Same bits, another type of the same width (`floatbits`/`intbits`, pointer/int).
        Bitcast = "bitcast",
        /// Nonzero to true.
        ToBool = "to_bool",
    }
}

named_enum! {
    /// Lane and launch indices, and the clock. All are `i32` except the clock (`i64`);
    /// only the lane index and the thread index components are varying.
    SpecialReg {
        /// `programIndex`: the lane within the gang.
        LaneIndex = "lane_index",
        /// `programCount`.
        LaneCount = "lane_count",
        ThreadIdxX = "thread_idx.x",
        ThreadIdxY = "thread_idx.y",
        ThreadIdxZ = "thread_idx.z",
        BlockIdxX = "block_idx.x",
        BlockIdxY = "block_idx.y",
        BlockIdxZ = "block_idx.z",
        BlockDimX = "block_dim.x",
        BlockDimY = "block_dim.y",
        BlockDimZ = "block_dim.z",
        GridDimX = "grid_dim.x",
        GridDimY = "grid_dim.y",
        GridDimZ = "grid_dim.z",
        /// The linear index of this gang within its block.
        GangIndex = "gang_index",
        /// Bytes of dynamic shared memory the launch gives (the unsized `shared`
        /// array's size).
        DynSharedBytes = "dyn_shared_bytes",
        /// `clock()`: a counter that never goes backwards (uniform `i64`); the
        /// interpreter gives the number of instructions executed so far.
        Clock = "clock",
    }
}

impl SpecialReg {
    pub fn is_varying(self) -> bool {
        matches!(
            self,
            SpecialReg::LaneIndex
                | SpecialReg::ThreadIdxX
                | SpecialReg::ThreadIdxY
                | SpecialReg::ThreadIdxZ
        )
    }
}

named_enum! {
    /// Operations across the lanes of a gang.
    LaneOp {
        /// `extract v, lane`: uniform value of lane `lane` (uniform i32).
        Extract = "extract",
        /// `insert v, lane, x`: `v` with lane `lane` replaced by uniform `x`.
        Insert = "insert",
        /// `shuffle v, idx`: lane i gets `v[idx[i] mod n]`.
        Shuffle = "shuffle",
        /// `shuffle2 a, b, idx`: lane i gets lane `idx[i]` of the concatenation a ++ b.
        Shuffle2 = "shuffle2",
        /// `rotate v, k`: lane i gets `v[(i + k) mod n]`.
        Rotate = "rotate",
        /// `shift v, k`: lane i gets `v[i + k]`, or 0 outside the gang.
        Shift = "shift",
        /// `reduce_add v, mask` and friends: uniform result over the lanes on in `mask`
        /// (the identity if none).
        ReduceAdd = "reduce_add",
        ReduceMin = "reduce_min",
        ReduceMax = "reduce_max",
        ReduceAnd = "reduce_and",
        ReduceOr = "reduce_or",
        /// Uniform `bool`: all lanes on in `mask` hold the same value.
        ReduceEqual = "reduce_equal",
        /// Exclusive scans over the lanes on in `mask` (lanes off read as the identity).
        ScanAdd = "scan_add",
        ScanAnd = "scan_and",
        ScanOr = "scan_or",
        /// `any m`: uniform `bool`, some lane of mask `m` is on.
        Any = "any",
        All = "all",
        /// `ballot m`: uniform i64 with bit i set when lane i is on.
        Ballot = "ballot",
        /// `first_lane m`: uniform i32, the lowest lane on in `m` (-1 when none).
        FirstLane = "first_lane",
    }
}

/// The order in which a float `reduce_add` combines the lanes of a gang whose width,
/// rounded up to a power of two, is `lanes` (lang-spec/ir.md, "Order of combination").
/// The sum is a butterfly: for each distance `d` in turn, every lane `i` with bit `d`
/// of `i` clear becomes `x[i] + x[i + d]`, and the result is lane 0's. The distances
/// are those of ISPC's own sum on its AVX-512 target of the same width (1.30:
/// `avx512skx-x4` ... `x64`), so that sums round as ISPC's do: adjacent lanes first
/// (`hadd`) at 4, 8 and 16 lanes, the two halves first at 32 and 64, and at 8 and 16
/// lanes a different order for `double` than for `float`. Every other width halves.
pub fn float_sum_distances(lanes: u32, double: bool) -> SmallVec<[u32; 8]> {
    match (lanes, double) {
        (4, _) => SmallVec::from_slice(&[1, 2]),
        (8, false) => SmallVec::from_slice(&[1, 2, 4]),
        (8, true) => SmallVec::from_slice(&[4, 1, 2]),
        (16, false) => SmallVec::from_slice(&[1, 2, 8, 4]),
        (16, true) => SmallVec::from_slice(&[4, 1, 8, 2]),
        _ => std::iter::successors(Some(lanes / 2), |d| Some(d / 2))
            .take_while(|&d| d > 0)
            .collect(),
    }
}

named_enum! {
    /// Atomic read-modify-write operations; the result is the old value.
    AtomicOp {
        Add = "add",
        Sub = "sub",
        And = "and",
        Or = "or",
        Xor = "xor",
        Smin = "smin",
        Smax = "smax",
        Umin = "umin",
        Umax = "umax",
        Xchg = "xchg",
    }
}

/// A branch target with the arguments for its block parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockCall {
    pub block: Block,
    pub args: SmallVec<[Value; 4]>,
}

/// An instruction's opcode and operands.
#[derive(Clone, Debug, PartialEq)]
pub enum InstData {
    /// An integer, `bool` or pointer constant: the low bits of `bits`.
    Iconst {
        ty: Type,
        bits: u64,
    },
    /// A float constant, stored as the bits of the f64 value (an f32 constant is exactly
    /// representable as f64, so nothing rounds twice).
    Fconst {
        ty: Type,
        bits: u64,
    },
    Unary {
        op: UnaryOp,
        arg: Value,
    },
    Binary {
        op: BinaryOp,
        args: [Value; 2],
    },
    Icmp {
        cond: IntCC,
        args: [Value; 2],
    },
    Fcmp {
        cond: FloatCC,
        args: [Value; 2],
    },
    /// `select c, a, b`: per lane, `c ? a : b` (c may be uniform).
    Select {
        args: [Value; 3],
    },
    Convert {
        op: ConvOp,
        arg: Value,
        to: Type,
    },
    /// Uniform to varying: every lane gets the value.
    Splat {
        arg: Value,
    },
    Special {
        reg: SpecialReg,
    },
    /// A cross-lane operation; operands as documented on [`LaneOp`].
    Lane {
        op: LaneOp,
        args: SmallVec<[Value; 3]>,
    },
    /// Address of a stack slot, a global or a shared variable (uniform `ptr`).
    StackAddr {
        slot: StackSlot,
    },
    GlobalAddr {
        global: GlobalVar,
    },
    SharedAddr {
        shared: SharedVar,
    },
    /// `stack_alloc size`: `size` bytes (a uniform integer, read as unsigned) of the
    /// running call's frame, for `alloca`; the result is their uniform `ptr`, aligned
    /// to [`STACK_ALLOC_ALIGN`]. The bytes stay allocated until the function returns
    /// (allocations in a loop accumulate, as in C), and their contents are
    /// unspecified. A size the gang's stack cannot hold stops the launch with
    /// [`TrapCode::StackExhausted`]: the instruction has an effect (it is never
    /// removed, merged or moved), and the inliner keeps it in its own function, whose
    /// return frees it.
    StackAlloc {
        size: Value,
    },
    /// `load.ty space addr [mask]`: a varying address gathers; lanes off in `mask` do not
    /// access memory (their result is 0).
    Load {
        ty: Type,
        space: Space,
        addr: Value,
        mask: Option<Value>,
    },
    /// `store space addr, value [mask]`: a varying address scatters.
    Store {
        space: Space,
        addr: Value,
        value: Value,
        mask: Option<Value>,
    },
    AtomicRmw {
        op: AtomicOp,
        space: Space,
        addr: Value,
        value: Value,
        mask: Option<Value>,
    },
    AtomicCas {
        space: Space,
        addr: Value,
        expected: Value,
        replacement: Value,
        mask: Option<Value>,
    },
    /// Block-wide barrier: every gang of the block reaches it before any goes on.
    Barrier,
    /// A call. `mask` is the caller's execution mask, passed to callees that take one.
    Call {
        func: FuncRef,
        args: SmallVec<[Value; 6]>,
        mask: Option<Value>,
    },
    /// `print` with ISPC's `%` placeholders, for the lanes on in `mask`.
    Print {
        format: StrConst,
        args: SmallVec<[Value; 4]>,
        mask: Option<Value>,
    },
    /// Stop the launch with a runtime error (e.g. a failed `assert`).
    Trap {
        code: TrapCode,
    },
    Jump {
        dest: BlockCall,
    },
    /// Uniform branch.
    Brif {
        cond: Value,
        then_dest: BlockCall,
        else_dest: BlockCall,
    },
    Return {
        value: Option<Value>,
    },
}

/// The alignment of every `stack_alloc` result: a whole 64-byte line, so a varying
/// value of 16 32-bit lanes is one aligned block on Nyuzi, and rounding sizes to it
/// keeps the stack pointer 64-byte aligned at calls.
pub const STACK_ALLOC_ALIGN: u32 = 64;

/// Why a `trap` stops the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TrapCode {
    Unreachable,
    AssertFailed,
    /// An index of the dynamic `shared` array at or past the launch's size.
    SharedOutOfBounds,
    /// A call through a function pointer that is `NULL` in an active program instance.
    NullFnPtr,
    /// A `new` the heap cannot hold (or of a negative size) in an active program instance.
    HeapExhausted,
    /// A `delete` of a pointer that is not the start of a live allocation (deleted
    /// before, or never returned by `new`) in an active program instance.
    BadDelete,
    /// A `stack_alloc` (`alloca`) the gang's stack cannot hold.
    StackExhausted,
}

impl TrapCode {
    pub fn name(self) -> &'static str {
        match self {
            TrapCode::Unreachable => "unreachable",
            TrapCode::AssertFailed => "assert",
            TrapCode::SharedOutOfBounds => "shared_bounds",
            TrapCode::NullFnPtr => "null_fn_ptr",
            TrapCode::HeapExhausted => "heap_exhausted",
            TrapCode::BadDelete => "bad_delete",
            TrapCode::StackExhausted => "stack_exhausted",
        }
    }

    /// The runtime error's message.
    pub fn message(self) -> &'static str {
        match self {
            TrapCode::Unreachable => "unreachable code reached",
            TrapCode::AssertFailed => "assertion failed",
            TrapCode::SharedOutOfBounds => {
                "index out of bounds of the dynamic `shared` array (past the launch's \
                 dynamic shared memory)"
            }
            TrapCode::NullFnPtr => "call through a null function pointer",
            TrapCode::HeapExhausted => {
                "`new` failed: the heap (4 MiB) cannot hold the allocation, or its size is \
                 negative"
            }
            TrapCode::BadDelete => {
                "`delete` of a pointer that is not the start of a live allocation from `new` \
                 (deleted before, or never allocated)"
            }
            TrapCode::StackExhausted => {
                "`alloca` failed: the gang's stack cannot hold the allocation (too large, or \
                 too many allocations before the function returns)"
            }
        }
    }
}

/// Visits every value operand of an instruction in a fixed order: the one traversal
/// behind [`InstData::operands`] and [`InstData::map_operands`]. `$iter` is `iter` or
/// `iter_mut`, matching the reference the instruction is borrowed through.
macro_rules! each_operand {
    ($data:expr, $iter:ident, $f:expr) => {{
        let mut f = $f;
        match $data {
            InstData::Iconst { .. }
            | InstData::Fconst { .. }
            | InstData::Special { .. }
            | InstData::StackAddr { .. }
            | InstData::GlobalAddr { .. }
            | InstData::SharedAddr { .. }
            | InstData::Barrier
            | InstData::Trap { .. } => {}
            InstData::Unary { arg, .. }
            | InstData::Convert { arg, .. }
            | InstData::Splat { arg }
            | InstData::StackAlloc { size: arg } => f(arg),
            InstData::Binary { args, .. }
            | InstData::Icmp { args, .. }
            | InstData::Fcmp { args, .. } => args.$iter().for_each(&mut f),
            InstData::Select { args } => args.$iter().for_each(&mut f),
            InstData::Lane { args, .. } => args.$iter().for_each(&mut f),
            InstData::Load { addr, mask, .. } => {
                f(addr);
                mask.$iter().for_each(&mut f);
            }
            InstData::Store {
                addr, value, mask, ..
            }
            | InstData::AtomicRmw {
                addr, value, mask, ..
            } => {
                f(addr);
                f(value);
                mask.$iter().for_each(&mut f);
            }
            InstData::AtomicCas {
                addr,
                expected,
                replacement,
                mask,
                ..
            } => {
                f(addr);
                f(expected);
                f(replacement);
                mask.$iter().for_each(&mut f);
            }
            InstData::Call { args, mask, .. } => {
                args.$iter().for_each(&mut f);
                mask.$iter().for_each(&mut f);
            }
            InstData::Print { args, mask, .. } => {
                args.$iter().for_each(&mut f);
                mask.$iter().for_each(&mut f);
            }
            InstData::Jump { dest } => dest.args.$iter().for_each(&mut f),
            InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                f(cond);
                then_dest.args.$iter().for_each(&mut f);
                else_dest.args.$iter().for_each(&mut f);
            }
            InstData::Return { value } => value.$iter().for_each(&mut f),
        }
    }};
}

impl InstData {
    /// Whether this instruction ends a block.
    pub fn is_terminator(&self) -> bool {
        matches!(
            self,
            InstData::Jump { .. }
                | InstData::Brif { .. }
                | InstData::Return { .. }
                | InstData::Trap { .. }
        )
    }

    /// The execution mask operand, if the instruction takes one.
    pub fn mask(&self) -> Option<Value> {
        match self {
            InstData::Load { mask, .. }
            | InstData::Store { mask, .. }
            | InstData::AtomicRmw { mask, .. }
            | InstData::AtomicCas { mask, .. }
            | InstData::Call { mask, .. }
            | InstData::Print { mask, .. } => *mask,
            _ => None,
        }
    }

    /// Every value operand, in order (mask included; branch arguments included).
    pub fn operands(&self) -> SmallVec<[Value; 8]> {
        let mut v: SmallVec<[Value; 8]> = SmallVec::new();
        each_operand!(self, iter, |x: &Value| v.push(*x));
        v
    }

    /// Calls `f` on every value operand, in the order of [`InstData::operands`], without
    /// collecting them: for the hot loops that only walk them.
    pub fn for_each_operand(&self, mut f: impl FnMut(Value)) {
        each_operand!(self, iter, |x: &Value| f(*x));
    }

    /// Whether `pred` holds for every value operand.
    pub fn all_operands(&self, mut pred: impl FnMut(Value) -> bool) -> bool {
        let mut all = true;
        self.for_each_operand(|x| all = all && pred(x));
        all
    }

    /// Replaces every value operand `x` by `f(x)`, in the order of [`InstData::operands`].
    pub fn map_operands(&mut self, mut f: impl FnMut(Value) -> Value) {
        each_operand!(self, iter_mut, |x: &mut Value| *x = f(*x));
    }

    /// The branch targets of a terminator.
    pub fn successors(&self) -> SmallVec<[&BlockCall; 2]> {
        match self {
            InstData::Jump { dest } => smallvec::smallvec![dest],
            InstData::Brif {
                then_dest,
                else_dest,
                ..
            } => smallvec::smallvec![then_dest, else_dest],
            _ => SmallVec::new(),
        }
    }

    /// Whether removing an unused instance could change the program.
    pub fn has_side_effects(&self) -> bool {
        matches!(
            self,
            InstData::Store { .. }
                | InstData::StackAlloc { .. }
                | InstData::AtomicRmw { .. }
                | InstData::AtomicCas { .. }
                | InstData::Barrier
                | InstData::Call { .. }
                | InstData::Print { .. }
                | InstData::Trap { .. }
                | InstData::Load { .. }
        ) || self.is_terminator()
    }
}
