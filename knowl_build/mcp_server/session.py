"""One server process, one knowledge base: what it reads, whether it writes, and who each
request answers as.

Over stdio the session's user is `--user` (None: anonymous). Over HTTP with `--tokens`, each
request's bearer token names its user (`answering_as`, set by the server for the request and
carried to the worker thread the SDK runs it on); the token decides, never an argument.
Tools take a `user` argument as SPEC 11 says; when the user is pinned (`--user`, or a token),
that argument may only name the same user (any other is a tool error), so a client pinned to
bob never reads alice's pages. Resources and prompts have no user argument: they always answer
as the session's user.

The SDK runs each request on a worker thread; the reader is re-opened when a build becomes
current (after a write, say), so calls take the session's lock one at a time.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.app import reading
from knowl_build.app.project import Locator
from knowl_build.core.errors import UsageError
from knowl_build.core.names import valid_user

# The ASGI scope key under which the HTTP gate leaves the user a request's token names.
TOKEN_USER_KEY = "knowl.token_user"

# The user of the request being answered (HTTP with tokens); None outside one.
_token_user: ContextVar[str | None] = ContextVar("knowl_token_user", default=None)


@dataclass
class Session:
    locator: Locator
    artifact: Path | None
    with_repo: bool
    allow_writes: bool
    pinned: str | None  # --user, valid (valid_user); None: anonymous
    by_token: bool = False  # HTTP with --tokens: every request's token names its user
    readers: reading.CurrentReader = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self.pinned = valid_user(self.pinned)
        self.readers = reading.CurrentReader(self.locator, self.artifact)

    @property
    def user(self) -> str | None:
        """Who the request being answered reads as: its token's user, else --user."""
        if not self.by_token:
            return self.pinned
        user = _token_user.get()
        if user is None:
            # The HTTP gate lets no request through without a token: never anonymous here.
            raise UsageError("this request carries no token: every request needs one")
        return user

    @contextlib.contextmanager
    def answering_as(self, token_user: str | None) -> Iterator[None]:
        """The body answers as `token_user` (the user the request's token names)."""
        reset = _token_user.set(token_user)
        try:
            yield
        finally:
            _token_user.reset(reset)

    def reader_user(self, given: str | None) -> str | None:
        """Who a read answers as: `given`, else the session's user; when the user is pinned
        (--user, a token), only that user may be given."""
        user = self.user
        if user is None:
            return given
        if given is not None and valid_user(given) != user:
            raise UsageError(self._pinned(user))
        return user

    def writer_user(self, given: str | None) -> str | None:
        """Whose scope a new page goes to: `given` (None: the global scope); when the user is
        pinned, only that user may be given."""
        user = self.user
        if user is not None and given is not None and valid_user(given) != user:
            raise UsageError(self._pinned(user))
        return given

    def _pinned(self, user: str) -> str:
        how = "its token's user" if self.by_token else "started with --user"
        return f"this server answers as {user} ({how}): omit `user` or pass {user}"

    def close(self) -> None:
        self.readers.close()
