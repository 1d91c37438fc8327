//! Differential testing: every generated program ([`crate::gen`]) runs on the
//! interpreter, nyuzi and dac-gpu (functional and timing), under pass switches on and
//! off, and each run's buffers and output must equal the reference interpreter's at
//! the same gang width. A difference, a trap, a compile error, a panic or a run past
//! the step limit is a failure, reported with the seed and the configuration
//! (`spmdc difftest`), and [`reduce`] shrinks the program that shows it.
//!
//! Results are deterministic: a seed fixes the program, its launch and the random
//! configurations it runs under, whatever `--jobs` and `--shard` say.

pub mod config;
pub mod reduce;
pub mod run;

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::gen::{self, rng::Rng};
use config::Config;
use run::{LaunchLine, Outcome};

/// What went wrong in one configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureKind {
    /// The reference itself did not run the program: a generator bug, or a bug of
    /// the front end or the interpreter.
    InvalidProgram,
    /// The buffers or output differ from the reference's.
    Mismatch,
    /// The program trapped (the step limit included) where the reference ran.
    Trap,
    /// It did not compile where the reference did (an internal error).
    CompileError,
    Panic,
}

impl FailureKind {
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::InvalidProgram => "invalid-program",
            FailureKind::Mismatch => "mismatch",
            FailureKind::Trap => "trap",
            FailureKind::CompileError => "compile-error",
            FailureKind::Panic => "panic",
        }
    }
}

/// One failed comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub config: String,
    pub kind: FailureKind,
    /// The first differing line, the trap's or the panic's message.
    pub detail: String,
}

/// How a program fared under its configurations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Runs compared (the references included).
    pub runs: u32,
    /// Runs a configuration could not make by design (a resource limit).
    pub unsupported: u32,
    pub failures: Vec<Failure>,
    /// Runs by configuration name, for the coverage table.
    pub configs: Vec<String>,
}

/// The configurations of seed `seed`: the base ones and `variants` random ones.
pub fn configs_for_seed(seed: u64, variants: u32) -> Vec<Config> {
    let mut rng = Rng::new(seed ^ 0x5EED_C0F1_9000_0000);
    let mut configs = config::base_configs();
    for _ in 0..variants {
        let c = config::random_variant(&mut rng);
        if !configs.contains(&c) {
            configs.push(c);
        }
    }
    configs
}

/// The size of seed `seed`'s program when the campaign does not fix one: 1 to 6,
/// small programs the most often (they run fastest and reduce best).
pub fn size_for_seed(seed: u64) -> u32 {
    let mut rng = Rng::new(seed ^ 0x512E);
    *rng.pick(&[1, 2, 2, 3, 3, 3, 4, 4, 5, 6])
}

/// Runs `source` under each configuration and compares it with its reference.
pub fn check_source(source: &str, configs: &[Config]) -> Checked {
    let mut checked = Checked::default();
    let launch = match LaunchLine::from_source(source) {
        Ok(l) => l,
        Err(e) => {
            checked.failures.push(Failure {
                config: "-".into(),
                kind: FailureKind::InvalidProgram,
                detail: e,
            });
            return checked;
        }
    };
    let mut references: BTreeMap<u32, Outcome> = BTreeMap::new();
    for c in configs {
        let reference = references
            .entry(c.program_count())
            .or_insert_with(|| {
                checked.runs += 1;
                run::run(source, &launch, &c.reference())
            })
            .clone();
        if c.is_reference() {
            if !matches!(reference, Outcome::Ran(_)) {
                checked.failures.push(Failure {
                    config: c.spelled(),
                    kind: FailureKind::InvalidProgram,
                    detail: reference.summary(),
                });
            }
            checked.configs.push(c.spelled());
            continue;
        }
        let Outcome::Ran(expected) = &reference else {
            continue;
        };
        checked.runs += 1;
        let outcome = run::run(source, &launch, c);
        if outcome.is_unsupported() {
            checked.unsupported += 1;
            continue;
        }
        checked.configs.push(c.spelled());
        if let Some(f) = compare(expected, &outcome) {
            checked.failures.push(Failure {
                config: c.spelled(),
                ..f
            });
        }
    }
    checked
}

/// The failure of `outcome` against the reference's observation, if any.
fn compare(expected: &str, outcome: &Outcome) -> Option<Failure> {
    let fail = |kind, detail: String| {
        Some(Failure {
            config: String::new(),
            kind,
            detail,
        })
    };
    match outcome {
        Outcome::Ran(got) if got == expected => None,
        Outcome::Ran(got) => fail(FailureKind::Mismatch, first_difference(expected, got)),
        Outcome::Trap(_) | Outcome::Launch(_) => fail(FailureKind::Trap, outcome.summary()),
        Outcome::Compile(_) => fail(FailureKind::CompileError, outcome.summary()),
        Outcome::Panic(_) => fail(FailureKind::Panic, outcome.summary()),
    }
}

/// The first line where two observations differ, both sides shown.
fn first_difference(expected: &str, got: &str) -> String {
    let mut buffer = "";
    for (e, g) in expected.lines().zip(got.lines()) {
        if let Some((name, _)) = e.split_once(" = ") {
            buffer = name;
        }
        if e != g {
            return format!("in `{buffer}`: expected `{}`, got `{}`", e.trim(), g.trim());
        }
    }
    "the outputs differ in length".into()
}

/// What a campaign runs.
#[derive(Clone, Debug)]
pub struct CampaignOptions {
    pub seeds: Range<u64>,
    /// `(i, n)`: only the seeds `s` with `s % n == i`.
    pub shard: (u64, u64),
    pub jobs: usize,
    /// A fixed program size, or [`size_for_seed`].
    pub size: Option<u32>,
    /// Random configurations per program beyond the base ones.
    pub variants: u32,
    /// Options (`--no-skip-empty`) whose configurations are not run: to keep a
    /// known, open bug from drowning the rest. The seeds' other configurations
    /// are the same with or without it.
    pub exclude: Vec<String>,
}

/// One seed's result.
#[derive(Clone, Debug)]
pub struct SeedResult {
    pub seed: u64,
    pub size: u32,
    pub checked: Checked,
}

/// A campaign's results, in seed order.
#[derive(Clone, Debug, Default)]
pub struct Campaign {
    pub programs: u64,
    pub runs: u64,
    pub unsupported: u64,
    /// Seeds with at least one failure.
    pub failing: Vec<SeedResult>,
    /// Runs by configuration.
    pub config_runs: BTreeMap<String, u64>,
}

impl Campaign {
    fn add(&mut self, r: SeedResult) {
        self.programs += 1;
        self.runs += u64::from(r.checked.runs);
        self.unsupported += u64::from(r.checked.unsupported);
        for c in &r.checked.configs {
            *self.config_runs.entry(c.clone()).or_default() += 1;
        }
        if !r.checked.failures.is_empty() {
            self.failing.push(r);
        }
    }

    pub fn mismatches(&self) -> usize {
        self.failing.iter().map(|r| r.checked.failures.len()).sum()
    }
}

/// The program of `seed` and its checks, under its configurations but those naming
/// an option of `exclude`.
pub fn check_seed(seed: u64, size: Option<u32>, variants: u32, exclude: &[String]) -> SeedResult {
    let size = size.unwrap_or_else(|| size_for_seed(seed));
    let program = gen::generate(seed, size);
    let source = gen::emit::program_text(&program);
    let mut configs = configs_for_seed(seed, variants);
    configs.retain(|c| {
        let spelled = c.spelled();
        !exclude.iter().any(|x| spelled.split(' ').any(|w| w == x))
    });
    let checked = check_source(&source, &configs);
    SeedResult {
        seed,
        size,
        checked,
    }
}

/// Runs the campaign on `opts.jobs` threads; `progress` sees each seed's result as
/// it comes (in completion order); the returned campaign is in seed order.
pub fn campaign(opts: &CampaignOptions, progress: &(dyn Fn(&SeedResult) + Sync)) -> Campaign {
    let (shard, shards) = opts.shard;
    let seeds: Vec<u64> = opts.seeds.clone().filter(|s| s % shards == shard).collect();
    let next = AtomicU64::new(0);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..opts.jobs.max(1) {
            let worker = || loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(&seed) = seeds.get(i) else { break };
                let r = check_seed(seed, opts.size, opts.variants, &opts.exclude);
                progress(&r);
                if let Ok(mut all) = results.lock() {
                    all.push(r);
                }
            };
            // Compiling deeply nested programs recurses: give workers the stack the
            // command line's compiler thread has.
            std::thread::Builder::new()
                .stack_size(256 << 20)
                .spawn_scoped(scope, worker)
                .expect("cannot start a difftest worker");
        }
    });
    let mut all = results.into_inner().unwrap_or_default();
    all.sort_by_key(|r| r.seed);
    let mut campaign = Campaign::default();
    for r in all {
        campaign.add(r);
    }
    campaign
}
