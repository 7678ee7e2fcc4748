"""An incremental build from every edge state: no page, one page, all pages removed, all
pages added at once. Each build after the first is incremental and equals a full build of the
same tree, byte for byte (issue 21, item 9: a first build of an empty project broke every
incremental build after it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowl_build.core.config import Config
from knowl_build.pipeline.publish import build
from tests.helpers import Project, current_build, invoke, records

JSON_FILES = ("pages.jsonl.gz", "entities.json", "graph.json", "diagnostics.json")
CONFIG = Config(rules={"KB202": "off"}, source="knowl.toml")


def page(title: str, link: str = "") -> str:
    return f"---\nsummary: About {title}.\n---\n# {title}\n\nText on {title}. {link}\n"


def assert_equals_full(proj: Project, tmp_path: Path, name: str) -> None:
    incremental = build(proj.root, CONFIG, allow_errors=True)
    full = build(proj.root, CONFIG, allow_errors=True, full=True, out=tmp_path / name)
    assert incremental.status == full.status == "published", name
    assert incremental.folder is not None and full.folder is not None
    for artifact in JSON_FILES:
        assert (incremental.folder / artifact).read_bytes() == (
            full.folder / artifact
        ).read_bytes(), f"{name}: {artifact} differs"


def test_first_build_of_empty_project_never_breaks_the_next(tmp_path: Path) -> None:
    proj = Project(tmp_path / "p")
    proj.write({"knowl.toml": "[rules]\nKB202 = 'off'\n", "knowledge/global/.keep": ""})
    proj.commit("empty")
    invoke(["build", "--repo", str(proj.root), "-q"])
    assert records(current_build(proj.root)) == []
    proj.write({"knowledge/global/first.md": page("First")})
    proj.commit("one page")
    invoke(["build", "--repo", str(proj.root), "-q"])
    assert [r["id"] for r in records(current_build(proj.root))] == ["first"]
    proj.write({"knowledge/global/second.md": page("Second", "[[first]]")})
    proj.commit("two pages")
    invoke(["build", "--repo", str(proj.root), "-q"])
    assert [r["id"] for r in records(current_build(proj.root))] == ["first", "second"]


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param(["empty", "one", "all-added", "all-removed", "one"], id="empty-first"),
        pytest.param(["one", "all-removed", "all-added", "one", "empty"], id="one-first"),
        pytest.param(["all-added", "all-removed", "empty", "all-added"], id="all-first"),
    ],
)
def test_incremental_from_every_edge_state(tmp_path: Path, steps: list[str]) -> None:
    proj = Project(tmp_path / "p")
    proj.write({"knowl.toml": "[rules]\nKB202 = 'off'\n", "knowledge/global/.keep": ""})
    proj.commit("start")
    many = {f"knowledge/global/p{i}.md": page(f"P{i}", f"[[p{(i + 1) % 6}]]") for i in range(6)}
    present: set[str] = set()
    for number, step in enumerate(steps):
        wanted = {
            "empty": set(),
            "one": {"knowledge/global/p0.md"},
            "all-added": set(many),
            "all-removed": set(),
        }[step]
        proj.remove(*sorted(present - wanted))
        proj.write({path: many[path] for path in sorted(wanted - present)})
        present = wanted
        proj.commit(step)
        assert_equals_full(proj, tmp_path, f"full{number}-{step}")
