//! `spmdc bench SUITE|FILE`: benchmark suites. A suite is a file ([`suite`]: kernels
//! with their launches, configurations, sizes, metrics and charts); the built-in ones
//! live in `examples/suites/` and are embedded in the binary. [`run`] expands a suite
//! into runs and runs them on all cores ([`run::run_suite`]), each checked bit for bit
//! against the reference interpreter and recorded as a [`record::RunRecord`];
//! [`report`] builds the suite's [`Table`] from the records alone, [`chart`] draws its
//! SVG charts, and [`out`] writes everything to a folder (`bench-out/`) and merges the
//! folders of shards (`--shard i/n`, `spmdc bench merge`) into the same result;
//! [`doc`] writes the table and charts into a page of `docs/` (`--doc`). The table
//! prints itself as aligned Markdown ([`Table::to_text`]) or as JSON
//! ([`Table::to_json`]).
//!
//! A failed reference check does not stop a suite: the run's row says so in its
//! `check` column and the failure is listed in [`Table::failures`], so a caller can
//! report every kernel and still fail.

pub mod chart;
pub mod dac;
pub mod doc;
pub mod expr;
pub mod gpu;
pub mod out;
pub mod record;
pub mod regdem;
pub mod report;
pub mod run;
pub mod suite;
pub mod uniform_share;
pub mod uniformity;

use std::fmt;

pub use record::RunRecord;
pub use run::{RunOptions, Shard};
pub use suite::Suite;

/// The built-in suites, in the order `spmdc bench --help` lists them.
pub const SUITES: &[&str] = &["gpu", "uniformity", "dac", "regdem", "shuffle", "sim-speed"];

/// What a suite is run with, beyond its file.
#[derive(Clone, Debug, Default)]
pub struct BenchOptions {
    /// The machine of every dac-gpu configuration instead of the file's: `gtx480`,
    /// `maxwell` or a configuration file.
    pub config: Option<String>,
    /// The thread target `T` instead of the file's (sizes or threads).
    pub threads: Option<u64>,
    pub run: RunOptions,
}

/// Why a suite could not run at all (a kernel that runs but fails is a
/// [`Table::failures`] entry instead).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BenchError {
    /// No built-in suite of that name (and the closest one).
    UnknownSuite(String, Option<String>),
    /// A bad option (an unknown machine configuration, a bad size).
    Options(String),
    /// A suite file that cannot be used: where and why (`line` 0: the whole file).
    Suite {
        file: String,
        line: usize,
        column: usize,
        message: String,
        help: String,
    },
    /// An output folder that cannot be written or read.
    Output(String),
}

/// The diagnostic code of suite-file errors.
pub const SUITE_CODE: crate::diag::Code = crate::diag::codes::BENCH_SUITE;

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::UnknownSuite(s, close) => {
                let hint = close
                    .as_ref()
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_default();
                write!(
                    f,
                    "no benchmark suite `{s}` (suites: {}, or a suite file){hint}",
                    SUITES.join(", ")
                )
            }
            BenchError::Options(m) | BenchError::Output(m) => f.write_str(m),
            BenchError::Suite {
                file,
                line,
                column,
                message,
                help,
            } => {
                write!(f, "[{SUITE_CODE}] {message}\n  --> {file}")?;
                if *line > 0 {
                    write!(f, ":{line}:{column}")?;
                }
                if !help.is_empty() {
                    write!(f, "\n  = help: {help}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for BenchError {}

/// Loads suite `name_or_path` (a built-in name or a file) with `opts`' overrides.
pub fn load_suite(name_or_path: &str, opts: &BenchOptions) -> Result<Suite, BenchError> {
    let mut suite = Suite::find(name_or_path)?;
    if let Some(t) = opts.threads {
        if t == 0 {
            return Err(BenchError::Options("--threads must be at least 1".into()));
        }
        suite = suite.with_sizes(vec![t])?;
    }
    if let Some(m) = &opts.config {
        suite = suite.with_machine(m)?;
    }
    Ok(suite)
}

/// Runs suite `name_or_path` (its runs of `opts.run.shard`): its records and table.
pub fn run_suite(
    name_or_path: &str,
    opts: &BenchOptions,
) -> Result<(Suite, Vec<RunRecord>, Table), BenchError> {
    let suite = load_suite(name_or_path, opts)?;
    let records = run::run_suite(&suite, &opts.run);
    let table = report::table(&suite, &records);
    Ok((suite, records, table))
}

/// One table cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Text(String),
    Count(u64),
    /// A real number and the decimals it is printed with.
    Real(f64, usize),
}

impl Cell {
    fn to_text(&self) -> String {
        match self {
            Cell::Text(s) => escape(s),
            Cell::Count(n) => n.to_string(),
            Cell::Real(x, d) => format!("{x:.d$}"),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        match self {
            Cell::Text(s) => serde_json::Value::from(s.as_str()),
            Cell::Count(n) => serde_json::Value::from(*n),
            Cell::Real(x, _) => serde_json::Value::from(*x),
        }
    }

    fn is_text(&self) -> bool {
        matches!(self, Cell::Text(_))
    }
}

/// `s` with its `|` escaped, as a Markdown table cell needs (`avg |N|`).
fn escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// A suite's result: named columns, one row of cells per kernel, and the failed
/// reference checks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub suite: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    pub failures: Vec<String>,
}

impl Table {
    pub fn new(suite: &str, columns: &[&str]) -> Table {
        Table {
            suite: suite.to_string(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            ..Table::default()
        }
    }

    /// The cell of `column` in row `row`.
    pub fn cell(&self, row: usize, column: &str) -> Option<&Cell> {
        let c = self.columns.iter().position(|x| x == column)?;
        self.rows.get(row)?.get(c)
    }

    /// A Markdown table with aligned columns (text left, numbers right).
    pub fn to_text(&self) -> String {
        let columns: Vec<String> = self.columns.iter().map(|c| escape(c)).collect();
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(Cell::to_text).collect())
            .collect();
        let width = |c: usize| {
            cells
                .iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .chain([columns[c].chars().count(), 3])
                .max()
                .unwrap_or(3)
        };
        let widths: Vec<usize> = (0..self.columns.len()).map(width).collect();
        let left = |c: usize| {
            self.rows
                .first()
                .and_then(|r| r.get(c))
                .is_none_or(Cell::is_text)
        };
        let line = |items: Vec<String>| format!("| {} |\n", items.join(" | "));
        let pad = |c: usize, s: &str| {
            let w = widths[c];
            if left(c) {
                format!("{s:<w$}")
            } else {
                format!("{s:>w$}")
            }
        };
        let mut out = line((0..widths.len()).map(|c| pad(c, &columns[c])).collect());
        out += &line(
            widths
                .iter()
                .enumerate()
                .map(|(c, &w)| {
                    let dashes = "-".repeat(w - 1);
                    if left(c) {
                        format!("{dashes}-")
                    } else {
                        format!("{dashes}:")
                    }
                })
                .collect(),
        );
        for r in &cells {
            out += &line(r.iter().enumerate().map(|(c, s)| pad(c, s)).collect());
        }
        out
    }

    /// `{"suite", "columns", "rows": [{column: value}], "failures"}`.
    pub fn to_json(&self) -> serde_json::Value {
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|r| {
                let m: serde_json::Map<String, serde_json::Value> = self
                    .columns
                    .iter()
                    .cloned()
                    .zip(r.iter().map(Cell::to_json))
                    .collect();
                serde_json::Value::Object(m)
            })
            .collect();
        serde_json::json!({
            "suite": self.suite,
            "columns": self.columns,
            "rows": rows,
            "failures": self.failures,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_table_aligns_text_left_and_numbers_right() {
        let mut t = Table::new("demo", &["kernel", "n", "|r|"]);
        t.rows.push(vec![
            Cell::Text("x|y".into()),
            Cell::Count(1234),
            Cell::Real(0.5, 2),
        ]);
        t.rows.push(vec![
            Cell::Text("longer".into()),
            Cell::Count(5),
            Cell::Real(10.0, 2),
        ]);
        // Pipes are escaped in the Markdown, kept in the JSON.
        let want = "\
| kernel |    n | \\|r\\| |
| ------ | ---: | ----: |
| x\\|y   | 1234 |  0.50 |
| longer |    5 | 10.00 |
";
        assert_eq!(t.to_text(), want);
        let j = t.to_json();
        assert_eq!(j["rows"][0]["n"], 1234);
        assert_eq!(j["rows"][0]["kernel"], "x|y");
        assert_eq!(j["rows"][1]["kernel"], "longer");
        assert_eq!(t.cell(1, "|r|"), Some(&Cell::Real(10.0, 2)));
    }

    #[test]
    fn unknown_suite_is_an_error() {
        let e = run_suite("dax", &BenchOptions::default()).unwrap_err();
        assert_eq!(
            e,
            BenchError::UnknownSuite("dax".into(), Some("dac".into()))
        );
        assert!(e.to_string().contains("gpu"));
        assert!(e.to_string().contains("did you mean `dac`"));
    }

    #[test]
    fn every_builtin_suite_loads() {
        for name in SUITES {
            let s = Suite::find(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(&s.name, name);
            assert!(!s.runs().is_empty());
        }
        let names: Vec<&str> = suite::BUILTIN.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, SUITES);
    }
}
