"""The command line: click commands that translate options into one application call and
render its outcome. `cli` is the `knowl` group (`cli.main`); each command registers when its
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
    from knowl_build import process
    from knowl_build.cli import lean

    process.for_a_command()
    lean.run(sys.argv[1:])  # ends the process when it answers
    _group().main()


def _group() -> Any:
    """The click side (`cli.main`), imported once. Importing it makes the package's `main`
    that module (Python names a package's submodules on it): the program is put back."""
    module = importlib.import_module("knowl_build.cli.main")
    globals()["main"] = _program
    return module


_program = main


def __getattr__(name: str) -> Any:
    """`cli` and `KnowlGroup`, from `cli.main` when first asked for."""
    if name in ("cli", "KnowlGroup"):
        return getattr(_group(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
