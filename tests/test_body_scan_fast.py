"""The body scan's faster readings give what the plain ones gave (issue 22's cold check).

Wiki-links and directives are found from their brackets, the character before saying whether
a link is an embed and a directive escaped; YAML strings skip PyYAML's constructor. Each is
compared here with the reading it replaced, on text made to hold the cases at their edges
(`!![[a]]`, `\\\\<<sl:x>>`, `[[[a]]`, an unclosed `[[`), with exact positions.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from knowl_build.core.model import WIKI, TextIndex
from knowl_build.parse.body import DIRECTIVE, BodyScan, scan_body, wiki_target
from knowl_build.parse.yamlnodes import YMap, YNode, YScalar, YSeq, compose, plain

# The expressions the scan used before, one optional character first.
OLD_WIKI = re.compile(r"(!?)\[\[([^\[\]\n]*)\]\]")


def _old_wiki(body: str) -> list[tuple[str, bool, int]]:
    """(raw, embed, start) of each wiki-link the old expression found (no code here)."""
    found = []
    for match in OLD_WIKI.finditer(body):
        inner = match.group(2)
        bar = inner.find("|")
        target = inner if bar == -1 else inner[:bar]
        if bar != -1 and target.endswith("\\"):
            target = target[:-1]
        if wiki_target(target) is not None:  # not `[[]]`, `[[|x]]`
            found.append((match.group(0), bool(match.group(1)), match.start()))
    return found


def _scan(text: str) -> BodyScan:
    return scan_body(text, 0, TextIndex(text))


def test_embeds_escapes_and_positions() -> None:
    text = "a ![[x]] !![[y]] [[[z]] [[w]]![[v]]\n\\<<sl:m.n>> \\\\{{ sl:p }} <<sl:q>>\n"
    scan = _scan(text)
    wiki = [(link.raw, link.embed, link.span.line, link.span.column) for link in scan.links]
    assert wiki == [
        ("![[x]]", True, 1, 3),
        ("![[y]]", True, 1, 11),
        ("[[z]]", False, 1, 19),
        ("[[w]]", False, 1, 25),
        ("![[v]]", True, 1, 30),
    ]
    assert [(d.raw, d.name, d.start, d.span.line, d.span.column) for d in scan.directives] == [
        ("<<sl:q>>", "q", 61, 2, 26)
    ]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="![]|#a.\n\\ ", max_size=60))
def test_wiki_links_as_the_optional_bang_found_them(body: str) -> None:
    scan = _scan(body)
    index = TextIndex(body)
    got = [
        (link.raw, link.embed, (link.span.line, link.span.column))
        for link in scan.links
        if link.form == WIKI
    ]
    want = [(raw, embed, index.position(start)) for raw, embed, start in _old_wiki(body)]
    assert [g[:2] for g in got] == [w[:2] for w in want]
    assert [g[2] for g in got] == [w[2] for w in want]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="<>{}\\sl:x. \n", max_size=60))
def test_directives_as_the_optional_backslash_found_them(body: str) -> None:
    got = [(d.raw, d.name, d.start, d.end) for d in _scan(body).directives]
    want = [
        (m.group(0), m.group(2) or m.group(3), m.start(), m.end())
        for m in DIRECTIVE.finditer(body)
        if not m.group(1)
    ]
    assert got == want


def _shape(node: YNode) -> tuple[Any, ...]:
    """A composed node as (kind, value, start, end) trees."""
    if isinstance(node, YScalar):
        return ("scalar", type(node.value).__name__, node.value, node.text, node.start, node.end)
    if isinstance(node, YSeq):
        return ("seq", node.start, node.end, [_shape(item) for item in node.items])
    assert isinstance(node, YMap)
    return ("map", node.start, node.end, [(_shape(k), _shape(v)) for k, v in node.items])


def test_strings_without_the_constructor_are_what_it_built() -> None:
    text = (
        "title: plain\nquoted: 'a: b'\ntagged: !!str 12\nnum: 12\nwhen: 2024-01-05\n"
        "anchor: &x shared\nagain: *x\nfolded: >\n  one\n  two\nlist: [a, 'b', !!str 3, 4]\n"
        "empty: ''\nnothing: ~\n"
    )
    composed = compose(text)
    assert plain(composed.root) == yaml.safe_load(text)
    root = composed.root
    assert isinstance(root, YMap)
    shapes = {k.value: _shape(v) for k, v in root.items}
    assert shapes["title"][:4] == ("scalar", "str", "plain", None)
    assert text[shapes["title"][4] : shapes["title"][5]] == "plain"
    assert shapes["tagged"][:4] == ("scalar", "str", "12", None)
    assert text[shapes["tagged"][4] : shapes["tagged"][5]] == "!!str 12"
    assert shapes["quoted"][2] == "a: b"
    assert text[shapes["quoted"][4] : shapes["quoted"][5]] == "'a: b'"
    assert shapes["num"][:4] == ("scalar", "int", 12, "12")
    assert shapes["again"][2] == "shared"
    assert shapes["folded"][2] == "one two\n"
    assert [item[2] for item in shapes["list"][3]] == ["a", "b", "3", 4]
    assert [item[3] for item in shapes["list"][3]] == [None, None, None, "4"]
