"""The build lock: one build at a time per output folder; stale locks and staging folders.
The write lock: one governed write at a time per project, waiting a bounded time."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from knowl_build.artifacts.folders import (
    OutputFolderError,
    made_by_knowl,
    make_out_dir,
    os_reason,
    out_token,
    read_small,
)
from knowl_build.artifacts.layout import LOCK, LOCK_OWNER, STAGING_PREFIX, WRITE_LOCK
from knowl_build.core.errors import KnowlError

try:
    import fcntl
except ImportError:  # Windows: the write lock is a lock file like the build lock
    fcntl = None  # type: ignore[assignment]

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


# --- the write lock ---------------------------------------------------------------------------

# A governed write (reconcile, write, commit) takes well under a second; another writer waits
# for it this long before giving up, and a write never waits for a build (which holds the
# build lock, not this one).
WRITE_WAIT = 30.0
_POLL = 0.02
# flock is missing on this file system (some network mounts): the lock file protocol instead.
_NO_FLOCK = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL})


class WriteBusy(KnowlError):
    pass


def _lock_text() -> bytes:
    return f"{LOCK_OWNER} {os.getpid()} {socket.gethostname()}\n".encode()


def _busy(lock: Path, wait: float) -> WriteBusy:
    holder = _lock_holder(lock)
    who = f"another write (pid {holder[0]})" if holder is not None else "another write"
    return WriteBusy(f"{who} held {lock} for {wait:g}s; nothing was written: run it again")


def _foreign(lock: Path) -> WriteBusy:
    return WriteBusy(
        f"{lock} is not a lock knowl wrote; knowl leaves it alone: move it away "
        "if no knowl write is running"
    )


def _flock_write(lock: Path, deadline: float, wait: float) -> Callable[[], None] | None:
    """Hold an exclusive flock on the lock file (the kernel drops it when the process dies,
    so no lock is ever left behind); None when this file system has no flock. The file is
    removed on release, before it is unlocked; a waiter that then holds a file no longer in
    place opens the one that is."""
    if fcntl is None:
        return None
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    while True:
        fd = os.open(lock, flags, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise _busy(lock, wait) from None
                    time.sleep(_POLL)
                except OSError as exc:
                    if exc.errno in _NO_FLOCK:
                        os.close(fd)
                        return None
                    raise
            try:
                in_place = os.path.samestat(os.fstat(fd), os.lstat(lock))
            except FileNotFoundError:
                in_place = False
            if in_place:
                data = os.pread(fd, 4096, 0)
                if data and _lock_holder(lock) is None:
                    raise _foreign(lock)  # another program's file: neither changed nor removed
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    # Who holds it, for a waiter's message; a full disk leaves it empty, which is no harm.
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, _lock_text(), 0)

    def release() -> None:
        with contextlib.suppress(OSError):
            lock.unlink()
        os.close(fd)

    return release


def _file_write(lock: Path, deadline: float, wait: float) -> Callable[[], None]:
    """The lock file protocol of the build lock, waiting for a live holder: a lock left by a
    dead process (or another host's) is taken over, a file knowl did not write is left alone."""
    while True:
        if _take_lock(lock):
            break
        holder = _lock_holder(lock)
        if holder is None:
            if not os.path.lexists(lock):
                continue  # released meanwhile
            raise _foreign(lock)
        pid, host = holder
        if host == socket.gethostname() and _alive(pid):
            if time.monotonic() >= deadline:
                raise _busy(lock, wait)
            time.sleep(_POLL)
        elif _lock_holder(lock) == holder:
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()  # left by a dead writer: take it over

    def release() -> None:
        if _lock_holder(lock) == (os.getpid(), socket.gethostname()):
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()

    return release


@contextlib.contextmanager
def write_lock(out_dir: Path, wait: float = WRITE_WAIT) -> Iterator[None]:
    """One governed write of a project at a time, held across reconciling and writing, so
    two writes never decide from the same tree. Another writer is waited for up to `wait`
    seconds (WriteBusy after that, nothing written). This is not the build lock: a write
    runs while a build does."""
    make_out_dir(out_dir)
    lock = out_dir / WRITE_LOCK
    deadline = time.monotonic() + wait
    try:
        release = _flock_write(lock, deadline, wait) or _file_write(lock, deadline, wait)
    except OSError as exc:
        raise OutputFolderError(
            f"output folder {out_dir} cannot be used: {lock} ({os_reason(exc)}); "
            "nothing was written"
        ) from None
    try:
        yield
    finally:
        release()
