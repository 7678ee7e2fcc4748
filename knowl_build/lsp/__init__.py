"""`knowl lsp`: the checker, the semantic layer and the page graph inside the writer's editor,
over the Language Server Protocol (stdio).

`workspace` is the analysis of a project with the editor's unsaved buffers laid over its
files (the same `pipeline.analysis.analyse` as `knowl check`, so the same findings); `lookup`
finds what is at a position; `features` answers completion, hover, definitions, references
and symbols; `renaming` and `actions` make workspace edits (never a write: the client applies
them); `server` speaks the protocol through pygls, the optional `lsp` extra.

The analysis of unsaved buffers is an application-layer operation that lives here until
`app/` has one: then this package is a front end like `cli/` and `mcp_server/`.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from knowl_build.core.errors import UsageError


def serve(root: Path | None, config_file: Path | None = None) -> None:
    """Run the language server on stdin and stdout until the client says exit."""
    if find_spec("pygls") is None or find_spec("lsprotocol") is None:
        raise UsageError("the language server needs pygls: pip install 'knowl-build[lsp]'")
    # pygls is the optional `lsp` extra: the modules that use it load here, once it is there.
    from knowl_build.lsp.server import build_server

    build_server(root, config_file).start_io()
