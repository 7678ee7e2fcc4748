"""Scopes, visibility, and the page, file and entity indexes that references resolve against.

A bare id from a global page names a global page; from a user page it names the global page
if there is one (global is authoritative), else the owner's page. A target with `/` names a
page by its path under a scope folder. Another user's pages are never visible.
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field

from knowl_build.model import Page
from knowl_build.names import owner_problem

GLOBAL = "global"


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


@dataclass(frozen=True, slots=True)
class Place:
    scope: str
    owner: str | None
    id: str
    rel: str  # path under the scope folder without `.md`


def place(path: str, knowledge_dir: str) -> Place | None:
    """Identity and scope from a page's path; None when it is outside global/ and user/<o>/,
    or when <o> is not a valid user name (see `misplaced` for why)."""
    inner = path[len(knowledge_dir) + 1 : -3]  # strip "knowledge/" and ".md"
    parts = inner.split("/")
    if len(parts) >= 2 and parts[0] == "global":
        return Place(GLOBAL, None, nfc(parts[-1]), nfc("/".join(parts[1:])))
    if len(parts) >= 3 and parts[0] == "user":
        owner = nfc(parts[1])
        if owner_problem(owner) is not None:
            return None
        return Place(f"user:{owner}", owner, nfc(parts[-1]), nfc("/".join(parts[2:])))
    return None


def misplaced(path: str, knowledge_dir: str) -> tuple[str, str]:
    """KB004's message and hint for a page that `place` gives no scope."""
    parts = path[len(knowledge_dir) + 1 :].split("/")
    if len(parts) >= 3 and parts[0] == "user":
        owner = nfc(parts[1])
        problem = owner_problem(owner)
        if problem is not None:
            return (
                f"page {_visible(path)} is in user folder {_visible(owner)}, which is not a "
                f"valid user name: {problem}",
                "rename the folder to the user's name",
            )
    return (
        f"page '{path}' is outside {knowledge_dir}/global/ and {knowledge_dir}/user/<owner>/",
        "move it under global/ or user/<owner>/",
    )


def _visible(name: str) -> str:
    """The name quoted, with control and invisible characters written as escapes."""
    shown = "".join(
        f"\\u{ord(char):04x}" if unicodedata.category(char)[0] == "C" else char for char in name
    )
    return f"'{shown}'"


def folder_scope(inner: str) -> str | None:
    """The scope of a path below the knowledge folder (a page, or a folder at any depth):
    `global`, `user:<owner>`, or None for paths outside global/ and user/<owner>/."""
    parts = inner.split("/") if inner else []
    if parts and parts[0] == GLOBAL:
        return GLOBAL
    if len(parts) >= 2 and parts[0] == "user":
        return f"user:{nfc(parts[1])}"
    return None


def scope_label(scope: str) -> str:
    return f"{scope} scope"


@dataclass(slots=True)
class Resolution:
    pages: list[Page]  # the visible pages the target names (several with KB005 duplicates)
    hidden: list[Page]  # pages that match but are not visible from the referring page


@dataclass(slots=True)
class PageIndex:
    pages: list[Page]
    by_id: dict[tuple[str, str], list[Page]] = field(default_factory=dict)
    by_rel: dict[tuple[str, str], list[Page]] = field(default_factory=dict)
    scopes_of_id: dict[str, set[str]] = field(default_factory=dict)
    scopes_of_rel: dict[str, set[str]] = field(default_factory=dict)
    files_by_name: dict[str, list[str]] = field(default_factory=dict)
    ids_by_scope: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, pages: list[Page], other_files: list[str], knowledge_dir: str) -> PageIndex:
        by_id: dict[tuple[str, str], list[Page]] = defaultdict(list)
        by_rel: dict[tuple[str, str], list[Page]] = defaultdict(list)
        scopes_of_id: dict[str, set[str]] = defaultdict(set)
        scopes_of_rel: dict[str, set[str]] = defaultdict(set)
        for page in pages:
            by_id[(page.scope, page.id)].append(page)
            by_rel[(page.scope, page.rel)].append(page)
            scopes_of_id[page.id].add(page.scope)
            scopes_of_rel[page.rel].add(page.scope)
        files: dict[str, list[str]] = defaultdict(list)
        prefix = knowledge_dir + "/"
        for path in other_files:
            inner = path[len(prefix) :] if path.startswith(prefix) else path
            files[nfc(posixpath.basename(inner))].append(nfc(inner))
        ids_by_scope: dict[str, list[str]] = defaultdict(list)
        for scope, page_id in by_id:
            ids_by_scope[scope].append(page_id)
        for ids in ids_by_scope.values():
            ids.sort()
        return cls(
            pages,
            dict(by_id),
            dict(by_rel),
            dict(scopes_of_id),
            dict(scopes_of_rel),
            dict(files),
            dict(ids_by_scope),
        )

    def visible_scopes(self, scope: str) -> tuple[str, ...]:
        """Scopes a page of `scope` can see, in the order a bare id is tried."""
        return (GLOBAL,) if scope == GLOBAL else (GLOBAL, scope)

    def resolve(self, target: str, scope: str) -> Resolution:
        target = nfc(target)
        table, scopes_of = (
            (self.by_rel, self.scopes_of_rel) if "/" in target else (self.by_id, self.scopes_of_id)
        )
        visible = self.visible_scopes(scope)
        for candidate in visible:
            found = table.get((candidate, target))
            if found:
                return Resolution(found, [])
        hidden = [
            page
            for other in sorted(scopes_of.get(target, ()))
            if other not in visible
            for page in table[(other, target)]
        ]
        return Resolution([], hidden)

    def find_file(self, target: str) -> bool:
        """A non-page target (`diagram.png`, `img/diagram.png`) names a file under knowledge/."""
        target = nfc(target)
        candidates = self.files_by_name.get(posixpath.basename(target), [])
        if "/" not in target:
            return bool(candidates)
        return any(path == target or path.endswith("/" + target) for path in candidates)

    def visible_ids(self, scope: str) -> list[str]:
        ids: list[str] = []
        for candidate in self.visible_scopes(scope):
            ids.extend(self.ids_by_scope.get(candidate, ()))
        return ids


def is_file_target(target: str) -> bool:
    """A target with a file extension other than `.md` may name a file."""
    extension = posixpath.splitext(posixpath.basename(target))[1]
    return bool(extension) and extension != ".md"
