"""An opened artifact, for reading: the manifest, the page catalog, one page's record, the
graph's adjacency and the entities. Imports the artifact format only, never the build
pipeline, GitPython or networkx."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from knowl_build import artifacts
from knowl_build.artifacts import MANIFEST, Artifact, open_artifact
from knowl_build.config import MAX_BOOST
from knowl_build.errors import ArtifactError, KnowlError
from knowl_build.pageref import pick

GLOBAL = "global"
CAVEAT = "caveat"


# The boosts a reader ranks with (the configuration's `search.boosts` are in the same bounds):
# they multiply every score, and with them (and the frequencies the full validation checks)
# every score is a finite number, every JSON answer JSON.


def boost_problem(boosts: object) -> str | None:
    """Why a manifest's `search.boosts` cannot be used, or None."""
    if type(boosts) is not dict or not all(
        type(value) in (int, float) and 0 < value <= MAX_BOOST  # NaN fails too
        for value in boosts.values()
    ):
        return f"search.boosts must map fields to numbers greater than 0, at most {MAX_BOOST:g}"
    return None


def user_label(user: str | None) -> str:
    return user if user else "anonymous"


def visible(page: dict[str, Any], user: str | None) -> bool:
    return page["scope"] == GLOBAL or (user is not None and page["scope"] == f"user:{user}")


@dataclass
class Store:
    """An artifact open for reading. Its folder stays pinned (artifacts.open_artifact) until
    `close()`, so a build that publishes meanwhile never prunes it from under a query."""

    artifact: Artifact
    pages: list[dict[str, Any]]
    by_key: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_scope_id: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def open(cls, folder: Path) -> Store:
        artifact = open_artifact(folder)
        try:
            return cls._load(artifact)
        except BaseException:
            artifact.close()
            raise

    @classmethod
    def _load(cls, artifact: Artifact) -> Store:
        folder = artifact.folder
        try:
            pages = json.loads((folder / "catalog.json").read_bytes())["pages"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ArtifactError(f"{folder}: catalog.json is unreadable ({exc})") from None
        problem = boost_problem(artifact.manifest.get("search", {}).get("boosts"))
        if problem is not None:
            raise ArtifactError(f"{folder}: {MANIFEST}: {problem}")
        store = cls(artifact, pages)
        index: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for page in pages:
            store.by_key[page["key"]] = page
            index[(page["scope"], page["id"])].append(page)
        store.by_scope_id = dict(index)
        return store

    @property
    def folder(self) -> Path:
        return self.artifact.folder

    @property
    def manifest(self) -> dict[str, Any]:
        return self.artifact.manifest

    @property
    def repo(self) -> str:
        return str(self.manifest.get("repo", ""))

    @property
    def build(self) -> dict[str, Any]:
        return {"id": self.manifest["build_id"], "commit": self.manifest.get("commit")}

    @property
    def boosts(self) -> dict[str, float]:
        return dict(self.manifest.get("search", {}).get("boosts", {}))

    @property
    def max_caveats(self) -> int:
        return int(self.manifest.get("search", {}).get("max_caveats", 3))

    def page(self, scope: str, page_id: str) -> dict[str, Any] | None:
        found = self.by_scope_id.get((scope, page_id))
        return found[0] if found else None

    def shadows_global(self, page: dict[str, Any]) -> bool:
        """A user page with the id of a global page: only ever an annotation of it."""
        return page["scope"] != GLOBAL and (GLOBAL, page["id"]) in self.by_scope_id

    def annotations(self, page: dict[str, Any], user: str | None) -> list[dict[str, str]]:
        if page["scope"] != GLOBAL or user is None:
            return []
        mine = self.page(f"user:{user}", page["id"])
        return [{"page": mine["id"], "scope": mine["scope"]}] if mine else []

    def resolve(self, ref: str, user: str | None) -> dict[str, Any]:
        """PAGE as `id`, `global:<id>` or `user:<owner>:<id>`; a bare id means the global
        page if there is one, else the user's own page."""
        return pick(ref, user, self.page)

    def record(self, page: dict[str, Any]) -> dict[str, Any]:
        """The page's full record: one line of pages.jsonl, read at its offset."""
        try:
            with (self.folder / "pages.jsonl").open("rb") as handle:
                handle.seek(int(page["offset"]))
                line = handle.readline()
        except OSError as exc:
            raise ArtifactError(f"{self.folder}: pages.jsonl cannot be read ({exc})") from None
        try:
            record: dict[str, Any] = json.loads(line)
        except ValueError:
            raise ArtifactError(f"{self.folder}: pages.jsonl does not match catalog.json") from None
        if record.get("path") != page["key"]:
            raise ArtifactError(f"{self.folder}: pages.jsonl does not match catalog.json")
        return record

    @cached_property
    def searcher(self) -> Any:
        """The open Whoosh index (kept open for further queries); imported on first use."""
        from knowl_build.index import Searcher

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
        files = artifacts.validated_files(self.folder)
        if files is None:
            return None
        return {
            name.removeprefix("index/"): identity
            for name, identity in files.items()
            if name.startswith("index/")
        }

    def similarities(self, query: str) -> dict[str, float] | None:
        """Cosine of the query with every page, or None without vectors or the extra."""
        from knowl_build import embeddings

        if not (self.folder / embeddings.FOLDER).is_dir():
            return None
        return embeddings.similarities(query, self.folder / embeddings.FOLDER)

    def close(self) -> None:
        if "searcher" in self.__dict__:
            self.searcher.close()
        self.artifact.close()

    @cached_property
    def caveats(self) -> list[dict[str, Any]]:
        return [
            p
            for p in self.pages
            if p["usage_mode"] == CAVEAT and p["status"] == "active" and not self.shadows_global(p)
        ]

    @cached_property
    def caveats_by_entity(self) -> dict[str, list[dict[str, Any]]]:
        index: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for caveat in self.caveats:
            for entity in set(caveat["sl_refs"]):
                index[entity].append(caveat)
        return dict(index)

    @cached_property
    def graph(self) -> Graph:
        try:
            data = json.loads((self.folder / "graph.json").read_bytes())
        except (OSError, ValueError) as exc:
            raise ArtifactError(f"{self.folder}: graph.json is unreadable ({exc})") from None
        return Graph.from_node_link(data)

    @cached_property
    def entities(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads((self.folder / "entities.json").read_bytes())
        except (OSError, ValueError) as exc:
            raise ArtifactError(f"{self.folder}: entities.json is unreadable ({exc})") from None
        return {e["name"]: e for e in data["entities"]}


@dataclass
class Graph:
    """graph.json's adjacency, read directly (cheaper than importing networkx for a walk)."""

    nodes: dict[str, dict[str, Any]]
    out_edges: dict[str, list[tuple[str, list[str]]]]
    in_edges: dict[str, list[tuple[str, list[str]]]]

    @classmethod
    def from_node_link(cls, data: dict[str, Any]) -> Graph:
        nodes = {n["id"]: n for n in data.get("nodes", [])}
        out: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
        into: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
        for edge in data.get("edges", []):
            kinds = edge.get("kinds") or [edge.get("kind")]
            out[edge["source"]].append((edge["target"], kinds))
            into[edge["target"]].append((edge["source"], kinds))
        return cls(nodes, dict(out), dict(into))


def page_node(page: dict[str, Any]) -> str:
    return f"page:{page['scope']}:{page['id']}"


def find_artifact(path: Path, out_dir: str = ".knowl/build") -> Path:
    """An artifact folder, or a project root / output folder whose CURRENT names one (a
    corrupt CURRENT is an ArtifactError)."""
    if (path / MANIFEST).is_file():
        return path
    for candidate in (path, path / out_dir):
        if artifacts.current_name(candidate) is not None:
            return artifacts.resolve_artifact(candidate)
    raise ArtifactError(f"{path}: no knowl-build artifact here (no manifest.json or CURRENT)")
