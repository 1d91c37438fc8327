//! The capture wrapper: a C file defining `__wrap_F` for each captured export `F`.
//! Linked with `-Wl,--wrap=F`, the unchanged host program calls it instead of ISPC's
//! `F`; on the first call only it writes, into the directory `$SPMDC_CAPTURE_DIR`,
//! every argument (`F.in.NAME.bin`: a scalar's bytes, or a buffer's bytes for the
//! length the manifest gives), calls ISPC's `F` (`__real_F`), writes every buffer the
//! function may change and the returned value (`F.out.NAME.bin`, `F.out.return.bin`),
//! and last an empty `F.done`. All files are raw little-endian, as the host has them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::launch::{ElemType, KernelSignature, ParamKind};

/// The environment variable naming the capture directory.
pub const CAPTURE_ENV: &str = "SPMDC_CAPTURE_DIR";

/// The C type of a scalar or buffer element as the host passes it.
fn c_type(t: ElemType) -> &'static str {
    match t {
        ElemType::Bool => "bool",
        ElemType::I8 => "int8_t",
        ElemType::U8 => "uint8_t",
        ElemType::I16 => "int16_t",
        ElemType::U16 => "uint16_t",
        ElemType::I32 => "int32_t",
        ElemType::U32 => "uint32_t",
        ElemType::I64 => "int64_t",
        ElemType::U64 => "uint64_t",
        ElemType::F32 => "float",
        ElemType::F64 => "double",
    }
}

/// Bytes of one element of a buffer parameter.
fn elem_size(kind: ParamKind) -> usize {
    match kind {
        ParamKind::Scalar(t) | ParamKind::Buffer { elem: t, .. } => t.size(),
        ParamKind::Records { size, .. } => size as usize,
    }
}

/// Checks a length expression against the function's parameters and turns it into C:
/// identifiers must name parameters (or be `alloc`, whose one argument must name a
/// pointer parameter); only numbers, `+ - * / %`, parentheses and `[ ]` are allowed.
pub fn length_to_c(expr: &str, sig: &KernelSignature) -> Result<String, String> {
    let bad = |why: String| Err(format!("length `{expr}`: {why}"));
    let mut out = String::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    let mut any = false;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        any = true;
        if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let digits: String = chars[start..i].iter().collect();
            if i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '.') {
                return bad(format!("`{digits}{}` is not a whole number", chars[i]));
            }
            write!(out, "{digits}").unwrap();
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let ident: String = chars[start..i].iter().collect();
            if ident == "alloc" {
                let rest: String = chars[i..].iter().collect();
                let Some(inner) = rest.trim_start().strip_prefix('(') else {
                    return bad("`alloc` takes one pointer parameter: `alloc(p)`".into());
                };
                let Some(close) = inner.find(')') else {
                    return bad("`alloc(` is not closed".into());
                };
                let name = inner[..close].trim();
                match sig.param(name) {
                    Some(p) if p.is_buffer() => write!(
                        out,
                        "spmdc_alloc_elems((const void *){name}, {})",
                        elem_size(p.kind)
                    )
                    .unwrap(),
                    _ => {
                        return bad(format!(
                            "`alloc({name})`: `{name}` is not a pointer parameter of `{}`",
                            sig.name
                        ))
                    }
                }
                let consumed = rest.len() - inner.len() + close + 1;
                i += rest[..consumed].chars().count();
                continue;
            }
            if sig.param(&ident).is_none() {
                let names: Vec<&str> = sig.params.iter().map(|p| p.name.as_str()).collect();
                return bad(format!(
                    "`{ident}` is not a parameter of `{}` (its parameters: {})",
                    sig.name,
                    names.join(", ")
                ));
            }
            out.push_str(&ident);
            continue;
        }
        if "+-*/%()[]".contains(c) {
            out.push(c);
            i += 1;
            continue;
        }
        return bad(format!(
            "`{c}` is not allowed (numbers, parameters, + - * / % ( ) [ ] and alloc(p))"
        ));
    }
    if !any {
        return bad("empty".into());
    }
    Ok(out)
}

/// One function to wrap: its signature and the length of each pointer parameter.
pub struct Wrapped<'a> {
    pub sig: &'a KernelSignature,
    pub lengths: &'a BTreeMap<String, String>,
}

/// The wrapper C source for `functions`, or what is wrong with a length (a missing
/// one, one for a parameter that is not a pointer, a bad expression).
pub fn wrapper_c(functions: &[Wrapped<'_>]) -> Result<String, String> {
    let mut c = String::from(PRELUDE);
    for w in functions {
        let sig = w.sig;
        for name in w.lengths.keys() {
            match sig.param(name) {
                Some(p) if p.is_buffer() => {}
                Some(_) => {
                    return Err(format!(
                        "`{}`: `{name}` has a length but is not a pointer parameter",
                        sig.name
                    ))
                }
                None => {
                    return Err(format!(
                        "`{}`: `{name}` has a length but is not a parameter",
                        sig.name
                    ))
                }
            }
        }
        let ret = sig.ret.map_or("void", c_type);
        let params: Vec<String> = sig
            .params
            .iter()
            .map(|p| match p.kind {
                ParamKind::Scalar(t) => format!("{} {}", c_type(t), p.name),
                ParamKind::Buffer { elem, read_only } => format!(
                    "{}{} *{}",
                    if read_only { "const " } else { "" },
                    c_type(elem),
                    p.name
                ),
                ParamKind::Records { read_only, .. } => {
                    format!("{}void *{}", if read_only { "const " } else { "" }, p.name)
                }
            })
            .collect();
        let params = if params.is_empty() {
            "void".to_string()
        } else {
            params.join(", ")
        };
        let call_args: Vec<&str> = sig.params.iter().map(|p| p.name.as_str()).collect();
        let call = format!("__real_{}({})", sig.name, call_args.join(", "));
        let f = &sig.name;
        writeln!(c, "\n{ret} __real_{f}({params});").unwrap();
        writeln!(c, "{ret} __wrap_{f}({params}) {{").unwrap();
        writeln!(c, "    static int spmdc_seen = 0;").unwrap();
        if sig.ret.is_some() {
            writeln!(c, "    if (spmdc_seen++) return {call};").unwrap();
        } else {
            writeln!(c, "    if (spmdc_seen++) {{ {call}; return; }}").unwrap();
        }
        for p in sig.params.iter().filter(|p| p.is_buffer()) {
            let expr = w
                .lengths
                .get(&p.name)
                .ok_or_else(|| format!("`{f}`: no length for pointer parameter `{}`", p.name))?;
            let expr = length_to_c(expr, sig).map_err(|e| format!("`{f}`, `{}`: {e}", p.name))?;
            writeln!(
                c,
                "    size_t spmdc_bytes_{} = (size_t)({expr}) * {};",
                p.name,
                elem_size(p.kind)
            )
            .unwrap();
        }
        for p in &sig.params {
            if p.is_buffer() {
                writeln!(
                    c,
                    "    spmdc_capture(\"{f}\", \"in\", \"{0}\", {0}, spmdc_bytes_{0});",
                    p.name
                )
                .unwrap();
            } else {
                writeln!(
                    c,
                    "    spmdc_capture(\"{f}\", \"in\", \"{0}\", &{0}, sizeof {0});",
                    p.name
                )
                .unwrap();
            }
        }
        match sig.ret {
            Some(t) => writeln!(c, "    {} spmdc_ret = {call};", c_type(t)).unwrap(),
            None => writeln!(c, "    {call};").unwrap(),
        }
        for p in sig.buffer_params().filter(|p| !p.kind.read_only()) {
            writeln!(
                c,
                "    spmdc_capture(\"{f}\", \"out\", \"{0}\", {0}, spmdc_bytes_{0});",
                p.name
            )
            .unwrap();
        }
        if sig.ret.is_some() {
            writeln!(
                c,
                "    spmdc_capture(\"{f}\", \"out\", \"return\", &spmdc_ret, sizeof spmdc_ret);"
            )
            .unwrap();
        }
        writeln!(c, "    spmdc_capture(\"{f}\", \"done\", \"\", \"\", 0);").unwrap();
        if sig.ret.is_some() {
            writeln!(c, "    return spmdc_ret;").unwrap();
        }
        writeln!(c, "}}").unwrap();
    }
    Ok(c)
}

const PRELUDE: &str = r#"/* Generated by `spmdc ispc-examples`: captures the first call of each wrapped
   export (linked with -Wl,--wrap=NAME) into $SPMDC_CAPTURE_DIR. */
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static size_t spmdc_alloc_elems(const void *p, size_t size) {
    return malloc_usable_size((void *)p) / size;
}

static void spmdc_capture(const char *fn, const char *part, const char *name,
                          const void *data, size_t bytes) {
    const char *dir = getenv("SPMDC_CAPTURE_DIR");
    char path[4096];
    if (!dir) dir = ".";
    if (name[0])
        snprintf(path, sizeof path, "%s/%s.%s.%s.bin", dir, fn, part, name);
    else
        snprintf(path, sizeof path, "%s/%s.%s", dir, fn, part);
    FILE *f = fopen(path, "wb");
    if (!f || (bytes && fwrite(data, 1, bytes, f) != bytes) || fclose(f) != 0) {
        fprintf(stderr, "spmdc capture: cannot write %s\n", path);
        exit(97);
    }
}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ispc_examples::replay::{self, Target};

    /// The signature of `name` in `source`, as the runner reads it.
    pub(crate) fn signature_in(source: &str, name: &str) -> KernelSignature {
        // A directory of each call's own: tests running at once ask for the same name.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "spmdc-wrapper-test-{}-{name}-{call}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("k.ispc");
        std::fs::write(&file, source).unwrap();
        let front = replay::compile(&file, Target::Interp(16)).unwrap();
        let sig = replay::signature(&front, name).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        sig
    }

    const KERNEL: &str = "\
struct P { float x, y; int id; };
export uniform double scale(uniform float a, uniform int n, const uniform float x[],
                            uniform float y[], uniform P pts[]) {
    foreach (i = 0 ... n) { y[i] = a * x[i]; }
    return 1.0d;
}
";

    fn lengths(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn wraps_a_function_with_scalars_buffers_records_and_a_result() {
        let sig = signature_in(KERNEL, "scale");
        let lengths = lengths(&[("x", "n"), ("y", "n * 2"), ("pts", "alloc(pts)")]);
        let c = wrapper_c(&[Wrapped {
            sig: &sig,
            lengths: &lengths,
        }])
        .unwrap();
        let body = c.strip_prefix(PRELUDE).unwrap();
        assert_eq!(
            body,
            r#"
double __real_scale(float a, int32_t n, const float *x, float *y, void *pts);
double __wrap_scale(float a, int32_t n, const float *x, float *y, void *pts) {
    static int spmdc_seen = 0;
    if (spmdc_seen++) return __real_scale(a, n, x, y, pts);
    size_t spmdc_bytes_x = (size_t)(n) * 4;
    size_t spmdc_bytes_y = (size_t)(n*2) * 4;
    size_t spmdc_bytes_pts = (size_t)(spmdc_alloc_elems((const void *)pts, 12)) * 12;
    spmdc_capture("scale", "in", "a", &a, sizeof a);
    spmdc_capture("scale", "in", "n", &n, sizeof n);
    spmdc_capture("scale", "in", "x", x, spmdc_bytes_x);
    spmdc_capture("scale", "in", "y", y, spmdc_bytes_y);
    spmdc_capture("scale", "in", "pts", pts, spmdc_bytes_pts);
    double spmdc_ret = __real_scale(a, n, x, y, pts);
    spmdc_capture("scale", "out", "y", y, spmdc_bytes_y);
    spmdc_capture("scale", "out", "pts", pts, spmdc_bytes_pts);
    spmdc_capture("scale", "out", "return", &spmdc_ret, sizeof spmdc_ret);
    spmdc_capture("scale", "done", "", "", 0);
    return spmdc_ret;
}
"#
        );
    }

    #[test]
    fn a_void_function_passes_later_calls_through() {
        let sig = signature_in(
            "export void clear(uniform int n, uniform int a[]) { foreach (i = 0 ... n) a[i] = 0; }",
            "clear",
        );
        let c = wrapper_c(&[Wrapped {
            sig: &sig,
            lengths: &lengths(&[("a", "n")]),
        }])
        .unwrap();
        assert!(c.contains("    if (spmdc_seen++) { __real_clear(n, a); return; }\n"));
        assert!(c.contains("    __real_clear(n, a);\n    spmdc_capture(\"clear\", \"out\", \"a\", a, spmdc_bytes_a);\n"));
    }

    #[test]
    fn length_expressions_name_parameters_only() {
        let sig = signature_in(KERNEL, "scale");
        assert_eq!(length_to_c("n*n + (n % 3)", &sig).unwrap(), "n*n+(n%3)");
        assert_eq!(length_to_c("16", &sig).unwrap(), "16");
        assert_eq!(length_to_c("x[0]", &sig).unwrap(), "x[0]");
        let e = length_to_c("width*n", &sig).unwrap_err();
        assert!(e.contains("`width` is not a parameter of `scale`"), "{e}");
        assert!(e.contains("a, n, x, y, pts"), "{e}");
        let e = length_to_c("n; system(\"x\")", &sig).unwrap_err();
        assert!(e.contains("`;` is not allowed"), "{e}");
        assert!(length_to_c("alloc(n)", &sig)
            .unwrap_err()
            .contains("not a pointer"));
        assert!(length_to_c("2.5", &sig)
            .unwrap_err()
            .contains("whole number"));
        assert!(length_to_c("  ", &sig).unwrap_err().contains("empty"));
    }

    #[test]
    fn every_pointer_needs_a_length_and_only_pointers_have_one() {
        let sig = signature_in(KERNEL, "scale");
        let err = |pairs: &[(&str, &str)]| {
            wrapper_c(&[Wrapped {
                sig: &sig,
                lengths: &lengths(pairs),
            }])
            .unwrap_err()
        };
        let e = err(&[("x", "n"), ("y", "n")]);
        assert!(e.contains("no length for pointer parameter `pts`"), "{e}");
        let e = err(&[("x", "n"), ("y", "n"), ("pts", "1"), ("n", "1")]);
        assert!(e.contains("`n` has a length but is not a pointer"), "{e}");
        let e = err(&[("x", "n"), ("y", "n"), ("pts", "1"), ("z", "1")]);
        assert!(e.contains("`z` has a length but is not a parameter"), "{e}");
    }
}
