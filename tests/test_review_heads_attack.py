"""Review of catalog-heads.json (schema 2.3), as a hostile artifact author would read it: an
artifact whose heads pass validation answers exactly as the same artifact without them, for
every reader and option; the build writes heads that are `encode(Catalog)` span for span, for
any catalog; an incremental build writes the same catalog and heads as a full one."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET

import tests.test_incremental as incremental
from knowl_build.artifacts import catalog, memo, schema, validate
from knowl_build.artifacts.layout import CATALOG_HEADS, MANIFEST
from knowl_build.core.errors import ArtifactError
from knowl_build.reader import context, listing, queries
from knowl_build.reader.view import ArtifactView, Catalog
from tests.helpers import dump_json
from tests.tamper import assert_refused, module_corpus, run_cli, tampered


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The corpus as built (with heads), and the same artifact as schema 2.2 wrote it."""
    built = module_corpus(tmp_path_factory, "heads-attack")

    def without_heads(folder: Path) -> None:
        (folder / CATALOG_HEADS).unlink()
        manifest = json.loads((folder / MANIFEST).read_bytes())
        manifest["schema_version"] = "2.2"
        (folder / MANIFEST).write_bytes(dump_json(manifest))

    older = tampered(built, tmp_path_factory.mktemp("older") / "artifact", without_heads)
    return built, older


QUERIES = ["revenue", "orders total revenue", "total_revenue", "margin zebra", "glossary"]
USERS: list[list[str]] = [[], ["--user", "alice"], ["--user", "bob"]]
KINDS: list[list[str]] = [[], ["--kind", "entity"], ["--kind", "page"]]
FILTERS: list[list[str]] = [[], ["--status", "all"], ["--status", "superseded"]]
FILTERS += [["--usage-mode", "caveat"]]
PAGES = ["revenue", "glossary", "old-revenue", "notebook", "user:alice:glossary", "my-caveat"]


def _commands() -> Iterator[list[str]]:
    for query, user, kind, only in itertools.product(QUERIES, USERS, KINDS, FILTERS):
        yield ["search", query, "--json", *user, *kind, *only]
    for query, user, only in itertools.product(QUERIES, USERS, FILTERS):
        yield ["context", query, "--json", *user, *only]
    for page, user in itertools.product(PAGES, USERS):
        yield ["show", page, "--json", *user]
        yield ["traverse", page, "--json", *user]
    yield ["graph"]


def _answer(output: str) -> Any:
    try:
        return json.loads(output) | {"build": None}
    except ValueError:
        return output


def test_heads_and_no_heads_answer_alike(both: tuple[Path, Path]) -> None:
    """Users, shadowing user pages, superseded pages, status and usage-mode filters, both
    kinds and the caveats riding along: the same answer, with or without the heads."""
    built, older = both
    differ = []
    for command in _commands():
        new = run_cli([*command, "--artifact", str(built)])
        old = run_cli([*command, "--artifact", str(older)])
        if (new.exit_code, _answer(new.stdout)) != (old.exit_code, _answer(old.stdout)):
            differ.append(command)
    assert differ == []


@pytest.mark.parametrize("user", [None, "alice"])
def test_listing_stale_and_context_alike(both: tuple[Path, Path], user: str | None) -> None:
    """The readers that go through every entry (`view.pages`) read them alike too."""
    answers = []
    for folder in both:
        view = ArtifactView.open(folder)
        try:
            answers.append(
                (
                    listing.list_pages(view, user),
                    queries.stale(view, user),
                    context.context(view, "revenue", user=user) | {"build": None},
                )
            )
        finally:
            view.close()
    assert answers[0] == answers[1]


@pytest.mark.parametrize("user", [[], ["--user", "alice"]])
def test_a_peer_answers_alike_whichever_side_has_heads(
    both: tuple[Path, Path], user: list[str]
) -> None:
    answers = set()
    for main, peer in itertools.product(both, both):
        for kind in KINDS:
            args = ["search", "revenue", "--json", *user, *kind, "--peer", str(peer)]
            result = run_cli([*args, "--artifact", str(main)])
            assert result.exit_code == 0, result.output
            answers.add((tuple(kind), json.dumps(_answer(result.stdout), sort_keys=True)))
    assert len(answers) == len(KINDS)


def test_the_site_is_the_same_with_or_without_heads(
    both: tuple[Path, Path], tmp_path: Path
) -> None:
    sites = []
    for n, folder in enumerate(both):
        out = tmp_path / f"site{n}"
        result = run_cli(["site", "--artifact", str(folder), "--out", str(out), "-q"])
        assert result.exit_code == 0, result.output
        sites.append(
            {
                str(path.relative_to(out)): path.read_bytes()
                for path in sorted(out.rglob("*"))
                if path.is_file() and path.name != ".knowl-site.json"  # mtimes in it
            }
        )
    assert sites[0] == sites[1] and sites[0]


_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)
_ENTRY = st.builds(
    schema.CatalogEntry,
    key=_TEXT,
    id=_TEXT,
    scope=st.sampled_from(["global", "user:alice"]) | _TEXT,
    owner=st.none() | _TEXT,
    title=_TEXT,
    summary=_TEXT,
    tags=st.lists(_TEXT, max_size=2),
    sl_refs=st.lists(st.sampled_from(["a.b", 'é\u2028"\\']) | _TEXT, max_size=4),
    usage_mode=st.sampled_from(["caveat", "reference"]) | _TEXT,
    category=st.none() | _TEXT,
    status=st.sampled_from(["active", "superseded"]) | _TEXT,
    superseded_by=st.none() | _TEXT,
    visibility=_TEXT,
    freshness=_TEXT,
    drift_flag=st.booleans(),
    offset=st.integers(0, 1 << 53),
    node=st.just(UNSET) | _TEXT,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ENTRY, max_size=6))
def test_catalog_file_is_the_catalog_encoded_for_any_catalog(
    pages: list[schema.CatalogEntry],
) -> None:
    """Non-ASCII text, escapes, U+2028, no caveats, an unset `node`, repeated `sl_refs`."""
    data, heads = catalog.catalog_file(pages)
    caveats = catalog.catalog_caveats(pages)
    assert data == schema.encode(schema.Catalog(pages=pages, caveats=caveats))
    assert heads.binding == catalog.catalog_binding(pages) and heads.caveats == caveats
    for n, page in enumerate(pages):
        span = data[heads.starts[n] : heads.ends[n]]
        assert schema.decode("catalog.json", span, schema.CatalogEntry) == page


def test_incremental_equals_full_catalog_and_heads_included(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tests/test_incremental.py compares the records, entities, graph and diagnostics byte
    for byte, not catalog.json nor catalog-heads.json: its first history, with both."""
    files = (*incremental.JSON_FILES, "catalog.json", CATALOG_HEADS)
    monkeypatch.setattr(incremental, "JSON_FILES", files)
    incremental.test_incremental_equals_full(tmp_path, 1, monkeypatch)


def test_reading_every_entry_opens_the_catalog_once(
    both: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    real_open = Path.open

    def counting(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == "catalog.json":
            opened.append(str(self))
        return real_open(self, *args, **kwargs)

    view = ArtifactView.open(both[0])
    try:
        monkeypatch.setattr(Path, "open", counting)
        assert len(view.pages) > 2
    finally:
        view.close()
    assert len(opened) <= 1


def test_a_span_past_the_file_is_an_artifact_error(both: tuple[Path, Path]) -> None:
    built = both[0]
    heads = schema.decode(CATALOG_HEADS, (built / CATALOG_HEADS).read_bytes(), schema.CatalogHeads)
    forged = schema.CatalogHeads(
        **{
            **{f: getattr(heads, f) for f in heads.__struct_fields__},
            "ends": [*heads.ends[:-1], 1 << 53],
        }
    )
    catalog = Catalog(built, forged)
    with pytest.raises(ArtifactError):
        catalog.entry(len(heads.ends) - 1)


def test_a_memo_of_a_validation_that_never_checked_heads_does_not_vouch_for_them(
    both: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Heads that hide the caveats, opened once by the previous validation (as e04c388 wrote
    its memo: format 4, no check of catalog-heads.json), then read by this one."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def hide_caveats(folder: Path) -> None:
        heads = json.loads((folder / CATALOG_HEADS).read_bytes())
        heads["caveats"] = {}
        (folder / CATALOG_HEADS).write_bytes(dump_json(heads))

    folder = tampered(both[0], tmp_path / "artifact", hide_caveats)
    assert_refused(run_cli(["search", "revenue", "--artifact", str(folder)]), "search")
    with pytest.MonkeyPatch.context() as previous:
        previous.setattr(memo, "MEMO_VERSION", 4)
        previous.setattr(validate, "_check_heads", lambda *_: [])
        ArtifactView.open(folder).close()
    result = run_cli(["search", "revenue", "--limit", "1", "--artifact", str(folder)])
    assert_refused(result, "search")
