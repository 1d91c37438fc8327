//! The standard library's items, indexed by the names they declare, so that a
//! program's front end parses and checks only the items it can reach.
//!
//! The standard library is about 4,000 lines, mostly prototypes, and a kernel uses a
//! handful of its functions. Preprocessing and parsing all of it cost more than
//! compiling most kernels. So the library is cut into top-level items once per process
//! (from raw tokens, the way the parser's recovery cuts a stream:
//! [`super::parse::item_ranges`]), and a program gets the items that declare a name it
//! mentions, then the items those mention, until nothing new is reached.
//!
//! This is exact for what sema and lowering see: an item nobody mentions can neither be
//! called nor named, and every overload of a mentioned name comes along, so overload
//! resolution, redeclaration checks and lowering see the same candidates as with the
//! whole library. The library has no preprocessor directives, so an item's tokens do
//! not depend on what comes before it (a program compiled with `-D` definitions, which
//! could rename the library's tokens, gets the whole library).

use std::ops::Range;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use super::lexer::{lex, RawTok, RawToken};
use super::parse::{item_ranges, ItemTok};
use super::token::{keyword, Tok};
use super::STDLIB_SOURCE;

/// One top-level item of the library.
#[derive(Debug)]
struct Item {
    /// Its bytes in [`STDLIB_SOURCE`].
    bytes: Range<u32>,
    /// Every name it mentions (its own included), as often as it does.
    mentions: Vec<&'static str>,
}

/// The library's items and who declares what.
#[derive(Debug)]
pub struct StdlibIndex {
    items: Vec<Item>,
    /// Name to the items that declare it, in library order.
    declared_by: FxHashMap<&'static str, Vec<u32>>,
    /// Every declared name, sorted: the library's part of "did you mean" candidates.
    names: Vec<&'static str>,
}

/// The index of [`STDLIB_SOURCE`], built on first use.
pub fn stdlib_index() -> &'static StdlibIndex {
    static INDEX: OnceLock<StdlibIndex> = OnceLock::new();
    INDEX.get_or_init(|| StdlibIndex::of(STDLIB_SOURCE))
}

impl StdlibIndex {
    fn of(text: &'static str) -> StdlibIndex {
        let raw: Vec<RawToken> = lex(text)
            .into_iter()
            .filter(|t| t.kind != Some(RawTok::Newline))
            .collect();
        let word = |t: &RawToken| &text[t.start as usize..t.end as usize];
        // Each token is classified once: `keyword` is the costly part.
        let kinds: Vec<ItemTok> = raw.iter().map(|t| item_tok(t, word(t))).collect();
        let mut declared_by: FxHashMap<&'static str, Vec<u32>> = FxHashMap::default();
        let mut items = Vec::new();
        for range in item_ranges(raw.len(), |i| kinds[i]) {
            let (toks, kinds) = (&raw[range.clone()], &kinds[range]);
            let index = items.len() as u32;
            for name in declared_names(toks, kinds, word) {
                let by = declared_by.entry(name).or_default();
                if by.last() != Some(&index) {
                    by.push(index);
                }
            }
            let mentions = toks
                .iter()
                .zip(kinds)
                .filter(|(_, k)| **k == ItemTok::Ident)
                .map(|(t, _)| word(t))
                .collect();
            let bytes = toks[0].start..toks[toks.len() - 1].end;
            items.push(Item { bytes, mentions });
        }
        let mut names: Vec<&'static str> = declared_by.keys().copied().collect();
        names.sort_unstable();
        StdlibIndex {
            items,
            declared_by,
            names,
        }
    }

    /// The byte ranges of the items a program mentioning `mentioned` reaches, in
    /// library order: the items declaring a mentioned name, and what they mention in
    /// turn.
    pub fn reachable<'a>(&self, mentioned: impl IntoIterator<Item = &'a str>) -> Vec<Range<u32>> {
        let mut taken = vec![false; self.items.len()];
        let mut work: Vec<u32> = Vec::new();
        let mut take = |name: &str, work: &mut Vec<u32>| {
            for &i in self.declared_by.get(name).map_or(&[][..], Vec::as_slice) {
                if !std::mem::replace(&mut taken[i as usize], true) {
                    work.push(i);
                }
            }
        };
        for name in mentioned {
            take(name, &mut work);
        }
        while let Some(i) = work.pop() {
            for name in &self.items[i as usize].mentions {
                take(name, &mut work);
            }
        }
        self.items
            .iter()
            .zip(taken)
            .filter(|(_, t)| *t)
            .map(|(item, _)| item.bytes.clone())
            .collect()
    }

    /// Every name the library declares, sorted.
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }

    /// How many items the library has.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// How the item cutter sees a raw token; `Ident` is a name, not a keyword.
fn item_tok(t: &RawToken, word: &str) -> ItemTok {
    match t.kind {
        Some(RawTok::LBrace) => ItemTok::LBrace,
        Some(RawTok::RBrace) => ItemTok::RBrace,
        Some(RawTok::Semi) => ItemTok::Semi,
        Some(RawTok::Ident) => match keyword(word) {
            Some(Tok::KwTypedef) => ItemTok::Typedef,
            Some(Tok::KwStruct | Tok::KwEnum) => ItemTok::StructOrEnum,
            Some(_) => ItemTok::Other,
            None => ItemTok::Ident,
        },
        _ => ItemTok::Other,
    }
}

/// The names an item may declare: every name outside its brackets (a function's or a
/// variable's name, a struct tag, a typedef's name; a type name it merely uses too,
/// which only makes the item reachable more often), and an enum's constants.
fn declared_names<'t>(
    toks: &'t [RawToken],
    kinds: &'t [ItemTok],
    word: impl Fn(&RawToken) -> &'static str + 't,
) -> impl Iterator<Item = &'static str> + 't {
    let is_enum = toks
        .iter()
        .zip(kinds)
        .take(2)
        .any(|(t, k)| *k == ItemTok::StructOrEnum && word(t) == "enum");
    let mut depth = 0i32;
    let mut braces = 0i32;
    toks.iter().zip(kinds).filter_map(move |(t, k)| {
        match t.kind {
            Some(RawTok::LParen | RawTok::LBracket) => depth += 1,
            Some(RawTok::RParen | RawTok::RBracket) => depth -= 1,
            Some(RawTok::LBrace) => braces += 1,
            Some(RawTok::RBrace) => braces -= 1,
            _ => {}
        }
        let outside = depth == 0 && (braces == 0 || (is_enum && braces == 1));
        (outside && *k == ItemTok::Ident).then(|| word(t))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_reaches_what_its_body_calls() {
        let text = "float f(float x);\n\
                    static float g(float x) { return f(x) + 1; }\n\
                    float h(float x) { return g(x); }\n\
                    float h(double x);\n\
                    int unrelated(int a);\n";
        let index = StdlibIndex::of(text);
        assert_eq!(index.len(), 5);
        let pick = |names: &[&str]| -> Vec<&str> {
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
        };
        assert_eq!(
            pick(&["h"]),
            ["float f", "static float g", "float h", "float h"]
        );
        assert_eq!(pick(&["x", "float"]), Vec::<&str>::new());
        assert_eq!(pick(&["unrelated"]), ["int unrelated"]);
    }

    #[test]
    fn types_and_enum_constants_are_declared() {
        let text = "struct P { float x; };\n\
                    typedef struct P Point;\n\
                    enum Color { RED, GREEN = 2 };\n\
                    uniform int table[4] = { 1, 2, 3, 4 };\n";
        let index = StdlibIndex::of(text);
        assert_eq!(index.len(), 4);
        for (name, item) in [("P", 0), ("Point", 1), ("GREEN", 2), ("table", 3)] {
            let got = index.reachable([name]);
            assert!(got.contains(&index.items[item].bytes), "{name}: {got:?}");
        }
        assert!(
            index.reachable(["x"]).is_empty(),
            "a member is not declared"
        );
    }

    #[test]
    fn the_library_is_indexed_whole() {
        let index = stdlib_index();
        let covered: usize = index
            .items
            .iter()
            .map(|i| (i.bytes.end - i.bytes.start) as usize)
            .sum();
        assert!(index.len() > 500, "{} items", index.len());
        assert!(covered > STDLIB_SOURCE.len() / 3);
        assert!(index.names().contains(&"clamp"));
        assert!(index.names().contains(&"__spmdc_rt_udivrem32_u"));
    }
}
