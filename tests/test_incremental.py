"""Property: an incremental build equals a --full build, whatever happened in between.

Random edits, additions, renames and deletions of pages (their wiki-links and Markdown links
coming and going with them) and definitions over several commits; after each round the
incremental artifact's JSON files must equal a full build's byte for byte, and both indexes
must answer a set of queries with the same hits, in the same order, with the same scores.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from knowl_build.core.config import Config
from knowl_build.pipeline import stats
from knowl_build.pipeline.publish import build
from tests.helpers import Project, search

WORDS = [
    "revenue",
    "order",
    "customer",
    "churn",
    "refund",
    "margin",
    "cohort",
    "segment",
    "retention",
    "funnel",
    "product",
    "channel",
    "region",
    "forecast",
    "quarter",
    "pipeline",
    "warehouse",
    "metric",
    "finance",
    "policy",
    "caveat",
]
QUERIES = [
    "revenue",
    "customer churn",
    "refund policy",
    "warehouse metric",
    "total_revenue",
    "segment retention funnel",
    "quarter",
    "caveat finance order",
]
JSON_FILES = ("pages.jsonl.gz", "entities.json", "graph.json", "diagnostics.json")


def source(name: str, expr: str, extra: bool) -> str:
    measures = f'  - {{ name: total, expr: "{expr}" }}\n'
    if extra:
        measures += '  - { name: count, expr: "count(*)" }\n'
    return (
        f"name: {name}\nconnection: db\ntable: t_{name}\ncolumns:\n  - {{ name: id }}\n"
        f"measures:\n{measures}"
    )


def link(rng: random.Random, name: str) -> str:
    """A wiki-link or a Markdown link (from the page's folder, or by its path from a user
    folder) to `name`: the same page, or none, as pages come and go."""
    return rng.choice([f"[[{name}]]", f"[{name}]({name}.md)", f"[x](../../global/{name}.md)"])


def page(rng: random.Random, ids: list[str], sources: list[str]) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30)))
    src = rng.choice(sources)
    links = " ".join(link(rng, rng.choice(ids)) for _ in range(rng.randint(0, 3))) if ids else ""
    mode = rng.choice(["reference", "caveat", "definition"])
    return (
        f"---\nsummary: {rng.choice(WORDS)} {rng.choice(WORDS)}\ntags: [{rng.choice(WORDS)}]\n"
        f"usage_mode: {mode}\nsl_refs: [db.{src}.total]\n---\n"
        f"# {rng.choice(WORDS).title()}\n\n{words}\n\nUses `<< sl:db.{src}.total.expr >>`. {links}\n"
    )


def hits(folder: Path) -> list[list[tuple[str, float]]]:
    boosts = {"summary": 3.0, "tags": 2.0, "title": 2.0, "body": 1.0}
    return [[(h.key, h.score) for h in search(folder / "index", q, boosts)] for q in QUERIES]


# Each seed is another random history; CI runs more of them (.ci/run sets the variable).
SEEDS = range(1, 1 + int(os.environ.get("KNOWL_PROPERTY_SEEDS", "3")))


@pytest.mark.parametrize("seed", SEEDS)
def test_incremental_equals_full(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every file counts as settled, as if written long before the build: the stat cache then
    # vouches for each unchanged page, and the pages it spares are never read. (Safe here:
    # each edit comes a whole build after the page's last write, never in its timestamp's
    # tick.)
    monkeypatch.setattr(stats, "SETTLE_NS", 0)
    vouched = []
    digest = stats.StatCache.digest

    def counted(cache: stats.StatCache, path: str, stamp: stats.Stamp | None) -> str | None:
        found = digest(cache, path, stamp)
        vouched.append(found is not None)
        return found

    monkeypatch.setattr(stats.StatCache, "digest", counted)
    rng = random.Random(seed)
    proj = Project(tmp_path / "p")
    sources = ["s1", "s2", "s3"]
    exprs = {s: "sum(x)" for s in sources}
    extras = dict.fromkeys(sources, False)
    files: dict[str, str | bytes] = {
        f"semantics/{s}.yaml": source(s, exprs[s], False) for s in sources
    }
    pages: dict[str, str] = {}
    for i in range(12):
        path = f"knowledge/global/p{i}.md" if i % 4 else f"knowledge/user/u{i % 2}/p{i}.md"
        pages[path] = page(rng, [f"p{j}" for j in range(12)], sources)
    proj.write({**files, **pages, "knowl.toml": "[rules]\nKB202 = 'off'\n"})
    proj.commit("start")
    config = Config(rules={"KB202": "off"}, source="knowl.toml")
    build(proj.root, config, allow_errors=True)

    counter = 100
    reused = 0
    for round_no in range(5):
        for _ in range(rng.randint(1, 4)):
            action = rng.choice(
                ["edit", "edit", "add", "rename", "delete", "definition", "measure"]
            )
            ids = [Path(p).stem for p in pages]
            if action == "edit" and pages:
                path = rng.choice(sorted(pages))
                pages[path] = page(rng, ids, sources)
                proj.write({path: pages[path]})
            elif action == "add":
                counter += 1
                path = f"knowledge/global/new{counter}.md"
                pages[path] = page(rng, ids, sources)
                proj.write({path: pages[path]})
            elif action == "rename" and pages:
                old = rng.choice(sorted(pages))
                counter += 1
                new = f"knowledge/global/renamed{counter}.md"
                pages[new] = pages.pop(old)
                proj.remove(old).write({new: pages[new]})
            elif action == "delete" and len(pages) > 3:
                old = rng.choice(sorted(pages))
                del pages[old]
                proj.remove(old)
            elif action == "definition":
                s = rng.choice(sources)
                exprs[s] = f"sum({rng.choice(WORDS)})"
                proj.write({f"semantics/{s}.yaml": source(s, exprs[s], extras[s])})
            elif action == "measure":
                s = rng.choice(sources)
                extras[s] = not extras[s]
                proj.write({f"semantics/{s}.yaml": source(s, exprs[s], extras[s])})
        if round_no % 2 == 0:
            proj.commit(f"round {round_no}")  # odd rounds build from the working tree

        incremental = build(proj.root, config, allow_errors=True)
        full = build(
            proj.root, config, allow_errors=True, full=True, out=tmp_path / f"full{round_no}"
        )
        assert incremental.status == full.status == "published"
        assert incremental.incremental and not full.incremental
        assert incremental.folder is not None and full.folder is not None
        for name in JSON_FILES:
            assert (incremental.folder / name).read_bytes() == (full.folder / name).read_bytes(), (
                f"round {round_no}: {name} differs"
            )
        assert hits(incremental.folder) == hits(full.folder), f"round {round_no}: rankings differ"
        manifest = json.loads((incremental.folder / "manifest.json").read_text())
        reused += manifest["records"]["reused"]
    assert reused > 0  # unchanged pages' records were copied, not rebuilt
    assert any(vouched)  # and some of them were not even read
