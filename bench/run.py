"""The benchmark: `python bench/run.py` (or `--sizes 1000` for a quick run).

Prints the secret-scanner figures on adversarial inputs (see secrets_bench.py; `--suite
secrets` for only these), `knowl check` on adversarial page bodies (see body_bench.py;
`--suite body` for only these), the did-you-mean figures on vaults with thousands of broken links
(see hints_bench.py; `--suite hints` for only these), then builds synthetic corpora with git
history (500 commits by default) and prints, per size, in one run, the build figures (see
build_bench.py), the reader's (reader_bench.py), the agent's (get_context latency and the time
from a write to the page being searchable: agent_bench.py), the static site's (knowl site cold
and after one edit, the initial search download: site_bench.py; `--suite site`) and, for
`knowl check`:
- floor: reading and hashing every input file (what any checker must at least do);
- cold check: `knowl check` as a process with no parse cache;
- warm check: `knowl check` again, on the unchanged tree (answered from the run memo);
- one-edit check: `knowl check` after one page changed (the parse cache, not the memo);
and warm / floor as a ratio measured in the same run (1k, 2k and 10k pages by default).
The package and the environment are byte-compiled first (ab.byte_compiled: where
PYTHONDONTWRITEBYTECODE is set, each process would compile every module it imports).
`--suite quality` prints the retrieval-quality table instead (knowl beside bm25s and tantivy on
public documentation sets: quality_bench.py).

`--suite goals` prints issue 25's goals instead, measured A/B in turn: an earlier revision
(`--baseline REV`, by default the commit before issue 25's work) beside this tree, each figure
the median and range over `--repeats` runs, CPU seconds beside wall, at 1k and 10k pages
(`--large` adds 50k; a size above 10k is refused without it), with the other suites' main
figures A/B below the goals (see goals_bench.py and goals.py).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab import byte_compiled
from agent_bench import bench_agent, print_agent
from body_bench import bench_body, print_body
from build_bench import bench_build
from corpus import make_corpus, page_path
from embeddings_bench import bench_embeddings
from goals import print_goals
from goals_bench import BASELINE as GOALS_BASELINE
from goals_bench import bench_goals, sizes_asked
from hints_bench import bench_hints, print_hints
from links_bench import BASELINE, bench_links, print_links
from quality_bench import bench_quality, print_quality
from reader_bench import bench_reader
from secrets_bench import bench_secrets, print_secrets


def floor(root: Path) -> float:
    start = time.perf_counter()
    for folder in ("knowledge", "semantics"):
        for dirpath, _dirs, files in os.walk(root / folder):
            for name in files:
                with open(os.path.join(dirpath, name), "rb") as handle:
                    hashlib.sha256(handle.read()).hexdigest()
    return time.perf_counter() - start


def knowl(root: Path, *args: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "knowl_build", "check", "--repo", str(root), "-q", *args],
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(
            f"knowl check failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        )
    return elapsed


def best(samples: list[float]) -> float:
    return min(samples)


def bench_size(pages: int, root: Path, made: float, repeats: int) -> dict[str, float]:
    floors = [floor(root) for _ in range(repeats)]
    colds = []
    for _ in range(repeats):
        shutil.rmtree(root / ".knowl", ignore_errors=True)
        colds.append(knowl(root))
    warms = [knowl(root) for _ in range(repeats)]
    edits = []
    target = root / page_path(1)
    original = target.read_text()
    for n in range(repeats):
        target.write_text(original + f"\nBenchmark edit {n}.\n")
        edits.append(knowl(root))
    target.write_text(original)
    result = {
        "pages": pages,
        "corpus_s": made,
        "floor_s": best(floors),
        "cold_check_s": best(colds),
        "warm_check_s": best(warms),
        "warm_median_s": statistics.median(warms),
        "edit_check_s": best(edits),
    }
    result["warm_over_floor"] = result["warm_check_s"] / result["floor_s"]
    return result


SUITES = [
    "check",
    "build",
    "reader",
    "agent",
    "secrets",
    "body",
    "hints",
    "embeddings",
    "site",
    "links",
    "search",
    "lsp",
    "mcp-http",
    "goals",
    "quality",
    "all",
]


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        help="corpus sizes in pages (default 1000 2000 10000; goals: 1000 10000)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--suite",
        choices=SUITES,
        default="all",
        help="all = check, build, reader, agent, secrets, body, hints and site; goals = "
        "issue 25's goals, this tree beside --baseline, with the other suites' main figures "
        "(bench/goals_bench.py); links = knowl check "
        "beside the revision before Markdown links (bench/links_bench.py); embeddings needs "
        "the extra; quality = MRR@10 and top-1 beside bm25s and tantivy (the bench extra); "
        "search = the search-quality work's cost beside the revision before it "
        "(bench/search_bench.py); lsp = knowl lsp driven over stdio at the largest size "
        "(bench/lsp_bench.py); mcp-http = knowl mcp --http with 1, 10 and 50 clients at the "
        "largest size (bench/mcp_http_bench.py)",
    )
    parser.add_argument("--commits", type=int, default=500, help="commits in each corpus's history")
    parser.add_argument("--keep", type=Path, help="keep the corpora in this folder")
    parser.add_argument(
        "--baseline",
        default=GOALS_BASELINE,
        help=f"goals: the revision A (default {GOALS_BASELINE}, before issue 25's work)",
    )
    parser.add_argument(
        "--large", action="store_true", help="goals: add 50,000 pages (an hour and more)"
    )
    args = parser.parse_args()
    if args.suite == "goals":
        args.sizes = sizes_asked(args.sizes, args.large)
    elif args.sizes is None:
        args.sizes = [1000, 2000, 10000]
    return args


def _without_corpus(args: argparse.Namespace, machine: str) -> bool:
    """The suites that need no corpus of this run; True when the suite asked for is done."""
    if args.suite in ("secrets", "all"):  # built in memory: no corpus needed
        print_secrets(*bench_secrets(args.repeats), f"({machine})")
        if args.suite == "secrets":
            return True
    if args.suite in ("body", "all"):  # one small project per adversarial page
        print_body(bench_body(args.repeats), f"(knowl check --no-cache as a process; {machine})")
        if args.suite == "body":
            return True
    if args.suite in ("hints", "all"):  # its own vaults: broken links, one commit
        print_hints(bench_hints(args.sizes, args.repeats), f"({machine})")
        if args.suite == "hints":
            return True
    if args.suite == "quality":  # its own corpora, fetched from package registries
        print_quality(bench_quality(args.keep))
        return True
    return _own_corpus(args)


def _own_corpus(args: argparse.Namespace) -> bool:
    """The suites that make their own corpus (at the largest size asked for)."""
    pages = max(args.sizes)
    if args.suite == "search":
        from search_bench import BASELINE as SEARCH_BASELINE
        from search_bench import bench_search, print_search

        workdir = args.keep or Path(tempfile.mkdtemp(prefix="knowl-search-bench-"))
        rows = bench_search(args.sizes, args.repeats, 20, SEARCH_BASELINE, workdir)
        print_search(rows, f"({args.repeats} runs a side, 20 commits)", SEARCH_BASELINE)
        return True
    if args.suite == "lsp":
        from lsp_bench import bench_lsp, print_lsp

        print_lsp(pages, bench_lsp(pages))
        return True
    if args.suite == "mcp-http":
        from mcp_http_bench import bench as bench_mcp_http
        from mcp_http_bench import print_rows

        print_rows(bench_mcp_http(pages, [1, 10, 50], 20))
        return True
    return False


def _links(args: argparse.Namespace, workdir: Path) -> None:
    """The links suite, on its own corpora: every other link a Markdown link."""
    try:
        links = bench_links(args.sizes, args.repeats, args.commits, BASELINE, workdir)
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    runs = f"{args.repeats} runs a side; python {sys.version.split()[0]}, {os.cpu_count()} cores"
    print_links(links, f"({runs}, {args.commits} commits)", BASELINE)


def _goals(args: argparse.Namespace, workdir: Path) -> None:
    """The goals suite, on its own corpora (one per side and size)."""
    try:
        rows = bench_goals(args.sizes, args.repeats, args.commits, args.baseline, workdir)
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    runs = f"{args.repeats} runs a side; python {sys.version.split()[0]}, {os.cpu_count()} cores"
    print_goals(rows, f"({runs}, {args.commits} commits)", args.baseline)


def _built(root: Path) -> None:
    """`knowl build` of the corpus, for the suites that read its artifacts."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "knowl_build",
            "build",
            "-q",
            "--allow-errors",
            "--full",
            "--repo",
            str(root),
        ],
        check=True,
    )


class Figures:
    """Each suite's figures over the sizes of a run, in the order they were measured."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self.builds: list[tuple[int, dict[str, float]]] = []
        self.readers: list[tuple[int, dict[str, float]]] = []
        self.semantic: list[tuple[int, dict[str, float]]] = []
        self.agents: list[tuple[int, dict[str, float]]] = []
        self.sites: list[tuple[int, dict[str, float]]] = []


def _measure(args: argparse.Namespace, n: int, root: Path, made: float, out: Figures) -> None:
    """Every suite asked for, on the corpus of `n` pages at `root`."""
    suite = args.suite
    if suite in ("check", "all"):
        out.rows.append(bench_size(n, root, made, args.repeats))
    if suite in ("build", "all"):
        out.builds.append((n, bench_build(root, page_path(0), args.repeats)))
    if suite in ("reader", "agent", "site", "all"):
        _built(root)
    if suite in ("reader", "all"):
        out.readers.append((n, bench_reader(root, args.repeats)))
    if suite in ("agent", "all"):
        out.agents.append((n, bench_agent(root, args.repeats)))
    if suite in ("site", "all"):
        # Imported here: site_bench reads the site's search format, which the other suites
        # (goals among them) must not depend on while that format changes.
        from site_bench import bench_site

        out.sites.append((n, bench_site(root, args.repeats)))
    if suite == "embeddings":
        out.semantic.append((n, bench_embeddings(root, n)))


def _print_builds(builds: list[tuple[int, dict[str, float]]], header: str) -> None:
    print(f"knowl build benchmark {header}")
    print(
        f"{'pages':>7} {'cold build':>11} {'whoosh floor':>13} {'cold/floor':>11} {'no-op':>8} "
        f"{'no-op/cold':>11} {'1-edit':>8} {'edit/cold':>10} {'history':>9}"
    )
    for n, b in builds:
        print(
            f"{n:>7} {b['cold_build_s']:>10.2f}s {b['whoosh_floor_s']:>12.2f}s "
            f"{b['cold_over_floor']:>10.2f}x {b['noop_s']:>7.2f}s {b['noop_share']:>10.1%} "
            f"{b['edit_s']:>7.2f}s {b['edit_share']:>9.1%} {b['history_s']:>8.2f}s"
        )


def _print_embeddings(semantic: list[tuple[int, dict[str, float]]], header: str) -> None:
    print(f"embeddings benchmark {header}")
    print(
        f"{'pages':>7} {'embedding per 1,000 pages':>26} {'query p50 lexical':>18} {'with vectors':>13}"
    )
    for n, e in semantic:
        print(
            f"{n:>7} {e['embed_per_1000_s']:>25.1f}s {e['query_p50_lexical_ms']:>16.1f}ms "
            f"{e['query_p50_vectors_ms']:>11.1f}ms"
        )


def _print_readers(readers: list[tuple[int, dict[str, float]]], header: str) -> None:
    print(f"reader benchmark {header}")
    print(
        f"{'pages':>7} {'search p50':>11} {'p95':>8} {'search e2e':>11} {'show e2e':>9} "
        f"{'traverse e2e':>13} {'no-artifact query':>18} {'ratio':>7}"
    )
    for n, r in readers:
        print(
            f"{n:>7} {r['search_p50_ms']:>9.1f}ms {r['search_p95_ms']:>6.1f}ms "
            f"{r['search_e2e_s']:>10.2f}s {r['show_e2e_s']:>8.2f}s {r['traverse_e2e_s']:>12.2f}s "
            f"{r['naive_query_s']:>17.2f}s {r['naive_over_search_e2e']:>6.1f}x"
        )


def _print_checks(rows: list[dict[str, float]], header: str) -> None:
    print(f"knowl check benchmark {header}")
    print(
        f"{'pages':>7} {'floor':>9} {'cold check':>11} {'warm check':>11} {'warm/floor':>11} "
        f"{'1-edit check':>13}"
    )
    for r in rows:
        print(
            f"{r['pages']:>7} {r['floor_s']:>8.3f}s {r['cold_check_s']:>10.3f}s "
            f"{r['warm_check_s']:>10.3f}s {r['warm_over_floor']:>10.1f}x {r['edit_check_s']:>12.3f}s"
        )


def _print_all(out: Figures, header: str) -> None:
    if out.builds:
        _print_builds(out.builds, header)
    if out.semantic:
        _print_embeddings(out.semantic, header)
    if out.agents:
        print_agent(out.agents, header)
    if out.sites:
        from site_bench import print_site

        print_site(out.sites, header)
    if out.readers:
        _print_readers(out.readers, header)
    if out.rows:
        _print_checks(out.rows, header)


def main() -> None:
    args = _arguments()
    byte_compiled()  # every timed process imports bytecode, not source compiled again
    machine = f"best of {args.repeats}; python {sys.version.split()[0]}, {os.cpu_count()} cores"
    if _without_corpus(args, machine):
        return
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="knowl-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.suite == "links":
        _links(args, workdir)
        return
    if args.suite == "goals":
        _goals(args, workdir)
        return
    out = Figures()
    try:
        for n in args.sizes:
            root = workdir / f"corpus-{n}"
            t0 = time.perf_counter()
            if not root.exists():
                make_corpus(root, n, commits=args.commits)
            made = time.perf_counter() - t0
            _measure(args, n, root, made, out)
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    _print_all(out, f"({machine}, {args.commits} commits of history)")


if __name__ == "__main__":
    main()
