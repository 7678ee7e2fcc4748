"""The secret scanner (SPEC 9): every kind of secret, found in time linear in the text.

Only the standard library is imported, so any layer can scan or `redact` a string.

One match per place: the leftmost start wins, then the kind listed first in `KINDS`; the scan
goes on after the end of that match. A single regular expression of all kinds gave exactly
this, but backtracked: over whitespace after a keyword, over the scheme of a URL, and from
every start inside a long word (quadratic: 812 s for a 199 kB body). Here each kind has its
own finder, which returns the first start at or after a position and looks only where the
kind's literal anchor occurs (`-----BEGIN `, `://`, `sk-`, `AKIA`, `gh?_`, `xox?-`, a keyword,
an extra pattern, a run of 32 word characters). Each finder reads every character a bounded
number of times:

- repetitions that cannot give anything back are possessive (whitespace after a keyword, the
  words of a PEM header, the parts of a URL's credentials);
- the part of a secret that only decides where it ends (the rest of a token) is read only when
  that match is taken, so a start that another kind's match covers costs no more than its
  anchor;
- a URL is found from the start of the run of scheme characters before `://`, once per run;
- a high-entropy word is decided once per run of `[A-Za-z0-9_-]`: every start in a run (a word
  boundary, which Python places at the run's ends or next to a `-`) ends at the same place,
  the last boundary of the run, so "has a lower case letter, an upper case letter and a digit"
  holds for every start up to a limit, and only the three word lengths of the exceptions
  (36 for a UUID, 40 and 64 for hex) need a look at the word itself.

The findings are those of the single expression (a hypothesis test compares the two), except
in two odd cases where that loop broke the rule above, both now found:
- an `extra_patterns` match that starts where a word starts that looked high-entropy but was
  not one (no upper case letter, a 40-hex string...): the old loop moved on to the next
  character and never tried the extra pattern there;
- a named secret whose value holds the non-ASCII letters that case-insensitive matching takes
  for ASCII ones (`ſ`, `K`, `ı`, `İ`) with no 16 ASCII characters in a row: the old cheap
  pre-check did not let the text be scanned at all.
"""

from __future__ import annotations

import re
import string
import sys
from dataclasses import dataclass
from typing import Protocol

# In priority order: at one start the first kind listed wins.
KINDS: tuple[str, ...] = (
    "private key",
    "URL with credentials",
    "OpenAI-style API key",
    "AWS access key id",
    "GitHub token",
    "Slack token",
    "named secret",
    "high-entropy string",
)
EXTRA_KIND = "configured secret pattern"
REDACTED = "[redacted]"

_NEVER = sys.maxsize  # the start a finder returns when its kind occurs no more

# Every secret holds one of these: a short text (a value, a message) without any is done
# with one search. On a long text the finders' own first searches cost no more than this.
_MAYBE = re.compile(r"-----BEGIN|://|xox|[A-Za-z0-9_\-./+=\u0130\u0131\u017f\u212a]{16}")
_SHORT = 512

# PEM: the header words are taken possessively; the last of them must then be PRIVATE, which
# is the only way `(?:[A-Z0-9]+ )*PRIVATE KEY-----` can match (KEY----- is not a header word).
_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]++ )*+(?<= PRIVATE )KEY-----")
# The token prefixes need a word start: `(?<!\wsk-)` after `sk-` is `\b` before it, and
# leaves the literal first, where the regular expression engine searches for it fastest.
# Each reads the characters that make it a secret; the `_NOT_*` below find where the token
# ends, once the match is taken.
_OPENAI = re.compile(r"sk-(?<!\wsk-)[A-Za-z0-9_-]{20}")
_AWS = re.compile(r"AKIA(?<!\wAKIA)[0-9A-Z]{16}")
_GITHUB = re.compile(r"gh[pousr]_(?<!\wgh[pousr]_)[A-Za-z0-9]{36}")
_SLACK = re.compile(r"xox[abprs]-(?<!\wxox[abprs]-)[A-Za-z0-9-]{10}")
# Named secrets, `(?i:\b(bearer|api[_-]?key|access[_-]?token|secret|password)\b\s*[:=]?\s*`
# `[A-Za-z0-9_\-./+=]{16,})`. The first letter is a plain class (with `ſ`, which ignoring case
# takes for an `s`) so that the engine can skip to it, then the boundary before it is checked.
# `\s*[:=]?\s*` is read once, greedily: whitespace given back can only start the value on
# whitespace, so the two cases left are a separator after the whitespace or none, where a
# `=` may still be the value's first character.
_NAMED = re.compile(
    r"[bBaAsSpP\u017f](?<!\w[bBaAsSpP\u017f])(?i:(?<=b)earer|(?<=a)pi[_-]?key"
    r"|(?<=a)ccess[_-]?token|(?<=s)ecret|(?<=p)assword)"
    r"(?i:\b\s*+(?:[:=]\s*+[A-Za-z0-9_\-./+=]{16}|[A-Za-z0-9_\-./+=]{16}))"
)
# Where each token ends: the first character out of its class (or the end of the text).
_NOT_OPENAI = re.compile(r"[^A-Za-z0-9_-]")
_NOT_GITHUB = re.compile(r"[^A-Za-z0-9]")
_NOT_SLACK = re.compile(r"[^A-Za-z0-9-]")
_NOT_NAMED = re.compile(r"(?i:[^A-Za-z0-9_\-./+=])")

# URL with credentials, `\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@`: searched from the
# start of a run of scheme characters only (`_URL`) or from inside one (`_URL_REST`); the
# atomic group finds the run's first scheme start (a letter at a word boundary), and every
# later start in the run ends the same way.
_SCHEME_START = r"(?>(?=[A-Za-z])\b|[A-Za-z0-9+.-]*?[+.-](?=[A-Za-z]))"
_SCHEME_AND_CREDENTIALS = r"(?P<scheme>[A-Za-z0-9+.-]*+)://[^\s/:@]++:[^\s/@]++@"
_URL = re.compile(r"(?<![A-Za-z0-9+.-])" + _SCHEME_START + _SCHEME_AND_CREDENTIALS)
_URL_REST = re.compile(_SCHEME_START + _SCHEME_AND_CREDENTIALS)
_NEXT_SCHEME = re.compile(r"[+.-][A-Za-z]")
_SCHEME_CHARS = string.ascii_letters + string.digits + "+.-"

# High-entropy words, `\b[A-Za-z0-9_-]{32,}\b`: runs that hold a lower case letter, an upper
# case letter and a digit (others cannot hold such a word), from a run's start or from inside.
_HAS_ALL = r"(?=[a-z0-9_-]*+[A-Z])(?=[A-Z0-9_-]*+[a-z])(?=[A-Za-z_-]*+[0-9])"
_RUN = re.compile(r"(?<![A-Za-z0-9_-])" + _HAS_ALL + r"[A-Za-z0-9_-]{32,}")
_RUN_REST = re.compile(_HAS_ALL + r"[A-Za-z0-9_-]{32,}")
_RUN_CHARS = string.ascii_letters + string.digits + "_-"
_BOUNDARY = re.compile(r"\b")  # Python's: a non-ASCII letter is a word character too
_NOT_DASH = re.compile(r"[^-]")
_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")
_DIGIT = re.compile(r"[0-9]")
_HEX = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True, slots=True)
class SecretMatch:
    kind: str
    start: int
    end: int


class _Finder(Protocol):
    def first(self, pos: int) -> int:
        """The first start of this kind at or after `pos` (which never decreases)."""

    def end(self) -> int:
        """Where the match at the start `first` returned last ends."""


class _PatternFinder:
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
            return _NEVER
        self.read = found.end()
        return found.start()

    def end(self) -> int:
        if self.stop is None:
            return self.read
        stop = self.stop.search(self.text, self.read)
        return len(self.text) if stop is None else stop.start()


class _UrlFinder:
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
            later = _NEXT_SCHEME.search(text, pos - 1, self.scheme_end)
            if later is not None:
                return later.start() + 1
            pos = self.scheme_end
        colon = text.find("://", pos)
        if colon == -1:
            return _NEVER
        # No URL starts before the run of scheme characters that ends at the first `://`.
        before = text[pos:colon]
        run_start = colon - (len(before) - len(before.rstrip(_SCHEME_CHARS)))
        found = None
        if run_start == pos and pos and text[pos - 1] in _SCHEME_CHARS:
            found = _URL_REST.match(text, pos)  # `pos` is inside the run
        if found is None:
            found = _URL.search(text, run_start)
            if found is None:
                return _NEVER
        self.scheme_end = found.end("scheme")
        self.url_end = found.end()
        return found.start("scheme")

    def end(self) -> int:
        return self.url_end


class _EntropyFinder:
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
            if start != _NEVER:
                return start
        pos = max(pos, self.run_end)
        while True:
            run = None
            if pos and text[pos - 1] in _RUN_CHARS:  # the rest of a run a match ended in
                run = _RUN_REST.match(text, pos)
            if run is None:
                run = _RUN.search(text, pos)
                if run is None:
                    return _NEVER
            self._load(run.start(), run.end())
            start = self._accepted(self.run_start)
            if start != _NEVER:
                return start
            pos = self.run_end

    def end(self) -> int:
        return self.word_end

    def _load(self, start: int, end: int) -> None:
        text = self.text
        self.run_start, self.run_end, self.last = start, end, -1
        # The greedy `{32,}\b` ends at the run's last word boundary, whichever start it took.
        if _BOUNDARY.match(text, end):
            word_end = end
        elif text[end - 1] == "-":  # trailing dashes next to a non-word character
            word_end = start + len(text[start:end].rstrip("-"))
        else:  # a word character (a non-ASCII letter) follows: back to the last dash
            word_end = text.rfind("-", start, end) + 1
        if word_end - start < 32:
            return
        self.word_end = word_end
        backwards = text[start:word_end][::-1]
        lasts = [p.search(backwards) for p in (_LOWER, _UPPER, _DIGIT)]
        if all(lasts):
            last_of_all = word_end - 1 - max(m.start() for m in lasts if m is not None)
            self.last = min(last_of_all, word_end - 32)

    def _accepted(self, pos: int) -> int:
        """The first word start in [pos, last] that is not a UUID or a 40/64-hex string."""
        text, end = self.text, self.word_end
        while pos <= self.last:
            start = self._boundary(pos)
            if start > self.last:
                return _NEVER
            size = end - start
            if not (
                (size in (40, 64) and _HEX.fullmatch(text, start, end))
                or (size == 36 and _UUID.fullmatch(text, start, end))
            ):
                return start
            pos = start + 1
        return _NEVER

    def _boundary(self, pos: int) -> int:
        """The first word boundary at or after `pos` inside the run (before its end)."""
        text = self.text
        if pos == self.run_start:
            if _BOUNDARY.match(text, pos):
                return pos
            pos += 1
        # Inside the run only a dash next to a word character makes a boundary.
        if text[pos] == "-":
            if text[pos - 1] != "-":
                return pos
            after = _NOT_DASH.search(text, pos, self.run_end)
            return _NEVER if after is None else after.start()
        if text[pos - 1] == "-":
            return pos
        dash = text.find("-", pos, self.run_end)
        return _NEVER if dash == -1 else dash


class SecretScanner:
    """Every secret kind of SPEC 9 (and the configured extra patterns), in linear time."""

    def __init__(self, extra_patterns: tuple[str, ...] = ()) -> None:
        self.kinds = (*KINDS, EXTRA_KIND) if extra_patterns else KINDS
        self.extra = (
            re.compile("(?i:" + "|".join(re.escape(p) for p in extra_patterns) + ")")
            if extra_patterns
            else None
        )

    def scan(self, text: str) -> list[SecretMatch]:
        """Every secret in `text`, one match per place (the leftmost, then by priority)."""
        if self.extra is None and len(text) < _SHORT and not _MAYBE.search(text):
            return []
        finders: list[_Finder] = [
            _PatternFinder(text, _PRIVATE_KEY, None),
            _UrlFinder(text),
            _PatternFinder(text, _OPENAI, _NOT_OPENAI),
            _PatternFinder(text, _AWS, None),
            _PatternFinder(text, _GITHUB, _NOT_GITHUB),
            _PatternFinder(text, _SLACK, _NOT_SLACK),
            _PatternFinder(text, _NAMED, _NOT_NAMED),
            _EntropyFinder(text),
        ]
        if self.extra is not None:
            finders.append(_PatternFinder(text, self.extra, None))
        # (next start, priority, finder) of each kind that occurs further on; the least wins.
        heads = [(finder.first(0), i, finder) for i, finder in enumerate(finders)]
        matches: list[SecretMatch] = []
        while True:
            heads = [head for head in heads if head[0] != _NEVER]
            if not heads:
                return matches
            start, priority, finder = min(heads)
            pos = finder.end()
            matches.append(SecretMatch(self.kinds[priority], start, pos))
            heads = [h if h[0] >= pos else (h[2].first(pos), h[1], h[2]) for h in heads]


class _Redaction:
    """The scanner `redact` uses: SPEC 9's kinds, and the project's `extra_patterns` once a
    configuration is in effect (a process answers for one project at a time)."""

    scanner = SecretScanner()
    patterns: tuple[str, ...] = ()


def use_extra_patterns(patterns: tuple[str, ...]) -> None:
    """Make `redact` also hide the project's configured secret patterns."""
    if patterns != _Redaction.patterns:
        _Redaction.scanner = SecretScanner(patterns)
        _Redaction.patterns = patterns


def redact(text: str, scanner: SecretScanner | None = None) -> str:
    """`text` with every secret replaced by `[redacted]` (SPEC 9's kinds and the configured
    extra patterns, unless `scanner` is given)."""
    matches = (scanner or _Redaction.scanner).scan(text)
    if not matches:
        return text
    parts: list[str] = []
    pos = 0
    for match in matches:
        parts.extend((text[pos : match.start], REDACTED))
        pos = match.end
    parts.append(text[pos:])
    return "".join(parts)
