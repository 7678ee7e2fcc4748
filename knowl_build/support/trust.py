"""What this machine wrote: a per-machine secret key and the HMAC seals made with it.

knowl reuses what an earlier run left behind: the check memo, the parse cache, the history
replay, the previous build. Everything in a checkout may come from a pull request (`git add
-f` commits `.knowl/` as easily as a page), and the keys those caches are looked up by are
computable, so a cache is trusted only when it carries a seal that only this machine can
make: an HMAC-SHA256 under a secret that never leaves the machine's cache home. A cache
without a valid seal is ignored (the run is cold), never an error.

The secret is 32 random bytes in `$XDG_CACHE_HOME/knowl-build/machine-key` (or
`~/.cache/knowl-build/machine-key`), made on first use, private to its owner. The
`KNOWL_CACHE_KEY` environment variable replaces it, so that CI runs can share caches through
a secret of the CI system. Without either, caches are off.

Standard library only: the reader and the build both use it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import stat
from dataclasses import dataclass
from pathlib import Path

ENV_KEY = "KNOWL_CACHE_KEY"
KEY_FILE = "machine-key"
KEY_BYTES = 32
MIN_ENV_KEY = 16  # characters: a shorter shared secret could be guessed
TAG_BYTES = 64  # an HMAC-SHA256 in hex

# Opening never follows a symlink and never waits (a FIFO planted as a file would block).
_READ_FLAGS = (
    os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK
)


def cache_home() -> Path:
    """knowl's folder in the user's cache (`$XDG_CACHE_HOME` when absolute, as XDG says)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "knowl-build"


@dataclass(frozen=True, slots=True)
class MachineKey:
    """The secret seals are made with (None: none is usable, and `problem` says why)."""

    secret: bytes | None
    problem: str | None = None

    def sealer(self, purpose: str) -> Sealer | None:
        return Sealer(self.secret, purpose) if self.secret is not None else None


NO_KEY = MachineKey(None, "no key was given")


def machine_key() -> MachineKey:
    """`KNOWL_CACHE_KEY` when set, else this machine's key file (made on first use)."""
    shared = os.environ.get(ENV_KEY)
    if shared is not None and shared != "":
        if len(shared) < MIN_ENV_KEY:
            return MachineKey(None, f"{ENV_KEY} is shorter than {MIN_ENV_KEY} characters")
        return MachineKey(hashlib.sha256(b"knowl-build cache key\0" + os.fsencode(shared)).digest())
    try:
        path = cache_home() / KEY_FILE
    except RuntimeError:  # no home folder to find
        return MachineKey(None, f"there is no cache folder for its key (set {ENV_KEY})")
    try:
        return MachineKey(_read_key(path))
    except (FileNotFoundError, NotADirectoryError):
        pass
    except _BadKey as exc:
        return MachineKey(None, str(exc))
    except OSError as exc:
        return MachineKey(None, f"its key {path} cannot be read ({exc.strerror})")
    try:
        _create_key(path)
        return MachineKey(_read_key(path))
    except _BadKey as exc:
        return MachineKey(None, str(exc))
    except OSError as exc:
        return MachineKey(None, f"its key cannot be written in {path.parent} ({exc.strerror})")


class _BadKey(Exception):
    """A key file that exists but must not be used."""


def _read_key(path: Path) -> bytes:
    fd = os.open(path, _READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _BadKey(f"its key {path} is not a regular file")
        # Anyone else who can read or replace the key can forge every cache.
        if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
            raise _BadKey(f"its key {path} belongs to another user")
        if info.st_mode & 0o077:
            raise _BadKey(
                f"its key {path} is open to other users (mode "
                f"{stat.S_IMODE(info.st_mode):03o}); make it private: chmod 600"
            )
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise _BadKey(f"its key {path} is damaged; remove it and knowl makes a new one")
    return data


def _create_key(path: Path) -> None:
    """Write a new key beside, then link it into place: two processes that race agree on
    the one that got there first, and nobody ever reads half a key."""
    # Imported here: start-up time (the key is made once per machine).
    import secrets
    import tempfile

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".machine-key.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(KEY_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first: use theirs
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            # A file system without hard links: exclusive creation, then the content.
            with contextlib.suppress(FileExistsError):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(_read_regular(Path(tmp), KEY_BYTES))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


class Sealer:
    """HMAC-SHA256 under the machine's secret, for one purpose: a seal made for the parse
    cache is no seal of a check memo, and one made under one cache key is none under
    another (`purpose` holds both)."""

    __slots__ = ("_mac",)

    def __init__(self, secret: bytes, purpose: str) -> None:
        derived = hmac.digest(secret, b"knowl-build seal\0" + purpose.encode(), "sha256")
        self._mac = hmac.new(derived, digestmod="sha256")

    def seal(self, data: bytes | memoryview) -> bytes:
        """The seal of `data`: 64 hex digits (ASCII)."""
        mac = self._mac.copy()
        mac.update(data)
        return mac.hexdigest().encode("ascii")

    def check(self, data: bytes | memoryview, tag: bytes | memoryview) -> bool:
        return len(tag) == TAG_BYTES and hmac.compare_digest(self.seal(data), tag)

    def wrap(self, data: bytes) -> bytes:
        """`data` with its seal in front, on a line of its own."""
        return self.seal(data) + b"\n" + data

    def unwrap(self, sealed: bytes) -> bytes | None:
        """What `wrap` sealed; None when the seal is missing or wrong."""
        tag, newline, data = sealed.partition(b"\n")
        return data if newline and self.check(data, tag) else None


def seal(secret: bytes, purpose: str, data: bytes) -> bytes:
    return Sealer(secret, purpose).seal(data)


def check(secret: bytes, purpose: str, data: bytes, tag: bytes) -> bool:
    return Sealer(secret, purpose).check(data, tag)


def _read_regular(path: Path, limit: int = -1) -> bytes:
    fd = os.open(path, _READ_FLAGS)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return handle.read(limit)


def read_cache_file(path: Path) -> bytes | None:
    """A cache file's bytes; None when it is missing or not a regular file. Never through a
    symlink, never blocking: a committed link to `/dev/zero` or a FIFO is no cache."""
    try:
        return _read_regular(path)
    except OSError:
        return None


def read_sealed(path: Path, sealer: Sealer | None) -> bytes | None:
    """The content of a file written as `sealer.wrap(content)`; None when there is none or
    its seal is not this sealer's (written elsewhere, or changed since)."""
    if sealer is None:
        return None
    data = read_cache_file(path)
    return sealer.unwrap(data) if data is not None else None
