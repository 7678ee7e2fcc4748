"""catalog.json as the build writes it, and what is derived from its entries: the heads
(catalog-heads.json), the caveats by entity and the entries binding each entity. Readers,
validation and the build compute them here alike."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from knowl_build.artifacts.schema import Bind, CatalogEntry, CatalogHeads

# As `schema.encode`'s: sorted keys, compact (the file is `schema.encode(Catalog(...))`).
_ENCODER = msgspec.json.Encoder(order="sorted")


def catalog_file(pages: list[CatalogEntry]) -> tuple[bytes, CatalogHeads]:
    """catalog.json's bytes (as `encode` writes the `Catalog`, caveats included) and its
    heads, the span of every entry's bytes found as the file is put together."""
    caveats = catalog_caveats(pages)
    parts = [b'{"caveats":', _ENCODER.encode(caveats), b',"pages":[']
    size = sum(map(len, parts))
    starts: list[int] = []
    ends: list[int] = []
    for i, page in enumerate(pages):
        if i:
            parts.append(b",")
            size += 1
        data = _ENCODER.encode(page)
        starts.append(size)
        size += len(data)
        ends.append(size)
        parts.append(data)
    parts.append(b"]}\n")
    return b"".join(parts), catalog_heads(pages, starts, ends, caveats)


def catalog_heads(
    pages: list[CatalogEntry], starts: list[int], ends: list[int], caveats: dict[str, list[int]]
) -> CatalogHeads:
    """The heads of a catalog whose entry `i` is bytes `starts[i]` to `ends[i]` of its file."""
    return CatalogHeads(
        keys=[page.key for page in pages],
        ids=[page.id for page in pages],
        scopes=[page.scope for page in pages],
        statuses=[page.status for page in pages],
        usage_modes=[page.usage_mode for page in pages],
        starts=starts,
        ends=ends,
        caveats=caveats,
        binding=catalog_binding(pages),
    )


def catalog_binding(pages: Sequence[CatalogEntry | Bind]) -> dict[str, list[int]]:
    """The positions of the entries binding each entity (in `sl_refs`), in catalog order,
    each once."""
    index: dict[str, list[int]] = {}
    get = index.get
    for i, page in enumerate(pages):
        for ref in page.sl_refs:
            found = get(ref)
            if found is None:
                index[ref] = [i]
            elif found[-1] != i:
                found.append(i)
    return index


def catalog_caveats(pages: list[CatalogEntry]) -> dict[str, list[int]]:
    """The active caveat pages about each entity, by position in the catalog, in its order.
    A user page with a global page's id only annotates that page: it is no caveat of its own
    (SPEC 6.2)."""
    global_ids = {page.id for page in pages if page.scope == "global"}
    found: dict[str, list[int]] = {}
    for i, page in enumerate(pages):
        if page.usage_mode != "caveat" or page.status != "active":
            continue
        if page.scope != "global" and page.id in global_ids:
            continue
        for entity in sorted(set(page.sl_refs)):
            found.setdefault(entity, []).append(i)
    return dict(sorted(found.items()))
