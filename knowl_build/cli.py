"""The command line: each command parses options, makes one library call, renders, exits.

Heavy imports happen inside the commands so `knowl --help` stays instant.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from knowl_build import __version__
from knowl_build.diagnostics import EXIT_USAGE
from knowl_build.errors import KnowlError

F = TypeVar("F", bound=Callable[..., Any])


PROJECT_MARKERS = "knowl.toml, [tool.knowl] in pyproject.toml or a knowledge/ folder"


def _declares_knowl(pyproject: Path) -> bool:
    import tomllib

    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        tool = tomllib.loads(text).get("tool")
    except tomllib.TOMLDecodeError:
        # Still the project when it means to be: loading its configuration then names the
        # syntax error, instead of a search that walks past it.
        return "[tool.knowl" in text
    return isinstance(tool, dict) and "knowl" in tool


def find_project_root(start: Path) -> Path | None:
    """The first folder from `start` upward (itself included) holding knowl.toml, a
    pyproject.toml with [tool.knowl], or a knowledge/ folder, as git and ruff find theirs.

    The search stops at the top of the git repository it starts in (a folder holding `.git`):
    a project never spans repositories, and a `knowledge/` folder above the repository (a
    home folder's notes) is not this project."""
    for folder in (start, *start.parents):
        if (
            (folder / "knowl.toml").is_file()
            or (folder / "knowledge").is_dir()
            or _declares_knowl(folder / "pyproject.toml")
        ):
            return folder
        if (folder / ".git").exists():
            return None
    return None


class Settings:
    """Global options, accepted before or after the command name."""

    def __init__(self) -> None:
        self.repo: Path | None = None
        self.config: Path | None = None
        self.quiet = 0
        self.verbose = 0
        self._found: tuple[Path | None] | None = None

    def project_root(self) -> Path | None:
        """--repo as given (no search), else the project found upward from the current
        folder, else None."""
        if self.repo is not None:
            return self.repo.resolve()
        if self._found is None:
            self._found = (find_project_root(Path.cwd().resolve()),)
        return self._found[0]

    @property
    def root(self) -> Path:
        """The project's root: commands that analyse the project stop here without one."""
        from knowl_build.errors import UsageError

        root = self.project_root()
        if root is None:
            raise UsageError(
                f"{Path.cwd()}: no knowl project here or in a parent folder (looked for "
                f"{PROJECT_MARKERS}); run knowl inside the project or pass --repo DIR"
            )
        return root

    def load_config(self) -> Any:
        from knowl_build.config import load_config

        return load_config(self.root, self.config)

    def load_config_if_any(self) -> Any:
        """The project's configuration when there is a project, else --config, else the
        defaults: for commands that can run without a project (rules, mcp --artifact)."""
        from knowl_build.config import Config, load_config

        root = self.project_root()
        if root is not None:
            return load_config(root, self.config)
        if self.config is not None:
            return load_config(Path.cwd(), self.config)
        return Config()


def _settings(ctx: click.Context) -> Settings:
    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = Settings()
    return root.obj


def _store(name: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value is None or value == 0:
            return
        settings = _settings(ctx)
        if name in ("quiet", "verbose"):
            setattr(settings, name, getattr(settings, name) + value)
        else:
            setattr(settings, name, value)

    return callback


def global_options(func: F) -> F:
    options = [
        click.option(
            "--repo",
            type=click.Path(exists=True, file_okay=False, path_type=Path),
            expose_value=False,
            is_eager=True,
            callback=_store("repo"),
            help="Project root (default: found upward from the current folder).",
        ),
        click.option(
            "--config",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            expose_value=False,
            is_eager=True,
            callback=_store("config"),
            help="Configuration file instead of knowl.toml / pyproject.toml.",
        ),
        click.option(
            "-q",
            "--quiet",
            count=True,
            expose_value=False,
            callback=_store("quiet"),
            help="Print less (no summary, no progress).",
        ),
        click.option(
            "-v",
            "--verbose",
            count=True,
            expose_value=False,
            callback=_store("verbose"),
            help="Print more; show tracebacks of internal errors.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _redacted(exc: click.ClickException) -> click.ClickException:
    """click's usage messages quote the value given ('x' is not one of ...): it may be a secret."""
    from knowl_build.secrets import redact

    # click types the attribute as final; it is a plain attribute that show() reads.
    setattr(exc, "message", redact(exc.message))  # noqa: B010
    return exc


class KnowlGroup(click.Group):
    """Turns KnowlError into a one-line message and exit 2, in one place."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            raise _redacted(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KnowlError as exc:
            click.echo(f"knowl: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except click.ClickException as exc:
            raise _redacted(exc) from None
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("knowl: interrupted", err=True)
            ctx.exit(130)
        except Exception as exc:  # the last line of defence: no traceback unless -v
            from knowl_build.secrets import redact

            if _settings(ctx).verbose:
                traceback.print_exc()
            click.echo(
                redact(
                    f"knowl: internal error: {type(exc).__name__}: {exc} (run with -v for details)"
                ),
                err=True,
            )
            ctx.exit(EXIT_USAGE)


@click.group(cls=KnowlGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="knowl")
@global_options
def cli() -> None:
    """knowl-build: a git-native static knowledge compiler.

    Validates Markdown knowledge pages under knowledge/ against the semantic layer under
    semantics/, with every finding at its file, line and column.

    \b
    Example:
      knowl check --repo sample_repo
    """


FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github", "sarif"]),
    default=None,
    help="Finding format (default: text; github under GitHub Actions).",
)
ARTIFACT_OPTION = click.option(
    "--artifact",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="An artifact folder (default: the project's current build).",
)


def _default_format(fmt: str | None) -> str:
    if fmt is None:
        return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    return fmt


BASELINE_OPTION = click.option(
    "--baseline",
    default=None,
    metavar="REF",
    help="Report (and fail on) only findings that are new against the project at REF, a "
    "commit, branch or tag such as origin/main; known ones are counted, not shown.",
)
SARIF_OPTION = click.option(
    "--sarif",
    "sarif_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Also write the findings as a SARIF log to FILE (for a code-scanning upload), "
    "whatever --format prints.",
)


def _repo_prefix(root: Path) -> str:
    """The project's folder inside its git repository ("" at the root or outside git): CI
    resolves annotation and SARIF paths from the repository's root."""
    from knowl_build.history.git import GitRepo

    git = GitRepo.find(root)
    return git.prefix if git is not None else ""


def _write_sarif(path: Path, log: str) -> None:
    from knowl_build.errors import UsageError
    from knowl_build.files import atomic_write

    try:
        atomic_write(path, log.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot write the SARIF log ({exc.strerror or exc})") from None


@contextlib.contextmanager
def _sarif_on_failure(fmt: str, sarif_file: Path | None) -> Iterator[None]:
    """A run that stops (exit 2) still leaves a valid SARIF log where one was asked for, with
    the error as a tool notification, so a code-scanning upload reports the failure instead
    of a missing or unreadable file. The one-line error and exit 2 follow as for any run."""
    if fmt != "sarif" and sarif_file is None:
        yield
        return
    try:
        yield
    except (click.exceptions.Exit, click.exceptions.Abort, KeyboardInterrupt):
        raise
    except Exception as exc:
        from knowl_build.errors import KnowlError
        from knowl_build.output import sarif
        from knowl_build.secrets import redact

        message = (
            str(exc)
            if isinstance(exc, KnowlError)
            else f"internal error: {type(exc).__name__}: {exc}"
        )
        log = sarif.render([], None, failure=redact(message))
        if sarif_file is not None:
            # Best effort: the error that stops the run may be this very file.
            with contextlib.suppress(OSError):
                from knowl_build.files import atomic_write

                atomic_write(sarif_file, log.encode("utf-8"))
        if fmt == "sarif":
            sys.stdout.write(log)
        raise


def _render_findings(
    fmt: str,
    diagnostics: list[Any],
    config: Any,
    title: str,
    repo_prefix: str,
    baseline: dict[str, Any] | None = None,
) -> None:
    from knowl_build.output import github, json_format, sarif, text

    if fmt == "json":
        sys.stdout.write(json_format.render(diagnostics, repo_prefix, baseline))
    elif fmt == "sarif":
        sys.stdout.write(sarif.render(diagnostics, config, repo_prefix))
    elif fmt == "github":
        sys.stdout.write(github.render(diagnostics, repo_prefix))
        summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary_file:
            with open(summary_file, "a", encoding="utf-8") as handle:
                handle.write(github.step_summary(diagnostics, title, repo_prefix))
    else:
        text.render(diagnostics, text.console())


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
    "--no-cache", is_flag=True, help="Parse every page again instead of using .knowl/cache."
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
    baseline: str | None,
    sarif_file: Path | None,
) -> None:
    """Validate every page, reference and semantic file; write nothing but .knowl/cache.

    Without --repo, the project is the first folder upward from the current one holding
    knowl.toml, [tool.knowl] in pyproject.toml or knowledge/. Exit 0 when there is no error
    (with --strict: no warning either), 1 when there is, 2 for usage or configuration
    problems. github and sarif paths start at the git repository's root.

    \b
    Examples:
      knowl check
      knowl check --repo path/to/project --format json
      knowl check --changed-only --strict
      knowl check --format github --sarif knowl.sarif
      knowl check --baseline origin/main
    """
    from knowl_build.build import check as run_check
    from knowl_build.diagnostics import exit_code_for, summarize
    from knowl_build.output import sarif, text

    settings = _settings(ctx)
    fmt = _default_format(fmt)
    with _sarif_on_failure(fmt, sarif_file):
        config = settings.load_config()
        result = run_check(settings.root, config, changed_only=changed_only, use_cache=not no_cache)
        # After the working tree's check: the base reuses the pages its parse cache now holds.
        known = _load_baseline(settings.root, config, baseline)
        findings, compared = _against(known, result.diagnostics)
        prefix = _repo_prefix(settings.root) if fmt != "text" or sarif_file else ""
        if sarif_file is not None:
            _write_sarif(sarif_file, sarif.render(findings, config, prefix))
    err = text.console(sys.stderr)
    for notice in [] if settings.quiet else result.notices:
        err.print(f"knowl: notice: {notice}", markup=False)
    if not result.knowledge_exists and not settings.quiet:
        err.print(
            f"knowl: notice: no {config.knowledge_dir}/ folder in {settings.root}; 0 pages "
            "checked (point --repo at the project)",
            markup=False,
        )
    _render_findings(fmt, findings, config, "knowl check", prefix, compared)
    if not settings.quiet:
        err.print(
            text.summary_line(summarize(findings), result.page_count, result.semantic_file_count)
        )
        if compared is not None:
            err.print(text.baseline_line(compared), markup=False)
    ctx.exit(exit_code_for(findings, strict=strict))


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
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output folder (default: out_dir from the configuration, .knowl/build).",
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
    """
    import time

    from knowl_build.build import build as run_build
    from knowl_build.diagnostics import EXIT_FINDINGS, EXIT_OK, exit_code_for
    from knowl_build.output import sarif, text

    settings = _settings(ctx)
    fmt = _default_format(fmt)
    err = text.console(sys.stderr)
    started = time.perf_counter()
    show = err.is_terminal and not settings.quiet and os.environ.get("CI") != "true"
    with _sarif_on_failure(fmt, sarif_file):
        config = settings.load_config()
        known = _load_baseline(settings.root, config, baseline)
        with text.stage_progress(err, enabled=show) as progress:
            result = run_build(
                settings.root,
                config,
                full=full,
                allow_errors=allow_errors,
                out=out,
                progress=progress,
                gate=None if known is None else (lambda found: known.new(found)[0]),
            )
        findings, compared = _against(known, result.diagnostics)
        prefix = _repo_prefix(settings.root) if fmt != "text" or sarif_file else ""
        if sarif_file is not None:
            _write_sarif(sarif_file, sarif.render(findings, config, prefix))
    for notice in [] if settings.quiet else result.notices:
        err.print(f"knowl: notice: {notice}", markup=False)
    _render_findings(fmt, findings, config, "knowl build", prefix, compared)
    if not settings.quiet:
        text.build_summary(err, result, time.perf_counter() - started)
        if compared is not None:
            err.print(text.baseline_line(compared), markup=False)
    if result.status == "refused":
        ctx.exit(EXIT_FINDINGS)
    if allow_errors:
        warnings = any(d.severity == "warning" for d in findings)
        ctx.exit(EXIT_FINDINGS if strict and warnings else EXIT_OK)
    ctx.exit(exit_code_for(findings, strict=strict))


def _load_baseline(root: Path, config: Any, ref: str | None) -> Any:
    if ref is None:
        return None
    from knowl_build.pipeline import baseline

    return baseline.load(root, config, ref)


def _against(known: Any, diagnostics: list[Any]) -> tuple[list[Any], dict[str, Any] | None]:
    """The findings to report: all of them, or with a baseline the new ones, and what the
    comparison was (for the json document and the summary)."""
    if known is None:
        return diagnostics, None
    new, hidden = known.new(diagnostics)
    return new, known.to_json(hidden)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
@global_options
@click.pass_context
def stale(ctx: click.Context, as_json: bool) -> None:
    """List the pages that are not fresh, with every reason (from the working tree).

    \b
    Examples:
      knowl stale
      knowl stale --json
    """
    from knowl_build.build import analyse
    from knowl_build.output import text

    settings = _settings(ctx)
    analysis = analyse(settings.root, settings.load_config())
    rows = []
    for page in sorted(analysis.pages, key=lambda p: (p.scope, p.id, p.path)):
        assessment = analysis.assessments.get(page.path)
        if assessment is None or assessment.value == "fresh":
            continue
        data = assessment.to_json()
        rows.append(
            {
                "page": page.id,
                "scope": page.scope,
                "path": page.path,
                "freshness": data["value"],
                "reasons": data["reasons"],
            }
        )
    if as_json:
        _emit_json({"pages": rows})
        return
    text.stale_table(rows, text.console())
    if not settings.quiet:
        click.echo(f"{len(rows)} page(s) not fresh", err=True)


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
    from knowl_build import graph as graphs

    opened = _open_artifact(ctx, artifact)
    data = (opened.folder / "graph.json").read_text(encoding="utf-8")
    if fmt == "json":
        sys.stdout.write(data)
        return
    loaded = graphs.from_json(data)
    sys.stdout.write(graphs.to_graphml(loaded) if fmt == "graphml" else graphs.to_dot(loaded))


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
    from knowl_build import artifacts
    from knowl_build.errors import ArtifactError

    folder = artifact if artifact is not None else _current_artifact(ctx)
    problems = artifacts.verify(folder, full=True)
    if problems:
        for problem in problems:
            click.echo(f"{folder}: {problem}", err=True)
        raise ArtifactError(f"{folder}: {len(problems)} problem(s); the artifact is corrupt")
    count = len(artifacts.read_manifest(folder)["files"]) + 1
    click.echo(f"{folder}: ok, {count} files verified")


def _current_artifact(ctx: click.Context) -> Path:
    from knowl_build import artifacts

    settings = _settings(ctx)
    return artifacts.resolve_artifact(settings.root / settings.load_config().out_dir)


def _open_artifact(ctx: click.Context, artifact: Path | None) -> Any:
    from knowl_build import artifacts

    return artifacts.open_artifact(artifact if artifact is not None else _current_artifact(ctx))


def _valid_user(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """--user becomes a path when a user writes: one rule for every command (names.py). A bad
    name raises a KnowlError, which KnowlGroup turns into one line and exit 2."""
    from knowl_build.names import valid_user

    return valid_user(value)


USER_OPTION = click.option(
    "--user",
    default=None,
    metavar="ID",
    callback=_valid_user,
    help="Answer as this user (their own pages and global ones).",
)


@cli.command()
@click.option("--apply", "apply_", is_flag=True, help="Write the proposed changes (exit 0).")
@click.option("--commit", "do_commit", is_flag=True, help="With --apply: commit each page written.")
@USER_OPTION
@global_options
@click.pass_context
def fix(ctx: click.Context, apply_: bool, do_commit: bool, user: str | None) -> None:
    """Propose fixes as a unified diff: remove sl_refs to entities deleted from the semantic
    layer (and their bound fingerprints), and mark those pages for review.

    Exit 1 when there are proposals, 0 when there are none; --apply writes them and exits 0.
    Frozen and human_curated / board_approved pages are reported, never edited. Only pages
    the user may write are looked at: global ones and, with --user, that user's own.

    \b
    Examples:
      knowl fix
      knowl fix --apply
      knowl fix --apply --user alice
    """
    from knowl_build.build import analyse
    from knowl_build.diagnostics import EXIT_FINDINGS, EXIT_OK
    from knowl_build.writes import fix as fixes

    settings = _settings(ctx)
    root = settings.root
    fix_plan = fixes.plan(analyse(root, settings.load_config()), user=user)
    for line in fix_plan.reported:
        click.echo(f"knowl: notice: {line}", err=True)
    for proposal in fix_plan.proposals:
        sys.stdout.write(proposal.diff())
    if apply_:
        written = fixes.apply(root, fix_plan)
        if do_commit:
            from knowl_build.writes.common import commit

            for proposal, path in zip(fix_plan.proposals, written, strict=True):
                commit(root, [path], f"Fix {Path(proposal.path).stem}")
        if not settings.quiet:
            click.echo(f"wrote {len(written)} file(s)", err=True)
        ctx.exit(EXIT_OK)
    if not settings.quiet:
        click.echo(
            f"{len(fix_plan.proposals)} proposal(s); run knowl fix --apply to write them", err=True
        )
    ctx.exit(EXIT_FINDINGS if fix_plan.proposals or fix_plan.refused else EXIT_OK)


def _reader(ctx: click.Context, artifact: Path | None, peers: tuple[Path, ...] = ()) -> Any:
    from knowl_build.reader import Reader
    from knowl_build.reader.store import Store, find_artifact

    settings = _settings(ctx)
    folder = artifact if artifact is not None else _current_artifact(ctx)
    peer_paths = list(peers)
    if artifact is None and not peers:
        config = settings.load_config()
        peer_paths = [settings.root / p for p in config.peer_paths]
    return Reader(
        Store.open(find_artifact(folder)), [Store.open(find_artifact(p)) for p in peer_paths]
    )


def _emit_json(data: Any) -> None:
    from knowl_build.errors import ArtifactError

    try:
        text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN or an infinity: JSON has neither
        raise ArtifactError(
            "the answer holds a number that is not finite; run knowl verify"
        ) from None
    click.echo(text)


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
@click.option(
    "--status",
    default="active",
    show_default=True,
    type=click.Choice(["active", "deprecated", "rejected", "archived", "superseded", "all"]),
    help="Only pages with this status.",
)
@click.option(
    "--category",
    default=None,
    type=click.Choice(["fact", "decision", "goal", "constraint", "architecture", "state", "skill"]),
)
@click.option(
    "--usage-mode", default=None, type=click.Choice(["reference", "caveat", "policy", "definition"])
)
@click.option("--tag", "tags", multiple=True, help="Pages with any of these tags (repeatable).")
@click.option(
    "--peer",
    "peers",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Another repository's artifact (or project root) to search too (repeatable).",
)
@ARTIFACT_OPTION
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
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
    peers: tuple[Path, ...],
    artifact: Path | None,
    as_json: bool,
) -> None:
    """Search the built knowledge: plain terms, OR-ed, best first; caveats ride along.

    \b
    Examples:
      knowl search "monthly recurring revenue"
      knowl search churn --user alice --json
      knowl search revenue --usage-mode policy --tag finance --peer ../billing-kb
    """
    from knowl_build.output import text

    with _reader(ctx, artifact, peers) as reader:
        answer = reader.search(
            query,
            user=user,
            limit=limit,
            status=status,
            category=category,
            usage_mode=usage_mode,
            tags=tags,
        )
    if as_json:
        _emit_json(answer)
    else:
        text.search_results(answer, text.console())


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
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
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

    PAGE is an id, global:<id> or user:<owner>:<id>.

    \b
    Examples:
      knowl show revenue-definition
      knowl show user:alice:revenue-notebook --user alice --json
      knowl show revenue-definition --at v1.2
    """
    from knowl_build.errors import UsageError
    from knowl_build.output import text

    if at is not None:
        if artifact is not None:
            raise UsageError("--at reads git history and cannot be combined with --artifact")
        from knowl_build.timeline import show_at

        settings = _settings(ctx)
        answer = show_at(settings.root, settings.load_config(), page, at, user)
    else:
        with _reader(ctx, artifact) as reader:
            answer = reader.show(page, user=user)
    if as_json:
        _emit_json(answer)
    else:
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
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
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
    """Walk the reference graph breadth-first from the given pages.

    \b
    Examples:
      knowl traverse revenue-definition
      knowl traverse mrr churn-definition --depth 1 --json
    """
    from knowl_build.output import text

    with _reader(ctx, artifact) as reader:
        answer = reader.traverse(list(pages), user=user, depth=depth, max_nodes=max_nodes)
    if as_json:
        _emit_json(answer)
    else:
        text.traversal(answer, text.console())


@cli.command()
@click.argument("page")
@USER_OPTION
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
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
    from knowl_build.output import text
    from knowl_build.timeline import timeline as page_timeline

    settings = _settings(ctx)
    answer = page_timeline(settings.root, settings.load_config(), page, user)
    for notice in answer["notices"]:
        click.echo(f"knowl: notice: {notice}", err=True)
    if as_json:
        _emit_json(answer)
    else:
        text.timeline(answer, text.console())


def _print_changes(changes: list[Any], as_json: bool) -> None:
    """Each write prints its diff (on stderr when stdout holds JSON)."""
    for change in changes:
        click.echo(change.diff(), nl=False, err=as_json)


def _scope_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise click.BadParameter(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


@cli.command()
@click.option(
    "--category",
    required=True,
    type=click.Choice(["fact", "decision", "goal", "constraint", "architecture", "state", "skill"]),
)
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
@click.option(
    "--usage-mode", type=click.Choice(["reference", "caveat", "policy", "definition"]), default=None
)
@click.option("--confidence", type=float, default=None)
@click.option(
    "--provenance", type=click.Choice(["board_approved", "human_curated", "inferred"]), default=None
)
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
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
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
    from knowl_build.errors import UsageError
    from knowl_build.writes.store import Request
    from knowl_build.writes.store import store as run_store

    if (content is None) == (content_file is None):
        raise UsageError("give exactly one of --content and --content-file")
    if (conflict_scope and conflict_key is None) or (exclusive and conflict_key is None):
        raise UsageError("--conflict-scope and --exclusive need --conflict-key")
    body = content if content is not None else content_file.read()
    settings = _settings(ctx)
    request = Request(
        category=category,
        title=title,
        content=body,
        user=user,
        summary=summary,
        tags=list(tags),
        sl_refs=list(sl_refs),
        refs=list(refs),
        usage_mode=usage_mode,
        confidence=confidence,
        provenance=provenance,
        source=source,
        source_commit=source_commit,
        paths=list(paths),
        reasoning=reasoning,
        alternatives=list(alternatives),
        steps=list(steps),
        conflict_key=conflict_key,
        conflict_scope=dict(_scope_pair(p) for p in conflict_scope),
        exclusive=exclusive,
        supersedes=supersedes,
    )
    outcome = run_store(settings.root, settings.load_config(), request, do_commit=do_commit)
    _print_changes(outcome.changes, as_json)
    if as_json:
        _emit_json(outcome.to_json())
    else:
        from knowl_build.output import text

        text.store_outcome(outcome, text.console(sys.stderr))
    ctx.exit(1 if outcome.action == "refused" else 0)


@cli.command()
@click.argument("old")
@click.argument("new")
@USER_OPTION
@click.option("--commit", "do_commit", is_flag=True, help="Commit exactly the file written.")
@global_options
@click.pass_context
def supersede(ctx: click.Context, old: str, new: str, user: str | None, do_commit: bool) -> None:
    """Mark OLD as superseded by NEW (status and superseded_by). Nothing is deleted.

    Refused (exit 1) for the same page, unknown pages, a page that is not active, a frozen
    OLD, or a supersession that would make a cycle.

    \b
    Example:
      knowl supersede warehouse-engine-2023 warehouse-engine --commit
    """
    from knowl_build.writes.governance import supersede as run_supersede

    settings = _settings(ctx)
    result = run_supersede(
        settings.root, settings.load_config(), old, new, user=user, do_commit=do_commit
    )
    _print_changes(result.changes, False)


@cli.command()
@click.argument("pages", nargs=-1, required=True)
@USER_OPTION
@click.option("--force", is_flag=True, help="Review frozen pages too.")
@click.option("--commit", "do_commit", is_flag=True, help="Commit each page written.")
@global_options
@click.pass_context
def review(
    ctx: click.Context, pages: tuple[str, ...], user: str | None, force: bool, do_commit: bool
) -> None:
    """Record that a person re-read the pages against the live definitions: sets
    meta.last_validated_at to now and refreshes meta.bound_fingerprints.

    \b
    Examples:
      knowl review revenue-definition
      knowl review mrr churn-definition --commit
    """
    from knowl_build.writes.governance import review as run_review

    settings = _settings(ctx)
    result = run_review(
        settings.root,
        settings.load_config(),
        list(pages),
        user=user,
        force=force,
        do_commit=do_commit,
    )
    _print_changes(result.changes, False)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
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
    from knowl_build.build import analyse
    from knowl_build.output import text
    from knowl_build.writes.governance import conflict_groups

    settings = _settings(ctx)
    groups = conflict_groups(analyse(settings.root, settings.load_config()))
    if as_json:
        _emit_json({"groups": groups})
    else:
        text.conflict_table(groups, text.console())
    ctx.exit(1 if any(g["violation"] for g in groups) else 0)


@cli.command()
@ARTIFACT_OPTION
@click.option(
    "--allow-writes",
    is_flag=True,
    help="Add store_knowledge and supersede_knowledge (needs --repo).",
)
@global_options
@click.pass_context
def mcp(ctx: click.Context, artifact: Path | None, allow_writes: bool) -> None:
    """Serve the knowledge base over the Model Context Protocol (stdio), read-only by default.

    Tools: search_knowledge, read_knowledge_page, traverse_knowledge, list_stale, and
    knowledge_timeline when started with --repo. Needs the mcp extra.

    \b
    Examples:
      knowl mcp --repo path/to/project
      knowl mcp --artifact downloaded-artifact/
      knowl mcp --repo . --allow-writes
    """
    from knowl_build.mcp_server import make_server

    settings = _settings(ctx)
    repo = settings.root if settings.repo is not None else None
    if repo is None and artifact is not None:
        # Serving a given artifact needs no project: its configuration only when there is one.
        config = settings.load_config_if_any()
    else:
        config = settings.load_config()
        if repo is None:
            # The project found from the current folder: serve its current build (only
            # --repo adds the tools that read the tree and git).
            artifact = settings.root / config.out_dir
    server = make_server(artifact=artifact, repo=repo, config=config, allow_writes=allow_writes)
    server.run("stdio")


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
    from knowl_build.output import text

    config = _settings(ctx).load_config_if_any()
    text.rules_table(config, text.console())


def main() -> None:
    cli(prog_name="knowl")
