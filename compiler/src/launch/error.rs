//! Launch errors: everything that can be wrong with a launch request before a kernel
//! runs (the entry name, its signature, the `--arg` specs, input files, the launch
//! shape, `--print` names).
//!
//! Errors are plain values, never panics: the command line prints them and exits with
//! status 2 ([`LaunchError::EXIT_CODE`]). One struct serves every case: a [`ErrorKind`]
//! for programs (and tests) to match on, a one-line message, and optionally the text
//! the user typed with the offending part underlined, notes and a help line.

use std::fmt;

use crate::diag::codes::{self, Code};

/// What went wrong, for matching; the details are in the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An `--arg` that does not parse (`x=range(`).
    Syntax,
    /// No `export`/`task` function of that name (diagnostic code E0900).
    NoSuchEntry,
    /// The entry exists but the launcher cannot pass its parameters or return value
    /// (struct or varying parameters, pointers to pointers, ...).
    UnsupportedSignature,
    /// `--arg NAME=...` where the entry has no parameter `NAME`.
    UnknownParam,
    /// Parameters without an `--arg`.
    MissingArgs,
    /// Two `--arg`s for one parameter.
    DuplicateArg,
    /// A scalar spec for a buffer parameter or a buffer spec for a scalar one.
    WrongKind,
    /// A value that does not fit the parameter's type (out of range, a float for an
    /// integer, `true` for a number, an empty random range...).
    BadValue,
    /// A buffer of more than [`crate::launch::MAX_ELEMENTS`] elements.
    TooLarge,
    /// An `@file` that cannot be read or whose contents are malformed.
    File,
    /// An invalid `--grid`/`--block`.
    BadConfig,
    /// `--print NAME` where no buffer is called `NAME`.
    UnknownName,
}

/// The text the user typed, with the byte range `start..end` to underline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snippet {
    pub text: String,
    pub start: usize,
    pub end: usize,
}

/// One launch error. `Display` renders the message, the underlined snippet, the notes
/// and the help, one per line, without an `error:` prefix (the caller adds it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchError {
    pub kind: ErrorKind,
    pub message: String,
    pub snippet: Option<Snippet>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

impl LaunchError {
    /// The process exit status for every launch error: a usage error.
    pub const EXIT_CODE: u8 = 2;

    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        LaunchError {
            kind,
            message: message.into(),
            snippet: None,
            notes: Vec::new(),
            help: None,
        }
    }

    /// Underlines bytes `start..end` of `text` (clamped to the text and widened to
    /// character boundaries; at least one caret).
    pub fn with_snippet(mut self, text: &str, start: usize, end: usize) -> Self {
        let mut start = start.min(text.len());
        let mut end = end.clamp(start, text.len());
        // Byte offsets inside a character would make slicing panic: widen to boundaries.
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        while !text.is_char_boundary(end) {
            end += 1;
        }
        self.snippet = Some(Snippet {
            text: text.to_string(),
            start,
            end,
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Sets the help only when there is one.
    pub fn with_help_opt(mut self, help: Option<String>) -> Self {
        if help.is_some() {
            self.help = help;
        }
        self
    }

    /// The exit status the command line uses (always [`Self::EXIT_CODE`]).
    pub fn exit_code(&self) -> u8 {
        Self::EXIT_CODE
    }

    /// The diagnostic code, for errors that have one in the code table.
    pub fn code(&self) -> Option<Code> {
        match self.kind {
            ErrorKind::NoSuchEntry => Some(codes::NO_SUCH_ENTRY),
            _ => None,
        }
    }
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(s) = &self.snippet {
            // Carets under characters, not bytes, so non-ASCII text lines up.
            let before = s.text[..s.start].chars().count();
            let width = s.text[s.start..s.end].chars().count().max(1);
            write!(
                f,
                "\n    {}\n    {}{}",
                s.text,
                " ".repeat(before),
                "^".repeat(width)
            )?;
        }
        for n in &self.notes {
            write!(f, "\nnote: {n}")?;
        }
        if let Some(h) = &self.help {
            write!(f, "\nhelp: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LaunchError {}

/// `; did you mean `x`?` when some candidate is a plausible typo of `name`, else empty.
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    closest(name, candidates)
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

/// [`crate::diag::suggest::closest`], plus one more kind of typo it counts as two edits:
/// two adjacent characters swapped (`saxyp` for `saxpy`), common when typing names on a
/// command line.
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let candidates: Vec<&str> = candidates.into_iter().collect();
    crate::diag::suggest::closest(name, candidates.iter().copied())
        .or_else(|| candidates.into_iter().find(|c| is_transposition(name, c)))
}

/// Is `b` equal to `a` with one pair of adjacent characters swapped?
fn is_transposition(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len() != b.len() {
        return false;
    }
    let diff: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    matches!(diff.as_slice(), [i, j] if *j == i + 1 && a[*i] == b[*j] && a[*j] == b[*i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_snippet_notes_and_help() {
        let e = LaunchError::new(ErrorKind::Syntax, "bad spec")
            .with_snippet("x=rnage(4)", 2, 7)
            .with_note("a note")
            .with_help("did you mean `range`?");
        assert_eq!(
            e.to_string(),
            "bad spec\n    x=rnage(4)\n      ^^^^^\nnote: a note\nhelp: did you mean `range`?"
        );
        assert_eq!(e.exit_code(), 2);
        assert_eq!(e.code(), None);
    }

    #[test]
    fn snippet_is_clamped_and_never_empty() {
        let e = LaunchError::new(ErrorKind::Syntax, "m").with_snippet("ab", 5, 9);
        assert_eq!(e.to_string(), "m\n    ab\n      ^");
    }

    #[test]
    fn suggestions_include_swapped_letters() {
        assert_eq!(closest("saxyp", ["scale", "saxpy"]), Some("saxpy"));
        assert_eq!(closest("rnage", ["zeros", "range"]), Some("range"));
        assert_eq!(closest("sxapy", ["saxpy"]), Some("saxpy"));
        assert_eq!(closest("abcd", ["dcba"]), None);
        assert_eq!(did_you_mean("nn", ["x", "n"]), "; did you mean `n`?");
        assert_eq!(did_you_mean("zzzz", ["a"]), "");
    }

    #[test]
    fn entry_errors_carry_e0900() {
        let e = LaunchError::new(ErrorKind::NoSuchEntry, "m");
        assert_eq!(e.code().map(|c| c.as_str()), Some("E0900"));
    }
}
