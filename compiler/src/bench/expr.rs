//! Size expressions of suite files: how a kernel's problem grows with the thread
//! target `T`. A suite writes `let = ["n = up(T, 256)"]` and uses `{n}` or
//! `{n / 256}` in its grid, block and argument strings, so a launch is data, not a
//! Rust function per kernel.
//!
//! Integers only (unsigned 64-bit; `/` rounds down), with `+ - * / %`, parentheses
//! and these functions:
//! * `up(x, m)`: the smallest multiple of `m` that is at least `x`;
//! * `ceil_div(a, b)`, `min(a, b, ...)`, `max(a, b, ...)`;
//! * `sqrt_up(x)` / `cbrt_up(x)`: the smallest `s` with `s*s >= x` / `s*s*s >= x`;
//! * `widest(x, a, b, ...)`: the first of `a, b, ...` that divides `x` (else 1).
//!
//! Overflow, division by zero, unknown names and syntax errors are errors, never
//! panics.

use std::collections::BTreeMap;

/// Variables by name.
pub type Env = BTreeMap<String, u64>;

/// Evaluates `text` in `env`.
pub fn eval(text: &str, env: &Env) -> Result<u64, String> {
    let tokens = tokenize(text)?;
    let mut p = Parser {
        tokens: &tokens,
        pos: 0,
        env,
    };
    let v = p.sum()?;
    match p.tokens.get(p.pos) {
        None => Ok(v),
        Some(t) => Err(format!("unexpected `{}` in `{text}`", t.show())),
    }
}

/// `NAME = EXPR` of a `let` list, evaluated in `env` and added to it.
pub fn bind(line: &str, env: &mut Env) -> Result<(), String> {
    let (name, expr) = line
        .split_once('=')
        .ok_or_else(|| format!("`{line}` is not `NAME = EXPRESSION`"))?;
    let name = name.trim();
    if !is_name(name) {
        return Err(format!("`{name}` is not a variable name"));
    }
    let v = eval(expr, env)?;
    env.insert(name.to_string(), v);
    Ok(())
}

/// `text` with every `{EXPR}` replaced by its value.
pub fn interpolate(text: &str, env: &Env) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..]
            .find('}')
            .ok_or_else(|| format!("unclosed `{{` in `{text}`"))?;
        out.push_str(&eval(&rest[open + 1..open + close], env)?.to_string());
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(u64),
    Name(String),
    Op(char),
}

impl Tok {
    fn show(&self) -> String {
        match self {
            Tok::Num(n) => n.to_string(),
            Tok::Name(s) => s.clone(),
            Tok::Op(c) => c.to_string(),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        let run = |pred: fn(char) -> bool, chars: &mut std::iter::Peekable<_>| {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if !pred(d) {
                    break;
                }
                end = j + d.len_utf8();
                chars.next();
            }
            &text[i..end]
        };
        if c.is_ascii_digit() {
            let digits = run(|d: char| d.is_ascii_digit() || d == '_', &mut chars);
            let n = digits
                .replace('_', "")
                .parse()
                .map_err(|_| format!("`{digits}` is too large"))?;
            out.push(Tok::Num(n));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let name = run(|d: char| d.is_ascii_alphanumeric() || d == '_', &mut chars);
            out.push(Tok::Name(name.to_string()));
        } else if "+-*/%(),".contains(c) {
            out.push(Tok::Op(c));
        } else {
            return Err(format!("unexpected `{c}` in `{text}`"));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [Tok],
    pos: usize,
    env: &'a Env,
}

impl Parser<'_> {
    fn peek_op(&self) -> Option<char> {
        match self.tokens.get(self.pos) {
            Some(Tok::Op(c)) => Some(*c),
            _ => None,
        }
    }

    fn expect(&mut self, op: char) -> Result<(), String> {
        if self.peek_op() == Some(op) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected `{op}`"))
        }
    }

    fn sum(&mut self) -> Result<u64, String> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek_op() {
            self.pos += 1;
            let r = self.product()?;
            v = if op == '+' {
                v.checked_add(r)
            } else {
                v.checked_sub(r)
            }
            .ok_or_else(|| format!("{v} {op} {r} overflows"))?;
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<u64, String> {
        let mut v = self.atom()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek_op() {
            self.pos += 1;
            let r = self.atom()?;
            v = match op {
                '*' => v.checked_mul(r),
                '/' => v.checked_div(r),
                _ => v.checked_rem(r),
            }
            .ok_or_else(|| format!("{v} {op} {r} overflows or divides by zero"))?;
        }
        Ok(v)
    }

    fn atom(&mut self) -> Result<u64, String> {
        let t = self
            .tokens
            .get(self.pos)
            .cloned()
            .ok_or("the expression ends early")?;
        self.pos += 1;
        match t {
            Tok::Num(n) => Ok(n),
            Tok::Op('(') => {
                let v = self.sum()?;
                self.expect(')')?;
                Ok(v)
            }
            Tok::Name(name) if self.peek_op() == Some('(') => {
                self.pos += 1;
                let mut args = vec![self.sum()?];
                while self.peek_op() == Some(',') {
                    self.pos += 1;
                    args.push(self.sum()?);
                }
                self.expect(')')?;
                call(&name, &args)
            }
            Tok::Name(name) => self.env.get(&name).copied().ok_or_else(|| {
                let known: Vec<&str> = self.env.keys().map(String::as_str).collect();
                format!("no variable `{name}` (defined: {})", known.join(", "))
            }),
            Tok::Op(c) => Err(format!("unexpected `{c}`")),
        }
    }
}

/// The smallest `s` with `s^k >= x`.
fn root_up(x: u64, k: u32) -> u64 {
    let mut s = (x as f64).powf(1.0 / f64::from(k)).floor() as u64;
    while s.checked_pow(k).is_some_and(|p| p > x) && s > 0 {
        s -= 1;
    }
    while s.checked_pow(k).is_some_and(|p| p < x) {
        s += 1;
    }
    s
}

fn call(name: &str, a: &[u64]) -> Result<u64, String> {
    let arity = |n: usize| {
        if a.len() == n {
            Ok(())
        } else {
            Err(format!("`{name}` takes {n} argument(s), not {}", a.len()))
        }
    };
    match name {
        "up" => {
            arity(2)?;
            a[0].div_ceil(a[1].max(1))
                .checked_mul(a[1])
                .ok_or_else(|| "up overflows".into())
        }
        "ceil_div" => {
            arity(2)?;
            (a[1] != 0)
                .then(|| a[0].div_ceil(a[1]))
                .ok_or_else(|| "ceil_div by zero".into())
        }
        "sqrt_up" => arity(1).map(|_| root_up(a[0], 2)),
        "cbrt_up" => arity(1).map(|_| root_up(a[0], 3)),
        "min" => a
            .iter()
            .copied()
            .min()
            .ok_or_else(|| "min of nothing".into()),
        "max" => a
            .iter()
            .copied()
            .max()
            .ok_or_else(|| "max of nothing".into()),
        "widest" if !a.is_empty() => Ok(a[1..]
            .iter()
            .copied()
            .find(|&b| b != 0 && a[0].is_multiple_of(b))
            .unwrap_or(1)),
        _ => Err(format!(
            "no function `{name}` (functions: up, ceil_div, min, max, sqrt_up, cbrt_up, widest)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, u64)]) -> Env {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn arithmetic_and_functions() {
        let e = env(&[("T", 1000)]);
        assert_eq!(eval("up(T, 256)", &e), Ok(1024));
        assert_eq!(eval("T / 8 + 2 * 3 % 4", &e), Ok(127));
        assert_eq!(eval("(T - 1) / 3", &e), Ok(333));
        assert_eq!(eval("sqrt_up(T)", &e), Ok(32));
        assert_eq!(eval("cbrt_up(T)", &e), Ok(10));
        assert_eq!(eval("cbrt_up(1001)", &e), Ok(11));
        assert_eq!(eval("widest(96, 128, 64, 32, 16)", &e), Ok(32));
        assert_eq!(eval("max(T / 4096, 1)", &e), Ok(1));
        assert_eq!(eval("ceil_div(T, 3)", &e), Ok(334));
        assert_eq!(eval("1_024", &e), Ok(1024));
    }

    #[test]
    fn errors_are_messages_not_panics() {
        let e = env(&[("T", 1)]);
        for bad in [
            "T / 0",
            "0 - 1",
            "nope",
            "up(T)",
            "T +",
            "(T",
            "T $ 2",
            "18446744073709551615 * 2",
            "99999999999999999999",
            "frob(1)",
            "",
        ] {
            assert!(eval(bad, &e).is_err(), "{bad}");
        }
    }

    #[test]
    fn lets_and_interpolation() {
        let mut e = env(&[("T", 100)]);
        bind("n = up(T, 64)", &mut e).unwrap();
        assert_eq!(
            interpolate("x=random({n},1) grid {n / 64},1", &e).unwrap(),
            "x=random(128,1) grid 2,1"
        );
        assert!(bind("1n = 2", &mut e).is_err());
        assert!(bind("no equals", &mut e).is_err());
        assert!(interpolate("{n", &e).is_err());
    }
}
