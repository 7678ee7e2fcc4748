"""Writes through the MCP server, read back without a manual build; drafts; drift and paging
across builds; the resource list paged over more pages than an answer holds, and pages that
share an id; configured peers. Driven by the official SDK's client over stdio, on small git
projects made for each test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config import Config
from knowl_build.pipeline.publish import build
from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
jsonschema = pytest.importorskip("jsonschema")  # the SDK's client validates with it

# After the extra's check: these come with the SDK.
from mcp.shared.exceptions import MCPError  # noqa: E402

from tests.test_mcp import payload, run  # noqa: E402
from tests.test_mcp_agents import assert_clean, error_text, read_error, tamper  # noqa: E402
from tests.test_reader_truths import VAULT  # noqa: E402

KB202_OFF = "[rules]\nKB202 = 'off'\n"
REVENUE = "shop_pg.orders.total_revenue"
BASE: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": KB202_OFF,
    "knowledge/global/revenue.md": (
        "---\ntitle: Revenue\nsummary: Revenue is the sum of order amounts\n"
        f"sl_refs: [{REVENUE}]\n---\nRevenue is `<< sl:{REVENUE}.expr >>`.\n"
    ),
    "knowledge/global/old-margin.md": (
        "---\ntitle: Old margin rule\nsummary: Margins used to be computed before refunds\n---\n"
        "Margins were computed before refunds.\n"
    ),
}


def project(root: Path, files: dict[str, str | bytes]) -> Project:
    proj = Project(root).write(files)
    proj.commit("start")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        assert build(proj.root, Config(rules={"KB202": "off"})).status == "published"
    return proj


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / "knowledge").rglob("*.md"))
    }


STORE = {
    "category": "fact",
    "title": "Zebra margin rule",
    "content": "Zebra margins are computed after refunds, per order line.",
    "summary": "Zebra margins are computed after refunds",
    "tags": ["margin"],
    "sl_refs": [REVENUE],
}


def test_a_stored_page_is_found_and_read_at_once(tmp_path: Path) -> None:
    proj = project(tmp_path / "kb", BASE)

    async def body(session: Any) -> dict[str, Any]:
        listed = await session.list_tools()
        stored = await session.call_tool("store_knowledge", STORE)
        found = payload(await session.call_tool("search_knowledge", {"query": "zebra margins"}))
        read = payload(
            await session.call_tool("read_knowledge_page", {"page": "zebra-margin-rule"})
        )
        context = payload(
            await session.call_tool("get_context", {"question": "how are zebra margins computed"})
        )
        resources = await session.list_resources()
        resource = await session.read_resource("knowl://page/global/zebra-margin-rule")
        before_repeat = tree(proj.root)
        repeat = payload(await session.call_tool("store_knowledge", STORE))
        after_repeat = tree(proj.root)
        superseded = await session.call_tool(
            "supersede_knowledge", {"old": "old-margin", "new": "zebra-margin-rule"}
        )
        before_again = tree(proj.root)
        again = await session.call_tool(
            "supersede_knowledge", {"old": "old-margin", "new": "zebra-margin-rule"}
        )
        after_again = tree(proj.root)
        return {
            "tools": {t.name: t for t in listed.tools},
            "stored": stored,
            "found": found,
            "read": read,
            "context": context,
            "resources": [str(r.uri) for r in resources.resources],
            "resource": resource.contents[0].text,
            "repeat": repeat,
            "repeat_changed": before_repeat != after_repeat,
            "superseded": superseded,
            "old_search": payload(
                await session.call_tool("search_knowledge", {"query": "margins before refunds"})
            ),
            "old_read": payload(
                await session.call_tool("read_knowledge_page", {"page": "old-margin"})
            ),
            "again": again,
            "again_changed": before_again != after_again,
        }

    out = run(["--repo", str(proj.root), "--allow-writes"], body)
    tools = out["tools"]
    for name in ("store_knowledge", "supersede_knowledge"):
        hints = tools[name].annotations
        assert (hints.read_only_hint, hints.destructive_hint) == (False, False), name
        assert (hints.idempotent_hint, hints.open_world_hint) == (True, False), name
        mcp.types.Tool.model_validate(tools[name].model_dump(by_alias=True))
    store_schema = tools["store_knowledge"].input_schema["properties"]
    assert "enum" in store_schema["category"]
    assert "user" in store_schema and "agent" not in store_schema

    stored = out["stored"]
    assert not stored.is_error, stored.content
    jsonschema.Draft202012Validator(tools["store_knowledge"].output_schema).validate(
        stored.structured_content
    )
    answer = stored.structured_content
    assert answer["action"] == "inserted" and answer["page"] == "zebra-margin-rule"
    assert answer["path"] == "knowledge/global/zebra-margin-rule.md"
    assert answer["status"] == "active"
    assert answer["build"]["status"] == "published" and answer["build"]["build_id"]
    assert "searchable now" in stored.content[0].text

    # No `knowl build` in between: search, read, context and resources know the page.
    assert out["found"]["hits"][0]["page"] == "zebra-margin-rule"
    assert out["found"]["build"]["id"] == answer["build"]["build_id"]
    assert "Zebra margins are computed after refunds" in out["read"]["body"]
    page = out["context"]["pages"][0]
    assert page["page"] == "zebra-margin-rule"
    assert page["citation"]["path"] == answer["path"]
    written = (proj.root / answer["path"]).read_text(encoding="utf-8").splitlines()
    assert written[page["citation"]["line"] - 1].startswith("Zebra margins are computed")
    assert REVENUE in [e["entity"] for e in out["context"]["entities"]]
    assert "knowl://page/global/zebra-margin-rule" in out["resources"]
    assert "Zebra margins are computed after refunds" in out["resource"]

    # Idempotent: the same store again is a duplicate and changes nothing.
    assert out["repeat"]["action"] == "duplicate" and out["repeat"]["build"] is None
    assert out["repeat_changed"] is False

    superseded = out["superseded"]
    assert not superseded.is_error, superseded.content
    assert superseded.structured_content["paths"] == ["knowledge/global/old-margin.md"]
    assert superseded.structured_content["build"]["status"] == "published"
    assert "old-margin" not in [h["page"] for h in out["old_search"]["hits"]]
    assert out["old_read"]["status"] == "superseded"
    assert out["old_read"]["superseded_by"] == "zebra-margin-rule"
    assert "Margins were computed before refunds." in out["old_read"]["body"]  # kept
    # Idempotent: superseding again is refused and changes nothing.
    assert_clean(error_text(out["again"]))
    assert out["again_changed"] is False


def test_record_decision_prompt_leads_to_a_governed_write(tmp_path: Path) -> None:
    proj = project(tmp_path / "kb", BASE)

    async def body(session: Any) -> dict[str, Any]:
        prompt = await session.get_prompt(
            "record-decision",
            {
                "title": "Warehouse engine",
                "decision": "We use PostgreSQL for the analytics warehouse.",
                "reasoning": "The team knows it and the data fits one node.",
                "alternatives": "Snowflake\nBigQuery",
            },
        )
        text = prompt.messages[0].content.text
        arguments = json.loads(text.split("```json\n", 1)[1].split("\n```", 1)[0])
        stored = payload(await session.call_tool("store_knowledge", arguments))
        found = payload(
            await session.call_tool(
                "search_knowledge", {"query": "warehouse engine", "category": "decision"}
            )
        )
        return {"text": text, "arguments": arguments, "stored": stored, "found": found}

    out = run(["--repo", str(proj.root), "--allow-writes"], body)
    assert "store_knowledge" in out["text"] and "search_knowledge" in out["text"]
    assert out["arguments"] == {
        "category": "decision",
        "title": "Warehouse engine",
        "content": "We use PostgreSQL for the analytics warehouse.",
        "reasoning": "The team knows it and the data fits one node.",
        "alternatives": ["Snowflake", "BigQuery"],
    }
    assert out["stored"]["action"] == "inserted"
    page = (proj.root / out["stored"]["path"]).read_text(encoding="utf-8")
    assert "category: decision" in page and "Snowflake" in page and "The team knows it" in page
    assert [h["page"] for h in out["found"]["hits"]] == [out["stored"]["page"]]


def test_an_agents_page_lands_as_a_draft_when_configured(tmp_path: Path) -> None:
    files = {**BASE, "knowl.toml": KB202_OFF + "\n[writes]\nagent_status = 'draft'\n"}
    proj = project(tmp_path / "kb", files)

    async def body(session: Any) -> dict[str, Any]:
        stored = payload(await session.call_tool("store_knowledge", STORE))
        return {
            "stored": stored,
            "active": payload(await session.call_tool("search_knowledge", {"query": "zebra"})),
            "drafts": payload(
                await session.call_tool("search_knowledge", {"query": "zebra", "status": "draft"})
            ),
            "read": payload(
                await session.call_tool("read_knowledge_page", {"page": stored["page"]})
            ),
        }

    out = run(["--repo", str(proj.root), "--allow-writes"], body)
    assert out["stored"]["action"] == "inserted" and out["stored"]["status"] == "draft"
    assert out["stored"]["build"]["status"] == "published"
    assert "status: draft" in (proj.root / out["stored"]["path"]).read_text(encoding="utf-8")
    assert out["active"]["hits"] == []  # search skips drafts unless asked
    assert [h["page"] for h in out["drafts"]["hits"]] == [out["stored"]["page"]]
    assert out["read"]["status"] == "draft"


def test_a_pinned_user_writes_only_as_themselves(tmp_path: Path) -> None:
    proj = project(tmp_path / "kb", BASE)

    async def body(session: Any) -> dict[str, Any]:
        return {
            "as_alice": await session.call_tool("store_knowledge", {**STORE, "user": "alice"}),
            "supersede_as_alice": await session.call_tool(
                "supersede_knowledge", {"old": "old-margin", "new": "revenue", "user": "alice"}
            ),
            "own": payload(await session.call_tool("store_knowledge", {**STORE, "user": "bob"})),
        }

    before = tree(proj.root)
    out = run(["--repo", str(proj.root), "--allow-writes", "--user", "bob"], body)
    for name in ("as_alice", "supersede_as_alice"):
        assert "this server answers as bob" in error_text(out[name])
    assert out["own"]["path"] == "knowledge/user/bob/zebra-margin-rule.md"
    changed = sorted(p for p, data in tree(proj.root).items() if before.get(p) != data)
    assert changed == ["knowledge/user/bob/zebra-margin-rule.md"]


# --- drift, the stale list and cursors across builds -----------------------------------------


def test_drift_reaches_get_context_and_list_stale_pages_across_a_rebuild(tmp_path: Path) -> None:
    bound = f"meta:\n  bound_fingerprints:\n    {REVENUE}: '{FP_SUM_AMOUNT}'\n"
    pages = {
        f"knowledge/global/revenue-{n}.md": (
            f"---\ntitle: Revenue view {n}\nsummary: Revenue seen from team {n}\n"
            f"sl_refs: [{REVENUE}]\n{bound}---\nRevenue for team {n} sums order amounts.\n"
        )
        for n in (1, 2, 3)
    }
    proj = Project(tmp_path / "kb").write({**SEMANTICS, "knowl.toml": KB202_OFF, **pages})
    proj.commit("pages bound to sum(amount)")
    orders = proj.root / "semantics/shop/orders.yaml"
    orders.write_text(
        orders.read_text(encoding="utf-8").replace('"sum(amount)"', '"sum(amount) - sum(tax)"'),
        encoding="utf-8",
    )
    proj.commit("revenue excludes tax")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        assert build(proj.root, Config(rules={"KB202": "off"})).status == "published"

    async def body(session: Any) -> dict[str, Any]:
        first = payload(await session.call_tool("list_stale", {"limit": 2}))
        second = payload(
            await session.call_tool("list_stale", {"limit": 2, "cursor": first["next_cursor"]})
        )
        context = payload(
            await session.call_tool("get_context", {"question": "revenue team 2", "limit": 1})
        )
        payload(await session.call_tool("store_knowledge", STORE))  # a new build is current
        stale = await session.call_tool("list_stale", {"limit": 2, "cursor": first["next_cursor"]})
        return {"first": first, "second": second, "context": context, "stale": stale}

    out = run(["--repo", str(proj.root), "--allow-writes"], body)
    first, second = out["first"], out["second"]
    assert first["total"] == second["total"] == 3
    assert len(first["pages"]) == 2 and len(second["pages"]) == 1
    assert second["next_cursor"] is None
    walked = [p["page"] for p in first["pages"] + second["pages"]]
    assert walked == ["revenue-1", "revenue-2", "revenue-3"]
    assert all(p["reasons"] for p in first["pages"] + second["pages"])

    context = out["context"]
    (page,) = context["pages"]
    assert (page["page"], page["drift_flag"]) == ("revenue-2", True)
    (entity,) = context["entities"]
    assert entity["expression"] == "sum(amount) - sum(tax)"
    assert entity["fingerprint"] != FP_SUM_AMOUNT
    assert entity["used_by"] == [
        {
            "page": "revenue-2",
            "scope": "global",
            "usage_mode": "reference",
            "bound_fingerprint": FP_SUM_AMOUNT,
            "drifted": True,
        }
    ]
    # A cursor does not outlive the build it paged.
    message = error_text(out["stale"])
    assert "invalid cursor" in message and "rebuild" in message


# --- the resource list, paged -------------------------------------------------------------------


def test_the_resource_list_pages_and_holds_only_the_sessions_pages(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {"knowl.toml": KB202_OFF}
    for n in range(130):
        files[f"knowledge/global/note-{n:03}.md"] = (
            f"---\nsummary: Note {n}\n---\nNote number {n}.\n"
        )
    files["knowledge/user/alice/alice-plan.md"] = "---\nsummary: Alice's plan\n---\nPlan.\n"
    files["knowledge/user/bob/bob-plan.md"] = "---\nsummary: Bob's plan\n---\nPlan.\n"
    proj = project(tmp_path / "kb", files)

    async def page(session: Any, cursor: str) -> Any:
        return await session.list_resources(params=mcp.types.PaginatedRequestParams(cursor=cursor))

    async def body(session: Any) -> dict[str, Any]:
        answers = [await session.list_resources()]
        while answers[-1].next_cursor:
            answers.append(await page(session, answers[-1].next_cursor))
        first = answers[0].next_cursor
        with pytest.raises(MCPError) as tampered:
            await page(session, tamper(first))
        with pytest.raises(MCPError) as garbage:
            await page(session, "../../etc/passwd")
        return {"answers": answers, "tampered": str(tampered.value), "garbage": str(garbage.value)}

    out = run(["--repo", str(proj.root), "--user", "bob"], body)
    answers = out["answers"]
    assert [len(a.resources) for a in answers] == [100, 31]
    uris = [str(r.uri) for a in answers for r in a.resources]
    assert len(set(uris)) == 131
    assert uris[:2] == ["knowl://page/global/note-000", "knowl://page/global/note-001"]
    assert uris[-1] == "knowl://page/user:bob/bob-plan"
    assert not any("alice" in uri for uri in uris)
    for message in (out["tampered"], out["garbage"]):
        assert "invalid cursor" in message
        assert_clean(message)


# --- peers --------------------------------------------------------------------------------------


def test_configured_peers_answer_as_knowl_search_does(tmp_path: Path) -> None:
    peer = project(
        tmp_path / "billing",
        {
            "knowl.toml": KB202_OFF,
            "knowledge/global/invoices.md": (
                "---\nsummary: Invoice revenue\nvisibility: workspace\n---\nRevenue invoices.\n"
            ),
            "knowledge/global/internal.md": (
                "---\nsummary: Internal revenue only\n---\nRevenue, internal.\n"
            ),
        },
    )
    config = f"{KB202_OFF}\n[peers]\npaths = ['../{peer.root.name}']\n"
    main = project(tmp_path / "main", {**BASE, "knowl.toml": config})

    async def body(session: Any) -> dict[str, Any]:
        return {
            "search": payload(
                await session.call_tool("search_knowledge", {"query": "revenue", "limit": 10})
            ),
            "context": payload(
                await session.call_tool("get_context", {"question": "invoice revenue"})
            ),
        }

    out = run(["--repo", str(main.root)], body)
    cli = json.loads(
        invoke(["search", "revenue", "--repo", str(main.root), "--limit", "10", "--json"]).stdout
    )
    # Pages and entities mixed alike: an entity hit is named by its entity.
    hits = [(h["repo"], h.get("page", h.get("entity"))) for h in out["search"]["hits"]]
    assert hits == [(h["repo"], h.get("page", h.get("entity"))) for h in cli["hits"]]
    # The peer's repo is its folder's name (built here without its knowl.toml's repo_name).
    assert ("billing", "invoices") in hits and ("billing", "internal") not in hits
    peer_page = next(p for p in out["context"]["pages"] if p["repo"] == "billing")
    assert peer_page["page"] == "invoices" and peer_page["citation"] is None


def test_pages_sharing_an_id_are_resources_named_by_their_path(tmp_path: Path) -> None:
    proj = Project(tmp_path / "vault").write(VAULT)
    proj.commit("vault")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        invoke(["build", "--repo", str(proj.root), "-q"])

    async def body(session: Any) -> dict[str, Any]:
        listed = [str(r.uri) for r in (await session.list_resources()).resources]
        setups = [uri for uri in listed if uri.lower().endswith("setup")]
        texts = [(await session.read_resource(uri)).contents[0].text for uri in setups]
        return {
            "listed": listed,
            "texts": texts,
            "bare": await read_error(session, "knowl://page/global/Setup"),
            "notes": [
                (await session.read_resource(uri)).contents[0].text
                for uri in listed
                if uri.startswith("knowl://page/user:alice/")
            ],
        }

    out = run(["--repo", str(proj.root), "--user", "alice"], body)
    assert "knowl://page/global/Alpha%2FSetup" in out["listed"]
    assert "knowl://page/global/Bravo%2FSetup" in out["listed"]
    assert "knowl://page/global/Home" in out["listed"]
    assert ["# Alpha setup" in t for t in out["texts"]] == [True, False]
    assert ["# Bravo setup" in t for t in out["texts"]] == [False, True]
    assert "is ambiguous" in out["bare"] and "'global:Alpha/Setup'" in out["bare"]
    assert sorted("# Note A" in t for t in out["notes"]) == [False, True]
