//! The `spmdc` command line. Flags and printing only: the work is in the library
//! (`spmdc::driver`), which the tests and other front ends share.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use spmdc::analysis::uniformity;
use spmdc::diag::{self, codes, ColorChoice, Diagnostic, Diagnostics};
use spmdc::driver::{self, FrontOptions, FrontResult, Stage};
use spmdc::front::dump;
use spmdc::source::SourceMap;
use spmdc::timing;

// The AST and the IR are many small nodes, which mimalloc allocates and frees markedly
// faster than the system allocator (see the front-end benchmark in docs/performance.md);
// blocks of 1 KiB or more go to glibc's allocator, which reuses freed memory across
// sizes and so touches fewer fresh pages ([`spmdc::heap`] has the measurements).
// Counting live bytes gives `--time-passes` its heap peaks.
#[global_allocator]
static ALLOC: timing::CountingAlloc<Heap> = timing::CountingAlloc(spmdc::heap::SizeSplit(
    mimalloc::MiMalloc,
    spmdc::heap::HugePages::new(std::alloc::System),
));

type Heap =
    spmdc::heap::SizeSplit<mimalloc::MiMalloc, spmdc::heap::HugePages<std::alloc::System>, 1024>;

/// Exit status: the kernel compiled (or ran) cleanly.
const EXIT_OK: u8 = 0;
/// Exit status: the source has errors.
const EXIT_COMPILE_ERROR: u8 = 1;
/// Exit status: bad command line, unreadable input, or a request spmdc cannot honour.
const EXIT_USAGE: u8 = 2;
/// Exit status: the kernel trapped at run time.
const EXIT_TRAP: u8 = 3;

const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success
  1  compile errors in the source
  2  usage error: bad flags, unreadable input, or an output the target cannot produce
  3  runtime trap while running a kernel (spmdc run)

Nyuzi: `--emit asm` prints the listing (`--source-lines` interleaves the source);
`--emit hex --entry NAME --arg NAME=SPEC ... [--grid ..] [--block ..] -o image.hex`
writes a launch image for the upstream emulator and its layout as image.hex.json.";

#[derive(Parser)]
#[command(
    name = "spmdc",
    version,
    about = "Compiler and simulator for a C-like SPMD kernel language (ISPC-compatible core plus GPU launch built-ins)",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = EXIT_CODES_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    compile: CompileArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Check a file for errors without generating code.
    #[command(after_help = EXIT_CODES_HELP)]
    Check {
        #[command(flatten)]
        front: FrontArgs,
        /// Also lower the program and warn about every divergent branch (W0008), as
        /// `spmdc FILE --warn-divergent` does.
        #[arg(long)]
        warn_divergent: bool,
    },
    /// Compile a kernel and run one launch of it on a target, e.g.
    /// `spmdc run examples/saxpy.spmd --entry saxpy --arg n=1000 --arg a=2 --arg x='range(1000)' --arg y='fill(1000,1)' --print y`.
    #[command(after_help = RUN_HELP)]
    Run(Box<RunArgs>),
    /// Run a benchmark suite (built-in or a file), print its table and write its runs,
    /// table and charts to bench-out/, e.g. `spmdc bench dac`; `spmdc bench merge DIR...`
    /// combines the folders of sharded runs.
    #[command(after_help = BENCH_HELP)]
    Bench(BenchArgs),
    /// Run ISPC's functional test suite from a checkout of ispc/ispc, e.g.
    /// `spmdc ispc-tests ../ispc --target nyuzi`: each test's function and its `result`
    /// run as ISPC's harness runs them, and their outputs are compared.
    #[command(name = "ispc-tests", after_help = ISPC_TESTS_HELP)]
    IspcTests(IspcTestsArgs),
    /// Compare ISPC's example programs with ISPC bit for bit, e.g.
    /// `spmdc ispc-examples ../ispc --ispc ispc --target interp --target nyuzi`: each
    /// unchanged host program is built against ISPC, the first call of each exported
    /// function is captured, replayed on spmdc and its outputs compared.
    #[command(name = "ispc-examples", after_help = ISPC_EXAMPLES_HELP)]
    IspcExamples(IspcExamplesArgs),
    /// Print a random program of the differential-testing generator, e.g.
    /// `spmdc gen --seed 7`: valid, terminating and free of undefined behaviour, with
    /// the `spmdc run` line of its launch in its header comment.
    Gen(GenArgs),
    /// Differential testing: generate programs from a range of seeds and run each on
    /// interp, nyuzi and dac-gpu under pass switches, comparing every run with the
    /// interpreter, e.g. `spmdc difftest --seeds 0..1000 --jobs 2`.
    #[command(after_help = DIFFTEST_HELP)]
    Difftest(DifftestArgs),
    /// Shrink a failing generated program while it fails the same way under one
    /// configuration, e.g. `spmdc reduce case.spmd --config 'nyuzi --no-opt'`.
    #[command(after_help = REDUCE_HELP)]
    Reduce(ReduceArgs),
    /// Serve the playground, a web page to edit, compile, run, profile and step
    /// through kernels, with its JSON API: `spmdc playground --open`.
    Playground(PlaygroundArgs),
    /// Print the long explanation of a diagnostic code, e.g. `spmdc explain E0400`.
    Explain {
        /// The code (E0001...). `--list` prints every code with its summary.
        #[arg(required_unless_present = "list")]
        code: Option<String>,
        /// List every diagnostic code.
        #[arg(long)]
        list: bool,
    },
}

/// `spmdc gen`.
#[derive(Args)]
struct GenArgs {
    /// The program's seed: the same seed gives the same program everywhere.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// How large a program: more functions and statements, deeper nesting.
    #[arg(long, default_value_t = spmdc::gen::DEFAULT_SIZE,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(spmdc::gen::MAX_SIZE)))]
    size: u32,
    /// Write the program here instead of standard output.
    #[arg(short = 'o', value_name = "OUT")]
    output: Option<PathBuf>,
    /// Instead of a program, print which features the programs of these seeds use
    /// (at the sizes `spmdc difftest` gives them), as a Markdown table: `N` for seeds
    /// 0..N, or ranges `A..B,C..D` (B and D excluded), e.g. a campaign's seeds.
    #[arg(long, value_name = "SEEDS", value_parser = parse_seed_set)]
    coverage: Option<SeedSet>,
}

const DIFFTEST_HELP: &str = "\
Each program runs under the base configurations (interp at 16 and 32 lanes, the
references; nyuzi; dac-gpu) and --variants random ones (a target with one to three
of --no-opt, --no-uniformity, --no-skip-empty, --force-cfg-opts, --no-inline,
--no-scalar-datapath, --timing, --shuffle all|auto, nyuzi --cores/--threads,
dac-gpu --no-dac, --max-regs, --regalloc, --sched lrr, --config maxwell). A seed fixes
the program, its launch and its configurations. See lang-spec/difftest.md.

Exit codes:
  0  every comparison passed
  1  some program failed (each is listed with its seed and configuration)
  2  usage error";

const REDUCE_HELP: &str = "\
The file must be a generated program (its first line names its seed and size). The
failure it shows under --config (a mismatch, a trap, a compile error or a panic) is
kept while statements, functions, output slots and subexpressions are removed.

Exit codes:
  0  reduced (the result is written)
  1  the program does not fail under that configuration
  2  usage error";

/// `spmdc difftest`.
#[derive(Args)]
struct DifftestArgs {
    /// The seeds, `A..B` (B excluded).
    #[arg(long, value_name = "A..B", default_value = "0..100", value_parser = parse_seed_range)]
    seeds: std::ops::Range<u64>,
    /// Programs checked at once (default: the number of cores).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Only the seeds `s` with `s % n == i`, to split a campaign across machines.
    #[arg(long, value_name = "i/n", default_value = "0/1", value_parser = parse_shard)]
    shard: (u64, u64),
    /// A fixed program size (default: 1 to 6, chosen by the seed).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(spmdc::gen::MAX_SIZE)))]
    size: Option<u32>,
    /// Random configurations per program beyond the four base ones.
    #[arg(long, value_name = "N", default_value_t = 4)]
    variants: u32,
    /// Do not run the configurations with this option (e.g. `--exclude
    /// --no-skip-empty`, while a bug it shows is open); repeatable.
    #[arg(long, value_name = "OPTION", allow_hyphen_values = true)]
    exclude: Vec<String>,
    /// Reduce each failing program (its first failure) and write it to this directory.
    #[arg(long, value_name = "DIR")]
    reduce: Option<PathBuf>,
    /// Print the runs by configuration after the summary.
    #[arg(long)]
    coverage: bool,
}

/// `--seeds A..B`.
fn parse_seed_range(s: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s.split_once("..").ok_or("expected A..B")?;
    let a: u64 = a.parse().map_err(|e| format!("`{a}`: {e}"))?;
    let b: u64 = b.parse().map_err(|e| format!("`{b}`: {e}"))?;
    if a >= b {
        return Err("the range is empty".into());
    }
    Ok(a..b)
}

/// Seed ranges, as `--coverage` takes them.
#[derive(Clone, Debug)]
struct SeedSet(Vec<std::ops::Range<u64>>);

/// `--coverage N` (seeds `0..N`) or `--coverage A..B,C..D`.
fn parse_seed_set(s: &str) -> Result<SeedSet, String> {
    if let Ok(n) = s.parse::<u64>() {
        return if n == 0 {
            Err("no seeds".into())
        } else {
            Ok(SeedSet(vec![0..n]))
        };
    }
    s.split(',')
        .map(parse_seed_range)
        .collect::<Result<_, _>>()
        .map(SeedSet)
}

/// `--shard i/n`.
fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (i, n) = s.split_once('/').ok_or("expected i/n")?;
    let i: u64 = i.parse().map_err(|e| format!("`{i}`: {e}"))?;
    let n: u64 = n.parse().map_err(|e| format!("`{n}`: {e}"))?;
    if n == 0 || i >= n {
        return Err("expected 0 <= i < n".into());
    }
    Ok((i, n))
}

/// `spmdc reduce`.
#[derive(Args)]
struct ReduceArgs {
    /// The failing generated program.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The configuration it fails under, as `spmdc difftest` prints it
    /// (`nyuzi --no-opt`, `dac-gpu --max-regs 16 --regalloc shared`, ...).
    #[arg(long, value_name = "CONFIG")]
    config: String,
    /// Write the reduced program here instead of standard output.
    #[arg(short = 'o', value_name = "OUT")]
    output: Option<PathBuf>,
}

const BENCH_HELP: &str = "\
Built-in suites (the files of examples/suites/, embedded; every run's buffers are
checked bit for bit against the interpreter's):
  gpu         the GPU-style examples (saxpy, tiled matmul, 2-D and 3-D stencils, block
              reduction, histogram, mandelbrot) on the dac-gpu timing model, each
              launched with at least T threads (--threads, default 1M)
  uniformity  what the uniformity analysis buys: examples on nyuzi and dac-gpu in timing
              mode, with and without --no-uniformity, --no-skip-empty, --force-cfg-opts
              and --no-scalar-datapath, at launches of their own (T is not used)
  dac         Decoupled Affine Computation: 15 memory- and compute-bound kernels with and
              without --no-dac on the dac-gpu timing model, sized from T / 8 threads
  regdem      register demotion to shared memory: the register-limited kernels of
              tests/regdem_bench, every placement and budget --regalloc auto weighs, at
              the launches their headers give (T is not used)
  shuffle     shuffle synthesis: the KernelGen stencils with --shuffle off, all and auto
              on the gtx480 and maxwell presets (--no-dac) and nyuzi, static shuffles
              and loads next to paper 004's Table 2, sized from T threads (default 32K)
  sim-speed   the speed of spmdc: compile time per kernel, the interpreter's lane-ops/s,
              each simulator's instructions/s in functional and timing mode (--jobs 1
              for undisturbed figures)
Any other suite file runs as `spmdc bench FILE.toml` (lang-spec/bench-suites.md).

Results go to --out (bench-out/): runs/NNNNN.json (one record per run), table.md,
table.json and charts/*.svg; the table is also printed. Runs use all cores; a progress
bar shows on a terminal (not with --quiet).

Sharding: `spmdc bench dac --shard 0/3 --out part0` runs every third run;
`spmdc bench merge part0 part1 part2 --out bench-out` writes the whole suite's table
and charts from the parts.

Pages: `spmdc bench dac --doc docs/dac.md` also writes the table and the charts into
the page, between its `<!-- bench dac: table -->` (and `<!-- bench dac: charts -->`)
and `<!-- end -->` lines, and the charts to docs/charts/dac/. A block's name is the
suite's with the --config and --threads given (`<!-- bench regdem --config maxwell:
table -->`). The page is checked before anything runs, and left alone if a run fails.

Exit codes:
  0  success
  1  a kernel failed to compile or run, or disagreed with the interpreter
  2  usage error: unknown suite, bad suite file, machine configuration, folder or --doc page";

/// `spmdc playground`.
#[derive(Args)]
struct PlaygroundArgs {
    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// The address to listen on. Anything but a loopback address lets other
    /// machines compile and run programs here.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// Open the page in the default browser.
    #[arg(long)]
    open: bool,
}

/// `spmdc bench SUITE|FILE`, `spmdc bench merge DIR...`.
#[derive(Args)]
struct BenchArgs {
    /// A built-in suite (gpu, uniformity, dac, regdem, shuffle, sim-speed), a suite
    /// file, or `merge`.
    #[arg(value_name = "SUITE|FILE|merge")]
    suite: String,
    /// `merge`: the output folders of the shards to merge.
    #[arg(value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// The machine of every dac-gpu configuration instead of the suite's: `gtx480`,
    /// `maxwell` or a configuration file.
    #[arg(long, value_name = "gtx480|maxwell|FILE")]
    config: Option<String>,
    /// The thread target T instead of the suite's: kernels size their launches from
    /// it (gpu: at least T threads; dac: T / 8); suites with fixed launches ignore it.
    #[arg(long, value_name = "T",
          value_parser = clap::value_parser!(u64).range(1..=1 << 26))]
    threads: Option<u64>,
    /// Where to write the runs, table and charts.
    #[arg(long, value_name = "DIR", default_value = "bench-out")]
    out: PathBuf,
    /// Run only the runs whose index is I modulo N (0 <= I < N).
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Print the table as JSON instead of aligned text.
    #[arg(long)]
    json: bool,
    /// Also write the table and charts into this Markdown page, between its
    /// `<!-- bench SUITE: table -->` (and `: charts`) and `<!-- end -->` markers; the
    /// charts go to charts/ beside it (lang-spec/bench-suites.md).
    #[arg(long, value_name = "PAGE")]
    doc: Option<PathBuf>,
}

const ISPC_TESTS_HELP: &str = "\
The tests are read from CHECKOUT/tests/func-tests and never copied. Each run is its own
`spmdc run` process, bounded by --timeout and --max-steps.

Exit codes:
  0  every test that ran passed
  1  some test failed
  2  usage error: no such checkout";

/// `spmdc ispc-tests CHECKOUT`.
#[derive(Args)]
struct IspcTestsArgs {
    /// The root of a checkout of ispc/ispc.
    #[arg(value_name = "CHECKOUT")]
    checkout: PathBuf,
    /// Where to run the tests.
    #[arg(long, value_enum, default_value_t = RunTarget::Interp)]
    target: RunTarget,
    /// The interpreter's gang width (nyuzi has 16 lanes, dac-gpu 32).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=64))]
    program_count: u32,
    /// Only the tests whose file name contains this.
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// Tests run at once (default: the number of cores).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Seconds before one run is stopped.
    #[arg(long, value_name = "S", default_value_t = 30)]
    timeout: u64,
    /// Step limit of each run.
    #[arg(long, value_name = "N", default_value_t = 100_000_000)]
    max_steps: u64,
    /// Write one line per test (file, verdict, first error) to this file.
    #[arg(long, value_name = "FILE")]
    list: Option<PathBuf>,
}

const ISPC_EXAMPLES_HELP: &str = "\
The examples are built from CHECKOUT/examples/cpu with ISPC (--opt=disable-fma -O2
--target=avx512skx-xN for a gang of N: 16 for interp and nyuzi, 32 for dac-gpu,
--program-count for interp) and g++ -O2, in a temporary
directory or --keep DIR; nothing is copied into spmdc. The host programs, their
arguments and the length of every buffer are in spmdc's manifest
(compiler/src/ispc_examples/examples.toml). Needs an x86-64 machine with AVX-512.

Exit codes:
  0  every output compared agrees (bit for bit, or within its tolerance)
  1  some output differs, or spmdc failed to compile or run a function
  2  usage error: no such checkout or ISPC, a build or host program that fails";

/// `spmdc ispc-examples CHECKOUT --ispc ISPC`.
#[derive(Args)]
struct IspcExamplesArgs {
    /// The root of a checkout of ispc/ispc.
    #[arg(value_name = "CHECKOUT")]
    checkout: PathBuf,
    /// The ISPC executable that builds the examples.
    #[arg(long, value_name = "PATH")]
    ispc: PathBuf,
    /// Where to replay the calls (repeat for several; default interp).
    #[arg(long, value_enum)]
    target: Vec<RunTarget>,
    /// The interpreter's gang width: 4, 8, 16, 32 or 64, compared with ISPC's
    /// avx512skx-xN (nyuzi has 16 lanes, dac-gpu 32).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(4..=64))]
    program_count: u32,
    /// Only the examples whose name contains this (repeat for several).
    #[arg(long, value_name = "NAME")]
    filter: Vec<String>,
    /// Keep the builds, the host programs' outputs and the captures in this directory.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Step limit of each replay (interp and nyuzi steps, dac-gpu warp instructions).
    #[arg(long, value_name = "N", default_value_t = 1_000_000_000_000)]
    max_steps: u64,
    /// Seconds before a host program is stopped.
    #[arg(long, value_name = "S", default_value_t = 600)]
    host_timeout: u64,
}

const RUN_HELP: &str = "\
SPEC is a scalar literal (5, 2.5, -1e20, true), zeros(N), fill(N,V), range(N[,START[,STEP]]),
random(N[,SEED[,LO,HI]]), or @FILE (.txt numbers, .json array, otherwise raw little-endian).
Element types come from the kernel's parameters. See lang-spec/run.md.

Exit codes:
  0  success
  1  compile errors in the source
  2  usage error: bad flags, entry or arguments
  3  runtime trap while running the kernel";

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    front: FrontArgs,
    /// The `export` or `task` function to launch.
    #[arg(long, value_name = "NAME")]
    entry: String,
    /// Where to run: the reference interpreter (`interp`) or a simulated machine.
    #[arg(long, value_enum, default_value_t = RunTarget::Interp)]
    target: RunTarget,
    /// Blocks in the grid: X[,Y[,Z]] (default 1).
    #[arg(long, value_name = "X[,Y[,Z]]")]
    grid: Option<String>,
    /// Threads in a block: X[,Y[,Z]] (default: one gang, programCount threads).
    #[arg(long, value_name = "X[,Y[,Z]]")]
    block: Option<String>,
    /// Bytes of dynamic shared memory per block: the size of the unsized `shared`
    /// array (default 0).
    #[arg(long, value_name = "BYTES")]
    dynamic_shared: Option<String>,
    /// A kernel argument: NAME=SPEC (repeat for each parameter).
    #[arg(long = "arg", value_name = "NAME=SPEC")]
    args: Vec<String>,
    /// Print a buffer after the run (repeatable; `return` prints the return value).
    #[arg(long = "print", value_name = "NAME")]
    print: Vec<String>,
    /// Write a buffer to a file after the run: NAME=PATH (repeatable), in the format
    /// the extension names, as `@PATH` reads it back: raw little-endian elements
    /// (`.bin`, any other name), one value per line (`.txt`) or a JSON array (`.json`).
    #[arg(long = "save", value_name = "NAME=PATH", value_parser = parse_save)]
    save: Vec<(String, PathBuf)>,
    /// Print one JSON object with every buffer, the output and the statistics.
    #[arg(long)]
    json: bool,
    /// Print the run's statistics, grouped in sections with readable names and
    /// rounded figures; `--stats=full` adds tables per SM (dac-gpu) or core (nyuzi)
    /// and per function, also under `--json`.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "summary", value_name = "VIEW")]
    stats: Option<StatsView>,
    /// Profile the run: print the source annotated per line (dynamic instructions,
    /// their share, average active lanes, and with --timing stall cycles by cause);
    /// `--profile=asm` prints every executed instruction instead.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "lines", value_name = "VIEW")]
    profile: Option<ProfileView>,
    /// Write the profile as JSON to FILE (`-`: standard output), per line and per
    /// instruction; implies profiling.
    #[arg(long, value_name = "FILE")]
    profile_json: Option<PathBuf>,
    /// Trace one gang (nyuzi: hardware thread; dac-gpu: warp): print each instruction
    /// it runs with its pc, source line and active lanes.
    #[arg(long)]
    trace: bool,
    /// The gang, hardware thread or warp --trace follows (counted over the launch).
    #[arg(long, value_name = "N", default_value_t = 0)]
    trace_gang: u64,
    /// The most instructions --trace prints.
    #[arg(long, value_name = "K", default_value_t = 1000)]
    trace_limit: usize,
    /// Write the trace as JSON to FILE (`-`: standard output); implies --trace.
    #[arg(long, value_name = "FILE")]
    trace_json: Option<PathBuf>,
    /// The gang width of the interpreter (`programCount`).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=64))]
    program_count: u32,
    /// Stop after this many instructions (interp: gang instructions; nyuzi: machine
    /// instructions over all hardware threads).
    #[arg(long, default_value_t = 1_000_000_000)]
    max_steps: u64,
    /// Run the IR as lowered, without the optimization passes.
    #[arg(long)]
    no_opt: bool,
    #[command(flatten)]
    switches: SwitchArgs,
    #[command(flatten)]
    nyuzi: NyuziArgs,
    /// nyuzi: do not check accesses against the launch's buffers, stacks and shared
    /// memory; an out-of-bounds access then reads or writes whatever is there, as on
    /// the hardware and the upstream emulator.
    #[arg(long)]
    no_bounds_check: bool,
    /// Run the timing model (cycles, caches, stalls) instead of the functional
    /// simulator (nyuzi, dac-gpu).
    #[arg(long)]
    timing: bool,
    #[command(flatten)]
    dac: DacArgs,
}

/// What `spmdc run --stats` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StatsView {
    /// The statistics of the whole run, in sections.
    Summary,
    /// Those, then per SM or core and per function.
    Full,
}

/// What `spmdc run --profile` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ProfileView {
    /// The source annotated per line.
    Lines,
    /// Every executed instruction of the target's code.
    Asm,
}

/// The dac-gpu machine and scheduler of `spmdc run --target dac-gpu`.
#[derive(Args)]
struct DacArgs {
    /// dac-gpu warp scheduler of the timing model.
    #[arg(long, value_enum, default_value_t = SchedArg::Gto)]
    sched: SchedArg,
    #[command(flatten)]
    codegen: DacCodegenArgs,
}

/// dac-gpu code generation, for `spmdc FILE --target dac-gpu` and `spmdc run`.
#[derive(Args)]
struct DacCodegenArgs {
    /// dac-gpu machine: `gtx480`, `maxwell` or a configuration file. The timing
    /// model runs it, and its shared memory and occupancy rules bound the spill
    /// slots `--regalloc shared|mixed` puts in shared memory.
    #[arg(long, value_name = "gtx480|maxwell|FILE", default_value = "gtx480")]
    config: String,
    /// dac-gpu: the most 32-bit registers per thread a kernel may use (values that
    /// do not fit are spilled, as `--regalloc` says; by default the machine's
    /// limit: 63 on gtx480, 255 on maxwell). Given, it fixes the budget of
    /// `--regalloc auto` too. At most 255, the ISA's register numbers.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(spmdc::back::dac_gpu::alloc::MAX_BUDGET)))]
    max_regs: Option<u32>,
    /// dac-gpu: where values that do not fit `--max-regs` go: per-thread `local`
    /// memory (off chip), `shared` memory (on chip, RegDem's bank-conflict-free
    /// layout; every slot, or none when they do not all fit the block's shared
    /// memory), `mixed` (the most-accessed slots in the shared memory a block can
    /// take without losing occupancy, the rest local), `auto` (a static predictor
    /// picks the placement, and the budget among the occupancy cliffs unless
    /// `--max-regs` is given), or `exhaustive` (`spmdc run` only: every variant
    /// `auto` weighs is simulated with the timing model and the fastest is run).
    #[arg(long, value_enum, default_value_t = RegallocArg::Local)]
    regalloc: RegallocArg,
    /// dac-gpu: compile the baseline SIMT code, without Decoupled Affine Computation
    /// (which is on by default: affine addresses and predicates computed once per
    /// batch of warps by an affine warp and fed to the others through queues; the
    /// `--emit asm` listing shows the non-affine stream and the `.affine` stream
    /// after its entry).
    #[arg(long)]
    no_dac: bool,
    /// dac-gpu: decouple affine computation (the default; kept so scripts can say so).
    #[arg(long, overrides_with = "no_dac")]
    dac: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ShuffleArg {
    Off,
    All,
    Auto,
    /// Ablation: paired loads deleted (wrong results).
    Noload,
    /// Ablation: no reload of the edge lanes (wrong results).
    Nocorner,
}

impl ShuffleArg {
    fn mode(self) -> spmdc::passes::ShuffleMode {
        use spmdc::passes::ShuffleMode;
        match self {
            ShuffleArg::Off => ShuffleMode::Off,
            ShuffleArg::All => ShuffleMode::All,
            ShuffleArg::Auto => ShuffleMode::Auto,
            ShuffleArg::Noload => ShuffleMode::NoLoad,
            ShuffleArg::Nocorner => ShuffleMode::NoCorner,
        }
    }
}

impl DacCodegenArgs {
    /// Whether to decouple: on unless `--no-dac` came last (clap clears the one
    /// overridden).
    fn decouple(&self) -> bool {
        self.dac || !self.no_dac
    }

    /// The code generation options; `Err` with a message when the machine is not a
    /// preset or a readable, valid configuration file.
    fn options(&self, switches: &SwitchArgs) -> Result<spmdc::back::dac_gpu::Options, String> {
        let machine = sim::gpu::GpuConfig::load(&self.config)?;
        // Without `--max-regs`, what the machine allows a thread (63 on the GTX 480).
        let defaults = spmdc::back::dac_gpu::Options::for_machine(machine);
        Ok(spmdc::back::dac_gpu::Options {
            max_regs: self.max_regs.unwrap_or(defaults.max_regs),
            fixed_budget: self.max_regs.is_some(),
            predict: matches!(self.regalloc, RegallocArg::Auto | RegallocArg::Exhaustive),
            placement: self.regalloc.placement(),
            uniformity: !switches.no_uniformity,
            dac: self.decouple(),
            shuffle: switches.shuffle.mode(),
            ..defaults
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RegallocArg {
    Local,
    Shared,
    Mixed,
    Auto,
    Exhaustive,
}

impl RegallocArg {
    fn placement(self) -> spmdc::back::dac_gpu::alloc::Placement {
        use spmdc::back::dac_gpu::alloc::Placement;
        match self {
            RegallocArg::Local | RegallocArg::Auto | RegallocArg::Exhaustive => Placement::Local,
            RegallocArg::Shared => Placement::Shared,
            RegallocArg::Mixed => Placement::Mixed,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SchedArg {
    Gto,
    Lrr,
}

/// The Nyuzi machine a launch image is built for (and run on).
#[derive(Args)]
struct NyuziArgs {
    /// Nyuzi cores (the emulator's `-p`).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=32))]
    cores: u32,
    /// Hardware threads per Nyuzi core (the emulator's `-t`); at most 32 in all.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=32))]
    threads: u32,
    /// Bytes of stack per gang in a Nyuzi launch image (a multiple of 64).
    #[arg(long, value_name = "BYTES", default_value_t = spmdc::back::nyuzi::abi::DEFAULT_GANG_STACK,
          value_parser = parse_gang_stack)]
    gang_stack: u32,
}

/// `--gang-stack`: at least 1 KiB, at most 1 MiB, a multiple of 64.
fn parse_gang_stack(s: &str) -> Result<u32, String> {
    let v: u32 = s.parse().map_err(|e| format!("{e}"))?;
    if (1024..=1 << 20).contains(&v) && v.is_multiple_of(64) {
        Ok(v)
    } else {
        Err("expected a multiple of 64 between 1024 and 1048576".into())
    }
}

impl NyuziArgs {
    fn shape(&self) -> spmdc::back::nyuzi::image::MachineShape {
        spmdc::back::nyuzi::image::MachineShape {
            cores: self.cores,
            threads_per_core: self.threads,
        }
    }

    fn image(&self) -> spmdc::back::nyuzi::image::ImageOptions {
        spmdc::back::nyuzi::image::ImageOptions {
            gang_stack: self.gang_stack,
            ..Default::default()
        }
    }
}

/// The pass switches (`spmdc::passes::Switches`), to measure each part of the
/// divergence-aware compilation.
#[derive(Args)]
struct SwitchArgs {
    /// Code generation ignores the uniformity analysis: only `uniform`-typed values use
    /// the scalar registers (nyuzi) or the uniform datapath (dac-gpu).
    #[arg(long)]
    no_uniformity: bool,
    /// Regions under a divergent branch run even when no program instance takes them
    /// (no `any(mask)` runtime skips).
    #[arg(long)]
    no_skip_empty: bool,
    /// Apply the code-duplicating CFG transforms (jump threading, tail duplication) to
    /// divergent branches too.
    #[arg(long)]
    force_cfg_opts: bool,
    /// Keep calls as calls: no inlining of callees into their callers.
    #[arg(long)]
    no_inline: bool,
    /// No scalar/uniform datapath (implies --no-uniformity): uniform arithmetic runs on
    /// the vector unit (nyuzi) or the vector datapath (dac-gpu, no `.uni`); the
    /// baseline that measures what the scalar datapath buys.
    #[arg(long)]
    no_scalar_datapath: bool,
    /// Unroll in full the loops whose trip count folds to a constant (at most 32
    /// iterations, 2,048 added instructions a loop), so that later passes see across
    /// iterations: with `--shuffle`, a stencil whose window is a loop pairs its loads.
    #[arg(long)]
    unroll: bool,
    /// Serve loads from a neighbouring lane's earlier load of the same iteration
    /// (`all`: every pair the analysis proves; `auto`: those the target's static cost
    /// model expects to pay; `off`: none; `noload`/`nocorner`: the paper's ablations,
    /// which give wrong results). dac-gpu: a warp shuffle,
    /// with a predicated reload for the lanes at the warp's and the row's edges
    /// (loads the affine stream prefetches are left as they are: use with
    /// `--no-dac`); nyuzi: a vector `shuffle`, with a masked reload of the edge lanes.
    #[arg(long, value_enum, default_value_t = ShuffleArg::Off)]
    shuffle: ShuffleArg,
}

impl SwitchArgs {
    /// The pass switches (an ablation is warned about by [`ablation_warning`]).
    fn switches(&self) -> spmdc::passes::Switches {
        spmdc::passes::Switches {
            no_uniformity: self.no_uniformity || self.no_scalar_datapath,
            no_skip_empty: self.no_skip_empty,
            force_cfg_opts: self.force_cfg_opts,
            no_inline: self.no_inline,
            no_scalar_datapath: self.no_scalar_datapath,
            unroll: self.unroll,
            shuffle: self.shuffle.mode(),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RunTarget {
    Interp,
    Nyuzi,
    DacGpu,
}

impl RunTarget {
    /// The name `--target` takes.
    fn name(self) -> &'static str {
        match self {
            RunTarget::Interp => "interp",
            RunTarget::Nyuzi => "nyuzi",
            RunTarget::DacGpu => "dac-gpu",
        }
    }
}

#[derive(Args)]
struct CompileArgs {
    #[command(flatten)]
    front: FrontArgs,
    /// The target machine.
    #[arg(long, value_enum, default_value_t = Target::DacGpu)]
    target: Target,
    /// The stages to print, one or several separated by commas (`--emit ir,asm`):
    /// tokens, ast, ir, asm, or hex (a Nyuzi launch image, alone). Default: asm.
    #[arg(long, value_enum, value_delimiter = ',')]
    emit: Vec<Emit>,
    /// Print the IR on standard error as lowered (`lower`) or after the named pass of
    /// the optimization pipeline, or after each of them (`all`), as LLVM's
    /// `-print-after` does.
    #[arg(long, value_name = "PASS|all")]
    print_after: Option<String>,
    /// Write the output here instead of standard output.
    #[arg(short = 'o', value_name = "OUT")]
    output: Option<PathBuf>,
    /// Print the IR as lowered, without the optimization passes.
    #[arg(long)]
    no_opt: bool,
    /// `--emit asm`: interleave the source lines with the listing.
    #[arg(long)]
    source_lines: bool,
    /// Warn about every divergent branch (W0008), with the chain of values back to
    /// the source of its divergence (`programIndex`, a varying load, ...).
    #[arg(long)]
    warn_divergent: bool,
    /// `--emit hex`: the entry point the image launches.
    #[arg(long, value_name = "NAME")]
    entry: Option<String>,
    /// `--emit hex`: a kernel argument, NAME=SPEC (as for `spmdc run`).
    #[arg(long = "arg", value_name = "NAME=SPEC")]
    args: Vec<String>,
    /// Blocks in the grid, X[,Y[,Z]]: the launch of `--emit hex`, and on dac-gpu
    /// with `--regalloc auto` the grid the predictor weighs (by default many blocks).
    #[arg(long, value_name = "X[,Y[,Z]]")]
    grid: Option<String>,
    /// Threads in a block, X[,Y[,Z]]: the launch of `--emit hex`, and on dac-gpu
    /// the block that shared-memory spill slots are laid out for (by default the
    /// machine's largest block).
    #[arg(long, value_name = "X[,Y[,Z]]")]
    block: Option<String>,
    /// Bytes of dynamic shared memory per block (the unsized `shared` array): the
    /// launch of `--emit hex`, and on dac-gpu what the `.shared` layout, occupancy and
    /// shared-memory spill slots count (default 0).
    #[arg(long, value_name = "BYTES")]
    dynamic_shared: Option<String>,
    #[command(flatten)]
    dac: DacCodegenArgs,
    #[command(flatten)]
    switches: SwitchArgs,
    #[command(flatten)]
    nyuzi: NyuziArgs,
}

#[derive(Args)]
struct FrontArgs {
    /// The source file; `-` reads standard input.
    #[arg(value_name = "FILE", required = true)]
    file: Option<String>,
    /// How to print diagnostics: `human` (rustc style) or `json` (one object per line on stderr).
    #[arg(long, value_enum, default_value_t = ErrorFormat::Human)]
    error_format: ErrorFormat,
    /// Colour in diagnostics; `auto` colours a terminal unless NO_COLOR is set.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    color: ColorArg,
    /// Add a directory to the `#include` search path.
    #[arg(short = 'I', value_name = "DIR")]
    include: Vec<PathBuf>,
    /// Define a macro: `-D NAME` or `-D NAME=VALUE`.
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    define: Vec<String>,
    /// Compile without the standard library (for testing the front end).
    #[arg(long, hide = true)]
    no_stdlib: bool,
    /// Print the wall time, heap peak and resident set of every stage on standard
    /// error, from preprocessing to the last back-end step (and the simulation, for
    /// `spmdc run`).
    #[arg(long)]
    time_passes: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Target {
    Nyuzi,
    DacGpu,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Nyuzi => "nyuzi",
            Target::DacGpu => "dac-gpu",
        }
    }

    /// The gang width and pointer size the program is compiled for: Nyuzi has 16 lanes
    /// and 32-bit addresses; the SIMT GPU runs warps of 32 with 64-bit addresses.
    fn sema_target(self) -> spmdc::front::sema::Target {
        match self {
            Target::Nyuzi => spmdc::back::nyuzi::TARGET,
            Target::DacGpu => spmdc::back::dac_gpu::TARGET,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Emit {
    Tokens,
    Ast,
    Ir,
    Asm,
    Hex,
}

impl Emit {
    /// How far the front end must go for this stage.
    fn stage(self) -> Stage {
        match self {
            Emit::Tokens => Stage::Tokens,
            Emit::Ast => Stage::Ast,
            Emit::Ir | Emit::Asm | Emit::Hex => Stage::Check,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Emit::Tokens => "tokens",
            Emit::Ast => "ast",
            Emit::Ir => "ir",
            Emit::Asm => "asm",
            Emit::Hex => "hex",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ErrorFormat {
    Human,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum ColorArg {
    Auto,
    Always,
    Never,
}

fn main() -> ExitCode {
    spmdc::heap::tune_system_heap();
    if std::env::args_os().any(|a| a == "--time-passes") {
        timing::count_heap();
    }
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    warn_ineffective(&cli, &given_options(&matches));
    ExitCode::from(driver::with_big_stack(move || {
        spmdc::heap::skip_first_heap_region();
        run(cli)
    }))
}

/// The options written on the command line (not defaulted), by their field names, of
/// the subcommand if there is one.
fn given_options(matches: &ArgMatches) -> Vec<String> {
    let m = matches.subcommand().map_or(matches, |(_, sub)| sub);
    m.ids()
        .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| id.as_str().to_string())
        .collect()
}

/// Warns (W0010) about options given where they change nothing, and (W0011) about
/// switches whose results are wrong by design, in the diagnostics' format.
fn warn_ineffective(cli: &Cli, given: &[String]) {
    let mut warnings = Vec::new();
    // One warning an option: the first reason found (the checks go from the most
    // fundamental, another target's option, to the stage-specific ones).
    let mut warned: Vec<String> = Vec::new();
    let mut warn = |id: &str, why: &str, help: &str| {
        if given.iter().any(|g| g == id) && !warned.iter().any(|w| w == id) {
            warned.push(id.to_string());
            let flag = match id {
                "args" => "--arg".to_string(),
                "print" => "--print".to_string(),
                _ => format!("--{}", id.replace('_', "-")),
            };
            let mut d = Diagnostic::warning(
                codes::INEFFECTIVE_OPTION,
                format!("`{flag}` has no effect {why}"),
            );
            if !help.is_empty() {
                d = d.with_help(help.to_string());
            }
            warnings.push(d);
        }
    };
    let (format, color) = match &cli.command {
        Some(Command::Run(args)) => {
            run_option_warnings(args, &mut warn);
            (args.front.error_format, args.front.color)
        }
        Some(Command::Bench(args)) => {
            if args.suite == "merge" {
                for id in ["config", "threads", "shard", "jobs", "quiet"] {
                    warn(
                        id,
                        "with `bench merge` (it only reads the runs of the folders)",
                        "",
                    );
                }
            }
            (ErrorFormat::Human, ColorArg::Auto)
        }
        None => {
            compile_option_warnings(&cli.compile, &mut warn);
            (cli.compile.front.error_format, cli.compile.front.color)
        }
        _ => return,
    };
    let switches = match &cli.command {
        // The interpreter makes no shuffles, so no ablation changes its results.
        Some(Command::Run(args)) if args.target != RunTarget::Interp => Some(&args.switches),
        None => Some(&cli.compile.switches),
        _ => None,
    };
    if let Some(d) = switches.and_then(ablation_warning) {
        warnings.push(d);
    }
    report_with(&SourceMap::new(), warnings.iter(), format, color);
}

/// `spmdc run`'s options that change nothing: another target's, a timing model's
/// without `--timing`, a trace's without a trace, what `--json` prints anyway.
fn run_option_warnings(args: &RunArgs, warn: &mut impl FnMut(&str, &str, &str)) {
    let target = format!("with `--target {}`", args.target.name());
    if args.target != RunTarget::Nyuzi {
        for id in NYUZI_ONLY {
            warn(id, &target, "it is an option of `--target nyuzi`");
        }
    }
    if args.target == RunTarget::Interp {
        warn(
            "shuffle",
            &target,
            "shuffles are made by the nyuzi and dac-gpu back ends; the interpreter runs the IR",
        );
    }
    if args.target != RunTarget::DacGpu {
        for id in DAC_ONLY {
            warn(id, &target, "it is an option of `--target dac-gpu`");
        }
    } else if !args.timing {
        warn(
            "sched",
            "without `--timing` (it chooses the timing model's warp scheduler)",
            "add `--timing`",
        );
    }
    if args.target == RunTarget::DacGpu && !args.timing {
        warn(
            "config",
            "on the run without `--timing`: the functional simulator has no caches, \
             latencies or SMs (the machine still bounds the code's registers and shared memory)",
            "add `--timing` to run the machine's timing model",
        );
    }
    if !args.trace && args.trace_json.is_none() {
        for id in ["trace_gang", "trace_limit"] {
            warn(id, "without `--trace` or `--trace-json`", "");
        }
    }
    if args.json {
        warn(
            "print",
            "with `--json` (the JSON object holds every buffer)",
            "",
        );
        if args.stats == Some(StatsView::Summary) {
            warn(
                "stats",
                "with `--json` (the JSON object holds the statistics; `--stats=full` adds the breakdown)",
                "",
            );
        }
    }
}

/// `spmdc FILE`'s options that change nothing: those of stages not printed, of a
/// launch image without one, of another target.
fn compile_option_warnings(args: &CompileArgs, warn: &mut impl FnMut(&str, &str, &str)) {
    let emits = if args.emit.is_empty() {
        vec![Emit::Asm]
    } else {
        args.emit.clone()
    };
    if !emits.contains(&Emit::Asm) {
        warn("source_lines", "without `--emit asm`", "");
    }
    if !emits.contains(&Emit::Hex) {
        for id in ["entry", "args"] {
            warn(
                id,
                "without `--emit hex` (it is part of a launch image)",
                "",
            );
        }
        if matches!(args.target, Target::Nyuzi) {
            warn(
                "grid",
                "without `--emit hex` (it is part of a launch image)",
                "",
            );
            for id in ["block", "dynamic_shared"] {
                warn(
                    id,
                    "with `--target nyuzi` without `--emit hex` (it is part of a launch image)",
                    "",
                );
            }
        } else if args.dac.regalloc != RegallocArg::Auto {
            warn(
                "grid",
                "without `--emit hex` or `--regalloc auto` (the predictor weighs the grid)",
                "",
            );
        }
    }
    if !matches!(args.target, Target::Nyuzi) || !emits.contains(&Emit::Hex) {
        for id in &NYUZI_ONLY[..3] {
            warn(id, "without `--target nyuzi --emit hex`", "");
        }
    }
    if matches!(args.target, Target::Nyuzi) {
        for id in DAC_ONLY.iter().filter(|&&id| id != "sched") {
            warn(
                id,
                "with `--target nyuzi`",
                "it is an option of `--target dac-gpu`",
            );
        }
    }
    if emits.iter().all(|e| matches!(e, Emit::Tokens | Emit::Ast)) {
        let why = "with only `--emit tokens` or `--emit ast` (nothing is lowered to IR)";
        for id in [
            "no_opt",
            "print_after",
            "warn_divergent",
            "no_uniformity",
            "no_skip_empty",
            "force_cfg_opts",
            "no_inline",
            "no_scalar_datapath",
            "shuffle",
        ] {
            warn(id, why, "");
        }
    }
    if !emits.iter().any(|e| matches!(e, Emit::Asm | Emit::Hex)) {
        // The back ends' choices: nothing above the machine code shows them.
        let why = "without `--emit asm` or `--emit hex` (the back end makes that choice)";
        for id in [
            "shuffle",
            "max_regs",
            "regalloc",
            "block",
            "grid",
            "dynamic_shared",
        ] {
            warn(id, why, "");
        }
    }
}

/// Options of `--target nyuzi` only.
const NYUZI_ONLY: [&str; 4] = ["cores", "threads", "gang_stack", "no_bounds_check"];
/// Options of `--target dac-gpu` only.
const DAC_ONLY: [&str; 6] = ["config", "sched", "max_regs", "regalloc", "no_dac", "dac"];

/// W0011 for `--shuffle noload|nocorner`, the ablations that give wrong results.
fn ablation_warning(switches: &SwitchArgs) -> Option<Diagnostic> {
    let mode = switches.shuffle.mode();
    if !mode.is_ablation() {
        return None;
    }
    let what = if mode == spmdc::passes::ShuffleMode::NoLoad {
        "NO LOAD: paired loads are deleted"
    } else {
        "NO CORNER: the edge lanes are not reloaded"
    };
    Some(
        Diagnostic::warning(
            codes::WRONG_BY_DESIGN,
            format!(
                "`--shuffle {}` is an ablation of shuffle synthesis: it gives wrong results",
                mode.name()
            ),
        )
        .with_note(format!("paper 004's {what}"))
        .with_help("use it to measure, not to compute; `--shuffle all` or `auto` keep the results"),
    )
}

fn run(cli: Cli) -> u8 {
    let time_passes = match &cli.command {
        Some(Command::Check { front, .. }) => front.time_passes,
        Some(Command::Run(args)) => args.front.time_passes,
        Some(
            Command::Explain { .. }
            | Command::Bench(_)
            | Command::IspcTests(_)
            | Command::IspcExamples(_)
            | Command::Gen(_)
            | Command::Difftest(_)
            | Command::Reduce(_)
            | Command::Playground(_),
        ) => false,
        None => cli.compile.front.time_passes,
    };
    if time_passes {
        timing::enable();
    }
    let status = timing::stage("total", || match cli.command {
        Some(Command::Check {
            front,
            warn_divergent,
        }) => check(&front, warn_divergent),
        Some(Command::Run(args)) => run_kernel(&args),
        Some(Command::Explain { code, list }) => explain(code.as_deref(), list),
        Some(Command::Bench(args)) => bench(&args),
        Some(Command::Difftest(args)) => difftest(&args),
        Some(Command::Reduce(args)) => reduce(&args),
        Some(Command::Gen(GenArgs {
            coverage: Some(SeedSet(ranges)),
            ..
        })) => {
            let seeds = ranges.into_iter().flatten();
            let c = spmdc::gen::coverage::of_seeds(seeds, spmdc::difftest::size_for_seed);
            write_output(
                None,
                &format!("{} programs\n\n{}", c.programs, c.to_table()),
            )
        }
        Some(Command::Gen(args)) => {
            let program = spmdc::gen::generate(args.seed, args.size);
            write_output(
                args.output.as_ref(),
                &spmdc::gen::emit::program_text(&program),
            )
        }
        Some(Command::IspcTests(args)) => ispc_tests(&args),
        Some(Command::IspcExamples(args)) => ispc_examples(&args),
        Some(Command::Playground(args)) => playground(&args),
        None => compile(&cli.compile),
    });
    if time_passes {
        eprint!("{}", timing::report(&timing::take()));
    }
    status
}

fn front_options(args: &FrontArgs) -> FrontOptions {
    FrontOptions {
        include_dirs: args.include.clone(),
        defines: args
            .define
            .iter()
            .map(|d| match d.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None => (d.clone(), "1".to_string()),
            })
            .collect(),
        no_stdlib: args.no_stdlib,
        ..FrontOptions::default()
    }
}

/// Reads the input and runs the front end; on an unreadable file reports and gives the exit code.
fn front(args: &FrontArgs, stage: Stage) -> Result<FrontResult, u8> {
    front_for(args, stage, FrontOptions::default().target)
}

/// [`front`] for a given gang width and pointer size.
fn front_for(
    args: &FrontArgs,
    stage: Stage,
    target: spmdc::front::sema::Target,
) -> Result<FrontResult, u8> {
    let path = args.file.as_deref().unwrap_or("-");
    let options = FrontOptions {
        target,
        ..front_options(args)
    };
    match timing::stage("read", || driver::read_input(path)) {
        Ok((name, file, text)) => Ok(driver::run_front(&name, file, text, &options, stage)),
        Err(diag) => {
            report(&SourceMap::new(), std::iter::once(&diag), args);
            Err(EXIT_USAGE)
        }
    }
}

/// `spmdc check`: the front end's diagnostics; with `--warn-divergent`, the program is
/// also lowered (and optimized, as `spmdc FILE` does) for the uniformity analysis's
/// report, and an error of the lowering is reported as a compile error.
fn check(args: &FrontArgs, warn_divergent: bool) -> u8 {
    let result = match front(args, Stage::Check) {
        Ok(result) => result,
        Err(code) => return code,
    };
    let status = finish(&result, args);
    if status != EXIT_OK || !warn_divergent {
        return status;
    }
    match driver::lower_front(&result) {
        Ok(module) => {
            let diags = uniformity::report(&result, &module, true);
            report(&result.sources, diags.iter(), args);
            EXIT_OK
        }
        Err(diags) => {
            report(&result.sources, diags.iter(), args);
            EXIT_COMPILE_ERROR
        }
    }
}

fn compile(args: &CompileArgs) -> u8 {
    let emits = if args.emit.is_empty() {
        vec![Emit::Asm]
    } else {
        args.emit.clone()
    };
    if emits.len() > 1 && emits.contains(&Emit::Hex) {
        eprintln!("error: `--emit hex` writes a launch image and its layout: it cannot be combined with other stages");
        return EXIT_USAGE;
    }
    if let Some(name) = &args.print_after {
        let passes = spmdc::passes::Pipeline::every_pass_name();
        if name != "all" && name != "lower" && !passes.contains(&name.as_str()) {
            eprintln!(
                "error: `--print-after {name}`: no such pass; the passes are `lower` (the IR as lowered), {}, or `all`",
                passes.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
            );
            return EXIT_USAGE;
        }
    }
    let stage = emits
        .iter()
        .map(|e| e.stage())
        .max()
        .unwrap_or(Stage::Check);
    let stage = if args.print_after.is_some() {
        Stage::Check
    } else {
        stage
    };
    let mut result = match front_for(&args.front, stage, args.target.sema_target()) {
        Ok(r) => r,
        Err(code) => return code,
    };
    result.switches = args.switches.switches();
    let status = finish(&result, &args.front);
    if status != EXIT_OK {
        return status;
    }
    // The optimized IR, lowered once for the uniformity notes and the later stages.
    let lowered = (stage == Stage::Check).then(|| lower_printing(&result, args));
    if let Some(Ok(module)) = &lowered {
        report_uniformity(&result, module, args);
    }
    if emits == [Emit::Hex] {
        return if matches!(args.target, Target::Nyuzi) {
            emit_hex(&result, args)
        } else {
            let diag = Diagnostic::error(codes::UNSUPPORTED_EMIT, "`--emit hex` writes Nyuzi launch images")
                .with_note(format!("`{}` runs on the simulator directly, from the compiled program", args.target.name()))
                .with_help("use `--target nyuzi --emit hex`, or `spmdc run --target dac-gpu` to run the kernel");
            report(&result.sources, std::iter::once(&diag), &args.front);
            EXIT_USAGE
        };
    }
    let mut text = String::new();
    for &emit in &emits {
        let one = match emit_stage(emit, &result, args, lowered.as_ref()) {
            Ok(t) => t,
            Err(code) => return code,
        };
        if emits.len() > 1 {
            text.push_str(&format!("==== {} ====\n", emit.name()));
        }
        text.push_str(&one);
        if emits.len() > 1 && !text.ends_with('\n') {
            text.push('\n');
        }
    }
    write_output(args.output.as_ref(), &text)
}

/// The IR of `result` for the later stages: lowered and optimized (unless `--no-opt`),
/// printed on standard error after the stages `--print-after` names.
fn lower_printing(
    result: &FrontResult,
    args: &CompileArgs,
) -> Result<spmdc::ir::Module, Vec<Diagnostic>> {
    let Some(wanted) = &args.print_after else {
        return driver::lower_front_with(result, !args.no_opt);
    };
    let mut count = std::collections::HashMap::<String, usize>::new();
    let mut print = |name: &str, module: &spmdc::ir::Module| {
        if wanted != "all" && wanted != name {
            return;
        }
        // A pass that runs more than once (`dce`) is numbered.
        let n = count.entry(name.to_string()).or_default();
        *n += 1;
        let label = if *n > 1 {
            format!("{name} ({n})")
        } else {
            name.to_string()
        };
        let mut out = std::io::stderr().lock();
        let _ = writeln!(out, ";; IR after {label}");
        let _ = out.write_all(spmdc::ir::write::module_to_string(module).as_bytes());
    };
    driver::lower_front_observed(result, !args.no_opt, &result.switches, &mut print)
}

/// The text of one `--emit` stage (not `hex`); `Err` is the exit code after reporting.
fn emit_stage(
    emit: Emit,
    result: &FrontResult,
    args: &CompileArgs,
    lowered: Option<&Result<spmdc::ir::Module, Vec<Diagnostic>>>,
) -> Result<String, u8> {
    let lowered = || match lowered {
        Some(Ok(module)) => Ok(module.clone()),
        _ => driver::lower_front_with(result, !args.no_opt),
    };
    Ok(match emit {
        Emit::Tokens => driver::tokens::tokens_listing(result),
        Emit::Ast => dump::dump_unit(
            &result.unit,
            &result.interner,
            &result.sources,
            result.stdlib_file,
        ),
        Emit::Ir => match lowered() {
            Ok(module) => spmdc::analysis::affine::annotated_module_text_with_uniformity(
                &module,
                &uniformity::analyze_module(&module),
                &spmdc::analysis::affine::analyze_module(&module),
            ),
            Err(diags) => {
                report(&result.sources, diags.iter(), &args.front);
                return Err(EXIT_COMPILE_ERROR);
            }
        },
        Emit::Asm if matches!(args.target, Target::Nyuzi) => {
            let compiled = lowered().map_err(driver::RunError::Compile).and_then(|m| {
                spmdc::back::nyuzi::run::compile_lowered(result, m, !args.no_opt, None)
            });
            match compiled {
                Ok((_, obj)) => {
                    spmdc::back::nyuzi::listing(&obj, args.source_lines.then_some(&result.sources))
                }
                Err(e) => return Err(report_run_error(result, e, &args.front)),
            }
        }
        Emit::Asm => {
            let options = dac_compile_options(args)?;
            let compiled = lowered().map_err(driver::RunError::Compile).and_then(|m| {
                spmdc::back::dac_gpu::run::compile_lowered(result, m, !args.no_opt, &options)
            });
            match compiled {
                Ok(c) => {
                    spmdc::back::dac_gpu::listing(&c, args.source_lines.then_some(&result.sources))
                }
                Err(e) => return Err(report_run_error(result, e, &args.front)),
            }
        }
        Emit::Hex => unreachable!("`--emit hex` is written by `emit_hex`"),
    })
}

/// The uniformity analysis's notes on the user's program: `cif`-style hints on
/// conditions it proves uniform (always) and, with `--warn-divergent`, every divergent
/// branch. A program that does not lower is reported by the stage that needs the IR.
fn report_uniformity(result: &FrontResult, module: &spmdc::ir::Module, args: &CompileArgs) {
    let diags = uniformity::report(result, module, args.warn_divergent);
    report(&result.sources, diags.iter(), &args.front);
}

/// `--emit hex` for Nyuzi: the launch image at `-o` (default `image.hex`) and its
/// layout beside it (`image.hex.json`).
/// The dac-gpu code generation options of `spmdc FILE`: `Err` with the exit code
/// when `--config` or `--block` is bad (the message is printed).
fn dac_compile_options(args: &CompileArgs) -> Result<spmdc::back::dac_gpu::Options, u8> {
    let usage = |e: String| {
        eprintln!("error: {e}");
        EXIT_USAGE
    };
    if args.dac.regalloc == RegallocArg::Exhaustive {
        return Err(usage(
            "`--regalloc exhaustive` simulates each variant, so it needs a launch: use `spmdc run`"
                .into(),
        ));
    }
    let mut options = args
        .dac
        .options(&args.switches)
        .map_err(|e| usage(format!("--config: {e}")))?;
    // The count of `--flag X[,Y[,Z]]`, when given.
    let count = |flag: &str, text: &Option<String>| -> Result<Option<u64>, u8> {
        text.as_deref()
            .map(|t| sim::Dim3::parse(t).map(|d| d.count()))
            .transpose()
            .map_err(|e| {
                usage(format!(
                    "invalid `--{flag} {}`: {e}",
                    text.as_deref().unwrap_or("")
                ))
            })
    };
    if let Some(threads) = count("block", &args.block)? {
        options.block_threads = Some(threads.min(u64::from(u32::MAX)) as u32);
    }
    options.grid_blocks = count("grid", &args.grid)?;
    if let Some(text) = &args.dynamic_shared {
        let config = spmdc::launch::LaunchConfig::single_gang(1)
            .with_dynamic_shared(Some(text))
            .map_err(|e| usage(e.message))?;
        options.dynamic_shared = config.dynamic_shared;
    }
    Ok(options)
}

fn emit_hex(front: &FrontResult, args: &CompileArgs) -> u8 {
    let Some(entry) = args.entry.as_deref() else {
        eprintln!("error: `--emit hex` needs `--entry NAME` and the kernel's `--arg`s: an image is one launch");
        return EXIT_USAGE;
    };
    let request = driver::RunRequest {
        optimize: !args.no_opt,
        entry,
        args: &args.args,
        grid: args.grid.as_deref(),
        block: args.block.as_deref(),
        dynamic_shared: args.dynamic_shared.as_deref(),
        limits: spmdc::interp::Limits::default(),
    };
    let built = match spmdc::back::nyuzi::run::build_launch(
        front,
        &request,
        args.nyuzi.shape(),
        &args.nyuzi.image(),
    ) {
        Ok(b) => b,
        Err(e) => return report_run_error(front, e, &args.front),
    };
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("image.hex"));
    let mut json_path = path.clone().into_os_string();
    json_path.push(".json");
    let status = write_output(Some(&path), &built.image.to_hex());
    if status != EXIT_OK {
        return status;
    }
    write_output(
        Some(&PathBuf::from(json_path)),
        &built.image.layout.to_json_string(),
    )
}

/// Reports a failed compile/launch/run; gives the exit code.
fn report_run_error(front: &FrontResult, e: driver::RunError, args: &FrontArgs) -> u8 {
    match e {
        driver::RunError::Compile(diags) => {
            report(&front.sources, diags.iter(), args);
            EXIT_COMPILE_ERROR
        }
        driver::RunError::Launch(errors) => {
            for e in errors {
                eprintln!("error: {e}");
            }
            EXIT_USAGE
        }
        driver::RunError::Trap(trap) => {
            eprintln!("error: {}", trap.render(&front.sources));
            EXIT_TRAP
        }
    }
}

/// A failed `spmdc run`: as [`report_run_error`] prints it, and in the forms the
/// user asked for. Under `--json` the standard output still gets one object, with
/// the entry, the target and the `error` (its `kind`: `compile`, `launch` or `trap`);
/// under `--error-format json` launch errors and traps are JSON lines on stderr as
/// diagnostics are (code `launch` or `runtime`).
fn report_run_failure(front: &FrontResult, e: driver::RunError, args: &RunArgs) -> u8 {
    use serde_json::json;
    let error = match &e {
        driver::RunError::Compile(diags) => json!({
            "kind": "compile",
            "message": format!("the program does not compile ({} errors)", diags.iter().filter(|d| d.is_error()).count()),
        }),
        driver::RunError::Launch(errors) => json!({
            "kind": "launch",
            "message": errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "),
        }),
        driver::RunError::Trap(trap) => {
            let mut t = trap.to_json(&front.sources);
            t["kind"] = json!("trap");
            t
        }
    };
    print_json_failure(args, error.clone());
    match e {
        driver::RunError::Launch(errors) if args.front.error_format == ErrorFormat::Json => {
            report_launch_errors(&errors, ErrorFormat::Json);
            EXIT_USAGE
        }
        driver::RunError::Trap(trap) if args.front.error_format == ErrorFormat::Json => {
            eprintln!("{}", runtime_json_line("runtime", &trap.message, &error));
            EXIT_TRAP
        }
        e => report_run_error(front, e, &args.front),
    }
}

/// Launch errors on stderr: as text, or as JSON lines in the diagnostics' form with
/// the message, notes and help apart (code `launch`, or the error's own code).
fn report_launch_errors(errors: &[spmdc::launch::LaunchError], format: ErrorFormat) {
    for e in errors {
        if format == ErrorFormat::Human {
            eprintln!("error: {e}");
            continue;
        }
        let mut line = serde_json::from_str::<serde_json::Value>(&runtime_json_line(
            e.code().map_or("launch", |c| c.as_str()),
            &e.message,
            &serde_json::Value::Null,
        ))
        .unwrap_or_default();
        let mut notes = e.notes.clone();
        if let Some(s) = &e.snippet {
            notes.insert(
                0,
                format!(
                    "in `{}`, at `{}`",
                    s.text,
                    s.text.get(s.start..s.end).unwrap_or("")
                ),
            );
        }
        line["notes"] = serde_json::json!(notes);
        line["help"] = serde_json::json!(e.help.iter().collect::<Vec<_>>());
        eprintln!("{line}");
    }
}

/// Under `--json`, the one object a failed run still prints on standard output:
/// the entry, the target and the `error`.
fn print_json_failure(args: &RunArgs, error: serde_json::Value) {
    if args.json {
        let object = serde_json::json!({
            "entry": args.entry,
            "target": args.target.name(),
            "error": error,
        });
        let _ = write_output(None, &format!("{object:#}\n"));
    }
}

/// A usage error of `spmdc run` found before compiling, as `--json` records it.
fn usage_failure(args: &RunArgs, message: &str) {
    print_json_failure(
        args,
        serde_json::json!({"kind": "usage", "message": message}),
    );
}

/// One JSON line on stderr in the diagnostics' form (`--error-format json`) for an
/// error found while launching or running: `code` says which, `runtime` holds the
/// trap's details (`null` for launch errors).
fn runtime_json_line(code: &str, message: &str, details: &serde_json::Value) -> String {
    let at = |k: &str| details.get(k).cloned().unwrap_or(serde_json::Value::Null);
    serde_json::json!({
        "code": code,
        "severity": "error",
        "message": message,
        "file": at("file"),
        "line": at("line"),
        "column": at("column"),
        "span": at("span"),
        "labels": [],
        "notes": [],
        "help": [],
        "runtime": details,
    })
    .to_string()
}

fn run_kernel(args: &RunArgs) -> u8 {
    let usage = |msg: &str, help: &str| {
        let diag =
            Diagnostic::error(codes::UNSUPPORTED_EMIT, msg.to_string()).with_help(help.to_string());
        report(&SourceMap::new(), std::iter::once(&diag), &args.front);
        usage_failure(args, msg);
        EXIT_USAGE
    };
    match args.target {
        RunTarget::DacGpu if args.program_count != 16 && args.program_count != 32 => {
            return usage(
                "`--target dac-gpu` runs gangs of 32 program instances (warps)",
                "leave out `--program-count` (or give 32)",
            )
        }
        RunTarget::Nyuzi if args.program_count != 16 => {
            return usage(
                "`--target nyuzi` runs gangs of 16 program instances",
                "leave out `--program-count` (or give 16)",
            )
        }
        RunTarget::Interp if args.timing => {
            return usage(
                "`--timing` needs a simulated machine",
                "use `--target nyuzi --timing` or `--target dac-gpu --timing`",
            )
        }
        _ => {}
    }
    let dac_codegen = match check_run_request(args) {
        Ok(codegen) => codegen,
        Err(code) => return code,
    };
    let path = args.front.file.as_deref().unwrap_or("-");
    let (name, file, text) = match driver::read_input(path) {
        Ok(input) => input,
        Err(diag) => {
            report(&SourceMap::new(), std::iter::once(&diag), &args.front);
            usage_failure(args, &diag.message);
            return EXIT_USAGE;
        }
    };
    let mut options = front_options(&args.front);
    options.target.program_count = args.program_count;
    if args.target == RunTarget::Nyuzi {
        options.target = Target::Nyuzi.sema_target();
    }
    if args.target == RunTarget::DacGpu {
        options.target = Target::DacGpu.sema_target();
    }
    let mut front = driver::run_front(&name, file, text, &options, Stage::Check);
    front.switches = args.switches.switches();
    let status = finish(&front, &args.front);
    if status != EXIT_OK {
        return status;
    }
    let request = driver::RunRequest {
        optimize: !args.no_opt,
        entry: &args.entry,
        args: &args.args,
        grid: args.grid.as_deref(),
        block: args.block.as_deref(),
        dynamic_shared: args.dynamic_shared.as_deref(),
        limits: spmdc::interp::Limits {
            max_steps: args.max_steps,
            ..Default::default()
        },
    };
    let machine = match args.target {
        RunTarget::Interp => spmdc::profile::run::Machine::Interp,
        RunTarget::Nyuzi => {
            spmdc::profile::run::Machine::Nyuzi(spmdc::back::nyuzi::run::NyuziRunOptions {
                timing: args.timing,
                machine: args.nyuzi.shape(),
                image: args.nyuzi.image(),
                bounds_check: !args.no_bounds_check,
                ..Default::default()
            })
        }
        RunTarget::DacGpu => {
            spmdc::profile::run::Machine::DacGpu(Box::new(spmdc::back::dac_gpu::DacRunOptions {
                timing: args.timing,
                config: args.dac.codegen.config.clone(),
                scheduler: match args.dac.sched {
                    SchedArg::Gto => sim::gpu::SchedulerKind::Gto,
                    SchedArg::Lrr => sim::gpu::SchedulerKind::Lrr,
                },
                codegen: dac_codegen.expect("checked before compiling"),
                max_warp_insts: args.max_steps,
                exhaustive: args.dac.codegen.regalloc == RegallocArg::Exhaustive,
            }))
        }
    };
    let wanted = spmdc::profile::run::Wanted {
        // `--stats=full` takes its per-function breakdown from a profile.
        profile: args.profile.is_some()
            || args.profile_json.is_some()
            || args.stats == Some(StatsView::Full),
        trace: (args.trace || args.trace_json.is_some())
            .then_some((args.trace_gang, args.trace_limit)),
    };
    if wanted != Default::default() {
        return run_recorded(args, &front, &request, &machine, wanted);
    }
    let outcome = spmdc::run_progress::with_progress(shows_progress(args), || {
        machine.run_plain(&front, &request)
    });
    let mut result = match outcome {
        Ok(r) => r,
        Err(e) => return report_run_failure(&front, e, args),
    };
    keep_breakdown(&mut result, args, None);
    if let Err(code) = save_buffers(&result, args) {
        return code;
    }
    if args.json {
        return write_output(None, &result.to_json_string());
    }
    match run_text(&result, args) {
        Ok(out) => write_output(None, &out),
        Err(code) => code,
    }
}

/// `--save NAME=PATH`: the name and the path, split at the first `=`.
fn parse_save(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.trim().is_empty() && !path.is_empty() => {
            Ok((name.trim().to_string(), PathBuf::from(path)))
        }
        _ => Err(format!(
            "`{text}` is not NAME=PATH (for example `--save y=y.bin`)"
        )),
    }
}

/// Writes the `--save`d buffers; on error, reports it and gives the exit code.
fn save_buffers(result: &spmdc::launch::RunResult, args: &RunArgs) -> Result<(), u8> {
    result.save(&args.save).map_err(|e| {
        report_launch_errors(&[e], args.front.error_format);
        EXIT_USAGE
    })
}

/// Whether a run shows its progress: a timing run, with a terminal to show it on.
fn shows_progress(args: &RunArgs) -> bool {
    args.timing && std::io::stderr().is_terminal()
}

/// What a run prints without `--json`: the kernel's output, the `--print`ed
/// buffers and the `--stats`.
fn run_text(result: &spmdc::launch::RunResult, args: &RunArgs) -> Result<String, u8> {
    let mut out = result.output.clone();
    match result.format_print(&args.print) {
        Ok(text) => out.push_str(&text),
        Err(e) => {
            report_launch_errors(&[e], args.front.error_format);
            return Err(EXIT_USAGE);
        }
    }
    if let Some(view) = args.stats {
        out.push_str(&result.stats.format_text());
        if view == StatsView::Full {
            out.push_str(&spmdc::launch::stats_text::render_breakdown(
                &result.breakdown,
            ));
        }
    }
    Ok(out)
}

/// Keeps the run's breakdown (per SM or core, and per function from `profile`)
/// for `--stats=full` only, so the JSON of other runs stays as it was.
fn keep_breakdown(
    result: &mut spmdc::launch::RunResult,
    args: &RunArgs,
    profile: Option<&spmdc::profile::SourceProfile>,
) {
    if args.stats != Some(StatsView::Full) {
        result.breakdown = Default::default();
    } else if let Some(p) = profile {
        result.breakdown.functions = p.per_function();
    }
}

/// `spmdc run --profile/--trace`: runs with a recorder, prints what the run prints,
/// then the annotated source (or instruction listing) and the trace; the JSON forms
/// go where `--profile-json`/`--trace-json` say, or into the `--json` object.
fn run_recorded(
    args: &RunArgs,
    front: &FrontResult,
    request: &driver::RunRequest<'_>,
    machine: &spmdc::profile::run::Machine,
    wanted: spmdc::profile::run::Wanted,
) -> u8 {
    use spmdc::profile::render;
    let recorded = spmdc::run_progress::with_progress(shows_progress(args), || {
        spmdc::profile::run::run(front, request, machine, wanted)
    });
    let mut result = match recorded.result {
        Ok(r) => r,
        Err(e) => {
            // What led to the error: the trace up to it, on standard output.
            if let (true, Some(t)) = (args.trace && !args.json, &recorded.trace) {
                let _ = write_output(None, &render::trace_listing(t));
            }
            return report_run_failure(front, e, args);
        }
    };
    keep_breakdown(&mut result, args, recorded.profile.as_ref());
    if let Err(code) = save_buffers(&result, args) {
        return code;
    }
    let result = &result;
    let profiled = args.profile.is_some() || args.profile_json.is_some();
    for (path, json) in [
        (
            &args.profile_json,
            recorded.profile.as_ref().map(|p| p.to_json()),
        ),
        (
            &args.trace_json,
            recorded.trace.as_ref().map(|t| t.to_json()),
        ),
    ] {
        if let (Some(path), Some(json)) = (path, json) {
            let to = (path.as_os_str() != "-").then_some(path);
            let status = write_output(to, &format!("{json}\n"));
            if status != EXIT_OK {
                return status;
            }
        }
    }
    let mut out = String::new();
    if args.json {
        let mut object = result.to_json();
        if let (true, Some(p)) = (profiled, &recorded.profile) {
            object["profile"] = serde_json::to_value(p).unwrap_or_default();
        }
        if let Some(t) = &recorded.trace {
            object["trace"] = serde_json::to_value(t).unwrap_or_default();
        }
        out.push_str(&format!("{object:#}\n"));
        return write_output(None, &out);
    }
    match run_text(result, args) {
        Ok(text) => out.push_str(&text),
        Err(code) => return code,
    }
    if let (Some(view), Some(p)) = (args.profile, &recorded.profile) {
        if args.stats.is_some() {
            out.push('\n');
        }
        out.push_str(&match view {
            ProfileView::Lines => render::annotated_source(p, &front.sources, front.main_file),
            ProfileView::Asm => render::instruction_listing(p),
        });
    }
    if let (true, Some(t)) = (args.trace, &recorded.trace) {
        out.push_str(&render::trace_listing(t));
    }
    write_output(None, &out)
}

/// The usage errors of `spmdc run` that need no compiled kernel, found before
/// compiling: the launch shape, and on dac-gpu the machine (`--config`) and whether
/// it can hold the block. Gives the dac-gpu code generation options.
fn check_run_request(args: &RunArgs) -> Result<Option<spmdc::back::dac_gpu::Options>, u8> {
    let usage = |msg: String| {
        if args.front.error_format == ErrorFormat::Json {
            eprintln!(
                "{}",
                runtime_json_line("launch", &msg, &serde_json::Value::Null)
            );
        } else {
            eprintln!("error: {msg}");
        }
        usage_failure(args, &msg);
        EXIT_USAGE
    };
    let program_count = match args.target {
        RunTarget::Interp => args.program_count,
        RunTarget::Nyuzi => spmdc::back::nyuzi::TARGET.program_count,
        RunTarget::DacGpu => spmdc::back::dac_gpu::TARGET.program_count,
    };
    let shape = spmdc::launch::LaunchConfig::from_args(
        args.grid.as_deref(),
        args.block.as_deref(),
        program_count,
    )
    .map_err(|e| usage(e.to_string()))?;
    if args.target != RunTarget::DacGpu {
        return Ok(None);
    }
    let codegen = args
        .dac
        .codegen
        .options(&args.switches)
        .map_err(|e| usage(format!("--config: {e}")))?;
    let machine = &codegen.machine;
    if machine.warp_size as usize != sim::gpu::exec::WARP {
        return Err(usage(format!(
            "--config: warp_size {} (the dac-gpu simulator runs {}-lane warps)",
            machine.warp_size,
            sim::gpu::exec::WARP
        )));
    }
    let most = machine
        .max_threads_per_block
        .min(sim::gpu::MAX_BLOCK_THREADS);
    let threads = shape.block.count();
    if threads > u64::from(most) {
        return Err(usage(format!(
            "invalid `--block {}`: {threads} threads per block; the machine holds at most {most}",
            args.block.as_deref().unwrap_or_default()
        )));
    }
    Ok(Some(codegen))
}

fn write_output(path: Option<&PathBuf>, text: &str) -> u8 {
    let written = match path {
        Some(p) => {
            std::fs::write(p, text).map_err(|e| format!("cannot write `{}`: {e}", p.display()))
        }
        None => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`spmdc ... | head`) is not an error worth reporting.
            let _ = out.write_all(text.as_bytes());
            Ok(())
        }
    };
    match written {
        Ok(()) => EXIT_OK,
        Err(msg) => {
            eprintln!("error: {msg}");
            EXIT_USAGE
        }
    }
}

/// Prints the diagnostics and a summary; gives the exit code.
fn finish(result: &FrontResult, args: &FrontArgs) -> u8 {
    report(&result.sources, result.diags.iter(), args);
    summary(&result.diags, args);
    if result.diags.has_errors() {
        EXIT_COMPILE_ERROR
    } else {
        EXIT_OK
    }
}

/// The most diagnostics one report prints in the human format; the rest are counted
/// in a closing line (and in the summary). JSON lines are all printed: tools want
/// every one, and none quotes source text.
const MAX_PRINTED_DIAGNOSTICS: usize = 100;

fn report<'a>(sources: &SourceMap, diags: impl Iterator<Item = &'a Diagnostic>, args: &FrontArgs) {
    report_with(sources, diags, args.error_format, args.color);
}

/// [`report`] in a given format and colour.
fn report_with<'a>(
    sources: &SourceMap,
    diags: impl Iterator<Item = &'a Diagnostic>,
    format: ErrorFormat,
    color: ColorArg,
) {
    let mut err = std::io::stderr().lock();
    let color = color_choice(color).resolve(std::io::stderr().is_terminal());
    let mut unprinted = 0usize;
    for (i, d) in diags.enumerate() {
        let text = match format {
            ErrorFormat::Json => diag::render_json_line(sources, d) + "\n",
            ErrorFormat::Human if i < MAX_PRINTED_DIAGNOSTICS => {
                diag::render_human(sources, d, color)
            }
            ErrorFormat::Human => {
                unprinted += 1;
                continue;
            }
        };
        let _ = err.write_all(text.as_bytes());
    }
    if unprinted > 0 {
        let _ = writeln!(
            err,
            "note: {unprinted} more diagnostics not shown (only the first {MAX_PRINTED_DIAGNOSTICS} are printed)"
        );
    }
}

fn summary(diags: &Diagnostics, args: &FrontArgs) {
    if args.error_format == ErrorFormat::Json {
        return;
    }
    let (errors, warnings) = (diags.error_count(), diags.warning_count());
    let plural = |n: usize, w: &str| {
        if n == 1 {
            format!("1 {w}")
        } else {
            format!("{n} {w}s")
        }
    };
    if errors > 0 {
        let also = if warnings > 0 {
            format!("; {} emitted", plural(warnings, "warning"))
        } else {
            String::new()
        };
        eprintln!(
            "error: could not compile due to {}{also}",
            plural(errors, "error")
        );
    } else if warnings > 0 {
        eprintln!("warning: {} emitted", plural(warnings, "warning"));
    }
}

fn color_choice(c: ColorArg) -> ColorChoice {
    match c {
        ColorArg::Auto => ColorChoice::Auto,
        ColorArg::Always => ColorChoice::Always,
        ColorArg::Never => ColorChoice::Never,
    }
}

fn playground(args: &PlaygroundArgs) -> u8 {
    let config = spmdc::playground::Config {
        bind: std::net::SocketAddr::new(args.bind, args.port),
        ..Default::default()
    };
    if !args.bind.is_loopback() {
        eprintln!(
            "warning: listening on {}: any machine that can reach it can compile and run programs here",
            args.bind
        );
    }
    let server = match spmdc::playground::Server::bind(config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot listen on {}:{}: {e}", args.bind, args.port);
            return EXIT_USAGE;
        }
    };
    let url = match server.addr() {
        Some(a) if a.ip().is_unspecified() => format!("http://127.0.0.1:{}/", a.port()),
        Some(a) => format!("http://{a}/"),
        None => format!("http://{}:{}/", args.bind, args.port),
    };
    eprintln!("spmdc playground: {url} (Ctrl-C stops it)");
    if args.open {
        open_browser(&url);
    }
    server.serve();
    EXIT_OK
}

/// Opens `url` with the desktop's opener; failing, says so.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(opener).arg(url).spawn() {
        eprintln!("warning: cannot open a browser ({opener}: {e}); open {url} yourself");
    }
}

fn explain(code: Option<&str>, list: bool) -> u8 {
    if list {
        let text: String = codes::ALL
            .iter()
            .map(|c| format!("{}  {}\n", c.code, c.summary))
            .collect();
        return write_output(None, &text);
    }
    let code = code.unwrap_or_default();
    match codes::lookup(code) {
        Some(info) => {
            let mut text = info.explanation.to_string();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            write_output(None, &text)
        }
        None => {
            let all = codes::ALL.iter().map(|c| c.code.as_str());
            let hint = diag::suggest::closest(&code.to_ascii_uppercase(), all)
                .map(|c| format!("; did you mean `{c}`?"))
                .unwrap_or_default();
            eprintln!("error: `{code}` is not a spmdc diagnostic code{hint}");
            eprintln!("help: `spmdc explain --list` lists every code");
            EXIT_USAGE
        }
    }
}

/// `spmdc bench SUITE`: runs the suite, prints its table (and its failed checks on
/// standard error).
fn ispc_tests(args: &IspcTestsArgs) -> u8 {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("error: cannot find the spmdc executable: {e}");
            return EXIT_USAGE;
        }
    };
    if !args.checkout.join("tests").join("func-tests").is_dir() {
        eprintln!(
            "error: {} has no tests/func-tests\n  = help: give the root of a checkout of https://github.com/ispc/ispc",
            args.checkout.display()
        );
        return EXIT_USAGE;
    }
    let opts = spmdc::ispc_suite::SuiteOptions {
        exe,
        checkout: args.checkout.clone(),
        target: args.target.name().to_string(),
        program_count: args.program_count,
        filter: args.filter.clone(),
        jobs: args
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        timeout: std::time::Duration::from_secs(args.timeout),
        max_steps: args.max_steps,
    };
    let report = match spmdc::ispc_suite::run(&opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    if let Some(path) = &args.list {
        if let Err(e) = std::fs::write(path, report.listing()) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return EXIT_USAGE;
        }
    }
    print!("{}", report.summary(30));
    if report.all_passed() {
        EXIT_OK
    } else {
        EXIT_COMPILE_ERROR
    }
}

/// `spmdc ispc-examples CHECKOUT --ispc ISPC`: builds, captures, replays, prints the
/// table.
fn ispc_examples(args: &IspcExamplesArgs) -> u8 {
    use spmdc::ispc_examples::{self as ex, Target};
    if ![4, 8, 16, 32, 64].contains(&args.program_count) {
        eprintln!("error: `--program-count` is 4, 8, 16, 32 or 64 (ISPC's avx512skx-x4 to -x64)");
        return EXIT_USAGE;
    }
    let mut targets: Vec<Target> = Vec::new();
    let wanted = if args.target.is_empty() {
        vec![RunTarget::Interp]
    } else {
        args.target.clone()
    };
    for t in wanted {
        let t = match t {
            RunTarget::Interp => Target::Interp(args.program_count),
            RunTarget::Nyuzi => Target::Nyuzi,
            RunTarget::DacGpu => Target::DacGpu,
        };
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    let opts = ex::Options {
        checkout: args.checkout.clone(),
        ispc: args.ispc.clone(),
        targets,
        filters: args.filter.clone(),
        keep: args.keep.clone(),
        limits: ex::Limits {
            max_steps: args.max_steps,
        },
        host_timeout: std::time::Duration::from_secs(args.host_timeout),
    };
    match ex::run(&opts) {
        Ok(report) => {
            print!("{}", report.table());
            if report.failed() {
                EXIT_COMPILE_ERROR
            } else {
                EXIT_OK
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_USAGE
        }
    }
}

fn bench(args: &BenchArgs) -> u8 {
    use spmdc::bench::{self, BenchError};
    let fail = |e: BenchError| {
        eprintln!("error: {e}");
        EXIT_USAGE
    };
    // The page's blocks are named by the suite and the options that change its results.
    let doc_key = |suite: &str| bench::doc::key(suite, args.config.as_deref(), args.threads);
    let check_doc = |suite: &bench::Suite| match &args.doc {
        Some(page) => bench::doc::check_page(page, &doc_key(&suite.name), !suite.charts.is_empty()),
        None => Ok(()),
    };
    let (suite, records) = if args.suite == "merge" {
        if args.dirs.is_empty() {
            return fail(BenchError::Output(
                "`bench merge` needs the folders to merge".into(),
            ));
        }
        match bench::out::merge(&args.dirs).and_then(|(suite, records)| {
            check_doc(&suite)?;
            Ok((suite, records))
        }) {
            Ok(r) => r,
            Err(e) => return fail(e),
        }
    } else {
        if !args.dirs.is_empty() {
            return fail(BenchError::Options(format!(
                "unexpected argument `{}`: folders are for `spmdc bench merge`",
                args.dirs[0].display()
            )));
        }
        let mut run = bench::RunOptions {
            progress: !args.quiet,
            ..bench::RunOptions::default()
        };
        if let Some(j) = args.jobs {
            run.jobs = j as usize;
        }
        if let Some(s) = &args.shard {
            if args.doc.is_some() {
                return fail(BenchError::Options(
                    "--doc needs the whole suite, not a shard: give it to `spmdc bench merge`"
                        .into(),
                ));
            }
            match bench::Shard::parse(s) {
                Ok(s) => run.shard = s,
                Err(e) => return fail(BenchError::Options(e)),
            }
        }
        let opts = bench::BenchOptions {
            config: args.config.clone(),
            threads: args.threads,
            run,
        };
        let suite = match bench::load_suite(&args.suite, &opts).and_then(|suite| {
            check_doc(&suite)?;
            Ok(suite)
        }) {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        let records = bench::run::run_suite(&suite, &opts.run);
        (suite, records)
    };
    let table = match bench::out::write_dir(&args.out, &suite, &records) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    if let Some(page) = &args.doc {
        if table.failures.is_empty() {
            let charts = bench::chart::charts(&suite, &records);
            if let Err(e) = bench::doc::write_page(page, &doc_key(&suite.name), &table, &charts) {
                return fail(e);
            }
        } else {
            eprintln!(
                "error: {} not updated: {} run(s) failed",
                page.display(),
                table.failures.len()
            );
        }
    }
    let text = if args.json {
        format!("{:#}\n", table.to_json())
    } else {
        table.to_text()
    };
    let status = write_output(None, &text);
    for f in &table.failures {
        eprintln!("error: {f}");
    }
    if table.failures.is_empty() {
        status
    } else {
        EXIT_COMPILE_ERROR
    }
}

/// `spmdc difftest`: runs the campaign, printing each failing seed as it is found
/// and a summary at the end.
fn difftest(args: &DifftestArgs) -> u8 {
    use spmdc::difftest;
    let opts = difftest::CampaignOptions {
        seeds: args.seeds.clone(),
        shard: args.shard,
        jobs: args
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        size: args.size,
        variants: args.variants,
        exclude: args.exclude.clone(),
    };
    let done = std::sync::atomic::AtomicU64::new(0);
    let runs = std::sync::atomic::AtomicU64::new(0);
    let report = |r: &difftest::SeedResult| {
        use std::sync::atomic::Ordering::Relaxed;
        let n = done.fetch_add(1, Relaxed) + 1;
        let m = runs.fetch_add(u64::from(r.checked.runs), Relaxed) + u64::from(r.checked.runs);
        if n.is_multiple_of(1000) {
            eprintln!("progress: {n} programs, {m} runs");
        }
        for f in &r.checked.failures {
            eprintln!(
                "FAIL seed {} size {} [{}] {}: {}",
                r.seed,
                r.size,
                f.config,
                f.kind.name(),
                f.detail
            );
        }
    };
    let campaign = difftest::campaign(&opts, &report);
    let mut out = format!(
        "{} programs, {} runs ({} configurations), {} unsupported, {} failures in {} programs\n",
        campaign.programs,
        campaign.runs,
        campaign.config_runs.len(),
        campaign.unsupported,
        campaign.mismatches(),
        campaign.failing.len()
    );
    for r in &campaign.failing {
        for f in &r.checked.failures {
            out.push_str(&format!(
                "  seed {} size {}: [{}] {}: {}\n",
                r.seed,
                r.size,
                f.config,
                f.kind.name(),
                f.detail
            ));
        }
    }
    if args.coverage {
        for (config, runs) in &campaign.config_runs {
            out.push_str(&format!("{runs:>8}  {config}\n"));
        }
    }
    let status = write_output(None, &out);
    if let Some(dir) = &args.reduce {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("error: cannot create {}: {e}", dir.display());
            return EXIT_USAGE;
        }
        for r in &campaign.failing {
            reduce_failing_seed(r, dir);
        }
    }
    if status != EXIT_OK {
        status
    } else if campaign.failing.is_empty() {
        EXIT_OK
    } else {
        EXIT_COMPILE_ERROR
    }
}

/// Reduces a failing seed's first failure and writes `seed-N.spmd` to `dir`.
fn reduce_failing_seed(r: &spmdc::difftest::SeedResult, dir: &std::path::Path) {
    use spmdc::difftest::{config::Config, reduce};
    let Some(f) = r.checked.failures.first() else {
        return;
    };
    let Ok(config) = Config::parse(&f.config) else {
        eprintln!(
            "seed {}: cannot reduce a failure of the reference ({})",
            r.seed, f.detail
        );
        return;
    };
    let program = spmdc::gen::generate(r.seed, r.size);
    let Some(target) = reduce::Target::of(&program, &config) else {
        eprintln!("seed {}: the failure did not recur", r.seed);
        return;
    };
    let (reduced, tries) = reduce::reduce(&program, &target, &mut |_| {});
    let path = dir.join(format!("seed-{}.spmd", r.seed));
    match std::fs::write(&path, reduce::regression_text(&reduced, &target)) {
        Ok(()) => eprintln!(
            "seed {}: reduced in {tries} tries to {}",
            r.seed,
            path.display()
        ),
        Err(e) => eprintln!("error: cannot write {}: {e}", path.display()),
    }
}

/// `spmdc reduce FILE --config CONFIG`.
fn reduce(args: &ReduceArgs) -> u8 {
    use spmdc::difftest::{config::Config, reduce};
    let config = match Config::parse(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: --config: {e}");
            return EXIT_USAGE;
        }
    };
    let source = match driver::read_input(&args.file.to_string_lossy()) {
        Ok((_, _, text)) => text,
        Err(d) => {
            eprintln!("error: {}", d.message);
            return EXIT_USAGE;
        }
    };
    let mut log = |line: &str| eprintln!("{line}");
    match reduce::reduce_source(&source, &config, &mut log) {
        Ok((program, target, tries)) => {
            eprintln!("reduced in {tries} tries");
            write_output(
                args.output.as_ref(),
                &reduce::regression_text(&program, &target),
            )
        }
        Err(e) => {
            eprintln!("error: {e}");
            if e.contains("does not fail") {
                EXIT_COMPILE_ERROR
            } else {
                EXIT_USAGE
            }
        }
    }
}
