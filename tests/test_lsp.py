"""`knowl lsp` driven over stdio by pygls' own client, as an editor drives it: a real git
repository in a temporary folder, the server a subprocess, buffers that are never saved.

Each test runs its session in `asyncio.run` (no asyncio plugin for pytest: the suite has
none)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke

pytest.importorskip("pygls")
from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

T = TypeVar("T")
NOTES = "knowledge/global/notes.md"
REVENUE = "knowledge/global/revenue.md"
ORDERS = "semantics/shop/orders.yaml"
FM = '---\nmeta:\n  last_validated_at: "2026-05-01T00:00:00Z"\n---\n'
FILES = {
    **SEMANTICS,
    REVENUE: "---\nsummary: How revenue is counted.\nsl_refs: [shop_pg.orders.total_revenue]\n"
    'meta:\n  last_validated_at: "2026-05-01T00:00:00Z"\n---\n'
    "# Revenue\n\n## Definition\n\nRevenue is the sum of amounts.\n",
    NOTES: FM + "# Notes\n\nSee [[revenue]], [[revenue#Definition|the definition]] and "
    "[the page](revenue.md).\n",
}
# 2026-05-10: the pages were validated nine days before (no staleness finding).
ENV = {"SOURCE_DATE_EPOCH": "1778371200"}
WAIT = 60.0


def uri(root: Path, path: str) -> str:
    return from_fs_path(str(root / path)) or ""


class Session:
    """A client connected to `knowl lsp` in `root`, with the diagnostics it was sent."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.client = LanguageClient("knowl-tests", "1")
        self.diagnostics: dict[str, list[types.Diagnostic]] = {}
        self.published = 0

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)  # type: ignore[untyped-decorator]
        def publish(params: types.PublishDiagnosticsParams) -> None:
            self.diagnostics[params.uri] = list(params.diagnostics)
            self.published += 1

    async def start(self) -> None:
        env = {**os.environ, **ENV}
        await self.client.start_io(
            sys.executable, "-m", "knowl_build", "lsp", cwd=str(self.root), env=env
        )
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=from_fs_path(str(self.root)),
            )
        )
        self.client.initialized(types.InitializedParams())

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()  # type: ignore[no-untyped-call]

    def uri(self, path: str) -> str:
        return uri(self.root, path)

    def open(self, path: str, text: str | None = None) -> None:
        if text is None:
            text = (self.root / path).read_text(encoding="utf-8")
        item = types.TextDocumentItem(self.uri(path), "markdown", 1, text)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(item))

    def change(self, path: str, text: str, version: int = 2) -> None:
        document = types.VersionedTextDocumentIdentifier(uri=self.uri(path), version=version)
        change = types.TextDocumentContentChangeWholeDocument(text=text)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(document, [change]))

    async def until(self, predicate: Callable[[], bool]) -> None:
        deadline = time.monotonic() + WAIT
        while not predicate():
            assert time.monotonic() < deadline, f"timed out; diagnostics: {self.diagnostics}"
            await asyncio.sleep(0.05)

    def codes(self, path: str) -> list[str]:
        return [str(d.code) for d in self.diagnostics.get(self.uri(path), [])]

    def where(self, path: str, line: int, character: int) -> dict[str, Any]:
        return {
            "text_document": types.TextDocumentIdentifier(self.uri(path)),
            "position": types.Position(line, character),
        }


def run(root: Path, body: Callable[[Session], Awaitable[T]]) -> T:
    async def session() -> T:
        client = Session(root)
        await client.start()
        try:
            return await body(client)
        finally:
            await client.stop()

    return asyncio.run(session())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = Project(tmp_path / "repo").write(FILES)
    project.commit("pages")
    return project.root


def applied(text: str, edits: list[types.TextEdit]) -> str:
    """`text` with the edits made (their positions in characters: ASCII here)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(position: types.Position) -> int:
        return starts[position.line] + position.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def test_a_broken_link_in_an_unsaved_buffer_is_kb103_where_knowl_check_puts_it(
    repo: Path,
) -> None:
    before = (repo / NOTES).read_bytes()
    text = before.decode() + "\nAlso [[missing-page]] here.\n"

    async def body(s: Session) -> list[types.Diagnostic]:
        s.open(NOTES)
        await s.until(lambda: s.published > 0)
        assert s.codes(NOTES) == []
        s.change(NOTES, text)
        await s.until(lambda: "KB103" in s.codes(NOTES))
        return s.diagnostics[s.uri(NOTES)]

    found = run(repo, body)
    assert (repo / NOTES).read_bytes() == before  # nothing written
    assert not (repo / ".knowl").exists()
    [broken] = found
    line = text.split("\n").index("Also [[missing-page]] here.")
    assert broken.range == types.Range(types.Position(line, 5), types.Position(line, 21))
    assert broken.severity == types.DiagnosticSeverity.Error
    assert broken.source == "knowl"
    assert broken.code_description is not None
    assert broken.code_description.href.endswith("/rules/#kb103")
    # The same finding `knowl check` reports once the buffer is saved.
    (repo / NOTES).write_text(text, encoding="utf-8")
    out = invoke(["check", "--repo", str(repo), "--format", "json"], 1, env=ENV)
    [checked] = json.loads(out.stdout)["diagnostics"]
    assert (checked["code"], checked["line"], checked["column"]) == ("KB103", line + 1, 6)
    hint = f"\nhint: {checked['hint']}" if checked["hint"] else ""
    assert broken.message == checked["message"] + hint


def test_a_heading_renamed_in_one_buffer_breaks_the_links_of_another_page(repo: Path) -> None:
    async def body(s: Session) -> list[str]:
        s.open(REVENUE)
        await s.until(lambda: s.published > 0 or s.codes(NOTES) != [])
        await asyncio.sleep(0.3)
        text = (repo / REVENUE).read_text().replace("## Definition", "## Meaning")
        s.change(REVENUE, text)
        await s.until(lambda: s.codes(NOTES) != [])
        return s.codes(NOTES)

    assert run(repo, body) == ["KB105"]


def test_completion_of_pages_headings_entities_and_frontmatter(repo: Path) -> None:
    text = FM + "# Notes\n\n[[rev\n[[revenue#\n[x](rev\n"

    async def body(s: Session) -> dict[str, list[str]]:
        s.open(NOTES, text)
        await s.until(lambda: s.published > 0)
        answers = {}
        for name, (line, character) in {
            "page": (6, 5),
            "heading": (7, 10),
            "path": (8, 7),
        }.items():
            got = await s.client.text_document_completion_async(
                types.CompletionParams(**s.where(NOTES, line, character))
            )
            assert isinstance(got, types.CompletionList)
            answers[name] = [item.label for item in got.items]
        fm = "---\nusage_mode: \nsl_refs: [shop\n---\n# Notes\n"
        s.change(NOTES, fm)
        await asyncio.sleep(0.5)
        for name, (line, character) in {"value": (1, 12), "entity": (2, 14)}.items():
            got = await s.client.text_document_completion_async(
                types.CompletionParams(**s.where(NOTES, line, character))
            )
            assert isinstance(got, types.CompletionList)
            answers[name] = [item.label for item in got.items]
            if name == "entity":
                item = next(i for i in got.items if i.label == "shop_pg.orders.total_revenue")
                assert item.detail == "measure: sum(amount)"
                assert item.text_edit is not None
                assert isinstance(item.text_edit, types.TextEdit)
                assert item.text_edit.range == types.Range(
                    types.Position(2, 10), types.Position(2, 14)
                )
        return answers

    answers = run(repo, body)
    assert answers["page"] == ["revenue"]
    assert answers["heading"] == ["Revenue", "Definition"]
    assert answers["path"] == ["revenue.md"]
    assert answers["value"] == ["reference", "caveat", "policy", "definition"]
    assert "shop_pg.orders.total_revenue" in answers["entity"]
    assert "shop_pg.orders.status" in answers["entity"]


def test_hover_on_a_link_and_on_an_entity(repo: Path) -> None:
    async def body(s: Session) -> tuple[str, str, Any]:
        s.open(NOTES)
        s.open(REVENUE)
        await s.until(lambda: s.published > 0)
        link = await s.client.text_document_hover_async(types.HoverParams(**s.where(NOTES, 6, 7)))
        entity = await s.client.text_document_hover_async(
            types.HoverParams(**s.where(REVENUE, 2, 15))
        )
        nothing = await s.client.text_document_hover_async(
            types.HoverParams(**s.where(NOTES, 4, 2))
        )
        assert link is not None and entity is not None
        assert isinstance(link.contents, types.MarkupContent)
        assert isinstance(entity.contents, types.MarkupContent)
        return link.contents.value, entity.contents.value, nothing

    link, entity, nothing = run(repo, body)
    assert link.startswith("**Revenue**\n\n`knowledge/global/revenue.md`")
    assert "How revenue is counted." in link
    assert "freshness: fresh" in link
    assert entity.startswith("**shop_pg.orders.total_revenue** (measure, canonic)")
    assert "- `expr`: sum(amount)" in entity
    assert "defined in `semantics/shop/orders.yaml` line 11" in entity
    assert nothing is None


def test_definition_of_an_entity_is_its_yaml_line_and_of_a_link_its_heading(
    repo: Path,
) -> None:
    async def body(s: Session) -> tuple[Any, Any]:
        s.open(NOTES)
        s.open(REVENUE)
        await s.until(lambda: s.published > 0)
        entity = await s.client.text_document_definition_async(
            types.DefinitionParams(**s.where(REVENUE, 2, 15))
        )
        heading = await s.client.text_document_definition_async(
            types.DefinitionParams(**s.where(NOTES, 6, 20))
        )
        return entity, heading

    entity, heading = run(repo, body)
    yaml_line = (
        FILES[ORDERS]
        .split("\n")
        .index(
            '  - { name: total_revenue, expr: "sum(amount)", additivity: additive, description: '
            "Revenue. }"
        )
    )
    assert entity == [
        types.Location(
            uri(repo, ORDERS),
            types.Range(types.Position(yaml_line, 0), types.Position(yaml_line, 0)),
        )
    ]
    definition_line = FILES[REVENUE].split("\n").index("## Definition")
    assert heading == [
        types.Location(
            uri(repo, REVENUE),
            types.Range(types.Position(definition_line, 0), types.Position(definition_line, 0)),
        )
    ]


def test_references_of_a_page_are_its_backlinks(repo: Path) -> None:
    async def body(s: Session) -> Any:
        s.open(REVENUE)
        await s.until(lambda: s.published > 0)
        return await s.client.text_document_references_async(
            types.ReferenceParams(
                context=types.ReferenceContext(include_declaration=False),
                **s.where(REVENUE, 6, 2),
            )
        )

    found = run(repo, body)
    line = 6
    assert [(loc.uri, loc.range.start.line, loc.range.start.character) for loc in found] == [
        (uri(repo, NOTES), line, 4),
        (uri(repo, NOTES), line, 17),
        (uri(repo, NOTES), line, 59),
    ]


def test_rename_of_a_page_rewrites_every_link_in_its_own_form(repo: Path) -> None:
    async def body(s: Session) -> tuple[Any, Any, Any]:
        s.open(NOTES)
        await s.until(lambda: s.published > 0)
        prepared = await s.client.text_document_prepare_rename_async(
            types.PrepareRenameParams(**s.where(NOTES, 6, 8))
        )
        edit = await s.client.text_document_rename_async(
            types.RenameParams(new_name="income", **s.where(NOTES, 6, 8))
        )
        refused = None
        try:
            await s.client.text_document_prepare_rename_async(
                types.PrepareRenameParams(**s.where(NOTES, 5, 0))
            )
        except Exception as exc:  # the protocol's error, raised by the client
            refused = str(exc)
        return prepared, edit, refused

    prepared, edit, refused = run(repo, body)
    assert isinstance(prepared, types.PrepareRenamePlaceholder)
    assert prepared.placeholder == "revenue"
    assert prepared.range == types.Range(types.Position(6, 6), types.Position(6, 13))
    assert refused is not None and "put the cursor on a link" in refused
    assert edit is not None and edit.document_changes is not None
    *texts, move = edit.document_changes
    assert move == types.RenameFile(
        old_uri=uri(repo, REVENUE), new_uri=uri(repo, "knowledge/global/income.md")
    )
    [notes] = texts
    assert isinstance(notes, types.TextDocumentEdit)
    assert notes.text_document.uri == uri(repo, NOTES)
    after = applied(FILES[NOTES], list(notes.edits))  # type: ignore[arg-type]
    assert after == FILES[NOTES].replace(
        "[[revenue]], [[revenue#Definition|the definition]] and [the page](revenue.md)",
        "[[income]], [[income#Definition|the definition]] and [the page](income.md)",
    )
    assert (repo / REVENUE).exists()  # the client renames it, not the server


def test_rename_of_a_heading_rewrites_the_links_that_name_it(repo: Path) -> None:
    async def body(s: Session) -> Any:
        s.open(REVENUE)
        await s.until(lambda: s.published > 0)
        return await s.client.text_document_rename_async(
            types.RenameParams(new_name="Meaning", **s.where(REVENUE, 8, 4))
        )

    edit = run(repo, body)
    assert edit is not None and edit.document_changes is not None
    by_uri = {change.text_document.uri: change for change in edit.document_changes}
    notes = applied(FILES[NOTES], list(by_uri[uri(repo, NOTES)].edits))
    revenue = applied(FILES[REVENUE], list(by_uri[uri(repo, REVENUE)].edits))
    assert "[[revenue#Meaning|the definition]]" in notes
    assert "## Meaning\n" in revenue and "Definition" not in revenue


def test_code_actions_for_a_broken_link(repo: Path) -> None:
    text = FILES[NOTES] + "\n[[missing-page]]\n"

    async def body(s: Session) -> list[types.CodeAction]:
        s.open(NOTES, text)
        await s.until(lambda: "KB103" in s.codes(NOTES))
        diagnostics = s.diagnostics[s.uri(NOTES)]
        got = await s.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(s.uri(NOTES)),
                range=diagnostics[0].range,
                context=types.CodeActionContext(diagnostics=diagnostics),
            )
        )
        assert got is not None
        return [a for a in got if isinstance(a, types.CodeAction)]

    actions = run(repo, body)
    titles = [a.title for a in actions]
    assert titles == [
        "Create the missing page knowledge/global/missing-page.md",
        "Suppress KB103 on this line",
    ]
    create, suppress = actions
    assert create.edit is not None and create.edit.document_changes is not None
    made, filled = create.edit.document_changes
    assert isinstance(made, types.CreateFile)
    assert made.uri == uri(repo, "knowledge/global/missing-page.md")
    assert isinstance(filled, types.TextDocumentEdit)
    assert isinstance(filled.edits[0], types.TextEdit)
    assert filled.edits[0].new_text == "---\nsummary: \n---\n# missing-page\n"
    assert suppress.edit is not None and suppress.edit.document_changes is not None
    [change] = suppress.edit.document_changes
    assert isinstance(change, types.TextDocumentEdit)
    after = applied(text, list(change.edits))  # type: ignore[arg-type]
    assert after.endswith("\n<!-- knowl: disable-next-line KB103 -->\n[[missing-page]]\n")
    assert not (repo / "knowledge/global/missing-page.md").exists()


def test_symbols_and_folding(repo: Path) -> None:
    async def body(s: Session) -> tuple[Any, Any, Any]:
        s.open(REVENUE)
        await s.until(lambda: s.published > 0)
        document = types.TextDocumentIdentifier(s.uri(REVENUE))
        symbols = await s.client.text_document_document_symbol_async(
            types.DocumentSymbolParams(document)
        )
        folds = await s.client.text_document_folding_range_async(types.FoldingRangeParams(document))
        found = await s.client.workspace_symbol_async(types.WorkspaceSymbolParams(query="reven"))
        return symbols, folds, found

    symbols, folds, found = run(repo, body)
    assert [(s.name, s.range.start.line) for s in symbols] == [("Revenue", 6), ("Definition", 8)]
    assert (folds[0].start_line, folds[0].end_line) == (0, 5)
    assert [(s.name, s.kind) for s in found] == [
        ("Revenue", types.SymbolKind.File),
        ("shop_pg.orders.total_revenue", types.SymbolKind.Field),
    ]


def test_a_document_outside_the_project_gets_nothing(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("[[revenue]]\n", encoding="utf-8")

    async def body(s: Session) -> Any:
        s.open(NOTES)
        await s.until(lambda: s.published > 0)
        item = types.TextDocumentItem(from_fs_path(str(outside)) or "", "markdown", 1, "[[x]]\n")
        s.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
        return await s.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(item.uri),
                position=types.Position(0, 3),
            )
        )

    assert run(repo, body) is None


def test_knowl_lsp_without_pygls_says_how_to_install_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("knowl_build.lsp.find_spec", lambda name: None)
    out = invoke(["lsp", "--repo", str(repo)], 2)
    assert "pip install 'knowl-build[lsp]'" in out.output


def test_a_page_created_on_disk_is_picked_up_without_a_restart(repo: Path) -> None:
    """The client reports no changed files: the server looks at the disk by itself."""
    text = FILES[NOTES] + "\n[[missing-page]]\n"

    async def body(s: Session) -> list[str]:
        s.open(NOTES, text)
        await s.until(lambda: "KB103" in s.codes(NOTES))
        (repo / "knowledge/global/missing-page.md").write_text(FM + "# Here\n", encoding="utf-8")
        await s.until(lambda: "KB103" not in s.codes(NOTES))
        return s.codes(NOTES)

    assert run(repo, body) == []


def test_a_deleted_page_reported_by_the_client_breaks_its_links(repo: Path) -> None:
    async def body(s: Session) -> list[str]:
        s.open(NOTES)
        await s.until(lambda: s.published > 0)
        (repo / REVENUE).unlink()
        s.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(s.uri(REVENUE), types.FileChangeType.Deleted)]
            )
        )
        await s.until(lambda: "KB103" in s.codes(NOTES))
        return s.codes(NOTES)

    assert run(repo, body) == ["KB103", "KB103", "KB103"]


def test_a_drifted_page_is_re_bound_to_the_live_definition_by_a_quick_fix(
    tmp_path: Path,
) -> None:
    old = "sha256:" + "0" * 64
    page = (
        "---\nsl_refs: [shop_pg.orders.total_revenue]\nmeta:\n"
        '  last_validated_at: "2026-05-01T00:00:00Z"\n  bound_fingerprints:\n'
        f'    shop_pg.orders.total_revenue: "{old}"\n---\n# Revenue\n'
    )
    project = Project(tmp_path / "repo").write({**SEMANTICS, REVENUE: page})
    project.commit("pages")

    async def body(s: Session) -> list[types.CodeAction]:
        s.open(REVENUE)
        await s.until(lambda: "KB201" in s.codes(REVENUE))
        drift = [d for d in s.diagnostics[s.uri(REVENUE)] if d.code == "KB201"]
        got = await s.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(s.uri(REVENUE)),
                range=drift[0].range,
                context=types.CodeActionContext(diagnostics=drift),
            )
        )
        assert got is not None
        return [a for a in got if isinstance(a, types.CodeAction)]

    actions = run(project.root, body)
    rebind = actions[0]
    assert rebind.title == "Re-bind to the live definitions (what knowl review writes)"
    assert rebind.edit is not None and rebind.edit.document_changes is not None
    [change] = rebind.edit.document_changes
    assert isinstance(change, types.TextDocumentEdit)
    [whole] = change.edits
    assert isinstance(whole, types.TextEdit)
    assert f'shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"' in whole.new_text
    assert 'last_validated_at: "2026-05-10T00:00:00Z"' in whole.new_text
    assert old not in whole.new_text
    assert (project.root / REVENUE).read_text(encoding="utf-8") == page


def test_a_secret_is_redacted_in_diagnostics_hover_and_completion(tmp_path: Path) -> None:
    token = "ghp_" + "A1b2" * 9
    page = FM.replace("meta:", f"summary: the key is {token}\nmeta:") + "# Secret\n"
    notes = FM + "# Notes\n\n[[secret]]\n[[sec\n"
    project = Project(tmp_path / "repo").write(
        {**FILES, "knowledge/global/secret.md": page, NOTES: notes}
    )
    project.commit("pages")

    async def body(s: Session) -> tuple[str, str, str]:
        s.open("knowledge/global/secret.md")
        s.open(NOTES)
        await s.until(lambda: "KB401" in s.codes("knowledge/global/secret.md"))
        [found] = [
            d for d in s.diagnostics[s.uri("knowledge/global/secret.md")] if d.code == "KB401"
        ]
        hover = await s.client.text_document_hover_async(types.HoverParams(**s.where(NOTES, 6, 3)))
        got = await s.client.text_document_completion_async(
            types.CompletionParams(**s.where(NOTES, 7, 5))
        )
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        assert isinstance(got, types.CompletionList)
        [item] = [i for i in got.items if i.label == "secret"]
        return found.message, hover.contents.value, str(item.documentation)

    message, hover, documentation = run(project.root, body)
    for shown in (message, hover, documentation):
        assert token not in shown
    assert "[redacted]" in hover and "[redacted]" in documentation


@pytest.mark.parametrize(
    ("new_name", "refusal"),
    [
        ("../escape", "must not be empty or start with a dot"),
        ("sub/escape", "a page's name has no /"),
        ("notes", "knowledge/global/notes.md exists already"),
        (".hidden", "must not be empty or start with a dot"),
        ("", "must not be empty"),
    ],
)
def test_a_rename_that_cannot_be_made_is_refused(repo: Path, new_name: str, refusal: str) -> None:
    async def body(s: Session) -> str:
        s.open(NOTES)
        await s.until(lambda: s.published > 0)
        try:
            await s.client.text_document_rename_async(
                types.RenameParams(new_name=new_name, **s.where(NOTES, 6, 8))
            )
        except Exception as exc:  # the protocol's error, raised by the client
            return str(exc)
        return "not refused"

    assert refusal in run(repo, body)
    assert sorted(p.name for p in (repo / "knowledge/global").iterdir()) == [
        "notes.md",
        "revenue.md",
    ]


def test_hover_on_a_drifted_entity_shows_before_after_and_the_commit(tmp_path: Path) -> None:
    page = (
        "---\nsl_refs: [shop_pg.orders.total_revenue]\nmeta:\n"
        '  last_validated_at: "2026-05-01T00:00:00Z"\n  bound_fingerprints:\n'
        f'    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"\n---\n# Revenue\n'
    )
    project = Project(tmp_path / "repo").write({**SEMANTICS, REVENUE: page})
    project.commit("pages")
    changed = SEMANTICS[ORDERS].replace('expr: "sum(amount)"', 'expr: "sum(amount) - 1"')
    sha = project.write({ORDERS: changed}).commit("revenue less one")

    async def body(s: Session) -> str:
        s.open(REVENUE)
        await s.until(lambda: "KB201" in s.codes(REVENUE))
        hover = await s.client.text_document_hover_async(
            types.HoverParams(**s.where(REVENUE, 1, 15))
        )
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        return hover.contents.value

    shown = run(project.root, body)
    assert f"**drifted**: this page is bound to `{FP_SUM_AMOUNT}`" in shown
    assert f"changed in {sha[:12]} (revenue less one)" in shown
    assert "sum(amount) - 1" in shown.split("after:")[1]


def test_an_unsaved_semantic_file_is_checked_and_its_pages_follow(repo: Path) -> None:
    """The YAML buffer is laid over the file: a measure renamed there breaks the pages that
    name it, before anything is saved."""
    renamed = FILES[ORDERS].replace("name: total_revenue", "name: gross_revenue")

    async def body(s: Session) -> list[str]:
        s.open(REVENUE)
        await s.until(lambda: s.published > 0)
        item = types.TextDocumentItem(s.uri(ORDERS), "yaml", 1, FILES[ORDERS])
        s.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
        s.change(ORDERS, renamed)
        await s.until(lambda: s.codes(REVENUE) != [])
        return s.codes(REVENUE)

    assert run(repo, body) == ["KB101"]
    assert (repo / ORDERS).read_text(encoding="utf-8") == FILES[ORDERS]


def test_a_file_the_editor_moves_keeps_its_links_right(repo: Path) -> None:
    """`workspace/willRenameFiles`: the editor moves revenue.md into a folder; the wiki links
    name it by id and stay, the relative Markdown link follows it."""
    moved = "knowledge/global/finance/revenue.md"

    async def body(s: Session) -> Any:
        s.open(NOTES)
        await s.until(lambda: s.published > 0)
        return await s.client.workspace_will_rename_files_async(
            types.RenameFilesParams(files=[types.FileRename(s.uri(REVENUE), s.uri(moved))])
        )

    edit = run(repo, body)
    assert edit is not None and edit.document_changes is not None
    [notes] = edit.document_changes
    assert isinstance(notes, types.TextDocumentEdit)
    assert notes.text_document.uri == uri(repo, NOTES)
    after = applied(FILES[NOTES], list(notes.edits))  # type: ignore[arg-type]
    assert after == FILES[NOTES].replace("(revenue.md)", "(finance/revenue.md)")
    assert (repo / REVENUE).exists()


def test_obsidian_block_ids_complete_and_lead_to_their_line(tmp_path: Path) -> None:
    block_page = FILES[REVENUE] + "\nCounted every day. ^daily\n"
    notes = FM + "# Notes\n\n[[revenue#^daily]]\n[[revenue#^\n"
    project = Project(tmp_path / "repo").write(
        {
            **FILES,
            REVENUE: block_page,
            NOTES: notes,
            "knowl.toml": '[links]\nresolution = "obsidian"\n',
        }
    )
    project.commit("vault")

    async def body(s: Session) -> tuple[Any, list[str]]:
        s.open(NOTES)
        await s.until(lambda: s.published > 0)
        found = await s.client.text_document_definition_async(
            types.DefinitionParams(**s.where(NOTES, 6, 4))
        )
        got = await s.client.text_document_completion_async(
            types.CompletionParams(**s.where(NOTES, 7, 11))
        )
        assert isinstance(got, types.CompletionList)
        return found, [item.label for item in got.items]

    found, labels = run(project.root, body)
    line = block_page.split("\n").index("Counted every day. ^daily")
    assert [(loc.uri, loc.range.start.line) for loc in found] == [
        (uri(project.root, REVENUE), line)
    ]
    assert labels == ["^daily"]


def test_a_hostile_git_head_is_not_followed_out_of_the_repository(tmp_path: Path) -> None:
    from knowl_build.lsp.workspace import _head

    outside = tmp_path / "outside"
    outside.write_bytes(b"secret\n")
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_bytes(b"ref: " + str(outside).encode() + b"\n")
    assert _head(root) == b"ref: " + str(outside).encode() + b"\n"
    (root / ".git" / "HEAD").write_bytes(b"ref: refs/../../outside\n")
    assert _head(root) == b"ref: refs/../../outside\n"


def test_symbols_and_create_actions_never_spell_a_secret(tmp_path: Path) -> None:
    token = "ghp_" + "A1b2" * 9
    page = FM.replace("meta:", f"title: Key {token}\nmeta:") + f"# Secret {token}\n"
    notes = FM + f"# Notes\n\n[[{token}]]\n"
    project = Project(tmp_path / "repo").write(
        {**FILES, "knowledge/global/secret.md": page, NOTES: notes}
    )
    project.commit("pages")

    async def body(s: Session) -> list[str]:
        s.open("knowledge/global/secret.md")
        s.open(NOTES)
        await s.until(lambda: "KB103" in s.codes(NOTES))
        outline = await s.client.text_document_document_symbol_async(
            types.DocumentSymbolParams(
                types.TextDocumentIdentifier(s.uri("knowledge/global/secret.md"))
            )
        )
        found = await s.client.workspace_symbol_async(types.WorkspaceSymbolParams(query=""))
        broken = [d for d in s.diagnostics[s.uri(NOTES)] if d.code == "KB103"]
        actions = await s.client.text_document_code_action_async(
            types.CodeActionParams(
                types.TextDocumentIdentifier(s.uri(NOTES)),
                broken[0].range,
                types.CodeActionContext(diagnostics=broken),
            )
        )
        shown = [str(outline), str(found)]
        shown += [str(a) for a in actions or []]
        return shown

    shown = run(project.root, body)
    assert all(token not in text for text in shown)
    assert not any("Create the missing page" in text for text in shown[2:])
