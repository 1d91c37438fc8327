//! The IR pass pipeline (`spmdc::passes`):
//! - snapshots of promoted IR under `tests/passes/snapshots/`, and IR-text cases;
//! - differential runs: every program of `tests/ispc/` and `tests/conformance/` gives the
//!   same `RET` buffers on the interpreter with and without the pipeline, at 16 and 32
//!   lanes, and never executes more instructions with it.

mod common;

use common::*;
use spmdc::ir::{self, verify, write};
use spmdc::passes;

fn optimized(module: &ir::Module) -> ir::Module {
    let mut m = module.clone();
    let pipeline = passes::Pipeline {
        verify: true,
        ..passes::Pipeline::standard()
    };
    pipeline.run(&mut m).unwrap_or_else(|e| panic!("{e}"));
    m
}

/// Runs `name` with a zeroed 64-float `RET`, `aFOO[i] = i + 1` and `b = 5`: the `RET`
/// bits and the dynamic instruction count.
fn run(module: &ir::Module, name: &str, lanes: u32) -> Result<(Vec<u32>, u64), String> {
    let run = ispc::run_entry(module, name, lanes, 20_000_000)?;
    Ok((ispc::words(&run.ret), run.dynamic_instructions))
}

/// Canonical NaNs compare equal.
fn canon(bits: &[u32]) -> Vec<u32> {
    bits.iter()
        .map(|&b| {
            if f32::from_bits(b).is_nan() {
                u32::MAX
            } else {
                b
            }
        })
        .collect()
}

/// The target of `lanes` lanes and 8-byte pointers, to preprocess a file for (so that
/// `TARGET_WIDTH`, which per-instance brace lists depend on, is the gang width).
fn target(lanes: u32) -> spmdc::front::sema::Target {
    spmdc::front::sema::Target {
        program_count: lanes,
        pointer_size: 8,
    }
}

/// Runs every test program with the pipeline off and on; returns the total dynamic
/// instruction counts (off, on) and per-file counts.
fn differential(lanes: u32) -> (u64, u64, Vec<(String, u64, u64)>) {
    let mut failures = Vec::new();
    let mut per_file = Vec::new();
    let (mut total_off, mut total_on) = (0, 0);
    for dir in ["tests/ispc", "tests/conformance"] {
        for path in spmd_files(dir) {
            let name = display_name(&path);
            // Preprocessed for `lanes`: `TARGET_WIDTH` is the gang width.
            let result = check_file_for(&path, target(lanes));
            assert!(!result.diags.has_errors(), "{name} does not check");
            let Ok(base) = lower_result(&result, lanes) else {
                continue;
            };
            let opt = optimized(&base);
            let (mut off_n, mut on_n) = (0, 0);
            for entry in ispc::ENTRIES.into_iter().chain(["result"]) {
                if base.function_by_name(entry).is_none() {
                    continue;
                }
                match (run(&base, entry, lanes), run(&opt, entry, lanes)) {
                    (Ok((a, n0)), Ok((b, n1))) => {
                        if canon(&a) != canon(&b) {
                            failures.push(format!("{name} {entry}: RET differs"));
                        }
                        if n1 > n0 {
                            failures.push(format!("{name} {entry}: {n1} > {n0} instructions"));
                        }
                        off_n += n0;
                        on_n += n1;
                    }
                    (Err(_), Err(_)) => {}
                    (a, b) => failures.push(format!(
                        "{name} {entry}: off {:?} / on {:?}",
                        a.err(),
                        b.err()
                    )),
                }
            }
            total_off += off_n;
            total_on += on_n;
            per_file.push((name, off_n, on_n));
        }
    }
    assert!(
        failures.is_empty(),
        "{} difference(s) at {lanes} lanes:\n{}",
        failures.len(),
        failures.join("\n")
    );
    (total_off, total_on, per_file)
}

#[test]
fn differential_16() {
    let (off, on, mut files) = differential(16);
    files.sort_by_key(|(_, a, b)| std::cmp::Reverse(a - b));
    for (name, a, b) in files.iter().take(8) {
        eprintln!("{name}: {a} -> {b}");
    }
    eprintln!("total at 16 lanes: {off} -> {on} dynamic instructions");
    assert!(on < off);
}

#[test]
fn differential_32() {
    let (off, on, _) = differential(32);
    eprintln!("total at 32 lanes: {off} -> {on} dynamic instructions");
    assert!(on < off);
}

fn snapshot(name: &str, src: &str) {
    let result = check_source(name, src);
    assert!(!result.diags.has_errors(), "{}", render_all(&result));
    let module = lower_result(&result, 16).unwrap();
    let opt = optimized(&module);
    let text = write::module_to_string(&opt);
    assert_snapshot_in("tests/passes/snapshots", name, src, &text);
}

#[test]
fn snapshot_promote_if() {
    snapshot(
        "promote_if",
        "export void f(uniform int out[], uniform int n) {
    int x = programIndex;
    if (n > 2) { x = 1; }
    if (x < 8) { x = x + 10; } else { x = 0; }
    out[programIndex] = x;
}
",
    );
}

#[test]
fn snapshot_promote_loop() {
    snapshot(
        "promote_loop",
        "export void f(uniform float out[], uniform int n) {
    float s = 0;
    for (uniform int i = 0; i < n; ++i) { s += i * programIndex; }
    out[programIndex] = s;
}
",
    );
}

/// Runs `pass` on an IR text (verified before and after) and returns the written result.
fn pass_text(text: &str, pass: passes::PassFn) -> String {
    let mut module = ir::parse_module(text).unwrap_or_else(|e| panic!("{e:?}"));
    verify::verify_module(&module).unwrap_or_else(|e| panic!("{e:?}"));
    pass(&mut module);
    verify::verify_module(&module).unwrap_or_else(|e| panic!("{e:?}"));
    write::module_to_string(&module)
}

/// Promotes the slots of an IR text and returns the written result.
fn promote_text(text: &str) -> String {
    pass_text(text, passes::promote::run_module)
}

#[test]
fn uniform_slot_promoted_escaped_slot_kept() {
    let out = promote_text(
        "module lanes 16 ptr 8

function internal @f(i32) -> i32 {
    ss0 = stack 4 align 4
    ss1 = stack 4 align 4
block0(v0: i32):
    jump block1
block1:
    v1 = stack_addr ss0
    store private v1, v0
    v2 = stack_addr ss1
    store private v2, v0
    v3 = load.i32 private v1
    v4 = load.i32 private v2
    v5 = iadd v3, v4
    v6 = bitcast.i64 v2
    return v5
}
",
    );
    // ss0 is promoted: no access through it is left.
    assert!(!out.contains("stack_addr ss0"), "{out}");
    // ss1's address escapes into a bitcast: it stays in memory.
    assert!(out.contains("stack_addr ss1"), "{out}");
    assert!(out.contains("load.i32 private"), "{out}");
    assert!(out.contains("iadd v0, v2"), "{out}");
}

/// A function with a value to drop and a barrier after it.
const WITH_BARRIER: &str = "module lanes 16 ptr 8

function internal @f(i32, i32) -> i32 {
block0(v0: i32, v1: i32):
    v2 = iadd v0, v1
    v3 = imul v2, v2
    v4 = iconst.i32 1
    jump block1(v2)
block1(v5: i32):
    barrier
    v6 = iadd v5, v4
    return v6
}
";

/// Compaction drops what no block holds and renumbers the rest densely in order: the
/// text is unchanged (it numbers entities itself), the arenas shrink, and
/// `inst_id` still gives each instruction its number from before (a barrier's id).
#[test]
fn compaction_renumbers_densely_and_keeps_instruction_ids() {
    let mut module = ir::parse_module(WITH_BARRIER).unwrap_or_else(|e| panic!("{e:?}"));
    let before = write::module_to_string(&module);
    let f = module.functions.values_mut().next().unwrap();
    // Drop `v3 = imul` from its block, as a pass deleting it would.
    let b0 = f.layout[0];
    f.blocks[b0].insts.remove(1);
    let b1 = f.layout[1];
    let barrier = f.blocks[b1].insts[0];
    let id = f.inst_id(barrier);
    let (insts, values) = (f.insts.len(), f.values.len());
    passes::compact::compact(f);
    assert_eq!((f.insts.len(), f.values.len()), (insts - 1, values - 1));
    assert_eq!(f.inst_id(f.blocks[b1].insts[0]), id);
    verify::verify_module(&module).unwrap_or_else(|e| panic!("{e:?}"));
    let mut expected = before.replace("    v3 = imul v2, v2\n", "");
    for (old, new) in [("v4", "v3"), ("v5", "v4"), ("v6", "v5")] {
        expected = expected.replace(old, new);
    }
    assert_eq!(write::module_to_string(&module), expected);
    // An instruction added later is numbered as if nothing had been dropped.
    let f = module.functions.values_mut().next().unwrap();
    let added = f.insts.push(ir::InstData::Barrier);
    assert_eq!(f.inst_id(added) as usize, insts);
}

/// `merge_blocks` deletes the blocks it empties and those nothing reaches (here a
/// `trap unreachable` after a return, as lowering leaves, and a dead block branching
/// into a live one), renumbering the rest: the live blocks' parameters and branch
/// targets follow.
#[test]
fn merge_blocks_deletes_unreachable_blocks() {
    let out = pass_text(
        "module lanes 16 ptr 8

function internal @f(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 0
    v2 = icmp slt v0, v1
    brif v2, block2(v0), block3
block1:
    trap unreachable
block2(v3: i32):
    jump block5(v3)
block3:
    jump block5(v1)
block4(v4: i32):
    jump block5(v4)
block5(v5: i32):
    v6 = iadd v5, v0
    return v6
block6:
    trap unreachable
}
",
        passes::merge_blocks,
    );
    assert_eq!(
        out,
        "module lanes 16 ptr 8

function internal @f(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 0
    v2 = icmp slt v0, v1
    brif v2, block1(v0), block2
block1(v3: i32):
    jump block3(v3)
block2:
    jump block3(v1)
block3(v4: i32):
    v5 = iadd v4, v0
    return v5
}
"
    );
}

/// Inlining leaves no unreachable block behind: neither the callee's (lowering's block
/// after its `return`) nor one per call site.
#[test]
fn inlined_calls_leave_no_dead_blocks() {
    let src = "static inline uint rotl7(uint x) { return (x << 7) | (x >> 25); }
task void chain(uniform uint x[], uniform uint y[]) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    uint a = x[i];
    a = a + rotl7(a);
    a = a + rotl7(a);
    y[i] = a;
}
";
    let result = check_source("chain", src);
    assert!(!result.diags.has_errors(), "{}", render_all(&result));
    let opt = optimized(&lower_result(&result, 16).unwrap());
    let chain = opt.function_by_name("chain").unwrap();
    let text = write::module_to_string(&opt);
    assert_eq!(opt.functions[chain].layout.len(), 1, "{text}");
    assert!(!text.contains("trap unreachable"), "{text}");
}

/// Promotion gives a slot a parameter only on a join it is live into: not on a block
/// with one predecessor (block1 starts from block0's values), and not for a slot only
/// used before the join (ss1, as an inlined call's return slot is).
#[test]
fn promoted_slots_get_parameters_only_where_live_at_a_join() {
    let out = promote_text(
        "module lanes 16 ptr 8

function internal @f(i32, bool) -> i32 {
    ss0 = stack 4 align 4
    ss1 = stack 4 align 4
block0(v0: i32, v1: bool):
    v2 = stack_addr ss0
    store private v2, v0
    jump block1
block1:
    v3 = stack_addr ss1
    v4 = load.i32 private v2
    store private v3, v4
    v5 = load.i32 private v3
    brif v1, block2, block3
block2:
    v6 = iadd v5, v5
    store private v2, v6
    jump block3
block3:
    v7 = load.i32 private v2
    return v7
}
",
    );
    assert_eq!(
        out,
        "module lanes 16 ptr 8

function internal @f(i32, bool) -> i32 {
    ss0 = stack 4 align 4
    ss1 = stack 4 align 4
block0(v0: i32, v1: bool):
    jump block1
block1:
    brif v1, block2, block3(v0)
block2:
    v2 = iadd v0, v0
    jump block3(v2)
block3(v3: i32):
    return v3
}
"
    );
}

/// Every program of the corpora still verifies after the pipeline (which panics, naming
/// the pass, if not).
#[test]
fn corpora_verify_after_pipeline() {
    for lanes in [16, 32] {
        for dir in ["examples", "tests/ispc", "tests/parse", "tests/conformance"] {
            for path in spmd_files(dir) {
                let result = check_file_for(&path, target(lanes));
                if result.diags.has_errors() {
                    continue;
                }
                if let Ok(module) = lower_result(&result, lanes) {
                    optimized(&module);
                }
            }
        }
    }
}

#[path = "../benches/common/mod.rs"]
mod generated;

/// A module above `passes::each_function`'s threshold runs the function-local passes on
/// every core; its IR after the pipeline must be the one a single thread gives
/// (`--time-passes` runs everything on the calling thread).
#[test]
fn large_modules_optimize_the_same_on_every_core() {
    let dir = std::env::temp_dir().join(format!("spmdc-parallel-passes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("large.spmd");
    std::fs::write(&path, generated::source(3_000, false)).unwrap();
    let emit = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_spmdc"))
            .arg(&path)
            .args(["--emit", "ir"])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let parallel = emit(&[]);
    let single = emit(&["--time-passes"]);
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        parallel.matches("function export").count() >= 100,
        "too small to split"
    );
    assert_eq!(
        parallel, single,
        "IR differs between threaded and single-threaded passes"
    );
}
