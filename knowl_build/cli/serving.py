"""`knowl mcp`: the knowledge base served over the Model Context Protocol.

Each command imports the application layer and the renderers when it runs (start-up time:
`knowl --help` loads neither).
"""

from __future__ import annotations

from pathlib import Path

import click

from knowl_build.cli.group import ARTIFACT_OPTION, USER_OPTION, cli, global_options, settings
from knowl_build.core.errors import UsageError
from knowl_build.support import process


@cli.command()
@ARTIFACT_OPTION
@click.option(
    "--allow-writes",
    is_flag=True,
    help="Add store_knowledge and supersede_knowledge (needs --repo).",
)
@USER_OPTION
@click.option(
    "--http",
    "http",
    default=None,
    metavar="[HOST:]PORT",
    help="Serve over HTTP (Streamable HTTP, at /mcp) instead of stdio; HOST defaults to "
    "127.0.0.1. Any other address needs --tokens.",
)
@click.option(
    "--tokens",
    "tokens_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="With --http: bearer tokens, one `<token> <user>` a line (mode 600, tokens of 32 "
    "characters or more); each request answers as its token's user.",
)
@global_options
@click.pass_context
def mcp(
    ctx: click.Context,
    artifact: Path | None,
    allow_writes: bool,
    user: str | None,
    http: str | None,
    tokens_file: Path | None,
) -> None:
    """Serve the knowledge base over the Model Context Protocol, read-only by default: over
    stdio to one client, or with --http to a team.

    Tools: get_context, search_knowledge, read_knowledge_page, traverse_knowledge,
    list_stale, list_entities, describe_entity, and knowledge_timeline when started with
    --repo; pages and entities as resources; two prompts. --user pins the session to one
    user: resources and prompts read as that user, tools refuse any other. A refused write
    is a tool error carrying the refusal. Needs the mcp extra.

    --http [HOST:]PORT serves http://HOST:PORT/mcp (PORT alone or :PORT: on 127.0.0.1;
    port 0: a free one, printed). A loopback address is the default and the only one served
    without --tokens FILE; with it, every request needs `Authorization: Bearer <token>` and
    answers as the token's user (--user is then refused). Requests whose Origin is not this
    server's are refused. Writes only with --allow-writes. See docs/agents.md.

    \b
    Examples:
      knowl mcp --repo path/to/project
      knowl mcp --artifact downloaded-artifact/
      knowl mcp --repo . --allow-writes
      knowl mcp --repo . --user alice
      knowl mcp --repo . --http 8000
      knowl mcp --repo . --http 0.0.0.0:8000 --tokens /etc/knowl/tokens
    """
    # Lazy: the MCP SDK loads only for this command (start-up time of every other one).
    from knowl_build.app.project import PROJECT_MARKERS, find_project_root
    from knowl_build.mcp_server import http as served_http
    from knowl_build.mcp_server import make_server
    from knowl_build.mcp_server.logs import one_line_logging

    found = settings(ctx)
    locator = found.locator
    if found.repo is not None:
        root = found.repo.resolve()
        if find_project_root(root) != root:
            # It would start, and every call would fail: stop before serving.
            raise UsageError(
                f"--repo {found.repo}: not a knowl project (looked for {PROJECT_MARKERS}); "
                "run knowl init there, or pass the project's folder"
            )
    elif artifact is None:
        locator.root()  # no project and no artifact: nothing to serve (exit 2, one line)
    address = served_http.parse_address(http) if http is not None else None
    tokens = None
    if tokens_file is not None:
        if address is None:
            raise UsageError("--tokens needs --http (over stdio, the client is the user)")
        if user is not None:
            raise UsageError("--user and --tokens: over HTTP the token decides the user")
        tokens = served_http.read_tokens(tokens_file)
    if address is not None:
        served_http.check_exposure(address, tokens)

    process.for_a_server()  # it runs until stopped: its garbage must be collected
    one_line_logging(found.verbose)  # before the SDK's server, which would install rich's
    server = make_server(
        locator=locator,
        artifact=artifact,
        with_repo=found.repo is not None,
        allow_writes=allow_writes,
        user=user,
        by_token=tokens is not None,
    )
    if address is None:
        server.run("stdio")
    else:
        served_http.serve(server, address, tokens)
