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
//! move at most: always kept. On the dac-gpu a shuffled load under a mask (or in a
//! warp whose lanes may not all exist) tests lane by lane whether its source lane is
//! on, with instructions the block's shuffles share ([`Shared`]: the mask's ballot,
//! its shift per side, the test per `N`): the first shuffle kept that needs one pays
//! it, the later ones only their own instructions. The cost is linear in the function's instructions.
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
//! `T` is the hardware threads the launch gives the busiest core. A compile made for
//! a launch (`spmdc run`, `spmdc bench`, `spmdc difftest`) knows it: the image's
//! scheduler runs one block a thread on up to every thread of the machine, core 0's
//! first (`back::nyuzi::image::MachineShape::busiest_core_threads`), so a grid of one block gets one thread
//! and a grid of eight on the default machine the core's four. A compile without a
//! launch (`spmdc FILE --target nyuzi`) takes it from the entry's linkage
//! ([`Machine::nyuzi_threads`]). A `task` is launched over a grid of blocks, which the
//! runtime spreads over every hardware thread: the default machine's
//! `threads_per_core` (4). An `export` function runs one gang, as `spmdc run` runs it
//! (the default launch, a grid of 1): one thread on the core. An internal function's
//! callers are not known: one thread, the conservative case (a shuffle declined costs
//! at most the gain it would have made).
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
    /// Instructions a shuffled load under a mask adds (instead of `extra_insts`).
    pub masked_insts: f64,
    /// More instructions for such a load when the pair checks rows.
    pub masked_row: f64,
    /// Instructions a load whose edge lanes come from a halo adds over the load it
    /// replaces (no reload of its own in a whole warp: its port cycles are all saved).
    pub halo_insts: f64,
    /// More instructions for such a load when the pair checks rows.
    pub halo_row: f64,
    /// Instructions a halo-served load under a mask adds (instead of `halo_insts`).
    pub halo_masked: f64,
    /// More instructions for such a load when the pair checks rows.
    pub halo_masked_row: f64,
    /// Instructions the shuffled loads of a block share, paid by the first that needs
    /// them ([`Shared`]).
    pub shared: Shared,
    /// The threads' dependency paths, where a thread waits on them (nyuzi); `None`
    /// leaves latency out (the GPU presets hide it).
    pub latency: Option<Latency>,
}

/// Instructions the shuffled loads of one block under a mask share on the dac-gpu,
/// where a lane takes the shuffle only when its source lane is on (the per-lane test
/// of `back::dac_gpu`'s shuffle module), each paid once per block by the first
/// shuffle kept that needs it. Zero on nyuzi, whose per-load counts include them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Shared {
    /// Per mask: the ballot of its lanes on.
    pub mask: f64,
    /// Per mask and side (`N > 0` or `N < 0`): the ballot shifted to the lane.
    pub side: f64,
    /// Per mask and `N`: the test of the lane's and its source's bits, and the reload's
    /// lanes.
    pub offset: f64,
    /// Per mask and `N`, when rows are checked: the test's `and` with the row check.
    pub offset_row: f64,
    /// Per `N`, when rows are checked: the row check.
    pub row: f64,
    /// Per mask, `N` and `N - N*` of a halo-served load: the lanes a move serves and
    /// those left to the reload (the halo's source test is an `offset` of `N - N*`).
    pub halo: f64,
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
    /// a few edge lanes one. The sequences of `back::dac_gpu`'s shuffled load:
    ///
    /// * no mask (a full warp): `shfl` with its validity and `not` (the reload is the
    ///   load), `and` with the row check (`add`, `setp` per `N`, shared);
    /// * under a mask (the original is `mov 0` and the guarded load): `shfl` and
    ///   `@!take mov 0`, 1 more; shared per mask the `vote.ballot`, per side its shift
    ///   (and `31 - %laneid` for the up side, counted with the side), per `N` the
    ///   `and`, `setp` and `xor` of the lane test, and its `and` with the row check;
    /// * a halo-served load with no mask: the two `shfl`s and the select, 2 more; with
    ///   rows `@!whole mov` and the reload, 2 more (the row alignment is shared);
    ///   under a mask: the two `shfl`s, two selects, 3 more, and per `N` and `N - N*`
    ///   the `or` and `xor` of the served and reloading lanes.
    pub fn dac_gpu(cfg: &sim::gpu::GpuConfig) -> Machine {
        let lanes = f64::from(cfg.simt_lanes_per_scheduler.max(1));
        let schedulers = f64::from(cfg.schedulers_per_sm.max(1));
        Machine {
            issue: f64::from(cfg.warp_size.max(1)) / lanes / schedulers,
            load_port: 2.0,
            reload_port: 0.0,
            reload_base: 1.0,
            extra_insts: 2.0,
            extra_row: 1.0,
            masked_insts: 1.0,
            masked_row: 0.0,
            halo_insts: 2.0,
            halo_row: 2.0,
            halo_masked: 3.0,
            halo_masked_row: 0.0,
            shared: Shared {
                mask: 1.0,
                side: 1.5,
                offset: 3.0,
                offset_row: 1.0,
                row: 2.0,
                halo: 2.0,
            },
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
            masked_insts: 7.0,
            masked_row: 3.0,
            halo_insts: 14.0,
            halo_row: 6.0,
            halo_masked: 14.0,
            halo_masked_row: 6.0,
            shared: Shared::default(),
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
    /// The instructions the rewrite of `p` (under `mask`) adds, with those of the
    /// block's shared instructions it is the first to need (recorded in `paid`), and
    /// the memory-pipeline cycles it saves. With `halo`, its edge lanes come from its
    /// halo; else it reloads them.
    fn rewrite(&self, p: &Pair, mask: Mask, halo: bool, paid: &mut Paid) -> (f64, f64) {
        let row = |c: f64| if p.row { c } else { 0.0 };
        if halo {
            let edge = p.edge.map_or(0, |e| e.delta);
            let per_load = match mask {
                Some(_) => {
                    let key = Key::Halo(mask, p.delta, edge);
                    self.halo_masked
                        + row(self.halo_masked_row)
                        + self.source_test(mask, p.delta, p.row, paid)
                        + self.source_test(mask, edge, p.row, paid)
                        + paid.take(key, self.shared.halo)
                }
                None => self.halo_insts + row(self.halo_row),
            };
            return (per_load, self.load_port);
        }
        let shared = match mask {
            Some(_) => self.source_test(mask, p.delta, p.row, paid),
            None if p.row => paid.take(Key::Row(p.delta), self.shared.row),
            None => 0.0,
        };
        (shared + self.reload_insts(p, mask), self.reload_saves(p))
    }

    /// The instructions of its own a shuffled load that reloads its edge lanes adds.
    fn reload_insts(&self, p: &Pair, mask: Mask) -> f64 {
        let (per_load, row) = match mask {
            Some(_) => (self.masked_insts, self.masked_row),
            None => (self.extra_insts, self.extra_row),
        };
        per_load + if p.row { row } else { 0.0 }
    }

    /// The memory-pipeline cycles a shuffled load that reloads its edge lanes saves.
    fn reload_saves(&self, p: &Pair) -> f64 {
        let n = f64::from(p.delta.unsigned_abs());
        self.load_port - self.reload_base - self.reload_port * n
    }

    /// The shared instructions of the test that lane `l + delta` is on under `mask`
    /// (and in the row) not yet paid.
    fn source_test(&self, mask: Mask, delta: i32, row: bool, paid: &mut Paid) -> f64 {
        let s = &self.shared;
        let mut c = paid.take(Key::Mask(mask), s.mask);
        c += paid.take(Key::Side(mask, delta > 0), s.side);
        c += paid.take(Key::Offset(mask, delta, row), s.offset);
        if row {
            c += paid.take(Key::Row(delta), s.row);
            c += paid.take(Key::OffsetRow(mask, delta), s.offset_row);
        }
        c
    }
}

/// A load's mask in the IR (`None`: every lane).
type Mask = Option<crate::ir::Value>;

/// A shared instruction group of [`Shared`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Mask(Mask),
    Side(Mask, bool),
    Offset(Mask, i32, bool),
    OffsetRow(Mask, i32),
    Row(i32),
    Halo(Mask, i32, i32),
}

/// The shared instruction groups a block has paid for, and those a change under
/// consideration would add.
#[derive(Default)]
struct Paid {
    done: rustc_hash::FxHashSet<Key>,
    pending: Vec<Key>,
}

impl Paid {
    /// `cost` if `key` is not paid yet (then pending), else 0.
    fn take(&mut self, key: Key, cost: f64) -> f64 {
        if cost == 0.0 || self.done.contains(&key) || self.pending.contains(&key) {
            return 0.0;
        }
        self.pending.push(key);
        cost
    }

    /// The change was taken (`true`) or not: its groups are paid, or forgotten.
    fn settle(&mut self, taken: bool) {
        let pending = std::mem::take(&mut self.pending);
        if taken {
            self.done.extend(pending);
        }
    }
}

/// What the model decided in one block that offered shuffles ([`select`]), in the
/// terms of its estimate (per warp on the GPU, per gang on nyuzi).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockChoice {
    pub block: crate::ir::Block,
    /// The block's issue cycles, memory-pipeline cycles and latency bound (0 where the
    /// model leaves latency out) before any rewrite.
    pub issue: f64,
    pub port: f64,
    pub wait: f64,
    /// Shuffled pairs offered and kept.
    pub offered: u32,
    pub kept: u32,
    /// The first shuffle declined: its `|N|`, the instructions it would add and the
    /// memory-pipeline cycles it would save.
    pub declined: Option<(u32, f64, f64)>,
}

impl BlockChoice {
    /// The resource that bounds the block before the rewrites.
    pub fn bound(&self) -> &'static str {
        if self.issue >= self.port && self.issue >= self.wait {
            "issue"
        } else if self.port >= self.wait {
            "the memory pipeline"
        } else {
            "latency"
        }
    }
}

/// Keeps the pairs of `shuffles` (of `func`) the model expects to pay on `machine`;
/// returns what it decided in each block that offered a shuffle.
pub fn select(
    func: &Function,
    shuffles: &mut FunctionShuffles,
    machine: &Machine,
) -> Vec<BlockChoice> {
    let (keep, own_edges, choices) = decide(func, shuffles, machine);
    shuffles.retain(|p| keep.contains(&p.load));
    shuffles.keep_own_edges(own_edges);
    shuffles.plan_halos(func);
    choices
}

/// `--emit asm` comment lines (each starting with `comment`) on `choices`, one per
/// block, named as `--emit ir` names them.
pub fn remarks(choices: &[BlockChoice], comment: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for c in choices {
        let _ = write!(
            out,
            "{comment} --shuffle auto, {}: {} of {} shuffles kept; issue {:.1}, memory pipeline {:.1}",
            c.block, c.kept, c.offered, c.issue, c.port
        );
        if c.wait > 0.0 {
            let _ = write!(out, ", latency {:.1}", c.wait);
        }
        let _ = write!(out, " cycles (bound by {})", c.bound());
        if let Some((n, extra, saved)) = c.declined {
            let _ = write!(
                out,
                "; the next, |N| = {n}, would add {extra:.1} instructions to save {saved:.1} memory-pipeline cycles"
            );
        }
        out.push('\n');
    }
    out
}

/// The loads whose pairs are kept, those of them that reload their own edge lanes
/// though they could take them from a halo (the reload is cheaper on `machine`), and
/// the blocks' choices.
fn decide(
    func: &Function,
    shuffles: &FunctionShuffles,
    machine: &Machine,
) -> (Loads, Loads, Vec<BlockChoice>) {
    let mut keep = Loads::default();
    let mut own_edges = Loads::default();
    let mut choices = Vec::new();
    for &block in &func.layout {
        let (mut state, mut shuffled) = scan(func, block, shuffles, machine, &mut keep);
        shuffled.sort_by_key(|s| s.0);
        let mut choice = BlockChoice {
            block,
            issue: state.issue,
            port: state.port,
            wait: machine.latency.map_or(0.0, |l| state.path / l.threads),
            offered: shuffled.len() as u32,
            kept: 0,
            declined: None,
        };
        let mut kept = Vec::new();
        let mut paid = Paid::default();
        for (n, p, mask) in shuffled {
            let (extra, saved) = machine.rewrite(&p, mask, false, &mut paid);
            let taken = state.try_change(machine, extra, saved);
            paid.settle(taken);
            if !taken {
                choice.declined = Some((n, extra, saved));
                break;
            }
            keep.insert(p.load);
            kept.push((p, mask));
        }
        choice.kept = kept.len() as u32;
        if choice.offered > 0 {
            choices.push(choice);
        }
        // Then the halos, each where its carrier is kept and it lowers the estimate
        // (the load's own reload, whose shared groups stay paid, gives way to it).
        for (p, mask) in kept {
            let Some(edge) = p.edge else {
                continue;
            };
            let (e1, s1) = (machine.reload_insts(&p, mask), machine.reload_saves(&p));
            let (e2, s2) = machine.rewrite(&p, mask, true, &mut paid);
            let taken = keep.contains(&edge.carrier) && state.try_change(machine, e2 - e1, s2 - s1);
            paid.settle(taken);
            if !taken {
                own_edges.insert(p.load);
            }
        }
    }
    (keep, own_edges, choices)
}

/// The resources of `block` as it is, and its shuffled pairs (`|N|`, pair, mask);
/// its plain reuses go straight into `keep`.
fn scan(
    func: &Function,
    block: crate::ir::Block,
    shuffles: &FunctionShuffles,
    machine: &Machine,
    keep: &mut Loads,
) -> (Estimate, Vec<(u32, Pair, Mask)>) {
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
            Some(p) => shuffled.push((p.delta.unsigned_abs(), *p, mask)),
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
