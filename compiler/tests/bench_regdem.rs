//! `spmdc bench regdem` at a small scale: one register-hungry kernel, written here
//! with a small launch, through the whole suite (every allocation the predictor
//! weighs runs in the timing model and matches the interpreter; the table marks the
//! choice and the fastest; the geomean row sums up). The full suite on
//! `tests/regdem_bench/` is a release-mode benchmark (see its README).

use spmdc::bench::{self, BenchOptions, Cell};

/// A kernel keeping `n` floats live across a loop, launched on 4 blocks of 64.
fn hungry(n: usize) -> String {
    let loads: Vec<String> = (0..n)
        .map(|j| format!("float a{j} = x[i + {j} * m];"))
        .collect();
    let steps: Vec<String> = (0..n)
        .map(|j| format!("a{j} = a{j} * a{} + a{};", (j + 1) % n, (j + 2) % n))
        .collect();
    let sum: Vec<String> = (0..n).map(|j| format!("a{j}")).collect();
    format!(
        "// Launch:\n\
         //   spmdc run hungry.spmd --entry hungry --grid 4 --block 64 --arg m=256 \\\n\
         //       --arg x='random({size},1,0,1)' --arg y='zeros(256)' --print y\n\
         task void hungry(uniform int m, uniform float x[], uniform float y[]) {{\n\
         int i = blockIdx.x * blockDim.x + threadIdx.x;\n{}\n\
         for (uniform int k = 0; k < 4; k++) {{\n{}\n}}\n\
         y[i] = {};\n}}\n",
        loads.join("\n"),
        steps.join("\n"),
        sum.join(" + "),
        size = 256 * n,
    )
}

fn text(c: Option<&Cell>) -> String {
    match c {
        Some(Cell::Text(s)) => s.clone(),
        other => panic!("not text: {other:?}"),
    }
}

#[test]
fn the_suite_times_every_candidate_and_marks_the_choice_and_the_fastest() {
    let dir = std::env::temp_dir().join(format!("spmdc-regdem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hungry.spmd"), hungry(48)).unwrap();
    // A suite file of one kernel, with the regdem hook.
    let suite = "name = \"regdem-small\"\n\
                 description = \"one hungry kernel\"\n\
                 layout = \"regdem\"\n\
                 [[config]]\nname = \"auto\"\ntarget = \"dac-gpu\"\nmachine = \"maxwell\"\n\
                 [[kernel]]\nname = \"hungry\"\nfile = \"hungry.spmd\"\nlaunch = \"header\"\n";
    std::fs::write(dir.join("suite.toml"), suite).unwrap();
    let path = dir.join("suite.toml").display().to_string();
    let (_, _, t) = bench::run_suite(&path, &BenchOptions::default()).expect("the suite runs");
    std::fs::remove_dir_all(&dir).ok();
    assert!(t.failures.is_empty(), "{:?}", t.failures);
    let variants: Vec<usize> = (0..t.rows.len())
        .filter(|&r| text(t.cell(r, "kernel")) == "hungry")
        .collect();
    // The spill-free baseline and, for the cliffs below it, local and demoted ones.
    assert!(variants.len() >= 3, "{}", t.to_text());
    let names: Vec<String> = variants
        .iter()
        .map(|&r| text(t.cell(r, "variant")))
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("spill-free")),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.starts_with("local")), "{names:?}");
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("shared") || n.starts_with("mixed")),
        "{names:?}"
    );
    let marked = |col: &str| {
        variants
            .iter()
            .filter(|&&r| text(t.cell(r, col)) == "*")
            .count()
    };
    assert_eq!(marked("choice"), 1, "{}", t.to_text());
    assert_eq!(marked("fastest"), 1, "{}", t.to_text());
    for &r in &variants {
        assert_eq!(text(t.cell(r, "check")), "ok");
    }
    let last = t.rows.len() - 1;
    assert_eq!(text(t.cell(last, "kernel")), "geomean");
    assert!(text(t.cell(last, "variant")).contains("choice/best"));
}
