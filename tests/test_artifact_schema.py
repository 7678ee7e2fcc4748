"""The artifact's record types (artifacts/schema.py): one type per file, shared by the writer
and the reader. A built artifact decodes into them and encodes back to the same bytes; a
record without its shape is an ArtifactError that says where, and never repeats a value."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowl_build.artifacts import schema
from knowl_build.artifacts.layout import RECORDS
from knowl_build.artifacts.schema import FILES, PageRecord, decode, encode
from knowl_build.core.errors import ArtifactError
from tests.helpers import record_lines
from tests.tamper import module_corpus

SECRET = "AKIAIOSFODNN7EXAMPLE"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return module_corpus(tmp_path_factory, "schema")


def test_every_file_of_a_build_round_trips_byte_for_byte(folder: Path) -> None:
    """What the reader decodes is what the writer wrote: no key is lost or added."""
    checked = 0
    for name, kind in FILES.items():
        path = folder / name
        if not path.exists() or name.startswith("index/"):
            continue  # the index writes its own two files (below the artifacts layer)
        data = path.read_bytes()
        assert encode(decode(name, data, kind)) == data, name
        checked += 1
    assert checked == 7  # vectors/ only with the embeddings extra
    lines = record_lines(folder)
    assert lines
    for line in lines:
        assert encode(decode(RECORDS, line, PageRecord)) == line


def test_index_files_decode(folder: Path) -> None:
    for name in ("index/stats.json", "index/docs.json"):
        decode(name, (folder / name).read_bytes(), FILES[name])


@pytest.mark.parametrize(
    ("name", "data", "where"),
    [
        ("catalog.json", b'{"pages": [{"key": 1}]}', "'pages[0].key': Expected `str`"),
        ("catalog.json", b'{"pages": [{}]}', "missing required field `key`"),
        ("catalog.json", b"{", "not valid JSON"),
        (
            "graph.json",
            b'{"directed": true, "multigraph": false, "graph": {}, "edges": [],'
            b' "nodes": [{"type": "' + SECRET.encode() + b'", "id": "x", "label": "x"}]}',
            "'nodes[0].type': Invalid value",
        ),
        (
            "diagnostics.json",
            b'{"version": 1, "summary": {"error": 0, "warning": 0, "info": 0}, "diagnostics":'
            b' [{"code": "KB001", "severity": "' + SECRET.encode() + b'", "path": "a",'
            b' "line": 1, "column": 1, "end_line": null, "end_column": null,'
            b' "message": "m", "hint": null}]}',
            "'diagnostics[0].severity': Invalid value",
        ),
        (
            "signatures.json",
            b'{"graph": "' + SECRET.encode() + b'", "pages": {"a": 7}}',
            "'pages[...]': Expected `str`",
        ),
        ("index/docs.json", b'{"a": "' + SECRET.encode() + b'"}', "Expected `str` matching"),
    ],
)
def test_a_record_without_its_shape_says_where_and_repeats_no_value(
    name: str, data: bytes, where: str
) -> None:
    with pytest.raises(ArtifactError) as caught:
        decode(name, data, FILES[name])
    message = str(caught.value)
    assert message.startswith(f"{name}: ")
    assert where in message
    assert SECRET not in message and "\n" not in message


def test_numbers_out_of_their_range_are_refused() -> None:
    manifest_search = b'{"boosts": {"body": 1e400}, "max_caveats": 3}'
    with pytest.raises(ArtifactError, match="boosts"):
        decode("manifest.json", manifest_search, schema.SearchSettings)
    with pytest.raises(ArtifactError, match="offset"):
        decode(
            "catalog.json",
            b'{"pages": [{"key": "k", "id": "i", "scope": "global", "owner": null,'
            b' "title": "t", "summary": "", "tags": [], "sl_refs": [], "usage_mode": "m",'
            b' "category": null, "status": "active", "superseded_by": null,'
            b' "visibility": "workspace", "freshness": "fresh", "drift_flag": false,'
            b' "offset": -1}]}',
            schema.Catalog,
        )


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    deep = b'{"pages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(ArtifactError):
        decode("catalog.json", deep, schema.Catalog)
