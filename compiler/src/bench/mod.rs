//! `spmdc bench SUITE`: benchmark suites over the example kernels. A suite compiles
//! its kernels, runs each on a simulator, checks the results against a reference
//! and reports one row per kernel in a [`Table`]. Suites are sibling modules
//! (`gpu`, ...) that each return a table; [`run_suite`] picks one by name, and the
//! table prints itself as aligned text ([`Table::to_text`], a Markdown table that
//! pastes into the README as is) or as JSON ([`Table::to_json`]).
//!
//! A failed reference check does not stop a suite: the kernel's row says so in its
//! `check` column and the failure is listed in [`Table::failures`], so a caller can
//! report every kernel and still fail.

pub mod dac;
pub mod gpu;
pub mod regdem;
pub mod uniform_share;
pub mod uniformity;

use std::fmt;
use std::path::PathBuf;

/// The suites [`run_suite`] knows, in the order `spmdc bench --help` lists them.
pub const SUITES: &[&str] = &["gpu", "uniformity", "dac", "regdem"];

/// What every suite is run with.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// The machine of the timing model: `gtx480`, `maxwell` or a configuration file.
    pub config: String,
    /// The fewest threads a kernel's launch has; each kernel sizes its problem to
    /// reach it (1M by default, as the issue asks; tests use a few thousand).
    pub min_threads: u64,
    /// The directory holding the example kernels.
    pub examples: PathBuf,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            config: "gtx480".into(),
            min_threads: 1 << 20,
            examples: default_examples_dir(),
        }
    }
}

/// The repository's `examples/` directory (where this crate was built from).
pub fn default_examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// Why a suite could not run at all (a kernel that runs but disagrees with its
/// reference is a [`Table::failures`] entry instead).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BenchError {
    /// No suite of that name.
    UnknownSuite(String),
    /// A bad option (an unknown machine configuration, too few threads).
    Options(String),
    /// A kernel did not compile, launch or run.
    Kernel { kernel: String, message: String },
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::UnknownSuite(s) => {
                write!(
                    f,
                    "no benchmark suite `{s}` (suites: {})",
                    SUITES.join(", ")
                )
            }
            BenchError::Options(m) => f.write_str(m),
            BenchError::Kernel { kernel, message } => write!(f, "{kernel}: {message}"),
        }
    }
}

impl std::error::Error for BenchError {}

/// Runs suite `name`.
pub fn run_suite(name: &str, opts: &BenchOptions) -> Result<Table, BenchError> {
    match name {
        "gpu" => gpu::run(opts),
        "uniformity" => uniformity::run(opts),
        "dac" => dac::run(opts),
        "regdem" => regdem::run(opts),
        _ => Err(BenchError::UnknownSuite(name.to_string())),
    }
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
            Cell::Text(s) => s.clone(),
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
                .chain([self.columns[c].chars().count(), 3])
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
        let mut out = line(
            (0..widths.len())
                .map(|c| pad(c, &self.columns[c]))
                .collect(),
        );
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
        let mut t = Table::new("demo", &["kernel", "n", "ratio"]);
        t.rows.push(vec![
            Cell::Text("a".into()),
            Cell::Count(1234),
            Cell::Real(0.5, 2),
        ]);
        t.rows.push(vec![
            Cell::Text("longer".into()),
            Cell::Count(5),
            Cell::Real(10.0, 2),
        ]);
        let want = "\
| kernel |    n | ratio |
| ------ | ---: | ----: |
| a      | 1234 |  0.50 |
| longer |    5 | 10.00 |
";
        assert_eq!(t.to_text(), want);
        let j = t.to_json();
        assert_eq!(j["rows"][0]["n"], 1234);
        assert_eq!(j["rows"][1]["kernel"], "longer");
        assert_eq!(t.cell(1, "ratio"), Some(&Cell::Real(10.0, 2)));
    }

    #[test]
    fn unknown_suite_is_an_error() {
        let e = run_suite("nope", &BenchOptions::default()).unwrap_err();
        assert_eq!(e, BenchError::UnknownSuite("nope".into()));
        assert!(e.to_string().contains("gpu"));
    }
}
