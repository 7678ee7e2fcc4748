"""Completion, hover, definitions, references and symbols, answered from the last analysis
and the buffer's text (which may be a keystroke ahead of it)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable

from lsprotocol import types

from knowl_build import DOCS_URL
from knowl_build.core import vocabulary
from knowl_build.core.config import OBSIDIAN
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.core.model import Entity, Page
from knowl_build.core.resolve import aliases_of
from knowl_build.history.records import History
from knowl_build.lsp.lookup import At, at, heading_line, target_of
from knowl_build.lsp.positions import Positions
from knowl_build.lsp.workspace import Workspace
from knowl_build.rules.fields import META_FIELDS, TOP_FIELDS
from knowl_build.secrets.scanner import redact

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}
VALUES = {
    "usage_mode": vocabulary.USAGE_MODES,
    "status": vocabulary.STATUSES,
    "category": vocabulary.CATEGORIES,
    "freshness": vocabulary.FRESHNESS,
    "visibility": vocabulary.VISIBILITIES,
    "provenance": vocabulary.PROVENANCES,
    "frozen": ("true", "false"),
}
MAX_ITEMS = 500  # symbols per answer
# Completions per answer: the list says it is incomplete, so the client asks again as the
# name typed grows (each item made costs; 200 fill any menu).
MAX_COMPLETIONS = 200

Uri = Callable[[str], str]  # a project-relative path to its URI


def diagnostic(found: Diagnostic, where: Positions) -> types.Diagnostic:
    """A finding as the protocol's diagnostic: `knowl check`'s code, position, severity,
    message and hint, the rule's documentation as `codeDescription`."""
    if found.end_line is not None and found.end_column is not None:
        span = where.range(found.line, found.column, found.end_line, found.end_column)
    else:
        span = where.range(found.line, found.column, found.line, found.column)
    message = found.message if not found.hint else f"{found.message}\nhint: {found.hint}"
    return types.Diagnostic(
        range=span,
        message=message,
        severity=SEVERITY.get(found.severity, types.DiagnosticSeverity.Information),
        code=found.code,
        code_description=types.CodeDescription(href=f"{DOCS_URL}/rules/#{found.code.lower()}"),
        source="knowl",
        data={"code": found.code, "line": found.line, "subject": found.subject},
    )


# Completion ----------------------------------------------------------------------------

WIKI_HEADING = re.compile(r"!?\[\[([^\[\]|#]*)#([^\[\]|#]*)$")
WIKI_PAGE = re.compile(r"!?\[\[([^\[\]|#]*)$")
MD_TARGET = re.compile(r"\]\(<?([^()<>\s]*)$")
DIRECTIVE = re.compile(r"(?:<<|\{\{)\s*sl:([\w.\-]*)$")
KEY_VALUE = re.compile(r"^\s*([a-z_]+)\s*:\s*([\w-]*)$")
LIST_ITEM = re.compile(r"^\s*-\s*[\"']?([\w.\-/ ]*)$")
FLOW_ITEM = re.compile(r"^\s*([a-z_]+)\s*:\s*\[(?:[^\]]*,)?\s*[\"']?([\w.\-/ ]*)$")
TOP_KEY = re.compile(r"^([a-z_]*)$")
META_KEY = re.compile(r"^\s+([a-z_]*)$")


def frontmatter_end(where: Positions) -> int:
    """The 1-based line of the frontmatter's closing `---` (0: no frontmatter)."""
    if where.line_text(1).strip() != "---":
        return 0
    for line in range(2, len(where.lines) + 1):
        if where.line_text(line).strip() in ("---", "..."):
            return line
    return 0


def _list_key(where: Positions, line: int) -> str | None:
    """The key a block list item on `line` belongs to."""
    for above in range(line - 1, 0, -1):
        text = where.line_text(above)
        if LIST_ITEM.match(text) or not text.strip():
            continue
        match = re.match(r"^\s*([a-z_]+)\s*:\s*$", text)
        return match.group(1) if match else None
    return None


def complete(
    ws: Workspace, path: str, where: Positions, line: int, column: int, uri: Uri
) -> types.CompletionList:
    analysis, page = ws.analysis, ws.page(path)
    before = where.line_text(line)[: column - 1]
    items: list[types.CompletionItem] = []

    def replace(typed: str) -> types.Range:
        return types.Range(where.position(line, column - len(typed)), where.position(line, column))

    def add(label: str, typed: str, **extra: object) -> None:
        edit = types.TextEdit(range=replace(typed), new_text=label)
        items.append(types.CompletionItem(label=label, text_edit=edit, **extra))  # type: ignore[arg-type]

    if analysis is None:
        return types.CompletionList(is_incomplete=True, items=[])
    end = frontmatter_end(where)
    if end and line < end:
        _complete_frontmatter(ws, page, where, line, before, add)
    elif match := WIKI_HEADING.search(before):
        _complete_anchor(_page_named(ws, page, match.group(1)), match.group(2), add)
    elif match := WIKI_PAGE.search(before):
        for candidate in _visible(ws, page):
            _page_item(ws, candidate, match.group(1), add)
            if len(items) >= MAX_COMPLETIONS:  # the list is cut there
                break
    elif page is not None and (match := MD_TARGET.search(before)):
        _complete_path(ws, page, match.group(1), add)
    elif match := DIRECTIVE.search(before):
        for entity in _entities(ws):
            _entity_item(entity, match.group(1), add)
    # Incomplete: the candidates were filtered by what was typed, so the client asks again.
    return types.CompletionList(is_incomplete=True, items=items[:MAX_COMPLETIONS])


def _complete_anchor(target: Page | None, typed: str, add: Callable[..., None]) -> None:
    """After `[[page#`: the target's headings, or its `^block` ids after `#^`."""
    if target is None:
        return
    if typed.startswith("^"):
        for block in target.parsed.blocks:
            add("^" + block, typed, kind=types.CompletionItemKind.Reference)
        return
    for heading in target.parsed.headings:
        add(
            heading.text, typed, kind=types.CompletionItemKind.Reference, detail="#" * heading.level
        )


def _complete_path(ws: Workspace, page: Page, typed: str, add: Callable[..., None]) -> None:
    """In a Markdown link's destination: the pages and files, relative to this page."""
    analysis = ws.analysis
    assert analysis is not None
    folder = posixpath.dirname(page.path) or "."
    files = [p.path for p in analysis.pages] + list(analysis.discovery.other_files)
    for target_path in sorted(files):
        shown = posixpath.relpath(target_path, folder)
        if target_path != page.path and _matches(typed, shown):
            add(shown, typed, kind=types.CompletionItemKind.File)


def _complete_frontmatter(
    ws: Workspace,
    page: Page | None,
    where: Positions,
    line: int,
    before: str,
    add: Callable[..., None],
) -> None:
    key: str | None = None
    typed = ""
    if match := FLOW_ITEM.match(before):
        key, typed = match.group(1), match.group(2)
    elif (match := LIST_ITEM.match(before)) and (key := _list_key(where, line)) is not None:
        typed = match.group(1)
    elif match := KEY_VALUE.match(before):
        name, typed = match.group(1), match.group(2)
        for value in VALUES.get(name, ()):
            add(value, typed, kind=types.CompletionItemKind.EnumMember)
        return
    elif match := TOP_KEY.match(before):
        for name in (*TOP_FIELDS, "aliases"):
            add(
                name,
                match.group(1),
                kind=types.CompletionItemKind.Property,
                insert_text=f"{name}: ",
            )
        return
    elif match := META_KEY.match(before):
        for name in META_FIELDS:
            add(name, match.group(1), kind=types.CompletionItemKind.Property)
        return
    if key == "sl_refs":
        for entity in _entities(ws):
            _entity_item(entity, typed, add)
    elif key in ("refs", "superseded_by"):
        for candidate in _visible(ws, page):
            _page_item(ws, candidate, typed, add)


def _visible(ws: Workspace, page: Page | None) -> list[Page]:
    analysis = ws.analysis
    if analysis is None:
        return []
    scopes = analysis.index.visible_scopes(page.scope if page is not None else "global")
    return [p for p in analysis.pages if p.scope in scopes and p is not page]


def _page_named(ws: Workspace, page: Page | None, name: str) -> Page | None:
    if page is None or ws.analysis is None:
        return None
    if not name.strip():
        return page
    found = ws.analysis.index.resolve(name.strip(), page.scope).pages
    return found[0] if found else None


def _matches(typed: str, name: str) -> bool:
    """Whether a candidate is offered for what was typed (the client filters further: the
    list says it is incomplete, so it asks again as the name grows)."""
    return not typed.strip() or typed.strip().casefold() in name.casefold()


def _page_item(ws: Workspace, page: Page, typed: str, add: Callable[..., None]) -> None:
    analysis = ws.analysis
    assert analysis is not None
    shared = (page.scope, page.id) in analysis.index.shared
    name = page.rel if shared else page.id
    names = [name, *(aliases_of(page) if analysis.index.mode == OBSIDIAN else [])]
    if not any(_matches(typed, n) for n in [*names, page.title]):
        return
    summary = redact(page.parsed.fields.summary) or None
    kind = types.CompletionItemKind.File
    add(name, typed, kind=kind, detail=redact(page.title), documentation=summary)
    for alias in names[1:]:
        add(alias, typed, kind=kind, detail=f"alias of {page.id}", documentation=summary)


def _entities(ws: Workspace) -> list[Entity]:
    analysis = ws.analysis
    return sorted(analysis.layer.entities.values(), key=lambda e: e.name) if analysis else []


def _expression(entity: Entity) -> str:
    definition = entity.definition
    for key in ("expr", "column", "table", "type"):
        value = definition.get(key)
        if isinstance(value, str | int | float) and str(value):
            return str(value)
    return ""


def _entity_item(entity: Entity, typed: str, add: Callable[..., None]) -> None:
    if not _matches(typed, entity.name):
        return
    expression = _expression(entity)
    detail = f"{entity.kind}: {expression}" if expression else entity.kind
    add(
        entity.name,
        typed,
        kind=types.CompletionItemKind.Field,
        detail=redact(detail),
        documentation=types.MarkupContent(types.MarkupKind.Markdown, _entity_text(entity)),
    )


# Hover ----------------------------------------------------------------------------------


def _entity_text(entity: Entity, page: Page | None = None, history: History | None = None) -> str:
    lines = [f"**{entity.name}** ({entity.kind}, {entity.origin})", ""]
    for key in entity.attributes:
        value = entity.definition.get(key)
        if key == "fingerprint":
            value = entity.fingerprint
        if value not in (None, ""):
            lines.append(f"- `{key}`: {value}")
    lines += ["", f"defined in `{entity.path}` line {entity.line}"]
    if page is not None:
        bound = {b.entity: b.fingerprint for b in page.parsed.fields.bound_fingerprints}
        if entity.name in bound:
            if bound[entity.name] == entity.fingerprint:
                lines.append("\nthis page is bound to the live definition")
            else:
                lines.append(
                    f"\n**drifted**: this page is bound to `{bound[entity.name]}`, the live "
                    f"definition is `{entity.fingerprint}` (`knowl review` re-binds it)"
                )
                lines += _drift(history, entity, bound[entity.name])
    return redact("\n".join(lines))


def _drift(history: History | None, entity: Entity, bound: str) -> list[str]:
    """The definition the page was written against, the live one, and the commit between."""
    if history is None:
        return []
    out = []
    before, after = history.definitions.get(bound), history.definitions.get(entity.fingerprint)
    if before is not None:
        out.append(f"\nbefore: `{before}`")
    if after is not None:
        out.append(f"after: `{after}`")
    record = history.entities.get(entity.name)
    versions = record.versions if record is not None else []
    seen = [i for i, (_, fingerprint) in enumerate(versions) if fingerprint == bound]
    if seen and seen[-1] + 1 < len(versions):
        commit = versions[seen[-1] + 1][0]
        known = history.commits.get(commit or "")
        if known is not None:
            out.append(f"changed in {known.sha[:12]} ({known.subject})")
        elif commit:
            out.append(f"changed in {commit[:12]}")
    return out


def hover(ws: Workspace, path: str, line: int, column: int) -> str | None:
    page, analysis = ws.page(path), ws.analysis
    if page is None or analysis is None:
        return None
    found = at(page, line, column)
    if found is None:
        return None
    if found.kind == "entity":
        entity = ws.entity(found.name)
        if entity is None:
            return f"**{redact(found.name)}**: no such entity in the semantic layer"
        return _entity_text(entity, page, analysis.history)
    resolution = target_of(analysis.index, page, found)
    if resolution is None:
        return None
    if not resolution.pages:
        shown = found.link.raw if found.link is not None else found.name
        return redact(f"`{shown}`: no page of this name is visible from this page")
    target = resolution.pages[0]
    assessment = analysis.assessments.get(target.path)
    lines = [f"**{target.title}**", "", f"`{target.path}`"]
    if target.parsed.fields.summary:
        lines += ["", target.parsed.fields.summary]
    if assessment is not None:
        lines += ["", f"freshness: {assessment.value}"]
    return redact("\n".join(lines))


# Definitions and references -------------------------------------------------------------


def definition(ws: Workspace, path: str, line: int, column: int) -> list[tuple[str, int, int]]:
    """Where what is under the cursor is defined: (path, 1-based line, 1-based column)."""
    page, analysis = ws.page(path), ws.analysis
    if page is None or analysis is None:
        return []
    found = at(page, line, column)
    if found is None:
        return []
    if found.kind == "entity":
        entity = ws.entity(found.name)
        return [(entity.path, entity.line, 1)] if entity is not None else []
    resolution = target_of(analysis.index, page, found)
    if resolution is None:
        return []
    heading = found.link.heading if found.link is not None else None
    if heading and heading.startswith("^"):
        return [(p.path, _block_line(ws, p.path, heading[1:].strip()), 1) for p in resolution.pages]
    return [(p.path, heading_line(p, heading), 1) for p in resolution.pages]


def _block_line(ws: Workspace, path: str, block: str) -> int:
    """The 1-based line that a block id (`^id` ending it) marks, 1 when none does."""
    text = ws.text(path) or ""
    for number, line in enumerate(text.split("\n"), 1):
        if line.rstrip().endswith(" ^" + block) or line.strip() == "^" + block:
            return number
    return 1


def references(ws: Workspace, path: str, line: int, column: int) -> list[tuple[str, At]]:
    """The pages that link to the page under the cursor (or to this page), or that use the
    entity under it: each place, in path order."""
    page, analysis = ws.page(path), ws.analysis
    if page is None or analysis is None:
        return []
    found = at(page, line, column)
    if found is not None and found.kind == "entity":
        return list(_uses(analysis.pages, found.name))
    target = page
    if found is not None and found.kind in ("link", "ref"):
        resolution = target_of(analysis.index, page, found)
        if resolution is None or not resolution.pages:
            return []
        target = resolution.pages[0]
    out: list[tuple[str, At]] = []
    for other in sorted(analysis.pages, key=lambda p: p.path):
        for link in other.parsed.links:
            if link.target and target in analysis.index.resolve_link(other, link).pages:
                out.append((other.path, At("link", link.span, link=link)))
        for ref in other.parsed.fields.refs:
            if target in analysis.index.resolve(ref.value, other.scope).pages:
                out.append((other.path, At("ref", ref.span, name=ref.value)))
    return out


def _uses(pages: Iterable[Page], name: str) -> Iterable[tuple[str, At]]:
    for page in sorted(pages, key=lambda p: p.path):
        fields = page.parsed.fields
        for ref in fields.sl_refs:
            if ref.value == name:
                yield page.path, At("entity", ref.span, name=name)
        for directive in page.parsed.directives:
            if directive.name == name:
                yield page.path, At("entity", directive.span, name=name)


# Symbols and folding ---------------------------------------------------------------------


def document_symbols(page: Page, where: Positions) -> list[types.DocumentSymbol]:
    out = []
    for heading in page.parsed.headings:
        span = where.range(heading.line, 1, heading.line, len(where.line_text(heading.line)))
        out.append(
            types.DocumentSymbol(
                name=redact(heading.text) or "(empty heading)",
                kind=types.SymbolKind.String,
                range=span,
                selection_range=span,
                detail="#" * heading.level,
            )
        )
    return out


def workspace_symbols(ws: Workspace, query: str, uri: Uri) -> list[types.WorkspaceSymbol]:
    analysis = ws.analysis
    if analysis is None:
        return []
    wanted = query.casefold()
    out: list[types.WorkspaceSymbol] = []
    top = types.Range(types.Position(0, 0), types.Position(0, 0))
    for page in sorted(analysis.pages, key=lambda p: p.path):
        if wanted in page.id.casefold() or wanted in page.title.casefold():
            out.append(
                types.WorkspaceSymbol(
                    name=redact(page.title),
                    kind=types.SymbolKind.File,
                    location=types.Location(uri(page.path), top),
                    container_name=page.scope,
                )
            )
    for entity in _entities(ws):
        if wanted in entity.name.casefold():
            point = types.Position(max(entity.line - 1, 0), 0)
            out.append(
                types.WorkspaceSymbol(
                    name=redact(entity.name),
                    kind=types.SymbolKind.Field,
                    location=types.Location(uri(entity.path), types.Range(point, point)),
                    container_name=entity.kind,
                )
            )
    return out[:MAX_ITEMS]


def folding(page: Page | None, where: Positions) -> list[types.FoldingRange]:
    out = []
    end = frontmatter_end(where)
    if end > 1:
        out.append(
            types.FoldingRange(start_line=0, end_line=end - 1, kind=types.FoldingRangeKind.Region)
        )
    if page is not None:
        headings = page.parsed.headings
        for i, heading in enumerate(headings):
            stop = next(
                (h.line for h in headings[i + 1 :] if h.level <= heading.level),
                len(where.lines) + 1,
            )
            if stop - 2 > heading.line - 1:
                out.append(types.FoldingRange(start_line=heading.line - 1, end_line=stop - 2))
    return out
