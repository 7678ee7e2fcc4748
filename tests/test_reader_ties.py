"""The top `n` of a search is the first `n` of any longer one, however many pages tie: the
index's cut (`Scored.top`) and the answer's order (`queries.order`) are one order: named
first, then score, then page id, scope and path. Random corpora of few words (so that scores
tie), pages in several scopes, user pages with a global page's id, pages sharing an id
(KB005 off), and an incremental build (several segments, deleted documents)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from knowl_build.core.config import Config
from knowl_build.pipeline.publish import build
from knowl_build.reader import Reader
from tests.helpers import SEMANTICS, Project

# Mostly one body, so that most pages tie.
BODIES = ["Tie", "Tie", "Tie", "Tie word", "Word churn", "Churn"]
CONFIG = Config(rules={"KB202": "off", "KB005": "off"})
SCOPES = ["knowledge/global", "knowledge/global/zz", "knowledge/user/alice", "knowledge/user/bob"]


def _page(rng: random.Random) -> str:
    status = rng.choice(["active"] * 5 + ["draft"])
    return f"---\nsummary: s\nstatus: {status}\n---\n{rng.choice(BODIES)}.\n"


def _corpus(rng: random.Random) -> dict[str, str]:
    files = {"knowl.toml": "[rules]\nKB202 = 'off'\nKB005 = 'off'\n"}
    for _n in range(rng.randint(100, 200)):
        # Ids over several folders: user pages with a global page's id, shared ids.
        files[f"{rng.choice(SCOPES)}/p{rng.randint(0, 150):03}.md"] = _page(rng)
    return files


def _ids(reader: Reader, query: str, user: str | None, limit: int) -> list[tuple[str, str]]:
    hits = reader.search(query, user=user, limit=limit)["hits"]
    return [(h["page"], h["scope"]) for h in hits]


def _mixed(reader: Reader, query: str, user: str | None, limit: int) -> list[tuple[str, str]]:
    hits = reader.search(query, user=user, limit=limit, kind="all")["hits"]
    return [(h["page"], h["scope"]) if h["kind"] == "page" else (h["entity"], "") for h in hits]


@pytest.mark.parametrize("seed", range(4))
def test_a_short_search_is_the_start_of_a_longer_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setenv("KNOWL_EMBEDDINGS", "off")
    rng = random.Random(seed)
    project = Project(tmp_path / "kb").write(_corpus(rng))
    project.commit("corpus")
    assert build(project.root, CONFIG).status == "published"
    changed = rng.sample(sorted(p for p in _corpus(rng) if p.endswith(".md")), k=5)
    project.write({path: _page(rng) for path in changed}).commit("edits")
    assert build(project.root, CONFIG).status == "published"
    queries = ["tie", "word tie", "churn", "ti*", "tie -churn", "tie status:all"]
    with Reader.open(project.root) as reader:
        for query in queries:
            for user in (None, "alice", "bob"):
                full = _ids(reader, query, user, 1000)
                for limit in (1, 2, 3, 5, 8, 13, 30):
                    assert _ids(reader, query, user, limit) == full[:limit], (query, user)


ENTITIES = ["shop_pg.orders.total_revenue", "shop_pg.orders.status", "shop_pg.orders.amount"]


@pytest.mark.parametrize("seed", range(3))
def test_a_short_mixed_search_is_the_start_of_a_longer_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Pages and entities merged (`--kind all`, the CLI's default): pages found through the
    entities they bind, ranked deep in the page search or not at all."""
    monkeypatch.setenv("KNOWL_EMBEDDINGS", "off")
    rng = random.Random(seed)
    files = {**SEMANTICS, **_corpus(rng)}
    for path in sorted(files):
        if path.endswith(".md") and rng.random() < 0.3:
            refs = ", ".join(rng.sample(ENTITIES, k=rng.randint(1, 2)))
            files[path] = files[path].replace("---\nsummary", f"---\nsl_refs: [{refs}]\nsummary")
    project = Project(tmp_path / "kb").write(files)
    project.commit("corpus")
    assert build(project.root, CONFIG).status == "published"
    with Reader.open(project.root) as reader:
        for query in ["tie", "tie status", "total revenue", "amount word", "orders"]:
            for user in (None, "alice"):
                full = _mixed(reader, query, user, 1000)
                for limit in (1, 2, 3, 5, 8, 13, 30):
                    assert _mixed(reader, query, user, limit) == full[:limit], (query, user)
