"""catalog-heads.json (schema 2.3): every catalog entry's key, id, scope and byte span, so that
a search decodes the entries it answers with and never the whole catalog. It is untrusted
like every file of an artifact: validation holds it to catalog.json, span by span."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knowl_build.artifacts import catalog, schema
from knowl_build.artifacts.layout import CATALOG_HEADS, MANIFEST
from tests.helpers import dump_json
from tests.tamper import assert_refused, module_corpus, rehash, run_cli, tampered


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return module_corpus(tmp_path_factory, "heads")


def _entry(key: str, **fields: Any) -> schema.CatalogEntry:
    base: dict[str, Any] = {
        "key": key,
        "id": key.rsplit("/", 1)[-1].removesuffix(".md"),
        "scope": "global",
        "owner": None,
        "title": "Ünïcode — “quoted” \\ title",
        "summary": 'a "summary" with \n new line',
        "tags": ["a", "b"],
        "sl_refs": ["shop.orders.total"],
        "usage_mode": "caveat",
        "category": None,
        "status": "active",
        "superseded_by": None,
        "visibility": "repo",
        "freshness": "fresh",
        "drift_flag": False,
        "offset": 0,
    }
    return schema.CatalogEntry(**{**base, **fields})


@pytest.mark.parametrize("count", [0, 1, 3])
def test_the_catalog_file_is_the_catalog_encoded_and_each_span_holds_its_entry(
    count: int,
) -> None:
    pages = [_entry(f"knowledge/global/p{n}.md", offset=n * 10) for n in range(count)]
    data, heads = catalog.catalog_file(pages)
    caveats = catalog.catalog_caveats(pages)
    assert data == schema.encode(schema.Catalog(pages=pages, caveats=caveats))
    assert heads.keys == [p.key for p in pages] and heads.caveats == caveats
    assert heads.binding == ({"shop.orders.total": list(range(count))} if count else {})
    for n, page in enumerate(pages):
        span = data[heads.starts[n] : heads.ends[n]]
        assert schema.decode("catalog.json", span, schema.CatalogEntry) == page


def test_a_build_writes_the_heads_of_its_catalog(artifact: Path) -> None:
    manifest = json.loads((artifact / MANIFEST).read_bytes())
    assert CATALOG_HEADS in manifest["files"]
    data = (artifact / "catalog.json").read_bytes()
    heads = schema.decode(
        CATALOG_HEADS, (artifact / CATALOG_HEADS).read_bytes(), schema.CatalogHeads
    )
    catalog = schema.decode("catalog.json", data, schema.Catalog)
    assert heads.keys == [p.key for p in catalog.pages]
    assert heads.caveats == catalog.caveats
    for n, page in enumerate(catalog.pages):
        span = data[heads.starts[n] : heads.ends[n]]
        assert schema.decode("catalog.json", span, schema.CatalogEntry) == page


def _without_heads(folder: Path) -> None:
    """An artifact as schema 2.2 wrote it: no catalog-heads.json."""
    (folder / CATALOG_HEADS).unlink()
    manifest = json.loads((folder / MANIFEST).read_bytes())
    manifest["schema_version"] = "2.2"
    (folder / MANIFEST).write_bytes(dump_json(manifest))


def test_an_artifact_without_heads_answers_the_same(artifact: Path, tmp_path: Path) -> None:
    older = tampered(artifact, tmp_path / "older", _without_heads)
    assert not (older / CATALOG_HEADS).exists()
    for command in (
        ["search", "revenue", "--json"],
        ["search", "orders total revenue", "--json", "--user", "alice"],
        ["search", "total_revenue", "--json", "--kind", "entity"],
        ["show", "revenue", "--json"],
    ):
        new = run_cli([*command, "--artifact", str(artifact)])
        old = run_cli([*command, "--artifact", str(older)])
        assert new.exit_code == old.exit_code == 0, (command, new.output, old.output)
        assert json.loads(old.stdout) | {"build": None} == json.loads(new.stdout) | {"build": None}


def _forge(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def forge(folder: Path) -> None:
        heads = json.loads((folder / CATALOG_HEADS).read_bytes())
        change(heads)
        (folder / CATALOG_HEADS).write_bytes(dump_json(heads))

    return forge


def _swap_spans(heads: dict[str, Any]) -> None:
    heads["starts"][0], heads["starts"][1] = heads["starts"][1], heads["starts"][0]
    heads["ends"][0], heads["ends"][1] = heads["ends"][1], heads["ends"][0]


def _rename(heads: dict[str, Any]) -> None:
    heads["keys"][0] = "knowledge/global/elsewhere.md"


def _past_the_end(heads: dict[str, Any]) -> None:
    heads["ends"][-1] = 10**12


def _inside(heads: dict[str, Any]) -> None:
    heads["starts"][0] += 1


def _uneven(heads: dict[str, Any]) -> None:
    heads["scopes"].pop()


def _empty(heads: dict[str, Any]) -> None:
    heads["ends"][0] = heads["starts"][0]


def _status(heads: dict[str, Any]) -> None:
    heads["statuses"][0] = "deprecated" if heads["statuses"][0] == "active" else "active"


def _binding(heads: dict[str, Any]) -> None:
    heads["binding"]["shop_pg.orders.total_revenue"] = [0, 1, 2]


def _binding_past(heads: dict[str, Any]) -> None:
    heads["binding"] = {"shop_pg.orders.total_revenue": [10**6]}


def _caveats(heads: dict[str, Any]) -> None:
    heads["caveats"] = {"shop_pg.orders.total_revenue": [0]}


def _hide_caveats(heads: dict[str, Any]) -> None:
    heads["caveats"] = {}


FORGERIES: dict[str, Callable[[dict[str, Any]], None]] = {
    "spans swapped": _swap_spans,
    "a key that is not the entry's": _rename,
    "a span past the end": _past_the_end,
    "a span inside an entry": _inside,
    "columns of different lengths": _uneven,
    "an empty span": _empty,
    "forged caveats": _caveats,
    "another status": _status,
    "forged bindings": _binding,
    "a binding past the end": _binding_past,
    "caveats hidden": _hide_caveats,
}


@pytest.mark.parametrize("case", sorted(FORGERIES))
def test_forged_heads_are_refused(artifact: Path, tmp_path: Path, case: str) -> None:
    folder = tampered(artifact, tmp_path / "artifact", _forge(FORGERIES[case]))
    for command in (["search", "revenue"], ["show", "revenue"], ["verify"]):
        result = run_cli([*command, "--artifact", str(folder)])
        assert_refused(result, command[0], one_line=command[0] != "verify")
        assert CATALOG_HEADS in result.stderr, (case, result.stderr)


def test_heads_that_are_not_json_are_refused(artifact: Path, tmp_path: Path) -> None:
    def garble(folder: Path) -> None:
        (folder / CATALOG_HEADS).write_bytes(b'{"keys": [' * 100_000)

    folder = tampered(artifact, tmp_path / "artifact", garble)
    result = run_cli(["search", "revenue", "--artifact", str(folder)])
    assert_refused(result, "search")


def test_heads_changed_after_validation_are_refused_when_read(
    artifact: Path, tmp_path: Path
) -> None:
    """The validation memo spares a second full read; heads rewritten in place afterwards
    (a new change time) are validated again, so a reader never trusts a span unchecked."""
    folder = tmp_path / "artifact"
    shutil.copytree(artifact, folder)
    rehash(folder)
    assert run_cli(["search", "revenue", "--artifact", str(folder)]).exit_code == 0
    _forge(_swap_spans)(folder)
    rehash(folder)
    result = run_cli(["search", "revenue", "--artifact", str(folder)])
    assert_refused(result, "search")
