//! The `dac-gpu` machine configuration: every parameter of the simulated GPU (shape,
//! occupancy limits with the CUDA occupancy calculator's allocation granularities,
//! latencies, caches, DAC queue sizes) read from a small TOML subset (`key = value`
//! lines, `#` comments, integers, quoted strings). The presets `gtx480` and `maxwell`
//! live in `sim/configs/*.toml` and are embedded in the binary; any other file may
//! start from one with `base = "gtx480"` and override single keys.

use std::collections::HashSet;
use std::fmt;

/// How registers are allocated: per warp (compute capability 2.0 and later) or per
/// block (1.x), as in the occupancy calculator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AllocGranularity {
    Warp,
    Block,
}

/// The warp scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchedPolicy {
    /// Greedy then oldest.
    Gto,
    /// Loose round robin.
    Lrr,
}

/// Which DAC expansions wait at a barrier (paper §4.2: "the AEU disables expansion
/// for the target non-affine blocks; the AEU only issues memory requests for
/// non-affine blocks that pass the barrier").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarrierGate {
    /// Only the records that issue early requests (`enq.data`, `enq.data.sel`) wait
    /// for a CTA to pass the affine warp's barrier: the guarantee the gate exists
    /// for (no early request runs ahead of its barrier); address and predicate
    /// records read no memory and are expanded ahead.
    Requests,
    /// Every expansion waits (the paper's wording, literally).
    All,
}

/// Which Affine Tuple Queue entry the expansion units may work on for a CTA (paper
/// §4.2 ⑥: one accumulated-address register per concurrent CTA, "allowing it to
/// switch among CTAs to generate addresses").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtqCursor {
    /// Every CTA works on the ATQ's head entry; the next entry starts for any CTA
    /// only once every CTA has the head (one CTA with a full warp queue holds the
    /// others once they are done with the head).
    Head,
    /// Each CTA has its own read position in the ATQ: a CTA that has the head moves
    /// on to the next entry while a slower CTA finishes the head. An entry leaves
    /// the ATQ once every CTA has it, so CTAs drift apart by at most the ATQ's size.
    Cta,
}

/// What the AEU does with an early request whose line it cannot lock (its L1 set
/// already has N−1 of N ways locked, or the line's counter is saturated; paper
/// §4.2 locks at most N−1 ways and leaves this case open).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EarlyUnlockable {
    /// Not fetched: the warp's `deq.data` loads the line itself, after the
    /// record's other lines have arrived.
    Drop,
    /// Fetched without a lock, as a conventional prefetch: the fill may be
    /// replaced before its use (the warp then misses), but the line's latency
    /// overlaps the record's other lines instead of following them.
    Unlocked,
}

/// A configuration value as written in the file.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Int(u64),
    Str(String),
}

trait FromValue: Sized {
    fn from_value(v: &Value) -> Result<Self, String>;
    fn to_text(&self) -> String;
}

impl FromValue for u32 {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Int(n) => u32::try_from(*n).map_err(|_| format!("{n} does not fit in 32 bits")),
            Value::Str(_) => Err("expected an integer".into()),
        }
    }
    fn to_text(&self) -> String {
        self.to_string()
    }
}

impl FromValue for String {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Str(s) => Ok(s.clone()),
            Value::Int(_) => Err("expected a quoted string".into()),
        }
    }
    fn to_text(&self) -> String {
        format!("\"{self}\"")
    }
}

/// `FromValue` for an enum written as one of a few quoted names.
macro_rules! named_values {
    ($ty:ty { $($variant:path => $name:literal),+ $(,)? }) => {
        impl FromValue for $ty {
            fn from_value(v: &Value) -> Result<Self, String> {
                match String::from_value(v)?.as_str() {
                    $($name => Ok($variant),)+
                    s => Err(format!("`{s}` is not {}", one_of(&[$($name),+]))),
                }
            }
            fn to_text(&self) -> String {
                match self {
                    $($variant => format!("\"{}\"", $name),)+
                }
            }
        }
    };
}

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

named_values!(AllocGranularity {
    AllocGranularity::Warp => "warp",
    AllocGranularity::Block => "block",
});
named_values!(BarrierGate {
    BarrierGate::Requests => "requests",
    BarrierGate::All => "all",
});
named_values!(AtqCursor {
    AtqCursor::Head => "head",
    AtqCursor::Cta => "cta",
});
named_values!(EarlyUnlockable {
    EarlyUnlockable::Drop => "drop",
    EarlyUnlockable::Unlocked => "unlocked",
});
named_values!(SchedPolicy {
    SchedPolicy::Gto => "gto",
    SchedPolicy::Lrr => "lrr",
});

/// Declares the configuration struct and its key table from one list, so that the
/// file format, the printer and the struct cannot drift apart.
macro_rules! config {
    ($($(#[doc = $doc:literal])* $key:ident : $ty:ty = $zero:expr;)*) => {
        /// Every parameter of the simulated GPU. Sizes are in bytes, latencies in core
        /// cycles, limits per SM unless the name says per block or per thread.
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub struct GpuConfig {
            $($(#[doc = $doc])* pub $key: $ty,)*
        }

        impl GpuConfig {
            /// Every key of the file format, in the order [`GpuConfig::to_text`] writes.
            pub const KEYS: &'static [&'static str] = &[$(stringify!($key)),*];

            fn blank() -> GpuConfig {
                GpuConfig { $($key: $zero,)* }
            }

            /// Sets `key`; `Ok(false)` when there is no such key.
            fn set(&mut self, key: &str, v: &Value) -> Result<bool, String> {
                match key {
                    $(stringify!($key) => {
                        self.$key = <$ty as FromValue>::from_value(v)?;
                        Ok(true)
                    })*
                    _ => Ok(false),
                }
            }

            /// The configuration as a complete file (no `base`).
            pub fn to_text(&self) -> String {
                let mut s = String::new();
                $(s.push_str(&format!("{} = {}\n", stringify!($key), FromValue::to_text(&self.$key)));)*
                s
            }
        }
    };
}

config! {
    /// Preset or file name, for reports.
    name: String = String::new();
    /// Streaming multiprocessors.
    num_sms: u32 = 0;
    /// Threads per warp.
    warp_size: u32 = 0;
    core_clock_mhz: u32 = 0;
    /// Warp schedulers per SM (each issues one warp instruction per cycle).
    schedulers_per_sm: u32 = 0;
    scheduler: SchedPolicy = SchedPolicy::Gto;
    /// SIMT lanes behind each scheduler: a warp instruction takes
    /// warp_size / simt_lanes_per_scheduler cycles to issue.
    simt_lanes_per_scheduler: u32 = 0;
    max_warps_per_sm: u32 = 0;
    max_threads_per_sm: u32 = 0;
    max_blocks_per_sm: u32 = 0;
    max_threads_per_block: u32 = 0;
    /// 32-bit registers in an SM's register file.
    registers_per_sm: u32 = 0;
    /// Registers one block may use (the calculator's "max registers per block").
    max_registers_per_block: u32 = 0;
    max_registers_per_thread: u32 = 0;
    /// Registers are allocated in units of this many (per warp or per block).
    register_alloc_unit: u32 = 0;
    register_alloc_granularity: AllocGranularity = AllocGranularity::Warp;
    /// Warps are counted in multiples of this when registers are allocated.
    warp_alloc_granularity: u32 = 0;
    /// Register-file banks an instruction's operands are read from (register `%rN`
    /// is in bank `N mod register_banks`; Maxwell has 4). Two source registers in one
    /// bank take an extra issue cycle each (RegDem §3.4). 0 models no banks.
    register_banks: u32 = 0;
    shared_mem_per_sm: u32 = 0;
    max_shared_mem_per_block: u32 = 0;
    /// Shared memory is allocated per block in units of this many bytes.
    shared_mem_alloc_unit: u32 = 0;
    alu_latency: u32 = 0;
    mul_latency: u32 = 0;
    f64_latency: u32 = 0;
    sfu_latency: u32 = 0;
    div_latency: u32 = 0;
    /// Uniform datapath: cycles the SM's scalar unit (one per SM, shared by its
    /// schedulers) is busy per uniform instruction. Its scheduler is busy one cycle.
    uniform_issue_cycles: u32 = 0;
    /// Uniform datapath: cycles until the result of a uniform arithmetic instruction
    /// (ALU or integer multiply class) is ready.
    uniform_latency: u32 = 0;
    shared_mem_latency: u32 = 0;
    /// Cycles until a `shfl`'s result is ready (`vote` takes `alu_latency`).
    shfl_latency: u32 = 0;
    /// Cache line size of L1 and L2.
    line_size: u32 = 0;
    l1_size: u32 = 0;
    l1_assoc: u32 = 0;
    l1_latency: u32 = 0;
    l1_mshrs: u32 = 0;
    l2_size: u32 = 0;
    l2_assoc: u32 = 0;
    l2_latency: u32 = 0;
    l2_partitions: u32 = 0;
    dram_latency: u32 = 0;
    dram_bytes_per_cycle: u32 = 0;
    /// DAC affine tuple queue entries per SM.
    atq_entries: u32 = 0;
    /// DAC per-warp address queue entries.
    pwaq_entries: u32 = 0;
    /// DAC per-warp predicate queue entries.
    pwpq_entries: u32 = 0;
    /// DAC: the largest value of an L1 line's lock counter (15: 4-bit counters).
    lock_counter_max: u32 = 0;
    /// DAC: AEU cycles per line step of its accumulator (one integer ALU, §4.2).
    aeu_cycles_per_step: u32 = 0;
    /// DAC: L1 miss registers early requests may not hold, kept for the warps' own
    /// misses (early requests hold at most `l1_mshrs - early_mshr_reserve`, at least 1).
    early_mshr_reserve: u32 = 0;
    /// DAC: batches of blocks served at once, each by its own affine warp context
    /// and ATQ (1: the paper's one affine warp per SM).
    affine_contexts: u32 = 0;
    /// DAC: which expansions a CTA's barrier holds back ("requests": those issuing
    /// early requests; "all": every one).
    barrier_gate: BarrierGate = BarrierGate::Requests;
    /// DAC: which ATQ entry a CTA's expansion may work on ("head": every CTA the
    /// head entry; "cta": each CTA its own next entry).
    atq_cursor: AtqCursor = AtqCursor::Head;
    /// DAC: early requests whose line cannot be locked ("drop": not fetched;
    /// "unlocked": fetched without a lock).
    early_unlockable: EarlyUnlockable = EarlyUnlockable::Drop;
    /// DAC: while another affine warp context serves a batch and blocks are still
    /// to come, a new batch starts only once the resident blocks no batch has
    /// served are at least 1/`batch_min_share` of the resident blocks (0: at once,
    /// with the first such block). Keeps a context from being taken for a whole
    /// block lifetime by a batch of one block while the blocks arriving behind it
    /// wait idle.
    batch_min_share: u32 = 0;
    /// Energy (femtojoules; [`super::energy`] defines each event): fetching,
    /// decoding and issuing a warp instruction.
    energy_instruction_fj: u32 = 0;
    /// Energy: the extra per warp instruction with an integer or float operand type
    /// (GPUWattch `FP_INT`).
    energy_typed_instruction_fj: u32 = 0;
    /// Energy: one register-file lane read and write.
    energy_rf_read_fj: u32 = 0;
    energy_rf_write_fj: u32 = 0;
    /// Energy: one lane of a non-register source operand (operand collector).
    energy_nonreg_operand_fj: u32 = 0;
    /// Energy: one lane operation per ALU class.
    energy_int_fj: u32 = 0;
    energy_int_mul_fj: u32 = 0;
    energy_int_mul64_fj: u32 = 0;
    energy_int_div_fj: u32 = 0;
    energy_fp_fj: u32 = 0;
    energy_fp_mul_fj: u32 = 0;
    energy_fp_div_fj: u32 = 0;
    energy_sfu_fj: u32 = 0;
    /// Energy: one L1 line transaction by kind and outcome.
    energy_l1_read_hit_fj: u32 = 0;
    energy_l1_read_miss_fj: u32 = 0;
    energy_l1_write_hit_fj: u32 = 0;
    energy_l1_write_miss_fj: u32 = 0;
    /// Energy: one L2 line transaction by kind and outcome.
    energy_l2_read_hit_fj: u32 = 0;
    energy_l2_read_miss_fj: u32 = 0;
    energy_l2_write_hit_fj: u32 = 0;
    energy_l2_write_miss_fj: u32 = 0;
    /// Energy: one 64-byte DRAM read and write burst.
    energy_dram_read_fj: u32 = 0;
    energy_dram_write_fj: u32 = 0;
    /// Energy: one 32-byte interconnect flit between an L1 and the L2.
    energy_noc_flit_fj: u32 = 0;
    /// Energy: one shared-memory bank-access cycle.
    energy_shared_fj: u32 = 0;
    /// Energy: one constant-cache (kernel parameter) access.
    energy_const_fj: u32 = 0;
    /// Energy: writing and reading one 32-bit word of a DAC queue.
    energy_queue_write_fj: u32 = 0;
    energy_queue_read_fj: u32 = 0;
    /// Static power (milliwatts): leakage, and the constant dynamic (clock) power.
    leakage_power_mw: u32 = 0;
    constant_power_mw: u32 = 0;
}

/// A configuration file error at a 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub line: u32,
    pub msg: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.msg)
        } else {
            write!(f, "line {}: {}", self.line, self.msg)
        }
    }
}

/// The embedded presets: (name, file text).
pub const PRESETS: [(&str, &str); 2] = [
    ("gtx480", include_str!("../../configs/gtx480.toml")),
    ("maxwell", include_str!("../../configs/maxwell.toml")),
];

/// Parses `key = value` (value: integer with optional `_`, hex `0x`, or a quoted string).
fn parse_line(line: &str) -> Result<Option<(String, Value)>, String> {
    let code = strip_comment(line).trim();
    if code.is_empty() {
        return Ok(None);
    }
    let (k, v) = code.split_once('=').ok_or("expected `key = value`")?;
    let (k, v) = (k.trim(), v.trim());
    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!("`{k}` is not a key"));
    }
    let value = if let Some(s) = v.strip_prefix('"') {
        let s = s.strip_suffix('"').ok_or("unterminated string")?;
        if s.contains('"') || s.contains('\\') {
            return Err("strings hold no quotes or escapes".into());
        }
        Value::Str(s.to_string())
    } else {
        let digits = v.replace('_', "");
        let n = match digits.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => digits.parse::<u64>(),
        };
        Value::Int(
            n.map_err(|_| format!("`{v}` is not a non-negative integer or a quoted string"))?,
        )
    };
    Ok(Some((k.to_string(), value)))
}

/// Removes a `#` comment that is not inside a string.
fn strip_comment(line: &str) -> &str {
    let mut in_str = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '#' if !in_str => return &line[..i],
            _ => {}
        }
    }
    line
}

impl GpuConfig {
    /// A preset by name (`gtx480`, `maxwell`).
    pub fn preset(name: &str) -> Option<GpuConfig> {
        let (_, text) = PRESETS.iter().find(|(n, _)| *n == name)?;
        GpuConfig::from_text(text).ok()
    }

    /// The GTX 480 preset (the DAC paper's baseline).
    pub fn gtx480() -> GpuConfig {
        GpuConfig::preset("gtx480").unwrap_or_else(GpuConfig::blank)
    }

    /// The Maxwell preset.
    pub fn maxwell() -> GpuConfig {
        GpuConfig::preset("maxwell").unwrap_or_else(GpuConfig::blank)
    }

    /// Parses a configuration. Without `base = "preset"` (first key) every key must be
    /// given; with it, the preset's values are the defaults.
    pub fn from_text(text: &str) -> Result<GpuConfig, ConfigError> {
        let mut cfg = GpuConfig::blank();
        let mut seen = HashSet::new();
        let mut based = false;
        for (n, line) in text.lines().enumerate() {
            let line_no = n as u32 + 1;
            let err = |msg: String| ConfigError { line: line_no, msg };
            let Some((key, value)) = parse_line(line).map_err(err)? else {
                continue;
            };
            if key == "base" {
                if !seen.is_empty() || based {
                    return Err(err("`base` must be the first key".into()));
                }
                let name = String::from_value(&value).map_err(err)?;
                let (_, base_text) = PRESETS
                    .iter()
                    .find(|(p, _)| *p == name)
                    .ok_or_else(|| err(format!("no preset `{name}`")))?;
                cfg = GpuConfig::from_text(base_text)?;
                based = true;
                continue;
            }
            if !seen.insert(key.clone()) {
                return Err(err(format!("`{key}` is given twice")));
            }
            match cfg.set(&key, &value) {
                Ok(true) => {}
                Ok(false) => {
                    let hint = closest_key(&key)
                        .map(|k| format!("; did you mean `{k}`?"))
                        .unwrap_or_default();
                    return Err(err(format!("unknown key `{key}`{hint}")));
                }
                Err(m) => return Err(err(format!("`{key}`: {m}"))),
            }
        }
        if !based {
            let missing: Vec<&str> = GpuConfig::KEYS
                .iter()
                .copied()
                .filter(|k| !seen.contains(*k))
                .collect();
            if !missing.is_empty() {
                return Err(ConfigError {
                    line: 0,
                    msg: format!("missing keys: {}", missing.join(", ")),
                });
            }
        }
        cfg.validate().map_err(|msg| ConfigError { line: 0, msg })?;
        Ok(cfg)
    }

    /// The largest configuration file [`GpuConfig::load`] reads: a real one is a few
    /// hundred bytes, and a device such as `/dev/zero` must not be read forever.
    pub const MAX_FILE_BYTES: u64 = 1 << 20;

    /// `--config ARG`: a preset name, or the path of a configuration file.
    pub fn load(arg: &str) -> Result<GpuConfig, String> {
        if let Some(c) = GpuConfig::preset(arg) {
            return Ok(c);
        }
        let text = read_config_file(arg).map_err(|e| {
            let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
            format!(
                "`{arg}` is neither a preset ({}) nor a readable file: {e}",
                names.join(", ")
            )
        })?;
        GpuConfig::from_text(&text).map_err(|e| format!("{arg}: {e}"))
    }

    /// Checks the relations the simulator and the occupancy calculation rely on.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("num_sms", self.num_sms),
            ("warp_size", self.warp_size),
            ("schedulers_per_sm", self.schedulers_per_sm),
            ("simt_lanes_per_scheduler", self.simt_lanes_per_scheduler),
            ("max_warps_per_sm", self.max_warps_per_sm),
            ("max_threads_per_sm", self.max_threads_per_sm),
            ("max_blocks_per_sm", self.max_blocks_per_sm),
            ("max_threads_per_block", self.max_threads_per_block),
            ("registers_per_sm", self.registers_per_sm),
            ("max_registers_per_block", self.max_registers_per_block),
            ("max_registers_per_thread", self.max_registers_per_thread),
            ("register_alloc_unit", self.register_alloc_unit),
            ("warp_alloc_granularity", self.warp_alloc_granularity),
            ("shared_mem_alloc_unit", self.shared_mem_alloc_unit),
            ("line_size", self.line_size),
            ("l1_assoc", self.l1_assoc),
            ("l2_assoc", self.l2_assoc),
            ("l2_partitions", self.l2_partitions),
        ];
        for (k, v) in positive {
            if v == 0 {
                return Err(format!("`{k}` must be positive"));
            }
        }
        if self.warp_size > 64 {
            return Err("`warp_size` is at most 64 (ballot masks are 64-bit at most)".into());
        }
        if self.max_registers_per_block > self.registers_per_sm {
            return Err("`max_registers_per_block` exceeds `registers_per_sm`".into());
        }
        if self.max_shared_mem_per_block > self.shared_mem_per_sm {
            return Err("`max_shared_mem_per_block` exceeds `shared_mem_per_sm`".into());
        }
        if !self.line_size.is_power_of_two() {
            return Err("`line_size` must be a power of two".into());
        }
        for (k, size, assoc) in [
            ("l1", self.l1_size, self.l1_assoc),
            ("l2", self.l2_size, self.l2_assoc),
        ] {
            if size % (self.line_size * assoc) != 0 {
                return Err(format!(
                    "`{k}_size` is not a whole number of sets of {assoc} lines"
                ));
            }
        }
        Ok(())
    }
}

/// The text of a configuration file, at most [`GpuConfig::MAX_FILE_BYTES`] of it.
fn read_config_file(path: &str) -> std::io::Result<String> {
    use std::io::Read;
    let limit = GpuConfig::MAX_FILE_BYTES;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(limit + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "it is larger than {limit} bytes"
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// The configuration key nearest to `key` by edit distance, when it is close enough
/// to be a typo (at most a third of the key's letters, 1 to 3, differ).
fn closest_key(key: &str) -> Option<&'static str> {
    let limit = (key.len() / 3).clamp(1, 3);
    GpuConfig::KEYS
        .iter()
        .map(|&k| (levenshtein(key.as_bytes(), k.as_bytes()), k))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// Edits (insert, delete, substitute a byte) turning `a` into `b`.
fn levenshtein(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let next = (diagonal + usize::from(x != y))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}
