//! What the suites share about runs on the simulators: the bit-for-bit comparison of
//! a run's buffers with the interpreter's ([`compare`]) and the CPU time of the
//! thread that ran it ([`thread_cpu_seconds`]). The `gpu` suite itself is
//! `examples/suites/gpu.toml`: the GPU-style example kernels on the dac-gpu timing
//! model, each launched with at least T threads and checked against the interpreter
//! (fast enough at 1M threads: a few seconds for the whole suite); a row reports the
//! simulator's statistics and its speed (wall and CPU time of the timing run, and
//! thread instructions simulated per CPU second, since the machine is shared).

use crate::launch::RunResult;

/// The first difference between the interpreter's buffers and the simulator's.
pub(super) fn compare(want: &RunResult, got: &RunResult) -> Option<String> {
    for (name, w) in &want.buffers {
        let Some(g) = got.buffer(name) else {
            return Some(format!("buffer `{name}` missing on dac-gpu"));
        };
        if w.bytes() != g.bytes() {
            let i = (0..w.len()).find(|&i| w.get(i) != g.get(i)).unwrap_or(0);
            let show =
                |b: &crate::launch::Buffer| b.get(i).map_or("-".into(), |v| format!("{v:?}"));
            return Some(format!(
                "`{name}`[{i}] is {} on dac-gpu, {} in the interpreter",
                show(g),
                show(w)
            ));
        }
    }
    None
}

/// The CPU time this thread has used (user + system), from `/proc/thread-self/stat`
/// in clock ticks of 1/100 s (Linux's fixed `USER_HZ`); `None` where that file is
/// missing. The timing model runs on the calling thread, so on a busy host this is
/// the simulator's own time, which the wall time is not.
pub fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Suite;

    /// The thread's CPU time is readable on Linux and never goes back.
    #[test]
    fn thread_cpu_time_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            let a = thread_cpu_seconds().expect("/proc/thread-self/stat");
            let b = thread_cpu_seconds().expect("/proc/thread-self/stat");
            assert!(a >= 0.0 && b >= a, "{a} then {b}");
        }
    }

    /// Every launch of the gpu suite has at least T threads, and at 1M not much more;
    /// the dac suite's reach the documented fraction of T / 8.
    #[test]
    fn launches_reach_the_thread_count() {
        let gpu = Suite::find("gpu").unwrap();
        let dac = Suite::find("dac").unwrap();
        for t in [1, 1000, 4096, 1 << 17, 1 << 20] {
            for k in 0..gpu.kernels.len() {
                let n = gpu.launch(k, t).unwrap().threads.unwrap();
                assert!(n >= t, "{} at {t}: {n}", gpu.kernels[k].name);
                if t >= 1 << 20 {
                    assert!(2 * n <= 3 * t, "{} at {t}: {n}", gpu.kernels[k].name);
                }
            }
            for k in 0..dac.kernels.len() {
                let n = dac.launch(k, t).unwrap().threads.unwrap();
                assert!(64 * n >= t, "{} at {t}: {n}", dac.kernels[k].name);
            }
        }
        // Hand-checked launches at the default T = 1M.
        let l = gpu.launch(0, 1 << 20).unwrap();
        assert_eq!(
            (l.grid.as_deref(), l.threads),
            (Some("4096,1,1"), Some(1 << 20))
        );
        let lud = dac
            .kernels
            .iter()
            .position(|k| k.name == "lud internal")
            .unwrap();
        let l = dac.launch(lud, 1 << 20).unwrap();
        assert_eq!(l.grid.as_deref(), Some("23,23,1"));
        assert_eq!(l.args[0], "n=384");
    }
}
