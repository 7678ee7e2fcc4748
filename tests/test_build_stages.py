"""The build as its stages (pipeline/stages/): the order a front end sees them in, and a
build that stops in any one of them publishes nothing and leaves nothing behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from knowl_build.artifacts.layout import LOCK, STAGING_PREFIX
from knowl_build.core.config_loader import load_config
from knowl_build.pipeline.publish import STAGES, build
from knowl_build.pipeline.stages import findings, indexing, parsing, release, rendering, resolution
from tests.helpers import SEMANTICS, Project

FILES: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/revenue.md": "---\nsummary: Revenue\n---\n# Revenue\n\nSee [[refunds]].\n",
    "knowledge/global/refunds.md": "---\nsummary: Refunds\n---\n# Refunds\n",
}


def _out(proj: Project) -> Path:
    return proj.root / ".knowl" / "build"


def _current(proj: Project) -> str:
    return (_out(proj) / "CURRENT").read_text()


def _left_behind(proj: Project) -> list[str]:
    return sorted(p.name for p in _out(proj).iterdir() if p.name.startswith(STAGING_PREFIX))


def test_the_stages_run_in_order_and_each_is_timed(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    config = load_config(proj.root)
    heard: list[str] = []
    first = build(proj.root, config, progress=heard.append)
    assert first.status == "published" and not first.incremental
    assert first.build_id == proj.run_git("rev-parse", "HEAD").strip()[:12]
    assert heard == [*STAGES, "done"]
    assert list(first.timings) == list(STAGES)
    assert all(seconds >= 0 for seconds in first.timings.values())

    heard.clear()
    again = build(proj.root, config, progress=heard.append)
    assert (again.status, heard, again.timings) == ("no-op", ["discover"], {})

    proj.write({"knowledge/global/refunds.md": "---\nsummary: Refunds\n---\n# Refunds, edited\n"})
    heard.clear()
    edit = build(proj.root, config, progress=heard.append)
    assert edit.status == "published" and edit.incremental
    assert heard == [*STAGES, "done"]
    assert edit.counts["pages"] == 2 and edit.build_id.startswith(first.build_id + "-dirty-")


def test_a_refused_build_stops_after_the_check(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    config = load_config(proj.root)
    assert build(proj.root, config, full=True).status == "published"
    before = _current(proj)
    proj.write({"knowledge/global/broken.md": "# Broken\n\n[[nowhere]]\n"})
    heard: list[str] = []
    refused = build(proj.root, config, full=True, progress=heard.append)
    assert (refused.status, refused.folder, heard) == ("refused", None, ["discover", "parse"])
    assert [d.code for d in refused.diagnostics if d.severity == "error"] == ["KB103"]
    assert refused.counts["errors"] == 1
    assert _current(proj) == before
    assert _left_behind(proj) == []  # the staging folder of the index written apart is gone


@pytest.mark.parametrize(
    ("module", "name"),
    [
        (parsing, "parse_project"),
        (resolution, "resolve_project"),
        (findings, "check_project"),
        (rendering, "assemble"),
        (rendering, "write_graph"),
        (indexing, "vectors"),
        (release, "manifest"),
    ],
    ids=["parse", "analyse", "check", "render", "write", "vectors", "publish"],
)
@pytest.mark.parametrize("full", [True, False], ids=["full", "incremental"])
def test_a_build_that_stops_in_any_stage_publishes_nothing(
    project: Callable[..., Project],
    monkeypatch: pytest.MonkeyPatch,
    module: object,
    name: str,
    full: bool,
) -> None:
    proj = project(FILES)
    config = load_config(proj.root)
    assert build(proj.root, config).status == "published"
    before = _current(proj)
    proj.write({"knowledge/global/new.md": "---\nsummary: New\n---\n# New\n"})

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"{name} broke")

    monkeypatch.setattr(module, name, broken)
    with pytest.raises(RuntimeError, match=f"^{name} broke$"):
        build(proj.root, config, full=full)
    assert _current(proj) == before
    assert _left_behind(proj) == []
    assert not (_out(proj) / LOCK).exists()
    monkeypatch.undo()
    after = build(proj.root, config, full=full)
    assert after.status == "published" and after.counts["pages"] == 3
    assert _current(proj) != before
