//! Source files and spans.
//!
//! Every stage of the compiler (front end, IR line tables, the simulators' fault reports)
//! names source positions with a [`Span`]: a file and a byte range in it. The
//! [`SourceMap`] owns the text of every file that took part in a compilation, including
//! `#include`d files and the standard library, so diagnostics can be rendered later.

use std::borrow::Cow;
use std::io::Read;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The largest source file (or standard input, or `#include`d file) the compiler
/// reads: 16 MiB. Reading stops there, so a device or a runaway pipe cannot exhaust
/// memory before a single token is lexed.
pub const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// Reads at most `limit` bytes from `reader`: `Ok(None)` when there is more.
pub fn read_limited(reader: impl Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    reader.take(limit + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// Index of a file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const fn new(file: FileId, start: u32, end: u32) -> Self {
        Span { file, start, end }
    }

    /// The smallest span covering both; if they lie in different files
    /// (a macro expansion, say), the first one wins.
    pub fn to(self, other: Span) -> Span {
        if self.file != other.file {
            return self;
        }
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }

    pub fn len(self) -> u32 {
        self.end - self.start
    }

    pub fn is_empty(self) -> bool {
        self.start == self.end
    }
}

/// One file's text plus the byte offsets where its lines start.
#[derive(Debug)]
pub struct SourceFile {
    /// The name shown in diagnostics (the path as the user gave it, `<stdin>`, or `<stdlib>/...`).
    pub name: String,
    /// Where the file lives on disk, when it does; `#include` resolves relative to it.
    pub path: Option<PathBuf>,
    /// Borrowed for the standard library built into the compiler, which is not copied.
    pub text: Cow<'static, str>,
    /// Found on first use: most compiles never ask where the library's lines start.
    line_starts: OnceLock<Vec<u32>>,
}

impl SourceFile {
    fn new(name: String, path: Option<PathBuf>, text: Cow<'static, str>) -> Self {
        SourceFile {
            name,
            path,
            text,
            line_starts: OnceLock::new(),
        }
    }

    /// The byte offset where each line starts.
    fn line_starts(&self) -> &[u32] {
        self.line_starts.get_or_init(|| {
            std::iter::once(0)
                .chain(self.text.match_indices('\n').map(|(i, _)| i as u32 + 1))
                .collect()
        })
    }

    /// Zero-based line index containing `offset`.
    pub fn line_index(&self, offset: u32) -> usize {
        match self.line_starts().binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    /// One-based (line, column) of a byte offset; columns count characters.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let line = self.line_index(offset);
        let start = self.line_starts()[line] as usize;
        let end = (offset as usize).min(self.text.len());
        let col = self
            .text
            .get(start..end)
            .map_or(end - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    pub fn line_range(&self, line: usize) -> Option<Range<usize>> {
        let starts = self.line_starts();
        let start = *starts.get(line)? as usize;
        let end = starts
            .get(line + 1)
            .map_or(self.text.len(), |&e| e as usize);
        Some(start..end)
    }

    pub fn line_count(&self) -> usize {
        self.line_starts().len()
    }
}

/// Every file of a compilation.
#[derive(Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(
        &mut self,
        name: impl Into<String>,
        path: Option<PathBuf>,
        text: impl Into<Cow<'static, str>>,
    ) -> FileId {
        let id = FileId(self.files.len() as u32);
        self.files
            .push(SourceFile::new(name.into(), path, text.into()));
        id
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    /// The file `id`, if this map has it.
    pub fn try_get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (FileId(i as u32), f))
    }

    /// The text a span covers.
    pub fn snippet(&self, span: Span) -> &str {
        self.get(span.file).text.get(span.range()).unwrap_or("")
    }

    /// `file:line:col` of a span's start, for one-line messages.
    pub fn location(&self, span: Span) -> String {
        let file = self.get(span.file);
        let (line, col) = file.line_col(span.start);
        format!("{}:{}:{}", file.name, line, col)
    }
}

impl<'a> codespan_reporting::files::Files<'a> for SourceMap {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: FileId) -> Result<&'a str, codespan_reporting::files::Error> {
        self.files
            .get(id.0 as usize)
            .map(|f| f.name.as_str())
            .ok_or(codespan_reporting::files::Error::FileMissing)
    }

    fn source(&'a self, id: FileId) -> Result<&'a str, codespan_reporting::files::Error> {
        self.files
            .get(id.0 as usize)
            .map(|f| &*f.text)
            .ok_or(codespan_reporting::files::Error::FileMissing)
    }

    fn line_index(
        &'a self,
        id: FileId,
        byte_index: usize,
    ) -> Result<usize, codespan_reporting::files::Error> {
        let file = self
            .files
            .get(id.0 as usize)
            .ok_or(codespan_reporting::files::Error::FileMissing)?;
        Ok(file.line_index(byte_index as u32))
    }

    fn line_range(
        &'a self,
        id: FileId,
        line_index: usize,
    ) -> Result<Range<usize>, codespan_reporting::files::Error> {
        let file = self
            .files
            .get(id.0 as usize)
            .ok_or(codespan_reporting::files::Error::FileMissing)?;
        file.line_range(line_index)
            .ok_or(codespan_reporting::files::Error::LineTooLarge {
                given: line_index,
                max: file.line_count(),
            })
    }
}
