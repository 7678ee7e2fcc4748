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


def trace(
    git: GitHistory, config: Config, layer: SemanticLayer, dbt: DbtProject | None = None
) -> History:
    """Replay the first-parent history of HEAD over the project's knowledge and semantics."""
    semantics_prefix = config.semantics_dir + "/"
    knowledge_prefix = config.knowledge_dir + "/"
    folders = [config.knowledge_dir, config.semantics_dir]
    if dbt is not None:
        folders.append(dbt.project_dir)
    log = git.log(folders)
    commits = {}
    entities: dict[str, EntityHistory] = {}
    exprs: dict[str, str] = {}
    page_commits: dict[str, list[str]] = {}
    files: dict[str, str] = {}
    parsed: dict[str, FileRead] = {}
    state: dict[str, _State] = {}

    def semantic(path: str) -> bool:
        if dbt is not None and dbt.is_model_file(path):
            return True
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
            after = _layer_at(files, parsed, git, dbt, exprs)
            _apply(state, after, commit.sha, entities)
            state = after

    _apply(state, _live_state(layer, exprs), WORKING_TREE, entities)
    for history in page_commits.values():
        history.reverse()
    return History(git.repo.head(), commits, entities, exprs, page_commits)
