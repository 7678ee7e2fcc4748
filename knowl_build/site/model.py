"""The site's data, gathered from an artifact: the global pages with their records, what links
to each (in context), tags, categories, caveats, the entities and who uses them.

Everything here is about global pages only. A user's page is dropped with its catalog entry,
before anything is counted or linked: its id, title, text, links and tags never reach a
template. So is a global page with a secret finding (KB401 in the artifact's
diagnostics.json, which `knowl build --allow-errors` publishes with the page as written):
the site is published wherever the build goes, so such a page is left out whole, and the
review queue names it by its id only (`withheld`). The templates get plain data (dicts,
lists, strings) built by the `*_context` functions, which is also what an output file's
inputs digest is computed from.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from msgspec import UnsetType

from knowl_build.artifacts.layout import RECORDS
from knowl_build.artifacts.records import members
from knowl_build.artifacts.schema import (
    CatalogEntry,
    CommitInfo,
    DiagnosticsFile,
    Entity,
    PageRecord,
    decode,
)
from knowl_build.core.errors import ArtifactError
from knowl_build.reader import relations
from knowl_build.reader.view import CAVEAT, GLOBAL, ArtifactView, page_node, visible
from knowl_build.secrets.scanner import redact
from knowl_build.site import urls
from knowl_build.site.markup import Headings
from knowl_build.site.snippets import snippet

SUPERSEDED_BY = "superseded_by"
LINKING = ("ref", "link")  # the edges a page view lists as backlinks (successors apart)
FRESH = "fresh"
RECENT = 15
# Caveats a page shows, those about most of its entities first; its entity pages list all.
CAVEATS_SHOWN = 10
INDEX_LIST_CAP = 500  # pages and entities listed on the home page; more: search
DIAGNOSTICS = "diagnostics.json"
SECRET = "KB401"  # the secret rule's code (rules/security.py; the site imports no rule)


@dataclass(frozen=True, slots=True)
class Page:
    """A global page of the site: its catalog entry, record and where it lives."""

    entry: CatalogEntry
    record: PageRecord
    digest: str  # of its record's line: what the record says, in 16 hex digits
    name: str
    file: str
    href: str

    @property
    def key(self) -> str:
        return self.entry.key

    @property
    def node(self) -> str:
        return page_node(self.entry)


@dataclass(frozen=True, slots=True)
class Mention:
    """A link from `source` to a page: its kind and, for a body link, the sentence around it."""

    source: Page
    kind: str
    before: str | None = None
    text: str | None = None
    after: str | None = None


@dataclass
class SiteData:
    view: ArtifactView
    pages: list[Page]
    by_key: dict[str, Page]
    mentions: dict[str, list[Mention]] = field(default_factory=dict)
    successor: dict[str, Page] = field(default_factory=dict)
    predecessors: dict[str, list[Page]] = field(default_factory=dict)
    tags: dict[str, list[Page]] = field(default_factory=dict)
    categories: dict[str, list[Page]] = field(default_factory=dict)
    caveats: dict[str, list[Page]] = field(default_factory=dict)  # entity -> caveat pages
    users: dict[str, list[Page]] = field(default_factory=dict)  # entity -> pages using it
    members: dict[str, list[str]] = field(default_factory=dict)  # source entity -> members
    # Each page as lists show it, made once (the sandbox lets no template change it).
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The global pages left out because they hold a secret: their keys, and their ids as
    # the review queue lists them.
    withheld: frozenset[str] = frozenset()
    withheld_ids: list[str] = field(default_factory=list)
    # Wiki-links are Dendron's, `[[label|note]]` (`[links] resolution = "dendron"`).
    label_first: bool = False

    def item(self, page: Page) -> dict[str, Any]:
        return self.items[page.key]

    @property
    def entities(self) -> dict[str, Entity]:
        return self.view.entities

    def href_of_path(self, path: str) -> str | None:
        """The link (from the site's root) of the page at `path`, None unless it is global."""
        page = self.by_key.get(path)
        return None if page is None else page.href

    def entity_href(self, name: str) -> str | None:
        return urls.href(urls.ENTITIES, name) if name in self.entities else None


def _records(view: ArtifactView) -> Iterable[tuple[int, bytes]]:
    """Each record's offset and line, the records read in one pass."""
    try:
        data = (view.folder / RECORDS).read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{view.folder}: {RECORDS} cannot be read ({exc.strerror})") from None
    try:
        yield from members(data, (entry.offset for entry in view.pages))
    except ArtifactError as exc:
        raise ArtifactError(f"{view.folder}: {exc}") from None


def withheld(view: ArtifactView) -> frozenset[str]:
    """The keys (paths) of the global pages the site leaves out: each page that a secret
    finding (KB401) names in the artifact's diagnostics.json. A file that cannot be read
    stops the site (an ArtifactError): without it no page could be known to be clean."""
    try:
        data = (view.folder / DIAGNOSTICS).read_bytes()
    except OSError as exc:
        raise ArtifactError(
            f"{view.folder}: {DIAGNOSTICS} cannot be read ({exc.strerror})"
        ) from None
    try:
        found = decode(DIAGNOSTICS, data, DiagnosticsFile)
    except ArtifactError as exc:
        raise ArtifactError(f"{view.folder}: {exc}") from None
    paths = {d.path for d in found.diagnostics if d.code == SECRET}
    return frozenset(e.key for e in view.pages if e.key in paths and visible(e, None))


def gather(view: ArtifactView, label_first: bool = False) -> SiteData:
    """Every global page with its record, and what the pages say of each other; the pages
    that hold a secret are left out (`withheld`) before anything is counted or linked.
    `label_first`: the project's wiki-links are Dendron's, `[[label|note]]`."""
    left_out = withheld(view)
    entries = {e.offset: e for e in view.pages if visible(e, None) and e.key not in left_out}
    pages: list[Page] = []
    for offset, line in _records(view):
        entry = entries.get(offset)
        if entry is None:
            continue  # a user's page, or one that holds a secret: not on the site
        record = decode(RECORDS, line, PageRecord)
        if record.path != entry.key or record.scope != GLOBAL:
            raise ArtifactError(f"{view.folder}: {RECORDS} does not match catalog.json")
        name = urls.page_name(entry)
        pages.append(
            Page(
                entry,
                record,
                hashlib.sha256(line).hexdigest()[:16],
                name,
                urls.file_name(urls.PAGES, name),
                urls.href(urls.PAGES, name),
            )
        )
    pages.sort(key=lambda p: (p.entry.id, p.entry.key))
    data = SiteData(
        view,
        pages,
        {p.key: p for p in pages},
        items={p.key: page_item(p) for p in pages},
        withheld=left_out,
        # An id is a name, never a secret (resolve.place); redacted all the same.
        withheld_ids=sorted({redact(view.by_key[key].id) for key in left_out}),
        label_first=label_first,
    )
    _links(data)
    _supersession(data)
    _groups(data)
    return data


def _links(data: SiteData) -> None:
    """Mentions of each page by the links and refs of the others, as the checker resolved
    them (each link's `to`), in the order of the linking pages and their links."""
    mentions: dict[str, list[Mention]] = defaultdict(list)
    for page in data.pages:
        for link in page.record.links:
            to = link.to
            if isinstance(to, UnsetType) or to not in data.by_key or to == page.key:
                continue
            found = snippet(page.record, link, data.label_first)
            if found is None:
                mentions[to].append(Mention(page, link.kind))
            else:
                mentions[to].append(Mention(page, link.kind, found.before, found.text, found.after))
    data.mentions = dict(mentions)


def _supersession(data: SiteData) -> None:
    """A superseded page's successor, as the graph's `superseded_by` edge resolved it."""
    graph = data.view.graph
    by_node = {p.node: p for p in data.pages}
    predecessors: dict[str, list[Page]] = defaultdict(list)
    for page in data.pages:
        if page.entry.superseded_by is None:
            continue
        for target, kinds in graph.out_edges.get(page.node, ()):
            successor = by_node.get(target)
            if SUPERSEDED_BY in kinds and successor is not None and successor is not page:
                data.successor[page.key] = successor
                predecessors[successor.key].append(page)
                break
    data.predecessors = dict(predecessors)


def _groups(data: SiteData) -> None:
    tags: dict[str, list[Page]] = defaultdict(list)
    categories: dict[str, list[Page]] = defaultdict(list)
    caveats: dict[str, list[Page]] = defaultdict(list)
    users: dict[str, list[Page]] = defaultdict(list)
    for page in data.pages:
        entry = page.entry
        for tag in dict.fromkeys(entry.tags):
            tags[tag].append(page)
        if entry.category:
            categories[entry.category].append(page)
        for entity in dict.fromkeys(entry.sl_refs):
            users[entity].append(page)
            if entry.usage_mode == CAVEAT and entry.status == "active":
                caveats[entity].append(page)
    data.tags = dict(sorted(tags.items()))
    data.categories = dict(sorted(categories.items()))
    data.caveats = dict(caveats)
    data.users = dict(users)
    members: dict[str, list[str]] = defaultdict(list)
    for name, described in data.entities.items():
        source = f"{described.connection}.{described.source}"
        if described.member is not None and source in data.entities and source != name:
            members[source].append(name)
    data.members = {k: sorted(v) for k, v in members.items()}


# --- what the templates get ---------------------------------------------------------------------


def commit(info: CommitInfo | None) -> dict[str, Any] | None:
    if info is None:
        return None
    sha = info.commit
    date = info.date if isinstance(info.date, str) else None
    return {
        "commit": sha,
        "short": sha[:12] if sha else None,
        "date": date[:10] if date else None,
        "author": info.author if isinstance(info.author, str) else None,
        "subject": info.subject if isinstance(info.subject, str) else None,
        "working_tree": info.working_tree is True,
    }


def freshness_state(entry: CatalogEntry) -> str:
    """What a badge says: `drifted` when a definition it binds changed, else the freshness."""
    return "drifted" if entry.drift_flag else entry.freshness


def page_item(page: Page) -> dict[str, Any]:
    """A page in a list: its link, title, summary and state."""
    entry = page.entry
    return {
        "href": page.href,
        "title": entry.title,
        "summary": entry.summary,
        "status": entry.status,
        "usage_mode": entry.usage_mode,
        "freshness": entry.freshness,
        "state": freshness_state(entry),
    }


def _entity_ref(data: SiteData, name: str) -> dict[str, Any]:
    entity = data.entities.get(name)
    return {
        "name": name,
        "href": data.entity_href(name),
        "kind": entity.kind if entity else None,
    }


def text_of(value: Any) -> str:
    """A definition's value as text: lists joined with `, `, tables as `key: value`."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(text_of(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {text_of(v)}" for k, v in value.items())
    return str(value)


def page_context(data: SiteData, page: Page) -> dict[str, Any]:
    """A page's template data, all but its body (rendered only when these change)."""
    entry, record = page.entry, page.record
    fields = record.fields
    drift = []
    for d in record.drift:
        changes = [] if isinstance(d.changes, UnsetType) else [commit(c) for c in d.changes]
        drift.append(
            {
                "entity": _entity_ref(data, d.entity),
                "bound": d.bound,
                "live": d.live,
                "bound_expr": None if isinstance(d.bound_expr, UnsetType) else d.bound_expr,
                "live_expr": None if isinstance(d.live_expr, UnsetType) else d.live_expr,
                "diff": None if isinstance(d.diff, UnsetType) else d.diff,
                "changed_in": commit(d.changed_in),
                "changes": changes,
            }
        )
    # Which caveats and linking pages, in what order: `knowl show`'s answer, less the pages
    # the site leaves out; the site adds their links and the sentences around each mention.
    bound = [
        (data.by_key[caveat.key], row["entities"])
        for caveat, row in relations.bound_caveats(data.view, entry, None)
        if caveat.key in data.by_key
    ]
    caveats = [
        {**data.item(caveat), "entities": shared} for caveat, shared in bound[:CAVEATS_SHOWN]
    ]
    kinds: dict[str, set[str]] = {}
    for link in relations.backlinks(data.view, entry, None):
        if link["path"] in data.by_key and link["path"] != page.key and link["kind"] in LINKING:
            kinds.setdefault(link["path"], set()).add(link["kind"])
    backlinks = [_backlink(data, page, data.by_key[p], found) for p, found in kinds.items()]
    successor = data.successor.get(page.key)
    return {
        "page": {
            "id": entry.id,
            "path": record.path,
            "title": record.title,
            "anchor": Headings(record.title).title,
            "summary": fields.summary,
            "status": fields.status,
            "usage_mode": fields.usage_mode,
            "category": fields.category,
            "category_href": (
                urls.href(urls.CATEGORIES, fields.category) if fields.category else None
            ),
            "tags": [
                {"name": t, "href": urls.href(urls.TAGS, t)} for t in dict.fromkeys(fields.tags)
            ],
            "entities": [_entity_ref(data, e) for e in dict.fromkeys(fields.sl_refs)],
            "freshness": entry.freshness,
            "state": freshness_state(entry),
            "reasons": [{"code": r.code, "message": r.message} for r in record.freshness.reasons],
            "drift": drift,
            "last_commit": commit(record.last_commit),
            "last_validated_at": fields.last_validated_at,
            "provenance": fields.provenance,
            "confidence": fields.confidence,
            "superseded_by": fields.superseded_by,
            "successor": data.item(successor) if successor else None,
            "predecessors": [data.item(p) for p in data.predecessors.get(page.key, ())],
            "node": page.node,
        },
        "caveats": caveats,
        "more_caveats": len(bound) - len(caveats),
        "backlinks": sorted(backlinks, key=lambda b: (b["title"], b["href"])),
    }


def _backlink(data: SiteData, page: Page, source: Page, kinds: set[str]) -> dict[str, Any]:
    """A page linking to `page` as its view lists it: whether it refs the page, and each
    mention in its text with the sentence around it."""
    mentions = [
        {"kind": m.kind, "before": m.before, "text": m.text, "after": m.after}
        for m in data.mentions.get(page.key, ())
        if m.source is source and m.text is not None
    ]
    return {**data.item(source), "refs": "ref" in kinds, "mentions": mentions}


def body_inputs(data: SiteData, page: Page) -> list[Any]:
    """What a page's rendered body depends on: its record, and where its links lead."""
    targets = sorted(
        {
            link.to: data.href_of_path(link.to)
            for link in page.record.links
            if isinstance(link.to, str)
        }.items()
    )
    return [page.digest, targets]


def _changes(data: SiteData, name: str, entity: Entity) -> list[dict[str, Any]]:
    """The commits that changed a definition, newest first: the entity's last change and every
    change the drifted global pages record for it."""
    found: dict[str, dict[str, Any]] = {}
    introduced = entity.introduced_in.commit if entity.introduced_in else None
    infos: list[CommitInfo] = [entity.changed_in] if entity.changed_in else []
    for page in data.users.get(name, ()):
        for d in page.record.drift:
            if d.entity != name:
                continue
            if d.changed_in is not None:
                infos.append(d.changed_in)
            if not isinstance(d.changes, UnsetType):
                infos.extend(d.changes)
    for info in infos:
        row = commit(info)
        if row is not None and row["commit"] and row["commit"] != introduced:
            found.setdefault(row["commit"], row)
    return sorted(found.values(), key=lambda c: (c["date"] or "", c["commit"]), reverse=True)


def entity_context(data: SiteData, name: str) -> dict[str, Any]:
    entity = data.entities[name]
    definition = entity.definition
    source = f"{entity.connection}.{entity.source}"
    source_entity = data.entities.get(source)
    grain = definition.get("grain")
    if grain is None and source_entity is not None and source != name:
        grain = source_entity.definition.get("grain")
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    drifted = []
    for page in data.users.get(name, ()):
        groups[page.entry.usage_mode].append(data.item(page))
        for d in page.record.drift:
            if d.entity == name:
                drifted.append(
                    {
                        **data.item(page),
                        "bound_expr": None if isinstance(d.bound_expr, UnsetType) else d.bound_expr,
                        "live_expr": None if isinstance(d.live_expr, UnsetType) else d.live_expr,
                        "diff": None if isinstance(d.diff, UnsetType) else d.diff,
                        "changed_in": commit(d.changed_in),
                    }
                )
    order = sorted(groups, key=lambda mode: (mode != CAVEAT, mode))
    return {
        "entity": {
            "name": name,
            "kind": entity.kind,
            "connection": entity.connection,
            "source": entity.source,
            "member": entity.member,
            "expression": text_of(definition.get("expr")) or None,
            "description": text_of(definition.get("description")) or None,
            "type": text_of(definition.get("type")) or None,
            "grain": text_of(grain) or None,
            "definition": [[k, text_of(v)] for k, v in sorted(definition.items())],
            "fingerprint": entity.fingerprint,
            "file": entity.file,
            "line": entity.line,
            "node": f"entity:{name}",
            "source_entity": (
                _entity_ref(data, source) if source_entity is not None and source != name else None
            ),
            "members": [_entity_ref(data, m) for m in data.members.get(name, ())],
            "introduced_in": commit(entity.introduced_in),
            "changes": _changes(data, name, entity),
        },
        "usage": [
            {"mode": mode, "pages": sorted(groups[mode], key=lambda p: (p["title"], p["href"]))}
            for mode in order
        ],
        "drifted": drifted,
    }


def list_context(data: SiteData, pages: Iterable[Page]) -> list[dict[str, Any]]:
    return sorted((data.item(p) for p in pages), key=lambda p: (p["title"].casefold(), p["href"]))


def stale_context(data: SiteData) -> dict[str, Any]:
    rows = []
    for page in data.pages:
        entry = page.entry
        if entry.freshness == FRESH and not entry.drift_flag:
            continue
        rows.append(
            {
                **data.item(page),
                "reasons": [
                    {"code": r.code, "message": r.message} for r in page.record.freshness.reasons
                ],
                "drift": [_entity_ref(data, d.entity) for d in page.record.drift],
            }
        )
    rows.sort(key=lambda r: (r["freshness"] == FRESH, r["freshness"], r["title"].casefold()))
    return {"pages": rows, "withheld": data.withheld_ids}


def _date(info: CommitInfo | None) -> str | None:
    return info.date if info is not None and isinstance(info.date, str) else None


def index_context(data: SiteData) -> dict[str, Any]:
    view = data.view
    pages = data.pages
    # The most recently committed first (ties: by title, then link).
    dated = sorted(
        ((last, p) for p in pages if (last := _date(p.record.last_commit)) is not None),
        key=lambda dp: (dp[0], dp[1].entry.title, dp[1].href),
        reverse=True,
    )
    recent = [
        {**data.item(p), "last_commit": commit(p.record.last_commit)} for _, p in dated[:RECENT]
    ]
    not_fresh = [p for p in pages if p.entry.freshness != FRESH or p.entry.drift_flag]
    by_connection: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for name in sorted(data.entities)[:INDEX_LIST_CAP]:
        by_connection[data.entities[name].connection].append(_entity_ref(data, name))
    return {
        "counts": {
            "pages": len(pages),
            "entities": len(data.entities),
            "tags": len(data.tags),
            "categories": len(data.categories),
            "not_fresh": len(not_fresh),
            "drifted": sum(1 for p in pages if p.entry.drift_flag),
        },
        "recent": recent,
        "review": list_context(data, not_fresh)[:RECENT],
        "tags": [
            {"name": t, "href": urls.href(urls.TAGS, t), "count": len(ps)}
            for t, ps in data.tags.items()
        ],
        "categories": [
            {"name": c, "href": urls.href(urls.CATEGORIES, c), "count": len(ps)}
            for c, ps in data.categories.items()
        ],
        "all_pages": list_context(data, pages)[:INDEX_LIST_CAP],
        "entities": [{"connection": c, "entities": es} for c, es in sorted(by_connection.items())],
        "build": {
            "id": view.manifest.build_id,
            "commit": view.manifest.commit,
            "built_at": view.manifest.built_at,
            "repo": view.repo,
        },
    }
