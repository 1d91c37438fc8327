//! Tests of [`super::engine::DacSm`]: order and content of the queued records,
//! early requests, the cost model's timing, back-pressure, CTA switching and the
//! barrier gate.

use super::engine::*;
use super::*;
use super::{aeu, peu};

fn cfg(pwaq: u32, atq: u32) -> DacConfig {
    DacConfig {
        pwaq_entries: pwaq,
        pwpq_entries: pwaq,
        atq_entries: atq,
        ..DacConfig::default()
    }
}

fn cta(x: u32, threads: u32, first_warp_slot: usize) -> CtaSlot {
    CtaSlot {
        ctaid: [x, 0, 0],
        block_dim: [threads, 1, 1],
        first_warp_slot,
    }
}

fn data(base: i64, stride: i64) -> Enq {
    Enq::Data(AddrTuple {
        tuple: AffineTuple {
            base,
            strides: [stride, 0, 0],
            cta_strides: [stride * 64, 0, 0],
        },
        access_bytes: 4,
        wide: true,
    })
}

/// Runs cycles `from..to`, collecting early requests.
fn run(sm: &mut DacSm, from: u64, to: u64) -> Vec<EarlyRequest> {
    let mut reqs = vec![];
    for now in from..to {
        sm.cycle(now, &mut reqs);
    }
    reqs
}

#[test]
fn records_and_masks_reach_each_warp_in_order() {
    let mut sm = DacSm::new(cfg(4, 8), 4).unwrap();
    sm.start_batch(&[cta(0, 64, 0), cta(1, 40, 2)]).unwrap();
    assert!(sm.can_enqueue());
    sm.enqueue(data(0x1000, 4)).unwrap();
    let bound = PredTuple {
        lhs: AffineTuple {
            base: 0,
            strides: [1, 0, 0],
            cta_strides: [64, 0, 0],
        },
        op: CmpOp::Lt,
        rhs: AffineTuple::scalar(100),
        ty: IntType::S32,
    };
    sm.enqueue(Enq::Pred(bound)).unwrap();
    let reqs = run(&mut sm, 0, 40);
    assert!(sm.is_drained());
    // CTA 0 warps 0-1, CTA 1 warps 0-1 (slots 2, 3; slot 3 has 8 threads).
    let lines: Vec<(usize, u64)> = reqs.iter().map(|r| (r.warp_slot, r.line)).collect();
    assert_eq!(lines.len(), 4);
    for (slot, line) in [(0, 0x1000), (1, 0x1080), (2, 0x1100), (3, 0x1180)] {
        assert!(lines.contains(&(slot, line)), "{slot} {line:#x}");
        let e = sm.deq_addr(slot).unwrap();
        assert!(e.data && e.seq == 0);
        assert_eq!(e.record.unwrap().lines[0].line, line);
    }
    let masks: Vec<(u32, PeuPath)> = (0..4)
        .map(|w| sm.deq_pred(w).map(|e| (e.mask, e.path)).unwrap())
        .collect();
    assert_eq!(
        masks,
        [
            (u32::MAX, PeuPath::Fast),
            (u32::MAX, PeuPath::Fast),
            (u32::MAX, PeuPath::Fast),
            (0xf, PeuPath::Slow) // ids 96..103 against 100
        ]
    );
    assert_eq!(sm.deq_addr(0), None);
    let s = sm.stats();
    assert_eq!((s.addr_records, s.pred_masks, s.early_requests), (4, 4, 4));
    assert_eq!((s.peu_fast, s.peu_slow), (3, 1));
    assert_eq!(sm.pwaq_stats().empty_pops, 1);
}

#[test]
fn expansion_takes_the_modelled_cycles() {
    let mut sm = DacSm::new(cfg(4, 8), 1).unwrap();
    sm.start_batch(&[cta(0, 32, 0)]).unwrap();
    // Stride 12: three line steps plus the CTA's start address = 4 cycles.
    sm.enqueue(data(0x8000, 12)).unwrap();
    let reqs = run(&mut sm, 10, 13);
    assert!(reqs.is_empty() && sm.peek_addr(0).is_none());
    let reqs = run(&mut sm, 13, 14);
    assert_eq!(reqs.len(), 3);
    assert_eq!(sm.peek_addr(0).unwrap().ready_cycle, 13);
    assert_eq!(sm.stats().aeu_busy, 4);
    // An `enq.addr` makes no early requests.
    sm.enqueue(Enq::Addr(AddrTuple {
        tuple: AffineTuple::linear(0, 4),
        access_bytes: 4,
        wide: true,
    }))
    .unwrap();
    assert!(run(&mut sm, 14, 20).is_empty());
    assert!(!sm.deq_addr(0).unwrap().record.unwrap().lines.is_empty());
    assert!(!sm.deq_addr(0).unwrap().data);
}

#[test]
fn full_warp_queues_stall_the_unit_and_block_enq() {
    let mut sm = DacSm::new(cfg(1, 2), 2).unwrap();
    sm.start_batch(&[cta(0, 64, 0)]).unwrap();
    sm.enqueue(data(0, 4)).unwrap();
    sm.enqueue(data(0x100, 4)).unwrap();
    assert_eq!(sm.enqueue(data(0x200, 4)), Err(data(0x200, 4)), "ATQ full");
    assert!(!sm.can_enqueue());
    run(&mut sm, 0, 10);
    // Both PWAQs hold the first entry, popped from the ATQ; the second waits for
    // room, and the third now fits in the ATQ.
    assert!(sm.can_enqueue());
    sm.enqueue(data(0x200, 4)).unwrap();
    assert!(!sm.can_enqueue());
    let stalled = sm.stats().stall_queue_full;
    assert!(stalled >= 5, "stalled {stalled} cycles");
    assert_eq!(sm.deq_addr(0).unwrap().seq, 0);
    run(&mut sm, 10, 13);
    assert_eq!(sm.peek_addr(0).unwrap().seq, 1);
    assert_eq!(
        sm.stats().stall_queue_full,
        stalled + 1,
        "warp 1 is still full"
    );
    assert_eq!(sm.deq_addr(1).unwrap().seq, 0);
    run(&mut sm, 13, 16);
    assert_eq!(sm.deq_addr(0).unwrap().seq, 1);
    assert_eq!(sm.deq_addr(1).unwrap().seq, 1);
    run(&mut sm, 16, 20);
    assert_eq!(
        (sm.deq_addr(0).unwrap().seq, sm.deq_addr(1).unwrap().seq),
        (2, 2)
    );
    assert!(sm.is_drained());
    assert_eq!(sm.pwaq_stats().max_occupancy, 1);
    assert_eq!(sm.stats().enq_refused, 1);
}

#[test]
fn a_blocked_cta_does_not_hold_up_the_others() {
    let mut sm = DacSm::new(cfg(1, 8), 2).unwrap();
    sm.start_batch(&[cta(0, 32, 0), cta(1, 32, 1)]).unwrap();
    sm.enqueue(data(0, 4)).unwrap();
    run(&mut sm, 0, 10);
    sm.enqueue(data(0x1000, 4)).unwrap();
    // Warp slot 0 keeps its record; slot 1 drains and receives the next entry.
    assert_eq!(sm.deq_addr(1).unwrap().seq, 0);
    run(&mut sm, 10, 20);
    assert_eq!(sm.peek_addr(1).unwrap().seq, 1);
    assert_eq!(sm.peek_addr(0).unwrap().seq, 0);
    assert!(!sm.is_drained());
}

/// [`AtqCursor::Cta`]: a CTA whose warp's queue is full does not hold the others at
/// the ATQ head; they go on to later entries, and the slow CTA still gets every
/// entry in order. Under [`AtqCursor::Head`] the others wait for it at the head.
#[test]
fn with_cta_cursors_a_slow_cta_does_not_hold_the_others_at_the_head() {
    for (cursor, ahead) in [(AtqCursor::Head, false), (AtqCursor::Cta, true)] {
        let c = DacConfig {
            atq_cursor: cursor,
            ..cfg(1, 8)
        };
        let mut sm = DacSm::new(c, 2).unwrap();
        sm.start_batch(&[cta(0, 32, 0), cta(1, 32, 1)]).unwrap();
        for k in 0..3 {
            sm.enqueue(data(0x1000 * k, 4)).unwrap();
        }
        // Warp slot 0 (CTA 0) does not dequeue: its one-entry queue holds entry 0.
        run(&mut sm, 0, 10);
        assert_eq!(sm.deq_addr(1).unwrap().seq, 0);
        run(&mut sm, 10, 20);
        assert_eq!(sm.deq_addr(1).unwrap().seq, 1);
        run(&mut sm, 20, 30);
        assert_eq!(
            sm.peek_addr(1).map(|e| e.seq),
            ahead.then_some(2),
            "{cursor:?}"
        );
        for k in 0..3 {
            assert_eq!(sm.deq_addr(0).unwrap().seq, k, "{cursor:?}");
            run(&mut sm, 30 + 10 * k, 40 + 10 * k);
        }
        assert_eq!(sm.deq_addr(1).unwrap().seq, 2, "{cursor:?}");
        assert!(sm.is_drained(), "{cursor:?}");
    }
}

#[test]
fn entries_after_a_barrier_wait_for_each_cta() {
    let mut sm = DacSm::new(cfg(4, 8), 2).unwrap();
    sm.start_batch(&[cta(0, 32, 0), cta(1, 32, 1)]).unwrap();
    sm.enqueue(data(0, 4)).unwrap();
    sm.affine_barrier();
    sm.enqueue(data(0x1000, 4)).unwrap();
    let reqs = run(&mut sm, 0, 20);
    assert_eq!(reqs.len(), 2, "only the pre-barrier entry is requested");
    assert!(sm.stats().stall_barrier > 0);
    sm.cta_passed_barrier(1);
    let reqs = run(&mut sm, 20, 30);
    assert_eq!(reqs.iter().map(|r| r.warp_slot).collect::<Vec<_>>(), [1]);
    sm.cta_passed_barrier(0);
    let reqs = run(&mut sm, 30, 40);
    assert_eq!(
        reqs.iter()
            .map(|r| (r.warp_slot, r.seq))
            .collect::<Vec<_>>(),
        [(0, 1)]
    );
    assert!(sm.is_drained());
}

/// The barrier gate ([`DacConfig::barrier_gate`]): an `enq.addr` after the affine
/// warp's barrier issues no early request, so under `Requests` its record reaches a
/// CTA that has not passed the barrier yet; under `All` it waits like `enq.data`,
/// which waits under both.
#[test]
fn address_records_pass_the_barrier_gate_only_under_requests() {
    for (gate, ahead) in [(BarrierGate::Requests, true), (BarrierGate::All, false)] {
        let c = DacConfig {
            barrier_gate: gate,
            ..cfg(4, 8)
        };
        let mut sm = DacSm::new(c, 1).unwrap();
        sm.start_batch(&[cta(0, 32, 0)]).unwrap();
        sm.affine_barrier();
        let Enq::Data(t) = data(0x1000, 4) else {
            unreachable!()
        };
        sm.enqueue(Enq::Addr(t)).unwrap();
        sm.enqueue(data(0x2000, 4)).unwrap();
        let reqs = run(&mut sm, 0, 20);
        assert!(
            reqs.is_empty(),
            "{gate:?}: a request ran ahead of the barrier"
        );
        assert_eq!(
            sm.peek_addr(0).map(|r| r.seq),
            ahead.then_some(0),
            "{gate:?}"
        );
        assert!(sm.stats().stall_barrier > 0, "{gate:?}");
        sm.cta_passed_barrier(0);
        let reqs = run(&mut sm, 20, 40);
        assert_eq!(reqs.len(), 1, "{gate:?}: the data entry's line");
        assert_eq!(sm.deq_addr(0).unwrap().seq, 0);
        assert_eq!(sm.deq_addr(0).unwrap().seq, 1);
        assert!(sm.is_drained());
    }
}

#[test]
fn batches_are_checked() {
    let mut sm = DacSm::new(cfg(2, 2), 3).unwrap();
    assert_eq!(
        sm.start_batch(&[cta(0, 64, 0), cta(1, 32, 1)]),
        Err(DacError::WarpSlots { cta: 1 })
    );
    assert_eq!(
        sm.start_batch(&[cta(0, 128, 0)]),
        Err(DacError::WarpSlots { cta: 0 })
    );
    assert!(matches!(
        sm.start_batch(&[cta(0, 0, 0)]),
        Err(DacError::Geom(_))
    ));
    assert!(DacSm::new(cfg(0, 2), 3).is_err());
    sm.start_batch(&[cta(0, 64, 1)]).unwrap();
}

#[test]
fn config_from_the_presets() {
    let g = crate::gpu::GpuConfig::preset("gtx480").unwrap();
    let c = DacConfig::from_gpu(&g);
    assert_eq!(c.validate(), Ok(()));
    assert_eq!((c.warp_size, c.line_size, c.peu_slow_cycles), (32, 128, 2));
    assert_eq!(c.atq_entries, g.atq_entries);
    let l1 = c.l1_locks(&g).unwrap();
    assert_eq!((l1.sets(), l1.ways()), (32, 4));
}

/// Random batches, entries, barriers and consumer timing: every warp receives every
/// entry exactly once, in `enqueue` order, equal to the units' direct expansion;
/// the run never deadlocks (non-affine warps consume their entries in program
/// order and pass a barrier once they have consumed every entry before it).
#[test]
fn random_runs_deliver_every_entry_in_order() {
    use super::testutil::Rng;
    let mut rng = Rng(0xdac0_dac0_1234_5678);
    let shapes = [
        [32, 1, 1],
        [64, 1, 1],
        [40, 1, 1],
        [16, 4, 1],
        [8, 4, 2],
        [5, 3, 2],
    ];
    let (mut barrier_stalls, mut full_stalls) = (0, 0);
    for round in 0..60 {
        let c = DacConfig {
            atq_cursor: rng.pick(&[AtqCursor::Head, AtqCursor::Cta]),
            ..cfg(1 + rng.below(3) as u32, 1 + rng.below(4) as u32)
        };
        let mut slots = 0usize;
        let mut ctas = vec![];
        for x in 0..1 + rng.below(3) as u32 {
            let block_dim = rng.pick(&shapes);
            let warps = WarpGeom {
                block_dim,
                ctaid: [x, 0, 0],
                warp: 0,
                warp_size: 32,
            }
            .warps_per_block() as usize;
            ctas.push(CtaSlot {
                ctaid: [x, 0, 0],
                block_dim,
                first_warp_slot: slots,
            });
            slots += warps;
        }
        let mut sm = DacSm::new(c, slots).unwrap();
        sm.start_batch(&ctas).unwrap();
        // The affine stream: entries, with barriers between some of them.
        let n = 12usize;
        let mut program: Vec<(Enq, u32)> = vec![];
        let mut epoch = 0;
        for i in 0..n {
            if i > 0 && rng.below(4) == 0 {
                epoch += 1;
            }
            let enq = if rng.below(2) == 0 {
                Enq::Pred(PredTuple {
                    lhs: AffineTuple {
                        base: rng.below(64) as i64,
                        strides: [1, rng.below(3) as i64 * 8 - 8, 0],
                        cta_strides: [32, 0, 0],
                    },
                    op: CmpOp::Lt,
                    rhs: AffineTuple::scalar(rng.below(128) as i64),
                    ty: IntType::S32,
                })
            } else {
                data(0x1000 * i as i64, rng.pick(&[4, 8, 12, 64]))
            };
            program.push((enq, epoch));
        }
        // Per warp slot: its CTA, geometry and the next entry it will consume.
        let geoms: Vec<(usize, WarpGeom)> = ctas
            .iter()
            .enumerate()
            .flat_map(|(ci, ct)| {
                let g = WarpGeom {
                    block_dim: ct.block_dim,
                    ctaid: ct.ctaid,
                    warp: 0,
                    warp_size: 32,
                };
                (0..g.warps_per_block()).map(move |w| (ci, g.with_warp(w)))
            })
            .collect();
        let mut next = vec![0usize; slots];
        let mut passed = vec![0u32; ctas.len()];
        let (mut issued, mut affine_epoch) = (0usize, 0u32);
        let mut reqs = vec![];
        let mut now = 0u64;
        while next.iter().any(|&k| k < n) {
            now += 1;
            assert!(now < 20_000, "round {round}: no progress");
            // The affine warp: barrier, then enq when allowed.
            if issued < n {
                let (enq, e) = program[issued];
                if e > affine_epoch {
                    sm.affine_barrier();
                    affine_epoch += 1;
                } else if sm.can_enqueue() {
                    sm.enqueue(enq).unwrap();
                    issued += 1;
                }
            }
            sm.cycle(now, &mut reqs);
            // Non-affine warps consume in program order, sometimes stalling.
            for (slot, &(_, g)) in geoms.iter().enumerate() {
                let k = next[slot];
                if k >= n || rng.below(3) == 0 {
                    continue;
                }
                match program[k].0 {
                    Enq::Pred(p) => {
                        if let Some(e) = sm.deq_pred(slot) {
                            assert_eq!(e.seq, k as u64);
                            assert_eq!(e.mask, peu::expand(&p, &g).unwrap().mask);
                            next[slot] += 1;
                        }
                    }
                    Enq::Data(a) | Enq::Addr(a) => {
                        if let Some(e) = sm.deq_addr(slot) {
                            assert_eq!(e.seq, k as u64);
                            assert_eq!(e.record, aeu::expand(&a, &g, 128));
                            next[slot] += 1;
                        }
                    }
                    Enq::DataSel(s) | Enq::AddrSel(s) => {
                        if let Some(e) = sm.deq_addr(slot) {
                            assert_eq!(e.seq, k as u64);
                            let want = aeu::expand_select(&s, &g, 128).map(|(r, _)| r);
                            assert_eq!(e.record, want);
                            next[slot] += 1;
                        }
                    }
                }
            }
            // A CTA passes its next barrier once its warps consumed all before it.
            for (ci, p) in passed.iter_mut().enumerate() {
                let before = program.iter().filter(|(_, e)| *e <= *p).count();
                let done = geoms
                    .iter()
                    .enumerate()
                    .filter(|(_, (c, _))| *c == ci)
                    .all(|(slot, _)| next[slot] >= before);
                if done && *p < epoch {
                    *p += 1;
                    sm.cta_passed_barrier(ci);
                }
            }
        }
        assert!(sm.is_drained(), "round {round}");
        let lines: u64 = program
            .iter()
            .filter_map(|(e, _)| match e {
                Enq::Data(a) => Some(a),
                _ => None,
            })
            .flat_map(|a| geoms.iter().map(move |(_, g)| aeu::expand(a, g, 128)))
            .map(|r| u64::from(r.unwrap().transactions()))
            .sum();
        assert_eq!(reqs.len() as u64, lines, "round {round}");
        barrier_stalls += sm.stats().stall_barrier;
        full_stalls += sm.stats().stall_queue_full;
    }
    assert!(
        barrier_stalls > 0 && full_stalls > 0,
        "{barrier_stalls} {full_stalls}"
    );
}

/// Runs cycles `from..to` with an admission rule, collecting early requests.
fn run_admit(
    sm: &mut DacSm,
    from: u64,
    to: u64,
    admit: &mut dyn FnMut(&WarpAddrRecord) -> bool,
) -> Vec<EarlyRequest> {
    let mut reqs = vec![];
    for now in from..to {
        sm.cycle_admit(now, &mut reqs, admit);
    }
    reqs
}

#[test]
fn a_record_the_l1_cannot_lock_waits_and_the_unit_serves_other_ctas() {
    let mut sm = DacSm::new(cfg(4, 8), 2).unwrap();
    sm.start_batch(&[cta(0, 32, 0), cta(1, 32, 1)]).unwrap();
    // CTA 0's line (0x1000) cannot be locked yet; CTA 1's (0x1100) can.
    sm.enqueue(data(0x1000, 4)).unwrap();
    let mut blocked = |r: &WarpAddrRecord| r.lines[0].line != 0x1000;
    let reqs = run_admit(&mut sm, 0, 10, &mut blocked);
    assert_eq!(
        reqs.iter()
            .map(|r| (r.warp_slot, r.line))
            .collect::<Vec<_>>(),
        [(1, 0x1100)]
    );
    assert!(sm.peek_addr(0).is_none(), "no record without its requests");
    assert!(sm.stats().stall_l1 > 0);
    assert!(!sm.is_drained());
    // Locks freed: the record goes out, whole.
    let reqs = run_admit(&mut sm, 10, 20, &mut |_| true);
    assert_eq!(
        reqs.iter()
            .map(|r| (r.warp_slot, r.line))
            .collect::<Vec<_>>(),
        [(0, 0x1000)]
    );
    assert_eq!(sm.peek_addr(0).unwrap().seq, 0);
    assert!(sm.is_drained());
}

#[test]
fn a_new_batch_leaves_the_queues_of_running_warps_alone() {
    let mut sm = DacSm::new(cfg(4, 8), 2).unwrap();
    sm.start_batch(&[cta(0, 32, 0)]).unwrap();
    sm.enqueue(data(0, 4)).unwrap();
    run(&mut sm, 0, 5);
    assert!(sm.is_drained());
    // Slot 0's warp still holds its record while a block in slot 1 starts a batch.
    sm.start_batch(&[cta(1, 32, 1)]).unwrap();
    sm.enqueue(data(0, 4)).unwrap();
    run(&mut sm, 5, 10);
    assert_eq!(sm.deq_addr(0).unwrap().seq, 0);
    assert_eq!(sm.deq_addr(1).unwrap().seq, 1, "sequence numbers run on");
    assert!(sm.deq_addr(0).is_none());
}

#[test]
fn a_head_refused_by_the_l1_is_not_lost_when_an_entry_is_enqueued_meanwhile() {
    let mut sm = DacSm::new(cfg(4, 8), 1).unwrap();
    sm.start_batch(&[cta(0, 32, 0)]).unwrap();
    sm.enqueue(data(0x1000, 4)).unwrap();
    let mut reqs = vec![];
    // The expansion takes two cycles (a line step and the CTA's start address).
    sm.cycle_admit(0, &mut reqs, &mut |_| false);
    sm.enqueue(data(0x2000, 4)).unwrap();
    for now in 1..5 {
        sm.cycle_admit(now, &mut reqs, &mut |_| false);
    }
    assert!(sm.stats().stall_l1 > 0 && reqs.is_empty());
    for now in 5..20 {
        sm.cycle_admit(now, &mut reqs, &mut |_| true);
    }
    let seqs: Vec<u64> = (0..2).map(|_| sm.deq_addr(0).unwrap().seq).collect();
    assert_eq!(seqs, [0, 1], "both records, in order");
    assert!(sm.is_drained());
}

#[test]
fn contexts_serve_their_batches_side_by_side_and_retire_reused_slots() {
    let c = DacConfig {
        affine_contexts: 2,
        ..cfg(2, 8)
    };
    let mut sm = DacSm::new(c, 4).unwrap();
    // Context 0: CTAs in warp slots 0 and 1.
    sm.start_batch_in(0, &[cta(0, 32, 0), cta(1, 32, 1)])
        .unwrap();
    for k in 0..4 {
        sm.enqueue_in(0, data(0x1000 * (k + 1), 4)).unwrap();
    }
    run(&mut sm, 0, 40);
    // Both warps hold two records (their PWAQs are full); two entries wait.
    assert!(!sm.is_drained_in(0));
    // Warp 0 finishes its block (takes all four records), warp 1 is slow.
    for now in 40..80 {
        let _ = sm.deq_addr(0);
        sm.cycle(now, &mut vec![]);
    }
    assert!(!sm.is_drained_in(0), "warp 1 still has entries to get");
    // A new block in warp slot 0 starts a batch in context 1: context 0's CTA 0
    // is retired, and the new batch is served while context 0 still waits.
    sm.start_batch_in(1, &[cta(2, 32, 0)]).unwrap();
    assert_eq!(sm.cta_id(1, 0), 4, "ids of context 1 follow the warp slots");
    sm.enqueue_in(1, data(0x9000, 4)).unwrap();
    run(&mut sm, 80, 120);
    let e = sm.deq_addr(0).expect("the new block's record");
    assert_eq!(e.record.unwrap().lines[0].line, 0x9000 + 2 * 64 * 4);
    assert!(sm.is_drained_in(1));
    // Warp 1 takes its records: context 0 drains without serving slot 0 again.
    for now in 120..200 {
        let _ = sm.deq_addr(1);
        sm.cycle(now, &mut vec![]);
    }
    assert!(sm.is_drained_in(0));
    assert!(sm.peek_addr(0).is_none(), "nothing more for the new block");
    assert!(!sm.can_enqueue_in(2), "no third context");
}
