"""`knowl lsp`: the language server for editors (stdio).

Each command imports what it serves when it runs (start-up time: `knowl --help` loads
neither the language server nor pygls).
"""

from __future__ import annotations

import click

from knowl_build.cli.group import cli, global_options, settings
from knowl_build.support import process


@cli.command()
@click.option(
    "--stdio",
    is_flag=True,
    help="Speak over stdin and stdout (the default and only transport; for clients that pass it).",
)
@global_options
@click.pass_context
def lsp(ctx: click.Context, stdio: bool) -> None:
    """Serve the project to an editor over the Language Server Protocol (stdio).

    Diagnostics as `knowl check` reports them, from the unsaved buffers; completion of
    links, headings, entities and frontmatter; hover; go to definition; references;
    rename of pages and headings; quick fixes; symbols and folding. Without --repo, the
    project is the editor's workspace folder (or the first folder upward holding one). The
    server never writes a file: edits go to the editor as workspace edits. Needs the lsp
    extra (pip install 'knowl-build[lsp]').

    \b
    Examples:
      knowl lsp
      knowl lsp --repo path/to/project
    """
    # Lazy: pygls loads only for this command (start-up time of every other one).
    from knowl_build.lsp import serve

    process.for_a_server()  # it runs until stopped: its garbage must be collected
    found = settings(ctx)
    serve(found.repo.resolve() if found.repo is not None else None, found.config)
