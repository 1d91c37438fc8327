//! Entry points as the launcher needs them: which function `--entry NAME` means, and
//! what each of its parameters takes from the command line.
//!
//! Sema already guarantees that entry parameters are uniform all the way down (E0402).
//! The launcher narrows further to what a host can pass: a uniform scalar of a basic
//! type (or an enum, passed as its `int` value), or a uniform pointer to basic-type
//! elements (`uniform T a[]`, `uniform T * uniform p`, `const` allowed), which becomes
//! a [`Buffer`](crate::launch::Buffer); an array of arrays (`uniform float m[4][4]`) is
//! a buffer of its innermost elements, and a pointer to structs of plain data a buffer
//! of their bytes ([`ParamKind::Records`]). Struct parameters, pointers to pointers or
//! to structs holding pointers, and `void *` are refused with an error saying why,
//! rather than guessed at.

use std::fmt;

use crate::front::intern::Interner;
use crate::front::sema::{Checked, FuncId, Prim, TypeId, TypeKind, Variability};
use crate::launch::elem::ElemType;
use crate::launch::error::{did_you_mean, ErrorKind, LaunchError};

/// What a parameter takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A uniform scalar, passed by value.
    Scalar(ElemType),
    /// A pointer to elements: the host passes a buffer. `read_only` when the pointee
    /// is `const` (the kernel cannot change the buffer).
    Buffer { elem: ElemType, read_only: bool },
    /// A pointer to structs of plain data (basic types, enums, and arrays and structs of
    /// them, no pointers): the host passes their bytes, `size` per struct, laid out as
    /// the kernel lays a uniform struct out (C's layout, which ISPC's host code shares).
    Records { size: u32, read_only: bool },
}

impl ParamKind {
    /// Whether the kernel cannot change the buffer (its pointee is `const`).
    pub fn read_only(self) -> bool {
        match self {
            ParamKind::Scalar(_) => false,
            ParamKind::Buffer { read_only, .. } | ParamKind::Records { read_only, .. } => read_only,
        }
    }
}

/// One parameter of an entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelParam {
    /// The name `--arg` uses. An unnamed parameter number `i` (from 0) is `argI`.
    pub name: String,
    /// Position in the parameter list.
    pub index: usize,
    pub kind: ParamKind,
    /// A reference (`uniform T &x`): a buffer that must hold at least one element.
    pub by_ref: bool,
    /// The type as sema displays it (`uniform float * uniform`), for messages.
    pub type_name: String,
}

impl KernelParam {
    pub fn is_buffer(&self) -> bool {
        !matches!(self.kind, ParamKind::Scalar(_))
    }

    /// The scalar type, or the buffer's element type (bytes for structs).
    pub fn elem(&self) -> ElemType {
        match self.kind {
            ParamKind::Scalar(t) | ParamKind::Buffer { elem: t, .. } => t,
            ParamKind::Records { .. } => ElemType::U8,
        }
    }

    /// A short description for messages: `int` or `buffer of float`.
    pub fn describe(&self) -> String {
        match self.kind {
            ParamKind::Scalar(t) => t.name().to_string(),
            ParamKind::Buffer { elem, read_only } => {
                format!(
                    "{}buffer of {elem}",
                    if read_only { "read-only " } else { "" }
                )
            }
            ParamKind::Records { size, read_only } => {
                format!(
                    "{}buffer of structs of {size} bytes",
                    if read_only { "read-only " } else { "" }
                )
            }
        }
    }
}

/// Whether the entry point was declared `export` or `task`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    Export,
    Task,
}

/// An entry point's signature, ready for binding arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSignature {
    pub name: String,
    pub func: FuncId,
    pub kind: EntryKind,
    pub params: Vec<KernelParam>,
    /// The uniform scalar an `export` function returns; `None` for `void`.
    pub ret: Option<ElemType>,
}

impl KernelSignature {
    pub fn param(&self, name: &str) -> Option<&KernelParam> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The parameters that take buffers.
    pub fn buffer_params(&self) -> impl Iterator<Item = &KernelParam> {
        self.params.iter().filter(|p| p.is_buffer())
    }
}

impl fmt::Display for KernelSignature {
    /// `name(int n, buffer of float data)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| format!("{} {}", p.describe(), p.name))
            .collect();
        write!(f, "{}({})", self.name, params.join(", "))
    }
}

/// The user-defined entry points (`export` or `task` functions with a body), in
/// definition order.
pub fn entries<'a>(
    checked: &'a Checked,
    interner: &'a Interner,
) -> impl Iterator<Item = (FuncId, &'a str)> + 'a {
    checked
        .defined_funcs()
        .filter(|(_, f)| f.is_entry() && !f.from_stdlib)
        .map(|(id, f)| (id, interner.resolve(f.name)))
}

/// Finds the entry point called `name`. On a miss the error suggests a close name and
/// lists every entry point; a function that exists but is not `export`/`task`, or has
/// no body, gets its own explanation.
pub fn find_entry(
    checked: &Checked,
    interner: &Interner,
    name: &str,
) -> Result<FuncId, LaunchError> {
    let found: Vec<FuncId> = entries(checked, interner)
        .filter(|(_, n)| *n == name)
        .map(|(id, _)| id)
        .collect();
    match found.as_slice() {
        [one] => return Ok(*one),
        [] => {}
        _ => {
            return Err(LaunchError::new(
                ErrorKind::NoSuchEntry,
                format!(
                    "`{name}` names {} entry points (overloads), so the launch is ambiguous",
                    found.len()
                ),
            )
            .with_help("give each entry point its own name"))
        }
    }
    let available: Vec<&str> = entries(checked, interner).map(|(_, n)| n).collect();
    let mut err = LaunchError::new(
        ErrorKind::NoSuchEntry,
        format!(
            "no entry point named `{name}`{}",
            did_you_mean(name, available.iter().copied())
        ),
    );
    if let Some(f) = checked
        .funcs
        .values()
        .find(|f| !f.from_stdlib && interner.resolve(f.name) == name)
    {
        err = if !f.is_entry() {
            err.with_note(format!(
                "`{name}` is a function, but not an `export` or `task` function"
            ))
            .with_help(format!(
                "declare it `export void {name}(...)` or `task void {name}(...)` to launch it"
            ))
        } else {
            err.with_note(format!("`{name}` is declared but never defined"))
        };
    }
    Err(if available.is_empty() {
        err.with_note("the program has no entry points: declare a function `export` or `task`")
    } else {
        err.with_note(format!("the entry points are: {}", available.join(", ")))
    })
}

/// The launcher's view of an entry point's parameters and return type.
pub fn signature_of(
    checked: &Checked,
    func: FuncId,
    interner: &Interner,
) -> Result<KernelSignature, LaunchError> {
    let f = &checked.funcs[func];
    let name = interner.resolve(f.name).to_string();
    let ty_str = |t: TypeId| checked.types.display(t, interner);
    let mut params = Vec::with_capacity(f.params.len());
    for (index, p) in f.params.iter().enumerate() {
        let pname = p.name.map_or_else(
            || format!("arg{index}"),
            |s| interner.resolve(s).to_string(),
        );
        // A reference is passed as the address of its object: a buffer of one element.
        let kind = match p.by_ref {
            true => buffer_kind(checked, innermost_element(checked, p.ty)),
            false => param_kind(checked, p.ty),
        };
        let kind = kind.map_err(|why| {
            LaunchError::new(
                ErrorKind::UnsupportedSignature,
                format!(
                    "cannot launch `{name}`: parameter `{pname}` has type `{}`, which the launcher cannot pass",
                    ty_str(p.ty)
                ),
            )
            .with_note(why)
            .with_help("entry points take uniform scalars of basic types and uniform pointers or arrays of them (`uniform float data[]`)")
        })?;
        params.push(KernelParam {
            name: pname,
            index,
            kind,
            by_ref: p.by_ref,
            type_name: ty_str(p.ty),
        });
    }
    let ret = match checked.types.kind(f.ret) {
        TypeKind::Void => None,
        _ => match scalar_elem(checked, f.ret) {
            Some(t) if checked.types.var(f.ret) != Variability::Varying => Some(t),
            _ => return Err(LaunchError::new(
                ErrorKind::UnsupportedSignature,
                format!(
                    "cannot launch `{name}`: it returns `{}`, which the launcher cannot report",
                    ty_str(f.ret)
                ),
            )
            .with_help(
                "return a uniform scalar, or `void` and write results through a pointer parameter",
            )),
        },
    };
    Ok(KernelSignature {
        name,
        func,
        kind: if f.flags.task {
            EntryKind::Task
        } else {
            EntryKind::Export
        },
        params,
        ret,
    })
}

/// The element of an array of arrays (`float m[4][4]` holds `float`s, row by row);
/// `ty` itself when it is not an array. Nested arrays have no padding, so a buffer of
/// the innermost elements is the array's memory.
fn innermost_element(checked: &Checked, mut ty: TypeId) -> TypeId {
    while let TypeKind::Array(elem, _) = checked.types.kind(ty) {
        ty = elem;
    }
    ty
}

/// Whether a uniform value of `ty` is plain data a host can write as bytes: basic types
/// (not `float16`), enums, and arrays and structs of them, with no pointer (whose size
/// differs between targets) and no varying member.
fn is_plain_data(checked: &Checked, ty: TypeId, depth: u32) -> bool {
    let types = &checked.types;
    if depth > 64 || types.var(ty) == Variability::Varying || is_half(checked, ty) {
        return false;
    }
    match types.kind(ty) {
        TypeKind::Prim(_) | TypeKind::Enum(_) => true,
        TypeKind::Array(elem, Some(_)) => is_plain_data(checked, elem, depth + 1),
        TypeKind::Struct(sid) => types.structs[sid]
            .fields
            .iter()
            .all(|f| is_plain_data(checked, f.ty, depth + 1)),
        _ => false,
    }
}

/// A basic type or enum (an enum is passed as its `int` value).
fn scalar_elem(checked: &Checked, ty: TypeId) -> Option<ElemType> {
    match checked.types.kind(ty) {
        TypeKind::Prim(p) => ElemType::from_prim(p),
        TypeKind::Enum(_) => Some(ElemType::I32),
        _ => None,
    }
}

const HALF_PARAM: &str =
    "the launcher has no `float16` arguments or buffers: take `float` and convert in the kernel";

fn is_half(checked: &Checked, ty: TypeId) -> bool {
    checked.types.kind(ty) == TypeKind::Prim(Prim::Float16)
}

/// The parameter's kind, or why it has none.
fn param_kind(checked: &Checked, ty: TypeId) -> Result<ParamKind, String> {
    let types = &checked.types;
    if types.var(ty) == Variability::Varying {
        return Err("it is varying; entry-point parameters must be uniform (E0402)".into());
    }
    if let Some(t) = scalar_elem(checked, ty) {
        return Ok(ParamKind::Scalar(t));
    }
    if is_half(checked, ty) {
        return Err(HALF_PARAM.into());
    }
    let pointee = match types.kind(ty) {
        TypeKind::Pointer(p) | TypeKind::Array(p, _) => innermost_element(checked, p),
        TypeKind::Struct(_) => {
            return Err("struct parameters are not supported: pass the members as separate parameters, or the data as arrays".into())
        }
        _ => return Err("only basic types, enums and pointers to them can be passed".into()),
    };
    buffer_kind(checked, pointee)
}

/// The kind of a buffer of `pointee`s (an array's innermost element), or why there is
/// none.
fn buffer_kind(checked: &Checked, pointee: TypeId) -> Result<ParamKind, String> {
    let types = &checked.types;
    // A varying basic value is `programCount` elements side by side (lane order), so
    // `varying float data[]` is a buffer of floats, `programCount` per varying element,
    // as ISPC's host passes it. Varying structs and pointers have no such flat form.
    let varying = types.var(pointee) == Variability::Varying;
    if varying && !matches!(types.kind(pointee), TypeKind::Prim(_) | TypeKind::Enum(_)) {
        return Err(
            "it points to varying data other than basic types, which the host cannot lay out"
                .into(),
        );
    }
    let read_only = types.get(pointee).is_const;
    if is_half(checked, pointee) {
        return Err(HALF_PARAM.into());
    }
    match types.kind(pointee) {
        TypeKind::Prim(_) | TypeKind::Enum(_) => {
            let elem = scalar_elem(checked, pointee).unwrap_or(ElemType::I32);
            Ok(ParamKind::Buffer { elem, read_only })
        }
        TypeKind::Void => Err("a `void *` has no element type; declare the pointer with the element type the kernel reads".into()),
        TypeKind::Pointer(_) => Err("buffers of pointers are not supported".into()),
        TypeKind::Struct(sid) if is_plain_data(checked, pointee, 0) => Ok(ParamKind::Records {
            size: types.structs[sid].layout(Variability::Uniform).size,
            read_only,
        }),
        TypeKind::Struct(_) => Err("buffers of structs holding pointers, varying or `float16` members are not supported: the host cannot lay them out".into()),
        _ => Err("the element type is not a basic type".into()),
    }
}
