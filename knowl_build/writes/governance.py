"""`knowl supersede` (SPEC 7.2), `knowl review` (SPEC 7.3) and `knowl conflicts` (SPEC 8.2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.core.model import DRAFT, Page
from knowl_build.core.pageref import check_ref
from knowl_build.pipeline.analysis import Analysis
from knowl_build.writes.common import (
    NOTHING_WRITTEN,
    Committed,
    Tree,
    commit,
    commit_repo,
    quoted_timestamp,
    supersede_change,
    utc_now,
)
from knowl_build.writes.edit import EditError, FrontmatterEditor
from knowl_build.writes.pagefile import Change, WriteRefused


@dataclass(frozen=True, slots=True)
class Reviewed:
    """A page `review` found: its id, file and status after the review, and whether the
    review changed its bytes (not when reviewed again within the same second)."""

    page: str
    path: str
    status: str
    changed: bool


@dataclass(slots=True)
class WriteResult:
    changes: list[Change] = field(default_factory=list)  # only changes that change bytes
    commit: Committed | None = None  # None: no --commit
    reviewed: list[Reviewed] = field(default_factory=list)  # review: each page, in order


def supersede(
    root: Path,
    config: Config,
    old_ref: str,
    new_ref: str,
    *,
    user: str | None = None,
    do_commit: bool = False,
) -> WriteResult:
    """Mark OLD superseded by NEW. Nothing is deleted. Both pages must be ones `user` may
    write (global pages and their own); any other answers as a page that does not exist."""
    # Names are checked before anything is read (or cached): a bad one writes nothing at all.
    old_ref, new_ref = check_ref(old_ref), check_ref(new_ref)
    repo = commit_repo(root) if do_commit else None
    tree = Tree.load(root, config, user)
    old = tree.page(old_ref)
    new = tree.page(new_ref)
    if old.path == new.path or (old.scope, old.id) == (new.scope, new.id):
        raise WriteRefused("a page cannot supersede itself")
    for page, role in ((old, "OLD"), (new, "NEW")):
        status = page.parsed.fields.status
        if status != "active":
            raise WriteRefused(f"{role} page '{page.id}' is {status}, not active")
    if old.parsed.fields.frozen:
        raise WriteRefused(f"'{old.id}' is frozen; no automatic edit may touch it")
    # NEW must be what OLD's superseded_by resolves to, from OLD's scope.
    resolved = tree.analysis.index.resolve(new.id, old.scope).pages
    if not resolved or resolved[0].path != new.path:
        raise WriteRefused(
            f"'{new.id}' ({new.scope}) is not what '{new.id}' names from {old.scope} scope"
        )
    if _leads_to(tree.analysis, new, old):
        raise WriteRefused(
            f"superseding '{old.id}' with '{new.id}' would make a supersession cycle"
        )
    change = supersede_change(tree, old, new.id)
    analysis = tree.with_changes([change])
    errors = [
        d
        for d in analysis.diagnostics
        if d.path == old.path and d.severity == "error" and d.code == "KB302"
    ]
    if errors:
        raise WriteRefused(f"{old.path}: {errors[0].message}")
    result = WriteResult([change])
    written = tree.write(result.changes)
    if repo is not None:
        result.commit = commit(repo, [(written, f"Supersede {old.id} with {new.id}")])
    return result


def _leads_to(analysis: Analysis, start: Page, target: Page) -> bool:
    """Whether following superseded_by from `start` reaches `target`."""
    seen = set()
    current: Page | None = start
    while current is not None and current.path not in seen:
        if current.path == target.path:
            return True
        seen.add(current.path)
        successor = current.parsed.fields.superseded_by
        if successor is None:
            return False
        found = analysis.index.resolve(successor.value, current.scope).pages
        current = found[0] if found else None
    return False


def review(
    root: Path,
    config: Config,
    refs: list[str],
    *,
    user: str | None = None,
    force: bool = False,
    do_commit: bool = False,
) -> WriteResult:
    """A person has re-read the pages: validation date now, fingerprints refreshed. Only
    pages `user` may write (global pages and their own) are found."""
    refs = [check_ref(ref) for ref in refs]
    repo = commit_repo(root) if do_commit else None
    tree = Tree.load(root, config, user)
    layer = tree.analysis.layer
    now = quoted_timestamp(utc_now())
    changes = []
    refused = []
    reviewed: list[Reviewed] = []
    for ref in refs:
        page = tree.page(ref)
        errors = tree.errors_for(tree.analysis, page.path)
        if errors:
            refused.append(
                f"{page.path}: has error findings ({errors[0].code} {errors[0].message})"
            )
            continue
        if page.parsed.fields.frozen and not force:
            refused.append(f"{page.path}: frozen (use --force after reading it)")
            continue
        source = tree.source(page.path)
        fields = page.parsed.fields
        fingerprints: dict[str, str] = {}
        for bound in fields.bound_fingerprints:
            entity = layer.entities.get(bound.entity)
            fingerprints[bound.entity] = entity.fingerprint if entity else bound.fingerprint
        for ref_item in fields.sl_refs:
            entity = layer.entities.get(ref_item.value)
            if entity is not None and entity.kind == "measure":
                fingerprints.setdefault(ref_item.value, entity.fingerprint)
        # One edit at a time, each on the result of the last (the editor works so), so a
        # mapping created by one (a missing `meta:`) is there for the next.
        try:
            editor = FrontmatterEditor.of(source.text)
            editor.set_many(["meta"], [("last_validated_at", now)])
            if fingerprints:
                items = [(name, f'"{fp}"') for name, fp in fingerprints.items()]
                editor.set_many(["meta", "bound_fingerprints"], items)
            if "freshness" in page.parsed.frontmatter:
                editor.set_scalar(["freshness"], "fresh")
            if fields.status == DRAFT:  # an agent's draft, promoted by the person reviewing
                editor.set_scalar(["status"], "active")
        except EditError as exc:
            refused.append(f"{page.path}: {exc}")
            continue
        change = Change.edit(page.path, source, editor.result())
        # A review that changes no byte (reviewed again within the second, or with
        # SOURCE_DATE_EPOCH pinned) writes nothing, so it has nothing to commit either.
        changed = change.data() != source.data
        if changed:
            changes.append((page, change))
        status = "active" if fields.status == DRAFT else fields.status
        reviewed.append(Reviewed(page.id, page.path, status, changed))
    if refused:
        raise WriteRefused("review refused, nothing was written: " + "; ".join(refused))
    result = WriteResult([change for _, change in changes], reviewed=reviewed)
    written = tree.write(result.changes)
    if repo is not None:
        # One commit per page written; a review that wrote nothing has nothing to commit.
        messages = [f"Review {page.id}" for page, _ in changes]
        commits = [([path], message) for path, message in zip(written, messages, strict=True)]
        result.commit = commit(repo, commits) if commits else NOTHING_WRITTEN
    return result
