"""`knowl site`: the knowledge base as a static website.

The command imports the application layer when it runs (start-up time: `knowl --help` loads
neither Jinja2 nor the reader).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from knowl_build.cli.group import ARTIFACT_OPTION, cli, global_options, notices, say, settings
from knowl_build.core.vocabulary import counted


def site_summary(outcome: Any, quiet: int) -> None:
    """One line for a person: where the site is and what this run changed."""
    if quiet:
        return
    r = outcome.result
    say(
        f"site {r.out}: {counted(r.pages, 'page')}, {counted(r.entities, 'entity', 'entities')}; "
        f"{len(r.written)} file(s) "
        f"written, {r.skipped + r.unchanged} unchanged, {len(r.removed)} removed; search and "
        f"graph data: {r.data_written} written, {r.data_removed} removed ({r.seconds:.2f} s)"
    )


@cli.command()
@ARTIFACT_OPTION
@click.option(
    "--out",
    # Not file_okay=False: click's usage error is four lines; the site says it in one.
    type=click.Path(path_type=Path),
    metavar="DIRECTORY",
    default=None,
    help="The site folder (default: .knowl/site in the project).",
)
@click.option("--full", is_flag=True, help="Render every file again (default: what changed).")
@global_options
@click.pass_context
def site(ctx: click.Context, artifact: Path | None, out: Path | None, full: bool) -> None:
    """Render the current build (or --artifact) as a static website, offline search included.

    The site reads the artifact only, never the source tree or git, and shows global pages
    only. A rebuild renders again the files whose inputs changed and writes only those whose
    bytes differ; the files of pages that no longer exist are removed. Serve the folder over
    HTTP (search and the graph load data files, which browsers refuse from file://).

    \b
    Examples:
      knowl site
      knowl site --out public/
      knowl site --artifact downloaded-artifact/ --out public/
      python -m http.server --directory .knowl/site
    """
    # Lazy: Jinja2, markdown-it and the reader load with the command (start-up time).
    from knowl_build.app import site as site_app

    found = settings(ctx)
    outcome = site_app.build_site(found.locator, site_app.SiteOptions(artifact, out, full))
    notices(outcome.result.notices, found.quiet)
    site_summary(outcome, found.quiet)
