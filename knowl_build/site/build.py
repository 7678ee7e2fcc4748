"""`knowl site`: an artifact rendered as a static website. The table of contents of the site:

1. gather the artifact's global pages, their records and links (model.gather);
2. render every file of the layout (site/urls.py) whose inputs changed: the home page, each
   page, entity, tag and category, the review queue, the graph and search pages;
3. copy the styles and scripts (site/static/) to `assets/`;
4. remove the files of the previous build that no longer exist, save the manifest;
5. write the search shards and the graph data (site/search.py, site/graph.py).

It reads the artifact only (no git, no source tree), as the reader does, and only its global
pages: no file of the site holds anything of a user's page, nor of a page with a secret
finding (KB401), which the review queue names by its id only.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgspec
from markupsafe import Markup

from knowl_build import __version__
from knowl_build.parse.body import CODE_SHORTCODES
from knowl_build.reader.view import ArtifactView
from knowl_build.site import graph, model, search, urls
from knowl_build.site.markup import render_body
from knowl_build.site.output import SiteFolder
from knowl_build.site.templates import Templates, static_folder

ASSETS = "assets"
_ENCODER = msgspec.json.Encoder(order="deterministic")


@dataclass(frozen=True, slots=True)
class Settings:
    """The `[site]` configuration: the site's title (default: the repository's name), the URL
    it is published at (canonical links), a folder of templates that override the shipped
    ones (inside `root`, the project)."""

    title: str | None = None
    base_url: str | None = None
    templates: Path | None = None
    root: Path | None = None
    full: bool = False  # render every file again, whatever the manifest says
    # `[links] resolution = "dendron"`: wiki-links are `[[label|note]]`.
    label_first: bool = False
    # Hugo shortcodes whose bodies are code (`Config.code_names`).
    code_shortcodes: frozenset[str] = CODE_SHORTCODES


@dataclass
class SiteResult:
    out: Path
    pages: int  # global pages on the site
    entities: int
    rendered: int = 0  # files rendered (written or found identical)
    skipped: int = 0  # files whose inputs did not change
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    data_written: int = 0  # search and graph files written
    data_removed: int = 0
    seconds: float = 0.0
    notices: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _File:
    name: str  # relative to the site's root
    template: str
    context: dict[str, Any]
    body: Callable[[], str] | None = None  # the page's rendered body, made when needed
    body_inputs: Any = None


def _root_of(name: str) -> str:
    return "../" * name.count("/")


def _files(data: model.SiteData, code_shortcodes: frozenset[str]) -> list[_File]:
    files = [
        _File(urls.INDEX, "index.html", model.index_context(data)),
        _File(urls.STALE, "stale.html", model.stale_context(data)),
        _File(urls.GRAPH, "graph.html", {}),
        _File(urls.SEARCH, "search.html", {}),
    ]
    for page in data.pages:
        root = _root_of(page.file)

        def body(page: model.Page = page, root: str = root) -> str:
            return render_body(
                page.record,
                lambda path: None if (h := data.href_of_path(path)) is None else root + h,
                label_first=data.label_first,
                code_shortcodes=code_shortcodes,
            )

        files.append(
            _File(
                page.file,
                "page.html",
                model.page_context(data, page),
                body,
                model.body_inputs(data, page),
            )
        )
    for name in data.entities:
        files.append(
            _File(
                urls.file_name(urls.ENTITIES, name), "entity.html", model.entity_context(data, name)
            )
        )
    for tag, pages in data.tags.items():
        files.append(
            _File(
                urls.file_name(urls.TAGS, tag),
                "tag.html",
                {"tag": tag, "pages": model.list_context(data, pages)},
            )
        )
    for category, pages in data.categories.items():
        files.append(
            _File(
                urls.file_name(urls.CATEGORIES, category),
                "category.html",
                {"category": category, "pages": model.list_context(data, pages)},
            )
        )
    return files


def _inputs(file: _File, common: bytes) -> str:
    h = hashlib.sha256(common)
    h.update(_ENCODER.encode([file.template, file.context, file.body_inputs]))
    return h.hexdigest()[:32]


def compact_js(source: str) -> str:
    """A script of ours as the site ships it: without its comment lines (a line that starts a
    `//` comment, or a `/* ... */` block that starts a line) and the indentation of the others,
    a quarter fewer bytes to fetch before search answers. A line's code is kept as written."""
    out = []
    in_block = False
    for line in source.splitlines():
        text = line.strip()
        if in_block:
            in_block = "*/" not in text
            if in_block or text.endswith("*/"):
                continue
            text = text.split("*/", 1)[1].strip()
        elif text.startswith("/*"):
            if "*/" not in text:
                in_block = True
                continue
            if text.endswith("*/"):
                continue
        if text and not text.startswith("//"):
            out.append(text)
    return "\n".join(out) + "\n"


def _copy_assets(folder: SiteFolder) -> None:
    static = static_folder()
    for path in sorted(p for p in static.iterdir() if p.is_file()):
        data = path.read_bytes()
        if path.suffix == ".js":
            data = compact_js(data.decode("utf-8")).encode("utf-8")
        name = f"{ASSETS}/{path.name}"
        inputs = hashlib.sha256(data).hexdigest()[:32]
        if not folder.current(name, inputs):
            folder.put(name, inputs, data)


def build(view: ArtifactView, out: Path, settings: Settings = Settings()) -> SiteResult:
    """Render `view` into `out` (made if missing)."""
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    templates = Templates(settings.templates, settings.root)
    data = model.gather(view, settings.label_first)
    title = settings.title or view.repo
    base_url = settings.base_url
    site = {"title": title, "base_url": base_url, "version": __version__}
    rendering = [settings.label_first, sorted(settings.code_shortcodes)]
    common = _ENCODER.encode([__version__, templates.digest, site, rendering])
    folder = SiteFolder(out, settings.full)
    result = SiteResult(out, len(data.pages), len(data.entities))
    for file in _files(data, settings.code_shortcodes):
        inputs = _inputs(file, common)
        if folder.current(file.name, inputs):
            continue
        root = _root_of(file.name)
        context = {
            **file.context,
            "site": site,
            "root": root,
            "file": file.name,
            "canonical": f"{base_url}{_href_of(file.name)}" if base_url else None,
        }
        if file.body is not None:
            context["body"] = Markup(file.body())
        folder.put(file.name, inputs, templates.render(file.template, context).encode("utf-8"))
    _copy_assets(folder)
    folder.prune()
    folder.save()
    result.rendered, result.skipped = folder.rendered, folder.skipped
    result.written, result.unchanged, result.removed = (
        folder.written,
        folder.unchanged,
        folder.removed,
    )
    result.notices += _collisions(data)
    if data.withheld_ids:
        result.notices.append(
            f"site: {len(data.withheld_ids)} page(s) left out, they hold a secret (KB401): "
            + ", ".join(data.withheld_ids)
        )
    _data_files(view, out, data, result)
    result.seconds = time.perf_counter() - started
    return result


def _href_of(name: str) -> str:
    """A file's link from the site's root (its name, percent-encoded once more)."""
    head, _, tail = name.rpartition("/")
    if not head:
        return name
    return f"{head}/{quote(tail, safe=urls.SAFE)}"


def _collisions(data: model.SiteData) -> list[str]:
    """Pages whose files differ only in case: one file on a case-insensitive file system."""
    seen: dict[str, str] = {}
    notices = []
    for page in data.pages:
        other = seen.setdefault(page.file.casefold(), page.entry.id)
        if other != page.entry.id:
            notices.append(
                f"site: pages '{other}' and '{page.entry.id}' differ only in case; a "
                "case-insensitive file system (macOS, Windows) keeps one of their files"
            )
    return notices


def _data_files(view: ArtifactView, out: Path, data: model.SiteData, result: SiteResult) -> None:
    """The search shards and the graph data (search.py and artifacts/graph.py), of the same pages."""
    pages = [(page.href, page.entry) for page in data.pages]
    records = {page.entry.key: page.record for page in data.pages}
    written = search.write(view, out, pages, records).merge(graph.write(view, out, data.withheld))
    result.data_written = len(written.written)
    result.data_removed = len(written.removed)
