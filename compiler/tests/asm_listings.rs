//! The `--emit asm` listing of every example on both targets, with and without
//! `--no-opt`, `--no-dac` (dac-gpu) and `--no-uniformity`, as `spmdc` prints it,
//! compared with its snapshot in `tests/asm/snapshots`. The snapshots were made before
//! the compile-speed work (the runtime compiled on demand, linear passes), so they hold
//! the back ends' output to what it was: a change in any listing is a change in
//! behaviour, to be reviewed (`cargo insta review`) rather than let through.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use common::{assert_snapshot_in, display_name, repo_root, spmd_files};

/// One listing to compare: its example, target and extra switch.
struct Case {
    file: PathBuf,
    target: &'static str,
    switch: Option<&'static str>,
}

impl Case {
    fn name(&self) -> String {
        let stem = self.file.file_stem().unwrap().to_string_lossy();
        format!("{stem}.{}{}", self.target, self.switch.unwrap_or(""))
    }

    fn command(&self) -> String {
        let mut c = format!(
            "spmdc {} --target {} --emit asm",
            display_name(&self.file),
            self.target
        );
        if let Some(s) = self.switch {
            c.push(' ');
            c.push_str(s);
        }
        c
    }

    fn listing(&self) -> String {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_spmdc"));
        cmd.current_dir(repo_root())
            .arg(display_name(&self.file))
            .args(["--target", self.target, "--emit", "asm", "--color", "never"]);
        cmd.args(self.switch);
        let out = cmd.output().expect("spmdc runs");
        assert!(
            out.status.success(),
            "`{}` failed:\n{}",
            self.command(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("the listing is UTF-8")
    }
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for file in spmd_files("examples") {
        for target in ["nyuzi", "dac-gpu"] {
            for switch in [
                None,
                Some("--no-opt"),
                Some("--no-dac"),
                Some("--no-uniformity"),
            ] {
                if target == "nyuzi" && switch == Some("--no-dac") {
                    continue; // nyuzi has no DAC
                }
                cases.push(Case {
                    file: file.clone(),
                    target,
                    switch,
                });
            }
        }
    }
    cases
}

#[test]
fn every_example_listing_is_unchanged() {
    let cases = cases();
    assert!(cases.len() >= 7 * 20, "the examples are missing");
    // The listings come from separate processes: run them on every core, compare in
    // order.
    let next = Mutex::new(0usize);
    let listings: Vec<Mutex<Option<String>>> = cases.iter().map(|_| Mutex::new(None)).collect();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap();
                    *n += 1;
                    *n - 1
                };
                let Some(case) = cases.get(i) else { break };
                *listings[i].lock().unwrap() = Some(case.listing());
            });
        }
    });
    for (case, listing) in cases.iter().zip(listings) {
        let listing = listing.into_inner().unwrap().expect("every case ran");
        assert_snapshot_in(
            "tests/asm/snapshots",
            &case.name(),
            &case.command(),
            &listing,
        );
    }
}
