"""Public values that look like high-entropy words: Subresource Integrity hashes and the ids of
keys that hold public ids (see the package notes), found once, left to right, as far as the
high-entropy finder asks, and the finder that skips them."""

from __future__ import annotations

import re

from knowl_build.secrets.finders import Finder
from knowl_build.secrets.patterns import NEVER, PUBLIC_ID_KEYS, PUBLIC_KEY, SRI, WHOLE_ID, YOUTUBE


def holds_public_ids(key: str | None) -> bool:
    """Whether a frontmatter key's values are public ids (`documentId`, `youtube`, ...)."""
    return key is not None and key.lower().replace("_", "").replace("-", "") in PUBLIC_ID_KEYS


def lowered(text: str) -> str:
    """`text` with its ASCII letters in lower case, every other character still no ASCII
    letter, and the same length: `İ` is the one character whose lower case is longer, and
    the Kelvin sign `K` the one other whose lower case is ASCII (`k`)."""
    if "\u0130" in text or "\u212a" in text:
        text = text.replace("\u0130", "\u0131").replace("\u212a", "\u0131")
    return text.lower()


# A kind's next match: where it starts (NEVER: no more), where its value starts and ends,
# where the match ends; -1 before the first search.
_Next = tuple[int, int, int, int]
_NO_MORE: _Next = (NEVER, NEVER, NEVER, NEVER)
_UNSEARCHED: _Next = (-1, -1, -1, -1)


class PublicValues:
    """The public values of a text, asked for at positions that never decrease; with
    `whole_id`, the text is the value of a key that holds public ids, so its first word is
    one too.

    Each kind (a hash, a YouTube shortcode, a key and its value) is searched from where the
    last value ended, and its next match kept while the values found do not pass it; the
    first of the three is the next value (no two kinds start at one place)."""

    __slots__ = ("kinds", "next", "search", "text", "value_end", "value_start")

    def __init__(self, text: str, whole_id: bool = False) -> None:
        self.text = text
        self.value_start = self.value_end = 0  # the last value found (none yet)
        self.search = 0  # the next value starts at or after this (the last one's end)
        self.kinds: tuple[tuple[re.Pattern[str], str], ...] = ()  # made when first needed
        self.next: list[_Next] = []
        if whole_id:
            value = WHOLE_ID.match(text)
            if value is not None:
                self.value_start, self.value_end = value.span("id")
                self.search = value.end()

    def holding(self, pos: int) -> int:
        """The end of the public value that holds `pos`, or -1 when none does."""
        while self.value_end <= pos:
            self._advance()
        return self.value_end if self.value_start <= pos else -1

    def _advance(self) -> None:
        if not self.kinds:
            text = self.text
            self.kinds = ((SRI, text), (YOUTUBE, text), (PUBLIC_KEY, lowered(text)))
            self.next = [_UNSEARCHED] * len(self.kinds)
        search, following = self.search, self.next
        for i, (pattern, text) in enumerate(self.kinds):
            if following[i][0] < search:
                found = pattern.search(text, search)
                following[i] = (
                    _NO_MORE
                    if found is None
                    else (found.start(), found.start("id"), found.end("id"), found.end())
                )
        _, self.value_start, self.value_end, self.search = min(following)


class OutsidePublicValues:
    """High-entropy words that do not start inside a public value: a start inside one sends
    the finder on from the value's end."""

    __slots__ = ("finder", "public")

    def __init__(self, finder: Finder, public: PublicValues) -> None:
        self.finder = finder
        self.public = public

    def first(self, pos: int) -> int:
        while True:
            start = self.finder.first(pos)
            if start == NEVER:
                return NEVER
            end = self.public.holding(start)
            if end == -1:
                return start
            pos = end

    def end(self) -> int:
        return self.finder.end()
