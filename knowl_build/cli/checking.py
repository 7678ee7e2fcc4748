"""Commands that validate the project: check, build, stale, conflicts, rules.

Each command imports the application layer and the renderers when it runs (start-up time:
`knowl --help` loads neither).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from knowl_build.cli.group import (
    BASELINE_OPTION,
    FORMAT_OPTION,
    JSON_OPTION,
    SARIF_OPTION,
    cli,
    default_format,
    emit_json,
    global_options,
    notices,
    render_findings,
    sarif_on_failure,
    settings,
    write_sarif,
)
from knowl_build.core.diagnostics import summarize


@cli.command()
@FORMAT_OPTION
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
@click.option(
    "--changed-only",
    is_flag=True,
    help="Report only findings in files changed against HEAD (untracked included); "
    "validation still covers the whole project.",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Parse every page (and, with --check-urls, ask every URL) again instead of using "
    ".knowl/cache.",
)
@click.option(
    "--check-urls/--no-check-urls",
    default=None,
    help="Also ask every http(s) link target and report dead ones as KB110 warnings "
    "(default: [links] check_urls, off). The only use of the network; answers are cached "
    "in .knowl/cache for [links] url_cache_hours.",
)
@BASELINE_OPTION
@SARIF_OPTION
@global_options
@click.pass_context
def check(
    ctx: click.Context,
    fmt: str | None,
    strict: bool,
    changed_only: bool,
    no_cache: bool,
    check_urls: bool | None,
    baseline: str | None,
    sarif_file: Path | None,
) -> None:
    """Validate every page, reference and semantic file; write nothing but .knowl/cache.

    Without --repo, the project is the first folder upward from the current one holding
    knowl.toml, [tool.knowl] in pyproject.toml or knowledge/. Exit 0 when there is no error
    (with --strict: no warning either), 1 when there is, 2 for usage or configuration
    problems. Run from inside the project's git repository, text and github paths open from
    the current folder; sarif paths start at the repository's root (github's too on a GitHub
    runner, where GitHub resolves them), json paths at the project (with repo_path beside).

    \b
    Examples:
      knowl check
      knowl check --repo path/to/project --format json
      knowl check --changed-only --strict
      knowl check --format github --sarif knowl.sarif
      knowl check --baseline origin/main
      knowl check --check-urls
    """
    # Lazy: the application and the renderers load with the command (start-up time).
    from knowl_build.app import checking
    from knowl_build.output import sarif, text

    found = settings(ctx)
    fmt = default_format(fmt)
    with sarif_on_failure(fmt, sarif_file):
        project = found.locator.project()
        options = checking.CheckOptions(strict, changed_only, not no_cache, baseline, check_urls)
        outcome = checking.check(project, options)
        rules = checking.rule_table(project.config)
        prefix = checking.repo_prefix(project.root) if fmt != "text" or sarif_file else ""
        here = checking.here_prefix(project.root) if fmt in ("text", "github") else None
        if sarif_file is not None:
            write_sarif(sarif_file, sarif.render(outcome.findings, rules, prefix))
    err = text.console(sys.stderr)
    notices(outcome.notices, found.quiet)
    if not outcome.knowledge_exists:
        notices(
            [
                f"no {project.config.knowledge_dir}/ folder in {project.root}; 0 pages "
                "checked (point --repo at the project)"
            ],
            found.quiet,
        )
    compared = outcome.compared.to_json() if outcome.compared else None
    render_findings(fmt, outcome.findings, rules, "knowl check", prefix, compared, here)
    if not found.quiet:
        err.print(
            text.summary_line(
                summarize(outcome.findings), outcome.page_count, outcome.semantic_file_count
            )
        )
        if compared is not None:
            err.print(text.baseline_line(compared), markup=False)
    ctx.exit(outcome.exit_status)


@cli.command()
@FORMAT_OPTION
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
@click.option(
    "--allow-errors",
    is_flag=True,
    help="Publish even with error findings (recorded as error_count); exit 0.",
)
@click.option("--full", is_flag=True, help="Rebuild everything and always publish a new folder.")
@click.option(
    "--out",
    # Not file_okay=False: click's usage error is four lines; the build says it in one.
    type=click.Path(path_type=Path),
    metavar="DIRECTORY",
    default=None,
    help="Output folder (default: out_dir from the configuration, .knowl/build).",
)
@click.option(
    "--site",
    "with_site",
    is_flag=True,
    help="Then render the artifact as a static website into .knowl/site (knowl site), "
    "unless the build was refused.",
)
@BASELINE_OPTION
@SARIF_OPTION
@global_options
@click.pass_context
def build(
    ctx: click.Context,
    fmt: str | None,
    strict: bool,
    allow_errors: bool,
    full: bool,
    out: Path | None,
    with_site: bool,
    baseline: str | None,
    sarif_file: Path | None,
) -> None:
    """Validate, render, fingerprint, index and publish a versioned build artifact.

    The new artifact folder becomes current (<out_dir>/CURRENT) only once it is complete;
    with error findings nothing is published (exit 1) unless --allow-errors. An unchanged
    project publishes nothing (a no-op) unless --full.

    \b
    Examples:
      knowl build
      knowl build --format github --allow-errors
      knowl build --full --out /tmp/kb-artifact
      knowl build --format github --sarif knowl.sarif
      knowl build --site
    """
    # Lazy: the application and the renderers load with the command (start-up time).
    from knowl_build.app import checking
    from knowl_build.output import sarif, text

    found = settings(ctx)
    fmt = default_format(fmt)
    err = text.console(sys.stderr)
    started = time.perf_counter()
    show = err.is_terminal and not found.quiet and os.environ.get("CI") != "true"
    with sarif_on_failure(fmt, sarif_file):
        project = found.locator.project()
        with text.stage_progress(err, show, checking.STAGES) as progress:
            options = checking.BuildOptions(strict, allow_errors, full, out, baseline, progress)
            outcome = checking.build(project, options)
        rules = checking.rule_table(project.config)
        prefix = checking.repo_prefix(project.root) if fmt != "text" or sarif_file else ""
        here = checking.here_prefix(project.root) if fmt in ("text", "github") else None
        if sarif_file is not None:
            write_sarif(sarif_file, sarif.render(outcome.findings, rules, prefix))
    notices(outcome.result.notices, found.quiet)
    compared = outcome.compared.to_json() if outcome.compared else None
    render_findings(fmt, outcome.findings, rules, "knowl build", prefix, compared, here)
    if not found.quiet:
        text.build_summary(err, outcome.result, time.perf_counter() - started)
        if compared is not None:
            err.print(text.baseline_line(compared), markup=False)
    if with_site and outcome.result.status != "refused" and outcome.result.folder is not None:
        from knowl_build.app import site as site_app
        from knowl_build.cli.publishing import site_summary

        done = site_app.build_site(
            found.locator, site_app.SiteOptions(artifact=outcome.result.folder)
        )
        notices(done.result.notices, found.quiet)
        site_summary(done, found.quiet)
    ctx.exit(outcome.exit_status)


@cli.command()
@JSON_OPTION
@global_options
@click.pass_context
def stale(ctx: click.Context, as_json: bool) -> None:
    """List the pages that are not fresh, with every reason (from the working tree).

    Exit 1 when a page is listed (needs_review or stale), 0 when every page is fresh, so a
    script or CI step can gate on it.

    \b
    Examples:
      knowl stale
      knowl stale --json
      knowl stale -q || echo "some pages need a review"
    """
    from knowl_build.app import checking
    from knowl_build.output import text

    found = settings(ctx)
    outcome = checking.stale(found.locator.project())
    if as_json:
        emit_json(outcome.to_json())
    else:
        text.stale_table(outcome.pages, text.console())
        if not found.quiet:
            click.echo(f"{len(outcome.pages)} page(s) not fresh", err=True)
    ctx.exit(outcome.exit_status)


@cli.command()
@JSON_OPTION
@global_options
@click.pass_context
def conflicts(ctx: click.Context, as_json: bool) -> None:
    """Every active exclusive page, grouped by normalized conflict key and scope.
    Exit 1 when a group holds more than one page.

    \b
    Examples:
      knowl conflicts
      knowl conflicts --json
    """
    from knowl_build.app import checking
    from knowl_build.output import text

    outcome = checking.conflicts(settings(ctx).locator.project())
    if as_json:
        emit_json(outcome.to_json())
    else:
        text.conflict_table(outcome.groups, text.console())
    ctx.exit(outcome.exit_status)


@cli.command()
@global_options
@click.pass_context
def rules(ctx: click.Context) -> None:
    """Print the rule table: codes, names, default and configured severities.

    The configured severities are the project's (found as for check); outside a project,
    the defaults.

    \b
    Example:
      knowl rules
    """
    from knowl_build.app import checking
    from knowl_build.output import text

    text.rules_table(checking.rule_table(settings(ctx).locator.config_if_any()), text.console())
