"""Property: a session brought up to date edit by edit (`pipeline.session`, the language
server's analysis) finds what a whole analysis of the same files finds, whatever the edits.

Random pages link to each other by id, path, heading and alias, in the exact, Obsidian and
Dendron modes; each round edits one or two pages (their bodies, headings, links, now and then
a name or an alias, which ends the session) and compares `Session.update` with `analyse` of
the same inputs without caches, finding for finding, and the freshness of every page."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.pipeline.analysis import analyse
from knowl_build.pipeline.cache import ParseCache, cache_place
from knowl_build.pipeline.inputs import read_inputs
from knowl_build.pipeline.pages import parse_cache_key
from knowl_build.pipeline.session import Session
from knowl_build.support import clock
from tests.helpers import Project
from tests.test_recheck import WORDS, page, source

SEEDS = range(1, 1 + int(os.environ.get("KNOWL_PROPERTY_SEEDS", "3")))


def findings(diagnostics: list[Diagnostic]) -> list[dict[str, object]]:
    return [{**d.to_json(), "subject": d.subject} for d in diagnostics]


@pytest.mark.parametrize("mode", ["exact", "obsidian", "dendron"])
@pytest.mark.parametrize("seed", SEEDS)
def test_a_session_equals_a_whole_analysis(tmp_path: Path, seed: int, mode: str) -> None:
    rng = random.Random(f"session-{seed}-{mode}")
    proj = Project(tmp_path / "p")
    sources = ["s1", "s2"]
    names = [f"p{i}" for i in range(10)]
    pages: dict[str, str] = {}
    for i, name in enumerate(names):
        folder = "global" if i % 4 else f"user/u{i % 2}"
        path = f"knowledge/{folder}/{name}.md"
        pages[path] = page(rng, names, sources, WORDS[len(path) % 3])
    proj.write(
        {
            **{f"semantics/{s}.yaml": source(s, "sum(x)") for s in sources},
            **pages,
            "knowl.toml": f"[links]\nresolution = '{mode}'\n",
        }
    )
    commits = (proj.commit("start"),)
    config = Config(link_resolution=mode, source="knowl.toml")
    today = clock.today()
    caches = cache_place(proj.root)
    parse_cache = ParseCache(
        caches.folder, parse_cache_key(config), machine=caches.key, resident=True
    )
    session = Session.start(
        proj.root, config, today, read_inputs(proj.root, config), caches, parse_cache
    )
    updated = 0
    for round_no in range(12):
        for path in rng.sample(sorted(pages), k=rng.randint(1, 2)):
            alias = WORDS[len(path) % 3] if rng.random() < 0.9 else rng.choice(WORDS)
            pages[path] = page(rng, [Path(p).stem for p in pages], sources, alias, commits)
            proj.write({path: pages[path]})
        inputs = read_inputs(proj.root, config)
        after = session.update(inputs)
        if after is None:
            after = Session.start(proj.root, config, today, inputs, caches, parse_cache)
        else:
            updated += after is not session
        session = after
        whole = analyse(proj.root, config, today=today, inputs=inputs, use_cache=False)
        assert findings(session.analysis.diagnostics) == findings(whole.diagnostics), (
            f"round {round_no}"
        )
        for p in whole.pages:
            ours, theirs = session.analysis.assessments.get(p.path), whole.assessments.get(p.path)
            assert (ours and ours.to_json()) == (theirs and theirs.to_json()), p.path
    assert updated  # some rounds were brought up to date, not analysed again


def test_a_session_ends_where_an_edit_changes_more_than_a_page(tmp_path: Path) -> None:
    """A new name, a commit, a changed definition or a new page: `update` says None (the
    caller starts again); an edit of a body only is brought up to date."""
    proj = Project(tmp_path / "p")
    proj.write(
        {
            "knowledge/global/a.md": "# A\n\n[[b]]\n",
            "knowledge/global/b.md": "# B\n",
            "semantics/s.yaml": source("s", "sum(x)"),
        }
    ).commit("start")
    config = Config()
    caches = cache_place(proj.root)
    cache = ParseCache(caches.folder, parse_cache_key(config), machine=caches.key, resident=True)
    today = clock.today()
    session = Session.start(proj.root, config, today, read_inputs(proj.root, config), caches, cache)
    assert session.update(read_inputs(proj.root, config)) is session  # nothing changed
    proj.write({"semantics/s.yaml": source("s", "sum(z)")})
    assert session.update(read_inputs(proj.root, config)) is None  # a definition, no page
    session = Session.start(proj.root, config, today, read_inputs(proj.root, config), caches, cache)
    proj.write({"knowledge/global/b.md": "# B\n\nmore\n"})
    edited = session.update(read_inputs(proj.root, config))
    assert edited is not None and edited is not session
    for change in (
        {"knowledge/global/b.md": "---\naliases: [bee]\n---\n# B\n"},
        {"knowledge/global/c.md": "# C\n"},
        {"semantics/s.yaml": source("s", "sum(y)")},
    ):
        proj.write(change)
        assert edited.update(read_inputs(proj.root, config)) is None, change
    proj.commit("more")
    assert edited.update(read_inputs(proj.root, config)) is None
