"""Rename a page or a heading: one workspace edit that rewrites every link to it in the
link's own form (wiki or Markdown, the alias text, fragment and encoding kept), as
`knowl fix` rewrites links to a moved page, and renames the file.

A page is renamed from a link to it (or a `refs` entry naming it): the project is analysed
again with the page at its new path, and each link that then breaks is rewritten by
`writes.relink` (each rewrite checked by scanning the page again). A heading is renamed from
its line: the heading's text, and the links that name it (by text in a wiki link, by slug in
a Markdown link's fragment), change. Nothing else can be renamed (an entity is renamed in the
semantic layer, then `knowl fix` renames its uses)."""

from __future__ import annotations

import asyncio
import posixpath
import re
from typing import Any, NamedTuple

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from knowl_build.core.linkpaths import _github_slug
from knowl_build.core.model import MARKDOWN, Link, Page, TextIndex
from knowl_build.core.names import MAX_NAME_CHARS
from knowl_build.lsp.lookup import At, at, target_of
from knowl_build.lsp.workspace import Workspace
from knowl_build.pipeline.analysis import Analysis
from knowl_build.secrets.scanner import redact
from knowl_build.writes import relink


class Refused(Exception):
    """What cannot be renamed, and why (the client shows the message)."""


class Edit(NamedTuple):
    """Replace `old` at character offset `start` of a file's text with `new`."""

    path: str
    start: int
    old: str
    new: str


class Plan(NamedTuple):
    edits: list[Edit]
    moved: tuple[str, str] | None  # (old path, new path) of a renamed page


class Target(NamedTuple):
    kind: str  # page | heading
    page: Page
    start: int  # offset of the renamed text in the file under the cursor
    text: str  # the name as it stands there


_BAD_NAME = re.compile(r"[\x00-\x1f\x7f/\\:#|\[\]^]")


def target(ws: Workspace, path: str, line: int, column: int) -> Target:
    """What a rename at the cursor would rename (prepareRename), or Refused."""
    page, analysis, text = ws.page(path), ws.analysis, ws.text(path)
    if page is None or analysis is None or text is None:
        raise Refused("only a page of the project can be renamed from")
    found = at(page, line, column)
    if found is None:
        raise Refused("put the cursor on a link to a page or on a heading to rename it")
    index = TextIndex(text)
    if found.kind == "heading" and found.heading is not None:
        start = _heading_start(text, index, found.heading.line, found.heading.text)
        if start is None:
            raise Refused("a heading with inline markup is renamed by hand")
        return Target("heading", page, start, found.heading.text)
    if found.kind == "entity":
        raise Refused("an entity is renamed in the semantic layer; then knowl fix renames its uses")
    resolution = target_of(analysis.index, page, found)
    if resolution is None or len(resolution.pages) != 1:
        raise Refused("this link names no single page")
    named = resolution.pages[0]
    start = _name_start(text, index, found)
    return Target("page", named, start if start is not None else -1, named.id)


def plan(ws: Workspace, path: str, line: int, column: int, new_name: str) -> Plan:
    chosen = target(ws, path, line, column)
    new_name = new_name.strip()
    if chosen.kind == "heading":
        return _rename_heading(ws, chosen.page, chosen.text, new_name)
    return _rename_page(ws, chosen.page, new_name)


def _heading_start(text: str, index: TextIndex, line: int, heading: str) -> int | None:
    begin = index.starts[line - 1]
    end = text.find("\n", begin)
    row = text[begin : end if end != -1 else len(text)]
    marks = len(row) - len(row.lstrip(" #"))
    at_ = row.find(heading, marks) if heading else -1
    return begin + at_ if at_ != -1 else None


def _name_start(text: str, index: TextIndex, found: At) -> int | None:
    begin = index.starts[found.span.line - 1] + found.span.column - 1
    if found.link is not None and found.link.target:
        at_ = text.find(found.link.target, begin)
        return at_ if at_ != -1 else None
    return begin


def _check_name(name: str) -> str:
    name = name.removesuffix(".md")
    if not name or name in (".", "..") or name.startswith("."):
        raise Refused("a page's new name must not be empty or start with a dot")
    if _BAD_NAME.search(name) or len(name) > MAX_NAME_CHARS:
        raise Refused(f"{name!r}: a page's name has no / \\ : # | [ ] ^ or control characters")
    return name


def _rename_page(ws: Workspace, page: Page, new_name: str) -> Plan:
    name = _check_name(new_name)
    new_path = posixpath.join(posixpath.dirname(page.path), name + ".md")
    return Plan(moved_links(ws, page, new_path), (page.path, new_path))


def moved_links(ws: Workspace, page: Page, new_path: str) -> list[Edit]:
    """The edits that keep every link and ref to `page` (and the page's own relative links)
    right once it is at `new_path`."""
    analysis = ws.analysis
    assert analysis is not None
    taken = {p.path for p in analysis.pages} | set(analysis.discovery.other_files)
    if new_path in taken or ws.absolute(new_path).exists():
        raise Refused(f"{new_path} exists already")
    if not ws.could_be_page(new_path):
        raise Refused(f"{new_path} is no page of the knowledge folder")
    moved = ws.analyse_moved(page.path, new_path)
    edits: list[Edit] = []
    for other in sorted(moved.pages, key=lambda p: p.path):
        if not any(_broken(moved, other, link) for link in other.parsed.links):
            continue  # most pages: nothing to rewrite, no text to read
        origin = page.path if other.path == new_path else other.path
        text = ws.text(origin)
        if text is None:
            continue
        for change in _relinks(moved, other, text, {page.path: new_path}):
            edits.append(Edit(origin, change.start, change.old, change.new))
    name = posixpath.basename(new_path)[: -len(".md")]
    edits += _renamed_refs(ws, analysis, page, name)
    return sorted({e for e in edits if e.old != e.new})


def will_rename(ws: Workspace, old_path: str, new_path: str) -> list[Edit]:
    """`workspace/willRenameFiles`: the editor is about to rename or move a page's file."""
    page = ws.page(old_path)
    if page is None or ws.analysis is None:
        return []
    try:
        return moved_links(ws, page, new_path)
    except Refused:
        return []  # the editor renames the file anyway; there is nothing to keep right


def _relinks(
    analysis: Analysis, page: Page, text: str, moves: dict[str, str]
) -> list[relink.Relink]:
    """`writes.relink.moved_links` on the editor's text of the page rather than the file's.

    It should take the text itself (then this copy goes): it reads the file from disk."""
    if not page.parsed.links:
        return []
    origin = {new: old for old, new in moves.items()}.get(page.path)
    index = TextIndex(text)
    places = relink._Places(analysis)
    found: dict[int, relink.Relink] = {}
    meant: dict[int, tuple[Link, str]] = {}
    for link in page.parsed.links:
        if not _broken(analysis, page, link):
            continue
        if link.form == MARKDOWN:
            made = relink._markdown(analysis, places, page, link, text, moves, origin)
        else:
            made = relink._wiki(analysis, places, page, link, text, index, moves)
        if made is not None and made[0].old != made[0].new and made[0].start not in found:
            found[made[0].start] = made[0]
            meant[made[0].start] = (link, made[1])
    edits = [found[start] for start in sorted(found)]
    return relink._verified(analysis, page, text, edits, meant).edits


def _broken(analysis: Analysis, page: Page, link: Link) -> bool:
    """Whether the link names nothing (what `knowl fix` relinks)."""
    resolution = analysis.index.resolve_link(page, link)
    return not (
        resolution.pages
        or resolution.hidden
        or resolution.file
        or resolution.unchecked
        or resolution.outside
    )


def _renamed_refs(ws: Workspace, analysis: Analysis, page: Page, name: str) -> list[Edit]:
    """`refs` and `superseded_by` entries naming the page, renamed (as written: by id)."""
    out = []
    for other in analysis.pages:
        fields = other.parsed.fields
        named = [
            ref
            for ref in [*fields.refs, *([fields.superseded_by] if fields.superseded_by else [])]
            if ref.value == page.id
            and analysis.index.resolve(ref.value, other.scope).pages == [page]
        ]
        text = ws.text(other.path) if named else None
        if text is None:
            continue
        index = TextIndex(text)
        for ref in named:
            start = index.starts[ref.span.line - 1] + ref.span.column - 1
            at_ = text.find(ref.value, start)
            if at_ != -1:
                out.append(Edit(other.path, at_, ref.value, name))
    return out


def _rename_heading(ws: Workspace, page: Page, old: str, new: str) -> Plan:
    if not new or "\n" in new or "#" in new or "|" in new or "]" in new:
        raise Refused("a heading's new text must be one line without # | ]")
    analysis = ws.analysis
    text = ws.text(page.path)
    assert analysis is not None and text is not None
    index = TextIndex(text)
    edits: list[Edit] = []
    heading = next(h for h in page.parsed.headings if h.text == old)
    start = _heading_start(text, index, heading.line, old)
    if start is not None:
        edits.append(Edit(page.path, start, old, new))
    old_slug, new_slug = _github_slug(old), _github_slug(new)
    for other in analysis.pages:
        naming = [
            link
            for link in other.parsed.links
            if link.heading is not None
            and page
            in ([other] if not link.target else analysis.index.resolve_link(other, link).pages)
        ]
        other_text = ws.text(other.path) if naming else None
        if other_text is None:
            continue
        other_index = TextIndex(other_text)
        for link in naming:
            assert link.heading is not None
            if link.form == MARKDOWN:
                if heading.anchor is None and link.heading == old_slug:
                    edit = _fragment(other, other_text, link, old_slug, new_slug)
                    if edit is not None:
                        edits.append(edit)
            elif link.heading.strip().casefold() == old.casefold():
                begin = other_index.starts[link.span.line - 1] + link.span.column - 1
                at_ = other_text.find("#" + link.heading, begin, begin + len(link.raw))
                if at_ != -1:
                    edits.append(Edit(other.path, at_ + 1, link.heading, new))
    return Plan(sorted(set(edits)), None)


def _fragment(page: Page, text: str, link: Link, old: str, new: str) -> Edit | None:
    if link.at < 0:
        return None
    at_ = text.find("#" + old, link.at, link.at + len(link.destination))
    return Edit(page.path, at_ + 1, old, new) if at_ != -1 else None


def _failed(reason: str) -> JsonRpcException:
    return JsonRpcException(message=redact(reason), code=-32803)  # RequestFailed


async def _in_thread(function: Any, *rest: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, function, *rest)


async def _prepare(ls: Any, params: types.PrepareRenameParams) -> Any:
    """The name under the cursor a rename would change, or a refusal saying why not."""
    path = ls.path(params.text_document.uri)
    if path is None or not await ls.wait():
        raise _failed("not a page of the project")
    where = ls.positions(path)
    line, column = where.cursor(params.position)
    try:
        chosen = target(ls.ws, path, line, column)
    except Refused as exc:
        raise _failed(str(exc)) from None
    if chosen.start < 0:
        return types.PrepareRenamePlaceholder(
            range=types.Range(params.position, params.position), placeholder=chosen.text
        )
    begin = TextIndex(ls.ws.text(path)).position(chosen.start)
    end = TextIndex(ls.ws.text(path)).position(chosen.start + len(chosen.text))
    span = types.Range(where.position(*begin), where.position(*end))
    return types.PrepareRenamePlaceholder(range=span, placeholder=chosen.text)


async def _rename(ls: Any, params: types.RenameParams) -> types.WorkspaceEdit | None:
    """One workspace edit rewriting every link to the renamed page or heading."""
    path = ls.path(params.text_document.uri)
    if path is None or not await ls.wait():
        raise _failed("not a page of the project")
    line, column = ls.positions(path).cursor(params.position)
    try:
        made = await _in_thread(plan, ls.ws, path, line, column, params.new_name)
    except Refused as exc:
        raise _failed(str(exc)) from None
    return _workspace_edit(ls, made)


async def _will_rename_files(ls: Any, params: types.RenameFilesParams) -> Any:
    """Files renamed in the editor: the links to them, rewritten before the move."""
    if not await ls.wait():
        return None
    edits: list[Edit] = []
    for renamed in params.files:
        old, new = ls.path(renamed.old_uri), ls.path(renamed.new_uri)
        if old is not None and new is not None:
            edits += await _in_thread(will_rename, ls.ws, old, new)
    return _workspace_edit(ls, Plan(edits, None))


def _workspace_edit(ls: Any, made: Plan) -> types.WorkspaceEdit:
    changes: list[Any] = []
    by_path: dict[str, list[Edit]] = {}
    for edit in made.edits:
        by_path.setdefault(edit.path, []).append(edit)
    for path, edits in sorted(by_path.items()):
        text = ls.ws.text(path) or ""
        index, where = TextIndex(text), ls.positions(path)
        text_edits = []
        for edit in edits:
            begin, end = index.position(edit.start), index.position(edit.start + len(edit.old))
            span = types.Range(where.position(*begin), where.position(*end))
            text_edits.append(types.TextEdit(range=span, new_text=edit.new))
        document = types.OptionalVersionedTextDocumentIdentifier(uri=ls.uri(path), version=None)
        changes.append(types.TextDocumentEdit(text_document=document, edits=text_edits))
    if made.moved is not None:
        old, new = made.moved
        changes.append(types.RenameFile(old_uri=ls.uri(old), new_uri=ls.uri(new)))
    return types.WorkspaceEdit(document_changes=changes)


def register(server: LanguageServer) -> None:
    """Rename, prepareRename and willRenameFiles on `server`."""
    server.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)(_prepare)
    server.feature(types.TEXT_DOCUMENT_RENAME)(_rename)
    pages = types.FileOperationFilter(pattern=types.FileOperationPattern(glob="**/*.md"))
    server.feature(
        types.WORKSPACE_WILL_RENAME_FILES,
        types.FileOperationRegistrationOptions(filters=[pages]),
    )(_will_rename_files)
