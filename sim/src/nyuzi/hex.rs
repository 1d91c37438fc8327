//! The upstream hex image format (notes §6; written by NyuziToolchain's elf2hex, read
//! by the emulator's loader and Verilog `$readmemh`).
//!
//! Whitespace-separated tokens of at most 8 hex digits; each token fills one 32-bit
//! word, starting at word 0, and is byte-swapped on load, so a token spells the word's
//! four bytes in memory (little-endian) order: the instruction `0xc0018022` is written
//! `228001c0`. `@hhhh` sets the current *word* index. `//` line comments and `/* */`
//! block comments are allowed.

use std::fmt::Write as _;

/// Parses an image into `(word index, word value as loaded)` pairs in file order.
pub fn parse(text: &str) -> Result<Vec<(u32, u32)>, String> {
    let mut out = Vec::new();
    let mut index: u64 = 0;
    let mut rest = text;
    let mut line = 1usize;
    loop {
        // Skip whitespace and comments.
        let trimmed = rest.trim_start();
        line += rest[..rest.len() - trimmed.len()].matches('\n').count();
        rest = trimmed;
        if rest.is_empty() {
            break;
        }
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |i| &r[i..]);
            continue;
        }
        if let Some(r) = rest.strip_prefix("/*") {
            let end = r
                .find("*/")
                .ok_or_else(|| format!("line {line}: unterminated /* comment"))?;
            line += r[..end].matches('\n').count();
            rest = &r[end + 2..];
            continue;
        }
        let len = rest
            .find(|c: char| c.is_whitespace() || c == '/')
            .unwrap_or(rest.len());
        let (token, r) = rest.split_at(len);
        rest = r;
        if let Some(addr) = token.strip_prefix('@') {
            index = u64::from(hex_value(addr, line)?);
            continue;
        }
        let value = hex_value(token, line)?;
        let at = u32::try_from(index)
            .map_err(|_| format!("line {line}: image extends beyond the 32-bit space"))?;
        out.push((at, value.swap_bytes()));
        index += 1;
    }
    Ok(out)
}

fn hex_value(token: &str, line: usize) -> Result<u32, String> {
    if token.is_empty() || token.len() > 8 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "line {line}: `{token}` is not a hex word of at most 8 digits"
        ));
    }
    u32::from_str_radix(token, 16).map_err(|e| format!("line {line}: `{token}`: {e}"))
}

/// Writes words (word index, value) as an image: one 8-digit token per line in memory
/// byte order, with an `@index` line wherever a word does not follow its predecessor.
pub fn write(words: &[(u32, u32)]) -> String {
    let mut s = String::with_capacity(words.len() * 9);
    let mut next: Option<u32> = Some(0);
    for &(index, value) in words {
        if next != Some(index) {
            let _ = writeln!(s, "@{index:x}");
        }
        let _ = writeln!(s, "{:08x}", value.swap_bytes());
        next = index.checked_add(1);
    }
    s
}
