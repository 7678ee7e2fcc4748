"""Test helpers: real git repositories in temp folders, and a CLI runner that explains itself."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from knowl_build.artifacts.layout import RECORDS
from knowl_build.cli import cli
from knowl_build.index.analysis import query_terms
from knowl_build.index.ranking import Hit, Searcher

AUTHOR = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.invalid",
}

SEMANTICS = {
    "semantics/shop/orders.yaml": """\
name: orders
connection: shop_pg
table: analytics.fct_orders
grain: [order_id]
description: One row per order.
columns:
  - { name: order_id, type: int }
  - { name: amount, type: decimal, nullable: false }
  - { name: status, type: string }
measures:
  - { name: total_revenue, expr: "sum(amount)", additivity: additive, description: Revenue. }
dimensions:
  - { name: status, column: status, label: Status }
""",
}

FP_SUM_AMOUNT = "sha256:6193c9db63810d49d8c08c18bacb053c943f8f0c1ea8d0fc3dee16ecc0cd7b34"


class Project:
    """A knowledge project on disk, optionally a git repository with pinned history."""

    def __init__(self, root: Path, git: bool = True) -> None:
        self.root = root
        self.git = git
        self.ticks = 0
        root.mkdir(parents=True, exist_ok=True)
        if git:
            self.run_git("init", "-q", "-b", "main")

    def write(self, files: Mapping[str, str | bytes]) -> Project:
        for rel, content in files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8", newline="")
        return self

    def remove(self, *paths: str) -> Project:
        for rel in paths:
            (self.root / rel).unlink()
        return self

    def run_git(self, *args: str) -> str:
        env = {**os.environ, **AUTHOR}
        date = f"2026-01-{1 + self.ticks:02d}T12:00:00+00:00"
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
        out = subprocess.run(
            ["git", *args], cwd=self.root, env=env, check=True, capture_output=True, text=True
        )
        return out.stdout

    def commit(self, message: str = "change") -> str:
        self.run_git("add", "-A")
        self.run_git("commit", "-q", "--allow-empty", "-m", message)
        self.ticks += 1
        return self.run_git("rev-parse", "HEAD").strip()


def invoke(
    args: list[str], code: int = 0, env: Mapping[str, str] | None = None, input: str | None = None
) -> Result:
    """Run the CLI in-process; on an unexpected exit code, show everything it printed."""
    runner = CliRunner()
    result = runner.invoke(cli, args, env=dict(env or {}), input=input, catch_exceptions=False)
    assert result.exit_code == code, (
        f"exit {result.exit_code}, expected {code}\n--- stdout\n{result.stdout}\n"
        f"--- stderr\n{result.stderr}"
    )
    return result


def current_build(root: Path) -> Path:
    """The build folder `.knowl/build/CURRENT` of the project at `root` names."""
    out = root / ".knowl" / "build"
    return out / (out / "CURRENT").read_text().strip()


def record_lines(folder: Path) -> list[bytes]:
    """The lines of a build's page records, decompressed as any gzip reader does it."""
    return gzip.decompress((folder / RECORDS).read_bytes()).splitlines(keepends=True)


def records(folder: Path) -> list[dict[str, Any]]:
    """A build's page records (SPEC 6.1), in file order."""
    return [json.loads(line) for line in record_lines(folder)]


def dump_json(data: Any) -> bytes:
    """JSON as a build writes it (sorted keys, compact, UTF-8), for tests that forge artifact
    files; unlike the writer it also writes what no build would (NaN, say)."""
    return (
        json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
    ).encode()


def search(
    folder: Path,
    text: str,
    boosts: Mapping[str, float],
    limit: int | None = None,
    scopes: Iterable[str] | None = None,
) -> list[Hit]:
    """The index in `folder` queried directly: `text`'s terms OR-ed, best first."""
    with Searcher(folder) as searcher:
        return searcher.query(query_terms(text), boosts, scopes).top(limit)
