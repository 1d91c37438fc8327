//! `print` formatting, as ISPC's runtime does it (`__do_print`).
//!
//! Each `%` of the format is replaced by the next argument; a `%` with no argument left
//! prints nothing, and arguments past the last `%` are ignored (sema rejects both,
//! E0324). A uniform value prints as itself; a varying one as `[v0,v1,...]` with one
//! element per lane of the gang, where lanes that are off (or do not exist) print as
//! `((v))`, except those of a `bool`, which print as a row of nine underscores
//! ([`OFF_BOOL`]), as ISPC's CPU runtime prints them. Element text, following ISPC's
//! `printf` conversions:
//!
//! * `bool`: `true` / `false`;
//! * integers: signed decimal of their width (`%d`; the IR does not know which were
//!   unsigned, so a `uint` above `INT_MAX` prints negative);
//! * floats: `%f`, six decimals, `inf`, `-inf`, `nan`, `-nan`;
//! * pointers: `0x` and lowercase hex.

use std::fmt::Write;

use super::ops::sext;
use crate::ir::Scalar;

/// What an off lane of a varying `bool` prints instead of its value.
pub const OFF_BOOL: &str = "_________";

/// One `print` argument: its element type and lanes (one lane when uniform).
pub struct PrintArg<'a> {
    pub scalar: Scalar,
    pub varying: bool,
    pub lanes: &'a [u64],
}

/// Appends the formatted text to `out`; `mask` has bit `i` set when lane `i` is on.
pub fn format(fmt: &str, args: &[PrintArg<'_>], mask: u64, out: &mut String) {
    let mut args = args.iter();
    let mut pieces = fmt.split('%');
    out.push_str(pieces.next().unwrap_or(""));
    for piece in pieces {
        if let Some(arg) = args.next() {
            argument(arg, mask, out);
        }
        out.push_str(piece);
    }
}

fn argument(arg: &PrintArg<'_>, mask: u64, out: &mut String) {
    if !arg.varying {
        element(arg.lanes[0], arg.scalar, out);
        return;
    }
    out.push('[');
    for (i, &x) in arg.lanes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let on = mask >> i & 1 != 0;
        if !on && arg.scalar == Scalar::Bool {
            out.push_str(OFF_BOOL);
            continue;
        }
        if !on {
            out.push_str("((");
        }
        element(x, arg.scalar, out);
        if !on {
            out.push_str("))");
        }
    }
    out.push(']');
}

/// One element in canonical form.
pub fn element(x: u64, s: Scalar, out: &mut String) {
    match s {
        Scalar::Bool => out.push_str(if x & 1 != 0 { "true" } else { "false" }),
        Scalar::F32 => float(f64::from(f32::from_bits(x as u32)), out),
        Scalar::F64 => float(f64::from_bits(x), out),
        Scalar::Ptr => {
            let _ = write!(out, "{x:#x}");
        }
        _ => {
            let _ = write!(out, "{}", sext(x, s.bits()));
        }
    }
}

/// C's `%f`.
fn float(v: f64, out: &mut String) {
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if v.is_nan() {
        let _ = write!(out, "{sign}nan");
    } else if v.is_infinite() {
        let _ = write!(out, "{sign}inf");
    } else {
        let _ = write!(out, "{v:.6}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(x: f32) -> u64 {
        u64::from(x.to_bits())
    }

    #[test]
    fn follows_ispc_print() {
        // The example of ISPC's guide, on a 4-wide target.
        let x = [f(1.0), f(2.0), f(2.0), f(3.0)];
        let mut out = String::new();
        let args = [PrintArg {
            scalar: Scalar::F32,
            varying: true,
            lanes: &x,
        }];
        format("added to x = %\n", &args, 0b0011, &mut out);
        assert_eq!(
            out,
            "added to x = [1.000000,2.000000,((2.000000)),((3.000000))]\n"
        );
        let mut out = String::new();
        let args = [
            PrintArg {
                scalar: Scalar::I32,
                varying: false,
                lanes: &[(-10i32) as u32 as u64],
            },
            PrintArg {
                scalar: Scalar::Bool,
                varying: true,
                lanes: &[1, 0],
            },
            PrintArg {
                scalar: Scalar::F64,
                varying: false,
                lanes: &[f64::NEG_INFINITY.to_bits()],
            },
        ];
        format("i = %, b = %, d = %%!", &args, 0b01, &mut out);
        assert_eq!(out, "i = -10, b = [true,_________], d = -inf!");
        let mut out = String::new();
        element(0x10040, Scalar::Ptr, &mut out);
        element(f(f32::NAN), Scalar::F32, &mut out);
        element(0xff, Scalar::I8, &mut out);
        assert_eq!(out, "0x10040nan-1");
    }
}
