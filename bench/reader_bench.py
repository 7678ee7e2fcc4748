"""The reader benchmark: `python bench/run.py --suite reader`.

On a built corpus: in-process search p50/p95 over 100 queries; `knowl search`, `knowl show`
and `knowl traverse --depth 2` end to end as processes (start-up included); and, for
comparison in the same run, one query answered the way a tool without artifacts must: read
and parse every page (python-frontmatter), index it in memory (BM25), search.
"""

from __future__ import annotations

import random
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from corpus import WORDS

TOKEN = re.compile(r"[^\W_]+")


def _process(args: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "knowl_build", *args], capture_output=True, text=True
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"knowl {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return elapsed


def naive_query(root: Path, query: str) -> float:
    """Load and parse every page, build an in-memory BM25 index, answer one query."""
    import frontmatter

    start = time.perf_counter()
    docs: list[tuple[str, Counter[str], int]] = []
    for path in sorted((root / "knowledge").rglob("*.md")):
        post = frontmatter.load(str(path))
        text = (
            " ".join(str(post.metadata.get(k, "")) for k in ("title", "summary", "tags"))
            + " "
            + post.content
        )
        tokens = [t.lower() for t in TOKEN.findall(text)]
        docs.append((str(path), Counter(tokens), len(tokens)))
    from knowl_build.writes.bm25 import bm25_scores

    terms = [t.lower() for t in TOKEN.findall(query)]
    ranked = bm25_scores([counts for _, counts, _ in docs], terms)
    scores = sorted(
        ((s, path) for s, (path, _, _) in zip(ranked, docs, strict=True) if s), reverse=True
    )
    del scores
    return time.perf_counter() - start


def time_queries(reader: Any, queries: list[str]) -> list[float]:
    """Seconds per in-process search, after one warm-up query, sorted."""
    reader.search("warm up")
    times = []
    for query in queries:
        start = time.perf_counter()
        reader.search(query)
        times.append(time.perf_counter() - start)
    return sorted(times)


def bench_reader(root: Path, repeats: int) -> dict[str, float]:
    from knowl_build.reader import Reader

    rng = random.Random(11)
    queries = [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(100)]
    with Reader.open(root) as reader:
        times = time_queries(reader, queries)
    search_e2e = min(
        _process(["search", "revenue churn", "--repo", str(root), "--json"]) for _ in range(repeats)
    )
    show_e2e = min(
        _process(["show", "page1", "--repo", str(root), "--json"]) for _ in range(repeats)
    )
    traverse_e2e = min(
        _process(["traverse", "page1", "--depth", "2", "--repo", str(root), "--json"])
        for _ in range(repeats)
    )
    naive = min(naive_query(root, "revenue churn") for _ in range(repeats))
    return {
        "search_p50_ms": statistics.median(times) * 1000,
        "search_p95_ms": times[int(len(times) * 0.95) - 1] * 1000,
        "search_e2e_s": search_e2e,
        "show_e2e_s": show_e2e,
        "traverse_e2e_s": traverse_e2e,
        "naive_query_s": naive,
        "naive_over_search_e2e": naive / search_e2e,
    }
