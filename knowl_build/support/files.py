"""Writing files so that a failure never leaves half a file: write beside, then rename."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path


def atomic_write(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Write `data` to a temporary file beside `path`, then rename it into place.

    An existing file keeps its permission bits; a new one gets the usual mode (0666 less the
    umask), not the private mode of a temporary file. With `durable`, the data reaches the
    disk before the rename (for pages, which are the user's own work)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where a folder of the path should be
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path)) from None
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    # A short name of its own, so that a file whose name is at the length limit can be replaced.
    tmp = path.with_name(f".knowl-{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            # A failed write (a full disk) names no file: name the one it was for, so the
            # caller can tell whose folder failed.
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


def write_output(path: Path, data: bytes) -> None:
    """Write `data` to a file the user named for output (`--sarif FILE`), never replacing
    what the name is: a path that exists and is not a regular file (a device such as
    /dev/null, a FIFO, /dev/stdout's /proc/self/fd/1) is opened and written through; a
    symlink is followed and its target written atomically, the link left as it is; a
    regular or absent path is written atomically. A failed write raises (ENOSPC on
    /dev/full is a failure, not a success)."""
    try:
        found: os.stat_result | None = os.stat(path)  # follows symlinks
    except FileNotFoundError:  # absent, or a link to nothing yet: write the target
        found = None
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if found is not None and not stat.S_ISREG(found.st_mode):
        _write_through(path, data)
        return
    target = Path(os.path.realpath(path))
    if found is not None:
        try:
            same = os.path.samestat(found, os.stat(target))
        except OSError:
            same = False
        if not same:  # a magic link (/proc/self/fd/N to a file the shell opened): use it
            _write_through(path, data)
            return
    atomic_write(target, data)


def _write_through(path: Path, data: bytes) -> None:
    """Open what `path` names, without creating or truncating it, and write all of `data`."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOCTTY)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        os.close(fd)
