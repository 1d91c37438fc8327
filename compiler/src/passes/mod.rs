//! The IR pass pipeline.
//!
//! Lowering ([`crate::lower`]) is deliberately naive: every local and all mask state live
//! in private stack slots. The passes here clean that up on the [`ir::Module`] before the
//! interpreter or a back end sees it. A [`Pipeline`] is an ordered list of named passes;
//! after each one it can run the IR verifier (always in debug builds, or when asked, as
//! the tests do) so that a pass that breaks the IR is named instead of surfacing later as
//! a wrong result.

pub mod cfg;
pub mod compact;
pub mod const_fold;
pub mod dce;
pub mod gvn;
pub mod inline;
pub mod jump_thread;
pub mod legalize;
pub mod licm;
pub mod promote;
pub mod skip_empty;
pub mod strength_reduce;
pub mod tail_dup;
pub mod thread_split;
pub mod unroll;
pub mod unswitch;

use crate::analysis::uniformity::{self, FunctionUniformity};
use crate::ir::{self, verify};

/// Which branches the code-duplicating passes may transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Branches the uniformity analysis proves uniform (the default).
    Uniform,
    /// Branches on uniform-typed conditions only: every `brif any(mask)` counts as
    /// divergent, as without the analysis (`--no-uniformity`).
    Typed,
    /// Every branch (`--force-cfg-opts`).
    All,
}

impl Scope {
    /// The scope the switches ask for.
    pub fn of(switches: &Switches) -> Scope {
        match (switches.force_cfg_opts, switches.no_uniformity) {
            (true, _) => Scope::All,
            (false, true) => Scope::Typed,
            (false, false) => Scope::Uniform,
        }
    }

    /// Whether `brif cond` is out of this scope.
    pub fn excludes(self, func: &ir::Function, res: &FunctionUniformity, cond: ir::Value) -> bool {
        match self {
            Scope::Uniform => branch_is_divergent(func, res, cond),
            Scope::Typed => uniformity::branch_mask(func, cond).is_some(),
            Scope::All => false,
        }
    }
}

/// Whether `brif cond` is (the runtime skip or loop test of) a divergent branch of the
/// source program: `cond` is `any m` or `all m` (through `bnot`) with `m` divergent.
/// Every other `brif` tests a uniform condition. The code-duplicating passes use this
/// to leave divergent branches alone unless `--force-cfg-opts`.
pub fn branch_is_divergent(func: &ir::Function, res: &FunctionUniformity, cond: ir::Value) -> bool {
    uniformity::branch_mask(func, cond).is_some_and(|m| !res.is_uniform(m))
}

/// The switches of issue 6 that turn parts of the divergence-aware compilation off (or
/// on where they are unsafe), so each part's effect can be measured. The default is
/// everything on and safe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Switches {
    /// `--no-uniformity`: code generation ignores the uniformity analysis (values
    /// typed `varying` but proven uniform are still computed per lane, and only
    /// `uniform`-typed values use the scalar/uniform datapath), and so do the
    /// code-duplicating CFG transforms ([`Scope::Typed`]).
    pub no_uniformity: bool,
    /// `--no-skip-empty`: regions under a divergent branch run even when their mask
    /// is empty (no `brif any(mask)` runtime checks).
    pub no_skip_empty: bool,
    /// `--force-cfg-opts`: the code-duplicating CFG transforms (jump threading, loop
    /// unswitching, tail duplication) apply to divergent branches too.
    pub force_cfg_opts: bool,
    /// `--no-inline`: calls stay calls (no [`inline`] pass).
    pub no_inline: bool,
    /// `--no-scalar-datapath`: uniform ALU work runs on the vector datapath too (nyuzi:
    /// `back::nyuzi::vectorize`; dac-gpu: no `.uni` instruction in the warps'
    /// stream). The baseline that measures what the scalar/uniform datapath buys;
    /// the command line sets `no_uniformity` with it.
    pub no_scalar_datapath: bool,
    /// `--unroll`: loops whose trip count folds to a constant are unrolled in full
    /// ([`unroll`]) before the CFG transforms.
    pub unroll: bool,
    /// `--shuffle`: which loads code generation serves from a neighbouring lane's
    /// earlier load of the same iteration ([`crate::analysis::shuffle`]) with lane
    /// moves, reloading only the lanes the move cannot serve.
    pub shuffle: ShuffleMode,
}

/// `--shuffle=off|all|auto|noload|nocorner`: shuffle synthesis (issue 20).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ShuffleMode {
    /// No load is served from another.
    #[default]
    Off,
    /// Every pair the analysis proves.
    All,
    /// The pairs the target's static cost model
    /// ([`crate::analysis::shuffle::cost`]) expects to pay.
    Auto,
    /// Ablation (paper 004's NO LOAD): a paired load is deleted and takes its
    /// source's register of the same lane. Gives wrong results.
    NoLoad,
    /// Ablation (paper 004's NO CORNER): a paired load is only the lane move, with no
    /// reload of the edge lanes. Gives wrong results.
    NoCorner,
}

impl ShuffleMode {
    /// The pairs are computed and some loads may be served from them.
    pub fn is_on(self) -> bool {
        self != ShuffleMode::Off
    }

    /// An ablation of the paper, whose results are wrong by design.
    pub fn is_ablation(self) -> bool {
        matches!(self, ShuffleMode::NoLoad | ShuffleMode::NoCorner)
    }

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ShuffleMode::Off => "off",
            ShuffleMode::All => "all",
            ShuffleMode::Auto => "auto",
            ShuffleMode::NoLoad => "noload",
            ShuffleMode::NoCorner => "nocorner",
        }
    }
}

/// Folds the block parameters that always receive one value ([`cfg::remove_trivial_params`]):
/// `promote` passes every promoted variable to every block, so a condition re-tested
/// after a join reads a parameter instead of the value tested before it, and the CFG
/// transforms could not see that the two are the same.
pub fn trivial_params(module: &mut ir::Module) {
    each_function(module, |_, f| {
        cfg::remove_trivial_params(f);
    });
}

/// Merges blocks into their only predecessor when it jumps to them
/// ([`cfg::merge_jump_chains`]): the copies the CFG transforms leave behind, and the
/// lowering's chains of jumps, cost a jump each. Then deletes the blocks that emptied
/// and every other block no path reaches ([`cfg::remove_unreachable_blocks`]).
pub fn merge_blocks(module: &mut ir::Module) {
    each_function(module, |_, f| {
        cfg::merge_jump_chains(f);
        cfg::remove_unreachable_blocks(f);
    });
}

/// The instructions a module must hold before [`each_function`] runs a pass on more
/// than one thread: below it, starting the threads costs more than they save (every
/// example is below it; a generated 10,000-line source is well above).
const PARALLEL_MIN_INSTS: usize = 20_000;

/// Runs `pass` on every function of `module`, on every core when the module is large
/// ([`PARALLEL_MIN_INSTS`]). For the function-local passes: each function's result
/// depends on itself alone, so the module is the same whatever the threads.
pub fn each_function(
    module: &mut ir::Module,
    pass: impl Fn(ir::FuncRef, &mut ir::Function) + Sync,
) {
    let size: usize = module.functions.values().map(|f| f.insts.len()).sum();
    let funcs: Vec<(ir::FuncRef, &mut ir::Function)> = module.functions.iter_mut().collect();
    if size < PARALLEL_MIN_INSTS {
        funcs.into_iter().for_each(|(r, f)| pass(r, f));
        return;
    }
    crate::parallel::map_in_order(funcs, |(_, f)| f.insts.len(), |(r, f)| pass(r, f));
}

/// The value-level clean-up, run in every setting: [`const_fold`], [`dce`], [`gvn`],
/// [`dce`]. Folding makes expressions equal and leaves values unused; deleting those
/// before numbering keeps a later computation from being tied to a dead earlier one in
/// a dominator (which would make it live across blocks for nothing).
fn cleanup() -> [Pass; 4] {
    [
        Pass {
            name: "const_fold",
            run: const_fold::run_module,
        },
        Pass {
            name: "dce",
            run: dce::run_module,
        },
        Pass {
            name: "gvn",
            run: gvn::run_module,
        },
        Pass {
            name: "dce",
            run: dce::run_module,
        },
    ]
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
    /// The name of every pass some setting of the switches runs, each once, in
    /// pipeline order.
    pub fn every_pass_name() -> Vec<&'static str> {
        let every = Switches {
            no_skip_empty: true,
            unroll: true,
            ..Switches::default()
        };
        let mut names: Vec<&'static str> = Vec::new();
        for p in Pipeline::with_switches(&every).passes {
            if !names.contains(&p.name) {
                names.push(p.name);
            }
        }
        names
    }

    /// The default optimization pipeline: [`Pipeline::with_switches`] of the default
    /// switches.
    pub fn standard() -> Pipeline {
        Pipeline::with_switches(&Switches::default())
    }

    /// The pipeline for `switches`: `inline` (unless `no_inline`), `promote`;
    /// `skip_empty` with `no_skip_empty`; then `trivial_params`, the value clean-up
    /// (`const_fold`, `gvn`, `dce`), the code-duplicating CFG transforms (`tail_dup`,
    /// `jump_thread`, `unswitch`; `unroll` and the clean-up again before them with
    /// `unroll`) on the branches in [`Scope::of`] the switches (proven
    /// uniform; uniform-typed with `no_uniformity`; all with `force_cfg_opts`), then
    /// `merge_blocks` and the value clean-up again (the copies the transforms made and
    /// the blocks they merged expose more).
    pub fn with_switches(switches: &Switches) -> Pipeline {
        let mut passes = Vec::new();
        if !switches.no_inline {
            passes.push(Pass {
                name: "inline",
                run: inline::run_module,
            });
        }
        passes.push(Pass {
            name: "promote",
            run: promote::run_module,
        });
        if switches.no_skip_empty {
            passes.push(Pass {
                name: "skip_empty",
                run: skip_empty::run_module,
            });
        }
        let scope = Scope::of(switches);
        let pick = |uniform: PassFn, typed: PassFn, all: PassFn| match scope {
            Scope::Uniform => uniform,
            Scope::Typed => typed,
            Scope::All => all,
        };
        passes.push(Pass {
            name: "trivial_params",
            run: trivial_params,
        });
        passes.extend(cleanup());
        if switches.unroll {
            passes.push(Pass {
                name: "unroll",
                run: unroll::run_module,
            });
            passes.extend(cleanup());
        }
        passes.extend([
            Pass {
                name: "tail_dup",
                run: pick(
                    tail_dup::run_uniform,
                    tail_dup::run_typed,
                    tail_dup::run_forced,
                ),
            },
            Pass {
                name: "jump_thread",
                run: pick(
                    jump_thread::run_uniform,
                    jump_thread::run_typed,
                    jump_thread::run_forced,
                ),
            },
            Pass {
                name: "unswitch",
                run: pick(
                    unswitch::run_uniform,
                    unswitch::run_typed,
                    unswitch::run_forced,
                ),
            },
            Pass {
                name: "merge_blocks",
                run: merge_blocks,
            },
        ]);
        passes.extend(cleanup());
        Pipeline {
            passes,
            verify: false,
        }
    }

    /// Runs the passes in order. `Err` names the pass after which the module no longer
    /// verified, with the verifier's messages.
    pub fn run(&self, module: &mut ir::Module) -> Result<(), String> {
        self.run_observed(module, &mut |_, _| {})
    }

    /// [`Pipeline::run`], showing `after` the module after each pass, with the pass's
    /// name (`--print-after`).
    pub fn run_observed(
        &self,
        module: &mut ir::Module,
        after: &mut dyn FnMut(&str, &ir::Module),
    ) -> Result<(), String> {
        for pass in &self.passes {
            crate::timing::stage(pass.name, || (pass.run)(module));
            after(pass.name, module);
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
        // What the passes deleted stays in the arenas: renumber once, for the back
        // ends (the passes walk blocks, so compacting between them gains nothing).
        crate::timing::stage("compact", || {
            each_function(module, |_, f| compact::compact_if_sparse(f));
        });
        Ok(())
    }
}

/// Runs the standard pipeline on `module`.
pub fn optimize(module: &mut ir::Module) -> Result<(), String> {
    Pipeline::standard().run(module)
}
