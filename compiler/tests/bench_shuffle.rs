//! `spmdc bench shuffle` (`examples/suites/shuffle.toml`) at a small scale: every
//! kernel runs with `--shuffle off`, `all` and `auto` on both GPU presets and nyuzi,
//! and every run matches the interpreter bit for bit; the static counts of `all`
//! reach paper 004's Table 2 (bar the ISPC-style gaussblur, the documented
//! shortfall), `auto` keeps no more than `all`, and `auto` is never more than 1%
//! slower than `off` on the GPU presets; nyuzi reports its own static counts, and the
//! halo counts are consistent. The full-size run is a release-mode command
//! (`docs/shuffle.md`).

use spmdc::bench::{self, BenchOptions, Cell, RunOptions};

fn count(c: Option<&Cell>, what: &str) -> u64 {
    match c {
        Some(Cell::Count(n)) => *n,
        other => panic!("{what}: not a count: {other:?}"),
    }
}

fn real(c: Option<&Cell>, what: &str) -> f64 {
    match c {
        Some(Cell::Real(x, _)) => *x,
        other => panic!("{what}: not a real: {other:?}"),
    }
}

#[test]
fn shuffle_suite_runs_every_kernel_in_every_mode_and_matches_the_interpreter() {
    let opts = BenchOptions {
        threads: Some(256),
        run: RunOptions {
            jobs: 2,
            ..RunOptions::default()
        },
        ..BenchOptions::default()
    };
    let (suite, records, t) = bench::run_suite("shuffle", &opts).expect("the suite runs");
    assert!(t.failures.is_empty(), "{:?}", t.failures);
    assert_eq!(records.len(), suite.kernels.len() * 9);
    // A row per kernel, then the stencils' and all kernels' geomeans.
    assert_eq!(t.rows.len(), suite.kernels.len() + 2);
    for (r, k) in suite.kernels.iter().enumerate() {
        let name = &k.name;
        assert_eq!(t.cell(r, "kernel"), Some(&Cell::Text(name.clone())));
        assert_eq!(t.cell(r, "check"), Some(&Cell::Text("ok".into())), "{name}");
        let shuffles = count(t.cell(r, "shuffles"), name);
        let loads = count(t.cell(r, "loads"), name);
        assert!(shuffles <= loads, "{name}: {shuffles}/{loads}");
        let paper = k.data["table2"].as_str().expect("Table 2's a/b");
        let (paper_shuffles, _) = paper.split_once('/').expect("a/b");
        let paper_shuffles: u64 = paper_shuffles.parse().expect("a number");
        if name == "gaussblur" {
            // One load instruction in a loop over the window: nothing pairs.
            assert_eq!(shuffles, 0);
        } else {
            assert!(shuffles >= paper_shuffles, "{name}: {shuffles} < {paper}");
        }
        for preset in ["gtx480", "maxwell"] {
            let kept = count(t.cell(r, &format!("auto {preset}")), name);
            assert!(kept <= shuffles, "{name} on {preset}: auto keeps {kept}");
            let auto = real(t.cell(r, &format!("{preset} auto x")), name);
            assert!(auto >= 0.99, "{name} on {preset}: auto {auto}");
        }
        // Halos: a load served from one is a shuffle, and each halo serves one.
        let served = count(t.cell(r, "halo-served"), name);
        let halos = count(t.cell(r, "halos"), name);
        assert!(
            halos <= served && served < shuffles.max(1),
            "{name}: {halos}/{served}"
        );
        // nyuzi reports its own static counts, for its 16 lanes.
        let nyuzi = count(t.cell(r, "nyuzi shuffles"), name);
        let nyuzi_loads = count(t.cell(r, "nyuzi loads"), name);
        assert!(nyuzi <= nyuzi_loads && nyuzi_loads > 0, "{name} on nyuzi");
        if shuffles > 0 {
            assert!(nyuzi > 0, "{name}: no shuffle on nyuzi");
        }
    }
    assert_eq!(
        t.cell(suite.kernels.len() + 1, "class"),
        Some(&Cell::Text(format!("{} kernels", suite.kernels.len())))
    );
}
