"""The MCP server behaves the same for every refusal, over a real stdio process driven by the
official SDK's client: a refused write is a tool error carrying the refusal, a missing or empty
argument is a client error (a tool error for tools, invalid params for prompts), the server's
stderr holds one plain line per rejection and never a traceback, and `knowl mcp --repo` on a
folder that is not a project stops before serving."""

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
from tests.helpers import SEMANTICS, Project, invoke

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")

# After the extra's check: these come with the SDK.
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp_types import INVALID_PARAMS  # noqa: E402

SECRET = "key AKIAABCDEFGHIJKLMNOP here"
FILES: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/a.md": "---\ntitle: Alpha\nsummary: The alpha page\n---\nAlpha text.\n",
    "knowledge/global/b.md": "---\ntitle: Beta\nsummary: The beta page\n---\nBeta text.\n",
}


@pytest.fixture
def kb(tmp_path: Path) -> Project:
    proj = Project(tmp_path / "kb").write(FILES)
    proj.commit("start")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        assert build(proj.root, Config(rules={"KB202": "off"})).status == "published"
    return proj


def serve(args: list[str], body: Any, errlog: Path) -> Any:
    """`body(session)` against `knowl mcp ARGS` over stdio, the server's stderr in `errlog`."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: os.environ[k] for k in ("PATH", "HOME", "XDG_CACHE_HOME") if k in os.environ}
    env["KNOWL_EMBEDDINGS"] = "off"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "knowl_build", "mcp", *args], env=env
    )

    async def session() -> Any:
        with errlog.open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                return await body(client)

    return asyncio.run(session())


def tree(root: Path) -> dict[str, bytes]:
    files = sorted(p for p in (root / "knowledge").rglob("*") if p.is_file())
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


def test_every_refused_write_is_a_tool_error_carrying_the_refusal(
    kb: Project, tmp_path: Path
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("store_knowledge", {"category": "fact", "title": "Keys", "content": SECRET}),
        ("store_knowledge", {"category": "fact", "title": "C", "content": "c", "confidence": 2}),
        ("store_knowledge", {"category": "fact", "title": "T", "content": "c", "user": "bob"}),
        ("supersede_knowledge", {"old": "a", "new": "a"}),
        ("supersede_knowledge", {"old": "a", "new": "no-such-page"}),
    ]

    async def body(session: Any) -> list[Any]:
        return [await session.call_tool(name, args) for name, args in calls]

    before = tree(kb.root)
    log = tmp_path / "stderr.txt"
    results = serve(["--repo", str(kb.root), "--allow-writes", "--user", "alice"], body, log)
    assert tree(kb.root) == before  # nothing written by any of them
    for result in results:
        assert result.is_error
        refusal = result.structured_content
        assert refusal["action"] == "refused"
        assert refusal["message"] == result.content[0].text
        assert (refusal["rebuilt"], refusal["committed"], refusal["build"]) == (False, False, None)
    secret, confidence, other_user, itself, unknown = (r.structured_content for r in results)
    # The store refusals are the answer `knowl store --json` prints, and its message.
    assert [(d["code"], d["line"]) for d in secret["diagnostics"]] == [("KB401", 3), ("KB401", 9)]
    assert secret["path"] == "knowledge/global/keys.md" and "AKIA" not in json.dumps(secret)
    assert secret["message"] == (
        "Refused: nothing was written: 'summary' holds a secret (AWS access key id); "
        "body holds a secret (AWS access key id)."
    )
    assert [d["code"] for d in confidence["diagnostics"]] == ["KB002"]
    assert other_user["message"] == (
        "Error executing tool store_knowledge: this server answers as alice (started with "
        "--user): omit `user` or pass alice"
    )
    assert (other_user["page"], other_user["diagnostics"]) == (None, [])
    assert (itself["superseded"], itself["superseded_by"], itself["paths"]) == ("a", "a", [])
    assert itself["message"] == (
        "Error executing tool supersede_knowledge: a page cannot supersede itself"
    )
    assert unknown["message"].endswith("no page 'no-such-page' visible to alice")
    # One plain line on the server's stderr for each, no box, no traceback.
    lines = log.read_text().splitlines()
    refused = [line for line in lines if "refused:" in line]
    assert len(refused) == len(calls), lines
    assert all(line.startswith("knowl mcp: info: Tool '") for line in refused)
    assert "Traceback" not in log.read_text() and "│" not in log.read_text()


def test_missing_or_empty_arguments_are_client_errors_without_a_traceback(
    kb: Project, tmp_path: Path
) -> None:
    tools: list[tuple[str, dict[str, Any]]] = [
        ("get_context", {}),
        ("get_context", {"question": ""}),
        ("get_context", {"question": "  \t "}),
        ("search_knowledge", {"query": ""}),
        ("search_knowledge", {"query": " "}),
        ("list_entities", {"query": "   "}),
        ("read_knowledge_page", {"page": ""}),
    ]
    prompts: list[dict[str, str]] = [
        {},
        {"question": ""},
        {"question": "   "},
        {"question": "x" * 5000},
    ]

    async def body(session: Any) -> dict[str, Any]:
        results = [await session.call_tool(name, args) for name, args in tools]
        errors = []
        for arguments in prompts:
            with pytest.raises(MCPError) as raised:
                await session.get_prompt("answer-with-knowledge", arguments)
            errors.append(raised.value.error)
        with pytest.raises(MCPError) as unknown:
            await session.get_prompt("no-such-prompt", {})
        errors.append(unknown.value.error)
        fine = await session.get_prompt("answer-with-knowledge", {"question": "alpha"})
        after = await session.call_tool("search_knowledge", {"query": "alpha"})
        return {"results": results, "errors": errors, "fine": fine, "after": after}

    log = tmp_path / "stderr.txt"
    out = serve(["--repo", str(kb.root)], body, log)
    texts = [result.content[0].text for result in out["results"]]
    assert all(result.is_error for result in out["results"]), texts
    assert "question; Field required" in texts[0]
    assert "question; String should have at least 1 character" in texts[1]
    assert texts[2].endswith("`question` is blank: give the words to look for")
    assert "query; String should have at least 1 character" in texts[3]
    assert texts[4].endswith("`query` is blank: give the words to look for")
    assert texts[5].endswith("`query` is blank: give the words to look for")
    assert "page; String should have at least 1 character" in texts[6]
    assert [e.code for e in out["errors"]] == [INVALID_PARAMS] * 5
    assert [e.message for e in out["errors"]] == [
        "prompt answer-with-knowledge: the argument `question` is missing",
        "prompt answer-with-knowledge: the argument `question` is empty",
        "prompt answer-with-knowledge: the argument `question` is empty",
        "prompt answer-with-knowledge: `question`: String should have at most 1000 characters",
        "no prompt 'no-such-prompt': answer-with-knowledge, record-decision",
    ]
    assert "Question: alpha" in out["fine"].messages[0].content.text
    assert not out["after"].is_error
    text = log.read_text()
    assert "Traceback" not in text and "│" not in text and "╭" not in text
    lines = text.splitlines()
    assert all(line.startswith("knowl mcp: ") for line in lines), lines
    assert len([line for line in lines if "Prompt " in line and "rejected" in line]) == 5


def test_mcp_on_a_folder_that_is_not_a_project_exits_2_before_serving(tmp_path: Path) -> None:
    plain = Project(tmp_path / "plain").write({"README.md": "# Not knowl\n"})
    plain.commit("start")
    result = invoke(["mcp", "--repo", str(plain.root)], code=2)
    assert result.stderr.count("\n") == 1
    assert "not a knowl project (looked for knowl.toml" in result.stderr
    # A folder inside a project is not the project either.
    proj = Project(tmp_path / "kb").write(FILES)
    (proj.root / "semantics" / "inner").mkdir()
    invoke(["mcp", "--repo", str(proj.root / "semantics" / "inner")], code=2)
    # Nor do --tokens go without --http, or --user with --tokens.
    tokens = tmp_path / "tokens"
    tokens.write_text("t" * 40 + " alice\n")
    tokens.chmod(0o600)
    result = invoke(["mcp", "--repo", str(proj.root), "--tokens", str(tokens)], code=2)
    assert "--tokens needs --http" in result.stderr
    args = ["mcp", "--repo", str(proj.root), "--http", "0", "--tokens", str(tokens)]
    result = invoke([*args, "--user", "bob"], code=2)
    assert "--user and --tokens: over HTTP the token decides the user" in result.stderr
