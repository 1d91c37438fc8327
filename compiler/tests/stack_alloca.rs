//! `alloca` on every target: memory that fits is the gang's and is freed when the
//! allocating function returns (also across `barrier()`, with several gangs per
//! block), and an allocation the gang's stack cannot hold (one huge size, a negative
//! size converted to `size_t`, or allocations piling up in a loop) stops the launch
//! with the `stack_exhausted` runtime error at the program's line, never a panic or a
//! hang.

mod common;

use common::launches::LaunchSpec;

use common::targets::{floats, targets, trap_message};
use spmdc::driver::FrontResult;
use spmdc::front::sema::Target;

const MAX_STEPS: u64 = 50_000_000;

/// `mode` picks the misuse: 0 none, 1 one allocation of 64 MiB, 2 1 KiB allocations
/// in a loop that never returns, 3 a size of -1 (the largest `size_t`).
const KERNEL: &str = r#"
export void stack(uniform float out[], uniform int mode) {
    uniform float * uniform a = (uniform float * uniform)alloca(programCount * sizeof(uniform float));
    a[programIndex] = 2 * programIndex;
    if (mode == 1) {
        uniform int8 * uniform big = (uniform int8 * uniform)alloca(64 << 20);
        big[0] = 1;
    }
    if (mode == 2) {
        for (uniform int i = 0; i < 1 << 20; i++) {
            uniform int8 * uniform p = (uniform int8 * uniform)alloca(1024);
            p[0] = 1;
        }
    }
    if (mode == 3) {
        uniform int n = -1;
        uniform int8 * uniform p = (uniform int8 * uniform)alloca(n);
        p[0] = 1;
    }
    out[programIndex] = a[programIndex];
}
"#;

fn front_for(name: &str, text: &str, target: Target) -> FrontResult {
    let front = common::check_source_for(name, text, target);
    assert!(!front.diags.has_errors(), "{}", common::render_all(&front));
    front
}

fn launch(mode: i32) -> LaunchSpec {
    LaunchSpec {
        entry: "stack".into(),
        args: vec!["out=zeros(32)".into(), format!("mode={mode}")],
        grid: None,
        block: None,
        dynamic_shared: None,
    }
}

#[test]
fn an_allocation_that_fits_runs_on_every_target() {
    for (name, target, run) in targets() {
        let front = front_for("alloca.spmd", KERNEL, target);
        let r = run(&front, &launch(0), MAX_STEPS).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let out = floats(&r, "out");
        for (i, &got) in out.iter().enumerate().take(target.program_count as usize) {
            assert_eq!(got, 2.0 * i as f32, "{name}: lane {i}");
        }
    }
}

#[test]
fn an_allocation_past_the_stack_traps_on_every_target() {
    for mode in [1, 2, 3] {
        for (name, target, run) in targets() {
            let front = front_for("alloca.spmd", KERNEL, target);
            let text = trap_message(name, &front, run, &launch(mode), MAX_STEPS);
            assert!(
                text.contains("`alloca` failed: the gang's stack cannot hold the allocation"),
                "{name} mode {mode}: {text}"
            );
            assert!(text.contains("alloca.spmd:"), "{name} mode {mode}: {text}");
        }
    }
}

/// Each gang of a 64-instance block allocates before and after barriers; its
/// allocations stay its own (Nyuzi keeps the frame pointer of an allocating function
/// across the barrier, which clobbers it).
const GANGS: &str = r#"
export void gangs(uniform float out[]) {
    uniform int gang = extract(threadIdx.x / programCount, 0);
    uniform float * uniform a = (uniform float * uniform)alloca(programCount * sizeof(uniform float));
    a[programIndex] = gang * 100 + programIndex;
    barrier();
    uniform float * uniform b = (uniform float * uniform)alloca(programCount * sizeof(uniform float));
    b[programIndex] = a[programIndex] + 1;
    barrier();
    out[gang * programCount + programIndex] = a[programIndex] + b[programIndex];
}
"#;

#[test]
fn gangs_of_a_block_allocate_across_barriers_on_every_target() {
    let spec = LaunchSpec {
        entry: "gangs".into(),
        args: vec!["out=zeros(64)".into()],
        grid: Some("1".into()),
        block: Some("64".into()),
        dynamic_shared: None,
    };
    for (name, target, run) in targets() {
        let front = front_for("gangs.spmd", GANGS, target);
        let r = run(&front, &spec, MAX_STEPS).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let out = floats(&r, "out");
        let n = target.program_count as usize;
        for (i, &got) in out.iter().enumerate() {
            let (gang, lane) = (i / n, i % n);
            let want = 2.0 * (gang * 100 + lane) as f32 + 1.0;
            assert_eq!(got, want, "{name}: element {i}");
        }
    }
}

/// A recursive function allocates in every activation, and so does a function it
/// calls: each activation's memory is its own, and returns free it, so fifty calls of
/// a nine-deep recursion fit (dac-gpu keeps an out-of-line activation's `alloca` top
/// in its frame).
const RECURSIVE: &str = r#"
uniform int noinline inner(uniform int k) {
    uniform int * uniform q = (uniform int * uniform)alloca(512);
    q[127] = k;
    return q[127];
}

uniform int rec(uniform int n) {
    uniform int * uniform p = (uniform int * uniform)alloca(1024);
    p[0] = n;
    p[255] = 3 * n;
    uniform int below = 0;
    if (n > 0)
        below = rec(n - 1);
    uniform int mine = inner(n);
    return below + p[0] + p[255] - mine;
}

export void recursive(uniform float out[]) {
    uniform int total = 0;
    for (uniform int i = 0; i < 50; i++)
        total += rec(8);
    out[programIndex] = total;
}
"#;

#[test]
fn recursive_functions_allocate_per_activation_on_every_target() {
    let spec = LaunchSpec {
        entry: "recursive".into(),
        args: vec!["out=zeros(32)".into()],
        grid: None,
        block: None,
        dynamic_shared: None,
    };
    for (name, target, run) in targets() {
        let front = front_for("recursive.spmd", RECURSIVE, target);
        let r = run(&front, &spec, MAX_STEPS).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let out = floats(&r, "out");
        for (i, &got) in out.iter().enumerate().take(target.program_count as usize) {
            assert_eq!(got, 50.0 * 108.0, "{name}: lane {i}");
        }
    }
}
