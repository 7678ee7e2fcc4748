"""Artifacts that pass verify must not break search (issue 10, class 10).

Manifest boosts of 1e308 made `internal error: cannot convert float NaN` and `--json` wrote
`"score": Infinity` (not JSON); `index/stats.json` with `doc_count: 0` made "math domain
error". The reader refuses boosts outside (0, MAX_BOOST] and statistics that disagree with the
index (exit 2, one line), and no score that reaches an answer is anything but a finite number.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.errors import ArtifactError
from knowl_build.core.vocabulary import MAX_BOOST
from knowl_build.index import analysis, ranking, unpickler, verify
from tests.helpers import dump_json
from tests.tamper import assert_refused, module_corpus, reader_runs, run_cli, tampered


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return module_corpus(tmp_path_factory, "finite")


def edit_json(name: str, change: Callable[[Any], None]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        data = json.loads((folder / name).read_bytes())
        change(data)
        (folder / name).write_bytes(dump_json(data))

    return edit


def strict_json(text: str) -> Any:
    """JSON as the standard has it: NaN and Infinity are not numbers of it."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("boost", [1e308, 1001, 1000.5, 0, -1, "2", True, None])
def test_boosts_out_of_bounds_are_refused(artifact: Path, tmp_path: Path, boost: Any) -> None:
    def change(manifest: dict[str, Any]) -> None:
        manifest["search"]["boosts"] = dict.fromkeys(analysis.TEXT_FIELDS, boost)

    folder = tampered(artifact, tmp_path / "boosts", edit_json("manifest.json", change))
    runs = reader_runs(folder)
    for command in ("search", "show", "traverse"):
        assert_refused(runs[command], command)
        assert "search.boosts" in runs[command].stderr


def test_the_largest_boosts_give_finite_scores_and_strict_json(
    artifact: Path, tmp_path: Path
) -> None:
    def change(manifest: dict[str, Any]) -> None:
        manifest["search"]["boosts"] = dict.fromkeys(analysis.TEXT_FIELDS, MAX_BOOST)

    folder = tampered(artifact, tmp_path / "largest", edit_json("manifest.json", change))
    result = run_cli(["search", "revenue orders finance", "--json", "--artifact", str(folder)])
    assert result.exit_code == 0, result.output
    hits = strict_json(result.stdout)["hits"]
    assert hits and all(math.isfinite(h["score"]) and h["score"] > 0 for h in hits)


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.update(doc_count=0),  # the red team's "math domain error"
        lambda s: s.update(doc_count=s["doc_count"] + 1),
        lambda s: s["length_sums"].update(body=0),
        lambda s: s["length_sums"].update(body=2**53),
        lambda s: s["scopes"]["global"].update(doc_count=0),  # scopes no longer add up
        lambda s: s["scopes"].update(  # adds up, but not per scope
            {
                "global": s["scopes"]["user:alice"],
                "user:alice": s["scopes"]["global"],
            }
        ),
        lambda s: s["scopes"].update({"global": {"doc_count": -1}}),
        lambda s: s.update(scopes=[]),
    ],
    ids=["zero", "plus-one", "no-body", "huge", "scope-sum", "swapped", "negative", "not-a-map"],
)
def test_statistics_that_disagree_with_the_index_are_refused(
    artifact: Path, tmp_path: Path, change: Callable[[Any], None]
) -> None:
    folder = tampered(artifact, tmp_path / "stats", edit_json("index/stats.json", change))
    runs = reader_runs(folder)
    for name, result in runs.items():
        assert_refused(result, name, one_line=name != "verify")
    assert "stats.json" in runs["verify"].stdout + runs["verify"].stderr


def _older_and_empty(stats: dict[str, Any]) -> None:
    del stats["scopes"]
    stats["doc_count"] = 0


def _one_more_global(stats: dict[str, Any]) -> None:
    stats["doc_count"] += 1
    stats["scopes"]["global"]["doc_count"] += 1


@pytest.mark.parametrize(
    "change, scopes", [(_older_and_empty, None), (_one_more_global, {"global"})]
)
def test_the_searcher_refuses_statistics_that_disagree_even_unvalidated(
    artifact: Path, tmp_path: Path, change: Callable[[Any], None], scopes: set[str] | None
) -> None:
    """Even opened directly (no full validation), a searcher never divides by a count that
    disagrees with the documents it holds."""
    folder = tampered(artifact, tmp_path / "stats", edit_json("index/stats.json", change))
    with (
        ranking.Searcher(folder / "index") as searcher,
        pytest.raises(ArtifactError, match=r"stats\.json disagrees"),
    ):
        searcher.query(["revenu"], {"body": 1.0}, scopes).top()


@pytest.mark.parametrize(
    "weights",
    [array("f", [1.0, math.nan]), array("f", [1.0, math.inf]), (1.0, -2.0), (math.inf,)],
    ids=["nan", "inf", "negative", "inf-tuple"],
)
def test_postings_with_frequencies_that_are_not_finite_are_refused(weights: Any) -> None:
    ids = list(range(len(weights)))
    with pytest.raises(unpickler.BadIndex, match="not finite frequencies"):
        verify._check_postings(ids, weights, 10)


def test_a_score_that_is_not_a_number_never_reaches_an_answer(artifact: Path) -> None:
    with ranking.Searcher(artifact / "index") as searcher:
        scores = searcher.scores(["revenu"], {"body": 1.0})
        doc = min(scores)
        for bad in (math.nan, math.inf, -math.inf):
            scored = ranking.Scored(searcher, {**scores, doc: bad})
            with pytest.raises(ArtifactError, match="not a finite number"):
                scored.top()
            with pytest.raises(ArtifactError, match="not a finite number"):
                scored.of(searcher.key(doc))
