"""An opened artifact, for reading: the manifest, the page catalog, one page's record, the
graph's adjacency and the entities. Imports the artifact format only, never the build
pipeline, GitPython or networkx."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from msgspec import UNSET, DecodeError, Raw, Struct, UnsetType

from knowl_build.artifacts import memo, publication
from knowl_build.artifacts.catalog import catalog_binding, catalog_caveats
from knowl_build.artifacts.layout import CATALOG_HEADS, MANIFEST, RECORDS
from knowl_build.artifacts.opening import Artifact, open_artifact
from knowl_build.artifacts.records import read_at
from knowl_build.artifacts.schema import (
    Bind,
    BuildRef,
    CatalogEntry,
    CatalogHeads,
    Entities,
    Entity,
    EntityNode,
    GraphData,
    Manifest,
    PageNode,
    PageRecord,
    PageRef,
    SearchHit,
    decode,
    decoder,
)
from knowl_build.core.errors import ArtifactError, KnowlError
from knowl_build.core.pageref import Named, pick
from knowl_build.index import embeddings

if TYPE_CHECKING:
    from knowl_build.reader.entity_search import EntityIndex

T = TypeVar("T")

GLOBAL = "global"
CAVEAT = "caveat"
# Page hits whose entries a view remembers (`made_hit`): a few answers' worth.
MAX_HITS_KEPT = 4096


def visible(page: CatalogEntry | Head, user: str | None) -> bool:
    return page.scope == GLOBAL or (user is not None and page.scope == f"user:{user}")


class Head(Struct, frozen=True):
    """What a query needs of every catalog entry at once (decoding every field of every
    entry costs more than the query at 10,000 pages); the rest is decoded entry by entry."""

    key: str
    id: str
    scope: str


class Heads:
    """Every entry's key, id and scope, in the catalog's order: three lists (as
    catalog-heads.json holds them), read by position."""

    def __init__(self, keys: list[str], ids: list[str], scopes: list[str]) -> None:
        self.keys, self.ids, self.scopes = keys, ids, scopes

    def __len__(self) -> int:
        return len(self.keys)


class _Heads(Struct, frozen=True):
    pages: list[Head]
    caveats: dict[str, list[int]] | UnsetType = UNSET


class _Raws(Struct, frozen=True):
    pages: list[Raw]


class _Bindings(Struct, frozen=True):
    pages: list[Bind]


_ENTRY = decoder(CatalogEntry)


class Catalog:
    """catalog.json, decoded as far as it is read: every entry's key, id and scope and the
    caveats by entity when opened, an entry's other fields when it is first asked for. Each
    decode checks the schema of what it reads (the full validation checked all of it once,
    the caveats against the entries included).

    Since schema 2.3, catalog-heads.json gives what a search needs of every entry (`Heads`,
    statuses, usage modes), the caveats, the bindings and where each entry's bytes are: an
    entry is then read alone, and a search never reads catalog.json whole. Before 2.3, it is
    decoded whole when opened."""

    def __init__(self, folder: Path, heads: CatalogHeads | None = None) -> None:
        self.folder = folder
        self.path = folder / "catalog.json"
        self._spans: tuple[list[int], list[int]] | None = None
        self._columns: tuple[list[str], list[str], dict[str, list[int]]] | None = None
        self.raws: list[Raw] = []
        if heads is not None:
            self.heads = Heads(heads.keys, heads.ids, heads.scopes)
            self._spans = (heads.starts, heads.ends)
            self._columns = (heads.statuses, heads.usage_modes, heads.binding)
            caveats: dict[str, list[int]] | UnsetType = heads.caveats
            columns = (heads.ids, heads.scopes, heads.statuses, heads.usage_modes, heads.starts)
            if {len(column) for column in (*columns, heads.ends)} != {len(heads.keys)}:
                raise ArtifactError(f"{folder}: catalog-heads.json lists its entries unevenly")
        else:
            data = self._data
            whole = _read(folder, "catalog.json", _Heads, data)
            pages = whole.pages
            self.heads = Heads(
                [h.key for h in pages], [h.id for h in pages], [h.scope for h in pages]
            )
            self.raws = _read(folder, "catalog.json", _Raws, data).pages
            if len(self.raws) != len(self.heads):
                raise ArtifactError(f"{folder}: catalog.json changed while it was read")
            caveats = whole.caveats
        self.entries: list[CatalogEntry | None] = [None] * len(self.heads)
        self.position = {key: i for i, key in enumerate(self.heads.keys)}
        self._caveats = None if isinstance(caveats, UnsetType) else caveats

    @cached_property
    def _data(self) -> bytes:
        try:
            return self.path.read_bytes()
        except OSError as exc:
            raise ArtifactError(
                f"{self.folder}: catalog.json is unreadable ({exc.strerror})"
            ) from None

    def _raw(self, i: int, data: bytes | None = None) -> bytes | memoryview | Raw:
        """Entry `i`'s bytes: its slice of the catalog decoded whole, of `data` (the whole
        file, read once for many entries), else read alone at its span."""
        if self._spans is None:
            return self.raws[i]
        start, end = self._spans[0][i], self._spans[1][i]
        if data is not None:
            if not 0 <= start < end <= len(data):
                raise ArtifactError(f"{self.folder}: catalog-heads.json gives entry {i} no bytes")
            return memoryview(data)[start:end]
        try:
            with self.path.open("rb") as handle:
                if not 0 <= start < end <= os.fstat(handle.fileno()).st_size:
                    raise ArtifactError(
                        f"{self.folder}: catalog-heads.json gives entry {i} no bytes"
                    )
                handle.seek(start)
                return handle.read(end - start)
        except OSError as exc:
            raise ArtifactError(
                f"{self.folder}: catalog.json is unreadable ({exc.strerror})"
            ) from None

    def entry(self, i: int, data: bytes | None = None) -> CatalogEntry:
        found = self.entries[i]
        if found is None:
            raw = self._raw(i, data)
            try:
                found = _ENTRY.decode(raw)
            except (DecodeError, RecursionError):
                found = _read(self.folder, f"catalog.json pages[{i}]", CatalogEntry, raw)
            heads = self.heads
            if (found.key, found.id, found.scope) != (heads.keys[i], heads.ids[i], heads.scopes[i]):
                raise ArtifactError(f"{self.folder}: catalog.json changed while it was read")
            self.entries[i] = found
        return found

    def all(self) -> list[CatalogEntry]:
        """Every entry (catalog.json read once, not once an entry)."""
        data = self._data if self._spans is not None else None
        return [self.entry(i, data) for i in range(len(self.heads))]

    @cached_property
    def by_scope_id(self) -> dict[tuple[str, str], list[int]]:
        index: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, scope_id in enumerate(zip(self.heads.scopes, self.heads.ids, strict=True)):
            index[scope_id].append(i)
        return dict(index)

    @cached_property
    def caveats_by_entity(self) -> dict[str, list[int]]:
        """The active caveat pages about each entity (a user page that shadows a global
        one is no caveat of its own), by position: as catalog.json lists them since 1.1."""
        if self._caveats is None:
            return catalog_caveats(self.all())
        count = len(self.heads)
        if not _within(self._caveats, count):
            raise ArtifactError(f"{self.folder}: catalog.json lists caveats it does not hold")
        return self._caveats

    @cached_property
    def caveats(self) -> list[int]:
        return sorted({i for found in self.caveats_by_entity.values() for i in found})

    @cached_property
    def _bound(self) -> tuple[list[str], list[str], dict[str, list[int]]]:
        """Every entry's status and usage mode, and the entries binding each entity: from
        catalog-heads.json, else decoded from the whole catalog (`Bind`)."""
        if self._columns is not None:
            count = len(self.heads)
            if not _within(self._columns[2], count):
                raise ArtifactError(f"{self.folder}: catalog-heads.json binds entries it lacks")
            return self._columns
        pages = _read(self.folder, "catalog.json", _Bindings, self._data).pages
        if len(pages) != len(self.heads):
            raise ArtifactError(f"{self.folder}: catalog.json changed while it was read")
        return [p.status for p in pages], [p.usage_mode for p in pages], catalog_binding(pages)

    @property
    def statuses(self) -> list[str]:
        return self._bound[0]

    @property
    def usage_modes(self) -> list[str]:
        return self._bound[1]

    @property
    def binding(self) -> dict[str, list[int]]:
        """The positions of the entries binding each entity (in `sl_refs`), in catalog order,
        each once."""
        return self._bound[2]


def _within(positions: Mapping[str, list[int]], count: int) -> bool:
    """Whether every position listed is one of `count` entries (two passes in C, not one
    Python step per position: a binding lists every `sl_ref` of the catalog)."""
    lists = [found for found in positions.values() if found]
    return not lists or (min(map(min, lists)) >= 0 and max(map(max, lists)) < count)


class _ByKey(Mapping[str, CatalogEntry]):
    """The catalog's entries by key, decoded as they are looked up."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def __getitem__(self, key: str) -> CatalogEntry:
        return self.catalog.entry(self.catalog.position[key])

    def __contains__(self, key: object) -> bool:
        return key in self.catalog.position

    def __iter__(self) -> Iterator[str]:
        return iter(self.catalog.position)

    def __len__(self) -> int:
        return len(self.catalog.position)


class _ByScopeId(Mapping[tuple[str, str], list[CatalogEntry]]):
    """The catalog's entries by (scope, id), decoded as they are looked up."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def __getitem__(self, key: tuple[str, str]) -> list[CatalogEntry]:
        return [self.catalog.entry(i) for i in self.catalog.by_scope_id[key]]

    def __contains__(self, key: object) -> bool:
        return key in self.catalog.by_scope_id

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.catalog.by_scope_id)

    def __len__(self) -> int:
        return len(self.catalog.by_scope_id)


class _CaveatsByEntity(Mapping[str, list[CatalogEntry]]):
    """The active caveats about each entity, decoded as they are looked up."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def __getitem__(self, entity: str) -> list[CatalogEntry]:
        return [self.catalog.entry(i) for i in self.catalog.caveats_by_entity[entity]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.catalog.caveats_by_entity)

    def __len__(self) -> int:
        return len(self.catalog.caveats_by_entity)


@dataclass
class ArtifactView:
    """An artifact open for reading. Its folder stays pinned (opening.open_artifact) until
    `close()`, so a build that publishes meanwhile never prunes it from under a query.

    Records are decoded into their types (`artifacts.schema`) as they are read: a file that
    lost its shape after the folder was validated is an ArtifactError, never a KeyError."""

    artifact: Artifact
    catalog: Catalog
    # The entry each recent page hit was made of (`made_hit`), by the hit's identity.
    _hits: dict[int, tuple[SearchHit, CatalogEntry]] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, folder: Path) -> ArtifactView:
        artifact = open_artifact(folder)
        try:
            return cls._load(artifact)
        except BaseException:
            artifact.close()
            raise

    @classmethod
    def _load(cls, artifact: Artifact) -> ArtifactView:
        folder = artifact.folder
        heads = None
        if CATALOG_HEADS in artifact.manifest.files:
            heads = _read(folder, CATALOG_HEADS, CatalogHeads)
        return cls(artifact, Catalog(folder, heads))

    @cached_property
    def pages(self) -> list[CatalogEntry]:
        """Every page of the catalog, in its order."""
        return self.catalog.all()

    @cached_property
    def by_key(self) -> Mapping[str, CatalogEntry]:
        return _ByKey(self.catalog)

    @cached_property
    def by_scope_id(self) -> Mapping[tuple[str, str], list[CatalogEntry]]:
        return _ByScopeId(self.catalog)

    @property
    def folder(self) -> Path:
        return self.artifact.folder

    @property
    def manifest(self) -> Manifest:
        return self.artifact.manifest

    @property
    def repo(self) -> str:
        return self.manifest.repo

    @property
    def build(self) -> BuildRef:
        return {"id": self.manifest.build_id, "commit": self.manifest.commit}

    @property
    def boosts(self) -> dict[str, float]:
        return dict(self.manifest.search.boosts)

    @property
    def max_caveats(self) -> int:
        return self.manifest.search.max_caveats

    def binding(self, entity: str) -> list[CatalogEntry]:
        """The pages whose `sl_refs` name `entity`, in catalog order (decoded alone)."""
        return [self.catalog.entry(i) for i in self.catalog.binding.get(entity, ())]

    def bound(self, entity: str) -> list[int]:
        """The positions of the pages whose `sl_refs` name `entity`, in catalog order (their
        `catalog.heads`, `statuses` and `usage_modes` say what a search needs; nothing is
        decoded)."""
        return self.catalog.binding.get(entity, [])

    def made_hit(self, hit: SearchHit, page: CatalogEntry) -> SearchHit:
        """`hit`, noted as made of `page`: the passage of the hit is that page's, even where
        pages share an id (`entry_of_hit`), found without indexing the catalog by id."""
        if len(self._hits) >= MAX_HITS_KEPT:
            self._hits.clear()
        self._hits[id(hit)] = (hit, page)
        return hit

    def entry_of_hit(self, hit: SearchHit) -> CatalogEntry | None:
        """The entry a page hit of this artifact was made of (by its scope and id when it was
        made elsewhere: a copy)."""
        made = self._hits.get(id(hit))
        if made is not None and made[0] is hit:
            return made[1]
        return self.page(hit["scope"], hit["page"])

    def page(self, scope: str, page_id: str) -> CatalogEntry | None:
        found = self.by_scope_id.get((scope, page_id))
        return found[0] if found else None

    def entry_of(self, node: PageNode) -> CatalogEntry | None:
        """The catalog entry of a graph node, by its path (ids may be shared)."""
        return self.by_key.get(node.path)

    def shadows_global(self, page: CatalogEntry) -> bool:
        """A user page with the id of a global page: only ever an annotation of it."""
        return page.scope != GLOBAL and (GLOBAL, page.id) in self.by_scope_id

    def annotations(self, page: CatalogEntry, user: str | None) -> list[PageRef]:
        if page.scope != GLOBAL or user is None:
            return []
        mine = self.page(f"user:{user}", page.id)
        return [{"page": mine.id, "scope": mine.scope}] if mine else []

    def resolve(self, ref: str, user: str | None) -> CatalogEntry:
        """PAGE as `id`, `global:<id>` or `user:<owner>:<id>`; a bare id means the global
        page if there is one, else the user's own page. An id several pages share names none
        of them (AmbiguousPage); their path under the scope folder names one (`pageref.pick`)."""

        def find(scope: str, page_id: str) -> list[Named[CatalogEntry]]:
            return [
                Named(page, page.key, None if isinstance(page.node, UnsetType) else page.node)
                for page in self.by_scope_id.get((scope, page_id), ())
            ]

        def ids(scope: str) -> list[str]:
            return [page_id for (held, page_id) in self.by_scope_id if held == scope]

        return pick(ref, user, find, ids=ids)

    def record(self, page: CatalogEntry) -> PageRecord:
        """The page's full record: the member of the records at its offset."""
        try:
            line = read_at(self.folder / RECORDS, page.offset)
        except ArtifactError as exc:
            raise ArtifactError(f"{self.folder}: {exc}") from None
        record = _read(self.folder, RECORDS, PageRecord, line)
        if record.path != page.key:
            raise ArtifactError(f"{self.folder}: {RECORDS} does not match catalog.json")
        return record

    @cached_property
    def searcher(self) -> Any:
        """The open Whoosh index (kept open for further queries); imported on first use."""
        # Whoosh loads on the first query only (start-up time of `knowl show`).
        from knowl_build.index.ranking import Searcher

        try:
            return Searcher(self.folder / "index", validated=self._validated_index())
        except KnowlError:
            raise
        except Exception as exc:  # a damaged index: a reason, never a traceback
            raise ArtifactError(f"{self.folder}: the index cannot be opened ({exc})") from None

    def _validated_index(self) -> dict[str, tuple[int, int, int, int]] | None:
        """Each index file's identity as this machine's full validation decoded it (the
        validation memo of `artifacts`), when the folder is still in that state; else None,
        and the index is read with the bounded unpickler only."""
        files = memo.validated_files(self.folder)
        if files is None:
            return None
        return {
            name.removeprefix("index/"): identity
            for name, identity in files.items()
            if name.startswith("index/")
        }

    def similarities(self, query: str) -> dict[str, float] | None:
        """Cosine of the query with every page, or None without vectors or the extra."""

        if not (self.folder / embeddings.FOLDER).is_dir():
            return None
        return embeddings.similarities(query, self.folder / embeddings.FOLDER)

    def close(self) -> None:
        if "searcher" in self.__dict__:
            self.searcher.close()
        self.artifact.close()

    @cached_property
    def caveats(self) -> list[CatalogEntry]:
        return [self.catalog.entry(i) for i in self.catalog.caveats]

    @cached_property
    def caveats_by_entity(self) -> Mapping[str, list[CatalogEntry]]:
        return _CaveatsByEntity(self.catalog)

    @cached_property
    def graph(self) -> Graph:
        return Graph.from_node_link(_read(self.folder, "graph.json", GraphData))

    @cached_property
    def entities(self) -> dict[str, Entity]:
        return {e.name: e for e in _read(self.folder, "entities.json", Entities).entities}

    @cached_property
    def entity_index(self) -> EntityIndex:
        """The entities analysed for search, once per opened artifact."""
        # Imported here: start-up time (only a search for entities analyses them).
        from knowl_build.reader.entity_search import EntityIndex

        return EntityIndex(self.entities)


@dataclass
class Graph:
    """graph.json's adjacency, read directly (cheaper than importing networkx for a walk)."""

    nodes: dict[str, PageNode | EntityNode]
    out_edges: dict[str, list[tuple[str, list[str]]]]
    in_edges: dict[str, list[tuple[str, list[str]]]]

    @classmethod
    def from_node_link(cls, data: GraphData) -> Graph:
        nodes = {n.id: n for n in data.nodes}
        out: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
        into: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
        for edge in data.edges:
            kinds = edge.kinds or [edge.kind]
            out[edge.source].append((edge.target, kinds))
            into[edge.target].append((edge.source, kinds))
        return cls(nodes, dict(out), dict(into))

    def page_at(self, node: str) -> PageNode | None:
        found = self.nodes.get(node)
        return found if isinstance(found, PageNode) else None


def _read(folder: Path, name: str, kind: type[T], data: bytes | memoryview | None = None) -> T:
    """A file of the artifact (or `data` read from it) decoded into its record type."""
    if data is None:
        try:
            data = (folder / name).read_bytes()
        except OSError as exc:
            raise ArtifactError(f"{folder}: {name} is unreadable ({exc.strerror})") from None
    try:
        return decode(name, data, kind)
    except ArtifactError as exc:
        raise ArtifactError(f"{folder}: {exc}") from None


def page_node(page: CatalogEntry) -> str:
    """The page's node in graph.json: named by its id, or by its path when its id is shared."""
    name = page.id if isinstance(page.node, UnsetType) else page.node
    return f"page:{page.scope}:{name}"


def find_artifact(path: Path, out_dir: str = ".knowl/build") -> Path:
    """An artifact folder, or a project root / output folder whose CURRENT names one (a
    corrupt CURRENT is an ArtifactError)."""
    if (path / MANIFEST).is_file():
        return path
    for candidate in (path, path / out_dir):
        if publication.current_name(candidate) is not None:
            return publication.resolve_artifact(candidate)
    raise ArtifactError(f"{path}: no knowl-build artifact here (no manifest.json or CURRENT)")
