"""A cold build writes its index in a forked process, sent documents as pages are parsed,
while the rules run (`index.writer.write_apart`): the same index, documents and rankings as
one written in the build's own process, and a failed or different one is written again
in-process, also when the pages are parsed by worker processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowl_build.artifacts.layout import RECORDS
from knowl_build.core.config import Config
from knowl_build.index import writer
from knowl_build.pipeline import pages
from knowl_build.pipeline.publish import build
from tests.helpers import Project, search
from tests.test_incremental import QUERIES, WORDS

BOOSTS = {"summary": 3.0, "tags": 2.0, "title": 2.0, "body": 1.0}


def _project(root: Path) -> Project:
    files: dict[str, str | bytes] = {
        "semantics/s.yaml": (
            "name: s\\nconnection: db\\ntable: t\\ncolumns:\\n  - { name: id }\\n"
            'measures:\\n  - { name: total, expr: "sum(x)" }\\n'
        ),
        "knowl.toml": "[rules]\\nKB202 = 'off'\\n",
    }
    for i in range(30):
        scope = "global" if i % 5 else f"user/u{i % 2}"
        words = " ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 12 + i % 7))
        files[f"knowledge/{scope}/p{i}.md"] = (
            f"---\\nsummary: {WORDS[i % len(WORDS)]} notes\\ntags: [{WORDS[(i + 3) % len(WORDS)]}]\\n"
            f"sl_refs: [db.s.total]\\n---\\n# Page {i}\\n\\n{words}\\n\\n"
            "Uses `<< sl:db.s.total.expr >>`.\\n"
        )
    proj = Project(root).write(files)
    proj.commit("start")
    return proj


def _index(folder: Path) -> tuple[Any, ...]:
    index = folder / "index"
    hits = [[(h.key, h.score) for h in search(index, q, BOOSTS)] for q in QUERIES]
    return (
        hits,
        json.loads((index / "stats.json").read_text()),
        json.loads((index / "docs.json").read_text()),
    )


def test_the_index_written_apart_is_the_one_written_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = _project(tmp_path / "p")
    config = Config(rules={"KB202": "off"}, source="knowl.toml")
    waited: list[writer.IndexUpdate | None] = []
    real_wait = writer.Apart.wait

    def wait(self: writer.Apart, digests: Any, expected: str) -> writer.IndexUpdate | None:
        waited.append(real_wait(self, digests, expected))
        return waited[-1]

    monkeypatch.setattr(writer.Apart, "wait", wait)
    apart = build(proj.root, config, allow_errors=True, full=True, out=tmp_path / "apart")
    assert waited and waited[0] is not None and waited[0].added == 30  # written apart
    monkeypatch.setattr(writer, "write_apart", lambda *args: None)
    here = build(proj.root, config, allow_errors=True, full=True, out=tmp_path / "here")
    assert apart.folder is not None and here.folder is not None
    assert _index(apart.folder) == _index(here.folder)
    for name in (RECORDS, "catalog.json", "signatures.json"):
        assert (apart.folder / name).read_bytes() == (here.folder / name).read_bytes()


def test_pages_parsed_by_workers_are_indexed_as_they_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = _project(tmp_path / "p")
    config = Config(rules={"KB202": "off"}, source="knowl.toml")
    monkeypatch.setattr(pages, "PARALLEL_MIN_PAGES", 1)
    monkeypatch.setattr(pages, "_parse_uncached", _in_small_chunks(pages._parse_uncached))
    batches: list[int] = []
    real = writer.Apart.send

    def send(self: writer.Apart, documents: list[writer.IndexDocument]) -> None:
        batches.append(len(documents))
        real(self, documents)

    monkeypatch.setattr(writer.Apart, "send", send)
    streamed = build(proj.root, config, allow_errors=True, full=True, out=tmp_path / "streamed")
    assert len(batches) > 1 and sum(batches) == 30
    monkeypatch.setattr(writer, "write_apart", lambda *args: None)
    here = build(proj.root, config, allow_errors=True, full=True, out=tmp_path / "here")
    assert streamed.folder is not None and here.folder is not None
    assert _index(streamed.folder) == _index(here.folder)


def _in_small_chunks(parse: Any) -> Any:
    """`_parse_uncached` in batches of a few pages, as worker chunks arrive."""

    def chunked(todo: dict[str, bytes], *args: Any) -> Any:
        items = list(todo.items())
        for start in range(0, len(items), 7):
            yield from parse(dict(items[start : start + 7]), *args)

    return chunked


def test_an_index_written_apart_with_other_documents_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = _project(tmp_path / "p")
    config = Config(rules={"KB202": "off"}, source="knowl.toml")
    real = writer.Apart.send
    sent: list[int] = []

    def send(self: writer.Apart, documents: list[writer.IndexDocument]) -> None:
        real(self, documents[1:] if not sent else documents)  # the first one left out
        sent.append(len(documents))

    monkeypatch.setattr(writer.Apart, "send", send)
    result = build(proj.root, config, allow_errors=True, full=True, out=tmp_path / "out")
    monkeypatch.setattr(writer, "write_apart", lambda *args: None)
    here = build(proj.root, config, allow_errors=True, full=True, out=tmp_path / "here")
    assert result.folder is not None and here.folder is not None
    assert _index(result.folder) == _index(here.folder)
