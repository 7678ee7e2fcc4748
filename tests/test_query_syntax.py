"""The query syntax of `knowl search` (index.query): prefixes, phrases, exclusions, filters,
"did you mean", and hostile queries, on a real git repository, through the CLI and the API."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from knowl_build.artifacts.schema import SearchAnswer
from knowl_build.core.config import Config
from knowl_build.core.errors import UsageError
from knowl_build.index import query
from knowl_build.index.query import MAX_EXPANSIONS, expand, parse
from knowl_build.pipeline.publish import build
from knowl_build.reader import Reader
from knowl_build.reader.queries import scopes_of
from tests.helpers import Project, invoke

CORPUS: dict[str, str | bytes] = {
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/revenue.md": (
        "---\ntitle: Revenue\nsummary: Revenue is net of discounts\ntags: [finance]\n---\n"
        "Revenue is reported net of discounts and before refunds.\n"
    ),
    "knowledge/global/reviews.md": (
        "---\ntitle: Reviews\nsummary: How code reviews work\n---\nEvery change gets a review.\n"
    ),
    "knowledge/global/discounts.md": (
        "---\ntitle: Discounts\nsummary: Discounts of net prices\ntags: [pricing]\n---\n"
        "Discounts are taken off net prices; of discounts net effect unknown.\n"
    ),
    "knowledge/global/margin.md": (
        "---\ntitle: Margin\nsummary: Gross margin\ntags: [finance]\n---\n"
        "Margin is revenue minus cost, draft numbers.\n"
    ),
    "knowledge/global/codes.md": "---\nsummary: Codes\n---\n"
    + " ".join(f"qx{i:03}" for i in range(100))
    + "\n",
    "knowledge/user/bob/plan.md": (
        "---\nsummary: Bob private plan\n---\nThe zanzibarian quokkafication schedule, revzz.\n"
    ),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        proj = Project(tmp_path_factory.mktemp("syntax") / "kb").write(CORPUS)
        proj.commit("corpus")
        result = build(proj.root, Config(rules={"KB202": "off"}))
    assert result.status == "published"
    return proj.root


def pages(answer: SearchAnswer) -> list[str]:
    return [h["page"] for h in answer["hits"]]


def cli_pages(root: Path, query: str, *extra: str) -> list[str]:
    result = invoke(["search", query, "--repo", str(root), "--json", "--limit", "20", *extra])
    return [h["page"] for h in json.loads(result.stdout)["hits"]]


def test_prefix_matches_raw_and_stemmed_terms(built: Path) -> None:
    with Reader.open(built) as reader:
        found = set(pages(reader.search("rev*", limit=20)))
        assert {"revenue", "reviews", "margin"} <= found
        assert "discounts" not in found
        # `revenue` is indexed as its stem `revenu`: the prefix as typed still finds it.
        assert set(pages(reader.search("revenue*", limit=20))) == {"revenue", "margin"}
        assert set(pages(reader.search("revenu*", limit=20))) == {"revenue", "margin"}
        assert pages(reader.search("review*", limit=20)) == ["reviews"]
    assert set(cli_pages(built, "rev*")) == {"revenue", "reviews", "margin"}


def test_prefix_expansions_are_bounded(built: Path) -> None:
    with Reader.open(built) as reader:
        terms = expand(reader.view.searcher, "qx", None)
        # 100 terms begin with `qx`, each in one page: the first 64 by term.
        assert terms == sorted(f"qx{i:03}" for i in range(100))[:MAX_EXPANSIONS]
        assert pages(reader.search("qx*")) == ["codes"]
        # In most of the caller's pages first; bob's words stand in bob's prefixes only.
        assert expand(reader.view.searcher, "rev", scopes_of(None)) == ["revenu", "review"]
        bob = expand(reader.view.searcher, "rev", scopes_of("bob"))
        assert bob == ["revenu", "review", "revzz"]


def test_a_prefix_of_too_many_terms_is_refused(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(query, "MAX_CANDIDATES", 50)
    with Reader.open(built) as reader, pytest.raises(UsageError, match="too many words"):
        reader.search("qx*")


def test_phrase_exact_and_word_order_near_miss(built: Path) -> None:
    with Reader.open(built) as reader:
        # discounts.md holds every word, but never "net of discounts" in this order.
        assert pages(reader.search('"net of discounts"', limit=20)) == ["revenue"]
        assert pages(reader.search('"discounts of net"', limit=20)) == ["discounts"]
        assert pages(reader.search('"of net discounts"', limit=20)) == []
    assert cli_pages(built, '"net of discounts"') == ["revenue"]


def test_exclusion(built: Path) -> None:
    with Reader.open(built) as reader:
        assert "margin" not in pages(reader.search("revenue -draft", limit=20))
        assert "revenue" in pages(reader.search("revenue -draft", limit=20))
        assert pages(reader.search("rev* -review -draft", limit=20)) == ["revenue"]
    assert cli_pages(built, "revenue -draft") == ["revenue"]
    # A query that begins with `-` follows `--`, as any argument of a command line.
    result = invoke(["search", "--repo", str(built), "--", "-draft"], code=2)
    assert "only excludes" in result.stderr
    assert "Traceback" not in result.stderr


def test_combined_and_filters(built: Path) -> None:
    with Reader.open(built) as reader:
        assert pages(reader.search('"net of discounts" rev* -refunds', limit=20)) == []
        assert pages(reader.search('"net prices" tag:pricing', limit=20)) == ["discounts"]
        assert set(pages(reader.search("net tag:finance", limit=20))) == {"revenue"}
        assert pages(reader.search("margin category:fact", limit=20)) == []  # no category
    assert cli_pages(built, "net", "--tag", "pricing") == cli_pages(built, "net tag:pricing")
    result = invoke(["search", "net status:bogus", "--repo", str(built)], code=2)
    assert "not one of" in result.stderr


def test_did_you_mean_is_scoped(built: Path) -> None:
    with Reader.open(built) as reader:
        answer = reader.search("revenoo")
        assert answer["hits"] == []
        assert "revenu" in answer["suggestions"]["revenoo"]
        # bob's private words are suggested to bob, never to anyone else.
        assert "suggestions" not in reader.search("zanzibarion")
        assert "suggestions" not in reader.search("zanzibarion", user="alice")
        mine = reader.search("zanzibarion", user="bob")
        assert mine["hits"] == [] and mine["suggestions"]["zanzibarion"] == ["zanzibarian"]
        assert "suggestions" not in reader.search("revenue")  # hits: no suggestions
    text = invoke(["search", "revenoo", "--repo", str(built)]).stdout
    assert "did you mean" in text and "revenu" in text
    leaked = invoke(["search", "zanzibarion", "--repo", str(built), "--user", "alice"]).stdout
    assert "zanzibar" not in leaked.replace("zanzibarion", "")


def test_same_query_same_order(built: Path) -> None:
    first = invoke(["search", "rev* -draft", "--repo", str(built), "--json"]).stdout
    assert invoke(["search", "rev* -draft", "--repo", str(built), "--json"]).stdout == first


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("x" * 10_000, "at most 1,000"),
        ('"' * 1_000, None),
        ("****", None),
        ('"net of discounts', None),
        ("-", None),
        ("a*", "at least 2"),
        ("-revenue -margin", "only excludes"),
        ("tag:finance", "only filters"),
        ('-"net of"', "cannot be excluded"),
        (" ".join(f"w{i}" for i in range(200)), "more than 64 parts"),
    ],
)
def test_hostile_queries(built: Path, query: str, message: str | None) -> None:
    started = time.monotonic()
    result = invoke(["search", "--repo", str(built), "--", query], code=2 if message else 0)
    assert time.monotonic() - started < 5
    assert "Traceback" not in result.stdout + result.stderr
    if message:
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
        with pytest.raises(UsageError):
            parse(query)


def test_plain_query_unchanged(built: Path) -> None:
    parsed = parse("Revenue net-of discounts")
    assert parsed.plain and parsed.terms == ("revenu", "net", "discount")


def test_stop_words_count_only_beside_fewer_than_two_other_words() -> None:
    assert parse("the revenue of the region").terms == ("revenu", "region")
    assert parse("the revenue").terms == ("the", "revenu")
    assert parse("to be or not to be").terms == ("to", "be", "or", "not")
    # The words of a phrase and a name stay as typed.
    assert parse('"net of discounts" revenue').phrases == (("net", "of", "discount"),)
    assert parse("the revenue of the region").named == ("the", "revenue", "of", "the", "region")


def test_context_takes_the_same_syntax(built: Path) -> None:
    with Reader.open(built) as reader:
        answer = reader.context('"net of discounts"')
        assert [p["page"] for p in answer["pages"]] == ["revenue"]
        with pytest.raises(UsageError, match="only excludes"):
            reader.context("-draft")


def test_mcp_tools_take_the_same_syntax(built: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from tests.test_mcp import payload, run

    async def body(session: Any) -> dict[str, Any]:
        return {
            "phrase": await session.call_tool("search_knowledge", {"query": '"net of discounts"'}),
            "prefix": await session.call_tool("search_knowledge", {"query": "review*"}),
            "near": await session.call_tool("search_knowledge", {"query": "revenoo"}),
            "private": await session.call_tool("search_knowledge", {"query": "zanzibarion"}),
            "refused": await session.call_tool("search_knowledge", {"query": "-draft"}),
            "context": await session.call_tool("get_context", {"question": "rev* -draft"}),
        }

    out = run(["--repo", str(built)], body)
    assert pages(payload(out["phrase"])) == ["revenue"]
    assert pages(payload(out["prefix"])) == ["reviews"]
    assert "revenu" in payload(out["near"])["suggestions"]["revenoo"]
    assert "suggestions" not in payload(out["private"])
    assert out["refused"].is_error and "only excludes" in out["refused"].content[0].text
    assert "margin" not in [p["page"] for p in payload(out["context"])["pages"]]


def test_peers_take_the_same_syntax(built: Path, tmp_path: Path) -> None:
    peer = Project(tmp_path / "billing").write(
        {
            "knowl.toml": "repo_name = 'billing-kb'\n[rules]\nKB202 = 'off'\n",
            "knowledge/global/invoices.md": (
                "---\nsummary: Invoice revenue\nvisibility: workspace\n---\n"
                "Revenue net of discounts, invoiced.\n"
            ),
            "knowledge/global/drafts.md": (
                "---\nsummary: Draft revenue\nvisibility: workspace\n---\nRevenue, a draft.\n"
            ),
            "knowledge/global/internal.md": (
                "---\nsummary: Internal revenue\n---\nRevenue net of discounts, internal.\n"
            ),
        }
    )
    peer.commit()
    invoke(["build", "--repo", str(peer.root)])
    with Reader.open(built, peers=[peer.root]) as reader:
        found = {(h["repo"], h["page"]) for h in reader.search("revenu* -draft", limit=20)["hits"]}
        phrase = reader.search('"net of discounts"', limit=20)["hits"]
    assert ("billing-kb", "invoices") in found and ("billing-kb", "drafts") not in found
    assert ("billing-kb", "internal") not in found  # not shared with the workspace
    assert {(h["repo"], h["page"]) for h in phrase} == {
        ("kb", "revenue"),
        ("billing-kb", "invoices"),
    }


@pytest.mark.parametrize("command", ["search", "context"])
@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_a_blank_query_is_a_usage_error(tmp_path: Path, command: str, query: str) -> None:
    proj = Project(tmp_path / "kb").write({"knowledge/global/a.md": "# A\n\nRevenue.\n"})
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    result = invoke([command, query, "--repo", str(proj.root)], code=2)
    assert "is blank: give the words to look for" in result.stderr
    assert "Traceback" not in result.stderr
