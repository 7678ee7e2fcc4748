"""Writes check who is writing (issue 10, item 4).

A user may change global pages and their own; an anonymous caller only global pages (the pages
each can see, SPEC 6.2). Another user's page answers exactly as a page that does not exist:
the same exit code, the same bytes on stdout and stderr, so no answer is an existence oracle.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from knowl_build.cli import cli
from tests.helpers import SEMANTICS, Project, invoke
from tests.test_fix import removed_measure

BASE: dict[str, str | bytes] = {**SEMANTICS, "knowl.toml": "[rules]\nKB202 = 'off'\n"}
ALICE = "knowledge/user/alice/plan.md"
REMOVED = "sl_refs: [shop_pg.orders.total_revenue]\n"
FILES: dict[str, str | bytes] = {
    **BASE,
    "knowledge/global/shared.md": "---\ntitle: Shared notes\ncategory: fact\n---\nShared body.\n",
    "knowledge/global/other.md": "---\ntitle: Other shared\ncategory: fact\n---\nOther body.\n",
    ALICE: "---\ntitle: Alice plan\ncategory: fact\n---\nAlice's private plan.\n",
    "knowledge/user/bob/mine.md": "---\ntitle: Bob notes\ncategory: fact\n---\nBob's notes.\n",
    "knowledge/user/bob/draft.md": "---\ntitle: Bob draft\ncategory: fact\n---\nBob's draft.\n",
}

# What bob (and anonymous) try against alice's page; each must answer as for a missing page.
ATTEMPTS = [
    ["review", "user:alice:plan", "--user", "bob"],
    ["review", "plan", "--user", "bob"],
    ["review", "shared", "user:alice:plan", "--user", "bob"],
    ["review", "--force", "user:alice:plan", "--user", "bob"],
    ["supersede", "user:alice:plan", "shared", "--user", "bob"],
    ["supersede", "user:bob:mine", "user:alice:plan", "--user", "bob"],
    ["supersede", "plan", "mine", "--user", "bob"],
    [
        "store",
        "--category",
        "fact",
        "--title",
        "Bob takes over",
        "--content",
        "Bob's version.",
        "--user",
        "bob",
        "--supersedes",
        "user:alice:plan",
    ],
    [
        "store",
        "--category",
        "fact",
        "--title",
        "Bob takes over",
        "--content",
        "Bob's version.",
        "--user",
        "bob",
        "--supersedes",
        "plan",
        "--json",
    ],
    [
        "store",
        "--category",
        "fact",
        "--title",
        "Global takeover",
        "--content",
        "Anyone's version.",
        "--supersedes",
        "user:alice:plan",
    ],
    ["review", "user:alice:plan"],
    ["supersede", "user:alice:plan", "shared"],
]


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / "knowledge").rglob("*"))
        if p.is_file()
    }


def answers(root: Path) -> list[tuple[int, bytes, bytes]]:
    out = []
    for args in ATTEMPTS:
        result = invoke([*args, "--repo", str(root)], code=1)
        out.append((result.exit_code, result.stdout_bytes, result.stderr_bytes))
    return out


def test_another_users_page_answers_as_a_missing_page(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    before = snapshot(proj.root)
    present = answers(proj.root)
    assert snapshot(proj.root) == before  # nothing written, not even the other pages
    assert present[0][2] == b"knowl: error: no page 'user:alice:plan' visible to bob\n"
    assert present[1][2] == b"knowl: error: no page 'plan' visible to bob\n"
    assert present[-1][2] == b"knowl: error: no page 'user:alice:plan' visible to anonymous\n"
    proj.remove(ALICE).commit("alice's page is gone")
    assert answers(proj.root) == present


def test_what_a_write_checks_does_not_depend_on_another_users_pages(
    project: Callable[..., Project],
) -> None:
    # A reference to alice's page, a link to it, and alice's exclusive conflict key: the
    # answer of bob's store (its findings, its refusal, its reconciliation) is the same bytes
    # whether alice's page exists or not.
    alice = (
        "---\ntitle: Alice plan\ncategory: fact\nconflict: {key: db engine, exclusive: true}\n"
        "---\nThe warehouse engine plan of Alice.\n"
    )
    proj = project({**FILES, ALICE: alice, "knowledge/user/alice/diagram.png": b"\x89PNG"})
    root = str(proj.root)
    writes = [
        [
            "store",
            "--json",
            "--user",
            "bob",
            "--category",
            "fact",
            "--title",
            "Bob refers",
            "--content",
            "See [[plan]] and [the diagram](../alice/diagram.png).",
            "--ref",
            "plan",
        ],
        [
            "store",
            "--json",
            "--user",
            "bob",
            "--category",
            "fact",
            "--title",
            "Bob refers",
            "--content",
            "Bob.",
            "--ref",
            "user:alice:plan",
        ],
        [
            "store",
            "--json",
            "--category",
            "fact",
            "--title",
            "Global engine",
            "--content",
            "The warehouse engine plan.",
            "--conflict-key",
            "DB Engine",
            "--exclusive",
        ],
        [
            "store",
            "--json",
            "--user",
            "bob",
            "--category",
            "fact",
            "--title",
            "Alice plan",
            "--content",
            "The warehouse engine plan of Alice.",
        ],
    ]
    # Bob's own page that refers to alice's: reviewing it answers the same either way too.
    proj.write({"knowledge/user/bob/refers.md": "---\nrefs: [plan]\n---\nSee [[plan]].\n"}).commit()
    writes.append(["review", "refers", "--user", "bob"])

    def run_all() -> list[tuple[int, bytes, bytes]]:
        out = []
        for args in writes:
            before = snapshot(proj.root)
            result = CliRunner().invoke(cli, [*args, "--repo", root], catch_exceptions=False)
            out.append((result.exit_code, result.stdout_bytes, result.stderr_bytes))
            for path in set(snapshot(proj.root)) - set(before):  # undo what the write wrote
                (proj.root / path).unlink()
            for path, data in before.items():
                (proj.root / path).write_bytes(data)
        return out

    present = run_all()
    # (Not committed: HEAD, which a new page names as its source_commit, stays the same.)
    proj.remove(ALICE, "knowledge/user/alice/diagram.png")
    assert run_all() == present
    printed = b"".join(out + err for _, out, err in present)
    # Bob's own link names a path in alice's folder, and the answer may quote where it
    # points; what it may never do is name alice's page or tell her file exists.
    assert b"alice/plan" not in printed and b"KB104" not in printed


def test_a_user_writes_global_pages_and_their_own(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    root = str(proj.root)
    invoke(["review", "shared", "mine", "user:bob:draft", "--user", "bob", "--repo", root])
    for path in (
        "knowledge/global/shared.md",
        "knowledge/user/bob/mine.md",
        "knowledge/user/bob/draft.md",
    ):
        assert "last_validated_at" in (proj.root / path).read_text()
    invoke(["supersede", "user:bob:draft", "mine", "--user", "bob", "--repo", root])
    assert "superseded_by: mine" in (proj.root / "knowledge/user/bob/draft.md").read_text()
    invoke(["supersede", "other", "shared", "--user", "bob", "--repo", root])
    assert "superseded_by: shared" in (proj.root / "knowledge/global/other.md").read_text()
    stored = json.loads(
        invoke(
            [
                "store",
                "--repo",
                root,
                "--json",
                "--user",
                "bob",
                "--category",
                "fact",
                "--title",
                "Bob's summary",
                "--content",
                "A summary by Bob.",
                "--supersedes",
                "user:bob:mine",
            ]
        ).stdout
    )
    assert (
        stored["path"] == "knowledge/user/bob/bob-s-summary.md" and stored["superseded"] == "mine"
    )
    assert (
        "Alice" in (proj.root / ALICE).read_text()
        and "last_validated_at" not in (proj.root / ALICE).read_text()
    )
    invoke(["check", "--repo", root])


def test_anonymous_writes_only_global_pages(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    root = str(proj.root)
    bob = (proj.root / "knowledge/user/bob/mine.md").read_bytes()
    for args in (
        ["review", "mine"],
        ["review", "user:bob:mine"],
        ["supersede", "user:bob:mine", "shared"],
        ["supersede", "other", "user:bob:mine"],
    ):
        result = invoke([*args, "--repo", root], code=1)
        assert "visible to anonymous" in result.stderr
    assert (proj.root / "knowledge/user/bob/mine.md").read_bytes() == bob
    invoke(["review", "shared", "--repo", root])
    invoke(["supersede", "other", "shared", "--repo", root])
    stored = json.loads(
        invoke(
            [
                "store",
                "--repo",
                root,
                "--json",
                "--category",
                "fact",
                "--title",
                "Anonymous note",
                "--content",
                "Written by nobody.",
            ]
        ).stdout
    )
    assert stored["path"] == "knowledge/global/anonymous-note.md"


FIX_PAGE = "---\ntitle: {title}\n" + REMOVED + "---\n{title} body.\n"


def test_fix_edits_and_names_only_pages_the_user_may_write(project: Callable[..., Project]) -> None:
    pages = {
        "knowledge/global/g.md": FIX_PAGE.format(title="Global"),
        "knowledge/user/alice/a.md": FIX_PAGE.format(title="Alice"),
        "knowledge/user/bob/b.md": FIX_PAGE.format(title="Bob"),
    }
    proj = project(
        {
            **BASE,
            **pages,
            "knowledge/user/alice/frozen.md": "---\n" + REMOVED + "meta: {frozen: true}\n---\nx\n",
        }
    )
    removed_measure(proj)
    root = str(proj.root)

    def fix(*args: str, code: int) -> tuple[bytes, bytes]:
        result = invoke(["fix", "--repo", root, *args], code=code)
        return result.stdout_bytes, result.stderr_bytes

    as_bob = fix("--user", "bob", code=1)
    anonymous = fix(code=1)
    assert b"knowledge/global/g.md" in as_bob[0] and b"knowledge/user/bob/b.md" in as_bob[0]
    assert b"alice" not in as_bob[0] + as_bob[1]  # neither edited nor named
    assert b"knowledge/global/g.md" in anonymous[0]
    assert b"user/" not in anonymous[0] + anonymous[1]
    as_alice = fix("--user", "alice", code=1)
    assert b"a.md" in as_alice[0] and b"frozen.md: not edited (frozen)" in as_alice[1]

    # Without alice's pages, bob's and anonymous answers are the same bytes: no oracle.
    saved = {
        p: (proj.root / p).read_bytes()
        for p in ("knowledge/user/alice/a.md", "knowledge/user/alice/frozen.md")
    }
    for path in saved:
        (proj.root / path).unlink()
    assert fix("--user", "bob", code=1) == as_bob and fix(code=1) == anonymous
    for path, data in saved.items():
        (proj.root / path).write_bytes(data)

    invoke(["fix", "--repo", root, "--apply", "--user", "bob"])
    assert REMOVED not in (proj.root / "knowledge/global/g.md").read_text()
    assert REMOVED not in (proj.root / "knowledge/user/bob/b.md").read_text()
    assert (proj.root / "knowledge/user/alice/a.md").read_text() == pages[
        "knowledge/user/alice/a.md"
    ]
    assert b"alice" not in fix("--user", "bob", code=0)[0]
    invoke(["fix", "--repo", root, "--apply"])  # anonymous: nothing of alice's either
    assert (proj.root / "knowledge/user/alice/a.md").read_text() == pages[
        "knowledge/user/alice/a.md"
    ]


def test_library_refuses_without_a_front_end(project: Callable[..., Project]) -> None:
    from knowl_build.core.config_loader import load_config
    from knowl_build.writes.common import Tree, WriteRefused
    from knowl_build.writes.governance import review, supersede

    proj = project(FILES)
    config = load_config(proj.root)
    tree = Tree.load(proj.root, config, "bob")
    assert tree.page("user:bob:mine").path == "knowledge/user/bob/mine.md"
    # The tree a write works on is the project as the writer sees it.
    assert {p.scope for p in tree.analysis.pages} == {"global", "user:bob"}
    for ref, user in (
        ("user:alice:plan", "bob"),
        ("plan", "bob"),
        ("user:alice:plan", None),
        ("mine", None),
    ):
        with pytest.raises(WriteRefused, match=r"^no page '.*' visible to (bob|anonymous)$"):
            Tree.load(proj.root, config, user).page(ref)
    with pytest.raises(WriteRefused):
        review(proj.root, config, ["user:alice:plan"], user="bob")
    with pytest.raises(WriteRefused):
        supersede(proj.root, config, "user:alice:plan", "shared", user="bob")
    assert (proj.root / ALICE).read_bytes() == FILES[ALICE].encode()  # type: ignore[union-attr]


# --- the MCP server ---------------------------------------------------------------------------


def _mcp(root: Path, body: Any) -> Any:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {
        k: os.environ[k]
        for k in ("PATH", "HOME", "SOURCE_DATE_EPOCH", "KNOWL_EMBEDDINGS")
        if k in os.environ
    }

    async def session() -> Any:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "knowl_build", "mcp", "--repo", str(root), "--allow-writes"],
            env=env,
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return await body(client)

    return asyncio.run(session())


def test_mcp_writes_check_who_is_writing(project: Callable[..., Project]) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    proj = project(FILES)
    calls = [
        ("supersede_knowledge", {"old": "user:alice:plan", "new": "shared", "user": "bob"}),
        ("supersede_knowledge", {"old": "user:bob:mine", "new": "plan", "user": "bob"}),
        ("supersede_knowledge", {"old": "user:alice:plan", "new": "shared"}),
        (
            "store_knowledge",
            {
                "category": "fact",
                "title": "Bob takes over",
                "content": "Bob's version.",
                "user": "bob",
                "supersedes": "user:alice:plan",
            },
        ),
        (
            "store_knowledge",
            {
                "category": "fact",
                "title": "Anyone takes over",
                "content": "Anyone.",
                "supersedes": "plan",
            },
        ),
    ]

    async def body(client: Any) -> dict[str, Any]:
        async def texts() -> list[tuple[bool, str]]:
            out = []
            for name, args in calls:
                result = await client.call_tool(name, args)
                out.append((result.is_error, result.content[0].text))
            return out

        present = await texts()
        alice = (proj.root / ALICE).read_bytes()
        (proj.root / ALICE).unlink()
        absent = await texts()
        (proj.root / ALICE).write_bytes(alice)
        own = await client.call_tool(
            "supersede_knowledge", {"old": "user:bob:draft", "new": "mine", "user": "bob"}
        )
        stored = await client.call_tool(
            "store_knowledge",
            {
                "category": "fact",
                "title": "Bob's own",
                "content": "Bob writes his own page.",
                "user": "bob",
            },
        )
        return {"present": present, "absent": absent, "own": own, "stored": stored}

    before = snapshot(proj.root)
    out = _mcp(proj.root, body)
    assert out["present"] == out["absent"]
    assert all(is_error for is_error, _ in out["present"])
    assert out["present"][0][1].endswith(": no page 'user:alice:plan' visible to bob")
    assert out["present"][2][1].endswith(": no page 'user:alice:plan' visible to anonymous")
    assert not out["own"].is_error and not out["stored"].is_error
    after = snapshot(proj.root)
    changed = sorted(p for p in after if after[p] != before.get(p))
    assert changed == ["knowledge/user/bob/bob-s-own.md", "knowledge/user/bob/draft.md"]
