//! Front-end throughput on generated 10,000-line sources:
//! `cargo bench -p spmdc --bench front`. Criterion reports lines per second (its
//! "elements") for lexing+preprocessing, lexing+parsing, and the whole front end including
//! semantic checks (with the standard library, as every compile has it).
//!
//! Two sources: `dense` is code only (about 9 tokens per line); `commented` is the same
//! code laid out as the repository's kernels are, with header comments and blank lines
//! (about 6 tokens per line, the density of `examples/` and `tests/ispc/`). The token
//! count of each is printed, so tokens per second follow from the figures.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

// The allocator the `spmdc` binary uses, so the figures are the command's.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
use spmdc::driver::{self, FrontOptions, Stage};

/// One kernel of 25 lines touching most of the language; repeated with fresh names.
fn kernel(i: usize) -> String {
    format!(
        r#"struct Particle{i} {{ float x, y, vx, vy; uniform int id; }};
static inline float damp{i}(float v, uniform float k) {{ return v * (1.0f - k); }}
export void step{i}(uniform float pos[], uniform float vel[], uniform int n, uniform float dt) {{
    uniform float total = 0;
    foreach (j = 0 ... n) {{
        float p = pos[j];
        float v = damp{i}(vel[j], 0.01f);
        if (p < 0.0f || p > 100.0f) {{
            v = -v;
        }} else if (v > 10.0f) {{
            v = 10.0f;
        }}
        for (uniform int k = 0; k < 4; ++k) {{
            p += v * dt * 0.25f;
        }}
        pos[j] = p;
        vel[j] = v;
        total += reduce_add(p);
    }}
    cif (programIndex == 0) {{
        uniform int s = (int)total % 7;
        switch (s) {{ case 0: pos[0] = total; break; default: pos[1] = total; }}
    }}
}}

"#
    )
}

/// The comments and blank lines a documented kernel carries (13 lines).
fn commentary(i: usize) -> String {
    format!(
        r#"// ---------------------------------------------------------------------------
// step{i}: advances the particles of set {i} by one time step.
//
// Each program instance moves one particle: it damps the velocity, reflects the
// particle at the walls of the box [0, 100], and integrates the position in four
// sub-steps. Lane 0 then stores the gang's total into one of two slots.
//
// Launch: spmdc run bench.spmd --entry step{i} --arg n=1024 --arg dt=0.01 ...
// ---------------------------------------------------------------------------

"#
    )
}

fn source(lines: usize, commented: bool) -> String {
    let mut s = String::new();
    let mut count = 0;
    let mut i = 0;
    while count < lines {
        if commented {
            s.push_str(&commentary(i));
        }
        s.push_str(&kernel(i));
        count = s.lines().count();
        i += 1;
    }
    s
}

fn bench_front(c: &mut Criterion) {
    for (label, commented) in [("dense", false), ("commented", true)] {
        let text = source(10_000, commented);
        let lines = text.lines().count() as u64;
        let probe = driver::run_front(
            "bench.spmd",
            None,
            text.clone(),
            &FrontOptions::default(),
            Stage::Tokens,
        );
        let tokens = probe.user_tokens().count();
        eprintln!(
            "front_{label}: {lines} lines, {tokens} tokens ({:.2} tokens/line)",
            tokens as f64 / lines as f64
        );
        let mut group = c.benchmark_group(format!("front_{label}"));
        group.throughput(Throughput::Elements(lines));
        group.sample_size(20);
        let no_std = FrontOptions {
            no_stdlib: true,
            ..FrontOptions::default()
        };
        for (name, stage, options) in [
            ("lex", Stage::Tokens, &no_std),
            ("lex_parse", Stage::Ast, &no_std),
            ("lex_parse_check", Stage::Check, &FrontOptions::default()),
        ] {
            group.bench_function(name, |b| {
                b.iter(|| {
                    let r = driver::run_front("bench.spmd", None, text.clone(), options, stage);
                    assert!(!r.diags.has_errors());
                    r
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench_front);
criterion_main!(benches);
