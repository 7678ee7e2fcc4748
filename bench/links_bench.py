"""What checking Markdown links costs: `knowl check` of this tree (B) beside the same command
of an earlier revision (A, by default the last commit before Markdown links were checked), on
one corpus whose every other page-to-page link is a relative Markdown link.

`python bench/run.py --suite links` (or `python bench/links_bench.py --sizes 1000 10000`).
A reads the Markdown links as text; B resolves and checks them, so B / A is their cost. Each
side has its own copy of the corpus (their caches differ), the two run in turn, A then B, and
each figure is the median of the runs with its range: a sequence of minima swings with what
else the machine runs, a ratio of runs made side by side does not.

- cold check: `knowl check` with no cache (`.knowl/` removed);
- warm check: again, on the unchanged tree (the run memo answers);
- one-edit check: after one page's text changed, uncommitted (the parse cache, not the memo).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab import Spread, corpora, revision, summary
from corpus import page_path

# The last commit before Markdown links were checked (issue 22).
BASELINE = "e0435fe"
FIGURES = ("cold_check_s", "warm_check_s", "edit_check_s")


def check(root: Path, code: Path | None) -> float:
    """`knowl check` of `root` as a process: this tree's code, or the code checked out at
    `code` (first on the path, ahead of the installed package)."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "knowl_build", "check", "--repo", str(root), "-q"],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,  # never this repository: `-m` would import from the current folder
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # findings are fine; a failure is not
        raise SystemExit(f"knowl check failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed


def _one_side(root: Path, code: Path | None, number: int) -> dict[str, float]:
    shutil.rmtree(root / ".knowl", ignore_errors=True)
    cold = check(root, code)
    warm = check(root, code)
    target = root / page_path(1)
    original = target.read_text()
    target.write_text(original + f"\nBenchmark edit {number}.\n")
    try:
        edit = check(root, code)
    finally:
        target.write_text(original)
    return {"cold_check_s": cold, "warm_check_s": warm, "edit_check_s": edit}


def bench_links(
    sizes: list[int], repeats: int, commits: int, baseline: str, workdir: Path
) -> list[tuple[int, dict[str, Spread], dict[str, Spread]]]:
    """(pages, A's figures, B's figures) per size."""
    rows = []
    with revision(baseline, workdir / "baseline") as code:
        for pages in sizes:
            a_root, b_root = corpora(workdir, "links", pages, commits, markdown_links=True)
            sides: list[tuple[Path, Path | None, list[dict[str, float]]]] = [
                (a_root, code, []),
                (b_root, None, []),
            ]
            for number in range(repeats):
                for root, side_code, runs in sides:  # A, then B, in turn
                    runs.append(_one_side(root, side_code, number))
            rows.append((pages, summary(sides[0][2], FIGURES), summary(sides[1][2], FIGURES)))
    return rows


def _shown(figure: tuple[float, float, float]) -> str:
    return f"{figure[0]:.2f}s [{figure[1]:.2f}-{figure[2]:.2f}]"


def print_links(
    rows: list[
        tuple[int, dict[str, tuple[float, float, float]], dict[str, tuple[float, float, float]]]
    ],
    header: str,
    baseline: str,
) -> None:
    print(f"Markdown links: knowl check of this tree (B) beside {baseline} (A) {header}")
    print("(median of A/B runs in turn, [least-greatest]; goal: B no more than 10% slower)")
    print(f"{'pages':>7} {'figure':<16} {'A':>20} {'B':>20} {'B/A':>7}  goal")
    for pages, a, b in rows:
        for name in FIGURES:
            ratio = b[name][0] / a[name][0]
            verdict = "ok" if ratio <= 1.10 else "MISSED"
            print(
                f"{pages:>7} {name.removesuffix('_s'):<16} {_shown(a[name]):>20} "
                f"{_shown(b[name]):>20} {ratio:>6.2f}x  <= 1.10x {verdict}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--baseline", default=BASELINE, help="the revision A runs")
    parser.add_argument("--keep", type=Path, help="keep the corpora in this folder")
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="knowl-links-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        rows = bench_links(args.sizes, args.repeats, args.commits, args.baseline, workdir)
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    machine = f"python {sys.version.split()[0]}, {os.cpu_count()} cores"
    print_links(rows, f"({machine}, {args.commits} commits)", args.baseline)


if __name__ == "__main__":
    main()
