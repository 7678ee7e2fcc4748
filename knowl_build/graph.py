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


def to_graphml(graph: nx.DiGraph) -> str:
    flat = nx.DiGraph()
    for node, data in graph.nodes(data=True):
        flat.add_node(node, **{k: _scalar(v) for k, v in data.items()})
    for source, target, data in graph.edges(data=True):
        flat.add_edge(source, target, **{k: _scalar(v) for k, v in data.items()})
    return "\n".join(nx.generate_graphml(flat)) + "\n"


def _scalar(value: Any) -> Any:
    return ",".join(value) if isinstance(value, list) else ("" if value is None else value)


_DOT = """\
digraph knowledge {
  rankdir=LR;
  node [fontname="Helvetica", fontsize=10];
{% for node, data in nodes %}  {{ node | dot }} [label={{ data.get("label", node) | dot }}, shape={{ "box" if data.get("type") == "page" else "ellipse" }}];
{% endfor %}{% for source, target, data in edges %}  {{ source | dot }} -> {{ target | dot }} [label={{ data["kind"] | dot }}];
{% endfor %}}
"""


def _dot_quote(value: Any) -> str:
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def to_dot(graph: nx.DiGraph) -> str:
    """Graphviz DOT, rendered from knowl's own template (page text is only ever data here)."""
    # Jinja2 loads for DOT output only (start-up time of the other formats).
    from jinja2 import Environment, StrictUndefined

    env = Environment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters["dot"] = _dot_quote
    template = env.from_string(_DOT)
    return template.render(nodes=list(graph.nodes(data=True)), edges=list(graph.edges(data=True)))
