//! Where the functions of a prebuilt runtime's text begin, their names and signature
//! lines (see [`super::prebuilt`]).
//!
//! Shared with the build script, which finds them once per build: cutting the 600 KB
//! of nyuzi's runtime at run time, and reading the routines' signatures, touched
//! every page of the text in every process that links a routine (0.15 ms of a
//! compile, most of it page faults).

/// The first line of every prebuilt file, before the library's hash.
pub const STAMP: &str = "; spmdc prebuilt runtime; standard library fnv1a64 ";

/// The text of a prebuilt file after its stamp line, if the stamp records `hash` (a
/// file built from another standard library is stale, and not used).
pub fn body_for(text: &str, hash: u64) -> Option<&str> {
    let (stamp, body) = text.split_once('\n')?;
    (stamp == format!("{STAMP}{hash:016x}")).then_some(body)
}

/// The byte offsets in `body` at which its functions start: every line beginning with
/// `function `. What precedes the first is the module's header.
fn function_starts(body: &str) -> impl Iterator<Item = usize> + '_ {
    let first = body.starts_with("function ").then_some(0);
    let rest = body.match_indices("\nfunction ").map(|(at, _)| at + 1);
    first.into_iter().chain(rest)
}

/// Each function of `body`: where it starts, its name and its first line (the
/// signature); `None` if a first line names no function.
#[cfg_attr(not(test), allow(dead_code))] // the library finds them only in tests
pub fn functions(body: &str) -> Option<Vec<(u32, &str, &str)>> {
    function_starts(body)
        .map(|at| {
            let line = body[at..].lines().next()?;
            Some((u32::try_from(at).ok()?, function_name(line)?, line))
        })
        .collect()
}

/// `name` of `function <linkage> @name(...`.
fn function_name(text: &str) -> Option<&str> {
    let at = text.find('@')?;
    let rest = &text[at + 1..];
    Some(&rest[..rest.find('(')?])
}
