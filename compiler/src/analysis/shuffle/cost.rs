//! `--shuffle=auto`: a static cost model that keeps the pairs of
//! [`super::analyze_function`] expected to make their block faster on the target, and
//! drops the others (paper 004's Volta case: a rewrite that adds more work than it
//! saves).
//!
//! **What a rewrite changes.** A shuffled load (`N != 0`) trades the load for the
//! lane move, a few mask instructions and a reload of the edge lanes (the target's
//! sequence, [`Machine::extra_insts`]). Its lines are the source's lines, bar the
//! `|N|` lanes past the warp's edge, which the reload touches anyway: whether the
//! original access hits in L1 is the same before and after, so the rewrite saves
//! memory-pipeline cycles, not misses. Those cycles are
//! [`Machine::load_port`] (a unit-stride 32-bit access not aligned to the line: two
//! line transactions on the GPU, a 16-lane gather on nyuzi) minus the reload's
//! ([`Machine::reload_port`], per edge lane). The result's latency changes from an
//! L1 hit to `shfl_latency` on the GPU, which the model leaves out there (its presets
//! hide latency with other warps).
//!
//! **The decision.** A block (one iteration of any loop around it; pairs never cross
//! blocks) is modelled as bound by the busiest of its resources, per warp:
//!
//! * issue: its instructions times [`Machine::issue`], the core cycles one warp
//!   instruction occupies (warp width over the lanes of all schedulers: 1 on the
//!   GTX 480, 0.25 on Maxwell; 1 on a nyuzi core);
//! * memory pipeline: the port cycles of its varying accesses;
//! * on nyuzi, latency ([`Machine::latency`]): one thread's dependency path through
//!   the block over the hardware threads that share the core.
//!
//! The block's estimate is the largest. Shuffles are taken one at a time, smallest
//! `|N|` first (the cheapest reload), while each lowers the estimate; the first that
//! does not stops the block. So an issue-bound block takes none (each rewrite adds
//! issue cycles and saves port cycles nobody waits for), and a port-bound one takes
//! shuffles until the two balance. Plain reuse (`N = 0`) removes a load and adds a
//! move at most: always kept. The cost is linear in the function's instructions.
//!
//! **Halos.** A load whose edge lanes come from its side's halo ([`super::Edge`])
//! reloads nothing in a whole warp or gang: it saves the load's port cycles whole, for
//! [`Machine::halo_insts`] instructions (a second move and its select). The shuffles
//! are first chosen as above, each reloading its own edge; then each kept load that
//! could take its edge from a halo whose carrier is kept switches to the halo where
//! that lowers the block's estimate further (on nyuzi the halo's second move, mask
//! and merge cost 7 instructions more to save the `|N|` cycles of the edge lanes'
//! gather: rarely). After the choice, the halos are planned again over the pairs kept,
//! without the loads that keep their own reload.
//!
//! **Latency on nyuzi.** A nyuzi thread issues in order, and an instruction waits
//! until its sources are ready (`sim::nyuzi::timing`: `int_latency` 3 cycles after an
//! ALU instruction, `mem_latency` 4 after a load's last lane, a gather holding the
//! thread one cycle a lane). The core issues from its ready threads round-robin, so a
//! thread's wait is filled by the others' instructions when the launch gives the core
//! several threads, and by nothing when it gives it one. The model takes the block as
//! one dependency chain (no schedule is known: a static upper bound): its path is
//! `int_latency` an instruction, `mem_latency` a load, plus the gather cycles of its
//! varying accesses, and `T` threads on the core share that wait, so the latency bound
//! is `path / T`. The shuffle's sequence is such a chain (lane index, add, `shuffle`;
//! shift, `and`, `xor`, the reload, the merge): a rewrite adds its extra instructions
//! at `int_latency` each and the reload's `|N|` gather cycles to the path and takes
//! off the load's 16. With one thread (`T = 1`) the path is the estimate, and a
//! shuffle lengthens it (7 x 3 + `|N|` - 16 > 0 cycles): declined. With 4 threads the
//! path is a quarter, below the port cycles of a gather-bound block, and the
//! issue/port balance decides as before.
//!
//! `T` is the launch's threads per core, which a compile does not see: the model
//! takes it from the entry's linkage ([`Machine::nyuzi_threads`]). A `task` is
//! launched over a grid of blocks, which the runtime spreads over every hardware
//! thread: the default machine's `threads_per_core` (4). An `export` function runs
//! one gang, as `spmdc run` runs it (the default launch, a grid of 1): one thread on
//! the core. An internal function's callers are not known: one thread, the
//! conservative case (a shuffle declined costs at most the gain it would have made).
//!
//! The model is static and coarse on purpose: IR instructions stand for machine
//! instructions, and on the GPU the launch's occupancy is not known. `spmdc bench
//! shuffle` measures where it is wrong ([docs/shuffle.md]).

use super::{FunctionShuffles, Pair};
use crate::ir::{Function, InstData, Linkage};

/// What the model knows of a target and machine preset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Core cycles one warp (gang) instruction occupies the issue stage.
    pub issue: f64,
    /// Memory-pipeline cycles of a varying, unit-stride access not aligned to a line.
    pub load_port: f64,
    /// Memory-pipeline cycles of the reload, per edge lane (`|N|` of them), on top of
    /// [`Machine::reload_base`].
    pub reload_port: f64,
    /// Memory-pipeline cycles of the reload of any number of edge lanes.
    pub reload_base: f64,
    /// Instructions a shuffled load adds over the load it replaces.
    pub extra_insts: f64,
    /// More instructions when the pair checks rows (`Pair::row`).
    pub extra_row: f64,
    /// More instructions when the load is under a mask.
    pub extra_masked: f64,
    /// Instructions a load whose edge lanes come from a halo adds over the load it
    /// replaces (no reload of its own in a whole warp: its port cycles are all saved).
    pub halo_insts: f64,
    /// More instructions for such a load when the pair checks rows.
    pub halo_row: f64,
    /// The threads' dependency paths, where a thread waits on them (nyuzi); `None`
    /// leaves latency out (the GPU presets hide it).
    pub latency: Option<Latency>,
}

/// What a thread's dependency path costs (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    /// Hardware threads the launch gives a core, which fill each other's waits.
    pub threads: f64,
    /// Cycles until an ALU instruction's result is ready.
    pub result: f64,
    /// Cycles until a load's result is ready, after its last lane.
    pub load: f64,
}

impl Machine {
    /// The dac-gpu on `cfg`: a warp instruction takes `warp_size /
    /// simt_lanes_per_scheduler` cycles of one of `schedulers_per_sm` schedulers; an
    /// unaligned line-sized access is two transactions, one a cycle, and the reload of
    /// a few edge lanes one. The sequence of `back::dac_gpu`'s shuffled load: `shfl`,
    /// `and` with the whole-warp vote, `@!full mov`, `not`, and about one more for
    /// the `vote.all` and row predicates the block's shuffles share (jacobi2d_gpu
    /// runs 6.1 more warp instructions per shuffle, with its row check); `and` with
    /// the row check and with the mask. A halo-served load: the two `shfl`s, the
    /// select, `@!whole mov` and the reload instruction (its predicates, the row
    /// alignment among them, are shared by the block).
    pub fn dac_gpu(cfg: &sim::gpu::GpuConfig) -> Machine {
        let lanes = f64::from(cfg.simt_lanes_per_scheduler.max(1));
        let schedulers = f64::from(cfg.schedulers_per_sm.max(1));
        Machine {
            issue: f64::from(cfg.warp_size.max(1)) / lanes / schedulers,
            load_port: 2.0,
            reload_port: 0.0,
            reload_base: 1.0,
            extra_insts: 5.0,
            extra_row: 1.0,
            extra_masked: 1.0,
            halo_insts: 5.0,
            halo_row: 0.0,
            latency: None,
        }
    }

    /// A nyuzi core: one instruction a cycle; an unaligned 16-lane access is a gather
    /// of one cycle per lane, and the reload gathers the `|N|` edge lanes. The
    /// sequence of `back::nyuzi`'s shuffled load: the `shuffle` and the merge, and,
    /// shared by the loads of one `N` but counted whole (stencils rarely repeat an
    /// `N` in a block), the index vector (load, add) and the served and reload masks
    /// (shift, `and`, `xor`); the row check adds a context load, an add and a
    /// compare. A halo-served load adds a second index vector (load, add), `shuffle`,
    /// served mask (shift, `and`) and merge, and an `or` of the two masks: 14, and
    /// twice the row check. `threads` is the hardware threads the launch gives the
    /// core; the latencies are the timing model's defaults.
    pub fn nyuzi(threads: u32) -> Machine {
        let timing = sim::nyuzi::timing::TimingConfig::default();
        Machine {
            issue: 1.0,
            load_port: 16.0,
            reload_port: 1.0,
            reload_base: 0.0,
            extra_insts: 7.0,
            extra_row: 3.0,
            extra_masked: 0.0,
            halo_insts: 14.0,
            halo_row: 6.0,
            latency: Some(Latency {
                threads: f64::from(threads.max(1)),
                result: f64::from(timing.int_latency),
                load: f64::from(timing.mem_latency),
            }),
        }
    }

    /// The hardware threads a launch of `func` gives a nyuzi core, from its linkage: a
    /// `task`'s grid fills the default machine's threads, an `export` function runs one
    /// gang on one thread, and an internal function is taken as the latter.
    pub fn nyuzi_threads(func: &Function) -> u32 {
        match func.linkage {
            Linkage::Task => sim::nyuzi::Config::default().threads_per_core,
            Linkage::Export | Linkage::Internal => 1,
        }
    }

    /// The block's estimate from its issue, port and dependency-path cycles.
    fn estimate(&self, issue: f64, port: f64, path: f64) -> f64 {
        let wait = self.latency.map_or(0.0, |l| path / l.threads);
        issue.max(port).max(wait)
    }
}

impl Machine {
    /// The instructions the rewrite of `p` (under a mask when `masked`) adds and the
    /// memory-pipeline cycles it saves.
    /// With `halo`, its edge lanes come from its halo; else it reloads them.
    fn rewrite(&self, p: &Pair, masked: bool, halo: bool) -> (f64, f64) {
        let row = |c: f64| if p.row { c } else { 0.0 };
        if halo {
            return (self.halo_insts + row(self.halo_row), self.load_port);
        }
        let extra =
            self.extra_insts + row(self.extra_row) + if masked { self.extra_masked } else { 0.0 };
        let n = f64::from(p.delta.unsigned_abs());
        (
            extra,
            self.load_port - self.reload_base - self.reload_port * n,
        )
    }
}

/// Keeps the pairs of `shuffles` (of `func`) the model expects to pay on `machine`.
pub fn select(func: &Function, shuffles: &mut FunctionShuffles, machine: &Machine) {
    let (keep, own_edges) = decide(func, shuffles, machine);
    shuffles.retain(|p| keep.contains(&p.load));
    shuffles.keep_own_edges(own_edges);
    shuffles.plan_halos(func);
}

/// The loads whose pairs are kept, and those of them that reload their own edge lanes
/// though they could take them from a halo (the reload is cheaper on `machine`).
fn decide(func: &Function, shuffles: &FunctionShuffles, machine: &Machine) -> (Loads, Loads) {
    let mut keep = Loads::default();
    let mut own_edges = Loads::default();
    for &block in &func.layout {
        let (mut state, mut shuffled) = scan(func, block, shuffles, machine, &mut keep);
        shuffled.sort_by_key(|s| s.0);
        let mut kept = Vec::new();
        for (_, p, masked) in shuffled {
            let (extra, saved) = machine.rewrite(&p, masked, false);
            if !state.try_change(machine, extra, saved) {
                break;
            }
            keep.insert(p.load);
            kept.push((p, masked));
        }
        // Then the halos, each where its carrier is kept and it lowers the estimate.
        for (p, masked) in kept {
            let Some(edge) = p.edge else {
                continue;
            };
            let (e1, s1) = machine.rewrite(&p, masked, false);
            let (e2, s2) = machine.rewrite(&p, masked, true);
            if !keep.contains(&edge.carrier) || !state.try_change(machine, e2 - e1, s2 - s1) {
                own_edges.insert(p.load);
            }
        }
    }
    (keep, own_edges)
}

/// The resources of `block` as it is, and its shuffled pairs (`|N|`, pair, masked);
/// its plain reuses go straight into `keep`.
fn scan(
    func: &Function,
    block: crate::ir::Block,
    shuffles: &FunctionShuffles,
    machine: &Machine,
    keep: &mut Loads,
) -> (Estimate, Vec<(u32, Pair, bool)>) {
    let (mut issue, mut port, mut path) = (0.0, 0.0, 0.0);
    let (result, load) = machine.latency.map_or((0.0, 0.0), |l| (l.result, l.load));
    let mut shuffled = Vec::new();
    for &inst in &func.blocks[block].insts {
        issue += machine.issue;
        let (addr, mask) = match &func.insts[inst] {
            InstData::Load { addr, mask, .. } => {
                path += load;
                (*addr, *mask)
            }
            InstData::Store { addr, mask, .. } => {
                path += result;
                (*addr, *mask)
            }
            _ => {
                path += result;
                continue;
            }
        };
        if func.value_type(addr).varying {
            port += machine.load_port;
            path += machine.load_port;
        }
        match shuffles.pair(inst) {
            Some(p) if !p.is_shuffle() => {
                keep.insert(inst);
            }
            Some(p) => shuffled.push((p.delta.unsigned_abs(), *p, mask.is_some())),
            None => {}
        }
    }
    let best = machine.estimate(issue, port, path);
    let state = Estimate {
        issue,
        port,
        path,
        best,
    };
    (state, shuffled)
}

/// A set of IR loads.
type Loads = rustc_hash::FxHashSet<crate::ir::Inst>;

/// A block's resources so far and its estimate.
struct Estimate {
    issue: f64,
    port: f64,
    path: f64,
    best: f64,
}

impl Estimate {
    /// Takes a change that adds `extra` instructions and saves `saved` port cycles
    /// when it lowers the estimate on `machine`; whether it did. The load's result
    /// latency stays on the path (the reload's replaces it).
    fn try_change(&mut self, machine: &Machine, extra: f64, saved: f64) -> bool {
        let result = machine.latency.map_or(0.0, |l| l.result);
        let (i, q, d) = (
            self.issue + extra * machine.issue,
            self.port - saved,
            self.path + extra * result - saved,
        );
        let next = machine.estimate(i, q, d);
        if next >= self.best {
            return false;
        }
        (self.issue, self.port, self.path, self.best) = (i, q, d, next);
        true
    }
}

#[cfg(test)]
mod tests;
