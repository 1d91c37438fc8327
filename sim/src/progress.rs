//! How far a long simulation has come, for a front end that shows it.
//!
//! A front end that wants to know runs the simulation inside [`watch`], on the
//! thread that simulates; the timing models call [`report`] as blocks finish (the
//! GPU) and [`report_cycles`] about every 65,536 cycles, which costs a thread-local
//! read when nobody watches. Another thread reads the figures with
//! [`Progress::get`]. The simulators' results never depend on it.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Units of work done out of a total (blocks of a grid; a total of 0 when the
/// machine has none to give), and the cycles simulated so far.
#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
    cycles: AtomicU64,
}

impl Progress {
    /// (done, total) as last reported.
    pub fn get(&self) -> (u64, u64) {
        (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }

    /// The cycles simulated, as last reported.
    pub fn cycles(&self) -> u64 {
        self.cycles.load(Ordering::Relaxed)
    }
}

thread_local! {
    static WATCHED: RefCell<Option<Arc<Progress>>> = const { RefCell::new(None) };
}

/// Runs `f`, letting the simulations it runs on this thread report into `progress`.
pub fn watch<R>(progress: Arc<Progress>, f: impl FnOnce() -> R) -> R {
    let before = WATCHED.with(|w| w.replace(Some(progress)));
    let result = f();
    WATCHED.with(|w| *w.borrow_mut() = before);
    result
}

/// A simulator's report: `done` of `total` units of its work.
pub fn report(done: u64, total: u64) {
    with_watched(|p| {
        p.done.store(done, Ordering::Relaxed);
        p.total.store(total, Ordering::Relaxed);
    });
}

/// A simulator's report: `cycles` simulated so far.
pub fn report_cycles(cycles: u64) {
    with_watched(|p| p.cycles.store(cycles, Ordering::Relaxed));
}

fn with_watched(f: impl FnOnce(&Progress)) {
    WATCHED.with(|w| {
        if let Some(p) = w.borrow().as_ref() {
            f(p);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_reach_the_watcher_only_while_it_watches() {
        let p = Arc::new(Progress::default());
        report(1, 2);
        assert_eq!(p.get(), (0, 0));
        watch(p.clone(), || {
            report(3, 10);
            report_cycles(7);
        });
        assert_eq!((p.get(), p.cycles()), ((3, 10), 7));
        report(5, 10);
        assert_eq!(p.get(), (3, 10));
    }
}
