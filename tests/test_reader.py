"""The reader, from artifacts alone: search, show, traverse, scopes, caveats, federation."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from knowl_build.artifacts.layout import RECORDS, file_table
from knowl_build.artifacts.schema import SearchAnswer
from knowl_build.core.config import Config
from knowl_build.core.errors import UsageError
from knowl_build.pipeline.publish import build
from knowl_build.reader import Reader
from tests.helpers import SEMANTICS, Project, dump_json, invoke

KB202_OFF = "[rules]\nKB202 = 'off'\n"

CORPUS: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": KB202_OFF,
    "knowledge/global/revenue.md": (
        "---\ntitle: Revenue\nsummary: Revenue is the sum of completed orders\ntags: [finance]\n"
        "sl_refs: [shop_pg.orders.total_revenue]\nrefs: [glossary]\n---\n"
        "Revenue counts completed orders: `<< sl:shop_pg.orders.total_revenue.expr >>`.\n"
    ),
    "knowledge/global/refunds-caveat.md": (
        "---\nsummary: Refunds are not subtracted from revenue\nusage_mode: caveat\n"
        "sl_refs: [shop_pg.orders.total_revenue]\n---\nRefunds arrive later.\n"
    ),
    "knowledge/global/status-caveat.md": (
        "---\nsummary: Status values changed in 2024\nusage_mode: caveat\nsl_refs: [shop_pg.orders.status]\n---\n"
        "Old rows use other values.\n"
    ),
    "knowledge/global/glossary.md": "---\nsummary: Terms used in finance\n---\nRevenue, margin, orders.\n",
    "knowledge/global/old-revenue.md": (
        "---\nsummary: Revenue used to include refunds\nstatus: superseded\nsuperseded_by: revenue\n---\n"
        "Revenue, the old way.\n"
    ),
    "knowledge/global/shared.md": (
        "---\nsummary: Workspace-wide revenue guidance\nvisibility: workspace\n---\nRevenue guidance.\n"
    ),
    # alice has a page with a global page's id: it is an annotation, never a hit of its own.
    "knowledge/user/alice/glossary.md": "---\nsummary: Alice's margin notes\n---\nMargin zebra notes.\n",
    "knowledge/user/alice/notebook.md": (
        "---\nsummary: Alice private revenue notebook\nsl_refs: [shop_pg.orders.total_revenue]\n---\n"
        "Revenue checks. See [[revenue]].\n"
    ),
    "knowledge/user/alice/my-caveat.md": (
        "---\nsummary: Alice's own caveat about revenue\nusage_mode: caveat\n"
        "sl_refs: [shop_pg.orders.total_revenue]\n---\nMine.\n"
    ),
    "knowledge/user/bob/secret-plan.md": "---\nsummary: Bob private revenue plan\n---\nRevenue zebra plan.\n",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")  # lexical artifacts, with or without the extra
        proj = Project(tmp_path_factory.mktemp("reader") / "kb").write(CORPUS)
        proj.commit("corpus")
        result = build(proj.root, Config(rules={"KB202": "off"}))
    assert result.status == "published"
    return proj.root


def ids(answer: SearchAnswer) -> list[tuple[str, str]]:
    return [(h["page"], h["scope"]) for h in answer["hits"]]


def test_search_scopes_and_strict_additive(built: Path) -> None:
    with Reader.open(built) as reader:
        anonymous = reader.search("revenue", limit=20)
        assert all(scope == "global" for _, scope in ids(anonymous))
        assert ("old-revenue", "global") not in ids(anonymous)  # only active pages by default
        alice = reader.search("revenue", user="alice", limit=20)
        assert ("notebook", "user:alice") in ids(alice)
        assert not any(scope == "user:bob" for _, scope in ids(alice))
        # "zebra" matches only alice's glossary annotation (and bob's page, invisible to her):
        # the global glossary is ranked by her page's score and carries the annotation.
        zebra = reader.search("zebra", user="alice")
        assert ids(zebra) == [("glossary", "global")]
        assert zebra["hits"][0]["annotations"] == [{"page": "glossary", "scope": "user:alice"}]
        assert ids(reader.search("zebra")) == []
        assert ids(reader.search("zebra", user="bob")) == [("secret-plan", "user:bob")]


def test_search_answer_shape_filters_and_caveats(built: Path) -> None:
    with Reader.open(built) as reader:
        answer = reader.search("completed orders", user="alice")
    assert set(answer) == {"query", "user", "build", "lexical_only", "hits", "caveats"}
    assert answer["lexical_only"] is True and answer["user"] == "alice"
    hit = answer["hits"][0]
    assert set(hit) == {
        "kind",
        "page",
        "scope",
        "repo",
        "title",
        "summary",
        "usage_mode",
        "category",
        "status",
        "score",
        "matched_on",
        "sl_refs",
        "freshness",
        "drift_flag",
        "annotations",
        "section",
        "snippet",
    }
    assert (hit["page"], hit["matched_on"], hit["drift_flag"]) == ("revenue", ["lexical"], False)
    # Caveats bound to the hit's measure ride along, alice's own included, each naming the
    # entities it shares with the hits (most entities first, then by id).
    assert [(c["page"], c["triggered_by"]) for c in answer["caveats"]] == [
        ("my-caveat", ["shop_pg.orders.total_revenue"]),
        ("refunds-caveat", ["shop_pg.orders.total_revenue"]),
    ]
    with Reader.open(built) as reader:
        assert [c["page"] for c in reader.search("completed orders")["caveats"]] == [
            "refunds-caveat"
        ]
        assert ids(reader.search("revenue", status="superseded")) == [("old-revenue", "global")]
        assert ids(reader.search("revenue", usage_mode="caveat", user="alice", limit=9)) == [
            ("my-caveat", "user:alice"),
            ("refunds-caveat", "global"),
        ]
        assert ids(reader.search("revenue", tags=["finance"])) == [("revenue", "global")]
        assert ids(reader.search("", user="alice")) == []
        # Quotes, parentheses and operators are plain text, never an error.
        assert ids(reader.search('"(revenue)" ** ~~ + -', limit=9)) == ids(
            reader.search("revenue", limit=9)
        )
        assert len(reader.search("revenue", limit=2)["hits"]) == 2


def test_same_query_same_bytes(built: Path) -> None:
    args = ["search", "revenue orders", "--repo", str(built), "--json", "--user", "alice"]
    first = invoke([*args, "--kind", "page"]).stdout
    second = invoke([*args, "--kind", "page"]).stdout
    assert first == second
    hits = json.loads(first)["hits"]
    order = [(-h["score"], h["page"], h["scope"]) for h in hits]
    assert order == sorted(order)


def test_show(built: Path) -> None:
    with Reader.open(built) as reader:
        page = reader.show("revenue", user="alice")
        assert page["page_id"] == "revenue" and page["body"].startswith(
            "Revenue counts completed orders: `sum(amount)`"
        )
        assert page["meta"] == {
            "provenance": "inferred",
            "last_validated_at": None,
            "drift_flag": False,
            "frozen": False,
        }
        assert {
            "page": "notebook",
            "scope": "user:alice",
            "kind": "link",
            "path": "knowledge/user/alice/notebook.md",
        } in page["backlinks"]
        assert {
            "page": "old-revenue",
            "scope": "global",
            "kind": "superseded_by",
            "path": "knowledge/global/old-revenue.md",
        } in page["backlinks"]
        assert [c["page"] for c in page["caveats"]] == ["my-caveat", "refunds-caveat"]
        anonymous = reader.show("revenue")
        assert not any(b["scope"].startswith("user:") for b in anonymous["backlinks"])
        assert reader.show("glossary", user="alice")["annotations"] == [
            {"page": "glossary", "scope": "user:alice"}
        ]
        assert reader.show("old-revenue")["superseded_by"] == "revenue"
        assert reader.show("user:alice:notebook", user="alice")["scope"] == "user:alice"
        assert reader.show("notebook", user="alice")["scope"] == "user:alice"


@pytest.mark.parametrize(
    "args",
    [
        ["show", "secret-plan", "--user", "alice"],
        ["show", "user:bob:secret-plan", "--user", "alice"],
        ["show", "nowhere", "--user", "alice"],
    ],
)
def test_not_visible_is_not_found_with_one_message(built: Path, args: list[str]) -> None:
    result = invoke([*args, "--repo", str(built)], code=1)
    assert result.stderr.strip() == f"knowl: error: no page '{args[1]}' visible to alice"


def test_traverse(built: Path) -> None:
    with Reader.open(built) as reader:
        walk = reader.traverse(["notebook"], user="alice", depth=2)
    assert walk["seeds"] == ["notebook"]
    pages = {(p["page"], p["scope"]): p for p in walk["pages"]}
    assert pages[("notebook", "user:alice")] == {
        "page": "notebook",
        "scope": "user:alice",
        "depth": 0,
        "via": None,
    }
    assert pages[("revenue", "global")]["via"] == {"from": "notebook", "kind": "link"}
    assert pages[("glossary", "global")]["depth"] == 2
    via = pages[("refunds-caveat", "global")]["via"]
    assert via is not None and via["kind"] == "sl_ref"
    assert ("my-caveat", "user:alice") in pages
    assert walk["entities"] == [
        {
            "entity": "shop_pg.orders.total_revenue",
            "kind": "measure",
            "fingerprint": "sha256:6193c9db63810d49d8c08c18bacb053c943f8f0c1ea8d0fc3dee16ecc0cd7b34",
            "expr": "sum(amount)",
        }
    ]
    with Reader.open(built) as reader:
        capped = reader.traverse(["revenue"], depth=5, max_nodes=2)
        assert len(capped["pages"]) == 2
        assert [p["depth"] for p in reader.traverse(["revenue"], depth=0)["pages"]] == [0]
    result = invoke(["traverse", "revenue", "--repo", str(built)])
    assert "refunds-caveat" in result.stdout


def test_federation(built: Path, tmp_path: Path) -> None:
    peer = Project(tmp_path / "billing").write(
        {
            "knowl.toml": "repo_name = 'billing-kb'\n" + KB202_OFF,
            "knowledge/global/invoices.md": "---\nsummary: Invoice revenue\nvisibility: workspace\n---\nRevenue invoices.\n",
            "knowledge/global/internal.md": "---\nsummary: Internal revenue only\n---\nRevenue, internal.\n",
            "knowledge/user/carol/mine.md": "---\nsummary: Carol revenue\nvisibility: workspace\n---\nRevenue.\n",
        }
    )
    peer.commit()
    invoke(["build", "--repo", str(peer.root)])
    with Reader.open(built, peers=[peer.root]) as reader:
        answer = reader.search("revenue", limit=10)
    repos = {(h["repo"], h["page"]) for h in answer["hits"]}
    assert ("billing-kb", "invoices") in repos
    assert ("billing-kb", "internal") not in repos and ("billing-kb", "mine") not in repos
    assert answer["hits"][0]["score"] == pytest.approx(1 / 60)
    scores = [h["score"] for h in answer["hits"]]
    assert scores == sorted(scores, reverse=True)
    cli = json.loads(
        invoke(
            ["search", "revenue", "--repo", str(built), "--peer", str(peer.root), "--json"]
        ).stdout
    )
    assert any(h["repo"] == "billing-kb" for h in cli["hits"])


def test_reader_refuses_corrupt_truncated_or_incompatible_artifacts(
    built: Path, tmp_path: Path
) -> None:
    source = built / ".knowl" / "build" / (built / ".knowl/build/CURRENT").read_text().strip()
    cases = {}
    for name in ("truncated", "foreign", "missing"):
        copy = tmp_path / name
        shutil.copytree(source, copy)
        cases[name] = copy
    pages = cases["truncated"] / RECORDS
    pages.write_bytes(pages.read_bytes()[:100])
    manifest = json.loads((cases["foreign"] / "manifest.json").read_text())
    manifest["schema_version"] = "3.0"
    (cases["foreign"] / "manifest.json").write_bytes(dump_json(manifest))
    (cases["missing"] / "catalog.json").unlink()
    for name, folder in cases.items():
        result = invoke(["search", "revenue", "--artifact", str(folder)], code=2)
        assert result.stderr.count("\n") == 1, (name, result.stderr)
        assert "Traceback" not in result.output
    assert invoke(["search", "x", "--repo", str(tmp_path)], code=2).stderr.startswith(
        "knowl: error: no published build"
    )


# Whoosh does not close the file it was reading when the unpickler refuses it.
@pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)
def test_crafted_pickle_in_an_index_is_refused_not_run(built: Path, tmp_path: Path) -> None:
    source = built / ".knowl" / "build" / (built / ".knowl/build/CURRENT").read_text().strip()
    evil = tmp_path / "evil"
    shutil.copytree(source, evil)
    marker = tmp_path / "pwned"

    class Boom:
        def __reduce__(self) -> tuple[object, ...]:
            return (subprocess.call, (["touch", str(marker)],))

    toc = next((evil / "index").glob("_MAIN_*.toc"))
    toc.write_bytes(toc.read_bytes()[:8] + pickle.dumps(Boom(), protocol=2))
    manifest = json.loads((evil / "manifest.json").read_text())
    manifest["files"] = file_table(evil)
    manifest["sizes"] = {
        n: (evil / n).stat().st_size for n in manifest["files"] if n.startswith("index/")
    }
    (evil / "manifest.json").write_bytes(dump_json(manifest))
    result = invoke(["search", "revenue", "--artifact", str(evil)], code=2)
    assert not marker.exists()
    assert "knowl: error:" in result.stderr and "Traceback" not in result.output


def test_reader_import_does_not_load_the_pipeline(built: Path) -> None:
    code = (
        "import sys, json\n"
        "from knowl_build.reader import Reader\n"
        f"r = Reader.open({str(built)!r})\n"
        "r.search('revenue'); r.show('revenue'); r.traverse(['revenue'])\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('networkx', 'git') or "
        "m.startswith(('knowl_build.pipeline', 'knowl_build.history', 'knowl_build.rules', 'knowl_build.writes'))]\n"
        "print(json.dumps(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


CANONIC_KB: dict[str, str | bytes] = {
    "semantics/warehouse/orders.yaml": (
        "name: orders\nconnection: warehouse\ntable: public.orders\ncolumns:\n  - {name: amount}\n"
        "measures:\n  - {name: revenue, expr: sum(amount)}\n"
    ),
    "semantics/warehouse/subscriptions.yaml": (
        "name: subscriptions\nconnection: warehouse\ntable: public.subs\ncolumns:\n  - {name: id}\n"
        "measures:\n  - {name: churned, expr: count(*)}\n"
    ),
    "knowledge/global/revenue.md": "---\nsummary: How revenue is defined\nsl_refs: [warehouse.orders.revenue]\n"
    "usage_mode: definition\n---\n# Revenue\n\nRevenue is {{ sl:warehouse.orders.revenue.expr }}.\n",
    "knowledge/global/churn.md": "---\nsummary: Churn rate definition\nsl_refs: [warehouse.subscriptions.churned]\n"
    "usage_mode: definition\n---\n# Churn\n\nSubscriptions cancelled in the month.\n",
    "knowledge/global/fiscal-year.md": "---\nsummary: The fiscal year starts in February\n---\n# Fiscal year\n",
    "knowledge/global/returns.md": "---\nsummary: Returns are not subtracted\nusage_mode: caveat\n"
    "sl_refs: [warehouse.orders.revenue]\n---\nReturns come later.\n",
}


@pytest.mark.parametrize(
    "query, first",
    [
        ("revenue", "revenue"),
        ("how is revenue defined", "revenue"),
        ("churn rate", "churn"),
        ("fiscal year", "fiscal-year"),
        ("returns", "returns"),
    ],
)
def test_canonic_repository_answers_obvious_queries(
    tmp_path_factory: pytest.TempPathFactory, query: str, first: str
) -> None:
    root = tmp_path_factory.getbasetemp() / "canonic-kb"
    if not (root / ".knowl" / "build" / "CURRENT").exists():  # KNOWL_EMBEDDINGS=off here
        proj = Project(root).write(CANONIC_KB)
        proj.commit()
        build(root, Config(rules={"KB202": "off"}))
    with Reader.open(root) as reader:
        answer = reader.search(query)
    assert answer["hits"][0]["page"] == first
    if first == "revenue":
        assert [c["page"] for c in answer["caveats"]] == ["returns"]


@pytest.mark.parametrize("limit", [0, -1, 2.5, True])
def test_a_limit_that_is_no_count_of_hits_is_refused(built: Path, limit: Any) -> None:
    with Reader.open(built) as reader:
        with pytest.raises(UsageError, match="limit must be a whole number of at least 1"):
            reader.search("revenue", limit=limit)
        with pytest.raises(UsageError, match="limit must be a whole number of at least 1"):
            reader.context("revenue", limit=limit)


def test_a_misspelt_page_suggests_the_nearest_visible_one(built: Path) -> None:
    result = invoke(["show", "revenu", "--repo", str(built)], code=1)
    assert "no page 'revenu' visible to anonymous; did you mean 'revenue'?" in result.stderr
    # Another user's page is never suggested: it answers as a page that does not exist.
    hidden = invoke(["show", "secret-pla", "--repo", str(built), "--user", "alice"], code=1)
    assert "secret-plan" not in hidden.stderr
    own = invoke(["show", "notebok", "--repo", str(built), "--user", "alice"], code=1)
    assert "did you mean 'notebook'?" in own.stderr
