//! Calls through function pointers, lowered to direct calls.
//!
//! The whole program is known when it is compiled, so a function pointer needs no code
//! address: its value is the number sema gave the function when the program took its
//! address ([`Checked::fn_ptr_targets`]; 1, 2, ...; 0 is `NULL`), an `int32` uniform or
//! varying like any other. A call through a pointer of signature `S` can only reach the
//! functions of signature `S` whose address is taken somewhere (sema converts a function
//! only to a pointer of its exact signature), so it becomes a dispatch over those
//! candidates, each reached by an ordinary direct call:
//!
//! - **uniform pointer**: a chain of uniform branches, `p == 1 ? f1(...) : p == 2 ?
//!   f2(...) : ...`, all lanes of the current mask calling the one function;
//! - **varying pointer**: for each candidate `k`, the lanes holding it, `mask & (p ==
//!   k)`; each candidate held by some lane is called once under exactly those lanes (a
//!   candidate no lane holds is skipped by a uniform branch), and the results are
//!   merged lane by lane. This is ISPC's rule: every distinct target is called once,
//!   with the mask of the program instances that hold it.
//!
//! A standard-library function without a body (`min`, `sqrt`: expanded at each call)
//! is a candidate too: the dispatch expands it in place, under the candidate's mask,
//! as a direct call would.
//!
//! An active lane whose pointer is `NULL` (or matches no candidate: an uninitialized
//! pointer) stops the launch with a `null_fn_ptr` trap, before any candidate runs.
//!
//! Why not indirect calls in the IR: both simulated machines and the interpreter would
//! need an indirect call, the inliner and every interprocedural pass a call graph with
//! unknown edges, and a varying pointer a loop over unique values in each back end. The
//! dispatch needs none of that: the back ends, passes and simulators see only direct
//! calls, the inliner may inline a candidate into the dispatch like any callee, and a
//! function whose address is taken stays alive as long as some dispatch calls it. The
//! code is linear in the number of candidates (one compare, one mask and one guarded
//! call each), and candidates are only the address-taken functions of the one
//! signature, usually two or three.
//!
//! A `launch` through a uniform pointer to a `task` is the launch's loop nest (see
//! [`super::launch`]) with this uniform dispatch as the call in its body: each
//! candidate is a task of the pointer's signature, reached through its launchable copy.
//!
//! [`Checked::fn_ptr_targets`]: crate::front::sema::Checked::fn_ptr_targets

use smallvec::SmallVec;

use super::func::{FnLower, Val};
use super::place::Place;
use super::types::{ir_type, is_aggregate};
use super::ModCx;
use crate::front::ast::Expr;
use crate::front::sema::{FuncId, SigId, TypeId};
use crate::ir::{self, InstData, IntCC, Scalar, Type, Value};

/// The IR type of a function pointer value.
pub(super) const FN_PTR: Scalar = Scalar::I32;

impl ModCx<'_> {
    /// The functions a pointer of signature `sig` may hold, with their values, each
    /// declared for lowering (a stdlib function with a body on first use). Computed for
    /// every signature at once, the first time a call through a pointer is lowered.
    fn fn_ptr_candidates(&mut self, sig: SigId) -> Vec<(u32, FuncId)> {
        if self.fn_ptr_candidates.is_none() {
            let mut by_sig: rustc_hash::FxHashMap<SigId, Vec<(u32, FuncId)>> = Default::default();
            for (i, &(f, s)) in self.checked.fn_ptr_targets().iter().enumerate() {
                by_sig.entry(s).or_default().push((i as u32 + 1, f));
            }
            self.fn_ptr_candidates = Some(by_sig);
        }
        let cands = self
            .fn_ptr_candidates
            .as_ref()
            .and_then(|m| m.get(&sig))
            .cloned()
            .unwrap_or_default();
        // A function without a body (only a prototype) was reported by sema (E0211).
        cands
            .into_iter()
            .filter(|&(_, f)| {
                self.abis.contains_key(&f) || self.declare_stdlib_body(f) || self.is_builtin(f)
            })
            .collect()
    }

    /// A stdlib function without a body: expanded where it is called.
    fn is_builtin(&self, f: FuncId) -> bool {
        let info = &self.checked.funcs[f];
        info.from_stdlib && info.def_item.is_none()
    }
}

/// One argument of a call through a pointer, evaluated once for every candidate.
#[derive(Clone, Copy)]
enum Arg {
    Value(Value),
    /// A struct passed by value: each candidate gets a pointer to a copy of its own
    /// (a callee may modify its parameter).
    Copy(Place),
}

/// Where a dispatch's result goes: the call's type `ty`, as a scalar of IR type
/// `scalar`, or into the aggregate `mem`.
#[derive(Clone, Copy)]
struct Out {
    ty: TypeId,
    scalar: Option<Type>,
    mem: Option<Place>,
}

/// A call through a pointer: the functions it may reach (with their values), the
/// arguments, where the result goes.
struct Dispatch {
    cands: Vec<(u32, FuncId)>,
    args: Args,
    out: Out,
}

/// A launch through a pointer: the tasks it may start (with their values) and the
/// arguments, evaluated once for every task.
pub(super) struct LaunchThrough {
    cands: Vec<(u32, FuncId)>,
    args: Args,
}

struct Args {
    vals: SmallVec<[Arg; 6]>,
    /// The parameter types of the signature (what the arguments were converted to).
    tys: SmallVec<[TypeId; 6]>,
}

impl FnLower<'_, '_> {
    /// `p(args)` where `p` is the value of a function pointer of type `fty` and the call
    /// has type `ty`.
    pub fn call_through(&mut self, p: Value, fty: TypeId, args: &[Expr], ty: TypeId) -> Val {
        let Some(sig) = self.cx.types.fn_ptr_sig(fty) else {
            self.unsupported("a call through a value that is not a function pointer");
            return self.dummy(ty);
        };
        let Some(args) = self.ptr_call_args(sig, args) else {
            return self.dummy(ty);
        };
        let cands = self.cx.fn_ptr_candidates(sig);
        let out = Out {
            ty,
            scalar: self.result_type(ty),
            mem: is_aggregate(&self.cx.types, ty).then(|| self.temp_place(ty)),
        };
        let d = Dispatch { cands, args, out };
        if self.ty(p).varying {
            self.varying_dispatch(p, &d)
        } else {
            self.uniform_dispatch(p, &d)
        }
    }

    fn ptr_call_args(&mut self, sig: SigId, args: &[Expr]) -> Option<Args> {
        let params = self.cx.types.sig_data(sig).params.clone();
        let mut vals = SmallVec::new();
        for (a, &(_, by_ref)) in args.iter().zip(&params) {
            if by_ref {
                let addr = self.reference_addr(a);
                vals.push(Arg::Value(addr));
                continue;
            }
            match self.rvalue(a) {
                Val::S(v) => vals.push(Arg::Value(v)),
                Val::Mem(p) => {
                    let at = self.cx.checked.converted_type(a.id);
                    vals.push(Arg::Copy(Place { ty: at, ..p }));
                }
                Val::None => return None,
            }
        }
        let tys = params.iter().map(|&(t, _)| t).collect();
        Some(Args { vals, tys })
    }

    /// Calls candidate `f` under `mask` (the current mask for a uniform pointer): its
    /// result as a value of the call's type `ty`, or written to `into` for aggregates.
    fn call_candidate(
        &mut self,
        f: FuncId,
        args: &Args,
        mask: Value,
        ty: TypeId,
        into: Option<Place>,
    ) -> Option<Value> {
        if self.cx.is_builtin(f) {
            return self.expand_builtin(f, args);
        }
        let abi = self.cx.abis[&f].clone();
        let ret_place = abi.sret.then(|| self.temp_place(ty));
        let vals = match ret_place {
            Some(p) => {
                let mut vals: SmallVec<[Value; 6]> = SmallVec::from_elem(p.addr, 1);
                vals.extend(self.candidate_args(args, &abi));
                vals
            }
            None => self.candidate_args(args, &abi),
        };
        let m = abi.sig.takes_mask.then_some(mask);
        let r = self.call_inst(abi.func, abi.sig.ret, vals, m);
        if let (Some(dst), Some(src)) = (into, ret_place) {
            self.copy(dst, src, mask);
        }
        r
    }

    /// The arguments of one call of a candidate of ABI `abi`: a struct passed by value
    /// is copied for it, a uniform value passed to a varying parameter broadcast.
    fn candidate_args(&mut self, args: &Args, abi: &super::CallAbi) -> SmallVec<[Value; 6]> {
        let skip = usize::from(abi.sret);
        let mut vals: SmallVec<[Value; 6]> = SmallVec::new();
        for (i, &a) in args.vals.iter().enumerate() {
            let mut v = match a {
                Arg::Value(v) => v,
                Arg::Copy(src) => {
                    let tmp = self.temp_place(src.ty);
                    let all = self.all_on();
                    self.copy(tmp, src, all);
                    tmp.addr
                }
            };
            if let Some(pt) = abi.sig.params.get(i + skip) {
                if pt.varying && !self.func.value_type(v).varying {
                    v = self.val(InstData::Splat { arg: v });
                }
            }
            vals.push(v);
        }
        vals
    }

    /// A stdlib function without a body, expanded under the current mask.
    fn expand_builtin(&mut self, f: FuncId, args: &Args) -> Option<Value> {
        let info = &self.cx.checked.funcs[f];
        let (name, ret) = (self.cx.name(info.name), info.ret);
        let vals: SmallVec<[Value; 6]> = args
            .vals
            .iter()
            .map(|a| match *a {
                Arg::Value(v) => v,
                Arg::Copy(p) => p.addr,
            })
            .collect();
        match self.stdlib_apply(name, &vals, &args.tys, ret) {
            Val::S(v) => Some(v),
            _ => None,
        }
    }

    /// A chain of uniform branches on the pointer's value.
    fn uniform_dispatch(&mut self, p: Value, d: &Dispatch) -> Val {
        let (cands, args, out) = (&d.cands, &d.args, d.out);
        let join = self.new_block();
        let param = out.scalar.map(|t| self.func.append_block_param(join, t));
        let m = self.cur_mask();
        if self.epoch > 0 {
            // After a masked `break`/`continue`/`return` the mask may be empty: then
            // nothing is called (a recursive call would never end).
            let any = self.any(m);
            let (go, skip) = (self.new_block(), self.new_block());
            self.brif(any, go, skip);
            self.switch_to(skip);
            let res: SmallVec<[Value; 1]> = out.scalar.map(|t| self.zero(t)).into_iter().collect();
            self.jump_args(join, &res);
            self.switch_to(go);
        }
        for &(value, f) in cands {
            let k = self.iconst(Type::uniform(FN_PTR), i64::from(value));
            let hit = self.icmp(IntCC::Eq, p, k);
            let (call_b, next) = (self.new_block(), self.new_block());
            self.brif(hit, call_b, next);
            self.switch_to(call_b);
            let r = self.call_candidate(f, args, m, out.ty, out.mem);
            let res: SmallVec<[Value; 1]> = match (out.scalar, r) {
                (Some(t), Some(r)) => SmallVec::from_elem(self.fit(r, t), 1),
                (Some(t), None) => SmallVec::from_elem(self.zero(t), 1),
                _ => SmallVec::new(),
            };
            self.jump_args(join, &res);
            self.switch_to(next);
        }
        // No candidate holds the value: `NULL`, a trap if any lane is running.
        let any = self.any(m);
        let (trap, none) = (self.new_block(), self.new_block());
        self.brif(any, trap, none);
        self.switch_to(trap);
        self.ins(InstData::Trap {
            code: ir::TrapCode::NullFnPtr,
        });
        self.switch_to(none);
        let res: SmallVec<[Value; 1]> = out.scalar.map(|t| self.zero(t)).into_iter().collect();
        self.jump_args(join, &res);
        self.switch_to(join);
        self.dispatch_result(param, out.mem)
    }

    /// Each candidate called once under the lanes holding it.
    fn varying_dispatch(&mut self, p: Value, d: &Dispatch) -> Val {
        let (cands, args, out) = (&d.cands, &d.args, d.out);
        let m = self.cur_mask();
        // The lanes of each candidate, and the active lanes no candidate holds.
        let mut covered = self.all_off();
        let mut masks: SmallVec<[Value; 4]> = SmallVec::new();
        for &(value, _) in cands {
            let k = self.iconst(Type::uniform(FN_PTR), i64::from(value));
            let hit = self.icmp(IntCC::Eq, p, k);
            let mk = self.and(m, hit);
            covered = self.bin(ir::BinaryOp::Bor, covered, mk);
            masks.push(mk);
        }
        let null = self.not(covered);
        self.trap_if_any(null, ir::TrapCode::NullFnPtr);
        let mut result = out.scalar.map(|t| self.zero(t));
        for (&(_, f), &mk) in cands.iter().zip(&masks) {
            let (call_b, join) = (self.new_block(), self.new_block());
            let param = out.scalar.map(|t| self.func.append_block_param(join, t));
            let any = self.any(mk);
            let mut b = crate::ir::builder::FuncBuilder::new(&mut self.func);
            b.switch_to(self.block);
            b.set_span(self.span);
            let skip: SmallVec<[Value; 1]> = result.into_iter().collect();
            b.brif(any, call_b, &[], join, &skip);
            self.switch_to(call_b);
            let saved = self.mask;
            self.mask = Some(mk);
            let r = self.call_candidate(f, args, mk, out.ty, out.mem);
            self.mask = saved;
            let res: SmallVec<[Value; 1]> = match (out.scalar, r, result) {
                (Some(t), Some(r), Some(prev)) => {
                    let r = self.fit(r, t);
                    SmallVec::from_elem(self.select(mk, r, prev), 1)
                }
                (Some(_), None, Some(prev)) => SmallVec::from_elem(prev, 1),
                _ => SmallVec::new(),
            };
            self.jump_args(join, &res);
            self.switch_to(join);
            result = param;
        }
        self.dispatch_result(result, out.mem)
    }

    /// The tasks a launch through a pointer of type `fty` may start, and its
    /// arguments, evaluated once before the launch's loop nest.
    pub(super) fn prepare_launch_through(
        &mut self,
        fty: TypeId,
        args: &[Expr],
    ) -> Option<LaunchThrough> {
        let Some(sig) = self.cx.types.fn_ptr_sig(fty) else {
            self.unsupported("a launch through a value that is not a function pointer");
            return None;
        };
        let mut args = self.ptr_call_args(sig, args)?;
        // A struct passed by value is the launch's value: copied now, so that a task
        // writing the original (a global, say) does not change the next task's.
        for a in &mut args.vals {
            if let Arg::Copy(src) = *a {
                let tmp = self.temp_place(src.ty);
                let all = self.all_on();
                self.copy(tmp, src, all);
                *a = Arg::Copy(tmp);
            }
        }
        let cands = self.cx.fn_ptr_candidates(sig);
        Some(LaunchThrough { cands, args })
    }

    /// One task of a launch through the uniform pointer `p`: a chain of uniform
    /// branches on its value, each calling one candidate task's launchable copy with
    /// the task's `index` and the launch's `counts` under `mask` (the launcher's). A
    /// value no candidate holds (`NULL`) stops the launch with a `null_fn_ptr` trap:
    /// the loop runs its body only when some lane is active.
    pub(super) fn launch_through(
        &mut self,
        p: Value,
        l: &LaunchThrough,
        index: [Value; 3],
        counts: [Value; 3],
        mask: Value,
    ) {
        let join = self.new_block();
        for &(value, f) in &l.cands {
            let k = self.iconst(Type::uniform(FN_PTR), i64::from(value));
            let hit = self.icmp(IntCC::Eq, p, k);
            let (call_b, next) = (self.new_block(), self.new_block());
            self.brif(hit, call_b, next);
            self.switch_to(call_b);
            let abi = self.cx.launch_abi(f);
            // Each task gets its own copy of a struct passed by value.
            let mut vals = self.candidate_args(&l.args, &abi);
            vals.extend(index);
            vals.extend(counts);
            self.call_inst(abi.func, None, vals, abi.sig.takes_mask.then_some(mask));
            self.jump_args(join, &[]);
            self.switch_to(next);
        }
        self.ins(InstData::Trap {
            code: ir::TrapCode::NullFnPtr,
        });
        self.switch_to(join);
    }

    /// The IR type of a scalar call result (None for `void` and aggregates).
    fn result_type(&self, ty: TypeId) -> Option<Type> {
        if is_aggregate(&self.cx.types, ty) {
            return None;
        }
        ir_type(&self.cx.types, ty)
    }

    /// A candidate's result in the dispatch's type (a uniform result of a call through
    /// a varying pointer is broadcast).
    fn fit(&mut self, v: Value, t: Type) -> Value {
        if t.varying {
            self.splat(v)
        } else {
            v
        }
    }

    fn dispatch_result(&mut self, scalar: Option<Value>, into: Option<Place>) -> Val {
        match (scalar, into) {
            (_, Some(p)) => Val::Mem(p),
            (Some(v), None) => Val::S(v),
            (None, None) => Val::None,
        }
    }
}
