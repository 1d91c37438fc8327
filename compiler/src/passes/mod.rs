//! The IR pass pipeline.
//!
//! Lowering ([`crate::lower`]) is deliberately naive: every local and all mask state live
//! in private stack slots. The passes here clean that up on the [`ir::Module`] before the
//! interpreter or a back end sees it. A [`Pipeline`] is an ordered list of named passes;
//! after each one it can run the IR verifier (always in debug builds, or when asked, as
//! the tests do) so that a pass that breaks the IR is named instead of surfacing later as
//! a wrong result.

pub mod legalize;
pub mod promote;

use crate::ir::{self, verify};

/// The switches of issue 6 that turn parts of the divergence-aware compilation off (or
/// on where they are unsafe), so each part's effect can be measured. The default is
/// everything on and safe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Switches {
    /// `--no-uniformity`: code generation ignores the uniformity analysis (values
    /// typed `varying` but proven uniform are still computed per lane, and only
    /// `uniform`-typed values use the scalar/uniform datapath).
    pub no_uniformity: bool,
    /// `--no-skip-empty`: regions under a divergent branch run even when their mask
    /// is empty (no `brif any(mask)` runtime checks).
    pub no_skip_empty: bool,
    /// `--force-cfg-opts`: the code-duplicating CFG transforms (jump threading, loop
    /// unswitching, tail duplication) apply to divergent branches too.
    pub force_cfg_opts: bool,
}

/// A transformation of a whole module.
pub type PassFn = fn(&mut ir::Module);

/// One named pass.
#[derive(Clone, Copy)]
pub struct Pass {
    pub name: &'static str,
    pub run: PassFn,
}

/// An ordered list of passes.
#[derive(Clone)]
pub struct Pipeline {
    pub passes: Vec<Pass>,
    /// Verify after every pass even in release builds.
    pub verify: bool,
}

impl Pipeline {
    /// The default optimization pipeline.
    pub fn standard() -> Pipeline {
        Pipeline {
            passes: vec![Pass {
                name: "promote",
                run: promote::run_module,
            }],
            verify: false,
        }
    }

    /// Runs the passes in order. `Err` names the pass after which the module no longer
    /// verified, with the verifier's messages.
    pub fn run(&self, module: &mut ir::Module) -> Result<(), String> {
        for pass in &self.passes {
            (pass.run)(module);
            if self.verify || cfg!(debug_assertions) {
                if let Err(errors) = verify::verify_module(module) {
                    let msgs: Vec<String> = errors.iter().take(5).map(|e| e.to_string()).collect();
                    return Err(format!(
                        "pass `{}` produced invalid IR:\n  {}",
                        pass.name,
                        msgs.join("\n  ")
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Runs the standard pipeline on `module`.
pub fn optimize(module: &mut ir::Module) -> Result<(), String> {
    Pipeline::standard().run(module)
}
