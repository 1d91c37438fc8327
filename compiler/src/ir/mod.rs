//! The SSA intermediate representation.
//!
//! A [`Module`] holds functions, globals, block-shared variables and string constants in
//! cranelift-entity arenas addressed by typed handles. A [`Function`] is a control-flow
//! graph of blocks with parameters (instead of phi nodes), each a list of instructions
//! ending in a terminator. Values are typed by an element type and a variability
//! (uniform or varying); the execution mask is an ordinary varying `bool` value that
//! masked operations take as an operand.
//!
//! Analyses keep their results in side tables (`SecondaryMap`s keyed by these handles),
//! never in the IR. The IR knows nothing of the AST: source positions arrive as spans in
//! [`Function::spans`], the line table.

pub mod builder;
pub mod dominance;
pub mod entities;
pub mod function;
pub mod instructions;
pub mod parse;
pub mod types;
pub mod verify;
pub mod write;

pub use entities::{Block, FuncRef, GlobalVar, Inst, SharedVar, StackSlot, StrConst, Value};
pub use function::{
    result_type, BlockData, DataReloc, Function, GlobalData, Linkage, Module, SharedData,
    Signature, StackSlotData, ValueData, ValueDef,
};
pub use instructions::{
    float_sum_distances, AtomicOp, BinaryOp, BlockCall, ConvOp, FloatCC, InstData, IntCC, LaneOp,
    SpecialReg, TrapCode, UnaryOp, STACK_ALLOC_ALIGN,
};
pub use parse::{parse_module, IrError};
pub use types::{Scalar, Space, Type};
pub use verify::{verify_function, verify_module, VerifierError};
