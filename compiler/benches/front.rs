//! Front-end throughput on a generated 10,000-line source:
//! `cargo bench -p spmdc --bench front`. Criterion reports lines per second
//! (its "elements"): lexing+preprocessing, lexing+parsing, and the whole front end
//! including semantic checks (with the standard library, as every compile has it).

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

fn source(lines: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.lines().count() < lines {
        s.push_str(&kernel(i));
        i += 1;
    }
    s
}

fn bench_front(c: &mut Criterion) {
    let text = source(10_000);
    let lines = text.lines().count() as u64;
    let mut group = c.benchmark_group("front_10k_lines");
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

criterion_group!(benches, bench_front);
criterion_main!(benches);
