//! The semantic type arena: every type sema reasons about, interned, with a typed handle.
//!
//! A type is a [`TypeData`]: a [`TypeKind`] (the shape), a [`Variability`] and a `const`
//! flag. Interning makes type equality a handle comparison. The basic types come
//! pre-interned at fixed handles so the hot paths (literals, arithmetic) never hash.
//!
//! Variability follows ISPC: a type written without `uniform`/`varying` starts out
//! [`Variability::Unbound`] and is bound later by its context (a declaration makes it
//! varying, a pointer makes its pointee uniform, a struct member follows the struct
//! object, a typedef stays unbound until used). Arrays have no variability of their own:
//! their `var` mirrors their element's. A short vector (`float<3>`) carries its
//! elements' variability and constness itself, like a basic type.

use crate::front::intern::{Interner, Symbol};
use crate::source::Span;
use cranelift_entity::{entity_impl, EntityRef, PrimaryMap};
use rustc_hash::FxHashMap;

/// Handle of an interned type.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeId(u32);
entity_impl!(TypeId, "ty");

/// Handle of a struct definition.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StructId(u32);
entity_impl!(StructId, "struct");

/// Handle of an enum definition.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EnumId(u32);
entity_impl!(EnumId, "enum");

/// Handle of an interned function signature: what a function pointer type points to.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SigId(u32);
entity_impl!(SigId, "sig");

/// A function's signature as a function pointer type sees it: the return type and the
/// parameter types, bound as in a function declaration (unqualified is varying) and
/// compared as overloads compare them (top-level `const` of a value parameter does not
/// count, `&` does).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FnSig {
    pub ret: TypeId,
    /// Each parameter's type (after array decay) and whether it is a reference.
    pub params: Vec<(TypeId, bool)>,
    /// A `task` function's signature: a pointer of it holds only tasks and is only
    /// launched (a task never converts to an ordinary function pointer, nor back).
    pub task: bool,
}

/// How many values of a type exist per gang.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variability {
    /// One value shared by the gang.
    Uniform,
    /// One value per program instance.
    Varying,
    /// Not yet decided: a struct member, typedef or cast target written without a qualifier.
    Unbound,
}

impl Variability {
    pub fn as_str(self) -> &'static str {
        match self {
            Variability::Uniform => "uniform",
            Variability::Varying => "varying",
            Variability::Unbound => "unbound",
        }
    }

    /// The variability of a value computed from two operands.
    pub fn join(self, other: Variability) -> Variability {
        if self == Variability::Varying || other == Variability::Varying {
            Variability::Varying
        } else {
            Variability::Uniform
        }
    }
}

/// The basic (atomic) types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Prim {
    Bool,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Float,
    Double,
    Float16,
}

impl Prim {
    pub const ALL: [Prim; 12] = [
        Prim::Bool,
        Prim::Int8,
        Prim::UInt8,
        Prim::Int16,
        Prim::UInt16,
        Prim::Int32,
        Prim::UInt32,
        Prim::Int64,
        Prim::UInt64,
        Prim::Float,
        Prim::Double,
        Prim::Float16,
    ];

    pub fn size(self) -> u32 {
        match self {
            Prim::Bool | Prim::Int8 | Prim::UInt8 => 1,
            Prim::Int16 | Prim::UInt16 | Prim::Float16 => 2,
            Prim::Int32 | Prim::UInt32 | Prim::Float => 4,
            Prim::Int64 | Prim::UInt64 | Prim::Double => 8,
        }
    }

    pub fn bits(self) -> u32 {
        self.size() * 8
    }

    pub fn is_integer(self) -> bool {
        !matches!(
            self,
            Prim::Bool | Prim::Float | Prim::Double | Prim::Float16
        )
    }

    pub fn is_float(self) -> bool {
        matches!(self, Prim::Float | Prim::Double | Prim::Float16)
    }

    pub fn is_signed(self) -> bool {
        matches!(
            self,
            Prim::Int8
                | Prim::Int16
                | Prim::Int32
                | Prim::Int64
                | Prim::Float
                | Prim::Double
                | Prim::Float16
        )
    }

    /// ISPC's promotion order for mixed arithmetic, most general highest (the order of
    /// its `AtomicType::BasicType`): `double > uint64 > int64 > float > float16 > uint32 >
    /// int32 > uint16 > int16 > uint8 > int8 > bool`.
    pub fn rank(self) -> u8 {
        match self {
            Prim::Bool => 0,
            Prim::Int8 => 1,
            Prim::UInt8 => 2,
            Prim::Int16 => 3,
            Prim::UInt16 => 4,
            Prim::Int32 => 5,
            Prim::UInt32 => 6,
            Prim::Float16 => 7,
            Prim::Float => 8,
            Prim::Int64 => 9,
            Prim::UInt64 => 10,
            Prim::Double => 11,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Prim::Bool => "bool",
            Prim::Int8 => "int8",
            Prim::UInt8 => "uint8",
            Prim::Int16 => "int16",
            Prim::UInt16 => "uint16",
            Prim::Int32 => "int",
            Prim::UInt32 => "uint",
            Prim::Int64 => "int64",
            Prim::UInt64 => "uint64",
            Prim::Float => "float",
            Prim::Double => "double",
            Prim::Float16 => "float16",
        }
    }

    pub fn from_ast(p: crate::front::ast::Primitive) -> Option<Prim> {
        use crate::front::ast::Primitive as P;
        Some(match p {
            P::Void => return None,
            P::Bool => Prim::Bool,
            P::Int8 => Prim::Int8,
            P::UInt8 => Prim::UInt8,
            P::Int16 => Prim::Int16,
            P::UInt16 => Prim::UInt16,
            P::Int32 => Prim::Int32,
            P::UInt32 => Prim::UInt32,
            P::Int64 => Prim::Int64,
            P::UInt64 => Prim::UInt64,
            P::Float => Prim::Float,
            P::Double => Prim::Double,
            P::Float16 => Prim::Float16,
        })
    }

    /// The unsigned type of the same width (`unsigned int8` is `uint8`).
    pub fn to_unsigned(self) -> Option<Prim> {
        Some(match self {
            Prim::Int8 | Prim::UInt8 => Prim::UInt8,
            Prim::Int16 | Prim::UInt16 => Prim::UInt16,
            Prim::Int32 | Prim::UInt32 => Prim::UInt32,
            Prim::Int64 | Prim::UInt64 => Prim::UInt64,
            _ => return None,
        })
    }
}

/// The `threadIdx`-style built-ins, which are only read through `.x`, `.y` or `.z`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuVar {
    ThreadIdx,
    BlockIdx,
    BlockDim,
    GridDim,
}

impl GpuVar {
    pub fn name(self) -> &'static str {
        match self {
            GpuVar::ThreadIdx => "threadIdx",
            GpuVar::BlockIdx => "blockIdx",
            GpuVar::BlockDim => "blockDim",
            GpuVar::GridDim => "gridDim",
        }
    }
}

/// The shape of a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeKind {
    /// The type of an expression that failed to check. Converts to and from anything
    /// silently, so one mistake gives one diagnostic.
    Error,
    Void,
    Prim(Prim),
    /// A pointer; the handle is the pointed-to type (with its own variability).
    Pointer(TypeId),
    /// An array of a fixed number of elements, or of unknown size (`[]`).
    Array(TypeId, Option<u32>),
    /// A short vector `float<3>`: a basic element type and a length. Its variability
    /// and constness are its elements' (`uniform float<3>` holds three uniform floats).
    Vector(Prim, u32),
    Struct(StructId),
    Enum(EnumId),
    /// The type of `NULL`: converts to every pointer type.
    Null,
    /// The type of a bare `threadIdx`/`blockIdx`/... before `.x`/`.y`/`.z` is applied.
    Dim3(GpuVar),
    /// A pointer to a function of the signature (`float (*)(float, float)`). Its value
    /// is the function's number in the program, 0 for `NULL` (see `lower::fn_ptr`).
    FnPtr(SigId),
    /// `soa<N> S`: one block of `N` elements of struct `S` in structure-of-arrays
    /// layout (every member `m` becomes `N` uniform `m`s; see [`Types::soa_form`]). It
    /// appears as the element of an array or the pointee of a pointer; indexing those
    /// counts elements, not blocks, and gives an `S` (see `lower::soa`). Always
    /// uniform: the block has no per-instance copies.
    Soa(StructId, u32),
}

/// One interned type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TypeData {
    pub kind: TypeKind,
    pub var: Variability,
    pub is_const: bool,
}

/// A struct member as declared (its type may have unbound variability).
#[derive(Clone, Debug)]
pub struct FieldInfo {
    pub name: Symbol,
    pub ty: TypeId,
    pub span: Span,
}

/// Size, alignment and member offsets of one instantiation (uniform or varying) of a struct.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StructLayout {
    pub size: u32,
    pub align: u32,
    pub offsets: Vec<u32>,
}

/// Where a struct definition is in its resolution (structs are resolved on first use so
/// that order of definition matters only where C says it does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StructState {
    /// Named (by `struct Foo *` or a definition seen in the pre-pass) but fields not resolved.
    Pending,
    /// Its fields are being resolved: a by-value use now is a recursive struct.
    Resolving,
    Done,
}

#[derive(Clone, Debug)]
pub struct StructInfo {
    pub name: Symbol,
    pub span: Span,
    /// Index of the defining item in the translation unit, if it was defined.
    pub item: Option<usize>,
    pub fields: Vec<FieldInfo>,
    pub state: StructState,
    /// Layouts of the uniform and varying instantiations, filled in after checking.
    pub layouts: [StructLayout; 2],
}

impl StructInfo {
    pub fn field_index(&self, name: Symbol) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    pub fn layout(&self, var: Variability) -> &StructLayout {
        &self.layouts[usize::from(var == Variability::Varying)]
    }
}

#[derive(Clone, Debug)]
pub struct EnumInfo {
    pub name: Option<Symbol>,
    pub span: Span,
    /// The enumerators and their values, in declaration order.
    pub variants: Vec<(Symbol, i64)>,
}

/// Size and alignment in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub size: u32,
    pub align: u32,
}

/// Size and alignment of a short vector of `n` elements of `elem_size` bytes, ISPC's
/// layout: a varying vector is `n` varying elements one after the other (an array); a
/// uniform one is an LLVM vector whose element count is rounded up to a power of two
/// and to at least 128 bits of 32-bit data (4 elements, the target's data width), so
/// `uniform float<3>` takes 16 bytes and `uniform double<5>` 64, aligned to its size
/// (capped at 64 bytes like varying values). `lanes` is 1 for a uniform vector.
pub fn vector_layout(elem_size: u32, n: u32, lanes: u32) -> Layout {
    if lanes > 1 {
        let e = elem_size.saturating_mul(lanes);
        return Layout {
            size: e.saturating_mul(n),
            align: e.clamp(1, 64),
        };
    }
    let count = n.max(1).checked_next_power_of_two().unwrap_or(n).max(4);
    let size = elem_size.saturating_mul(count);
    Layout {
        size,
        align: size.clamp(1, 64),
    }
}

/// The memory slot of element `i` of a short vector: its byte offset (elements are
/// `elem_size * lanes` bytes apart in both layouts).
pub fn vector_elem_offset(elem_size: u32, lanes: u32, i: u32) -> u32 {
    elem_size.saturating_mul(lanes).saturating_mul(i)
}

/// Target facts that types depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// `programCount`: the gang width.
    pub program_count: u32,
    /// Size of a (uniform) pointer in bytes.
    pub pointer_size: u32,
}

/// The type arena plus the struct and enum definitions types refer to.
#[derive(Clone, Debug)]
pub struct Types {
    data: PrimaryMap<TypeId, TypeData>,
    map: FxHashMap<TypeData, TypeId>,
    pub structs: PrimaryMap<StructId, StructInfo>,
    pub enums: PrimaryMap<EnumId, EnumInfo>,
    sigs: PrimaryMap<SigId, FnSig>,
    sig_map: FxHashMap<FnSig, SigId>,
    /// Layouts of the `soa<N>` blocks formed so far, by struct and width.
    soa_layouts: FxHashMap<(StructId, u32), StructLayout>,
}

const PRIM_BASE: u32 = 2;
const VARS: [Variability; 3] = [
    Variability::Uniform,
    Variability::Varying,
    Variability::Unbound,
];

impl Default for Types {
    fn default() -> Self {
        Self::new()
    }
}

impl Types {
    /// The error type.
    pub const ERROR: TypeId = TypeId(0);
    /// `void`.
    pub const VOID: TypeId = TypeId(1);

    pub fn new() -> Self {
        let mut t = Types {
            data: PrimaryMap::new(),
            map: FxHashMap::default(),
            structs: PrimaryMap::new(),
            enums: PrimaryMap::new(),
            sigs: PrimaryMap::new(),
            sig_map: FxHashMap::default(),
            soa_layouts: FxHashMap::default(),
        };
        let plain = |kind| TypeData {
            kind,
            var: Variability::Uniform,
            is_const: false,
        };
        t.intern(plain(TypeKind::Error));
        t.intern(plain(TypeKind::Void));
        for p in Prim::ALL {
            for var in VARS {
                t.intern(TypeData {
                    kind: TypeKind::Prim(p),
                    var,
                    is_const: false,
                });
            }
        }
        t
    }

    pub fn intern(&mut self, d: TypeData) -> TypeId {
        if let Some(&id) = self.map.get(&d) {
            return id;
        }
        let id = self.data.push(d);
        self.map.insert(d, id);
        id
    }

    pub fn get(&self, ty: TypeId) -> TypeData {
        self.data[ty]
    }

    pub fn kind(&self, ty: TypeId) -> TypeKind {
        self.data[ty].kind
    }

    pub fn var(&self, ty: TypeId) -> Variability {
        self.data[ty].var
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// A basic type, non-const: a fixed handle, no hashing.
    pub fn prim(&self, p: Prim, var: Variability) -> TypeId {
        let vi = match var {
            Variability::Uniform => 0,
            Variability::Varying => 1,
            Variability::Unbound => 2,
        };
        TypeId(PRIM_BASE + p as u32 * 3 + vi)
    }

    pub fn pointer(&mut self, pointee: TypeId, var: Variability, is_const: bool) -> TypeId {
        self.intern(TypeData {
            kind: TypeKind::Pointer(pointee),
            var,
            is_const,
        })
    }

    /// An array; its variability and constness mirror the element's.
    pub fn array(&mut self, elem: TypeId, len: Option<u32>) -> TypeId {
        let e = self.data[elem];
        self.intern(TypeData {
            kind: TypeKind::Array(elem, len),
            var: e.var,
            is_const: e.is_const,
        })
    }

    pub fn struct_ty(&mut self, id: StructId, var: Variability, is_const: bool) -> TypeId {
        self.intern(TypeData {
            kind: TypeKind::Struct(id),
            var,
            is_const,
        })
    }

    /// A short vector of `len` elements of `elem`.
    pub fn vector(&mut self, elem: Prim, len: u32, var: Variability, is_const: bool) -> TypeId {
        self.intern(TypeData {
            kind: TypeKind::Vector(elem, len),
            var,
            is_const,
        })
    }

    /// A short vector's element type and length.
    pub fn as_vector(&self, ty: TypeId) -> Option<(Prim, u32)> {
        match self.kind(ty) {
            TypeKind::Vector(p, n) => Some((p, n)),
            _ => None,
        }
    }

    /// The type of one element of a short vector: its basic type with the vector's
    /// variability and constness.
    pub fn vector_elem(&mut self, ty: TypeId) -> TypeId {
        let d = self.data[ty];
        let TypeKind::Vector(p, _) = d.kind else {
            return Self::ERROR;
        };
        let e = self.prim(p, d.var);
        self.with_const(e, d.is_const)
    }

    /// The same kind of value with `len` elements of `elem` (a vector) or one (a basic
    /// type): `ty`'s variability, not const.
    pub fn with_elem(&mut self, elem: Prim, len: Option<u32>, var: Variability) -> TypeId {
        match len {
            Some(n) => self.vector(elem, n, var, false),
            None => self.prim(elem, var),
        }
    }

    pub fn enum_ty(&mut self, id: EnumId, var: Variability) -> TypeId {
        self.intern(TypeData {
            kind: TypeKind::Enum(id),
            var,
            is_const: false,
        })
    }

    /// `soa<width> S`, and its layout on `target` (`S` must be complete).
    pub fn soa(&mut self, id: StructId, width: u32, target: Target) -> TypeId {
        let ty = self.intern(TypeData {
            kind: TypeKind::Soa(id, width),
            var: Variability::Uniform,
            is_const: false,
        });
        if !self.soa_layouts.contains_key(&(id, width)) {
            let l = self.soa_struct_layout(id, width, target, 0);
            self.soa_layouts.insert((id, width), l);
        }
        ty
    }

    /// The struct and width of an `soa<N>` block type.
    pub fn as_soa(&self, ty: TypeId) -> Option<(StructId, u32)> {
        match self.kind(ty) {
            TypeKind::Soa(s, n) => Some((s, n)),
            _ => None,
        }
    }

    /// The `soa<N>` block a pointer or array of soa elements holds, if `ty` is one.
    pub fn soa_elements(&self, ty: TypeId) -> Option<(StructId, u32)> {
        match self.kind(ty) {
            TypeKind::Pointer(p) | TypeKind::Array(p, _) => self.as_soa(p),
            _ => None,
        }
    }

    /// Size, alignment and member offsets of `soa<width> S`: member by member, each in
    /// its soa form ([`Self::soa_form`]), aligned as a struct's. The block is aligned to
    /// at least `width` bytes, so that the low bits of an element's address can hold its
    /// lane (see `lower::soa`); every soa form's size is a multiple of `width`.
    pub fn soa_layout(&self, id: StructId, width: u32, target: Target) -> StructLayout {
        match self.soa_layouts.get(&(id, width)) {
            Some(l) => l.clone(),
            None => self.soa_struct_layout(id, width, target, 0),
        }
    }

    fn soa_struct_layout(
        &self,
        id: StructId,
        width: u32,
        target: Target,
        depth: u32,
    ) -> StructLayout {
        let mut offsets = Vec::new();
        let (mut size, mut align) = (0u32, width.max(1));
        if depth <= 64 {
            for f in &self.structs[id].fields {
                let l = self.soa_form_layout(f.ty, width, target, depth + 1);
                let a = l.align.max(1);
                size = size.div_ceil(a).saturating_mul(a);
                offsets.push(size);
                size = size.saturating_add(l.size);
                align = align.max(a);
            }
        }
        StructLayout {
            size: size.max(1).div_ceil(align).saturating_mul(align),
            align,
            offsets,
        }
    }

    /// Size and alignment of the soa form of a member type `ty` (see [`Self::soa_form`]).
    pub fn soa_form_layout(&self, ty: TypeId, width: u32, target: Target, depth: u32) -> Layout {
        if depth > 64 {
            return Layout { size: 0, align: 1 };
        }
        match self.kind(ty) {
            TypeKind::Array(elem, n) => {
                let e = self.soa_form_layout(elem, width, target, depth + 1);
                Layout {
                    size: e.size.saturating_mul(n.unwrap_or(0)),
                    align: e.align,
                }
            }
            TypeKind::Vector(p, n) => Layout {
                size: p.size().saturating_mul(width).saturating_mul(n),
                align: p.size(),
            },
            TypeKind::Struct(s) | TypeKind::Soa(s, _) => {
                let l = match self.soa_layouts.get(&(s, width)) {
                    Some(l) => l.clone(),
                    None => self.soa_struct_layout(s, width, target, depth + 1),
                };
                Layout {
                    size: l.size,
                    align: l.align,
                }
            }
            _ => {
                let one = self.layout(self.uniform_twin(ty), target);
                Layout {
                    size: one.size.saturating_mul(width),
                    align: one.align,
                }
            }
        }
    }

    /// `ty` with its outer variability made uniform, without interning (its layout is
    /// that of the uniform type): for a scalar, the interned uniform twin if any.
    fn uniform_twin(&self, ty: TypeId) -> TypeId {
        let d = self.data[ty];
        if d.var == Variability::Uniform {
            return ty;
        }
        let u = TypeData {
            var: Variability::Uniform,
            ..d
        };
        self.map.get(&u).copied().unwrap_or(ty)
    }

    /// The soa form of member type `ty` in a block of `width` elements: what the
    /// block holds in its place. A scalar becomes `width` uniform scalars (one per
    /// element), an array an array of soa forms, a short vector `T<n>` an array of `n`
    /// soa forms of `T`, and a struct its own `soa<width>` block.
    pub fn soa_form(&mut self, ty: TypeId, width: u32, target: Target) -> TypeId {
        let ty = self.bind(ty, Variability::Uniform);
        match self.kind(ty) {
            TypeKind::Array(elem, n) => {
                let e = self.soa_form(elem, width, target);
                self.array(e, n)
            }
            TypeKind::Vector(p, n) => {
                let lanes = self.prim(p, Variability::Uniform);
                let e = self.array(lanes, Some(width));
                self.array(e, Some(n))
            }
            TypeKind::Struct(s) => self.soa(s, width, target),
            TypeKind::Error | TypeKind::Void => ty,
            _ => self.array(ty, Some(width)),
        }
    }

    /// The type of member `index` of an `soa<N>` block as the block holds it (its soa
    /// form): what a brace list for the block initializes.
    pub fn soa_member_type(&mut self, soa_ty: TypeId, index: usize, target: Target) -> TypeId {
        let d = self.data[soa_ty];
        let TypeKind::Soa(sid, width) = d.kind else {
            return Self::ERROR;
        };
        let Some(field) = self.structs[sid].fields.get(index) else {
            return Self::ERROR;
        };
        let form = self.soa_form(field.ty, width, target);
        self.with_const(form, d.is_const)
    }

    /// Interns a function signature.
    pub fn sig(&mut self, sig: FnSig) -> SigId {
        if let Some(&id) = self.sig_map.get(&sig) {
            return id;
        }
        let id = self.sigs.push(sig.clone());
        self.sig_map.insert(sig, id);
        id
    }

    pub fn sig_data(&self, sig: SigId) -> &FnSig {
        &self.sigs[sig]
    }

    /// A pointer to a function of signature `sig`.
    pub fn fn_ptr(&mut self, sig: SigId, var: Variability, is_const: bool) -> TypeId {
        self.intern(TypeData {
            kind: TypeKind::FnPtr(sig),
            var,
            is_const,
        })
    }

    /// The signature a function pointer type points to.
    pub fn fn_ptr_sig(&self, ty: TypeId) -> Option<SigId> {
        match self.kind(ty) {
            TypeKind::FnPtr(s) => Some(s),
            _ => None,
        }
    }

    pub fn null(&mut self) -> TypeId {
        self.intern(TypeData {
            kind: TypeKind::Null,
            var: Variability::Uniform,
            is_const: false,
        })
    }

    pub fn dim3(&mut self, v: GpuVar, var: Variability) -> TypeId {
        self.intern(TypeData {
            kind: TypeKind::Dim3(v),
            var,
            is_const: true,
        })
    }

    pub fn is_error(&self, ty: TypeId) -> bool {
        ty == Self::ERROR
    }

    pub fn is_void(&self, ty: TypeId) -> bool {
        matches!(self.kind(ty), TypeKind::Void)
    }

    pub fn is_varying(&self, ty: TypeId) -> bool {
        self.var(ty) == Variability::Varying
    }

    pub fn as_prim(&self, ty: TypeId) -> Option<Prim> {
        match self.kind(ty) {
            TypeKind::Prim(p) => Some(p),
            _ => None,
        }
    }

    /// An integer, or an enum (which behaves as `int` in arithmetic).
    pub fn is_integral(&self, ty: TypeId) -> bool {
        match self.kind(ty) {
            TypeKind::Prim(p) => p.is_integer(),
            TypeKind::Enum(_) => true,
            _ => false,
        }
    }

    /// `bool`, an integer, a floating-point type or an enum.
    pub fn is_arithmetic(&self, ty: TypeId) -> bool {
        matches!(self.kind(ty), TypeKind::Prim(_) | TypeKind::Enum(_))
    }

    pub fn pointee(&self, ty: TypeId) -> Option<TypeId> {
        match self.kind(ty) {
            TypeKind::Pointer(p) => Some(p),
            _ => None,
        }
    }

    /// The arithmetic type an enum or basic type computes in.
    pub fn arith_prim(&self, ty: TypeId) -> Option<Prim> {
        match self.kind(ty) {
            TypeKind::Prim(p) => Some(p),
            TypeKind::Enum(_) => Some(Prim::Int32),
            _ => None,
        }
    }

    /// The same type with `const` set or cleared.
    pub fn with_const(&mut self, ty: TypeId, is_const: bool) -> TypeId {
        let d = self.data[ty];
        if d.is_const == is_const || matches!(d.kind, TypeKind::Error) {
            return ty;
        }
        match d.kind {
            TypeKind::Array(elem, n) => {
                let e = self.with_const(elem, is_const);
                self.array(e, n)
            }
            _ => self.intern(TypeData { is_const, ..d }),
        }
    }

    /// Replaces unbound variability at the outer level with `var`: through arrays to
    /// their elements, but not into a pointer's pointee (which was bound when the
    /// pointer was formed).
    pub fn bind(&mut self, ty: TypeId, var: Variability) -> TypeId {
        self.set_var(ty, var, true)
    }

    /// Forces the outer variability to `var` (used when a varying index or a varying
    /// operand makes a value varying): arrays change their elements.
    pub fn with_var(&mut self, ty: TypeId, var: Variability) -> TypeId {
        self.set_var(ty, var, false)
    }

    fn set_var(&mut self, ty: TypeId, var: Variability, only_unbound: bool) -> TypeId {
        let d = self.data[ty];
        if d.var == var || (only_unbound && d.var != Variability::Unbound) {
            return ty;
        }
        match d.kind {
            TypeKind::Array(elem, n) => {
                let e = self.set_var(elem, var, only_unbound);
                self.array(e, n)
            }
            TypeKind::Error | TypeKind::Void | TypeKind::Soa(..) => ty,
            _ => self.intern(TypeData { var, ..d }),
        }
    }

    /// The type of member `index` of a struct object of type `struct_ty`: unbound members
    /// take the object's variability, and a const object has const members.
    pub fn member_type(&mut self, struct_ty: TypeId, index: usize) -> TypeId {
        let d = self.data[struct_ty];
        let TypeKind::Struct(sid) = d.kind else {
            return Self::ERROR;
        };
        let Some(field) = self.structs[sid].fields.get(index) else {
            return Self::ERROR;
        };
        let fty = field.ty;
        let bound = self.bind(fty, d.var);
        if d.is_const {
            self.with_const(bound, true)
        } else {
            bound
        }
    }

    /// Does any part of the type (through pointers, arrays and struct members) say varying?
    /// Entry-point parameters and returns must not.
    pub fn contains_varying(&self, ty: TypeId) -> bool {
        self.contains_varying_depth(ty, 0)
    }

    fn contains_varying_depth(&self, ty: TypeId, depth: u32) -> bool {
        if depth > 64 {
            return false;
        }
        let d = self.data[ty];
        match d.kind {
            TypeKind::Pointer(p) => {
                d.var == Variability::Varying || self.contains_varying_depth(p, depth + 1)
            }
            TypeKind::Array(e, _) => self.contains_varying_depth(e, depth + 1),
            TypeKind::Struct(sid) => {
                d.var == Variability::Varying
                    || self.structs[sid].fields.iter().any(|f| {
                        self.data[f.ty].var == Variability::Varying
                            || (matches!(self.data[f.ty].kind, TypeKind::Pointer(_))
                                && self.contains_varying_depth(f.ty, depth + 1))
                    })
            }
            _ => d.var == Variability::Varying,
        }
    }

    /// Size and alignment of a type on `target`. Varying basic types and pointers take
    /// `programCount` lanes; a varying struct is laid out member by member (its members
    /// bound varying); `void`, errors and unknown-size arrays have size 0.
    pub fn layout(&self, ty: TypeId, target: Target) -> Layout {
        self.layout_depth(ty, target, 0)
    }

    fn layout_depth(&self, ty: TypeId, target: Target, depth: u32) -> Layout {
        let d = self.data[ty];
        let lanes = if d.var == Variability::Varying {
            target.program_count.max(1)
        } else {
            1
        };
        let scalar = |size: u32| Layout {
            size: size.saturating_mul(lanes),
            align: size.saturating_mul(lanes).clamp(1, 64),
        };
        match d.kind {
            TypeKind::Error | TypeKind::Void | TypeKind::Dim3(_) => Layout { size: 0, align: 1 },
            TypeKind::Prim(p) => scalar(p.size()),
            TypeKind::Enum(_) => scalar(4),
            TypeKind::Pointer(_) | TypeKind::Null => scalar(target.pointer_size),
            TypeKind::FnPtr(_) => scalar(4),
            TypeKind::Array(elem, n) => {
                if depth > 64 {
                    return Layout { size: 0, align: 1 };
                }
                let e = self.layout_depth(elem, target, depth + 1);
                Layout {
                    size: e.size.saturating_mul(n.unwrap_or(0)),
                    align: e.align,
                }
            }
            TypeKind::Struct(sid) => {
                let l = self.structs[sid].layout(d.var);
                Layout {
                    size: l.size,
                    align: l.align.max(1),
                }
            }
            TypeKind::Vector(p, n) => vector_layout(p.size(), n, lanes),
            TypeKind::Soa(sid, width) => {
                let l = self.soa_layout(sid, width, target);
                Layout {
                    size: l.size,
                    align: l.align,
                }
            }
        }
    }

    /// Computes the layouts of every struct's uniform and varying instantiation, in
    /// dependency order (a member struct first). Called once after checking.
    pub fn compute_struct_layouts(&mut self, target: Target) {
        let ids: Vec<StructId> = self.structs.keys().collect();
        let mut done = vec![false; ids.len()];
        for id in ids {
            self.layout_struct(id, target, &mut done, 0);
        }
        let soas: Vec<(StructId, u32)> = self.soa_layouts.keys().copied().collect();
        for (id, width) in soas {
            let l = self.soa_struct_layout(id, width, target, 0);
            self.soa_layouts.insert((id, width), l);
        }
    }

    /// Lays out one struct as soon as it is defined, so that `sizeof` in later items
    /// sees its size. Its member structs were defined before it, so are laid out.
    pub fn compute_struct_layout(&mut self, id: StructId, target: Target) {
        let mut done = vec![true; self.structs.len()];
        done[id.index()] = false;
        self.layout_struct(id, target, &mut done, 0);
    }

    fn layout_struct(&mut self, id: StructId, target: Target, done: &mut [bool], depth: u32) {
        if done[id.index()] || depth > 64 {
            return;
        }
        done[id.index()] = true;
        let fields: Vec<TypeId> = self.structs[id].fields.iter().map(|f| f.ty).collect();
        // Lay out member structs first.
        for &f in &fields {
            if let Some(sid) = self.innermost_struct(f) {
                self.layout_struct(sid, target, done, depth + 1);
            }
        }
        for (slot, var) in [(0, Variability::Uniform), (1, Variability::Varying)] {
            let mut offsets = Vec::with_capacity(fields.len());
            let (mut size, mut align) = (0u32, 1u32);
            for &f in &fields {
                let bound = self.bind(f, var);
                let l = self.layout(bound, target);
                let a = l.align.max(1);
                size = size.div_ceil(a).saturating_mul(a);
                offsets.push(size);
                size = size.saturating_add(l.size);
                align = align.max(a);
            }
            size = size.div_ceil(align).saturating_mul(align);
            if fields.is_empty() {
                // As in C++ and ISPC, a struct with no members still takes a byte, so
                // that distinct objects (array elements) have distinct addresses.
                size = 1;
            }
            self.structs[id].layouts[slot] = StructLayout {
                size,
                align,
                offsets,
            };
        }
    }

    fn innermost_struct(&self, mut ty: TypeId) -> Option<StructId> {
        loop {
            match self.kind(ty) {
                TypeKind::Array(e, _) => ty = e,
                TypeKind::Struct(s) => return Some(s),
                _ => return None,
            }
        }
    }

    /// The type as a programmer would write it, for diagnostics:
    /// `uniform float * varying`, `varying int[4]`, `uniform struct Foo`.
    pub fn display(&self, ty: TypeId, interner: &Interner) -> String {
        let mut out = String::new();
        self.write_type(ty, interner, &mut out, 0);
        out
    }

    fn write_type(&self, ty: TypeId, interner: &Interner, out: &mut String, depth: u32) {
        if depth > 32 {
            out.push_str("...");
            return;
        }
        let d = self.data[ty];
        let quals = |out: &mut String| {
            if d.is_const {
                out.push_str("const ");
            }
            if d.var != Variability::Unbound {
                out.push_str(d.var.as_str());
                out.push(' ');
            }
        };
        // A pointer's own qualifiers follow its `*`, as in C.
        let pointer_quals = |out: &mut String| {
            if d.is_const {
                out.push_str(" const");
            }
            if d.var != Variability::Unbound {
                out.push(' ');
                out.push_str(d.var.as_str());
            }
        };
        match d.kind {
            TypeKind::Error => out.push_str("{error}"),
            TypeKind::Void => out.push_str("void"),
            TypeKind::Null => out.push_str("NULL"),
            TypeKind::Prim(p) => {
                quals(out);
                out.push_str(p.name());
            }
            TypeKind::Struct(s) => {
                quals(out);
                out.push_str("struct ");
                out.push_str(interner.resolve(self.structs[s].name));
            }
            TypeKind::Vector(p, n) => {
                quals(out);
                out.push_str(p.name());
                out.push_str(&format!("<{n}>"));
            }
            TypeKind::Soa(s, n) => {
                if d.is_const {
                    out.push_str("const ");
                }
                out.push_str(&format!("soa<{n}> struct "));
                out.push_str(interner.resolve(self.structs[s].name));
            }
            TypeKind::Enum(e) => {
                quals(out);
                out.push_str("enum ");
                match self.enums[e].name {
                    Some(n) => out.push_str(interner.resolve(n)),
                    None => out.push_str("<anonymous>"),
                }
            }
            TypeKind::Dim3(v) => {
                out.push_str(v.name());
            }
            TypeKind::FnPtr(sig) => {
                let sig = &self.sigs[sig];
                if sig.task {
                    out.push_str("task ");
                }
                self.write_type(sig.ret, interner, out, depth + 1);
                out.push_str(" (*");
                pointer_quals(out);
                out.push_str(")(");
                for (i, &(p, by_ref)) in sig.params.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.write_type(p, interner, out, depth + 1);
                    if by_ref {
                        out.push_str(" &");
                    }
                }
                out.push(')');
            }
            TypeKind::Pointer(p) => {
                self.write_type(p, interner, out, depth + 1);
                out.push_str(" *");
                pointer_quals(out);
            }
            TypeKind::Array(..) => {
                let mut dims = Vec::new();
                let mut t = ty;
                while let TypeKind::Array(e, n) = self.kind(t) {
                    dims.push(n);
                    t = e;
                }
                self.write_type(t, interner, out, depth + 1);
                for n in dims {
                    match n {
                        Some(n) => out.push_str(&format!("[{n}]")),
                        None => out.push_str("[]"),
                    }
                }
            }
        }
    }
}
