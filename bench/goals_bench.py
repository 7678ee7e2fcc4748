"""The goals benchmark of issue 25: `python bench/run.py --suite goals` (1k and 10k pages;
`--large` adds 50k, which takes an hour and more: larger sizes are refused without it).

A is an earlier revision (`--baseline REV`, by default 3039afa, the commit before issue 25's
work), checked out as a git worktree; B is this tree. Every command runs as `python -m
knowl_build` with PYTHONPATH set to that side's code, both sides byte-compiled first
(`ab.revision`), each side on its own clone of the same corpus (their caches and artifacts
differ). A and B run in turn, `--repeats` times, and each figure is the median of those runs with
its range; wall and CPU seconds (user + system of the process and the processes it waited for:
`resource.getrusage(RUSAGE_CHILDREN)` before and after). One run of a side, in order:

- check cold (no `.knowl`), then check warm (the same tree again);
- cold build (no `.knowl`), and the bare Whoosh floor: the same documents (the build's
  records), the same analyzer and writer settings, in a process of that side's code
  (`build_bench.whoosh_floor_times`); the ratio is taken in each run, then its median;
- site cold: `knowl site` into the empty `.knowl/site`;
- one edit, `knowl build --site`: a page edited and committed, then the build and the site;
- one-edit build: another page edited and committed, `knowl build`;
- one-edit check: `knowl check` once (its parse cache warm), a third page edited and left
  uncommitted, `knowl check` timed, the page restored;
- `knowl search` as a process: the median over a few queries; the reader's search p50 in
  process over the same queries;
- in the first run only (the bytes do not vary): the bytes fetched before the first site-search
  result, measured in headless Chromium (bench/first_result.py), the worst and median query.
"""

from __future__ import annotations

import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab import REPO, Spread, corpora, revision, summary, timed
from build_bench import edit_and_commit
from corpus import page_path
from first_result import measured
from goals import Row
from search_bench import IN_PROCESS as READER
from search_bench import QUERIES as SEARCHES

BASELINE = "3039afa"  # the commit before issue 25's work
LARGE = 50_000
BENCH = Path(__file__).resolve().parent
# The `knowl` program as its console script starts it (not `python -m`, which loads runpy).
KNOWL = ["-c", "from knowl_build.cli import main; main()"]
# The floor in a process of the side's code: its schema, analyzer and writer settings.
FLOOR = (
    "import sys\nfrom pathlib import Path\nsys.path.insert(0, sys.argv[2])\n"
    "from build_bench import whoosh_floor_times\n"
    "print(*whoosh_floor_times(Path(sys.argv[1])))\n"
)


class Side:
    """One side's code and corpus; `knowl()` runs a command of it and keeps its figures."""

    def __init__(self, code: Path, root: Path) -> None:
        self.code, self.root = code, root
        self.found: dict[str, float] = {}

    def knowl(self, figure: str | None, *args: str) -> str:
        """`knowl *args --repo ROOT` of this side, its wall and CPU seconds kept as
        `{figure}_s` and `{figure}_cpu_s` (kept nowhere where `figure` is None); what it
        printed."""
        wall, cpu, out = timed([*KNOWL, *args, "--repo", str(self.root)], self.code, self.root)
        if figure is not None:
            self.found[f"{figure}_s"], self.found[f"{figure}_cpu_s"] = wall, cpu
        return out

    def fresh(self) -> None:
        shutil.rmtree(self.root / ".knowl", ignore_errors=True)


def _checks(side: Side) -> None:
    side.fresh()
    side.knowl("check_cold", "check", "-q")
    side.knowl("check_warm", "check", "-q")


def _cold_build(side: Side) -> None:
    side.fresh()
    side.knowl("build_cold", "build", "-q", "--allow-errors")
    # The floor is Whoosh's, not a side's: this tree's schema and analyzer for both sides
    # (any revision's records read the same), on the side's own corpus.
    _, _, printed = timed(["-c", FLOOR, str(side.root), str(BENCH)], REPO, side.root)
    floor, floor_cpu = map(float, printed.split())
    f = side.found
    f["floor_s"], f["floor_cpu_s"] = floor, floor_cpu
    f["cold_over_floor"] = f["build_cold_s"] / floor
    f["cold_over_floor_cpu"] = f["build_cold_cpu_s"] / floor_cpu


def _edits(side: Side, run: int) -> None:
    side.knowl("site_cold", "site", "-q")
    edit_and_commit(side.root, page_path(2), run)
    side.knowl("site_edit", "build", "--site", "-q", "--allow-errors")
    edit_and_commit(side.root, page_path(0), run)
    side.knowl("edit_build", "build", "-q", "--allow-errors")
    side.knowl(None, "check", "-q")
    target = side.root / page_path(1)
    original = target.read_text()
    try:
        target.write_text(original + f"\nUncommitted benchmark edit {run}.\n")
        side.knowl("edit_check", "check", "-q")
    finally:
        target.write_text(original)


def _searches(side: Side) -> None:
    runs = []
    for text in SEARCHES:
        side.knowl("search", "search", text)
        runs.append((side.found["search_s"], side.found["search_cpu_s"]))
    side.found["search_s"] = statistics.median(wall for wall, _ in runs)
    side.found["search_cpu_s"] = statistics.median(cpu for _, cpu in runs)
    _, _, printed = timed(["-c", READER, str(side.root), *SEARCHES], side.code, side.root)
    side.found["reader_p50_ms"] = float(printed.strip().splitlines()[-1])


def one_run(side: Side, run: int) -> dict[str, float]:
    """Every figure of one run of one side."""
    side.found = {}
    _checks(side)
    _cold_build(side)
    _edits(side, run)
    _searches(side)
    if run == 0:
        side.found.update(measured(side.root / ".knowl" / "site"))
    return side.found


def _figures(runs: list[dict[str, float]]) -> dict[str, Spread]:
    """The summary of the runs; the bytes, measured in the first run only, from it."""
    every = [name for name in runs[0] if all(name in r for r in runs)]
    spread = summary(runs, every)
    for name, value in runs[0].items():
        spread.setdefault(name, (value, value, value))
    return spread


def bench_goals(
    sizes: list[int], repeats: int, commits: int, baseline: str, workdir: Path
) -> list[Row]:
    """(pages, A's figures, B's figures) per size, A and B in turn."""
    rows = []
    with revision(baseline, workdir / "goals-baseline") as code:
        for pages in sizes:
            a_root, b_root = corpora(workdir, "goals", pages, commits)
            a, b = Side(code, a_root), Side(REPO, b_root)
            a_runs, b_runs = [], []
            for run in range(repeats):
                a_runs.append(dict(one_run(a, run)))
                b_runs.append(dict(one_run(b, run)))
            rows.append((pages, _figures(a_runs), _figures(b_runs)))
    return rows


def sizes_asked(sizes: list[int] | None, large: bool) -> list[int]:
    """The sizes of a goals run: 1k and 10k (and 50k with `large`); a size above 10k only
    with `large`, since one run of it takes an hour and more."""
    chosen = sizes or [1000, 10_000, *([LARGE] if large else [])]
    if not large and max(chosen) > 10_000:
        raise SystemExit(f"--suite goals: {max(chosen)} pages takes an hour and more; add --large")
    return chosen
