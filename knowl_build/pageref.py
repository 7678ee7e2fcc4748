"""PAGE arguments (SPEC 2.1): `id`, `global:<id>` or `user:<owner>:<id>`, and who may see them.

Shared by the reader, the history commands and the writes; it imports nothing of the build.
One rule answers both "may this user see the page" and "may this user change it": a user sees
and writes global pages and their own, an anonymous caller only global pages (SPEC 6.2). A page
that is not theirs answers exactly as a page that does not exist (`not_found`), so no answer
tells whether another user's page exists.
"""

from __future__ import annotations

from knowl_build.names import normalize_owner, valid_user

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
