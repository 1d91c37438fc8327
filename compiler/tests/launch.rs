//! The launch layer (`spmdc::launch`) from a checked program: entry lookup, signatures,
//! every SPEC form for every element type, files, every error path, random
//! determinism, launch shapes, and the shape of the JSON and `--print` output.

mod common;

use std::path::PathBuf;

use spmdc::driver::FrontResult;
use spmdc::launch::{
    self, bind_args, find_entry, parse_arg, signature_of, ArgValue, Buffer, ElemType, ErrorKind,
    KernelSignature, LaunchConfig, LaunchError, LaunchRequest, ParamKind, RunResult, Stats, Value,
};

/// A kernel with one scalar and one buffer parameter of every element type.
const ALL_TYPES: &str = "
export void all(uniform bool s_bool, uniform int8 s_i8, uniform uint8 s_u8,
                uniform int16 s_i16, uniform uint16 s_u16, uniform int s_i32,
                uniform uint s_u32, uniform int64 s_i64, uniform uint64 s_u64,
                uniform float s_f32, uniform double s_f64,
                uniform bool b_bool[], uniform int8 b_i8[], uniform uint8 b_u8[],
                uniform int16 b_i16[], uniform uint16 b_u16[], uniform int b_i32[],
                uniform uint b_u32[], uniform int64 b_i64[], uniform uint64 b_u64[],
                uniform float b_f32[], uniform double * uniform b_f64) {}
";

/// The parameter suffix of each element type in [`ALL_TYPES`].
fn suffix(t: ElemType) -> &'static str {
    match t {
        ElemType::Bool => "bool",
        ElemType::I8 => "i8",
        ElemType::U8 => "u8",
        ElemType::I16 => "i16",
        ElemType::U16 => "u16",
        ElemType::I32 => "i32",
        ElemType::U32 => "u32",
        ElemType::I64 => "i64",
        ElemType::U64 => "u64",
        ElemType::F32 => "f32",
        ElemType::F64 => "f64",
    }
}

fn front(src: &str) -> FrontResult {
    let r = common::check_source("launch.spmd", src);
    assert!(
        !r.diags.has_errors(),
        "{:?}",
        r.diags.iter().collect::<Vec<_>>()
    );
    r
}

fn sig_of(src: &str, entry: &str) -> KernelSignature {
    let r = front(src);
    let checked = r.checked.as_ref().unwrap();
    let f = find_entry(checked, &r.interner, entry).unwrap();
    signature_of(checked, f, &r.interner).unwrap()
}

fn sig_err(src: &str, entry: &str) -> LaunchError {
    let r = front(src);
    let checked = r.checked.as_ref().unwrap();
    let f = find_entry(checked, &r.interner, entry).unwrap();
    signature_of(checked, f, &r.interner).unwrap_err()
}

/// The signature of [`ALL_TYPES`], checked once (the front end with the stdlib is the
/// slow part of these tests).
fn all_sig() -> &'static KernelSignature {
    static SIG: std::sync::OnceLock<KernelSignature> = std::sync::OnceLock::new();
    SIG.get_or_init(|| sig_of(ALL_TYPES, "all"))
}

/// Materializes `--arg` text against the parameter it names in [`ALL_TYPES`].
fn arg(text: &str) -> Result<ArgValue, LaunchError> {
    let sig = all_sig();
    let a = parse_arg(text)?;
    let p = sig.param(&a.name).expect("parameter exists");
    launch::materialize(p, &a)
}

fn scalar(text: &str) -> Value {
    match arg(text) {
        Ok(ArgValue::Scalar(v)) => v,
        other => panic!("{text}: {other:?}"),
    }
}

fn buffer(text: &str) -> Buffer {
    match arg(text) {
        Ok(ArgValue::Buffer(b)) => b,
        other => panic!("{text}: {other:?}"),
    }
}

/// The error of `text`, checking its kind and that its message contains `needle`.
fn expect_err(text: &str, kind: ErrorKind, needle: &str) -> LaunchError {
    let e = err(text);
    assert_eq!(e.kind, kind, "{text}: {e}");
    assert!(e.message.contains(needle), "{text}: {e}");
    e
}

fn err(text: &str) -> LaunchError {
    match arg(text) {
        Err(e) => e,
        Ok(v) => panic!("{text} succeeded: {v:?}"),
    }
}

/// A fresh file in the test's temporary directory.
fn temp_file(name: &str, contents: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("launch-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

// ---------------------------------------------------------------- entries and signatures

#[test]
fn finds_entries_and_suggests_on_a_miss() {
    let r = front(
        "export void saxpy(uniform float x[]) {}\ntask void scale(uniform float m[]) {}\nvoid helper() {}\nexport void later();",
    );
    let c = r.checked.as_ref().unwrap();
    let saxpy = find_entry(c, &r.interner, "saxpy").unwrap();
    assert_eq!(r.interner.resolve(c.funcs[saxpy].name), "saxpy");
    assert!(find_entry(c, &r.interner, "scale").is_ok());

    let e = find_entry(c, &r.interner, "saxyp").unwrap_err();
    assert_eq!(e.kind, ErrorKind::NoSuchEntry);
    assert_eq!(e.code().map(|c| c.as_str()), Some("E0900"));
    assert!(e.message.contains("did you mean `saxpy`?"), "{e}");
    assert!(
        e.notes
            .iter()
            .any(|n| n == "the entry points are: saxpy, scale"),
        "{e}"
    );

    let e = find_entry(c, &r.interner, "helper").unwrap_err();
    assert!(
        e.to_string().contains("not an `export` or `task` function"),
        "{e}"
    );
    let e = find_entry(c, &r.interner, "later").unwrap_err();
    assert!(e.to_string().contains("declared but never defined"), "{e}");
    // Stdlib functions are not entry points.
    let e = find_entry(c, &r.interner, "reduce_add").unwrap_err();
    assert_eq!(e.kind, ErrorKind::NoSuchEntry);
}

#[test]
fn a_program_without_entries_says_so() {
    let r = front("void f() {}");
    let c = r.checked.as_ref().unwrap();
    let e = find_entry(c, &r.interner, "f").unwrap_err();
    assert!(e.to_string().contains("has no entry points"), "{e}");
}

#[test]
fn signature_of_every_element_type() {
    let sig = all_sig();
    assert_eq!(sig.name, "all");
    assert_eq!(sig.kind, launch::EntryKind::Export);
    assert_eq!(sig.ret, None);
    assert_eq!(sig.params.len(), 22);
    for t in ElemType::ALL {
        let s = sig.param(&format!("s_{}", suffix(t))).unwrap();
        assert_eq!(s.kind, ParamKind::Scalar(t));
        assert!(!s.is_buffer());
        let b = sig.param(&format!("b_{}", suffix(t))).unwrap();
        assert_eq!(
            b.kind,
            ParamKind::Buffer {
                elem: t,
                read_only: false
            }
        );
        assert_eq!(b.elem(), t);
    }
    assert_eq!(
        sig.param("b_f64").unwrap().type_name,
        "uniform double * uniform"
    );
    assert_eq!(sig.buffer_params().count(), 11);
}

#[test]
fn signature_details() {
    let sig = sig_of(
        "enum Color { RED, GREEN };
         export uniform float dot(const uniform float a[], uniform Color c, uniform Color * uniform cs) { return 0; }
         task void t(uniform int n) {}",
        "dot",
    );
    assert_eq!(sig.ret, Some(ElemType::F32));
    assert_eq!(
        sig.params[0].kind,
        ParamKind::Buffer {
            elem: ElemType::F32,
            read_only: true
        }
    );
    assert_eq!(sig.params[0].describe(), "read-only buffer of float");
    assert_eq!(sig.params[1].kind, ParamKind::Scalar(ElemType::I32));
    assert_eq!(
        sig.params[2].kind,
        ParamKind::Buffer {
            elem: ElemType::I32,
            read_only: false
        }
    );
    assert_eq!(
        sig.to_string(),
        "dot(read-only buffer of float a, int c, buffer of int cs)"
    );
    let t = sig_of("task void t(uniform int n) {}", "t");
    assert_eq!(t.kind, launch::EntryKind::Task);
}

#[test]
fn unsupported_signatures_are_explained() {
    let cases = [
        (
            "struct S { float a; }; export void f(uniform S s) {}",
            "struct parameters",
        ),
        (
            "struct S { float * a; }; export void f(uniform S * uniform s) {}",
            "buffers of structs holding pointers",
        ),
        (
            "struct S { float a; }; export void f(uniform S * uniform * uniform s) {}",
            "buffers of pointers",
        ),
        (
            "export void f(uniform float * uniform * uniform p) {}",
            "buffers of pointers",
        ),
        ("export void f(void * uniform p) {}", "`void *`"),
        (
            "struct S { float a; }; export void f(varying S * uniform p) {}",
            "points to varying data other than basic types",
        ),
    ];
    for (src, why) in cases {
        let e = sig_err(src, "f");
        assert_eq!(e.kind, ErrorKind::UnsupportedSignature, "{src}");
        assert!(e.to_string().contains(why), "{src}: {e}");
        assert!(e.message.starts_with("cannot launch `f`: parameter"), "{e}");
    }
    let e = sig_err(
        "struct S { float a; }; export uniform S f() { uniform S s; s.a = 1; return s; }",
        "f",
    );
    assert!(
        e.message.contains("which the launcher cannot report"),
        "{e}"
    );
}

#[test]
fn arrays_of_arrays_are_buffers_of_their_elements_and_structs_buffers_of_bytes() {
    let src = "struct In { float p[2][3]; int id; int8 tag; };
               struct Out { In first; double d; };
               export void f(const uniform float m[4][4], uniform int grid[][8],
                             const uniform In ins[], uniform Out * uniform outs) {}";
    let sig = sig_of(src, "f");
    let kinds: Vec<ParamKind> = sig.params.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        [
            ParamKind::Buffer {
                elem: ElemType::F32,
                read_only: true
            },
            ParamKind::Buffer {
                elem: ElemType::I32,
                read_only: false
            },
            // 24 bytes of floats, the int, the int8 and three bytes of padding.
            ParamKind::Records {
                size: 32,
                read_only: true
            },
            // `In`, then the double at offset 32.
            ParamKind::Records {
                size: 40,
                read_only: false
            },
        ]
    );
    assert_eq!(
        sig.params[2].describe(),
        "read-only buffer of structs of 32 bytes"
    );
    assert_eq!(sig.params[2].elem(), ElemType::U8);
}

#[test]
fn references_are_buffers_of_the_one_object_they_name() {
    let src = "struct S { float a; int b; };
               export void f(uniform S &s, const uniform float &x, uniform int &n) {}";
    let sig = sig_of(src, "f");
    let kinds: Vec<(ParamKind, bool)> = sig.params.iter().map(|p| (p.kind, p.by_ref)).collect();
    assert_eq!(
        kinds,
        [
            (
                ParamKind::Records {
                    size: 8,
                    read_only: false
                },
                true
            ),
            (
                ParamKind::Buffer {
                    elem: ElemType::F32,
                    read_only: true
                },
                true
            ),
            (
                ParamKind::Buffer {
                    elem: ElemType::I32,
                    read_only: false
                },
                true
            ),
        ]
    );
    let make =
        |i: usize, text: &str| launch::materialize(&sig.params[i], &parse_arg(text).unwrap());
    assert!(make(1, "x=fill(1,2.5)").is_ok());
    let e = make(2, "n=zeros(0)").unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadValue);
    assert!(
        e.to_string()
            .contains("it is a reference, so its buffer must hold the one object"),
        "{e}"
    );
}

#[test]
fn struct_buffers_take_zeros_or_raw_bytes_of_whole_structs() {
    let src = "struct P { float x, y; };
               export void f(uniform P ps[]) {}";
    let sig = sig_of(src, "f");
    let param = &sig.params[0];
    let make = |text: &str| launch::materialize(param, &parse_arg(text).unwrap());
    let zeros = make("ps=zeros(3)").unwrap();
    assert_eq!(zeros.as_buffer().unwrap().bytes(), &[0u8; 24]);
    let whole = temp_file("two-ps.bin", &[7u8; 16]);
    let read = make(&format!("ps=@{}", whole.display())).unwrap();
    assert_eq!(read.as_buffer().unwrap().bytes(), &[7u8; 16]);
    let partial = temp_file("part-ps.bin", &[7u8; 12]);
    let e = make(&format!("ps=@{}", partial.display())).unwrap_err();
    assert_eq!(e.kind, ErrorKind::File);
    assert!(
        e.to_string()
            .contains("12 bytes, is not a whole number of structs of 8 bytes"),
        "{e}"
    );
    for text in ["ps=fill(3,1)", "ps=range(3)", "ps=random(3)"] {
        let e = make(text).unwrap_err();
        assert_eq!(e.kind, ErrorKind::WrongKind, "{text}");
        assert!(
            e.to_string()
                .contains("a buffer of structs takes `zeros(N)`"),
            "{e}"
        );
    }
}

// ---------------------------------------------------------------- scalars

#[test]
fn scalars_of_every_type() {
    assert_eq!(scalar("s_bool=true"), Value::Bool(true));
    assert_eq!(scalar("s_bool=0"), Value::Bool(false));
    assert_eq!(scalar("s_i8=-128"), Value::I8(-128));
    assert_eq!(scalar("s_u8=0xff"), Value::U8(255));
    assert_eq!(scalar("s_i16=-32768"), Value::I16(-32768));
    assert_eq!(scalar("s_u16=65535"), Value::U16(65535));
    assert_eq!(scalar("s_i32=5"), Value::I32(5));
    assert_eq!(scalar("s_u32=4294967295"), Value::U32(u32::MAX));
    assert_eq!(scalar("s_i64=-9223372036854775808"), Value::I64(i64::MIN));
    assert_eq!(scalar("s_u64=18446744073709551615"), Value::U64(u64::MAX));
    assert_eq!(scalar("s_f32=2.5"), Value::F32(2.5));
    assert_eq!(scalar("s_f32=-1e20"), Value::F32(-1e20));
    assert_eq!(scalar("s_f32=3"), Value::F32(3.0));
    assert_eq!(scalar("s_f64=0x10"), Value::F64(16.0));
    assert_eq!(scalar("s_f64=1e300"), Value::F64(1e300));
}

#[test]
fn scalars_are_range_checked() {
    for t in ElemType::ALL.into_iter().filter(|t| t.is_integer()) {
        let (lo, hi) = t.int_range().unwrap();
        let s = suffix(t);
        assert!(arg(&format!("s_{s}={lo}")).is_ok());
        assert!(arg(&format!("s_{s}={hi}")).is_ok());
        for bad in [lo - 1, hi + 1] {
            expect_err(
                &format!("s_{s}={bad}"),
                ErrorKind::BadValue,
                &format!("does not fit in `{}`", t.name()),
            );
        }
    }
    expect_err(
        "s_f32=1e39",
        ErrorKind::BadValue,
        "outside the range of `float`",
    );
    assert_eq!(err("s_i32=2.5").kind, ErrorKind::BadValue);
    assert_eq!(err("s_i32=true").kind, ErrorKind::BadValue);
    assert_eq!(err("s_f32=false").kind, ErrorKind::BadValue);
    assert_eq!(err("s_bool=2").kind, ErrorKind::BadValue);
    assert_eq!(err("s_bool=1.0").kind, ErrorKind::BadValue);
    let e = err("s_u8=300");
    assert_eq!(
        e.message,
        "bad value for `s_u8`: `300` does not fit in `uint8` (0 to 255)"
    );
    assert_eq!(
        e.snippet.as_ref().map(|s| s.text.as_str()),
        Some("s_u8=300")
    );
}

// ---------------------------------------------------------------- buffers

#[test]
fn zeros_fill_and_range_for_every_type() {
    for t in ElemType::ALL {
        let s = suffix(t);
        let z = buffer(&format!("b_{s}=zeros(5)"));
        assert_eq!((z.elem(), z.len()), (t, 5));
        assert!(z.values().all(|v| v == t.zero()));
        assert!(z.bytes().iter().all(|&b| b == 0));

        let f = buffer(&format!("b_{s}=fill(3,1)"));
        assert_eq!(f.len(), 3);
        assert!(f.values().all(|v| v.as_f64() == 1.0), "{t}");

        let r = buffer(&format!("b_{s}=range(2)"));
        assert_eq!(
            r.values().map(Value::as_f64).collect::<Vec<_>>(),
            [0.0, 1.0],
            "{t}"
        );
        assert_eq!(r.bytes().len(), 2 * t.size());
    }
    assert_eq!(
        buffer("b_i32=range(4,10,-3)").to_vec::<i32>(),
        Some(vec![10, 7, 4, 1])
    );
    assert_eq!(
        buffer("b_f32=range(3,0.5,0.25)").to_vec::<f32>(),
        Some(vec![0.5, 0.75, 1.0])
    );
    assert_eq!(
        buffer("b_f64=range(2,1,1e20)").to_vec::<f64>(),
        Some(vec![1.0, 1e20 + 1.0])
    );
    assert_eq!(
        buffer("b_f32=fill(2,2.5)").to_vec::<f32>(),
        Some(vec![2.5, 2.5])
    );
    assert_eq!(
        buffer("b_bool=fill(2,true)").to_vec::<bool>(),
        Some(vec![true, true])
    );
    assert_eq!(
        buffer("b_u8=fill(2,0xff)").to_vec::<u8>(),
        Some(vec![255, 255])
    );
    assert!(buffer("b_i64=zeros(0)").is_empty());
    assert_eq!(buffer("b_i8=range(0,1000)").len(), 0);
}

#[test]
fn buffer_values_must_fit() {
    expect_err(
        "b_i32=fill(4,2.5)",
        ErrorKind::BadValue,
        "the fill value: `2.5` is not an integer",
    );
    assert_eq!(err("b_u8=fill(1,-1)").kind, ErrorKind::BadValue);
    assert_eq!(err("b_bool=fill(1,2)").kind, ErrorKind::BadValue);
    let e = err("b_i8=range(200)");
    assert!(e.message.contains("reaches 199 at element 199"), "{e}");
    let e = err("b_u8=range(3,1,-1)");
    assert!(e.message.contains("reaches -1 at element 2"), "{e}");
    assert!(err("b_i32=range(3,0,0.5)")
        .message
        .contains("integer START and STEP"));
    assert!(err("b_i32=range(3,true)")
        .message
        .contains("not `true`/`false`"));
    assert!(err("b_f32=range(2,0,1e39)")
        .message
        .contains("outside the range of `float`"));
    assert_eq!(
        buffer("b_bool=range(2)").to_vec::<bool>(),
        Some(vec![false, true])
    );
    assert_eq!(err("b_bool=range(3)").kind, ErrorKind::BadValue);
}

#[test]
fn counts_are_capped() {
    expect_err(
        &format!("b_f32=zeros({})", launch::MAX_ELEMENTS + 1),
        ErrorKind::TooLarge,
        "limited to 268435456",
    );
    for spec in ["fill(300000000,1)", "range(300000000)", "random(300000000)"] {
        assert_eq!(
            err(&format!("b_u8={spec}")).kind,
            ErrorKind::TooLarge,
            "{spec}"
        );
    }
    assert_eq!(
        err("b_u8=zeros(18446744073709551615)").kind,
        ErrorKind::TooLarge
    );
    let e = parse_arg("b_u8=zeros(99999999999999999999999)").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Syntax);
}

#[test]
fn random_is_deterministic_and_documented() {
    // SplitMix64 with seed 1: Lemire's reduction into [0, 100).
    assert_eq!(
        buffer("b_i32=random(8)").to_vec::<i32>(),
        Some(vec![56, 74, 97, 44, 44, 76, 87, 52])
    );
    assert_eq!(buffer("b_i32=random(8,1)"), buffer("b_i32=random(8)"));
    // (next >> 11) * 2^-53 in [0, 1).
    assert_eq!(
        buffer("b_f64=random(3)").to_vec::<f64>(),
        Some(vec![
            0.5665615751722809,
            0.7457817572627011,
            0.9710027535867962
        ])
    );
    assert_eq!(
        buffer("b_i8=random(8,7,-5,5)").to_vec::<i8>(),
        Some(vec![-2, -5, 4, 0, -1, -3, -1, -2])
    );
    assert_eq!(buffer("b_f32=random(100,3)"), buffer("b_f32=random(100,3)"));
    assert_ne!(buffer("b_f32=random(100,3)"), buffer("b_f32=random(100,4)"));
    // The seed is independent of the element type: the same draws.
    let a = buffer("b_u64=random(50,9,0,1000)").to_vec::<u64>().unwrap();
    let b = buffer("b_i16=random(50,9,0,1000)").to_vec::<i16>().unwrap();
    assert!(a.iter().zip(&b).all(|(x, y)| *x as i64 == i64::from(*y)));
}

#[test]
fn random_stays_in_range_for_every_type() {
    for t in ElemType::ALL {
        let b = buffer(&format!("b_{}=random(2000,5)", suffix(t)));
        assert_eq!((b.elem(), b.len()), (t, 2000));
        for v in b.values() {
            let x = v.as_f64();
            match t {
                ElemType::Bool => {}
                _ if t.is_float() => assert!((0.0..1.0).contains(&x), "{t}: {x}"),
                _ => assert!((0.0..100.0).contains(&x) && x.fract() == 0.0, "{t}: {x}"),
            }
        }
    }
    let bools = buffer("b_bool=random(200)").to_vec::<bool>().unwrap();
    assert!(bools.contains(&true) && bools.contains(&false));
    let f = buffer("b_f32=random(1000,1,-2,-1.5)")
        .to_vec::<f32>()
        .unwrap();
    assert!(f.iter().all(|x| (-2.0..-1.5).contains(x)));
    // A range one float wide: every draw rounds into [lo, hi).
    let f = buffer("b_f32=random(100,1,1,1.0000001)")
        .to_vec::<f32>()
        .unwrap();
    assert!(f.iter().all(|&x| x == 1.0), "{f:?}");
    let full = buffer("b_u64=random(100,1,0,18446744073709551616)");
    assert_eq!(full.len(), 100);
    let full = buffer("b_i64=random(100,1,-9223372036854775808,9223372036854775807)");
    assert_eq!(full.len(), 100);
    assert_eq!(buffer("b_u8=random(300,2,0,256)").len(), 300);
}

#[test]
fn random_errors() {
    for (spec, what) in [
        ("b_i32=random(4,1,5,5)", "LO < HI"),
        ("b_f32=random(4,1,2,1)", "LO < HI"),
        ("b_i32=random(4,1,0,2.5)", "integer LO and HI"),
        ("b_u8=random(4,1,0,257)", "does not fit in `uint8`"),
        ("b_i8=random(4,1,-129,0)", "does not fit in `int8`"),
        ("b_bool=random(4,1,0,1)", "takes no LO and HI"),
        ("b_f32=random(4,1,0,1e39)", "outside the range of `float`"),
        ("b_f64=random(4,1,0,inf)", "finite HI"),
        ("b_f64=random(4,1,-1e308,1e308)", "finite difference"),
    ] {
        let e = err(spec);
        assert_eq!(e.kind, ErrorKind::BadValue, "{spec}");
        assert!(e.message.contains(what), "{spec}: {e}");
    }
}

// ---------------------------------------------------------------- files

#[test]
fn files_in_every_format() {
    let bin = temp_file("in.bin", &[1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    assert_eq!(
        buffer(&format!("b_i32=@{}", bin.display())).to_vec::<i32>(),
        Some(vec![1, -1])
    );
    assert_eq!(
        buffer(&format!("b_u16=@{}", bin.display())).to_vec::<u16>(),
        Some(vec![1, 0, 65535, 65535])
    );
    let raw = temp_file("in.raw", &2.5f64.to_le_bytes());
    assert_eq!(
        buffer(&format!("b_f64=@{}", raw.display())).to_vec::<f64>(),
        Some(vec![2.5])
    );

    let txt = temp_file("in.txt", b"# header\n1 2 3\n4, 5\t6 # trailing\n");
    for t in ElemType::ALL.into_iter().filter(|t| *t != ElemType::Bool) {
        let b = buffer(&format!("b_{}=@{}", suffix(t), txt.display()));
        assert_eq!(
            b.values().map(Value::as_f64).collect::<Vec<_>>(),
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "{t}"
        );
    }
    let json = temp_file("in.json", b"[[0.5, -1], [1e20, \"NaN\"]]");
    let b = buffer(&format!("b_f32=@{}", json.display()))
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(&b[..3], &[0.5, -1.0, 1e20]);
    assert!(b[3].is_nan());
    let bools = temp_file("bools.json", b"[true, false, 1]");
    assert_eq!(
        buffer(&format!("b_bool=@{}", bools.display())).to_vec::<bool>(),
        Some(vec![true, false, true])
    );

    // What the launcher prints reads back the same.
    let values = Buffer::from_slice(&[0.1f32, -0.0, 1e-7, 3.4028235e38, f32::INFINITY]);
    let printed = values.format_inline();
    let txt = temp_file("round.txt", printed.trim_matches(['[', ']']).as_bytes());
    let back = buffer(&format!("b_f32=@{}", txt.display()));
    assert_eq!(back.bytes(), values.bytes(), "{printed}");
    let json = temp_file("round.json", values.to_json().to_string().as_bytes());
    assert_eq!(
        buffer(&format!("b_f32=@{}", json.display())).bytes(),
        values.bytes()
    );
}

#[test]
fn file_errors() {
    expect_err(
        "b_f32=@/nonexistent/dir/x.bin",
        ErrorKind::File,
        "`@/nonexistent/dir/x.bin`: cannot read it",
    );
    let dir = temp_file("dummy", b"").parent().unwrap().to_path_buf();
    assert!(err(&format!("b_f32=@{}", dir.display()))
        .message
        .contains("not a regular file"));

    let odd = temp_file("odd.bin", &[0; 6]);
    expect_err(
        &format!("b_f32=@{}", odd.display()),
        ErrorKind::File,
        "6 bytes, is not a multiple of 4 (the size of `float`)",
    );
    assert!(arg(&format!("b_i16=@{}", odd.display())).is_ok());

    let bad_bool = temp_file("bool.bin", &[0, 1, 7]);
    assert_eq!(
        err(&format!("b_bool=@{}", bad_bool.display())).kind,
        ErrorKind::BadValue
    );

    let txt = temp_file("bad.txt", b"1 2\n3 four\n");
    expect_err(
        &format!("b_i32=@{}", txt.display()),
        ErrorKind::File,
        "line 2: `four` is not a number",
    );
    let txt = temp_file("float.txt", b"1 2.5");
    expect_err(
        &format!("b_i32=@{}", txt.display()),
        ErrorKind::BadValue,
        "line 1: `2.5` is not an integer",
    );
    let bin_txt = temp_file("latin1.txt", &[0x31, 0x20, 0xe9]);
    assert!(err(&format!("b_i32=@{}", bin_txt.display()))
        .message
        .contains("not UTF-8"));

    for (name, body, what) in [
        ("trunc.json", &b"[1, 2"[..], "not valid JSON"),
        ("obj.json", b"{\"a\": 1}", "JSON array"),
        ("str.json", b"[\"1\"]", "element 0"),
        ("null.json", b"[1, null]", "element 1: `null`"),
    ] {
        let f = temp_file(name, body);
        let e = err(&format!("b_i32=@{}", f.display()));
        assert_eq!(e.kind, ErrorKind::File, "{name}");
        assert!(e.message.contains(what), "{name}: {e}");
    }
    let f = temp_file("big.json", b"[1, 70000]");
    expect_err(
        &format!("b_i16=@{}", f.display()),
        ErrorKind::BadValue,
        "element 1: `70000` does not fit in `int16`",
    );
}

// ---------------------------------------------------------------- binding

#[test]
fn wrong_kinds() {
    let e = expect_err(
        "b_f32=5",
        ErrorKind::WrongKind,
        "`b_f32` is a buffer of float (`uniform float * uniform`), but `5` is a single value",
    );
    assert_eq!(
        e.help.as_deref(),
        Some("give a buffer: `b_f32=fill(N,5)`, `zeros(N)`, `range(N)`, `random(N)` or `@file`")
    );
    for spec in ["zeros(4)", "fill(4,1)", "range(4)", "random(4)", "@x.bin"] {
        let e = err(&format!("s_i32={spec}"));
        assert_eq!(e.kind, ErrorKind::WrongKind, "{spec}");
        assert!(e.message.contains("is a single `int`"), "{e}");
        assert_eq!(e.help.as_deref(), Some("give one value, e.g. `s_i32=16`"));
    }
}

const SAXPY: &str =
    "export void saxpy(uniform int n, uniform float a, uniform float x[], uniform float y[]) {
    foreach (i = 0 ... n) { y[i] = a * x[i] + y[i]; }
}";

fn bind(src: &str, entry: &str, args: &[&str]) -> Result<Vec<ArgValue>, Vec<LaunchError>> {
    let sig = sig_of(src, entry);
    let specs: Vec<_> = args.iter().map(|a| parse_arg(a).unwrap()).collect();
    bind_args(&sig, &specs)
}

#[test]
fn binds_in_parameter_order() {
    let args = bind(SAXPY, "saxpy", &["y=zeros(4)", "x=range(4)", "a=2", "n=4"]).unwrap();
    assert_eq!(args.len(), 4);
    assert_eq!(args[0].as_scalar(), Some(Value::I32(4)));
    assert_eq!(args[1].as_scalar(), Some(Value::F32(2.0)));
    assert_eq!(
        args[2].as_buffer().unwrap().to_vec::<f32>(),
        Some(vec![0.0, 1.0, 2.0, 3.0])
    );
    assert_eq!(args[3].as_buffer().unwrap().len(), 4);
    assert!(bind("export void none() {}", "none", &[])
        .unwrap()
        .is_empty());
}

#[test]
fn binding_errors_are_all_reported() {
    let errs = bind(SAXPY, "saxpy", &["nn=4", "a=1", "a=2", "x=5"]).unwrap_err();
    let kinds: Vec<ErrorKind> = errs.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            ErrorKind::UnknownParam,
            ErrorKind::DuplicateArg,
            ErrorKind::WrongKind,
            ErrorKind::MissingArgs
        ]
    );
    assert_eq!(
        errs[0].message,
        "`saxpy` has no parameter named `nn`; did you mean `n`?"
    );
    assert_eq!(
        errs[0].notes,
        ["the parameters are: n (int), a (float), x (buffer of float), y (buffer of float)"]
    );
    assert_eq!(errs[1].message, "`a` is given twice: `a=1` and `a=2`");
    assert_eq!(
        errs[3].message,
        "missing arguments for `saxpy`: `n` (int), `y` (buffer of float)"
    );
    assert_eq!(
        errs[3].help.as_deref(),
        Some("add --arg n=16 --arg y=zeros(16)")
    );
    let errs = bind(SAXPY, "saxpy", &["n=1", "a=1", "x=zeros(1)"]).unwrap_err();
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].message,
        "missing argument for `saxpy`: `y` (buffer of float)"
    );
    let errs = bind("export void none() {}", "none", &["k=1"]).unwrap_err();
    assert_eq!(errs[0].notes, ["`none` takes no parameters"]);
}

// ---------------------------------------------------------------- prepare, shape, results

fn request<'a>(
    entry: &'a str,
    args: &'a [String],
    grid: Option<&'a str>,
    block: Option<&'a str>,
) -> LaunchRequest<'a> {
    LaunchRequest {
        entry,
        args,
        grid,
        block,
        dynamic_shared: None,
        program_count: 16,
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn prepare_collects_everything() {
    let r = front(SAXPY);
    let c = r.checked.as_ref().unwrap();
    let args = strings(&["n=3", "a=0.5", "x=fill(3,2)", "y=range(3)"]);
    let l = launch::prepare(
        c,
        &r.interner,
        &request("saxpy", &args, Some("2"), Some("20,2")),
    )
    .unwrap();
    assert_eq!(l.signature.name, "saxpy");
    assert_eq!(l.config.grid, sim::Dim3::new(2, 1, 1));
    assert_eq!(l.config.block, sim::Dim3::new(20, 2, 1));
    assert_eq!(l.config.gangs_per_block(16), 3);
    assert_eq!(l.config.last_gang_lanes(16), 8);
    assert_eq!(
        l.arg("a").and_then(ArgValue::as_scalar),
        Some(Value::F32(0.5))
    );

    let l = launch::prepare(c, &r.interner, &request("saxpy", &args, None, None)).unwrap();
    assert_eq!(l.config, LaunchConfig::single_gang(16));

    // Syntax and shape errors together; no "missing" for the argument that did not parse.
    let bad = strings(&["n=3", "a=0.5", "x=fill(3", "y=range(3)"]);
    let errs =
        launch::prepare(c, &r.interner, &request("saxpy", &bad, Some("0"), None)).unwrap_err();
    let kinds: Vec<ErrorKind> = errs.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [ErrorKind::Syntax, ErrorKind::BadConfig]);
    // Binding still runs, so an unknown name is reported with the syntax error.
    let bad = strings(&["n=3", "a=0.5", "x=fill(3", "yy=range(3)"]);
    let errs = launch::prepare(c, &r.interner, &request("saxpy", &bad, None, None)).unwrap_err();
    let kinds: Vec<ErrorKind> = errs.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            ErrorKind::Syntax,
            ErrorKind::UnknownParam,
            ErrorKind::MissingArgs
        ]
    );
    assert_eq!(
        errs[2].message,
        "missing argument for `saxpy`: `y` (buffer of float)"
    );

    let errs = launch::prepare(c, &r.interner, &request("sax", &args, None, None)).unwrap_err();
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].kind, ErrorKind::NoSuchEntry);
    assert_eq!(errs[0].exit_code(), 2);
}

fn sample_result() -> RunResult {
    let r = front("export uniform int k(uniform int n, uniform float x[], uniform bool flags[]) { return n; }");
    let c = r.checked.as_ref().unwrap();
    let args = strings(&["n=7", "x=fill(20,0.1)", "flags=fill(2,true)"]);
    let mut l = launch::prepare(c, &r.interner, &request("k", &args, None, None)).unwrap();
    // A target writes results back into the launch's buffers.
    let x = l.args[1].as_buffer_mut().unwrap();
    assert!(x.set(0, Value::F32(1e20)));
    let mut stats = Stats::new();
    stats
        .set(Stats::DYNAMIC_INSTRUCTIONS, 12u64)
        .set(Stats::CYCLES, 40u64);
    RunResult::from_launch(&l, "interp", Some(Value::I32(7)), "hello\n".into(), stats)
}

#[test]
fn json_shape() {
    let res = sample_result();
    let j = res.to_json();
    let obj = j.as_object().unwrap();
    let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "block", "buffers", "compiler", "entry", "grid", "machine", "output", "return",
            "stats", "target"
        ]
    );
    assert_eq!(j["entry"], "k");
    assert_eq!(j["target"], "interp");
    assert_eq!(j["grid"], serde_json::json!([1, 1, 1]));
    assert_eq!(j["block"], serde_json::json!([16, 1, 1]));
    assert_eq!(j["return"], 7);
    assert_eq!(j["output"], "hello\n");
    assert_eq!(
        j["stats"],
        serde_json::json!({"cycles": 40, "dynamic_instructions": 12})
    );
    let x = j["buffers"]["x"].as_array().unwrap();
    assert_eq!(x.len(), 20);
    assert_eq!(x[0], serde_json::json!(1e20));
    assert_eq!(x[1].to_string(), "0.1");
    assert_eq!(j["buffers"]["flags"], serde_json::json!([true, true]));
    assert!(j["buffers"].get("n").is_none());

    // The text form keeps the documented key order and parameter order, and parses back.
    let text = res.to_json_string();
    assert!(text.ends_with("}\n"));
    let order: Vec<usize> = [
        "\"entry\"",
        "\"target\"",
        "\"grid\"",
        "\"block\"",
        "\"buffers\"",
        "\"return\"",
        "\"output\"",
        "\"stats\"",
        "\"machine\"",
        "\"compiler\"",
    ]
    .iter()
    .map(|k| text.find(k).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.find("\"x\"").unwrap() < text.find("\"flags\"").unwrap());
    let back: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(back, j);

    let mut void = res.clone();
    void.ret = None;
    assert_eq!(void.to_json()["return"], serde_json::Value::Null);
    assert_eq!(res.stats.check_convention(true), Ok(()));
}

#[test]
fn print_text() {
    let res = sample_result();
    let text = res.format_print(&["flags", "x", "return"]).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "flags = [true, true]");
    assert_eq!(lines[1], "x = [");
    assert_eq!(
        lines[2],
        "    1e20, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1,"
    );
    assert_eq!(lines[3], "    0.1, 0.1, 0.1, 0.1");
    assert_eq!(lines[4], "]");
    assert_eq!(lines[5], "return = 7");
    let e = res.format_print(&["xx"]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownName);
    assert!(e.message.contains("did you mean `x`?"), "{e}");
    assert_eq!(e.notes, ["the buffers are: x, flags"]);
    assert_eq!(res.format_print::<&str>(&[]).unwrap(), "");
}

#[test]
fn errors_never_panic_on_odd_input() {
    let sig = all_sig();
    for text in [
        "",
        "=",
        "==",
        "é=1",
        "s_i32=é",
        "b_f32=zeros(é)",
        "b_f32=fill(1,é)",
        "s_i32= ",
        "b_f32=@ ",
        "b_f32=range(1,2,3,4)",
        "b_f32=random(1,2,3,4,5)",
        "s_i32=0x",
        "s_i32=-",
        "b_f32=zeros(1)(2)",
        "s_i32=1e99999",
        "b_f32=fill(1,1e99999)",
        "s_u64=-0",
        "s_f32=--1",
    ] {
        match parse_arg(text) {
            Err(e) => {
                let _ = e.to_string();
            }
            Ok(a) => {
                if let Some(p) = sig.param(&a.name) {
                    let _ = launch::materialize(p, &a).map_err(|e| e.to_string());
                }
            }
        }
    }
    assert_eq!(scalar("s_u64=-0"), Value::U64(0));
    assert_eq!(scalar("s_f64=1e99999"), Value::F64(f64::INFINITY));
}

// ---------------------------------------------------------------- lang-spec/run.md

fn run_md() -> String {
    std::fs::read_to_string(common::repo_root().join("lang-spec/run.md")).unwrap()
}

/// The lines of the first fenced block that follows `marker` in `text`.
fn block_after<'a>(text: &'a str, marker: &str) -> Vec<&'a str> {
    let rest = &text[text.find(marker).expect(marker)..];
    let start = rest.find("```").unwrap();
    let body = &rest[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].lines().collect()
}

#[test]
fn run_md_examples_are_true() {
    let doc = run_md();
    // Every example in the SPEC table parses.
    let table = &doc[doc.find("## SPEC forms").unwrap()..];
    let table = &table[table.find("\n|").unwrap() + 1..];
    let table = &table[..table.find("\n\n").unwrap()];
    let mut examples = 0;
    for row in table.lines().skip(2) {
        let cell = row.trim_end_matches('|').rsplit('|').next().unwrap();
        for ex in cell.split('`').skip(1).step_by(2) {
            parse_arg(ex).unwrap_or_else(|e| panic!("run.md example `{ex}`: {e}"));
            examples += 1;
        }
    }
    assert!(examples >= 20, "found {examples} examples");

    // The worked example binds against the sample kernel and gives the printed line.
    let kernel = block_after(&doc, "A worked example").join("\n");
    let cmd = doc
        .lines()
        .find_map(|l| l.strip_prefix("$ spmdc run saxpy.spmd"))
        .unwrap();
    let args: Vec<String> = cmd
        .split(" --arg ")
        .skip(1)
        .map(|a| a.split(" --print").next().unwrap().to_string())
        .collect();
    assert_eq!(args.len(), 4, "{cmd}");
    let r = front(&kernel);
    let c = r.checked.as_ref().unwrap();
    let l = launch::prepare(c, &r.interner, &request("saxpy", &args, None, None)).unwrap();
    // y = a*x + y, computed here since no target runs yet.
    let a = l.arg("a").unwrap().as_scalar().unwrap().as_f64() as f32;
    let x = l
        .arg("x")
        .unwrap()
        .as_buffer()
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let y = l
        .arg("y")
        .unwrap()
        .as_buffer()
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let out: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
    let printed = Buffer::from_slice(&out).format_print("y");
    assert!(
        doc.contains(&format!("{cmd}\n{printed}")),
        "run.md should show:\n{printed}"
    );

    // The error example is what the launcher prints.
    let e = parse_arg("x=rnage(1000)").unwrap_err();
    let shown = block_after(&doc, "## Errors").join("\n");
    assert_eq!(format!("error: {e}"), shown);

    // The multi-line --print sample is the real format.
    let sample = block_after(&doc, "printed one line per 16 values").join("\n");
    let b = Buffer::from_slice(&(0..20).collect::<Vec<i32>>());
    assert_eq!(b.format_print("y").trim_end(), sample);
}

// ---------------------------------------------------------------- robustness

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    /// Text built from the SPEC alphabet, so that most inputs get deep into the parser.
    fn spec_text() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "s_i32",
            "b_f32",
            "b_u8",
            "b_bool",
            "s_f64",
            "=",
            "(",
            ")",
            ",",
            " ",
            "-",
            "+",
            ".",
            "e",
            "0",
            "1",
            "9",
            "0x",
            "255",
            "1e40",
            "zeros",
            "fill",
            "range",
            "random",
            "true",
            "inf",
            "NaN",
            "@",
            "é",
            "18446744073709551616",
            "300000000",
        ]);
        prop::collection::vec(pieces, 0..12).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn parsing_and_materializing(text in spec_text()) {
            let sig = all_sig();
            match parse_arg(&text) {
                Err(e) => {
                    prop_assert_eq!(e.kind, ErrorKind::Syntax);
                    let _ = e.to_string();
                }
                Ok(a) => {
                    if let Some(p) = sig.param(&a.name) {
                        if let Err(e) = launch::materialize(p, &a) {
                            let _ = e.to_string();
                        }
                    }
                }
            }
        }

        #[test]
        fn arbitrary_text(text in ".{0,40}") {
            if let Err(e) = parse_arg(&text) {
                let _ = e.to_string();
            }
        }
    }
}
