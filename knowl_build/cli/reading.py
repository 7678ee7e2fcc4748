"""Commands that answer from an artifact (search, show, traverse, graph, verify) or from git
(timeline, show --at).

Each command imports the application layer and the renderers when it runs (start-up time:
`knowl --help` loads neither).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from knowl_build.cli.group import (
    ARTIFACT_OPTION,
    JSON_OPTION,
    USER_OPTION,
    cli,
    emit_json,
    global_options,
    notices,
    say,
    settings,
)
from knowl_build.core.errors import UsageError
from knowl_build.core.vocabulary import CATEGORIES, STATUSES, USAGE_MODES

F = TypeVar("F", bound=Callable[..., Any])


def filter_options(command: F) -> F:
    """`--status`, `--category`, `--usage-mode` and `--tag`: the filters of search and context."""
    for option in reversed(
        [
            click.option(
                "--status",
                default="active",
                show_default=True,
                type=click.Choice([*STATUSES, "all"]),
                help="Only pages with this status.",
            ),
            click.option("--category", default=None, type=click.Choice(CATEGORIES)),
            click.option("--usage-mode", default=None, type=click.Choice(USAGE_MODES)),
            click.option(
                "--tag", "tags", multiple=True, help="Pages with any of these tags (repeatable)."
            ),
        ]
    ):
        command = option(command)
    return command


@cli.command()
@click.argument("query")
@USER_OPTION
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Number of hits (after merging user pages into global ones).",
)
@filter_options
@click.option(
    "--kind",
    type=click.Choice(["all", "page", "entity"]),
    default="all",
    show_default=True,
    help="Pages, entities of the semantic layer, or all (both, merged; each hit's kind says).",
)
@click.option(
    "--peer",
    "peers",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Another repository's artifact (or project root) to search too (repeatable).",
)
@ARTIFACT_OPTION
@JSON_OPTION
@global_options
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    user: str | None,
    limit: int,
    status: str,
    category: str | None,
    usage_mode: str | None,
    tags: tuple[str, ...],
    kind: str,
    peers: tuple[Path, ...],
    artifact: Path | None,
    as_json: bool,
) -> None:
    """Search the built knowledge: words OR-ed, best first; caveats ride along.

    Hits are pages and the semantic layer's entities (measures, dimensions, metrics...),
    found by name and description and merged by rank with the pages, and with the pages that
    bind them (sl_refs); a page or entity named as the query comes first. --kind page or
    --kind entity keeps one kind; in --json each hit's "kind" is "page" or "entity".

    Words and prefixes are OR-ed; every quoted phrase must appear, its words in this order in
    one field; -WORD leaves out pages holding the word. A prefix needs 2 letters or digits and
    stands for at most 64 terms (the most frequent in the pages you may see); terms are
    stemmed, so revenue* also finds revenue and revenues. tag:, category:, status: and
    usage-mode: in the query do what the options do. A query that begins with - follows --.
    With no hit, the nearest terms of the pages you may see are suggested.

    \b
    Query syntax:
      rev*                    prefix
      "net of discounts"      phrase
      revenue -draft          exclusion
      churn tag:finance       filter (also category:, status:, usage-mode:)

    \b
    Examples:
      knowl search "monthly recurring revenue"
      knowl search churn --user alice --json
      knowl search revenue --usage-mode policy --tag finance --peer ../billing-kb
      knowl search 'rev* "net of discounts" -draft'
      knowl search -- '-draft revenue'
      knowl search "total revenue" --kind entity
    """
    # Lazy: the reader loads with the command; rich only for a terminal (start-up time).
    from knowl_build.app import reading

    options = reading.SearchOptions(user, limit, status, category, usage_mode, tags, kind)
    with reading.open_reader(settings(ctx).locator, artifact, peers) as reader:
        answer = reading.search(reader, query, options)
    if as_json:
        emit_json(answer)
        return
    from knowl_build.output import hits

    if not hits.write_plain(answer, sys.stdout):
        from knowl_build.output import text

        text.search_results(answer, text.console())


@cli.command()
@click.argument("question")
@USER_OPTION
@click.option(
    "--limit",
    type=click.IntRange(min=1, max=50),
    default=5,
    show_default=True,
    help="Number of pages.",
)
@filter_options
@ARTIFACT_OPTION
@JSON_OPTION
@global_options
@click.pass_context
def context(
    ctx: click.Context,
    question: str,
    user: str | None,
    limit: int,
    status: str,
    category: str | None,
    usage_mode: str | None,
    tags: tuple[str, ...],
    artifact: Path | None,
    as_json: bool,
) -> None:
    """The context of a question in one answer: the best pages, each with the line that
    matched, the live definitions of the entities they use (and whether a page drifted from
    one), the caveats that ride along and the pages the hits supersede.

    \b
    Examples:
      knowl context "how is revenue calculated and what should I watch out for?"
      knowl context churn --user alice --json
    """
    # Lazy: the reader loads with the command; rich only for text (start-up time).
    from knowl_build.app import reading

    options = reading.SearchOptions(user, limit, status, category, usage_mode, tags)
    with reading.open_reader(settings(ctx).locator, artifact) as reader:
        answer = reading.context(reader, question, options)
    if as_json:
        emit_json(answer)
        return
    from knowl_build.output import context_text, text

    context_text.context_answer(answer, text.console())


@cli.command()
@click.argument("page")
@USER_OPTION
@click.option(
    "--at",
    "at",
    default=None,
    metavar="REV",
    help="The page as it was at a commit, tag, branch or ISO date (reads git).",
)
@ARTIFACT_OPTION
@JSON_OPTION
@global_options
@click.pass_context
def show(
    ctx: click.Context,
    page: str,
    user: str | None,
    at: str | None,
    artifact: Path | None,
    as_json: bool,
) -> None:
    """Show one page: rendered body, freshness and drift, annotations, backlinks, caveats.

    PAGE is an id, global:<id> or user:<owner>:<id>. When pages in different folders share
    the id, the answer lists them (exit 1); their path under the scope folder names one.

    \b
    Examples:
      knowl show revenue-definition
      knowl show "Obsidian Sync/Security and privacy"
      knowl show user:alice:revenue-notebook --user alice --json
      knowl show revenue-definition --at v1.2
    """

    locator = settings(ctx).locator
    if at is not None:
        if artifact is not None:
            raise UsageError("--at reads git history and cannot be combined with --artifact")
        # Lazy: git and the pipeline load only for --at (start-up time of a plain show).
        from knowl_build.app import history

        answer = history.show_at(locator.project(), page, at, user)
    else:
        from knowl_build.app import reading

        with reading.open_reader(locator, artifact) as reader:
            answer = reading.show(reader, page, user)
    if as_json:
        emit_json(answer)
        return
    from knowl_build.output import text

    text.show_page(answer, text.console())


@cli.command()
@click.argument("pages", nargs=-1, required=True)
@click.option(
    "--depth",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Steps from the seeds (a ref, a link, or a caveat through a shared entity).",
)
@click.option(
    "--max-nodes",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="At most this many pages, seeds included.",
)
@USER_OPTION
@ARTIFACT_OPTION
@JSON_OPTION
@global_options
@click.pass_context
def traverse(
    ctx: click.Context,
    pages: tuple[str, ...],
    depth: int,
    max_nodes: int,
    user: str | None,
    artifact: Path | None,
    as_json: bool,
) -> None:
    """Walk the reference graph breadth-first from the given pages: a page's refs and links
    in sorted order, then the caveats about its entities. A notice says when the walk stops
    at --max-nodes with more pages within reach.

    \b
    Examples:
      knowl traverse revenue-definition
      knowl traverse mrr churn-definition --depth 1 --json
    """
    from knowl_build.app import reading

    with reading.open_reader(settings(ctx).locator, artifact) as reader:
        answer = reading.traverse(reader, pages, user, depth, max_nodes)
    if answer["truncated"]:
        notices(
            [
                f"the walk stopped at {answer['max_nodes']} pages (--max-nodes) with more "
                f"within reach; raise --max-nodes to see them"
            ],
            settings(ctx).quiet,
        )
    if as_json:
        emit_json(answer)
        return
    from knowl_build.output import text

    text.traversal(answer, text.console())


@cli.command()
@click.argument("page")
@USER_OPTION
@JSON_OPTION
@global_options
@click.pass_context
def timeline(ctx: click.Context, page: str, user: str | None, as_json: bool) -> None:
    """Every committed version of a page, newest first, following renames: commit, date,
    author, subject, path, status, summary and the body's diff against the version before.

    \b
    Examples:
      knowl timeline revenue-definition
      knowl timeline user:alice:notes --user alice --json
    """
    from knowl_build.app import history

    answer = history.timeline(settings(ctx).locator.project(), page, user)
    notices(answer["notices"], 0)
    if as_json:
        emit_json(answer)
        return
    from knowl_build.output import text

    text.timeline(answer, text.console())


@cli.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "graphml", "dot"]),
    default="json",
    help="Export format (default: json, networkx node-link data).",
)
@ARTIFACT_OPTION
@global_options
@click.pass_context
def graph(ctx: click.Context, fmt: str, artifact: Path | None) -> None:
    """Export the reference graph of a built artifact: pages, entities, typed edges.

    \b
    Examples:
      knowl graph --format dot | dot -Tsvg > graph.svg
      knowl graph --format graphml --artifact downloaded-artifact/
    """
    from knowl_build.app import reading

    exported = reading.graph_export(settings(ctx).locator, artifact, fmt)
    if fmt == "json":  # graph.json's bytes, made safe to print
        from knowl_build.output.json_format import printable

        exported = printable(exported)
    sys.stdout.write(exported)


@cli.command()
@ARTIFACT_OPTION
@global_options
@click.pass_context
def verify(ctx: click.Context, artifact: Path | None) -> None:
    """Check an artifact completely: exit 0 when it is intact and safe to read, 2 when not.

    Every file against the manifest (checksums, sizes, no unlisted file), every JSON record
    against its schema, every pickle of the Whoosh index through the restricted unpickler.
    This proves integrity against the manifest, not where the artifact came from.

    \b
    Examples:
      knowl verify
      knowl verify --artifact downloaded-artifact/
    """
    from knowl_build.app import reading

    outcome = reading.verify(settings(ctx).locator, artifact)
    for problem in outcome.problems:
        say(f"{outcome.folder}: {problem}")
    failure = outcome.failure()
    if failure is not None:
        raise failure
    click.echo(f"{outcome.folder}: ok, {outcome.files} files verified")
