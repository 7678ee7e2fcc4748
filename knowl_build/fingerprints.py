"""Fingerprints against git history (SPEC 5): when each entity was introduced and last
changed, the expression behind every measure fingerprint ever seen, each page's commits.

The semantic layer is replayed commit by commit from one first-parent `git log` pass; each
blob is read once through the batch reader and parsed once. Entities are followed by
identity (connection and name), so a renamed or moved file keeps its entities' history.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowl_build.config import Config
from knowl_build.history import WORKING_TREE, EntityHistory, GitHistory, History
from knowl_build.parse.semantics import MEMBER_KINDS, SemanticLayer, read_source_file


@dataclass(frozen=True, slots=True)
class _State:
    kind: str
    fingerprint: str


def _entities_of(
    files: dict[str, str],
    parsed: dict[str, list[tuple[str, str, str, object]]],
    history: GitHistory,
    exprs: dict[str, str],
) -> dict[str, _State]:
    """The layer's entities for a set of files (path -> blob id), first file owns a name."""
    owners: set[str] = set()
    members: dict[str, dict[str, str]] = {}
    state: dict[str, _State] = {}
    for path in sorted(files):
        blob = files[path]
        if blob not in parsed:
            data = history.blob(blob)
            result = read_source_file(path, data) if data is not None else None
            rows: list[tuple[str, str, str, object]] = []
            if result is not None and result.source_name is not None:
                rows.append(("", result.source_name, "", None))
                for entity in result.entities:
                    expr = entity.definition.get("expr") if entity.kind == "measure" else None
                    rows.append((entity.name, entity.kind, entity.fingerprint, expr))
            parsed[blob] = rows
        rows = parsed[blob]
        if not rows or rows[0][1] in owners:
            continue
        owners.add(rows[0][1])
        for name, kind, fingerprint, expr in rows[1:]:
            if isinstance(expr, str):
                exprs.setdefault(fingerprint, expr)
            if kind == "source":
                state[name] = _State(kind, fingerprint)
            else:
                members.setdefault(name, {})[kind] = fingerprint
    for name, kinds in members.items():
        kind = next(k for k in MEMBER_KINDS if k in kinds)
        state[name] = _State(kind, kinds[kind])
    return state


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


def trace(git: GitHistory, config: Config, layer: SemanticLayer) -> History:
    """Replay the first-parent history of HEAD over the project's knowledge and semantics."""
    semantics_prefix = config.semantics_dir + "/"
    knowledge_prefix = config.knowledge_dir + "/"
    log = git.log([config.knowledge_dir, config.semantics_dir])
    commits = {}
    entities: dict[str, EntityHistory] = {}
    exprs: dict[str, str] = {}
    page_commits: dict[str, list[str]] = {}
    files: dict[str, str] = {}
    parsed: dict[str, list[tuple[str, str, str, object]]] = {}
    state: dict[str, _State] = {}

    def semantic(path: str) -> bool:
        return path.startswith(semantics_prefix) and path.endswith((".yaml", ".yml"))

    for commit, changes in reversed(log):  # oldest first
        commits[commit.sha] = commit
        touched_semantics = False
        for change in changes:
            for path in {change.old, change.new} - {""}:
                if semantic(path):
                    touched_semantics = True
            if change.old and semantic(change.old):
                files.pop(change.old, None)
            if change.new and semantic(change.new):
                files[change.new] = change.blob
            if change.new.startswith(knowledge_prefix) and change.new.endswith(".md"):
                history = page_commits.pop(change.old, []) if change.old else []
                history.append(commit.sha)
                page_commits[change.new] = history
        if touched_semantics:
            after = _entities_of(files, parsed, git, exprs)
            _apply(state, after, commit.sha, entities)
            state = after

    _apply(state, _live_state(layer, exprs), WORKING_TREE, entities)
    for history in page_commits.values():
        history.reverse()
    return History(git.repo.head(), commits, entities, exprs, page_commits)
