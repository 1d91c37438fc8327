//! SVG charts of a suite's records, drawn with plotters' SVG backend: text stays
//! `<text>` elements that the viewer renders, and plotters sizes it with its built-in
//! estimate, so no font library or system font is needed.
//!
//! * `speedup`: one horizontal bar per kernel (base cycles over new, `compare`
//!   layout) and a last bar for their geomean, with a rule at 1;
//! * `stalls`: per run, its scheduler cycles split into issue and each stall reason;
//! * `occupancy`: per run, achieved and theoretical occupancy;
//! * `sweep`: cycles against the thread target, one line per kernel and
//!   configuration (suites with several sizes);
//! * `change`: for the suite's first `change` metric, per kernel and target, the
//!   statistic under its `against` configuration over the first configuration's, with
//!   the geomean (the uniformity suite: vector instructions without the analysis over
//!   with it);
//! * `rates`: per run, millions of instructions simulated per CPU second (sim-speed).
//!
//! In the `regdem` layout, `speedup` is each kernel's fastest local-spilling cycles
//! over its fastest demoted allocation's, with the geomean.
//!
//! Bars are horizontal so that kernel names read as written.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::dac::geomean;
use super::record::{Check, RunRecord};
use super::report::{self, STALLS};
use super::suite::{Layout, Suite};

/// One chart: its file name (`NAME.svg`) and SVG text.
pub struct Chart {
    pub name: String,
    pub svg: String,
}

const COLORS: [RGBColor; 7] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
];

/// The charts `suite` asks for that its records can fill.
pub fn charts(suite: &Suite, records: &[RunRecord]) -> Vec<Chart> {
    let mut out = Vec::new();
    for name in &suite.charts {
        let svg = match name.as_str() {
            "speedup" if suite.layout == Layout::Regdem => demoted_over_local(&suite.name, records),
            "speedup" => speedup(&suite.name, &report::speedups(suite, records)),
            "change" => change(suite, records),
            "rates" => rates(&suite.name, records),
            "stalls" => stalls(&suite.name, records),
            "occupancy" => occupancy(&suite.name, records),
            _ => sweep(&suite.name, records),
        };
        if let Some(svg) = svg {
            out.push(Chart {
                name: name.clone(),
                svg,
            });
        }
    }
    out
}

/// A run's label: its kernel, and its configuration when the suite has several.
fn label(r: &RunRecord, records: &[RunRecord]) -> String {
    let several = records.iter().any(|o| o.config != r.config);
    let sized = records.iter().any(|o| o.size != r.size);
    let mut s = r.kernel.clone();
    if several {
        s += &format!(" ({} {})", r.target, r.config);
    }
    if sized {
        s += &format!(" @{}", r.size);
    }
    s
}

/// The timed runs that went well.
fn good(records: &[RunRecord]) -> Vec<&RunRecord> {
    records
        .iter()
        .filter(|r| r.check == Check::Ok && r.stats.contains_key("cycles"))
        .collect()
}

/// Draws a horizontal bar chart: one row per name, each a stack of `(value, color)`
/// pieces from 0; `rule` draws a vertical line at that value.
fn bars(
    title: &str,
    x_desc: &str,
    rows: &[(String, Vec<(f64, RGBColor)>)],
    legend: &[(&str, RGBColor)],
    rule: Option<f64>,
) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let xmax = rows
        .iter()
        .map(|(_, p)| p.iter().map(|x| x.0).sum::<f64>())
        .chain(rule)
        .fold(0.0, f64::max)
        .max(1e-9)
        // Room on the right for the legend, so that it covers no bar.
        * if legend.is_empty() { 1.08 } else { 1.4 };
    let longest = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(8);
    let height = 90 + 22 * rows.len() as u32 + 20 * legend.len() as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (860, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let n = rows.len();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(12 + 7 * longest as u32)
            .build_cartesian_2d(0f64..xmax, (0..n).into_segmented())
            .ok()?;
        let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        // Segment 0 is at the bottom: row i is drawn in segment n - 1 - i, so the
        // rows read from the top in their order.
        let name_of = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => names
                .get(n.wrapping_sub(i + 1))
                .map_or(String::new(), |s| s.to_string()),
            SegmentValue::Last => String::new(),
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&name_of)
            .x_desc(x_desc)
            .draw()
            .ok()?;
        for (row, (_, pieces)) in rows.iter().enumerate() {
            let i = n - 1 - row;
            let mut x0 = 0.0;
            let rects: Vec<_> = pieces
                .iter()
                .map(|&(v, color)| {
                    let r = Rectangle::new(
                        [
                            (x0, SegmentValue::Exact(i)),
                            (x0 + v, SegmentValue::Exact(i + 1)),
                        ],
                        color.filled(),
                    );
                    x0 += v;
                    let mut r = r;
                    r.set_margin(3, 3, 0, 0);
                    r
                })
                .collect();
            chart.draw_series(rects).ok()?;
        }
        if let Some(x) = rule {
            chart
                .draw_series(LineSeries::new(
                    [(x, SegmentValue::Exact(0)), (x, SegmentValue::Exact(n))],
                    BLACK.stroke_width(1),
                ))
                .ok()?;
        }
        for &(name, color) in legend {
            chart
                .draw_series(std::iter::empty::<Rectangle<(f64, SegmentValue<usize>)>>())
                .ok()?
                .label(name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
        }
        if !legend.is_empty() {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .ok()?;
        }
        root.present().ok()?;
    }
    Some(svg)
}

/// Speedup bars per kernel and their geomean.
pub fn speedup(suite: &str, speedups: &[(String, f64)]) -> Option<String> {
    ratios(
        &format!("{suite}: speedup (base cycles / new cycles)"),
        "speedup",
        speedups,
    )
}

/// One bar per row for a ratio, a last bar for their geomean, and a rule at 1.
fn ratios(title: &str, x_desc: &str, values: &[(String, f64)]) -> Option<String> {
    let values: Vec<&(String, f64)> = values.iter().filter(|v| v.1.is_finite()).collect();
    if values.is_empty() {
        return None;
    }
    let g = geomean(values.iter().map(|s| s.1));
    let mut rows: Vec<(String, Vec<(f64, RGBColor)>)> = values
        .iter()
        .map(|(k, s)| (k.clone(), vec![(*s, COLORS[0])]))
        .collect();
    rows.push((format!("geomean ({g:.3}x)"), vec![(g, COLORS[1])]));
    bars(title, x_desc, &rows, &[], Some(1.0))
}

/// RegDem's headline per kernel: the fastest local-spilling allocation's cycles over
/// the fastest demoted one's.
fn demoted_over_local(suite: &str, records: &[RunRecord]) -> Option<String> {
    ratios(
        &format!("{suite}: demotion over local spilling (local cycles / demoted cycles)"),
        "speedup of the fastest demoted allocation",
        &super::regdem::demoted_over_local(records),
    )
}

/// For the suite's first `change` metric (`of` a statistic, `against` a
/// configuration): per kernel and target, the statistic under `against` over the
/// statistic under the suite's first configuration (how many times fewer it takes).
fn change(suite: &Suite, records: &[RunRecord]) -> Option<String> {
    let m = suite.metrics.iter().find(|m| m.name == "change")?;
    let (of, against) = (m.of.as_deref()?, m.against.as_deref()?);
    let first = &suite.configs.first()?.name;
    let values: Vec<(String, f64)> = records
        .iter()
        .filter(|r| r.check == Check::Ok && &r.config == first && r.count(of) > 0)
        .filter_map(|r| {
            let base = report::against(m, r, records)?;
            let name = format!("{} ({})", r.kernel, r.target);
            Some((name, base.count(of) as f64 / r.count(of) as f64))
        })
        .collect();
    ratios(
        &format!("{}: {of}, {against} / {first}", suite.name),
        &format!("{of} under {against} over {first}"),
        &values,
    )
}

/// Millions of instructions simulated per CPU second, per run (interpreter: gang
/// instructions; simulators: machine or warp instructions).
fn rates(suite: &str, records: &[RunRecord]) -> Option<String> {
    let rows: Vec<(String, Vec<(f64, RGBColor)>)> = records
        .iter()
        .filter(|r| r.check == Check::Ok)
        .filter_map(|r| {
            let rate = r.millions_per_second("dynamic_instructions")?;
            let label = format!("{} {} {}", r.kernel, r.target, r.config);
            Some((label, vec![(rate, COLORS[0])]))
        })
        .collect();
    bars(
        &format!("{suite}: simulation rate"),
        "M instructions per CPU second",
        &rows,
        &[],
        None,
    )
}

/// Scheduler cycles by what each cycle did, as shares.
fn stalls(suite: &str, records: &[RunRecord]) -> Option<String> {
    let runs: Vec<&RunRecord> = good(records)
        .into_iter()
        .filter(|r| r.stats.contains_key("issue_cycles"))
        .collect();
    let rows: Vec<(String, Vec<(f64, RGBColor)>)> = runs
        .iter()
        .map(|r| {
            let shares = report::stall_shares(r);
            let issue = 100.0 - shares.iter().sum::<f64>();
            let mut pieces = vec![(issue.max(0.0), COLORS[2])];
            pieces.extend(
                shares
                    .iter()
                    .zip([0, 1, 3, 4, 6])
                    .map(|(s, c)| (*s, COLORS[c])),
            );
            (label(r, records), pieces)
        })
        .collect();
    let mut legend = vec![("issue", COLORS[2])];
    let names = ["memory", "dependency", "barrier", "queue", "idle"];
    debug_assert_eq!(names.len(), STALLS.len());
    legend.extend(
        names
            .iter()
            .zip([0, 1, 3, 4, 6])
            .map(|(n, c)| (*n, COLORS[c])),
    );
    bars(
        &format!("{suite}: scheduler cycles"),
        "% of scheduler cycles",
        &rows,
        &legend,
        None,
    )
}

/// Achieved occupancy (bar) and what is left to the theoretical (lighter bar).
fn occupancy(suite: &str, records: &[RunRecord]) -> Option<String> {
    let rows: Vec<(String, Vec<(f64, RGBColor)>)> = good(records)
        .iter()
        .filter(|r| r.stats.contains_key("achieved_occupancy"))
        .map(|r| {
            let (a, t) = (
                r.stat("achieved_occupancy"),
                r.stat("theoretical_occupancy"),
            );
            let light = RGBColor(174, 199, 232);
            (
                label(r, records),
                vec![(a, COLORS[0]), ((t - a).max(0.0), light)],
            )
        })
        .collect();
    bars(
        &format!("{suite}: occupancy"),
        "occupancy (achieved, then up to theoretical)",
        &rows,
        &[
            ("achieved", COLORS[0]),
            ("theoretical", RGBColor(174, 199, 232)),
        ],
        None,
    )
}

/// Cycles against the thread target, one line per kernel and configuration.
fn sweep(suite: &str, records: &[RunRecord]) -> Option<String> {
    let runs = good(records);
    // One line per (kernel, configuration): its (size, cycles) points.
    type Line = ((String, String), Vec<(f64, f64)>);
    let mut lines: Vec<Line> = Vec::new();
    for r in &runs {
        let key = (r.kernel.clone(), r.config.clone());
        let point = (r.size as f64, r.stat("cycles"));
        match lines.iter_mut().find(|l| l.0 == key) {
            Some(l) => l.1.push(point),
            None => lines.push((key, vec![point])),
        }
    }
    lines.retain(|l| l.1.len() > 1);
    if lines.is_empty() {
        return None;
    }
    let xmax = lines
        .iter()
        .flat_map(|l| &l.1)
        .map(|p| p.0)
        .fold(1.0, f64::max);
    let ymax = lines
        .iter()
        .flat_map(|l| &l.1)
        .map(|p| p.1)
        .fold(1.0, f64::max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (860, 520)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{suite}: cycles by thread target"),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..xmax * 1.05, 0f64..ymax * 1.08)
            .ok()?;
        chart
            .configure_mesh()
            .x_desc("thread target T")
            .y_desc("cycles")
            .draw()
            .ok()?;
        for (i, ((k, c), points)) in lines.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))
                .ok()?
                .label(format!("{k} ({c})"))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .ok()?;
        root.present().ok()?;
    }
    Some(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The speedup chart has its axes, one bar per kernel and the geomean bar.
    #[test]
    fn speedup_chart_has_a_bar_per_kernel_and_the_geomean() {
        let s = vec![
            ("saxpy".to_string(), 1.25),
            ("stencil".to_string(), 1.5),
            ("matmul".to_string(), 0.9),
        ];
        let svg = speedup("demo", &s).expect("a chart");
        assert!(svg.starts_with("<svg"), "{}", &svg[..60.min(svg.len())]);
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| t.split('>').nth(1)?.split('<').next())
            .map(str::trim)
            .collect();
        for k in ["saxpy", "stencil", "matmul", "geomean (1.191x)", "speedup"] {
            assert!(texts.contains(&k), "no label {k}: {texts:?}");
        }
        // The kernels read from the top in their order, the geomean last.
        let y = |k: &str| -> f64 {
            let t = svg
                .split("<text")
                .find(|t| t.contains(&format!(">\n{k}\n<")))
                .unwrap();
            let v = t.split("y=\"").nth(1).unwrap().split('"').next().unwrap();
            v.parse().unwrap()
        };
        assert!(y("saxpy") < y("stencil") && y("stencil") < y("matmul"));
        assert!(y("matmul") < y("geomean (1.191x)"));
        // One filled bar per kernel and the geomean's, in their colours.
        let blue = svg.matches(r##"fill="#1F77B4""##).count();
        let orange = svg.matches(r##"fill="#FF7F0E""##).count();
        assert_eq!((blue, orange), (3, 1), "{svg}");
        // The x axis is labelled with numbers (its ticks).
        assert!(texts.contains(&"1.0"), "no tick at 1: {texts:?}");
    }

    fn run(target: &str, config: &str, loads: u64) -> RunRecord {
        RunRecord::sample("k", config, target, &[("loads", loads)])
    }

    /// The `change` chart: one bar per kernel and target, the `against` run's statistic
    /// over the first configuration's, on the same target, and the geomean.
    #[test]
    fn change_chart_compares_each_target_with_its_own_baseline() {
        let text = r#"
name = "t"
description = "d"
layout = "runs"
charts = ["change"]
metrics = ["kernel", { name = "change", of = "loads", against = "base" }]
[[config]]
name = "new"
target = "nyuzi"
[[config]]
name = "base"
target = "nyuzi"
[[config]]
name = "new"
target = "dac-gpu"
[[config]]
name = "base"
target = "dac-gpu"
[[kernel]]
name = "k"
file = "saxpy_gpu.spmd"
entry = "saxpy_gpu"
"#;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let suite = Suite::parse(text, "test", &dir).expect("the suite parses");
        let records = [
            run("nyuzi", "new", 50),
            run("nyuzi", "base", 100),
            run("dac-gpu", "new", 10),
            run("dac-gpu", "base", 40),
        ];
        let charts = charts(&suite, &records);
        assert_eq!(charts.len(), 1);
        assert_eq!(charts[0].name, "change");
        let svg = &charts[0].svg;
        // 2x and 4x: the geomean is sqrt(8).
        for label in ["k (nyuzi)", "k (dac-gpu)", "geomean (2.828x)"] {
            assert!(svg.contains(label), "no {label}: {svg}");
        }
        let blue = svg.matches(r##"fill="#1F77B4""##).count();
        assert_eq!(blue, 2, "one bar per kernel and target");
    }
}
