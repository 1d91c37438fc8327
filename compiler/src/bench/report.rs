//! Tables from run records. A suite's metrics name what each column shows; this
//! module knows the metrics ([`RUN_METRICS`], [`PAIR_METRICS`], any statistic as
//! `stats.KEY` and any of a kernel's constants as `data.KEY`), checks a suite's list
//! ([`check_metrics`]) and builds its table from the records and the suite file alone
//! ([`table`]), in the layout the suite asks for: one row per run, or one row per
//! kernel comparing its configurations with geomean rows (the `regdem` hook builds
//! its own).

use super::dac::geomean;
use super::record::{Check, RunRecord};
use super::suite::{Layout, Metric, MetricSpec, MetricTable, Suite, SuiteFile};
use super::{BenchError, Cell, Table};

/// Metrics of one run (any layout; in `compare` with a `config`).
pub const RUN_METRICS: &[&str] = &[
    "kernel",
    "class",
    "target",
    "config",
    "size",
    "threads",
    "check",
    "occupancy",
    "wall_s",
    "cpu_s",
    "compile_ms",
    "per_second",
    "sim_rate",
    "scalar_instructions",
    "total_warp_instructions",
    "loads_decoupled",
    "stall_memory_share",
    "stall_dependency_share",
    "stall_barrier_share",
    "stall_queue_share",
    "stall_idle_share",
    "change",
    "speedup",
    "reduction",
    "uniform_share",
    "analysis_share",
];

/// Metrics of a pair of runs (`compare` layout, without a `config`).
pub const PAIR_METRICS: &[&str] = &[
    "kernel",
    "class",
    "size",
    "threads",
    "check",
    "speedup",
    "reduction",
];

/// The stall counters the `*_share` metrics and the stall chart divide.
pub const STALLS: &[&str] = &[
    "stall_memory",
    "stall_dependency",
    "stall_barrier",
    "stall_queue",
    "stall_idle",
];

type Locate<'a> = dyn Fn(std::ops::Range<usize>, String, &str) -> BenchError + 'a;

/// The suite's metrics, checked: known names, and `config`/`against` naming one of
/// `configs`.
pub fn check_metrics(
    file: &SuiteFile,
    at: &Locate<'_>,
    configs: &[&str],
) -> Result<Vec<Metric>, BenchError> {
    if file.layout == Layout::Regdem {
        if let Some(m) = file.metrics.first() {
            return Err(at(
                m.span(),
                "the `regdem` layout has fixed columns".into(),
                "remove `metrics`",
            ));
        }
        return Ok(Vec::new());
    }
    let data: Vec<&str> = file
        .kernels
        .iter()
        .flat_map(|k| k.data.keys().map(String::as_str))
        .collect();
    let mut out = Vec::new();
    for m in &file.metrics {
        out.push(check_metric(file.layout, m, at, configs, &data)?);
    }
    if out.is_empty() {
        return Err(at(
            0..0,
            "the suite lists no metrics".into(),
            "add metrics = [...]",
        ));
    }
    Ok(out)
}

fn check_metric(
    layout: Layout,
    m: &MetricSpec,
    at: &Locate<'_>,
    configs: &[&str],
    kernel_data: &[&str],
) -> Result<Metric, BenchError> {
    let help = "a metric is a name or { name, title, decimals, config, of, against }";
    let t: MetricTable = match m.get_ref() {
        toml::Value::String(name) => MetricTable {
            name: name.clone(),
            ..MetricTable::default()
        },
        v @ toml::Value::Table(_) => v
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| at(m.span(), e.message().trim().to_string(), help))?,
        _ => return Err(at(m.span(), "not a metric".into(), help)),
    };
    for c in [&t.config, &t.against].into_iter().flatten() {
        if !configs.contains(&c.as_str()) {
            return Err(at(
                m.span(),
                format!("no configuration `{c}`"),
                &format!("configurations: {}", configs.join(", ")),
            ));
        }
    }
    let known: &[&str] = match (layout, &t.config) {
        (Layout::Compare, None) => PAIR_METRICS,
        _ => RUN_METRICS,
    };
    let n = &t.name;
    if let Some(key) = n.strip_prefix("data.") {
        if !kernel_data.contains(&key) {
            return Err(at(
                m.span(),
                format!("no kernel has `{key}` in its `data`"),
                "a `data.KEY` metric shows the `data = { KEY = ... }` of each [[kernel]]",
            ));
        }
    } else if !n.starts_with("stats.") && !known.contains(&n.as_str()) {
        let close = crate::diag::suggest::closest(n, known.iter().copied())
            .map(|c| format!("did you mean `{c}`? "))
            .unwrap_or_default();
        return Err(at(
            m.span(),
            format!("no metric `{n}` here"),
            &format!(
                "{close}metrics: {}, or stats.KEY for any statistic, or data.KEY for a \
                 kernel's constant",
                known.join(", ")
            ),
        ));
    }
    if n == "per_second" && t.of.is_none() {
        return Err(at(
            m.span(),
            "metric `per_second` needs `of` (a statistic)".into(),
            "e.g. { name = \"per_second\", of = \"lane_operations\" }",
        ));
    }
    let run_pair = known == RUN_METRICS && matches!(n.as_str(), "speedup" | "reduction");
    if run_pair && t.against.is_none() {
        return Err(at(
            m.span(),
            format!("metric `{n}` of a run needs `against` (a configuration)"),
            "e.g. { name = \"speedup\", config = \"all\", against = \"off\" }",
        ));
    }
    let needs_of = n == "change" || (run_pair && n == "reduction");
    if needs_of && (t.of.is_none() || t.against.is_none()) {
        return Err(at(
            m.span(),
            format!("metric `{n}` needs `of` (a statistic) and `against` (a configuration)"),
            "e.g. { name = \"change\", of = \"vector_instructions\", against = \"base\" }",
        ));
    }
    Ok(Metric {
        title: t.title.clone().unwrap_or_else(|| n.clone()),
        name: t.name,
        config: t.config,
        decimals: t.decimals,
        of: t.of,
        against: t.against,
    })
}

/// The table of `records` (in the suite's order) as the suite lays it out.
pub fn table(suite: &Suite, records: &[RunRecord]) -> Table {
    let mut t = match suite.layout {
        Layout::Runs => runs_table(suite, records),
        Layout::Compare => compare_table(suite, records),
        Layout::Regdem => super::regdem::table(records),
    };
    t.suite = suite.name.clone();
    t.failures = failures(records);
    t
}

/// Every run that failed, as one line each.
pub fn failures(records: &[RunRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for r in records {
        if r.check != Check::Ok {
            out.push(format!(
                "{} ({}, T = {}): {}",
                r.kernel,
                r.config,
                r.size,
                r.message.as_deref().unwrap_or("failed")
            ));
        }
        for v in r.variants.iter().filter(|v| v.check != Check::Ok) {
            out.push(format!(
                "{} ({}): {}",
                r.kernel,
                v.name,
                v.message.as_deref().unwrap_or("failed")
            ));
        }
    }
    out
}

fn titles(suite: &Suite) -> Vec<&str> {
    suite.metrics.iter().map(|m| m.title.as_str()).collect()
}

fn runs_table(suite: &Suite, records: &[RunRecord]) -> Table {
    let mut t = Table::new(&suite.name, &titles(suite));
    for r in records {
        t.rows.push(
            suite
                .metrics
                .iter()
                .map(|m| run_cell(suite, m, r, records))
                .collect(),
        );
    }
    t
}

fn text(s: impl Into<String>) -> Cell {
    Cell::Text(s.into())
}

fn check_text(c: &Check) -> &'static str {
    match c {
        Check::Ok => "ok",
        Check::Mismatch => "MISMATCH",
        Check::Error => "ERROR",
    }
}

/// The stall counters as shares (%) of all scheduler cycles (issue + stalls).
pub fn stall_shares(r: &RunRecord) -> [f64; 5] {
    let total = (r.count("issue_cycles") + STALLS.iter().map(|k| r.count(k)).sum::<u64>()).max(1);
    let mut out = [0.0; 5];
    for (o, k) in out.iter_mut().zip(STALLS) {
        *o = 100.0 * r.count(k) as f64 / total as f64;
    }
    out
}

/// Affine + non-affine warp instructions when the run has an affine stream.
pub fn total_warp_instructions(r: &RunRecord) -> u64 {
    if r.stats.contains_key("total_warp_instructions") {
        r.count("total_warp_instructions")
    } else {
        r.count("warp_instructions")
    }
}

/// One run's cell for `m`; `all` are the suite's records (for the metrics `against`
/// another configuration).
fn run_cell(suite: &Suite, m: &Metric, r: &RunRecord, all: &[RunRecord]) -> Cell {
    let real = |x: f64, d: usize| Cell::Real(x, m.decimals.unwrap_or(d));
    if let Some(key) = m.name.strip_prefix("data.") {
        return data_cell(suite, &r.kernel, key, m.decimals);
    }
    if r.check == Check::Error
        && !matches!(
            m.name.as_str(),
            "kernel" | "class" | "target" | "config" | "size" | "threads" | "check"
        )
    {
        return text("-");
    }
    match m.name.as_str() {
        "kernel" => text(&r.kernel),
        "class" => text(r.class.clone().unwrap_or_default()),
        "target" => text(&r.target),
        "config" => text(&r.config),
        "size" => Cell::Count(r.size),
        "threads" => r.launch.threads.map_or_else(|| text("-"), Cell::Count),
        "check" => text(check_text(&r.check)),
        "occupancy" => text(format!(
            "{:.2} / {:.2}",
            r.stat("achieved_occupancy"),
            r.stat("theoretical_occupancy")
        )),
        "wall_s" => real(r.host.wall_s, 2),
        "cpu_s" => real(r.host.cpu_s.unwrap_or(f64::NAN), 2),
        "compile_ms" => real(1e3 * r.host.compile_s, 1),
        "per_second" => {
            let of = m.of.as_deref().unwrap_or("dynamic_instructions");
            match r.millions_per_second(of) {
                Some(rate) => real(rate, 1),
                None => text("-"),
            }
        }
        "sim_rate" => {
            let busy = r.host.cpu_s.filter(|&c| c > 0.0).unwrap_or(r.host.wall_s);
            real(
                r.count("thread_instructions") as f64 / busy.max(1e-9) / 1e6,
                1,
            )
        }
        "scalar_instructions" => Cell::Count(match r.target.as_str() {
            "nyuzi" => r.count("scalar_instructions"),
            _ => r.count("uniform_instructions"),
        }),
        "total_warp_instructions" => Cell::Count(total_warp_instructions(r)),
        "loads_decoupled" => {
            let x = r.stat("loads_decoupled");
            real(100.0 * if x.is_nan() { 0.0 } else { x }, 1)
        }
        "change" => change(m, r, all).map_or_else(|| text("-"), |c| text(format!("{c:+.1}%"))),
        "reduction" => change(m, r, all).map_or_else(|| text("-"), |c| real(0.0 - c, 1)),
        "speedup" => against(m, r, all)
            .filter(|b| b.check == Check::Ok && r.check == Check::Ok)
            .map_or_else(|| text("-"), |b| real(cycle_ratio(b, r), 3)),
        "uniform_share" => r
            .share
            .map_or_else(|| text("-"), |s| real(s.uniform_percent, 1)),
        "analysis_share" => r
            .share
            .map_or_else(|| text("-"), |s| real(s.analysis_percent, 1)),
        n if n.ends_with("_share") => {
            let i = STALLS
                .iter()
                .position(|s| n.strip_suffix("_share") == Some(s));
            i.map_or_else(|| text("-"), |i| real(stall_shares(r)[i], 1))
        }
        n => match r.stats.get(n.strip_prefix("stats.").unwrap_or(n)) {
            Some(super::record::Stat::Count(c)) => Cell::Count(*c),
            Some(super::record::Stat::Ratio(Some(x))) => real(*x, 2),
            // Missing, or a ratio that is not a number (0 / 0).
            _ => text("-"),
        },
    }
}

/// Kernel `kernel`'s constant `key` (its `data` in the suite file), `-` without one.
fn data_cell(suite: &Suite, kernel: &str, key: &str, decimals: Option<usize>) -> Cell {
    let value = suite
        .kernels
        .iter()
        .find(|k| k.name == kernel)
        .and_then(|k| k.data.get(key));
    match value {
        Some(toml::Value::String(s)) => text(s),
        Some(toml::Value::Integer(n)) => {
            u64::try_from(*n).map_or_else(|_| text(n.to_string()), Cell::Count)
        }
        Some(toml::Value::Float(x)) => Cell::Real(*x, decimals.unwrap_or(2)),
        Some(other) => text(other.to_string()),
        None => text("-"),
    }
}

/// The run of `r`'s kernel and size under configuration `m.against`: on `r`'s target
/// and machine when the suite has one there (several targets may each have a
/// configuration of that name), else the first of that name.
pub fn against<'a>(m: &Metric, r: &RunRecord, all: &'a [RunRecord]) -> Option<&'a RunRecord> {
    let against = m.against.as_deref()?;
    let mut named = all
        .iter()
        .filter(|o| o.kernel == r.kernel && o.size == r.size && o.config == against);
    let first = named.clone().next();
    named
        .find(|o| o.target == r.target && o.machine == r.machine)
        .or(first)
}

/// The change (%) of statistic `m.of` from the run of the same kernel and size under
/// configuration `m.against` to `r`.
fn change(m: &Metric, r: &RunRecord, all: &[RunRecord]) -> Option<f64> {
    let of = m.of.as_deref()?;
    let base = against(m, r, all)?;
    let (b, x) = (base.count(of), r.count(of));
    (b > 0 && base.check != Check::Error).then(|| 100.0 * (x as f64 - b as f64) / b as f64)
}

/// Base cycles over new.
fn cycle_ratio(base: &RunRecord, new: &RunRecord) -> f64 {
    base.count("cycles") as f64 / new.count("cycles").max(1) as f64
}

/// A kernel at a size in the `compare` layout: its runs, one per configuration.
struct Row<'a> {
    runs: Vec<&'a RunRecord>,
}

impl<'a> Row<'a> {
    fn run(&self, config: &str) -> Option<&'a RunRecord> {
        self.runs.iter().copied().find(|r| r.config == config)
    }

    /// The runs of `base` and `new`, when both ran and matched.
    fn both(&self, base: &str, new: &str) -> Option<(&'a RunRecord, &'a RunRecord)> {
        let (b, n) = (self.run(base)?, self.run(new)?);
        (b.check == Check::Ok && n.check == Check::Ok).then_some((b, n))
    }
}

/// New warp instructions over base.
fn warp_ratio(b: &RunRecord, n: &RunRecord) -> f64 {
    total_warp_instructions(n) as f64 / b.count("warp_instructions").max(1) as f64
}

/// What a pair's `reduction` divides, new over base: statistic `m.of` when given,
/// else the warp instructions ([`warp_ratio`]).
fn pair_ratio(m: &Metric, b: &RunRecord, n: &RunRecord) -> f64 {
    match m.of.as_deref() {
        Some(of) => n.stat(of) / b.stat(of),
        None => warp_ratio(b, n),
    }
}

/// The `compare` layout's rows, in the suite's order (kernel, then size).
fn rows<'a>(records: &'a [RunRecord]) -> Vec<Row<'a>> {
    let mut out: Vec<Row<'a>> = Vec::new();
    let mut keys: Vec<(&str, u64)> = Vec::new();
    for r in records {
        let key = (r.kernel.as_str(), r.size);
        match keys.iter().position(|k| *k == key) {
            Some(i) => out[i].runs.push(r),
            None => {
                keys.push(key);
                out.push(Row { runs: vec![r] });
            }
        }
    }
    out
}

/// The `[compare]` table's base and new configurations.
fn base_new(suite: &Suite) -> (&str, &str) {
    suite
        .compare
        .as_ref()
        .map_or(("", ""), |c| (c.base.as_str(), c.new.as_str()))
}

/// Speedups of the `compare` layout's kernels (for the chart): name and base cycles
/// over new cycles, for pairs that both ran and matched.
pub fn speedups(suite: &Suite, records: &[RunRecord]) -> Vec<(String, f64)> {
    let (base, new) = base_new(suite);
    rows(records)
        .iter()
        .filter_map(|row| {
            let (b, n) = row.both(base, new)?;
            let name = if suite.sizes.len() > 1 {
                format!("{} @{}", b.kernel, b.size)
            } else {
                b.kernel.clone()
            };
            Some((name, cycle_ratio(b, n)))
        })
        .collect()
}

fn compare_table(suite: &Suite, records: &[RunRecord]) -> Table {
    let mut t = Table::new(&suite.name, &titles(suite));
    let rows = rows(records);
    for row in &rows {
        t.rows.push(
            suite
                .metrics
                .iter()
                .map(|m| row_cell(suite, m, row, records))
                .collect(),
        );
    }
    let Some(super::suite::Comparison { groups, all, .. }) = &suite.compare else {
        return t;
    };
    let summaries = groups
        .iter()
        .map(|(c, l)| (Some(c.as_str()), l.as_str()))
        .chain(all.as_deref().map(|l| (None, l)));
    for (class, label) in summaries {
        let picked: Vec<&Row<'_>> = rows
            .iter()
            .filter(|row| {
                class.is_none_or(|c| row.runs.first().and_then(|r| r.class.as_deref()) == Some(c))
            })
            .collect();
        t.rows.push(
            suite
                .metrics
                .iter()
                .enumerate()
                .map(|(i, m)| summary_cell(suite, m, i, label, &picked))
                .collect(),
        );
    }
    t
}

fn row_cell(suite: &Suite, m: &Metric, row: &Row<'_>, all: &[RunRecord]) -> Cell {
    if let Some(c) = &m.config {
        return row
            .run(c)
            .map_or_else(|| text("-"), |r| run_cell(suite, m, r, all));
    }
    let Some(&any) = row.runs.first() else {
        return text("-");
    };
    let (base, new) = base_new(suite);
    let real = |x: f64, d: usize| Cell::Real(x, m.decimals.unwrap_or(d));
    match m.name.as_str() {
        "kernel" | "class" | "size" | "threads" => run_cell(suite, m, any, all),
        n if n.starts_with("data.") => run_cell(suite, m, any, all),
        "check" => {
            // The worst of the row's runs (a missing base or new run is an error).
            let missing =
                (row.run(base).is_none() || row.run(new).is_none()).then_some(&Check::Error);
            let worst = row
                .runs
                .iter()
                .map(|r| &r.check)
                .chain(missing)
                .max_by_key(|c| match c {
                    Check::Ok => 0,
                    Check::Mismatch => 1,
                    Check::Error => 2,
                })
                .unwrap_or(&Check::Error);
            text(check_text(worst))
        }
        "speedup" => row
            .both(base, new)
            .map_or_else(|| text("-"), |(b, n)| real(cycle_ratio(b, n), 3)),
        "reduction" => row.both(base, new).map_or_else(
            || text("-"),
            |(b, n)| real(100.0 * (1.0 - pair_ratio(m, b, n)), 1),
        ),
        _ => text("-"),
    }
}

/// A geomean row's cell over the `picked` rows of its class: `speedup` and
/// `reduction` as geomeans over the rows whose two runs (base and new, or `config` and
/// `against`) matched, `loads_decoupled` as the arithmetic mean over the rows whose
/// base and new matched (a geomean is 0 as soon as one kernel decouples nothing),
/// and the count of those rows in the `class` column.
fn summary_cell(suite: &Suite, m: &Metric, i: usize, label: &str, picked: &[&Row<'_>]) -> Cell {
    let real = |x: f64, d: usize| Cell::Real(x, m.decimals.unwrap_or(d));
    let (base, new) = base_new(suite);
    let pairs: Vec<(&RunRecord, &RunRecord)> = picked
        .iter()
        .filter_map(|row| match (&m.config, &m.against) {
            (Some(c), Some(a)) => row.both(a, c),
            _ => row.both(base, new),
        })
        .collect();
    match (m.name.as_str(), &m.config) {
        _ if i == 0 => text(label),
        ("class", None) => text(format!("{} kernels", pairs.len())),
        ("speedup", _) => real(geomean(pairs.iter().map(|(b, n)| cycle_ratio(b, n))), 3),
        ("reduction", None) => real(
            100.0 * (1.0 - geomean(pairs.iter().map(|(b, n)| pair_ratio(m, b, n)))),
            1,
        ),
        ("loads_decoupled", Some(c)) => {
            let value = |row: &&Row<'_>| {
                row.both(base, new)?;
                let x = row.run(c)?.stat("loads_decoupled");
                Some(if x.is_nan() { 0.0 } else { x })
            };
            let xs: Vec<f64> = picked.iter().filter_map(value).collect();
            real(100.0 * xs.iter().sum::<f64>() / xs.len().max(1) as f64, 1)
        }
        _ => text(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three configurations of one kernel in the `compare` layout, with a constant.
    fn suite() -> Suite {
        let text = r#"
name = "t"
description = "d"
layout = "compare"
metrics = [
    "kernel", "class",
    { name = "data.paper", title = "paper" },
    { name = "speedup", config = "b", against = "off", title = "b x" },
    { name = "reduction", of = "loads", config = "b", against = "off", title = "b loads" },
    { name = "reduction", of = "loads", title = "a loads" },
    "speedup", "check",
]
[compare]
base = "off"
new = "a"
all = "geomean"
[[config]]
name = "off"
target = "dac-gpu"
[[config]]
name = "a"
target = "dac-gpu"
[[config]]
name = "b"
target = "dac-gpu"
[[kernel]]
name = "k"
class = "c"
file = "saxpy_gpu.spmd"
entry = "saxpy_gpu"
data = { paper = "6/9" }
[[kernel]]
name = "j"
class = "c"
file = "saxpy_gpu.spmd"
entry = "saxpy_gpu"
"#;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        Suite::parse(text, "test", &dir).expect("the suite parses")
    }

    fn record(kernel: &str, config: &str, cycles: u64, loads: u64, check: Check) -> RunRecord {
        let stats = [("cycles", cycles), ("loads", loads)];
        RunRecord {
            check,
            ..RunRecord::sample(kernel, config, "dac-gpu", &stats)
        }
    }

    #[test]
    fn compare_rows_take_any_configuration_and_constants() {
        let s = suite();
        let records = [
            record("k", "off", 100, 10, Check::Ok),
            record("k", "a", 50, 5, Check::Ok),
            record("k", "b", 25, 4, Check::Ok),
            record("j", "off", 100, 10, Check::Ok),
            record("j", "a", 200, 10, Check::Ok),
            record("j", "b", 400, 10, Check::Mismatch),
        ];
        let t = table(&s, &records);
        let cell = |row, col: &str| t.cell(row, col).cloned();
        // Kernel k: the paper's figure, b against off (4x, 60% fewer loads), a over off.
        assert_eq!(cell(0, "paper"), Some(Cell::Text("6/9".into())));
        assert_eq!(cell(0, "speedup"), Some(Cell::Real(2.0, 3)));
        assert_eq!(cell(0, "b x"), Some(Cell::Real(4.0, 3)));
        assert_eq!(cell(0, "b loads"), Some(Cell::Real(60.0, 1)));
        // The pair's reduction of a statistic: a has half of off's loads on k.
        assert_eq!(cell(0, "a loads"), Some(Cell::Real(50.0, 1)));
        assert_eq!(cell(0, "check"), Some(Cell::Text("ok".into())));
        // Kernel j: no constant; b mismatched, so no speedup of b and a MISMATCH row.
        assert_eq!(cell(1, "paper"), Some(Cell::Text("-".into())));
        assert_eq!(cell(1, "b x"), Some(Cell::Text("-".into())));
        assert_eq!(cell(1, "check"), Some(Cell::Text("MISMATCH".into())));
        // The geomean row: a over off over both kernels (2 and 0.5), b over off over
        // the one whose two runs matched.
        assert_eq!(cell(2, "kernel"), Some(Cell::Text("geomean".into())));
        assert_eq!(cell(2, "class"), Some(Cell::Text("2 kernels".into())));
        assert_eq!(cell(2, "speedup"), Some(Cell::Real(1.0, 3)));
        assert_eq!(cell(2, "b x"), Some(Cell::Real(4.0, 3)));
        // 1 - the geomean of a's load ratios (0.5 on k, 1 on j).
        let Some(Cell::Real(loads, 1)) = cell(2, "a loads") else {
            panic!("no geomean of the loads");
        };
        assert!(
            (loads - 100.0 * (1.0 - 0.5f64.sqrt())).abs() < 1e-9,
            "{loads}"
        );
        assert_eq!(t.failures.len(), 1);
    }

    /// Two targets each with a configuration `base`: a run's change is against the
    /// `base` run of its own target.
    #[test]
    fn changes_are_against_the_same_targets_configuration() {
        let text = r#"
name = "t"
description = "d"
layout = "runs"
metrics = [
    "kernel", "target", "config",
    { name = "change", of = "loads", against = "base", title = "vs base" },
]
[[config]]
name = "base"
target = "nyuzi"
[[config]]
name = "new"
target = "nyuzi"
[[config]]
name = "base"
target = "dac-gpu"
[[config]]
name = "new"
target = "dac-gpu"
[[kernel]]
name = "k"
file = "saxpy_gpu.spmd"
entry = "saxpy_gpu"
"#;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let s = Suite::parse(text, "test", &dir).expect("the suite parses");
        let on = |target: &str, mut r: RunRecord| {
            r.target = target.into();
            r
        };
        let records = [
            on("nyuzi", record("k", "base", 1, 100, Check::Ok)),
            on("nyuzi", record("k", "new", 1, 50, Check::Ok)),
            record("k", "base", 1, 10, Check::Ok),
            record("k", "new", 1, 15, Check::Ok),
        ];
        let t = table(&s, &records);
        let cell = |row, col: &str| t.cell(row, col).cloned();
        let text = |s: &str| Some(Cell::Text(s.into()));
        assert_eq!(cell(1, "vs base"), text("-50.0%"));
        assert_eq!(cell(2, "vs base"), text("+0.0%"));
        assert_eq!(cell(3, "vs base"), text("+50.0%"));
    }
}
