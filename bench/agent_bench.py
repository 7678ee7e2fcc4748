"""The agent benchmark: `python bench/run.py --suite agent`.

On a built corpus: `get_context` (Reader.context) in-process, p50/p95 over 50 questions; and
the time from a write to the page being searchable: `store` through the application layer
(what the MCP tool `store_knowledge` runs: the write, then the incremental rebuild), until a
fresh reader's search finds the new page.
"""

from __future__ import annotations

import random
import statistics
import time
from pathlib import Path

from corpus import WORDS


def _percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1000, ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000


def bench_agent(root: Path, repeats: int) -> dict[str, float]:
    from knowl_build.app.project import Project, load_config
    from knowl_build.app.writing import request, store
    from knowl_build.reader import Reader

    rng = random.Random(17)
    questions = [
        "how is " + " ".join(rng.sample(WORDS, rng.randint(1, 3))) + " calculated?"
        for _ in range(50)
    ]
    with Reader.open(root) as reader:
        reader.context("warm up")
        times = []
        for question in questions:
            start = time.perf_counter()
            reader.context(question)
            times.append(time.perf_counter() - start)
    p50, p95 = _percentiles(times)

    project = Project(root, load_config(root))
    writes = []
    for n in range(repeats):
        word = f"zyzzogeton{n}x{rng.randint(0, 10**6)}"
        start = time.perf_counter()
        stored = store(
            project,
            request(category="fact", title=f"Bench fact {word}", content=f"The {word} holds."),
        )
        with Reader.open(root) as reader:
            found = [h["page"] for h in reader.search(word)["hits"]]
        writes.append(time.perf_counter() - start)
        if stored.build is None or stored.build.status != "published" or not found:
            raise SystemExit(f"write {n} was not searchable: {stored.to_json()}")
    return {"context_p50_ms": p50, "context_p95_ms": p95, "write_to_search_s": min(writes)}


def print_agent(rows: list[tuple[int, dict[str, float]]], header: str) -> None:
    print(f"agent benchmark {header}")
    print(f"{'pages':>7} {'get_context p50':>16} {'p95':>8} {'write -> searchable':>20}")
    for n, r in rows:
        print(
            f"{n:>7} {r['context_p50_ms']:>14.1f}ms {r['context_p95_ms']:>6.1f}ms "
            f"{r['write_to_search_s']:>19.2f}s"
        )
