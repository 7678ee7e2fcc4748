"""Fingerprints against git history (SPEC 5): when each entity was introduced and last
changed, the expression behind every measure fingerprint ever seen, each page's commits.

The semantic layer is replayed commit by commit from one first-parent `git log` pass; each
blob is read once through the batch reader and parsed once. Entities are followed by
identity (connection and name), so a renamed or moved file keeps its entities' history.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowl_build.config import Config
from knowl_build.history import WORKING_TREE, Commit, EntityHistory, GitHistory, History
from knowl_build.parse.dbt import DbtProject, read_dbt_file
from knowl_build.parse.semantics import FileRead, SemanticLayer, combine, read_source_file


@dataclass(frozen=True, slots=True)
class _State:
    kind: str
    fingerprint: str


def _layer_at(
    files: dict[str, str],
    parsed: dict[str, FileRead],
    history: GitHistory,
    dbt: DbtProject | None,
    exprs: dict[str, str],
) -> dict[str, _State]:
    """The layer's entities for a set of files (path -> blob id), each blob parsed once."""
    reads = []
    for path in sorted(files):
        key = f"{path}\0{files[path]}"
        if key not in parsed:
            data = history.blob(files[path]) or b"\x00"
            if dbt is not None and dbt.is_model_file(path):
                parsed[key] = read_dbt_file(path, data, dbt)
            else:
                parsed[key] = read_source_file(path, data)
        reads.append(parsed[key])
    layer = combine(reads)
    for kinds in layer.members.values():
        for entity in kinds.values():
            expr = entity.definition.get("expr") if entity.kind == "measure" else None
            if isinstance(expr, str):
                exprs.setdefault(entity.fingerprint, expr)
    return {name: _State(e.kind, e.fingerprint) for name, e in layer.entities.items()}


def _live_state(layer: SemanticLayer, exprs: dict[str, str]) -> dict[str, _State]:
    state = {}
    for name, entity in layer.entities.items():
        state[name] = _State(entity.kind, entity.fingerprint)
        expr = entity.definition.get("expr") if entity.kind == "measure" else None
        if isinstance(expr, str):
            exprs.setdefault(entity.fingerprint, expr)
    return state


def _apply(
    before: dict[str, _State],
    after: dict[str, _State],
    ref: str,
    entities: dict[str, EntityHistory],
) -> None:
    for name, now in after.items():
        record = entities.get(name)
        if record is None:
            entities[name] = EntityHistory(ref, None, None, now.kind, now.fingerprint)
            continue
        if name not in before:  # it was removed earlier and is back
            record.removed_in = None
            if record.fingerprint != now.fingerprint:
                record.changed_in = ref
        elif before[name].fingerprint != now.fingerprint:
            record.changed_in = ref
        record.kind, record.fingerprint = now.kind, now.fingerprint
    for name in before:
        if name not in after:
            entities[name].removed_in = ref


@dataclass(slots=True)
class _Replay:
    """The replay after some commit: what the next commits continue from (cached as JSON)."""

    head: str | None = None
    commits: dict[str, Commit] = field(default_factory=dict)
    entities: dict[str, EntityHistory] = field(default_factory=dict)
    exprs: dict[str, str] = field(default_factory=dict)
    page_commits: dict[str, list[str]] = field(default_factory=dict)  # oldest first
    files: dict[str, str] = field(default_factory=dict)  # semantic file -> blob id
    state: dict[str, _State] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "head": self.head,
            "commits": {k: [c.time, c.author, c.subject] for k, c in self.commits.items()},
            "entities": {k: e.to_list() for k, e in self.entities.items()},
            "exprs": self.exprs,
            "page_commits": self.page_commits,
            "files": self.files,
            "state": {k: [s.kind, s.fingerprint] for k, s in self.state.items()},
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> _Replay:
        return cls(
            head=d["head"],
            commits={k: Commit(k, int(t), a, s) for k, (t, a, s) in d["commits"].items()},
            entities={k: EntityHistory.from_list(v) for k, v in d["entities"].items()},
            exprs=dict(d["exprs"]),
            page_commits={k: list(v) for k, v in d["page_commits"].items()},
            files=dict(d["files"]),
            state={k: _State(kind, fp) for k, (kind, fp) in d["state"].items()},
        )


def _cache_key(config: Config, dbt: DbtProject | None) -> str:
    from knowl_build import __version__

    parts = [
        __version__,
        config.knowledge_dir,
        config.semantics_dir,
        [dbt.project_dir, dbt.connection, list(dbt.model_paths)] if dbt else None,
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _load(path: Path | None, key: str) -> _Replay | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_bytes())
        if data.get("key") != key:
            return None
        return _Replay.from_json(data["replay"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def trace(
    git: GitHistory,
    config: Config,
    layer: SemanticLayer,
    dbt: DbtProject | None = None,
    cache: Path | None = None,
) -> History:
    """Replay the first-parent history of HEAD over the project's knowledge and semantics.

    With a `cache` file, a replay saved at an earlier HEAD on the same first-parent line is
    continued with only the newer commits."""
    semantics_prefix = config.semantics_dir + "/"
    knowledge_prefix = config.knowledge_dir + "/"
    folders = [config.knowledge_dir, config.semantics_dir]
    if dbt is not None:
        folders.append(dbt.project_dir or ".")
    key = _cache_key(config, dbt)
    head = git.repo.head()
    replay = _load(cache, key)
    if (
        replay is not None
        and replay.head != head
        and (replay.head is None or replay.head not in git.first_parent_chain())
    ):
        replay = None  # history was rewritten: replay it all
    if replay is None:
        replay = _Replay()
    since = replay.head
    log = [] if since == head else git.log(folders, since=since)
    parsed: dict[str, FileRead] = {}

    def semantic(path: str) -> bool:
        if dbt is not None and dbt.is_model_file(path):
            return True
        return path.startswith(semantics_prefix) and path.endswith((".yaml", ".yml"))

    for commit, changes in reversed(log):  # oldest first
        replay.commits[commit.sha] = commit
        touched_semantics = False
        for change in changes:
            for path in {change.old, change.new} - {""}:
                if semantic(path):
                    touched_semantics = True
            if change.old and semantic(change.old):
                replay.files.pop(change.old, None)
            if change.new and semantic(change.new):
                replay.files[change.new] = change.blob
            if change.new.startswith(knowledge_prefix) and change.new.endswith(".md"):
                pages = replay.page_commits.pop(change.old, []) if change.old else []
                pages.append(commit.sha)
                replay.page_commits[change.new] = pages
        if touched_semantics:
            after = _layer_at(replay.files, parsed, git, dbt, replay.exprs)
            _apply(replay.state, after, commit.sha, replay.entities)
            replay.state = after
    replay.head = head
    if cache is not None and log:
        try:
            from knowl_build.files import atomic_write

            atomic_write(
                cache,
                json.dumps(
                    {"key": key, "replay": replay.to_json()}, separators=(",", ":")
                ).encode(),
            )
        except OSError:
            pass  # a read-only checkout replays everything next time

    # Uncommitted changes, on copies: the cached replay stays at HEAD.
    entities = {name: copy.copy(record) for name, record in replay.entities.items()}
    exprs = dict(replay.exprs)
    _apply(replay.state, _live_state(layer, exprs), WORKING_TREE, entities)
    page_commits = {path: list(reversed(shas)) for path, shas in replay.page_commits.items()}
    return History(head, dict(replay.commits), entities, exprs, page_commits)
