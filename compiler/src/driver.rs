//! The driver: runs the compiler's stages for the command line, the tests and any other
//! front end (the playground). The CLI in `main.rs` only parses flags and prints.

use std::io::Read;
use std::path::PathBuf;

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::front::ast::TranslationUnit;
use crate::front::intern::Interner;
use crate::front::preprocess::{self, Pragma};
use crate::front::token::Token;
use crate::front::{parse, sema, STDLIB_NAME, STDLIB_SOURCE};
use crate::source::{FileId, SourceMap};

/// How far the front end should go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    Tokens,
    Ast,
    Check,
}

#[derive(Clone, Debug, Default)]
pub struct FrontOptions {
    /// `-I DIR`: extra `#include` search directories.
    pub include_dirs: Vec<PathBuf>,
    /// `-D NAME[=VALUE]`.
    pub defines: Vec<(String, String)>,
    /// Leave the standard library out (for tests of the front end itself).
    pub no_stdlib: bool,
}

/// Everything the front end produced, with whatever errors it found.
pub struct FrontResult {
    pub sources: SourceMap,
    pub interner: Interner,
    pub main_file: FileId,
    /// `None` with `no_stdlib`.
    pub stdlib_file: Option<FileId>,
    pub tokens: Vec<Token>,
    pub pragmas: Vec<Pragma>,
    pub unit: TranslationUnit,
    /// Present when the `Check` stage ran.
    pub checked: Option<sema::Checked>,
    pub diags: Diagnostics,
}

impl FrontResult {
    /// Tokens of the user's files (the main file and its includes), not the stdlib's.
    pub fn user_tokens(&self) -> impl Iterator<Item = &Token> {
        let stdlib = self.stdlib_file;
        self.tokens
            .iter()
            .filter(move |t| Some(t.span.file) != stdlib)
    }
}

/// Reads a source file; `-` reads standard input.
pub fn read_input(path: &str) -> Result<(String, Option<PathBuf>, String), Diagnostic> {
    let unreadable = |e: std::io::Error| {
        Diagnostic::error(
            codes::INPUT_UNREADABLE,
            format!("cannot read `{path}`: {e}"),
        )
    };
    if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(unreadable)?;
        return Ok(("<stdin>".to_string(), None, text));
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Diagnostic::error(
            codes::INPUT_UNREADABLE,
            format!(
                "`{path}` is not valid UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    Ok((path.to_string(), Some(PathBuf::from(path)), text))
}

/// Runs the front end on one source text up to `stage`. Parsing stops there if
/// preprocessing failed badly enough; checking runs only on a unit that parsed cleanly,
/// since sema on a broken tree mostly repeats what the parser said.
pub fn run_front(
    name: &str,
    path: Option<PathBuf>,
    text: String,
    options: &FrontOptions,
    stage: Stage,
) -> FrontResult {
    let mut sources = SourceMap::new();
    let mut interner = Interner::new();
    let stdlib_file =
        (!options.no_stdlib).then(|| sources.add(STDLIB_NAME, None, STDLIB_SOURCE.to_string()));
    let main_file = sources.add(name, path, text);
    let files: Vec<FileId> = stdlib_file.into_iter().chain([main_file]).collect();
    let mut diags = Vec::new();
    let pp_options = preprocess::Options {
        include_dirs: &options.include_dirs,
        defines: &options.defines,
    };
    let pre = preprocess::preprocess(&mut sources, &mut interner, &files, &pp_options, &mut diags);
    let mut result = FrontResult {
        sources,
        interner,
        main_file,
        stdlib_file,
        tokens: pre.tokens,
        pragmas: pre.pragmas,
        unit: TranslationUnit::default(),
        checked: None,
        diags: Diagnostics::new(),
    };
    if stage >= Stage::Ast {
        result.unit = parse::parse(&result.tokens, &result.sources, &mut diags);
    }
    let clean = !diags.iter().any(Diagnostic::is_error);
    if stage >= Stage::Check && clean {
        let (checked, sema_diags) = sema::check(
            &result.unit,
            &result.interner,
            &result.sources,
            stdlib_file.unwrap_or(FileId(u32::MAX)),
        );
        diags.extend(sema_diags);
        result.checked = Some(checked);
    }
    result.diags.extend(diags);
    result.diags.sort();
    result
}

/// Runs `f` on a thread with a large stack: recursive passes over deeply nested
/// (but legal) programs must not overflow the default 8 MiB main-thread stack.
pub fn with_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    const STACK: usize = 256 << 20;
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(f)
        .expect("failed to spawn the compiler thread")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
