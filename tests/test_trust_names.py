"""Names that become paths are validated (issue 10, item 2).

One rule (knowl_build.core.names) for every user name: the `--user` of every command, the `user` of
every MCP tool, the owner of a `user:<owner>:<id>` PAGE, and inside the write library itself. A
bad name is exit 2 (an MCP tool error) and nothing is written anywhere, inside the project or
outside it. A title too long for a file name gets a shortened slug with a hash suffix.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import SEMANTICS, Project, invoke

BASE: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/a.md": "---\ntitle: A\ncategory: fact\n---\nA body.\n",
    "knowledge/user/alice/mine.md": "---\ntitle: Mine\ncategory: fact\n---\nAlice's page.\n",
}

# (user name, why it is refused)
BAD_NAMES = [
    ("..", "it starts with '.'"),
    ("../../../x", "it starts with '.'"),
    ("../global", "it starts with '.'"),
    ("a/b", "it contains '/'"),
    ("a\\b", "it contains '\\\\'"),
    ("", "it is empty"),
    (".hidden", "it starts with '.'"),
    ("a\x00b", "it contains the invisible or control character U+0000"),
    ("a\nb", "it contains the invisible or control character U+000A"),
    ("a:b", "it contains ':'"),
    ("\u202eevil", "it contains the invisible or control character U+202E"),
    ("a\u200bb", "it contains the invisible or control character U+200B"),
    (" alice", "it starts or ends with white space"),
    ("a" * 101, "it is longer than 100 characters"),
    ("\U0001f600" * 64, "it is longer than 255 bytes in UTF-8"),
]

COMMANDS = {
    "store": ["store", "--category", "fact", "--title", "T", "--content", "C"],
    "store-supersedes": [
        "store",
        "--category",
        "fact",
        "--title",
        "T",
        "--content",
        "C",
        "--supersedes",
        "a",
    ],
    "supersede": ["supersede", "a", "mine"],
    "review": ["review", "a"],
    "fix": ["fix", "--apply"],
    "search": ["search", "a"],
    "show": ["show", "a"],
    "show-at": ["show", "a", "--at", "HEAD"],
    "traverse": ["traverse", "a"],
    "timeline": ["timeline", "a"],
}


def tree_state(top: Path) -> dict[str, Any]:
    """Every file, folder and link below `top`, with contents and modes."""
    state: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(top).as_posix()
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                state[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                state[rel] = ("dir", stat.S_IMODE(info.st_mode))
            else:
                state[rel] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes())
    return state


@pytest.fixture
def built(project: Callable[..., Project]) -> Project:
    proj = project(BASE)
    invoke(["build", "--repo", str(proj.root)])
    return proj


@pytest.mark.parametrize("command", list(COMMANDS), ids=list(COMMANDS))
def test_every_user_option_refuses_a_bad_name(built: Project, command: str) -> None:
    outside = built.root.parent
    before = tree_state(outside)
    for name, why in BAD_NAMES:
        result = invoke([*COMMANDS[command], "--user", name, "--repo", str(built.root)], code=2)
        assert result.stdout == ""
        assert result.stderr == f"knowl: error: --user: not a valid user name: {why}\n", repr(name)
    assert tree_state(outside) == before  # nothing written, in the project or beside it


def test_a_valid_name_still_writes_its_own_folder(built: Project) -> None:
    answer = json.loads(
        invoke(
            [
                "store",
                "--repo",
                str(built.root),
                "--json",
                "--user",
                "bob",
                "--category",
                "fact",
                "--title",
                "Bob's page",
                "--content",
                "Bob.",
            ]
        ).stdout
    )
    assert answer["path"] == "knowledge/user/bob/bob-s-page.md"
    # NFC: a decomposed name is written and compared in its composed form.
    decomposed = "Jose\u0301"
    answer = json.loads(
        invoke(
            [
                "store",
                "--repo",
                str(built.root),
                "--json",
                "--user",
                decomposed,
                "--category",
                "fact",
                "--title",
                "Jose's page",
                "--content",
                "J.",
            ]
        ).stdout
    )
    assert answer["path"] == "knowledge/user/Jos\u00e9/jose-s-page.md"
    invoke(["review", "jose-s-page", "--user", "Jos\u00e9", "--repo", str(built.root)])
    invoke(["check", "--repo", str(built.root)])


@pytest.mark.parametrize(
    "ref", ["user:../x:a", "user::a", "user:a/b:a", "user:.hidden:mine", "user:a\u200bb:mine"]
)
def test_the_owner_of_a_page_argument_is_validated(built: Project, ref: str) -> None:
    before = tree_state(built.root.parent)
    for args in (
        ["review", ref],
        ["supersede", ref, "a"],
        ["supersede", "a", ref],
        ["timeline", ref],
        ["show", ref, "--at", "HEAD"],
        ["show", ref],
        ["traverse", ref],
        ["store", "--category", "fact", "--title", "T", "--content", "C", "--supersedes", ref],
    ):
        result = invoke([*args, "--repo", str(built.root)], code=2)
        assert result.stderr.startswith(
            "knowl: error: PAGE user:<owner>:<id>: not a valid user name: "
        )
        assert result.stderr.count("\n") == 1
    assert tree_state(built.root.parent) == before


def test_the_library_refuses_a_bad_name_without_a_front_end(built: Project) -> None:
    from knowl_build.core.config_loader import load_config
    from knowl_build.core.errors import UsageError
    from knowl_build.writes import fix
    from knowl_build.writes.common import Tree
    from knowl_build.writes.governance import review, supersede
    from knowl_build.writes.newpage import target_path
    from knowl_build.writes.request import Request
    from knowl_build.writes.store import store

    config = load_config(built.root)
    tree = Tree.load(built.root, config)  # (refreshes the parse cache: before the snapshot)
    before = tree_state(built.root.parent)
    for name, _ in BAD_NAMES:
        request = Request(category="fact", title="T", content="C", user=name)
        with pytest.raises(UsageError, match="not a valid user name"):
            store(built.root, config, request)
        with pytest.raises(UsageError):
            target_path(Request(category="fact", title="T", content="C", user=name), tree)
        with pytest.raises(UsageError):
            Tree.load(built.root, config, name)
        with pytest.raises(UsageError):
            review(built.root, config, ["a"], user=name)
        with pytest.raises(UsageError):
            supersede(built.root, config, "a", "mine", user=name)
        with pytest.raises(UsageError):
            fix.plan(tree.analysis, user=name)
    assert tree_state(built.root.parent) == before


def test_mcp_tools_refuse_a_bad_user(built: Project) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    calls: list[tuple[str, dict[str, Any]]] = []
    for name, _ in BAD_NAMES:
        calls += [
            ("store_knowledge", {"category": "fact", "title": "T", "content": "C", "user": name}),
            ("supersede_knowledge", {"old": "a", "new": "mine", "user": name}),
            ("search_knowledge", {"query": "a", "user": name}),
            ("read_knowledge_page", {"page": "a", "user": name}),
            ("traverse_knowledge", {"pages": ["a"], "user": name}),
            ("list_stale", {"user": name}),
            ("knowledge_timeline", {"page": "a", "user": name}),
        ]
    calls.append(("read_knowledge_page", {"page": "user:../x:a", "user": "alice"}))
    calls.append(("supersede_knowledge", {"old": "user:a/b:a", "new": "a", "user": "alice"}))
    env = {
        k: os.environ[k]
        for k in ("PATH", "HOME", "SOURCE_DATE_EPOCH", "KNOWL_EMBEDDINGS")
        if k in os.environ
    }

    async def session() -> list[Any]:
        params = StdioServerParameters(
            command=sys.executable,
            env=env,
            args=["-m", "knowl_build", "mcp", "--repo", str(built.root), "--allow-writes"],
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return [await client.call_tool(tool, args) for tool, args in calls]

    before = tree_state(built.root.parent)
    results = asyncio.run(session())
    assert tree_state(built.root.parent) == before
    for (tool, args), result in zip(calls, results, strict=True):
        assert result.is_error, (tool, args)
        assert "not a valid user name" in result.content[0].text, (tool, args)


# --- long titles --------------------------------------------------------------------------------


def test_a_long_title_gets_a_short_slug_with_a_hash(project: Callable[..., Project]) -> None:
    proj = project(BASE)
    title = ("Quarterly revenue recognition policy for enterprise contracts " * 6)[:300]
    other = title[:290] + " but not here"
    paths = []
    for t, content in (
        (title, "Revenue is recognised monthly."),
        (other, "Zebra stripes are unique."),
    ):
        answer = json.loads(
            invoke(
                [
                    "store",
                    "--repo",
                    str(proj.root),
                    "--json",
                    "--category",
                    "fact",
                    "--title",
                    t,
                    "--content",
                    content,
                ]
            ).stdout
        )
        assert answer["action"] == "inserted"
        name = Path(answer["path"]).name
        digest = hashlib.sha256(t.encode()).hexdigest()[:8]
        assert name.endswith(f"-{digest}.md") and name.startswith(
            "quarterly-revenue-recognition-policy"
        )
        # Room is left for the `-N` a taken name gets.
        assert len(name) <= 255 - len("-1234567")
        assert (proj.root / answer["path"]).exists()
        paths.append(answer["path"])
    assert paths[0] != paths[1]
    invoke(["check", "--repo", str(proj.root)])
    # The same long title again (its page was superseded by the second): the taken name gets
    # its `-2`, for which room was left.
    again = json.loads(
        invoke(
            [
                "store",
                "--repo",
                str(proj.root),
                "--json",
                "--category",
                "fact",
                "--title",
                title,
                "--content",
                "Revenue is recognised monthly.",
            ]
        ).stdout
    )
    assert again["action"] == "inserted" and again["path"] == paths[0].removesuffix(".md") + "-2.md"
    invoke(["check", "--repo", str(proj.root)])


def test_slug_respects_the_file_system_limit(
    project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowl_build.writes.newpage import name_limit, slug

    assert slug("Short title") == "short-title"
    assert slug("!!!") == "page-" + hashlib.sha256(b"!!!").hexdigest()[:8]
    long_a, long_b = "x" * 400 + " a", "x" * 400 + " b"
    assert len(slug(long_a)) <= 255 - len(".md-1234567") and slug(long_a) != slug(long_b)
    assert slug("ab-" * 50, 40).endswith(
        "-" + hashlib.sha256(("ab-" * 50).encode()).hexdigest()[:8]
    )
    assert len(slug("ab-" * 50, 40)) <= 40
    proj = project(BASE)
    assert name_limit(proj.root / "knowledge/user/nobody-yet") <= 255
    # A file system with short names: the slug follows its limit.
    monkeypatch.setattr(os, "pathconf", lambda _path, _name: 64)
    answer = json.loads(
        invoke(
            [
                "store",
                "--repo",
                str(proj.root),
                "--json",
                "--category",
                "fact",
                "--title",
                "A title that is rather long for a small file system",
                "--content",
                "Short names.",
            ]
        ).stdout
    )
    assert len(Path(answer["path"]).name) <= 64 - len("-1234567")
