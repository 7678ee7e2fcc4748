"""PAGE arguments (SPEC 2.1): `id`, `global:<id>` or `user:<owner>:<id>`, and who may see them.

Shared by the reader, the history commands and the writes; it imports nothing of the build.
One rule answers both "may this user see the page" and "may this user change it": a user sees
and writes global pages and their own, an anonymous caller only global pages (SPEC 6.2). A page
that is not theirs answers exactly as a page that does not exist (`not_found`), so no answer
tells whether another user's page exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from knowl_build.errors import KnowlError, PageNotFound
from knowl_build.names import normalize_owner, valid_user

T = TypeVar("T")

GLOBAL = "global"


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


def pick(
    ref: str,
    user: str | None,
    find: Callable[[str, str], T | None],
    missing: type[KnowlError] = PageNotFound,
) -> T:
    """The page PAGE names for `user`: the first of `candidates` that `find(scope, id)` holds
    and that `user` may see; `missing` (a reader's PageNotFound, a write's refusal) with the
    one message of `not_found` otherwise."""
    for scope, page_id in candidates(ref, user):
        found = find(scope, page_id)
        if found is not None and writable(scope, user):
            return found
    raise missing(not_found(ref, user))
