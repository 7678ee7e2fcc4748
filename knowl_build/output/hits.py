"""What `knowl search` shows of each hit, as styled pieces of text that two renderers lay out:
rich on a terminal (`text.search_results`, the matched words bold), and `plain` everywhere
else (the same characters, without importing rich.console: issue 25).

A cell is its style and its runs, each run's text made printable; a run of `\\n` starts a
new line of the cell.
"""

from __future__ import annotations

from typing import NamedTuple, TextIO

from knowl_build.artifacts.schema import EntityHit, MixedSearchAnswer, SearchAnswer, SearchHit
from knowl_build.output import plain
from knowl_build.output.escapes import printable

# What rich adds to an error writing to a stream that cannot encode the text.
_ENCODING_HINT = "*** You may need to add PYTHONIOENCODING=utf-8 to your environment ***"
# The style of each freshness, wherever one is shown.
FRESH = {"needs_review": "bold red", "stale": "yellow", "fresh": "green"}

# The table's columns: an id column never wraps (it is cut with "…" where there is no room);
# the title column wraps at words, folding a word longer than the column.
COLUMNS = (
    plain.Column("#", folds=False),
    plain.Column("page", folds=False),
    plain.Column("title / summary", folds=True),
    plain.Column("match", folds=False),
    plain.Column("freshness", folds=False),
)


class Cell:
    """Text with a style of its own and styled runs (rich's `Text(style=...)` and `append`)."""

    __slots__ = ("runs", "style")

    def __init__(self, value: object = "", style: str = "") -> None:
        self.style = style
        self.runs: list[tuple[str, str]] = [(printable(value), "")]

    def add(self, value: object, style: str = "") -> Cell:
        self.runs.append((printable(value), style))
        return self

    def line(self, value: object, style: str = "") -> Cell:
        """`value` on a line of its own below what the cell holds."""
        self.runs.append(("\n", ""))
        return self.add(value, style)

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.runs)


class Shown(NamedTuple):
    notes: list[Cell]  # without a hit: the line saying so and the nearest terms
    rows: list[tuple[Cell, ...]]  # one per hit, a cell per column of COLUMNS
    caveats: list[Cell]


def about(title: str, page_id: str, summary: str | None) -> tuple[str, str | None]:
    """A page's heading line and the line under it: its title and summary, or, for a page with
    no title (its title is its id, which is shown beside it), its summary alone."""
    if title == page_id and summary:
        return summary, None
    return title, summary or None


def shown(answer: SearchAnswer | MixedSearchAnswer) -> Shown:
    hits = answer["hits"]
    notes: list[Cell] = []
    if not hits:
        notes.append(Cell(f"no hits for '{answer['query']}'", style="dim"))
        for term, near in answer.get("suggestions", {}).items():
            notes.append(Cell(f"did you mean ({term}): {', '.join(near)}", style="dim"))
    best = max((h["score"] for h in hits), default=0.0)
    rows = [
        _entity_row(n, hit, best) if hit["kind"] == "entity" else _page_row(n, hit, best, hits)
        for n, hit in enumerate(hits, 1)
    ]
    caveats = [
        Cell("caveat ", style="bold yellow")
        .add(f"{caveat['page']}: {caveat['summary']}")
        .add(f" (about {', '.join(caveat['triggered_by'])})", style="dim")
        for caveat in answer["caveats"]
    ]
    return Shown(notes, rows, caveats)


def write_plain(answer: SearchAnswer | MixedSearchAnswer, stream: TextIO) -> bool:
    """The answer on `stream` as rich prints it there, where rich would print no style (not a
    terminal); False, writing nothing, where it would (the caller renders with rich)."""
    width = plain.width(stream)
    if width is None or width < 1:  # COLUMNS=0: rich prints nothing at all
        return False
    parts = shown(answer)
    text = "".join(cell.plain + "\n" for cell in parts.notes)
    if parts.rows:
        cells = [[cell.plain for cell in row] for row in parts.rows]
        text += plain.table(COLUMNS, cells, width)
    text += "".join(cell.plain + "\n" for cell in parts.caveats)
    try:
        stream.write(text)
    except UnicodeEncodeError as error:  # said as rich says it
        error.reason += f"\n{_ENCODING_HINT}"
        raise
    stream.flush()  # as rich does after each print: a closed pipe fails the command here
    return True


def _strength(score: float, best: float) -> Cell:
    share = score / best if best > 0 else 0.0
    filled = max(1, round(share * 10))
    return Cell("█" * filled + "·" * (10 - filled), style="green")


def _snippet(cell: Cell, hit: SearchHit) -> None:
    """The passage that matched, under its section's heading, the matched words in bold."""
    snippet, section = hit.get("snippet"), hit.get("section")
    if not snippet:
        return
    cell.runs.append(("\n", ""))
    if section:
        cell.add(f"§ {section['heading']}: ", style="dim")
    text, at = snippet["text"], 0
    for start, end in snippet["matches"]:
        cell.add(text[at:start], style="dim")
        cell.add(text[start:end], style="bold")
        at = end
    cell.add(text[at:], style="dim")


def _page_row(
    n: int, hit: SearchHit, best: float, hits: list[SearchHit] | list[SearchHit | EntityHit]
) -> tuple[Cell, ...]:
    where = hit["page"] if hit["scope"] == "global" else f"{hit['page']} ({hit['scope']})"
    if hit["repo"] != hits[0]["repo"]:
        where = f"{hit['repo']}: {where}"
    heading, summary = about(hit["title"], hit["page"], hit["summary"])
    cell = Cell().add(heading, style="bold")
    if summary:
        cell.line(summary)
    _snippet(cell, hit)
    for note in hit["annotations"]:
        cell.line(f"+ your note: {note['page']} ({note['scope']})", style="cyan")
    fresh = Cell(hit["freshness"], style=FRESH.get(hit["freshness"], ""))
    if hit["drift_flag"]:
        fresh.add(" drift", style="bold red")
    return Cell(str(n)), Cell(where), cell, _strength(hit["score"], best), fresh


def _entity_row(n: int, hit: EntityHit, best: float) -> tuple[Cell, ...]:
    """A search hit that is an entity: its name, kind, label and description, its expression,
    and the pages that bind it."""
    heading = f"{hit['entity_kind']}" + (f" {hit['label']}" if hit["label"] else "")
    cell = Cell().add(heading, style="bold")
    if hit["description"]:
        cell.line(hit["description"])
    if hit["expression"]:
        cell.line(f"= {hit['expression']}", style="dim")
    if hit["pages"]:
        cell.line(f"used by {', '.join(p['page'] for p in hit['pages'])}", style="cyan")
    return (
        Cell(str(n)),
        Cell(hit["entity"]),
        cell,
        _strength(hit["score"], best),
        Cell("entity", style="dim"),
    )
