//! The inliner (`spmdc::passes::inline`):
//! - IR text in, IR text out: what a call becomes (continuation block, copied slots,
//!   the mask parameter replaced by the call's mask), what is left alone (recursion,
//!   callees over the size limit), and that the result verifies;
//! - exactness: each case runs on the reference interpreter before and after (IR
//!   cases) or with and without `--no-inline` through the whole pipeline (source
//!   cases), in full and partial gangs, and must give the same bits and output.

mod common;

use common::*;
use spmdc::interp::{self, Launch, Limits, Memory};
use spmdc::ir::{self, verify, write};
use spmdc::passes::{self, inline};

/// Parses and verifies an IR text.
fn parse(text: &str) -> ir::Module {
    let module = ir::parse_module(text).unwrap_or_else(|e| panic!("{e:?}"));
    verify::verify_module(&module).unwrap_or_else(|e| panic!("{e:?}"));
    module
}

/// Inlines with `options`; the result must verify. Returns it and the number of calls
/// inlined.
fn inlined(module: &ir::Module, options: &inline::Options) -> (ir::Module, usize) {
    let mut m = module.clone();
    let n = inline::run(&mut m, options);
    verify::verify_module(&m).unwrap_or_else(|e| panic!("{e:?}\n{}", write::module_to_string(&m)));
    (m, n)
}

/// Runs `entry` over one block of `threads` threads with a 64-word zeroed `out`
/// buffer (the entry's first argument) and the uniform `extra` arguments after it:
/// `out`'s words and what `print` wrote.
fn run(module: &ir::Module, entry: &str, threads: u32, extra: &[u64]) -> (Vec<u32>, String) {
    let func = module.function_by_name(entry).expect("entry");
    let mut mem = Memory::new();
    let out = mem.add_buffer(vec![0u8; 64 * 4], "out");
    let mut args = vec![out];
    args.extend_from_slice(extra);
    let launch = Launch::new(sim::Dim3::ONE, sim::Dim3::new(threads, 1, 1), args);
    let outcome = interp::run(module, func, &launch, &mut mem, Limits::default())
        .unwrap_or_else(|e| panic!("{entry}: {e}"));
    let words = mem
        .buffer(out)
        .expect("out")
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (words, outcome.output)
}

/// The calls left in function `name`.
fn calls_in(module: &ir::Module, name: &str) -> usize {
    let f = &module.functions[module.function_by_name(name).expect("function")];
    f.layout
        .iter()
        .flat_map(|&b| &f.blocks[b].insts)
        .filter(|&&i| matches!(f.insts[i], ir::InstData::Call { .. }))
        .count()
}

/// A masked callee with a uniform return slot written under its mask (read first, as a
/// fresh frame's zero), called twice: once with every lane on, once with none. Inlined,
/// its slot must still start at zero on each call, so the second call returns 0.
const TWICE: &str = "module lanes 8 ptr 8

function internal @acc(i32) -> i32 masked {
    ss0 = stack 4 align 4
block0(v0: i32, v1: [bool]):
    v2 = stack_addr ss0
    v3 = load.i32 private v2
    v4 = iadd v3, v0
    store private v2, v4 mask v1
    v5 = load.i32 private v2
    return v5
}

function export @main(ptr) masked {
block0(v0: ptr, v1: [bool]):
    v2 = iconst.i32 7
    v3 = call @acc(v2) mask v1
    v4 = iconst.[bool] 0
    v5 = band v1, v4
    v6 = call @acc(v2) mask v5
    v7 = iadd v3, v6
    store generic v0, v7
    return
}
";

#[test]
fn callee_called_twice_gets_two_copies_with_fresh_slots() {
    let module = parse(TWICE);
    let (out, n) = inlined(&module, &inline::Options::default());
    assert_eq!(n, 2);
    assert_eq!(calls_in(&out, "main"), 0);
    let text = write::module_to_string(&out);
    // Each copy is the callee prepared once (zeroed, then promoted): its slot starts
    // from the constant 0, so the second copy, under an empty mask, returns 0.
    let expected = "function export @main(ptr) masked {
    ss0 = stack 4 align 4
    ss1 = stack 4 align 4
block0(v0: ptr, v1: [bool]):
    v2 = iconst.i32 7
    jump block1
block1:
    v3 = iconst.i32 0
    v4 = iadd v3, v2
    v5 = any v1
    v6 = select v5, v4, v3
    jump block2(v6)
block2(v7: i32):
    v8 = iconst.[bool] 0
    v9 = band v1, v8
    jump block3
block3:
    v10 = iconst.i32 0
    v11 = iadd v10, v2
    v12 = any v9
    v13 = select v12, v11, v10
    jump block4(v13)
block4(v14: i32):
    v15 = iadd v7, v14
    store generic v0, v15
    return
}";
    assert!(text.contains(expected), "{text}");
    // The callee itself is untouched.
    assert!(
        text.contains("function internal @acc(i32) -> i32 masked"),
        "{text}"
    );
    for threads in [8, 3] {
        let before = run(&module, "main", threads, &[]);
        assert_eq!(before.0[0], 7);
        assert_eq!(run(&out, "main", threads, &[]), before);
    }
}

/// A masked callee with a per-lane local in a stack slot, an early return under a
/// varying condition (lowered as the live-lanes slot and the return slot) and a
/// `print`, called under a divergent mask: the copy reads the call's mask where the
/// callee read its mask parameter.
const DIVERGENT: &str = "module lanes 8 ptr 8
string str0 \"half %\\n\"

function internal @half_or_neg([i32]) -> [i32] masked {
    ss0 = stack 32 align 32
block0(v0: [i32], v1: [bool]):
    v2 = special lane_index
    v3 = sext.i64 v2
    v4 = iconst.i64 4
    v5 = splat v4
    v6 = imul v3, v5
    v7 = bitcast.ptr v6
    v8 = stack_addr ss0
    v9 = splat v8
    v10 = iadd v9, v7
    v11 = iconst.i32 0
    v12 = splat v11
    v13 = icmp slt v0, v12
    v14 = band v1, v13
    v15 = ineg v0
    store private v10, v15 mask v14
    v16 = bnot v13
    v17 = band v1, v16
    v18 = any v17
    brif v18, block1, block2
block1:
    v19 = iconst.i32 1
    v20 = splat v19
    v21 = sshr v0, v20
    store private v10, v21 mask v17
    print str0(v21) mask v17
    jump block2
block2:
    v22 = load.i32 private v10
    return v22
}

function export @main(ptr) masked {
block0(v0: ptr, v1: [bool]):
    v2 = special lane_index
    v3 = iconst.i32 3
    v4 = splat v3
    v5 = isub v2, v4
    v6 = iconst.i32 5
    v7 = splat v6
    v8 = imul v5, v7
    v9 = iconst.i32 1
    v10 = splat v9
    v11 = band v2, v10
    v12 = icmp eq v11, v10
    v13 = band v1, v12
    v14 = call @half_or_neg(v8) mask v13
    v15 = sext.i64 v2
    v16 = iconst.i64 4
    v17 = splat v16
    v18 = imul v15, v17
    v19 = bitcast.ptr v18
    v20 = splat v0
    v21 = iadd v20, v19
    store generic v21, v14 mask v13
    return
}
";

#[test]
fn masked_callee_under_divergent_mask_reads_the_call_mask() {
    let module = parse(DIVERGENT);
    let (out, n) = inlined(&module, &inline::Options::default());
    assert_eq!(n, 1);
    assert_eq!(calls_in(&out, "main"), 0);
    let text = write::module_to_string(&out);
    // The callee's mask parameter v1 became the call's mask v13 in the copy.
    assert!(text.contains("band v13, "), "{text}");
    assert!(text.contains("mask v13\n"), "{text}");
    // Its per-lane slot was zeroed per lane through the callee's lane offset (the
    // shape promotion accepts) and promoted in the prepared body: the lanes that
    // write neither value keep the zero.
    assert!(
        text.contains("v14 = iconst.i32 0\n    v15 = splat v14\n"),
        "{text}"
    );
    assert!(text.contains("v21 = select v19, v20, v15\n"), "{text}");
    for threads in [8, 5] {
        let before = run(&module, "main", threads, &[]);
        assert!(before.1.contains("half"), "{}", before.1);
        assert_eq!(run(&out, "main", threads, &[]), before, "{threads} threads");
    }
}

/// Self recursion, mutual recursion and a non-recursive helper they call: only the
/// helper is inlined, into each of them.
const RECURSIVE: &str = "module lanes 8 ptr 8

function internal @dec(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 1
    v2 = isub v0, v1
    return v2
}

function internal @fact(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 1
    v2 = icmp sle v0, v1
    brif v2, block1, block2
block1:
    return v1
block2:
    v3 = call @dec(v0)
    v4 = call @fact(v3)
    v5 = imul v0, v4
    return v5
}

function internal @even(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 0
    v2 = icmp eq v0, v1
    brif v2, block1, block2
block1:
    v3 = iconst.i32 1
    return v3
block2:
    v4 = call @dec(v0)
    v5 = call @odd(v4)
    return v5
}

function internal @odd(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 0
    v2 = icmp eq v0, v1
    brif v2, block1, block2
block1:
    return v1
block2:
    v3 = call @dec(v0)
    v4 = call @even(v3)
    return v4
}

function export @main(ptr) masked {
block0(v0: ptr, v1: [bool]):
    v2 = iconst.i32 6
    v3 = call @fact(v2)
    v4 = call @even(v2)
    v5 = iadd v3, v4
    store generic v0, v5
    return
}
";

#[test]
fn recursive_cycles_are_left_alone() {
    let module = parse(RECURSIVE);
    let (out, n) = inlined(&module, &inline::Options::default());
    // @dec into @fact, @even and @odd; nothing else.
    assert_eq!(n, 3);
    assert_eq!(calls_in(&out, "fact"), 1);
    assert_eq!(calls_in(&out, "even"), 1);
    assert_eq!(calls_in(&out, "odd"), 1);
    assert_eq!(calls_in(&out, "main"), 2);
    assert_eq!(calls_in(&out, "dec"), 0);
    let text = write::module_to_string(&out);
    assert!(text.contains("call @fact("), "{text}");
    assert!(text.contains("call @odd("), "{text}");
    let before = run(&module, "main", 8, &[]);
    assert_eq!(before.0[0], 721);
    assert_eq!(run(&out, "main", 8, &[]), before);
}

#[test]
fn callees_over_the_size_limit_stay_calls() {
    let module = parse(TWICE);
    let small = inline::Options {
        max_callee_insts: 5,
        ..inline::Options::default()
    };
    let (out, n) = inlined(&module, &small);
    assert_eq!(n, 0);
    assert_eq!(
        write::module_to_string(&out),
        write::module_to_string(&module)
    );
    // The caller limit stops inlining once the caller has grown to it.
    let full = inline::Options {
        max_caller_insts: 9,
        ..inline::Options::default()
    };
    let (out, n) = inlined(&module, &full);
    assert_eq!(n, 1);
    assert_eq!(calls_in(&out, "main"), 1);
}

/// A void callee with several returns (a `trap` too) and a callee that calls it: the
/// bottom-up order inlines the inner one into the outer one first, and the outer one's
/// copy carries it into the entry.
const NESTED: &str = "module lanes 8 ptr 8

function internal @put(ptr, i32) {
block0(v0: ptr, v1: i32):
    v2 = iconst.i32 100
    v3 = icmp sgt v1, v2
    brif v3, block1, block2
block1:
    trap unreachable
block2:
    v4 = iconst.i32 0
    v5 = icmp slt v1, v4
    brif v5, block3, block4
block3:
    return
block4:
    store generic v0, v1
    return
}

function internal @twice(ptr, i32) -> i32 {
block0(v0: ptr, v1: i32):
    call @put(v0, v1)
    v2 = iadd v1, v1
    return v2
}

function export @main(ptr) masked {
block0(v0: ptr, v1: [bool]):
    v2 = iconst.i32 21
    v3 = call @twice(v0, v2)
    v4 = iconst.i64 4
    v5 = bitcast.ptr v4
    v6 = iadd v0, v5
    store generic v6, v3
    return
}
";

#[test]
fn nested_callees_and_multiple_returns_inline_bottom_up() {
    let module = parse(NESTED);
    let (out, n) = inlined(&module, &inline::Options::default());
    // @put into @twice, then @twice (already without its call) into @main.
    assert_eq!(n, 2);
    assert_eq!(calls_in(&out, "main"), 0);
    assert_eq!(calls_in(&out, "twice"), 0);
    let text = write::module_to_string(&out);
    assert!(text.contains("trap unreachable"), "{text}");
    let before = run(&module, "main", 8, &[]);
    assert_eq!(&before.0[..2], &[21, 42]);
    assert_eq!(run(&out, "main", 8, &[]), before);
}

/// A program compiled through the whole pipeline, with and without the inliner.
fn compiled(src: &str, no_inline: bool) -> ir::Module {
    let result = check_source("inline.spmd", src);
    assert!(!result.diags.has_errors(), "{}", render_all(&result));
    let switches = passes::Switches {
        no_inline,
        ..passes::Switches::default()
    };
    spmdc::driver::lower_front_with_switches(&result, true, &switches)
        .unwrap_or_else(|d| panic!("{d:?}"))
}

/// Compiles `src` both ways, checks the inlined build has no call left in `entry`
/// (when `all_inlined`), and runs `entry` in a full and a partial gang both ways.
fn same_both_ways(src: &str, entry: &str, extra: &[u64], all_inlined: bool) {
    let with = compiled(src, false);
    let without = compiled(src, true);
    assert!(calls_in(&without, entry) > 0, "the program calls nothing");
    if all_inlined {
        assert_eq!(
            calls_in(&with, entry),
            0,
            "{}",
            write::module_to_string(&with)
        );
    }
    let lanes = with.lane_count;
    for threads in [lanes, lanes - 3] {
        let a = run(&without, entry, threads, extra);
        let b = run(&with, entry, threads, extra);
        assert_eq!(a, b, "{entry}, {threads} threads");
    }
}

#[test]
fn source_early_varying_returns_called_twice_under_divergence() {
    same_both_ways(
        "static int classify(int x) {
    if (x < 3) return 100 + x;
    if (x % 2 == 0) return x * 2;
    int y = x;
    for (int k = 0; k < x % 5; k++) {
        y += k;
        if (y > 40) return -y;
    }
    return y;
}

export void k(uniform int out[], uniform int n) {
    int v = programIndex * n;
    if (v % 3 != 0)
        v = classify(v) + classify(v + 1);
    out[programIndex] = v;
}
",
        "k",
        &[interp::i32_arg(7)],
        true,
    );
}

#[test]
fn source_stack_arrays_uniform_returns_and_print() {
    same_both_ways(
        "static float weigh(float a) {
    float t[4];
    uniform int w[3] = { 2, 3, 5 };
    for (uniform int i = 0; i < 4; i++)
        t[i] = a * w[i % 3];
    print(\"t %\\n\", t[1]);
    return t[0] + t[1] + t[2] + t[3];
}

static uniform int count_on(uniform int limit) {
    uniform int c = 0;
    foreach_active (i) { if (i < limit) c++; }
    return c;
}

export void k(uniform int out[], uniform int n) {
    float x = programIndex;
    for (uniform int r = 0; r < n; r++) {
        if (programIndex % 2 == r % 2) {
            x = weigh(x) * 0.5;
            out[32 + r] = count_on(r + 3);
        }
    }
    out[programIndex] = (int)x;
}
",
        "k",
        &[interp::i32_arg(3)],
        true,
    );
}

#[test]
fn source_recursion_stays_and_exports_stay_entries() {
    let src = "static int fib(int n) {
    if (n < 2) return n;
    return fib(n - 1) + fib(n - 2);
}

export void helper(uniform int out[], uniform int n) {
    out[programIndex] = fib(programIndex % n) + n;
}

export void k(uniform int out[], uniform int n) {
    helper(out, n + 1);
    out[programIndex] += 1;
}
";
    same_both_ways(src, "k", &[interp::i32_arg(6)], false);
    let with = compiled(src, false);
    // fib stays recursive; helper is inlined into k and still an entry point.
    assert!(calls_in(&with, "fib") > 0);
    let text = write::module_to_string(&with);
    assert!(!text.contains("call @helper("), "{text}");
    assert!(text.contains("function export @helper("), "{text}");
    let a = run(&compiled(src, true), "helper", 16, &[interp::i32_arg(4)]);
    assert_eq!(run(&with, "helper", 16, &[interp::i32_arg(4)]), a);
}

/// A function that stores to a constant address (memory-mapped I/O, like the print
/// routines' serial port) stays a call, so the dac-gpu still sees the constant port
/// address in its body; its caller is inlined as usual.
#[test]
fn stores_to_a_constant_address_stay_calls() {
    let module = parse(
        "module lanes 8 ptr 8

function internal @port(i32) {
block0(v0: i32):
    v1 = iconst.i64 4294901832
    v2 = bitcast.ptr v1
    store generic v2, v0
    return
}

function internal @twice(i32) {
block0(v0: i32):
    call @port(v0)
    call @port(v0)
    return
}

function export @main(ptr) masked {
block0(v0: ptr, v1: [bool]):
    v2 = iconst.i32 65
    call @twice(v2)
    return
}
",
    );
    let (out, n) = inlined(&module, &inline::Options::default());
    assert_eq!(n, 1);
    assert_eq!(calls_in(&out, "main"), 2);
    assert_eq!(calls_in(&out, "twice"), 2);
}

/// Runtime routines as legalization leaves them called (IR text): a straight-line
/// one, one that asserts (a division's zero test), and a user function that is not a
/// routine. `run_runtime` inlines only the first.
const ROUTINES: &str = "module lanes 8 ptr 8

function internal @__spmdc_rt_twice_i32_v([i32]) -> [i32] {
block0(v0: [i32]):
    v1 = iadd v0, v0
    return v1
}

function internal @__spmdc_rt_half_i32_v([i32]) -> [i32] {
block0(v0: [i32]):
    v1 = iconst.i32 0
    v6 = splat v1
    v2 = icmp slt v0, v6
    v3 = any v2
    brif v3, block1, block2
block1:
    trap assert
block2:
    v4 = iconst.i32 1
    v7 = splat v4
    v5 = ushr v0, v7
    return v5
}

function internal @plus_one([i32]) -> [i32] {
block0(v0: [i32]):
    v3 = iconst.i32 1
    v1 = splat v3
    v2 = iadd v0, v1
    return v2
}

function export @main(ptr) masked {
block0(v0: ptr, v1: [bool]):
    v2 = special lane_index
    v3 = call @__spmdc_rt_twice_i32_v(v2)
    v4 = call @__spmdc_rt_half_i32_v(v3)
    v5 = call @plus_one(v4)
    v6 = sext.i64 v2
    v7 = iconst.i64 4
    v8 = splat v7
    v9 = imul v6, v8
    v10 = bitcast.ptr v9
    v11 = splat v0
    v12 = iadd v11, v10
    store generic v12, v5 mask v1
    return
}
";

#[test]
fn runtime_routines_without_asserts_are_inlined_with_the_calls_span() {
    let module = parse(ROUTINES);
    // Distinct spans: the calls' and the routine's own.
    let mut marked = module.clone();
    let call_span = spmdc::source::Span::new(spmdc::source::FileId(0), 10, 20);
    let own_span = spmdc::source::Span::new(spmdc::source::FileId(7), 1, 2);
    for (_, f) in marked.functions.iter_mut() {
        let span = if f.name == "main" {
            call_span
        } else {
            own_span
        };
        let insts: Vec<ir::Inst> = f.insts.keys().collect();
        for i in insts {
            f.spans[i] = span;
        }
    }
    let mut out = marked.clone();
    let n = inline::run_runtime(&mut out, &inline::Options::runtime());
    verify::verify_module(&out).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(n, 1);
    // The asserting routine and the user function stay calls.
    assert_eq!(calls_in(&out, "main"), 2);
    let text = write::module_to_string(&out);
    assert!(!text.contains("call @__spmdc_rt_twice_i32_v"), "{text}");
    assert!(text.contains("call @__spmdc_rt_half_i32_v"), "{text}");
    assert!(text.contains("call @plus_one"), "{text}");
    let main = &out.functions[out.function_by_name("main").expect("main")];
    for &b in &main.layout {
        for &i in &main.blocks[b].insts {
            assert_eq!(main.spans[i], call_span, "{:?}", main.insts[i]);
        }
    }
    let before = run(&module, "main", 8, &[]);
    assert_eq!(&before.0[..3], &[1, 2, 3]);
    assert_eq!(run(&out, "main", 8, &[]), before);
    // With the default options (the pipeline's inliner) the copies keep their spans.
    let mut kept = marked;
    inline::run(&mut kept, &inline::Options::default());
    let main = &kept.functions[kept.function_by_name("main").expect("main")];
    assert!(main
        .layout
        .iter()
        .flat_map(|&b| &main.blocks[b].insts)
        .any(|&i| main.spans[i] == own_span));
}
