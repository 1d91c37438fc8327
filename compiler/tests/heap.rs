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

/// Every gang of 8 blocks of 64 program instances allocates, fills, checks and frees
/// uniform and varying memory in four rounds, at the same time as the others on the
/// targets that run blocks and gangs in parallel.
const MANY_GANGS: &str = r#"
export void many(uniform int out[]) {
    uniform int gang = extract(blockIdx.x * (blockDim.x / programCount) + threadIdx.x / programCount, 0);
    int ok = 0;
    for (uniform int round = 0; round < 4; round++) {
        uniform int * uniform g = uniform new uniform int[64];
        int * v = new int[3];
        for (uniform int i = 0; i < 64; i++)
            g[i] = gang * 1000 + i;
        v[0] = gang;
        v[1] = programIndex;
        v[2] = round;
        uniform int same = 0;
        for (uniform int i = 0; i < 64; i++)
            same += g[i] == gang * 1000 + i ? 1 : 0;
        ok += (same == 64 && v[0] == gang && v[1] == programIndex && v[2] == round) ? 1 : 0;
        delete v;
        delete g;
    }
    out[gang * programCount + programIndex] = ok;
}
"#;

#[test]
fn many_gangs_in_many_blocks_allocate_and_free_at_once_on_every_target() {
    let spec = LaunchSpec {
        entry: "many".into(),
        args: vec!["out=zeros(512)".into()],
        grid: Some("8".into()),
        block: Some("64".into()),
        dynamic_shared: None,
    };
    for (name, target, run) in targets() {
        let front = common::check_source_for("many.spmd", MANY_GANGS, target);
        assert!(!front.diags.has_errors(), "{}", common::render_all(&front));
        let r = run(&front, &spec, MAX_STEPS).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let out = r
            .buffers
            .iter()
            .find(|(n, _)| n == "out")
            .expect("the buffer is in the result")
            .1
            .bytes()
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect::<Vec<_>>();
        assert!(out.iter().all(|&x| x == 4), "{name}: {out:?}");
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
            assert!(text.contains(message), "{name} mode {mode}: {text}");
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
