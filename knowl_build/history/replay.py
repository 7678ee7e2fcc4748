"""Fingerprints against git history (SPEC 5): when each entity was introduced and last
changed (each version's fingerprint, and renames), the definition behind every fingerprint
ever seen, each page's commits.

The semantic layer is replayed commit by commit from one first-parent `git log` pass; the
blobs it needs are read in one batch and each is parsed once. Entities are followed by
identity (connection and name), so a renamed or moved file keeps its entities' history.

What git cannot give is never guessed: in a shallow clone the oldest commit's files were not
added there (its entities' introduction is unknown); a blob git cannot read leaves its file
as it was in the last version read (a problem names it, KB012); a log git cannot read at all
leaves the history unknown (INCOMPLETE).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowl_build import __version__
from knowl_build.core.config import Config
from knowl_build.history.git import GitFailed
from knowl_build.history.log import GitHistory, LogEntry, history_pathspecs
from knowl_build.history.records import (
    INCOMPLETE,
    SHALLOW,
    WORKING_TREE,
    Commit,
    EntityHistory,
    History,
)
from knowl_build.semantic.canonic import read_source_file
from knowl_build.semantic.dbt import DbtProject, read_dbt_file
from knowl_build.semantic.layer import FileRead, SemanticLayer, combine
from knowl_build.support.files import atomic_write
from knowl_build.support.trust import MachineKey, Sealer, machine_key, read_sealed

SOURCE = "source"  # the kind of a source (its members are named `<source>.<member>`)


@dataclass(frozen=True, slots=True)
class _State:
    kind: str
    fingerprint: str
    # git could not read this version of the entity's file: the fingerprint is the last read
    stale: bool = False
    # the first version read of a file whose earlier versions git could not read
    origin_unknown: bool = False


def _layer_at(
    files: dict[str, str],
    parsed: dict[str, FileRead],
    blobs: dict[str, bytes],
    last: dict[str, FileRead],
    unread: set[str],
    dbt: DbtProject | None,
    definitions: dict[str, str],
) -> dict[str, _State]:
    """The layer's entities for a set of files (path -> blob id), each blob parsed once.

    A file whose blob git could not read keeps the entities of the last version read
    (`last`), marked stale: the version is neither a removal nor a change, and the next one
    read says whether something changed in between. A file with no version read yet is left
    out (`unread`) until one can be read, whose entities' origin is then unknown."""
    reads = []
    stale: set[str] = set()
    fresh: set[str] = set()
    for path in sorted(files):
        key = f"{path}\0{files[path]}"
        if key not in parsed:
            data = blobs.get(files[path])
            if data is None:
                if path in last:
                    reads.append(last[path])
                    stale.add(path)
                else:
                    unread.add(path)
                continue
            if dbt is not None and dbt.is_model_file(path):
                parsed[key] = read_dbt_file(path, data, dbt)
            else:
                parsed[key] = read_source_file(path, data)
        if path in unread:
            unread.discard(path)
            fresh.add(path)
        last[path] = parsed[key]
        reads.append(parsed[key])
    layer = combine(reads)
    for entity in layer.entities.values():
        definitions.setdefault(entity.fingerprint, entity.fingerprinted)
    return {
        name: _State(e.kind, e.fingerprint, e.path in stale, e.path in fresh)
        for name, e in layer.entities.items()
    }


def _live_state(layer: SemanticLayer, definitions: dict[str, str]) -> dict[str, _State]:
    state = {}
    for name, entity in layer.entities.items():
        state[name] = _State(entity.kind, entity.fingerprint)
        definitions.setdefault(entity.fingerprint, entity.fingerprinted)
    return state


def _apply(
    before: dict[str, _State],
    after: dict[str, _State],
    ref: str,
    entities: dict[str, EntityHistory],
    boundary: bool = False,
) -> None:
    """Record the step from `before` to `after` made by `ref`.

    What the history cannot show is left unknown (`unknown_past`), never guessed: at a
    shallow clone's oldest commit (`boundary`) the entities were there already (not
    introduced there); after a version git could not read, a different fingerprint may have
    come from that version or from this one, and an entity gone may have gone in either.

    An entity removed by `ref` while one entity of its kind and fingerprint was added by it
    was renamed (`renamed_to`): a model or measure rename keeps the definition; so was a
    member of a source renamed by it, when the new source has a member of its name and kind
    (its definition may have changed in the same commit)."""
    added: list[str] = []
    for name, now in after.items():
        record = entities.get(name)
        if record is None:
            if boundary or now.origin_unknown:
                entities[name] = EntityHistory(
                    None, None, None, now.kind, now.fingerprint, unknown_past=True
                )
                entities[name].versions.append((None, now.fingerprint))
            else:
                entities[name] = EntityHistory(ref, None, None, now.kind, now.fingerprint)
                entities[name].versions.append((ref, now.fingerprint))
                added.append(name)
            continue
        if now.stale:
            continue  # unread: the record stays as last seen
        previous = before.get(name)
        if previous is None:  # it was removed earlier and is back
            record.removed_in = record.renamed_to = None
            added.append(name)
            if record.fingerprint != now.fingerprint:
                record.changed_in = ref
                record.versions.append((ref, now.fingerprint))
        elif previous.fingerprint != now.fingerprint:
            if previous.stale:
                record.changed_in, record.unknown_past = None, True
                record.versions.append((None, now.fingerprint))
            else:
                record.changed_in = ref
                record.versions.append((ref, now.fingerprint))
        record.kind, record.fingerprint = now.kind, now.fingerprint
    removed: list[str] = []
    for name, previous in before.items():
        if name not in after:
            record = entities[name]
            if previous.stale:
                record.removed_in, record.unknown_past = None, True
            else:
                record.removed_in = ref
                removed.append(name)
    for old, new in _renames(removed, added, entities).items():
        entities[old].renamed_to = new


def _renames(
    removed: list[str], added: list[str], entities: dict[str, EntityHistory]
) -> dict[str, str]:
    """Removed entity -> the added one it became. A source: the only added source of its
    fingerprint, else the only one with its member set (its members' names and kinds: a dbt
    model or a Canonic source renamed while its own definition changed). A member of a renamed
    source: the member of its name and kind in the new source, even when its definition
    changed in the same commit. Any other entity: the only added entity of its kind and
    fingerprint (of several, the only one with its member name, else in its source). An
    added entity two removed ones could have become is neither's."""
    found = _same_shape(removed, added, entities)
    sources = _renamed_sources(removed, added, entities, found)
    now = set(added)
    for old in removed:
        parent, _, member = old.rpartition(".")
        if parent not in sources:
            continue
        new = f"{sources[parent]}.{member}"
        if new in now and entities[new].kind == entities[old].kind:
            found[old] = new
    found.update(sources)
    targets = list(found.values())
    return {old: new for old, new in found.items() if targets.count(new) == 1}


def _same_shape(
    removed: list[str], added: list[str], entities: dict[str, EntityHistory]
) -> dict[str, str]:
    """Removed entity -> the only added entity of its kind and fingerprint (of several, the
    only one with its member name, else in its source)."""
    by_shape: dict[tuple[str, str], list[str]] = {}
    for name in added:
        record = entities[name]
        by_shape.setdefault((record.kind, record.fingerprint), []).append(name)
    found: dict[str, str] = {}
    for old in removed:
        record = entities[old]
        candidates = by_shape.get((record.kind, record.fingerprint), [])
        source, _, member = old.rpartition(".")
        for narrowed in (
            candidates,
            [c for c in candidates if c.rpartition(".")[2] == member],
            [c for c in candidates if c.rpartition(".")[0] == source],
        ):
            if len(narrowed) == 1:
                found[old] = narrowed[0]
                break
    return found


def _renamed_sources(
    removed: list[str],
    added: list[str],
    entities: dict[str, EntityHistory],
    found: dict[str, str],
) -> dict[str, str]:
    """Removed source -> the added source it became: the one `found` by its fingerprint, else
    the only added source whose members (names and kinds) are the removed one's. A source two
    removed ones could have become is neither's."""

    def members(names: list[str]) -> dict[str, frozenset[tuple[str, str]]]:
        of: dict[str, set[tuple[str, str]]] = {}
        for name in names:
            parent, _, member = name.rpartition(".")
            of.setdefault(parent, set()).add((member, entities[name].kind))
        return {parent: frozenset(kinds) for parent, kinds in of.items()}

    gone, new = members(removed), members(added)
    olds = [name for name in removed if entities[name].kind == SOURCE]
    sources = {old: found[old] for old in olds if old in found}
    fresh = [n for n in added if entities[n].kind == SOURCE and n not in sources.values()]
    for old in olds:
        shape = gone.get(old)
        if old in sources or not shape:
            continue
        alike = [name for name in fresh if new.get(name) == shape]
        if len(alike) == 1:
            sources[old] = alike[0]
    targets = list(sources.values())
    return {old: new for old, new in sources.items() if targets.count(new) == 1}


@dataclass(slots=True)
class _Replay:
    """The replay after some commit: what the next commits continue from (cached as JSON)."""

    head: str | None = None
    commits: dict[str, Commit] = field(default_factory=dict)
    entities: dict[str, EntityHistory] = field(default_factory=dict)
    definitions: dict[str, str] = field(default_factory=dict)
    page_commits: dict[str, list[str]] = field(default_factory=dict)  # oldest first
    files: dict[str, str] = field(default_factory=dict)  # semantic file -> blob id
    state: dict[str, _State] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "head": self.head,
            "commits": {k: [c.time, c.author, c.subject] for k, c in self.commits.items()},
            "entities": {k: e.to_list() for k, e in self.entities.items()},
            "definitions": self.definitions,
            "page_commits": self.page_commits,
            "files": self.files,
            "state": {k: [s.kind, s.fingerprint, s.stale] for k, s in self.state.items()},
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> _Replay:
        return cls(
            head=d["head"],
            commits={k: Commit(k, int(t), a, s) for k, (t, a, s) in d["commits"].items()},
            entities={k: EntityHistory.from_list(v) for k, v in d["entities"].items()},
            definitions=dict(d["definitions"]),
            page_commits={k: list(v) for k, v in d["page_commits"].items()},
            files=dict(d["files"]),
            state={k: _State(v[0], v[1], bool(v[2:3] and v[2])) for k, v in d["state"].items()},
        )


# 2: entities record unknown_past; the key holds the shallow boundary. 3: every version's
# fingerprint, renames, every kind's definition text (dbt fingerprints cover agg and params).
# 4: commit authors and subjects redacted (a cache of 3 may hold a secret in one).
# 5: a renamed source's members are renames even when their definitions changed with it.
REPLAY_FORMAT = 5


def _cache_key(config: Config, dbt: DbtProject | None, boundary: str | None) -> str:
    """What a cached replay depends on. A shallow clone's boundary is part of it: after
    `git fetch --unshallow` (or `--deepen`) the history is replayed again."""

    parts = [
        __version__,
        REPLAY_FORMAT,
        config.knowledge_dir,
        config.semantics_dir,
        [dbt.project_dir, dbt.connection, list(dbt.model_paths)] if dbt else None,
        boundary,
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


# The cache is sealed with the machine's key: a replay this machine did not write (one
# committed with the project can say any entity never changed) is no cache.
HISTORY_SEAL = "history-replay"


def _load(path: Path | None, key: str, sealer: Sealer | None) -> _Replay | None:
    if path is None:
        return None
    raw = read_sealed(path, sealer)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        if data.get("key") != key:
            return None
        return _Replay.from_json(data["replay"])
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError):
        return None


def _continued(git: GitHistory, replay: _Replay | None, head: str | None) -> _Replay | None:
    """The cached replay when HEAD descends from its commit on the first-parent line (it is
    continued with the newer commits); None when history was rewritten (replay it all)."""
    if replay is None or replay.head == head:
        return replay
    try:
        chain = git.first_parent_chain() if replay.head is not None else []
    except GitFailed:
        chain = []  # the log says what git cannot read
    return None if replay.head is None or replay.head not in chain else replay


@dataclass(frozen=True, slots=True)
class _Semantic:
    """Whether a path holds semantic YAML: under the semantics folder, or a dbt model file."""

    prefix: str
    dbt: DbtProject | None

    def __call__(self, path: str) -> bool:
        if self.dbt is not None and self.dbt.is_model_file(path):
            return True
        return path.startswith(self.prefix) and path.endswith((".yaml", ".yml"))


def _read_versions(
    git: GitHistory, replay: _Replay, log: list[LogEntry], semantic: _Semantic
) -> tuple[dict[str, bytes], bool]:
    """Every blob the replay reads, in one batch, and whether one could not be read (each
    such version is a problem naming where it was first seen)."""
    wanted = {blob: (path, replay.head or "") for path, blob in replay.files.items()}
    for commit, changes in reversed(log):
        for change in changes:
            if change.new and semantic(change.new):
                wanted.setdefault(change.blob, (change.new, commit.sha))
    blobs = git.read_blobs(wanted)
    gaps = False  # a version the replay could not read: what it says may be incomplete
    for blob, (path, sha) in wanted.items():
        if blob in git.unreadable:
            gaps = True
            git.problem(
                f"git could not read {path} in commit {sha[:12]} (blob {blob}: "
                f"{git.unreadable[blob]}); the history rules go on without that version"
            )
    return blobs, gaps


def _replay_log(
    replay: _Replay,
    log: list[LogEntry],
    boundary: str | None,
    semantic: _Semantic,
    knowledge_prefix: str,
    blobs: dict[str, bytes],
    dbt: DbtProject | None,
) -> None:
    """Apply `log`'s commits, oldest first, to `replay`: the semantic files and the layer
    each commit that touched one leaves, the commits of each page (following renames)."""
    parsed: dict[str, FileRead] = {}
    last: dict[str, FileRead] = {}
    unread: set[str] = set()
    for commit, changes in reversed(log):  # oldest first
        at_boundary = commit.sha == boundary
        replay.commits[commit.sha] = commit
        touched_semantics = False
        for change in changes:
            touched_semantics |= any(semantic(p) for p in (change.old, change.new) if p)
            if change.old and semantic(change.old):
                replay.files.pop(change.old, None)
            if change.new and semantic(change.new):
                replay.files[change.new] = change.blob
            if at_boundary:
                continue  # the clone starts here: its pages were not touched by it
            if change.new.startswith(knowledge_prefix) and change.new.endswith(".md"):
                pages = replay.page_commits.pop(change.old, []) if change.old else []
                pages.append(commit.sha)
                replay.page_commits[change.new] = pages
        if touched_semantics:
            after = _layer_at(replay.files, parsed, blobs, last, unread, dbt, replay.definitions)
            _apply(replay.state, after, commit.sha, replay.entities, boundary=at_boundary)
            replay.state = after


def trace(
    git: GitHistory,
    config: Config,
    layer: SemanticLayer,
    dbt: DbtProject | None = None,
    cache: Path | None = None,
    machine: MachineKey | None = None,
) -> History:
    """Replay the first-parent history of HEAD over the project's knowledge and semantics.

    With a `cache` file, a replay saved at an earlier HEAD on the same first-parent line is
    continued with only the newer commits. The file is sealed with `machine` (default: this
    machine's key; without a usable key there is no cache). What git could not read is in
    `git.problems` (such a replay is not cached: the next run reads it again)."""
    if cache is not None and machine is None:
        machine = machine_key()
    sealer = machine.sealer(HISTORY_SEAL) if cache is not None and machine is not None else None
    if sealer is None:
        cache = None
    knowledge_prefix = config.layout.prefix
    pathspecs = history_pathspecs(
        config.knowledge_dir, config.semantics_dir, dbt.folders if dbt is not None else None
    )
    problems = len(git.problems)
    boundary = git.boundary()
    key = _cache_key(config, dbt, boundary)
    head = git.repo.head()
    replay = _continued(git, _load(cache, key, sealer), head) or _Replay()
    since = replay.head
    log = [] if since == head else git.log(pathspecs, since=since)
    if log is None:
        # No history at all: every claim about it is unknown, none is made.
        definitions: dict[str, str] = {}
        _live_state(layer, definitions)
        return History(head, {}, {}, definitions, {}, boundary, INCOMPLETE)

    semantic = _Semantic(config.semantics_dir + "/", dbt)
    blobs, gaps = _read_versions(git, replay, log, semantic)
    _replay_log(replay, log, boundary, semantic, knowledge_prefix, blobs, dbt)
    replay.head = head
    if cache is not None and sealer is not None and log and len(git.problems) == problems:
        try:
            data = json.dumps({"key": key, "replay": replay.to_json()}, separators=(",", ":"))
            atomic_write(cache, sealer.wrap(data.encode()))
        except OSError:
            pass  # a read-only checkout replays everything next time

    # Uncommitted changes, on copies: the cached replay stays at HEAD.
    entities = {name: record.copy() for name, record in replay.entities.items()}
    definitions = dict(replay.definitions)
    _apply(replay.state, _live_state(layer, definitions), WORKING_TREE, entities)
    page_commits = {path: list(reversed(shas)) for path, shas in replay.page_commits.items()}
    return History(
        head,
        dict(replay.commits),
        entities,
        definitions,
        page_commits,
        boundary,
        # A shallow clone whose first-parent line reaches the first commit misses nothing here.
        INCOMPLETE if gaps else SHALLOW if boundary is not None else None,
    )
