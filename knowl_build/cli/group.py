"""The `knowl` group: global options, the one place errors become exit codes, and the
helpers every command renders with.

A command translates its options into one call of the application layer (`knowl_build.app`)
and renders what comes back (`knowl_build.output`). Commands import the application lazily,
inside the command, so `knowl --help` stays instant (start-up time).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from knowl_build import __version__
from knowl_build.core.errors import ArtifactError, KnowlError, UsageError, no_space
from knowl_build.core.vocabulary import EXIT_USAGE
from knowl_build.support import process

F = TypeVar("F", bound=Callable[..., Any])


class Settings:
    """Global options, accepted before or after the command name."""

    def __init__(self) -> None:
        self.repo: Path | None = None
        self.config: Path | None = None
        self.quiet = 0
        self.verbose = 0
        self._locator: Any = None

    @property
    def locator(self) -> Any:
        """Where the project is (`app.project.Locator`: --repo, else found upward)."""
        if self._locator is None:
            # Lazy: the application layer is imported by commands, not by `knowl --help`.
            from knowl_build.app.project import Locator

            self._locator = Locator(self.repo, self.config)
        return self._locator


def settings(ctx: click.Context) -> Settings:
    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = Settings()
    return root.obj


def _store(name: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value is None or value == 0:
            return
        found = settings(ctx)
        if name in ("quiet", "verbose"):
            setattr(found, name, getattr(found, name) + value)
        else:
            setattr(found, name, value)

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


def redact(text: str) -> str:
    """`secrets.scanner.redact`, the scanner loaded only for a message to print (start-up
    time of every command)."""
    from knowl_build.secrets.scanner import redact as scanned

    return scanned(text)


def _redacted(exc: click.ClickException) -> click.ClickException:
    """click's usage messages quote the value given ('x' is not one of ...): it may be a secret."""
    # click types the attribute as final; it is a plain attribute that show() reads.
    setattr(exc, "message", redact(exc.message))  # noqa: B010
    return exc


def say(text: str, *, err: bool = True) -> None:
    """One line for a person: a notice or an error, its control characters made visible."""
    # Lazy: loaded with the first message (start-up time).
    from knowl_build.output.escapes import printable

    click.echo(printable(text), err=err)


class KnowlGroup(click.Group):
    """Turns KnowlError into a one-line message and its exit code, in one place.

    `modules` names the module of each command not registered yet: it is imported when the
    command runs, so a process imports the one command it runs (start-up time of `knowl
    search`). Help, and a name `modules` does not know, import every module of `package`
    (a command module it does not list yet still works)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.modules: dict[str, str] = {}
        self.package: str | None = None

    def _import_all(self) -> None:
        # Only for help and unknown names (start-up time of every other command).
        import pkgutil

        if self.package is not None:
            found = importlib.import_module(self.package)
            for module in pkgutil.iter_modules(found.__path__, self.package + "."):
                importlib.import_module(module.name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._import_all()
        return sorted(self.commands)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            if cmd_name in self.modules:
                importlib.import_module(self.modules[cmd_name])
            else:
                self._import_all()
        return super().get_command(ctx, cmd_name)

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
            ctx.exit(failure(exc, False))
        except click.ClickException as exc:
            raise _redacted(exc) from None
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("knowl: interrupted", err=True)
            ctx.exit(130)
        except Exception as exc:  # the last line of defence: no traceback unless -v
            ctx.exit(failure(exc, bool(settings(ctx).verbose)))


def failure(exc: Exception, verbose: bool) -> int:
    """The one line that says why a command stopped, and its exit code (called while `exc`
    is handled: -v prints its traceback). Also for `knowl search` answered without the
    group (`lean`)."""
    if isinstance(exc, KnowlError):
        say(f"knowl: error: {exc}")
        return exc.exit_code
    full = no_space(exc)  # a full disk wherever it struck (a cache, a log)
    if full is not None:
        say(f"knowl: error: {full}")
        return full.exit_code
    if verbose:
        import traceback  # only for -v (start-up time)

        traceback.print_exc()
    say(redact(f"knowl: internal error: {type(exc).__name__}: {exc} (run with -v for details)"))
    return EXIT_USAGE


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


# --- options shared by several commands ------------------------------------------------------

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
USER_OPTION = click.option(
    "--user",
    default=None,
    metavar="ID",
    help="Answer as this user (their own pages and global ones).",
)
JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
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
    # Not dir_okay=False: click's usage error is four lines; write_sarif says it in one.
    type=click.Path(path_type=Path),
    default=None,
    metavar="FILE",
    help="Also write the findings as a SARIF log to FILE (for a code-scanning upload), "
    "whatever --format prints.",
)


# --- rendering helpers -------------------------------------------------------------------------


def default_format(fmt: str | None) -> str:
    if fmt is None:
        return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    return fmt


def emit_json(data: Any) -> None:
    from knowl_build.output.json_format import dumps

    try:
        text = dumps(data)
    except ValueError:  # NaN or an infinity: JSON has neither
        raise ArtifactError(
            "the answer holds a number that is not finite; run knowl verify"
        ) from None
    click.echo(text)


def notices(lines: list[str], quiet: int) -> None:
    for line in [] if quiet else lines:
        say(f"knowl: notice: {line}")


def write_sarif(path: Path, log: str) -> None:
    from knowl_build.support.files import write_output  # only for a SARIF file (start-up time)

    try:
        write_output(path, log.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot write the SARIF log ({exc.strerror or exc})") from None


@contextlib.contextmanager
def sarif_on_failure(fmt: str, sarif_file: Path | None) -> Iterator[None]:
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
        from knowl_build.app.checking import rule_table
        from knowl_build.core.config import Config
        from knowl_build.output import sarif

        full = no_space(exc)
        if isinstance(exc, KnowlError) or full is not None:
            message = str(full or exc)
        else:
            message = f"internal error: {type(exc).__name__}: {exc}"
        from knowl_build.support.files import write_output

        log = sarif.render([], rule_table(Config()), failure=redact(message))
        if sarif_file is not None:
            # Best effort: the error that stops the run may be this very file.
            with contextlib.suppress(OSError):
                write_output(sarif_file, log.encode("utf-8"))
        if fmt == "sarif":
            sys.stdout.write(log)
        raise


def render_findings(
    fmt: str,
    diagnostics: list[Any],
    rules: Any,
    title: str,
    repo_prefix: str,
    compared: dict[str, Any] | None = None,
    here_prefix: str | None = None,
) -> None:
    """Findings in the chosen format on stdout (SPEC 10); `rules` is the rule table SARIF
    lists, `repo_prefix` the project's folder in its repository (json and sarif paths),
    `here_prefix` the project's folder from the current folder when that is inside its git
    work tree (text and github paths; on a GitHub runner, or from outside the work tree,
    github paths start at the repository's root, where GitHub resolves them)."""
    from knowl_build.output import github, json_format, sarif, text

    if fmt == "json":
        sys.stdout.write(json_format.render(diagnostics, repo_prefix, compared))
    elif fmt == "sarif":
        sys.stdout.write(sarif.render(diagnostics, rules, repo_prefix))
    elif fmt == "github":
        on_runner = os.environ.get("GITHUB_ACTIONS") == "true"
        github_prefix = repo_prefix if on_runner or here_prefix is None else here_prefix
        sys.stdout.write(github.render(diagnostics, github_prefix))
        summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary_file:
            # Appended through whatever the name is (a link, a device): never replaced.
            try:
                with open(summary_file, "a", encoding="utf-8") as handle:
                    handle.write(github.step_summary(diagnostics, title, github_prefix))
            except OSError as exc:
                raise UsageError(
                    f"GITHUB_STEP_SUMMARY {summary_file}: cannot append the summary "
                    f"({exc.strerror or exc})"
                ) from None
    else:
        text.render(diagnostics, text.console(), here_prefix or "")


def main() -> None:
    process.for_a_command()
    try:
        cli(prog_name="knowl")
    except SystemExit as done:  # click ends every run with one
        process.exit_now(done.code)


# Each command's module, imported when the command runs (`KnowlGroup.modules`).
_COMMANDS = {
    "checking": ("check", "build", "stale", "conflicts", "rules"),
    "reading": ("search", "context", "show", "traverse", "timeline", "graph", "verify"),
    "publishing": ("site",),
    "serving": ("mcp",),
    "editing": ("lsp",),
    "writing": ("store", "new", "supersede", "review", "fix"),
    "adopting": ("init",),
    "evaluating": ("eval",),
}
assert isinstance(cli, KnowlGroup)
cli.package = "knowl_build.cli"
cli.modules.update(
    {name: f"knowl_build.cli.{module}" for module, names in _COMMANDS.items() for name in names}
)
