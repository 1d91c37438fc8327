//! The dac-gpu side of the energy model ([`crate::energy`]): which events a warp
//! instruction counts, and the per-event energies from the machine configuration
//! (the `energy_*_fj` keys of [`GpuConfig`](super::GpuConfig), in femtojoules;
//! static power from `leakage_power_mw` and `constant_power_mw`).
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

use super::isa::{BinOp, Inst, Op, Space, Src, Type, UnOp, Unit};
use crate::energy::{AluClass, CacheEnergy, EnergyTable, Events};

/// 32-bit words of an Affine Tuple Queue entry: a 64-bit base, a 32-bit offset and
/// the access's type and width.
pub const ATQ_ENTRY_WORDS: u64 = 4;
/// 32-bit words a per-warp address queue record holds per cache line: the 64-bit
/// line address and the 32-bit mask of the words the lanes access (paper §4.2 ④).
pub const PWAQ_LINE_WORDS: u64 = 3;
/// 32-bit words of a per-warp predicate queue entry: one lane mask.
pub const PWPQ_ENTRY_WORDS: u64 = 1;

/// The ALU class of `inst`, `None` for memory, control and queue instructions. As in
/// GPGPU-Sim, a remainder is an ordinary ALU operation (only `div` is a divide).
pub fn alu_class(inst: &Inst) -> Option<AluClass> {
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
            alu: alu_class(inst),
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
}

impl super::GpuConfig {
    /// The configuration's per-event energies, static power and clock.
    pub fn energy_table(&self) -> EnergyTable {
        EnergyTable {
            instruction_fj: self.energy_instruction_fj,
            typed_instruction_fj: self.energy_typed_instruction_fj,
            rf_read_fj: self.energy_rf_read_fj,
            rf_write_fj: self.energy_rf_write_fj,
            nonreg_operand_fj: self.energy_nonreg_operand_fj,
            alu_fj: [
                self.energy_int_fj,
                self.energy_int_mul_fj,
                self.energy_int_mul64_fj,
                self.energy_int_div_fj,
                self.energy_fp_fj,
                self.energy_fp_mul_fj,
                self.energy_fp_div_fj,
                self.energy_sfu_fj,
            ],
            l1: CacheEnergy {
                read_hit_fj: self.energy_l1_read_hit_fj,
                read_miss_fj: self.energy_l1_read_miss_fj,
                write_hit_fj: self.energy_l1_write_hit_fj,
                write_miss_fj: self.energy_l1_write_miss_fj,
            },
            l2: CacheEnergy {
                read_hit_fj: self.energy_l2_read_hit_fj,
                read_miss_fj: self.energy_l2_read_miss_fj,
                write_hit_fj: self.energy_l2_write_hit_fj,
                write_miss_fj: self.energy_l2_write_miss_fj,
            },
            dram_read_fj: self.energy_dram_read_fj,
            dram_write_fj: self.energy_dram_write_fj,
            noc_flit_fj: self.energy_noc_flit_fj,
            shared_fj: self.energy_shared_fj,
            const_fj: self.energy_const_fj,
            queue_write_fj: self.energy_queue_write_fj,
            queue_read_fj: self.energy_queue_read_fj,
            leakage_power_mw: self.leakage_power_mw,
            constant_power_mw: self.constant_power_mw,
            clock_mhz: self.core_clock_mhz,
        }
    }
}
