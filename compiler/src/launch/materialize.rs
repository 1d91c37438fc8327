//! From parsed `--arg` specs to argument values of the entry's parameter types.
//!
//! [`materialize`] turns one spec into a value for one parameter: a scalar [`Value`] or
//! a [`Buffer`] of the parameter's element type. [`bind_args`] does it for a whole
//! command line: it matches names to parameters and reports unknown names, duplicates
//! and missing parameters, collecting every error rather than stopping at the first, so
//! one run of `spmdc run` shows everything wrong with its arguments.

use crate::launch::buffer::Buffer;
use crate::launch::elem::{ElemType, Value};
use crate::launch::error::{did_you_mean, ErrorKind, LaunchError};
use crate::launch::files;
use crate::launch::random::SplitMix64;
use crate::launch::signature::{KernelParam, KernelSignature, ParamKind};
use crate::launch::spec::{ArgSpec, Literal, Spec};
use crate::launch::MAX_ELEMENTS;

/// One argument, ready to pass.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    Scalar(Value),
    Buffer(Buffer),
}

impl ArgValue {
    pub fn as_scalar(&self) -> Option<Value> {
        match self {
            ArgValue::Scalar(v) => Some(*v),
            ArgValue::Buffer(_) => None,
        }
    }

    pub fn as_buffer(&self) -> Option<&Buffer> {
        match self {
            ArgValue::Buffer(b) => Some(b),
            ArgValue::Scalar(_) => None,
        }
    }

    pub fn as_buffer_mut(&mut self) -> Option<&mut Buffer> {
        match self {
            ArgValue::Buffer(b) => Some(b),
            ArgValue::Scalar(_) => None,
        }
    }
}

/// Makes the value of `param` from `arg` (whose name is not checked here).
pub fn materialize(param: &KernelParam, arg: &ArgSpec) -> Result<ArgValue, LaunchError> {
    let pname = &param.name;
    let elem = param.elem();
    match (&arg.spec, param.kind) {
        (Spec::Scalar(lit), ParamKind::Scalar(ty)) => Value::from_literal(ty, lit)
            .map(ArgValue::Scalar)
            .map_err(|m| arg.error(ErrorKind::BadValue, format!("bad value for `{pname}`: {m}"))),
        (Spec::Scalar(lit), ParamKind::Buffer { .. }) => Err(arg
            .error(
                ErrorKind::WrongKind,
                format!(
                    "`{pname}` is a {} (`{}`), but `{}` is a single value",
                    param.describe(),
                    param.type_name,
                    arg.spec_text()
                ),
            )
            .with_help(format!(
                "give a buffer: `{pname}=fill(N,{lit})`, `zeros(N)`, `range(N)`, `random(N)` or `@file`"
            ))),
        (_, ParamKind::Scalar(ty)) => Err(arg
            .error(
                ErrorKind::WrongKind,
                format!(
                    "`{pname}` is a single `{ty}`, but `{}` makes a buffer",
                    arg.spec_text()
                ),
            )
            .with_help(format!("give one value, e.g. `{pname}={}`", example_scalar(ty)))),
        (spec, ParamKind::Buffer { .. }) => buffer(elem, spec)
            .and_then(|b| referenced(param, b))
            .map(ArgValue::Buffer)
            .map_err(|(kind, m)| arg.error(kind, format!("bad value for `{pname}`: {m}"))),
        (spec, ParamKind::Records { size, .. }) => records(size, spec)
            .and_then(|b| referenced(param, b))
            .map(ArgValue::Buffer)
            .map_err(|(kind, m)| arg.error(kind, format!("bad value for `{pname}`: {m}"))),
    }
}

/// A plausible scalar of a type, for examples in messages.
fn example_scalar(ty: ElemType) -> &'static str {
    match ty {
        ElemType::Bool => "true",
        ElemType::F32 | ElemType::F64 => "1.5",
        _ => "16",
    }
}

type Fail = (ErrorKind, String);

fn check_count(n: u64) -> Result<usize, Fail> {
    if n > MAX_ELEMENTS {
        return Err((
            ErrorKind::TooLarge,
            format!("{n} elements is too many; a buffer is limited to {MAX_ELEMENTS} (2^28)"),
        ));
    }
    usize::try_from(n).map_err(|_| (ErrorKind::TooLarge, format!("{n} elements is too many")))
}

/// A buffer of `elem`s from a buffer spec.
fn buffer(elem: ElemType, spec: &Spec) -> Result<Buffer, Fail> {
    match spec {
        Spec::Scalar(_) => Err((
            ErrorKind::WrongKind,
            "a single value is not a buffer".into(),
        )),
        Spec::Zeros { n } => Ok(Buffer::zeros(elem, check_count(*n)?)),
        Spec::Fill { n, value } => {
            let n = check_count(*n)?;
            let v = Value::from_literal(elem, value)
                .map_err(|m| (ErrorKind::BadValue, format!("the fill value: {m}")))?;
            let mut one = Vec::with_capacity(elem.size());
            v.write_le(&mut one);
            let bytes = one.repeat(n);
            Buffer::from_bytes(elem, bytes).ok_or((ErrorKind::BadValue, "size mismatch".into()))
        }
        Spec::Range { n, start, step } => range(elem, check_count(*n)?, *start, *step),
        Spec::Random { n, seed, bounds } => random(
            elem,
            check_count(*n)?,
            seed.unwrap_or(SplitMix64::DEFAULT_SEED),
            *bounds,
        ),
        Spec::File(path) => files::read_buffer(path, elem)
            .map_err(|(k, m)| (k, format!("`@{}`: {m}", path.display()))),
    }
}

/// `buffer`, unless `param` is a reference and the buffer is empty: a reference names
/// one object.
fn referenced(param: &KernelParam, buffer: Buffer) -> Result<Buffer, Fail> {
    if param.by_ref && buffer.is_empty() {
        return Err((
            ErrorKind::BadValue,
            "it is a reference, so its buffer must hold the one object it refers to (e.g. `fill(1,V)` or `zeros(1)`)".into(),
        ));
    }
    Ok(buffer)
}

/// The bytes of a buffer of structs of `size` bytes: `zeros(N)` structs, or a raw
/// `@file` of whole structs (the layout of their members is the kernel's to read).
fn records(size: u32, spec: &Spec) -> Result<Buffer, Fail> {
    let size = u64::from(size.max(1));
    match spec {
        Spec::Zeros { n } => Ok(Buffer::zeros(
            ElemType::U8,
            check_count(n.saturating_mul(size))?,
        )),
        Spec::File(path) if files::FileFormat::of(path) == files::FileFormat::Binary => {
            let b = files::read_buffer(path, ElemType::U8)
                .map_err(|(k, m)| (k, format!("`@{}`: {m}", path.display())))?;
            if !(b.len() as u64).is_multiple_of(size) {
                return Err((
                    ErrorKind::File,
                    format!(
                        "`@{}`: its size, {} bytes, is not a whole number of structs of {size} bytes",
                        path.display(),
                        b.len()
                    ),
                ));
            }
            Ok(b)
        }
        _ => Err((
            ErrorKind::WrongKind,
            "a buffer of structs takes `zeros(N)` (N structs) or a raw `@file` of their bytes (`.bin`)".into(),
        )),
    }
}

fn collect(elem: ElemType, n: usize, mut f: impl FnMut(usize) -> Value) -> Buffer {
    let mut bytes = Vec::with_capacity(n * elem.size());
    for i in 0..n {
        f(i).write_le(&mut bytes);
    }
    Buffer::from_bytes(elem, bytes).unwrap_or_else(|| Buffer::zeros(elem, 0))
}

/// `range(N, START, STEP)`: `START + i*STEP`.
fn range(
    elem: ElemType,
    n: usize,
    start: Option<Literal>,
    step: Option<Literal>,
) -> Result<Buffer, Fail> {
    let start = start.unwrap_or(Literal::Int(0));
    let step = step.unwrap_or(Literal::Int(1));
    let bad = |m: String| (ErrorKind::BadValue, m);
    if matches!(start, Literal::Bool(_)) || matches!(step, Literal::Bool(_)) {
        return Err(bad(
            "`range` takes numbers for START and STEP, not `true`/`false`".into(),
        ));
    }
    if elem.is_float() {
        let f = |l: Literal| match l {
            Literal::Int(v) => v as f64,
            Literal::Float(v) => v,
            Literal::Bool(b) => f64::from(u8::from(b)),
        };
        let (s, d) = (f(start), f(step));
        let at = |i: usize| s + i as f64 * d;
        for i in [0, n.saturating_sub(1)] {
            if n > 0 {
                Value::from_literal(elem, &Literal::Float(at(i)))
                    .map_err(|m| bad(format!("`range` reaches {} at element {i}: {m}", at(i))))?;
            }
        }
        return Ok(collect(elem, n, |i| match elem {
            ElemType::F32 => Value::F32(at(i) as f32),
            _ => Value::F64(at(i)),
        }));
    }
    let (Literal::Int(s), Literal::Int(d)) = (start, step) else {
        return Err(bad(format!(
            "`range` into a buffer of `{elem}` needs integer START and STEP"
        )));
    };
    // n < 2^29 and |d| < 2^65, so this cannot overflow an i128.
    let at = |i: usize| s + i as i128 * d;
    if n > 0 {
        let (lo, hi) = elem.int_range().unwrap_or((0, 0));
        for i in [0, n - 1] {
            let v = at(i);
            if v < lo || v > hi {
                return Err(bad(format!(
                    "`range` reaches {v} at element {i}, which does not fit in `{elem}` ({lo} to {hi})"
                )));
            }
        }
    }
    Ok(collect(elem, n, |i| {
        Value::from_int(elem, at(i)).unwrap_or_else(|| elem.zero())
    }))
}

/// `random(N, SEED, LO, HI)`; see [`crate::launch::random`] for the generator.
fn random(
    elem: ElemType,
    n: usize,
    seed: u64,
    bounds: Option<(Literal, Literal)>,
) -> Result<Buffer, Fail> {
    let mut g = SplitMix64::new(seed);
    let bad = |m: String| (ErrorKind::BadValue, m);
    if elem == ElemType::Bool {
        if bounds.is_some() {
            return Err(bad(
                "`random` into a `bool` buffer takes no LO and HI".into()
            ));
        }
        return Ok(collect(elem, n, |_| Value::Bool(g.next_u64() >> 63 == 1)));
    }
    if elem.is_float() {
        let (lo, hi) = match bounds {
            None => (0.0, 1.0),
            Some((lo, hi)) => {
                // LO and HI rounded to the element type first, so the range is the
                // element type's [lo, hi).
                let conv = |l: Literal, which: &str| -> Result<f64, Fail> {
                    match Value::from_literal(elem, &l) {
                        Ok(v) if v.as_f64().is_finite() => Ok(v.as_f64()),
                        Ok(_) => Err(bad(format!("`random` needs a finite {which}, not `{l}`"))),
                        Err(m) => Err(bad(format!("`random` {which}: {m}"))),
                    }
                };
                (conv(lo, "LO")?, conv(hi, "HI")?)
            }
        };
        if lo >= hi || !(hi - lo).is_finite() {
            return Err(bad(format!(
                "`random` needs LO < HI with a finite difference, got [{lo}, {hi})"
            )));
        }
        return Ok(collect(elem, n, |_| {
            let x = lo + (hi - lo) * g.next_unit_f64();
            match elem {
                ElemType::F32 => {
                    let (y, h) = (x as f32, hi as f32);
                    Value::F32(if y >= h { h.next_down() } else { y })
                }
                _ => Value::F64(if x >= hi { hi.next_down() } else { x }),
            }
        }));
    }
    let (lo, hi) = match bounds {
        None => (0, 100),
        Some((Literal::Int(lo), Literal::Int(hi))) => (lo, hi),
        Some(_) => {
            return Err(bad(format!(
                "`random` into a buffer of `{elem}` needs integer LO and HI"
            )))
        }
    };
    let (min, max) = elem.int_range().unwrap_or((0, 0));
    if lo >= hi {
        return Err(bad(format!("`random` needs LO < HI, got [{lo}, {hi})")));
    }
    if lo < min || hi - 1 > max {
        return Err(bad(format!(
            "`random` range [{lo}, {hi}) does not fit in `{elem}` ({min} to {max})"
        )));
    }
    let span = (hi - lo) as u128;
    Ok(collect(elem, n, |_| {
        Value::from_int(elem, g.next_in(lo, span)).unwrap_or_else(|| elem.zero())
    }))
}

/// Matches `args` to the parameters of `sig` and makes every argument, in parameter
/// order. On failure, every problem found: bad specs, unknown names (with a
/// suggestion), duplicates, and one error listing the missing parameters.
pub fn bind_args(
    sig: &KernelSignature,
    args: &[ArgSpec],
) -> Result<Vec<ArgValue>, Vec<LaunchError>> {
    bind_args_excusing(sig, args, &[])
}

/// [`bind_args`], except that the parameters named in `excused` are not reported
/// missing: their `--arg` was given but did not parse, which the caller has already
/// reported. So an `Err` may be empty here, when only excused parameters are missing.
pub(crate) fn bind_args_excusing(
    sig: &KernelSignature,
    args: &[ArgSpec],
    excused: &[&str],
) -> Result<Vec<ArgValue>, Vec<LaunchError>> {
    let mut values: Vec<Option<ArgValue>> = vec![None; sig.params.len()];
    let mut given: Vec<Option<&ArgSpec>> = vec![None; sig.params.len()];
    let mut errors = Vec::new();
    for arg in args {
        let Some(param) = sig.param(&arg.name) else {
            let names = sig.params.iter().map(|p| p.name.as_str());
            let err = LaunchError::new(
                ErrorKind::UnknownParam,
                format!(
                    "`{}` has no parameter named `{}`{}",
                    sig.name,
                    arg.name,
                    did_you_mean(&arg.name, names)
                ),
            )
            .with_snippet(&arg.text, 0, arg.text.find('=').unwrap_or(arg.text.len()));
            errors.push(with_param_list(err, sig));
            continue;
        };
        if let Some(first) = given[param.index] {
            errors.push(
                LaunchError::new(
                    ErrorKind::DuplicateArg,
                    format!(
                        "`{}` is given twice: `{}` and `{}`",
                        param.name, first.text, arg.text
                    ),
                )
                .with_help("give each parameter one `--arg`"),
            );
            continue;
        }
        given[param.index] = Some(arg);
        match materialize(param, arg) {
            Ok(v) => values[param.index] = Some(v),
            Err(e) => errors.push(e),
        }
    }
    let missing: Vec<&KernelParam> = sig
        .params
        .iter()
        .filter(|p| given[p.index].is_none() && !excused.contains(&p.name.as_str()))
        .collect();
    if !missing.is_empty() {
        let list: Vec<String> = missing
            .iter()
            .map(|p| format!("`{}` ({})", p.name, p.describe()))
            .collect();
        let example: Vec<String> = missing
            .iter()
            .map(|p| match p.kind {
                ParamKind::Scalar(t) => format!("--arg {}={}", p.name, example_scalar(t)),
                ParamKind::Buffer { .. } | ParamKind::Records { .. } => {
                    format!("--arg {}=zeros(16)", p.name)
                }
            })
            .collect();
        let s = if missing.len() == 1 { "" } else { "s" };
        errors.push(
            LaunchError::new(
                ErrorKind::MissingArgs,
                format!(
                    "missing argument{s} for `{}`: {}",
                    sig.name,
                    list.join(", ")
                ),
            )
            .with_help(format!("add {}", example.join(" "))),
        );
    }
    if errors.is_empty() && values.iter().all(Option::is_some) {
        Ok(values.into_iter().flatten().collect())
    } else {
        Err(errors)
    }
}

fn with_param_list(err: LaunchError, sig: &KernelSignature) -> LaunchError {
    if sig.params.is_empty() {
        err.with_note(format!("`{}` takes no parameters", sig.name))
    } else {
        let list: Vec<String> = sig
            .params
            .iter()
            .map(|p| format!("{} ({})", p.name, p.describe()))
            .collect();
        err.with_note(format!("the parameters are: {}", list.join(", ")))
    }
}
