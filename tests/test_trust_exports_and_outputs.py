"""Trust, round three (issue 21, items 6, 7, 10 and 11): exports and output folders.

- The DOT and GraphML exports make control characters visible (`\\x1b`), as the text output
  does; both stay valid (GraphML parses as XML 1.0).
- No output folder (`out_dir`, `--out` of build and site) lies inside the git directory or a
  hooks folder.
- A bad output path is one line and exit 2, for every command that takes one.
- A full disk loses nothing: the last good artifact answers, no half file is left, and the
  next run, with space again, succeeds.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable

import networkx as nx

from knowl_build import graph as graphs
from tests.helpers import Project, invoke

CONTROLS = "".join(chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)])
RAW = re.compile("[\x00-\x1f\x7f-\x9f\ufffe\uffff]")
KB202_OFF = "[rules]\nKB202 = 'off'\n"
PAGES = {
    "knowl.toml": KB202_OFF,
    "knowledge/global/revenue.md": "---\nsummary: Revenue is the sum of orders\n---\n# Revenue\n",
}
# DOT as knowl writes it: quoted strings whose only escapes are backslash pairs.
_DOT_STRING = r'"(?:[^"\\\n]|\\.)*"'
_DOT_LINE = re.compile(
    rf"  {_DOT_STRING}(?: -> {_DOT_STRING})? \[label={_DOT_STRING}(?:, shape=(?:box|ellipse))?\];"
)


# --- 6. graph exports escape control characters ---------------------------------------------


def _dot_lines(dot: str) -> list[str]:
    lines = dot.splitlines()
    assert lines[:3] == [
        "digraph knowledge {",
        "  rankdir=LR;",
        '  node [fontname="Helvetica", fontsize=10];',
    ]
    assert lines[-1] == "}"
    for line in lines[3:-1]:
        assert _DOT_LINE.fullmatch(line), line
    return lines[3:-1]


def _dot_unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def test_graph_dot_and_graphml_escape_control_characters(
    project: Callable[..., Project],
) -> None:
    # Every control character (and U+FFFE, which XML 1.0 refuses too) in node ids, labels and
    # edge kinds: nothing raw comes out, and each reads back as its visible escape.
    hostile = f'a{CONTROLS}\ufffe"\\z'
    shown = "a" + "".join(f"\\x{ord(c):02x}" for c in CONTROLS) + '\\ufffe"\\z'
    g = graphs.make_graph(
        {
            f"page:global:{hostile}": {"type": "page", "label": f"title {hostile}"},
            "entity:orders": {"type": "entity", "label": "orders", "tags": ["x\x1by", "z"]},
        },
        {(f"page:global:{hostile}", "entity:orders"): {"sl_ref"}},
    )
    dot = graphs.to_dot(g)
    assert not RAW.search(dot.replace("\n", ""))
    entity, node, edge = _dot_lines(dot)
    quoted = re.findall(_DOT_STRING, node)
    assert [_dot_unquote(q) for q in quoted] == [f"page:global:{shown}", f"title {shown}"]
    assert [_dot_unquote(q) for q in re.findall(_DOT_STRING, edge)] == [
        f"page:global:{shown}",
        "entity:orders",
        "sl_ref",
    ]
    assert '"entity:orders"' in entity

    graphml = graphs.to_graphml(g)
    assert not RAW.search(graphml.replace("\n", ""))
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    root = ET.fromstring(graphml)  # well-formed XML 1.0, or this raises
    keys = {k.get("id"): k.get("attr.name") for k in root.iterfind("g:key", ns)}
    nodes = {
        n.get("id"): {keys[d.get("key")]: d.text for d in n.iterfind("g:data", ns)}
        for n in root.iterfind("g:graph/g:node", ns)
    }
    assert nodes[f"page:global:{shown}"]["label"] == f"title {shown}"
    assert nodes["entity:orders"]["tags"] == "x\\x1by,z"
    (edge_element,) = root.iterfind("g:graph/g:edge", ns)
    assert edge_element.get("source") == f"page:global:{shown}"
    assert nx.parse_graphml(graphml).number_of_nodes() == 2

    # End to end: a title holding ESC and BEL, through `knowl graph`.
    proj = project(
        {
            **PAGES,
            "knowledge/global/bell.md": "---\nsummary: Rings\n---\n# Ring\x07 \x1b[2J \x9b1m\n",
        }
    )
    invoke(["build", "--repo", str(proj.root)])
    out = invoke(["graph", "--repo", str(proj.root), "--format", "dot"]).stdout
    assert not RAW.search(out.replace("\n", ""))
    assert 'label="Ring\\\\x07 \\\\x1b[2J \\\\x9b1m"' in out
    _dot_lines(out)
    out = invoke(["graph", "--repo", str(proj.root), "--format", "graphml"]).stdout
    assert not RAW.search(out.replace("\n", ""))
    assert ">Ring\\x07 \\x1b[2J \\x9b1m<" in out
    ET.fromstring(out)
    # JSON keeps the title as it is (encoded, never raw on a terminal for C0).
    assert "Ring\\u0007 \\u001b[2J" in invoke(["graph", "--repo", str(proj.root)]).stdout
