"""Reading the configuration: knowl.toml or pyproject.toml's [tool.knowl], every key checked
against its declaration in `config` (`config.SCHEMA`), with a message that names the file and
the key. Nothing here names a key but the checks between keys (`RELATIONS`)."""

from __future__ import annotations

import dataclasses
import sys
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from knowl_build.core.config import Config
from knowl_build.core.config_options import (
    Invalid,
    Option,
    expect,
    is_section,
    options_of,
    unknown_keys,
)
from knowl_build.core.errors import ConfigError
from knowl_build.core.layouts import FLAT

C = TypeVar("C")
_MISSING = object()


Tables = dict[str, tuple[list[str], bool]]
_SCHEMAS: dict[type, tuple[tuple[Option, ...], Tables]] = {}


def _schema(cls: Any) -> tuple[tuple[Option, ...], Tables]:
    """The options a configuration dataclass declares, and each table that holds them
    (`""` for the root, `"semantics.dbt"`), parents first: the names it holds, and whether
    it is open (a pattern option reads its other entries, as `rules.<CODE>` does, and checks
    their names)."""
    if cls in _SCHEMAS:
        return _SCHEMAS[cls]
    schema = options_of(cls)
    names: dict[str, list[str]] = {}
    for declared in schema:
        parts = declared.table.split(".")
        for depth in range(len(parts)):
            held = names.setdefault(".".join(parts[:depth]), [])
            if parts[depth] not in held:
                held.append(parts[depth])
    read_whole = {declared.table for declared in schema if "<" in declared.key}
    tables = {dotted: (held, dotted in read_whole) for dotted, held in names.items()}
    _SCHEMAS[cls] = schema, tables
    return schema, tables


def _lookup(data: Mapping[str, Any], dotted: str) -> Any:
    value: Any = data
    for part in dotted.split(".") if dotted else ():
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _check_tables(data: Mapping[str, Any], tables: Tables) -> None:
    """Every table present is a table and holds only the names the schema gives it."""
    for dotted, (names, is_open) in tables.items():
        table = _lookup(data, dotted)
        if table is _MISSING:
            continue
        try:
            expect(table, dict)
        except Invalid as error:
            raise Invalid(error.problem, dotted) from None
        if not is_open:
            unknown_keys(table, names, f"{dotted}." if dotted else "")


def _read(declared: Option, data: Mapping[str, Any]) -> Any:
    """The value of one key as the configuration holds it, or _MISSING for its default."""
    value = _lookup(data, declared.table)
    if value is _MISSING:
        parent = _lookup(data, declared.table.rpartition(".")[0])
        if declared.required is not None and parent is not _MISSING and parent:
            raise Invalid(f"is required: {declared.required}", declared.key)
        return _MISSING
    try:
        return declared.check.read(value)
    except Invalid as error:
        raise Invalid(error.problem, declared.table + error.at) from None


def _build(cls: Any, values: Mapping[str, Any], prefix: str = "") -> Any:
    """A configuration dataclass of the values given (by dotted attribute), defaults else."""
    given: dict[str, Any] = {}
    for item in dataclasses.fields(cls):
        if is_section(item):
            given[item.name] = _build(item.default_factory, values, f"{prefix}{item.name}.")
        elif prefix + item.name in values:
            given[item.name] = values[prefix + item.name]
    return cls(**given)


def read_options(
    cls: type[C],
    data: Mapping[str, Any],
    label: str,
    relations: Iterable[Callable[[C], None]] = (),
    /,
    **given: Any,
) -> C:
    """The dataclass `cls` (whose fields are `config_options.option`s) from a parsed TOML
    table, each key read by its kind, then the `relations` between keys checked; `given`
    sets fields that are no keys. A problem is a ConfigError naming `label` and the key."""
    schema, tables = _schema(cls)
    try:
        _check_tables(data, tables)
        values = dict(given)
        for declared in schema:
            value = _read(declared, data)
            if value is not _MISSING:
                values[declared.attribute] = value
        config: C = _build(cls, values)
        for relation in relations:
            relation(config)
    except Invalid as error:
        raise ConfigError(f"{label}: '{error.at}': {error.problem}") from None
    return config


def config_from_mapping(data: Mapping[str, Any], source: str) -> Config:
    """Validate a parsed table (knowl.toml's root or pyproject's [tool.knowl])."""
    return read_options(Config, data, source, RELATIONS, source=source)


# --- what one key asks of others -------------------------------------------------------


def _out_dir_apart(config: Config) -> None:
    """knowl prunes inside out_dir: never the project root, the knowledge or semantics folder,
    a folder holding them, or a folder inside them; and git's own files are never beside
    knowl's (no `.git` folder on the way; the git directory and hooks folders git names are
    refused when a build or a site starts: `artifacts.folders.git_problem`)."""
    out_dir = config.out_dir
    out = PurePosixPath(out_dir).parts
    if not out:
        raise Invalid("must be a folder of its own, not the project root", "out_dir")
    if any(part.casefold() == ".git" for part in out):
        # A build folder in .git/refs/heads is a branch git cannot read: every git command fails.
        raise Invalid(
            f"must be a folder of its own, outside the git directory, got {out_dir!r}", "out_dir"
        )
    for name in (config.knowledge_dir, config.semantics_dir):
        other = PurePosixPath(name).parts
        if not other:
            continue  # the knowledge folder is the root: out_dir is no pages of it (discover)
        if out[: len(other)] == other or other[: len(out)] == out:
            raise Invalid(
                f"must be a folder of its own, apart from {name}/, got {out_dir!r}", "out_dir"
            )


def _dbt_apart(config: Config) -> None:
    """The dbt project is not under the Canonic files' folder."""
    folder, canonic = config.dbt_project_dir, config.semantics_dir
    if folder is not None and (folder == canonic or folder.startswith(canonic + "/")):
        raise Invalid(
            f"must not lie under {canonic}/, which holds Canonic files",
            "semantics.dbt.project_dir",
        )


def _users_dir_flat(config: Config) -> None:
    """User folders of their own exist only in the flat layout (the scoped one has user/)."""
    if config.users_dir is not None and config.knowledge_layout != FLAT:
        raise Invalid(
            'applies to layout = "flat" only (the scoped layout keeps users in user/)',
            "knowledge.users_dir",
        )
    if config.users_dir == ".":
        raise Invalid("must be a folder below knowledge_dir, not itself", "knowledge.users_dir")


# Checks that read several keys, after each key is read on its own.
RELATIONS: tuple[Callable[[Config], None], ...] = (_dbt_apart, _out_dir_apart, _users_dir_flat)


def _read_toml(path: Path, label: str) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{label}: cannot be read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{label}: invalid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{label}: not UTF-8 text") from exc


def load_config(root: Path, explicit: Path | None = None) -> Config:
    """Read `--config FILE`, else knowl.toml, else [tool.knowl] in pyproject.toml, else defaults."""
    config = _read_config(root, explicit)
    # Every message of this run hides the project's own secret patterns too (secrets.redact).
    patterns = config.security.extra_patterns
    if patterns or "knowl_build.secrets.scanner" in sys.modules:
        # A scanner not loaded yet has none: it loads here only to take some, or to drop
        # those an earlier configuration gave it (start-up time of a reader, which scans
        # nothing).
        from knowl_build.secrets.scanner import use_extra_patterns

        use_extra_patterns(patterns)
    return config


def _read_config(root: Path, explicit: Path | None) -> Config:
    if explicit is not None:
        label = str(explicit)
        data = _read_toml(explicit, label)
        if explicit.name == "pyproject.toml":
            data = data.get("tool", {}).get("knowl", {})
        return config_from_mapping(data, label)

    knowl_toml = root / "knowl.toml"
    pyproject = root / "pyproject.toml"
    pyproject_table: dict[str, Any] | None = None
    if pyproject.is_file():
        tool = _read_toml(pyproject, "pyproject.toml").get("tool", {})
        if isinstance(tool, dict) and "knowl" in tool:
            pyproject_table = tool["knowl"]
            if not isinstance(pyproject_table, dict):
                raise ConfigError("pyproject.toml: '[tool.knowl]' must be a table")
    if knowl_toml.is_file():
        if pyproject_table is not None:
            raise ConfigError(
                "knowl.toml and [tool.knowl] in pyproject.toml are both present; keep one"
            )
        return config_from_mapping(_read_toml(knowl_toml, "knowl.toml"), "knowl.toml")
    if pyproject_table is not None:
        return config_from_mapping(pyproject_table, "pyproject.toml [tool.knowl]")
    return Config()
