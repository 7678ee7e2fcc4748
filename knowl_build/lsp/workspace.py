"""The project as the editor sees it: its files with the unsaved buffers laid over them,
analysed by the same pipeline as `knowl check` (same codes, positions, severities, messages,
suppressions and per-path severities), findings grouped by file.

Nothing here writes into the project. The caches `knowl check` left in `.knowl/cache/` (the
parse cache, the history replay) are copied into a private temporary folder when the server
starts, so an unchanged page is not parsed again and history is replayed only past the last
check; what the server adds to them stays in that folder, removed at exit.

Between analyses it keeps a session (`pipeline.session`: after a keystroke only the edited
page is parsed, and only the pages the edit can change are checked again, by the ledger of
`pipeline.recheck`, seeded from the last check's) and a resident parse cache (each cached
page decoded once a session).

This module stands in for an application-layer operation ("analyse with buffers") until
`app/` has one: it should move there."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import hashlib
import os
import re
import shutil
import tempfile
import threading
from collections import defaultdict
from pathlib import Path

from knowl_build.app.project import find_project_root, load_config
from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.core.model import Entity, Page
from knowl_build.parse.text import decode
from knowl_build.pipeline.analysis import HISTORY_CACHE, Analysis
from knowl_build.pipeline.cache import CachePlace, ParseCache
from knowl_build.pipeline.discover import excluded_by
from knowl_build.pipeline.inputs import Inputs, read_inputs
from knowl_build.pipeline.pages import parse_cache_key
from knowl_build.pipeline.recheck import LEDGER_CACHE, load_ledger
from knowl_build.pipeline.session import Session
from knowl_build.pipeline.stages import parsing, resolution
from knowl_build.support import clock, process
from knowl_build.support.trust import machine_key

# The cache files copied from the project's `.knowl/cache/` (the parse cache, the replay, the
# last check's ledger).
SEEDED = ("pages.jsonl", HISTORY_CACHE, LEDGER_CACHE)
CONFIG_FILES = ("knowl.toml", "pyproject.toml")
_REF = re.compile(r"refs/[A-Za-z0-9._/-]{1,200}")


def project_root(start: Path) -> Path:
    """The project the editor opened: the first folder upward holding a project, else the
    folder itself (its checks then say what is missing, as `knowl check` would)."""
    return find_project_root(start) or start


class Workspace:
    """One project, its open buffers and the last analysis of both."""

    def __init__(self, root: Path, config_file: Path | None = None) -> None:
        self.root = root.resolve()
        self.config_file = config_file
        self.config: Config = load_config(self.root, config_file)
        self.buffers: dict[str, str] = {}  # project-relative path -> the editor's text
        self.analysis: Analysis | None = None
        self.by_path: dict[str, list[Diagnostic]] = {}
        self._inputs: Inputs | None = None
        self._state: tuple[object, ...] | None = None
        self._key: str | None = None  # the inputs' fingerprint of the last analysis
        self.read_stamp: int | None = None  # `disk_stamp` when the files were last read
        self._lock = threading.Lock()
        self.caches = _private_caches(self.root)
        self._session: Session | None = None  # the analysis kept between edits
        self._by_path: tuple[Analysis, dict[str, Page]] | None = None
        self._pages: ParseCache | None = None

    # Paths -------------------------------------------------------------------------------

    def relative(self, fs_path: str) -> str | None:
        """The project-relative path of a file the editor names, None outside the project
        (a path that leaves it by `..` or through a symlink is outside)."""
        absolute = os.path.abspath(fs_path)
        real = os.path.realpath(absolute)
        root = str(self.root)
        for candidate in (absolute, real):
            if candidate != root and not candidate.startswith(root + os.sep):
                return None
        return os.path.relpath(absolute, root).replace(os.sep, "/")

    def absolute(self, path: str) -> Path:
        return self.root / path

    # Buffers -----------------------------------------------------------------------------

    def open(self, path: str, text: str) -> None:
        self.buffers[path] = text

    def close(self, path: str) -> None:
        self.buffers.pop(path, None)

    def files_changed(self) -> None:
        """Files changed on disk (created, deleted, renamed, a checkout): read them again."""
        self._inputs = None

    def changed_on_disk(self) -> bool:
        """Whether the disk differs from what was last read (polled, see `disk_stamp`)."""
        return self.read_stamp is not None and self.disk_stamp() != self.read_stamp

    def text(self, path: str) -> str | None:
        """The text of a page or semantic file: the buffer, else what the analysis read."""
        if path in self.buffers:
            return self.buffers[path]
        inputs = self._inputs
        if inputs is None:
            return None
        entry = inputs.pages.get(path) or inputs.semantics.get(path)
        if entry is None or entry[0] is None:
            return None
        return decode(entry[0])

    # The analysis ------------------------------------------------------------------------

    @process.held()  # no cyclic collection while it reads and allocates
    def refresh(self) -> dict[str, list[Diagnostic]]:
        """Analyse the project with the buffers over its files; the findings by path of
        every file whose findings changed since the last analysis (an empty list clears)."""
        with self._lock:
            self._reload_if_changed()
            inputs = self._overlaid(self._base())
            # What the check memo is keyed by: the same inputs give the same findings (a
            # page opened, or saved unchanged, costs no analysis).
            key = inputs.fingerprint(self.config, clock.today())
            if key == self._key and self.analysis is not None:
                return {}
            analysis = self._analysed(inputs)
            self._key = key
            grouped: dict[str, list[Diagnostic]] = defaultdict(list)
            for diagnostic in analysis.diagnostics:
                grouped[diagnostic.path].append(diagnostic)
            before = self.by_path
            changed = {
                path: grouped.get(path, [])
                for path in set(before) | set(grouped)
                if before.get(path) != grouped.get(path)
            }
            self.analysis, self.by_path = analysis, dict(grouped)
            return changed

    def _analysed(self, inputs: Inputs) -> Analysis:
        """The session brought up to date with `inputs` (only the pages an edit can change are
        parsed and checked again), or a new session where more than pages changed."""
        today = clock.today()
        session = self._session
        updated = None
        if session is not None and session.config is self.config:
            updated = session.update(inputs, today)
        if updated is None:
            ledger = session.analysis.ledger if session is not None else None
            if ledger is None:  # the last check's, seeded with the caches
                git = inputs.discovery.git
                toplevel = git.toplevel if git is not None else None
                rest = inputs.fingerprint(self.config, today, pages=False)
                ledger = load_ledger(self.caches, rest, toplevel, self.root)
            updated = Session.start(
                self.root, self.config, today, inputs, self.caches, self._parse_cache(), ledger
            )
        self._session = updated
        return updated.analysis

    def analyse_moved(self, old: str, new: str) -> Analysis:
        """The project as if the page at `old` were at `new` (what a rename would make of it),
        the buffers over the files, parsed and indexed: what its links resolve to, no rule
        run (a rename asks only which links break); nothing is kept."""
        with self._lock:
            inputs = self._overlaid(self._base())
            pages = {new if path == old else path: entry for path, entry in inputs.pages.items()}
            listed = sorted(new if path == old else path for path in inputs.discovery.pages)
            discovery = dataclasses.replace(inputs.discovery, pages=listed)
            moved = Inputs(discovery, pages, inputs.semantics)
            project = parsing.parse_project(
                self.config, moved, self.caches, cache=self._parse_cache()
            )
            index = resolution.page_index(self.root, self.config, discovery, project.pages)
            return Analysis(self.root, self.config, discovery, project.layer, project.pages, index)

    def _parse_cache(self) -> ParseCache:
        """The session's parse cache, for the configuration as it is now."""
        key = parse_cache_key(self.config)
        if self._pages is None or self._pages.key != key:
            self._pages = ParseCache(
                self.caches.folder, key, machine=self.caches.key, resident=True
            )
        return self._pages

    def disk_stamp(self) -> int:
        """A hash of what is on disk under the knowledge folder and the semantic files'
        folders, the configuration and git's HEAD: for clients that do not report changed
        files, polled to notice a file created, deleted, renamed or changed outside the
        editor, and a checkout."""
        found: list[tuple[str, int, int]] = []
        folders = {str(self.root / self.config.knowledge_dir)}
        inputs = self._inputs
        if inputs is not None:
            discovery = inputs.discovery
            for path in [*discovery.semantic_files, *discovery.dbt_files]:
                folders.add(str(self.root / os.path.dirname(path)))
        for folder in sorted(folders):
            _tree_stamp(folder, found)
        return hash((tuple(found), self._configuration_state()))

    def _configuration_state(self) -> tuple[object, ...]:
        """The configuration files' stamps (the root's, and `--config`'s) and git's HEAD."""
        files = [self.root / name for name in CONFIG_FILES]
        if self.config_file is not None:
            files.append(self.config_file)
        return (*(_stamp(path) for path in files), _head(self.root))

    def _reload_if_changed(self) -> None:
        """A changed configuration or git HEAD (a commit, a checkout) is read anew."""
        state = self._configuration_state()
        if self._state is not None and state != self._state:
            self.config = load_config(self.root, self.config_file)
            self._inputs = None
        self._state = state

    def _base(self) -> Inputs:
        if self._inputs is None:
            self._inputs = read_inputs(self.root, self.config)
            self.read_stamp = self.disk_stamp()
        return self._inputs

    def _overlaid(self, base: Inputs) -> Inputs:
        pages, semantics = dict(base.pages), dict(base.semantics)
        discovery = base.discovery
        added: list[str] = []
        # A copy: the server's thread opens and closes buffers while this one analyses.
        for path, text in list(self.buffers.items()):
            # A lone surrogate (JSON can send one) is kept as the bytes it would be: the page
            # is then no UTF-8, as a file of those bytes would be.
            data = text.encode("utf-8", "surrogatepass")
            entry = (data, hashlib.sha256(data).hexdigest())
            if path in pages:
                pages[path] = entry
            elif path in semantics:
                semantics[path] = entry
            elif self.could_be_page(path):
                pages[path] = entry  # a page not saved yet
                added.append(path)
        if added:
            discovery = dataclasses.replace(discovery, pages=sorted([*discovery.pages, *added]))
        return Inputs(discovery, pages, semantics)

    def could_be_page(self, path: str) -> bool:
        """Whether an unsaved buffer at `path` would be a page: a `.md` file in the knowledge
        folder (in either layout, `"."` included) that `[knowledge] exclude` leaves in."""
        parts = path.split("/")
        return (
            path.endswith(".md")
            and self.config.layout.contains(path)
            and not any(part.startswith(".") or part in ("", "..") for part in parts)
            and not excluded_by(self.config.knowledge_exclude)(path)
        )

    # Lookups on the last analysis ----------------------------------------------------------

    def page(self, path: str) -> Page | None:
        analysis = self.analysis
        if analysis is None:
            return None
        by_path = self._by_path
        if by_path is None or by_path[0] is not analysis:  # one table per analysis
            by_path = self._by_path = (analysis, {p.path: p for p in analysis.pages})
        return by_path[1].get(path)

    def entity(self, name: str) -> Entity | None:
        analysis = self.analysis
        return analysis.layer.entities.get(name) if analysis is not None else None


def _tree_stamp(folder: str, into: list[tuple[str, int, int]]) -> None:
    """Every file and folder under `folder` with its mtime and size (links not followed)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        into.append((entry.path, info.st_mtime_ns, info.st_size))
        if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
            _tree_stamp(entry.path, into)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


def _head(root: Path) -> bytes | None:
    """What `.git/HEAD` and the branch it names say (a commit or a checkout changes it).
    Only plain files inside `.git/` are read: a HEAD that names a ref outside `refs/`, or
    a link, is taken as it stands (the pipeline asks git itself for the history)."""
    git = root / ".git"
    head_file = git / "HEAD"
    if head_file.is_symlink():
        return None
    try:
        head = head_file.read_bytes()
    except OSError:
        return None
    if head.startswith(b"ref: "):
        ref = head[5:].strip().decode("utf-8", "replace")
        target = git / ref
        if _REF.fullmatch(ref) and ".." not in ref and not target.is_symlink():
            with contextlib.suppress(OSError):
                return head + target.read_bytes()
    return head


def _private_caches(root: Path) -> CachePlace:
    """A temporary cache folder seeded with the project's caches (sealed with this machine's
    key, so only what this machine wrote is trusted, as `knowl check` trusts it)."""
    key = machine_key()
    if key.secret is None:
        return CachePlace(None, key=key)
    folder = Path(tempfile.mkdtemp(prefix="knowl-lsp-"))
    atexit.register(shutil.rmtree, folder, True)
    project = root / ".knowl" / "cache"
    expected = os.path.join(os.path.realpath(root), ".knowl", "cache")
    if os.path.realpath(project) == expected:  # never through a symlink
        for name in SEEDED:
            source = project / name
            if source.is_file() and not source.is_symlink():
                with contextlib.suppress(OSError):
                    shutil.copyfile(source, folder / name)
    return CachePlace(folder, key=key)
