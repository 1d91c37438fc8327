//! Tests of the energy model on hand-written kernels whose events are counted by
//! hand: the counters of a timing run, and the energies they price to.

use super::affine_tests::SAXPY_DAC;
use super::energy::alu_class;
use super::*;
use crate::energy::{AluClass, Energy, EnergyTable, Events};

fn asm(text: &str) -> Program {
    parse(text).unwrap_or_else(|e| panic!("assembly failed: {e:?}\n{text}"))
}

/// One machine with one SM, so that one block's events are the run's.
fn one_sm() -> GpuConfig {
    let mut c = GpuConfig::gtx480();
    c.num_sms = 1;
    c
}

/// Runs kernel `name` of `text` as one block of `threads` threads on [`one_sm`],
/// its parameters `params` with one zeroed buffer of 128 words in each slot given
/// as `None`.
fn run_one_block(text: &str, name: &str, threads: u32, params: &[Option<u64>]) -> TimingReport {
    let p = asm(text);
    let mut mem = GlobalMemory::new();
    let vals: Vec<u64> = params
        .iter()
        .enumerate()
        .map(|(i, v)| v.unwrap_or_else(|| mem.add_buffer(vec![0; 512], &format!("b{i}"))))
        .collect();
    let k = p.kernel(name).expect("kernel");
    let l = Launch {
        kernel: name.into(),
        grid: (1, 1, 1),
        block: (threads, 1, 1),
        params: pack_params(k, &vals),
    };
    run_timing(
        &p,
        &l,
        &mut mem,
        &one_sm(),
        Limits::default(),
        SchedulerKind::Gto,
    )
    .unwrap_or_else(|f| panic!("{f}"))
}

/// Per instruction: (registers read, written, non-register sources, ALU class).
/// Vector instructions read and write 32 lanes per register; the uniform `mul.uni`
/// one lane.
const KERNEL: &str = r#"
.entry k(.param .u64 out)
{
    .reg 8;
    mov.u32 %r0, %tid.x;
    ld.param.u64 %rd2, [out];
    cvt.u64.u32 %rd4, %r0;
    shl.b64 %rd4, %rd4, 2;
    add.u64 %rd2, %rd2, %rd4;
    ld.global.u32 %r1, [%rd2];
    mul.uni.u32 %r6, %r6, 5;
    mul.f32 %r1, %r1, %r1;
    st.global.u32 [%rd2], %r1;
    exit;
}
"#;
// mov:      0 read, 1 written, 1 other (%tid.x), int
// ld.param: 0, 2 (a pair), 0, constant-cache access
// cvt:      1, 2, 0, int
// shl:      2, 2, 1 (the immediate), int
// add.u64:  4, 2, 0, int
// ld:       2 (the address pair), 1, 0
// mul.uni:  1, 1, 1, int multiply, on the uniform datapath (one lane)
// mul.f32:  2, 1, 0, float multiply
// st:       3 (address pair and value), 0, 0
// exit:     0, 0, 0
// Vector totals: 14 read, 11 written, 2 other; 4 int and 1 float-multiply
// instructions; every instruction but `exit` has an operand type (9 with mul.uni).

/// The events of [`KERNEL`] run by one warp with `active` of its 32 lanes active
/// and the store carrying `store_bytes`.
fn kernel_events(active: u64, store_bytes: u64) -> Events {
    let alu_lanes = active + (32 - active) / 2; // idle lanes count half
    let mut alu = [0; 8];
    alu[AluClass::Int as usize] = 4 * alu_lanes;
    alu[AluClass::IntMul as usize] = 1; // the uniform mul: one lane
    alu[AluClass::FpMul as usize] = alu_lanes;
    Events {
        instructions: 10,
        typed_instructions: 9,
        rf_reads: 14 * 32 + 1,
        rf_writes: 11 * 32 + 1,
        rf_nonreg_operands: 2 * 32 + 1,
        alu,
        // The load misses L1 and L2 and reads the line from DRAM (two 64-byte
        // bursts); the store finds it in L1 (write through) and in L2.
        l1_read_misses: 1,
        l1_write_hits: 1,
        l2_read_misses: 1,
        l2_write_hits: 1,
        dram_read_bursts: 2,
        // Read: a header-only request and a 128 + 8-byte reply (5 flits of 32);
        // write: one packet of the store's bytes and a header.
        noc_flits: 1 + 5 + (store_bytes + 8).div_ceil(32),
        const_accesses: 1,
        ..Events::default()
    }
}

#[test]
fn a_full_warp_counts_every_event_by_hand() {
    let r = run_one_block(KERNEL, "k", 32, &[None]);
    assert_eq!(r.stats.events, kernel_events(32, 128));
}

#[test]
fn idle_lanes_cost_half_an_alu_operation_and_full_register_lanes() {
    // 20 of 32 lanes: ALU operations 20 + 12 / 2 = 26 per instruction; register
    // accesses stay at 32 lanes (GPUWattch's GTX 480 does not gate them).
    let r = run_one_block(KERNEL, "k", 20, &[None]);
    assert_eq!(r.stats.events, kernel_events(20, 80));
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn energies_are_the_events_times_the_configured_figures() {
    let r = run_one_block(KERNEL, "k", 32, &[None]);
    let c = one_sm();
    let e = &r.stats.energy;
    let fj = |n: u64, f: u32| n as f64 * f64::from(f) * 1e-6;
    // By hand from the event counts above and the preset's figures (nJ).
    let want = [
        (
            e.frontend,
            fj(10, c.energy_instruction_fj) + fj(9, c.energy_typed_instruction_fj),
        ),
        (
            e.rf,
            fj(449, c.energy_rf_read_fj)
                + fj(353, c.energy_rf_write_fj)
                + fj(65, c.energy_nonreg_operand_fj),
        ),
        (
            e.alu,
            fj(128, c.energy_int_fj) + fj(1, c.energy_int_mul_fj) + fj(32, c.energy_fp_mul_fj),
        ),
        (
            e.l1,
            fj(1, c.energy_l1_read_miss_fj) + fj(1, c.energy_l1_write_hit_fj),
        ),
        (
            e.l2,
            fj(1, c.energy_l2_read_miss_fj) + fj(1, c.energy_l2_write_hit_fj),
        ),
        (e.dram, fj(2, c.energy_dram_read_fj)),
        (e.noc, fj(11, c.energy_noc_flit_fj)),
        (e.constant, fj(1, c.energy_const_fj)),
        (e.shared, 0.0),
        (e.queue, 0.0),
    ];
    for (i, (got, want)) in want.iter().enumerate() {
        assert!(close(*got, *want), "component {i}: {got} != {want}");
    }
    // Static: (leakage + constant power) × cycles / clock.
    let seconds = r.cycles as f64 / (f64::from(c.core_clock_mhz) * 1e6);
    let watts = f64::from(c.leakage_power_mw + c.constant_power_mw) * 1e-3;
    assert!(close(e.static_, watts * seconds * 1e9));
    assert!(close(e.total(), e.dynamic() + e.static_));
    let sum: f64 = want.iter().map(|(_, w)| w).sum();
    assert!(close(e.dynamic(), sum));
    // Every figure is in the statistics.
    let names: Vec<&str> = r.pairs.iter().map(|(n, _)| n.as_str()).collect();
    for k in [
        "energy_total_nj",
        "energy_static_nj",
        "rf_reads",
        "alu_fp_mul",
        "noc_flits",
    ] {
        assert!(names.contains(&k), "{k}");
    }
}

#[test]
fn a_configuration_file_overrides_an_energy() {
    let c = GpuConfig::from_text("base = \"gtx480\"\nenergy_rf_read_fj = 1000\n").unwrap();
    assert_eq!(c.energy_rf_read_fj, 1000);
    let e = Events {
        rf_reads: 32,
        ..Events::default()
    };
    assert!(close(Energy::of(&e, 0, &c.energy_table()).rf, 0.032));
}

#[test]
fn the_affine_warp_and_the_queues_count_by_hand() {
    // n = 32: one warp, one block, one batch of the affine warp.
    let a = 2.75f32.to_bits();
    let r = run_one_block(
        SAXPY_DAC,
        "saxpy",
        32,
        &[Some(32), Some(u64::from(a)), None, None],
    );
    assert_eq!(r.stats.affine_warp_insts, 15);
    // The affine warp (two active lanes of 32: 2 + 30 / 2 = 17 ALU lanes):
    //   mov %a0, %ctaid.x: 0 read, 1 written, 1 other, int
    //   mov %a1, %ntid.x:  0, 1, 1, int
    //   mad %a0, %a0, %a1, %tid.x: 2, 1, 1, int multiply
    //   ld.param %ur0:     0, 1, 0, constant
    //   enq.pred %a0, %ur0: 2, 0, 0
    //   cvt %ad2, %a0:     1, 2, 0, int
    //   shl %ad2, %ad2, 2: 2, 2, 1, int
    //   ld.param %urd2 (x): 0, 2, 0, constant
    //   add %ad4, %urd2, %ad2: 4, 2, 0, int
    //   enq.data %ad4:     2, 0, 0
    //   ld.param %urd2 (y): 0, 2, 0, constant
    //   add %ad4, %urd2, %ad2: 4, 2, 0, int
    //   enq.data %ad4, enq.addr %ad4: 2 each
    //   exit
    // = 21 read, 16 written, 4 other; 6 int, 1 int multiply; 3 parameter loads;
    // 14 typed (all but exit).
    // The non-affine warp (32 active lanes):
    //   deq.pred %p0: 0 read, 1 written
    //   @%p0 ld [deq.data] twice: 1 (the guard), 1 each
    //   ld.param %r2 (a): 0, 1, constant
    //   mad.f32: 3, 1, float multiply
    //   @%p0 st [deq.addr], %r1: 2, 0
    //   exit
    // = 7 read, 5 written; 1 float multiply; 1 parameter load; 6 typed.
    let mut alu = [0; 8];
    alu[AluClass::Int as usize] = 6 * 17;
    alu[AluClass::IntMul as usize] = 17;
    alu[AluClass::FpMul as usize] = 32;
    let want = Events {
        instructions: 15 + 7,
        typed_instructions: 14 + 6,
        rf_reads: (21 + 7) * 32,
        rf_writes: (16 + 5) * 32,
        rf_nonreg_operands: 4 * 32,
        alu,
        // x and y are requested early (L1, L2 misses, 2 DRAM bursts each); the two
        // deq.data loads hit their locked lines; the store hits L1 and L2.
        l1_read_hits: 2,
        l1_read_misses: 2,
        l1_write_hits: 1,
        l2_read_misses: 2,
        l2_write_hits: 1,
        dram_read_bursts: 4,
        noc_flits: 2 * (1 + 5) + 5,
        const_accesses: 4,
        // ATQ: 4 entries (pred, data x, data y, addr y) of 4 words, pushed and
        // popped; PWAQ: 3 records of one line, 3 words each; PWPQ: 1 mask.
        queue_words_written: 4 * 4 + 3 * 3 + 1,
        queue_words_read: 4 * 4 + 3 * 3 + 1,
        // AEU: 3 line steps; PEU: the affine index against the uniform n takes the
        // fast path (first and last lane compared).
        expand_ops: 3 + 2,
        ..Events::default()
    };
    assert_eq!(r.stats.events, want);
    let c = one_sm();
    let queue = (want.queue_words_written * u64::from(c.energy_queue_write_fj)
        + want.queue_words_read * u64::from(c.energy_queue_read_fj)
        + want.expand_ops * u64::from(c.energy_int_fj)) as f64
        * 1e-6;
    assert!(close(r.stats.energy.queue, queue));
}

#[test]
fn alu_classes_follow_gpgpu_sim() {
    let p = asm(r#"
.entry k(.param .u32 n)
{
    .reg 8;
    add.u32 %r0, %r1, %r2;
    rem.u32 %r0, %r1, %r2;
    div.u32 %r0, %r1, %r2;
    mul.u32 %r0, %r1, %r2;
    mul.u64 %rd0, %rd2, %rd4;
    add.f32 %r0, %r1, %r2;
    add.f64 %rd0, %rd2, %rd4;
    mad.f32 %r0, %r1, %r2, %r3;
    div.f32 %r0, %r1, %r2;
    sqrt.f32 %r0, %r1;
    setp.lt.f32 %p0, %r1, %r2;
    ld.param.u32 %r0, [n];
    exit;
}
"#);
    let classes: Vec<Option<AluClass>> = p.kernels[0].insts.iter().map(alu_class).collect();
    use AluClass::*;
    assert_eq!(
        classes,
        [
            Some(Int),
            Some(Int), // a remainder is an ALU operation in GPGPU-Sim
            Some(IntDiv),
            Some(IntMul),
            Some(IntMul64),
            Some(Fp),
            Some(Fp),
            Some(FpMul),
            Some(FpDiv),
            Some(Sfu),
            Some(Fp),
            None,
            None,
        ]
    );
}

#[test]
fn the_gtx480_preset_carries_the_shared_gpuwattch_table() {
    // The figures live twice, in the preset file a user copies and in the table the
    // nyuzi model scales: this keeps them equal.
    assert_eq!(
        GpuConfig::gtx480().energy_table(),
        EnergyTable::GPUWATTCH_GTX480
    );
}
