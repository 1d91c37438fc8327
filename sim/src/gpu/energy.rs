//! The energy model of the dac-gpu timing model: the events a timing run counts
//! ([`Events`]) times per-event energies from the machine configuration (the
//! `energy_*_fj` keys of [`GpuConfig`], in femtojoules), plus static power
//! (`leakage_power_mw`, `constant_power_mw`) times the run's time.
//!
//! The events and their unit follow GPUWattch (Leng et al., ISCA 2013) as GPGPU-Sim
//! 3.2.2 drives it, the simulator and power model the DAC paper evaluated with:
//! - Register-file reads and writes are lane accesses. GPUWattch's GTX 480
//!   configuration does not clock-gate the register file, so a vector warp
//!   instruction reads `warp_size` lanes per source register and writes `warp_size`
//!   per destination, whatever its mask (a 64-bit register pair is two registers);
//!   an immediate or special-register source costs `warp_size` operand-collector
//!   lanes (`NON_REG_OPs`).
//!   The uniform datapath (`.uni`) reads and writes one lane.
//! - ALU operations are lane operations by class ([`AluClass`], GPGPU-Sim's
//!   `sp_op`): active lanes count whole and idle lanes half (GPGPU-Sim's
//!   `inactive_lanes_accesses_nonsfu`, lanes not clock-gated); a uniform instruction
//!   is one lane operation. Each class's energy carries GPGPU-Sim's per-class weight
//!   (`incexecstat`: 25 for an integer operation, 1.8 for a float multiply, ...).
//! - Every warp instruction (vector, uniform or the affine warp's) is fetched,
//!   decoded and issued once (`instructions`); those with an integer or float
//!   operand type, every one but control flow, barriers and fences, also pay
//!   GPUWattch's `FP_INT` per-instruction energy (`typed_instructions`, GPGPU-Sim's
//!   `set_fp_or_int_archop`).
//! - L1 and L2 accesses are line transactions, split by read/write and hit/miss;
//!   DRAM traffic is priced per 64-byte burst (GPGPU-Sim's GTX 480 DRAM atom: burst
//!   length 8 × 4-byte bus × 2 chips); the interconnect per 32-byte flit
//!   ([`crate::mem::MemorySystem::noc_flits`]); shared memory per bank-access cycle (a k-way
//!   conflict is k cycles, GPGPU-Sim's `gpgpu_n_shmem_bank_access`); kernel-parameter
//!   loads are constant-cache hits.
//! - DAC: the affine warp runs on the SIMT lanes (paper §4.1), so an affine
//!   instruction is a warp instruction with two active lanes, base and offset. The
//!   queues are small register arrays: a push writes and a pop reads its entry's
//!   32-bit words ([`ATQ_ENTRY_WORDS`], [`PWAQ_LINE_WORDS`], [`PWPQ_ENTRY_WORDS`]) at
//!   the register file's per-lane energy. The expansion units' work is integer ALU
//!   operations: one per AEU line step, and the PEU's compares (1 on its uniform
//!   path, 2 on its fast path, `warp_size` on its slow path).
//!
//! The default energies (`sim/configs/*.toml`) are GPUWattch's own per-access
//! figures for its GTX 480 configuration; `lang-spec/dac-hardware.md` (*Energy*)
//! gives each one's source and derivation.

use super::config::GpuConfig;
use super::isa::{BinOp, Inst, Op, Space, Src, Type, UnOp, Unit};
use super::stats::StatValue;

/// 32-bit words of an Affine Tuple Queue entry: a 64-bit base, a 32-bit offset and
/// the access's type and width.
pub const ATQ_ENTRY_WORDS: u64 = 4;
/// 32-bit words a per-warp address queue record holds per cache line: the 64-bit
/// line address and the 32-bit mask of the words the lanes access (paper §4.2 ④).
pub const PWAQ_LINE_WORDS: u64 = 3;
/// 32-bit words of a per-warp predicate queue entry: one lane mask.
pub const PWPQ_ENTRY_WORDS: u64 = 1;

/// An instruction's ALU class, as GPGPU-Sim 3.2.2 classifies it for GPUWattch
/// (`ptx_instruction::set_mul_div_or_other_archop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AluClass {
    /// Integer add, logic, shift, compare, select, move, conversion, remainder
    /// (`INT__OP`).
    Int,
    /// 32-bit integer multiply and multiply-add (`INT_MUL32_OP`, on the SFU).
    IntMul,
    /// 64-bit integer multiply and multiply-add (`INT_MUL_OP`, on the FPU).
    IntMul64,
    /// Integer divide (`INT_DIV_OP`, on the SFU).
    IntDiv,
    /// Float add, compare, conversion, move, remainder (`FP__OP`).
    Fp,
    /// Float multiply and multiply-add (`FP_MUL_OP`).
    FpMul,
    /// Float divide (`FP_DIV_OP`).
    FpDiv,
    /// Square root (`FP_SQRT_OP`, on the SFU).
    Sfu,
}

impl AluClass {
    pub const ALL: [AluClass; 8] = [
        AluClass::Int,
        AluClass::IntMul,
        AluClass::IntMul64,
        AluClass::IntDiv,
        AluClass::Fp,
        AluClass::FpMul,
        AluClass::FpDiv,
        AluClass::Sfu,
    ];

    /// The statistic counting this class's lane operations.
    pub fn stat_name(self) -> &'static str {
        match self {
            AluClass::Int => "alu_int",
            AluClass::IntMul => "alu_int_mul",
            AluClass::IntMul64 => "alu_int_mul64",
            AluClass::IntDiv => "alu_int_div",
            AluClass::Fp => "alu_fp",
            AluClass::FpMul => "alu_fp_mul",
            AluClass::FpDiv => "alu_fp_div",
            AluClass::Sfu => "alu_sfu",
        }
    }

    /// The class of `inst`, `None` for memory, control and queue instructions. As in
    /// GPGPU-Sim, a remainder is an ordinary ALU operation (only `div` is a divide).
    pub fn of(inst: &Inst) -> Option<AluClass> {
        let float = |t: Type| t.is_float();
        Some(match inst.op {
            Op::Un { op: UnOp::Sqrt, .. } => AluClass::Sfu,
            Op::Bin {
                op: BinOp::Div, ty, ..
            } => div_class(float(ty)),
            Op::Bin {
                op: BinOp::Mul | BinOp::MulHi,
                ty,
                ..
            }
            | Op::Mad { ty, .. } => mul_class(ty),
            Op::Bin { ty, .. } | Op::Un { ty, .. } | Op::Setp { ty, .. } | Op::Selp { ty, .. } => {
                add_class(float(ty))
            }
            Op::Cvt { dty, sty, .. } => add_class(float(dty) || float(sty)),
            Op::Vote { .. } | Op::Shfl { .. } => AluClass::Int,
            _ => return None,
        })
    }

    fn index(self) -> usize {
        self as usize
    }
}

fn div_class(float: bool) -> AluClass {
    if float {
        AluClass::FpDiv
    } else {
        AluClass::IntDiv
    }
}

fn mul_class(ty: Type) -> AluClass {
    match (ty.is_float(), ty.is_wide()) {
        (true, _) => AluClass::FpMul,
        (false, true) => AluClass::IntMul64,
        (false, false) => AluClass::IntMul,
    }
}

fn add_class(float: bool) -> AluClass {
    if float {
        AluClass::Fp
    } else {
        AluClass::Int
    }
}

/// What executing one static instruction once costs in events, before lanes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InstEnergy {
    /// Registers read (guard predicate included; a 64-bit pair is two; the affine
    /// warp's tuple registers `%a` count as registers, as they live in the register
    /// file).
    pub reg_reads: u8,
    /// Registers written.
    pub reg_writes: u8,
    /// Source operands that are not registers (immediates, special registers): they
    /// still pass the operand collector (GPUWattch's `NON_REG_OPs`).
    pub other_operands: u8,
    pub alu: Option<AluClass>,
    /// Has an integer or float operand type: all but control flow, barriers,
    /// fences and `nop` (GPUWattch's `FP_INT` instructions).
    pub typed: bool,
    /// A kernel-parameter load (a constant-cache access).
    pub param_load: bool,
}

impl InstEnergy {
    pub fn of(inst: &Inst) -> InstEnergy {
        let mut e = InstEnergy {
            alu: AluClass::of(inst),
            other_operands: non_register_sources(inst),
            typed: !matches!(inst.unit(), Unit::Ctrl) && inst.op != Op::Nop,
            param_load: matches!(
                inst.op,
                Op::Ld {
                    space: Space::Param,
                    ..
                }
            ),
            ..InstEnergy::default()
        };
        inst.for_each_reg(|a| {
            let n = if a.wide { 2 } else { 1 };
            if a.def {
                e.reg_writes = e.reg_writes.saturating_add(n);
            } else {
                e.reg_reads = e.reg_reads.saturating_add(n);
            }
        });
        e
    }
}

/// The source operands of `inst` that are not registers.
fn non_register_sources(inst: &Inst) -> u8 {
    let srcs: [Option<Src>; 3] = match inst.op {
        Op::Bin { a, b, .. } | Op::Setp { a, b, .. } | Op::Selp { a, b, .. } => {
            [Some(a), Some(b), None]
        }
        Op::EnqPred { a, b, .. } | Op::EnqSel { a, b, .. } => [Some(a), Some(b), None],
        Op::Un { a, .. } | Op::Cvt { a, .. } | Op::St { a, .. } => [Some(a), None, None],
        Op::Mad { a, b, c, .. } => [Some(a), Some(b), Some(c)],
        Op::Atom { a, b, .. } => [Some(a), b, None],
        Op::Shfl { a, lane, clamp, .. } => [Some(a), Some(lane), Some(clamp)],
        _ => [None; 3],
    };
    srcs.iter()
        .flatten()
        .filter(|s| !matches!(s, Src::Reg(_)))
        .count() as u8
}

/// How an instruction occupies the lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lanes {
    /// A vector warp instruction on `warp` lanes of which `active` are active.
    Vector { active: u32, warp: u32 },
    /// An instruction of the uniform datapath: one lane.
    Scalar,
}

impl Lanes {
    /// Register-file lanes accessed per register operand.
    fn register_lanes(self) -> u64 {
        match self {
            Lanes::Vector { warp, .. } => u64::from(warp),
            Lanes::Scalar => 1,
        }
    }

    /// ALU lane operations: active lanes whole, idle lanes half (rounded down).
    fn alu_lanes(self) -> u64 {
        match self {
            Lanes::Vector { active, warp } => {
                let active = active.min(warp);
                u64::from(active) + u64::from((warp - active) >> 1)
            }
            Lanes::Scalar => 1,
        }
    }
}

/// The events of a timing run the energy model prices.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Events {
    /// Warp instructions fetched, decoded and issued (non-affine and affine).
    pub instructions: u64,
    /// Those with an integer or float operand type ([`InstEnergy::typed`]).
    pub typed_instructions: u64,
    pub rf_reads: u64,
    pub rf_writes: u64,
    /// Non-register source operands, per lane as register reads.
    pub rf_nonreg_operands: u64,
    /// Lane operations per [`AluClass`] (in [`AluClass::ALL`] order).
    pub alu: [u64; 8],
    pub l1_read_hits: u64,
    pub l1_read_misses: u64,
    pub l1_write_hits: u64,
    pub l1_write_misses: u64,
    pub l2_read_hits: u64,
    pub l2_read_misses: u64,
    pub l2_write_hits: u64,
    pub l2_write_misses: u64,
    /// DRAM bursts ([`crate::mem::dram::BURST_BYTES`] each).
    pub dram_read_bursts: u64,
    pub dram_write_bursts: u64,
    /// Interconnect flits between the L1s and the L2.
    pub noc_flits: u64,
    /// Shared-memory bank-access cycles.
    pub shared_accesses: u64,
    /// Kernel-parameter loads (constant cache).
    pub const_accesses: u64,
    /// DAC: 32-bit queue words written (pushes) and read (pops).
    pub queue_words_written: u64,
    pub queue_words_read: u64,
    /// DAC: integer operations of the expansion units.
    pub expand_ops: u64,
}

impl Events {
    /// Counts one issue of an instruction costing `e` on `lanes`.
    pub fn issue(&mut self, e: &InstEnergy, lanes: Lanes) {
        self.instructions += 1;
        let rf = lanes.register_lanes();
        self.rf_reads += u64::from(e.reg_reads) * rf;
        self.rf_writes += u64::from(e.reg_writes) * rf;
        self.rf_nonreg_operands += u64::from(e.other_operands) * rf;
        self.const_accesses += u64::from(e.param_load);
        self.typed_instructions += u64::from(e.typed);
        if let Some(c) = e.alu {
            self.alu[c.index()] += lanes.alu_lanes();
        }
    }

    /// Lane operations of class `c`.
    pub fn alu_ops(&self, c: AluClass) -> u64 {
        self.alu[c.index()]
    }

    /// Adds the instruction-side counts of `o` (what the affine warps counted).
    pub fn add_issued(&mut self, o: &Events) {
        self.instructions += o.instructions;
        self.typed_instructions += o.typed_instructions;
        self.rf_reads += o.rf_reads;
        self.rf_writes += o.rf_writes;
        self.rf_nonreg_operands += o.rf_nonreg_operands;
        self.const_accesses += o.const_accesses;
        for (a, b) in self.alu.iter_mut().zip(o.alu) {
            *a += b;
        }
    }

    /// The counts as (statistic name, value).
    pub fn pairs(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("fetched_instructions", self.instructions),
            ("typed_instructions", self.typed_instructions),
            ("rf_reads", self.rf_reads),
            ("rf_writes", self.rf_writes),
            ("rf_nonreg_operands", self.rf_nonreg_operands),
        ];
        v.extend(
            AluClass::ALL
                .iter()
                .map(|&c| (c.stat_name(), self.alu_ops(c))),
        );
        v.extend([
            ("l1_read_hits", self.l1_read_hits),
            ("l1_read_misses", self.l1_read_misses),
            ("l1_write_hits", self.l1_write_hits),
            ("l1_write_misses", self.l1_write_misses),
            ("l2_read_hits", self.l2_read_hits),
            ("l2_read_misses", self.l2_read_misses),
            ("l2_write_hits", self.l2_write_hits),
            ("l2_write_misses", self.l2_write_misses),
            ("dram_read_bursts", self.dram_read_bursts),
            ("dram_write_bursts", self.dram_write_bursts),
            ("noc_flits", self.noc_flits),
            ("shared_accesses", self.shared_accesses),
            ("const_accesses", self.const_accesses),
            ("queue_words_written", self.queue_words_written),
            ("queue_words_read", self.queue_words_read),
            ("queue_expand_ops", self.expand_ops),
        ]);
        v
    }
}

/// A run's energy by component, in nanojoules.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Energy {
    /// Instruction fetch, decode and issue.
    pub frontend: f64,
    pub alu: f64,
    pub rf: f64,
    pub l1: f64,
    pub l2: f64,
    pub dram: f64,
    /// The interconnect between the L1s and the L2.
    pub noc: f64,
    pub shared: f64,
    pub constant: f64,
    /// DAC queues and expansion units.
    pub queue: f64,
    /// Leakage and constant (clock) power over the run's time.
    pub static_: f64,
}

/// Femtojoules to nanojoules.
fn nj(count: u64, fj: u32) -> f64 {
    count as f64 * f64::from(fj) * 1e-6
}

impl Energy {
    /// The energy of `e` over `cycles` core cycles on machine `cfg`.
    pub fn of(e: &Events, cycles: u64, cfg: &GpuConfig) -> Energy {
        let alu_fj = |c: AluClass| match c {
            AluClass::Int => cfg.energy_int_fj,
            AluClass::IntMul => cfg.energy_int_mul_fj,
            AluClass::IntMul64 => cfg.energy_int_mul64_fj,
            AluClass::IntDiv => cfg.energy_int_div_fj,
            AluClass::Fp => cfg.energy_fp_fj,
            AluClass::FpMul => cfg.energy_fp_mul_fj,
            AluClass::FpDiv => cfg.energy_fp_div_fj,
            AluClass::Sfu => cfg.energy_sfu_fj,
        };
        let seconds = if cfg.core_clock_mhz == 0 {
            0.0
        } else {
            cycles as f64 / (f64::from(cfg.core_clock_mhz) * 1e6)
        };
        let static_mw = f64::from(cfg.leakage_power_mw) + f64::from(cfg.constant_power_mw);
        Energy {
            frontend: nj(e.instructions, cfg.energy_instruction_fj)
                + nj(e.typed_instructions, cfg.energy_typed_instruction_fj),
            alu: AluClass::ALL
                .iter()
                .map(|&c| nj(e.alu_ops(c), alu_fj(c)))
                .sum(),
            rf: nj(e.rf_reads, cfg.energy_rf_read_fj)
                + nj(e.rf_writes, cfg.energy_rf_write_fj)
                + nj(e.rf_nonreg_operands, cfg.energy_nonreg_operand_fj),
            l1: nj(e.l1_read_hits, cfg.energy_l1_read_hit_fj)
                + nj(e.l1_read_misses, cfg.energy_l1_read_miss_fj)
                + nj(e.l1_write_hits, cfg.energy_l1_write_hit_fj)
                + nj(e.l1_write_misses, cfg.energy_l1_write_miss_fj),
            l2: nj(e.l2_read_hits, cfg.energy_l2_read_hit_fj)
                + nj(e.l2_read_misses, cfg.energy_l2_read_miss_fj)
                + nj(e.l2_write_hits, cfg.energy_l2_write_hit_fj)
                + nj(e.l2_write_misses, cfg.energy_l2_write_miss_fj),
            dram: nj(e.dram_read_bursts, cfg.energy_dram_read_fj)
                + nj(e.dram_write_bursts, cfg.energy_dram_write_fj),
            noc: nj(e.noc_flits, cfg.energy_noc_flit_fj),
            shared: nj(e.shared_accesses, cfg.energy_shared_fj),
            constant: nj(e.const_accesses, cfg.energy_const_fj),
            queue: nj(e.queue_words_written, cfg.energy_queue_write_fj)
                + nj(e.queue_words_read, cfg.energy_queue_read_fj)
                + nj(e.expand_ops, cfg.energy_int_fj),
            static_: static_mw * 1e-3 * seconds * 1e9,
        }
    }

    /// Dynamic energy: every component but the static one.
    pub fn dynamic(&self) -> f64 {
        self.frontend
            + self.alu
            + self.rf
            + self.l1
            + self.l2
            + self.dram
            + self.noc
            + self.shared
            + self.constant
            + self.queue
    }

    pub fn total(&self) -> f64 {
        self.dynamic() + self.static_
    }

    /// The figures as (statistic name, nanojoules).
    pub fn pairs(&self) -> Vec<(&'static str, StatValue)> {
        use StatValue::F64;
        vec![
            ("energy_frontend_nj", F64(self.frontend)),
            ("energy_alu_nj", F64(self.alu)),
            ("energy_rf_nj", F64(self.rf)),
            ("energy_l1_nj", F64(self.l1)),
            ("energy_l2_nj", F64(self.l2)),
            ("energy_dram_nj", F64(self.dram)),
            ("energy_noc_nj", F64(self.noc)),
            ("energy_shared_nj", F64(self.shared)),
            ("energy_const_nj", F64(self.constant)),
            ("energy_queue_nj", F64(self.queue)),
            ("energy_dynamic_nj", F64(self.dynamic())),
            ("energy_static_nj", F64(self.static_)),
            ("energy_total_nj", F64(self.total())),
        ]
    }
}
