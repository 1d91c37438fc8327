//! How a warp's memory accesses spread over cache lines, estimated statically from
//! the allocated code: the predictor's ([`super::regdem`]) count of the line
//! transactions each access costs the load/store unit, the L2 and the L1's miss
//! registers.
//!
//! A forward dataflow over the kernel's basic blocks gives each register, at each
//! instruction, its *lane stride* ([`Lanes`]): the same value in every lane of a warp
//! (`Uniform`), a value that grows by a known number of units per lane of `%tid.x`
//! (`Affine`, e.g. `base + 4·%tid.x`), or anything else (`Varying`: loaded data,
//! products of two lane-dependent values, ...). Constants, parameters, block indices
//! and extents are uniform; `%tid.x` and `%laneid` have stride 1; sums, differences,
//! products and shifts by a constant, and integer conversions, carry strides through;
//! where paths meet, differing strides become `Varying`. Spill slots (`.local`
//! accesses at a constant offset, and the demoted slots' `.shared` accesses) keep the
//! stride of the value stored, so a reloaded address is still known.
//!
//! An access's line transactions ([`transactions`]) then follow as the simulator's
//! coalescer counts them (`sim::gpu::timing::coalesce`: one per line a warp's lanes
//! touch), for a full warp:
//! - a uniform address: one line;
//! - stride `s` bytes: the lanes span `(warp-1)·|s| + bytes` bytes; with its start
//!   anywhere in a line (aligned to the access), that touches on average
//!   `1 + (warp-1)·|s| / line` lines, at most one per lane;
//! - `Varying` (a gather through loaded indices): one line per lane, the worst case;
//! - a decoupled access (`[deq.addr]`, `[deq.data]`): its address is affine (the DAC
//!   analysis decoupled it) with a stride the affine stream holds; it is taken as
//!   consecutive elements, stride = the access's bytes;
//! - `.local`: the simulator interleaves local memory as CUDA does (word `k` of
//!   consecutive threads is contiguous) and a warp's first word starts a line, so a
//!   slot of `bytes` takes `ceil(((warp-1)·4 + bytes) / line)` lines.

use rustc_hash::FxHashMap;
use sim::gpu::{AddrBase, BinOp, Inst, Kernel, Op, RegFile, Space, Special, Src, Type, UnOp};

/// How a 32- or 64-bit value varies across the lanes of a warp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lanes {
    /// The same known constant in every lane (as the instruction's type reads it,
    /// sign-extended).
    Const(i64),
    /// The same in every lane.
    Uniform,
    /// `uniform + stride · %tid.x` (a nonzero stride, in the value's units).
    Affine(i64),
    /// Unknown per lane.
    Varying,
}

impl Lanes {
    /// A stride of 0 is uniform.
    fn affine(stride: i64) -> Lanes {
        if stride == 0 {
            Lanes::Uniform
        } else {
            Lanes::Affine(stride)
        }
    }

    /// The stride per lane, when known (uniform: 0).
    fn stride(self) -> Option<i64> {
        match self {
            Lanes::Const(_) | Lanes::Uniform => Some(0),
            Lanes::Affine(s) => Some(s),
            Lanes::Varying => None,
        }
    }

    fn constant(self) -> Option<i64> {
        match self {
            Lanes::Const(v) => Some(v),
            _ => None,
        }
    }

    fn is_uniform(self) -> bool {
        matches!(self, Lanes::Const(_) | Lanes::Uniform)
    }

    /// Where two paths meet: equal values stay, uniform ones stay uniform, others
    /// are `Varying`.
    fn join(self, other: Lanes) -> Lanes {
        if self == other {
            self
        } else if self.is_uniform() && other.is_uniform() {
            Lanes::Uniform
        } else {
            Lanes::Varying
        }
    }

    /// Uniform when every operand is, else `Varying` (an operation that does not
    /// keep strides).
    fn opaque(operands: &[Lanes]) -> Lanes {
        if operands.iter().all(|l| l.is_uniform()) {
            Lanes::Uniform
        } else {
            Lanes::Varying
        }
    }
}

/// What the dataflow tracks: a register, or a spill slot in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Reg(RegFile, u32),
    /// A `.local` slot at a constant offset, or a demoted `.shared` slot (its
    /// offset from the per-thread base).
    Slot(Space, i32),
}

/// The lane strides known at one point; a key absent has had no definition on
/// the paths that reach it.
type State = FxHashMap<Key, Lanes>;

/// Passes over the blocks the dataflow makes at the most; strides only ever move
/// towards `Varying`, so a few passes settle it, and the cap keeps any input finite.
const MOST_PASSES: usize = 16;

/// The line transactions of each instruction of `kernel` for a full warp of
/// `warp` lanes on a machine of `line`-byte lines (0 for an instruction that does not
/// access global, local or shared memory).
pub fn transactions(kernel: &Kernel, warp: u32, line: u32) -> Vec<f64> {
    let entry = block_entries(kernel);
    let mut out = vec![0.0; kernel.insts.len()];
    let mut state = State::default();
    for (pc, inst) in kernel.insts.iter().enumerate() {
        if let Some(s) = entry.get(&pc) {
            state = s.clone();
        }
        out[pc] = access_lines(inst, &state, warp, line);
        transfer(inst, &mut state);
    }
    out
}

/// The state at each basic block's first instruction, by a forward dataflow to its
/// fixed point (or [`MOST_PASSES`]).
fn block_entries(kernel: &Kernel) -> FxHashMap<usize, State> {
    let blocks = basic_blocks(kernel);
    let mut entry: FxHashMap<usize, State> = FxHashMap::default();
    entry.insert(0, State::default());
    for _ in 0..MOST_PASSES {
        let mut changed = false;
        for &(start, end) in &blocks {
            let Some(mut state) = entry.get(&start).cloned() else {
                continue; // not reached yet
            };
            for inst in &kernel.insts[start..end] {
                transfer(inst, &mut state);
            }
            for succ in successors(kernel, end) {
                changed |= merge_into(entry.entry(succ).or_default(), &state);
            }
        }
        if !changed {
            break;
        }
    }
    entry
}

/// Joins `from` into `into`; whether `into` changed.
fn merge_into(into: &mut State, from: &State) -> bool {
    let mut changed = false;
    for (&k, &l) in from {
        let joined = into.get(&k).map_or(l, |&old| old.join(l));
        if into.insert(k, joined) != Some(joined) {
            changed = true;
        }
    }
    changed
}

/// Whether each instruction of `kernel` starts a basic block: the first, label
/// targets (every branch target has a label), and what follows a branch, exit or
/// return.
pub(super) fn block_starts(kernel: &Kernel) -> Vec<bool> {
    let mut starts = vec![false; kernel.insts.len() + 1];
    starts[0] = true;
    for l in &kernel.labels {
        if let Some(s) = starts.get_mut(l.at as usize) {
            *s = true;
        }
    }
    for (pc, inst) in kernel.insts.iter().enumerate() {
        if matches!(inst.op, Op::Bra { .. } | Op::Exit | Op::Ret) {
            starts[pc + 1] = true;
        }
    }
    starts
}

/// The basic blocks of `kernel` as `start..end` instruction ranges.
fn basic_blocks(kernel: &Kernel) -> Vec<(usize, usize)> {
    let n = kernel.insts.len();
    let starts = block_starts(kernel);
    let firsts: Vec<usize> = (0..n).filter(|&pc| starts[pc]).collect();
    firsts
        .iter()
        .enumerate()
        .map(|(i, &s)| (s, firsts.get(i + 1).copied().unwrap_or(n)))
        .collect()
}

/// The blocks control may reach after the block ending before `end`.
fn successors(kernel: &Kernel, end: usize) -> Vec<usize> {
    let n = kernel.insts.len();
    let Some(last) = end.checked_sub(1).and_then(|pc| kernel.insts.get(pc)) else {
        return Vec::new();
    };
    let fall = (end < n).then_some(end);
    match last.op {
        Op::Bra { target, .. } => {
            let taken = ((target as usize) < n).then_some(target as usize);
            // An unguarded branch always jumps.
            let falls = if last.guard.is_some() { fall } else { None };
            taken.into_iter().chain(falls).collect()
        }
        Op::Exit | Op::Ret if last.guard.is_none() => Vec::new(),
        _ => fall.into_iter().collect(),
    }
}

/// The stride of a source operand of type `ty` in `state`.
fn src(state: &State, s: Src, ty: Type) -> Lanes {
    match s {
        Src::Imm(v) if ty.bits() <= 32 => Lanes::Const(i64::from(v as u32 as i32)),
        Src::Imm(v) => Lanes::Const(v as i64),
        Src::Special(Special::Tid(sim::gpu::Dim::X) | Special::LaneId) => Lanes::Affine(1),
        Src::Special(Special::Tid(_)) => Lanes::Varying,
        Src::Special(_) => Lanes::Uniform,
        Src::Reg(r) if r.file == RegFile::Ur => Lanes::Uniform,
        Src::Reg(r) => state
            .get(&Key::Reg(r.file, r.idx))
            .copied()
            .unwrap_or(Lanes::Varying),
    }
}

/// `a · b`, when at most one side varies by lane and the other is a constant.
fn product(a: Lanes, b: Lanes) -> Lanes {
    let scaled = |l: Lanes, k: i64| {
        l.stride()
            .map_or(Lanes::Varying, |s| Lanes::affine(s.wrapping_mul(k)))
    };
    match (a, b) {
        (Lanes::Const(x), Lanes::Const(y)) => Lanes::Const(x.wrapping_mul(y)),
        (_, Lanes::Const(k)) => scaled(a, k),
        (Lanes::Const(k), _) => scaled(b, k),
        _ => Lanes::opaque(&[a, b]),
    }
}

/// `a + sign · b`.
fn sum(a: Lanes, b: Lanes, sign: i64) -> Lanes {
    if let (Some(x), Some(y)) = (a.constant(), b.constant()) {
        return Lanes::Const(x.wrapping_add(sign.wrapping_mul(y)));
    }
    match (a.stride(), b.stride()) {
        (Some(x), Some(y)) => Lanes::affine(x.wrapping_add(sign.wrapping_mul(y))),
        _ => Lanes::Varying,
    }
}

/// `a << b`: a shift by a constant scales the stride.
fn shift_left(a: Lanes, b: Lanes) -> Lanes {
    match b.constant() {
        Some(k) if (0..63).contains(&k) => product(a, Lanes::Const(1 << k)),
        _ => Lanes::opaque(&[a, b]),
    }
}

/// The stride of the value an arithmetic instruction computes. A remainder by a
/// uniform divisor keeps its dividend's stride: exact when no warp's lanes straddle
/// a multiple of the divisor, as for `%tid.x % %ntid.x` with whole-warp blocks (how
/// a flat thread index is formed). A minimum or maximum against a uniform bound
/// keeps the other operand's stride: exact where no lane of the warp is clamped
/// (`clamp(x + k, 0, w - 1)` away from the edges).
fn arithmetic(op: &Op, state: &State) -> Option<Lanes> {
    Some(match *op {
        Op::Bin { op, ty, a, b, .. } if ty.is_int() || matches!(ty, Type::B32 | Type::B64) => {
            let (a, b) = (src(state, a, ty), src(state, b, ty));
            match op {
                BinOp::Add => sum(a, b, 1),
                BinOp::Sub => sum(a, b, -1),
                BinOp::Mul => product(a, b),
                BinOp::Shl => shift_left(a, b),
                BinOp::Rem if b.is_uniform() && b.constant().is_none() => a,
                BinOp::Min | BinOp::Max if b.is_uniform() => a,
                BinOp::Min | BinOp::Max if a.is_uniform() => b,
                _ => Lanes::opaque(&[a, b]),
            }
        }
        Op::Bin { ty, a, b, .. } => Lanes::opaque(&[src(state, a, ty), src(state, b, ty)]),
        Op::Mad { ty, a, b, c, .. } => {
            let (a, b, c) = (src(state, a, ty), src(state, b, ty), src(state, c, ty));
            if ty.is_int() {
                sum(product(a, b), c, 1)
            } else {
                Lanes::opaque(&[a, b, c])
            }
        }
        Op::Un {
            op: UnOp::Mov,
            ty,
            a,
            ..
        } => src(state, a, ty),
        Op::Un {
            op: UnOp::Neg,
            ty,
            a,
            ..
        } if ty.is_int() => sum(Lanes::Const(0), src(state, a, ty), -1),
        Op::Un { ty, a, .. } => Lanes::opaque(&[src(state, a, ty)]),
        Op::Cvt { dty, sty, a, .. } if dty.is_int() && sty.is_int() => match src(state, a, sty) {
            // A constant is re-read in the wider type only through its stride.
            Lanes::Const(_) if dty.bits() != sty.bits() => Lanes::Uniform,
            l => l,
        },
        Op::Cvt { sty, a, .. } => Lanes::opaque(&[src(state, a, sty)]),
        Op::Setp { ty, a, b, .. } => Lanes::opaque(&[src(state, a, ty), src(state, b, ty)]),
        Op::Selp { ty, a, b, p, .. } => {
            let (a, b) = (src(state, a, ty), src(state, b, ty));
            let cond = src(state, Src::Reg(p), Type::Pred);
            if cond.is_uniform() {
                a.join(b)
            } else {
                Lanes::opaque(&[a, b, cond])
            }
        }
        _ => return None,
    })
}

/// The tracked slot an access at `addr` in `space` names, if any.
fn slot(space: Space, base: AddrBase, offset: i32) -> Option<Key> {
    match (space, base) {
        (Space::Local, AddrBase::None) => Some(Key::Slot(Space::Local, offset)),
        (Space::Shared, AddrBase::Reg(_) | AddrBase::RegPair(_)) => {
            Some(Key::Slot(Space::Shared, offset))
        }
        _ => None,
    }
}

/// Applies `inst`'s definitions to `state`.
fn transfer(inst: &Inst, state: &mut State) {
    let (dst, wide, value) = match inst.op {
        Op::St { space, addr, a, .. } => {
            if let Some(k) = slot(space, addr.base, addr.offset) {
                let v = src(state, a, Type::B64);
                let old = state.get(&k).copied();
                state.insert(k, guarded(inst, old, v));
            }
            return;
        }
        Op::Call { .. } => {
            // The callee shares the registers and may write any of them.
            for v in state.values_mut() {
                *v = Lanes::Varying;
            }
            return;
        }
        Op::Ld {
            space,
            ty,
            dst,
            addr,
            ..
        } => {
            let value = match (space, slot(space, addr.base, addr.offset)) {
                (_, Some(k)) => state.get(&k).copied().unwrap_or(Lanes::Varying),
                (Space::Param, _) => Lanes::Uniform,
                _ if address_lanes(addr.base, state).is_some_and(Lanes::is_uniform) => {
                    Lanes::Uniform
                }
                _ => Lanes::Varying,
            };
            (dst, ty.is_wide(), value)
        }
        _ => {
            let mut def = None;
            inst.for_each_reg(|a| {
                if a.def && def.is_none() {
                    def = Some((a.reg, a.wide));
                }
            });
            let Some((dst, wide)) = def else { return };
            let value = match arithmetic(&inst.op, state) {
                // The uniform datapath computes one value for the warp.
                Some(l @ Lanes::Const(_)) => l,
                _ if inst.uni => Lanes::Uniform,
                l => l.unwrap_or(Lanes::Varying),
            };
            // Other results (a shuffle's predicate, ...) vary by lane.
            inst.for_each_reg(|a| {
                if a.def && a.reg != dst {
                    state.insert(Key::Reg(a.reg.file, a.reg.idx), Lanes::Varying);
                }
            });
            (dst, wide, value)
        }
    };
    let key = Key::Reg(dst.file, dst.idx);
    let old = state.get(&key).copied();
    state.insert(key, guarded(inst, old, value));
    if wide {
        // The high half of a pair has no stride of its own.
        state.insert(Key::Reg(dst.file, dst.idx + 1), Lanes::Varying);
    }
}

/// A guarded definition writes only some lanes: the old value stays in the others.
fn guarded(inst: &Inst, old: Option<Lanes>, new: Lanes) -> Lanes {
    match (inst.guard, old) {
        (Some(_), Some(o)) => o.join(new),
        _ => new,
    }
}

/// The stride of an address's base, for bases held in registers (None: queued by
/// the affine stream, or a parameter).
fn address_lanes(base: AddrBase, state: &State) -> Option<Lanes> {
    match base {
        AddrBase::None => Some(Lanes::Uniform),
        AddrBase::Reg(r) => Some(src(state, Src::Reg(r), Type::B32)),
        AddrBase::RegPair(r) => Some(src(state, Src::Reg(r), Type::B64)),
        AddrBase::Param(_) | AddrBase::DeqAddr | AddrBase::DeqData => None,
    }
}

/// The line transactions of `inst` for a full warp (see the module documentation).
fn access_lines(inst: &Inst, state: &State, warp: u32, line: u32) -> f64 {
    let Some((space, ty, addr)) = inst.op.memory_access() else {
        return 0.0;
    };
    let base = addr.base;
    let bytes = f64::from((ty.bits() / 8).max(1));
    let (warp, line) = (f64::from(warp.max(1)), f64::from(line.max(1)));
    match space {
        Space::Param => 0.0,
        Space::Shared => 1.0,
        Space::Local => (((warp - 1.0) * 4.0 + bytes) / line).ceil(),
        Space::Global => {
            let stride = match address_lanes(base, state) {
                // A queued address: consecutive elements (module documentation).
                None => Some(bytes),
                Some(l) => l.stride().map(|s| s.unsigned_abs() as f64),
            };
            match stride {
                Some(s) => (1.0 + (warp - 1.0) * s / line).min(warp),
                None => warp,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(body: &str) -> Kernel {
        let text = format!(".entry k()\n{{\n    .reg 16;\n{body}    exit;\n}}\n");
        sim::gpu::parse(&text).expect("parses").kernels[0].clone()
    }

    /// The transactions of the one global access of `body`.
    fn global_lines(body: &str) -> f64 {
        let k = kernel(body);
        let t = transactions(&k, 32, 128);
        let pc = k
            .insts
            .iter()
            .position(|i| {
                matches!(
                    i.op,
                    Op::Ld {
                        space: Space::Global,
                        ..
                    } | Op::St {
                        space: Space::Global,
                        ..
                    }
                )
            })
            .expect("a global access");
        t[pc]
    }

    /// `base + 4·%tid.x`: 32 lanes of 4 bytes span 128 bytes, starting anywhere in
    /// a line: 1 + 31·4/128 = 1.96875 lines on average.
    #[test]
    fn consecutive_words_take_about_two_lines() {
        let lines = global_lines(
            "    mov.u64 %rd4, 4096;\n    mov.u32 %r0, %tid.x;\n    shl.b32 %r1, %r0, 2;\n\
             \x20   cvt.u64.u32 %rd2, %r1;\n    add.s64 %rd4, %rd4, %rd2;\n\
             \x20   ld.global.f32 %r6, [%rd4];\n",
        );
        assert_eq!(lines, 1.0 + 31.0 * 4.0 / 128.0);
    }

    /// A uniform address (a block index times a parameter) is one line; an address
    /// made from a loaded index (a gather) is one line per lane.
    #[test]
    fn uniform_addresses_take_one_line_and_gathers_one_per_lane() {
        let uniform = global_lines(
            "    mov.u32 %r0, %ctaid.x;\n    mul.u32 %r1, %r0, 64;\n\
             \x20   cvt.u64.u32 %rd2, %r1;\n    ld.global.f32 %r6, [%rd2];\n",
        );
        assert_eq!(uniform, 1.0);
        let gather = global_lines(
            "    ld.global.u32 %r0, [%rd4];\n    shl.b32 %r1, %r0, 2;\n\
             \x20   cvt.u64.u32 %rd2, %r1;\n    st.global.f32 [%rd2], %r6;\n",
        );
        assert_eq!(gather, 32.0);
    }

    /// A stride of 8 words (32 bytes) per lane: 1 + 31·32/128 = 8.75 lines; of 64
    /// words (256 bytes, beyond a line): a line per lane, 32.
    #[test]
    fn strided_lanes_take_a_line_per_line_crossed() {
        let body = |k: u32| {
            format!(
                "    mov.u32 %r0, %tid.x;\n    mul.u32 %r1, %r0, {k};\n\
                 \x20   cvt.u64.u32 %rd2, %r1;\n    ld.global.f32 %r6, [%rd2];\n"
            )
        };
        assert_eq!(global_lines(&body(32)), 8.75);
        assert_eq!(global_lines(&body(256)), 32.0);
    }

    /// An address spilled to a local slot and reloaded keeps its stride; the local
    /// accesses themselves take ceil((31·4 + 4)/128) = 1 line, and 8-byte ones
    /// ceil((31·4 + 8)/128) = 2.
    #[test]
    fn spill_slots_keep_the_stride_and_cost_lines_of_their_own() {
        let k = kernel(
            "    mov.u32 %r0, %tid.x;\n    shl.b32 %r1, %r0, 2;\n\
             \x20   st.local.b32 [8], %r1;\n    mov.u32 %r1, 0;\n\
             \x20   ld.local.b32 %r3, [8];\n    cvt.u64.u32 %rd4, %r3;\n\
             \x20   ld.global.f32 %r6, [%rd4];\n    st.local.b64 [16], %rd4;\n",
        );
        let t = transactions(&k, 32, 128);
        assert_eq!(t[2], 1.0);
        assert_eq!(t[4], 1.0);
        assert_eq!(t[6], 1.0 + 31.0 * 4.0 / 128.0);
        assert_eq!(t[7], 2.0);
    }

    /// Where paths meet, a value uniform on one and lane-strided on the other varies:
    /// the load after the join is a gather (32 lines); before the branch it is one.
    #[test]
    fn paths_with_different_strides_meet_as_varying() {
        let k = kernel(
            "    mov.u32 %r0, 0;\n    @%p0 bra $L1;\n    mov.u32 %r0, %tid.x;\n\
             $L1:\n    cvt.u64.u32 %rd2, %r0;\n    ld.global.f32 %r6, [%rd2];\n",
        );
        let t = transactions(&k, 32, 128);
        let pc = k
            .insts
            .iter()
            .position(|i| matches!(i.op, Op::Ld { .. }))
            .expect("load");
        assert_eq!(t[pc], 32.0);
    }

    /// A loop counter incremented by a constant stays uniform around the back edge,
    /// so `base + counter` inside the loop is one line.
    #[test]
    fn loop_counters_stay_uniform() {
        let k = kernel(
            "    mov.u32 %r0, 0;\n$L0:\n    cvt.u64.u32 %rd2, %r0;\n\
             \x20   ld.global.f32 %r6, [%rd2];\n    add.s32 %r0, %r0, 4;\n\
             \x20   @%p0 bra.uni $L0;\n",
        );
        let t = transactions(&k, 32, 128);
        assert_eq!(t[2], 1.0);
    }
}
