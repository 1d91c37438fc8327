//! What one run of a suite leaves behind: a [`RunRecord`], written as one JSON file
//! per run (`bench-out/runs/NNNNN.json`). Tables and charts are built from records
//! alone, so records from shards of a suite merge into the same table as one run
//! of the whole suite (`spmdc bench merge`). Every statistic is kept exactly
//! (counts as integers, ratios as floats; a ratio that is not a number as `null`).
//! The host's timings sit apart in [`Host`]: they are the one part of a record that
//! differs from one run of the same suite to the next.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::suite::Launch;
use crate::launch::{RunResult, StatValue};

/// A statistic as stored: a count or a ratio (`null`: not a number).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stat {
    Count(u64),
    Ratio(Option<f64>),
}

impl Stat {
    pub fn as_f64(self) -> f64 {
        match self {
            Stat::Count(n) => n as f64,
            Stat::Ratio(x) => x.unwrap_or(f64::NAN),
        }
    }
}

/// How the run's output compared with the interpreter's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// Every buffer equal, bit for bit.
    Ok,
    /// A buffer differs (the message says where).
    Mismatch,
    /// The kernel did not compile, launch or run (on the target or the interpreter).
    Error,
}

/// The uniform share of a run's dynamic IR work (profiled runs only).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub uniform_percent: f64,
    pub analysis_percent: f64,
}

/// The host's measurements of the run (not deterministic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Wall seconds of the timed run.
    pub wall_s: f64,
    /// CPU seconds of the thread that ran it, when the host reports them.
    pub cpu_s: Option<f64>,
    /// Wall seconds of compiling it: front end and IR pipeline, and on dac-gpu its
    /// code generation (nyuzi builds its image inside the run).
    #[serde(default)]
    pub compile_s: f64,
}

/// One allocation timed by the `regdem` hook.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    pub name: String,
    pub placement: String,
    pub budget: u32,
    pub registers: u32,
    pub spill_slots: u32,
    pub demoted_slots: u32,
    pub predicted_blocks_per_sm: u32,
    pub predicted_cycles: f64,
    pub check: Check,
    pub message: Option<String>,
    pub stats: BTreeMap<String, Stat>,
}

/// One run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub suite: String,
    pub index: usize,
    pub kernel: String,
    pub class: Option<String>,
    pub config: String,
    pub target: String,
    pub machine: String,
    pub switches: Vec<String>,
    /// The thread target `T` the launch was computed for.
    pub size: u64,
    pub launch: Launch,
    pub check: Check,
    /// What went wrong, when `check` is not `ok`.
    pub message: Option<String>,
    pub stats: BTreeMap<String, Stat>,
    pub share: Option<Share>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
    pub host: Host,
}

impl RunRecord {
    /// Millions of statistic `of` per second of the run's CPU time (its wall time when
    /// the CPU time is unknown or zero); None when the run has no such statistic.
    pub fn millions_per_second(&self, of: &str) -> Option<f64> {
        if !self.stats.contains_key(of) {
            return None;
        }
        let busy = self
            .host
            .cpu_s
            .filter(|&c| c > 0.0)
            .unwrap_or(self.host.wall_s);
        Some(self.count(of) as f64 / busy.max(1e-9) / 1e6)
    }

    /// A run of kernel `k` of suite `t` on the GTX 480 with counted statistics, for
    /// tests of the tables and charts.
    #[cfg(test)]
    pub(crate) fn sample(kernel: &str, config: &str, target: &str, stats: &[(&str, u64)]) -> Self {
        RunRecord {
            suite: "t".into(),
            index: 0,
            kernel: kernel.into(),
            class: Some("c".into()),
            config: config.into(),
            target: target.into(),
            machine: "gtx480".into(),
            switches: Vec::new(),
            size: 1,
            launch: Launch {
                entry: "saxpy_gpu".into(),
                grid: None,
                block: None,
                dynamic_shared: None,
                args: Vec::new(),
                threads: None,
            },
            check: Check::Ok,
            message: None,
            stats: stats
                .iter()
                .map(|&(k, v)| (k.to_string(), Stat::Count(v)))
                .collect(),
            share: None,
            variants: Vec::new(),
            host: Host::default(),
        }
    }

    /// The statistic `key` as a number (NaN when missing).
    pub fn stat(&self, key: &str) -> f64 {
        self.stats.get(key).map_or(f64::NAN, |s| s.as_f64())
    }

    /// The statistic `key` as a count (0 when missing).
    pub fn count(&self, key: &str) -> u64 {
        match self.stats.get(key) {
            Some(Stat::Count(n)) => *n,
            Some(Stat::Ratio(Some(x))) => *x as u64,
            _ => 0,
        }
    }

    /// The record without its host timings: what must be equal across runs.
    pub fn without_host(&self) -> RunRecord {
        RunRecord {
            host: Host::default(),
            ..self.clone()
        }
    }
}

/// A run's statistics as stored.
pub fn stats_of(r: &RunResult) -> BTreeMap<String, Stat> {
    r.stats
        .iter()
        .map(|(k, v)| {
            let s = match v {
                StatValue::Count(n) => Stat::Count(n),
                StatValue::Ratio(x) => Stat::Ratio(x.is_finite().then_some(x)),
            };
            (k.to_string(), s)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_round_trip_through_json_exactly() {
        let mut m = BTreeMap::new();
        m.insert("a".to_string(), Stat::Count(u64::MAX));
        m.insert("b".to_string(), Stat::Ratio(Some(13.633136094674557)));
        m.insert("c".to_string(), Stat::Ratio(None));
        m.insert("d".to_string(), Stat::Ratio(Some(2.0)));
        // Parsed back exactly only with serde_json's `float_roundtrip`.
        m.insert("e".to_string(), Stat::Ratio(Some(92.09273570324576)));
        let text = serde_json::to_string(&m).unwrap();
        let back: BTreeMap<String, Stat> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }
}
