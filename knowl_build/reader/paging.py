"""Opaque cursors for list-style answers: a client pages through a long list by handing back
the `next_cursor` of the previous page.

A cursor is the offset of the next item, bound to the build and to the question it pages
(the tool and its filters), so one from another build or another query is refused rather
than silently paging something else. Cursors come from clients: the decoder accepts only
its own shape, never more than a few hundred characters, and reports a bad one in one line
without echoing it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Sequence
from typing import TypeVar

from knowl_build.core.errors import UsageError

T = TypeVar("T")
MAX_CURSOR_CHARS = 200
_SHAPE = re.compile(r"[A-Za-z0-9_-]{1,200}")


def _binding(offset: int, build_id: str, question: Sequence[object]) -> str:
    # The offset is bound too: a cursor changed by hand is refused, not followed elsewhere.
    text = json.dumps([offset, build_id, *question], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def encode_cursor(offset: int, build_id: str, question: Sequence[object]) -> str:
    raw = f"{offset}:{_binding(offset, build_id, question)}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, build_id: str, question: Sequence[object]) -> int:
    """The offset a cursor names (0 for none); a UsageError for one this list did not give."""
    if cursor is None or cursor == "":
        return 0
    bad = UsageError(
        "invalid cursor: pass the next_cursor of the previous answer to the same call, "
        "unchanged (a cursor does not outlive a rebuild)"
    )
    if len(cursor) > MAX_CURSOR_CHARS or not _SHAPE.fullmatch(cursor):
        raise bad
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        raise bad from None
    offset, _, binding = raw.partition(":")
    if not offset.isdigit() or len(offset) > 9:
        raise bad
    if binding != _binding(int(offset), build_id, question):
        raise bad
    return int(offset)


def page_of(
    items: Sequence[T], cursor: str | None, limit: int, build_id: str, question: Sequence[object]
) -> tuple[list[T], str | None]:
    """One page of `items` from the cursor's offset, and the cursor of the next (None at the
    end)."""
    if limit < 1:
        raise UsageError("limit must be at least 1")
    start = decode_cursor(cursor, build_id, question)
    if start > len(items):
        raise UsageError("invalid cursor: it points past the end of the list")
    end = start + limit
    following = encode_cursor(end, build_id, question) if end < len(items) else None
    return list(items[start:end]), following
