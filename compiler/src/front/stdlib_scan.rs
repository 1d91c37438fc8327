//! Cuts a library source into top-level items and records the names each declares and
//! mentions: the tables behind [`super::stdlib_index`].
//!
//! The build script runs this on the standard library (it includes this module, the
//! lexer and [`super::items`] by path) and embeds the tables, so a compile does not lex
//! the library to find its items; the index's tests run it again and compare.

use super::items::{item_ranges, ItemTok};
use super::lexer::{lex, RawTok, RawToken};

/// An item's bytes and names, as found.
struct Scanned<'t> {
    bytes: (u32, u32),
    declares: Vec<&'t str>,
    mentions: Vec<&'t str>,
}

/// The index of a library source: every name it mentions, sorted; per name, the items
/// declaring it; per item, its bytes and the names it mentions (each once, as indices
/// into `names`).
#[derive(Debug, PartialEq, Eq)]
pub struct Tables<'t> {
    pub names: Vec<&'t str>,
    pub declared_by: Vec<Vec<u16>>,
    pub items: Vec<(u32, u32, Vec<u16>)>,
}

/// The tables of `text`, whose keywords `is_keyword` knows.
pub fn tables<'t>(text: &'t str, is_keyword: impl Fn(&str) -> bool) -> Tables<'t> {
    let scanned = scan(text, &is_keyword);
    let mut names: Vec<&str> = scanned.iter().flat_map(|i| i.mentions.clone()).collect();
    names.sort_unstable();
    names.dedup();
    let id = |name: &str| {
        let at = names.binary_search(&name).expect("a scanned name");
        u16::try_from(at).expect("a library mentions fewer than 65,536 names")
    };
    let mut declared_by = vec![Vec::new(); names.len()];
    let mut items = Vec::with_capacity(scanned.len());
    for (index, item) in scanned.iter().enumerate() {
        let index = u16::try_from(index).expect("a library has fewer than 65,536 items");
        for &name in &item.declares {
            let by: &mut Vec<u16> = &mut declared_by[usize::from(id(name))];
            if by.last() != Some(&index) {
                by.push(index);
            }
        }
        let mut mentions: Vec<u16> = item.mentions.iter().map(|&n| id(n)).collect();
        mentions.sort_unstable();
        mentions.dedup();
        items.push((item.bytes.0, item.bytes.1, mentions));
    }
    Tables {
        names,
        declared_by,
        items,
    }
}

impl Tables<'_> {
    /// The tables as Rust statics (`NAMES`, `DECLARED_BY`, `ITEMS`), for the build
    /// script to write out.
    pub fn to_rust(&self) -> String {
        let list = |ids: &[u16]| {
            let ids: Vec<String> = ids.iter().map(u16::to_string).collect();
            format!("&[{}]", ids.join(","))
        };
        let mut out = String::new();
        out.push_str(&format!("static NAMES: [&str; {}] = [\n", self.names.len()));
        for name in &self.names {
            out.push_str(&format!("    {name:?},\n"));
        }
        out.push_str("];\n");
        let n = self.declared_by.len();
        out.push_str(&format!("static DECLARED_BY: [&[u16]; {n}] = [\n"));
        for by in &self.declared_by {
            out.push_str(&format!("    {},\n", list(by)));
        }
        out.push_str("];\n");
        let n = self.items.len();
        out.push_str(&format!("static ITEMS: [(u32, u32, &[u16]); {n}] = [\n"));
        for (start, end, mentions) in &self.items {
            out.push_str(&format!("    ({start}, {end}, {}),\n", list(mentions)));
        }
        out.push_str("];\n");
        out
    }
}

fn scan<'t>(text: &'t str, is_keyword: &impl Fn(&str) -> bool) -> Vec<Scanned<'t>> {
    let raw: Vec<RawToken> = lex(text)
        .into_iter()
        .filter(|t| t.kind != Some(RawTok::Newline))
        .collect();
    let word = |t: &RawToken| &text[t.start as usize..t.end as usize];
    // Each token is classified once: the keyword test is the costly part.
    let kinds: Vec<ItemTok> = raw
        .iter()
        .map(|t| item_tok(t, word(t), is_keyword))
        .collect();
    item_ranges(raw.len(), |i| kinds[i])
        .into_iter()
        .map(|range| {
            let (toks, kinds) = (&raw[range.clone()], &kinds[range]);
            let names = toks
                .iter()
                .zip(kinds)
                .filter(|(_, k)| **k == ItemTok::Ident);
            Scanned {
                bytes: (toks[0].start, toks[toks.len() - 1].end),
                declares: declared_names(toks, kinds, word),
                mentions: names.map(|(t, _)| word(t)).collect(),
            }
        })
        .collect()
}

/// How the item cutter sees a raw token; `Ident` is a name, not a keyword.
fn item_tok(t: &RawToken, word: &str, is_keyword: &impl Fn(&str) -> bool) -> ItemTok {
    match t.kind {
        Some(RawTok::LBrace) => ItemTok::LBrace,
        Some(RawTok::RBrace) => ItemTok::RBrace,
        Some(RawTok::Semi) => ItemTok::Semi,
        Some(RawTok::Ident) => match word {
            "typedef" => ItemTok::Typedef,
            "struct" | "enum" => ItemTok::StructOrEnum,
            _ if is_keyword(word) => ItemTok::Other,
            _ => ItemTok::Ident,
        },
        _ => ItemTok::Other,
    }
}

/// The names an item may declare: every name outside its brackets (a function's or a
/// variable's name, a struct tag, a typedef's name; a type name it merely uses too,
/// which only makes the item reachable more often), and an enum's constants.
fn declared_names<'t>(
    toks: &[RawToken],
    kinds: &[ItemTok],
    word: impl Fn(&RawToken) -> &'t str,
) -> Vec<&'t str> {
    let is_enum = toks
        .iter()
        .zip(kinds)
        .take(2)
        .any(|(t, k)| *k == ItemTok::StructOrEnum && word(t) == "enum");
    let mut depth = 0i32;
    let mut braces = 0i32;
    let mut names = Vec::new();
    for (t, k) in toks.iter().zip(kinds) {
        match t.kind {
            Some(RawTok::LParen | RawTok::LBracket) => depth += 1,
            Some(RawTok::RParen | RawTok::RBracket) => depth -= 1,
            Some(RawTok::LBrace) => braces += 1,
            Some(RawTok::RBrace) => braces -= 1,
            _ => {}
        }
        let outside = depth == 0 && (braces == 0 || (is_enum && braces == 1));
        if outside && *k == ItemTok::Ident {
            names.push(word(t));
        }
    }
    names
}
