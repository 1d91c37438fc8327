//! The textual form of the IR (`--emit ir`). The parser in `parse.rs` reads it back,
//! and printing the parsed module gives the same text.
//!
//! ```text
//! function export @saxpy(i32, f32, ptr, ptr) {
//! block0(v0: i32, v1: f32, v2: ptr, v3: ptr):
//!     v4 = special lane_index
//!     v5 = load.f32 global v2
//!     brif v7, block1(v4), block2
//! }
//! ```
//! Uniform types print bare (`i32`), varying ones in brackets (`[i32]`). Blocks, values
//! and instructions are numbered in text order, not by their arena handles: see
//! [`Names`].

use std::fmt::{self, Write};

use rustc_hash::FxHashMap;

use super::entities::{Block, FuncRef, Inst, Value};
use super::function::{Function, Module};
use super::instructions::{BlockCall, InstData};

/// The numbers entities get in the text: blocks in layout order, values in order of
/// definition (each block's parameters, then its instructions' results, block by block)
/// and instructions in layout order. The text is dense and deterministic whatever holes
/// passes left in the arenas, and the parser numbers the same way, so print → parse →
/// print is the identity. Entities mentioned but not defined by the layout (the result
/// of a removed instruction, a block outside the layout) come after the others, in order
/// of first mention.
pub struct Names {
    blocks: FxHashMap<Block, u32>,
    values: FxHashMap<Value, u32>,
    insts: FxHashMap<Inst, u32>,
}

impl Names {
    pub fn new(func: &Function) -> Names {
        let mut names = Names {
            blocks: FxHashMap::default(),
            values: FxHashMap::default(),
            insts: FxHashMap::default(),
        };
        let layout = func
            .layout
            .iter()
            .filter_map(|&b| Some((b, func.blocks.get(b)?)));
        for (block, data) in layout.clone() {
            name(&mut names.blocks, block);
            data.params.iter().for_each(|&p| name(&mut names.values, p));
            for &inst in &data.insts {
                name(&mut names.insts, inst);
                if let Some(r) = func.results[inst] {
                    name(&mut names.values, r);
                }
            }
        }
        for (_, data) in layout {
            for inst in data.insts.iter().filter_map(|&i| func.insts.get(i)) {
                inst.operands()
                    .iter()
                    .for_each(|&v| name(&mut names.values, v));
                for call in inst.successors() {
                    name(&mut names.blocks, call.block);
                }
            }
        }
        names
    }

    /// The handle whose `Display` is `block`'s name in the text.
    pub fn block(&self, block: Block) -> Block {
        self.blocks
            .get(&block)
            .map_or(block, |&n| Block::from_u32(n))
    }

    pub fn value(&self, value: Value) -> Value {
        self.values
            .get(&value)
            .map_or(value, |&n| Value::from_u32(n))
    }

    pub fn inst(&self, inst: Inst) -> Inst {
        self.insts.get(&inst).map_or(inst, |&n| Inst::from_u32(n))
    }
}

/// Gives `entity` the next number unless it has one.
fn name<E: std::hash::Hash + Eq>(map: &mut FxHashMap<E, u32>, entity: E) {
    let next = map.len() as u32;
    map.entry(entity).or_insert(next);
}

/// Prints a whole module.
pub fn write_module(out: &mut String, module: &Module) -> fmt::Result {
    write_module_annotated(out, module, &|_, _, _| None)
}

/// What an analysis adds to the text of a value: called with the function, the names
/// of its entities in the text and the value; `Some(text)` is printed as a `;` comment
/// after the definition (for block parameters, after the block header). The parser
/// skips comments, so annotated text still reads back as the same module.
pub type Annotate<'a> = &'a dyn Fn(FuncRef, &Names, Value) -> Option<String>;

/// [`write_module`] with analysis results as comments (`--emit ir` with annotations).
pub fn write_module_annotated(
    out: &mut String,
    module: &Module,
    annotate: Annotate,
) -> fmt::Result {
    writeln!(
        out,
        "module lanes {} ptr {}",
        module.lane_count, module.ptr_size
    )?;
    for (gv, g) in module.globals.iter() {
        let kind = if g.constant { "constant" } else { "global" };
        write!(
            out,
            "{kind} {gv} {:?} size {} align {}",
            g.name, g.size, g.align
        )?;
        if !g.init.is_empty() {
            out.push_str(" =");
            for b in &g.init {
                write!(out, " {b:02x}")?;
            }
        }
        for r in &g.relocs {
            write!(out, " reloc {} {} {:+}", r.offset, r.target, r.addend)?;
        }
        out.push('\n');
    }
    for (sh, s) in module.shared.iter() {
        if s.dynamic {
            writeln!(out, "shared {sh} {:?} dynamic align {}", s.name, s.align)?;
        } else {
            writeln!(
                out,
                "shared {sh} {:?} size {} align {}",
                s.name, s.size, s.align
            )?;
        }
    }
    for (id, s) in module.strings.iter() {
        writeln!(out, "string {id} {s:?}")?;
    }
    for (fref, func) in module.functions.iter() {
        out.push('\n');
        write_function_annotated(out, func, module, &|names, v| annotate(fref, names, v))?;
    }
    Ok(())
}

pub fn module_to_string(module: &Module) -> String {
    let mut s = String::new();
    write_module(&mut s, module).expect("writing to a String cannot fail");
    s
}

pub fn write_function(out: &mut String, func: &Function, module: &Module) -> fmt::Result {
    write_function_annotated(out, func, module, &|_, _| None)
}

/// [`write_function`] with a `;` comment after each value `annotate` has something
/// to say about (see [`Annotate`]).
pub fn write_function_annotated(
    out: &mut String,
    func: &Function,
    module: &Module,
    annotate: &dyn Fn(&Names, Value) -> Option<String>,
) -> fmt::Result {
    let names = Names::new(func);
    write!(out, "function {} @{}(", func.linkage.name(), func.name)?;
    for (i, p) in func.sig.params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write!(out, "{p}")?;
    }
    out.push(')');
    if let Some(ret) = func.sig.ret {
        write!(out, " -> {ret}")?;
    }
    if func.sig.takes_mask {
        out.push_str(" masked");
    }
    out.push_str(" {\n");
    for (ss, data) in func.stack_slots.iter() {
        writeln!(out, "    {ss} = stack {} align {}", data.size, data.align)?;
    }
    for &block in &func.layout {
        write!(out, "{}", names.block(block))?;
        let params = &func.blocks[block].params;
        if !params.is_empty() {
            out.push('(');
            for (i, &p) in params.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write!(out, "{}: {}", names.value(p), func.value_type(p))?;
            }
            out.push(')');
        }
        out.push(':');
        let notes: Vec<String> = params
            .iter()
            .filter_map(|&p| Some(format!("{}: {}", names.value(p), annotate(&names, p)?)))
            .collect();
        if !notes.is_empty() {
            write!(out, "  ; {}", notes.join(", "))?;
        }
        out.push('\n');
        for &inst in &func.blocks[block].insts {
            out.push_str("    ");
            write_inst(out, func, inst, module, &names)?;
            if let Some(note) = func.results[inst].and_then(|r| annotate(&names, r)) {
                write!(out, "  ; {note}")?;
            }
            out.push('\n');
        }
    }
    out.push_str("}\n");
    Ok(())
}

fn list(out: &mut String, values: &[Value], names: &Names) -> fmt::Result {
    for (i, &v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write!(out, "{}", names.value(v))?;
    }
    Ok(())
}

fn mask(out: &mut String, mask: Option<Value>, names: &Names) -> fmt::Result {
    match mask {
        Some(m) => write!(out, " mask {}", names.value(m)),
        None => Ok(()),
    }
}

fn block_call(out: &mut String, call: &BlockCall, names: &Names) -> fmt::Result {
    write!(out, "{}", names.block(call.block))?;
    if !call.args.is_empty() {
        out.push('(');
        list(out, &call.args, names)?;
        out.push(')');
    }
    Ok(())
}

/// A float constant: the shortest decimal that reads back to the same f64, or the raw
/// bits for NaNs (whose payload a decimal cannot carry).
pub fn float_text(bits: u64) -> String {
    let v = f64::from_bits(bits);
    if v.is_nan() {
        format!("0x{bits:016x}")
    } else {
        format!("{v:?}")
    }
}

/// Prints one instruction (`v3 = iadd v1, v2`) as [`write_function`] does; `names` is
/// [`Names::new`] of `func`. Never panics, even on a module that fails verification.
pub fn write_inst(
    out: &mut String,
    func: &Function,
    inst: Inst,
    module: &Module,
    names: &Names,
) -> fmt::Result {
    if let Some(r) = func.results[inst] {
        write!(out, "{} = ", names.value(r))?;
    }
    match func.insts.get(inst) {
        Some(data) => write_inst_data(out, data, module, names),
        None => write!(out, "<no {inst}>"),
    }
}

fn write_inst_data(
    out: &mut String,
    data: &InstData,
    module: &Module,
    names: &Names,
) -> fmt::Result {
    let n = |v: &Value| names.value(*v);
    match data {
        InstData::Iconst { ty, bits } => write!(out, "iconst.{ty} {}", *bits as i64),
        InstData::Fconst { ty, bits } => write!(out, "fconst.{ty} {}", float_text(*bits)),
        InstData::Unary { op, arg } => write!(out, "{} {}", op.name(), n(arg)),
        InstData::Binary { op, args } => {
            write!(out, "{} {}, {}", op.name(), n(&args[0]), n(&args[1]))
        }
        InstData::Icmp { cond, args } => {
            write!(out, "icmp {} {}, {}", cond.name(), n(&args[0]), n(&args[1]))
        }
        InstData::Fcmp { cond, args } => {
            write!(out, "fcmp {} {}, {}", cond.name(), n(&args[0]), n(&args[1]))
        }
        InstData::Select { args } => write!(
            out,
            "select {}, {}, {}",
            n(&args[0]),
            n(&args[1]),
            n(&args[2])
        ),
        InstData::Convert { op, arg, to } => {
            write!(out, "{}.{} {}", op.name(), to.scalar.name(), n(arg))
        }
        InstData::Splat { arg } => write!(out, "splat {}", n(arg)),
        InstData::Special { reg } => write!(out, "special {}", reg.name()),
        InstData::Lane { op, args } => {
            write!(out, "{} ", op.name())?;
            list(out, args, names)
        }
        InstData::StackAddr { slot } => write!(out, "stack_addr {slot}"),
        InstData::GlobalAddr { global } => write!(out, "global_addr {global}"),
        InstData::SharedAddr { shared } => write!(out, "shared_addr {shared}"),
        InstData::StackAlloc { size } => write!(out, "stack_alloc {}", n(size)),
        InstData::Load {
            ty,
            space,
            addr,
            mask: m,
        } => {
            write!(out, "load.{ty} {} {}", space.name(), n(addr))?;
            mask(out, *m, names)
        }
        InstData::Store {
            space,
            addr,
            value,
            mask: m,
        } => {
            write!(out, "store {} {}, {}", space.name(), n(addr), n(value))?;
            mask(out, *m, names)
        }
        InstData::AtomicRmw {
            op,
            space,
            addr,
            value,
            mask: m,
        } => {
            write!(
                out,
                "atomic_rmw {} {} {}, {}",
                op.name(),
                space.name(),
                n(addr),
                n(value)
            )?;
            mask(out, *m, names)
        }
        InstData::AtomicCas {
            space,
            addr,
            expected,
            replacement,
            mask: m,
        } => {
            write!(
                out,
                "atomic_cas {} {}, {}, {}",
                space.name(),
                n(addr),
                n(expected),
                n(replacement)
            )?;
            mask(out, *m, names)
        }
        InstData::Barrier => out.write_str("barrier"),
        InstData::Call {
            func,
            args,
            mask: m,
        } => {
            match module.functions.get(*func) {
                Some(callee) => write!(out, "call @{}(", callee.name)?,
                None => write!(out, "call <no {func}>(")?,
            }
            list(out, args, names)?;
            out.push(')');
            mask(out, *m, names)
        }
        InstData::Print {
            format,
            args,
            mask: m,
        } => {
            write!(out, "print {format}(")?;
            list(out, args, names)?;
            out.push(')');
            mask(out, *m, names)
        }
        InstData::Trap { code } => write!(out, "trap {}", code.name()),
        InstData::Jump { dest } => {
            out.push_str("jump ");
            block_call(out, dest, names)
        }
        InstData::Brif {
            cond,
            then_dest,
            else_dest,
        } => {
            write!(out, "brif {}, ", n(cond))?;
            block_call(out, then_dest, names)?;
            out.push_str(", ");
            block_call(out, else_dest, names)
        }
        InstData::Return { value } => match value {
            Some(v) => write!(out, "return {}", n(v)),
            None => out.write_str("return"),
        },
    }
}
