//! Tests of the Nyuzi timing model: register sets, scoreboard latencies, round-robin
//! latency hiding, cache misses then hits, gather/scatter pipe occupancy, branch
//! rollback, the store queue, stall accounting, limits and faults. Programs are built
//! from [`Inst`] values and encoded, so every test is exact about its instructions.

use super::*;
use crate::nyuzi::asm::{self, br as branch, cr, rr, si};
use crate::nyuzi::{encode, Config, FaultKind, Machine, RFmt};

// ---- instruction builders ----

/// `move sD, imm` (imm in simm14).
fn li(dest: Reg, imm: i32) -> Inst {
    si(AluOp::Move, dest, 0, imm)
}

/// A memory access at offset 0 with lane mask register `mask`.
fn mem(op: MemOp, load: bool, srcdest: Reg, ptr: Reg, mask: Reg) -> Inst {
    asm::mem_m(op, load, srcdest, mask, ptr, 0)
}

/// Halts the executing thread (notes §6 idiom).
fn halt_self() -> Vec<Inst> {
    vec![
        cr(true, 0, 0),
        li(1, 1),
        rr(RFmt::Sss, AluOp::Shl, 1, 1, 0),
        cr(false, 1, 20),
    ]
}

/// Starts every thread (they begin at pc 0).
fn start_all() -> Vec<Inst> {
    vec![li(0, -1), cr(false, 0, 21)]
}

fn machine(prog: &[Inst], threads: u32) -> Machine {
    let mut m = Machine::new(Config {
        cores: 1,
        threads_per_core: threads,
        memory_size: 1 << 20,
        max_instructions: 10_000_000,
    });
    let words: Vec<u32> = prog.iter().map(encode).collect();
    m.load_words(0, &words).unwrap();
    m
}

fn run(prog: &[Inst], threads: u32) -> (TimingReport, Vec<Issue>, Machine) {
    let mut m = machine(prog, threads);
    let mut trace = Vec::new();
    let rep = run_timing_traced(&mut m, &TimingConfig::default(), &mut trace).unwrap();
    (rep, trace, m)
}

/// The cycle of the first non-replay issue of the instruction at `pc` (thread 0).
fn at(trace: &[Issue], pc: u32) -> u64 {
    trace
        .iter()
        .find(|i| i.pc == pc && !i.replay && i.thread == 0)
        .unwrap_or_else(|| panic!("pc {pc:#x} never issued"))
        .cycle
}

fn check_accounting(rep: &TimingReport) {
    for (i, t) in rep.threads.iter().enumerate() {
        assert_eq!(t.cycles(), rep.cycles, "thread {i}: {t:?}");
    }
}

// ---- register sets ----

#[test]
fn regs_of_arithmetic_forms() {
    let add = rr(RFmt::Sss, AluOp::AddI, 3, 4, 5);
    assert_eq!(
        (regs(&add).srcs(), regs(&add).dest()),
        (&[4, 5][..], Some(3))
    );
    // Vector with a scalar src2; one-operand ops read only src2.
    let vvs = rr(RFmt::Vvs, AluOp::MulF, 1, 2, 7);
    assert_eq!(regs(&vvs).srcs(), &[vreg(2), sreg(7)]);
    assert_eq!(regs(&vvs).dest(), Some(vreg(1)));
    let mv = rr(RFmt::Vvs, AluOp::Move, 7, 0, 8);
    assert_eq!(regs(&mv).srcs(), &[sreg(8)]);
    // Masked: src1, src2, the mask and the old destination.
    let m = Inst::Reg {
        fmt: RFmt::VvvMask,
        op: AluOp::SubF,
        dest: 2,
        src1: 3,
        src2: 4,
        mask: 9,
    };
    assert_eq!(regs(&m).srcs(), &[vreg(3), vreg(4), sreg(9), vreg(2)]);
    // Compares and getlane write a scalar even in vector forms.
    let cmp = rr(RFmt::Vvv, AluOp::CmpLtF, 5, 1, 2);
    assert_eq!(regs(&cmp).dest(), Some(sreg(5)));
    let gl = rr(RFmt::Vvs, AluOp::GetLane, 4, 5, 6);
    assert_eq!(
        (regs(&gl).srcs(), regs(&gl).dest()),
        (&[vreg(5), sreg(6)][..], Some(sreg(4)))
    );
    let im = Inst::ImmMasked {
        op: AluOp::AddI,
        dest: 2,
        src1: 3,
        mask: 4,
        imm: -1,
    };
    assert_eq!(regs(&im).srcs(), &[vreg(3), sreg(4), vreg(2)]);
    let vi = Inst::Imm {
        fmt: IFmt::V,
        op: AluOp::CmpEqI,
        dest: 1,
        src1: 2,
        imm: 3,
    };
    assert_eq!(
        (regs(&vi).srcs(), regs(&vi).dest()),
        (&[vreg(2)][..], Some(sreg(1)))
    );
    assert_eq!(regs(&li(3, 5)).srcs(), &[] as &[RegId]);
    let hi = Inst::MoveHi { dest: 9, imm: 7 };
    assert_eq!(
        (regs(&hi).srcs().len(), regs(&hi).dest()),
        (0, Some(sreg(9)))
    );
    let brk = rr(RFmt::Sss, AluOp::Break, 0, 0, 0);
    assert_eq!(regs(&brk), RegSet::default());
}

#[test]
fn regs_of_memory_and_control_forms() {
    let ld = mem(MemOp::W32, true, 3, 4, 0);
    assert_eq!(
        (regs(&ld).srcs(), regs(&ld).dest()),
        (&[sreg(4)][..], Some(sreg(3)))
    );
    let st = mem(MemOp::U8, false, 3, 4, 0);
    assert_eq!(
        (regs(&st).srcs(), regs(&st).dest()),
        (&[sreg(4), sreg(3)][..], None)
    );
    let sync = mem(MemOp::Sync, false, 3, 4, 0);
    assert_eq!(regs(&sync).dest(), Some(sreg(3)));
    let vl = mem(MemOp::BlockMask, true, 1, 2, 6);
    assert_eq!(regs(&vl).srcs(), &[sreg(2), sreg(6), vreg(1)]);
    assert_eq!(regs(&vl).dest(), Some(vreg(1)));
    let sc = mem(MemOp::GatherMask, false, 1, 2, 6);
    assert_eq!(regs(&sc).srcs(), &[vreg(2), sreg(6), vreg(1)]);
    assert_eq!(regs(&sc).dest(), None);
    let ga = mem(MemOp::Gather, true, 1, 2, 0);
    assert_eq!(
        (regs(&ga).srcs(), regs(&ga).dest()),
        (&[vreg(2)][..], Some(vreg(1)))
    );
    // getcr/setcr: the ptr field is a control-register index.
    assert_eq!(regs(&cr(true, 5, 6)).srcs(), &[] as &[RegId]);
    assert_eq!(regs(&cr(true, 5, 6)).dest(), Some(sreg(5)));
    assert_eq!(regs(&cr(false, 5, 20)).srcs(), &[sreg(5)]);
    assert_eq!(regs(&branch(BranchOp::Bnz, 7, 3)).srcs(), &[sreg(7)]);
    let call = branch(BranchOp::Call, 0, 10);
    assert_eq!(
        (regs(&call).srcs().len(), regs(&call).dest()),
        (0, Some(sreg(31)))
    );
    let callr = branch(BranchOp::CallReg, 4, 0);
    assert_eq!(
        (regs(&callr).srcs(), regs(&callr).dest()),
        (&[sreg(4)][..], Some(sreg(31)))
    );
    assert_eq!(regs(&branch(BranchOp::Jump, 0, 1)), RegSet::default());
    let fl = Inst::Cache {
        op: CacheOp::DFlush,
        ptr: 7,
        phys: 0,
        offset: 0,
        low: 0,
    };
    assert_eq!(regs(&fl).srcs(), &[sreg(7)]);
}

// ---- scoreboard ----

#[test]
fn dependent_float_ops_wait_seven_cycles_independent_issue_back_to_back() {
    let mut p = vec![
        rr(RFmt::Vvv, AluOp::AddF, 1, 0, 0),
        rr(RFmt::Vvv, AluOp::AddF, 2, 0, 0), // independent
        rr(RFmt::Vvv, AluOp::AddF, 3, 1, 1), // needs v1
        rr(RFmt::Sss, AluOp::AddI, 4, 5, 5),
        rr(RFmt::Sss, AluOp::AddI, 6, 4, 4), // needs s4: integer latency
        rr(RFmt::Sss, AluOp::MullI, 7, 6, 6),
        rr(RFmt::Sss, AluOp::AddI, 8, 7, 7), // needs s7: multiply latency
    ];
    p.extend(halt_self());
    let (rep, tr, _) = run(&p, 1);
    let c0 = at(&tr, 0);
    assert_eq!(at(&tr, 4), c0 + 1);
    assert_eq!(at(&tr, 8), c0 + 7);
    assert_eq!(at(&tr, 12), c0 + 8);
    assert_eq!(at(&tr, 16), c0 + 11);
    assert_eq!(at(&tr, 20), c0 + 14);
    assert_eq!(at(&tr, 24), c0 + 21);
    // 5 + 2 + 2 + 6 here, then 2 + 2 in halt_self (getcr, li, shl, setcr).
    assert_eq!(
        rep.threads[0].stall(StallCause::Dependency),
        5 + 2 + 2 + 6 + 2 + 2
    );
    check_accounting(&rep);
}

#[test]
fn round_robin_threads_hide_latency() {
    // Every thread runs a chain of dependent float adds.
    let chain = 40;
    let mut p = start_all();
    for _ in 0..chain {
        p.push(rr(RFmt::Vvv, AluOp::AddF, 1, 1, 1));
    }
    p.extend(halt_self());
    let (one, _, _) = run(&p, 1);
    let (four, tr, _) = run(&p, 4);
    assert_eq!(four.instructions, 4 * one.instructions);
    // Four chains in about the time of one.
    assert!(four.ipc > 3.0 * one.ipc, "{} vs {}", four.ipc, one.ipc);
    // In the steady state the threads take turns.
    let adds: Vec<usize> = tr
        .iter()
        .filter(|i| i.pc == 4 * 6)
        .map(|i| i.thread)
        .collect();
    let mut sorted = adds.clone();
    sorted.sort();
    assert_eq!(sorted, vec![0, 1, 2, 3]);
    check_accounting(&four);
    assert!(four.stall(StallCause::NotSelected) > 0);
}

// ---- caches ----

/// Reads a 4 KiB buffer with block loads, `passes` times.
fn stream_program(passes: i32) -> Vec<Inst> {
    vec![
        li(3, passes),
        // outer (pc 4):
        li(1, 4096),
        li(2, 64),
        // loop (pc 12):
        mem(MemOp::Block, true, 1, 1, 0),
        si(AluOp::AddI, 1, 1, 64),
        si(AluOp::SubI, 2, 2, 1),
        branch(BranchOp::Bnz, 2, -3),
        si(AluOp::SubI, 3, 3, 1), // pc 28
        branch(BranchOp::Bnz, 3, -7),
        cr(true, 0, 0),
        li(1, 1),
        rr(RFmt::Sss, AluOp::Shl, 1, 1, 0),
        cr(false, 1, 20),
    ]
}

#[test]
fn second_pass_over_a_buffer_hits() {
    let (rep, tr, _) = run(&stream_program(2), 1);
    assert_eq!(rep.l1d.read_misses, 64);
    assert_eq!(rep.l1d.read_hits, 64);
    assert_eq!(rep.l2.read_misses, 64 + 1); // + the program's one I-cache line
    assert_eq!(rep.dram.reads, 65);
    // Each miss re-issues its load once.
    assert_eq!(rep.issued, rep.instructions + 64);
    let ends: Vec<u64> = tr.iter().filter(|i| i.pc == 28).map(|i| i.cycle).collect();
    let first = ends[0];
    let second = ends[1] - ends[0];
    assert!(second * 3 < first, "pass 1 {first} cycles, pass 2 {second}");
    assert!(rep.threads[0].stall(StallCause::DCache) > 64 * 30);
    check_accounting(&rep);
}

#[test]
fn load_miss_costs_the_memory_round_trip() {
    let mut p = vec![
        li(2, 4096),
        mem(MemOp::W32, true, 1, 2, 0),
        si(AluOp::AddI, 3, 1, 1),
    ];
    p.extend(halt_self());
    let (rep, tr, _) = run(&p, 1);
    let ld = at(&tr, 4);
    let replay = tr.iter().find(|i| i.replay).unwrap();
    // L2 accepts at once, hit latency 5, DRAM latency 6, 64 B at 2.4 B/cycle: 37.67.
    assert_eq!((replay.pc, replay.cycle), (4, ld + 38));
    // The dependent add waits for the re-issued load's 4-cycle latency.
    assert_eq!(at(&tr, 8), ld + 42);
    assert_eq!(rep.threads[0].stall(StallCause::DCache), 37);
    check_accounting(&rep);
}

#[test]
fn instruction_cache_misses_delay_fetch() {
    // 20 instructions: two I-cache lines, each a miss.
    let mut p: Vec<Inst> = (0..16).map(|_| rr(RFmt::Sss, AluOp::Or, 9, 9, 9)).collect();
    p.extend(halt_self());
    let (rep, tr, _) = run(&p, 1);
    assert_eq!(rep.l1i.read_misses, 2);
    // A line from DRAM: 5 + 6 + 64/2.4 = 37.67 cycles.
    assert_eq!(at(&tr, 0), 38);
    // The next line is fetched when pc 60 issues, from the following cycle.
    assert_eq!(at(&tr, 64), at(&tr, 60) + 1 + 38);
    assert_eq!(rep.threads[0].stall(StallCause::ICache), 38 + 38);
    check_accounting(&rep);
}

// ---- gather/scatter ----

#[test]
fn gather_costs_one_cycle_per_active_lane() {
    let mut p = vec![
        li(1, 4096),
        li(4, 6144),
        mem(MemOp::Block, true, 1, 1, 0), // lane addresses
        mem(MemOp::Block, true, 3, 4, 0), // warm the gathered line
        li(6, 0b10101),
        mem(MemOp::Gather, true, 2, 1, 0), // pc 20: 16 lanes
        si(AluOp::AddI, 5, 5, 1),
        mem(MemOp::GatherMask, true, 4, 1, 6), // pc 28: 3 lanes
        si(AluOp::AddI, 7, 7, 1),
        mem(MemOp::GatherMask, false, 3, 1, 6), // pc 36: 3-lane scatter
        si(AluOp::AddI, 8, 8, 1),
    ];
    p.extend(halt_self());
    let mut m = machine(&p, 1);
    let addrs: Vec<u8> = (0..16u32)
        .flat_map(|i| (6144 + 4 * i).to_le_bytes())
        .collect();
    m.write_bytes(4096, &addrs).unwrap();
    let mut tr = Vec::new();
    let rep = run_timing_traced(&mut m, &TimingConfig::default(), &mut tr).unwrap();
    let g = at(&tr, 20);
    assert_eq!(at(&tr, 24), g + 16);
    assert_eq!(at(&tr, 28), g + 17);
    assert_eq!(at(&tr, 32), g + 20);
    assert_eq!(at(&tr, 36), g + 21);
    assert_eq!(at(&tr, 40), g + 24);
    assert_eq!(rep.threads[0].stall(StallCause::MemPipe), 15 + 2 + 2);
    // 16 + 3 gathered lanes hit the warmed line; 3 scattered lanes write through.
    assert_eq!(rep.l1d.read_hits, 19);
    assert_eq!(rep.l1d.write_hits, 3);
    check_accounting(&rep);
}

#[test]
fn a_gather_holds_the_issue_slot_of_its_core() {
    // Thread 0 gathers 16 lanes; the other threads spin on independent work.
    let mut p = start_all();
    p.push(cr(true, 9, 0)); // s9 = thread id
    p.push(branch(BranchOp::Bnz, 9, 3)); // others skip the gather
    p.push(mem(MemOp::Gather, true, 2, 1, 0)); // pc 16, v1 = 0: all lanes address 0
    p.push(rr(RFmt::Sss, AluOp::Or, 8, 8, 8));
    p.push(rr(RFmt::Sss, AluOp::Or, 8, 8, 8)); // pc 24: target of bnz
    p.extend(halt_self());
    let (rep, tr, _) = run(&p, 4);
    let g = at(&tr, 16);
    assert!(!tr.iter().any(|i| i.cycle > g && i.cycle < g + 16));
    assert!(tr.iter().any(|i| i.cycle == g + 16));
    let others: u64 = rep.threads[1..]
        .iter()
        .map(|t| t.stall(StallCause::MemPipe))
        .sum();
    assert!(others > 0);
    check_accounting(&rep);
}

// ---- branches and stores ----

#[test]
fn taken_branches_pay_the_rollback_penalty() {
    let mut p = vec![
        li(1, 1),
        branch(BranchOp::Bz, 1, 2),   // pc 4: not taken
        branch(BranchOp::Jump, 0, 2), // pc 8: taken, to 16
        rr(RFmt::Sss, AluOp::Or, 8, 8, 8),
        rr(RFmt::Sss, AluOp::Or, 9, 9, 9), // pc 16
    ];
    p.extend(halt_self());
    let (rep, tr, _) = run(&p, 1);
    assert_eq!(at(&tr, 8), at(&tr, 4) + 1);
    assert_eq!(at(&tr, 16), at(&tr, 8) + 5);
    assert!(!tr.iter().any(|i| i.pc == 12));
    assert_eq!(rep.threads[0].stall(StallCause::Branch), 4);
    check_accounting(&rep);
}

#[test]
fn one_pending_store_per_thread() {
    let mut p = vec![
        li(2, 4096),
        mem(MemOp::W32, true, 1, 2, 0), // bring the line into L1 and L2
        mem(MemOp::W32, false, 1, 2, 0), // pc 8: write-through, L2 hit
        mem(MemOp::W32, false, 1, 2, 0), // pc 12: waits for the first
        rr(RFmt::Sss, AluOp::Or, 9, 9, 9),
    ];
    p.extend(halt_self());
    let (rep, tr, _) = run(&p, 1);
    let s1 = at(&tr, 8);
    // Accepted by the L2 5 cycles later.
    assert_eq!(at(&tr, 12), s1 + 5);
    assert_eq!(at(&tr, 16), s1 + 6);
    assert_eq!(rep.threads[0].stall(StallCause::StoreQueue), 4);
    assert_eq!((rep.l1d.write_hits, rep.l2.write_hits), (2, 2));
    check_accounting(&rep);
}

// ---- whole runs ----

#[test]
fn stall_accounting_sums_on_a_mixed_multithreaded_run() {
    let mut p = start_all();
    p.extend([
        cr(true, 9, 0),
        si(AluOp::Shl, 9, 9, 12),    // 4 KiB per thread
        si(AluOp::AddI, 1, 9, 4096), // s1 = 4096 * (1 + thread id)
        li(2, 64),
        mem(MemOp::Block, true, 1, 1, 0), // loop: pc 24
        si(AluOp::AddI, 1, 1, 64),
        si(AluOp::SubI, 2, 2, 1),
        branch(BranchOp::Bnz, 2, -3),
        mem(MemOp::Block, false, 1, 1, 0), // a store after the buffer
        mem(MemOp::W32, false, 2, 1, 0),   // and one that waits for it
    ]);
    p.extend(halt_self());
    let (rep, _, m) = run(&p, 4);
    check_accounting(&rep);
    assert_eq!(rep.instructions, m.stats().retired);
    assert_eq!(rep.threads.iter().filter(|t| t.retired > 0).count(), 4);
    assert_eq!(rep.l1d.read_misses, 4 * 64);
    assert!(rep.stall(StallCause::StoreQueue) > 0);
    let pairs = rep.stat_pairs();
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).unwrap().1;
    assert_eq!(get("cycles"), rep.cycles);
    assert_eq!(get("l1d.read_misses"), rep.l1d.read_misses);
    assert_eq!(
        get("thread2.stall.dcache"),
        rep.threads[2].stall(StallCause::DCache)
    );
    let total: u64 = StallCause::ALL
        .iter()
        .map(|c| get(&format!("stall.{}", c.name())))
        .sum();
    assert_eq!(total + rep.issued, 4 * rep.cycles);
}

#[test]
fn threads_on_different_cores_run_in_parallel() {
    let mut p = start_all();
    for _ in 0..10 {
        p.push(rr(RFmt::Vvv, AluOp::AddF, 1, 1, 1));
    }
    p.extend(halt_self()); // 16 instructions: one I-cache line
    let words: Vec<u32> = p.iter().map(encode).collect();
    let cycles = |cores: u32| {
        let mut m = Machine::new(Config {
            cores,
            threads_per_core: 1,
            memory_size: 1 << 20,
            max_instructions: 1_000_000,
        });
        m.load_words(0, &words).unwrap();
        run_timing(&mut m, &TimingConfig::default()).unwrap()
    };
    let (one, two) = (cycles(1), cycles(2));
    assert_eq!(two.instructions, 2 * one.instructions);
    // The second core starts a little later and shares the I-cache line via the L2.
    assert!(
        two.cycles < one.cycles + 20,
        "{} vs {}",
        two.cycles,
        one.cycles
    );
    assert_eq!(two.l1i.read_misses, 2);
    assert_eq!(two.l2.read_hits, 1);
}

#[test]
fn cycle_limit_is_an_error_not_a_hang() {
    let p = vec![branch(BranchOp::Jump, 0, 0)];
    let mut m = machine(&p, 1);
    let cfg = TimingConfig {
        max_cycles: 1000,
        ..TimingConfig::default()
    };
    match run_timing(&mut m, &cfg) {
        Err(TimingError::CycleLimit {
            limit,
            instructions,
        }) => {
            assert_eq!(limit, 1000);
            assert!(instructions > 100);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn faults_and_bad_configs_are_errors() {
    let mut m = machine(&[li(1, 1), rr(RFmt::Sss, AluOp::Break, 0, 0, 0)], 1);
    match run_timing(&mut m, &TimingConfig::default()) {
        Err(TimingError::Fault(f)) => assert_eq!((f.kind, f.pc), (FaultKind::Breakpoint, 4)),
        other => panic!("{other:?}"),
    }
    let mut m = machine(&halt_self(), 1);
    let cfg = TimingConfig {
        dram_bytes_per_cycle: 0.0,
        ..TimingConfig::default()
    };
    assert!(matches!(
        run_timing(&mut m, &cfg),
        Err(TimingError::Config(_))
    ));
}

/// Each thread streams `lines` 64-byte lines (block loads) from its own buffer.
fn streaming(lines: i32) -> Vec<Inst> {
    let mut p = start_all();
    p.extend([
        cr(true, 9, 0),
        si(AluOp::Shl, 9, 9, 14),    // 16 KiB per thread
        si(AluOp::AddI, 1, 9, 4096), // s1 = 4096 + 16 KiB * thread id
        li(2, lines),
        mem(MemOp::Block, true, 1, 1, 0), // loop
        si(AluOp::AddI, 1, 1, 64),
        si(AluOp::SubI, 2, 2, 1),
        branch(BranchOp::Bnz, 2, -3),
    ]);
    p.extend(halt_self());
    p
}

#[test]
fn streaming_bandwidth_matches_the_notes_measurements() {
    // Notes §8: one thread streams a line per ~48 cycles; several threads saturate
    // DRAM at one line per ~27 cycles (2.4 bytes/cycle).
    let lines = 128;
    let (one, _, _) = run(&streaming(lines), 1);
    let (four, _, _) = run(&streaming(lines), 4);
    let per_line_1 = one.cycles as f64 / f64::from(lines);
    let per_line_4 = four.cycles as f64 / f64::from(4 * lines);
    assert!((44.0..=52.0).contains(&per_line_1), "{per_line_1}");
    assert!((26.0..=29.0).contains(&per_line_4), "{per_line_4}");
    assert_eq!(four.dram.reads, 4 * 128 + 1);
}

#[test]
fn device_stores_bypass_the_caches_and_membar_waits_for_stores() {
    let serial = 0xffff_0048u32;
    let mut p = vec![
        Inst::MoveHi {
            dest: 2,
            imm: serial >> 13,
        },
        si(AluOp::Or, 2, 2, (serial & 0x1fff) as i32),
        li(1, i32::from(b'A')),
        mem(MemOp::W32, false, 1, 2, 0), // pc 12: console
        Inst::Cache {
            op: CacheOp::Membar,
            ptr: 0,
            phys: 0,
            offset: 0,
            low: 0,
        }, // pc 16
    ];
    p.extend(halt_self());
    let (rep, tr, m) = run(&p, 1);
    assert_eq!(m.console(), b"A");
    assert_eq!(rep.l1d.accesses(), 0);
    // The membar waits for the device store's io_latency (5 cycles).
    assert_eq!(at(&tr, 16), at(&tr, 12) + 5);
    assert_eq!(rep.threads[0].stall(StallCause::StoreQueue), 4);
    check_accounting(&rep);
}
