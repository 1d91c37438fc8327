//! The runtime routines a module needs, built on demand.
//!
//! Legalization ([`crate::passes::legalize`]) replaces the operations a target lacks
//! by calls to runtime routines written in the language (`stdlib/runtime_*.spmd`).
//! Lowering and optimizing the whole runtime for every process would cost far more
//! than compiling a kernel, and most kernels need a handful of routines or none. So
//! a module's routines are found first ([`legalize::routines_needed`], on a copy, against
//! every routine's signature), and only those, with what they call, are lowered,
//! optimized and legalized ([`runtime_for`]) before being linked in.
//!
//! Each routine is compiled exactly as in the whole runtime: its body depends only on
//! the functions it calls (the inliner works bottom-up), and the set built is closed
//! under calls, both the calls the source makes and those legalization adds. The
//! functions keep the whole runtime's order and names, and the globals its numbering
//! ([`lower::lower_runtime`]), so a linked program is the same as with the whole
//! runtime.
//!
//! Per process, the standard library is checked whole once per target shape
//! ([`Library`], from the program's own parse of it when that is whole), only when a
//! module needs a routine, and each set of routines is built once per switch setting.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::{FxHashMap, FxHashSet};

use super::{prebuilt, run_front, FrontOptions, FrontResult, Stage};
use crate::diag::{codes, Diagnostic};
use crate::front::ast::TranslationUnit;
use crate::front::intern::Interner;
use crate::front::sema;
use crate::ir::Module;
use crate::passes::legalize::{self, LegalTarget, RoutineList, RoutineSig};
use crate::source::SourceMap;
use crate::{lower, passes, timing};

/// The standard library checked whole for one target shape, and every runtime
/// routine's signature.
pub struct Library {
    /// A parse of the standard library (with the program it came with, if any: its
    /// items follow the library's and no library body can see them).
    unit: TranslationUnit,
    interner: Interner,
    checked: sema::Checked,
    /// Every routine, in the standard library's order.
    routines: Vec<(String, RoutineSig)>,
}

impl Library {
    /// Every runtime routine with its signature, in the standard library's order.
    pub fn routines(&self) -> &[(String, RoutineSig)] {
        &self.routines
    }
}

type Built<T> = Result<T, Vec<Diagnostic>>;
type PartKey = (u32, u32, bool, LegalTarget, BTreeSet<String>);

/// The libraries checked so far, by gang width and pointer size.
static LIBRARIES: Cache<(u32, u32), Arc<Library>> = OnceLock::new();
/// The parts built so far, by target shape, switch setting and set of routines.
static PARTS: Cache<PartKey, Module> = OnceLock::new();

/// What a process builds once and shares: values by key, each built by one thread.
type Cache<K, V> = OnceLock<Mutex<FxHashMap<K, Built<V>>>>;

/// Forgets every library and part built so far, so that the next compile pays for
/// them as a new process does (the compile benchmark measures that).
pub fn clear_caches() {
    if let Some(Ok(mut libraries)) = LIBRARIES.get().map(Mutex::lock) {
        libraries.clear();
    }
    if let Some(Ok(mut parts)) = PARTS.get().map(Mutex::lock) {
        parts.clear();
    }
}

/// The library for `target` (gang width and pointer size), checked once per process
/// from a program of its own.
pub fn library(target: sema::Target) -> Result<Arc<Library>, Vec<Diagnostic>> {
    cached_library(target, || library_alone(target))
}

/// The library checked from a program with nothing but the standard library.
fn library_alone(target: sema::Target) -> Result<Library, Vec<Diagnostic>> {
    let options = FrontOptions {
        target,
        whole_stdlib: true,
        ..FrontOptions::default()
    };
    let front = run_front("<runtime>", None, String::new(), &options, Stage::Ast);
    let stdlib = front.stdlib_file;
    check_library(target, front.unit, front.interner, &front.sources, stdlib)
}

/// The library for the target `front` was checked for, from `front`'s own parse of
/// the standard library when none is cached yet and `front` parsed all of it (a
/// program usually gets only the items it reaches): a process parses it once. The
/// program's items follow the library's, so no library body sees them.
pub fn library_of(front: &FrontResult) -> Result<Arc<Library>, Vec<Diagnostic>> {
    let target = checked_target(front);
    if front.stdlib_file.is_none() || !front.stdlib_whole {
        return library(target);
    }
    cached_library(target, || {
        let (unit, interner) = (front.unit.clone(), front.interner.clone());
        check_library(target, unit, interner, &front.sources, front.stdlib_file)
    })
}

/// The target shape `front` was checked for (the default one if it was not checked).
fn checked_target(front: &FrontResult) -> sema::Target {
    front
        .checked
        .as_ref()
        .map_or(FrontOptions::default().target, |c| c.target)
}

fn cached_library(
    target: sema::Target,
    check: impl FnOnce() -> Result<Library, Vec<Diagnostic>>,
) -> Result<Arc<Library>, Vec<Diagnostic>> {
    let key = (target.program_count, target.pointer_size);
    let cache = LIBRARIES.get_or_init(Default::default);
    let mut cache = cache.lock().map_err(|_| poisoned())?;
    cache
        .entry(key)
        .or_insert_with(|| {
            timing::stage("runtime: check the standard library", || {
                check().map(Arc::new)
            })
        })
        .clone()
}

/// Checks every body of the standard library in `unit` (stdlib file `stdlib`).
fn check_library(
    target: sema::Target,
    unit: TranslationUnit,
    interner: Interner,
    sources: &SourceMap,
    stdlib: Option<crate::source::FileId>,
) -> Result<Library, Vec<Diagnostic>> {
    let stdlib = stdlib.ok_or_else(|| internal("no standard library".into()))?;
    let sema_options = sema::Options {
        target,
        check_all_stdlib: true,
        ..sema::Options::default()
    };
    let (checked, diags) = sema::check_with(&unit, &interner, sources, stdlib, &sema_options);
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags.into_iter().filter(Diagnostic::is_error).collect());
    }
    let routines = lower::runtime_signatures(&unit, &checked, &interner)
        .into_iter()
        .map(|(name, sig)| {
            let sig = RoutineSig {
                params: sig.params,
                ret: sig.ret,
                takes_mask: sig.takes_mask,
            };
            (name, sig)
        })
        .collect();
    Ok(Library {
        unit,
        interner,
        checked,
        routines,
    })
}

/// The runtime routines `module` needs for `legal` (see [`legalize::routines_needed`]),
/// by name.
pub fn needed_by(
    front: &FrontResult,
    module: &Module,
    legal: LegalTarget,
) -> Result<Vec<String>, Vec<Diagnostic>> {
    // Most illegal operations of most kernels become native sequences (a division by
    // a power of two, say): try without the library's signatures first.
    if !legalize::may_need_routines(module, legal)
        || legalize::routines_needed(module, legal, &RoutineList(&[])).is_ok()
    {
        return Ok(Vec::new());
    }
    let target = checked_target(front);
    let needed = match prebuilt::linkable(target, legal) {
        Some(known) => legalize::routines_needed(module, legal, known),
        None => {
            legalize::routines_needed(module, legal, &RoutineList(library_of(front)?.routines()))
        }
    };
    needed.map_err(|e| internal(format!("legalizing: {e}")))
}

/// The routines named in `wanted` and everything they call, lowered for `target`,
/// optimized when `optimize`, and legalized for `legal`: ready for
/// [`legalize::link_runtime`]. Built once per process for each set and setting.
pub fn runtime_for(
    target: sema::Target,
    optimize: bool,
    legal: LegalTarget,
    wanted: &[String],
) -> Result<Module, Vec<Diagnostic>> {
    let set: BTreeSet<String> = wanted.iter().cloned().collect();
    let key = (
        target.program_count,
        target.pointer_size,
        optimize,
        legal,
        set.clone(),
    );
    let cache = PARTS.get_or_init(Default::default);
    if let Some(built) = cache.lock().map_err(|_| poisoned())?.get(&key) {
        return built.clone();
    }
    let built = match prebuilt::prebuilt(target, optimize, legal) {
        Some(pre) => timing::stage("read prebuilt", || pre.part(wanted)).map_err(internal),
        None => build(&*library(target)?, optimize, legal, set),
    };
    cache
        .lock()
        .map_err(|_| poisoned())?
        .insert(key, built.clone());
    built
}

/// The whole runtime for `target`: every routine.
pub fn whole_runtime(
    target: sema::Target,
    optimize: bool,
    legal: LegalTarget,
) -> Result<Module, Vec<Diagnostic>> {
    let all: Vec<String> = library(target)?
        .routines()
        .iter()
        .map(|(name, _)| name.clone())
        .collect();
    runtime_for(target, optimize, legal, &all)
}

/// The whole runtime for `target`, built from the library (never read from a prebuilt
/// runtime, which is made from it) and not cached.
pub fn built_whole(
    target: sema::Target,
    optimize: bool,
    legal: LegalTarget,
) -> Result<Module, Vec<Diagnostic>> {
    let library = library(target)?;
    let all = library.routines().iter().map(|(n, _)| n.clone()).collect();
    build(&library, optimize, legal, all)
}

/// The routines named in `wanted` and what they call, built from the library (never
/// read from a prebuilt runtime) and not cached.
pub fn built_part(
    target: sema::Target,
    optimize: bool,
    legal: LegalTarget,
    wanted: &[String],
) -> Result<Module, Vec<Diagnostic>> {
    build(
        &*library(target)?,
        optimize,
        legal,
        wanted.iter().cloned().collect(),
    )
}

/// Lowers and optimizes `set`, growing it until it holds every routine its functions
/// call, directly or once legalized; then legalizes it.
fn build(
    library: &Library,
    optimize: bool,
    legal: LegalTarget,
    mut set: BTreeSet<String>,
) -> Result<Module, Vec<Diagnostic>> {
    // Each round adds at least one routine, so this ends.
    loop {
        let names: FxHashSet<String> = set.iter().cloned().collect();
        let mut module = timing::stage("lower", || {
            lower::lower_runtime(&library.unit, &library.checked, &library.interner, &names)
        })?;
        constant_lane_count(&mut module);
        if optimize {
            timing::stage("optimize", || passes::optimize(&mut module))
                .map_err(|e| internal(format!("optimizing the runtime: {e}")))?;
        }
        let missing = legalize::routines_needed(&module, legal, &RoutineList(library.routines()))
            .map_err(|e| internal(format!("legalizing the runtime: {e}")))?;
        if missing.is_empty() {
            legalize::legalize_functions(&mut module, legal)
                .map_err(|e| internal(format!("legalizing the runtime: {e}")))?;
            return Ok(module);
        }
        set.extend(missing);
    }
}

/// The runtime is built for one gang width: `programCount` (`special lane_count`) is a
/// constant in its routines, so that the tests on it fold (the reductions' and scans'
/// shuffle trees have one step per halving of the gang, written for every width up
/// to 64 under `if (programCount > s)`).
fn constant_lane_count(module: &mut Module) {
    use crate::ir::{InstData, SpecialReg, Type};
    let bits = u64::from(module.lane_count);
    for f in module.functions.values_mut() {
        for data in f.insts.values_mut() {
            if let InstData::Special {
                reg: SpecialReg::LaneCount,
            } = data
            {
                *data = InstData::Iconst {
                    ty: Type::I32,
                    bits,
                };
            }
        }
    }
}

fn internal(msg: String) -> Vec<Diagnostic> {
    vec![Diagnostic::error(
        codes::INTERNAL_ERROR,
        format!("internal compiler error: {msg}"),
    )]
}

fn poisoned() -> Vec<Diagnostic> {
    internal("the runtime cache is poisoned".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::write::write_function;

    const NYUZI: sema::Target = sema::Target {
        program_count: 16,
        pointer_size: 4,
    };
    const DAC_GPU: sema::Target = sema::Target {
        program_count: 32,
        pointer_size: 8,
    };

    fn text(module: &Module, name: &str) -> String {
        let (_, f) = module
            .functions
            .iter()
            .find(|(_, f)| f.name == name)
            .unwrap_or_else(|| panic!("@{name} is missing"));
        let mut out = String::new();
        write_function(&mut out, f, module).expect("writes");
        out
    }

    /// The order the parts are built in is the whole runtime's lowering order (of a
    /// program without functions of its own, which the cached library need not be).
    #[test]
    fn runtime_order_is_the_lowering_order() {
        for target in [NYUZI, DAC_GPU] {
            let lib = library_alone(target).expect("checks");
            let whole = lower::lower_with_runtime(
                &lib.unit,
                &lib.checked,
                &lib.interner,
                &crate::source::SourceMap::new(),
                true,
            )
            .expect("lowers");
            let lowered: Vec<&str> = whole.functions.values().map(|f| f.name.as_str()).collect();
            let order = lower::runtime_order(&lib.unit, &lib.checked, &lib.interner);
            let computed: Vec<&str> = order.iter().map(|(_, n)| n.as_str()).collect();
            assert_eq!(lowered, computed);
        }
    }

    /// Every routine built on its own (with what it calls) is, function for function,
    /// what the whole runtime holds, optimized or not, for both targets.
    #[test]
    fn each_routine_alone_is_as_in_the_whole_runtime() {
        for (target, legal) in [(NYUZI, LegalTarget::Nyuzi), (DAC_GPU, LegalTarget::DacGpu)] {
            for optimize in [true, false] {
                let whole = whole_runtime(target, optimize, legal).expect("builds");
                let lib = library(target).expect("checks");
                let names_in_whole = whole.functions.values().map(|f| f.name.as_str());
                for (name, _) in lib.routines() {
                    let part = runtime_for(target, optimize, legal, std::slice::from_ref(name))
                        .expect("builds");
                    assert!(part.functions.len() <= whole.functions.len());
                    let globals = |m: &Module| -> Vec<String> {
                        m.globals.values().map(|g| g.name.clone()).collect()
                    };
                    assert_eq!(globals(&part), globals(&whole), "{name}: globals");
                    for f in part.functions.values() {
                        assert_eq!(text(&part, &f.name), text(&whole, &f.name), "@{}", f.name);
                    }
                    // The part's functions keep the whole runtime's order.
                    let mut rest = names_in_whole.clone();
                    for f in part.functions.values() {
                        assert!(rest.any(|n| n == f.name), "@{} is out of order", f.name);
                    }
                }
            }
        }
    }
}
