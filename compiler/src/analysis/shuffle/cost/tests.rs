//! The cost model on IR text: which pairs each machine keeps.

use super::super::tests::{stencil_1d, Text};
use super::*;
use crate::analysis::affine;
use crate::analysis::shuffle::{analyze_function, pairs_text};
use crate::ir::parse_module;

/// The pairs of `@f` in `text` that `machine` keeps, as [`pairs_text`] prints them,
/// and the choices [`select`] reports.
fn selected(text: &str, machine: &Machine) -> (String, Vec<BlockChoice>) {
    let module = parse_module(text).expect("test IR parses");
    let f = module.function_by_name("f").expect("a function @f");
    let func = &module.functions[f];
    let aff = affine::analyze_function(&module, func);
    let mut shuffles = analyze_function(&module, func, &aff);
    let choices = select(func, &mut shuffles, machine);
    (pairs_text(func, &shuffles), choices)
}

/// The pairs of `@f` in `text` that `machine` keeps ([`selected`]).
fn kept(text: &str, machine: &Machine) -> String {
    selected(text, machine).0
}

/// [`kept`] on the nyuzi core, with the threads the linkage of `@f` gives it.
fn kept_on_nyuzi(text: &str) -> String {
    let module = parse_module(text).expect("test IR parses");
    let f = module.function_by_name("f").expect("a function @f");
    let threads = Machine::nyuzi_threads(&module.functions[f]);
    kept(text, &Machine::nyuzi(threads))
}

fn gtx480() -> Machine {
    Machine::dac_gpu(&sim::gpu::GpuConfig::gtx480())
}

#[test]
fn presets_give_the_issue_cost_of_a_warp_instruction() {
    // 32 lanes over 2 x 16 (GTX 480) and 4 x 32 (Maxwell) SIMT lanes.
    assert_eq!(gtx480().issue, 1.0);
    assert_eq!(
        Machine::dac_gpu(&sim::gpu::GpuConfig::maxwell()).issue,
        0.25
    );
    assert_eq!(Machine::nyuzi(4).issue, 1.0);
}

#[test]
fn an_issue_bound_block_keeps_no_shuffle() {
    // x[i-1], x[i], x[i+1]: seven address instructions a load; on the GTX 480 the
    // block's issue cycles exceed its memory-pipeline cycles, and each shuffle adds
    // issue cycles: none is kept.
    let (text, _) = stencil_1d(&[0, -1, 1], 32);
    assert_eq!(kept(&text, &gtx480()), "");
}

#[test]
fn a_port_bound_block_keeps_its_shuffles() {
    // On a nyuzi core of 4 threads the three 16-lane accesses are 48 port cycles
    // against 31 issue cycles; the dependency path (28 instructions at 3 cycles, 3
    // loads at 4, 48 gather cycles: 144) over 4 threads is 36. The first shuffle (7
    // instructions, a 1-lane reload: 15 cycles saved) gives max(38, 33, 150 / 4); the
    // second would give max(45, 18, 156 / 4), so the block stops there.
    let (text, n) = stencil_1d(&[0, -1, 1], 16);
    let want = format!("{} = {} lane-1\n", n[1], n[0]);
    assert_eq!(kept(&text, &Machine::nyuzi(4)), want);
}

#[test]
fn a_latency_bound_thread_keeps_no_shuffle() {
    // The same block on one thread: its path, 144 cycles, is the estimate (nothing
    // fills its waits), and the first shuffle lengthens it by 7 x 3 - 15 = 6.
    let (text, _) = stencil_1d(&[0, -1, 1], 16);
    assert_eq!(kept(&text, &Machine::nyuzi(1)), "");
    // Two threads halve the path to 72, still above the 48 port cycles, and three
    // make it 48, which the shuffle's 6 cycles would raise to 50: declined on both.
    assert_eq!(kept(&text, &Machine::nyuzi(2)), "");
    assert_eq!(kept(&text, &Machine::nyuzi(3)), "");
}

#[test]
fn the_nyuzi_launch_comes_from_the_linkage() {
    // An export function runs one gang on one thread: no shuffle; a task's grid fills
    // the core's 4 threads, which hide the path: the port-bound block's shuffle.
    let (export, n) = stencil_1d(&[0, -1, 1], 16);
    assert!(export.contains("function export @f"));
    assert_eq!(kept_on_nyuzi(&export), "");
    let task = export.replace("function export @f", "function task @f");
    assert_eq!(
        kept_on_nyuzi(&task),
        format!("{} = {} lane-1\n", n[1], n[0])
    );
}

#[test]
fn shuffles_stop_where_the_resources_balance() {
    // A machine where issue is nearly free and each shuffle saves one port cycle of
    // two: the block (3 loads: 6 port cycles) takes shuffles while max(issue, port)
    // falls, smallest |N| first; with issue 0.05 a cycle both pay.
    let cheap = Machine {
        issue: 0.05,
        ..gtx480()
    };
    let (text, n) = stencil_1d(&[0, -2, 1], 32);
    let both = format!("{} = {} lane-2\n{} = {} lane+1\n", n[1], n[0], n[2], n[0]);
    assert_eq!(kept(&text, &cheap), both);
    // With issue 0.15 a cycle the block's 31 instructions are 4.65 cycles against 6
    // port cycles: one shuffle (|N| = 1, 2 instructions with no mask) makes it
    // max(4.95, 5), and the next would give max(5.25, 4), more than 5.
    let tight = Machine {
        issue: 0.15,
        ..gtx480()
    };
    assert_eq!(kept(&text, &tight), format!("{} = {} lane+1\n", n[2], n[0]));
}

#[test]
fn plain_reuse_is_always_kept() {
    let (text, n) = stencil_1d(&[3, 3], 32);
    let want = format!("{} = {} same lane\n", n[1], n[0]);
    assert_eq!(kept(&text, &gtx480()), want);
}

#[test]
fn a_halo_is_taken_only_with_its_carrier_kept() {
    // x[i], x[i+1], x[i+2]: x[i+2] carries the right side's halo and x[i+1] could take
    // its edge lane from it. With issue nearly free both shuffles pay, and then the
    // halo, which saves x[i+1]'s reload transaction for no more instructions.
    let (text, n) = stencil_1d(&[0, 1, 2], 32);
    let cheap = Machine {
        issue: 0.05,
        ..gtx480()
    };
    let both = format!(
        "{} = {} lane+1, edge {} lane-1\n{} = {} lane+2\n",
        n[1], n[0], n[2], n[2], n[0]
    );
    assert_eq!(kept(&text, &cheap), both);
    // With issue 0.15 a cycle (31 instructions: 4.65 against 6 port cycles) x[i+1]
    // pays (max(4.95, 5)) and the carrier would not (max(5.25, 4)): no halo.
    let tight = Machine {
        issue: 0.15,
        ..gtx480()
    };
    assert_eq!(kept(&text, &tight), format!("{} = {} lane+1\n", n[1], n[0]));
}

#[test]
fn a_load_takes_its_halo_only_where_that_beats_its_own_reload() {
    // x[i], x[i+1], x[i+2] on a 16-lane nyuzi core, latency left out. With issue at
    // 0.5 a cycle (15.5 issue, 48 port cycles) both shuffles pay, with their reloads:
    // max(19, 33), then max(22.5, 19). The halo would add 7 instructions to save one
    // gather cycle: max(26, 18), declined.
    let (text, n) = stencil_1d(&[0, 1, 2], 16);
    let half = Machine {
        issue: 0.5,
        latency: None,
        ..Machine::nyuzi(4)
    };
    let own = format!("{} = {} lane+1\n{} = {} lane+2\n", n[1], n[0], n[2], n[0]);
    assert_eq!(kept(&text, &half), own);
    // At 0.25 a cycle the block stays port-bound, max(11.25, 19), and the halo's
    // cycle pays: max(13, 18).
    let quarter = Machine {
        issue: 0.25,
        ..half
    };
    let halo = format!(
        "{} = {} lane+1, edge {} lane-1\n{} = {} lane+2\n",
        n[1], n[0], n[2], n[2], n[0]
    );
    assert_eq!(kept(&text, &quarter), halo);
}

#[test]
fn masked_shuffles_of_one_offset_share_their_lane_test() {
    // x[i], x[i+1], x[i+64], x[i+65] under one mask: two shuffles by +1 (x[i+64] is
    // too far from x[i]). On the dac-gpu the first pays the mask's ballot, its side's
    // shift and the lane test of N = 1 (5.5 shared instructions and 1 of its own),
    // the second its own instruction only. At 0.14 a cycle the block's 39
    // instructions are 5.46 issue cycles against 8 port cycles: the first makes it
    // max(6.37, 7), the second max(6.51, 6). Counted whole for each load (6.5), the
    // second would give max(7.28, 6): declined.
    let mut t = Text::new(&["ptr", "i32", "[bool]"]);
    let lane = t.def("special lane_index");
    let n = t.def("splat v1");
    let i = t.def(&format!("iadd {n}, {lane}"));
    let n: Vec<String> = [0, 1, 64, 65]
        .iter()
        .map(|k| t.load("v0", &i, &k.to_string(), Some("v2")))
        .collect();
    let text = t.module(32, "ptr, i32, [bool]");
    let shared = Machine {
        issue: 0.14,
        ..gtx480()
    };
    let both = format!("{} = {} lane+1\n{} = {} lane+1\n", n[1], n[0], n[3], n[2]);
    assert_eq!(kept(&text, &shared), both);
    let whole = Machine {
        masked_insts: 6.5,
        shared: Shared::default(),
        ..shared
    };
    assert_eq!(kept(&text, &whole), format!("{} = {} lane+1\n", n[1], n[0]));
}

#[test]
fn the_choices_say_what_bound_each_block_and_what_the_next_shuffle_would_cost() {
    // The block of `a_port_bound_block_keeps_its_shuffles`: 31 issue cycles, 48 port
    // cycles, a path of 144 over 4 threads; one of its two shuffles kept, the second
    // (|N| = 1: 7 instructions for 15 cycles) declined.
    let (text, _) = stencil_1d(&[0, -1, 1], 16);
    let (_, choices) = selected(&text, &Machine::nyuzi(4));
    assert_eq!(choices.len(), 1, "{choices:?}");
    let c = choices[0];
    assert_eq!((c.offered, c.kept), (2, 1));
    assert_eq!((c.issue, c.port, c.wait), (31.0, 48.0, 36.0));
    assert_eq!(c.bound(), "the memory pipeline");
    assert_eq!(c.declined, Some((1, 7.0, 15.0)));
    assert_eq!(
        remarks(&choices, "#"),
        format!(
            "# --shuffle auto, {}: 1 of 2 shuffles kept; issue 31.0, memory pipeline 48.0, \
             latency 36.0 cycles (bound by the memory pipeline); the next, |N| = 1, would add \
             7.0 instructions to save 15.0 memory-pipeline cycles\n",
            c.block
        )
    );
    // On the GTX 480 the block is issue-bound: nothing kept, latency left out.
    let (text, _) = stencil_1d(&[0, -1, 1], 32);
    let (_, choices) = selected(&text, &gtx480());
    assert_eq!((choices[0].kept, choices[0].wait), (0, 0.0));
    assert_eq!(choices[0].bound(), "issue");
    assert!(!remarks(&choices, "//").contains("latency"));
}
