"""The site's graph view: each node's neighbourhood and an overview of the whole base, as data
files assets/graph.js draws.

    graph/pages/<page>.json         a page's neighbours (<page> as in its URL)
    graph/entities/<entity>.json    an entity's neighbours
    graph/overview.json             the OVERVIEW_CAP most connected nodes, for graph.html

A file holds `{"nodes": [[id, label, group, href, degree, freshness], ...], "edges": [[source,
target, kind], ...], "total": n}`. In a neighbourhood node 0 is the centre, then its neighbours
(the most connected first), at most NEIGHBOURHOOD_CAP in all; `total` is how many neighbours it
has. In the overview, `total` is how many nodes the graph has (and `edge_total` its edges).
`id` is the node's id in graph.json (`page:global:<page>`, `entity:<name>`), `href` its page
relative to the site's root (None for an entity the layer does not define), `group` the page's
usage mode or the entity's kind, `freshness` a page's (`drifted` when a definition it binds
changed; None for entities), `degree` its number of neighbours; edges index the node list.

Depth 2 is put together in the browser from the files of the centre's neighbours, the most
connected first (graph.js fetches a few): a node's file stays ~1 kB at 10,000 pages, the folder
~10 MB, and a rebuild rewrites only the files of the nodes whose neighbourhood changed. What is
drawn stays small at any size; the page says how much more there is.

Only the site's pages (global ones, less those that hold a secret: model.withheld) and the
semantic layer's entities are nodes: an edge to or from any other page is dropped, with the
page, before anything is counted or written.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowl_build.artifacts.schema import EntityNode, PageNode
from knowl_build.reader.view import ArtifactView, page_node, visible
from knowl_build.site import model, urls
from knowl_build.site.datafiles import Folder, Written, encode

FOLDER = "graph"
PAGES, ENTITIES = "pages", "entities"
OVERVIEW = "overview.json"
NEIGHBOURHOOD_CAP = 40
# graph.js fetches the files of this many neighbours (the most connected) for depth 2.
DEPTH2_FILES = 12
OVERVIEW_CAP = 300
ENTITY_PREFIX = "entity:"


@dataclass(frozen=True, slots=True)
class _Node:
    id: str
    file: str  # its data file, relative to graph/
    label: str
    group: str
    href: str | None
    freshness: str | None


@dataclass
class _Graph:
    nodes: dict[str, _Node]
    adjacent: dict[str, list[str]]  # both directions, most connected first
    edges: dict[str, list[tuple[str, str]]]  # out-edges: target, kind

    def degree(self, node: str) -> int:
        return len(self.adjacent.get(node, ()))

    def rank(self, node: str) -> tuple[int, str]:
        return (-self.degree(node), node)


def _nodes(view: ArtifactView, withheld: Container[str]) -> dict[str, _Node]:
    nodes: dict[str, _Node] = {}
    for node in view.graph.nodes.values():
        if isinstance(node, PageNode):
            entry = view.entry_of(node)
            if (
                entry is None
                or not visible(entry, None)
                or entry.key in withheld
                or page_node(entry) != node.id
            ):
                continue
            name = urls.page_name(entry)
            nodes[node.id] = _Node(
                node.id,
                f"{PAGES}/{urls.segment(name)}.json",
                entry.title,
                entry.usage_mode,
                urls.page_href(entry),
                "drifted" if entry.drift_flag else entry.freshness,
            )
        elif isinstance(node, EntityNode) and node.id.startswith(ENTITY_PREFIX):
            name = node.id.removeprefix(ENTITY_PREFIX)
            nodes[node.id] = _Node(
                node.id,
                f"{ENTITIES}/{urls.segment(name)}.json",
                name,
                node.kind,
                urls.href(urls.ENTITIES, name) if name in view.entities else None,
                None,
            )
    return nodes


def _graph(view: ArtifactView, withheld: Container[str]) -> _Graph:
    nodes = _nodes(view, withheld)
    adjacent: dict[str, set[str]] = defaultdict(set)
    edges: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for source, targets in view.graph.out_edges.items():
        if source not in nodes:
            continue
        for target, kinds in targets:
            if target in nodes and target != source:
                edges[source].append((target, kinds[0] if kinds else ""))
                adjacent[source].add(target)
                adjacent[target].add(source)
    degree = {node: len(found) for node, found in adjacent.items()}
    ordered = {
        node: sorted(found, key=lambda n: (-degree[n], n)) for node, found in adjacent.items()
    }
    return _Graph(nodes, ordered, {n: sorted(e) for n, e in edges.items()})


def _neighbourhood(graph: _Graph, centre: str) -> list[str]:
    """The centre and its most connected neighbours, NEIGHBOURHOOD_CAP in all at most."""
    return [centre, *graph.adjacent.get(centre, [])[: NEIGHBOURHOOD_CAP - 1]]


def _document(graph: _Graph, chosen: list[str], total: int) -> dict[str, Any]:
    index = {node: i for i, node in enumerate(chosen)}
    nodes = []
    for node_id in chosen:
        node = graph.nodes[node_id]
        nodes.append(
            [node_id, node.label, node.group, node.href, graph.degree(node_id), node.freshness]
        )
    edges = [
        [index[source], index[target], kind]
        for source in chosen
        for target, kind in graph.edges.get(source, ())
        if target in index
    ]
    return {"nodes": nodes, "edges": edges, "total": total}


def write(view: ArtifactView, out_dir: Path, withheld: Container[str] | None = None) -> Written:
    """Write `<out_dir>/graph/`: every node's neighbourhood and the overview. `withheld`: the
    pages left out of the site (model.withheld, read again when not given)."""
    graph = _graph(view, model.withheld(view) if withheld is None else withheld)
    folder = Folder(out_dir / FOLDER, out_dir)
    for node_id in sorted(graph.nodes):
        document = _document(graph, _neighbourhood(graph, node_id), graph.degree(node_id))
        folder.put(graph.nodes[node_id].file, encode(document) + b"\n")
    top = sorted(graph.nodes, key=graph.rank)[:OVERVIEW_CAP]
    overview = _document(graph, sorted(top), len(graph.nodes))
    overview["edge_total"] = sum(len(e) for e in graph.edges.values())
    folder.put(OVERVIEW, encode(overview) + b"\n")
    return folder.prune([PAGES, ENTITIES])


def node_file(node: str) -> str | None:
    """The data file of a node id (`page:global:<page>`, `entity:<name>`), relative to the
    site's root, as graph.js derives it from `data-node`; None for any other node."""
    if node.startswith(ENTITY_PREFIX):
        return f"{FOLDER}/{ENTITIES}/{urls.segment(node.removeprefix(ENTITY_PREFIX))}.json"
    prefix = "page:global:"
    if node.startswith(prefix):
        return f"{FOLDER}/{PAGES}/{urls.segment(node.removeprefix(prefix))}.json"
    return None
