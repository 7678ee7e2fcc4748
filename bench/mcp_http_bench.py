"""What `knowl mcp --http` answers a team: a real server process on 127.0.0.1 with bearer
tokens, driven by the official SDK's Streamable HTTP client on a synthetic project
(bench/corpus.py), as concurrent agents drive it.

`python bench/mcp_http_bench.py --pages 10000` (`--clients 1,10,50`, `--queries 20`). For
each number of clients, all connected at once, each with its own session and a token (half
of them one user's, half another's), each client sends its searches one after another: the
figures are the latency of one `search_knowledge` call as a client sees it, p50, p95 and max
over every call, and the calls answered per second. Then the server's resident memory.
Every answer is checked (no tool error, hits for a corpus word).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import WORDS, make_corpus
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

STARTED = re.compile(r"serving http://127\.0\.0\.1:(\d+)/mcp")
TOKENS = {"alice": "alice-" + "a" * 40, "bob": "bob-" + "b" * 40}


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def start(root: Path, tokens: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "KNOWL_EMBEDDINGS": "off"}
    args = ["mcp", "--repo", str(root), "--http", "127.0.0.1:0", "--tokens", str(tokens)]
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "knowl_build", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = log.read_text()
        found = STARTED.search(text)
        if found and "Application startup complete" in text:
            return process, f"http://127.0.0.1:{found.group(1)}/mcp"
        if process.poll() is not None:
            raise SystemExit(f"the server stopped: {text}")
        time.sleep(0.1)
    process.kill()
    raise SystemExit(f"the server did not start: {log.read_text()}")


async def client(url: str, token: str, queries: list[str], ready: asyncio.Barrier) -> list[float]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await ready.wait()  # every client connected: the searches start together
        times = []
        for query in queries:
            start = time.perf_counter()
            answer = await session.call_tool("search_knowledge", {"query": query})
            times.append(time.perf_counter() - start)
            if answer.is_error or not answer.structured_content["hits"]:
                raise SystemExit(f"search {query!r}: {answer.content}")
        return times


async def round_of(url: str, clients: int, queries: int) -> tuple[list[float], float]:
    ready = asyncio.Barrier(clients)
    users = list(TOKENS.values())
    plans = [[WORDS[(n * 7 + q) % len(WORDS)] for q in range(queries)] for n in range(clients)]
    start = time.perf_counter()
    answers = await asyncio.gather(
        *(client(url, users[n % len(users)], plans[n], ready) for n in range(clients))
    )
    wall = time.perf_counter() - start
    return [t for times in answers for t in times], wall


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def bench(pages: int, clients: list[int], queries: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="knowl-mcp-http-"))
    try:
        root = work / "kb"
        make_corpus(root, pages)
        env = {**os.environ, "KNOWL_EMBEDDINGS": "off"}
        subprocess.run(
            [sys.executable, "-m", "knowl_build", "build", "--repo", str(root), "-q"],
            check=True,
            env=env,
        )
        tokens = work / "tokens"
        tokens.write_text("".join(f"{token} {user}\n" for user, token in TOKENS.items()))
        tokens.chmod(0o600)
        process, url = start(root, tokens, work / "server.log")
        rounds = {}
        try:
            for count in clients:
                times, wall = asyncio.run(round_of(url, count, queries))
                rounds[count] = {
                    "calls": len(times),
                    "p50_ms": statistics.median(times) * 1000,
                    "p95_ms": p95(times) * 1000,
                    "max_ms": max(times) * 1000,
                    "per_s": len(times) / wall,
                }
            rss = rss_mb(process.pid)
        finally:
            process.terminate()
            process.wait(timeout=30)
        return {"pages": pages, "rounds": rounds, "rss_mb": rss}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--clients", default="1,10,50", help="comma-separated client counts")
    parser.add_argument("--queries", type=int, default=20, help="searches per client")
    args = parser.parse_args()
    clients = [int(n) for n in args.clients.split(",")]
    print_rows(bench(args.pages, clients, args.queries))


def print_rows(out: dict[str, Any]) -> None:
    """The table of one run: each client count's calls, p50, p95, max and calls per second."""
    print(f"knowl mcp --http, {out['pages']} pages, search_knowledge over Streamable HTTP")
    print(f"{'clients':>8} {'calls':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'calls/s':>8}")
    for count, row in out["rounds"].items():
        print(
            f"{count:>8} {row['calls']:>6} {row['p50_ms']:>8.1f} {row['p95_ms']:>8.1f} "
            f"{row['max_ms']:>8.1f} {row['per_s']:>8.1f}"
        )
    print(f"server rss: {out['rss_mb']:.0f} MB")


if __name__ == "__main__":
    main()
