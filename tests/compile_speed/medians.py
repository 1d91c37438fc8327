#!/usr/bin/env python3
"""Whole-process compile times of every example, for issue 18's 10 ms goal.

Runs `BIN examples/NAME.spmd --target T --emit asm` for every example and both
targets, RUNS times each (default 11), the binaries given interleaved run by run so
that a change in the machine's load falls on all of them alike, and prints the
median wall time of each compile per binary, slowest first, and how many are over
10 ms. Started with fork/exec from Python, which adds about 1 ms to each process.

    python3 tests/compile_speed/medians.py target/release/spmdc
    python3 tests/compile_speed/medians.py --runs 15 old/spmdc target/release/spmdc

Run it from the repository's root on an otherwise idle machine (docs/performance.md,
"Compile time", gives the figures and the conditions they were taken in).
"""
import argparse
import glob
import statistics
import subprocess
import time

LIMIT_MS = 10.0


def wall_ms(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - start) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bins", nargs="+", help="spmdc binaries to compare")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--top", type=int, default=14, help="rows to print")
    args = parser.parse_args()
    medians = {}
    for path in sorted(glob.glob("examples/*.spmd")):
        name = path.split("/")[-1][: -len(".spmd")]
        for target in ["nyuzi", "dac-gpu"]:
            times = {b: [] for b in args.bins}
            for _ in range(args.runs):
                for b in args.bins:
                    times[b].append(wall_ms([b, path, "--target", target, "--emit", "asm"]))
            medians[(name, target)] = [statistics.median(times[b]) for b in args.bins]
    over = [sum(1 for m in medians.values() if m[i] > LIMIT_MS) for i in range(len(args.bins))]
    print(f"compiles over {LIMIT_MS:g} ms: " + ", ".join(
        f"{b}: {n} of {len(medians)}" for b, n in zip(args.bins, over)))
    rows = sorted(medians.items(), key=lambda kv: -kv[1][-1])
    for (name, target), ms in rows[: args.top]:
        print(f"{name:28} {target:8} " + " ".join(f"{x:6.1f}" for x in ms))


if __name__ == "__main__":
    main()
