//! `@file` inputs: a buffer read from a file, in the format its extension names.
//!
//! - `.txt`: numbers (or `true`/`false`) separated by whitespace or commas, written as
//!   in a SPEC (`5`, `-2.5`, `1e20`, `0x10`, `inf`, `NaN`); `#` starts a comment that
//!   runs to the end of the line.
//! - `.json`: one array of numbers or booleans; nested arrays are flattened row by row
//!   (`[[1,2],[3,4]]` is `1 2 3 4`); the strings `"NaN"`, `"inf"` and `"-inf"` stand for
//!   the non-finite floats, as in spmdc's own JSON output.
//! - anything else (`.bin`, `.raw`, no extension): raw little-endian elements, whose
//!   size must be a multiple of the element size; a `bool` byte must be 0 or 1.
//!
//! Elements are converted with the rules of [`Value::from_literal`]: an integer buffer
//! rejects `2.5` and out-of-range values, a float buffer accepts integers.

use std::path::Path;

use crate::launch::buffer::Buffer;
use crate::launch::elem::{ElemType, Value};
use crate::launch::error::ErrorKind;
use crate::launch::spec::{parse_literal, Literal};
use crate::launch::MAX_ELEMENTS;

/// Text and JSON files larger than this are refused before reading (1 GiB).
pub const MAX_TEXT_BYTES: u64 = 1 << 30;

/// The format of an `@file`, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    Text,
    Json,
    Binary,
}

impl FileFormat {
    pub fn of(path: &Path) -> FileFormat {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("txt") => FileFormat::Text,
            Some("json") => FileFormat::Json,
            _ => FileFormat::Binary,
        }
    }
}

/// Reads a buffer of `elem`s from `path`. The error is a kind and a sentence that does
/// not repeat the path.
pub fn read_buffer(path: &Path, elem: ElemType) -> Result<Buffer, (ErrorKind, String)> {
    let file_err = |m: String| (ErrorKind::File, m);
    let meta = std::fs::metadata(path).map_err(|e| file_err(format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(file_err("it is not a regular file".into()));
    }
    let format = FileFormat::of(path);
    let size = meta.len();
    if format == FileFormat::Binary {
        let esize = elem.size() as u64;
        if !size.is_multiple_of(esize) {
            return Err(file_err(format!(
                "its size, {size} bytes, is not a multiple of {esize} (the size of `{elem}`)"
            )));
        }
        check_count(size / esize)?;
    } else if size > MAX_TEXT_BYTES {
        return Err((
            ErrorKind::TooLarge,
            format!("it is {size} bytes; text and JSON inputs are limited to {MAX_TEXT_BYTES} bytes (use a binary file)"),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| file_err(format!("cannot read it: {e}")))?;
    match format {
        FileFormat::Binary => from_binary(elem, bytes),
        FileFormat::Text => {
            let text = std::str::from_utf8(&bytes).map_err(|e| {
                file_err(format!(
                    "it is not UTF-8 text (invalid byte at offset {})",
                    e.valid_up_to()
                ))
            })?;
            from_text(elem, text)
        }
        FileFormat::Json => from_json(elem, &bytes),
    }
}

/// Writes `buffer` to `path` in the format its extension names, so that `@path` reads
/// it back unchanged: raw little-endian elements (`.bin` or any other name), one value
/// per line as a SPEC literal (`.txt`; floats in the shortest form that reads back to
/// the same bits) or one JSON array (`.json`, non-finite floats as strings).
pub fn write_buffer(path: &Path, buffer: &Buffer) -> std::io::Result<()> {
    match FileFormat::of(path) {
        FileFormat::Binary => std::fs::write(path, buffer.bytes()),
        FileFormat::Text => {
            let mut text = String::with_capacity(buffer.len() * 8);
            for v in buffer.values() {
                text.push_str(&v.to_string());
                text.push('\n');
            }
            std::fs::write(path, text)
        }
        FileFormat::Json => {
            let mut text = buffer.to_json().to_string();
            text.push('\n');
            std::fs::write(path, text)
        }
    }
}

fn check_count(n: u64) -> Result<(), (ErrorKind, String)> {
    if n > MAX_ELEMENTS {
        Err((
            ErrorKind::TooLarge,
            format!("it holds {n} elements; a buffer is limited to {MAX_ELEMENTS}"),
        ))
    } else {
        Ok(())
    }
}

/// Raw little-endian elements.
pub fn from_binary(elem: ElemType, bytes: Vec<u8>) -> Result<Buffer, (ErrorKind, String)> {
    let esize = elem.size();
    if !bytes.len().is_multiple_of(esize) {
        return Err((
            ErrorKind::File,
            format!(
                "its size, {} bytes, is not a multiple of {esize} (the size of `{elem}`)",
                bytes.len()
            ),
        ));
    }
    check_count((bytes.len() / esize) as u64)?;
    if elem == ElemType::Bool {
        if let Some(at) = bytes.iter().position(|&b| b > 1) {
            return Err((
                ErrorKind::BadValue,
                format!("byte {at} is {}, but a `bool` must be 0 or 1", bytes[at]),
            ));
        }
    }
    Buffer::from_bytes(elem, bytes).ok_or((
        ErrorKind::File,
        "its size does not fit the element type".into(),
    ))
}

/// Whitespace- or comma-separated literals with `#` comments.
pub fn from_text(elem: ElemType, text: &str) -> Result<Buffer, (ErrorKind, String)> {
    let mut bytes = Vec::new();
    let mut count = 0u64;
    for (lineno, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        for tok in line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|t| !t.is_empty())
        {
            let at = || format!("line {}: ", lineno + 1);
            let lit = parse_literal(tok).map_err(|m| (ErrorKind::File, format!("{}{m}", at())))?;
            let v = Value::from_literal(elem, &lit)
                .map_err(|m| (ErrorKind::BadValue, format!("{}{m}", at())))?;
            count += 1;
            check_count(count)?;
            v.write_le(&mut bytes);
        }
    }
    Buffer::from_bytes(elem, bytes).ok_or((ErrorKind::File, "internal size mismatch".into()))
}

/// A JSON array (nested arrays flattened).
pub fn from_json(elem: ElemType, bytes: &[u8]) -> Result<Buffer, (ErrorKind, String)> {
    let json: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| (ErrorKind::File, format!("it is not valid JSON: {e}")))?;
    if !json.is_array() {
        return Err((
            ErrorKind::File,
            "it must hold a JSON array of numbers, like `[1, 2.5, 3]`".into(),
        ));
    }
    let mut out = Vec::new();
    let mut count = 0u64;
    flatten_json(&json, elem, &mut out, &mut count)?;
    Buffer::from_bytes(elem, out).ok_or((ErrorKind::File, "internal size mismatch".into()))
}

fn flatten_json(
    j: &serde_json::Value,
    elem: ElemType,
    out: &mut Vec<u8>,
    count: &mut u64,
) -> Result<(), (ErrorKind, String)> {
    use serde_json::Value as J;
    let index = *count;
    let bad = |what: String| (ErrorKind::File, format!("element {index}: {what}"));
    let lit = match j {
        J::Array(items) => {
            // serde_json refuses nesting deeper than 128, so the recursion is bounded.
            for item in items {
                flatten_json(item, elem, out, count)?;
            }
            return Ok(());
        }
        J::Bool(b) => Literal::Bool(*b),
        J::Number(n) => {
            if let Some(u) = n.as_u64() {
                Literal::Int(u.into())
            } else if let Some(i) = n.as_i64() {
                Literal::Int(i.into())
            } else {
                Literal::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        J::String(s) => match parse_literal(s) {
            Ok(l @ Literal::Float(x)) if !x.is_finite() => l,
            _ => return Err(bad(format!("the string {j} is not a number (only \"NaN\", \"inf\" and \"-inf\" are allowed as strings)"))),
        },
        J::Null => return Err(bad("`null` is not a number".into())),
        J::Object(_) => return Err(bad("an object is not a number".into())),
    };
    let v = Value::from_literal(elem, &lit)
        .map_err(|m| (ErrorKind::BadValue, format!("element {index}: {m}")))?;
    *count += 1;
    check_count(*count)?;
    v.write_le(out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_extension() {
        assert_eq!(FileFormat::of(Path::new("a.txt")), FileFormat::Text);
        assert_eq!(FileFormat::of(Path::new("a.TXT")), FileFormat::Text);
        assert_eq!(FileFormat::of(Path::new("a.json")), FileFormat::Json);
        assert_eq!(FileFormat::of(Path::new("a.bin")), FileFormat::Binary);
        assert_eq!(FileFormat::of(Path::new("a")), FileFormat::Binary);
    }

    #[test]
    fn text() {
        let b = from_text(ElemType::F32, "1 2.5\n-1e3, # comment 9\n inf").unwrap();
        assert_eq!(
            b.to_vec::<f32>(),
            Some(vec![1.0, 2.5, -1000.0, f32::INFINITY])
        );
        let e = from_text(ElemType::I32, "1\n2.5").unwrap_err();
        assert_eq!(e.0, ErrorKind::BadValue);
        assert!(e.1.starts_with("line 2: "), "{}", e.1);
        let e = from_text(ElemType::I32, "1 x").unwrap_err();
        assert_eq!(e.0, ErrorKind::File);
        assert!(from_text(ElemType::U8, "").unwrap().is_empty());
    }

    #[test]
    fn json() {
        let b = from_json(ElemType::I64, b"[1, -2, [3, [4]]]").unwrap();
        assert_eq!(b.to_vec::<i64>(), Some(vec![1, -2, 3, 4]));
        let b = from_json(ElemType::F64, br#"[0.5, "-inf", 2]"#).unwrap();
        assert_eq!(b.to_vec::<f64>(), Some(vec![0.5, f64::NEG_INFINITY, 2.0]));
        let b = from_json(ElemType::Bool, b"[true, 0, 1]").unwrap();
        assert_eq!(b.to_vec::<bool>(), Some(vec![true, false, true]));
        assert_eq!(
            from_json(ElemType::I32, b"{}").unwrap_err().0,
            ErrorKind::File
        );
        assert_eq!(
            from_json(ElemType::I32, b"[1,").unwrap_err().0,
            ErrorKind::File
        );
        assert_eq!(
            from_json(ElemType::I32, b"[null]").unwrap_err().0,
            ErrorKind::File
        );
        assert_eq!(
            from_json(ElemType::I32, br#"["5"]"#).unwrap_err().0,
            ErrorKind::File
        );
        let e = from_json(ElemType::U8, b"[1, 256]").unwrap_err();
        assert_eq!(
            e,
            (
                ErrorKind::BadValue,
                "element 1: `256` does not fit in `uint8` (0 to 255)".into()
            )
        );
        assert_eq!(
            from_json(ElemType::U64, b"[18446744073709551615]")
                .unwrap()
                .to_vec::<u64>(),
            Some(vec![u64::MAX])
        );
    }

    #[test]
    fn binary() {
        let b = from_binary(ElemType::U16, vec![1, 0, 0, 1]).unwrap();
        assert_eq!(b.to_vec::<u16>(), Some(vec![1, 256]));
        assert_eq!(
            from_binary(ElemType::U16, vec![1, 0, 0]).unwrap_err().0,
            ErrorKind::File
        );
        assert_eq!(
            from_binary(ElemType::Bool, vec![0, 1, 2]).unwrap_err().0,
            ErrorKind::BadValue
        );
    }
}
