//! The allocator on the toy target: each function runs on virtual registers and
//! again after allocation, with the same output.

use proptest::prelude::*;

use super::*;
use crate::back::common::mach::MBlock;
use crate::back::common::toy::{self, a, b, p, Builder, Toy, ToyTarget, A, B, P};

const FUEL: usize = 100_000;

/// Physical registers the input names.
fn input_phys(func: &MachFunction<Toy>) -> Vec<PReg> {
    let mut ops = SmallVec::new();
    let mut out = Vec::new();
    for line in func.blocks.values().flat_map(|b| &b.insts) {
        ops.clear();
        line.inst.operands(&mut ops);
        out.extend(ops.iter().filter_map(|o| match o.reg {
            Reg::Phys(p) => Some(p),
            Reg::Virt(_) => None,
        }));
    }
    out
}

/// Allocates a copy of `func`, checks it runs to the same output, and returns it.
fn check_with(func: &MachFunction<Toy>, target: &ToyTarget) -> (Allocation, MachFunction<Toy>) {
    let expected = toy::run(func, FUEL).expect("the input runs");
    let mut out = func.clone();
    let alloc = allocate(&mut out, target).expect("allocation succeeds");
    toy::check_allocated(&out, target, &input_phys(func)).unwrap();
    assert_eq!(toy::run(&out, FUEL), Ok(expected), "allocated:\n{out:#?}");
    assert_eq!(alloc.spill_slots as usize, out.spill_slots.len());
    assert_eq!(alloc.used, written_regs(&out));
    (alloc, out)
}

fn check(func: &MachFunction<Toy>) -> (Allocation, MachFunction<Toy>) {
    check_with(func, &ToyTarget::default())
}

fn count(func: &MachFunction<Toy>, pred: impl Fn(&Toy) -> bool) -> usize {
    func.blocks
        .values()
        .flat_map(|b| &b.insts)
        .filter(|l| pred(&l.inst))
        .count()
}

#[test]
fn straight_line_without_spills() {
    let mut bd = Builder::new();
    let x = bd.konst(A, 3);
    let y = bd.konst(A, 4);
    let z = bd.add(x, y);
    let w = bd.add(z, x);
    let p = bd.konst(B, 7);
    let q = bd.add(p, p);
    bd.out(w);
    bd.out(q);
    bd.end(Toy::Ret, &[]);
    let (alloc, out) = check(&bd.func);
    assert_eq!(alloc.spilled_vregs, 0);
    assert_eq!(alloc.spill_slots, 0);
    assert_eq!(toy::run(&out, FUEL), Ok(vec![10, 14]));
}

/// `x` is written on both arms of a diamond (not SSA) and read at the join.
fn diamond(cond: i64) -> MachFunction<Toy> {
    let mut bd = Builder::new();
    let c = bd.konst(A, cond);
    let k = bd.konst(B, 100);
    let x = bd.vreg(A);
    let (then_b, else_b, join) = (bd.new_block(), bd.new_block(), bd.new_block());
    bd.end(Toy::BrNz { cond: c }, &[then_b, else_b]);
    bd.cur = then_b;
    bd.push(Toy::Const { dst: x, value: 1 });
    bd.end(Toy::Jump, &[join]);
    bd.cur = else_b;
    let t = bd.konst(A, 20);
    bd.push(Toy::AddImm {
        dst: x,
        src: t,
        imm: 2,
    });
    bd.end(Toy::Jump, &[join]);
    bd.cur = join;
    bd.out(x);
    bd.out(k);
    bd.end(Toy::Ret, &[]);
    bd.func
}

#[test]
fn diamond_with_a_register_written_on_both_arms() {
    let (_, out) = check(&diamond(1));
    assert_eq!(toy::run(&out, FUEL), Ok(vec![1, 100]));
    let (_, out) = check(&diamond(0));
    assert_eq!(toy::run(&out, FUEL), Ok(vec![22, 100]));
}

/// `acc += i` for `i` from `n` down to 1, with `extra` values defined before the
/// loop and read after it, so they are live around the back edge.
fn counting_loop(n: i64, extra: usize) -> MachFunction<Toy> {
    let mut bd = Builder::new();
    let acc = bd.konst(A, 0);
    let i = bd.konst(A, n);
    let keep: Vec<Reg> = (0..extra)
        .map(|k| bd.input(if k % 2 == 0 { A } else { B }, 1000 + k as i64))
        .collect();
    let (body, exit) = (bd.new_block(), bd.new_block());
    bd.end(Toy::Jump, &[body]);
    bd.cur = body;
    let tmp = bd.add(acc, i);
    bd.push(Toy::Copy { dst: acc, src: tmp });
    bd.count_down(i, body, exit);
    bd.out(acc);
    for k in keep {
        bd.out(k);
    }
    bd.end(Toy::Ret, &[]);
    bd.func
}

#[test]
fn loop_values_live_around_the_back_edge() {
    let (alloc, out) = check(&counting_loop(5, 0));
    assert_eq!(alloc.spilled_vregs, 0);
    assert_eq!(toy::run(&out, FUEL), Ok(vec![15]));
    // The accumulator's copy is coalesced with the sum it copies.
    assert_eq!(count(&out, |i| matches!(i, Toy::Copy { .. })), 0);
}

#[test]
fn loop_under_pressure_spills_values_live_across_it() {
    let (alloc, out) = check(&counting_loop(4, 7));
    assert!(alloc.spilled_vregs > 0);
    let slots: Vec<RegClass> = out.spill_slots.values().copied().collect();
    assert!(slots.contains(&A) && slots.contains(&B), "{slots:?}");
    // The values used only outside the loop are the ones spilled: no spill code
    // runs per iteration.
    let (_, long) = check(&counting_loop(40, 7));
    let executed = |f| toy::run_counting(f, FUEL).unwrap().1;
    assert_eq!(executed(&out), executed(&long));
}

#[test]
fn high_pressure_spills_in_both_classes() {
    let mut bd = Builder::new();
    let xs: Vec<Reg> = (0..8).map(|k| bd.input(A, k)).collect();
    let ps: Vec<Reg> = (0..5).map(|k| bd.input(B, 10 * k)).collect();
    let mut sum = bd.add(xs[0], xs[1]);
    for &x in &xs[2..] {
        sum = bd.add(sum, x);
    }
    let mut psum = bd.add(ps[0], ps[1]);
    for &p in &ps[2..] {
        psum = bd.add(psum, p);
    }
    for &r in xs.iter().chain(&ps).chain([&sum, &psum]) {
        bd.out(r);
    }
    bd.end(Toy::Ret, &[]);
    let (alloc, out) = check(&bd.func);
    assert!(alloc.spilled_vregs >= 5 + 3, "{alloc:?}");
    assert!(count(&out, |i| matches!(i, Toy::Reload { .. })) > 0);
    assert!(count(&out, |i| matches!(i, Toy::Spill { .. })) > 0);
}

/// Reads three fresh values of class `A` at once (all three `A` registers), and
/// outputs their sum.
fn full_sum(bd: &mut Builder, first: i64) {
    let srcs: Vec<Reg> = (0..3).map(|k| bd.input(A, first + k)).collect();
    let dst = bd.vreg(A);
    bd.push(Toy::Sum { dst, srcs });
    bd.out(dst);
}

/// The lines of `func` that read `src` (a physical register) right after a constant
/// was written to it: the constant's values, in order.
fn consts_read_by_out(func: &MachFunction<Toy>) -> Vec<i64> {
    let mut found = Vec::new();
    for block in func.blocks.values() {
        for pair in block.insts.windows(2) {
            if let (Toy::Const { dst, value }, Toy::Out { src }) = (&pair[0].inst, &pair[1].inst) {
                if dst == src {
                    found.push(*value);
                }
            }
        }
    }
    found
}

/// Ends `bd`'s function by reading `k` (which holds 42) twice, each time after an
/// instruction needing every register; allocates it and checks that `k` was
/// rematerialized: no slot, no spill code, no definition left but a copy of the
/// constant just before each read.
fn rematerializes_42(mut bd: Builder, k: Reg) -> MachFunction<Toy> {
    full_sum(&mut bd, 1);
    bd.out(k);
    full_sum(&mut bd, 10);
    bd.out(k);
    bd.end(Toy::Ret, &[]);
    let (alloc, out) = check(&bd.func);
    let slots = (alloc.spilled_vregs, alloc.spill_slots);
    assert_eq!(slots, (0, 0), "{alloc:?}");
    assert_eq!(alloc.rematerialized_vregs, 1);
    let memory = |i: &Toy| matches!(i, Toy::Spill { .. } | Toy::Reload { .. });
    assert_eq!(count(&out, memory), 0);
    assert_eq!(count(&out, |i| matches!(i, Toy::Const { .. })), 2);
    assert_eq!(consts_read_by_out(&out), vec![42, 42]);
    out
}

/// A constant live across instructions that need every register is not given a
/// slot: its definition is deleted, and a copy of it writes a fresh register just
/// before each read.
#[test]
fn constants_live_across_high_pressure_are_rematerialized() {
    let mut bd = Builder::new();
    let k = bd.konst(A, 42);
    rematerializes_42(bd, k);
}

/// A register copied from a constant (twice) is rematerialized as the constant; the
/// registers it was copied from, read by the copies only, go with them.
#[test]
fn copies_of_constants_are_rematerialized_as_the_constant() {
    let mut bd = Builder::new();
    let c = bd.konst(A, 42);
    let (m, k) = (bd.vreg(A), bd.vreg(A));
    bd.push(Toy::Copy { dst: m, src: c });
    bd.push(Toy::Copy { dst: k, src: m });
    let out = rematerializes_42(bd, k);
    assert_eq!(count(&out, |i| matches!(i, Toy::Copy { .. })), 0);
}

/// Ends `bd`'s function by reading `k` after an instruction needing every register,
/// allocates it, and checks that `k` went to a slot, not rematerialized.
fn spills_to_a_slot(mut bd: Builder, k: Reg) -> MachFunction<Toy> {
    full_sum(&mut bd, 1);
    bd.out(k);
    bd.end(Toy::Ret, &[]);
    let (alloc, out) = check(&bd.func);
    assert_eq!(alloc.rematerialized_vregs, 0, "{alloc:?}");
    assert_eq!((alloc.spilled_vregs, alloc.spill_slots), (1, 1));
    out
}

/// A value computed from another register cannot be computed again where it is
/// read (that register may be gone): it is spilled to a slot.
#[test]
fn values_reading_a_register_are_not_rematerialized() {
    let mut bd = Builder::new();
    let c = bd.konst(A, 40);
    let k = bd.vreg(A);
    bd.push(Toy::AddImm {
        dst: k,
        src: c,
        imm: 2,
    });
    let out = spills_to_a_slot(bd, k);
    assert_eq!(count(&out, |i| matches!(i, Toy::AddImm { .. })), 1);
    assert_eq!(count(&out, |i| matches!(i, Toy::Reload { .. })), 1);
}

/// A register written twice, even by constants, holds different values at different
/// reads: it is spilled to a slot.
#[test]
fn values_with_two_definitions_are_not_rematerialized() {
    let mut bd = Builder::new();
    let k = bd.konst(A, 1);
    bd.out(k);
    bd.push(Toy::Const { dst: k, value: 2 });
    let out = spills_to_a_slot(bd, k);
    assert_eq!(count(&out, |i| matches!(i, Toy::Const { .. })), 2);
    assert_eq!(toy::run(&out, FUEL), Ok(vec![1, 6, 2]));
}

/// A constant written on one path only, and read where the other path also leads,
/// may be read before it is written: the copy before that read would give it a value
/// it did not have, so it is spilled to a slot.
#[test]
fn values_live_into_the_function_are_not_rematerialized() {
    let mut bd = Builder::new();
    let c = bd.input(B, 1);
    let k = bd.vreg(A);
    let (def_b, skip_b, join, read_b, exit) = (
        bd.new_block(),
        bd.new_block(),
        bd.new_block(),
        bd.new_block(),
        bd.new_block(),
    );
    bd.end(Toy::BrNz { cond: c }, &[def_b, skip_b]);
    bd.cur = def_b;
    bd.push(Toy::Const { dst: k, value: 42 });
    bd.end(Toy::Jump, &[join]);
    bd.cur = skip_b;
    bd.end(Toy::Jump, &[join]);
    bd.cur = join;
    bd.end(Toy::BrNz { cond: c }, &[read_b, exit]);
    bd.cur = read_b;
    full_sum(&mut bd, 1);
    bd.out(k);
    bd.end(Toy::Ret, &[]);
    bd.cur = exit;
    bd.end(Toy::Ret, &[]);
    let (alloc, out) = check(&bd.func);
    assert_eq!(alloc.rematerialized_vregs, 0, "{alloc:?}");
    assert!(alloc.spill_slots > 0);
    assert_eq!(count(&out, |i| matches!(i, Toy::Const { .. })), 1);
    assert_eq!(toy::run(&out, FUEL), Ok(vec![6, 42]));
}

/// Copies `arg` to `a0`, calls, and copies the result out.
fn call(bd: &mut Builder, arg: Reg) -> Reg {
    bd.push(Toy::Copy {
        dst: Reg::Phys(a(0)),
        src: arg,
    });
    bd.push(Toy::Call);
    let r = bd.vreg(A);
    bd.push(Toy::Copy {
        dst: r,
        src: Reg::Phys(a(0)),
    });
    r
}

#[test]
fn values_live_across_calls_avoid_clobbered_registers() {
    let mut bd = Builder::new();
    let x = bd.konst(A, 5);
    let p = bd.konst(B, 6);
    let r = call(&mut bd, x);
    bd.out(x);
    bd.out(p);
    bd.out(r);
    bd.end(Toy::Ret, &[]);
    let (alloc, out) = check(&bd.func);
    assert_eq!(alloc.spilled_vregs, 0);
    assert_eq!(toy::run(&out, FUEL), Ok(vec![5, 6, 16]));
    assert!(alloc.used.contains(&a(1)) && alloc.used.contains(&b(0)));
    // The argument and result copies coalesce into a0.
    assert_eq!(count(&out, |i| matches!(i, Toy::Copy { .. })), 1);
}

#[test]
fn calls_with_more_live_values_than_preserved_registers_spill() {
    let mut bd = Builder::new();
    let xs: Vec<Reg> = (0..3).map(|k| bd.input(A, k + 1)).collect();
    let ps: Vec<Reg> = (0..2).map(|k| bd.input(B, k + 7)).collect();
    let r1 = call(&mut bd, xs[0]);
    let r2 = call(&mut bd, r1);
    for &v in xs.iter().chain(&ps).chain([&r1, &r2]) {
        bd.out(v);
    }
    bd.end(Toy::Ret, &[]);
    let (alloc, _) = check(&bd.func);
    assert!(alloc.spilled_vregs >= 3, "{alloc:?}");
}

#[test]
fn tied_operands_stay_in_one_register_even_when_spilled() {
    for pressure in [0, 6] {
        let mut bd = Builder::new();
        let d = bd.konst(A, 10);
        let x = bd.konst(A, 5);
        let m = bd.konst(B, 1);
        let z = bd.konst(B, 0);
        let keep: Vec<Reg> = (0..pressure).map(|k| bd.input(A, 50 + k)).collect();
        bd.push(Toy::MaskedAdd { dst: d, x, mask: m });
        bd.push(Toy::MaskedAdd { dst: d, x, mask: z });
        bd.push(Toy::MaskedAdd {
            dst: x,
            x: d,
            mask: m,
        });
        for &k in &keep {
            bd.push(Toy::MaskedAdd {
                dst: d,
                x: k,
                mask: m,
            });
        }
        bd.out(d);
        bd.out(x);
        for k in keep {
            bd.out(k);
        }
        bd.end(Toy::Ret, &[]);
        let (alloc, out) = check(&bd.func);
        assert_eq!(alloc.spilled_vregs > 0, pressure > 0);
        let mut ops = SmallVec::new();
        for line in out.blocks.values().flat_map(|b| &b.insts) {
            if let Toy::MaskedAdd { dst, x, .. } = &line.inst {
                ops.clear();
                line.inst.operands(&mut ops);
                assert_ne!(dst, x);
            }
        }
    }
}

/// An outer loop with a barrier and an inner loop without one: the values live
/// across the barrier are stored before it and reloaded after, or, for the constant
/// `step`, written again after it; they keep registers in the inner loop.
#[test]
fn values_live_across_a_barrier_keep_registers_elsewhere() {
    let run_with = |inner: i64| {
        let mut bd = Builder::new();
        let acc = bd.konst(A, 0);
        let n = bd.konst(B, 3);
        let step = bd.konst(B, 2);
        let (outer, inner_b, latch, exit) = (
            bd.new_block(),
            bd.new_block(),
            bd.new_block(),
            bd.new_block(),
        );
        bd.end(Toy::Jump, &[outer]);
        bd.cur = outer;
        bd.push(Toy::Barrier);
        let j = bd.konst(A, inner);
        bd.end(Toy::Jump, &[inner_b]);
        bd.cur = inner_b;
        let one = bd.konst(A, 1);
        bd.push(Toy::MaskedAdd {
            dst: acc,
            x: one,
            mask: step,
        });
        bd.count_down(j, inner_b, latch);
        bd.count_down(n, outer, exit);
        bd.out(acc);
        bd.out(step);
        bd.end(Toy::Ret, &[]);
        let (alloc, out) = check(&bd.func);
        assert_eq!(toy::run(&out, FUEL), Ok(vec![3 * inner, 2]));
        assert_eq!(alloc.spill_slots, 2, "acc and n cross the barrier");
        assert_eq!(alloc.rematerialized_vregs, 1, "step crosses it too");
        let step_writes = count(&out, |i| match i {
            Toy::Const { dst, value: 2 } => *dst == Reg::Phys(b(0)) || *dst == Reg::Phys(b(1)),
            _ => false,
        });
        assert_eq!(
            step_writes, 2,
            "step's definition and its copy after the barrier"
        );
        toy::run_counting(&out, FUEL).unwrap().1
    };
    // Two stores and two reloads per barrier, none in the inner loop.
    assert_eq!(run_with(2), 3 * 4);
    assert_eq!(run_with(20), 3 * 4);
}

/// Static reloads and stores of `func`.
fn memory_lines(func: &MachFunction<Toy>) -> (usize, usize) {
    let reloads = count(func, |i| matches!(i, Toy::Reload { .. }));
    let stores = count(func, |i| matches!(i, Toy::Spill { .. }));
    (reloads, stores)
}

/// A value spilled (it is live across an instruction needing every `A` register) and
/// then read by several instructions in a row is reloaded once, before the first:
/// the reads share the piece the reload writes.
#[test]
fn a_value_read_several_times_in_a_row_reloads_once() {
    let mut bd = Builder::new();
    let x = bd.input(A, 7);
    full_sum(&mut bd, 1);
    let y = bd.add(x, x);
    bd.out(x);
    bd.out(y);
    bd.out(x);
    bd.end(Toy::Ret, &[]);
    let (alloc, out) = check(&bd.func);
    assert_eq!(
        (alloc.spilled_vregs, alloc.spill_slots),
        (1, 1),
        "{alloc:?}"
    );
    assert_eq!(memory_lines(&out), (1, 1), "{out:#?}");
    assert_eq!(toy::run(&out, FUEL), Ok(vec![6, 7, 14, 7]));
}

/// A value read before and after an instruction needing every `A` register, in one
/// block: it stays in its register from its definition to the reads before (no
/// reload there), is in its slot only across the crowded instruction, and is
/// reloaded once after it for all the reads that follow.
#[test]
fn a_value_live_across_a_crowded_region_keeps_its_register_outside_it() {
    let mut bd = Builder::new();
    let x = bd.input(A, 7);
    let y = bd.add(x, x);
    bd.out(y);
    bd.out(x);
    full_sum(&mut bd, 1);
    bd.out(x);
    let z = bd.add(x, x);
    bd.out(z);
    bd.out(x);
    bd.end(Toy::Ret, &[]);
    let (_, out) = check(&bd.func);
    assert_eq!(memory_lines(&out), (1, 1), "{out:#?}");
    let lines: Vec<&Toy> = out
        .blocks
        .values()
        .flat_map(|b| &b.insts)
        .map(|l| &l.inst)
        .collect();
    let at = |pred: &dyn Fn(&Toy) -> bool| lines.iter().position(|i| pred(i)).unwrap();
    let (reload, sum) = (
        at(&|i| matches!(i, Toy::Reload { .. })),
        at(&|i| matches!(i, Toy::Sum { .. })),
    );
    assert!(
        reload > sum,
        "the reload comes after the crowded instruction"
    );
}

/// The same across blocks: `x` is defined and read in the first block, not read in a
/// second one needing every `A` register, and read three times in the third. It is
/// stored once, read from its register in the first block, and reloaded once, at
/// the first read in the third.
#[test]
fn a_value_live_across_a_crowded_block_is_reloaded_once_after_it() {
    let mut bd = Builder::new();
    let x = bd.input(A, 7);
    let y = bd.add(x, x);
    bd.out(y);
    let (crowded, after) = (bd.new_block(), bd.new_block());
    bd.end(Toy::Jump, &[crowded]);
    bd.cur = crowded;
    full_sum(&mut bd, 1);
    bd.end(Toy::Jump, &[after]);
    bd.cur = after;
    bd.out(x);
    let z = bd.add(x, x);
    bd.out(z);
    bd.out(x);
    bd.end(Toy::Ret, &[]);
    let (_, out) = check(&bd.func);
    let per_block: Vec<(usize, usize)> = out
        .blocks
        .values()
        .map(|b| {
            let memory = |pred: fn(&Toy) -> bool| b.insts.iter().filter(|l| pred(&l.inst)).count();
            (
                memory(|i| matches!(i, Toy::Reload { .. })),
                memory(|i| matches!(i, Toy::Spill { .. })),
            )
        })
        .collect();
    assert_eq!(per_block, vec![(0, 1), (0, 0), (1, 0)], "{out:#?}");
}

/// A loop whose body reads a spilled value three times reloads it once per
/// iteration, not once per read.
#[test]
fn reads_in_a_loop_body_share_one_reload_per_iteration() {
    let mut bd = Builder::new();
    let x = bd.input(A, 3);
    let acc = bd.konst(A, 0);
    let i = bd.konst(B, 4);
    let (body, exit) = (bd.new_block(), bd.new_block());
    bd.end(Toy::Jump, &[body]);
    bd.cur = body;
    full_sum(&mut bd, 1);
    for _ in 0..3 {
        let t = bd.add(acc, x);
        bd.push(Toy::Copy { dst: acc, src: t });
    }
    bd.count_down(i, body, exit);
    bd.out(acc);
    bd.end(Toy::Ret, &[]);
    let (_, out) = check(&bd.func);
    let reloads_of_slot = |out: &MachFunction<Toy>| {
        let body = out.blocks.values().nth(1).unwrap();
        body.insts
            .iter()
            .filter(|l| matches!(l.inst, Toy::Reload { .. }))
            .count()
    };
    // `x` and `acc` are both live across the full sum: one reload each.
    assert_eq!(reloads_of_slot(&out), 2, "{out:#?}");
}

/// Random programs, allocated with one to three `A` and one or two `B` registers,
/// where pieces of split values must themselves be spilled: every allocation that
/// succeeds keeps the results, and as many succeed as when values were spilled
/// everywhere (108).
#[test]
fn split_values_keep_results_under_the_smallest_budgets() {
    let mut next = xorshift(0x0bad_cafe_f00d_1234u64);
    let mut allocated = 0;
    for _ in 0..60 {
        let steps = (0..40).map(|_| next().to_le_bytes()[..4].try_into().unwrap());
        let func = build(&Recipe(steps.collect()), 5);
        let expected = toy::run(&func, FUEL);
        for (na, nb) in [(1, 1), (2, 1), (3, 1), (1, 2), (2, 2), (3, 2)] {
            let target = ToyTarget {
                a: [a(0), a(1), a(2)][..na].to_vec(),
                b: [b(0), b(1)][..nb].to_vec(),
                pairs: vec![],
                unspillable: vec![],
                banks: 0,
            };
            let mut out = func.clone();
            if allocate(&mut out, &target).is_ok() {
                allocated += 1;
                toy::check_allocated(&out, &target, &input_phys(&func)).unwrap();
                assert_eq!(toy::run(&out, FUEL), expected, "{na} A, {nb} B:\n{out:#?}");
            }
        }
    }
    assert!(allocated >= 108, "{allocated} of 360 allocated");
}

/// `x` and `k`, then `y`, read with `x` by an add (after `filled` values that take
/// every `A` register and die, when `filled` is 4).
fn add_read_together(filled: i64) -> MachFunction<Toy> {
    let mut bd = Builder::new();
    let first: Vec<Reg> = (0..filled).map(|k| bd.input(A, k)).collect();
    for &f in &first {
        bd.out(f);
    }
    let x = bd.input(A, 10);
    let k = bd.input(A, 20);
    let y = bd.input(A, 30);
    let sum = bd.add(x, y);
    bd.out(sum);
    bd.out(k);
    bd.end(Toy::Ret, &[]);
    bd.func
}

/// Four `A` registers; operand banks (index mod `banks`), or none when 0.
fn banked_target(banks: u32) -> ToyTarget {
    ToyTarget {
        a: vec![a(0), a(1), a(2), a(3)],
        banks,
        ..ToyTarget::default()
    }
}

/// Four `A` registers in two operand banks (index mod 2). Four values fill them and
/// die; then `x` takes `a0` (bank 0) and `k` `a1`, and `y`, read with `x`, would take
/// `a2`, in `x`'s bank: it takes `a3` instead, the first free register in another
/// bank, no further than the registers already used. Without banks it takes `a2`.
#[test]
fn registers_read_together_avoid_sharing_a_bank() {
    let func = add_read_together(4);
    let sum_sources = |banks: u32| {
        let (_, out) = check_with(&func, &banked_target(banks));
        let add = out
            .blocks
            .values()
            .flat_map(|b| &b.insts)
            .find_map(|l| match l.inst {
                Toy::Add { x, y, .. } => Some((x, y)),
                _ => None,
            });
        add.unwrap()
    };
    assert_eq!(sum_sources(0), (Reg::Phys(a(0)), Reg::Phys(a(2))));
    assert_eq!(sum_sources(2), (Reg::Phys(a(0)), Reg::Phys(a(3))));
}

/// Avoiding a bank never takes a register further into the list than those already
/// given: with only `a0`..`a2` used, `y` keeps `a2` although it shares `x`'s bank.
#[test]
fn avoiding_a_bank_takes_no_register_beyond_those_given() {
    let (alloc, _) = check_with(&add_read_together(0), &banked_target(2));
    assert!(!alloc.used.contains(&a(3)), "{alloc:?}");
}

/// All four A registers allocatable, and the pairs `p0` (`a0`, `a1`) and `p2`.
fn pair_target() -> ToyTarget {
    ToyTarget {
        a: vec![a(0), a(1), a(2), a(3)],
        b: vec![b(0), b(1)],
        pairs: vec![p(0), p(2)],
        unspillable: vec![],
        banks: 0,
    }
}

#[test]
fn register_pairs_never_overlap_their_halves() {
    let mut bd = Builder::new();
    let x = bd.konst(P, 7);
    let y = bd.konst(P, 8);
    let singles: Vec<Reg> = (0..3).map(|k| bd.konst(A, k)).collect();
    let xy = bd.add(x, y);
    let s01 = bd.add(singles[0], singles[1]);
    for &r in [x, y, xy, s01].iter().chain(&singles) {
        bd.out(r);
    }
    bd.end(Toy::Ret, &[]);
    let (alloc, out) = check_with(&bd.func, &pair_target());
    assert!(alloc.spilled_vregs > 0);
    assert_eq!(toy::run(&out, FUEL), Ok(vec![7, 8, 15, 1, 0, 1, 2]));
}

#[test]
fn pairs_avoid_fixed_and_clobbered_halves() {
    let mut bd = Builder::new();
    // a1 pinned: the pair must be p2.
    bd.push(Toy::Const {
        dst: Reg::Phys(a(1)),
        value: 3,
    });
    let x = bd.konst(P, 9);
    let y = bd.add(x, x);
    bd.out(Reg::Phys(a(1)));
    // The call clobbers a0 and a1, so p0: y must stay in p2 across it.
    let arg = bd.konst(A, 1);
    let r = call(&mut bd, arg);
    bd.out(y);
    bd.out(r);
    bd.end(Toy::Ret, &[]);
    let (alloc, out) = check_with(&bd.func, &pair_target());
    assert_eq!(alloc.spilled_vregs, 0);
    assert_eq!(toy::run(&out, FUEL), Ok(vec![3, 18, 4]));
    assert!(alloc.used.contains(&p(2)) && !alloc.used.contains(&p(0)));
}

#[test]
fn fixed_physical_operands_are_respected() {
    let mut bd = Builder::new();
    // a1 holds a value across code that allocates A registers; a3 is reserved.
    bd.push(Toy::Const {
        dst: Reg::Phys(a(1)),
        value: 40,
    });
    bd.push(Toy::Const {
        dst: Reg::Phys(a(3)),
        value: 2,
    });
    let x = bd.konst(A, 1);
    let y = bd.konst(A, 2);
    let z = bd.add(x, y);
    let w = bd.vreg(A);
    bd.push(Toy::Add {
        dst: w,
        x: z,
        y: Reg::Phys(a(3)),
    });
    bd.out(Reg::Phys(a(1)));
    bd.out(w);
    bd.out(x);
    bd.end(Toy::Ret, &[]);
    let (_, out) = check(&bd.func);
    assert_eq!(toy::run(&out, FUEL), Ok(vec![40, 5, 1]));
}

#[test]
fn too_many_simultaneous_registers_is_an_error() {
    let mut bd = Builder::new();
    let xs: Vec<Reg> = (0..4).map(|k| bd.konst(A, k)).collect();
    let dst = bd.vreg(A);
    bd.push(Toy::Sum {
        dst,
        srcs: xs.clone(),
    });
    bd.out(dst);
    bd.end(Toy::Ret, &[]);
    let mut func = bd.func.clone();
    let err = allocate(&mut func, &ToyTarget::default()).unwrap_err();
    assert!(err.message.contains("Sum"), "{err}");
    assert!(err.to_string().contains("class 0"), "{err}");
    // Unchanged on error.
    assert_eq!(format!("{func:?}"), format!("{:?}", bd.func));
}

#[test]
fn fixed_registers_leaving_too_few_is_an_error() {
    let mut bd = Builder::new();
    let x = bd.konst(A, 1);
    let y = bd.konst(A, 2);
    bd.push(Toy::Const {
        dst: Reg::Phys(a(0)),
        value: 3,
    });
    bd.push(Toy::Const {
        dst: Reg::Phys(a(1)),
        value: 4,
    });
    let z = bd.add(x, y);
    bd.out(Reg::Phys(a(0)));
    bd.out(Reg::Phys(a(1)));
    bd.out(z);
    bd.end(Toy::Ret, &[]);
    let err = allocate(&mut bd.func.clone(), &ToyTarget::default()).unwrap_err();
    assert!(err.message.contains("Add"), "{err}");
}

/// A class the target cannot spill keeps every value in a register, while the
/// other classes spill around it; needing more of it at once is an error.
#[test]
fn unspillable_classes_are_never_spilled() {
    let no_spilled_b = ToyTarget {
        unspillable: vec![B],
        ..ToyTarget::default()
    };
    let mut bd = Builder::new();
    let bs: Vec<Reg> = (0..2).map(|k| bd.konst(B, 10 + k)).collect();
    let avals: Vec<Reg> = (0..5).map(|k| bd.input(A, k)).collect();
    let sum_a = avals[1..].iter().fold(avals[0], |acc, &x| bd.add(acc, x));
    let sum_b = bd.add(bs[0], bs[1]);
    bd.out(sum_a);
    bd.out(sum_b);
    bd.end(Toy::Ret, &[]);
    let (alloc, out) = check_with(&bd.func, &no_spilled_b);
    assert!(alloc.spilled_vregs > 0);
    assert!(out.spill_slots.values().all(|&c| c == A));

    let mut bd = Builder::new();
    let bs: Vec<Reg> = (0..3).map(|k| bd.konst(B, k)).collect();
    let s01 = bd.add(bs[0], bs[1]);
    let all = bd.add(s01, bs[2]);
    bd.out(all);
    bd.end(Toy::Ret, &[]);
    check(&bd.func);
    assert!(allocate(&mut bd.func.clone(), &no_spilled_b).is_err());
}

#[test]
fn malformed_input_is_an_error() {
    let mut bd = Builder::new();
    let p = bd.konst(B, 1);
    bd.out(p);
    bd.end(Toy::Ret, &[]);
    let no_b = ToyTarget {
        a: vec![a(0)],
        b: vec![],
        pairs: vec![],
        unspillable: vec![],
        banks: 0,
    };
    assert!(allocate(&mut bd.func.clone(), &no_b).is_err());

    let mut bd = Builder::new();
    bd.out(Reg::Virt(toy::vreg(7)));
    bd.end(Toy::Ret, &[]);
    let err = allocate(&mut bd.func, &ToyTarget::default()).unwrap_err();
    assert!(err.message.contains("undeclared"), "{err}");

    let mut empty = MachFunction::<Toy>::new("empty");
    let alloc = allocate(&mut empty, &ToyTarget::default()).unwrap();
    assert_eq!((alloc.used.len(), alloc.spill_slots), (0, 0));

    let mut bd = Builder::new();
    let missing = MBlock::new(5);
    bd.end(Toy::Jump, &[missing]);
    assert!(allocate(&mut bd.func, &ToyTarget::default()).is_err());
}

#[test]
fn allocation_is_deterministic() {
    let func = counting_loop(3, 9);
    let (a1, f1) = check(&func);
    let (a2, f2) = check(&func);
    assert_eq!(a1, a2);
    assert_eq!(format!("{f1:?}"), format!("{f2:?}"));
}

/// A random program: a list of steps, each four random bytes, that [`build`] turns
/// into straight-line code, diamonds, bounded loops and calls, reading only values
/// written on every path to the read.
#[derive(Clone, Debug)]
struct Recipe(Vec<[u8; 4]>);

/// An open construct of a program being built.
enum Frame {
    Then {
        else_b: MBlock,
        join: MBlock,
        before: Vec<Reg>,
    },
    Else {
        join: MBlock,
        before: Vec<Reg>,
        then_defined: Vec<Reg>,
    },
    Loop {
        body: MBlock,
        counter: Reg,
    },
}

struct Gen {
    bd: Builder,
    /// Registers holding a value on every path to the current point.
    defined: Vec<Reg>,
    /// Loop counters: read but never overwritten by random steps.
    counters: Vec<Reg>,
    frames: Vec<Frame>,
    /// Also makes values of the pair class `P`.
    pairs: bool,
}

impl Gen {
    fn class(&self, r: Reg) -> RegClass {
        match r {
            Reg::Virt(v) => self.bd.func.vregs[v],
            Reg::Phys(p) => p.class,
        }
    }

    /// A defined register of `class`, writing a constant if there is none.
    fn source(&mut self, class: RegClass, pick: u8) -> Reg {
        let of_class: Vec<Reg> = self
            .defined
            .iter()
            .copied()
            .filter(|&r| self.class(r) == class)
            .collect();
        if of_class.is_empty() {
            let r = self.bd.konst(class, pick as i64);
            self.defined.push(r);
            r
        } else {
            of_class[pick as usize % of_class.len()]
        }
    }

    /// A register to write: an existing one (not SSA) or a fresh one.
    fn dest(&mut self, class: RegClass, pick: u8) -> Reg {
        let reusable: Vec<Reg> = self
            .defined
            .iter()
            .copied()
            .filter(|&r| self.class(r) == class && !self.counters.contains(&r))
            .collect();
        if pick.is_multiple_of(3) && !reusable.is_empty() {
            reusable[pick as usize / 3 % reusable.len()]
        } else {
            let r = self.bd.vreg(class);
            self.defined.push(r);
            r
        }
    }

    fn step(&mut self, [kind, x, y, z]: [u8; 4]) {
        let class = match (self.pairs, x % 2 == 0) {
            (true, _) => [A, B, P][x as usize % 3],
            (false, true) => A,
            (false, false) => B,
        };
        match kind % 11 {
            0 => {
                let dst = self.dest(class, y);
                self.bd.push(Toy::Const {
                    dst,
                    value: z as i64,
                });
            }
            1 | 2 => {
                let (s1, s2) = (self.source(class, y), self.source(class, z));
                let dst = self.dest(class, x / 2);
                self.bd.push(Toy::Add { dst, x: s1, y: s2 });
            }
            3 => {
                let src = self.source(class, y);
                let dst = self.dest(class, z);
                self.bd.push(Toy::Copy { dst, src });
            }
            4 => {
                let (dst, s) = (self.source(class, y), self.source(class, z));
                // Three B registers at once would not fit in two.
                // An A mask with B operands, or with P operands (two pairs fill
                // A), would not fit.
                let mask_class = match class {
                    B => A,
                    P => B,
                    _ if x % 4 < 2 => A,
                    _ => B,
                };
                let mask = self.source(mask_class, x);
                if !self.counters.contains(&dst) {
                    self.bd.push(Toy::MaskedAdd { dst, x: s, mask });
                }
            }
            5 if z.is_multiple_of(4) => self.bd.push(Toy::Barrier),
            5 => {
                let arg = self.source(A, y);
                let r = call(&mut self.bd, arg);
                self.defined.push(r);
            }
            6 if z.is_multiple_of(3) => self.fixed_window(class, y),
            6 => {
                let src = self.source(class, y);
                self.bd.out(src);
            }
            7 if self.frames.len() < 3 => self.open_if(x, y),
            8 if self.frames.len() < 3 => self.open_loop(y),
            9 | 10 => self.close(),
            _ => {}
        }
    }

    /// A physical register (`a1` or `b1`) holding a value across an operation on
    /// the other registers of its class.
    fn fixed_window(&mut self, class: RegClass, y: u8) {
        let pinned = Reg::Phys(if class == A { a(1) } else { b(1) });
        self.bd.push(Toy::Const {
            dst: pinned,
            value: y as i64,
        });
        let s1 = self.source(class, y);
        let s2 = self.source(class, y / 3);
        let dst = self.dest(class, y / 2);
        if class == A {
            self.bd.push(Toy::Add { dst, x: s1, y: s2 });
        } else {
            // One B register is left: one source.
            self.bd.push(Toy::AddImm {
                dst,
                src: s1,
                imm: 5,
            });
        }
        self.bd.out(pinned);
    }

    fn open_if(&mut self, x: u8, y: u8) {
        let cond = self.source(if x % 4 < 2 { A } else { B }, y);
        let (then_b, else_b, join) = (
            self.bd.new_block(),
            self.bd.new_block(),
            self.bd.new_block(),
        );
        self.bd.end(Toy::BrNz { cond }, &[then_b, else_b]);
        self.bd.cur = then_b;
        self.frames.push(Frame::Then {
            else_b,
            join,
            before: self.defined.clone(),
        });
    }

    fn open_loop(&mut self, y: u8) {
        let counter = self.bd.konst(A, 1 + y as i64 % 3);
        self.defined.push(counter);
        self.counters.push(counter);
        let body = self.bd.new_block();
        self.bd.end(Toy::Jump, &[body]);
        self.bd.cur = body;
        self.frames.push(Frame::Loop { body, counter });
    }

    fn close(&mut self) {
        match self.frames.pop() {
            Some(Frame::Then {
                else_b,
                join,
                before,
            }) => {
                self.bd.end(Toy::Jump, &[join]);
                self.bd.cur = else_b;
                let then_defined = std::mem::replace(&mut self.defined, before.clone());
                self.frames.push(Frame::Else {
                    join,
                    before,
                    then_defined,
                });
            }
            Some(Frame::Else {
                join,
                before,
                then_defined,
            }) => {
                self.bd.end(Toy::Jump, &[join]);
                self.bd.cur = join;
                let mut defined = before;
                for r in &self.defined {
                    if then_defined.contains(r) && !defined.contains(r) {
                        defined.push(*r);
                    }
                }
                self.defined = defined;
            }
            Some(Frame::Loop { body, counter }) => {
                // The body runs at least once, so what it writes stays defined.
                let exit = self.bd.new_block();
                self.bd.count_down(counter, body, exit);
                self.counters.retain(|&c| c != counter);
            }
            None => {}
        }
    }
}

/// Builds the program of `recipe`, ending with every defined value output (up to
/// `live_at_end`), which keeps many values live to the end.
fn build(recipe: &Recipe, live_at_end: usize) -> MachFunction<Toy> {
    build_with(recipe, live_at_end, false)
}

/// [`build`], with values of the pair class too if `pairs`.
fn build_with(recipe: &Recipe, live_at_end: usize, pairs: bool) -> MachFunction<Toy> {
    let mut g = Gen {
        bd: Builder::new(),
        defined: Vec::new(),
        counters: Vec::new(),
        frames: Vec::new(),
        pairs,
    };
    for &s in &recipe.0 {
        g.step(s);
    }
    while !g.frames.is_empty() {
        g.close();
    }
    for r in g.defined.clone().into_iter().rev().take(live_at_end) {
        g.bd.out(r);
    }
    g.bd.end(Toy::Ret, &[]);
    g.bd.func
}

fn recipe(max_len: usize) -> impl Strategy<Value = Recipe> {
    prop::collection::vec(any::<[u8; 4]>(), 1..max_len).prop_map(Recipe)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_programs_keep_their_results(r in recipe(60), live in 0usize..12) {
        let func = build(&r, live);
        let expected = toy::run(&func, FUEL);
        prop_assert!(expected.is_ok(), "generator made a bad program: {expected:?}");
        let mut out = func.clone();
        // No step needs more than three A or two B registers at once, so
        // allocation always succeeds.
        let alloc = allocate(&mut out, &ToyTarget::default());
        prop_assert!(alloc.is_ok(), "{alloc:?}");
        prop_assert_eq!(toy::check_allocated(&out, &ToyTarget::default(), &input_phys(&func)), Ok(()));
        prop_assert_eq!(toy::run(&out, FUEL), expected);
    }

    #[test]
    fn random_programs_with_register_pairs_keep_their_results(r in recipe(60), live in 0usize..12) {
        let func = build_with(&r, live, true);
        let expected = toy::run(&func, FUEL);
        prop_assert!(expected.is_ok(), "generator made a bad program: {expected:?}");
        let mut out = func.clone();
        let alloc = allocate(&mut out, &pair_target());
        prop_assert!(alloc.is_ok(), "{alloc:?}");
        prop_assert_eq!(toy::check_allocated(&out, &pair_target(), &input_phys(&func)), Ok(()));
        prop_assert_eq!(toy::run(&out, FUEL), expected);
    }

    #[test]
    fn random_programs_with_few_registers_never_panic(r in recipe(40), live in 0usize..8, na in 0usize..3, nb in 0usize..2) {
        let func = build(&r, live);
        let target = ToyTarget { a: [a(0), a(1), a(2)][..na].to_vec(), b: [b(0), b(1)][..nb].to_vec(), pairs: vec![], unspillable: vec![], banks: 0 };
        let mut out = func.clone();
        if allocate(&mut out, &target).is_ok() {
            prop_assert_eq!(toy::check_allocated(&out, &target, &input_phys(&func)), Ok(()));
            prop_assert_eq!(toy::run(&out, FUEL), toy::run(&func, FUEL));
        }
    }
}

/// A xorshift generator of 64-bit values from `seed`: recipes for the deterministic
/// tests.
fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// The generator behind the property tests does make what they claim to test:
/// loops, calls and spills of both classes, with results preserved.
#[test]
fn random_programs_cover_loops_calls_and_spills() {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
    let (mut loops, mut calls, mut spilled_a, mut spilled_b) = (0, 0, 0, 0);
    let (mut barriers, mut pinned) = (0, 0);
    let mut memory_ops = 0;
    for _ in 0..100 {
        let steps = (0..40).map(|_| next().to_le_bytes()[..4].try_into().unwrap());
        let func = build(&Recipe(steps.collect()), 6);
        loops += usize::from(count(&func, |i| matches!(i, Toy::AddImm { imm: -1, .. })) > 0);
        calls += usize::from(count(&func, |i| matches!(i, Toy::Call)) > 0);
        barriers += usize::from(count(&func, |i| matches!(i, Toy::Barrier)) > 0);
        pinned += usize::from(input_phys(&func).contains(&b(1)));
        let (_, out) = check(&func);
        memory_ops += toy::run_counting(&out, FUEL).unwrap().1;
        spilled_a += usize::from(out.spill_slots.values().any(|&c| c == A));
        spilled_b += usize::from(out.spill_slots.values().any(|&c| c == B));
    }
    assert!(loops > 20 && calls > 20, "loops {loops}, calls {calls}");
    assert!(
        barriers > 10 && pinned > 10,
        "barriers {barriers}, pinned {pinned}"
    );
    assert!(
        spilled_a > 20 && spilled_b > 20,
        "spills {spilled_a}, {spilled_b}"
    );
    assert!(memory_ops > 0);
}

/// A long random program (hundreds of blocks, many spill rounds) keeps its results.
#[test]
fn large_random_program() {
    let mut next = xorshift(0x1234_5678_9abc_def1u64);
    let steps = (0..2000).map(|_| next().to_le_bytes()[..4].try_into().unwrap());
    let func = build(&Recipe(steps.collect()), 20);
    assert!(func.blocks.len() > 100);
    let (alloc, _) = check(&func);
    assert!(alloc.spilled_vregs > 50, "{alloc:?}");
}
