"""Property: no answer of any reader command ever contains another user's page."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config import Config
from knowl_build.pipeline.publish import build
from knowl_build.reader import PageNotFound, Reader
from tests.helpers import SEMANTICS, Project

WORDS = [
    "revenue",
    "churn",
    "orders",
    "margin",
    "zebra",
    "policy",
    "refund",
    "caveat",
    "cohort",
    "finance",
]
USERS = ["ann", "ben", "cat"]


def corpus(rng: random.Random) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {**SEMANTICS}
    ids = [f"p{i}" for i in range(14)]
    for i, page_id in enumerate(ids):
        owner = rng.choice([None, None, *USERS])
        if rng.random() < 0.2:
            page_id = rng.choice(ids[:i] or ids)  # collisions: shadows and duplicates
        folder = "global" if owner is None else f"user/{owner}"
        links = " ".join(f"[[{rng.choice(ids)}]]" for _ in range(rng.randint(0, 3)))
        refs = ", ".join(rng.sample(ids, rng.randint(0, 2)))
        files[f"knowledge/{folder}/{page_id}.md"] = (
            f"---\nsummary: {' '.join(rng.sample(WORDS, 3))}\n"
            f"usage_mode: {rng.choice(['reference', 'caveat', 'caveat', 'policy'])}\n"
            f"sl_refs: [{rng.choice(['shop_pg.orders.total_revenue', 'shop_pg.orders.status'])}]\n"
            f"refs: [{refs}]\nvisibility: {rng.choice(['repo', 'workspace'])}\n---\n"
            f"{' '.join(rng.choice(WORDS) for _ in range(8))} {links}\n"
        )
    return files


def scopes_in(answer: Any) -> set[str]:
    """Every scope named anywhere in an answer."""
    found: set[str] = set()
    if isinstance(answer, dict):
        for key, value in answer.items():
            if key == "scope" and isinstance(value, str):
                found.add(value)
            found |= scopes_in(value)
    elif isinstance(answer, list):
        for item in answer:
            found |= scopes_in(item)
    return found


@pytest.mark.parametrize("seed", range(6))
def test_no_answer_leaks_another_users_page(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    proj = Project(tmp_path / "kb").write(corpus(rng))
    proj.commit()
    assert build(proj.root, Config(rules={"KB202": "off"}), allow_errors=True).status == "published"
    with Reader.open(proj.root) as reader:
        all_refs = {f"{p.scope}:{p.id}" for p in reader.view.pages} | {
            p.id for p in reader.view.pages
        }
        for user in [None, *USERS]:
            allowed = {"global"} | ({f"user:{user}"} if user else set())
            for query in [*WORDS, "revenue zebra churn", "policy caveat"]:
                for status in ("active", "all"):
                    answer = reader.search(query, user=user, limit=10, status=status)
                    assert scopes_in(answer) <= allowed, (user, query)
            visible_refs = []
            for ref in sorted(all_refs):
                try:
                    page = reader.show(ref, user=user)
                except PageNotFound:
                    continue
                assert scopes_in(page) <= allowed, (user, ref)
                visible_refs.append(ref)
            for ref in visible_refs:
                walk = reader.traverse([ref], user=user, depth=3)
                assert scopes_in(walk) <= allowed, (user, ref)
