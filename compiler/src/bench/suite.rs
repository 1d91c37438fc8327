//! Suite files: what a benchmark suite runs, as data (TOML). A suite lists its
//! kernels with their launches, its configurations (target, machine, compiler
//! switches), the thread targets it is sized for, the metrics of its table and its
//! charts; [`Suite::load`] reads and checks one, and [`Suite::runs`] expands it into
//! the runs (kernel x configuration x size) in a fixed order, every launch computed,
//! so that a bad file is reported before anything runs.
//!
//! The built-in suites ([`BUILTIN`]) are the files of `examples/suites/`, embedded in
//! the binary; their kernel paths are relative to that folder in the repository.
//! The schema is documented in `lang-spec/bench-suites.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::expr::{self, Env};
use super::BenchError;

/// The built-in suites: name and file text, in the order `spmdc bench --help` lists
/// them.
pub const BUILTIN: &[(&str, &str)] = &[
    ("gpu", include_str!("../../../examples/suites/gpu.toml")),
    (
        "uniformity",
        include_str!("../../../examples/suites/uniformity.toml"),
    ),
    ("dac", include_str!("../../../examples/suites/dac.toml")),
    (
        "regdem",
        include_str!("../../../examples/suites/regdem.toml"),
    ),
    (
        "shuffle",
        include_str!("../../../examples/suites/shuffle.toml"),
    ),
    (
        "sim-speed",
        include_str!("../../../examples/suites/sim-speed.toml"),
    ),
];

/// The folder the built-in suites' paths are relative to.
pub fn builtin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/suites")
}

/// How runs become a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// One row per run, with the suite's metrics as columns.
    Runs,
    /// One row per kernel comparing two configurations, with geomean rows.
    Compare,
    /// Register demotion: each run times every allocation `--regalloc auto` weighs
    /// (a hook: the search cannot be written as data; its columns are fixed).
    Regdem,
}

/// A metric as written: a name, or a table with options ([`MetricTable`]); errors
/// point at the whole entry (serde's untagged enums lose the spans inside).
pub type MetricSpec = Spanned<toml::Value>;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricTable {
    pub name: String,
    /// The column's title (default: the name).
    pub title: Option<String>,
    /// `compare` layout: the configuration the value is taken from.
    pub config: Option<String>,
    /// Decimals of a real number.
    pub decimals: Option<usize>,
    /// `change`: the statistic compared, and the configuration it is compared against.
    pub of: Option<String>,
    pub against: Option<String>,
}

/// A metric as the report uses it.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    pub name: String,
    pub title: String,
    pub config: Option<String>,
    pub decimals: Option<usize>,
    pub of: Option<String>,
    pub against: Option<String>,
}

/// `[compare]`: the two configurations and the geomean rows.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareSpec {
    pub base: Spanned<String>,
    pub new: Spanned<String>,
    /// One geomean row per class (`{class, label}`), then `all`.
    #[serde(default)]
    pub groups: Vec<GroupSpec>,
    pub all: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    pub class: String,
    pub label: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigSpec {
    pub name: String,
    pub target: Spanned<String>,
    /// The dac-gpu machine: a preset (`gtx480`, `maxwell`) or a file (relative to
    /// the suite file).
    pub machine: Option<Spanned<String>>,
    #[serde(default)]
    pub switches: Vec<Spanned<String>>,
    /// Also profile the run's IR on the interpreter for its uniform share.
    #[serde(default)]
    pub profile: bool,
    /// `timing` (default) or `functional` (the simulators' functional mode).
    pub mode: Option<Spanned<String>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    pub name: String,
    pub class: Option<String>,
    pub file: Spanned<String>,
    pub entry: Option<Spanned<String>>,
    /// `"header"`: the launch of the file's `spmdc run` header line.
    pub launch: Option<Spanned<String>>,
    #[serde(default, rename = "let")]
    pub lets: Vec<Spanned<String>>,
    pub grid: Option<Spanned<String>>,
    pub block: Option<Spanned<String>>,
    #[serde(default)]
    pub args: Vec<Spanned<String>>,
    /// Constants of the kernel the table can show (`data.KEY` metrics), such as a
    /// paper's figures for it.
    #[serde(default)]
    pub data: BTreeMap<String, toml::Value>,
}

/// The file as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    pub name: String,
    pub description: String,
    pub layout: Layout,
    /// The thread target `T` (default 1M); `spmdc bench --threads` overrides it.
    pub threads: Option<u64>,
    /// A sweep: the thread targets to run at (instead of `threads`).
    #[serde(default)]
    pub sizes: Vec<u64>,
    /// Suite-wide variables computed from `T`, before each kernel's.
    #[serde(default, rename = "let")]
    pub lets: Vec<Spanned<String>>,
    #[serde(default)]
    pub metrics: Vec<MetricSpec>,
    #[serde(default)]
    pub charts: Vec<Spanned<String>>,
    pub compare: Option<CompareSpec>,
    #[serde(rename = "config")]
    pub configs: Vec<ConfigSpec>,
    #[serde(rename = "kernel")]
    pub kernels: Vec<KernelSpec>,
}

/// A checked configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub name: String,
    pub target: Target,
    /// The machine (dac-gpu): a preset name or a resolved file path.
    pub machine: String,
    pub switches: Vec<String>,
    pub profile: bool,
    /// Run the simulator's timing model (else its functional mode).
    pub timing: bool,
}

/// A target a suite runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The reference interpreter at the dac-gpu's gang width (32 lanes): only its
    /// own speed is measured (it is the reference the others are checked against).
    Interp,
    Nyuzi,
    DacGpu,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Interp => "interp",
            Target::Nyuzi => "nyuzi",
            Target::DacGpu => "dac-gpu",
        }
    }
}

/// The compiler switches a configuration may name.
pub const SWITCHES: &[&str] = &[
    "--no-dac",
    "--no-uniformity",
    "--no-skip-empty",
    "--force-cfg-opts",
    "--no-scalar-datapath",
    "--no-inline",
    "--unroll",
    "--no-opt",
    "--shuffle=all",
    "--shuffle=auto",
];

/// The charts a suite may ask for.
pub const CHARTS: &[&str] = &["speedup", "stalls", "occupancy", "sweep", "change", "rates"];

/// A checked kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub class: Option<String>,
    pub path: PathBuf,
    pub entry: String,
    pub launch: LaunchTemplate,
    /// The kernel's constants (`data.KEY` metrics).
    pub data: BTreeMap<String, toml::Value>,
}

/// How a kernel is launched: a template of the thread target, or fixed by its header.
#[derive(Clone, Debug, PartialEq)]
pub enum LaunchTemplate {
    Template {
        lets: Vec<String>,
        grid: Option<String>,
        block: Option<String>,
        args: Vec<String>,
    },
    Header(super::regdem::HeaderLaunch),
}

/// One launch, computed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Launch {
    pub entry: String,
    pub grid: Option<String>,
    pub block: Option<String>,
    pub dynamic_shared: Option<String>,
    pub args: Vec<String>,
    /// Grid x block threads (when both are given).
    pub threads: Option<u64>,
}

/// One run of a suite: a kernel under a configuration at a thread target.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    /// Its place in the suite's order (the order of the table).
    pub index: usize,
    pub kernel: usize,
    pub config: usize,
    pub size: u64,
    pub launch: Launch,
}

/// A checked suite.
#[derive(Clone, Debug)]
pub struct Suite {
    /// The file's text (copied to the output folder for `bench merge`).
    pub text: String,
    /// Where it came from (a path, or `builtin:NAME`).
    pub origin: String,
    pub name: String,
    pub description: String,
    pub layout: Layout,
    pub sizes: Vec<u64>,
    pub lets: Vec<String>,
    pub metrics: Vec<Metric>,
    pub charts: Vec<String>,
    pub compare: Option<Comparison>,
    pub configs: Vec<Config>,
    pub kernels: Vec<Kernel>,
}

/// A checked `[compare]` table.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The configuration compared against, and the one compared.
    pub base: String,
    pub new: String,
    /// Geomean rows: a kernel class and the row's label.
    pub groups: Vec<(String, String)>,
    /// The label of the geomean row over every kernel, if any.
    pub all: Option<String>,
}

/// The default thread target.
pub const DEFAULT_THREADS: u64 = 1 << 20;

/// Where in the file an error is, for [`BenchError::Suite`].
struct Locator<'a> {
    origin: &'a str,
    text: &'a str,
}

impl Locator<'_> {
    fn at(&self, span: std::ops::Range<usize>, message: String, help: &str) -> BenchError {
        let before = &self.text[..span.start.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        BenchError::Suite {
            file: self.origin.to_string(),
            line,
            column,
            message,
            help: help.to_string(),
        }
    }

    fn spanned<T>(&self, s: &Spanned<T>, message: String, help: &str) -> BenchError {
        self.at(s.span(), message, help)
    }
}

fn suggest(word: &str, known: &[&str]) -> String {
    let close = crate::diag::suggest::closest(word, known.iter().copied())
        .map(|c| format!("did you mean `{c}`? "))
        .unwrap_or_default();
    format!("{close}known: {}", known.join(", "))
}

impl Suite {
    /// A built-in suite by name, or a file by path.
    pub fn find(name_or_path: &str) -> Result<Suite, BenchError> {
        if let Some((name, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Suite::parse(text, &format!("builtin:{name}"), &builtin_dir());
        }
        let path = Path::new(name_or_path);
        if !path.exists() && !name_or_path.contains(['/', '.']) {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            return Err(BenchError::UnknownSuite(name_or_path.to_string(), {
                crate::diag::suggest::closest(name_or_path, names.iter().copied())
                    .map(str::to_string)
            }));
        }
        Suite::load(path)
    }

    /// Reads and checks a suite file.
    pub fn load(path: &Path) -> Result<Suite, BenchError> {
        let text = std::fs::read_to_string(path).map_err(|e| BenchError::Suite {
            file: path.display().to_string(),
            line: 0,
            column: 0,
            message: format!("cannot read the suite file: {e}"),
            help: "give a built-in suite's name or the path of a suite file".into(),
        })?;
        let dir = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        Suite::parse(&text, &path.display().to_string(), &dir)
    }

    /// Checks `text` (from `origin`; relative paths are relative to `dir`).
    pub fn parse(text: &str, origin: &str, dir: &Path) -> Result<Suite, BenchError> {
        let loc = Locator { origin, text };
        let file: SuiteFile = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            loc.at(
                span,
                e.message().trim().to_string(),
                "the suite file schema is in lang-spec/bench-suites.md",
            )
        })?;
        let configs = file
            .configs
            .iter()
            .map(|c| check_config(c, &loc, dir))
            .collect::<Result<Vec<_>, _>>()?;
        let kernels = file
            .kernels
            .iter()
            .map(|k| check_kernel(k, &loc, dir))
            .collect::<Result<Vec<_>, _>>()?;
        if configs.is_empty() || kernels.is_empty() {
            return Err(loc.at(
                0..0,
                "a suite needs at least one [[config]] and one [[kernel]]".into(),
                "see lang-spec/bench-suites.md",
            ));
        }
        let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
        let metrics = super::report::check_metrics(&file, &loc_fn(&loc), &names)?;
        let charts = file
            .charts
            .iter()
            .map(|c| {
                if CHARTS.contains(&c.get_ref().as_str()) {
                    Ok(c.get_ref().clone())
                } else {
                    Err(loc.spanned(
                        c,
                        format!("no chart `{}`", c.get_ref()),
                        &suggest(c.get_ref(), CHARTS),
                    ))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let compare = match (&file.compare, file.layout) {
            (Some(c), _) => {
                for n in [&c.base, &c.new] {
                    if !names.contains(&n.get_ref().as_str()) {
                        return Err(loc.spanned(
                            n,
                            format!("no configuration `{}`", n.get_ref()),
                            &suggest(n.get_ref(), &names),
                        ));
                    }
                }
                let groups = c
                    .groups
                    .iter()
                    .map(|g| (g.class.clone(), g.label.clone()))
                    .collect();
                Some(Comparison {
                    base: c.base.get_ref().clone(),
                    new: c.new.get_ref().clone(),
                    groups,
                    all: c.all.clone(),
                })
            }
            (None, Layout::Compare) => {
                return Err(loc.at(
                    0..0,
                    "layout `compare` needs a [compare] table (base, new)".into(),
                    "add [compare] base = \"CONFIG\" new = \"CONFIG\"",
                ))
            }
            (None, _) => None,
        };
        let sizes = if file.sizes.is_empty() {
            vec![file.threads.unwrap_or(DEFAULT_THREADS)]
        } else {
            file.sizes.clone()
        };
        let suite = Suite {
            text: text.to_string(),
            origin: origin.to_string(),
            name: file.name.clone(),
            description: file.description.clone(),
            layout: file.layout,
            sizes,
            lets: file.lets.iter().map(|l| l.get_ref().clone()).collect(),
            metrics,
            charts,
            compare,
            configs,
            kernels,
        };
        // Every launch at every size is computed now: a bad expression is an error
        // before anything runs, at its line.
        for (i, k) in file.kernels.iter().enumerate() {
            for &size in &suite.sizes {
                suite.launch(i, size).map_err(|m| {
                    let at = k.lets.first().or(k.grid.as_ref()).unwrap_or(&k.file);
                    loc.spanned(at, format!("kernel `{}` at T = {size}: {m}", k.name), "")
                })?;
            }
        }
        Ok(suite)
    }

    /// The suite at thread target(s) `sizes` instead of its own.
    pub fn with_sizes(mut self, sizes: Vec<u64>) -> Result<Suite, BenchError> {
        self.sizes = sizes;
        for k in 0..self.kernels.len() {
            for &s in &self.sizes {
                self.launch(k, s).map_err(BenchError::Options)?;
            }
        }
        Ok(self)
    }

    /// Every configuration's dac-gpu machine replaced by `machine`.
    pub fn with_machine(mut self, machine: &str) -> Result<Suite, BenchError> {
        sim::gpu::GpuConfig::load(machine).map_err(BenchError::Options)?;
        for c in &mut self.configs {
            c.machine = machine.to_string();
        }
        Ok(self)
    }

    /// Kernel `k`'s launch at thread target `size`.
    pub fn launch(&self, k: usize, size: u64) -> Result<Launch, String> {
        let kernel = &self.kernels[k];
        match &kernel.launch {
            LaunchTemplate::Header(h) => Ok(Launch {
                entry: h.entry.clone(),
                grid: h.grid.clone(),
                block: h.block.clone(),
                dynamic_shared: h.dynamic_shared.clone(),
                args: h.args.clone(),
                threads: threads_of(h.grid.as_deref(), h.block.as_deref()),
            }),
            LaunchTemplate::Template {
                lets,
                grid,
                block,
                args,
            } => {
                let mut env = Env::new();
                env.insert("T".into(), size);
                for l in self.lets.iter().chain(lets) {
                    expr::bind(l, &mut env)?;
                }
                let fill = |s: &Option<String>| {
                    s.as_deref().map(|s| expr::interpolate(s, &env)).transpose()
                };
                let (grid, block) = (fill(grid)?, fill(block)?);
                Ok(Launch {
                    entry: kernel.entry.clone(),
                    threads: threads_of(grid.as_deref(), block.as_deref()),
                    grid,
                    block,
                    dynamic_shared: None,
                    args: args
                        .iter()
                        .map(|a| expr::interpolate(a, &env))
                        .collect::<Result<_, _>>()?,
                })
            }
        }
    }

    /// The runs in the suite's order: kernels, then configurations, then sizes.
    pub fn runs(&self) -> Vec<RunSpec> {
        let mut out = Vec::new();
        for k in 0..self.kernels.len() {
            for c in 0..self.configs.len() {
                for &size in &self.sizes {
                    // Checked when the suite was built.
                    let Ok(launch) = self.launch(k, size) else {
                        continue;
                    };
                    out.push(RunSpec {
                        index: out.len(),
                        kernel: k,
                        config: c,
                        size,
                        launch,
                    });
                }
            }
        }
        out
    }
}

/// `loc` as a function the metric checker can call without knowing the locator.
fn loc_fn<'a>(
    loc: &'a Locator<'a>,
) -> impl Fn(std::ops::Range<usize>, String, &str) -> BenchError + 'a {
    move |span, message, help| loc.at(span, message, help)
}

/// The product of a grid's and a block's dimensions.
fn threads_of(grid: Option<&str>, block: Option<&str>) -> Option<u64> {
    let dims = |s: &str| -> Option<u64> {
        s.split(',')
            .map(|d| d.trim().parse::<u64>().ok())
            .try_fold(1u64, |p, d| p.checked_mul(d?))
    };
    dims(grid?)?.checked_mul(dims(block?)?)
}

fn check_config(c: &ConfigSpec, loc: &Locator<'_>, dir: &Path) -> Result<Config, BenchError> {
    let target = match c.target.get_ref().as_str() {
        "interp" => Target::Interp,
        "nyuzi" => Target::Nyuzi,
        "dac-gpu" => Target::DacGpu,
        other => {
            return Err(loc.spanned(
                &c.target,
                format!("no target `{other}` for a benchmark"),
                &suggest(other, &["interp", "nyuzi", "dac-gpu"]),
            ))
        }
    };
    let timing = match c.mode.as_ref().map(|m| m.get_ref().as_str()) {
        None | Some("timing") => true,
        Some("functional") => false,
        Some(other) => {
            let at = c.mode.as_ref().map_or(0..0, |m| m.span());
            return Err(loc.at(
                at,
                format!("no mode `{other}`"),
                &suggest(other, &["timing", "functional"]),
            ));
        }
    };
    let machine = match &c.machine {
        None => "gtx480".to_string(),
        Some(m) => {
            let name = m.get_ref();
            let preset = sim::gpu::config::PRESETS.iter().any(|(p, _)| p == name);
            let arg = if preset {
                name.clone()
            } else {
                dir.join(name).display().to_string()
            };
            sim::gpu::GpuConfig::load(&arg).map_err(|e| {
                let presets: Vec<&str> =
                    sim::gpu::config::PRESETS.iter().map(|(p, _)| *p).collect();
                loc.spanned(
                    m,
                    format!("bad machine `{name}`: {e}"),
                    &format!("a preset or a machine file; {}", suggest(name, &presets)),
                )
            })?;
            arg
        }
    };
    for s in &c.switches {
        if !SWITCHES.contains(&s.get_ref().as_str()) {
            return Err(loc.spanned(
                s,
                format!("no switch `{}`", s.get_ref()),
                &suggest(s.get_ref(), SWITCHES),
            ));
        }
    }
    Ok(Config {
        name: c.name.clone(),
        target,
        machine,
        switches: c.switches.iter().map(|s| s.get_ref().clone()).collect(),
        profile: c.profile,
        timing,
    })
}

fn check_kernel(k: &KernelSpec, loc: &Locator<'_>, dir: &Path) -> Result<Kernel, BenchError> {
    let path = dir.join(k.file.get_ref());
    let text = std::fs::read_to_string(&path).map_err(|e| {
        loc.spanned(
            &k.file,
            format!("kernel `{}`: cannot read {}: {e}", k.name, path.display()),
            "paths are relative to the suite file",
        )
    })?;
    let (entry, launch) = match k.launch.as_ref().map(|l| l.get_ref().as_str()) {
        Some("header") => {
            let h = super::regdem::header_launch(&text).ok_or_else(|| {
                loc.spanned(
                    &k.file,
                    format!(
                        "kernel `{}`: {} has no `spmdc run` header line",
                        k.name,
                        path.display()
                    ),
                    "write the launch as grid, block and args instead",
                )
            })?;
            (h.entry.clone(), LaunchTemplate::Header(h))
        }
        Some(other) => {
            let at = k.launch.as_ref().map_or(0..0, |l| l.span());
            return Err(loc.at(
                at,
                format!("launch `{other}`: the only named launch is `header`"),
                "or give grid, block and args",
            ));
        }
        None => {
            let entry = k.entry.as_ref().ok_or_else(|| {
                loc.spanned(&k.file, format!("kernel `{}` has no `entry`", k.name), "")
            })?;
            let all = |v: &[Spanned<String>]| v.iter().map(|s| s.get_ref().clone()).collect();
            let one = |s: &Option<Spanned<String>>| s.as_ref().map(|s| s.get_ref().clone());
            (
                entry.get_ref().clone(),
                LaunchTemplate::Template {
                    lets: all(&k.lets),
                    grid: one(&k.grid),
                    block: one(&k.block),
                    args: all(&k.args),
                },
            )
        }
    };
    // A cheap check that the entry exists, so a typo is caught before anything runs.
    let defined = text.match_indices(entry.as_str()).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + entry.len()..].trim_start().chars().next();
        before.is_none_or(|c| !c.is_alphanumeric() && c != '_') && after == Some('(')
    });
    if !defined {
        let at = k.entry.as_ref().map_or(k.file.span(), |e| e.span());
        return Err(loc.at(
            at,
            format!(
                "kernel `{}`: no function `{entry}` in {}",
                k.name,
                path.display()
            ),
            "the entry is the name of a `task` or `export` function of the file",
        ));
    }
    Ok(Kernel {
        name: k.name.clone(),
        class: k.class.clone(),
        path,
        entry,
        launch,
        data: k.data.clone(),
    })
}
