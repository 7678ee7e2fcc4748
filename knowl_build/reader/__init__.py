"""The reader: answers from a built artifact alone (no source tree, no git, no network).

    from knowl_build.reader import Reader
    with Reader.open("path/to/project") as reader:      # or an artifact folder
        answer = reader.search("revenue", user="alice")
        page = reader.show("revenue-definition")
        walk = reader.traverse(["revenue-definition"], depth=2)
        context = reader.context("how is revenue calculated?")  # pages, definitions, caveats
        measure = reader.describe_entity("warehouse_pg.orders.total_revenue")

Answers are the JSON shapes of the `--json` options. Importing this package does not import
the build pipeline, GitPython or networkx.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, overload

from knowl_build.artifacts.answers import ContextAnswer, EntityDescription, EntityList
from knowl_build.artifacts.schema import (
    MixedSearchAnswer,
    SearchAnswer,
    ShowAnswer,
    StaleAnswer,
    TraverseAnswer,
)
from knowl_build.core.errors import PageNotFound, UsageError
from knowl_build.reader import context, entities, passages, queries, traversal
from knowl_build.reader.queries import Filters
from knowl_build.reader.view import ArtifactView, find_artifact

__all__ = ["Filters", "PageNotFound", "Reader"]


class Reader:
    """An opened artifact (and its peers, for federated search)."""

    def __init__(self, view: ArtifactView, peers: Sequence[ArtifactView] = ()) -> None:
        self.view = view
        self.peers = list(peers)

    @classmethod
    def open(
        cls, path: str | Path, peers: Sequence[str | Path] = (), out_dir: str = ".knowl/build"
    ) -> Reader:
        """`path` is an artifact folder, or a project root (its current build is used)."""
        views = [ArtifactView.open(find_artifact(Path(path), out_dir))]
        try:
            for peer in peers:
                views.append(ArtifactView.open(find_artifact(Path(peer))))
        except BaseException:
            for view in views:
                view.close()
            raise
        return cls(views[0], views[1:])

    def close(self) -> None:
        for view in [self.view, *self.peers]:
            view.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @overload
    def search(
        self,
        query: str,
        *,
        user: str | None = None,
        limit: int = 5,
        status: str = "active",
        category: str | None = None,
        usage_mode: str | None = None,
        tags: Sequence[str] = (),
        kind: str,
    ) -> MixedSearchAnswer: ...

    @overload
    def search(
        self,
        query: str,
        *,
        user: str | None = None,
        limit: int = 5,
        status: str = "active",
        category: str | None = None,
        usage_mode: str | None = None,
        tags: Sequence[str] = (),
        kind: Literal["page"] = "page",
    ) -> SearchAnswer: ...

    def search(
        self,
        query: str,
        *,
        user: str | None = None,
        limit: int = 5,
        status: str = "active",
        category: str | None = None,
        usage_mode: str | None = None,
        tags: Sequence[str] = (),
        kind: str = "page",
    ) -> SearchAnswer | MixedSearchAnswer:
        """Hits best first: pages alone (`kind` "page", the default of this call, as it always
        answered), entities alone ("entity"), or both merged ("all", the default of `knowl
        search` and the MCP tool; each hit's `kind` says which); see `reader.mixed`."""
        # Imported here: start-up time (the ranking loads only when a query runs).
        from knowl_build.reader import mixed

        _check_limit(limit)
        filters = Filters(status, category, usage_mode, tuple(tags))
        answer = mixed.search(
            self.view,
            query,
            kind=kind,
            user=user,
            limit=limit,
            filters=filters,
            peers=self.peers,
        )
        passages.attach([self.view, *self.peers], answer)
        return answer

    def show(self, page: str, *, user: str | None = None) -> ShowAnswer:
        return queries.show(self.view, page, user)

    def stale(self, *, user: str | None = None) -> StaleAnswer:
        """The visible pages that were not fresh when the artifact was built."""
        return queries.stale(self.view, user)

    def traverse(
        self, pages: Sequence[str], *, user: str | None = None, depth: int = 2, max_nodes: int = 50
    ) -> TraverseAnswer:
        return traversal.traverse(self.view, pages, user=user, depth=depth, max_nodes=max_nodes)

    def context(
        self,
        question: str,
        *,
        user: str | None = None,
        limit: int = 5,
        status: str = "active",
        category: str | None = None,
        usage_mode: str | None = None,
        tags: Sequence[str] = (),
    ) -> ContextAnswer:
        """The best pages for a question with citations, the live definitions of their
        entities, the caveats riding along and the pages the hits supersede."""
        _check_limit(limit)
        filters = Filters(status, category, usage_mode, tuple(tags))
        return context.context(
            self.view, question, user=user, limit=limit, filters=filters, peers=self.peers
        )

    def list_entities(
        self,
        *,
        kind: str | None = None,
        connection: str | None = None,
        query: str | None = None,
        cursor: str | None = None,
        limit: int = entities.LIST_LIMIT,
    ) -> EntityList:
        return entities.list_entities(
            self.view, kind=kind, connection=connection, query=query, cursor=cursor, limit=limit
        )

    def describe_entity(self, entity: str, *, user: str | None = None) -> EntityDescription:
        return entities.describe_entity(self.view, entity, user)


def _check_limit(limit: object) -> None:
    """A number of hits is a whole number of at least 1, as `knowl search --limit` and the MCP
    tools take it: 0, a negative number, a float or a boolean is refused, never answered
    with nothing (a caller would take "no hits" for an answer)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(f"limit must be a whole number of at least 1, not {limit!r}")
