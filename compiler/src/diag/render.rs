//! Rendering diagnostics for people (codespan-reporting, rustc style) and for tools (JSON lines).

use super::{Diagnostic, Severity};
use crate::source::SourceMap;
use codespan_reporting::diagnostic as cs;
use codespan_reporting::term::{self, termcolor};

/// `--color auto|always|never`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Resolves `Auto` for a stream: colour only on a terminal and only when `NO_COLOR`
    /// is unset or empty (<https://no-color.org>).
    pub fn resolve(self, is_terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

fn to_codespan(diag: &Diagnostic) -> cs::Diagnostic<crate::source::FileId> {
    let severity = match diag.severity {
        Severity::Error => cs::Severity::Error,
        Severity::Warning => cs::Severity::Warning,
        Severity::Note => cs::Severity::Note,
    };
    let mut labels = Vec::new();
    if let Some(p) = &diag.primary {
        labels.push(cs::Label::primary(p.span.file, p.span.range()).with_message(&p.message));
    }
    for s in &diag.secondary {
        labels.push(cs::Label::secondary(s.span.file, s.span.range()).with_message(&s.message));
    }
    let notes = diag
        .notes
        .iter()
        .map(|n| format!("note: {n}"))
        .chain(diag.help.iter().map(|h| format!("help: {h}")))
        .collect();
    cs::Diagnostic::new(severity)
        .with_code(diag.code.as_str())
        .with_message(&diag.message)
        .with_labels(labels)
        .with_notes(notes)
}

/// The longest source line (in bytes) a human-readable diagnostic quotes. A label on
/// a longer line (minified or generated code) is reported by position only, so that
/// each diagnostic's text stays small whatever the input.
pub const MAX_QUOTED_LINE: usize = 400;

/// Whether a label's span touches a line longer than [`MAX_QUOTED_LINE`].
fn on_long_line(sources: &SourceMap, label: &super::Label) -> bool {
    let file = sources.get(label.span.file);
    let first = file.line_index(label.span.start);
    let last = file.line_index(label.span.end);
    (first..=last).any(|l| {
        file.line_range(l)
            .is_some_and(|r| r.len() > MAX_QUOTED_LINE)
    })
}

/// `diag` without its labels: each becomes a note giving its position and message.
fn without_quotes(sources: &SourceMap, diag: &Diagnostic) -> Diagnostic {
    let mut plain = diag.clone();
    let labels = plain
        .primary
        .take()
        .into_iter()
        .chain(std::mem::take(&mut plain.secondary));
    let notes: Vec<String> = labels
        .map(|l| {
            let file = sources.get(l.span.file);
            let (line, col) = file.line_col(l.span.start);
            let what = if l.message.is_empty() {
                String::new()
            } else {
                format!(": {}", l.message)
            };
            format!(
                "at {}:{line}:{col}{what} (line longer than {MAX_QUOTED_LINE} bytes, not shown)",
                file.name
            )
        })
        .collect();
    plain.notes.splice(0..0, notes);
    plain
}

/// Renders one diagnostic as text, with ANSI colours when `color` is set.
pub fn render_human(sources: &SourceMap, diag: &Diagnostic, color: bool) -> String {
    let mut buf = if color {
        termcolor::Buffer::ansi()
    } else {
        termcolor::Buffer::no_color()
    };
    let config = term::Config::default();
    let in_range = |l: &super::Label| {
        sources
            .try_get(l.span.file)
            .is_some_and(|f| l.span.start <= l.span.end && l.span.end as usize <= f.text.len())
    };
    let labels = || diag.primary.iter().chain(&diag.secondary);
    let plain;
    let diag = if labels().all(in_range) && labels().any(|l| on_long_line(sources, l)) {
        plain = without_quotes(sources, diag);
        &plain
    } else {
        diag
    };
    if term::emit_to_write_style(&mut buf, &config, sources, &to_codespan(diag)).is_err() {
        // Only a span outside its file can fail here; fall back to a one-line form.
        return format!(
            "{}[{}]: {}\n",
            diag.severity.as_str(),
            diag.code,
            diag.message
        );
    }
    String::from_utf8_lossy(buf.as_slice()).into_owned()
}

/// One JSON object (no trailing newline) with the fields documented in lang-spec/diagnostics.md.
pub fn render_json_line(sources: &SourceMap, diag: &Diagnostic) -> String {
    use serde_json::{json, Value};
    let label_json = |l: &super::Label, primary: bool| {
        let file = sources.get(l.span.file);
        let (line, column) = file.line_col(l.span.start);
        let (end_line, end_column) = file.line_col(l.span.end);
        json!({
            "file": file.name,
            "line": line,
            "column": column,
            "end_line": end_line,
            "end_column": end_column,
            "byte_start": l.span.start,
            "byte_end": l.span.end,
            "message": l.message,
            "primary": primary,
        })
    };
    let mut labels: Vec<Value> = Vec::new();
    if let Some(p) = &diag.primary {
        labels.push(label_json(p, true));
    }
    labels.extend(diag.secondary.iter().map(|l| label_json(l, false)));
    let (file, line, column, span) = match &diag.primary {
        Some(p) => {
            let f = sources.get(p.span.file);
            let (line, col) = f.line_col(p.span.start);
            (
                Value::from(f.name.as_str()),
                Value::from(line),
                Value::from(col),
                json!([p.span.start, p.span.end]),
            )
        }
        None => (Value::Null, Value::Null, Value::Null, Value::Null),
    };
    json!({
        "code": diag.code.as_str(),
        "severity": diag.severity.as_str(),
        "message": diag.message,
        "file": file,
        "line": line,
        "column": column,
        "span": span,
        "labels": labels,
        "notes": diag.notes,
        "help": diag.help,
    })
    .to_string()
}
