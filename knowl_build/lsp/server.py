"""The protocol: pygls' server, each feature a thin translation into `features`, `renaming`
and `actions`. Edits go back as workspace edits only; nothing is written here.

Diagnostics are debounced: each change restarts a short timer, and one analysis runs at a
time, in a worker thread, on the buffers as they are when it starts; its findings are
published for every file whose findings changed (a renamed heading breaks links elsewhere)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from knowl_build import __version__
from knowl_build.core.errors import KnowlError
from knowl_build.lsp import actions, features, renaming
from knowl_build.lsp.positions import Positions
from knowl_build.lsp.workspace import Workspace, project_root
from knowl_build.secrets.scanner import redact

# An edit is analysed once the buffers are this long without another change. Brought up to
# date by the session, an analysis after a keystroke costs about 40 ms at 10,000 pages, so a
# wait shorter than the gap between two keystrokes keeps the diagnostics of the last one
# within about 100 ms of it.
DEBOUNCE_SECONDS = 0.02
READY_SECONDS = 60.0  # a request before the first analysis waits this long for it
POLL_SECONDS = 2.0  # how often the disk is looked at for a client that reports no changes
WATCHED = ("**/*.md", "**/*.yml", "**/*.yaml", "**/knowl.toml", "**/pyproject.toml", "**/.git/HEAD")


class KnowlServer(LanguageServer):
    def __init__(self, root: Path | None, config_file: Path | None) -> None:
        super().__init__("knowl", __version__)
        self.given_root = root
        self.config_file = config_file
        self.ws: Workspace | None = None
        self.ready = asyncio.Event()
        self.generation = 0
        self.running: asyncio.Lock | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    # Paths and texts ------------------------------------------------------------------

    def uri(self, path: str) -> str:
        assert self.ws is not None
        return from_fs_path(str(self.ws.absolute(path))) or ""

    def path(self, uri: str) -> str | None:
        if self.ws is None:
            return None
        fs = to_fs_path(uri)
        return self.ws.relative(fs) if fs else None

    def positions(self, path: str) -> Positions:
        assert self.ws is not None
        return Positions(self.workspace.position_codec, self.ws.text(path) or "")

    # Analysis ---------------------------------------------------------------------------

    def schedule(self, delay: float = DEBOUNCE_SECONDS) -> None:
        self.generation += 1
        task = asyncio.ensure_future(self._analyse(self.generation, delay))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _analyse(self, generation: int, delay: float) -> None:
        await asyncio.sleep(delay)
        if generation != self.generation or self.ws is None:
            return  # a later change restarted the timer
        if self.running is None:
            self.running = asyncio.Lock()
        async with self.running:
            if generation != self.generation and self.ready.is_set():
                return
            try:
                changed = await asyncio.get_running_loop().run_in_executor(None, self.ws.refresh)
            except KnowlError as exc:  # a bad configuration, say: one line, as the CLI says
                self.say(f"knowl: {exc}")
                return
            except Exception as exc:  # a bug must not take the editor's server down with it
                self.say(f"knowl: the analysis failed ({type(exc).__name__}: {exc})")
                return
            finally:
                self.ready.set()
        # Open documents always hear (an empty list says the page is clean), others when
        # their findings changed.
        for path in self.ws.buffers:
            changed.setdefault(path, self.ws.by_path.get(path, []))
        for path, found in sorted(changed.items()):
            if path == ".":
                continue  # about the project (no git, say): no file to show it in
            where = self.positions(path)
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(
                    uri=self.uri(path),
                    diagnostics=[features.diagnostic(d, where) for d in found],
                )
            )

    def poll(self) -> None:
        task = asyncio.ensure_future(self._poll())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        while self.ws is not None:
            await asyncio.sleep(POLL_SECONDS)
            if await loop.run_in_executor(None, self.ws.changed_on_disk):
                self.ws.files_changed()
                self.schedule()

    def say(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(types.MessageType.Error, message))

    async def wait(self) -> bool:
        try:
            await asyncio.wait_for(self.ready.wait(), READY_SECONDS)
        except TimeoutError:
            return False
        return self.ws is not None and self.ws.analysis is not None


def _answered_refusals(record: logging.LogRecord) -> bool:
    """pygls logs a handler's JsonRpcException (a refused rename, say) with its traceback,
    after answering it to the client as an error: a refusal is no fault, and its message may
    quote what the client sent (a secret in a new name). Such records are dropped; every
    other record is kept, its message redacted."""
    error = record.exc_info[1] if record.exc_info else None
    inner = error.exceptions if isinstance(error, BaseExceptionGroup) else (error,)
    if any(isinstance(one, JsonRpcException) for one in inner):
        return False
    record.msg, record.args = redact(record.getMessage()), None
    return True


def build_server(root: Path | None, config_file: Path | None = None) -> KnowlServer:
    # pygls logs to stderr; a client shows stderr, and the protocol carries what matters.
    # Every pygls logger (json_rpc, server, ...) logs through this one handler, filtered.
    pygls_log = logging.getLogger("pygls")
    pygls_log.setLevel(logging.ERROR)
    if not any(getattr(h, "knowl", False) for h in pygls_log.handlers):
        handler = logging.StreamHandler()
        handler.addFilter(_answered_refusals)
        handler.knowl = True  # type: ignore[attr-defined]
        pygls_log.addHandler(handler)
        pygls_log.propagate = False
    server = KnowlServer(root, config_file)
    _register_documents(server)
    _register_features(server)
    renaming.register(server)
    actions.register(server)
    return server


def _on_initialize(ls: KnowlServer, params: types.InitializeParams) -> None:
    uri = params.root_uri
    if params.workspace_folders:
        uri = params.workspace_folders[0].uri
    fs = to_fs_path(uri) if uri else params.root_path
    if ls.given_root is None and fs:
        ls.given_root = Path(fs)


async def _on_initialized(ls: KnowlServer, params: types.InitializedParams) -> None:
    start = ls.given_root or Path.cwd()
    try:
        ls.ws = Workspace(project_root(start.resolve()), ls.config_file)
    except KnowlError as exc:
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"knowl: {exc}"))
        ls.ready.set()
        return
    for document in list(ls.workspace.text_documents.values()):
        path = ls.path(document.uri)
        if path is not None:
            ls.ws.open(path, document.source)
    ls.schedule(0)
    capabilities = ls.client_capabilities.workspace
    watched = capabilities.did_change_watched_files if capabilities else None
    if watched is None or not watched.dynamic_registration:
        ls.poll()  # the client will not say what changed on disk: look every few seconds
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern=g) for g in WATCHED]
    )
    registration = types.Registration(
        id="knowl-watch",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=options,
    )
    await ls.client_register_capability_async(
        types.RegistrationParams(registrations=[registration])
    )


def _track(ls: KnowlServer, uri: str) -> None:
    path = ls.path(uri)
    if ls.ws is None or path is None:
        return
    ls.ws.open(path, ls.workspace.get_text_document(uri).source)
    ls.schedule()


def _on_did_open(ls: KnowlServer, params: types.DidOpenTextDocumentParams) -> None:
    _track(ls, params.text_document.uri)


def _on_did_change(ls: KnowlServer, params: types.DidChangeTextDocumentParams) -> None:
    _track(ls, params.text_document.uri)


def _on_did_save(ls: KnowlServer, params: types.DidSaveTextDocumentParams) -> None:
    if ls.ws is not None:
        ls.ws.files_changed()
    _track(ls, params.text_document.uri)


def _on_did_close(ls: KnowlServer, params: types.DidCloseTextDocumentParams) -> None:
    path = ls.path(params.text_document.uri)
    if ls.ws is not None and path is not None:
        ls.ws.close(path)  # the file on disk counts again
        ls.schedule()


def _on_watched(ls: KnowlServer, params: types.DidChangeWatchedFilesParams) -> None:
    if ls.ws is not None:
        ls.ws.files_changed()
        ls.schedule()


def _register_documents(server: KnowlServer) -> None:
    server.feature(types.INITIALIZE)(_on_initialize)
    server.feature(types.INITIALIZED)(_on_initialized)
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(_on_did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(_on_did_change)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE)(_on_did_save)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(_on_did_close)
    server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(_on_watched)


async def _on_completion(
    ls: KnowlServer, params: types.CompletionParams
) -> types.CompletionList | None:
    path = ls.path(params.text_document.uri)
    if path is None or not await ls.wait() or ls.ws is None:
        return None
    where = ls.positions(path)
    line, column = where.cursor(params.position)
    return features.complete(ls.ws, path, where, line, column, ls.uri)


async def _on_hover(ls: KnowlServer, params: types.HoverParams) -> types.Hover | None:
    path = ls.path(params.text_document.uri)
    if path is None or not await ls.wait() or ls.ws is None:
        return None
    line, column = ls.positions(path).cursor(params.position)
    text = features.hover(ls.ws, path, line, column)
    if text is None:
        return None
    return types.Hover(contents=types.MarkupContent(types.MarkupKind.Markdown, text))


async def _on_definition(
    ls: KnowlServer, params: types.DefinitionParams
) -> list[types.Location] | None:
    path = ls.path(params.text_document.uri)
    if path is None or not await ls.wait() or ls.ws is None:
        return None
    line, column = ls.positions(path).cursor(params.position)
    out = []
    for target, target_line, target_column in features.definition(ls.ws, path, line, column):
        point = ls.positions(target).position(target_line, target_column)
        out.append(types.Location(ls.uri(target), types.Range(point, point)))
    return out


async def _on_references(
    ls: KnowlServer, params: types.ReferenceParams
) -> list[types.Location] | None:
    path = ls.path(params.text_document.uri)
    if path is None or not await ls.wait() or ls.ws is None:
        return None
    line, column = ls.positions(path).cursor(params.position)
    places = features.references(ls.ws, path, line, column)
    texts: dict[str, Positions] = {}
    out = []
    for where, found in places:
        positions = texts.get(where) or texts.setdefault(where, ls.positions(where))
        out.append(types.Location(ls.uri(where), positions.span(found.span)))
    return out


async def _on_symbols(
    ls: KnowlServer, params: types.DocumentSymbolParams
) -> list[types.DocumentSymbol] | None:
    path = ls.path(params.text_document.uri)
    if path is None or not await ls.wait() or ls.ws is None:
        return None
    page = ls.ws.page(path)
    return features.document_symbols(page, ls.positions(path)) if page else []


async def _on_workspace_symbols(
    ls: KnowlServer, params: types.WorkspaceSymbolParams
) -> list[types.WorkspaceSymbol] | None:
    if not await ls.wait() or ls.ws is None:
        return None
    return features.workspace_symbols(ls.ws, params.query, ls.uri)


async def _on_folding(
    ls: KnowlServer, params: types.FoldingRangeParams
) -> list[types.FoldingRange] | None:
    path = ls.path(params.text_document.uri)
    if path is None or not await ls.wait() or ls.ws is None:
        return None
    return features.folding(ls.ws.page(path), ls.positions(path))


def _register_features(server: KnowlServer) -> None:
    server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=["[", "#", ":", "(", "/", " ", "^"]),
    )(_on_completion)
    server.feature(types.TEXT_DOCUMENT_HOVER)(_on_hover)
    server.feature(types.TEXT_DOCUMENT_DEFINITION)(_on_definition)
    server.feature(types.TEXT_DOCUMENT_REFERENCES)(_on_references)
    server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)(_on_symbols)
    server.feature(types.WORKSPACE_SYMBOL)(_on_workspace_symbols)
    server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)(_on_folding)
