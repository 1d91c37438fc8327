//! How much of a kernel's dynamic work is uniform: the measure behind issue 6's
//! "kernels dominated by uniform loop control and address arithmetic".
//!
//! The kernel runs once on the reference interpreter with a profile
//! ([`crate::interp::run_profiled`]): how many times each IR instruction of the
//! optimized module ran, once per gang instruction. Each executed instruction that
//! computes or stores something (terminators, barriers and traps are control, not
//! counted, nor are splats: the IR's way of writing a scalar operand of a vector
//! operation) is then classified by its result (a store: by its operands):
//! - **uniform by type**: `uniform`-typed: one scalar per gang on every target, with or
//!   without the analysis;
//! - **uniform by analysis**: `varying`-typed, but the uniformity analysis proves it
//!   uniform, or uniform among the lanes of the divergent region that computes it and
//!   computable once ([`FunctionUniformity::uniform_in`]): the work the
//!   analysis can move off the vector datapath, and the most `--no-uniformity` can add;
//! - **varying**: per-lane work.
//!
//! The shares are a property of the kernel and its gang width, independent of a back
//! end's instruction selection, so they bound what uniformity can buy: a kernel whose
//! analysis-only share is 10% cannot lose 25% of its vector instructions to the
//! analysis (short of the back end's own per-instruction overheads).

use crate::analysis::uniformity::{self, FunctionUniformity};
use crate::interp::InstCounts;
use crate::ir::{Function, Inst, InstData, Module};

/// Dynamic IR instructions of one run by kind (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UniformShare {
    pub by_type: u64,
    pub by_analysis: u64,
    pub varying: u64,
}

impl UniformShare {
    pub fn total(&self) -> u64 {
        self.by_type + self.by_analysis + self.varying
    }

    /// Uniform work (by type or by analysis) in percent of all counted work.
    pub fn uniform_percent(&self) -> f64 {
        percent(self.by_type + self.by_analysis, self.total())
    }

    /// Work only the analysis finds uniform, in percent of all counted work.
    pub fn analysis_percent(&self) -> f64 {
        percent(self.by_analysis, self.total())
    }
}

fn percent(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * part as f64 / total as f64
    }
}

/// The kind of work one instruction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    ByType,
    ByAnalysis,
    Varying,
}

/// Sums `counts` (a profile of `module`) by kind of work.
pub fn classify(module: &Module, counts: &InstCounts) -> UniformShare {
    let mut share = UniformShare::default();
    for (fref, f) in module.functions.iter() {
        let analysis = uniformity::analyze_function(f);
        for (inst, &n) in counts[fref].iter() {
            if n == 0 {
                continue;
            }
            match work_of(f, &analysis, inst) {
                Some(Work::ByType) => share.by_type += n,
                Some(Work::ByAnalysis) => share.by_analysis += n,
                Some(Work::Varying) => share.varying += n,
                None => {}
            }
        }
    }
    share
}

/// What `inst` computes, by its result, or for a store by its operands; `None` for
/// control.
fn work_of(f: &Function, analysis: &FunctionUniformity, inst: Inst) -> Option<Work> {
    let data = &f.insts[inst];
    // A splat is how the IR writes a scalar operand of a vector operation, which both
    // back ends read for free (a scalar source operand, a `.uni` register), not work.
    if data.is_terminator() || matches!(data, InstData::Barrier | InstData::Splat { .. }) {
        return None;
    }
    let values: Vec<_> = match f.inst_result(inst) {
        Some(r) => vec![r],
        None => data.operands().to_vec(),
    };
    if values.is_empty() {
        return None;
    }
    let varying_typed: Vec<_> = values
        .into_iter()
        .filter(|&v| f.value_type(v).varying)
        .collect();
    if varying_typed.is_empty() {
        return Some(Work::ByType);
    }
    let uniform = |v| analysis.is_uniform(v) || analysis.uniform_in(v).is_some();
    Some(if varying_typed.into_iter().all(uniform) {
        Work::ByAnalysis
    } else {
        Work::Varying
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::{run_profiled, Launch, Limits, Memory};

    /// A loop of `v0` iterations with a uniform-typed counter (`v4`), a varying-typed
    /// value the analysis proves uniform (`v5`, `v10`) and per-lane work (`v11`, `v12`).
    const LOOP: &str = "module lanes 4 ptr 4

function export @f(i32) masked {
block0(v0: i32, v1: [bool]):
    v2 = iconst.i32 0
    v3 = splat v2
    jump block1(v2, v3)
block1(v4: i32, v5: [i32]):
    v6 = icmp slt v4, v0
    brif v6, block2, block3
block2:
    v7 = iconst.i32 1
    v8 = iadd v4, v7
    v9 = splat v7
    v10 = iadd v5, v9
    v11 = special lane_index
    v12 = iadd v10, v11
    jump block1(v8, v10)
block3:
    return
}
";

    #[test]
    fn a_profiled_loop_splits_into_work_by_type_by_analysis_and_varying() {
        let module = crate::ir::parse_module(LOOP).expect("parses");
        let entry = module.function_by_name("f").expect("has @f");
        let launch = Launch::single_gang(4, vec![3]);
        let (outcome, counts) = run_profiled(
            &module,
            entry,
            &launch,
            &mut Memory::new(),
            Limits::default(),
        )
        .expect("runs");
        // Every executed instruction is in the profile, once per gang instruction.
        let profiled: u64 = counts[entry].values().sum();
        assert_eq!(profiled, outcome.stats.dynamic_instructions);
        assert_eq!(profiled, 3 + 4 * 2 + 3 * 7 + 1);
        // By type: iconst 0 once; icmp 4 times; iconst 1 and the counter's add 3 times
        // each. By analysis: v10, 3 times. Varying: lane_index and v12, 3 times each.
        // Splats, jumps, branches and the return are not work.
        let share = classify(&module, &counts);
        assert_eq!(
            share,
            UniformShare {
                by_type: 1 + 4 + 3 + 3,
                by_analysis: 3,
                varying: 6,
            }
        );
        assert!((share.uniform_percent() - 100.0 * 14.0 / 20.0).abs() < 1e-9);
        assert!((share.analysis_percent() - 15.0).abs() < 1e-9);
    }

    #[test]
    fn an_empty_profile_has_no_shares() {
        let module = crate::ir::parse_module(LOOP).expect("parses");
        let share = classify(&module, &InstCounts::new());
        assert_eq!(share.total(), 0);
        assert_eq!(share.uniform_percent(), 0.0);
    }
}
