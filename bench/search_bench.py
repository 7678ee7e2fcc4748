"""What the search-quality work costs: this tree (B) beside the revision before it (A, by
default the commit that added the quality benchmark, before names, sections, the query
syntax and entity hits), on one corpus of `bench/corpus.py`.

`python bench/run.py --suite search` (or `python bench/search_bench.py --sizes 10000`).
Each side has its own copy of the corpus (their artifacts differ). Both sides' code and the
environment are byte-compiled first (`ab.byte_compiled`). A and B run in turn, and each figure
is the median of the runs with its range:

- cold build: `knowl build --full` as a process, wall and CPU seconds (the names and headings
  fields and the section records cost the build something: the goal is at most 10%);
- `knowl search` as a process: the median over a set of queries (goal: at most 0.1 s at 10k);
- search in process: p50 of `Reader.search` over the same queries, B's at most twice A's
  (B answers mixed page and entity hits, as `knowl search` does; A pages alone).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab import REPO, Spread, corpora, revision, summary, timed

# The last commit before the search-quality work (issue 23) changed the index or the ranking.
BASELINE = "93a9d16"
QUERIES = ("revenue", "orders amount", "customer churn", "net revenue policy", "src3 measure")
FIGURES = ("build_s", "build_cpu_s", "search_process_s", "search_p50_ms")
IN_PROCESS = """
import statistics, sys, time
from pathlib import Path
from knowl_build.reader import Reader
queries = sys.argv[2:]
times = []
with Reader.open(Path(sys.argv[1])) as reader:
    kind = {"kind": "all"} if "kind" in Reader.search.__code__.co_varnames else {}
    for _ in range(3):
        for q in queries:
            start = time.perf_counter()
            reader.search(q, limit=5, **kind)
            times.append(time.perf_counter() - start)
print(statistics.median(times) * 1000)
"""


def _one_side(root: Path, code: Path) -> dict[str, float]:
    knowl = ["-m", "knowl_build"]
    shutil.rmtree(root / ".knowl", ignore_errors=True)
    wall, cpu, _ = timed([*knowl, "build", "--full", "--repo", str(root), "-q"], code, root.parent)
    searches = [
        timed([*knowl, "search", q, "--repo", str(root)], code, root.parent)[0] for q in QUERIES
    ]
    _, _, printed = timed(["-c", IN_PROCESS, str(root), *QUERIES], code, root.parent)
    return {
        "build_s": wall,
        "build_cpu_s": cpu,
        "search_process_s": statistics.median(searches),
        "search_p50_ms": float(printed.strip().splitlines()[-1]),
    }


Row = tuple[int, dict[str, Spread], dict[str, Spread]]


def bench_search(
    sizes: list[int], repeats: int, commits: int, baseline: str, workdir: Path
) -> list[Row]:
    """(pages, A's figures, B's figures) per size."""
    rows = []
    with revision(baseline, workdir / "search-baseline") as code:
        for pages in sizes:
            a_root, b_root = corpora(workdir, "search", pages, commits)
            a_runs: list[dict[str, float]] = []
            b_runs: list[dict[str, float]] = []
            for _ in range(repeats):  # A, then B, in turn
                a_runs.append(_one_side(a_root, code))
                b_runs.append(_one_side(b_root, REPO))
            rows.append((pages, summary(a_runs, FIGURES), summary(b_runs, FIGURES)))
    return rows


# Each figure's goal: B over A at most this much (None: an absolute goal, below).
_RATIO_GOALS = {"build_s": 1.10, "build_cpu_s": 1.10, "search_p50_ms": 2.0}


def _verdict(name: str, pages: int, a: float, b: float) -> str:
    if name == "search_process_s":
        if pages < 10_000:
            return "(figure)"
        return "<= 0.100 s " + ("ok" if b <= 0.1 else "MISSED")
    goal = _RATIO_GOALS[name]
    return f"<= {goal:.2f}x " + ("ok" if b / a <= goal else "MISSED")


def print_search(rows: list[Row], header: str, baseline: str) -> None:
    print(f"Search: this tree (B) beside {baseline} (A) {header}")
    print("(median of A/B runs in turn, [least-greatest])")
    print(f"{'pages':>7} {'figure':<18} {'A':>22} {'B':>22} {'B/A':>7}  goal")
    for pages, a, b in rows:
        for name in FIGURES:
            shown = [f"{f[0]:.3f} [{f[1]:.3f}-{f[2]:.3f}]" for f in (a[name], b[name])]
            ratio = b[name][0] / a[name][0]
            verdict = _verdict(name, pages, a[name][0], b[name][0])
            print(f"{pages:>7} {name:<18} {shown[0]:>22} {shown[1]:>22} {ratio:>6.2f}x  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="knowl-search-bench-"))
    rows = bench_search(args.sizes, args.repeats, args.commits, args.baseline, workdir)
    print_search(rows, f"({args.repeats} runs a side, {args.commits} commits)", args.baseline)


if __name__ == "__main__":
    main()
