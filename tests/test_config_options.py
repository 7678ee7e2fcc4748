"""The option declarations on their own: a new key is one field, declared with `option()`; the
loader reads it, refuses what its kind refuses, and the documentation lists it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config_loader import read_options
from knowl_build.core.config_options import (
    Boolean,
    Choice,
    File,
    Folder,
    HttpAddress,
    Integer,
    Invalid,
    Kind,
    Number,
    Strings,
    Text,
    Weights,
    option,
    options_of,
)
from knowl_build.core.errors import ConfigError
from tests.helpers import invoke
from tests.test_config_docs import reference


# A table as issue 26 will add one: each key is its one declaration, nothing else.
@dataclass(frozen=True, slots=True)
class Knowledge:
    layout: str = option(
        "knowledge.layout", Choice(("scoped", "flat")), "scoped", "How the pages are laid out."
    )
    users_dir: str = option("knowledge.users_dir", Folder(), "user", "Each user's folder.")
    exclude: tuple[str, ...] = option("knowledge.exclude", Strings(), (), "Paths left out.")


@dataclass(frozen=True, slots=True)
class Project:
    name: str | None = option("name", Text(), None, "The project's name.")
    knowledge: Knowledge = field(default_factory=Knowledge)
    origin: str = ""


def read(data: dict[str, Any]) -> Project:
    return read_options(Project, data, "knowl.toml", origin="x")


def refusal(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        read(data)
    return str(info.value)


def test_a_declared_key_is_read_and_defaults_otherwise() -> None:
    assert read({}) == Project(origin="x")
    project = read({"name": "acme", "knowledge": {"layout": "flat", "users_dir": "people\\"}})
    assert project == Project("acme", Knowledge("flat", "people", ()), "x")
    assert [(o.key, o.attribute) for o in options_of(Project)] == [
        ("name", "name"),
        ("knowledge.layout", "knowledge.layout"),
        ("knowledge.users_dir", "knowledge.users_dir"),
        ("knowledge.exclude", "knowledge.exclude"),
    ]


@pytest.mark.parametrize(
    "data, message",
    [
        ({"nme": "a"}, "'nme': unknown key (did you mean 'name'?)"),
        (
            {"knowledge": {"layot": "flat"}},
            "'knowledge.layot': unknown key (did you mean 'layout'?)",
        ),
        ({"knowledge": []}, "'knowledge': expected a table, got list"),
        (
            {"knowledge": {"layout": "flta"}},
            "'knowledge.layout': must be one of scoped, flat, got 'flta' (did you mean 'flat'?)",
        ),
        (
            {"knowledge": {"users_dir": "../up"}},
            "'knowledge.users_dir': must be a folder inside the project, got '../up'",
        ),
        ({"knowledge": {"exclude": "a"}}, "'knowledge.exclude': expected a list, got str"),
    ],
)
def test_a_declared_key_is_refused_as_its_kind_says(data: dict[str, Any], message: str) -> None:
    assert refusal(data) == f"knowl.toml: {message}"


def test_a_declared_key_is_documented() -> None:
    source = reference.config_reference(options_of(Project))
    assert '| [`knowledge.layout`](#knowledge-layout) | string (scoped\\|flat) | `"scoped"` |' in (
        source
    )
    assert "### `knowledge.users_dir` { #knowledge-users_dir }" in source
    assert "## `[knowledge]` { #table-knowledge }" in source


# Each kind: values it takes (and what it holds them as), values it refuses (and why).
KINDS: list[tuple[Kind[Any], list[tuple[object, object]], list[tuple[object, str]]]] = [
    (Boolean(), [(True, True)], [(1, "expected a boolean, got int")]),
    (
        Integer(1, 3),
        [(1, 1), (3, 3)],
        [
            (0, "must be at least 1, got 0"),
            (4, "must be at most 3, got 4"),
            (True, "expected an integer, got a boolean"),
            (2.0, "expected an integer, got float"),
        ],
    ),
    (
        Number(0.5, 2.0, "seconds"),
        [(1, 1.0), (0.5, 0.5), (2, 2.0)],
        [
            (math.inf, "must be a number from 0.5 to 2, got inf"),
            (math.nan, "must be a number from 0.5 to 2, got nan"),
            (0.49, "must be a number from 0.5 to 2, got 0.49"),
            ("1", "expected an integer or a number, got str"),
        ],
    ),
    (
        Text(r"[a-z]+"),
        [("abc", "abc")],
        [("a b", "must match [a-z]+"), (None, "expected a string, got NoneType")],
    ),
    (
        Folder(root=""),
        [(".", ""), ("a\\b", "a/b"), ("a/./b/", "a/b")],
        [
            ("/etc", "must be a folder inside the project, got '/etc'"),
            ("a/../..", "must be a folder inside the project, got 'a/../..'"),
            (" ", "must be a folder inside the project, got ' '"),
        ],
    ),
    (
        File(),
        [("tests/q.yaml", "tests/q.yaml")],
        [
            (".", "must be a file inside the project, got '.'"),
            ("../q.yaml", "must be a file inside the project, got '../q.yaml'"),
        ],
    ),
    (
        Strings(lambda item: None if item else "empty", most=2, noun="patterns"),
        [(["a", "b"], ("a", "b")), ([], ())],
        [
            (["a", ""], "empty"),
            (["a", "b", "c"], "holds more than 2 patterns"),
            (["a", 1], "expected a list of strings"),
        ],
    ),
    (
        HttpAddress(),
        [("https://a.example/kb", "https://a.example/kb/"), ("http://a/", "http://a/")],
        [
            (
                "javascript:alert(1)",
                "must be an http:// or https:// address, got 'javascript:alert(1)'",
            ),
            ("https://a/ b", "must be an http:// or https:// address, got 'https://a/ b'"),
            ("https://a/#x", "must not have a query or a fragment, got 'https://a/#x'"),
        ],
    ),
]


@pytest.mark.parametrize("kind, takes, refuses", KINDS, ids=lambda k: type(k).__name__)
def test_each_kind_reads_and_refuses(
    kind: Kind[Any], takes: list[tuple[object, object]], refuses: list[tuple[object, str]]
) -> None:
    for value, held in takes:
        assert kind.read(value) == held
    for value, problem in refuses:
        with pytest.raises(Invalid) as info:
            kind.read(value)
        assert (info.value.problem, info.value.at) == (problem, "")
    assert kind.describe()


def test_weights_merge_over_their_defaults_and_name_the_entry() -> None:
    kind = Weights({"a": 1.0, "b": 2.0}, 10.0)
    assert kind.read({"b": 3}) == {"a": 1.0, "b": 3.0}
    for value, at, problem in [
        ({"c": 1}, ".c", "unknown key"),
        ({"a": 0}, ".a", "must be a number greater than 0, at most 10, got 0"),
        ({"a": math.inf}, ".a", "must be a number greater than 0, at most 10, got inf"),
        ({"a": "x"}, ".a", "expected an integer or a number, got str"),
    ]:
        with pytest.raises(Invalid) as info:
            kind.read(value)
        assert (info.value.at, info.value.problem) == (at, problem)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            'knowledge_dir = "a\\u0000b"\n',
            "'knowledge_dir': must be a folder inside the project, got 'a\\x00b'",
        ),
        (
            '[eval]\nfile = "q\\u0000.yaml"\n',
            "'eval.file': must be a file inside the project, got 'q\\x00.yaml'",
        ),
        (
            '[site]\nbase_url = "http://[x"\n',
            "'site.base_url': must be an http:// or https:// address, got 'http://[x'",
        ),
        (
            '[peers]\npaths = ["../a\\u0000"]\n',
            "'peers.paths': '../a\\x00' is no path: it holds a NUL character",
        ),
    ],
)
def test_names_no_file_can_have_are_a_configuration_error(
    tmp_path: Path, text: str, message: str
) -> None:
    """These were internal errors (a ValueError from the file system or urlsplit)."""
    (tmp_path / "knowl.toml").write_text(text, encoding="utf-8")
    result = invoke(["--repo", str(tmp_path), "check"], code=2)
    assert result.stderr.strip().splitlines() == [f"knowl: error: knowl.toml: {message}"]
