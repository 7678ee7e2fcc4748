"""The command line: click commands that translate options into one application call and
render its outcome. `cli` is the `knowl` group; each command registers when its module is
imported, which the group does when the command runs (`KnowlGroup.modules`)."""

from __future__ import annotations

from knowl_build.cli.main import KnowlGroup, cli, main

__all__ = ["cli", "main"]

_COMMANDS = {
    "checking": ("check", "build", "stale", "conflicts", "rules"),
    "reading": ("search", "context", "show", "traverse", "timeline", "graph", "verify"),
    "publishing": ("site",),
    "serving": ("mcp",),
    "editing": ("lsp",),
    "writing": ("store", "new", "supersede", "review", "fix"),
    "adopting": ("init",),
    "evaluating": ("eval",),
}
assert isinstance(cli, KnowlGroup)
cli.package = __name__
cli.modules.update(
    {name: f"{__name__}.{module}" for module, names in _COMMANDS.items() for name in names}
)
