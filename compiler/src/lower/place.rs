//! Places (lvalues) and the loads and stores that read and write them.
//!
//! A [`Place`] is an address plus the object's type *as laid out in memory*. A varying
//! object (varying type) occupies `programCount` elements; a uniform address then points
//! at the whole block, a varying address at the block of each lane (lane `i` adds
//! `i * sizeof(element)`). A uniform object at a varying address is a gather/scatter.

use super::func::{FnLower, Val};
use super::soa::SoaLane;
use super::types::{ir_type, is_aggregate, leaves};
use super::Storage;
use crate::front::sema::{LocalId, TypeId};
use crate::ir::{BinaryOp, ConvOp, InstData, Scalar, Space, Type, Value};

#[derive(Clone, Copy, Debug)]
pub(super) struct Place {
    /// Uniform or varying `ptr`.
    pub addr: Value,
    /// The object's type in memory.
    pub ty: TypeId,
    pub space: Space,
    /// For a place inside an element of soa storage, that element (see [`super::soa`]).
    pub soa: Option<SoaLane>,
}

impl FnLower<'_, '_> {
    pub fn storage_place(&mut self, st: Storage, ty: TypeId) -> Place {
        let (addr, space) = match st {
            Storage::Slot(s) => (self.stack_addr(s), Space::Private),
            Storage::Global(g) => (self.val(InstData::GlobalAddr { global: g }), Space::Global),
            Storage::Shared(s) => (self.val(InstData::SharedAddr { shared: s }), Space::Shared),
            Storage::Ptr(v) => (v, Space::Generic),
        };
        Place {
            addr,
            ty,
            space,
            soa: None,
        }
    }

    /// The place of a local variable or parameter.
    pub fn local_place(&mut self, local: LocalId) -> Place {
        if self.cx.checked.locals[local].by_ref {
            return self.referred_place(local);
        }
        let ty = self.cx.checked.locals[local].ty;
        if let Some(&st) = self.cx.static_locals.get(&local) {
            return self.storage_place(st, ty);
        }
        let st = match self.locals.get(&local) {
            Some(&st) => st,
            None => Storage::Slot(self.local_slot(local)),
        };
        self.storage_place(st, ty)
    }

    /// `addr + offset` for a constant byte offset.
    pub fn offset(&mut self, p: Place, offset: u32, ty: TypeId) -> Place {
        if offset == 0 {
            return Place { ty, ..p };
        }
        let off = self.ptr_offset_const(i64::from(offset));
        let addr = self.bin(BinaryOp::Iadd, p.addr, off);
        Place { addr, ty, ..p }
    }

    /// `index * size` as a `ptr`-typed byte offset (index: any integer, `signed` says
    /// how to widen it).
    pub fn scaled_index(&mut self, index: Value, signed: bool, size: u32) -> Value {
        let wide = self.to_ptr_int(index, signed);
        let size = self.iconst(Type::uniform(self.ptr_int()), i64::from(size));
        let bytes = self.bin(BinaryOp::Imul, wide, size);
        self.conv(ConvOp::Bitcast, bytes, Scalar::Ptr)
    }

    /// The per-lane address and uniform element type of a varying object: lane `i`'s
    /// element is at `addr + i * sizeof(element)`. (The IR writes varying values only
    /// through varying addresses, so even a varying local's block is addressed per lane.)
    pub fn lane_addr(&mut self, p: Place, t: Type) -> (Value, Type) {
        if !t.varying {
            return (p.addr, t);
        }
        let size = t.scalar.bytes(self.cx.ptr_size());
        let off = self.lane_offset(size);
        let base = self.splat(p.addr);
        (self.bin(BinaryOp::Iadd, base, off), t.to_uniform())
    }

    /// The mask a memory access takes: none for the private frame at a uniform address
    /// (always valid), the current mask elsewhere (inactive lanes must not fault, and
    /// their computed addresses may be anywhere).
    fn access_mask(&mut self, space: Space, addr_varying: bool) -> Option<Value> {
        match space {
            Space::Private if !addr_varying => None,
            _ => Some(self.cur_mask()),
        }
    }

    /// Reads a place: a scalar value, or the place itself for an aggregate.
    pub fn load(&mut self, p: Place) -> Val {
        if let Some(soa) = p.soa {
            return self.soa_load(p, soa);
        }
        if is_aggregate(&self.cx.types, p.ty) {
            return Val::Mem(p);
        }
        match ir_type(&self.cx.types, p.ty) {
            Some(t) => Val::S(self.load_scalar(p, t)),
            None => Val::None,
        }
    }

    fn load_scalar(&mut self, p: Place, t: Type) -> Value {
        let addr_varying = self.ty(p.addr).varying;
        let (addr, t) = self.lane_addr(p, t);
        let mask = self.access_mask(p.space, addr_varying);
        self.load_raw(t, p.space, addr, mask)
    }

    /// Writes a value to a place under the current mask. The value already has the
    /// place's type (up to variability: a uniform value is splatted as needed).
    pub fn store(&mut self, p: Place, v: Val) {
        let mask = self.cur_mask();
        self.store_masked(p, v, mask);
    }

    pub fn store_masked(&mut self, p: Place, v: Val, mask: Value) {
        match v {
            Val::S(v) => self.store_scalar(p, v, mask),
            Val::Mem(src) => self.copy(p, src, mask),
            Val::None => {}
        }
    }

    fn store_scalar(&mut self, p: Place, v: Value, mask: Value) {
        let Some(t) = ir_type(&self.cx.types, p.ty) else {
            return;
        };
        let addr_varying = self.ty(p.addr).varying;
        let v = if t.varying || addr_varying {
            self.splat(v)
        } else {
            v
        };
        let (addr, _) = self.lane_addr(p, t);
        self.ins(InstData::Store {
            space: p.space,
            addr,
            value: v,
            mask: Some(mask),
        });
    }

    /// Copies an aggregate leaf by leaf (`dst` and `src` have the same shape; a uniform
    /// leaf of `src` is broadcast into a varying leaf of `dst`).
    pub fn copy(&mut self, dst: Place, src: Place, mask: Value) {
        if dst.soa.is_some() || src.soa.is_some() {
            let dl = self.leaf_places(dst);
            let sl = self.leaf_places(src);
            if dl.len() != sl.len() {
                self.unsupported("copying between these aggregate types");
                return;
            }
            for (d, s) in dl.into_iter().zip(sl) {
                let v = self.load(s);
                self.store_masked(d, v, mask);
            }
            return;
        }
        let target = self.cx.checked.target;
        let dl = leaves(self.types(), target, dst.ty);
        let sl = leaves(self.types(), target, src.ty);
        if dl.len() != sl.len() {
            self.unsupported("copying between these aggregate types");
            return;
        }
        for ((doff, dty), (soff, sty)) in dl.into_iter().zip(sl) {
            let s = self.offset(src, soff, sty);
            let d = self.offset(dst, doff, dty);
            let v = match self.one_lane_leaf(d, s, mask) {
                Some(v) => Val::S(v),
                None => self.load(s),
            };
            self.store_masked(d, v, mask);
        }
    }

    /// The scalar leaves of the aggregate at `p` as places, in [`leaves`] order.
    fn leaf_places(&mut self, p: Place) -> Vec<Place> {
        if let Some(soa) = p.soa {
            return self.soa_leaves(p, soa);
        }
        let target = self.cx.checked.target;
        leaves(self.types(), target, p.ty)
            .into_iter()
            .map(|(off, ty)| self.offset(p, off, ty))
            .collect()
    }

    /// A uniform leaf `dst` (of a varying struct: a member declared `uniform`) filled
    /// from a uniform leaf at per-lane addresses (`*p` for a varying pointer `p` to a
    /// uniform struct): the lanes may disagree, so, as ISPC does, the value is read
    /// once, through the first lane of `mask`. `None` for every other pair of leaves.
    fn one_lane_leaf(&mut self, dst: Place, src: Place, mask: Value) -> Option<Value> {
        let t = ir_type(&self.cx.types, src.ty)?;
        let dt = ir_type(&self.cx.types, dst.ty)?;
        if t.varying || dt.varying || self.ty(dst.addr).varying || !self.ty(src.addr).varying {
            return None;
        }
        // With no lane on, the load does not happen; any lane index will do then.
        let first = self.lane(crate::ir::LaneOp::FirstLane, &[mask]);
        let last = self.iconst(Type::I32, i64::from(self.lanes()) - 1);
        let lane = self.bin(BinaryOp::Band, first, last);
        let addr = self.lane(crate::ir::LaneOp::Extract, &[src.addr, lane]);
        Some(self.load_raw(t, src.space, addr, Some(mask)))
    }

    /// Stores zero into every leaf of a place.
    pub fn zero_fill(&mut self, p: Place, mask: Value) {
        let target = self.cx.checked.target;
        for (off, ty) in leaves(self.types(), target, p.ty) {
            let Some(t) = ir_type(&self.cx.types, ty) else {
                continue;
            };
            let z = self.zero(t.to_uniform());
            let d = self.offset(p, off, ty);
            self.store_scalar(d, z, mask);
        }
    }

    /// A fresh private object of type `ty` holding `v`: for aggregates that are not
    /// lvalues (call results, `?:`).
    pub fn temp_place(&mut self, ty: TypeId) -> Place {
        let slot = self.slot_for(ty);
        let addr = self.stack_addr(slot);
        Place {
            addr,
            ty,
            space: Space::Private,
            soa: None,
        }
    }
}
