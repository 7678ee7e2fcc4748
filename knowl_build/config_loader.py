"""Reading the configuration: knowl.toml or pyproject.toml's [tool.knowl], every key checked\nagainst the schema in `config`, with a message that names the key and the file."""

from __future__ import annotations

import math
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from knowl_build.config import (
    AGENT_STATUSES,
    BOOST_FIELDS,
    CASE_ONLY_CHOICES,
    DEFAULTS,
    MAX_BOOST,
    MAX_CAVEATS,
    PER_PATH,
    RESOLUTIONS,
    RULE_CODE,
    SCHEMA,
    SHORTCODE_NAME,
    URL_BOUNDS,
    Config,
    SearchConfig,
    SecurityConfig,
)
from knowl_build.errors import ConfigError
from knowl_build.linkpaths import MAX_EXCLUDE_PATTERNS, exclude_problem
from knowl_build.vocabulary import SEVERITY_CHOICES


def _keys_under(prefix: str) -> list[str]:
    """The keys a table accepts: the next part of each SCHEMA key under `prefix` (`""`,
    `"search."`), in order of first appearance."""
    parts = (o.key[len(prefix) :].split(".", 1)[0] for o in SCHEMA if o.key.startswith(prefix))
    return list(dict.fromkeys(parts))


def _did_you_mean(name: str, choices: list[str]) -> str:
    # For a message only: not loaded by every run (start-up time).
    import difflib

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

    def positive_int(self, key: str, default: int, minimum: int, maximum: int | None = None) -> int:
        value: int = self.get(key, int, default)
        if value < minimum:
            raise self.error(key, f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(key, f"must be at most {maximum}, got {value}")
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
    a folder holding them, or a folder inside them; and git's own files are never beside
    knowl's (no `.git` folder on the way; the git directory and hooks folders git names are
    refused when a build or a site starts: `artifacts.folders.git_problem`)."""
    out = PurePosixPath(out_dir).parts
    if not out:
        raise top.error("out_dir", "must be a folder of its own, not the project root")
    if any(part.casefold() == ".git" for part in out):
        # A build folder in .git/refs/heads is a branch git cannot read: every git command fails.
        raise top.error(
            "out_dir", f"must be a folder of its own, outside the git directory, got {out_dir!r}"
        )
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
    boosts = dict(DEFAULTS.search.boosts)
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

    writes = _Reader(source, top.table_of("writes"), "writes.")
    agent_status = writes.get("agent_status", str, DEFAULTS.agent_status)
    if agent_status not in AGENT_STATUSES:
        raise writes.error(
            "agent_status", f"must be one of {', '.join(AGENT_STATUSES)}, got {agent_status!r}"
        )

    links = _Reader(source, top.table_of("links"), "links.")
    resolution = links.get("resolution", str, DEFAULTS.link_resolution)
    if resolution not in RESOLUTIONS:
        raise links.error(
            "resolution", f"must be one of {', '.join(RESOLUTIONS)}, got {resolution!r}"
        )
    case_only = links.get("case_only", str, DEFAULTS.case_only)
    if case_only not in CASE_ONLY_CHOICES:
        raise links.error(
            "case_only",
            f"must be one of {', '.join(CASE_ONLY_CHOICES)}, got {case_only!r}"
            + _did_you_mean(case_only, list(CASE_ONLY_CHOICES)),
        )
    code_shortcodes = links.string_list("code_shortcodes")
    for name in code_shortcodes:
        if not SHORTCODE_NAME.fullmatch(name):
            raise links.error(
                "code_shortcodes", f"{name!r} is not a shortcode name (letters, digits, _./-)"
            )
    urls = _url_settings(links)
    link_paths = _link_paths(links)
    frontmatter = _Reader(source, top.table_of("frontmatter"), "frontmatter.")
    allow = frontmatter.string_list("allow")
    if any(not key.strip() for key in allow):
        raise frontmatter.error("allow", "keys must not be empty strings")

    semantics = _Reader(source, top.table_of("semantics"), "semantics.")
    dbt_table = semantics.table_of("dbt")
    dbt = _Reader(source, dbt_table, "semantics.dbt.")
    dbt_project_dir = dbt_connection = None
    semantics_dir = top.relative_dir("semantics_dir", DEFAULTS.semantics_dir)
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
        dbt_connection = dbt.get("connection", str, DEFAULTS.dbt_connection)
        if dbt_connection is not None and not re.fullmatch(r"[A-Za-z0-9_-]+", dbt_connection):
            raise dbt.error("connection", "must match [A-Za-z0-9_-]+")
    site = _Reader(source, top.table_of("site"), "site.")
    site_title = site.get("title", str, DEFAULTS.site_title)
    site_base_url = site.get("base_url", str, DEFAULTS.site_base_url)
    if site_base_url is not None:
        site_base_url = _base_url(site, site_base_url)
    site_templates = None
    if "templates" in site.table:
        site_templates = site.relative_dir("templates", ".")
    index = _Reader(source, top.table_of("index"), "index.")
    index_memory_mb = index.positive_int("memory_mb", DEFAULTS.index_memory_mb, 16, 1 << 16)
    evals = _eval_settings(_Reader(source, top.table_of("eval"), "eval."))
    repo_name = top.get("repo_name", str, DEFAULTS.repo_name)
    knowledge_dir = top.relative_dir("knowledge_dir", DEFAULTS.knowledge_dir)
    out_dir = top.relative_dir("out_dir", DEFAULTS.out_dir)
    _check_out_dir(top, out_dir, knowledge_dir, semantics_dir)
    defaults = DEFAULTS.security
    return Config(
        dbt_project_dir=dbt_project_dir,
        dbt_connection=dbt_connection,
        knowledge_dir=knowledge_dir,
        semantics_dir=semantics_dir,
        out_dir=out_dir,
        staleness_days=top.positive_int("staleness_days", DEFAULTS.staleness_days, 0),
        keep_builds=top.positive_int("keep_builds", DEFAULTS.keep_builds, 1),
        repo_name=repo_name,
        rules=rules,
        per_path=tuple(per_path),
        search=SearchConfig(
            boosts=boosts,
            max_caveats=search.positive_int(
                "max_caveats", DEFAULTS.search.max_caveats, 0, MAX_CAVEATS
            ),
        ),
        security=SecurityConfig(
            reject_secrets=security.get("reject_secrets", bool, defaults.reject_secrets),
            max_field_chars=security.positive_int("max_field_chars", defaults.max_field_chars, 1),
            max_body_chars=security.positive_int("max_body_chars", defaults.max_body_chars, 1),
            extra_patterns=patterns,
        ),
        peer_paths=peers.string_list("paths"),
        agent_status=agent_status,
        link_resolution=resolution,
        **link_paths,
        case_only=case_only,
        code_shortcodes=code_shortcodes,
        **urls,
        frontmatter_allow=allow,
        site_title=site_title,
        site_base_url=site_base_url,
        site_templates=site_templates,
        index_memory_mb=index_memory_mb,
        **evals,
        source=source,
    )


def _link_paths(links: _Reader) -> dict[str, Any]:
    """[links] site_root and exclude (Markdown links): a folder inside the project, and
    patterns that compile and cannot take exponential time (`linkpaths.exclude_problem`)."""
    site_root = None
    if "site_root" in links.table:
        site_root = links.relative_dir("site_root", ".")
        site_root = "" if site_root == "." else site_root
    exclude = links.string_list("exclude")
    if len(exclude) > MAX_EXCLUDE_PATTERNS:
        raise links.error("exclude", f"holds more than {MAX_EXCLUDE_PATTERNS} patterns")
    for pattern in exclude:
        problem = exclude_problem(pattern)
        if problem is not None:
            raise links.error("exclude", f"pattern {pattern[:80]!r} {problem}")
    return {"site_root": site_root, "link_exclude": exclude}


def _url_settings(links: _Reader) -> dict[str, Any]:
    """[links] check_urls and the url_* keys, each number inside its bounds (URL_BOUNDS)."""
    settings: dict[str, Any] = {
        "check_urls": links.get("check_urls", bool, DEFAULTS.check_urls),
        "url_allow_private": links.get("url_allow_private", bool, DEFAULTS.url_allow_private),
    }
    for key, (low, high) in URL_BOUNDS.items():
        default = getattr(DEFAULTS, key)
        if isinstance(default, int):
            settings[key] = links.positive_int(key, default, int(low), int(high))
            continue
        value = links.get(key, (int, float), default)
        if not (math.isfinite(value) and low <= value <= high):
            raise links.error(key, f"must be a number from {low:g} to {high:g}, got {value}")
        settings[key] = float(value)
    return settings


def _eval_settings(table: _Reader) -> dict[str, Any]:
    """[eval] file (a file inside the project) and min_mrr (from 0 to 1)."""
    value: str = table.get("file", str, DEFAULTS.eval_file)
    pure = PurePosixPath(value.replace("\\", "/"))
    # A pull request can change knowl.toml too: the file stays inside the project.
    if not value.strip() or pure.is_absolute() or ".." in pure.parts or pure.as_posix() == ".":
        raise table.error("file", f"must be a file inside the project, got {value!r}")
    eval_file = pure.as_posix()
    min_mrr = table.get("min_mrr", (int, float), DEFAULTS.eval_min_mrr)
    if not (math.isfinite(min_mrr) and 0 <= min_mrr <= 1):
        raise table.error("min_mrr", f"must be a number from 0 to 1, got {min_mrr}")
    return {"eval_file": eval_file, "eval_min_mrr": float(min_mrr)}


def _base_url(site: _Reader, url: str) -> str:
    """An absolute http(s) address with a host, ending in `/` (pages are named under it)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in url):
        raise site.error("base_url", f"must be an http:// or https:// address, got {url!r}")
    if parts.query or parts.fragment:
        raise site.error("base_url", f"must not have a query or a fragment, got {url!r}")
    return url if url.endswith("/") else url + "/"


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
