//! `spmdc ispc-examples CHECKOUT --ispc ISPC`: ISPC's example programs
//! (`examples/cpu` of a checkout of ispc/ispc), compared bit for bit with ISPC.
//!
//! For each example of the [manifest](manifest) the runner builds the unchanged host
//! program against ISPC's own build of the example's kernels, at the gang width of the
//! spmdc target compared (`--target=avx512skx-x16` or `-x32`, with
//! `--opt=disable-fma`), and links it with a generated [wrapper](wrapper) around each
//! exported function the manifest names. Running the host records the first call of
//! each: the arguments ISPC's function received and the outputs it left. Each recorded
//! call is then [replayed](replay) on spmdc, on every target asked for, and each output
//! [compared](compare) with ISPC's, bit for bit or within the manifest's tolerance.
//!
//! Nothing of ISPC's is copied: the sources are read from the checkout, and the build
//! lives in a temporary directory (or `--keep DIR`).

pub mod compare;
pub mod deferred;
pub mod manifest;
pub mod replay;
pub mod volume;
pub mod wrapper;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::driver::FrontResult;
use compare::{Comparison, Verdict};
use manifest::{Example, Function, Manifest, Rule, Scene};
pub use replay::{Limits, Target};

/// What one run of the examples needs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The root of a checkout of ispc/ispc.
    pub checkout: PathBuf,
    /// The `ispc` executable.
    pub ispc: PathBuf,
    pub targets: Vec<Target>,
    /// Only the examples whose name contains one of these (all when empty).
    pub filters: Vec<String>,
    /// Keep the builds and captures here (otherwise a temporary directory, removed).
    pub keep: Option<PathBuf>,
    pub limits: Limits,
    /// Wall-clock limit of one host program run.
    pub host_timeout: Duration,
}

/// The outcome of one function on one target.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Replayed: each output and its comparison.
    Compared(Vec<(String, Comparison)>),
    /// Not compared, for a reason outside spmdc's code generation (a data file missing
    /// from the checkout, a signature the launcher does not bind, a function the host
    /// did not call).
    Skipped(String),
    /// spmdc failed: it did not compile the function or the run trapped.
    Failed(String),
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub example: String,
    pub function: String,
    /// The target's label (`interp x16`), or `-` when no target ran.
    pub target: String,
    pub rule: Rule,
    pub status: Status,
    /// Seconds the replay took.
    pub seconds: f64,
}

impl Row {
    fn new(ex: &Example, f: &Function, target: String, status: Status, seconds: f64) -> Row {
        Row {
            example: ex.name.clone(),
            function: f.name.clone(),
            target,
            rule: f.rule(),
            status,
            seconds,
        }
    }

    /// Whether the row counts against the run.
    pub fn failed(&self) -> bool {
        match &self.status {
            Status::Compared(outs) => outs.iter().any(|(_, c)| c.verdict == Verdict::Differs),
            Status::Skipped(_) => false,
            Status::Failed(_) => true,
        }
    }

    fn verdict_text(&self) -> String {
        match &self.status {
            Status::Skipped(why) => format!("cannot run: {why}"),
            Status::Failed(why) => format!("FAILED: {why}"),
            Status::Compared(outs) => {
                let worst = outs.iter().map(|(_, c)| c.verdict).max();
                match worst {
                    None => "no outputs".into(),
                    Some(Verdict::Exact) => "exact".into(),
                    Some(Verdict::WithinTolerance) => {
                        let differing: usize = outs.iter().map(|(_, c)| c.differing).sum();
                        match self.rule {
                            Rule::Units(n) => format!("within {n} unit ({differing} differ)"),
                            Rule::Relative(tol) => {
                                let max_rel =
                                    outs.iter().map(|(_, c)| c.max_rel).fold(0.0, f64::max);
                                format!(
                                    "within {tol:e} ({differing} differ, max rel {max_rel:.1e})"
                                )
                            }
                            Rule::Exact => format!("{differing} differ"),
                        }
                    }
                    Some(Verdict::Differs) => {
                        let (name, c) = outs
                            .iter()
                            .find(|(_, c)| c.verdict == Verdict::Differs)
                            .expect("a differing output");
                        let mut s = String::from("DIFFERS");
                        if let Some((ours, theirs)) = c.length_mismatch {
                            write!(s, " {name}: {ours} bytes, ISPC {theirs}").unwrap();
                        } else if let Some((i, ours, theirs)) = &c.first_bad {
                            write!(s, " {name}[{i}]: {ours}, ISPC {theirs}").unwrap();
                        }
                        write!(s, " ({} of {} differ", c.differing, c.elements).unwrap();
                        if c.max_rel > 0.0 {
                            write!(s, ", max rel {:.1e}", c.max_rel).unwrap();
                        }
                        s.push(')');
                        s
                    }
                }
            }
        }
    }
}

/// The report of a run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub ispc_version: String,
    pub rows: Vec<Row>,
}

impl Report {
    pub fn failed(&self) -> bool {
        self.rows.iter().any(Row::failed)
    }

    /// A Markdown table, one row per function and target, and a count.
    pub fn table(&self) -> String {
        let mut s = String::new();
        writeln!(
            s,
            "| example | function | target | outputs | elements | verdict |"
        )
        .unwrap();
        writeln!(s, "|---|---|---|---:|---:|---|").unwrap();
        for r in &self.rows {
            let (outs, elems) = match &r.status {
                Status::Compared(o) => (
                    o.iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    o.iter().map(|(_, c)| c.elements).sum::<usize>().to_string(),
                ),
                _ => ("-".into(), "-".into()),
            };
            writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                r.example,
                r.function,
                r.target,
                outs,
                elems,
                r.verdict_text()
            )
            .unwrap();
        }
        let count = |f: &dyn Fn(&Row) -> bool| self.rows.iter().filter(|r| f(r)).count();
        let exact = count(
            &|r| matches!(&r.status, Status::Compared(o) if o.iter().all(|(_, c)| c.verdict == Verdict::Exact)),
        );
        let within = count(&|r| matches!(&r.status, Status::Compared(_)) && !r.failed()) - exact;
        let skipped = count(&|r| matches!(r.status, Status::Skipped(_)));
        let failed = count(&|r| r.failed());
        writeln!(
            s,
            "\n{} rows: {exact} exact, {within} within tolerance, {failed} failing, {skipped} not compared ({})",
            self.rows.len(),
            self.ispc_version
        )
        .unwrap();
        s
    }
}

/// A problem that stops the whole run: bad input or a build that fails.
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The examples directory of a checkout, checked.
pub fn examples_dir(checkout: &Path) -> Result<PathBuf, Error> {
    let dir = checkout.join("examples").join("cpu");
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(Error(format!(
            "{} has no examples/cpu: give the root of a checkout of https://github.com/ispc/ispc",
            checkout.display()
        )))
    }
}

/// `ispc --version`'s first line, which also checks that it runs.
pub fn ispc_version(ispc: &Path) -> Result<String, Error> {
    let out = Command::new(ispc)
        .arg("--version")
        .output()
        .map_err(|e| Error(format!("cannot run ISPC at {}: {e}", ispc.display())))?;
    if !out.status.success() {
        return Err(Error(format!(
            "{} --version failed ({})",
            ispc.display(),
            out.status
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().unwrap_or("ISPC").trim().to_string())
}

/// Runs the examples, printing each row to standard error as it is done.
pub fn run(opts: &Options) -> Result<Report, Error> {
    let examples = examples_dir(&opts.checkout)?;
    let ispc_version = ispc_version(&opts.ispc)?;
    let manifest = Manifest::builtin();
    let selected: Vec<&Example> = manifest
        .example
        .iter()
        .filter(|e| {
            opts.filters.is_empty() || opts.filters.iter().any(|f| e.name.contains(f.as_str()))
        })
        .collect();
    if selected.is_empty() {
        let names: Vec<&str> = manifest.example.iter().map(|e| e.name.as_str()).collect();
        return Err(Error(format!(
            "no example matches `{}` (the examples: {})",
            opts.filters.join("`, `"),
            names.join(", ")
        )));
    }
    let (root, temporary) = match &opts.keep {
        Some(dir) => (dir.clone(), false),
        None => (
            std::env::temp_dir().join(format!("spmdc-ispc-examples-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&root)
        .map_err(|e| Error(format!("cannot create {}: {e}", root.display())))?;
    let mut report = Report {
        ispc_version,
        rows: Vec::new(),
    };
    let result = (|| {
        for ex in selected {
            let rows = run_example(opts, &examples, &root, ex)?;
            report.rows.extend(rows);
        }
        Ok(())
    })();
    if temporary {
        let _ = std::fs::remove_dir_all(&root);
    }
    result.map(|()| report)
}

fn progress(row: &Row) {
    eprintln!(
        "{} {} on {}: {} ({:.1} s)",
        row.example,
        row.function,
        row.target,
        row.verdict_text(),
        row.seconds
    );
}

/// One example: its data checked, ISPC's builds captured, every function replayed on
/// every target.
fn run_example(
    opts: &Options,
    examples: &Path,
    root: &Path,
    ex: &Example,
) -> Result<Vec<Row>, Error> {
    let src = examples.join(ex.dir());
    if !src.is_dir() {
        return Err(Error(format!(
            "{} is missing from the checkout",
            src.display()
        )));
    }
    let missing = ex.data.iter().find(|d| !src.join(d).exists());
    let ispc_files: Vec<PathBuf> = ex.ispc.iter().map(|f| src.join(f)).collect();
    // The signatures, from spmdc's own reading of the sources.
    let mut fronts_16 = Vec::new();
    for f in &ispc_files {
        fronts_16.push(
            replay::compile(f, Target::Interp(16))
                .map_err(|e| Error(format!("{}: {e}", ex.name)))?,
        );
    }
    let mut rows = Vec::new();
    let mut wrapped = Vec::new();
    // Functions replayed through a driver, from the scene rather than a capture.
    let driven: Vec<&Function> = ex.function.iter().filter(|f| f.driver.is_some()).collect();
    for f in ex.function.iter().filter(|f| f.driver.is_none()) {
        let sig = fronts_16
            .iter()
            .map(|front| replay::signature(front, &f.name))
            .find(Result::is_ok)
            .unwrap_or_else(|| replay::signature(&fronts_16[0], &f.name));
        match sig {
            Ok(sig) => wrapped.push((f, sig)),
            Err(e) => {
                let e = e.lines().map(str::trim).collect::<Vec<_>>().join("; ");
                let mut why = format!("the launcher does not bind it: {e}");
                if let Some(m) = missing {
                    why = format!("the data file {m} is not in the checkout, and {why}");
                }
                let row = Row::new(ex, f, "-".into(), Status::Skipped(why), 0.0);
                progress(&row);
                rows.push(row);
            }
        }
    }
    if let Some(m) = missing {
        for (f, _) in &wrapped {
            let row = Row::new(
                ex,
                f,
                "-".into(),
                Status::Skipped(format!("the data file {m} is not in the checkout")),
                0.0,
            );
            progress(&row);
            rows.push(row);
        }
        return Ok(rows);
    }
    if wrapped.is_empty() && driven.is_empty() {
        return Ok(rows);
    }
    let functions: Vec<wrapper::Wrapped> = wrapped
        .iter()
        .map(|(f, sig)| wrapper::Wrapped {
            sig,
            lengths: &f.lengths,
        })
        .collect();
    let wrapper_c =
        wrapper::wrapper_c(&functions).map_err(|e| Error(format!("{}: manifest: {e}", ex.name)))?;
    let widths: BTreeSet<u32> = opts.targets.iter().map(|t| t.width()).collect();
    let mut captures = Vec::new();
    for w in widths {
        let build = root.join(&ex.name).join(format!("x{w}"));
        let names: Vec<&str> = wrapped.iter().map(|(f, _)| f.name.as_str()).collect();
        let (capture, mut host_failure) =
            build_and_capture(opts, &src, &build, ex, w, &wrapper_c, &names)?;
        if host_failure.is_none() {
            for f in &driven {
                let replay = f.replay.as_deref().unwrap_or_default();
                let image = build.join(deferred::IMAGE);
                let made = deferred::synthesize_capture(
                    &build.join(Scene::Deferred.file()),
                    &image,
                    &capture,
                    replay,
                );
                if let Err(e) = made {
                    host_failure = Some(e);
                }
            }
        }
        if let Some(why) = &host_failure {
            eprintln!("{}: {why}", ex.name);
        }
        captures.push((w, capture, host_failure));
    }
    for &target in &opts.targets {
        let (_, capture, host_failure) = captures
            .iter()
            .find(|(w, _, _)| *w == target.width())
            .expect("a capture per width");
        let mut fronts = Vec::new();
        let mut compile_error = None;
        for f in &ispc_files {
            match replay::compile(f, target) {
                Ok(front) => fronts.push(front),
                Err(e) => compile_error = Some(e),
            }
        }
        for (f, _) in &wrapped {
            let start = Instant::now();
            let status = if let Some(e) = &compile_error {
                Status::Failed(e.clone())
            } else if !replay::captured(capture, &f.name) {
                Status::Skipped(match host_failure {
                    Some(why) => format!("ISPC's build stopped before calling it: {why}"),
                    None => "the host program does not call it".into(),
                })
            } else {
                match fronts
                    .iter()
                    .find_map(|front| replay::signature(front, &f.name).ok().map(|s| (front, s)))
                {
                    None => Status::Failed(format!("spmdc finds no `{}`", f.name)),
                    Some((front, sig)) => {
                        match replay::replay(front, &sig, capture, target, f.rule(), opts.limits) {
                            Ok(outs) => Status::Compared(outs),
                            Err(e) => Status::Failed(e),
                        }
                    }
                }
            };
            let row = Row::new(ex, f, target.label(), status, start.elapsed().as_secs_f64());
            progress(&row);
            rows.push(row);
        }
        for f in &driven {
            let start = Instant::now();
            let status = replay_driven(
                f,
                &src,
                &root.join(&ex.name),
                capture,
                host_failure,
                target,
                opts,
            );
            let row = Row::new(ex, f, target.label(), status, start.elapsed().as_secs_f64());
            progress(&row);
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Replays function `f` through its driver, from the call made in `capture` from the
/// scene.
fn replay_driven(
    f: &Function,
    src: &Path,
    dir: &Path,
    capture: &Path,
    host_failure: &Option<String>,
    target: Target,
    opts: &Options,
) -> Status {
    let (Some(driver), Some(entry)) = (f.driver.as_deref(), f.replay.as_deref()) else {
        return Status::Failed("a driven function without its driver".into());
    };
    if !replay::captured(capture, entry) {
        return Status::Skipped(match host_failure {
            Some(why) => format!("no call to replay: {why}"),
            None => "no call to replay".into(),
        });
    }
    let front = match compile_driver(driver, src, dir, target) {
        Ok(front) => front,
        Err(e) => return Status::Failed(e),
    };
    match replay::signature(&front, entry) {
        Ok(sig) => match replay::replay(&front, &sig, capture, target, f.rule(), opts.limits) {
            Ok(outs) => Status::Compared(outs),
            Err(e) => Status::Failed(e),
        },
        Err(e) => Status::Failed(e),
    }
}

/// The text of driver `name` (a file of `ispc_examples/drivers/`).
pub fn driver_source(name: &str) -> Option<&'static str> {
    match name {
        "deferred.ispc" => Some(include_str!("drivers/deferred.ispc")),
        _ => None,
    }
}

/// Compiles driver `name` for `target`, with `src` (the example's directory) on the
/// include path, from a copy in `dir`.
fn compile_driver(
    name: &str,
    src: &Path,
    dir: &Path,
    target: Target,
) -> Result<FrontResult, String> {
    let text = driver_source(name).ok_or_else(|| format!("no driver `{name}`"))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let file = dir.join(name);
    std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    replay::compile_with(&file, target, &[src.to_path_buf()])
}

/// Runs `cmd`, logging it and its output to `log`; a failure is an error naming the log.
fn run_logged(mut cmd: Command, log: &Path, what: &str) -> Result<(), Error> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error(format!("cannot write {}: {e}", log.display())))?;
    let _ = writeln!(file, "+ {cmd:?}");
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error(format!("{what}: cannot run {:?}: {e}", cmd.get_program())))?;
    let _ = file.write_all(&out.stdout);
    let _ = file.write_all(&out.stderr);
    if out.status.success() {
        Ok(())
    } else {
        let tail: Vec<&str> = std::str::from_utf8(&out.stderr)
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(3)
            .collect();
        Err(Error(format!(
            "{what} failed ({}): {}; the whole log is {}",
            out.status,
            tail.join(" / "),
            log.display()
        )))
    }
}

/// The examples' shared directory (`examples/common`, with `tasksys.cpp`).
fn common_dir(examples: &Path) -> PathBuf {
    let up = examples.parent().map(|p| p.join("common"));
    match up {
        Some(d) if d.join("tasksys.cpp").is_file() => d,
        _ => examples.join("common"),
    }
}

/// The size of a generated `deferred` scene: small enough that the simulators render
/// it in seconds to a minute, with the example's tiles (16 x 16) and all its lights.
const SCENE_WIDTH: u32 = 256;
const SCENE_HEIGHT: u32 = 128;

/// Writes `scene` into `build` for the host of the example in `src`.
fn write_scene(scene: Scene, src: &Path, build: &Path) -> Result<(), Error> {
    let file = build.join(scene.file());
    match scene {
        Scene::Deferred => {
            let bytes = deferred::deferred_scene(SCENE_WIDTH, SCENE_HEIGHT, deferred::LIGHTS);
            std::fs::write(&file, bytes)
                .map_err(|e| Error(format!("cannot write {}: {e}", file.display())))
        }
        Scene::Volume => {
            volume::write_scaled_camera(&src.join(volume::CAMERA), &file, volume::FACTOR)
                .map_err(Error)
        }
    }
}

/// Builds `ex` with ISPC at gang width `width` and the capture wrapper in `build`,
/// runs its host program there, and returns the capture directory and, when the host
/// program failed (the calls it made before are still captured), how.
fn build_and_capture(
    opts: &Options,
    src: &Path,
    build: &Path,
    ex: &Example,
    width: u32,
    wrapper_c: &str,
    functions: &[&str],
) -> Result<(PathBuf, Option<String>), Error> {
    let what = |step: &str| format!("{} (x{width}): {step}", ex.name);
    let capture = build.join("capture");
    if build.exists() {
        std::fs::remove_dir_all(build)
            .map_err(|e| Error(format!("cannot clear {}: {e}", build.display())))?;
    }
    std::fs::create_dir_all(&capture)
        .map_err(|e| Error(format!("cannot create {}: {e}", capture.display())))?;
    let log = build.join("build.log");
    let nice = |program: &Path| {
        let mut c = Command::new("nice");
        c.arg("-n").arg("10").arg(program);
        c
    };
    let mut objects = Vec::new();
    for f in &ex.ispc {
        let obj = build.join(format!("{f}.o"));
        let mut c = nice(&opts.ispc);
        c.arg(src.join(f))
            .args(["--opt=disable-fma", "-O2", "--pic"])
            .arg(format!("--target=avx512skx-x{width}"))
            .arg("-h")
            .arg(build.join(Example::header_of(f)))
            .arg("-o")
            .arg(&obj);
        run_logged(c, &log, &what(&format!("ispc {f}")))?;
        objects.push(obj);
    }
    let wrapper_file = build.join("spmdc_capture.c");
    std::fs::write(&wrapper_file, wrapper_c)
        .map_err(|e| Error(format!("cannot write {}: {e}", wrapper_file.display())))?;
    let mut sources: Vec<PathBuf> = ex.host.iter().map(|h| src.join(h)).collect();
    if ex.tasksys {
        let examples = src.parent().unwrap_or(src);
        sources.push(common_dir(examples).join("tasksys.cpp"));
    }
    sources.push(wrapper_file);
    for (i, s) in sources.iter().enumerate() {
        let stem = s
            .file_stem()
            .map_or("source".into(), |n| n.to_string_lossy().to_string());
        let obj = build.join(format!("{i}-{stem}.o"));
        let is_c = s.extension().is_some_and(|e| e == "c");
        let mut c = nice(Path::new(if is_c { "gcc" } else { "g++" }));
        c.arg("-O2");
        if !is_c {
            c.arg("-std=c++17");
        }
        c.arg("-I").arg(build).arg("-c").arg(s).arg("-o").arg(&obj);
        run_logged(c, &log, &what(&format!("compiling {}", s.display())))?;
        objects.push(obj);
    }
    let exe = build.join(&ex.name);
    let mut c = nice(Path::new("g++"));
    c.arg("-o").arg(&exe).args(&objects);
    for f in functions {
        c.arg(format!("-Wl,--wrap={f}"));
    }
    c.args(["-lpthread", "-lm"]);
    run_logged(c, &log, &what("linking"))?;
    if let Some(scene) = ex.scene {
        write_scene(scene, src, build)?;
    }
    // The host program, from the build directory (it writes its images there).
    let args: Vec<String> = ex
        .args
        .iter()
        .map(|a| {
            a.replace("{src}", &src.to_string_lossy())
                .replace("{build}", &build.to_string_lossy())
        })
        .collect();
    let out_file = |name: &str| {
        std::fs::File::create(build.join(name))
            .map_err(|e| Error(format!("cannot write in {}: {e}", build.display())))
    };
    let mut child = nice(&exe)
        .args(&args)
        .current_dir(build)
        .env(wrapper::CAPTURE_ENV, &capture)
        .stdin(Stdio::null())
        .stdout(out_file("host.stdout")?)
        .stderr(out_file("host.stderr")?)
        .spawn()
        .map_err(|e| {
            Error(format!(
                "{}: cannot run {}: {e}",
                what("host"),
                exe.display()
            ))
        })?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > opts.host_timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error(format!(
                    "{}: the host program ran longer than {} s",
                    what("host"),
                    opts.host_timeout.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(Error(format!("{}: {e}", what("host")))),
        }
    };
    if status.success() {
        return Ok((capture, None));
    }
    // Its last words (an assertion, for instance) say why.
    let said = ["host.stderr", "host.stdout"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(build.join(f)).ok())
        .filter_map(|t| {
            t.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
        })
        .next();
    let why = format!(
        "the host program (x{width}) failed ({status}){}",
        said.map_or(String::new(), |s| format!(": {}", s.trim()))
    );
    Ok((capture, Some(why)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: Status, rule: Rule) -> Row {
        Row {
            example: "ex".into(),
            function: "f".into(),
            target: "nyuzi".into(),
            rule,
            status,
            seconds: 0.5,
        }
    }

    fn output(ours: &[f32], theirs: &[f32], rule: Rule) -> Status {
        let b = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        Status::Compared(vec![(
            "out".into(),
            compare::compare(crate::launch::ElemType::F32, &b(ours), &b(theirs), rule),
        )])
    }

    #[test]
    fn the_table_gives_each_verdict_and_only_differences_and_failures_fail() {
        let tol = Rule::Relative(1e-5);
        let report = Report {
            ispc_version: "ISPC 1.30.0".into(),
            rows: vec![
                row(output(&[1.0, 2.0], &[1.0, 2.0], Rule::Exact), Rule::Exact),
                row(output(&[1.0, 2.0], &[1.0, 2.000001], tol), tol),
                row(
                    Status::Skipped("the data file d.bin is not in the checkout".into()),
                    tol,
                ),
            ],
        };
        assert!(!report.failed());
        let table = report.table();
        assert!(
            table.contains("| ex | f | nyuzi | out | 2 | exact |"),
            "{table}"
        );
        assert!(
            table.contains("| within 1e-5 (1 differ, max rel 4.8e-7) |"),
            "{table}"
        );
        assert!(table.contains("| cannot run: the data file d.bin is not in the checkout |"));
        assert!(
            table.contains(
                "3 rows: 1 exact, 1 within tolerance, 0 failing, 1 not compared (ISPC 1.30.0)"
            ),
            "{table}"
        );

        let differs = row(output(&[1.0, 2.5], &[1.0, 2.0], Rule::Exact), Rule::Exact);
        assert!(differs.failed());
        assert_eq!(
            differs.verdict_text(),
            "DIFFERS out[1]: 2.5, ISPC 2 (1 of 2 differ, max rel 2.0e-1)"
        );
        assert!(row(Status::Failed("trapped".into()), Rule::Exact).failed());
    }

    #[test]
    fn a_checkout_without_examples_and_a_missing_ispc_are_clear_errors() {
        let e = examples_dir(Path::new("/nonexistent/ispc")).unwrap_err();
        assert!(e.0.contains("has no examples/cpu"), "{e}");
        let e = ispc_version(Path::new("/nonexistent/bin/ispc")).unwrap_err();
        assert!(
            e.0.contains("cannot run ISPC at /nonexistent/bin/ispc"),
            "{e}"
        );
    }
}
