//! The `dac-gpu` back end, baseline SIMT (no DAC decoupling yet): IR to the
//! [`sim::gpu`] instruction set ([`isel`]), and `spmdc run --target dac-gpu` ([`run`]).
//!
//! Design (see also the back-end section of `lang-spec/dac-gpu-isa.md`):
//!
//! * **One thread per lane, a warp per gang.** Lane = `%laneid`, gang = `%warpid`.
//!   The launch is a one-dimensional block rounded up to whole warps; thread indices
//!   and block extents come from the linear id and hidden parameters (`__ntid_*`).
//!   Lanes past the block's thread count compute like the interpreter's (so a shuffle
//!   reading them sees the same values) but are kept from effects, votes, ballots and
//!   reductions by an `exists` predicate (linear id < threads), which is also the
//!   entry's mask.
//! * **Compiler-managed masks.** The IR's masks (varying `bool`) live in predicate
//!   registers (each thread holds its own lane's bit); masked effects become `@p`
//!   instructions, varying `select` becomes `selp`, and every `brif` (uniform by
//!   construction) becomes a `bra.uni`; `any(mask)` is `vote.any`. Generated code
//!   never diverges the SIMT stack (a `bra.uni` whose lanes disagree faults, which
//!   checks us). One mask discipline is shared with the nyuzi target, and the explicit
//!   masks are what the uniformity and affine analyses of later issues read.
//! * **Uniform values use the uniform datapath** ([`uniform`]): instructions selected
//!   for uniform IR values (by type, or by the uniformity analysis when
//!   [`Options::uniformity`]) carry `.uni` once a fixed point on the selected code
//!   confirms their operands are uniform; they stay in `%r` registers. 64-bit values (`i64`, `f64`, pointers) sit in
//!   even-aligned pairs. Uniform effects that must happen once per gang (atomics) are
//!   done by the gang's first active lane and the result is broadcast with `shfl`.
//! * **Full-warp specialization** ([`isel::full_warp`]): with
//!   [`Options::uniformity`], a `vote.all` on `exists` after the prologue chooses
//!   between two selections of the entry's body: one for warps whose 32 lanes all
//!   exist, selected with `exists` (so the entry mask) a uniform constant true, where
//!   values updated under masks derived from the entry mask are confirmed `.uni` and
//!   masks known all-on drop out of guards and selects; and the general one for
//!   partial warps. Kept only when it pays (fewer static vector instructions, bounded
//!   body size).
//! * **Memory.** Module globals and per-gang stack frames are carved out of hidden
//!   global buffers (hidden kernel parameters `__globals`, `__frames`, placed by
//!   [`run`]). `shared` variables live in the SM's `.shared` memory, laid out per
//!   kernel (only the variables the kernel and its callees name; the bytes are the
//!   kernel's `.shared` size, so they limit occupancy), and are accessed with
//!   `ld.shared`/`st.shared`/`atom.shared` (bank conflicts and shared latency in the
//!   timing model). The space of an access through a pointer is decided statically
//!   by a provenance analysis ([`spaces`]); a pointer to a `.shared` variable holds a
//!   window address ([`spaces::SHARED_WINDOW`] + offset, never null, never a global
//!   address). A shared variable whose pointer may meet another space at one access
//!   (or is stored to memory) has no static space: it keeps the global fallback, a
//!   per-block slice of the hidden `__shared` buffer, and all its accesses are
//!   `.global`. No generic addressing is needed in the simulator.
//! * **Cross-lane operations** use `shfl` and `vote`; reductions and scans are
//!   log-step shuffle trees in the order the IR defines for float sums (`isel/reduce.rs`),
//!   so floating results are bit-identical to the interpreter's.
//! * **Calls are inlined** at selection time (each call site selects the callee's
//!   blocks again with the arguments and the caller's mask as its entry parameters,
//!   its stack slots appended to the gang's frame), except calls of **recursive
//!   functions** (in a call-graph cycle): their bodies are selected once per kernel,
//!   out of line, and called by branching, with a software stack per gang in the
//!   `__frames` buffer (caller-saved values, arguments and result in the callee's
//!   registers, a return-site number and a dispatch; see [`isel`]'s `calls` module).
//!   The simulator's `call`/`ret` are not used: one region of code keeps register
//!   allocation a single, ordinary problem (the call and dispatch edges make the
//!   allocator keep everything live across a call out of the callee's registers).
//! * **Registers** ([`alloc`]): selection gives each value its own virtual register;
//!   the shared linear-scan allocator ([`crate::back::common::regalloc`], as on
//!   nyuzi) assigns `%r`, even-aligned pairs and `%p` under `--max-regs` (default
//!   63), spilling to per-thread local memory (`st.local`/`ld.local` at fixed
//!   offsets) when the budget is exceeded. `num_regs` is what the code uses, so the
//!   default gives about the fewest registers that avoid spills. A budget too small
//!   for one instruction's operands is E0904.
//! * `frem` becomes a runtime routine call (`LegalTarget::DacGpu`), inlined like any.
//! * **`print`** is formatted on the device as on Nyuzi: legalization (shared by both
//!   targets) turns each print into calls of the `stdlib/runtime_print.spmd` routines
//!   (selected once per kernel and called out of line, like recursive functions, not
//!   inlined at every print), whose characters are stores to the serial port address. Selection turns such a
//!   store into a console write: once per gang (its first on lane) an `atom.add` on
//!   the cursor of the hidden `__console` buffer and a byte store at the old cursor.
//!   [`run`] allocates the buffer (1 MiB of text) only for kernels that print and
//!   returns the text as the run's output; blocks and gangs print in the order they
//!   run, the interpreter's order in the functional simulator.
//! * **An entry's return value** is stored by thread 0 of block 0 (lane 0 of gang 0,
//!   where the interpreter reads it) to the hidden `__result` buffer; [`run`] reads it
//!   back as the run's return value.
//! * **Not yet:** 8/16-bit atomics, spilling predicates (they are allocated, from
//!   256), and uniform registers (`%ur`).
//!   These are reported as compile errors, never miscompiled.
//! * **`clock()`** reads `%clock64`: the SM's cycle in timing mode, the gang's
//!   executed warp instructions in functional mode (the interpreter counts its
//!   instructions and Nyuzi reads its cycle counter, so values differ between targets).

pub mod alloc;
pub mod asm;
pub mod decouple;
pub mod isel;
pub mod lanes;
pub mod regdem;
pub mod run;
pub mod run_stats;
pub mod spaces;
pub mod uniform;

pub use asm::listing;
pub use run::{run_on_dac_gpu, DacRunOptions};

/// What programs for the dac-gpu are checked and lowered for: warps of 32 threads,
/// 64-bit pointers.
pub const TARGET: crate::front::sema::Target = crate::front::sema::Target {
    program_count: 32,
    pointer_size: 8,
};

#[cfg(test)]
mod tests;

use crate::diag::Diagnostic;
use crate::ir;
use crate::source::Span;

/// Code generation options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The most 32-bit registers per thread a kernel may use (`--max-regs`); values
    /// that do not fit are spilled, as [`Options::placement`] says. Default
    /// [`alloc::DEFAULT_MAX_REGS`] (63).
    pub max_regs: u32,
    /// Where spilled values go (`--regalloc`): local memory by default, or shared
    /// memory ([`regdem`]).
    pub placement: alloc::Placement,
    /// `--regalloc auto`: the predictor ([`regdem::predict`]) chooses the placement,
    /// and the budget among the occupancy cliffs below `max_regs` unless
    /// [`Options::fixed_budget`] (`placement` is then unused).
    pub predict: bool,
    /// `max_regs` was given (`--max-regs`): the predictor keeps it.
    pub fixed_budget: bool,
    /// Blocks in the launch's grid, when known: the predictor counts waves of them.
    pub grid_blocks: Option<u64>,
    /// Threads per block of the launch the kernels are compiled for (`--block`, or
    /// what `spmdc run` launches); `None`: the machine's largest block. Shared-memory
    /// spill slots are laid out for it.
    pub block_threads: Option<u32>,
    /// Bytes of dynamic shared memory per block the kernels are compiled for (the
    /// unsized `shared` array; `--dynamic-shared`, or what `spmdc run` launches with).
    /// They sit after the static shared variables in `.shared`, so they count in
    /// occupancy, and register demotion lays its slots out after them.
    pub dynamic_shared: u32,
    /// The machine the kernels are compiled for (`--config`): its shared memory and
    /// occupancy rules bound the spill slots demoted to shared memory.
    pub machine: sim::gpu::GpuConfig,
    /// Values the uniformity analysis proves uniform use the uniform datapath too (not
    /// only uniform-typed ones); off with `--no-uniformity`. See [`uniform`].
    pub uniformity: bool,
    /// Decoupled Affine Computation ([`decouple`]): on by default, as on the
    /// command line (`--no-dac` compiles the baseline). An entry the pass cannot
    /// decouple compiles to the baseline either way.
    pub dac: bool,
    /// `--shuffle`: loads another load of the same iteration serves from a
    /// neighbouring lane ([`crate::analysis::shuffle`]) become warp shuffles, with the
    /// original load kept for the edge lanes ([`isel`]'s `shuffle` module): all of
    /// them, or those the cost model keeps for [`Options::machine`] (`auto`). Off by
    /// default.
    pub shuffle: crate::passes::ShuffleMode,
}

impl Options {
    /// The defaults for `machine`: its register limit per thread (63 on the GTX 480)
    /// as the budget, and its cost model for `--shuffle=auto`.
    pub fn for_machine(machine: sim::gpu::GpuConfig) -> Options {
        Options {
            max_regs: machine.max_registers_per_thread.min(alloc::MAX_BUDGET),
            machine,
            ..Options::default()
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_regs: alloc::DEFAULT_MAX_REGS,
            placement: alloc::Placement::Local,
            predict: false,
            fixed_budget: false,
            grid_blocks: None,
            block_threads: None,
            dynamic_shared: 0,
            machine: sim::gpu::GpuConfig::gtx480(),
            uniformity: true,
            dac: true,
            shuffle: crate::passes::ShuffleMode::Off,
        }
    }
}

/// A compiled module: the program and, per kernel (same order as
/// `program.kernels`), the source span of each instruction.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub program: sim::gpu::Program,
    pub lines: Vec<Vec<Option<Span>>>,
    /// The global-variable image (`__globals`), laid out as the kernels address it.
    pub globals: Vec<u8>,
    /// The image's pointers to its own globals (`static int *p = &a;`): the byte of
    /// each 8-byte pointer and the image offset it points to. The launcher adds the
    /// image's address when it places it ([`Compiled::globals_at`]).
    pub global_relocs: Vec<(u32, u64)>,
    /// Shared bytes per block and frame bytes per gang, per kernel.
    pub shared_bytes: Vec<u32>,
    pub frame_bytes: Vec<u32>,
    /// Per kernel, the pcs of `trap` sites (a load from address 0) and what they mean.
    pub traps: Vec<Vec<(usize, &'static str)>>,
    /// Per kernel, what register allocation did (registers, spills).
    pub regs: Vec<alloc::RegReport>,
    /// Per kernel, the allocations `--regalloc auto` weighed, the chosen one first
    /// (empty otherwise).
    pub candidates: Vec<Vec<regdem::Candidate>>,
    /// Per kernel, the virtual block split of a decoupled entry (`decouple::x_split`).
    pub dac_split: Vec<Option<u32>>,
    /// Per kernel, under `--shuffle`: its varying loads and those served by another
    /// load's register (`None` with `--shuffle off`).
    pub shuffles: Vec<Option<crate::analysis::shuffle::ServedCounts>>,
    /// Per kernel, under `--shuffle auto`: the cost model's choices as `//` lines
    /// ([`crate::analysis::shuffle::cost::remarks`]).
    pub shuffle_remarks: Vec<String>,
    /// The dynamic shared bytes per block the kernels are laid out for
    /// ([`Options::dynamic_shared`]): a launch must give exactly these.
    pub dynamic_shared: u32,
}

impl Compiled {
    /// The global-variable image as placed at address `base`: its pointers resolved.
    pub fn globals_at(&self, base: u64) -> Vec<u8> {
        let mut image = self.globals.clone();
        for &(at, target) in &self.global_relocs {
            let at = at as usize;
            let value = base.wrapping_add(target).to_le_bytes();
            image[at..at + 8].copy_from_slice(&value);
        }
        image
    }

    /// The meaning of a fault at instruction `pc` of `kernel` when it is a `trap`.
    pub fn trap_at(&self, kernel: &str, pc: usize) -> Option<&'static str> {
        let k = self.program.kernels.iter().position(|k| k.name == kernel)?;
        let traps = self.traps.get(k)?;
        traps.iter().find(|t| t.0 == pc).map(|t| t.1)
    }

    /// Whether kernel `k` reads its hidden parameter `name` (e.g. `__console`: it
    /// prints).
    pub fn reads_param(&self, k: usize, name: &str) -> bool {
        let Some(kernel) = self.program.kernels.get(k) else {
            return false;
        };
        let Some(pi) = kernel.param_index(name) else {
            return false;
        };
        kernel.insts.iter().any(|i| {
            matches!(i.op, sim::gpu::Op::Ld {
                addr: sim::gpu::Address { base: sim::gpu::AddrBase::Param(p), .. },
                ..
            } if usize::from(p) == pi)
        })
    }

    /// The source span of instruction `pc` of kernel `kernel`.
    pub fn span_of(&self, kernel: &str, pc: usize) -> Option<Span> {
        let k = self.program.kernels.iter().position(|k| k.name == kernel)?;
        self.lines.get(k)?.get(pc).copied().flatten()
    }
}

/// Describes every instruction of a compiled program for a profile or trace
/// ([`crate::profile`]): `[kernel][pc]`, with the text the listing prints and the
/// source span of the line table.
pub fn describe_program(compiled: &Compiled) -> crate::profile::InstTable {
    compiled
        .program
        .kernels
        .iter()
        .enumerate()
        .map(|(k, kernel)| {
            let lines = compiled.lines.get(k);
            let label = |at: u32| format!("$L{at}");
            let func = |f: u32| {
                compiled
                    .program
                    .kernels
                    .get(f as usize)
                    .map_or_else(|| format!("f{f}"), |k| k.name.clone())
            };
            kernel
                .insts
                .iter()
                .enumerate()
                .map(|(pc, inst)| crate::profile::InstDesc {
                    function: kernel.name.clone(),
                    address: pc as u64,
                    text: sim::gpu::asm::inst_text(inst, &kernel.params, &label, &func),
                    span: lines.and_then(|l| l.get(pc).copied().flatten()),
                    place: "no source line",
                })
                .collect()
        })
        .collect()
}

/// Compiles every entry function of `module` into a `.entry` kernel (other functions
/// are inlined where they are called).
pub fn compile_module(module: &ir::Module, options: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    isel::compile_module(module, options)
}
