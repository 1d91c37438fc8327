//! The `dac-gpu` text assembler and printer (disassembler). [`parse`] turns assembly
//! text into a [`Program`] or a list of errors with line and column (it never panics on
//! bad input); [`print()`] writes a program back in the canonical form, so that
//! `parse(&print(p)) == Ok(p)` for every valid program and printing is a fixed point.
//! The syntax is documented in `lang-spec/dac-gpu-isa.md`.

use super::isa::*;
use std::collections::HashMap;
use std::fmt::{self, Write as _};

/// An assembler diagnostic at a 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
    pub line: u32,
    pub col: u32,
    pub msg: String,
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.msg)
    }
}

// ---------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// Mnemonics, directives, labels, names: may contain dots.
    Word(String),
    /// `%...`
    Reg(String),
    /// A numeric literal as written (sign included).
    Num(String),
    Punct(char),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: u32,
    col: u32,
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$' || c == '.'
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.'
}

/// Splits one line (without its comment) into tokens.
fn lex_line(text: &str, line: u32, errs: &mut Vec<AsmError>) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let col = i as u32 + 1;
        let start = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let tok = if c == '%' {
            i += 1;
            while i < chars.len() && is_word_char(chars[i]) {
                i += 1;
            }
            Tok::Reg(chars[start..i].iter().collect())
        } else if c.is_ascii_digit()
            || (c == '-' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            i += 1;
            while i < chars.len() {
                let d = chars[i];
                let so_far: String = chars[start..i].iter().collect();
                let body = so_far.trim_start_matches('-');
                let hexish =
                    body.starts_with("0x") || body.starts_with("0f") || body.starts_with("0d");
                let exponent_sign = (d == '+' || d == '-')
                    && !hexish
                    && (so_far.ends_with('e') || so_far.ends_with('E'));
                if d.is_ascii_alphanumeric() || d == '.' || d == '_' || exponent_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            Tok::Num(chars[start..i].iter().collect())
        } else if is_word_start(c) {
            while i < chars.len() && is_word_char(chars[i]) {
                i += 1;
            }
            Tok::Word(chars[start..i].iter().collect())
        } else if ",[]+-@!{}():;|".contains(c) {
            i += 1;
            Tok::Punct(c)
        } else {
            errs.push(AsmError {
                line,
                col,
                msg: format!("unexpected character `{c}`"),
            });
            i += 1;
            continue;
        };
        out.push(Token { tok, line, col });
    }
    out
}

/// Tokens of the whole text, one vector per line, comments (`//`) removed.
fn lex(text: &str, errs: &mut Vec<AsmError>) -> Vec<Vec<Token>> {
    text.lines()
        .enumerate()
        .map(|(n, l)| {
            let code = match l.find("//") {
                Some(k) => &l[..k],
                None => l,
            };
            lex_line(code, n as u32 + 1, errs)
        })
        .collect()
}

// ---------------------------------------------------------------------------------
// Operand cursor
// ---------------------------------------------------------------------------------

type PResult<T> = Result<T, AsmError>;

/// Register declarations and uses within the kernel being parsed.
#[derive(Default)]
struct RegUse {
    declared: [Option<u32>; 4],
    used: [u32; 4],
}

fn file_index(f: RegFile) -> usize {
    match f {
        RegFile::R => 0,
        RegFile::P => 1,
        RegFile::Ur => 2,
        RegFile::A => 3,
    }
}

/// What a kernel body needs while its instructions are parsed.
struct Ctx<'a> {
    funcs: &'a HashMap<String, u32>,
    regs: RegUse,
    /// Branches to resolve at the end of the kernel: (instruction, label, position).
    fixups: Vec<(usize, String, u32, u32)>,
}

struct Cursor<'t, 'c, 'a> {
    toks: &'t [Token],
    pos: usize,
    params: &'c [Param],
    /// Position reported when the statement ends too early.
    end: (u32, u32),
    ctx: &'c mut Ctx<'a>,
}

fn err_at(t: &Token, msg: impl Into<String>) -> AsmError {
    AsmError {
        line: t.line,
        col: t.col,
        msg: msg.into(),
    }
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Word(s) | Tok::Reg(s) | Tok::Num(s) => format!("`{s}`"),
        Tok::Punct(c) => format!("`{c}`"),
    }
}

/// Parses a register name into its file, index and whether it names a pair.
fn reg_name(s: &str) -> Option<(RegFile, bool, u32)> {
    let body = s.strip_prefix('%')?;
    let (file, wide, digits) = if let Some(d) = body.strip_prefix("urd") {
        (RegFile::Ur, true, d)
    } else if let Some(d) = body.strip_prefix("ur") {
        (RegFile::Ur, false, d)
    } else if let Some(d) = body.strip_prefix("rd") {
        (RegFile::R, true, d)
    } else if let Some(d) = body.strip_prefix("ad") {
        (RegFile::A, true, d)
    } else if let Some(d) = body.strip_prefix('r') {
        (RegFile::R, false, d)
    } else if let Some(d) = body.strip_prefix('p') {
        (RegFile::P, false, d)
    } else if let Some(d) = body.strip_prefix('a') {
        (RegFile::A, false, d)
    } else {
        return None;
    };
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    let idx: u32 = digits.parse().ok()?;
    Some((file, wide, idx))
}

fn special_name(s: &str) -> Option<Special> {
    Special::all().into_iter().find(|sp| sp.name() == s)
}

/// Parses an integer literal (decimal or `0x` hex, optionally negative).
fn parse_int(s: &str) -> Option<i128> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        if h.is_empty() || h.len() > 16 {
            return None;
        }
        i128::from(u64::from_str_radix(h, 16).ok()?)
    } else {
        if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) || body.len() > 20 {
            return None;
        }
        body.parse::<i128>().ok()?
    };
    Some(if neg { -v } else { v })
}

/// The bit pattern of an immediate of type `ty`, or why it is not one.
fn imm_bits(s: &str, ty: Type) -> Result<u64, String> {
    match ty {
        Type::Pred => Err("predicates take no immediate".into()),
        Type::F32 => {
            if let Some(h) = s.strip_prefix("0f") {
                if h.len() == 8 {
                    if let Ok(v) = u32::from_str_radix(h, 16) {
                        return Ok(u64::from(v));
                    }
                }
                return Err(format!("`{s}` is not 0f followed by 8 hex digits"));
            }
            s.parse::<f32>()
                .map(|f| u64::from(f.to_bits()))
                .map_err(|_| format!("`{s}` is not an .f32 literal"))
        }
        Type::F64 => {
            if let Some(h) = s.strip_prefix("0d") {
                if h.len() == 16 {
                    if let Ok(v) = u64::from_str_radix(h, 16) {
                        return Ok(v);
                    }
                }
                return Err(format!("`{s}` is not 0d followed by 16 hex digits"));
            }
            s.parse::<f64>()
                .map(f64::to_bits)
                .map_err(|_| format!("`{s}` is not an .f64 literal"))
        }
        _ => {
            let v = parse_int(s).ok_or_else(|| format!("`{s}` is not an integer literal"))?;
            let w = ty.bits();
            let (lo, hi) = (-(1i128 << (w - 1)), (1i128 << w) - 1);
            if v < lo || v > hi {
                return Err(format!("{s} does not fit in .{}", ty.name()));
            }
            Ok((v as u64) & mask(w))
        }
    }
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

impl<'t, 'c, 'a> Cursor<'t, 'c, 'a> {
    fn peek(&self) -> Option<&'t Token> {
        self.toks.get(self.pos)
    }

    fn here_err(&self, msg: impl Into<String>) -> AsmError {
        match self.peek() {
            Some(t) => err_at(t, msg),
            None => AsmError {
                line: self.end.0,
                col: self.end.1,
                msg: msg.into(),
            },
        }
    }

    fn next(&mut self, what: &str) -> PResult<&'t Token> {
        match self.toks.get(self.pos) {
            Some(t) => {
                self.pos += 1;
                Ok(t)
            }
            None => Err(self.here_err(format!("expected {what}, found the end of the statement"))),
        }
    }

    fn punct(&mut self, c: char) -> PResult<()> {
        let t = self.next(&format!("`{c}`"))?;
        if t.tok == Tok::Punct(c) {
            Ok(())
        } else {
            Err(err_at(
                t,
                format!("expected `{c}`, found {}", describe(&t.tok)),
            ))
        }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek().is_some_and(|t| t.tok == Tok::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn comma(&mut self) -> PResult<()> {
        self.punct(',')
    }

    fn finish(&self) -> PResult<()> {
        match self.peek() {
            None => Ok(()),
            Some(t) => Err(err_at(
                t,
                format!("unexpected {} after the operands", describe(&t.tok)),
            )),
        }
    }

    /// Records a register use, checking it against the kernel's declarations.
    fn note_reg(&mut self, t: &Token, r: Reg, wide: bool) -> PResult<()> {
        let i = file_index(r.file);
        let top = u32::try_from(u64::from(r.idx) + if wide { 2 } else { 1 })
            .map_err(|_| err_at(t, format!("{} is past the last register", describe(&t.tok))))?;
        if let Some(n) = self.ctx.regs.declared[i] {
            if top > n {
                return Err(err_at(
                    t,
                    format!("register {} is beyond the {} declared", describe(&t.tok), n),
                ));
            }
        }
        self.ctx.regs.used[i] = self.ctx.regs.used[i].max(top);
        Ok(())
    }

    /// A register holding a value of type `ty`, from one of `files`.
    fn reg(&mut self, ty: Type, files: &[RegFile]) -> PResult<Reg> {
        let t = self.next("a register")?;
        let Tok::Reg(s) = &t.tok else {
            return Err(err_at(
                t,
                format!("expected a register, found {}", describe(&t.tok)),
            ));
        };
        let (file, wide, idx) =
            reg_name(s).ok_or_else(|| err_at(t, format!("`{s}` is not a register")))?;
        if !files.contains(&file) {
            return Err(err_at(t, format!("`{s}` is not allowed here")));
        }
        if ty == Type::Pred && file != RegFile::P {
            return Err(err_at(
                t,
                format!("a .pred operand needs a %p register, not `{s}`"),
            ));
        }
        if ty != Type::Pred && file == RegFile::P {
            return Err(err_at(
                t,
                format!("a .{} operand cannot be the predicate `{s}`", ty.name()),
            ));
        }
        if ty.is_wide() != wide {
            let want = if ty.is_wide() {
                "a register pair (%rd, %urd, %ad)"
            } else {
                "a 32-bit register"
            };
            return Err(err_at(
                t,
                format!("a .{} operand needs {want}, not `{s}`", ty.name()),
            ));
        }
        if wide && idx % 2 != 0 {
            return Err(err_at(
                t,
                format!("register pair `{s}` must start at an even register"),
            ));
        }
        let r = Reg { file, idx };
        self.note_reg(t, r, wide)?;
        Ok(r)
    }

    /// A destination of type `ty`.
    fn dst(&mut self, ty: Type) -> PResult<Reg> {
        self.reg(ty, &[RegFile::R, RegFile::P, RegFile::Ur, RegFile::A])
    }

    fn pred(&mut self) -> PResult<Reg> {
        self.reg(Type::Pred, &[RegFile::P])
    }

    /// A source of type `ty`: register, special register or immediate.
    fn src(&mut self, ty: Type) -> PResult<Src> {
        let Some(t) = self.peek() else {
            return Err(self.here_err("expected an operand, found the end of the statement"));
        };
        match &t.tok {
            Tok::Reg(s) if special_name(s).is_some() => {
                self.pos += 1;
                let sp = special_name(s).unwrap_or(Special::LaneId);
                let (fits, width) = if sp.is_wide() {
                    (matches!(ty, Type::U64 | Type::S64 | Type::B64), ".u64")
                } else {
                    (matches!(ty, Type::U32 | Type::S32 | Type::B32), ".u32")
                };
                if !fits {
                    return Err(err_at(
                        t,
                        format!(
                            "special register `{s}` is {width}; it cannot be a .{} operand",
                            ty.name()
                        ),
                    ));
                }
                Ok(Src::Special(sp))
            }
            Tok::Reg(_) => Ok(Src::Reg(self.dst(ty)?)),
            Tok::Num(s) => {
                self.pos += 1;
                imm_bits(s, ty).map(Src::Imm).map_err(|m| err_at(t, m))
            }
            other => Err(err_at(
                t,
                format!("expected an operand, found {}", describe(other)),
            )),
        }
    }

    /// `[base]`, `[base+off]`, `[base-off]` or `[off]`.
    fn addr(&mut self, space: Space) -> PResult<Address> {
        self.punct('[')?;
        let t = self.next("an address")?;
        let mut offset: i128 = 0;
        let base = match &t.tok {
            Tok::Reg(s) => {
                let (file, wide, idx) =
                    reg_name(s).ok_or_else(|| err_at(t, format!("`{s}` is not a register")))?;
                if !matches!(file, RegFile::R | RegFile::Ur) {
                    return Err(err_at(
                        t,
                        format!("an address register is %r, %rd, %ur or %urd, not `{s}`"),
                    ));
                }
                if wide && idx % 2 != 0 {
                    return Err(err_at(
                        t,
                        format!("register pair `{s}` must start at an even register"),
                    ));
                }
                let r = Reg { file, idx };
                self.note_reg(t, r, wide)?;
                if wide {
                    AddrBase::RegPair(r)
                } else {
                    AddrBase::Reg(r)
                }
            }
            Tok::Word(w) if w == "deq.addr" => AddrBase::DeqAddr,
            Tok::Word(w) if w == "deq.data" => AddrBase::DeqData,
            Tok::Word(w) => {
                if space != Space::Param {
                    return Err(err_at(
                        t,
                        format!("parameter name `{w}` used outside a .param access"),
                    ));
                }
                let i = self.params.iter().position(|p| &p.name == w);
                AddrBase::Param(
                    i.ok_or_else(|| err_at(t, format!("no parameter named `{w}`")))? as u16,
                )
            }
            Tok::Num(s) => {
                offset = parse_int(s)
                    .ok_or_else(|| err_at(t, format!("`{s}` is not an address offset")))?;
                AddrBase::None
            }
            other => {
                return Err(err_at(
                    t,
                    format!("expected an address, found {}", describe(other)),
                ))
            }
        };
        if base != AddrBase::None {
            if let Some(t) = self.peek() {
                let neg = match &t.tok {
                    Tok::Punct('+') => Some(false),
                    Tok::Punct('-') => Some(true),
                    Tok::Num(s) if s.starts_with('-') => None,
                    _ => Some(false),
                };
                let signed = !matches!(t.tok, Tok::Punct(']'));
                if signed {
                    if matches!(t.tok, Tok::Punct(_)) {
                        self.pos += 1;
                    }
                    let n = self.next("an offset")?;
                    let Tok::Num(s) = &n.tok else {
                        return Err(err_at(
                            n,
                            format!("expected an offset, found {}", describe(&n.tok)),
                        ));
                    };
                    let v =
                        parse_int(s).ok_or_else(|| err_at(n, format!("`{s}` is not an offset")))?;
                    offset = if neg == Some(true) { -v } else { v };
                }
            }
        }
        let offset = i32::try_from(offset)
            .map_err(|_| self.here_err("address offset out of the 32-bit range"))?;
        self.punct(']')?;
        Ok(Address { base, offset })
    }

    fn uint(&mut self) -> PResult<u32> {
        let t = self.next("a number")?;
        match &t.tok {
            Tok::Num(s) => parse_int(s)
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| err_at(t, format!("`{s}` is not an unsigned 32-bit number"))),
            other => Err(err_at(
                t,
                format!("expected a number, found {}", describe(other)),
            )),
        }
    }

    fn word(&mut self, what: &str) -> PResult<(&'t Token, &'t str)> {
        let t = self.next(what)?;
        match &t.tok {
            Tok::Word(w) => Ok((t, w.as_str())),
            other => Err(err_at(
                t,
                format!("expected {what}, found {}", describe(other)),
            )),
        }
    }
}

// ---------------------------------------------------------------------------------
// Instructions
// ---------------------------------------------------------------------------------

fn find<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str, s: &str) -> Option<T> {
    all.iter().copied().find(|&x| name(x) == s)
}

/// Checks the modifier count and returns the modifiers.
fn mods<'m>(m: &'m [&'m str], n: usize, mnemonic: &str) -> Result<&'m [&'m str], String> {
    if m.len() == n {
        Ok(m)
    } else {
        Err(format!(
            "`{mnemonic}` needs {n} modifier(s) after the opcode"
        ))
    }
}

fn ty_of(s: &str) -> Result<Type, String> {
    Type::from_name(s).ok_or_else(|| format!("unknown type `.{s}`"))
}

fn space_of(s: &str) -> Result<Space, String> {
    find(&Space::ALL, Space::name, s).ok_or_else(|| format!("unknown memory space `.{s}`"))
}

fn cmp_of(s: &str) -> Result<Cmp, String> {
    find(&Cmp::ALL, Cmp::name, s).ok_or_else(|| format!("unknown comparison `.{s}`"))
}

fn ensure(ok: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(msg())
    }
}

/// Parses one instruction (guard already consumed) whose mnemonic token is `mt`.
fn parse_op(c: &mut Cursor, mt: &Token, mnemonic: &str, index: usize) -> PResult<Op> {
    let parts: Vec<&str> = mnemonic.split('.').collect();
    let (head, m) = (parts[0], &parts[1..]);
    let bad = |msg: String| err_at(mt, msg);
    let op = match head {
        _ if find(&BinOp::ALL, BinOp::name, head).is_some() => {
            let op = find(&BinOp::ALL, BinOp::name, head).unwrap_or(BinOp::Add);
            let ty = ty_of(mods(m, 1, mnemonic).map_err(bad)?[0]).map_err(bad)?;
            ensure(op.accepts(ty), || {
                format!("`{head}` is not defined on .{ty}")
            })
            .map_err(bad)?;
            let dst = c.dst(ty)?;
            c.comma()?;
            let a = c.src(ty)?;
            c.comma()?;
            let b = c.src(if op.is_shift() { Type::U32 } else { ty })?;
            Op::Bin { op, ty, dst, a, b }
        }
        _ if find(&UnOp::ALL, UnOp::name, head).is_some() => {
            let op = find(&UnOp::ALL, UnOp::name, head).unwrap_or(UnOp::Mov);
            let ty = ty_of(mods(m, 1, mnemonic).map_err(bad)?[0]).map_err(bad)?;
            ensure(op.accepts(ty), || {
                format!("`{head}` is not defined on .{ty}")
            })
            .map_err(bad)?;
            let dst = c.dst(ty)?;
            c.comma()?;
            Op::Un {
                op,
                ty,
                dst,
                a: c.src(ty)?,
            }
        }
        "mad" => {
            let ty = ty_of(mods(m, 1, mnemonic).map_err(bad)?[0]).map_err(bad)?;
            ensure(
                ty.is_reg_sized() && !matches!(ty, Type::B32 | Type::B64),
                || format!("`mad` is not defined on .{ty}"),
            )
            .map_err(bad)?;
            let dst = c.dst(ty)?;
            c.comma()?;
            let a = c.src(ty)?;
            c.comma()?;
            let b = c.src(ty)?;
            c.comma()?;
            Op::Mad {
                ty,
                dst,
                a,
                b,
                c: c.src(ty)?,
            }
        }
        "cvt" => {
            let (rnd, tys) = match m.len() {
                2 => (None, m),
                3 => (
                    Some(
                        find(&Round::ALL, Round::name, m[0])
                            .ok_or_else(|| bad(format!("unknown rounding `.{}`", m[0])))?,
                    ),
                    &m[1..],
                ),
                _ => return Err(bad("`cvt` is written cvt{.rnd}.dty.sty".into())),
            };
            let (dty, sty) = (ty_of(tys[0]).map_err(bad)?, ty_of(tys[1]).map_err(bad)?);
            ensure(dty != Type::Pred && sty != Type::Pred, || {
                "`cvt` does not convert predicates".into()
            })
            .map_err(bad)?;
            let dst = c.dst(dty)?;
            c.comma()?;
            Op::Cvt {
                rnd,
                dty,
                sty,
                dst,
                a: c.src(sty)?,
            }
        }
        "setp" => {
            let m = mods(m, 2, mnemonic).map_err(bad)?;
            let (cmp, ty) = (cmp_of(m[0]).map_err(bad)?, ty_of(m[1]).map_err(bad)?);
            ensure(cmp.accepts(ty), || {
                format!("`.{}` does not compare .{ty}", cmp.name())
            })
            .map_err(bad)?;
            let dst = c.pred()?;
            c.comma()?;
            let a = c.src(ty)?;
            c.comma()?;
            Op::Setp {
                cmp,
                ty,
                dst,
                a,
                b: c.src(ty)?,
            }
        }
        "selp" => {
            let ty = ty_of(mods(m, 1, mnemonic).map_err(bad)?[0]).map_err(bad)?;
            ensure(ty.is_reg_sized(), || {
                format!("`selp` is not defined on .{ty}")
            })
            .map_err(bad)?;
            let dst = c.dst(ty)?;
            c.comma()?;
            let a = c.src(ty)?;
            c.comma()?;
            let b = c.src(ty)?;
            c.comma()?;
            Op::Selp {
                ty,
                dst,
                a,
                b,
                p: c.pred()?,
            }
        }
        "ld" | "st" => {
            let m = mods(m, 2, mnemonic).map_err(bad)?;
            let (space, ty) = (space_of(m[0]).map_err(bad)?, ty_of(m[1]).map_err(bad)?);
            ensure(ty != Type::Pred, || "memory holds no .pred values".into()).map_err(bad)?;
            let reg_ty = widen(ty);
            if head == "ld" {
                let dst = c.dst(reg_ty)?;
                c.comma()?;
                let at = c.peek().cloned();
                let addr = c.addr(space)?;
                check_addr(addr, space, true, at.as_ref(), c)?;
                Op::Ld {
                    space,
                    ty,
                    dst,
                    addr,
                }
            } else {
                ensure(space != Space::Param, || {
                    "the .param space is read-only".into()
                })
                .map_err(bad)?;
                let at = c.peek().cloned();
                let addr = c.addr(space)?;
                check_addr(addr, space, false, at.as_ref(), c)?;
                c.comma()?;
                Op::St {
                    space,
                    ty,
                    addr,
                    a: c.src(reg_ty)?,
                }
            }
        }
        "atom" => {
            let m = mods(m, 3, mnemonic).map_err(bad)?;
            let space = space_of(m[0]).map_err(bad)?;
            ensure(matches!(space, Space::Global | Space::Shared), || {
                "atomics act on .global or .shared".into()
            })
            .map_err(bad)?;
            let op = find(&AtomOp::ALL, AtomOp::name, m[1])
                .ok_or_else(|| bad(format!("unknown atomic `.{}`", m[1])))?;
            let ty = ty_of(m[2]).map_err(bad)?;
            ensure(op.accepts(ty), || {
                format!("`atom.{}` is not defined on .{ty}", op.name())
            })
            .map_err(bad)?;
            let dst = c.dst(ty)?;
            c.comma()?;
            let at = c.peek().cloned();
            let addr = c.addr(space)?;
            check_addr(addr, space, false, at.as_ref(), c)?;
            c.comma()?;
            let a = c.src(ty)?;
            let b = if op == AtomOp::Cas {
                c.comma()?;
                Some(c.src(ty)?)
            } else {
                None
            };
            Op::Atom {
                space,
                op,
                ty,
                dst,
                addr,
                a,
                b,
            }
        }
        "bra" => {
            let uni = match m {
                [] => false,
                ["uni"] => true,
                _ => return Err(bad("`bra` takes only `.uni`".into())),
            };
            let (t, name) = c.word("a label")?;
            c.ctx.fixups.push((index, name.to_string(), t.line, t.col));
            Op::Bra {
                uni,
                target: u32::MAX,
            }
        }
        "call" => {
            mods(m, 0, mnemonic).map_err(bad)?;
            let (t, name) = c.word("a function name")?;
            let func = *c
                .ctx
                .funcs
                .get(name)
                .ok_or_else(|| err_at(t, format!("no function named `{name}`")))?;
            Op::Call { func }
        }
        "ret" | "exit" | "nop" => {
            mods(m, 0, mnemonic).map_err(bad)?;
            match head {
                "ret" => Op::Ret,
                "exit" => Op::Exit,
                _ => Op::Nop,
            }
        }
        "bar" => {
            ensure(m == ["sync"], || "only `bar.sync` exists".into()).map_err(bad)?;
            Op::Bar { id: c.uint()? }
        }
        "membar" => match m {
            ["cta"] => Op::Fence {
                scope: FenceScope::Cta,
            },
            ["gl"] => Op::Fence {
                scope: FenceScope::Gl,
            },
            _ => return Err(bad("`membar` is `membar.cta` or `membar.gl`".into())),
        },
        "vote" => {
            let m = mods(m, 2, mnemonic).map_err(bad)?;
            let mode = find(&VoteMode::ALL, VoteMode::name, m[0])
                .ok_or_else(|| bad(format!("unknown vote `.{}`", m[0])))?;
            let want = if mode == VoteMode::Ballot {
                "b32"
            } else {
                "pred"
            };
            ensure(m[1] == want, || {
                format!("`vote.{}` is typed .{want}", mode.name())
            })
            .map_err(bad)?;
            let dst = if mode == VoteMode::Ballot {
                c.dst(Type::B32)?
            } else {
                c.pred()?
            };
            c.comma()?;
            Op::Vote {
                mode,
                dst,
                p: c.pred()?,
            }
        }
        "shfl" => {
            let m = mods(m, 2, mnemonic).map_err(bad)?;
            let mode = find(&ShflMode::ALL, ShflMode::name, m[0])
                .ok_or_else(|| bad(format!("unknown shuffle `.{}`", m[0])))?;
            ensure(m[1] == "b32", || "`shfl` is typed .b32".into()).map_err(bad)?;
            let dst = c.dst(Type::B32)?;
            let dst_pred = if c.eat('|') { Some(c.pred()?) } else { None };
            c.comma()?;
            let a = c.src(Type::B32)?;
            c.comma()?;
            let lane = c.src(Type::U32)?;
            c.comma()?;
            Op::Shfl {
                mode,
                dst,
                dst_pred,
                a,
                lane,
                clamp: c.src(Type::U32)?,
            }
        }
        "enq" => parse_enq(c, m, mnemonic).map_err(|e| e.unwrap_or_else(&bad))?,
        "deq" => {
            ensure(m == ["pred"], || "the only deq instruction is `deq.pred`; data and addresses are dequeued by [deq.data] and [deq.addr]".into())
                .map_err(bad)?;
            Op::DeqPred { dst: c.pred()? }
        }
        _ => return Err(bad(format!("unknown instruction `{mnemonic}`"))),
    };
    c.finish()?;
    Ok(op)
}

/// The register type that holds a loaded or stored value of type `ty`: narrow
/// integers travel in 32-bit registers.
pub fn widen(ty: Type) -> Type {
    match ty {
        Type::B8 | Type::B16 => Type::B32,
        Type::U8 | Type::U16 => Type::U32,
        Type::S8 | Type::S16 => Type::S32,
        t => t,
    }
}

fn check_addr(
    addr: Address,
    space: Space,
    is_load: bool,
    at: Option<&Token>,
    c: &Cursor,
) -> PResult<()> {
    let e = |m: &str| match at {
        Some(t) => err_at(t, m),
        None => c.here_err(m),
    };
    match addr.base {
        AddrBase::DeqData if !is_load => Err(e("[deq.data] is only a load address")),
        AddrBase::DeqData | AddrBase::DeqAddr if addr.offset != 0 => {
            Err(e("a dequeued address takes no offset"))
        }
        AddrBase::DeqData | AddrBase::DeqAddr
            if !matches!(space, Space::Global | Space::Local | Space::Shared) =>
        {
            Err(e("dequeued addresses are .global, .shared or .local"))
        }
        _ => Ok(()),
    }
}

/// The `.space.ty` of `enq.data` (global or local) / `enq.addr` (any but param).
fn enq_space_type(data: bool, space: &str, ty: &str) -> Result<(Space, Type), String> {
    let space = space_of(space)?;
    let ok = if data {
        matches!(space, Space::Global | Space::Local)
    } else {
        space != Space::Param
    };
    let queue = if data { "data" } else { "addr" };
    ensure(ok, || {
        format!("`enq.{queue}` does not reach .{}", space.name())
    })?;
    let ty = ty_of(ty)?;
    ensure(ty != Type::Pred, || "memory holds no .pred values".into())?;
    Ok((space, ty))
}

/// The `.cmp.ty` of an enqueued compare.
fn enq_compare(cmp: &str, ty: &str) -> Result<(Cmp, Type), String> {
    let (cmp, ty) = (cmp_of(cmp)?, ty_of(ty)?);
    ensure(cmp.accepts(ty), || {
        format!("`.{}` does not compare .{ty}", cmp.name())
    })?;
    Ok((cmp, ty))
}

/// Whether the next operand is a register pair (a 64-bit address tuple).
fn next_is_wide(c: &mut Cursor) -> bool {
    matches!(c.peek().map(|t| &t.tok), Some(Tok::Reg(s)) if reg_name(s).is_some_and(|(_, w, _)| w))
}

/// `enq.data.space.ty %a`, `enq.addr.space.ty %a`, `enq.pred.cmp.ty a, b`.
fn parse_enq(c: &mut Cursor, m: &[&str], mnemonic: &str) -> Result<Op, Result<AsmError, String>> {
    if m.get(1) == Some(&"sel") {
        return parse_enq_sel(c, m, mnemonic);
    }
    let m = mods(m, 3, mnemonic).map_err(Err)?;
    let affine = [RegFile::A, RegFile::Ur];
    match m[0] {
        "data" | "addr" => {
            let (space, ty) = enq_space_type(m[0] == "data", m[1], m[2]).map_err(Err)?;
            // The tuple may be a 32-bit address or a register pair.
            let wide = next_is_wide(c);
            let addr = c
                .reg(if wide { Type::U64 } else { Type::U32 }, &affine)
                .map_err(Ok)?;
            Ok(if m[0] == "data" {
                Op::EnqData {
                    space,
                    ty,
                    addr,
                    wide,
                }
            } else {
                Op::EnqAddr {
                    space,
                    ty,
                    addr,
                    wide,
                }
            })
        }
        "pred" => {
            let (cmp, ty) = enq_compare(m[1], m[2]).map_err(Err)?;
            let a = c.src(ty).map_err(Ok)?;
            c.comma().map_err(Ok)?;
            let b = c.src(ty).map_err(Ok)?;
            Ok(Op::EnqPred { cmp, ty, a, b })
        }
        other => Err(Err(format!(
            "unknown queue `.{other}`: enq.data, enq.addr or enq.pred"
        ))),
    }
}

/// `enq.data.sel.space.ty.cmp.cty %then, %else, a, b` (and `enq.addr.sel...`): a
/// select tuple.
fn parse_enq_sel(
    c: &mut Cursor,
    m: &[&str],
    mnemonic: &str,
) -> Result<Op, Result<AsmError, String>> {
    let m = mods(m, 6, mnemonic).map_err(Err)?;
    let data = match m[0] {
        "data" => true,
        "addr" => false,
        other => {
            return Err(Err(format!(
                "`enq.{other}.sel`: only enq.data and enq.addr select"
            )))
        }
    };
    let (space, ty) = enq_space_type(data, m[2], m[3]).map_err(Err)?;
    let (cmp, cty) = enq_compare(m[4], m[5]).map_err(Err)?;
    let affine = [RegFile::A, RegFile::Ur];
    let wide = next_is_wide(c);
    let aty = if wide { Type::U64 } else { Type::U32 };
    let then = c.reg(aty, &affine).map_err(Ok)?;
    c.comma().map_err(Ok)?;
    let els = c.reg(aty, &affine).map_err(Ok)?;
    c.comma().map_err(Ok)?;
    let a = c.src(cty).map_err(Ok)?;
    c.comma().map_err(Ok)?;
    let b = c.src(cty).map_err(Ok)?;
    Ok(Op::EnqSel {
        data,
        space,
        ty,
        then,
        els,
        wide,
        cmp,
        cty,
        a,
        b,
    })
}

// ---------------------------------------------------------------------------------
// Program structure
// ---------------------------------------------------------------------------------

/// A kernel being assembled.
struct Open<'a> {
    kernel: Kernel,
    ctx: Ctx<'a>,
    labels: HashMap<String, u32>,
    body_open: bool,
    line: u32,
}

/// Splits the tokens of a line into statements: `{`, `}`, labels and `;`-ended runs.
fn statements(line: &[Token]) -> Vec<&[Token]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        match &line[i].tok {
            Tok::Punct('{') | Tok::Punct('}') => {
                out.push(&line[i..i + 1]);
                i += 1;
            }
            Tok::Punct(';') => i += 1,
            Tok::Word(_) if matches!(line.get(i + 1).map(|t| &t.tok), Some(Tok::Punct(':'))) => {
                out.push(&line[i..i + 2]);
                i += 2;
            }
            Tok::Word(w) if w == ".entry" || w == ".func" || w == ".affine" => {
                let mut j = i + 1;
                while j < line.len() && !matches!(line[j].tok, Tok::Punct('{') | Tok::Punct(';')) {
                    j += 1;
                }
                out.push(&line[i..j]);
                i = j;
            }
            _ => {
                let mut j = i;
                while j < line.len() && line[j].tok != Tok::Punct(';') {
                    j += 1;
                }
                out.push(&line[i..j]);
                i = j;
            }
        }
    }
    out
}

/// Collects every kernel and function name first, so that `call` may look ahead.
fn collect_funcs(lines: &[Vec<Token>], errs: &mut Vec<AsmError>) -> HashMap<String, u32> {
    let mut funcs = HashMap::new();
    for line in lines {
        for (i, t) in line.iter().enumerate() {
            if matches!(&t.tok, Tok::Word(w) if w == ".entry" || w == ".func") {
                if let Some(Token {
                    tok: Tok::Word(name),
                    line,
                    col,
                }) = line.get(i + 1)
                {
                    let n = funcs.len() as u32;
                    if funcs.insert(name.clone(), n).is_some() {
                        errs.push(AsmError {
                            line: *line,
                            col: *col,
                            msg: format!("`{name}` is defined twice"),
                        });
                    }
                }
            }
        }
    }
    funcs
}

/// `.entry name(.param .ty a, ...)` or `.func name`.
fn parse_header(st: &[Token], kind: KernelKind) -> PResult<Kernel> {
    let name = match st.get(1) {
        Some(Token {
            tok: Tok::Word(n), ..
        }) if !n.starts_with('.') => n.clone(),
        Some(t) => {
            return Err(err_at(
                t,
                format!("expected a kernel name, found {}", describe(&t.tok)),
            ))
        }
        None => return Err(err_at(&st[0], "expected a kernel name")),
    };
    let mut k = Kernel::new(&name, kind);
    let rest = &st[2..];
    if rest.is_empty() {
        return Ok(k);
    }
    if rest[0].tok != Tok::Punct('(') {
        return Err(err_at(
            &rest[0],
            format!("expected `(` or `{{`, found {}", describe(&rest[0].tok)),
        ));
    }
    let mut i = 1;
    let at = |i: usize| rest.get(i).or(rest.last()).unwrap_or(&st[0]);
    if rest.get(i).map(|t| &t.tok) == Some(&Tok::Punct(')')) {
        i += 1;
    } else {
        loop {
            match (
                rest.get(i).map(|t| &t.tok),
                rest.get(i + 1).map(|t| &t.tok),
                rest.get(i + 2).map(|t| &t.tok),
            ) {
                (Some(Tok::Word(p)), Some(Tok::Word(ty)), Some(Tok::Word(n)))
                    if p == ".param" && ty.starts_with('.') =>
                {
                    let ty = Type::from_name(&ty[1..])
                        .filter(|t| *t != Type::Pred)
                        .ok_or_else(|| {
                            err_at(at(i + 1), format!("`{ty}` is not a parameter type"))
                        })?;
                    if k.param_index(n).is_some() {
                        return Err(err_at(
                            at(i + 2),
                            format!("parameter `{n}` is declared twice"),
                        ));
                    }
                    k.add_param(n, ty);
                    i += 3;
                }
                _ => return Err(err_at(at(i), "expected `.param .type name`")),
            }
            match rest.get(i).map(|t| &t.tok) {
                Some(Tok::Punct(',')) => i += 1,
                Some(Tok::Punct(')')) => {
                    i += 1;
                    break;
                }
                _ => return Err(err_at(at(i), "expected `,` or `)` in the parameter list")),
            }
        }
    }
    if let Some(t) = rest.get(i) {
        return Err(err_at(
            t,
            format!("unexpected {} after the parameters", describe(&t.tok)),
        ));
    }
    if kind == KernelKind::Func && !k.params.is_empty() {
        return Err(err_at(
            &st[0],
            "a .func takes no parameters (arguments travel in registers)",
        ));
    }
    Ok(k)
}

/// `.reg N`, `.pred N`, `.ureg N`, `.areg N`, `.shared N`, `.local N`.
fn parse_directive(st: &[Token], open: &mut Open) -> PResult<()> {
    let Tok::Word(d) = &st[0].tok else {
        return Err(err_at(&st[0], "expected a directive"));
    };
    let n = match (st.get(1), st.len()) {
        (
            Some(Token {
                tok: Tok::Num(s), ..
            }),
            2,
        ) => parse_int(s)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| err_at(&st[1], format!("`{s}` is not a count")))?,
        (Some(t), _) => return Err(err_at(t, format!("`{d}` takes one number"))),
        (None, _) => return Err(err_at(&st[0], format!("`{d}` takes one number"))),
    };
    let k = &mut open.kernel;
    let file = match d.as_str() {
        ".reg" => Some(RegFile::R),
        ".pred" => Some(RegFile::P),
        ".ureg" => Some(RegFile::Ur),
        ".areg" => Some(RegFile::A),
        ".shared" => {
            k.shared_bytes = n;
            None
        }
        ".local" => {
            k.local_bytes = n;
            None
        }
        _ => return Err(err_at(&st[0], format!("unknown directive `{d}`"))),
    };
    if let Some(f) = file {
        if !k.insts.is_empty() {
            return Err(err_at(
                &st[0],
                "register declarations come before the instructions",
            ));
        }
        open.ctx.regs.declared[file_index(f)] = Some(n);
    }
    Ok(())
}

/// An instruction statement: `{@{!}%p} mnemonic operands`.
fn parse_inst(st: &[Token], open: &mut Open) -> PResult<Inst> {
    let mut c = Cursor {
        toks: st,
        pos: 0,
        params: &open.kernel.params,
        end: end_of(st),
        ctx: &mut open.ctx,
    };
    let guard = if c.eat('@') {
        let negate = c.eat('!');
        let p = c.pred()?;
        Some(Guard {
            pred: p.idx,
            negate,
        })
    } else {
        None
    };
    let (mt, mnemonic) = c.word("an instruction")?;
    let (mnemonic, uni) = strip_uni(mnemonic);
    let op = parse_op(&mut c, mt, &mnemonic, open.kernel.insts.len())?;
    if uni && !op.uni_allowed() {
        return Err(err_at(
            mt,
            format!("`.uni` is not allowed on `{mnemonic}` (only arithmetic, conversions, comparisons, selections and non-local loads)"),
        ));
    }
    Ok(Inst { guard, op, uni })
}

/// Removes the uniform-datapath modifier from a mnemonic (`add.uni.s32` is `add.s32`
/// on the scalar unit); `bra.uni` keeps its own meaning (a non-divergent branch).
fn strip_uni(mnemonic: &str) -> (String, bool) {
    let mut parts: Vec<&str> = mnemonic.split('.').collect();
    if parts.len() > 2 && parts[0] != "bra" && parts[1] == "uni" {
        parts.remove(1);
        (parts.join("."), true)
    } else {
        (mnemonic.to_string(), false)
    }
}

fn end_of(st: &[Token]) -> (u32, u32) {
    match st.last() {
        Some(t) => {
            let len = match &t.tok {
                Tok::Word(s) | Tok::Reg(s) | Tok::Num(s) => s.chars().count() as u32,
                Tok::Punct(_) => 1,
            };
            (t.line, t.col + len)
        }
        None => (1, 1),
    }
}

/// Closes a kernel: resolves branches, fills register counts and sorts labels.
fn close(open: Open, errs: &mut Vec<AsmError>) -> Kernel {
    let Open {
        mut kernel,
        ctx,
        labels,
        ..
    } = open;
    for (i, name, line, col) in ctx.fixups {
        match labels.get(&name) {
            Some(&at) => {
                if let Some(Inst {
                    op: Op::Bra { target, .. },
                    ..
                }) = kernel.insts.get_mut(i)
                {
                    *target = at;
                }
            }
            None => errs.push(AsmError {
                line,
                col,
                msg: format!("no label `{name}` in `{}`", kernel.name),
            }),
        }
    }
    let count =
        |f: RegFile| ctx.regs.declared[file_index(f)].unwrap_or(ctx.regs.used[file_index(f)]);
    kernel.num_regs = count(RegFile::R);
    kernel.num_preds = count(RegFile::P);
    kernel.num_uregs = count(RegFile::Ur);
    kernel.num_aregs = count(RegFile::A);
    kernel.labels.sort_by_key(|l| l.at);
    kernel
}

/// Assembles `text` into a program, or returns every error found.
pub fn parse(text: &str) -> Result<Program, Vec<AsmError>> {
    let mut errs = Vec::new();
    let lines = lex(text, &mut errs);
    let funcs = collect_funcs(&lines, &mut errs);
    let mut prog = Program::default();
    let mut open: Option<Open> = None;
    for line in &lines {
        for st in statements(line) {
            if let Err(e) = statement(st, &mut open, &funcs, &mut prog, &mut errs) {
                errs.push(e);
            }
        }
    }
    if let Some(o) = open {
        errs.push(AsmError {
            line: o.line,
            col: 1,
            msg: format!("kernel `{}` is never closed with `}}`", o.kernel.name),
        });
    }
    if errs.is_empty() {
        Ok(prog)
    } else {
        errs.sort_by_key(|e| (e.line, e.col));
        Err(errs)
    }
}

/// `.affine name`: opens the DAC affine stream of the `.entry` `name` defined above
/// (with that entry's parameters, so `ld.param` may name them).
fn affine_header(st: &[Token], prog: &Program) -> PResult<Kernel> {
    let name = match st.get(1).map(|t| &t.tok) {
        Some(Tok::Word(n)) => n,
        _ => return Err(err_at(&st[0], "`.affine` needs the name of its `.entry`")),
    };
    if let Some(t) = st.get(2) {
        return Err(err_at(
            t,
            format!("unexpected {} after `.affine {name}`", describe(&t.tok)),
        ));
    }
    let Some(entry) = prog
        .kernels
        .iter()
        .find(|k| k.name == *name && k.kind == KernelKind::Entry)
    else {
        return Err(err_at(
            &st[1],
            format!("`.affine {name}` must follow the `.entry {name}` it belongs to"),
        ));
    };
    if entry.affine.is_some() {
        return Err(err_at(&st[1], format!("`{name}` has two affine streams")));
    }
    let mut k = Kernel::new(name, KernelKind::Affine);
    k.params = entry.params.clone();
    Ok(k)
}

/// Adds a closed kernel: an affine stream goes to its entry (dropped when the
/// header failed, which was reported).
fn push_kernel(prog: &mut Program, k: Kernel) {
    if k.kind != KernelKind::Affine {
        prog.kernels.push(k);
        return;
    }
    let entry = prog
        .kernels
        .iter_mut()
        .find(|e| e.name == k.name && e.kind == KernelKind::Entry && e.affine.is_none());
    if let Some(e) = entry {
        e.set_affine(k);
    }
}

/// Handles one statement in the current state (outside or inside a kernel).
fn statement<'a>(
    st: &[Token],
    open: &mut Option<Open<'a>>,
    funcs: &'a HashMap<String, u32>,
    prog: &mut Program,
    errs: &mut Vec<AsmError>,
) -> PResult<()> {
    let first = &st[0];
    match (&first.tok, open.as_mut()) {
        (Tok::Word(w), None) if w == ".entry" || w == ".func" => {
            let kind = if w == ".entry" {
                KernelKind::Entry
            } else {
                KernelKind::Func
            };
            // A bad header still opens a kernel so that its body is checked.
            let kernel = parse_header(st, kind).or_else(|e| {
                errs.push(e);
                Ok::<_, AsmError>(Kernel::new("?", kind))
            })?;
            *open = Some(Open {
                kernel,
                ctx: Ctx {
                    funcs,
                    regs: RegUse::default(),
                    fixups: Vec::new(),
                },
                labels: HashMap::new(),
                body_open: false,
                line: first.line,
            });
            Ok(())
        }
        (Tok::Word(w), None) if w == ".affine" => {
            let kernel = affine_header(st, prog).or_else(|e| {
                errs.push(e);
                Ok::<_, AsmError>(Kernel::new("?", KernelKind::Affine))
            })?;
            *open = Some(Open {
                kernel,
                ctx: Ctx {
                    funcs,
                    regs: RegUse::default(),
                    fixups: Vec::new(),
                },
                labels: HashMap::new(),
                body_open: false,
                line: first.line,
            });
            Ok(())
        }
        (_, None) => Err(err_at(
            first,
            format!(
                "expected `.entry` or `.func`, found {}",
                describe(&first.tok)
            ),
        )),
        (Tok::Punct('{'), Some(o)) if !o.body_open => {
            o.body_open = true;
            Ok(())
        }
        (_, Some(o)) if !o.body_open => Err(err_at(
            first,
            format!("expected `{{`, found {}", describe(&first.tok)),
        )),
        (Tok::Punct('}'), Some(_)) => {
            if let Some(o) = open.take() {
                let k = close(o, errs);
                push_kernel(prog, k);
            }
            Ok(())
        }
        (Tok::Word(name), Some(o)) if st.len() == 2 && st[1].tok == Tok::Punct(':') => {
            let at = o.kernel.insts.len() as u32;
            if o.labels.insert(name.clone(), at).is_some() {
                return Err(err_at(first, format!("label `{name}` is defined twice")));
            }
            o.kernel.labels.push(Label {
                name: name.clone(),
                at,
            });
            Ok(())
        }
        (Tok::Word(w), Some(o)) if w == ".entry" || w == ".func" || w == ".affine" => {
            // A missing `}`: report it, close the open kernel and start the new one.
            errs.push(err_at(
                first,
                format!("`{}` is not closed before this `{w}`", o.kernel.name),
            ));
            if let Some(o) = open.take() {
                let k = close(o, errs);
                push_kernel(prog, k);
            }
            statement(st, open, funcs, prog, errs)
        }
        (Tok::Word(w), Some(o)) if w.starts_with('.') => parse_directive(st, o),
        (_, Some(o)) => {
            // A failed instruction must not leave a branch fixup behind.
            let pending = o.ctx.fixups.len();
            let inst = parse_inst(st, o).inspect_err(|_| o.ctx.fixups.truncate(pending))?;
            o.kernel.insts.push(inst);
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------
// Printer
// ---------------------------------------------------------------------------------

// Every piece is written into one output string: a listing is thousands of lines,
// and a `format!` per operand (each its own allocation) made printing cost more than
// compiling on large kernels.

/// Writes the text of a register holding a value of type `ty`.
fn write_reg(out: &mut String, r: Reg, ty: Type) {
    let wide = ty.is_wide();
    let prefix = match (r.file, wide) {
        (RegFile::R, false) => "%r",
        (RegFile::R, true) => "%rd",
        (RegFile::P, _) => "%p",
        (RegFile::Ur, false) => "%ur",
        (RegFile::Ur, true) => "%urd",
        (RegFile::A, false) => "%a",
        (RegFile::A, true) => "%ad",
    };
    out.push_str(prefix);
    let _ = write!(out, "{}", { r.idx });
}

/// The text of a register holding a value of type `ty`.
pub fn reg_text(r: Reg, ty: Type) -> String {
    let mut s = String::new();
    write_reg(&mut s, r, ty);
    s
}

/// Writes the canonical text of an immediate of type `ty`: decimal for signed and
/// unsigned integers, hex for bit types, `0f`/`0d` hex bit patterns for floats (exact).
fn write_imm(out: &mut String, bits: u64, ty: Type) {
    let w = ty.bits();
    let v = bits & mask(w);
    let _ = match ty {
        Type::F32 => write!(out, "0f{:08X}", v as u32),
        Type::F64 => write!(out, "0d{v:016X}"),
        Type::S8 | Type::S16 | Type::S32 | Type::S64 => {
            let shift = 64 - w;
            write!(out, "{}", ((v << shift) as i64) >> shift)
        }
        Type::B8 | Type::B16 | Type::B32 | Type::B64 => write!(out, "0x{v:x}"),
        _ => write!(out, "{v}"),
    };
}

/// The canonical text of an immediate of type `ty` (see [`write_imm`]).
pub fn imm_text(bits: u64, ty: Type) -> String {
    let mut s = String::new();
    write_imm(&mut s, bits, ty);
    s
}

/// Writes the text of a source operand of type `ty`.
fn write_src(out: &mut String, s: Src, ty: Type) {
    match s {
        Src::Reg(r) => write_reg(out, r, ty),
        Src::Imm(b) => write_imm(out, b, ty),
        Src::Special(sp) => out.push_str(&sp.name()),
    }
}

pub fn src_text(s: Src, ty: Type) -> String {
    let mut out = String::new();
    write_src(&mut out, s, ty);
    out
}

/// Writes the text of an address; `params` names `[param]` bases.
fn write_addr(out: &mut String, a: Address, params: &[Param]) {
    out.push('[');
    match a.base {
        AddrBase::None => {
            let _ = write!(out, "{}]", a.offset);
            return;
        }
        AddrBase::Reg(r) => write_reg(out, r, Type::U32),
        AddrBase::RegPair(r) => write_reg(out, r, Type::U64),
        AddrBase::Param(i) => match params.get(i as usize) {
            Some(p) => out.push_str(&p.name),
            None => {
                let _ = write!(out, "$param{i}");
            }
        },
        AddrBase::DeqAddr => out.push_str("deq.addr"),
        AddrBase::DeqData => out.push_str("deq.data"),
    }
    let _ = match a.offset {
        0 => Ok(()),
        o if o < 0 => write!(out, "-{}", -i64::from(o)),
        o => write!(out, "+{o}"),
    };
    out.push(']');
}

/// The text of an address; `params` names `[param]` bases.
pub fn addr_text(a: Address, params: &[Param]) -> String {
    let mut s = String::new();
    write_addr(&mut s, a, params);
    s
}

fn addr_ty(wide: bool) -> Type {
    if wide {
        Type::U64
    } else {
        Type::U32
    }
}

/// Names the branch targets and called functions of the instructions printed.
trait Names {
    fn write_label(&self, out: &mut String, at: u32);
    fn write_func(&self, out: &mut String, func: u32);
}

/// [`Names`] from two closures returning each name.
struct NameFns<'a> {
    label_of: &'a dyn Fn(u32) -> String,
    func_of: &'a dyn Fn(u32) -> String,
}

impl Names for NameFns<'_> {
    fn write_label(&self, out: &mut String, at: u32) {
        out.push_str(&(self.label_of)(at));
    }
    fn write_func(&self, out: &mut String, func: u32) {
        out.push_str(&(self.func_of)(func));
    }
}

/// Prints one instruction (no indentation, with `;`). Branch targets and called
/// functions are named through `label_of` and `func_of`.
pub fn inst_text(
    inst: &Inst,
    params: &[Param],
    label_of: &dyn Fn(u32) -> String,
    func_of: &dyn Fn(u32) -> String,
) -> String {
    let mut s = String::new();
    write_inst(&mut s, inst, params, &NameFns { label_of, func_of });
    s
}

/// Writes one instruction (no indentation, with `;`), as [`inst_text`] prints it.
fn write_inst(out: &mut String, inst: &Inst, params: &[Param], names: &dyn Names) {
    if let Some(g) = inst.guard {
        let _ = write!(out, "@{}%p{} ", if g.negate { "!" } else { "" }, { g.pred });
    }
    let body = out.len();
    write_body(out, inst, params, names);
    // `.uni` follows the mnemonic's first part (`add.uni.s32`).
    if inst.uni {
        if let Some(dot) = out[body..].find('.') {
            out.insert_str(body + dot, ".uni");
        }
    }
    out.push(';');
}

/// An instruction's text after its guard: a mnemonic and operands, each operand
/// written by a closure of the instruction's [`Operands`] writer.
fn write_body(out: &mut String, inst: &Inst, params: &[Param], names: &dyn Names) {
    let mut o = Operands { out, first: true };
    match inst.op {
        Op::Bin { op, ty, dst, a, b } => {
            let bty = if op.is_shift() { Type::U32 } else { ty };
            o.head(&[op.name(), ".", ty.name()]);
            o.reg(dst, ty).src(a, ty).src(b, bty);
        }
        Op::Un { op, ty, dst, a } => {
            o.head(&[op.name(), ".", ty.name()]);
            o.reg(dst, ty).src(a, ty);
        }
        Op::Mad { ty, dst, a, b, c } => {
            o.head(&["mad.", ty.name()]);
            o.reg(dst, ty).src(a, ty).src(b, ty).src(c, ty);
        }
        Op::Cvt {
            rnd,
            dty,
            sty,
            dst,
            a,
        } => {
            let (dot, rnd) = rnd.map_or(("", ""), |m| (".", m.name()));
            o.head(&["cvt", dot, rnd, ".", dty.name(), ".", sty.name()]);
            o.reg(dst, dty).src(a, sty);
        }
        Op::Setp { cmp, ty, dst, a, b } => {
            o.head(&["setp.", cmp.name(), ".", ty.name()]);
            o.reg(dst, Type::Pred).src(a, ty).src(b, ty);
        }
        Op::Selp { ty, dst, a, b, p } => {
            o.head(&["selp.", ty.name()]);
            o.reg(dst, ty).src(a, ty).src(b, ty).reg(p, Type::Pred);
        }
        Op::Ld {
            space,
            ty,
            dst,
            addr,
        } => {
            o.head(&["ld.", space.name(), ".", ty.name()]);
            o.reg(dst, widen(ty)).addr(addr, params);
        }
        Op::St { space, ty, addr, a } => {
            o.head(&["st.", space.name(), ".", ty.name()]);
            o.addr(addr, params).src(a, widen(ty));
        }
        Op::Atom {
            space,
            op,
            ty,
            dst,
            addr,
            a,
            b,
        } => {
            o.head(&["atom.", space.name(), ".", op.name(), ".", ty.name()]);
            o.reg(dst, ty).addr(addr, params).src(a, ty);
            if let Some(b) = b {
                o.src(b, ty);
            }
        }
        Op::Bra { uni, target } => {
            o.head(&["bra", if uni { ".uni" } else { "" }]);
            o.out.push(' ');
            names.write_label(o.out, target);
        }
        Op::Call { func } => {
            o.out.push_str("call ");
            names.write_func(o.out, func);
        }
        Op::Ret => o.out.push_str("ret"),
        Op::Exit => o.out.push_str("exit"),
        Op::Nop => o.out.push_str("nop"),
        Op::Bar { id } => {
            let _ = write!(o.out, "bar.sync {id}");
        }
        Op::Fence { scope } => o.out.push_str(match scope {
            FenceScope::Cta => "membar.cta",
            FenceScope::Gl => "membar.gl",
        }),
        Op::Vote { mode, dst, p } => {
            let (ty, dty) = if mode == VoteMode::Ballot {
                ("b32", Type::B32)
            } else {
                ("pred", Type::Pred)
            };
            o.head(&["vote.", mode.name(), ".", ty]);
            o.reg(dst, dty).reg(p, Type::Pred);
        }
        Op::Shfl {
            mode,
            dst,
            dst_pred,
            a,
            lane,
            clamp,
        } => {
            o.head(&["shfl.", mode.name(), ".b32"]);
            o.reg(dst, Type::B32);
            if let Some(p) = dst_pred {
                o.out.push('|');
                write_reg(o.out, p, Type::Pred);
            }
            o.src(a, Type::B32)
                .src(lane, Type::U32)
                .src(clamp, Type::U32);
        }
        Op::EnqData {
            space,
            ty,
            addr,
            wide,
        } => {
            o.head(&["enq.data.", space.name(), ".", ty.name()]);
            o.reg(addr, addr_ty(wide));
        }
        Op::EnqAddr {
            space,
            ty,
            addr,
            wide,
        } => {
            o.head(&["enq.addr.", space.name(), ".", ty.name()]);
            o.reg(addr, addr_ty(wide));
        }
        Op::EnqPred { cmp, ty, a, b } => {
            o.head(&["enq.pred.", cmp.name(), ".", ty.name()]);
            o.src(a, ty).src(b, ty);
        }
        Op::EnqSel {
            data,
            space,
            ty,
            then,
            els,
            wide,
            cmp,
            cty,
            a,
            b,
        } => {
            let kind = if data { "data" } else { "addr" };
            o.head(&[
                "enq.",
                kind,
                ".sel.",
                space.name(),
                ".",
                ty.name(),
                ".",
                cmp.name(),
                ".",
                cty.name(),
            ]);
            o.reg(then, addr_ty(wide))
                .reg(els, addr_ty(wide))
                .src(a, cty)
                .src(b, cty);
        }
        Op::DeqPred { dst } => {
            o.head(&["deq.pred"]);
            o.reg(dst, Type::Pred);
        }
    }
}

/// Writes a mnemonic and then its operands: a space before the first, `, ` between.
struct Operands<'a> {
    out: &'a mut String,
    first: bool,
}

impl Operands<'_> {
    fn head(&mut self, parts: &[&str]) {
        for p in parts {
            self.out.push_str(p);
        }
    }

    fn sep(&mut self) {
        self.out.push_str(if self.first { " " } else { ", " });
        self.first = false;
    }

    fn reg(&mut self, r: Reg, ty: Type) -> &mut Self {
        self.sep();
        write_reg(self.out, r, ty);
        self
    }

    fn src(&mut self, s: Src, ty: Type) -> &mut Self {
        self.sep();
        write_src(self.out, s, ty);
        self
    }

    fn addr(&mut self, a: Address, params: &[Param]) -> &mut Self {
        self.sep();
        write_addr(self.out, a, params);
        self
    }
}

/// A kernel's names for [`write_inst`]: its labels by pc, and every kernel's name.
struct KernelNames<'a> {
    /// The first label at each pc (`None` where there is none).
    by_pc: Vec<Option<&'a str>>,
    /// Every label, for targets past the end (only in malformed programs).
    labels: &'a [Label],
    funcs: &'a [&'a str],
}

impl Names for KernelNames<'_> {
    fn write_label(&self, out: &mut String, at: u32) {
        let name = match self.by_pc.get(at as usize) {
            Some(&name) => name,
            None => self
                .labels
                .iter()
                .find(|l| l.at == at)
                .map(|l| l.name.as_str()),
        };
        match name {
            Some(name) => out.push_str(name),
            None => {
                let _ = write!(out, "$L{at}");
            }
        }
    }
    fn write_func(&self, out: &mut String, f: u32) {
        match self.funcs.get(f as usize) {
            Some(name) => out.push_str(name),
            None => {
                let _ = write!(out, "$F{f}");
            }
        }
    }
}

/// Prints one kernel; `names` are the names of all kernels (for `call`).
pub fn kernel_text(k: &Kernel, names: &[&str]) -> String {
    let mut s = String::new();
    write_kernel(&mut s, k, names);
    s
}

/// Writes one kernel, as [`kernel_text`] prints it.
fn write_kernel(s: &mut String, k: &Kernel, names: &[&str]) {
    let kw = match k.kind {
        KernelKind::Entry => ".entry",
        KernelKind::Func => ".func",
        KernelKind::Affine => ".affine",
    };
    s.push_str(kw);
    s.push(' ');
    s.push_str(&k.name);
    if k.kind != KernelKind::Affine && (k.kind == KernelKind::Entry || !k.params.is_empty()) {
        s.push('(');
        for (i, p) in k.params.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, ".param .{} {}", p.ty, p.name);
        }
        s.push(')');
    }
    s.push_str("\n{\n");
    for (d, n) in [
        (".reg", k.num_regs),
        (".pred", k.num_preds),
        (".ureg", k.num_uregs),
        (".areg", k.num_aregs),
        (".shared", k.shared_bytes),
        (".local", k.local_bytes),
    ] {
        if n != 0 || d == ".reg" {
            let _ = writeln!(s, "    {d} {n};");
        }
    }
    // A branch target is named by the first label at its pc, else `$L<pc>`; marked
    // per pc, so a long kernel is not searched once per instruction.
    let mut unlabeled = vec![false; k.insts.len() + 1];
    for t in branch_targets(k) {
        if let Some(u) = unlabeled.get_mut(t as usize) {
            *u = true;
        }
    }
    let mut by_pc: Vec<Option<&str>> = vec![None; k.insts.len() + 1];
    for l in &k.labels {
        if let Some(u) = unlabeled.get_mut(l.at as usize) {
            *u = false;
        }
        if let Some(slot @ None) = by_pc.get_mut(l.at as usize) {
            *slot = Some(&l.name);
        }
    }
    let kernel_names = KernelNames {
        by_pc,
        labels: &k.labels,
        funcs: names,
    };
    let mut li = 0;
    for (i, &unlabeled_here) in unlabeled.iter().enumerate() {
        let at = i as u32;
        if unlabeled_here {
            let _ = writeln!(s, "$L{at}:");
        }
        while li < k.labels.len() && k.labels[li].at <= at {
            s.push_str(&k.labels[li].name);
            s.push_str(":\n");
            li += 1;
        }
        if let Some(inst) = k.insts.get(i) {
            s.push_str("    ");
            write_inst(s, inst, &k.params, &kernel_names);
            s.push('\n');
        }
    }
    // Labels past the end (only in malformed programs) still print.
    for l in &k.labels[li..] {
        s.push_str(&l.name);
        s.push_str(":\n");
    }
    s.push_str("}\n");
}

fn branch_targets(k: &Kernel) -> Vec<u32> {
    k.insts
        .iter()
        .filter_map(|i| match i.op {
            Op::Bra { target, .. } => Some(target),
            _ => None,
        })
        .collect()
}

/// Prints a whole program in the canonical form that [`parse`] reads back.
pub fn print(p: &Program) -> String {
    let names: Vec<&str> = p.kernels.iter().map(|k| k.name.as_str()).collect();
    let mut s = String::new();
    for (i, k) in p.kernels.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        write_kernel(&mut s, k, &names);
        // The affine stream right after its entry, as the parser wants it.
        if let Some(a) = &k.affine {
            s.push('\n');
            write_kernel(&mut s, a, &names);
        }
    }
    s
}

/// Checks a program built without text (e.g. by a back end with [`KernelBuilder`]):
/// it is valid when its canonical text assembles back to exactly the same program,
/// which applies every rule of the assembler (types, register widths and counts,
/// labels, spaces).
pub fn check(p: &Program) -> Result<(), Vec<AsmError>> {
    let text = print(p);
    match parse(&text) {
        Ok(q) if q == *p => Ok(()),
        Ok(_) => Err(vec![AsmError {
            line: 0,
            col: 0,
            msg: "the program does not survive printing (unlabeled branch targets, names that are not words, or register counts below their use)".into(),
        }]),
        Err(es) => Err(es),
    }
}
