"""Plain search results (`output.plain`, no rich.console) are the bytes rich prints: the same
table for random answers at random widths, and the same decision of where rich styles."""

from __future__ import annotations

import io
import random
from typing import Any

import pytest
from rich.console import Console

from knowl_build.output import hits, plain, text

WORDS = [
    "revenue", "net", "of", "discounts", "a", "churn", "x" * 37, "monthly-recurring-revenue",
    "naïve", "Größe", "日本語の見出し", "emoji🙂here", "e\u0301", "nb\xa0sp", "tab\tin",
    "esc\x1b[31m", "…", "§", "", "  ", "line\nbreak", "\u202eevil", "ÅÄÖ", "Привет",
]  # fmt: skip


def _words(rng: random.Random, most: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, most)))


def _page(rng: random.Random, repo: str) -> dict[str, Any]:
    page = rng.choice(["p", "revenue", "a-very-long-page-identifier-for-finance", "日本"])
    hit: dict[str, Any] = {
        "kind": "page",
        "page": page,
        "scope": rng.choice(["global", "user:alice"]),
        "repo": repo,
        "title": rng.choice([page, _words(rng, 12)]),
        "summary": _words(rng, 30),
        "annotations": [{"page": "note", "scope": "user:alice"}] * rng.randint(0, 2),
        "freshness": rng.choice(["fresh", "stale", "needs_review"]),
        "drift_flag": rng.random() < 0.3,
        "score": rng.uniform(0.0, 9.0),
    }
    if rng.random() < 0.6:
        snippet = _words(rng, 25)
        cut = sorted(rng.sample(range(len(snippet) + 1), 2)) if snippet else [0, 0]
        hit["snippet"] = {"text": snippet, "line": 3, "matches": [cut]}
        hit["section"] = rng.choice([None, {"heading": _words(rng, 4), "anchor": "a", "line": 2}])
    return hit


def _entity(rng: random.Random, repo: str) -> dict[str, Any]:
    return {
        "kind": "entity",
        "entity": rng.choice(["orders.amount", "semantic.model.revenue_total_net_of_refunds"]),
        "entity_kind": rng.choice(["measure", "dimension"]),
        "repo": repo,
        "label": rng.choice([None, _words(rng, 3)]),
        "description": rng.choice([None, _words(rng, 20)]),
        "expression": rng.choice([None, "sum(amount) - sum(discount)"]),
        "score": rng.uniform(0.0, 9.0),
        "pages": [{"page": "revenue", "scope": "global"}] * rng.randint(0, 3),
    }


def _answer(rng: random.Random) -> dict[str, Any]:
    repos = ["kb", "billing-kb"]
    found = [
        (_entity if rng.random() < 0.25 else _page)(rng, rng.choice(repos))
        for _ in range(rng.randint(0, 8))
    ]
    caveats = [
        {"page": "caveat-page", "summary": _words(rng, 8), "triggered_by": ["revenue"]}
    ] * rng.randint(0, 2)
    answer: dict[str, Any] = {"query": _words(rng, 3), "hits": found, "caveats": caveats}
    if not found and rng.random() < 0.5:
        answer["suggestions"] = {"revnue": ["revenue", "revenues"]}
    return answer


def _by_rich(answer: dict[str, Any], width: int) -> str:
    out = io.StringIO()
    text.search_results(answer, Console(file=out, width=width, highlight=False, soft_wrap=True))  # type: ignore[arg-type]
    return out.getvalue()


def _plain(answer: dict[str, Any], width: int, monkeypatch: pytest.MonkeyPatch) -> str | None:
    monkeypatch.setattr(plain, "width", lambda _stream: width)
    out = io.StringIO()
    return out.getvalue() if hits.write_plain(answer, out) else None  # type: ignore[arg-type]


def test_plain_results_are_the_bytes_rich_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(25)
    for _ in range(400):
        answer = _answer(rng)
        width = rng.choice([rng.randint(1, 60), rng.randint(60, 250)])
        assert _plain(answer, width, monkeypatch) == _by_rich(answer, width), (width, answer)
    assert _plain(answer, 0, monkeypatch) is None  # COLUMNS=0: left to rich (it prints nothing)


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"COLUMNS": "57"},
        {"COLUMNS": "0"},
        {"FORCE_COLOR": "1"},
        {"FORCE_COLOR": ""},
        {"TTY_COMPATIBLE": "1"},
        {"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"},
    ],
)
def test_plain_output_where_rich_styles_nothing(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    stream = io.StringIO()
    console = text.console(stream)
    expected = console.width if console.color_system is None else None
    assert plain.width(stream) == expected
