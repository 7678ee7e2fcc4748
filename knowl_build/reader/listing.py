"""Long lists for agents, one page at a time: the stale pages, and the pages a user may read
(what the MCP server lists as resources). Cursors are those of `reader.paging`: bound to the
build and to the question, so a cursor from another list, user or build is refused."""

from __future__ import annotations

from msgspec import UnsetType

from knowl_build.artifacts.answers import PageList, PageRow, StaleList
from knowl_build.artifacts.schema import StaleRow
from knowl_build.reader.paging import page_of
from knowl_build.reader.queries import stale
from knowl_build.reader.view import ArtifactView, visible

LIST_LIMIT = 50


def stale_list(
    view: ArtifactView, user: str | None, cursor: str | None = None, limit: int = LIST_LIMIT
) -> StaleList:
    """The `stale` answer's rows from the cursor on, and the cursor of the next page."""
    return stale_page(stale(view, user)["pages"], user, cursor, limit, view.manifest.build_id)


def stale_page(
    rows: list[StaleRow], user: str | None, cursor: str | None, limit: int, binding: str
) -> StaleList:
    """Stale rows from the cursor on, the cursor bound to `binding` (what the rows are of)."""
    shown, following = page_of(rows, cursor, limit, binding, ["list_stale", user, limit])
    return {"pages": shown, "total": len(rows), "next_cursor": following}


def list_pages(
    view: ArtifactView, user: str | None, cursor: str | None = None, limit: int = LIST_LIMIT
) -> PageList:
    """The pages `user` may read (global ones and their own; anonymous: global only), by
    scope then name. `name` names the page within its scope for `show`: its id, or, where
    pages of the scope share the id, its path under the scope folder."""
    rows: list[PageRow] = []
    for page in view.pages:
        if not visible(page, user):
            continue
        # `node` is set only where pages of the scope share the id: their path names them.
        name = page.id if isinstance(page.node, UnsetType) else page.node
        rows.append(
            {
                "page": page.id,
                "scope": page.scope,
                "name": name,
                "path": page.key,
                "title": page.title,
                "summary": page.summary,
                "status": page.status,
                "freshness": page.freshness,
            }
        )
    rows.sort(key=lambda r: (r["scope"] != "global", r["scope"], r["name"], r["path"]))
    shown, following = page_of(
        rows, cursor, limit, view.manifest.build_id, ["list_pages", user, limit]
    )
    return {"pages": shown, "total": len(rows), "next_cursor": following}
