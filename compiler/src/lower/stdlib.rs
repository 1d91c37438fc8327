//! The standard library functions without bodies, lowered at the call site by name:
//! cross-lane operations to `Lane` instructions, math to instruction sequences, atomics
//! to `atomic_rmw`/`atomic_cas` (float ones to compare-and-swap loops), `clock` to a
//! special register. Functions not implemented here are reported with E0903 naming the
//! function.
//!
//! Stdlib functions *with* bodies (the transcendentals, written in the language in
//! `stdlib/stdlib.spmd`) are ordinary functions, declared and lowered only when a
//! program calls them ([`ModCx::declare_stdlib_body`]), so a module holds just the ones
//! it uses.

use super::func::{FnLower, Val};
use super::place::Place;
use super::types::{ir_type, num_of, Num};
use super::ModCx;
use crate::front::ast::Expr;
use crate::front::sema::{FuncId, TypeId};
use crate::ir::builder::FuncBuilder;
use crate::ir::{
    AtomicOp, BinaryOp, Block, ConvOp, FloatCC, InstData, IntCC, LaneOp, Scalar, Space, SpecialReg,
    Type, UnaryOp, Value,
};

impl ModCx<'_> {
    /// Declares stdlib function `fid` on its first call when it has a body (it is then
    /// lowered with the program's functions); false when it has none.
    pub(super) fn declare_stdlib_body(&mut self, fid: FuncId) -> bool {
        let f = &self.checked.funcs[fid];
        if !f.from_stdlib || f.def_item.is_none() {
            return false;
        }
        self.declare_function(fid);
        true
    }
}

impl FnLower<'_, '_> {
    /// A call of stdlib function `name` (overload already chosen by sema).
    pub fn stdlib_call<A: std::borrow::Borrow<Expr>>(
        &mut self,
        name: &str,
        args: &[A],
        ty: TypeId,
    ) -> Val {
        let mut vals = Vec::with_capacity(args.len());
        let mut tys = Vec::with_capacity(args.len());
        for a in args.iter().map(std::borrow::Borrow::borrow) {
            vals.push(self.scalar(a));
            tys.push(self.cx.checked.converted_type(a.id));
        }
        self.stdlib_apply(name, &vals, &tys, ty)
    }

    /// Stdlib function `name` applied to argument values `vals` of (converted) types
    /// `tys`, giving a value of type `ty`: at a call, or for a call through a function
    /// pointer that holds it (see `fn_ptr`).
    pub fn stdlib_apply(&mut self, name: &str, vals: &[Value], tys: &[TypeId], ty: TypeId) -> Val {
        let nums: Vec<Option<Num>> = tys.iter().map(|&t| num_of(&self.cx.types, t)).collect();
        let rt = ir_type(&self.cx.types, ty);
        let call = Call {
            vals,
            nums: &nums,
            tys,
            rt,
        };
        if name == "memory_barrier" {
            return Val::None;
        }
        if name == "assert" {
            self.assert(vals[0]);
            return Val::None;
        }
        if name == "alloca" {
            // One allocation for the gang, whatever the mask: the pointer is uniform.
            return Val::S(self.val(InstData::StackAlloc { size: vals[0] }));
        }
        match self.stdlib_value(name, &call) {
            Some(v) => Val::S(v),
            None => {
                self.unsupported(format!("the standard library function `{name}`"));
                self.dummy(ty)
            }
        }
    }

    /// `assert(cond)`: stops the launch (a `trap assert`) when the condition is false
    /// in any active lane; inactive lanes are not checked.
    fn assert(&mut self, cond: Value) {
        // The argument is already converted to `bool` (the parameter's type).
        let failed = self.not(cond);
        self.trap_if_any(failed, crate::ir::TrapCode::AssertFailed);
    }

    fn stdlib_value(&mut self, name: &str, c: &Call) -> Option<Value> {
        if HALF_IN_FLOAT.contains(&name) && c.nums.contains(&Some(HALF)) {
            return self.half_in_float(name, c);
        }
        let a = c.vals.first().copied();
        let n0 = c.nums.first().copied().flatten();
        let m = self.cur_mask();
        Some(match (name, c.vals.len()) {
            ("and", 2) => self.bin(BinaryOp::Band, a?, c.vals[1]),
            ("or", 2) => self.bin(BinaryOp::Bor, a?, c.vals[1]),
            ("select", 3) => self.select(a?, c.vals[1], c.vals[2]),
            ("popcnt", 1) if n0 == Some(Num::Bool) => {
                let on = self.and(a?, m);
                self.count_lanes(on)
            }
            ("popcnt", 1) => {
                let p = self.un(UnaryOp::Popcnt, a?);
                self.to_i32(p)
            }
            ("count_leading_zeros", 1) => self.un(UnaryOp::Clz, a?),
            ("count_trailing_zeros", 1) => self.un(UnaryOp::Ctz, a?),
            ("sign_extend", 1) => {
                let t = Type::I32;
                let (on, off) = (self.iconst(t, -1), self.iconst(t, 0));
                self.select(a?, on, off)
            }
            ("packmask", 1) => {
                let on = self.and(a?, m);
                let b = self.lane(LaneOp::Ballot, &[on]);
                self.conv(ConvOp::Ireduce, b, Scalar::I32)
            }
            ("floatbits" | "doublebits" | "float16bits" | "intbits", 1) => {
                self.conv(ConvOp::Bitcast, a?, c.rt?.scalar)
            }
            ("signbits", 1) => {
                let t = c.rt?;
                let bits = self.conv(ConvOp::Bitcast, a?, t.scalar);
                let sign = self.iconst(t.to_uniform(), i64::MIN >> (64 - t.scalar.bits()));
                self.bin(BinaryOp::Band, bits, sign)
            }
            ("abs", 1) => self.abs(a?, n0?),
            ("min" | "max", 2) => self.min_max(name == "min", a?, c.vals[1], n0?),
            ("clamp", 3) => {
                let lo = self.min_max(false, a?, c.vals[1], n0?);
                self.min_max(true, lo, c.vals[2], n0?)
            }
            ("round", 1) => self.un(UnaryOp::Nearest, a?),
            ("floor", 1) => self.un(UnaryOp::Floor, a?),
            ("ceil", 1) => self.un(UnaryOp::Ceil, a?),
            ("trunc", 1) => self.un(UnaryOp::Trunc, a?),
            ("isnan", 1) => self.fcmp(FloatCC::Uno, a?, a?),
            ("isinf" | "isfinite", 1) => {
                let x = self.un(UnaryOp::Fabs, a?);
                let inf = self.fconst(self.ty(x).to_uniform(), f64::INFINITY);
                let cc = if name == "isinf" {
                    FloatCC::Eq
                } else {
                    FloatCC::Lt
                };
                self.fcmp(cc, x, inf)
            }
            ("avg_up" | "avg_down", 2) => self.avg(name == "avg_up", a?, c.vals[1], n0?),
            ("sqrt", 1) => self.un(UnaryOp::Sqrt, a?),
            ("rsqrt" | "rsqrt_fast", 1) => {
                let s = self.un(UnaryOp::Sqrt, a?);
                self.recip(s)
            }
            ("rcp" | "rcp_fast", 1) => self.recip(a?),
            ("fmod", 2) => self.bin(BinaryOp::Frem, a?, c.vals[1]),
            ("saturating_add" | "saturating_sub" | "saturating_mul" | "saturating_div", 2) => {
                self.saturating(&name[11..], a?, c.vals[1], n0?)?
            }
            ("lanemask", 0) => self.lane(LaneOp::Ballot, &[m]),
            ("clock", 0) => self.special(SpecialReg::Clock),
            ("broadcast", 2) => {
                let x = self.lane(LaneOp::Extract, &[a?, c.vals[1]]);
                self.splat(x)
            }
            ("rotate", 2) => self.lane(LaneOp::Rotate, &[a?, c.vals[1]]),
            ("shift", 2) => self.lane(LaneOp::Shift, &[a?, c.vals[1]]),
            ("shuffle", 2) => self.lane(LaneOp::Shuffle, &[a?, c.vals[1]]),
            ("shuffle", 3) => self.lane(LaneOp::Shuffle2, &[a?, c.vals[1], c.vals[2]]),
            ("extract", 2) => self.lane(LaneOp::Extract, &[a?, c.vals[1]]),
            ("insert", 3) => {
                let v = self.splat(a?);
                self.lane(LaneOp::Insert, &[v, c.vals[1], c.vals[2]])
            }
            ("any", 1) => {
                let on = self.and(a?, m);
                self.any(on)
            }
            ("none", 1) => {
                let on = self.and(a?, m);
                let any = self.any(on);
                self.not(any)
            }
            ("all", 1) => {
                let nm = self.not(m);
                let v = self.bin(BinaryOp::Bor, a?, nm);
                self.lane(LaneOp::All, &[v])
            }
            ("reduce_add" | "reduce_min" | "reduce_max", 1) => self.reduce(name, a?, n0?, c.rt?),
            ("reduce_equal", 1 | 2) => {
                let v = self.splat(a?);
                let eq = self.lane(LaneOp::ReduceEqual, &[v, m]);
                if let Some(&p) = c.vals.get(1) {
                    let first = self.lane(LaneOp::FirstLane, &[m]);
                    let x = self.lane(LaneOp::Extract, &[v, first]);
                    self.ins(InstData::Store {
                        space: Space::Generic,
                        addr: p,
                        value: x,
                        mask: Some(m),
                    });
                }
                eq
            }
            ("exclusive_scan_add", 1) => self.lane(LaneOp::ScanAdd, &[a?, m]),
            ("exclusive_scan_and", 1) => self.lane(LaneOp::ScanAnd, &[a?, m]),
            ("exclusive_scan_or", 1) => self.lane(LaneOp::ScanOr, &[a?, m]),
            ("packed_load_active", 2) => self.packed(true, c)?,
            ("packed_store_active" | "packed_store_active2", 2) => self.packed(false, c)?,
            _ if name.starts_with("atomic_") => self.atomic(name, c)?,
            _ => return None,
        })
    }

    /// A built-in of [`HALF_IN_FLOAT`] on float16 operands, as ISPC defines it: the
    /// float function of the operands converted to float, rounded to float16. (So
    /// `rsqrt` rounds once more in float, not in float16, between its two steps.)
    fn half_in_float(&mut self, name: &str, c: &Call) -> Option<Value> {
        let vals: Vec<Value> = c.vals.iter().map(|&v| self.widen_half(v)).collect();
        let single = |n: Option<Num>| if n == Some(HALF) { Some(SINGLE) } else { n };
        let nums: Vec<Option<Num>> = c.nums.iter().map(|&n| single(n)).collect();
        let is_half = |t: Type| t.scalar == Scalar::F16;
        let rt = c.rt.map(|t| {
            if is_half(t) {
                t.with_scalar(Scalar::F32)
            } else {
                t
            }
        });
        let wide = Call {
            vals: &vals,
            nums: &nums,
            tys: c.tys,
            rt,
        };
        let r = self.stdlib_value(name, &wide)?;
        Some(match c.rt {
            Some(t) if is_half(t) => self.conv(ConvOp::Fdemote, r, Scalar::F16),
            _ => r,
        })
    }

    fn to_i32(&mut self, v: Value) -> Value {
        match self.ty(v).scalar {
            Scalar::I32 => v,
            Scalar::I64 => self.conv(ConvOp::Ireduce, v, Scalar::I32),
            _ => self.conv(ConvOp::Zext, v, Scalar::I32),
        }
    }

    /// The number of lanes on in mask `m` (uniform i32).
    fn count_lanes(&mut self, m: Value) -> Value {
        let b = self.lane(LaneOp::Ballot, &[m]);
        let p = self.un(UnaryOp::Popcnt, b);
        self.to_i32(p)
    }

    fn recip(&mut self, x: Value) -> Value {
        let one = self.fconst(self.ty(x).to_uniform(), 1.0);
        self.bin(BinaryOp::Fdiv, one, x)
    }

    fn abs(&mut self, x: Value, n: Num) -> Value {
        if matches!(n, Num::Float { .. }) {
            return self.un(UnaryOp::Fabs, x);
        }
        let z = self.iconst(self.ty(x).to_uniform(), 0);
        let neg = self.icmp(IntCC::Slt, x, z);
        let nx = self.un(UnaryOp::Ineg, x);
        self.select(neg, nx, x)
    }

    fn min_max(&mut self, min: bool, a: Value, b: Value, n: Num) -> Value {
        let op = match (n, min) {
            (Num::Float { .. }, true) => BinaryOp::Fmin,
            (Num::Float { .. }, false) => BinaryOp::Fmax,
            (Num::Int { signed: false, .. } | Num::Bool | Num::Ptr, true) => BinaryOp::Umin,
            (Num::Int { signed: false, .. } | Num::Bool | Num::Ptr, false) => BinaryOp::Umax,
            (_, true) => BinaryOp::Smin,
            (_, false) => BinaryOp::Smax,
        };
        self.bin(op, a, b)
    }

    /// `(a + b + 1) / 2` or `(a + b) / 2` without overflow.
    fn avg(&mut self, up: bool, a: Value, b: Value, n: Num) -> Value {
        let signed = matches!(n, Num::Int { signed: true, .. });
        let x = self.bin(BinaryOp::Bxor, a, b);
        let one = self.iconst(self.ty(x).to_uniform(), 1);
        let shr = if signed {
            BinaryOp::Sshr
        } else {
            BinaryOp::Ushr
        };
        let half = self.bin(shr, x, one);
        if up {
            let o = self.bin(BinaryOp::Bor, a, b);
            self.bin(BinaryOp::Isub, o, half)
        } else {
            let an = self.bin(BinaryOp::Band, a, b);
            self.bin(BinaryOp::Iadd, an, half)
        }
    }

    fn saturating(&mut self, op: &str, a: Value, b: Value, n: Num) -> Option<Value> {
        let Num::Int { bits, signed } = n else {
            return None;
        };
        let t = self.ty(a).to_uniform();
        let (min, max) = if signed {
            (i64::MIN >> (64 - bits), i64::MAX >> (64 - bits))
        } else {
            (0, if bits == 64 { -1 } else { (1i64 << bits) - 1 })
        };
        let minv = self.iconst(t, min);
        let maxv = self.iconst(t, max);
        let zero = self.iconst(t, 0);
        Some(match (op, signed) {
            ("add" | "sub", true) => {
                let add = op == "add";
                let r = self.bin(if add { BinaryOp::Iadd } else { BinaryOp::Isub }, a, b);
                let x1 = self.bin(BinaryOp::Bxor, a, r);
                let x2 = if add {
                    self.bin(BinaryOp::Bxor, b, r)
                } else {
                    self.bin(BinaryOp::Bxor, a, b)
                };
                let both = self.bin(BinaryOp::Band, x1, x2);
                let ov = self.icmp(IntCC::Slt, both, zero);
                let neg = self.icmp(IntCC::Slt, a, zero);
                let sat = self.select(neg, minv, maxv);
                self.select(ov, sat, r)
            }
            ("add", false) => {
                let r = self.bin(BinaryOp::Iadd, a, b);
                let ov = self.icmp(IntCC::Ult, r, a);
                self.select(ov, maxv, r)
            }
            ("sub", false) => {
                let r = self.bin(BinaryOp::Isub, a, b);
                let ov = self.icmp(IntCC::Ult, a, b);
                self.select(ov, zero, r)
            }
            ("div", true) => {
                let m1 = self.iconst(t, -1);
                let is_min = self.icmp(IntCC::Eq, a, minv);
                let is_m1 = self.icmp(IntCC::Eq, b, m1);
                let ov = self.bin(BinaryOp::Band, is_min, is_m1);
                let one = self.iconst(t, 1);
                let safe_b = self.select(ov, one, b);
                let q = self.bin(BinaryOp::Sdiv, a, safe_b);
                self.select(ov, maxv, q)
            }
            ("div", false) => self.bin(BinaryOp::Udiv, a, b),
            ("mul", _) if bits < 64 => {
                let ext = if signed { ConvOp::Sext } else { ConvOp::Zext };
                let wa = self.conv(ext, a, Scalar::I64);
                let wb = self.conv(ext, b, Scalar::I64);
                let p = self.bin(BinaryOp::Imul, wa, wb);
                let lo = self.iconst(Type::I64, min);
                let hi = self.iconst(Type::I64, max);
                let p = if signed {
                    let p = self.bin(BinaryOp::Smax, p, lo);
                    self.bin(BinaryOp::Smin, p, hi)
                } else {
                    self.bin(BinaryOp::Umin, p, hi)
                };
                self.conv(ConvOp::Ireduce, p, t.scalar)
            }
            ("mul", _) => self.saturating_mul64(a, b, signed, minv, maxv),
            _ => return None,
        })
    }

    /// 64-bit `saturating_mul`, with no wider type to compute in: the product of the
    /// magnitudes overflows when `|b| > limit / |a|` (unsigned division), where the limit
    /// is the bound on the result's side (MAX, or MIN, whose magnitude 2^63 is its own
    /// bits read as unsigned, as is |MIN|); otherwise the wrapped product is exact.
    fn saturating_mul64(
        &mut self,
        a: Value,
        b: Value,
        signed: bool,
        min: Value,
        max: Value,
    ) -> Value {
        let t = self.ty(a).to_uniform();
        let (zero, one) = (self.iconst(t, 0), self.iconst(t, 1));
        let (ma, mb, limit) = if signed {
            let n = Num::Int { bits: 64, signed };
            let x = self.bin(BinaryOp::Bxor, a, b);
            let neg = self.icmp(IntCC::Slt, x, zero);
            (self.abs(a, n), self.abs(b, n), self.select(neg, min, max))
        } else {
            (a, b, max)
        };
        let a_zero = self.icmp(IntCC::Eq, ma, zero);
        let divisor = self.select(a_zero, one, ma);
        let most = self.bin(BinaryOp::Udiv, limit, divisor);
        let too_big = self.icmp(IntCC::Ugt, mb, most);
        let a_nonzero = self.not(a_zero);
        let ov = self.bin(BinaryOp::Band, too_big, a_nonzero);
        let p = self.bin(BinaryOp::Imul, a, b);
        self.select(ov, limit, p)
    }

    /// `reduce_add/min/max` over the active lanes, computed in the (possibly wider)
    /// result type; unsigned min/max flip the sign bit around a signed reduction.
    fn reduce(&mut self, name: &str, a: Value, n: Num, rt: Type) -> Value {
        let m = self.cur_mask();
        let rn = match n {
            Num::Int { signed, .. } => Num::Int {
                bits: rt.scalar.bits(),
                signed,
            },
            other => other,
        };
        let v = self.convert_num(a, n, rn);
        let v = self.splat(v);
        let op = match name {
            "reduce_add" => LaneOp::ReduceAdd,
            "reduce_min" => LaneOp::ReduceMin,
            _ => LaneOp::ReduceMax,
        };
        if matches!(n, Num::Int { signed: false, .. }) && op != LaneOp::ReduceAdd {
            let bias = self.iconst(rt.to_uniform(), i64::MIN >> (64 - rt.scalar.bits()));
            let flipped = self.bin(BinaryOp::Bxor, v, bias);
            let r = self.lane(op, &[flipped, m]);
            return self.bin(BinaryOp::Bxor, r, bias);
        }
        self.lane(op, &[v, m])
    }

    /// `packed_load_active(base, &val)` / `packed_store_active(base, val)`: the k-th
    /// active lane reads/writes `base[k]`; the result is the number of active lanes.
    fn packed(&mut self, load: bool, c: &Call) -> Option<Value> {
        let m = self.cur_mask();
        let base = c.vals[0];
        let elem = self.cx.types.pointee(c.tys[0])?;
        let size = self.cx.types.layout(elem, self.cx.checked.target).size;
        let one = self.iconst(Type::varying(Scalar::I32), 1);
        let idx = self.lane(LaneOp::ScanAdd, &[one, m]);
        let off = self.scaled_index(idx, true, size);
        let addr = self.bin(BinaryOp::Iadd, base, off);
        let et = ir_type(&self.cx.types, elem)?.to_uniform();
        if load {
            let v = self.load_raw(et, Space::Generic, addr, Some(m));
            let dst_ty = self.cx.types.pointee(c.tys[1])?;
            let dst = Place {
                addr: c.vals[1],
                ty: dst_ty,
                space: Space::Generic,
                soa: None,
            };
            self.store_masked(dst, Val::S(v), m);
        } else {
            let v = self.splat(c.vals[1]);
            self.ins(InstData::Store {
                space: Space::Generic,
                addr,
                value: v,
                mask: Some(m),
            });
        }
        Some(self.count_lanes(m))
    }

    /// `atomic_<op>_global` / `atomic_<op>_local`.
    fn atomic(&mut self, name: &str, c: &Call) -> Option<Value> {
        let op = name
            .strip_prefix("atomic_")?
            .trim_end_matches("_global")
            .trim_end_matches("_local");
        let m = self.cur_mask();
        let n = *c.nums.get(1)?;
        let float = matches!(n, Some(Num::Float { .. }));
        let unsigned = matches!(n, Some(Num::Int { signed: false, .. }));
        let addr = c.vals[0];
        if op == "compare_exchange" {
            let (expected, replacement) = (*c.vals.get(1)?, *c.vals.get(2)?);
            if !float {
                return Some(self.val(InstData::AtomicCas {
                    space: Space::Generic,
                    addr,
                    expected,
                    replacement,
                    mask: Some(m),
                }));
            }
            // The IR's compare-and-swap is on integers: a float one compares and swaps
            // the bits, as ISPC's does.
            let rt = c.rt?;
            let bits = if rt.scalar == Scalar::F64 {
                Scalar::I64
            } else {
                Scalar::I32
            };
            let expected = self.conv(ConvOp::Bitcast, expected, bits);
            let replacement = self.conv(ConvOp::Bitcast, replacement, bits);
            let old = self.val(InstData::AtomicCas {
                space: Space::Generic,
                addr,
                expected,
                replacement,
                mask: Some(m),
            });
            return Some(self.conv(ConvOp::Bitcast, old, rt.scalar));
        }
        let aop = match (op, unsigned) {
            ("add", _) => AtomicOp::Add,
            ("subtract", _) => AtomicOp::Sub,
            ("and", _) => AtomicOp::And,
            ("or", _) => AtomicOp::Or,
            ("xor", _) => AtomicOp::Xor,
            ("swap", _) => AtomicOp::Xchg,
            ("min", false) => AtomicOp::Smin,
            ("max", false) => AtomicOp::Smax,
            ("min", true) => AtomicOp::Umin,
            ("max", true) => AtomicOp::Umax,
            _ => return None,
        };
        // The IR's read-modify-write operations are integer only: float ones are
        // compare-and-swap loops.
        if float && aop != AtomicOp::Xchg {
            let fop = match aop {
                AtomicOp::Add => BinaryOp::Fadd,
                AtomicOp::Sub => BinaryOp::Fsub,
                AtomicOp::Smin => BinaryOp::Fmin,
                AtomicOp::Smax => BinaryOp::Fmax,
                _ => return None,
            };
            return Some(self.float_atomic(fop, addr, *c.vals.get(1)?, c.rt?));
        }
        Some(self.val(InstData::AtomicRmw {
            op: aop,
            space: Space::Generic,
            addr,
            value: *c.vals.get(1)?,
            mask: Some(m),
        }))
    }
}

impl FnLower<'_, '_> {
    /// A float read-modify-write `*addr = *addr op value` for every lane on (once when
    /// `rt` is uniform), as a compare-and-swap loop on the bits: each round every
    /// pending lane loads its location, computes the new value and tries to swap it in;
    /// lanes whose location changed since their load retry. The interpreter runs a
    /// CAS lane by lane, so the lowest pending lane always succeeds and the loop ends
    /// after at most one round per lane. The result is each lane's old value.
    fn float_atomic(&mut self, op: BinaryOp, addr: Value, value: Value, rt: Type) -> Value {
        let m = self.cur_mask();
        let it = rt.with_scalar(if rt.scalar == Scalar::F64 {
            Scalar::I64
        } else {
            Scalar::I32
        });
        let (addr, value) = if rt.varying {
            (self.splat(addr), self.splat(value))
        } else {
            (addr, value)
        };
        let any0 = self.any(m);
        let pending0 = if rt.varying { m } else { any0 };
        let zero = self.zero(rt);
        let body = self.new_block();
        let exit = self.new_block();
        let pending = self.func.append_block_param(body, self.ty(pending0));
        let acc = self.func.append_block_param(body, rt);
        let result = self.func.append_block_param(exit, rt);
        self.brif_args(any0, body, &[pending0, zero], exit, &[zero]);
        self.switch_to(body);
        let mask = if rt.varying { pending } else { m };
        let cur = self.load_raw(rt, Space::Generic, addr, Some(mask));
        let new = self.bin(op, cur, value);
        let cur_bits = self.conv(ConvOp::Bitcast, cur, it.scalar);
        let new_bits = self.conv(ConvOp::Bitcast, new, it.scalar);
        let old_bits = self.val(InstData::AtomicCas {
            space: Space::Generic,
            addr,
            expected: cur_bits,
            replacement: new_bits,
            mask: Some(mask),
        });
        let swapped = self.icmp(IntCC::Eq, old_bits, cur_bits);
        let swapped = self.and(swapped, pending);
        let acc = self.select(swapped, cur, acc);
        let not_swapped = self.not(swapped);
        let pending = self.and(pending, not_swapped);
        let again = if rt.varying {
            self.any(pending)
        } else {
            pending
        };
        self.brif_args(again, body, &[pending, acc], exit, &[acc]);
        self.switch_to(exit);
        result
    }

    fn brif_args(
        &mut self,
        c: Value,
        then_b: Block,
        then_a: &[Value],
        else_b: Block,
        else_a: &[Value],
    ) {
        let mut b = FuncBuilder::new(&mut self.func);
        b.switch_to(self.block);
        b.set_span(self.span);
        b.brif(c, then_b, then_a, else_b, else_a);
    }
}

/// The lowered arguments of a stdlib call.
const HALF: Num = Num::Float { bits: 16 };
const SINGLE: Num = Num::Float { bits: 32 };

/// The built-ins computed on float16 operands as on float ones ([`FnLower::half_in_float`]);
/// the others (bits, lane movement, selection) move float16 values unchanged.
const HALF_IN_FLOAT: &[&str] = &[
    "abs",
    "min",
    "max",
    "clamp",
    "round",
    "floor",
    "ceil",
    "trunc",
    "isnan",
    "isinf",
    "isfinite",
    "sqrt",
    "rsqrt",
    "rsqrt_fast",
    "rcp",
    "rcp_fast",
    "reduce_add",
    "reduce_min",
    "reduce_max",
];

struct Call<'c> {
    vals: &'c [Value],
    nums: &'c [Option<Num>],
    tys: &'c [TypeId],
    rt: Option<Type>,
}
