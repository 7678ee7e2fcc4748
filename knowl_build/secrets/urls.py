"""URLs: where credentials live in them (parameters, webhook paths), and the finders that look
only there or only outside them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import unquote

from knowl_build.secrets.finders import Finder
from knowl_build.secrets.patterns import (
    AUTHORITY_END,
    CREDENTIAL_WORDS,
    GLUED_PREFIXES,
    GLUED_WORDS,
    LOWER_OR_DIGIT,
    MIN_VALUE,
    NAME_WORDS,
    NEVER,
    NOT_CREDENTIAL,
    PARAMETER,
    QUERY,
    SCHEME_CHARS,
    SCHEME_START_AT,
    TRAILING,
    URL_END,
    VALUE_END,
    WEBHOOK,
    WEBHOOK_HOSTS,
    WWW,
)


def is_credential_name(name: str) -> bool:
    """Whether a URL parameter's name names a credential (see the module notes)."""
    # Names repeat (one per URL of a list, or crafted); short ones are remembered.
    return _short_credential_name(name) if len(name) <= 64 else _credential_name(name)


def _credential_name(name: str) -> bool:
    words = [word.lower() for word in NAME_WORDS.findall(unquote(name))]
    if not words:
        return False
    last = words[-1]
    if last not in CREDENTIAL_WORDS and not any(
        last.endswith(word) and last[: -len(word)] in GLUED_PREFIXES for word in GLUED_WORDS
    ):
        return False
    return len(words) == 1 or words[-2] not in NOT_CREDENTIAL


_short_credential_name = functools.lru_cache(maxsize=1024)(_credential_name)


def is_trivial_value(value: str) -> bool:
    """Whether a credential parameter's value is too short, or a placeholder, to be a secret."""
    return (
        len(value) < MIN_VALUE
        or not LOWER_OR_DIGIT.search(value)
        or "{" in value
        or "}" in value
        or not value.strip(value[0])
    )


class _Url(NamedTuple):
    start: int
    end: int
    host: int  # where the part after `scheme://` (or the `www.` link) starts


class Urls:
    """The URLs of a text, found once, left to right, as the finders ask for them."""

    __slots__ = ("found", "scheme", "scheme_colon", "search", "text", "www")

    def __init__(self, text: str) -> None:
        self.text = text
        self.found: list[_Url] = []
        self.search = 0  # the next URL starts at or after this (the last one's end)
        self.scheme = self.scheme_colon = -1  # the next scheme start at or after a search
        self.www = -1  # the next `www.` link at or after a search

    def get(self, index: int) -> _Url | None:
        """The text's URL number `index`, or None when it has fewer."""
        while len(self.found) <= index:
            url = self._next()
            if url is None:
                return None
            self.found.append(url)
        return self.found[index]

    def _next(self) -> _Url | None:
        text = self.text
        # Both next starts stay valid while a search does not pass them.
        if self.scheme < self.search:
            self.scheme, self.scheme_colon = self._next_scheme(self.search)
        if self.www < self.search:
            found = WWW.search(text, self.search)
            self.www = NEVER if found is None else found.start()
        start = min(self.scheme, self.www)
        if start == NEVER:
            return None
        host = self.scheme_colon + 3 if start == self.scheme else start
        floor = host if start == self.scheme else start + 4
        stop = URL_END.search(text, host)
        end = len(text) if stop is None else stop.start()
        if end > floor and text[end - 1] in TRAILING:
            end = floor + len(text[floor:end].rstrip(TRAILING))
        self.search = end
        return _Url(start, end, host)

    def _next_scheme(self, pos: int) -> tuple[int, int]:
        """The first scheme start at or after `pos`, and where its `://` is."""
        text = self.text
        while True:
            colon = text.find("://", pos)
            if colon == -1:
                return NEVER, NEVER
            before = text[pos:colon]
            run_start = colon - (len(before) - len(before.rstrip(SCHEME_CHARS)))
            found = SCHEME_START_AT.match(text, run_start, colon)
            if found is not None:
                return found.end(), colon
            pos = colon + 3  # no scheme before this `://`


def parameter_spans(text: str, url: _Url) -> list[tuple[int, int]]:
    """The values of the URL's credential parameters that are not trivial, in order."""
    query = QUERY.search(text, url.host, url.end)
    if query is None:
        return []
    spans: list[tuple[int, int]] = []
    value_end = -1  # where the values that start in the current stretch end
    lowest = highest = 0  # the starts in [lowest, highest) give values that are not trivial
    for found in PARAMETER.finditer(text, query.start(), url.end):
        name = found.group(1)
        if not is_credential_name(name):
            continue
        start = found.end() + len(name) + 1
        if value_end < start:  # a new stretch between `&`, `#` and `;`: read it once
            stop = VALUE_END.search(text, start, url.end)
            value_end = url.end if stop is None else stop.start()
            lowest, highest = _not_trivial_starts(text, start, value_end)
        if value_end - start >= MIN_VALUE and lowest <= start < highest:
            spans.append((start, value_end))
    return spans


def _not_trivial_starts(text: str, start: int, end: int) -> tuple[int, int]:
    """`[lowest, highest)`: where a value that ends at `end` and starts at or after `start`
    must start to be no placeholder (`is_trivial_value` but for the length), found in one
    read of the text: after the last brace, and before the last lower-case letter or digit
    and before the run of one character that ends the text."""
    value = text[start:end]
    if not value:
        return start, start
    lowest = start + max(value.rfind("{"), value.rfind("}")) + 1
    lower_or_digit = LOWER_OR_DIGIT.search(value[::-1])
    highest = start if lower_or_digit is None else end - lower_or_digit.start()
    repeated = len(value) - len(value.rstrip(value[-1]))
    return lowest, min(highest, end - repeated)


def webhook_spans(text: str, url: _Url) -> list[tuple[int, int]]:
    """The secret part of a webhook URL's path, if the URL is one."""
    query = QUERY.search(text, url.host, url.end)
    path_end = url.end if query is None else query.start()
    authority = AUTHORITY_END.search(text, url.host, path_end)
    if authority is None:
        return []
    host = text.rfind("@", url.host, authority.start()) + 1 or url.host
    found = WEBHOOK.match(text, host, path_end)
    if found is None or is_trivial_value(text[found.end() : path_end]):
        return []
    return [(found.end(), path_end)]


def webhook_host(text: str) -> bool:
    return any(host in text for host in WEBHOOK_HOSTS)


class UrlPartFinder:
    """A kind found in the places of each URL that `spans_of` lists."""

    __slots__ = ("at", "index", "read", "spans", "spans_of", "urls")

    def __init__(self, urls: Urls, spans_of: Callable[[str, _Url], list[tuple[int, int]]]) -> None:
        self.urls = urls
        self.spans_of = spans_of
        self.index = 0  # the next URL to read
        self.spans: list[tuple[int, int]] = []
        self.at = 0  # the next span of the URL read last
        self.read = 0

    def first(self, pos: int) -> int:
        while True:
            while self.at < len(self.spans):
                start, end = self.spans[self.at]
                if start >= pos:
                    self.read = end
                    return start
                self.at += 1
            url = self.urls.get(self.index)
            if url is None:
                return NEVER
            self.index += 1
            self.spans = [] if url.end <= pos else self.spans_of(self.urls.text, url)
            self.at = 0

    def end(self) -> int:
        return self.read


class OutsideUrls:
    """A kind that does not count where it starts inside a URL (named secrets, high-entropy
    words): a start inside one sends the finder on from the URL's end."""

    __slots__ = ("finder", "index", "urls")

    def __init__(self, finder: Finder, urls: Urls) -> None:
        self.finder = finder
        self.urls = urls
        self.index = 0  # the first URL that may end after the starts still to come

    def first(self, pos: int) -> int:
        while True:
            start = self.finder.first(pos)
            if start == NEVER:
                return NEVER
            url = self.urls.get(self.index)
            while url is not None and url.end <= start:
                self.index += 1
                url = self.urls.get(self.index)
            if url is None or start < url.start:
                return start
            pos = url.end

    def end(self) -> int:
        return self.finder.end()
