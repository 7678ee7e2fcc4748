"""The retrieval-quality benchmark's arithmetic and query sets (bench/quality_bench.py).

The benchmark itself fetches corpora and is run by hand; what it derives and how it scores
are checked here on pages written in the test.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _bench(name: str) -> ModuleType:
    """A module of bench/, loaded from its path (bench/ is a folder of scripts)."""
    spec = importlib.util.spec_from_file_location(
        f"knowl_bench_{name}", ROOT / "bench" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


qb = _bench("quality_bench")


def page(
    page_id: str,
    name: str,
    aliases: tuple[str, ...] = (),
    headings: tuple[str, ...] = (),
    description: str = "",
) -> object:
    return qb.Page(page_id, name, name, aliases, headings, description, "body")


def test_query_sets_keep_only_known_items() -> None:
    pages = [
        page("a", "Alpha", aliases=("first", "Beta"), headings=("Usage", "Options")),
        page("b", "Beta", aliases=("FIRST",), headings=("Options",), description="One line."),
        page("c", "alpha", headings=("Usage of c",), description="one  LINE."),
        page("d", "Delta", description="Delta's own line."),
    ]
    sets = qb.query_sets(pages)
    texts = {kind: [(q.text, q.page) for q in queries] for kind, queries in sets.items()}
    # "Alpha" and "alpha" are two pages' names; "first" two pages' aliases; "Beta" a name.
    assert texts["name"] == [("Beta", "b"), ("Delta", "d")]
    assert texts["alias"] == []
    # "Options" is a heading of two pages; "Usage" and "Usage of c" are different headings.
    assert texts["heading"] == [("Usage", "a"), ("Usage of c", "c")]
    # Descriptions equal but for case and spaces are one description of two pages.
    assert texts["description"] == [("Delta's own line.", "d")]


def test_reciprocal_rank_within_k() -> None:
    assert qb.reciprocal_rank(["x", "y", "z"], "x") == 1.0
    assert qb.reciprocal_rank(["x", "y", "z"], "z") == pytest.approx(1 / 3)
    assert qb.reciprocal_rank(["x", "y", "z"], "w") == 0.0
    assert qb.reciprocal_rank([str(n) for n in range(20)], "10") == 0.0  # rank 11
    assert qb.reciprocal_rank([str(n) for n in range(20)], "9") == pytest.approx(0.1)


def test_mrr_and_top1() -> None:
    rankings = [(["a", "b"], "a"), (["b", "c", "a"], "a"), ([], "a"), (["c"], "a")]
    mrr, top1 = qb.score(rankings)
    assert mrr == pytest.approx((1 + 1 / 3 + 0 + 0) / 4)
    assert top1 == 0.25
    assert qb.score([]) == (0.0, 0.0)


def test_ties_sorted_by_page_id_and_zero_scores_left_out() -> None:
    scored = [(1.0, "c"), (2.0, "b"), (1.0, "a"), (0.0, "d")]
    assert qb.by_score(scored) == ["b", "a", "c"]
    assert qb.by_score([(1.0, str(n)) for n in range(30)], k=3) == ["0", "1", "10"]


def test_headings_outside_code_and_lead_held_out() -> None:
    body = "# Title\n\n```md\n## Not a heading\n```\n\n## Real `one` {: #id }\n\nFirst. Second.\n"
    assert qb.headings(body) == [(1, "Title"), (2, "Real one")]
    lead, rest = qb.lead_sentence(body)
    assert lead == "First."
    assert "First." not in rest and "Second." in rest


def test_markdownlint_aliases_move_to_frontmatter() -> None:
    text = (
        "# `MD001` - Heading levels\n\nTags: `headings`\n\nAliases: `a-one`, `a-two`\n\nIt fires.\n"
    )
    got = qb.markdownlint_page("package/doc/md001.md", text)
    assert (got.id, got.name, got.aliases, got.description) == (
        "md001",
        "MD001",
        ("a-one", "a-two"),
        "It fires.",
    )
    assert "Aliases" not in got.body and "It fires." not in got.body
    assert "aliases:\n- a-one\n- a-two\n" in qb.page_file(got)
