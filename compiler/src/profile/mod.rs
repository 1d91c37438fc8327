//! Profiles and mask traces of a run, mapped back to the source.
//!
//! The simulators and the interpreter record plain counters per instruction of their
//! own code ([`sim::record`]); the back end that built the code describes each of
//! its instructions ([`InstDesc`]: function, address, text and the source span its
//! line table gives). This module joins the two into a [`SourceProfile`] (per
//! source line, per instruction, with everything that has no line in named buckets,
//! so the rows always add up to the run's totals) and a [`TraceListing`] (one gang
//! or warp, step by step, with its active lanes). [`render`] prints both for the
//! terminal; both serialize to JSON for `--profile-json`, `--trace-json` and the
//! playground.

pub mod render;
pub mod run;

use std::collections::BTreeMap;

use serde::Serialize;
use sim::record::{InstCounters, Profile, Recorder, Trace};

use crate::source::{SourceMap, Span};

/// The version of the JSON form of [`SourceProfile`] and [`TraceListing`]; bumped
/// when a field changes meaning or goes away.
pub const JSON_VERSION: u32 = 1;

/// One instruction of the code a run executed, as its back end describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstDesc {
    /// The function (or kernel) holding it.
    pub function: String,
    /// Its address: a byte address on Nyuzi, the instruction's index in its kernel on
    /// dac-gpu, the op's index in its function in the interpreter.
    pub address: u64,
    /// The instruction as the listing prints it.
    pub text: String,
    /// The source it came from, when the line table knows.
    pub span: Option<Span>,
    /// Where an instruction without a span belongs ("launch runtime", ...).
    pub place: &'static str,
}

/// Descriptions of every instruction, `[code][index]` as the recorder keys them.
pub type InstTable = Vec<Vec<InstDesc>>;

/// What a recorded run produced: the recorder's data and the table that explains
/// its coordinates.
#[derive(Debug, Default)]
pub struct Recording {
    pub recorder: Recorder,
    pub insts: InstTable,
    /// Lanes of a gang or warp.
    pub lanes: u32,
}

impl Recording {
    fn desc(&self, code: u32, index: u32) -> Option<&InstDesc> {
        self.insts.get(code as usize)?.get(index as usize)
    }
}

/// Counters of a line, an instruction, a bucket or the whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    /// Dynamic instructions: gang or warp instructions, as `dynamic_instructions`.
    pub instructions: u64,
    /// Lanes the vector (varying) instructions among them could have used.
    pub lane_slots: u64,
    /// Lanes that were on in them.
    pub active_lanes: u64,
    /// `active_lanes` per vector instruction: lane_slots / lanes of a gang gives
    /// their number (`null` when there were none).
    pub avg_active_lanes: Option<f64>,
    /// Stall cycles by cause (timing runs only; empty otherwise).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub stalls: BTreeMap<String, u64>,
}

impl Counts {
    fn from_counters(c: &InstCounters, lanes: u32, causes: &[&str]) -> Counts {
        let vector_insts = c.lane_slots / u64::from(lanes.max(1));
        Counts {
            instructions: c.executed,
            lane_slots: c.lane_slots,
            active_lanes: c.active_lanes,
            avg_active_lanes: (vector_insts > 0)
                .then(|| c.active_lanes as f64 / vector_insts as f64),
            stalls: causes
                .iter()
                .zip(c.stalls)
                .map(|(name, n)| (name.to_string(), n))
                .collect(),
        }
    }

    /// Stall cycles over every cause.
    pub fn stall_cycles(&self) -> u64 {
        self.stalls.values().sum()
    }

    fn add(&mut self, o: &Counts) {
        self.instructions += o.instructions;
        self.lane_slots += o.lane_slots;
        self.active_lanes += o.active_lanes;
        for (cause, n) in &o.stalls {
            *self.stalls.entry(cause.clone()).or_default() += n;
        }
    }

    fn subtract(&mut self, o: &Counts) {
        self.instructions = self.instructions.saturating_sub(o.instructions);
        self.lane_slots = self.lane_slots.saturating_sub(o.lane_slots);
        self.active_lanes = self.active_lanes.saturating_sub(o.active_lanes);
        for (cause, n) in &o.stalls {
            let s = self.stalls.entry(cause.clone()).or_default();
            *s = s.saturating_sub(*n);
        }
    }

    /// The counts under the names of the run's statistics.
    fn to_stats(&self) -> crate::launch::Stats {
        let mut s = crate::launch::Stats::new();
        s.set(
            crate::launch::Stats::DYNAMIC_INSTRUCTIONS,
            self.instructions,
        );
        if self.lane_slots > 0 {
            s.set(
                "lane_utilization",
                self.active_lanes as f64 / self.lane_slots as f64,
            );
        }
        for (cause, n) in &self.stalls {
            s.set(&format!("stall_{}", cause.replace(' ', "_")), *n);
        }
        s
    }
}

/// One source line's share of the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LineProfile {
    pub file: String,
    /// One-based.
    pub line: u32,
    #[serde(flatten)]
    pub counts: Counts,
}

/// Work with no source line: the launch runtime, code without a line entry, or
/// what the machine could not charge to any instruction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bucket {
    pub what: String,
    #[serde(flatten)]
    pub counts: Counts,
}

/// One instruction's share of the run (`--profile=asm`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InstProfile {
    pub function: String,
    pub address: u64,
    pub text: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    #[serde(flatten)]
    pub counts: Counts,
}

/// A run's profile mapped to the source. `lines` and `other` partition the run:
/// their counts add up to `totals`, which equal the run's statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SourceProfile {
    pub version: u32,
    pub target: String,
    /// Lanes of a gang or warp.
    pub lanes: u32,
    /// The stall causes of a timing run, in the machine's order (empty otherwise).
    pub stall_causes: Vec<String>,
    pub totals: Counts,
    /// Executed lines, by file (in the order the compiler read them), then line.
    pub lines: Vec<LineProfile>,
    pub other: Vec<Bucket>,
    /// Every instruction that executed or stalled, in code order.
    pub instructions: Vec<InstProfile>,
}

/// Where a span is: (file name, one-based line).
fn line_of(sources: &SourceMap, span: Span) -> Option<(String, u32)> {
    let file = sources.try_get(span.file)?;
    let (line, _) = file.line_col(span.start);
    Some((file.name.clone(), line as u32))
}

impl SourceProfile {
    /// Maps `profile` (recorded with `rec`'s coordinates) to source lines.
    pub fn new(target: &str, rec: &Recording, profile: &Profile, sources: &SourceMap) -> Self {
        let causes = &profile.stall_causes;
        let lanes = rec.lanes;
        let counts = |c: &InstCounters| Counts::from_counters(c, lanes, causes);
        let mut by_line: BTreeMap<(u32, u32), (String, InstCounters)> = BTreeMap::new();
        let mut by_place: BTreeMap<&'static str, InstCounters> = BTreeMap::new();
        let mut instructions = Vec::new();
        for (code, insts) in profile.codes.iter().enumerate() {
            for (index, c) in insts.iter().enumerate() {
                if c.executed == 0 && c.stall_total() == 0 {
                    continue;
                }
                let desc = rec.desc(code as u32, index as u32);
                let at = desc
                    .and_then(|d| d.span)
                    .and_then(|s| Some((s.file.0, line_of(sources, s)?)));
                match &at {
                    Some((file, (name, line))) => {
                        let entry = by_line
                            .entry((*file, *line))
                            .or_insert_with(|| (name.clone(), InstCounters::default()));
                        entry.1.add(c);
                    }
                    None => by_place
                        .entry(desc.map_or("unknown code", |d| d.place))
                        .or_default()
                        .add(c),
                }
                instructions.push(InstProfile {
                    function: desc.map(|d| d.function.clone()).unwrap_or_default(),
                    address: desc.map_or(index as u64, |d| d.address),
                    text: desc.map(|d| d.text.clone()).unwrap_or_default(),
                    file: at.as_ref().map(|(_, (name, _))| name.clone()),
                    line: at.as_ref().map(|(_, (_, line))| *line),
                    counts: counts(c),
                });
            }
        }
        let elsewhere = &profile.elsewhere;
        if elsewhere.executed > 0 || elsewhere.stall_total() > 0 {
            by_place
                .entry("outside the code (idle or unattributed)")
                .or_default()
                .add(elsewhere);
        }
        SourceProfile {
            version: JSON_VERSION,
            target: target.to_string(),
            lanes,
            stall_causes: causes.iter().map(|c| c.to_string()).collect(),
            totals: counts(&profile.total()),
            lines: by_line
                .into_iter()
                .map(|((_, line), (file, c))| LineProfile {
                    file,
                    line,
                    counts: counts(&c),
                })
                .collect(),
            other: by_place
                .into_iter()
                .map(|(what, c)| Bucket {
                    what: what.to_string(),
                    counts: counts(&c),
                })
                .collect(),
            instructions,
        }
    }

    /// The profile as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The run per function (`--stats=full`), in code order, under the names of the
    /// run's statistics: dynamic instructions, lanes and stall cycles by cause. Work
    /// charged to no instruction is the last row, so the rows add up to the totals.
    pub fn per_function(&self) -> Vec<(String, crate::launch::Stats)> {
        let mut order: Vec<&str> = Vec::new();
        let mut sums: BTreeMap<&str, Counts> = BTreeMap::new();
        for i in &self.instructions {
            let name = if i.function.is_empty() {
                "(unknown code)"
            } else {
                i.function.as_str()
            };
            if !sums.contains_key(name) {
                order.push(name);
            }
            sums.entry(name).or_default().add(&i.counts);
        }
        let mut rest = self.totals.clone();
        for c in sums.values() {
            rest.subtract(c);
        }
        let mut rows: Vec<(String, crate::launch::Stats)> = order
            .iter()
            .map(|name| (name.to_string(), sums[name].to_stats()))
            .collect();
        if rest.instructions > 0 || rest.stall_cycles() > 0 {
            rows.push(("(no instruction)".to_string(), rest.to_stats()));
        }
        rows
    }
}

/// One step of a traced gang or warp.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceRow {
    pub step: usize,
    pub function: String,
    pub address: u64,
    pub text: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// The lanes, lane 0 first: `#` on, `_` off; `null` for a scalar or uniform
    /// instruction.
    pub mask: Option<String>,
    /// Lanes on (`null` with `mask`).
    pub active: Option<u32>,
}

/// The path of one gang or warp.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceListing {
    pub version: u32,
    pub target: String,
    /// What `unit` counts: "hardware thread", "gang" or "warp".
    pub unit_kind: String,
    pub unit: u64,
    pub lanes: u32,
    pub limit: usize,
    /// The unit ran more instructions than `limit`.
    pub truncated: bool,
    pub steps: Vec<TraceRow>,
}

/// `##__#...`: lane 0 first, `#` for a lane on.
pub fn lane_string(mask: u64, lanes: u32) -> String {
    (0..lanes.min(64))
        .map(|i| if mask >> i & 1 == 1 { '#' } else { '_' })
        .collect()
}

impl TraceListing {
    /// Maps `trace` (recorded with `rec`'s coordinates) to instructions and lines.
    pub fn new(
        target: &str,
        unit_kind: &str,
        rec: &Recording,
        trace: &Trace,
        sources: &SourceMap,
    ) -> Self {
        let steps = trace
            .steps
            .iter()
            .enumerate()
            .map(|(step, s)| {
                let desc = rec.desc(s.code, s.index);
                let at = desc
                    .and_then(|d| d.span)
                    .and_then(|sp| line_of(sources, sp));
                TraceRow {
                    step,
                    function: desc.map(|d| d.function.clone()).unwrap_or_default(),
                    address: desc.map_or(u64::from(s.index), |d| d.address),
                    text: desc.map(|d| d.text.clone()).unwrap_or_default(),
                    file: at.as_ref().map(|(f, _)| f.clone()),
                    line: at.map(|(_, l)| l),
                    mask: s.mask.map(|m| lane_string(m, trace.width)),
                    active: s.mask.map(|m| (m & lane_bits(trace.width)).count_ones()),
                }
            })
            .collect();
        TraceListing {
            version: JSON_VERSION,
            target: target.to_string(),
            unit_kind: unit_kind.to_string(),
            unit: trace.unit,
            lanes: trace.width,
            limit: trace.limit,
            truncated: trace.truncated,
            steps,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

fn lane_bits(lanes: u32) -> u64 {
    if lanes >= 64 {
        u64::MAX
    } else {
        (1u64 << lanes) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_strings_put_lane_zero_first() {
        assert_eq!(lane_string(0b1101, 6), "#_##__");
        assert_eq!(lane_string(u64::MAX, 4), "####");
    }
}
