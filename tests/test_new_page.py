"""knowl new: a person's new page with valid frontmatter, in the scope and folder given."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke

ENTITY = "shop_pg.orders.total_revenue"


@pytest.fixture()
def proj(tmp_path: Path) -> Project:
    project = Project(tmp_path / "repo").write(
        {
            **SEMANTICS,
            "knowl.toml": "[rules]\nKB202 = 'off'\n",  # home.md carries no review date
            "knowledge/global/home.md": "---\nsummary: Home.\n---\n# Home\n",
        }
    )
    project.commit("init")
    return project


def new(proj: Project, *args: str, code: int = 0) -> dict[str, Any]:
    result = invoke(["new", "--repo", str(proj.root), "--json", *args], code=code)
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def test_a_new_page_binds_its_entities_and_checks_clean(proj: Project) -> None:
    answer = new(proj, "Total revenue", "--sl-ref", ENTITY, "--usage-mode", "definition")
    assert answer["action"] == "created"
    assert answer["path"] == "knowledge/global/total-revenue.md"
    text = (proj.root / answer["path"]).read_text()
    assert text.startswith("---\ntitle: Total revenue\nsl_refs:\n- shop_pg.orders.total_revenue\n")
    assert "usage_mode: definition\n" in text
    assert f"    {ENTITY}: {FP_SUM_AMOUNT}\n" in text
    assert '  last_validated_at: "' in text
    # The new page is as valid as any: it draws no finding .
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"])
    found = json.loads(result.stdout)["diagnostics"]
    assert [d for d in found if d["path"] == answer["path"]] == []


def test_a_measure_changed_after_new_is_drift(proj: Project) -> None:
    new(proj, "Total revenue", "--sl-ref", ENTITY)
    proj.commit("page")
    orders = proj.root / "semantics/shop/orders.yaml"
    orders.write_text(orders.read_text().replace('expr: "sum(amount)"', 'expr: "sum(amount) - 1"'))
    proj.commit("measure changed")
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"])
    found = [d for d in json.loads(result.stdout)["diagnostics"] if d["code"] == "KB201"]
    assert [d["path"] for d in found] == ["knowledge/global/total-revenue.md"]


def test_folder_scope_and_name(proj: Project) -> None:
    answer = new(proj, "Refund policy", "--folder", "finance/policies", "--category", "decision")
    assert answer["path"] == "knowledge/global/finance/policies/refund-policy.md"
    mine = new(proj, "My notes", "--user", "alice", "--name", "notes")
    assert mine["path"] == "knowledge/user/alice/notes.md"
    text = (proj.root / mine["path"]).read_text()
    assert "category" not in text and text.startswith("---\ntitle: My notes\n")


def test_an_id_the_scope_holds_is_refused_and_nothing_changes(proj: Project) -> None:
    before = (proj.root / "knowledge/global/home.md").read_bytes()
    answer = new(proj, "Home", "--folder", "elsewhere", code=1)
    assert answer["action"] == "refused"
    assert "already exists in global (knowledge/global/home.md)" in answer["message"]
    assert not (proj.root / "knowledge/global/elsewhere").exists()
    assert (proj.root / "knowledge/global/home.md").read_bytes() == before


def test_an_error_finding_refuses_with_its_position(proj: Project) -> None:
    answer = new(proj, "Bad", "--sl-ref", "shop_pg.orders.nope", code=1)
    assert answer["action"] == "refused"
    [finding] = [d for d in answer["diagnostics"] if d["severity"] == "error"]
    assert (finding["code"], finding["line"], finding["column"]) == ("KB101", 4, 3)
    assert not (proj.root / "knowledge/global/bad.md").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--folder", "../../etc"],
        ["--folder", "/etc"],
        ["--folder", "a/./b"],
        ["--folder", ".obsidian"],
        ["--folder", "a\x1bb"],
        ["--name", "../x"],
        ["--name", "x.md"],
        ["--user", "../bob"],
    ],
)
def test_names_that_would_lead_out_or_hide_the_page_are_usage_errors(
    proj: Project, args: list[str]
) -> None:
    result = invoke(["new", "--repo", str(proj.root), "X", *args], code=2)
    assert "Traceback" not in result.stderr
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=proj.root,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""


def test_commit_commits_exactly_the_page(proj: Project) -> None:
    (proj.root / "scratch.txt").write_text("not mine\n")
    answer = new(proj, "Churn", "--commit")
    assert answer["committed"] is True
    shown = proj.run_git("show", "--name-only", "--format=%s", "HEAD").split()
    assert shown == ["New", "page:", "Churn", "knowledge/global/churn.md"]
    assert "?? scratch.txt" in proj.run_git("status", "--porcelain")


def test_text_output_names_the_page(proj: Project) -> None:
    result = invoke(["new", "--repo", str(proj.root), "Cohorts"])
    assert "created: cohorts (knowledge/global/cohorts.md)" in result.stderr


def test_a_title_holding_a_secret_is_not_spelt_in_the_answer(proj: Project) -> None:
    key = "AKIAIOSFODNN7EXAMPLE"
    result = invoke(["new", "--repo", str(proj.root), f"AWS {key} key", "--json"], code=1)
    assert key.lower() not in result.stdout.lower() and key not in result.stderr
    assert not list((proj.root / "knowledge/global").glob("*akia*"))


@pytest.mark.parametrize("name", ["zero\u200bwidth", "rtl\u202eevil", "dot.", "space "])
def test_invisible_or_vanishing_names_are_refused(proj: Project, name: str) -> None:
    result = invoke(["new", "--repo", str(proj.root), "X", "--name", name], code=2)
    assert "Traceback" not in result.stderr
