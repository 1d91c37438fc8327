//! Tests of the uniformity analysis: IR text in, annotated text out.

use super::*;
use crate::analysis::corpus::corpus_modules;
use crate::ir::parse_module;

fn annotate(text: &str) -> String {
    let module = parse_module(text).expect("test IR parses");
    let result = analyze_module(&module);
    annotated_module_text(&module, &result)
}

#[test]
fn splats_and_arithmetic_on_them_are_uniform() {
    let text = annotate(
        "module lanes 4 ptr 4

function export @f(i32) {
block0(v0: i32):
    v1 = splat v0
    v2 = special lane_index
    v3 = iadd v1, v1
    v4 = iadd v3, v2
    return
}
",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn select_on_a_divergent_mask_is_divergent_unless_both_inputs_agree() {
    let text = annotate(
        "module lanes 4 ptr 4

function internal @f(i32) -> [i32] masked {
block0(v0: i32, v1: [bool]):
    v2 = splat v0
    v3 = special lane_index
    v4 = icmp slt v3, v2
    v5 = band v1, v4
    v6 = iconst.[i32] 7
    v7 = select v5, v6, v2
    v8 = select v5, v2, v2
    v9 = iconst.i32 1
    v10 = splat v9
    v11 = icmp eq v2, v10
    v12 = band v1, v11
    v13 = select v12, v6, v2
    return v7
}
",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn loop_carried_values_stay_uniform_unless_something_divergent_flows_in() {
    let text = annotate(
        "module lanes 4 ptr 4

function export @f(i32) {
block0(v0: i32):
    v1 = iconst.[i32] 0
    v2 = iconst.[i32] 0
    jump block1(v1, v2)
block1(v3: [i32], v4: [i32]):
    v5 = iconst.i32 1
    v6 = splat v5
    v7 = iadd v3, v6
    v8 = special lane_index
    v9 = iadd v4, v8
    v10 = extract v7, v5
    v11 = icmp slt v10, v0
    brif v11, block1(v7, v9), block2
block2:
    return
}
",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn loads_are_uniform_only_for_one_scalar_from_a_uniform_address() {
    let text = annotate(
        "module lanes 4 ptr 4

function export @f(ptr) {
block0(v0: ptr):
    v1 = splat v0
    v2 = load.i32 global v1
    v3 = load.[i32] global v0
    v4 = special lane_index
    v5 = bitcast.ptr v4
    v6 = load.i32 global v5
    v7 = iconst.i32 1
    v8 = splat v7
    v9 = atomic_rmw add global v1, v8
    return
}
",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn irreducible_control_flow_makes_every_varying_value_divergent() {
    let src = "module lanes 4 ptr 4

function export @f(bool) {
block0(v0: bool):
    v1 = iconst.[i32] 0
    brif v0, block1(v1), block2(v1)
block1(v2: [i32]):
    jump block2(v2)
block2(v3: [i32]):
    jump block1(v3)
}
";
    let module = parse_module(src).expect("test IR parses");
    let f = module.function_by_name("f").unwrap();
    assert!(is_irreducible(&module.functions[f]));
    insta::assert_snapshot!(annotate(src));
}

#[test]
fn a_natural_loop_is_reducible() {
    let module = parse_module(
        "module lanes 4 ptr 4

function export @f(bool) {
block0(v0: bool):
    jump block1
block1:
    brif v0, block1, block2
block2:
    return
}
",
    )
    .expect("test IR parses");
    let f = module.function_by_name("f").unwrap();
    assert!(!is_irreducible(&module.functions[f]));
}

#[test]
fn on_the_corpus_uniform_types_are_uniform_and_annotated_text_reads_back() {
    let corpus = corpus_modules();
    assert!(corpus.len() > 20, "the corpus lowers");
    for (name, module) in corpus {
        let result = analyze_module(module);
        for (fref, func) in module.functions.iter() {
            for (v, data) in func.values.iter() {
                if !data.ty.varying {
                    assert!(result.functions[fref].is_uniform(v), "{name}: {v}");
                }
            }
        }
        let text = annotated_module_text(module, &result);
        let back = parse_module(&text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(
            crate::ir::write::module_to_string(&back),
            crate::ir::write::module_to_string(module),
            "{name}"
        );
    }
}

/// The repository's root.
fn repo_root() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
}

/// `--warn-divergent` on the source `text` named `name`: the front end's result and
/// the report.
fn warn_divergent_text(
    name: &str,
    text: String,
) -> (crate::driver::FrontResult, Vec<crate::diag::Diagnostic>) {
    let front = crate::driver::run_front(
        name,
        None,
        text,
        &crate::driver::FrontOptions::default(),
        crate::driver::Stage::Check,
    );
    let module = crate::driver::lower_front(&front).expect("the example lowers");
    let diags = report(&front, &module, true);
    (front, diags)
}

/// [`warn_divergent_text`] on a file of the repository, named by its file name.
fn warn_divergent_report(file: &str) -> (crate::driver::FrontResult, Vec<crate::diag::Diagnostic>) {
    let path = repo_root().join(file);
    let text = std::fs::read_to_string(&path).expect("the example exists");
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    warn_divergent_text(&name, text)
}

fn render_all(front: &crate::driver::FrontResult, diags: &[crate::diag::Diagnostic]) -> String {
    diags
        .iter()
        .map(|d| crate::diag::render_human(&front.sources, d, false))
        .collect()
}

/// `--warn-divergent` on an example, rendered as the terminal shows it.
fn warn_divergent(file: &str) -> String {
    let (front, diags) = warn_divergent_report(file);
    render_all(&front, &diags)
}

/// Whether `text` names an IR value (`v12`) or block (`block3`).
fn names_ir_value(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|word| {
            ["v", "block"].iter().any(|p| {
                word.strip_prefix(p)
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
        })
}

/// Checks a W0008 report against its source (called `what` in failures): each
/// warning's primary span is exactly a condition the source marks `// W0008: COND`
/// on its line, every marked condition is warned about, in order, and no message
/// names an IR value.
fn assert_marked_conditions(
    what: &str,
    front: &crate::driver::FrontResult,
    diags: &[crate::diag::Diagnostic],
) {
    let text = &front.sources.get(front.main_file).text;
    let marked: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, line)| Some((i + 1, line.split_once("// W0008: ")?.1.trim())))
        .collect();
    let warned: Vec<(usize, &str)> = diags
        .iter()
        .filter(|d| d.code == codes::DIVERGENT_BRANCH)
        .map(|d| {
            let span = d.span().expect("W0008 has a primary span");
            let file = front.sources.get(span.file);
            (file.line_col(span.start).0, front.sources.snippet(span))
        })
        .collect();
    assert_eq!(warned, marked, "{what}: warned conditions");
    for d in diags {
        let texts = std::iter::once(&d.message)
            .chain(d.secondary.iter().map(|l| &l.message))
            .chain(d.primary.iter().map(|l| &l.message))
            .chain(&d.notes)
            .chain(&d.help);
        for t in texts {
            assert!(!names_ir_value(t), "{what}: an IR name in {t:?}");
        }
    }
}

/// The five kernels of issue 23 (point 6), one per problem a new user found, checked
/// by [`assert_marked_conditions`], and their renderings snapshotted.
#[test]
fn warn_divergent_kernels() {
    for name in [
        "if_in_foreach",
        "foreach_tail",
        "source_terms",
        "uniform_loop",
        "check_command",
    ] {
        let file = format!("tests/warn_divergent/{name}.spmd");
        let (front, diags) = warn_divergent_report(&file);
        assert_marked_conditions(&file, &front, &diags);
        insta::assert_snapshot!(format!("warn_divergent_{name}"), render_all(&front, &diags));
    }
}

/// The fenced blocks of a Markdown text whose info string is `lang`, in order.
fn fenced_blocks(text: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) if info.trim() == lang => current = Some(String::new()),
            (Some(_), Some(_)) => out.extend(current.take()),
            (Some(block), None) => {
                block.push_str(line);
                block.push('\n');
            }
            _ => {}
        }
    }
    out
}

/// The W0008 documentation stays true: the explanation's samples warn exactly at the
/// conditions they mark, and lang-spec/diagnostics.md shows the output spmdc prints
/// for its kernel.
#[test]
fn warn_divergent_docs() {
    let read = |file: &str| std::fs::read_to_string(repo_root().join(file)).unwrap();
    let explain = read("compiler/src/diag/explain/W0008.md");
    let samples = fenced_blocks(&explain, "spmd");
    assert_eq!(samples.len(), 2, "W0008.md's samples");
    for (i, sample) in samples.into_iter().enumerate() {
        let (front, diags) = warn_divergent_text("W0008.md", sample);
        assert_marked_conditions(&format!("W0008.md sample {}", i + 1), &front, &diags);
    }
    let spec = read("lang-spec/diagnostics.md");
    let section = spec
        .split_once("## Divergent branches")
        .expect("lang-spec/diagnostics.md has the section")
        .1;
    let kernel = fenced_blocks(section, "spmd").remove(0);
    let shown = fenced_blocks(section, "console").remove(0);
    let (front, diags) = warn_divergent_text("kernel.spmd", kernel);
    assert_eq!(render_all(&front, &diags).trim_end(), shown.trim_end());
}

#[test]
fn names_ir_value_finds_value_names_only() {
    assert!(names_ir_value("the condition v30 depends on"));
    assert!(names_ir_value("(block12)"));
    assert!(!names_ir_value("`v > 0` is loaded from `v2d[i]`, `value`"));
}

#[test]
fn warn_divergent_mandelbrot() {
    insta::assert_snapshot!(warn_divergent("examples/mandelbrot.spmd"));
}

#[test]
fn warn_divergent_coherent() {
    insta::assert_snapshot!(warn_divergent("examples/coherent.spmd"));
}

#[test]
fn warn_divergent_saxpy_has_no_divergent_branch() {
    let text = warn_divergent("examples/saxpy.spmd");
    insta::assert_snapshot!(text);
}

/// Runs entry `name` of `module` the way the ISPC-style corpora are run (one gang,
/// a zeroed 64-float `RET`, `aFOO[i] = i + 1`, `b = 5`); returns `RET` or why it stopped.
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

/// The soundness check: with every value the analysis calls uniform checked at run
/// time (`insert_uniformity_checks`), each ISPC-style corpus program that runs runs the
/// same, so no checked value ever differed between active lanes.
#[test]
fn uniform_values_agree_across_active_lanes_at_run_time() {
    let mut checked_programs = 0;
    let mut failures = Vec::new();
    for (name, module) in corpus_modules() {
        let Some(entry) = ["f_v", "f_f", "f_fu"]
            .into_iter()
            .find(|n| module.function_by_name(n).is_some())
        else {
            continue;
        };
        let result = analyze_module(module);
        let mut instrumented = module.clone();
        insert_uniformity_checks(&mut instrumented, &result);
        if let Err(e) = crate::ir::verify_module(&instrumented) {
            failures.push(format!(
                "{name}: instrumented module does not verify: {e:?}"
            ));
            continue;
        }
        for entry in [entry, "result"] {
            let Ok(want) = run_ispc_entry(module, entry) else {
                continue;
            };
            match run_ispc_entry(&instrumented, entry) {
                Ok(got) if got == want => checked_programs += 1,
                Ok(_) => failures.push(format!("{name}: {entry}: results changed")),
                Err(e) => failures.push(format!("{name}: {entry}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        checked_programs > 100,
        "only {checked_programs} runs checked"
    );
}

#[test]
fn the_checks_catch_a_wrong_claim() {
    // `lane_index` claimed uniform: the instrumented run must trap.
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
    result.functions[f].divergent[lane] = None;
    insert_uniformity_checks(&mut module, &result);
    crate::ir::verify_module(&module).expect("instrumented module verifies");
    let err = run_ispc_entry(&module, "f_v").expect_err("the check traps");
    assert!(err.contains("unreachable"), "{err}");
}

/// `text` parsed, analyzed and instrumented with the run-time checks, with the values
/// named in `claim_uniform` claimed uniform whatever the analysis found; then `@f_v` run.
fn run_checked(text: &str, claim_uniform: &[&str]) -> Result<Vec<u8>, String> {
    let mut module = parse_module(text).expect("test IR parses");
    let mut result = analyze_module(&module);
    let f = module.function_by_name("f_v").expect("@f_v");
    let names = Names::new(&module.functions[f]);
    for (v, _) in module.functions[f].values.iter() {
        if claim_uniform.contains(&names.value(v).to_string().as_str()) {
            result.functions[f].divergent[v] = None;
        }
    }
    insert_uniformity_checks(&mut module, &result);
    crate::ir::verify_module(&module).expect("instrumented module verifies");
    run_ispc_entry(&module, "f_v")
}

#[test]
fn a_nan_in_every_lane_passes_the_check() {
    // 0/0 in every lane: the same NaN everywhere, rightly uniform, though NaN != NaN.
    let text = "module lanes 4 ptr 4

function export @f_v(ptr) {
block0(v0: ptr):
    v1 = fconst.f32 0.0
    v2 = splat v1
    v3 = fdiv v2, v2
    v4 = fconst.f64 0.0
    v5 = splat v4
    v6 = fdiv v5, v5
    v7 = fcmp uno v3, v3
    v8 = fcmp uno v6, v6
    return
}
";
    let annotated = annotate(text);
    for v in ["v3 = fdiv v2, v2  ; uniform", "v6 = fdiv v5, v5  ; uniform"] {
        assert!(annotated.contains(v), "{annotated}");
    }
    run_checked(text, &[]).expect("no check traps");
}

#[test]
fn the_checks_tell_zeros_of_different_signs_apart() {
    // -0 in lane 0 and +0 elsewhere compare equal, but they are different values
    // (1/x tells them apart): claimed uniform, the check must trap.
    let text = "module lanes 4 ptr 4

function export @f_v(ptr) {
block0(v0: ptr):
    v1 = special lane_index
    v2 = iconst.[i32] 0
    v3 = icmp eq v1, v2
    v4 = fconst.[f64] -0.0
    v5 = fconst.[f64] 0.0
    v6 = select v3, v4, v5
    return
}
";
    let annotated = annotate(text);
    assert!(
        annotated.contains("v6 = select v3, v4, v5  ; divergent <- mask v3"),
        "{annotated}"
    );
    run_checked(text, &[]).expect("no value is claimed uniform wrongly");
    let err = run_checked(text, &["v6"]).expect_err("the check traps");
    assert!(err.contains("unreachable"), "{err}");
}

/// The coherence-hint notes for a source text, rendered.
fn coherent_notes(src: &str) -> String {
    let front = crate::driver::run_front(
        "hints.spmd",
        None,
        src.to_string(),
        &crate::driver::FrontOptions::default(),
        crate::driver::Stage::Check,
    );
    let module = crate::driver::lower_front(&front).expect("the program lowers");
    let result = analyze_module(&module);
    unnecessary_coherent_hints(&front.unit, &module, &result)
        .iter()
        .map(|d| crate::diag::render_human(&front.sources, d, false))
        .collect()
}

#[test]
fn coherent_hints_on_uniform_valued_varying_conditions_get_a_note() {
    let text = coherent_notes(
        "export void f(uniform float data[], uniform int n) {
    varying int k = n;
    varying int c = n;
    cwhile (c > 0) {
        c = c - 1;
    }
    foreach (i = 0 ... n) {
        cif (k > 4) {
            data[i] = 0;
        }
        cif (data[i] > 1) {
            data[i] = 2;
        }
    }
}
",
    );
    insta::assert_snapshot!(text);
}

#[test]
fn coherent_hints_on_divergent_conditions_get_no_note() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    let src = std::fs::read_to_string(root.join("examples/coherent.spmd")).unwrap();
    assert_eq!(coherent_notes(&src), "");
}

/// Whether the value stored by the last store of `@f` in `src` is uniform.
fn last_stored_value_is_uniform(src: &str) -> bool {
    let front = crate::driver::run_front(
        "temporal.spmd",
        None,
        src.to_string(),
        &crate::driver::FrontOptions::default(),
        crate::driver::Stage::Check,
    );
    let module = crate::driver::lower_front(&front).expect("the program lowers");
    let f = module.function_by_name("f").expect("@f");
    let func = &module.functions[f];
    let result = analyze_function(func);
    let stored = func
        .layout
        .iter()
        .flat_map(|&b| &func.blocks[b].insts)
        .filter_map(|&i| match func.insts[i] {
            InstData::Store { value, .. } => Some(value),
            _ => None,
        })
        .next_back()
        .expect("a store");
    assert!(func.value_type(stored).varying);
    result.is_uniform(stored)
}

#[test]
fn temporal_divergence_a_uniform_value_leaving_a_divergent_loop_is_divergent() {
    // Each lane leaves the loop in another iteration, so `x` keeps another `t`.
    assert!(!last_stored_value_is_uniform(
        "export void f(uniform float data[], uniform int n) {
    int x = 0;
    uniform int t = 0;
    while (data[programIndex] > t) {
        x = t;
        t++;
    }
    data[programIndex] = x;
}
"
    ));
    // The same loop with a uniform exit: the gang leaves together.
    assert!(last_stored_value_is_uniform(
        "export void f(uniform float data[], uniform int n) {
    int x = 0;
    uniform int t = 0;
    while (t < n) {
        x = t;
        t++;
    }
    data[programIndex] = x;
}
"
    ));
}

// ------------------------------------------- uniformity relative to a region's mask

/// A counted loop inside a divergent region of a masked function: `v2` is the entry
/// mask, `v6 = band(v2, lane < n)` the region mask `G`, `v9` the counter `k`, `v15` the
/// loop mask. `extra_loop` is spliced in at the end of the loop body (block3) and
/// `after` into the join (block4, whose parameter `v30` is `k` after the loop when the
/// loop body has no extra value).
fn region_loop(extra_loop: &str, after: &str) -> String {
    format!(
        "module lanes 4 ptr 4

function internal @f(i32, ptr) masked {{
block0(v0: i32, v1: ptr, v2: [bool]):
    v3 = special lane_index
    v4 = splat v0
    v5 = icmp slt v3, v4
    v6 = band v2, v5
    v7 = any v6
    v8 = iconst.[i32] 0
    brif v7, block1, block4(v8)
block1:
    jump block2(v8, v6)
block2(v9: [i32], v10: [bool]):
    v11 = band v6, v10
    v12 = iconst.i32 3
    v13 = splat v12
    v14 = icmp slt v9, v13
    v15 = band v11, v14
    v16 = any v15
    brif v16, block3, block4(v9)
block3:
    v17 = iconst.i32 4
    v18 = splat v17
    v19 = imul v9, v18
    v20 = bitcast.ptr v19
    v21 = splat v1
    v22 = iadd v21, v20
    v23 = load.i32 global v22 mask v15
    v24 = iadd v23, v3
    store global v22, v24 mask v15
    v25 = iconst.i32 1
    v26 = splat v25
    v27 = iadd v9, v26
    v28 = band v6, v15
    v29 = select v28, v27, v9
{extra_loop}    jump block2(v29, v15)
block4(v30: [i32]):
{after}    return
}}
"
    )
}

/// The values of `text`'s function `@f` that are uniform in a region mask, by name,
/// with that mask's name (the test IR numbers its values in order, as `Names` does).
fn relative_values(text: &str) -> Vec<(String, String)> {
    let module = parse_module(text).expect("test IR parses");
    let result = analyze_module(&module);
    let (fref, func) = module.functions.iter().next().expect("one function");
    let names = Names::new(func);
    let mut out: Vec<(String, String)> = func
        .values
        .keys()
        .filter_map(|v| {
            let g = result.functions[fref].uniform_in(v)?;
            Some((names.value(v).to_string(), names.value(g).to_string()))
        })
        .collect();
    out.sort_by_key(|(v, _)| v[1..].parse::<u32>().unwrap_or(0));
    out
}

/// Whether none of `values` is uniform in a region mask in `text`.
fn none_relative(text: &str, values: &[&str]) -> Result<(), String> {
    let found = relative_values(text);
    match found.iter().find(|(v, _)| values.contains(&v.as_str())) {
        Some((v, g)) => Err(format!("{v} is uniform in {g}: {found:?}")),
        None => Ok(()),
    }
}

#[test]
fn a_counter_inside_a_divergent_region_is_uniform_in_the_region_mask() {
    let text = region_loop("", "");
    let found = relative_values(&text);
    // k, its compare, the address, the load of one element from it, the increment,
    // the update and k after the loop (never observed); the loop masks (subsets of
    // G). The per-lane sum v24 is not.
    let names: Vec<&str> = found.iter().map(|(v, _)| v.as_str()).collect();
    assert_eq!(
        names,
        [
            "v9", "v10", "v11", "v14", "v15", "v19", "v20", "v22", "v23", "v27", "v28", "v29",
            "v30"
        ]
    );
    assert!(found.iter().all(|(_, g)| g == "v6"));
    // The base analysis is unchanged: k is still divergent for existing queries.
    let module = parse_module(&text).expect("test IR parses");
    let result = analyze_module(&module);
    let func = module.functions.values().next().expect("one function");
    let names = Names::new(func);
    let k = func
        .values
        .keys()
        .find(|&v| names.value(v).to_string() == "v9")
        .expect("v9");
    assert!(!result.functions.values().next().expect("one").is_uniform(k));
    insta::assert_snapshot!(annotate(&text));
}

#[test]
fn a_counter_used_after_the_join_stays_divergent() {
    // v30 keeps the old k (0) of lanes outside G and is stored under the entry mask.
    let text = region_loop("", "    store global v1, v30 mask v2\n");
    none_relative(
        &text,
        &["v9", "v14", "v19", "v22", "v23", "v27", "v29", "v30"],
    )
    .unwrap();
}

#[test]
fn a_counter_stored_under_the_outer_mask_stays_divergent() {
    let text = region_loop("    store global v1, v9 mask v2\n", "");
    none_relative(&text, &["v9", "v14", "v22", "v27", "v29"]).unwrap();
}

#[test]
fn a_counter_read_by_a_cross_lane_operation_stays_divergent() {
    let text = region_loop("    v40 = reduce_add v27, v2\n", "");
    none_relative(&text, &["v9", "v14", "v22", "v27", "v29"]).unwrap();
}

#[test]
fn an_address_used_under_a_wider_mask_is_not_eligible_nor_what_feeds_it() {
    // The store under the entry mask observes the address v22 in lanes outside G;
    // k feeds it, so k and everything computed from k are dropped too.
    let text = region_loop("    store global v22, v3 mask v2\n", "");
    none_relative(&text, &["v9", "v14", "v19", "v22", "v23", "v27", "v29"]).unwrap();
}

#[test]
fn a_region_mask_redefined_in_a_loop_gives_no_relative_values() {
    // G (v9) is recomputed every iteration of the outer loop, so a value carried
    // around that loop may have been computed under an older G.
    let text = "module lanes 4 ptr 4

function internal @f(i32, ptr) masked {
block0(v0: i32, v1: ptr, v2: [bool]):
    v3 = iconst.[i32] 0
    jump block1(v3)
block1(v4: [i32]):
    v5 = special lane_index
    v6 = splat v0
    v7 = iadd v5, v4
    v8 = icmp slt v7, v6
    v9 = band v2, v8
    v10 = any v9
    brif v10, block2, block3
block2:
    v11 = iconst.i32 1
    v12 = splat v11
    v13 = iadd v4, v12
    v14 = select v9, v13, v4
    jump block1(v14)
block3:
    return
}
";
    assert_eq!(relative_values(text), Vec::new());
}

#[test]
fn without_a_divergent_region_nothing_is_relative() {
    let text = region_loop("", "").replace("v6 = band v2, v5", "v6 = band v2, v2");
    assert_eq!(relative_values(&text), Vec::new());
}
