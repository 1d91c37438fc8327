//! Issue 6: values uniform among the lanes of a divergent region's mask
//! (`analysis::uniformity::relative`), end to end. A loop counter inside a divergent
//! `if` is computed once on both targets (scalar registers on nyuzi, the `.uni`
//! datapath on dac-gpu); kernels where it escapes the region (kept after the join and
//! stored under the outer mask, read from a lane outside the region by `extract`,
//! printed with the inactive lanes) must still give the interpreter's results. Every
//! kernel runs on the interpreter and on both targets with the analysis on and off.

mod common;

use spmdc::back::dac_gpu::run::{run_on_dac_gpu, DacRunOptions};
use spmdc::back::nyuzi::run::{run_on_nyuzi, NyuziRunOptions};
use spmdc::driver::{self, FrontResult, RunRequest};
use spmdc::front::sema;
use spmdc::interp::Limits;
use spmdc::launch::{RunResult, StatValue};

const NYUZI: sema::Target = sema::Target {
    program_count: 16,
    pointer_size: 4,
};

fn front(src: &str, target: sema::Target, no_uniformity: bool) -> FrontResult {
    let mut front = common::check_source_for("relative.spmd", src, target);
    assert!(!front.diags.has_errors(), "front end errors");
    front.switches.no_uniformity = no_uniformity;
    front
}

fn count(r: &RunResult, key: &str) -> u64 {
    match r.stats.get(key) {
        Some(StatValue::Count(n)) => n,
        other => panic!("{key}: {other:?}"),
    }
}

/// Runs `entry` on the interpreter and on `target` with the analysis on and off;
/// checks buffers and printed text agree; returns the (on, off) results.
fn on_and_off(src: &str, target: &str, entry: &str, args: &[&str]) -> (RunResult, RunResult) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let req = RunRequest {
        optimize: driver::OPTIMIZE_BY_DEFAULT,
        entry,
        args: &args,
        grid: None,
        block: None,
        dynamic_shared: None,
        limits: Limits::default(),
    };
    let sema_target = if target == "nyuzi" {
        NYUZI
    } else {
        common::DAC_GPU
    };
    let run = |no_uniformity: bool| {
        let f = front(src, sema_target, no_uniformity);
        let r = if target == "nyuzi" {
            let opts = NyuziRunOptions {
                timing: true,
                ..NyuziRunOptions::default()
            };
            run_on_nyuzi(&f, &req, &opts).map_err(|e| format!("{e:?}"))
        } else {
            run_on_dac_gpu(&f, &req, &DacRunOptions::default()).map_err(|e| format!("{e:?}"))
        };
        r.unwrap_or_else(|e| panic!("{entry} on {target}: {e}"))
    };
    let want = driver::run_on_interp(&front(src, sema_target, false), &req)
        .unwrap_or_else(|e| panic!("interp: {e:?}"));
    let (on, off) = (run(false), run(true));
    for (r, what) in [(&on, "default"), (&off, "--no-uniformity")] {
        assert_eq!(
            r.buffers, want.buffers,
            "{entry} on {target} ({what}): buffers differ"
        );
        assert_eq!(
            r.output, want.output,
            "{entry} on {target} ({what}): output differs"
        );
    }
    (on, off)
}

const STENCIL: &str = r#"
export void region_loop(uniform int n, uniform float w[], uniform float src[],
                        uniform float dst[]) {
    for (uniform int base = 0; base < 64; base += programCount) {
        int i = base + programIndex;
        if (i < n) {
            float acc = 0;
            for (int k = 0; k < 5; k++)
                acc += w[k] * src[i + k];
            dst[i] = acc;
        }
    }
}
"#;

const STENCIL_ARGS: &[&str] = &["n=37", "w=range(5)", "src=range(70)", "dst=zeros(64)"];

#[test]
fn a_counter_inside_a_divergent_if_runs_on_scalar_registers_on_nyuzi() {
    let (on, off) = on_and_off(STENCIL, "nyuzi", "region_loop", STENCIL_ARGS);
    let (v_on, v_off) = (
        count(&on, "vector_instructions"),
        count(&off, "vector_instructions"),
    );
    assert!(
        v_on < v_off,
        "vector instructions {v_on} (on) vs {v_off} (off)"
    );
}

#[test]
fn a_counter_inside_a_divergent_if_uses_the_uniform_datapath_on_dac_gpu() {
    on_and_off(STENCIL, "dac-gpu", "region_loop", STENCIL_ARGS);
    let (on, off) = (
        uniform_insts(&front(STENCIL, common::DAC_GPU, false)),
        uniform_insts(&front(STENCIL, common::DAC_GPU, true)),
    );
    assert!(on > off, "uniform instructions {on} (on) vs {off} (off)");
}

/// How many instructions of the compiled kernels are uniform (`.uni`).
fn uniform_insts(f: &FrontResult) -> usize {
    let compiled = spmdc::back::dac_gpu::run::compile(
        f,
        driver::OPTIMIZE_BY_DEFAULT,
        &DacRunOptions::default().codegen,
    )
    .unwrap_or_else(|e| panic!("compiles: {e:?}"));
    compiled
        .program
        .kernels
        .iter()
        .flat_map(|k| k.insts.iter())
        .filter(|i| i.is_uniform())
        .count()
}

/// `k` after the region keeps -1 in the lanes outside it and is stored under the
/// outer mask: computing it once would store 5 there.
const AFTER_JOIN: &str = r#"
export void after_join(uniform int n, uniform float w[], uniform int out[]) {
    for (uniform int base = 0; base < 64; base += programCount) {
        int i = base + programIndex;
        int k = -1;
        float acc = 0;
        if (i < n) {
            for (k = 0; k < 5; k++)
                acc += w[k];
        }
        out[i] = k + (int)acc;
    }
}
"#;

/// `extract` reads lane 0, outside the region (`programIndex > 2`), whose `k` is
/// never updated.
const CROSS_LANE: &str = r#"
export void cross_lane(uniform int n, uniform float w[], uniform int out[]) {
    for (uniform int base = 0; base < 64; base += programCount) {
        int i = base + programIndex;
        int k = 100 + programIndex;
        if (programIndex > 2 && i < n) {
            float acc = 0;
            for (k = 0; k < 5; k++)
                acc += w[k];
            out[i] = extract(k, 0) + (int)acc;
        }
    }
}
"#;

/// `print` shows the inactive lanes too.
const PRINTED: &str = r#"
export void printed(uniform int n, uniform float w[]) {
    int k = 7;
    if (programIndex < n) {
        float acc = 0;
        for (k = 0; k < 3; k++) {
            acc += w[k];
            print("%\n", k);
        }
    }
}
"#;

#[test]
fn escaping_counters_keep_the_interpreters_results_on_nyuzi() {
    let w = ["n=37", "w=range(5)", "out=zeros(64)"];
    on_and_off(AFTER_JOIN, "nyuzi", "after_join", &w);
    on_and_off(CROSS_LANE, "nyuzi", "cross_lane", &w);
    on_and_off(PRINTED, "nyuzi", "printed", &["n=5", "w=range(5)"]);
}

#[test]
fn escaping_counters_keep_the_interpreters_results_on_dac_gpu() {
    let w = ["n=37", "w=range(5)", "out=zeros(64)"];
    on_and_off(AFTER_JOIN, "dac-gpu", "after_join", &w);
    on_and_off(CROSS_LANE, "dac-gpu", "cross_lane", &w);
    on_and_off(PRINTED, "dac-gpu", "printed", &["n=5", "w=range(5)"]);
}
