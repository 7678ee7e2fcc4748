"""`knowl mcp`: the reader served over the Model Context Protocol (stdio), SPEC 11.

Read-only by default: search, read, traverse, list stale pages, and (with a project and git)
a page's timeline. `--allow-writes` adds store and supersede with the CLI's rules. Every
error is an MCP tool error with a one-line message; the server keeps running.
Built on the official MCP Python SDK (the `mcp` extra).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from knowl_build.app import history, reading, writing
from knowl_build.app.project import Locator
from knowl_build.errors import KnowlError, UsageError
from knowl_build.secrets.scanner import redact

F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = """\
This server answers from a team's knowledge base: Markdown pages about business metrics and
data, checked against a semantic layer. Start with search_knowledge; read the best hit with
read_knowledge_page before relying on it; always relay the caveats that come with a search or
a page to the user. Pages have a freshness (fresh, stale, needs_review) and a drift_flag: say
so when a page may be out of date. Pass `user` to see that user's own pages as well."""


def make_server(
    *, locator: Locator, artifact: Path | None, with_repo: bool, allow_writes: bool = False
) -> Any:
    """The server: read tools over `artifact` (or the project's current build); with the
    project given (`with_repo`), the timeline too, and with `allow_writes` the writes."""
    try:
        # The MCP SDK is the optional `mcp` extra.
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise UsageError(
            "the MCP server needs the official MCP Python SDK: pip install 'knowl-build[mcp]'"
        ) from None
    if allow_writes and not with_repo:
        raise UsageError("--allow-writes needs --repo (writes go to a project's files)")
    readers = reading.CurrentReader(locator, artifact)

    class Server(MCPServer):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            # The SDK's message for arguments that fail validation quotes the values given.
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                raise type(exc)(redact(str(exc))) from exc.__cause__

    server = Server("knowl-build", instructions=INSTRUCTIONS)

    def tool(description: str) -> Callable[[F], F]:
        """Register a tool whose KnowlErrors become MCP tool errors."""

        def wrap(fn: F) -> F:
            @functools.wraps(fn)
            def guarded(*args: Any, **kwargs: Any) -> Any:
                try:
                    return fn(*args, **kwargs)
                except KnowlError as exc:
                    raise ToolError(str(exc)) from None

            server.tool(description=description)(guarded)
            return fn

        return wrap

    @tool(
        "Search the knowledge base: plain words, best pages first, with the caveats that "
        "apply to them. Use this first, then read the best hit. `user` adds that user's "
        "own pages; `limit` is the number of hits (default 5)."
    )
    def search_knowledge(query: str, user: str | None = None, limit: int = 5) -> dict[str, Any]:
        if limit < 1:
            raise UsageError("limit must be at least 1")
        options = reading.SearchOptions(user=user, limit=limit)
        return dict(reading.search(readers.get(), query, options))

    @tool(
        "Read one page: its rendered body (live definitions filled in), freshness and "
        "drift, the pages linking to it and the caveats bound to its entities. `page` is "
        "an id, global:<id> or user:<owner>:<id>; when several pages share the id, the "
        "error lists them and their path under the scope folder (`Folder/Page`) names one. "
        "Relay its caveats."
    )
    def read_knowledge_page(page: str, user: str | None = None) -> dict[str, Any]:
        return dict(reading.show(readers.get(), page, user))

    @tool(
        "Walk the reference graph from one or more pages (refs, links, and caveats about the "
        "same entities), breadth-first up to `depth` steps and at most `max_nodes` pages "
        "(default 50); returns the pages reached and the semantic entities they are about, "
        "with measure expressions. `truncated` true: the walk stopped at `max_nodes` with "
        "more pages within reach; pass a larger `max_nodes` to see them."
    )
    def traverse_knowledge(
        pages: list[str], depth: int = 2, user: str | None = None, max_nodes: int = 50
    ) -> dict[str, Any]:
        if depth < 0:
            raise UsageError("depth must be 0 or more")
        if max_nodes < 1:
            raise UsageError("max_nodes must be at least 1")
        return dict(reading.traverse(readers.get(), pages, user, depth, max_nodes))

    @tool(
        "List the pages that are not fresh (stale or needing review), with every reason, "
        "from the last build. Use it to warn about knowledge that may be out of date."
    )
    def list_stale(user: str | None = None) -> dict[str, Any]:
        return dict(reading.stale(readers.get(), user))

    @tool(
        "Every committed version of a page, newest first: commit, date, author, subject, "
        "status, summary and the body's diff. Needs the server started with --repo."
    )
    def knowledge_timeline(page: str, user: str | None = None) -> dict[str, Any]:
        if not with_repo:
            raise UsageError(
                "knowledge_timeline needs the server started with --repo (it reads git)"
            )
        return history.timeline(locator.project(), page, user)

    if allow_writes:

        @tool(
            "Store a piece of knowledge as a new page, reconciled with what exists: a repeat "
            "is a no-op, a page on the same subject is superseded, an overlapping page is "
            "named. Refused (nothing written) when the page has errors, such as a secret."
        )
        def store_knowledge(
            category: str,
            title: str,
            content: str,
            user: str | None = None,
            summary: str | None = None,
            tags: list[str] | None = None,
            sl_refs: list[str] | None = None,
            refs: list[str] | None = None,
            usage_mode: str | None = None,
            confidence: float | None = None,
            source: str | None = None,
            reasoning: str | None = None,
            alternatives: list[str] | None = None,
            steps: list[str] | None = None,
            conflict_key: str | None = None,
            conflict_scope: dict[str, str] | None = None,
            exclusive: bool = False,
            supersedes: str | None = None,
        ) -> dict[str, Any]:
            request = writing.request(
                category=category,
                title=title,
                content=content,
                user=user,
                summary=summary,
                tags=tags,
                sl_refs=sl_refs,
                refs=refs,
                usage_mode=usage_mode,
                confidence=confidence,
                source=source,
                reasoning=reasoning,
                alternatives=alternatives,
                steps=steps,
                conflict_key=conflict_key,
                conflict_scope=conflict_scope,
                exclusive=exclusive,
                supersedes=supersedes,
            )
            return writing.store(locator.project(), request).outcome.to_json()

        @tool("Mark page OLD as superseded by page NEW (nothing is deleted).")
        def supersede_knowledge(old: str, new: str, user: str | None = None) -> dict[str, Any]:
            written = writing.supersede(locator.project(), old, new, user=user)
            return {
                "superseded": old,
                "superseded_by": new,
                "paths": [change.path for change in written.changes],
            }

    del search_knowledge, read_knowledge_page, traverse_knowledge, list_stale, knowledge_timeline
    return server
