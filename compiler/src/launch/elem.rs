//! Element types and scalar values: what one kernel argument or one buffer element is.
//!
//! The launcher deals only in the language's basic types ([`ElemType`]), because those are
//! all an entry point can take by value or through a pointer. A [`Value`] is one such
//! scalar, typed; it converts to and from little-endian bytes (the layout of
//! [memory.md](../../../lang-spec/memory.md#layout)) and prints so that it reads back
//! to the same value.
//!
//! Printing floats: Rust's shortest round-trip digits (`{}`), switching to exponent form
//! (`{:e}`, e.g. `1e20`, `1.5e-7`) when the magnitude is at least 1e16 or below 1e-5 so
//! huge and tiny values stay short; `-0.0` keeps its sign, and the non-finite values
//! print as `NaN`, `inf` and `-inf`. A float with an integral value prints without a
//! fraction (`3`). Every printed form is accepted back by the SPEC parser, `.txt` and
//! `.json` inputs.

use std::fmt;

use crate::front::sema::Prim;
use crate::launch::spec::Literal;

/// A basic type as the launcher sees it: the type of a scalar argument or of a buffer's
/// elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElemType {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl ElemType {
    pub const ALL: [ElemType; 11] = [
        ElemType::Bool,
        ElemType::I8,
        ElemType::U8,
        ElemType::I16,
        ElemType::U16,
        ElemType::I32,
        ElemType::U32,
        ElemType::I64,
        ElemType::U64,
        ElemType::F32,
        ElemType::F64,
    ];

    /// Size in bytes (a `bool` is one byte holding 0 or 1).
    pub fn size(self) -> usize {
        self.prim().size() as usize
    }

    /// The type's name in the language (`int`, `uint8`, `float`, ...).
    pub fn name(self) -> &'static str {
        self.prim().name()
    }

    pub fn is_float(self) -> bool {
        matches!(self, ElemType::F32 | ElemType::F64)
    }

    pub fn is_integer(self) -> bool {
        !matches!(self, ElemType::Bool | ElemType::F32 | ElemType::F64)
    }

    /// The range of an integer type (`bool` is `0..=1`); `None` for floats.
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            ElemType::Bool => (0, 1),
            ElemType::I8 => (i8::MIN.into(), i8::MAX.into()),
            ElemType::U8 => (0, u8::MAX.into()),
            ElemType::I16 => (i16::MIN.into(), i16::MAX.into()),
            ElemType::U16 => (0, u16::MAX.into()),
            ElemType::I32 => (i32::MIN.into(), i32::MAX.into()),
            ElemType::U32 => (0, u32::MAX.into()),
            ElemType::I64 => (i64::MIN.into(), i64::MAX.into()),
            ElemType::U64 => (0, u64::MAX.into()),
            ElemType::F32 | ElemType::F64 => return None,
        })
    }

    /// The launcher's type for a basic type; `None` for `float16`, which the launcher
    /// does not pass (a kernel takes `float` and converts).
    pub fn from_prim(p: Prim) -> Option<ElemType> {
        Some(match p {
            Prim::Bool => ElemType::Bool,
            Prim::Int8 => ElemType::I8,
            Prim::UInt8 => ElemType::U8,
            Prim::Int16 => ElemType::I16,
            Prim::UInt16 => ElemType::U16,
            Prim::Int32 => ElemType::I32,
            Prim::UInt32 => ElemType::U32,
            Prim::Int64 => ElemType::I64,
            Prim::UInt64 => ElemType::U64,
            Prim::Float => ElemType::F32,
            Prim::Double => ElemType::F64,
            Prim::Float16 => return None,
        })
    }

    pub fn prim(self) -> Prim {
        match self {
            ElemType::Bool => Prim::Bool,
            ElemType::I8 => Prim::Int8,
            ElemType::U8 => Prim::UInt8,
            ElemType::I16 => Prim::Int16,
            ElemType::U16 => Prim::UInt16,
            ElemType::I32 => Prim::Int32,
            ElemType::U32 => Prim::UInt32,
            ElemType::I64 => Prim::Int64,
            ElemType::U64 => Prim::UInt64,
            ElemType::F32 => Prim::Float,
            ElemType::F64 => Prim::Double,
        }
    }

    /// The zero of this type.
    pub fn zero(self) -> Value {
        Value::from_bits(self, 0)
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One typed scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    I8(i8),
    U8(u8),
    I16(i16),
    U16(u16),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
}

impl Value {
    pub fn elem_type(self) -> ElemType {
        match self {
            Value::Bool(_) => ElemType::Bool,
            Value::I8(_) => ElemType::I8,
            Value::U8(_) => ElemType::U8,
            Value::I16(_) => ElemType::I16,
            Value::U16(_) => ElemType::U16,
            Value::I32(_) => ElemType::I32,
            Value::U32(_) => ElemType::U32,
            Value::I64(_) => ElemType::I64,
            Value::U64(_) => ElemType::U64,
            Value::F32(_) => ElemType::F32,
            Value::F64(_) => ElemType::F64,
        }
    }

    /// The value's bytes in memory, zero-extended into a `u64` (floats by their bit
    /// pattern, signed integers truncated to their width). This is how a target puts a
    /// scalar argument in a register.
    pub fn to_bits(self) -> u64 {
        match self {
            Value::Bool(b) => u64::from(b),
            Value::I8(v) => u64::from(v as u8),
            Value::U8(v) => u64::from(v),
            Value::I16(v) => u64::from(v as u16),
            Value::U16(v) => u64::from(v),
            Value::I32(v) => u64::from(v as u32),
            Value::U32(v) => u64::from(v),
            Value::I64(v) => v as u64,
            Value::U64(v) => v,
            Value::F32(v) => u64::from(v.to_bits()),
            Value::F64(v) => v.to_bits(),
        }
    }

    /// The inverse of [`Value::to_bits`]: the low `ty.size()` bytes of `bits` as a `ty`.
    /// A `bool` is true when its byte is nonzero.
    pub fn from_bits(ty: ElemType, bits: u64) -> Value {
        match ty {
            ElemType::Bool => Value::Bool(bits as u8 != 0),
            ElemType::I8 => Value::I8(bits as u8 as i8),
            ElemType::U8 => Value::U8(bits as u8),
            ElemType::I16 => Value::I16(bits as u16 as i16),
            ElemType::U16 => Value::U16(bits as u16),
            ElemType::I32 => Value::I32(bits as u32 as i32),
            ElemType::U32 => Value::U32(bits as u32),
            ElemType::I64 => Value::I64(bits as i64),
            ElemType::U64 => Value::U64(bits),
            ElemType::F32 => Value::F32(f32::from_bits(bits as u32)),
            ElemType::F64 => Value::F64(f64::from_bits(bits)),
        }
    }

    /// Appends the value's little-endian bytes.
    pub fn write_le(self, out: &mut Vec<u8>) {
        let n = self.elem_type().size();
        out.extend_from_slice(&self.to_bits().to_le_bytes()[..n]);
    }

    /// Reads a `ty` from the first `ty.size()` bytes of `bytes` (little-endian);
    /// `None` if there are fewer.
    pub fn from_le_bytes(ty: ElemType, bytes: &[u8]) -> Option<Value> {
        let src = bytes.get(..ty.size())?;
        let mut raw = [0u8; 8];
        raw[..src.len()].copy_from_slice(src);
        Some(Value::from_bits(ty, u64::from_le_bytes(raw)))
    }

    /// The value as an `f64` (integers converted, `bool` as 0 or 1).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::F32(v) => f64::from(v),
            Value::F64(v) => v,
            other => other.as_i128().map_or(0.0, |v| v as f64),
        }
    }

    /// The value of an integer or `bool`; `None` for floats.
    pub fn as_i128(self) -> Option<i128> {
        Some(match self {
            Value::Bool(b) => i128::from(b),
            Value::I8(v) => v.into(),
            Value::U8(v) => v.into(),
            Value::I16(v) => v.into(),
            Value::U16(v) => v.into(),
            Value::I32(v) => v.into(),
            Value::U32(v) => v.into(),
            Value::I64(v) => v.into(),
            Value::U64(v) => v.into(),
            Value::F32(_) | Value::F64(_) => return None,
        })
    }

    /// An integer of type `ty` (which must be an integer type or `bool`), if `v` fits.
    pub fn from_int(ty: ElemType, v: i128) -> Option<Value> {
        let (lo, hi) = ty.int_range()?;
        if v < lo || v > hi {
            return None;
        }
        // In range, so the truncation below is exact.
        Some(Value::from_bits(ty, v as u64))
    }

    /// Converts a parsed literal to a value of type `ty`, the way an `--arg` scalar or a
    /// buffer element from a file is converted:
    /// - `bool` takes `true`, `false`, `0` and `1`;
    /// - integer types take integer literals within their range (not floats, not
    ///   `true`/`false`);
    /// - `float` and `double` take float literals within their range and integer
    ///   literals (rounded to the nearest representable value).
    ///
    /// The error is a sentence about the value, without the parameter's name.
    pub fn from_literal(ty: ElemType, lit: &Literal) -> Result<Value, String> {
        match (ty, lit) {
            (ElemType::Bool, Literal::Bool(b)) => Ok(Value::Bool(*b)),
            (ElemType::Bool, Literal::Int(v)) if *v == 0 || *v == 1 => Ok(Value::Bool(*v == 1)),
            (ElemType::Bool, _) => Err(format!(
                "`{lit}` is not a `bool`: use `true`, `false`, `0` or `1`"
            )),
            (_, Literal::Bool(_)) => Err(format!(
                "`{lit}` is a `bool`, but a `{ty}` is expected: use a number such as `1`"
            )),
            (ElemType::F32, Literal::Int(v)) => Ok(Value::F32(*v as f32)),
            (ElemType::F64, Literal::Int(v)) => Ok(Value::F64(*v as f64)),
            (ElemType::F32, Literal::Float(v)) => {
                let x = *v as f32;
                if v.is_finite() && !x.is_finite() {
                    Err(format!(
                        "`{lit}` is outside the range of `float` (about ±3.4e38)"
                    ))
                } else {
                    Ok(Value::F32(x))
                }
            }
            (ElemType::F64, Literal::Float(v)) => Ok(Value::F64(*v)),
            (_, Literal::Float(_)) => Err(format!(
                "`{lit}` is not an integer, but a `{ty}` is expected"
            )),
            (_, Literal::Int(v)) => Value::from_int(ty, *v).ok_or_else(|| {
                let (lo, hi) = ty.int_range().unwrap_or((0, 0));
                format!("`{lit}` does not fit in `{ty}` ({lo} to {hi})")
            }),
        }
    }

    /// The value as JSON: a number, `true`/`false`, or for a non-finite float one of
    /// the strings `"NaN"`, `"inf"`, `"-inf"` (JSON has no such numbers). A `float` is
    /// written with its own shortest digits (`0.1`, not `0.10000000149011612`).
    pub fn to_json(self) -> serde_json::Value {
        use serde_json::Value as J;
        let float = |v: f64, text: String| {
            if v.is_finite() {
                // The shortest decimal of the original precision, read back as an f64:
                // serde_json then prints exactly those digits.
                let v = text.parse::<f64>().unwrap_or(v);
                serde_json::Number::from_f64(v).map_or(J::Null, J::Number)
            } else {
                J::String(text)
            }
        };
        match self {
            Value::Bool(b) => J::Bool(b),
            Value::F32(v) => float(f64::from(v), format_float(v)),
            Value::F64(v) => float(v, format_float(v)),
            Value::U64(v) => J::from(v),
            other => J::from(other.as_i128().unwrap_or(0) as i64),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::F32(v) => f.write_str(&format_float(v)),
            Value::F64(v) => f.write_str(&format_float(v)),
            other => write!(f, "{}", other.as_i128().unwrap_or(0)),
        }
    }
}

/// Formats a float so that it parses back to the same value (see the module docs).
pub fn format_float<F>(v: F) -> String
where
    F: Copy + fmt::Display + fmt::LowerExp + Into<f64>,
{
    let x: f64 = v.into();
    if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if x == 0.0 && x.is_sign_negative() {
        "-0.0".to_string()
    } else if x != 0.0 && (x.abs() >= 1e16 || x.abs() < 1e-5) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that is one of the element types, for typed access to buffers
/// ([`crate::launch::Buffer::to_vec`], [`crate::launch::Buffer::from_slice`]).
pub trait Elem: Copy + sealed::Sealed {
    const TYPE: ElemType;
    fn into_value(self) -> Value;
    /// `None` when the value has another type.
    fn from_value(v: Value) -> Option<Self>;
}

macro_rules! elem_impls {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Elem for $t {
            const TYPE: ElemType = ElemType::$variant;
            fn into_value(self) -> Value {
                Value::$variant(self)
            }
            fn from_value(v: Value) -> Option<Self> {
                match v {
                    Value::$variant(x) => Some(x),
                    _ => None,
                }
            }
        }
        impl From<$t> for Value {
            fn from(x: $t) -> Value {
                Value::$variant(x)
            }
        }
    )*};
}

elem_impls! {
    bool => Bool, i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32,
    i64 => I64, u64 => U64, f32 => F32, f64 => F64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_names() {
        let sizes: Vec<usize> = ElemType::ALL.iter().map(|t| t.size()).collect();
        assert_eq!(sizes, [1, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8]);
        assert_eq!(ElemType::I32.name(), "int");
        assert_eq!(ElemType::F64.to_string(), "double");
        for t in ElemType::ALL {
            assert_eq!(ElemType::from_prim(t.prim()), Some(t));
            assert_eq!(t.zero().elem_type(), t);
        }
    }

    #[test]
    fn bytes_round_trip() {
        let vals = [
            Value::Bool(true),
            Value::I8(-3),
            Value::U8(250),
            Value::I16(-300),
            Value::U16(65000),
            Value::I32(-70000),
            Value::U32(4_000_000_000),
            Value::I64(-(1 << 40)),
            Value::U64(u64::MAX),
            Value::F32(-1.5),
            Value::F64(1e300),
        ];
        for v in vals {
            let mut bytes = Vec::new();
            v.write_le(&mut bytes);
            assert_eq!(bytes.len(), v.elem_type().size());
            assert_eq!(Value::from_le_bytes(v.elem_type(), &bytes), Some(v));
            assert_eq!(Value::from_bits(v.elem_type(), v.to_bits()), v);
        }
        assert_eq!(Value::from_le_bytes(ElemType::I32, &[1, 2]), None);
        let mut b = Vec::new();
        Value::I32(-2).write_le(&mut b);
        assert_eq!(b, [0xfe, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn floats_print_shortest_and_round_trip() {
        assert_eq!(Value::F32(0.1).to_string(), "0.1");
        assert_eq!(Value::F64(0.1).to_string(), "0.1");
        assert_eq!(Value::F32(3.0).to_string(), "3");
        assert_eq!(Value::F64(-1e20).to_string(), "-1e20");
        assert_eq!(Value::F64(1.5e-7).to_string(), "1.5e-7");
        assert_eq!(Value::F64(-0.0).to_string(), "-0.0");
        assert_eq!(Value::F32(f32::NAN).to_string(), "NaN");
        assert_eq!(Value::F64(f64::NEG_INFINITY).to_string(), "-inf");
        for x in [
            0.1f32,
            1.0 / 3.0,
            f32::MAX,
            f32::MIN_POSITIVE,
            1e-40,
            123456.79,
        ] {
            assert_eq!(format_float(x).parse::<f32>().unwrap(), x);
        }
        for x in [
            0.1f64,
            1.0 / 3.0,
            f64::MAX,
            5e-324,
            1e16,
            9999999999999998.0,
        ] {
            assert_eq!(format_float(x).parse::<f64>().unwrap(), x);
        }
    }

    #[test]
    fn ints_print_as_ints() {
        assert_eq!(Value::I8(-128).to_string(), "-128");
        assert_eq!(Value::U64(u64::MAX).to_string(), "18446744073709551615");
        assert_eq!(Value::Bool(false).to_string(), "false");
    }

    #[test]
    fn json_values() {
        assert_eq!(Value::F32(0.1).to_json().to_string(), "0.1");
        assert_eq!(Value::F64(2.5).to_json().to_string(), "2.5");
        assert_eq!(
            Value::F32(f32::INFINITY).to_json(),
            serde_json::json!("inf")
        );
        assert_eq!(Value::I64(i64::MIN).to_json(), serde_json::json!(i64::MIN));
        assert_eq!(Value::U64(u64::MAX).to_json(), serde_json::json!(u64::MAX));
        assert_eq!(Value::Bool(true).to_json(), serde_json::json!(true));
    }

    #[test]
    fn literal_conversion_rules() {
        use Literal::*;
        assert_eq!(
            Value::from_literal(ElemType::Bool, &Bool(true)),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            Value::from_literal(ElemType::Bool, &Int(0)),
            Ok(Value::Bool(false))
        );
        assert!(Value::from_literal(ElemType::Bool, &Int(2)).is_err());
        assert!(Value::from_literal(ElemType::Bool, &Float(1.0)).is_err());
        assert!(Value::from_literal(ElemType::I32, &Bool(true)).is_err());
        assert!(Value::from_literal(ElemType::I32, &Float(2.0)).is_err());
        assert_eq!(
            Value::from_literal(ElemType::I8, &Int(-128)),
            Ok(Value::I8(-128))
        );
        let e = Value::from_literal(ElemType::I8, &Int(128)).unwrap_err();
        assert_eq!(e, "`128` does not fit in `int8` (-128 to 127)");
        assert!(Value::from_literal(ElemType::U32, &Int(-1)).is_err());
        assert_eq!(
            Value::from_literal(ElemType::F32, &Int(3)),
            Ok(Value::F32(3.0))
        );
        assert_eq!(
            Value::from_literal(ElemType::F32, &Float(-1e20)),
            Ok(Value::F32(-1e20))
        );
        assert!(Value::from_literal(ElemType::F32, &Float(1e40)).is_err());
        assert_eq!(
            Value::from_literal(ElemType::F64, &Float(1e40)),
            Ok(Value::F64(1e40))
        );
        assert!(matches!(
            Value::from_literal(ElemType::F32, &Float(f64::NAN)),
            Ok(Value::F32(x)) if x.is_nan()
        ));
    }

    #[test]
    fn typed_elems() {
        assert_eq!(<f32 as Elem>::TYPE, ElemType::F32);
        assert_eq!(2.5f32.into_value(), Value::F32(2.5));
        assert_eq!(u16::from_value(Value::U16(7)), Some(7));
        assert_eq!(u16::from_value(Value::I16(7)), None);
        assert_eq!(Value::from(true), Value::Bool(true));
    }
}
