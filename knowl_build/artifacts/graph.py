"""The reference graph: a networkx DiGraph of pages and entities, and its exports.

Nodes are `page:<scope>:<id>` and `entity:<name>`; edges are typed `ref`, `link`, `sl_ref`,
`superseded_by` and `member_of`. A page that both refs and links another has one edge whose
`kinds` lists both (`kind` is the first of them in that order).
"""

from __future__ import annotations

import json
from typing import Any

import networkx as nx

EDGE_KINDS = ("ref", "link", "sl_ref", "superseded_by", "member_of")


def page_node(scope: str, page_id: str) -> str:
    return f"page:{scope}:{page_id}"


def entity_node(name: str) -> str:
    return f"entity:{name}"


def make_graph(
    nodes: dict[str, dict[str, Any]], edges: dict[tuple[str, str], set[str]]
) -> nx.DiGraph:
    """A DiGraph with nodes and edges added in sorted order, so exports are deterministic."""
    graph = nx.DiGraph()
    graph.add_nodes_from((node, nodes[node]) for node in sorted(nodes))
    order = {kind: i for i, kind in enumerate(EDGE_KINDS)}
    for (source, target), found in sorted(edges.items()):
        kinds = list(found) if len(found) == 1 else sorted(found, key=order.__getitem__)
        graph.add_edge(source, target, kind=kinds[0], kinds=kinds)
    return graph


def to_json(graph: nx.DiGraph) -> str:
    data = nx.node_link_data(graph, edges="edges")
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def from_json(text: str) -> nx.DiGraph:
    return nx.node_link_graph(json.loads(text), edges="edges")


# Control characters (C0, DEL, C1) written as `\x1b`, as `output.text.printable` writes a line
# for a terminal: page titles and names come from pull requests, and the DOT and GraphML
# exports are printed on one as often as piped. XML 1.0 cannot carry most C0 controls at all,
# not even as character references, nor U+FFFE and U+FFFF; those are written `\ufffe`.
_ESCAPED = {code: f"\\x{code:02x}" for code in [*range(0x00, 0x20), *range(0x7F, 0xA0)]}
_ESCAPED.update({code: f"\\u{code:04x}" for code in (0xFFFE, 0xFFFF)})
# And the bidi controls and line separators (Trojan Source), as `output.escapes.REORDERING`.
_ESCAPED.update({code: f"\\u{code:04x}" for code in (0x2028, 0x2029, *range(0x202A, 0x202F))})
_ESCAPED.update({code: f"\\u{code:04x}" for code in range(0x2066, 0x206A)})


def visible(value: Any) -> Any:
    """A string with its control characters made visible text; anything else as it is."""
    return value.translate(_ESCAPED) if isinstance(value, str) else value


def to_graphml(graph: nx.DiGraph) -> str:
    flat = nx.DiGraph()
    for node, data in graph.nodes(data=True):
        flat.add_node(visible(node), **{k: _scalar(v) for k, v in data.items()})
    for source, target, data in graph.edges(data=True):
        flat.add_edge(visible(source), visible(target), **{k: _scalar(v) for k, v in data.items()})
    return "\n".join(nx.generate_graphml(flat)) + "\n"


def _scalar(value: Any) -> Any:
    if isinstance(value, list):
        return visible(",".join(str(item) for item in value))
    return "" if value is None else visible(value)


_DOT = """\
digraph knowledge {
  rankdir=LR;
  node [fontname="Helvetica", fontsize=10];
{% for node, data in nodes %}  {{ node | dot }} [label={{ data.get("label", node) | dot }}, shape={{ "box" if data.get("type") == "page" else "ellipse" }}];
{% endfor %}{% for source, target, data in edges %}  {{ source | dot }} -> {{ target | dot }} [label={{ data["kind"] | dot }}];
{% endfor %}}
"""


def _dot_quote(value: Any) -> str:
    # Made visible first, then quoted: the backslash of `\x1b` is doubled like any other, so
    # Graphviz shows the escape as written instead of reading it as one of its own.
    text = visible(str(value)).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def to_dot(graph: nx.DiGraph) -> str:
    """Graphviz DOT, rendered from knowl's own template (page text is only ever data here)."""
    # Jinja2 loads for DOT output only (start-up time of the other formats).
    from jinja2 import Environment, StrictUndefined

    env = Environment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters["dot"] = _dot_quote
    template = env.from_string(_DOT)
    return template.render(nodes=list(graph.nodes(data=True)), edges=list(graph.edges(data=True)))
