"""A user's pages reach no one else, not even through a score (SPEC 6.2, issue 10).

BM25 statistics (the document count, each term's document frequency, the average field
lengths) were computed over every live document, so bob's score for a global page was 0.307
or 0.688 depending on whether one of alice's pages held the query term: an oracle for the
words of her private pages. The reader now ranks with the statistics of the scopes its caller
sees: global pages and the caller's own (anonymous callers and peers: global pages only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowl_build.core.config import Config
from knowl_build.pipeline.publish import build
from knowl_build.reader import Reader
from tests.helpers import SEMANTICS, Project, dump_json, invoke, search
from tests.tamper import rehash, tampered

CONFIG = Config(rules={"KB202": "off"})
WORDS = ["merger", "revenue", "churn", "acme", "plan", "orders", "refund", "margin"]
QUERIES = ["merger", "revenue churn", "acme plan orders refund margin", "p0 p1", "total_revenue"]
IDS = ["p0", "p1", "p2", "p3"]
BOOSTS = {"summary": 3.0, "tags": 2.0, "title": 2.0, "body": 1.0}


def page(summary: list[str], body: list[str], caveat: bool, bound: bool) -> str:
    lines = [f"summary: {' '.join(summary)}", f"usage_mode: {'caveat' if caveat else 'reference'}"]
    if bound:
        lines.append("sl_refs: [shop_pg.orders.total_revenue]")
    return "---\n" + "\n".join(lines) + "\n---\n" + " ".join(body) + "\n"


PAGES = st.builds(
    page,
    summary=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    body=st.lists(st.sampled_from(WORDS), max_size=12),
    caveat=st.booleans(),
    bound=st.booleans(),
)


def files(scope: str, pages: dict[str, str]) -> dict[str, str | bytes]:
    folder = "knowledge/global" if scope == "global" else f"knowledge/user/{scope}"
    return {f"{folder}/{page_id}.md": text for page_id, text in pages.items()}


def project(root: Path, *parts: dict[str, str | bytes]) -> Project:
    proj = Project(root)
    proj.write({**SEMANTICS, "knowl.toml": "[rules]\nKB202 = 'off'\n"})
    for part in parts:
        proj.write(part)
    proj.commit("pages")
    result = build(root, CONFIG, allow_errors=True)
    assert result.status == "published"
    return proj


def answers(root: Path, *users: str | None) -> dict[tuple[str | None, str], Any]:
    """Every query's hits (with scores) and caveats, for each user: all an answer depends on
    besides the build's id."""
    found = {}
    with Reader.open(root) as reader:
        for user in users:
            for query in QUERIES:
                answer = reader.search(query, user=user, limit=20, status="all")
                found[(user, query)] = (answer["hits"], answer["caveats"])
    return found


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    shared=st.dictionaries(st.sampled_from(IDS), PAGES, min_size=1, max_size=4),
    bobs=st.dictionaries(st.sampled_from(IDS), PAGES, max_size=3),
    others=st.dictionaries(
        st.tuples(st.sampled_from(["alice", "carol"]), st.sampled_from(IDS)),
        PAGES,
        min_size=1,
        max_size=4,
    ),
)
def test_bobs_answers_do_not_depend_on_other_users_pages(
    tmp_path_factory: pytest.TempPathFactory,
    shared: dict[str, str],
    bobs: dict[str, str],
    others: dict[tuple[str, str], str],
) -> None:
    base = tmp_path_factory.mktemp("isolation")
    theirs: dict[str, str | bytes] = {}
    for (owner, page_id), text in others.items():
        theirs.update(files(owner, {page_id: text}))
    mine = [files("global", shared), files("bob", bobs)]

    without = project(base / "without" / "kb", *mine)
    with_them = project(base / "with" / "kb", *mine, theirs)
    expected = answers(without.root, "bob", None)
    assert answers(with_them.root, "bob", None) == expected

    # Incrementally: their pages deleted from an index that held them (deleted documents in
    # its segments), and added to one that did not (new segments).
    with_them.remove(*theirs).commit("theirs gone")
    assert build(with_them.root, CONFIG, allow_errors=True).incremental
    assert answers(with_them.root, "bob", None) == expected
    without.write(theirs).commit("theirs added")
    assert build(without.root, CONFIG, allow_errors=True).incremental
    assert answers(without.root, "bob", None) == expected


CORPUS: dict[str, str | bytes] = {
    "knowledge/global/pub.md": "---\nsummary: s\n---\nmerger plans\n",
    "knowledge/global/other.md": "---\nsummary: quarterly numbers\n---\nrevenue and churn\n",
    "knowledge/user/bob/notes.md": "---\nsummary: bob notes\n---\nmerger notes, revenue\n",
}
ALICE: dict[str, str | bytes] = {
    "knowledge/user/alice/p.md": "---\nsummary: s\n---\nsecret merger with ACME\n",
    "knowledge/user/alice/q.md": "---\nsummary: merger merger\n---\nmerger merger merger\n",
}


def test_the_red_teams_oracle_is_closed(tmp_path: Path) -> None:
    """poc_score_oracle.sh: bob's score for the global page was 0.307 without alice's page
    and 0.688 with it."""
    scores = []
    for name, extra in (("without", {}), ("with", ALICE)):
        root = project(tmp_path / name / "kb", CORPUS, extra).root
        out = invoke(["search", "merger", "--user", "bob", "--json", "--repo", str(root)]).stdout
        scores.append([(h["page"], h["score"]) for h in json.loads(out)["hits"]])
    assert scores[0] == scores[1]
    assert {page for page, _score in scores[0]} == {"pub", "notes"}


def test_each_caller_ranks_with_the_statistics_of_what_it_sees(tmp_path: Path) -> None:
    root = project(tmp_path / "kb", CORPUS, ALICE).root
    out = root / ".knowl" / "build"
    folder = out / (out / "CURRENT").read_text().strip()
    stats = json.loads((folder / "index" / "stats.json").read_bytes())
    assert {s: v["doc_count"] for s, v in stats["scopes"].items()} == {
        "global": 2,
        "user:alice": 2,
        "user:bob": 1,
    }
    # The index alone, for the global scope: the same as an index of the global pages alone.
    alone = project(tmp_path / "alone" / "kb", {k: v for k, v in CORPUS.items() if "global" in k})
    alone_out = alone.root / ".knowl" / "build"
    alone_folder = alone_out / (alone_out / "CURRENT").read_text().strip()
    for query in QUERIES:
        assert search(folder / "index", query, BOOSTS, scopes={"global"}) == search(
            alone_folder / "index", query, BOOSTS
        )
    # alice's view counts her pages: her score for the shared page differs from bob's.
    with Reader.open(root) as reader:
        alice = {h["page"]: h["score"] for h in reader.search("merger", user="alice")["hits"]}
        bob = {h["page"]: h["score"] for h in reader.search("merger", user="bob")["hits"]}
        anonymous = {h["page"]: h["score"] for h in reader.search("merger")["hits"]}
    assert alice["pub"] != bob["pub"] != anonymous["pub"]
    assert set(alice) == {"pub", "p", "q"} and set(bob) == {"pub", "notes"}


def test_a_peer_ranks_its_global_pages_with_global_statistics(tmp_path: Path) -> None:
    local = project(tmp_path / "local" / "kb", CORPUS).root
    peers = {}
    for name, extra in (("plain", {}), ("with-users", ALICE)):
        peer = Project(tmp_path / name / "billing")
        peer.write({"knowl.toml": "repo_name = 'billing'\n[rules]\nKB202 = 'off'\n", **SEMANTICS})
        peer.write(
            {
                "knowledge/global/a.md": "---\nsummary: merger\nvisibility: workspace\n---\nmerger\n",
                "knowledge/global/b.md": "---\nsummary: plan\nvisibility: workspace\n---\nmerger plan merger\n",
                **extra,
            }
        )
        peer.commit()
        build(peer.root, CONFIG, allow_errors=True)
        with Reader.open(peer.root) as reader:
            peers[name] = reader.search("merger", limit=10)["hits"]
        with Reader.open(local, peers=[peer.root]) as reader:
            peers[name + "-fused"] = reader.search("merger", user="bob", limit=10)["hits"]
    assert peers["plain"] == peers["with-users"]
    assert peers["plain-fused"] == peers["with-users-fused"]


def test_an_artifact_without_scope_statistics_ranks_the_same(tmp_path: Path) -> None:
    """Artifacts written before stats.json had `scopes`: the reader adds them up itself."""
    root = project(tmp_path / "kb", CORPUS, ALICE).root
    out = root / ".knowl" / "build"
    folder = out / (out / "CURRENT").read_text().strip()

    def older(copy: Path) -> None:
        path = copy / "index" / "stats.json"
        stats = json.loads(path.read_bytes())
        del stats["scopes"]
        path.write_bytes(dump_json(stats))

    old = tampered(folder, tmp_path / "old", older)
    rehash(old)
    for user in ("bob", "alice", None):
        for query in QUERIES:
            with Reader.open(folder) as new_reader, Reader.open(old) as old_reader:
                assert (
                    new_reader.search(query, user=user)["hits"]
                    == old_reader.search(query, user=user)["hits"]
                )


def test_the_vector_arm_ranks_only_what_the_caller_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With vectors, the fused ranking is by rank: another user's pages must not take ranks
    either (cosines stand in for the embeddings extra, which may not be installed)."""
    from knowl_build.reader.view import ArtifactView

    def cosines(store: ArtifactView, query: str) -> dict[str, float]:
        return {page.key: 0.9 - 0.1 * (len(page.key) % 7) for page in store.pages}

    monkeypatch.setattr(ArtifactView, "similarities", cosines)
    found = []
    for name, extra in (("without", {}), ("with", ALICE)):
        root = project(tmp_path / name / "kb", CORPUS, extra).root
        with Reader.open(root) as reader:
            answer = reader.search("merger", user="bob", limit=10)
        assert answer["lexical_only"] is False
        found.append(answer["hits"])
    assert found[0] == found[1]
    assert all(h["scope"] in ("global", "user:bob") for h in found[0])


def test_a_posting_block_out_of_order_is_refused() -> None:
    """A reader tells whether a block holds a document its caller may not see from the
    block's first and last documents: the full validation makes sure they bound it."""
    from knowl_build.index import postings, unpickler, verify

    verify._check_postings([1, 2, 5], (1.0, 1.0, 1.0), 9)
    for ids in ([5, 1, 2], [1, 7, 5], [2, 1]):
        with pytest.raises(unpickler.BadIndex, match="out of order"):
            verify._check_postings(ids, (1.0,) * len(ids), 9)
    mask = postings.Mask(10, frozenset({3, 4, 9}))
    assert [mask.hides(a, b) for a, b in ((0, 2), (0, 3), (5, 8), (4, 4), (8, 9), (10, 12))] == [
        False,
        True,
        False,
        True,
        True,
        False,
    ]
