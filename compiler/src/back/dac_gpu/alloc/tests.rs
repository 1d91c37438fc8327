//! Register allocation on hand-built kernels: each runs on the functional simulator
//! before allocation (virtual registers are valid registers too) and after, under
//! budgets from roomy to tiny, with byte-identical output.

use sim::gpu::{
    BinOp, Cmp, GlobalMemory, Guard, Inst, KernelBuilder, KernelKind, Launch, Limits, Op, Program,
    Special, Src, Type as T,
};

use super::*;

const LANES: usize = 32;
/// Values the test kernel keeps live at once.
const LIVE: u32 = 24;

fn bin(op: BinOp, ty: T, dst: Reg, a: Src, b: Src) -> Inst {
    Inst::new(Op::Bin { op, ty, dst, a, b })
}

/// A kernel with `LIVE` values live around a loop, a guarded redefinition, a pair
/// built half by half and 64-bit arithmetic; it stores a 32-bit sum and a 64-bit
/// value per thread.
fn pressure_kernel() -> Kernel {
    let mut b = KernelBuilder::new("pressure", KernelKind::Entry);
    let out_param = b.param("out", T::U64);
    let out = b.reg64();
    b.push(Inst::new(Op::Ld {
        space: Space::Param,
        ty: T::U64,
        dst: out,
        addr: Address {
            base: AddrBase::Param(out_param),
            offset: 0,
        },
    }));
    let tid = b.reg();
    b.push(Inst::new(Op::Un {
        op: UnOp::Mov,
        ty: T::U32,
        dst: tid,
        a: Src::Special(Special::Tid(sim::gpu::Dim::X)),
    }));
    let vals: Vec<Reg> = (0..LIVE)
        .map(|i| {
            let v = b.reg();
            b.push(Inst::new(Op::Mad {
                ty: T::U32,
                dst: v,
                a: Src::Reg(tid),
                b: Src::Imm(u64::from(i + 1)),
                c: Src::Imm(u64::from(i * 7)),
            }));
            v
        })
        .collect();
    // @p v0 += 1000 where tid < 16: the other lanes keep v0.
    let p = b.pred();
    b.push(Inst::new(Op::Setp {
        cmp: Cmp::Lt,
        ty: T::U32,
        dst: p,
        a: Src::Reg(tid),
        b: Src::Imm(16),
    }));
    b.push(Inst {
        guard: Some(Guard {
            pred: p.idx,
            negate: false,
        }),
        ..bin(
            BinOp::Add,
            T::U32,
            vals[0],
            Src::Reg(vals[0]),
            Src::Imm(1000),
        )
    });
    // A pair written half by half, then used whole.
    let pair = b.reg64();
    let hi = Reg::r(pair.idx + 1);
    b.push(bin(
        BinOp::Add,
        T::U32,
        pair,
        Src::Reg(vals[1]),
        Src::Imm(3),
    ));
    b.push(bin(
        BinOp::Xor,
        T::B32,
        hi,
        Src::Reg(vals[2]),
        Src::Imm(0x55),
    ));
    let sum = b.reg();
    b.push(Inst::new(Op::Un {
        op: UnOp::Mov,
        ty: T::U32,
        dst: sum,
        a: Src::Imm(0),
    }));
    // Three trips around a loop reading every value.
    let count = b.reg();
    b.push(Inst::new(Op::Un {
        op: UnOp::Mov,
        ty: T::U32,
        dst: count,
        a: Src::Imm(3),
    }));
    let top = b.label("top");
    b.bind(top);
    for (i, &v) in vals.iter().enumerate() {
        let op = if i % 3 == 0 { BinOp::Xor } else { BinOp::Add };
        let ty = if op == BinOp::Xor { T::B32 } else { T::U32 };
        b.push(bin(op, ty, sum, Src::Reg(sum), Src::Reg(v)));
    }
    b.push(bin(BinOp::Mul, T::U32, sum, Src::Reg(sum), Src::Imm(31)));
    b.push(bin(BinOp::Sub, T::U32, count, Src::Reg(count), Src::Imm(1)));
    let again = b.pred();
    b.push(Inst::new(Op::Setp {
        cmp: Cmp::Ne,
        ty: T::U32,
        dst: again,
        a: Src::Reg(count),
        b: Src::Imm(0),
    }));
    b.bra(
        Some(Guard {
            pred: again.idx,
            negate: false,
        }),
        true,
        top,
    );
    let wide = b.reg64();
    b.push(bin(
        BinOp::Add,
        T::U64,
        wide,
        Src::Reg(pair),
        Src::Reg(pair),
    ));
    // Stores: out[tid] (u32) and out[32 + tid] (u64, 8-aligned at 128 + 8 tid).
    let off = b.reg64();
    b.push(Inst::new(Op::Cvt {
        rnd: None,
        dty: T::U64,
        sty: T::U32,
        dst: off,
        a: Src::Reg(tid),
    }));
    let addr4 = b.reg64();
    b.push(Inst::new(Op::Mad {
        ty: T::U64,
        dst: addr4,
        a: Src::Reg(off),
        b: Src::Imm(4),
        c: Src::Reg(out),
    }));
    b.push(Inst::new(Op::St {
        space: Space::Global,
        ty: T::U32,
        addr: Address {
            base: AddrBase::RegPair(addr4),
            offset: 0,
        },
        a: Src::Reg(sum),
    }));
    let addr8 = b.reg64();
    b.push(Inst::new(Op::Mad {
        ty: T::U64,
        dst: addr8,
        a: Src::Reg(off),
        b: Src::Imm(8),
        c: Src::Reg(out),
    }));
    b.push(Inst::new(Op::St {
        space: Space::Global,
        ty: T::U64,
        addr: Address {
            base: AddrBase::RegPair(addr8),
            offset: 128,
        },
        a: Src::Reg(wide),
    }));
    b.push(Inst::new(Op::Exit));
    b.finish().expect("the test kernel builds")
}

/// The output buffer of one block of 32 threads running `k`.
fn run(k: &Kernel) -> Vec<u8> {
    sim::gpu::check(&Program {
        kernels: vec![k.clone()],
    })
    .unwrap_or_else(|e| panic!("{e:?}\n{}", text(k)));
    let mut mem = GlobalMemory::new();
    let out = mem.add_zeroed(LANES * 12, "out");
    let launch = Launch {
        kernel: k.name.clone(),
        grid: (1, 1, 1),
        block: (LANES as u32, 1, 1),
        params: sim::gpu::pack_params(k, &[out]),
    };
    let program = Program {
        kernels: vec![k.clone()],
    };
    sim::gpu::run_functional(&program, &launch, &mut mem, Limits::default())
        .unwrap_or_else(|f| panic!("{f}\n{}", text(k)));
    mem.buffer(out).expect("the output buffer").to_vec()
}

fn text(k: &Kernel) -> String {
    sim::gpu::print(&Program {
        kernels: vec![k.clone()],
    })
}

fn allocated(k: &Kernel, budget: u32) -> (Kernel, Allocated) {
    let mut out = k.clone();
    let lines = vec![None; k.insts.len()];
    let done = allocate(&mut out, &lines, budget).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(done.lines.len(), out.insts.len());
    (out, done)
}

#[test]
fn default_budget_needs_no_spill_and_few_registers() {
    let k = pressure_kernel();
    let want = run(&k);
    let (out, done) = allocated(&k, DEFAULT_MAX_REGS);
    assert_eq!(run(&out), want, "{}", text(&out));
    let r = &done.report;
    assert_eq!((r.spill_slots, r.spill_stores, r.spill_loads), (0, 0, 0));
    assert_eq!(out.local_bytes, 0);
    // The values, the loop's sum and counter, the tid, the pair and the output base
    // are live at once; far fewer than the virtual registers.
    assert!(r.num_regs >= LIVE + 5 && r.num_regs <= LIVE + 10, "{r:?}");
    assert!(r.num_regs < k.num_regs && r.num_regs <= DEFAULT_MAX_REGS);
    assert_eq!(out.num_regs, r.num_regs);
    // The guard dies before the loop's condition is born: they share `%p0`.
    assert_eq!(r.num_preds, 1);
    // The fewest registers that avoid spills: one fewer spills or rematerializes.
    let (fewer, tighter) = allocated(&k, r.num_regs - 1);
    let t = &tighter.report;
    assert!(t.spill_slots + t.rematerialized_values > 0, "{t:?}");
    assert_eq!(run(&fewer), want);
}

/// Under a budget too small for every value, the output base (a parameter load) is
/// loaded again where it is read, after the loop, rather than kept from the entry or
/// given a local slot; the thread index (a special register) is read by one run of
/// instructions and keeps its register there. Reads in a row share one copy (the
/// allocator splits live ranges), so each is written once.
#[test]
fn parameter_loads_and_special_registers_are_rematerialized() {
    let k = pressure_kernel();
    let want = run(&k);
    let count = |k: &Kernel, f: fn(&Op) -> bool| k.insts.iter().filter(|i| f(&i.op)).count();
    let param_load = |op: &Op| {
        matches!(
            op,
            Op::Ld {
                space: Space::Param,
                ..
            }
        )
    };
    let tid = |op: &Op| {
        matches!(
            op,
            Op::Un {
                a: Src::Special(_),
                ..
            }
        )
    };
    assert_eq!((count(&k, param_load), count(&k, tid)), (1, 1));
    for budget in [24, 16, 12] {
        let (out, done) = allocated(&k, budget);
        assert_eq!(run(&out), want, "budget {budget}:\n{}", text(&out));
        let r = &done.report;
        assert!(r.rematerialized_values > 0, "budget {budget}: {r:?}");
        let copies = count(&out, param_load) + count(&out, tid);
        assert_eq!(copies, 2, "budget {budget}:\n{}", text(&out));
        let at = |f: fn(&Op) -> bool| out.insts.iter().position(|i| f(&i.op));
        let back_edge = at(|op| matches!(op, Op::Bra { .. }));
        assert!(
            at(param_load) > back_edge,
            "budget {budget}:\n{}",
            text(&out)
        );
    }
}

#[test]
fn tiny_budgets_spill_to_local_memory_and_keep_results() {
    let k = pressure_kernel();
    let want = run(&k);
    let mut spilled = Vec::new();
    for budget in [24, 16, 12, 9] {
        let (out, done) = allocated(&k, budget);
        assert!(out.num_regs <= budget, "budget {budget}: {:?}", done.report);
        assert_eq!(run(&out), want, "budget {budget}:\n{}", text(&out));
        let r = &done.report;
        assert!(r.spill_stores > 0 && r.spill_loads > 0, "{r:?}");
        assert_eq!(out.local_bytes, r.spill_bytes.div_ceil(8) * 8);
        let local = |store: bool| {
            out.insts
                .iter()
                .filter(|i| match i.op {
                    Op::St { space, .. } => store && space == Space::Local,
                    Op::Ld { space, .. } => !store && space == Space::Local,
                    _ => false,
                })
                .count() as u32
        };
        assert_eq!((local(true), local(false)), (r.spill_stores, r.spill_loads));
        spilled.push(r.spilled_values);
    }
    // Fewer registers, more values in memory.
    assert!(spilled.windows(2).all(|w| w[0] <= w[1]), "{spilled:?}");
}

/// `--regalloc auto` allocates one kernel in every placement at several budgets from
/// one [`Prepared`], whose scans are cached by budget and made ahead in parallel: each
/// allocation is the one a fresh allocation of its own gives, whatever the order.
#[test]
fn a_shared_prepared_kernel_allocates_as_fresh_ones_do() {
    let k = pressure_kernel();
    let lines = vec![None; k.insts.len()];
    let room = Some(SharedRoom {
        threads: LANES as u32,
        bytes: 48 * 1024,
    });
    let fresh = |budget, placement| {
        let mut out = k.clone();
        let done = allocate_placed(&mut out, &lines, budget, placement, room).unwrap();
        (text(&out), done.report, done.new_pc)
    };
    let prepared = Prepared::new(&k, &lines).unwrap();
    prepared.scan_ahead(&[16, 15, 9]);
    let mut demoted = 0;
    for budget in [9, 24, 16, 12] {
        for placement in [Placement::Mixed, Placement::Local, Placement::Shared] {
            let mut out = k.clone();
            let done = allocate_prepared(&mut out, &prepared, budget, placement, room).unwrap();
            demoted += done.report.demoted_slots;
            let want = fresh(budget, placement);
            assert_eq!(
                (text(&out), done.report, done.new_pc),
                want,
                "{placement:?} @{budget}"
            );
        }
    }
    assert!(demoted > 0, "some allocation demotes");
}

/// RegDem's register compaction: after demotion the highest register must really
/// drop. Here the scan assigns physical registers from the lowest up, so the kernel's
/// `.reg` is the highest register the code names plus one, within the budget, and
/// every 64-bit value keeps an even-aligned pair, at every budget (odd ones too) down
/// to the smallest that allocates, in every placement, with unchanged results.
#[test]
fn compaction_keeps_pairs_even_aligned_at_every_budget() {
    let k = pressure_kernel();
    let want = run(&k);
    let lines = vec![None; k.insts.len()];
    let room = Some(SharedRoom {
        threads: LANES as u32,
        bytes: 48 * 1024,
    });
    let mut allocations = 0;
    for placement in [Placement::Local, Placement::Shared, Placement::Mixed] {
        for budget in (1..=LIVE + 10).rev() {
            let mut out = k.clone();
            let at = format!("{placement:?} @{budget}");
            let done = match allocate_placed(&mut out, &lines, budget, placement, room) {
                Ok(done) => done,
                Err(e) => {
                    // Below the smallest budget, and only there.
                    assert_eq!(e.diagnostic().code, codes::REGISTER_BUDGET, "{at}");
                    break;
                }
            };
            allocations += 1;
            let mut pairs = 0;
            for inst in &out.insts {
                inst.for_each_reg(|a| {
                    let (idx, file) = (a.reg.idx, a.reg.file);
                    if a.wide && file == RegFile::R {
                        pairs += 1;
                        assert_eq!(idx % 2, 0, "{at}: %rd{idx} is odd");
                        assert!(idx + 2 <= budget, "{at}: %rd{idx} past the budget");
                    }
                });
            }
            assert!(pairs > 0, "{at}: the kernel keeps its 64-bit values");
            assert_eq!(out.num_regs, register_counts(&out.insts).0, "{at}");
            assert_eq!(out.num_regs, done.report.num_regs, "{at}");
            assert!(out.num_regs <= budget, "{at}: {} registers", out.num_regs);
            assert_eq!(run(&out), want, "{at}:\n{}", text(&out));
        }
    }
    // Each placement allocates from roomy budgets down to a few registers.
    assert!(
        allocations >= 3 * (LIVE as usize),
        "{allocations} allocations"
    );
}

#[test]
fn a_budget_below_one_instructions_operands_is_an_e0904_error() {
    let k = pressure_kernel();
    let mut out = k.clone();
    let lines = vec![None; k.insts.len()];
    // `mad.u64` reads two pairs and a single and writes a pair.
    let err = allocate(&mut out, &lines, 3).expect_err("3 registers are too few");
    assert_eq!(out, k, "the kernel is unchanged on error");
    let smallest = err.smallest.expect("a larger budget works");
    assert!(smallest > 3 && smallest <= 9, "{err:?}");
    let d = err.diagnostic();
    assert_eq!(d.code, codes::REGISTER_BUDGET);
    assert!(d.message.contains("--max-regs 3"), "{}", d.message);
    let (fits, _) = allocated(&k, smallest);
    assert_eq!(run(&fits), run(&k));
    assert!(allocate(&mut k.clone(), &lines, smallest - 1).is_err());
}

fn trap_addr() -> Address {
    Address {
        base: AddrBase::None,
        offset: 0,
    }
}

#[test]
fn instruction_indices_are_renumbered() {
    let mut k = pressure_kernel();
    let n = k.insts.len();
    // A trap site (a load from address 0), as instruction selection makes them.
    let trap = Inst::new(Op::Ld {
        space: Space::Global,
        ty: T::U32,
        dst: Reg::r(0),
        addr: trap_addr(),
    });
    k.insts.insert(n - 1, trap);
    let mut lines: Vec<Option<Span>> = vec![None; k.insts.len()];
    let mut traps = [(n - 1, "trap")];
    let prepared = Prepared::new(&k, &lines).unwrap();
    let report = allocate_selected(
        &mut k,
        &prepared,
        &mut lines,
        &mut traps,
        10,
        Placement::Local,
        None,
    )
    .unwrap();
    assert!(report.spill_stores > 0);
    assert_eq!(lines.len(), k.insts.len());
    let is_trap =
        |i: &Inst| matches!(i.op, Op::Ld { space: Space::Global, addr, .. } if addr == trap_addr());
    assert!(is_trap(&k.insts[traps[0].0]), "{}", text(&k));
    // The loop's branch goes to the label `top`, which starts a block.
    let top = k.labels.iter().find(|l| l.name == "top").unwrap().at;
    let bra = k.insts.iter().find_map(|i| match i.op {
        Op::Bra { target, .. } => Some(target),
        _ => None,
    });
    assert_eq!(bra, Some(top));
}

#[test]
fn odd_pairs_are_an_internal_error_not_a_panic() {
    let mut b = KernelBuilder::new("odd", KernelKind::Entry);
    let _ = b.reg();
    b.push(bin(BinOp::Add, T::U64, Reg::r(1), Src::Imm(1), Src::Imm(2)));
    b.push(Inst::new(Op::Exit));
    let mut k = b.finish().unwrap();
    let err = allocate(&mut k, &[], 63).unwrap_err();
    assert_eq!(err.diagnostic().code, codes::INTERNAL_ERROR);
}

/// `ld.param` of parameter `p` into `dst`.
fn ld_param(ty: T, dst: Reg, p: u16) -> Inst {
    Inst::new(Op::Ld {
        space: Space::Param,
        ty,
        dst,
        addr: Address {
            base: AddrBase::Param(p),
            offset: 0,
        },
    })
}

/// A kernel storing `tid + 5` per thread, around dead code: an `ld.param`
/// overwritten before any read, a chain of arithmetic nobody reads, repeated
/// constant predicates, a load from `[deq.data]`-free global memory whose result is
/// unused (it may fault: kept), and a trap site behind a branch.
fn dead_code_kernel() -> (Kernel, usize) {
    let mut b = KernelBuilder::new("dead", KernelKind::Entry);
    let out_param = b.param("out", T::U64);
    let out = b.reg64();
    b.push(ld_param(T::U64, out, out_param));
    b.push(ld_param(T::U64, out, out_param));
    let (x, y) = (b.reg(), b.reg());
    b.push(bin(BinOp::Add, T::U32, x, Src::Imm(1), Src::Imm(2)));
    b.push(bin(BinOp::Mul, T::U32, y, Src::Reg(x), Src::Imm(3)));
    let p = b.pred();
    for _ in 0..3 {
        b.push(Inst::new(Op::Setp {
            cmp: Cmp::Eq,
            ty: T::U32,
            dst: p,
            a: Src::Imm(0),
            b: Src::Imm(0),
        }));
    }
    let unused = b.reg64();
    b.push(Inst::new(Op::Ld {
        space: Space::Global,
        ty: T::U64,
        dst: unused,
        addr: Address {
            base: AddrBase::RegPair(out),
            offset: 0,
        },
    }));
    let tid = b.reg();
    b.push(Inst::new(Op::Un {
        op: UnOp::Mov,
        ty: T::U32,
        dst: tid,
        a: Src::Special(Special::Tid(sim::gpu::Dim::X)),
    }));
    // tid < 64 always holds with 32 lanes: the trap is never reached.
    b.push(Inst::new(Op::Setp {
        cmp: Cmp::Lt,
        ty: T::U32,
        dst: p,
        a: Src::Reg(tid),
        b: Src::Imm(64),
    }));
    let fine = b.label("fine");
    let guard = Guard {
        pred: p.idx,
        negate: false,
    };
    b.bra(Some(guard), false, fine);
    let trap_at = b.push(Inst::new(Op::Ld {
        space: Space::Global,
        ty: T::U32,
        dst: x,
        addr: trap_addr(),
    }));
    b.push(Inst::new(Op::Exit));
    b.bind(fine);
    let v = b.reg();
    b.push(bin(BinOp::Add, T::U32, v, Src::Reg(tid), Src::Imm(5)));
    let (wide_tid, addr) = (b.reg64(), b.reg64());
    b.push(Inst::new(Op::Cvt {
        rnd: None,
        dty: T::U64,
        sty: T::U32,
        dst: wide_tid,
        a: Src::Reg(tid),
    }));
    b.push(Inst::new(Op::Mad {
        ty: T::U64,
        dst: addr,
        a: Src::Reg(wide_tid),
        b: Src::Imm(4),
        c: Src::Reg(out),
    }));
    b.push(Inst::new(Op::St {
        space: Space::Global,
        ty: T::U32,
        addr: Address {
            base: AddrBase::RegPair(addr),
            offset: 0,
        },
        a: Src::Reg(v),
    }));
    b.push(Inst::new(Op::Exit));
    (b.finish().expect("the test kernel builds"), trap_at)
}

#[test]
fn dead_code_is_deleted_and_trap_sites_and_lines_follow() {
    let (k, trap_at) = dead_code_kernel();
    let want = run(&k);
    let mut out = k.clone();
    // Each instruction's line is its own index, to see where lines go.
    let mut lines: Vec<Option<Span>> = (0..k.insts.len() as u32)
        .map(|i| Some(Span::new(crate::source::FileId(0), i, i + 1)))
        .collect();
    let mut traps = [(trap_at, "trap")];
    let prepared = Prepared::new(&out, &lines).unwrap();
    allocate_selected(
        &mut out,
        &prepared,
        &mut lines,
        &mut traps,
        DEFAULT_MAX_REGS,
        Placement::Local,
        None,
    )
    .unwrap();
    assert_eq!(run(&out), want, "{}", text(&out));
    let count = |f: &dyn Fn(&Op) -> bool| out.insts.iter().filter(|i| f(&i.op)).count();
    // One `ld.param` left of two; no arithmetic but the address and the value.
    assert_eq!(
        count(&|op| matches!(
            op,
            Op::Ld {
                space: Space::Param,
                ..
            }
        )),
        1
    );
    assert_eq!(count(&|op| matches!(op, Op::Bin { op: BinOp::Mul, .. })), 0);
    assert_eq!(count(&|op| matches!(op, Op::Bin { .. })), 1);
    // Only the branch's comparison; the constant predicates are gone.
    let consts = count(&|op| matches!(op, Op::Setp { a: Src::Imm(_), .. }));
    assert_eq!(consts, 0, "{}", text(&out));
    assert_eq!(count(&|op| matches!(op, Op::Setp { .. })), 1);
    // The unread global load may fault: kept, like the trap's.
    assert_eq!(
        count(&|op| matches!(
            op,
            Op::Ld {
                space: Space::Global,
                ..
            }
        )),
        2
    );
    let is_trap =
        |i: &Inst| matches!(i.op, Op::Ld { space: Space::Global, addr, .. } if addr == trap_addr());
    assert!(is_trap(&out.insts[traps[0].0]), "{}", text(&out));
    // Every instruction kept its own line: the same operation as at that index.
    assert_eq!(lines.len(), out.insts.len());
    for (inst, line) in out.insts.iter().zip(&lines) {
        let orig = &k.insts[line.expect("a line").start as usize];
        assert_eq!(
            std::mem::discriminant(&inst.op),
            std::mem::discriminant(&orig.op)
        );
    }
    // The branch still reaches the label after the trap.
    let fine = out.labels.iter().find(|l| l.name == "fine").unwrap().at;
    assert!(matches!(
        out.insts[fine as usize].op,
        Op::Bin { op: BinOp::Add, .. }
    ));
}

/// Whether `inst` reads special register `s`.
fn reads_special(inst: &Inst, s: Special) -> bool {
    let srcs: SmallVec<[Src; 3]> = match inst.op {
        Op::Bin { a, b, .. } | Op::Setp { a, b, .. } => smallvec![a, b],
        Op::Un { a, .. } | Op::Cvt { a, .. } => smallvec![a],
        Op::Mad { a, b, c, .. } => smallvec![a, b, c],
        _ => SmallVec::new(),
    };
    srcs.contains(&Src::Special(s))
}

#[test]
fn saxpy_gpu_has_no_dead_prologue() {
    use crate::driver::{self, FrontOptions, Stage};
    use crate::front::sema::Target;
    let src = include_str!("../../../../../examples/saxpy_gpu.spmd");
    let opts = FrontOptions {
        target: Target {
            program_count: 32,
            pointer_size: 8,
        },
        ..FrontOptions::default()
    };
    let f = driver::run_front("saxpy_gpu.spmd", None, src.to_string(), &opts, Stage::Check);
    let m = driver::lower_front_with(&f, true).expect("lowers");
    // The baseline (decoupled, the drains of skipped regions set an all-off predicate
    // from constants on purpose).
    let baseline = super::super::Options {
        dac: false,
        ..super::super::Options::default()
    };
    let c = super::super::compile_module(&m, &baseline).expect("compiles");
    let k = c.program.kernel("saxpy_gpu").expect("the kernel");
    let listing = text(k);
    // saxpy reads no global variable and has no frame: neither base is loaded, and
    // the frame base (`mad` of the warp index) is not computed.
    for name in ["__globals", "__frames"] {
        let p = k.param_index(name).expect("the hidden parameter") as u16;
        let loads = k.insts.iter().any(|i| {
            matches!(i.op, Op::Ld { space: Space::Param, addr, .. } if addr.base == AddrBase::Param(p))
        });
        assert!(!loads, "{name} loaded:\n{listing}");
    }
    assert!(
        !k.insts.iter().any(|i| reads_special(i, Special::WarpId)),
        "{listing}"
    );
    // No lane index is computed for nothing, and no predicate set from constants.
    assert!(
        !k.insts.iter().any(|i| reads_special(i, Special::LaneId)),
        "{listing}"
    );
    let const_setp = |i: &Inst| {
        matches!(
            i.op,
            Op::Setp {
                a: Src::Imm(_),
                b: Src::Imm(_),
                ..
            }
        )
    };
    assert!(!k.insts.iter().any(const_setp), "{listing}");
}
