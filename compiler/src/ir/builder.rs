//! Building functions: an insertion point plus result-type inference.

use smallvec::SmallVec;

use super::entities::{Block, FuncRef, Inst, Value};
use super::function::{result_type, Function};
use super::instructions::{BinaryOp, BlockCall, InstData};
use super::types::Type;
use crate::source::Span;

/// Appends instructions to one block at a time, inferring result types.
pub struct FuncBuilder<'a> {
    pub func: &'a mut Function,
    block: Option<Block>,
    span: Span,
}

impl<'a> FuncBuilder<'a> {
    pub fn new(func: &'a mut Function) -> Self {
        FuncBuilder {
            func,
            block: None,
            span: Span::default(),
        }
    }

    /// Later instructions go to the end of `block`.
    pub fn switch_to(&mut self, block: Block) {
        self.block = Some(block);
    }

    pub fn current_block(&self) -> Option<Block> {
        self.block
    }

    /// The source position recorded for the instructions that follow.
    pub fn set_span(&mut self, span: Span) {
        self.span = span;
    }

    pub fn create_block(&mut self) -> Block {
        self.func.create_block()
    }

    /// Whether the current block already ends in a terminator.
    pub fn is_terminated(&self) -> bool {
        self.block.is_none_or(|b| self.func.terminator(b).is_some())
    }

    /// Appends an instruction whose result type follows from its operands.
    /// Calls must go through [`FuncBuilder::call`], which knows the callee's type.
    pub fn ins(&mut self, data: InstData) -> Option<Value> {
        let func = &*self.func;
        let ty = result_type(&data, |v| func.value_type(v), |_| None)
            .unwrap_or_else(|e| panic!("ill-typed instruction {data:?}: {e}"));
        self.append(data, ty).1
    }

    pub fn call(
        &mut self,
        func: FuncRef,
        ret: Option<Type>,
        args: SmallVec<[Value; 6]>,
        mask: Option<Value>,
    ) -> Option<Value> {
        self.append(InstData::Call { func, args, mask }, ret).1
    }

    fn append(&mut self, data: InstData, ty: Option<Type>) -> (Inst, Option<Value>) {
        let block = self.block.expect("no current block");
        let inst = self.func.append_inst(block, data, ty, self.span);
        (inst, self.func.results[inst])
    }

    pub fn iconst(&mut self, ty: Type, value: i64) -> Value {
        self.value(InstData::Iconst {
            ty,
            bits: value as u64,
        })
    }

    pub fn fconst(&mut self, ty: Type, value: f64) -> Value {
        self.value(InstData::Fconst {
            ty,
            bits: value.to_bits(),
        })
    }

    pub fn binary(&mut self, op: BinaryOp, a: Value, b: Value) -> Value {
        self.value(InstData::Binary { op, args: [a, b] })
    }

    pub fn jump(&mut self, block: Block, args: &[Value]) {
        self.ins(InstData::Jump {
            dest: BlockCall {
                block,
                args: args.into(),
            },
        });
    }

    pub fn brif(
        &mut self,
        cond: Value,
        then_block: Block,
        then_args: &[Value],
        else_block: Block,
        else_args: &[Value],
    ) {
        self.ins(InstData::Brif {
            cond,
            then_dest: BlockCall {
                block: then_block,
                args: then_args.into(),
            },
            else_dest: BlockCall {
                block: else_block,
                args: else_args.into(),
            },
        });
    }

    pub fn ret(&mut self, value: Option<Value>) {
        self.ins(InstData::Return { value });
    }

    /// Appends an instruction that has a result and returns it.
    pub fn value(&mut self, data: InstData) -> Value {
        self.ins(data).expect("instruction has no result")
    }
}

#[cfg(test)]
mod tests {
    use super::super::{write, Linkage, Module, Scalar, Signature, Space, SpecialReg};
    use super::*;

    #[test]
    fn builds_and_prints_a_masked_loop_body() {
        let mut module = Module::new(16, 8);
        let sig = Signature {
            params: vec![Type::I32, Type::PTR],
            ret: None,
            takes_mask: false,
        };
        let mut f = Function::new("fill", Linkage::Export, sig);
        let entry = f.create_block();
        let n = f.append_block_param(entry, Type::I32);
        let buf = f.append_block_param(entry, Type::PTR);
        let mut b = FuncBuilder::new(&mut f);
        b.switch_to(entry);
        let lane = b.value(InstData::Special {
            reg: SpecialReg::LaneIndex,
        });
        let nv = b.value(InstData::Splat { arg: n });
        let mask = b.value(InstData::Icmp {
            cond: super::super::IntCC::Slt,
            args: [lane, nv],
        });
        let four = b.iconst(Type::varying(Scalar::I32), 4);
        let off = b.binary(BinaryOp::Imul, lane, four);
        let off64 = b.value(InstData::Convert {
            op: super::super::ConvOp::Sext,
            arg: off,
            to: Type::varying(Scalar::Ptr),
        });
        let base = b.value(InstData::Splat { arg: buf });
        let addr = b.binary(BinaryOp::Iadd, base, off64);
        b.ins(InstData::Store {
            space: Space::Global,
            addr,
            value: lane,
            mask: Some(mask),
        });
        b.ret(None);
        module.functions.push(f);
        let text = write::module_to_string(&module);
        assert_eq!(
            text,
            "module lanes 16 ptr 8\n\nfunction export @fill(i32, ptr) {\nblock0(v0: i32, v1: ptr):\n    v2 = special lane_index\n    v3 = splat v0\n    v4 = icmp slt v2, v3\n    v5 = iconst.[i32] 4\n    v6 = imul v2, v5\n    v7 = sext.ptr v6\n    v8 = splat v1\n    v9 = iadd v8, v7\n    store global v9, v2 mask v4\n    return\n}\n"
        );
        assert_eq!(
            module.functions.values().next().unwrap().value_type(addr),
            Type::varying(Scalar::Ptr)
        );
    }
}
