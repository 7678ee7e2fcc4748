"""Answering from an artifact: `search`, `show`, `traverse`, the graph export and `verify`.

An artifact is the project's current build (`<out_dir>/CURRENT`) or any folder given with
`--artifact` (one downloaded from CI); peers come from `--peer` or `[peers] paths`. Nothing
here reads the source tree or git: a reader works where only the artifact is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from knowl_build.app.project import Locator
from knowl_build.artifacts import manifest, opening, publication
from knowl_build.artifacts.answers import (
    ContextAnswer,
    EntityDescription,
    EntityList,
    PageList,
    StaleList,
)
from knowl_build.artifacts.schema import MixedSearchAnswer, ShowAnswer, StaleAnswer, TraverseAnswer
from knowl_build.core.errors import ArtifactError, UsageError
from knowl_build.core.names import valid_user
from knowl_build.reader import Reader, entities, listing
from knowl_build.reader.queries import Filters
from knowl_build.reader.view import ArtifactView, find_artifact

# The kinds of semantic entities `list_entities` filters on (the MCP tool's enum).
ENTITY_KINDS = entities.KINDS


def artifact_folder(locator: Locator, artifact: Path | None) -> Path:
    """`--artifact` as given, else the project's current build."""
    if artifact is not None:
        return artifact
    return publication.resolve_artifact(locator.reader_places().out_dir)


def open_reader(
    locator: Locator, artifact: Path | None = None, peers: Sequence[Path] = ()
) -> Reader:
    """A reader of `--artifact` (or the project's current build) and its peers: `--peer`,
    else, for the project's own build, its configured `[peers] paths`."""
    peer_paths = list(peers)
    if artifact is None:  # the configuration read once, for both (start-up time)
        places = locator.reader_places()
        folder = publication.resolve_artifact(places.out_dir)
        if not peers:
            peer_paths = list(places.peers)
    else:
        folder = artifact
    store = ArtifactView.open(find_artifact(folder))
    try:
        return Reader(store, [ArtifactView.open(find_artifact(p)) for p in peer_paths])
    except BaseException:
        store.close()
        raise


class CurrentReader:
    """A reader of `--artifact`, or of the project's current build and its `[peers] paths`
    (as `knowl search` reads them), opened again when a newer build becomes current, here or
    at a peer (a long-lived front end: the MCP server). Not thread-safe: a front end that
    answers from several threads serialises its calls."""

    def __init__(self, locator: Locator, artifact: Path | None) -> None:
        self.locator = locator
        self.artifact = artifact
        self.folders: tuple[Path, ...] = ()
        self.reader: Reader | None = None

    def get(self) -> Reader:
        folders: tuple[Path, ...]
        if self.artifact is not None:
            folders = (find_artifact(self.artifact),)
        else:
            places = self.locator.reader_places()
            current = find_artifact(publication.resolve_artifact(places.out_dir))
            peers = [find_artifact(peer) for peer in places.peers]
            folders = (current, *peers)
        if self.reader is None or folders != self.folders:
            self.close()
            views = [ArtifactView.open(folders[0])]
            try:
                views.extend(ArtifactView.open(folder) for folder in folders[1:])
            except BaseException:
                for view in views:
                    view.close()
                raise
            self.reader = Reader(views[0], views[1:])
            self.folders = folders
        return self.reader

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """What `search` and `context` keep of the hits: the user, how many, the filters."""

    user: str | None = None
    limit: int = 5
    status: str = "active"
    category: str | None = None
    usage_mode: str | None = None
    tags: tuple[str, ...] = ()
    kind: str = "all"  # search: "page", "entity" or "all" (both, merged); context: pages


def search(
    reader: Reader, query: str, options: SearchOptions = SearchOptions()
) -> MixedSearchAnswer:
    """The `search` answer (SPEC 10): hits best first, caveats riding along. A blank query
    is the caller's mistake (exit 2, a tool error), never a search for nothing."""
    return reader.search(
        _words(query, "query"),
        user=valid_user(options.user),
        limit=options.limit,
        status=options.status,
        category=options.category,
        usage_mode=options.usage_mode,
        tags=options.tags,
        kind=options.kind,
    )


def show(reader: Reader, page: str, user: str | None = None) -> ShowAnswer:
    return reader.show(page, user=valid_user(user))


def traverse(
    reader: Reader,
    pages: Sequence[str],
    user: str | None = None,
    depth: int = 2,
    max_nodes: int = 50,
) -> TraverseAnswer:
    return reader.traverse(list(pages), user=valid_user(user), depth=depth, max_nodes=max_nodes)


def context(
    reader: Reader, question: str, options: SearchOptions = SearchOptions()
) -> ContextAnswer:
    """The `context` answer: pages with citations, live definitions, caveats, superseded."""
    return reader.context(
        _words(question, "question"),
        user=valid_user(options.user),
        limit=options.limit,
        status=options.status,
        category=options.category,
        usage_mode=options.usage_mode,
        tags=options.tags,
    )


def list_entities(
    reader: Reader,
    *,
    kind: str | None = None,
    connection: str | None = None,
    query: str | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> EntityList:
    return reader.list_entities(
        kind=kind, connection=connection, query=query, cursor=cursor, limit=limit
    )


def describe_entity(reader: Reader, entity: str, user: str | None = None) -> EntityDescription:
    return reader.describe_entity(entity, user=valid_user(user))


def stale(reader: Reader, user: str | None = None) -> StaleAnswer:
    """The visible pages that were not fresh when the artifact was built."""
    return reader.stale(user=valid_user(user))


def list_stale(
    reader: Reader,
    user: str | None = None,
    *,
    cursor: str | None = None,
    limit: int = listing.LIST_LIMIT,
) -> StaleList:
    """The `stale` answer one page at a time (MCP `list_stale`), with the next page's cursor."""
    return listing.stale_list(reader.view, valid_user(user), cursor, limit)


def list_pages(
    reader: Reader,
    user: str | None = None,
    *,
    cursor: str | None = None,
    limit: int = listing.LIST_LIMIT,
) -> PageList:
    """The pages `user` may read, one page at a time: global ones and their own, never
    another user's (the MCP server's resource list)."""
    return listing.list_pages(reader.view, valid_user(user), cursor, limit)


def filters(
    status: str = "active",
    category: str | None = None,
    usage_mode: str | None = None,
    tags: Sequence[str] = (),
) -> Filters:
    return Filters(status, category, usage_mode, tuple(tags))


def graph_export(locator: Locator, artifact: Path | None, fmt: str) -> str:
    """The artifact's reference graph as networkx node-link JSON, GraphML or DOT."""
    # networkx is imported only here, by the one command that needs it (start-up time).
    from knowl_build.artifacts import graph as graphs

    opened = opening.open_artifact(artifact_folder(locator, artifact))
    try:
        data = (opened.folder / "graph.json").read_text(encoding="utf-8")
    finally:
        opened.close()
    if fmt == "json":
        return data
    loaded = graphs.from_json(data)
    return graphs.to_graphml(loaded) if fmt == "graphml" else graphs.to_dot(loaded)


@dataclass(frozen=True, slots=True)
class Verification:
    """What `verify` found in an artifact folder."""

    folder: Path
    problems: list[str]  # empty: intact and safe to read
    files: int  # every file of the folder, the manifest included

    def failure(self) -> ArtifactError | None:
        """The error a corrupt artifact ends the run with (exit 2), or None."""
        if not self.problems:
            return None
        return ArtifactError(
            f"{self.folder}: {len(self.problems)} problem(s); the artifact is corrupt"
        )


def verify(locator: Locator, artifact: Path | None) -> Verification:
    """The whole artifact checked (SPEC 6.1, issue 10): every file against the manifest,
    every record against its schema, every pickle of the index."""
    folder = artifact_folder(locator, artifact)
    problems = opening.verify(folder, full=True)
    files = 0 if problems else len(manifest.read_manifest(folder).files) + 1
    return Verification(folder, problems, files)


def _words(text: str, name: str) -> str:
    """`text`, when it holds something to look for; a UsageError naming it otherwise."""
    if not text.strip():
        raise UsageError(f"the {name} is blank: give the words to look for")
    return text
