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
//!   a constant factor), written for this simulator's machine: every figure it uses
//!   is a parameter of the machine description ([`GpuConfig`], and the memory system
//!   the simulator builds from it, `sim::gpu::timing::mem_config`); nothing in it is
//!   fitted to measured runs. Per warp, over the allocated code, each instruction
//!   weighted by ten per enclosing loop (at most three; a loop is a backward
//!   branch's span):
//!   - `issue`: issue cycles, `warp_size / simt_lanes_per_scheduler` for a vector
//!     instruction plus its register-bank conflicts, one for the uniform datapath,
//!     the divide and f64 units' intervals for theirs;
//!   - `latency`: stall cycles of an in-order scoreboard run over each basic block
//!     alone: an instruction issues when its sources are ready, its result is
//!     ready its unit's latency later (a load's: shared memory's latency; global:
//!     an L2 hit, or an L1 hit for a decoupled load, which reads what the affine
//!     warp prefetched; local memory: an L1 hit for the share of the SM's resident
//!     threads' local bytes that L1 holds, an L2 hit for the rest, plus DRAM's
//!     latency for the share of all SMs' resident threads' local bytes that the L2
//!     cannot hold);
//!   - `lsu`: load/store-unit cycles, one per line transaction of a global or local
//!     access, one per shared access. The transactions come from
//!     [`super::lanes`]: a dataflow over the code gives each address its stride
//!     across a warp's lanes (uniform, `k` bytes per lane, or unknown: a gather),
//!     and the lines a warp's access touches follow from the stride and the line
//!     size (spill slots: CUDA's interleaved local layout, one line per word);
//!   - `l2_requests`: line requests sent past L1: every store transaction (L1 is
//!     write-through without allocation), the L1 misses of local loads (the share L1
//!     does not hold), and every line of a global load (decoupled ones through the
//!     affine warp's early requests; the others are taken to miss L1, as nothing in
//!     the code tells what of the data L1 still holds);
//!   - `miss_hold`: the cycles those load misses hold one of the L1's miss
//!     registers (`l2_latency` each; a spill line the L2 cannot hold,
//!     `dram_latency` more).
//!
//!   The busiest SM runs `B = ceil(blocks / num_sms)` blocks, in rounds of the `R`
//!   blocks occupancy lets it hold (the blocks the occupancy calculator allows from
//!   the allocated `.reg` and `.shared`, at most `B`), and a last round of what is
//!   left. A round of `n` warps takes the longest of: `n·issue / schedulers`
//!   (issue-bound); `n·lsu` (memory-unit-bound); `n·l2_requests·active_sms /
//!   l2_banks` (L2-bound: each of the `l2_partitions` banks accepts one request a
//!   cycle from all SMs with blocks); `n·miss_hold / l1_mshrs` (bound by the L1's
//!   miss registers, Little's law); the DRAM bandwidth all SMs share, taken by the
//!   spill slots' lines that reach the L2 (`local_lines`: local loads that miss L1,
//!   local stores) and miss it too: the share of all SMs' resident threads' local
//!   bytes beyond `l2_size` (a load's line is read once, a store's written back
//!   once when evicted); `issue + latency` (one warp's critical path, the
//!   other warps hidden under it: latency-bound). The predicted cycles are the sum
//!   over the rounds. The variant with the fewest predicted cycles wins; ties keep
//!   the one with fewer spills. Throughput bounds do not change with occupancy, so
//!   a kernel bound by them gains nothing from a cheaper budget and pays for its
//!   spill traffic: the predictor declines to demote or spill. What the model does
//!   not see (reuse of global data in L1, the kernel's own data's L2 and DRAM
//!   misses, queueing delays,
//!   dependencies across basic blocks, divergence) is where its choice and the
//!   exhaustive search's part (`spmdc bench regdem` reports both).

use rustc_hash::FxHashMap;
use sim::gpu::{
    occupancy, AddrBase, BlockResources, GpuConfig, Inst, Kernel, Op, RegFile, Space, Unit,
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
    /// The launch predicted for: threads per block and blocks.
    pub threads: u32,
    pub blocks: u64,
    /// Predicted cycles of the whole launch.
    pub cycles: f64,
    pub blocks_per_sm: u32,
    /// Per warp, loop-weighted: issue cycles, exposed latency, load/store-unit
    /// cycles, line requests sent past L1, and L1 miss-register cycles.
    pub issue: f64,
    pub latency: f64,
    pub lsu: f64,
    pub l2_requests: f64,
    pub miss_hold: f64,
    /// Local-memory line requests sent past L1 (spill slots' loads that miss L1,
    /// and stores).
    pub local_lines: f64,
    /// Which bound gave `cycles`.
    pub bound: Bound,
}

/// The resource that bounds a prediction ([`predict`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The schedulers' issue slots.
    Issue,
    /// The load/store unit's line transactions.
    Lsu,
    /// The L2 banks' request slots, shared by every SM.
    L2,
    /// The L1's miss registers.
    MissRegisters,
    /// DRAM bandwidth, taken by the spill slots' lines the L2 cannot hold.
    Dram,
    /// One warp's critical path per round of resident blocks.
    Latency,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Issue => "issue",
            Bound::Lsu => "load/store unit",
            Bound::L2 => "L2 banks",
            Bound::MissRegisters => "L1 miss registers",
            Bound::Dram => "DRAM",
            Bound::Latency => "latency",
        }
    }
}

/// Per-warp, loop-weighted costs of a kernel's code ([`per_warp_costs`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct WarpCosts {
    issue: f64,
    latency: f64,
    lsu: f64,
    l2_requests: f64,
    miss_hold: f64,
    local_lines: f64,
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

/// Per-warp loop-weighted costs of `kernel` on `machine`, with `local_hit` the share
/// of local loads that hit L1. Stalls come from an in-order scoreboard run over each
/// basic block alone (its values from elsewhere taken as ready): an instruction
/// issues when its sources are ready, and its result is ready its unit's latency
/// later; the block's stall is its length less its issue cycles. Memory costs come
/// from each access's line transactions ([`super::lanes::transactions`]).
fn per_warp_costs(kernel: &Kernel, machine: &GpuConfig, local: LocalShares) -> WarpCosts {
    let vector_issue =
        f64::from((machine.warp_size / machine.simt_lanes_per_scheduler.max(1)).max(1));
    let mut costs = WarpCosts::default();
    let starts = super::lanes::block_starts(kernel);
    let lines = super::lanes::transactions(kernel, machine.warp_size, machine.line_size);
    let mut ready: FxHashMap<(RegFile, u32), f64> = FxHashMap::default();
    let (mut clock, mut issued, mut weight) = (0.0, 0.0, 1.0);
    for (pc, (inst, depth)) in kernel
        .insts
        .iter()
        .zip(loop_depths(&kernel.insts))
        .enumerate()
    {
        if starts[pc] {
            costs.latency += weight * (clock - issued);
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
        costs.issue += weight * cost;
        let mem = memory_costs(inst, machine, lines[pc], local);
        costs.lsu += weight * mem.lsu;
        costs.l2_requests += weight * mem.l2_requests;
        costs.miss_hold += weight * mem.miss_hold;
        costs.local_lines += weight * mem.local_lines;
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
                    ready.insert((a.reg.file, a.reg.idx + k), start + mem.latency);
                }
            }
        });
    }
    costs.latency += weight * (clock - issued);
    costs
}

/// One instruction's costs: its result latency, load/store-unit cycles, line
/// requests sent past L1, and the cycles its L1 misses hold a miss register.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct InstCosts {
    latency: f64,
    lsu: f64,
    l2_requests: f64,
    miss_hold: f64,
    /// The local-memory share of `l2_requests`.
    local_lines: f64,
}

/// The costs of `inst`, an access of `lines` line transactions when it is one
/// (global and local only; a shared access is one LSU cycle), with `local_hit` the
/// share of local loads that hit L1. As in the simulator's memory system
/// (`sim::gpu::timing::mem_config`): L1 keeps no stores (write-through, no
/// allocation), so every store transaction is an L2 request; a load line that misses
/// L1 is an L2 request and holds one of the L1's miss registers until the L2
/// answers (`l2_latency`; an L2 hit is assumed, as nothing tells how much of the
/// data L2 holds); an atomic is a read and a write at the L2. A decoupled load's
/// lines were fetched by the affine warp's early requests, which take the same L2
/// requests and miss registers, but the warp finds them in L1. Other global loads
/// are taken to miss L1: what of the data L1 still holds depends on reuse the
/// code does not show.
fn memory_costs(inst: &Inst, machine: &GpuConfig, lines: f64, local: LocalShares) -> InstCosts {
    let cycles = |c: u32| f64::from(c);
    let (l1, l2) = (cycles(machine.l1_latency), cycles(machine.l2_latency));
    let alu = InstCosts {
        latency: cycles(machine.alu_latency),
        ..InstCosts::default()
    };
    let miss = |share: f64, latency: f64| InstCosts {
        latency,
        lsu: lines,
        l2_requests: share * lines,
        miss_hold: share * lines * l2,
        local_lines: 0.0,
    };
    let store = InstCosts {
        lsu: lines,
        l2_requests: lines,
        ..alu
    };
    if inst.uni {
        return InstCosts {
            latency: cycles(machine.uniform_latency),
            ..InstCosts::default()
        };
    }
    match inst.op {
        Op::Ld {
            space: Space::Global,
            addr,
            ..
        } if addr.base == AddrBase::DeqData => miss(1.0, l1),
        Op::Ld {
            space: Space::Global,
            ..
        } => miss(1.0, l2),
        Op::Ld {
            space: Space::Local,
            ..
        } => {
            // A line that misses the L2 too waits for DRAM as well.
            let past_l1 = l2 + local.l2_miss * cycles(machine.dram_latency);
            let share = 1.0 - local.l1_hit;
            InstCosts {
                latency: local.l1_hit * l1 + share * past_l1,
                lsu: lines,
                l2_requests: share * lines,
                miss_hold: share * lines * past_l1,
                local_lines: share * lines,
            }
        }
        Op::St {
            space: Space::Global,
            ..
        } => store,
        Op::St {
            space: Space::Local,
            ..
        } => InstCosts {
            local_lines: store.l2_requests,
            ..store
        },
        Op::Atom {
            space: Space::Global | Space::Local,
            ..
        } => InstCosts {
            latency: l2,
            lsu: lines,
            l2_requests: 2.0 * lines,
            miss_hold: 0.0,
            local_lines: 0.0,
        },
        Op::Ld {
            space: Space::Shared,
            ..
        }
        | Op::St {
            space: Space::Shared,
            ..
        }
        | Op::Atom {
            space: Space::Shared,
            ..
        } => InstCosts {
            latency: cycles(machine.shared_mem_latency),
            lsu: 1.0,
            ..InstCosts::default()
        },
        _ => InstCosts {
            latency: unit_latency(inst, machine),
            ..InstCosts::default()
        },
    }
}

/// The result latency of a non-memory instruction (a parameter load: an ALU's).
fn unit_latency(inst: &Inst, machine: &GpuConfig) -> f64 {
    f64::from(match inst.unit() {
        Unit::Mul => machine.mul_latency,
        Unit::F64 => machine.f64_latency,
        Unit::Div => machine.div_latency,
        _ => machine.alu_latency,
    })
}

/// The predicted cycles of `kernel` (allocated) launched in `blocks` blocks of
/// `threads` threads on `machine`; `None` when a block cannot run at all.
///
/// The busiest SM runs `B = ceil(blocks / num_sms)` blocks in rounds of `R` (what
/// occupancy allows, at most `B`): `B / R` full rounds and, when `R` does not
/// divide `B`, a last round of the `B mod R` blocks left ([`round_cycles`] each).
pub fn predict(
    kernel: &Kernel,
    machine: &GpuConfig,
    threads: u32,
    blocks: u64,
) -> Option<Prediction> {
    let occ = occupancy(machine, BlockResources::of(kernel, threads)).ok()?;
    let sms = u64::from(machine.num_sms.max(1));
    let blocks = blocks.max(1);
    let per_sm = blocks.div_ceil(sms);
    // Blocks an SM really holds: the grid may not fill what occupancy allows.
    let resident = u64::from(occ.blocks_per_sm.max(1)).min(per_sm);
    let active_sms = sms.min(blocks);
    let local = LocalShares {
        l1_hit: local_l1_share(machine, kernel.local_bytes, resident * u64::from(threads)),
        l2_miss: 1.0
            - local_l2_share(
                machine,
                kernel.local_bytes,
                resident * u64::from(threads) * active_sms,
            ),
    };
    let costs = per_warp_costs(kernel, machine, local);
    let shape = Shape {
        warps_per_block: f64::from(occ.warps_per_block.max(1)),
        active_sms: active_sms as f64,
        local_l2_miss: local.l2_miss,
    };
    let (full, rest) = (per_sm / resident, per_sm % resident);
    let (bound, round) = round_cycles(&costs, machine, shape, resident as f64);
    let mut cycles = full as f64 * round;
    if rest > 0 {
        cycles += round_cycles(&costs, machine, shape, rest as f64).1;
    }
    Some(Prediction {
        threads,
        blocks,
        cycles,
        blocks_per_sm: occ.blocks_per_sm,
        issue: costs.issue,
        latency: costs.latency,
        lsu: costs.lsu,
        l2_requests: costs.l2_requests,
        miss_hold: costs.miss_hold,
        local_lines: costs.local_lines,
        bound,
    })
}

/// Where spill slots' lines are found: the share of local loads that hit L1, and
/// the share of the lines sent past L1 that miss the L2 too.
#[derive(Clone, Copy, Debug)]
struct LocalShares {
    l1_hit: f64,
    l2_miss: f64,
}

/// What [`round_cycles`] needs of the launch besides the code's costs.
#[derive(Clone, Copy, Debug)]
struct Shape {
    warps_per_block: f64,
    /// SMs that have blocks: `min(num_sms, blocks)`; they share the L2.
    active_sms: f64,
    /// The share of local-memory lines sent past L1 that miss the L2 too.
    local_l2_miss: f64,
}

/// The cycles an SM takes to run `blocks` resident blocks to their end, `n`
/// warps in all, and the bound that gives them: the longest of
/// - issue: `n · issue / schedulers`;
/// - the load/store unit: `n · lsu` (one line transaction a cycle);
/// - the L2: `n · l2_requests · l2_port_cycles · active_sms / l2_banks`: each L2
///   bank takes one request every `l2_port_cycles`, from every SM with blocks;
/// - the L1's miss registers: `n · miss_hold / l1_mshrs` (a miss holds one until
///   its line arrives; 0 registers: no limit);
/// - DRAM: `n · local_lines · local_l2_miss · line_bytes · active_sms /
///   dram_bytes_per_cycle`: the spill slots' lines the L2 does not hold go to DRAM
///   (a load's once; a store's when its dirty line is evicted), over the bandwidth
///   all SMs share;
/// - latency: `issue + latency`, one warp's critical path, the other warps' work
///   hidden under it.
///
/// The L2 and miss-register figures are the simulator's own
/// ([`sim::gpu::timing::mem_config`] of the machine).
fn round_cycles(c: &WarpCosts, machine: &GpuConfig, shape: Shape, blocks: f64) -> (Bound, f64) {
    let warps = blocks * shape.warps_per_block;
    let mem = sim::gpu::timing::mem_config(machine);
    let l2_cycles =
        f64::from(mem.l2_port_cycles) * shape.active_sms / f64::from(mem.l2_banks.max(1));
    let per_mshr = if mem.l1_mshrs > 0 {
        1.0 / f64::from(mem.l1_mshrs)
    } else {
        0.0
    };
    let dram = if mem.dram.bytes_per_cycle > 0.0 {
        f64::from(mem.l2.line_bytes) * shape.active_sms / mem.dram.bytes_per_cycle
    } else {
        0.0
    };
    let bounds = [
        (
            Bound::Issue,
            warps * c.issue / f64::from(machine.schedulers_per_sm.max(1)),
        ),
        (Bound::Lsu, warps * c.lsu),
        (Bound::L2, warps * c.l2_requests * l2_cycles),
        (Bound::MissRegisters, warps * c.miss_hold * per_mshr),
        (
            Bound::Dram,
            warps * c.local_lines * shape.local_l2_miss * dram,
        ),
        (Bound::Latency, c.issue + c.latency),
    ];
    bounds.into_iter().fold(
        (Bound::Issue, 0.0),
        |best, b| if b.1 > best.1 { b } else { best },
    )
}

/// The share of local loads that hit L1 when `threads` threads, each with `bytes`
/// of local memory, share an SM's L1: the share of their slots L1 holds.
fn local_l1_share(machine: &GpuConfig, bytes: u32, threads: u64) -> f64 {
    held_share(machine.l1_size, bytes, threads)
}

/// The share of the local-memory lines reaching the L2 that it holds, when
/// `threads` resident threads of all SMs, each with `bytes` of local memory, share
/// it (the data the kernel reads competes for it too, which the model leaves out).
fn local_l2_share(machine: &GpuConfig, bytes: u32, threads: u64) -> f64 {
    held_share(machine.l2_size, bytes, threads)
}

/// The share of `threads` × `bytes` that a cache of `size` bytes holds.
fn held_share(size: u32, bytes: u32, threads: u64) -> f64 {
    let footprint = u64::from(bytes) * threads;
    if footprint == 0 {
        1.0
    } else {
        (f64::from(size) / footprint as f64).min(1.0)
    }
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
    /// The allocation's name: its placement (`spill-free` for a local one that
    /// spills nothing) and budget, `mixed @40`.
    pub fn name(&self) -> String {
        let place = match self.placement {
            Placement::Local if self.spill_slots == 0 => "spill-free",
            Placement::Local => "local",
            Placement::Shared => "shared",
            Placement::Mixed => "mixed",
        };
        format!("{place} @{}", self.budget)
    }

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
pub fn allocate(
    kernel: &mut Kernel,
    lines: &mut Vec<Option<Span>>,
    traps: &mut [(usize, &'static str)],
    options: &Options,
) -> Result<(RegReport, Vec<Candidate>), Diagnostic> {
    let threads = layout_threads(&options.machine, options.block_threads);
    let own = kernel.shared_bytes;
    // Every candidate starts from the same selected kernel, so they share its
    // machine form and linear scans.
    let prepared = alloc::Prepared::new(kernel, lines)
        .map_err(|m| alloc::RegError::internal(kernel, options.max_regs, m).diagnostic())?;
    let place = |k: &mut Kernel, lines: &mut Vec<Option<Span>>, traps: &mut [_], budget, p| {
        let room = room(&options.machine, p, threads, own, budget);
        alloc::allocate_selected(k, &prepared, lines, traps, budget, p, room)
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
    // Each budget's placements scan under it and (demoting) one register fewer.
    let scans: Vec<u32> = budgets
        .iter()
        .flat_map(|&b| [b, b.saturating_sub(1)])
        .collect();
    prepared.scan_ahead(&scans);
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

/// `--emit asm` comment lines on what `--regalloc auto` weighed (`candidates`, the
/// chosen one first): the launch it predicted for, then each allocation's registers,
/// spill slots, blocks per SM, predicted cycles and their bound, fastest first.
pub fn remarks(candidates: &[Candidate]) -> String {
    use std::fmt::Write;
    let Some(chosen) = candidates.first() else {
        return String::new();
    };
    let p = &chosen.prediction;
    let grid = if p.blocks == UNKNOWN_GRID_BLOCKS {
        "a grid of many blocks (no launch given)".to_string()
    } else {
        format!("a grid of {} blocks", p.blocks)
    };
    let mut out = format!(
        "// --regalloc auto: {} allocations weighed for blocks of {} threads and {grid};\n\
         // predicted cycles, fastest first (what bounds them):\n",
        candidates.len(),
        p.threads
    );
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&candidates[a].prediction, &candidates[b].prediction);
        x.cycles.total_cmp(&y.cycles)
    });
    for i in order {
        let c = &candidates[i];
        let slots = match (c.spill_slots, c.demoted_slots) {
            (0, _) => String::new(),
            (n, 0) => format!("{n} local slots"),
            (n, d) if d == n => format!("{n} shared slots"),
            (n, d) => format!("{n} slots, {d} shared"),
        };
        let cycles = crate::launch::stats_text::thousands(c.prediction.cycles.round() as u64);
        let _ = writeln!(
            out,
            "//   {:<16} {:>3} registers  {slots:<19} {:>2} blocks/SM {cycles:>17} ({}){}",
            c.name(),
            c.num_regs,
            c.prediction.blocks_per_sm,
            c.prediction.bound.name(),
            if i == 0 { "  <- chosen" } else { "" }
        );
    }
    out
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

    /// Fewer registers and more resident warps hide latency, and a throughput bound
    /// is the same at any occupancy. On the GTX 480, 512-thread blocks (16 warps) fit
    /// 2 an SM at 32 registers and 1 at 63; a grid of 30 puts 2 on each of its 15
    /// SMs. A chase through 8 uniform global loads (1 line each, L2 latency 120):
    /// one warp's path is `mov` (2 cycles, ready at 4), 8 loads each waiting for the
    /// last (issue at 4 + 120k, 2 cycles each), `exit`: 848 cycles. At 63 registers
    /// that is 2 rounds of 1 block, 1,696 cycles (16 warps' miss registers,
    /// 16·960/32 = 480, are fewer); at 32, one round of 2 blocks bound by the miss
    /// registers, 32·8·120/32 = 960 cycles.
    /// The same loads from one lane-strided address each (no chain) are bound by the
    /// L1's miss registers at both occupancies: the same cycles. Spill code costs
    /// issue and LSU cycles.
    #[test]
    fn the_predictor_weighs_occupancy_against_spill_code() {
        let m = GpuConfig::gtx480();
        let kernel = |regs: u32, body: &str| {
            let text = format!(".entry k()\n{{\n    .reg {regs};\n{body}    exit;\n}}\n");
            sim::gpu::parse(&text).expect("parses").kernels[0].clone()
        };
        let chase =
            "    mov.u32 %r2, 4096;\n".to_string() + &"    ld.global.u32 %r2, [%r2];\n".repeat(8);
        let (grid, threads) = (30, 512);
        let lean = predict(&kernel(32, &chase), &m, threads, grid).expect("runs");
        let fat = predict(&kernel(63, &chase), &m, threads, grid).expect("runs");
        assert_eq!((lean.blocks_per_sm, fat.blocks_per_sm), (2, 1));
        assert_eq!((lean.bound, lean.cycles), (Bound::MissRegisters, 960.0));
        assert_eq!((fat.bound, fat.cycles), (Bound::Latency, 1696.0));
        let strided = "    mov.u32 %r0, %tid.x;\n    shl.b32 %r1, %r0, 2;\n".to_string()
            + &"    ld.global.u32 %r2, [%r1];\n".repeat(8);
        let lean = predict(&kernel(32, &strided), &m, threads, grid).expect("runs");
        let fat = predict(&kernel(63, &strided), &m, threads, grid).expect("runs");
        assert_eq!(lean.bound, Bound::MissRegisters);
        assert_eq!(lean.cycles, fat.cycles);
        let spilled = kernel(
            32,
            &("    ld.local.b32 %r3, [0];\n    st.local.b32 [0], %r3;\n".to_string() + &chase),
        );
        let spilled = predict(&spilled, &m, threads, grid).expect("runs");
        let lean = predict(&kernel(32, &chase), &m, threads, grid).expect("runs");
        assert!(spilled.issue > lean.issue && spilled.lsu > lean.lsu);
    }

    /// A round's bounds on the GTX 480 (2 schedulers, 6 L2 banks taking a request a
    /// cycle, 32 L1 miss registers), 2 blocks of 4 warps on each of 15 SMs: issue
    /// 8·100/2 = 400; LSU 8·30 = 240; L2 8·10·15/6 = 200; miss registers
    /// 8·1,600/32 = 400 (ties keep the first, issue); latency 100 + 250 = 350.
    /// With miss_hold 2,000 the miss registers bound it: 8·2,000/32 = 500.
    #[test]
    fn a_round_takes_its_longest_bound() {
        let m = GpuConfig::gtx480();
        let mut shape = Shape {
            warps_per_block: 4.0,
            active_sms: 15.0,
            local_l2_miss: 0.0,
        };
        let mut c = WarpCosts {
            issue: 100.0,
            latency: 250.0,
            lsu: 30.0,
            l2_requests: 10.0,
            miss_hold: 1600.0,
            local_lines: 0.0,
        };
        assert_eq!(round_cycles(&c, &m, shape, 2.0), (Bound::Issue, 400.0));
        c.miss_hold = 2000.0;
        assert_eq!(
            round_cycles(&c, &m, shape, 2.0),
            (Bound::MissRegisters, 500.0)
        );
        c.l2_requests = 40.0; // 8·40·15/6 = 800
        assert_eq!(round_cycles(&c, &m, shape, 2.0), (Bound::L2, 800.0));
        // One block alone: 4 warps' issue 200, L2 400, but one warp's path 350 + 0.
        c.latency = 450.0; // 100 + 450 = 550 > 4·40·15/6 = 400
        assert_eq!(round_cycles(&c, &m, shape, 1.0), (Bound::Latency, 550.0));
        // Spill lines half of which miss the L2: 8 warps · 40 · 0.5 lines of 128
        // bytes from 15 SMs over 253 bytes a cycle = 1,214.2 cycles.
        (c.latency, c.local_lines, shape.local_l2_miss) = (250.0, 40.0, 0.5);
        let (bound, cycles) = round_cycles(&c, &m, shape, 2.0);
        assert_eq!(bound, Bound::Dram);
        assert!(
            (cycles - 160.0 * 128.0 * 15.0 / 253.0).abs() < 1e-9,
            "{cycles}"
        );
    }

    /// Memory costs on the GTX 480 (L1 20 cycles, L2 120): a local load of one line
    /// with a quarter of the slots in L1 waits 0.25·20 + 0.75·120 = 95 cycles and
    /// sends 0.75 requests to the L2, each holding a miss register 120 cycles (90);
    /// a store sends all its lines to the L2 and holds none; a decoupled load finds
    /// its lines in L1 (20 cycles) but they were fetched through the L2 (2 lines,
    /// 240 register cycles); a shared access is one LSU cycle at shared latency.
    #[test]
    fn memory_costs_follow_the_memory_system() {
        let m = GpuConfig::gtx480();
        let inst = |text: &str| {
            let k = sim::gpu::parse(&format!(
                ".entry k()\n{{\n    .reg 8;\n    {text}\n    exit;\n}}\n"
            ))
            .expect("parses");
            k.kernels[0].insts[0]
        };
        let quarter = LocalShares {
            l1_hit: 0.25,
            l2_miss: 0.0,
        };
        let none = LocalShares {
            l1_hit: 0.0,
            l2_miss: 0.0,
        };
        let local = memory_costs(&inst("ld.local.b32 %r1, [8];"), &m, 1.0, quarter);
        assert_eq!(
            local,
            InstCosts {
                latency: 95.0,
                lsu: 1.0,
                l2_requests: 0.75,
                miss_hold: 90.0,
                local_lines: 0.75,
            }
        );
        // Half of the lines past L1 missing the L2 too wait DRAM's 220 cycles more:
        // 0.25·20 + 0.75·(120 + 110) = 177.5, and hold a register 0.75·230.
        let deep = LocalShares {
            l2_miss: 0.5,
            ..quarter
        };
        let local = memory_costs(&inst("ld.local.b32 %r1, [8];"), &m, 1.0, deep);
        assert_eq!((local.latency, local.miss_hold), (177.5, 172.5));
        let store = memory_costs(&inst("st.global.f32 [%rd2], %r1;"), &m, 2.0, quarter);
        assert_eq!(
            (store.lsu, store.l2_requests, store.miss_hold),
            (2.0, 2.0, 0.0)
        );
        let queued = memory_costs(&inst("ld.global.f32 %r1, [deq.data];"), &m, 2.0, none);
        assert_eq!(
            (queued.latency, queued.l2_requests, queued.miss_hold),
            (20.0, 2.0, 240.0)
        );
        let shared = memory_costs(&inst("ld.shared.f32 %r1, [%r2];"), &m, 0.0, none);
        assert_eq!(
            (shared.latency, shared.lsu, shared.l2_requests),
            (24.0, 1.0, 0.0)
        );
    }

    /// The grid's last, partial round: on the GTX 480 (15 SMs) 64 blocks put
    /// ceil(64/15) = 5 on the busiest SM; with 2 resident that is two full rounds and
    /// a round of one block, with 5 resident a single round of five. A kernel of one
    /// ALU instruction and `exit` (issue 2 + 2 = 4 a warp, latency 0) of 256-thread
    /// blocks (8 warps): 2·(16·4/2) + max(8·4/2, 4) = 64 + 16 = 80 cycles at 61
    /// registers; 40·4/2 = 80 at 24; every round issue-bound.
    #[test]
    fn the_busiest_sm_runs_full_rounds_and_a_last_partial_one() {
        let m = GpuConfig::gtx480();
        let kernel = |regs: u32| {
            let text = format!(
                ".entry k()\n{{\n    .reg {regs};\n    add.u32 %r0, %r0, 1;\n    exit;\n}}\n"
            );
            sim::gpu::parse(&text).expect("parses").kernels[0].clone()
        };
        let two = predict(&kernel(61), &m, 256, 64).expect("runs");
        assert_eq!(
            (two.blocks_per_sm, two.cycles, two.bound),
            (2, 80.0, Bound::Issue)
        );
        let five = predict(&kernel(24), &m, 256, 64).expect("runs");
        assert_eq!((five.blocks_per_sm, five.cycles), (5, 80.0));
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
