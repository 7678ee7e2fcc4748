"""Configuration: the frozen Config, loading from knowl.toml or pyproject.toml, validation."""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from knowl_build.diagnostics import SEVERITY_CHOICES
from knowl_build.errors import ConfigError
from knowl_build.secrets import use_extra_patterns

BOOST_FIELDS = ("summary", "tags", "title", "body")
PER_PATH = "per-path"
RULE_CODE = re.compile(r"KB[0-9]{3}")  # the shape of a code; the rules know which exist
# Search boosts: a bound that keeps every score finite (also checked when an artifact is read).
MAX_BOOST = 1000.0


@functools.lru_cache(maxsize=256)
def glob_regex(glob: str) -> re.Pattern[str]:
    """A path glob as a regular expression over project-relative paths: `*` and `?` stay in
    one folder, `**` spans folders (`knowledge/**/drafts/*.md`), `[abc]` is a class."""
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and "]" in glob[i + 2 :]:
            end = glob.index("]", i + 2)
            body = glob[i + 1 : end]
            negate = body.startswith("!")
            body = re.escape(body[1:] if negate else body).replace("\\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out))


@dataclass(frozen=True, slots=True)
class SearchConfig:
    boosts: Mapping[str, float] = field(
        default_factory=lambda: {"summary": 3.0, "tags": 2.0, "title": 2.0, "body": 1.0}
    )
    max_caveats: int = 3


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    reject_secrets: bool = True
    max_field_chars: int = 20000
    max_body_chars: int = 200000
    extra_patterns: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Config:
    """The effective configuration of one project. `source` names the file it came from."""

    knowledge_dir: str = "knowledge"
    semantics_dir: str = "semantics"
    out_dir: str = ".knowl/build"
    staleness_days: int = 90
    keep_builds: int = 3
    repo_name: str | None = None
    rules: Mapping[str, str] = field(default_factory=dict)
    # [rules.per-path]: (glob, {code: severity}) in the order written; a later glob wins.
    per_path: tuple[tuple[str, Mapping[str, str]], ...] = ()
    search: SearchConfig = field(default_factory=SearchConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)
    peer_paths: tuple[str, ...] = ()
    dbt_project_dir: str | None = None  # [semantics.dbt] project_dir
    dbt_connection: str | None = None  # [semantics.dbt] connection
    source: str | None = None

    def configured(self, code: str, path: str | None = None) -> str | None:
        """The severity configured for `code` ([rules], then the [rules.per-path] globs that
        match `path`), or None when the configuration leaves it at the rule's default (the
        rule registry knows the defaults: `rules.registry.severity`)."""
        severity = self.rules.get(code)
        if path is not None:
            for glob, table in self.per_path:
                if code in table and glob_regex(glob).fullmatch(path):
                    severity = table[code]
        return severity

    def to_json(self) -> dict[str, Any]:
        return {
            "knowledge_dir": self.knowledge_dir,
            "semantics_dir": self.semantics_dir,
            "out_dir": self.out_dir,
            "staleness_days": self.staleness_days,
            "keep_builds": self.keep_builds,
            "repo_name": self.repo_name,
            "rules": dict(sorted(self.rules.items())),
            "rules_per_path": [[glob, dict(sorted(t.items()))] for glob, t in self.per_path],
            "search": {
                "boosts": dict(sorted(self.search.boosts.items())),
                "max_caveats": self.search.max_caveats,
            },
            "security": {
                "reject_secrets": self.security.reject_secrets,
                "max_field_chars": self.security.max_field_chars,
                "max_body_chars": self.security.max_body_chars,
                "extra_patterns": list(self.security.extra_patterns),
            },
            "peers": {"paths": list(self.peer_paths)},
            "semantics": {
                "dbt": {"project_dir": self.dbt_project_dir, "connection": self.dbt_connection}
            },
        }

    @property
    def sha256(self) -> str:
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


# --- validation --------------------------------------------------------------------------


def _did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class _Reader:
    """Validates one table, naming the file and the dotted key on every error."""

    def __init__(self, source: str, table: Mapping[str, Any], prefix: str, known: list[str]):
        self.source = source
        self.table = table
        self.prefix = prefix
        for key in table:
            if key not in known:
                raise self.error(key, f"unknown key{_did_you_mean(key, known)}")

    def error(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: '{self.prefix}{key}': {problem}")

    def get(self, key: str, kind: type | tuple[type, ...], default: Any) -> Any:
        if key not in self.table:
            return default
        value = self.table[key]
        # bool is an int in Python; a config value `true` is never a number here.
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.error(key, f"expected {_kind_name(kind)}, got a boolean")
        if not isinstance(value, kind):
            raise self.error(key, f"expected {_kind_name(kind)}, got {type(value).__name__}")
        return value

    def table_of(self, key: str) -> Mapping[str, Any]:
        value = self.get(key, dict, {})
        return value  # type: ignore[no-any-return]

    def positive_int(self, key: str, default: int, minimum: int) -> int:
        value: int = self.get(key, int, default)
        if value < minimum:
            raise self.error(key, f"must be at least {minimum}, got {value}")
        return value

    def relative_dir(self, key: str, default: str) -> str:
        value: str = self.get(key, str, default)
        pure = PurePosixPath(value.replace("\\", "/"))
        if not value.strip() or pure.is_absolute() or ".." in pure.parts:
            raise self.error(key, f"must be a folder inside the project, got {value!r}")
        return pure.as_posix()

    def string_list(self, key: str) -> tuple[str, ...]:
        value = self.get(key, list, [])
        for item in value:
            if not isinstance(item, str):
                raise self.error(key, "expected a list of strings")
        return tuple(value)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
    }
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


TOP_KEYS = [
    "knowledge_dir",
    "semantics_dir",
    "out_dir",
    "staleness_days",
    "keep_builds",
    "repo_name",
    "rules",
    "search",
    "security",
    "peers",
    "semantics",
]


def _check_out_dir(top: _Reader, out_dir: str, *guarded: str) -> None:
    """knowl prunes inside out_dir: never the project root, the knowledge or semantics folder,
    a folder holding them, or a folder inside them."""
    out = PurePosixPath(out_dir).parts
    if not out:
        raise top.error("out_dir", "must be a folder of its own, not the project root")
    for name in guarded:
        other = PurePosixPath(name).parts
        if out[: len(other)] == other or other[: len(out)] == out:
            raise top.error(
                "out_dir", f"must be a folder of its own, apart from {name}/, got {out_dir!r}"
            )


def _severities(top: _Reader, prefix: str, table: Mapping[str, Any]) -> dict[str, str]:
    """A table of rule codes to severities, each severity checked (the codes are checked
    against the rule registry when the configuration is loaded for a run:
    `rules.registry.check_config`)."""
    severities: dict[str, str] = {}
    for code, severity in table.items():
        if not RULE_CODE.fullmatch(code):
            raise top.error(
                f"{prefix}{code}", f"unknown rule code{_did_you_mean(code, [PER_PATH])}"
            )
        if not isinstance(severity, str) or severity not in SEVERITY_CHOICES:
            raise top.error(
                f"{prefix}{code}",
                f"severity must be one of {', '.join(SEVERITY_CHOICES)}, got {severity!r}"
                + (
                    _did_you_mean(severity, list(SEVERITY_CHOICES))
                    if isinstance(severity, str)
                    else ""
                ),
            )
        severities[code] = severity
    return severities


def config_from_mapping(data: Mapping[str, Any], source: str) -> Config:
    """Validate a parsed table (knowl.toml's root or pyproject's [tool.knowl])."""
    top = _Reader(source, data, "", TOP_KEYS)

    rules_table = dict(top.table_of("rules"))
    per_path_table = rules_table.pop(PER_PATH, {})
    rules = _severities(top, "rules.", rules_table)
    if not isinstance(per_path_table, dict):
        raise top.error(f"rules.{PER_PATH}", "expected a table of globs")
    per_path: list[tuple[str, Mapping[str, str]]] = []
    for glob, table in per_path_table.items():
        where = f"rules.{PER_PATH}.{glob}"
        if not glob.strip():
            raise top.error(where, "a glob must not be empty")
        if not isinstance(table, dict):
            raise top.error(where, 'expected a table of rule codes, e.g. { KB202 = "off" }')
        per_path.append((glob, _severities(top, f"{where}.", table)))

    search = _Reader(source, top.table_of("search"), "search.", ["boosts", "max_caveats"])
    boosts_table = search.table_of("boosts")
    boosts_reader = _Reader(source, boosts_table, "search.boosts.", list(BOOST_FIELDS))
    boosts = dict(SearchConfig().boosts)
    for name in boosts_table:
        value = boosts_reader.get(name, (int, float), 1.0)
        if not (math.isfinite(value) and 0 < value <= MAX_BOOST):
            raise boosts_reader.error(
                name, f"must be a number greater than 0, at most {MAX_BOOST:g}, got {value}"
            )
        boosts[name] = float(value)

    security = _Reader(
        source,
        top.table_of("security"),
        "security.",
        ["reject_secrets", "max_field_chars", "max_body_chars", "extra_patterns"],
    )
    patterns = security.string_list("extra_patterns")
    if any(not p for p in patterns):
        raise security.error("extra_patterns", "patterns must not be empty strings")

    peers = _Reader(source, top.table_of("peers"), "peers.", ["paths"])

    semantics = _Reader(source, top.table_of("semantics"), "semantics.", ["dbt"])
    dbt_table = semantics.table_of("dbt")
    dbt = _Reader(source, dbt_table, "semantics.dbt.", ["project_dir", "connection"])
    dbt_project_dir = dbt_connection = None
    semantics_dir = top.relative_dir("semantics_dir", "semantics")
    if dbt_table:
        if "project_dir" not in dbt_table:
            raise dbt.error("project_dir", "is required: the folder that holds dbt_project.yml")
        dbt_project_dir = dbt.relative_dir("project_dir", ".")
        if dbt_project_dir == ".":
            dbt_project_dir = ""
        if dbt_project_dir == semantics_dir or dbt_project_dir.startswith(semantics_dir + "/"):
            raise dbt.error(
                "project_dir", f"must not lie under {semantics_dir}/, which holds Canonic files"
            )
        dbt_connection = dbt.get("connection", str, None)
        if dbt_connection is not None and not re.fullmatch(r"[A-Za-z0-9_-]+", dbt_connection):
            raise dbt.error("connection", "must match [A-Za-z0-9_-]+")
    repo_name = top.get("repo_name", str, None)
    knowledge_dir = top.relative_dir("knowledge_dir", "knowledge")
    out_dir = top.relative_dir("out_dir", ".knowl/build")
    _check_out_dir(top, out_dir, knowledge_dir, semantics_dir)
    return Config(
        dbt_project_dir=dbt_project_dir,
        dbt_connection=dbt_connection,
        knowledge_dir=knowledge_dir,
        semantics_dir=semantics_dir,
        out_dir=out_dir,
        staleness_days=top.positive_int("staleness_days", 90, 0),
        keep_builds=top.positive_int("keep_builds", 3, 1),
        repo_name=repo_name,
        rules=rules,
        per_path=tuple(per_path),
        search=SearchConfig(boosts=boosts, max_caveats=search.positive_int("max_caveats", 3, 0)),
        security=SecurityConfig(
            reject_secrets=security.get("reject_secrets", bool, True),
            max_field_chars=security.positive_int("max_field_chars", 20000, 1),
            max_body_chars=security.positive_int("max_body_chars", 200000, 1),
            extra_patterns=patterns,
        ),
        peer_paths=peers.string_list("paths"),
        source=source,
    )


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
    use_extra_patterns(config.security.extra_patterns)
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
