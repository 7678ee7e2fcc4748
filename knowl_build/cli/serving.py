"""`knowl mcp`: the knowledge base served over the Model Context Protocol.

Each command imports the application layer and the renderers when it runs (start-up time:
`knowl --help` loads neither).
"""

from __future__ import annotations

from pathlib import Path

import click

from knowl_build import process
from knowl_build.cli.main import ARTIFACT_OPTION, USER_OPTION, cli, global_options, settings


@cli.command()
@ARTIFACT_OPTION
@click.option(
    "--allow-writes",
    is_flag=True,
    help="Add store_knowledge and supersede_knowledge (needs --repo).",
)
@USER_OPTION
@global_options
@click.pass_context
def mcp(ctx: click.Context, artifact: Path | None, allow_writes: bool, user: str | None) -> None:
    """Serve the knowledge base over the Model Context Protocol (stdio), read-only by default.

    Tools: get_context, search_knowledge, read_knowledge_page, traverse_knowledge,
    list_stale, list_entities, describe_entity, and knowledge_timeline when started with
    --repo; pages and entities as resources; two prompts. --user pins the session to one
    user: resources and prompts read as that user, tools refuse any other. Needs the mcp
    extra.

    \b
    Examples:
      knowl mcp --repo path/to/project
      knowl mcp --artifact downloaded-artifact/
      knowl mcp --repo . --allow-writes
      knowl mcp --repo . --user alice
    """
    # Lazy: the MCP SDK loads only for this command (start-up time of every other one).
    from knowl_build.mcp_server import make_server

    process.for_a_server()  # it runs until stopped: its garbage must be collected

    found = settings(ctx)
    locator = found.locator
    if artifact is None:
        locator.root()  # no project and no artifact: nothing to serve (exit 2, one line)
    server = make_server(
        locator=locator,
        artifact=artifact,
        with_repo=found.repo is not None,
        allow_writes=allow_writes,
        user=user,
    )
    server.run("stdio")
