"""How a knowl run uses the interpreter: its garbage collector, and how a command-line
process ends.

A run allocates millions of small objects (parsed pages, records, postings) and frees them by
reference counting; Python's cyclic collector finds almost nothing in them, but each full
collection walks every object alive, and with its default thresholds it runs hundreds of
times in a build (about a third of a one-edit rebuild at 10,000 pages, measured in issue 16).
So the collector is held: off while a build or a check runs (`held`), and for the whole of a
command-line process (`for_a_command`) but a server, which then ends without walking and
freeing its heap object by object (`exit_now`), as mypy's command line does. Turned back on
at the end of a build, the collector would walk everything the build left the next time it
runs: a command-line build never turns it on.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator


def for_a_command() -> None:
    """No cyclic collection in a command-line run: it ends soon, and what it frees it frees
    by reference counting (a long-running command turns the collector back on:
    `for_a_server`)."""
    gc.disable()


def for_a_server() -> None:
    """The collector as Python sets it, for a command that serves until it is stopped."""
    gc.enable()


@contextlib.contextmanager
def held() -> Iterator[None]:
    """No cyclic collection while the body runs (a build, a check: bounded work whose
    garbage is freed by reference counting; its peak memory was measured the same without
    the collector); the collector is as it was afterwards, so a long-lived caller, such as
    the MCP server, collects as before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
