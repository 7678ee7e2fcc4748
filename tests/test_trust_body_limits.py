"""Trust: page bodies built to make a check quadratic are checked in linear time, with the
findings the slow checks gave.

The red team's inputs of issue 10 (thousands of headings and `[[#…]]` links, code spans
before links, backtick runs without partners, a heading of 200 kB of `[` or `<`) are run
here at full size for their exact findings; their speed is measured in bench/body_bench.py,
never asserted here. The fast forms are compared with the old ones on generated inputs.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowl_build.core.config import Config, SecurityConfig
from knowl_build.parse.body import _code_spans, _disjoint, _inside, strip_inline
from knowl_build.pipeline.analysis import analyse
from knowl_build.pipeline.pages import parse_page
from knowl_build.rules.context import RuleContext
from knowl_build.rules.references import check_references
from knowl_build.secrets.scanner import SecretScanner
from knowl_build.support.hints import BUDGET_NOTICE, HintBudget
from tests.helpers import Project

TODAY = dt.date(2026, 5, 28)
FM = "---\nsummary: s\n---\n"  # a body starts on line 4
PAGE = "knowledge/global/p.md"
CONFIG = Config(rules={"KB202": "off"})


def _check(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, str, int, int, str | None]]:
    proj = Project(tmp_path / "p", git=False).write(files)
    analysis = analyse(proj.root, CONFIG, use_cache=False, today=TODAY)
    return [
        (d.path, d.code, d.line, d.column, d.hint)
        for d in analysis.diagnostics
        if d.code != "KB009"
    ]


def _parse(body: str):  # type: ignore[no-untyped-def]
    return parse_page((FM + body).encode(), SecurityConfig(), SecretScanner())


# --- the red team's pages, at full size --------------------------------------------------


@pytest.mark.parametrize("count", [2000, 6000])
def test_headings_and_heading_links(tmp_path: Path, count: int) -> None:
    """poc_headings.py: `count` headings `# hN`, then `count` links `[[#xN]]` on one line
    that match none (30 s and 241 s before). Each link is KB105 at its own column, with
    difflib's hint over the page's headings (6,000 by 6,000 is within the run's did-you-mean
    budget; the test below spends it)."""
    body = "".join(f"# h{i}\n" for i in range(count)) + "".join(f"[[#x{i}]]" for i in range(count))
    found = _check(tmp_path, {PAGE: FM + body + "\n"})
    line = 4 + count
    columns = []
    column = 1
    for i in range(count):
        columns.append(column)
        column += len(f"[[#x{i}]]")
    assert [f[:4] for f in found] == [(PAGE, "KB105", line, c) for c in columns]
    hints = [f[4] for f in found]
    headings = [f"h{i}" for i in range(count)]
    assert BUDGET_NOTICE not in hints
    for i in range(0, count, count // 40):  # difflib itself is too slow for all of them
        close = difflib.get_close_matches(f"x{i}", headings, n=1, cutoff=0.6)
        assert hints[i] == (f"did you mean '{close[0]}'?" if close else None)


def test_code_spans_before_links(tmp_path: Path) -> None:
    """poc_codespans.py: 24,800 code spans, then 19,800 links (26 s before): the links are
    resolved; a link inside any of the spans is none."""
    body = "`x` " * 24_800 + "[[a]]" * 19_800 + "\n`[[in-span]]` " * 3 + "[[nope]]\n"
    found = _check(tmp_path, {PAGE: FM + body, "knowledge/global/a.md": "# A\n"})
    assert [f[:4] for f in found] == [(PAGE, "KB103", 7, 15)]


def test_backtick_runs_without_partners() -> None:
    """poc_backtick_runs.py: runs of 365 widths that never close, then 65,000 single
    backticks that pair up: the spans are exactly the pairs."""
    widths = "".join("`" * w + "x" for w in range(2, 367))
    body = widths + "`x" * 65_000 + "[[out]] `[[in]]` [[out2]]"
    page = _parse(body)
    assert [(link.target, link.span.column) for link in page.links] == [
        ("out", len(widths) + 130_001),
        ("out2", len(widths) + 130_018),
    ]


def test_heading_of_200_kb_of_brackets_and_angles() -> None:
    for char in "[<":
        page = _parse("# " + char * 199_000 + "\n[[#" + char * 1000 + "]]\n")
        assert [(h.level, len(h.text)) for h in page.headings] == [(1, 199_000)]
    page = _parse("# " + "[a](" * 49_000 + "x)\n")  # one link, up to the only `)`
    assert page.headings[0].text == "a"


def test_link_to_a_heading_of_angles_is_found(tmp_path: Path) -> None:
    heading = "<" * 5000 + " Title"
    found = _check(tmp_path, {PAGE: FM + f"# {heading}\n[[#{heading}]] [[#{heading}x]]\n"})
    assert [f[:4] for f in found] == [(PAGE, "KB105", 5, 5013)]


def test_indented_code_in_a_blockquote_or_list_item_is_code() -> None:
    """A body with no other block mark still has code: `>     code`, `1.     code`."""
    for body in (">     [[incode]]\n", "1.     [[incode]]\n", "> a\n>\n>     [[incode]]\n"):
        assert _parse(body).links == ()
    assert [link.target for link in _parse("> [[quoted]]\n").links] == ["quoted"]


# --- heading hints -----------------------------------------------------------------------


def test_heading_hints_are_difflibs_and_stop_at_the_budget(tmp_path: Path) -> None:
    targets = {
        "knowledge/global/t.md": "# Revenue Definition\n## Refunds\nText\n===\n",
        "knowledge/global/dup/t.md": "# Other Heading\n",  # KB005: links match either page
    }
    body = "[[t#Revenue Defintion]] [[t#Refund]] [[t#Nothing Alike]] [[t#Other Headin]]\n"
    proj = Project(tmp_path / "p", git=False).write({**targets, PAGE: FM + body})
    analysis = analyse(proj.root, CONFIG, use_cache=False, today=TODAY)
    found = [(d.column, d.hint) for d in analysis.diagnostics if d.code == "KB105"]
    names = ["Revenue Definition", "Refunds", "Text", "Other Heading"]
    for (_, hint), wanted in zip(
        found, ["Revenue Defintion", "Refund", "Nothing Alike", "Other Headin"], strict=True
    ):
        close = difflib.get_close_matches(wanted, names, n=1, cutoff=0.6)
        assert hint == (f"did you mean '{close[0]}'?" if close else None)
    assert [c for c, _ in found] == [1, 25, 38, 58]

    def hints(budget: HintBudget) -> list[str | None]:
        context = RuleContext(
            pages=[p for p in analysis.pages if p.parsed.text_ok],
            index=analysis.index,
            layer=analysis.layer,
            config=CONFIG,
            today=TODAY,
            _hint_budget=budget,
        )
        return [f.hint for _, f in check_references(context) if f.code == "KB105"]

    assert hints(HintBudget()) == [hint for _, hint in found]
    assert hints(HintBudget(units=0)) == [BUDGET_NOTICE, None, None, None]


# --- the fast forms give what the old ones gave ------------------------------------------

# The patterns strip_inline used before (they backtrack: a 200 kB line took half an hour).
_OLD_WIKI = re.compile(r"!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")
_OLD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_OLD_TAG = re.compile(r"<[^>\n]+>")
_OLD_EMPHASIS = re.compile(r"\*+|~~|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])")
_OLD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _old_strip_inline(text: str) -> str:
    text = _OLD_WIKI.sub(lambda m: m.group(2) or m.group(1), text)
    text = _OLD_LINK.sub(r"\1", text)
    text = _OLD_TAG.sub("", text)
    text = text.replace("`", "")
    text = _OLD_EMPHASIS.sub("", text)
    text = _OLD_ESCAPE.sub(r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


MARKUP = st.text(alphabet="[]()<>!#|`*_~\\ \n\ta", max_size=40)


@settings(max_examples=3000, deadline=None)
@given(MARKUP)
def test_strip_inline_is_the_old_strip_inline(text: str) -> None:
    assert strip_inline(text) == _old_strip_inline(text)


@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ("[[a#b|c]] [[d#e]] [[f|]] [[g]", "c d f [[g]"),
        ("![x](y) [x]( [x] (y) [z](", "x x [z]("),
        ("<b>bold</b> <> a<b\nc>", "bold <> a<b c>"),
        ("**Revenue** _by_ `day`", "Revenue by day"),
    ],
)
def test_strip_inline_table(text: str, stripped: str) -> None:
    assert strip_inline(text) == stripped == _old_strip_inline(text)


def _old_code_spans(text: str) -> list[tuple[int, int]]:
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", text)]
    out = []
    i = 0
    while i < len(runs):
        start, end = runs[i]
        slashes = 0
        k = start - 1
        while k >= 0 and text[k] == "\\":
            slashes += 1
            k -= 1
        if slashes % 2:
            start += 1
            if start == end:
                i += 1
                continue
        width = end - start
        for j in range(i + 1, len(runs)):
            if runs[j][1] - runs[j][0] == width:
                out.append((start, runs[j][1]))
                i = j + 1
                break
        else:
            i += 1
    return out


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="``\\ax", max_size=40))
def test_code_spans_are_the_old_code_spans(text: str) -> None:
    spans: list[tuple[int, int]] = []
    _code_spans(text, 0, spans)
    assert spans == _old_code_spans(text)
    starts, ends = _disjoint(spans)
    for offset in range(len(text) + 1):
        assert _inside(starts, ends, offset) == any(lo <= offset < hi for lo, hi in spans)
