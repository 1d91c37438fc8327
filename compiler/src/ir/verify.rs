//! The IR verifier: checks the invariants passes and back ends rely on and reports
//! every violation, each tied to the block, instruction or value it concerns and
//! written with the names `--emit ir` prints ([`Names`]).
//!
//! What is checked:
//! - the module: function names are unique (calls print and parse by name), globals
//!   fit their initializers, alignments are powers of two;
//! - structure: the layout lists every block exactly once, every block ends in exactly
//!   one terminator, every instruction sits in one block, values say truthfully where
//!   they are defined, the entry block's parameters match the signature (plus the mask
//!   when the function is `masked`);
//! - control flow: branch targets exist, are not the entry block, and get arguments
//!   matching their parameters in number and type; `brif` branches on a uniform
//!   `bool`; `return` matches the signature;
//! - SSA: every use is dominated by its definition (block parameters dominate their
//!   block). Uses in unreachable blocks are checked within their block only;
//! - types: what each opcode accepts (see [`Verifier::check_operands`]), masks are
//!   `[bool]`, a uniform address is not stored a varying value, calls match their
//!   callee's signature and mask convention, referenced stack slots, globals, shared
//!   variables and strings exist, and every result has the type [`result_type`] infers.
//!
//! The verifier never panics, whatever the module holds: handles are looked up, not
//! indexed, until they are known to exist.

use std::fmt;

use rustc_hash::{FxHashMap, FxHashSet};

use super::dominance::DominatorTree;
use super::entities::{Block, Inst, Value};
use super::function::{result_type, Function, Module, ValueDef};
use super::instructions::{
    AtomicOp, BinaryOp, BlockCall, ConvOp, InstData, IntCC, LaneOp, UnaryOp,
};
use super::types::{Scalar, Type};
use super::write::{write_inst, Names};

/// One verifier finding. `func` is empty for module-level findings; `location` names
/// the entity as the text does (`inst12 (v13 = iadd v4, v9)`, `block3`, `v5`, `gv0`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierError {
    pub func: String,
    pub location: String,
    pub message: String,
}

impl fmt::Display for VerifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.func.is_empty() {
            write!(f, "@{} ", self.func)?;
        }
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for VerifierError {}

/// Verifies the whole module: module-level rules, then every function.
pub fn verify_module(module: &Module) -> Result<(), Vec<VerifierError>> {
    let mut errors = module_errors(module);
    for func in module.functions.values() {
        if let Err(e) = verify_function(module, func) {
            errors.extend(e);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Verifies one function of `module` (which supplies callees, globals and strings).
pub fn verify_function(module: &Module, func: &Function) -> Result<(), Vec<VerifierError>> {
    let mut v = Verifier::new(module, func);
    v.run();
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

/// Module-level findings.
fn module_errors(module: &Module) -> Vec<VerifierError> {
    let mut errors = Vec::new();
    let mut push = |location: String, message: String| {
        errors.push(VerifierError {
            func: String::new(),
            location,
            message,
        })
    };
    if module.lane_count == 0 {
        push("module".into(), "the gang width (lanes) is 0".into());
    }
    if !matches!(module.ptr_size, 4 | 8) {
        push(
            "module".into(),
            format!("pointer size {} is not 4 or 8", module.ptr_size),
        );
    }
    let mut names = FxHashSet::default();
    for f in module.functions.values() {
        if !names.insert(f.name.as_str()) {
            push(format!("@{}", f.name), "function name defined twice".into());
        }
    }
    for (gv, g) in module.globals.iter() {
        if g.init.len() > g.size as usize {
            let message = format!("{} initial bytes exceed its size {}", g.init.len(), g.size);
            push(gv.to_string(), message);
        }
        if !g.align.is_power_of_two() {
            push(
                gv.to_string(),
                format!("alignment {} is not a power of two", g.align),
            );
        }
        for r in &g.relocs {
            if module.globals.get(r.target).is_none() {
                push(
                    gv.to_string(),
                    format!("relocation names a missing {}", r.target),
                );
            }
            if u64::from(r.offset) + u64::from(module.ptr_size) > u64::from(g.size) {
                let message = format!("relocation at byte {} past its size {}", r.offset, g.size);
                push(gv.to_string(), message);
            }
        }
    }
    for (sh, s) in module.shared.iter() {
        if !s.align.is_power_of_two() {
            push(
                sh.to_string(),
                format!("alignment {} is not a power of two", s.align),
            );
        }
    }
    if module.shared.values().filter(|s| s.dynamic).count() > 1 {
        push(
            "module".to_string(),
            "more than one dynamic shared variable".to_string(),
        );
    }
    errors
}

/// Where an instruction sits: its block and index there.
type InstPos = (Block, usize);

struct Verifier<'a> {
    module: &'a Module,
    func: &'a Function,
    names: Names,
    errors: Vec<VerifierError>,
    /// The layout's blocks that exist, each once, in order.
    blocks: Vec<Block>,
    /// The same blocks, for membership.
    in_layout: FxHashSet<Block>,
    /// Where each instruction of the layout sits.
    inst_pos: FxHashMap<Inst, InstPos>,
    domtree: DominatorTree,
}

impl<'a> Verifier<'a> {
    fn new(module: &'a Module, func: &'a Function) -> Self {
        Verifier {
            module,
            func,
            names: Names::new(func),
            errors: Vec::new(),
            blocks: Vec::new(),
            in_layout: FxHashSet::default(),
            inst_pos: FxHashMap::default(),
            domtree: DominatorTree::compute(func),
        }
    }

    fn run(&mut self) {
        self.check_stack_slots();
        self.check_layout();
        self.place_insts();
        for i in 0..self.blocks.len() {
            self.check_block(self.blocks[i]);
        }
        self.check_entry();
        let func = self.func;
        for i in 0..self.blocks.len() {
            let block = self.blocks[i];
            for (index, &inst) in func.blocks[block].insts.iter().enumerate() {
                // Instructions placed twice are checked where they were placed first.
                if self.inst_pos.get(&inst) == Some(&(block, index)) {
                    self.check_inst(inst);
                }
            }
        }
    }

    fn error(&mut self, location: String, message: String) {
        self.errors.push(VerifierError {
            func: self.func.name.clone(),
            location,
            message,
        });
    }

    fn block_error(&mut self, block: Block, message: String) {
        self.error(self.names.block(block).to_string(), message);
    }

    fn value_error(&mut self, value: Value, message: String) {
        self.error(self.names.value(value).to_string(), message);
    }

    /// An error located at `inst`, quoting it as printed.
    fn inst_error(&mut self, inst: Inst, message: String) {
        let mut text = String::new();
        let _ = write_inst(&mut text, self.func, inst, self.module, &self.names);
        let location = format!("{} ({text})", self.names.inst(inst));
        self.error(location, message);
    }

    fn v(&self, value: Value) -> Value {
        self.names.value(value)
    }

    fn check_stack_slots(&mut self) {
        for (ss, data) in self.func.stack_slots.iter() {
            if !data.align.is_power_of_two() {
                let message = format!("alignment {} is not a power of two", data.align);
                self.error(ss.to_string(), message);
            }
        }
    }

    /// The layout names existing blocks, each once, and every block.
    fn check_layout(&mut self) {
        if self.func.layout.is_empty() {
            self.error("layout".into(), "the function has no blocks".into());
        }
        let mut seen = FxHashSet::default();
        for &block in &self.func.layout {
            if self.func.blocks.get(block).is_none() {
                self.error(
                    "layout".into(),
                    format!("lists {block}, which does not exist"),
                );
            } else if !seen.insert(block) {
                self.block_error(block, "appears twice in the layout".into());
            } else {
                self.blocks.push(block);
            }
        }
        self.in_layout = seen;
        for block in self.func.blocks.keys() {
            if !self.in_layout.contains(&block) {
                let message = format!("arena {block} is not in the layout");
                self.error("layout".into(), message);
            }
        }
    }

    /// Records where each instruction sits; an instruction must exist and sit once.
    fn place_insts(&mut self) {
        let func = self.func;
        for i in 0..self.blocks.len() {
            let block = self.blocks[i];
            for (index, &inst) in func.blocks[block].insts.iter().enumerate() {
                if self.func.insts.get(inst).is_none() {
                    self.block_error(block, format!("holds {inst}, which does not exist"));
                } else if self.inst_pos.insert(inst, (block, index)).is_some() {
                    self.inst_error(inst, "appears twice in the layout".into());
                }
            }
        }
    }

    /// One terminator, at the end; parameters say they are this block's.
    fn check_block(&mut self, block: Block) {
        let func = self.func;
        let data = &func.blocks[block];
        let insts = &data.insts;
        match insts.last() {
            None => self.block_error(block, "is empty: it needs a terminator".into()),
            Some(&last) if !self.is_terminator(last) => {
                self.block_error(block, "does not end in a terminator".into())
            }
            Some(_) => {}
        }
        for &inst in insts.iter().rev().skip(1) {
            if self.is_terminator(inst) {
                self.inst_error(inst, "terminator in the middle of a block".into());
            }
        }
        for (i, &p) in data.params.iter().enumerate() {
            let def = ValueDef::Param(block, i as u32);
            match self.func.values.get(p) {
                None => self.block_error(block, format!("parameter {p} does not exist")),
                Some(vd) if vd.def != def => self.value_error(
                    p,
                    format!(
                        "is a parameter of {} but its definition says otherwise",
                        self.names.block(block)
                    ),
                ),
                Some(_) => {}
            }
        }
    }

    fn is_terminator(&self, inst: Inst) -> bool {
        self.func
            .insts
            .get(inst)
            .is_some_and(InstData::is_terminator)
    }

    /// The entry block's parameters are the signature's, plus the mask if masked.
    fn check_entry(&mut self) {
        let Some(&entry) = self.blocks.first() else {
            return;
        };
        let sig = &self.func.sig;
        let mut expected = sig.params.clone();
        if sig.takes_mask {
            expected.push(Type::MASK);
        }
        let actual: Vec<Option<Type>> = self.func.blocks[entry]
            .params
            .iter()
            .map(|&p| self.func.values.get(p).map(|d| d.ty))
            .collect();
        let matches = actual.len() == expected.len()
            && actual.iter().zip(&expected).all(|(a, e)| *a == Some(*e));
        if !matches {
            let want: Vec<String> = expected.iter().map(Type::to_string).collect();
            let got: Vec<String> = actual
                .iter()
                .map(|t| t.map_or("?".into(), |t| t.to_string()))
                .collect();
            let mask_note = if sig.takes_mask {
                " (signature plus the [bool] mask)"
            } else {
                ""
            };
            let message = format!(
                "entry block parameters ({}) do not match the signature: expected ({}){mask_note}",
                got.join(", "),
                want.join(", ")
            );
            self.block_error(entry, message);
        }
    }

    /// Everything about one instruction of the layout.
    fn check_inst(&mut self, inst: Inst) {
        let func = self.func;
        let data = &func.insts[inst];
        if let Some(r) = func.results[inst] {
            let ok = func
                .values
                .get(r)
                .is_some_and(|d| d.def == ValueDef::Result(inst));
            if !ok {
                let message = format!(
                    "result {} does not say this instruction defines it",
                    self.v(r)
                );
                self.inst_error(inst, message);
                return;
            }
        }
        let mut operands_ok = true;
        let mut seen = FxHashSet::default();
        for v in data.operands() {
            if seen.insert(v) {
                operands_ok &= self.check_use(inst, v);
            }
        }
        if !operands_ok {
            return;
        }
        let mut check = Check {
            func: self.func,
            names: &self.names,
            messages: Vec::new(),
        };
        self.check_operands(&mut check, data);
        check.result(inst, self.module);
        for message in check.messages {
            self.inst_error(inst, message);
        }
        for call in data.successors() {
            self.check_branch(inst, call);
        }
    }

    /// `value` exists, is defined in the layout, and its definition dominates `inst`.
    fn check_use(&mut self, inst: Inst, value: Value) -> bool {
        let Some(vd) = self.func.values.get(value) else {
            self.inst_error(inst, format!("uses {value}, which does not exist"));
            return false;
        };
        let (use_block, use_index) = self.inst_pos[&inst];
        let def_pos = match vd.def {
            ValueDef::Param(b, i) => {
                let real = self
                    .func
                    .blocks
                    .get(b)
                    .and_then(|d| d.params.get(i as usize));
                (real == Some(&value) && self.in_layout.contains(&b)).then_some((b, None))
            }
            ValueDef::Result(i) => {
                let real = self.func.results.get(i).copied().flatten() == Some(value);
                let pos = self.inst_pos.get(&i).filter(|_| real);
                pos.map(|&(b, index)| (b, Some(index)))
            }
        };
        let Some((def_block, def_index)) = def_pos else {
            let message = format!(
                "uses {}, whose definition is not in the layout",
                self.v(value)
            );
            self.inst_error(inst, message);
            return false;
        };
        let dominated = if def_block == use_block {
            def_index.is_none_or(|d| d < use_index)
        } else {
            // Unreachable code is checked within its block only.
            !self.domtree.is_reachable(use_block) || self.domtree.dominates(def_block, use_block)
        };
        if !dominated {
            let message = format!(
                "uses {}, whose definition does not dominate this use",
                self.v(value)
            );
            self.inst_error(inst, message);
        }
        true
    }

    /// A branch target exists, is in the layout, is not the entry, and gets arguments
    /// that match its parameters.
    fn check_branch(&mut self, inst: Inst, call: &BlockCall) {
        let target = self.names.block(call.block);
        let Some(data) = self.func.blocks.get(call.block) else {
            self.inst_error(inst, format!("branches to {target}, which does not exist"));
            return;
        };
        if !self.in_layout.contains(&call.block) {
            self.inst_error(
                inst,
                format!("branches to {target}, which is not in the layout"),
            );
            return;
        }
        if self.blocks.first() == Some(&call.block) {
            self.inst_error(inst, format!("branches to the entry block {target}"));
        }
        if data.params.len() != call.args.len() {
            let message = format!(
                "{target} takes {}, the branch passes {}",
                count(data.params.len(), "argument"),
                call.args.len()
            );
            self.inst_error(inst, message);
            return;
        }
        for (&p, &a) in data.params.iter().zip(&call.args) {
            let (Some(pd), Some(ad)) = (self.func.values.get(p), self.func.values.get(a)) else {
                continue;
            };
            if pd.ty != ad.ty {
                let message = format!(
                    "argument {} is {}, but parameter {} of {target} is {}",
                    self.v(a),
                    ad.ty,
                    self.v(p),
                    pd.ty
                );
                self.inst_error(inst, message);
            }
        }
    }

    /// What each opcode accepts. Operands exist when this runs.
    fn check_operands(&self, c: &mut Check, data: &InstData) {
        match data {
            InstData::Iconst { ty, bits } => c.iconst(*ty, *bits),
            InstData::Fconst { ty, bits } => c.fconst(*ty, *bits),
            InstData::Unary { op, arg } => c.unary(*op, *arg),
            InstData::Binary { op, args } => c.binary(*op, args[0], args[1]),
            InstData::Icmp { cond, args } => c.icmp(*cond, args[0], args[1]),
            InstData::Fcmp { args, .. } => {
                c.kind(args[0], Scalar::is_float, "a float");
                c.same_scalar(args[0], args[1]);
            }
            InstData::Select { args } => {
                c.kind(args[0], |s| s == Scalar::Bool, "a bool");
                c.same_scalar(args[1], args[2]);
            }
            InstData::Convert { op, arg, to } => {
                c.convert(*op, *arg, to.scalar, self.module.ptr_size * 8)
            }
            InstData::Splat { arg } => c.uniform(*arg, "the splatted value"),
            InstData::Special { .. } | InstData::Barrier | InstData::Trap { .. } => {}
            InstData::Lane { op, args } => c.lane(*op, args),
            InstData::StackAddr { slot } => {
                if self.func.stack_slots.get(*slot).is_none() {
                    c.messages.push(format!("{slot} does not exist"));
                }
            }
            InstData::StackAlloc { size } => {
                c.uniform(*size, "the size");
                c.kind(
                    *size,
                    |s| matches!(s, Scalar::I32 | Scalar::I64),
                    "an i32 or i64",
                );
            }
            InstData::GlobalAddr { global } => {
                if self.module.globals.get(*global).is_none() {
                    c.messages.push(format!("{global} does not exist"));
                }
            }
            InstData::SharedAddr { shared } => {
                if self.module.shared.get(*shared).is_none() {
                    c.messages.push(format!("{shared} does not exist"));
                }
            }
            InstData::Load { ty, addr, mask, .. } => {
                c.memory(*addr, *mask);
                c.load(*ty, *addr);
            }
            InstData::Store {
                addr, value, mask, ..
            } => {
                c.memory(*addr, *mask);
                c.store(*addr, *value);
            }
            InstData::AtomicRmw {
                op,
                addr,
                value,
                mask,
                ..
            } => {
                c.memory(*addr, *mask);
                c.atomic_rmw(*op, *value);
            }
            InstData::AtomicCas {
                addr,
                expected,
                replacement,
                mask,
                ..
            } => {
                c.memory(*addr, *mask);
                c.kind(
                    *expected,
                    |s| s.is_int() || s == Scalar::Ptr,
                    "an integer or ptr",
                );
                c.same_scalar(*expected, *replacement);
            }
            InstData::Call { func, args, mask } => self.check_call(c, *func, args, *mask),
            InstData::Print { format, mask, .. } => {
                if self.module.strings.get(*format).is_none() {
                    c.messages.push(format!("{format} does not exist"));
                }
                c.optional_mask(*mask);
            }
            InstData::Jump { .. } => {}
            InstData::Brif { cond, .. } => {
                if c.ty(*cond) != Type::BOOL {
                    let message = format!(
                        "the condition {} must be a uniform bool, found {}",
                        c.name(*cond),
                        c.ty(*cond)
                    );
                    c.messages.push(message);
                }
            }
            InstData::Return { value } => self.check_return(c, *value),
        }
    }

    /// Argument count and types, and the mask iff the callee takes one.
    fn check_call(&self, c: &mut Check, func: super::FuncRef, args: &[Value], mask: Option<Value>) {
        let Some(callee) = self.module.functions.get(func) else {
            c.messages
                .push(format!("calls {func}, which does not exist"));
            return;
        };
        let sig = &callee.sig;
        if sig.params.len() != args.len() {
            c.messages.push(format!(
                "@{} takes {}, the call passes {}",
                callee.name,
                count(sig.params.len(), "argument"),
                args.len()
            ));
        } else {
            for (i, (&a, &p)) in args.iter().zip(&sig.params).enumerate() {
                if c.ty(a) != p {
                    let message = format!(
                        "argument {i} ({}) is {}, but @{} takes {p}",
                        c.name(a),
                        c.ty(a),
                        callee.name
                    );
                    c.messages.push(message);
                }
            }
        }
        match (sig.takes_mask, mask) {
            (true, None) => c.messages.push(format!(
                "@{} is masked: the call must pass a mask",
                callee.name
            )),
            (false, Some(_)) => c.messages.push(format!(
                "@{} takes no mask, but the call passes one",
                callee.name
            )),
            _ => c.optional_mask(mask),
        }
    }

    fn check_return(&self, c: &mut Check, value: Option<Value>) {
        let ret = self.func.sig.ret;
        match (ret, value) {
            (None, Some(v)) => c.messages.push(format!(
                "returns {}, but the function returns nothing",
                c.name(v)
            )),
            (Some(t), None) => c
                .messages
                .push(format!("returns nothing, but the function returns {t}")),
            (Some(t), Some(v)) if c.ty(v) != t => {
                let message = format!("returns {}, but the function returns {t}", c.ty(v));
                c.messages.push(message);
            }
            _ => {}
        }
    }
}

/// `1 argument`, `2 arguments`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Operand checks for one instruction; findings collect in `messages`.
struct Check<'a> {
    func: &'a Function,
    names: &'a Names,
    messages: Vec<String>,
}

fn is_int_or_bool(s: Scalar) -> bool {
    s.is_int() || s == Scalar::Bool
}

fn is_int_or_ptr(s: Scalar) -> bool {
    s.is_int() || s == Scalar::Ptr
}

fn is_addable(s: Scalar) -> bool {
    s.is_int() || s.is_float()
}

impl Check<'_> {
    fn ty(&self, v: Value) -> Type {
        self.func.values[v].ty
    }

    fn name(&self, v: Value) -> Value {
        self.names.value(v)
    }

    /// `v`'s element type satisfies `ok`, described as `what`.
    fn kind(&mut self, v: Value, ok: impl Fn(Scalar) -> bool, what: &str) -> bool {
        let t = self.ty(v);
        if !ok(t.scalar) {
            let message = format!("{} must be {what}, found {t}", self.name(v));
            self.messages.push(message);
        }
        ok(t.scalar)
    }

    fn same_scalar(&mut self, a: Value, b: Value) {
        let (ta, tb) = (self.ty(a), self.ty(b));
        if ta.scalar != tb.scalar {
            self.messages
                .push(format!("operand types differ: {ta} vs {tb}"));
        }
    }

    fn uniform(&mut self, v: Value, role: &str) {
        if self.ty(v).varying {
            let message = format!(
                "{role} {} must be uniform, found {}",
                self.name(v),
                self.ty(v)
            );
            self.messages.push(message);
        }
    }

    fn uniform_i32(&mut self, v: Value, role: &str) {
        if self.ty(v) != Type::I32 {
            let message = format!(
                "{role} {} must be a uniform i32, found {}",
                self.name(v),
                self.ty(v)
            );
            self.messages.push(message);
        }
    }

    fn mask(&mut self, v: Value) {
        if !self.ty(v).is_mask() {
            let message = format!(
                "the mask {} must be [bool], found {}",
                self.name(v),
                self.ty(v)
            );
            self.messages.push(message);
        }
    }

    fn optional_mask(&mut self, mask: Option<Value>) {
        if let Some(m) = mask {
            self.mask(m);
        }
    }

    /// An integer constant fits its type, read as signed or unsigned.
    fn iconst(&mut self, ty: Type, bits: u64) {
        let value = bits as i64;
        let fits = match ty.scalar {
            Scalar::Bool => value == 0 || value == 1,
            s if s.is_int() && s.bits() < 64 => {
                let w = s.bits();
                value >= -(1i64 << (w - 1)) && value < (1i64 << w)
            }
            s => !s.is_ieee(),
        };
        if ty.scalar.is_ieee() {
            self.messages
                .push(format!("iconst of float type {ty}: use fconst"));
        } else if !fits {
            self.messages
                .push(format!("constant {value} does not fit in {ty}"));
        }
    }

    /// A float constant is a float, exactly representable in its type.
    fn fconst(&mut self, ty: Type, bits: u64) {
        let value = f64::from_bits(bits);
        match ty.scalar {
            Scalar::F64 => {}
            Scalar::F32 if value.is_nan() || (value as f32) as f64 == value => {}
            Scalar::F32 => self.messages.push(format!(
                "constant {value:?} is not exactly representable in f32"
            )),
            Scalar::F16
                if value.is_nan()
                    || sim::fp16::f64_from_f16(sim::fp16::f16_from_f64(value)) == value => {}
            Scalar::F16 => self.messages.push(format!(
                "constant {value:?} is not exactly representable in f16"
            )),
            _ => self
                .messages
                .push(format!("fconst of non-float type {ty}: use iconst")),
        }
    }

    fn unary(&mut self, op: UnaryOp, arg: Value) {
        use UnaryOp::*;
        match op {
            Ineg | Popcnt | Clz | Ctz => self.kind(arg, Scalar::is_int, "an integer"),
            Bnot => self.kind(arg, is_int_or_bool, "an integer or bool"),
            Fneg | Fabs | Sqrt | Floor | Ceil | Trunc | Nearest => {
                self.kind(arg, Scalar::is_float, "a float")
            }
        };
    }

    /// Both operands of one element type (shifts: any integer count), of the kind
    /// the opcode works on.
    fn binary(&mut self, op: BinaryOp, a: Value, b: Value) {
        use BinaryOp::*;
        match op {
            Ishl | Sshr | Ushr => {
                self.kind(a, Scalar::is_int, "an integer");
                self.kind(b, Scalar::is_int, "an integer shift count");
                return;
            }
            Iadd | Isub => self.kind(a, is_int_or_ptr, "an integer or ptr"),
            Band | Bor | Bxor => self.kind(
                a,
                |s| is_int_or_bool(s) || s == Scalar::Ptr,
                "an integer, bool or ptr",
            ),
            Imul | Sdiv | Udiv | Srem | Urem | Smin | Smax | Umin | Umax => {
                self.kind(a, Scalar::is_int, "an integer")
            }
            Fadd | Fsub | Fmul | Fdiv | Fmin | Fmax | Frem => {
                self.kind(a, Scalar::is_float, "a float")
            }
        };
        self.same_scalar(a, b);
    }

    fn icmp(&mut self, cond: IntCC, a: Value, b: Value) {
        if matches!(cond, IntCC::Eq | IntCC::Ne) {
            self.kind(a, |s| !s.is_ieee(), "an integer, bool or ptr");
        } else {
            self.kind(a, is_int_or_ptr, "an integer or ptr");
        }
        self.same_scalar(a, b);
    }

    /// The conversions each opcode allows, by element type; `ptr_bits` is the target's
    /// address width.
    fn convert(&mut self, op: ConvOp, arg: Value, to: Scalar, ptr_bits: u32) {
        use ConvOp::*;
        let from = self.ty(arg).scalar;
        let bits = |s: Scalar| if s == Scalar::Ptr { ptr_bits } else { s.bits() };
        let legal = match op {
            Sext => {
                from.is_int() && (to == Scalar::Ptr || (to.is_int() && to.bits() > from.bits()))
            }
            Zext => {
                is_int_or_bool(from)
                    && (to == Scalar::Ptr || (to.is_int() && to.bits() > from.bits()))
            }
            Ireduce => is_int_or_ptr(from) && to.is_int() && to.bits() < bits(from),
            FcvtToSint | FcvtToUint => from.is_float() && to.is_int(),
            FcvtFromSint | FcvtFromUint => from.is_int() && to.is_float(),
            Fpromote => from.is_ieee() && to.is_float() && from.bits() < to.bits(),
            Fdemote => from.is_float() && to.is_ieee() && to.bits() < from.bits(),
            Bitcast => from != Scalar::Bool && to != Scalar::Bool && bits(from) == bits(to),
            ToBool => is_int_or_ptr(from) && to == Scalar::Bool,
        };
        if !legal {
            let message = format!(
                "{} cannot convert {} to {}",
                op.name(),
                from.name(),
                to.name()
            );
            self.messages.push(message);
        }
    }

    /// Arity and operand types of the cross-lane operations.
    fn lane(&mut self, op: LaneOp, args: &[Value]) {
        use LaneOp::*;
        let arity = match op {
            Any | All | Ballot | FirstLane => 1,
            Insert | Shuffle2 => 3,
            _ => 2,
        };
        if args.len() != arity {
            let message = format!(
                "{} takes {}, found {}",
                op.name(),
                count(arity, "operand"),
                args.len()
            );
            self.messages.push(message);
            return;
        }
        match op {
            Extract => self.uniform_i32(args[1], "the lane index"),
            Insert => {
                self.uniform_i32(args[1], "the lane index");
                self.uniform(args[2], "the inserted value");
                self.same_scalar(args[0], args[2]);
            }
            Shuffle => {
                self.kind(args[1], |s| s == Scalar::I32, "an i32 lane index");
            }
            Shuffle2 => {
                self.same_scalar(args[0], args[1]);
                self.kind(args[2], |s| s == Scalar::I32, "an i32 lane index");
            }
            Rotate | Shift => self.uniform_i32(args[1], "the lane offset"),
            ReduceAdd | ReduceMin | ReduceMax | ScanAdd => {
                self.kind(args[0], is_addable, "an integer or float");
                self.mask(args[1]);
            }
            ReduceAnd | ReduceOr | ScanAnd | ScanOr => {
                self.kind(args[0], is_int_or_bool, "an integer or bool");
                self.mask(args[1]);
            }
            ReduceEqual => self.mask(args[1]),
            Any | All | Ballot | FirstLane => self.mask(args[0]),
        }
    }

    /// Addresses are pointers, masks `[bool]`.
    fn memory(&mut self, addr: Value, mask: Option<Value>) {
        self.kind(addr, |s| s == Scalar::Ptr, "a ptr address");
        self.optional_mask(mask);
    }

    /// A varying load reads one address per lane: it needs a varying address.
    fn load(&mut self, ty: Type, addr: Value) {
        if ty.varying && !self.ty(addr).varying {
            let message = format!(
                "varying load from a uniform address {}: load a uniform value and splat it, or compute one address per lane",
                self.name(addr)
            );
            self.messages.push(message);
        }
    }

    /// One uniform location cannot take a value per lane.
    fn store(&mut self, addr: Value, value: Value) {
        if !self.ty(addr).varying && self.ty(value).varying {
            let message = format!(
                "uniform store of a varying value: address {} is uniform, value {} is {}",
                self.name(addr),
                self.name(value),
                self.ty(value)
            );
            self.messages.push(message);
        }
    }

    fn atomic_rmw(&mut self, op: AtomicOp, value: Value) {
        if op == AtomicOp::Xchg {
            self.kind(value, |s| s != Scalar::Bool, "an integer, float or ptr");
        } else {
            self.kind(value, Scalar::is_int, "an integer");
        }
    }

    /// The result is there exactly when the instruction produces one, with the type
    /// [`result_type`] infers.
    fn result(&mut self, inst: Inst, module: &Module) {
        let data = &self.func.insts[inst];
        let callee_ret = |f| module.functions.get(f).and_then(|c| c.sig.ret);
        let expected = match result_type(data, |v| self.func.values[v].ty, callee_ret) {
            Ok(t) => t,
            Err(e) => {
                self.messages.push(e);
                return;
            }
        };
        let actual = self.func.results[inst].map(|r| (r, self.ty(r)));
        let message = match (expected, actual) {
            (None, Some((r, _))) => format!(
                "has a result {}, but this instruction produces none",
                self.name(r)
            ),
            (Some(t), None) => format!("its result (of type {t}) is missing"),
            (Some(t), Some((r, actual))) if t != actual => format!(
                "result {} has type {actual}, but its operands give {t}",
                self.name(r)
            ),
            _ => return,
        };
        self.messages.push(message);
    }
}
