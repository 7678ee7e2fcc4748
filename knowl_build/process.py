"""How a knowl run uses the interpreter: its garbage collector, and how a command-line
process ends.

A run allocates millions of small objects (parsed pages, records, postings) and frees them by
reference counting; Python's cyclic collector finds almost nothing in them, but each full
collection walks every object alive, and with its default thresholds it runs hundreds of
times in a build (about a third of a one-edit rebuild at 10,000 pages, measured in issue 16).
So the collector is held: collections are rare while a build or a check runs (`held`), and
for the whole of a command-line process (`for_a_command`), which then ends without walking
and freeing its heap object by object (`exit_now`), as mypy's command line does.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator

# The youngest generation is collected after this many allocations instead of 700; the older
# ones after as many collections of the one below as Python's defaults say.
ALLOCATIONS = 100_000


def for_a_command() -> None:
    """Rare collections for the rest of this process (a command-line run)."""
    _, second, third = gc.get_threshold()
    gc.set_threshold(ALLOCATIONS, second, third)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Collections stay rare while the body runs, and what is alive when it starts (a
    caller's data, the modules) is never walked; both are undone on exit, so a long-lived
    caller collects as before."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(before[0], ALLOCATIONS), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def exit_now(code: object) -> None:
    """End a command-line process with `code` (as `SystemExit` takes it) once its output is
    written, without tearing down the interpreter: freeing the heap object by object costs a
    large run a noticeable part of its time and changes nothing on disk."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to say
            status = status or 1
    os._exit(status)
