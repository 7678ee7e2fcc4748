"""A page's bytes in, the same bytes out except the lines a write changes (SPEC 7).

Edits work on text; a page is bytes. A page is decoded as UTF-8 without newline translation
(CRLF stays CRLF, a lone CR stays a CR), a leading byte-order mark is set aside for editing and
put back on write, and the file is replaced only when its bytes on disk are still the ones the
edit was computed from. Where a write lands is decided here too: inside the page's own scope
folder, through a symlink when the page is one, never anywhere else.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from knowl_build.core.errors import FULL, KnowlError, NoSpace
from knowl_build.core.layouts import Layout
from knowl_build.core.resolve import place

BOM = b"\xef\xbb\xbf"


class WriteRefused(KnowlError):
    """A write that the rules refuse (exit 1); nothing was written, unless `written` names
    the files of a write of several that were (its message says so)."""

    exit_code = 1

    def __init__(self, message: str, written: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.written = written


class WriteRaced(WriteRefused):
    """Another program changed or made the file `path` while the write was prepared."""

    def __init__(self, message: str, path: str, written: tuple[str, ...] = ()) -> None:
        super().__init__(message, written)
        self.path = path


@dataclass(frozen=True, slots=True)
class PageBytes:
    """A page as edits see it: `text` is the bytes after any BOM, decoded as they are."""

    data: bytes
    bom: bool
    text: str

    @classmethod
    def of(cls, path: str, data: bytes) -> PageBytes:
        bom = data.startswith(BOM)
        try:
            # bytes.decode never translates newlines (open() in text mode would).
            text = data[len(BOM) :].decode("utf-8") if bom else data.decode("utf-8")
        except UnicodeDecodeError:
            raise WriteRefused(f"{path}: is not UTF-8 text; not edited") from None
        return cls(data, bom, text)

    @classmethod
    def read(cls, root: Path, path: str) -> PageBytes:
        try:
            data = (root / path).read_bytes()
        except OSError as exc:
            raise WriteRefused(f"{path}: cannot be read ({exc.strerror}); not edited") from None
        return cls.of(path, data)


@dataclass(slots=True)
class Change:
    """One file a write changes: `before` and `after` are text as edits see it; `original` is
    the file's bytes the edit was computed from (None for a new file)."""

    path: str  # project-relative
    before: str | None  # None for a new file
    after: str
    original: bytes | None = None
    bom: bool = False

    @classmethod
    def edit(cls, path: str, source: PageBytes, after: str) -> Change:
        return cls(path, source.text, after, source.data, source.bom)

    def data(self) -> bytes:
        """The bytes to write: the edited text, behind the BOM the file had."""
        try:
            encoded = self.after.encode("utf-8")
        except UnicodeEncodeError:
            raise WriteRefused(f"{self.path}: the new text is not valid Unicode") from None
        return BOM + encoded if self.bom else encoded

    def diff(self) -> str:
        return unified_diff(self.path, self.before, self.after)


def unified_diff(path: str, before: str | None, after: str) -> str:
    """A unified diff that ends with a line break, as git writes one: a last line without its
    own is followed by `\\ No newline at end of file`."""
    lines = [] if before is None else before.splitlines(keepends=True)
    diff = difflib.unified_diff(
        lines,
        after.splitlines(keepends=True),
        fromfile="/dev/null" if before is None else f"a/{path}",
        tofile=f"b/{path}",
    )
    # Lines are split where str.splitlines splits: only the file's last line can end without.
    return "".join(
        line if line.splitlines() != [line] else f"{line}\n\\ No newline at end of file\n"
        for line in diff
    )


def write_target(root: Path, layout: Layout, path: str) -> Path:
    """The file a write of page `path` really changes.

    The page must be a page path (SPEC 2.1), and what it resolves to, symlinks followed, must
    be a page of the same scope inside the project: a link to a file of the same scope is
    written through (the link stays a link), and anything else is refused, so no name and no
    link can lead a write out of its place."""
    parts = PurePosixPath(path).parts
    where = (
        place(path, layout)
        if layout.contains(path)
        and path.endswith(".md")
        and not PurePosixPath(path).is_absolute()
        and not any(part in ("", ".", "..") for part in parts)
        else None
    )
    if where is None:
        raise WriteRefused(f"{path}: not a page path under {layout.folder}/; not written")
    real_root = Path(os.path.realpath(root))
    real_knowledge = Path(os.path.realpath(root / layout.folder))
    real = Path(os.path.realpath(root / path))
    real_where = None
    if real.is_relative_to(real_root) and real.is_relative_to(real_knowledge):
        inner = real.relative_to(real_knowledge).as_posix()
        real_where = place(f"{layout.prefix}{inner}", layout) if inner != "." else None
    if real_where is None or real_where.scope != where.scope or real.suffix != ".md":
        raise WriteRefused(f"{path}: leads to a file outside its scope's folder; not written")
    return real


def write_changes(root: Path, layout: Layout, changes: list[Change]) -> list[str]:
    """Each file is written to a temporary file and renamed into place, once every file is
    known to be as the write found it (its bytes, not a decoding of them) and to stay in its
    place, and once every new file is on disk beside its target; so a refusal, or a file that
    cannot be written (a read-only tree: WriteRefused naming it), leaves every file as it was.
    Returns the project-relative paths really written, one per change (a symlinked page's
    target), which is what a commit must add."""
    targets = []
    for change in changes:
        target = write_target(root, layout, change.path)
        if change.before is None:
            if os.path.lexists(root / change.path) or os.path.lexists(target):
                raise WriteRaced(
                    f"{change.path} appeared while the write was prepared; run it again",
                    change.path,
                )
        else:
            original = change.original
            if original is None:
                original = (BOM if change.bom else b"") + change.before.encode("utf-8")
            try:
                now = target.read_bytes()
            except OSError:
                now = None
            if now != original:
                raise WriteRaced(
                    f"{change.path} changed while the write was prepared; run it again",
                    change.path,
                )
        targets.append((change.path, target, change.data()))
    real_root = Path(os.path.realpath(root))
    staged = _stage(targets)
    written: list[str] = []
    for change, (path, target, _), temporary in zip(changes, targets, staged, strict=True):
        try:
            if change.before is None:
                _place_new(temporary, target)
            else:
                os.replace(temporary, target)
        except OSError as exc:
            _discard(staged[len(written) :])
            done = f"; already written: {', '.join(written)}" if written else ""
            if isinstance(exc, FileExistsError):
                # Another program made the file after the check above: it is theirs, kept.
                raise WriteRaced(
                    f"{path} appeared while the write was prepared; run it again{done}",
                    path,
                    tuple(written),
                ) from None
            message = f"{path}: cannot be written ({_reason(exc)}){done}"
            raise WriteRefused(message, tuple(written)) from None
        written.append(target.relative_to(real_root).as_posix())
    return written


def _stage(targets: list[tuple[str, Path, bytes]]) -> list[Path]:
    """Every file's new bytes in a temporary file beside it, on disk, with the mode the file
    has (a new file: the usual 0666 less the umask). Renaming them into place is all that is
    left to do; if any cannot be made (a read-only tree, a full disk, no permission), the ones
    made are removed with any folder made for them, and the write is refused: nothing of it
    is left behind."""
    staged: list[Path] = []
    made: list[Path] = []
    for path, target, data in targets:
        try:
            for folder in reversed([target.parent, *target.parent.parents]):
                if not folder.exists():
                    folder.mkdir()
                    made.append(folder)
            try:
                mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                mode = None
            # A short name of its own, so a file whose name is at the length limit can be
            # replaced.
            temporary = target.with_name(f".knowl-{secrets.token_hex(6)}.tmp")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            staged.append(temporary)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                if mode is not None:
                    os.fchmod(handle.fileno(), mode)
                handle.flush()
                os.fsync(handle.fileno())  # pages are the user's own work
        except OSError as exc:
            _discard(staged)
            for folder in reversed(made):
                with contextlib.suppress(OSError):
                    folder.rmdir()
            message = f"{path}: cannot be written ({_reason(exc)}); nothing was written"
            # A full disk is no refusal by the rules (exit 1) but a run that could not go on.
            raise (NoSpace if exc.errno in FULL else WriteRefused)(message) from None
    return staged


# A file system without hard links answers os.link with one of these.
_NO_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK})


def _place_new(temporary: Path, target: Path) -> None:
    """Put a new file in place without ever replacing one: a hard link fails when the name
    is taken (FileExistsError), where a rename would silently overwrite another writer's
    file. Without hard links, the name is first taken exclusively (an empty file), then the
    new bytes are renamed over that empty file of our own."""
    try:
        os.link(temporary, target)
    except OSError as exc:
        if isinstance(exc, FileExistsError) or exc.errno not in _NO_LINKS:
            raise
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        try:
            os.replace(temporary, target)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(target)  # the empty file we made, nobody else's
            raise
        return
    with contextlib.suppress(OSError):
        os.unlink(temporary)


def _discard(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _reason(exc: OSError) -> str:
    """Why the system refused, without the path it names (the message names the page)."""
    return exc.strerror or type(exc).__name__
