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
