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

Outside URLs, the findings are those of the single expression (a hypothesis test compares the
two), except in two odd cases where that loop broke the rule above, both now found:
- an `extra_patterns` match that starts where a word starts that looked high-entropy but was
  not one (no upper case letter, a 40-hex string...): the old loop moved on to the next
  character and never tried the extra pattern there;
- a named secret whose value holds the non-ASCII letters that case-insensitive matching takes
  for ASCII ones (`ſ`, `K`, `ı`, `İ`) with no 16 ASCII characters in a row: the old cheap
  pre-check did not let the text be scanned at all.

URLs (issue 11). Public links hold long ids that look like secrets (a Google Docs id, a
YouTube playlist, a capitalised Microsoft support slug, a `/password/reset` page), so inside
a URL only the places where credentials live are looked at.

- A URL starts at a scheme, `[A-Za-z][A-Za-z0-9+.-]*://`, where the URL-with-credentials kind
  starts it (a letter after a non-word character, or after `+`, `.` or `-` in the run of
  scheme characters), or at `www.` followed by a letter or digit at the start of a word (the
  text's start, whitespace or one of ``( [ < > " ' ` * _ ~ |`` before it: GitHub's autolinks).
  Any host counts, `www.` or not. It ends before the first whitespace or one of
  ``< > " ' ` ) ] |``, less trailing `. , : ; ! ? *` (punctuation of the sentence), so a
  bare URL, `[text](url)`, `<url>` and a quoted URL end where the link does. Text with
  neither (`docs.google.com/d/…` pasted bare) is not a URL: a dotted name such as
  `shop_pg.orders.total_revenue` cannot be told from a host. The URLs of a text are found
  once, left to right, each search starting where the previous URL ended; a URL inside
  another one (`?next=https://…`) is part of it.
- Named secrets and high-entropy words that start inside a URL do not count. Every other kind
  still does: URLs with credentials (`scheme://user:password@`, nested URLs included; the
  user may now be empty, as in `redis://:password@host`), the known token prefixes (`ghp_…`,
  `AKIA…`, `sk-…`, `xox?-…` are credentials wherever they are, `https://ghp_…@github.com/`
  included) and the configured patterns. A hypothesis test compares the scanner with a naive
  reference of these rules.
- "credential in a URL parameter": a query or fragment parameter, `name=value` after `?`,
  `&`, `;` or `#` in the part of the URL from its first `?` or `#` on (so `?sig=`,
  `&amp;sig=`, OAuth's `#access_token=` and a router's `#/reset?token=`), whose name is a
  credential name and whose value is not trivial. The value ends at `&`, `#`, `;` or the
  URL's end. The match is the value: redaction keeps the name, and a finding points at the
  credential itself.
- A credential name, percent-decoded and cut into words (at every character that is not a
  letter or digit, at camelCase, digits dropped), ends in `token`, `key`, `secret`,
  `password`, `passwd`, `pwd`, `pass`, `passphrase`, `sig`, `signature`, `auth` or `jwt`, or
  in a word that glues a known prefix to one of them (`apikey`, `accesstoken`,
  `clientsecret`, `xapikey`; see `_GLUED_PREFIXES`), unless the word before says that it
  names no credential (`pageToken`, `partitionKey`, `publicKey`: `_NOT_CREDENTIAL`). So
  `access_token`, `X-Amz-Signature`, `X-Amz-Security-Token`, `client_secret`, `apiKey`,
  `subscription-key` and `user[password]` are credentials. `X-Amz-Credential` and
  `X-Goog-Credential` are not: they name the signing key (an id, or a service account's
  address); the signature beside them is the secret.
- A trivial value is shorter than 16 characters, or has no lower-case letter and no digit
  (`YOUR_API_KEY_HERE`, `${TOKEN}`), or holds `{` or `}` (`{token}`), or repeats one
  character (`xxxxxxxxxxxxxxxx`): a placeholder, not a secret.
- A URL's path is not scanned: its segments are ids by design (documents, commits, slugs),
  and pages link to such URLs far more often than they paste a secret into one. The
  exception is a webhook URL whose path is the credential ("credential in a webhook URL",
  the path after the prefix, when not trivial): Slack `hooks.slack.com/services/` (and
  `/workflows/`, `/triggers/`), Discord `discord.com/api/webhooks/` (`discordapp.com`,
  `ptb.`, `canary.`, `/api/v10/`), Telegram `api.telegram.org/bot` (and `/file/bot`),
  Microsoft Teams `outlook.office.com/webhook/` and `*.webhook.office.com/webhookb2/`, hosts
  in lower case as the services write them. Other secret-bearing paths (a Zapier catch hook,
  an Azure Functions `?code=` key) are not known to the rule.

The URLs are found only as far as a finder asks (none when no parameter or webhook can be
there and no named secret or long word starts in a URL), and each is read a bounded number of
times: its end with one search, its query with one pass over the separators (a parameter's
name twice, to see whether it holds a credential word; a value's end and what decides whether
it is trivial once per stretch between `&`, `#` and `;`, however many `?`-parameters share
it). A named-secret or high-entropy start inside a URL sends its finder on from the URL's end.
"""

from __future__ import annotations

import functools
import re
import string
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, Protocol
from urllib.parse import unquote

URL_PARAMETER_KIND = "credential in a URL parameter"
WEBHOOK_KIND = "credential in a webhook URL"
# In priority order: at one start the first kind listed wins.
KINDS: tuple[str, ...] = (
    "private key",
    "URL with credentials",
    "OpenAI-style API key",
    "AWS access key id",
    "GitHub token",
    "Slack token",
    URL_PARAMETER_KIND,
    WEBHOOK_KIND,
    "named secret",
    "high-entropy string",
)
EXTRA_KIND = "configured secret pattern"
REDACTED = "[redacted]"

_NEVER = sys.maxsize  # the start a finder returns when its kind occurs no more

# Every secret holds one of these: a short text (a value, a message) without any is done
# with one search. On a long text the finders' own first searches cost no more than this.
_MAYBE = re.compile(r"-----BEGIN|://|www\.|xox|[A-Za-z0-9_\-./+=\u0130\u0131\u017f\u212a]{16}")
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

# URL with credentials, `\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:[^\s/@]+@` (the user may be
# empty, as in `redis://:password@host`): searched from the start of a run of scheme
# characters only (`_URL`) or from inside one (`_URL_REST`); the atomic group finds the run's
# first scheme start (a letter at a word boundary), and every later start in the run ends the
# same way.
_SCHEME_START = r"(?>(?=[A-Za-z])\b|[A-Za-z0-9+.-]*?[+.-](?=[A-Za-z]))"
_SCHEME_AND_CREDENTIALS = r"(?P<scheme>[A-Za-z0-9+.-]*+)://[^\s/:@]*+:[^\s/@]++@"
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

# URLs (see the module notes). A scheme starts where `_SCHEME_START` says; a `www.` link at a
# word start. A URL ends before `_URL_END`, less trailing `_TRAILING`.
_SCHEME_START_AT = re.compile(_SCHEME_START)
_WWW = re.compile(r"www\.(?<![^\s(\[<>\"'`*_~|]www\.)(?=[A-Za-z0-9])")
_URL_END = re.compile(r"[\s<>\"'`)\]|]")
_TRAILING = ".,:;!?*"
_QUERY = re.compile(r"[?#]")
_AUTHORITY_END = re.compile(r"[/?#]")
# A parameter: a separator, a name (read once: it stops at the next separator) and `=`; its
# value runs to the next `_VALUE_END`, so a `?` inside a value starts a parameter of its own.
# Only names that hold a credential word (or a `%`, which may hide one) are candidates.
_PARAMETER = re.compile(
    r"[?&#;](?=([^?&#;=]*+)=)(?=[^?&#;=]*?(?:(?i:token|key|secret|pass|pwd|sig|auth|jwt)|%))"
)
_VALUE_END = re.compile(r"[&#;]")
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_CREDENTIAL_WORDS = frozenset(
    {"token", "key", "secret", "password", "passwd", "pwd", "pass", "passphrase", "sig"}
    | {"signature", "auth", "jwt"}
)
# Words that end a glued credential name (`apikey`) after one of `_GLUED_PREFIXES`.
_GLUED_WORDS = ("token", "key", "secret", "password", "passwd", "pwd", "signature")
_GLUED_PREFIXES = frozenset(
    {"api", "access", "auth", "client", "app", "secret", "private", "id", "refresh", "session"}
    | {"security", "bearer", "oauth", "subscription", "master", "account", "storage", "sas"}
    | {"signing", "shared", "consumer", "user", "bot", "admin", "service", "db", "root", "x"}
    | {"xapi"}
)
# A word before the last that makes it name no credential: pagination cursors, keys of rows
# and spaces, public keys.
_NOT_CREDENTIAL = frozenset(
    {"page", "next", "prev", "previous", "continuation", "sync", "resumption", "pagination"}
    | {"cursor", "sort", "partition", "row", "range", "primary", "foreign", "public", "pub"}
    | {"space", "project", "issue", "idempotency", "cache", "object", "hot", "shortcut"}
)
_MIN_VALUE = 16
_LOWER_OR_DIGIT = re.compile(r"[a-z0-9]")
# Webhook URLs whose path is the credential: the host and the path before the secret part,
# matched from the host's start, in lower case as the services write them. A text that holds
# none of `_WEBHOOK_HOSTS` holds no webhook URL.
_WEBHOOK = re.compile(
    r"hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"|(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/(?:v[0-9]+/)?webhooks/"
    r"|api\.telegram\.org/(?:file/)?bot"
    r"|outlook\.office\.com/webhook/"
    r"|[a-z0-9-]+\.webhook\.office\.com/webhookb2/"
)
_WEBHOOK_HOSTS = ("hooks.slack.com", "discord", "api.telegram.org", "office.com")


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


def is_credential_name(name: str) -> bool:
    """Whether a URL parameter's name names a credential (see the module notes)."""
    # Names repeat (one per URL of a list, or crafted); short ones are remembered.
    return _short_credential_name(name) if len(name) <= 64 else _credential_name(name)


def _credential_name(name: str) -> bool:
    words = [word.lower() for word in _NAME_WORDS.findall(unquote(name))]
    if not words:
        return False
    last = words[-1]
    if last not in _CREDENTIAL_WORDS and not any(
        last.endswith(word) and last[: -len(word)] in _GLUED_PREFIXES for word in _GLUED_WORDS
    ):
        return False
    return len(words) == 1 or words[-2] not in _NOT_CREDENTIAL


_short_credential_name = functools.lru_cache(maxsize=1024)(_credential_name)


def is_trivial_value(value: str) -> bool:
    """Whether a credential parameter's value is too short, or a placeholder, to be a secret."""
    return (
        len(value) < _MIN_VALUE
        or not _LOWER_OR_DIGIT.search(value)
        or "{" in value
        or "}" in value
        or not value.strip(value[0])
    )


class _Url(NamedTuple):
    start: int
    end: int
    host: int  # where the part after `scheme://` (or the `www.` link) starts


class _Urls:
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
            found = _WWW.search(text, self.search)
            self.www = _NEVER if found is None else found.start()
        start = min(self.scheme, self.www)
        if start == _NEVER:
            return None
        host = self.scheme_colon + 3 if start == self.scheme else start
        floor = host if start == self.scheme else start + 4
        stop = _URL_END.search(text, host)
        end = len(text) if stop is None else stop.start()
        if end > floor and text[end - 1] in _TRAILING:
            end = floor + len(text[floor:end].rstrip(_TRAILING))
        self.search = end
        return _Url(start, end, host)

    def _next_scheme(self, pos: int) -> tuple[int, int]:
        """The first scheme start at or after `pos`, and where its `://` is."""
        text = self.text
        while True:
            colon = text.find("://", pos)
            if colon == -1:
                return _NEVER, _NEVER
            before = text[pos:colon]
            run_start = colon - (len(before) - len(before.rstrip(_SCHEME_CHARS)))
            found = _SCHEME_START_AT.match(text, run_start, colon)
            if found is not None:
                return found.end(), colon
            pos = colon + 3  # no scheme before this `://`


def _parameter_spans(text: str, url: _Url) -> list[tuple[int, int]]:
    """The values of the URL's credential parameters that are not trivial, in order."""
    query = _QUERY.search(text, url.host, url.end)
    if query is None:
        return []
    spans: list[tuple[int, int]] = []
    value_end = -1  # where the values that start in the current stretch end
    lowest = highest = 0  # the starts in [lowest, highest) give values that are not trivial
    for found in _PARAMETER.finditer(text, query.start(), url.end):
        name = found.group(1)
        if not is_credential_name(name):
            continue
        start = found.end() + len(name) + 1
        if value_end < start:  # a new stretch between `&`, `#` and `;`: read it once
            stop = _VALUE_END.search(text, start, url.end)
            value_end = url.end if stop is None else stop.start()
            lowest, highest = _not_trivial_starts(text, start, value_end)
        if value_end - start >= _MIN_VALUE and lowest <= start < highest:
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
    lower_or_digit = _LOWER_OR_DIGIT.search(value[::-1])
    highest = start if lower_or_digit is None else end - lower_or_digit.start()
    repeated = len(value) - len(value.rstrip(value[-1]))
    return lowest, min(highest, end - repeated)


def _webhook_spans(text: str, url: _Url) -> list[tuple[int, int]]:
    """The secret part of a webhook URL's path, if the URL is one."""
    query = _QUERY.search(text, url.host, url.end)
    path_end = url.end if query is None else query.start()
    authority = _AUTHORITY_END.search(text, url.host, path_end)
    if authority is None:
        return []
    host = text.rfind("@", url.host, authority.start()) + 1 or url.host
    found = _WEBHOOK.match(text, host, path_end)
    if found is None or is_trivial_value(text[found.end() : path_end]):
        return []
    return [(found.end(), path_end)]


def _webhook_host(text: str) -> bool:
    return any(host in text for host in _WEBHOOK_HOSTS)


class _UrlPartFinder:
    """A kind found in the places of each URL that `spans_of` lists."""

    __slots__ = ("at", "index", "read", "spans", "spans_of", "urls")

    def __init__(self, urls: _Urls, spans_of: Callable[[str, _Url], list[tuple[int, int]]]) -> None:
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
                return _NEVER
            self.index += 1
            self.spans = [] if url.end <= pos else self.spans_of(self.urls.text, url)
            self.at = 0

    def end(self) -> int:
        return self.read


class _OutsideUrls:
    """A kind that does not count where it starts inside a URL (named secrets, high-entropy
    words): a start inside one sends the finder on from the URL's end."""

    __slots__ = ("finder", "index", "urls")

    def __init__(self, finder: _Finder, urls: _Urls) -> None:
        self.finder = finder
        self.urls = urls
        self.index = 0  # the first URL that may end after the starts still to come

    def first(self, pos: int) -> int:
        while True:
            start = self.finder.first(pos)
            if start == _NEVER:
                return _NEVER
            url = self.urls.get(self.index)
            while url is not None and url.end <= start:
                self.index += 1
                url = self.urls.get(self.index)
            if url is None or start < url.start:
                return start
            pos = url.end

    def end(self) -> int:
        return self.finder.end()


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
        urls = _Urls(text)  # read only as far as a finder asks
        finders: list[_Finder | None] = [
            _PatternFinder(text, _PRIVATE_KEY, None),
            _UrlFinder(text),
            _PatternFinder(text, _OPENAI, _NOT_OPENAI),
            _PatternFinder(text, _AWS, None),
            _PatternFinder(text, _GITHUB, _NOT_GITHUB),
            _PatternFinder(text, _SLACK, _NOT_SLACK),
            _UrlPartFinder(urls, _parameter_spans) if "=" in text else None,
            _UrlPartFinder(urls, _webhook_spans) if _webhook_host(text) else None,
            _OutsideUrls(_PatternFinder(text, _NAMED, _NOT_NAMED), urls),
            _OutsideUrls(_EntropyFinder(text), urls),
        ]
        if self.extra is not None:
            finders.append(_PatternFinder(text, self.extra, None))
        # (next start, priority, finder) of each kind that occurs further on; the least wins.
        heads = [(f.first(0), i, f) for i, f in enumerate(finders) if f is not None]
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
