//! One function: the SPMD builder state (insertion point, current mask, locals) and the
//! function prologue and epilogue.

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::mask::Flow;
use super::types::{ir_type, is_aggregate};
use super::{ModCx, Storage};
use crate::front::sema::{FuncId, LocalId, TypeId, Types, Variability};
use crate::ir::builder::FuncBuilder;
use crate::ir::{
    self, BinaryOp, Block, ConvOp, InstData, LaneOp, Linkage, Scalar, SpecialReg, StackSlot,
    StackSlotData, Type, UnaryOp, Value,
};
use crate::source::Span;

/// A lowered expression value.
#[derive(Clone, Copy, Debug)]
pub(super) enum Val {
    /// A scalar (basic type, enum or pointer), uniform or varying.
    S(Value),
    /// An aggregate: the object in memory.
    Mem(super::place::Place),
    /// `void`, or an expression that failed to lower (already reported).
    None,
}

/// The state of lowering one function.
pub(super) struct FnLower<'m, 'a> {
    pub cx: &'m mut ModCx<'a>,
    pub func: ir::Function,
    pub block: Block,
    pub span: Span,
    /// The current execution mask; `None` where no lane can be (after `break`,
    /// `continue` or `return` in the same region): statements there are skipped.
    pub mask: Option<Value>,
    /// Lanes that have not returned (only when the function has a nested `return`).
    pub func_live: Option<StackSlot>,
    /// The enclosing breakable/continuable constructs, innermost last.
    pub flows: Vec<Flow>,
    /// Number of enclosing regions entered on a varying condition.
    pub varying_depth: u32,
    /// Bumped by every masked `break`/`continue`/`return`: lets a join skip the reload
    /// of the mask slots when nothing changed them.
    pub epoch: u32,
    pub ret_ty: TypeId,
    /// The function returns a reference: `ret_ty` is a pointer to its object's type.
    pub ret_ref: bool,
    /// Where `return v` stores `v` (scalar returns), or the sret pointer's storage.
    pub ret_slot: Option<StackSlot>,
    pub sret: Option<Value>,
    pub exit_block: Block,
    pub locals: FxHashMap<LocalId, Storage>,
    /// The entry block: values computed once per call (lane offsets) are appended here,
    /// so they dominate the whole body; it jumps to the body's first block at the end.
    pub prologue: Block,
    /// `programIndex * size` as a varying `ptr`, per element size (in the prologue).
    pub lane_offsets: FxHashMap<u32, Value>,
    /// The mask the function was entered with (it dominates the whole body): a label's
    /// mask is recomputed from it.
    pub entry_mask: Value,
    /// The block of each label of the body, created at its first `goto` or definition.
    pub labels: FxHashMap<crate::front::intern::Symbol, Block>,
    /// In the launchable copy of a task: its task indices and counts, hidden
    /// parameters that the task built-ins read (see [`super::launch`]).
    pub task_geometry: Option<super::launch::TaskGeometry>,
}

/// Lowers one defined function, or the launchable copy of a task when `launched`.
pub(super) fn lower_function(cx: &mut ModCx<'_>, id: FuncId, launched: bool) -> ir::Function {
    let info = cx.checked.funcs[id].clone();
    let abi = match launched {
        true => cx.launch_abis[&id].clone(),
        false => cx.abis[&id].clone(),
    };
    // A task with varying parameters is only ever launched from code.
    let host_task = info.flags.task && !info.params.iter().any(|p| cx.types.contains_varying(p.ty));
    let linkage = if launched {
        Linkage::Internal
    } else if host_task {
        Linkage::Task
    } else if info.flags.export {
        Linkage::Export
    } else {
        Linkage::Internal
    };
    let def = cx
        .checked
        .func_def(cx.unit, id)
        .expect("a defined function has its definition");
    let name = match launched {
        true => super::launch::launchable_name(&cx.checked.ir_name(id, cx.interner)),
        false => cx.checked.ir_name(id, cx.interner),
    };
    let mut func = ir::Function::new(&name, linkage, abi.sig.clone());
    let entry = func.create_block();
    let mut params: Vec<Value> = abi
        .sig
        .params
        .iter()
        .map(|&t| func.append_block_param(entry, t))
        .collect();
    let task_geometry = launched.then(|| super::launch::TaskGeometry::split_off(&mut params));
    let entry_mask = abi
        .sig
        .takes_mask
        .then(|| func.append_block_param(entry, Type::MASK));
    let exit_block = func.create_block();
    let body_block = func.create_block();
    // Without a mask parameter the function is entered with every lane on.
    let entry_mask = entry_mask.unwrap_or_else(|| {
        let mut b = FuncBuilder::new(&mut func);
        b.switch_to(body_block);
        b.set_span(def.span);
        b.ins(InstData::Iconst {
            ty: Type::MASK,
            bits: 1,
        })
        .expect("a constant has a result")
    });
    // A function returning a reference returns its object's address.
    let ret_ty = match info.ret_ref {
        true => cx.types.pointer(info.ret, Variability::Uniform, false),
        false => info.ret,
    };
    let mut fl = FnLower {
        cx,
        func,
        block: body_block,
        span: def.span,
        mask: None,
        func_live: None,
        flows: Vec::new(),
        varying_depth: 0,
        epoch: 0,
        ret_ty,
        ret_ref: info.ret_ref,
        ret_slot: None,
        sret: None,
        exit_block,
        locals: FxHashMap::default(),
        prologue: entry,
        lane_offsets: FxHashMap::default(),
        entry_mask,
        labels: FxHashMap::default(),
        task_geometry,
    };
    fl.mask = Some(entry_mask);
    fl.prologue(&info, &params, abi.sret);
    let body = def.body.as_ref().expect("definition has a body");
    if body
        .stmts
        .iter()
        .any(|s| super::mask::has_nested_return(s, true))
    {
        let slot = fl.mask_slot();
        fl.store_mask(slot, entry_mask);
        fl.func_live = Some(slot);
    }
    fl.lower_block(body);
    if !fl.is_terminated() {
        let exit = fl.exit_block;
        fl.jump(exit);
    }
    fl.epilogue();
    fl.block = entry;
    fl.jump(body_block);
    fl.func
}

impl<'m, 'a> FnLower<'m, 'a> {
    /// Gives the parameters their storage and sets up the return slot.
    fn prologue(&mut self, info: &crate::front::sema::FuncInfo, params: &[Value], sret: bool) {
        let mut params = params.iter().copied();
        if sret {
            self.sret = params.next();
        } else if let Some(t) = ir_type(&self.cx.types, self.ret_ty) {
            let size =
                t.scalar.bytes(self.cx.ptr_size()) * if t.varying { self.lanes() } else { 1 };
            self.ret_slot = Some(self.new_slot(size, size.min(64)));
        }
        if info.falls_off_end {
            self.zero_return_value();
        }
        for p in &info.params {
            let Some(v) = params.next() else { break };
            let Some(local) = p.local else { continue };
            if p.by_ref {
                self.bind_reference(local, v);
            } else if is_aggregate(&self.cx.types, p.ty) {
                self.locals.insert(local, Storage::Ptr(v));
            } else {
                let p = self.local_place(local);
                let all = self.all_on();
                self.store_masked(p, super::func::Val::S(v), all);
            }
        }
    }

    /// Zero in the return value, for a function whose end is reachable without a
    /// `return` (W0012): what C leaves undefined returns zero on every target.
    fn zero_return_value(&mut self) {
        let place = match (self.sret, self.ret_slot) {
            (Some(addr), _) => super::place::Place {
                addr,
                ty: self.ret_ty,
                space: ir::Space::Generic,
                soa: None,
            },
            (None, Some(slot)) => self.ret_place(slot),
            (None, None) => return,
        };
        let all = self.all_on();
        self.zero_fill(place, all);
    }

    /// The exit block: returns the value of the return slot.
    fn epilogue(&mut self) {
        self.block = self.exit_block;
        // Move the exit block to the end of the layout.
        self.func.layout.retain(|&b| b != self.exit_block);
        self.func.layout.push(self.exit_block);
        let value = match self.ret_slot {
            Some(slot) if self.sret.is_none() => {
                let p = self.ret_place(slot);
                match self.load(p) {
                    Val::S(v) => Some(v),
                    _ => None,
                }
            }
            _ => None,
        };
        self.ins(InstData::Return { value });
    }

    // ------------------------------------------------------------ building

    pub fn lanes(&self) -> u32 {
        self.cx.lanes()
    }

    pub fn types(&mut self) -> &mut Types {
        &mut self.cx.types
    }

    /// Appends an instruction at the insertion point; its result, if any.
    pub fn ins(&mut self, data: InstData) -> Option<Value> {
        let mut b = FuncBuilder::new(&mut self.func);
        b.switch_to(self.block);
        b.set_span(self.span);
        b.ins(data)
    }

    pub fn val(&mut self, data: InstData) -> Value {
        self.ins(data).expect("instruction has a result")
    }

    pub fn call_inst(
        &mut self,
        func: ir::FuncRef,
        ret: Option<Type>,
        args: SmallVec<[Value; 6]>,
        mask: Option<Value>,
    ) -> Option<Value> {
        let mut b = FuncBuilder::new(&mut self.func);
        b.switch_to(self.block);
        b.set_span(self.span);
        b.call(func, ret, args, mask)
    }

    pub fn ty(&self, v: Value) -> Type {
        self.func.value_type(v)
    }

    pub fn is_terminated(&self) -> bool {
        self.func.terminator(self.block).is_some()
    }

    pub fn new_block(&mut self) -> Block {
        self.func.create_block()
    }

    pub fn switch_to(&mut self, b: Block) {
        self.block = b;
    }

    pub fn jump(&mut self, to: Block) {
        let mut b = FuncBuilder::new(&mut self.func);
        b.switch_to(self.block);
        b.set_span(self.span);
        b.jump(to, &[]);
    }

    pub fn jump_args(&mut self, to: Block, args: &[Value]) {
        let mut b = FuncBuilder::new(&mut self.func);
        b.switch_to(self.block);
        b.set_span(self.span);
        b.jump(to, args);
    }

    pub fn brif(&mut self, c: Value, then_b: Block, else_b: Block) {
        let mut b = FuncBuilder::new(&mut self.func);
        b.switch_to(self.block);
        b.set_span(self.span);
        b.brif(c, then_b, &[], else_b, &[]);
    }

    pub fn iconst(&mut self, ty: Type, v: i64) -> Value {
        let bits = if ty.scalar.bits() < 64 {
            (v as u64) & ((1u64 << ty.scalar.bits()) - 1)
        } else {
            v as u64
        };
        self.val(InstData::Iconst { ty, bits })
    }

    /// The integer type as wide as a pointer on the target: pointer arithmetic wraps at
    /// this width.
    pub fn ptr_int(&self) -> Scalar {
        if self.cx.checked.target.pointer_size == 4 {
            Scalar::I32
        } else {
            Scalar::I64
        }
    }

    /// An integer or `bool` value at pointer width (`signed` says how to widen).
    pub fn to_ptr_int(&mut self, x: Value, signed: bool) -> Value {
        let (from, to) = (self.ty(x).scalar, self.ptr_int());
        if from == to {
            x
        } else if from == Scalar::Bool || (!signed && from.bits() < to.bits()) {
            self.conv(ConvOp::Zext, x, to)
        } else if from.bits() < to.bits() {
            self.conv(ConvOp::Sext, x, to)
        } else {
            self.conv(ConvOp::Ireduce, x, to)
        }
    }

    /// A constant byte offset as a `ptr`.
    pub fn ptr_offset_const(&mut self, bytes: i64) -> Value {
        let i = self.iconst(Type::uniform(self.ptr_int()), bytes);
        self.conv(ConvOp::Bitcast, i, Scalar::Ptr)
    }

    pub fn fconst(&mut self, ty: Type, v: f64) -> Value {
        let v = match ty.scalar {
            Scalar::F32 => v as f32 as f64,
            Scalar::F16 => sim::fp16::f64_from_f16(sim::fp16::f16_from_f64(v)),
            _ => v,
        };
        self.val(InstData::Fconst {
            ty,
            bits: v.to_bits(),
        })
    }

    /// A zero of any scalar IR type.
    pub fn zero(&mut self, ty: Type) -> Value {
        if ty.scalar.is_ieee() {
            self.fconst(ty, 0.0)
        } else {
            self.iconst(ty, 0)
        }
    }

    /// A binary operation. On float16 operands it is ISPC's: computed in f32 and
    /// rounded to float16, which for + - * / is the correctly rounded result.
    pub fn bin(&mut self, op: BinaryOp, a: Value, b: Value) -> Value {
        let (a, b) = self.match_var(a, b);
        if self.ty(a).scalar == Scalar::F16 {
            let (a, b) = (self.widen_half(a), self.widen_half(b));
            let r = self.val(InstData::Binary { op, args: [a, b] });
            return self.conv(ConvOp::Fdemote, r, Scalar::F16);
        }
        self.val(InstData::Binary { op, args: [a, b] })
    }

    /// A unary operation; on float16, computed in f32 and rounded, as [`Self::bin`].
    pub fn un(&mut self, op: UnaryOp, a: Value) -> Value {
        if self.ty(a).scalar == Scalar::F16 {
            let a = self.widen_half(a);
            let r = self.val(InstData::Unary { op, arg: a });
            return self.conv(ConvOp::Fdemote, r, Scalar::F16);
        }
        self.val(InstData::Unary { op, arg: a })
    }

    /// A float16 value as the f32 it equals exactly; other values unchanged.
    pub fn widen_half(&mut self, a: Value) -> Value {
        if self.ty(a).scalar == Scalar::F16 {
            self.conv(ConvOp::Fpromote, a, Scalar::F32)
        } else {
            a
        }
    }

    pub fn conv(&mut self, op: ConvOp, a: Value, to: Scalar) -> Value {
        self.val(InstData::Convert {
            op,
            arg: a,
            to: Type::uniform(to),
        })
    }

    pub fn icmp(&mut self, cond: ir::IntCC, a: Value, b: Value) -> Value {
        let (a, b) = self.match_var(a, b);
        self.val(InstData::Icmp { cond, args: [a, b] })
    }

    pub fn fcmp(&mut self, cond: ir::FloatCC, a: Value, b: Value) -> Value {
        let (a, b) = self.match_var(a, b);
        let (a, b) = (self.widen_half(a), self.widen_half(b));
        self.val(InstData::Fcmp { cond, args: [a, b] })
    }

    pub fn select(&mut self, c: Value, a: Value, b: Value) -> Value {
        let (a, b) = self.match_var(a, b);
        let (a, b) = if self.ty(c).varying && !self.ty(a).varying {
            (self.splat(a), self.splat(b))
        } else {
            (a, b)
        };
        self.val(InstData::Select { args: [c, a, b] })
    }

    pub fn splat(&mut self, v: Value) -> Value {
        if self.ty(v).varying {
            v
        } else {
            self.val(InstData::Splat { arg: v })
        }
    }

    /// Splats the uniform one of two operands if the other is varying.
    pub fn match_var(&mut self, a: Value, b: Value) -> (Value, Value) {
        match (self.ty(a).varying, self.ty(b).varying) {
            (true, false) => (a, self.splat(b)),
            (false, true) => (self.splat(a), b),
            _ => (a, b),
        }
    }

    pub fn special(&mut self, reg: SpecialReg) -> Value {
        self.val(InstData::Special { reg })
    }

    pub fn lane(&mut self, op: LaneOp, args: &[Value]) -> Value {
        self.val(InstData::Lane {
            op,
            args: args.into(),
        })
    }

    /// `any(m)`: some lane of mask `m` is on (uniform `bool`).
    pub fn any(&mut self, m: Value) -> Value {
        self.lane(LaneOp::Any, &[m])
    }

    /// A mask with every lane on.
    pub fn all_on(&mut self) -> Value {
        self.iconst(Type::MASK, 1)
    }

    pub fn all_off(&mut self) -> Value {
        self.iconst(Type::MASK, 0)
    }

    pub fn new_slot(&mut self, size: u32, align: u32) -> StackSlot {
        self.func.stack_slots.push(StackSlotData {
            size: size.max(1),
            align: align.clamp(1, 64),
        })
    }

    pub fn stack_addr(&mut self, slot: StackSlot) -> Value {
        self.val(InstData::StackAddr { slot })
    }

    /// A slot of the object size of `ty`.
    pub fn slot_for(&mut self, ty: TypeId) -> StackSlot {
        let l = self.cx.checked.types.layout(ty, self.cx.checked.target);
        let l = if l.size == 0 {
            self.cx.types.layout(ty, self.cx.checked.target)
        } else {
            l
        };
        self.new_slot(l.size, l.align)
    }

    /// The place holding a reference's address (a uniform pointer in a private slot,
    /// created on first use).
    fn reference_holder(&mut self, local: LocalId) -> super::place::Place {
        let slot = match self.locals.get(&local) {
            Some(Storage::Slot(s)) => *s,
            _ => {
                let size = self.cx.ptr_size();
                let s = self.new_slot(size, size);
                self.locals.insert(local, Storage::Slot(s));
                s
            }
        };
        let target = self.cx.checked.locals[local].ty;
        let ty = self.types().pointer(target, Variability::Uniform, false);
        let addr = self.stack_addr(slot);
        super::place::Place {
            addr,
            ty,
            space: ir::Space::Private,
            soa: None,
        }
    }

    /// Binds reference `local` to the object at `addr`: once, for the whole gang.
    pub fn bind_reference(&mut self, local: LocalId, addr: Value) {
        let holder = self.reference_holder(local);
        let all = self.all_on();
        self.store_masked(holder, Val::S(addr), all);
    }

    /// The object reference `local` refers to.
    pub fn referred_place(&mut self, local: LocalId) -> super::place::Place {
        let holder = self.reference_holder(local);
        let addr = match self.load(holder) {
            Val::S(a) => a,
            _ => self.iconst(Type::PTR, 0),
        };
        super::place::Place {
            addr,
            ty: self.cx.checked.locals[local].ty,
            space: ir::Space::Generic,
            soa: None,
        }
    }

    /// The slot of an automatic local, created on first use.
    pub fn local_slot(&mut self, local: LocalId) -> StackSlot {
        if let Some(Storage::Slot(s)) = self.locals.get(&local) {
            return *s;
        }
        let ty = self.cx.checked.locals[local].ty;
        let s = self.slot_for(ty);
        self.locals.insert(local, Storage::Slot(s));
        s
    }

    /// A load with no conversion of the address.
    pub fn load_raw(
        &mut self,
        ty: Type,
        space: ir::Space,
        addr: Value,
        mask: Option<Value>,
    ) -> Value {
        self.val(InstData::Load {
            ty,
            space,
            addr,
            mask,
        })
    }

    /// A one-`[bool]`-per-lane slot for mask state.
    pub fn mask_slot(&mut self) -> StackSlot {
        let n = self.lanes();
        self.new_slot(n, n.min(64))
    }

    pub fn load_mask(&mut self, slot: StackSlot) -> Value {
        let addr = self.stack_addr(slot);
        let (addr, t) = self.mask_addr(addr);
        self.load_raw(t, ir::Space::Private, addr, None)
    }

    /// Writes every lane of a mask slot (an unmasked store).
    pub fn store_mask(&mut self, slot: StackSlot, m: Value) {
        let addr = self.stack_addr(slot);
        let (addr, _) = self.mask_addr(addr);
        let m = self.splat(m);
        self.ins(InstData::Store {
            space: ir::Space::Private,
            addr,
            value: m,
            mask: None,
        });
    }

    fn mask_addr(&mut self, base: Value) -> (Value, Type) {
        let p = super::place::Place {
            addr: base,
            ty: crate::front::sema::Types::ERROR,
            space: ir::Space::Private,
            soa: None,
        };
        self.lane_addr(p, Type::MASK)
    }

    /// `programIndex * size` as a varying `ptr`, computed once in the prologue.
    pub fn lane_offset(&mut self, size: u32) -> Value {
        if let Some(&v) = self.lane_offsets.get(&size) {
            return v;
        }
        let (saved_block, saved_span) = (self.block, self.span);
        self.block = self.prologue;
        self.span = Span::default();
        let lane = self.special(SpecialReg::LaneIndex);
        let v = self.scaled_index(lane, true, size);
        self.block = saved_block;
        self.span = saved_span;
        self.lane_offsets.insert(size, v);
        v
    }

    /// The return slot as a place of the return type.
    pub fn ret_place(&mut self, slot: StackSlot) -> super::place::Place {
        let addr = self.stack_addr(slot);
        super::place::Place {
            addr,
            ty: self.ret_ty,
            space: ir::Space::Private,
            soa: None,
        }
    }

    /// Stops the launch with `code` when `failed` holds in any lane of the current
    /// mask; inactive lanes are not checked.
    pub fn trap_if_any(&mut self, failed: Value, code: ir::TrapCode) {
        let m = self.cur_mask();
        let failed = self.and(failed, m);
        let any = self.any(failed);
        let (trap, go) = (self.new_block(), self.new_block());
        self.brif(any, trap, go);
        self.switch_to(trap);
        self.ins(InstData::Trap { code });
        self.switch_to(go);
    }

    pub fn and(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::Band, a, b)
    }

    pub fn not(&mut self, a: Value) -> Value {
        self.un(UnaryOp::Bnot, a)
    }

    /// Reports an unsupported construct at the current position.
    pub fn unsupported(&mut self, what: impl Into<String>) {
        let span = self.span;
        self.cx.unsupported(span, what);
    }

    /// A placeholder of the type of `ty` after an error (keeps the IR well-typed).
    pub fn dummy(&mut self, ty: TypeId) -> Val {
        match ir_type(&self.cx.types, ty) {
            Some(t) => Val::S(self.zero(t)),
            None => Val::None,
        }
    }

    /// The current mask; an all-off mask in code no lane reaches (never lowered
    /// normally, but keeps helpers total).
    pub fn cur_mask(&mut self) -> Value {
        match self.mask {
            Some(m) => m,
            None => self.all_off(),
        }
    }
}
