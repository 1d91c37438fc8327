//! Terminal forms of profiles and traces: the source annotated per line, the
//! per-instruction listing (`--profile=asm`) and the step-by-step mask trace.

use std::fmt::Write;

use super::{Counts, SourceProfile, TraceListing};
use crate::source::{FileId, SourceMap};

/// The columns every profile row starts with: instructions, share of the total,
/// average active lanes, and on timing runs stall cycles.
fn counts_columns(out: &mut String, c: &Counts, total: u64, timing: bool) {
    let share = if total == 0 {
        0.0
    } else {
        100.0 * c.instructions as f64 / total as f64
    };
    let lanes = c
        .avg_active_lanes
        .map_or_else(|| "-".to_string(), |l| format!("{l:.1}"));
    let _ = write!(out, "{:>10} {:>6.1}% {:>6}", c.instructions, share, lanes);
    if timing {
        let _ = write!(out, " {:>10}", c.stall_cycles());
    }
}

fn blank_columns(out: &mut String, timing: bool) {
    let _ = write!(out, "{:>10} {:>7} {:>6}", "", "", "");
    if timing {
        let _ = write!(out, " {:>10}", "");
    }
}

/// `  [dcache 40, dependency 2]` for the stall causes with cycles, or nothing.
fn stall_detail(c: &Counts) -> String {
    let parts: Vec<String> = c
        .stalls
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("  [{}]", parts.join(", "))
    }
}

fn header(out: &mut String, p: &SourceProfile, what: &str) {
    let timing = !p.stall_causes.is_empty();
    let _ = write!(
        out,
        "profile on {}: {} dynamic instructions, {} lanes",
        p.target, p.totals.instructions, p.lanes
    );
    if timing {
        let _ = write!(out, ", {} stall cycles", p.totals.stall_cycles());
    }
    let _ = writeln!(out);
    let _ = write!(out, "{:>10} {:>7} {:>6}", "instrs", "share", "lanes");
    if timing {
        let _ = write!(out, " {:>10}", "stalls");
    }
    let _ = writeln!(out, "  {what}");
}

/// The source annotated per line: every line of `main`, then executed lines of other
/// files, then the work with no source line, then the totals.
pub fn annotated_source(p: &SourceProfile, sources: &SourceMap, main: FileId) -> String {
    let timing = !p.stall_causes.is_empty();
    let total = p.totals.instructions;
    let mut out = String::new();
    header(&mut out, p, "line  source");
    let main_file = sources.get(main);
    for (i, text) in main_file.text.lines().enumerate() {
        let line = i as u32 + 1;
        let row = p
            .lines
            .iter()
            .find(|l| l.line == line && l.file == main_file.name);
        match row {
            Some(r) => counts_columns(&mut out, &r.counts, total, timing),
            None => blank_columns(&mut out, timing),
        }
        let detail = row.map(|r| stall_detail(&r.counts)).unwrap_or_default();
        let _ = writeln!(out, "  {line:>4}  {text}{detail}");
    }
    let others: Vec<_> = p
        .lines
        .iter()
        .filter(|l| l.file != main_file.name)
        .collect();
    if !others.is_empty() {
        let _ = writeln!(out, "in other files:");
        for r in others {
            counts_columns(&mut out, &r.counts, total, timing);
            let text = line_text(sources, &r.file, r.line);
            let _ = writeln!(
                out,
                "  {}:{}  {}{}",
                r.file,
                r.line,
                text.trim(),
                stall_detail(&r.counts)
            );
        }
    }
    if !p.other.is_empty() {
        let _ = writeln!(out, "without a source line:");
        for b in &p.other {
            counts_columns(&mut out, &b.counts, total, timing);
            let _ = writeln!(out, "  {}{}", b.what, stall_detail(&b.counts));
        }
    }
    counts_columns(&mut out, &p.totals, total, timing);
    let _ = writeln!(out, "  total{}", stall_detail(&p.totals));
    out
}

/// The text of line `line` (one-based) of the file named `file`.
fn line_text(sources: &SourceMap, file: &str, line: u32) -> String {
    sources
        .files()
        .find(|(_, f)| f.name == file)
        .and_then(|(_, f)| {
            let range = f.line_range(line.checked_sub(1)? as usize)?;
            f.text.get(range).map(str::to_string)
        })
        .unwrap_or_default()
}

/// Every instruction that ran, in code order, under its function's name.
pub fn instruction_listing(p: &SourceProfile) -> String {
    let timing = !p.stall_causes.is_empty();
    let total = p.totals.instructions;
    let mut out = String::new();
    header(&mut out, p, "address     line  instruction");
    let mut function: Option<&str> = None;
    for i in &p.instructions {
        if function != Some(i.function.as_str()) {
            let _ = writeln!(out, "{}:", display_name(&i.function));
            function = Some(&i.function);
        }
        counts_columns(&mut out, &i.counts, total, timing);
        let line = i.line.map_or_else(|| "-".to_string(), |l| l.to_string());
        let _ = writeln!(
            out,
            "  {:<10} {:>5}  {}{}",
            address_text(&p.target, i.address),
            line,
            i.text,
            stall_detail(&i.counts)
        );
    }
    if p.totals.instructions
        != p.instructions
            .iter()
            .map(|i| i.counts.instructions)
            .sum::<u64>()
    {
        let _ = writeln!(out, "(outside the code:)");
        for b in p.other.iter().filter(|b| b.what.starts_with("outside")) {
            counts_columns(&mut out, &b.counts, total, timing);
            let _ = writeln!(out, "  {}", b.what);
        }
    }
    counts_columns(&mut out, &p.totals, total, timing);
    let _ = writeln!(out, "  total");
    out
}

/// A byte address in hex on Nyuzi; an instruction's index elsewhere.
fn address_text(target: &str, address: u64) -> String {
    if target == "nyuzi" {
        format!("{address:#010x}")
    } else {
        address.to_string()
    }
}

fn display_name(function: &str) -> &str {
    if function.is_empty() {
        "(unknown)"
    } else {
        function
    }
}

/// The trace, one line per step: step, address, line, the lanes (`#` on, `_` off,
/// lane 0 first; `scalar` for an instruction without lanes) and the instruction.
pub fn trace_listing(t: &TraceListing) -> String {
    let mut out = String::new();
    let width = t.lanes.max(6) as usize;
    let _ = writeln!(
        out,
        "trace on {}: {} {}, {} steps{}",
        t.target,
        t.unit_kind,
        t.unit,
        t.steps.len(),
        if t.truncated {
            format!(" (stopped at --trace-limit {})", t.limit)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "{:>6}  {:<10}  {:>5}  {:<width$}  instruction",
        "step", "address", "line", "lanes"
    );
    if t.steps.is_empty() {
        let _ = writeln!(
            out,
            "({} {} ran no instruction: the launch has no such {0})",
            t.unit_kind, t.unit
        );
    }
    let mut function: Option<&str> = None;
    for s in &t.steps {
        if function != Some(s.function.as_str()) {
            let _ = writeln!(out, "{}:", display_name(&s.function));
            function = Some(&s.function);
        }
        let line = s.line.map_or_else(|| "-".to_string(), |l| l.to_string());
        let lanes = s.mask.as_deref().unwrap_or("scalar");
        let _ = writeln!(
            out,
            "{:>6}  {:<10}  {:>5}  {:<width$}  {}",
            s.step,
            address_text(&t.target, s.address),
            line,
            lanes,
            s.text
        );
    }
    out
}
