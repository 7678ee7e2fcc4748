"""`knowl mcp`: the knowledge base served over the Model Context Protocol, SPEC 11: over stdio
to one client, or over HTTP (`--http`, the SDK's Streamable HTTP transport) to a team.

Read-only by default: `get_context` (the pages, definitions and caveats for a question in one
call), search, read, traverse, the stale pages, the semantic layer (`list_entities`,
`describe_entity`) and, with a project and git, a page's timeline. `--allow-writes` adds
store and supersede with the CLI's rules, each followed by an incremental build. Pages and
entities are resources; two prompts ground answers and record decisions. Every tool declares
an output schema and annotations; list-style answers page with an opaque cursor. A refused
write is a tool error carrying the refusal; a bad argument is a tool error (tools) or an
invalid-params error (prompts); each is one line on the client and in the server's log, never
a traceback, and the server keeps running.

Built on the official MCP Python SDK (the `mcp` extra), which only this package imports:
`tools` (the tools), `resources`, `prompts`, `shapes` (argument and answer schemas), `text`
(the short text beside each answer), `session` (who the server answers as), `server`, `logs`
(one line per event on stderr), `http` (the HTTP gate: address, tokens, Origin).
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path
from typing import Any

from knowl_build.app.project import Locator
from knowl_build.core.errors import UsageError
from knowl_build.mcp_server.session import Session


def make_server(
    *,
    locator: Locator,
    artifact: Path | None,
    with_repo: bool,
    allow_writes: bool = False,
    user: str | None = None,
    by_token: bool = False,
) -> Any:
    """The server: read tools over `artifact` (or the project's current build and its peers);
    with the project given (`with_repo`), the timeline too, and with `allow_writes` the
    writes. `user` (`--user`) is who the session answers as: resources and prompts read as
    that user, and tools refuse any other; `by_token` (HTTP with --tokens): each request
    answers as the user its token names."""
    if find_spec("mcp") is None:
        raise UsageError(
            "the MCP server needs the official MCP Python SDK: pip install 'knowl-build[mcp]'"
        )
    if allow_writes and not with_repo:
        raise UsageError("--allow-writes needs --repo (writes go to a project's files)")
    # The SDK is the optional `mcp` extra: the modules that use it load here, once it is there.
    from knowl_build.mcp_server.server import build_server

    return build_server(Session(locator, artifact, with_repo, allow_writes, user, by_token))
