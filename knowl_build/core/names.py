"""Names that become paths: user (owner) names, checked by one rule everywhere.

A user name is the folder name of `knowledge/user/<owner>/`, the `--user` of every command, the
`user` of every MCP tool and the owner of a `user:<owner>:<id>` PAGE. One rule decides what is
valid, so a name accepted in one place can never lead somewhere else in another: 1 to 100
characters (at most 255 bytes in UTF-8, a folder name every common file system can hold),
NFC-normalised, not starting with `.`, without `/`, `\\` or `:` (the PAGE syntax
`user:<owner>:<id>` splits on it), without control or invisible format characters, without
leading or trailing white space.

`owner_problem` is the single place that rule lives: a new reason for a name to be invalid is
added there and every front end, the writes and discovery refuse it at once.
"""

from __future__ import annotations

import unicodedata

from knowl_build.core.errors import UsageError

MAX_NAME_CHARS = 100
MAX_NAME_BYTES = 255
_FORBIDDEN = frozenset("/\\:")
# Control, format (zero-width and bidirectional marks), surrogates, private use, unassigned,
# line and paragraph separators: characters that hide what a name says or break paths.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def owner_problem(name: str) -> str | None:
    """Why `name` is not a valid user name, or None when it is valid."""
    if not name:
        return "it is empty"
    if len(name) > MAX_NAME_CHARS:
        return f"it is longer than {MAX_NAME_CHARS} characters"
    if name.startswith("."):
        return "it starts with '.'"
    if name != name.strip():
        return "it starts or ends with white space"
    for char in name:
        if char in _FORBIDDEN:
            return f"it contains {char!r}"
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            return f"it contains the invisible or control character U+{ord(char):04X}"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return f"it is longer than {MAX_NAME_BYTES} bytes in UTF-8"
    if holds_secret(name):
        return "it holds a secret"
    return None


def holds_secret(name: str) -> bool:
    """Whether `name` (a user's, a page's path under its scope folder) holds what the one
    redaction hides. A name is printed in paths, answers, findings, the artifact and the
    site: it must never be a secret, so a name that holds one names nothing."""
    # The scanner loads for a name to check, not with the module (start-up time of a reader
    # asked for no user).
    from knowl_build.secrets.scanner import redact

    return redact(name) != name


def normalize_owner(name: str) -> str:
    """The form in which names are compared and written (Unicode NFC)."""
    return unicodedata.normalize("NFC", name)


def valid_user(name: str | None, item: str = "--user") -> str | None:
    """`name` in the form it is compared and written in, or None for anonymous.

    A name that is not valid stops the run (exit 2; an MCP tool error): it would become a
    path. The message names the item and the problem, never the name itself, which may hold
    anything (control characters that break a one-line message, a secret typed by mistake)."""
    if name is None:
        return None
    normal = normalize_owner(name)
    problem = owner_problem(normal)
    if problem is not None:
        raise UsageError(f"{item}: not a valid user name: {problem}")
    return normal
