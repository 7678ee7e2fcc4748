"""`knowl search` answered without click: the lean entry point of the command people and
agents run most (start-up time, issue 25: importing click and building the command tree
cost a search process about a fifth of its time at 10,000 pages).

Only a plain invocation is answered here: `knowl search QUERY` with options each given once,
as `--name value` or `--name=value`, every value one click would take as it is. Anything
else (help, `--`, a value click would refuse or convert, options before the command name,
a query beginning with `-`) goes to click. So does every run that fails before its answer is
written: a search writes nothing, so click answers it again, with its own messages and exit
codes. An error while the answer is written is reported as the click group reports it
(`main.failure`).
"""

from __future__ import annotations

import codecs
import os
import sys
from pathlib import Path
from typing import Any

from knowl_build.core.vocabulary import CATEGORIES, STATUSES, USAGE_MODES
from knowl_build.support import process

_FLAGS = frozenset({"--json", "-q", "--quiet", "-v", "--verbose"})
_CHOICES = {
    "--status": frozenset({*STATUSES, "all"}),
    "--category": frozenset(CATEGORIES),
    "--usage-mode": frozenset(USAGE_MODES),
    "--kind": frozenset({"all", "page", "entity"}),
}
_VALUES = frozenset({"--user", "--limit", "--tag", "--peer", "--artifact", "--repo", "--config"})
_REPEATABLE = frozenset({"--tag", "--peer"})
_DIRECTORIES = frozenset({"--peer", "--artifact", "--repo"})


def _accepted(name: str, value: str) -> bool:
    """Whether click would take `value` for option `name` unchanged (else click answers)."""
    if not value or value.startswith("-"):
        return False
    if name in _CHOICES:
        return value in _CHOICES[name]
    if name == "--limit":
        return value.isascii() and value.isdecimal() and int(value) >= 1
    if name in _DIRECTORIES:
        return os.path.isdir(value)
    if name == "--config":
        return os.path.exists(value) and not os.path.isdir(value)
    return True


def parse(args: list[str]) -> tuple[str, dict[str, list[str]]] | None:
    """The query and the options of `search ...` (option -> its values), or None when click
    must read them."""
    if not args or args[0] != "search":
        return None
    query: str | None = None
    options: dict[str, list[str]] = {}
    rest = iter(args[1:])
    for arg in rest:
        if not arg.startswith("-"):
            if query is not None:
                return None
            query = arg
            continue
        name, equals, value = arg.partition("=")
        if name in _FLAGS and not equals:
            options.setdefault(name, []).append("")
            continue
        if name not in _VALUES and name not in _CHOICES:
            return None
        if not equals:
            value = next(rest, "")
        if (name in options and name not in _REPEATABLE) or not _accepted(name, value):
            return None
        options.setdefault(name, []).append(value)
    return None if query is None else (query, options)


def _one(options: dict[str, list[str]], name: str) -> str | None:
    found = options.get(name)
    return found[-1] if found else None


def _answer(query: str, options: dict[str, list[str]]) -> Any:
    """What `reading.search` (the command's body) answers."""
    from knowl_build.app import reading
    from knowl_build.app.project import Locator

    def path(name: str) -> Path | None:
        value = _one(options, name)
        return None if value is None else Path(value)

    found = reading.SearchOptions(
        _one(options, "--user"),
        int(_one(options, "--limit") or 5),
        _one(options, "--status") or "active",
        _one(options, "--category"),
        _one(options, "--usage-mode"),
        tuple(options.get("--tag", ())),
        _one(options, "--kind") or "all",
    )
    peers = [Path(value) for value in options.get("--peer", ())]
    locator = Locator(path("--repo"), path("--config"))
    with reading.open_reader(locator, path("--artifact"), peers) as reader:
        return reading.search(reader, query, found)


def _json(answer: Any) -> str | None:
    """The answer as `emit_json` prints it, where click.echo would write it unchanged (a
    UTF-8 stream, no escape sequence to strip); else None."""
    from knowl_build.output.json_format import dumps

    encoding = sys.stdout.encoding
    if not encoding or codecs.lookup(encoding).name != "utf-8":
        return None
    try:
        text = dumps(answer)
    except ValueError:  # not finite: the command's own error, through click
        return None
    return None if "\x1b" in text else text + "\n"


def _write(answer: Any, as_json: str | None) -> None:
    """The answer on stdout, as the command writes it."""
    if as_json is not None:
        sys.stdout.write(as_json)
        sys.stdout.flush()
        return
    from knowl_build.output import hits

    if not hits.write_plain(answer, sys.stdout):
        from knowl_build.output import text

        text.search_results(answer, text.console())


def run(args: list[str]) -> None:
    """Answer `knowl ARGS` and end the process, or return (nothing written) for click."""
    parsed = parse(args)
    if parsed is None:
        return
    query, options = parsed
    try:
        answer = _answer(query, options)
        as_json = _json(answer) if "--json" in options else None
        if "--json" in options and as_json is None:
            return
    except KeyboardInterrupt:
        _interrupted()
    except Exception:  # click answers again, and says what is wrong as it always has
        return
    try:
        _write(answer, as_json)
    except KeyboardInterrupt:
        _interrupted()
    except Exception as exc:
        # Imported here: click only for an error (start-up time of every search).
        from knowl_build.cli.group import failure

        verbose = "-v" in options or "--verbose" in options
        process.exit_now(failure(exc, verbose))
    process.exit_now(0)


def _interrupted() -> None:
    sys.stderr.write("knowl: interrupted\n")
    process.exit_now(130)
