//! Calls of recursive functions (and of the print runtime's routines): selected once,
//! out of line, in the same kernel.
//!
//! A function in a cycle of the call graph cannot be inlined. Its body is selected
//! once per kernel, after the entry's code, as one more instance with its own frame
//! (its stack slots from offset 0 of its frame, then the slots of what it inlines).
//! A call is plain branching, so the kernel stays one region of code for the register
//! allocator, which sees the call edges (call site to body, return dispatch to each
//! continuation) and keeps everything live across a call out of the callee's
//! registers. Only the callee's own registers can be overwritten, by a nested
//! activation of the same function, so the convention is:
//!
//! * **Caller saves**: at a call site inside a recursive function, the IR values of
//!   that function live after the call (and its return-site register) are stored to
//!   the save area just past the caller's frame (each 32-bit register as 32 lanes of
//!   4 bytes, coalesced; a predicate as a 0/1 word), and loaded back after the call.
//! * **Arguments** are copied into the callee's parameter registers (through
//!   temporaries), the caller's mask too; the **return-site number** goes to the
//!   callee's return-site register; the **result** comes back in the callee's result
//!   register.
//! * **Frames**: the caller adds its frame and save-area bytes to the frame base
//!   before branching and subtracts them after; each gang's stack (in the hidden
//!   `__frames` buffer) holds the entry's frame and [`MAX_DEPTH`] activations of the
//!   largest recursive frame. A call deeper than that traps ("stack overflow").
//! * **Return**: the callee's `return` sets its result register and branches to its
//!   dispatch, which compares the return-site register with each call site's number
//!   (`bra.uni`: it is uniform) and branches to that site's continuation.

use rustc_hash::{FxHashMap, FxHashSet};

use cranelift_entity::EntityRef;

use sim::gpu::{AddrBase, Address, BinOp, Cmp, Guard, LabelId, Op, Reg, Space, Type as T};

use super::{imm, layout, rs, Isel, Loc};
use crate::ir::{Block, FuncRef, Function, Inst, InstData, Module, Value, ValueDef};

/// Activations of recursive functions each gang's stack holds.
pub const MAX_DEPTH: u32 = 256;

/// The functions called out of line: the recursive ones and the print runtime's
/// routines (`__spmdc_rt_print_*`, `__spmdc_rtp_*`), which would otherwise be
/// inlined at every `print`, thousands of instructions each.
pub fn out_of_line_functions(module: &Module) -> FxHashSet<FuncRef> {
    let mut out = recursive_functions(module);
    for (f, func) in module.functions.iter() {
        if func.name.starts_with("__spmdc_rt_print") || func.name.starts_with("__spmdc_rtp_") {
            out.insert(f);
        }
    }
    out
}

/// The functions in a cycle of `module`'s call graph (calling themselves, directly or
/// not).
pub fn recursive_functions(module: &Module) -> FxHashSet<FuncRef> {
    let callees = |f: FuncRef| -> Vec<FuncRef> {
        crate::back::dac_gpu::spaces::live_insts(&module.functions[f])
            .filter_map(|(_, d)| match d {
                InstData::Call { func, .. } => Some(*func),
                _ => None,
            })
            .collect()
    };
    let mut out = FxHashSet::default();
    for (f, _) in module.functions.iter() {
        // f is recursive when it is reachable from its own callees.
        let mut seen = FxHashSet::default();
        let mut todo = callees(f);
        while let Some(g) = todo.pop() {
            if g == f {
                out.insert(f);
                break;
            }
            if seen.insert(g) {
                todo.extend(callees(g));
            }
        }
    }
    out
}

/// One recursive function's out-of-line body.
#[derive(Clone, Debug)]
pub struct OutOfLine {
    instance: u32,
    entry: LabelId,
    dispatch: LabelId,
    /// The return-site number of the running activation.
    ret_site: Reg,
    result: Option<Loc>,
    /// (site number, continuation) of every call.
    sites: Vec<(u32, LabelId)>,
    /// Save-area bytes of its largest call site.
    max_save: u32,
    /// Where an activation keeps the `alloca` top to restore at its return (a
    /// function that allocates).
    alloca_mark: Option<super::AllocaMark>,
}

/// The call state of a kernel's selection.
#[derive(Clone, Debug, Default)]
pub struct Calls {
    ool: FxHashMap<FuncRef, OutOfLine>,
    pending: Vec<FuncRef>,
    /// Frame bytes of each frame root (None: the entry) once selected.
    frames: FxHashMap<Option<FuncRef>, u32>,
    /// Instructions whose immediate is a root's frame bytes plus an extra.
    patches: Vec<(usize, Option<FuncRef>, u32)>,
    next_site: u32,
    /// The module's recursive functions (computed on first need).
    recursive: Option<FxHashSet<FuncRef>>,
    /// The instruction computing the stack limit (its immediate patched).
    limit_patch: Option<usize>,
    /// IR liveness per function: the values live out of each block.
    live_out: FxHashMap<FuncRef, FxHashMap<Block, FxHashSet<Value>>>,
}

impl<'a> Isel<'a> {
    /// A call: inlined, or (to a recursive function) a branch to its body.
    pub(super) fn call(
        &mut self,
        inst: Inst,
        func: FuncRef,
        args: &[Value],
        mask: Option<Value>,
        result: Option<Value>,
    ) {
        if self.ctx.out_of_line.contains(&func) {
            self.call_out_of_line(inst, func, args, mask, result);
        } else {
            self.inline_call(func, args, mask, result);
        }
    }

    /// The out-of-line body of `func`, created (and queued for selection) on first use.
    fn out_of_line(&mut self, func: FuncRef) -> Option<OutOfLine> {
        if let Some(o) = self.calls.ool.get(&func) {
            return Some(o.clone());
        }
        let callee: &'a Function = &self.ctx.module.functions[func];
        let entry = callee.entry_block()?;
        self.instances += 1;
        let instance = self.instances;
        for &p in &callee.blocks[entry].params {
            let l = self.fresh(callee.value_type(p).scalar);
            self.locs.insert((instance, p), l);
        }
        let result = callee.sig.ret.map(|t| self.fresh(t.scalar));
        let o = OutOfLine {
            instance,
            entry: self.new_label(),
            dispatch: self.new_label(),
            ret_site: self.tmp(),
            result,
            sites: Vec::new(),
            max_save: 0,
            alloca_mark: None,
        };
        self.calls.ool.insert(func, o.clone());
        self.calls.pending.push(func);
        Some(o)
    }

    fn call_out_of_line(
        &mut self,
        inst: Inst,
        func: FuncRef,
        args: &[Value],
        mask: Option<Value>,
        result: Option<Value>,
    ) {
        let callee: &'a Function = &self.ctx.module.functions[func];
        let Some(o) = self.out_of_line(func) else {
            self.unsupported("a call of a function without a body");
            return;
        };
        // Caller saves: only a recursive function's own registers can be overwritten.
        let mut saved: Vec<Loc> = Vec::new();
        if self.root.is_some() && self.is_recursive(self.fref) {
            for v in self.live_after(inst) {
                let l = self.loc(v);
                saved.push(l);
            }
            if let Some(me) = self.calls.ool.get(&self.fref) {
                saved.push(Loc::R(me.ret_site));
            }
        }
        let save_bytes: u32 = saved.iter().map(|l| save_size(*l)).sum();
        if let Some(r) = self.root {
            if let Some(me) = self.calls.ool.get_mut(&r) {
                me.max_save = me.max_save.max(save_bytes);
            }
        }
        self.save_restore(&saved, true);
        // Arguments (and mask) into the callee's parameters, through temporaries.
        let mut from: Vec<Loc> = args.iter().map(|&a| self.loc(a)).collect();
        if callee.sig.takes_mask {
            from.push(match mask {
                Some(m) => self.loc(m),
                None => Loc::P(self.exists),
            });
        }
        let params: Vec<Value> = callee
            .entry_block()
            .map(|b| callee.blocks[b].params.to_vec())
            .unwrap_or_default();
        let staged: Vec<(Value, Loc)> = params
            .iter()
            .zip(from)
            .map(|(&p, l)| {
                let t = self.fresh(callee.value_type(p).scalar);
                self.copy(t, l);
                (p, t)
            })
            .collect();
        for (p, t) in staged {
            let to = self.locs[&(o.instance, p)];
            self.copy(to, t);
        }
        self.calls.next_site += 1;
        let site = self.calls.next_site;
        let cont = self.new_label();
        if let Some(x) = self.calls.ool.get_mut(&func) {
            x.sites.push((site, cont));
        }
        self.mov(T::U32, o.ret_site, imm(u64::from(site)));
        self.bump_frame(BinOp::Add, save_bytes);
        self.bra(None, o.entry);
        self.b.bind(cont);
        self.bump_frame(BinOp::Sub, save_bytes);
        self.save_restore(&saved, false);
        if let (Some(r), Some(from)) = (result, o.result) {
            let to = self.loc(r);
            self.copy(to, from);
        }
    }

    /// `frame_base op= frame(root) + extra` (the frame size patched at the end).
    fn bump_frame(&mut self, op: BinOp, extra: u32) {
        let pc = self.lines.len();
        let fb = self.frame_base;
        self.bin(op, T::U64, fb, rs(fb), imm(0));
        self.calls.patches.push((pc, self.root, extra));
    }

    /// Stores (`save`) or loads `locs` to or from the save area past the frame.
    fn save_restore(&mut self, locs: &[Loc], save: bool) {
        if locs.is_empty() {
            return;
        }
        let a = self.tmp64();
        let pc = self.lines.len();
        let fb = self.frame_base;
        self.bin(BinOp::Add, T::U64, a, rs(fb), imm(0));
        self.calls.patches.push((pc, self.root, 0));
        let lane = self.lane_offset;
        self.bin(BinOp::Add, T::U64, a, rs(a), rs(lane));
        let mut off = 0i32;
        for &l in locs {
            let halves: Vec<Reg> = match l {
                Loc::R(r) => vec![r],
                Loc::D(r) => vec![r, Reg::r(r.idx + 1)],
                Loc::P(_) => vec![],
            };
            let at = |o: i32| Address {
                base: AddrBase::RegPair(a),
                offset: o,
            };
            if let Loc::P(p) = l {
                if save {
                    let w = self.pred_to_word(p);
                    self.op(Op::St {
                        space: Space::Global,
                        ty: T::B32,
                        addr: at(off),
                        a: rs(w),
                    });
                } else {
                    let w = self.tmp();
                    self.op(Op::Ld {
                        space: Space::Global,
                        ty: T::B32,
                        dst: w,
                        addr: at(off),
                    });
                    self.setp(Cmp::Ne, T::U32, p, rs(w), imm(0));
                }
                off += 128;
            }
            for h in halves {
                if save {
                    self.op(Op::St {
                        space: Space::Global,
                        ty: T::B32,
                        addr: at(off),
                        a: rs(h),
                    });
                } else {
                    self.op(Op::Ld {
                        space: Space::Global,
                        ty: T::B32,
                        dst: h,
                        addr: at(off),
                    });
                }
                off += 128;
            }
        }
    }

    /// The IR values of the current function live just after `inst` (not its result).
    fn live_after(&mut self, inst: Inst) -> Vec<Value> {
        let f = self.f;
        let fr = self.fref;
        let lo = self.calls.live_out.entry(fr).or_insert_with(|| live_out(f));
        let Some(block) = f
            .layout
            .iter()
            .copied()
            .find(|&b| f.blocks[b].insts.contains(&inst))
        else {
            return Vec::new();
        };
        let mut live = lo.get(&block).cloned().unwrap_or_default();
        for &i in f.blocks[block].insts.iter().rev() {
            if i == inst {
                break;
            }
            step_back(f, i, &mut live);
        }
        if let Some(r) = f.inst_result(inst) {
            live.remove(&r);
        }
        let mut v: Vec<Value> = live.into_iter().collect();
        v.sort_by_key(|x| x.index());
        v
    }

    /// A `return` in an out-of-line body: the result, then the dispatch.
    pub(super) fn return_out_of_line(&mut self, func: FuncRef, value: Option<Value>) {
        let Some(o) = self.calls.ool.get(&func).cloned() else {
            return;
        };
        if let (Some(v), Some(to)) = (value, o.result) {
            let from = self.loc(v);
            self.copy(to, from);
        }
        self.restore_alloca_top(o.alloca_mark);
        self.bra(None, o.dispatch);
    }

    /// Selects the queued out-of-line bodies (which may queue more), then their
    /// dispatches.
    pub(super) fn emit_out_of_line(&mut self) {
        while let Some(func) = self.calls.pending.pop() {
            let o = self.calls.ool[&func].clone();
            let callee: &'a Function = &self.ctx.module.functions[func];
            let (slots, size) = layout(callee.stack_slots.values().map(|s| (s.size, s.align)));
            let saved = (
                self.f,
                self.fref,
                self.instance,
                std::mem::replace(&mut self.slot_offsets, slots),
                self.ret.take(),
                self.span,
                self.frame_end,
                self.root,
            );
            self.f = callee;
            self.fref = func;
            self.instance = o.instance;
            self.frame_end = size;
            self.root = Some(func);
            self.b.bind(o.entry);
            self.stack_check();
            let mark = self.save_alloca_top(callee);
            if let Some(x) = self.calls.ool.get_mut(&func) {
                x.alloca_mark = mark;
            }
            self.body();
            self.calls
                .frames
                .insert(Some(func), self.frame_end.div_ceil(8) * 8);
            (
                self.f,
                self.fref,
                self.instance,
                self.slot_offsets,
                self.ret,
                self.span,
                self.frame_end,
                self.root,
            ) = saved;
        }
        let mut funcs: Vec<FuncRef> = self.calls.ool.keys().copied().collect();
        funcs.sort_by_key(|f| f.index());
        for func in funcs {
            let o = self.calls.ool[&func].clone();
            self.b.bind(o.dispatch);
            let p = self.ptmp();
            for (site, cont) in o.sites {
                self.setp(Cmp::Eq, T::U32, p, rs(o.ret_site), imm(u64::from(site)));
                self.bra(
                    Some(Guard {
                        pred: p.idx,
                        negate: false,
                    }),
                    cont,
                );
            }
            self.op(Op::Exit);
        }
    }

    /// Traps when the frame base has passed the gang's stack.
    fn stack_check(&mut self) {
        let (Some(limit), true) = (self.stack_limit, self.root.is_some()) else {
            return;
        };
        let p = self.ptmp();
        self.setp(Cmp::Gt, T::U64, p, rs(self.frame_base), rs(limit));
        let skip = self.new_label();
        self.bra(
            Some(Guard {
                pred: p.idx,
                negate: true,
            }),
            skip,
        );
        self.trap("stack overflow (recursion too deep)");
        self.b.bind(skip);
    }

    /// Whether `f` is in a call-graph cycle (so its own registers need saving
    /// around its calls).
    fn is_recursive(&mut self, f: FuncRef) -> bool {
        let module = self.ctx.module;
        self.calls
            .recursive
            .get_or_insert_with(|| recursive_functions(module))
            .contains(&f)
    }

    /// In the prologue, when the module has out-of-line functions: each lane's offset
    /// in a save area and the highest frame base an activation may start at.
    pub(super) fn recursion_prologue(&mut self) {
        if self.ctx.out_of_line.is_empty() {
            return;
        }
        let t = self.tmp();
        self.bin(
            BinOp::Mul,
            T::U32,
            t,
            sim::gpu::Src::Special(sim::gpu::Special::LaneId),
            imm(4),
        );
        self.lane_offset = self.tmp64();
        self.cvt(None, T::U64, T::U32, self.lane_offset, rs(t));
        let limit = self.tmp64();
        self.calls.limit_patch = Some(self.lines.len());
        let fb = self.frame_base;
        self.bin(BinOp::Add, T::U64, limit, rs(fb), imm(0));
        self.stack_limit = Some(limit);
    }
}

impl Calls {
    /// The gang stack's stride: the entry's frame and [`MAX_DEPTH`] of the largest
    /// recursive activation (frame and save area). Patches the frame sizes and the
    /// stack limit into `kernel`.
    pub fn finish(&mut self, kernel: &mut sim::gpu::Kernel, entry_frame: u32) -> u32 {
        self.frames.insert(None, entry_frame);
        let mut largest = 0;
        for (f, o) in &self.ool {
            let fr = self.frames.get(&Some(*f)).copied().unwrap_or(0);
            largest = largest.max(fr + o.max_save);
        }
        let largest = largest.div_ceil(8) * 8;
        for &(pc, root, extra) in &self.patches {
            let size = self.frames.get(&root).copied().unwrap_or(0) + extra;
            if let Op::Bin { b, .. } = &mut kernel.insts[pc].op {
                *b = imm(u64::from(size));
            }
        }
        let stride = entry_frame + MAX_DEPTH * largest;
        if let Some(pc) = self.limit_patch {
            if let Op::Bin { b, .. } = &mut kernel.insts[pc].op {
                *b = imm(u64::from(stride - largest));
            }
        }
        stride
    }
}

/// Save-area bytes of one location (32 lanes per 32-bit register).
fn save_size(l: Loc) -> u32 {
    match l {
        Loc::D(_) => 256,
        _ => 128,
    }
}

/// Removes `i`'s result from `live` and adds its operands.
fn step_back(f: &Function, i: Inst, live: &mut FxHashSet<Value>) {
    if let Some(r) = f.inst_result(i) {
        live.remove(&r);
    }
    for v in f.insts[i].operands() {
        live.insert(v);
    }
}

/// The IR values live out of every block of `f` (block parameters are defined at
/// their block's start; branch arguments are uses).
fn live_out(f: &Function) -> FxHashMap<Block, FxHashSet<Value>> {
    let mut live_in: FxHashMap<Block, FxHashSet<Value>> = FxHashMap::default();
    let mut out: FxHashMap<Block, FxHashSet<Value>> = FxHashMap::default();
    loop {
        let mut changed = false;
        for &b in f.layout.iter().rev() {
            let mut lo = FxHashSet::default();
            for s in f.successors(b) {
                if let Some(li) = live_in.get(&s) {
                    lo.extend(li.iter().copied());
                }
            }
            let mut live = lo.clone();
            for &i in f.blocks[b].insts.iter().rev() {
                step_back(f, i, &mut live);
            }
            for p in &f.blocks[b].params {
                live.remove(p);
            }
            // Only values of this function (not constants of others) matter.
            live.retain(|v| matches!(f.values[*v].def, ValueDef::Result(_) | ValueDef::Param(..)));
            out.insert(b, lo);
            if live_in.get(&b) != Some(&live) {
                live_in.insert(b, live);
                changed = true;
            }
        }
        if !changed {
            return out;
        }
    }
}
