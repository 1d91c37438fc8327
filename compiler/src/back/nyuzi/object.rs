//! Relocatable machine code for one module: what the code generator produces and the
//! image builder places. Code is a list of real Nyuzi instructions ([`sim::nyuzi::Inst`])
//! whose word offsets are relative to the start of the module's code; references to
//! functions, data and runtime routines are [`Reloc`]s the image builder resolves.

use sim::nyuzi::Inst;

use super::abi::RuntimeFn;
use crate::source::Span;

/// What a relocation points at.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RelocTarget {
    /// A function of the module, by its IR name.
    Function(String),
    /// One of [`Object::data`], by index.
    Data(usize),
    Runtime(RuntimeFn),
}

/// How the instruction(s) at a relocation hold the address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelocKind {
    /// A `b label`/`call label` (or `bz`/`bnz`): the offset field gets the target's
    /// word distance from the branch.
    Branch,
    /// `movehi sD, hi ; or sD, sD, lo` at words `at` and `at + 1`: the absolute address
    /// of target + addend. Both instructions are always emitted (even when the `or`
    /// adds 0), so the code size does not depend on where things land.
    AbsHiLo,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reloc {
    /// Word offset of the (first) instruction to patch.
    pub at: u32,
    pub kind: RelocKind,
    pub target: RelocTarget,
    pub addend: i32,
}

/// A function's code: a name and its first word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub offset: u32,
    /// Words of code.
    pub len: u32,
}

/// A module global, constant or string: bytes to place, aligned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataObject {
    pub name: String,
    pub size: u32,
    pub align: u32,
    /// Initial bytes (at most `size`; the rest is zero).
    pub init: Vec<u8>,
    /// Words of the initial value that hold another data object's address.
    pub relocs: Vec<DataRef>,
    pub constant: bool,
}

/// In a data object's initial value, the word at byte `offset` holds the address of
/// [`Object::data`]`[data]` plus `addend`, written when the image is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataRef {
    pub offset: u32,
    pub data: usize,
    pub addend: i32,
}

/// Which source position an instruction came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineEntry {
    /// First word of a run of instructions from `span`.
    pub offset: u32,
    pub span: Span,
}

#[derive(Clone, Debug, Default)]
pub struct Object {
    pub code: Vec<Inst>,
    pub relocs: Vec<Reloc>,
    pub symbols: Vec<Symbol>,
    pub data: Vec<DataObject>,
    /// Byte offset of each IR shared variable within a block's shared memory (in
    /// `SharedVar` order), and the total bytes (64-byte aligned).
    pub shared_offsets: Vec<u32>,
    pub shared_size: u32,
    /// Sorted by offset.
    pub lines: Vec<LineEntry>,
    /// The `break`s of the IR's `trap`s and of an `alloca` the gang's stack cannot
    /// hold, by offset (in words, ascending) with their cause, so a run names the
    /// cause as the interpreter does instead of a generic trap.
    pub traps: Vec<(u32, crate::ir::TrapCode)>,
    /// Spill code register allocation put in the functions (static counts): stores
    /// of spilled values to their stack slots, and reloads.
    pub spill_stores: u32,
    pub spill_loads: u32,
    /// Values register allocation rematerialized instead of spilling them: a
    /// constant, address or context-record load executed again before each read.
    pub rematerialized_values: u32,
    /// Under `--shuffle`: each function's loads served from another register (static
    /// counts, by function name).
    pub shuffles: Vec<(String, crate::analysis::shuffle::ServedCounts)>,
    /// Under `--shuffle auto`: the cost model's choices in each function, as listing
    /// comments (by function name).
    pub shuffle_remarks: Vec<(String, String)>,
}

impl Object {
    pub fn symbol(&self, name: &str) -> Option<&Symbol> {
        self.symbols.iter().find(|s| s.name == name)
    }
}
