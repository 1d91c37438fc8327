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

mod common;
use common::source;

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
