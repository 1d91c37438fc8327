//! The examples gallery: every kernel of `examples/`, embedded at build time, with
//! the launch its header suggests (the `spmdc run ...` command in its leading
//! comment), so the page can run each as it is.

use serde::Serialize;
use serde_json::Value;

/// `(file name, source)` of every example, by name.
pub const EXAMPLES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/playground_examples.rs"));

/// Where the examples' `#include`s resolve (the repository's `examples/`, as built).
pub fn include_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples"))
}

/// A launch from an example's header.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Launch {
    pub entry: String,
    pub args: Vec<String>,
    pub grid: Option<String>,
    pub block: Option<String>,
    pub target: Option<String>,
    pub print: Vec<String>,
    /// An argument reads a file (`@PATH`), which the playground does not: the page
    /// shows the launch but cannot run it as it is.
    pub needs_files: bool,
}

/// The `spmdc run` commands of a source's leading comment, continuation lines
/// (ending in `\`) joined.
fn header_commands(source: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut current: Option<String> = None;
    for line in source.lines() {
        let Some(text) = line.trim_start().strip_prefix("//") else {
            if !line.trim().is_empty() {
                break;
            }
            continue;
        };
        let text = text.trim();
        let piece = match current.take() {
            Some(mut c) => {
                c.push(' ');
                c.push_str(text);
                c
            }
            None if text.starts_with("spmdc run ") => text.to_string(),
            None => continue,
        };
        match piece.strip_suffix('\\') {
            Some(open) => current = Some(open.trim_end().to_string()),
            None => commands.push(piece),
        }
    }
    commands
}

/// The launch a `spmdc run` command describes.
fn launch_of(command: &str) -> Launch {
    let words = crate::launch::shell_words(command);
    let mut launch = Launch::default();
    let mut i = 0;
    while i < words.len() {
        let value = words.get(i + 1).cloned().unwrap_or_default();
        let took = match words[i].as_str() {
            "--entry" => {
                launch.entry = value;
                true
            }
            "--arg" => {
                launch.needs_files |= value.contains("=@");
                launch.args.push(value);
                true
            }
            "--grid" => {
                launch.grid = Some(value);
                true
            }
            "--block" => {
                launch.block = Some(value);
                true
            }
            "--target" => {
                launch.target = Some(value);
                true
            }
            "--print" => {
                launch.print.push(value);
                true
            }
            _ => false,
        };
        i += if took { 2 } else { 1 };
    }
    launch
}

/// Every launch an example's header suggests.
pub fn launches(source: &str) -> Vec<Launch> {
    header_commands(source)
        .iter()
        .map(|c| launch_of(c))
        .filter(|l| !l.entry.is_empty())
        .collect()
}

/// `GET /api/examples`: `[{name, source, launches}]`.
pub fn gallery_json() -> Value {
    Value::Array(
        EXAMPLES
            .iter()
            .map(|(name, source)| {
                serde_json::json!({
                    "name": name,
                    "source": source,
                    "launches": launches(source),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_launches_join_continuations_and_unquote() {
        let src = "// k\n// Suggested launch:\n//   spmdc run k.spmd --entry f --grid 2 \\\n//       --arg x='range(4)' --arg f=@in.txt --print x\n// Expected: ...\n\nexport void f() {}\n";
        let l = launches(src);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].entry, "f");
        assert_eq!(l[0].grid.as_deref(), Some("2"));
        assert_eq!(l[0].args, ["x=range(4)", "f=@in.txt"]);
        assert_eq!(l[0].print, ["x"]);
        assert!(l[0].needs_files);
    }

    #[test]
    fn every_example_suggests_a_launch() {
        assert!(!EXAMPLES.is_empty());
        for (name, source) in EXAMPLES {
            assert!(
                !launches(source).is_empty(),
                "{name} has no launch in its header"
            );
        }
    }
}
