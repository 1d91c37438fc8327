//! `spmdc bench SUITE --doc PAGE`: writes a suite's results into a Markdown page of
//! hand-written text. The page marks where the results go with blocks,
//!
//! ```text
//! <!-- bench dac: table -->
//! (the suite's Markdown table)
//! <!-- end -->
//! <!-- bench dac: charts -->
//! (a link to each of its SVG charts)
//! <!-- end -->
//! ```
//!
//! and the command replaces what is between the markers, leaving the rest of the page
//! as it is. A block's key is the suite's name followed by the options that change its
//! results, as typed: `bench regdem --config maxwell: table` holds the table of
//! `spmdc bench regdem --config maxwell --doc PAGE`, so one page can hold the tables
//! of several machines. The charts are copied beside the page, to
//! `charts/DIR/NAME.svg` ([`chart_dir`]), and linked from there.
//!
//! [`splice`] is the text transformation alone (a page without a block for the key,
//! an unterminated block or an unknown kind are errors); [`check_page`] runs it on the
//! page before the suite runs, so a bad page costs nothing, and [`write_page`] writes
//! the results.

use std::path::{Path, PathBuf};

use super::chart::Chart;
use super::{BenchError, Table};

/// What a block holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Table,
    Charts,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Table => "table",
            Kind::Charts => "charts",
        }
    }
}

/// A generated block of a page: its key and kind, and the lines (0-based) of its
/// start and end markers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub key: String,
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

const END: &str = "<!-- end -->";

/// The marker that starts a block.
pub fn marker(key: &str, kind: Kind) -> String {
    format!("<!-- bench {key}: {} -->", kind.name())
}

/// The key of a suite's blocks: its name, then `--config C` and `--threads T` when
/// the command gave them.
pub fn key(suite: &str, config: Option<&str>, threads: Option<u64>) -> String {
    let mut k = suite.to_string();
    if let Some(c) = config {
        k += &format!(" --config {c}");
    }
    if let Some(t) = threads {
        k += &format!(" --threads {t}");
    }
    k
}

/// The folder under the page's `charts/` that a key's charts go to: `dac`,
/// `regdem-maxwell`, `dac-threads-4096`.
pub fn chart_dir(key: &str) -> String {
    let mut out = String::new();
    for word in key.split_whitespace() {
        let word = word.trim_start_matches('-');
        let word = match word {
            "config" => continue,
            // A machine file: its name without the folder and extension.
            w => Path::new(w)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or(w),
        };
        if !out.is_empty() {
            out.push('-');
        }
        out.extend(
            word.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }),
        );
    }
    out
}

/// The blocks of `text`, in order (markers inside fenced code blocks are not blocks).
pub fn blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut open: Option<(String, Kind, usize)> = None;
    // Markers shown in a fenced code block (outside any block) are examples, not blocks.
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if open.is_none() && (t.starts_with("```") || t.starts_with("~~~")) {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if t == END {
            match open.take() {
                Some((key, kind, start)) => out.push(Block {
                    key,
                    kind,
                    start,
                    end: i,
                }),
                None => return Err(format!("line {}: `{END}` closes no block", i + 1)),
            }
            continue;
        }
        let Some(inner) = t
            .strip_prefix("<!-- bench ")
            .and_then(|r| r.strip_suffix("-->"))
        else {
            continue;
        };
        if let Some((key, _, start)) = &open {
            return Err(format!(
                "line {}: the block `{key}` of line {} is not closed by `{END}` before this one",
                i + 1,
                start + 1
            ));
        }
        let Some((key, kind)) = inner.trim().rsplit_once(':') else {
            return Err(format!(
                "line {}: a block marker is `<!-- bench KEY: table -->` or `<!-- bench KEY: charts -->`",
                i + 1
            ));
        };
        let kind = match kind.trim() {
            "table" => Kind::Table,
            "charts" => Kind::Charts,
            other => {
                return Err(format!(
                    "line {}: unknown block kind `{other}` (table or charts)",
                    i + 1
                ))
            }
        };
        open = Some((key.trim().to_string(), kind, i));
    }
    if let Some((key, _, start)) = open {
        return Err(format!(
            "line {}: the block `{key}` is not closed by `{END}`",
            start + 1
        ));
    }
    Ok(out)
}

/// `text` with the body of every block of `key` replaced: table blocks by `table`,
/// chart blocks by `charts`. Each body is set off by blank lines, so that Markdown
/// renders it whatever surrounds the markers; splicing the same content again gives
/// the same text.
pub fn splice(text: &str, key: &str, table: &str, charts: Option<&str>) -> Result<String, String> {
    let all = blocks(text)?;
    let mine: Vec<&Block> = all.iter().filter(|b| b.key == key).collect();
    if mine.is_empty() {
        let mut keys: Vec<&str> = all.iter().map(|b| b.key.as_str()).collect();
        keys.dedup();
        let have = if keys.is_empty() {
            "it has no blocks".to_string()
        } else {
            format!("its blocks are for `{}`", keys.join("`, `"))
        };
        return Err(format!("no `{}` block ({have})", marker(key, Kind::Table)));
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len() + table.len());
    let mut next = 0;
    for b in mine {
        let body = match b.kind {
            Kind::Table => table,
            Kind::Charts => charts.ok_or_else(|| {
                format!(
                    "line {}: a charts block, but the suite draws no charts",
                    b.start + 1
                )
            })?,
        };
        for l in &lines[next..=b.start] {
            out += l;
            out.push('\n');
        }
        out.push('\n');
        out += body.trim_end_matches('\n');
        out += "\n\n";
        next = b.end;
    }
    for l in &lines[next..] {
        out += l;
        out.push('\n');
    }
    if !text.ends_with('\n') {
        out.pop();
    }
    Ok(out)
}

/// What a chart shows, for its image's text.
fn describe(chart: &str) -> &'static str {
    match chart {
        "speedup" => "speedup per kernel and the geomean",
        "stalls" => "scheduler cycles: issue and each stall reason, per run",
        "occupancy" => "achieved and theoretical occupancy, per run",
        "sweep" => "cycles against the thread target, per kernel and configuration",
        "change" => "a statistic against a configuration, per kernel and target, and the geomean",
        "rates" => "simulation rate per run",
        _ => "chart",
    }
}

/// The chart block's body: an image link per chart, relative to the page.
pub fn chart_links(dir: &str, charts: &[Chart]) -> String {
    charts
        .iter()
        .map(|c| format!("![{}](charts/{dir}/{}.svg)\n", describe(&c.name), c.name))
        .collect::<Vec<_>>()
        .join("\n")
}

fn usage(page: &Path, e: impl std::fmt::Display) -> BenchError {
    BenchError::Options(format!("--doc {}: {e}", page.display()))
}

/// Checks that `page` can take the results of `key`: it is readable and has a
/// well-formed block for the key (a charts block only if the suite `draws` charts).
/// Run before the suite.
pub fn check_page(page: &Path, key: &str, draws: bool) -> Result<(), BenchError> {
    let text = std::fs::read_to_string(page).map_err(|e| usage(page, e))?;
    splice(&text, key, "", draws.then_some("")).map_err(|e| usage(page, e))?;
    Ok(())
}

/// Writes `table` and `charts` into the blocks of `key` in `page`, and the charts to
/// `charts/DIR/` beside it; returns the files written.
pub fn write_page(
    page: &Path,
    key: &str,
    table: &Table,
    charts: &[Chart],
) -> Result<Vec<PathBuf>, BenchError> {
    let text = std::fs::read_to_string(page).map_err(|e| usage(page, e))?;
    let dir = chart_dir(key);
    let links = (!charts.is_empty()).then(|| chart_links(&dir, charts));
    let new = splice(&text, key, &table.to_text(), links.as_deref()).map_err(|e| usage(page, e))?;
    let mut written = Vec::new();
    let wants_charts = blocks(&text)
        .unwrap_or_default()
        .iter()
        .any(|b| b.key == key && b.kind == Kind::Charts);
    if wants_charts {
        let folder = page
            .parent()
            .unwrap_or(Path::new("."))
            .join("charts")
            .join(&dir);
        std::fs::create_dir_all(&folder).map_err(|e| usage(&folder, e))?;
        for c in charts {
            let path = folder.join(format!("{}.svg", c.name));
            std::fs::write(&path, &c.svg).map_err(|e| usage(&path, e))?;
            written.push(path);
        }
    }
    std::fs::write(page, new).map_err(|e| usage(page, e))?;
    written.push(page.to_path_buf());
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "\
# Results

Hand-written text.

<!-- bench dac: table -->
| old | table |
<!-- end -->

More text.

<!-- bench dac: charts -->
![old](charts/dac/old.svg)
<!-- end -->

<!-- bench regdem --config maxwell: table -->
| other | suite |
<!-- end -->
";

    #[test]
    fn splice_replaces_the_blocks_of_its_key_only() {
        let out = splice(
            PAGE,
            "dac",
            "| new |\n| --- |\n",
            Some("![c](charts/dac/c.svg)\n"),
        )
        .unwrap();
        let want = "\
# Results

Hand-written text.

<!-- bench dac: table -->

| new |
| --- |

<!-- end -->

More text.

<!-- bench dac: charts -->

![c](charts/dac/c.svg)

<!-- end -->

<!-- bench regdem --config maxwell: table -->
| other | suite |
<!-- end -->
";
        assert_eq!(out, want);
    }

    #[test]
    fn splice_is_idempotent() {
        let once = splice(PAGE, "dac", "| t |\n", Some("![c](x.svg)")).unwrap();
        let twice = splice(&once, "dac", "| t |\n", Some("![c](x.svg)")).unwrap();
        assert_eq!(once, twice);
        // And another key's block is spliced in the same way.
        let key = "regdem --config maxwell";
        let a = splice(&once, key, "| r |\n", None).unwrap();
        assert_eq!(splice(&a, key, "| r |\n", None).unwrap(), a);
        assert!(a.contains(&format!(
            "{}\n\n| r |\n\n<!-- end -->",
            marker(key, Kind::Table)
        )));
        assert!(a.contains("<!-- bench dac: table -->\n\n| t |\n\n<!-- end -->"));
    }

    #[test]
    fn two_blocks_of_one_key_both_get_the_table() {
        let page = "<!-- bench gpu: table -->\n<!-- end -->\ntext\n<!-- bench gpu: table -->\nold\n<!-- end -->";
        let out = splice(page, "gpu", "| x |", None).unwrap();
        assert_eq!(
            out,
            "<!-- bench gpu: table -->\n\n| x |\n\n<!-- end -->\ntext\n<!-- bench gpu: table -->\n\n| x |\n\n<!-- end -->"
        );
        assert_eq!(blocks(&out).unwrap().len(), 2);
    }

    #[test]
    fn a_missing_block_names_the_marker_and_the_blocks_there_are() {
        let e = splice(PAGE, "shuffle", "", None).unwrap_err();
        assert!(
            e.contains("no `<!-- bench shuffle: table -->` block"),
            "{e}"
        );
        assert!(e.contains("`dac`, `regdem --config maxwell`"), "{e}");
        let e = splice("no markers here\n", "dac", "", None).unwrap_err();
        assert!(e.contains("it has no blocks"), "{e}");
    }

    #[test]
    fn markers_in_code_blocks_are_examples() {
        let page = "```text\n<!-- bench dac: table -->\n```\n<!-- bench dac: table -->\nold\n<!-- end -->\n";
        let b = blocks(page).unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!((b[0].start, b[0].end), (3, 5));
        let out = splice(page, "dac", "| t |", None).unwrap();
        assert!(
            out.starts_with("```text\n<!-- bench dac: table -->\n```\n"),
            "{out}"
        );
        assert!(
            out.ends_with("<!-- bench dac: table -->\n\n| t |\n\n<!-- end -->\n"),
            "{out}"
        );
    }

    #[test]
    fn malformed_blocks_are_errors_with_their_line() {
        let e = blocks("a\n<!-- bench dac: table -->\nb\n").unwrap_err();
        assert!(e.starts_with("line 2:") && e.contains("not closed"), "{e}");
        let e = blocks("<!-- bench dac: table -->\n<!-- bench dac: charts -->\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        let e = blocks("x\n<!-- end -->\n").unwrap_err();
        assert!(
            e.starts_with("line 2:") && e.contains("closes no block"),
            "{e}"
        );
        let e = blocks("<!-- bench dac: graphs -->\n<!-- end -->\n").unwrap_err();
        assert!(e.contains("unknown block kind `graphs`"), "{e}");
        // A charts block for a suite without charts.
        let e = splice(PAGE, "dac", "| t |", None).unwrap_err();
        assert!(
            e.contains("line 11:") && e.contains("draws no charts"),
            "{e}"
        );
    }

    fn chart(name: &str, svg: &str) -> Chart {
        Chart {
            name: name.into(),
            svg: svg.into(),
        }
    }

    #[test]
    fn keys_and_chart_folders_follow_the_options() {
        assert_eq!(key("dac", None, None), "dac");
        assert_eq!(
            key("regdem", Some("maxwell"), Some(4096)),
            "regdem --config maxwell --threads 4096"
        );
        assert_eq!(chart_dir("dac"), "dac");
        assert_eq!(chart_dir("regdem --config maxwell"), "regdem-maxwell");
        assert_eq!(chart_dir("dac --threads 4096"), "dac-threads-4096");
        assert_eq!(chart_dir("dac --config conf/my gpu.toml"), "dac-my-gpu");
        assert_eq!(
            chart_links("dac", &[chart("speedup", "")]),
            "![speedup per kernel and the geomean](charts/dac/speedup.svg)\n"
        );
    }

    #[test]
    fn pages_are_written_in_place_with_their_charts() {
        let dir = std::env::temp_dir().join(format!("spmdc-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let page = dir.join("page.md");
        std::fs::write(&page, PAGE).unwrap();
        let mut table = Table::new("dac", &["kernel"]);
        table
            .rows
            .push(vec![super::super::Cell::Text("saxpy".into())]);
        let charts = [chart("speedup", "<svg/>")];
        check_page(&page, "dac", true).unwrap();
        assert!(check_page(&page, "dac", false).is_err());
        let written = write_page(&page, "dac", &table, &charts).unwrap();
        assert_eq!(written.len(), 2);
        let svg = std::fs::read_to_string(dir.join("charts/dac/speedup.svg")).unwrap();
        assert_eq!(svg, "<svg/>");
        let text = std::fs::read_to_string(&page).unwrap();
        assert!(text.contains("| saxpy  |"), "{text}");
        assert!(text.contains("](charts/dac/speedup.svg)"), "{text}");
        assert!(check_page(&dir.join("missing.md"), "dac", true).is_err());
        assert!(check_page(&page, "uniformity", true).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
