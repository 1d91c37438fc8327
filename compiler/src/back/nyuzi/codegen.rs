//! The code generator's entry points: a legalized IR module to a relocatable
//! [`Object`] (instruction selection, register allocation, frame layout, emission),
//! and its listing.
//!
//! Data: every module global becomes one [`DataObject`] (same index, so
//! `global_addr` relocates against [`super::object::RelocTarget::Data`] of the global's index);
//! shared variables are laid out in declaration order, each at its alignment, the
//! total rounded to 64 bytes ([`shared_layout`]).

use cranelift_entity::EntityRef;

use super::emit::{emit_function, frame_layout, uses_fp, Frame, FrameNeeds};
use super::isel::{self, ScalarUse, SelectOptions};
use super::minst::{MInst, NyuziTarget};
use super::object::{DataObject, Object};
use crate::back::common::mach::MachFunction;
use crate::back::common::regalloc;
use crate::diag::{codes, Diagnostic};
use crate::ir::{FuncRef, Function, Module};
use crate::parallel;
use crate::timing;

/// Byte offset of each shared variable in a block's shared memory, and the total of
/// the static ones (64-byte aligned). The dynamic array (the unsized `shared` one)
/// starts at that total, so its bytes, the launch's, follow the static variables.
pub fn shared_layout(m: &Module) -> (Vec<u32>, u32) {
    let mut off = 0u32;
    let mut offsets = Vec::new();
    for (_, sh) in m.shared.iter() {
        let a = sh.align.clamp(1, 64);
        off = off.div_ceil(a) * a;
        offsets.push(off);
        off += sh.bytes(0);
    }
    let total = off.div_ceil(64) * 64;
    for (o, sh) in offsets.iter_mut().zip(m.shared.values()) {
        if sh.dynamic {
            *o = total;
        }
    }
    (offsets, total)
}

/// A copy of `module` with loop-invariant code motion and then strength reduction of
/// loop address arithmetic applied: what this back end compiles. They run on nyuzi's
/// copy only, so the interpreter and the other back end see the IR unchanged. Both
/// passes read nothing but the function they change, so the functions are copied and
/// reduced in parallel ([`parallel`]), in the module's order.
fn loop_optimized_copy(module: &Module) -> Module {
    let functions: Vec<&Function> = module.functions.values().collect();
    let reduced = parallel::map_in_order(
        functions,
        |f| f.insts.len(),
        |f| {
            let mut f = f.clone();
            timing::stage("licm", || crate::passes::licm::hoist_function(&mut f));
            timing::stage("strength_reduce", || {
                crate::passes::strength_reduce::reduce_function(&mut f)
            });
            f
        },
    );
    Module {
        functions: reduced.into_iter().collect(),
        globals: module.globals.clone(),
        shared: module.shared.clone(),
        strings: module.strings.clone(),
        lane_count: module.lane_count,
        ptr_size: module.ptr_size,
    }
}

/// A global's relocation as a data object's: globals are the first data objects, in
/// the module's order. Nyuzi addresses are 32 bits, so the addend is too (an initial
/// value outside the address space wraps, as the pointer arithmetic would).
fn data_ref(r: &crate::ir::DataReloc) -> super::object::DataRef {
    super::object::DataRef {
        offset: r.offset,
        data: r.target.index(),
        addend: r.addend as i32,
    }
}

/// Adds the spill stores and reloads of the allocated `mf` to `obj`'s counts.
fn count_spill_code(mf: &MachFunction<MInst>, obj: &mut Object) {
    for line in mf.blocks.values().flat_map(|b| &b.insts) {
        match line.inst {
            MInst::Spill { .. } => obj.spill_stores += 1,
            MInst::Reload { .. } => obj.spill_loads += 1,
            _ => {}
        }
    }
}

/// One function's allocated machine code, its frame, how many of its values
/// allocation rematerialized, its shuffle counts and `--shuffle auto`'s remarks.
type Compiled = (
    MachFunction<MInst>,
    Frame,
    u32,
    Option<crate::analysis::shuffle::ServedCounts>,
    String,
);

/// One function's allocated machine code and frame: everything before emission,
/// which depends on nothing but the module and the function (so functions run in
/// parallel, [`parallel`]).
fn compile_function(
    module: &Module,
    fref: FuncRef,
    f: &Function,
    called: bool,
    opts: SelectOptions,
) -> Result<Compiled, Vec<Diagnostic>> {
    let sel = timing::stage("instruction selection", || {
        isel::select_with(module, f, fref.index() as u32, called, opts)
    })?;
    let mut mf = sel.mf;
    let alloc = timing::stage("register allocation", || {
        regalloc::allocate(&mut mf, &NyuziTarget)
    })
    .map_err(|e| {
        vec![Diagnostic::error(
            codes::INTERNAL_ERROR,
            format!("nyuzi: function `{}`: {e}", f.name),
        )]
    })?;
    let layout = |save_fp| {
        let needs = FrameNeeds {
            used: &alloc.used,
            has_calls: sel.has_calls,
            out_args: sel.out_args,
            dynamic_stack: sel.dynamic_stack,
            needs_scratch: sel.needs_scratch,
            save_fp,
            used_slots: &sel.used_slots,
        };
        frame_layout(f, &mf, &needs)
    };
    let mut frame = layout(false);
    if uses_fp(f, &mf, &frame) {
        frame = layout(true);
    }
    Ok((
        mf,
        frame,
        alloc.rematerialized_vregs,
        sel.shuffles,
        sel.shuffle_remarks,
    ))
}

/// Compiles a legalized module (see `driver::lower_for_target`) to an [`Object`].
/// Operations the Nyuzi back end does not select are reported (E0903) with their
/// spans; nothing panics.
pub fn compile_module(module: &Module) -> Result<Object, Vec<Diagnostic>> {
    compile_module_with(module, ScalarUse::Analysis)
}

/// [`compile_module`], with `scalars` deciding what is computed in scalar registers:
/// [`ScalarUse::Types`] for `--no-uniformity`, [`ScalarUse::Minimal`] for
/// `--no-scalar-datapath`.
pub fn compile_module_with(module: &Module, scalars: ScalarUse) -> Result<Object, Vec<Diagnostic>> {
    compile_module_options(
        module,
        SelectOptions {
            scalars,
            ..SelectOptions::default()
        },
    )
}

/// [`compile_module`] with the selector's options (`--shuffle=all` among them).
pub fn compile_module_options(
    module: &Module,
    opts: SelectOptions,
) -> Result<Object, Vec<Diagnostic>> {
    let module = &loop_optimized_copy(module);
    let mut obj = Object::default();
    let mut diags = Vec::new();
    let called = module.called_functions();
    let functions: Vec<_> = module.functions.iter().collect();
    let compiled = parallel::map_in_order(
        functions,
        |(_, f)| f.insts.len(),
        |(fref, f)| compile_function(module, fref, f, called[fref], opts),
    );
    for (result, (_, f)) in compiled.into_iter().zip(module.functions.iter()) {
        let (mf, frame, rematerialized, shuffles, remarks) = match result {
            Ok(done) => done,
            Err(d) => {
                diags.extend(d);
                continue;
            }
        };
        count_spill_code(&mf, &mut obj);
        obj.rematerialized_values += rematerialized;
        if let Some(c) = shuffles {
            obj.shuffles.push((f.name.clone(), c));
        }
        if !remarks.is_empty() {
            obj.shuffle_remarks.push((f.name.clone(), remarks));
        }
        if let Err(e) = timing::stage("emit", || emit_function(&mut obj, f, &mf, &frame)) {
            diags.push(Diagnostic::error(
                codes::INTERNAL_ERROR,
                format!("nyuzi: function `{}`: {e}", f.name),
            ));
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    for (_, g) in module.globals.iter() {
        obj.data.push(DataObject {
            name: g.name.clone(),
            size: g.size,
            align: g.align.max(1),
            init: g.init.clone(),
            relocs: g.relocs.iter().map(data_ref).collect(),
            constant: g.constant,
        });
    }
    let (offsets, size) = shared_layout(module);
    obj.shared_offsets = offsets;
    obj.shared_size = size;
    Ok(obj)
}
