//! The driver: runs the compiler's stages for the command line, the tests and any other
//! front end (the playground). The CLI in `main.rs` only parses flags and prints.

use std::path::PathBuf;

use rustc_hash::FxHashSet;

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::front::ast::TranslationUnit;
use crate::front::intern::{Interner, Symbol};
use crate::front::preprocess::{self, Pragma};
use crate::front::stdlib_index::{stdlib_index, stdlib_names};
use crate::front::token::{Tok, Token};
use crate::front::{parse, sema, STDLIB_NAME, STDLIB_SOURCE};
use crate::source::{read_limited, FileId, SourceMap, MAX_SOURCE_BYTES};
use crate::{interp, launch, lower, timing};

pub mod prebuilt;
mod prebuilt_scan;
pub mod runtime;
pub mod tokens;

/// How far the front end should go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    Tokens,
    Ast,
    Check,
}

#[derive(Clone, Debug)]
pub struct FrontOptions {
    /// `-I DIR`: extra `#include` search directories.
    pub include_dirs: Vec<PathBuf>,
    /// `-D NAME[=VALUE]`.
    pub defines: Vec<(String, String)>,
    /// Leave the standard library out (for tests of the front end itself).
    pub no_stdlib: bool,
    /// Parse the whole standard library, not only the items the program reaches
    /// ([`crate::front::stdlib_index`]): for checking the library itself.
    pub whole_stdlib: bool,
    /// The gang width and pointer size the program is checked for (`programCount` and
    /// `sizeof` depend on them).
    pub target: sema::Target,
}

impl Default for FrontOptions {
    fn default() -> Self {
        FrontOptions {
            include_dirs: Vec::new(),
            defines: Vec::new(),
            no_stdlib: false,
            whole_stdlib: false,
            target: sema::Options::default().target,
        }
    }
}

/// Everything the front end produced, with whatever errors it found.
pub struct FrontResult {
    pub sources: SourceMap,
    pub interner: Interner,
    pub main_file: FileId,
    /// `None` with `no_stdlib`.
    pub stdlib_file: Option<FileId>,
    /// The unit holds the whole standard library, not only what the program reaches.
    pub stdlib_whole: bool,
    pub tokens: Vec<Token>,
    pub pragmas: Vec<Pragma>,
    pub unit: TranslationUnit,
    /// Present when the `Check` stage ran.
    pub checked: Option<sema::Checked>,
    pub diags: Diagnostics,
    /// The issue-6 switches every later stage compiles this program with: the pass
    /// pipeline of [`lower_front_with`] and [`lower_for_target`] reads them, and so
    /// every back end that lowers through those. Default (all off) from [`run_front`];
    /// set it before lowering (`spmdc --no-skip-empty ...` does).
    pub switches: crate::passes::Switches,
}

impl FrontResult {
    /// Tokens of the user's files (the main file and its includes), not the stdlib's.
    pub fn user_tokens(&self) -> impl Iterator<Item = &Token> {
        let stdlib = self.stdlib_file;
        self.tokens
            .iter()
            .filter(move |t| Some(t.span.file) != stdlib)
    }
}

/// Reads a source file; `-` reads standard input.
pub fn read_input(path: &str) -> Result<(String, Option<PathBuf>, String), Diagnostic> {
    let unreadable = |e: std::io::Error| {
        Diagnostic::error(
            codes::INPUT_UNREADABLE,
            format!("cannot read `{path}`: {e}"),
        )
    };
    let too_big = || {
        Diagnostic::error(
            codes::INPUT_UNREADABLE,
            format!("`{path}` is larger than {MAX_SOURCE_BYTES} bytes"),
        )
        .with_help(format!(
            "the compiler reads source files of at most {} MiB",
            MAX_SOURCE_BYTES >> 20
        ))
    };
    let bytes = if path == "-" {
        read_limited(std::io::stdin().lock(), MAX_SOURCE_BYTES)
    } else {
        std::fs::File::open(path).and_then(|f| read_limited(f, MAX_SOURCE_BYTES))
    }
    .map_err(unreadable)?
    .ok_or_else(too_big)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Diagnostic::error(
            codes::INPUT_UNREADABLE,
            format!(
                "`{path}` is not valid UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    if path == "-" {
        return Ok(("<stdin>".to_string(), None, text));
    }
    Ok((path.to_string(), Some(PathBuf::from(path)), text))
}

/// The macros ISPC predefines (its `preprocessor.cpp`), for `target`: `ISPC`, the
/// language version spmdc follows, `PI`, the gang width `TARGET_WIDTH`, 32-bit
/// elements, the pointer size, the unsigned type names, 16- and 64-bit floats, and the
/// integer types' limits.
/// `ISPC_TARGET_<ISA>` names one of ISPC's own targets, so none is defined.
pub fn predefined_macros(target: &sema::Target) -> Vec<(String, String)> {
    [
        ("ISPC", "1".to_string()),
        ("ISPC_MAJOR_VERSION", "1".to_string()),
        ("ISPC_MINOR_VERSION", "31".to_string()),
        ("PI", "3.1415926535".to_string()),
        ("TARGET_WIDTH", target.program_count.to_string()),
        ("TARGET_ELEMENT_WIDTH", "4".to_string()),
        ("ISPC_POINTER_SIZE", (target.pointer_size * 8).to_string()),
        ("ISPC_UINT_IS_DEFINED", "1".to_string()),
        ("ISPC_TARGET_HAS_FP16_SUPPORT", "1".to_string()),
        ("ISPC_FP16_SUPPORTED", "1".to_string()),
        ("ISPC_TARGET_HAS_FP64_SUPPORT", "1".to_string()),
        ("ISPC_FP64_SUPPORTED", "1".to_string()),
        ("INT8_MIN", "(-128)".to_string()),
        ("INT8_MAX", "127".to_string()),
        ("INT16_MIN", "(-32768)".to_string()),
        ("INT16_MAX", "32767".to_string()),
        ("INT32_MIN", "(-2147483647 - 1)".to_string()),
        ("INT32_MAX", "2147483647".to_string()),
        ("INT64_MIN", "(-9223372036854775807ll - 1)".to_string()),
        ("INT64_MAX", "9223372036854775807ll".to_string()),
        ("UINT8_MAX", "255".to_string()),
        ("UINT16_MAX", "65535".to_string()),
        ("UINT32_MAX", "4294967295u".to_string()),
        ("UINT64_MAX", "18446744073709551615ull".to_string()),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_string(), v))
    .collect()
}

/// Runs the front end on one source text up to `stage`. Parsing stops there if
/// preprocessing failed badly enough; checking runs only on a unit that parsed cleanly,
/// since sema on a broken tree mostly repeats what the parser said.
pub fn run_front(
    name: &str,
    path: Option<PathBuf>,
    text: String,
    options: &FrontOptions,
    stage: Stage,
) -> FrontResult {
    let mut sources = SourceMap::new();
    let mut interner = Interner::new();
    let stdlib_file = (!options.no_stdlib).then(|| sources.add(STDLIB_NAME, None, STDLIB_SOURCE));
    let main_file = sources.add(name, path, text);
    let files: Vec<FileId> = stdlib_file.into_iter().chain([main_file]).collect();
    let mut diags = Vec::new();
    let predefined = predefined_macros(&options.target);
    let pp_options = preprocess::Options {
        include_dirs: &options.include_dirs,
        defines: &options.defines,
        predefined: &predefined,
    };
    // `-D` definitions could rename the library's tokens: take it whole then.
    let stdlib_whole = options.whole_stdlib || !options.defines.is_empty();
    let pre = timing::stage("preprocess and lex", || match stdlib_file {
        Some(stdlib) if !stdlib_whole => preprocess_reaching(
            &mut sources,
            &mut interner,
            stdlib,
            main_file,
            &pp_options,
            &mut diags,
        ),
        _ => preprocess::preprocess(&mut sources, &mut interner, &files, &pp_options, &mut diags),
    });
    let mut result = FrontResult {
        sources,
        interner,
        main_file,
        stdlib_file,
        stdlib_whole,
        tokens: pre.tokens,
        pragmas: pre.pragmas,
        unit: TranslationUnit::default(),
        checked: None,
        diags: Diagnostics::new(),
        switches: crate::passes::Switches::default(),
    };
    if stage >= Stage::Ast {
        result.unit = timing::stage("parse", || {
            parse::parse(&result.tokens, &result.sources, &mut diags)
        });
    }
    let clean = !diags.iter().any(Diagnostic::is_error);
    if stage >= Stage::Check && clean {
        let sema_options = sema::Options {
            target: options.target,
            stdlib_names: match stdlib_file {
                Some(_) if !stdlib_whole => stdlib_names(),
                _ => &[],
            },
            ..sema::Options::default()
        };
        let (checked, sema_diags) = timing::stage("check", || {
            sema::check_with(
                &result.unit,
                &result.interner,
                &result.sources,
                stdlib_file.unwrap_or(FileId(u32::MAX)),
                &sema_options,
            )
        });
        diags.extend(sema_diags);
        result.checked = Some(checked);
    }
    result.diags.extend(diags);
    result.diags.sort();
    result
}

/// The standard library's heap routines, which a program using `new` or `delete` calls.
const HEAP_ROUTINES: [&str; 4] = [
    "__spmdc_heap_alloc_u",
    "__spmdc_heap_alloc_v",
    "__spmdc_heap_free_u",
    "__spmdc_heap_free_v",
];

/// Preprocesses the user's `main` file, then the standard library items (of `stdlib`)
/// that its tokens reach ([`crate::front::stdlib_index`]), as one stream, the library's
/// first.
fn preprocess_reaching(
    sources: &mut SourceMap,
    interner: &mut Interner,
    stdlib: FileId,
    main: FileId,
    options: &preprocess::Options,
    diags: &mut Vec<Diagnostic>,
) -> preprocess::Preprocessed {
    let user = preprocess::preprocess_user(sources, interner, &[main], options, diags);
    let mut mentioned: FxHashSet<Symbol> = user
        .tokens
        .iter()
        .filter_map(|t| match t.tok {
            Tok::Ident(s) | Tok::TypeName(s) | Tok::TemplateName(s) => Some(s),
            _ => None,
        })
        .collect();
    // `new` and `delete` call the heap routines (see `lower::heap`).
    if user
        .tokens
        .iter()
        .any(|t| matches!(t.tok, Tok::KwNew | Tok::KwDelete))
    {
        for name in HEAP_ROUTINES {
            mentioned.insert(interner.intern(name));
        }
    }
    let parts = stdlib_index().reachable(mentioned.iter().map(|&s| interner.resolve(s)));
    let library = preprocess::preprocess_parts(sources, interner, stdlib, &parts, diags);
    preprocess::join(library, user)
}

/// Runs `f` on a thread with a large stack: recursive passes over deeply nested
/// (but legal) programs must not overflow the default 8 MiB main-thread stack.
pub fn with_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    const STACK: usize = 256 << 20;
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(f)
        .expect("failed to spawn the compiler thread")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// What `spmdc run` asks for.
#[derive(Clone, Debug)]
pub struct RunRequest<'a> {
    /// Run the optimization passes before the interpreter (see [`OPTIMIZE_BY_DEFAULT`]).
    pub optimize: bool,
    pub entry: &'a str,
    pub args: &'a [String],
    pub grid: Option<&'a str>,
    pub block: Option<&'a str>,
    /// `--dynamic-shared BYTES`: the unsized `shared` array's bytes per block.
    pub dynamic_shared: Option<&'a str>,
    pub limits: interp::Limits,
}

/// Why a run did not produce results; each maps to its own exit code.
#[derive(Debug)]
pub enum RunError {
    /// The program does not compile (or lower): exit 1.
    Compile(Vec<Diagnostic>),
    /// The launch request is wrong (entry, arguments, shape): exit 2.
    Launch(Vec<launch::LaunchError>),
    /// The kernel trapped at run time: exit 3.
    Trap(interp::RuntimeError),
}

/// Lowers a cleanly checked program to IR for the target it was checked for. Debug
/// builds (and so every test) run the IR verifier on the result; a failure there is a
/// compiler bug, reported as such rather than run.
pub fn lower_front(front: &FrontResult) -> Result<crate::ir::Module, Vec<Diagnostic>> {
    lower_front_with(front, OPTIMIZE_BY_DEFAULT)
}

/// Whether [`lower_front`] runs the IR pass pipeline ([`crate::passes`]).
pub const OPTIMIZE_BY_DEFAULT: bool = true;

/// [`lower_front`], running the pass pipeline ([`crate::passes::Pipeline::with_switches`]
/// of `front.switches`) on the lowered module when `optimize` is set; a pass that breaks
/// the IR is reported as an internal error naming the pass.
pub fn lower_front_with(
    front: &FrontResult,
    optimize: bool,
) -> Result<crate::ir::Module, Vec<Diagnostic>> {
    lower_front_with_switches(front, optimize, &front.switches)
}

/// [`lower_front_with`] with explicit switches instead of `front.switches`.
pub fn lower_front_with_switches(
    front: &FrontResult,
    optimize: bool,
    switches: &crate::passes::Switches,
) -> Result<crate::ir::Module, Vec<Diagnostic>> {
    lower_front_observed(front, optimize, switches, &mut |_, _| {})
}

/// [`lower_front_with_switches`], showing `after` the module as lowered (stage
/// `lower`) and after each pass of the pipeline (`--print-after`).
pub fn lower_front_observed(
    front: &FrontResult,
    optimize: bool,
    switches: &crate::passes::Switches,
    after: &mut dyn FnMut(&str, &crate::ir::Module),
) -> Result<crate::ir::Module, Vec<Diagnostic>> {
    let mut module = match &front.checked {
        Some(checked) if !front.diags.has_errors() => timing::stage("lower", || {
            lower::lower(&front.unit, checked, &front.interner, &front.sources)
        })?,
        _ => {
            return Err(front
                .diags
                .iter()
                .filter(|d| d.is_error())
                .cloned()
                .collect())
        }
    };
    if cfg!(debug_assertions) {
        verified(&module, "lowering")?;
    }
    after("lower", &module);
    if optimize {
        let pipeline = crate::passes::Pipeline::with_switches(switches);
        if let Err(e) = timing::stage("optimize", || pipeline.run_observed(&mut module, after)) {
            return Err(vec![Diagnostic::error(
                codes::INTERNAL_ERROR,
                format!("internal compiler error: {e}"),
            )]);
        }
    }
    Ok(module)
}

pub use crate::passes::legalize::LegalTarget;

/// The IR for a back end: lowered, optimized (when `optimize`), linked with the
/// runtime routines, legalized for `target`, unused runtime routines removed,
/// verified. Operations legalization could not rewrite stay in the module:
/// [`crate::passes::legalize::remaining_illegal`] lists them.
pub fn lower_for_target(
    front: &FrontResult,
    optimize: bool,
    target: LegalTarget,
) -> Result<crate::ir::Module, Vec<Diagnostic>> {
    lower_for_target_with_switches(front, optimize, target, &front.switches)
}

/// [`lower_for_target`] with explicit switches instead of `front.switches` (the
/// runtime routines linked in are always built with the standard pipeline).
pub fn lower_for_target_with_switches(
    front: &FrontResult,
    optimize: bool,
    target: LegalTarget,
    switches: &crate::passes::Switches,
) -> Result<crate::ir::Module, Vec<Diagnostic>> {
    let module = lower_front_with_switches(front, optimize, switches)?;
    finish_for_target(front, module, optimize, target, switches)
}

/// The rest of [`lower_for_target_with_switches`] for a module already lowered from
/// `front` (and optimized when `optimize`, by [`lower_front_with_switches`]): the
/// runtime routines linked in, legalized, verified. Lets a caller that needs the
/// optimized IR as well lower it once.
pub fn finish_for_target(
    front: &FrontResult,
    mut module: crate::ir::Module,
    optimize: bool,
    target: LegalTarget,
    switches: &crate::passes::Switches,
) -> Result<crate::ir::Module, Vec<Diagnostic>> {
    let internal = |msg: String| {
        vec![Diagnostic::error(
            codes::INTERNAL_ERROR,
            format!("internal compiler error: {msg}"),
        )]
    };
    let checked = front
        .checked
        .as_ref()
        .expect("a lowered program was checked");
    let needed = timing::stage("runtime: routines needed", || {
        runtime::needed_by(front, &module, target)
    })?;
    if !needed.is_empty() {
        let runtime = timing::stage("runtime: build routines", || {
            runtime::runtime_for(checked.target, optimize, target, &needed)
        })?;
        crate::passes::legalize::link_runtime(&mut module, &runtime);
    }
    timing::stage("legalize", || {
        crate::passes::legalize::legalize(&mut module, target)
    })
    .map_err(internal)?;
    // Legalization's calls come after the pipeline's inliner: the short routines are
    // inlined here (`--no-inline` keeps them calls, as it keeps every call).
    if optimize && !switches.no_inline {
        timing::stage("inline runtime routines", || {
            crate::passes::legalize::inline_routines(&mut module, target)
        })
        .map_err(internal)?;
    }
    // As after lowering: debug builds, and so every test, verify; a release compile
    // does not pay for it.
    if cfg!(debug_assertions) {
        verified(&module, "legalization")?;
    }
    Ok(module)
}

/// The verifier's complaints about `module`, made by `stage`, as internal errors.
fn verified(module: &crate::ir::Module, stage: &str) -> Result<(), Vec<Diagnostic>> {
    crate::ir::verify::verify_module(module).map_err(|errors| {
        errors
            .iter()
            .map(|e| {
                Diagnostic::error(
                    codes::INTERNAL_ERROR,
                    format!("internal compiler error: {stage} produced invalid IR: {e}"),
                )
            })
            .collect()
    })
}

/// Runs an entry of a checked program on the reference interpreter: lowers it, binds
/// the arguments, copies the buffers in, runs the launch and reads the buffers back.
/// The compiler's switches a run's code was built with, for its JSON record: the
/// optimization pipeline and the pass switches (`--no-uniformity`, `--shuffle`, ...).
pub fn compiler_settings(front: &FrontResult, optimize: bool) -> launch::Settings {
    let s = &front.switches;
    let mut m = launch::Settings::new();
    for (k, v) in [
        ("optimize", optimize),
        ("inline", !s.no_inline),
        ("uniformity", !s.no_uniformity),
        ("skip_empty", !s.no_skip_empty),
        ("force_cfg_opts", s.force_cfg_opts),
        ("scalar_datapath", !s.no_scalar_datapath),
    ] {
        m.insert(k.into(), v.into());
    }
    m.insert("shuffle".into(), s.shuffle.name().into());
    m
}

fn checked_program_count(front: &FrontResult) -> u32 {
    front.checked.as_ref().map_or(0, |c| c.target.program_count)
}

pub fn run_on_interp(
    front: &FrontResult,
    req: &RunRequest<'_>,
) -> Result<launch::RunResult, RunError> {
    let module = lower_front_with(front, req.optimize).map_err(RunError::Compile)?;
    run_module_on_interp(front, &module, req)
}

/// [`run_on_interp`] on a module already lowered from `front` (for instance by
/// [`lower_for_target`]); `req.optimize` is not used.
pub fn run_module_on_interp(
    front: &FrontResult,
    module: &crate::ir::Module,
    req: &RunRequest<'_>,
) -> Result<launch::RunResult, RunError> {
    interp_launch(front, module, req, false, None).map(|(r, _)| r)
}

/// [`run_module_on_interp`], recording into `recorder` ([`interp::run_recorded`]).
pub fn record_module_on_interp(
    front: &FrontResult,
    module: &crate::ir::Module,
    req: &RunRequest<'_>,
    recorder: &mut sim::record::Recorder,
) -> Result<launch::RunResult, RunError> {
    interp_launch(front, module, req, false, Some(recorder)).map(|(r, _)| r)
}

/// [`run_module_on_interp`], also counting how many times each IR instruction ran
/// ([`interp::run_profiled`]).
pub fn profile_module_on_interp(
    front: &FrontResult,
    module: &crate::ir::Module,
    req: &RunRequest<'_>,
) -> Result<(launch::RunResult, interp::InstCounts), RunError> {
    interp_launch(front, module, req, true, None).map(|(r, c)| (r, c.unwrap_or_default()))
}

fn interp_launch(
    front: &FrontResult,
    module: &crate::ir::Module,
    req: &RunRequest<'_>,
    profile: bool,
    recorder: Option<&mut sim::record::Recorder>,
) -> Result<(launch::RunResult, Option<interp::InstCounts>), RunError> {
    let checked = front
        .checked
        .as_ref()
        .expect("a lowered program was checked");
    let request = launch::LaunchRequest {
        entry: req.entry,
        args: req.args,
        grid: req.grid,
        block: req.block,
        dynamic_shared: req.dynamic_shared,
        program_count: checked.target.program_count,
    };
    let mut prepared =
        launch::prepare(checked, &front.interner, &request).map_err(RunError::Launch)?;
    let entry = module
        .function_by_name(&prepared.signature.name)
        .ok_or_else(|| {
            RunError::Compile(vec![Diagnostic::error(
                codes::NO_SUCH_ENTRY,
                format!("entry `{}` was not lowered", prepared.signature.name),
            )])
        })?;
    let mut memory = interp::Memory::new();
    let bits: Vec<u64> = prepared
        .signature
        .params
        .iter()
        .zip(&prepared.args)
        .map(|(p, a)| match a {
            launch::ArgValue::Scalar(v) => Ok(v.to_bits()),
            launch::ArgValue::Buffer(b) => memory.try_add_buffer(b.bytes(), &p.name),
        })
        .collect::<Result<_, _>>()
        .map_err(|msg| {
            RunError::Launch(vec![launch::LaunchError::new(
                launch::ErrorKind::TooLarge,
                msg,
            )
            .with_help(
                "run it on `--target dac-gpu`, or give the interpreter smaller buffers",
            )])
        })?;
    let shape = interp::Launch {
        dynamic_shared: prepared.config.dynamic_shared,
        ..interp::Launch::new(prepared.config.grid, prepared.config.block, bits.clone())
    };
    let (outcome, counts) = if let Some(recorder) = recorder {
        let o = interp::run_recorded(module, entry, &shape, &mut memory, req.limits, recorder)
            .map_err(RunError::Trap)?;
        (o, None)
    } else if profile {
        let (o, c) = interp::run_profiled(module, entry, &shape, &mut memory, req.limits)
            .map_err(RunError::Trap)?;
        (o, Some(c))
    } else {
        let o = timing::stage("simulate", || {
            interp::run(module, entry, &shape, &mut memory, req.limits)
        })
        .map_err(RunError::Trap)?;
        (o, None)
    };
    for (arg, addr) in prepared.args.iter_mut().zip(&bits) {
        if let launch::ArgValue::Buffer(b) = arg {
            if let Some(bytes) = memory.buffer(*addr) {
                b.bytes_mut().copy_from_slice(bytes);
            }
        }
    }
    let mut stats = launch::Stats::new();
    let s = outcome.stats;
    for (key, value) in [
        (launch::Stats::DYNAMIC_INSTRUCTIONS, s.dynamic_instructions),
        ("lane_operations", s.lane_operations),
        ("barriers", s.barriers),
        ("loads", s.loads),
        ("stores", s.stores),
        ("atomics", s.atomics),
        ("calls", s.calls),
        ("blocks", s.blocks),
        ("gangs", s.gangs),
    ] {
        stats.set(key, value);
    }
    let ret = prepared
        .signature
        .ret
        .zip(outcome.ret)
        .map(|(ty, bits)| launch::Value::from_bits(ty, bits));
    let mut result =
        launch::RunResult::from_launch(&prepared, "interp", ret, outcome.output, stats);
    result
        .machine
        .insert("program_count".into(), checked_program_count(front).into());
    result.compiler = compiler_settings(front, req.optimize);
    Ok((result, counts))
}
