//! Calls through function pointers on every target: a varying pointer calls each
//! function under the lanes that hold it, lanes that are off never call (even through
//! `NULL`), and a call through `NULL` in an active lane stops the launch with a runtime
//! error on the interpreter, `nyuzi` and `dac-gpu` alike (uniform and varying pointers).
//! A launch through a task pointer starts the task it holds; through `NULL` it stops the
//! launch when it would start a task, and not when no task would start.

mod common;

use common::launches::LaunchSpec;

use common::targets::{floats, targets, trap_message};
use spmdc::driver::FrontResult;
use spmdc::front::sema::Target;

const MAX_STEPS: u64 = 10_000_000;

/// `u` is `NULL` when `all_null` is set; `f` is `NULL` in lane `null_lane`, and lane 3
/// does not call through `f`.
const KERNEL: &str = r#"
typedef float (*Unary)(float);

float twice(float x) { return 2 * x; }
float neg(float x) { return -x; }

export void call(uniform float out[], uniform int null_lane, uniform int all_null) {
    Unary f = (programIndex % 2 == 0) ? twice : neg;
    if (programIndex == null_lane)
        f = NULL;
    uniform Unary u = all_null != 0 ? NULL : twice;
    float r = u(programIndex);
    if (programIndex != 3)
        r += f(programIndex);
    out[programIndex] = r;
}
"#;

fn front_for(target: Target) -> FrontResult {
    let front = common::check_source_for("fnptr.spmd", KERNEL, target);
    assert!(!front.diags.has_errors(), "{}", common::render_all(&front));
    front
}

fn launch(null_lane: i32, all_null: i32) -> LaunchSpec {
    LaunchSpec {
        entry: "call".into(),
        args: vec![
            "out=zeros(32)".into(),
            format!("null_lane={null_lane}"),
            format!("all_null={all_null}"),
        ],
        grid: None,
        block: None,
        dynamic_shared: None,
    }
}

#[test]
fn each_lane_calls_its_own_function_and_lanes_that_are_off_call_nothing() {
    for (name, target, run) in targets() {
        let front = front_for(target);
        // Lane 3 holds NULL but is off at the varying call: no trap.
        let r = run(&front, &launch(3, 0), MAX_STEPS).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let out = floats(&r, "out");
        for (i, &got) in out.iter().enumerate().take(target.program_count as usize) {
            let x = i as f32;
            let through_f = match i {
                3 => 0.0,
                _ if i % 2 == 0 => 2.0 * x,
                _ => -x,
            };
            assert_eq!(got, 2.0 * x + through_f, "{name}: lane {i}");
        }
    }
}

#[test]
fn a_call_through_null_in_an_active_lane_traps_on_every_target() {
    // A varying pointer NULL in lane 5 only; a uniform NULL pointer.
    for s in [launch(5, 0), launch(-1, 1)] {
        for (name, target, run) in targets() {
            let front = front_for(target);
            let text = trap_message(name, &front, run, &s, MAX_STEPS);
            let expected = "call through a null function pointer";
            assert!(text.contains(expected), "{name} {:?}: {text}", s.args);
            assert!(text.contains("fnptr.spmd:"), "{name} {:?}: {text}", s.args);
        }
    }
}

/// `launch[n] t(out)` through a task pointer that is `NULL` when `null` is set.
const TASK_KERNEL: &str = r#"
typedef task void (*Fill)(uniform float out[], uniform float k);

task void ramp(uniform float out[], uniform float k) { out[taskIndex] = k * taskIndex; }
task void flat(uniform float out[], uniform float k) { out[taskIndex] = k; }

export void go(uniform float out[], uniform int n, uniform int null) {
    uniform Fill t = null != 0 ? NULL : n > 4 ? ramp : flat;
    launch[n] t(out, 3);
}
"#;

fn task_launch(n: i32, null: i32) -> LaunchSpec {
    LaunchSpec {
        entry: "go".into(),
        args: vec![
            "out=zeros(8)".into(),
            format!("n={n}"),
            format!("null={null}"),
        ],
        grid: None,
        block: None,
        dynamic_shared: None,
    }
}

#[test]
fn a_launch_through_a_task_pointer_starts_the_task_it_holds_and_traps_on_null() {
    for (name, target, run) in targets() {
        let front = common::check_source_for("taskptr.spmd", TASK_KERNEL, target);
        assert!(!front.diags.has_errors(), "{}", common::render_all(&front));
        let out = |n, null| {
            let r = run(&front, &task_launch(n, null), MAX_STEPS)
                .unwrap_or_else(|e| panic!("{name}: {e:?}"));
            floats(&r, "out")[..8].to_vec()
        };
        assert_eq!(
            out(6, 0),
            [0., 3., 6., 9., 12., 15., 0., 0.],
            "{name}: ramp"
        );
        assert_eq!(out(2, 0), [3., 3., 0., 0., 0., 0., 0., 0.], "{name}: flat");
        // No task starts: NULL is never called.
        assert_eq!(out(0, 1), [0.; 8], "{name}: zero count");
        let text = trap_message(name, &front, run, &task_launch(2, 1), MAX_STEPS);
        let expected = "call through a null function pointer";
        assert!(text.contains(expected), "{name}: {text}");
        assert!(text.contains("taskptr.spmd:"), "{name}: {text}");
    }
}
