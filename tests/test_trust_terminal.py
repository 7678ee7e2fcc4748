"""Trust: nothing a page or a file name holds can act on a developer's terminal.

File names, link targets and page text come from pull requests. An ESC could recolour,
move the cursor or erase lines (`\\x1b[2K`), a backspace or a carriage return overwrite what
was printed, a newline fake a finding. The text output escapes every C0 and C1 control
character and DEL (`\\x1b`) in one function, `output.text.printable`; discovery refuses a file
or folder whose name holds one (KB007, like a name that is not UTF-8) and shows it escaped.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable

import pytest
from rich.console import Console

from knowl_build.core.diagnostics import Diagnostic
from knowl_build.output.text import printable, render
from tests.helpers import Project, invoke

CONTROLS = [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]]
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what must never reach a terminal


@pytest.mark.parametrize(
    ("value", "line", "block"),
    [
        ("plain ✓ text", "plain ✓ text", "plain ✓ text"),
        ("a\x1b[2Kb", "a\\x1b[2Kb", "a\\x1b[2Kb"),
        ("over\rwrite\bs", "over\\x0dwrite\\x08s", "over\\x0dwrite\\x08s"),
        ("del\x7f c1\x9b nel\x85", "del\\x7f c1\\x9b nel\\x85", "del\\x7f c1\\x9b nel\\x85"),
        ("two\nlines\tand tab", "two\\x0alines\\x09and tab", "two\nlines\tand tab"),
        ("crlf\r\nline", "crlf\\x0d\\x0aline", "crlf\nline"),
        ("nul\x00 bell\x07", "nul\\x00 bell\\x07", "nul\\x00 bell\\x07"),
        ("\\x1b as written", "\\x1b as written", "\\x1b as written"),
        # Bidi controls and line separators reorder what is shown (Trojan Source).
        ("\u202e\u2028 bidi", "\\u202e\\u2028 bidi", "\\u202e\\u2028 bidi"),
    ],
)
def test_printable(value: str, line: str, block: str) -> None:
    assert printable(value) == line
    assert printable(value, block=True) == block


def test_printable_escapes_every_control_character() -> None:
    for char in CONTROLS:
        assert printable(char) == f"\\x{ord(char):02x}"
        assert printable(char, block=True) == (char if char in "\n\t" else f"\\x{ord(char):02x}")


def _diagnostics() -> list[Diagnostic]:
    return [
        Diagnostic(
            f"knowledge/global/p{char}.md",
            n + 1,
            1,
            "KB103",
            ("error", "warning", "info")[n % 3],
            f"[[x{char}y]] points at no page visible from global scope",
            f"did you mean 'x{char}'?" if n % 2 else None,
        )
        for n, char in enumerate(CONTROLS)
    ]


def test_findings_print_escaped_with_and_without_colour() -> None:
    plain, coloured = io.StringIO(), io.StringIO()
    render(_diagnostics(), Console(file=plain, highlight=False, soft_wrap=True))
    render(
        _diagnostics(),
        Console(
            file=coloured,
            highlight=False,
            soft_wrap=True,
            force_terminal=True,
            color_system="standard",
        ),
    )
    text = plain.getvalue()
    assert not RAW.search(text)
    assert len(text.splitlines()) == len(CONTROLS) + len(CONTROLS) // 2  # one line each
    assert "knowledge/global/p\\x1b.md:28:1: error KB103 [[x\\x1by]] points at no page" in text
    assert "    hint: did you mean 'x\\x1b'?" in text
    # The same characters, with styles: only rich's own SGR sequences are added.
    styled = re.sub("\x1b\\[[0-9;]*m", "", coloured.getvalue())
    assert styled == text


def test_link_targets_and_file_names_in_check_output(project: Callable[..., Project]) -> None:
    """poc_term_escape.sh: a page named with ESC sequences and links holding ESC, backspace,
    DEL and C1 characters; the text output holds no raw control character."""
    links = ["[[nope\x1bM]]", "[[bs\b\b\bx]]", "[[c1\x9bx]]", "[[del\x7fx]]"]
    body = " ".join(links) + "\n"
    column = {link: body.index(link) + 1 for link in links}
    proj = project(
        {
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            "knowledge/global/links.md": "---\nsummary: s\n---\n" + body,
            "knowledge/global/ok\x1b[2K\x1b[1G.md": "# Hidden\n",
            "knowledge/global/nl\nname.md": "# Newline\n",
            "knowledge/global/tab\tname.md": "# Tab\n",
            "knowledge/global/dir\x07bell/page.md": "# In a folder\n",
        }
    )
    result = invoke(["check", "--repo", str(proj.root)], code=1)
    assert not RAW.search(result.output)
    assert "knowledge/global/links.md:4:1: error KB103 [[nope\\x1bM]] points at" in result.stdout
    assert "[[bs\\x08\\x08\\x08x]]" in result.stdout and "[[c1\\x9bx]]" in result.stdout

    found = json.loads(
        invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1).stdout
    )["diagnostics"]
    assert [(d["path"], d["code"], d["line"], d["column"], d["message"]) for d in found] == [
        (
            "knowledge/global/dir\\x07bell",
            "KB007",
            1,
            1,
            "folder name holds a control character; nothing under it is read",
        ),
        (
            "knowledge/global/links.md",
            "KB103",
            4,
            column[links[0]],
            "[[nope\x1bM]] points at no page visible from global scope",
        ),
        (
            "knowledge/global/links.md",
            "KB103",
            4,
            column[links[1]],
            "[[bs\b\b\bx]] points at no page visible from global scope",
        ),
        (
            "knowledge/global/links.md",
            "KB103",
            4,
            column[links[2]],
            "[[c1\x9bx]] points at no page visible from global scope",
        ),
        (
            "knowledge/global/links.md",
            "KB103",
            4,
            column[links[3]],
            "[[del\x7fx]] points at no page visible from global scope",
        ),
        (
            "knowledge/global/nl\\x0aname.md",
            "KB007",
            1,
            1,
            "file name holds a control character; the file is skipped",
        ),
        (
            "knowledge/global/ok\\x1b[2K\\x1b[1G.md",
            "KB007",
            1,
            1,
            "file name holds a control character; the file is skipped",
        ),
        (
            "knowledge/global/tab\\x09name.md",
            "KB007",
            1,
            1,
            "file name holds a control character; the file is skipped",
        ),
    ]
    # JSON is not a terminal: its strings hold the text as written, escaped the JSON way.


def test_show_and_timeline_print_page_text_escaped(project: Callable[..., Project]) -> None:
    # YAML refuses a raw ESC, but writes one as `\e` in a double-quoted string.
    page = '---\nsummary: "Sum\\e[31mmary"\n---\n# Title\x1b]0;pwned\x07\n\nBody\x1b[2K\there.\r\n'
    proj = project({"knowl.toml": "[rules]\nKB202 = 'off'\n", "knowledge/global/p.md": page})
    invoke(["build", "--repo", str(proj.root), "--allow-errors"])
    shown = invoke(["show", "p", "--repo", str(proj.root)]).stdout
    assert not RAW.search(shown)
    assert "Sum\\x1b[31mmary" in shown and "Title\\x1b]0;pwned\\x07" in shown
    assert "Body\\x1b[2K" in shown  # the tab is kept (rich shows it as spaces)
    proj.write({"knowledge/global/p.md": page + "More\x1b[1Aabove.\n"})
    proj.commit("second version")
    history = invoke(["timeline", "p", "--repo", str(proj.root)]).stdout
    assert not RAW.search(history)
    assert "+More\\x1b[1Aabove." in history
