//! Progress of a long `spmdc run --timing` on a terminal: nothing for the first two
//! seconds (most runs end before), then the cycles simulated so far and, on dac-gpu,
//! a bar of the blocks finished, on standard error, cleared when the run ends.
//! Not shown when standard error is not a terminal, so pipes and tests stay clean.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sim::progress::{self, Progress};

/// How long a run goes silent before its progress shows.
const QUIET_FOR: Duration = Duration::from_secs(2);
/// How often the display reads the figures.
const TICK: Duration = Duration::from_millis(200);

/// Runs `f`, showing the progress of the simulation it runs on this thread when
/// `show` (the caller checks that standard error is a terminal).
pub fn with_progress<R>(show: bool, f: impl FnOnce() -> R) -> R {
    if !show {
        return f();
    }
    let figures = Arc::new(Progress::default());
    let done = Arc::new(AtomicBool::new(false));
    let display = {
        let (figures, done) = (figures.clone(), done.clone());
        std::thread::spawn(move || display(&figures, &done))
    };
    let result = progress::watch(figures, f);
    done.store(true, Ordering::Relaxed);
    display.thread().unpark();
    let _ = display.join();
    result
}

/// Shows `figures` until `done`, once the run has lasted [`QUIET_FOR`].
fn display(figures: &Progress, done: &AtomicBool) {
    let start = Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    while !done.load(Ordering::Relaxed) {
        std::thread::park_timeout(TICK);
        if done.load(Ordering::Relaxed) || start.elapsed() < QUIET_FOR {
            continue;
        }
        let (n, total) = figures.get();
        let bar = bar.get_or_insert_with(|| new_bar(total));
        bar.set_message(format!(
            "{} cycles",
            indicatif::HumanCount(figures.cycles())
        ));
        bar.set_position(n);
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

/// A bar of `total` blocks with the cycles simulated, or only the cycles when the
/// machine gives no total.
fn new_bar(total: u64) -> indicatif::ProgressBar {
    let (bar, template) = if total > 0 {
        (
            indicatif::ProgressBar::new(total),
            "simulating {bar:30} {pos}/{len} blocks done, {msg}, {elapsed} elapsed",
        )
    } else {
        (
            indicatif::ProgressBar::new_spinner(),
            "simulating {spinner} {msg}, {elapsed} elapsed",
        )
    };
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}
