"""What time it is, for every part of knowl: one place reads SOURCE_DATE_EPOCH.

`SOURCE_DATE_EPOCH` (seconds since the epoch, the reproducible-builds convention) pins "now"
so that runs are reproducible; a value that is not a whole number of seconds, or lies outside
the years datetime can hold, is ignored. Times from elsewhere (a commit's committer time) go
through `from_epoch`, which never raises.
"""

from __future__ import annotations

import datetime as dt
import os

STAMP = "%Y-%m-%dT%H:%M:%SZ"
# Older than a run by more than this, a file's stamps cannot be shared with a later change:
# more than the coarsest common timestamp granularity (2 s on FAT) and a kernel clock tick
# (git's racy-clean rule; the stat cache and the reader's configuration memo keep to it).
SETTLE_NS = 3_000_000_000


def from_epoch(seconds: int) -> dt.datetime:
    """A UTC datetime; a time beyond what datetime holds (git accepts them) is clamped."""
    try:
        return dt.datetime.fromtimestamp(seconds, dt.UTC)
    except (OverflowError, OSError, ValueError):
        return (dt.datetime.max if seconds > 0 else dt.datetime.min).replace(tzinfo=dt.UTC)


def pinned() -> dt.datetime | None:
    """The time SOURCE_DATE_EPOCH pins, or None when it is unset or unusable."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch.isdigit() or len(epoch) > 12:
        return None
    try:
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None


def now() -> dt.datetime:
    return pinned() or dt.datetime.now(dt.UTC)


def today() -> dt.date:
    """Today in UTC (ages of pages are whole days counted from it)."""
    return now().date()


def stamp(moment: dt.datetime | None = None) -> str:
    """`YYYY-MM-DDTHH:MM:SSZ`, as knowl writes timestamps."""
    return (moment or now()).strftime(STAMP)
