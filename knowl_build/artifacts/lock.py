"""The build lock: one build at a time per output folder; stale locks and staging folders."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from knowl_build.artifacts.folders import (
    OutputFolderError,
    made_by_knowl,
    make_out_dir,
    os_reason,
    out_token,
    read_small,
)
from knowl_build.artifacts.layout import LOCK, LOCK_OWNER, STAGING_PREFIX
from knowl_build.errors import KnowlError

# --- the build lock ---------------------------------------------------------------------------


class BuildBusy(KnowlError):
    pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _lock_holder(lock: Path) -> tuple[int, str] | None:
    """The pid and host in a lock knowl wrote; None for anything else (another program's
    file, a link, garbage), which knowl never removes."""
    data = read_small(lock)
    try:
        owner, pid_text, host = (data or b"").decode("utf-8").rstrip("\n").split(" ", 2)
        pid = int(pid_text)
    except ValueError:  # UnicodeDecodeError is a ValueError
        return None
    if owner != LOCK_OWNER or pid <= 0 or not host or "\n" in host:
        return None
    return pid, host


def _take_lock(lock: Path) -> bool:
    """Create the lock whole (written beside, then linked into place); False when a lock
    is there already."""
    fd, tmp = tempfile.mkstemp(prefix=".knowl-lock.", dir=lock.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"{LOCK_OWNER} {os.getpid()} {socket.gethostname()}\n")
        try:
            os.link(tmp, lock)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise
            # No hard links here: exclusive creation (a reader may see it empty briefly).
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(f"{LOCK_OWNER} {os.getpid()} {socket.gethostname()}\n")
        return True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@contextlib.contextmanager
def build_lock(out_dir: Path) -> Iterator[None]:
    """One build at a time per output folder; a lock knowl left (its process is dead, or
    on another host) is taken over. A lock file knowl did not write is never removed."""
    make_out_dir(out_dir)
    lock = out_dir / LOCK
    try:
        for _attempt in range(2):
            if _take_lock(lock):
                break
            holder = _lock_holder(lock)
            if holder is None:
                if not os.path.lexists(lock):
                    continue  # released meanwhile
                raise BuildBusy(
                    f"{lock} is not a lock knowl wrote; knowl leaves it alone: move it away "
                    "if no knowl build is running"
                )
            pid, host = holder
            # Another host's pid says nothing here: its lock counts as left behind (a CI
            # cache can restore the lock of a container long gone).
            if host == socket.gethostname() and _alive(pid):
                raise BuildBusy(f"another build (pid {pid}) holds {lock}; wait for it to finish")
            if _lock_holder(lock) == holder:
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()  # left by a dead build: take it over
        else:
            raise BuildBusy(f"could not take the build lock {lock}")
    except OSError as exc:
        raise OutputFolderError(
            f"output folder {out_dir} cannot be used: {lock} ({os_reason(exc)})"
        ) from None
    try:
        _remove_stale_staging(out_dir)
        yield
    finally:
        if _lock_holder(lock) == (os.getpid(), socket.gethostname()):
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()


def _remove_stale_staging(out_dir: Path) -> None:
    """Staging folders of interrupted builds (we hold the lock, so nobody writes them): those
    knowl marked, and empty ones (a build that died before marking its folder)."""
    token = out_token(out_dir)
    for path in out_dir.glob(STAGING_PREFIX + "*"):
        if made_by_knowl(path, token):
            shutil.rmtree(path, ignore_errors=True)
        elif not path.is_symlink() and path.is_dir():
            with contextlib.suppress(OSError):
                path.rmdir()  # only when empty
