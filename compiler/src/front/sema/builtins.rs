//! Built-in values and functions: `programIndex`, `programCount`, `taskIndex`...,
//! `threadIdx.x` and friends, `print` and `barrier`.
//!
//! Built-in values live in the file-scope namespace (so locals may shadow them).
//! Their names are looked up in the interner once: a name the program never wrote needs
//! no binding.

use super::types::{GpuVar, Prim, TypeId, Variability};
use super::{Checker, FileName};
use crate::front::intern::{Interner, Symbol};

/// An axis of a `threadIdx`-style built-in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    X,
    Y,
    Z,
}

/// A built-in value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BuiltinVar {
    /// `programIndex`: varying int, the lane number.
    ProgramIndex,
    /// `programCount`: uniform int constant, the gang width.
    ProgramCount,
    /// `taskIndex`: `const uniform uint32`.
    TaskIndex,
    /// `taskCount`: `const uniform uint32`.
    TaskCount,
    /// `taskIndex0/1/2`.
    TaskIndexDim(u8),
    /// `taskCount0/1/2`.
    TaskCountDim(u8),
    /// A bare `threadIdx`/`blockIdx`/`blockDim`/`gridDim` (only valid before `.x/.y/.z`).
    Gpu(GpuVar),
    /// `threadIdx.x` and friends: recorded on the `Member` expression.
    GpuAxis(GpuVar, Axis),
}

/// A built-in function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BuiltinFn {
    /// `print(format, args...)`: each `%` in the format prints the next argument.
    Print,
    /// `barrier()`: waits for every program instance of the block.
    Barrier,
}

/// Well-known symbols, if the program mentions them.
pub(super) struct Syms {
    pub print: Option<Symbol>,
    pub barrier: Option<Symbol>,
    pub x: Option<Symbol>,
    pub y: Option<Symbol>,
    pub z: Option<Symbol>,
    vars: Vec<(Symbol, BuiltinVar)>,
}

const VAR_NAMES: &[(&str, BuiltinVar)] = &[
    ("programIndex", BuiltinVar::ProgramIndex),
    ("programCount", BuiltinVar::ProgramCount),
    ("taskIndex", BuiltinVar::TaskIndex),
    ("taskCount", BuiltinVar::TaskCount),
    ("taskIndex0", BuiltinVar::TaskIndexDim(0)),
    ("taskIndex1", BuiltinVar::TaskIndexDim(1)),
    ("taskIndex2", BuiltinVar::TaskIndexDim(2)),
    ("taskCount0", BuiltinVar::TaskCountDim(0)),
    ("taskCount1", BuiltinVar::TaskCountDim(1)),
    ("taskCount2", BuiltinVar::TaskCountDim(2)),
    ("threadIdx", BuiltinVar::Gpu(GpuVar::ThreadIdx)),
    ("blockIdx", BuiltinVar::Gpu(GpuVar::BlockIdx)),
    ("blockDim", BuiltinVar::Gpu(GpuVar::BlockDim)),
    ("gridDim", BuiltinVar::Gpu(GpuVar::GridDim)),
];

/// Names offered by "did you mean" besides the program's own.
pub(super) const BUILTIN_NAMES: &[&str] = &[
    "programIndex",
    "programCount",
    "taskIndex",
    "taskCount",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "print",
    "barrier",
];

impl Syms {
    pub fn new(interner: &Interner) -> Self {
        Syms {
            print: interner.get("print"),
            barrier: interner.get("barrier"),
            x: interner.get("x"),
            y: interner.get("y"),
            z: interner.get("z"),
            vars: VAR_NAMES
                .iter()
                .filter_map(|&(n, v)| interner.get(n).map(|s| (s, v)))
                .collect(),
        }
    }

    pub fn axis(&self, field: Symbol) -> Option<Axis> {
        if Some(field) == self.x {
            Some(Axis::X)
        } else if Some(field) == self.y {
            Some(Axis::Y)
        } else if Some(field) == self.z {
            Some(Axis::Z)
        } else {
            None
        }
    }

    pub fn builtin_fn(&self, name: Symbol) -> Option<BuiltinFn> {
        if Some(name) == self.print {
            Some(BuiltinFn::Print)
        } else if Some(name) == self.barrier {
            Some(BuiltinFn::Barrier)
        } else {
            None
        }
    }
}

impl GpuVar {
    /// `threadIdx` differs per program instance; the block and grid values do not.
    pub fn variability(self) -> Variability {
        match self {
            GpuVar::ThreadIdx => Variability::Varying,
            _ => Variability::Uniform,
        }
    }
}

impl Checker<'_> {
    /// Binds every built-in value the program mentions at file scope.
    pub(super) fn declare_builtins(&mut self) {
        for &(sym, var) in &self.syms.vars {
            self.file_names.insert(sym, FileName::Builtin(var));
        }
    }

    /// The type of a built-in value.
    pub(super) fn builtin_var_type(&mut self, v: BuiltinVar) -> TypeId {
        let t = &mut self.out.types;
        match v {
            BuiltinVar::ProgramIndex => t.prim(Prim::Int32, Variability::Varying),
            BuiltinVar::ProgramCount => {
                let u = t.prim(Prim::Int32, Variability::Uniform);
                t.with_const(u, true)
            }
            // `const uniform uint32`, as ISPC declares them.
            BuiltinVar::TaskIndex
            | BuiltinVar::TaskCount
            | BuiltinVar::TaskIndexDim(_)
            | BuiltinVar::TaskCountDim(_) => {
                let u = t.prim(Prim::UInt32, Variability::Uniform);
                t.with_const(u, true)
            }
            BuiltinVar::Gpu(g) => t.dim3(g, g.variability()),
            BuiltinVar::GpuAxis(g, _) => {
                let i = t.prim(Prim::Int32, g.variability());
                t.with_const(i, true)
            }
        }
    }
}

/// Counts the `%` placeholders of a `print` format.
pub(super) fn count_placeholders(format: &str) -> usize {
    format.bytes().filter(|&b| b == b'%').count()
}
