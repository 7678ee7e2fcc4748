"""Small truths of the reader (issue 13, points 3, 7, 8 and 9), on real git repositories.

- A page name several pages share is asked, never guessed: `show`, `timeline`, `traverse`,
  `show --at`, the writes and the MCP tools list the pages with their paths (exit 1, or a
  tool error), and the page's path under its scope folder names one.
- A caveat's `triggered_by` names the entities it shares with the hits (Canonic's retrieval),
  most entities first, then by id.
- `traverse` walks a page's refs and links as one sorted list (Canonic's order), then the
  caveats about its entities, and says when it stops at its node limit.
- Tables never split an id; a page with no title shows its summary; dates say their zone;
  text output ends with a line break; `store` accepts a body of exactly `max_body_chars`.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from knowl_build.core.errors import AmbiguousPage
from knowl_build.output import text
from knowl_build.reader import Reader
from tests.helpers import SEMANTICS, Project, invoke

G = "knowledge/global"
A = "knowledge/user/alice"

VAULT: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[links]\nresolution = \"obsidian\"\n[rules]\nKB202 = 'off'\n",
    f"{G}/Alpha/Setup.md": "---\nsummary: Alpha setup\n---\n# Alpha setup\n\nSee [[Home]].\n",
    f"{G}/Bravo/Setup.md": "---\nsummary: Bravo setup\n---\n# Bravo setup\n",
    f"{G}/Home.md": "---\nsummary: Start here\n---\n# Home\n\n[[Alpha/Setup]], [[Revenue]].\n",
    f"{G}/Finance/Revenue.md": "---\nsummary: What revenue means\n---\n# Revenue\n",
    f"{A}/a/Note.md": "---\nsummary: Alice's first note\n---\n# Note A\n",
    f"{A}/b/Note.md": "---\nsummary: Alice's second note\n---\n# Note B\n",
}

SETUP_PAGES = (
    "'Alpha/Setup' (knowledge/global/Alpha/Setup.md), "
    "'Bravo/Setup' (knowledge/global/Bravo/Setup.md)"
)


def ambiguous(ref: str, user: str, listed: str, scope: str = "global") -> str:
    first = re.match(r"'([^']*)'", listed)
    assert first is not None
    return (
        f"knowl: error: page name '{ref}' is ambiguous for {user}: 2 pages of the {scope} "
        f"scope have it: {listed}; name one by its path under the scope folder, "
        f"e.g. '{first.group(1)}'"
    )


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", "1780000000")
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        proj = Project(tmp_path_factory.mktemp("truths") / "vault").write(VAULT)
        proj.commit("vault")
        invoke(["build", "--repo", str(proj.root)])
    return proj.root


def as_json(args: list[str], code: int = 0) -> Any:
    return json.loads(invoke([*args, "--json"], code=code).stdout)


# --- 3. ambiguous names are asked, not guessed --------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["show", "Setup"],
        ["show", "global:Setup"],
        ["traverse", "Setup"],
        ["traverse", "Home", "Setup"],
        ["timeline", "Setup"],
        ["show", "Setup", "--at", "HEAD"],
    ],
)
def test_a_shared_name_is_listed_with_paths_not_guessed(vault: Path, args: list[str]) -> None:
    result = invoke([*args, "--repo", str(vault)], code=1)
    ref = next(a for a in args if "Setup" in a)
    listed = SETUP_PAGES.replace("'Alpha", f"'{ref[:-5]}Alpha").replace(
        "'Bravo", f"'{ref[:-5]}Bravo"
    )
    assert result.stderr.strip() == ambiguous(ref, "anonymous", listed)
    assert result.stdout == ""


def test_the_path_under_the_scope_folder_names_one(vault: Path) -> None:
    repo = ["--repo", str(vault)]
    alpha = as_json(["show", "Alpha/Setup", *repo])
    assert (alpha["path"], alpha["summary"]) == (f"{G}/Alpha/Setup.md", "Alpha setup")
    assert [b["path"] for b in alpha["backlinks"]] == [f"{G}/Home.md"]
    bravo = as_json(["show", "global:Bravo/Setup", *repo])
    assert (bravo["path"], bravo["backlinks"]) == (f"{G}/Bravo/Setup.md", [])
    # A page whose id no other page has is named by its path too, and by its id alone.
    assert as_json(["show", "Finance/Revenue", *repo])["path"] == f"{G}/Finance/Revenue.md"
    assert as_json(["show", "Revenue", *repo])["path"] == f"{G}/Finance/Revenue.md"
    walk = as_json(["traverse", "Alpha/Setup", "--depth", "0", *repo])
    assert walk["pages"] == [{"page": "Setup", "scope": "global", "depth": 0, "via": None}]
    timeline = as_json(["timeline", "Bravo/Setup", *repo])
    assert [v["path"] for v in timeline["versions"]] == [f"{G}/Bravo/Setup.md"]
    at = as_json(["show", "Bravo/Setup", "--at", "HEAD", *repo])
    assert at["path"] == f"{G}/Bravo/Setup.md"
    # A path that is no page's is not found, with the one message of SPEC 6.4.
    missing = invoke(["show", "Charlie/Setup", *repo], code=1)
    assert missing.stderr.strip() == "knowl: error: no page 'Charlie/Setup' visible to anonymous"


def test_a_users_shared_name_is_asked_only_of_that_user(vault: Path) -> None:
    repo = ["--repo", str(vault)]
    result = invoke(["show", "Note", "--user", "alice", *repo], code=1)
    listed = "'a/Note' (knowledge/user/alice/a/Note.md), 'b/Note' (knowledge/user/alice/b/Note.md)"
    assert result.stderr.strip() == ambiguous("Note", "alice", listed, "user:alice")
    qualified = invoke(["show", "user:alice:Note", "--user", "alice", *repo], code=1)
    assert "'user:alice:a/Note' (knowledge/user/alice/a/Note.md)" in qualified.stderr
    assert as_json(["show", "b/Note", "--user", "alice", *repo])["summary"] == (
        "Alice's second note"
    )
    # Another user's pages are never listed: for bob the name names nothing.
    for ref in ("Note", "user:alice:Note", "a/Note"):
        hidden = invoke(["show", ref, "--user", "bob", *repo], code=1)
        assert hidden.stderr.strip() == f"knowl: error: no page '{ref}' visible to bob"


def test_the_library_and_the_writes_ask_too(vault: Path, tmp_path: Path) -> None:
    with Reader.open(vault) as reader:
        with pytest.raises(AmbiguousPage, match="Bravo/Setup"):
            reader.show("Setup")
        assert reader.show("Alpha/Setup")["path"] == f"{G}/Alpha/Setup.md"
    proj = Project(tmp_path / "writes").write(VAULT)
    proj.commit("vault")
    repo = ["--repo", str(proj.root)]
    refused = invoke(["supersede", "Setup", "Home", *repo], code=1)
    assert refused.stderr.strip() == ambiguous("Setup", "anonymous", SETUP_PAGES)
    invoke(["review", "Bravo/Setup", *repo])
    assert "last_validated_at" in (proj.root / G / "Bravo/Setup.md").read_text(encoding="utf-8")
    assert "last_validated_at" not in (proj.root / G / "Alpha/Setup.md").read_text(encoding="utf-8")


def test_mcp_tools_answer_a_shared_name_with_a_tool_error(vault: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    # Imported here: tests.test_mcp skips itself as a module without the mcp extra.
    from tests.test_mcp import payload, run

    async def body(session: Any) -> dict[str, Any]:
        return {
            "read": await session.call_tool("read_knowledge_page", {"page": "Setup"}),
            "walk": await session.call_tool("traverse_knowledge", {"pages": ["Setup"]}),
            "timeline": await session.call_tool("knowledge_timeline", {"page": "Setup"}),
            "one": payload(await session.call_tool("read_knowledge_page", {"page": "Bravo/Setup"})),
            "capped": payload(
                await session.call_tool(
                    "traverse_knowledge", {"pages": ["Home"], "depth": 1, "max_nodes": 2}
                )
            ),
        }

    out = run(["--repo", str(vault)], body)
    message = ambiguous("Setup", "anonymous", SETUP_PAGES).removeprefix("knowl: error: ")
    for tool in ("read", "walk", "timeline"):
        assert out[tool].is_error and out[tool].content[0].text.endswith(f": {message}")
    assert out["one"]["path"] == f"{G}/Bravo/Setup.md"
    assert (len(out["capped"]["pages"]), out["capped"]["truncated"]) == (2, True)
    assert out["capped"]["max_nodes"] == 2


# --- 7. caveats name the entities that triggered them -------------------------------------------

REVENUE = "shop_pg.orders.total_revenue"
STATUS = "shop_pg.orders.status"


def _caveat(name: str, *entities: str) -> dict[str, str | bytes]:
    refs = ", ".join(entities)
    return {
        f"{G}/{name}.md": f"---\nsummary: {name} applies\nusage_mode: caveat\n"
        f"sl_refs: [{refs}]\n---\nA caveat.\n"
    }


def test_caveats_name_the_shared_entities_most_first(tmp_path: Path) -> None:
    proj = Project(tmp_path / "kb").write(
        {
            **SEMANTICS,
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            f"{G}/orders-report.md": "---\nsummary: Zebra orders report\n"
            f"sl_refs: [{REVENUE}]\n---\nZebra.\n",
            f"{G}/status-report.md": "---\nsummary: Zebra status report\n"
            f"sl_refs: [{STATUS}, {REVENUE}]\n---\nZebra.\n",
            **_caveat("a-caveat", REVENUE),
            **_caveat("b-caveat", STATUS, REVENUE),
            **_caveat("c-caveat", STATUS),
            **_caveat("d-caveat", "shop_pg.orders"),
        }
    )
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    answer = as_json(["search", "zebra", "--repo", str(proj.root)])
    assert [h["page"] for h in answer["hits"]] == ["orders-report", "status-report"]
    assert [(c["page"], c["triggered_by"]) for c in answer["caveats"]] == [
        ("b-caveat", [STATUS, REVENUE]),
        ("a-caveat", [REVENUE]),
        ("c-caveat", [STATUS]),
    ]
    shown = text_of(["search", "zebra", "--repo", str(proj.root)])
    assert f"b-caveat: b-caveat applies (about {STATUS}, {REVENUE})" in shown


# --- 8 and 9. traverse: Canonic's order, and a limit it tells ------------------------------------

HUB: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    f"{G}/hub.md": f"---\nsummary: The hub\nrefs: [zeta, alpha]\nsl_refs: [{REVENUE}]\n---\n"
    "Links: [[mid]] and [[alpha]].\n",
    f"{G}/zeta.md": "---\nsummary: Zeta\n---\nZ.\n",
    f"{G}/alpha.md": "---\nsummary: Alpha\n---\nA.\n",
    f"{G}/mid.md": "---\nsummary: Mid\n---\nM.\n",
    **_caveat("aaa-caveat", REVENUE),
}


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", "1780000000")
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        proj = Project(tmp_path_factory.mktemp("hub") / "kb").write(HUB)
        proj.commit()
        invoke(["build", "--repo", str(proj.root)])
    return proj.root


def test_traverse_walks_the_sorted_union_of_refs_and_links(hub: Path) -> None:
    walk = as_json(["traverse", "hub", "--depth", "1", "--repo", str(hub)])
    assert [(p["page"], p["via"] and p["via"]["kind"]) for p in walk["pages"]] == [
        ("hub", None),
        ("alpha", "ref"),  # a ref and a link: one edge, named by its first kind
        ("mid", "link"),
        ("zeta", "ref"),
        ("aaa-caveat", "sl_ref"),  # caveats through an entity come after refs and links
    ]
    assert (walk["max_nodes"], walk["truncated"]) == (50, False)


def test_traverse_says_when_it_stops_at_its_limit(hub: Path) -> None:
    repo = ["--repo", str(hub)]
    capped = invoke(["traverse", "hub", "--max-nodes", "3", "--json", *repo])
    walk = json.loads(capped.stdout)
    assert [p["page"] for p in walk["pages"]] == ["hub", "alpha", "mid"]
    assert (walk["max_nodes"], walk["truncated"]) == (3, True)
    assert capped.stderr == (
        "knowl: notice: the walk stopped at 3 pages (--max-nodes) with more within reach; "
        "raise --max-nodes to see them\n"
    )
    shown = invoke(["traverse", "hub", "--max-nodes", "3", *repo])
    assert "raise --max-nodes" in shown.stderr and "raise" not in shown.stdout
    # Exactly as many pages as are within reach: nothing was left out, nothing is said.
    exact = invoke(["traverse", "hub", "--max-nodes", "5", "--json", *repo])
    assert json.loads(exact.stdout)["truncated"] is False and exact.stderr == ""
    seeds = json.loads(
        invoke(["traverse", "zeta", "mid", "--max-nodes", "1", "--json", *repo]).stdout
    )
    assert ([p["page"] for p in seeds["pages"]], seeds["truncated"]) == (["zeta"], True)


# --- 9. small truths of the output --------------------------------------------------------------


def text_of(args: list[str], code: int = 0, env: dict[str, str] | None = None) -> str:
    """The text a command prints: nothing, or lines that each end with a line break."""
    out = invoke(args, code=code, env=env).stdout
    assert out == "" or out.endswith("\n"), out
    return out


LONG_ID = "monthly-recurring-revenue-definition-for-finance"


def test_tables_wrap_titles_never_ids(tmp_path: Path) -> None:
    title = "A very long title that has to wrap onto several lines of a narrow table"
    proj = Project(tmp_path / "kb").write(
        {
            **SEMANTICS,
            f"{G}/{LONG_ID}.md": f"---\ntitle: {title}\nsummary: Zebra revenue\n"
            "tags: [finance]\n---\nZebra.\n",
            f"{G}/{LONG_ID}-stale.md": "---\nsummary: Zebra stale\n---\nZebra, old.\n",
        }
    )
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    narrow = {"COLUMNS": "90"}  # too narrow for the ids and the title side by side
    for args in (["search", "zebra"], ["traverse", LONG_ID], ["stale"]):
        code = 1 if args == ["stale"] else 0  # a page is not fresh
        shown = text_of([*args, "--repo", str(proj.root)], code=code, env=narrow)
        # Every line holding a piece of an id holds all of it.
        pieces = [line for line in shown.splitlines() if "month" in line or "finance" in line]
        assert pieces and all(LONG_ID in line for line in pieces), (args, shown)
    shown = text_of(["search", "zebra", "--repo", str(proj.root)], env=narrow)
    assert title not in shown and "A very" in shown and "table" in shown  # the title wrapped


def test_a_page_without_a_title_shows_its_summary(tmp_path: Path) -> None:
    answer: dict[str, Any] = {
        "query": "zebra",
        "hits": [
            {
                "kind": "page",
                "page": "untitled",
                "scope": "global",
                "repo": "kb",
                "title": "untitled",  # no title and no heading: the build names it by its id
                "summary": "Zebra notes without a title",
                "annotations": [],
                "freshness": "fresh",
                "drift_flag": False,
                "score": 1.0,
            }
        ],
        "caveats": [],
    }
    out = io.StringIO()
    text.search_results(answer, Console(file=out, width=120))  # type: ignore[arg-type]
    assert out.getvalue().count("untitled") == 1
    assert "Zebra notes without a title" in out.getvalue()
    proj = Project(tmp_path / "kb").write(
        {
            **SEMANTICS,
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            f"{G}/untitled.md": "---\nsummary: Zebra notes without a title\n---\nZebra.\n",
        }
    )
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    found = text_of(["search", "zebra", "--repo", str(proj.root)])
    assert found.count("untitled") == 1 and "Zebra notes without a title" in found
    shown = text_of(["show", "untitled", "--repo", str(proj.root)])
    lines = shown.splitlines()
    assert lines[0] == "Zebra notes without a title  untitled · global · reference"
    assert shown.count("Zebra notes without a title") == 1


def test_dates_say_their_zone(tmp_path: Path) -> None:
    proj = Project(tmp_path / "kb").write(
        {
            **SEMANTICS,
            f"{G}/checked.md": "---\nsummary: Checked\nmeta:\n  last_validated_at: "
            '"2026-05-01T09:30:00+02:00"\n---\nChecked.\n',
        }
    )
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    timeline = text_of(["timeline", "checked", "--repo", str(proj.root)])
    assert "2026-01-01 12:00 UTC  Test Author  change" in timeline
    shown = text_of(["show", "checked", "--repo", str(proj.root)])
    assert "freshness: fresh (last validated 2026-05-01 07:30 UTC)" in shown
    assert as_json(["show", "checked", "--repo", str(proj.root)])["meta"]["last_validated_at"] == (
        "2026-05-01T07:30:00Z"
    )


def test_text_output_ends_with_a_line_break(hub: Path, tmp_path: Path) -> None:
    repo = ["--repo", str(hub)]
    for args in (
        ["search", "zeta"],
        ["search", "nothing-matches-this"],
        ["show", "hub"],
        ["traverse", "hub"],
        ["stale"],
        ["conflicts"],
        ["timeline", "hub"],
        ["rules"],
        ["graph", "--format", "dot"],
    ):
        text_of([*args, *repo])
    # A write's diff of a page whose last line has no line break says so, as git does.
    proj = Project(tmp_path / "kb").write(
        {**SEMANTICS, f"{G}/open.md": "---\nsummary: Open end\n---\nNo line break"}
    )
    proj.commit()
    diff = text_of(["review", "open", "--repo", str(proj.root)])
    assert diff.endswith("\n\\ No newline at end of file\n")


@pytest.mark.parametrize(
    ("content", "code"),
    [("x" * 40, 0), ("x" * 39 + "\n", 0), ("x" * 40 + "\n", 0), ("x" * 41, 1)],
)
def test_store_accepts_a_body_of_exactly_max_body_chars(
    tmp_path: Path, content: str, code: int
) -> None:
    proj = Project(tmp_path / "kb").write(
        {**SEMANTICS, "knowl.toml": "[security]\nmax_body_chars = 40\n"}
    )
    proj.commit()
    args = ["store", "--category", "fact", "--title", "Limit", "--content", content]
    answer = as_json([*args, "--repo", str(proj.root)], code=code)
    if code == 0:
        assert answer["action"] == "inserted"
        written = (proj.root / G / "limit.md").read_text(encoding="utf-8")
        assert written.endswith(content if content.endswith("\n") else content + "\n")
    else:
        assert answer["action"] == "refused"
        assert [d["message"] for d in answer["diagnostics"] if d["code"] == "KB403"] == [
            "body is 41 characters long, more than max_body_chars (40)"
        ]
