"""What output escapes, shared by the text and JSON renderers (a module of its own so that
JSON output, and plain search results, do not import rich).

File names, link targets and page text come from pull requests, and a raw ESC or backspace
could recolour, move the cursor or rewrite earlier lines of a developer's terminal: every
string a text renderer shows passes through `printable` first.
"""

from __future__ import annotations

# What reorders or breaks what a terminal shows: the line and paragraph separators and the bidi
# embeddings, overrides and isolates (Trojan Source).
REORDERING = (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))

# C0 controls, DEL and C1 controls, written as `\x1b`. A line of output is one line: `\n` and
# `\t` are escaped too. Page text shown as a block (a body, a diff) keeps its `\n` and `\t`,
# the layout of the file as written; nothing else a terminal acts on gets through.
_CONTROLS = [*range(0x00, 0x20), *range(0x7F, 0xA0)]
# And what reorders what a terminal shows (bidi controls, line separators), as `\u202e`.
_ESCAPE_LINE = {
    **{code: f"\\x{code:02x}" for code in _CONTROLS},
    **{code: f"\\u{code:04x}" for code in REORDERING},
}
_ESCAPE_BLOCK = {code: text for code, text in _ESCAPE_LINE.items() if chr(code) not in "\n\t"}


def printable(value: object, *, block: bool = False) -> str:
    """`value` as text a terminal shows and does not act on: control characters (C0, DEL, C1)
    written as `\\x1b` escapes, bidi controls and line separators as `\\u202e`. A `block`
    (several lines of page text) keeps its line breaks (`\\n`, and `\\r\\n` as one) and `\\t`.
    The one place terminal output is made safe; every text renderer uses it."""
    if block:
        return str(value).replace("\r\n", "\n").translate(_ESCAPE_BLOCK)
    return str(value).translate(_ESCAPE_LINE)
