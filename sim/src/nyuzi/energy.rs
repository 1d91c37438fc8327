//! The Nyuzi side of the energy model ([`crate::energy`]): the events one executed
//! instruction counts ([`InstCost`]) and the per-event energies of a Nyuzi core
//! ([`default_table`]).
//!
//! No per-event energies of a Nyuzi chip are published (its papers give FPGA
//! resources and clock rates, not energies), so the defaults are GPUWattch's GTX 480
//! figures, the same 40 nm technology point the dac-gpu model prices: per lane for the
//! register file and the ALUs, per instruction for fetch and decode, per line
//! transaction for the caches scaled to Nyuzi's 64-byte lines from the GTX 480's
//! 128 (a transaction's energy taken as proportional to the bytes it moves), per
//! 64-byte burst for DRAM. Static power is left out: GPUWattch's is a 15-SM chip's,
//! and nothing gives a Nyuzi core's. The estimate therefore compares Nyuzi runs
//! with each other (what a pass or a launch shape saves); it is not a Nyuzi chip's
//! energy, and not comparable with dac-gpu's totals.
//!
//! How instructions count, following Nyuzi's pipeline (notes §8):
//! - every issue slot fetches and decodes an instruction, a load re-issued after its
//!   miss included (`fetched_instructions`); arithmetic and memory instructions also
//!   count as typed (`FP_INT`), branches and cache control do not;
//! - the register file is read and written per lane: a scalar register is one lane,
//!   a vector register 16, whatever the mask (the lanes are not clock-gated; a
//!   masked write only gates the write enables, and the old destination a masked
//!   form keeps is not read);
//! - the ALUs compute all 16 lanes of a vector-form operation (the mask only gates
//!   the write-back), one lane of a scalar one; compares and `getlane` in vector
//!   form are 16 lane operations although they write a scalar;
//! - classes: integer multiplies are `alu_int_mul`, float add, subtract, compare and
//!   conversions `alu_fp`, float multiply `alu_fp_mul`, the reciprocal estimate
//!   `alu_sfu` (a special-function approximation), everything else `alu_int`;
//! - the L1D's and L2's line transactions and DRAM bursts come from the memory
//!   system's counters; the L1I's are in the per-instruction fetch energy, as in
//!   GPUWattch (an instruction-cache hit per instruction).

use super::isa::{AluOp, IFmt, Inst};
use super::timing::{regs, RegSet};
use crate::energy::{AluClass, EnergyTable, Events};
use crate::mem::CacheConfig;

/// Lanes of a vector register and of a vector operation.
const LANES: u8 = 16;

/// What one execution of an instruction counts, before the memory system's share.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstCost {
    /// Register-file lanes read and written.
    pub rf_reads: u8,
    pub rf_writes: u8,
    pub alu: Option<AluClass>,
    /// ALU lane operations (16 for a vector form, 1 for a scalar one).
    pub alu_lanes: u8,
    /// An arithmetic or memory instruction (GPUWattch's `FP_INT`).
    pub typed: bool,
}

impl InstCost {
    pub fn of(inst: &Inst) -> InstCost {
        let set = regs(inst);
        let (alu, vector) = alu_op(inst);
        InstCost {
            rf_reads: read_lanes(&set).saturating_sub(merged_dest_lanes(inst)),
            rf_writes: set.dest().map_or(0, lanes_of),
            alu,
            alu_lanes: match (alu, vector) {
                (None, _) => 0,
                (Some(_), true) => LANES,
                (Some(_), false) => 1,
            },
            typed: !matches!(inst, Inst::Branch { .. } | Inst::Cache { .. })
                && !matches!(
                    inst,
                    Inst::Reg {
                        op: AluOp::Break,
                        ..
                    } | Inst::Imm {
                        op: AluOp::Syscall,
                        ..
                    }
                ),
        }
    }

    /// Counts one execution into `e` (the fetch is counted per issue slot).
    pub fn count(&self, e: &mut Events) {
        e.typed_instructions += u64::from(self.typed);
        e.rf_reads += u64::from(self.rf_reads);
        e.rf_writes += u64::from(self.rf_writes);
        if let Some(c) = self.alu {
            e.alu[c.index()] += u64::from(self.alu_lanes);
        }
    }
}

/// Register-file lanes of register `r` in the scoreboard's numbering.
fn lanes_of(r: u8) -> u8 {
    if r >= 32 {
        LANES
    } else {
        1
    }
}

fn read_lanes(set: &RegSet) -> u8 {
    set.srcs().iter().map(|&r| lanes_of(r)).sum()
}

/// The lanes of the old destination that [`regs`] lists as read by a masked vector
/// form (the scoreboard must wait for it; the register file does not read it).
fn merged_dest_lanes(inst: &Inst) -> u8 {
    let merged = match *inst {
        Inst::Reg { fmt, op, .. } => fmt.masked() && !op.scalar_dest(),
        Inst::ImmMasked { op, .. } => !op.scalar_dest(),
        Inst::Mem { op, load, .. } => load && op.masked(),
        _ => false,
    };
    if merged {
        LANES
    } else {
        0
    }
}

/// The ALU class of an instruction and whether it is a vector form.
fn alu_op(inst: &Inst) -> (Option<AluClass>, bool) {
    match *inst {
        Inst::Reg { fmt, op, .. } => (class_of(op), fmt.vector()),
        Inst::Imm { fmt, op, .. } => (class_of(op), fmt == IFmt::V),
        Inst::ImmMasked { op, .. } => (class_of(op), true),
        Inst::MoveHi { .. } => (Some(AluClass::Int), false),
        // Control flow has no ALU class (GPGPU-Sim's neither): `bz`/`bnz` test a
        // register in the branch logic.
        Inst::Mem { .. } | Inst::Cache { .. } | Inst::Branch { .. } => (None, false),
    }
}

fn class_of(op: AluOp) -> Option<AluClass> {
    use AluOp::*;
    Some(match op {
        Syscall | Break => return None,
        MullI | MulhU | MulhI => AluClass::IntMul,
        AddF | SubF | Itof | Ftoi | CmpGtF | CmpGeF | CmpLtF | CmpLeF | CmpEqF | CmpNeF => {
            AluClass::Fp
        }
        MulF => AluClass::FpMul,
        Reciprocal => AluClass::Sfu,
        _ => AluClass::Int,
    })
}

/// A Nyuzi core's per-event energies for caches `l1d` and `l2`: see the module
/// documentation.
pub fn table_for(l1d: &CacheConfig, l2: &CacheConfig) -> EnergyTable {
    let g = EnergyTable::GPUWATTCH_GTX480;
    let from = EnergyTable::GTX480_LINE_BYTES;
    EnergyTable {
        l1: g.l1.scaled_to_line(l1d.line_bytes, from),
        l2: g.l2.scaled_to_line(l2.line_bytes, from),
        leakage_power_mw: 0,
        constant_power_mw: 0,
        // No operand collector, shared memory, constant cache or DAC queues.
        nonreg_operand_fj: 0,
        noc_flit_fj: 0,
        shared_fj: 0,
        const_fj: 0,
        queue_write_fj: 0,
        queue_read_fj: 0,
        ..g
    }
}

/// The per-event energies of Nyuzi's own caches (64-byte lines).
pub fn default_table() -> EnergyTable {
    table_for(&CacheConfig::NYUZI_L1, &CacheConfig::NYUZI_L2)
}

/// Whether an event or energy statistic means something on Nyuzi: the ones of the
/// dac-gpu's operand collector, interconnect, shared memory, constant cache, DAC
/// queues and static power are always zero there and are left out of its reports.
pub fn applies(name: &str) -> bool {
    !matches!(
        name,
        "rf_nonreg_operands"
            | "noc_flits"
            | "shared_accesses"
            | "const_accesses"
            | "queue_words_written"
            | "queue_words_read"
            | "queue_expand_ops"
            | "energy_noc_nj"
            | "energy_shared_nj"
            | "energy_const_nj"
            | "energy_queue_nj"
            | "energy_static_nj"
            | "energy_total_nj"
    )
}
