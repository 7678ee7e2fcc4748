"""`knowl eval` on real git repositories: pass, fail by rank and by min_mrr, user scope, the
JSON answer, hostile eval files (one line, exit 2, with a position), and `--baseline`."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from knowl_build.reader.evaluation import ndcg
from tests.helpers import Project, invoke


def page(title: str, body: str) -> str:
    return f"---\ntitle: {title}\nsummary: {title}.\n---\n# {title}\n\n{body}\n"


PAGES = {
    "knowledge/global/revenue.md": page("Revenue", "Revenue is completed order amounts."),
    "knowledge/global/churn.md": page("Churn", "Churn is the share of customers who leave."),
    "knowledge/global/calendar.md": page("Fiscal calendar", "The fiscal year starts in April."),
    "knowledge/user/alice/deck.md": page("Board deck", "Charts the board expects."),
}

EVAL = """\
questions:
  - query: revenue
    pages: [revenue]
    k: 1
  - query: churn customers
    pages: [churn]
  - query: fiscal calendar
    pages: [calendar]
    k: 2
"""


@pytest.fixture
def built(project: Callable[..., Project]) -> Project:
    proj = project({**PAGES, "knowl-eval.yaml": EVAL})
    invoke(["build", "--repo", str(proj.root), "-q"])
    return proj


def run(proj: Project, *args: str, code: int = 0) -> Any:
    """The JSON answer of `knowl eval`."""
    return json.loads(invoke(["eval", "--repo", str(proj.root), "--json", *args], code=code).stdout)


def test_every_question_in_its_top_k_passes(built: Project) -> None:
    result = invoke(["eval", "--repo", str(built.root)])
    lines = result.stdout.splitlines()
    assert lines[0].startswith("PASS  knowl-eval.yaml:2:5: 'revenue': rank 1 (k=1)")
    assert lines[-1].startswith("3 questions: 3 passed, 0 failed; MRR@10 1.000")


def test_the_json_answer(built: Project) -> None:
    answer = run(built)
    assert sorted(answer) == ["baseline", "build", "file", "questions", "summary", "version"]
    assert answer["file"] == "knowl-eval.yaml" and answer["baseline"] is None
    first = answer["questions"][0]
    assert first == {
        "query": "revenue",
        "user": None,
        "k": 1,
        "line": 2,
        "column": 5,
        "pages": ["revenue"],
        "rank": 1,
        "ranks": [{"page": "revenue", "rank": 1}],
        "missing": [],
        "top": ["global:revenue"],
        "recall_at_k": 1.0,
        "reciprocal_rank": 1.0,
        "ndcg_at_10": 1.0,
        "status": "pass",
    }
    assert answer["summary"] == {
        "questions": 3,
        "passed": 3,
        "failed": 0,
        "known": 0,
        "mrr_at_10": 1.0,
        "recall_at_k": 1.0,
        "ndcg_at_10": 1.0,
        "min_mrr": 0.0,
        "mrr_failed": False,
        "cutoff": 10,
    }


def test_a_page_below_its_k_fails_the_run(built: Project) -> None:
    # "churn" ranks 1 for its own query; asked for the revenue page at k=1, it is not first.
    built.write({"knowl-eval.yaml": "questions:\n  - query: churn\n    pages: [revenue]\n"})
    answer = run(built, code=1)
    question = answer["questions"][0]
    assert question["status"] == "fail" and question["rank"] is None
    assert question["recall_at_k"] == 0.0 and question["reciprocal_rank"] == 0.0
    built.write(
        {"knowl-eval.yaml": "questions:\n  - query: revenue churn\n    pages: [churn]\n    k: 1\n"}
    )
    text = invoke(["eval", "--repo", str(built.root)], code=1).stdout
    assert text.startswith("FAIL  knowl-eval.yaml:2:5: 'revenue churn': rank 2 (k=1)")
    assert "expected churn: rank 2" in text and "top 1: global:revenue" in text


def test_min_mrr_missed_fails_the_run(built: Project) -> None:
    built.write(
        {"knowl-eval.yaml": "questions:\n  - query: revenue churn\n    pages: [churn]\n    k: 5\n"}
    )
    assert run(built)["summary"]["mrr_at_10"] == 0.5
    answer = run(built, "--min-mrr", "0.6", code=1)
    assert answer["summary"]["mrr_failed"] is True
    assert answer["questions"][0]["status"] == "pass"
    built.write({"knowl.toml": "[eval]\nmin_mrr = 0.6\n"})
    text = invoke(["eval", "--repo", str(built.root)], code=1).stdout
    assert "MRR@10 0.500 (below min_mrr 0.6)" in text
    built.write({"knowl.toml": "[eval]\nmin_mrr = 0.5\n"})
    invoke(["eval", "--repo", str(built.root)])


def test_a_user_question_sees_that_users_pages_and_global_ones(built: Project) -> None:
    built.write(
        {
            "knowl-eval.yaml": (
                "questions:\n"
                "  - {query: board deck, pages: [deck], user: alice}\n"
                "  - {query: board deck, pages: [deck]}\n"
                "  - {query: board deck revenue, pages: [deck, revenue], user: bob}\n"
            )
        }
    )
    questions = run(built, code=1)["questions"]
    assert [q["status"] for q in questions] == ["pass", "fail", "fail"]
    assert questions[0]["top"][0] == "user:alice:deck"
    # Another user's page answers as one that does not exist.
    assert questions[1]["missing"] == [
        {"page": "deck", "reason": "no page 'deck' visible to anonymous"}
    ]
    bob = questions[2]
    assert bob["ranks"] == [{"page": "deck", "rank": None}, {"page": "revenue", "rank": 1}]
    assert bob["recall_at_k"] == 0.5


def test_ndcg_is_binary_with_a_log_discount() -> None:
    assert ndcg([1], 1) == 1.0
    assert ndcg([2], 1) == pytest.approx(1 / math.log2(3))
    assert ndcg([1, 3], 2) == pytest.approx((1 + 0.5) / (1 + 1 / math.log2(3)))
    assert ndcg([11], 1) == 0.0 and ndcg([], 3) == 0.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "knowl-eval.yaml:1:1: expected a mapping with a 'questions' list"),
        ("- a\n", "knowl-eval.yaml:1:1: expected a mapping with a 'questions' list"),
        ("questions: []\n", "knowl-eval.yaml:1:12: 'questions' is empty"),
        ("questions: {a: 1}\n", "knowl-eval.yaml:1:12: 'questions' must be a list"),
        ("k: 3\n", "knowl-eval.yaml:1:1: 'questions' is missing"),
        ("qestions: []\n", "knowl-eval.yaml:1:1: the eval file: unknown key 'qestions'"),
        (
            "questions:\n  - {query: a, pages: [x], kk: 2}\n",
            "knowl-eval.yaml:2:28: question 1: unknown key 'kk' (expected query, pages, k, user)",
        ),
        ("questions:\n  - {query: a}\n", "knowl-eval.yaml:2:5: question 1: 'pages' is missing"),
        (
            "questions:\n  - {query: a, pages: []}\n",
            "knowl-eval.yaml:2:23: question 1: 'pages' is empty",
        ),
        (
            "questions:\n  - {query: a, pages: x}\n",
            "knowl-eval.yaml:2:23: question 1: 'pages' must be a list of page names",
        ),
        (
            "questions:\n  - {query: 3, pages: [x]}\n",
            "knowl-eval.yaml:2:13: question 1: 'query' must be a non-empty string",
        ),
        (
            "questions:\n  - {query: a, pages: [x], k: 0}\n",
            "knowl-eval.yaml:2:31: question 1: 'k' must be from 1 to 100, got 0",
        ),
        (
            "questions:\n  - {query: a, pages: [x], k: 101}\n",
            "knowl-eval.yaml:2:31: question 1: 'k' must be from 1 to 100, got 101",
        ),
        (
            "questions:\n  - {query: a, pages: [x], k: yes}\n",
            "knowl-eval.yaml:2:31: question 1: 'k' must be an integer from 1 to 100",
        ),
        (
            "questions:\n  - {query: a, pages: [x], user: ../bob}\n",
            "knowl-eval.yaml:2:34: question 1: 'user': not a valid user name: it starts with '.'",
        ),
        (
            "questions:\n  - {query: a, pages: ['user:a/b:x']}\n",
            "knowl-eval.yaml:2:24: question 1: PAGE user:<owner>:<id>: not a valid user name",
        ),
        ("questions:\n  - a\n", "knowl-eval.yaml:2:5: question 1: expected a mapping"),
        ("questions: [\n", "knowl-eval.yaml:2:1: invalid YAML"),
        # A tag runs nothing: the value is read as the mapping it is.
        (
            "questions: !!python/object:os.system {}\n",
            "knowl-eval.yaml:1:12: 'questions' must be a list",
        ),
        ("k: 1\nk: 2\nquestions: []\n", "knowl-eval.yaml:2:1: key 'k' is repeated"),
        (
            "a: &a [*a]\nquestions: [1]\n",
            "knowl-eval.yaml:1:4: invalid YAML: an alias refers to itself",
        ),
    ],
)
def test_a_hostile_eval_file_is_one_line_and_exit_2(
    built: Project, text: str, message: str
) -> None:
    built.write({"knowl-eval.yaml": text})
    result = invoke(["eval", "--repo", str(built.root)], code=2)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"knowl: error: {message}"), lines


def test_too_many_questions_and_a_missing_file(built: Project) -> None:
    built.write({"knowl-eval.yaml": "questions:\n" + "  - {query: a, pages: [a]}\n" * 5001})
    result = invoke(["eval", "--repo", str(built.root)], code=2)
    assert "knowl-eval.yaml:2:3: more than 5000 questions" in result.stderr
    built.remove("knowl-eval.yaml")
    result = invoke(["eval", "--repo", str(built.root)], code=2)
    assert result.stderr.startswith("knowl: error: knowl-eval.yaml: no eval file (write one")
    built.write({"knowl.toml": "[eval]\nfile = '../outside.yaml'\n"})
    result = invoke(["eval", "--repo", str(built.root)], code=2)
    assert "'eval.file': must be a file inside the project, got '../outside.yaml'" in result.stderr


def test_build_evaluates_the_working_tree_and_leaves_the_build_alone(
    project: Callable[..., Project],
) -> None:
    proj = project({**PAGES, "knowl-eval.yaml": EVAL})
    invoke(["eval", "--repo", str(proj.root)], code=2)  # no build yet: exit 2, as search
    assert run(proj, "--build")["summary"]["passed"] == 3
    assert not (proj.root / ".knowl" / "build" / "CURRENT").exists()


# A page whose name is the query: it outranks the page that answers it.
SHADOW = page("Completed order amounts", "Completed order amounts, by day.")
BASE_EVAL = """\
questions:
  - query: completed order amounts
    pages: [revenue]
    k: 1
  - query: churn customers
    pages: [churn]
  - query: board deck
    pages: [deck]
"""


def test_baseline_fails_only_on_questions_that_passed_at_ref(
    project: Callable[..., Project],
) -> None:
    # The third question fails everywhere: the page is alice's and the question anonymous.
    proj = project({**PAGES, "knowl-eval.yaml": BASE_EVAL})
    proj.run_git("tag", "base")
    # A pull request adds a page that shadows the answer to the first question (k=1).
    proj.write({"knowledge/global/orders.md": SHADOW})
    proj.commit("Add a page about completed orders")
    answer = run(proj, "--build", "--baseline", "base", code=1)
    statuses = [q["status"] for q in answer["questions"]]
    assert statuses == ["fail", "pass", "known"]
    first = answer["questions"][0]
    assert first["rank"] == 2 and first["baseline"] == {"rank": 1, "passed": True}
    assert first["top"] == ["global:orders"]
    assert answer["baseline"]["ref"] == "base"
    assert answer["summary"]["known"] == 1 and answer["summary"]["failed"] == 1
    text = invoke(["eval", "--repo", str(proj.root), "--build", "--baseline", "base"], code=1)
    assert "FAIL  knowl-eval.yaml:2:5: 'completed order amounts': rank 2 (k=1)" in text.stdout
    assert "at the baseline: passed (rank 1)" in text.stdout
    assert "KNOWN knowl-eval.yaml:7:5: 'board deck'" in text.stdout

    # Without the shadowing page only the question that already failed at REF fails, and it
    # does not fail a run against REF; without a baseline it does.
    proj.remove("knowledge/global/orders.md")
    answer = run(proj, "--build", "--baseline", "base")
    statuses = [q["status"] for q in answer["questions"]]
    assert statuses == ["pass", "pass", "known"]
    run(proj, "--build", code=1)


def test_baseline_needs_a_revision(built: Project) -> None:
    result = invoke(["eval", "--repo", str(built.root), "--baseline", "nope"], code=2)
    assert "--baseline: 'nope' is not a commit, branch or tag here" in result.stderr
