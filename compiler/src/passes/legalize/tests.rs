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
    compile_with(src, &crate::passes::Switches::default())
}

/// [`compile`] with `switches` for the legalized module.
fn compile_with(src: &str, switches: &crate::passes::Switches) -> (Module, Module) {
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
    let legal = driver::lower_for_target_with_switches(&front, true, LegalTarget::Nyuzi, switches)
        .unwrap_or_else(|e| panic!("{e:?}"));
    (plain, legal)
}

/// Runs entry `k` with one buffer argument per element of `bufs` (then `n`); the
/// buffers afterwards, or the error.
fn run(module: &Module, bufs: &[Vec<u8>], n: u32) -> Result<Vec<Vec<u8>>, String> {
    let limits = Limits {
        max_steps: 50_000_000,
        ..Limits::default()
    };
    let launch = |mut args: Vec<u64>| {
        args.push(u64::from(n));
        Launch::single_gang(LANES, args)
    };
    run_with(module, bufs, launch, limits)
}

/// Runs entry `k` as `launch` builds it from the addresses of `bufs`; the buffers
/// afterwards, or the error.
fn run_with(
    module: &Module,
    bufs: &[Vec<u8>],
    launch: impl FnOnce(Vec<u64>) -> Launch,
    limits: Limits,
) -> Result<Vec<Vec<u8>>, String> {
    let func = module.function_by_name("k").ok_or("no entry k")?;
    let mut mem = Memory::new();
    let addrs: Vec<u64> = bufs
        .iter()
        .enumerate()
        .map(|(i, b)| mem.add_buffer(b.clone(), &format!("b{i}")))
        .collect();
    interp::run(module, func, &launch(addrs.clone()), &mut mem, limits)
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
    assert!(remaining.is_empty(), "left illegal: {remaining:?}\n{src}");
    let want = run(&plain, bufs, n);
    let got = run(&legal, bufs, n);
    match (&want, &got) {
        (Ok(w), Ok(g)) => {
            if let Some((i, (x, y))) = w.iter().zip(g).enumerate().find(|(_, (x, y))| x != y) {
                let at = x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(0);
                panic!(
                    "legalized results differ in buffer {i} at byte {at}: {} vs {}\n{src}",
                    x[at], y[at]
                );
            }
        }
        (Err(_), Err(_)) => {}
        _ => panic!("one run trapped: plain {want:?}, legal {got:?}\n{src}"),
    }
    want
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

/// Kernel `out[i * E + e] = EXPR_e(a[i], b[i])` for the `; `-separated expressions of
/// `exprs`, uniform (a scalar loop) or varying (`foreach`).
fn binary_kernel(t: &str, exprs: &str, varying: bool) -> String {
    let list: Vec<&str> = exprs.split("; ").collect();
    let e = list.len();
    let stores: String = list
        .iter()
        .enumerate()
        .map(|(k, x)| format!(" out[i * {e} + {k}] = {x};"))
        .collect();
    if varying {
        format!(
            "export void k(uniform {t} a[], uniform {t} b[], uniform {t} out[], uniform int n) {{
    foreach (i = 0 ... n) {{ {t} x = a[i]; {t} y = b[i];{stores} }}
}}"
        )
    } else {
        format!(
            "export void k(uniform {t} a[], uniform {t} b[], uniform {t} out[], uniform int n) {{
    for (uniform int i = 0; i < n; i++) {{
        uniform {t} x = a[i]; uniform {t} y = b[i];{stores}
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
    let t = ty_name(bits, signed);
    for varying in [true, false] {
        if !varying {
            // The scalar loop runs one pair at a time: every 5th pair is plenty.
            (a, b) = (
                a.iter().step_by(5).copied().collect(),
                b.iter().step_by(5).copied().collect(),
            );
        }
        let n = a.len();
        let src = binary_kernel(&t, expr, varying);
        let e = expr.split("; ").count();
        let bufs = [
            bytes_of(&a, size),
            bytes_of(&b, size),
            vec![0; n * size * e],
        ];
        let out = differential(&src, &bufs, n as u32).unwrap_or_else(|e| panic!("{e}\n{src}"));
        assert!(out[2].iter().any(|&x| x != 0), "kernel computed nothing");
    }
}

#[test]
fn division_and_remainder_32() {
    for signed in [true, false] {
        check_binary(32, signed, "x / y; x % y", |y| y != 0, 24);
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
            check_binary(bits, signed, "x / y; x % y", |y| y != 0, 6);
        }
    }
}

#[test]
fn multiply_min_max_64() {
    for signed in [true, false] {
        check_binary(64, signed, "x * y; min(x, y); max(x, y)", |_| true, 12);
    }
}

#[test]
fn shifts_64_by_variable_and_constant_counts() {
    for signed in [true, false] {
        check_binary(
            64,
            signed,
            "x << y; x >> y; x >> (int32)y; (x << 5) + (x >> 33) + y",
            |_| true,
            12,
        );
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

// ---- IR-level differential tests: operations the language does not write directly
// (narrow popcnt, reduce_and/or, lane movement of bool, ...), in a hand-written
// kernel with the runtime routines appended.

/// `module` with the runtime routines (lowered for Nyuzi) linked in.
fn with_runtime(mut module: Module) -> Module {
    let target = sema::Target {
        program_count: LANES,
        pointer_size: 4,
    };
    let rt = driver::runtime::whole_runtime(target, true, LegalTarget::Nyuzi)
        .unwrap_or_else(|e| panic!("{e:?}"));
    super::link_runtime(&mut module, &rt);
    module
}

/// A one-gang-per-16-threads kernel `@k(a, b, c, d)` over `threads` threads: lane `i`
/// reads `x = a[i]`, `y = b[i]` (element type `t`, `size` bytes), the mask
/// `m = c[i] != 0` (i32), and the uniform `k = d[0]` (i32) and `xu = a[0]`; `body`
/// computes `v100` from them (`v12` = x, `v17` = y, `v22` = m, `v24` = k, `v25` = xu),
/// stored to `a[i]`'s slot of an 8-byte-per-lane output... into `d[1 + i]` (8 bytes
/// per lane).
fn ir_kernel(t: &str, size: u32, body: &str) -> String {
    format!(
        "module lanes 16 ptr 4

function export @k(ptr, ptr, ptr, ptr) masked {{
block0(v0: ptr, v1: ptr, v2: ptr, v3: ptr, v4: [bool]):
    v5 = special thread_idx.x
    v6 = iconst.i32 {size}
    v7 = splat v6
    v8 = imul v5, v7
    v9 = bitcast.ptr v8
    v10 = splat v0
    v11 = iadd v10, v9
    v12 = load.{t} generic v11 mask v4
    v13 = splat v1
    v14 = iadd v13, v9
    v15 = iconst.i32 0
    v16 = splat v15
    v17 = load.{t} generic v14 mask v4
    v18 = iconst.i32 4
    v19 = splat v18
    v20 = imul v5, v19
    v21 = bitcast.ptr v20
    v26 = splat v2
    v27 = iadd v26, v21
    v28 = load.i32 generic v27 mask v4
    v22 = icmp ne v28, v16
    v24 = load.i32 generic v3
    v25 = load.{t} generic v0
    v29 = iconst.i32 8
    v30 = splat v29
    v31 = imul v5, v30
    v32 = bitcast.ptr v31
    v33 = iadd v3, v29_p
{body}
    store generic v35, v100 mask v4
    return
}}
"
    )
    .replace(
        "    v33 = iadd v3, v29_p\n",
        "    v34 = bitcast.ptr v29\n    v33 = iadd v3, v34\n    v36 = splat v33\n    v35 = iadd v36, v32\n",
    )
}

/// One input set of an IR kernel: `x`, `y`, the mask lanes and `k`.
type Case = (Vec<u64>, Vec<u64>, Vec<u64>, i32);

/// Runs `body` (see [`ir_kernel`]) plain and legalized over `threads` threads on each
/// input set of `cases` (legalizing once).
fn check_ir_cases(t: &str, size: u32, body: &str, cases: &[Case], threads: u32) {
    let text = ir_kernel(t, size, body);
    let plain = crate::ir::parse_module(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    crate::ir::verify_module(&plain).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert!(
        !super::remaining_illegal(&plain).is_empty(),
        "nothing to legalize\n{body}"
    );
    let mut legal = with_runtime(plain.clone());
    super::legalize(&mut legal, LegalTarget::Nyuzi).unwrap_or_else(|e| panic!("{e}"));
    crate::ir::verify_module(&legal).unwrap_or_else(|e| panic!("{e:?}\n{body}"));
    let remaining = super::remaining_illegal(&legal);
    assert!(remaining.is_empty(), "left illegal: {remaining:?}\n{body}");
    let n = threads as usize;
    let sz = size as usize;
    for (x, y, m, k) in cases {
        let mut d = vec![0u8; 8 + 8 * n];
        d[..4].copy_from_slice(&k.to_le_bytes());
        let bufs = [
            bytes_of(&x[..n], sz),
            bytes_of(&y[..n], sz),
            bytes_of(&m[..n], 4),
            d,
        ];
        let go = |module: &Module| -> Result<Vec<u8>, String> {
            let block = |addrs| Launch::new(sim::Dim3::ONE, sim::Dim3::new(threads, 1, 1), addrs);
            let mut out = run_with(module, &bufs, block, Limits::default())?;
            Ok(out.swap_remove(3))
        };
        let want = go(&plain).unwrap_or_else(|e| panic!("plain: {e}\n{body}"));
        let got = go(&legal).unwrap_or_else(|e| panic!("legal: {e}\n{body}"));
        assert!(
            want == got,
            "legalized results differ for {t} (k = {k})\n{body}\nwant {want:?}\ngot  {got:?}"
        );
    }
}

/// Lane inputs for element width `bits`: edge values and random ones, with a few
/// lanes equal (for reduce_equal) when `equal_runs`.
fn lane_values(bits: u32, n: usize, seed: u64) -> Vec<u64> {
    let mut v = values(bits, n, seed);
    v.truncate(n);
    v
}

/// Element types of the lane tests: IR name, size, value width.
const LANE_TYPES: [(&str, u32, u32); 7] = [
    ("bool", 1, 1),
    ("i8", 1, 8),
    ("i16", 2, 16),
    ("i32", 4, 32),
    ("i64", 8, 64),
    ("f32", 4, 32),
    ("f64", 8, 64),
];

/// Masks: random lanes, all on, none, and a partial last gang (40 threads).
fn lane_masks() -> Vec<Vec<u64>> {
    let mut rng = Rng(77);
    let random: Vec<u64> = (0..48).map(|_| rng.next() >> 63).collect();
    let mut mixed = random.clone();
    mixed[16..32].fill(1);
    vec![mixed, vec![0; 48], vec![1; 48]]
}

/// Lane inputs: edge and random values, and a mostly constant vector (for
/// `reduce_equal`).
fn lane_inputs(bits: u32) -> Vec<Vec<u64>> {
    let mut x = lane_values(bits, 48, 5 + u64::from(bits));
    while x.len() < 48 {
        x.extend_from_within(..);
    }
    x.truncate(48);
    if bits == 1 {
        x.iter_mut().for_each(|v| *v &= 1);
    }
    let mut same = vec![x[3]; 48];
    same[20] = x[4];
    same[33] = x[5];
    vec![x, same]
}

fn for_lane_cases(types: &[&str], body: &str, ks: &[i32]) {
    for &(t, size, bits) in LANE_TYPES.iter().filter(|(t, ..)| types.contains(t)) {
        // Lane movement ignores masks and needs no repeated values: one of each.
        let movement =
            body.contains("rotate") || body.contains("shift") || body.contains("shuffle2");
        let cases = if movement { 1 } else { 3 };
        let mut all = Vec::new();
        for x in lane_inputs(bits)
            .into_iter()
            .take(if movement { 1 } else { 2 })
        {
            let y: Vec<u64> = x.iter().rev().copied().collect();
            for m in lane_masks().into_iter().take(cases) {
                for &k in ks {
                    all.push((x.clone(), y.clone(), m.clone(), k));
                }
            }
        }
        check_ir_cases(t, size, body, &all, 40);
    }
}

const ALL_TYPES: &[&str] = &["bool", "i8", "i16", "i32", "i64", "f32", "f64"];
const INTS: &[&str] = &["i8", "i16", "i32", "i64"];

#[test]
fn lane_movement() {
    let ks = [0, 1, -1, 5, 17, -33, i32::MAX, i32::MIN];
    for_lane_cases(ALL_TYPES, "    v100 = rotate v12, v24", &ks);
    for_lane_cases(ALL_TYPES, "    v100 = shift v12, v24", &ks);
    // Shuffle2 indices: the mask input read as i32, any value.
    let body = "    v101 = special lane_index\n    v102 = iadd v28, v101\n    v103 = imul v102, v102\n    v100 = shuffle2 v12, v17, v103";
    for_lane_cases(ALL_TYPES, body, &[0]);
}

#[test]
fn reductions() {
    for op in ["reduce_add", "reduce_min", "reduce_max"] {
        let body = format!("    v101 = {op} v12, v22\n    v100 = splat v101");
        for_lane_cases(&["i8", "i16", "i32", "i64", "f32", "f64"], &body, &[0]);
    }
    for op in ["reduce_and", "reduce_or"] {
        let body = format!("    v101 = {op} v12, v22\n    v100 = splat v101");
        for_lane_cases(&["bool", "i8", "i16", "i32", "i64"], &body, &[0]);
    }
    let body = "    v101 = reduce_equal v12, v22\n    v100 = splat v101";
    for_lane_cases(ALL_TYPES, body, &[0]);
}

#[test]
fn scans() {
    let body = "    v100 = scan_add v12, v22";
    for_lane_cases(&["i8", "i16", "i32", "i64", "f32", "f64"], body, &[0]);
    for op in ["scan_and", "scan_or"] {
        let body = format!("    v100 = {op} v12, v22");
        for_lane_cases(&["bool", "i8", "i16", "i32", "i64"], &body, &[0]);
    }
}

#[test]
fn narrow_integer_operations() {
    for t in INTS {
        let (_, size, bits) = LANE_TYPES.iter().find(|(n, ..)| n == t).copied().unwrap();
        let x = lane_values(bits, 48, 99);
        let y: Vec<u64> = x.iter().map(|v| v | 1).rev().collect();
        let case = [(x, y, vec![1; 48], 0)];
        check_ir_cases(t, size, "    v100 = popcnt v12", &case, 40);
        for op in ["sdiv", "udiv", "srem", "urem"] {
            let body = format!("    v100 = {op} v12, v17");
            check_ir_cases(t, size, &body, &case, 40);
            let body = format!(
                "    v101 = extract v17, v15\n    v102 = {op} v25, v101\n    v100 = splat v102"
            );
            check_ir_cases(t, size, &body, &case, 40);
        }
    }
}

/// A kernel doing each of `ops` (atomic function name suffixes) on its own 8 cells:
/// `form` 0 = uniform address and operand (a scalar loop), 1 = uniform address with a
/// varying operand, 2 = varying addresses (colliding), under a partial mask.
fn atomic_kernel(t: &str, ops: &[&str], form: u32) -> String {
    let k = ops.len();
    let mut body = String::new();
    for (o, op) in ops.iter().enumerate() {
        let args = if *op == "compare_exchange" {
            // Succeeds in the lanes whose value matches the cell's initial one.
            "x, y".to_string()
        } else {
            "x".to_string()
        };
        let cell = match form {
            1 => format!("&cell[{}]", o * 8),
            _ => format!("&cell[{} + (j & 7)]", o * 8),
        };
        body.push_str(&format!(
            "        out[i * {k} + {o}] = atomic_{op}_global({cell}, {args});\n"
        ));
    }
    if form == 0 {
        format!(
            "export void k(uniform {t} cell[], uniform {t} v[], uniform int32 idx[], uniform {t} out[], uniform int n) {{
    for (uniform int i = 0; i < n; i++) {{
        uniform int32 j = idx[i]; uniform {t} x = v[i]; uniform {t} y = v[i + 1];
        if (j >= 0) {{
{body}        }}
    }}
}}"
        )
    } else {
        format!(
            "export void k(uniform {t} cell[], uniform {t} v[], uniform int32 idx[], uniform {t} out[], uniform int n) {{
    foreach (i = 0 ... n) {{
        int32 j = idx[i]; {t} x = v[i]; {t} y = v[i + 1];
        if (j >= 0) {{
{body}        }}
    }}
}}"
        )
    }
}

#[test]
fn atomics() {
    let int_ops = [
        "add",
        "subtract",
        "and",
        "or",
        "xor",
        "min",
        "max",
        "swap",
        "compare_exchange",
    ];
    // (Float compare_exchange is left out: the lowering emits an `atomic_cas` on
    // floats, which the verifier rejects.)
    let float_ops = ["add", "subtract", "min", "max", "swap"];
    let types: [(&str, u32, &[&str]); 6] = [
        ("int32", 32, &int_ops),
        ("uint32", 32, &int_ops),
        ("int64", 64, &int_ops),
        ("uint64", 64, &int_ops),
        ("float", 32, &float_ops),
        ("double", 64, &float_ops),
    ];
    let n = 40usize;
    let mut rng = Rng(4242);
    let idx: Vec<u64> = (0..n)
        .map(|_| {
            let r = rng.next();
            // About a quarter of the lanes off; the rest collide on 8 cells.
            if r.is_multiple_of(4) {
                u64::from(u32::MAX)
            } else {
                (r >> 8) % 8
            }
        })
        .collect();
    for (t, bits, ops) in types {
        let size = (bits / 8) as usize;
        let mut v = values(bits, n, 31 + u64::from(bits));
        v.truncate(n + 1);
        // Cells start at values that some lanes' compare-exchange finds.
        let cells: Vec<u64> = (0..ops.len() * 8).map(|c| v[c % (n + 1)]).collect();
        // Uniform 32-bit atomics are native: nothing to compare.
        let forms = if bits == 32 { 1..3 } else { 0..3 };
        for form in forms {
            let src = atomic_kernel(t, ops, form);
            let bufs = [
                bytes_of(&cells, size),
                bytes_of(&v, size),
                bytes_of(&idx, 4),
                vec![0; n * ops.len() * size],
            ];
            differential(&src, &bufs, n as u32).unwrap_or_else(|e| panic!("{e}\n{src}"));
        }
    }
}

#[test]
fn unused_routines_and_globals_are_removed() {
    // (No `foreach`: its lowering divides.)
    let src = "export void k(uniform int a[]) { a[programIndex] = a[programIndex] + 1; }";
    let (plain, legal) = compile(src);
    let names: Vec<&str> = legal.functions.values().map(|f| f.name.as_str()).collect();
    assert_eq!(plain.functions.len(), legal.functions.len(), "{names:?}");
    assert!(legal
        .functions
        .values()
        .all(|f| !super::is_runtime(&f.name)));
    assert!(legal.globals.values().all(|g| !super::is_runtime(&g.name)));
    // A 64-bit atomic's routine (with the lock routine the runtime's own pipeline
    // inlined into it) is short enough to be inlined into k after legalization
    // (inline_routines), and then removed; the lock word stays, since the copy takes
    // the lock. With --no-inline the routine stays a call.
    let src = "export void k(uniform int64 a[], uniform int n) {
    foreach (i = 0 ... n) { atomic_add_global(&a[0], (int64)i); }
}";
    let (_, legal) = compile(src);
    let names: Vec<&str> = legal.functions.values().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["k"]);
    assert!(legal.globals.values().any(|g| super::is_runtime(&g.name)));
    let (_, called) = compile_with(
        src,
        &crate::passes::Switches {
            no_inline: true,
            ..Default::default()
        },
    );
    let names: Vec<&str> = called.functions.values().map(|f| f.name.as_str()).collect();
    assert!(names.contains(&"__spmdc_rt_atomic_add_i64_v"), "{names:?}");
    assert!(called.globals.values().any(|g| super::is_runtime(&g.name)));
}

#[test]
fn a_missing_routine_is_an_error_not_a_panic() {
    let text = "module lanes 16 ptr 4

function export @k(i32, i32) -> i32 {
block0(v0: i32, v1: i32):
    v2 = sdiv v0, v1
    return v2
}
";
    let mut m = crate::ir::parse_module(text).expect("parses");
    let err = super::legalize(&mut m, LegalTarget::Nyuzi).unwrap_err();
    assert!(
        err.contains("__spmdc_rt_sdiv_i32_u") && err.contains("missing"),
        "{err}"
    );
}

#[test]
fn the_runtime_is_legal_and_not_recursive() {
    let target = sema::Target {
        program_count: LANES,
        pointer_size: 4,
    };
    let rt = driver::runtime::whole_runtime(target, true, LegalTarget::Nyuzi).expect("builds");
    assert!(super::remaining_illegal(&rt).is_empty());
    crate::ir::verify_module(&rt).expect("verifies");
    for (r, f) in rt.functions.iter() {
        for data in f.insts.values() {
            if let crate::ir::InstData::Call { func, .. } = data {
                assert_ne!(*func, r, "@{} calls itself", f.name);
            }
        }
    }
}

#[test]
fn division_by_constant_powers_of_two() {
    for bits in [8, 32, 64] {
        for signed in [true, false] {
            let exprs = "x / 1; x % 1; x / 2; x % 2; x / 8; x % 8; x / 64; x % 64; x / 3";
            check_binary(bits, signed, exprs, |_| true, 6);
        }
    }
    // Only the division by 3 calls a routine.
    let (_, legal) = compile(&binary_kernel("int32", "x / 8; x % 16; x / 3", true));
    let names: Vec<&str> = legal
        .functions
        .values()
        .map(|f| f.name.as_str())
        .filter(|n| n.starts_with("__spmdc_rt_sdiv") || n.starts_with("__spmdc_rt_srem"))
        .collect();
    assert_eq!(names, ["__spmdc_rt_sdiv_i32_v"]);
}
