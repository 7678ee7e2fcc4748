"""The answers of the agent-facing queries, as every front end receives them: `get_context`
(and `knowl context`), the entity tools. Typed here, beside the artifact's records, so the
reader that builds them and the renderers and MCP schemas that show them agree."""

from __future__ import annotations

from typing import Any, TypedDict

from knowl_build.artifacts.schema import BuildRef, StaleRow, TriggeredCaveat


class Citation(TypedDict):
    path: str  # the page's file, relative to the project
    line: int  # 1-based, in the file (frontmatter included)
    text: str  # the cited line, trimmed


class ContextPage(TypedDict):
    page: str
    scope: str
    repo: str
    title: str
    summary: str
    usage_mode: str
    status: str
    freshness: str
    drift_flag: bool
    score: float
    path: str | None  # None for a peer repository's hit
    citation: Citation | None


class EntityUse(TypedDict):
    page: str
    scope: str
    usage_mode: str
    bound_fingerprint: str | None  # what the page was written against, if it says
    drifted: bool  # the bound fingerprint differs from the live one


class ContextEntity(TypedDict):
    entity: str
    live: bool  # False: no such entity in the semantic layer now
    kind: str | None
    expression: str | None
    description: str | None
    fingerprint: str | None
    definition: dict[str, Any] | None
    used_by: list[EntityUse]


class SupersededPage(TypedDict):
    page: str
    scope: str
    title: str
    summary: str
    superseded_by: str


class ContextAnswer(TypedDict):
    question: str
    user: str | None
    build: BuildRef
    pages: list[ContextPage]
    entities: list[ContextEntity]
    caveats: list[TriggeredCaveat]
    superseded: list[SupersededPage]


class EntityRow(TypedDict):
    entity: str
    kind: str
    connection: str
    source: str
    member: str | None
    description: str | None
    expression: str | None
    fingerprint: str


class EntityList(TypedDict):
    entities: list[EntityRow]
    total: int  # matching entities, over every page of the list
    next_cursor: str | None


class EntityPage(TypedDict):
    page: str
    scope: str
    path: str
    title: str
    summary: str
    freshness: str
    drift_flag: bool


class EntityDescription(EntityRow):
    definition: dict[str, Any]
    file: str
    line: int
    introduced_in: dict[str, Any] | None
    changed_in: dict[str, Any] | None
    # The pages whose sl_refs name it, by usage mode: caveats first, then the others by name.
    pages: dict[str, list[EntityPage]]


class StaleList(TypedDict):
    """`list_stale` (MCP): the `stale` answer one page of rows at a time."""

    pages: list[StaleRow]
    total: int  # stale pages visible to the user, over every page of the list
    next_cursor: str | None


class PageRow(TypedDict):
    page: str
    scope: str
    name: str  # what names it in its scope: the id, or `Folder/Page` where pages share the id
    path: str
    title: str
    summary: str
    status: str
    freshness: str


class PageList(TypedDict):
    """The pages a user may read (global ones and their own), by scope then name: what the MCP
    server lists as resources. Never another user's page."""

    pages: list[PageRow]
    total: int
    next_cursor: str | None
