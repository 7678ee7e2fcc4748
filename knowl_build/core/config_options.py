"""The kinds of configuration value, and `option()`, which declares one key.

Each key of knowl.toml is one field of `config.Config` (or of a section it holds), declared
with `option(key, kind, default, doc)`: the dotted key, its kind (the type, the bounds or
choices, the check), its default and its documentation (a paragraph of Markdown). The loader
(`config_loader`) validates from these declarations and the documentation's configuration
page is generated from them (`docs/hooks/reference.py`), as mkdocs' `config_options` do.

A kind's `read` takes the value as TOML gave it and returns it as the configuration holds it,
or raises `Invalid` with a one-line problem; the loader adds the file and the key.

To add a key: declare the field in `config.Config` where its table's keys are (the order is
the documentation's), with a kind from here (or a new `Kind` subclass when none fits) and
`recorded=False` when no artifact depends on it; a check that reads other keys too goes in
`config_loader.RELATIONS`. In tests/test_config_schema.py give it a row of `CASES` (a value
and what the field then holds), and when it is recorded, its default in `DEFAULT_RECORD`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Generic, TypeVar, cast
from urllib.parse import urlsplit

from knowl_build.core.vocabulary import SEVERITY_CHOICES

T = TypeVar("T")
V = TypeVar("V", covariant=True)
OPTION = "knowl.option"  # the key of a field's metadata that holds its Option
RULE_CODE = re.compile(r"KB[0-9]{3}")  # the shape of a code; the rules know which exist


class Invalid(ValueError):
    """A value a key does not accept: `problem` is one line; `at` continues the dotted key
    when the problem is inside the value (`.KB202` in a table of codes)."""

    def __init__(self, problem: str, at: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.at = at


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    # For a message only: not loaded by every run (start-up time).
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


_NAMES = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "a table",
}


def expect(value: object, *kinds: type) -> Any:
    """`value` when it is one of `kinds`; a TOML boolean is never a number here."""
    wanted = " or ".join(_NAMES[kind] for kind in kinds)
    if isinstance(value, bool) and bool not in kinds:
        raise Invalid(f"expected {wanted}, got a boolean")
    if not isinstance(value, kinds):
        raise Invalid(f"expected {wanted}, got {type(value).__name__}")
    return value


def unknown_keys(table: Mapping[str, Any], known: Collection[str], prefix: str = "") -> None:
    for key in table:
        if key not in known:
            raise Invalid(f"unknown key{did_you_mean(key, known)}", f"{prefix}{key}")


def recorded(value: object) -> object:
    """A value as `Config.to_json` records it: sequences as lists, tables sorted."""
    if isinstance(value, Mapping):
        return {key: recorded(item) for key, item in sorted(value.items())}
    if isinstance(value, tuple | list):
        return [recorded(item) for item in value]
    return value


class Kind(ABC, Generic[V]):
    """What a key accepts: `read` checks a value, `describe` is its type as the
    documentation shows it, `record` how `Config.to_json` records it."""

    @abstractmethod
    def describe(self) -> str: ...

    @abstractmethod
    def read(self, value: object) -> V: ...

    def record(self, value: object) -> object:
        return recorded(value)


class Boolean(Kind[bool]):
    def describe(self) -> str:
        return "boolean"

    def read(self, value: object) -> bool:
        return cast(bool, expect(value, bool))


@dataclass(frozen=True)
class Integer(Kind[int]):
    """An integer of at least `least` (and at most `most`)."""

    least: int
    most: int | None = None

    def describe(self) -> str:
        most = "" if self.most is None else f", at most {self.most}"
        return f"integer >= {self.least}{most}"

    def read(self, value: object) -> int:
        number: int = expect(value, int)
        if number < self.least:
            raise Invalid(f"must be at least {self.least}, got {number}")
        if self.most is not None and number > self.most:
            raise Invalid(f"must be at most {self.most}, got {number}")
        return number


@dataclass(frozen=True)
class Number(Kind[float]):
    """A number from `least` to `most`, in `unit`."""

    least: float
    most: float
    unit: str

    def describe(self) -> str:
        return f"number ({self.unit}), {self.least:g} to {self.most:g}"

    def read(self, value: object) -> float:
        number: float = expect(value, int, float)
        if not (math.isfinite(number) and self.least <= number <= self.most):
            raise Invalid(f"must be a number from {self.least:g} to {self.most:g}, got {number}")
        return float(number)


@dataclass(frozen=True)
class Text(Kind[str]):
    """A string; `pattern` (a regular expression) is what it must match, whole."""

    pattern: str | None = None

    def describe(self) -> str:
        return "string"

    def read(self, value: object) -> str:
        string: str = expect(value, str)
        if self.pattern is not None and not re.fullmatch(self.pattern, string):
            raise Invalid(f"must match {self.pattern}")
        return string


@dataclass(frozen=True)
class Choice(Kind[str]):
    """One string of `choices`."""

    choices: tuple[str, ...]

    def describe(self) -> str:
        return f"string ({'|'.join(self.choices)})"

    def read(self, value: object) -> str:
        string: str = expect(value, str)
        if string not in self.choices:
            raise Invalid(
                f"must be one of {', '.join(self.choices)}, got {string!r}"
                + did_you_mean(string, self.choices)
            )
        return string


def _inside(value: str) -> PurePosixPath:
    """A project-relative path, `\\` read as `/`; ValueError when it could leave the project
    or names no file (empty, or holding a NUL, which no file name does)."""
    pure = PurePosixPath(value.replace("\\", "/"))
    if not value.strip() or "\0" in value or pure.is_absolute() or ".." in pure.parts:
        raise ValueError(value)
    return pure


def _in_git(pure: PurePosixPath) -> bool:
    """Whether the path goes into a `.git` folder, which holds no file of the project."""
    return any(part.casefold() == ".git" for part in pure.parts)


@dataclass(frozen=True)
class Folder(Kind[str]):
    """A folder inside the project, as a POSIX path (`.` for the root, unless `root` names
    what the root is held as)."""

    root: str | None = None

    def describe(self) -> str:
        return "folder (string)"

    def read(self, value: object) -> str:
        string: str = expect(value, str)
        try:
            pure = _inside(string)
        except ValueError:
            raise Invalid(f"must be a folder inside the project, got {string!r}") from None
        if _in_git(pure):
            raise Invalid(f"must be a folder of its own, outside the git directory, got {string!r}")
        folder = pure.as_posix()
        return self.root if folder == "." and self.root is not None else folder


class File(Kind[str]):
    """A file inside the project: a pull request can change knowl.toml too."""

    def describe(self) -> str:
        return "string (a file inside the project)"

    def read(self, value: object) -> str:
        string: str = expect(value, str)
        try:
            path = _inside(string).as_posix()
        except ValueError:
            path = "."
        if path == ".":
            raise Invalid(f"must be a file inside the project, got {string!r}")
        return path


@dataclass(frozen=True)
class Strings(Kind[tuple[str, ...]]):
    """A list of strings; `check` says what is wrong with one item (or None), and at most
    `most` items are taken."""

    check: Callable[[str], str | None] | None = None
    most: int | None = None
    noun: str = "items"

    def describe(self) -> str:
        return "list of strings"

    def read(self, value: object) -> tuple[str, ...]:
        items: list[object] = expect(value, list)
        if any(not isinstance(item, str) for item in items):
            raise Invalid("expected a list of strings")
        strings = cast(list[str], items)
        if self.most is not None and len(strings) > self.most:
            raise Invalid(f"holds more than {self.most} {self.noun}")
        check = self.check
        for problem in map(check, strings) if check is not None else ():
            if problem is not None:
                raise Invalid(problem)
        return tuple(strings)


@dataclass(frozen=True)
class Weights(Kind[Mapping[str, float]]):
    """A table of numbers greater than 0 and at most `most`, one per name of `defaults`,
    which the names left out keep."""

    defaults: Mapping[str, float]
    most: float

    def describe(self) -> str:
        return "table of numbers"

    def read(self, value: object) -> Mapping[str, float]:
        table: dict[str, Any] = expect(value, dict)
        unknown_keys(table, self.defaults, ".")
        weights = dict(self.defaults)
        for name, weight in table.items():
            try:
                number = expect(weight, int, float)
            except Invalid as error:
                raise Invalid(error.problem, f".{name}") from None
            if not (math.isfinite(number) and 0 < number <= self.most):
                raise Invalid(
                    f"must be a number greater than 0, at most {self.most:g}, got {number}",
                    f".{name}",
                )
            weights[name] = float(number)
        return weights


class HttpAddress(Kind[str]):
    """An absolute http(s) address with a host, held ending in `/` (pages are named under
    it)."""

    def describe(self) -> str:
        return "string"

    def read(self, value: object) -> str:
        url: str = expect(value, str)
        try:
            parts = urlsplit(url)
        except ValueError:  # a bracketed host that is no IPv6 address (`http://[x`)
            parts = urlsplit("")
        if (
            parts.scheme not in ("http", "https")
            or not parts.netloc
            or any(c.isspace() or c == "\0" for c in url)
        ):
            raise Invalid(f"must be an http:// or https:// address, got {url!r}")
        if parts.query or parts.fragment:
            raise Invalid(f"must not have a query or a fragment, got {url!r}")
        return url if url.endswith("/") else url + "/"


SEVERITY_TEXT = f"severity ({'|'.join(SEVERITY_CHOICES)})"


def severities(table: Mapping[str, Any], at: str, beside: Iterable[str] = ()) -> dict[str, str]:
    """A table of rule codes to severities (whether a code names a rule is the rule
    registry's to say: `rules.registry.check_config`)."""
    found: dict[str, str] = {}
    for code, severity in table.items():
        if not RULE_CODE.fullmatch(code):
            raise Invalid(f"unknown rule code{did_you_mean(code, beside)}", f"{at}.{code}")
        if not isinstance(severity, str) or severity not in SEVERITY_CHOICES:
            hint = did_you_mean(severity, SEVERITY_CHOICES) if isinstance(severity, str) else ""
            raise Invalid(
                f"severity must be one of {', '.join(SEVERITY_CHOICES)}, got {severity!r}{hint}",
                f"{at}.{code}",
            )
        found[code] = severity
    return found


@dataclass(frozen=True)
class Severities(Kind[Mapping[str, str]]):
    """The entries of a table that are rule codes: the names `beside` are other keys of it."""

    beside: tuple[str, ...] = ()

    def describe(self) -> str:
        return SEVERITY_TEXT

    def read(self, value: object) -> Mapping[str, str]:
        table: dict[str, Any] = expect(value, dict)
        entries = {k: v for k, v in table.items() if k not in self.beside}
        return severities(entries, "", self.beside)


PathSeverities = tuple[tuple[str, Mapping[str, str]], ...]


class GlobSeverities(Kind[PathSeverities]):
    """A table of path globs, each a table of rule codes, in the order written."""

    def describe(self) -> str:
        return SEVERITY_TEXT

    def read(self, value: object) -> PathSeverities:
        if not isinstance(value, dict):
            raise Invalid("expected a table of globs")
        found = []
        for glob, table in value.items():
            if not glob.strip():
                raise Invalid("a glob must not be empty", f".{glob}")
            if not isinstance(table, dict):
                raise Invalid('expected a table of rule codes, e.g. { KB202 = "off" }', f".{glob}")
            found.append((glob, severities(table, f".{glob}")))
        return tuple(found)

    def record(self, value: object) -> object:
        return [[glob, recorded(table)] for glob, table in cast(PathSeverities, value)]


@dataclass(frozen=True)
class Option:
    """One key as the loader and the documentation read it: the dotted key (`<CODE>` and
    `<glob>` stand for any name), its kind, its default (None for none, and for a pattern:
    a table empty by default has no default entry) and its documentation, Markdown whose
    links are relative to docs/configuration.md. `attribute` is the dotted attribute of
    `Config` that holds it; `recorded` says whether the build's artifact depends on it (it is
    then in `Config.to_json`, under `record_as`, and in the configuration's hash);
    `required` is why the key must be set when its table sets anything."""

    key: str
    check: Kind[Any]
    default: object
    doc: str
    recorded: bool = True
    record_as: str = ""
    required: str | None = None
    attribute: str = ""

    @property
    def kind(self) -> str:
        """The type, bounds or choices, as the documentation shows them."""
        return self.check.describe()

    @property
    def table(self) -> str:
        """The dotted key of the table the option reads: its own key, or for a pattern the
        table whose entries it names (`rules` for `rules.<CODE>`)."""
        return self.key.split(".<", 1)[0]


def option(
    key: str,
    kind: Kind[T],
    default: T,
    doc: str,
    *,
    recorded: bool = True,
    record_as: str = "",
    required: str | None = None,
) -> T:
    """A field of a configuration dataclass that is the key `key` of knowl.toml (see the
    module's docstring). A table default is copied for each configuration."""
    declared = Option(
        key,
        kind,
        None if "<" in key else default,
        doc,
        recorded=recorded,
        record_as=record_as or key.split(".<", 1)[0],
        required=required,
    )
    metadata = {OPTION: declared}
    if isinstance(default, Mapping):
        table = dict(default)
        return field(default_factory=lambda: dict(table), metadata=metadata)  # type: ignore[return-value]
    return field(default=default, metadata=metadata)


def is_section(item: dataclasses.Field[Any]) -> bool:
    """Whether a field holds a dataclass of more options (`Config.search`)."""
    return dataclasses.is_dataclass(item.default_factory)


def options_of(cls: Any, prefix: str = "") -> tuple[Option, ...]:
    """The options a configuration dataclass declares, in the order written, each with the
    attribute that holds it."""
    found: list[Option] = []
    for item in dataclasses.fields(cls):
        if OPTION in item.metadata:
            declared: Option = item.metadata[OPTION]
            found.append(dataclasses.replace(declared, attribute=prefix + item.name))
        elif is_section(item):
            found += options_of(item.default_factory, f"{prefix}{item.name}.")
    return tuple(found)
