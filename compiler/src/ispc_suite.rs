//! Runs ISPC's own functional test suite (`tests/func-tests` of a checkout of
//! ispc/ispc) on spmdc, the way ISPC's `run_tests.py` and `test_static.cpp` do.
//!
//! Each test defines a `task` function whose name gives its signature (`f_v`, `f_f`,
//! `f_fu`, `f_fi`, `f_du`, `f_duf`, `f_di`, or `print_uf`, `print_f`, `print_fuf`) and a
//! `result` (or `print_result`) function. ISPC's harness fills the buffers
//! (`RET` with -1e20, `vfloat` and `vdouble` with `i + 1`, `vint` with `2 * (i + 1)`,
//! `vint2` with `i + 5`, the scalar with 5), runs both, and compares the first
//! `programCount` elements of `RET` with `!=` (print tests compare standard output).
//! Tests named `failing_*` must compile and then disagree. `// rule:` lines skip tests
//! meant for other machines, as ISPC's runner does.
//!
//! Every run is a separate `spmdc run` process, so a crash or a hang of one test
//! cannot stop the suite; each is bounded by a step limit and a wall-clock timeout.
//! The test files are read from the checkout and never copied: the include file the
//! tests name (`test_static.isph`) is our own, written to a temporary directory.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Stack bytes per gang on nyuzi (`--gang-stack`): room for the suite's largest
/// local arrays.
const NYUZI_GANG_STACK: u32 = 256 * 1024;

/// Elements in each of the harness's buffers (`ARRAY_SIZE` in ISPC's harness).
const ARRAY_SIZE: usize = 256;

/// What one suite run needs to know.
#[derive(Clone, Debug)]
pub struct SuiteOptions {
    /// The `spmdc` executable that runs each test.
    pub exe: PathBuf,
    /// The root of the ispc/ispc checkout.
    pub checkout: PathBuf,
    /// `interp`, `nyuzi` or `dac-gpu`.
    pub target: String,
    /// The interpreter's gang width (the other targets have their own).
    pub program_count: u32,
    /// Only tests whose file name contains this.
    pub filter: Option<String>,
    /// Concurrent test processes.
    pub jobs: usize,
    /// Wall-clock limit of one `spmdc run` process.
    pub timeout: Duration,
    /// Step limit passed to each run.
    pub max_steps: u64,
}

/// How a test's `task` function is called, from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Signature {
    V,
    F,
    Fu,
    Fi,
    Du,
    Duf,
    Di,
    PrintUf,
    PrintF,
    PrintFuf,
}

impl Signature {
    /// The function name and its `TEST_SIG` number in ISPC's harness.
    const ALL: [(Signature, &'static str, u32); 10] = [
        (Signature::V, "f_v", 0),
        (Signature::F, "f_f", 1),
        (Signature::Fu, "f_fu", 2),
        (Signature::Fi, "f_fi", 3),
        (Signature::Du, "f_du", 4),
        (Signature::Duf, "f_duf", 5),
        (Signature::Di, "f_di", 6),
        (Signature::PrintUf, "print_uf", 32),
        (Signature::PrintF, "print_f", 33),
        (Signature::PrintFuf, "print_fuf", 34),
    ];

    fn name(self) -> &'static str {
        Self::ALL.iter().find(|e| e.0 == self).map_or("", |e| e.1)
    }

    fn number(self) -> u32 {
        Self::ALL.iter().find(|e| e.0 == self).map_or(0, |e| e.2)
    }

    fn prints(self) -> bool {
        self.number() >= 32
    }

    /// The harness's argument for each parameter after the first (`RET`), in order:
    /// the buffers and scalar `test_static.cpp` passes.
    fn inputs(self) -> &'static [&'static str] {
        const VFLOAT: &str = "range(256,1)";
        const VINT: &str = "range(256,2,2)";
        const VINT2: &str = "range(256,5)";
        const B: &str = "5";
        match self {
            Signature::V => &[],
            Signature::F => &[VFLOAT],
            Signature::Fu | Signature::Du | Signature::Duf => &[VFLOAT, B],
            Signature::Fi => &[VFLOAT, VINT],
            Signature::Di => &[VFLOAT, VINT2],
            Signature::PrintUf => &[B],
            Signature::PrintF => &[VFLOAT],
            Signature::PrintFuf => &[VFLOAT, B],
        }
    }
}

/// Finds the signature as ISPC's runner does: the first known name followed by `(`
/// on a line that mentions `task` or `export`.
fn signature_of(text: &str) -> Option<Signature> {
    let lines = text
        .lines()
        .filter(|l| l.contains("task") || l.contains("export"));
    let mut found = None;
    for line in lines {
        for (sig, name, _) in Signature::ALL {
            if line.contains(&format!("{name}(")) {
                found = Some(sig);
                break;
            }
        }
    }
    found
}

/// The parameter names of `name`'s definition in `text`, or `None` when it is not
/// found in a form this reads (`name(T a, T b[])`).
fn parameter_names(text: &str, name: &str) -> Option<Vec<String>> {
    let mut from = 0;
    while let Some(at) = text[from..].find(name) {
        let start = from + at;
        from = start + name.len();
        let before_ok = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let rest = text[from..].trim_start();
        if !before_ok || !rest.starts_with('(') {
            continue;
        }
        let close = rest.find(')')?;
        let list = &rest[1..close];
        if list.trim().is_empty() || list.trim() == "void" {
            return Some(Vec::new());
        }
        return list.split(',').map(last_identifier).collect();
    }
    None
}

/// The declared name in one parameter: the last identifier before any `[]`.
fn last_identifier(param: &str) -> Option<String> {
    let head = param.split('[').next()?.split('=').next()?;
    let ident: String = head
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    (!ident.is_empty() && !ident.starts_with(|c: char| c.is_ascii_digit())).then_some(ident)
}

/// The values `// rule:` lines are matched against, for a spmdc target.
struct RuleValues {
    arch: &'static str,
    os: &'static str,
    cpu: &'static str,
    target: String,
    jit: &'static str,
}

impl RuleValues {
    fn for_target(width: u32) -> Self {
        RuleValues {
            arch: "spmdc",
            os: "linux",
            cpu: "spmdc",
            target: format!("spmdc-i32x{width}"),
            jit: "false",
        }
    }

    fn value(&self, key: &str) -> Option<&str> {
        Some(match key {
            "arch" => self.arch,
            "OS" => self.os,
            "cpu" => self.cpu,
            "target" => &self.target,
            "jit" => self.jit,
            _ => return None,
        })
    }
}

/// Whether the test's `// rule: run|skip on KEY=VALUE` lines let it run here; later
/// rules override earlier ones, `*` matches anything and a leading `!` negates.
fn rules_allow(text: &str, values: &RuleValues) -> bool {
    let mut run = true;
    for line in text.lines() {
        let Some(rule) = line.trim_start().strip_prefix("//") else {
            continue;
        };
        let Some(rule) = rule.trim_start().strip_prefix("rule:") else {
            continue;
        };
        let mut words = rule.split_whitespace();
        let (Some(action), Some("on"), Some(cond)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        let Some((key, pattern)) = cond.split_once('=') else {
            continue;
        };
        let Some(value) = values.value(key) else {
            continue;
        };
        let (negate, pattern) = match pattern.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pattern),
        };
        if glob_match(pattern, value) != negate {
            match action {
                "run" => run = true,
                "skip" => run = false,
                _ => {}
            }
        }
    }
    run
}

/// The rules' patterns are regular expressions in ISPC's runner; the ones its tests
/// use are literals, `*`, `.*` and alternations of literals, which this matches.
fn glob_match(pattern: &str, value: &str) -> bool {
    if pattern == "*" || pattern == ".*" {
        return true;
    }
    pattern
        .trim_matches(|c| c == '(' || c == ')')
        .split('|')
        .any(|alt| match alt.strip_suffix(".*") {
            Some(prefix) => value.starts_with(prefix),
            None => alt == value,
        })
}

/// One test's verdict.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Pass,
    /// Not run here: a rule skips it, or it has no signature the harness calls.
    Skipped(String),
    /// spmdc rejected the program: the first diagnostic line.
    CompileError(String),
    /// The run stopped: a trap, a usage error, a crash or the timeout.
    RunError(String),
    /// The results disagree.
    Mismatch(String),
}

impl Outcome {
    fn kind(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Skipped(_) => "skipped",
            Outcome::CompileError(_) => "compile error",
            Outcome::RunError(_) => "run error",
            Outcome::Mismatch(_) => "mismatch",
        }
    }

    fn detail(&self) -> &str {
        match self {
            Outcome::Pass => "",
            Outcome::Skipped(s)
            | Outcome::CompileError(s)
            | Outcome::RunError(s)
            | Outcome::Mismatch(s) => s,
        }
    }
}

/// The suite's results, one per test file, in file-name order.
pub struct SuiteReport {
    pub target: String,
    pub width: u32,
    pub results: Vec<(String, Outcome)>,
}

/// The include file the tests name. ISPC's declares the harness's entry points and
/// two packing helpers; ours is empty, since every `task` function is an entry here.
const TEST_STATIC_ISPH: &str = "// spmdc's stand-in for ISPC's test harness header: every `task`\n\
// function is an entry point of `spmdc run`, so nothing needs declaring.\n\
\n\
// The packing helpers the dot2add/dot4add tests call: `n` elements of `src`, two\n\
// (four) to a 32-bit word of `dst`, element 2k (4k) in the lowest bits.\n\
template <typename T>\n\
void pack2toint(uniform T * uniform src, uniform uint32 * uniform dst, uniform int32 n) {\n\
    for (uniform int32 k = 0; k < n / 2; k++) {\n\
        uniform uint32 lo = (uniform uint16)src[2 * k];\n\
        uniform uint32 hi = (uniform uint16)src[2 * k + 1];\n\
        dst[k] = lo | (hi << 16);\n\
    }\n\
}\n\
\n\
template <typename T>\n\
void pack4toint(uniform T * uniform src, uniform uint32 * uniform dst, uniform int32 n) {\n\
    for (uniform int32 k = 0; k < n / 4; k++) {\n\
        uniform uint32 word = 0;\n\
        for (uniform int32 j = 0; j < 4; j++) {\n\
            word |= (uniform uint32)(uniform uint8)src[4 * k + j] << (8 * j);\n\
        }\n\
        dst[k] = word;\n\
    }\n\
}\n";

/// Runs every test of the checkout's `tests/func-tests` with the options.
pub fn run(opts: &SuiteOptions) -> Result<SuiteReport, String> {
    let dir = opts.checkout.join("tests").join("func-tests");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ispc"))
        .filter(|p| {
            opts.filter
                .as_ref()
                .is_none_or(|f| file_name(p).contains(f.as_str()))
        })
        .collect();
    files.sort();
    let include = tempdir("spmdc-ispc-suite")?;
    std::fs::write(include.join("test_static.isph"), TEST_STATIC_ISPH)
        .map_err(|e| format!("cannot write the harness header: {e}"))?;
    let width = target_width(opts);
    let next = AtomicUsize::new(0);
    let results = Mutex::new(vec![None; files.len()]);
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(i) else { break };
                let outcome = run_test(opts, &include, width, path);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(outcome);
            });
        }
    });
    let _ = std::fs::remove_dir_all(&include);
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(SuiteReport {
        target: opts.target.clone(),
        width,
        results: files
            .iter()
            .zip(results)
            .map(|(p, o)| {
                (
                    file_name(p),
                    o.unwrap_or(Outcome::RunError("not run".into())),
                )
            })
            .collect(),
    })
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn target_width(opts: &SuiteOptions) -> u32 {
    match opts.target.as_str() {
        "nyuzi" => 16,
        "dac-gpu" => 32,
        _ => opts.program_count,
    }
}

fn tempdir(prefix: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Runs one test: its function, then `result` (or `print_result`), and compares.
fn run_test(opts: &SuiteOptions, include: &Path, width: u32, path: &Path) -> Outcome {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Outcome::RunError(format!("cannot read the test: {e}")),
    };
    if !rules_allow(&text, &RuleValues::for_target(width)) {
        return Outcome::Skipped("its rules skip this target".into());
    }
    let Some(sig) = signature_of(&text) else {
        return Outcome::Skipped(
            "no harness signature (it compares with the C compiler's sizeof, or targets Xe)".into(),
        );
    };
    let expect_failure = file_name(path).contains("failing_");
    let verdict = compare(opts, include, width, path, &text, sig);
    match (verdict, expect_failure) {
        (Outcome::Pass, true) => {
            Outcome::Mismatch("expected to fail, but the results agree".into())
        }
        (Outcome::Mismatch(_), true) => Outcome::Pass,
        (other, _) => other,
    }
}

fn compare(
    opts: &SuiteOptions,
    include: &Path,
    width: u32,
    path: &Path,
    text: &str,
    sig: Signature,
) -> Outcome {
    let reference = if sig.prints() {
        "print_result"
    } else {
        "result"
    };
    let test = match launch(opts, include, path, text, sig, sig.name()) {
        Ok(run) => run,
        Err(o) => return o,
    };
    let expected = match launch(opts, include, path, text, sig, reference) {
        Ok(run) => run,
        Err(o) => return o,
    };
    if sig.prints() {
        return if test.output == expected.output {
            Outcome::Pass
        } else {
            Outcome::Mismatch(format!(
                "printed {:?}, expected {:?}",
                clip(&test.output),
                clip(&expected.output)
            ))
        };
    }
    for i in 0..width as usize {
        let (got, want) = (test.ret.get(i).copied(), expected.ret.get(i).copied());
        // The harness compares with C's `!=`: NaN never agrees, -0 equals 0.
        if got.is_none() || got != want || got.is_some_and(f32::is_nan) {
            return Outcome::Mismatch(format!(
                "value {i} disagrees: returned {got:?}, expected {want:?}"
            ));
        }
    }
    Outcome::Pass
}

fn clip(s: &str) -> String {
    s.chars().take(120).collect()
}

/// What a finished run gave back.
struct Ran {
    ret: Vec<f32>,
    output: String,
}

/// One `spmdc run` of `entry`, with the harness's arguments for its parameters.
fn launch(
    opts: &SuiteOptions,
    include: &Path,
    path: &Path,
    text: &str,
    sig: Signature,
    entry: &str,
) -> Result<Ran, Outcome> {
    let Some(params) = parameter_names(text, entry) else {
        return Err(Outcome::CompileError(format!(
            "no function `{entry}` found"
        )));
    };
    let is_reference = entry == "result" || entry == "print_result";
    let values: Vec<String> = if is_reference {
        (0..params.len())
            .map(|_| format!("zeros({ARRAY_SIZE})"))
            .collect()
    } else if sig.prints() {
        sig.inputs().iter().map(|s| s.to_string()).collect()
    } else {
        std::iter::once(format!("fill({ARRAY_SIZE},-1e20)"))
            .chain(sig.inputs().iter().map(|s| s.to_string()))
            .collect()
    };
    if values.len() != params.len() {
        return Err(Outcome::CompileError(format!(
            "`{entry}` has {} parameters; the harness passes {}",
            params.len(),
            values.len()
        )));
    }
    let mut cmd = Command::new(&opts.exe);
    cmd.arg("run").arg(path).arg("--target").arg(&opts.target);
    cmd.arg("-I")
        .arg(include)
        .arg("-D")
        .arg(format!("TEST_SIG={}", sig.number()));
    cmd.arg("--entry")
        .arg(entry)
        .arg("--json")
        .arg("--color=never");
    cmd.arg("--max-steps").arg(opts.max_steps.to_string());
    if opts.target == "interp" {
        cmd.arg("--program-count")
            .arg(opts.program_count.to_string());
    }
    if opts.target == "nyuzi" {
        // ISPC's harness runs a test on a host thread with megabytes of stack; a
        // Nyuzi gang gets 16 KiB by default, less than a few tests' local arrays
        // (a varying `float[16][16]` is 16 KiB alone).
        cmd.arg("--gang-stack").arg(NYUZI_GANG_STACK.to_string());
    }
    for (name, value) in params.iter().zip(&values) {
        cmd.arg("--arg").arg(format!("{name}={value}"));
    }
    let finished = run_bounded(cmd, opts.timeout)?;
    let first_error = || {
        finished
            .stderr
            .lines()
            .find(|l| l.starts_with("error"))
            .unwrap_or_else(|| finished.stderr.lines().next().unwrap_or(""))
            .to_string()
    };
    match finished.code {
        Some(0) => {}
        Some(1) => return Err(Outcome::CompileError(first_error())),
        Some(c) => {
            return Err(Outcome::RunError(format!(
                "`{entry}` exited {c}: {}",
                first_error()
            )))
        }
        None => {
            return Err(Outcome::RunError(format!(
                "`{entry}` was killed by a signal"
            )))
        }
    }
    parse_run(&finished.stdout, params.first().map(String::as_str))
        .map_err(|e| Outcome::RunError(format!("`{entry}`: {e}")))
}

fn parse_run(stdout: &str, ret: Option<&str>) -> Result<Ran, String> {
    let json: serde_json::Value =
        serde_json::from_str(stdout).map_err(|e| format!("unreadable --json output: {e}"))?;
    let output = json["output"].as_str().unwrap_or("").to_string();
    let ret = match ret.map(|name| &json["buffers"][name]) {
        Some(serde_json::Value::Array(values)) => values
            .iter()
            .map(|v| v.as_f64().unwrap_or(f64::NAN) as f32)
            .collect(),
        _ => Vec::new(),
    };
    Ok(Ran { ret, output })
}

/// A finished process: its exit code (`None` when a signal ended it) and output.
struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` with its output in files (no pipe can fill up), killing it at `timeout`.
fn run_bounded(mut cmd: Command, timeout: Duration) -> Result<Finished, Outcome> {
    let io_err = |e: std::io::Error| Outcome::RunError(format!("cannot run spmdc: {e}"));
    let out = tempfile().map_err(io_err)?;
    let err = tempfile().map_err(io_err)?;
    cmd.stdin(Stdio::null())
        .stdout(out.try_clone().map_err(io_err)?)
        .stderr(err.try_clone().map_err(io_err)?);
    let mut child = cmd.spawn().map_err(io_err)?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(io_err)? {
            break status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Outcome::RunError(format!(
                "timed out after {} s",
                timeout.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Ok(Finished {
        code: status.code(),
        stdout: read_all(out),
        stderr: read_all(err),
    })
}

fn tempfile() -> std::io::Result<std::fs::File> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("spmdc-ispc-run-{}-{n}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)?;
    // Unlinked at once: the open handles keep it alive, and nothing is left behind.
    std::fs::remove_file(&path)?;
    Ok(file)
}

fn read_all(mut file: std::fs::File) -> String {
    use std::io::Seek as _;
    let mut text = String::new();
    if file.seek(std::io::SeekFrom::Start(0)).is_ok() {
        let _ = file.take(1 << 20).read_to_string(&mut text);
    }
    text
}

impl SuiteReport {
    fn count(&self, kind: &str) -> usize {
        self.results
            .iter()
            .filter(|(_, o)| o.kind() == kind)
            .count()
    }

    /// The summary: counts by verdict, the pass rate over the tests that ran, and the
    /// most common first errors (diagnostic codes and messages, numbers stripped).
    pub fn summary(&self, top: usize) -> String {
        let ran = self.results.len() - self.count("skipped");
        let passed = self.count("pass");
        let mut s = String::new();
        let _ = writeln!(
            s,
            "ISPC functional tests on {} ({} lanes)",
            self.target, self.width
        );
        let _ = writeln!(
            s,
            "{passed} of {ran} passed ({:.1}%); {} skipped by their rules or signature",
            100.0 * passed as f64 / ran.max(1) as f64,
            self.count("skipped")
        );
        for kind in ["compile error", "run error", "mismatch"] {
            let _ = writeln!(s, "  {kind}: {}", self.count(kind));
        }
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        for (_, o) in &self.results {
            if matches!(o, Outcome::CompileError(_) | Outcome::RunError(_)) {
                *reasons.entry(reason_key(o.detail())).or_default() += 1;
            }
        }
        let mut reasons: Vec<_> = reasons.into_iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        if !reasons.is_empty() {
            let _ = writeln!(s, "most common errors:");
        }
        for (reason, n) in reasons.into_iter().take(top) {
            let _ = writeln!(s, "  {n:5}  {reason}");
        }
        s
    }

    /// Whether every test that ran passed.
    pub fn all_passed(&self) -> bool {
        self.results
            .iter()
            .all(|(_, o)| matches!(o, Outcome::Pass | Outcome::Skipped(_)))
    }

    /// One line per test: file, verdict, detail (tab-separated).
    pub fn listing(&self) -> String {
        let mut s = String::new();
        for (name, o) in &self.results {
            let _ = writeln!(
                s,
                "{name}\t{}\t{}",
                o.kind(),
                o.detail().replace(['\t', '\n'], " ")
            );
        }
        s
    }
}

/// Groups messages that differ only in names and numbers: the text up to the first
/// backquote, which keeps the code and the message's kind.
fn reason_key(detail: &str) -> String {
    let cut = detail.find('`').unwrap_or(detail.len());
    detail[..cut].trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_signature_on_task_lines() {
        let text = "#include \"test_static.isph\"\ntask void f_fu(uniform float RET[], uniform float aFOO[], uniform float b) {}\ntask void result(uniform float RET[]) {}\n";
        assert_eq!(signature_of(text), Some(Signature::Fu));
        assert_eq!(signature_of("void f_v(uniform float r[]) {}"), None);
    }

    #[test]
    fn reads_parameter_names() {
        let text =
            "task void f_fi(uniform float RET[], uniform float aFOO[], uniform int bFOO[]) {";
        assert_eq!(
            parameter_names(text, "f_fi").unwrap(),
            vec!["RET", "aFOO", "bFOO"]
        );
        assert_eq!(
            parameter_names("task void print_result() {", "print_result").unwrap(),
            Vec::<String>::new()
        );
        // `xf_v(` is not `f_v(`.
        assert_eq!(parameter_names("void xf_v(int a) {}", "f_v"), None);
    }

    #[test]
    fn rules_later_lines_win() {
        let v = RuleValues::for_target(16);
        assert!(rules_allow("// rule: run on OS=!windows\n", &v));
        assert!(!rules_allow(
            "// rule: skip on arch=*\n// rule: run on arch=xe64\n",
            &v
        ));
        assert!(!rules_allow("// rule: skip on OS=linux\n", &v));
        assert!(rules_allow("// rule: skip on arch=xe64\n", &v));
        assert!(!rules_allow("// rule: skip on target=spmdc.*\n", &v));
    }
}
