//! Differential tests of legalization on the reference interpreter: a kernel applying
//! one operation to many inputs runs once as lowered and once legalized for Nyuzi
//! (the operation replaced by a runtime routine), at 16 lanes; the outputs must be
//! bit-identical, and both runs must trap where one does.

use crate::driver::{self, FrontOptions, LegalTarget, Stage};
use crate::front::sema;
use crate::interp::{self, Launch, Limits, Memory};
use crate::ir::Module;

const LANES: u32 = 16;

fn compile(src: &str) -> (Module, Module) {
    let opts = FrontOptions {
        target: sema::Target {
            program_count: LANES,
            pointer_size: 4,
        },
        ..FrontOptions::default()
    };
    let front = driver::run_front("t.spmd", None, src.to_string(), &opts, Stage::Check);
    let errs: Vec<String> = front.diags.iter().map(|d| d.message.clone()).collect();
    assert!(!front.diags.has_errors(), "{src}\n{errs:?}");
    let plain = driver::lower_front_with(&front, true).unwrap_or_else(|e| panic!("{e:?}"));
    let legal = driver::lower_for_target(&front, true, LegalTarget::Nyuzi)
        .unwrap_or_else(|e| panic!("{e:?}"));
    (plain, legal)
}

/// Runs entry `k` with one buffer argument per element of `bufs` (then `n`); the
/// buffers afterwards, or the error.
fn run(module: &Module, bufs: &[Vec<u8>], n: u32) -> Result<Vec<Vec<u8>>, String> {
    let func = module.function_by_name("k").ok_or("no entry k")?;
    let mut mem = Memory::new();
    let addrs: Vec<u64> = bufs
        .iter()
        .enumerate()
        .map(|(i, b)| mem.add_buffer(b.clone(), &format!("b{i}")))
        .collect();
    let mut args = addrs.clone();
    args.push(u64::from(n));
    let limits = Limits {
        max_steps: 50_000_000,
        ..Limits::default()
    };
    interp::run(
        module,
        func,
        &Launch::single_gang(LANES, args),
        &mut mem,
        limits,
    )
    .map_err(|e| e.to_string())?;
    Ok(addrs
        .iter()
        .map(|&a| mem.buffer(a).map(<[u8]>::to_vec).unwrap_or_default())
        .collect())
}

/// Runs both modules; they must agree (both trapping counts as agreeing).
fn differential(src: &str, bufs: &[Vec<u8>], n: u32) -> Result<Vec<Vec<u8>>, String> {
    let (plain, legal) = compile(src);
    assert!(
        !super::remaining_illegal(&plain).is_empty(),
        "the kernel has nothing to legalize\n{src}"
    );
    let remaining = super::remaining_illegal(&legal);
    assert!(
        remaining.iter().all(|r| allowed_remaining(r)),
        "left illegal: {remaining:?}\n{src}"
    );
    let want = run(&plain, bufs, n);
    let got = run(&legal, bufs, n);
    match (&want, &got) {
        (Ok(w), Ok(g)) => assert!(w == g, "legalized results differ\n{src}"),
        (Err(_), Err(_)) => {}
        _ => panic!("one run trapped: plain {want:?}, legal {got:?}\n{src}"),
    }
    want
}

/// Operations RT-F's float runtime owns, allowed to remain until it is complete.
fn allowed_remaining(line: &str) -> bool {
    let float_ops = [
        "fdiv", "frem", "fmin", "fmax", "sqrt", "floor", "ceil", "trunc", "nearest", "fcvt",
        "fpromote", "fdemote", "fcmp", "fadd", "fsub", "fmul", "to_bool",
    ];
    let op = line.split(": ").nth(1).unwrap_or("");
    float_ops.iter().any(|f| op.starts_with(f))
}

/// A deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Edge values of a `bits`-wide integer, then random ones (low bits significant).
fn values(bits: u32, random: usize, seed: u64) -> Vec<u64> {
    let mask = if bits == 64 { !0 } else { (1u64 << bits) - 1 };
    let min = 1u64 << (bits - 1);
    let mut v = vec![0, 1, mask, min, min - 1, min + 1, 2, mask - 1, 3, 7, 10];
    v.extend((0..bits).step_by(bits as usize / 8 + 2).map(|k| 1u64 << k));
    let mut rng = Rng(seed);
    for i in 0..random {
        let x = rng.next();
        // Mix in small magnitudes, where quotients are interesting.
        v.push(if i % 3 == 0 { x >> (x % 64) } else { x });
    }
    v.into_iter().map(|x| x & mask).collect()
}

fn bytes_of(vals: &[u64], size: usize) -> Vec<u8> {
    vals.iter()
        .flat_map(|x| x.to_le_bytes()[..size].to_vec())
        .collect()
}

/// Source types by width and signedness.
fn ty_name(bits: u32, signed: bool) -> String {
    format!("{}int{bits}", if signed { "" } else { "u" })
}

/// Kernel `out[i] = a[i] OP b[i]`, uniform (a scalar loop) or varying (`foreach`).
fn binary_kernel(t: &str, expr: &str, varying: bool) -> String {
    if varying {
        format!(
            "export void k(uniform {t} a[], uniform {t} b[], uniform {t} out[], uniform int n) {{
    foreach (i = 0 ... n) {{ {t} x = a[i]; {t} y = b[i]; out[i] = {expr}; }}
}}"
        )
    } else {
        format!(
            "export void k(uniform {t} a[], uniform {t} b[], uniform {t} out[], uniform int n) {{
    for (uniform int i = 0; i < n; i++) {{
        uniform {t} x = a[i]; uniform {t} y = b[i]; out[i] = {expr};
    }}
}}"
        )
    }
}

/// Every pair of `xs` × `ys` (divisors filtered by `keep`) through `expr`.
fn check_binary(bits: u32, signed: bool, expr: &str, keep: impl Fn(u64) -> bool, random: usize) {
    let xs = values(bits, random, 0x9e37_79b9_7f4a_7c15 ^ u64::from(bits));
    let ys: Vec<u64> = values(bits, random / 2, 0x1234_5678 ^ u64::from(bits))
        .into_iter()
        .filter(|&y| keep(y))
        .collect();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &x in &xs {
        for &y in &ys {
            a.push(x);
            b.push(y);
        }
    }
    let size = (bits / 8) as usize;
    let n = a.len();
    let t = ty_name(bits, signed);
    for varying in [false, true] {
        let src = binary_kernel(&t, expr, varying);
        let bufs = [bytes_of(&a, size), bytes_of(&b, size), vec![0; n * size]];
        let out = differential(&src, &bufs, n as u32).unwrap_or_else(|e| panic!("{e}\n{src}"));
        assert!(out[2].iter().any(|&x| x != 0), "kernel computed nothing");
    }
}

#[test]
fn division_and_remainder_32() {
    for signed in [true, false] {
        check_binary(32, signed, "x / y", |y| y != 0, 24);
        check_binary(32, signed, "x % y", |y| y != 0, 24);
    }
}

#[test]
fn division_by_zero_traps_in_both() {
    for signed in [true, false] {
        for varying in [false, true] {
            let t = ty_name(32, signed);
            let src = binary_kernel(&t, "x / y", varying);
            let bufs = [bytes_of(&[5, 6], 4), bytes_of(&[1, 0], 4), vec![0; 8]];
            assert!(differential(&src, &bufs, 2).is_err());
        }
    }
}

#[test]
fn division_and_remainder_narrow_and_64() {
    for bits in [8, 16, 64] {
        for signed in [true, false] {
            check_binary(bits, signed, "x / y", |y| y != 0, 6);
            check_binary(bits, signed, "x % y", |y| y != 0, 6);
        }
    }
}

#[test]
fn multiply_min_max_64() {
    for signed in [true, false] {
        check_binary(64, signed, "x * y", |_| true, 12);
        check_binary(64, signed, "min(x, y)", |_| true, 8);
        check_binary(64, signed, "max(x, y)", |_| true, 8);
    }
}

#[test]
fn shifts_64_by_variable_and_constant_counts() {
    for signed in [true, false] {
        check_binary(64, signed, "x << y", |_| true, 12);
        check_binary(64, signed, "x >> y", |_| true, 12);
        check_binary(64, signed, "x >> (int32)y", |_| true, 6);
        check_binary(64, signed, "(x << 5) + (x >> 33) + y", |_| true, 4);
    }
}

/// Kernel `out[i] = EXPR(a[i])` with `out` of type `ot`.
fn check_unary(bits: u32, signed: bool, ot: &str, out_size: usize, expr: &str) {
    let xs = values(bits, 40, 0xabcdef ^ u64::from(bits));
    let t = ty_name(bits, signed);
    let n = xs.len();
    for varying in [false, true] {
        let (u, body) = if varying {
            ("", "foreach (i = 0 ... n)")
        } else {
            ("uniform ", "for (uniform int i = 0; i < n; i++)")
        };
        let src = format!(
            "export void k(uniform {t} a[], uniform {ot} out[], uniform int n) {{
    {body} {{ {u}{t} x = a[i]; out[i] = {expr}; }}
}}"
        );
        let bufs = [bytes_of(&xs, (bits / 8) as usize), vec![0; n * out_size]];
        let out = differential(&src, &bufs, n as u32).unwrap_or_else(|e| panic!("{e}\n{src}"));
        assert!(out[1].iter().any(|&x| x != 0), "kernel computed nothing");
    }
}

#[test]
fn bit_counts() {
    check_unary(32, true, "int32", 4, "popcnt(x)");
    check_unary(64, true, "int32", 4, "popcnt(x)");
    check_unary(64, true, "int64", 8, "count_leading_zeros(x)");
    check_unary(64, false, "uint64", 8, "count_trailing_zeros(x)");
}
