"""PAGE arguments (SPEC 2.1): `id`, `global:<id>` or `user:<owner>:<id>`, and who may see them.

Shared by the reader, the history commands and the writes; it imports nothing of the build.
`pick` is the one picker of a page by name for every front end (CLI, MCP, writes).
One rule answers both "may this user see the page" and "may this user change it": a user sees
and writes global pages and their own, an anonymous caller only global pages (SPEC 6.2). A page
that is not theirs answers exactly as a page that does not exist (`not_found`), so no answer
tells whether another user's page exists.

Several pages of one scope may share an id (pages in different folders, as Obsidian allows):
a name is then asked, never guessed. The id alone names none of them (AmbiguousPage, listing
each with its path); the page's path under its scope folder without `.md`
(`Obsidian Sync/Security and privacy`, also after `global:` or `user:<owner>:`) names one.

A page bundle (Hugo's `posts/my-trip/index.md`, a section's `_index.md`, MkDocs' `index.md` of
a folder) is named by its folder: its id is the folder's name (`my-trip`), and its folder's
path (`posts/my-trip`) names it as well as its file's (`posts/my-trip/index`). The scope
folder's own `index.md` has the folder name of no page: its id stays `index`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from knowl_build.core.errors import AmbiguousPage, KnowlError, PageNotFound
from knowl_build.core.names import normalize_owner, valid_user

T = TypeVar("T")

GLOBAL = "global"
BUNDLE_FILES = ("index", "_index")  # a page that stands for its folder, without `.md`


def page_id(rel: str) -> str:
    """A page's id from its path under the scope folder without `.md`: its file name, or its
    folder's name for a bundle's `index` or `_index` in a folder below the scope folder."""
    head, _, name = rel.rpartition("/")
    if head and name in BUNDLE_FILES:
        return head.rpartition("/")[2]
    return name


def bundle_folder(rel: str) -> str | None:
    """The folder a bundle page stands for (`posts/my-trip` for `posts/my-trip/index`), which
    names it too; None for any other page."""
    head, _, name = rel.rpartition("/")
    return head if head and name in BUNDLE_FILES else None


def candidates(ref: str, user: str | None) -> list[tuple[str, str]]:
    """The (scope, id) pairs `ref` may name for `user`, in the order they are tried. A bare id
    means the global page if there is one, else the user's own page; another user's page is
    never named. The owner of `user:<owner>:<id>` must be a valid user name (UsageError)."""
    if ref.startswith("global:"):
        return [(GLOBAL, ref[len("global:") :])]
    if ref.startswith("user:") and ref.count(":") >= 2:
        _, owner, page_id = ref.split(":", 2)
        owner = valid_user(owner, "PAGE user:<owner>:<id>") or ""
        mine = user is not None and owner == normalize_owner(user)
        return [(f"user:{owner}", page_id)] if mine else []
    return [(GLOBAL, ref)] + ([(f"user:{normalize_owner(user)}", ref)] if user else [])


def check_ref(ref: str) -> str:
    """`ref` itself, once the owner of a `user:<owner>:<id>` form is known to be a valid user
    name (UsageError otherwise): for the commands that refuse before they read anything."""
    candidates(ref, None)
    return ref


def writable(scope: str, user: str | None) -> bool:
    """Whether `user` (None: anonymous) may see and change a page of `scope`."""
    return scope == GLOBAL or (user is not None and scope == f"user:{normalize_owner(user)}")


def user_label(user: str | None) -> str:
    return user if user else "anonymous"


def not_found(ref: str, user: str | None) -> str:
    """The one answer for a page that does not exist and for a page the user may not see."""
    return f"no page '{ref}' visible to {user_label(user)}"


@dataclass(frozen=True, slots=True)
class Named(Generic[T]):
    """A page of some scope, as `pick` may name it."""

    page: T
    path: str  # the file, relative to the project's root
    rel: str | None = None  # its path under the scope folder without `.md`; None: unknown


def _folder(scope: str) -> str:
    """The scope's folder under the knowledge folder: `global`, or `user/<owner>`."""
    return GLOBAL if scope == GLOBAL else "user/" + scope.removeprefix("user:")


def _rel(found: Named[T], scope: str) -> str:
    """The page's path-qualified name: its path under the scope folder, without `.md`."""
    if found.rel is not None:
        return found.rel
    marker = f"/{_folder(scope)}/"
    inner = found.path.split(marker, 1)[-1] if marker in found.path else found.path
    return inner.removesuffix(".md")


def _named_by(name: str, found: Named[T], scope: str) -> bool:
    """Whether `name` (an id, or a path-qualified name with `/`) names the page."""
    if "/" not in name:
        return True  # `find` answered by id
    if found.rel is not None:
        return name in (found.rel, bundle_folder(found.rel))
    tail = f"/{_folder(scope)}/{name}"
    return found.path.endswith(f"{tail}.md") or any(
        found.path.endswith(f"{tail}/{bundle}.md") for bundle in BUNDLE_FILES
    )


def ambiguous(ref: str, user: str | None, scope: str, pages: list[Named[T]]) -> str:
    """The answer for a name several pages of one scope have: each with the name that selects
    it (its path under the scope folder) and its file."""
    prefix = ""
    if ref.startswith("global:"):
        prefix = "global:"
    elif ref.startswith("user:") and ref.count(":") >= 2:
        prefix = f"user:{ref.split(':', 2)[1]}:"
    listed = sorted((f"{prefix}{_rel(p, scope)}", p.path) for p in pages)
    names = ", ".join(f"'{name}' ({path})" for name, path in listed)
    return (
        f"page name '{ref}' is ambiguous for {user_label(user)}: {len(listed)} pages of the "
        f"{scope} scope have it: {names}; name one by its path under the scope folder, "
        f"e.g. '{listed[0][0]}'"
    )


def pick(
    ref: str,
    user: str | None,
    find: Callable[[str, str], Iterable[Named[T]]],
    missing: type[KnowlError] = PageNotFound,
    ids: Callable[[str], Iterable[str]] | None = None,
) -> T:
    """The page PAGE names for `user`. `find(scope, id)` gives every page of that id in the
    scope. The first of `candidates` that holds a page `user` may see decides: one page is the
    answer; several are AmbiguousPage (exit 1), listing them; none anywhere is `missing` (a
    reader's PageNotFound, a write's refusal) with the one message of `not_found`.

    A name with `/` is a path under the scope folder (without `.md`) and names the page at that
    path only. `ids(scope)`, when given, lists a scope's page ids: a name that finds nothing is
    answered with the closest id among the scopes `user` may see (never another user's)."""
    for scope, name in candidates(ref, user):
        if not writable(scope, user):
            continue
        name = unicodedata.normalize("NFC", name)  # ids and paths are NFC (resolve.place)
        wanted = page_id(name)
        found = [f for f in find(scope, wanted) if wanted and _named_by(name, f, scope)]
        if len(found) > 1 and "/" in name:
            # `posts/a` names both `posts/a.md` and the bundle `posts/a/index.md`: the file
            # of that path is the one meant.
            found = [f for f in found if _rel(f, scope) == name] or found
        if len(found) == 1:
            return found[0].page
        if found:
            raise AmbiguousPage(ambiguous(ref, user, scope, found))
    raise missing(not_found(ref, user) + _closest(ref, user, ids))


def _closest(ref: str, user: str | None, ids: Callable[[str], Iterable[str]] | None) -> str:
    """`; did you mean 'x'?` for the visible id closest to the name `ref` gives, or ""."""
    if ids is None:
        return ""
    # Only for a page not found: difflib stays out of every reader's start-up time.
    from knowl_build.support.hints import did_you_mean

    name = ref.rsplit(":", 1)[-1] if ref.startswith(("global:", "user:")) else ref
    scopes = [GLOBAL] + ([f"user:{normalize_owner(user)}"] if user else [])
    visible = sorted({page for scope in scopes for page in ids(scope)})
    hint = did_you_mean(unicodedata.normalize("NFC", name), visible)
    return f"; {hint}" if hint else ""
