//! Per-function work on every core, as rustc's codegen units and LLVM's parallel code
//! generation do: the back ends' instruction selection, register allocation and frame
//! layout, and the function-local IR passes of a large module ([`crate::passes`]).
//!
//! Each function's result depends only on the (shared, read-only) module and the
//! function itself, so the functions are independent jobs. [`map_in_order`] runs
//! them on a few scoped threads, biggest first so that one large kernel does not
//! start last, and returns the results in the input's order: what follows (emission,
//! the listing) is sequential and sees exactly what a single thread would have
//! produced, so the output is byte-identical whatever the number of threads.
//!
//! `--time-passes` runs the jobs on the calling thread: its stages nest on one stack,
//! and each stage's time must be its own, not shared with a concurrent one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The most worker threads used (the process is short; more rarely pays).
const MAX_THREADS: usize = 8;

/// Each worker's stack: as large as the compiler thread's, since the same recursive
/// code runs on deeply nested (but legal) programs.
const STACK: usize = 256 << 20;

/// `work` applied to each of `items`, in `items`' order. `weight` estimates each
/// item's cost (its instruction count, say) so the heaviest start first. Panics in
/// `work` are resumed on the calling thread.
pub fn map_in_order<T, R>(
    items: Vec<T>,
    weight: impl Fn(&T) -> usize,
    work: impl Fn(T) -> R + Sync,
) -> Vec<R>
where
    T: Send,
    R: Send,
{
    let threads = thread_count(items.len());
    if threads <= 1 {
        return items.into_iter().map(work).collect();
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(weight(&items[i])));
    let jobs: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let results: Vec<Mutex<Option<R>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let worker = || {
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            let job = take(&jobs[i]);
            let result = work(job);
            *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
        }
    };
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .stack_size(STACK)
                    .spawn_scoped(s, worker)
                    .ok()
            })
            .collect();
        // The calling thread works too; a helper that could not be started is simply
        // not there.
        worker();
        for h in helpers {
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    results.into_iter().map(|r| take(&r)).collect()
}

/// How many threads to use for `jobs` jobs: one when timing passes or when there is
/// nothing to share.
fn thread_count(jobs: usize) -> usize {
    if jobs <= 1 || crate::timing::enabled() {
        return 1;
    }
    cores().min(jobs).min(MAX_THREADS)
}

/// The cores this process may use, asked once: the standard library reads the
/// cgroup's CPU quota files on every call (seven system calls).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The value in `slot`, which every job and result slot holds exactly once.
fn take<T>(slot: &Mutex<Option<T>>) -> T {
    slot.lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .expect("each job runs once and each result is taken once")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_input_order_whatever_the_weights() {
        let items: Vec<u64> = (0..100).collect();
        let out = map_in_order(items, |&x| (x * 37 % 11) as usize, |x| x * x);
        assert_eq!(out, (0..100u64).map(|x| x * x).collect::<Vec<_>>());
    }

    #[test]
    fn a_single_job_and_no_jobs_work() {
        assert_eq!(map_in_order(vec![3], |_| 0, |x: i32| x + 1), vec![4]);
        assert_eq!(
            map_in_order(Vec::<i32>::new(), |_| 0, |x| x),
            Vec::<i32>::new()
        );
    }

    #[test]
    #[should_panic(expected = "job 7 failed")]
    fn a_panicking_job_panics_the_caller() {
        map_in_order(
            (0..16).collect(),
            |_| 1,
            |x: i32| {
                if x == 7 {
                    panic!("job 7 failed");
                }
                x
            },
        );
    }
}
