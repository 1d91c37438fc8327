//! Lowering: the checked AST to an [`ir::Module`].
//!
//! [`lower`] turns every defined function into an [`ir::Function`], every file-scope
//! variable and `static` local into an [`ir::GlobalData`], and every `shared` variable into
//! an [`ir::SharedData`]. Stdlib functions have no bodies: calls to them become IR
//! instruction sequences at the call site ([`stdlib`]).
//!
//! The design is deliberately simple; an SSA-promotion pass comes later:
//! - **Every local lives in a private stack slot.** A varying local of type `T` occupies
//!   `programCount * sizeof(T)` bytes, lane `i`'s element at `base + i * sizeof(T)`
//!   (ISPC's layout, sema's [`Layout`](crate::front::sema::Layout)s). Reads are loads;
//!   writes are stores masked by the current execution mask.
//! - **The execution mask is data.** Every function except an `unmasked` one takes its
//!   caller's mask as a hidden last parameter. The mask *state* that control flow changes
//!   lives in private slots too (see [`mask`]), so joins need no phis: the mask after a
//!   join is recomputed from the mask before the construct and the slots.
//! - **Control flow** on uniform conditions is plain `brif`; on varying conditions each
//!   region runs under its narrowed mask and is skipped when that mask is empty
//!   (`brif any(mask)`). See [`stmt`].
//! - **Aggregates** (structs, arrays, short vectors) are values in memory: an aggregate
//!   rvalue is the address of the object. Operators on short vectors are lowered element
//!   by element ([`vector`]), so the IR never sees a vector type. By-value struct parameters are passed as a pointer to a copy
//!   the caller makes; struct returns go through a hidden first pointer parameter to a
//!   slot of the caller ("sret").
//!
//! Source spans are recorded on every instruction ([`ir::Function::spans`]): the line
//! table of the interpreter's and simulators' error messages.
//!
//! Anything not supported yet is reported with E0903 ([`codes::NOT_SUPPORTED_YET`]),
//! never a panic.

mod callees;
mod convert;
mod expr;
mod fn_ptr;
mod func;
mod globals;
mod heap;
mod launch;
mod mask;
mod place;
mod soa;
mod stdlib;
mod stmt;
mod types;
mod vector;

pub use callees::{runtime_order, stdlib_callees};

use cranelift_entity::EntityRef;
use rustc_hash::FxHashMap;

use crate::diag::{codes, Diagnostic};
use crate::front::ast;
use crate::front::intern::Interner;
use crate::front::sema::{Checked, FuncId, GlobalId, LocalId, Types};
use crate::ir::{self, FuncRef, GlobalVar, SharedVar, Signature, StrConst};
use crate::source::{SourceMap, Span};

/// Lowers a checked translation unit to IR for `checked.target`.
///
/// Errors are E0903 diagnostics for constructs lowering does not support yet; the front
/// end has already rejected invalid programs.
pub fn lower(
    unit: &ast::TranslationUnit,
    checked: &Checked,
    interner: &Interner,
    sources: &SourceMap,
) -> Result<ir::Module, Vec<Diagnostic>> {
    lower_with_runtime(unit, checked, interner, sources, false)
}

/// [`lower`], also lowering every runtime routine of legalization (the stdlib
/// functions named [`crate::passes::legalize::RUNTIME_PREFIX`]`*`) when `runtime` is
/// set, whether or not the program calls them: legalization adds the calls later.
pub fn lower_with_runtime(
    unit: &ast::TranslationUnit,
    checked: &Checked,
    interner: &Interner,
    sources: &SourceMap,
    runtime: bool,
) -> Result<ir::Module, Vec<Diagnostic>> {
    let _ = sources;
    let mut cx = ModCx::new(unit, checked, interner);
    cx.declare_functions();
    if runtime {
        cx.declare_runtime();
    }
    cx.lower_declared()
}

/// Lowers the runtime routines named in `routines` and the stdlib functions they call,
/// transitively, and nothing of the user's program: the part of the runtime a module
/// needs ([`crate::driver::runtime`]). Names that are no routine are ignored. Each
/// function is lowered, placed and named as in the whole runtime
/// ([`lower_with_runtime`]), in the order [`callees::runtime_order`] computes.
pub fn lower_runtime(
    unit: &ast::TranslationUnit,
    checked: &Checked,
    interner: &Interner,
    routines: &rustc_hash::FxHashSet<String>,
) -> Result<ir::Module, Vec<Diagnostic>> {
    let order = callees::runtime_order(unit, checked, interner);
    let mut wanted: rustc_hash::FxHashSet<FuncId> = Default::default();
    let mut work: Vec<FuncId> = order
        .iter()
        .filter(|(_, name)| routines.contains(name))
        .map(|(id, _)| *id)
        .collect();
    while let Some(id) = work.pop() {
        if wanted.insert(id) {
            work.extend(callees::stdlib_callees(unit, checked, id));
        }
    }
    let mut cx = ModCx::new(unit, checked, interner);
    globals::lower_globals(&mut cx);
    // The objects of every runtime function's `static` locals, as the whole runtime
    // has them, used or not: globals keep their numbers.
    for (id, _) in &order {
        for (l, init) in callees::static_locals(unit, checked, *id) {
            globals::static_local(&mut cx, l, init);
        }
    }
    let mut names = FxHashMap::default();
    for (id, name) in order.into_iter().filter(|(id, _)| wanted.contains(id)) {
        cx.declare_function(id);
        names.insert(id, name);
    }
    let declared = cx.order.clone();
    let mut module = cx.lower_functions()?;
    for (f, id) in module.functions.values_mut().zip(declared) {
        if let Some(name) = names.remove(&id) {
            f.name = name;
        }
    }
    Ok(module)
}

/// Every runtime routine's name and IR signature, in the standard library's order:
/// what legalization needs to call a routine before its body is lowered.
pub fn runtime_signatures(
    unit: &ast::TranslationUnit,
    checked: &Checked,
    interner: &Interner,
) -> Vec<(String, Signature)> {
    let mut cx = ModCx::new(unit, checked, interner);
    cx.declare_runtime();
    cx.order
        .iter()
        .map(|id| {
            let name = cx.name(cx.checked.funcs[*id].name).to_string();
            (name, cx.abis[id].sig.clone())
        })
        .collect()
}

/// Where a variable lives.
#[derive(Clone, Copy, Debug)]
enum Storage {
    Slot(ir::StackSlot),
    Global(GlobalVar),
    Shared(SharedVar),
    /// At an address held in a value of the entry block (a by-value struct parameter).
    Ptr(ir::Value),
}

/// How a function is called at the IR level.
#[derive(Clone, Debug)]
struct CallAbi {
    func: FuncRef,
    sig: Signature,
    /// The result is returned through a hidden first pointer parameter.
    sret: bool,
}

/// Module-wide lowering state.
struct ModCx<'a> {
    unit: &'a ast::TranslationUnit,
    checked: &'a Checked,
    interner: &'a Interner,
    /// A copy of sema's type arena: member types of structs are interned on demand.
    types: Types,
    module: ir::Module,
    /// Defined functions in module order (the index is the [`FuncRef`]).
    order: Vec<FuncId>,
    abis: FxHashMap<FuncId, CallAbi>,
    /// The launchable copies of `task` functions (see [`launch`]), by task.
    launch_abis: FxHashMap<FuncId, CallAbi>,
    /// The indices in `order` that are launchable copies rather than the function.
    launch_copies: rustc_hash::FxHashSet<usize>,
    globals: FxHashMap<GlobalId, Storage>,
    /// `static` and `shared` locals: one object for the program or the block.
    static_locals: FxHashMap<LocalId, Storage>,
    strings: FxHashMap<String, StrConst>,
    /// Address constants in the initial values of the globals made so far: the global,
    /// the byte of its pointer, and the object it points into (see `globals`). They
    /// are resolved once every object has its global.
    addr_inits: Vec<globals::AddrInit>,
    /// The candidates of calls through function pointers, by signature (see
    /// [`fn_ptr`]), computed on first use.
    fn_ptr_candidates: Option<FxHashMap<crate::front::sema::SigId, Vec<(u32, FuncId)>>>,
    diags: Vec<Diagnostic>,
}

impl<'a> ModCx<'a> {
    fn new(unit: &'a ast::TranslationUnit, checked: &'a Checked, interner: &'a Interner) -> Self {
        let t = checked.target;
        ModCx {
            unit,
            checked,
            interner,
            types: checked.types.clone(),
            module: ir::Module::new(t.program_count, t.pointer_size),
            order: Vec::new(),
            abis: FxHashMap::default(),
            launch_abis: FxHashMap::default(),
            launch_copies: Default::default(),
            globals: FxHashMap::default(),
            static_locals: FxHashMap::default(),
            strings: FxHashMap::default(),
            addr_inits: Vec::new(),
            fn_ptr_candidates: None,
            diags: Vec::new(),
        }
    }

    fn lanes(&self) -> u32 {
        self.checked.target.program_count
    }

    fn ptr_size(&self) -> u32 {
        self.checked.target.pointer_size
    }

    fn name(&self, sym: crate::front::intern::Symbol) -> &'a str {
        self.interner.resolve(sym)
    }

    /// Assigns a [`FuncRef`] and an IR signature to every defined function of the
    /// user's program; the stdlib's are declared when first called.
    fn declare_functions(&mut self) {
        let defined: Vec<FuncId> = self
            .checked
            .defined_funcs()
            .filter(|(_, f)| !f.from_stdlib)
            .map(|(id, _)| id)
            .collect();
        for id in defined {
            self.declare_function(id);
        }
    }

    /// Declares the runtime routines (stdlib functions with bodies whose names start
    /// with the runtime prefix) not declared yet.
    fn declare_runtime(&mut self) {
        let prefix = crate::passes::legalize::RUNTIME_PREFIX;
        let routines: Vec<FuncId> = self
            .checked
            .defined_funcs()
            .filter(|(id, f)| {
                f.from_stdlib
                    && !self.abis.contains_key(id)
                    && self.interner.resolve(f.name).starts_with(prefix)
            })
            .map(|(id, _)| id)
            .collect();
        for id in routines {
            self.declare_function(id);
        }
    }

    /// Assigns the next [`FuncRef`] and an IR signature to defined function `id`.
    fn declare_function(&mut self, id: FuncId) {
        let i = self.order.len();
        let info = &self.checked.funcs[id];
        let mut params = Vec::new();
        // References are passed and returned as the (uniform) address of their object.
        let sret = !info.ret_ref && types::is_aggregate(&self.types, info.ret);
        if sret {
            params.push(ir::Type::PTR);
        }
        for p in &info.params {
            params.push(match p.by_ref {
                true => ir::Type::PTR,
                false => self.abi_type(p.ty),
            });
        }
        let ret = if info.ret_ref {
            Some(ir::Type::PTR)
        } else if sret || self.types.is_void(info.ret) {
            None
        } else {
            Some(self.abi_type(info.ret))
        };
        let sig = Signature {
            params,
            ret,
            takes_mask: !info.flags.unmasked,
        };
        self.abis.insert(
            id,
            CallAbi {
                func: FuncRef::new(i),
                sig,
                sret,
            },
        );
        self.order.push(id);
    }

    /// Lowers the globals and every declared function, with the stdlib functions they
    /// call (which join `order` when first called, see `stdlib`).
    fn lower_declared(mut self) -> Result<ir::Module, Vec<Diagnostic>> {
        globals::lower_globals(&mut self);
        self.lower_functions()
    }

    /// Lowers every declared function, with the stdlib functions they call.
    fn lower_functions(mut self) -> Result<ir::Module, Vec<Diagnostic>> {
        let mut funcs = Vec::with_capacity(self.order.len());
        let mut seen: FxHashMap<String, u32> = FxHashMap::default();
        let mut i = 0;
        while let Some(&id) = self.order.get(i) {
            i += 1;
            let launched = self.launch_copies.contains(&(i - 1));
            let mut f = func::lower_function(&mut self, id, launched);
            // Overloads share a source name: later ones get `.1`, `.2`, ...
            let n = seen.entry(f.name.clone()).or_insert(0);
            if *n > 0 {
                f.name = format!("{}.{}", f.name, n);
            }
            *n += 1;
            funcs.push(f);
        }
        globals::resolve_addr_inits(&mut self);
        if !self.diags.is_empty() {
            return Err(self.diags);
        }
        for f in funcs {
            self.module.functions.push(f);
        }
        Ok(self.module)
    }

    /// The IR type a value of `ty` is passed as: aggregates by (uniform) address.
    fn abi_type(&self, ty: crate::front::sema::TypeId) -> ir::Type {
        types::ir_type(&self.types, ty).unwrap_or(ir::Type::PTR)
    }

    fn unsupported(&mut self, span: Span, what: impl Into<String>) {
        let what = what.into();
        self.diags.push(
            Diagnostic::error(
                codes::NOT_SUPPORTED_YET,
                format!("{what} is not supported yet"),
            )
            .with_primary(span, "lowering to IR does not implement this")
            .with_note("the program is valid; this version of spmdc cannot lower it to IR"),
        );
    }

    fn string(&mut self, s: &str) -> StrConst {
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        let id = self.module.strings.push(s.to_string());
        self.strings.insert(s.to_string(), id);
        id
    }
}
