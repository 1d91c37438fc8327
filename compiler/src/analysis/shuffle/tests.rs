//! Tests of shuffle detection: IR text in, pairs out (positive and negative cases),
//! and the pairs of the stencil examples, counted by hand from their source.

use super::*;
use crate::analysis::affine;
use crate::analysis::corpus::{corpus_modules, lower_file, root};
use crate::ir::parse_module;

/// Builds the text of one function: numbered values, one instruction a line.
pub(super) struct Text {
    lines: Vec<String>,
    next: u32,
}

impl Text {
    /// A function `@f` of `lanes` lanes whose entry block takes `params` (`v0`, `v1`, ..).
    pub(super) fn new(params: &[&str]) -> Text {
        let list: Vec<String> = params
            .iter()
            .enumerate()
            .map(|(i, t)| format!("v{i}: {t}"))
            .collect();
        Text {
            lines: vec![format!("block0({}):", list.join(", "))],
            next: params.len() as u32,
        }
    }

    /// Appends `v<next> = rhs` and returns the value's name.
    pub(super) fn def(&mut self, rhs: &str) -> String {
        let name = format!("v{}", self.next);
        self.next += 1;
        self.lines.push(format!("    {name} = {rhs}"));
        name
    }

    fn line(&mut self, text: &str) {
        self.lines.push(text.to_string());
    }

    /// `base + 4 * sext(index + offset)` as a `ptr`, the way the lowering indexes a
    /// `float[]` with an `int`; `offset` is a constant or a value's name.
    fn elem_addr(&mut self, base: &str, index: &str, offset: &str) -> String {
        let off = match offset.parse::<i64>() {
            Ok(k) => self.def(&format!("iconst.[i32] {k}")),
            Err(_) => offset.to_string(),
        };
        let i = self.def(&format!("iadd {index}, {off}"));
        let wide = self.def(&format!("sext.i64 {i}"));
        let four = self.def("iconst.[i64] 4");
        let bytes = self.def(&format!("imul {wide}, {four}"));
        let p = self.def(&format!("bitcast.ptr {bytes}"));
        let b = self.def(&format!("splat {base}"));
        self.def(&format!("iadd {b}, {p}"))
    }

    /// A load of `base[index + offset]` (`mask` appended when given).
    pub(super) fn load(
        &mut self,
        base: &str,
        index: &str,
        offset: &str,
        mask: Option<&str>,
    ) -> String {
        let a = self.elem_addr(base, index, offset);
        let m = mask.map(|m| format!(" mask {m}")).unwrap_or_default();
        self.def(&format!("load.f32 global {a}{m}"))
    }

    pub(super) fn module(&self, lanes: u32, params: &str) -> String {
        format!(
            "module lanes {lanes} ptr 8\n\nfunction export @f({params}) {{\n{}\n    return\n}}\n",
            self.lines.join("\n")
        )
    }
}

/// The pairs of `@f` in `text`, as [`pairs_text`] prints them.
fn pairs(text: &str) -> String {
    let module = parse_module(text).expect("test IR parses");
    crate::ir::verify_module(&module).expect("test IR verifies");
    let f = module.function_by_name("f").expect("a function @f");
    let func = &module.functions[f];
    let aff = affine::analyze_function(&module, func);
    pairs_text(func, &analyze_function(&module, func, &aff))
}

/// `i = n + programIndex` (i32) in a function taking `(ptr, i32)`.
fn lane_index(t: &mut Text) -> String {
    let lane = t.def("special lane_index");
    let n = t.def("splat v1");
    t.def(&format!("iadd {n}, {lane}"))
}

/// Loads of `v0[i + k]` for each `k` of `offsets`, in order; their names.
pub(super) fn stencil_1d(offsets: &[i64], lanes: u32) -> (String, Vec<String>) {
    let mut t = Text::new(&["ptr", "i32"]);
    let i = lane_index(&mut t);
    let names = offsets
        .iter()
        .map(|k| t.load("v0", &i, &k.to_string(), None))
        .collect();
    (t.module(lanes, "ptr, i32"), names)
}

fn expect(names: &[String], lines: &[(usize, usize, &str)]) -> String {
    lines
        .iter()
        .map(|&(b, a, how)| format!("{} = {} {how}\n", names[b], names[a]))
        .collect()
}

// ---------------------------------------------------------------------------------
// Positive cases.

#[test]
fn one_dimensional_neighbours_are_lanes_up_and_down() {
    // x[i], x[i-1], x[i+1]: both neighbours come from the centre's register.
    let (text, n) = stencil_1d(&[0, -1, 1], 8);
    assert_eq!(
        pairs(&text),
        expect(&n, &[(1, 0, "lane-1"), (2, 0, "lane+1")])
    );
}

#[test]
fn the_same_address_twice_is_plain_reuse() {
    let (text, n) = stencil_1d(&[3, 3], 8);
    assert_eq!(pairs(&text), expect(&n, &[(1, 0, "same lane")]));
}

#[test]
fn the_smallest_delta_wins() {
    // x[i] and x[i+8] (8 lanes apart: no pair, both stay loads), then x[i+6]: 6 lanes
    // from x[i] but 2 from x[i+8].
    let (text, n) = stencil_1d(&[0, 8, 6], 8);
    assert_eq!(pairs(&text), expect(&n, &[(2, 1, "lane-2")]));
}

#[test]
fn a_shuffled_load_is_never_a_source() {
    // x[i], x[i+1], x[i+2]: x[i+2] is one lane from x[i+1], but x[i+1] is itself a
    // shuffle, so it comes two lanes from x[i].
    // x[i+1]'s edge lane (lane 7) takes the halo x[i+2] reloaded in its own edge.
    let (text, n) = stencil_1d(&[0, 1, 2], 8);
    let edge = format!("lane+1, edge {} lane-1", n[2]);
    assert_eq!(pairs(&text), expect(&n, &[(1, 0, &edge), (2, 0, "lane+2")]));
}

#[test]
fn a_lane_stride_divides_the_offset() {
    // x[2*lane + k]: moving one lane adds 2; x[2l+4] is x[2l] two lanes on, x[2l+3] is
    // no lane's x[2l] (odd), and x[2l+3] is x[2l+1] one lane on.
    let mut t = Text::new(&["ptr", "i32"]);
    let lane = t.def("special lane_index");
    let two = t.def("iconst.[i32] 2");
    let i = t.def(&format!("imul {lane}, {two}"));
    let names: Vec<String> = [0, 4, 1, 3]
        .iter()
        .map(|k| t.load("v0", &i, &k.to_string(), None))
        .collect();
    assert_eq!(
        pairs(&t.module(8, "ptr, i32")),
        expect(&names, &[(1, 0, "lane+2"), (3, 2, "lane+1")])
    );
}

/// A GPU-style 2-D index `c = (bx*bdx + tid.x) + nx*(by*bdy + tid.y)`, with the
/// bounds check's mask; loads `w0[c + dj*nx + di]` for each (di, dj) of `offsets`.
fn stencil_2d(offsets: &[(i64, i64)], lanes: u32) -> (String, Vec<String>) {
    let mut t = Text::new(&["ptr", "i32", "[bool]"]);
    let bx = t.def("special block_idx.x");
    let bdx = t.def("special block_dim.x");
    let x0 = t.def(&format!("imul {bx}, {bdx}"));
    let x0v = t.def(&format!("splat {x0}"));
    let tx = t.def("special thread_idx.x");
    let i = t.def(&format!("iadd {x0v}, {tx}"));
    let by = t.def("special block_idx.y");
    let bdy = t.def("special block_dim.y");
    let y0 = t.def(&format!("imul {by}, {bdy}"));
    let y0v = t.def(&format!("splat {y0}"));
    let ty = t.def("special thread_idx.y");
    let j = t.def(&format!("iadd {y0v}, {ty}"));
    let nx = t.def("splat v1");
    let row = t.def(&format!("imul {nx}, {j}"));
    let c = t.def(&format!("iadd {i}, {row}"));
    let mut names = Vec::new();
    for &(di, dj) in offsets {
        let r = match dj {
            0 => c.clone(),
            1 => t.def(&format!("iadd {c}, {nx}")),
            -1 => t.def(&format!("isub {c}, {nx}")),
            _ => unreachable!("rows -1..=1"),
        };
        names.push(t.load("v0", &r, &di.to_string(), Some("v2")));
    }
    (t.module(lanes, "ptr, i32, [bool]"), names)
}

#[test]
fn two_dimensional_rows_pair_within_each_row() {
    // jacobi's order: edges (-1,0) (0,-1) (+1,0) (0,+1), corners (-1,-1) (-1,+1)
    // (+1,-1) (+1,+1), centre (0,0). Rows never pair with each other (different
    // symbolic terms); within a row the first load is the source.
    let offsets = [
        (-1, 0),
        (0, -1),
        (1, 0),
        (0, 1),
        (-1, -1),
        (-1, 1),
        (1, -1),
        (1, 1),
        (0, 0),
    ];
    // Row c's centre (+1 from c-1) takes its edge from c+1's (+2) halo.
    let (text, n) = stencil_2d(&offsets, 32);
    let edge = format!("lane+1 (row), edge {} lane-1", n[2]);
    assert_eq!(
        pairs(&text),
        expect(
            &n,
            &[
                (2, 0, "lane+2 (row)"),
                (4, 1, "lane-1 (row)"),
                (5, 3, "lane-1 (row)"),
                (6, 1, "lane+1 (row)"),
                (7, 3, "lane+1 (row)"),
                (8, 0, &edge),
            ]
        )
    );
}

#[test]
fn a_store_to_another_space_keeps_the_pair() {
    let mut t = Text::new(&["ptr", "i32"]);
    let i = lane_index(&mut t);
    let a = t.load("v0", &i, "0", None);
    let s = t.def("shared_addr sh0");
    let z = t.def("fconst.f32 0.0");
    t.line(&format!("    store shared {s}, {z}"));
    let b = t.load("v0", &i, "1", None);
    let text = t.module(8, "ptr, i32").replace(
        "module lanes 8 ptr 8\n",
        "module lanes 8 ptr 8\n\nshared sh0 \"t\" size 4 align 4\n",
    );
    assert_eq!(pairs(&text), format!("{b} = {a} lane+1\n"));
}

// ---------------------------------------------------------------------------------
// Negative cases.

#[test]
fn an_aliasing_store_between_the_loads_kills_the_pair() {
    for space in ["global", "generic"] {
        let mut t = Text::new(&["ptr", "i32", "ptr"]);
        let i = lane_index(&mut t);
        t.load("v0", &i, "0", None);
        let z = t.def("fconst.f32 0.0");
        // To another buffer, which may be the same memory.
        t.line(&format!("    store {space} v2, {z}"));
        t.load("v0", &i, "1", None);
        assert_eq!(pairs(&t.module(8, "ptr, i32, ptr")), "", "{space}");
    }
}

#[test]
fn a_barrier_or_a_call_between_the_loads_kills_the_pair() {
    let mut t = Text::new(&["ptr", "i32"]);
    let i = lane_index(&mut t);
    t.load("v0", &i, "0", None);
    t.line("    barrier");
    t.load("v0", &i, "1", None);
    assert_eq!(pairs(&t.module(8, "ptr, i32")), "");
}

#[test]
fn a_symbolic_lane_offset_gives_no_pair() {
    // x[i] and x[i + m], m a uniform parameter: the delta would be m.
    let mut t = Text::new(&["ptr", "i32", "i32"]);
    let i = lane_index(&mut t);
    t.load("v0", &i, "0", None);
    let m = t.def("splat v2");
    t.load("v0", &i, &m, None);
    assert_eq!(pairs(&t.module(8, "ptr, i32, i32")), "");
}

#[test]
fn a_varying_non_affine_offset_gives_no_pair() {
    // x[i] and x[i + y[i]]: the offset differs per lane.
    let mut t = Text::new(&["ptr", "i32", "ptr"]);
    let i = lane_index(&mut t);
    let a = t.elem_addr("v2", &i, "0");
    let off = t.def(&format!("load.i32 global {a}"));
    t.load("v0", &i, "0", None);
    t.load("v0", &i, &off, None);
    assert_eq!(pairs(&t.module(8, "ptr, i32, ptr")), "");
}

#[test]
fn an_offset_of_the_gang_width_or_more_gives_no_pair() {
    // With 8 lanes, x[i+8] and x[i-8] are no lane's x[i]; x[i+9] is x[i+8] one lane on.
    let (text, n) = stencil_1d(&[0, 8, -8, 9], 8);
    assert_eq!(pairs(&text), expect(&n, &[(3, 1, "lane+1")]));
    // With 16 lanes, all three come from x[i] (x[i+8] is a shuffle, never a source).
    let (text, n) = stencil_1d(&[0, 8, -8, 9], 16);
    let edge = format!("lane+8, edge {} lane-1", n[3]);
    assert_eq!(
        pairs(&text),
        expect(&n, &[(1, 0, &edge), (2, 0, "lane-8"), (3, 0, "lane+9")])
    );
}

#[test]
fn thread_y_neighbours_are_not_lane_neighbours() {
    // In a block whose rows are narrower than the gang, `c + nx` is the value of the
    // thread one row down, which may well be in the same gang (rows of 8 in a gang
    // of 32: 8 lanes on). Only threadIdx.x neighbours are taken, and those only with
    // the row condition (their source in another row reloads).
    let (text, n) = stencil_2d(&[(0, 0), (0, 1), (0, -1), (1, 0)], 32);
    assert_eq!(pairs(&text), expect(&n, &[(3, 0, "lane+1 (row)")]));
}

#[test]
fn loads_in_different_blocks_give_no_pair() {
    // A loop: x[i] before it, x[i + 1] in its body; and the body's own load of
    // x[i + k] against the previous iteration's, which is another block's value.
    let text = "module lanes 8 ptr 8

function export @f(ptr, i32) {
block0(v0: ptr, v1: i32):
    v2 = special lane_index
    v3 = sext.i64 v2
    v4 = iconst.[i64] 4
    v5 = imul v3, v4
    v6 = bitcast.ptr v5
    v7 = splat v0
    v8 = iadd v7, v6
    v9 = load.f32 global v8
    v10 = iconst.i32 0
    jump block1(v10)
block1(v11: i32):
    v12 = iconst.[ptr] 4
    v13 = iadd v8, v12
    v14 = load.f32 global v13
    v15 = iconst.i32 1
    v16 = iadd v11, v15
    v17 = icmp slt v16, v1
    brif v17, block1(v16), block2
block2:
    return
}
";
    assert_eq!(pairs(text), "");
}

#[test]
fn different_masks_or_types_give_no_pair() {
    let mut t = Text::new(&["ptr", "i32", "[bool]", "[bool]"]);
    let i = lane_index(&mut t);
    t.load("v0", &i, "0", Some("v2"));
    t.load("v0", &i, "1", Some("v3"));
    let a = t.elem_addr("v0", &i, "1");
    t.def(&format!("load.i32 global {a} mask v2"));
    assert_eq!(pairs(&t.module(8, "ptr, i32, [bool], [bool]")), "");
}

// ---------------------------------------------------------------------------------
// Halos.

#[test]
fn each_side_shares_the_halo_of_its_farthest_load() {
    // gaussblur_rows' row order: centre, -1, +1, -2, +2. Each side's farthest load
    // (-2, +2) comes last and reloads its edge (the halo); -1 and +1 take theirs from
    // it, one lane towards the middle.
    let (text, n) = stencil_1d(&[0, -1, 1, -2, 2], 32);
    let left = format!("lane-1, edge {} lane+1", n[3]);
    let right = format!("lane+1, edge {} lane-1", n[4]);
    assert_eq!(
        pairs(&text),
        expect(
            &n,
            &[
                (1, 0, &left),
                (2, 0, &right),
                (3, 0, "lane-2"),
                (4, 0, "lane+2")
            ]
        )
    );
}

#[test]
fn a_side_of_three_offsets_takes_the_farthest_whatever_the_order() {
    // wave13pt's row: c-1 first (the source), then c+1 (N = 2), c-2 (N = -1), c+2
    // (N = 3), c (N = 1). The right side's carrier is c+2; c-2 is alone on its side.
    let (text, n) = stencil_1d(&[-1, 1, -2, 2, 0], 32);
    let a = format!("lane+2, edge {} lane-1", n[3]);
    let b = format!("lane+1, edge {} lane-2", n[3]);
    assert_eq!(
        pairs(&text),
        expect(
            &n,
            &[(1, 0, &a), (2, 0, "lane-1"), (3, 0, "lane+3"), (4, 0, &b)]
        )
    );
}

#[test]
fn a_load_read_before_its_carrier_reloads_its_own_edge() {
    // x[i+1] is read (by an add) before x[i+2], the side's carrier, is loaded: it
    // cannot wait for the carrier, so it keeps its reload. x[i+1] after the carrier
    // may use it.
    let mut t = Text::new(&["ptr", "i32"]);
    let i = lane_index(&mut t);
    let a = t.load("v0", &i, "0", None);
    let b = t.load("v0", &i, "1", None);
    t.def(&format!("fadd {b}, {b}"));
    let c = t.load("v0", &i, "2", None);
    assert_eq!(
        pairs(&t.module(8, "ptr, i32")),
        format!("{b} = {a} lane+1\n{c} = {a} lane+2\n")
    );
    let mut t = Text::new(&["ptr", "i32"]);
    let i = lane_index(&mut t);
    let a = t.load("v0", &i, "0", None);
    let c = t.load("v0", &i, "2", None);
    t.def(&format!("fadd {c}, {c}"));
    let b = t.load("v0", &i, "1", None);
    assert_eq!(
        pairs(&t.module(8, "ptr, i32")),
        format!("{c} = {a} lane+2\n{b} = {a} lane+1, edge {c} lane-1\n")
    );
}

#[test]
fn sources_and_ties_share_no_halo() {
    // x[i+1] twice: the second pairs with x[i] too (a shuffled load is never a
    // source), at the same N, a tie: each reloads its edge. Loads of other sources
    // (here the other array) never serve each other's edges.
    let (text, n) = stencil_1d(&[0, 1, 1], 8);
    assert_eq!(
        pairs(&text),
        expect(&n, &[(1, 0, "lane+1"), (2, 0, "lane+1")])
    );
    let mut t = Text::new(&["ptr", "i32", "ptr"]);
    let i = lane_index(&mut t);
    let a = t.load("v0", &i, "0", None);
    let b = t.load("v2", &i, "0", None);
    let a1 = t.load("v0", &i, "1", None);
    let b2 = t.load("v2", &i, "2", None);
    assert_eq!(
        pairs(&t.module(8, "ptr, i32, ptr")),
        format!("{a1} = {a} lane+1\n{b2} = {b} lane+2\n")
    );
}

// ---------------------------------------------------------------------------------
// The examples.

/// (shuffles, reuses, varying loads) of `entry` in `module`.
fn counts(module: &Module, entry: &str) -> (usize, usize, u32) {
    let f = module.function_by_name(entry).expect("the entry exists");
    let aff = affine::analyze_module(module);
    let r = analyze_function(module, &module.functions[f], &aff.functions[f]);
    (r.shuffles(), r.reuses(), r.varying_loads)
}

/// Every example, conformance and ISPC-style program runs through the analysis (nothing
/// panics, every pair is well formed), and the stencils give the counts worked out by
/// hand from their source.
#[test]
fn the_stencil_examples_give_the_pairs_counted_by_hand() {
    let corpus = corpus_modules();
    assert!(corpus.len() > 20, "the corpora lower");
    let mut total = 0;
    for (path, module) in corpus {
        let aff = affine::analyze_module(module);
        let result = super::analyze_module(module, &aff);
        for (fref, func) in module.functions.iter() {
            for p in &result.functions[fref].pairs {
                assert!(p.delta.unsigned_abs() < module.lane_count, "{path}");
                assert!(result.functions[fref].pair(p.source).is_none(), "{path}");
                assert!(matches!(func.insts[p.load], InstData::Load { .. }));
                total += 1;
            }
        }
    }
    assert!(total > 0);

    let ex = |name: &str| lower_file(&root().join("examples").join(name)).expect("compiles");
    // jacobi2d (`foreach` over j, i): 9 loads of w0 in three rows c-nx, c, c+nx.
    // Row c: c-1 comes first, c+1 is 2 lanes from it, c is 1 lane from it (c+1 is a
    // shuffle, never a source). Rows c-nx and c+nx: the centre comes first (an
    // edge), the two corners are 1 lane either way. 6 shuffles, as in the paper's
    // Table 2 (6/9), in each of the two copies of the body the lowering makes (the
    // full gangs and the partial last one): 12 of 18.
    assert_eq!(counts(&ex("jacobi2d.spmd"), "jacobi2d"), (12, 0, 18));
    // The GPU version has one body: 6 of 9.
    assert_eq!(counts(&ex("jacobi2d_gpu.spmd"), "jacobi2d_gpu"), (6, 0, 9));
    // wave13pt: w1 at c±1, c±2 (one row), c±sy, c±2sy, c±sz, c±2sz (one load each,
    // no lane neighbours), w1[c] and w0[c]. Row c: c-1 first; c+1 is 2 lanes on,
    // c-2 1 lane back, c+2 3 lanes on, c 1 lane on: 4 shuffles of 14 loads (the
    // paper: 4/14), twice (full and partial gangs).
    assert_eq!(counts(&ex("wave13pt.spmd"), "wave13pt"), (8, 0, 28));
    assert_eq!(counts(&ex("wave13pt_gpu.spmd"), "wave13pt_gpu"), (4, 0, 14));
    // gaussblur reads its 25 points in a loop over (dj, di): one load a loop body,
    // each iteration its own; nothing pairs (the unrolled kernel would give 20/25).
    let (s, r, _) = counts(&ex("gaussblur.spmd"), "gaussblur");
    assert_eq!((s, r), (0, 0));
}

#[test]
fn served_counts_split_moves_from_reuse_and_edges() {
    use cranelift_entity::EntityRef;
    let (c1, c2) = (Inst::new(7), Inst::new(9));
    let served = [
        Served {
            delta: 2,
            edge: EdgeService::Reload,
        },
        Served {
            delta: 1,
            edge: EdgeService::Halo(c1),
        },
        Served {
            delta: -2,
            edge: EdgeService::Reload,
        },
        Served {
            delta: -1,
            edge: EdgeService::Halo(c2),
        },
        Served {
            delta: 3,
            edge: EdgeService::Halo(c1),
        },
        Served::bare(0),
    ];
    let c = ServedCounts::of(9, served);
    assert_eq!(
        c,
        ServedCounts {
            loads: 9,
            shuffles: 5,
            reuses: 1,
            distance: 9,
            edge_reloads: 2,
            halo_loads: 2,
            halo_shuffles: 3,
        }
    );
    assert!((c.mean_distance() - 9.0 / 5.0).abs() < 1e-12);
    assert!(ServedCounts::of(2, []).mean_distance().is_nan());
}
