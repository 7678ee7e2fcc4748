"""Hugo shortcodes: the regions of a page body that are no prose (issue 22, item 6).

Hugo expands `{{< name params >}}` and `{{% name params %}}` before Markdown is read, in code
blocks too, so the text between those delimiters is a shortcode's parameters, never a link: a
`{{< ref "page.md" >}}` or the TOML of `{{< code-toggle >}}` holds `[[menu.main]]`, which is
no wiki-link. `{{</* name */>}}` (and `{{%/* … */%}}`) is Hugo's escape, shown as written:
its text is not scanned either, and it opens nothing.

The bodies of code shortcodes (`code-toggle`, `highlight`, `code` and the project's
`[links] code_shortcodes`: `Config.code_names`), from the opening shortcode to its closing `{{< /name >}}`, are
code: no links, suppressions, headings or block ids. A code shortcode that is never closed,
or closed by itself (`{{< code file="x" />}}`), has no body: only its delimiters are skipped,
so a forgotten closer never hides the rest of the page. knowl's own live definitions,
`{{ sl:NAME }}`, are no shortcodes: only `{{<` and `{{%` open one.

Hugo's TOML front matter, between two `+++` lines at the start of a page, is not read (knowl
reads YAML frontmatter only), but it is no prose either: `[[cascade]]` there is a TOML table,
not a link. `front_matter` gives its region, which is skipped like a shortcode's.

Linear time on any input: each search starts where the previous region ended, and a search
that finds no closer (of a delimiter, or of one code shortcode's name) is never repeated, as
no later opening can find one either; openings that can no longer close are skipped by the
regular expression, not one by one.
"""

from __future__ import annotations

import re

from knowl_build.core.config import SHORTCODE_NAME

# Openings by the delimiters that may still close: once `>}}` (or `%}}`) occurs nowhere after
# the search, no `{{<` (or `{{%`) opens anything, and the search skips them all at once.
_OPEN = {
    "<%": re.compile(r"\{\{([<%])(/\*)?"),
    "<": re.compile(r"\{\{(<)(/\*)?"),
    "%": re.compile(r"\{\{(%)(/\*)?"),
}
_SPACE = " \t\r\n"


def front_matter(text: str) -> list[tuple[int, int]]:
    """The region of a TOML front matter block at the start of `text`: from its `+++` line
    to the end of the next `+++` line (trailing spaces or tabs allowed); none when the first
    line is not `+++` or no line closes it."""
    first = text.find("\n")
    if first == -1 or text[:first].rstrip(" \t\r") != "+++":
        return []
    pos = first + 1
    while pos < len(text):
        end = text.find("\n", pos)
        line = text[pos:] if end == -1 else text[pos:end]
        if line.rstrip(" \t\r") == "+++":
            return [(0, len(text) if end == -1 else end + 1)]
        if end == -1:
            break
        pos = end + 1
    return []


def regions(body: str, code: frozenset[str]) -> list[tuple[int, int]]:
    """Where `body` holds shortcodes: (start, end) offsets, sorted and disjoint, of each
    shortcode's delimiters with what they hold, and of each code shortcode from its opening
    to the end of its closing."""
    if "{{<" not in body and "{{%" not in body:
        return []
    found: list[tuple[int, int]] = []
    unclosed: set[str] = set()  # right delimiters that no longer occur after `pos`
    closers: dict[str, re.Pattern[str]] = {}
    no_closer: set[str] = set()  # code shortcodes never closed after `pos`
    live = "<%"  # the delimiters whose right delimiter may still occur
    pos = 0
    while live:
        match = _OPEN[live].search(body, pos)
        if match is None:
            break
        start = match.end()
        escaped = bool(match.group(2))
        right = ("*/" if escaped else "") + match.group(1).replace("<", ">") + "}}"
        if right in unclosed:
            pos = start
            continue
        close = body.find(right, start)
        if close == -1:
            unclosed.add(right)  # an opening never closed is text, as are all after it
            if not escaped:
                live = live.replace(match.group(1), "")
            pos = start
            continue
        end = close + len(right)
        name = None if escaped else _name(body, start, close)
        if name is not None and name in code and name not in no_closer:
            pattern = closers.get(name)
            if pattern is None:
                pattern = closers[name] = re.compile(
                    r"\{\{[<%][ \t]*/[ \t]*" + re.escape(name) + r"[ \t]*[>%]\}\}"
                )
            closing = pattern.search(body, end)
            if closing is None:
                no_closer.add(name)
            else:
                end = closing.end()
        found.append((match.start(), end))
        pos = end
    return found


def _name(body: str, start: int, close: int) -> str | None:
    """The name of the shortcode whose parameters run from `start` to `close`; None for a
    closing shortcode (`/name`) and one closed by itself (`… /`)."""
    at = start
    while at < close and body[at] in _SPACE:
        at += 1
    match = SHORTCODE_NAME.match(body, at, close)
    if match is None:
        return None
    if body[start:close].rstrip(_SPACE).endswith("/"):
        return None  # `{{< code file="x" />}}`: no body
    return match.group(0)
