"""Pages that share an id (KB005 off) each answer with their own passage and citation, also
when peers' hits are fused with the artifact's (`--peer`, `[peers]`): the CLI, `get_context`
and the MCP tools."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from knowl_build.reader import Reader
from tests.helpers import Project, invoke

RULES = "[rules]\nKB202 = 'off'\nKB005 = 'off'\n"


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("shared-ids")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        peer = Project(base / "B").write(
            {
                "knowl.toml": "repo_name = 'peer-kb'\n" + RULES,
                "knowledge/global/peer.md": (
                    "---\nsummary: Peer fruit\nvisibility: workspace\n---\nBananas, the peer's.\n"
                ),
            }
        )
        peer.commit()
        invoke(["build", "--repo", str(peer.root), "-q"])
        local = Project(base / "A").write(
            {
                "knowl.toml": "repo_name = 'local-kb'\n" + RULES,
                "knowledge/global/a/notes.md": (
                    "---\nsummary: Notes about fruit\n---\nApples are red. Revenue from apples.\n"
                ),
                "knowledge/global/b/notes.md": (
                    "---\nsummary: Notes about fruit\n---\n"
                    "Bananas are yellow. Revenue from bananas.\n"
                ),
            }
        )
        local.commit()
        invoke(["build", "--repo", str(local.root), "-q"])
    return local.root, peer.root


def snippets(answer: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [
        (h["repo"], None if h["snippet"] is None else h["snippet"]["text"]) for h in answer["hits"]
    ]


@pytest.mark.parametrize("peered", [False, True])
def test_a_hit_keeps_its_own_passage_through_fusion(
    projects: tuple[Path, Path], peered: bool
) -> None:
    local, peer = projects
    args = ["--peer", str(peer)] if peered else []
    for query, line in (
        ("bananas", "Bananas are yellow. Revenue from bananas."),
        ("apples", "Apples are red. Revenue from apples."),
    ):
        answer = json.loads(invoke(["--repo", str(local), "search", query, "--json", *args]).stdout)
        assert ("local-kb", line) in snippets(answer)
        assert all(text is not None for _repo, text in snippets(answer))
    revenue = json.loads(
        invoke(["--repo", str(local), "search", "revenue", "--json", *args]).stdout
    )
    assert sorted(text or "" for repo, text in snippets(revenue) if repo == "local-kb") == [
        "Apples are red. Revenue from apples.",
        "Bananas are yellow. Revenue from bananas.",
    ]


def test_context_cites_the_page_that_matched(projects: tuple[Path, Path]) -> None:
    local, peer = projects
    with Reader.open(local, peers=[peer]) as reader:
        pages = reader.context("bananas")["pages"]
    own = [p for p in pages if p["repo"] == "local-kb"]
    assert [p["path"] for p in own] == ["knowledge/global/b/notes.md"]
    citation = own[0]["citation"]
    assert citation is not None
    assert citation["path"] == "knowledge/global/b/notes.md"
    assert citation["text"] == "Bananas are yellow. Revenue from bananas."
    assert any(p["repo"] == "peer-kb" for p in pages)


def test_the_mcp_tools_answer_the_same(projects: tuple[Path, Path]) -> None:
    """With the peer named by the configuration (`[peers] paths`), as an MCP server has it."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from tests.test_mcp import payload, run

    built, _peer = projects
    local = built.with_name("A-peered")
    shutil.copytree(built, local)
    with (local / "knowl.toml").open("a") as config:
        config.write('[peers]\npaths = ["../B"]\n')

    async def body(session: Any) -> tuple[Any, Any]:
        search = await session.call_tool("search_knowledge", {"query": "bananas"})
        context = await session.call_tool("get_context", {"question": "bananas"})
        return payload(search), payload(context)

    search, context = run(["--repo", str(local)], body)
    assert ("local-kb", "Bananas are yellow. Revenue from bananas.") in snippets(search)
    assert any(repo == "peer-kb" for repo, _text in snippets(search))
    own = [p for p in context["pages"] if p["repo"] == "local-kb"]
    assert [p["citation"]["path"] for p in own] == ["knowledge/global/b/notes.md"]
