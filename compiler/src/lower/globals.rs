//! File-scope variables, `static` locals (module globals) and `shared` variables, with
//! initial bytes from sema's constants.

use super::types::{is_aggregate, num_of, Num};
use super::{ModCx, Storage};
use crate::front::ast::{self, Initializer};
use crate::front::sema::{
    AddrBase, ConstAddress, ConstValue, DeclRef, LocalId, TypeId, TypeKind, Variability,
};
use crate::ir::{DataReloc, GlobalData, GlobalVar, SharedData};
use crate::source::Span;
use cranelift_entity::packed_option::ReservedValue;

/// Creates the module's globals and shared variables for every file-scope declaration.
pub(super) fn lower_globals(cx: &mut ModCx<'_>) {
    for item in &cx.unit.items {
        let ast::Item::Global(decl) = item else {
            continue;
        };
        for d in &decl.declarators {
            let Some(DeclRef::Global(g)) = cx.checked.decl(d) else {
                continue;
            };
            let info = cx.checked.globals[g].clone();
            // An `extern` declaration of an object defined elsewhere in the file.
            if cx.globals.contains_key(&g)
                || (d.init.is_none() && decl.spec.quals.extern_().is_some() && !info.extern_)
            {
                continue;
            }
            let name = cx.name(info.name).to_string();
            let st = define(cx, name, info.ty, info.shared, d.init.as_deref(), d.span);
            cx.globals.insert(g, st);
        }
    }
}

/// Creates the object of a `static` or `shared` local (once, even when its declaration
/// is lowered twice, as in the two passes of `foreach`).
pub(super) fn static_local(cx: &mut ModCx<'_>, l: LocalId, init: Option<&Initializer>) {
    if cx.static_locals.contains_key(&l) {
        return;
    }
    let info = cx.checked.locals[l].clone();
    let func = cx.name(cx.checked.funcs[info.func].name);
    let name = format!("{func}.{}", cx.name(info.name));
    let shared = info.kind == crate::front::sema::LocalKind::Shared;
    let st = define(cx, name, info.ty, shared, init, info.span);
    cx.static_locals.insert(l, st);
}

fn define(
    cx: &mut ModCx<'_>,
    name: String,
    ty: TypeId,
    shared: bool,
    init: Option<&Initializer>,
    span: Span,
) -> Storage {
    let l = cx.types.layout(ty, cx.checked.target);
    if shared {
        if init.is_some() {
            cx.unsupported(span, "an initializer on a `shared` variable");
        }
        // An unsized array (sema allows one) is the launch's dynamic shared memory.
        let dynamic = matches!(cx.types.kind(ty), TypeKind::Array(_, None));
        let sh = cx.module.shared.push(SharedData {
            name,
            size: if dynamic { 0 } else { l.size.max(1) },
            align: l.align.max(1),
            dynamic,
        });
        return Storage::Shared(sh);
    }
    let mut bytes = vec![0u8; l.size as usize];
    let first_addr = cx.addr_inits.len();
    if let Some(init) = init {
        init_bytes(cx, &mut bytes, 0, ty, init);
    }
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    let constant = cx.types.get(ty).is_const;
    let gv = cx.module.globals.push(GlobalData {
        name,
        size: l.size.max(1),
        align: l.align.max(1),
        init: bytes,
        relocs: Vec::new(),
        constant,
    });
    for a in &mut cx.addr_inits[first_addr..] {
        a.global = gv;
    }
    Storage::Global(gv)
}

/// An address constant in a global's initial value, until the object it points into
/// has a global too.
pub(super) struct AddrInit {
    /// The global whose initial value holds the pointer.
    global: GlobalVar,
    /// Its byte offset there.
    offset: u32,
    addr: ConstAddress,
    span: Span,
}

/// Turns every address constant into a relocation of its global (see
/// [`crate::ir::DataReloc`]), once every file-scope and `static` object has its global.
pub(super) fn resolve_addr_inits(cx: &mut ModCx<'_>) {
    for a in std::mem::take(&mut cx.addr_inits) {
        let storage = match a.addr.base {
            AddrBase::Global(g) => cx.globals.get(&g),
            AddrBase::Static(l) => cx.static_locals.get(&l),
        };
        let Some(&Storage::Global(target)) = storage else {
            cx.unsupported(a.span, "an initializer holding the address of this object");
            continue;
        };
        cx.module.globals[a.global].relocs.push(DataReloc {
            offset: a.offset,
            target,
            addend: a.addr.offset,
        });
    }
}

/// Records the address constant of pointer type `ty` written at `off` (in every lane
/// of a varying pointer); its bytes stay zero until the program is loaded.
fn record_address(cx: &mut ModCx<'_>, off: u32, ty: TypeId, addr: ConstAddress, span: Span) {
    let lanes = if cx.types.var(ty) == Variability::Varying {
        cx.lanes()
    } else {
        1
    };
    let size = cx.ptr_size();
    for lane in 0..lanes {
        cx.addr_inits.push(AddrInit {
            // Set by `define` once the global exists.
            global: GlobalVar::reserved_value(),
            offset: off + lane * size,
            addr,
            span,
        });
    }
}

/// Writes the constant initializer of an object of type `ty` at `off`.
fn init_bytes(cx: &mut ModCx<'_>, bytes: &mut [u8], off: u32, ty: TypeId, init: &Initializer) {
    let target = cx.checked.target;
    match init {
        Initializer::Expr(e) => {
            // A constant scalar for a short vector fills every element.
            if let Some((_, n)) = cx.types.as_vector(ty) {
                let elem = cx.types.vector_elem(ty);
                let size = cx.types.layout(elem, target).size;
                for i in 0..n {
                    init_bytes(cx, bytes, off + i * size, elem, init);
                }
                return;
            }
            if is_aggregate(&cx.types, ty) {
                cx.unsupported(e.span, "an aggregate initializer that is not a brace list");
                return;
            }
            if let Some(cv) = cx.checked.const_value(e.id) {
                return encode(cx, bytes, off, ty, cv);
            }
            if let Some(addr) = cx.checked.const_address(e.id) {
                return record_address(cx, off, ty, addr, e.span);
            }
            // A varying leaf with a value per program instance (it reads `programIndex`).
            let Some(lanes) = cx.checked.lane_const_values(e.id).map(<[_]>::to_vec) else {
                return cx.unsupported(e.span, "a global initializer that is not a constant");
            };
            let lane_ty = cx.types.with_var(ty, Variability::Uniform);
            let size = cx.types.layout(lane_ty, target).size;
            for (i, cv) in lanes.into_iter().enumerate() {
                encode(cx, bytes, off + i as u32 * size, lane_ty, cv);
            }
        }
        Initializer::List(items, _) => match cx.types.kind(ty) {
            TypeKind::Struct(sid) => {
                let var = cx.types.var(ty);
                let offs = cx.types.structs[sid].layout(var).offsets.clone();
                for (i, item) in items.iter().enumerate() {
                    let Some(&o) = offs.get(i) else { break };
                    let fty = cx.types.member_type(ty, i);
                    init_bytes(cx, bytes, off + o, fty, item);
                }
            }
            TypeKind::Array(elem, _) => {
                let size = cx.types.layout(elem, target).size;
                for (i, item) in items.iter().enumerate() {
                    init_bytes(cx, bytes, off + i as u32 * size, elem, item);
                }
            }
            TypeKind::Soa(sid, width) => {
                let offs = cx.types.soa_layout(sid, width, target).offsets;
                for (i, item) in items.iter().enumerate() {
                    let Some(&o) = offs.get(i) else { break };
                    let fty = cx.types.soa_member_type(ty, i, target);
                    init_bytes(cx, bytes, off + o, fty, item);
                }
            }
            TypeKind::Vector(_, n) => {
                let elem = cx.types.vector_elem(ty);
                let size = cx.types.layout(elem, target).size;
                for (i, item) in items.iter().take(n as usize).enumerate() {
                    init_bytes(cx, bytes, off + i as u32 * size, elem, item);
                }
            }
            // One value per program instance for a varying scalar.
            _ if items.len() > 1 && cx.types.var(ty) == Variability::Varying => {
                let lane_ty = cx.types.with_var(ty, Variability::Uniform);
                let size = cx.types.layout(lane_ty, target).size;
                for (i, item) in items.iter().enumerate() {
                    init_bytes(cx, bytes, off + i as u32 * size, lane_ty, item);
                }
            }
            _ => {
                if let Some(first) = items.first() {
                    init_bytes(cx, bytes, off, ty, first);
                }
            }
        },
    }
}

/// Stores a constant converted to scalar type `ty` (every lane of a varying one).
fn encode(cx: &mut ModCx<'_>, bytes: &mut [u8], off: u32, ty: TypeId, cv: ConstValue) {
    let Some(num) = num_of(&cx.types, ty) else {
        return;
    };
    let as_f64 = match cv {
        ConstValue::Int(i) => i as f64,
        ConstValue::Float(f) => f,
        ConstValue::Bool(b) => b as i64 as f64,
        ConstValue::Null => 0.0,
    };
    let as_int = match cv {
        ConstValue::Int(i) => i,
        ConstValue::Float(f) => f as i128,
        ConstValue::Bool(b) => b as i128,
        ConstValue::Null => 0,
    };
    let elem: Vec<u8> = match num {
        Num::Bool => vec![(as_int != 0 || as_f64 != 0.0) as u8],
        Num::Int { bits, .. } => as_int.to_le_bytes()[..(bits / 8) as usize].to_vec(),
        Num::Float { bits: 32 } => (as_f64 as f32).to_le_bytes().to_vec(),
        Num::Float { .. } => as_f64.to_le_bytes().to_vec(),
        Num::Ptr => as_int.to_le_bytes()[..cx.ptr_size() as usize].to_vec(),
    };
    let lanes = if cx.types.var(ty) == Variability::Varying {
        cx.lanes()
    } else {
        1
    };
    for lane in 0..lanes {
        let at = (off + lane * elem.len() as u32) as usize;
        if let Some(dst) = bytes.get_mut(at..at + elem.len()) {
            dst.copy_from_slice(&elem);
        }
    }
}
