"""`knowl mcp`: the reader served over the Model Context Protocol (stdio), SPEC 11.

Read-only by default: search, read, traverse, list stale pages, and (with a project and git)
a page's timeline. `--allow-writes` adds store and supersede with the CLI's rules. Every
error is an MCP tool error with a one-line message; the server keeps running.
Built on the official MCP Python SDK (the `mcp` extra).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from knowl_build.config import Config
from knowl_build.errors import KnowlError, UsageError
from knowl_build.names import valid_user
from knowl_build.secrets import redact

F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = """\
This server answers from a team's knowledge base: Markdown pages about business metrics and
data, checked against a semantic layer. Start with search_knowledge; read the best hit with
read_knowledge_page before relying on it; always relay the caveats that come with a search or
a page to the user. Pages have a freshness (fresh, stale, needs_review) and a drift_flag: say
so when a page may be out of date. Pass `user` to see that user's own pages as well."""


class _Readers:
    """The artifact to answer from; re-opened when a new build becomes current."""

    def __init__(self, artifact: Path | None, out_dir: Path | None) -> None:
        self.artifact = artifact
        self.out_dir = out_dir
        self.folder: Path | None = None
        self.reader: Any = None

    def get(self) -> Any:
        from knowl_build import artifacts
        from knowl_build.reader import Reader
        from knowl_build.reader.store import Store, find_artifact

        if self.artifact is not None:
            folder = find_artifact(self.artifact)
        else:
            assert self.out_dir is not None
            folder = artifacts.resolve_artifact(self.out_dir)
        if folder != self.folder:
            if self.reader is not None:
                self.reader.close()
            self.reader = Reader(Store.open(folder))
            self.folder = folder
        return self.reader


def make_server(
    *, artifact: Path | None, repo: Path | None, config: Config, allow_writes: bool = False
) -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise UsageError(
            "the MCP server needs the official MCP Python SDK: pip install 'knowl-build[mcp]'"
        ) from None
    if allow_writes and repo is None:
        raise UsageError("--allow-writes needs --repo (writes go to a project's files)")
    out_dir = (repo / config.out_dir) if repo is not None else None
    if artifact is None and out_dir is None:
        out_dir = Path.cwd() / config.out_dir
    readers = _Readers(artifact, out_dir)

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
            import functools

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
        user = valid_user(user, "user")
        result: dict[str, Any] = readers.get().search(query, user=user, limit=limit)
        return result

    @tool(
        "Read one page: its rendered body (live definitions filled in), freshness and "
        "drift, the pages linking to it and the caveats bound to its entities. `page` is "
        "an id, global:<id> or user:<owner>:<id>. Relay its caveats."
    )
    def read_knowledge_page(page: str, user: str | None = None) -> dict[str, Any]:
        user = valid_user(user, "user")
        result: dict[str, Any] = readers.get().show(page, user=user)
        return result

    @tool(
        "Walk the reference graph from one or more pages (refs, links, and caveats about the "
        "same entities), breadth-first up to `depth` steps; returns the pages reached and "
        "the semantic entities they are about, with measure expressions."
    )
    def traverse_knowledge(
        pages: list[str], depth: int = 2, user: str | None = None
    ) -> dict[str, Any]:
        if depth < 0:
            raise UsageError("depth must be 0 or more")
        user = valid_user(user, "user")
        result: dict[str, Any] = readers.get().traverse(pages, user=user, depth=depth)
        return result

    @tool(
        "List the pages that are not fresh (stale or needing review), with every reason, "
        "from the last build. Use it to warn about knowledge that may be out of date."
    )
    def list_stale(user: str | None = None) -> dict[str, Any]:
        user = valid_user(user, "user")
        result: dict[str, Any] = readers.get().stale(user=user)
        return result

    @tool(
        "Every committed version of a page, newest first: commit, date, author, subject, "
        "status, summary and the body's diff. Needs the server started with --repo."
    )
    def knowledge_timeline(page: str, user: str | None = None) -> dict[str, Any]:
        user = valid_user(user, "user")
        if repo is None:
            raise UsageError(
                "knowledge_timeline needs the server started with --repo (it reads git)"
            )
        from knowl_build.timeline import timeline

        return timeline(repo, config, page, user)

    if allow_writes:
        assert repo is not None

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
            from knowl_build.model import CATEGORIES
            from knowl_build.writes.store import Request, store

            if category not in CATEGORIES:
                raise UsageError(f"category must be one of {', '.join(CATEGORIES)}")
            user = valid_user(user, "user")
            request = Request(
                category=category,
                title=title,
                content=content,
                user=user,
                summary=summary,
                tags=list(tags or []),
                sl_refs=list(sl_refs or []),
                refs=list(refs or []),
                usage_mode=usage_mode,
                confidence=confidence,
                source=source,
                reasoning=reasoning,
                alternatives=list(alternatives or []),
                steps=list(steps or []),
                conflict_key=conflict_key,
                conflict_scope=dict(conflict_scope or {}),
                exclusive=exclusive,
                supersedes=supersedes,
            )
            outcome = store(repo, config, request)
            return outcome.to_json()

        @tool("Mark page OLD as superseded by page NEW (nothing is deleted).")
        def supersede_knowledge(old: str, new: str, user: str | None = None) -> dict[str, Any]:
            from knowl_build.writes.governance import supersede

            # The library checks the name and who may write both pages; the same rule and
            # the same "no page" answer as the CLI.
            result = supersede(repo, config, old, new, user=valid_user(user, "user"))
            return {
                "superseded": old,
                "superseded_by": new,
                "paths": [change.path for change in result.changes],
            }

    del search_knowledge, read_knowledge_page, traverse_knowledge, list_stale, knowledge_timeline
    return server
