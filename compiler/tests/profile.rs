//! `spmdc run --profile` and `--trace`: the per-line profile partitions the run
//! (its rows add up to the statistics the run reports, on every target and in the
//! timing models), and the CLI's annotated source and mask trace keep their form.

use std::process::Command;

use spmdc::driver::{self, FrontOptions, RunRequest, Stage};
use spmdc::launch::{RunResult, StatValue};
use spmdc::profile::run::{self, Machine, Wanted};
use spmdc::profile::{Counts, SourceProfile};

/// A loop with a divergent branch, so the lanes differ from line to line.
const KERNEL: &str = "\
export void clear_odd(uniform int n, uniform int v[]) {
    foreach (i = 0 ... n) {
        if (v[i] % 2 == 1) {
            v[i] = 0;
        }
    }
}
";

const ARGS: [&str; 2] = ["n=37", "v=range(37)"];

fn stat(result: &RunResult, key: &str) -> u64 {
    match result.stats.get(key) {
        Some(StatValue::Count(n)) => n,
        other => panic!("statistic {key}: {other:?}"),
    }
}

/// Runs KERNEL on `machine` with a profile.
fn profiled(machine: Machine) -> (SourceProfile, RunResult) {
    let mut options = FrontOptions::default();
    options.target = match &machine {
        Machine::Interp => options.target,
        Machine::Nyuzi(_) => spmdc::back::nyuzi::TARGET,
        Machine::DacGpu(_) => spmdc::back::dac_gpu::TARGET,
    };
    let front = driver::run_front("k.spmd", None, KERNEL.to_string(), &options, Stage::Check);
    assert!(!front.diags.has_errors());
    let args: Vec<String> = ARGS.iter().map(|a| a.to_string()).collect();
    let req = RunRequest {
        optimize: true,
        entry: "clear_odd",
        args: &args,
        grid: Some("2"),
        block: None,
        dynamic_shared: None,
        limits: Default::default(),
    };
    let wanted = Wanted {
        profile: true,
        trace: None,
    };
    let recorded = run::run(&front, &req, &machine, wanted);
    let result = recorded.result.expect("the kernel runs");
    (recorded.profile.expect("a profile"), result)
}

/// The sum of every line's and every bucket's counters.
fn sum_of_rows(p: &SourceProfile) -> Counts {
    let mut sum = Counts::default();
    for c in p
        .lines
        .iter()
        .map(|l| &l.counts)
        .chain(p.other.iter().map(|b| &b.counts))
    {
        sum.instructions += c.instructions;
        sum.lane_slots += c.lane_slots;
        sum.active_lanes += c.active_lanes;
        for (k, v) in &c.stalls {
            *sum.stalls.entry(k.clone()).or_default() += v;
        }
    }
    sum
}

fn assert_rows_add_up(p: &SourceProfile) {
    let sum = sum_of_rows(p);
    assert_eq!(sum.instructions, p.totals.instructions);
    assert_eq!(sum.lane_slots, p.totals.lane_slots);
    assert_eq!(sum.active_lanes, p.totals.active_lanes);
    assert_eq!(sum.stalls, p.totals.stalls);
    let per_inst: u64 = p.instructions.iter().map(|i| i.counts.instructions).sum();
    assert_eq!(
        per_inst, p.totals.instructions,
        "every instruction is listed"
    );
    // The store under the branch runs with fewer lanes than the test before it.
    let line = |n: u32| p.lines.iter().find(|l| l.line == n && l.file == "k.spmd");
    let (test, store) = (line(3).expect("line 3 ran"), line(4).expect("line 4 ran"));
    assert!(store.counts.avg_active_lanes < test.counts.avg_active_lanes);
}

#[test]
fn interp_lines_add_up_to_the_statistics() {
    let (p, result) = profiled(Machine::Interp);
    assert_rows_add_up(&p);
    assert_eq!(p.totals.instructions, stat(&result, "dynamic_instructions"));
    assert_eq!(p.totals.active_lanes, stat(&result, "lane_operations"));
}

fn nyuzi(timing: bool) -> Machine {
    Machine::Nyuzi(spmdc::back::nyuzi::run::NyuziRunOptions {
        timing,
        ..Default::default()
    })
}

#[test]
fn nyuzi_lines_add_up_to_the_statistics() {
    for timing in [false, true] {
        let (p, result) = profiled(nyuzi(timing));
        assert_rows_add_up(&p);
        assert_eq!(p.totals.instructions, stat(&result, "dynamic_instructions"));
        assert_eq!(p.totals.active_lanes, stat(&result, "active_lanes"));
        assert_eq!(p.totals.lane_slots, stat(&result, "vector_lane_slots"));
        for (cause, cycles) in &p.totals.stalls {
            assert_eq!(*cycles, stat(&result, &format!("stall_{cause}")), "{cause}");
        }
        assert_eq!(p.stall_causes.is_empty(), !timing);
    }
}

fn dac(timing: bool) -> Machine {
    Machine::DacGpu(Box::new(spmdc::back::dac_gpu::DacRunOptions {
        timing,
        ..Default::default()
    }))
}

#[test]
fn dac_gpu_lines_add_up_to_the_statistics() {
    for timing in [false, true] {
        let (p, result) = profiled(dac(timing));
        assert_rows_add_up(&p);
        assert_eq!(p.totals.instructions, stat(&result, "dynamic_instructions"));
        // Lanes are those that execute (guard included), which no statistic counts.
        assert_eq!(p.totals.lane_slots, 32 * p.totals.instructions);
        if result.stats.get("thread_insts").is_some() {
            assert!(p.totals.active_lanes <= stat(&result, "thread_insts"));
        }
        for (cause, cycles) in &p.totals.stalls {
            assert_eq!(*cycles, stat(&result, &format!("stall_{cause}")), "{cause}");
        }
        assert_eq!(p.stall_causes.is_empty(), !timing);
    }
}

fn spmdc_stdout(args: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!("spmdc-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("k.spmd");
    std::fs::write(&file, KERNEL).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_spmdc"))
        .current_dir(&dir)
        .args(["run", "k.spmd", "--entry", "clear_odd"])
        .args(ARGS.iter().flat_map(|a| ["--arg", a]))
        .args(args)
        .output()
        .expect("run spmdc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn cli_profile_annotates_the_source() {
    insta::assert_snapshot!(spmdc_stdout(&["--profile", "--stats"]));
}

#[test]
fn cli_trace_steps_one_gang_with_its_lanes() {
    insta::assert_snapshot!(spmdc_stdout(&[
        "--trace",
        "--trace-gang",
        "0",
        "--trace-limit",
        "32"
    ]));
}

#[test]
fn cli_profile_json_matches_the_text_totals() {
    let json = spmdc_stdout(&["--target", "nyuzi", "--profile-json", "-", "--json"]);
    // Standard output holds the profile, then the run's object with it inside.
    let mut stream = serde_json::Deserializer::from_str(&json).into_iter::<serde_json::Value>();
    let alone = stream.next().unwrap().unwrap();
    let run = stream.next().unwrap().unwrap();
    assert_eq!(alone, run["profile"]);
    assert_eq!(alone["version"], spmdc::profile::JSON_VERSION);
    assert_eq!(
        alone["totals"]["instructions"],
        run["stats"]["dynamic_instructions"]
    );
}
