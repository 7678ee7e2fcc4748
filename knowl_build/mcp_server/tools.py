"""The tools: arguments in, one application call, structured content and a short text out.

Each tool declares its answer's JSON schema (`outputSchema`), returns the answer as
`structuredContent` with a few lines of text beside it, and carries annotations: the reads
are read-only and idempotent; the writes change files but never delete one (a superseded
page keeps its text), and a repeated write changes nothing more (a repeat of a stored page is
a duplicate, a repeated supersession is refused). None reaches outside the project
(`openWorldHint: false`). Every KnowlError is a tool error with a one-line message.

A refused write, whatever refused it (the rules, an argument, another user's page, a page
that cannot supersede itself), is a tool error (`isError`) whose structured content is the
refusal: the write's answer with `action` "refused" and `message`, the line of its text (for
store, the answer `knowl store --json` prints). An empty question or query is a tool error as
any argument that fails validation is (the MCP specification's input-validation errors).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from knowl_build.app import checking, history, reading, writing
from knowl_build.artifacts.answers import (
    ContextAnswer,
    EntityDescription,
    EntityList,
    StaleList,
)
from knowl_build.artifacts.schema import MixedSearchAnswer, ShowAnswer, TraverseAnswer
from knowl_build.core.errors import KnowlError, UsageError
from knowl_build.mcp_server import text
from knowl_build.mcp_server.session import Session
from knowl_build.mcp_server.shapes import (
    Category,
    CategoryFilter,
    Cursor,
    Depth,
    Entity,
    EntityKind,
    Limit,
    Line,
    Lines,
    ListLimit,
    MaxNodes,
    OptionalLine,
    Page,
    Pages,
    Query,
    SearchKind,
    Status,
    StoreAnswer,
    SupersedeAnswer,
    Tags,
    Text,
    TimelineAnswer,
    UsageMode,
    UsageModeFilter,
    User,
    output_schema,
)
from knowl_build.mcp_server.text import one_line
from knowl_build.secrets.scanner import redact

READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_log = logging.getLogger(__name__)


def tool_error(exc: KnowlError) -> ToolError:
    """A KnowlError as the tool error a client sees: one line, nothing a terminal acts on."""
    return ToolError(one_line(str(exc)))


class RefusedCall(Exception):
    """A refused write: a tool error (`isError`) that carries the refusal's structured
    answer, as `knowl store --json` gives it."""

    def __init__(self, answer: Mapping[str, Any], text: str) -> None:
        super().__init__(text)
        self.answer, self.text = answer, text


Refusal = Callable[[Mapping[str, Any]], dict[str, Any]]


def _refused(name: str, refused: RefusedCall) -> CallToolResult:
    # Not raised to the SDK, which logs nothing for a result: one line here.
    _log.info("Tool %r refused: %s", name, refused.text)
    return CallToolResult(
        content=[TextContent(type="text", text=refused.text)],
        structured_content={**refused.answer, "message": refused.text},
        is_error=True,
    )


def _tool(
    session: Session,
    fn: Callable[..., Mapping[str, Any]],
    title: str,
    description: str,
    answer: type[Any],
    render: Callable[[Any], str],
    *,
    annotations: ToolAnnotations,
    refusal: Refusal | None = None,
) -> Tool:
    """`fn` as a tool named as the function: called under the session's lock, its answer
    returned as structured content (declared by `answer`'s schema) with `render`'s text. A
    write gives `refusal`: the answer of a write a KnowlError refused, from its arguments."""
    name = fn.__name__

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> CallToolResult:
        with session.lock:
            try:
                result = fn(*args, **kwargs)
            except KnowlError as exc:
                if refusal is None:
                    raise tool_error(exc) from None
                text = f"Error executing tool {name}: {one_line(str(exc))}"
                return _refused(name, RefusedCall(refusal(kwargs), text))
            except RefusedCall as refused:
                return _refused(name, refused)
        return CallToolResult(
            content=[TextContent(type="text", text=render(result))],
            structured_content=dict(result),
        )

    tool = Tool.from_function(
        call,
        name=fn.__name__,
        title=title,
        description=description,
        annotations=annotations.model_copy(update={"title": title}),
        structured_output=False,
    )
    # Declared here rather than derived from the return annotation: the SDK's pydantic cannot
    # read nested typing.TypedDicts before Python 3.12 (shapes.output_schema uses msgspec).
    tool.fn_metadata.output_schema = output_schema(answer)
    return tool


def _words(value: str, name: str) -> str:
    """A question or a query: blank is a mistake of the caller's, never a search for nothing."""
    if not value.strip():
        raise UsageError(f"`{name}` is blank: give the words to look for")
    return value


def _options(
    session: Session,
    user: str | None,
    limit: int,
    status: str,
    category: str | None,
    usage_mode: str | None,
    tags: list[str] | None,
) -> reading.SearchOptions:
    return reading.SearchOptions(
        user=session.reader_user(user),
        limit=limit,
        status=status,
        category=category,
        usage_mode=usage_mode,
        tags=tuple(tags or ()),
    )


def read_tools(session: Session) -> list[Tool]:
    """The read tools; `knowledge_timeline` answers only when the server has the project."""

    def get_context(
        question: Query,
        user: User = None,
        limit: Limit = 5,
        status: Status = "active",
        category: CategoryFilter = None,
        usage_mode: UsageModeFilter = None,
        tags: Tags = None,
    ) -> ContextAnswer:
        options = _options(session, user, limit, status, category, usage_mode, tags)
        return reading.context(session.readers.get(), _words(question, "question"), options)

    def search_knowledge(
        query: Query,
        user: User = None,
        limit: Limit = 5,
        status: Status = "active",
        category: CategoryFilter = None,
        usage_mode: UsageModeFilter = None,
        tags: Tags = None,
        kind: SearchKind = "all",
    ) -> MixedSearchAnswer:
        options = _options(session, user, limit, status, category, usage_mode, tags)
        options = dataclasses.replace(options, kind=kind)
        return reading.search(session.readers.get(), _words(query, "query"), options)

    def read_knowledge_page(page: Page, user: User = None) -> ShowAnswer:
        return reading.show(session.readers.get(), page, session.reader_user(user))

    def traverse_knowledge(
        pages: Pages, depth: Depth = 2, user: User = None, max_nodes: MaxNodes = 50
    ) -> TraverseAnswer:
        reader = session.readers.get()
        return reading.traverse(reader, pages, session.reader_user(user), depth, max_nodes)

    def list_stale(user: User = None, cursor: Cursor = None, limit: ListLimit = 50) -> StaleList:
        reader = session.readers.get()
        user = session.reader_user(user)
        # The project's tree, as `knowl stale` (app.checking.stale), when the server serves
        # the project's own build; a server given --artifact answers about that artifact.
        if session.with_repo and session.artifact is None:
            build = reader.view.manifest.build_id
            return checking.stale_list(session.locator.project(), user, build, cursor, limit)
        return reading.list_stale(reader, user, cursor=cursor, limit=limit)

    def list_entities(
        kind: EntityKind | None = None,
        connection: Line | None = None,
        query: Query | None = None,
        cursor: Cursor = None,
        limit: ListLimit = 50,
    ) -> EntityList:
        return reading.list_entities(
            session.readers.get(),
            kind=kind,
            connection=connection,
            query=None if query is None else _words(query, "query"),
            cursor=cursor,
            limit=limit,
        )

    def describe_entity(entity: Entity, user: User = None) -> EntityDescription:
        reader = session.readers.get()
        return reading.describe_entity(reader, entity, session.reader_user(user))

    def knowledge_timeline(page: Page, user: User = None) -> TimelineAnswer:
        if not session.with_repo:
            raise UsageError(
                "knowledge_timeline needs the server started with --repo (it reads git)"
            )
        found = history.timeline(session.locator.project(), page, session.reader_user(user))
        return {
            "page": found["page"],
            "scope": found["scope"],
            "versions": found["versions"],
            "notices": found["notices"],
        }

    read = functools.partial(_tool, session, annotations=READ)
    return [
        read(
            get_context,
            "Context for a question",
            "Everything needed to answer a question in one call: the best pages (with a "
            "citation {path, line, text} of the passage that matched, freshness and drift), "
            "the live definitions of every semantic entity they reference (expression, "
            "description, fingerprint, and whether each page's bound definition drifted), the "
            "caveats that ride along, and the superseded pages the hits replace. Start here; "
            "cite the citations; relay every caveat; say when a page is stale or drifted.",
            ContextAnswer,
            text.context,
        ),
        read(
            search_knowledge,
            "Search knowledge",
            'Search the knowledge base: words (OR-ed), `rev*` prefixes, `"quoted phrases"` '
            "and `-word` exclusions, best first, with the caveats that apply to them. Hits are "
            'pages and semantic entities (measures, dimensions, metrics: `kind` "entity", '
            "with their description, expression and the pages binding them); `kind` page or "
            "entity keeps one kind; "
            "with no hit, `suggestions` holds nearby words. Filters as `knowl search`: status "
            "(default active), category, usage_mode, tags (any of them), also as `tag:finance` "
            "in the query. Read the best hit with read_knowledge_page.",
            MixedSearchAnswer,
            text.search,
        ),
        read(
            read_knowledge_page,
            "Read a page",
            "Read one page: its rendered body (live definitions filled in), freshness and "
            "drift, the pages linking to it and the caveats bound to its entities. When "
            "several pages share the id, the error lists them and their path under the scope "
            "folder (`Folder/Page`) names one. Relay its caveats.",
            ShowAnswer,
            text.show,
        ),
        read(
            traverse_knowledge,
            "Walk the reference graph",
            "Walk the reference graph from one or more pages (refs, links, and caveats about "
            "the same entities), breadth-first up to `depth` steps (0 to 10) and at most "
            "`max_nodes` pages (1 to 1000, default 50); returns the pages reached and the "
            "semantic entities they are about. `truncated` true: more pages are within reach.",
            TraverseAnswer,
            text.traverse,
        ),
        read(
            list_stale,
            "List stale pages",
            "The pages that are not fresh (stale or needing review) with every reason: from "
            "the project's files as they are now when the server was started with --repo "
            "and no --artifact (as `knowl stale`), else from the build it serves; a page of "
            "rows at a time: pass `next_cursor` back as `cursor` for the next. Use it to warn "
            "about knowledge that may be out of date.",
            StaleList,
            text.stale,
        ),
        read(
            list_entities,
            "List semantic entities",
            "The semantic layer's entities (sources, measures, dimensions, columns, metrics) "
            "by name, filtered by kind, connection and words of the name or description, a "
            "page at a time: pass `next_cursor` back as `cursor` for the next.",
            EntityList,
            text.entities,
        ),
        read(
            describe_entity,
            "Describe a semantic entity",
            "One entity's live definition (expression, description, fingerprint, file and "
            "line), the commits that introduced and last changed it, and the pages that "
            "reference it by usage mode, caveats first. Relay the caveats.",
            EntityDescription,
            text.entity,
        ),
        read(
            knowledge_timeline,
            "Page history",
            "Every committed version of a page, newest first: commit, date, author, subject, "
            "status, summary and the body's diff. Needs the server started with --repo.",
            TimelineAnswer,
            text.timeline,
        ),
    ]


def _nothing_written() -> dict[str, Any]:
    return {"build": None, "rebuilt": False, "commit": None, "committed": False}


def write_tools(session: Session) -> list[Tool]:
    """store_knowledge and supersede_knowledge (`--allow-writes`): the governed write path of
    `knowl store` / `knowl supersede`, then an incremental build, so the page is found at once.
    """

    def store_knowledge(
        category: Category,
        title: Line,
        content: Text,
        user: User = None,
        summary: OptionalLine = None,
        tags: Lines = None,
        sl_refs: Lines = None,
        refs: Lines = None,
        usage_mode: UsageMode | None = None,
        confidence: float | None = None,
        source: OptionalLine = None,
        reasoning: Text | None = None,
        alternatives: Lines = None,
        steps: Lines = None,
        conflict_key: OptionalLine = None,
        conflict_scope: dict[str, Line] | None = None,
        exclusive: bool = False,
        supersedes: Page | None = None,
    ) -> StoreAnswer:
        request = writing.request(
            category=category,
            title=title,
            content=content,
            user=session.writer_user(user),
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
        stored = writing.store(session.locator.project(), request, agent=True)
        answer = cast(StoreAnswer, stored.to_json())
        if stored.outcome.action == "refused":
            raise RefusedCall(answer, text.refused_call(answer, stored.outcome.message))
        return answer

    def supersede_knowledge(old: Page, new: Page, user: User = None) -> SupersedeAnswer:
        written = writing.supersede(
            session.locator.project(), old, new, user=session.reader_user(user)
        )
        return cast(SupersedeAnswer, written.to_json())

    def store_refusal(_arguments: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "action": "refused",
            "page": None,
            "path": None,
            "superseded": None,
            "overlapping": None,
            "diagnostics": [],
            "status": "active",
            **_nothing_written(),
        }

    def supersede_refusal(arguments: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "action": "refused",
            "superseded": redact(str(arguments.get("old", ""))),
            "superseded_by": redact(str(arguments.get("new", ""))),
            "paths": [],
            **_nothing_written(),
        }

    write = functools.partial(_tool, session, annotations=WRITE)
    return [
        write(
            store_knowledge,
            "Store knowledge",
            "Store a piece of knowledge as a new page through the governed write path, "
            "reconciled with what exists: a repeat is a no-op (`duplicate`), a page on the "
            "same subject is superseded, an overlapping page is named. Refused (nothing "
            "written) when the page has errors, such as a secret, or a `confidence` outside "
            "[0, 1] (KB002): a tool error whose structured content is the refusal (`action` "
            "refused, `diagnostics`, `message`); do not retry it unchanged. The project is rebuilt "
            "after the write, so search and read find the page at once (`rebuilt` true); "
            "when the rebuild could not run (another build holds the lock, a build error), "
            "the page is stored all the same, `rebuilt` is false and `build.reason` says why: "
            "do not store it again. With "
            '[writes] agent_status = "draft" the page lands as a draft (`status`), which '
            "search skips unless asked (status draft) until a person reviews it. `user`: the "
            "page goes to that user's own scope; omit it for a global page.",
            StoreAnswer,
            text.store,
            refusal=store_refusal,
        ),
        write(
            supersede_knowledge,
            "Supersede a page",
            "Mark page OLD as superseded by page NEW. Nothing is deleted: OLD keeps its text "
            "and stays readable, search skips it. Refused (the same page, an unknown or inactive "
            "page, a cycle): a tool error whose structured content is the refusal (`action` "
            "refused, `message`). The project is rebuilt after the write "
            "(`rebuilt`; when false, `build.reason` says why, and the write stands).",
            SupersedeAnswer,
            text.supersede,
            refusal=supersede_refusal,
        ),
    ]
