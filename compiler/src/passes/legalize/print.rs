//! `print` for targets without a host to format it (Nyuzi): each IR `print` becomes
//! calls of the routines of `stdlib/runtime_print.spmd`, which format on the device and
//! write the characters to the serial port.
//!
//! The format is split at its `%`s as the interpreter splits it
//! ([`crate::interp::print`]): a literal piece becomes `print_lit` calls of four bytes
//! each (packed lowest first), and each `%` with an argument left a call by the
//! argument's width: `print_i32_<u|v>(m, kind, x)` for `bool`, 8-, 16- and 32-bit
//! integers, `f32` and 4-byte pointers, `print_i64_<u|v>` for `i64`, `f64` and 8-byte
//! pointers. The argument is widened to those bits (narrow integers sign-extended, as
//! the interpreter reads them; `bool` zero-extended; floats and pointers as their
//! bits) and `kind` says how to read them (0 decimal, 1 bool, 2 pointer, 3 float).
//! `m` is the print's mask as lane bits (`ballot`; every lane of the gang when the
//! print has no mask): every routine prints nothing when it is 0, so a print with no
//! lane on prints nothing, and varying elements of off lanes print as `((v))`. The
//! calls are bracketed by `print_begin(m)`/`print_end(m)`, which hold a lock so that
//! gangs on different hardware threads print whole prints, not interleaved characters
//! (prints of different blocks may still come in another order than the
//! interpreter's, which runs blocks one after the other).
//!
//! This runs on whole functions before the per-instruction rewrites, since it needs the
//! module's strings.

use cranelift_entity::PrimaryMap;
use smallvec::SmallVec;

use super::{Cursor, RUNTIME_PREFIX};
use crate::ir::{ConvOp, Function, InstData, LaneOp, Scalar, StrConst, Type, Value};

/// Whether `data` is a `print` (never native on Nyuzi).
pub fn is_illegal(data: &InstData) -> bool {
    matches!(data, InstData::Print { .. })
}

/// Rewrites every `print` of `func` into routine calls (see the module docs).
pub(super) fn legalize_prints(
    func: &mut Function,
    strings: &PrimaryMap<StrConst, String>,
    routines: &super::RoutineTable,
    ptr_size: u32,
    lane_count: u32,
) -> Result<(), String> {
    for block in func.layout.clone() {
        let old = std::mem::take(&mut func.blocks[block].insts);
        let mut out = Vec::with_capacity(old.len());
        for inst in old {
            let InstData::Print { format, args, mask } = func.insts[inst].clone() else {
                out.push(inst);
                continue;
            };
            let text = strings
                .get(format)
                .ok_or_else(|| format!("legalize: print of a missing string {format}"))?;
            let mut cur = Cursor {
                span: func.spans[inst],
                func: &mut *func,
                inst,
                out: &mut out,
                routines,
                ptr_size,
                lane_count,
            };
            expand(&mut cur, text, &args, mask)?;
        }
        func.blocks[block].insts = out;
    }
    Ok(())
}

/// The calls replacing one print, inserted before it.
fn expand(cur: &mut Cursor, text: &str, args: &[Value], mask: Option<Value>) -> Result<(), String> {
    let m = lane_bits(cur, mask)?;
    call_void(cur, "print_begin", &[m])?;
    let mut args = args.iter();
    let mut pieces = text.split('%');
    literal(cur, m, pieces.next().unwrap_or(""))?;
    for piece in pieces {
        if let Some(&arg) = args.next() {
            argument(cur, m, arg)?;
        }
        literal(cur, m, piece)?;
    }
    call_void(cur, "print_end", &[m])
}

/// The print's mask as a uniform `i32` of lane bits.
fn lane_bits(cur: &mut Cursor, mask: Option<Value>) -> Result<Value, String> {
    if cur.lane_count > 32 {
        return Err(format!(
            "legalize: print supports at most 32 lanes, the module has {}",
            cur.lane_count
        ));
    }
    let i32t = Type::uniform(Scalar::I32);
    let Some(mask) = mask else {
        let all = if cur.lane_count == 32 {
            u64::from(u32::MAX)
        } else {
            (1u64 << cur.lane_count) - 1
        };
        return Ok(cur.iconst(i32t, all));
    };
    let mask = cur.varying(mask)?;
    let bits = cur.ins(InstData::Lane {
        op: LaneOp::Ballot,
        args: SmallVec::from_slice(&[mask]),
    })?;
    cur.conv(ConvOp::Ireduce, bits, Scalar::I32)
}

/// `print_lit` calls writing the bytes of `piece`.
fn literal(cur: &mut Cursor, m: Value, piece: &str) -> Result<(), String> {
    let i32t = Type::uniform(Scalar::I32);
    for chunk in piece.as_bytes().chunks(4) {
        let packed = chunk
            .iter()
            .rev()
            .fold(0u64, |acc, &b| acc << 8 | u64::from(b));
        let packed = cur.iconst(i32t, packed);
        let n = cur.iconst(i32t, chunk.len() as u64);
        call_void(cur, "print_lit", &[m, packed, n])?;
    }
    Ok(())
}

/// The call printing one argument.
fn argument(cur: &mut Cursor, m: Value, arg: Value) -> Result<(), String> {
    let ty = cur.ty(arg);
    let (op, wide, kind) = match ty.scalar {
        Scalar::Bool => (ConvOp::Zext, Scalar::I32, 1),
        Scalar::I8 | Scalar::I16 | Scalar::I32 => (ConvOp::Sext, Scalar::I32, 0),
        Scalar::I64 => (ConvOp::Sext, Scalar::I64, 0),
        Scalar::F32 => (ConvOp::Bitcast, Scalar::I32, 3),
        Scalar::F64 => (ConvOp::Bitcast, Scalar::I64, 3),
        Scalar::F16 => return Err("print of f16: the lowering prints it as f32".into()),
        Scalar::Ptr if cur.ptr_size == 4 => (ConvOp::Bitcast, Scalar::I32, 2),
        Scalar::Ptr => (ConvOp::Bitcast, Scalar::I64, 2),
    };
    let x = cur.conv(op, arg, wide)?;
    let kind = cur.iconst(Type::uniform(Scalar::I32), kind);
    let width = if wide == Scalar::I32 { "i32" } else { "i64" };
    let v = super::variant(ty);
    call_void(cur, &format!("print_{width}_{v}"), &[m, kind, x])
}

/// Inserts a call of the result-less unmasked routine `RUNTIME_PREFIX + name`.
fn call_void(cur: &mut Cursor, name: &str, args: &[Value]) -> Result<(), String> {
    let full = format!("{RUNTIME_PREFIX}{name}");
    let (func, sig) = cur
        .routines
        .get(&full)?
        .ok_or_else(|| format!("the runtime routine @{full} is missing from the module"))?;
    if sig.ret.is_some() || sig.takes_mask || sig.params.len() != args.len() {
        return Err(format!("@{full} does not have the signature print expects"));
    }
    for (&a, &p) in args.iter().zip(&sig.params) {
        if cur.ty(a) != p {
            return Err(format!("@{full} takes {p}, print passes {}", cur.ty(a)));
        }
    }
    let inst = cur.func.insts.push(InstData::Call {
        func,
        args: SmallVec::from_slice(args),
        mask: None,
    });
    cur.func.spans[inst] = cur.span;
    cur.out.push(inst);
    cur.func.results[inst] = None;
    Ok(())
}
