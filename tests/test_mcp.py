"""The MCP server, driven end to end by the official SDK's client over a real stdio process."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config import Config
from knowl_build.pipeline.publish import build
from tests.helpers import SEMANTICS, Project
from tests.test_reader import CORPUS

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        proj = Project(tmp_path_factory.mktemp("mcp") / "kb").write(CORPUS)
        proj.commit("corpus")
        assert build(proj.root, Config(rules={"KB202": "off"})).status == "published"
    return proj.root


async def _session(args: list[str], body: Any, *, initialized: bool = False) -> Any:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    # The SDK starts servers with a minimal environment: pass what the tests pin.
    env = {
        k: os.environ[k]
        for k in ("PATH", "HOME", "SOURCE_DATE_EPOCH", "KNOWL_EMBEDDINGS", "XDG_CACHE_HOME")
        if k in os.environ
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "knowl_build", "mcp", *args], env=env
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        return await (body(session, init) if initialized else body(session))


def run(args: list[str], body: Any) -> Any:
    """`body(session)` against `knowl mcp ARGS` over stdio; its answer."""
    return asyncio.run(_session(args, body))


def run_initialized(args: list[str], body: Any) -> Any:
    """As `run`, with the server's answer to `initialize`: `body(session, init)`."""
    return asyncio.run(_session(args, body, initialized=True))


def payload(result: Any) -> Any:
    assert not result.is_error, result.content
    if getattr(result, "structured_content", None):
        return result.structured_content
    return json.loads(result.content[0].text)


def test_tools_search_read_and_scoping(kb: Path) -> None:
    async def body(session: Any) -> dict[str, Any]:
        tools = await session.list_tools()
        names = sorted(t.name for t in tools.tools)
        search = payload(await session.call_tool("search_knowledge", {"query": "completed orders"}))
        mine = payload(
            await session.call_tool("search_knowledge", {"query": "zebra", "user": "alice"})
        )
        anonymous = payload(await session.call_tool("search_knowledge", {"query": "zebra"}))
        page = payload(await session.call_tool("read_knowledge_page", {"page": "revenue"}))
        hidden = await session.call_tool(
            "read_knowledge_page", {"page": "user:bob:secret-plan", "user": "alice"}
        )
        walk = payload(
            await session.call_tool("traverse_knowledge", {"pages": ["revenue"], "depth": 1})
        )
        stale = payload(await session.call_tool("list_stale", {}))
        timeline = await session.call_tool("knowledge_timeline", {"page": "revenue"})
        store = await session.call_tool(
            "store_knowledge", {"category": "fact", "title": "x", "content": "y"}
        )
        return {
            "names": names,
            "search": search,
            "mine": mine,
            "anonymous": anonymous,
            "page": page,
            "hidden": hidden,
            "walk": walk,
            "stale": stale,
            "timeline": timeline,
            "store": store,
        }

    out = run(["--artifact", str(kb)], body)
    assert out["names"] == [
        "describe_entity",
        "get_context",
        "knowledge_timeline",
        "list_entities",
        "list_stale",
        "read_knowledge_page",
        "search_knowledge",
        "traverse_knowledge",
    ]
    assert out["search"]["hits"][0]["page"] == "revenue"
    assert [c["page"] for c in out["search"]["caveats"]] == ["refunds-caveat"]
    assert [(h["page"], h["annotations"]) for h in out["mine"]["hits"]] == [
        ("glossary", [{"page": "glossary", "scope": "user:alice"}])
    ]
    assert out["anonymous"]["hits"] == []
    assert (
        out["page"]["page_id"] == "revenue"
        and out["page"]["caveats"][0]["page"] == "refunds-caveat"
    )
    assert (
        out["hidden"].is_error
        and "no page 'user:bob:secret-plan' visible to alice" in out["hidden"].content[0].text
    )
    assert any(p["page"] == "glossary" for p in out["walk"]["pages"])
    assert out["stale"] == {"pages": [], "total": 0, "next_cursor": None}
    assert out["timeline"].is_error and "--repo" in out["timeline"].content[0].text
    assert out["store"].is_error  # not offered without --allow-writes


def test_writes_with_allow_writes_and_timeline_with_repo(tmp_path: Path) -> None:
    proj = Project(tmp_path / "kb").write(
        {**SEMANTICS, "knowl.toml": "[rules]\nKB202 = 'off'\n", "knowledge/global/a.md": "# A\n"}
    )
    proj.commit()
    assert build(proj.root, Config(rules={"KB202": "off"})).status == "published"

    async def body(session: Any) -> dict[str, Any]:
        names = sorted(t.name for t in (await session.list_tools()).tools)
        stored = payload(
            await session.call_tool(
                "store_knowledge",
                {
                    "category": "decision",
                    "title": "Database choice",
                    "content": "We use PostgreSQL.",
                },
            )
        )
        secret = await session.call_tool(
            "store_knowledge",
            {"category": "fact", "title": "Keys", "content": "key AKIAABCDEFGHIJKLMNOP here"},
        )
        timeline = payload(await session.call_tool("knowledge_timeline", {"page": "a"}))
        bad = await session.call_tool("supersede_knowledge", {"old": "a", "new": "a"})
        return {
            "names": names,
            "stored": stored,
            "secret": secret,
            "timeline": timeline,
            "bad": bad,
        }

    out = run(["--repo", str(proj.root), "--allow-writes"], body)
    assert "store_knowledge" in out["names"] and "supersede_knowledge" in out["names"]
    assert out["stored"]["action"] == "inserted"
    assert (proj.root / "knowledge/global/database-choice.md").exists()
    assert out["secret"].is_error  # a refused write is a tool error carrying the refusal
    refused = out["secret"].structured_content
    assert refused["action"] == "refused" and "AKIA" not in json.dumps(refused)
    assert [d["code"] for d in refused["diagnostics"]] == ["KB401", "KB401"]
    assert not (proj.root / "knowledge/global/keys.md").exists()
    assert [v["subject"] for v in out["timeline"]["versions"]] == ["change"]
    assert out["bad"].is_error and "itself" in out["bad"].content[0].text


def test_allow_writes_needs_repo(kb: Path) -> None:
    from tests.helpers import invoke

    result = invoke(["mcp", "--artifact", str(kb), "--allow-writes"], code=2)
    assert "--allow-writes needs --repo" in result.stderr
    result = invoke(["mcp", "--artifact", str(kb), "--user", "../bob"], code=2)
    assert "--user: not a valid user name: it starts with '.'" in result.stderr
