"""The configuration page's reference is generated from the declarations (`config.SCHEMA`):
a table row and a section for every declared key, with the type, bounds and default the
loader uses."""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import markdown

from knowl_build.core.config import SCHEMA, Config
from knowl_build.core.config_options import Integer

ROOT = Path(__file__).resolve().parents[1]


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "knowl_docs_reference_config", ROOT / "docs" / "hooks" / "reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _hook()
SOURCE = reference.config_reference(SCHEMA)
PAGE = markdown.markdown(SOURCE, extensions=["toc", "attr_list", "tables"])


def _rows() -> list[list[str]]:
    """The cells of the table of every key, as text."""
    table = PAGE[PAGE.index("<table>") : PAGE.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.DOTALL)[1:]
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<td>(.*?)</td>", row, re.DOTALL)
        ]
        for row in rows
    ]


def test_the_table_has_a_row_for_every_declared_key_in_order() -> None:
    rows = _rows()
    assert [row[0] for row in rows] == [option.key for option in SCHEMA]
    assert len(rows) == len(SCHEMA) > 30
    by_key = {row[0]: row for row in rows}
    assert by_key["links.url_concurrency"][1:] == ["integer >= 1, at most 64", "8"]
    assert by_key["index.memory_mb"][1:] == ["integer >= 16, at most 65536", "512"]
    assert by_key["links.url_timeout"][1:] == ["number (seconds), 0.01 to 300", "10.0"]
    assert by_key["writes.agent_status"][1:] == ["string (active|draft)", '"active"']
    assert by_key["site.title"][2] == "none"
    assert by_key["rules.<CODE>"][1] == "severity (error|warning|info|off)"


def test_each_row_links_to_the_keys_section() -> None:
    ids = set(re.findall(r'\bid="([^"]+)"', PAGE))
    targets = re.findall(r'<td><a href="#([^"]+)"><code>([^<]+)</code></a></td>', PAGE)
    assert [html.unescape(key) for _, key in targets] == [option.key for option in SCHEMA]
    for anchor, key in targets:
        assert anchor in ids, f"{key}: #{anchor} is no section"
        heading = re.search(rf'<h3 id="{re.escape(anchor)}">(.*?)</h3>', PAGE)
        assert heading is not None and f"<code>{key}</code>" in heading.group(1)


def test_a_section_shows_the_declared_default_kind_and_doc() -> None:
    option = next(o for o in SCHEMA if o.key == "keep_builds")
    assert isinstance(option.check, Integer) and option.check.least == 1
    assert Config().keep_builds == 3
    section = SOURCE[SOURCE.index("### `keep_builds`") :].split("\n### ", 1)[0]
    assert "*integer &gt;= 1*, default `3`" in section
    assert option.doc in section


def test_the_page_asks_for_the_generated_reference_once() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page.count("<!-- generated: configuration -->") == 1
    expanded = reference.expand(page)
    for option in SCHEMA:
        assert f"### `{option.key}`" in expanded
