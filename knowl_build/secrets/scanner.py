"""The scanner (every kind, leftmost match first) and redaction."""

from __future__ import annotations

import re

from knowl_build.secrets.finders import (
    EntropyFinder,
    Finder,
    PatternFinder,
    SecretMatch,
    UrlFinder,
)
from knowl_build.secrets.patterns import (
    AWS_KEY,
    EXTRA_KIND,
    GITHUB,
    KINDS,
    MAYBE,
    NAMED,
    NEVER,
    NOT_GITHUB,
    NOT_NAMED,
    NOT_OPENAI,
    NOT_SLACK,
    OPENAI,
    PRIVATE_KEY,
    REDACTED,
    SHORT,
    SLACK,
)
from knowl_build.secrets.public import OutsidePublicValues, PublicValues, holds_public_ids
from knowl_build.secrets.urls import (
    OutsideUrls,
    UrlPartFinder,
    Urls,
    parameter_spans,
    webhook_host,
    webhook_spans,
)

# The letters that case-insensitive matching takes for ASCII ones (as MAYBE lists them), and
# the keyword every named secret holds (NAMED).
_FOLDED = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_KEYWORDS = ("bearer", "api", "access", "secret", "password")


def _keyword(text: str) -> bool:
    """Whether `text` holds a keyword of a named secret, in any case: a plain substring
    search, where NAMED tries every letter that can start one."""
    if "\u0130" in text or "\u0131" in text or "\u017f" in text or "\u212a" in text:
        text = text.translate(_FOLDED)
    text = text.lower()
    return any(keyword in text for keyword in _KEYWORDS)


def _long_word(text: str) -> bool:
    """Whether `text` holds 32 characters in a row between white space, as every
    high-entropy word does: a split, where RUN tries every position of every word."""
    return max(map(len, text.split()), default=0) >= 32


class SecretScanner:
    """Every secret kind of SPEC 9 (and the configured extra patterns), in linear time."""

    def __init__(self, extra_patterns: tuple[str, ...] = ()) -> None:
        self.kinds = (*KINDS, EXTRA_KIND) if extra_patterns else KINDS
        self.extra = (
            re.compile("(?i:" + "|".join(re.escape(p) for p in extra_patterns) + ")")
            if extra_patterns
            else None
        )

    def scan(self, text: str, key: str | None = None) -> list[SecretMatch]:
        """Every secret in `text`, one match per place (the leftmost, then by priority).
        `key`: the frontmatter key whose value `text` is, if any (a key that holds public
        ids makes the value's first word one)."""
        if self.extra is None and len(text) < SHORT and not MAYBE.search(text):
            return []
        urls = Urls(text)  # read only as far as a finder asks
        finders: list[Finder | None] = [
            PatternFinder(text, PRIVATE_KEY, None),
            UrlFinder(text),
            PatternFinder(text, OPENAI, NOT_OPENAI),
            PatternFinder(text, AWS_KEY, None),
            PatternFinder(text, GITHUB, NOT_GITHUB),
            PatternFinder(text, SLACK, NOT_SLACK),
            UrlPartFinder(urls, parameter_spans) if "=" in text else None,
            UrlPartFinder(urls, webhook_spans) if webhook_host(text) else None,
            # The two kinds whose expressions cannot start at a literal (a keyword's first
            # letter, a run of word characters) run only where their anchor occurs.
            OutsideUrls(PatternFinder(text, NAMED, NOT_NAMED), urls) if _keyword(text) else None,
            # Public values are looked for only where a word outside URLs starts.
            OutsidePublicValues(
                OutsideUrls(EntropyFinder(text), urls), PublicValues(text, holds_public_ids(key))
            )
            if _long_word(text)
            else None,
        ]
        if self.extra is not None:
            finders.append(PatternFinder(text, self.extra, None))
        # (next start, priority, finder) of each kind that occurs further on; the least wins.
        heads = [(f.first(0), i, f) for i, f in enumerate(finders) if f is not None]
        matches: list[SecretMatch] = []
        while True:
            heads = [head for head in heads if head[0] != NEVER]
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
