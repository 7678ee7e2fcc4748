"""The kinds of secret and the expressions that find them (see the package docstring)."""

from __future__ import annotations

import re
import string
import sys

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

NEVER = sys.maxsize  # the start a finder returns when its kind occurs no more

# Every secret holds one of these: a short text (a value, a message) without any is done
# with one search. On a long text the finders' own first searches cost no more than this.
MAYBE = re.compile(r"-----BEGIN|://|www\.|xox|[A-Za-z0-9_\-./+=\u0130\u0131\u017f\u212a]{16}")
SHORT = 512

# PEM: the header words are taken possessively; the last of them must then be PRIVATE, which
# is the only way `(?:[A-Z0-9]+ )*PRIVATE KEY-----` can match (KEY----- is not a header word).
PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]++ )*+(?<= PRIVATE )KEY-----")
# The token prefixes need a word start: `(?<!\wsk-)` after `sk-` is `\b` before it, and
# leaves the literal first, where the regular expression engine searches for it fastest.
# Each reads the characters that make it a secret; the `_NOT_*` below find where the token
# ends, once the match is taken.
OPENAI = re.compile(r"sk-(?<!\wsk-)[A-Za-z0-9_-]{20}")
AWS_KEY = re.compile(r"AKIA(?<!\wAKIA)[0-9A-Z]{16}")
GITHUB = re.compile(r"gh[pousr]_(?<!\wgh[pousr]_)[A-Za-z0-9]{36}")
SLACK = re.compile(r"xox[abprs]-(?<!\wxox[abprs]-)[A-Za-z0-9-]{10}")
# Named secrets, `(?i:\b(bearer|api[_-]?key|access[_-]?token|secret|password)\b\s*[:=]?\s*`
# `[A-Za-z0-9_\-./+=]{16,})`. The first letter is a plain class (with `ſ`, which ignoring case
# takes for an `s`) so that the engine can skip to it, then the boundary before it is checked.
# `\s*[:=]?\s*` is read once, greedily: whitespace given back can only start the value on
# whitespace, so the two cases left are a separator after the whitespace or none, where a
# `=` may still be the value's first character. With neither whitespace nor a separator, a
# value that starts with `-`, `.`, `/` or `+` goes on the keyword's word: a slug or a file
# name (`api-key-rotation-policy.md`, `password-reset-procedure`), not a key and its value.
NAMED = re.compile(
    r"[bBaAsSpP\u017f](?<!\w[bBaAsSpP\u017f])(?i:(?<=b)earer|(?<=a)pi[_-]?key"
    r"|(?<=a)ccess[_-]?token|(?<=s)ecret|(?<=p)assword)"
    r"(?i:\b\s*+(?:[:=]\s*+[A-Za-z0-9_\-./+=]{16}|(?:(?<=\s)|(?![-./+]))[A-Za-z0-9_\-./+=]{16}))"
)
# Where each token ends: the first character out of its class (or the end of the text).
NOT_OPENAI = re.compile(r"[^A-Za-z0-9_-]")
NOT_GITHUB = re.compile(r"[^A-Za-z0-9]")
NOT_SLACK = re.compile(r"[^A-Za-z0-9-]")
NOT_NAMED = re.compile(r"(?i:[^A-Za-z0-9_\-./+=])")

# URL with credentials, `\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:[^\s/@]+@` (the user may be
# empty, as in `redis://:password@host`): searched from the start of a run of scheme
# characters only (`_URL`) or from inside one (`_URL_REST`); the atomic group finds the run's
# first scheme start (a letter at a word boundary), and every later start in the run ends the
# same way.
_SCHEME_START = r"(?>(?=[A-Za-z])\b|[A-Za-z0-9+.-]*?[+.-](?=[A-Za-z]))"
_SCHEME_AND_CREDENTIALS = r"(?P<scheme>[A-Za-z0-9+.-]*+)://[^\s/:@]*+:[^\s/@]++@"
URL_WITH_CREDENTIALS = re.compile(r"(?<![A-Za-z0-9+.-])" + _SCHEME_START + _SCHEME_AND_CREDENTIALS)
URL_REST = re.compile(_SCHEME_START + _SCHEME_AND_CREDENTIALS)
NEXT_SCHEME = re.compile(r"[+.-][A-Za-z]")
SCHEME_CHARS = string.ascii_letters + string.digits + "+.-"

# High-entropy words, `\b[A-Za-z0-9_-]{32,}\b`: runs that hold a lower case letter, an upper
# case letter and a digit (others cannot hold such a word), from a run's start or from inside.
_HAS_ALL = r"(?=[a-z0-9_-]*+[A-Z])(?=[A-Z0-9_-]*+[a-z])(?=[A-Za-z_-]*+[0-9])"
RUN = re.compile(r"(?<![A-Za-z0-9_-])" + _HAS_ALL + r"[A-Za-z0-9_-]{32,}")
RUN_REST = re.compile(_HAS_ALL + r"[A-Za-z0-9_-]{32,}")
RUN_CHARS = string.ascii_letters + string.digits + "_-"
BOUNDARY = re.compile(r"\b")  # Python's: a non-ASCII letter is a word character too
NOT_DASH = re.compile(r"[^-]")
LOWER = re.compile(r"[a-z]")
UPPER = re.compile(r"[A-Z]")
DIGIT = re.compile(r"[0-9]")
HEX = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
UUID_SHAPE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)

# Public values that look like high-entropy words (issue 22, see the package notes). SVG path
# data: a word of digits, `-` and the path commands only (`M`, `L`, `H`, `V`, `C`, `S`, `Q`,
# `T`, `A`, `Z` in either case); the last character outside them ends the starts that count.
NOT_PATH_DATA = re.compile(r"[^0-9MmLlHhVvCcSsQqTtAaZz-]")
# Subresource Integrity (and CSP) hashes: `sha256-`, `sha384-` or `sha512-` and the standard
# base64 of exactly that digest, as base64 writes it (44, 64 or 88 characters: the padding,
# and zero bits before it), between characters that base64 and words do not use. The literal
# comes first, where the regular expression engine searches for it fastest.
_B64 = "[A-Za-z0-9+/]"
SRI = re.compile(
    r"(?P<id>sha(?<![A-Za-z0-9+/=_-]sha)(?:256-" + _B64 + r"{42}[AEIMQUYcgkosw048]="
    r"|384-" + _B64 + r"{64}|512-" + _B64 + r"{85}[AQgw]==))(?![A-Za-z0-9+/=_-])"
)
# Keys whose values are public ids (Google Docs, Sheets and Slides ids, YouTube videos,
# playlists and channels), compared in ASCII lower case without `_` and `-`: in a frontmatter
# value of such a key, and after such a key and `:` or `=` in text (YAML, JSON, TOML,
# attributes), the id (one run of `[A-Za-z0-9_-]`) is no high-entropy word. `PUBLIC_KEY` is
# searched in the text's lower case (`public.lowered`), each word literal first: an
# expression that ignores case would try every character.
ID_OWNERS = (
    "document",
    "revision",
    "spreadsheet",
    "presentation",
    "video",
    "playlist",
    "channel",
    "youtube",
)
PUBLIC_ID_KEYS = frozenset({owner + "id" for owner in ID_OWNERS} | {"youtube"})
PUBLIC_KEY = re.compile(
    "(?:"
    + "|".join([f"{owner}(?<![a-z0-9_]{owner})[_-]?id" for owner in ID_OWNERS])
    + r"|youtube(?<![a-z0-9_]youtube))(?![a-z0-9_-])"
    r"[\"']?[ \t]*+[:=][ \t]*+[\"']?(?P<id>[a-z0-9_-]++)"
)
# So is the video of Hugo's `{{< youtube ID >}}` and `{{< youtube id="ID" >}}`.
YOUTUBE = re.compile(
    r"\{\{[<%][ \t]*+youtube[ \t]++(?:id[ \t]*+=[ \t]*+)?[\"']?(?P<id>[A-Za-z0-9_-]++)"
)
# The value of such a key in frontmatter as written: plain, quoted or a block scalar.
WHOLE_ID = re.compile(r"\s*+(?:[|>][-+0-9]*+\s*+)?[\"']?(?P<id>[A-Za-z0-9_-]++)")

# URLs (see the module notes). A scheme starts where `_SCHEME_START` says; a `www.` link at a
# word start. A URL ends before `_URL_END`, less trailing `_TRAILING`.
SCHEME_START_AT = re.compile(_SCHEME_START)
WWW = re.compile(r"www\.(?<![^\s(\[<>\"'`*_~|]www\.)(?=[A-Za-z0-9])")
URL_END = re.compile(r"[\s<>\"'`)\]|]")
TRAILING = ".,:;!?*"
QUERY = re.compile(r"[?#]")
AUTHORITY_END = re.compile(r"[/?#]")
# A parameter: a separator, a name (read once: it stops at the next separator) and `=`; its
# value runs to the next `_VALUE_END`, so a `?` inside a value starts a parameter of its own.
# Only names that hold a credential word (or a `%`, which may hide one) are candidates.
PARAMETER = re.compile(
    r"[?&#;](?=([^?&#;=]*+)=)(?=[^?&#;=]*?(?:(?i:token|key|secret|pass|pwd|sig|auth|jwt)|%))"
)
VALUE_END = re.compile(r"[&#;]")
NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
CREDENTIAL_WORDS = frozenset(
    {"token", "key", "secret", "password", "passwd", "pwd", "pass", "passphrase", "sig"}
    | {"signature", "auth", "jwt"}
)
# Words that end a glued credential name (`apikey`) after one of `_GLUED_PREFIXES`.
GLUED_WORDS = ("token", "key", "secret", "password", "passwd", "pwd", "signature")
GLUED_PREFIXES = frozenset(
    {"api", "access", "auth", "client", "app", "secret", "private", "id", "refresh", "session"}
    | {"security", "bearer", "oauth", "subscription", "master", "account", "storage", "sas"}
    | {"signing", "shared", "consumer", "user", "bot", "admin", "service", "db", "root", "x"}
    | {"xapi"}
)
# A word before the last that makes it name no credential: pagination cursors, keys of rows
# and spaces, public keys.
NOT_CREDENTIAL = frozenset(
    {"page", "next", "prev", "previous", "continuation", "sync", "resumption", "pagination"}
    | {"cursor", "sort", "partition", "row", "range", "primary", "foreign", "public", "pub"}
    | {"space", "project", "issue", "idempotency", "cache", "object", "hot", "shortcut"}
)
MIN_VALUE = 16
LOWER_OR_DIGIT = re.compile(r"[a-z0-9]")
# Webhook URLs whose path is the credential: the host and the path before the secret part,
# matched from the host's start, in lower case as the services write them. A text that holds
# none of `_WEBHOOK_HOSTS` holds no webhook URL.
WEBHOOK = re.compile(
    r"hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"|(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/(?:v[0-9]+/)?webhooks/"
    r"|api\.telegram\.org/(?:file/)?bot"
    r"|outlook\.office\.com/webhook/"
    r"|[a-z0-9-]+\.webhook\.office\.com/webhookb2/"
)
WEBHOOK_HOSTS = ("hooks.slack.com", "discord", "api.telegram.org", "office.com")
