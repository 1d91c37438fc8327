//! The front end never panics or hangs: arbitrary bytes, token soups and mutated
//! valid programs all end in diagnostics, never a crash.

mod common;

use proptest::prelude::*;
use spmdc::driver::{self, FrontOptions, Stage};

fn run(text: &str, stdlib: bool) {
    let options = FrontOptions {
        no_stdlib: !stdlib,
        ..FrontOptions::default()
    };
    let result = driver::run_front("<fuzz>", None, text.to_string(), &options, Stage::Check);
    // Rendering must not panic either, whatever spans the diagnostics carry.
    for d in result.diags.iter() {
        let _ = spmdc::diag::render_human(&result.sources, d, false);
        let _ = spmdc::diag::render_json_line(&result.sources, d);
    }
}

/// Pieces of the language, glued at random.
const PIECES: &[&str] = &[
    "uniform",
    "varying",
    "int",
    "float",
    "double",
    "bool",
    "int8",
    "uint64",
    "void",
    "struct",
    "S",
    "typedef",
    "enum",
    "export",
    "task",
    "static",
    "inline",
    "const",
    "shared",
    "if",
    "else",
    "cif",
    "for",
    "while",
    "do",
    "break",
    "continue",
    "return",
    "switch",
    "case",
    "default",
    ":",
    "foreach",
    "foreach_tiled",
    "foreach_active",
    "foreach_unique",
    "in",
    "unmasked",
    "sizeof",
    "programIndex",
    "programCount",
    "threadIdx",
    ".x",
    "barrier",
    "reduce_add",
    "print",
    "\"%\\n\"",
    "x",
    "y",
    "a",
    "f",
    "0",
    "1",
    "16",
    "0x1F",
    "2.5f",
    "1e9",
    "'c'",
    "true",
    "NULL",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ";",
    ",",
    "...",
    "=",
    "+=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "&",
    "&&",
    "|",
    "||",
    "^",
    "~",
    "!",
    "<",
    "<<",
    ">>=",
    "==",
    "?",
    "->",
    ".",
    "++",
    "--",
    "#define Q 3\n",
    "#include \"nope\"\n",
    "#pragma unroll\n",
    "#if 1\n",
    "#endif\n",
    "/*",
    "*/",
    "//",
    "\n",
    "@",
    "\"",
];

fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec(0..PIECES.len(), 0..120).prop_map(|ix| {
        ix.into_iter()
            .map(|i| PIECES[i])
            .collect::<Vec<_>>()
            .join(" ")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        run(&String::from_utf8_lossy(&bytes), false);
    }

    #[test]
    fn token_soup_never_panics(text in soup()) {
        run(&text, false);
    }
}

/// Deletes, duplicates or swaps tokens of real programs, with the stdlib, so that the
/// mutants get deep into semantic analysis.
#[test]
fn mutated_examples_never_panic() {
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    for path in common::spmd_files("examples")
        .iter()
        .chain(common::spmd_files("tests/ispc").iter())
    {
        let text = std::fs::read_to_string(path).unwrap();
        let words: Vec<&str> = text
            .split_inclusive(|c: char| c.is_whitespace() || "(){}[];,".contains(c))
            .collect();
        if words.is_empty() {
            continue;
        }
        for _ in 0..12 {
            let mut w = words.clone();
            for _ in 0..3 {
                let i = next(w.len());
                match next(3) {
                    0 => {
                        w.remove(i);
                    }
                    1 => w.insert(i, w[i]),
                    _ => {
                        let j = next(w.len());
                        w.swap(i, j);
                    }
                }
                if w.is_empty() {
                    break;
                }
            }
            run(&w.concat(), true);
        }
    }
}

#[test]
fn deep_nesting_is_reported_not_overflowed() {
    let deep = format!(
        "export void f() {{ int x = {}1{}; }}",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    let result = driver::run_front("<deep>", None, deep, &FrontOptions::default(), Stage::Check);
    assert!(result.diags.has_errors());
    let long_sum = format!("export void f() {{ int x = {}1; }}", "1 + ".repeat(1000));
    let result = driver::run_front(
        "<long>",
        None,
        long_sum,
        &FrontOptions::default(),
        Stage::Check,
    );
    assert!(!result.diags.has_errors(), "a 1000-term sum is legal");
    // Far past the nesting limit: a diagnostic, not a stack overflow.
    let huge_sum = format!("export void f() {{ int x = {}1; }}", "1 + ".repeat(50000));
    let result = driver::run_front(
        "<huge>",
        None,
        huge_sum,
        &FrontOptions::default(),
        Stage::Check,
    );
    let codes: Vec<&str> = result.diags.iter().map(|d| d.code.as_str()).collect();
    assert!(codes.is_empty() || codes == ["E0325"], "{codes:?}");
}

/// Runs the front end on `text` on a thread with a small (2 MiB) stack: trees far
/// deeper than the nesting limit must be reported and freed without recursion.
fn check_on_small_stack(text: String) -> Vec<String> {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let result =
                driver::run_front("<deep>", None, text, &FrontOptions::default(), Stage::Check);
            let codes = result
                .diags
                .iter()
                .map(|d| d.code.as_str().to_string())
                .collect();
            drop(result);
            codes
        })
        .expect("spawn")
        .join()
        .expect("the front end overflowed or panicked")
}

#[test]
fn deep_trees_are_freed_without_recursion() {
    let chain = format!("export void f() {{ int x = {}1; }}", "1 + ".repeat(200_000));
    assert_eq!(check_on_small_stack(chain), ["E0325"]);
    let ifs = format!(
        "export void f(uniform int out[]) {{ {} out[0] = 1; }}",
        "if (programIndex > 0) ".repeat(100_000)
    );
    assert_eq!(check_on_small_stack(ifs), ["E0325"]);
}
