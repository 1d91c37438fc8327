//! The readable `--stats` report: the statistics grouped in sections
//! ([`stats_catalog`](super::stats_catalog)), each under a readable name with its
//! unit, ratios as percentages and figures rounded for reading; with `--stats=full`
//! also tables per SM or core and per function. The exact values stay in the JSON.

use super::result::{Breakdown, StatValue, Stats};
use super::stats_catalog::{describe, Description, Form, Section};

/// One printed row of a section.
struct Row {
    label: String,
    value: String,
    note: String,
}

/// The report of `stats`: one block per section that has statistics, in section
/// order, every statistic in exactly one of them.
pub fn render(stats: &Stats) -> String {
    let described = described(stats);
    let stall_total: u64 = stats
        .iter()
        .filter(|(k, _)| k.starts_with("stall_"))
        .filter_map(|(_, v)| count(v))
        .sum();
    let mut blocks: Vec<(Section, Vec<Row>)> = Vec::new();
    for (key, value, d) in described {
        let mut note = d.unit.to_string();
        if key.starts_with("stall_") {
            note = stall_note(value, stall_total);
        }
        let row = Row {
            label: d.label,
            value: format_value(value, d.form),
            note,
        };
        match blocks.last_mut() {
            Some((s, rows)) if *s == d.section => rows.push(row),
            _ => blocks.push((d.section, vec![row])),
        }
    }
    let label_width = blocks
        .iter()
        .flat_map(|(_, rows)| rows.iter().map(|r| r.label.chars().count()))
        .max()
        .unwrap_or(0);
    let value_width = blocks
        .iter()
        .flat_map(|(_, rows)| rows.iter().map(|r| r.value.chars().count()))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (i, (section, rows)) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(section.title());
        out.push('\n');
        for r in rows {
            let line = format!(
                "  {:<label_width$}  {:>value_width$}  {}",
                r.label, r.value, r.note
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

/// The tables of a `--stats=full` report: one row per SM or core, one per function.
pub fn render_breakdown(b: &Breakdown) -> String {
    let mut out = String::new();
    if !b.units.is_empty() {
        let rows: Vec<(String, &Stats)> = b
            .units
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("{} {i}", b.unit_kind), s))
            .collect();
        out.push_str(&format!("\nPer {}\n", b.unit_kind));
        out.push_str(&table(&b.unit_kind, &rows));
    }
    if !b.functions.is_empty() {
        let rows: Vec<(String, &Stats)> = b.functions.iter().map(|(n, s)| (n.clone(), s)).collect();
        out.push_str("\nPer function\n");
        out.push_str(&table("function", &rows));
    }
    out
}

/// A table with a column per statistic (in report order) and a row per part.
fn table(first: &str, rows: &[(String, &Stats)]) -> String {
    let mut keys: Vec<(String, Description)> = Vec::new();
    for (_, s) in rows {
        for (k, v) in s.iter() {
            if !keys.iter().any(|(known, _)| known == k) {
                keys.push((k.to_string(), describe(k, matches!(v, StatValue::Ratio(_)))));
            }
        }
    }
    keys.sort_by(|a, b| order(&a.1, &a.0).cmp(&order(&b.1, &b.0)));
    let header: Vec<String> = std::iter::once(first.to_string())
        .chain(keys.iter().map(|(k, d)| column_title(k, d)))
        .collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|(name, s)| {
            std::iter::once(name.clone())
                .chain(keys.iter().map(|(k, d)| {
                    s.get(k)
                        .map_or_else(|| "-".to_string(), |v| format_value(v, d.form))
                }))
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            std::iter::once(&header)
                .chain(&cells)
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |r: &[String]| -> String {
        let mut s = format!("  {:<w$}", r[0], w = widths[0]);
        for (c, cell) in r.iter().enumerate().skip(1) {
            s.push_str(&format!("  {:>w$}", cell, w = widths[c]));
        }
        s.push('\n');
        s
    };
    let mut out = line(&header);
    for r in &cells {
        out.push_str(&line(r));
    }
    out
}

/// A column's title: the label, shortened, with its unit unless the label says it.
fn column_title(key: &str, d: &Description) -> String {
    let label = d.label.replace("instructions", "instr");
    if key.starts_with("stall_") {
        return format!("{label} stalls");
    }
    match (d.form, d.unit) {
        (Form::Percent, _) | (_, "") => label,
        (_, unit) if label.contains(unit) || unit.contains("instr") => label,
        (_, unit) => format!("{label} ({unit})"),
    }
}

/// Every statistic with its description, in report order.
fn described(stats: &Stats) -> Vec<(&str, StatValue, Description)> {
    let mut v: Vec<(&str, StatValue, Description)> = stats
        .iter()
        .map(|(k, x)| (k, x, describe(k, matches!(x, StatValue::Ratio(_)))))
        .collect();
    v.sort_by(|a, b| order(&a.2, a.0).cmp(&order(&b.2, b.0)));
    v
}

fn order<'a>(d: &Description, key: &'a str) -> (Section, usize, &'a str) {
    (d.section, d.rank, key)
}

fn count(v: StatValue) -> Option<u64> {
    match v {
        StatValue::Count(n) => Some(n),
        StatValue::Ratio(_) => None,
    }
}

/// A stall counter's unit and its share of all stall cycles.
fn stall_note(v: StatValue, total: u64) -> String {
    match count(v) {
        Some(n) if total > 0 => format!("cycles  {:>6}", percent(n as f64 / total as f64)),
        _ => "cycles".to_string(),
    }
}

/// A value rounded for reading: counts with thousands separators, ratios as
/// percentages or with two decimals (three significant digits below 0.1).
pub fn format_value(v: StatValue, form: Form) -> String {
    match (v, form) {
        (StatValue::Count(n), Form::Plain) => thousands(n),
        (StatValue::Count(n), Form::Percent) => percent(n as f64),
        (StatValue::Ratio(x), Form::Percent) => percent(x),
        (StatValue::Ratio(x), Form::Plain) => decimal(x),
    }
}

/// `0.333` is `33.3%`; a share below 0.1% keeps two significant digits.
fn percent(x: f64) -> String {
    let p = x * 100.0;
    if p != 0.0 && p.abs() < 0.1 {
        format!("{}%", significant(p, 2))
    } else {
        format!("{p:.1}%")
    }
}

fn decimal(x: f64) -> String {
    if !x.is_finite() {
        return super::elem::format_float(x);
    }
    if x != 0.0 && x.abs() < 0.1 {
        return significant(x, 3);
    }
    let fixed = format!("{x:.2}");
    match fixed.split_once('.') {
        Some((int, frac)) if x.abs() >= 1000.0 => {
            let sign = if int.starts_with('-') { "-" } else { "" };
            let digits = int.trim_start_matches('-').parse::<u64>().unwrap_or(0);
            format!("{sign}{}.{frac}", thousands(digits))
        }
        _ => fixed,
    }
}

/// `x` with `digits` significant digits, in plain notation.
fn significant(x: f64, digits: i32) -> String {
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

/// `1234567` is `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Stats {
        let mut s = Stats::new();
        s.set("cycles", 24747u64)
            .set("dynamic_instructions", 656u64)
            .set("ipc", 0.8482644360932639)
            .set("l1_hit_rate", 1.0 / 3.0)
            .set("stall_memory", 300u64)
            .set("stall_idle", 700u64)
            .set("energy_total_nj", 12.345)
            .set("mystery_counter", 7u64);
        s
    }

    #[test]
    fn figures_are_rounded_for_reading() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(decimal(0.8482644360932639), "0.85");
        assert_eq!(decimal(13.633136094674557), "13.63");
        assert_eq!(decimal(0.026508263627914495), "0.0265");
        assert_eq!(decimal(12345.678), "12,345.68");
        assert_eq!(decimal(0.0), "0.00");
        assert_eq!(percent(1.0 / 3.0), "33.3%");
        assert_eq!(percent(0.0013887766418376188), "0.1%");
        assert_eq!(percent(0.00067449), "0.067%");
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(percent(1.0), "100.0%");
    }

    #[test]
    fn every_statistic_appears_once_in_its_section() {
        let text = render(&sample());
        let headings: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with(' ') && !l.is_empty())
            .collect();
        assert_eq!(
            headings,
            [
                "Launch",
                "Instructions",
                "Memory hierarchy",
                "Stalls",
                "Energy",
                "Other"
            ]
        );
        for needle in [
            "24,747",
            "IPC",
            "0.85",
            "33.3%",
            "mystery counter",
            "12.35  nJ",
        ] {
            assert_eq!(text.matches(needle).count(), 1, "{needle} in\n{text}");
        }
        let words = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert!(
            text.lines()
                .any(|l| words(l) == ["memory", "300", "cycles", "30.0%"]),
            "{text}"
        );
    }

    #[test]
    fn the_breakdown_is_a_table_per_part() {
        let mut a = Stats::new();
        a.set("blocks", 3u64).set("l1_hit_rate", 0.5);
        let mut b = Stats::new();
        b.set("blocks", 1u64);
        let text = render_breakdown(&Breakdown {
            unit_kind: "SM".into(),
            units: vec![a, b],
            functions: Vec::new(),
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "Per SM");
        assert!(
            lines[2].contains("blocks") && lines[2].contains("L1 hit rate"),
            "{text}"
        );
        assert!(
            lines[3].starts_with("  SM 0") && lines[3].ends_with("50.0%"),
            "{text}"
        );
        assert!(
            lines[4].starts_with("  SM 1") && lines[4].ends_with("-"),
            "{text}"
        );
    }
}
