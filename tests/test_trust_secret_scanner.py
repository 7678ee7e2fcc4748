"""The secret scanner is linear and finds what the single regular expression found (issue 10,
items 5 and 6) outside URLs, and inside URLs only credentials where they live (issue 11,
item 7): property tests against the old implementation (on text without URLs) and against a
naive reference of the URL rule (on any text), adversarial 200 kB inputs with their exact
findings (each would take minutes if a pattern were quadratic), `redact`, and secrets in
frontmatter keys."""

from __future__ import annotations

import base64
import json
import re
import string
from collections.abc import Callable
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowl_build.core.config import SecurityConfig
from knowl_build.pipeline.pages import parse_page
from knowl_build.secrets.scanner import SecretScanner, redact
from tests.helpers import Project, invoke

# --- The reference: the scanner as it was before it became linear, copied unchanged. ---------

_KINDS: tuple[tuple[str, str], ...] = (
    ("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    ("URL with credentials", r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@"),
    ("OpenAI-style API key", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("AWS access key id", r"\bAKIA[0-9A-Z]{16}"),
    ("GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{36,}"),
    ("Slack token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    (
        "named secret",
        # SPEC 9's `\s*[:=]?\s*`, except that with neither white space nor a separator the
        # value may not start with `-./+` (a slug such as `api-key-rotation-policy`).
        r"(?i:\b(?:bearer|api[_-]?key|access[_-]?token|secret|password)\b"
        r"(?:\s*[:=]\s*|\s+|(?![-./+]))[A-Za-z0-9_\-./+=]{16,})",
    ),
    ("high-entropy string", r"\b[A-Za-z0-9_-]{32,}\b"),
)
_HIGH_ENTROPY = len(_KINDS) - 1
_HEX = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")
_DIGIT = re.compile(r"[0-9]")
_MAYBE = re.compile(r"-----BEGIN|://|sk-|AKIA|gh[pousr]_|xox|[A-Za-z0-9_\-./+=]{16,}")

Found = list[tuple[str, int, int]]


def _high_entropy(word: str) -> bool:
    return bool(
        _LOWER.search(word)
        and _UPPER.search(word)
        and _DIGIT.search(word)
        and not _HEX.fullmatch(word)
        and not _UUID.fullmatch(word)
    )


# --- Where knowl deviates from SPEC 9's plain patterns (issue 22, item 7): public values. ------
# SPEC 9's high-entropy rule takes Subresource Integrity hashes (`integrity="sha384-…"`), dense
# SVG path data (`14H7v-2h7v2zm3-4H7v-2h10v2z`) and public ids (a Google Docs `documentId`, a
# YouTube playlist) for secrets: long words with a lower-case letter, an upper-case letter and
# a digit. knowl does not count a high-entropy word that is one of them, because real pages
# (Hugo's documentation, Dendron's Google Docs notes, icon sets) are full of them and no secret
# has their shape; every other kind still counts there (an `AKIA…` key in an `integrity=`
# value is found). Written from the package notes, naively: a hash by decoding its base64, a
# key by trying each spelling at each place, then the places left to right.
PATH_DATA = re.compile(r"[0-9MmLlHhVvCcSsQqTtAaZz-]+")
DIGEST_SIZES = {"sha256": 32, "sha384": 48, "sha512": 64}
ID_OWNERS = ["document", "revision", "spreadsheet", "presentation", "video", "playlist"]
ID_OWNERS += ["channel", "youtube"]
ID_KEYS = [owner + sep + "id" for owner in ID_OWNERS for sep in ("", "_", "-")] + ["youtube"]
ID_CHARS = set(string.ascii_letters + string.digits + "_-")
B64_CHARS = set(string.ascii_letters + string.digits + "+/=")
YOUTUBE = re.compile(r"\{\{[<%][ \t]*youtube[ \t]+(?:id[ \t]*=[ \t]*)?[\"']?([A-Za-z0-9_-]+)")
WHOLE_ID = re.compile(r"\s*(?:[|>][-+0-9]*\s*)?[\"']?([A-Za-z0-9_-]+)")
Place = tuple[int, int]
# Built once: the reference tries each of them at every place of every generated text.
KEY_PATTERNS = [(len(key), re.compile(key, re.IGNORECASE | re.ASCII)) for key in ID_KEYS]
BEFORE_HASH = B64_CHARS | ID_CHARS
BEFORE_KEY = ID_CHARS - {"-"}


def _knowl_high_entropy(word: str) -> bool:
    return _high_entropy(word) and not PATH_DATA.fullmatch(word)


def _sri_at(text: str, i: int) -> Place | None:
    if i and text[i - 1] in BEFORE_HASH:
        return None
    for name, size in DIGEST_SIZES.items():
        if text.startswith(name + "-", i):
            end = i + len(name) + 1
            while end < len(text) and text[end] in B64_CHARS:
                end += 1
            value = text[i + len(name) + 1 : end]
            if end < len(text) and text[end] in ID_CHARS:
                return None
            try:
                digest = base64.b64decode(value, validate=True)
            except ValueError:
                return None
            if len(digest) == size and base64.b64encode(digest).decode() == value:
                return i, end
    return None


def _id_after_key_at(text: str, i: int) -> tuple[int, Place] | None:
    """Where the value after a key that holds public ids at `i` is, and where the match ends."""
    if i and text[i - 1] in BEFORE_KEY:
        return None
    for size, key in KEY_PATTERNS:
        after = i + size
        if not key.fullmatch(text[i:after]) or text[after : after + 1] in ID_CHARS:
            continue
        j = after + (text[after : after + 1] in ("'", '"'))
        while text[j : j + 1] in (" ", "\t"):
            j += 1
        if text[j : j + 1] not in (":", "="):
            continue
        j += 1
        while text[j : j + 1] in (" ", "\t"):
            j += 1
        for start in (j + (text[j : j + 1] in ("'", '"')), j):
            end = start
            while end < len(text) and text[end] in ID_CHARS:
                end += 1
            if end > start:
                return end, (start, end)
    return None


def public_spans(text: str, key: str | None = None) -> list[Place]:
    """The public values of `text`: hashes, ids after their keys, YouTube shortcodes' videos,
    and the first word of the value of a frontmatter key that holds public ids."""
    places: list[Place] = []
    pos = 0
    if key is not None and key.lower().replace("_", "").replace("-", "") in {
        k.replace("_", "").replace("-", "") for k in ID_KEYS
    }:
        first = WHOLE_ID.match(text)
        if first is not None:
            places.append(first.span(1))
            pos = first.end()
    i = pos
    while i < len(text):
        sri = _sri_at(text, i)
        keyed = None if sri is not None else _id_after_key_at(text, i)
        video = None if sri or keyed else YOUTUBE.match(text, i)
        if sri is not None:
            places.append(sri)
            i = sri[1]
        elif keyed is not None:
            places.append(keyed[1])
            i = keyed[0]
        elif video is not None:
            places.append(video.span(1))
            i = video.end()
        else:
            i += 1
    return places


class OldSecretScanner:
    """Every secret kind in one regular expression, scanned once per text."""

    def __init__(self, extra_patterns: tuple[str, ...] = ()) -> None:
        kinds = list(_KINDS)
        if extra_patterns:
            extra = "|".join(re.escape(p) for p in extra_patterns)
            kinds.append(("configured secret pattern", f"(?i:{extra})"))
        self.kinds = [kind for kind, _ in kinds]
        self.pattern = re.compile("|".join(f"(?P<k{i}>{rx})" for i, (_, rx) in enumerate(kinds)))
        self.has_extra = bool(extra_patterns)

    def scan(self, text: str) -> Found:
        if not self.has_extra and not _MAYBE.search(text):
            return []
        matches: Found = []
        pos = 0
        search = self.pattern.search
        while True:
            m = search(text, pos)
            if m is None:
                return matches
            index = int(str(m.lastgroup)[1:])
            if index == _HIGH_ENTROPY and not _high_entropy(m.group(0)):
                pos = m.start() + 1  # not a secret; a token may still start inside it
                continue
            matches.append((self.kinds[index], m.start(), m.end()))
            pos = m.end()


class SpecifiedScanner(OldSecretScanner):
    """The old loop with the two differences the new scanner's docstring names, and nothing
    else: no pre-check, and where a rejected high-entropy word starts, the extra patterns
    are still tried. `rescued` counts the places where the second one applied."""

    def __init__(self, extra_patterns: tuple[str, ...] = ()) -> None:
        super().__init__(extra_patterns)
        self.extra = re.compile(f"(?i:{'|'.join(re.escape(p) for p in extra_patterns)})")
        self.rescued = 0

    def scan(self, text: str) -> Found:
        matches: Found = []
        pos = 0
        while True:
            m = self.pattern.search(text, pos)
            if m is None:
                return matches
            index = int(str(m.lastgroup)[1:])
            if index == _HIGH_ENTROPY and not _high_entropy(m.group(0)):
                extra = self.extra.match(text, m.start()) if self.has_extra else None
                if extra is None:
                    pos = m.start() + 1
                    continue
                self.rescued += 1
                matches.append((self.kinds[-1], extra.start(), extra.end()))
                pos = extra.end()
                continue
            matches.append((self.kinds[index], m.start(), m.end()))
            pos = m.end()


# --- The reference for URLs (issue 11): naive and quadratic, written from the module notes. ---

PARAM = "credential in a URL parameter"
WEBHOOK = "credential in a webhook URL"
NAMED = "named secret"
HE = "high-entropy string"
URL_START = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://|(?<![^\s(\[<>\"'`*_~|])www\.(?=[A-Za-z0-9])")
URL_BODY = re.compile(r"[^\s<>\"'`)\]|]*")
NAME_WORDS = re.compile(r"[^A-Za-z]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
CREDENTIAL_WORDS = {
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "sig",
    "signature",
    "auth",
    "jwt",
}
GLUED_WORDS = ["token", "key", "secret", "password", "passwd", "pwd", "signature"]
GLUED_PREFIXES = [
    "api",
    "access",
    "auth",
    "client",
    "app",
    "secret",
    "private",
    "id",
    "refresh",
    "session",
    "security",
    "bearer",
    "oauth",
    "subscription",
    "master",
    "account",
    "storage",
    "sas",
    "signing",
    "shared",
    "consumer",
    "user",
    "bot",
    "admin",
    "service",
    "db",
    "root",
    "x",
    "xapi",
]
NOT_CREDENTIAL = {
    "page",
    "next",
    "prev",
    "previous",
    "continuation",
    "sync",
    "resumption",
    "pagination",
    "cursor",
    "sort",
    "partition",
    "row",
    "range",
    "primary",
    "foreign",
    "public",
    "pub",
    "space",
    "project",
    "issue",
    "idempotency",
    "cache",
    "object",
    "hot",
    "shortcut",
}
WEBHOOKS = re.compile(
    r"hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/(?:v[0-9]+/)?webhooks/"
    r"|api\.telegram\.org/(?:file/)?bot|outlook\.office\.com/webhook/"
    r"|[a-z0-9-]+\.webhook\.office\.com/webhookb2/"
)
URL_CREDENTIALS = r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:[^\s/@]+@"
Url = tuple[int, int, int]  # start, end, where the part after `scheme://` (or `www.`) starts


def url_spans(text: str) -> list[Url]:
    urls: list[Url] = []
    pos = 0
    while (m := URL_START.search(text, pos)) is not None:
        body = URL_BODY.match(text, m.end())
        assert body is not None
        end = body.end()
        while end > m.end() and text[end - 1] in ".,:;!?*":
            end -= 1
        urls.append((m.start(), end, m.end() if m.group().endswith("://") else m.start()))
        pos = end
    return urls


def credential_name(name: str) -> bool:
    words = [word.lower() for word in NAME_WORDS.split(unquote(name)) if word]
    if not words:
        return False
    last = words[-1]
    glued = any(last == prefix + word for prefix in GLUED_PREFIXES for word in GLUED_WORDS)
    return (last in CREDENTIAL_WORDS or glued) and (
        len(words) == 1 or words[-2] not in NOT_CREDENTIAL
    )


def trivial(value: str) -> bool:
    return (
        len(value) < 16
        or not re.search("[a-z0-9]", value)
        or "{" in value
        or "}" in value
        or len(set(value)) == 1
    )


def url_credentials(text: str, url: Url) -> tuple[dict[int, int], dict[int, int]]:
    """Where each credential parameter's value, and the secret part of a webhook's path, start
    and end."""
    _, end, host = url
    marks = [i for i in range(host, end) if text[i] in "?#"]
    params: dict[int, int] = {}
    for i in range(marks[0] if marks else end, end):
        if text[i] not in "?&#;":
            continue
        j = i + 1
        while j < end and text[j] not in "?&#;=":
            j += 1
        if j < end and text[j] == "=":
            k = j + 1
            while k < end and text[k] not in "&#;":
                k += 1
            if credential_name(text[i + 1 : j]) and not trivial(text[j + 1 : k]):
                params[j + 1] = k
    hooks: dict[int, int] = {}
    path_end = marks[0] if marks else end
    slash = text.find("/", host, path_end)
    if slash != -1:
        at = text.rfind("@", host, slash)
        name = host if at == -1 else at + 1
        m = WEBHOOKS.match(text[name:path_end])
        if m is not None and not trivial(text[name + m.end() : path_end]):
            hooks[name + m.end()] = path_end
    return params, hooks


class UrlRuleScanner:
    """SPEC 9's kinds (the URL-with-credentials user may be empty), kind by kind: at each place
    the first kind that matches there wins. Named secrets and high-entropy words do not count
    where they start inside a URL; credential parameters and webhook paths are URL kinds."""

    def __init__(self, extra_patterns: tuple[str, ...] = (), public: bool = True) -> None:
        self.public = public  # False: SPEC 9's plain high-entropy rule, without public values
        kinds = [
            (kind, URL_CREDENTIALS if kind == "URL with credentials" else rx) for kind, rx in _KINDS
        ]
        kinds[6:6] = [(PARAM, ""), (WEBHOOK, "")]
        if extra_patterns:
            kinds.append(
                (
                    "configured secret pattern",
                    f"(?i:{'|'.join(re.escape(p) for p in extra_patterns)})",
                )
            )
        self.kinds = [(kind, re.compile(rx)) for kind, rx in kinds]

    def scan(self, text: str, key: str | None = None) -> Found:
        urls = url_spans(text)
        self.publics = public_spans(text, key) if self.public else []
        places: dict[str, dict[int, int]] = {PARAM: {}, WEBHOOK: {}}
        for url in urls:
            params, hooks = url_credentials(text, url)
            places[PARAM].update(params)
            places[WEBHOOK].update(hooks)
        matches: Found = []
        pos = 0
        while True:
            best: tuple[int, int, str] | None = None
            for kind, rx in self.kinds:
                found = self._first(kind, rx, text, pos, urls, places)
                if found is not None and (best is None or found[0] < best[0]):
                    best = (*found, kind)
            if best is None:
                return matches
            matches.append((best[2], best[0], best[1]))
            pos = best[1]

    def _first(
        self,
        kind: str,
        rx: re.Pattern[str],
        text: str,
        pos: int,
        urls: list[Url],
        places: dict[str, dict[int, int]],
    ) -> tuple[int, int] | None:
        if kind in places:
            starts = [start for start in places[kind] if start >= pos]
            return (min(starts), places[kind][min(starts)]) if starts else None
        high_entropy = _knowl_high_entropy if self.public else _high_entropy
        while (m := rx.search(text, pos)) is not None:
            inside = any(start <= m.start() < end for start, end, _ in urls)
            public = any(start <= m.start() < end for start, end in self.publics)
            if (
                (kind in (NAMED, HE) and inside)
                or (kind == HE and public)
                or (kind == HE and not high_entropy(m.group()))
            ):
                pos = m.start() + 1
                continue
            return m.start(), m.end()
        return None


def scan(scanner: SecretScanner, text: str) -> Found:
    return [(m.kind, m.start, m.end) for m in scanner.scan(text)]


# --- Texts made of what each kind's pattern looks at. ----------------------------------------

FRAGMENTS = [
    # keywords, in any case, and the letters case-insensitive matching takes for ASCII ones
    "password",
    "PASSWORD",
    "Secret",
    "bearer",
    "api_key",
    "api-key",
    "apikey",
    "API_KEY",
    "access_token",
    "access-token",
    "AccessToken",
    "pa\u017f\u017fword",
    "\u017fecret",
    "api_\u212aey",
    # token prefixes, near misses included
    "sk-",
    "sk_",
    "AKIA",
    "AKIAABCDEFGHIJKLMNOP",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "ghx_",
    "xoxb-",
    "xoxa-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "xoxz-",
    "-----BEGIN ",
    "-----BEGIN",
    "PRIVATE ",
    "KEY-----",
    "RSA ",
    "EC ",
    "PRIVATE KEY-----",
    "://",
    "https://",
    "user:pass@",
    "u:p@",
    "@",
    ":",
    "=",
    ": ",
    " = ",
    "-",
    "--",
    "_",
    ".",
    "/",
    "+",
    "a.",
    "b+",
    "c-",
    # hex, UUIDs and mixed words
    "deadbeef",
    "DEADBEEF",
    "0123456789abcdef0123456789abcdef01234567",
    "123e4567-e89b-12d3-a456-426614174000",
    "aB3",
    "Zx9",
    "q7W",
    "0",
    "9",
]
CHARS = "aZk09_-./+=:@ \n\t\u00a0\u2003\u00e9\u00df\u0131\u0130\u017f\u212a\u0663\u4e2d"
WORD_CHARS = "aZq09_-"
TOKEN_CHARS = "aZq09_-./+=\u017f\u212a"
PREFIXES = [
    "password",
    "Secret: ",
    "api-key=",
    "bearer ",
    "access_token ",
    "sk-",
    "AKIA",
    "ghp_",
    "ghs_",
    "xoxb-",
    "xoxs-",
    "-",
]

fragment = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.text(alphabet=CHARS, max_size=6),
    # long runs: whitespace, separators, word characters with and without all three classes
    st.builds(lambda c, n: c * n, st.sampled_from(CHARS), st.integers(1, 40)),
    st.text(alphabet=WORD_CHARS, min_size=8, max_size=70),
    st.text(alphabet="abcdef0123456789-", min_size=30, max_size=70),
    # near and complete secrets: a prefix and a token, a URL, a PEM header
    st.builds(
        lambda p, t: p + t, st.sampled_from(PREFIXES), st.text(alphabet=TOKEN_CHARS, max_size=45)
    ),
    st.builds(
        lambda p, t: p + t,
        st.sampled_from(PREFIXES),
        st.text(alphabet="aZq09", min_size=8, max_size=45),
    ),
    st.builds(
        "{}://{}:{}@".format,
        st.text(alphabet="aZ9+.-\u00e9", max_size=6),
        st.text(alphabet="u:@/ .", max_size=4),
        st.text(alphabet="p:@/ .", max_size=4),
    ),
    st.builds(
        lambda words: "-----BEGIN " + " ".join(words) + " KEY-----",
        st.lists(st.sampled_from(["RSA", "EC", "A1", "", "PRIVATE", "x", "KEY-----"]), max_size=4),
    ),
)
texts = st.lists(fragment, max_size=14).map("".join)
EXTRAS = ["acme", "acme-internal", "b", "KEY", "p@", "-x-", "\u017fecret", "00", "token"]
extra_patterns = st.lists(st.sampled_from(EXTRAS), min_size=1, max_size=3, unique=True).map(tuple)

# URLs: where they start and end, parameters (credential names or not, separators, values
# trivial or not), webhook hosts, userinfo, and what URLs hide (named secrets, long words).
URL_FRAGMENTS = [
    "https://",
    "http://",
    "s3://",
    "git+ssh://",
    "a.b-c://",
    "_://",
    "1://",
    "www.",
    "www.a",
    "xwww.b",
    "(www.c",
    "?",
    "&",
    "#",
    ";",
    "&amp;",
    "=",
    "/",
    "@",
    ":",
    ")",
    "(",
    ">",
    "<",
    "]",
    "[",
    "|",
    "'",
    '"',
    "`",
    ".",
    ",",
    "!",
    "*",
    "{",
    "}",
    "%2F",
    "%5B",
    "sig=",
    "token=",
    "?api_key=",
    "&X-Amz-Signature=",
    "#access_token=",
    "?pageToken=",
    "&monkey=",
    ";publicKey=",
    "?apikey=",
    "&user%5Bpassword%5D=",
    "&clientSecret=",
    "?X-Amz-Credential=",
    "hooks.slack.com/services/",
    "discord.com/api/webhooks/",
    "api.telegram.org/bot",
    "x.webhook.office.com/webhookb2/",
    "u:p@",
    ":p@",
    "/password=",
    "/secret ",
]
NAMES = [
    "token",
    "sig",
    "key",
    "api_key",
    "apiKey",
    "X-Amz-Signature",
    "client_secret",
    "apikey",
    "pwd",
    "auth",
    "pageToken",
    "publicKey",
    "monkey",
    "X-Amz-Credential",
    "v",
    "usp",
    "user[password]",
    "user%5Bpassword%5D",
    "x-api-key",
    "sortKey",
    "hotKey",
    "tokens",
    "",
    "Signature",
    "id_token",
]
VALUES = [
    "aB3" * 11,
    "ghp_" + "a" * 36,
    "YOUR_API_KEY_HERE",
    "{token}",
    "x" * 20,
    "0123456789abcdef",
    "0123456789abcde",
    "Qa%2FVd8lR%2BzT0%3D" * 2,
    "a?token=" + "b1" * 9,
    "AKIAABCDEFGHIJKLMNOP",
]
parameter = st.builds(
    "{}{}={}".format,
    st.sampled_from("?&#;"),
    st.one_of(st.sampled_from(NAMES), st.text(alphabet="aZk_-[]%5BT", max_size=10)),
    st.one_of(
        st.sampled_from(VALUES),
        st.text(alphabet="aZ9%-_.~+/=X{}?:@", max_size=24),
        st.builds(lambda c, n: c * n, st.sampled_from("xX*a9"), st.integers(14, 18)),
    ),
)
url = st.builds(
    "{}{}{}{}{}{}".format,
    st.sampled_from(
        [
            "https://",
            "http://",
            "s3://",
            "www.",
            "postgres://u:p@",
            "redis://:pw@",
            "a.b-c+d://",
            "x://",
            "-https://",
            "\u00e9https://",
        ]
    ),
    st.sampled_from(
        [
            "hooks.slack.com",
            "discord.com",
            "api.telegram.org",
            "docs.google.com",
            "a",
            "u:p@h",
            "",
            "A.webhook.office.com",
        ]
    ),
    st.one_of(
        st.sampled_from(["/services/", "/api/webhooks/", "/bot", "/webhookb2/", "/", ""]),
        st.text(alphabet="/aZq09_-", max_size=12),
    ),
    st.one_of(st.just(""), st.sampled_from(VALUES), st.text(alphabet="aZq09_-/", max_size=40)),
    st.lists(parameter, max_size=4).map("".join),
    st.sampled_from(
        ["", ".", "*", "!?", ",:;", ")", "> ", "]", "|", "'", '"', "`", " ", "\n", "...", ".x"]
    ),
)
webhook = st.builds(
    "{}{}{}{}".format,
    st.sampled_from(["https://", "https://u:p@", "www.", "http://x/"]),
    st.sampled_from(
        [
            "hooks.slack.com/services/",
            "hooks.SLACK.com/workflows/",
            "hooks.slack.com/workflows/",
            "hooks.slack.com:443/services/",
            "discord.com/api/v10/webhooks/",
            "ptb.discordapp.com/api/webhooks/",
            "api.telegram.org/bot",
            "api.telegram.org/file/bot",
            "outlook.office.com/webhook/",
            "a-1.webhook.office.com/webhookb2/",
            "hooks.slack.com.evil.io/services/",
            "hooks.slack.com/",
            "evilhooks.slack.com/services/",
        ]
    ),
    st.one_of(st.sampled_from(VALUES), st.text(alphabet="aZ9/-_X{", max_size=30)),
    st.sampled_from(["", "?x=1", "#a", " ", ").", "/"]),
)
url_fragment = st.one_of(fragment, url, webhook, st.sampled_from(URL_FRAGMENTS))
url_texts = st.lists(url_fragment, max_size=10).map("".join)

# Public values (issue 22): hashes of each digest's exact length and near misses, the keys
# that hold public ids in their spellings and near misses, shortcodes, and path data.
SRI_DIGEST = {
    "sha256": "X+zrZv/IbzjZUnhsbWlsecLbwjndTpG0ZynXOif7V+k=",
    "sha384": "X5FVDtsD8LuJF9pX8PiBiXb12pcTB7fuSIa7lRxIkaHxb4QNro9lWqXfcYiE68Fb",
    "sha512": "MbygIJTreBJqUXsgaojHPPqexvcExwMNGCEsrOgg8CXwC/DqaNvz86VDbKY7U797+ArY1d59g1nQt/7Z28OrmQ==",
}
PUBLIC_FRAGMENTS = [
    "sha256-",
    "sha384-",
    "sha512-",
    "sha1-",
    'integrity="',
    "documentId",
    "revision_id",
    "VIDEO-ID",
    "youtube",
    "youtubeid",
    "playlistIdx",
    "xdocumentId",
    "documentId: ",
    '"revisionId": "',
    "spreadsheetId = '",
    "youtube: ",
    "\u017fpreadsheetId: ",
    "V\u0130DEOID=",
    "{{< youtube ",
    "{{% youtube id=",
    '{{<youtube id = "',
    "M12 2C6.48",
    "14H7v-2h7v2zm3-4H7v-2h10v2zm0-4H7V7h10v2z",
    "m0-4H7V7h10v2zM4",
]
sri_value = st.builds(
    lambda name, cut, tail: name + "-" + SRI_DIGEST[name][cut:] + tail,
    st.sampled_from(sorted(SRI_DIGEST)),
    st.sampled_from([0, 0, 0, 1]),
    st.sampled_from(["", "", "=", "A", "+", "-", "_", '"', " ", "?x"]),
)
bad_padding = st.builds(
    lambda name, char: name + "-" + SRI_DIGEST[name][:-3] + char + SRI_DIGEST[name][-2:],
    st.sampled_from(["sha256", "sha512"]),
    st.sampled_from("AQgwkBz+"),
)
path_data = st.text(alphabet="MmLlHhVvCcSsZz0123456789-", min_size=30, max_size=60)
public_fragment = st.one_of(
    fragment, sri_value, bad_padding, path_data, st.sampled_from(PUBLIC_FRAGMENTS)
)
public_texts = st.lists(public_fragment, max_size=10).map("".join)
KEYS = [None, "title", "documentId", "meta.documentId", "youtube", "video-ID", "revisionid_x"]

_SCANNER = SecretScanner()


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_scanner_matches_the_old_regex(text: str) -> None:
    found = scan(_SCANNER, text)
    assert found == UrlRuleScanner().scan(text)
    # Outside URLs and public values, SPEC 9's kinds as they were.
    if not url_spans(text) and found == UrlRuleScanner(public=False).scan(text):
        assert found == SpecifiedScanner().scan(text)
        if _MAYBE.search(text):  # past the old pre-check, the two are the same scan
            assert found == OldSecretScanner().scan(text)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(url_texts)
def test_scanner_matches_the_url_rule(text: str) -> None:
    assert scan(_SCANNER, text) == UrlRuleScanner().scan(text)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(public_texts, st.sampled_from(KEYS))
def test_scanner_matches_the_public_value_rule(text: str, key: str | None) -> None:
    found = [(m.kind, m.start, m.end) for m in _SCANNER.scan(text, key)]
    assert found == UrlRuleScanner().scan(text, key)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(texts, url_texts), extra_patterns)
def test_scanner_with_extra_patterns_matches_the_old_regex(
    text: str, extras: tuple[str, ...]
) -> None:
    found = scan(SecretScanner(extras), text)
    assert found == UrlRuleScanner(extras).scan(text)
    if not url_spans(text) and found == UrlRuleScanner(extras, public=False).scan(text):
        specified = SpecifiedScanner(extras)
        assert found == specified.scan(text)
        if not specified.rescued:
            assert found == OldSecretScanner(extras).scan(text)


def test_the_two_documented_differences() -> None:
    # An extra pattern where a word starts that only looked high-entropy (no upper case).
    text = "acme" + "x" * 40
    assert OldSecretScanner(("acme",)).scan(text) == []
    assert scan(SecretScanner(("acme",)), text) == [("configured secret pattern", 0, 4)]
    # A named secret whose value holds `ſ`: the old pre-check wanted 16 ASCII characters.
    text = "password aaaaaaaa\u017faaaaaaa"
    assert OldSecretScanner().scan(text) == []
    assert scan(_SCANNER, text) == [("named secret", 0, len(text))]


# --- Adversarial inputs of about 200 kB: exact findings; quadratic scanning would hang. --------

N = 200_000
ADVERSARIAL: list[tuple[str, str, Found]] = [
    # the input of the issue: a keyword, whitespace, then a value too short, then a long token
    ("keyword-whitespace-token", "password" + " " * (N - 60) + "x" * 15 + " " + "y" * 36, []),
    (
        "keyword-whitespace-secret-token",
        "password" + " " * (N - 60) + "x" * 15 + " " + "aB3" * 12,
        [(HE, N - 36, N)],
    ),
    (
        "keyword-whitespace-separator-token",
        "secret" + " \n\t" * (N // 3) + "=" + " " * 9 + "T" * 300,
        [("named secret", 0, 6 + 3 * (N // 3) + 10 + 300)],
    ),
    ("keyword-equals-15", "api_key" + " " * N + "=" + "v" * 15, [("named secret", 0, 7 + N + 16)]),
    ("single-run-lower-case", "a" * N, []),
    ("single-run-no-upper-case", "a1" * (N // 2), []),
    ("single-run-dashes", "a-" * (N // 2), []),
    ("single-run-dashes-secret", "aB3-" * (N // 4), [(HE, 0, N - 1)]),
    # `K`, not a path command: `a1a1…Z` is SVG path data (arcs), which is not a secret
    ("single-run-upper-case-at-the-end", "a1" * (N // 2) + "K", [(HE, 0, N + 1)]),
    ("single-run-path-data", "a1" * (N // 2) + "Z", []),
    ("single-run-then-non-ascii-letter", "aB3-" * (N // 4) + "9\u00e9", [(HE, 0, N)]),
    ("uuid-run", "123e4567-e89b-12d3-a456-426614174000" * (N // 36), []),
    ("sk-repeated", "sk-" * (N // 3), [("OpenAI-style API key", 0, 3 * (N // 3))]),
    ("sk-repeated-inside-a-word", "xsk-" * (N // 4), []),
    ("akia-repeated", "AKIA" * (N // 4), [("AWS access key id", 0, 20)]),
    ("ghp-repeated", "ghp_" * (N // 4), []),
    ("xoxb-repeated", "xoxb-" * (N // 5), [("Slack token", 0, N)]),
    ("begin-header-words", "-----BEGIN " + "A " * (N // 2), []),
    (
        "begin-header-words-private",
        "-----BEGIN " + "A " * (N // 2) + "PRIVATE KEY-----",
        [("private key", 0, 11 + N + 16)],
    ),
    ("begin-long-header-word", "-----BEGIN " + "A" * N, []),
    ("begin-repeated", "-----BEGIN " * (N // 11), []),
    ("scheme-separator-repeated", "a://" * (N // 4), []),
    ("scheme-dots", "a." * (N // 2) + "://", []),
    ("scheme-dots-credentials", "a." * (N // 2) + "://u:p@", [("URL with credentials", 0, N + 7)]),
    ("credentials-without-at", "x://" + "u" * N + ":" + "p" * N, []),
    ("equals-run", "secret " + "=" * N, [("named secret", 0, 7 + N)]),
    ("dot-run", "password " + "." * N, [("named secret", 0, 9 + N)]),
    ("slash-plus-run", "bearer:" + "/+" * (N // 2), [("named secret", 0, 7 + N)]),
    ("keyword-repeated", "secret " * (N // 7), []),
    ("keyword-equals-repeated", "password=" * (N // 9), [("named secret", 0, 9 * (N // 9))]),
    # URLs (issue 11): each URL is found once, its end and its parameters read once
    ("url-parameters-repeated", "https://x.io/?" + "a=b&" * (N // 4), []),
    (
        "url-credential-names-repeated",
        "https://x.io/?" + "token=" * (N // 6),
        [(PARAM, 20, 14 + 6 * (N // 6))],
    ),
    ("url-question-marks", "https://x.io/?" + "key=?" * (N // 5), [(PARAM, 18, 13 + 5 * (N // 5))]),
    ("url-empty-credential-values", "https://x.io/#" + "&access_token=" * (N // 14), []),
    ("url-placeholder-value", "https://x.io/?api_key=" + "X" * N, []),
    (
        "url-long-value",
        "https://x.io/?api_key=" + "%2F" * (N // 3),
        [(PARAM, 22, 22 + 3 * (N // 3))],
    ),
    (
        "url-long-parameter-name",
        "https://x.io/?" + "a" * N + "_token=" + "b1" * 10,
        [(PARAM, 21 + N, 41 + N)],
    ),
    ("url-trailing-dots", "https://x.io/?sig=" + "a1" * 10 + "." * N, [(PARAM, 18, 38)]),
    ("url-many-short-urls", "a:// " * (N // 5), []),
    ("url-no-scheme-letter", "1://" * (N // 4), []),
    ("url-nested-schemes", "https://x.io/?next=" + "https://" * (N // 8), []),
    ("url-closing-brackets", "https://x.io/" + ")" * N, []),
    ("url-www-repeated", "www." * (N // 4), []),
    ("url-www-spaced", "www.a " * (N // 6), []),
    (
        "url-www-after-failed-schemes",
        "_://" * (N // 4) + " www.x.io/?sig=" + "b1" * 10,
        [(PARAM, N + 15, N + 35)],
    ),
    ("url-high-entropy-path", "https://x.io/" + "aB3-" * (N // 4), []),
    ("url-named-secrets-in-paths", ("https://x.io/password=" + "a" * 20 + " ") * (N // 43), []),
    (
        "url-entropy-between-urls",
        ("aB3" * 11 + " https://x.io/" + "aB3" * 11 + " ") * (N // 81),
        [(HE, 81 * i, 81 * i + 33) for i in range(N // 81)],
    ),
    (
        "url-userinfo-and-parameters",
        ("https://u:p@x.io/?token=" + "b1" * 10 + " ") * (N // 45),
        [
            f
            for i in range(N // 45)
            for f in (
                ("URL with credentials", 45 * i, 45 * i + 12),
                (PARAM, 45 * i + 24, 45 * i + 44),
            )
        ],
    ),
    (
        "url-www-parameters",
        ("www.x.io/?sig=" + "b1" * 10 + " ") * (N // 35),
        [(PARAM, 35 * i + 14, 35 * i + 34) for i in range(N // 35)],
    ),
    (
        "url-webhook-long",
        "https://hooks.slack.com/services/" + "a1" * (N // 2),
        [(WEBHOOK, 33, 33 + N)],
    ),
    ("url-webhooks-repeated", "https://hooks.slack.com/services/a " * (N // 35), []),
    # Public values (issue 22): each place is found once, its parts read once
    ("sri-hashes-repeated", (" sha384-" + SRI_DIGEST["sha384"]) * (N // 72), []),
    (
        "sri-one-short-repeated",
        (" sha256-" + "aB3" * 14 + "a") * (N // 51),
        [(HE, 51 * i + 1, 51 * i + 51) for i in range(N // 51)],
    ),
    ("sri-prefixes-in-a-run", "sha512-" * (N // 7) + "aB3" * 12, [(HE, 0, 7 * (N // 7) + 36)]),
    ("sri-long-base64", "sha256-" + "aB3/" * (N // 4), []),
    ("key-whitespace-separator-id", "documentId" + " " * N + ":" + "aB3" * 12, []),
    (
        "keys-repeated-then-a-word",
        "documentId=x " * (N // 13) + "aB3" * 12,
        [(HE, 13 * (N // 13), 13 * (N // 13) + 36)],
    ),
    ("keys-glued", "documentId:" * (N // 11) + " " + "aB3" * 12, []),
    ("shortcodes-repeated", "{{< youtube " * (N // 12) + "aB3" * 12, []),
    ("path-data-run", "M12-4H7v-2h7v2zm3" * (N // 17), []),
    (
        "path-data-run-then-a-letter",
        "M12-4H7v-2h7v2zm3" * (N // 17) + "x",
        [(HE, 0, 17 * (N // 17) + 1)],
    ),
]


@pytest.mark.parametrize(
    "text, expected", [c[1:] for c in ADVERSARIAL], ids=[c[0] for c in ADVERSARIAL]
)
def test_adversarial_input(text: str, expected: Found) -> None:
    assert scan(_SCANNER, text) == expected
    assert scan(SecretScanner(("acme-internal",)), text) == expected


def test_many_secrets_in_a_row() -> None:
    text = "a://u:p@ " * 20_000 + "sk-" + "k" * 20
    found = scan(_SCANNER, text)
    assert len(found) == 20_001
    assert found[-1] == ("OpenAI-style API key", 180_000, 180_023)


def test_redact() -> None:
    assert redact("nothing to see") == "nothing to see"
    token = "ghp_" + "a" * 36
    assert (
        redact(f"token {token}, password: hunter2hunter2hunter2") == "token [redacted], [redacted]"
    )
    assert redact("'meta.acme-internal' is odd") == "'meta.acme-internal' is odd"
    assert (
        redact("'meta.acme-internal' is odd", SecretScanner(("acme-internal",)))
        == "'meta.[redacted]' is odd"
    )


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), texts))
def test_redact_never_raises_and_replaces_every_match(text: str) -> None:
    redacted = redact(text)
    found = _SCANNER.scan(text)
    pieces, pos = [], 0
    for match in found:
        pieces += [text[pos : match.start], "[redacted]"]
        pos = match.end
    assert redacted == "".join([*pieces, text[pos:]])


# --- Frontmatter keys (item 5): found at their place, never echoed. -----------------------

GITHUB = "ghp_" + "A1b2" * 9
AWS = "AKIAABCDEFGHIJKLMNOP"


def test_secret_in_a_frontmatter_key_at_any_depth() -> None:
    text = (
        "---\n"
        f"{GITHUB}: x\n"
        "meta:\n"
        f'  "key {AWS}": y\n'
        "conflict:\n"
        "  key: db\n"
        "  scope:\n"
        f"    {GITHUB}: prod\n"
        "tags:\n"
        f"  - {{{GITHUB}: z}}\n"
        "---\n"
        "Body.\n"
    )
    parsed = parse_page(text.encode(), SecurityConfig(), SecretScanner())
    found = [(f.code, f.line, f.column, f.message) for f in parsed.findings if f.code == "KB401"]
    assert found == [
        ("KB401", 2, 1, "a frontmatter key holds a secret (GitHub token)"),
        ("KB401", 4, 8, "a frontmatter key in 'meta' holds a secret (AWS access key id)"),
        ("KB401", 8, 5, "a frontmatter key in 'conflict.scope' holds a secret (GitHub token)"),
        ("KB401", 10, 6, "a frontmatter key in 'tags' holds a secret (GitHub token)"),
    ]
    for finding in parsed.findings:
        if finding.code in ("KB401", "KB403"):
            assert GITHUB not in finding.message and AWS not in finding.message


def test_key_secrets_follow_reject_secrets_and_values_under_them_are_redacted() -> None:
    text = f"---\nmeta:\n  {GITHUB}:\n    note: {'n' * 40}\n---\n"
    off = parse_page(text.encode(), SecurityConfig(reject_secrets=False), SecretScanner())
    assert [f.code for f in off.findings if f.code == "KB401"] == []
    small = parse_page(text.encode(), SecurityConfig(max_field_chars=10), SecretScanner())
    messages = sorted((f.code, f.message) for f in small.findings if f.code in ("KB401", "KB403"))
    assert messages == [
        ("KB401", "a frontmatter key in 'meta' holds a secret (GitHub token)"),
        ("KB403", "'meta.[redacted].note' is 40 characters long, more than max_field_chars (10)"),
    ]


def test_store_refuses_a_secret_conflict_scope_key_without_echo(
    project: Callable[..., Project],
) -> None:
    proj = project({"knowledge/global/readme.md": "# Readme\n"})
    args = [
        "store",
        "--repo",
        str(proj.root),
        "--category",
        "decision",
        "--title",
        "Database engine",
        "--content",
        "Postgres.",
        "--conflict-key",
        "db",
        "--conflict-scope",
        f"{GITHUB}=prod",
        "--exclusive",
    ]
    result = invoke(args, code=1)
    assert (
        "KB401 a frontmatter key in 'conflict.scope' holds a secret (GitHub token)" in result.stderr
    )
    assert GITHUB not in result.output
    assert not (proj.root / "knowledge" / "global" / "database-engine.md").exists()
    as_json = invoke([*args, "--json"], code=1)
    assert GITHUB not in as_json.output and json.loads(as_json.stdout)["action"] == "refused"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("api-key-rotation-policy-for-services", False),
        ("password-reset-procedure-for-customers", False),
        ("knowledge/global/access-token-lifetime-rules.md", False),
        ("secret.santa.list.for.the.team", False),
        ("password: hunter2hunter2hunter2x", True),
        ("api_key=ABCDEFGHIJKLMNOPQRST", True),
        ("api-key ABCDEFGHIJKLMNOPQRST", True),
        ("Bearer abcdefghijklmnopqrstuvwxyz", True),
        ("secret=-abcdefghijklmnopqrstuvwxyz", True),
    ],
)
def test_named_secret_is_a_key_and_its_value_not_a_slug(text: str, secret: bool) -> None:
    assert bool(_SCANNER.scan(text)) is secret
