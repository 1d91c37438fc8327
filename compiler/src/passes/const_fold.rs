//! Constant folding and integer identities.
//!
//! An instruction whose operands are all constants (`iconst`, `fconst`, or a `splat`
//! of one) becomes the constant it computes; a `brif` on a constant condition becomes a
//! `jump`, and the blocks no path reaches any more are emptied
//! ([`cfg::clear_unreachable`]). Lowering leaves many such instructions (constant
//! bounds, sizes, `true` masks of uniform code), and every one costs the back ends an
//! instruction per execution.
//!
//! The value is computed by the interpreter's own lane functions ([`ops`]), so a folded
//! program gives bit for bit what the unfolded one gives there: IEEE binary32 and
//! binary64 per operation in its own precision, NaN payloads as the interpreter
//! chooses them. A division or remainder by a zero constant is left alone: at run
//! time it traps, and it must still.
//!
//! `any` and `all` of a constant mask, or of the execution mask an entry function is
//! launched with ([`launch_mask`]: every gang has a lane on), fold too: lowering tests
//! them to skip empty regions and to keep loop counters, and the CFG transforms would
//! otherwise copy loops for a case that never happens.
//!
//! Besides constants, a few integer identities that hold for every input are applied:
//! `x + 0`, `x - 0`, `x * 1`, `x * 0`, `x & -1`, `x & 0`, `x | 0`, `x | -1`, `x ^ 0`,
//! shifts by a multiple of the width, `x / 1`, `x % 1`, comparisons of a value with
//! itself, and `select` on a constant condition or between one value twice. No float
//! identity is exact for every input (`x + 0` changes `-0`, `x * 1` quiets a signaling
//! NaN, `x * 0` is NaN for infinities), so floats fold only when every operand is a
//! constant. An identity that would replace a varying result by a uniform value is
//! skipped (the types differ).
//!
//! Folded instructions whose result becomes an alias of another value stay in place,
//! unused; [`super::dce`] deletes them.

use rustc_hash::{FxHashMap, FxHashSet};

use super::cfg;
use crate::interp::ops;
use crate::ir::dominance::DominatorTree;
use crate::ir::{
    BinaryOp, FuncRef, Function, Inst, InstData, IntCC, LaneOp, Module, Scalar, Type, Value,
    ValueDef,
};

/// The canonical bits of `v` when it is a constant: an `iconst` or `fconst`, or a
/// `splat` of one (see [`ops::constant`] for the form).
pub fn constant_value(func: &Function, v: Value) -> Option<u64> {
    let ValueDef::Result(inst) = func.values[v].def else {
        return None;
    };
    match &func.insts[inst] {
        InstData::Splat { arg } => constant_value(func, *arg),
        data => ops::constant(data),
    }
}

/// Runs [`run`] on every function of the module, with the entry mask of each entry
/// function no call reaches ([`launch_mask`]).
pub fn run_module(module: &mut Module) {
    let called: FxHashSet<FuncRef> = module
        .functions
        .values()
        .flat_map(|f| f.insts.values())
        .filter_map(|data| match data {
            InstData::Call { func, .. } => Some(*func),
            _ => None,
        })
        .collect();
    super::each_function(module, |r, f| {
        let mask = (!called.contains(&r)).then(|| launch_mask(f)).flatten();
        run(f, mask);
    });
}

/// The execution mask parameter of an entry function (the entry block's last): when
/// only launches call the function, it holds exactly the lanes that exist, and every
/// gang has at least one (the interpreter's `exists`; a warp has a thread), so `any`
/// and `all` of it are true. The lowering's skip checks and loop tests ask that often.
pub fn launch_mask(func: &Function) -> Option<Value> {
    if !func.linkage.is_entry() || !func.sig.takes_mask {
        return None;
    }
    func.blocks[func.entry_block()?].params.last().copied()
}

/// What an instruction simplifies to.
enum Fold {
    /// The constant with these canonical bits, of the result's type.
    Const(u64),
    /// This other value (of the result's type).
    Same(Value),
    /// A `brif` that always goes to one target: the `jump` replacing it.
    Jump(InstData),
    /// A cheaper instruction computing the same result.
    Replace(InstData),
}

/// Folds the instructions of `func` (see the module documentation); `launch_mask` is
/// a mask known to have every existing lane on ([`launch_mask`]). Returns how many
/// instructions were folded.
pub fn run(func: &mut Function, launch_mask: Option<Value>) -> usize {
    let dom = DominatorTree::compute(func);
    let mut alias: FxHashMap<Value, Value> = FxHashMap::default();
    let mut folded = 0;
    let mut jumps = 0;
    // Reverse postorder: every operand's definition is visited (and folded) first.
    for &b in dom.rpo() {
        for i in func.blocks[b].insts.clone() {
            func.insts[i].map_operands(|v| resolve(&alias, v));
            let Some(fold) = simplify(func, i, launch_mask) else {
                continue;
            };
            match fold {
                Fold::Const(bits) => {
                    let Some(data) = func.results[i].and_then(|r| constant(func, r, bits)) else {
                        continue;
                    };
                    func.insts[i] = data;
                }
                Fold::Same(v) => {
                    let Some(r) = func.results[i] else { continue };
                    alias.insert(r, v);
                }
                Fold::Jump(data) => {
                    func.insts[i] = data;
                    jumps += 1;
                }
                Fold::Replace(data) => func.insts[i] = data,
            }
            folded += 1;
        }
    }
    // Uses outside the reachable blocks are not visited above.
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            func.insts[i].map_operands(|v| resolve(&alias, v));
        }
    }
    if jumps > 0 {
        cfg::clear_unreachable(func);
    }
    folded
}

/// `v`, or what it was folded into.
fn resolve(alias: &FxHashMap<Value, Value>, mut v: Value) -> Value {
    while let Some(&a) = alias.get(&v) {
        v = a;
    }
    v
}

/// The constant instruction giving `result`'s type the canonical value `bits`; `None`
/// for a float no `fconst` holds exactly.
fn constant(func: &Function, result: Value, bits: u64) -> Option<InstData> {
    let ty = func.value_type(result);
    Some(if ty.scalar.is_ieee() {
        InstData::Fconst {
            ty,
            bits: ops::fconst_operand(ty.scalar, bits)?,
        }
    } else {
        InstData::Iconst { ty, bits }
    })
}

/// What instruction `inst` simplifies to, if anything.
fn simplify(func: &Function, inst: Inst, launch_mask: Option<Value>) -> Option<Fold> {
    let k = |v: Value| constant_value(func, v);
    let scalar = |v: Value| func.value_type(v).scalar;
    match func.insts[inst] {
        InstData::Unary { op, arg } => Some(Fold::Const(ops::unary(op, scalar(arg))?(k(arg)?))),
        InstData::Binary { op, args } => {
            let s = scalar(args[0]);
            match (k(args[0]), k(args[1])) {
                (Some(a), Some(b)) => binary(op, s, a, b).map(Fold::Const),
                (a, b) => identity(func, inst, op, s, args, a, b),
            }
        }
        InstData::Icmp { cond, args } => match (k(args[0]), k(args[1])) {
            (Some(a), Some(b)) => Some(Fold::Const(ops::icmp(cond, scalar(args[0]))?(a, b))),
            _ if args[0] == args[1] => Some(Fold::Const(u64::from(reflexive(cond)))),
            _ => sign_test(func, cond, args).map(Fold::Replace),
        },
        InstData::Fcmp { cond, args } => {
            let f = ops::fcmp(cond, scalar(args[0]))?;
            Some(Fold::Const(f(k(args[0])?, k(args[1])?)))
        }
        InstData::Select { args } => select(func, inst, args),
        InstData::Lane { op, ref args } => any_all(func, op, args, launch_mask).map(Fold::Const),
        InstData::Convert { op, arg, to } => {
            let f = ops::convert(op, scalar(arg), to.scalar)?;
            Some(Fold::Const(f(k(arg)?)))
        }
        InstData::Brif {
            cond,
            ref then_dest,
            ref else_dest,
        } => {
            let dest = if k(cond)? != 0 { then_dest } else { else_dest };
            Some(Fold::Jump(InstData::Jump { dest: dest.clone() }))
        }
        _ => None,
    }
}

/// `(x >>u (w - 1)) != 0` as `x <s 0` and `== 0` as `x >=s 0`: the sign bit tested
/// with one comparison instead of a shift and a comparison (the runtime's IEEE
/// `fmin`/`fmax` test signs this way).
fn sign_test(func: &Function, cond: IntCC, args: [Value; 2]) -> Option<InstData> {
    let cond = match cond {
        IntCC::Ne => IntCC::Slt,
        IntCC::Eq => IntCC::Sge,
        _ => return None,
    };
    let zero = args[1];
    if constant_value(func, zero)? != 0 {
        return None;
    }
    let ValueDef::Result(shift) = func.values[args[0]].def else {
        return None;
    };
    let InstData::Binary {
        op: BinaryOp::Ushr,
        args: [x, k],
    } = func.insts[shift]
    else {
        return None;
    };
    let s = func.value_type(x).scalar;
    let sign = u64::from(s.bits().checked_sub(1)?);
    (s.is_int() && constant_value(func, k)? == sign).then_some(InstData::Icmp {
        cond,
        args: [x, zero],
    })
}

/// `a op b` on canonical bits of `s`, as the interpreter computes it; `None` for a
/// division by zero (it traps at run time) or an operation `s` does not have.
fn binary(op: BinaryOp, s: Scalar, a: u64, b: u64) -> Option<u64> {
    match ops::division(op, s) {
        Some(f) => f(a, b),
        None => Some(ops::binary(op, s)?(a, b)),
    }
}

/// `any m` or `all m` when `m` is a constant or the launch mask. A gang has at least
/// one existing lane, and the interpreter reads only those ([`crate::interp::lanes`]):
/// a constant mask has all of them on or all off, the launch mask all on.
fn any_all(func: &Function, op: LaneOp, args: &[Value], launch_mask: Option<Value>) -> Option<u64> {
    if !matches!(op, LaneOp::Any | LaneOp::All) {
        return None;
    }
    let m = *args.first()?;
    if Some(m) == launch_mask {
        return Some(1);
    }
    constant_value(func, m).map(|c| u64::from(c != 0))
}

/// `icmp cond x, x` for every `x`.
fn reflexive(cond: IntCC) -> bool {
    use IntCC::*;
    matches!(cond, Eq | Sle | Sge | Ule | Uge)
}

/// The integer identities of the module documentation, with `a` and `b` the constant
/// operands (at most one of them is known).
fn identity(
    func: &Function,
    inst: Inst,
    op: BinaryOp,
    s: Scalar,
    args: [Value; 2],
    a: Option<u64>,
    b: Option<u64>,
) -> Option<Fold> {
    use BinaryOp::*;
    if s.is_float() {
        return None;
    }
    let ones = ops::width_mask(s.bits());
    let same = |v: Value| same_type(func, inst, v);
    // Commutative operations: put the constant on the right.
    let (x, c) = match (a, b, op) {
        (_, Some(c), _) => (args[0], c),
        (Some(c), None, Iadd | Imul | Band | Bor | Bxor) => (args[1], c),
        _ => return None,
    };
    match (op, c) {
        (Iadd | Isub | Bor | Bxor, 0) => same(x),
        (Imul | Sdiv | Udiv, 1) => same(x),
        (Band, c) if c == ones => same(x),
        (Imul | Band, 0) | (Srem | Urem, 1) => Some(Fold::Const(0)),
        (Bor, c) if c == ones => Some(Fold::Const(ones)),
        (Ishl | Sshr | Ushr, c) if c % u64::from(s.bits()) == 0 => same(x),
        _ => None,
    }
}

/// `select c, a, b` with a constant `c`, or with `a` and `b` the same value.
fn select(func: &Function, inst: Inst, args: [Value; 3]) -> Option<Fold> {
    let pick = match constant_value(func, args[0]) {
        Some(c) => args[if c != 0 { 1 } else { 2 }],
        None if args[1] == args[2] => args[1],
        None => return None,
    };
    same_type(func, inst, pick).or_else(|| constant_value(func, pick).map(Fold::Const))
}

/// `Same(v)` when `v` has the type of `inst`'s result (a uniform value cannot stand for
/// a varying result).
fn same_type(func: &Function, inst: Inst, v: Value) -> Option<Fold> {
    let r = func.results[inst]?;
    let ty: Type = func.value_type(r);
    (func.value_type(v) == ty).then_some(Fold::Same(v))
}

#[cfg(test)]
mod tests {
    use crate::passes::cfg::run_on_text;

    fn fold(m: &mut crate::ir::Module) {
        super::run_module(m);
    }

    /// Integer results wrap at the width (`i8` 127 + 1 is -128, printed as its 8 bits);
    /// division and remainder round toward zero; a division by a zero constant stays
    /// (it traps at run time); the identities replace uses (`v16`, `v19`, `v21`, `v24`
    /// become `v0`) or give constants; the folded instructions stay in place.
    #[test]
    fn integers_fold_and_zero_divisors_stay() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @g(i32) -> i32 {
block0(v0: i32):
    v2 = iconst.i32 7
    v3 = iconst.i32 -3
    v4 = iadd v2, v3
    v5 = imul v2, v3
    v6 = sdiv v2, v3
    v7 = srem v2, v3
    v8 = udiv v2, v3
    v9 = iconst.i32 0
    v10 = sdiv v2, v9
    v11 = urem v0, v9
    v12 = iconst.i8 127
    v13 = iconst.i8 1
    v14 = iadd v12, v13
    v15 = ishl v2, v2
    v16 = iadd v0, v9
    v17 = imul v0, v9
    v18 = iconst.i32 1
    v19 = imul v18, v0
    v20 = iconst.i32 32
    v21 = ishl v19, v20
    v22 = band v21, v3
    v23 = icmp slt v22, v22
    v24 = sdiv v16, v18
    v25 = iconst.i32 -1
    v26 = bor v0, v25
    v27 = sext.i64 v3
    v28 = splat v2
    v29 = imul v28, v28
    v30 = iadd v24, v22
    return v30
}
",
            fold,
        );
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function internal @g(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 7
    v2 = iconst.i32 -3
    v3 = iconst.i32 4
    v4 = iconst.i32 4294967275
    v5 = iconst.i32 4294967294
    v6 = iconst.i32 1
    v7 = iconst.i32 0
    v8 = iconst.i32 0
    v9 = sdiv v1, v8
    v10 = urem v0, v8
    v11 = iconst.i8 127
    v12 = iconst.i8 1
    v13 = iconst.i8 128
    v14 = iconst.i32 896
    v15 = iadd v0, v8
    v16 = iconst.i32 0
    v17 = iconst.i32 1
    v18 = imul v17, v0
    v19 = iconst.i32 32
    v20 = ishl v0, v19
    v21 = band v0, v2
    v22 = iconst.bool 0
    v23 = sdiv v0, v17
    v24 = iconst.i32 -1
    v25 = iconst.i32 4294967295
    v26 = iconst.i64 -3
    v27 = splat v1
    v28 = iconst.[i32] 49
    v29 = iadd v0, v21
    return v29
}
"
        );
    }

    /// Floats fold in their own precision (in f32, 2^24 + 1 rounds back to 2^24), a NaN
    /// propagates quieted and `fmin` skips it, signed zeros come out as IEEE says, and
    /// `x + 0.0`, `x * 1.0` and `x == x` are not touched (wrong for -0 and NaN).
    #[test]
    fn floats_fold_bit_exact_without_identities() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @f(f32, f64) -> f32 {
block0(v0: f32, v1: f64):
    v2 = fconst.f32 16777216.0
    v3 = fconst.f32 1.0
    v4 = fadd v2, v3
    v5 = fconst.f32 0x7ff4000000000000
    v6 = fconst.f32 0.0
    v7 = fmul v5, v6
    v8 = fmin v5, v3
    v9 = fconst.f32 -0.0
    v10 = fadd v9, v9
    v11 = fadd v6, v9
    v12 = fneg v6
    v13 = fadd v0, v6
    v14 = fmul v0, v3
    v15 = fcmp uno v5, v5
    v16 = fcmp eq v0, v0
    v17 = fconst.f64 0.1
    v18 = fconst.f64 0.2
    v19 = fadd v17, v18
    v20 = fdemote.f32 v19
    v21 = fconst.f32 10000000000.0
    v22 = fcvt_to_sint.i32 v21
    v23 = fcvt_to_sint.i32 v5
    v24 = bitcast.i32 v9
    v25 = fdiv v3, v9
    v26 = fadd v13, v14
    return v26
}
",
            fold,
        );
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function internal @f(f32, f64) -> f32 {
block0(v0: f32, v1: f64):
    v2 = fconst.f32 16777216.0
    v3 = fconst.f32 1.0
    v4 = fconst.f32 16777216.0
    v5 = fconst.f32 0x7ff4000000000000
    v6 = fconst.f32 0.0
    v7 = fconst.f32 0x7ffc000000000000
    v8 = fconst.f32 1.0
    v9 = fconst.f32 -0.0
    v10 = fconst.f32 -0.0
    v11 = fconst.f32 0.0
    v12 = fconst.f32 -0.0
    v13 = fadd v0, v6
    v14 = fmul v0, v3
    v15 = iconst.bool 1
    v16 = fcmp eq v0, v0
    v17 = fconst.f64 0.1
    v18 = fconst.f64 0.2
    v19 = fconst.f64 0.30000000000000004
    v20 = fconst.f32 0.30000001192092896
    v21 = fconst.f32 10000000000.0
    v22 = iconst.i32 2147483647
    v23 = iconst.i32 0
    v24 = iconst.i32 2147483648
    v25 = fconst.f32 -inf
    v26 = fadd v13, v14
    return v26
}
"
        );
    }

    /// A `brif` on a constant becomes a `jump`; the block it no longer reaches is emptied.
    /// A `select` on a constant condition is its chosen operand.
    /// `(x >> 31) != 0` (unsigned shift) is `x < 0`, `== 0` is `x >= 0`; other shift
    /// counts, signed shifts and other constants stay.
    #[test]
    fn sign_bit_tests_become_one_compare() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @g([i32], i64) -> bool {
block0(v0: [i32], v1: i64):
    v2 = iconst.i32 31
    v3 = ushr v0, v2
    v4 = iconst.i32 0
    v5 = icmp ne v3, v4
    v6 = iconst.i64 63
    v7 = ushr v1, v6
    v8 = iconst.i64 0
    v9 = icmp eq v7, v8
    v10 = iconst.i32 30
    v11 = ushr v0, v10
    v12 = icmp ne v11, v4
    v13 = sshr v0, v2
    v14 = icmp ne v13, v4
    v15 = iconst.i32 1
    v16 = icmp ne v3, v15
    return v9
}
",
            fold,
        );
        assert!(out.contains("v5 = icmp slt v0, v4"), "{out}");
        assert!(out.contains("v9 = icmp sge v1, v8"), "{out}");
        assert!(out.contains("v12 = icmp ne v11, v4"), "{out}");
        assert!(out.contains("v14 = icmp ne v13, v4"), "{out}");
        assert!(out.contains("v16 = icmp ne v3, v15"), "{out}");
    }

    #[test]
    fn constant_branch_becomes_jump() {
        let out = run_on_text(
            "module lanes 16 ptr 8

function internal @h(i32, i32) -> i32 {
block0(v0: i32, v1: i32):
    v2 = iconst.i32 1
    v3 = iconst.i32 2
    v4 = icmp slt v2, v3
    v5 = select v4, v0, v1
    brif v4, block1, block2
block1:
    return v5
block2:
    v6 = iadd v1, v2
    return v6
}
",
            fold,
        );
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function internal @h(i32, i32) -> i32 {
block0(v0: i32, v1: i32):
    v2 = iconst.i32 1
    v3 = iconst.i32 2
    v4 = iconst.bool 1
    v5 = select v4, v0, v1
    jump block1
block1:
    return v0
block2:
    trap unreachable
}
"
        );
    }

    /// `any`/`all` of the launch mask of a task no call reaches are true (every gang
    /// has an existing lane), and of a constant mask its value; the same function's
    /// mask is unknown once something calls it.
    #[test]
    fn any_of_launch_mask_only_when_not_called() {
        let task = "module lanes 16 ptr 8

function task @t(i32) masked {
block0(v0: i32, v1: [bool]):
    v2 = any v1
    v3 = all v1
    v4 = iconst.[bool] 0
    v5 = all v4
    v6 = icmp slt v0, v0
    v7 = splat v6
    v8 = any v7
    v9 = band v1, v7
    v10 = any v9
    brif v2, block1, block2
block1:
    return
block2:
    return
}
";
        let out = run_on_text(task, fold);
        assert_eq!(
            out,
            "module lanes 16 ptr 8

function task @t(i32) masked {
block0(v0: i32, v1: [bool]):
    v2 = iconst.bool 1
    v3 = iconst.bool 1
    v4 = iconst.[bool] 0
    v5 = iconst.bool 0
    v6 = iconst.bool 0
    v7 = splat v6
    v8 = iconst.bool 0
    v9 = iconst.[bool] 0
    v10 = iconst.bool 0
    jump block1
block1:
    return
block2:
    trap unreachable
}
"
        );
        let called = format!(
            "{task}
function internal @u() masked {{
block0(v0: [bool]):
    v1 = iconst.i32 1
    call @t(v1) mask v0
    return
}}
"
        );
        let out = run_on_text(&called, fold);
        assert!(out.contains("    v2 = any v1\n    v3 = all v1\n"), "{out}");
        assert!(out.contains("brif v2, block1, block2"), "{out}");
    }
}
