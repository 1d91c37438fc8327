//! `print` on Nyuzi: programs printing uniform and varying values of every type under
//! partial masks run on the interpreter (16 lanes, 4-byte pointers) and compiled for
//! Nyuzi on the functional simulator, where the runtime routines of
//! `stdlib/runtime_print.spmd` format the text on the device and write it to the serial
//! port. The two outputs must be the same text. The expected text of a few prints is
//! also spelled out, so that both cannot be wrong the same way.

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
    assert!(out.contains("bool [true,false,true,false,true,(("), "{out}");
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
}
"#;
    let out = both(src, "ptrs", &["n=3"]);
    assert!(out.starts_with("3 0x0\n[0,1,2,((3))"), "{out}");
    assert!(out.ends_with("] 0xffff0048\n"), "{out}");
}
