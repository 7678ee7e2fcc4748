"""Public values that look like high-entropy words: Subresource Integrity hashes and the ids of
keys that hold public ids (see the package notes), found once, left to right, as the
high-entropy finder asks for them."""

from __future__ import annotations

import re
from typing import NamedTuple

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


class _Place(NamedTuple):
    start: int
    end: int


class _Found(NamedTuple):
    start: int  # of the match, NEVER for none
    value: _Place  # the public value in it
    end: int  # of the match


_NONE = _Found(NEVER, _Place(NEVER, NEVER), NEVER)
_UNSEARCHED = _Found(-1, _Place(-1, -1), -1)


def _search(pattern: re.Pattern[str], text: str, pos: int) -> _Found:
    found = pattern.search(text, pos)
    if found is None:
        return _NONE
    return _Found(found.start(), _Place(*found.span("id")), found.end())


class PublicValues:
    """The public values of a text, in order; with `whole_id`, the text is the value of a key
    that holds public ids, so its first word is one too.

    Each kind (a hash, a YouTube shortcode, a key and its value) is searched from where the
    last value ended, and its next match kept while the values found do not pass it; the
    first of the three is the next value (no two kinds start at one place)."""

    __slots__ = ("found", "next", "search", "sources", "text")

    def __init__(self, text: str, whole_id: bool = False) -> None:
        self.text = text
        self.found: list[_Place] = []
        self.search = 0  # the next value starts at or after this (the last one's end)
        self.sources: tuple[tuple[re.Pattern[str], str], ...] = ()  # made when first needed
        self.next: list[_Found] = []  # each kind's next match at or after a search
        if whole_id:
            value = WHOLE_ID.match(text)
            if value is not None:
                self.found.append(_Place(*value.span("id")))
                self.search = value.end()

    def get(self, index: int) -> _Place | None:
        """The text's public value number `index`, or None when it has fewer."""
        while len(self.found) <= index:
            if self.search == NEVER:
                return None
            if not self.sources:
                text = self.text
                self.sources = ((SRI, text), (YOUTUBE, text), (PUBLIC_KEY, lowered(text)))
                self.next = [_UNSEARCHED] * len(self.sources)
            for i, (pattern, text) in enumerate(self.sources):
                if self.next[i].start < self.search:
                    self.next[i] = _search(pattern, text, self.search)
            first = min(self.next)
            if first.start == NEVER:
                self.search = NEVER
                return None
            self.found.append(first.value)
            self.search = first.end
        return self.found[index]
