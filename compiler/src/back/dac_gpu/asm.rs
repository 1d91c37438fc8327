//! `spmdc --target dac-gpu --emit asm`: the program as `sim::gpu` assembly text
//! (what [`sim::gpu::parse`] reads back), with each source line as a `//` comment
//! before the first instruction it produced when the sources are given.

use std::fmt::Write;

use super::Compiled;
use crate::source::{SourceMap, Span};

/// The assembly of `c`, with source lines interleaved when `sources` is given, and
/// before each kernel that `--regalloc auto` allocated, the allocations it weighed
/// ([`super::regdem::remarks`]).
pub fn listing(c: &Compiled, sources: Option<&SourceMap>) -> String {
    let text = sim::gpu::print(&c.program);
    let mut out = String::new();
    // Index of the kernel being printed: one more at each `.entry`/`.func` header.
    let mut kernel: Option<usize> = None;
    let mut pc = 0usize;
    let mut last: Option<(u32, usize)> = None;
    for line in text.lines() {
        if line.starts_with(".entry") || line.starts_with(".func") {
            let k = kernel.map_or(0, |k| k + 1);
            kernel = Some(k);
            pc = 0;
            last = None;
            if let Some(candidates) = c.candidates.get(k) {
                out.push_str(&super::regdem::remarks(candidates));
            }
            if let Some(remarks) = c.shuffle_remarks.get(k) {
                out.push_str(remarks);
            }
        }
        let Some(map) = sources else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let is_inst = line.starts_with("    ") && !line.trim_start().starts_with('.');
        if is_inst {
            let span = kernel
                .and_then(|k| c.lines.get(k))
                .and_then(|l| l.get(pc).copied())
                .flatten();
            if let Some(s) = span {
                source_comment(&mut out, map, s, &mut last);
            }
            pc += 1;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn source_comment(out: &mut String, map: &SourceMap, s: Span, last: &mut Option<(u32, usize)>) {
    let Some((_, file)) = map.files().find(|(id, _)| *id == s.file) else {
        return;
    };
    let line = file.line_index(s.start);
    if *last == Some((s.file.0, line)) {
        return;
    }
    *last = Some((s.file.0, line));
    if let Some(r) = file.line_range(line) {
        let text = file.text.get(r).unwrap_or("").trim();
        let _ = writeln!(out, "    // {}:{}: {}", file.name, line + 1, text);
    }
}
