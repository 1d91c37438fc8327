//! Functions and modules: the arenas that hold blocks, instructions and values.

use cranelift_entity::{EntityRef, PrimaryMap, SecondaryMap};
use smallvec::SmallVec;

use super::entities::{Block, FuncRef, GlobalVar, Inst, SharedVar, StackSlot, StrConst, Value};
use super::instructions::{InstData, LaneOp, SpecialReg};
use super::types::{Scalar, Type};
use crate::source::Span;

/// How a function is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Linkage {
    /// Called only from other functions of the module.
    Internal,
    /// An `export` entry point.
    Export,
    /// A `task` entry point.
    Task,
}

impl Linkage {
    pub fn name(self) -> &'static str {
        match self {
            Linkage::Internal => "internal",
            Linkage::Export => "export",
            Linkage::Task => "task",
        }
    }

    pub fn from_name(text: &str) -> Option<Linkage> {
        [Linkage::Internal, Linkage::Export, Linkage::Task]
            .into_iter()
            .find(|l| l.name() == text)
    }

    pub fn is_entry(self) -> bool {
        self != Linkage::Internal
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub params: Vec<Type>,
    pub ret: Option<Type>,
    /// The function runs under its caller's execution mask, received as a hidden last
    /// parameter of type `[bool]` (the entry block's last parameter).
    pub takes_mask: bool,
}

/// Where a value comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueDef {
    Result(Inst),
    Param(Block, u32),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValueData {
    pub ty: Type,
    pub def: ValueDef,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockData {
    pub params: SmallVec<[Value; 4]>,
    /// The block's instructions in order; the last one is its terminator.
    pub insts: Vec<Inst>,
}

/// A private stack slot: `size` bytes per gang, aligned to `align`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackSlotData {
    pub size: u32,
    pub align: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub linkage: Linkage,
    pub sig: Signature,
    pub stack_slots: PrimaryMap<StackSlot, StackSlotData>,
    pub blocks: PrimaryMap<Block, BlockData>,
    /// Block order; the first is the entry block.
    pub layout: Vec<Block>,
    pub insts: PrimaryMap<Inst, InstData>,
    /// The result of each instruction that has one.
    pub results: SecondaryMap<Inst, Option<Value>>,
    pub values: PrimaryMap<Value, ValueData>,
    /// Source position of each instruction (default span where unknown): the line table.
    pub spans: SecondaryMap<Inst, Span>,
    /// Each instruction's number as if the arenas had never been compacted.
    pub inst_ids: InstIds,
}

/// The numbers [`Function::inst_id`] gives instructions: their handles, until
/// `passes::compact` renumbers the arenas; then the handles they would have had
/// without it. What a listing shows of an instruction's identity (a barrier's id)
/// therefore does not depend on when the arenas were compacted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InstIds {
    /// The number of each instruction present at the last compaction, by handle.
    kept: Vec<u32>,
    /// What later handles are offset by: the instructions compaction dropped.
    dropped: u32,
}

impl InstIds {
    /// The numbers after a compaction that kept the instructions `kept` (old handles,
    /// in order) of an arena of `len`.
    pub fn compacted(&self, kept: impl Iterator<Item = Inst>, len: usize) -> InstIds {
        let kept: Vec<u32> = kept.map(|i| self.of(i)).collect();
        let dropped = self.of(Inst::new(len)) - kept.len() as u32;
        InstIds { kept, dropped }
    }

    fn of(&self, inst: Inst) -> u32 {
        match self.kept.get(inst.index()) {
            Some(&n) => n,
            None => inst.index() as u32 + self.dropped,
        }
    }
}

impl Function {
    pub fn new(name: impl Into<String>, linkage: Linkage, sig: Signature) -> Self {
        Function {
            name: name.into(),
            linkage,
            sig,
            stack_slots: PrimaryMap::new(),
            blocks: PrimaryMap::new(),
            layout: Vec::new(),
            insts: PrimaryMap::new(),
            results: SecondaryMap::new(),
            values: PrimaryMap::new(),
            spans: SecondaryMap::new(),
            inst_ids: InstIds::default(),
        }
    }

    /// `inst`'s number as if the arenas had never been compacted ([`InstIds`]).
    pub fn inst_id(&self, inst: Inst) -> u32 {
        self.inst_ids.of(inst)
    }

    pub fn entry_block(&self) -> Option<Block> {
        self.layout.first().copied()
    }

    pub fn value_type(&self, v: Value) -> Type {
        self.values[v].ty
    }

    pub fn inst_result(&self, inst: Inst) -> Option<Value> {
        self.results[inst]
    }

    /// `m` when `v` is `any m`: the test of a region guard, a loop mask or a user's
    /// `any`.
    pub fn any_of(&self, v: Value) -> Option<Value> {
        let ValueDef::Result(i) = self.values[v].def else {
            return None;
        };
        match &self.insts[i] {
            InstData::Lane {
                op: LaneOp::Any,
                args,
            } if args.len() == 1 => Some(args[0]),
            _ => None,
        }
    }

    /// The values `block` defines, in order: its parameters, then its instructions'
    /// results.
    pub fn values_defined_in(&self, block: Block) -> impl Iterator<Item = Value> + '_ {
        let data = &self.blocks[block];
        let results = data.insts.iter().filter_map(|&i| self.results[i]);
        data.params.iter().copied().chain(results)
    }

    /// Appends a new, empty block to the layout.
    pub fn create_block(&mut self) -> Block {
        let b = self.blocks.push(BlockData::default());
        self.layout.push(b);
        b
    }

    pub fn append_block_param(&mut self, block: Block, ty: Type) -> Value {
        let index = self.blocks[block].params.len() as u32;
        let v = self.values.push(ValueData {
            ty,
            def: ValueDef::Param(block, index),
        });
        self.blocks[block].params.push(v);
        v
    }

    /// Appends an instruction to `block`, creating its result with type `result`.
    pub fn append_inst(
        &mut self,
        block: Block,
        data: InstData,
        result: Option<Type>,
        span: Span,
    ) -> Inst {
        let inst = self.insts.push(data);
        self.blocks[block].insts.push(inst);
        self.spans[inst] = span;
        if let Some(ty) = result {
            let v = self.values.push(ValueData {
                ty,
                def: ValueDef::Result(inst),
            });
            self.results[inst] = Some(v);
        }
        inst
    }

    /// The terminator of a block, if it has one.
    pub fn terminator(&self, block: Block) -> Option<Inst> {
        let last = *self.blocks[block].insts.last()?;
        self.insts[last].is_terminator().then_some(last)
    }

    /// Successor blocks of `block`, in branch order.
    pub fn successors(&self, block: Block) -> SmallVec<[Block; 2]> {
        match self.terminator(block) {
            Some(t) => match &self.insts[t] {
                InstData::Jump { dest } => smallvec::smallvec![dest.block],
                InstData::Brif {
                    then_dest,
                    else_dest,
                    ..
                } => smallvec::smallvec![then_dest.block, else_dest.block],
                _ => SmallVec::new(),
            },
            None => SmallVec::new(),
        }
    }
}

/// The result type of an instruction, from its operands' types (`value_ty`) and, for
/// calls, the callee's return type. `Err` names what is inconsistent; the verifier
/// reports it, the builder and the parser refuse to build it.
pub fn result_type(
    data: &InstData,
    value_ty: impl Fn(Value) -> Type,
    callee_ret: impl Fn(FuncRef) -> Option<Type>,
) -> Result<Option<Type>, String> {
    let any_varying = |vals: &[Value]| vals.iter().any(|&v| value_ty(v).varying);
    Ok(match data {
        InstData::Iconst { ty, .. } | InstData::Fconst { ty, .. } => Some(*ty),
        InstData::Unary { arg, .. } => Some(value_ty(*arg)),
        InstData::Binary { args, .. } => {
            let t = value_ty(args[0]);
            Some(Type {
                scalar: t.scalar,
                varying: any_varying(args),
            })
        }
        InstData::Icmp { args, .. } | InstData::Fcmp { args, .. } => Some(Type {
            scalar: Scalar::Bool,
            varying: any_varying(args),
        }),
        InstData::Select { args } => {
            let t = value_ty(args[1]);
            Some(Type {
                scalar: t.scalar,
                varying: any_varying(args),
            })
        }
        InstData::Convert { arg, to, .. } => Some(Type {
            varying: value_ty(*arg).varying,
            ..*to
        }),
        InstData::Splat { arg } => Some(value_ty(*arg).to_varying()),
        InstData::Special { reg } => Some(Type {
            scalar: if *reg == SpecialReg::Clock {
                Scalar::I64
            } else {
                Scalar::I32
            },
            varying: reg.is_varying(),
        }),
        InstData::Lane { op, args } => {
            let first = args
                .first()
                .map(|&v| value_ty(v))
                .ok_or("a lane operation needs an operand")?;
            Some(match op {
                LaneOp::Extract => first.to_uniform(),
                LaneOp::Insert
                | LaneOp::Shuffle
                | LaneOp::Shuffle2
                | LaneOp::Rotate
                | LaneOp::Shift => first.to_varying(),
                LaneOp::ReduceAdd
                | LaneOp::ReduceMin
                | LaneOp::ReduceMax
                | LaneOp::ReduceAnd
                | LaneOp::ReduceOr => first.to_uniform(),
                LaneOp::ReduceEqual | LaneOp::Any | LaneOp::All => Type::BOOL,
                LaneOp::ScanAdd | LaneOp::ScanAnd | LaneOp::ScanOr => first.to_varying(),
                LaneOp::Ballot => Type::I64,
                LaneOp::FirstLane => Type::I32,
            })
        }
        InstData::StackAddr { .. }
        | InstData::GlobalAddr { .. }
        | InstData::SharedAddr { .. }
        | InstData::StackAlloc { .. } => Some(Type::PTR),
        InstData::Load { ty, addr, .. } => Some(Type {
            varying: ty.varying || value_ty(*addr).varying,
            ..*ty
        }),
        InstData::AtomicRmw { addr, value, .. } => Some(Type {
            varying: value_ty(*addr).varying || value_ty(*value).varying,
            ..value_ty(*value)
        }),
        InstData::AtomicCas {
            addr,
            expected,
            replacement,
            ..
        } => {
            let varying = any_varying(&[*addr, *expected, *replacement]);
            Some(Type {
                varying,
                ..value_ty(*expected)
            })
        }
        InstData::Call { func, .. } => callee_ret(*func),
        InstData::Store { .. }
        | InstData::Barrier
        | InstData::Print { .. }
        | InstData::Trap { .. }
        | InstData::Jump { .. }
        | InstData::Brif { .. }
        | InstData::Return { .. } => None,
    })
}

/// A module-level variable in global memory.
#[derive(Clone, Debug, PartialEq)]
pub struct GlobalData {
    pub name: String,
    pub size: u32,
    pub align: u32,
    /// Initial bytes (zero-filled past their end).
    pub init: Vec<u8>,
    /// Pointer-sized words of the initial value that hold another global's address
    /// (`static int *p = &a;`), written when the program is loaded: by then each
    /// global has its place in memory.
    pub relocs: Vec<DataReloc>,
    pub constant: bool,
}

/// In a global's initial value, the pointer-sized word at byte `offset` holds the
/// address of `target` plus `addend` bytes (the initial bytes there are zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataReloc {
    pub offset: u32,
    pub target: GlobalVar,
    pub addend: i64,
}

/// A block-shared variable.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedData {
    pub name: String,
    /// Bytes; 0 for the dynamic array, whose bytes the launch gives.
    pub size: u32,
    pub align: u32,
    /// The unsized `shared` array: the launch's dynamic shared memory (`size` unused).
    /// Back ends place it after the others, so the static offsets do not depend on it.
    pub dynamic: bool,
}

impl SharedData {
    /// Its bytes in a launch with `dynamic_bytes` of dynamic shared memory.
    pub fn bytes(&self, dynamic_bytes: u32) -> u32 {
        if self.dynamic {
            dynamic_bytes
        } else {
            self.size
        }
    }
}

/// A whole program: what the back ends and the interpreter run.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    pub functions: PrimaryMap<FuncRef, Function>,
    pub globals: PrimaryMap<GlobalVar, GlobalData>,
    pub shared: PrimaryMap<SharedVar, SharedData>,
    pub strings: PrimaryMap<StrConst, String>,
    /// The gang width the module was compiled for (`programCount`).
    pub lane_count: u32,
    /// Pointer width in bytes.
    pub ptr_size: u32,
}

impl Module {
    pub fn new(lane_count: u32, ptr_size: u32) -> Self {
        Module {
            lane_count,
            ptr_size,
            ..Module::default()
        }
    }

    /// Which functions some function of the module calls: one sweep of the module,
    /// for the analyses that treat a launched entry (never called) apart, so that a
    /// loop over the functions asks it once instead of once per function.
    pub fn called_functions(&self) -> SecondaryMap<FuncRef, bool> {
        let mut called = SecondaryMap::with_capacity(self.functions.len());
        for f in self.functions.values() {
            for data in f.insts.values() {
                if let InstData::Call { func, .. } = data {
                    called[*func] = true;
                }
            }
        }
        called
    }

    pub fn function_by_name(&self, name: &str) -> Option<FuncRef> {
        self.functions
            .iter()
            .find(|(_, f)| f.name == name)
            .map(|(r, _)| r)
    }
}
