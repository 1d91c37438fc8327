//! What the fuzz targets share: input caps and the compiler's front end as the CLI
//! runs it. Each target bounds its input here so that one input costs at most a
//! fraction of a second; a slow input is then a real finding (a pass superlinear in
//! its input), not the fuzzer's doing.

use spmdc::diag::{codes, Diagnostic};
use spmdc::driver::{self, FrontOptions, FrontResult, Stage};
use spmdc::front::sema;

/// The text of at most `cap` bytes of `data` (invalid UTF-8 replaced: the CLI rejects
/// it before the front end, so only valid text is worth exploring), `None` when the
/// input is longer.
pub fn text(data: &[u8], cap: usize) -> Option<String> {
    (data.len() <= cap).then(|| String::from_utf8_lossy(data).into_owned())
}

/// Runs the front end on `text` for `target` up to `Check`, with the standard
/// library as `spmdc` uses it, and renders every diagnostic both ways (rendering must
/// not panic on any span either).
pub fn front(text: String, target: sema::Target) -> FrontResult {
    let options = FrontOptions {
        target,
        ..FrontOptions::default()
    };
    let result = driver::run_front("fuzz.spmd", None, text, &options, Stage::Check);
    render(&result, result.diags.iter());
    result
}

/// Renders `diags` as the terminal and as JSON.
pub fn render<'a>(front: &FrontResult, diags: impl Iterator<Item = &'a Diagnostic>) {
    for d in diags {
        let _ = spmdc::diag::render_human(&front.sources, d, false);
        let _ = spmdc::diag::render_json_line(&front.sources, d);
    }
}

/// Whether the front end accepted the program (errors stop the pipeline, as in the CLI).
pub fn checked(front: &FrontResult) -> bool {
    front.checked.is_some() && !front.diags.iter().any(Diagnostic::is_error)
}

/// An internal compiler error is a bug in spmdc whatever the input: the targets
/// make it a crash so that libFuzzer saves the input.
pub fn no_internal_error(front: &FrontResult, diags: &[Diagnostic]) {
    render(front, diags.iter());
    if let Some(d) = diags.iter().find(|d| d.code == codes::INTERNAL_ERROR) {
        panic!("{}", spmdc::diag::render_human(&front.sources, d, false));
    }
}

/// Runs `f` on the [`text`] of `data` (nothing when it is longer than `cap`), on a
/// thread with the CLI's large stack ([`driver::with_big_stack`]): the compiler
/// recurses over nested programs, and libFuzzer's main thread has only the default
/// 8 MiB. A panic there still aborts the process, so libFuzzer sees it.
pub fn on_text(data: &[u8], cap: usize, f: impl FnOnce(String) + Send + 'static) {
    if let Some(text) = text(data, cap) {
        driver::with_big_stack(move || f(text));
    }
}
