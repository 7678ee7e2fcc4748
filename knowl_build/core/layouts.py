"""Where pages live, and the scope a page's path gives it: the knowledge folder's layout.

Two layouts (`[knowledge] layout`):

- `scoped` (the default, SPEC 2.1): `<knowledge_dir>/global/**` is global,
  `<knowledge_dir>/user/<owner>/**` is the owner's; a page anywhere else is KB004.
- `flat`: every page under `<knowledge_dir>` is global, as a documentation site or a vault
  keeps them, and user scopes exist only where `[knowledge] users_dir` names a folder below
  it (`<knowledge_dir>/<users_dir>/<owner>/**`); a page directly in that folder is KB004.
  `knowledge_dir` may be `"."`, the project's root.

A page's id and its path under its scope's folder (`rel`) come from the path the same way in
both: in the flat layout the scope's folder of global pages is the knowledge folder itself.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

GLOBAL = "global"
SCOPED = "scoped"
FLAT = "flat"
LAYOUTS = (SCOPED, FLAT)


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


@dataclass(frozen=True, slots=True)
class Layout:
    """The knowledge folder (project-relative, `"."` for the root) and how it holds scopes."""

    folder: str = "knowledge"
    kind: str = SCOPED
    users: str | None = None  # flat: the folder of user scopes, below `folder`

    @property
    def prefix(self) -> str:
        """What every path under the knowledge folder starts with ("" for the root)."""
        return "" if self.folder == "." else f"{self.folder}/"

    def inner(self, path: str) -> str | None:
        """A project-relative `path` below the knowledge folder, or None outside it."""
        if self.folder == ".":
            return path if path and path != "." and not path.startswith("../") else None
        return path[len(self.prefix) :] if path.startswith(self.prefix) else None

    def contains(self, path: str) -> bool:
        return self.inner(path) is not None

    def split(self, inner: str, *, folder: bool = False) -> tuple[str, list[str]] | None:
        """The scope of a path below the knowledge folder and its parts below that scope's
        folder; None where no scope holds it. For a file the parts are never empty; with
        `folder` the path is a folder, which may be a scope's folder itself."""
        parts = inner.split("/") if inner else []
        least = 0 if folder else 1
        if self.kind == SCOPED:
            if parts[:1] == [GLOBAL] and len(parts) - 1 >= least:
                return GLOBAL, parts[1:]
            if parts[:1] == ["user"] and len(parts) - 2 >= least:
                return f"user:{nfc(parts[1])}", parts[2:]
            return None
        users = self.users.split("/") if self.users else []
        if users and parts[: len(users)] == users:
            rest = parts[len(users) :]
            if rest and len(rest) - 1 >= least:
                return f"user:{nfc(rest[0])}", rest[1:]
            return None
        return (GLOBAL, parts) if len(parts) >= least else None

    def owner_part(self, inner: str) -> str | None:
        """The user-folder name a path below the knowledge folder sits in (checked as a user
        name by the caller), or None when it is not in a user scope's folder."""
        parts = inner.split("/")
        if self.kind == SCOPED:
            return parts[1] if parts[:1] == ["user"] and len(parts) >= 3 else None
        users = self.users.split("/") if self.users else []
        if users and parts[: len(users)] == users and len(parts) >= len(users) + 2:
            return parts[len(users)]
        return None

    def scope_folder(self, scope: str) -> str | None:
        """The project-relative folder pages of `scope` are written to; None for a user scope
        in a flat layout without `users_dir`."""
        if scope == GLOBAL:
            return f"{self.prefix}{GLOBAL}" if self.kind == SCOPED else self.folder
        owner = scope.removeprefix("user:")
        if self.kind == SCOPED:
            return f"{self.prefix}user/{owner}"
        return f"{self.prefix}{self.users}/{owner}" if self.users else None

    def where_pages_go(self) -> str:
        """How KB004 says where pages belong."""
        if self.kind == SCOPED:
            return f"{self.prefix}global/ and {self.prefix}user/<owner>/"
        return f"{self.prefix}{self.users}/<owner>/" if self.users else f"{self.folder}/"
