"""The command line: click commands that translate options into one application call and
render its outcome. `cli` is the `knowl` group; the commands register on import."""

from __future__ import annotations

from knowl_build.cli import checking, reading, serving, writing
from knowl_build.cli.main import cli, main

__all__ = ["checking", "cli", "main", "reading", "serving", "writing"]
