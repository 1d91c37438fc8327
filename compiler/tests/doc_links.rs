//! Every relative link in README.md, docs/*.md and lang-spec/*.md points at a file
//! that exists, and a link to a heading of a Markdown file (`file.md#anchor`, or
//! `#anchor` in the same file) at a heading or an `<a id>` that the file has. Pages
//! move (the result pages went from lang-spec/ to docs/); this keeps every link true.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The pages checked: README.md and the Markdown files of docs/ and lang-spec/.
fn pages() -> Vec<PathBuf> {
    let root = repo();
    let mut out = vec![root.join("README.md")];
    for dir in ["docs", "lang-spec"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        files.sort();
        out.extend(files);
    }
    out
}

/// The lines of `text` outside fenced code blocks, with their numbers (from 1).
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = Some(&t[..3]);
            continue;
        }
        out.push((i + 1, line));
    }
    out
}

/// `line` without its inline code spans.
fn without_code(line: &str) -> String {
    let mut plain = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            plain.push(c);
        }
    }
    plain
}

/// The targets of the inline links and images of a line: `[text](target)`.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        // The target ends at the matching `)` (targets here have no nested parentheses)
        // or at a space before a title.
        let end = after.find(')').unwrap_or(after.len());
        let target = after[..end].split_whitespace().next().unwrap_or("");
        out.push(target.trim_matches(['<', '>']).to_string());
        rest = &after[end.min(after.len())..];
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped,
/// spaces made `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a Markdown file defines: its headings' slugs (numbered `-1`, `-2`
/// when repeated) and its `<a id="...">` and `name=` anchors.
fn anchors(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for (_, line) in prose(text) {
        let t = line.trim_start();
        if t.starts_with('#') {
            let title = t.trim_start_matches('#');
            if title.starts_with(' ') {
                let base = slug(&title.replace('`', ""));
                let mut s = base.clone();
                let mut n = 0;
                while out.contains(&s) {
                    n += 1;
                    s = format!("{base}-{n}");
                }
                out.insert(s);
            }
        }
        for key in ["id=\"", "name=\""] {
            let mut rest = t;
            while let Some(at) = rest.find(key) {
                let after = &rest[at + key.len()..];
                let end = after.find('"').unwrap_or(after.len());
                out.insert(after[..end].to_string());
                rest = &after[end..];
            }
        }
    }
    out
}

/// The problems with the relative links of `page`.
fn broken_links(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let dir = page.parent().unwrap();
    let name = page
        .strip_prefix(repo())
        .unwrap_or(page)
        .display()
        .to_string();
    let mut out = Vec::new();
    for (line_no, line) in prose(&text) {
        for target in link_targets(&without_code(line)) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                page.to_path_buf()
            } else {
                dir.join(file)
            };
            if !path.exists() {
                out.push(format!("{name}:{line_no}: `{target}`: no such file"));
                continue;
            }
            if let Some(a) = anchor {
                if path.extension().is_some_and(|e| e == "md") {
                    let there = std::fs::read_to_string(&path).unwrap();
                    if !anchors(&there).contains(a) {
                        out.push(format!("{name}:{line_no}: `{target}`: no heading `#{a}`"));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let pages = pages();
    assert!(
        pages.len() > 20,
        "expected README.md, docs/ and lang-spec/, found {pages:?}"
    );
    let mut broken = Vec::new();
    let mut links = 0;
    for p in &pages {
        let text = std::fs::read_to_string(p).unwrap();
        links += prose(&text)
            .iter()
            .map(|(_, l)| link_targets(&without_code(l)).len())
            .sum::<usize>();
        broken.extend(broken_links(p));
    }
    assert!(links > 100, "only {links} links found: is the scan broken?");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_scanner_finds_links_and_anchors() {
    assert_eq!(
        link_targets("see [a](x.md#y) and ![c](charts/d.svg \"t\"), `[no](z)`"),
        ["x.md#y", "charts/d.svg", "z"]
    );
    // Code spans and fenced blocks hold no links.
    let lines = prose("see [a](x.md) `[no](z)`\n```\n[in](code)\n```\n");
    let found: Vec<String> = lines
        .iter()
        .flat_map(|(_, l)| link_targets(&without_code(l)))
        .collect();
    assert_eq!(found, ["x.md"]);
    let a =
        anchors("# The `spmdc` CLI: at a glance\n## Runs\n## Runs\n<a id=\"nyuzi-target\"></a>\n");
    for want in [
        "the-spmdc-cli-at-a-glance",
        "runs",
        "runs-1",
        "nyuzi-target",
    ] {
        assert!(a.contains(want), "{want} not in {a:?}");
    }
}
