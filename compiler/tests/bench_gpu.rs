//! `spmdc bench gpu` at a small scale: the library entry (every kernel compiles,
//! runs in timing mode and matches the interpreter bit for bit, the table has a row
//! per kernel with the statistics filled in) and the command line (`--json`, the
//! output folder, exit codes). The full-size run (1M threads per kernel) is a
//! release-mode benchmark.

use spmdc::bench::{self, BenchError, BenchOptions, Cell};

fn small(threads: u64) -> BenchOptions {
    BenchOptions {
        threads: Some(threads),
        ..BenchOptions::default()
    }
}

fn count(c: Option<&Cell>) -> u64 {
    match c {
        Some(Cell::Count(n)) => *n,
        other => panic!("not a count: {other:?}"),
    }
}

fn real(c: Option<&Cell>) -> f64 {
    match c {
        Some(Cell::Real(x, _)) => *x,
        other => panic!("not a real: {other:?}"),
    }
}

#[test]
fn gpu_suite_runs_every_kernel_and_matches_the_interpreter() {
    let (suite, records, t) = bench::run_suite("gpu", &small(1024)).expect("the suite runs");
    assert!(t.failures.is_empty(), "{:?}", t.failures);
    assert_eq!(t.rows.len(), suite.kernels.len());
    assert_eq!(records.len(), suite.kernels.len());
    assert!(t.rows.len() >= 8);
    for (r, k) in suite.kernels.iter().enumerate() {
        assert_eq!(t.cell(r, "kernel"), Some(&Cell::Text(k.name.clone())));
        assert_eq!(t.cell(r, "check"), Some(&Cell::Text("ok".into())));
        let threads = count(t.cell(r, "threads"));
        let warp = count(t.cell(r, "warp instr"));
        let thread = count(t.cell(r, "thread instr"));
        let cycles = count(t.cell(r, "cycles"));
        assert!(threads >= 1024, "{}: {threads} threads", k.name);
        // Every thread runs at least a few instructions; a warp has at most 32 lanes.
        assert!(
            thread >= 4 * threads,
            "{}: {thread} thread instructions",
            k.name
        );
        assert!(
            warp * 32 >= thread && warp > 0,
            "{}: {warp} warp instructions",
            k.name
        );
        assert!(cycles > 0, "{}", k.name);
        let ipc = real(t.cell(r, "IPC"));
        assert!(
            (ipc - thread as f64 / cycles as f64).abs() < 0.01 * ipc,
            "{}: IPC {ipc}",
            k.name
        );
        for col in ["L1 hit", "L2 hit"] {
            let h = real(t.cell(r, col));
            assert!((0.0..=1.0).contains(&h), "{}: {col} {h}", k.name);
        }
    }
    let text = t.to_text();
    assert_eq!(text.lines().count(), 2 + t.rows.len());
    assert!(text.contains("mandelbrot (divergent)"));
}

#[test]
fn bad_options_are_errors() {
    let mut o = small(64);
    o.config = Some("no-such-machine".into());
    assert!(matches!(
        bench::run_suite("gpu", &o),
        Err(BenchError::Options(_))
    ));
    assert!(matches!(
        bench::run_suite("nope", &small(64)),
        Err(BenchError::UnknownSuite(..))
    ));
    assert!(matches!(
        bench::run_suite("/nonexistent/suite.toml", &small(64)),
        Err(BenchError::Suite { .. })
    ));
}

#[test]
fn cli_prints_json_writes_the_folder_and_rejects_unknown_suites() {
    let exe = env!("CARGO_BIN_EXE_spmdc");
    let dir = std::env::temp_dir().join(format!("spmdc-bench-gpu-{}", std::process::id()));
    let out = std::process::Command::new(exe)
        .args([
            "bench",
            "gpu",
            "--threads",
            "256",
            "--config",
            "maxwell",
            "--json",
            "--out",
        ])
        .arg(&dir)
        .output()
        .expect("spmdc runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(j["suite"], "gpu");
    let rows = j["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 8);
    assert!(rows
        .iter()
        .all(|r| r["check"] == "ok" && r["cycles"].as_u64() > Some(0)));
    assert_eq!(j["failures"].as_array().map(Vec::len), Some(0));
    // The folder: one record per run, the table, and the suite's charts.
    let runs = std::fs::read_dir(dir.join("runs")).expect("runs/").count();
    assert_eq!(runs, 8);
    let md = std::fs::read_to_string(dir.join("table.md")).expect("table.md");
    assert!(md.contains("| saxpy"));
    for chart in ["stalls", "occupancy"] {
        let svg = std::fs::read_to_string(dir.join(format!("charts/{chart}.svg"))).expect(chart);
        assert!(svg.starts_with("<svg") && svg.contains("saxpy"), "{chart}");
    }
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("runs/00000.json")).unwrap())
            .unwrap();
    assert_eq!(record["kernel"], "saxpy");
    assert!(record["machine"].as_str().unwrap().contains("maxwell"));
    assert!(record["stats"]["cycles"].as_u64() > Some(0));
    std::fs::remove_dir_all(&dir).ok();
    let bad = std::process::Command::new(exe)
        .args(["bench", "nope"])
        .output()
        .expect("spmdc runs");
    assert_eq!(bad.status.code(), Some(2));
}
