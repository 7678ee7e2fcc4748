"""Names that become paths: user (owner) names, checked by one rule everywhere.

A user name is the folder name of `knowledge/user/<owner>/`, the `--user` of every command and
the `user` of every MCP tool. One rule decides what is valid, so a name accepted in one place
can never lead somewhere else in another: 1 to 100 characters, NFC-normalised, not starting
with `.`, without `/`, `\\` or `:` (the PAGE syntax `user:<owner>:<id>` splits on it), without
control or invisible format characters, without leading or trailing white space.
"""

from __future__ import annotations

import unicodedata

MAX_NAME_CHARS = 100
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
    return None


def is_valid_owner(name: str) -> bool:
    return owner_problem(name) is None


def normalize_owner(name: str) -> str:
    """The form in which names are compared and written (Unicode NFC)."""
    return unicodedata.normalize("NFC", name)
