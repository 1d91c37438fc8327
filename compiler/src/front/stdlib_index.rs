//! The standard library's items, indexed by the names they declare, so that a
//! program's front end parses and checks only the items it can reach.
//!
//! The standard library is about 4,000 lines, mostly prototypes, and a kernel uses a
//! handful of its functions. Preprocessing and parsing all of it cost more than
//! compiling most kernels. So the library is cut into top-level items (from raw tokens,
//! the way the parser's recovery cuts a stream: [`super::items`]), and a program gets
//! the items that declare a name it mentions, then the items those mention, until
//! nothing new is reached. The cutting is done by the build script
//! ([`super::stdlib_scan`]), so a compile only looks names up in static tables.
//!
//! This is exact for what sema and lowering see: an item nobody mentions can neither be
//! called nor named, and every overload of a mentioned name comes along, so overload
//! resolution, redeclaration checks and lowering see the same candidates as with the
//! whole library. The library has no preprocessor directives, so an item's tokens do
//! not depend on what comes before it (a program compiled with `-D` definitions, which
//! could rename the library's tokens, gets the whole library).

use std::ops::Range;
use std::sync::OnceLock;

// NAMES, DECLARED_BY and ITEMS: `stdlib_scan::Tables` of the library, from build.rs.
include!(concat!(env!("OUT_DIR"), "/stdlib_index.rs"));

/// A library's index: names sorted, the items declaring each, and per item its bytes
/// and the names it mentions (indices into the names).
#[derive(Clone, Copy, Debug)]
pub struct StdlibIndex<'a> {
    names: &'a [&'a str],
    declared_by: &'a [&'a [u16]],
    items: &'a [(u32, u32, &'a [u16])],
}

/// The index of [`super::STDLIB_SOURCE`].
pub fn stdlib_index() -> StdlibIndex<'static> {
    StdlibIndex {
        names: &NAMES,
        declared_by: &DECLARED_BY,
        items: &ITEMS,
    }
}

impl<'a> StdlibIndex<'a> {
    /// The byte ranges of the items a program mentioning `mentioned` reaches, in
    /// library order: the items declaring a mentioned name, and what they mention in
    /// turn.
    pub fn reachable<'m>(&self, mentioned: impl IntoIterator<Item = &'m str>) -> Vec<Range<u32>> {
        let mut taken = vec![false; self.items.len()];
        let mut work: Vec<u16> = Vec::new();
        let mut take = |name: usize, work: &mut Vec<u16>| {
            for &i in self.declared_by[name] {
                if !std::mem::replace(&mut taken[usize::from(i)], true) {
                    work.push(i);
                }
            }
        };
        for name in mentioned {
            if let Ok(at) = self.names.binary_search(&name) {
                take(at, &mut work);
            }
        }
        while let Some(i) = work.pop() {
            for &name in self.items[usize::from(i)].2 {
                take(usize::from(name), &mut work);
            }
        }
        self.items
            .iter()
            .zip(taken)
            .filter(|(_, t)| *t)
            .map(|(&(start, end, _), _)| start..end)
            .collect()
    }

    /// How many items the library has.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// Every name the standard library declares, sorted: its part of "did you mean"
/// candidates.
pub fn stdlib_names() -> &'static [&'static str] {
    static DECLARED: OnceLock<Vec<&'static str>> = OnceLock::new();
    DECLARED.get_or_init(|| {
        NAMES
            .iter()
            .zip(DECLARED_BY)
            .filter(|(_, by)| !by.is_empty())
            .map(|(&name, _)| name)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::super::stdlib_scan::{tables, Tables};
    use super::super::token::keyword;
    use super::super::STDLIB_SOURCE;
    use super::*;

    /// Looks `names` up in the tables of `text`, giving each reached item's text up to
    /// its first `(`.
    fn reach<'t>(tables: &Tables<'t>, text: &'t str, names: &[&str]) -> Vec<&'t str> {
        let declared_by: Vec<&[u16]> = tables.declared_by.iter().map(Vec::as_slice).collect();
        let items: Vec<(u32, u32, &[u16])> = tables
            .items
            .iter()
            .map(|(s, e, m)| (*s, *e, m.as_slice()))
            .collect();
        let index = StdlibIndex {
            names: &tables.names,
            declared_by: &declared_by,
            items: &items,
        };
        index
            .reachable(names.iter().copied())
            .into_iter()
            .map(|r| {
                text[r.start as usize..r.end as usize]
                    .split('(')
                    .next()
                    .unwrap()
            })
            .collect()
    }

    fn is_keyword(word: &str) -> bool {
        keyword(word).is_some()
    }

    #[test]
    fn a_function_reaches_what_its_body_calls() {
        let text = "float f(float x);\n\
                    static float g(float x) { return f(x) + 1; }\n\
                    float h(float x) { return g(x); }\n\
                    float h(double x);\n\
                    int unrelated(int a);\n";
        let t = tables(text, is_keyword);
        assert_eq!(t.items.len(), 5);
        assert_eq!(
            reach(&t, text, &["h"]),
            ["float f", "static float g", "float h", "float h"]
        );
        assert!(reach(&t, text, &["x", "float"]).is_empty());
        assert_eq!(reach(&t, text, &["unrelated"]), ["int unrelated"]);
    }

    #[test]
    fn types_and_enum_constants_are_declared() {
        let text = "struct P { float x; };\n\
                    typedef struct P Point;\n\
                    enum Color { RED, GREEN = 2 };\n\
                    uniform int table[4] = { 1, 2, 3, 4 };\n";
        let t = tables(text, is_keyword);
        assert_eq!(t.items.len(), 4);
        // `typedef struct P Point;` mentions `P` outside brackets: it counts as declaring
        // it too, which only takes the typedef along.
        assert_eq!(
            reach(&t, text, &["P"]),
            ["struct P { float x; };", "typedef struct P Point;"]
        );
        assert_eq!(
            reach(&t, text, &["Point"]).len(),
            2,
            "a typedef reaches its struct"
        );
        assert_eq!(reach(&t, text, &["GREEN"]).len(), 1);
        assert_eq!(
            reach(&t, text, &["table"]),
            ["uniform int table[4] = { 1, 2, 3, 4 };"]
        );
        assert!(
            reach(&t, text, &["x"]).is_empty(),
            "a member is not declared"
        );
    }

    /// The tables the build script embedded are those of the library this binary
    /// holds.
    #[test]
    fn the_embedded_tables_are_the_librarys() {
        let t = tables(STDLIB_SOURCE, is_keyword);
        assert_eq!(t.names, NAMES);
        let declared_by: Vec<&[u16]> = t.declared_by.iter().map(Vec::as_slice).collect();
        assert_eq!(declared_by, DECLARED_BY);
        let items: Vec<(u32, u32, &[u16])> = t
            .items
            .iter()
            .map(|(s, e, m)| (*s, *e, m.as_slice()))
            .collect();
        assert_eq!(items, ITEMS);
        assert!(stdlib_index().len() > 500, "{} items", stdlib_index().len());
        assert!(stdlib_names().contains(&"clamp"));
        assert!(stdlib_names().contains(&"__spmdc_rt_udivrem32_u"));
        assert!(!stdlib_names().contains(&"uniform"));
    }
}
