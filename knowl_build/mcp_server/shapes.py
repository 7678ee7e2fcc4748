"""What the tools take and give, as JSON schemas: arguments with their allowed values (the
vocabularies of `model`, imported, never copied) and bounds, and every answer's `outputSchema`.

Answers are the reader's TypedDicts (`artifacts.schema`, `artifacts.answers`); their schemas
come from msgspec, which reads TypedDicts on every Python the package supports (pydantic
refuses nested `typing.TypedDict`s before 3.12).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, TypedDict

import msgspec
from pydantic import Field

from knowl_build.app.reading import ENTITY_KINDS
from knowl_build.core.model import CATEGORIES, STATUSES, USAGE_MODES

# Bounds of what a client may send: generous for people and agents, small enough that a
# hostile call cannot make the server echo or scan megabytes.
MAX_QUERY_CHARS = 1_000  # a question, a search, a filter word
MAX_USER_CHARS = 1_000  # valid_user says why a name is invalid; this only bounds the input
MAX_NAME_CHARS_PAGE = 1_000  # a PAGE: an id, global:<id>, user:<owner>:<id>, Folder/Page
MAX_ENTITY_CHARS = 500
MAX_CURSOR_CHARS = 1_000  # the reader refuses far shorter ones it did not give
MAX_TEXT_CHARS = 200_000  # a stored page's content
MAX_FIELD_CHARS = 10_000  # a title, a summary, a reasoning, one list item
MAX_ITEMS = 100  # of any list argument
MAX_LIMIT = 100
MAX_LIST_LIMIT = 200
MAX_DEPTH = 10
MAX_NODES = 1_000

# Enumerations as JSON-schema enums; for the type checker they are strings.
if TYPE_CHECKING:
    StatusFilter: TypeAlias = str
    Category: TypeAlias = str
    UsageMode: TypeAlias = str
    EntityKind: TypeAlias = str
    HitKind: TypeAlias = str
else:
    StatusFilter = Literal[(*STATUSES, "all")]
    Category = Literal[CATEGORIES]
    UsageMode = Literal[USAGE_MODES]
    EntityKind = Literal[ENTITY_KINDS]
    HitKind = Literal["all", "page", "entity"]

User = Annotated[
    str | None,
    Field(
        max_length=MAX_USER_CHARS,
        description="Answer as this user: their own pages besides the global ones. "
        "Omit for anonymous, or for the user the server was started with (--user).",
    ),
]
Query = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="Plain words, not blank.")
]
Page = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME_CHARS_PAGE,
        description="A page: its id, global:<id> or user:<owner>:<id>; where pages share an "
        "id, its path under the scope folder (Folder/Page).",
    ),
]
Pages = Annotated[list[Page], Field(min_length=1, max_length=MAX_ITEMS)]
Entity = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_ENTITY_CHARS,
        description="A semantic entity's full name, e.g. warehouse_pg.orders.total_revenue.",
    ),
]
Cursor = Annotated[
    str | None,
    Field(
        max_length=MAX_CURSOR_CHARS,
        description="The next_cursor of the previous answer to the same call, unchanged; "
        "omit for the first page.",
    ),
]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description="How many pages to return.")]
ListLimit = Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT, description="Rows per page.")]
Depth = Annotated[int, Field(ge=0, le=MAX_DEPTH, description="Steps from the seeds.")]
MaxNodes = Annotated[
    int, Field(ge=1, le=MAX_NODES, description="Pages reached at most, seeds included.")
]
Status = Annotated[
    StatusFilter,
    Field(description="Only pages with this status (`all`: any); default active."),
]
SearchKind = Annotated[
    HitKind,
    Field(
        description="all (default): pages and semantic entities merged, each hit's `kind` "
        "saying which; page: pages only; entity: entities only."
    ),
]
CategoryFilter = Annotated[Category | None, Field(description="Only pages of this category.")]
UsageModeFilter = Annotated[UsageMode | None, Field(description="Only pages with this usage mode.")]
Tags = Annotated[
    list[Annotated[str, Field(max_length=MAX_QUERY_CHARS)]] | None,
    Field(max_length=MAX_ITEMS, description="Only pages with any of these tags."),
]
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
Line = Annotated[str, Field(max_length=MAX_FIELD_CHARS)]
OptionalLine = Annotated[str | None, Field(max_length=MAX_FIELD_CHARS)]
Lines = Annotated[list[Line] | None, Field(max_length=MAX_ITEMS)]


# --- the answers of the tools that are not the reader's ------------------------------------------


class BuildAfterWrite(TypedDict):
    """The incremental build after a write: what makes the page readable at once."""

    status: str  # published | no-op | refused | skipped | busy | failed
    build_id: str | None
    reason: str | None  # why the page is not readable yet (every status but published, no-op)


class CommitAfterWrite(TypedDict):
    """What a commit after a write did (the server's writes are not committed: always null)."""

    status: str  # committed | nothing | failed
    commits: list[str]
    reason: str | None  # nothing, failed: why not (failed: git's line, redacted)


class StoreAnswer(TypedDict):
    action: str  # inserted | duplicate | refused
    page: str | None
    path: str | None
    superseded: str | None
    overlapping: str | None
    diagnostics: list[dict[str, Any]]
    status: str  # the written page's status: active, or draft for an agent's page
    build: BuildAfterWrite | None
    rebuilt: bool  # the build was refreshed after the write; false: `build.reason` says why
    commit: CommitAfterWrite | None
    committed: bool  # the write was committed (the server never commits: false)


class SupersedeAnswer(TypedDict):
    superseded: str
    superseded_by: str
    paths: list[str]
    build: BuildAfterWrite | None
    rebuilt: bool
    commit: CommitAfterWrite | None
    committed: bool


class TimelineVersion(TypedDict):
    commit: str
    date: str
    author: str
    subject: str
    path: str
    status: str | None
    summary: str | None
    diff: str


class TimelineAnswer(TypedDict):
    page: str
    scope: str
    versions: list[TimelineVersion]
    notices: list[str]


def _search_schema() -> dict[str, Any]:
    """The search answer's schema: its hits are pages or entities, a union of two TypedDicts
    that msgspec cannot describe at once, so the answer is described with page hits and the
    hits' items made either."""
    # Imported here: start-up time (the answer types are needed for the schema only).
    from knowl_build.artifacts.schema import EntityHit, SearchAnswer

    _refs, definitions = msgspec.json.schema_components(
        [SearchAnswer, EntityHit], ref_template="#/$defs/{name}"
    )
    root = dict(definitions["SearchAnswer"])
    root["properties"] = {
        **root["properties"],
        "hits": {
            "type": "array",
            "items": {"anyOf": [{"$ref": "#/$defs/SearchHit"}, {"$ref": "#/$defs/EntityHit"}]},
        },
    }
    root["$defs"] = {k: v for k, v in definitions.items() if k != "SearchAnswer"}
    return root


def output_schema(answer: type[Any]) -> dict[str, Any]:
    """The JSON schema of an answer type, its root an object (MCP's `outputSchema`)."""
    if answer.__name__ == "MixedSearchAnswer":
        return _search_schema()
    schema = msgspec.json.schema(answer)
    ref = schema.pop("$ref", None)
    if ref is None:
        return schema
    definitions: dict[str, Any] = schema.pop("$defs")
    root = dict(definitions[ref.rsplit("/", 1)[-1]])
    root["$defs"] = definitions  # nested answers still refer into it
    return root
