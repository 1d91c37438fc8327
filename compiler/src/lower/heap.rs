//! `new` and `delete`: calls of the standard library's heap routines
//! (`__spmdc_heap_*` in `stdlib/stdlib.spmd`, the same code on every target), with the
//! checks that stop the launch at the program's own line: a `new` the heap cannot hold
//! traps `heap_exhausted`, a `delete` of anything but the start of a live allocation
//! traps `bad_delete`. Only active program instances allocate, free and are checked.

use smallvec::smallvec;

use super::func::{FnLower, Val};
use super::place::Place;
use crate::front::ast::{Expr, NewExpr};
use crate::front::sema::{FuncId, TypeId};
use crate::ir::{self, BinaryOp, IntCC, TrapCode, Type, Value};

/// The heap's size in bytes: `__spmdc_heap_space` in the standard library holds this
/// much (plus 64 bytes to align its start); a larger request fails at once.
pub const HEAP_BYTES: i64 = 4 << 20;

impl FnLower<'_, '_> {
    /// `new T[count]` (or `new T`, `new T(init)`) of pointer type `ty`.
    pub(super) fn lower_new(&mut self, n: &NewExpr, ty: TypeId) -> Val {
        let heap = self.cx.checked.heap;
        let routine = if n.uniform {
            heap.alloc_uniform
        } else {
            heap.alloc_varying
        };
        let Some(elem) = self.cx.types.pointee(ty) else {
            return self.dummy(ty);
        };
        let size = i64::from(self.cx.types.layout(elem, self.cx.checked.target).size);
        let bytes = match &n.count {
            Some(c) => {
                let count = self.scalar(c);
                self.array_bytes(count, size)
            }
            None => self.iconst(Type::I64, size),
        };
        let bytes = if n.uniform { bytes } else { self.splat(bytes) };
        let Some(p) = self.heap_call(routine, bytes) else {
            return self.dummy(ty);
        };
        let null = self.iconst(Type::PTR, 0);
        let failed = self.icmp(IntCC::Eq, p, null);
        self.trap_if_any(failed, TrapCode::HeapExhausted);
        if let Some(init) = &n.init {
            // The memory is zero-filled already, as a brace list wants.
            let mask = self.cur_mask();
            let place = Place {
                addr: p,
                ty: elem,
                space: ir::Space::Generic,
                soa: None,
            };
            self.init_place(place, elem, init, true, mask);
        }
        Val::S(p)
    }

    /// `count * size` bytes, or -1 (which no heap holds) when `count` is negative or
    /// the product would pass the heap's size (so it cannot wrap around).
    fn array_bytes(&mut self, count: Value, size: i64) -> Value {
        let size_v = self.iconst(Type::I64, size);
        let bytes = self.bin(BinaryOp::Imul, count, size_v);
        let limit = self.iconst(Type::I64, HEAP_BYTES / size.max(1));
        let too_many = self.icmp(IntCC::Ugt, count, limit);
        let none = self.iconst(Type::I64, -1);
        self.select(too_many, none, bytes)
    }

    /// `delete ptr;`: frees in every active program instance (a uniform pointer once).
    pub(super) fn lower_delete(&mut self, ptr: &Expr) {
        let heap = self.cx.checked.heap;
        let p = self.scalar(ptr);
        let routine = if self.ty(p).varying {
            heap.free_varying
        } else {
            heap.free_uniform
        };
        let Some(ok) = self.heap_call(routine, p) else {
            return;
        };
        let failed = self.not(ok);
        self.trap_if_any(failed, TrapCode::BadDelete);
    }

    /// Calls heap routine `f` (which sema found) with `arg`, unless no program instance
    /// is active: a `uniform new` or `delete` that no instance reaches must neither
    /// allocate nor free, whether or not the passes skip code under an empty mask
    /// (the result is then zero: `NULL`, or a failure no active instance sees).
    fn heap_call(&mut self, f: Option<FuncId>, arg: Value) -> Option<Value> {
        let Some(fid) = f else {
            self.unsupported("`new` or `delete` without the heap routines");
            return None;
        };
        if !self.cx.abis.contains_key(&fid) && !self.cx.declare_stdlib_body(fid) {
            self.unsupported("`new` or `delete` without the heap routines");
            return None;
        }
        let abi = self.cx.abis[&fid].clone();
        let mask = self.cur_mask();
        self.guarded_call(&abi, smallvec![arg], mask, abi.sig.ret)
    }
}
