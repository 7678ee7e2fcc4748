"""Writes are readable at once, and an agent's writes can wait for a person (issue 14).

Real git repositories in temp folders: `knowl store` (and supersede, review) rebuild a project
that has a build, so search and show find the write without `knowl build`; `[writes]
agent_status = "draft"` holds an agent's page as a draft that search skips until `knowl
review` promotes it.
"""

from __future__ import annotations

import json
from pathlib import Path

from knowl_build.app.project import Project as AppProject
from knowl_build.app.project import load_config
from knowl_build.app.writing import request, store
from knowl_build.artifacts.publication import current_name
from tests.helpers import SEMANTICS, Project, invoke

KB202_OFF = '[rules]\nKB202 = "off"\n'
DRAFTS = KB202_OFF + '[writes]\nagent_status = "draft"\n'
EXISTING = {
    "knowledge/global/deploy.md": "---\nsummary: How we deploy\ncategory: fact\n---\n# Deploy process\n\nWith the pipeline.\n"
}


def _project(tmp_path: Path, config: str = KB202_OFF, build: bool = True) -> Project:
    proj = Project(tmp_path / "kb").write({**SEMANTICS, **EXISTING, "knowl.toml": config})
    proj.commit("start")
    if build:
        invoke(["build", "--repo", str(proj.root)])
    return proj


def _search(proj: Project, query: str, *extra: str) -> list[str]:
    result = invoke(["search", query, "--repo", str(proj.root), "--json", *extra])
    return [hit["page"] for hit in json.loads(result.stdout)["hits"]]


def _store(proj: Project, title: str, content: str, *extra: str) -> str:
    args = ["store", "--repo", str(proj.root), "--category", "fact", "--title", title]
    return invoke([*args, "--content", content, *extra]).stderr


def _agent_store(proj: Project, title: str, content: str) -> dict[str, object]:
    root = proj.root
    project = AppProject(root, load_config(root))
    written = store(project, request(category="fact", title=title, content=content), agent=True)
    return written.to_json()


def test_a_stored_page_is_searchable_at_once(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    before = current_name(proj.root / ".knowl" / "build")
    stderr = _store(proj, "Churn window", "Churn counts subscriptions cancelled in 30 days.")
    after = current_name(proj.root / ".knowl" / "build")
    assert after != before
    assert f"rebuilt: build {after} is current" in stderr
    assert _search(proj, "churn subscriptions") == ["churn-window"]
    shown = json.loads(invoke(["show", "churn-window", "--repo", str(proj.root), "--json"]).stdout)
    assert shown["summary"] == "Churn counts subscriptions cancelled in 30 days."


def test_no_build_leaves_the_artifact_alone(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    before = current_name(proj.root / ".knowl" / "build")
    stderr = _store(proj, "Churn window", "Churn counts cancelled subscriptions.", "--no-build")
    assert "rebuilt" not in stderr
    assert current_name(proj.root / ".knowl" / "build") == before
    assert _search(proj, "churn") == []


def test_the_first_build_is_the_users(tmp_path: Path) -> None:
    proj = _project(tmp_path, build=False)
    stderr = _store(proj, "Churn window", "Churn counts cancelled subscriptions.")
    assert "not rebuilt: no build yet: run knowl build" in stderr
    assert (
        not (proj.root / ".knowl" / "build").exists()
        or current_name(proj.root / ".knowl" / "build") is None
    )


def test_errors_elsewhere_keep_the_last_good_build(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    before = current_name(proj.root / ".knowl" / "build")
    proj.write({"knowledge/global/broken.md": "---\nsummary: [unclosed\n---\nx\n"})
    stderr = _store(proj, "Churn window", "Churn counts cancelled subscriptions.")
    assert "not rebuilt: the project has 1 error finding(s)" in stderr
    assert current_name(proj.root / ".knowl" / "build") == before
    # The page was written all the same: the write and the build are separate steps.
    assert (proj.root / "knowledge" / "global" / "churn-window.md").is_file()


def test_an_agents_page_is_a_draft_until_reviewed(tmp_path: Path) -> None:
    proj = _project(tmp_path, DRAFTS)
    answer = _agent_store(proj, "Churn window", "Churn counts subscriptions cancelled in 30 days.")
    assert (answer["action"], answer["status"]) == ("inserted", "draft")
    build = answer["build"]
    assert isinstance(build, dict) and build["status"] == "published"
    text = (proj.root / "knowledge" / "global" / "churn-window.md").read_text(encoding="utf-8")
    assert "\nstatus: draft\n" in text
    # Readers skip drafts unless asked.
    assert _search(proj, "churn subscriptions") == []
    assert _search(proj, "churn subscriptions", "--status", "draft") == ["churn-window"]
    # The agent repeating itself writes nothing.
    again = _agent_store(proj, "Churn window", "Churn counts subscriptions cancelled in 30 days.")
    assert again["action"] == "duplicate"
    # A person's review promotes it, and the rebuild makes it found.
    result = invoke(["review", "churn-window", "--repo", str(proj.root)])
    assert "-status: draft\n+status: active\n" in result.stdout
    assert _search(proj, "churn subscriptions") == ["churn-window"]


def test_a_draft_never_retires_an_active_page(tmp_path: Path) -> None:
    proj = _project(tmp_path, DRAFTS)
    answer = _agent_store(proj, "Deploy process", "With the pipeline, and a manual approval.")
    assert answer["action"] == "inserted"
    assert answer["superseded"] is None
    assert answer["overlapping"] == "deploy"
    deploy = (proj.root / "knowledge" / "global" / "deploy.md").read_text(encoding="utf-8")
    assert deploy == EXISTING["knowledge/global/deploy.md"]
    # A person's store on the same subject supersedes as always.
    _store(proj, "Deploy process steps", "With the pipeline and a manual approval step.")
    assert "status: superseded" in (proj.root / "knowledge" / "global" / "deploy.md").read_text(
        encoding="utf-8"
    )


def test_a_persons_store_is_active_whatever_agent_status_says(tmp_path: Path) -> None:
    proj = _project(tmp_path, DRAFTS)
    _store(proj, "Churn window", "Churn counts subscriptions cancelled in 30 days.")
    text = (proj.root / "knowledge" / "global" / "churn-window.md").read_text(encoding="utf-8")
    assert "status:" not in text
    assert _search(proj, "churn subscriptions") == ["churn-window"]


def test_a_bad_agent_status_is_a_config_error(tmp_path: Path) -> None:
    proj = _project(tmp_path, '[writes]\nagent_status = "pending"\n', build=False)
    result = invoke(["check", "--repo", str(proj.root)], code=2)
    assert "writes.agent_status" in result.stderr and "active, draft" in result.stderr


def test_a_build_published_with_errors_is_rebuilt_alike(tmp_path: Path) -> None:
    proj = _project(tmp_path, build=False)
    proj.write({"knowledge/global/broken.md": "---\nsummary: [unclosed\n---\nx\n"})
    invoke(["build", "--repo", str(proj.root), "--allow-errors"])
    before = current_name(proj.root / ".knowl" / "build")
    stderr = _store(proj, "Churn window", "Churn counts subscriptions cancelled in 30 days.")
    assert current_name(proj.root / ".knowl" / "build") != before
    assert "rebuilt: build" in stderr
    assert _search(proj, "churn subscriptions") == ["churn-window"]
