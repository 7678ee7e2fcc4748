"""`knowl init`: knowl configured for the repository as it is.

The command imports the application layer when it runs (start-up time: `knowl --help` loads
none of it).
"""

from __future__ import annotations

from pathlib import Path

import click

from knowl_build.cli.group import cli, global_options, say, settings
from knowl_build.core.errors import UsageError


@cli.command()
@click.option("--dry-run", is_flag=True, help="Print what init would write; write nothing.")
@click.option("--force", is_flag=True, help="Replace the files init writes whole if they exist.")
@click.option(
    "--pre-commit",
    "pre_commit",
    is_flag=True,
    help="Also write .pre-commit-config.yaml with the knowl check hook.",
)
@click.option("--github", is_flag=True, help="Also write .github/workflows/knowl.yml.")
@global_options
@click.pass_context
def init(ctx: click.Context, dry_run: bool, force: bool, pre_commit: bool, github: bool) -> None:
    """Configure knowl for this repository as it is: detect its kind (an Obsidian vault, a
    Dendron workspace, Hugo, Quartz, MkDocs, Docusaurus, a dbt project, a Canonic semantic
    layer), decide the layout, link resolution and excludes, allow the frontmatter keys the
    pages already use, turn off what they cannot use yet (KB202 without review dates), and
    write knowl.toml and .knowl/ in .gitignore. Prints each decision and why, then the first
    check's findings by code.

    Nothing is replaced without --force (.gitignore is only appended to); --dry-run writes
    nothing. The folder is --repo, else the current one.

    \b
    Examples:
      knowl init
      knowl init --dry-run
      knowl init --pre-commit --github
    """
    # Lazy: the application loads with the command (start-up time).
    from knowl_build.app import adopting

    found = settings(ctx)
    root = (found.repo or Path.cwd()).resolve()
    if not root.is_dir():
        raise UsageError(f"{root}: not a folder")
    planned = adopting.plan(root, pre_commit=pre_commit, github=github)
    for decision in planned.decisions:
        say(f"{decision.what}: {decision.why}")
    if dry_run:
        click.echo(f"# {adopting.CONFIG_FILE} (not written: --dry-run)")
        click.echo(planned.text, nl=False)
    else:
        problems = adopting.refusals(root, planned, force)
        if problems:
            raise UsageError("; ".join(problems) + "; nothing was written")
        for name in adopting.write(root, planned):
            say(f"wrote {name}")
    codes = ", ".join(f"{code} {n}" for code, n in sorted(planned.findings.items()))
    say(
        f"first check: {planned.pages} page(s), "
        + (f"findings by code: {codes}" if codes else "no findings")
    )
