//! Register demotion policy (RegDem, paper 001; issue 19): for a kernel and its
//! launch, how much shared memory spilled values may take, and (with the
//! occupancy cliffs of the machine) which budget and placement to allocate under.
//!
//! The mechanism, slots in shared memory with the paper's bank-conflict-free layout,
//! is [`super::alloc`]'s; this module only decides.
//!
//! * **The layout's block** `n`: the launch's threads per block (`--block`, or what
//!   `spmdc run` launches) rounded up to whole warps, as the hardware block is;
//!   without a launch, the machine's largest block, as CUDA assumes without launch
//!   bounds.
//! * **Room** for [`Placement::Shared`]: all the shared memory a block may have
//!   (`max_shared_mem_per_block`) beyond the kernel's own, which includes the launch's
//!   dynamic shared memory ([`super::Options::dynamic_shared`]; the budgets' occupancy
//!   cliffs count it too). For [`Placement::Mixed`]:
//!   only what leaves the occupancy the budget gives intact, i.e. the shared memory
//!   per block at which exactly as many blocks fit an SM as the registers allow.
//! * **Budgets** ([`budgets`]): the occupancy cliffs below the registers a kernel
//!   needs without spilling, i.e. the largest register counts at which one more block
//!   fits an SM (fewer registers than a cliff's buy nothing), nearest first.
//! * **The predictor** ([`predict`]), a static model in the spirit of the paper's §4
//!   (stall cycles scaled by instruction throughput and occupancy, loops weighted by
//!   a constant factor), written for this simulator's machine. Per warp, over the
//!   allocated code, each instruction weighted by ten per enclosing loop (at most
//!   three; a loop is a backward branch's span):
//!   - `issue`: issue cycles, `warp_size / simt_lanes_per_scheduler` for a vector
//!     instruction plus its register-bank conflicts, one for the uniform datapath,
//!     the divide and f64 units' intervals for theirs;
//!   - `latency`: stall cycles of an in-order scoreboard run over each basic block
//!     alone: an instruction issues when its sources are ready, its result is
//!     ready its unit's latency later (a load's: shared memory's latency; global:
//!     an L2 hit, or an L1 hit for a decoupled load, which reads what the affine
//!     warp prefetched; local memory: an L1 hit for the share of the SM's resident
//!     threads' local bytes that L1 holds, an L2 hit for the rest);
//!   - `lsu`: load/store-unit cycles, one per 32-bit word per lane group of 128
//!     bytes (a local or global access of 8 bytes takes two), one per shared access.
//!
//!   With `W` warps resident on an SM (the blocks the occupancy calculator allows
//!   from the allocated `.reg` and `.shared`, or fewer when the grid has fewer
//!   blocks per SM) and `S` schedulers, the SM takes
//!   `max(W·issue / S, W·lsu, issue + latency)` cycles to run its resident warps
//!   once: issue-bound, memory-unit-bound, or one warp's latency-bound critical path,
//!   the latency hidden by the other warps. The grid runs in waves of
//!   `W·num_sms` warps, so the predicted cycles are `waves × that`. The variant with
//!   the fewest predicted cycles wins; ties keep the one with fewer spills.
//!   What the model does not see (cache misses of spill slots under pressure,
//!   memory bandwidth, divergence) is where its choice and the exhaustive search's
//!   part (`spmdc bench regdem` reports both).

use rustc_hash::FxHashMap;
use sim::gpu::{
    occupancy, AddrBase, Address, BlockResources, GpuConfig, Inst, Kernel, Op, RegFile, Space, Unit,
};

use super::alloc::{self, Placement, RegReport, SharedRoom};
use super::Options;
use crate::diag::Diagnostic;
use crate::source::Span;

/// Warp size of the dac-gpu.
const WARP: u32 = 32;

/// Threads per block the demoted slots' layout strides by, for a launch of
/// `block_threads` threads per block (`None`: unknown) on `machine`.
pub fn layout_threads(machine: &GpuConfig, block_threads: Option<u32>) -> u32 {
    let threads = block_threads
        .unwrap_or(machine.max_threads_per_block)
        .max(1);
    threads.div_ceil(WARP) * WARP
}

/// The shared memory the demoted slots of a kernel with `own_shared` bytes of its
/// own (its `.shared` size: static variables and the launch's dynamic shared memory)
/// may take per block, when it is allocated under `budget` registers for blocks of
/// `threads` threads (already whole warps). `None` when nothing may be demoted.
pub fn room(
    machine: &GpuConfig,
    placement: Placement,
    threads: u32,
    own_shared: u32,
    budget: u32,
) -> Option<SharedRoom> {
    let own = own_shared.div_ceil(4) * 4;
    let limit = match placement {
        Placement::Local => return None,
        Placement::Shared => machine.max_shared_mem_per_block,
        Placement::Mixed => shared_keeping_blocks(machine, threads, own, budget)?,
    };
    let bytes = limit.checked_sub(own).filter(|&b| b > 0)?;
    Some(SharedRoom { threads, bytes })
}

/// The most shared bytes per block at which as many blocks of `threads` threads and
/// `budget` registers fit an SM as with `own` shared bytes.
fn shared_keeping_blocks(machine: &GpuConfig, threads: u32, own: u32, budget: u32) -> Option<u32> {
    let resources = |shared| BlockResources {
        threads_per_block: threads,
        regs_per_thread: budget,
        shared_per_block: shared,
    };
    let blocks = occupancy(machine, resources(own)).ok()?.blocks_per_sm;
    let unit = machine.shared_mem_alloc_unit.max(1);
    let per_block = (machine.shared_mem_per_sm / blocks.max(1)) / unit * unit;
    let most = per_block.min(machine.max_shared_mem_per_block);
    // The allocation unit rounds down; check it, as the calculator rounds up.
    let keeps = |s| occupancy(machine, resources(s)).is_ok_and(|o| o.blocks_per_sm >= blocks);
    keeps(most).then_some(most)
}

/// The register budgets worth trying below `needed` (the registers the kernel takes
/// without spilling) for blocks of `threads` threads with `own_shared` bytes: each
/// occupancy cliff's register count, nearest first, at most `most` of them.
pub fn budgets(
    machine: &GpuConfig,
    threads: u32,
    own_shared: u32,
    needed: u32,
    most: usize,
) -> Vec<u32> {
    let cliffs = sim::gpu::register_cliffs(machine, threads, own_shared);
    let needed_blocks = cliffs
        .iter()
        .find(|c| c.regs >= needed)
        .map_or(0, |c| c.blocks_per_sm);
    cliffs
        .iter()
        .rev()
        .filter(|c| c.regs < needed && c.blocks_per_sm > needed_blocks)
        .map(|c| c.regs)
        .take(most)
        .collect()
}

/// What the predictor says of one allocated kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// Predicted cycles of the whole launch.
    pub cycles: f64,
    pub blocks_per_sm: u32,
    /// Per warp: loop-weighted issue cycles, exposed load latency, LSU cycles.
    pub issue: f64,
    pub latency: f64,
    pub lsu: f64,
}

/// Loop depth of each instruction of `insts`: how many backward branches' spans
/// (target..=branch) hold it.
fn loop_depths(insts: &[Inst]) -> Vec<u32> {
    let mut delta = vec![0i64; insts.len() + 1];
    for (pc, inst) in insts.iter().enumerate() {
        if let Op::Bra { target, .. } = inst.op {
            let t = target as usize;
            if t <= pc {
                delta[t] += 1;
                delta[pc + 1] -= 1;
            }
        }
    }
    let mut depth = 0i64;
    delta[..insts.len()]
        .iter()
        .map(|d| {
            depth += d;
            depth.max(0) as u32
        })
        .collect()
}

/// Per-warp loop-weighted (issue, stall, lsu) cycles of `kernel` on `machine`, with
/// local loads taking `local_latency`. Stalls come from an in-order scoreboard run
/// over each basic block alone (its values from elsewhere taken as ready): an
/// instruction issues when its sources are ready, and its result is ready its
/// unit's latency later; the block's stall is its length less its issue cycles.
fn per_warp_costs(kernel: &Kernel, machine: &GpuConfig, local_latency: f64) -> (f64, f64, f64) {
    let vector_issue =
        f64::from((machine.warp_size / machine.simt_lanes_per_scheduler.max(1)).max(1));
    let (mut issue, mut stall, mut lsu) = (0.0, 0.0, 0.0);
    let starts = block_starts(kernel);
    let mut ready: FxHashMap<(RegFile, u32), f64> = FxHashMap::default();
    let (mut clock, mut issued, mut weight) = (0.0, 0.0, 1.0);
    for (pc, (inst, depth)) in kernel
        .insts
        .iter()
        .zip(loop_depths(&kernel.insts))
        .enumerate()
    {
        if starts[pc] {
            stall += weight * (clock - issued);
            ready.clear();
            (clock, issued) = (0.0, 0.0);
        }
        weight = 10f64.powi(depth.min(3) as i32);
        let banks = sim::gpu::timing::register_bank_conflicts(inst, machine.register_banks);
        let cost = match inst.unit() {
            _ if inst.uni => 1.0,
            Unit::Div | Unit::F64 => vector_issue.max(8.0),
            _ => vector_issue + f64::from(banks),
        };
        issue += weight * cost;
        let (latency, unit) = unit_costs(inst, machine, local_latency);
        lsu += weight * unit;
        let mut start = clock;
        inst.for_each_reg(|a| {
            if !a.def {
                start = start.max(ready.get(&(a.reg.file, a.reg.idx)).copied().unwrap_or(0.0));
            }
        });
        clock = start + cost;
        issued += cost;
        inst.for_each_reg(|a| {
            if a.def {
                for k in 0..=u32::from(a.wide) {
                    ready.insert((a.reg.file, a.reg.idx + k), start + latency);
                }
            }
        });
    }
    stall += weight * (clock - issued);
    (issue, stall, lsu)
}

/// Whether each instruction of `kernel` starts a basic block: the first, label
/// targets, and what follows a branch, exit or return.
fn block_starts(kernel: &Kernel) -> Vec<bool> {
    let mut starts = vec![false; kernel.insts.len() + 1];
    starts[0] = true;
    for l in &kernel.labels {
        if let Some(s) = starts.get_mut(l.at as usize) {
            *s = true;
        }
    }
    for (pc, inst) in kernel.insts.iter().enumerate() {
        if matches!(inst.op, Op::Bra { .. } | Op::Exit | Op::Ret) {
            starts[pc + 1] = true;
        }
    }
    starts
}

/// An instruction's result latency and its load/store-unit cycles.
fn unit_costs(inst: &Inst, machine: &GpuConfig, local_latency: f64) -> (f64, f64) {
    let words = match inst.op {
        Op::Ld { ty, .. } | Op::St { ty, .. } | Op::Atom { ty, .. } if ty.bits() == 64 => 2.0,
        _ => 1.0,
    };
    let cycles = |c: u32| f64::from(c);
    // A decoupled load reads what the affine warp prefetched into L1 (DAC).
    let prefetched = matches!(
        inst.op,
        Op::Ld {
            addr: Address {
                base: AddrBase::DeqData,
                ..
            },
            ..
        }
    );
    match inst.unit() {
        _ if inst.uni => (cycles(machine.uniform_latency), 0.0),
        Unit::Mem(Space::Global) if prefetched => (cycles(machine.l1_latency), words),
        Unit::Mem(Space::Shared) => (cycles(machine.shared_mem_latency), 1.0),
        Unit::Mem(Space::Local) => (local_latency, words),
        Unit::Mem(Space::Global) => (cycles(machine.l2_latency), words),
        Unit::Mem(Space::Param) => (cycles(machine.alu_latency), 0.0),
        Unit::Mul => (cycles(machine.mul_latency), 0.0),
        Unit::F64 => (cycles(machine.f64_latency), 0.0),
        Unit::Div => (cycles(machine.div_latency), 0.0),
        _ => (cycles(machine.alu_latency), 0.0),
    }
}

/// The predicted cycles of `kernel` (allocated) launched in `blocks` blocks of
/// `threads` threads on `machine`; `None` when a block cannot run at all.
pub fn predict(
    kernel: &Kernel,
    machine: &GpuConfig,
    threads: u32,
    blocks: u64,
) -> Option<Prediction> {
    let occ = occupancy(machine, BlockResources::of(kernel, threads)).ok()?;
    let sms = u64::from(machine.num_sms.max(1));
    // Blocks an SM really holds: the grid may not fill what occupancy allows.
    let resident = u64::from(occ.blocks_per_sm.max(1)).min(blocks.div_ceil(sms).max(1));
    let resident_threads = resident * u64::from(threads);
    let local = local_latency(machine, kernel.local_bytes, resident_threads);
    let (issue, latency, lsu) = per_warp_costs(kernel, machine, local);
    let warps = (resident * u64::from(occ.warps_per_block.max(1))) as f64;
    let schedulers = f64::from(machine.schedulers_per_sm.max(1));
    let round = (warps * issue / schedulers)
        .max(warps * lsu)
        .max(issue + latency);
    let per_wave = u64::from(occ.blocks_per_sm.max(1)) * sms;
    let waves = blocks.div_ceil(per_wave).max(1) as f64;
    Some(Prediction {
        cycles: waves * round,
        blocks_per_sm: occ.blocks_per_sm,
        issue,
        latency,
        lsu,
    })
}

/// The expected latency of a local-memory load when `threads` threads, each with
/// `bytes` of local memory, share an SM's L1: an L1 hit for the share of the slots
/// L1 holds, an L2 hit for the rest.
fn local_latency(machine: &GpuConfig, bytes: u32, threads: u64) -> f64 {
    let footprint = u64::from(bytes) * threads;
    let hit = if footprint == 0 {
        1.0
    } else {
        (f64::from(machine.l1_size) / footprint as f64).min(1.0)
    };
    hit * f64::from(machine.l1_latency) + (1.0 - hit) * f64::from(machine.l2_latency)
}

/// Occupancy cliffs below the spill-free register count the predictor tries.
const MOST_BUDGETS: usize = 3;
/// Blocks assumed when the launch's grid is unknown: many waves on any machine.
const UNKNOWN_GRID_BLOCKS: u64 = 1 << 20;

/// One allocation `--regalloc auto` weighed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    pub budget: u32,
    pub placement: Placement,
    /// Registers and spill code of the allocation.
    pub num_regs: u32,
    pub spill_slots: u32,
    pub demoted_slots: u32,
    pub prediction: Prediction,
}

impl Candidate {
    /// `codegen` with this candidate's budget and placement fixed (no prediction):
    /// the options that compile exactly this allocation.
    pub fn fixed(&self, codegen: &Options) -> Options {
        Options {
            predict: false,
            max_regs: self.budget,
            placement: self.placement,
            ..codegen.clone()
        }
    }
}

/// A selected kernel, its line table and trap sites: what allocation rewrites.
type Selected = (Kernel, Vec<Option<Span>>, Vec<(usize, &'static str)>);

/// Allocates the registers of a selected kernel as `options` say: under
/// `max_regs` with [`Options::placement`], or (`predict`) the allocation among the
/// candidates the predictor expects to run fastest. Returns the report and the
/// candidates weighed, the chosen one first (none without `predict`).
#[allow(clippy::result_large_err)] // the selector collects diagnostics as they are
pub fn allocate(
    kernel: &mut Kernel,
    lines: &mut Vec<Option<Span>>,
    traps: &mut [(usize, &'static str)],
    options: &Options,
) -> Result<(RegReport, Vec<Candidate>), Diagnostic> {
    let threads = layout_threads(&options.machine, options.block_threads);
    let own = kernel.shared_bytes;
    let place = |k: &mut Kernel, lines: &mut Vec<Option<Span>>, traps: &mut [_], budget, p| {
        let room = room(&options.machine, p, threads, own, budget);
        alloc::allocate_selected(k, lines, traps, budget, p, room)
    };
    if !options.predict {
        let report = place(kernel, lines, traps, options.max_regs, options.placement)?;
        return Ok((report, Vec::new()));
    }
    let blocks = options.grid_blocks.unwrap_or(UNKNOWN_GRID_BLOCKS);
    let launch_threads = options.block_threads.unwrap_or(threads).max(1);
    let mut tried: Vec<(Candidate, Selected, RegReport)> = Vec::new();
    let mut attempt = |budget: u32, p: Placement| -> Result<RegReport, Diagnostic> {
        let (mut k, mut l, mut t) = (kernel.clone(), lines.clone(), traps.to_vec());
        let report = place(&mut k, &mut l, &mut t, budget, p)?;
        // A placement that demotes nothing is the local allocation again.
        let same = |c: &Candidate| {
            (c.budget, c.num_regs, c.spill_slots, c.demoted_slots)
                == (
                    budget,
                    report.num_regs,
                    report.spill_slots,
                    report.demoted_slots,
                )
        };
        if tried.iter().any(|t| same(&t.0)) {
            return Ok(report);
        }
        if let Some(prediction) = predict(&k, &options.machine, launch_threads, blocks) {
            let candidate = Candidate {
                budget,
                placement: p,
                num_regs: report.num_regs,
                spill_slots: report.spill_slots,
                demoted_slots: report.demoted_slots,
                prediction,
            };
            tried.push((candidate, (k, l, t), report.clone()));
        }
        Ok(report)
    };
    // The spill-free (or, under a fixed budget too small, local-spilling) baseline.
    let base = attempt(options.max_regs, Placement::Local)?;
    // Under the limit itself when the baseline spills (its slots may move to shared
    // memory), and unless the budget is fixed, at the cliffs below.
    let mut budgets = if base.spill_slots > 0 {
        vec![options.max_regs]
    } else {
        Vec::new()
    };
    if !options.fixed_budget {
        let needed = base.num_regs;
        let cliffs = self::budgets(&options.machine, launch_threads, own, needed, MOST_BUDGETS);
        budgets.extend(cliffs.into_iter().filter(|&b| b < options.max_regs));
    }
    for budget in budgets {
        for p in [Placement::Local, Placement::Shared, Placement::Mixed] {
            if budget == options.max_regs && p == Placement::Local {
                continue;
            }
            // A budget too small for some instruction is no candidate.
            let _ = attempt(budget, p);
        }
    }
    let best = (0..tried.len())
        .min_by(|&a, &b| {
            let (x, y) = (&tried[a].0, &tried[b].0);
            x.prediction
                .cycles
                .total_cmp(&y.prediction.cycles)
                .then((x.spill_slots + x.demoted_slots).cmp(&(y.spill_slots + y.demoted_slots)))
                .then(a.cmp(&b))
        })
        .unwrap_or(0);
    if tried.is_empty() {
        // No candidate could be predicted (a block too large to run): the baseline.
        let report = place(kernel, lines, traps, options.max_regs, Placement::Local)?;
        return Ok((report, Vec::new()));
    }
    let (chosen, (k, l, t), report) = tried.swap_remove(best);
    *kernel = k;
    *lines = l;
    traps.copy_from_slice(&t);
    let mut candidates = vec![chosen];
    candidates.extend(tried.into_iter().map(|(c, ..)| c));
    Ok((report, candidates))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Maxwell, 256-thread blocks: a kernel needing 40 registers fits 6 blocks, and
    /// the only cliff below is 32 (8 blocks of 8 warps fill the 64 warps). Needing
    /// 70 (3 blocks): 64 (4 blocks: two pools of 32768 registers hold 16 warps of
    /// 64 each), 40 (6), 32 (8); 48 registers still give 4 blocks (20 warps a pool).
    #[test]
    fn budgets_are_the_cliffs_below_the_need_nearest_first() {
        let m = GpuConfig::maxwell();
        assert_eq!(budgets(&m, 256, 0, 40, 4), vec![32]);
        assert_eq!(budgets(&m, 256, 0, 70, 4), vec![64, 40, 32]);
        assert_eq!(budgets(&m, 256, 0, 70, 2), vec![64, 40]);
        assert!(budgets(&m, 256, 0, 32, 4).is_empty());
    }

    /// Fewer registers and more resident warps hide latency: the same code predicts
    /// fewer cycles with more blocks per SM, and spill code costs issue cycles.
    #[test]
    fn the_predictor_weighs_occupancy_against_spill_code() {
        let m = GpuConfig::maxwell();
        let text = |regs: u32, spill: &str| {
            format!(
                ".entry k()\n{{\n    .reg {regs};\n{spill}\
                 $L0:\n    ld.global.f32 %r1, [%rd2];\n    add.f32 %r0, %r0, %r1;\n\
                 \x20   @%p0 bra.uni $L0;\n    exit;\n}}\n"
            )
        };
        let kernel = |regs, spill| {
            let p = sim::gpu::parse(&text(regs, spill)).expect("parses");
            p.kernels[0].clone()
        };
        let lean = kernel(32, "");
        let fat = kernel(64, "");
        let grid = 10_000;
        let p_lean = predict(&lean, &m, 256, grid).expect("runs");
        let p_fat = predict(&fat, &m, 256, grid).expect("runs");
        assert!(p_lean.blocks_per_sm > p_fat.blocks_per_sm);
        assert!(p_lean.cycles < p_fat.cycles, "{p_lean:?} {p_fat:?}");
        let spilled = kernel(
            32,
            "    ld.local.b32 %r3, [0];\n    st.local.b32 [0], %r3;\n",
        );
        let p_spilled = predict(&spilled, &m, 256, grid).expect("runs");
        assert!(p_spilled.issue > p_lean.issue && p_spilled.lsu > p_lean.lsu);
    }

    #[test]
    fn the_layout_block_is_the_launch_in_whole_warps_or_the_largest() {
        let m = GpuConfig::maxwell();
        assert_eq!(layout_threads(&m, Some(100)), 128);
        assert_eq!(layout_threads(&m, Some(256)), 256);
        assert_eq!(layout_threads(&m, None), m.max_threads_per_block);
    }

    /// Mixed room keeps the blocks the registers allow: Maxwell, 256 threads at 32
    /// registers fit 8 blocks (64 warps), so each may have 96 KiB / 8 = 12 KiB.
    #[test]
    fn mixed_room_keeps_the_occupancy_of_the_budget() {
        let m = GpuConfig::maxwell();
        let r = room(&m, Placement::Mixed, 256, 1000, 32).expect("room");
        assert_eq!(r.bytes, m.shared_mem_per_sm / 8 - 1000);
        let shared = room(&m, Placement::Shared, 256, 1000, 32).expect("room");
        assert_eq!(shared.bytes, m.max_shared_mem_per_block - 1000);
        assert_eq!(room(&m, Placement::Local, 256, 0, 32), None);
    }
}
