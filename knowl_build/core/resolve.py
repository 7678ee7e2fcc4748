"""Scopes, visibility, and the page, file and entity indexes that references resolve against.

A bare id from a global page names a global page; from a user page it names the global page
if there is one (global is authoritative), else the owner's page. A target with `/` names a
page by its path under a scope folder. Another user's pages are never visible.

How a name matches is the project's link resolution (`[links] resolution`): `exact` matches
the id or path as written; `obsidian` matches as Obsidian does (case-insensitively after NFC,
a path-qualified name by the end of the page's path, `aliases` as names, and, of several
pages of one name, the one whose path is shortest); `dendron` matches as Dendron does (a
note's name, dots and all, case-insensitively; `dendron://vault/note`; `a.b.*` names every
note below `a.b`). The checker, the graph and the records all ask the same PageIndex, so they
resolve every link alike.
"""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field, replace

from knowl_build.core.config import DENDRON, EXACT, OBSIDIAN
from knowl_build.core.layouts import GLOBAL as GLOBAL
from knowl_build.core.layouts import SCOPED, Layout, nfc
from knowl_build.core.linkpaths import (
    FILE,
    INTERNAL,
    OUTSIDE,
    PAGE,
    UNCHECKED,
    LinkSettings,
    excluded,
    locate,
)
from knowl_build.core.model import MARKDOWN, Link, Page
from knowl_build.core.names import holds_secret, owner_problem
from knowl_build.core.pageref import bundle_folder
from knowl_build.core.pageref import page_id as rel_id

# Dendron's cross-vault links: `dendron://<vault>/<note>`.
DENDRON_SCHEME = "dendron://"


@dataclass(frozen=True, slots=True)
class Place:
    scope: str
    owner: str | None
    id: str
    rel: str  # path under the scope folder without `.md`


def as_layout(layout: Layout | str) -> Layout:
    """A layout, or a bare knowledge folder in the scoped layout (SPEC 2.1)."""
    return layout if isinstance(layout, Layout) else Layout(layout)


def place(path: str, layout: Layout | str) -> Place | None:
    """Identity and scope from a page's path; None when no scope of the layout holds it
    (scoped: outside global/ and user/<o>/), when <o> is not a valid user name, or when the
    path under the scope folder holds a secret (see `misplaced` for why).

    A page's id and path are its name in every answer, the artifact, its URL on the site and
    the graph: a name that holds what the one redaction hides (`names.holds_secret`) is no
    page, as a user folder named so is no scope. Redacting the name instead would give
    several pages one name, `[redacted]`, that nothing can look up.

    A bundle's `index.md` or `_index.md` in a folder below the scope folder has its folder's
    name as its id (`pageref.page_id`), in every link resolution mode."""
    return _place(path, as_layout(layout))


# A language server places every page of the project again after each keystroke; the answer
# is the path's alone (a `Place` is immutable).
@functools.lru_cache(maxsize=1 << 17)
def _place(path: str, layout: Layout) -> Place | None:
    inner = layout.inner(path)
    split = layout.split(inner[:-3]) if inner is not None and inner.endswith(".md") else None
    if split is None:
        return None
    scope, parts = split
    rel = nfc("/".join(parts))
    if holds_secret(rel):
        return None
    if scope == GLOBAL:
        return Place(GLOBAL, None, rel_id(rel), rel)
    owner = scope.removeprefix("user:")
    if owner_problem(owner) is not None:
        return None
    return Place(scope, owner, rel_id(rel), rel)


def misplaced(path: str, layout: Layout | str) -> tuple[str, str]:
    """KB004's message and hint for a page that `place` gives no scope. The message quotes
    the path: a finding redacts it where it is made."""
    layout = as_layout(layout)
    inner = layout.inner(path) or ""
    owner_folder = layout.owner_part(inner)
    if owner_folder is not None:
        owner = nfc(owner_folder)
        problem = owner_problem(owner)
        if problem is not None:
            return (
                f"page {_visible(path)} is in user folder {_visible(owner)}, which is not a "
                f"valid user name: {problem}",
                "rename the folder to the user's name",
            )
    split = layout.split(inner[:-3]) if inner.endswith(".md") else None
    if split is not None and holds_secret(nfc("/".join(split[1]))):
        return (
            f"page {_visible(path)} is no page: its name holds a secret, and a page's name "
            "is printed in every answer, the artifact and the site",
            "rename the file (or folder); if the secret is real, rotate it: git history "
            "keeps the old name",
        )
    if layout.kind == SCOPED:
        return (
            f"page '{path}' is outside {layout.where_pages_go()}",
            "move it under global/ or user/<owner>/",
        )
    return (
        f"page '{path}' is directly in the users folder {layout.prefix}{layout.users}/, "
        "not in a user's folder",
        f"move it under {layout.where_pages_go()}",
    )


def _visible(name: str) -> str:
    """The name quoted, with control and invisible characters written as escapes."""
    shown = "".join(
        f"\\u{ord(char):04x}" if unicodedata.category(char)[0] == "C" else char for char in name
    )
    return f"'{shown}'"


def folder_scope(inner: str, layout: Layout | str = "knowledge") -> str | None:
    """The scope of a path below the knowledge folder (a page, or a folder at any depth):
    `global`, `user:<owner>`, or None where no scope holds it (scoped: outside global/ and
    user/<owner>/; flat: the users folder itself)."""
    split = as_layout(layout).split(inner, folder=True)
    return None if split is None else split[0]


def scope_label(scope: str) -> str:
    return f"{scope} scope"


@dataclass(slots=True)
class Resolution:
    pages: list[Page]  # the visible pages the target names (several with KB005 duplicates)
    hidden: list[Page]  # pages that match but are not visible from the referring page
    # Obsidian resolution: the other pages of the name when the choice among them was a tie
    # (the same shortest path length), so the link may not mean the page it resolved to.
    ambiguous: list[Page] = field(default_factory=list)
    # The page it resolved to is named so only when case is ignored (KB109): `[[revenue]]`
    # for `Revenue.md`, which a case-exact host publishes as a 404.
    case_only: bool = False
    # A Markdown link's path names a file or folder of the project that is no page (`file`),
    # leaves the project (`outside`, KB008), or is not checked (`unchecked`: site-absolute
    # without `[links] site_root`, or matched by `[links] exclude`).
    file: bool = False
    outside: bool = False
    unchecked: bool = False
    # With `outside`: the path goes into `.git/` or `.knowl/` (project-relative), which are
    # no files of the project.
    internal: str = ""
    # Files it names (project-relative) that are another scope's: a file under
    # `user/<owner>/` is that user's, not visible from a global page or another user's (KB104).
    hidden_files: list[str] = field(default_factory=list)


def _note_read(reads: set[str], found: Resolution) -> None:
    for pages in (found.pages, found.hidden, found.ambiguous):
        reads.update(page.path for page in pages)


def fold(name: str) -> str:
    """How Obsidian compares names: NFC, then case folded."""
    return nfc(name).casefold()


def aliases_of(page: Page) -> list[str]:
    """The `aliases` a page's frontmatter gives it (a string or a list of strings)."""
    value = page.parsed.frontmatter.get("aliases")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [nfc(a).strip() for a in value if isinstance(a, str) and a.strip()]


def _by_path_length(page: Page) -> tuple[int, str]:
    return (len(page.rel), page.rel)


class _Names:
    """A lookup table of names to pages per scope, and the scopes each name occurs in."""

    __slots__ = ("pages", "scopes")

    def __init__(self) -> None:
        self.pages: dict[tuple[str, str], list[Page]] = defaultdict(list)
        self.scopes: dict[str, set[str]] = defaultdict(set)

    def add(self, scope: str, name: str, page: Page) -> None:
        named = self.pages[(scope, name)]
        if page not in named:
            named.append(page)
        self.scopes[name].add(scope)


@dataclass(slots=True)
class PageIndex:
    pages: list[Page]
    by_id: dict[tuple[str, str], list[Page]] = field(default_factory=dict)
    by_rel: dict[tuple[str, str], list[Page]] = field(default_factory=dict)
    scopes_of_id: dict[str, set[str]] = field(default_factory=dict)
    scopes_of_rel: dict[str, set[str]] = field(default_factory=dict)
    files_by_name: dict[str, list[str]] = field(default_factory=dict)
    ids_by_scope: dict[str, list[str]] = field(default_factory=dict)
    mode: str = EXACT
    # Obsidian and Dendron modes: pages by folded name (ids, then Obsidian's aliases) and by
    # every folded path tail.
    names: _Names = field(default_factory=_Names)
    paths: _Names = field(default_factory=_Names)
    # (scope, id) pairs that several pages share (KB005, or pages in different folders in
    # Obsidian mode): their graph nodes are named by path, not id (`node_name`).
    shared: frozenset[tuple[str, str]] = frozenset()
    # What each (target, scope) resolves to, and the `targets` of each page by path, worked
    # out once: the rules, records, signatures and the graph all ask for them.
    _resolutions: dict[tuple[str, str], Resolution] = field(default_factory=dict)
    _targets: dict[str, tuple[Page, list[tuple[str, str, list[Page]]]]] = field(
        default_factory=dict
    )
    # Ids and paths by (scope, folded name), made when a broken name first needs them.
    _folded: dict[tuple[str, str], list[str]] | None = None
    # Markdown links (`resolve_link`): where paths lead, the pages by project-relative path,
    # and what each (folder of the linking page, target, scope) resolved to.
    link_settings: LinkSettings = field(default_factory=LinkSettings)
    _by_path: dict[str, Page] | None = None
    _paths: dict[tuple[str, str, str], Resolution] = field(default_factory=dict)
    layout: Layout = field(default_factory=Layout)
    # When set, the paths of every page a `resolve` or `resolve_link` answer holds are added
    # to it: what a page's checks read of other pages (`pipeline.recheck`).
    reads: set[str] | None = None
    # Where each page is in the tables by name (`with_pages`), found when first needed.
    _keys: dict[str, list[tuple[int, tuple[str, str]]]] | None = None

    @classmethod
    def build(
        cls,
        pages: list[Page],
        other_files: list[str],
        knowledge_dir: Layout | str,
        mode: str = EXACT,
        link_settings: LinkSettings | None = None,
    ) -> PageIndex:
        by_id: dict[tuple[str, str], list[Page]] = defaultdict(list)
        by_rel: dict[tuple[str, str], list[Page]] = defaultdict(list)
        scopes_of_id: dict[str, set[str]] = defaultdict(set)
        scopes_of_rel: dict[str, set[str]] = defaultdict(set)
        for page in pages:
            by_id[(page.scope, page.id)].append(page)
            scopes_of_id[page.id].add(page.scope)
            for rel in _rels(page.rel):
                by_rel[(page.scope, rel)].append(page)
                scopes_of_rel[rel].add(page.scope)
        names, paths = _Names(), _Names()
        if mode in (OBSIDIAN, DENDRON):
            for page in pages:
                names.add(page.scope, fold(page.id), page)
                if mode == OBSIDIAN and bundle_folder(page.rel) is not None:
                    # Obsidian knows `posts/a/index.md` as `index`, as it knows any file.
                    names.add(page.scope, fold(page.rel.rpartition("/")[2]), page)
                for rel in _rels(page.rel):
                    for tail in _tails(fold(rel)):
                        paths.add(page.scope, tail, page)
            for page in pages if mode == OBSIDIAN else ():  # an alias never outranks a name
                for alias in aliases_of(page):
                    key = fold(alias)
                    if "/" not in key and not any(
                        fold(p.id) == key for p in names.pages.get((page.scope, key), ())
                    ):
                        names.add(page.scope, key, page)
        files: dict[str, list[str]] = defaultdict(list)
        layout = as_layout(knowledge_dir)
        for path in other_files:
            inner = layout.inner(path) or path
            files[nfc(posixpath.basename(inner))].append(nfc(inner))
        ids_by_scope: dict[str, list[str]] = defaultdict(list)
        for scope, page_id in by_id:
            ids_by_scope[scope].append(page_id)
        for ids in ids_by_scope.values():
            ids.sort()
        return cls(
            pages,
            dict(by_id),
            dict(by_rel),
            dict(scopes_of_id),
            dict(scopes_of_rel),
            dict(files),
            dict(ids_by_scope),
            mode,
            names,
            paths,
            frozenset(key for key, named in by_id.items() if len(named) > 1),
            link_settings=link_settings or LinkSettings(),
            layout=layout,
        )

    def with_pages(self, edited: dict[str, Page]) -> PageIndex:
        """This index with each page of `edited` (by path) in place of the page at its path,
        which must have the same names (`pipeline.session`): the tables keep their keys, and
        what was resolved is worked out again as it is asked for. This index is not changed
        (a reader may be using it)."""
        if self._keys is None:  # where each page is in the tables, found once
            keys: dict[str, list[tuple[int, tuple[str, str]]]] = defaultdict(list)
            for number, table in enumerate(self._tables()):
                for key, found in table.items():
                    for page in found:
                        keys[page.path].append((number, key))
            self._keys = dict(keys)
        tables = [dict(table) for table in self._tables()]
        for path in edited:
            for number, key in self._keys.get(path, ()):
                tables[number][key] = [edited.get(p.path, p) for p in tables[number][key]]
        by_id, by_rel, named, pathed = tables
        names, paths = _Names(), _Names()
        names.pages, names.scopes = defaultdict(list, named), self.names.scopes
        paths.pages, paths.scopes = defaultdict(list, pathed), self.paths.scopes
        return replace(
            self,
            pages=[edited.get(p.path, p) for p in self.pages],
            by_id=by_id,
            by_rel=by_rel,
            names=names,
            paths=paths,
            _resolutions={},
            _targets={},
            _by_path=None,
            _paths={},
            reads=None,
        )

    def _tables(self) -> list[dict[tuple[str, str], list[Page]]]:
        return [self.by_id, self.by_rel, self.names.pages, self.paths.pages]

    def visible_scopes(self, scope: str) -> tuple[str, ...]:
        """Scopes a page of `scope` can see, in the order a bare id is tried."""
        return (GLOBAL,) if scope == GLOBAL else (GLOBAL, scope)

    def resolve(self, target: str, scope: str) -> Resolution:
        found = self._resolutions.get((target, scope))
        if found is None:
            found = self._resolutions[(target, scope)] = self._resolve(target, scope)
        if self.reads is not None:
            _note_read(self.reads, found)
        return found

    def _resolve(self, target: str, scope: str) -> Resolution:
        if self.mode == DENDRON:
            return self._resolve_dendron(fold(target).strip(), scope)
        target = nfc(target)
        written = target.strip("/")
        obsidian = self.mode == OBSIDIAN
        table: dict[tuple[str, str], list[Page]]
        scopes_of: dict[str, set[str]]
        if obsidian:
            target = fold(target.strip("/"))
            names = self.paths if "/" in target else self.names
            table, scopes_of = names.pages, names.scopes
        elif "/" in target:
            table, scopes_of = self.by_rel, self.scopes_of_rel
        else:
            table, scopes_of = self.by_id, self.scopes_of_id
        visible = self.visible_scopes(scope)
        for candidate in visible:
            found = table.get((candidate, target))
            if found:
                if not obsidian:
                    return Resolution(found, [])
                chosen = self._choose(found)
                chosen.case_only = not _named_exactly(chosen.pages[0], written)
                return chosen
        hidden = [
            page
            for other in sorted(scopes_of.get(target, ()))
            if other not in visible
            for page in table[(other, target)]
        ]
        return Resolution([], hidden)

    @staticmethod
    def _choose(found: list[Page]) -> Resolution:
        """Obsidian's choice among the pages of one name: the only one, else the one whose path
        is shortest; ambiguous when another has a path of that length too."""
        if len(found) == 1:
            return Resolution(found, [])
        ranked = sorted(found, key=_by_path_length)
        best = ranked[0]
        ties = [p for p in ranked[1:] if len(p.rel) == len(best.rel)]
        return Resolution([best], [], ties)

    def _resolve_dendron(self, target: str, scope: str) -> Resolution:
        """A folded target as Dendron resolves it. `dendron://vault/note` names the note in
        the folder of that name under the scope folder when there is one (a vault each),
        else the note of that name (the scope folder is the vault); a name ending in `*`
        every note it matches (a wildcard reference); a name, the note of that name: when
        notes in several folders share it, the first by path, and the others are ambiguous
        (Dendron asks which)."""
        vault = None
        if target.startswith(DENDRON_SCHEME):
            vault, _, target = target[len(DENDRON_SCHEME) :].partition("/")
            qualified = self._lookup(self.paths, f"{vault}/{target}", scope)
            if qualified.pages:
                return qualified
        if "*" in target:
            return Resolution(self._matching(target, scope), [])
        found = self._lookup(self.paths if "/" in target else self.names, target, scope)
        if len(found.pages) > 1:
            ranked = sorted(found.pages, key=lambda page: page.rel)
            # A vault named in the link leaves nothing to ask, though knowl cannot tell
            # which folder that vault is (dendron.yml names it).
            found = Resolution(ranked[:1], [], [] if vault is not None else ranked[1:])
        return found

    def _lookup(self, names: _Names, target: str, scope: str) -> Resolution:
        visible = self.visible_scopes(scope)
        for candidate in visible:
            found = names.pages.get((candidate, target))
            if found:
                return Resolution(list(found), [])
        hidden = [
            page
            for other in sorted(names.scopes.get(target, ()))
            if other not in visible
            for page in names.pages[(other, target)]
        ]
        return Resolution([], hidden)

    def _matching(self, pattern: str, scope: str) -> list[Page]:
        """The visible notes whose folded name a Dendron wildcard (`a.b.*`) matches."""
        wildcard = re.compile(".*".join(re.escape(part) for part in pattern.split("*")))
        visible = self.visible_scopes(scope)
        found = {
            page.path: page
            for (candidate, name), named in self.names.pages.items()
            if candidate in visible and wildcard.fullmatch(name)
            for page in named
        }
        return [found[path] for path in sorted(found)]

    def resolve_link(self, page: Page, link: Link) -> Resolution:
        """What a link of `page` names: a wiki-link's target by name (`resolve`), a Markdown
        link's by its path (`linkpaths.locate`: relative to the page, or site-absolute), and in
        Obsidian mode, when the path names no page, as Obsidian resolves it (from the vault
        root, or by file name). An empty target is the page itself."""
        if not link.target:
            return Resolution([page], [])
        if link.form != MARKDOWN:
            return self.resolve(link.target, page.scope)
        folder = posixpath.dirname(page.path)
        key = (folder, link.target, page.scope)
        found = self._paths.get(key)
        if found is None:
            found = self._paths[key] = self._resolve_path(page, link.target)
        if excluded(link.destination, self.link_settings.exclude):
            return Resolution([], [], unchecked=True)
        if self.reads is not None:
            _note_read(self.reads, found)
        return found

    def _resolve_path(self, page: Page, target: str) -> Resolution:
        if self._by_path is None:
            self._by_path = {nfc(p.path): p for p in self.pages}
        settings = self.link_settings
        hit = locate(page.path, nfc(target), self._by_path, settings.exists, settings.site_root)
        if hit.kind == PAGE:
            found = self._by_path[hit.path]
            if found.scope in self.visible_scopes(page.scope):
                return Resolution([found], [])
            return Resolution([], [found])
        if hit.kind == FILE:
            if self._file_visible(hit.path, page.scope):
                return Resolution([], [], file=True)
            return Resolution([], [], hidden_files=[hit.path])
        if hit.kind == INTERNAL:
            return Resolution([], [], outside=True, internal=hit.path)
        if hit.kind in (OUTSIDE, UNCHECKED):
            return Resolution([], [], outside=hit.kind == OUTSIDE, unchecked=hit.kind == UNCHECKED)
        if self.mode == OBSIDIAN and not target.startswith(("/", "../")):
            # Obsidian: the path from the vault root, or the page of that file name.
            name = target.removeprefix("./")
            if not is_file_target(name):
                named = self._file_named(name.removesuffix(".md"), page.scope)
                if named.pages or named.hidden:
                    return named
            elif self.find_file(name, page.scope):
                return Resolution([], [], file=True)
            else:
                return Resolution([], [], hidden_files=self.hidden_files(name, page.scope))
        return Resolution([], [])

    def _file_named(self, name: str, scope: str) -> Resolution:
        """Obsidian's page of a Markdown path by file name: as `resolve` names it, but never
        by an alias (`[x](Nota.md)` is a path, and an alias `Nota` is no file)."""
        found = self.resolve(name, scope)
        if "/" in name:
            return found  # a path tail: aliases hold no `/`
        key = fold(name)

        def is_file(page: Page) -> bool:
            return key in (fold(page.id), fold(page.rel.rpartition("/")[2]))

        hidden = [p for p in found.hidden if is_file(p)]
        if found.pages and not is_file(found.pages[0]):
            return Resolution([], hidden)
        ambiguous = [p for p in found.ambiguous if is_file(p)]
        if (len(hidden), len(ambiguous)) == (len(found.hidden), len(found.ambiguous)):
            return found
        return replace(found, hidden=hidden, ambiguous=ambiguous)

    def case_variants(self, target: str, scope: str) -> list[str]:
        """The ids (for a name with `/`, the paths) of visible pages that `target` names only
        when case is ignored, as they are written: an exact link's hint (KB103) says so."""
        if self._folded is None:
            folded: dict[tuple[str, str], list[str]] = defaultdict(list)
            for page_scope, name in (*self.by_id, *self.by_rel):
                folded[(page_scope, fold(name))].append(name)
            self._folded = dict(folded)
        key = fold(target.strip("/"))
        found = {
            name
            for candidate in self.visible_scopes(scope)
            for name in self._folded.get((candidate, key), ())
            if ("/" in name) == ("/" in key)
        }
        return sorted(found)

    def find_file(self, target: str, scope: str | None = None) -> bool:
        """A non-page target (`diagram.png`, `img/diagram.png`) names a file under knowledge/
        (with `scope`, one visible from that scope: a user's file is that user's)."""
        visible = None if scope is None else self.visible_scopes(scope)
        return any(
            visible is None or self._file_scope(path) in (None, *visible)
            for path in self._files_named(target)
        )

    def hidden_files(self, target: str, scope: str) -> list[str]:
        """The files under knowledge/ a non-page target names that are not visible from
        `scope` (another user's), project-relative, in path order."""
        visible = self.visible_scopes(scope)
        return sorted(
            f"{self.layout.prefix}{path}"
            for path in self._files_named(target)
            if self._file_scope(path) not in (None, *visible)
        )

    def _files_named(self, target: str) -> list[str]:
        target = nfc(target)
        candidates = self.files_by_name.get(posixpath.basename(target), [])
        if "/" not in target:
            return candidates
        return [path for path in candidates if path == target or path.endswith("/" + target)]

    def _file_visible(self, path: str, scope: str) -> bool:
        """Whether a project-relative file is visible from `scope`: anything outside the
        knowledge folder, or below it outside user/<owner>/, or in a visible scope."""
        inner = self.layout.inner(path)
        if inner is None:
            return True
        return self._file_scope(inner) in (None, *self.visible_scopes(scope))

    def _file_scope(self, inner: str) -> str | None:
        """The scope of a file below the knowledge folder (None where no scope holds it)."""
        return folder_scope(posixpath.dirname(inner), self.layout)

    def visible_ids(self, scope: str) -> list[str]:
        ids: list[str] = []
        for candidate in self.visible_scopes(scope):
            ids.extend(self.ids_by_scope.get(candidate, ()))
        return ids

    def node_name(self, page: Page) -> str:
        """What names the page in the reference graph: its id, or its path under the scope
        folder when another page of its scope has the same id."""
        return page.rel if (page.scope, page.id) in self.shared else page.id

    def targets(self, page: Page) -> list[tuple[str, str, list[Page]]]:
        """Each reference of a page as the checker resolves it, in record order: `refs`, then
        links and embeds (an empty target is the page itself), then `superseded_by`:
        (target, kind, the visible pages it names)."""
        found = self._targets.get(page.path)
        if found is None or found[0] is not page:
            found = self._targets[page.path] = (page, self._resolve_targets(page))
        return found[1]

    def _resolve_targets(self, page: Page) -> list[tuple[str, str, list[Page]]]:
        fields = page.parsed.fields
        out = [(r.value, "ref", self.resolve(r.value, page.scope).pages) for r in fields.refs]
        for link in page.parsed.links:
            found = self.resolve_link(page, link).pages
            out.append((link.target, "embed" if link.embed else "link", found))
        if fields.superseded_by is not None:
            value = fields.superseded_by.value
            out.append((value, "superseded_by", self.resolve(value, page.scope).pages))
        return out


def _named_exactly(page: Page, name: str) -> bool:
    """Whether `name` (NFC, as written) names `page` with the case of its id, its file name,
    an alias or the end of its path."""
    if "/" in name:
        return any(r == name or r.endswith("/" + name) for r in _rels(page.rel))
    return name in (page.id, page.rel.rpartition("/")[2]) or name in aliases_of(page)


def _rels(rel: str) -> tuple[str, ...]:
    """The path-qualified names of a page: its path under the scope folder without `.md`,
    and a bundle's folder (`posts/a` of `posts/a/index`), when that has a `/` too (a bare
    name is the id)."""
    folder = bundle_folder(rel)
    return (rel, folder) if folder is not None and "/" in folder else (rel,)


def _tails(rel: str) -> list[str]:
    """Every path-qualified name of a page path: `a/b/c` -> `b/c`, `a/b/c` (not the bare name,
    which by_id holds)."""
    parts = rel.split("/")
    return ["/".join(parts[i:]) for i in range(len(parts) - 1)][::-1] if len(parts) > 1 else []


def is_wildcard(target: str, mode: str) -> bool:
    """A Dendron wildcard reference (`![[a.b.*]]`): it names every note it matches, and no
    note matching is no finding."""
    return mode == DENDRON and "*" in target


def note_name(target: str) -> str:
    """The note a target names, without Dendron's `dendron://vault/` (for hints)."""
    if target.casefold().startswith(DENDRON_SCHEME):
        return target[len(DENDRON_SCHEME) :].partition("/")[2]
    return target


def is_file_target(target: str) -> bool:
    """A target with a file extension other than `.md` may name a file."""
    extension = posixpath.splitext(posixpath.basename(target))[1]
    return bool(extension) and extension != ".md"
