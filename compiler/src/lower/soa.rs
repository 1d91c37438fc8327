//! `soa<N>` data: elements of soa arrays, their members, and pointers to elements.
//!
//! An `soa<N> S` block ([`TypeKind::Soa`]) stores each member of `S` as `N` uniform
//! values, one per element, in the layout [`Types::soa_layout`] gives; an array or
//! allocation of blocks holds `N` elements per block. Everything here is address
//! arithmetic, so the IR and the back ends see only ordinary loads and stores:
//!
//! - **An element** is a block address plus a lane `0 .. N`: element `i` of soa data
//!   starting at block `b` is lane `i % N` of block `b + (i / N) * sizeof(block)`.
//! - **A place inside an element** ([`SoaLane`] on a [`Place`]) has the address of the
//!   soa form of the object (where its `N` copies start) and its type as the program
//!   sees it (uniform-bound). Members and array elements move the address by their
//!   soa-form offsets; once the object is a scalar, its own slot is at
//!   `address + lane * sizeof(scalar)` and the place becomes an ordinary one.
//!   Aggregates are read and written leaf by leaf ([`FnLower::soa_leaves`]).
//! - **A pointer to an element** is one address: its block's plus its lane. Blocks are
//!   aligned to at least `N` bytes, so the lane sits in the low bits, and pointers
//!   compare and test for null as addresses do; arithmetic decodes, moves by elements
//!   and encodes again.

use super::func::{FnLower, Val};
use super::place::Place;
use super::types::ir_type;
use crate::front::sema::{StructId, TypeId, TypeKind, Types, Variability};
use crate::ir::{BinaryOp, ConvOp, IntCC, Scalar, Space, Type, Value};

/// The element of soa storage a place belongs to (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(super) struct SoaLane {
    /// The element's lane in its block: a pointer-width integer, uniform or varying.
    pub lane: Value,
    /// `N` of `soa<N>`.
    pub width: u32,
}

impl FnLower<'_, '_> {
    fn int_const(&mut self, v: i64) -> Value {
        let pi = self.ptr_int();
        self.iconst(Type::uniform(pi), v)
    }

    fn addr_as_int(&mut self, p: Value) -> Value {
        let pi = self.ptr_int();
        self.conv(ConvOp::Bitcast, p, pi)
    }

    fn int_as_addr(&mut self, i: Value) -> Value {
        self.conv(ConvOp::Bitcast, i, Scalar::Ptr)
    }

    /// A pointer to an element as its block's address and its lane. The block is
    /// computed by pointer arithmetic (`ptr - lane`), never from an integer: only the
    /// low bits of an address are read as a number.
    fn soa_decode(&mut self, ptr: Value, width: u32) -> (Value, Value) {
        let i = self.addr_as_int(ptr);
        let low = self.int_const(i64::from(width) - 1);
        let lane = self.bin(BinaryOp::Band, i, low);
        let back = self.int_as_addr(lane);
        (self.bin(BinaryOp::Isub, ptr, back), lane)
    }

    /// The pointer to the element at `lane` of the block at `block`.
    fn soa_encode(&mut self, block: Value, lane: Value) -> Value {
        let off = self.int_as_addr(lane);
        self.bin(BinaryOp::Iadd, block, off)
    }

    /// The element `k` elements after `(block, lane)` (`k` a pointer-width integer,
    /// possibly negative): lane `(lane + k) mod N` of the block `floor((lane + k) / N)`
    /// blocks on.
    fn soa_advance(
        &mut self,
        block: Value,
        lane: Value,
        k: Value,
        sid: StructId,
        width: u32,
    ) -> (Value, Value) {
        let target = self.cx.checked.target;
        let block_size = self.cx.types.soa_layout(sid, width, target).size;
        let e = self.bin(BinaryOp::Iadd, lane, k);
        let shift = self.int_const(i64::from(width.trailing_zeros()));
        let blocks = self.bin(BinaryOp::Sshr, e, shift);
        let low = self.int_const(i64::from(width) - 1);
        let lane = self.bin(BinaryOp::Band, e, low);
        let size = self.int_const(i64::from(block_size));
        let bytes = self.bin(BinaryOp::Imul, blocks, size);
        (self.move_addr(block, bytes), lane)
    }

    /// `addr + bytes` for a signed pointer-width byte count, added or subtracted by its
    /// magnitude: a negative count is never widened into an address.
    fn move_addr(&mut self, addr: Value, bytes: Value) -> Value {
        let zero = self.int_const(0);
        let back = self.icmp(IntCC::Slt, bytes, zero);
        let negated = self.bin(BinaryOp::Isub, zero, bytes);
        let magnitude = self.select(back, negated, bytes);
        let magnitude = self.int_as_addr(magnitude);
        let fwd = self.bin(BinaryOp::Iadd, addr, magnitude);
        let bwd = self.bin(BinaryOp::Isub, addr, magnitude);
        self.select(back, bwd, fwd)
    }

    /// The place of element `index` (any integer; `signed` says how to widen it) of
    /// the soa data `ptr` points to, or of the element `ptr` itself. For an array,
    /// `ptr` is the address of its first block, which holds element 0 (`array`).
    pub fn soa_element(
        &mut self,
        ptr: Value,
        array: bool,
        index: Option<(Value, bool)>,
        block_ty: TypeId,
        space: Space,
    ) -> Option<Place> {
        let (sid, width) = self.cx.types.as_soa(block_ty)?;
        let (mut block, mut lane) = if array {
            (ptr, self.int_const(0))
        } else {
            self.soa_decode(ptr, width)
        };
        if let Some((i, signed)) = index {
            let k = self.to_ptr_int(i, signed);
            (block, lane) = self.soa_advance(block, lane, k, sid, width);
        }
        let is_const = self.cx.types.get(block_ty).is_const;
        let ty = self.types().struct_ty(sid, Variability::Uniform, is_const);
        Some(Place {
            addr: block,
            ty,
            space,
            soa: Some(SoaLane { lane, width }),
        })
    }

    /// `&element`: the element pointer of an element place (varying if `varying`).
    pub fn soa_address(&mut self, p: Place, soa: SoaLane, varying: bool) -> Value {
        let a = self.soa_encode(p.addr, soa.lane);
        if varying {
            self.splat(a)
        } else {
            a
        }
    }

    /// `ptr ± n` for a pointer to soa data of type `block_ty`, `n` elements.
    pub fn soa_ptr_add(
        &mut self,
        ptr: Value,
        n: Value,
        signed: bool,
        negate: bool,
        block_ty: TypeId,
    ) -> Value {
        let Some((sid, width)) = self.cx.types.as_soa(block_ty) else {
            return ptr;
        };
        let (block, lane) = self.soa_decode(ptr, width);
        let k = self.to_ptr_int(n, signed);
        let k = if negate {
            let zero = self.int_const(0);
            self.bin(BinaryOp::Isub, zero, k)
        } else {
            k
        };
        let (block, lane) = self.soa_advance(block, lane, k, sid, width);
        self.soa_encode(block, lane)
    }

    /// `a - b` for pointers to soa data of type `block_ty`: the number of elements
    /// between them, as an `int64`.
    pub fn soa_ptr_diff(&mut self, a: Value, b: Value, block_ty: TypeId) -> Value {
        let Some((sid, width)) = self.cx.types.as_soa(block_ty) else {
            return self.int_const(0);
        };
        let target = self.cx.checked.target;
        let block_size = self.cx.types.soa_layout(sid, width, target).size.max(1);
        let (ba, la) = self.soa_decode(a, width);
        let (bb, lb) = self.soa_decode(b, width);
        let bytes = self.bin(BinaryOp::Isub, ba, bb);
        let bytes = self.addr_as_int(bytes);
        let size = self.int_const(i64::from(block_size));
        let blocks = self.bin(BinaryOp::Sdiv, bytes, size);
        let n = self.int_const(i64::from(width));
        let whole = self.bin(BinaryOp::Imul, blocks, n);
        let lanes = self.bin(BinaryOp::Isub, la, lb);
        let d = self.bin(BinaryOp::Iadd, whole, lanes);
        if self.ptr_int() == Scalar::I64 {
            d
        } else {
            self.conv(ConvOp::Sext, d, Scalar::I64)
        }
    }

    /// Moves a place inside an soa element by `offset` bytes of soa form to a part of
    /// type `ty`; a scalar part becomes an ordinary place (its element's own slot).
    pub fn soa_part(&mut self, p: Place, offset: Value, ty: TypeId) -> Place {
        let addr = self.bin(BinaryOp::Iadd, p.addr, offset);
        self.soa_settle(Place { addr, ty, ..p })
    }

    fn soa_settle(&mut self, p: Place) -> Place {
        let Some(soa) = p.soa else {
            return p;
        };
        if ir_type(&self.cx.types, p.ty).is_none() {
            return p;
        }
        let target = self.cx.checked.target;
        let size = self.cx.types.layout(p.ty, target).size;
        let off = self.scaled_index(soa.lane, true, size);
        let addr = self.bin(BinaryOp::Iadd, p.addr, off);
        Place {
            addr,
            soa: None,
            ..p
        }
    }

    /// Member `idx` of the struct at soa place `p`.
    pub fn soa_member(&mut self, p: Place, soa: SoaLane, idx: usize) -> Option<Place> {
        let TypeKind::Struct(sid) = self.cx.types.kind(p.ty) else {
            return None;
        };
        let target = self.cx.checked.target;
        let off = *self
            .cx
            .types
            .soa_layout(sid, soa.width, target)
            .offsets
            .get(idx)?;
        let fty = self.types().member_type(p.ty, idx);
        let off = self.ptr_offset_const(i64::from(off));
        Some(self.soa_part(p, off, fty))
    }

    /// Element `index` of the array or short vector at soa place `p`.
    pub fn soa_index(
        &mut self,
        p: Place,
        soa: SoaLane,
        index: Value,
        signed: bool,
    ) -> Option<Place> {
        let target = self.cx.checked.target;
        let (elem, size) = match self.cx.types.kind(p.ty) {
            TypeKind::Array(elem, _) => {
                let form = self.cx.types.soa_form_layout(elem, soa.width, target, 0);
                (elem, form.size)
            }
            TypeKind::Vector(prim, _) => (
                self.cx.types.prim(prim, Variability::Uniform),
                prim.size() * soa.width,
            ),
            _ => return None,
        };
        let off = self.scaled_index(index, signed, size);
        Some(self.soa_part(p, off, elem))
    }

    /// Element `i` of the short vector at soa place `p`.
    pub fn soa_vec_elem(&mut self, p: Place, soa: SoaLane, i: u32) -> Option<Place> {
        let TypeKind::Vector(prim, _) = self.cx.types.kind(p.ty) else {
            return None;
        };
        let elem = self.cx.types.prim(prim, Variability::Uniform);
        let off = prim.size() * soa.width * i;
        let off = self.ptr_offset_const(i64::from(off));
        Some(self.soa_part(p, off, elem))
    }

    /// Every scalar leaf of the aggregate at soa place `p`, as ordinary places, in the
    /// order [`super::types::leaves`] lists the leaves of its type.
    pub fn soa_leaves(&mut self, p: Place, soa: SoaLane) -> Vec<Place> {
        let mut offsets = Vec::new();
        let target = self.cx.checked.target;
        soa_leaf_offsets(self.types(), target, p.ty, soa.width, 0, &mut offsets, 0);
        offsets
            .into_iter()
            .map(|(off, ty)| {
                let off = self.ptr_offset_const(i64::from(off));
                self.soa_part(p, off, ty)
            })
            .collect()
    }

    /// The value of the aggregate at soa place `p`: a copy in a fresh object of its
    /// type (varying when the element is reached per program instance).
    pub fn soa_load(&mut self, p: Place, soa: SoaLane) -> Val {
        let varying = self.ty(soa.lane).varying || self.ty(p.addr).varying;
        let ty = if varying {
            self.types().with_var(p.ty, Variability::Varying)
        } else {
            p.ty
        };
        let tmp = self.temp_place(ty);
        let mask = self.cur_mask();
        self.copy(tmp, p, mask);
        Val::Mem(tmp)
    }
}

/// The soa-form offsets and (uniform) types of the scalar leaves of an object of type
/// `ty` in soa storage of `width`, in leaf order.
fn soa_leaf_offsets(
    types: &mut Types,
    target: crate::front::sema::Target,
    ty: TypeId,
    width: u32,
    base: u32,
    out: &mut Vec<(u32, TypeId)>,
    depth: u32,
) {
    if depth > 64 {
        return;
    }
    match types.kind(ty) {
        TypeKind::Struct(sid) => {
            let offsets = types.soa_layout(sid, width, target).offsets;
            for (i, off) in offsets.into_iter().enumerate() {
                let f = types.member_type(ty, i);
                soa_leaf_offsets(types, target, f, width, base + off, out, depth + 1);
            }
        }
        TypeKind::Array(elem, n) => {
            let size = types.soa_form_layout(elem, width, target, 0).size;
            for i in 0..n.unwrap_or(0) {
                soa_leaf_offsets(types, target, elem, width, base + i * size, out, depth + 1);
            }
        }
        TypeKind::Vector(p, n) => {
            let elem = types.prim(p, Variability::Uniform);
            for i in 0..n {
                out.push((base + i * p.size() * width, elem));
            }
        }
        TypeKind::Void | TypeKind::Error | TypeKind::Dim3(_) | TypeKind::Soa(..) => {}
        _ => out.push((base, ty)),
    }
}
