"""The exceptions that stop a run. Findings are values (see core/diagnostics.py), not these."""

from __future__ import annotations

import errno

# A full disk, or a full quota: the errors a write may end with on any file system.
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class KnowlError(Exception):
    """Base of every error that ends a run with a one-line message and exit code 2.

    The message often quotes what the user gave (a page name, a path, a value); anything in it
    that looks like a secret is replaced here, once, so no front end can print it."""

    exit_code = 2

    def __init__(self, *args: object) -> None:
        # The scanner loads when an error is made, not with every module that may raise one
        # (start-up time of the reader).
        from knowl_build.secrets.scanner import redact

        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class UsageError(KnowlError):
    """The command line asks for something that cannot be done."""


class ConfigError(KnowlError):
    """The configuration file is unreadable or invalid."""


class ArtifactError(KnowlError):
    """A build artifact is missing, corrupt or incompatible."""


class PageNotFound(KnowlError):
    """A page that does not exist or is not visible to the user (the same message either
    way, so no answer tells whether another user's page exists)."""

    exit_code = 1


class AmbiguousPage(KnowlError):
    """A page name that several pages of one scope have (pages in different folders sharing
    an id): the answer lists them with their paths, and the caller names one by its path."""

    exit_code = 1


class NoSpace(KnowlError):
    """A write found no space left. knowl writes beside a file and renames it into place, so
    what was being replaced is still whole; the run stops, and runs again once there is room."""


def no_space(exc: BaseException) -> NoSpace | None:
    """The one-line error of an OSError that says the disk or quota is full; else None."""
    if not isinstance(exc, OSError) or exc.errno not in FULL:
        return None
    reason = exc.strerror or "No space left on device"
    what = f"{exc.filename}: cannot be written" if exc.filename is not None else "a write failed"
    return NoSpace(
        f"{what} ({reason}); nothing was half written: free some space and run the command again"
    )
