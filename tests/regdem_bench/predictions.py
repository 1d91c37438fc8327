#!/usr/bin/env python3
"""The predictor's choices against the recorded runs, without running a kernel.

Usage: python3 tests/regdem_bench/predictions.py [SPMDC]

For work on the `--regalloc auto` predictor: `spmdc bench regdem` takes about ten
minutes a preset because it runs every allocation in the timing model, while the
predictor only compiles. This script compiles each kernel of docs/regdem.md's
tables with `--regalloc auto` at the launch its header suggests (SPMDC, default
target/release/spmdc), reads the allocations the listing says it weighed and the
one it chose, and scores the choice with the cycles the tables recorded for the
same allocations: per kernel the fastest recorded allocation's cycles over the
choice's (`choice/best`), and their geometric mean per preset, as the bench's
summary rows do.

The scores hold only while the allocations themselves are unchanged since the
tables were made: the script counts the weighed allocations whose predicted cycles
differ from the tables' `predicted` column (a changed predictor moves them; that
is expected) and those missing from the tables (a changed allocator; then rerun
the bench). It exits with 1 when a chosen allocation has no recorded run.
"""
import math, pathlib, re, subprocess, sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PRESETS = ('maxwell', 'gtx480')


def tables(doc):
    """{preset: {kernel: {variant: (cycles, predicted)}}} from the doc's tables."""
    out = {}
    for preset in PRESETS:
        section = doc.split(f'<!-- bench regdem --config {preset}: table -->')[1]
        section = section.split('<!--')[0]
        rows = out.setdefault(preset, {})
        for line in section.splitlines():
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if len(cells) < 9 or not cells[7].isdigit():
                continue
            rows.setdefault(cells[0], {})[cells[1]] = (int(cells[7]), int(cells[8]))
    return out


def header_launch(path):
    """The entry, grid and block of the kernel header's `spmdc run` line."""
    text = path.read_text()
    value = lambda flag: re.search(rf'--{flag} (\S+)', text).group(1)
    return value('entry'), value('grid'), value('block')


ROW = re.compile(r'//\s+(\S+ @\d+)\s.*\s([\d,]+) \(([^)]*)\)(\s+<- chosen)?$')


def weighed(spmdc, path, preset):
    """[(variant, predicted, bound, chosen)] from the `--regalloc auto` listing."""
    entry, grid, block = header_launch(path)
    listing = subprocess.run(
        [spmdc, str(path), '--target', 'dac-gpu', '--config', preset, '--regalloc',
         'auto', '--entry', entry, '--grid', grid, '--block', block],
        capture_output=True, text=True, check=True).stdout
    rows = []
    for line in listing.splitlines():
        m = ROW.match(line)
        if m:
            rows.append((m.group(1), int(m.group(2).replace(',', '')), m.group(3),
                         bool(m.group(4))))
    return rows


def main():
    spmdc = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / 'target/release/spmdc')
    recorded = tables((ROOT / 'docs/regdem.md').read_text())
    status = 0
    for preset in PRESETS:
        ratios, moved, unknown = [], 0, 0
        for kernel, runs in recorded[preset].items():
            rows = weighed(spmdc, ROOT / 'tests/regdem_bench' / f'{kernel}.spmd', preset)
            for variant, predicted, _, _ in rows:
                if variant not in runs:
                    unknown += 1
                elif runs[variant][1] != predicted:
                    moved += 1
            variant, predicted, bound, _ = next(r for r in rows if r[3])
            best = min(cycles for cycles, _ in runs.values())
            if variant not in runs:
                print(f'{preset:8} {kernel:14} chose {variant}, which the table did not run')
                status = 1
                continue
            ratio = best / runs[variant][0]
            ratios.append(ratio)
            print(f'{preset:8} {kernel:14} chose {variant:17} predicted {predicted:>9,} '
                  f'({bound}), ran {runs[variant][0]:>9,}; best {best:>9,}: {ratio:.3f}')
        mean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float('nan')
        print(f'{preset}: choice/best geomean {mean:.5f}; {moved} predictions differ from '
              f'the table, {unknown} weighed allocations not in it')
    return status


if __name__ == '__main__':
    sys.exit(main())
