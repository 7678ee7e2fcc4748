"""Trust (issue 21, item 8): only real comments suppress.

A suppression is an HTML comment that Markdown renders as a comment: an HTML block of comments
(CommonMark's kind 2, starting with `<!--`) or inline raw HTML, as markdown-it-py's tokens
say. The same text in a link's title or destination, an image's description, a reference
definition, an HTML attribute, code (spans, fenced and indented blocks), another kind of HTML
block or after a backslash is text: it hides nothing, and so is no unused suppression either.
In frontmatter, only a YAML comment suppresses, not the same text inside a value.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.helpers import Project, invoke

P = "knowledge/global/p.md"
TOML = "[rules]\nKB202 = 'off'\n"
FM = "---\nsummary: s\n---\n"  # the body starts on line 4
TOKEN = "ghp_" + "A1b2" * 9  # SPEC 9: a GitHub token
HIDE = "<!-- knowl: disable KB401 -->"  # to the end of the file, if it were a suppression
NEXT = "<!-- knowl: disable-next-line KB401 -->"

# (page, the (code, line, column) list reported for it, in order)
CASES: dict[str, tuple[str, list[tuple[str, int, int]]]] = {
    "in a link title": (FM + f'[x](https://e.x "{HIDE}")\n{TOKEN}\n', [("KB401", 5, 1)]),
    "in a link title in single quotes": (
        FM + f"[x](https://e.x '{HIDE}')\n\n{TOKEN}\n",
        [("KB401", 6, 1)],
    ),
    "in a link destination": (
        # Markdown links are checked: the destination names no file (KB103), and hides nothing.
        FM + "[x](<!-- knowl: disable KB401 -->)\n\n" + TOKEN + "\n",
        [("KB103", 4, 1), ("KB401", 6, 1)],
    ),
    "in an image description": (
        FM + f"![{HIDE}](x.png)\n\n{TOKEN}\n",
        [("KB103", 4, 1), ("KB401", 6, 1)],
    ),
    "in a reference definition's title": (
        FM + f'[x]: https://e.x "{HIDE}"\n\nSee [x].\n\n{TOKEN}\n',
        [("KB401", 8, 1)],
    ),
    "in an HTML attribute": (
        FM + f'<a title="{HIDE}">x</a>\n\n{TOKEN}\n',
        [("KB401", 6, 1)],
    ),
    "escaped": (FM + f"\\{NEXT}\n{TOKEN}\n", [("KB401", 5, 1)]),
    "escaped in a paragraph": (FM + f"Write \\{HIDE} to hide.\n\n{TOKEN}\n", [("KB401", 6, 1)]),
    "in a code span": (FM + f"`{NEXT}`\n{TOKEN}\n", [("KB401", 5, 1)]),
    "in a fenced code block": (FM + f"```\n{HIDE}\n```\n\n{TOKEN}\n", [("KB401", 8, 1)]),
    "in an indented code block": (FM + f"Text.\n\n    {HIDE}\n\n{TOKEN}\n", [("KB401", 8, 1)]),
    "inside an HTML block that is not a comment": (
        FM + f"<div>\n{HIDE}\n</div>\n\n{TOKEN}\n",
        [("KB401", 8, 1)],
    ),
    "inside another comment": (
        FM + f"<!-- a note {HIDE}\n\n{TOKEN}\n",
        [("KB401", 6, 1)],
    ),
    "a real HTML block comment": (FM + f"{NEXT}\n{TOKEN}\n", []),
    "a real HTML block comment hides to the end": (FM + f"{HIDE}\n\nText.\n\n{TOKEN}\n", []),
    "a real comment after another in one block": (
        FM + f"<!-- a note --> {HIDE}\n\n{TOKEN}\n",
        [],
    ),
    "a real inline comment": (FM + f"Some text {NEXT} and more.\n{TOKEN}\n", []),
    "a real comment in a blockquote": (FM + f"> {NEXT}\n> {TOKEN}\n", []),
    "a real inline comment in a blockquote": (FM + f"> Text\n> and {NEXT}\n> {TOKEN}\n", []),
    "a real comment in a list item": (FM + f"- item\n\n  {NEXT}\n  {TOKEN}\n", []),
    "a real comment in a link's text": (FM + f"[{HIDE}](https://e.x)\n\n{TOKEN}\n", []),
    "a real comment in a heading": (FM + f"# Title {HIDE} #\n\n{TOKEN}\n", []),
    "a real inline comment over two lines": (
        FM + f"Text <!-- knowl: disable-next-line KB401\n  -- a reason -->\n{TOKEN}\n",
        [],
    ),
    "a real comment in a page of CRLF lines": (
        (FM + f"Text\nmore {NEXT}\n{TOKEN}\n").replace("\n", "\r\n"),
        [],
    ),
    "an unused real comment in a page of CRLF lines is KB011 where it is": (
        (FM + f"Text\nmore {NEXT}\nplain\n").replace("\n", "\r\n"),
        [("KB011", 5, 6)],
    ),
    "a real comment that hides nothing is KB011 where it is": (
        FM + f"Some text {NEXT}\nand no secret.\n",
        [("KB011", 4, 11)],
    ),
    "a real comment after a code span that shows one": (
        FM + f"`{NEXT}` and {NEXT}\nplain\n",
        [("KB011", 4, 47)],
    ),
    "frontmatter: inside a block scalar": (
        f"---\nsummary: |\n  # knowl: disable KB401\n---\n{TOKEN}\n",
        [("KB401", 5, 1)],
    ),
    "frontmatter: inside a quoted value": (
        f'---\nsummary: "a\n  # knowl: disable KB401\n  b"\n---\n{TOKEN}\n',
        [("KB401", 6, 1)],
    ),
    "frontmatter: a real YAML comment": (
        f"---\nsummary: s  # knowl: disable KB401\n---\n{TOKEN}\n",
        [],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_only_real_comments_suppress(project: Callable[..., Project], name: str) -> None:
    page, expected = CASES[name]
    proj = project({"knowl.toml": TOML, P: page})
    failing = any(code == "KB401" for code, _, _ in expected)
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=int(failing))
    found = [
        (d["code"], d["line"], d["column"])
        for d in json.loads(result.stdout)["diagnostics"]
        if d["path"] == P
    ]
    assert found == expected
