//! `print` on Nyuzi: programs printing uniform and varying values of every type under
//! partial masks run on the interpreter (16 lanes, 4-byte pointers) and compiled for
//! Nyuzi on the functional simulator, where the runtime routines of
//! `stdlib/runtime_print.spmd` format the text on the device and write it to the serial
//! port. The two outputs must be the same text. The expected text of a few prints is
//! also spelled out, so that both cannot be wrong the same way.

use spmdc::back::nyuzi::image::MachineShape;
use spmdc::back::nyuzi::run::{self as nyuzi, NyuziRunOptions};
use spmdc::driver::{self, FrontOptions, FrontResult, RunRequest, Stage};
use spmdc::front::sema;
use spmdc::interp::Limits;

fn front(src: &str) -> FrontResult {
    let options = FrontOptions {
        target: sema::Target {
            program_count: 16,
            pointer_size: 4,
        },
        ..FrontOptions::default()
    };
    driver::run_front("print.spmd", None, src.to_string(), &options, Stage::Check)
}

/// The text `entry(args)` prints on the interpreter and on Nyuzi, which must agree.
fn both(src: &str, entry: &str, args: &[&str]) -> String {
    let front = front(src);
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let req = RunRequest {
        optimize: driver::OPTIMIZE_BY_DEFAULT,
        entry,
        args: &args,
        grid: None,
        block: None,
        dynamic_shared: None,
        limits: Limits {
            max_steps: 200_000_000,
            ..Limits::default()
        },
    };
    let want = driver::run_on_interp(&front, &req)
        .unwrap_or_else(|e| panic!("interp: {e:?}"))
        .output;
    let got = nyuzi::run_on_nyuzi(&front, &req, &NyuziRunOptions::default())
        .unwrap_or_else(|e| panic!("nyuzi: {e:?}"))
        .output;
    assert_eq!(got, want, "nyuzi output differs from the interpreter's");
    want
}

#[test]
fn strings_and_integers() {
    let src = r#"
export void ints(uniform int n) {
    print("hello, world\n");
    print("% and %\n", n, -n);
    uniform int8 a = -128;
    uniform uint8 b = 200;
    uniform int16 c = -32768;
    uniform uint16 d = 65535;
    uniform int64 e = -9223372036854775807 - 1;
    uniform uint64 f = 18446744073709551615u;
    uniform int64 g = 1234567890123456789;
    uniform uint32 h = 4294967295u;
    print("% % % % % % % % %\n", a, b, c, d, e, f, g, h, 2147483647);
    uniform bool t = n > 3;
    print("bools % %\n", t, !t);
    if (programIndex < n) {
        print("lanes % % %\n", programIndex, (int8)(programIndex * 20),
              (int16)(programIndex * -3000));
        print("wide % %\n", (int64)programIndex * 1000000000000, (uint32)programIndex - 8);
        print("bool %\n", programIndex % 2 == 0);
    }
    if (programIndex > 100)
        print("never %\n", programIndex);
    print("end\n");
}
"#;
    let out = both(src, "ints", &["n=5"]);
    assert!(out.starts_with("hello, world\n5 and -5\n-128 -56 -32768 -1 -9223372036854775808 -1 1234567890123456789 -1 2147483647\nbools true false\nlanes [0,1,2,3,4,((5))"), "{out}");
    assert!(
        out.contains("bool [true,false,true,false,true,_________,"),
        "{out}"
    );
    assert!(!out.contains("never"), "{out}");
    assert!(out.ends_with("end\n"), "{out}");
}

#[test]
fn pointers() {
    let src = r#"
export void ptrs(uniform int n) {
    uniform int a[16];
    uniform int * uniform p = &a[0];
    uniform int * uniform q = &a[3];
    print("% %\n", q - p, (uniform int * uniform)(uniform int64)0);
    uniform int * varying r = &a[programIndex];
    if (programIndex < n)
        print("% %\n", r - p, (uniform int * uniform)(uniform uint64)0xffff0048u);
    int * varying v = (int * varying)((int64)programIndex * 0x1234567 + 0x10);
    if (programIndex >= n)
        print("%\n", v);
}
"#;
    let out = both(src, "ptrs", &["n=3"]);
    assert!(out.starts_with("3 0x0\n[0,1,2,((3))"), "{out}");
    assert!(out.contains("] 0xffff0048\n"), "{out}");
    assert!(
        out.contains("\n[((0x10)),((0x1234577)),((0x2468ade)),0x369d045,0x48d15ac,")
            && out.ends_with(",0x11111119]\n"),
        "{out}"
    );
}

/// Float bit patterns: zeros, subnormals, ties at the sixth decimal (1/128 and 3/128
/// are exact, rounded half to even), values just around half a unit, large magnitudes
/// (every integer digit printed), infinities and NaNs of both signs.
const F32_BITS: &[u32] = &[
    0x0000_0000,
    0x8000_0000,
    0x0000_0001,
    0x8040_0000,
    0x007f_ffff,
    0x0080_0000,
    0x3c00_0000,
    0x3cc0_0000,
    0x3500_0000,
    0x3506_37bd,
    0x3586_37bd,
    0x33d6_bf95,
    0x4ceb_79a3,
    0x7f7f_ffff,
    0xff7f_ffff,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0xffc0_0000,
    0x7f80_0001,
    0x3f7f_fff8,
    0x3f80_0000,
    0xbf00_0000,
    0x4049_0fdb,
    0x4b7f_ffff,
    0x2b8c_bccc,
    0x5f80_0000,
    0x3e4c_cccd,
];

const F64_BITS: &[u64] = &[
    0x0000_0000_0000_0000,
    0x8000_0000_0000_0000,
    0x0000_0000_0000_0001,
    0x000f_ffff_ffff_ffff,
    0x0010_0000_0000_0000,
    0x3f80_0000_0000_0000,
    0x3f98_0000_0000_0000,
    0x3ea0_c6f7_a0b5_ed8d, // 0.0000005
    0x3e7a_d7f2_9abc_af48, // 1e-7
    0x3ea0_c6f7_a0b5_ed8e,
    0x3ea0_c6f7_a0b5_ed8c,
    0x419d_6f34_5400_0000, // 123456789.0
    0x7fef_ffff_ffff_ffff, // DBL_MAX
    0xffef_ffff_ffff_ffff,
    0x7e37_e43c_8800_759c, // 1e300
    0x47ef_ffff_e000_0000, // FLT_MAX
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x7ff8_0000_0000_0000,
    0xfff8_0000_0000_0000,
    0x3fef_ffff_ffbc_bb22, // 0.9999995 rounded up to 1.000000
    0x3fef_ffff_ff79_7643,
    0x3ff0_0000_0000_0000,
    0xc000_0000_0000_0000,
    0x4009_21fb_5444_2d18,
    0x4341_c379_37e0_8000, // 1e16
    0xbfb9_9999_9999_999a, // -0.1
];

/// The interpreter's text of one float, through the same Rust formatting it uses.
fn text64(x: f64) -> String {
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x.is_nan() {
        format!("{sign}nan")
    } else if x.is_infinite() {
        format!("{sign}inf")
    } else {
        format!("{x:.6}")
    }
}

#[test]
fn uniform_floats() {
    let mut src = String::from("export void floats() {\n");
    let mut want = String::new();
    for &b in F32_BITS {
        src += &format!("    print(\"f %\\n\", floatbits(0x{b:08x}u));\n");
        want += &format!("f {}\n", text64(f64::from(f32::from_bits(b))));
    }
    for &b in F64_BITS {
        src += &format!("    print(\"d %\\n\", doublebits(0x{b:016x}ull));\n");
        want += &format!("d {}\n", text64(f64::from_bits(b)));
    }
    src += "}\n";
    assert_eq!(both(&src, "floats", &[]), want);
}

#[test]
fn varying_floats() {
    let mut src = String::from("export void vfloats(uniform int n) {\n");
    src += "    uniform uint32 f[] = {";
    for b in F32_BITS.iter().take(16) {
        src += &format!("0x{b:08x}u, ");
    }
    src += "};\n    uniform uint64 d[] = {";
    for b in F64_BITS.iter().skip(2).take(16) {
        src += &format!("0x{b:016x}ull, ");
    }
    src += "};\n";
    src += "    float x = floatbits(f[programIndex]);\n";
    src += "    double y = doublebits(d[programIndex]);\n";
    src += "    if (programIndex < n)\n        print(\"% %\\n\", x, y);\n}\n";
    let out = both(&src, "vfloats", &["n=11"]);
    assert!(
        out.starts_with("[0.000000,-0.000000,0.000000,-0.000000,"),
        "{out}"
    );
}

/// Blocks of four gangs: on one hardware thread the lines come in the interpreter's
/// order; on four threads each print stays whole (a lock), blocks in any order.
#[test]
fn several_gangs() {
    let src = r#"
export void gangs() {
    print("gang % of block %: %\n", programIndex / programCount, taskIndex, programIndex);
}
"#;
    let front = front(src);
    let req = RunRequest {
        optimize: driver::OPTIMIZE_BY_DEFAULT,
        entry: "gangs",
        args: &[],
        grid: Some("3"),
        block: Some("64"),
        dynamic_shared: None,
        limits: Limits::default(),
    };
    let want = driver::run_on_interp(&front, &req).unwrap().output;
    assert_eq!(want.lines().count(), 12);
    let one = NyuziRunOptions {
        machine: MachineShape {
            cores: 1,
            threads_per_core: 1,
        },
        ..NyuziRunOptions::default()
    };
    let got = nyuzi::run_on_nyuzi(&front, &req, &one).unwrap().output;
    assert_eq!(got, want);
    let got = nyuzi::run_on_nyuzi(&front, &req, &NyuziRunOptions::default())
        .unwrap()
        .output;
    let sorted = |s: &str| {
        let mut l: Vec<String> = s.lines().map(str::to_string).collect();
        l.sort();
        l
    };
    assert_eq!(sorted(&got), sorted(&want));
}

/// A deterministic spread of bit patterns (xorshift), with exponents mostly where the
/// six decimals are partly significant, where rounding is decided.
fn spread(n: usize) -> Vec<(u32, u64)> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    (0..n)
        .map(|i| {
            let r = next();
            let (f, d) = (r as u32, next());
            if i % 4 == 0 {
                return (f, d);
            }
            // f32 exponents 2^-30..2^33, f64 2^-30..2^60.
            let fe = 97 + (f >> 23) % 64;
            let de = 993 + (d >> 52) % 91;
            (
                (f & 0x807f_ffff) | fe << 23,
                (d & 0x800f_ffff_ffff_ffff) | de << 52,
            )
        })
        .collect()
}

#[test]
fn spread_of_floats() {
    let mut src = String::from("export void spread() {\n");
    let mut want = String::new();
    for (f, d) in spread(48) {
        src +=
            &format!("    print(\"% %\\n\", floatbits(0x{f:08x}u), doublebits(0x{d:016x}ull));\n");
        want += &format!(
            "{} {}\n",
            text64(f64::from(f32::from_bits(f))),
            text64(f64::from_bits(d))
        );
    }
    src += "}\n";
    assert_eq!(both(&src, "spread", &[]), want);
}

/// Prints in a function called under a varying condition (the print's mask is the
/// caller's), in a varying loop, and literal pieces of every length, UTF-8 included.
#[test]
fn masks_and_literals() {
    let src = r#"
void show(int x, uniform int tag) {
    print("tag % x %\n", tag, x);
}
export void masks(uniform int n) {
    print("");
    print("ab");
    print("cdefghi\n");
    print("é ü ∑ %!\n", n);
    if (programIndex % 3 == 1)
        show(programIndex, 7);
    for (int i = 0; i < programIndex; i++) {
        if (i >= n)
            break;
        print("i=%\n", i);
    }
}
"#;
    let out = both(src, "masks", &["n=2"]);
    assert!(
        out.starts_with("abcdefghi\né ü ∑ 2!\ntag 7 x [((0)),1,((2)),((3)),4,"),
        "{out}"
    );
    assert!(out.contains("i=[((0)),0,0,0,"), "{out}");
    assert!(
        out.ends_with("i=[((0)),((1)),1,1,1,1,1,1,1,1,1,1,1,1,1,1]\n"),
        "{out}"
    );
}
