"""Commands that write knowledge: store, new, supersede, review, fix (SPEC 7).

Each command imports the application layer and the renderers when it runs (start-up time:
`knowl --help` loads neither).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from knowl_build.cli.group import (
    JSON_OPTION,
    USER_OPTION,
    cli,
    emit_json,
    global_options,
    say,
    settings,
)
from knowl_build.core.errors import UsageError
from knowl_build.core.model import CATEGORIES, PROVENANCES, USAGE_MODES

NO_BUILD_OPTION = click.option(
    "--no-build",
    is_flag=True,
    help="Do not rebuild the artifact after the write (by default a project that has a build "
    "is rebuilt incrementally, so search and show find the write at once).",
)


def _print_build(build: Any) -> None:
    """One line on stderr: the build that makes the write readable, or why there is none
    (the write stands either way: the command still exits 0)."""
    if build is None:
        return
    if build.rebuilt:
        say(f"rebuilt: build {build.build_id} is current")
    else:
        say(f"not rebuilt: {build.reason}")


def _print_commit(commit: Any) -> None:
    """What `--commit` did, on stderr: a commit git refused is a line, not a failure (the
    files are written; the command still exits 0)."""
    if commit is None:
        return
    if commit.commits:
        say(f"committed: {', '.join(sha[:12] for sha in commit.commits)}")
    if commit.status == "failed":
        say(f"not committed: {commit.reason}; the files are written, commit them with git")
    elif commit.status == "nothing":
        say(str(commit.reason))


def _print_changes(changes: list[Any], as_json: bool) -> None:
    """Each write prints its diff (on stderr when stdout holds JSON)."""
    for change in changes:
        click.echo(change.diff(), nl=False, err=as_json)


def _print_written(written: Any, as_json: bool) -> None:
    """A supersede or a review: the diffs, the JSON answer with --json, the commit, the
    build."""
    _print_changes(written.changes, as_json)
    if as_json:
        emit_json(written.to_json())
    _print_commit(written.commit)
    _print_build(written.build)


def _scope_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise click.BadParameter(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


@cli.command()
@click.option("--category", required=True, type=click.Choice(CATEGORIES))
@click.option("--title", required=True, help="The subject, not the claim.")
@click.option("--content", default=None, help="The page body (or --content-file).")
@click.option(
    "--content-file",
    type=click.File("r", encoding="utf-8"),
    default=None,
    help="Read the body from a file, or - for standard input.",
)
@USER_OPTION
@click.option("--summary", default=None, help="One line (default: the content's first sentence).")
@click.option("--tag", "tags", multiple=True)
@click.option("--sl-ref", "sl_refs", multiple=True, help="A semantic entity the page is about.")
@click.option("--ref", "refs", multiple=True, help="Another page, by id.")
@click.option("--usage-mode", type=click.Choice(USAGE_MODES), default=None)
@click.option("--confidence", type=float, default=None)
@click.option("--provenance", type=click.Choice(PROVENANCES), default=None)
@click.option("--source", default=None, help="Where the knowledge came from.")
@click.option("--source-commit", default=None, metavar="REV", help="Default: HEAD.")
@click.option("--path", "paths", multiple=True, help="A file the knowledge is about (repeatable).")
@click.option("--reasoning", default=None)
@click.option("--alternative", "alternatives", multiple=True)
@click.option("--step", "steps", multiple=True)
@click.option("--conflict-key", default=None)
@click.option("--conflict-scope", "conflict_scope", multiple=True, metavar="K=V")
@click.option("--exclusive", is_flag=True, help="Only one active page may hold this conflict key.")
@click.option("--supersedes", default=None, metavar="ID", help="Retire this page explicitly.")
@click.option("--commit", "do_commit", is_flag=True, help="Commit exactly the files written.")
@NO_BUILD_OPTION
@JSON_OPTION
@global_options
@click.pass_context
def store(
    ctx: click.Context,
    category: str,
    title: str,
    content: str | None,
    content_file: Any,
    user: str | None,
    summary: str | None,
    tags: tuple[str, ...],
    sl_refs: tuple[str, ...],
    refs: tuple[str, ...],
    usage_mode: str | None,
    confidence: float | None,
    provenance: str | None,
    source: str | None,
    source_commit: str | None,
    paths: tuple[str, ...],
    reasoning: str | None,
    alternatives: tuple[str, ...],
    steps: tuple[str, ...],
    conflict_key: str | None,
    conflict_scope: tuple[str, ...],
    exclusive: bool,
    supersedes: str | None,
    do_commit: bool,
    no_build: bool,
    as_json: bool,
) -> None:
    """Write knowledge as a new page, reconciled with what the tree already holds.

    A verbatim repeat is a no-op; a page on the same subject is superseded (unless the new
    title only adds a negation); an overlapping page stays, and the command to retire it is
    printed. Error findings refuse the write (exit 1) and nothing is written.

    \b
    Examples:
      knowl store --category decision --title "Database choice" --content "We use Postgres."
      echo "Churn counts cancelled subscriptions." | knowl store --category fact \\
          --title "Churn" --content-file - --sl-ref billing.subscriptions.churned --commit
    """
    # Lazy: the writes load with the command (start-up time).
    from knowl_build.app import writing

    if (content is None) == (content_file is None):
        raise UsageError("give exactly one of --content and --content-file")
    request = writing.request(
        category=category,
        title=title,
        content=content if content is not None else content_file.read(),
        user=user,
        summary=summary,
        tags=tags,
        sl_refs=sl_refs,
        refs=refs,
        usage_mode=usage_mode,
        confidence=confidence,
        provenance=provenance,
        source=source,
        source_commit=source_commit,
        paths=paths,
        reasoning=reasoning,
        alternatives=alternatives,
        steps=steps,
        conflict_key=conflict_key,
        conflict_scope=dict(_scope_pair(p) for p in conflict_scope),
        exclusive=exclusive,
        supersedes=supersedes,
    )
    stored = writing.store(
        settings(ctx).locator.project(), request, do_commit=do_commit, rebuild=not no_build
    )
    _print_changes(stored.outcome.changes, as_json)
    if as_json:
        emit_json(stored.to_json())
    else:
        from knowl_build.output import text

        text.store_outcome(stored.outcome, text.console(sys.stderr))
    _print_commit(stored.commit)
    _print_build(stored.build)
    ctx.exit(stored.exit_status)


@cli.command()
@click.argument("title")
@USER_OPTION
@click.option(
    "--folder",
    default="",
    metavar="PATH",
    help="A folder below the scope's folder (knowledge/global/ or knowledge/user/<you>/).",
)
@click.option("--name", default=None, help="The file name without .md (default: from the title).")
@click.option("--summary", default=None, help="One line.")
@click.option("--category", type=click.Choice(CATEGORIES), default=None)
@click.option("--usage-mode", type=click.Choice(USAGE_MODES), default=None)
@click.option(
    "--sl-ref",
    "sl_refs",
    multiple=True,
    metavar="ENTITY",
    help="A semantic entity the page is about (repeatable): bound to its live definition.",
)
@click.option("--tag", "tags", multiple=True)
@click.option("--ref", "refs", multiple=True, help="Another page, by id.")
@click.option("--content", default=None, help="The body (default: empty, for you to write).")
@click.option("--commit", "do_commit", is_flag=True, help="Commit exactly the file written.")
@JSON_OPTION
@global_options
@click.pass_context
def new(
    ctx: click.Context,
    title: str,
    user: str | None,
    folder: str,
    name: str | None,
    summary: str | None,
    category: str | None,
    usage_mode: str | None,
    sl_refs: tuple[str, ...],
    tags: tuple[str, ...],
    refs: tuple[str, ...],
    content: str | None,
    do_commit: bool,
    as_json: bool,
) -> None:
    """Write a new page titled TITLE with valid frontmatter, for you to fill in.

    Each --sl-ref entity is bound to its live definition (meta.bound_fingerprints, with
    meta.last_validated_at now), so a later change of it is drift. The page is checked first:
    an error finding, or an id its scope already holds, writes nothing (exit 1). It never
    replaces a file and does not rebuild: run knowl check or knowl build next.

    \b
    Examples:
      knowl new "Gross margin" --sl-ref orders.gross_margin --usage-mode definition
      knowl new "Refund policy" --folder finance --category decision --commit
      knowl new "My notes" --user alice
    """
    # Lazy: the writes load with the command (start-up time).
    from knowl_build.app import writing

    request = writing.NewPage(
        title=title,
        user=user,
        folder=folder,
        name=name,
        content=content or "",
        summary=summary,
        category=category,
        usage_mode=usage_mode,
        tags=list(tags),
        sl_refs=list(sl_refs),
        refs=list(refs),
    )
    created = writing.new_page(settings(ctx).locator.project(), request, do_commit=do_commit)
    if as_json:
        emit_json(created.to_json())
    else:
        from knowl_build.output import text

        text.new_outcome(created.outcome, text.console(sys.stderr))
    _print_commit(created.outcome.commit)
    ctx.exit(created.exit_status)


@cli.command()
@click.argument("old")
@click.argument("new")
@USER_OPTION
@click.option("--commit", "do_commit", is_flag=True, help="Commit exactly the file written.")
@NO_BUILD_OPTION
@JSON_OPTION
@global_options
@click.pass_context
def supersede(
    ctx: click.Context,
    old: str,
    new: str,
    user: str | None,
    do_commit: bool,
    no_build: bool,
    as_json: bool,
) -> None:
    """Mark OLD as superseded by NEW (status and superseded_by). Nothing is deleted.

    Refused (exit 1) for the same page, unknown pages, a page that is not active, a frozen
    OLD, or a supersession that would make a cycle.

    \b
    Example:
      knowl supersede warehouse-engine-2023 warehouse-engine --commit
    """
    from knowl_build.app import writing

    written = writing.supersede(
        settings(ctx).locator.project(),
        old,
        new,
        user=user,
        do_commit=do_commit,
        rebuild=not no_build,
    )
    _print_written(written, as_json)


@cli.command()
@click.argument("pages", nargs=-1, required=True)
@USER_OPTION
@click.option("--force", is_flag=True, help="Review frozen pages too.")
@click.option("--commit", "do_commit", is_flag=True, help="Commit each page written.")
@NO_BUILD_OPTION
@JSON_OPTION
@global_options
@click.pass_context
def review(
    ctx: click.Context,
    pages: tuple[str, ...],
    user: str | None,
    force: bool,
    do_commit: bool,
    no_build: bool,
    as_json: bool,
) -> None:
    """Record that a person re-read the pages against the live definitions: sets
    meta.last_validated_at to now, refreshes meta.bound_fingerprints and promotes an agent's
    draft (status: draft) to active. A page the review leaves byte for byte as it was (reviewed
    again within the same second) is not written, so there is nothing to commit.

    \b
    Examples:
      knowl review revenue-definition
      knowl review mrr churn-definition --commit
    """
    from knowl_build.app import writing

    written = writing.review(
        settings(ctx).locator.project(),
        list(pages),
        user=user,
        force=force,
        do_commit=do_commit,
        rebuild=not no_build,
    )
    for page in written.pages:
        if not page.changed:
            say(f"unchanged: {page.path} (already reviewed; nothing written)")
    _print_written(written, as_json)


@cli.command()
@click.option("--apply", "apply_", is_flag=True, help="Write the proposed changes (exit 0).")
@click.option("--commit", "do_commit", is_flag=True, help="With --apply: commit each page written.")
@USER_OPTION
@global_options
@click.pass_context
def fix(ctx: click.Context, apply_: bool, do_commit: bool, user: str | None) -> None:
    """Propose fixes as a unified diff, one per page: rename entities that history shows
    renamed (in sl_refs, bound fingerprints and directives); remove sl_refs to entities
    deleted from the semantic layer (and their bound fingerprints), marking those pages for
    review; remove refs to pages that history shows deleted; rewrite links to pages and
    files git shows moved, each in its own form.

    Exit 1 when there are proposals, 0 when there are none; --apply writes them and exits 0.
    Frozen and human_curated / board_approved pages are reported, never edited. Only pages
    the user may write are looked at: global ones and, with --user, that user's own.

    \b
    Examples:
      knowl fix
      knowl fix --apply
      knowl fix --apply --user alice
    """
    from knowl_build.app import writing

    found = settings(ctx)
    fixed = writing.fix(found.locator.project(), user=user, apply=apply_, do_commit=do_commit)
    for line in fixed.plan.reported:
        say(f"knowl: notice: {line}")
    for proposal in fixed.plan.proposals:
        sys.stdout.write(proposal.diff())
    if not found.quiet:
        if fixed.applied:
            click.echo(f"wrote {len(fixed.written)} file(s)", err=True)
            _print_commit(fixed.commit)
        else:
            click.echo(
                f"{len(fixed.plan.proposals)} proposal(s); run knowl fix --apply to write them",
                err=True,
            )
    ctx.exit(fixed.exit_status)
