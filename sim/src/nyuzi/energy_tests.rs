//! Tests of the Nyuzi energy model: the events of hand-built instructions, a run
//! whose events are counted by hand, and the pricing of a run's counters.

use super::asm::{self, cr, reg, rr, si, vi};
use super::energy::{default_table, InstCost};
use super::timing::{run_timing, TimingConfig};
use super::{AluOp, BranchOp, Config, Inst, Machine, MemOp, RFmt};
use crate::energy::{AluClass, EnergyTable};

fn cost(i: Inst) -> (u8, u8, Option<AluClass>, u8, bool) {
    let c = InstCost::of(&i);
    (c.rf_reads, c.rf_writes, c.alu, c.alu_lanes, c.typed)
}

#[test]
fn scalar_and_vector_arithmetic_count_their_lanes() {
    // add_i s3, s4, s5: two scalar reads, one write, one integer lane.
    let add = rr(RFmt::Sss, AluOp::AddI, 3, 4, 5);
    assert_eq!(cost(add), (2, 1, Some(AluClass::Int), 1, true));
    // add_i v2, v3, 1: a vector read and write, 16 lanes.
    assert_eq!(
        cost(vi(AluOp::AddI, 2, 3, 1)),
        (16, 16, Some(AluClass::Int), 16, true)
    );
    // mul_f_mask v4, s7, v5, v6: both vectors and the mask are read, the kept old
    // destination is not; the write is 16 lanes whatever the mask.
    let mul = reg(RFmt::VvvMask, AluOp::MulF, 4, 5, 6, 7);
    assert_eq!(cost(mul), (33, 16, Some(AluClass::FpMul), 16, true));
    // cmplt_f s1, v2, s3: a vector and a scalar read, a scalar (mask) write, 16
    // float lanes.
    let cmp = rr(RFmt::Vvs, AluOp::CmpLtF, 1, 2, 3);
    assert_eq!(cost(cmp), (17, 1, Some(AluClass::Fp), 16, true));
    // The classes of the multiply and the reciprocal estimate.
    assert_eq!(
        cost(rr(RFmt::Sss, AluOp::MullI, 1, 2, 3)).2,
        Some(AluClass::IntMul)
    );
    assert_eq!(
        cost(rr(RFmt::Vvv, AluOp::Reciprocal, 1, 0, 3)),
        (16, 16, Some(AluClass::Sfu), 16, true)
    );
    // move s1, 3: an immediate move reads no register.
    assert_eq!(
        cost(si(AluOp::Move, 1, 0, 3)),
        (0, 1, Some(AluClass::Int), 1, true)
    );
}

#[test]
fn memory_and_control_instructions_count_registers_only() {
    // load_32 s3, (s2): the pointer read, the data written, no ALU lane.
    let load = asm::mem(MemOp::W32, true, 3, 2, 0);
    assert_eq!(cost(load), (1, 1, None, 0, true));
    // store_32 s3, (s2): pointer and data read.
    let store = asm::mem(MemOp::W32, false, 3, 2, 0);
    assert_eq!(cost(store), (2, 0, None, 0, true));
    // load_v_mask v3, s4, (s2): pointer and mask read, 16 lanes written, the kept
    // lanes not read.
    let block = asm::mem_m(MemOp::BlockMask, true, 3, 4, 2, 0);
    assert_eq!(cost(block), (2, 16, None, 0, true));
    // store_scat v3, (v2): a vector of pointers and a vector of data.
    let scatter = asm::mem(MemOp::Gather, false, 3, 2, 0);
    assert_eq!(cost(scatter), (32, 0, None, 0, true));
    // bz s1: the tested register; no ALU class, not typed.
    assert_eq!(cost(asm::br(BranchOp::Bz, 1, 4)), (1, 0, None, 0, false));
}

/// Runs `prog` on one thread of one core with the timing model.
fn run_one_thread(prog: &[Inst]) -> super::timing::TimingReport {
    let mut m = Machine::new(Config {
        cores: 1,
        threads_per_core: 1,
        memory_size: 1 << 20,
        max_instructions: 1_000_000,
    });
    let words: Vec<u32> = prog.iter().map(super::encode).collect();
    m.load_words(0, &words).unwrap();
    run_timing(&mut m, &TimingConfig::default()).unwrap()
}

/// Two arithmetic instructions, then the thread halts itself (notes §6):
/// `getcr s0, 0`; `move s1, 1`; `shl s1, s1, s0`; `setcr s1, 20`.
fn arithmetic_then_halt() -> Vec<Inst> {
    vec![
        vi(AluOp::AddI, 2, 3, 1),
        reg(RFmt::VvvMask, AluOp::MulF, 4, 5, 6, 7),
        cr(true, 0, 0),
        si(AluOp::Move, 1, 0, 1),
        rr(RFmt::Sss, AluOp::Shl, 1, 1, 0),
        cr(false, 1, 20),
    ]
}

#[test]
fn a_run_counts_every_event_by_hand() {
    let r = run_one_thread(&arithmetic_then_halt());
    let e = &r.events;
    assert_eq!(r.instructions, 6);
    assert_eq!(e.instructions, r.issued);
    // Every one is arithmetic or a control-register access.
    assert_eq!(e.typed_instructions, 6);
    // add 16; mul 33; getcr 0; move 0; shl 2; setcr 1.
    assert_eq!(e.rf_reads, 16 + 33 + 2 + 1);
    // add 16; mul 16; getcr 1; move 1; shl 1.
    assert_eq!(e.rf_writes, 16 + 16 + 1 + 1 + 1);
    assert_eq!(e.alu_ops(AluClass::Int), 16 + 1 + 1);
    assert_eq!(e.alu_ops(AluClass::FpMul), 16);
    assert_eq!(e.alu_ops(AluClass::Fp), 0);
    // No data access: the control registers bypass the caches.
    assert_eq!(e.l1_read_hits + e.l1_read_misses + e.l1_write_hits, 0);
    // The figures price them, and nothing is static.
    let t = default_table();
    let fj = |n: u64, f: u32| n as f64 * f64::from(f) * 1e-6;
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    assert!(close(
        r.energy.rf,
        fj(e.rf_reads, t.rf_read_fj) + fj(e.rf_writes, t.rf_write_fj)
    ));
    assert!(close(
        r.energy.alu,
        fj(18, t.alu_fj[0]) + fj(16, t.alu_fj[5])
    ));
    assert!(close(
        r.energy.frontend,
        fj(r.issued, t.instruction_fj) + fj(6, t.typed_instruction_fj)
    ));
    assert_eq!(r.energy.static_, 0.0);
}

#[test]
fn memory_traffic_is_priced_per_line_of_nyuzi_caches() {
    // store then load one word: the write-through store and the load's miss reach
    // the L2 and DRAM.
    let mut prog = asm::li(2, 0x8000);
    prog.push(asm::mem(MemOp::W32, false, 3, 2, 0));
    prog.push(asm::mem(MemOp::W32, true, 4, 2, 0));
    prog.extend(arithmetic_then_halt());
    let r = run_one_thread(&prog);
    let e = &r.events;
    assert_eq!(
        e.l1_write_misses + e.l1_write_hits,
        r.l1d.write_hits + r.l1d.write_misses
    );
    assert_eq!(e.l1_read_misses, r.l1d.read_misses);
    assert!(e.l1_read_misses + e.l1_read_hits >= 1);
    assert_eq!(e.dram_read_bursts, r.dram.read_bursts);
    let t = default_table();
    let fj = |n: u64, f: u32| n as f64 * f64::from(f) * 1e-6;
    let want_l1 = fj(e.l1_read_hits, t.l1.read_hit_fj)
        + fj(e.l1_read_misses, t.l1.read_miss_fj)
        + fj(e.l1_write_hits, t.l1.write_hit_fj)
        + fj(e.l1_write_misses, t.l1.write_miss_fj);
    assert!((r.energy.l1 - want_l1).abs() < 1e-9);
    assert!(r.energy.l1 > 0.0 && r.energy.l2 > 0.0 && r.energy.dram > 0.0);
}

#[test]
fn the_default_table_is_gpuwattchs_scaled_to_64_byte_lines() {
    let t = default_table();
    let g = EnergyTable::GPUWATTCH_GTX480;
    assert_eq!(t.l1.read_hit_fj, g.l1.read_hit_fj / 2);
    assert_eq!(t.l2.write_miss_fj, g.l2.write_miss_fj / 2);
    assert_eq!(
        (t.rf_read_fj, t.alu_fj, t.dram_read_fj),
        (g.rf_read_fj, g.alu_fj, g.dram_read_fj)
    );
    assert_eq!((t.leakage_power_mw, t.constant_power_mw), (0, 0));
}

#[test]
fn reports_leave_out_what_nyuzi_does_not_have() {
    let r = run_one_thread(&arithmetic_then_halt());
    let names: Vec<String> = r.stat_pairs().into_iter().map(|(n, _)| n).collect();
    for k in ["rf_reads", "alu_fp_mul", "dram.read_bursts"] {
        assert!(names.iter().any(|n| n == k), "{k} missing");
    }
    for k in [
        "noc_flits",
        "queue_words_read",
        "l1_read_hits",
        "fetched_instructions",
    ] {
        assert!(!names.iter().any(|n| n == k), "{k} present");
    }
    let energy: Vec<&str> = r.energy_pairs().into_iter().map(|(n, _)| n).collect();
    assert!(energy.contains(&"energy_dynamic_nj"));
    assert!(!energy.contains(&"energy_static_nj") && !energy.contains(&"energy_queue_nj"));
}
