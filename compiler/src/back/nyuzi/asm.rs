//! Listings of an [`Object`]: each function under its label, one instruction per line
//! in the toolchain's mnemonics ([`sim::nyuzi::Inst`]'s disassembler) with its word
//! offset; branch targets are shown as `.+N` word distances with the target offset in a
//! comment, relocations as the symbol they name, and, when the sources are given, each
//! source line before the first instruction it produced (from [`Object::lines`]).

use std::fmt::Write;

use sim::nyuzi::{BranchOp, Inst};

use super::emit::reloc_name;
use super::object::{Object, Reloc, RelocKind};
use crate::source::SourceMap;

/// The listing of `obj`, with source lines interleaved when `sources` is given.
pub fn listing(obj: &Object, sources: Option<&SourceMap>) -> String {
    let mut out = String::new();
    let mut line_ix = 0usize;
    let mut last_line: Option<(u32, usize)> = None;
    let reloc_at = relocs_by_word(obj);
    for sym in &obj.symbols {
        if let Some((_, remarks)) = obj.shuffle_remarks.iter().find(|(f, _)| *f == sym.name) {
            out.push_str(remarks);
        }
        let _ = writeln!(out, "{}:", sym.name);
        for at in sym.offset..sym.offset + sym.len {
            while line_ix < obj.lines.len() && obj.lines[line_ix].offset <= at {
                let e = obj.lines[line_ix];
                line_ix += 1;
                let Some(map) = sources else { continue };
                if e.offset != at {
                    continue;
                }
                let Some((_, file)) = map.files().find(|(id, _)| *id == e.span.file) else {
                    continue;
                };
                let line = file.line_index(e.span.start);
                if last_line == Some((e.span.file.0, line)) {
                    continue;
                }
                last_line = Some((e.span.file.0, line));
                if let Some(r) = file.line_range(line) {
                    let text = file.text.get(r).unwrap_or("").trim_end();
                    let _ = writeln!(out, "    # {}:{}: {}", file.name, line + 1, text.trim());
                }
            }
            let inst = obj.code[at as usize];
            let _ = write!(out, "{at:6}:  ");
            let reloc = reloc_at.get(at as usize).copied().flatten();
            match (inst, reloc) {
                (Inst::Branch { op, .. }, Some(r)) if r.at == at && r.kind == RelocKind::Branch => {
                    let _ = write!(
                        out,
                        "{} {}",
                        if op == BranchOp::Call { "call" } else { "b" },
                        reloc_name(&r.target)
                    );
                }
                (_, Some(r)) if r.kind == RelocKind::AbsHiLo => {
                    let part = if r.at == at { "hi" } else { "lo" };
                    let _ = write!(
                        out,
                        "{inst}    # {part}({}+{})",
                        reloc_name(&r.target),
                        r.addend
                    );
                }
                (Inst::Branch { op, offset, .. }, _)
                    if !matches!(op, BranchOp::Reg | BranchOp::CallReg | BranchOp::Eret) =>
                {
                    let target = i64::from(at) + i64::from(offset);
                    let _ = write!(out, "{inst}    # -> {target}");
                }
                _ => {
                    let _ = write!(out, "{inst}");
                }
            }
            out.push('\n');
        }
    }
    out
}

/// For each code word, the first relocation (in `obj.relocs`' order) that patches it:
/// one word, or two for a `hi`/`lo` pair. A table, not a search of every relocation
/// per word, which made listing a program with many calls quadratic.
fn relocs_by_word(obj: &Object) -> Vec<Option<&Reloc>> {
    let mut by_word = vec![None; obj.code.len()];
    for r in &obj.relocs {
        let words = if r.kind == RelocKind::AbsHiLo { 2 } else { 1 };
        for at in r.at..r.at + words {
            if let Some(slot @ None) = by_word.get_mut(at as usize) {
                *slot = Some(r);
            }
        }
    }
    by_word
}
