//! Every kernel in `examples/` run on the reference interpreter, with its outputs
//! checked element by element against a Rust implementation of the same algorithm on
//! the same inputs.
//!
//! Each kernel is described once in [`KERNELS`]: its file and entry point, its
//! parameters, a few launches (inputs made here from a fixed-seed generator, written to
//! raw binary files and passed as `@file` arguments) and a reference that computes every
//! output buffer. Every launch runs at `programCount` 16 and 32 through the library
//! (`driver::run_front` + `driver::run_on_interp`); every buffer is checked, so read-only
//! inputs must come back unchanged, and outputs start from a sentinel where the kernel
//! is supposed to leave some elements alone. The launch each example's header suggests
//! is run too, through the `spmdc` binary, with its arguments materialized here (`fill`,
//! `range`, `random`, files) for the reference.
//!
//! Floats are compared bit for bit when the reference performs the kernel's float
//! operations in the same order (every kernel here but the cross-lane reductions);
//! results of `reduce_add` and friends, whose association order is the
//! implementation's, are compared with a rounding-error bound (see [`sum_tolerance`]).
//!
//! A kernel that fails because of a compiler bug is listed in [`KNOWN_FAILURES`] with
//! the reason; the list is checked exactly, so a fix makes its entry fail until removed.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use spmdc::driver::{self, FrontOptions, RunRequest, Stage};
use spmdc::front::sema;
use spmdc::interp::Limits;

const PROGRAM_COUNTS: [u32; 2] = [16, 32];

/// The step limit of every run (the largest, the mandelbrot header's command, takes
/// about 16 million); a kernel that spins traps instead of hanging the test.
const MAX_STEPS: u64 = 50_000_000;

/// A launch that fails because of a compiler bug.
struct KnownFailure {
    kernel: &'static str,
    /// The launch's label (`header` for the header's command).
    launch: &'static str,
    program_count: u32,
    /// A part of the error it must fail with.
    message: &'static str,
    why: &'static str,
}

/// Checked exactly: each listed launch must fail with its message, and every launch
/// not listed must pass.
const KNOWN_FAILURES: &[KnownFailure] = &[];

// ---------------------------------------------------------------------------------
// Values, launches and expectations

/// The type of a kernel parameter, as far as these kernels need.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    /// `uniform int`
    I,
    /// `uniform float`
    F,
    /// `uniform int[]`
    Iv,
    /// `uniform float[]`
    Fv,
}

#[derive(Clone, Debug, PartialEq)]
enum Val {
    I(i32),
    F(f32),
    Iv(Vec<i32>),
    Fv(Vec<f32>),
}

/// Argument values by parameter name.
#[derive(Clone, Debug, Default)]
struct Args(BTreeMap<String, Val>);

impl Args {
    fn new(pairs: Vec<(&str, Val)>) -> Args {
        Args(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    fn get(&self, name: &str) -> &Val {
        self.0
            .get(name)
            .unwrap_or_else(|| panic!("no argument `{name}`"))
    }

    fn i(&self, name: &str) -> i32 {
        match self.get(name) {
            Val::I(v) => *v,
            v => panic!("`{name}` is not an int: {v:?}"),
        }
    }

    fn f(&self, name: &str) -> f32 {
        match self.get(name) {
            Val::F(v) => *v,
            v => panic!("`{name}` is not a float: {v:?}"),
        }
    }

    fn iv(&self, name: &str) -> Vec<i32> {
        match self.get(name) {
            Val::Iv(v) => v.clone(),
            v => panic!("`{name}` is not an int buffer: {v:?}"),
        }
    }

    fn fv(&self, name: &str) -> Vec<f32> {
        match self.get(name) {
            Val::Fv(v) => v.clone(),
            v => panic!("`{name}` is not a float buffer: {v:?}"),
        }
    }
}

/// The launch shape as it ran (defaults filled in).
#[derive(Clone, Copy, Debug)]
struct Shape {
    grid: [u32; 3],
    block: [u32; 3],
    program_count: u32,
}

/// What a buffer must hold after the run.
#[derive(Clone, Debug)]
enum Expect {
    Ints(Vec<i32>),
    /// Bit-exact floats.
    Exact(Vec<f32>),
    /// Floats within an absolute tolerance each: (value, tolerance).
    Close(Vec<(f64, f64)>),
}

type Outputs = Vec<(&'static str, Expect)>;

struct Launch {
    label: String,
    grid: Option<[u32; 3]>,
    block: Option<[u32; 3]>,
    args: Args,
    /// The step limit, when lower than [`MAX_STEPS`] (a launch that is known to spin).
    max_steps: Option<u64>,
}

fn launch(label: &str, grid: Option<[u32; 3]>, block: Option<[u32; 3]>, args: Args) -> Launch {
    Launch {
        label: label.to_string(),
        grid,
        block,
        args,
        max_steps: None,
    }
}

struct Kernel {
    /// `file` or `file/entry` when a file has several entries.
    id: &'static str,
    file: &'static str,
    entry: &'static str,
    params: &'static [(&'static str, Ty)],
    /// The launches to run at a programCount.
    launches: fn(u32) -> Vec<Launch>,
    /// Every output buffer after the launch; buffers not named must be unchanged.
    reference: fn(&Args, &Shape) -> Outputs,
}

// ---------------------------------------------------------------------------------
// Inputs

/// SplitMix64, for test inputs (the same generator `random(...)` uses; see
/// lang-spec/run.md).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A double in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    fn f32_in(&mut self, lo: f32, hi: f32) -> f32 {
        let v = (lo as f64 + (hi as f64 - lo as f64) * self.unit()) as f32;
        if v >= hi {
            lo
        } else {
            v
        }
    }

    /// An integer in [lo, hi).
    fn i32_in(&mut self, lo: i32, hi: i32) -> i32 {
        let span = (hi as i64 - lo as i64) as u128;
        (lo as i64 + ((self.next() as u128 * span) >> 64) as i64) as i32
    }

    fn fvec(&mut self, n: usize, lo: f32, hi: f32) -> Val {
        Val::Fv((0..n).map(|_| self.f32_in(lo, hi)).collect())
    }

    fn ivec(&mut self, n: usize, lo: i32, hi: i32) -> Val {
        Val::Iv((0..n).map(|_| self.i32_in(lo, hi)).collect())
    }

    /// Small integers as floats: every sum of a few hundred of them is exact in `f32`,
    /// whatever the association order.
    fn int_floats(&mut self, n: usize, lo: i32, hi: i32) -> Val {
        Val::Fv((0..n).map(|_| self.i32_in(lo, hi) as f32).collect())
    }
}

fn fill_f(n: usize, v: f32) -> Val {
    Val::Fv(vec![v; n])
}

fn fill_i(n: usize, v: i32) -> Val {
    Val::Iv(vec![v; n])
}

fn range_f(n: usize) -> Val {
    Val::Fv((0..n).map(|i| i as f32).collect())
}

/// Sentinel for output elements the kernel must not write.
const SENTINEL: f32 = -12345.5;

/// Error bound for a float sum of `terms` terms whose absolute values add up to
/// `abs_sum`, in any association order: |error| <= (terms - 1) * u * abs_sum, with
/// u = 2^-24 the unit roundoff; this uses 2u (`f32::EPSILON`) for margin.
fn sum_tolerance(terms: usize, abs_sum: f64) -> f64 {
    terms.max(1) as f64 * f32::EPSILON as f64 * abs_sum
}

// ---------------------------------------------------------------------------------
// Running

fn repo_root() -> PathBuf {
    common::repo_root()
}

/// A fresh scratch directory for one run, private to this process (other checkouts
/// may run this test at the same time in the shared target directory); removed by
/// the caller after the run.
fn scratch_dir(tag: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("examples_run")
        .join(format!("{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes a buffer as raw little-endian elements in `dir`; returns the `@path` SPEC.
fn buffer_file(dir: &Path, name: &str, v: &Val) -> String {
    let mut bytes = Vec::new();
    match v {
        Val::Iv(v) => v.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        Val::Fv(v) => v.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        _ => unreachable!(),
    }
    let path = dir.join(format!("{name}.bin"));
    std::fs::write(&path, bytes).unwrap();
    format!("@{}", path.display())
}

/// The arguments as `--arg` strings; buffers go through files in `dir`.
fn arg_strings(args: &Args, dir: &Path) -> Vec<String> {
    args.0
        .iter()
        .map(|(name, v)| match v {
            Val::I(x) => format!("{name}={x}"),
            // `{:?}` prints the shortest digits that read back to the same f32.
            Val::F(x) => format!("{name}={x:?}"),
            _ => format!("{name}={}", buffer_file(dir, name, v)),
        })
        .collect()
}

fn dims(d: [u32; 3]) -> String {
    format!("{},{},{}", d[0], d[1], d[2])
}

/// Buffers after a run, by name.
type Buffers = BTreeMap<String, Val>;

/// Compiles `file` for `program_count` and runs one launch on the interpreter.
fn run_lib(
    k: &Kernel,
    program_count: u32,
    l: &Launch,
    tag: &str,
) -> Result<(Shape, Buffers), String> {
    let path = repo_root().join("examples").join(k.file);
    let text = std::fs::read_to_string(&path).unwrap();
    let dir = scratch_dir(tag);
    let args = arg_strings(&l.args, &dir);
    let grid = l.grid.map(dims);
    let block = l.block.map(dims);
    let entry = k.entry.to_string();
    let max_steps = l.max_steps.unwrap_or(MAX_STEPS);
    let outcome = driver::with_big_stack(move || {
        let options = FrontOptions {
            target: sema::Target {
                program_count,
                pointer_size: 8,
            },
            ..FrontOptions::default()
        };
        let name = format!("examples/{}", path.file_name().unwrap().to_string_lossy());
        let front = driver::run_front(&name, Some(path), text, &options, Stage::Check);
        let req = RunRequest {
            optimize: spmdc::driver::OPTIMIZE_BY_DEFAULT,
            entry: &entry,
            args: &args,
            grid: grid.as_deref(),
            block: block.as_deref(),
            dynamic_shared: None,
            limits: Limits {
                max_steps,
                ..Limits::default()
            },
        };
        let result = driver::run_on_interp(&front, &req).map_err(|e| match e {
            driver::RunError::Trap(t) => format!("trap: {t}"),
            e => format!("{e:?}"),
        })?;
        let d = |d: sim::Dim3| [d.x, d.y, d.z];
        let shape = Shape {
            grid: d(result.config.grid),
            block: d(result.config.block),
            program_count,
        };
        let mut buffers = Buffers::new();
        for (name, b) in &result.buffers {
            let v = if let Some(v) = b.to_vec::<f32>() {
                Val::Fv(v)
            } else if let Some(v) = b.to_vec::<i32>() {
                Val::Iv(v)
            } else {
                return Err(format!("buffer `{name}` is neither int nor float"));
            };
            buffers.insert(name.clone(), v);
        }
        Ok((shape, buffers))
    });
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// Checks every buffer of a run against the reference (unnamed buffers against the
/// input).
fn compare(k: &Kernel, args: &Args, shape: &Shape, got: &Buffers) -> Result<(), String> {
    let expected: BTreeMap<&str, Expect> = (k.reference)(args, shape).into_iter().collect();
    let mut errors = Vec::new();
    for (name, ty) in k.params {
        if !matches!(ty, Ty::Iv | Ty::Fv) {
            continue;
        }
        let Some(g) = got.get(*name) else {
            // The CLI path reads back only the buffers it printed; it prints them all.
            errors.push(format!("buffer `{name}` missing from the result"));
            continue;
        };
        let want = match expected.get(name) {
            Some(e) => e.clone(),
            None => match args.get(name) {
                Val::Iv(v) => Expect::Ints(v.clone()),
                Val::Fv(v) => Expect::Exact(v.clone()),
                _ => unreachable!(),
            },
        };
        if let Err(e) = compare_buffer(name, &want, g) {
            errors.push(e);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

fn compare_buffer(name: &str, want: &Expect, got: &Val) -> Result<(), String> {
    let mut bad: Vec<String> = Vec::new();
    let (wlen, glen) = match (want, got) {
        (Expect::Ints(w), Val::Iv(g)) => {
            for (i, (a, b)) in w.iter().zip(g).enumerate() {
                if a != b {
                    bad.push(format!("[{i}]: got {b}, want {a}"));
                }
            }
            (w.len(), g.len())
        }
        (Expect::Exact(w), Val::Fv(g)) => {
            for (i, (a, b)) in w.iter().zip(g).enumerate() {
                if a.to_bits() != b.to_bits() {
                    bad.push(format!("[{i}]: got {b:?}, want {a:?} (bit-exact)"));
                }
            }
            (w.len(), g.len())
        }
        (Expect::Close(w), Val::Fv(g)) => {
            for (i, ((a, tol), b)) in w.iter().zip(g).enumerate() {
                let b = *b as f64;
                // NaN is never within the tolerance.
                let within = (b - a).abs() <= *tol;
                if !within {
                    bad.push(format!("[{i}]: got {b:?}, want {a:?} +- {tol:e}"));
                }
            }
            (w.len(), g.len())
        }
        _ => return Err(format!("`{name}`: wrong element type: {got:?}")),
    };
    if wlen != glen {
        return Err(format!("`{name}`: {glen} elements, want {wlen}"));
    }
    if bad.is_empty() {
        return Ok(());
    }
    let n = bad.len();
    bad.truncate(8);
    Err(format!(
        "`{name}`: {n} of {wlen} elements wrong: {}",
        bad.join("; ")
    ))
}

fn kernel(id: &str) -> &'static Kernel {
    KERNELS
        .iter()
        .find(|k| k.id == id)
        .unwrap_or_else(|| panic!("no kernel `{id}`"))
}

/// Runs every launch of a kernel, and its header's suggested command (label
/// `header`), at one programCount: (label, outcome) for each.
fn run_kernel(k: &Kernel, pc: u32) -> Vec<(String, Result<(), String>)> {
    let mut outcomes = Vec::new();
    for l in (k.launches)(pc) {
        let tag = format!("{}-{}-pc{pc}", k.id.replace('/', "-"), l.label);
        let outcome =
            run_lib(k, pc, &l, &tag).and_then(|(shape, got)| compare(k, &l.args, &shape, &got));
        outcomes.push((l.label, outcome));
    }
    let commands: Vec<HeaderCommand> = header_commands(k.file)
        .into_iter()
        .filter(|c| c.entry == k.entry)
        .collect();
    assert_eq!(
        commands.len(),
        1,
        "{}: one suggested command per entry",
        k.id
    );
    let outcome =
        run_header_command(k, &commands[0], pc).map_err(|e| format!("`{}`: {e}", commands[0].text));
    outcomes.push(("header".to_string(), outcome));
    outcomes
}

/// The test of one kernel: every launch passes at every programCount, except the
/// known failures, which must still fail with their message.
fn check_kernel(id: &str) {
    let k = kernel(id);
    let mut problems = Vec::new();
    for pc in PROGRAM_COUNTS {
        for (label, outcome) in run_kernel(k, pc) {
            let known = KNOWN_FAILURES
                .iter()
                .find(|f| f.kernel == id && f.launch == label && f.program_count == pc);
            let at = format!("{id}, launch `{label}`, programCount {pc}");
            match (outcome, known) {
                (Ok(()), None) => {}
                (Err(e), Some(f)) if e.contains(f.message) => {}
                (Err(e), Some(f)) => problems.push(format!(
                    "{at}: a known failure ({}) fails differently: want `{}` in\n{e}",
                    f.why, f.message
                )),
                (Err(e), None) => problems.push(format!("{at}:\n{e}")),
                (Ok(()), Some(f)) => problems.push(format!(
                    "{at} now passes; remove it from KNOWN_FAILURES ({})",
                    f.why
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

// ---------------------------------------------------------------------------------
// The suggested command lines in the headers

#[derive(Clone, Debug)]
struct HeaderCommand {
    /// As written, on one line.
    text: String,
    /// The words after `spmdc`.
    words: Vec<String>,
    entry: String,
}

/// Splits a command line into words: spaces separate, single quotes group.
fn shell_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for c in s.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                in_word = true;
            }
            ' ' if !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    assert!(!quoted, "unbalanced quote in `{s}`");
    if in_word {
        words.push(cur);
    }
    words
}

/// The `spmdc run ...` commands of a file's header comment (continued lines joined).
fn header_commands(file: &str) -> Vec<HeaderCommand> {
    let text = std::fs::read_to_string(repo_root().join("examples").join(file)).unwrap();
    let mut commands = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        let Some(comment) = line.strip_prefix("//") else {
            break;
        };
        let t = comment.trim();
        if t.starts_with("spmdc run") {
            cur = Some(String::new());
        }
        if let Some(c) = cur.as_mut() {
            let (part, more) = match t.strip_suffix('\\') {
                Some(p) => (p.trim(), true),
                None => (t, false),
            };
            if !c.is_empty() {
                c.push(' ');
            }
            c.push_str(part);
            if !more {
                let text = cur.take().unwrap();
                let words: Vec<String> = shell_words(&text).into_iter().skip(1).collect();
                let entry = words
                    .iter()
                    .position(|w| w == "--entry")
                    .map(|i| words[i + 1].clone())
                    .unwrap_or_else(|| panic!("`{text}` has no --entry"));
                commands.push(HeaderCommand { text, words, entry });
            }
        }
    }
    commands
}

/// The value of a literal for a parameter type.
fn scalar_literal(s: &str, ty: Ty) -> Val {
    match ty {
        Ty::I | Ty::Iv => Val::I(
            s.parse()
                .unwrap_or_else(|e| panic!("int literal `{s}`: {e}")),
        ),
        Ty::F | Ty::Fv => Val::F(
            s.parse::<f64>()
                .unwrap_or_else(|e| panic!("float literal `{s}`: {e}")) as f32,
        ),
    }
}

/// A SPEC made into a value, following lang-spec/run.md; relative files are read
/// from `dir`.
fn materialize(spec: &str, ty: Ty, dir: &Path) -> Val {
    if matches!(ty, Ty::I | Ty::F) {
        return scalar_literal(spec, ty);
    }
    let floats = ty == Ty::Fv;
    let make = |v: Vec<f64>| {
        if floats {
            Val::Fv(v.into_iter().map(|x| x as f32).collect())
        } else {
            Val::Iv(v.into_iter().map(|x| x as i32).collect())
        }
    };
    if let Some(path) = spec.strip_prefix('@') {
        assert!(path.ends_with(".txt"), "only .txt files in headers: {spec}");
        let text = std::fs::read_to_string(dir.join(path)).unwrap();
        let words: Vec<f64> = text
            .lines()
            .map(|l| l.split('#').next().unwrap())
            .flat_map(|l| l.split(|c: char| c.is_whitespace() || c == ','))
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().unwrap())
            .collect();
        return make(words);
    }
    let (name, rest) = spec.split_once('(').unwrap();
    let parts: Vec<&str> = rest
        .strip_suffix(')')
        .unwrap()
        .split(',')
        .map(str::trim)
        .collect();
    let n: usize = parts[0].parse().unwrap();
    let num = |i: usize, default: f64| parts.get(i).map_or(default, |s| s.parse().unwrap());
    match name {
        "zeros" => make(vec![0.0; n]),
        "fill" => make(vec![num(1, 0.0); n]),
        "range" => {
            let (start, step) = (num(1, 0.0), num(2, 1.0));
            make((0..n).map(|i| start + i as f64 * step).collect())
        }
        "random" => {
            let mut rng = Rng(num(1, 1.0) as u64);
            if floats {
                let (lo, hi) = (num(2, 0.0) as f32, num(3, 1.0) as f32);
                Val::Fv(
                    (0..n)
                        .map(|_| {
                            let v = (lo as f64 + (hi as f64 - lo as f64) * rng.unit()) as f32;
                            if v >= hi {
                                f32::from_bits(hi.to_bits() - 1)
                            } else {
                                v
                            }
                        })
                        .collect(),
                )
            } else {
                let (lo, hi) = (num(2, 0.0) as i32, num(3, 100.0) as i32);
                Val::Iv((0..n).map(|_| rng.i32_in(lo, hi)).collect())
            }
        }
        _ => panic!("unknown SPEC `{spec}`"),
    }
}

fn parse_dims(s: &str) -> [u32; 3] {
    let mut d = [1; 3];
    for (i, p) in s.split(',').enumerate() {
        d[i] = p.trim().parse().unwrap();
    }
    d
}

/// Parses `NAME = [v, ...]` blocks of `--print` output.
fn parse_printed(out: &str, name: &str, ty: Ty) -> Option<Val> {
    let start = out.find(&format!("{name} = ["))? + name.len() + 4;
    let end = start + out[start..].find(']')?;
    let words = out[start..end]
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty());
    Some(match ty {
        Ty::Iv => Val::Iv(words.map(|w| w.parse().unwrap()).collect()),
        _ => Val::Fv(words.map(|w| w.parse().unwrap()).collect()),
    })
}

/// A board of 0s and 1s for gameoflife's header command: a glider and a blinker on an
/// otherwise random sparse board.
fn write_board(dir: &Path) {
    let mut rng = Rng(99);
    let mut cells = vec![0u8; 4096];
    for c in cells.iter_mut() {
        *c = (rng.i32_in(0, 100) < 20) as u8;
    }
    let text: String = cells
        .chunks(64)
        .map(|row| {
            let r: Vec<String> = row.iter().map(|c| c.to_string()).collect();
            r.join(" ") + "\n"
        })
        .collect();
    std::fs::write(dir.join("board.txt"), format!("# 64 x 64 board\n{text}")).unwrap();
}

/// Runs a header command with the `spmdc` binary (in a scratch directory, the example
/// given by absolute path) and checks every buffer against the reference.
fn run_header_command(k: &Kernel, cmd: &HeaderCommand, pc: u32) -> Result<(), String> {
    let dir = scratch_dir(&format!("header-{}-pc{pc}", k.id.replace('/', "-")));
    let outcome = run_header_command_in(k, cmd, pc, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

fn run_header_command_in(
    k: &Kernel,
    cmd: &HeaderCommand,
    pc: u32,
    dir: &Path,
) -> Result<(), String> {
    write_board(dir);
    let mut words = cmd.words.clone();
    let file = &mut words[1];
    *file = repo_root().join(file.as_str()).display().to_string();
    let mut args = Args::default();
    let (mut grid, mut block) = ([1, 1, 1], [pc, 1, 1]);
    let mut printed = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match words[i].as_str() {
            "--arg" => {
                let (name, spec) = words[i + 1].split_once('=').unwrap();
                let ty = k
                    .params
                    .iter()
                    .find(|(n, _)| *n == name)
                    .unwrap_or_else(|| panic!("`{name}` is not a parameter"))
                    .1;
                args.0.insert(name.to_string(), materialize(spec, ty, dir));
            }
            "--grid" => grid = parse_dims(&words[i + 1]),
            "--block" => block = parse_dims(&words[i + 1]),
            "--print" => printed.push(words[i + 1].clone()),
            _ => {}
        }
        i += 1;
    }
    // Print every buffer, so every one is checked.
    for (name, ty) in k.params {
        if matches!(ty, Ty::Iv | Ty::Fv) && !printed.iter().any(|p| p == name) {
            words.push("--print".into());
            words.push(name.to_string());
        }
    }
    words.push("--program-count".into());
    words.push(pc.to_string());
    words.push("--max-steps".into());
    words.push(MAX_STEPS.to_string());
    let out = Command::new(env!("CARGO_BIN_EXE_spmdc"))
        .args(&words)
        .current_dir(dir)
        .output()
        .expect("run spmdc");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut got = Buffers::new();
    for (name, ty) in k.params {
        if let Some(v) = parse_printed(&stdout, name, *ty).filter(|_| matches!(ty, Ty::Iv | Ty::Fv))
        {
            got.insert(name.to_string(), v);
        }
    }
    let shape = Shape {
        grid,
        block,
        program_count: pc,
    };
    compare(k, &args, &shape, &got)
}

// ---------------------------------------------------------------------------------
// The kernels

static KERNELS: &[Kernel] = &[
    Kernel {
        id: "saxpy",
        file: "saxpy.spmd",
        entry: "saxpy",
        params: &[("n", Ty::I), ("a", Ty::F), ("x", Ty::Fv), ("y", Ty::Fv)],
        launches: saxpy_launches,
        reference: saxpy_ref,
    },
    Kernel {
        id: "block_reduce",
        file: "block_reduce.spmd",
        entry: "block_reduce",
        params: &[("n", Ty::I), ("x", Ty::Fv), ("partial", Ty::Fv)],
        launches: block_reduce_launches,
        reference: block_reduce_ref,
    },
    Kernel {
        id: "buckets",
        file: "buckets.spmd",
        entry: "buckets",
        params: &[
            ("n", Ty::I),
            ("keys", Ty::Iv),
            ("vals", Ty::Fv),
            ("nbuckets", Ty::I),
            ("sums", Ty::Fv),
            ("counts", Ty::Iv),
            ("maxes", Ty::Fv),
        ],
        launches: buckets_launches,
        reference: buckets_ref,
    },
    Kernel {
        id: "coherent",
        file: "coherent.spmd",
        entry: "coherent",
        params: &[
            ("n", Ty::I),
            ("x", Ty::Fv),
            ("seeds", Ty::Iv),
            ("roots", Ty::Fv),
            ("steps", Ty::Iv),
        ],
        launches: coherent_launches,
        reference: coherent_ref,
    },
    Kernel {
        id: "gameoflife",
        file: "gameoflife.spmd",
        entry: "gameoflife",
        params: &[("nx", Ty::I), ("ny", Ty::I), ("u0", Ty::Fv), ("u1", Ty::Fv)],
        launches: gameoflife_launches,
        reference: gameoflife_ref,
    },
    Kernel {
        id: "gaussblur",
        file: "gaussblur.spmd",
        entry: "gaussblur",
        params: &[
            ("nx", Ty::I),
            ("ny", Ty::I),
            ("s0", Ty::F),
            ("s1", Ty::F),
            ("s2", Ty::F),
            ("s4", Ty::F),
            ("s5", Ty::F),
            ("s8", Ty::F),
            ("w0", Ty::Fv),
            ("w1", Ty::Fv),
        ],
        launches: gaussblur_launches,
        reference: gaussblur_ref,
    },
    Kernel {
        id: "histogram",
        file: "histogram.spmd",
        entry: "histogram",
        params: &[
            ("n", Ty::I),
            ("x", Ty::Fv),
            ("lo", Ty::F),
            ("hi", Ty::F),
            ("bins", Ty::Iv),
        ],
        launches: histogram_launches,
        reference: histogram_ref,
    },
    Kernel {
        id: "histogram/count_positive",
        file: "histogram.spmd",
        entry: "count_positive",
        params: &[("n", Ty::I), ("x", Ty::Fv), ("count", Ty::Iv)],
        launches: count_positive_launches,
        reference: count_positive_ref,
    },
    Kernel {
        id: "jacobi2d",
        file: "jacobi2d.spmd",
        entry: "jacobi2d",
        params: &[
            ("nx", Ty::I),
            ("ny", Ty::I),
            ("c0", Ty::F),
            ("c1", Ty::F),
            ("c2", Ty::F),
            ("w0", Ty::Fv),
            ("w1", Ty::Fv),
        ],
        launches: jacobi2d_launches,
        reference: jacobi2d_ref,
    },
    Kernel {
        id: "laplacian3d",
        file: "laplacian3d.spmd",
        entry: "laplacian3d",
        params: &[
            ("n", Ty::I),
            ("alpha", Ty::F),
            ("beta", Ty::F),
            ("w0", Ty::Fv),
            ("w1", Ty::Fv),
        ],
        launches: laplacian3d_launches,
        reference: laplacian3d_ref,
    },
    Kernel {
        id: "mandelbrot",
        file: "mandelbrot.spmd",
        entry: "mandelbrot",
        params: &[
            ("x0", Ty::F),
            ("y0", Ty::F),
            ("x1", Ty::F),
            ("y1", Ty::F),
            ("width", Ty::I),
            ("height", Ty::I),
            ("rowStart", Ty::I),
            ("rowEnd", Ty::I),
            ("maxIter", Ty::I),
            ("out", Ty::Iv),
        ],
        launches: mandelbrot_launches,
        reference: mandelbrot_ref,
    },
    Kernel {
        id: "matmul_tiled",
        file: "matmul_tiled.spmd",
        entry: "matmul_tiled",
        params: &[("n", Ty::I), ("a", Ty::Fv), ("b", Ty::Fv), ("c", Ty::Fv)],
        launches: matmul_launches,
        reference: matmul_ref,
    },
    Kernel {
        id: "particles/advance",
        file: "particles.spmd",
        entry: "advance",
        params: &[
            ("n", Ty::I),
            ("data", Ty::Fv),
            ("dt", Ty::F),
            ("gx", Ty::F),
            ("gy", Ty::F),
            ("floorY", Ty::F),
        ],
        launches: advance_launches,
        reference: advance_ref,
    },
    Kernel {
        id: "particles/centroid",
        file: "particles.spmd",
        entry: "centroid",
        params: &[("n", Ty::I), ("data", Ty::Fv), ("result", Ty::Fv)],
        launches: centroid_launches,
        reference: centroid_ref,
    },
    Kernel {
        id: "prefix_sum",
        file: "prefix_sum.spmd",
        entry: "prefix_sum",
        params: &[
            ("n", Ty::I),
            ("x", Ty::Fv),
            ("y", Ty::Fv),
            ("errors", Ty::Iv),
        ],
        launches: prefix_sum_launches,
        reference: prefix_sum_ref,
    },
    Kernel {
        id: "reduce_sum",
        file: "reduce_sum.spmd",
        entry: "reduce_sum",
        params: &[("n", Ty::I), ("x", Ty::Fv), ("result", Ty::Fv)],
        launches: reduce_sum_launches,
        reference: reduce_sum_ref,
    },
    Kernel {
        id: "stencil1d",
        file: "stencil1d.spmd",
        entry: "stencil1d",
        params: &[("n", Ty::I), ("src", Ty::Fv), ("dst", Ty::Fv)],
        launches: stencil1d_launches,
        reference: stencil1d_ref,
    },
    Kernel {
        id: "switch_ops",
        file: "switch_ops.spmd",
        entry: "switch_ops",
        params: &[
            ("n", Ty::I),
            ("ops", Ty::Iv),
            ("a", Ty::Fv),
            ("b", Ty::Fv),
            ("out", Ty::Fv),
        ],
        launches: switch_ops_launches,
        reference: switch_ops_ref,
    },
    Kernel {
        id: "tasks",
        file: "tasks.spmd",
        entry: "scale_chunks",
        params: &[
            ("n", Ty::I),
            ("factor", Ty::F),
            ("data", Ty::Fv),
            ("norms", Ty::Fv),
        ],
        launches: tasks_launches,
        reference: tasks_ref,
    },
    Kernel {
        id: "wave13pt",
        file: "wave13pt.spmd",
        entry: "wave13pt",
        params: &[
            ("nx", Ty::I),
            ("ny", Ty::I),
            ("nz", Ty::I),
            ("c0", Ty::F),
            ("c1", Ty::F),
            ("c2", Ty::F),
            ("w0", Ty::Fv),
            ("w1", Ty::Fv),
            ("w2", Ty::Fv),
        ],
        launches: wave13pt_launches,
        reference: wave13pt_ref,
    },
    Kernel {
        id: "tricubic",
        file: "tricubic.spmd",
        entry: "tricubic",
        params: &[
            ("nx", Ty::I),
            ("ny", Ty::I),
            ("nz", Ty::I),
            ("ta", Ty::Fv),
            ("tb", Ty::Fv),
            ("tc", Ty::Fv),
            ("u0", Ty::Fv),
            ("u1", Ty::Fv),
        ],
        launches: tricubic_launches,
        reference: tricubic_ref,
    },
    Kernel {
        id: "saxpy_gpu",
        file: "saxpy_gpu.spmd",
        entry: "saxpy_gpu",
        params: &[("n", Ty::I), ("a", Ty::F), ("x", Ty::Fv), ("y", Ty::Fv)],
        launches: saxpy_gpu_launches,
        reference: saxpy_gpu_ref,
    },
    Kernel {
        id: "matmul_rect",
        file: "matmul_rect.spmd",
        entry: "matmul_rect",
        params: &[
            ("m", Ty::I),
            ("n", Ty::I),
            ("k", Ty::I),
            ("a", Ty::Fv),
            ("b", Ty::Fv),
            ("c", Ty::Fv),
        ],
        launches: matmul_rect_launches,
        reference: matmul_rect_ref,
    },
    Kernel {
        id: "jacobi2d_gpu",
        file: "jacobi2d_gpu.spmd",
        entry: "jacobi2d_gpu",
        params: &[
            ("nx", Ty::I),
            ("ny", Ty::I),
            ("c0", Ty::F),
            ("c1", Ty::F),
            ("c2", Ty::F),
            ("w0", Ty::Fv),
            ("w1", Ty::Fv),
        ],
        launches: jacobi2d_gpu_launches,
        reference: jacobi2d_gpu_ref,
    },
    Kernel {
        id: "wave13pt_gpu",
        file: "wave13pt_gpu.spmd",
        entry: "wave13pt_gpu",
        params: &[
            ("nx", Ty::I),
            ("ny", Ty::I),
            ("nz", Ty::I),
            ("c0", Ty::F),
            ("c1", Ty::F),
            ("c2", Ty::F),
            ("w0", Ty::Fv),
            ("w1", Ty::Fv),
            ("w2", Ty::Fv),
        ],
        launches: wave13pt_gpu_launches,
        reference: wave13pt_gpu_ref,
    },
    Kernel {
        id: "mandelbrot_gpu",
        file: "mandelbrot_gpu.spmd",
        entry: "mandelbrot_gpu",
        params: &[
            ("x0", Ty::F),
            ("y0", Ty::F),
            ("x1", Ty::F),
            ("y1", Ty::F),
            ("width", Ty::I),
            ("height", Ty::I),
            ("maxIter", Ty::I),
            ("out", Ty::Iv),
        ],
        launches: mandelbrot_gpu_launches,
        reference: mandelbrot_gpu_ref,
    },
    Kernel {
        id: "row_sums",
        file: "row_sums.spmd",
        entry: "row_sums",
        params: &[
            ("nrows", Ty::I),
            ("ncols", Ty::I),
            ("m", Ty::Fv),
            ("out", Ty::Fv),
        ],
        launches: row_sums_launches,
        reference: row_sums_ref,
    },
    Kernel {
        id: "strided_copy",
        file: "strided_copy.spmd",
        entry: "strided_copy",
        params: &[
            ("n", Ty::I),
            ("stride", Ty::I),
            ("src", Ty::Fv),
            ("dst", Ty::Fv),
        ],
        launches: strided_copy_launches,
        reference: strided_copy_ref,
    },
    Kernel {
        id: "uniformity_demo/divergent_branch",
        file: "uniformity_demo.spmd",
        entry: "divergent_branch",
        params: &[("n", Ty::I), ("steps", Ty::I), ("out", Ty::Fv)],
        launches: divergent_branch_launches,
        reference: divergent_branch_ref,
    },
    Kernel {
        id: "uniformity_demo/uniform_branch",
        file: "uniformity_demo.spmd",
        entry: "uniform_branch",
        params: &[
            ("n", Ty::I),
            ("steps", Ty::I),
            ("mode", Ty::I),
            ("out", Ty::Fv),
        ],
        launches: uniform_branch_launches,
        reference: uniform_branch_ref,
    },
    Kernel {
        id: "uniformity_demo/divergent_thread",
        file: "uniformity_demo.spmd",
        entry: "divergent_thread",
        params: &[("n", Ty::I), ("out", Ty::Fv)],
        launches: divergent_thread_launches,
        reference: divergent_thread_ref,
    },
    Kernel {
        id: "uniformity_demo/uniform_thread",
        file: "uniformity_demo.spmd",
        entry: "uniform_thread",
        params: &[("n", Ty::I), ("mode", Ty::I), ("out", Ty::Fv)],
        launches: uniform_thread_launches,
        reference: uniform_thread_ref,
    },
    // The unannotated twins of seven kernels above: the same algorithm, parameters and
    // launch shapes with `int` locals, so each reuses its twin's launches and Rust
    // reference (reduce_sum's, with its rounding bound, covers the plain version's
    // different association order; the others are bit-exact).
    Kernel {
        id: "uniformity_unannotated/saxpy_plain",
        file: "uniformity_unannotated.spmd",
        entry: "saxpy_plain",
        params: &[("n", Ty::I), ("a", Ty::F), ("x", Ty::Fv), ("y", Ty::Fv)],
        launches: saxpy_launches,
        reference: saxpy_ref,
    },
    Kernel {
        id: "uniformity_unannotated/jacobi2d_plain",
        file: "uniformity_unannotated.spmd",
        entry: "jacobi2d_plain",
        params: &[
            ("nx", Ty::I),
            ("ny", Ty::I),
            ("c0", Ty::F),
            ("c1", Ty::F),
            ("c2", Ty::F),
            ("w0", Ty::Fv),
            ("w1", Ty::Fv),
        ],
        launches: jacobi2d_launches,
        reference: jacobi2d_ref,
    },
    Kernel {
        id: "uniformity_unannotated/jacobi2d_gpu_plain",
        file: "uniformity_unannotated.spmd",
        entry: "jacobi2d_gpu_plain",
        params: &[
            ("nx", Ty::I),
            ("ny", Ty::I),
            ("c0", Ty::F),
            ("c1", Ty::F),
            ("c2", Ty::F),
            ("w0", Ty::Fv),
            ("w1", Ty::Fv),
        ],
        launches: jacobi2d_gpu_launches,
        reference: jacobi2d_gpu_ref,
    },
    Kernel {
        id: "uniformity_unannotated/wave13pt_plain",
        file: "uniformity_unannotated.spmd",
        entry: "wave13pt_plain",
        params: &[
            ("nx", Ty::I),
            ("ny", Ty::I),
            ("nz", Ty::I),
            ("c0", Ty::F),
            ("c1", Ty::F),
            ("c2", Ty::F),
            ("w0", Ty::Fv),
            ("w1", Ty::Fv),
            ("w2", Ty::Fv),
        ],
        launches: wave13pt_launches,
        reference: wave13pt_ref,
    },
    Kernel {
        id: "uniformity_unannotated/matmul_tiled_plain",
        file: "uniformity_unannotated.spmd",
        entry: "matmul_tiled_plain",
        params: &[("n", Ty::I), ("a", Ty::Fv), ("b", Ty::Fv), ("c", Ty::Fv)],
        launches: matmul_launches,
        reference: matmul_ref,
    },
    Kernel {
        id: "uniformity_unannotated/stencil1d_plain",
        file: "uniformity_unannotated.spmd",
        entry: "stencil1d_plain",
        params: &[("n", Ty::I), ("src", Ty::Fv), ("dst", Ty::Fv)],
        launches: stencil1d_launches,
        reference: stencil1d_ref,
    },
    Kernel {
        id: "uniformity_unannotated/reduce_sum_plain",
        file: "uniformity_unannotated.spmd",
        entry: "reduce_sum_plain",
        params: &[("n", Ty::I), ("x", Ty::Fv), ("result", Ty::Fv)],
        launches: reduce_sum_launches,
        reference: reduce_sum_ref,
    },
];

use Val::{F, I};

// saxpy: ISPC-style (one gang). n = 1000 is not a multiple of the gang; n = 37 leaves
// the tail of y (past n) to check.

fn saxpy_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(1);
    vec![
        launch(
            "n1000",
            None,
            None,
            Args::new(vec![
                ("n", I(1000)),
                ("a", F(r.f32_in(-3.0, 3.0))),
                ("x", r.fvec(1000, -10.0, 10.0)),
                ("y", r.fvec(1000, -10.0, 10.0)),
            ]),
        ),
        launch(
            "n37",
            None,
            None,
            Args::new(vec![
                ("n", I(37)),
                ("a", F(0.75)),
                ("x", r.fvec(40, -1.0, 1.0)),
                ("y", r.fvec(40, -1.0, 1.0)),
            ]),
        ),
    ]
}

fn saxpy_ref(a: &Args, _: &Shape) -> Outputs {
    let (n, s, x, mut y) = (a.i("n") as usize, a.f("a"), a.fv("x"), a.fv("y"));
    for i in 0..n {
        y[i] += s * x[i];
    }
    vec![("y", Expect::Exact(y))]
}

// block_reduce: GPU-style, several blocks of 64 to 256 threads; the reference does the
// same tree, so the partial sums are bit-exact.

fn block_reduce_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(2);
    let mut l = |label: &str, n: usize, grid: u32, block: u32| {
        launch(
            label,
            Some([grid, 1, 1]),
            Some([block, 1, 1]),
            Args::new(vec![
                ("n", I(n as i32)),
                ("x", r.fvec(n, -1.0, 1.0)),
                ("partial", fill_f(grid as usize, SENTINEL)),
            ]),
        )
    };
    vec![
        l("g4b128", 1000, 4, 128),
        l("g8b64", 1000, 8, 64),
        l("g3b256", 1500, 3, 256),
    ]
}

fn block_reduce_ref(a: &Args, s: &Shape) -> Outputs {
    let (n, x, mut partial) = (a.i("n") as usize, a.fv("x"), a.fv("partial"));
    let b = s.block[0] as usize;
    for (blk, out) in partial.iter_mut().enumerate().take(s.grid[0] as usize) {
        let mut buf: Vec<f32> = (0..b)
            .map(|t| {
                let i = blk * 2 * b + t;
                let mut v = 0.0f32;
                if i < n {
                    v = x[i];
                }
                if i + b < n {
                    v += x[i + b];
                }
                v
            })
            .collect();
        let mut step = b / 2;
        while step > 0 {
            for t in 0..step {
                buf[t] += buf[t + step];
            }
            step >>= 1;
        }
        *out = buf[0];
    }
    vec![("partial", Expect::Exact(partial))]
}

// buckets: ISPC-style. The sums are reduce_add over the lanes holding a key, whose
// association order is the implementation's: with small-integer values every partial
// sum is exact, so the first launch compares bit for bit; the second uses fractional
// values and the rounding bound.

fn buckets_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(3);
    let mut l = |label: &str, n: usize, nb: usize, integral: bool| {
        let vals = if integral {
            r.int_floats(n, -50, 50)
        } else {
            r.fvec(n, -1.0, 1.0)
        };
        let sums = if integral {
            r.int_floats(nb, -5, 5)
        } else {
            r.fvec(nb, -1.0, 1.0)
        };
        launch(
            label,
            None,
            None,
            Args::new(vec![
                ("n", I(n as i32)),
                // Keys outside [0, nb) exercise the clamp.
                ("keys", r.ivec(n, -2, nb as i32 + 3)),
                ("vals", vals),
                ("nbuckets", I(nb as i32)),
                ("sums", sums),
                ("counts", r.ivec(nb, 0, 10)),
                ("maxes", fill_f(nb, -1e30)),
            ]),
        )
    };
    vec![l("integral", 300, 5, true), l("fractional", 250, 7, false)]
}

fn buckets_ref(a: &Args, _: &Shape) -> Outputs {
    let (n, keys, vals, nb) = (
        a.i("n") as usize,
        a.iv("keys"),
        a.fv("vals"),
        a.i("nbuckets"),
    );
    let (mut sums, mut counts, mut maxes) = (a.fv("sums"), a.iv("counts"), a.fv("maxes"));
    let mut exact: Vec<f64> = sums.iter().map(|&v| v as f64).collect();
    let mut abs: Vec<f64> = sums.iter().map(|&v| (v as f64).abs()).collect();
    let mut terms = vec![1usize; nb as usize];
    for i in 0..n {
        let k = keys[i].clamp(0, nb - 1) as usize;
        sums[k] += vals[i];
        exact[k] += vals[i] as f64;
        abs[k] += (vals[i] as f64).abs();
        terms[k] += 1;
        counts[k] += 1;
        if vals[i] > maxes[k] {
            maxes[k] = vals[i];
        }
    }
    let integral = vals.iter().all(|v| v.fract() == 0.0);
    let sums = if integral {
        Expect::Exact(sums)
    } else {
        Expect::Close(
            (0..nb as usize)
                .map(|k| (exact[k], sum_tolerance(terms[k], abs[k])))
                .collect(),
        )
    };
    vec![
        ("sums", sums),
        ("counts", Expect::Ints(counts)),
        ("maxes", Expect::Exact(maxes)),
    ]
}

// coherent: ISPC-style; Newton's iteration in the same f32 operations.

fn coherent_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(4);
    let n = 200;
    let mut x: Vec<f32> = (0..n)
        .map(|i| match i % 5 {
            0 => r.f32_in(-5.0, 0.5),
            1 => r.f32_in(0.0, 1e-3),
            _ => r.f32_in(0.0, 1e6),
        })
        .collect();
    x[7] = 0.0;
    let mut seeds: Vec<i32> = (0..n).map(|_| r.i32_in(1, 5000)).collect();
    seeds[3] = 0;
    seeds[4] = -7;
    seeds[5] = 1;
    vec![launch(
        "n200",
        None,
        None,
        Args::new(vec![
            ("n", I(n as i32 - 3)),
            ("x", Val::Fv(x)),
            ("seeds", Val::Iv(seeds)),
            ("roots", fill_f(n, SENTINEL)),
            ("steps", fill_i(n, -1)),
        ]),
    )]
}

fn coherent_ref(a: &Args, _: &Shape) -> Outputs {
    let (n, x, seeds) = (a.i("n") as usize, a.fv("x"), a.iv("seeds"));
    let (mut roots, mut steps) = (a.fv("roots"), a.iv("steps"));
    let newton = |v: f32| {
        let mut g = if v > 1.0 { v } else { 1.0 };
        loop {
            let prev = g;
            g = 0.5 * (g + v / g);
            if (g - prev).abs() <= 1e-6 * g {
                return g;
            }
        }
    };
    for i in 0..n {
        roots[i] = if x[i] > 0.0 { newton(x[i]) } else { 0.0 };
        let mut c = seeds[i];
        let mut s = 0;
        while c > 1 {
            c = if c % 2 == 0 { c / 2 } else { 3 * c + 1 };
            s += 1;
        }
        let mut k = seeds[i];
        while k > 0 {
            s += k % 10;
            k /= 10;
        }
        steps[i] = s;
    }
    vec![
        ("roots", Expect::Exact(roots)),
        ("steps", Expect::Ints(steps)),
    ]
}

// gameoflife: GPU-style, 16 x 16 blocks (the kernel requires exactly TILE x TILE); the
// second board is not a multiple of the tile, so edge blocks overhang it.

fn board(r: &mut Rng, nx: usize, ny: usize) -> Val {
    Val::Fv(
        (0..nx * ny)
            .map(|_| (r.i32_in(0, 100) < 35) as i32 as f32)
            .collect(),
    )
}

fn gameoflife_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(5);
    let mut l = |label: &str, nx: usize, ny: usize, grid: [u32; 3]| {
        launch(
            label,
            Some(grid),
            Some([16, 16, 1]),
            Args::new(vec![
                ("nx", I(nx as i32)),
                ("ny", I(ny as i32)),
                ("u0", board(&mut r, nx, ny)),
                ("u1", fill_f(nx * ny, SENTINEL)),
            ]),
        )
    };
    vec![l("64x64", 64, 64, [4, 4, 1]), l("50x40", 50, 40, [4, 3, 1])]
}

fn gameoflife_ref(a: &Args, _: &Shape) -> Outputs {
    let (nx, ny, u0, mut u1) = (
        a.i("nx") as usize,
        a.i("ny") as usize,
        a.fv("u0"),
        a.fv("u1"),
    );
    let u = |i: usize, j: usize| u0[i + nx * j];
    for j in 1..ny - 1 {
        for i in 1..nx - 1 {
            let l = u(i - 1, j - 1)
                + u(i, j - 1)
                + u(i + 1, j - 1)
                + u(i - 1, j)
                + u(i + 1, j)
                + u(i - 1, j + 1)
                + u(i, j + 1)
                + u(i + 1, j + 1);
            let c = u(i, j);
            u1[i + nx * j] = 1.0f32 / (1.0f32 + (c + l - 3.0) * (l - 3.0) * 1e20f32);
        }
    }
    vec![("u1", Expect::Exact(u1))]
}

// gaussblur: ISPC-style foreach_tiled; the reference accumulates the 25 products in
// the kernel's order (dj, then di), bit-exact.

fn gaussblur_args(r: &mut Rng, nx: usize, ny: usize) -> Args {
    Args::new(vec![
        ("nx", I(nx as i32)),
        ("ny", I(ny as i32)),
        ("s0", F(12.0)),
        ("s1", F(6.0)),
        ("s2", F(4.0)),
        ("s4", F(2.0)),
        ("s5", F(1.0)),
        ("s8", F(0.5)),
        ("w0", r.fvec(nx * ny, 0.0, 10.0)),
        ("w1", fill_f(nx * ny, SENTINEL)),
    ])
}

fn gaussblur_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(6);
    let mut odd = gaussblur_args(&mut r, 37, 29);
    for (k, v) in [
        ("s0", 1.5f32),
        ("s1", 0.3),
        ("s2", 0.7),
        ("s4", 0.1),
        ("s5", 0.9),
        ("s8", 2.5),
    ] {
        odd.0.insert(k.into(), F(v));
    }
    vec![
        launch("64x64", None, None, gaussblur_args(&mut r, 64, 64)),
        launch("37x29", None, None, odd),
    ]
}

fn gaussblur_ref(a: &Args, _: &Shape) -> Outputs {
    let (nx, ny) = (a.i("nx") as i64, a.i("ny") as i64);
    let (s0, s1, s2, s4, s5, s8) = (
        a.f("s0"),
        a.f("s1"),
        a.f("s2"),
        a.f("s4"),
        a.f("s5"),
        a.f("s8"),
    );
    let (w0, mut w1) = (a.fv("w0"), a.fv("w1"));
    let f = 1.0f32 / (s0 + 4.0 * (s1 + s2 + s4 + s8) + 8.0 * s5);
    let mut w = [[0.0f32; 5]; 5];
    for dj in -2i64..=2 {
        for di in -2i64..=2 {
            let (ai, aj) = (di.abs(), dj.abs());
            let s = match (ai, aj) {
                _ if ai + aj == 0 => s0,
                _ if ai + aj == 1 => s1,
                (1, 1) => s2,
                _ if ai + aj == 2 => s4,
                _ if ai + aj == 3 => s5,
                _ => s8,
            };
            w[(dj + 2) as usize][(di + 2) as usize] = f * s;
        }
    }
    for j in 2..ny - 2 {
        for i in 2..nx - 2 {
            let mut acc = 0.0f32;
            for dj in -2i64..=2 {
                for di in -2i64..=2 {
                    acc += w[(dj + 2) as usize][(di + 2) as usize]
                        * w0[((i + di) + nx * (j + dj)) as usize];
                }
            }
            w1[(i + nx * j) as usize] = acc;
        }
    }
    vec![("w1", Expect::Exact(w1))]
}

// histogram: GPU-style, blocks of 64 to 128 threads, and a block of 80 (not a multiple
// of the gang at programCount 32). Values reach outside [lo, hi) to exercise the clamp;
// the bins start non-zero, since the kernel adds to them.

fn histogram_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(7);
    let mut l = |label: &str, grid: u32, block: u32| {
        launch(
            label,
            Some([grid, 1, 1]),
            Some([block, 1, 1]),
            Args::new(vec![
                ("n", I(1000)),
                ("x", r.fvec(1000, -50.0, 300.0)),
                ("lo", F(-3.5)),
                ("hi", F(250.0)),
                ("bins", r.ivec(64, 0, 5)),
            ]),
        )
    };
    vec![
        l("g8b128", 8, 128),
        l("g16b64", 16, 64),
        l("g13b80", 13, 80),
    ]
}

fn histogram_ref(a: &Args, _: &Shape) -> Outputs {
    let (n, x, lo, hi, mut bins) = (
        a.i("n") as usize,
        a.fv("x"),
        a.f("lo"),
        a.f("hi"),
        a.iv("bins"),
    );
    let scale = 64.0f32 / (hi - lo);
    for &v in &x[..n] {
        let b = ((v - lo) * scale).floor() as i32;
        bins[b.clamp(0, 63) as usize] += 1;
    }
    vec![("bins", Expect::Ints(bins))]
}

fn count_positive_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(8);
    let mut x = match r.fvec(1003, -1.0, 1.0) {
        Val::Fv(v) => v,
        _ => unreachable!(),
    };
    for i in (0..1003).step_by(17) {
        x[i] = 0.0;
    }
    vec![launch(
        "n1000",
        None,
        None,
        Args::new(vec![
            ("n", I(1000)),
            ("x", Val::Fv(x)),
            ("count", Val::Iv(vec![5, 77])),
        ]),
    )]
}

fn count_positive_ref(a: &Args, _: &Shape) -> Outputs {
    let (n, x, mut count) = (a.i("n") as usize, a.fv("x"), a.iv("count"));
    count[0] += x[..n].iter().filter(|&&v| v > 0.0).count() as i32;
    vec![("count", Expect::Ints(count))]
}

// jacobi2d: ISPC-style 2-D foreach; bit-exact; the border must stay untouched.

fn jacobi2d_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(9);
    let mut l = |label: &str, nx: usize, ny: usize| {
        launch(
            label,
            None,
            None,
            Args::new(vec![
                ("nx", I(nx as i32)),
                ("ny", I(ny as i32)),
                ("c0", F(0.5)),
                ("c1", F(0.1)),
                ("c2", F(0.025)),
                ("w0", r.fvec(nx * ny, -1.0, 1.0)),
                ("w1", fill_f(nx * ny, SENTINEL)),
            ]),
        )
    };
    vec![l("64x32", 64, 32), l("37x23", 37, 23)]
}

fn jacobi2d_ref(a: &Args, _: &Shape) -> Outputs {
    let (nx, ny) = (a.i("nx") as usize, a.i("ny") as usize);
    let (c0, c1, c2) = (a.f("c0"), a.f("c1"), a.f("c2"));
    let (w0, mut w1) = (a.fv("w0"), a.fv("w1"));
    for j in 1..ny - 1 {
        for i in 1..nx - 1 {
            let c = i + nx * j;
            let edges = w0[c - 1] + w0[c - nx] + w0[c + 1] + w0[c + nx];
            let corners = w0[c - nx - 1] + w0[c + nx - 1] + w0[c - nx + 1] + w0[c + nx + 1];
            w1[c] = c0 * w0[c] + c1 * edges + c2 * corners;
        }
    }
    vec![("w1", Expect::Exact(w1))]
}

// laplacian3d: GPU-style 3-D grid; blocks of 32 x 4 (a warp per row), 16 x 4 (the grid
// overhangs the cube in x and y) and 8 x 8 (a gang spans several rows).

fn laplacian3d_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(10);
    let mut l = |label: &str, n: usize, grid: [u32; 3], block: [u32; 3]| {
        launch(
            label,
            Some(grid),
            Some(block),
            Args::new(vec![
                ("n", I(n as i32)),
                ("alpha", F(-6.0)),
                ("beta", F(1.0)),
                ("w0", r.fvec(n * n * n, -1.0, 1.0)),
                ("w1", fill_f(n * n * n, SENTINEL)),
            ]),
        )
    };
    vec![
        l("n16-b32x4", 16, [1, 4, 16], [32, 4, 1]),
        l("n20-b16x4", 20, [2, 5, 20], [16, 4, 1]),
        l("n12-b8x8", 12, [2, 2, 12], [8, 8, 1]),
    ]
}

fn laplacian3d_ref(a: &Args, s: &Shape) -> Outputs {
    let n = a.i("n") as usize;
    let (alpha, beta, w0, mut w1) = (a.f("alpha"), a.f("beta"), a.fv("w0"), a.fv("w1"));
    let (ni, nj, nk) = (
        (s.grid[0] * s.block[0]) as usize,
        (s.grid[1] * s.block[1]) as usize,
        s.grid[2] as usize,
    );
    for k in 1..(n - 1).min(nk) {
        for j in 1..(n - 1).min(nj) {
            for i in 1..(n - 1).min(ni) {
                let c = i + n * (j + n * k);
                w1[c] = alpha * w0[c]
                    + beta
                        * (w0[c - 1]
                            + w0[c + 1]
                            + w0[c - n]
                            + w0[c + n]
                            + w0[c - n * n]
                            + w0[c + n * n]);
            }
        }
    }
    vec![("w1", Expect::Exact(w1))]
}

// mandelbrot: ISPC-style, rows over the lanes (the header's command runs the full
// 64 x 48 image at 256 iterations). The band launches skip rows with the varying
// `continue`; in `8x37-band5-30` a whole gang of rows lies past the band, so every
// active lane continues and the column loop must stop at once (it once spun forever).

fn mandelbrot_args(w: usize, h: usize, rows: (i32, i32), max_iter: i32) -> Args {
    Args::new(vec![
        ("x0", F(-2.0)),
        ("y0", F(-1.0)),
        ("x1", F(1.0)),
        ("y1", F(1.0)),
        ("width", I(w as i32)),
        ("height", I(h as i32)),
        ("rowStart", I(rows.0)),
        ("rowEnd", I(rows.1)),
        ("maxIter", I(max_iter)),
        ("out", fill_i(w * h, -1)),
    ])
}

fn mandelbrot_launches(_pc: u32) -> Vec<Launch> {
    vec![
        launch("32x24", None, None, mandelbrot_args(32, 24, (0, 24), 64)),
        launch(
            "24x48-band3-45",
            None,
            None,
            mandelbrot_args(24, 48, (3, 45), 50),
        ),
        Launch {
            // Needs about 200 thousand steps; spins without the fix of the bug.
            max_steps: Some(2_000_000),
            ..launch(
                "8x37-band5-30",
                None,
                None,
                mandelbrot_args(8, 37, (5, 30), 30),
            )
        },
    ]
}

fn mandel(c_re: f32, c_im: f32, count: i32) -> i32 {
    let (mut z_re, mut z_im) = (c_re, c_im);
    for i in 0..count {
        if z_re * z_re + z_im * z_im > 4.0 {
            return i;
        }
        let new_re = z_re * z_re - z_im * z_im;
        let new_im = 2.0 * z_re * z_im;
        z_re = c_re + new_re;
        z_im = c_im + new_im;
    }
    count
}

fn mandelbrot_ref(a: &Args, _: &Shape) -> Outputs {
    let (x0, y0, x1, y1) = (a.f("x0"), a.f("y0"), a.f("x1"), a.f("y1"));
    let (width, height) = (a.i("width"), a.i("height"));
    let (row_start, row_end, max_iter) = (a.i("rowStart"), a.i("rowEnd"), a.i("maxIter"));
    let mut out = a.iv("out");
    let dx = (x1 - x0) / width as f32;
    let dy = (y1 - y0) / height as f32;
    for j in 0..height {
        if j < row_start || j >= row_end {
            continue;
        }
        for i in 0..width {
            let x = x0 + i as f32 * dx;
            let y = y0 + j as f32 * dy;
            let mut n = mandel(x, y, max_iter);
            if n >= 4 {
                for p in 1..=3 {
                    let m = mandel(x + p as f32 * 0.25 * dx, y, max_iter);
                    if m < n {
                        n = (n + m) / 2;
                        break;
                    }
                }
            }
            out[(j * width + i) as usize] = n;
        }
    }
    vec![("out", Expect::Ints(out))]
}

// matmul_tiled: GPU-style 16 x 16 blocks. The kernel adds the TILE products of each tile
// in k order, and out-of-range products are 0 * 0, so the reference (the same sum, with
// +0 for the padding) is bit-exact.

fn matmul_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(11);
    let mut l = |label: &str, n: usize, g: u32| {
        launch(
            label,
            Some([g, g, 1]),
            Some([16, 16, 1]),
            Args::new(vec![
                ("n", I(n as i32)),
                ("a", r.fvec(n * n, -1.0, 1.0)),
                ("b", r.fvec(n * n, -1.0, 1.0)),
                ("c", fill_f(n * n, SENTINEL)),
            ]),
        )
    };
    vec![l("n40", 40, 3), l("n16", 16, 1), l("n33", 33, 3)]
}

fn matmul_ref(a: &Args, _: &Shape) -> Outputs {
    let (n, ma, mb, mut mc) = (a.i("n") as usize, a.fv("a"), a.fv("b"), a.fv("c"));
    let tiles = n.div_ceil(16);
    for row in 0..n {
        for col in 0..n {
            let mut acc = 0.0f32;
            for kk in 0..tiles * 16 {
                acc += if kk < n {
                    ma[row * n + kk] * mb[kk * n + col]
                } else {
                    0.0
                };
            }
            mc[row * n + col] = acc;
        }
    }
    vec![("c", Expect::Exact(mc))]
}

// particles: ISPC-style; advance is element-wise (bit-exact), centroid a sequential
// uniform sum (bit-exact). The data buffers are longer than 4n, to check the tail.

fn advance_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(12);
    let n = 100;
    let data: Vec<f32> = (0..4 * n + 4)
        .map(|i| match i % 4 {
            0 => r.f32_in(-10.0, 10.0),
            1 => r.f32_in(-1.0, 10.0),
            _ => r.f32_in(-5.0, 5.0),
        })
        .collect();
    vec![launch(
        "n100",
        None,
        None,
        Args::new(vec![
            ("n", I(n)),
            ("data", Val::Fv(data)),
            ("dt", F(0.1)),
            ("gx", F(0.3)),
            ("gy", F(-9.8)),
            ("floorY", F(0.5)),
        ]),
    )]
}

fn advance_ref(a: &Args, _: &Shape) -> Outputs {
    let (n, mut d) = (a.i("n") as usize, a.fv("data"));
    let (dt, gx, gy, floor_y) = (a.f("dt"), a.f("gx"), a.f("gy"), a.f("floorY"));
    for p in d.chunks_mut(4).take(n) {
        p[2] += gx * dt;
        p[3] += gy * dt;
        p[0] += p[2] * dt;
        p[1] += p[3] * dt;
        if p[1] < floor_y {
            p[1] = floor_y;
            p[3] *= -0.5;
        }
    }
    vec![("data", Expect::Exact(d))]
}

fn centroid_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(13);
    let mut l = |label: &str, n: usize| {
        launch(
            label,
            None,
            None,
            Args::new(vec![
                ("n", I(n as i32)),
                ("data", r.fvec(4 * n + 3, -10.0, 10.0)),
                ("result", fill_f(3, SENTINEL)),
            ]),
        )
    };
    vec![l("n100", 100), l("n1", 1), l("n0", 0)]
}

fn centroid_ref(a: &Args, _: &Shape) -> Outputs {
    let (n, d, mut result) = (a.i("n") as usize, a.fv("data"), a.fv("result"));
    let (mut sx, mut sy) = (0.0f32, 0.0f32);
    for p in d.chunks(4).take(n) {
        sx += p[0];
        sy += p[1];
    }
    if n > 0 {
        result[0] = sx / n as f32;
        result[1] = sy / n as f32;
    }
    vec![("result", Expect::Exact(result))]
}

// prefix_sum: ISPC-style. The reference runs the same Hillis-Steele steps over a gang
// of the launch's programCount (masked-off lanes holding 0), so y is bit-exact; errors
// is the kernel's own check against exclusive_scan_add, which must find nothing.

fn prefix_sum_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(14);
    let mut l = |label: &str, n: usize| {
        launch(
            label,
            None,
            None,
            Args::new(vec![
                ("n", I(n as i32)),
                ("x", r.fvec(n + 2, -1.0, 1.0)),
                ("y", fill_f(n + 2, SENTINEL)),
                ("errors", Val::Iv(vec![0, -1])),
            ]),
        )
    };
    vec![l("n100", 100), l("n64", 64), l("n5", 5)]
}

fn prefix_sum_ref(a: &Args, s: &Shape) -> Outputs {
    let (n, x, mut y, mut errors) = (a.i("n") as usize, a.fv("x"), a.fv("y"), a.iv("errors"));
    let pc = s.program_count as usize;
    let mut carry = 0.0f32;
    for base in (0..n).step_by(pc) {
        let mut t: Vec<f32> = (0..pc)
            .map(|l| if base + l < n { x[base + l] } else { 0.0 })
            .collect();
        let mut step = 1;
        while step < pc {
            t = (0..pc)
                .map(|l| t[l] + if l >= step { t[l - step] } else { 0.0 })
                .collect();
            step *= 2;
        }
        for l in 0..pc.min(n - base) {
            y[base + l] = carry + t[l];
        }
        carry = y[(base + pc).min(n) - 1];
    }
    errors[0] = 0;
    vec![("y", Expect::Exact(y)), ("errors", Expect::Ints(errors))]
}

// reduce_sum: ISPC-style. min and max are exact; the sum is a reduce_add of per-lane
// partial sums, in the implementation's order: exact for integer values (range), else
// within the rounding bound.

fn reduce_sum_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(15);
    let l = |label: &str, n: usize, x: Val| {
        launch(
            label,
            None,
            None,
            Args::new(vec![
                ("n", I(n as i32)),
                ("x", x),
                ("result", fill_f(4, SENTINEL)),
            ]),
        )
    };
    vec![
        l("range1000", 1000, range_f(1000)),
        l("random1000", 1000, r.fvec(1000, -100.0, 100.0)),
        l("random7", 7, r.fvec(9, -1.0, 1.0)),
    ]
}

fn reduce_sum_ref(a: &Args, _: &Shape) -> Outputs {
    let (n, x, result) = (a.i("n") as usize, a.fv("x"), a.fv("result"));
    let x = &x[..n];
    let sum: f64 = x.iter().map(|&v| v as f64).sum();
    let abs: f64 = x.iter().map(|&v| (v as f64).abs()).sum();
    let lo = x.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let integral = x.iter().all(|v| v.fract() == 0.0) && abs < (1 << 24) as f64;
    let tol = if integral { 0.0 } else { sum_tolerance(n, abs) };
    let exact = |v: f32| (v as f64, 0.0);
    vec![(
        "result",
        Expect::Close(
            [(sum, tol), exact(lo), exact(hi)]
                .into_iter()
                .chain(result[3..].iter().map(|&v| exact(v)))
                .collect(),
        ),
    )]
}

// stencil1d: GPU-style; blocks of 64, 128 and 256 threads, and of 100 (not a multiple
// of the gang). The five products are added in k order, bit-exact.

fn stencil1d_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(16);
    let mut l = |label: &str, grid: u32, block: u32| {
        launch(
            label,
            Some([grid, 1, 1]),
            Some([block, 1, 1]),
            Args::new(vec![
                ("n", I(1000)),
                ("src", r.fvec(1000, -1.0, 1.0)),
                ("dst", fill_f(1000, SENTINEL)),
            ]),
        )
    };
    vec![
        l("g4b256", 4, 256),
        l("g8b128", 8, 128),
        l("g16b64", 16, 64),
        l("g10b100", 10, 100),
    ]
}

fn stencil1d_ref(a: &Args, _: &Shape) -> Outputs {
    let (n, src, mut dst) = (a.i("n") as i64, a.fv("src"), a.fv("dst"));
    let weights = [0.1f32, 0.2, 0.4, 0.2, 0.1];
    let at = |g: i64| {
        if g >= 0 && g < n {
            src[g as usize]
        } else {
            0.0
        }
    };
    for g in 0..n {
        let mut acc = 0.0f32;
        for k in -2i64..=2 {
            acc += weights[(k + 2) as usize] * at(g + k);
        }
        dst[g as usize] = acc;
    }
    vec![("dst", Expect::Exact(dst))]
}

// switch_ops: ISPC-style; every opcode, unknown ones, and division by zero.

fn switch_ops_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(17);
    let n = 200;
    let a: Vec<f32> = (0..n)
        .map(|_| r.f32_in(0.5, 10.0) * if r.next() & 1 == 0 { -1.0 } else { 1.0 })
        .collect();
    let b: Vec<f32> = (0..n)
        .map(|i| {
            if i % 5 == 3 {
                0.0
            } else {
                r.f32_in(-10.0, 10.0)
            }
        })
        .collect();
    vec![launch(
        "n200",
        None,
        None,
        Args::new(vec![
            ("n", I(n as i32 - 1)),
            ("ops", r.ivec(n, -3, 15)),
            ("a", Val::Fv(a)),
            ("b", Val::Fv(b)),
            ("out", fill_f(n, SENTINEL)),
        ]),
    )]
}

fn switch_ops_ref(args: &Args, _: &Shape) -> Outputs {
    let n = args.i("n") as usize;
    let (ops, a, b, mut out) = (args.iv("ops"), args.fv("a"), args.fv("b"), args.fv("out"));
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        out[i] = match ops[i] {
            0 => x + y,
            1 => x - y,
            2 => x * y,
            3 if y == 0.0 => 0.0,
            3 => x / y,
            4 => {
                if x < y {
                    x
                } else {
                    y
                }
            }
            5 => {
                if x > y {
                    x
                } else {
                    y
                }
            }
            10 => -x,
            11 => x * y + 0.5,
            _ => x,
        };
    }
    vec![("out", Expect::Exact(out))]
}

// tasks: ISPC-style tasks (blocks of one gang), 8, 7 and 3 of them; the data are
// bit-exact, the norms reduce_add sums within the rounding bound.

fn tasks_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(18);
    let mut l = |label: &str, n: usize, tasks: u32| {
        launch(
            label,
            Some([tasks, 1, 1]),
            None,
            Args::new(vec![
                ("n", I(n as i32)),
                ("factor", F(0.37)),
                ("data", r.fvec(n + 3, -4.0, 4.0)),
                ("norms", fill_f(tasks as usize + 1, SENTINEL)),
            ]),
        )
    };
    vec![l("t8", 1000, 8), l("t7", 1000, 7), l("t3", 10, 3)]
}

fn tasks_ref(a: &Args, s: &Shape) -> Outputs {
    let (n, factor, mut data, norms) = (a.i("n"), a.f("factor"), a.fv("data"), a.fv("norms"));
    let tasks = (s.grid[0] * s.grid[1] * s.grid[2]) as i32;
    let start = |t: i32| (t * ((n + tasks - 1) / tasks)).min(n) as usize;
    let mut want: Vec<(f64, f64)> = norms.iter().map(|&v| (v as f64, 0.0)).collect();
    for t in 0..tasks {
        let (mut sum, mut abs, mut terms) = (0.0f64, 0.0f64, 0);
        for v in &mut data[start(t)..start(t + 1)] {
            *v *= factor;
            let sq = *v * *v;
            sum += sq as f64;
            abs += sq as f64;
            terms += 1;
        }
        want[t as usize] = (sum, sum_tolerance(terms, abs));
    }
    vec![
        ("data", Expect::Exact(data)),
        ("norms", Expect::Close(want)),
    ]
}

// wave13pt: ISPC-style 3-D foreach; bit-exact.

fn wave13pt_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(19);
    let mut l = |label: &str, nx: usize, ny: usize, nz: usize| {
        let len = nx * ny * nz;
        launch(
            label,
            None,
            None,
            Args::new(vec![
                ("nx", I(nx as i32)),
                ("ny", I(ny as i32)),
                ("nz", I(nz as i32)),
                ("c0", F(1.5)),
                ("c1", F(0.1)),
                ("c2", F(-0.05)),
                ("w0", r.fvec(len, -1.0, 1.0)),
                ("w1", r.fvec(len, -1.0, 1.0)),
                ("w2", fill_f(len, SENTINEL)),
            ]),
        )
    };
    vec![l("16^3", 16, 16, 16), l("13x11x9", 13, 11, 9)]
}

fn wave13pt_ref(a: &Args, _: &Shape) -> Outputs {
    let (nx, ny, nz) = (a.i("nx") as usize, a.i("ny") as usize, a.i("nz") as usize);
    let (c0, c1, c2) = (a.f("c0"), a.f("c1"), a.f("c2"));
    let (w0, w1, mut w2) = (a.fv("w0"), a.fv("w1"), a.fv("w2"));
    let (sy, sz) = (nx, nx * ny);
    for k in 2..nz - 2 {
        for j in 2..ny - 2 {
            for i in 2..nx - 2 {
                let c = i + nx * (j + ny * k);
                let near =
                    w1[c - 1] + w1[c + 1] + w1[c - sy] + w1[c + sy] + w1[c - sz] + w1[c + sz];
                let far = w1[c - 2]
                    + w1[c + 2]
                    + w1[c - 2 * sy]
                    + w1[c + 2 * sy]
                    + w1[c - 2 * sz]
                    + w1[c + 2 * sz];
                w2[c] = c0 * w1[c] - w0[c] + c1 * near + c2 * far;
            }
        }
    }
    vec![("w2", Expect::Exact(w2))]
}

// tricubic: the coordinates in [0, 1) as the benchmark's, the field in [-1, 1].

fn tricubic_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(27);
    let mut l = |label: &str, nx: usize, ny: usize, nz: usize| {
        let len = nx * ny * nz;
        launch(
            label,
            None,
            None,
            Args::new(vec![
                ("nx", I(nx as i32)),
                ("ny", I(ny as i32)),
                ("nz", I(nz as i32)),
                ("ta", r.fvec(len, 0.0, 1.0)),
                ("tb", r.fvec(len, 0.0, 1.0)),
                ("tc", r.fvec(len, 0.0, 1.0)),
                ("u0", r.fvec(len, -1.0, 1.0)),
                ("u1", fill_f(len, SENTINEL)),
            ]),
        )
    };
    vec![l("16^3", 16, 16, 16), l("13x11x9", 13, 11, 9)]
}

/// The Lagrange weights of offsets -1, 0, +1, +2 at `x`, in the kernel's order of
/// operations.
fn tricubic_weights(x: f32) -> [f32; 4] {
    [
        x * (x + 1.0) * (x + 2.0) / 6.0,
        -0.5 * (x - 1.0) * (x + 1.0) * (x + 2.0),
        0.5 * (x - 1.0) * x * (x + 2.0),
        -(x - 1.0) * x * (x + 1.0) / 6.0,
    ]
}

fn tricubic_ref(a: &Args, _: &Shape) -> Outputs {
    let (nx, ny, nz) = (a.i("nx") as usize, a.i("ny") as usize, a.i("nz") as usize);
    let (ta, tb, tc, u0, mut u1) = (a.fv("ta"), a.fv("tb"), a.fv("tc"), a.fv("u0"), a.fv("u1"));
    let (sy, sz) = (nx, nx * ny);
    for k in 1..nz - 2 {
        for j in 1..ny - 2 {
            for i in 1..nx - 2 {
                let c = i + nx * (j + ny * k);
                let (wa, wb, wc) = (
                    tricubic_weights(ta[c]),
                    tricubic_weights(tb[c]),
                    tricubic_weights(tc[c]),
                );
                let row = |o: usize| {
                    wa[0] * u0[o - 1] + wa[1] * u0[o] + wa[2] * u0[o + 1] + wa[3] * u0[o + 2]
                };
                let plane = |o: usize| {
                    wb[0] * row(o - sy)
                        + wb[1] * row(o)
                        + wb[2] * row(o + sy)
                        + wb[3] * row(o + 2 * sy)
                };
                let mut sum = 0.0f32;
                for (w, o) in wc.iter().zip([c - sz, c, c + sz, c + 2 * sz]) {
                    sum += w * plane(o);
                }
                u1[c] = sum;
            }
        }
    }
    vec![("u1", Expect::Exact(u1))]
}

// The GPU-style kernels below run one thread per element; a launch whose grid does not
// cover the data leaves the uncovered elements alone, so the references bound every
// index by the threads launched as well as by the data.

/// The number of threads launched along each dimension (grid times block).
fn threads(s: &Shape) -> [usize; 3] {
    [0, 1, 2].map(|d| (s.grid[d] * s.block[d]) as usize)
}

// saxpy_gpu: GPU-style; a grid that covers n exactly, one that overhangs it (the tail
// of y past n is checked), and one of blocks of 100 that covers only part of n.

fn saxpy_gpu_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(20);
    let mut l = |label: &str, n: usize, len: usize, grid: u32, block: u32| {
        launch(
            label,
            Some([grid, 1, 1]),
            Some([block, 1, 1]),
            Args::new(vec![
                ("n", I(n as i32)),
                ("a", F(r.f32_in(-3.0, 3.0))),
                ("x", r.fvec(len, -10.0, 10.0)),
                ("y", r.fvec(len, -10.0, 10.0)),
            ]),
        )
    };
    vec![
        l("g4b256", 1000, 1000, 4, 256),
        l("g3b16-n37", 37, 50, 3, 16),
        l("g2b100-n500", 500, 500, 2, 100),
    ]
}

fn saxpy_gpu_ref(a: &Args, s: &Shape) -> Outputs {
    let (n, sa, x, mut y) = (a.i("n") as usize, a.f("a"), a.fv("x"), a.fv("y"));
    for i in 0..n.min(threads(s)[0]) {
        y[i] += sa * x[i];
    }
    vec![("y", Expect::Exact(y))]
}

// matmul_rect: GPU-style 16 x 16 blocks over an m x n result. Each thread adds TILE
// products per tile in k order; past k both tile elements are 0, so the padding adds
// 0 * 0, as in the reference: bit-exact. The shapes: the header's, one whose grid
// overhangs m and n with a short k, and one with k over several partial tiles.

fn matmul_rect_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(21);
    let mut l = |label: &str, (m, n, k): (usize, usize, usize), grid: [u32; 3]| {
        launch(
            label,
            Some(grid),
            Some([16, 16, 1]),
            Args::new(vec![
                ("m", I(m as i32)),
                ("n", I(n as i32)),
                ("k", I(k as i32)),
                ("a", r.fvec(m * k, -1.0, 1.0)),
                ("b", r.fvec(k * n, -1.0, 1.0)),
                ("c", fill_f(m * n + 3, SENTINEL)),
            ]),
        )
    };
    vec![
        l("40x24-k20", (40, 24, 20), [2, 3, 1]),
        l("17x33-k5", (17, 33, 5), [3, 2, 1]),
        l("16x16-k37", (16, 16, 37), [1, 1, 1]),
    ]
}

fn matmul_rect_ref(args: &Args, s: &Shape) -> Outputs {
    let (m, n, k) = (
        args.i("m") as usize,
        args.i("n") as usize,
        args.i("k") as usize,
    );
    let (a, b, mut c) = (args.fv("a"), args.fv("b"), args.fv("c"));
    let [cols, rows, _] = threads(s);
    let tiles = k.div_ceil(16);
    for row in 0..m.min(rows) {
        for col in 0..n.min(cols) {
            let mut acc = 0.0f32;
            for q in 0..tiles * 16 {
                let (x, y) = if q < k {
                    (a[row * k + q], b[q * n + col])
                } else {
                    (0.0, 0.0)
                };
                acc += x * y;
            }
            c[row * n + col] = acc;
        }
    }
    vec![("c", Expect::Exact(c))]
}

// jacobi2d_gpu: GPU-style 2-D grid; the sums in the kernel's order, bit-exact; the
// border must stay untouched. Grids that cover the field exactly, overhang it, and
// cover only part of it.

fn jacobi2d_gpu_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(22);
    let mut l = |label: &str, nx: usize, ny: usize, grid: [u32; 3], block: [u32; 3]| {
        launch(
            label,
            Some(grid),
            Some(block),
            Args::new(vec![
                ("nx", I(nx as i32)),
                ("ny", I(ny as i32)),
                ("c0", F(0.5)),
                ("c1", F(0.1)),
                ("c2", F(0.025)),
                ("w0", r.fvec(nx * ny, -1.0, 1.0)),
                ("w1", fill_f(nx * ny, SENTINEL)),
            ]),
        )
    };
    vec![
        l("64x32-b32x8", 64, 32, [2, 4, 1], [32, 8, 1]),
        l("37x23-b16x8", 37, 23, [3, 3, 1], [16, 8, 1]),
        l("40x40-partial", 40, 40, [1, 2, 1], [32, 16, 1]),
    ]
}

fn jacobi2d_gpu_ref(a: &Args, s: &Shape) -> Outputs {
    let (nx, ny) = (a.i("nx") as usize, a.i("ny") as usize);
    let (c0, c1, c2) = (a.f("c0"), a.f("c1"), a.f("c2"));
    let (w0, mut w1) = (a.fv("w0"), a.fv("w1"));
    let [ti, tj, _] = threads(s);
    for j in 1..(ny - 1).min(tj) {
        for i in 1..(nx - 1).min(ti) {
            let c = i + nx * j;
            let edges = w0[c - 1] + w0[c - nx] + w0[c + 1] + w0[c + nx];
            let corners = w0[c - nx - 1] + w0[c + nx - 1] + w0[c - nx + 1] + w0[c + nx + 1];
            w1[c] = c0 * w0[c] + c1 * edges + c2 * corners;
        }
    }
    vec![("w1", Expect::Exact(w1))]
}

// wave13pt_gpu: GPU-style, threads over (i, j), blocks in z over k; bit-exact. The
// second launch overhangs the field in x and y; the third stops short of it in z.

fn wave13pt_gpu_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(23);
    let mut l = |label: &str, (nx, ny, nz): (usize, usize, usize), grid: [u32; 3], block| {
        let len = nx * ny * nz;
        launch(
            label,
            Some(grid),
            Some(block),
            Args::new(vec![
                ("nx", I(nx as i32)),
                ("ny", I(ny as i32)),
                ("nz", I(nz as i32)),
                ("c0", F(1.5)),
                ("c1", F(0.1)),
                ("c2", F(-0.05)),
                ("w0", r.fvec(len, -1.0, 1.0)),
                ("w1", r.fvec(len, -1.0, 1.0)),
                ("w2", fill_f(len, SENTINEL)),
            ]),
        )
    };
    vec![
        l("16^3-b16x8", (16, 16, 16), [1, 2, 16], [16, 8, 1]),
        l("13x11x9-b8x4", (13, 11, 9), [2, 3, 9], [8, 4, 1]),
        l("12x10x9-z6", (12, 10, 9), [1, 1, 6], [16, 16, 1]),
    ]
}

fn wave13pt_gpu_ref(a: &Args, s: &Shape) -> Outputs {
    let (nx, ny, nz) = (a.i("nx") as usize, a.i("ny") as usize, a.i("nz") as usize);
    let (c0, c1, c2) = (a.f("c0"), a.f("c1"), a.f("c2"));
    let (w0, w1, mut w2) = (a.fv("w0"), a.fv("w1"), a.fv("w2"));
    let [ti, tj, _] = threads(s);
    let tk = s.grid[2] as usize;
    let (sy, sz) = (nx, nx * ny);
    for k in 2..(nz - 2).min(tk) {
        for j in 2..(ny - 2).min(tj) {
            for i in 2..(nx - 2).min(ti) {
                let c = i + nx * (j + ny * k);
                let near =
                    w1[c - 1] + w1[c + 1] + w1[c - sy] + w1[c + sy] + w1[c - sz] + w1[c + sz];
                let far = w1[c - 2]
                    + w1[c + 2]
                    + w1[c - 2 * sy]
                    + w1[c + 2 * sy]
                    + w1[c - 2 * sz]
                    + w1[c + 2 * sz];
                w2[c] = c0 * w1[c] - w0[c] + c1 * near + c2 * far;
            }
        }
    }
    vec![("w2", Expect::Exact(w2))]
}

// mandelbrot_gpu: GPU-style, one thread per pixel; the same f32 iteration and the
// same three-way code. A grid that covers the image exactly, one that overhangs it,
// and a window on the set's boundary (many different trip counts per warp).

fn mandelbrot_gpu_args(window: [f32; 4], w: usize, h: usize, max_iter: i32) -> Args {
    Args::new(vec![
        ("x0", F(window[0])),
        ("y0", F(window[1])),
        ("x1", F(window[2])),
        ("y1", F(window[3])),
        ("width", I(w as i32)),
        ("height", I(h as i32)),
        ("maxIter", I(max_iter)),
        ("out", fill_i(w * h + 2, -1)),
    ])
}

fn mandelbrot_gpu_launches(_pc: u32) -> Vec<Launch> {
    let full = [-2.0, -1.0, 1.0, 1.0];
    vec![
        launch(
            "32x24-b32x8",
            Some([1, 3, 1]),
            Some([32, 8, 1]),
            mandelbrot_gpu_args(full, 32, 24, 64),
        ),
        launch(
            "20x13-b16x8",
            Some([2, 2, 1]),
            Some([16, 8, 1]),
            mandelbrot_gpu_args(full, 20, 13, 40),
        ),
        launch(
            "boundary-16x16",
            Some([1, 2, 1]),
            Some([16, 8, 1]),
            mandelbrot_gpu_args([-0.8, 0.05, -0.7, 0.15], 16, 16, 100),
        ),
    ]
}

fn mandelbrot_gpu_ref(a: &Args, s: &Shape) -> Outputs {
    let (x0, y0, x1, y1) = (a.f("x0"), a.f("y0"), a.f("x1"), a.f("y1"));
    let (width, height, max_iter) = (a.i("width"), a.i("height"), a.i("maxIter"));
    let mut out = a.iv("out");
    let [ti, tj, _] = threads(s);
    let dx = (x1 - x0) / width as f32;
    let dy = (y1 - y0) / height as f32;
    for j in 0..(height as usize).min(tj) {
        for i in 0..(width as usize).min(ti) {
            let c_re = x0 + i as f32 * dx;
            let c_im = y0 + j as f32 * dy;
            let (mut z_re, mut z_im) = (c_re, c_im);
            let mut n = 0;
            while n < max_iter && z_re * z_re + z_im * z_im <= 4.0 {
                let new_re = z_re * z_re - z_im * z_im;
                let new_im = 2.0 * z_re * z_im;
                z_re = c_re + new_re;
                z_im = c_im + new_im;
                n += 1;
            }
            out[j * width as usize + i] = if n == max_iter {
                0
            } else if n < 4 {
                1
            } else {
                // After an escape |z|^2 is small (below 40), so the conversion is exact
                // truncation, as the language's.
                n + (z_re * z_re + z_im * z_im) as i32
            };
        }
    }
    vec![("out", Expect::Ints(out))]
}

// row_sums: ISPC-style, a column per lane; each column summed in row order, bit-exact.
// 37 columns leave a partial gang (and a tail of out to check); no rows gives zeros.

fn row_sums_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(24);
    let mut l = |label: &str, nrows: usize, ncols: usize| {
        launch(
            label,
            None,
            None,
            Args::new(vec![
                ("nrows", I(nrows as i32)),
                ("ncols", I(ncols as i32)),
                ("m", r.fvec(nrows * ncols + 1, -10.0, 10.0)),
                ("out", fill_f(ncols + 3, SENTINEL)),
            ]),
        )
    };
    vec![l("64x64", 64, 64), l("7x37", 7, 37), l("0x5", 0, 5)]
}

fn row_sums_ref(a: &Args, _: &Shape) -> Outputs {
    let (nrows, ncols) = (a.i("nrows") as usize, a.i("ncols") as usize);
    let (m, mut out) = (a.fv("m"), a.fv("out"));
    for c in 0..ncols {
        let mut s = 0.0f32;
        for r in 0..nrows {
            s += m[r * ncols + c];
        }
        out[c] = s;
    }
    vec![("out", Expect::Exact(out))]
}

// strided_copy: GPU-style; every thread copies n elements, `total` apart. Blocks of 40
// (a partial gang at both programCounts); dst has a tail past n * total to check.

fn strided_copy_launches(_pc: u32) -> Vec<Launch> {
    let mut r = Rng(25);
    let mut l = |label: &str, n: usize, stride: usize, grid: u32, block: u32| {
        let total = (grid * block) as usize;
        launch(
            label,
            Some([grid, 1, 1]),
            Some([block, 1, 1]),
            Args::new(vec![
                ("n", I(n as i32)),
                ("stride", I(stride as i32)),
                ("src", r.fvec(n * total * stride.max(1) + 2, -1.0, 1.0)),
                ("dst", fill_f(n * total + 5, SENTINEL)),
            ]),
        )
    };
    vec![
        l("g3b40-s2", 5, 2, 3, 40),
        l("g2b64-s1", 8, 1, 2, 64),
        l("g1b32-s0", 3, 0, 1, 32),
    ]
}

fn strided_copy_ref(a: &Args, s: &Shape) -> Outputs {
    let (n, stride) = (a.i("n") as usize, a.i("stride") as usize);
    let (src, mut dst) = (a.fv("src"), a.fv("dst"));
    let total = threads(s)[0];
    for j in 0..n * total {
        dst[j] = src[j * stride];
    }
    vec![("dst", Expect::Exact(dst))]
}

// uniformity_demo: GPU-style; x = x * a + b per step in f32 (separate multiply and
// add), bit-exact. The launches cover more threads than n (the extra ones store
// nothing) or fewer (the rest of out stays), and no steps at all.

/// The demo's launches; `mode` is uniform_branch's parameter (none for
/// divergent_branch).
fn demo_launches(mode: Option<i32>) -> Vec<Launch> {
    let mut launches = Vec::new();
    for (label, n, steps, grid, block) in [
        ("g3b128-n300", 300, 20, 3, 128),
        ("g2b100-n500", 500, 7, 2, 100),
        ("g1b64-steps0", 64, 0, 1, 64),
    ] {
        let mut args = vec![
            ("n", I(n)),
            ("steps", I(steps)),
            ("out", fill_f(n as usize + 2, SENTINEL)),
        ];
        let mut label = label.to_string();
        if let Some(mode) = mode {
            args.push(("mode", I(mode)));
            label = format!("{label}-mode{mode}");
        }
        launches.push(launch(
            &label,
            Some([grid, 1, 1]),
            Some([block, 1, 1]),
            Args::new(args),
        ));
    }
    launches
}

fn divergent_branch_launches(_pc: u32) -> Vec<Launch> {
    demo_launches(None)
}

fn uniform_branch_launches(_pc: u32) -> Vec<Launch> {
    [1, 0, -3]
        .into_iter()
        .flat_map(|mode| demo_launches(Some(mode)))
        .collect()
}

/// The demo's per-thread iteration; `first` picks `x * 0.5 + 1` over `x * 0.25 + 2`.
fn demo_value(i: usize, steps: i32, first: bool) -> f32 {
    let mut x = (i % 7) as f32 * 0.125f32;
    let mut acc = 0.0f32;
    for _ in 0..steps {
        x = if first {
            x * 0.5f32 + 1.0f32
        } else {
            x * 0.25f32 + 2.0f32
        };
        acc = acc * 0.75f32 + x * 0.125f32;
        acc = acc * 0.5f32 + x * 0.0625f32;
    }
    x + acc
}

fn demo_ref(a: &Args, s: &Shape, first: impl Fn(usize) -> bool) -> Outputs {
    let (n, steps, mut out) = (a.i("n") as usize, a.i("steps"), a.fv("out"));
    for (i, o) in out.iter_mut().enumerate().take(n.min(threads(s)[0])) {
        *o = demo_value(i, steps, first(i));
    }
    vec![("out", Expect::Exact(out))]
}

fn divergent_branch_ref(a: &Args, s: &Shape) -> Outputs {
    demo_ref(a, s, |i| i & 1 == 0)
}

fn uniform_branch_ref(a: &Args, s: &Shape) -> Outputs {
    let mode = a.i("mode");
    demo_ref(a, s, |_| mode > 0)
}

/// The jump-threading entries' launches (the same shapes, no `steps`); `mode` as in
/// [`demo_launches`].
fn thread_launches(mode: Option<i32>) -> Vec<Launch> {
    let mut launches = Vec::new();
    for (label, n, grid, block) in [
        ("g3b128-n300", 300, 3, 128),
        ("g2b100-n500", 500, 2, 100),
        ("g1b64-n64", 64, 1, 64),
    ] {
        let mut args = vec![("n", I(n)), ("out", fill_f(n as usize + 2, SENTINEL))];
        let mut label = label.to_string();
        if let Some(mode) = mode {
            args.push(("mode", I(mode)));
            label = format!("{label}-mode{mode}");
        }
        launches.push(launch(
            &label,
            Some([grid, 1, 1]),
            Some([block, 1, 1]),
            Args::new(args),
        ));
    }
    launches
}

fn divergent_thread_launches(_pc: u32) -> Vec<Launch> {
    thread_launches(None)
}

fn uniform_thread_launches(_pc: u32) -> Vec<Launch> {
    [1, 0, -3]
        .into_iter()
        .flat_map(|mode| thread_launches(Some(mode)))
        .collect()
}

/// The jump-threading entries' value for thread `i`: x by the first `if`, the
/// polynomial by Horner's rule (`a0 + x * (a1 + ...)`, innermost first), the second `if`.
fn thread_value(i: usize, first: bool) -> f32 {
    const COEFS: [f32; 16] = [
        1.0, 0.5, 0.25, 0.125, 0.75, 0.5, 0.25, 1.0, 0.5, 0.125, 0.25, 0.75, 0.5, 0.25, 0.125, 1.0,
    ];
    let x = if first {
        (i % 7) as f32 * 0.125f32
    } else {
        (i % 5) as f32 * 0.25f32
    };
    let mut y = COEFS[15];
    for &a in COEFS[..15].iter().rev() {
        y = a + x * y;
    }
    if first {
        y + 2.0f32
    } else {
        y * 3.0f32
    }
}

fn thread_ref(a: &Args, s: &Shape, first: impl Fn(usize) -> bool) -> Outputs {
    let (n, mut out) = (a.i("n") as usize, a.fv("out"));
    for (i, o) in out.iter_mut().enumerate().take(n.min(threads(s)[0])) {
        *o = thread_value(i, first(i));
    }
    vec![("out", Expect::Exact(out))]
}

fn divergent_thread_ref(a: &Args, s: &Shape) -> Outputs {
    thread_ref(a, s, |i| i & 1 == 0)
}

fn uniform_thread_ref(a: &Args, s: &Shape) -> Outputs {
    let mode = a.i("mode");
    thread_ref(a, s, |_| mode > 0)
}

// ---------------------------------------------------------------------------------
// One test per kernel

#[test]
fn saxpy() {
    check_kernel("saxpy");
}

#[test]
fn block_reduce() {
    check_kernel("block_reduce");
}

#[test]
fn buckets() {
    check_kernel("buckets");
}

#[test]
fn coherent() {
    check_kernel("coherent");
}

#[test]
fn gameoflife() {
    check_kernel("gameoflife");
}

#[test]
fn gaussblur() {
    check_kernel("gaussblur");
}

#[test]
fn histogram() {
    check_kernel("histogram");
}

#[test]
fn histogram_count_positive() {
    check_kernel("histogram/count_positive");
}

#[test]
fn jacobi2d() {
    check_kernel("jacobi2d");
}

#[test]
fn laplacian3d() {
    check_kernel("laplacian3d");
}

#[test]
fn mandelbrot() {
    check_kernel("mandelbrot");
}

#[test]
fn matmul_tiled() {
    check_kernel("matmul_tiled");
}

#[test]
fn particles_advance() {
    check_kernel("particles/advance");
}

#[test]
fn particles_centroid() {
    check_kernel("particles/centroid");
}

#[test]
fn prefix_sum() {
    check_kernel("prefix_sum");
}

#[test]
fn reduce_sum() {
    check_kernel("reduce_sum");
}

#[test]
fn stencil1d() {
    check_kernel("stencil1d");
}

#[test]
fn switch_ops() {
    check_kernel("switch_ops");
}

#[test]
fn tasks() {
    check_kernel("tasks");
}

#[test]
fn wave13pt() {
    check_kernel("wave13pt");
}

#[test]
fn tricubic() {
    check_kernel("tricubic");
}

#[test]
fn saxpy_gpu() {
    check_kernel("saxpy_gpu");
}

#[test]
fn matmul_rect() {
    check_kernel("matmul_rect");
}

#[test]
fn jacobi2d_gpu() {
    check_kernel("jacobi2d_gpu");
}

#[test]
fn wave13pt_gpu() {
    check_kernel("wave13pt_gpu");
}

#[test]
fn mandelbrot_gpu() {
    check_kernel("mandelbrot_gpu");
}

#[test]
fn row_sums() {
    check_kernel("row_sums");
}

#[test]
fn strided_copy() {
    check_kernel("strided_copy");
}

#[test]
fn uniformity_demo_divergent_branch() {
    check_kernel("uniformity_demo/divergent_branch");
}

#[test]
fn uniformity_demo_uniform_branch() {
    check_kernel("uniformity_demo/uniform_branch");
}

#[test]
fn uniformity_demo_divergent_thread() {
    check_kernel("uniformity_demo/divergent_thread");
}

#[test]
fn uniformity_demo_uniform_thread() {
    check_kernel("uniformity_demo/uniform_thread");
}

#[test]
fn uniformity_unannotated_saxpy_plain() {
    check_kernel("uniformity_unannotated/saxpy_plain");
}

#[test]
fn uniformity_unannotated_jacobi2d_plain() {
    check_kernel("uniformity_unannotated/jacobi2d_plain");
}

#[test]
fn uniformity_unannotated_jacobi2d_gpu_plain() {
    check_kernel("uniformity_unannotated/jacobi2d_gpu_plain");
}

#[test]
fn uniformity_unannotated_wave13pt_plain() {
    check_kernel("uniformity_unannotated/wave13pt_plain");
}

#[test]
fn uniformity_unannotated_matmul_tiled_plain() {
    check_kernel("uniformity_unannotated/matmul_tiled_plain");
}

#[test]
fn uniformity_unannotated_stencil1d_plain() {
    check_kernel("uniformity_unannotated/stencil1d_plain");
}

#[test]
fn uniformity_unannotated_reduce_sum_plain() {
    check_kernel("uniformity_unannotated/reduce_sum_plain");
}

// ---------------------------------------------------------------------------------
// Tests

/// Every example file has a kernel here and every entry its header names is covered.
#[test]
fn every_example_is_covered() {
    let files: Vec<String> = common::spmd_files("examples")
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 28, "{files:?}");
    for f in &files {
        assert!(
            KERNELS.iter().any(|k| k.file == f),
            "{f} has no kernel in KERNELS"
        );
        let commands = header_commands(f);
        assert!(!commands.is_empty(), "{f} suggests no command");
        for c in commands {
            assert!(
                KERNELS.iter().any(|k| k.file == f && k.entry == c.entry),
                "{f}: entry `{}` of `{}` has no kernel",
                c.entry,
                c.text
            );
        }
    }
    for f in KNOWN_FAILURES {
        let k = kernel(f.kernel);
        assert!(
            PROGRAM_COUNTS.contains(&f.program_count)
                && (f.launch == "header"
                    || (k.launches)(f.program_count)
                        .iter()
                        .any(|l| l.label == f.launch)),
            "KNOWN_FAILURES names `{}` launch `{}` at {}, which is not run",
            f.kernel,
            f.launch,
            f.program_count
        );
    }
}
