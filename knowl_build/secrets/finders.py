"""One finder per kind: the first start at or after a position, then the end of that match."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from knowl_build.secrets.patterns import (
    BOUNDARY,
    DIGIT,
    HEX,
    LOWER,
    NEVER,
    NEXT_SCHEME,
    NOT_DASH,
    NOT_PATH_DATA,
    RUN,
    RUN_CHARS,
    RUN_REST,
    SCHEME_CHARS,
    UPPER,
    URL_REST,
    URL_WITH_CREDENTIALS,
    UUID_SHAPE,
)


@dataclass(frozen=True, slots=True)
class SecretMatch:
    kind: str
    start: int
    end: int


class Finder(Protocol):
    def first(self, pos: int) -> int:
        """The first start of this kind at or after `pos` (which never decreases)."""

    def end(self) -> int:
        """Where the match at the start `first` returned last ends."""


class PatternFinder:
    """A kind whose expression matches at a start iff the kind does; `stop` finds its end."""

    __slots__ = ("pattern", "read", "stop", "text")

    def __init__(self, text: str, pattern: re.Pattern[str], stop: re.Pattern[str] | None) -> None:
        self.text = text
        self.pattern = pattern
        self.stop = stop
        self.read = 0  # where the match `first` found last ends, or its token goes on

    def first(self, pos: int) -> int:
        found = self.pattern.search(self.text, pos)
        if found is None:
            return NEVER
        self.read = found.end()
        return found.start()

    def end(self) -> int:
        if self.stop is None:
            return self.read
        stop = self.stop.search(self.text, self.read)
        return len(self.text) if stop is None else stop.start()


class UrlFinder:
    """URLs with credentials; the run of scheme characters last found is remembered."""

    __slots__ = ("scheme_end", "text", "url_end")

    def __init__(self, text: str) -> None:
        self.text = text
        self.scheme_end = -1  # where `://` starts, after the scheme last found
        self.url_end = 0

    def first(self, pos: int) -> int:
        text = self.text
        if pos < self.scheme_end:
            # `pos` is past a start found in this run: a later start is a letter after + . -
            later = NEXT_SCHEME.search(text, pos - 1, self.scheme_end)
            if later is not None:
                return later.start() + 1
            pos = self.scheme_end
        colon = text.find("://", pos)
        if colon == -1:
            return NEVER
        # No URL starts before the run of scheme characters that ends at the first `://`.
        before = text[pos:colon]
        run_start = colon - (len(before) - len(before.rstrip(SCHEME_CHARS)))
        found = None
        if run_start == pos and pos and text[pos - 1] in SCHEME_CHARS:
            found = URL_REST.match(text, pos)  # `pos` is inside the run
        if found is None:
            found = URL_WITH_CREDENTIALS.search(text, run_start)
            if found is None:
                return NEVER
        self.scheme_end = found.end("scheme")
        self.url_end = found.end()
        return found.start("scheme")

    def end(self) -> int:
        return self.url_end


class EntropyFinder:
    """High-entropy words, decided once per run of `[A-Za-z0-9_-]` (see the module notes)."""

    __slots__ = ("last", "run_end", "run_start", "text", "word_end")

    def __init__(self, text: str) -> None:
        self.text = text
        self.run_start = self.run_end = 0
        self.word_end = 0  # where every word of the run ends: its last word boundary
        self.last = -1  # the last start whose word holds all three classes, or -1

    def first(self, pos: int) -> int:
        text = self.text
        if pos <= self.last:
            start = self._accepted(max(pos, self.run_start))
            if start != NEVER:
                return start
        pos = max(pos, self.run_end)
        while True:
            run = None
            if pos and text[pos - 1] in RUN_CHARS:  # the rest of a run a match ended in
                run = RUN_REST.match(text, pos)
            if run is None:
                run = RUN.search(text, pos)
                if run is None:
                    return NEVER
            self._load(run.start(), run.end())
            start = self._accepted(self.run_start)
            if start != NEVER:
                return start
            pos = self.run_end

    def end(self) -> int:
        return self.word_end

    def _load(self, start: int, end: int) -> None:
        text = self.text
        self.run_start, self.run_end, self.last = start, end, -1
        # The greedy `{32,}\b` ends at the run's last word boundary, whichever start it took.
        if BOUNDARY.match(text, end):
            word_end = end
        elif text[end - 1] == "-":  # trailing dashes next to a non-word character
            word_end = start + len(text[start:end].rstrip("-"))
        else:  # a word character (a non-ASCII letter) follows: back to the last dash
            word_end = text.rfind("-", start, end) + 1
        if word_end - start < 32:
            return
        self.word_end = word_end
        backwards = text[start:word_end][::-1]
        # A word with all three classes, and a character that SVG path data does not use.
        lasts = [p.search(backwards) for p in (LOWER, UPPER, DIGIT, NOT_PATH_DATA)]
        if all(lasts):
            last_of_all = word_end - 1 - max(m.start() for m in lasts if m is not None)
            self.last = min(last_of_all, word_end - 32)

    def _accepted(self, pos: int) -> int:
        """The first word start in [pos, last] that is not a UUID or a 40/64-hex string."""
        text, end = self.text, self.word_end
        while pos <= self.last:
            start = self._boundary(pos)
            if start > self.last:
                return NEVER
            size = end - start
            if not (
                (size in (40, 64) and HEX.fullmatch(text, start, end))
                or (size == 36 and UUID_SHAPE.fullmatch(text, start, end))
            ):
                return start
            pos = start + 1
        return NEVER

    def _boundary(self, pos: int) -> int:
        """The first word boundary at or after `pos` inside the run (before its end)."""
        text = self.text
        if pos == self.run_start:
            if BOUNDARY.match(text, pos):
                return pos
            pos += 1
        # Inside the run only a dash next to a word character makes a boundary.
        if text[pos] == "-":
            if text[pos - 1] != "-":
                return pos
            after = NOT_DASH.search(text, pos, self.run_end)
            return NEVER if after is None else after.start()
        if text[pos - 1] == "-":
            return pos
        dash = text.find("-", pos, self.run_end)
        return NEVER if dash == -1 else dash
