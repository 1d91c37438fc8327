//! Suite files: a small suite written here runs whole and in shards (`--shard i/n`
//! for n = 1, 3 and 7), and the merged shards give exactly the records, table and
//! charts of the whole run; bad suite files are errors naming the file, line and
//! key before anything runs; the command line's merge and exit codes.

use std::path::{Path, PathBuf};

use spmdc::bench::{self, out, BenchError, RunOptions, Shard, Suite};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Two kernels x two configurations x two sizes: eight small runs, a sweep.
fn small_suite(dir: &Path) -> PathBuf {
    let examples = repo().join("examples");
    let text = format!(
        r#"name = "small"
description = "saxpy and a stencil, with and without DAC, at two sizes"
layout = "compare"
sizes = [256, 512]
charts = ["speedup", "stalls", "occupancy", "sweep"]
metrics = [
    "kernel", "class", "size", "threads",
    {{ name = "stats.cycles", config = "base", title = "cycles base" }},
    {{ name = "stats.cycles", config = "dac", title = "cycles dac" }},
    "speedup", "reduction", "check",
]

[compare]
base = "base"
new = "dac"
groups = [{{ class = "memory", label = "geomean memory" }}]
all = "geomean all"

[[config]]
name = "base"
target = "dac-gpu"
machine = "maxwell"
switches = ["--no-dac"]

[[config]]
name = "dac"
target = "dac-gpu"
machine = "maxwell"

[[kernel]]
name = "saxpy"
class = "memory"
file = "{ex}/saxpy_gpu.spmd"
entry = "saxpy_gpu"
let = ["n = up(T, 256)"]
grid = "{{n / 256}},1,1"
block = "256,1,1"
args = ["n={{n}}", "a=2.5", "x=random({{n}},1)", "y=random({{n}},2)"]

[[kernel]]
name = "jacobi"
class = "memory"
file = "{ex}/jacobi2d_gpu.spmd"
entry = "jacobi2d_gpu"
let = ["s = up(sqrt_up(T), 32)"]
grid = "{{s / 32}},{{s / 8}},1"
block = "32,8,1"
args = ["nx={{s}}", "ny={{s}}", "c0=0.5", "c1=0.1", "c2=0.025", "w0=random({{s * s}},5)", "w1=zeros({{s * s}})"]
"#,
        ex = examples.display()
    );
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("small.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn merged_shards_equal_the_whole_run() {
    let tmp = std::env::temp_dir().join(format!("spmdc-suites-{}", std::process::id()));
    let path = small_suite(&tmp);
    let suite = Suite::load(&path).expect("the suite loads");
    assert_eq!(suite.runs().len(), 8);
    let whole_dir = tmp.join("whole");
    let whole = bench::run::run_suite(&suite, &RunOptions::default());
    assert_eq!(whole.len(), 8);
    assert!(
        bench::report::failures(&whole).is_empty(),
        "{:?}",
        bench::report::failures(&whole)
    );
    out::write_dir(&whole_dir, &suite, &whole).unwrap();
    for n in [1, 3, 7] {
        let dirs: Vec<PathBuf> = (0..n)
            .map(|i| {
                let opts = RunOptions {
                    shard: Shard { index: i, count: n },
                    jobs: 1,
                    progress: false,
                };
                let records = bench::run::run_suite(&suite, &opts);
                assert!(records.iter().all(|r| r.index % n == i));
                let d = tmp.join(format!("shard-{i}-of-{n}"));
                out::write_dir(&d, &suite, &records).unwrap();
                d
            })
            .collect();
        let merged_dir = tmp.join(format!("merged-{n}"));
        out::merge_into(&dirs, &merged_dir).unwrap();
        let (_, merged) = out::read_dir(&merged_dir).unwrap();
        let strip = |v: &[bench::RunRecord]| v.iter().map(|r| r.without_host()).collect::<Vec<_>>();
        assert_eq!(strip(&merged), strip(&whole), "records, n = {n}");
        for f in [
            "table.md",
            "table.json",
            "charts/speedup.svg",
            "charts/stalls.svg",
            "charts/occupancy.svg",
            "charts/sweep.svg",
        ] {
            assert_eq!(
                read(&merged_dir.join(f)),
                read(&whole_dir.join(f)),
                "{f}, n = {n}"
            );
        }
    }
    // An incomplete merge says which runs are missing.
    let opts = RunOptions {
        shard: Shard { index: 0, count: 3 },
        ..RunOptions::default()
    };
    let part = tmp.join("part");
    out::write_dir(&part, &suite, &bench::run::run_suite(&suite, &opts)).unwrap();
    let e = out::merge(&[part]).unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
    // The table: two kernels at two sizes, then the geomean rows.
    let md = read(&whole_dir.join("table.md"));
    assert_eq!(md.lines().count(), 2 + 4 + 2, "{md}");
    assert!(md.contains("geomean all"));
    std::fs::remove_dir_all(&tmp).ok();
}

/// Loads `text` (a variation of the small suite) and returns the error.
fn error_of(edit: impl Fn(String) -> String) -> BenchError {
    let tmp = std::env::temp_dir().join(format!("spmdc-suites-bad-{}", std::process::id()));
    let path = small_suite(&tmp);
    let text = edit(read(&path));
    std::fs::write(&path, text).unwrap();
    let e = Suite::load(&path).expect_err("a bad suite");
    std::fs::remove_file(&path).ok();
    e
}

fn line_of(e: &BenchError) -> usize {
    match e {
        BenchError::Suite { line, .. } => *line,
        other => panic!("not a suite error: {other:?}"),
    }
}

#[test]
fn bad_suite_files_name_the_file_line_and_key() {
    // A typo in a key: the line of the key.
    let e = error_of(|t| t.replace("switches = [\"--no-dac\"]", "swiches = [\"--no-dac\"]"));
    assert!(e.to_string().contains("swiches"), "{e}");
    assert!(e.to_string().contains("small.toml:"), "{e}");
    assert_eq!(line_of(&e), 23, "{e}");
    // An unknown kernel file.
    let e = error_of(|t| t.replace("saxpy_gpu.spmd", "saxpy_gpo.spmd"));
    assert!(e.to_string().contains("saxpy_gpo.spmd"), "{e}");
    assert_eq!(line_of(&e), 33, "{e}");
    // An entry the file does not define.
    let e = error_of(|t| t.replace("entry = \"saxpy_gpu\"", "entry = \"saxpy\""));
    assert!(e.to_string().contains("no function `saxpy`"), "{e}");
    // A bad preset, with a suggestion.
    let e = error_of(|t| t.replacen("machine = \"maxwell\"", "machine = \"maxwel\"", 1));
    assert!(e.to_string().contains("did you mean `maxwell`"), "{e}");
    assert_eq!(line_of(&e), 22, "{e}");
    // A switch, a metric and a chart that do not exist.
    let e = error_of(|t| t.replace("\"--no-dac\"", "\"--no-dca\""));
    assert!(e.to_string().contains("did you mean `--no-dac`"), "{e}");
    // Metrics: a misspelt name, a run's speedup without the configuration it is
    // measured against, a kernel constant that no kernel gives.
    for (metric, message) in [
        ("\"speedups\"", "did you mean `speedup`"),
        (
            "{ name = \"speedup\", config = \"dac\" }",
            "needs `against`",
        ),
        ("\"data.paper\"", "no kernel has `paper`"),
    ] {
        let with = format!("{metric}, \"reduction\"");
        let e = error_of(|t| t.replace("\"speedup\", \"reduction\"", &with));
        assert!(e.to_string().contains(message), "{e}");
        assert_eq!(line_of(&e), 10, "{e}");
    }
    let e = error_of(|t| t.replace("\"sweep\"]", "\"sweeps\"]"));
    assert!(e.to_string().contains("no chart `sweeps`"), "{e}");
    // A launch expression that does not evaluate.
    let e = error_of(|t| t.replace("up(T, 256)", "up(T, 0) / 0"));
    assert!(e.to_string().contains("divides by zero"), "{e}");
    // A syntax error.
    let e = error_of(|t| t.replace("layout = \"compare\"", "layout = compare"));
    assert_eq!(line_of(&e), 3, "{e}");
    assert!(e.to_string().contains("E0920"), "{e}");
}

fn succeeded(o: &std::process::Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs `suite` at T = 256 in two shards, into `PREFIX-0` and `PREFIX-1`.
fn run_halves(suite: &Path, prefix: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for i in 0..2 {
        let d = PathBuf::from(format!("{}-{i}", prefix.display()));
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_spmdc"))
            .args(["bench", "--quiet", "--threads", "256", "--shard"])
            .arg(format!("{i}/2"))
            .arg("--out")
            .arg(&d)
            .arg(suite)
            .output()
            .expect("spmdc runs");
        succeeded(&o);
        dirs.push(d);
    }
    dirs
}

#[test]
fn cli_rejects_a_bad_suite_before_running_and_merges_folders() {
    let exe = env!("CARGO_BIN_EXE_spmdc");
    let tmp = std::env::temp_dir().join(format!("spmdc-suites-cli-{}", std::process::id()));
    let path = small_suite(&tmp);
    let good = read(&path);
    std::fs::write(
        &path,
        good.replace("target = \"dac-gpu\"", "target = \"dac-gpx\""),
    )
    .unwrap();
    let bad = std::process::Command::new(exe)
        .args(["bench", "--out"])
        .arg(tmp.join("never"))
        .arg(&path)
        .output()
        .expect("spmdc runs");
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("small.toml:21:10") && err.contains("dac-gpu"),
        "{err}"
    );
    assert!(!tmp.join("never").exists(), "nothing ran");
    std::fs::write(&path, good).unwrap();
    let dirs = run_halves(&path, &tmp.join("cli"));
    let merged = tmp.join("cli-merged");
    let o = std::process::Command::new(exe)
        .args(["bench", "merge"])
        .args(&dirs)
        .arg("--out")
        .arg(&merged)
        .output()
        .expect("spmdc runs");
    succeeded(&o);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("geomean all") && table.contains("jacobi"),
        "{table}"
    );
    assert!(merged.join("charts/speedup.svg").exists());
    let shard = std::process::Command::new(exe)
        .args(["bench", "gpu", "--shard", "2/2"])
        .output()
        .expect("spmdc runs");
    assert_eq!(shard.status.code(), Some(2));
    std::fs::remove_dir_all(&tmp).ok();
}

/// `--doc PAGE` writes the table and the charts between the page's markers, leaves
/// the rest alone, gives the same page when run again or from merged shards, and a
/// page it cannot use is a usage error before anything runs.
#[test]
fn cli_writes_results_into_a_doc_page() {
    let exe = env!("CARGO_BIN_EXE_spmdc");
    let tmp = std::env::temp_dir().join(format!("spmdc-suites-doc-{}", std::process::id()));
    let suite = small_suite(&tmp);
    let page = tmp.join("page.md");
    let text = "# Small\n\nHand-written.\n\n<!-- bench small --threads 256: table -->\nold\n<!-- end -->\n\n<!-- bench small --threads 256: charts -->\n<!-- end -->\n\nThe end.\n";
    std::fs::write(&page, text).unwrap();
    let bench = |extra: &[&str], out: &str, page: &Path| {
        std::process::Command::new(exe)
            .args(["bench", "--quiet", "--threads", "256"])
            .args(extra)
            .arg("--out")
            .arg(tmp.join(out))
            .arg("--doc")
            .arg(page)
            .arg(&suite)
            .output()
            .expect("spmdc runs")
    };
    let o = bench(&[], "whole", &page);
    succeeded(&o);
    let written = read(&page);
    // The table is what the command printed, set off by blank lines.
    let table = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(table.contains("geomean all"), "{table}");
    assert!(
        written.contains(&format!(
            "<!-- bench small --threads 256: table -->\n\n{table}\n<!-- end -->"
        )),
        "{written}"
    );
    assert!(written.starts_with("# Small\n\nHand-written.\n") && written.ends_with("The end.\n"));
    for chart in ["speedup", "stalls", "occupancy"] {
        let link = format!("](charts/small-threads-256/{chart}.svg)");
        assert!(written.contains(&link), "{link} in {written}");
        let svg = read(&tmp.join(format!("charts/small-threads-256/{chart}.svg")));
        assert_eq!(svg, read(&tmp.join(format!("whole/charts/{chart}.svg"))));
    }
    // Again: the same page.
    succeeded(&bench(&[], "again", &page));
    assert_eq!(read(&page), written);
    // From merged shards (given the same --threads to name the block): the same page.
    std::fs::write(&page, text).unwrap();
    let dirs = run_halves(&suite, &tmp.join("part"));
    let o = std::process::Command::new(exe)
        .args(["bench", "merge", "--threads", "256"])
        .args(&dirs)
        .arg("--out")
        .arg(tmp.join("merged"))
        .arg("--doc")
        .arg(&page)
        .output()
        .expect("spmdc runs");
    succeeded(&o);
    assert_eq!(read(&page), written);
    // Pages that cannot take the results: status 2, and nothing runs.
    let no_block = tmp.join("other.md");
    std::fs::write(&no_block, "<!-- bench dac: table -->\n<!-- end -->\n").unwrap();
    let open = tmp.join("open.md");
    std::fs::write(&open, "<!-- bench small --threads 256: table -->\n").unwrap();
    for (bad, extra, says) in [
        (tmp.join("missing.md"), &[][..], "missing.md"),
        (
            no_block,
            &[][..],
            "no `<!-- bench small --threads 256: table -->` block",
        ),
        (open, &[][..], "not closed"),
        (page.clone(), &["--shard", "0/2"][..], "not a shard"),
    ] {
        let o = bench(extra, "never", &bad);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{says} in {err}");
        assert!(!tmp.join("never").exists(), "nothing ran");
    }
    std::fs::remove_dir_all(&tmp).ok();
}

/// The example suite file of lang-spec/bench-suites.md is a valid suite (read as if it
/// sat in `examples/suites/`).
#[test]
fn the_documented_suite_file_loads() {
    let doc = read(&repo().join("lang-spec/bench-suites.md"));
    let text = doc
        .split("```toml\n")
        .nth(1)
        .and_then(|t| t.split("```").next())
        .expect("a toml block");
    let suite = Suite::parse(text, "bench-suites.md", &repo().join("examples/suites"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        suite.runs().len(),
        2 * 2 * 3,
        "two kernels, two configurations, three sizes"
    );
}

/// sim-speed: every kernel on the interpreter and both simulators in both modes, each
/// with a compile time and a rate; the simulators' runs checked against the
/// interpreter.
#[test]
fn sim_speed_measures_every_target_and_mode() {
    let opts = bench::BenchOptions {
        threads: Some(256),
        ..bench::BenchOptions::default()
    };
    let (suite, records, t) = bench::run_suite("sim-speed", &opts).expect("the suite runs");
    assert!(t.failures.is_empty(), "{:?}", t.failures);
    assert_eq!(records.len(), suite.kernels.len() * 5);
    let mut seen = std::collections::BTreeSet::new();
    for r in &records {
        seen.insert((r.target.clone(), r.config.clone()));
        assert!(r.host.compile_s > 0.0, "{} {}", r.kernel, r.config);
        assert!(
            r.count("dynamic_instructions") > 0,
            "{} {}",
            r.kernel,
            r.config
        );
        let timing = r.stats.contains_key("cycles");
        assert_eq!(
            timing,
            r.config == "timing",
            "{} {} {}",
            r.kernel,
            r.target,
            r.config
        );
    }
    assert_eq!(seen.len(), 5, "{seen:?}");
    let col = t.columns.iter().position(|c| c == "M lane-ops/s").unwrap();
    for (row, r) in t.rows.iter().zip(&records) {
        let is_real = matches!(row[col], bench::Cell::Real(..));
        assert_eq!(is_real, r.target == "interp", "{} {}", r.kernel, r.target);
    }
}
