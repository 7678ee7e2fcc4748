"""The MCP server as an agent meets it, on the demo project (`sample_repo/`), driven by the
official SDK's client over stdio: the tool list checked against the MCP schema the SDK ships,
`get_context` field by field, the semantic layer as tools, paging, resources, prompts, scope
isolation and hostile input."""

from __future__ import annotations

import asyncio
import datetime
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from knowl_build import __version__
from knowl_build.app.project import Locator
from knowl_build.artifacts.publication import resolve_artifact
from knowl_build.mcp_server import make_server
from tests.helpers import Project, invoke

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
jsonschema = pytest.importorskip("jsonschema")  # the SDK's client validates with it

# After the extra's check: these come with the SDK.
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp_types import _v2025_11_25 as wire  # noqa: E402

from tests.test_mcp import payload, run, run_initialized  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "sample_repo"
QUESTION = "how is revenue calculated and what should I watch out for?"
TOTAL_REVENUE = "warehouse_pg.orders.total_revenue"
FP_TOTAL_REVENUE = "sha256:6193c9db63810d49d8c08c18bacb053c943f8f0c1ea8d0fc3dee16ecc0cd7b34"
FP_ORDER_COUNT = "sha256:67280a800b51111117bd036fc387f86bb60eaa33ca2d46eaeb174c7f6cde371b"
READ_TOOLS = {
    "describe_entity",
    "get_context",
    "knowledge_timeline",
    "list_entities",
    "list_stale",
    "read_knowledge_page",
    "search_knowledge",
    "traverse_knowledge",
}
# Everything of alice's that must never reach bob: her page ids, titles and summaries.
ALICE = (
    "revenue-notebook",
    "board-deck-notes",
    "q4-questions",
    "user:alice",
    "user%3Aalice",
    "Alice's revenue checks",
    "Personal checklist",
    "which charts the board expects",
    "Open questions about Q4",
)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo project in a git repository of its own, built."""
    copy = tmp_path_factory.mktemp("mcp-sample") / "sample"
    shutil.copytree(SAMPLE, copy, ignore=shutil.ignore_patterns(".knowl"))
    Project(copy).commit("sample")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        invoke(["build", "--repo", str(copy), "-q"])
    return copy


def line_of(root: Path, path: str, start: str) -> int:
    """The 1-based line of the file that starts with `start`."""
    lines = (root / path).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(start))


def error_text(result: Any) -> str:
    assert result.is_error, result
    text: str = result.content[0].text
    return text


def assert_clean(message: str) -> None:
    """A one-line error: no traceback, nothing a terminal acts on, no echo of a huge value."""
    assert "Traceback" not in message and "\n" not in message, message
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in message), message
    assert len(message) < 1_000, message[:200]


def tamper(cursor: str) -> str:
    """The cursor with its first character changed: the offset it holds, that is."""
    return ("N" if cursor[0] != "N" else "M") + cursor[1:]


async def read_error(session: Any, uri: str) -> str:
    """The message of a resource read that must fail."""
    with pytest.raises(MCPError) as caught:
        await session.read_resource(uri)
    return str(caught.value)


# --- the tool list ----------------------------------------------------------------------------

CALLS: dict[str, dict[str, Any]] = {
    "get_context": {"question": QUESTION},
    "search_knowledge": {"query": "revenue", "category": "fact", "tags": ["finance"]},
    "read_knowledge_page": {"page": "mrr"},
    "traverse_knowledge": {"pages": ["mrr"], "depth": 1},
    "list_stale": {"limit": 1},
    "list_entities": {"kind": "measure", "limit": 3},
    "describe_entity": {"entity": TOTAL_REVENUE},
    "knowledge_timeline": {"page": "mrr"},
}


def test_tools_are_valid_mcp_with_annotations_schemas_and_short_text(sample: Path) -> None:
    async def body(session: Any, init: Any) -> dict[str, Any]:
        listed = await session.list_tools()
        results = {name: await session.call_tool(name, args) for name, args in CALLS.items()}
        return {"init": init, "listed": listed, "results": results}

    out = run_initialized(["--repo", str(sample)], body)
    init = out["init"]
    assert (init.server_info.name, init.server_info.version) == ("knowl-build", __version__)
    assert "get_context" in (init.instructions or "")
    assert init.capabilities.tools and init.capabilities.resources and init.capabilities.prompts

    listed = out["listed"]
    # The wire form, checked by the SDK's models generated from the MCP schema (2025-11-25).
    wire.ListToolsResult.model_validate(listed.model_dump(mode="json", by_alias=True))
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == READ_TOOLS  # no writes without --allow-writes
    for name, tool in tools.items():
        mcp.types.Tool.model_validate(tool.model_dump(by_alias=True))
        hints = tool.annotations
        assert hints is not None and hints.title == tool.title, name
        assert (hints.read_only_hint, hints.destructive_hint) == (True, False), name
        assert (hints.idempotent_hint, hints.open_world_hint) == (True, False), name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        assert tool.input_schema["type"] == "object", name

    for name, result in out["results"].items():
        assert not result.is_error, (name, result.content)
        # The client checked it against the outputSchema too; say so here as well.
        jsonschema.Draft202012Validator(tools[name].output_schema).validate(
            result.structured_content
        )
        text = result.content[0].text  # a few lines for a person, never the JSON again
        assert 0 < len(text.splitlines()) <= 12 and not text.lstrip().startswith("{"), text

    # The CLI's filters, their allowed values as JSON-schema enums.
    search = tools["search_knowledge"].input_schema["properties"]
    assert search["status"]["enum"] == [
        "active",
        "deprecated",
        "rejected",
        "archived",
        "superseded",
        "draft",
        "all",
    ]
    assert search["status"]["default"] == "active"
    assert search["category"]["anyOf"][0]["enum"] == [
        "fact",
        "decision",
        "goal",
        "constraint",
        "architecture",
        "state",
        "skill",
    ]
    assert search["usage_mode"]["anyOf"][0]["enum"] == [
        "reference",
        "caveat",
        "policy",
        "definition",
    ]
    assert search["tags"]["anyOf"][0]["type"] == "array"
    context = tools["get_context"].input_schema["properties"]
    assert context.keys() - {"question"} == search.keys() - {"query", "kind"}
    assert search["kind"]["enum"] == ["all", "page", "entity"]
    assert search["kind"]["default"] == "all"
    kinds = tools["list_entities"].input_schema["properties"]["kind"]["anyOf"][0]["enum"]
    assert kinds == ["source", "measure", "dimension", "column", "metric"]
    for name in ("list_entities", "list_stale"):
        assert {"cursor", "limit"} <= tools[name].input_schema["properties"].keys(), name
        assert "next_cursor" in tools[name].output_schema["properties"], name
    assert search["query"]["maxLength"] == 1_000


# --- get_context ------------------------------------------------------------------------------


def test_get_context_answers_the_revenue_question_field_by_field(sample: Path) -> None:
    async def body(session: Any) -> dict[str, Any]:
        return {
            # Definitions only: the refunds caveat then rides along rather than being a hit.
            "revenue": payload(
                await session.call_tool(
                    "get_context", {"question": QUESTION, "usage_mode": "definition", "limit": 2}
                )
            ),
            "all": payload(await session.call_tool("get_context", {"question": QUESTION})),
            "engine": payload(
                await session.call_tool(
                    "get_context", {"question": "which warehouse engine do we use?", "limit": 1}
                )
            ),
            "nothing": payload(await session.call_tool("get_context", {"question": "zzyzx"})),
        }

    out = run(["--repo", str(sample)], body)
    answer = out["revenue"]
    assert answer["question"] == QUESTION and answer["user"] is None
    assert set(answer["build"]) == {"id", "commit"} and len(answer["build"]["commit"]) == 40
    assert [p["page"] for p in answer["pages"]] == ["revenue-definition", "average-order-value"]
    revenue, aov = answer["pages"]
    path = "knowledge/global/metrics/revenue-definition.md"
    assert {k: v for k, v in revenue.items() if k not in ("score", "citation")} == {
        "page": "revenue-definition",
        "scope": "global",
        "repo": "acme-analytics",
        "title": "Revenue",
        "summary": "Revenue is the sum of completed order amounts in EUR, net of discounts "
        "and before tax.",
        "usage_mode": "definition",
        "status": "active",
        "freshness": "fresh",
        "drift_flag": False,
        "path": path,
    }
    assert revenue["score"] > aov["score"] > 0
    # The citation is the passage that matched: the line of the file, frontmatter counted.
    cited = revenue["citation"]
    assert cited["path"] == path
    assert cited["line"] == line_of(sample, path, "Revenue is computed from the order fact table")
    assert cited["text"].startswith("Revenue is computed from the order fact table")
    aov_path = "knowledge/global/metrics/average-order-value.md"
    assert aov["path"] == aov["citation"]["path"] == aov_path
    assert aov["citation"]["line"] == line_of(sample, aov_path, aov["citation"]["text"][:20])

    entities = {e["entity"]: e for e in answer["entities"]}
    assert list(entities) == sorted(entities)  # in name order
    assert set(entities) == {
        "warehouse_pg.orders",
        "warehouse_pg.orders.average_order_value",
        "warehouse_pg.orders.order_count",
        TOTAL_REVENUE,
    }
    total = entities[TOTAL_REVENUE]
    assert {k: v for k, v in total.items() if k != "definition"} == {
        "entity": TOTAL_REVENUE,
        "live": True,
        "kind": "measure",
        "expression": "sum(amount)",
        "description": "Revenue of completed orders in EUR, net of discounts, before tax.",
        "fingerprint": FP_TOTAL_REVENUE,
        "used_by": [
            {
                "page": "revenue-definition",
                "scope": "global",
                "usage_mode": "definition",
                "bound_fingerprint": FP_TOTAL_REVENUE,  # written against the live definition
                "drifted": False,
            }
        ],
    }
    assert total["definition"]["expr"] == "sum(amount)"
    assert entities["warehouse_pg.orders.order_count"]["used_by"][0]["bound_fingerprint"] == (
        FP_ORDER_COUNT
    )
    assert entities["warehouse_pg.orders"]["kind"] == "source"
    assert entities["warehouse_pg.orders"]["expression"] is None
    # What to watch out for: the caveat about the measure the hits use, with the reason.
    assert answer["caveats"] == [
        {
            "page": "refunds-caveat",
            "scope": "global",
            "summary": "Revenue does not subtract refunds; finance's net revenue is about 3% lower.",
            "triggered_by": [TOTAL_REVENUE],
        }
    ]
    assert answer["superseded"] == []

    # Without the filter the caveat is a hit of its own, and is not repeated as a caveat.
    pages = [p["page"] for p in out["all"]["pages"]]
    assert {"revenue-definition", "refunds-caveat"} <= set(pages) and len(pages) == 5
    assert "refunds-caveat" not in [c["page"] for c in out["all"]["caveats"]]

    # The superseded decision that the hit replaces comes along, marked as such.
    engine = out["engine"]
    assert [p["page"] for p in engine["pages"]] == ["warehouse-engine"]
    assert engine["superseded"] == [
        {
            "page": "warehouse-engine-2023",
            "scope": "global",
            "title": "Analytics warehouse engine (2023)",
            "summary": "In 2023 the warehouse was to move entirely to Snowflake.",
            "superseded_by": "warehouse-engine",
        }
    ]
    assert out["nothing"]["pages"] == out["nothing"]["entities"] == []


# --- the semantic layer as tools, and paging -------------------------------------------------


def test_entities_page_through_with_opaque_cursors(sample: Path) -> None:
    async def body(session: Any) -> dict[str, Any]:
        pages: list[dict[str, Any]] = []
        cursor = None
        while True:
            args: dict[str, Any] = {"limit": 2}
            if cursor is not None:
                args["cursor"] = cursor
            answer = payload(await session.call_tool("list_entities", args))
            pages.append(answer)
            cursor = answer["next_cursor"]
            if cursor is None:
                break
        first = pages[0]["next_cursor"]
        measures = payload(await session.call_tool("list_entities", {"kind": "measure"}))
        sources = payload(await session.call_tool("list_entities", {"kind": "source", "limit": 1}))
        stale = payload(await session.call_tool("list_stale", {"limit": 1}))
        return {
            "pages": pages,
            "whole": payload(await session.call_tool("list_entities", {"limit": 200})),
            "measures": measures,
            "revenue": payload(
                await session.call_tool("list_entities", {"query": "REVENUE completed"})
            ),
            "tampered": await session.call_tool(
                "list_entities", {"limit": 2, "cursor": tamper(first)}
            ),
            # a cursor of another question: other filters, another limit, another tool
            "foreign": await session.call_tool(
                "list_entities", {"kind": "measure", "limit": 1, "cursor": sources["next_cursor"]}
            ),
            "other_limit": await session.call_tool("list_entities", {"limit": 3, "cursor": first}),
            "other_tool": await session.call_tool("list_stale", {"cursor": first, "limit": 2}),
            "garbage": await session.call_tool("list_entities", {"cursor": "!!not-a-cursor!!"}),
            "stale": stale,
            "describe": payload(
                await session.call_tool("describe_entity", {"entity": TOTAL_REVENUE})
            ),
            "missing": await session.call_tool("describe_entity", {"entity": "orders.revenu"}),
        }

    out = run(["--repo", str(sample)], body)
    pages = out["pages"]
    whole = out["whole"]
    assert whole["next_cursor"] is None and len(whole["entities"]) == whole["total"] > 2
    assert all(len(p["entities"]) == 2 for p in pages[:-1]) and len(pages) > 2
    assert all(p["total"] == whole["total"] for p in pages)
    walked = [row["entity"] for p in pages for row in p["entities"]]
    assert walked == [row["entity"] for row in whole["entities"]]  # each once, in order
    assert walked == sorted(walked)
    assert {row["kind"] for row in out["measures"]["entities"]} == {"measure"}
    total = next(r for r in out["measures"]["entities"] if r["entity"] == TOTAL_REVENUE)
    assert total == {
        "entity": TOTAL_REVENUE,
        "kind": "measure",
        "connection": "warehouse_pg",
        "source": "orders",
        "member": "total_revenue",
        "description": "Revenue of completed orders in EUR, net of discounts, before tax.",
        "expression": "sum(amount)",
        "fingerprint": FP_TOTAL_REVENUE,
    }
    assert TOTAL_REVENUE in [r["entity"] for r in out["revenue"]["entities"]]
    for name in ("tampered", "foreign", "other_limit", "other_tool", "garbage"):
        message = error_text(out[name])
        assert "invalid cursor" in message, (name, message)
        assert_clean(message)
    # The demo's one page that is not fresh: the drift it demonstrates.
    stale = out["stale"]
    assert (stale["total"], stale["next_cursor"]) == (1, None)
    assert [(p["page"], p["freshness"]) for p in stale["pages"]] == [
        ("average-order-value", "needs_review")
    ]

    described = out["describe"]
    assert (described["entity"], described["kind"]) == (TOTAL_REVENUE, "measure")
    assert described["expression"] == "sum(amount)"
    assert described["fingerprint"] == FP_TOTAL_REVENUE
    assert described["file"] == "semantics/warehouse_pg/orders.yaml" and described["line"] > 0
    modes = list(described["pages"])
    assert modes[0] == "caveat"  # caveats first: what to watch out for
    assert "refunds-caveat" in [p["page"] for p in described["pages"]["caveat"]]
    assert "revenue-definition" in [p["page"] for p in described["pages"]["definition"]]
    assert "no semantic entity 'orders.revenu'" in error_text(out["missing"])


# --- resources and prompts --------------------------------------------------------------------


def test_resources_and_prompts_for_an_anonymous_session(sample: Path) -> None:
    async def body(session: Any) -> dict[str, Any]:
        page = await session.read_resource("knowl://page/global/revenue-definition")
        entity = await session.read_resource(f"knowl://entity/{TOTAL_REVENUE}")
        prompt = await session.get_prompt("answer-with-knowledge", {"question": QUESTION})
        decision = await session.get_prompt(
            "record-decision",
            {
                "title": "Fiscal year start",
                "decision": "The fiscal year starts in February.",
                "reasoning": "It matches the retail calendar.",
                "alternatives": "January; April",
            },
        )
        return {
            "templates": await session.list_resource_templates(),
            "resources": await session.list_resources(),
            "page": page,
            "entity": entity,
            "alice": await read_error(session, "knowl://page/user:alice/revenue-notebook"),
            "missing": await read_error(session, "knowl://page/global/no-such-page"),
            "prompts": await session.list_prompts(),
            "prompt": prompt,
            "decision": decision,
        }

    out = run(["--repo", str(sample)], body)
    templates = {t.uri_template: t for t in out["templates"].resource_templates}
    assert set(templates) == {"knowl://page/{scope}/{id}", "knowl://entity/{entity}"}
    assert templates["knowl://page/{scope}/{id}"].mime_type == "text/markdown"
    resources = out["resources"].resources
    uris = [str(r.uri) for r in resources]
    assert out["resources"].next_cursor is None
    assert all(uri.startswith("knowl://page/global/") for uri in uris)  # anonymous: global only
    assert "knowl://page/global/revenue-definition" in uris and len(uris) == len(set(uris))
    revenue = next(r for r in resources if str(r.uri).endswith("/revenue-definition"))
    assert (revenue.name, revenue.title) == ("global:revenue-definition", "Revenue")
    assert revenue.mime_type == "text/markdown"

    (page,) = out["page"].contents
    text = page.text
    assert page.mime_type == "text/markdown"
    assert text.startswith('---\npage: "revenue-definition"\nscope: "global"\n')
    assert 'caveats: ["refunds-caveat"]\n' in text and 'freshness: "fresh"\n' in text
    assert "\n# Revenue\n" in text and "sum(amount)" in text  # the rendered body
    (entity,) = out["entity"].contents
    assert entity.mime_type == "application/json"
    described = json.loads(entity.text)
    assert (described["entity"], described["fingerprint"]) == (TOTAL_REVENUE, FP_TOTAL_REVENUE)
    # A user's page is not there for an anonymous session: the message of a missing page.
    assert out["alice"] == "no page 'user:alice:revenue-notebook' visible to anonymous"
    assert out["missing"] == "no page 'global:no-such-page' visible to anonymous"

    prompts = {p.name: p for p in out["prompts"].prompts}
    assert set(prompts) == {"answer-with-knowledge", "record-decision"}
    assert [(a.name, a.required) for a in prompts["answer-with-knowledge"].arguments or []] == [
        ("question", True)
    ]
    decision_args = {a.name: a.required for a in prompts["record-decision"].arguments or []}
    assert decision_args == {
        "title": True,
        "decision": True,
        "reasoning": True,
        "alternatives": False,
    }
    (message,) = out["prompt"].messages
    grounded = message.content.text
    assert message.role == "user" and QUESTION in grounded
    assert "knowledge/global/metrics/revenue-definition.md:" in grounded  # citations
    assert f"{TOTAL_REVENUE} (measure): sum(amount)" in grounded  # the live definition
    assert "refunds" in grounded.lower() and "relay every caveat" in grounded.lower()
    # On a read-only server the decision goes through a person: the `knowl store` command.
    (step,) = out["decision"].messages
    assert "read-only" in step.content.text
    assert (
        "knowl store --category decision --title 'Fiscal year start' --content 'The fiscal "
        "year starts in February.' --reasoning 'It matches the retail calendar.' "
        "--alternative January --alternative April"
    ) in step.content.text


# --- scope isolation --------------------------------------------------------------------------


def _dump(value: Any) -> str:
    if hasattr(value, "model_dump"):
        return json.dumps(value.model_dump(mode="json"), ensure_ascii=False)
    return str(value)


def test_bob_never_sees_alice_through_any_tool_resource_or_prompt(sample: Path) -> None:
    words = "Alice revenue checks checklist board deck charts questions Q4 notebook"

    async def as_bob(session: Any) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for name, (tool, args) in {
            "search": ("search_knowledge", {"query": words, "limit": 50, "status": "all"}),
            "context": ("get_context", {"question": words, "limit": 50, "status": "all"}),
            "read": ("read_knowledge_page", {"page": "revenue-definition"}),
            "read_mrr": ("read_knowledge_page", {"page": "mrr"}),
            "walk": ("traverse_knowledge", {"pages": ["revenue-definition", "mrr"], "depth": 3}),
            "stale": ("list_stale", {}),
            "describe": ("describe_entity", {"entity": TOTAL_REVENUE}),
            "timeline": ("knowledge_timeline", {"page": "revenue-definition"}),
            "own": ("search_knowledge", {"query": "dunning invoice aging weekly", "limit": 50}),
        }.items():
            seen[name] = await session.call_tool(tool, args)
        listed = await session.list_resources()
        seen["resources"] = listed
        seen["page"] = await session.read_resource("knowl://page/global/revenue-definition")
        seen["entity"] = await session.read_resource(f"knowl://entity/{TOTAL_REVENUE}")
        seen["prompt"] = await session.get_prompt("answer-with-knowledge", {"question": words})
        refused = {
            "read_alice": await session.call_tool(
                "read_knowledge_page", {"page": "user:alice:revenue-notebook"}
            ),
            "read_missing": await session.call_tool(
                "read_knowledge_page", {"page": "user:bob:no-such-page"}
            ),
            "walk_alice": await session.call_tool(
                "traverse_knowledge", {"pages": ["user:alice:revenue-notebook"]}
            ),
            "as_alice": await session.call_tool(
                "search_knowledge", {"query": "revenue", "user": "alice"}
            ),
            "describe_as_alice": await session.call_tool(
                "describe_entity", {"entity": TOTAL_REVENUE, "user": "alice"}
            ),
            "context_as_alice": await session.call_tool(
                "get_context", {"question": "revenue", "user": "alice"}
            ),
            "resource_alice": await read_error(session, "knowl://page/user:alice/revenue-notebook"),
            "resource_alice_encoded": await read_error(
                session, "knowl://page/user%3Aalice/revenue-notebook"
            ),
            "resource_missing": await read_error(session, "knowl://page/user:bob/no-such-page"),
        }
        return {"seen": seen, "refused": refused}

    async def as_alice(session: Any) -> dict[str, Any]:
        return {
            "resources": await session.list_resources(),
            "describe": payload(
                await session.call_tool("describe_entity", {"entity": TOTAL_REVENUE})
            ),
            "page": await session.read_resource("knowl://page/user:alice/revenue-notebook"),
            "prompt": await session.get_prompt(
                "answer-with-knowledge", {"question": "checklist before sending revenue"}
            ),
        }

    bob = run(["--repo", str(sample), "--user", "bob"], as_bob)
    alice = run(["--repo", str(sample), "--user", "alice"], as_alice)

    for name, result in bob["seen"].items():
        assert not getattr(result, "is_error", False), (name, result)
        dumped = _dump(result)
        for secret in ALICE:
            assert secret not in dumped, (name, secret)
    # bob does see his own pages: the session is his, not anonymous.
    own = bob["seen"]["own"].structured_content
    assert "user:bob" in {h["scope"] for h in own["hits"] if h["kind"] == "page"}
    bob_uris = [str(r.uri) for r in bob["seen"]["resources"].resources]
    assert "knowl://page/user:bob/dunning-notes" in bob_uris
    # Another user's page answers exactly as a page that does not exist.
    refused = bob["refused"]
    assert error_text(refused["read_alice"]).endswith(
        "no page 'user:alice:revenue-notebook' visible to bob"
    )
    assert error_text(refused["read_missing"]).endswith(
        "no page 'user:bob:no-such-page' visible to bob"
    )
    assert error_text(refused["walk_alice"]).endswith(
        "no page 'user:alice:revenue-notebook' visible to bob"
    )
    for name in ("as_alice", "describe_as_alice", "context_as_alice"):
        assert "this server answers as bob (started with --user)" in error_text(refused[name])
    assert refused["resource_alice"] == refused["resource_alice_encoded"]
    assert refused["resource_alice"] == "no page 'user:alice:revenue-notebook' visible to bob"
    assert refused["resource_missing"] == "no page 'user:bob:no-such-page' visible to bob"

    # The control: the same calls as alice do show her pages, so bob's answers prove something.
    alice_uris = [str(r.uri) for r in alice["resources"].resources]
    assert "knowl://page/user:alice/revenue-notebook" in alice_uris
    assert not any(uri.startswith("knowl://page/user:bob/") for uri in alice_uris)
    users = [p["page"] for pages in alice["describe"]["pages"].values() for p in pages]
    assert "revenue-notebook" in users
    assert "Alice's revenue checks" in alice["page"].contents[0].text
    assert "revenue-notebook" in _dump(alice["prompt"])


# --- hostile input ------------------------------------------------------------------------------

ESC = "\x1b[2J\x1b[31m"
HUGE = "revenue " * 200_000


def test_hostile_input_is_a_clean_error_never_a_traceback(sample: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_knowledge", {"query": HUGE}),
        ("get_context", {"question": HUGE}),
        ("read_knowledge_page", {"page": HUGE}),
        ("describe_entity", {"entity": HUGE}),
        ("list_entities", {"query": HUGE}),
        ("search_knowledge", {"query": "x", "user": "a" * 5000}),
        ("list_entities", {"cursor": "A" * 5000}),
        ("list_stale", {"cursor": ESC}),
        ("read_knowledge_page", {"page": ESC}),
        ("read_knowledge_page", {"page": "../../../etc/passwd"}),
        ("read_knowledge_page", {"page": "user:../../etc:passwd"}),
        ("describe_entity", {"entity": ESC + "x"}),
        ("search_knowledge", {"query": "x", "user": "al" + ESC}),
        ("search_knowledge", {"query": "x", "status": ESC}),
        ("search_knowledge", {"query": "x", "limit": 10**9}),
        ("traverse_knowledge", {"pages": ["mrr"], "depth": 10**6}),
        ("traverse_knowledge", {"pages": []}),
        ("list_entities", {"kind": "table"}),
    ]
    uris = [
        "knowl://page/global/..%2F..%2Fetc",
        "knowl://page/global/..%2F..%2Fetc%2Fpasswd",
        "knowl://page/global/%2Fetc%2Fpasswd",
        "knowl://page/user:..%2F..%2Falice/revenue-notebook",
        "knowl://page/user:bob%2F..%2Falice/revenue-notebook",
        "knowl://page/global/a%00b",
        "knowl://page/global/%1B%5B2J",
        "knowl://page/system/passwd",
        "knowl://page/user:/x",
        "knowl://entity/..%2F..%2Fetc%2Fpasswd",
        "knowl://entity/%1B%5B31m",
        "knowl://page/global/" + "a" * 5000,
    ]

    async def body(session: Any) -> dict[str, Any]:
        results = [await session.call_tool(name, args) for name, args in calls]
        errors = [await read_error(session, uri) for uri in uris]
        with pytest.raises(MCPError) as prompt:
            await session.get_prompt("answer-with-knowledge", {"question": HUGE})
        # The server still answers afterwards.
        after = payload(await session.call_tool("search_knowledge", {"query": "revenue"}))
        return {"results": results, "errors": errors, "prompt": str(prompt.value), "after": after}

    out = run(["--repo", str(sample)], body)
    for (name, _), result in zip(calls, out["results"], strict=True):
        message = error_text(result)
        assert message.startswith(f"Error executing tool {name}"), message
        assert_clean(message)
    for uri, message in zip(uris, out["errors"], strict=True):
        assert_clean(message)
        assert "alice" not in message or "visible to anonymous" in message, (uri, message)
    assert_clean(out["prompt"])
    assert out["after"]["hits"]


# --- the documentation --------------------------------------------------------------------------


def test_docs_describe_every_tool_resource_and_prompt(sample: Path) -> None:
    server = make_server(locator=Locator(sample), artifact=None, with_repo=True, allow_writes=True)

    async def offered() -> tuple[Any, Any, Any]:
        return (
            await server.list_tools(),
            await server.list_resource_templates(),
            await server.list_prompts(),
        )

    tools, templates, prompts = asyncio.run(offered())
    docs = (Path(__file__).resolve().parent.parent / "docs" / "agents.md").read_text()
    for tool in tools:
        assert f"| `{tool.name}(" in docs, tool.name
        for argument in tool.input_schema["properties"]:
            assert argument in docs.split(f"| `{tool.name}(", 1)[1].split("|", 1)[0], (
                tool.name,
                argument,
            )
    for template in templates:
        assert f"| `{template.uri_template}` |" in docs, template.uri_template
    for prompt in prompts:
        assert f"| `{prompt.name}` |" in docs, prompt.name
    for hint in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
        assert hint in docs


# --- list_stale answers from where `knowl stale` does ----------------------------------------


def test_list_stale_with_a_repo_answers_from_the_files_as_knowl_stale_does(tmp_path: Path) -> None:
    """With --repo the server lists what `knowl stale` prints, edits not yet built included,
    less the pages of other users; served from an artifact alone, what that build held."""
    old = "meta:\n  last_validated_at: 2001-01-01\n"
    today = f"meta:\n  last_validated_at: {datetime.date.today().isoformat()}\n"
    proj = Project(tmp_path / "kb").write(
        {
            "knowl.toml": "staleness_days = 90\n",
            "knowledge/global/orders.md": f"---\nsummary: Orders\n{old}---\nOrders.\n",
            "knowledge/global/refunds.md": f"---\nsummary: Refunds\n{today}---\nRefunds.\n",
            "knowledge/user/bob/plan.md": f"---\nsummary: Bob's plan\n{old}---\nPlan.\n",
        }
    )
    proj.commit("pages")
    invoke(["build", "--repo", str(proj.root), "-q"], code=0)
    built = tmp_path / "elsewhere"  # the build alone, away from the files
    shutil.copytree(resolve_artifact(proj.root / ".knowl" / "build"), built)
    # Edited after the build: refunds is stale now, orders validated today.
    for name, before, after in (("refunds", today, old), ("orders", old, today)):
        page = proj.root / f"knowledge/global/{name}.md"
        page.write_text(page.read_text(encoding="utf-8").replace(before, after), encoding="utf-8")
    printed = json.loads(invoke(["stale", "--repo", str(proj.root), "--json"], code=1).stdout)

    async def body(session: Any) -> Any:
        return payload(await session.call_tool("list_stale", {}))

    from_tree = run(["--repo", str(proj.root), "--user", "alice"], body)
    from_build = run(["--artifact", str(built)], body)
    # Given an artifact, the server answers about it, whatever --repo says.
    from_both = run(["--repo", str(proj.root), "--artifact", str(built)], body)
    assert [p["path"] for p in printed["pages"]] == [
        "knowledge/global/refunds.md",
        "knowledge/user/bob/plan.md",
    ]
    assert from_tree["pages"] == printed["pages"][:1]  # bob's page is bob's alone
    assert [p["page"] for p in from_build["pages"]] == ["orders"]
    assert from_both == from_build
