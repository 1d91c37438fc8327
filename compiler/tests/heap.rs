//! `new` and `delete` misuse stops the launch on every target: an allocation the heap
//! cannot hold traps `heap_exhausted`, and a second `delete` of one pointer (or a
//! `delete` of a pointer into the middle of an allocation) traps `bad_delete`, at the
//! program's line, for uniform and varying pointers alike; lanes that are off neither
//! allocate nor free.

mod common;

use common::launches::LaunchSpec;

use common::targets::{floats, targets, trap_message};
use spmdc::driver::FrontResult;
use spmdc::front::sema::Target;

const MAX_STEPS: u64 = 50_000_000;

/// `mode` picks the misuse: 0 none, 1 a uniform allocation past the heap, 2 a varying
/// one past the heap in lane 3 only, 3 a uniform double delete, 4 a varying double
/// delete in lane 5 only, 5 a delete of a pointer into an allocation, 6 as 2 but with
/// lane 3 off.
const KERNEL: &str = r#"
export void heap(uniform float out[], uniform int mode) {
    uniform float * uniform u = uniform new uniform float[programCount];
    int * v = new int[programIndex + 1];
    u[programIndex] = programIndex;
    v[programIndex] = 2 * programIndex;
    out[programIndex] = u[programIndex] + v[programIndex];
    if (mode == 1) {
        uniform int8 * uniform big = uniform new uniform int8[5 << 20];
        big[0] = 1;
    }
    if (mode == 2 || mode == 6) {
        int n = programIndex == 3 ? 5 << 20 : 4;
        if (mode == 2 || programIndex != 3) {
            int8 * b = new int8[n];
            b[0] = 1;
        }
    }
    if (mode == 5) {
        delete u + 1;
    }
    delete[] u;
    if (mode == 3) {
        delete[] u;
    }
    delete v;
    if (mode == 4 && programIndex == 5) {
        delete v;
    }
}
"#;

fn front_for(target: Target) -> FrontResult {
    let front = common::check_source_for("heap.spmd", KERNEL, target);
    assert!(!front.diags.has_errors(), "{}", common::render_all(&front));
    front
}

fn launch(mode: i32) -> LaunchSpec {
    LaunchSpec {
        entry: "heap".into(),
        args: vec!["out=zeros(32)".into(), format!("mode={mode}")],
        grid: None,
        block: None,
        dynamic_shared: None,
    }
}

#[test]
fn allocations_that_fit_and_deletes_that_match_run_on_every_target() {
    for mode in [0, 6] {
        for (name, target, run) in targets() {
            let front = front_for(target);
            let r =
                run(&front, &launch(mode), MAX_STEPS).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let out = floats(&r, "out");
            for (i, &got) in out.iter().enumerate().take(target.program_count as usize) {
                assert_eq!(got, 3.0 * i as f32, "{name} mode {mode}: lane {i}");
            }
        }
    }
}

fn traps_on_every_target(modes: &[i32], message: &str) {
    for &mode in modes {
        for (name, target, run) in targets() {
            let front = front_for(target);
            let text = trap_message(name, &front, run, &launch(mode), MAX_STEPS);
            // Nyuzi's trap is a `break` instruction: the machine says the kernel trapped.
            let expected = if name == "nyuzi" {
                "the kernel trapped"
            } else {
                message
            };
            assert!(text.contains(expected), "{name} mode {mode}: {text}");
            assert!(text.contains("heap.spmd:"), "{name} mode {mode}: {text}");
        }
    }
}

#[test]
fn an_allocation_past_the_heap_traps_on_every_target() {
    traps_on_every_target(&[1, 2], "the heap (4 MiB) cannot hold the allocation");
}

#[test]
fn a_double_delete_or_a_pointer_into_an_allocation_traps_on_every_target() {
    traps_on_every_target(&[3, 4, 5], "not the start of a live allocation");
}
