//! Tests of the dac-gpu back end: small kernels compiled and run on the functional
//! simulator, compared with the interpreter on the same program (32 lanes, 8-byte
//! pointers).

use super::run::{run_on_dac_gpu, DacRunOptions};
use super::{compile_module, Options};
use crate::driver::{self, FrontOptions, FrontResult, RunRequest, Stage};
use crate::front::sema::Target;
use crate::interp::Limits;

fn front(src: &str) -> FrontResult {
    let opts = FrontOptions {
        target: Target {
            program_count: 32,
            pointer_size: 8,
        },
        ..FrontOptions::default()
    };
    driver::run_front("t.spmd", None, src.to_string(), &opts, Stage::Check)
}

/// Runs `entry` with `args` on both targets; returns (interp, dac-gpu) JSON buffers.
fn both(src: &str, entry: &str, args: &[&str], block: Option<&str>) -> (String, String) {
    let f = front(src);
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let req = RunRequest {
        optimize: true,
        entry,
        args: &args,
        grid: None,
        block,
        dynamic_shared: None,
        limits: Limits::default(),
    };
    let a = driver::run_on_interp(&f, &req).expect("interp runs");
    let b = match run_on_dac_gpu(&f, &req, &DacRunOptions::default()) {
        Ok(b) => b,
        Err(e) => panic!("dac-gpu run failed: {e:?}"),
    };
    (format!("{:?}", a.buffers), format!("{:?}", b.buffers))
}

#[test]
fn saxpy_matches_interp() {
    let src =
        "export void saxpy(uniform int n, uniform float a, uniform float x[], uniform float y[]) {
        foreach (i = 0 ... n) { y[i] = a * x[i] + y[i]; } }";
    let (a, b) = both(
        src,
        "saxpy",
        &["n=1000", "a=2", "x=range(1000)", "y=fill(1000,1)"],
        None,
    );
    assert_eq!(a, b);
}

#[test]
fn divergent_if_and_reduction_match_interp() {
    let src = "export void k(uniform int out[], uniform float f[]) {
        int v = programIndex;
        if (v % 3 == 0) { v = v * 7; } else { v = -v; }
        out[programIndex] = v;
        out[32] = reduce_add(v);
        float x = programIndex * 0.1f;
        f[0] = reduce_add(x);
        f[1] = reduce_min(x);
        f[2 + programIndex] = exclusive_scan_add(x);
    }";
    let (a, b) = both(src, "k", &["out=zeros(33)", "f=zeros(34)"], None);
    assert_eq!(a, b);
}

#[test]
fn kernel_without_calls_compiles_with_register_count() {
    let f = front("export void k(uniform int out[]) { out[programIndex] = programIndex * 2; }");
    let m = driver::lower_front_with(&f, true).expect("lowers");
    let c = compile_module(&m, &Options::default()).expect("compiles");
    let k = c.program.kernel("k").expect("kernel k");
    assert!(k.num_regs > 0 && k.num_regs <= 255);
    assert_eq!(c.lines[0].len(), k.insts.len());
    assert!(
        sim::gpu::check(&c.program).is_ok(),
        "{:?}",
        sim::gpu::check(&c.program)
    );
    let err = compile_module(
        &m,
        &Options {
            max_regs: 2,
            ..Options::default()
        },
    )
    .expect_err("too few registers");
    assert!(err[0].message.contains("--max-regs"));
}

#[test]
fn listing_parses_back_and_carries_source_lines() {
    let src = "export void k(uniform int out[]) {\n    out[programIndex] = programIndex * 2;\n}\n";
    let f = front(src);
    let m = driver::lower_front_with(&f, true).expect("lowers");
    let c = compile_module(&m, &Options::default()).expect("compiles");
    let plain = super::listing(&c, None);
    let parsed = sim::gpu::parse(&plain).expect("the listing parses");
    assert_eq!(parsed.kernels[0].insts, c.program.kernels[0].insts);
    let with_lines = super::listing(&c, Some(&f.sources));
    assert!(
        with_lines.contains("// t.spmd:2: out[programIndex] = programIndex * 2;"),
        "{with_lines}"
    );
}

#[test]
fn failed_assert_traps_at_its_line() {
    let src = "export void k(uniform int a[]) {\n    a[0] = 1;\n    assert(programIndex < 3);\n}\n";
    let f = front(src);
    let args = vec!["a=zeros(4)".to_string()];
    let req = RunRequest {
        optimize: true,
        entry: "k",
        args: &args,
        grid: None,
        block: None,
        dynamic_shared: None,
        limits: Limits::default(),
    };
    match run_on_dac_gpu(&f, &req, &DacRunOptions::default()) {
        Err(crate::driver::RunError::Trap(e)) => {
            assert!(e.message.contains("assertion failed"), "{}", e.message);
            let text = e.render(&f.sources);
            assert!(text.contains("t.spmd:3:"), "{text}");
        }
        other => panic!("expected a trap, got {other:?}"),
    }
}

#[test]
fn lane_ops_small_ints_wide_values_and_partial_blocks_match_interp() {
    let src = "export void k(uniform int out[], uniform int64 w[], uniform double d[], uniform int cnt[]) {
        int x = programIndex * 3 + 1;
        out[programIndex] = shuffle(x, (programIndex + 5) % programCount);
        out[32 + programIndex] = rotate(x, 3) + shift(x, -2);
        uniform int e = extract(x, 7);
        out[64 + programIndex] = insert(x, 4, e * 100);
        int8 b = (int8)(programIndex * 37);
        int8 c = b * (int8)3 + (int8)100;
        out[96 + programIndex] = c >> 1;
        unsigned int8 ub = (unsigned int8)(programIndex * 29);
        out[128 + programIndex] = ub / (unsigned int8)3 + (ub < (unsigned int8)100 ? 1 : 0);
        int64 big = (int64)programIndex * 3000000000;
        w[programIndex] = big / 7 - (big >> 3);
        w[32] = reduce_add(big);
        w[33] = reduce_max(big - 50000000000);
        double dd = programIndex * 0.3;
        d[programIndex] = sqrt(dd) * dd;
        d[32] = reduce_add(dd);
        if (programIndex % 2 == 1) { atomic_add_global(&cnt[0], programIndex); }
        atomic_add_global(&cnt[1], 1);
        out[160 + programIndex] = popcnt(programIndex) + count_trailing_zeros(programIndex + 64) + count_leading_zeros(programIndex);
    }";
    for block in [None, Some("20"), Some("45")] {
        let (a, b) = both(
            src,
            "k",
            &[
                "out=zeros(192)",
                "w=zeros(34)",
                "d=zeros(33)",
                "cnt=zeros(2)",
            ],
            block,
        );
        assert_eq!(a, b, "block {block:?}");
    }
}

/// The kernels of `src` compiled (optimized) for the dac-gpu.
fn compiled(src: &str) -> super::Compiled {
    let f = front(src);
    let m = driver::lower_front_with(&f, true).expect("lowers");
    compile_module(&m, &Options::default()).expect("compiles")
}

/// How many accesses of each space (`ld`/`st`/`atom` in `.shared`, `.global`) `k` has.
fn shared_and_global_accesses(k: &sim::gpu::Kernel) -> (usize, usize) {
    use sim::gpu::{Op, Space};
    let mut n = (0, 0);
    for i in &k.insts {
        let sp = match i.op {
            Op::Ld { space, .. } | Op::St { space, .. } | Op::Atom { space, .. } => space,
            _ => continue,
        };
        match sp {
            Space::Shared => n.0 += 1,
            Space::Global => n.1 += 1,
            _ => {}
        }
    }
    n
}

#[test]
fn shared_variables_use_shared_memory_through_pointers_and_calls() {
    // `tile` is reached directly, through a pointer and in a callee: all `.shared`;
    // the kernel's `.shared` bytes are its layout (64 ints).
    let src = "void put(uniform int * uniform p, int i, int v) { p[i] = v; }
    task void k(uniform int out[]) {
        shared uniform int tile[64];
        shared uniform int count[1];
        uniform int * uniform q = &tile[0];
        if (threadIdx.x == 0) { count[0] = 0; }
        barrier();
        put(q, threadIdx.x, threadIdx.x * 3);
        atomic_add_local(&count[0], 1);
        barrier();
        out[threadIdx.x] = tile[63 - threadIdx.x] + count[0];
    }";
    let c = compiled(src);
    let k = c.program.kernel("k").expect("kernel k");
    assert_eq!(k.shared_bytes, 264);
    assert_eq!(c.shared_bytes[0], 0, "nothing in the global fallback");
    let (shared, _) = shared_and_global_accesses(k);
    assert!(shared >= 4, "{}", sim::gpu::print(&c.program));
    let (a, b) = both(src, "k", &["out=zeros(64)"], Some("64"));
    assert_eq!(a, b);
}

#[test]
fn a_pointer_to_shared_or_global_memory_falls_back_to_global() {
    // `p` is `tile` or the output buffer: no static space, so `tile` lives in the
    // global fallback and every access is `.global`; `only` stays in `.shared`.
    let src = "task void k(uniform int out[], uniform int which) {
        shared uniform int tile[32];
        shared uniform int only[32];
        uniform int * uniform p = which > 0 ? &tile[0] : &out[0];
        p[threadIdx.x] = threadIdx.x + 1;
        only[threadIdx.x] = 2 * threadIdx.x;
        barrier();
        out[32 + threadIdx.x] = tile[31 - threadIdx.x] + only[threadIdx.x];
    }";
    let c = compiled(src);
    let k = c.program.kernel("k").expect("kernel k");
    assert_eq!(k.shared_bytes, 128);
    assert_eq!(c.shared_bytes[0], 128);
    for which in ["which=1", "which=0"] {
        let (a, b) = both(src, "k", &["out=zeros(64)", which], Some("32"));
        assert_eq!(a, b, "{which}");
    }
}
