"""What history tells about the project: commits, each entity's past, each page's commits.

Plain data for the rules and the artifact; nothing here runs git.
"""

from __future__ import annotations

import functools
from collections.abc import Container
from dataclasses import dataclass, field, replace
from typing import Any

from knowl_build.secrets.scanner import redact
from knowl_build.support import clock

WORKING_TREE = "working-tree"
SHALLOW = "shallow history"  # why a claim is unknown: the clone is shallow
INCOMPLETE = "history incomplete"  # why a claim is unknown: git could not read the history


@functools.lru_cache(maxsize=4096)
def _date(time: int) -> str:
    """A commit time as the artifact writes it (asked once per page that the commit touched
    last: formatted once)."""
    return clock.stamp(clock.from_epoch(time))


@dataclass(frozen=True, slots=True)
class Commit:
    """A commit as history records it. Whoever pushes a commit chooses its author name and
    subject, and both reach the timeline, the drift of `show`, the artifact's records and the
    site: what looks like a secret in them is replaced where a commit is made (read from
    `git log` or from the replay cache), with the one redaction every message passes."""

    sha: str
    time: int  # committer time, seconds since the epoch
    author: str
    subject: str

    def __post_init__(self) -> None:
        author, subject = redact(self.author), redact(self.subject)
        if author is not self.author:
            object.__setattr__(self, "author", author)
        if subject is not self.subject:
            object.__setattr__(self, "subject", subject)

    @property
    def date(self) -> str:
        return _date(self.time)

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.sha,
            "date": self.date,
            "author": self.author,
            "subject": self.subject,
        }


@dataclass(slots=True)
class EntityHistory:
    """Where an entity came from: commit ids, or WORKING_TREE for uncommitted changes.

    `unknown_past` marks an entity part of whose past git could not show: it was in a shallow
    clone's oldest commit (when it was introduced is unknown: `introduced_in` is None), or it
    was in a version git could not read. `changed_in` then names only a change seen after
    that (None: whether it changed is unknown), and `removed_in` only a removal seen.

    `versions` holds every fingerprint the entity had, oldest first, each with the commit it
    came in (None where git cannot say: before a shallow clone, after an unread version), so
    drift can name the first change after the version a page was written against.
    `renamed_to` names the entity added with the same kind and fingerprint in the commit that
    removed this one (a rename), while it stays removed."""

    introduced_in: str | None = None
    changed_in: str | None = None
    removed_in: str | None = None
    kind: str = ""
    fingerprint: str = ""
    unknown_past: bool = False
    versions: list[tuple[str | None, str]] = field(default_factory=list)
    renamed_to: str | None = None

    def to_list(self) -> list[Any]:
        return [
            self.introduced_in,
            self.changed_in,
            self.removed_in,
            self.kind,
            self.fingerprint,
            self.unknown_past,
            [list(v) for v in self.versions],
            self.renamed_to,
        ]

    @classmethod
    def from_list(cls, row: list[Any]) -> EntityHistory:
        unknown_past = bool(row[5]) if len(row) > 5 else False
        versions = (
            [(str(r) if r is not None else None, str(f)) for r, f in row[6]] if len(row) > 6 else []
        )
        renamed_to = row[7] if len(row) > 7 and isinstance(row[7], str) else None
        return cls(
            row[0], row[1], row[2], row[3] or "", row[4] or "", unknown_past, versions, renamed_to
        )

    def copy(self) -> EntityHistory:
        """A copy whose versions can grow without changing this one's."""
        return replace(self, versions=list(self.versions))

    def changes_since(self, fingerprint: str) -> list[str | None] | None:
        """The commits that changed the definition after its last version with `fingerprint`,
        oldest first (None for a change git cannot place); None when no version had it."""
        for at in range(len(self.versions) - 1, -1, -1):
            if self.versions[at][1] == fingerprint:
                return [ref for ref, _ in self.versions[at + 1 :]]
        return None


@dataclass(slots=True)
class History:
    head: str | None
    commits: dict[str, Commit]
    entities: dict[str, EntityHistory]
    # fingerprint -> the definition it was computed from, as text (semantic.fingerprint)
    definitions: dict[str, str]
    page_commits: dict[str, list[str]]  # project-relative path -> commit ids, newest first
    boundary: str | None = None  # a shallow clone's oldest first-parent commit
    unknown: str | None = None  # SHALLOW or INCOMPLETE: part of the history is not known
    # new name -> the entities renamed to it, built on the first lineage() asked
    _renamed_from: dict[str, list[str]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def renamed(self, name: str, live: Container[str]) -> tuple[str, str | None] | None:
        """The live entity `name` was renamed to (following renames of renames), and the
        commit of the first rename; None when it was not renamed to a live entity."""
        record = self.entities.get(name)
        if record is None or record.renamed_to is None:
            return None
        first, seen = record.removed_in, {name}
        while record is not None and record.renamed_to is not None:
            name = record.renamed_to
            if name in live:
                return name, first
            if name in seen:
                return None
            seen.add(name)
            record = self.entities.get(name)
        return None

    def lineage(self, name: str) -> EntityHistory | None:
        """The entity's record with the versions of the entities renamed to it before its
        own, oldest first (a rename that kept the definition is no version), so a change made
        with a rename, or before it, is a change of the new name; its record when it was not
        renamed from one. None for an entity history does not know."""
        record = self.entities.get(name)
        if record is None:
            return None
        if self._renamed_from is None:
            self._renamed_from = {}
            for old, past in sorted(self.entities.items()):
                if past.renamed_to is not None:
                    self._renamed_from.setdefault(past.renamed_to, []).append(old)
        chain, seen = [record], {name}
        while True:
            # The entity renamed to this one is the one removed in the commit that added it.
            current = chain[-1]
            olds = [
                old
                for old in self._renamed_from.get(name, [])
                if old not in seen and self.entities[old].removed_in == current.introduced_in
            ]
            if len(olds) != 1 or current.introduced_in is None:
                break
            name = olds[0]
            seen.add(name)
            chain.append(self.entities[name])
        if len(chain) == 1:
            return record
        versions: list[tuple[str | None, str]] = []
        for past in reversed(chain):
            for ref, fingerprint in past.versions:
                if not versions or versions[-1][1] != fingerprint:
                    versions.append((ref, fingerprint))
        first = chain[-1]
        changed = next((ref for ref, _ in reversed(versions[1:])), record.changed_in)
        return replace(
            record,
            introduced_in=first.introduced_in,
            changed_in=changed,
            unknown_past=any(past.unknown_past for past in chain),
            versions=versions,
        )

    def commit_json(self, ref: str | None) -> dict[str, object] | None:
        if ref is None:
            return None
        if ref == WORKING_TREE:
            return {"commit": None, "working_tree": True}
        return self.commits[ref].to_json()

    @property
    def unknown_text(self) -> str:
        """What a message says in place of a claim the history cannot back."""
        return f"unknown ({self.unknown})"
