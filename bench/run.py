"""The benchmark: `python bench/run.py` (or `--sizes 1000` for a quick run).

Builds synthetic corpora with git history and prints, per size, in one run:
- floor: reading and hashing every input file (what any checker must at least do);
- cold check: `knowl check` as a process with no parse cache;
- warm check: `knowl check` again, on the unchanged tree (answered from the run memo);
- one-edit check: `knowl check` after one page changed (the parse cache, not the memo);
and warm / floor as a ratio measured in the same run.
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
from corpus import make_corpus, page_path


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
    proc = subprocess.run([sys.executable, "-m", "knowl_build", "check", "--repo", str(root), "-q", *args],
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"knowl check failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed


def best(samples: list[float]) -> float:
    return min(samples)


def bench_size(pages: int, workdir: Path, repeats: int) -> dict[str, float]:
    root = workdir / f"corpus-{pages}"
    t0 = time.perf_counter()
    make_corpus(root, pages)
    made = time.perf_counter() - t0
    floors = [floor(root) for _ in range(repeats)]
    colds = []
    for _ in range(repeats):
        shutil.rmtree(root / ".knowl", ignore_errors=True)
        colds.append(knowl(root))
    warms = [knowl(root) for _ in range(repeats)]
    edits = []
    target = root / page_path(0)
    original = target.read_text()
    for n in range(repeats):
        target.write_text(original + f"\nBenchmark edit {n}.\n")
        edits.append(knowl(root))
    target.write_text(original)
    result = {"pages": pages, "corpus_s": made, "floor_s": best(floors), "cold_check_s": best(colds),
              "warm_check_s": best(warms), "warm_median_s": statistics.median(warms),
              "edit_check_s": best(edits)}
    result["warm_over_floor"] = result["warm_check_s"] / result["floor_s"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="keep the corpora in this folder")
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="knowl-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        rows = [bench_size(n, workdir, args.repeats) for n in args.sizes]
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"knowl check benchmark (best of {args.repeats}; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores)")
    print(f"{'pages':>7} {'floor':>9} {'cold check':>11} {'warm check':>11} {'warm/floor':>11} "
          f"{'1-edit check':>13}")
    for r in rows:
        print(f"{r['pages']:>7} {r['floor_s']:>8.3f}s {r['cold_check_s']:>10.3f}s "
              f"{r['warm_check_s']:>10.3f}s {r['warm_over_floor']:>10.1f}x {r['edit_check_s']:>12.3f}s")


if __name__ == "__main__":
    main()
