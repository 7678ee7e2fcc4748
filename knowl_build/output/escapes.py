"""What output escapes besides the C0 and C1 controls, shared by the text and JSON renderers
(a module of its own so that JSON output does not import rich)."""

from __future__ import annotations

# What reorders or breaks what a terminal shows: the line and paragraph separators and the bidi
# embeddings, overrides and isolates (Trojan Source).
REORDERING = (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
