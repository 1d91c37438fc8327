//! `spmdc bench regdem`: register demotion to shared memory (RegDem, paper 001)
//! on the register-limited kernels of `tests/regdem_bench/`
//! (`examples/suites/regdem.toml`; this module is the suite's `regdem` layout hook:
//! the exhaustive search over allocations cannot be written as data).
//!
//! For each kernel, at the launch its header suggests, `--regalloc auto` lists the
//! allocations it weighs ([`dac_gpu::regdem::allocate`]): the build under the
//! machine's register limit, spilling to local memory only if the limit is too small
//! (the *baseline*, what nvcc gives without `-maxrregcount`), and for the nearest
//! occupancy cliffs below its register count the kernel spilled to local memory,
//! demoted to shared memory, and mixed. Every one of them runs in
//! the timing model, and each run's buffers must equal the interpreter's bit for bit.
//! A row per allocation gives its registers, shared bytes, blocks per SM, cycles and
//! predicted cycles, and marks the predictor's choice and the fastest (the
//! exhaustive search's choice).
//!
//! A summary row per kernel compares:
//! * `demoted/local`: the fastest demoted (shared or mixed) allocation against the
//!   fastest local-spilling one at the same cliffs (cycles of local over demoted);
//! * `choice/base`: the predictor's choice against the baseline (no demotion);
//! * `choice/best`: the predictor's choice against the exhaustive best (1 = found it).
//!
//! Geomean rows combine them.

use super::dac::geomean;
use super::gpu::compare;
use super::record::{stats_of, Check, RunRecord, Stat, Variant};
use super::run::describe;
use super::{Cell, Table};
use crate::back::dac_gpu::regdem::Candidate;
use crate::back::dac_gpu::{self, DacRunOptions};
use crate::driver::{self, FrontResult, RunRequest};
use crate::launch::RunResult;

/// The table's columns.
pub const COLUMNS: &[&str] = &[
    "kernel",
    "variant",
    "budget",
    "registers",
    "shared B",
    "local spill B",
    "blocks/SM",
    "cycles",
    "predicted",
    "vs base",
    "choice",
    "fastest",
    "check",
];

/// A launch as a kernel's header suggests it (`// spmdc run FILE --entry ...`,
/// continued with `\`), without its `--print` options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeaderLaunch {
    pub entry: String,
    pub grid: Option<String>,
    pub block: Option<String>,
    pub dynamic_shared: Option<String>,
    pub args: Vec<String>,
}

/// The first `spmdc run` command of `text`'s comments.
pub fn header_launch(text: &str) -> Option<HeaderLaunch> {
    let mut lines = text.lines().map(|l| l.trim_start_matches("//").trim());
    let first = lines.find(|l| l.starts_with("spmdc run "))?;
    let mut command = first.to_string();
    while command.ends_with('\\') {
        command.pop();
        command.push(' ');
        command.push_str(lines.next()?);
    }
    let words = crate::launch::shell_words(&command);
    let mut launch = HeaderLaunch::default();
    let mut it = words.iter().skip(3); // spmdc run FILE
    while let Some(w) = it.next() {
        let value = || it.clone().next().cloned();
        match w.as_str() {
            "--entry" => launch.entry = value()?,
            "--grid" => launch.grid = value(),
            "--block" => launch.block = value(),
            "--dynamic-shared" => launch.dynamic_shared = value(),
            "--arg" => launch.args.push(value()?),
            "--print" => {}
            _ => continue,
        }
        it.next();
    }
    (!launch.entry.is_empty()).then_some(launch)
}

/// What one kernel's summary row and the geomeans need.
#[derive(Clone, Copy, Debug)]
struct Summary {
    /// Local cycles over demoted cycles (best of each), when both exist.
    demoted_vs_local: Option<f64>,
    /// Baseline cycles over the choice's.
    choice_vs_base: f64,
    /// Best cycles over the choice's (1: the predictor found the fastest).
    choice_vs_best: f64,
}

/// Times every allocation `--regalloc auto` weighs for `req`'s entry on `machine`
/// (a preset or file), each checked against `want` (the interpreter's result).
pub fn time_variants(
    front: &FrontResult,
    req: &RunRequest<'_>,
    machine_name: &str,
    want: &RunResult,
) -> Result<Vec<Variant>, String> {
    let machine = sim::gpu::GpuConfig::load(machine_name)?;
    let codegen = dac_gpu::Options {
        max_regs: machine
            .max_registers_per_thread
            .min(dac_gpu::alloc::MAX_BUDGET),
        predict: true,
        machine: machine.clone(),
        ..dac_gpu::Options::default()
    };
    let dopts = DacRunOptions {
        timing: true,
        config: machine_name.to_string(),
        codegen,
        ..DacRunOptions::default()
    };
    let codegen = dac_gpu::run::for_launch(&dopts.codegen, req);
    let auto = dac_gpu::run::compile(front, req.optimize, &codegen)
        .map_err(|e| describe("compile (auto)", e))?;
    let candidates = auto
        .program
        .kernels
        .iter()
        .position(|k| k.name == req.entry)
        .and_then(|k| auto.candidates.get(k).cloned())
        .unwrap_or_default();
    let mut variants = Vec::new();
    for c in candidates {
        let name = c.name();
        let result = timed(front, req, &dopts, &codegen, &c).map_err(|e| describe(&name, e))?;
        let mismatch = compare(want, &result);
        variants.push(Variant {
            name,
            placement: format!("{:?}", c.placement).to_lowercase(),
            budget: c.budget,
            registers: c.num_regs,
            spill_slots: c.spill_slots,
            demoted_slots: c.demoted_slots,
            predicted_blocks_per_sm: c.prediction.blocks_per_sm,
            predicted_cycles: c.prediction.cycles,
            check: if mismatch.is_some() {
                Check::Mismatch
            } else {
                Check::Ok
            },
            message: mismatch,
            stats: stats_of(&result),
        });
    }
    Ok(variants)
}

/// The table of the suite's records: per kernel, a row per variant and a summary;
/// then the geomean row.
pub fn table(records: &[RunRecord]) -> Table {
    let mut table = Table::new("regdem", COLUMNS);
    let mut summaries = Vec::new();
    for r in records {
        if r.check != Check::Ok {
            let mut row = vec![Cell::Text(r.kernel.clone()), Cell::Text("-".into())];
            row.resize(COLUMNS.len() - 1, Cell::Text("-".into()));
            row.push(Cell::Text("ERROR".into()));
            table.rows.push(row);
            continue;
        }
        let (rows, summary) = rows(&r.kernel, &r.variants);
        table.rows.extend(rows);
        summaries.extend(summary);
    }
    table.rows.push(geomean_row(&summaries));
    table
}

/// Per kernel whose runs matched, the fastest local-spilling allocation's cycles over
/// the fastest demoted one's (kernels with only one kind are left out).
pub fn demoted_over_local(records: &[RunRecord]) -> Vec<(String, f64)> {
    records
        .iter()
        .filter(|r| r.check == Check::Ok)
        .filter_map(|r| {
            Some((
                r.kernel.clone(),
                rows(&r.kernel, &r.variants).1?.demoted_vs_local?,
            ))
        })
        .collect()
}

/// Compiles `codegen` with candidate `c`'s budget and placement fixed, and runs it.
fn timed(
    front: &FrontResult,
    req: &RunRequest<'_>,
    dopts: &DacRunOptions,
    codegen: &dac_gpu::Options,
    c: &Candidate,
) -> Result<RunResult, driver::RunError> {
    let fixed = c.fixed(codegen);
    let compiled = dac_gpu::run::compile(front, req.optimize, &fixed)?;
    dac_gpu::run::run_compiled(front, &compiled, req, dopts)
}

fn cycles(v: &Variant) -> f64 {
    v.stats.get("cycles").map_or(f64::NAN, |s| s.as_f64())
}

fn stat(v: &Variant, key: &str) -> u64 {
    match v.stats.get(key) {
        Some(Stat::Count(n)) => *n,
        _ => 0,
    }
}

fn spills(v: &Variant) -> bool {
    v.spill_slots + v.demoted_slots > 0
}

fn demoted(v: &Variant) -> bool {
    v.demoted_slots > 0
}

/// The rows of one kernel: one per variant (the predictor's choice first, as the
/// candidates come), then its summary; its summary's numbers.
fn rows(name: &str, variants: &[Variant]) -> (Vec<Vec<Cell>>, Option<Summary>) {
    let ok = variants.iter().all(|v| v.check == Check::Ok);
    // The build without demotion: local spilling (if any) under the machine's limit.
    let top = variants.iter().map(|v| v.budget).max();
    let base = variants
        .iter()
        .find(|v| v.placement == "local" && Some(v.budget) == top);
    let best = variants
        .iter()
        .enumerate()
        .min_by(|a, b| cycles(a.1).total_cmp(&cycles(b.1)).then(a.0.cmp(&b.0)))
        .map(|(i, _)| i);
    let base_cycles = base.map_or(f64::NAN, cycles);
    let mut rows: Vec<Vec<Cell>> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| variant_row(name, v, base_cycles, i == 0, Some(i) == best))
        .collect();
    let (Some(choice), Some(best)) = (variants.first(), best) else {
        return (rows, None);
    };
    let fastest = |pick: fn(&Variant) -> bool| {
        variants
            .iter()
            .filter(|v| pick(v))
            .map(cycles)
            .min_by(f64::total_cmp)
    };
    let local = fastest(|v| spills(v) && !demoted(v));
    let demoted = fastest(demoted);
    let summary = Summary {
        demoted_vs_local: local.zip(demoted).map(|(l, d)| l / d),
        choice_vs_base: base_cycles / cycles(choice),
        choice_vs_best: cycles(&variants[best]) / cycles(choice),
    };
    rows.push(summary_row(name, &summary, ok));
    (rows, Some(summary))
}

fn variant_row(name: &str, v: &Variant, base: f64, choice: bool, fastest: bool) -> Vec<Cell> {
    let mark = |b: bool| Cell::Text(if b { "*" } else { "" }.into());
    vec![
        Cell::Text(name.into()),
        Cell::Text(v.name.clone()),
        Cell::Count(u64::from(v.budget)),
        Cell::Count(u64::from(v.registers)),
        Cell::Count(stat(v, "shared_bytes_per_block")),
        Cell::Count(stat(v, "spill_bytes")),
        Cell::Count(u64::from(v.predicted_blocks_per_sm)),
        Cell::Count(stat(v, "cycles")),
        Cell::Count(v.predicted_cycles.round() as u64),
        Cell::Real(base / cycles(v), 3),
        mark(choice),
        mark(fastest),
        Cell::Text(
            if v.check == Check::Ok {
                "ok"
            } else {
                "MISMATCH"
            }
            .into(),
        ),
    ]
}

/// A kernel's summary: the three ratios, in the `vs base` column's place and the
/// variant column's text.
fn summary_row(name: &str, s: &Summary, ok: bool) -> Vec<Cell> {
    let blank = || Cell::Text(String::new());
    let demoted = s
        .demoted_vs_local
        .map_or("no local spill to compare".to_string(), |r| {
            format!("demoted/local {r:.3}")
        });
    vec![
        Cell::Text(format!("{name}: summary")),
        Cell::Text(format!(
            "{demoted}; choice/base {:.3}; choice/best {:.3}",
            s.choice_vs_base, s.choice_vs_best
        )),
        blank(),
        blank(),
        blank(),
        blank(),
        blank(),
        blank(),
        blank(),
        Cell::Real(s.choice_vs_base, 3),
        blank(),
        blank(),
        Cell::Text(if ok { "ok" } else { "MISMATCH" }.into()),
    ]
}

fn geomean_row(summaries: &[Summary]) -> Vec<Cell> {
    let demoted: Vec<f64> = summaries
        .iter()
        .filter_map(|s| s.demoted_vs_local)
        .collect();
    let text = format!(
        "demoted/local {:.3} ({} kernels, best {:.3}); choice/base {:.3} (worst {:.3}); \
         choice/best {:.3}",
        geomean(demoted.iter().copied()),
        demoted.len(),
        demoted.iter().copied().fold(f64::NAN, f64::max),
        geomean(summaries.iter().map(|s| s.choice_vs_base)),
        summaries
            .iter()
            .map(|s| s.choice_vs_base)
            .fold(f64::NAN, f64::min),
        geomean(summaries.iter().map(|s| s.choice_vs_best)),
    );
    let mut row = vec![Cell::Text("geomean".into()), Cell::Text(text)];
    row.resize(COLUMNS.len(), Cell::Text(String::new()));
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_launch_is_read_with_its_continuations_and_quotes() {
        let text = "// Suggested launch:\n\
                    //   spmdc run tests/x.spmd --entry k --grid 4,2 \\\n\
                    //       --block 128 --arg n=8 --arg x='random(8,1,0,5)' \\\n\
                    //       --print x\n\
                    // Expected: ...\n";
        let l = header_launch(text).expect("a launch");
        assert_eq!(l.entry, "k");
        assert_eq!(l.grid.as_deref(), Some("4,2"));
        assert_eq!(l.block.as_deref(), Some("128"));
        assert_eq!(l.args, ["n=8", "x=random(8,1,0,5)"]);
        assert_eq!(header_launch("// no launch here\n"), None);
    }
}
