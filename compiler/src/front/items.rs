//! Top-level items of a token stream: where each declaration or function begins and
//! ends, from its braces and semicolons alone.
//!
//! Shared by the parser (whose recovery parses a broken unit item by item) and the
//! standard library's index (`stdlib_scan`, which the build script runs as well, so this
//! module depends on nothing else).

use std::ops::Range;

/// What [`item_ranges`] needs to know of a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemTok {
    LBrace,
    RBrace,
    Semi,
    Typedef,
    StructOrEnum,
    Ident,
    Other,
}

/// Cuts `len` tokens, classified by `kind`, into top-level items. A `typedef` runs to
/// its `;`; anything else ends at a `;` at brace depth 0 or at the `}` that returns to
/// depth 0 (taking a `;` right after it, as in `struct S { ... };`). Unbalanced `}` at
/// depth 0 stand alone. Shared by the parser's recovery and the standard library's
/// item index (`stdlib_scan`), which cuts raw tokens the same way, at build time too.
pub fn item_ranges(len: usize, kind: impl Fn(usize) -> ItemTok) -> Vec<Range<usize>> {
    let mut items = Vec::new();
    let mut start = 0;
    let mut depth = 0usize;
    let mut i = 0;
    while i < len {
        let is_typedef = kind(start) == ItemTok::Typedef;
        match kind(i) {
            ItemTok::LBrace => depth += 1,
            ItemTok::RBrace if depth == 0 => {
                // A stray `}`: its own item, which reports it.
                if start < i {
                    items.push(start..i);
                }
                items.push(i..i + 1);
                start = i + 1;
            }
            ItemTok::RBrace => {
                depth -= 1;
                let declares_more = kind(start) == ItemTok::StructOrEnum
                    && i + 1 < len
                    && kind(i + 1) == ItemTok::Ident;
                if depth == 0 && !is_typedef && !declares_more {
                    let end = if i + 1 < len && kind(i + 1) == ItemTok::Semi {
                        i + 2
                    } else {
                        i + 1
                    };
                    items.push(start..end);
                    start = end;
                    i = end;
                    continue;
                }
            }
            ItemTok::Semi if depth == 0 => {
                items.push(start..i + 1);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < len {
        items.push(start..len);
    }
    items
}
