//! Where each statistic belongs in the readable `--stats` report, under which name
//! and in which form ([`describe`]).
//!
//! The catalogue is data: a table of the statistics whose readable name is not
//! simply their key (`ipc` is "IPC"), then prefix rules for families of counters
//! (`l1d_*`, `stall_*`, `energy_*`, ...). A key neither knows still gets a section
//! ("Other"), a name made from its key and a form from its value and suffix, so a
//! counter a simulator adds never goes missing from the report.

/// A section of the report, in the order they are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    Launch,
    Instructions,
    Control,
    Memory,
    Occupancy,
    Stalls,
    Dac,
    Registers,
    Energy,
    Other,
}

impl Section {
    /// Every section, in report order.
    pub const ALL: [Section; 10] = [
        Section::Launch,
        Section::Instructions,
        Section::Control,
        Section::Memory,
        Section::Occupancy,
        Section::Stalls,
        Section::Dac,
        Section::Registers,
        Section::Energy,
        Section::Other,
    ];

    /// The section's heading.
    pub fn title(self) -> &'static str {
        match self {
            Section::Launch => "Launch",
            Section::Instructions => "Instructions",
            Section::Control => "Control flow and lanes",
            Section::Memory => "Memory hierarchy",
            Section::Occupancy => "Occupancy",
            Section::Stalls => "Stalls",
            Section::Dac => "Decoupled affine computation",
            Section::Registers => "Registers, spilling and static code",
            Section::Energy => "Energy",
            Section::Other => "Other",
        }
    }

    /// The section's name in JSON and tests: the title's first word, lowercase.
    pub fn key(self) -> &'static str {
        match self {
            Section::Launch => "launch",
            Section::Instructions => "instructions",
            Section::Control => "control",
            Section::Memory => "memory",
            Section::Occupancy => "occupancy",
            Section::Stalls => "stalls",
            Section::Dac => "dac",
            Section::Registers => "registers",
            Section::Energy => "energy",
            Section::Other => "other",
        }
    }
}

/// How a value is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// As it comes: an integer with thousands separators, a number rounded.
    Plain,
    /// A ratio in [0, 1] shown as a percentage (`0.333` is `33.3%`).
    Percent,
}

/// What the report needs to know of one statistic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    pub section: Section,
    /// The readable name.
    pub label: String,
    /// The unit after the value (`cycles`, `B`), empty when the name says it.
    pub unit: &'static str,
    pub form: Form,
    /// Its place in the section: catalogue order (named statistics, then
    /// families in table order), then by key.
    pub rank: usize,
}

use Form::{Percent, Plain};
use Section::*;

/// Statistics with a name of their own: (key, section, label, unit, form).
#[rustfmt::skip]
const NAMED: &[(&str, Section, &str, &str, Form)] = &[
    ("cycles", Launch, "cycles", "", Plain),
    ("blocks", Launch, "blocks", "", Plain),
    ("gangs", Launch, "gangs", "", Plain),
    ("gangs_per_block", Launch, "gangs per block", "", Plain),
    ("hardware_threads", Launch, "hardware threads used", "", Plain),
    ("dac_batches", Dac, "affine warp batches", "", Plain),
    ("dynamic_instructions", Instructions, "dynamic instructions", "", Plain),
    ("total_warp_instructions", Instructions, "warp instructions, affine included", "", Plain),
    ("warp_instructions", Instructions, "warp instructions", "", Plain),
    ("thread_instructions", Instructions, "thread instructions", "", Plain),
    ("instructions", Instructions, "instructions retired", "", Plain),
    ("emulator_instructions", Instructions, "emulator instructions (gather/scatter = 16)", "", Plain),
    ("issued", Instructions, "issue slots used", "", Plain),
    ("ipc", Instructions, "IPC", "instr/cycle", Plain),
    ("warp_ipc", Instructions, "warp IPC", "warp instr/cycle", Plain),
    ("issue_cycles", Instructions, "scheduler issue cycles", "cycles", Plain),
    ("scalar_instructions", Instructions, "scalar instructions", "", Plain),
    ("uniform_instructions", Instructions, "uniform datapath instructions", "", Plain),
    ("vector_instructions", Instructions, "vector instructions", "", Plain),
    ("memory_instructions", Instructions, "memory instructions", "", Plain),
    ("lane_operations", Instructions, "lane operations", "", Plain),
    ("branch_instructions", Control, "branch instructions", "", Plain),
    ("masked_instructions", Control, "masked instructions", "", Plain),
    ("calls", Control, "calls", "", Plain),
    ("barriers", Control, "barriers", "", Plain),
    ("lane_utilization", Control, "lane utilization", "", Percent),
    ("vector_lane_slots", Control, "vector lane slots", "", Plain),
    ("active_lanes", Control, "active lanes", "", Plain),
    ("vector_thread_instructions", Control, "active lanes of vector instructions", "", Plain),
    ("loads", Memory, "loads", "", Plain),
    ("stores", Memory, "stores", "", Plain),
    ("atomics", Memory, "atomics", "", Plain),
    ("global_load_instructions", Memory, "global loads", "warp instr", Plain),
    ("global_load_lanes", Memory, "global load lanes", "lanes", Plain),
    ("global_load_transactions", Memory, "global load transactions", "", Plain),
    ("global_store_instructions", Memory, "global stores", "warp instr", Plain),
    ("global_store_transactions", Memory, "global store transactions", "", Plain),
    ("global_atomic_instructions", Memory, "global atomics", "warp instr", Plain),
    ("global_atomic_transactions", Memory, "global atomic transactions", "", Plain),
    ("local_load_instructions", Memory, "local loads", "warp instr", Plain),
    ("local_store_instructions", Memory, "local stores", "warp instr", Plain),
    ("local_transactions", Memory, "local transactions", "", Plain),
    ("shared_instructions", Memory, "shared-memory instructions", "", Plain),
    ("shared_bank_conflicts", Memory, "shared bank conflicts", "extra cycles", Plain),
    ("l1_accesses", Memory, "L1 accesses", "", Plain),
    ("l1_hits", Memory, "L1 hits", "", Plain),
    ("l1_hit_rate", Memory, "L1 hit rate", "", Percent),
    ("l2_accesses", Memory, "L2 accesses", "", Plain),
    ("l2_hits", Memory, "L2 hits", "", Plain),
    ("l2_hit_rate", Memory, "L2 hit rate", "", Percent),
    ("dram_bytes", Memory, "DRAM traffic", "B", Plain),
    ("l2_mshr_wait_cycles", Memory, "L2 MSHR wait", "cycles", Plain),
    ("theoretical_occupancy", Occupancy, "theoretical occupancy", "", Percent),
    ("achieved_occupancy", Occupancy, "achieved occupancy", "", Percent),
    ("register_bank_conflicts", Stalls, "register bank conflicts", "extra issue cycles", Plain),
    ("affine_warp_instructions", Dac, "affine warp instructions", "", Plain),
    ("nonaffine_warp_instructions", Dac, "non-affine warp instructions", "", Plain),
    ("decoupled_load_instructions", Dac, "decoupled loads", "warp instr", Plain),
    ("loads_decoupled", Dac, "loads decoupled", "", Percent),
    ("registers", Registers, "registers per thread", "", Plain),
    ("shared_bytes_per_block", Registers, "shared memory per block", "B", Plain),
    ("spilled_values", Registers, "spilled values", "", Plain),
    ("spill_bytes", Registers, "spill slot bytes per thread", "B", Plain),
    ("spill_stores", Registers, "spill stores (static)", "", Plain),
    ("spill_loads", Registers, "spill loads (static)", "", Plain),
    ("rematerialized_values", Registers, "rematerialized values", "", Plain),
    ("demoted_shared_bytes", Registers, "demoted slots' shared memory per block", "B", Plain),
    ("predicted_cycles", Registers, "predicted cycles (regalloc auto)", "cycles", Plain),
    ("static_shuffle_distance", Registers, "static mean shuffle distance", "lanes", Plain),
    ("noc_flits", Memory, "interconnect flits", "", Plain),
    ("const_accesses", Memory, "constant-cache accesses", "", Plain),
    ("fetched_instructions", Energy, "instructions fetched and decoded", "", Plain),
    ("typed_instructions", Energy, "typed instructions (FP_INT)", "", Plain),
];

/// Families of statistics by key prefix: (prefix, section, label prefix). The label
/// is the label prefix and the rest of the key, words apart. Longer prefixes first
/// where two could match.
const FAMILIES: &[(&str, Section, &str)] = &[
    ("energy_", Energy, ""),
    ("rf_", Energy, "register file"),
    ("alu_", Energy, "ALU"),
    ("queue_", Energy, "queue"),
    ("stall_", Stalls, ""),
    ("l1i_", Memory, "L1I"),
    ("l1d_", Memory, "L1D"),
    ("l1_", Memory, "L1"),
    ("l2_", Memory, "L2"),
    ("dram_", Memory, "DRAM"),
    ("global_", Memory, "global"),
    ("local_", Memory, "local"),
    ("shared_", Memory, "shared"),
    ("deq_", Dac, "deq"),
    ("enq_", Dac, "enq"),
    ("expand_", Dac, "expansion"),
    ("atq_", Dac, "ATQ"),
    ("pwaq_", Dac, "per-warp address queue"),
    ("pwpq_", Dac, "per-warp predicate queue"),
    ("early_", Dac, "early"),
    ("prefetch", Dac, "prefetch"),
    ("dac_", Dac, "DAC"),
    ("demoted_", Registers, "demoted"),
    ("regalloc_", Registers, "regalloc"),
    ("spill", Registers, "spill"),
    ("static_", Registers, "static"),
];

/// Where `key` goes, what it is called and how it is shown. `is_ratio`: whether the
/// value is a ratio rather than a count (it decides the form of an unknown key).
pub fn describe(key: &str, is_ratio: bool) -> Description {
    if let Some(i) = NAMED.iter().position(|n| n.0 == key) {
        let (_, section, label, unit, form) = NAMED[i];
        return Description {
            section,
            label: label.to_string(),
            unit,
            form,
            rank: i,
        };
    }
    let unit = unit_of(key);
    // The unit goes after the value, not in the name (`energy_l2_nj`: "l2", nJ).
    let stem = match unit {
        Some((suffix, _)) if key.len() > suffix.len() => &key[..key.len() - suffix.len()],
        _ => key,
    };
    let (section, label, rank) = match FAMILIES.iter().position(|f| key.starts_with(f.0)) {
        Some(i) => {
            let (prefix, section, name) = FAMILIES[i];
            let rest = stem.get(prefix.len()..).unwrap_or("");
            (section, family_label(name, rest), NAMED.len() + i)
        }
        None => (Other, words(stem), NAMED.len() + FAMILIES.len()),
    };
    Description {
        section,
        label,
        unit: unit.map_or("", |(_, u)| u),
        form: if is_ratio && looks_like_a_share(key) {
            Percent
        } else {
            Plain
        },
        rank,
    }
}

fn family_label(name: &str, rest: &str) -> String {
    let rest = words(rest.trim_start_matches('_'));
    match (name.is_empty(), rest.is_empty()) {
        (true, true) => "total".to_string(),
        (true, false) => rest,
        (false, true) => name.to_string(),
        (false, false) => format!("{name} {rest}"),
    }
}

/// `read_misses` is "read misses".
fn words(key: &str) -> String {
    key.replace('_', " ")
}

/// The suffix of `key` that names a unit, and the unit.
fn unit_of(key: &str) -> Option<(&'static str, &'static str)> {
    const SUFFIXES: &[(&str, &str)] = &[
        ("_cycles", "cycles"),
        ("_bytes", "B"),
        ("_pj", "pJ"),
        ("_nj", "nJ"),
        ("_uj", "µJ"),
        ("_mj", "mJ"),
        ("_j", "J"),
        ("_w", "W"),
    ];
    SUFFIXES.iter().find(|(s, _)| key.ends_with(s)).copied()
}

/// Ratios that are shares of a whole (shown as percentages), as opposed to means,
/// rates per cycle or energies.
fn looks_like_a_share(key: &str) -> bool {
    ["_rate", "_utilization", "_share", "_fraction", "_saving"]
        .iter()
        .any(|s| key.ends_with(s))
        || (key.ends_with("_occupancy") && !key.contains("mean"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_keys_keep_their_catalogue_name() {
        let d = describe("ipc", true);
        assert_eq!(
            (d.section, d.label.as_str(), d.form),
            (Instructions, "IPC", Plain)
        );
        let d = describe("l1_hit_rate", true);
        assert_eq!((d.section, d.form), (Memory, Percent));
    }

    #[test]
    fn families_name_their_members() {
        let d = describe("l1d_read_misses", false);
        assert_eq!((d.section, d.label.as_str()), (Memory, "L1D read misses"));
        let d = describe("stall_memory", false);
        assert_eq!((d.section, d.label.as_str()), (Stalls, "memory"));
        let d = describe("dram_busy_cycles", false);
        assert_eq!((d.label.as_str(), d.unit), ("DRAM busy", "cycles"));
    }

    #[test]
    fn energy_counters_go_to_the_energy_section_whatever_follows() {
        let d = describe("energy_l2_nj", true);
        assert_eq!((d.section, d.label.as_str(), d.unit), (Energy, "l2", "nJ"));
        assert_eq!(d.form, Plain);
        assert_eq!(describe("rf_reads", false).section, Energy);
        assert_eq!(describe("alu_int_ops", false).section, Energy);
        assert_eq!(describe("queue_pushes", false).section, Energy);
        assert_eq!(describe("energy_saving", true).form, Percent);
    }

    #[test]
    fn an_unknown_key_lands_in_other_under_its_own_words() {
        let d = describe("frobnications_per_widget", false);
        assert_eq!(
            (d.section, d.label.as_str()),
            (Other, "frobnications per widget")
        );
        assert!(d.rank >= NAMED.len());
    }

    #[test]
    fn catalogue_keys_are_unique() {
        let mut keys: Vec<&str> = NAMED.iter().map(|n| n.0).collect();
        keys.sort_unstable();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n);
    }
}
