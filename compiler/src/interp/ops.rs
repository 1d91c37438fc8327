//! Scalar semantics: what one lane of each arithmetic, comparison and conversion
//! instruction computes.
//!
//! Every value is held as a `u64` in canonical form: the low `width` bits of the
//! element type, zero above (a `bool` is 0 or 1, an `f32` its 32 bits). The functions
//! here take and return that form. The decoder picks one function pointer per
//! instruction (by opcode and element type) once, so the lane loops call a specialized
//! function and never match on the opcode per lane.

use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

use sim::fp16;

use crate::ir::{AtomicOp, BinaryOp, ConvOp, FloatCC, InstData, IntCC, Scalar, UnaryOp};

/// One lane of a one-operand instruction.
pub type UnFn = fn(u64) -> u64;
/// One lane of a two-operand instruction.
pub type BinFn = fn(u64, u64) -> u64;
/// One lane of a division or remainder: `None` for a zero divisor.
pub type DivFn = fn(u64, u64) -> Option<u64>;

/// The mask of the low `w` bits.
#[inline(always)]
pub const fn width_mask(w: u32) -> u64 {
    if w >= 64 {
        !0
    } else {
        (1u64 << w) - 1
    }
}

/// Sign-extends the low `w` bits of `x`.
#[inline(always)]
pub const fn sext(x: u64, w: u32) -> i64 {
    if w >= 64 {
        x as i64
    } else {
        let s = 64 - w;
        ((x << s) as i64) >> s
    }
}

/// Puts arbitrary bits of an element of `scalar` into canonical form (a `bool` is
/// nonzero-to-true, so a byte 2 in memory reads as `true`).
pub fn canonical(x: u64, scalar: Scalar) -> u64 {
    match scalar {
        Scalar::Bool => u64::from(x != 0),
        s => x & width_mask(s.bits()),
    }
}

/// The floating-point operations the interpreter needs, for `f32` and `f64` alike, so
/// each operation is written once and computed in its own precision.
pub trait Float:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + Neg<Output = Self>
{
    const INFINITY: Self;
    /// The quiet bit of a NaN's encoding (the top bit of the significand).
    const QUIET_BIT: u64;
    fn from_bits64(x: u64) -> Self;
    fn to_bits64(self) -> u64;
    fn sqrt(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn trunc(self) -> Self;
    fn nearest(self) -> Self;
    fn abs(self) -> Self;
    fn is_nan(self) -> bool;
    fn is_sign_negative(self) -> bool;
    fn to_f64(self) -> f64;
    fn from_i64(x: i64) -> Self;
    fn from_u64(x: u64) -> Self;
    fn from_f64(x: f64) -> Self;
}

macro_rules! impl_float {
    ($t:ty, $bits:ty) => {
        impl Float for $t {
            const INFINITY: Self = <$t>::INFINITY;
            const QUIET_BIT: u64 = 1 << (<$t>::MANTISSA_DIGITS - 2);
            #[inline(always)]
            fn from_bits64(x: u64) -> Self {
                <$t>::from_bits(x as $bits)
            }
            #[inline(always)]
            fn to_bits64(self) -> u64 {
                self.to_bits() as u64
            }
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            fn trunc(self) -> Self {
                <$t>::trunc(self)
            }
            fn nearest(self) -> Self {
                <$t>::round_ties_even(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn is_sign_negative(self) -> bool {
                <$t>::is_sign_negative(self)
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_i64(x: i64) -> Self {
                x as $t
            }
            fn from_u64(x: u64) -> Self {
                x as $t
            }
            fn from_f64(x: f64) -> Self {
                x as $t
            }
        }
    };
}

impl_float!(f32, u32);
impl_float!(f64, u64);

/// Picks the instance of a width-generic function for an element type's width.
macro_rules! by_width {
    ($w:expr, $f:ident) => {
        match $w {
            1 => $f::<1>,
            8 => $f::<8>,
            16 => $f::<16>,
            32 => $f::<32>,
            _ => $f::<64>,
        }
    };
}

/// Picks the `f32` or `f64` instance of a float-generic function.
macro_rules! by_float {
    ($s:expr, $f:ident) => {
        if $s == Scalar::F32 {
            $f::<f32>
        } else {
            $f::<f64>
        }
    };
}

// ---- integer lanes (W = width in bits) ----

fn iadd<const W: u32>(a: u64, b: u64) -> u64 {
    a.wrapping_add(b) & width_mask(W)
}
fn isub<const W: u32>(a: u64, b: u64) -> u64 {
    a.wrapping_sub(b) & width_mask(W)
}
fn imul<const W: u32>(a: u64, b: u64) -> u64 {
    a.wrapping_mul(b) & width_mask(W)
}
fn band(a: u64, b: u64) -> u64 {
    a & b
}
fn bor(a: u64, b: u64) -> u64 {
    a | b
}
fn bxor(a: u64, b: u64) -> u64 {
    a ^ b
}
fn ishl<const W: u32>(a: u64, b: u64) -> u64 {
    (a << (b % u64::from(W))) & width_mask(W)
}
fn sshr<const W: u32>(a: u64, b: u64) -> u64 {
    (sext(a, W) >> (b % u64::from(W))) as u64 & width_mask(W)
}
fn ushr<const W: u32>(a: u64, b: u64) -> u64 {
    a >> (b % u64::from(W))
}
fn smin<const W: u32>(a: u64, b: u64) -> u64 {
    if sext(a, W) <= sext(b, W) {
        a
    } else {
        b
    }
}
fn smax<const W: u32>(a: u64, b: u64) -> u64 {
    if sext(a, W) >= sext(b, W) {
        a
    } else {
        b
    }
}
fn umin(a: u64, b: u64) -> u64 {
    a.min(b)
}
fn umax(a: u64, b: u64) -> u64 {
    a.max(b)
}
fn sdiv<const W: u32>(a: u64, b: u64) -> Option<u64> {
    (b != 0).then(|| sext(a, W).wrapping_div(sext(b, W)) as u64 & width_mask(W))
}
fn srem<const W: u32>(a: u64, b: u64) -> Option<u64> {
    (b != 0).then(|| sext(a, W).wrapping_rem(sext(b, W)) as u64 & width_mask(W))
}
fn udiv(a: u64, b: u64) -> Option<u64> {
    a.checked_div(b)
}
fn urem(a: u64, b: u64) -> Option<u64> {
    a.checked_rem(b)
}

// ---- float lanes ----

/// `op(a, b)`, except that a NaN operand gives the first NaN operand, quieted (the x86
/// rule, which the soft-float runtime implements too). Rust leaves the payload of a NaN
/// result unspecified, and the optimizer may commute `a * b`, so without this the
/// payload would depend on how the interpreter itself was compiled.
#[inline(always)]
fn arith<F: Float>(a: u64, b: u64, op: impl Fn(F, F) -> F) -> u64 {
    let (x, y) = (F::from_bits64(a), F::from_bits64(b));
    if x.is_nan() || y.is_nan() {
        let nan = if x.is_nan() { x } else { y };
        return nan.to_bits64() | F::QUIET_BIT;
    }
    op(x, y).to_bits64()
}
fn fadd<F: Float>(a: u64, b: u64) -> u64 {
    arith::<F>(a, b, |x, y| x + y)
}
fn fsub<F: Float>(a: u64, b: u64) -> u64 {
    arith::<F>(a, b, |x, y| x - y)
}
fn fmul<F: Float>(a: u64, b: u64) -> u64 {
    arith::<F>(a, b, |x, y| x * y)
}
fn fdiv<F: Float>(a: u64, b: u64) -> u64 {
    arith::<F>(a, b, |x, y| x / y)
}
/// C's `fmod`, exact; `x % 0` and `inf % y` give a quiet NaN with the sign of `x`, as
/// ISPC does (the host's `%` would give its own default NaN).
fn frem<F: Float>(a: u64, b: u64) -> u64 {
    arith::<F>(a, b, |x, y| {
        let r = x % y;
        if r.is_nan() {
            let sign = (-F::INFINITY).to_bits64() ^ F::INFINITY.to_bits64();
            F::from_bits64(F::INFINITY.to_bits64() | F::QUIET_BIT | (a & sign))
        } else {
            r
        }
    })
}

/// IEEE minNum, with `-0 < +0` so the result never depends on operand order.
fn fmin<F: Float>(a: u64, b: u64) -> u64 {
    let (x, y) = (F::from_bits64(a), F::from_bits64(b));
    if x.is_nan() {
        b
    } else if y.is_nan() || x < y || (x == y && x.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// IEEE maxNum, with `+0 > -0`.
fn fmax<F: Float>(a: u64, b: u64) -> u64 {
    let (x, y) = (F::from_bits64(a), F::from_bits64(b));
    if x.is_nan() {
        b
    } else if y.is_nan() || x > y || (x == y && !x.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// The lane function of a binary operation that cannot fail (not a division or an
/// integer remainder); `None` when the operation does not apply to the type.
pub fn binary(op: BinaryOp, s: Scalar) -> Option<BinFn> {
    use BinaryOp::*;
    let w = s.bits();
    if s.is_float() {
        return Some(match op {
            Fadd => by_float!(s, fadd),
            Fsub => by_float!(s, fsub),
            Fmul => by_float!(s, fmul),
            Fdiv => by_float!(s, fdiv),
            Frem => by_float!(s, frem),
            Fmin => by_float!(s, fmin),
            Fmax => by_float!(s, fmax),
            _ => return None,
        });
    }
    Some(match op {
        Iadd => by_width!(w, iadd),
        Isub => by_width!(w, isub),
        Imul => by_width!(w, imul),
        Band => band,
        Bor => bor,
        Bxor => bxor,
        Ishl => by_width!(w, ishl),
        Sshr => by_width!(w, sshr),
        Ushr => by_width!(w, ushr),
        Smin => by_width!(w, smin),
        Smax => by_width!(w, smax),
        Umin => umin,
        Umax => umax,
        _ => return None,
    })
}

/// The lane function of an integer division or remainder.
pub fn division(op: BinaryOp, s: Scalar) -> Option<DivFn> {
    if s.is_float() {
        return None;
    }
    let w = s.bits();
    Some(match op {
        BinaryOp::Sdiv => by_width!(w, sdiv),
        BinaryOp::Srem => by_width!(w, srem),
        BinaryOp::Udiv => udiv,
        BinaryOp::Urem => urem,
        _ => return None,
    })
}

// ---- unary ----

fn ineg<const W: u32>(a: u64) -> u64 {
    a.wrapping_neg() & width_mask(W)
}
fn bnot<const W: u32>(a: u64) -> u64 {
    !a & width_mask(W)
}
fn popcnt(a: u64) -> u64 {
    u64::from(a.count_ones())
}
fn clz<const W: u32>(a: u64) -> u64 {
    u64::from(a.leading_zeros() - (64 - W))
}
fn ctz<const W: u32>(a: u64) -> u64 {
    if a == 0 {
        u64::from(W)
    } else {
        u64::from(a.trailing_zeros())
    }
}
fn fneg<F: Float>(a: u64) -> u64 {
    (-F::from_bits64(a)).to_bits64()
}
fn fabs<F: Float>(a: u64) -> u64 {
    F::from_bits64(a).abs().to_bits64()
}
fn fsqrt<F: Float>(a: u64) -> u64 {
    F::from_bits64(a).sqrt().to_bits64()
}
fn ffloor<F: Float>(a: u64) -> u64 {
    F::from_bits64(a).floor().to_bits64()
}
fn fceil<F: Float>(a: u64) -> u64 {
    F::from_bits64(a).ceil().to_bits64()
}
fn ftrunc<F: Float>(a: u64) -> u64 {
    F::from_bits64(a).trunc().to_bits64()
}
fn fnearest<F: Float>(a: u64) -> u64 {
    F::from_bits64(a).nearest().to_bits64()
}

/// The lane function of a unary operation on `s`.
pub fn unary(op: UnaryOp, s: Scalar) -> Option<UnFn> {
    use UnaryOp::*;
    let w = s.bits();
    if s.is_float() {
        return Some(match op {
            Fneg => by_float!(s, fneg),
            Fabs => by_float!(s, fabs),
            Sqrt => by_float!(s, fsqrt),
            Floor => by_float!(s, ffloor),
            Ceil => by_float!(s, fceil),
            Trunc => by_float!(s, ftrunc),
            Nearest => by_float!(s, fnearest),
            _ => return None,
        });
    }
    Some(match op {
        Ineg => by_width!(w, ineg),
        Bnot => by_width!(w, bnot),
        Popcnt => popcnt,
        Clz => by_width!(w, clz),
        Ctz => by_width!(w, ctz),
        _ => return None,
    })
}

// ---- comparisons ----

fn ieq(a: u64, b: u64) -> u64 {
    u64::from(a == b)
}
fn ine(a: u64, b: u64) -> u64 {
    u64::from(a != b)
}
fn islt<const W: u32>(a: u64, b: u64) -> u64 {
    u64::from(sext(a, W) < sext(b, W))
}
fn isle<const W: u32>(a: u64, b: u64) -> u64 {
    u64::from(sext(a, W) <= sext(b, W))
}
fn isgt<const W: u32>(a: u64, b: u64) -> u64 {
    u64::from(sext(a, W) > sext(b, W))
}
fn isge<const W: u32>(a: u64, b: u64) -> u64 {
    u64::from(sext(a, W) >= sext(b, W))
}
fn iult(a: u64, b: u64) -> u64 {
    u64::from(a < b)
}
fn iule(a: u64, b: u64) -> u64 {
    u64::from(a <= b)
}
fn iugt(a: u64, b: u64) -> u64 {
    u64::from(a > b)
}
fn iuge(a: u64, b: u64) -> u64 {
    u64::from(a >= b)
}

/// The lane function of `icmp cond` on integers (or bools, or pointers) of type `s`.
pub fn icmp(cond: IntCC, s: Scalar) -> Option<BinFn> {
    use IntCC::*;
    if s.is_float() {
        return None;
    }
    let w = s.bits();
    Some(match cond {
        Eq => ieq,
        Ne => ine,
        Slt => by_width!(w, islt),
        Sle => by_width!(w, isle),
        Sgt => by_width!(w, isgt),
        Sge => by_width!(w, isge),
        Ult => iult,
        Ule => iule,
        Ugt => iugt,
        Uge => iuge,
    })
}

fn feq<F: Float>(a: u64, b: u64) -> u64 {
    u64::from(F::from_bits64(a) == F::from_bits64(b))
}
fn fune<F: Float>(a: u64, b: u64) -> u64 {
    u64::from(F::from_bits64(a) != F::from_bits64(b))
}
fn flt<F: Float>(a: u64, b: u64) -> u64 {
    u64::from(F::from_bits64(a) < F::from_bits64(b))
}
fn fle<F: Float>(a: u64, b: u64) -> u64 {
    u64::from(F::from_bits64(a) <= F::from_bits64(b))
}
fn fgt<F: Float>(a: u64, b: u64) -> u64 {
    u64::from(F::from_bits64(a) > F::from_bits64(b))
}
fn fge<F: Float>(a: u64, b: u64) -> u64 {
    u64::from(F::from_bits64(a) >= F::from_bits64(b))
}
fn funo<F: Float>(a: u64, b: u64) -> u64 {
    u64::from(F::from_bits64(a).is_nan() || F::from_bits64(b).is_nan())
}

/// The lane function of `fcmp cond` on floats of type `s`.
pub fn fcmp(cond: FloatCC, s: Scalar) -> Option<BinFn> {
    use FloatCC::*;
    if !s.is_float() {
        return None;
    }
    Some(match cond {
        Eq => by_float!(s, feq),
        Une => by_float!(s, fune),
        Lt => by_float!(s, flt),
        Le => by_float!(s, fle),
        Gt => by_float!(s, fgt),
        Ge => by_float!(s, fge),
        Uno => by_float!(s, funo),
    })
}

// ---- conversions ----

fn identity(a: u64) -> u64 {
    a
}

/// The lane function of `splat`: the value itself (broadcast by the lane loop).
pub fn copy(a: u64) -> u64 {
    a
}
fn sext_to<const FROM: u32, const TO: u32>(a: u64) -> u64 {
    sext(a, FROM) as u64 & width_mask(TO)
}
fn trunc_to<const TO: u32>(a: u64) -> u64 {
    a & width_mask(TO)
}
fn nonzero(a: u64) -> u64 {
    u64::from(a != 0)
}
fn float_nonzero<F: Float>(a: u64) -> u64 {
    // NaN is nonzero (true), as in C.
    u64::from(F::from_bits64(a) != F::from_bits64(0))
}

/// Float to signed integer of width `TO`: toward zero, saturating, NaN to 0 (what
/// Rust's `as` does; going through `f64` is exact for an `f32`).
fn f_to_s<F: Float, const TO: u32>(a: u64) -> u64 {
    let v = F::from_bits64(a).to_f64();
    let r = match TO {
        8 => i64::from(v as i8),
        16 => i64::from(v as i16),
        32 => i64::from(v as i32),
        _ => v as i64,
    };
    r as u64 & width_mask(TO)
}

/// Float to unsigned integer of width `TO`: toward zero, saturating (negative to 0),
/// NaN to 0.
fn f_to_u<F: Float, const TO: u32>(a: u64) -> u64 {
    let v = F::from_bits64(a).to_f64();
    match TO {
        8 => u64::from(v as u8),
        16 => u64::from(v as u16),
        32 => u64::from(v as u32),
        _ => v as u64,
    }
}
fn s_to_f<const FROM: u32, F: Float>(a: u64) -> u64 {
    F::from_i64(sext(a, FROM)).to_bits64()
}
fn u_to_f<F: Float>(a: u64) -> u64 {
    F::from_u64(a).to_bits64()
}
fn promote(a: u64) -> u64 {
    f64::from(f32::from_bits(a as u32)).to_bits()
}
fn demote(a: u64) -> u64 {
    u64::from((f64::from_bits(a) as f32).to_bits())
}
fn half_to_f32(a: u64) -> u64 {
    u64::from(fp16::f32_from_f16(a as u16).to_bits())
}
fn half_to_f64(a: u64) -> u64 {
    fp16::f64_from_f16(a as u16).to_bits()
}
fn f32_to_half(a: u64) -> u64 {
    u64::from(fp16::f16_from_f32(f32::from_bits(a as u32)))
}
fn f64_to_half(a: u64) -> u64 {
    u64::from(fp16::f16_from_f64(f64::from_bits(a)))
}

macro_rules! sext_from {
    ($from:literal, $to:expr) => {
        match $to {
            8 => sext_to::<$from, 8> as UnFn,
            16 => sext_to::<$from, 16>,
            32 => sext_to::<$from, 32>,
            _ => sext_to::<$from, 64>,
        }
    };
}

macro_rules! float_to_int {
    ($f:ident, $from:expr, $to:expr) => {
        match ($from == Scalar::F32, $to) {
            (true, 8) => $f::<f32, 8> as UnFn,
            (true, 16) => $f::<f32, 16>,
            (true, 32) => $f::<f32, 32>,
            (true, _) => $f::<f32, 64>,
            (false, 8) => $f::<f64, 8>,
            (false, 16) => $f::<f64, 16>,
            (false, 32) => $f::<f64, 32>,
            (false, _) => $f::<f64, 64>,
        }
    };
}

/// The lane function of a conversion from `from` to `to`; `None` when the conversion
/// does not apply to these types.
pub fn convert(op: ConvOp, from: Scalar, to: Scalar) -> Option<UnFn> {
    use ConvOp::*;
    let (fw, tw) = (from.bits(), to.bits());
    let int_like = |s: Scalar| !s.is_float();
    Some(match op {
        Sext if int_like(from) && int_like(to) && fw <= tw => match fw {
            1 => sext_from!(1, tw),
            8 => sext_from!(8, tw),
            16 => sext_from!(16, tw),
            32 => sext_from!(32, tw),
            _ => identity,
        },
        Zext if int_like(from) && int_like(to) && fw <= tw => identity,
        Ireduce if int_like(from) && int_like(to) && fw >= tw => by_width!(tw, trunc_to),
        FcvtToSint if from.is_float() && to.is_int() => float_to_int!(f_to_s, from, tw),
        FcvtToUint if from.is_float() && to.is_int() => float_to_int!(f_to_u, from, tw),
        FcvtFromSint if int_like(from) && to.is_float() => match (fw, to == Scalar::F32) {
            (1, true) => s_to_f::<1, f32>,
            (8, true) => s_to_f::<8, f32>,
            (16, true) => s_to_f::<16, f32>,
            (32, true) => s_to_f::<32, f32>,
            (_, true) => s_to_f::<64, f32>,
            (1, false) => s_to_f::<1, f64>,
            (8, false) => s_to_f::<8, f64>,
            (16, false) => s_to_f::<16, f64>,
            (32, false) => s_to_f::<32, f64>,
            (_, false) => s_to_f::<64, f64>,
        },
        FcvtFromUint if int_like(from) && to.is_float() => by_float!(to, u_to_f),
        Fpromote => match (from, to) {
            (Scalar::F32, Scalar::F64) => promote,
            (Scalar::F16, Scalar::F32) => half_to_f32,
            (Scalar::F16, Scalar::F64) => half_to_f64,
            _ => return None,
        },
        Fdemote => match (from, to) {
            (Scalar::F64, Scalar::F32) => demote,
            (Scalar::F32, Scalar::F16) => f32_to_half,
            (Scalar::F64, Scalar::F16) => f64_to_half,
            _ => return None,
        },
        Bitcast => by_width!(tw, trunc_to),
        ToBool if from.is_float() => by_float!(from, float_nonzero),
        ToBool => nonzero,
        _ => return None,
    })
}

/// The read-modify-write step of an atomic: the new value from the old one and the
/// operand. Integer operations wrap at the width; on floats only `add`, `sub` and
/// `xchg` apply.
pub fn atomic(op: AtomicOp, s: Scalar) -> Option<BinFn> {
    use AtomicOp::*;
    let w = s.bits();
    fn xchg(_old: u64, v: u64) -> u64 {
        v
    }
    if s.is_float() {
        return Some(match op {
            Add => by_float!(s, fadd),
            Sub => by_float!(s, fsub),
            Xchg => xchg,
            _ => return None,
        });
    }
    Some(match op {
        Add => by_width!(w, iadd),
        Sub => by_width!(w, isub),
        And => band,
        Or => bor,
        Xor => bxor,
        Smin => by_width!(w, smin),
        Smax => by_width!(w, smax),
        Umin => umin,
        Umax => umax,
        Xchg => xchg,
    })
}

// ---- constants ----

/// The canonical bits of a constant instruction's value, as the decoder loads them:
/// an `iconst`'s low bits; an `fconst`'s f64 value, rounded to `f32` or `f16` for such a
/// constant. `None` for other instructions and an `fconst` of a non-float type.
pub fn constant(data: &InstData) -> Option<u64> {
    match *data {
        InstData::Iconst { ty, bits } => Some(canonical(bits, ty.scalar)),
        InstData::Fconst { ty, bits } => match ty.scalar {
            Scalar::F16 => Some(f64_to_half(bits)),
            Scalar::F32 => Some(u64::from((f64::from_bits(bits) as f32).to_bits())),
            Scalar::F64 => Some(bits),
            _ => None,
        },
        _ => None,
    }
}

/// The `fconst` operand that [`constant`] reads back as exactly the canonical value
/// `bits` of float type `s`, so a folded result is the one the operation computes.
/// `None` when there is none (an `f32` NaN whose payload the trip through f64 changes).
pub fn fconst_operand(s: Scalar, bits: u64) -> Option<u64> {
    let operand = match s {
        Scalar::F16 => half_to_f64(bits),
        Scalar::F32 => (f32::from_bits(bits as u32) as f64).to_bits(),
        Scalar::F64 => bits,
        _ => return None,
    };
    let ty = crate::ir::Type {
        scalar: s,
        varying: false,
    };
    let data = InstData::Fconst { ty, bits: operand };
    (constant(&data) == Some(bits)).then_some(operand)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32b(x: f32) -> u64 {
        u64::from(x.to_bits())
    }

    #[test]
    fn integer_ops_wrap_at_width() {
        let add8 = binary(BinaryOp::Iadd, Scalar::I8).unwrap();
        assert_eq!(add8(0xff, 2), 1);
        let mul16 = binary(BinaryOp::Imul, Scalar::I16).unwrap();
        assert_eq!(mul16(0x8000, 2), 0);
        let shr = binary(BinaryOp::Sshr, Scalar::I32).unwrap();
        assert_eq!(shr(0x8000_0000, 31), 0xffff_ffff);
        assert_eq!(shr(0x8000_0000, 33), 0xc000_0000, "count taken mod 32");
        let smin = binary(BinaryOp::Smin, Scalar::I32).unwrap();
        assert_eq!(smin(0xffff_ffff, 1), 0xffff_ffff);
        let umin = binary(BinaryOp::Umin, Scalar::I32).unwrap();
        assert_eq!(umin(0xffff_ffff, 1), 1);
    }

    #[test]
    fn division_traps_only_on_zero_and_wraps_on_overflow() {
        let sdiv = division(BinaryOp::Sdiv, Scalar::I32).unwrap();
        assert_eq!(sdiv(7, 0), None);
        assert_eq!(sdiv((-7i32) as u32 as u64, 2), Some((-3i32) as u32 as u64));
        assert_eq!(
            sdiv(0x8000_0000, 0xffff_ffff),
            Some(0x8000_0000),
            "INT_MIN / -1 wraps"
        );
        let srem = division(BinaryOp::Srem, Scalar::I32).unwrap();
        assert_eq!(srem((-7i32) as u32 as u64, 2), Some(0xffff_ffff));
        assert_eq!(srem(0x8000_0000, 0xffff_ffff), Some(0));
    }

    #[test]
    fn unary_bit_counts_use_the_width() {
        assert_eq!(unary(UnaryOp::Clz, Scalar::I32).unwrap()(0), 32);
        assert_eq!(unary(UnaryOp::Clz, Scalar::I16).unwrap()(1), 15);
        assert_eq!(unary(UnaryOp::Ctz, Scalar::I8).unwrap()(0), 8);
        assert_eq!(unary(UnaryOp::Popcnt, Scalar::I64).unwrap()(!0), 64);
        assert_eq!(unary(UnaryOp::Bnot, Scalar::Bool).unwrap()(1), 0);
        assert_eq!(unary(UnaryOp::Ineg, Scalar::I8).unwrap()(1), 0xff);
    }

    #[test]
    fn f32_arithmetic_rounds_per_operation() {
        let add = binary(BinaryOp::Fadd, Scalar::F32).unwrap();
        let sub = binary(BinaryOp::Fsub, Scalar::F32).unwrap();
        let big = f32b(1e8);
        assert_eq!(sub(add(big, f32b(1.0)), big), f32b(0.0));
        let add64 = binary(BinaryOp::Fadd, Scalar::F64).unwrap();
        let sub64 = binary(BinaryOp::Fsub, Scalar::F64).unwrap();
        let big64 = 1e8f64.to_bits();
        assert_eq!(sub64(add64(big64, 1f64.to_bits()), big64), 1f64.to_bits());
    }

    #[test]
    fn nan_results_are_the_first_nan_operand_quieted() {
        let mul = binary(BinaryOp::Fmul, Scalar::F64).unwrap();
        let (snan, qnan) = (0xfff7_ffff_ffff_ffff_u64, 0x7ff8_0000_1234_5678_u64);
        assert_eq!(mul(snan, qnan), 0xffff_ffff_ffff_ffff);
        assert_eq!(mul(qnan, snan), qnan);
        assert_eq!(mul(2.0f64.to_bits(), snan), 0xffff_ffff_ffff_ffff);
        let add = binary(BinaryOp::Fadd, Scalar::F32).unwrap();
        assert_eq!(add(0x7f80_0001, 0xffc0_0000), 0x7fc0_0001);
        assert_eq!(add(1.0f32.to_bits() as u64, 0xff80_0002), 0xffc0_0002);
    }

    #[test]
    fn fmin_fmax_ignore_nan_and_order_zeros() {
        let min = binary(BinaryOp::Fmin, Scalar::F32).unwrap();
        let max = binary(BinaryOp::Fmax, Scalar::F32).unwrap();
        let nan = f32b(f32::NAN);
        assert_eq!(min(nan, f32b(2.0)), f32b(2.0));
        assert_eq!(min(f32b(2.0), nan), f32b(2.0));
        assert_eq!(max(nan, f32b(-2.0)), f32b(-2.0));
        assert_eq!(min(f32b(0.0), f32b(-0.0)), f32b(-0.0));
        assert_eq!(min(f32b(-0.0), f32b(0.0)), f32b(-0.0));
        assert_eq!(max(f32b(-0.0), f32b(0.0)), f32b(0.0));
        let rem = binary(BinaryOp::Frem, Scalar::F32).unwrap();
        assert_eq!(rem(f32b(-7.5), f32b(2.0)), f32b(-1.5));
    }

    #[test]
    fn float_comparisons_treat_nan_as_unordered() {
        let nan = f32b(f32::NAN);
        let one = f32b(1.0);
        for cc in [
            FloatCC::Eq,
            FloatCC::Lt,
            FloatCC::Le,
            FloatCC::Gt,
            FloatCC::Ge,
        ] {
            assert_eq!(fcmp(cc, Scalar::F32).unwrap()(nan, one), 0, "{cc:?}");
        }
        assert_eq!(fcmp(FloatCC::Une, Scalar::F32).unwrap()(nan, nan), 1);
        assert_eq!(fcmp(FloatCC::Uno, Scalar::F32).unwrap()(one, nan), 1);
        assert_eq!(fcmp(FloatCC::Eq, Scalar::F32).unwrap()(f32b(-0.0), 0), 1);
        assert_eq!(
            icmp(IntCC::Slt, Scalar::I8).unwrap()(0x80, 1),
            1,
            "-128 < 1"
        );
        assert_eq!(icmp(IntCC::Ult, Scalar::I8).unwrap()(0x80, 1), 0);
    }

    #[test]
    fn conversions_saturate_and_extend() {
        let to_i32 = convert(ConvOp::FcvtToSint, Scalar::F32, Scalar::I32).unwrap();
        assert_eq!(to_i32(f32b(f32::NAN)), 0);
        assert_eq!(to_i32(f32b(3e9)), 0x7fff_ffff);
        assert_eq!(to_i32(f32b(-3e9)), 0x8000_0000);
        assert_eq!(to_i32(f32b(-2.7)), (-2i32) as u32 as u64);
        let to_i8 = convert(ConvOp::FcvtToSint, Scalar::F64, Scalar::I8).unwrap();
        assert_eq!(to_i8(1000f64.to_bits()), 0x7f);
        let to_u16 = convert(ConvOp::FcvtToUint, Scalar::F32, Scalar::I16).unwrap();
        assert_eq!(to_u16(f32b(-5.0)), 0);
        assert_eq!(to_u16(f32b(1e6)), 0xffff);
        let sext = convert(ConvOp::Sext, Scalar::I8, Scalar::I32).unwrap();
        assert_eq!(sext(0x80), 0xffff_ff80);
        let sext_ptr = convert(ConvOp::Sext, Scalar::I32, Scalar::Ptr).unwrap();
        assert_eq!(sext_ptr(0xffff_fffc), (-4i64) as u64);
        let zext = convert(ConvOp::Zext, Scalar::Bool, Scalar::I32).unwrap();
        assert_eq!(zext(1), 1);
        let red = convert(ConvOp::Ireduce, Scalar::I32, Scalar::I8).unwrap();
        assert_eq!(red(0x1234), 0x34);
        // i64 -> f32 rounds once (2^53 + 1 is not representable in f64 either).
        let s2f = convert(ConvOp::FcvtFromSint, Scalar::I64, Scalar::F32).unwrap();
        assert_eq!(s2f((1u64 << 53) + 1), f32b(9007199254740992.0));
        let s2f32 = convert(ConvOp::FcvtFromSint, Scalar::I32, Scalar::F32).unwrap();
        assert_eq!(s2f32(0xffff_ffff), f32b(-1.0));
        let u2f = convert(ConvOp::FcvtFromUint, Scalar::I32, Scalar::F32).unwrap();
        assert_eq!(u2f(0xffff_ffff), f32b(4294967296.0));
        let demote = convert(ConvOp::Fdemote, Scalar::F64, Scalar::F32).unwrap();
        assert_eq!(demote(0.1f64.to_bits()), f32b(0.1));
        let tb = convert(ConvOp::ToBool, Scalar::F32, Scalar::Bool).unwrap();
        assert_eq!(tb(f32b(-0.0)), 0);
        assert_eq!(tb(f32b(f32::NAN)), 1);
        assert_eq!(tb(f32b(0.5)), 1);
        assert!(convert(ConvOp::Sext, Scalar::I32, Scalar::I8).is_none());
    }

    #[test]
    fn atomics_combine_old_and_operand() {
        assert_eq!(atomic(AtomicOp::Add, Scalar::I8).unwrap()(0xff, 1), 0);
        assert_eq!(atomic(AtomicOp::Xchg, Scalar::I32).unwrap()(5, 9), 9);
        assert_eq!(
            atomic(AtomicOp::Add, Scalar::F32).unwrap()(f32b(1.5), f32b(2.0)),
            f32b(3.5)
        );
        assert!(atomic(AtomicOp::And, Scalar::F32).is_none());
    }
}
