"""Quick fixes for the findings under the cursor: `knowl fix`'s proposal for the page, the
missing page of a broken link created, the finding suppressed by its inline comment. Each is
a workspace edit the client applies; nothing is written here."""

from __future__ import annotations

import asyncio
import posixpath
from typing import Any, NamedTuple

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from knowl_build.core.model import DRAFT
from knowl_build.core.names import holds_secret
from knowl_build.lsp.features import frontmatter_end
from knowl_build.lsp.lookup import at
from knowl_build.lsp.positions import Positions
from knowl_build.lsp.renaming import Refused, _check_name
from knowl_build.lsp.workspace import Workspace
from knowl_build.writes import fix
from knowl_build.writes.common import quoted_timestamp, utc_now
from knowl_build.writes.edit import EditError, FrontmatterEditor

BROKEN_LINK = "KB103"
# Drift, stale, a changed definition: what `knowl review` answers for the page.
REVIEWED = ("KB201", "KB202", "KB203")


class Action(NamedTuple):
    title: str
    code: str
    kind: str  # fix | create | suppress
    path: str  # the file the edit is for (the new page's, for create)
    text: str  # fix: the page's whole new text; create: the new page; suppress: the line
    line: int = 0  # suppress: the 1-based line the comment goes above
    preferred: bool = False


def suppression(code: str, line: int, where: Positions) -> str:
    """The comment that hides `code` on `line`, indented as the line is."""
    row = where.line_text(line)
    indent = row[: len(row) - len(row.lstrip(" \t"))]
    if line < frontmatter_end(where):
        return f"{indent}# knowl: disable-next-line {code}\n"
    return f"{indent}<!-- knowl: disable-next-line {code} -->\n"


def actions(
    ws: Workspace, path: str, where: Positions, found: list[tuple[str, int, int]]
) -> list[Action]:
    """The actions for the findings `found` ((code, line, column), 1-based) of a page."""
    page, analysis = ws.page(path), ws.analysis
    if page is None or analysis is None:
        return []
    out: list[Action] = []
    for code, line, column in found:
        if code == BROKEN_LINK:
            created = _create(ws, path, line, column)
            if created is not None:
                out.append(created)
        out.append(
            Action(
                f"Suppress {code} on this line",
                code,
                "suppress",
                path,
                suppression(code, line, where),
                line,
            )
        )
    drifted = next((code for code, _, _ in found if code in REVIEWED), None)
    if drifted is not None:
        rebound = _rebound(ws, path)
        if rebound is not None:
            title = "Re-bind to the live definitions (what knowl review writes)"
            out.insert(0, Action(title, drifted, "fix", path, rebound))
    if found and (text := ws.text(path)) is not None:
        for proposal in fix.plan(analysis).proposals:
            if proposal.path == path and proposal.before == text and proposal.after != text:
                title = "Apply knowl fix to this page"
                out.insert(
                    0, Action(title, found[0][0], "fix", path, proposal.after, preferred=True)
                )
    return out


def _rebound(ws: Workspace, path: str) -> str | None:
    """The page's text as `knowl review` leaves it: validated now, each bound fingerprint
    (and each measure in `sl_refs`) the live one, `freshness` fresh, a draft active.

    `writes.governance.review` makes the same edits on the file; it should offer them on a
    text, and this copy go."""
    page, analysis, text = ws.page(path), ws.analysis, ws.text(path)
    if page is None or analysis is None or text is None or page.parsed.fields.frozen:
        return None
    layer, fields = analysis.layer, page.parsed.fields
    fingerprints: dict[str, str] = {}
    for bound in fields.bound_fingerprints:
        entity = layer.entities.get(bound.entity)
        fingerprints[bound.entity] = entity.fingerprint if entity else bound.fingerprint
    for ref in fields.sl_refs:
        entity = layer.entities.get(ref.value)
        if entity is not None and entity.kind == "measure":
            fingerprints.setdefault(ref.value, entity.fingerprint)
    try:
        editor = FrontmatterEditor.of(text)
        editor.set_many(["meta"], [("last_validated_at", quoted_timestamp(utc_now()))])
        if fingerprints:
            editor.set_many(
                ["meta", "bound_fingerprints"], [(n, f'"{fp}"') for n, fp in fingerprints.items()]
            )
        if "freshness" in page.parsed.frontmatter:
            editor.set_scalar(["freshness"], "fresh")
        if fields.status == DRAFT:
            editor.set_scalar(["status"], "active")
    except EditError:
        return None
    after = editor.result()
    return after if after != text else None


def _create(ws: Workspace, path: str, line: int, column: int) -> Action | None:
    page = ws.page(path)
    if page is None:
        return None
    found = at(page, line, column)
    if found is None or found.link is None or not found.link.target:
        return None
    target = found.link.target
    if found.link.form == "markdown":
        new_path = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if not new_path.endswith(".md"):
            new_path += ".md"
        name = posixpath.basename(new_path)[:-3]
    else:
        name, new_path = target, posixpath.join(posixpath.dirname(path), target + ".md")
    try:
        _check_name(name)
    except Refused:
        return None
    inside = ws.relative(str(ws.absolute(new_path))) == new_path and ws.could_be_page(new_path)
    if not inside or ws.absolute(new_path).exists():
        return None  # outside the knowledge folder, or there already
    if holds_secret(new_path):
        return None  # a file named after a secret would be committed with its name
    text = f"---\nsummary: \n---\n# {name}\n"
    return Action(f"Create the missing page {new_path}", BROKEN_LINK, "create", new_path, text)


def register(server: LanguageServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    async def code_action(ls: Any, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        path = ls.path(params.text_document.uri)
        if path is None or not await ls.wait():
            return None
        where = ls.positions(path)
        found = []
        for diagnostic in params.context.diagnostics:
            if diagnostic.source == "knowl" and isinstance(diagnostic.code, str):
                line, column = where.cursor(diagnostic.range.start)
                found.append((diagnostic.code, line, column))
        made = await asyncio.get_running_loop().run_in_executor(
            None, actions, ls.ws, path, where, found
        )
        return [_protocol(ls, where, params.text_document.uri, action) for action in made]


def _protocol(ls: Any, where: Positions, uri: str, action: Action) -> types.CodeAction:
    document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None)
    changes: list[Any]
    if action.kind == "fix":
        end = where.position(len(where.lines), len(where.lines[-1]) + 1)
        edit = types.TextEdit(range=types.Range(types.Position(0, 0), end), new_text=action.text)
        changes = [types.TextDocumentEdit(text_document=document, edits=[edit])]
    elif action.kind == "create":
        new_uri = ls.uri(action.path)
        created = types.OptionalVersionedTextDocumentIdentifier(uri=new_uri, version=None)
        insert = types.TextEdit(
            range=types.Range(types.Position(0, 0), types.Position(0, 0)), new_text=action.text
        )
        changes = [
            types.CreateFile(uri=new_uri, options=types.CreateFileOptions(ignore_if_exists=True)),
            types.TextDocumentEdit(text_document=created, edits=[insert]),
        ]
    else:
        edit = types.TextEdit(range=where.line_start(action.line), new_text=action.text)
        changes = [types.TextDocumentEdit(text_document=document, edits=[edit])]
    return types.CodeAction(
        title=action.title,
        kind=types.CodeActionKind.QuickFix,
        edit=types.WorkspaceEdit(document_changes=changes),
        is_preferred=action.preferred or None,
    )
