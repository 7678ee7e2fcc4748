"""Trust 11: readers never fail because a build published (issue 10).

A reader process opens the project, searches and shows, closes, again and again, while 100
builds publish (each with a changed page) and prune: not one of its cycles may fail, at
keep_builds 1 and 3. A reader pins the build it opened (a shared lock on its manifest, which
pruning respects), and a reader whose build vanished between resolving CURRENT and pinning
it opens the new CURRENT once more.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowl_build.artifacts.publication import current_folder, resolve_artifact
from knowl_build.core.config import Config
from knowl_build.pipeline.publish import build
from knowl_build.reader import Reader
from tests.helpers import Project

PAGES = {
    "knowledge/global/revenue.md": "---\nsummary: Revenue is the sum of orders\nrefs: [churn]\n---\n# Revenue\n",
    "knowledge/global/churn.md": "---\nsummary: Churn counts cancelled subscriptions\n---\nChurn.\n",
}

READER_LOOP = textwrap.dedent(
    """
    import json, sys, traceback
    from pathlib import Path
    from knowl_build.reader import Reader

    root, stop, report = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    ready = report.with_name("ready")
    cycles, failures = 0, []
    while not stop.exists() or cycles == 0:
        try:
            with Reader.open(root) as reader:
                hits = reader.search("revenue churn")["hits"]
                assert hits, "no hits"
                assert reader.show("revenue")["page_id"] == "revenue"
                assert reader.traverse(["revenue"])["pages"]
        except BaseException as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
        cycles += 1
        ready.touch()
    report.write_text(json.dumps({"cycles": cycles, "failures": failures}))
    """
)
BUILDS = 100


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield


@pytest.mark.parametrize("keep", [1, 3])
def test_a_reader_loop_across_100_builds_never_fails(tmp_path: Path, keep: int) -> None:
    proj = Project(tmp_path / "kb").write(PAGES)
    proj.commit("initial")
    config = Config(keep_builds=keep, rules={"KB202": "off"})
    assert build(proj.root, config).status == "published"
    stop, report = tmp_path / "stop", tmp_path / "report.json"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER_LOOP, str(proj.root), str(stop), str(report)],
        env=os.environ.copy(),
    )
    try:
        while not (tmp_path / "ready").exists() and reader.poll() is None:
            time.sleep(0.01)  # wait for the reader's first cycle
        published = 0
        for i in range(BUILDS):
            proj.write(
                {"knowledge/global/churn.md": PAGES["knowledge/global/churn.md"] + f"edit {i}\n"}
            )
            result = build(proj.root, config, full=i % 2 == 0)
            published += result.status == "published"
    finally:
        stop.write_text("")
        reader.wait(timeout=60)
    outcome = json.loads(report.read_text())
    assert outcome["failures"] == [], outcome["failures"][:5]
    assert published == BUILDS and outcome["cycles"] >= 20, (published, outcome["cycles"])
    out = proj.root / ".knowl" / "build"
    folders = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(folders) <= keep + 1  # pruned, but for a build a reader still held


def test_a_held_build_is_not_pruned_and_goes_with_the_next_build(tmp_path: Path) -> None:
    proj = Project(tmp_path / "kb").write(PAGES)
    proj.commit("initial")
    config = Config(keep_builds=1, rules={"KB202": "off"})
    build(proj.root, config)
    out = proj.root / ".knowl" / "build"
    with Reader.open(proj.root) as reader:
        held = reader.view.folder
        proj.write({"knowledge/global/churn.md": "---\nsummary: Churn v2\n---\n"})
        assert build(proj.root, config).pruned == []
        assert held.is_dir() and current_folder(out) != held
        assert reader.search("revenue")["hits"]  # still answers from the build it opened
    proj.write({"knowledge/global/churn.md": "---\nsummary: Churn v3\n---\n"})
    assert held.name in build(proj.root, config).pruned
    assert not held.exists()


def test_a_reader_whose_build_vanished_opens_the_new_current(tmp_path: Path) -> None:
    from knowl_build.reader.view import ArtifactView

    proj = Project(tmp_path / "kb").write(PAGES)
    proj.commit("initial")
    config = Config(keep_builds=1, rules={"KB202": "off"})
    build(proj.root, config)
    out = proj.root / ".knowl" / "build"
    resolved = resolve_artifact(out)  # CURRENT read, nothing pinned yet
    proj.write({"knowledge/global/churn.md": "---\nsummary: Churn v2\n---\n"})
    assert resolved.name in build(proj.root, config).pruned
    store = ArtifactView.open(resolved)
    try:
        assert store.folder == current_folder(out) != resolved
    finally:
        store.close()
