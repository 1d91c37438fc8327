//! The output folder of a suite run (`bench-out/` by default):
//!
//! ```text
//! suite.json          the suite file's text, where it came from, its sizes
//! runs/NNNNN.json     one record per run (its index in the suite's order)
//! table.md            the table, as Markdown
//! table.json          the table, as JSON
//! charts/NAME.svg     the suite's charts
//! ```
//!
//! A shard (`--shard i/n`) writes its own runs and the table of those; `spmdc bench
//! merge DIR...` reads the runs of every folder, checks that they come from the same
//! suite and together are all of it, and writes the table and charts of the whole,
//! which are those of an unsharded run: tables and charts depend on the records
//! alone, and records do not depend on who ran them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::record::RunRecord;
use super::suite::Suite;
use super::{chart, report, BenchError, Table};

/// `suite.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuiteStamp {
    pub name: String,
    /// `builtin:NAME` or the file's path.
    pub origin: String,
    /// The folder its relative paths are relative to.
    pub dir: PathBuf,
    pub text: String,
    pub sizes: Vec<u64>,
    /// How many runs the whole suite has.
    pub runs: usize,
}

fn io(path: &Path, e: impl std::fmt::Display) -> BenchError {
    BenchError::Output(format!("{}: {e}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<(), BenchError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    std::fs::write(path, text).map_err(|e| io(path, e))
}

fn stamp(suite: &Suite) -> SuiteStamp {
    let dir = match suite.origin.strip_prefix("builtin:") {
        Some(_) => super::suite::builtin_dir(),
        None => Path::new(&suite.origin)
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    SuiteStamp {
        name: suite.name.clone(),
        origin: suite.origin.clone(),
        dir,
        text: suite.text.clone(),
        sizes: suite.sizes.clone(),
        runs: suite.runs().len(),
    }
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

/// Writes `records` (some or all of `suite`'s runs) with their table and charts.
pub fn write_dir(dir: &Path, suite: &Suite, records: &[RunRecord]) -> Result<Table, BenchError> {
    write(&dir.join("suite.json"), &json(&stamp(suite)))?;
    for r in records {
        write(
            &dir.join("runs").join(format!("{:05}.json", r.index)),
            &json(r),
        )?;
    }
    write_results(dir, suite, records)
}

/// Writes the table and charts of `records` to `dir`.
fn write_results(dir: &Path, suite: &Suite, records: &[RunRecord]) -> Result<Table, BenchError> {
    let table = report::table(suite, records);
    write(&dir.join("table.md"), &table.to_text())?;
    write(&dir.join("table.json"), &format!("{:#}\n", table.to_json()))?;
    for c in chart::charts(suite, records) {
        write(&dir.join("charts").join(format!("{}.svg", c.name)), &c.svg)?;
    }
    Ok(table)
}

/// Reads a folder's stamp and records.
pub fn read_dir(dir: &Path) -> Result<(SuiteStamp, Vec<RunRecord>), BenchError> {
    let path = dir.join("suite.json");
    let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
    let stamp: SuiteStamp = serde_json::from_str(&text).map_err(|e| io(&path, e))?;
    let runs = dir.join("runs");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&runs)
        .map_err(|e| io(&runs, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    let mut records = Vec::new();
    for p in names {
        let text = std::fs::read_to_string(&p).map_err(|e| io(&p, e))?;
        records.push(serde_json::from_str::<RunRecord>(&text).map_err(|e| io(&p, e))?);
    }
    Ok((stamp, records))
}

/// The suite and all its records from the folders of its shards.
pub fn merge(dirs: &[PathBuf]) -> Result<(Suite, Vec<RunRecord>), BenchError> {
    let mut stamp: Option<SuiteStamp> = None;
    let mut all: Vec<Option<RunRecord>> = Vec::new();
    for d in dirs {
        let (s, records) = read_dir(d)?;
        match &stamp {
            Some(first) if *first != s => {
                return Err(BenchError::Output(format!(
                    "{} holds runs of another suite (or other sizes) than {}",
                    d.display(),
                    dirs[0].display()
                )))
            }
            Some(_) => {}
            None => {
                all = vec![None; s.runs];
                stamp = Some(s);
            }
        }
        for r in records {
            let i = r.index;
            let slot = all.get_mut(i).ok_or_else(|| {
                BenchError::Output(format!("{}: run {i} is not in the suite", d.display()))
            })?;
            match slot {
                Some(old) if old.without_host() != r.without_host() => {
                    return Err(BenchError::Output(format!(
                        "run {i} ({}) differs between the folders",
                        r.kernel
                    )))
                }
                _ => *slot = Some(r),
            }
        }
    }
    let stamp = stamp.ok_or_else(|| BenchError::Output("no folders to merge".into()))?;
    let missing: Vec<String> = all
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_none())
        .map(|(i, _)| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(BenchError::Output(format!(
            "{} of {} runs are missing (a shard not run or not given?): {}",
            missing.len(),
            stamp.runs,
            missing.join(", ")
        )));
    }
    let suite = Suite::parse(&stamp.text, &stamp.origin, &stamp.dir)?.with_sizes(stamp.sizes)?;
    Ok((suite, all.into_iter().flatten().collect()))
}

/// `spmdc bench merge DIR... --out OUT`: merges and writes the whole suite's results.
pub fn merge_into(dirs: &[PathBuf], out: &Path) -> Result<Table, BenchError> {
    let (suite, records) = merge(dirs)?;
    write_dir(out, &suite, &records)
}
