//! The textual form of the IR (`--emit ir`). The parser in `parse.rs` reads it back,
//! and printing the parsed module gives the same text.
//!
//! ```text
//! function export @saxpy(i32, f32, ptr, ptr) {
//! block0(v0: i32, v1: f32, v2: ptr, v3: ptr):
//!     v4 = special lane_index
//!     v5 = load.[f32] global v2 mask v9
//!     brif v7, block1(v4), block2
//! }
//! ```
//! Uniform types print bare (`i32`), varying ones in brackets (`[i32]`).

use std::fmt::{self, Write};

use super::entities::Value;
use super::function::{Function, Module};
use super::instructions::{BlockCall, InstData};

/// Prints a whole module.
pub fn write_module(out: &mut String, module: &Module) -> fmt::Result {
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
        out.push('\n');
    }
    for (sh, s) in module.shared.iter() {
        writeln!(
            out,
            "shared {sh} {:?} size {} align {}",
            s.name, s.size, s.align
        )?;
    }
    for (id, s) in module.strings.iter() {
        writeln!(out, "string {id} {s:?}")?;
    }
    for (_, func) in module.functions.iter() {
        out.push('\n');
        write_function(out, func, module)?;
    }
    Ok(())
}

pub fn module_to_string(module: &Module) -> String {
    let mut s = String::new();
    write_module(&mut s, module).expect("writing to a String cannot fail");
    s
}

pub fn write_function(out: &mut String, func: &Function, module: &Module) -> fmt::Result {
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
        write!(out, "{block}")?;
        let params = &func.blocks[block].params;
        if !params.is_empty() {
            out.push('(');
            for (i, &p) in params.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write!(out, "{p}: {}", func.value_type(p))?;
            }
            out.push(')');
        }
        out.push_str(":\n");
        for &inst in &func.blocks[block].insts {
            out.push_str("    ");
            if let Some(r) = func.results[inst] {
                write!(out, "{r} = ")?;
            }
            write_inst(out, &func.insts[inst], module)?;
            out.push('\n');
        }
    }
    out.push_str("}\n");
    Ok(())
}

fn list(out: &mut String, values: &[Value]) -> fmt::Result {
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write!(out, "{v}")?;
    }
    Ok(())
}

fn mask(out: &mut String, mask: Option<Value>) -> fmt::Result {
    match mask {
        Some(m) => write!(out, " mask {m}"),
        None => Ok(()),
    }
}

fn block_call(out: &mut String, call: &BlockCall) -> fmt::Result {
    write!(out, "{}", call.block)?;
    if !call.args.is_empty() {
        out.push('(');
        list(out, &call.args)?;
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

fn write_inst(out: &mut String, data: &InstData, module: &Module) -> fmt::Result {
    match data {
        InstData::Iconst { ty, bits } => write!(out, "iconst.{ty} {}", *bits as i64),
        InstData::Fconst { ty, bits } => write!(out, "fconst.{ty} {}", float_text(*bits)),
        InstData::Unary { op, arg } => write!(out, "{} {arg}", op.name()),
        InstData::Binary { op, args } => write!(out, "{} {}, {}", op.name(), args[0], args[1]),
        InstData::Icmp { cond, args } => {
            write!(out, "icmp {} {}, {}", cond.name(), args[0], args[1])
        }
        InstData::Fcmp { cond, args } => {
            write!(out, "fcmp {} {}, {}", cond.name(), args[0], args[1])
        }
        InstData::Select { args } => write!(out, "select {}, {}, {}", args[0], args[1], args[2]),
        InstData::Convert { op, arg, to } => {
            write!(out, "{}.{} {arg}", op.name(), to.scalar.name())
        }
        InstData::Splat { arg } => write!(out, "splat {arg}"),
        InstData::Special { reg } => write!(out, "special {}", reg.name()),
        InstData::Lane { op, args } => {
            write!(out, "{} ", op.name())?;
            list(out, args)
        }
        InstData::StackAddr { slot } => write!(out, "stack_addr {slot}"),
        InstData::GlobalAddr { global } => write!(out, "global_addr {global}"),
        InstData::SharedAddr { shared } => write!(out, "shared_addr {shared}"),
        InstData::Load {
            ty,
            space,
            addr,
            mask: m,
        } => {
            write!(out, "load.{ty} {} {addr}", space.name())?;
            mask(out, *m)
        }
        InstData::Store {
            space,
            addr,
            value,
            mask: m,
        } => {
            write!(out, "store {} {addr}, {value}", space.name())?;
            mask(out, *m)
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
                "atomic_rmw {} {} {addr}, {value}",
                op.name(),
                space.name()
            )?;
            mask(out, *m)
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
                "atomic_cas {} {addr}, {expected}, {replacement}",
                space.name()
            )?;
            mask(out, *m)
        }
        InstData::Barrier => out.write_str("barrier"),
        InstData::Call {
            func,
            args,
            mask: m,
        } => {
            write!(out, "call @{}(", module.functions[*func].name)?;
            list(out, args)?;
            out.push(')');
            mask(out, *m)
        }
        InstData::Print {
            format,
            args,
            mask: m,
        } => {
            write!(out, "print {format}(")?;
            list(out, args)?;
            out.push(')');
            mask(out, *m)
        }
        InstData::Trap { code } => write!(out, "trap {}", code.name()),
        InstData::Jump { dest } => {
            out.push_str("jump ");
            block_call(out, dest)
        }
        InstData::Brif {
            cond,
            then_dest,
            else_dest,
        } => {
            write!(out, "brif {cond}, ")?;
            block_call(out, then_dest)?;
            out.push_str(", ");
            block_call(out, else_dest)
        }
        InstData::Return { value } => match value {
            Some(v) => write!(out, "return {v}"),
            None => out.write_str("return"),
        },
    }
}
