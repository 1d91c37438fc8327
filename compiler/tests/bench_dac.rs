//! `spmdc bench dac` at a small scale: every kernel runs baseline and with DAC in
//! timing mode, both match the interpreter bit for bit, and the table's cells agree
//! with each other (reduction, speedup and energy savings from the counts, geomean rows
//! at the end).
//! The full-size run is a release-mode command (`docs/dac.md`).

use spmdc::bench::{self, BenchOptions, Cell};

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

fn text(c: Option<&Cell>) -> String {
    match c {
        Some(Cell::Text(s)) => s.clone(),
        other => panic!("not text: {other:?}"),
    }
}

#[test]
fn dac_suite_runs_every_kernel_both_ways_and_matches_the_interpreter() {
    let opts = BenchOptions {
        threads: Some(512 * 8),
        ..BenchOptions::default()
    };
    let (suite, records, t) = bench::run_suite("dac", &opts).expect("the suite runs");
    let kernels = &suite.kernels;
    assert!(t.failures.is_empty(), "{:?}", t.failures);
    assert!(kernels.len() >= 12);
    assert_eq!(records.len(), 2 * kernels.len(), "base and dac runs");
    assert_eq!(t.columns.len(), 20);
    assert_eq!(t.rows.len(), kernels.len() + 3);
    for (r, k) in kernels.iter().enumerate() {
        assert_eq!(text(t.cell(r, "kernel")), k.name);
        assert_eq!(text(t.cell(r, "check")), "ok", "{}", k.name);
        assert_eq!(t.rows[r].len(), t.columns.len());
        let base = count(t.cell(r, "warp instr base"));
        let with = count(t.cell(r, "warp instr dac"));
        let (cb, cd) = (
            count(t.cell(r, "cycles base")),
            count(t.cell(r, "cycles dac")),
        );
        assert!(base > 0 && with > 0 && cb > 0 && cd > 0, "{}", k.name);
        let reduction = real(t.cell(r, "reduction %"));
        let want = 100.0 * (1.0 - with as f64 / base as f64);
        assert!((reduction - want).abs() < 1e-9, "{}: {reduction}", k.name);
        let speedup = real(t.cell(r, "speedup"));
        assert!((speedup - cb as f64 / cd as f64).abs() < 1e-9, "{}", k.name);
        let decoupled = real(t.cell(r, "loads decoupled %"));
        assert!(decoupled >= 0.0, "{}", k.name);
        let stalls: f64 = [
            "stall mem %",
            "stall dep %",
            "stall barrier %",
            "stall queue %",
            "stall idle %",
        ]
        .iter()
        .map(|c| real(t.cell(r, c)))
        .sum();
        assert!((0.0..=100.0 + 1e-9).contains(&stalls), "{}", k.name);
        // Energy: each run's total, and the savings from the records' statistics.
        let run = |config: &str| {
            records
                .iter()
                .find(|x| x.kernel == k.name && x.config == config)
                .expect("the run's record")
        };
        for key in ["energy_total_nj", "energy_dynamic_nj"] {
            let (b, d) = (run("base").stat(key), run("dac").stat(key));
            assert!(b > 0.0 && d > 0.0, "{}: {key}", k.name);
            let col = match key {
                "energy_total_nj" => "energy saving %",
                _ => "dynamic saving %",
            };
            let saving = real(t.cell(r, col));
            assert!((saving - 100.0 * (1.0 - d / b)).abs() < 1e-9, "{}", k.name);
        }
        assert!(real(t.cell(r, "energy base nJ")) > 0.0, "{}", k.name);
        assert!(real(t.cell(r, "energy dac nJ")) > 0.0, "{}", k.name);
    }
    // The streaming kernel the pass was built on decouples its loads.
    let saxpy = kernels.iter().position(|k| k.name == "saxpy").unwrap();
    assert!(real(t.cell(saxpy, "loads decoupled %")) > 0.0);
    let n = kernels.len();
    for (i, label) in [
        "geomean memory-bound",
        "geomean compute-bound",
        "geomean all",
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(text(t.cell(n + i, "kernel")), *label);
        assert!(real(t.cell(n + i, "speedup")) > 0.0, "{label}");
        assert!(
            real(t.cell(n + i, "energy saving %")).is_finite(),
            "{label}"
        );
    }
    assert_eq!(
        text(t.cell(n + 2, "class")),
        format!("{} kernels", kernels.len())
    );
}

#[test]
fn dac_suite_rejects_an_unknown_machine() {
    let opts = BenchOptions {
        config: Some("no-such-machine".into()),
        ..BenchOptions::default()
    };
    assert!(matches!(
        bench::run_suite("dac", &opts),
        Err(bench::BenchError::Options(_))
    ));
}
