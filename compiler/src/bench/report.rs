//! Tables from run records. A suite's metrics name what each column shows; this
//! module knows the metrics ([`RUN_METRICS`], [`PAIR_METRICS`], and any statistic as
//! `stats.KEY`), checks a suite's list ([`check_metrics`]) and builds its table from
//! records alone ([`table`]), in the layout the suite asks for: one row per run, or
//! one row per kernel comparing two configurations with geomean rows (the `regdem`
//! hook builds its own).

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
    let mut out = Vec::new();
    for m in &file.metrics {
        out.push(check_metric(file.layout, m, at, configs)?);
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
    if !n.starts_with("stats.") && !known.contains(&n.as_str()) {
        let close = crate::diag::suggest::closest(n, known.iter().copied())
            .map(|c| format!("did you mean `{c}`? "))
            .unwrap_or_default();
        return Err(at(
            m.span(),
            format!("no metric `{n}` here"),
            &format!(
                "{close}metrics: {}, or stats.KEY for any statistic",
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
    if n == "change" && (t.of.is_none() || t.against.is_none()) {
        return Err(at(
            m.span(),
            "metric `change` needs `of` (a statistic) and `against` (a configuration)".into(),
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
                .map(|m| run_cell(m, r, records))
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

/// One run's cell for `m`; `all` are the suite's records (for `change`).
fn run_cell(m: &Metric, r: &RunRecord, all: &[RunRecord]) -> Cell {
    let real = |x: f64, d: usize| Cell::Real(x, m.decimals.unwrap_or(d));
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
            let busy = r.host.cpu_s.filter(|&c| c > 0.0).unwrap_or(r.host.wall_s);
            let of = m.of.as_deref().unwrap_or("dynamic_instructions");
            match r.stats.contains_key(of) {
                true => real(r.count(of) as f64 / busy.max(1e-9) / 1e6, 1),
                false => text("-"),
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
            Some(s) => real(s.as_f64(), 2),
            None => text("-"),
        },
    }
}

/// The change (%) of statistic `m.of` from the run of the same kernel, target and
/// size under configuration `m.against` to `r`.
fn change(m: &Metric, r: &RunRecord, all: &[RunRecord]) -> Option<f64> {
    let (of, against) = (m.of.as_deref()?, m.against.as_deref()?);
    let base = all.iter().find(|o| {
        o.kernel == r.kernel && o.target == r.target && o.size == r.size && o.config == against
    })?;
    let (b, x) = (base.count(of), r.count(of));
    (b > 0 && base.check != Check::Error).then(|| 100.0 * (x as f64 - b as f64) / b as f64)
}

/// A kernel at a size in the `compare` layout: its base and new runs.
struct Pair<'a> {
    base: Option<&'a RunRecord>,
    new: Option<&'a RunRecord>,
}

impl Pair<'_> {
    fn both(&self) -> Option<(&RunRecord, &RunRecord)> {
        let (b, n) = (self.base?, self.new?);
        (b.check == Check::Ok && n.check == Check::Ok).then_some((b, n))
    }

    fn any(&self) -> Option<&RunRecord> {
        self.base.or(self.new)
    }
}

/// New warp instructions over base, and base cycles over new.
fn ratios(b: &RunRecord, n: &RunRecord) -> (f64, f64) {
    (
        total_warp_instructions(n) as f64 / b.count("warp_instructions").max(1) as f64,
        b.count("cycles") as f64 / n.count("cycles").max(1) as f64,
    )
}

/// The `compare` layout's pairs, in the suite's order (kernel, then size).
fn pairs<'a>(suite: &Suite, records: &'a [RunRecord]) -> Vec<Pair<'a>> {
    let Some((base, new, ..)) = &suite.compare else {
        return Vec::new();
    };
    let mut out: Vec<Pair<'a>> = Vec::new();
    let mut keys: Vec<(&str, u64)> = Vec::new();
    for r in records {
        let key = (r.kernel.as_str(), r.size);
        let i = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
            keys.push(key);
            out.push(Pair {
                base: None,
                new: None,
            });
            keys.len() - 1
        });
        if &r.config == base {
            out[i].base = Some(r);
        } else if &r.config == new {
            out[i].new = Some(r);
        }
    }
    out
}

/// Speedups of the `compare` layout's kernels (for the chart): name and base cycles
/// over new cycles, for pairs that both ran and matched.
pub fn speedups(suite: &Suite, records: &[RunRecord]) -> Vec<(String, f64)> {
    pairs(suite, records)
        .iter()
        .filter_map(|p| {
            let (b, n) = p.both()?;
            let name = if suite.sizes.len() > 1 {
                format!("{} @{}", b.kernel, b.size)
            } else {
                b.kernel.clone()
            };
            Some((name, ratios(b, n).1))
        })
        .collect()
}

fn compare_table(suite: &Suite, records: &[RunRecord]) -> Table {
    let mut t = Table::new(&suite.name, &titles(suite));
    let pairs = pairs(suite, records);
    for p in &pairs {
        t.rows.push(
            suite
                .metrics
                .iter()
                .map(|m| pair_cell(suite, m, p, records))
                .collect(),
        );
    }
    let Some((_, _, groups, all)) = &suite.compare else {
        return t;
    };
    let rows = groups
        .iter()
        .map(|(c, l)| (Some(c.as_str()), l.as_str()))
        .chain(all.as_deref().map(|l| (None, l)));
    for (class, label) in rows {
        let picked: Vec<(&RunRecord, &RunRecord)> = pairs
            .iter()
            .filter_map(Pair::both)
            .filter(|(b, _)| class.is_none_or(|c| b.class.as_deref() == Some(c)))
            .collect();
        t.rows.push(
            suite
                .metrics
                .iter()
                .enumerate()
                .map(|(i, m)| summary_cell(m, i, label, &picked))
                .collect(),
        );
    }
    t
}

fn pair_cell(suite: &Suite, m: &Metric, p: &Pair<'_>, all: &[RunRecord]) -> Cell {
    if let Some(c) = &m.config {
        let r = [p.base, p.new]
            .into_iter()
            .flatten()
            .find(|r| &r.config == c);
        return r.map_or_else(|| text("-"), |r| run_cell(m, r, all));
    }
    let Some(any) = p.any() else {
        return text("-");
    };
    let real = |x: f64, d: usize| Cell::Real(x, m.decimals.unwrap_or(d));
    match m.name.as_str() {
        "kernel" | "class" | "size" | "threads" => run_cell(m, any, all),
        "check" => {
            let worst = [p.base, p.new]
                .into_iter()
                .map(|r| r.map_or(&Check::Error, |r| &r.check))
                .max_by_key(|c| match c {
                    Check::Ok => 0,
                    Check::Mismatch => 1,
                    Check::Error => 2,
                })
                .unwrap_or(&Check::Error);
            let _ = suite;
            text(check_text(worst))
        }
        "speedup" => p
            .both()
            .map_or_else(|| text("-"), |(b, n)| real(ratios(b, n).1, 3)),
        "reduction" => p.both().map_or_else(
            || text("-"),
            |(b, n)| real(100.0 * (1.0 - ratios(b, n).0), 1),
        ),
        _ => text("-"),
    }
}

/// A geomean row's cell: speedup and reduction as geomeans over the picked pairs,
/// `loads_decoupled` as their arithmetic mean (a geomean is 0 as soon as one kernel
/// decouples nothing), the count of kernels in the `class` column.
fn summary_cell(m: &Metric, i: usize, label: &str, picked: &[(&RunRecord, &RunRecord)]) -> Cell {
    let real = |x: f64, d: usize| Cell::Real(x, m.decimals.unwrap_or(d));
    match (m.name.as_str(), &m.config) {
        _ if i == 0 => text(label),
        ("class", None) => text(format!("{} kernels", picked.len())),
        ("speedup", None) => real(geomean(picked.iter().map(|(b, n)| ratios(b, n).1)), 3),
        ("reduction", None) => real(
            100.0 * (1.0 - geomean(picked.iter().map(|(b, n)| ratios(b, n).0))),
            1,
        ),
        ("loads_decoupled", Some(_)) => {
            let pick = |(b, n): &(&RunRecord, &RunRecord)| {
                let r = if m.config.as_deref() == Some(b.config.as_str()) {
                    *b
                } else {
                    *n
                };
                let x = r.stat("loads_decoupled");
                if x.is_nan() {
                    0.0
                } else {
                    x
                }
            };
            let mean = picked.iter().map(pick).sum::<f64>() / picked.len().max(1) as f64;
            real(100.0 * mean, 1)
        }
        _ => text(""),
    }
}
