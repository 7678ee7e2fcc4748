"""`traverse` (SPEC 6.4): breadth-first from the seeds over refs and links, and from a page
through an entity of its sl_refs to a caveat page about the same entity, within the scope
rules of SPEC 6.2. The answer is plain data in the JSON shape of SPEC 10."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from knowl_build.artifacts.schema import (
    CatalogEntry,
    EntitySummary,
    Reached,
    TraverseAnswer,
    Via,
)
from knowl_build.reader.view import ArtifactView, page_node, visible


def traverse(
    view: ArtifactView,
    refs: Sequence[str],
    *,
    user: str | None = None,
    depth: int = 2,
    max_nodes: int = 50,
) -> TraverseAnswer:
    """Breadth-first from the seeds over refs and links, and from a page through an entity of
    its sl_refs to a caveat page with the same entity; at most `max_nodes` pages.
    `truncated` says that the walk stopped there while more pages were within `depth`."""
    seeds = [view.resolve(ref, user) for ref in refs]
    reached: dict[str, Reached] = {}
    order: list[str] = []
    queue: deque[tuple[CatalogEntry, int]] = deque()
    truncated = False
    for seed in seeds:
        node = page_node(seed)
        if node in reached:
            continue
        if len(order) >= max_nodes:
            truncated = True
            break
        reached[node] = {"page": seed.id, "scope": seed.scope, "depth": 0, "via": None}
        order.append(node)
        queue.append((seed, 0))
    while queue and not truncated:
        page, level = queue.popleft()
        if level >= depth:
            continue
        for target, via in _neighbours(view, page, user):
            node = page_node(target)
            if node in reached:
                continue
            if len(order) >= max_nodes:
                truncated = True  # a page more was within reach
                break
            reached[node] = {
                "page": target.id,
                "scope": target.scope,
                "depth": level + 1,
                "via": via,
            }
            order.append(node)
            queue.append((target, level + 1))
    names: set[str] = set()
    for node in order:
        data = view.graph.page_at(node)
        found = view.entry_of(data) if data is not None else None
        names.update(found.sl_refs if found else ())
    entities: list[EntitySummary] = []
    for name in sorted(names):
        entity = view.entities.get(name)
        if entity is None:
            continue  # not a live entity
        expr = entity.definition.get("expr") if entity.kind == "measure" else None
        entities.append(
            {
                "entity": name,
                "kind": entity.kind,
                "fingerprint": entity.fingerprint,
                "expr": expr,
            }
        )
    return {
        "seeds": [s.id for s in seeds],
        "pages": [reached[n] for n in order],
        "entities": entities,
        "max_nodes": max_nodes,
        "truncated": truncated,
    }


# A page's refs and links are one sorted list (Canonic's order: the sorted union of both),
# then the caveats reached through its entities.
_STEP_ORDER = {"ref": 0, "link": 0, "sl_ref": 1}


def _neighbours(
    view: ArtifactView, page: CatalogEntry, user: str | None
) -> list[tuple[CatalogEntry, Via]]:
    graph = view.graph
    found: list[tuple[int, str, str, CatalogEntry, Via]] = []
    me = page_node(page)
    for target, kinds in graph.out_edges.get(me, []):
        data = graph.page_at(target)
        if data is None:
            continue
        steps = [k for k in kinds if k in ("ref", "link")]
        other = view.entry_of(data)
        if not steps or other is None or not visible(other, user):
            continue
        kind = steps[0]
        found.append(
            (
                _STEP_ORDER[kind],
                other.id,
                other.scope,
                other,
                {"from": page.id, "kind": kind},
            )
        )
    for entity in sorted(set(page.sl_refs)):
        for source, kinds in graph.in_edges.get(f"entity:{entity}", []):
            data = graph.page_at(source)
            if data is None or "sl_ref" not in kinds or source == me:
                continue
            other = view.entry_of(data)
            if (
                other is None
                or other.usage_mode != "caveat"
                or not visible(other, user)
                or view.shadows_global(other)
            ):
                continue
            found.append(
                (
                    _STEP_ORDER["sl_ref"],
                    other.id,
                    other.scope,
                    other,
                    {"from": page.id, "kind": "sl_ref", "entity": entity},
                )
            )
    found.sort(key=lambda f: (f[0], f[1], f[2]))
    return [(f[3], f[4]) for f in found]
