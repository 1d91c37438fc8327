//! The transcendental functions of the standard library (written in the language in
//! `stdlib/stdlib.spmd`, section 11), run on the reference interpreter over thousands of
//! inputs and compared with Rust's own functions: the largest error in ulps must stay
//! within the bound documented in `lang-spec/stdlib.md`. Special values (NaN, infinities,
//! signed zeros, overflow, underflow, out-of-domain arguments) are checked exactly, the
//! uniform forms must give the varying forms' bits, and ldexp/frexp are exact.
//!
//! The float references are Rust's `f64` functions rounded to `f32` (correctly rounded
//! in practice), the double references Rust's `f64` functions.

mod common;

use common::XorShiftRng as Rng;
use common::*;

const LANES: u32 = 16;

/// A scalar element type of the kernels.
trait Elem: Copy + PartialEq + std::fmt::Debug {
    const NAME: &'static str;
    const SIZE: usize;
    fn from_f64(x: f64) -> Self;
    fn to_bytes(self) -> Vec<u8>;
    fn from_bytes(b: &[u8]) -> Self;
    /// A position on a line where neighbouring floats are 1 apart.
    fn ordinal(self) -> i64;
    fn is_nan(self) -> bool;
    fn bits(self) -> u64;
}

impl Elem for f32 {
    const NAME: &'static str = "float";
    const SIZE: usize = 4;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_bytes(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn from_bytes(b: &[u8]) -> Self {
        f32::from_le_bytes(b.try_into().unwrap())
    }
    fn ordinal(self) -> i64 {
        let b = self.to_bits() as i64;
        if b & 0x8000_0000 != 0 {
            -(b & 0x7fff_ffff)
        } else {
            b
        }
    }
    fn is_nan(self) -> bool {
        self.is_nan()
    }
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl Elem for f64 {
    const NAME: &'static str = "double";
    const SIZE: usize = 8;
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_bytes(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn from_bytes(b: &[u8]) -> Self {
        f64::from_le_bytes(b.try_into().unwrap())
    }
    fn ordinal(self) -> i64 {
        let b = self.to_bits() as i64;
        if b < 0 {
            -(b & i64::MAX)
        } else {
            b
        }
    }
    fn is_nan(self) -> bool {
        self.is_nan()
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// The distance in ulps between `got` and `want` (0 when both are NaN).
fn ulps<T: Elem>(got: T, want: T) -> u64 {
    match (got.is_nan(), want.is_nan()) {
        (true, true) => 0,
        (false, false) => (got.ordinal() - want.ordinal()).unsigned_abs(),
        _ => u64::MAX,
    }
}

/// Compiles `src` and runs its `export void k(...)` with one buffer argument per entry
/// of `buffers` and then `n`; the buffers afterwards.
fn run_raw(src: &str, buffers: Vec<Vec<u8>>, n: usize) -> Vec<Vec<u8>> {
    let result = check_source("math.spmd", src);
    assert!(!result.diags.has_errors(), "{}", render_all(&result));
    let checked = result.checked.as_ref().expect("checked");
    let module = spmdc::lower::lower(&result.unit, checked, &result.interner, &result.sources)
        .unwrap_or_else(|d| panic!("not lowered: {d:?}"));
    spmdc::ir::verify::verify_module(&module).unwrap_or_else(|e| panic!("{e:?}"));
    run_k(&module, &buffers, n as u64, LANES, 200_000_000)
        .unwrap_or_else(|e| panic!("run failed: {e}"))
}

fn to_bytes<T: Elem>(xs: &[T]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_bytes()).collect()
}

fn from_bytes<T: Elem>(b: &[u8]) -> Vec<T> {
    b.chunks(T::SIZE).map(T::from_bytes).collect()
}

fn ints(b: &[u8]) -> Vec<i32> {
    b.chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Runs `k` on buffers of `T` (the inputs, then the output) and the element count;
/// the output.
fn run_kernel<T: Elem>(src: &str, inputs: &[&[T]]) -> Vec<T> {
    let n = inputs[0].len();
    let mut bufs: Vec<Vec<u8>> = inputs.iter().map(|x| to_bytes(x)).collect();
    bufs.push(vec![0u8; n * T::SIZE]);
    from_bytes(&run_raw(src, bufs, n).pop().unwrap())
}

/// `out[i] = call` over `foreach`, where `call` names the inputs `a[i]` and `b[i]`; with
/// `uniform`, a uniform loop calls the uniform overloads instead.
fn kernel<T: Elem>(call: &str, two: bool, uniform: bool) -> String {
    let t = T::NAME;
    let b = if two {
        format!("uniform {t} b[], ")
    } else {
        String::new()
    };
    let body = if uniform {
        format!("for (uniform int i = 0; i < n; i++) {{ out[i] = {call}; }}")
    } else {
        format!("foreach (i = 0 ... n) {{ out[i] = {call}; }}")
    };
    format!("export void k(uniform {t} a[], {b}uniform {t} out[], uniform int n) {{ {body} }}\n")
}

/// Runs `name` on `a` (and `b`) and returns the largest ulp error against `reference`,
/// with the worst input; checks the uniform overload gives the same bits on a sample.
fn max_error<T: Elem>(
    name: &str,
    a: &[T],
    b: Option<&[T]>,
    reference: impl Fn(T, T) -> T,
) -> (u64, T, T) {
    let call = match b {
        Some(_) => format!("{name}(a[i], b[i])"),
        None => format!("{name}(a[i])"),
    };
    let inputs: Vec<&[T]> = match b {
        Some(b) => vec![a, b],
        None => vec![a],
    };
    let got = run_kernel::<T>(&kernel::<T>(&call, b.is_some(), false), &inputs);
    let mut worst = (0, a[0], a[0]);
    for (i, &g) in got.iter().enumerate() {
        let bi = b.map_or(a[i], |b| b[i]);
        let e = ulps(g, reference(a[i], bi));
        if e > worst.0 {
            worst = (e, a[i], bi);
        }
    }
    // The uniform forms run the varying code: the same bits.
    let k = 64.min(a.len());
    let sample: Vec<&[T]> = inputs.iter().map(|x| &x[..k]).collect();
    let uni = run_kernel::<T>(&kernel::<T>(&call, b.is_some(), true), &sample);
    for i in 0..k {
        assert_eq!(
            uni[i].bits(),
            got[i].bits(),
            "uniform {name}({:?}) differs from the varying form",
            a[i]
        );
    }
    worst
}

/// Asserts the largest error of `name` over the inputs is at most `bound` ulps.
fn check<T: Elem>(name: &str, a: &[T], b: Option<&[T]>, bound: u64, reference: impl Fn(T, T) -> T) {
    let (e, x, y) = max_error(name, a, b, reference);
    eprintln!(
        "{name}({}): max error {e} ulp over {} inputs (at {x:?}, {y:?})",
        T::NAME,
        a.len()
    );
    assert!(
        e <= bound,
        "{name}({}): {e} ulp at ({x:?}, {y:?}), bound {bound}",
        T::NAME
    );
}

/// `n` values uniform in [lo, hi).
fn uniform<T: Elem>(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<T> {
    let mut r = Rng(seed);
    (0..n).map(|_| T::from_f64(r.uniform(lo, hi))).collect()
}

/// `n` values with a uniformly random exponent (log-uniform magnitude) in
/// [2^lo, 2^hi), negative too when `signed`.
fn log_uniform<T: Elem>(seed: u64, n: usize, lo: f64, hi: f64, signed: bool) -> Vec<T> {
    let mut r = Rng(seed);
    (0..n)
        .map(|_| {
            let v = r.uniform(lo, hi).exp2();
            T::from_f64(if signed && r.next() & 1 == 1 { -v } else { v })
        })
        .collect()
}

const N: usize = 4000;

/// How the inputs of a one-argument function are drawn.
#[derive(Clone, Copy)]
enum Dist {
    /// Uniform in [lo, hi).
    Lin(f64, f64),
    /// Magnitude 2^e with e uniform in [lo, hi); both signs with `true`.
    Log(f64, f64, bool),
}

/// One-argument functions: the name, the reference, the float and double input sets
/// and the bound in ulps (the same for both widths).
type Unary = (
    &'static str,
    fn(f64) -> f64,
    &'static [Dist],
    &'static [Dist],
    u64,
);

fn inputs<T: Elem>(seed: u64, d: Dist) -> Vec<T> {
    match d {
        Dist::Lin(lo, hi) => uniform(seed, N, lo, hi),
        Dist::Log(lo, hi, signed) => log_uniform(seed, N, lo, hi, signed),
    }
}

fn check_unary(cases: &[Unary]) {
    for (i, &(name, f, d32, d64, bound)) in cases.iter().enumerate() {
        for (j, &d) in d32.iter().enumerate() {
            let x = inputs::<f32>((i * 10 + j) as u64 + 1, d);
            check(name, &x, None, bound, move |x, _| f(f64::from(x)) as f32);
        }
        for (j, &d) in d64.iter().enumerate() {
            let x = inputs::<f64>((i * 10 + j) as u64 + 101, d);
            check(name, &x, None, bound, move |x, _| f(x));
        }
    }
}

/// Every binade, subnormals included, positive only or both signs.
const ALL_POS_F: &[Dist] = &[Dist::Log(-149.0, 128.0, false), Dist::Lin(0.5, 2.0)];
const ALL_POS_D: &[Dist] = &[Dist::Log(-1074.0, 1024.0, false), Dist::Lin(0.5, 2.0)];
const ALL_F: &[Dist] = &[Dist::Log(-149.0, 128.0, true)];
const ALL_D: &[Dist] = &[Dist::Log(-1074.0, 1024.0, true)];
/// Trigonometric arguments: small, large (up to the reduction's exact range), tiny.
const TRIG_F: &[Dist] = &[
    Dist::Lin(-10.0, 10.0),
    Dist::Lin(-10000.0, 10000.0),
    Dist::Log(-149.0, -1.0, true),
];
const TRIG_D: &[Dist] = &[
    Dist::Lin(-10.0, 10.0),
    Dist::Lin(-1.0e6, 1.0e6),
    Dist::Log(-1074.0, -1.0, true),
];
const UNIT: &[Dist] = &[Dist::Lin(-1.0, 1.0)];

#[test]
fn exp_log_cbrt() {
    check_unary(&[
        (
            "exp",
            f64::exp,
            &[Dist::Lin(-103.0, 88.7), Dist::Lin(-1.0, 1.0)],
            &[Dist::Lin(-745.0, 709.7), Dist::Lin(-1.0, 1.0)],
            1,
        ),
        ("log", f64::ln, ALL_POS_F, ALL_POS_D, 1),
        ("cbrt", f64::cbrt, ALL_F, ALL_D, 1),
    ]);
}

/// Tiny arguments of both signs, subnormals included.
const TINY_F: Dist = Dist::Log(-149.0, -1.0, true);
const TINY_D: Dist = Dist::Log(-1074.0, -1.0, true);
/// sinh and cosh: up to overflow and a little beyond, near 0, tiny.
const HYP_F: &[Dist] = &[Dist::Lin(-89.5, 89.5), Dist::Lin(-2.0, 2.0), TINY_F];
const HYP_D: &[Dist] = &[Dist::Lin(-710.5, 710.5), Dist::Lin(-2.0, 2.0), TINY_D];

#[test]
fn expm1_log1p() {
    check_unary(&[
        (
            "expm1",
            f64::exp_m1,
            &[Dist::Lin(-18.0, 88.7), Dist::Lin(-1.0, 1.0), TINY_F],
            &[Dist::Lin(-40.0, 709.7), Dist::Lin(-1.0, 1.0), TINY_D],
            2,
        ),
        (
            "log1p",
            f64::ln_1p,
            &[
                Dist::Lin(-0.999, 1.0),
                Dist::Log(-149.0, 128.0, false),
                TINY_F,
            ],
            &[
                Dist::Lin(-0.999999, 1.0),
                Dist::Log(-1074.0, 1024.0, false),
                TINY_D,
            ],
            1,
        ),
    ]);
}

#[test]
fn hyperbolic() {
    check_unary(&[
        ("sinh", f64::sinh, HYP_F, HYP_D, 2),
        ("cosh", f64::cosh, HYP_F, HYP_D, 2),
        (
            "tanh",
            f64::tanh,
            &[Dist::Lin(-10.0, 10.0), Dist::Lin(-1.0, 1.0), TINY_F],
            &[Dist::Lin(-25.0, 25.0), Dist::Lin(-1.0, 1.0), TINY_D],
            2,
        ),
    ]);
}

/// erf and erfc against `data/erf_reference.txt`: correctly rounded values computed
/// offline with mpmath by `stdlib/math_reference.py` (Rust has no stable erf).
#[test]
fn erf_erfc() {
    let table = include_str!("data/erf_reference.txt");
    let field = |w: &str| u64::from_str_radix(w, 16).unwrap();
    let (mut d, mut f) = (Vec::new(), Vec::new());
    for line in table.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        let (x, erf, erfc) = (field(w[1]), field(w[2]), field(w[3]));
        match w[0] {
            "d" => d.push((f64::from_bits(x), f64::from_bits(erf), f64::from_bits(erfc))),
            _ => f.push((
                f32::from_bits(x as u32),
                f32::from_bits(erf as u32),
                f32::from_bits(erfc as u32),
            )),
        }
    }
    check_table("erf", &d, |r| r.1, 1);
    check_table("erfc", &d, |r| r.2, 3);
    check_table("erf", &f, |r| r.1, 1);
    check_table("erfc", &f, |r| r.2, 1);
}

/// Checks `name` on the inputs of `rows` (their first member) against the reference
/// `want` picks from each row.
fn check_table<T: Elem>(name: &str, rows: &[(T, T, T)], want: fn(&(T, T, T)) -> T, bound: u64) {
    let x: Vec<T> = rows.iter().map(|r| r.0).collect();
    let reference = |v: T, _: T| want(rows.iter().find(|r| r.0.bits() == v.bits()).unwrap());
    check(name, &x, None, bound, reference);
}

#[test]
fn pow() {
    let x32 = log_uniform::<f32>(9, N, -8.0, 8.0, false);
    let y32 = uniform::<f32>(10, N, -15.0, 15.0);
    check("pow", &x32, Some(&y32), 1, |x, y| {
        f64::from(x).powf(f64::from(y)) as f32
    });
    let x64 = log_uniform::<f64>(11, N, -20.0, 20.0, false);
    let y64 = uniform::<f64>(12, N, -35.0, 35.0);
    check("pow", &x64, Some(&y64), 1, f64::powf);
    // results near overflow and underflow, and x near 1 with large y
    let x64 = uniform::<f64>(13, N, 0.5, 2.0);
    let y64 = uniform::<f64>(14, N, -1000.0, 1000.0);
    check("pow", &x64, Some(&y64), 1, f64::powf);
}

#[test]
fn trigonometric() {
    check_unary(&[
        ("sin", f64::sin, TRIG_F, TRIG_D, 1),
        ("cos", f64::cos, TRIG_F, TRIG_D, 1),
        ("tan", f64::tan, TRIG_F, TRIG_D, 2),
        ("asin", f64::asin, UNIT, UNIT, 1),
        ("acos", f64::acos, UNIT, UNIT, 1),
        ("atan", f64::atan, ALL_F, ALL_D, 1),
    ]);
}

#[test]
fn atan2() {
    let (y, x) = (
        uniform::<f32>(34, N, -10.0, 10.0),
        uniform::<f32>(35, N, -10.0, 10.0),
    );
    check("atan2", &y, Some(&x), 1, |y, x| {
        f64::from(y).atan2(f64::from(x)) as f32
    });
    let (y, x) = (
        uniform::<f64>(36, N, -10.0, 10.0),
        uniform::<f64>(37, N, -10.0, 10.0),
    );
    check("atan2", &y, Some(&x), 1, f64::atan2);
}

/// `f` on each special input must give exactly the expected value (NaN matches NaN;
/// zeros must have the right sign).
fn specials<T: Elem>(name: &str, cases: &[(T, T, T)], two: bool) {
    let a: Vec<T> = cases.iter().map(|c| c.0).collect();
    let b: Vec<T> = cases.iter().map(|c| c.1).collect();
    let call = if two {
        format!("{name}(a[i], b[i])")
    } else {
        format!("{name}(a[i])")
    };
    let inputs: Vec<&[T]> = if two { vec![&a, &b] } else { vec![&a] };
    let got = run_kernel::<T>(&kernel::<T>(&call, two, false), &inputs);
    for (c, g) in cases.iter().zip(&got) {
        let same = (g.is_nan() && c.2.is_nan()) || g.bits() == c.2.bits();
        assert!(
            same,
            "{name}({}) of ({:?}, {:?}) = {g:?}, want {:?}",
            T::NAME,
            c.0,
            c.1,
            c.2
        );
    }
}

#[test]
fn special_values() {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    // One list for both widths: (a, b, want).
    let one: &[(&str, &[(f64, f64)])] = &[
        (
            "exp",
            &[
                (0.0, 1.0),
                (-0.0, 1.0),
                (inf, inf),
                (-inf, 0.0),
                (nan, nan),
                (1000.0, inf),
                (-1000.0, 0.0),
            ],
        ),
        (
            "log",
            &[
                (1.0, 0.0),
                (0.0, -inf),
                (-0.0, -inf),
                (-1.0, nan),
                (inf, inf),
                (-inf, nan),
                (nan, nan),
            ],
        ),
        (
            "sin",
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (inf, nan),
                (-inf, nan),
                (nan, nan),
            ],
        ),
        ("cos", &[(0.0, 1.0), (-0.0, 1.0), (inf, nan), (nan, nan)]),
        ("tan", &[(0.0, 0.0), (-0.0, -0.0), (inf, nan), (nan, nan)]),
        (
            "asin",
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (2.0, nan),
                (-1.5, nan),
                (nan, nan),
            ],
        ),
        ("acos", &[(1.0, 0.0), (2.0, nan), (nan, nan)]),
        ("atan", &[(0.0, 0.0), (-0.0, -0.0), (nan, nan)]),
        (
            "expm1",
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (inf, inf),
                (-inf, -1.0),
                (nan, nan),
                (1000.0, inf),
                (-1000.0, -1.0),
            ],
        ),
        (
            "log1p",
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (-1.0, -inf),
                (-2.0, nan),
                (inf, inf),
                (-inf, nan),
                (nan, nan),
            ],
        ),
        (
            "sinh",
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (inf, inf),
                (-inf, -inf),
                (nan, nan),
                (1000.0, inf),
                (-1000.0, -inf),
            ],
        ),
        (
            "cosh",
            &[
                (0.0, 1.0),
                (-0.0, 1.0),
                (inf, inf),
                (-inf, inf),
                (nan, nan),
                (-1000.0, inf),
            ],
        ),
        (
            "tanh",
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (inf, 1.0),
                (-inf, -1.0),
                (nan, nan),
                (30.0, 1.0),
                (-30.0, -1.0),
            ],
        ),
        (
            "erf",
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (inf, 1.0),
                (-inf, -1.0),
                (nan, nan),
                (-30.0, -1.0),
            ],
        ),
        (
            "erfc",
            &[
                (0.0, 1.0),
                (-0.0, 1.0),
                (inf, 0.0),
                (-inf, 2.0),
                (nan, nan),
                (30.0, 0.0),
                (-30.0, 2.0),
            ],
        ),
        (
            "cbrt",
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (inf, inf),
                (-inf, -inf),
                (nan, nan),
                (-27.0, -3.0),
                (64.0, 4.0),
            ],
        ),
    ];
    for (name, cases) in one {
        let c64: Vec<(f64, f64, f64)> = cases.iter().map(|&(a, w)| (a, 0.0, w)).collect();
        specials::<f64>(name, &c64, false);
        let c32: Vec<(f32, f32, f32)> = cases
            .iter()
            .map(|&(a, w)| (a as f32, 0.0, w as f32))
            .collect();
        specials::<f32>(name, &c32, false);
    }
    // Limits that depend on the width: pi/2 and pi rounded.
    specials::<f32>(
        "atan",
        &[
            (f32::INFINITY, 0.0, std::f32::consts::FRAC_PI_2),
            (-f32::INFINITY, 0.0, -std::f32::consts::FRAC_PI_2),
        ],
        false,
    );
    specials::<f64>(
        "atan",
        &[
            (inf, 0.0, std::f64::consts::FRAC_PI_2),
            (-inf, 0.0, -std::f64::consts::FRAC_PI_2),
        ],
        false,
    );
    specials::<f64>("acos", &[(-1.0, 0.0, std::f64::consts::PI)], false);
    specials::<f32>("acos", &[(-1.0, 0.0, std::f32::consts::PI)], false);
    use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};
    // (function, [(x, y, f(x, y))])
    type Cases<'a> = &'a [(&'a str, &'a [(f64, f64, f64)])];
    let two: Cases = &[
        (
            "atan2",
            &[
                (0.0, 0.0, 0.0),
                (-0.0, 0.0, -0.0),
                (0.0, -0.0, PI),
                (-0.0, -0.0, -PI),
                (1.0, 0.0, FRAC_PI_2),
                (-1.0, -0.0, -FRAC_PI_2),
                (0.0, -1.0, PI),
                (inf, inf, FRAC_PI_4),
                (inf, -inf, 3.0 * FRAC_PI_4),
                (-inf, -inf, -3.0 * FRAC_PI_4),
                (1.0, -inf, PI),
                (nan, 1.0, nan),
                (1.0, nan, nan),
            ],
        ),
        (
            "pow",
            &[
                (nan, 0.0, 1.0),
                (1.0, nan, 1.0),
                (2.0, 10.0, 1024.0),
                (-2.0, 3.0, -8.0),
                (-2.0, 0.5, nan),
                (-1.0, inf, 1.0),
                (0.5, inf, 0.0),
                (2.0, -inf, 0.0),
                (0.0, -1.0, inf),
                (-0.0, -1.0, -inf),
                (-0.0, 3.0, -0.0),
                (-0.0, 0.5, 0.0),
                (-inf, 3.0, -inf),
                (-inf, 0.5, inf),
                (-inf, -3.0, -0.0),
                (inf, -2.0, 0.0),
                (10.0, 400.0, inf),
                (10.0, -400.0, 0.0),
                (nan, 1.0, nan),
                (1.5, nan, nan),
            ],
        ),
    ];
    for (name, cases) in two {
        specials::<f64>(name, cases, true);
        let c32: Vec<(f32, f32, f32)> = cases
            .iter()
            .map(|&(a, b, w)| (a as f32, b as f32, w as f32))
            .collect();
        specials::<f32>(name, &c32, true);
    }
}

#[test]
fn ldexp_and_frexp_are_exact() {
    // ldexp: x * 2^n rounded once, across the whole exponent range
    let mut r = Rng(40);
    let x: Vec<f64> = (0..N).map(|_| r.uniform(-2.0, 2.0)).collect();
    let n: Vec<i32> = (0..N).map(|_| (r.next() % 2200) as i32 - 1100).collect();
    let src = "export void k(uniform double a[], uniform int e[], uniform double out[],
                             uniform float fout[], uniform int n) {
        foreach (i = 0 ... n) { out[i] = ldexp(a[i], e[i]); fout[i] = ldexp((float)a[i], e[i] / 8); }
    }";
    let nbytes: Vec<u8> = n.iter().flat_map(|v| v.to_le_bytes()).collect();
    let bufs = run_raw(
        src,
        vec![to_bytes(&x), nbytes, vec![0; N * 8], vec![0; N * 4]],
        N,
    );
    let (got, fgot) = (from_bytes::<f64>(&bufs[2]), from_bytes::<f32>(&bufs[3]));
    for i in 0..N {
        // Reference: the first factor is exact, the second rounds once.
        let k = n[i];
        let want = if k > 1023 {
            x[i] * 2f64.powi(1023) * 2f64.powi(k - 1023)
        } else if k < -1022 {
            x[i] * 2f64.powi(k + 600) * 2f64.powi(-600)
        } else {
            x[i] * 2f64.powi(k)
        };
        assert_eq!(got[i].to_bits(), want.to_bits(), "ldexp({}, {k})", x[i]);
        let fwant = (f64::from(x[i] as f32) * 2f64.powi(k / 8)) as f32;
        assert_eq!(
            fgot[i].to_bits(),
            fwant.to_bits(),
            "ldexp({}f, {})",
            x[i] as f32,
            k / 8
        );
    }
    // frexp: mantissa in [0.5, 1) and exponent, subnormals included
    let src = "export void k(uniform double a[], uniform double m[], uniform int e[],
                             uniform float fm[], uniform int fe[], uniform int n) {
        foreach (i = 0 ... n) {
            int x; m[i] = frexp(a[i], &x); e[i] = x;
            int y; fm[i] = frexp((float)a[i], &y); fe[i] = y;
        }
    }";
    let xs: Vec<f64> = log_uniform::<f64>(41, N, -1074.0, 1024.0, true)
        .into_iter()
        .chain([0.0, -0.0, f64::INFINITY, f64::NAN, 1e-40, -3e-42])
        .collect();
    let len = xs.len();
    let zeros = |size: usize| vec![0u8; len * size];
    let bufs = run_raw(
        src,
        vec![to_bytes(&xs), zeros(8), zeros(4), zeros(4), zeros(4)],
        len,
    );
    let (m, e) = (from_bytes::<f64>(&bufs[1]), ints(&bufs[2]));
    let (fm, fe) = (from_bytes::<f32>(&bufs[3]), ints(&bufs[4]));
    for i in 0..len {
        check_frexp(xs[i], m[i], e[i]);
        check_frexp(f64::from(xs[i] as f32), f64::from(fm[i]), fe[i]);
    }
}

fn check_frexp(x: f64, m: f64, e: i32) {
    if x == 0.0 || !x.is_finite() {
        assert!(
            (m.to_bits() == x.to_bits() || (m.is_nan() && x.is_nan())) && e == 0,
            "frexp({x}) = {m}, {e}"
        );
        return;
    }
    assert!((0.5..1.0).contains(&m.abs()), "frexp({x}) = {m}, {e}");
    let back = if e > 1000 {
        m * 2f64.powi(1000) * 2f64.powi(e - 1000)
    } else if e < -1000 {
        m * 2f64.powi(e + 1000) * 2f64.powi(-1000)
    } else {
        m * 2f64.powi(e)
    };
    assert_eq!(back, x, "frexp({x}) = {m}, {e}");
}
