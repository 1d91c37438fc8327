//! The energy model both timing simulators share: the events a timing run counts
//! ([`Events`]), priced by per-event energies ([`EnergyTable`], in femtojoules),
//! plus static power over the run's time, into a run's [`Energy`] by component.
//!
//! What counts as one event follows GPUWattch (Leng et al., ISCA 2013) as
//! GPGPU-Sim 3.2.2 drives it; each machine maps its instructions and memory
//! traffic onto these events (`gpu::energy`, `nyuzi::energy`).
//! [`EnergyTable::GPUWATTCH_GTX480`] holds GPUWattch's per-access energies for its
//! GTX 480 configuration; `lang-spec/dac-hardware.md` (*Energy*) gives each one's
//! source and derivation.

/// An operation's ALU class, as GPGPU-Sim 3.2.2 classifies PTX for GPUWattch
/// (`ptx_instruction::set_mul_div_or_other_archop`); each simulator maps its own
/// instructions onto these.
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

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// The events of a timing run the energy model prices.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Events {
    /// Instructions fetched, decoded and issued (dac-gpu: warp instructions,
    /// non-affine and affine; nyuzi: issue slots).
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
    /// Adds an L1's line transactions.
    pub fn add_l1(&mut self, c: &crate::mem::CacheStats) {
        self.l1_read_hits += c.read_hits;
        self.l1_read_misses += c.read_misses;
        self.l1_write_hits += c.write_hits;
        self.l1_write_misses += c.write_misses;
    }

    /// Sets the L2's line transactions and DRAM's bursts from the memory system.
    pub fn set_l2_and_dram(&mut self, l2: &crate::mem::CacheStats, d: &crate::mem::DramStats) {
        self.l2_read_hits = l2.read_hits;
        self.l2_read_misses = l2.read_misses;
        self.l2_write_hits = l2.write_hits;
        self.l2_write_misses = l2.write_misses;
        self.dram_read_bursts = d.read_bursts;
        self.dram_write_bursts = d.write_bursts;
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

/// The energy of one access of a cache by kind and outcome, in femtojoules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheEnergy {
    pub read_hit_fj: u32,
    pub read_miss_fj: u32,
    pub write_hit_fj: u32,
    pub write_miss_fj: u32,
}

impl CacheEnergy {
    fn price(&self, read_hits: u64, read_misses: u64, write_hits: u64, write_misses: u64) -> f64 {
        nj(read_hits, self.read_hit_fj)
            + nj(read_misses, self.read_miss_fj)
            + nj(write_hits, self.write_hit_fj)
            + nj(write_misses, self.write_miss_fj)
    }

    /// The same cache with lines of `line_bytes` instead of `from_bytes`: a line
    /// transaction's energy taken as proportional to the bytes it moves.
    pub fn scaled_to_line(&self, line_bytes: u32, from_bytes: u32) -> CacheEnergy {
        let s = |fj: u32| {
            let v = u64::from(fj) * u64::from(line_bytes) / u64::from(from_bytes.max(1));
            u32::try_from(v).unwrap_or(u32::MAX)
        };
        CacheEnergy {
            read_hit_fj: s(self.read_hit_fj),
            read_miss_fj: s(self.read_miss_fj),
            write_hit_fj: s(self.write_hit_fj),
            write_miss_fj: s(self.write_miss_fj),
        }
    }
}

/// Per-event energies (femtojoules), static power (milliwatts) and the clock that
/// turns cycles into time. Each event is defined at [`Events`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnergyTable {
    /// Fetching, decoding and issuing an instruction.
    pub instruction_fj: u32,
    /// The extra per instruction with an integer or float operand type (`FP_INT`).
    pub typed_instruction_fj: u32,
    /// One register-file lane read and write.
    pub rf_read_fj: u32,
    pub rf_write_fj: u32,
    /// One lane of a non-register source operand (operand collector).
    pub nonreg_operand_fj: u32,
    /// One lane operation per class, in [`AluClass::ALL`] order.
    pub alu_fj: [u32; 8],
    pub l1: CacheEnergy,
    pub l2: CacheEnergy,
    /// One 64-byte DRAM read and write burst.
    pub dram_read_fj: u32,
    pub dram_write_fj: u32,
    pub noc_flit_fj: u32,
    pub shared_fj: u32,
    pub const_fj: u32,
    pub queue_write_fj: u32,
    pub queue_read_fj: u32,
    pub leakage_power_mw: u32,
    pub constant_power_mw: u32,
    pub clock_mhz: u32,
}

impl EnergyTable {
    /// GPUWattch's per-access energies for its GTX 480 configuration (GPGPU-Sim
    /// 3.2.2, `configs/GTX480/gpuwattch_gtx480.xml`; 128-byte cache lines, 40 nm,
    /// 700 MHz), the figures of `sim/configs/gtx480.toml`'s `energy_*` keys (a test
    /// keeps the two equal).
    pub const GPUWATTCH_GTX480: EnergyTable = EnergyTable {
        instruction_fj: 67049,
        typed_instruction_fj: 54890,
        rf_read_fj: 7267,
        rf_write_fj: 5986,
        nonreg_operand_fj: 53007,
        alu_fj: [
            67369, 193407, 212975, 1934072, 29580, 53244, 1419835, 1208795,
        ],
        l1: CacheEnergy {
            read_hit_fj: 2934600,
            read_miss_fj: 2225070,
            write_hit_fj: 220124,
            write_miss_fj: 2603670,
        },
        l2: CacheEnergy {
            read_hit_fj: 2805040,
            read_miss_fj: 102042,
            write_hit_fj: 13851200,
            write_miss_fj: 15024300,
        },
        dram_read_fj: 26948400,
        dram_write_fj: 15864900,
        noc_flit_fj: 1938580,
        shared_fj: 2119460,
        const_fj: 1467300,
        queue_write_fj: 5986,
        queue_read_fj: 7267,
        leakage_power_mw: 46422,
        constant_power_mw: 11000,
        clock_mhz: 700,
    };

    /// The line size of [`EnergyTable::GPUWATTCH_GTX480`]'s caches.
    pub const GTX480_LINE_BYTES: u32 = 128;
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
    /// The energy of `e` over `cycles` core cycles, priced by `t`.
    pub fn of(e: &Events, cycles: u64, t: &EnergyTable) -> Energy {
        let seconds = if t.clock_mhz == 0 {
            0.0
        } else {
            cycles as f64 / (f64::from(t.clock_mhz) * 1e6)
        };
        let static_mw = f64::from(t.leakage_power_mw) + f64::from(t.constant_power_mw);
        Energy {
            frontend: nj(e.instructions, t.instruction_fj)
                + nj(e.typed_instructions, t.typed_instruction_fj),
            alu: AluClass::ALL
                .iter()
                .map(|&c| nj(e.alu_ops(c), t.alu_fj[c.index()]))
                .sum(),
            rf: nj(e.rf_reads, t.rf_read_fj)
                + nj(e.rf_writes, t.rf_write_fj)
                + nj(e.rf_nonreg_operands, t.nonreg_operand_fj),
            l1: t.l1.price(
                e.l1_read_hits,
                e.l1_read_misses,
                e.l1_write_hits,
                e.l1_write_misses,
            ),
            l2: t.l2.price(
                e.l2_read_hits,
                e.l2_read_misses,
                e.l2_write_hits,
                e.l2_write_misses,
            ),
            dram: nj(e.dram_read_bursts, t.dram_read_fj) + nj(e.dram_write_bursts, t.dram_write_fj),
            noc: nj(e.noc_flits, t.noc_flit_fj),
            shared: nj(e.shared_accesses, t.shared_fj),
            constant: nj(e.const_accesses, t.const_fj),
            queue: nj(e.queue_words_written, t.queue_write_fj)
                + nj(e.queue_words_read, t.queue_read_fj)
                + nj(e.expand_ops, t.alu_fj[AluClass::Int.index()]),
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
    pub fn pairs(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("energy_frontend_nj", self.frontend),
            ("energy_alu_nj", self.alu),
            ("energy_rf_nj", self.rf),
            ("energy_l1_nj", self.l1),
            ("energy_l2_nj", self.l2),
            ("energy_dram_nj", self.dram),
            ("energy_noc_nj", self.noc),
            ("energy_shared_nj", self.shared),
            ("energy_const_nj", self.constant),
            ("energy_queue_nj", self.queue),
            ("energy_dynamic_nj", self.dynamic()),
            ("energy_static_nj", self.static_),
            ("energy_total_nj", self.total()),
        ]
    }
}
