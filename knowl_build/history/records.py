"""What history tells about the project: commits, each entity's past, each page's commits.

Plain data for the rules and the artifact; nothing here runs git.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from knowl_build import clock

WORKING_TREE = "working-tree"
SHALLOW = "shallow history"  # why a claim is unknown: the clone is shallow
INCOMPLETE = "history incomplete"  # why a claim is unknown: git could not read the history


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    time: int  # committer time, seconds since the epoch
    author: str
    subject: str

    @property
    def date(self) -> str:
        return clock.stamp(clock.from_epoch(self.time))

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
    that (None: whether it changed is unknown), and `removed_in` only a removal seen."""

    introduced_in: str | None = None
    changed_in: str | None = None
    removed_in: str | None = None
    kind: str = ""
    fingerprint: str = ""
    unknown_past: bool = False

    def to_list(self) -> list[str | bool | None]:
        return [
            self.introduced_in,
            self.changed_in,
            self.removed_in,
            self.kind,
            self.fingerprint,
            self.unknown_past,
        ]

    @classmethod
    def from_list(cls, row: list[Any]) -> EntityHistory:
        unknown_past = bool(row[5]) if len(row) > 5 else False
        return cls(row[0], row[1], row[2], row[3] or "", row[4] or "", unknown_past)


@dataclass(slots=True)
class History:
    head: str | None
    commits: dict[str, Commit]
    entities: dict[str, EntityHistory]
    exprs: dict[str, str]  # measure fingerprint -> the expression it was computed from
    page_commits: dict[str, list[str]]  # project-relative path -> commit ids, newest first
    boundary: str | None = None  # a shallow clone's oldest first-parent commit
    unknown: str | None = None  # SHALLOW or INCOMPLETE: part of the history is not known

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
