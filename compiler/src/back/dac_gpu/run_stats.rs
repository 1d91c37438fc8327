//! What a dac-gpu run records besides its totals: the per-SM breakdown of
//! `--stats=full`, the machine (every key of its configuration) and the code
//! generation options, for the run's JSON.

use sim::gpu::{GpuConfig, TimingReport};

use super::alloc::Placement;
use super::run::{copy_stats, DacRunOptions};
use super::Options;
use crate::driver::RunError;
use crate::interp::RuntimeError;
use crate::launch::{Breakdown, Settings, Stats};

/// Per SM: blocks, instructions, IPC, occupancy, L1 hit rate and stalls.
pub fn per_sm(report: &TimingReport, config: &GpuConfig) -> Breakdown {
    let units = report
        .per_sm
        .iter()
        .map(|sm| {
            let mut s = Stats::new();
            copy_stats(&mut s, &sm.pairs(report.cycles, config.max_warps_per_sm));
            s
        })
        .collect();
    Breakdown {
        unit_kind: "SM".into(),
        units,
        functions: Vec::new(),
    }
}

/// The machine: whether the timing model ran, its scheduler, and every key of the
/// configuration (`--config`), as its file would give it.
pub fn machine_settings(opts: &DacRunOptions) -> Result<Settings, RunError> {
    let config = GpuConfig::load(&opts.config)
        .map_err(|e| RunError::Trap(RuntimeError::new(format!("--config: {e}"))))?;
    let mut m = Settings::new();
    m.insert("config".into(), opts.config.clone().into());
    m.insert("timing".into(), opts.timing.into());
    let sched = match opts.scheduler {
        sim::gpu::SchedulerKind::Gto => "gto",
        sim::gpu::SchedulerKind::Lrr => "lrr",
    };
    m.insert("sched".into(), sched.into());
    for line in config.to_text().lines() {
        if let Some((k, v)) = line.split_once(" = ") {
            m.insert(k.to_string(), config_value(v));
        }
    }
    Ok(m)
}

/// A configuration value: an integer, or the text of a quoted string or a name.
fn config_value(text: &str) -> serde_json::Value {
    match text.parse::<u64>() {
        Ok(n) => n.into(),
        Err(_) => text.trim_matches('"').into(),
    }
}

/// The code generation options of the run (`--max-regs`, `--regalloc`, DAC,
/// shuffles).
pub fn codegen_settings(o: &Options) -> Settings {
    let placement = match (o.predict, o.placement) {
        (true, _) => "auto",
        (false, Placement::Local) => "local",
        (false, Placement::Shared) => "shared",
        (false, Placement::Mixed) => "mixed",
    };
    let mut m = Settings::new();
    m.insert("max_regs".into(), o.max_regs.into());
    m.insert("regalloc".into(), placement.into());
    m.insert("dac".into(), o.dac.into());
    m.insert("uniformity".into(), o.uniformity.into());
    m.insert("shuffle".into(), o.shuffle.name().into());
    m
}
