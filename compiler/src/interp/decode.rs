//! Decoding: each function's blocks flattened into one array of [`Op`]s with operands
//! resolved to register offsets and lane functions chosen once, so the execution loop
//! does no type dispatch, no map lookups and no allocation per instruction.
//!
//! Decoding also checks what the interpreter relies on (operand counts, types an
//! operation applies to, branch argument counts, existing callees and slots) and
//! reports malformed IR as a [`RuntimeError`] naming the instruction, before anything
//! runs.

use cranelift_entity::EntityRef;

use super::error::RuntimeError;
use super::lanes;
use super::ops::{self, BinFn, DivFn, UnFn};
use crate::ir::{
    Block, BlockCall, FuncRef, Function, InstData, LaneOp, Module, Scalar, Space, SpecialReg,
    StackSlotData, StrConst, TrapCode, Value,
};

/// An operand or result: where its lanes start in the frame's registers (`value index *
/// lane_count`) and whether it has one lane per program instance (a uniform value
/// uses only its first slot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opnd {
    pub off: u32,
    pub var: bool,
}

/// A branch: the target's first op and the parallel copy into its parameters.
#[derive(Clone, Debug)]
pub struct Target {
    pub pc: u32,
    /// `(argument, parameter)` pairs.
    pub moves: Box<[(Opnd, Opnd)]>,
}

/// What an address operand names.
#[derive(Clone, Copy, Debug)]
pub enum AddrOf {
    /// The n-th stack slot of the current frame.
    Stack(u32),
    Global(u32),
    Shared(u32),
}

/// How many lanes an op counts in the `lane_operations` statistic.
#[derive(Clone, Copy, Debug)]
pub enum LaneCount {
    /// A uniform op.
    None,
    /// A varying op without a mask: every existing lane.
    Exists,
    /// The lanes on in this mask operand.
    Mask(Opnd),
}

/// One decoded instruction.
#[derive(Clone, Debug)]
pub enum Op {
    Const {
        dst: Opnd,
        bits: u64,
    },
    Unary {
        f: UnFn,
        a: Opnd,
        dst: Opnd,
    },
    Binary {
        f: BinFn,
        a: Opnd,
        b: Opnd,
        dst: Opnd,
    },
    Divide {
        f: DivFn,
        a: Opnd,
        b: Opnd,
        dst: Opnd,
    },
    Select {
        c: Opnd,
        a: Opnd,
        b: Opnd,
        dst: Opnd,
    },
    Special {
        reg: SpecialReg,
        dst: Opnd,
    },
    Lane {
        op: LaneOp,
        scalar: Scalar,
        args: [Option<Opnd>; 3],
        comb: Option<(BinFn, u64)>,
        dst: Opnd,
    },
    Addr {
        of: AddrOf,
        dst: Opnd,
    },
    /// `stack_alloc`: `size` (masked to its type's width) bytes of the gang's stack.
    StackAlloc {
        size: Opnd,
        size_mask: u64,
        dst: Opnd,
    },
    Load {
        scalar: Scalar,
        size: u32,
        space: Space,
        addr: Opnd,
        mask: Option<Opnd>,
        /// A uniform address of a varying value: lane `i` reads `addr + i * size`.
        dst: Opnd,
    },
    Store {
        size: u32,
        space: Space,
        addr: Opnd,
        value: Opnd,
        mask: Option<Opnd>,
    },
    Atomic {
        f: BinFn,
        scalar: Scalar,
        size: u32,
        space: Space,
        addr: Opnd,
        value: Opnd,
        mask: Option<Opnd>,
        dst: Opnd,
    },
    Cas {
        scalar: Scalar,
        size: u32,
        space: Space,
        addr: Opnd,
        expected: Opnd,
        replacement: Opnd,
        mask: Option<Opnd>,
        dst: Opnd,
    },
    Barrier,
    Call {
        func: FuncRef,
        args: Box<[Opnd]>,
        mask: Option<Opnd>,
        dst: Option<Opnd>,
    },
    Print {
        format: StrConst,
        args: Box<[(Opnd, Scalar)]>,
        mask: Option<Opnd>,
    },
    Trap {
        code: TrapCode,
    },
    Jump {
        dest: Target,
    },
    Brif {
        cond: Opnd,
        then_dest: Target,
        else_dest: Target,
    },
    Return {
        value: Option<Opnd>,
    },
}

/// A decoded function.
#[derive(Clone, Debug)]
pub struct DecodedFunc {
    pub ops: Vec<Op>,
    /// Per op: the IR instruction and its block, for error locations.
    pub origin: Vec<(Block, crate::ir::Inst)>,
    /// Per op: what it adds to `lane_operations`.
    pub lane_counts: Vec<LaneCount>,
    /// Register slots a frame needs (`values * lane_count`).
    pub frame_size: usize,
    /// The entry block's parameters (the hidden mask last, when the function takes one).
    pub params: Vec<Opnd>,
    pub slots: Vec<StackSlotData>,
    /// The function has no body: calling it is an error.
    pub external: bool,
}

/// Decodes every function of `module` (indexed like `module.functions`).
pub fn decode_module(module: &Module) -> Result<Vec<DecodedFunc>, RuntimeError> {
    module
        .functions
        .iter()
        .map(|(_, f)| Decoder::new(module, f).function())
        .collect()
}

struct Decoder<'a> {
    module: &'a Module,
    func: &'a Function,
    lanes: u32,
    /// First op of each block (by block index), `u32::MAX` for blocks not in the layout.
    starts: Vec<u32>,
}

type DecodeResult<T> = Result<T, String>;

impl<'a> Decoder<'a> {
    fn new(module: &'a Module, func: &'a Function) -> Self {
        Decoder {
            module,
            func,
            lanes: module.lane_count,
            starts: Vec::new(),
        }
    }

    fn opnd(&self, v: Value) -> Opnd {
        Opnd {
            off: v.index() as u32 * self.lanes,
            var: self.func.value_type(v).varying,
        }
    }

    fn scalar(&self, v: Value) -> Scalar {
        self.func.value_type(v).scalar
    }

    fn error(&self, at: Option<(Block, crate::ir::Inst)>, msg: String) -> RuntimeError {
        let mut e = RuntimeError::new(format!("malformed IR: {msg}"));
        e.function = Some(self.func.name.clone());
        if let Some((b, i)) = at {
            e.block = Some(b);
            e.inst = Some(i);
            let span = self.func.spans[i];
            e.span = (span != Default::default()).then_some(span);
        }
        e
    }

    fn function(mut self) -> Result<DecodedFunc, RuntimeError> {
        let f = self.func;
        let mut out = DecodedFunc {
            ops: Vec::new(),
            origin: Vec::new(),
            lane_counts: Vec::new(),
            frame_size: f.values.len() * self.lanes as usize,
            params: Vec::new(),
            slots: f.stack_slots.values().copied().collect(),
            external: f.layout.is_empty(),
        };
        let Some(entry) = f.entry_block() else {
            return Ok(out);
        };
        out.params = f.blocks[entry]
            .params
            .iter()
            .map(|&v| self.opnd(v))
            .collect();
        let expected = f.sig.params.len() + usize::from(f.sig.takes_mask);
        if out.params.len() != expected {
            return Err(self.error(
                None,
                format!(
                    "the entry block has {} parameters, the signature {expected}",
                    out.params.len()
                ),
            ));
        }
        self.starts = vec![u32::MAX; f.blocks.len()];
        let mut pc = 0u32;
        for &b in &f.layout {
            self.starts[b.index()] = pc;
            pc += f.blocks[b].insts.len() as u32;
        }
        for &b in &f.layout {
            let insts = &f.blocks[b].insts;
            match insts.last() {
                Some(&last) if f.insts[last].is_terminator() => {}
                last => {
                    let at = last.map(|&i| (b, i));
                    return Err(self.error(at, format!("{b} does not end in a terminator")));
                }
            }
            for &inst in insts {
                let at = Some((b, inst));
                let op = self
                    .inst(&f.insts[inst], f.results[inst])
                    .map_err(|m| self.error(at, m))?;
                let varying = f.results[inst]
                    .into_iter()
                    .chain(f.insts[inst].operands())
                    .any(|v| f.value_type(v).varying);
                out.lane_counts.push(Self::lane_count(&op, varying));
                out.ops.push(op);
                out.origin.push((b, inst));
            }
        }
        Ok(out)
    }

    /// What `op` adds to `lane_operations`; `varying` when its result or an operand is.
    fn lane_count(op: &Op, varying: bool) -> LaneCount {
        let mask = match op {
            Op::Load { mask, .. }
            | Op::Store { mask, .. }
            | Op::Atomic { mask, .. }
            | Op::Cas { mask, .. }
            | Op::Call { mask, .. }
            | Op::Print { mask, .. } => *mask,
            Op::Lane {
                op:
                    LaneOp::ReduceAdd
                    | LaneOp::ReduceMin
                    | LaneOp::ReduceMax
                    | LaneOp::ReduceAnd
                    | LaneOp::ReduceOr
                    | LaneOp::ReduceEqual
                    | LaneOp::ScanAdd
                    | LaneOp::ScanAnd
                    | LaneOp::ScanOr,
                args,
                ..
            } => args[1],
            _ => None,
        };
        match mask {
            Some(m) if m.var => LaneCount::Mask(m),
            Some(_) => LaneCount::Exists,
            None if varying => LaneCount::Exists,
            None => LaneCount::None,
        }
    }

    fn target(&self, call: &BlockCall) -> DecodeResult<Target> {
        let pc = self
            .starts
            .get(call.block.index())
            .copied()
            .filter(|&pc| pc != u32::MAX)
            .ok_or_else(|| format!("branch to {} outside the layout", call.block))?;
        let params = &self.func.blocks[call.block].params;
        if params.len() != call.args.len() {
            return Err(format!(
                "{} takes {} arguments, the branch passes {}",
                call.block,
                params.len(),
                call.args.len()
            ));
        }
        let moves = call
            .args
            .iter()
            .zip(params)
            .map(|(&a, &p)| (self.opnd(a), self.opnd(p)))
            .collect();
        Ok(Target { pc, moves })
    }

    fn mask(&self, m: Option<Value>) -> DecodeResult<Option<Opnd>> {
        match m {
            Some(v) if self.scalar(v) != Scalar::Bool => Err(format!("mask {v} is not a bool")),
            m => Ok(m.map(|v| self.opnd(v))),
        }
    }

    fn size(&self, s: Scalar) -> u32 {
        s.bytes(self.module.ptr_size)
    }

    fn inst(&self, data: &InstData, result: Option<Value>) -> DecodeResult<Op> {
        let dst = || -> DecodeResult<Opnd> {
            result
                .map(|v| self.opnd(v))
                .ok_or_else(|| "instruction without its result".to_string())
        };
        let not_for = |what: &str, s: Scalar| format!("{what} does not apply to {}", s.name());
        Ok(match data {
            InstData::Iconst { ty, .. } | InstData::Fconst { ty, .. } => Op::Const {
                dst: dst()?,
                bits: ops::constant(data).ok_or_else(|| not_for("fconst", ty.scalar))?,
            },
            InstData::Unary { op, arg } => {
                let s = self.scalar(*arg);
                Op::Unary {
                    f: ops::unary(*op, s).ok_or_else(|| not_for(op.name(), s))?,
                    a: self.opnd(*arg),
                    dst: dst()?,
                }
            }
            InstData::Binary { op, args } => {
                let s = self.scalar(args[0]);
                let (a, b) = (self.opnd(args[0]), self.opnd(args[1]));
                if let Some(f) = ops::division(*op, s) {
                    Op::Divide {
                        f,
                        a,
                        b,
                        dst: dst()?,
                    }
                } else {
                    let f = ops::binary(*op, s).ok_or_else(|| not_for(op.name(), s))?;
                    Op::Binary {
                        f,
                        a,
                        b,
                        dst: dst()?,
                    }
                }
            }
            InstData::Icmp { cond, args } => {
                let s = self.scalar(args[0]);
                Op::Binary {
                    f: ops::icmp(*cond, s).ok_or_else(|| not_for("icmp", s))?,
                    a: self.opnd(args[0]),
                    b: self.opnd(args[1]),
                    dst: dst()?,
                }
            }
            InstData::Fcmp { cond, args } => {
                let s = self.scalar(args[0]);
                Op::Binary {
                    f: ops::fcmp(*cond, s).ok_or_else(|| not_for("fcmp", s))?,
                    a: self.opnd(args[0]),
                    b: self.opnd(args[1]),
                    dst: dst()?,
                }
            }
            InstData::Select { args } => Op::Select {
                c: self.opnd(args[0]),
                a: self.opnd(args[1]),
                b: self.opnd(args[2]),
                dst: dst()?,
            },
            InstData::Convert { op, arg, to } => {
                let from = self.scalar(*arg);
                Op::Unary {
                    f: ops::convert(*op, from, to.scalar).ok_or_else(|| {
                        format!("{} from {} to {}", op.name(), from.name(), to.scalar.name())
                    })?,
                    a: self.opnd(*arg),
                    dst: dst()?,
                }
            }
            InstData::Splat { arg } => Op::Unary {
                f: ops::copy,
                a: self.opnd(*arg),
                dst: dst()?,
            },
            InstData::Special { reg } => Op::Special {
                reg: *reg,
                dst: dst()?,
            },
            InstData::Lane { op, args } => self.lane(*op, args, dst()?)?,
            InstData::StackAddr { slot } => {
                if self.func.stack_slots.get(*slot).is_none() {
                    return Err(format!("no stack slot {slot}"));
                }
                Op::Addr {
                    of: AddrOf::Stack(slot.as_u32()),
                    dst: dst()?,
                }
            }
            InstData::StackAlloc { size } => Op::StackAlloc {
                size: self.opnd(*size),
                size_mask: match self.scalar(*size) {
                    Scalar::I32 => u64::from(u32::MAX),
                    _ => u64::MAX,
                },
                dst: dst()?,
            },
            InstData::GlobalAddr { global } => {
                if self.module.globals.get(*global).is_none() {
                    return Err(format!("no global {global}"));
                }
                Op::Addr {
                    of: AddrOf::Global(global.as_u32()),
                    dst: dst()?,
                }
            }
            InstData::SharedAddr { shared } => {
                if self.module.shared.get(*shared).is_none() {
                    return Err(format!("no shared variable {shared}"));
                }
                Op::Addr {
                    of: AddrOf::Shared(shared.as_u32()),
                    dst: dst()?,
                }
            }
            InstData::Load {
                ty,
                space,
                addr,
                mask,
            } => {
                let a = self.opnd(*addr);
                if ty.varying && !a.var {
                    return Err("a varying load needs a varying address".to_string());
                }
                Op::Load {
                    scalar: ty.scalar,
                    size: self.size(ty.scalar),
                    space: *space,
                    addr: a,
                    mask: self.mask(*mask)?,
                    dst: dst()?,
                }
            }
            InstData::Store {
                space,
                addr,
                value,
                mask,
            } => {
                let (a, v) = (self.opnd(*addr), self.opnd(*value));
                if v.var && !a.var {
                    return Err("a varying store needs a varying address".to_string());
                }
                Op::Store {
                    size: self.size(self.scalar(*value)),
                    space: *space,
                    addr: a,
                    value: v,
                    mask: self.mask(*mask)?,
                }
            }
            InstData::AtomicRmw {
                op,
                space,
                addr,
                value,
                mask,
            } => {
                let s = self.scalar(*value);
                Op::Atomic {
                    f: ops::atomic(*op, s)
                        .ok_or_else(|| not_for(&format!("atomic {}", op.name()), s))?,
                    scalar: s,
                    size: self.size(s),
                    space: *space,
                    addr: self.opnd(*addr),
                    value: self.opnd(*value),
                    mask: self.mask(*mask)?,
                    dst: dst()?,
                }
            }
            InstData::AtomicCas {
                space,
                addr,
                expected,
                replacement,
                mask,
            } => {
                let s = self.scalar(*expected);
                Op::Cas {
                    scalar: s,
                    size: self.size(s),
                    space: *space,
                    addr: self.opnd(*addr),
                    expected: self.opnd(*expected),
                    replacement: self.opnd(*replacement),
                    mask: self.mask(*mask)?,
                    dst: dst()?,
                }
            }
            InstData::Barrier => Op::Barrier,
            InstData::Call { func, args, mask } => {
                let callee = self
                    .module
                    .functions
                    .get(*func)
                    .ok_or_else(|| format!("no function {func}"))?;
                if callee.sig.params.len() != args.len() {
                    return Err(format!(
                        "@{} takes {} arguments, the call passes {}",
                        callee.name,
                        callee.sig.params.len(),
                        args.len()
                    ));
                }
                if callee.sig.ret.is_some() != result.is_some() {
                    return Err(format!("the call's result does not match @{}", callee.name));
                }
                Op::Call {
                    func: *func,
                    args: args.iter().map(|&a| self.opnd(a)).collect(),
                    mask: self.mask(*mask)?,
                    dst: result.map(|v| self.opnd(v)),
                }
            }
            InstData::Print { format, args, mask } => {
                if self.module.strings.get(*format).is_none() {
                    return Err(format!("no string {format}"));
                }
                Op::Print {
                    format: *format,
                    args: args
                        .iter()
                        .map(|&a| (self.opnd(a), self.scalar(a)))
                        .collect(),
                    mask: self.mask(*mask)?,
                }
            }
            InstData::Trap { code } => Op::Trap { code: *code },
            InstData::Jump { dest } => Op::Jump {
                dest: self.target(dest)?,
            },
            InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                let c = self.opnd(*cond);
                if c.var {
                    return Err("brif on a varying condition".into());
                }
                Op::Brif {
                    cond: c,
                    then_dest: self.target(then_dest)?,
                    else_dest: self.target(else_dest)?,
                }
            }
            InstData::Return { value } => {
                if value.is_some() != self.func.sig.ret.is_some() {
                    return Err("return does not match the signature".into());
                }
                Op::Return {
                    value: value.map(|v| self.opnd(v)),
                }
            }
        })
    }

    fn lane(&self, op: LaneOp, args: &[Value], dst: Opnd) -> DecodeResult<Op> {
        if args.len() != lanes::arity(op) {
            return Err(format!(
                "{} takes {} operands, not {}",
                op.name(),
                lanes::arity(op),
                args.len()
            ));
        }
        let scalar = self.scalar(args[0]);
        let comb = lanes::combiner(op, scalar);
        let needs_comb = matches!(
            op,
            LaneOp::ReduceAdd
                | LaneOp::ReduceMin
                | LaneOp::ReduceMax
                | LaneOp::ReduceAnd
                | LaneOp::ReduceOr
                | LaneOp::ScanAdd
                | LaneOp::ScanAnd
                | LaneOp::ScanOr
        );
        if needs_comb && comb.is_none() {
            return Err(format!("{} does not apply to {}", op.name(), scalar.name()));
        }
        let mut ops = [None; 3];
        for (slot, &a) in ops.iter_mut().zip(args) {
            *slot = Some(self.opnd(a));
        }
        Ok(Op::Lane {
            op,
            scalar,
            args: ops,
            comb,
            dst,
        })
    }
}
