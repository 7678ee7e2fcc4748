"""Parsing details: fences, line ends, headings, titles, links, directives, fingerprints."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from knowl_build.core.config import Config, SecurityConfig
from knowl_build.parse.body import heading_key
from knowl_build.parse.frontmatter import split
from knowl_build.pipeline.analysis import analyse
from knowl_build.pipeline.pages import parse_page
from knowl_build.secrets.scanner import SecretScanner
from knowl_build.semantic.layer import fingerprint_of, measure_fingerprint
from knowl_build.semantic.load import load_semantic_layer
from tests.helpers import SEMANTICS, Project


def parse(text: str):  # type: ignore[no-untyped-def]
    return parse_page(text.encode(), SecurityConfig(), SecretScanner())


def test_fingerprint_test_vectors() -> None:
    assert measure_fingerprint("sum(amount)") == (
        "sha256:6193c9db63810d49d8c08c18bacb053c943f8f0c1ea8d0fc3dee16ecc0cd7b34"
    )
    assert measure_fingerprint("sum(quantity)") == (
        "sha256:f9d568fe8feca201b8e8fde76b4f72941550591233aeba42d91614b90f6aeb6b"
    )


def test_entity_fingerprints_and_resolution() -> None:
    layer = load_semantic_layer([(k, v.encode()) for k, v in SEMANTICS.items()])
    orders = layer.entities["shop_pg.orders"]
    assert orders.kind == "source" and orders.line == 1
    # A source's fingerprint ignores its members, so editing a measure does not change it.
    assert orders.fingerprint == fingerprint_of(
        {
            "name": "orders",
            "connection": "shop_pg",
            "table": "analytics.fct_orders",
            "grain": ["order_id"],
            "description": "One row per order.",
        }
    )
    assert layer.entities["shop_pg.orders.total_revenue"].fingerprint == measure_fingerprint(
        "sum(amount)"
    )
    # `status` is a column and a dimension: the entity resolves to the dimension.
    assert layer.entities["shop_pg.orders.status"].kind == "dimension"
    assert layer.entities["shop_pg.orders.amount"].definition == {
        "name": "amount",
        "type": "decimal",
        "nullable": False,
    }


@pytest.mark.parametrize(
    "text, fm, body",
    [
        ("---\na: 1\n---\nbody", "a: 1\n", "body"),
        ("---  \r\na: 1\r\n---\t\r\nbody", "a: 1\r\n", "body"),
        ("--- x\n---\n", None, "--- x\n---\n"),
        ("----\na\n----\n", None, "----\na\n----\n"),
        ("---\n---", "", ""),
        ("text\n---\na\n---\n", None, "text\n---\na\n---\n"),
    ],
)
def test_split(text: str, fm: str | None, body: str) -> None:
    parts = split(text)
    assert parts.frontmatter == fm
    assert text[parts.body_offset :] == body


def test_bom_and_crlf_positions() -> None:
    parsed = parse("\ufeff---\r\nsummary: s\r\n---\r\nx [[a]]\r\n  [[b]]\r\n")
    assert [(link.target, link.span.line, link.span.column) for link in parsed.links] == [
        ("a", 4, 3),
        ("b", 5, 3),
    ]


def test_lone_carriage_return_is_not_a_line_break() -> None:
    parsed = parse("a\rb [[x]]\n[[y]]\n")
    assert [(link.span.line, link.span.column) for link in parsed.links] == [(1, 5), (2, 1)]


def test_links_forms() -> None:
    parsed = parse(
        "[[a]] [[b|B]] [[c#H 1|x]] [[#Local]] ![[d.png]] [[ e.md ]] | [[f\\|g]] | [[]] [[|z]]\n"
    )
    got = [(link.target, link.heading, link.embed) for link in parsed.links]
    assert got == [
        ("a", None, False),
        ("b", None, False),
        ("c", "H 1", False),
        ("", "Local", False),
        ("d.png", None, True),
        ("e", None, False),
        ("f", None, False),
    ]


def test_headings_and_title() -> None:
    parsed = parse(
        "intro\n\n# The *Main* `Title`\n\nSetext two\n----------\n\n```\n# not a heading\n```\n"
    )
    assert [(h.level, h.text) for h in parsed.headings] == [
        (1, "The Main Title"),
        (2, "Setext two"),
    ]
    assert parsed.h1 == "The Main Title"
    setext_only = parse("Title\n=====\n")
    assert setext_only.h1 is None  # the default title comes from ATX headings only
    assert heading_key("  Some   *Heading*  ") == heading_key("some heading")


def test_title_defaults(tmp_path: Path) -> None:
    name = unicodedata.normalize("NFD", "caf\u00e9")
    project = Project(tmp_path / "p", git=False).write(
        {
            "knowledge/global/with-title.md": "---\ntitle: Explicit\n---\n# Heading\n",
            "knowledge/global/with-h1.md": "# From *Heading*\n",
            f"knowledge/global/{name}.md": "no heading\n",
            "knowledge/global/linker.md": "[[caf\u00e9]]\n",
        }
    )
    analysis = analyse(project.root, Config(rules={"KB202": "off"}), use_cache=False)
    titles = {p.id: p.title for p in analysis.pages}
    assert titles["with-title"] == "Explicit"
    assert titles["with-h1"] == "From Heading"
    assert titles["caf\u00e9"] == "caf\u00e9"  # ids are NFC-normalised
    assert [d.code for d in analysis.diagnostics] == ["KB009"]


def test_directives_found_everywhere_but_escaped() -> None:
    parsed = parse(
        "a << 2 {{ x }} {% raw %}\n<<sl:a.b.c>> {{  sl:a.b.d  }}\n```\n<< sl:a.b.e >>\n```\n\\{{ sl:a.b.f }}\n"
    )
    assert [d.name for d in parsed.directives] == ["a.b.c", "a.b.d", "a.b.e"]


def test_frontmatter_as_written_is_json_safe() -> None:
    parsed = parse("---\nsummary: s\nmeta:\n  last_validated_at: 2026-01-02\ncustom: {a: 1}\n---\n")
    assert parsed.frontmatter == {
        "summary": "s",
        "meta": {"last_validated_at": "2026-01-02"},
        "custom": {"a": 1},
    }
    assert parsed.fields.last_validated_at == "2026-01-02T00:00:00Z"


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2026-01-02T10:00:00+02:00", "2026-01-02T08:00:00Z"),
        ('"2026-01-02T10:00:00Z"', "2026-01-02T10:00:00Z"),
        ("2026-01-02 10:00:00", "2026-01-02T10:00:00Z"),
        ('"2026-01-02"', "2026-01-02T00:00:00Z"),
    ],
)
def test_timestamps_are_utc(value: str, expected: str) -> None:
    parsed = parse(f"---\nmeta:\n  last_validated_at: {value}\n---\n")
    assert parsed.fields.last_validated_at == expected
