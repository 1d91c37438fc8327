//! Legalization: rewrites the IR operations a target cannot do natively into calls of
//! runtime routines (or short native sequences), before instruction selection.
//!
//! The runtime routines are written in the language (`stdlib/runtime_*.spmd`, part of
//! the standard library's source); their names start with [`RUNTIME_PREFIX`]. They
//! are lowered, optimized and legalized once per process and target
//! ([`crate::driver::runtime`]) and linked into each module a back end compiles
//! ([`link_runtime`], from [`crate::driver::lower_for_target`]). For Nyuzi, the split
//! between native and legalized operations is the contract in the helpers' notes
//! (`nyuzi_ops.md`): the predicates here ([`is_illegal`]) encode it, and
//! [`remaining_illegal`] lists whatever is left, for the tests and for instruction
//! selection's diagnostics.
//!
//! An illegal instruction `vN = op args` becomes `vM = call @__spmdc_rt_NAME(args')`
//! (plus, where needed, conversions before and after: narrow integers are widened to
//! 32 bits, floats moved between lanes as their bits), and every use of `vN` is
//! replaced by the last value of that sequence. Routines take their operands with the
//! variability of their parameters (a uniform operand is splatted for a varying
//! parameter) and the instruction's mask as their call mask where they are masked
//! (the all-on mask where the instruction has none). Routines are themselves legalized
//! (a routine may use an operation another routine implements, never its own), and the
//! routines no function reaches are removed at the end.
//!
//! Each family of operations has its own module: [`int`] (division, 64-bit arithmetic,
//! bit counts), [`lanes`] (cross-lane movement, reductions and scans), [`atomics`] and
//! [`float`] (owned by the floating-point runtime), and for both targets [`half`]
//! (binary16 conversions; [`half::retype`] then makes every `f16` an `i16` once the
//! function is legalized). A family module provides
//! `is_illegal(func, data)` and `rewrite(cursor, data)`. [`print`](mod@print) is the exception:
//! it rewrites whole functions before the others, since it needs the module's strings.

pub mod atomics;
pub mod float;
pub mod half;
pub mod int;
pub mod lanes;
pub mod print;

#[cfg(test)]
mod tests;

use cranelift_entity::{EntityRef, PrimaryMap};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::ir::{
    result_type, ConvOp, FuncRef, Function, Inst, InstData, Module, Scalar, StrConst, Type, Value,
    ValueDef,
};
use crate::source::Span;

/// The targets legalization knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LegalTarget {
    Nyuzi,
    /// The dac-gpu SIMT back end: only what its ISA lacks (`frem`, binary16
    /// conversions) becomes a routine call (which that back end inlines).
    DacGpu,
}

/// The name prefix of every runtime routine: legalization calls `RUNTIME_PREFIX + name`.
pub const RUNTIME_PREFIX: &str = "__spmdc_rt_";

/// Whether `name` is a runtime routine's or a runtime helper's (`__spmdc_rtf_*` and
/// the like: helpers are lowered because routines call them, and removed with them).
pub fn is_runtime(name: &str) -> bool {
    name.starts_with("__spmdc_rt")
}

/// Whether instruction `data` of `func` needs legalization for `target`.
pub fn is_illegal(target: LegalTarget, func: &Function, data: &InstData) -> bool {
    match target {
        LegalTarget::DacGpu => {
            matches!(
                data,
                InstData::Binary {
                    op: crate::ir::BinaryOp::Frem,
                    ..
                }
            ) || half::is_illegal(func, data)
        }
        LegalTarget::Nyuzi => {
            int::is_illegal(func, data)
                || lanes::is_illegal(func, data)
                || atomics::is_illegal(func, data)
                || float::is_illegal(func, data)
                || print::is_illegal(data)
        }
    }
}

/// Every instruction of `module` that still needs legalization for Nyuzi, as
/// `@function: instruction` lines (empty when the module is legal).
pub fn remaining_illegal(module: &Module) -> Vec<String> {
    let mut out = Vec::new();
    for (_, func) in module.functions.iter() {
        for &b in &func.layout {
            for &inst in &func.blocks[b].insts {
                let data = &func.insts[inst];
                if is_illegal(LegalTarget::Nyuzi, func, data) {
                    out.push(format!("@{}: {}", func.name, describe(func, inst)));
                }
            }
        }
    }
    out
}

/// A short text of one instruction for messages: opcode, operand types.
fn describe(func: &Function, inst: Inst) -> String {
    let data = &func.insts[inst];
    let tys: Vec<String> = data
        .operands()
        .iter()
        .map(|&v| func.value_type(v).to_string())
        .collect();
    let head = format!("{data:?}");
    let head = head.split([' ', '{']).next().unwrap_or("?").to_string();
    let op = match data {
        InstData::Unary { op, .. } => op.name().to_string(),
        InstData::Binary { op, .. } => op.name().to_string(),
        InstData::Fcmp { cond, .. } => format!("fcmp {}", cond.name()),
        InstData::Convert { op, to, .. } => format!("{}.{}", op.name(), to),
        InstData::Lane { op, .. } => op.name().to_string(),
        InstData::AtomicRmw { op, .. } => format!("atomic_rmw {}", op.name()),
        InstData::AtomicCas { .. } => "atomic_cas".to_string(),
        _ => head,
    };
    format!("{op} ({})", tys.join(", "))
}

/// An insertion point just before the instruction being legalized: the rewrite
/// functions build their replacement sequence through it.
pub struct Cursor<'f> {
    pub func: &'f mut Function,
    /// The instruction being legalized.
    pub inst: Inst,
    /// The block's new instruction list, being built: what the rewrite inserts goes
    /// at its end, before the instruction being legalized (rebuilding the list keeps
    /// a long block linear, where inserting into it would be quadratic).
    out: &'f mut Vec<Inst>,
    span: Span,
    /// Runtime routines by name.
    routines: &'f RoutineTable<'f>,
    /// The module's pointer size in bytes.
    pub ptr_size: u32,
    /// The module's gang width (`special lane_count`).
    pub lane_count: u32,
}

/// What a call of a routine needs to know about its callee.
#[derive(Clone, Debug, PartialEq)]
pub struct RoutineSig {
    pub params: Vec<Type>,
    pub ret: Option<Type>,
    pub takes_mask: bool,
}

impl Cursor<'_> {
    pub fn ty(&self, v: Value) -> Type {
        self.func.value_type(v)
    }

    /// [`const_int`], also knowing `special lane_count` (a constant of the module).
    pub fn const_int(&self, v: Value) -> Option<u64> {
        if let ValueDef::Result(i) = self.func.values[v].def {
            if let InstData::Special {
                reg: crate::ir::SpecialReg::LaneCount,
            } = self.func.insts[i]
            {
                return Some(u64::from(self.lane_count));
            }
            if let InstData::Splat { arg } = self.func.insts[i] {
                return self.const_int(arg);
            }
        }
        const_int(self.func, v)
    }

    /// Inserts a non-call instruction before the one being legalized; its result.
    pub fn ins(&mut self, data: InstData) -> Result<Value, String> {
        let func = &*self.func;
        let ty = result_type(&data, |v| func.value_type(v), |_| None)?
            .ok_or_else(|| format!("legalize: {data:?} has no result"))?;
        Ok(self.insert(data, ty))
    }

    /// Inserts `data`, whose result has type `ty`, before the instruction being
    /// legalized.
    fn insert(&mut self, data: InstData, ty: Type) -> Value {
        let inst = self.func.insts.push(data);
        self.func.spans[inst] = self.span;
        self.out.push(inst);
        let v = self.func.values.push(crate::ir::ValueData {
            ty,
            def: ValueDef::Result(inst),
        });
        self.func.results[inst] = Some(v);
        v
    }

    pub fn iconst(&mut self, ty: Type, bits: u64) -> Value {
        let mask = if ty.scalar.bits() >= 64 {
            !0
        } else {
            (1u64 << ty.scalar.bits()) - 1
        };
        self.insert(
            InstData::Iconst {
                ty,
                bits: bits & mask,
            },
            ty,
        )
    }

    pub fn conv(&mut self, op: ConvOp, arg: Value, to: Scalar) -> Result<Value, String> {
        if self.ty(arg).scalar == to {
            return Ok(arg);
        }
        self.ins(InstData::Convert {
            op,
            arg,
            to: Type::uniform(to),
        })
    }

    /// `arg` as a varying value (splatted when uniform).
    pub fn varying(&mut self, arg: Value) -> Result<Value, String> {
        if self.ty(arg).varying {
            return Ok(arg);
        }
        self.ins(InstData::Splat { arg })
    }

    /// The all-on mask.
    pub fn all_on(&mut self) -> Value {
        self.iconst(Type::varying(Scalar::Bool), 1)
    }

    /// Calls routine `RUNTIME_PREFIX + name` with `args` (each splatted to a varying
    /// parameter when uniform) and, when the routine is masked, `mask` (all-on when
    /// `None`). Its result.
    pub fn call(
        &mut self,
        name: &str,
        args: &[Value],
        mask: Option<Value>,
    ) -> Result<Value, String> {
        let full = format!("{RUNTIME_PREFIX}{name}");
        let (func, sig) = self.routines.get(&full)?.ok_or_else(|| {
            format!("the runtime routine @{full} is missing from the module (it was not lowered)")
        })?;
        if sig.params.len() != args.len() {
            return Err(format!(
                "@{full} takes {} arguments, legalization passes {}",
                sig.params.len(),
                args.len()
            ));
        }
        let mut vals: SmallVec<[Value; 6]> = SmallVec::new();
        for (&a, &p) in args.iter().zip(&sig.params) {
            let a = if p.varying { self.varying(a)? } else { a };
            if self.ty(a) != p {
                return Err(format!(
                    "@{full} takes {p}, legalization passes {}",
                    self.ty(a)
                ));
            }
            vals.push(a);
        }
        let mask = match (sig.takes_mask, mask) {
            (false, _) => None,
            (true, Some(m)) => Some(m),
            (true, None) => Some(self.all_on()),
        };
        let ret = sig.ret.ok_or_else(|| format!("@{full} returns nothing"))?;
        Ok(self.insert(
            InstData::Call {
                func,
                args: vals,
                mask,
            },
            ret,
        ))
    }
}

/// Legalizes every function of `module` for `target` (runtime routines included),
/// then removes the routines nothing calls. `Err` describes an internal error (a
/// routine missing or of the wrong type); the module is then partly rewritten.
pub fn legalize(module: &mut Module, target: LegalTarget) -> Result<(), String> {
    legalize_functions(module, target)?;
    remove_unused_runtime(module);
    remove_unused_runtime_globals(module);
    Ok(())
}

/// Inlines the calls [`legalize`] made to routines short enough for a copy to cost
/// less than the call ([`super::inline::run_runtime`] with
/// [`super::inline::Options::runtime`]): legalization runs after the pipeline's
/// inliner, so without this an IEEE `min` in a loop stays a call per iteration, with
/// its argument moves, the registers saved around it, and none of its work visible to
/// the uniformity analysis in context. The copies are then cleaned up (block merging,
/// constant folding, value numbering, dead code) and the module legalized again, which
/// removes the routines no call reaches any more (and finds nothing else to rewrite:
/// the clean-up makes no new operations). The number of calls inlined.
pub fn inline_routines(module: &mut Module, target: LegalTarget) -> Result<usize, String> {
    use super::{const_fold, dce, gvn, Pass, Pipeline};
    let inlined = super::inline::run_runtime(module, &super::inline::Options::runtime());
    if inlined == 0 {
        return Ok(0);
    }
    let pass = |name, run| Pass { name, run };
    let cleanup = Pipeline {
        passes: vec![
            pass("merge_blocks", super::merge_blocks),
            pass("trivial_params", super::trivial_params),
            pass("const_fold", const_fold::run_module),
            pass("dce", dce::run_module),
            pass("gvn", gvn::run_module),
            pass("dce", dce::run_module),
        ],
        verify: false,
    };
    cleanup.run(module)?;
    legalize(module, target)?;
    Ok(inlined)
}

/// [`legalize`] without removing anything: for the runtime module itself, which is
/// legalized once and then linked into programs.
pub fn legalize_functions(module: &mut Module, target: LegalTarget) -> Result<(), String> {
    let routines = routine_table(module);
    legalize_functions_with(module, target, &routines)
}

/// The runtime routines legalization may call: those of the module, by name, and
/// (for [`routines_needed`]) those of a runtime it may link, looked up only when a
/// call is made, numbered as if they followed the module's functions.
pub struct RoutineTable<'a> {
    own: FxHashMap<String, (FuncRef, RoutineSig)>,
    linkable: Option<(&'a dyn LinkableRoutines, usize)>,
}

impl RoutineTable<'_> {
    /// The callee and signature of routine `name`; `Err` when its signature cannot
    /// be read.
    fn get(&self, name: &str) -> Result<Option<(FuncRef, RoutineSig)>, String> {
        if let Some(found) = self.own.get(name) {
            return Ok(Some(found.clone()));
        }
        let Some((linkable, base)) = self.linkable else {
            return Ok(None);
        };
        match linkable.index_of(name) {
            Some(i) => Ok(Some((FuncRef::new(base + i), linkable.signature(i)?))),
            None => Ok(None),
        }
    }
}

/// The routines a runtime offers, by index (in its order) and name. Their signatures
/// are read on demand: a prebuilt runtime holds hundreds, a program calls a few.
pub trait LinkableRoutines: Sync {
    fn count(&self) -> usize;
    fn name(&self, index: usize) -> &str;
    fn index_of(&self, name: &str) -> Option<usize>;
    fn signature(&self, index: usize) -> Result<RoutineSig, String>;
}

/// Routines whose signatures are all known already (a library lowered in the
/// process).
pub struct RoutineList<'a>(pub &'a [(String, RoutineSig)]);

impl LinkableRoutines for RoutineList<'_> {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn name(&self, index: usize) -> &str {
        &self.0[index].0
    }
    fn index_of(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|(n, _)| n == name)
    }
    fn signature(&self, index: usize) -> Result<RoutineSig, String> {
        Ok(self.0[index].1.clone())
    }
}

/// The runtime routines present in `module`.
fn routine_table(module: &Module) -> RoutineTable<'static> {
    let own = module
        .functions
        .iter()
        .filter(|(_, f)| is_runtime(&f.name))
        .map(|(r, f)| {
            let sig = RoutineSig {
                params: f.sig.params.clone(),
                ret: f.sig.ret,
                takes_mask: f.sig.takes_mask,
            };
            (f.name.clone(), (r, sig))
        })
        .collect();
    RoutineTable {
        own,
        linkable: None,
    }
}

fn legalize_functions_with(
    module: &mut Module,
    target: LegalTarget,
    routines: &RoutineTable,
) -> Result<(), String> {
    let (ptr_size, lane_count) = (module.ptr_size, module.lane_count);
    for (_, func) in module.functions.iter_mut() {
        legalize_one(
            func,
            &module.strings,
            target,
            routines,
            ptr_size,
            lane_count,
        )?;
    }
    Ok(())
}

/// Legalizes one function of a module whose strings are `strings`.
fn legalize_one(
    func: &mut Function,
    strings: &PrimaryMap<StrConst, String>,
    target: LegalTarget,
    routines: &RoutineTable,
    ptr_size: u32,
    lane_count: u32,
) -> Result<(), String> {
    print::legalize_prints(func, strings, routines, ptr_size, lane_count)
        .map_err(|e| format!("legalizing @{}: {e}", func.name))?;
    legalize_function(func, target, routines, ptr_size, lane_count)
        .map_err(|e| format!("legalizing @{}: {e}", func.name))?;
    half::retype(func);
    Ok(())
}

/// Whether legalizing `module` for `target` may call a runtime routine: it holds a
/// `print` or an instruction the target lacks ([`is_illegal`]). When not, no routine
/// needs to be known (a quick test before [`routines_needed`]).
pub fn may_need_routines(module: &Module, target: LegalTarget) -> bool {
    module
        .functions
        .values()
        .any(|f| function_may_need_routines(f, target))
}

/// [`may_need_routines`] for one function.
fn function_may_need_routines(f: &Function, target: LegalTarget) -> bool {
    f.layout.iter().any(|&b| {
        f.blocks[b].insts.iter().any(|&i| {
            let data = &f.insts[i];
            matches!(data, InstData::Print { .. }) || is_illegal(target, f, data)
        })
    })
}

/// The runtime routines legalizing `module` for `target` calls that the module does
/// not hold, by name, in the order of `known` (every routine that exists, with its
/// signature): what must be linked in before [`legalize`]. Legalizes a copy of each
/// function that may call one ([`may_need_routines`]; legalizing the others changes
/// nothing), calling the routines `module` lacks as if they followed its functions.
pub fn routines_needed(
    module: &Module,
    target: LegalTarget,
    known: &dyn LinkableRoutines,
) -> Result<Vec<String>, String> {
    let base = module.functions.len();
    let table = RoutineTable {
        linkable: Some((known, base)),
        ..routine_table(module)
    };
    let (ptr_size, lane_count) = (module.ptr_size, module.lane_count);
    let mut called = vec![false; known.count()];
    for f in module.functions.values() {
        if !function_may_need_routines(f, target) {
            continue;
        }
        let mut copy = f.clone();
        legalize_one(
            &mut copy,
            &module.strings,
            target,
            &table,
            ptr_size,
            lane_count,
        )?;
        for &b in &copy.layout {
            for &inst in &copy.blocks[b].insts {
                if let InstData::Call { func, .. } = copy.insts[inst] {
                    if let Some(c) = func.index().checked_sub(base) {
                        called[c] = true;
                    }
                }
            }
        }
    }
    Ok(called
        .iter()
        .enumerate()
        .filter(|(_, &c)| c)
        .map(|(i, _)| known.name(i).to_string())
        .collect())
}

/// Drops the runtime's globals (the atomics' lock word) when no function uses them.
/// They were appended last ([`link_runtime`]), so nothing else is renumbered.
fn remove_unused_runtime_globals(module: &mut Module) {
    let first = module
        .globals
        .iter()
        .find(|(_, g)| is_runtime(&g.name))
        .map(|(r, _)| r.index());
    let Some(first) = first else { return };
    if !module
        .globals
        .values()
        .skip(first)
        .all(|g| is_runtime(&g.name))
    {
        return;
    }
    let used = module.functions.values().any(|f| {
        f.layout.iter().any(|&b| {
            f.blocks[b].insts.iter().any(|&i| {
                matches!(f.insts[i], InstData::GlobalAddr { global } if global.index() >= first)
            })
        })
    });
    if !used {
        let kept: Vec<_> = module.globals.values().take(first).cloned().collect();
        module.globals.clear();
        for g in kept {
            module.globals.push(g);
        }
    }
}

fn legalize_function(
    func: &mut Function,
    target: LegalTarget,
    routines: &RoutineTable,
    ptr_size: u32,
    lane_count: u32,
) -> Result<(), String> {
    let mut subst: FxHashMap<Value, Value> = FxHashMap::default();
    let layout = func.layout.clone();
    for block in layout {
        let old = std::mem::take(&mut func.blocks[block].insts);
        let mut out = Vec::with_capacity(old.len());
        for inst in old {
            let data = func.insts[inst].clone();
            if !is_illegal(target, func, &data) {
                out.push(inst);
                continue;
            }
            let old = func.results[inst];
            let mut cur = Cursor {
                span: func.spans[inst],
                func: &mut *func,
                inst,
                out: &mut out,
                routines,
                ptr_size,
                lane_count,
            };
            match rewrite(&mut cur, &data)? {
                Rewritten::Value(new) => {
                    let old =
                        old.ok_or("legalize: a value rewrite of an instruction without result")?;
                    if func.value_type(new) != func.value_type(old) {
                        return Err(format!(
                            "the replacement of {} is {}, not {}",
                            describe(func, inst),
                            func.value_type(new),
                            func.value_type(old)
                        ));
                    }
                    subst.insert(old, new);
                }
                Rewritten::InPlace | Rewritten::Unchanged => out.push(inst),
            }
        }
        func.blocks[block].insts = out;
    }
    substitute(func, &subst);
    Ok(())
}

/// Replaces every use of a key of `subst` by its value (followed to the end of a
/// chain).
fn substitute(func: &mut Function, subst: &FxHashMap<Value, Value>) {
    if subst.is_empty() {
        return;
    }
    let resolve = |mut v: Value| {
        while let Some(&n) = subst.get(&v) {
            v = n;
        }
        v
    };
    for &b in &func.layout {
        for &inst in &func.blocks[b].insts {
            func.insts[inst].map_operands(resolve);
        }
    }
}

/// What a rewrite did.
pub enum Rewritten {
    /// The instruction's result is now this value; the instruction goes away.
    Value(Value),
    /// The instruction was changed where it stands (e.g. a shift count made constant).
    InPlace,
    /// No rewrite is known (yet): the instruction stays, and [`remaining_illegal`]
    /// reports it.
    Unchanged,
}

fn rewrite(cur: &mut Cursor, data: &InstData) -> Result<Rewritten, String> {
    // `half` before `float`, which would take an `f16` conversion for an f32/f64 one.
    for f in [
        half::rewrite,
        int::rewrite,
        lanes::rewrite,
        atomics::rewrite,
        float::rewrite,
    ] {
        match f(cur, data)? {
            Rewritten::Unchanged => continue,
            done => return Ok(done),
        }
    }
    Ok(Rewritten::Unchanged)
}

/// Appends the functions and globals of `runtime` (the runtime routines lowered from
/// a program with nothing but the standard library) to `module`, renumbering their
/// references. Stdlib functions the routines call get a runtime name
/// (`__spmdc_rt.NAME`), so they cannot clash with the program's and go away with the
/// routines when unused.
pub fn link_runtime(module: &mut Module, runtime: &Module) {
    let fbase = module.functions.len();
    let gbase = module.globals.len();
    for g in runtime.globals.values() {
        module.globals.push(g.clone());
    }
    for f in runtime.functions.values() {
        let mut f = f.clone();
        if !is_runtime(&f.name) {
            f.name = format!("__spmdc_rt.{}", f.name);
        }
        for data in f.insts.values_mut() {
            match data {
                InstData::Call { func, .. } => *func = FuncRef::new(fbase + func.index()),
                InstData::GlobalAddr { global } => {
                    *global = crate::ir::GlobalVar::new(gbase + global.index())
                }
                _ => {}
            }
        }
        module.functions.push(f);
    }
}

/// Removes the runtime routines no other function reaches, renumbering the calls.
fn remove_unused_runtime(module: &mut Module) {
    let n = module.functions.len();
    let mut live = vec![false; n];
    let mut work: Vec<FuncRef> = module
        .functions
        .iter()
        .filter(|(_, f)| !is_runtime(&f.name))
        .map(|(r, _)| r)
        .collect();
    for &r in &work {
        live[r.index()] = true;
    }
    while let Some(r) = work.pop() {
        let f = &module.functions[r];
        for &b in &f.layout {
            for &inst in &f.blocks[b].insts {
                if let InstData::Call { func, .. } = f.insts[inst] {
                    if !live[func.index()] {
                        live[func.index()] = true;
                        work.push(func);
                    }
                }
            }
        }
    }
    if live.iter().all(|&l| l) {
        return;
    }
    let old = std::mem::take(&mut module.functions);
    let mut renumber: FxHashMap<FuncRef, FuncRef> = FxHashMap::default();
    let mut kept = Vec::new();
    for (r, f) in old.into_iter() {
        if live[r.index()] {
            renumber.insert(r, FuncRef::new(kept.len()));
            kept.push(f);
        }
    }
    for mut f in kept {
        for data in f.insts.values_mut() {
            if let InstData::Call { func, .. } = data {
                if let Some(&to) = renumber.get(func) {
                    *func = to;
                }
            }
        }
        module.functions.push(f);
    }
}

/// The constant an integer operand always has: an `iconst`, or a `splat`, extension or
/// reduction of one (the lowering converts shift counts to the shifted type).
pub fn const_int(func: &Function, v: Value) -> Option<u64> {
    let ValueDef::Result(inst) = func.values[v].def else {
        return None;
    };
    let to = func.value_type(v).scalar;
    match &func.insts[inst] {
        InstData::Iconst { bits, .. } => Some(*bits),
        InstData::Splat { arg } => const_int(func, *arg),
        InstData::Convert { op, arg, .. } => {
            let x = const_int(func, *arg)?;
            let from = func.value_type(*arg).scalar.bits();
            let w = to.bits();
            let mask = |b: u32| if b >= 64 { !0 } else { (1u64 << b) - 1 };
            match op {
                ConvOp::Zext | ConvOp::Ireduce => Some(x & mask(w)),
                ConvOp::Sext => Some(crate::interp::ops::sext(x, from) as u64 & mask(w)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `v` is defined by an `iconst` instruction (what instruction selection
/// accepts as a constant 64-bit shift count).
pub fn is_iconst(func: &Function, v: Value) -> bool {
    matches!(
        func.values[v].def,
        ValueDef::Result(i) if matches!(func.insts[i], InstData::Iconst { .. })
    )
}

/// The routine-name suffix for a result type: `u` for uniform, `v` for varying.
pub(crate) fn variant(ty: Type) -> &'static str {
    if ty.varying {
        "v"
    } else {
        "u"
    }
}
