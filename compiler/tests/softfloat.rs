//! The soft-float runtime routines (`stdlib/runtime_float.spmd`), run on the reference
//! interpreter and compared bit for bit with the native IR operation they replace.
//!
//! The routines are part of the standard library's text (the front end compiles them with
//! every program), so each test compiles just a kernel that, for every input,
//! computes the varying routine, the uniform routine and the native operation (which the
//! interpreter evaluates with the host's IEEE arithmetic), and checks that all three agree
//! on edge cases (signed zeros, infinities, NaNs, the subnormal range, ulp neighbours of
//! one, halfway rounding cases, extreme exponents) and on random bit patterns from a
//! fixed-seed generator. A second check lowers the routines alone and asserts that they
//! use only operations the Nyuzi back end implements natively.

mod common;

use common::XorShiftRng as Rng;
use common::*;
use spmdc::interp::ops;
use spmdc::ir::{ConvOp, Scalar};

const LANES: u32 = 16;
/// The uniform routines run on every this-many-th input only: a uniform call costs as
/// much as a varying one in the interpreter, and they share the varying code.
const UNIFORM_STRIDE: usize = 13;

/// An operand or result type of a routine: its name in the language and how a kernel
/// turns the `uint64` bits in a buffer into a value and back.
#[derive(Clone, Copy)]
struct Ty {
    lang: &'static str,
    from_bits: &'static str,
    to_bits: &'static str,
}

const F32: Ty = Ty {
    lang: "float",
    from_bits: "floatbits((uint32)X)",
    to_bits: "(uint64)intbits(X)",
};

const F64: Ty = Ty {
    lang: "double",
    from_bits: "doublebits(X)",
    to_bits: "intbits(X)",
};

const BOOL: Ty = Ty {
    lang: "bool",
    from_bits: "(X != 0)",
    to_bits: "(uint64)(X ? 1 : 0)",
};

const I32: Ty = Ty {
    lang: "int",
    from_bits: "(int)X",
    to_bits: "(uint64)(uint32)X",
};

const I64: Ty = Ty {
    lang: "int64",
    from_bits: "(int64)X",
    to_bits: "(uint64)X",
};

/// Compiles the runtime plus `kernel` and runs `k(a, b, got, gotu, want, n)`; returns
/// `(got, gotu, want)`.
fn run(kernel: &str, a: &[u64], b: &[u64]) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let result = check_source("softfloat.spmd", kernel);
    assert!(!result.diags.has_errors(), "{}", render_all(&result));
    let module =
        spmdc::driver::lower_front(&result).unwrap_or_else(|d| panic!("not lowered: {d:?}"));
    let n = a.len();
    let bytes = |xs: &[u64]| -> Vec<u8> { xs.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let bufs = [
        bytes(a),
        bytes(b),
        vec![0; n * 8],
        vec![0; n * 8],
        vec![0; n * 8],
    ];
    let out = run_k(&module, &bufs, n as u64, LANES, 2_000_000_000)
        .unwrap_or_else(|e| panic!("run failed: {e}"));
    let read = |buf: &[u8]| -> Vec<u64> {
        buf.chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    (read(&out[2]), read(&out[3]), read(&out[4]))
}

/// The kernel comparing `routine` (without its `_v`/`_u` suffix) on operands of types
/// `args` with result type `ret` against `native`, an expression of `x` (and `y`).
fn kernel(routine: &str, args: &[Ty], ret: Ty, native: &str) -> String {
    let names = ["x", "y"];
    let bufs = ["a", "b"];
    let decl = |uniform: bool| -> String {
        args.iter()
            .enumerate()
            .map(|(i, t)| {
                let q = if uniform { "uniform " } else { "" };
                let v = t.from_bits.replace('X', &format!("{}[i]", bufs[i]));
                format!("        {q}{} {} = {v};\n", t.lang, names[i])
            })
            .collect()
    };
    let call = names[..args.len()].join(", ");
    let to = |e: String| ret.to_bits.replace('X', &e);
    format!(
        "export void k(uniform uint64 a[], uniform uint64 b[], uniform uint64 got[],
               uniform uint64 gotu[], uniform uint64 want[], uniform int n) {{
    foreach (i = 0 ... n) {{
{dv}        got[i] = {gv};
        want[i] = {nv};
    }}
    for (uniform int i = 0; i < n; i += {UNIFORM_STRIDE}) {{
{du}        gotu[i] = {gu};
    }}
}}
",
        dv = decl(false),
        du = decl(true),
        gv = to(format!("{routine}_v({call})")),
        gu = to(format!("{routine}_u({call})")),
        nv = to(native.to_string()),
    )
}

/// Runs `routine` against `native` on the inputs and reports every disagreement.
fn check(routine: &str, args: &[Ty], ret: Ty, native: &str, a: &[u64], b: &[u64]) {
    let src = kernel(routine, args, ret, native);
    let (got, gotu, want) = run(&src, a, b);
    compare(routine, a, b, &got, &gotu, &want);
}

/// Runs `routine` against `reference`, the interpreter's own lane function for an IR
/// operation the language cannot spell (such as `fcvt_to_sint.i8`), on the operand bits.
fn check_fn(routine: &str, args: &[Ty], ret: Ty, reference: &dyn Fn(u64) -> u64, a: &[u64]) {
    let b = vec![0; a.len()];
    let src = kernel(routine, args, ret, "0");
    let (got, gotu, _) = run(&src, a, &b);
    let want: Vec<u64> = a.iter().map(|&x| reference(x)).collect();
    compare(routine, a, &b, &got, &gotu, &want);
}

/// Asserts that the varying results (and the uniform ones that were computed) equal
/// `want`, listing the first disagreements.
fn compare(routine: &str, a: &[u64], b: &[u64], got: &[u64], gotu: &[u64], want: &[u64]) {
    let mut bad = Vec::new();
    for i in 0..a.len() {
        let uniform_bad = i % UNIFORM_STRIDE == 0 && gotu[i] != want[i];
        if got[i] != want[i] || uniform_bad {
            bad.push(format!(
                "  a={:#x} b={:#x}: varying {:#x} uniform {} native {:#x}",
                a[i],
                b[i],
                got[i],
                if i % UNIFORM_STRIDE == 0 {
                    format!("{:#x}", gotu[i])
                } else {
                    "-".to_string()
                },
                want[i]
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{routine}: {} of {} inputs differ:\n{}",
        bad.len(),
        a.len(),
        bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// f32 bit patterns worth testing on their own.
fn f32_edges() -> Vec<u64> {
    let mut v: Vec<u32> = vec![
        0x0000_0000, // +0
        0x0000_0001, // smallest subnormal
        0x0000_0002,
        0x0000_0003,
        0x003f_ffff,
        0x0040_0000,
        0x007f_ffff, // largest subnormal
        0x0080_0000, // smallest normal
        0x0080_0001,
        0x00ff_ffff,
        0x3f7f_ffff, // 1 - ulp
        0x3f80_0000, // 1
        0x3f80_0001, // 1 + ulp
        0x3fc0_0000, // 1.5
        0x4000_0000, // 2
        0x4040_0000, // 3
        0x40a0_0000, // 5
        0x4120_0000, // 10
        0x3eaa_aaab, // 1/3
        0x4b00_0000, // 2^23
        0x4b7f_ffff,
        0x4b80_0000, // 2^24
        0x4b80_0001,
        0x4f00_0000, // 2^31
        0x5f00_0000, // 2^63
        0x3f00_0000, // 0.5
        0x3f00_0001,
        0x3fff_ffff,
        0x4b40_0001, // 2^23 + 2^22 + 1
        0x7f7f_ffff, // max
        0x7f00_0000,
        0x0100_0000,
        0x7f80_0000, // inf
        0x7fc0_0000, // qNaN
        0x7fc0_1234,
        0x7f80_0001, // sNaN
        0x7fbf_ffff,
    ];
    let neg: Vec<u32> = v.iter().map(|x| x | 0x8000_0000).collect();
    v.extend(neg);
    v.into_iter().map(u64::from).collect()
}

/// `count` f32 bit patterns: uniformly random, random with exponents near the
/// subnormal range or near one, and random significands with short runs of low bits.
fn f32_random(rng: &mut Rng, count: usize) -> Vec<u64> {
    (0..count)
        .map(|i| {
            let r = rng.next();
            let bits = match i % 4 {
                0 => r as u32,
                1 => (r as u32 & 0x80ff_ffff) | ((r >> 40) as u32 % 4) << 23,
                2 => (r as u32 & 0x807f_ffff) | (((r >> 40) as u32 % 16) + 120) << 23,
                _ => (r as u32 & 0xff80_0000) | ((r >> 32) as u32 & 0x7) << ((r >> 48) % 21),
            };
            u64::from(bits)
        })
        .collect()
}

/// Every pair of the positive edge cases (the first half of `edges`), each operand
/// negated (`sign` is the sign bit) at random.
fn edge_pairs(edges: &[u64], sign: u64, rng: &mut Rng) -> (Vec<u64>, Vec<u64>) {
    let pos = &edges[..edges.len() / 2];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &x in pos {
        for &y in pos {
            let r = rng.next();
            a.push(if r & 1 != 0 { x | sign } else { x });
            b.push(if r & 2 != 0 { y | sign } else { y });
        }
    }
    (a, b)
}

/// Every pair of edge-case magnitudes with random signs, then random pairs.
fn f32_pairs(seed: u64, random: usize) -> (Vec<u64>, Vec<u64>) {
    let mut rng = Rng(seed);
    let (a, b) = edge_pairs(&f32_edges(), 1 << 31, &mut rng);
    let (mut a, mut b) = (a, b);
    a.extend(f32_random(&mut rng, random));
    b.extend(f32_random(&mut rng, random));
    // Operands with close significands: quotients near 1 and halfway cases.
    for _ in 0..random / 4 {
        let x = rng.next() as u32 & 0x3fff_ffff;
        let d = (rng.next() % 7) as u32;
        a.push(u64::from(x));
        b.push(u64::from((x & 0x007f_ffff ^ d) | 0x3f80_0000));
    }
    (a, b)
}

/// One-operand inputs: the edge cases, their ulp neighbours, and random patterns.
fn f32_singles(seed: u64, random: usize) -> Vec<u64> {
    let mut v = f32_edges();
    let near: Vec<u64> = v
        .iter()
        .flat_map(|&x| [x.wrapping_sub(1) & 0xffff_ffff, (x + 1) & 0xffff_ffff])
        .collect();
    v.extend(near);
    let mut rng = Rng(seed);
    v.extend(f32_random(&mut rng, random));
    // Perfect squares and their neighbours.
    for _ in 0..random / 8 {
        let r = (rng.next() % 4096) as f32 * 0.015625;
        let bits = u64::from((r * r).to_bits());
        v.extend([bits, bits + 1, bits.saturating_sub(1)]);
    }
    v
}

#[test]
fn f32_fdiv_matches_native() {
    let (a, b) = f32_pairs(0x1234_5678, 4000);
    check("__spmdc_rt_fdiv_f32", &[F32, F32], F32, "x / y", &a, &b);
}

#[test]
fn f32_sqrt_matches_native() {
    let a = f32_singles(0x9e37_79b9, 4000);
    let b = vec![0; a.len()];
    check("__spmdc_rt_sqrt_f32", &[F32], F32, "sqrt(x)", &a, &b);
}

#[test]
fn f32_frem_matches_native() {
    // The loop runs once per unit of exponent difference: few far-apart pairs.
    let (mut a, mut b) = f32_pairs(0x5151_7777, 1000);
    let exp = |x: u64| ((x >> 23) & 0xff) as i64;
    let keep: Vec<bool> = a
        .iter()
        .zip(&b)
        .enumerate()
        .map(|(i, (&x, &y))| (exp(x) - exp(y)).abs() <= 40 || i % 16 == 0)
        .collect();
    let mut k = keep.iter();
    a.retain(|_| *k.next().unwrap());
    let mut k = keep.iter();
    b.retain(|_| *k.next().unwrap());
    // Huge exponent differences: the longest loops.
    let mut rng = Rng(77);
    for _ in 0..32 {
        a.push(rng.next() & 0x7f7f_ffff | 0x7000_0000);
        b.push(rng.next() & 0x00ff_ffff);
    }
    check(
        "__spmdc_rt_frem_f32",
        &[F32, F32],
        F32,
        "fmod(x, y)",
        &a,
        &b,
    );
}

#[test]
fn f32_fmin_fmax_match_native() {
    let (a, b) = f32_pairs(0x2468_ace0, 500);
    check("__spmdc_rt_fmin_f32", &[F32, F32], F32, "min(x, y)", &a, &b);
    check("__spmdc_rt_fmax_f32", &[F32, F32], F32, "max(x, y)", &a, &b);
}

/// f32 values around integers and the limits of every integer width.
fn f32_integral(seed: u64) -> Vec<u64> {
    let mut v = f32_singles(seed, 600);
    for e in [7, 8, 15, 16, 23, 24, 31, 32, 63, 64] {
        let p = (e + 127u64) << 23;
        for d in 0..3 {
            for x in [p + d, p - 1 - d, p | 0x40_0000] {
                v.push(x);
                v.push(x | 0x8000_0000);
            }
        }
    }
    for i in 0..200u64 {
        let half = 0.5f32 * (i as f32 - 100.0);
        v.push(u64::from(half.to_bits()));
        v.push(u64::from((half + 0.25).to_bits()));
    }
    v
}

#[test]
fn f32_rounding_matches_native() {
    let a = f32_integral(0x1111_2222);
    let b = vec![0; a.len()];
    for (routine, native) in [
        ("__spmdc_rt_trunc_f32", "trunc(x)"),
        ("__spmdc_rt_floor_f32", "floor(x)"),
        ("__spmdc_rt_ceil_f32", "ceil(x)"),
        ("__spmdc_rt_nearest_f32", "round(x)"),
    ] {
        check(routine, &[F32], F32, native, &a, &b);
    }
}

#[test]
fn f32_to_int_matches_native() {
    check_float_to_int(F32, Scalar::F32, "f32", &f32_integral(0x3333_4444));
}

/// The conversions of `from` (IR type `scalar`, routine suffix `suffix`) to every
/// integer width, signed and unsigned, on the inputs `a`.
fn check_float_to_int(from: Ty, scalar: Scalar, suffix: &str, a: &[u64]) {
    let b = vec![0; a.len()];
    // The language converts to 8 and 16 bits through 32, so the reference for the
    // narrow IR conversions (which saturate at their own width) is the interpreter's.
    for (w, s) in [
        ("i8", Scalar::I8),
        ("i16", Scalar::I16),
        ("i32", Scalar::I32),
    ] {
        for (op, name) in [(ConvOp::FcvtToSint, "sint"), (ConvOp::FcvtToUint, "uint")] {
            let lane = ops::convert(op, scalar, s).unwrap();
            // The routines return an int: the narrow result sign- or zero-extended.
            let bits = s.bits();
            let reference = move |x: u64| -> u64 {
                let r = lane(x);
                let r = if op == ConvOp::FcvtToSint {
                    ops::sext(r, bits) as u64
                } else {
                    r
                };
                r & 0xffff_ffff
            };
            let routine = format!("__spmdc_rt_fcvt_to_{name}_{suffix}_{w}");
            check_fn(&routine, &[from], I32, &reference, a);
        }
    }
    check(
        &format!("__spmdc_rt_fcvt_to_sint_{suffix}_i64"),
        &[from],
        I64,
        "(int64)x",
        a,
        &b,
    );
    check(
        &format!("__spmdc_rt_fcvt_to_uint_{suffix}_i64"),
        &[from],
        I64,
        "(int64)(uint64)x",
        a,
        &b,
    );
}

/// 64-bit integers of every magnitude, with runs of ones and zeros around the bits that
/// f32 and f64 rounding look at.
fn int_inputs(seed: u64, count: usize) -> Vec<u64> {
    let mut v: Vec<u64> = vec![
        0,
        1,
        2,
        3,
        0x7f,
        0x80,
        0xff,
        0xffff,
        0x7fff_ffff,
        0x8000_0000,
    ];
    v.extend([
        0xffff_ffff,
        0x1_0000_0000,
        0xff_ffff,
        0x100_0001,
        0x100_0003,
        0x1ff_fffd,
    ]);
    v.extend([
        u64::MAX,
        i64::MAX as u64,
        1 << 63,
        (1 << 63) + 1,
        0x20_0000_0000_0001,
    ]);
    v.extend([
        0x1f_ffff_ffff_ffff,
        0x3f_ffff_ffff_ffff,
        0x20_0000_0000_0003,
    ]);
    let neg: Vec<u64> = v.iter().map(|x| x.wrapping_neg()).collect();
    v.extend(neg);
    let mut rng = Rng(seed);
    for i in 0..count {
        let r = rng.next();
        let shift = (i as u64 * 7) % 64;
        v.push(match i % 3 {
            0 => r,
            1 => r >> shift,
            _ => ((r | 0xff) >> shift) ^ ((r >> 60) << (shift / 2)),
        });
    }
    v
}

#[test]
fn int_to_f32_matches_native() {
    let a = int_inputs(0x5555_6666, 1500);
    let b = vec![0; a.len()];
    check(
        "__spmdc_rt_fcvt_from_uint_i32_f32",
        &[I32],
        F32,
        "(float)(uint32)x",
        &a,
        &b,
    );
    check(
        "__spmdc_rt_fcvt_from_uint_i64_f32",
        &[I64],
        F32,
        "(float)(uint64)x",
        &a,
        &b,
    );
    check(
        "__spmdc_rt_fcvt_from_sint_i64_f32",
        &[I64],
        F32,
        "(float)x",
        &a,
        &b,
    );
}

/// f64 bit patterns worth testing on their own.
fn f64_edges() -> Vec<u64> {
    let mut v: Vec<u64> = vec![
        0, // +0
        1, // smallest subnormal
        2,
        3,
        0x0007_ffff_ffff_ffff,
        0x0008_0000_0000_0000,
        0x000f_ffff_ffff_ffff, // largest subnormal
        0x0010_0000_0000_0000, // smallest normal
        0x0010_0000_0000_0001,
        0x001f_ffff_ffff_ffff,
        0x3fef_ffff_ffff_ffff, // 1 - ulp
        0x3ff0_0000_0000_0000, // 1
        0x3ff0_0000_0000_0001, // 1 + ulp
        0x3ff8_0000_0000_0000, // 1.5
        0x4000_0000_0000_0000, // 2
        0x4008_0000_0000_0000, // 3
        0x4014_0000_0000_0000, // 5
        0x4024_0000_0000_0000, // 10
        0x3fd5_5555_5555_5555, // 1/3
        0x4330_0000_0000_0000, // 2^52
        0x433f_ffff_ffff_ffff,
        0x4340_0000_0000_0000, // 2^53
        0x4340_0000_0000_0001,
        0x41e0_0000_0000_0000, // 2^31
        0x43e0_0000_0000_0000, // 2^63
        0x43f0_0000_0000_0000, // 2^64
        0x3fe0_0000_0000_0000, // 0.5
        0x3fe0_0000_0000_0001,
        0x3fff_ffff_ffff_ffff,
        0x4338_0000_0000_0001,
        0x7fef_ffff_ffff_ffff, // max
        0x7fe0_0000_0000_0000,
        0x47ef_ffff_e000_0000, // f32 max
        0x47ef_ffff_f000_0000, // halfway above f32 max
        0x36a0_0000_0000_0000, // f32 smallest subnormal
        0x3690_0000_0000_0000, // half of it
        0x3690_0000_0000_0001,
        0x380f_ffff_f000_0000, // rounds to the f32 smallest normal
        0x3ff0_0000_1000_0000, // 1 + half an f32 ulp
        0x3ff0_0000_3000_0000,
        0x7ff0_0000_0000_0000, // inf
        0x7ff8_0000_0000_0000, // qNaN
        0x7ff8_0000_1234_5678,
        0x7ff0_0000_0000_0001, // sNaN
        0x7ff7_ffff_ffff_ffff,
    ];
    let neg: Vec<u64> = v.iter().map(|x| x | 1 << 63).collect();
    v.extend(neg);
    v
}

/// `count` f64 bit patterns: uniformly random, near the subnormal range, near one, and
/// short significands (exact products and halfway cases).
fn f64_random(rng: &mut Rng, count: usize) -> Vec<u64> {
    (0..count)
        .map(|i| {
            let r = rng.next();
            match i % 4 {
                0 => r,
                1 => (r & 0x800f_ffff_ffff_ffff) | (rng.next() % 4) << 52,
                2 => (r & 0x800f_ffff_ffff_ffff) | ((rng.next() % 64) + 990) << 52,
                _ => (r & 0xfff0_0000_0000_0000) | (rng.next() & 0xff) << (rng.next() % 45),
            }
        })
        .collect()
}

/// Edge-case pairs with random signs, random pairs, and pairs of close magnitudes.
fn f64_pairs(seed: u64, random: usize) -> (Vec<u64>, Vec<u64>) {
    let mut rng = Rng(seed);
    let (a, b) = edge_pairs(&f64_edges(), 1 << 63, &mut rng);
    let (mut a, mut b) = (a, b);
    a.extend(f64_random(&mut rng, random));
    b.extend(f64_random(&mut rng, random));
    for _ in 0..random / 4 {
        // Close magnitudes: cancellation in sums, quotients near one.
        let x = rng.next() & 0xbfff_ffff_ffff_ffff;
        let d = rng.next() % 5;
        let sign = (rng.next() & 1) << 63;
        a.push(x);
        b.push((((x ^ d) & 0x000f_ffff_ffff_ffff) | (x & 0xfff0_0000_0000_0000)) ^ sign);
    }
    (a, b)
}

/// One-operand inputs: edge cases and their neighbours, random patterns, perfect
/// squares, and halves and quarters around zero.
fn f64_singles(seed: u64, random: usize) -> Vec<u64> {
    let mut v = f64_edges();
    let near: Vec<u64> = v
        .iter()
        .flat_map(|&x| [x.wrapping_sub(1), x.wrapping_add(1)])
        .collect();
    v.extend(near);
    let mut rng = Rng(seed);
    v.extend(f64_random(&mut rng, random));
    for _ in 0..random / 8 {
        let r = (rng.next() % 100_000) as f64 * 0.001;
        let bits = (r * r).to_bits();
        v.extend([bits, bits + 1, bits.saturating_sub(1)]);
    }
    for i in 0..200u64 {
        let half = 0.5f64 * (i as f64 - 100.0);
        v.push(half.to_bits());
        v.push((half + 0.25).to_bits());
    }
    v
}

#[test]
fn f64_add_sub_match_native() {
    let (a, b) = f64_pairs(0x0f0f_1e1e, 2500);
    check("__spmdc_rt_fadd_f64", &[F64, F64], F64, "x + y", &a, &b);
    check("__spmdc_rt_fsub_f64", &[F64, F64], F64, "x - y", &a, &b);
}

#[test]
fn f64_mul_matches_native() {
    let (a, b) = f64_pairs(0x2d2d_3c3c, 3000);
    check("__spmdc_rt_fmul_f64", &[F64, F64], F64, "x * y", &a, &b);
}

#[test]
fn f64_div_matches_native() {
    let (a, b) = f64_pairs(0x4b4b_5a5a, 2500);
    check("__spmdc_rt_fdiv_f64", &[F64, F64], F64, "x / y", &a, &b);
}

#[test]
fn f64_sqrt_matches_native() {
    let a = f64_singles(0x6969_7878, 2500);
    let b = vec![0; a.len()];
    check("__spmdc_rt_sqrt_f64", &[F64], F64, "sqrt(x)", &a, &b);
}

/// Pairs for fmod. Its loop runs once per unit of exponent difference (up to ~2100 for
/// f64), so most pairs have exponents within 64 of each other and only a few are far
/// apart, to keep the test fast.
fn f64_frem_pairs(seed: u64) -> (Vec<u64>, Vec<u64>) {
    let exp = |x: u64| ((x >> 52) & 0x7ff) as i64;
    let mut rng = Rng(seed);
    let (ea, eb) = edge_pairs(&f64_edges(), 1 << 63, &mut rng);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (&x, &y) in ea.iter().zip(&eb) {
        if (exp(x) - exp(y)).abs() <= 64
            || exp(x) == 0x7ff
            || exp(y) == 0x7ff
            || x == 0x7fef_ffff_ffff_ffff
        {
            a.push(x);
            b.push(y);
        }
    }
    for i in 0..1000 {
        let x = f64_random(&mut rng, 1)[0];
        let d = if i % 100 == 0 {
            rng.next() % 2100
        } else {
            rng.next() % 60
        };
        let e = (exp(x) as u64).saturating_sub(d);
        a.push(x);
        b.push((rng.next() & 0x800f_ffff_ffff_ffff) | e << 52);
    }
    (a, b)
}

#[test]
fn f64_frem_matches_native() {
    let (a, b) = f64_frem_pairs(0x8787_9696);
    check(
        "__spmdc_rt_frem_f64",
        &[F64, F64],
        F64,
        "fmod(x, y)",
        &a,
        &b,
    );
}

#[test]
fn f64_compare_min_max_match_native() {
    let (a, b) = f64_pairs(0xa5a5_b4b4, 500);
    for (cc, native) in [
        ("eq", "x == y"),
        ("une", "x != y"),
        ("lt", "x < y"),
        ("le", "x <= y"),
        ("gt", "x > y"),
        ("ge", "x >= y"),
        ("uno", "x != x || y != y"),
    ] {
        check(
            &format!("__spmdc_rt_fcmp_{cc}_f64"),
            &[F64, F64],
            BOOL,
            native,
            &a,
            &b,
        );
    }
    check("__spmdc_rt_fmin_f64", &[F64, F64], F64, "min(x, y)", &a, &b);
    check("__spmdc_rt_fmax_f64", &[F64, F64], F64, "max(x, y)", &a, &b);
}

#[test]
fn f64_rounding_matches_native() {
    let a = f64_singles(0xc3c3_d2d2, 800);
    let b = vec![0; a.len()];
    for (routine, native) in [
        ("__spmdc_rt_trunc_f64", "trunc(x)"),
        ("__spmdc_rt_floor_f64", "floor(x)"),
        ("__spmdc_rt_ceil_f64", "ceil(x)"),
        ("__spmdc_rt_nearest_f64", "round(x)"),
    ] {
        check(routine, &[F64], F64, native, &a, &b);
    }
}

#[test]
fn f32_f64_conversions_match_native() {
    let a = f64_singles(0xe1e1_f0f0, 1500);
    let b = vec![0; a.len()];
    check(
        "__spmdc_rt_fdemote_f64_f32",
        &[F64],
        F32,
        "(float)x",
        &a,
        &b,
    );
    let a = f32_singles(0x1f1f_2e2e, 1500);
    let b = vec![0; a.len()];
    check(
        "__spmdc_rt_fpromote_f32_f64",
        &[F32],
        F64,
        "(double)x",
        &a,
        &b,
    );
}

#[test]
fn f64_to_int_matches_native() {
    let mut a = f64_singles(0x3d3d_4c4c, 600);
    for e in [7u64, 8, 15, 16, 31, 32, 52, 53, 63, 64] {
        let p = (e + 1023) << 52;
        for d in 0..3 {
            for x in [p + d, p - 1 - d, p | 1 << 51] {
                a.push(x);
                a.push(x | 1 << 63);
            }
        }
    }
    check_float_to_int(F64, Scalar::F64, "f64", &a);
}

#[test]
fn int_to_f64_matches_native() {
    let a = int_inputs(0x7a7a_8b8b, 1500);
    let b = vec![0; a.len()];
    check(
        "__spmdc_rt_fcvt_from_sint_i32_f64",
        &[I32],
        F64,
        "(double)x",
        &a,
        &b,
    );
    check(
        "__spmdc_rt_fcvt_from_uint_i32_f64",
        &[I32],
        F64,
        "(double)(uint32)x",
        &a,
        &b,
    );
    check(
        "__spmdc_rt_fcvt_from_sint_i64_f64",
        &[I64],
        F64,
        "(double)x",
        &a,
        &b,
    );
    check(
        "__spmdc_rt_fcvt_from_uint_i64_f64",
        &[I64],
        F64,
        "(double)(uint64)x",
        &a,
        &b,
    );
}

/// The front end's result for `src` at 16 lanes and 4-byte pointers (Nyuzi's).
fn front_nyuzi(src: &str) -> spmdc::driver::FrontResult {
    use spmdc::driver::{self, FrontOptions, Stage};
    let opts = FrontOptions {
        target: spmdc::front::sema::Target {
            program_count: LANES,
            pointer_size: 4,
        },
        ..FrontOptions::default()
    };
    let front = driver::run_front("t.spmd", None, src.to_string(), &opts, Stage::Check);
    assert!(!front.diags.has_errors(), "{}", render_all(&front));
    front
}

/// Compiles `src` for Nyuzi's lanes and pointers; the module as lowered and the module
/// legalized for Nyuzi.
fn compile_both(src: &str) -> (spmdc::ir::Module, spmdc::ir::Module) {
    use spmdc::driver::{self, LegalTarget};
    let front = front_nyuzi(src);
    let plain = driver::lower_front_with(&front, true).unwrap_or_else(|e| panic!("{e:?}"));
    let legal = driver::lower_for_target(&front, true, LegalTarget::Nyuzi)
        .unwrap_or_else(|e| panic!("{e:?}"));
    (plain, legal)
}

/// Runs `k(bufs..., n)` at 16 lanes; the buffers afterwards.
fn run_module(module: &spmdc::ir::Module, bufs: &[Vec<u8>], n: usize) -> Vec<Vec<u8>> {
    run_k(module, bufs, n as u64, LANES, 500_000_000).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// Compiles `src` as lowered and legalized for Nyuzi: the legalized module must leave
/// nothing illegal, and `k(bufs..., n)` must leave the same bytes in the last buffer
/// (the kernel's output) in both.
fn check_legalized_kernel(src: &str, bufs: &[Vec<u8>], n: usize) {
    let (plain, legal) = compile_both(src);
    let left = spmdc::passes::legalize::remaining_illegal(&legal);
    assert!(left.is_empty(), "left illegal: {left:?}");
    let out = bufs.len() - 1;
    let want = run_module(&plain, bufs, n);
    let got = run_module(&legal, bufs, n);
    assert_eq!(got[out], want[out], "legalized results differ");
}

/// Every f32 operation Nyuzi lacks, varying and uniform, in one kernel: legalized, it
/// must leave nothing illegal and give the unlegalized module's bits.
#[test]
fn legalized_f32_kernel_matches_unlegalized() {
    let src = r#"
export void k(uniform float a[], uniform float b[], uniform uint32 out[], uniform int n) {
    foreach (i = 0 ... n) {
        float x = a[i], y = b[i];
        uniform float ux = a[0], uy = b[1];
        int base = 24 * i;
        out[base + 0] = intbits(x / y);
        out[base + 1] = intbits(sqrt(x));
        out[base + 2] = intbits(fmod(x, y));
        out[base + 3] = intbits(min(x, y));
        out[base + 4] = intbits(max(x, y));
        out[base + 5] = intbits(floor(x));
        out[base + 6] = intbits(ceil(x));
        out[base + 7] = intbits(trunc(x));
        out[base + 8] = intbits(round(x));
        out[base + 9] = (uint32)(int8)x;
        out[base + 10] = (uint32)(uint16)x;
        out[base + 11] = (uint32)(int)x;
        out[base + 12] = (uint32)x;
        out[base + 13] = (uint32)(int64)(x * 1e10);
        out[base + 14] = (uint32)((uint64)(x * 1e10) >> 20);
        out[base + 15] = intbits((float)(uint32)(int)(y * 1e9));
        out[base + 16] = intbits((float)((int64)(y * 1e9) * 1000));
        out[base + 17] = intbits((float)(uint64)((int64)(x * 1e9) * 999));
        out[base + 18] = intbits((float)(uint8)(int)y);
        out[base + 19] = intbits(ux / uy + sqrt(ux) + fmod(ux, uy));
        out[base + 20] = intbits(min(ux, uy) + floor(ux) + round(uy));
        out[base + 21] = (uint32)(int64)ux + (uint32)uy;
        out[base + 22] = intbits(rcp(x) + rsqrt(y));
        out[base + 23] = intbits((float)(uint32)i);
    }
}
"#;
    let mut rng = Rng(0xabcd_ef01);
    let n = 64;
    let mut floats = |scale: f32| -> Vec<u8> {
        (0..n)
            .flat_map(|i| {
                let x = if i < 8 {
                    [
                        0.0f32,
                        -0.0,
                        1.5,
                        -2.5,
                        f32::INFINITY,
                        f32::NAN,
                        1e-40,
                        -7.0,
                    ][i]
                } else {
                    let r = rng.next();
                    (r >> 40) as f32 / (1u64 << 20) as f32 * scale - scale * 4.0
                };
                x.to_le_bytes()
            })
            .collect()
    };
    let bufs = vec![floats(100.0), floats(3.0), vec![0u8; n * 24 * 4]];
    check_legalized_kernel(src, &bufs, n);
}

/// The float routines use only operations Nyuzi has natively (they are legalized no
/// further): checked on the routines as lowered and optimized, before legalization. A
/// 64-bit shift by a constant counts as native (legalization only makes its count a
/// plain `iconst`).
#[test]
fn float_routines_are_native() {
    use spmdc::ir::{BinaryOp, InstData};
    use spmdc::passes::legalize::{const_int, is_illegal, LegalTarget};
    let module = runtime_unlegalized();
    let const_shift = |func: &spmdc::ir::Function, data: &InstData| {
        matches!(data, InstData::Binary { op: BinaryOp::Ishl | BinaryOp::Sshr | BinaryOp::Ushr, args }
            if const_int(func, args[1]).is_some())
    };
    let mut bad = Vec::new();
    let mut seen = 0;
    for (_, func) in module.functions.iter() {
        let ours = func.name.starts_with("__spmdc_rtf_")
            || RUNTIME_FLOAT_SOURCE.contains(&format!(" {}(", func.name));
        if !ours {
            continue;
        }
        seen += 1;
        for &b in &func.layout {
            for &inst in &func.blocks[b].insts {
                let data = &func.insts[inst];
                if is_illegal(LegalTarget::Nyuzi, func, data) && !const_shift(func, data) {
                    bad.push(format!("@{}: {data:?}", func.name));
                }
            }
        }
    }
    assert!(seen > 20, "only {seen} float routines lowered");
    assert!(bad.is_empty(), "non-native operations:\n{}", bad.join("\n"));
}

/// The runtime routines lowered and optimized for Nyuzi's lanes and pointers, not
/// legalized (as `driver::runtime::whole_runtime` builds them, minus its legalization).
fn runtime_unlegalized() -> spmdc::ir::Module {
    use spmdc::driver::{self, FrontOptions, Stage};
    use spmdc::front::sema;
    let target = sema::Target {
        program_count: LANES,
        pointer_size: 4,
    };
    let options = FrontOptions {
        target,
        whole_stdlib: true,
        ..FrontOptions::default()
    };
    let front = driver::run_front("<runtime>", None, String::new(), &options, Stage::Ast);
    let stdlib = front.stdlib_file.expect("the stdlib is loaded");
    let sema_options = sema::Options {
        target,
        check_all_stdlib: true,
        ..sema::Options::default()
    };
    let (checked, diags) = sema::check_with(
        &front.unit,
        &front.interner,
        &front.sources,
        stdlib,
        &sema_options,
    );
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    let mut module = spmdc::lower::lower_with_runtime(
        &front.unit,
        &checked,
        &front.interner,
        &front.sources,
        true,
    )
    .unwrap_or_else(|d| panic!("{d:?}"));
    spmdc::passes::optimize(&mut module).expect("optimized");
    module
}

const RUNTIME_FLOAT_SOURCE: &str = include_str!("../../stdlib/runtime_float.spmd");

/// Every f64 operation Nyuzi lacks, varying and uniform, in one kernel (and float
/// reductions, whose runtime routines use the float routines): legalized, it must leave
/// nothing illegal and give the unlegalized module's bits.
#[test]
fn legalized_f64_kernel_matches_unlegalized() {
    let src = r#"
export void k(uniform double a[], uniform double b[], uniform uint64 out[], uniform int n) {
    foreach (i = 0 ... n) {
        double x = a[i], y = b[i];
        uniform double ux = a[2], uy = b[3];
        int base = 25 * i;
        out[base + 0] = intbits(x + y);
        out[base + 1] = intbits(x - y);
        out[base + 2] = intbits(x * y);
        out[base + 3] = intbits(x / y);
        out[base + 4] = intbits(sqrt(x));
        out[base + 5] = intbits(fmod(x, y));
        out[base + 6] = intbits(min(x, y)) ^ intbits(max(x, y));
        out[base + 7] = intbits(floor(x)) ^ intbits(ceil(y));
        out[base + 8] = intbits(trunc(x)) ^ intbits(round(y));
        out[base + 9] = (x < y ? 1 : 0) | (x <= y ? 2 : 0) | (x > y ? 4 : 0) | (x >= y ? 8 : 0)
            | (x == y ? 16 : 0) | (x != y ? 32 : 0) | (isnan(x) ? 64 : 0) | (x ? 128 : 0);
        out[base + 10] = (uint64)intbits((float)x);
        out[base + 11] = intbits((double)(float)y);
        out[base + 12] = (uint64)(int8)x ^ ((uint64)(uint16)y << 16);
        out[base + 13] = (uint64)(int)x ^ ((uint64)(uint32)y << 32);
        out[base + 14] = (uint64)(int64)x;
        out[base + 15] = (uint64)y;
        out[base + 16] = intbits((double)(int)(y * 1e3));
        out[base + 17] = intbits((double)(uint32)(int)(y * 1e3));
        out[base + 18] = intbits((double)((int64)(x * 1e6) * 12345));
        out[base + 19] = intbits((double)(uint64)((int64)(x * 1e6) * 12345));
        out[base + 20] = intbits(ux / uy + sqrt(ux) * fmod(ux, uy) - floor(uy));
        out[base + 21] = intbits((double)(float)ux) ^ (uint64)(int64)uy ^ (ux < uy ? 1 : 0);
        out[base + 22] = intbits(min(ux, uy)) ^ intbits(round(ux));
        out[base + 23] = intbits((double)(int8)i);
        out[base + 24] = intbits(reduce_add(x)) ^ intbits(reduce_min(y)) ^ intbits(reduce_max(x))
            ^ (uint64)intbits(reduce_add((float)y));
    }
}
"#;
    let mut rng = Rng(0x1357_9bdf);
    let n = 64;
    let mut doubles = |scale: f64| -> Vec<u8> {
        (0..n)
            .flat_map(|i| {
                let x = if i < 8 {
                    [
                        0.0f64,
                        -0.0,
                        1.5,
                        -2.5,
                        f64::INFINITY,
                        f64::NAN,
                        1e-310,
                        -7.0,
                    ][i]
                } else {
                    let r = rng.next();
                    (r >> 11) as f64 / (1u64 << 53) as f64 * scale - scale * 0.5
                };
                x.to_le_bytes()
            })
            .collect()
    };
    let bufs = vec![doubles(1000.0), doubles(10.0), vec![0u8; n * 25 * 8]];
    check_legalized_kernel(src, &bufs, n);
}

/// The conformance programs that compute with float and double: legalized for Nyuzi,
/// each one's test entry and `result` must give the unlegalized module's bits
/// (ISPC-style harness of `tests/ispc/README.md`: `RET` of 64 floats, `aFOO[i] = i + 1`,
/// `b = 5`).
#[test]
fn float_conformance_programs_legalized_match() {
    let programs = [
        "arith_double_basic",
        "arith_float_basic",
        "arith_float_special",
        "cmp_double",
        "cmp_int_float",
        "conv_bool",
        "conv_double_float",
        "conv_float_to_int",
        "conv_int_to_float",
        "conv_narrowing_casts",
        "stdlib_floor_ceil_round_trunc",
        "stdlib_fmod",
        "stdlib_min_max_clamp",
        "stdlib_reduce_min_max",
        "stdlib_rsqrt_rcp",
        "stdlib_sqrt",
    ];
    let mut failures = Vec::new();
    for name in programs {
        let path = repo_root().join(format!("tests/conformance/{name}.spmd"));
        let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (plain, legal) = compile_both(&src);
        let left: Vec<String> = spmdc::passes::legalize::remaining_illegal(&legal);
        if !left.is_empty() {
            failures.push(format!("{name}: left illegal {left:?}"));
            continue;
        }
        let entry = ispc::test_entry(&plain).unwrap_or_else(|| panic!("{name}: no test entry"));
        for func in [entry, "result"] {
            let want = run_ispc_entry(&plain, func);
            let got = run_ispc_entry(&legal, func);
            if got != want {
                failures.push(format!(
                    "{name}: @{func} gives {got:?}, unlegalized {want:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs an ISPC-style entry on a zeroed 64-float `RET`; `RET`'s bits, or the error.
fn run_ispc_entry(module: &spmdc::ir::Module, name: &str) -> Result<Vec<u32>, String> {
    let run = ispc::run_entry(module, name, LANES, 50_000_000)?;
    Ok(ispc::words(&run.ret))
}

/// Conversions from narrow integers and bools to f32 and f64 (the f32 ones become a
/// native `i32` conversion after an extension), legalized vs unlegalized.
#[test]
fn legalized_narrow_int_conversions_match() {
    let src = r#"
export void k(uniform int a[], uniform uint64 out[], uniform int n) {
    foreach (i = 0 ... n) {
        int v = a[i];
        uint8 u8 = (uint8)v;
        int8 s8 = (int8)v;
        uint16 u16 = (uint16)v;
        int16 s16 = (int16)v;
        bool b = v < 0;
        uniform int w = a[3];
        out[8 * i + 0] = intbits((float)u8) | ((uint64)intbits((float)s8) << 32);
        out[8 * i + 1] = intbits((float)u16) | ((uint64)intbits((float)s16) << 32);
        out[8 * i + 2] = intbits((float)b) | ((uint64)intbits((float)(uint32)v) << 32);
        out[8 * i + 3] = intbits((double)u8) ^ intbits((double)s8);
        out[8 * i + 4] = intbits((double)u16) ^ intbits((double)s16);
        out[8 * i + 5] = intbits((double)b) ^ intbits((double)(uint32)v);
        out[8 * i + 6] = intbits((float)(uniform uint8)w) | ((uint64)intbits((float)(uniform int16)w) << 32);
        out[8 * i + 7] = intbits((double)(uniform uint16)w) ^ intbits((double)(uniform int8)w);
    }
}
"#;
    let n = 64;
    let ints: Vec<u8> = int_inputs(0x4242, n)[..n]
        .iter()
        .flat_map(|&x| (x as u32).to_le_bytes())
        .collect();
    let bufs = vec![ints, vec![0u8; n * 8 * 8]];
    check_legalized_kernel(src, &bufs, n);
}
