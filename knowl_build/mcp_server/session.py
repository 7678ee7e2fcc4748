"""One server process serves one client session (stdio): what it reads, whether it writes, and
who it answers as.

The session's user is `--user` (None: anonymous). Tools take a `user` argument as SPEC 11
says; when the server was started with `--user`, that argument may only name the same user
(any other is a tool error), so a client pinned to bob never reads alice's pages. Resources
and prompts have no user argument: they always answer as the session's user.

The SDK runs each request on a worker thread; the reader is re-opened when a build becomes
current (after a write, say), so calls take the session's lock one at a time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.app import reading
from knowl_build.app.project import Locator
from knowl_build.errors import UsageError
from knowl_build.names import valid_user


@dataclass
class Session:
    locator: Locator
    artifact: Path | None
    with_repo: bool
    allow_writes: bool
    user: str | None  # --user, valid (valid_user); None: anonymous
    readers: reading.CurrentReader = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self.user = valid_user(self.user)
        self.readers = reading.CurrentReader(self.locator, self.artifact)

    def reader_user(self, given: str | None) -> str | None:
        """Who a read answers as: `given`, else the session's user; with --user, only that
        user may be given."""
        if self.user is None:
            return given
        if given is not None and valid_user(given) != self.user:
            raise UsageError(self._pinned())
        return self.user

    def writer_user(self, given: str | None) -> str | None:
        """Whose scope a new page goes to: `given` (None: the global scope); with --user,
        only that user may be given."""
        if self.user is not None and given is not None and valid_user(given) != self.user:
            raise UsageError(self._pinned())
        return given

    def _pinned(self) -> str:
        return (
            f"this server answers as {self.user} (started with --user): omit `user` or pass "
            f"{self.user}"
        )

    def close(self) -> None:
        self.readers.close()
