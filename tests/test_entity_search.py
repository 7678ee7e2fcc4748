"""Entities of the semantic layer as search hits (`--kind entity|all`), names first for queries
with syntax: on a real git repository, through the API, the CLI and the MCP tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowl_build.artifacts.schema import Entity, MixedSearchAnswer
from knowl_build.core.config import Config
from knowl_build.core.errors import UsageError
from knowl_build.index.fields import name_key
from knowl_build.index.query import parse
from knowl_build.pipeline.publish import build
from knowl_build.reader import Reader
from knowl_build.reader.entity_search import EntityIndex, analyse, split_camel
from tests.helpers import Project, invoke

TOTAL = "shop_pg.orders.total_revenue"
AOV = "shop_pg.orders.average_order_value"
STATUS = "shop_pg.orders.status"

CORPUS: dict[str, str | bytes] = {
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "semantics/shop/orders.yaml": """\
name: orders
connection: shop_pg
table: analytics.fct_orders
grain: [order_id]
description: One row per order.
columns:
  - { name: order_id, type: int }
  - { name: amount, type: decimal, nullable: false }
  - { name: status, type: string }
measures:
  - name: total_revenue
    expr: "sum(amount)"
    additivity: additive
    description: Money from completed orders, net of discounts.
  - name: average_order_value
    expr: "sum(amount) / count(*)"
    additivity: non_additive
    description: Revenue per order.
dimensions:
  - { name: status, column: status, label: Order status }
""",
    "knowledge/global/revenue.md": (
        "---\ntitle: Revenue\nsummary: How revenue is counted\ntags: [finance]\n"
        f"sl_refs: [{TOTAL}]\n---\nRevenue counts completed orders.\n"
    ),
    # Binds the measure and says nothing of revenue: found through the measure alone.
    "knowledge/global/quarterly-close.md": (
        f"---\ntitle: Quarterly close\nsummary: Steps of the close\nsl_refs: [{TOTAL}]\n---\n"
        "Reconcile the ledger, then publish.\n"
    ),
    "knowledge/global/revenue-caveat.md": (
        "---\nsummary: Refunds are not subtracted\nusage_mode: caveat\n"
        f"sl_refs: [{TOTAL}]\n---\nRefunds arrive later.\n"
    ),
    "knowledge/global/order-states.md": (
        f"---\ntitle: Order states\nsummary: The states an order goes through\n"
        f"sl_refs: [{STATUS}]\n---\nPlaced, paid, shipped.\n"
    ),
    # Names first with syntax: "Churn rate" is named; "Subscriptions" scores higher.
    "knowledge/global/churn-rate.md": (
        "---\ntitle: Churn rate\nsummary: Defined monthly\ntags: [finance]\n---\nSee the board.\n"
    ),
    "knowledge/global/subscriptions.md": (
        "---\ntitle: Subscriptions\nsummary: churn rate, churn rate and churn\ntags: [finance]\n"
        "---\nThe churn rate of subscriptions; churn rate by plan; churn.\n"
    ),
    "knowledge/user/alice/notes.md": (
        f"---\nsummary: Alice private ledger notes\nsl_refs: [{TOTAL}]\n---\nMine.\n"
    ),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        proj = Project(tmp_path_factory.mktemp("entities") / "kb").write(CORPUS)
        proj.commit("corpus")
        result = build(proj.root, Config(rules={"KB202": "off"}))
    assert result.status == "published"
    return proj.root


def order(answer: MixedSearchAnswer) -> list[tuple[str, str]]:
    return [
        ("entity", h["entity"]) if h["kind"] == "entity" else ("page", h["page"])
        for h in answer["hits"]
    ]


def test_entity_analysis_splits_names() -> None:
    assert split_camel("totalRevenue HTTPServer") == "total Revenue HTTP Server"
    assert analyse("shop_pg.orders.totalRevenue Order status") == [
        "shop",
        "pg",
        "order",
        "total",
        "revenu",
        "order",
        "statu",
    ]


def entity(name: str, member: str | None, **definition: object) -> Entity:
    connection, source = name.split(".")[:2]
    kind = "measure" if member else "source"
    return Entity(name, kind, connection, source, member, definition, "s.yaml", 1, "f", None, None)


def reference_index(entities: dict[str, Entity]) -> dict[str, Any]:
    """The index as the rules say, done the plain way: each field's text analysed whole."""
    docs = []
    for name in sorted(entities):
        definition = entities[name].definition
        label, description = (definition.get(k) for k in ("label", "description"))
        label = label if isinstance(label, str) else ""
        description = description if isinstance(description, str) else ""
        fields = [analyse(f"{name} {label}"), analyse(description)]
        freqs = []
        for terms in fields:
            counts: dict[str, int] = {}
            for term in terms:
                counts[term] = counts.get(term, 0) + 1
            freqs.append(list(counts.items()))  # in order: the site lists them so
        last = entities[name].member or name.rpartition(".")[2]
        keys = {name_key(text) for text in (name, last, split_camel(last), label)}
        texts = (split_camel(name.replace(".", " ")), label, description)
        docs.append((name, freqs, [len(f) for f in fields], texts, keys - {""}))
    postings: list[dict[str, list[int]]] = [{}, {}]
    for number, (_name, freqs, _lengths, _texts, _keys) in enumerate(docs):
        for i, counted in enumerate(freqs):
            for term, _ in counted:
                postings[i].setdefault(term, []).append(number)
    avg = [sum(doc[2][i] for doc in docs) / len(docs) or 1.0 for i in range(2)]
    return {"docs": docs, "avg": avg, "postings": postings}


def test_entity_index_equals_the_plain_analysis() -> None:
    entities = {
        e.name: e
        for e in [
            entity("shopPg.orders", None, description="Orders of the shöp, one per order."),
            entity(
                "shopPg.orders.totalRevenue",
                "totalRevenue",
                label="Total Révenue",
                description="Money from HTTPServer orders, net of discounts; orders' money.",
            ),
            entity("shopPg.orders.HTTPStatus", "HTTPStatus", label="Ordér status"),
            entity("shopPg.orders.amount", "amount", label=3, description=None),
            entity("café.crème.prix_TTC", "prix_TTC", label="Prix TTC", description="Le prix."),
            entity("shop_pg.customersByRegion", None, description="Customers, by region"),
            entity("shopPg.orders.state", "orderState", label="", description="État"),
            entity("conn0.src10.total2Net", "total2Net", description="Total net 2 net"),
        ]
    }
    index = EntityIndex(entities)
    reference = reference_index(entities)
    got = [
        (
            doc.name,
            [list(f.items()) for f in doc.freqs],
            list(doc.lengths),
            doc.texts,
            set(doc.names),
        )
        for doc in index.docs
    ]
    assert got == reference["docs"]
    assert list(index.avg) == reference["avg"]
    assert list(index.postings) == reference["postings"]
    assert list(index.df) == [{t: len(n) for t, n in f.items()} for f in reference["postings"]]
    # The lazily made texts serve phrases; names, the names-first rule.
    boosts = {"title": 2.0, "summary": 1.0}
    ranked = index.rank(parse('"total revenue"'), boosts)
    assert [doc.name for doc, _score, _named in ranked] == ["shopPg.orders.totalRevenue"]
    ranked = index.rank(parse("order status"), boosts)
    assert ranked[0][0].name == "shopPg.orders.HTTPStatus" and ranked[0][2]


def test_kind_entity_returns_entities_by_name_and_description(built: Path) -> None:
    with Reader.open(built) as reader:
        answer = reader.search("total revenue", kind="entity", limit=10)
        # `total revenue` is the measure's name: first; "revenue" in a description: next.
        assert order(answer) == [("entity", TOTAL), ("entity", AOV)]
        hit = answer["hits"][0]
        assert hit == {
            "kind": "entity",
            "entity": TOTAL,
            "entity_kind": "measure",
            "repo": hit["repo"],
            "connection": "shop_pg",
            "source": "orders",
            "member": "total_revenue",
            "label": None,
            "description": "Money from completed orders, net of discounts.",
            "expression": "sum(amount)",
            "score": hit["score"],
            "matched_on": ["lexical"],
            # Visible pages binding it; alice's own page is hers alone.
            "pages": [
                {"page": "quarterly-close", "scope": "global"},
                {"page": "revenue", "scope": "global"},
                {"page": "revenue-caveat", "scope": "global"},
            ],
        }
        # Named, so first, though "revenue" weighs more in the other's short description.
        assert 0 < hit["score"] < answer["hits"][1]["score"]
        # The caveat about the measure rides along.
        assert [c["page"] for c in answer["caveats"]] == ["revenue-caveat"]
        mine = reader.search("total revenue", kind="entity", user="alice")["hits"][0]
        assert mine["kind"] == "entity"
        assert {"page": "notes", "scope": "user:alice"} in mine["pages"]
        # By description alone, and by label (a name: first).
        assert order(reader.search("discounts", kind="entity")) == [("entity", TOTAL)]
        assert order(reader.search("order status", kind="entity"))[0] == ("entity", STATUS)
        # Syntax: prefixes, phrases and exclusions apply to entities as to pages.
        assert order(reader.search('"completed orders"', kind="entity")) == [("entity", TOTAL)]
        assert order(reader.search("revenue -discounts", kind="entity")) == [("entity", AOV)]
        assert ("entity", TOTAL) in order(reader.search("discou*", kind="entity"))
        # A page filter leaves entities out: they have no category, usage mode or tags.
        assert reader.search("total revenue", kind="entity", tags=["finance"])["hits"] == []
        assert reader.search("total revenue tag:finance", kind="entity")["hits"] == []
        # The page search is what it always was.
        pages = reader.search("total revenue", limit=10)
        assert {h["kind"] for h in pages["hits"]} == {"page"}
        with pytest.raises(UsageError):
            reader.search("revenue", kind="pages")


def test_mixed_hits_find_the_measure_and_the_pages_that_use_it(built: Path) -> None:
    out = invoke(["search", "total revenue", "--repo", str(built), "--json", "--limit", "6"])
    answer = json.loads(out.stdout)
    assert answer == json.loads(
        invoke(["search", "total revenue", "--repo", str(built), "--json", "--limit", "6"]).stdout
    )
    hits = answer["hits"]
    # The measure, named as the query, first; then by fused rank: revenue (first page, second
    # page binding the measure), quarterly-close (first page binding it, by id; tied with the
    # measure), the caveat (second page) tied with the second entity: pages first.
    assert order(answer) == [
        ("entity", TOTAL),
        ("page", "revenue"),
        ("page", "quarterly-close"),
        ("page", "revenue-caveat"),
        ("entity", AOV),
    ]
    by_id = {h.get("page") or h["entity"]: h for h in hits}
    assert by_id["revenue"]["matched_on"] == ["lexical", "entity"]
    assert by_id["quarterly-close"]["matched_on"] == ["entity"]
    # Fused scores: 1/(60+rank) summed over the rankings holding the item.
    assert by_id["revenue"]["score"] == pytest.approx(1 / 60 + 1 / 61)
    assert by_id["quarterly-close"]["score"] == pytest.approx(1 / 60)
    assert by_id["revenue-caveat"]["matched_on"] == ["lexical"]  # a caveat: never by binding
    assert by_id[TOTAL]["score"] == pytest.approx(1 / 60)
    # Page hits keep their shape, marked as pages; caveats ride along, not ranked by binding.
    assert set(by_id["revenue"]) >= {"page", "scope", "title", "summary", "sl_refs", "snippet"}
    assert by_id["revenue"]["kind"] == "page"
    assert answer["caveats"] == []  # the caveat is a hit of its own ("revenue")
    limited = json.loads(
        invoke(["search", "total revenue", "--repo", str(built), "--json", "--limit", "3"]).stdout
    )
    assert [(c["page"], c["triggered_by"]) for c in limited["caveats"]] == [
        ("revenue-caveat", [TOTAL])
    ]
    # --kind page and --kind entity each keep their own hits, in their own order.
    only = json.loads(
        invoke(["search", "total revenue", "--repo", str(built), "--json", "--kind", "page"]).stdout
    )
    assert {h["kind"] for h in only["hits"]} == {"page"}
    assert "quarterly-close" not in [h["page"] for h in only["hits"]]
    text = invoke(["search", "total revenue", "--repo", str(built), "--kind", "entity"]).stdout
    assert TOTAL in text and "measure" in text and "sum(amount)" in text
    bad = invoke(["search", "revenue", "--repo", str(built), "--kind", "nope"], code=2)
    assert "nope" in bad.output
    # A user's own page binding the measure is found for that user only.
    alice = json.loads(
        invoke(
            ["search", "total revenue", "--repo", str(built), "--json", "--user", "alice"]
        ).stdout
    )
    assert ("page", "notes") in order(alice)
    assert ("page", "notes") not in order(answer)
    # A page filter keeps entities out of mixed hits.
    tagged = json.loads(
        invoke(["search", "total revenue tag:finance", "--repo", str(built), "--json"]).stdout
    )
    assert {h["kind"] for h in tagged["hits"]} == {"page"}


@pytest.mark.parametrize(
    "query",
    [
        "churn rate",
        "churn rate -ledger",
        '"churn rate"',
        "churn rate tag:finance",
        "churn rate subscr*",
        "Churn Rate status:active",
    ],
)
def test_names_first_with_syntax(built: Path, query: str) -> None:
    with Reader.open(built) as reader:
        hits = reader.search(query, limit=5)["hits"]
    assert [h["page"] for h in hits if h["kind"] == "page"][:2] == ["churn-rate", "subscriptions"]
    # First by its name, not by its score.
    assert hits[0]["score"] < hits[1]["score"]


def test_names_first_does_not_override_exclusions_or_prefixes(built: Path) -> None:
    with Reader.open(built) as reader:
        # An excluded word the named page holds leaves it out.
        excluded = reader.search("churn rate -monthly")["hits"]
        assert [h["page"] for h in excluded if h["kind"] == "page"] == ["subscriptions"]
        # A prefix is not a name: `churn rat*` names no page, the scores decide.
        prefixed = reader.search("churn rat*")["hits"]
        assert [h["page"] for h in prefixed if h["kind"] == "page"][:2] == [
            "subscriptions",
            "churn-rate",
        ]


def test_mcp_search_tool_takes_a_kind(built: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from tests.test_mcp import payload, run

    async def body(session: Any) -> dict[str, Any]:
        tools = await session.list_tools()
        schema = next(t for t in tools.tools if t.name == "search_knowledge").input_schema
        mixed = payload(await session.call_tool("search_knowledge", {"query": "total revenue"}))
        only = payload(
            await session.call_tool(
                "search_knowledge", {"query": "total revenue", "kind": "entity"}
            )
        )
        bad = await session.call_tool("search_knowledge", {"query": "x", "kind": "nope"})
        text = (
            (
                await session.call_tool(
                    "search_knowledge", {"query": "total revenue", "kind": "entity"}
                )
            )
            .content[0]
            .text
        )
        return {"schema": schema, "mixed": mixed, "only": only, "bad": bad, "text": text}

    out = run(["--artifact", str(built)], body)
    assert out["schema"]["properties"]["kind"]["enum"] == ["all", "page", "entity"]
    assert order(out["mixed"])[:2] == [("entity", TOTAL), ("page", "revenue")]
    assert [h["kind"] for h in out["only"]["hits"]] == ["entity", "entity"]
    assert out["bad"].is_error
    assert f"entity {TOTAL} (measure)" in out["text"]
