"""The command line: click commands that translate options into one application call and
render its outcome. `cli` is the `knowl` group (`cli.group`); each command registers when its
module is imported, which the group does when the command runs (`KnowlGroup.modules`).

`main`, the `knowl` program, answers a plain `knowl search` without importing click
(`cli.lean`: start-up time); click, and the group, load for every other run and on first
use of `cli`.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["cli", "main"]


def main() -> None:
    """The `knowl` program."""
    from knowl_build.cli import lean
    from knowl_build.support import process

    process.for_a_command()
    lean.run(sys.argv[1:])  # ends the process when it answers
    _group().main()


def _group() -> Any:
    """The click side (`cli.group`), imported when first needed."""
    return importlib.import_module("knowl_build.cli.group")


def __getattr__(name: str) -> Any:
    """`cli` and `KnowlGroup`, from `cli.group` when first asked for."""
    if name in ("cli", "KnowlGroup"):
        return getattr(_group(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
