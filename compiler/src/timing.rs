//! `--time-passes`: the wall time and memory of every stage of a compile or run, as
//! rustc's `-Z time-passes` and LLVM's `-time-passes` report them.
//!
//! Stages are marked where they run ([`stage`]); when timing is off (the default) a
//! mark costs one relaxed load. When on, each stage records its wall time, the peak of
//! live heap bytes while it ran (from [`CountingAlloc`], when the binary installs it
//! as its global allocator) and the process's resident set size when it ended. Stages
//! nest (the runtime's lowering inside the link step, each pass inside the pipeline),
//! and the report indents them.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ENABLED: AtomicBool = AtomicBool::new(false);
static DEPTH: AtomicUsize = AtomicUsize::new(0);
static BEGUN: AtomicUsize = AtomicUsize::new(0);
static RECORDS: Mutex<Vec<Record>> = Mutex::new(Vec::new());

/// Live heap bytes, and their peak since the innermost running stage began.
/// Signed: a block allocated before counting began and freed after takes its size
/// off (see [`count_heap`]).
static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);
/// Whether [`CountingAlloc`] counts (see [`count_heap`]).
static COUNT_HEAP: AtomicBool = AtomicBool::new(false);
/// Whether a [`CountingAlloc`] is the global allocator (else heap figures are unknown).
static COUNTING: AtomicBool = AtomicBool::new(false);

/// One finished stage.
#[derive(Clone, Debug)]
pub struct Record {
    /// When it began, in stages begun before it.
    pub seq: usize,
    pub name: String,
    /// How many stages enclose it.
    pub depth: usize,
    pub wall: Duration,
    /// The most heap bytes live at once while it ran.
    pub heap_peak: Option<u64>,
    /// The resident set size when it ended.
    pub rss: Option<u64>,
    /// How many runs of the stage this record sums ([`take`] merges repeats).
    pub count: usize,
}

/// Turns recording on (for the rest of the process), heap counting included.
pub fn enable() {
    count_heap();
    ENABLED.store(true, Ordering::Relaxed);
}

/// Makes [`CountingAlloc`] count live bytes from now on. Counting costs two atomic
/// operations on one shared cache line per allocation, which the compile's two
/// threads pass back and forth (tricubic's nyuzi compile: 0.5 ms of 11), so only a
/// process that reports heap peaks counts. The binary calls it first thing in `main`
/// when `--time-passes` is among its arguments, so the peaks leave out only what
/// the runtime allocated before `main`.
pub fn count_heap() {
    COUNT_HEAP.store(true, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Runs `f` as the stage `name`, recording it when timing is on.
pub fn stage<T>(name: &str, f: impl FnOnce() -> T) -> T {
    if !enabled() {
        return f();
    }
    let depth = DEPTH.fetch_add(1, Ordering::Relaxed);
    let seq = BEGUN.fetch_add(1, Ordering::Relaxed);
    let outer_peak = PEAK.swap(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let start = Instant::now();
    let out = f();
    let wall = start.elapsed();
    let peak = PEAK.fetch_max(outer_peak, Ordering::Relaxed);
    DEPTH.fetch_sub(1, Ordering::Relaxed);
    let record = Record {
        seq,
        name: name.to_string(),
        depth,
        wall,
        heap_peak: COUNTING
            .load(Ordering::Relaxed)
            .then_some(peak.max(0) as u64),
        rss: resident_set(),
        count: 1,
    };
    if let Ok(mut records) = RECORDS.lock() {
        records.push(record);
    }
    out
}

/// The stages recorded so far, in the order they began (an enclosing stage before
/// the stages inside it), and clears them.
pub fn take() -> Vec<Record> {
    let mut records = RECORDS
        .lock()
        .map(|mut r| std::mem::take(&mut *r))
        .unwrap_or_default();
    records.sort_by_key(|r| r.seq);
    merge_repeats(records)
}

/// Merges the stages of one name under one enclosing stage (a back end's instruction
/// selection runs once per function): wall times add up, the heap peak is the largest,
/// the resident set the last; `count` says how many were merged.
fn merge_repeats(records: Vec<Record>) -> Vec<Record> {
    let mut out: Vec<Record> = Vec::with_capacity(records.len());
    // The index in `out` of the enclosing stage at each depth.
    let mut parents: Vec<usize> = Vec::new();
    let mut seen: std::collections::HashMap<(Option<usize>, String), usize> = Default::default();
    for r in records {
        parents.truncate(r.depth);
        let parent = parents.last().copied();
        let key = (parent, r.name.clone());
        if let Some(&i) = seen.get(&key) {
            let m = &mut out[i];
            m.wall += r.wall;
            m.heap_peak = m.heap_peak.max(r.heap_peak);
            m.rss = r.rss;
            m.count += 1;
            parents.push(i);
        } else {
            seen.insert(key, out.len());
            parents.push(out.len());
            out.push(r);
        }
    }
    out
}

/// The report of `records`: one line per stage, then the process's peak resident set.
pub fn report(records: &[Record]) -> String {
    let mut out = format!(
        "{:<40} {:>10} {:>11} {:>10}\n",
        "time-passes: stage", "wall ms", "heap peak", "rss"
    );
    for r in records {
        let times = if r.count > 1 {
            format!(" ({}x)", r.count)
        } else {
            String::new()
        };
        let name = format!("{}{}{times}", "  ".repeat(r.depth), r.name);
        out.push_str(&format!(
            "{:<40} {:>10.3} {:>11} {:>10}\n",
            name,
            r.wall.as_secs_f64() * 1e3,
            megabytes(r.heap_peak),
            megabytes(r.rss)
        ));
    }
    out.push_str(&format!(
        "{:<40} {:>10} {:>11} {:>10}\n",
        "peak resident set of the process",
        "",
        "",
        megabytes(peak_resident_set())
    ));
    out
}

fn megabytes(bytes: Option<u64>) -> String {
    match bytes {
        Some(b) => format!("{:.1} MB", b as f64 / 1e6),
        None => "-".to_string(),
    }
}

/// The process's resident set size (Linux; `None` elsewhere).
pub fn resident_set() -> Option<u64> {
    // `statm` (counts of pages), not `status`: the kernel formats `status`'s fifty
    // fields on every read, about 15 µs, which a stage per function per round of
    // register allocation turned into a third of a compile's reported time.
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

/// The size of a memory page.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn page_size() -> u64 {
    // SAFETY: `sysconf` only reads a configuration value.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn page_size() -> u64 {
    4096
}

/// The process's peak resident set size (Linux; `None` elsewhere).
pub fn peak_resident_set() -> Option<u64> {
    status_field("VmHWM:")
}

fn status_field(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// A global allocator that counts live heap bytes for [`stage`]'s peaks, around
/// another allocator: `#[global_allocator] static A: CountingAlloc<System> =
/// CountingAlloc(System);`. Once [`count_heap`] (or [`enable`]) has run, counting is
/// one relaxed atomic addition per allocation and per free, and one more operation
/// when the peak grows; before, one relaxed load.
pub struct CountingAlloc<A>(pub A);

impl<A> CountingAlloc<A> {
    fn grew(&self, by: usize) {
        if !COUNT_HEAP.load(Ordering::Relaxed) {
            return;
        }
        let live = LIVE.fetch_add(by as i64, Ordering::Relaxed) + by as i64;
        // `fetch_max` is a compare-and-swap loop: only when the peak may move.
        if live > PEAK.load(Ordering::Relaxed) {
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        if !COUNTING.load(Ordering::Relaxed) {
            COUNTING.store(true, Ordering::Relaxed);
        }
    }

    fn shrank(&self, by: usize) {
        if COUNT_HEAP.load(Ordering::Relaxed) {
            LIVE.fetch_sub(by as i64, Ordering::Relaxed);
        }
    }
}

// SAFETY: every call is forwarded to the inner allocator unchanged; the counters are
// bookkeeping only.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAlloc<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.dealloc(ptr, layout) };
        self.shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            self.shrank(layout.size());
            self.grew(new_size);
        }
        p
    }
}
