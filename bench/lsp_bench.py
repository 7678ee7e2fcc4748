"""What the language server costs an editor: `knowl lsp` driven over stdio by pygls' client on
a synthetic project (bench/corpus.py), as an editor drives it.

`python bench/lsp_bench.py --pages 10000`. Figures (issue 27's goals in brackets):

- first diagnostics: initialize to the first diagnostics of an open page, with no cache
  (`cold`) and after a `knowl check` left its caches (`warm`) [< 2 s];
- keystroke: an edit to the open page until its new diagnostics, p50 and p95 over the runs,
  each edit after the last one's answer (the debounce counted) [p95 < 100 ms];
- completion after `[[` and hover on a link, p50 and p95 [p95 < 50 ms];
- rename: a page's rename until its workspace edit arrives [< 1 s];
- rss: the server's resident memory at the end [< 300 MB].
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import make_corpus, page_path
from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


class Driver:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.client = LanguageClient("knowl-bench", "1")
        self.published: dict[str, int] = {}
        self.changed = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)  # type: ignore[untyped-decorator]
        def publish(params: types.PublishDiagnosticsParams) -> None:
            self.published[params.uri] = self.published.get(params.uri, 0) + 1
            self.changed.set()

    def uri(self, path: str) -> str:
        return from_fs_path(str(self.root / path)) or ""

    async def start(self) -> None:
        await self.client.start_io(
            sys.executable, "-m", "knowl_build", "lsp", cwd=str(self.root.parent)
        )
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(self.root))
            )
        )
        self.client.initialized(types.InitializedParams())

    async def published_for(self, uri: str, count: int) -> None:
        while self.published.get(uri, 0) < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 600)

    def rss_mb(self) -> float:
        server = self.client._server
        assert server is not None
        for line in Path(f"/proc/{server.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()  # type: ignore[no-untyped-call]


def where(uri: str, line: int, character: int) -> dict[str, Any]:
    return {
        "text_document": types.TextDocumentIdentifier(uri),
        "position": types.Position(line, character),
    }


async def session(root: Path, edits: int, requests: int) -> dict[str, float]:
    driver = Driver(root)
    path = page_path(0)
    uri = driver.uri(path)
    text = (root / path).read_text(encoding="utf-8")
    start = time.perf_counter()
    await driver.start()
    item = types.TextDocumentItem(uri, "markdown", 1, text)
    driver.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
    await driver.published_for(uri, 1)
    first = time.perf_counter() - start
    keystrokes = []
    for n in range(edits):
        count = driver.published.get(uri, 0)
        text += "x" if n % 2 == 0 else " [[nowhere]]"
        document = types.VersionedTextDocumentIdentifier(uri=uri, version=n + 2)
        change = types.TextDocumentContentChangeWholeDocument(text=text)
        began = time.perf_counter()
        driver.client.text_document_did_change(
            types.DidChangeTextDocumentParams(document, [change])
        )
        await driver.published_for(uri, count + 1)
        keystrokes.append(time.perf_counter() - began)
    lines = text.split("\n")
    link_line = next(i for i, line in enumerate(lines) if line.startswith("See [["))
    completions, hovers = [], []
    completing = text + "\n[[page1"
    document = types.VersionedTextDocumentIdentifier(uri=uri, version=edits + 2)
    change = types.TextDocumentContentChangeWholeDocument(text=completing)
    driver.client.text_document_did_change(types.DidChangeTextDocumentParams(document, [change]))
    last = len(completing.split("\n")) - 1
    for _ in range(requests):
        began = time.perf_counter()
        await driver.client.text_document_completion_async(
            types.CompletionParams(**where(uri, last, 7))
        )
        completions.append(time.perf_counter() - began)
        began = time.perf_counter()
        await driver.client.text_document_hover_async(types.HoverParams(**where(uri, link_line, 7)))
        hovers.append(time.perf_counter() - began)
    began = time.perf_counter()
    await driver.client.text_document_rename_async(
        types.RenameParams(new_name="renamed-page", **where(uri, link_line, 7))
    )
    rename = time.perf_counter() - began
    rss = driver.rss_mb()
    await driver.stop()
    return {
        "first_diagnostics_s": first,
        "keystroke_p50_ms": statistics.median(keystrokes) * 1000,
        "keystroke_p95_ms": p95(keystrokes) * 1000,
        "completion_p50_ms": statistics.median(completions) * 1000,
        "completion_p95_ms": p95(completions) * 1000,
        "hover_p50_ms": statistics.median(hovers) * 1000,
        "hover_p95_ms": p95(hovers) * 1000,
        "rename_s": rename,
        "rss_mb": rss,
    }


def bench_lsp(pages: int, edits: int = 20, requests: int = 50) -> dict[str, dict[str, float]]:
    """The figures of a cold session and of a warm one (after `knowl check`), on a corpus of
    `pages` pages made for the run in a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="knowl-lsp-bench-"))
    try:
        root = folder / "project"
        make_corpus(root, pages)
        cold = asyncio.run(session(root, edits, requests))
        subprocess.run(
            [sys.executable, "-m", "knowl_build", "check", "--repo", str(root), "-q"],
            capture_output=True,
            cwd=folder,
            env=dict(os.environ),
            check=False,
        )
        warm = asyncio.run(session(root, edits, requests))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"cold": cold, "warm": warm}


def print_lsp(pages: int, figures: dict[str, dict[str, float]]) -> None:
    cold, warm = figures["cold"], figures["warm"]
    print(f"knowl lsp on {pages} pages")
    for name in cold:
        print(f"  {name:22} cold {cold[name]:10.2f}   warm {warm[name]:10.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10000)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = bench_lsp(args.pages, args.edits, args.requests)
    if args.json:
        print(json.dumps({"pages": args.pages, **figures}, indent=2, sort_keys=True))
    else:
        print_lsp(args.pages, figures)


if __name__ == "__main__":
    main()
