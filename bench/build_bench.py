"""The build benchmark: `python bench/run.py --suite build`.

For each size, in one run: cold `knowl build` (no caches, no previous artifact); the floor, a
bare Whoosh writer indexing the same documents with the same schema; a no-op rebuild; a
rebuild after one page was edited and committed; and the history pass alone.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def knowl_build(root: Path) -> float:
    return measured_build(root)[0]


# Starts a command and reports the peak RSS (kilobytes on Linux) of it and the processes it
# waited for. The bench spawns builds through it: a process started straight from the bench
# would count the bench's own memory as its peak (exec keeps the larger of the two).
_LAUNCHER = (
    "import os, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "print(usage.ru_maxrss, time.perf_counter() - start, file=sys.stderr)\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def measured_build(root: Path) -> tuple[float, float]:
    """`knowl build` as a process: seconds (timed by the launcher, around the process), and
    the peak RSS in MB of the process and the processes it waited for (its index writer and
    parse workers)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _LAUNCHER,
            sys.executable,
            "-m",
            "knowl_build",
            "build",
            "--repo",
            str(root),
            "-q",
            "--allow-errors",
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"knowl build failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    rss, elapsed = proc.stderr.strip().splitlines()[-1].split()
    return float(elapsed), int(rss) / 1024


def disk_bytes(*folders: Path) -> int:
    """The bytes of every file under `folders`, a file with several links counted once (as
    `du` counts them): what the folders hold on disk."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder in folders:
        for dirpath, _dirs, files in os.walk(folder):
            for name in files:
                info = os.lstat(os.path.join(dirpath, name))
                if (info.st_dev, info.st_ino) not in seen:
                    seen.add((info.st_dev, info.st_ino))
                    total += info.st_size
    return total


def whoosh_floor(root: Path) -> float:
    """`whoosh_floor_times`' wall seconds."""
    return whoosh_floor_times(root)[0]


def whoosh_floor_times(root: Path) -> tuple[float, float]:
    """A bare Whoosh writer (Whoosh's own codec) with knowl's schema, analyzer and memory
    limit (`[index] memory_mb`), the documents already in memory: wall and CPU seconds of this process (the writer runs in
    it) from creating the index to its commit."""
    from whoosh import index

    from knowl_build.artifacts.layout import RECORDS
    from knowl_build.core.config_loader import load_config
    from knowl_build.index.analysis import schema

    memory_mb = load_config(root).index_memory_mb

    out = root / ".knowl" / "build"
    folder = out / (out / "CURRENT").read_text().strip()
    docs = []
    # gzip.open reads the members as one stream; gzip.decompress of many members is
    # quadratic (over 10 minutes for the records of 50,000 pages).
    with gzip.open(folder / RECORDS) as records:
        data = records.read()
    for line in data.splitlines():
        row = json.loads(line)
        docs.append(
            dict(
                key=row["path"],
                page_id=row["id"],
                scope=row["scope"],
                status=row["fields"]["status"],
                category=row["fields"]["category"] or "",
                usage_mode=row["fields"]["usage_mode"],
                visibility=row["fields"]["visibility"],
                title=row["title"],
                summary=row["fields"]["summary"],
                tags=" ".join(row["fields"]["tags"]),
                body=row["body"],
            )
        )
    target = Path(tempfile.mkdtemp(prefix="whoosh-floor-"))
    try:
        start, cpu = time.perf_counter(), time.process_time()
        ix = index.create_in(str(target), schema(), indexname="MAIN")
        writer = ix.writer(limitmb=memory_mb)
        for doc in docs:
            writer.add_document(**doc)
        writer.commit()
        return time.perf_counter() - start, time.process_time() - cpu
    finally:
        shutil.rmtree(target, ignore_errors=True)


def history_pass(root: Path) -> float:
    from knowl_build.core.config_loader import load_config
    from knowl_build.history.log import GitHistory
    from knowl_build.history.replay import trace
    from knowl_build.pipeline.analysis import load_layer
    from knowl_build.pipeline.inputs import read_inputs

    config = load_config(root)
    inputs = read_inputs(root, config)
    layer = load_layer(inputs)
    assert inputs.discovery.git is not None
    start = time.perf_counter()
    reader = GitHistory(inputs.discovery.git)
    history = trace(reader, config, layer)
    reader.close()
    elapsed = time.perf_counter() - start
    assert len(history.commits) > 1
    return elapsed


def edit_and_commit(root: Path, rel: str, n: int) -> None:
    path = root / rel
    path.write_text(path.read_text() + f"\nBenchmark edit {n}.\n")
    subprocess.run(
        ["git", "commit", "-q", "-am", f"bench edit {n}"],
        cwd=root,
        check=True,
        env={
            "GIT_AUTHOR_NAME": "b",
            "GIT_AUTHOR_EMAIL": "b@x.invalid",
            "GIT_COMMITTER_NAME": "b",
            "GIT_COMMITTER_EMAIL": "b@x.invalid",
            "PATH": "/usr/bin:/bin:/usr/local/bin",
        },
    )


def bench_build(root: Path, page_path: str, repeats: int) -> dict[str, float]:
    colds, cold_rss = [], []
    for _ in range(repeats):
        shutil.rmtree(root / ".knowl", ignore_errors=True)
        seconds, rss = measured_build(root)
        colds.append(seconds)
        cold_rss.append(rss)
    out = root / ".knowl" / "build"
    one_build = disk_bytes(out / (out / "CURRENT").read_text().strip())
    floor = min(whoosh_floor(root) for _ in range(repeats))
    noops = [knowl_build(root) for _ in range(repeats)]
    edits, edit_rss = [], []
    for n in range(max(repeats, 3)):  # as many builds as are kept, to weigh what they share
        edit_and_commit(root, page_path, n)
        seconds, rss = measured_build(root)
        edits.append(seconds)
        edit_rss.append(rss)
    history = min(history_pass(root) for _ in range(repeats))
    cold = min(colds)
    corpus = disk_bytes(root / "knowledge", root / "semantics")
    return {
        "cold_build_s": cold,
        "whoosh_floor_s": floor,
        "cold_over_floor": cold / floor,
        "noop_s": min(noops),
        "noop_share": min(noops) / cold,
        "edit_s": min(edits),
        "edit_share": min(edits) / cold,
        "history_s": history,
        "cold_rss_mb": min(cold_rss),
        "edit_rss_mb": min(edit_rss),
        "corpus_mb": corpus / 1e6,
        "artifact_mb": one_build / 1e6,
        "artifact_over_corpus": one_build / corpus,
        "kept_mb": disk_bytes(out) / 1e6,
        "kept_builds": len([p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]),
    }
