//! Tests of the affine analysis: IR text in, annotated text out; the tuples of the
//! examples' addresses; and the soundness check, which runs every example and
//! ISPC-style corpus program with each claim checked at run time.

use super::*;
use crate::ir::parse_module;

fn annotate(text: &str) -> String {
    let module = parse_module(text).expect("test IR parses");
    annotated_module_text(&module, &analyze_module(&module))
}

/// The class of the value printed as `name` (`v7`) in function `f` of `text`.
fn class_of(text: &str, name: &str) -> Class {
    let module = parse_module(text).expect("test IR parses");
    let f = module.function_by_name("f").expect("a function @f");
    let func = &module.functions[f];
    let names = Names::new(func);
    let v = func
        .values
        .keys()
        .find(|&v| names.value(v).to_string() == name)
        .expect("the value exists");
    analyze_function(&module, func).class(v).clone()
}

#[test]
fn arithmetic_on_indices_and_uniforms() {
    insta::assert_snapshot!(annotate(
        "module lanes 8 ptr 8

function export @f(i32, ptr) {
block0(v0: i32, v1: ptr):
    v2 = special lane_index
    v3 = special thread_idx.y
    v4 = splat v0
    v5 = iadd v4, v2
    v6 = iconst.[i32] 3
    v7 = imul v5, v6
    v8 = isub v7, v3
    v9 = ineg v8
    v10 = bnot v8
    v11 = iconst.i32 2
    v12 = splat v11
    v13 = ishl v8, v12
    v14 = imul v3, v4
    v15 = imul v2, v3
    v16 = sext.i64 v2
    v17 = iconst.[i64] 4
    v18 = imul v16, v17
    v19 = bitcast.ptr v18
    v20 = splat v1
    v21 = iadd v20, v19
    v22 = ireduce.i16 v8
    v23 = ishl v8, v4
    return
}
"
    ));
}

#[test]
fn extensions_record_what_they_assume() {
    insta::assert_snapshot!(annotate(
        "module lanes 8 ptr 8

function export @f(i32) {
block0(v0: i32):
    v1 = special lane_index
    v2 = special thread_idx.x
    v3 = splat v0
    v4 = iadd v3, v2
    v5 = sext.i64 v4
    v6 = zext.i64 v1
    v7 = sext.i64 v2
    v8 = iconst.[i32] 1
    v9 = iadd v4, v8
    v10 = sext.i64 v9
    v11 = sext.i64 v3
    v12 = iadd v3, v8
    v13 = sext.i64 v12
    return
}
"
    ));
}

#[test]
fn division_remainder_and_min_max() {
    insta::assert_snapshot!(annotate(
        "module lanes 8 ptr 8

function export @f(i32) {
block0(v0: i32):
    v1 = special lane_index
    v2 = splat v0
    v3 = iconst.[i32] 8
    v4 = imul v1, v3
    v5 = iadd v4, v2
    v6 = iconst.[i32] 4
    v7 = udiv v5, v6
    v8 = urem v5, v6
    v9 = iconst.[i32] 3
    v10 = band v5, v9
    v11 = iconst.[i32] 2
    v12 = sshr v5, v11
    v13 = sdiv v5, v6
    v14 = smin v5, v2
    v15 = smin v2, v3
    v16 = udiv v1, v6
    v17 = iconst.[i32] 16
    v18 = urem v5, v17
    return
}
"
    ));
}

#[test]
fn predicates_and_selects() {
    insta::assert_snapshot!(annotate(
        "module lanes 8 ptr 8

function export @f(i32, bool) {
block0(v0: i32, v1: bool):
    v2 = special lane_index
    v3 = splat v0
    v4 = iadd v3, v2
    v5 = icmp slt v4, v3
    v6 = icmp eq v3, v3
    v7 = icmp slt v4, v4
    v8 = iconst.[i32] 2
    v9 = iadd v4, v8
    v10 = select v1, v4, v9
    v11 = select v5, v4, v9
    v12 = select v5, v4, v4
    v13 = select v6, v4, v9
    return
}
"
    ));
}

const LOOP: &str = "module lanes 8 ptr 8

function export @f(i32, ptr) {
block0(v0: i32, v1: ptr):
    v2 = special lane_index
    v3 = iconst.i32 0
    v4 = splat v3
    v5 = iadd v4, v2
    jump block1(v3, v5, v5)
block1(v6: i32, v7: [i32], v8: [i32]):
    v9 = iconst.i32 8
    v10 = iadd v6, v9
    v11 = splat v9
    v12 = iadd v7, v11
    v13 = splat v10
    v14 = iadd v13, v2
    v15 = imul v8, v8
    v16 = icmp slt v10, v0
    brif v16, block1(v10, v12, v15), block2
block2:
    return
}
";

#[test]
fn loop_carried_values_keep_their_strides() {
    insta::assert_snapshot!(annotate(LOOP));
    // i = i + 8 with i0 = lane: stride 1, base at run time.
    let Class::Affine(t) = class_of(LOOP, "v7") else {
        panic!("v7 is affine");
    };
    assert_eq!(t.const_stride(Dim::Lane), Some(1));
    assert_eq!(t.base, Part::Runtime);
    // v8 * v8 flows back into v8: not affine.
    assert_eq!(class_of(LOOP, "v8"), Class::NonAffine);
    assert_eq!(class_of(LOOP, "v15"), Class::NonAffine);
}

#[test]
fn varying_loads_parameters_and_cross_lane_results_are_not_affine() {
    let text = "module lanes 8 ptr 8

function internal @f([i32], ptr) -> [i32] masked {
block0(v0: [i32], v1: ptr, v2: [bool]):
    v3 = special lane_index
    v4 = sext.i64 v3
    v5 = iconst.[i64] 4
    v6 = imul v4, v5
    v7 = bitcast.ptr v6
    v8 = splat v1
    v9 = iadd v8, v7
    v10 = load.i32 generic v9 mask v2
    v11 = iconst.i32 1
    v12 = rotate v3, v11
    v13 = load.i32 generic v1
    v14 = splat v13
    v15 = iadd v14, v3
    return v15
}
";
    assert_eq!(class_of(text, "v0"), Class::NonAffine);
    assert_eq!(class_of(text, "v10"), Class::NonAffine);
    assert_eq!(class_of(text, "v12"), Class::NonAffine);
    let t = class_of(text, "v9")
        .tuple()
        .cloned()
        .expect("v9 has a tuple");
    assert_eq!(t.const_stride(Dim::Lane), Some(4));
    assert!(t.exact(), "sext of lane_index is exact");
    let t = class_of(text, "v15")
        .tuple()
        .cloned()
        .expect("v15 has a tuple");
    assert_eq!(t.base, Part::Known(Linear::atom(t_atom(text, "v13"))));
}

fn t_atom(text: &str, name: &str) -> Value {
    let module = parse_module(text).unwrap();
    let func = &module.functions[module.function_by_name("f").unwrap()];
    let names = Names::new(func);
    func.values
        .keys()
        .find(|&v| names.value(v).to_string() == name)
        .unwrap()
}

#[test]
fn linear_forms_wrap_at_their_width() {
    let w = 8;
    let a = Linear::constant(200, w);
    assert_eq!(a.constant, -56);
    let b = a.add(&Linear::constant(100, w), w);
    assert_eq!(b.constant, 44);
    assert_eq!(Linear::constant(64, w).scale(4, w).as_const(), Some(0));
    // Unsigned reading of -1 at 8 bits, widened to 32.
    assert_eq!(
        Linear::constant(-1, 8)
            .rewidth(8, 32, Some(false))
            .as_const(),
        Some(255)
    );
}

// ---------------------------------------------------------------------------------
// The examples.

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn front_of(path: &std::path::Path) -> crate::driver::FrontResult {
    let text = std::fs::read_to_string(path).expect("the file exists");
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    crate::driver::run_front(
        &name,
        Some(path.to_path_buf()),
        text,
        &crate::driver::FrontOptions::default(),
        crate::driver::Stage::Check,
    )
}

fn example(name: &str) -> Module {
    let front = front_of(&root().join("examples").join(name));
    crate::driver::lower_front(&front).expect("the example lowers")
}

/// The tuples of the varying addresses of `space` accesses in function `entry`.
fn address_tuples(module: &Module, entry: &str, space: crate::ir::Space) -> Vec<Option<Tuple>> {
    let f = module.function_by_name(entry).expect("the entry exists");
    let func = &module.functions[f];
    let result = analyze_function(module, func);
    let mut out = Vec::new();
    for &block in &func.layout {
        for &inst in &func.blocks[block].insts {
            let (s, addr) = match &func.insts[inst] {
                InstData::Load { space, addr, .. } | InstData::Store { space, addr, .. } => {
                    (*space, *addr)
                }
                _ => continue,
            };
            if s == space && func.value_type(addr).varying {
                out.push(result.tuple(addr).cloned());
            }
        }
    }
    out
}

fn strides(t: &Tuple) -> [Option<i64>; 4] {
    Dim::ALL.map(|d| t.const_stride(d))
}

#[test]
fn saxpy_addresses_are_affine_with_stride_4_in_the_lane() {
    let module = example("saxpy.spmd");
    let tuples = address_tuples(&module, "saxpy", crate::ir::Space::Generic);
    assert_eq!(
        tuples.len(),
        6,
        "two loads and a store, in the body and the tail"
    );
    for t in tuples {
        let t = t.expect("every address is affine");
        assert_eq!(strides(&t), [Some(4), Some(0), Some(0), Some(0)]);
    }
    let f = module.function_by_name("saxpy").unwrap();
    let stats = access_stats(
        &module.functions[f],
        &analyze_module(&module).functions[f],
        |_| true,
    );
    assert_eq!(stats.access_fraction(), 1.0, "{stats:?}");
}

#[test]
fn stencil1d_global_and_shared_addresses_step_4_in_thread_x() {
    let module = example("stencil1d.spmd");
    for space in [crate::ir::Space::Generic, crate::ir::Space::Shared] {
        let tuples = address_tuples(&module, "stencil1d", space);
        assert!(!tuples.is_empty(), "{space:?} accesses");
        for t in tuples {
            let t = t.unwrap_or_else(|| panic!("a {space:?} address is not affine"));
            assert_eq!(
                strides(&t),
                [Some(0), Some(4), Some(0), Some(0)],
                "{space:?}"
            );
        }
    }
}

#[test]
fn matmul_tiled_rows_stride_by_n_and_tiles_by_64() {
    let module = example("matmul_tiled.spmd");
    let f = module.function_by_name("matmul_tiled").unwrap();
    let n = module.functions[f].blocks[module.functions[f].layout[0]].params[0];
    let four_n = Part::Known(Linear {
        constant: 0,
        terms: smallvec::smallvec![(
            Atom {
                value: n,
                signed: true
            },
            4
        )],
    });
    let global = address_tuples(&module, "matmul_tiled", crate::ir::Space::Generic);
    assert_eq!(global.len(), 3, "a, b and c");
    for t in global {
        let t = t.expect("every global address is affine");
        assert_eq!(t.const_stride(Dim::ThreadX), Some(4));
        assert_eq!(t.stride(Dim::ThreadY), &four_n, "row stride 4 * n");
    }
    let shared = address_tuples(&module, "matmul_tiled", crate::ir::Space::Shared);
    assert!(shared.len() >= 4);
    for t in shared {
        let t = t.expect("every shared address is affine");
        let s = strides(&t);
        // ta[ty][tx], tb[ty][tx]: (4, 64); ta[ty][k]: (0, 64); tb[k][tx]: (4, 0).
        assert!(
            [
                [Some(0), Some(4), Some(64), Some(0)],
                [Some(0), Some(0), Some(64), Some(0)],
                [Some(0), Some(4), Some(0), Some(0)]
            ]
            .contains(&s),
            "{s:?}"
        );
    }
}

#[test]
fn annotated_examples() {
    for name in ["saxpy.spmd", "stencil1d.spmd"] {
        let module = example(name);
        let text = annotated_module_text(&module, &analyze_module(&module));
        insta::assert_snapshot!(name, text);
    }
}

// ---------------------------------------------------------------------------------
// Soundness: every claim checked at run time.

/// The suggested launch of an example, from its `spmdc run` comment: entry, arguments,
/// grid and block.
struct SuggestedLaunch {
    entry: String,
    args: Vec<String>,
    grid: Option<String>,
    block: Option<String>,
}

/// Splits a shell command line on blanks, honouring single quotes.
fn shell_words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for ch in line.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

fn suggested_launches(source: &str) -> Vec<SuggestedLaunch> {
    let lines: Vec<&str> = source
        .lines()
        .map(|l| l.trim_start_matches("//").trim())
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with("spmdc run") {
            i += 1;
            continue;
        }
        let mut cmd = String::new();
        while i < lines.len() {
            let l = lines[i];
            i += 1;
            cmd.push_str(l.trim_end_matches('\\'));
            cmd.push(' ');
            if !l.ends_with('\\') {
                break;
            }
        }
        let words = shell_words(&cmd);
        let mut l = SuggestedLaunch {
            entry: String::new(),
            args: Vec::new(),
            grid: None,
            block: None,
        };
        let mut it = words.iter();
        while let Some(w) = it.next() {
            match w.as_str() {
                "--entry" => l.entry = it.next().cloned().unwrap_or_default(),
                "--arg" => l.args.extend(it.next().cloned()),
                "--grid" => l.grid = it.next().cloned(),
                "--block" => l.block = it.next().cloned(),
                _ => {}
            }
        }
        if !l.entry.is_empty() {
            out.push(l);
        }
    }
    out
}

/// Runs `module` (lowered from `front`) on the interpreter with launch `l`.
fn run(
    front: &crate::driver::FrontResult,
    module: &Module,
    l: &SuggestedLaunch,
) -> Result<crate::launch::RunResult, String> {
    let req = crate::driver::RunRequest {
        optimize: true,
        entry: &l.entry,
        args: &l.args,
        grid: l.grid.as_deref(),
        block: l.block.as_deref(),
        dynamic_shared: None,
        limits: crate::interp::Limits {
            max_steps: 50_000_000,
            ..Default::default()
        },
    };
    crate::driver::run_module_on_interp(front, module, &req).map_err(|e| format!("{e:?}"))
}

/// What [`check_claims_in`] found: launches whose instrumented run matched, select
/// tuples among the values checked, and what went wrong.
struct ClaimRuns {
    checked: usize,
    piecewise: usize,
    failures: Vec<String>,
}

/// Runs each suggested launch of the `.spmd` files of `dir` (a repository folder) with
/// every tuple of every value checked at run time ([`insert_affine_checks`]) and
/// without, and compares buffers and output.
fn check_claims_in(dir: &str) -> ClaimRuns {
    let mut runs = ClaimRuns {
        checked: 0,
        piecewise: 0,
        failures: Vec::new(),
    };
    let mut paths: Vec<_> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "spmd"))
        .collect();
    paths.sort();
    for path in paths {
        let source = std::fs::read_to_string(&path).unwrap();
        let front = front_of(&path);
        let Ok(module) = crate::driver::lower_front(&front) else {
            runs.failures
                .push(format!("{}: does not lower", path.display()));
            continue;
        };
        let result = analyze_module(&module);
        runs.piecewise += result
            .functions
            .values()
            .flat_map(|f| f.classes.values().flatten())
            .filter(|c| c.piecewise().is_some_and(|p| p.arms().is_some()))
            .count();
        let mut instrumented = module.clone();
        insert_affine_checks(&mut instrumented, &result);
        if let Err(e) = crate::ir::verify_module(&instrumented) {
            runs.failures
                .push(format!("{}: instrumented IR: {e:?}", path.display()));
            continue;
        }
        for l in suggested_launches(&source) {
            let Ok(want) = run(&front, &module, &l) else {
                continue;
            };
            match run(&front, &instrumented, &l) {
                Ok(got) if got.buffers == want.buffers && got.output == want.output => {
                    runs.checked += 1
                }
                Ok(_) => runs
                    .failures
                    .push(format!("{}: results changed", path.display())),
                Err(e) => runs
                    .failures
                    .push(format!("{} {}: {e}", path.display(), l.entry)),
            }
        }
    }
    runs
}

/// The soundness check on the examples: with every tuple of every value checked at run
/// time ([`insert_affine_checks`]), each example's suggested launch runs to the same
/// buffers and output, so no claim was ever wrong (assumptions included).
#[test]
fn every_claim_holds_at_run_time_on_the_examples() {
    let runs = check_claims_in("examples");
    assert!(runs.failures.is_empty(), "{}", runs.failures.join("\n"));
    assert!(
        runs.checked >= 15,
        "only {} example launches checked",
        runs.checked
    );
}

/// The same on the DAC benchmark kernels (`tests/dac_bench`), whose clamped
/// neighbours (hotspot, srad, pathfinder) are select tuples, checked arm by arm.
#[test]
fn every_claim_holds_at_run_time_on_the_dac_benchmarks() {
    let runs = check_claims_in("tests/dac_bench");
    assert!(runs.failures.is_empty(), "{}", runs.failures.join("\n"));
    assert!(runs.checked >= 8, "only {} launches checked", runs.checked);
    assert!(runs.piecewise > 0, "no select tuple checked");
}

/// A wrong arm of a select tuple traps: hotspot with the `then` arm of a select
/// tuple claimed to step by 8 more per thread.
#[test]
fn the_checks_catch_a_wrong_select_tuple_arm() {
    let path = root().join("tests/dac_bench/hotspot.spmd");
    let source = std::fs::read_to_string(&path).unwrap();
    let front = front_of(&path);
    let mut module = crate::driver::lower_front(&front).expect("lowers");
    let mut result = analyze_module(&module);
    let (f, v) = result
        .functions
        .iter()
        .find_map(|(f, fa)| {
            fa.classes
                .iter()
                .find(|(_, c)| {
                    c.as_ref()
                        .and_then(Class::piecewise)
                        .and_then(|p| p.arms())
                        .is_some_and(|(t, _)| t.const_stride(Dim::ThreadX).is_some())
                })
                .map(|(v, _)| (f, v))
        })
        .expect("hotspot has a select tuple");
    let Some(Class::Piecewise(p)) = &mut result.functions[f].classes[v] else {
        unreachable!()
    };
    let Class::Affine(t) = &mut p.then else {
        panic!("the then arm is a tuple")
    };
    let x = t.const_stride(Dim::ThreadX).unwrap();
    t.strides[Dim::ThreadX.index()] = Part::Known(Linear::constant(x + 8, t.width));
    insert_affine_checks(&mut module, &result);
    crate::ir::verify_module(&module).expect("instrumented module verifies");
    let l = suggested_launches(&source)
        .into_iter()
        .next()
        .expect("a launch");
    let err = run(&front, &module, &l).expect_err("the check traps");
    assert!(err.contains("unreachable"), "{err}");
}

/// Runs entry `name` the way the ISPC-style corpora are run (one gang, a zeroed
/// 64-float `RET`, `aFOO[i] = i + 1`, `b = 5`); returns `RET` or why it stopped.
fn run_ispc_entry(module: &Module, name: &str) -> Result<Vec<u8>, String> {
    use crate::interp::{self, Launch, Limits, Memory};
    let func = module.function_by_name(name).ok_or("no entry")?;
    let mut mem = Memory::new();
    let ret = mem.add_buffer(vec![0u8; 64 * 4], "RET");
    let foo: Vec<u8> = (0..64)
        .flat_map(|i| ((i + 1) as f32).to_le_bytes())
        .collect();
    let afoo = mem.add_buffer(foo, "aFOO");
    let nparams = module.functions[func].sig.params.len().min(3);
    let args: Vec<u64> = [ret, afoo, interp::f32_arg(5.0)][..nparams].to_vec();
    let limits = Limits {
        max_steps: 2_000_000,
        ..Limits::default()
    };
    let launch = Launch::single_gang(module.lane_count, args);
    interp::run(module, func, &launch, &mut mem, limits).map_err(|e| e.to_string())?;
    Ok(mem.buffer(ret).ok_or("RET lost")?.to_vec())
}

/// The same check on the ISPC-style corpora (`tests/ispc`, `tests/conformance`): many
/// small functions with
/// loops, selects, conversions and cross-lane operations.
#[test]
fn every_claim_holds_at_run_time_on_the_ispc_style_corpora() {
    let mut paths: Vec<_> = ["tests/ispc", "tests/conformance"]
        .into_iter()
        .filter_map(|dir| std::fs::read_dir(root().join(dir)).ok())
        .flatten()
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "spmd"))
        .collect();
    paths.sort();
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in paths {
        let Ok(module) = crate::driver::lower_front(&front_of(&path)) else {
            continue;
        };
        let Some(entry) = ["f_v", "f_f", "f_fu"]
            .into_iter()
            .find(|n| module.function_by_name(n).is_some())
        else {
            continue;
        };
        let mut instrumented = module.clone();
        insert_affine_checks(&mut instrumented, &analyze_module(&module));
        if let Err(e) = crate::ir::verify_module(&instrumented) {
            failures.push(format!("{}: instrumented IR: {e:?}", path.display()));
            continue;
        }
        for entry in [entry, "result"] {
            let Ok(want) = run_ispc_entry(&module, entry) else {
                continue;
            };
            match run_ispc_entry(&instrumented, entry) {
                Ok(got) if got == want => checked += 1,
                Ok(_) => failures.push(format!("{}: {entry}: results changed", path.display())),
                Err(e) => failures.push(format!("{}: {entry}: {e}", path.display())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 100, "only {checked} runs checked");
}

#[test]
fn the_checks_catch_a_wrong_claim() {
    // `lane_index` claimed to step by 2: the instrumented run must trap.
    let mut module = parse_module(
        "module lanes 4 ptr 4

function export @f_v(ptr) {
block0(v0: ptr):
    v1 = special lane_index
    return
}
",
    )
    .expect("test IR parses");
    let mut result = analyze_module(&module);
    let f = module.function_by_name("f_v").unwrap();
    let lane = module.functions[f].values.keys().nth(1).unwrap();
    let Some(Class::Affine(t)) = &mut result.functions[f].classes[lane] else {
        panic!("lane_index is affine");
    };
    t.strides[0] = Part::Known(Linear::constant(2, 32));
    insert_affine_checks(&mut module, &result);
    crate::ir::verify_module(&module).expect("instrumented module verifies");
    let err = run_ispc_entry(&module, "f_v").expect_err("the check traps");
    assert!(err.contains("unreachable"), "{err}");
}

#[test]
fn annotated_text_reads_back() {
    let module = example("matmul_tiled.spmd");
    let text = annotated_module_text_with_uniformity(
        &module,
        &crate::analysis::uniformity::analyze_module(&module),
        &analyze_module(&module),
    );
    let back = parse_module(&text).expect("annotated text parses");
    assert_eq!(
        crate::ir::write::module_to_string(&back),
        crate::ir::write::module_to_string(&module)
    );
}

// ---------------------------------------------------------------------------------
// Use on Nyuzi: block accesses at affine addresses.

/// `x[i + 1]` and `x[2 + i]` in a `foreach`: `splat(i) + lane + splat(1)`, which the
/// back end's syntactic pattern does not take, is `base + 4*lane` for the analysis, so
/// Nyuzi uses masked block loads (with the run-time alignment check) instead of
/// gathers; the results match the interpreter.
#[test]
fn nyuzi_block_loads_at_affine_addresses() {
    let src = "export void shift(uniform int n, uniform float x[], uniform float y[]) {
    foreach (i = 0 ... n) {
        y[i] = x[i + 1] + x[2 + i];
    }
}
";
    let opts = crate::driver::FrontOptions {
        target: crate::front::sema::Target {
            program_count: 16,
            pointer_size: 4,
        },
        ..Default::default()
    };
    let front = crate::driver::run_front(
        "shift.spmd",
        None,
        src.to_string(),
        &opts,
        crate::driver::Stage::Check,
    );
    let (_, obj) = crate::back::nyuzi::run::compile(&front, true).expect("compiles");
    let text = crate::back::nyuzi::listing(&obj, None);
    // Two loads in the full-gang body and two in the tail; y[i] was a block store before.
    assert_eq!(text.matches("load_v_mask").count(), 4, "{text}");
    let args: Vec<String> = ["n=40", "x=range(48)", "y=zeros(48)"]
        .map(String::from)
        .to_vec();
    let req = crate::driver::RunRequest {
        optimize: true,
        entry: "shift",
        args: &args,
        grid: None,
        block: None,
        dynamic_shared: None,
        limits: Default::default(),
    };
    let want = crate::driver::run_on_interp(&front, &req).expect("runs on the interpreter");
    let got = crate::back::nyuzi::run::run_on_nyuzi(&front, &req, &Default::default())
        .expect("runs on nyuzi");
    assert_eq!(got.buffers, want.buffers);
}

const CALLS: &str = "module lanes 8 ptr 8

function internal @g([i32], i32) -> [i32] masked {
block0(v0: [i32], v1: i32, v2: [bool]):
    v3 = splat v1
    v4 = imul v0, v3
    v5 = iconst.[i32] 0
    v6 = select v2, v4, v5
    return v6
}

function export @f(i32) {
block0(v0: i32):
    v1 = special lane_index
    v2 = iconst.[bool] 1
    v3 = call @g(v1, v0) mask v2
    v4 = splat v0
    v5 = icmp slt v1, v4
    v6 = call @g(v1, v0) mask v5
    return
}
";

/// A call to an internal function under an all-on mask gets the class of the
/// callee's result computed from the arguments' classes (a summary per call site);
/// under another mask the lanes off read 0, so the tuple is qualified by the mask.
#[test]
fn calls_are_summarized_and_qualified_by_their_mask() {
    let Class::Affine(t) = class_of(CALLS, "v3") else {
        panic!("g(lane, n) is affine");
    };
    let n = t_atom(CALLS, "v0");
    assert_eq!(t.stride(Dim::Lane), &Part::Known(Linear::atom(n)));
    assert!(t.base.is_zero());
    // Under a divergent mask: the same tuple, in the lanes of the mask only.
    let Class::Affine(u) = class_of(CALLS, "v6") else {
        panic!("g(lane, n) under a mask is affine there");
    };
    assert_eq!(u.under, Some(t_atom(CALLS, "v5")));
    assert_eq!(u.strides, t.strides);
}

/// The statistics the DAC bench reads: in the GPU-style kernels (guarded by an early
/// `return`, stencil indices through `idx2`/`idx3` calls) every global access is at an
/// affine address, qualified by the access's own mask.
#[test]
fn every_access_of_the_gpu_kernels_is_affine() {
    for (file, entry) in [
        ("jacobi2d_gpu.spmd", "jacobi2d_gpu"),
        ("wave13pt_gpu.spmd", "wave13pt_gpu"),
        ("laplacian3d.spmd", "laplacian3d"),
        ("matmul_tiled.spmd", "matmul_tiled"),
        ("saxpy_gpu.spmd", "saxpy_gpu"),
        ("stencil1d.spmd", "stencil1d"),
        // Through a varying loop that is uniform in fact: the launch's mask is all on.
        ("strided_copy.spmd", "strided_copy"),
    ] {
        let module = example(file);
        let f = module.function_by_name(entry).expect("the entry exists");
        let result = analyze_module(&module);
        let s = access_stats(&module.functions[f], &result.functions[f], |sp| {
            sp != crate::ir::Space::Private
        });
        assert!(s.loads > 0, "{file}: {s:?}");
        assert_eq!(s.access_fraction(), 1.0, "{file}: {s:?}");
    }
}

// ---------------------------------------------------------------------------------
// Property test: random arithmetic on indices, exact tuples checked under wrapping.

/// One step of a random function: a new `[i32]` value from earlier ones (indices into
/// the pool of values built so far).
#[derive(Clone, Debug)]
enum Step {
    Add(usize, usize),
    Sub(usize, usize),
    MulConst(usize, i32),
    MulParam(usize),
    Shl(usize, u8),
    Neg(usize),
    Not(usize),
    SelectUniform(usize, usize),
    SelectLane(usize, usize),
    RemPow2(usize, u8),
}

fn step_strategy() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let i = 0usize..64;
    prop_oneof![
        (i.clone(), i.clone()).prop_map(|(a, b)| Step::Add(a, b)),
        (i.clone(), i.clone()).prop_map(|(a, b)| Step::Sub(a, b)),
        (i.clone(), any::<i32>()).prop_map(|(a, k)| Step::MulConst(a, k)),
        i.clone().prop_map(Step::MulParam),
        (i.clone(), 0u8..40).prop_map(|(a, k)| Step::Shl(a, k)),
        i.clone().prop_map(Step::Neg),
        i.clone().prop_map(Step::Not),
        (i.clone(), i.clone()).prop_map(|(a, b)| Step::SelectUniform(a, b)),
        (i.clone(), i.clone()).prop_map(|(a, b)| Step::SelectLane(a, b)),
        (i, 0u8..6).prop_map(|(a, k)| Step::RemPow2(a, k)),
    ]
}

/// The IR text of `@f_v(i32 p, i32 q, bool c)` computing `steps` over the pool
/// `[lane_index, splat p, splat q, thread_idx.x]`, ending with a `sext` and an
/// `ireduce` of the last value.
fn random_function(steps: &[Step]) -> String {
    let mut body = String::new();
    let mut next = 3;
    let mut fresh = |body: &mut String, rhs: String| {
        next += 1;
        body.push_str(&format!("    v{next} = {rhs}\n"));
        next
    };
    let mut pool = vec![
        fresh(&mut body, "special lane_index".into()),
        fresh(&mut body, "splat v0".into()),
        fresh(&mut body, "splat v1".into()),
        fresh(&mut body, "special thread_idx.x".into()),
    ];
    let lane = pool[0];
    for s in steps {
        let at = |i: usize| pool[i % pool.len()];
        let v = match *s {
            Step::Add(a, b) => fresh(&mut body, format!("iadd v{}, v{}", at(a), at(b))),
            Step::Sub(a, b) => fresh(&mut body, format!("isub v{}, v{}", at(a), at(b))),
            Step::MulConst(a, k) => {
                let c = fresh(&mut body, format!("iconst.[i32] {}", k as u32));
                fresh(&mut body, format!("imul v{}, v{c}", at(a)))
            }
            Step::MulParam(a) => fresh(&mut body, format!("imul v{}, v{}", at(a), pool[1])),
            Step::Shl(a, k) => {
                let c = fresh(&mut body, format!("iconst.[i32] {k}"));
                fresh(&mut body, format!("ishl v{}, v{c}", at(a)))
            }
            Step::Neg(a) => fresh(&mut body, format!("ineg v{}", at(a))),
            Step::Not(a) => fresh(&mut body, format!("bnot v{}", at(a))),
            Step::SelectUniform(a, b) => {
                fresh(&mut body, format!("select v2, v{}, v{}", at(a), at(b)))
            }
            Step::SelectLane(a, b) => {
                let m = fresh(&mut body, format!("icmp slt v{lane}, v{}", at(b)));
                fresh(&mut body, format!("select v{m}, v{}, v{}", at(a), at(b)))
            }
            Step::RemPow2(a, k) => {
                let c = fresh(&mut body, format!("iconst.[i32] {}", 1u32 << k));
                fresh(&mut body, format!("urem v{}, v{c}", at(a)))
            }
        };
        pool.push(v);
    }
    let last = *pool.last().unwrap();
    let wide = fresh(&mut body, format!("sext.i64 v{last}"));
    fresh(&mut body, format!("ireduce.i16 v{wide}"));
    format!(
        "module lanes 8 ptr 8\n\nfunction export @f_v(i32, i32, bool) {{\nblock0(v0: i32, v1: i32, v2: bool):\n{body}    return\n}}\n"
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Every tuple the analysis calls exact holds in every lane, with parameters near
    /// the ends of the `i32` range so the arithmetic wraps.
    #[test]
    fn exact_tuples_hold_under_wrapping(
        steps in proptest::collection::vec(step_strategy(), 1..24),
        p in proptest::prop_oneof![proptest::prelude::any::<i32>(), (i32::MAX - 40)..=i32::MAX, i32::MIN..=(i32::MIN + 40)],
        q in proptest::prelude::any::<i32>(),
        c in proptest::prelude::any::<bool>(),
    ) {
        use crate::interp::{self, Launch, Limits, Memory};
        let text = random_function(&steps);
        let mut module = parse_module(&text).expect("generated IR parses");
        let result = analyze_module(&module);
        insert_affine_checks_where(&mut module, &result, &|t| t.exact());
        crate::ir::verify_module(&module).expect("instrumented IR verifies");
        let f = module.function_by_name("f_v").unwrap();
        let args = vec![u64::from(p as u32), u64::from(q as u32), u64::from(c)];
        let launch = Launch::single_gang(module.lane_count, args);
        let run = interp::run(&module, f, &launch, &mut Memory::new(), Limits::default());
        proptest::prop_assert!(run.is_ok(), "{:?}\n{text}", run.err());
    }
}

/// Select tuples: `select` of a varying affine predicate and min/max of a varying
/// tuple are `pred ? then : else`; the tuple rules apply to both arms (add, scale,
/// extend, gep); two different choices combined, or a product of two select tuples,
/// fall back to the plain view (the qualified `then` tuple of a select; non-affine
/// for min/max).
#[test]
fn select_tuples_of_selects_and_min_max() {
    let text = "module lanes 8 ptr 8

function export @f(i32, ptr) {
block0(v0: i32, v1: ptr):
    v2 = special lane_index
    v3 = splat v0
    v4 = iadd v3, v2
    v5 = iconst.[i32] 0
    v6 = icmp sgt v2, v5
    v7 = iconst.[i32] 1
    v8 = isub v4, v7
    v9 = select v6, v8, v4
    v10 = iconst.[i32] 4
    v11 = imul v9, v10
    v12 = sext.i64 v11
    v13 = splat v1
    v14 = bitcast.ptr v12
    v15 = iadd v13, v14
    v16 = smin v4, v3
    v17 = umax v2, v7
    v18 = iadd v16, v7
    v19 = iadd v9, v16
    v20 = imul v9, v9
    return
}
";
    insta::assert_snapshot!(annotate(text));
    let Class::Piecewise(p) = class_of(text, "v15") else {
        panic!("v15 is a select tuple")
    };
    assert_eq!(p.pred.cond, IntCC::Sgt);
    let (t, e) = p.arms().expect("two tuples");
    assert_eq!(
        (t.const_stride(Dim::Lane), e.const_stride(Dim::Lane)),
        (Some(4), Some(4))
    );
    // min/max: select tuples whose plain view is non-affine (names as printed).
    let Class::Piecewise(m) = class_of(text, "v18") else {
        panic!("v18 is a select tuple")
    };
    assert_eq!(
        (m.pred.cond, m.plain.clone()),
        (IntCC::Slt, Class::NonAffine)
    );
    assert!(matches!(class_of(text, "v17"), Class::Piecewise(_)));
    // Two different choices: the plain views (non-affine with min's).
    assert_eq!(class_of(text, "v19"), Class::NonAffine);
    assert!(class_of(text, "v20").piecewise().is_none());
}
