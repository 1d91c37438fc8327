//! The launch layer shared by every target: everything `spmdc run` does before and
//! after a kernel runs, independent of the machine that runs it.
//!
//! ```text
//! spmdc run FILE --entry NAME [--target interp|nyuzi|dac-gpu] [--grid X[,Y[,Z]]]
//!           [--block X[,Y[,Z]]] --arg NAME=SPEC ... [--print NAME ...] [--json] [--stats]
//! ```
//!
//! Before: find the entry point ([`find_entry`]), describe its parameters
//! ([`signature_of`]), parse the `--arg` specs ([`parse_arg`]), make a value of each
//! parameter's type from its spec ([`bind_args`]) and check the launch shape
//! ([`LaunchConfig`]). [`prepare`] does all of it and returns a [`Launch`]: the function,
//! its signature, the argument values in parameter order and the shape. A target runs
//! it, writing buffer results back into [`Launch::args`].
//!
//! After: [`RunResult`] gathers the buffers, the returned value, the printed output and
//! the target's statistics, and formats them as JSON or `--print` text.
//!
//! The concerns, one module each:
//! - [`elem`]: element types and typed scalar values, their bytes and printing;
//! - [`buffer`]: typed little-endian byte vectors;
//! - [`signature`]: entry points and their parameters as the launcher needs them;
//! - [`spec`]: the SPEC syntax;
//! - [`random`]: the deterministic generator behind `random(...)`;
//! - [`files`]: `@file` inputs (`.txt`, `.json`, raw binary);
//! - [`mod@materialize`]: specs to values of the parameters' types;
//! - [`config`]: grid and block;
//! - [`result`]: the run's result, its JSON and text forms;
//! - [`error`]: the errors, all values with clear messages (exit status 2).
//!
//! The user-facing reference is [run.md](../../../lang-spec/run.md).

pub mod buffer;
pub mod config;
pub mod elem;
pub mod error;
pub mod files;
pub mod materialize;
pub mod random;
pub mod result;
pub mod signature;
pub mod spec;
pub mod stats_catalog;
pub mod stats_text;

pub use buffer::Buffer;
pub use config::LaunchConfig;
pub use elem::{Elem, ElemType, Value};
pub use error::{ErrorKind, LaunchError};
pub use materialize::{bind_args, materialize, ArgValue};
pub use result::{Breakdown, RunResult, Settings, StatValue, Stats};
pub use signature::{find_entry, signature_of, EntryKind, KernelParam, KernelSignature, ParamKind};
pub use spec::{parse_arg, parse_spec, ArgSpec, Literal, Spec};

use crate::front::intern::Interner;
use crate::front::sema::{Checked, FuncId};

/// The largest buffer, in elements, that a spec or file may produce (2^28: 1 GiB of
/// `float`s). Larger requests are errors rather than an out-of-memory abort.
pub const MAX_ELEMENTS: u64 = 1 << 28;

/// A launch ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub func: FuncId,
    pub signature: KernelSignature,
    /// One value per parameter, in parameter order. Targets copy buffer results back
    /// here (see [`Buffer::bytes_mut`]).
    pub args: Vec<ArgValue>,
    pub config: LaunchConfig,
}

impl Launch {
    /// The argument of the parameter called `name`.
    pub fn arg(&self, name: &str) -> Option<&ArgValue> {
        self.signature
            .param(name)
            .and_then(|p| self.args.get(p.index))
    }
}

/// The launch request as the command line gives it.
#[derive(Clone, Copy, Debug)]
pub struct LaunchRequest<'a> {
    /// `--entry NAME`.
    pub entry: &'a str,
    /// Every `--arg NAME=SPEC`, in order.
    pub args: &'a [String],
    /// `--grid`, if given.
    pub grid: Option<&'a str>,
    /// `--block`, if given.
    pub block: Option<&'a str>,
    /// `--dynamic-shared`, if given.
    pub dynamic_shared: Option<&'a str>,
    /// The target's `programCount` (the default block size).
    pub program_count: u32,
}

/// Everything before the run: entry, signature, arguments and shape. On failure, every
/// error found (an unknown entry stops the checks, since the arguments cannot be
/// judged without it).
pub fn prepare(
    checked: &Checked,
    interner: &Interner,
    req: &LaunchRequest<'_>,
) -> Result<Launch, Vec<LaunchError>> {
    let func = find_entry(checked, interner, req.entry).map_err(|e| vec![e])?;
    let signature = signature_of(checked, func, interner).map_err(|e| vec![e])?;
    let mut errors = Vec::new();
    let mut specs = Vec::with_capacity(req.args.len());
    // Parameters whose `--arg` did not parse: already reported, so not "missing" too.
    let mut excused = Vec::new();
    for a in req.args {
        match parse_arg(a) {
            Ok(s) => specs.push(s),
            Err(e) => {
                errors.push(e);
                if let Some((name, _)) = a.split_once('=') {
                    excused.push(name.trim());
                }
            }
        }
    }
    let config = LaunchConfig::from_args(req.grid, req.block, req.program_count)
        .and_then(|c| c.with_dynamic_shared(req.dynamic_shared))
        .map_err(|e| errors.push(e));
    let args =
        materialize::bind_args_excusing(&signature, &specs, &excused).map_err(|e| errors.extend(e));
    match (config, args) {
        (Ok(config), Ok(args)) if errors.is_empty() => Ok(Launch {
            func,
            signature,
            args,
            config,
        }),
        _ => Err(errors),
    }
}

/// Splits a command line as a POSIX shell would for the `spmdc run` lines of kernel
/// headers: words separated by blanks, single and double quotes grouping (no escapes).
/// Shared by the playground's gallery and the bench suites.
pub fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}
