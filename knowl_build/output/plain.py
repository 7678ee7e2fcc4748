"""A table as rich lays it out, for output rich would not style, without rich.console.

`knowl search` answers in milliseconds; importing rich.console and rich.table (about 20 ms)
and laying out ten rows with them (10 ms and more) cost a process more than the search
(issue 25). Where rich writes no escape sequence (`width` says where: not a terminal, no
FORCE_COLOR or TTY_COMPATIBLE, neither Jupyter nor Windows), `table` writes the characters
rich writes for `Table(box=None, pad_edge=False, show_edge=False)` printed with
`soft_wrap=True`: rich's own cell widths (`rich.cells`) and word wrapping (`rich._wrap`),
neither of which imports rich.console, and rich's column widths, padding and alignment,
followed step by step (`Table._calculate_column_widths`, `_measure_column`, `_render`;
`Padding`, `Text.wrap`). tests/test_plain_tables.py holds both to the same bytes.
"""

from __future__ import annotations

import builtins
import itertools
import os
import re
import sys
from collections.abc import Sequence
from typing import NamedTuple, TextIO

from rich._wrap import divide_line
from rich.cells import cell_len, set_cell_size

_TRAILING_SPACE = re.compile(r"\s+$")
_STD_STREAMS = (0, 1, 2)  # rich asks stdin, stdout and stderr for the terminal's size, in turn


class Column(NamedTuple):
    header: str
    # True: wraps at words and folds a word longer than the column (rich's overflow="fold");
    # False: one line per line of text, cut with "…" (no_wrap=True, overflow="ellipsis").
    folds: bool


def width(stream: TextIO) -> int | None:
    """The width `Console(file=stream)` lays out to where it styles nothing, else None."""
    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return None  # rich's legacy Windows console and Jupyter: let rich do it
    if hasattr(stream, "rich_proxied_file") or _is_terminal(stream):
        return None
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns)
    for descriptor in _STD_STREAMS:
        try:
            found = os.get_terminal_size(descriptor).columns
        except (AttributeError, ValueError, OSError):
            continue
        return found or 80
    return 80


def _is_terminal(stream: TextIO) -> bool:
    """rich's `Console.is_terminal`, for a console given no `force_terminal`."""
    if str(getattr(sys.stdin, "__module__", "")).startswith("idlelib"):
        return False
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    isatty = getattr(stream, "isatty", None)
    try:
        return False if isatty is None else bool(isatty())
    except ValueError:  # a closed stream
        return False


def table(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> str:
    """`rows` (a printable text per column, lines split at `\\n`) under the headers of
    `columns`, laid out to `width` as rich does."""
    pads = [(0 if i == 0 else 1, 0 if i == len(columns) - 1 else 1) for i in range(len(columns))]
    cells = [[column.header, *(row[i] for row in rows)] for i, column in enumerate(columns)]
    widths = _widths(columns, cells, pads, width)
    lines: list[str] = []
    for n in range(len(rows) + 1):
        rendered = [
            _cell(cells[i][n], w, pad, column.folds)
            for i, (column, w, pad) in enumerate(zip(columns, widths, pads, strict=True))
        ]
        height = max(1, *(len(cell) for cell in rendered))
        for cell, w in zip(rendered, widths, strict=True):
            blank = [" " * w] * (height - len(cell))
            cell[:] = blank + cell if n == 0 else cell + blank  # headers sit at the bottom
        lines.extend("".join(parts) + "\n" for parts in zip(*rendered, strict=True))
    return "".join(lines)


def _widths(
    columns: Sequence[Column], cells: list[list[str]], pads: list[tuple[int, int]], width: int
) -> list[int]:
    """`Table._calculate_column_widths` (no box, not expanded, no fixed widths)."""
    extras = [left + right for left, right in pads]
    widths = [
        _column(texts, width, extra)[1] or 1 for texts, extra in zip(cells, extras, strict=True)
    ]
    if sum(widths) > width:
        widths = _collapse(widths, [column.folds for column in columns], width)
        if sum(widths) > width:
            widths = _reduce(sum(widths) - width, [1] * len(widths), widths, widths)
        widths = [
            _column(texts, w, extra)[1]
            for texts, w, extra in zip(cells, widths, extras, strict=True)
        ]
    return widths


def _column(texts: list[str], max_width: int, extra: int) -> tuple[int, int]:
    """`Table._measure_column`: the narrowest and widest the column's cells can be."""
    if max_width < 1:
        return 0, 0
    measured = [_padded(text, max_width, extra) for text in texts]
    low = max(m[0] for m in measured)
    high = max(m[1] for m in measured)
    return min(low, max_width), min(high, max_width)


def _padded(text: str, max_width: int, extra: int) -> tuple[int, int]:
    """`Measurement.get` of `Padding(Text(text))`, `extra` cells of padding beside it."""
    if max_width < 1:
        return 0, 0
    if max_width - extra < 1:
        inner = (max_width, max_width)
    else:
        low, high = _fit(_span(text), max_width)
        inner = (min(low + extra, max_width), min(high + extra, max_width))
    return _fit(inner, max_width)


def _span(text: str) -> tuple[int, int]:
    """`Text.__rich_measure__`: the longest word and the longest line, in cells."""
    lines = text.splitlines()
    high = max(cell_len(line) for line in lines) if lines else 0
    words = text.split()
    return (max(cell_len(word) for word in words) if words else high), high


def _fit(span: tuple[int, int], max_width: int) -> tuple[int, int]:
    """What `Measurement.get` makes of a measurement: normalised, at most `max_width`."""
    low, high = _normal(span)
    low, high = min(low, max_width), min(high, max_width)
    return (0, 0) if high < 1 else _normal((low, high))


def _normal(span: tuple[int, int]) -> tuple[int, int]:
    low, high = span
    low = min(max(0, low), high)
    return max(0, low), max(0, low, high)


def _collapse(widths: list[int], wraps: list[bool], max_width: int) -> list[int]:
    """`Table._collapse_widths`: the widest columns that may wrap narrowed, in turn."""
    total = sum(widths)
    excess = total - max_width
    if not any(wraps):
        return widths
    while total and excess > 0:
        widest = max(w for w, wrap in zip(widths, wraps, strict=True) if wrap)
        second = max(
            w if wrap and w != widest else 0 for w, wrap in zip(widths, wraps, strict=True)
        )
        ratios = [1 if (w == widest and wrap) else 0 for w, wrap in zip(widths, wraps, strict=True)]
        if not any(ratios) or not widest - second:
            break
        limits = [min(excess, widest - second)] * len(widths)
        widths = _reduce(excess, ratios, limits, widths)
        total = sum(widths)
        excess = total - max_width
    return widths


def _reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    """`rich._ratio.ratio_reduce` (its module imports `fractions`, which this one needs not)."""
    ratios = [ratio if maximum else 0 for ratio, maximum in zip(ratios, maximums, strict=True)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    result: list[int] = []
    for ratio, maximum, value in zip(ratios, maximums, values, strict=True):
        if ratio and total_ratio > 0:
            distributed = min(maximum, round(ratio * remaining / total_ratio))
            result.append(value - distributed)
            remaining -= distributed
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def _cell(text: str, width: int, pad: tuple[int, int], folds: bool) -> list[str]:
    """The lines of one cell `width` cells wide: `Padding(Text(text))` rendered by a table
    column (justify "left")."""
    left, right = pad
    inner = width - left - right
    lines: list[str] = []
    if inner < 1:
        return lines  # rich renders nothing where there is no room: the cell stays blank
    for line in text.split("\n"):
        pieces = [line]
        if folds:
            pieces = [_rstrip_end(piece, inner) for piece in _divide(line, inner)]
        for piece in pieces:
            fitted = piece
            if cell_len(piece) > inner:
                fitted = (
                    set_cell_size(piece, inner) if folds else set_cell_size(piece, inner - 1) + "…"
                )
            lines.append(" " * left + set_cell_size(fitted, inner) + " " * right)
    return lines


def _divide(line: str, inner: int) -> list[str]:
    """`Text.divide` at the offsets `divide_line` wraps `line` at."""
    bounds = [0, *divide_line(line, inner, fold=True), len(line)]
    if len(bounds) == 2:
        return [line]
    return [line[start:end] for start, end in itertools.pairwise(bounds)]


def _rstrip_end(piece: str, size: int) -> str:
    """`Text.rstrip_end`: trailing whitespace beyond `size` characters removed."""
    excess = len(piece) - size
    if excess > 0:
        found = _TRAILING_SPACE.search(piece)
        if found is not None:
            return piece[: len(piece) - min(len(found.group(0)), excess)]
    return piece
