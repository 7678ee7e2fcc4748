"""PAGE arguments (SPEC 2.1): `id`, `global:<id>` or `user:<owner>:<id>`.

Shared by the reader, the history commands and the writes; it imports nothing of the build.
"""

from __future__ import annotations

GLOBAL = "global"


def candidates(ref: str, user: str | None, *, any_owner: bool = False) -> list[tuple[str, str]]:
    """The (scope, id) pairs `ref` may name, in the order they are tried. A bare id means the
    global page if there is one, else the user's own page; another user's page is named only
    with `any_owner` (project-wide maintenance writes)."""
    if ref.startswith("global:"):
        return [(GLOBAL, ref[len("global:") :])]
    if ref.startswith("user:") and ref.count(":") >= 2:
        _, owner, page_id = ref.split(":", 2)
        return [(f"user:{owner}", page_id)] if any_owner or owner == user else []
    return [(GLOBAL, ref)] + ([(f"user:{user}", ref)] if user else [])
