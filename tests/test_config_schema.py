"""knowl_build.core.config.SCHEMA is the configuration (the declarations that are Config's fields):
every key the loader accepts is documented there, with the default the loader really uses, and
no key is documented that it refuses."""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config import SCHEMA, Config, SearchConfig, SecurityConfig
from knowl_build.core.config_loader import config_from_mapping
from knowl_build.core.config_options import Option
from knowl_build.core.errors import ConfigError

DOCS = Path(__file__).resolve().parents[1] / "docs"
SOURCE = "knowl.toml"
KEYS = [option.key for option in SCHEMA]
PLAIN = [key for key in KEYS if "<" not in key]  # not a pattern such as rules.<CODE>
PLACEHOLDERS = {"<CODE>": "KB202", "<glob>": "knowledge/global/archive/**"}
DBT = {"semantics": {"dbt": {"project_dir": "analytics_dbt"}}}  # needed by any other dbt key

# Each key: the Config attribute it sets, a value other than the default, and what the
# attribute then holds.
CASES: dict[str, tuple[str, object, object]] = {
    "knowledge_dir": ("knowledge_dir", "notes", "notes"),
    "semantics_dir": ("semantics_dir", "sl", "sl"),
    "out_dir": ("out_dir", "build/kb", "build/kb"),
    "staleness_days": ("staleness_days", 30, 30),
    "keep_builds": ("keep_builds", 5, 5),
    "repo_name": ("repo_name", "acme", "acme"),
    "knowledge.layout": ("knowledge_layout", "flat", "flat"),
    "knowledge.users_dir": ("users_dir", "people", "people"),
    "knowledge.exclude": ("knowledge_exclude", ["templates"], ("templates",)),
    "rules.<CODE>": ("rules", "off", {"KB202": "off"}),
    "rules.per-path.<glob>.<CODE>": (
        "per_path",
        "info",
        (("knowledge/global/archive/**", {"KB202": "info"}),),
    ),
    "search.boosts": (
        "search.boosts",
        {"title": 5},
        {"summary": 3.0, "tags": 2.0, "title": 5.0, "body": 1.0, "headings": 0.5},
    ),
    "search.max_caveats": ("search.max_caveats", 0, 0),
    "security.reject_secrets": ("security.reject_secrets", False, False),
    "security.max_field_chars": ("security.max_field_chars", 100, 100),
    "security.max_body_chars": ("security.max_body_chars", 1000, 1000),
    "security.extra_patterns": ("security.extra_patterns", ["acme-int"], ("acme-int",)),
    "peers.paths": ("peer_paths", ["../other"], ("../other",)),
    "writes.agent_status": ("agent_status", "draft", "draft"),
    "links.resolution": ("link_resolution", "obsidian", "obsidian"),
    "links.site_root": ("site_root", "content", "content"),
    "links.exclude": ("link_exclude", ["^/api/"], ("^/api/",)),
    "links.case_only": ("case_only", "warning", "warning"),
    "links.code_shortcodes": ("code_shortcodes", ["tabs"], ("tabs",)),
    "links.check_urls": ("check_urls", True, True),
    "links.url_timeout": ("url_timeout", 3, 3.0),
    "links.url_concurrency": ("url_concurrency", 2, 2),
    "links.url_per_host": ("url_per_host", 0.5, 0.5),
    "links.url_retries": ("url_retries", 0, 0),
    "links.url_cache_hours": ("url_cache_hours", 0, 0.0),
    "links.url_allow_private": ("url_allow_private", True, True),
    "links.url_max": ("url_max", 50, 50),
    "links.url_max_per_host": ("url_max_per_host", 5, 5),
    "frontmatter.allow": ("frontmatter_allow", ["cssclasses"], ("cssclasses",)),
    "semantics.dbt.project_dir": ("dbt_project_dir", "analytics_dbt", "analytics_dbt"),
    "semantics.dbt.connection": ("dbt_connection", "shop_dbt", "shop_dbt"),
    "site.title": ("site_title", "Acme knowledge", "Acme knowledge"),
    "site.base_url": ("site_base_url", "https://acme.example/kb", "https://acme.example/kb/"),
    "site.templates": ("site_templates", "site-templates", "site-templates"),
    "index.memory_mb": ("index_memory_mb", 64, 64),
    "eval.file": ("eval_file", "tests/retrieval.yaml", "tests/retrieval.yaml"),
    "eval.min_mrr": ("eval_min_mrr", 0.5, 0.5),
}


def key_of(option: Option) -> str:
    return option.key


def table_for(key: str, value: object) -> dict[str, Any]:
    """The TOML table that sets one dotted key (placeholders filled in) to `value`."""
    table: Any = toml(value)
    for part in reversed(key.split(".")):
        table = {PLACEHOLDERS.get(part, part): table}
    if key.startswith("semantics.dbt.") and key != "semantics.dbt.project_dir":
        table["semantics"]["dbt"] = {**DBT["semantics"]["dbt"], **table["semantics"]["dbt"]}
    return table  # type: ignore[no-any-return]


def toml(value: object) -> object:
    """A default as tomllib would read it: tables are dicts, arrays are lists."""
    if isinstance(value, Mapping):
        return {k: toml(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [toml(v) for v in value]
    return value


def load(table: Mapping[str, Any]) -> Config:
    return config_from_mapping(table, SOURCE)


def refusal(table: Mapping[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        load(table)
    return str(info.value)


def test_keys_are_unique_and_each_table_is_together() -> None:
    assert len(KEYS) == len(set(KEYS))
    tables = [key.split(".", 1)[0] if "." in key else "" for key in KEYS]
    order = list(dict.fromkeys(tables))
    assert tables == sorted(tables, key=order.index), "a table's keys are split apart"
    assert order == [
        "",
        "knowledge",
        "rules",
        "search",
        "security",
        "peers",
        "writes",
        "links",
        "frontmatter",
        "semantics",
        "site",
        "index",
        "eval",
    ]


def test_every_key_has_a_kind_and_a_doc() -> None:
    for option in SCHEMA:
        assert option.kind.strip() and option.kind == option.kind.strip(), option.key
        assert option.doc.strip() and option.doc == option.doc.strip(), option.key
        assert option.doc.endswith("."), f"{option.key}: the doc is not a sentence"
        # [text](page.md#anchor) links resolve from docs/configuration.md.
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", option.doc):
            assert (DOCS / target).is_file(), f"{option.key}: no docs/{target}"


def test_defaults_are_plain_toml_values() -> None:
    def plain(value: object) -> bool:
        if value is None or isinstance(value, bool | int | float | str):
            return True
        if isinstance(value, Mapping):
            return all(isinstance(k, str) and plain(v) for k, v in value.items())
        return isinstance(value, list | tuple) and all(plain(v) for v in value)

    for option in SCHEMA:
        assert plain(option.default), f"{option.key}: default {option.default!r}"


def test_every_key_has_a_case_and_every_setting_a_key() -> None:
    assert list(CASES) == KEYS
    attributes = {attribute for attribute, _, _ in CASES.values()}
    assert {a for a in attributes if "." not in a} | {"search", "security"} == {
        f.name for f in dataclasses.fields(Config) if f.name != "source"
    }
    assert {a for a in attributes if a.startswith("search.")} == {
        f"search.{f.name}" for f in dataclasses.fields(SearchConfig)
    }
    assert {a for a in attributes if a.startswith("security.")} == {
        f"security.{f.name}" for f in dataclasses.fields(SecurityConfig)
    }


@pytest.mark.parametrize("option", SCHEMA, ids=key_of)
def test_each_default_is_the_configs_own(option: Option) -> None:
    attribute, _, _ = CASES[option.key]
    default = operator.attrgetter(attribute)(Config())
    if "<" in option.key:
        # A pattern sets one entry of a table that is empty by default: no entry, no default.
        assert option.default is None
        assert not default
    else:
        assert option.default == default
        assert type(option.default) is type(default) or isinstance(option.default, Mapping)


def test_no_key_gives_the_default_config() -> None:
    assert load({}) == Config(source=SOURCE)


# None has no TOML spelling: such a key is left out to get its default (the test above).
@pytest.mark.parametrize("option", [o for o in SCHEMA if o.default is not None], ids=key_of)
def test_each_key_given_its_default_gives_the_default_config(option: Option) -> None:
    assert load(table_for(option.key, option.default)) == Config(source=SOURCE)


# Keys that are read only beside another (config_loader.RELATIONS): what the other is set to.
BESIDE: dict[str, tuple[str, object]] = {"knowledge.users_dir": ("layout", "flat")}


@pytest.mark.parametrize("key", KEYS)
def test_each_key_is_read_into_its_setting(key: str) -> None:
    attribute, value, expected = CASES[key]
    assert expected != operator.attrgetter(attribute)(Config())
    table = table_for(key, value)
    if key in BESIDE:
        other, setting = BESIDE[key]
        table[key.split(".")[0]][other] = setting
    assert operator.attrgetter(attribute)(load(table)) == expected


@pytest.mark.parametrize("key", PLAIN)
def test_a_misspelt_key_is_refused_with_the_right_one(key: str) -> None:
    *tables, name = key.split(".")
    where = ".".join([*tables, name + "x"])
    _, value, _ = CASES[key]
    assert refusal(table_for(where, value)) == (
        f"{SOURCE}: '{where}': unknown key (did you mean '{name}'?)"
    )


@pytest.mark.parametrize(
    "table", ["", "search.", "security.", "peers.", "semantics.", "semantics.dbt.", "site."]
)
def test_a_table_refuses_a_key_the_schema_lacks(table: str) -> None:
    assert refusal(table_for(f"{table}colour", "blue")) == (
        f"{SOURCE}: '{table}colour': unknown key"
    )


def test_the_rules_table_takes_codes_and_per_path_only() -> None:
    assert refusal({"rules": {"per-pathx": {}}}) == (
        f"{SOURCE}: 'rules.per-pathx': unknown rule code (did you mean 'per-path'?)"
    )
    assert refusal({"rules": {"per-path": {"*.md": {"colour": "off"}}}}) == (
        f"{SOURCE}: 'rules.per-path.*.md.colour': unknown rule code"
    )


@pytest.mark.parametrize("option", [o for o in SCHEMA if o.kind.startswith("integer")], ids=key_of)
def test_integer_bounds_are_those_the_kind_names(option: Option) -> None:
    match = re.fullmatch(r"integer >= (\d+)(?:, at most (\d+))?", option.kind)
    assert match, f"{option.key}: kind {option.kind!r} names no minimum"
    least = int(match.group(1))
    setting = operator.attrgetter(CASES[option.key][0])
    assert setting(load(table_for(option.key, least))) == least
    assert refusal(table_for(option.key, least - 1)) == (
        f"{SOURCE}: '{option.key}': must be at least {least}, got {least - 1}"
    )
    if match.group(2) is not None:
        most = int(match.group(2))
        assert setting(load(table_for(option.key, most))) == most
        assert refusal(table_for(option.key, most + 1)) == (
            f"{SOURCE}: '{option.key}': must be at most {most}, got {most + 1}"
        )


@pytest.mark.parametrize("option", [o for o in SCHEMA if o.kind.startswith("number")], ids=key_of)
def test_number_bounds_are_those_the_kind_names(option: Option) -> None:
    match = re.fullmatch(r"number \([a-z ]+\), ([0-9.]+) to ([0-9.]+)", option.kind)
    assert match, f"{option.key}: kind {option.kind!r} names no bounds"
    setting = operator.attrgetter(CASES[option.key][0])
    for bound in (float(match.group(1)), float(match.group(2))):
        assert setting(load(table_for(option.key, bound))) == bound
    for outside in (float(match.group(1)) - 0.001, float(match.group(2)) + 1, float("nan")):
        assert refusal(table_for(option.key, outside)) == (
            f"{SOURCE}: '{option.key}': must be a number from {match.group(1)} to "
            f"{match.group(2)}, got {outside}"
        )


# The first word of a kind, a value of the wrong type for it, and how the refusal ends.
WRONG = {
    "folder": (3, "expected a string, got int"),
    "string": (3, "expected a string, got int"),
    "integer": ("ninety", "expected an integer, got str"),
    "number": ("ten", "expected an integer or a number, got str"),
    "boolean": (1, "expected a boolean, got int"),
    "list": ([1], "expected a list of strings"),
    "table": (3, "expected a table, got int"),
    "severity": ("loud", "severity must be one of error, warning, info, off, got 'loud'"),
}


@pytest.mark.parametrize("option", SCHEMA, ids=key_of)
def test_a_value_of_another_kind_is_refused(option: Option) -> None:
    value, problem = WRONG[option.kind.split()[0]]
    where = "".join(PLACEHOLDERS.get(part, part) + "." for part in option.key.split("."))
    assert refusal(table_for(option.key, value)) == f"{SOURCE}: '{where[:-1]}': {problem}"


# --- each key declared once: the Config's fields are the declarations --------------------


def test_every_field_is_declared_once_and_the_schema_is_the_fields() -> None:
    from knowl_build.core.config_options import OPTION

    declared = [
        f.metadata[OPTION].key
        for cls in (Config, SearchConfig, SecurityConfig)
        for f in dataclasses.fields(cls)
        if OPTION in f.metadata
    ]
    assert sorted(declared) == sorted(KEYS)
    assert [CASES[o.key][0] for o in SCHEMA] == [o.attribute for o in SCHEMA]


# The configuration the build records (and hashes): what it was before the keys were
# declared as fields, byte for byte, so no cache or artifact sees a new configuration; and
# since 0.4 the [knowledge] table (which pages a path gives changes every answer).
DEFAULT_RECORD = {
    "frontmatter": {"allow": []},
    "keep_builds": 3,
    "knowledge": {"exclude": [], "layout": "scoped", "users_dir": None},
    "knowledge_dir": "knowledge",
    "links": {
        "case_only": "ignore",
        "code_shortcodes": [],
        "exclude": [],
        "resolution": "exact",
        "site_root": None,
    },
    "out_dir": ".knowl/build",
    "peers": {"paths": []},
    "repo_name": None,
    "rules": {},
    "rules_per_path": [],
    "search": {
        "boosts": {"body": 1.0, "headings": 0.5, "summary": 3.0, "tags": 2.0, "title": 1.0},
        "max_caveats": 3,
    },
    "security": {
        "extra_patterns": [],
        "max_body_chars": 200000,
        "max_field_chars": 20000,
        "reject_secrets": True,
    },
    "semantics": {"dbt": {"connection": None, "project_dir": None}},
    "semantics_dir": "semantics",
    "staleness_days": 90,
    "writes": {"agent_status": "active"},
}


def test_the_record_is_the_recorded_keys_under_their_tables() -> None:
    assert Config().to_json() == DEFAULT_RECORD
    table: dict[str, Any] = {
        "rules": {"KB202": "off", "per-path": {"b/**": {"KB103": "info"}, "a/*": {}}},
        "links": {"exclude": ["^/api/"], "site_root": ".", "url_timeout": 3},
    }
    record = load(table).to_json()
    assert record["rules"] == {"KB202": "off"}
    assert record["rules_per_path"] == [["b/**", {"KB103": "info"}], ["a/*", {}]]
    assert record["links"]["exclude"] == ["^/api/"]
    assert record["links"]["site_root"] == ""
    assert "url_timeout" not in record["links"]
    # Keys no artifact depends on are not recorded: a new site title is not a new build, a
    # new exclude pattern is.
    assert load({**table, "site": {"title": "Acme"}}).sha256 == load(table).sha256
    assert load({**table, "links": {"exclude": ["^/v1/"]}}).sha256 != load(table).sha256
    unrecorded = {o.key for o in SCHEMA if not o.recorded}
    assert unrecorded == {
        "links.check_urls",
        *(f"links.url_{name}" for name in ("timeout", "concurrency", "per_host", "retries")),
        *(f"links.url_{name}" for name in ("cache_hours", "allow_private", "max", "max_per_host")),
        "site.title",
        "site.base_url",
        "site.templates",
        "index.memory_mb",
        "eval.file",
        "eval.min_mrr",
    }


def test_a_choice_suggests_the_nearest() -> None:
    assert refusal({"links": {"resolution": "obsidan"}}) == (
        f"{SOURCE}: 'links.resolution': must be one of exact, obsidian, dendron, got 'obsidan' "
        "(did you mean 'obsidian'?)"
    )
    assert refusal({"writes": {"agent_status": "Draft"}}) == (
        f"{SOURCE}: 'writes.agent_status': must be one of active, draft, got 'Draft' "
        "(did you mean 'draft'?)"
    )


def test_a_required_key_is_required_only_when_its_table_sets_something() -> None:
    assert load({"semantics": {"dbt": {}}}) == Config(source=SOURCE)
    assert refusal({"semantics": {"dbt": {"connection": "shop"}}}) == (
        f"{SOURCE}: 'semantics.dbt.project_dir': is required: the folder that holds dbt_project.yml"
    )


@pytest.mark.parametrize(
    "table, message",
    [
        ({"out_dir": "."}, "'out_dir': must be a folder of its own, not the project root"),
        (
            {"out_dir": "notes/build", "knowledge_dir": "notes"},
            "'out_dir': must be a folder of its own, apart from notes/, got 'notes/build'",
        ),
        (
            {"semantics_dir": "sl", "semantics": {"dbt": {"project_dir": "sl/dbt"}}},
            "'semantics.dbt.project_dir': must not lie under sl/, which holds Canonic files",
        ),
    ],
)
def test_keys_that_depend_on_others(table: dict[str, Any], message: str) -> None:
    assert refusal(table) == f"{SOURCE}: {message}"


@pytest.mark.parametrize(
    "table, where, got",
    [
        ({"search": 3}, "search", "int"),
        ({"semantics": {"dbt": []}}, "semantics.dbt", "list"),
        ({"links": "exact"}, "links", "str"),
    ],
)
def test_a_table_that_is_not_one_is_refused(table: dict[str, Any], where: str, got: str) -> None:
    assert refusal(table) == f"{SOURCE}: '{where}': expected a table, got {got}"


def test_hostile_values_are_refused_with_one_line() -> None:
    for table in (
        {"search": {"boosts": {"body": float("inf")}}},
        {"links": {"url_timeout": float("nan")}},
        {"links": {"exclude": ["(a+)+"]}},
        {"links": {"exclude": ["a"] * 10_000}},
        {"eval": {"file": "/etc/passwd"}},
        {"site": {"templates": "../../etc"}},
        {"knowledge_dir": "C:\\..\\x"},
        {"rules": {"per-path": {"*.md": {"KB202": ["off"]}}}},
        {"security": {"extra_patterns": ["x", 3]}},
    ):
        message = refusal(table)
        assert message.startswith(f"{SOURCE}: '") and "\n" not in message, message
