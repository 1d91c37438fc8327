//! `spmdc bench uniformity`: what the uniformity analysis buys in code generation.
//! The suite is `examples/suites/uniformity.toml`; this module measures the uniform
//! share its profiled runs report ([`share_of`]).
//!
//! Each kernel of the suite (examples, most dominated by uniform loop control and
//! address arithmetic, some divergent) runs on both targets in timing mode under each
//! configuration: the default, `--no-uniformity` (only `uniform`-typed values use the
//! scalar/uniform datapath), `--no-skip-empty`, `--force-cfg-opts` and
//! `--no-scalar-datapath` (no scalar/uniform datapath at all: on nyuzi uniform ALU work
//! runs on the vector unit, `back::nyuzi::vectorize`; on dac-gpu no `.uni`: the
//! baseline SIMT compiler). dac-gpu runs compile without Decoupled Affine Computation
//! (`--no-dac`), so that the uniform datapath alone is compared; `bench dac` measures
//! decoupling. Each run reports dynamic vector and scalar instructions (on
//! nyuzi: vector and scalar instructions; on dac-gpu: vector and uniform-datapath warp
//! instructions), cycles and lane utilization, and whether its output buffers equal the
//! interpreter's. The `vector vs --no-uniformity` column (the `change` metric) is
//! the figure that says what the analysis buys: the change of dynamic vector instructions from
//! `--no-uniformity` to the default, per kernel and target. The default row also
//! gives the kernel's *uniform share* ([`share_of`], [`super::uniform_share`], the
//! configurations with `profile = true`): how much
//! of its dynamic IR work is uniform, by type or only by analysis, which says how
//! dominated by uniform work a kernel is and bounds what the analysis can buy.
//!
//! Most uniform-dominated examples declare their loop counters and offsets `uniform`
//! (or use `foreach`), so on nyuzi their types alone already put that work in scalar
//! registers and the analysis has little left to find. Seven of them therefore also
//! run as unannotated twins from `examples/uniformity_unannotated.spmd` (named
//! `KERNEL (plain int)`, listed right after the annotated kernel, with the same
//! launch): the same algorithm written as CUDA or C code is, with `int` counters and
//! offsets that only the analysis proves uniform.

use crate::driver::{self, FrontResult, RunError, RunRequest};

use super::uniform_share::UniformShare;

/// How much of the launch's dynamic work at the front's gang width is uniform, by
/// type and by analysis ([`super::uniform_share`]), from a profiled run of the
/// default pipeline's IR on the reference interpreter.
pub fn share_of(front: &FrontResult, req: &RunRequest<'_>) -> Result<UniformShare, String> {
    let module = driver::lower_front_with_switches(front, true, &Default::default())
        .map_err(|d| super::run::describe("lower", RunError::Compile(d)))?;
    let (_, counts) = driver::profile_module_on_interp(front, &module, req)
        .map_err(|e| super::run::describe("profile", e))?;
    Ok(super::uniform_share::classify(&module, &counts))
}
