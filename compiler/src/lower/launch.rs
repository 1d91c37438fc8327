//! `launch` and the launchable copies of `task` functions.
//!
//! spmdc runs a launch's tasks at the `launch` statement, one after another in
//! task-index order (dimension 0 fastest), each to completion: one of the schedules
//! ISPC allows (lang-spec/execution-model.md explains why), the same on every target,
//! and `sync` has nothing left to wait for.
//!
//! A task launched from code is not an entry point: its built-ins `taskIndex`... come
//! from the launch, not from the grid. So each launched task gets a *launchable copy*,
//! lowered from the same body as an internal function with six hidden uniform `int`
//! parameters after its own (indices 0..2, then counts 0..2), which the task built-ins
//! read. The task itself stays an entry point with its ABI unchanged. A launch is a
//! uniform loop nest calling the copy with the launcher's mask (ISPC's rule: the task
//! starts with the lanes that were active at the `launch`).
//!
//! A launch through a uniform pointer to a task is the same loop nest; only the call
//! in its body is indirect: a dispatch on the pointer's value over the tasks of its
//! signature whose address the program takes, each candidate's launchable copy called
//! directly, as a call through a function pointer is (see [`super::fn_ptr`]).

use cranelift_entity::EntityRef;
use smallvec::SmallVec;

use super::func::{FnLower, Val};
use super::{CallAbi, ModCx};
use crate::front::ast::{ExprKind, Launch};
use crate::front::sema::{BuiltinVar, FuncId, Res};
use crate::ir::{BinaryOp, FuncRef, IntCC, Type, Value};

/// Indices then counts, dimension 0 first.
const GEOMETRY_PARAMS: usize = 6;

/// The hidden parameters of a launchable copy.
#[derive(Clone, Copy, Debug)]
pub(super) struct TaskGeometry {
    index: [Value; 3],
    count: [Value; 3],
}

impl TaskGeometry {
    /// Takes the hidden parameters off the end of a launchable copy's parameters.
    pub fn split_off(params: &mut Vec<Value>) -> TaskGeometry {
        let hidden = params.split_off(params.len() - GEOMETRY_PARAMS);
        TaskGeometry {
            index: [hidden[0], hidden[1], hidden[2]],
            count: [hidden[3], hidden[4], hidden[5]],
        }
    }
}

/// The IR name of `task`'s launchable copy (`.` keeps it apart from source names).
pub(super) fn launchable_name(task: &str) -> String {
    format!("{task}.launched")
}

impl ModCx<'_> {
    /// The call ABI of `task`'s launchable copy, declared (and queued for lowering)
    /// on first use.
    pub(super) fn launch_abi(&mut self, task: FuncId) -> CallAbi {
        if let Some(abi) = self.launch_abis.get(&task) {
            return abi.clone();
        }
        let mut sig = self.abis[&task].sig.clone();
        sig.params
            .extend(std::iter::repeat_n(Type::I32, GEOMETRY_PARAMS));
        let abi = CallAbi {
            func: FuncRef::new(self.order.len()),
            sig,
            sret: false,
        };
        self.launch_copies.insert(self.order.len());
        self.order.push(task);
        self.launch_abis.insert(task, abi.clone());
        abi
    }
}

impl FnLower<'_, '_> {
    /// A task built-in in a launchable copy: from the hidden parameters.
    pub(super) fn launched_task_builtin(
        &mut self,
        g: TaskGeometry,
        b: BuiltinVar,
    ) -> Option<Value> {
        let [c0, c1, c2] = g.count;
        Some(match b {
            BuiltinVar::TaskIndexDim(d) => g.index[usize::from(d.min(2))],
            BuiltinVar::TaskCountDim(d) => g.count[usize::from(d.min(2))],
            BuiltinVar::TaskIndex => {
                // index0 + count0 * (index1 + count1 * index2), as ISPC defines it.
                let [i0, i1, i2] = g.index;
                let t = self.bin(BinaryOp::Imul, c1, i2);
                let t = self.bin(BinaryOp::Iadd, i1, t);
                let t = self.bin(BinaryOp::Imul, c0, t);
                self.bin(BinaryOp::Iadd, i0, t)
            }
            BuiltinVar::TaskCount => {
                let t = self.bin(BinaryOp::Imul, c0, c1);
                self.bin(BinaryOp::Imul, t, c2)
            }
            _ => return None,
        })
    }

    /// `launch[counts] task(args);` or `launch[counts] p(args);` through a uniform
    /// pointer to a task: the counts, the pointer and the arguments are evaluated once,
    /// then the loop nest runs every task, provided some lane is active and every count
    /// is positive. Through a pointer, each task's call is a dispatch on the pointer's
    /// value over the task functions it may hold (see `fn_ptr::launch_through`).
    pub(super) fn lower_launch(&mut self, l: &Launch) {
        let (res, (callee, args)) = match &l.call.kind {
            ExprKind::Call { args, .. } => (self.cx.checked.res(l.call.id), (None, args)),
            ExprKind::CallPtr { callee, args } => (Res::Error, (Some(&**callee), args)),
            _ => {
                // Sema rejected every other launch (E0516).
                self.unsupported("this `launch`");
                return;
            }
        };
        let counts: SmallVec<[Value; 3]> = (0..3)
            .map(|d| match l.counts.get(d) {
                Some(c) => self.scalar(c),
                None => self.iconst(Type::I32, 1),
            })
            .collect();
        let counts = [counts[0], counts[1], counts[2]];
        let pointer = match (res, callee) {
            (Res::Func(task), _) => {
                let abi = self.cx.launch_abi(task);
                let mut vals: SmallVec<[Value; 6]> = SmallVec::new();
                if !self.call_args(task, args, &abi, &mut vals) {
                    return;
                }
                self.launch_loop(counts, &mut |this, index, mask| {
                    let mut call_vals = this.fresh_aggregate_copies(task, &vals);
                    call_vals.extend(index);
                    call_vals.extend(counts);
                    this.call_inst(
                        abi.func,
                        None,
                        call_vals,
                        abi.sig.takes_mask.then_some(mask),
                    );
                });
                return;
            }
            (Res::Local(_) | Res::Global(_), _) => self.fn_ptr_variable(res),
            (_, Some(callee)) => {
                let fty = self.cx.checked.converted_type(callee.id);
                match self.rvalue(callee) {
                    Val::S(p) => Some((fty, p)),
                    _ => None,
                }
            }
            _ => None,
        };
        let Some((fty, p)) = pointer else {
            // Sema rejected every other callee (E0513).
            self.unsupported("this `launch`");
            return;
        };
        let Some(launch) = self.prepare_launch_through(fty, args) else {
            return;
        };
        self.launch_loop(counts, &mut |this, index, mask| {
            this.launch_through(p, &launch, index, counts, mask);
        });
    }

    /// The loop nest of a launch: `body(index, mask)` runs once per task, in task
    /// order (dimension 0 fastest), with the launcher's mask, if some lane is active
    /// and every count is positive.
    fn launch_loop(
        &mut self,
        counts: [Value; 3],
        body: &mut dyn FnMut(&mut Self, [Value; 3], Value),
    ) {
        let mask = self.cur_mask();
        let mut go = self.any(mask);
        let zero = self.iconst(Type::I32, 0);
        for &c in &counts {
            let positive = self.icmp(IntCC::Sgt, c, zero);
            go = self.and(go, positive);
        }
        let header = self.new_block();
        let index: [Value; 3] = [0, 1, 2].map(|_| self.func.append_block_param(header, Type::I32));
        let body_b = self.new_block();
        let done = self.new_block();
        let start = self.new_block();
        self.brif(go, start, done);
        self.switch_to(start);
        self.jump_args(header, &[zero, zero, zero]);

        self.switch_to(header);
        let more = self.icmp(IntCC::Slt, index[2], counts[2]);
        self.brif(more, body_b, done);

        self.switch_to(body_b);
        body(self, index, mask);
        let next = self.next_task_index(index, counts);
        self.jump_args(header, &next);

        self.switch_to(done);
    }

    /// The arguments of one task: aggregates passed by value get a copy of their own,
    /// so that a task writing its parameter does not change the next task's.
    fn fresh_aggregate_copies(&mut self, task: FuncId, vals: &[Value]) -> SmallVec<[Value; 6]> {
        let params = self.cx.checked.funcs[task].params.clone();
        let mut out: SmallVec<[Value; 6]> = vals.iter().copied().collect();
        for (i, p) in params.iter().enumerate() {
            if p.by_ref || !super::types::is_aggregate(&self.cx.types, p.ty) {
                continue;
            }
            let Some(&shared) = vals.get(i) else { continue };
            let src = super::place::Place {
                addr: shared,
                ty: p.ty,
                space: crate::ir::Space::Generic,
                soa: None,
            };
            let own = self.temp_place(p.ty);
            let all = self.all_on();
            self.copy(own, src, all);
            out[i] = own.addr;
        }
        out
    }

    /// The task index after `index` in dimension-0-fastest order; past the last task
    /// it is `[0, 0, count2]`, which ends the loop.
    fn next_task_index(&mut self, index: [Value; 3], counts: [Value; 3]) -> [Value; 3] {
        let zero = self.iconst(Type::I32, 0);
        let one = self.iconst(Type::I32, 1);
        let mut next = index;
        let mut carry = one;
        for d in 0..3 {
            let bumped = self.bin(BinaryOp::Iadd, index[d], carry);
            if d == 2 {
                next[d] = bumped;
                break;
            }
            let wraps = self.icmp(IntCC::Eq, bumped, counts[d]);
            next[d] = self.select(wraps, zero, bumped);
            carry = self.select(wraps, one, zero);
        }
        next
    }
}
