//! IR types: an element type and whether the value is uniform (one per gang or warp)
//! or varying (one per program instance).
//!
//! Integers carry no signedness (as in cranelift and LLVM): operations that care say
//! so (`sdiv`/`udiv`, `icmp slt`/`ult`, `sext`/`zext`). A mask is a varying `bool`.
//! Pointers are byte addresses whose width the target decides; what memory they point
//! into travels on the loads and stores ([`Space`]).

use std::fmt;

/// Element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    Bool,
    I8,
    I16,
    I32,
    I64,
    /// IEEE binary16: a storage type. It is loaded, stored, selected and converted, but
    /// arithmetic happens in `f32` (`fpromote`, the operation, `fdemote`).
    F16,
    F32,
    F64,
    /// A byte address.
    Ptr,
}

impl Scalar {
    pub const ALL: [Scalar; 9] = [
        Scalar::Bool,
        Scalar::I8,
        Scalar::I16,
        Scalar::I32,
        Scalar::I64,
        Scalar::F16,
        Scalar::F32,
        Scalar::F64,
        Scalar::Ptr,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "i8",
            Scalar::I16 => "i16",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::F16 => "f16",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::Ptr => "ptr",
        }
    }

    pub fn from_name(name: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|s| s.name() == name)
    }

    pub fn is_int(self) -> bool {
        matches!(self, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64)
    }

    /// The arithmetic floats, `f32` and `f64` (not the storage type `f16`).
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }

    /// Any IEEE type, `f16` included: what `fconst`, `fpromote` and `fdemote` take.
    pub fn is_ieee(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::F32 | Scalar::F64)
    }

    /// Size in bytes in memory; `ptr_size` is the target's address width.
    pub fn bytes(self, ptr_size: u32) -> u32 {
        match self {
            Scalar::Bool | Scalar::I8 => 1,
            Scalar::I16 | Scalar::F16 => 2,
            Scalar::I32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::F64 => 8,
            Scalar::Ptr => ptr_size,
        }
    }

    /// Bit width of an integer or float type (pointers: 64, the interpreter's width).
    pub fn bits(self) -> u32 {
        match self {
            Scalar::Bool => 1,
            Scalar::I8 => 8,
            Scalar::I16 | Scalar::F16 => 16,
            Scalar::I32 | Scalar::F32 => 32,
            Scalar::I64 | Scalar::F64 | Scalar::Ptr => 64,
        }
    }
}

/// An element type with its variability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    pub scalar: Scalar,
    pub varying: bool,
}

impl Type {
    pub const fn uniform(scalar: Scalar) -> Type {
        Type {
            scalar,
            varying: false,
        }
    }

    pub const fn varying(scalar: Scalar) -> Type {
        Type {
            scalar,
            varying: true,
        }
    }

    /// The execution-mask type: one bool per program instance.
    pub const MASK: Type = Type::varying(Scalar::Bool);
    pub const BOOL: Type = Type::uniform(Scalar::Bool);
    pub const I32: Type = Type::uniform(Scalar::I32);
    pub const I64: Type = Type::uniform(Scalar::I64);
    pub const PTR: Type = Type::uniform(Scalar::Ptr);

    pub fn is_mask(self) -> bool {
        self == Type::MASK
    }

    /// The same element type, varying.
    pub fn to_varying(self) -> Type {
        Type {
            varying: true,
            ..self
        }
    }

    /// The same element type, uniform.
    pub fn to_uniform(self) -> Type {
        Type {
            varying: false,
            ..self
        }
    }

    pub fn with_scalar(self, scalar: Scalar) -> Type {
        Type { scalar, ..self }
    }
}

/// Uniform types print as their element type (`i32`), varying ones in brackets (`[i32]`):
/// a gang-wide vector of them.
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.varying {
            write!(f, "[{}]", self.scalar.name())
        } else {
            f.write_str(self.scalar.name())
        }
    }
}

impl Type {
    pub fn parse(text: &str) -> Option<Type> {
        match text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            Some(inner) => Scalar::from_name(inner).map(Type::varying),
            None => Scalar::from_name(text).map(Type::uniform),
        }
    }
}

/// Where a memory access goes. `Generic` when the compiler cannot tell (a pointer
/// parameter may point anywhere); back ends with distinct instructions per space
/// (`ld.shared` on dac-gpu) use the space when it is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    Generic,
    /// Global memory: buffers the host provides and module globals.
    Global,
    /// Block-shared memory, one copy per block.
    Shared,
    /// Per-gang private memory: the stack frame.
    Private,
    /// Read-only launch parameters and constants.
    Param,
}

impl Space {
    pub const ALL: [Space; 5] = [
        Space::Generic,
        Space::Global,
        Space::Shared,
        Space::Private,
        Space::Param,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Space::Generic => "generic",
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Private => "private",
            Space::Param => "param",
        }
    }

    pub fn from_name(name: &str) -> Option<Space> {
        Space::ALL.into_iter().find(|s| s.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_text_round_trips() {
        for s in Scalar::ALL {
            for t in [Type::uniform(s), Type::varying(s)] {
                assert_eq!(Type::parse(&t.to_string()), Some(t));
            }
        }
        assert_eq!(Type::MASK.to_string(), "[bool]");
        assert_eq!(Type::parse("[i33]"), None);
    }
}
