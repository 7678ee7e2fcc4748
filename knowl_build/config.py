"""Configuration: the frozen Config, its documented SCHEMA, loading from knowl.toml or
pyproject.toml, validation."""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import math
import operator
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

from knowl_build.diagnostics import SEVERITY_CHOICES
from knowl_build.errors import ConfigError
from knowl_build.secrets.scanner import use_extra_patterns

DEFAULT_BOOSTS = MappingProxyType({"summary": 3.0, "tags": 2.0, "title": 2.0, "body": 1.0})
BOOST_FIELDS = tuple(DEFAULT_BOOSTS)
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
    boosts: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_BOOSTS))
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


# --- the schema: every key, documented ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Option:
    """One key of the configuration as docs/configuration.md shows it: the dotted key
    (`<CODE>` and `<glob>` stand for any), a short type, the default (None for none) and
    the user documentation, Markdown whose links are relative to that page."""

    key: str
    kind: str
    default: object
    doc: str


_DEFAULTS = Config()
_SEVERITY = f"severity ({'|'.join(SEVERITY_CHOICES)})"


def _default(attribute: str) -> object:
    """The default of a Config attribute (`search.boosts`): each default is written once, in
    the dataclasses above."""
    value = operator.attrgetter(attribute)(_DEFAULTS)
    return MappingProxyType(dict(value)) if isinstance(value, Mapping) else value


# In documentation order; the keys the validator accepts are these and no others.
SCHEMA: tuple[Option, ...] = (
    Option(
        "knowledge_dir",
        "folder (string)",
        _default("knowledge_dir"),
        "The folder of the pages, relative to the project root: global pages under "
        "`<knowledge_dir>/global/`, each user's under `<knowledge_dir>/user/<owner>/` "
        "([Pages and frontmatter](concepts/pages.md)).",
    ),
    Option(
        "semantics_dir",
        "folder (string)",
        _default("semantics_dir"),
        "The folder of the Canonic semantic layer, relative to the project root: one YAML file "
        "per source under `<semantics_dir>/<connection>/` "
        "([The semantic layer](concepts/semantic-layer.md)).",
    ),
    Option(
        "out_dir",
        "folder (string)",
        _default("out_dir"),
        "Where `knowl build` publishes, relative to the project root: one folder per build and "
        "a `CURRENT` file naming the published one ([Build artifacts](artifacts.md)). knowl "
        "prunes inside it, so it must be a folder of its own, apart from the knowledge and "
        "semantics folders; `knowl build --out` overrides it.",
    ),
    Option(
        "staleness_days",
        "integer >= 0",
        _default("staleness_days"),
        "A page whose `meta.last_validated_at` is missing or more than this many days old is "
        "stale ([KB202](rules.md#kb202)).",
    ),
    Option(
        "keep_builds",
        "integer >= 1",
        _default("keep_builds"),
        "How many build folders stay in `out_dir`, the current one included: after each build "
        "the oldest others are pruned, never the current one nor one a reader still has open.",
    ),
    Option(
        "repo_name",
        "string",
        _default("repo_name"),
        "The name of this repository in its artifact and on its hits in federated search. "
        "Unset, it is the last segment of `remote.origin.url` without `.git`, else the name of "
        "the project folder.",
    ),
    Option(
        "rules.<CODE>",
        _SEVERITY,
        None,
        'The severity of one rule everywhere, such as `KB202 = "off"`; `off` turns it off. '
        "Unset, a rule has its default severity ([Rules](rules.md)); a code that names no rule "
        "is an error.",
    ),
    Option(
        f"rules.{PER_PATH}.<glob>.<CODE>",
        _SEVERITY,
        None,
        "The severity of a rule for findings in files whose project-relative path matches the "
        "glob (`*` and `?` within a folder, `**` across folders), over `[rules]`; where several "
        "globs match, the later one wins, and `off` also drops the freshness reason "
        "([suppressions](ci.md#suppressions)).",
    ),
    Option(
        "search.boosts",
        "table of numbers",
        _default("search.boosts"),
        f"How much a match counts in each field of a page: `{'`, `'.join(BOOST_FIELDS)}`, each "
        f"greater than 0 and at most {MAX_BOOST:g}. Fields left out keep their defaults; the "
        "boosts are recorded in the artifact, so every reader ranks the same way.",
    ),
    Option(
        "search.max_caveats",
        "integer >= 0",
        _default("search.max_caveats"),
        "At most this many caveats ride along with a search's hits: visible active `caveat` "
        "pages that share an entity with a hit, most shared entities first "
        "([Reading and search](reading.md#search)).",
    ),
    Option(
        "security.reject_secrets",
        "boolean",
        _default("security.reject_secrets"),
        "Report secrets ([KB401](rules.md#kb401)) and sensitive paths "
        "([KB402](rules.md#kb402)). `false` turns both checks off; the size limits "
        "([KB403](rules.md#kb403)) stay.",
    ),
    Option(
        "security.max_field_chars",
        "integer >= 1",
        _default("security.max_field_chars"),
        "The longest frontmatter string, in characters, each list item counted alone; a longer "
        "one is [KB403](rules.md#kb403).",
    ),
    Option(
        "security.max_body_chars",
        "integer >= 1",
        _default("security.max_body_chars"),
        "The longest page body, in characters; a longer one is [KB403](rules.md#kb403).",
    ),
    Option(
        "security.extra_patterns",
        "list of strings",
        _default("security.extra_patterns"),
        "More case-insensitive substrings that count as secrets ([KB401](rules.md#kb401)), "
        "such as an internal host name; every message of the run hides them too. An empty "
        "string is an error.",
    ),
    Option(
        "peers.paths",
        "list of strings",
        _default("peer_paths"),
        "Other repositories' artifacts that searches of this project's build include: each an "
        "artifact folder or a project root (its current build), relative to the project root. "
        "`--peer` replaces them ([Federation](reading.md#federation)).",
    ),
    Option(
        "semantics.dbt.project_dir",
        "folder (string)",
        _default("dbt_project_dir"),
        "The folder holding `dbt_project.yml`, relative to the project root (`.` for the root): "
        "its semantic models and metrics join the Canonic entities "
        "([dbt](concepts/semantic-layer.md#dbt)). A `[semantics.dbt]` table that sets anything "
        "must set it, and not under `semantics_dir`.",
    ),
    Option(
        "semantics.dbt.connection",
        "string",
        _default("dbt_connection"),
        "The first segment of the dbt entities' names (`<connection>.<semantic_model>`): "
        "letters, digits, `_` and `-`. Unset, it is the `name` in `dbt_project.yml`, which "
        "then must have one.",
    ),
)


def _keys_under(prefix: str) -> list[str]:
    """The keys a table accepts: the next part of each SCHEMA key under `prefix` (`""`,
    `"search."`), in order of first appearance."""
    parts = (o.key[len(prefix) :].split(".", 1)[0] for o in SCHEMA if o.key.startswith(prefix))
    return list(dict.fromkeys(parts))


# --- validation --------------------------------------------------------------------------


def _did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class _Reader:
    """Validates one table, naming the file and the dotted key on every error. The keys it
    accepts are SCHEMA's under `prefix` unless `known` says otherwise."""

    def __init__(
        self,
        source: str,
        table: Mapping[str, Any],
        prefix: str,
        known: Sequence[str] | None = None,
    ):
        self.source = source
        self.table = table
        self.prefix = prefix
        known = list(_keys_under(prefix) if known is None else known)
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
    top = _Reader(source, data, "")

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

    search = _Reader(source, top.table_of("search"), "search.")
    boosts_table = search.table_of("boosts")
    boosts_reader = _Reader(source, boosts_table, "search.boosts.", BOOST_FIELDS)
    boosts = dict(_DEFAULTS.search.boosts)
    for name in boosts_table:
        value = boosts_reader.get(name, (int, float), 1.0)
        if not (math.isfinite(value) and 0 < value <= MAX_BOOST):
            raise boosts_reader.error(
                name, f"must be a number greater than 0, at most {MAX_BOOST:g}, got {value}"
            )
        boosts[name] = float(value)

    security = _Reader(source, top.table_of("security"), "security.")
    patterns = security.string_list("extra_patterns")
    if any(not p for p in patterns):
        raise security.error("extra_patterns", "patterns must not be empty strings")

    peers = _Reader(source, top.table_of("peers"), "peers.")

    semantics = _Reader(source, top.table_of("semantics"), "semantics.")
    dbt_table = semantics.table_of("dbt")
    dbt = _Reader(source, dbt_table, "semantics.dbt.")
    dbt_project_dir = dbt_connection = None
    semantics_dir = top.relative_dir("semantics_dir", _DEFAULTS.semantics_dir)
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
        dbt_connection = dbt.get("connection", str, _DEFAULTS.dbt_connection)
        if dbt_connection is not None and not re.fullmatch(r"[A-Za-z0-9_-]+", dbt_connection):
            raise dbt.error("connection", "must match [A-Za-z0-9_-]+")
    repo_name = top.get("repo_name", str, _DEFAULTS.repo_name)
    knowledge_dir = top.relative_dir("knowledge_dir", _DEFAULTS.knowledge_dir)
    out_dir = top.relative_dir("out_dir", _DEFAULTS.out_dir)
    _check_out_dir(top, out_dir, knowledge_dir, semantics_dir)
    defaults = _DEFAULTS.security
    return Config(
        dbt_project_dir=dbt_project_dir,
        dbt_connection=dbt_connection,
        knowledge_dir=knowledge_dir,
        semantics_dir=semantics_dir,
        out_dir=out_dir,
        staleness_days=top.positive_int("staleness_days", _DEFAULTS.staleness_days, 0),
        keep_builds=top.positive_int("keep_builds", _DEFAULTS.keep_builds, 1),
        repo_name=repo_name,
        rules=rules,
        per_path=tuple(per_path),
        search=SearchConfig(
            boosts=boosts,
            max_caveats=search.positive_int("max_caveats", _DEFAULTS.search.max_caveats, 0),
        ),
        security=SecurityConfig(
            reject_secrets=security.get("reject_secrets", bool, defaults.reject_secrets),
            max_field_chars=security.positive_int("max_field_chars", defaults.max_field_chars, 1),
            max_body_chars=security.positive_int("max_body_chars", defaults.max_body_chars, 1),
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
