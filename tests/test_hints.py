"""Did-you-mean hints (hints.py): the same answer as difflib.get_close_matches(n=1),
found in a length window of an index, within a deterministic budget per run."""

from __future__ import annotations

import datetime as dt
import difflib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from knowl_build.core.config_loader import config_from_mapping
from knowl_build.pipeline.analysis import analyse
from knowl_build.rules.context import HINT_CUTOFF, RuleContext
from knowl_build.rules.references import check_references
from knowl_build.support.hints import (
    BUDGET_NOTICE,
    DIFFLIB_UNITS,
    LOOKUP_UNITS,
    SKIPPED,
    HintBudget,
    NearNames,
    closest,
    did_you_mean,
    least_common,
)
from tests.helpers import SEMANTICS, Project


def expected(name: str, names: list[str], cutoff: float) -> str | None:
    found = difflib.get_close_matches(name, names, n=1, cutoff=cutoff)
    return found[0] if found else None


# Small alphabets make near misses likely; both cases, accents, CJK, an astral character.
ALPHABET = st.sampled_from(["ab-", "abcAB", "aAäÄ_ ", "revnuedfit-", "字文a😀é", "xyz0123"])
CUTOFFS = st.sampled_from([0.0, 0.25, 0.5, 0.6, 0.75, 0.8, 0.9, 1.0]) | st.floats(0.0, 1.0)


@st.composite
def near(draw: st.DrawFn, base: str, letters: str) -> str:
    """`base` with a few edits: a case change, insertions, deletions, substitutions."""
    chars = list(base)
    for _ in range(draw(st.integers(0, 3))):
        edit = draw(st.sampled_from(["swapcase", "insert", "delete", "replace"]))
        at = draw(st.integers(0, len(chars)))
        if edit == "insert":
            chars.insert(at, draw(st.sampled_from(letters)))
        elif chars and at < len(chars):
            if edit == "swapcase":
                chars[at] = chars[at].swapcase()
            elif edit == "delete":
                del chars[at]
            else:
                chars[at] = draw(st.sampled_from(letters))
    return "".join(chars)


@st.composite
def lookups(draw: st.DrawFn, max_size: int = 24) -> tuple[str, list[str], float]:
    letters = draw(ALPHABET)
    words = st.text(st.sampled_from(letters), max_size=max_size)
    names = draw(st.lists(words, max_size=30))
    if len(names) > 0 and draw(st.booleans()):  # a near miss of one of the names, or of a new one
        name = draw(near(draw(st.sampled_from(names)), letters))
    else:
        name = draw(words)
    names += draw(st.lists(near(name, letters), max_size=5))  # ties and near ties
    return name, names, draw(CUTOFFS)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lookups())
@example(("ab", ["ac", "ad"], 0.1))  # a tie goes to the greater name, as heapq.nlargest does
@example(("abcd", ["abce", "xbcd"], 0.75))  # ratio exactly the cutoff (6 / 8)
@example(("abcde", ["abcxy"], 0.6))  # 6 / 10: the float ratio equals the float cutoff
@example(("", ["", "a"], 0.0))  # both empty: difflib's ratio is 1.0
@example(("", ["b", "a"], 0.0))  # every ratio 0.0, kept at cutoff 0: the greatest name
@example(("Revenue", ["revenue", "REVENUE"], 0.6))  # case counts
def test_closest_is_get_close_matches(case: tuple[str, list[str], float]) -> None:
    name, names, cutoff = case
    assert closest(name, names, cutoff) == expected(name, names, cutoff)


@st.composite
def long_lookups(draw: st.DrawFn) -> tuple[str, list[str], float]:
    letters = draw(st.sampled_from(["ab", "abc-", "aé字"]))
    long = st.text(st.sampled_from(letters), min_size=190, max_size=240)
    name = draw(long)
    names = draw(st.lists(near(name, letters), max_size=6)) + draw(st.lists(long, max_size=3))
    return name, names, draw(CUTOFFS)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(long_lookups())
def test_long_names_where_difflib_drops_popular_characters(
    case: tuple[str, list[str], float],
) -> None:
    """From 200 characters difflib's autojunk ignores frequent characters of `name`, so its
    ratio falls below the LCS bound: the bound still only prunes, the answer is difflib's."""
    name, names, cutoff = case
    assert closest(name, names, cutoff) == expected(name, names, cutoff)


@settings(max_examples=200, deadline=None)
@given(st.lists(lookups(), min_size=1, max_size=8))
def test_one_index_answers_many_lookups(cases: list[tuple[str, list[str], float]]) -> None:
    names = [n for _, pool, _ in cases for n in pool]
    index = NearNames(names)
    budget = HintBudget()
    for name, _, cutoff in cases:
        assert index.closest(name, cutoff, budget) == expected(name, names, cutoff)


@given(st.integers(1, 500), st.sampled_from([0.0, 0.3, 0.6, 0.75, 0.9, 1.0]) | st.floats(0, 1))
def test_least_common_is_the_float_threshold(total: int, cutoff: float) -> None:
    least = least_common(total, cutoff)
    assert 2.0 * least / total >= cutoff
    assert least == 0 or 2.0 * (least - 1) / total < cutoff


def test_cutoff_outside_0_1_is_refused_like_difflib() -> None:
    with pytest.raises(ValueError, match="cutoff"):
        closest("a", ["a"], 1.5)


def test_did_you_mean_phrases_the_match() -> None:
    assert did_you_mean("revenue-defintion", ["revenue-definition", "refunds"], 0.75) == (
        "did you mean 'revenue-definition'?"
    )
    assert did_you_mean("zzz", ["revenue-definition"], 0.75) is None


def test_a_lookup_compares_only_names_of_a_fitting_length() -> None:
    names = [f"p{'x' * (i % 60)}{i}" for i in range(3000)]  # lengths 2 to 64
    index = NearNames(names)
    start, stop, most = index.window("pxxxxxxxxxx-1", HINT_CUTOFF)
    assert 0 < stop - start < len(index) / 3
    assert min(most) >= 8 and max(most) <= 21  # 13 characters: 0.6x to 1.67x at 0.75


def test_budget_is_charged_before_the_work_and_closes_for_good() -> None:
    names = NearNames([f"page-{i}" for i in range(100)])
    # Exactly one lookup: 100 names in its window, one difflib ratio (7 by 6 characters).
    budget = HintBudget(units=LOOKUP_UNITS + 100 + DIFFLIB_UNITS + 7 * 6)
    assert names.closest("page-7x", HINT_CUTOFF, budget) == "page-7"
    assert budget.units == 0 and not budget.closed
    assert names.closest("page-12x", HINT_CUTOFF, budget) is SKIPPED
    assert budget.closed
    assert names.closest("x", HINT_CUTOFF, budget) is SKIPPED  # even a cheap one
    assert budget.notice() == BUDGET_NOTICE
    assert budget.notice() is None


def broken_link_project(tmp_path: Path, count: int) -> Project:
    """Pages `page-0`..`page-39`, and one page that links to `count` targets that are not
    there: a near miss of a page, then a name like no page, in turn."""
    pages = {f"knowledge/global/page-{i}.md": f"# Page {i}\n" for i in range(40)}
    targets = [f"page-{i}x" if i % 2 == 0 else f"nothing-like-it-{i}" for i in range(count)]
    body = "\n".join(f"[[{t}]]" for t in targets) + "\n[[page-0x]]\n"  # the first, once more
    pages["knowledge/global/links.md"] = "---\nsummary: links\n---\n" + body
    return Project(tmp_path / "p", git=False).write({**SEMANTICS, **pages})


def kb103_hints(project: Project, budget: HintBudget | None = None) -> list[str | None]:
    config = config_from_mapping({}, "test")
    analysis = analyse(project.root, config, use_cache=False, today=dt.date(2026, 5, 28))
    if budget is None:
        found = [d for d in analysis.diagnostics if d.code == "KB103"]
        return [d.hint for d in found]
    context = RuleContext(
        pages=[p for p in analysis.pages if p.parsed.text_ok],
        index=analysis.index,
        layer=analysis.layer,
        config=config,
        today=dt.date(2026, 5, 28),
        _hint_budget=budget,
    )
    return [f.hint for _, f in check_references(context) if f.code == "KB103"]


def test_rule_hints_are_difflibs_on_a_project(tmp_path: Path) -> None:
    hints = kb103_hints(broken_link_project(tmp_path, 30))
    ids = [f"page-{i}" for i in range(40)] + ["links"]
    targets = [f"page-{i}x" if i % 2 == 0 else f"nothing-like-it-{i}" for i in range(30)]
    old = [expected(t, ids, HINT_CUTOFF) for t in [*targets, "page-0x"]]
    assert hints == [f"did you mean '{o}'?" if o else None for o in old]
    assert hints[0] == "did you mean 'page-0'?" and hints[1] is None


def test_over_budget_hints_stop_with_one_notice_the_same_every_run(tmp_path: Path) -> None:
    project = broken_link_project(tmp_path, 30)
    full = kb103_hints(project)
    # Room for a few lookups over 41 ids, counted in units of work, not time: the same
    # findings get hints on any machine.
    capped = kb103_hints(project, HintBudget(units=2000))
    assert capped == kb103_hints(project, HintBudget(units=2000))
    cut = capped.index(BUDGET_NOTICE)
    assert 2 < cut < 30
    assert capped[:cut] == full[:cut]  # the hints given are the full run's
    assert capped[cut + 1 : -1] == [None] * (len(capped) - cut - 2)
    assert capped[-1] == full[-1] == "did you mean 'page-0'?"  # looked up before the cap


def test_each_scope_is_offered_only_the_ids_it_can_see(tmp_path: Path) -> None:
    """One index per set of visible scopes: a user's near miss names their own page or a
    global one, never another user's page."""
    project = Project(tmp_path / "p", git=False).write(
        {
            **SEMANTICS,
            "knowledge/global/revenue-definition.md": "# Revenue\n",
            "knowledge/user/ana/churn-notes.md": "# Churn\n",
            "knowledge/user/bob/churn-notes-2.md": "# Churn\n",
            "knowledge/user/ana/links.md": "[[churn-note]] [[revenue-defintion]]\n",
            "knowledge/user/bob/links.md": "[[churn-note]] [[revenue-defintion]]\n",
            "knowledge/global/links.md": "[[churn-note]]\n",
        }
    )
    analysis = analyse(project.root, config_from_mapping({}, "test"), use_cache=False)
    found = [(d.path, d.hint) for d in analysis.diagnostics if d.code == "KB103"]
    assert found == [
        ("knowledge/global/links.md", None),
        ("knowledge/user/ana/links.md", "did you mean 'churn-notes'?"),
        ("knowledge/user/ana/links.md", "did you mean 'revenue-definition'?"),
        ("knowledge/user/bob/links.md", "did you mean 'churn-notes-2'?"),
        ("knowledge/user/bob/links.md", "did you mean 'revenue-definition'?"),
    ]
