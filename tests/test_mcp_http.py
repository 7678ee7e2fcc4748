"""`knowl mcp --http`: a real server process on 127.0.0.1 (a free port the system picks),
driven by the official SDK's Streamable HTTP client: each bearer token reads as its own user,
a wrong or missing token is 401, a hostile Origin or Host is refused, writes only with
--allow-writes, 50 clients at once all answered; the tokens file and the address checked
before serving."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config import Config
from knowl_build.pipeline.publish import build
from tests.helpers import SEMANTICS, Project, invoke

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")

# After the extra's check: these come with the SDK.
import httpx2  # noqa: E402

ALICE_TOKEN = "alice-" + "a1" * 20
BOB_TOKEN = "bob-" + "b2" * 20
FILES: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/glossary.md": (
        "---\ntitle: Glossary\nsummary: Shared words of the team\n---\nA zebra is a metric.\n"
    ),
    "knowledge/user/alice/zebra-notes.md": (
        "---\ntitle: Zebra notes\nsummary: Alice's zebra checks\n---\nAlice checks zebras.\n"
    ),
    "knowledge/user/bob/bob-plan.md": (
        "---\ntitle: Bob plan\nsummary: Bob's zebra plan\n---\nBob plans zebras.\n"
    ),
}
STARTED = re.compile(r"serving http://127\.0\.0\.1:(\d+)/mcp")


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def stop(self) -> str:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return self.log.read_text()


def start(args: list[str], log: Path) -> Server:
    """`knowl mcp ARGS --http 127.0.0.1:0`, once it accepts connections."""
    env = {**os.environ, "KNOWL_EMBEDDINGS": "off"}
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "knowl_build", "mcp", *args, "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = log.read_text()
        found = STARTED.search(text)
        if found and "Application startup complete" in text:
            return Server(process, f"http://127.0.0.1:{found.group(1)}/mcp", log)
        if process.poll() is not None:
            raise AssertionError(f"the server stopped: {text}")
        time.sleep(0.1)
    process.kill()
    raise AssertionError(f"the server did not start: {log.read_text()}")


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Project:
    proj = Project(tmp_path_factory.mktemp("mcp-http") / "kb").write(FILES)
    proj.commit("start")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        assert build(proj.root, Config(rules={"KB202": "off"})).status == "published"
    return proj


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tokens") / "tokens"
    path.write_text(f"# the team\n{ALICE_TOKEN} alice\n\n{BOB_TOKEN}  bob\n")
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def server(kb: Project, tokens: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("log") / "stderr.txt"
    served = start(["--repo", str(kb.root), "--tokens", str(tokens)], log)
    yield served
    served.stop()


async def session(url: str, token: str | None, body: Any) -> Any:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as mcp_session,
    ):
        await mcp_session.initialize()
        return await body(mcp_session)


def run(url: str, token: str | None, body: Any) -> Any:
    return asyncio.run(session(url, token, body))


def post(url: str, headers: dict[str, str]) -> httpx2.Response:
    """A bare `initialize` POST, as any HTTP client sends it."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
    sent = {"Accept": "application/json, text/event-stream", **headers}
    return httpx2.post(url, json=body, headers=sent, timeout=30)


async def _search(mcp_session: Any) -> dict[str, Any]:
    found = await mcp_session.call_tool("search_knowledge", {"query": "zebra", "limit": 10})
    other = await mcp_session.call_tool(
        "read_knowledge_page", {"page": "user:alice:zebra-notes", "user": "alice"}
    )
    as_other = await mcp_session.call_tool("search_knowledge", {"query": "zebra", "user": "bob"})
    listed = await mcp_session.list_resources()
    tools = await mcp_session.list_tools()
    store = await mcp_session.call_tool(
        "store_knowledge", {"category": "fact", "title": "T", "content": "c"}
    )
    return {
        "hits": sorted((h["page"], h["scope"]) for h in found.structured_content["hits"]),
        "other": other,
        "as_other": as_other,
        "resources": sorted(r.name for r in listed.resources),
        "tools": {t.name for t in tools.tools},
        "store": store,
    }


def test_each_token_reads_as_its_user(server: Server) -> None:
    alice = run(server.url, ALICE_TOKEN, _search)
    bob = run(server.url, BOB_TOKEN, _search)
    assert alice["hits"] == [("glossary", "global"), ("zebra-notes", "user:alice")]
    assert bob["hits"] == [("bob-plan", "user:bob"), ("glossary", "global")]
    assert not alice["other"].is_error
    assert alice["other"].structured_content["page_id"] == "zebra-notes"
    # The token decides: bob's token never reads alice's page, whatever `user` says.
    assert bob["other"].is_error
    assert (
        bob["other"]
        .content[0]
        .text.endswith("this server answers as bob (its token's user): omit `user` or pass bob")
    )
    assert alice["as_other"].is_error and "answers as alice" in alice["as_other"].content[0].text
    assert alice["resources"] == ["global:glossary", "user:alice:zebra-notes"]
    assert bob["resources"] == ["global:glossary", "user:bob:bob-plan"]
    # Read-only without --allow-writes: the writes are not offered, a call is refused.
    assert "store_knowledge" not in alice["tools"] and "search_knowledge" in alice["tools"]
    assert alice["store"].is_error and "store_knowledge" in alice["store"].content[0].text


def test_a_wrong_or_missing_token_is_401(server: Server) -> None:
    for headers in (
        {},
        {"Authorization": "Bearer " + "x" * 40},
        {"Authorization": "Bearer " + ALICE_TOKEN[:-1]},
        {"Authorization": ALICE_TOKEN},
        {"Authorization": "Basic " + ALICE_TOKEN},
    ):
        answer = post(server.url, headers)
        assert answer.status_code == 401, (headers, answer.text)
        assert answer.headers["www-authenticate"].startswith('Bearer realm="knowl"')
        assert ALICE_TOKEN not in answer.text
    assert post(server.url, {"Authorization": f"Bearer {ALICE_TOKEN}"}).status_code == 200
    refused = "HTTP 401 refused for 127.0.0.1: no known bearer token"
    before = server.log.read_text().count(refused)
    # The SDK's client without a token gets no session (the SDK says "Server returned an
    # error response").
    with pytest.raises(BaseException, match="unhandled errors"):
        run(server.url, None, _search)
    log = server.log.read_text()
    assert log.count(refused) == before + 1
    assert ALICE_TOKEN not in log and BOB_TOKEN not in log and "x" * 40 not in log


def test_a_hostile_origin_or_host_is_refused(server: Server) -> None:
    port = server.url.split(":")[2].split("/")[0]
    auth = {"Authorization": f"Bearer {ALICE_TOKEN}"}
    for origin in ("http://evil.example", f"http://evil.example:{port}", "null", "file://"):
        answer = post(server.url, {**auth, "Origin": origin})
        assert answer.status_code == 403, (origin, answer.text)
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        assert post(server.url, {**auth, "Origin": origin}).status_code == 200, origin
    # DNS rebinding: a page of evil.example, its name pointed at 127.0.0.1.
    answer = post(server.url, {**auth, "Host": f"evil.example:{port}"})
    assert answer.status_code == 421
    assert post(server.url, {**auth, "Host": f"localhost:{port}"}).status_code == 200
    assert "HTTP 403 refused for 127.0.0.1: the Origin header is not this server's" in (
        server.log.read_text()
    )


def test_fifty_clients_at_once_are_all_answered(server: Server) -> None:
    async def one(mcp_session: Any) -> list[str]:
        found = await mcp_session.call_tool("search_knowledge", {"query": "zebra"})
        assert not found.is_error, found.content
        return sorted(h["page"] for h in found.structured_content["hits"])

    async def many() -> list[list[str]]:
        calls = [session(server.url, ALICE_TOKEN if n % 2 else BOB_TOKEN, one) for n in range(50)]
        return list(await asyncio.gather(*calls))

    answers = asyncio.run(many())
    assert len(answers) == 50
    for n, pages in enumerate(answers):
        assert pages == (["glossary", "zebra-notes"] if n % 2 else ["bob-plan", "glossary"])
    assert "Traceback" not in server.log.read_text()


def test_writes_with_allow_writes_go_to_the_tokens_user(tmp_path: Path, tokens: Path) -> None:
    proj = Project(tmp_path / "kb").write(FILES)
    proj.commit("start")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        assert build(proj.root, Config(rules={"KB202": "off"})).status == "published"
    served = start(
        ["--repo", str(proj.root), "--tokens", str(tokens), "--allow-writes"], tmp_path / "log"
    )
    try:

        async def store(mcp_session: Any) -> Any:
            arguments = {"category": "fact", "title": "Quokka rule", "content": "Quokkas."}
            mine = await mcp_session.call_tool("store_knowledge", {**arguments, "user": "alice"})
            theirs = await mcp_session.call_tool(
                "store_knowledge", {**arguments, "title": "Other", "user": "bob"}
            )
            return mine, theirs

        async def look(mcp_session: Any) -> Any:
            found = await mcp_session.call_tool("search_knowledge", {"query": "quokkas"})
            return found.structured_content["hits"]

        mine, theirs = run(served.url, ALICE_TOKEN, store)
        bob_sees = run(served.url, BOB_TOKEN, look)
        alice_sees = run(served.url, ALICE_TOKEN, look)
    finally:
        log = served.stop()
    assert not mine.is_error, mine.content
    assert mine.structured_content["path"] == "knowledge/user/alice/quokka-rule.md"
    assert theirs.is_error and theirs.structured_content["action"] == "refused"
    assert not (proj.root / "knowledge/user/bob/other.md").exists()
    assert [h["page"] for h in alice_sees] == ["quokka-rule"]
    assert bob_sees == []
    assert "Traceback" not in log


def test_the_address_and_the_tokens_file_are_checked_before_serving(
    kb: Project, tmp_path: Path
) -> None:
    repo = ["mcp", "--repo", str(kb.root)]
    result = invoke([*repo, "--http", "0.0.0.0:0"], code=2)
    assert "not a loopback address" in result.stderr and "--tokens FILE" in result.stderr
    for value in ("host:", "127.0.0.1:99999", "::1:80", "x"):
        result = invoke([*repo, "--http", value], code=2)
        assert result.stderr.startswith("knowl: error: --http"), (value, result.stderr)
    good = "g" * 32
    cases = {
        f"{'s' * 31} alice\n": "the token is 31 characters, fewer than 32",
        f"{good}\n": "a line is `<token> <user>`",
        f"{good} alice extra\n": "a line is `<token> <user>`",
        f"{good}\x1b[2J alice\n": "the token holds characters a bearer token cannot",
        f"{good} alice\n{good} bob\n": "the token is on an earlier line too",
        f"{good} ../bob\n": "the user: not a valid user name",
        "# nothing\n": "no token in it",
    }
    for number, (text, message) in enumerate(cases.items()):
        path = tmp_path / f"tokens{number}"
        path.write_text(text)
        path.chmod(0o600)
        result = invoke([*repo, "--http", "0", "--tokens", str(path)], code=2)
        assert message in result.stderr, (text, result.stderr)
        assert result.stderr.count("\n") == 1
        assert "s" * 31 not in result.stderr and good not in result.stderr
    readable = tmp_path / "readable"
    readable.write_text(f"{good} alice\n")
    readable.chmod(0o644)
    result = invoke([*repo, "--http", "0", "--tokens", str(readable)], code=2)
    assert "other users may read or change it (mode -rw-r--r--): chmod 600" in result.stderr


def test_the_gate_passes_nothing_it_has_not_checked() -> None:
    """In process: a websocket is closed, never handed to the SDK's app (which the gate
    would not have checked); an HTTP request reaches it with the token's user in its scope."""
    from knowl_build.mcp_server.http import Gate, Tokens, _digest
    from knowl_build.mcp_server.session import TOKEN_USER_KEY

    reached: list[dict[str, Any]] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(dict(scope))

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: Any) -> None:
        sent.append(message)

    gate = Gate(
        app, host="127.0.0.1", loopback=True, tokens=Tokens({_digest(ALICE_TOKEN): "alice"})
    )
    host = [(b"host", b"127.0.0.1:8000")]
    auth = [(b"authorization", f"Bearer {ALICE_TOKEN}".encode())]
    asyncio.run(gate({"type": "websocket", "headers": host + auth}, receive, send))
    assert reached == [] and sent == [{"type": "websocket.close", "code": 1008}]
    twice = [*auth, (b"authorization", b"Bearer " + b"z" * 40)]
    asyncio.run(gate({"type": "http", "headers": host + twice}, receive, send))
    assert reached == [] and sent[-2]["status"] == 401
    asyncio.run(gate({"type": "http", "headers": host + auth}, receive, send))
    assert [scope[TOKEN_USER_KEY] for scope in reached] == ["alice"]


def test_a_session_used_with_another_token_answers_as_that_tokens_user(server: Server) -> None:
    """The user is the request's token's, not the session's: alice's session id sent with
    bob's token reads bob's pages, never alice's."""
    opened = post(server.url, {"Authorization": f"Bearer {ALICE_TOKEN}"})
    assert opened.status_code == 200
    headers = {
        "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "Mcp-Protocol-Version": opened.json()["result"]["protocolVersion"],
    }

    def send(token: str, message: dict[str, Any]) -> httpx2.Response:
        sent = {**headers, "Authorization": f"Bearer {token}"}
        return httpx2.post(server.url, json=message, headers=sent, timeout=30)

    send(ALICE_TOKEN, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search_knowledge", "arguments": {"query": "zebra"}},
    }
    answers = {token: send(token, call) for token in (BOB_TOKEN, ALICE_TOKEN)}
    pages = {
        token: sorted(h["page"] for h in answer.json()["result"]["structuredContent"]["hits"])
        for token, answer in answers.items()
    }
    assert pages == {
        BOB_TOKEN: ["bob-plan", "glossary"],
        ALICE_TOKEN: ["glossary", "zebra-notes"],
    }
