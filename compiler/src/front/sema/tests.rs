//! Unit tests of semantic analysis, from source text through the real preprocessor and
//! parser, with the real stdlib in front.

use super::*;
use crate::diag::{codes, Severity};
use crate::front::{ast, parse, preprocess};

/// Preprocesses, parses and checks `src` after the stdlib. Panics on syntax errors, so
/// the tests exercise sema only.
fn check_src(src: &str) -> (Checked, Vec<Diagnostic>, Interner) {
    let (c, mut d, i) = check_src_all(src);
    // Most tests declare variables they never read; W0002 has its own test.
    d.retain(|d| d.code != codes::UNUSED_VARIABLE);
    (c, d, i)
}

/// A parsed program: the stdlib (unless `with_stdlib` is false) and one user file.
struct Parsed {
    sources: SourceMap,
    interner: Interner,
    unit: ast::TranslationUnit,
    /// Preprocessor and parser diagnostics.
    diags: Vec<Diagnostic>,
    stdlib: FileId,
}

/// Preprocesses and parses `src` (named `name`) after the stdlib.
fn parse_src(name: &str, src: String, with_stdlib: bool) -> Parsed {
    let mut sources = SourceMap::new();
    let mut interner = Interner::new();
    let mut files = Vec::new();
    let mut stdlib = FileId(u32::MAX);
    if with_stdlib {
        stdlib = sources.add(
            crate::front::STDLIB_NAME,
            None,
            crate::front::STDLIB_SOURCE.to_string(),
        );
        files.push(stdlib);
    }
    files.push(sources.add(name, None, src));
    let mut diags = Vec::new();
    let opts = preprocess::Options {
        include_dirs: &[],
        defines: &[],
        predefined: &[],
    };
    let pp = preprocess::preprocess(&mut sources, &mut interner, &files, &opts, &mut diags);
    let unit = parse::parse(&pp.tokens, &sources, &mut diags);
    Parsed {
        sources,
        interner,
        unit,
        diags,
        stdlib,
    }
}

/// [`check_src`] keeping every diagnostic.
fn check_src_all(src: &str) -> (Checked, Vec<Diagnostic>, Interner) {
    let p = parse_src("test.spmd", src.to_string(), true);
    let syntax: Vec<String> = p
        .diags
        .iter()
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect();
    assert!(
        syntax.is_empty(),
        "syntax errors in test source: {syntax:?}"
    );
    let (checked, diags) = check(&p.unit, &p.interner, &p.sources, p.stdlib);
    (checked, diags, p.interner)
}

/// The codes sema reports for `src`, in order.
fn code_list(src: &str) -> Vec<&'static str> {
    let (_, diags, _) = check_src(src);
    diags.iter().map(|d| d.code.as_str()).collect()
}

/// Asserts that `src` checks cleanly (no errors, no warnings).
#[track_caller]
fn ok(src: &str) {
    let (_, diags, _) = check_src(src);
    let shown: Vec<String> = diags
        .iter()
        .map(|d| {
            format!(
                "{} {}: {} {:?}",
                d.severity.as_str(),
                d.code,
                d.message,
                d.primary
            )
        })
        .collect();
    assert!(diags.is_empty(), "unexpected diagnostics: {shown:#?}");
}

/// Asserts that `src` gives exactly the diagnostic codes `want`.
#[track_caller]
fn expect(src: &str, want: &[&str]) {
    let (_, diags, _) = check_src(src);
    let got: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
    let shown: Vec<String> = diags
        .iter()
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect();
    assert_eq!(got, want, "diagnostics: {shown:#?}");
}

/// Like [`expect`], including W0002.
#[track_caller]
fn expect_all(src: &str, want: &[&str]) {
    let (_, diags, _) = check_src_all(src);
    let got: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(got, want);
}

/// Every diagnostic has a primary span with a label.
#[track_caller]
fn well_formed(src: &str) {
    let (_, diags, _) = check_src(src);
    for d in &diags {
        let p = d.primary.as_ref().expect("primary label");
        assert!(!p.message.is_empty(), "{}: empty primary label", d.code);
    }
}

// ------------------------------------------------------------ valid programs

#[test]
fn stdlib_alone_checks_cleanly() {
    ok("");
}

#[test]
fn saxpy_foreach_and_grid() {
    ok(r#"
export void saxpy(uniform int n, uniform float a, uniform float x[], uniform float y[]) {
    foreach (i = 0 ... n) {
        y[i] = a * x[i] + y[i];
    }
}
task void saxpy_grid(uniform int n, uniform float a, uniform float x[], uniform float y[]) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
"#);
}

#[test]
fn spec_examples_check_cleanly() {
    ok(r#"
struct Particle { float x, y; uniform int kind; };
struct Pixel { uniform int x, y; float value; };
struct Range { uniform int lo, hi; };
typedef uniform float * uniform Buffer;
typedef float Vec3[3];
enum Axis { AXIS_X, AXIS_Y, AXIS_Z };
const uniform int N = 16;
uniform int counter_base = 100;

export void structs(uniform float out[]) {
    uniform Particle u;
    Particle v;
    u.x = 1; u.y = 2; u.kind = 0;
    v.x = programIndex; v.y = u.y; v.kind = 1;
    out[programIndex] = v.x + v.y + u.x + u.kind + v.kind;
}
export void initializers(uniform float out[]) {
    uniform int primes[] = { 2, 3, 5, 7, 11 };
    uniform float m[2][3] = { { 1, 2, 3 }, { 4, 5, 6 } };
    uniform Pixel p = { 1, 2, 0.5 };
    Pixel q = { 3, 4, programIndex };
    out[programIndex] = primes[4] + m[1][2] + p.value + q.value;
}
export void consts(uniform float out[]) {
    uniform float tmp[N * 2];
    for (uniform int i = 0; i < N * 2; i++) {
        tmp[i] = i;
    }
    out[0] = tmp[N];
}
export void typedefs(Buffer out) {
    Vec3 v = { 1, 2, 3 };
    Axis a = AXIS_Z;
    out[programIndex] = v[(int)a] + (int)AXIS_Y;
}
export void scopes(uniform int out[]) {
    uniform int x = 1;
    {
        uniform int x = 2;
        out[0] = x;
    }
    for (uniform int i = 0; i < 2; i++) {
        out[1 + i] = x + i;
    }
    out[3] = counter_base;
}
export void pointers(uniform float data[], uniform int n) {
    uniform float * uniform first = &data[0];
    *first = 0;
    uniform float * uniform last = data + (n - 1);
    *last = 1;
    foreach (i = 0 ... n) {
        uniform float * p = &data[i];
        *p = *p * 2;
    }
}
export void expressions(uniform int out[], uniform Range * uniform r) {
    uniform int n = r->hi - r->lo;
    int i = programIndex;
    int v = (i < n) ? i * 2 + 1 : -1;
    v += (i & 1) == 0 ? 10 : 0;
    uniform int bytes = (uniform int)sizeof(uniform float);
    out[programIndex] = v << 1;
    out[programCount + programIndex] = (i, bytes);
}
"#);
}

#[test]
fn spec_statement_examples_check_cleanly() {
    ok(r#"
export void classify(uniform int out[], uniform int values[]) {
    foreach (i = 0 ... 64) {
        int kind;
        switch (values[i] & 3) {
        case 0:
            kind = 10;
            break;
        case 1:
        case 2:
            kind = 20;
            break;
        default:
            kind = 30;
        }
        out[i] = kind;
    }
}
export void histogram(uniform int counts[], uniform int keys[], uniform int n) {
    foreach (i = 0 ... n) {
        int bucket = keys[i] & 15;
        foreach_active (lane) {
            uniform int b = extract(bucket, lane);
            counts[b] = counts[b] + 1;
        }
    }
}
export void per_material(uniform float out[], uniform int material[], uniform float scale[]) {
    foreach (i = 0 ... 32) {
        int m = material[i];
        foreach_unique (mat in m) {
            uniform float s = scale[mat];
            out[i] = s * i;
        }
    }
}
export void gang_sum_rows(uniform float rows[], uniform float sums[], uniform int nrows, uniform int ncols) {
    foreach (r = 0 ... nrows) {
        foreach_active (lane) {
            unmasked {
                uniform int row = extract(r, lane);
                float partial = 0;
                for (uniform int c0 = 0; c0 < ncols; c0 += programCount) {
                    int c = c0 + programIndex;
                    if (c < ncols) {
                        partial += rows[row * ncols + c];
                    }
                }
                sums[row] = reduce_add(partial);
            }
        }
    }
}
task void reverse_blocks(uniform int data[]) {
    shared int tile[256];
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    if (t < 256) {
        tile[t] = data[base + t];
    }
    barrier();
    if (t < 256) {
        data[base + t] = tile[blockDim.x - 1 - t];
    }
}
"#);
}

#[test]
fn functions_prototypes_recursion_and_overloads() {
    ok(r#"
int gcd(int a, int b);
int gcd(int a, int b) {
    if (a == 0)
        return b;
    else
        return gcd(b % a, a);
}
float twice(float x) { return x * 2; }
uniform float twice(uniform float x) { return x * 2; }
static inline uniform int sq(uniform int x) { return x * x; }
export void k(uniform float out[], uniform int n) {
    uniform float u = twice(1.0f);
    float v = twice(programIndex);
    out[programIndex] = u + v + gcd(programIndex, 6) + sq(n);
}
"#);
}

#[test]
fn loops_that_never_end_need_no_return() {
    ok(r#"
uniform int f(uniform int x) {
    while (true) {
        if (x > 3) return x;
        x++;
    }
}
uniform int g(uniform int x) {
    for (;;) { return x; }
}
uniform int h(uniform int x) {
    switch (x) {
    case 0: return 1;
    default: return 2;
    }
}
uniform int k(uniform int x) {
    if (x) { return 1; } else { return 2; }
}
"#);
}

// ------------------------------------------------------------ the checked tables

/// The local `name` of the user's program (not of a stdlib function body).
fn find_local<'a>(c: &'a Checked, i: &Interner, name: &str) -> &'a LocalVar {
    c.locals
        .values()
        .find(|l| i.resolve(l.name) == name && !c.funcs[l.func].from_stdlib)
        .unwrap_or_else(|| panic!("no local {name}"))
}

#[test]
fn pointer_and_struct_variability() {
    let (c, d, i) = check_src(
        r#"
struct S { float a; uniform int b; varying float c; };
void f() {
    float * p1;
    uniform float * uniform p2;
    varying float * uniform p3;
    uniform S us;
    S vs;
    uniform float a1 = us.a;
    float a2 = vs.a;
    uniform int b2 = vs.b;
    float c1 = us.c;
    uniform float fl = (float)a1;
}
"#,
    );
    assert!(d.is_empty(), "{d:?}");
    let show = |n: &str| c.types.display(find_local(&c, &i, n).ty, &i);
    assert_eq!(show("p1"), "uniform float * varying");
    assert_eq!(show("p2"), "uniform float * uniform");
    assert_eq!(show("p3"), "varying float * uniform");
    assert_eq!(show("us"), "uniform struct S");
    assert_eq!(show("vs"), "varying struct S");
}

#[test]
fn array_params_decay_to_uniform_pointers() {
    let (c, d, i) = check_src("void f(uniform float a[], float b[4]) {}");
    assert!(d.is_empty(), "{d:?}");
    let f = c.funcs.values().find(|f| i.resolve(f.name) == "f").unwrap();
    let tys: Vec<String> = f.params.iter().map(|p| c.types.display(p.ty, &i)).collect();
    assert_eq!(tys, ["uniform float * uniform", "varying float * uniform"]);
}

#[test]
fn literal_types_and_constants() {
    let (c, d, i) = check_src(
        r#"
enum E { A, B = 10, C };
void f() {
    uniform float x = 1.5;
    uniform double y = 1.5d;
    uniform int64 big = 3000000000;
    uniform uint32 u = 7u;
    uniform int arr[C + programCount];
    uniform uint64 s = sizeof(uniform int[4]);
    uniform uint64 vs = sizeof(float);
}
"#,
    );
    assert!(d.is_empty(), "{d:?}");
    let arr = find_local(&c, &i, "arr").ty;
    assert_eq!(c.types.display(arr, &i), "uniform int[27]");
    let e = c.types.enums.values().next().unwrap();
    assert_eq!(
        e.variants.iter().map(|v| v.1).collect::<Vec<_>>(),
        [0, 10, 11]
    );
    let sizes: Vec<i128> = c.consts.values().filter_map(|v| v.as_int()).collect();
    assert!(
        sizes.contains(&16),
        "sizeof(uniform int[4]) = 16: {sizes:?}"
    );
    assert!(
        sizes.contains(&64),
        "sizeof(float) = 4 * 16 lanes: {sizes:?}"
    );
}

#[test]
fn struct_layouts() {
    let (c, d, i) = check_src("struct S { uniform int8 a; uniform double b; float c; };");
    assert!(d.is_empty(), "{d:?}");
    let s = c
        .types
        .structs
        .values()
        .find(|s| i.resolve(s.name) == "S")
        .unwrap();
    let u = s.layout(Variability::Uniform);
    assert_eq!(u.offsets, [0, 8, 16]);
    assert_eq!(u.size, 24);
    let v = s.layout(Variability::Varying);
    // A varying float is a 64-byte vector, aligned as one.
    assert_eq!(v.offsets[2], 64);
    assert_eq!(v.size, 128);
}

#[test]
fn resolution_and_conversions_are_recorded() {
    let src =
        "export void f(uniform float out[]) { float v = programIndex; out[programIndex] = v; }";
    let (c, d, _) = check_src(src);
    assert!(d.is_empty(), "{d:?}");
    let pi: Vec<usize> = (0..c.expr_res.len())
        .filter(|&k| c.expr_res[k] == Res::BuiltinVar(BuiltinVar::ProgramIndex))
        .collect();
    assert_eq!(pi.len(), 2);
    // `float v = programIndex`: varying int converted to varying float.
    let steps = c.conversion(ExprId(pi[0] as u32));
    assert_eq!(
        steps,
        [ConvStep::Numeric {
            from: Prim::Int32,
            to: Prim::Float
        }]
    );
    let user_defined = c.defined_funcs().filter(|(_, f)| !f.from_stdlib);
    assert_eq!(user_defined.count(), 1);
}

// ------------------------------------------------------------ names and declarations

#[test]
fn undeclared_name_suggests() {
    let (_, d, _) = check_src("void f() { int progress = 1; int y = progres + programIndx; }");
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].code, codes::UNDECLARED_NAME);
    assert_eq!(d[0].help, ["did you mean `progress`?"]);
    assert_eq!(d[1].help, ["did you mean `programIndex`?"]);
}

#[test]
fn redefinitions() {
    expect("void f() { int x; float x; }", &["E0201"]);
    expect("void f(int a) { int a; }", &["E0201"]);
    expect("void f() { int x; { int x; } }", &[]);
    expect("uniform int g; uniform float g;", &["E0201"]);
    expect("struct S { int a; float a; };", &["E0201"]);
    expect("uniform int programIndex;", &["E0201"]);
}

#[test]
fn unknown_type_and_incomplete_struct() {
    expect("struct S { struct T t; };", &["E0202"]);
    expect("uniform S s; struct S { int a; };", &["E0212"]);
    expect("struct S { S s; };", &["E0212"]);
    expect("struct N { N * next; uniform int v; };", &[]);
    expect("void f() { struct Later * p; }", &[]);
}

#[test]
fn function_pointers() {
    let decls =
        "typedef float (*F)(float); float a(float x) { return x; } int b(int x) { return x; }";
    let ok = |body: &str| format!("{decls} void f() {{ {body} }}");
    expect(&ok("F p = a; float y = p(1); F q = &a; y = (*q)(y);"), &[]);
    expect(
        &ok("float (*uniform p)(float) = a; p = NULL; bool n = p == 0;"),
        &[],
    );
    expect(&ok("F p = b;"), &["E0300"]);
    expect(&ok("F p = a; p(1, 2);"), &["E0305"]);
    expect(&ok("F p = a; p + 1;"), &["E0301"]);
    expect(&ok("float y = 1; y(2);"), &["E0208"]);
    expect(
        &ok("uniform F p = programIndex == 0 ? a : NULL;"),
        &["E0400"],
    );
    // A task converts only to a pointer of a `task` type, which is only launched.
    expect(
        "task void t() {} typedef void (*T)(); void f() { T p = t; }",
        &["E0300"],
    );
    let tasks = "typedef task void (*T)(uniform int); task void t(uniform int n) {} \
                 void g(uniform int n) {}";
    let with = |body: &str| format!("{tasks} void f() {{ {body} }}");
    expect(
        &with("uniform T p = t; launch[2] p(1); launch[1, 2, 3] p(2);"),
        &[],
    );
    expect(
        &with("task void (*uniform p)(uniform int) = &t; launch p(1);"),
        &[],
    );
    expect(&with("uniform T p = g;"), &["E0300"]);
    expect(&with("uniform T p = t; p(1);"), &["E0517"]);
    expect(
        &with("void (*uniform p)(uniform int) = g; launch p(1);"),
        &["E0513"],
    );
    expect(&with("T p = t; launch p(1);"), &["E0408"]);
    expect("typedef task int (*T)(); void f() {}", &["E0505"]);
    expect("typedef task int I; void f() {}", &["E0104"]);
}

#[test]
fn calls() {
    expect("void f() { g(); }", &["E0203"]);
    expect("void f() { int x; x(); }", &["E0208"]);
    expect("void g(int a); void f() { g(1, 2); }", &["E0305"]);
    // A function's name is a function pointer, which does not convert to `int`.
    expect("void g(int a) {} void f() { int x = g; }", &["E0300"]);
    expect("void f() { int x = threadIdx; }", &["E0209"]);
    expect("void g(); void f() { g(); }", &["E0211"]);
    expect("extern void g(); void f() { g(); }", &["E0211"]);
    expect("void f() { g(); } void g() {}", &["E0203"]);
    expect("void g(); void f() { g(); } void g() {}", &[]);
    expect("void g() {} void g() {}", &["E0207"]);
    expect("int g(int a); float g(int a) { return 1; }", &["E0210"]);
}

#[test]
fn overload_resolution() {
    expect(
        "void m(int a, int b) {} void m(uint a, uint b) {} void f() { int i; uint u; m(i, u); }",
        &["E0205"],
    );
    expect(
        "struct S { int a; }; void m(int a) {} void m(float a) {} void f() { S s; m(s); }",
        &["E0204"],
    );
    // ISPC's least total cost: the second argument's constant converts cheaply, the
    // first's exact match decides, and the rival that takes the constant exactly is
    // reported (W0013).
    expect(
        "void m(float a, int b) {} void m(int a, float b) {} void f() { float x; m(x, 1.5); }",
        &["W0013", "W0005"],
    );
    expect(
        "void m(float a, int b) {} void m(int a, float b) {} void f() { float x; m((int)x, 1.5); }",
        &[],
    );
    // The uniform overload is an exact match for uniform arguments.
    let (c, d, i) = check_src(
        "uniform int m(uniform int a) { return a; } int m(int a) { return a; } void f() { uniform int u = m(1); int v = m(programIndex); }",
    );
    assert!(d.is_empty(), "{d:?}");
    let called: Vec<String> = c
        .expr_res
        .iter()
        .filter_map(|r| match r {
            Res::Func(f) if !c.funcs[*f].from_stdlib => Some(c.types.display(c.funcs[*f].ret, &i)),
            _ => None,
        })
        .collect();
    assert_eq!(called, ["uniform int", "varying int"]);
}

// ------------------------------------------------------------ types

#[test]
fn type_errors() {
    expect(
        "struct S { int a; }; void f() { S s; int x = s; }",
        &["E0300"],
    );
    expect(
        "struct S { int a; }; void f() { S s; int x = s + 1; }",
        &["E0301"],
    );
    expect("void f() { float x; float y = ~x; }", &["E0302"]);
    expect("void f() { 1 = 2; }", &["E0303"]);
    expect("void f() { const int c = 1; c = 2; }", &["E0304"]);
    expect("void f() { int x; int y = x[0]; }", &["E0306"]);
    expect("void f() { int x; int y = x.a; }", &["E0307"]);
    expect(
        "struct S { int a; }; void f() { S s; int y = (int)s; }",
        &["E0308"],
    );
    expect("void f() { uniform int n = 3; float a[n]; }", &["E0309"]);
    expect("void f() { float a[0]; }", &["E0309"]);
    expect("void f() { void x; }", &["E0310"]);
    expect(
        "struct S { int a; }; void f() { S s; if (s) {} }",
        &["E0311"],
    );
    expect("uniform int f() { return; }", &["E0312"]);
    expect("void f() { int x; int y = *x; }", &["E0313"]);
    expect("void f() { int * p = &(1 + 2); }", &["E0314"]);
    expect("uniform int g = 1; uniform int h = g;", &["E0315"]);
    // `programIndex` is constant per program instance; a call is not constant.
    expect(
        "int g = 1 + programIndex; void f() { static int s = programIndex; }",
        &[],
    );
    expect(
        "int lane() { return programIndex; } int g = lane();",
        &["E0315"],
    );
    expect(
        "void f(int x) { switch (x) { case 1: break; case 1: break; } }",
        &["E0316"],
    );
    expect("void f() { uniform int a[2] = { 1, 2, 3 }; }", &["E0317"]);
    expect("void f() { uniform float * uniform p; uniform float * uniform q; uniform float * uniform r = p + q; }", &["E0318"]);
    expect("void f() { int x = \"s\"; }", &["E0319"]);
    expect(
        "void f() { uniform int a[4]; uniform int * uniform p; uniform int b = a[p]; }",
        &["E0320"],
    );
    // A floating-point index converts to `int`, as in ISPC.
    expect(
        "void f() { uniform int a[4]; uniform int b = a[1.5]; }",
        &[],
    );
    expect(
        "struct S { int a; }; void f() { S s; varying S * uniform p = &s; int x = p.a; int y = s->a; }",
        &["E0321", "E0321"],
    );
    expect("void f() { uniform int a[2] = 5; }", &["E0322"]);
    expect("void f() { uniform float x = { 1, 2 }; }", &["E0322"]);
    // One expression in braces initializes a scalar, as in C and ISPC.
    expect("void f() { uniform float x = { 1 }; }", &[]);
    expect("void f() { uniform int x = 1 / 0; }", &["E0323"]);
    expect("void f() { print(\"% %\\n\", 1); }", &["E0324"]);
    expect(
        "struct S { int a; }; void f() { S s; s.b = 1; }",
        &["E0206"],
    );
    expect("enum E { A, B }; void f() { E e = 1; }", &["E0300"]);
    expect(
        "void f() { uniform float * uniform p; int8 * uniform q = p; }",
        &["E0300"],
    );
}

#[test]
fn allowed_conversions() {
    ok(r#"
enum E { A, B };
void f(uniform float * uniform p) {
    uniform int i = A;
    uniform float x = 2;
    float * v = p;
    void * vp = p;
    uniform float * uniform q = NULL;
    uniform float * uniform z = 0;
    uniform bool b = p == NULL;
    if (p) { x = 1; }
    uniform int64 d = q - p;
    uniform float * uniform r = p + 4;
    uniform int64 addr = (uniform int64)p;
    E e = (E)1;
}
"#);
}

#[test]
fn narrowing_warns() {
    expect("void f(float x) { int i = x; }", &["W0005"]);
    expect(
        "void f() { uniform int8 c = 5; uniform float f = 1.0d; }",
        &[],
    );
    expect("void f(double d) { float x = d; }", &["W0005"]);
}

// ------------------------------------------------------------ uniform / varying

#[test]
fn varying_into_uniform() {
    expect("void f() { uniform int x = programIndex; }", &["E0400"]);
    expect(
        "void f() { uniform int x; x = programIndex + 1; }",
        &["E0400"],
    );
    expect(
        "void f() { uniform float a[8]; uniform float x = a[programIndex]; }",
        &["E0401"],
    );
    expect("export void f(int n) {}", &["E0402"]);
    expect("export void f(float * uniform p) {}", &[]);
    // A uniform pointer to varying data is one address, as ISPC allows.
    expect("export void f(varying float * uniform p) {}", &[]);
    expect("export void f(varying float a[]) {}", &[]);
    expect("export void f(float * varying p) {}", &["E0402"]);
    expect("export float f() { return 1; }", &["E0403"]);
    expect("uniform int f() { return programIndex; }", &["E0404"]);
    expect("void f() { uniform varying int x; }", &["E0405"]);
    expect(
        "typedef uniform float UF; void f() { varying UF x; }",
        &["E0405"],
    );
    expect(
        "void f(uniform int a) {} void g() { f(programIndex); }",
        &["E0407"],
    );
    expect("void f(int n) { foreach (i = 0 ... n) {} }", &["E0408"]);
    expect(
        "void f(uniform float * uniform p) { *p = programIndex; }",
        &["E0409"],
    );
    expect("void f() { float a[programIndex]; }", &["E0410"]);
    expect(
        "void f() { uniform int x = (uniform int)programIndex; }",
        &["E0308"],
    );
}

#[test]
fn varying_index_and_scatter_are_fine() {
    ok(r#"
void f(uniform float a[], uniform float * uniform p, float * vp) {
    a[programIndex] = programIndex;
    p[programIndex] = 1;
    *vp = programIndex;
    float x = a[programIndex];
    uniform float y = a[0];
}
"#);
}

#[test]
fn bound_uniform_member_with_varying_index() {
    expect(
        "struct Foo { uniform int a; }; void f(uniform Foo fs[]) { Foo v = fs[programIndex]; }",
        &["E0401"],
    );
    expect(
        "struct Foo { int a; }; void f(uniform Foo fs[]) { Foo v = fs[programIndex]; }",
        &[],
    );
    // One member read or written through the varying index gathers or scatters.
    expect(
        "struct Foo { uniform int a; }; void f(uniform Foo fs[]) { int v = fs[programIndex].a; fs[programIndex].a = v; }",
        &[],
    );
    expect(
        "struct In { uniform int a; }; struct Foo { In i; }; void f(uniform Foo fs[]) { int v = fs[programIndex].i.a; }",
        &[],
    );
    expect(
        "struct In { uniform int a; }; struct Foo { In i; }; void f(uniform Foo * uniform p) { int v = p[programIndex].i.a; }",
        &[],
    );
    // The member is varying: it cannot be stored in a uniform.
    expect(
        "struct Foo { uniform int a; }; void f(uniform Foo fs[]) { uniform int v = fs[programIndex].a; }",
        &["E0401"],
    );
}

#[test]
fn shared_rules() {
    expect("shared float tile[64];", &[]);
    expect("void f() { shared float tile[64]; }", &["E0406"]);
    expect(
        "export void f() { shared varying float tile[64]; }",
        &["E0406"],
    );
    expect(
        "export void f() { shared float tile[2] = { 1, 2 }; }",
        &["E0406"],
    );
    // One unsized `shared` array: the launch's dynamic shared memory.
    expect("shared float dyn[];", &[]);
    expect(
        "task void k() { shared int tile[]; tile[threadIdx.x] = 1; }",
        &[],
    );
    expect(
        "shared float a[]; task void k() { shared int b[]; }",
        &["E0406"],
    );
    expect("void f() { shared float tile[]; }", &["E0406"]);
    // Other unsized arrays still need a size.
    expect("export void k() { uniform float a[]; }", &["E0309"]);
    let (c, d, i) = check_src("export void k() { shared float tile[64]; tile[programIndex] = 1; }");
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(
        c.types.display(find_local(&c, &i, "tile").ty, &i),
        "uniform float[64]"
    );
}

#[test]
fn uniform_store_under_varying_control_warns() {
    expect(
        "void f() { uniform int b = 0; if (programIndex == 0) { b = 10; } }",
        &["W0004"],
    );
    expect(
        "void f() { uniform int b = 0; if (b == 0) { b = 10; } }",
        &[],
    );
    expect(
        "void f() { if (programIndex == 0) { uniform int t = 0; t = 1; } }",
        &[],
    );
    expect(
        "void f(uniform int a[]) { if (programIndex == 0) { a[0] = 1; } }",
        &[],
    );
}

// ------------------------------------------------------------ control flow

#[test]
fn jumps() {
    expect("void f() { break; }", &["E0500"]);
    expect("void f() { continue; }", &["E0501"]);
    expect(
        "void f(uniform int n) { foreach (i = 0 ... n) { break; } }",
        &["E0502"],
    );
    expect(
        "void f(uniform int n) { foreach (i = 0 ... n) { continue; } }",
        &[],
    );
    expect(
        "void f(uniform int n) { foreach (i = 0 ... n) { for (uniform int j = 0; j < 2; j++) { break; } } }",
        &[],
    );
    expect(
        "void f(uniform int n) { foreach (i = 0 ... n) { return; } }",
        &["E0503"],
    );
    expect("void f() { foreach_active (l) { break; } }", &["E0502"]);
    expect(
        "void f() { foreach_unique (v in programIndex) { return; } }",
        &["E0503"],
    );
    expect(
        "void f(int x) { switch (x) { default: break; default: break; } }",
        &["E0504"],
    );
    expect("task int f() { return 1; }", &["E0505"]);
    expect(
        "uniform int f(uniform int x) { if (x) return 1; }",
        &["W0012"],
    );
    expect(
        "void f(uniform int n) { foreach (i = 0 ... n) { foreach (j = 0 ... n) {} } }",
        &["E0509"],
    );
    expect("export task void f() {}", &["E0508"]);
}

#[test]
fn barrier_rules() {
    expect("export void f() { barrier(); }", &[]);
    expect(
        "export void f() { if (threadIdx.x < 4) { barrier(); } }",
        &["E0507"],
    );
    expect(
        "export void f(uniform int n) { if (n < 4) { barrier(); } }",
        &[],
    );
    expect(
        "export void f() { for (int i = 0; i < threadIdx.x; i++) { barrier(); } }",
        &["E0507"],
    );
    expect(
        "export void f() { if (threadIdx.x == 0) { return; } barrier(); }",
        &["E0507"],
    );
    expect(
        "export void f() { if (threadIdx.x == 0) { unmasked { barrier(); } } }",
        &[],
    );
    expect("export void f() { barrier(1); }", &["E0305"]);
    expect(
        "void wait_all() { barrier(); } void g() { wait_all(); } export void f() { if (threadIdx.x < 2) { g(); } g(); }",
        &["E0507"],
    );
    expect(
        "export void f(uniform int n) { foreach (i = 0 ... n) { barrier(); } }",
        &["E0507"],
    );
}

#[test]
fn coherent_hint_on_uniform_condition() {
    expect("void f(uniform int n) { cif (n > 0) {} }", &["W0003"]);
    expect("void f() { cif (programIndex > 0) {} }", &[]);
}

#[test]
fn print_format() {
    expect("void f() { print(\"a % b %\\n\", 1, programIndex); }", &[]);
    expect("void f() { print(\"%\\n\"); }", &["E0324"]);
    expect("void f() { int x; print(x); }", &["E0324"]);
}

// ------------------------------------------------------------ robustness

#[test]
fn errors_do_not_cascade() {
    // One undeclared name: one error, not a chain through the expression.
    expect(
        "void f() { uniform int x = (nope + 1) * 2; x = x + nope2; }",
        &["E0200", "E0200"],
    );
    expect("void f() { float y = nope.a[3]->b; }", &["E0200"]);
    expect(
        "uniform int g(uniform int a); void f() { uniform int x = g(nope); }",
        &["E0200"],
    );
}

#[test]
fn diagnostics_have_labels() {
    well_formed(
        r#"
struct S { int a; };
export void f(int n) {
    uniform int x = programIndex;
    S s; s.b = 1; break; g();
    foreach (i = 0 ... n) { return; }
}
"#,
    );
}

#[test]
fn deep_nesting_reports_instead_of_overflowing() {
    // A chain of additions is left-nested: `((1 + 1) + 1) + ...`.
    let depth = 5000;
    let mut src = String::from("void f() { uniform int x = 1");
    for _ in 0..depth {
        src.push_str(" + 1");
    }
    src.push_str("; }");
    // Run on a thread with the default test stack size to show sema's own recursion
    // stays bounded.
    let got = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || code_list(&src))
        .unwrap()
        .join();
    match got {
        Ok(c) => assert!(c.contains(&"E0325"), "{c:?}"),
        Err(_) => panic!("sema panicked on deep nesting"),
    }
}

#[test]
fn unused_and_unreachable() {
    // W0002
    expect_all("void f() { uniform int x = 1; }", &["W0002"]);
    expect_all("void f() { uniform int x; x = 1; }", &["W0002"]);
    expect_all("void f() { uniform int x; x += 1; uniform int _y; }", &[]);
    expect_all(
        "void f(uniform int p) { uniform int x = 1; print(\"%\", x); }",
        &[],
    );
    // W0007
    expect("uniform int f() { return 1; return 2; }", &["W0007"]);
    expect("uniform int f(uniform int x) { switch (x) { case 0: return 1; break; default: return 2; } }", &[]);
    expect("void f() { for (;;) { break; f(); } }", &["W0007"]);
}

#[test]
fn no_cascades_after_syntax_errors() {
    let src = "export void f(uniform float d[]) { uniform float x = d[0] d[1]; d[2] = x; }";
    let p = parse_src("t.spmd", src.to_string(), false);
    let (sources, interner, unit, diags) = (p.sources, p.interner, p.unit, p.diags);
    assert!(
        !diags.is_empty(),
        "the parser should report the missing operator"
    );
    let (_, sd) = check(&unit, &interner, &sources, FileId(99));
    assert!(sd.is_empty(), "{sd:?}");
}

#[test]
fn warnings_are_warnings() {
    let (_, d, _) = check_src("void f(float x) { int i = x; }");
    assert_eq!(d[0].severity, Severity::Warning);
}

#[test]
fn launch_rules() {
    let task = "task void t(uniform int a[]) { a[taskIndex] = taskCount; } ";
    let ok = |body: &str| {
        expect(
            &format!("{task}export void f(uniform int a[], uniform int8 n) {{ {body} }}"),
            &[],
        )
    };
    ok("launch t(a); sync;");
    ok("launch[n] t(a);");
    ok("launch[2, n] t(a); launch[n][2][3] t(a);");
    ok("if (programIndex < 2) { launch[4] t(a); }");
    let bad = |body: &str, codes: &[&str]| {
        expect(&format!("{task}void g(uniform int a[]) {{}} export void f(uniform int a[], uniform float x) {{ {body} }}"), codes)
    };
    bad("launch g(a);", &["E0513"]);
    bad("launch[programIndex] t(a);", &["E0514"]);
    bad("launch[x] t(a);", &["E0514"]);
    bad("launch[1, 2, 3, 4] t(a);", &["E0515"]);
    bad("launch t;", &["E0516"]);
    bad("t(a);", &["E0517"]);
    // Only the launched call itself may name the task.
    expect(
        "task void u(uniform int n) {} uniform int k(uniform int n) { return n; } \
         export void f() { launch u(k(1)); }",
        &[],
    );
    // A task may take varying parameters when it is launched from code.
    expect(
        "task void v(float x) {} export void f() { launch v(programIndex); }",
        &[],
    );
}
