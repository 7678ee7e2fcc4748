"""Pages and entities as MCP resources.

- `knowl://page/{scope}/{id}`: a page as Markdown (its frontmatter facts, then the rendered
  body). `scope` is `global` or `user:<owner>`; `id` is the page's id, or its path under the
  scope folder where pages share the id (`Folder%2FPage`). A user's page reads only in a
  session started with `--user` that owner; for anyone else it does not exist (the same
  error as a missing page).
- `knowl://entity/{entity}`: an entity's live definition and the pages that use it, as JSON.

The resource list holds the pages the session's user may read (global ones and their own;
anonymous: global only), a page of the list at a time; entities are read through the template
(`list_entities` finds their names).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, unquote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp_types import Resource

from knowl_build.app import reading
from knowl_build.artifacts.answers import PageRow
from knowl_build.artifacts.schema import ShowAnswer
from knowl_build.core.errors import ArtifactError, KnowlError, UsageError
from knowl_build.mcp_server.session import Session
from knowl_build.mcp_server.shapes import MAX_ENTITY_CHARS, MAX_NAME_CHARS_PAGE
from knowl_build.mcp_server.text import one_line
from knowl_build.secrets.scanner import redact

PAGE_TEMPLATE = "knowl://page/{scope}/{id}"
ENTITY_TEMPLATE = "knowl://entity/{entity}"
LIST_PAGE = 100  # resources per answer of resources/list
SHOWN_URI_CHARS = 300  # of a URI an error or the log repeats


def page_uri(scope: str, name: str) -> str:
    """The URI of a page; the template reads it back (percent-decoding each part)."""
    return f"knowl://page/{quote(scope, safe=':')}/{quote(name, safe='')}"


def _bounded(value: str, limit: int, what: str) -> str:
    # Checked here, not by the SDK's argument validation, whose error repeats the whole URI.
    if len(value) > limit:
        raise UsageError(f"a {what} is at most {limit} characters")
    return value


def page_ref(scope: str, name: str) -> str:
    """The PAGE a resource URI names, in the syntax every reader command takes."""
    _bounded(scope, MAX_NAME_CHARS_PAGE, "page resource's scope")
    _bounded(name, MAX_NAME_CHARS_PAGE, "page name")
    if scope == "global":
        return f"global:{name}"
    if scope.startswith("user:") and len(scope) > len("user:"):
        return f"user:{scope.removeprefix('user:')}:{name}"
    raise UsageError("a page resource's scope is `global` or `user:<owner>`")


def shown_uri(uri: str) -> str:
    """A resource URI as an error or the log may repeat it: a URI is the caller's text, so a
    secret in it, written as is or percent-encoded (the form the templates read it in), is
    replaced, and the rest is one printable line of bounded length."""
    decoded = unquote(uri)
    text = uri if redact(decoded) == decoded else decoded
    shown = one_line(redact(text))
    return shown if len(shown) <= SHOWN_URI_CHARS else shown[: SHOWN_URI_CHARS - 1] + "…"


def resource_error(exc: KnowlError) -> ResourceError:
    """A KnowlError as a resource error: one printable line. A missing or unreadable artifact
    is the server's failure; anything else (no such page or entity, a bad name) the URI's."""
    message = one_line(str(exc))
    if isinstance(exc, ArtifactError):
        return ResourceError(message)
    return ResourceNotFoundError(message)


def page_markdown(answer: ShowAnswer) -> str:
    """A page as a resource: what a reader must know about it (status, freshness, drift,
    successor, caveats), as frontmatter, then its rendered body."""
    facts: dict[str, Any] = {
        "page": answer["page_id"],
        "scope": answer["scope"],
        "title": answer["title"],
        "summary": answer["summary"],
        "path": answer["path"],
        "status": answer["status"],
        "freshness": answer["freshness"].get("value"),
        "drift_flag": answer["meta"]["drift_flag"],
        "superseded_by": answer["superseded_by"],
        "sl_refs": answer["sl_refs"],
        "caveats": [caveat["page"] for caveat in answer["caveats"]],
    }
    head = "".join(
        f"{key}: {json.dumps(value, ensure_ascii=False)}\n" for key, value in facts.items()
    )
    return f"---\n{head}---\n{answer['body']}"


def page_resource(row: PageRow) -> Resource:
    ref = page_ref(row["scope"], row["name"])
    return Resource(
        uri=page_uri(row["scope"], row["name"]),
        name=ref,
        title=row["title"],
        description=row["summary"] or None,
        mime_type="text/markdown",
    )


def list_page_resources(session: Session, cursor: str | None) -> tuple[list[Resource], str | None]:
    """One page of the resource list, and the cursor of the next."""
    with session.lock:
        listed = reading.list_pages(
            session.readers.get(), session.user, cursor=cursor, limit=LIST_PAGE
        )
    return [page_resource(row) for row in listed["pages"]], listed["next_cursor"]


def register(server: MCPServer[Any], session: Session) -> None:
    @server.resource(
        PAGE_TEMPLATE,
        name="page",
        title="Knowledge page",
        description="A page as Markdown: frontmatter facts (status, freshness, drift, "
        "caveats), then the rendered body. scope: global, or user:<owner> (only in a session "
        "started with --user <owner>).",
        mime_type="text/markdown",
    )
    def read_page(scope: str, id: str) -> str:
        with session.lock:
            try:
                answer = reading.show(session.readers.get(), page_ref(scope, id), session.user)
            except KnowlError as exc:
                raise resource_error(exc) from None
        return page_markdown(answer)

    @server.resource(
        ENTITY_TEMPLATE,
        name="entity",
        title="Semantic entity",
        description="A semantic entity's live definition, fingerprint, history and the "
        "pages that reference it (by usage mode), as JSON.",
        mime_type="application/json",
    )
    def read_entity(entity: str) -> str:
        with session.lock:
            try:
                name = _bounded(entity, MAX_ENTITY_CHARS, "semantic entity's name")
                answer = reading.describe_entity(session.readers.get(), name, session.user)
            except KnowlError as exc:
                raise resource_error(exc) from None
        return json.dumps(answer, ensure_ascii=False, indent=2, sort_keys=True)
