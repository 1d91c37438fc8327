//! Parsing `--arg NAME=SPEC`: the syntax only, without the kernel's types (see
//! [`mod@crate::launch::materialize`] for turning a spec into a value of a parameter's type).
//!
//! ```text
//! arg      = NAME "=" spec
//! spec     = literal | "@" PATH | GEN "(" literal { "," literal } ")"
//! GEN      = "zeros" | "fill" | "range" | "random"
//! literal  = ["+"|"-"] (DECIMAL | "0x" HEX | "0b" BIN | FLOAT | "inf" | "nan") | "true" | "false"
//! ```
//!
//! Spaces around the parts are allowed (`x = fill(8, 2.5)`). Errors point at the part of
//! the text that is wrong.

use std::fmt;
use std::path::PathBuf;

use crate::launch::error::{ErrorKind, LaunchError};

/// A number or boolean as written in a spec, a `.txt` file or a `.json` array.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Literal {
    Bool(bool),
    /// An integer literal (decimal, `0x` hex or `0b` binary, optionally signed). `i128`
    /// holds every `int64` and `uint64` value and then some, so range errors can name
    /// the value.
    Int(i128),
    /// A literal with a fraction or exponent, or `inf`/`nan`.
    Float(f64),
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Int(v) => write!(f, "{v}"),
            Literal::Float(v) => f.write_str(&crate::launch::elem::format_float(v)),
        }
    }
}

/// Parses one literal. The error says what was expected.
pub fn parse_literal(text: &str) -> Result<Literal, String> {
    let t = text.trim();
    match t {
        "true" => return Ok(Literal::Bool(true)),
        "false" => return Ok(Literal::Bool(false)),
        _ => {}
    }
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let lower = body.to_ascii_lowercase();
    let signed_twice = body.starts_with(['+', '-']);
    let bad =
        || format!("`{t}` is not a number (expected e.g. `5`, `-2.5`, `1e20`, `0x10`, `true`)");
    let radix = |digits: &str, radix: u32| -> Result<Literal, String> {
        if digits.is_empty() {
            return Err(bad());
        }
        let v = u128::from_str_radix(digits, radix).map_err(|e| match e.kind() {
            std::num::IntErrorKind::PosOverflow => format!("`{t}` is too large"),
            _ => bad(),
        })?;
        let v = i128::try_from(v).map_err(|_| format!("`{t}` is too large"))?;
        Ok(Literal::Int(if neg { -v } else { v }))
    };
    if let Some(hex) = lower.strip_prefix("0x") {
        return radix(hex, 16);
    }
    if let Some(bin) = lower.strip_prefix("0b") {
        return radix(bin, 2);
    }
    if !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()) {
        return radix(body, 10);
    }
    let special = match lower.as_str() {
        "inf" | "infinity" => Some(f64::INFINITY),
        "nan" => Some(f64::NAN),
        _ => None,
    };
    if let Some(v) = special {
        return Ok(Literal::Float(if neg { -v } else { v }));
    }
    // A decimal float: digits, at most one '.', an optional exponent. Rust's parser
    // would also take `inf`/`infinity` spellings inside; those were handled above, and
    // anything else alphabetic is rejected here first.
    let valid_chars = body
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    let has_digit = body
        .bytes()
        .take_while(|b| !matches!(b, b'e' | b'E'))
        .any(|b| b.is_ascii_digit());
    if !valid_chars || !has_digit || signed_twice {
        return Err(bad());
    }
    let v: f64 = body.parse().map_err(|_| bad())?;
    Ok(Literal::Float(if neg { -v } else { v }))
}

/// The buffer generators, with their argument lists for messages.
pub const GENERATORS: [(&str, &str); 4] = [
    ("zeros", "zeros(N)"),
    ("fill", "fill(N,V)"),
    ("range", "range(N[,START[,STEP]])"),
    ("random", "random(N[,SEED[,LO,HI]])"),
];

/// What a spec asks for, independent of the parameter's type.
#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    /// A scalar value: `5`, `2.5`, `true`.
    Scalar(Literal),
    /// `zeros(N)`: `N` zero elements.
    Zeros { n: u64 },
    /// `fill(N,V)`: `N` copies of `V`.
    Fill { n: u64, value: Literal },
    /// `range(N[,START[,STEP]])`: `START + i*STEP` for `i` in `0..N` (START 0, STEP 1).
    Range {
        n: u64,
        start: Option<Literal>,
        step: Option<Literal>,
    },
    /// `random(N[,SEED[,LO,HI]])`: see [`crate::launch::random`].
    Random {
        n: u64,
        seed: Option<u64>,
        bounds: Option<(Literal, Literal)>,
    },
    /// `@PATH`: a buffer read from a file (format by extension, see
    /// [`crate::launch::files`]).
    File(PathBuf),
}

impl Spec {
    /// Does the spec produce a buffer (rather than a scalar)?
    pub fn is_buffer(&self) -> bool {
        !matches!(self, Spec::Scalar(_))
    }
}

/// One parsed `--arg NAME=SPEC`.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgSpec {
    pub name: String,
    pub spec: Spec,
    /// The whole argument as the user wrote it, for messages.
    pub text: String,
    /// Byte range of the spec (after `=`) in `text`, trimmed.
    pub spec_range: (usize, usize),
}

impl ArgSpec {
    /// The spec part of the text (`range(1000)` in `x=range(1000)`).
    pub fn spec_text(&self) -> &str {
        &self.text[self.spec_range.0..self.spec_range.1]
    }

    /// An error about this argument with its spec underlined.
    pub(crate) fn error(&self, kind: ErrorKind, message: impl Into<String>) -> LaunchError {
        LaunchError::new(kind, message).with_snippet(
            &self.text,
            self.spec_range.0,
            self.spec_range.1,
        )
    }
}

/// A piece of the input: its trimmed text and byte range.
#[derive(Clone, Copy)]
struct Piece<'a> {
    text: &'a str,
    start: usize,
}

impl<'a> Piece<'a> {
    fn end(&self) -> usize {
        self.start + self.text.len()
    }

    fn trimmed(self) -> Piece<'a> {
        let lead = self.text.len() - self.text.trim_start().len();
        Piece {
            text: self.text.trim(),
            start: self.start + lead,
        }
    }

    fn slice(self, from: usize, to: usize) -> Piece<'a> {
        Piece {
            text: &self.text[from..to],
            start: self.start + from,
        }
    }
}

/// Parses `NAME=SPEC`.
pub fn parse_arg(text: &str) -> Result<ArgSpec, LaunchError> {
    let syntax = |msg: String, start: usize, end: usize| {
        LaunchError::new(
            ErrorKind::Syntax,
            format!("invalid argument `{text}`: {msg}"),
        )
        .with_snippet(text, start, end)
    };
    let Some(eq) = text.find('=') else {
        return Err(syntax("expected `NAME=SPEC`".into(), 0, text.len())
            .with_help("write e.g. `--arg n=1000` or `--arg data=range(1000)`"));
    };
    let name = Piece {
        text: &text[..eq],
        start: 0,
    }
    .trimmed();
    let is_ident = name
        .text
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name
            .text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !is_ident {
        let (s, e) = if name.text.is_empty() {
            (eq, eq + 1)
        } else {
            (name.start, name.end())
        };
        return Err(syntax("expected a parameter name before `=`".into(), s, e));
    }
    let spec = Piece {
        text: &text[eq + 1..],
        start: eq + 1,
    }
    .trimmed();
    let parsed = parse_spec_piece(spec)
        .map_err(|(msg, s, e, help)| syntax(msg, s, e).with_help_opt(help))?;
    Ok(ArgSpec {
        name: name.text.to_string(),
        spec: parsed,
        text: text.to_string(),
        spec_range: (spec.start, spec.end()),
    })
}

/// Parses a SPEC on its own (without `NAME=`).
pub fn parse_spec(text: &str) -> Result<Spec, LaunchError> {
    parse_spec_piece(Piece { text, start: 0 }.trimmed()).map_err(|(msg, s, e, help)| {
        LaunchError::new(ErrorKind::Syntax, format!("invalid spec `{text}`: {msg}"))
            .with_snippet(text, s, e)
            .with_help_opt(help)
    })
}

/// A syntax error: message, byte range, optional help.
type SpecError = (String, usize, usize, Option<String>);

fn parse_spec_piece(p: Piece<'_>) -> Result<Spec, SpecError> {
    if p.text.is_empty() {
        return Err((
            "the value is missing after `=`".into(),
            p.start,
            p.start + 1,
            Some(
                "give a number, `zeros(N)`, `fill(N,V)`, `range(N)`, `random(N)` or `@file`".into(),
            ),
        ));
    }
    if let Some(path) = p.text.strip_prefix('@') {
        if path.trim().is_empty() {
            return Err((
                "expected a file name after `@`".into(),
                p.start,
                p.end(),
                None,
            ));
        }
        return Ok(Spec::File(PathBuf::from(path.trim())));
    }
    let ident_len = p
        .text
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    let rest = p.text[ident_len..].trim_start();
    if ident_len > 0 && p.text.as_bytes()[0].is_ascii_alphabetic() && rest.starts_with('(') {
        return parse_generator(p, ident_len);
    }
    match parse_literal(p.text) {
        Ok(lit) => Ok(Spec::Scalar(lit)),
        Err(msg) => {
            // A generator name without its parentheses, or a misspelt one.
            let word = &p.text[..ident_len];
            let help = GENERATORS
                .iter()
                .find(|(g, _)| *g == word)
                .map(|(_, usage)| format!("a buffer is written `{usage}`"));
            let help = help
                .or_else(|| closest_generator(word).map(|g| format!("did you mean `{g}(...)`?")));
            Err((msg, p.start, p.end(), help))
        }
    }
}

/// `GEN ( args )` where the identifier is the first `ident_len` bytes of `p`.
fn parse_generator(p: Piece<'_>, ident_len: usize) -> Result<Spec, SpecError> {
    let word = p.slice(0, ident_len);
    let Some(&(gen, usage)) = GENERATORS.iter().find(|(g, _)| *g == word.text) else {
        let hint = closest_generator(word.text)
            .map(|g| format!("; did you mean `{g}`?"))
            .unwrap_or_default();
        return Err((
            format!("unknown buffer generator `{}`{hint}", word.text),
            word.start,
            word.end(),
            Some("the generators are `zeros(N)`, `fill(N,V)`, `range(N[,START[,STEP]])` and `random(N[,SEED[,LO,HI]])`".into()),
        ));
    };
    let open = ident_len + (p.text[ident_len..].len() - p.text[ident_len..].trim_start().len());
    if !p.text.ends_with(')') {
        return Err((
            format!("expected `)` at the end of `{gen}(...)`"),
            p.end(),
            p.end() + 1,
            Some(format!("write `{usage}`")),
        ));
    }
    let inner = p.slice(open + 1, p.text.len() - 1);
    if let Some(i) = inner.text.find(['(', ')']) {
        let at = inner.start + i;
        return Err((
            "unexpected parenthesis".into(),
            at,
            at + 1,
            Some(format!("write `{usage}`")),
        ));
    }
    let mut args: Vec<Piece<'_>> = Vec::new();
    if !inner.text.trim().is_empty() {
        let mut from = 0;
        for (i, c) in inner.text.char_indices().chain([(inner.text.len(), ',')]) {
            if c == ',' {
                args.push(inner.slice(from, i).trimmed());
                from = i + 1;
            }
        }
    }
    let (min, max) = match gen {
        "zeros" => (1, 1),
        "fill" => (2, 2),
        "range" => (1, 3),
        _ => (1, 4),
    };
    let count_ok = (min..=max).contains(&args.len()) && !(gen == "random" && args.len() == 3);
    if !count_ok {
        let got = args.len();
        let what = if gen == "random" && got == 3 {
            "`random` takes LO and HI together".to_string()
        } else {
            format!("`{gen}` takes {} but got {got}", plural_args(min, max))
        };
        return Err((what, p.start, p.end(), Some(format!("write `{usage}`"))));
    }
    if let Some(empty) = args.iter().find(|a| a.text.is_empty()) {
        return Err((
            "an argument is missing".into(),
            empty.start.saturating_sub(1),
            empty.start + 1,
            Some(format!("write `{usage}`")),
        ));
    }
    let lit = |a: &Piece<'_>| parse_literal(a.text).map_err(|m| (m, a.start, a.end(), None));
    let count = |a: &Piece<'_>| -> Result<u64, SpecError> {
        match lit(a)? {
            Literal::Int(v) if v >= 0 => u64::try_from(v).map_err(|_| {
                (
                    format!("the count `{}` is too large", a.text),
                    a.start,
                    a.end(),
                    None,
                )
            }),
            _ => Err((
                format!("the count must be a non-negative integer, not `{}`", a.text),
                a.start,
                a.end(),
                None,
            )),
        }
    };
    let n = count(&args[0])?;
    Ok(match gen {
        "zeros" => Spec::Zeros { n },
        "fill" => Spec::Fill {
            n,
            value: lit(&args[1])?,
        },
        "range" => Spec::Range {
            n,
            start: args.get(1).map(lit).transpose()?,
            step: args.get(2).map(lit).transpose()?,
        },
        _ => {
            let seed = match args.get(1) {
                None => None,
                Some(a) => match lit(a)? {
                    Literal::Int(v) => Some(u64::try_from(v).map_err(|_| {
                        (
                            format!(
                                "the seed must be an integer from 0 to 2^64-1, not `{}`",
                                a.text
                            ),
                            a.start,
                            a.end(),
                            None,
                        )
                    })?),
                    _ => {
                        return Err((
                            format!("the seed must be an integer, not `{}`", a.text),
                            a.start,
                            a.end(),
                            None,
                        ))
                    }
                },
            };
            let bounds = match (args.get(2), args.get(3)) {
                (Some(lo), Some(hi)) => Some((lit(lo)?, lit(hi)?)),
                _ => None,
            };
            Spec::Random { n, seed, bounds }
        }
    })
}

/// The generator name closest to `word`, if it is a plausible typo.
fn closest_generator(word: &str) -> Option<&'static str> {
    crate::launch::error::closest(word, GENERATORS.iter().map(|(g, _)| *g))
}

fn plural_args(min: usize, max: usize) -> String {
    let n = |k: usize| {
        if k == 1 {
            "1 argument".to_string()
        } else {
            format!("{k} arguments")
        }
    };
    if min == max {
        n(min)
    } else {
        format!("{min} to {max} arguments")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals() {
        assert_eq!(parse_literal("5"), Ok(Literal::Int(5)));
        assert_eq!(parse_literal("-5"), Ok(Literal::Int(-5)));
        assert_eq!(parse_literal("+5"), Ok(Literal::Int(5)));
        assert_eq!(parse_literal("0x10"), Ok(Literal::Int(16)));
        assert_eq!(parse_literal("-0X1f"), Ok(Literal::Int(-31)));
        assert_eq!(parse_literal("0b101"), Ok(Literal::Int(5)));
        assert_eq!(parse_literal("2.5"), Ok(Literal::Float(2.5)));
        assert_eq!(parse_literal("-1e20"), Ok(Literal::Float(-1e20)));
        assert_eq!(parse_literal(".5"), Ok(Literal::Float(0.5)));
        assert_eq!(parse_literal("1."), Ok(Literal::Float(1.0)));
        assert_eq!(parse_literal("1e-3"), Ok(Literal::Float(0.001)));
        assert_eq!(parse_literal("-inf"), Ok(Literal::Float(f64::NEG_INFINITY)));
        assert!(matches!(parse_literal("NaN"), Ok(Literal::Float(x)) if x.is_nan()));
        assert_eq!(parse_literal("true"), Ok(Literal::Bool(true)));
        assert_eq!(parse_literal("false"), Ok(Literal::Bool(false)));
        assert_eq!(
            parse_literal("18446744073709551615"),
            Ok(Literal::Int(u64::MAX.into()))
        );
        for bad in [
            "", "-", "x", "0x", "1.2.3", "e5", "1e", "--1", "TRUE", "5f", "0xg", "1_000",
        ] {
            assert!(parse_literal(bad).is_err(), "{bad:?} parsed");
        }
        assert_eq!(
            parse_literal(&"9".repeat(50)),
            Err(format!("`{}` is too large", "9".repeat(50)))
        );
    }

    #[test]
    fn literal_display_round_trips() {
        for s in ["5", "-5", "2.5", "-1e20", "true", "inf", "NaN"] {
            let lit = parse_literal(s).unwrap();
            assert_eq!(lit.to_string(), s);
        }
    }

    #[test]
    fn spec_forms() {
        let p = |s: &str| parse_arg(s).unwrap().spec;
        assert_eq!(p("x=5"), Spec::Scalar(Literal::Int(5)));
        assert_eq!(p("x=zeros(8)"), Spec::Zeros { n: 8 });
        assert_eq!(
            p("x = fill( 8 , 2.5 )"),
            Spec::Fill {
                n: 8,
                value: Literal::Float(2.5)
            }
        );
        assert_eq!(
            p("x=range(4)"),
            Spec::Range {
                n: 4,
                start: None,
                step: None
            }
        );
        assert_eq!(
            p("x=range(4,-2,0.5)"),
            Spec::Range {
                n: 4,
                start: Some(Literal::Int(-2)),
                step: Some(Literal::Float(0.5))
            }
        );
        assert_eq!(
            p("x=random(3)"),
            Spec::Random {
                n: 3,
                seed: None,
                bounds: None
            }
        );
        assert_eq!(
            p("x=random(3,7,-1,1)"),
            Spec::Random {
                n: 3,
                seed: Some(7),
                bounds: Some((Literal::Int(-1), Literal::Int(1)))
            }
        );
        assert_eq!(
            p("x=@data/in.bin"),
            Spec::File(PathBuf::from("data/in.bin"))
        );
        let a = parse_arg(" data = range(10) ").unwrap();
        assert_eq!(a.name, "data");
        assert_eq!(a.spec_text(), "range(10)");
    }

    #[test]
    fn syntax_errors_point_at_the_problem() {
        let e = parse_arg("x=rnage(10)").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Syntax);
        let s = e.snippet.clone().unwrap();
        assert_eq!((s.start, s.end), (2, 7));
        assert!(e.message.contains("did you mean `range`?"), "{e}");

        let e = parse_arg("x=range(10").unwrap_err();
        assert!(e.message.contains("expected `)`"), "{e}");

        let e = parse_arg("x=fill(10)").unwrap_err();
        assert!(
            e.message.contains("`fill` takes 2 arguments but got 1"),
            "{e}"
        );

        let e = parse_arg("x=random(10,1,2)").unwrap_err();
        assert!(e.message.contains("LO and HI together"), "{e}");

        let e = parse_arg("x=zeros(-1)").unwrap_err();
        assert!(e.message.contains("non-negative integer"), "{e}");
        assert_eq!(e.snippet.as_ref().map(|s| (s.start, s.end)), Some((8, 10)));

        let e = parse_arg("x=zeros(2.5)").unwrap_err();
        assert!(e.message.contains("non-negative integer"), "{e}");

        let e = parse_arg("x=zeros").unwrap_err();
        assert_eq!(e.help.as_deref(), Some("a buffer is written `zeros(N)`"));

        let e = parse_arg("x=rang").unwrap_err();
        assert_eq!(e.help.as_deref(), Some("did you mean `range(...)`?"));

        for bad in [
            "x",
            "=5",
            "1x=5",
            "x=",
            "x=@",
            "x=fill(1,)",
            "x=range((1))",
            "x=abc",
            "x y=1",
            "x=random(1,-1)",
            "x=random(1,2.5)",
            "x=fill(1,2))",
            "x=zeros()",
        ] {
            let e = parse_arg(bad).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Syntax, "{bad}");
            assert!(e.snippet.is_some(), "{bad}");
            // Rendering never panics and shows the text.
            assert!(e.to_string().contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn parse_spec_alone() {
        assert_eq!(parse_spec("zeros(3)").unwrap(), Spec::Zeros { n: 3 });
        assert!(parse_spec("zeros(").is_err());
        assert!(Spec::Zeros { n: 1 }.is_buffer());
        assert!(!Spec::Scalar(Literal::Int(1)).is_buffer());
    }
}
