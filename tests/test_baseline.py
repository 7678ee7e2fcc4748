"""`--baseline REF`: adopting the gate on a repository that already has findings (issue 11,
point 6). Only findings new against the project at REF are reported and fail the run; a
finding whose line moved is not new."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import SEMANTICS, Project, invoke

OLD = """\
---
sl_ref: [x]
---
# Old

See [[missing]].
"""
# Two lines above the old link (it moved), the same link once more, and a new broken link.
MOVED = """\
---
sl_ref: [x]
---
# Old

A new paragraph
pushes everything down.

See [[missing]].

And [[missing]] again, and [[also-missing]].
"""


def _base(project: Callable[..., Project], prefix: str = "") -> tuple[Project, str]:
    proj = project(
        {
            **{prefix + k: v for k, v in SEMANTICS.items()},
            prefix + "knowl.toml": "[rules]\nKB202 = 'off'\n",
            prefix + "knowledge/global/old.md": OLD,
            prefix + "knowledge/global/clean.md": "# Clean\n",
        },
        commit=False,
    )
    base = proj.commit("base with findings")
    proj.run_git("checkout", "-q", "-b", "feature")
    return proj, base


def _json(result_stdout: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(result_stdout)
    return document


def test_only_new_findings_are_reported(project: Callable[..., Project]) -> None:
    proj, base = _base(project)
    proj.write({"knowledge/global/old.md": MOVED}).commit("more")
    everything = _json(
        invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1).stdout
    )
    assert [(d["code"], d["line"]) for d in everything["diagnostics"]] == [
        ("KB006", 2),
        ("KB103", 9),
        ("KB103", 11),
        ("KB103", 11),
    ]
    result = invoke(
        ["check", "--repo", str(proj.root), "--format", "json", "--baseline", "main"], code=1
    )
    document = _json(result.stdout)
    # The KB006 and the first [[missing]] are known (the link moved from line 6 to 9); the
    # second [[missing]] and [[also-missing]] are new.
    assert [(d["code"], d["line"], d["column"]) for d in document["diagnostics"]] == [
        ("KB103", 11, 5),
        ("KB103", 11, 28),
    ]
    assert document["baseline"] == {"ref": "main", "commit": base, "hidden": 2}
    assert document["summary"] == {"error": 2, "warning": 0, "info": 0}
    assert "2 known finding(s) hidden" in result.stderr


def test_nothing_new_passes_the_gate(project: Callable[..., Project]) -> None:
    proj, _ = _base(project)
    proj.write({"knowledge/global/old.md": OLD.replace("# Old", "# Old\n\nMoved down.")})
    proj.commit("only moves")
    invoke(["check", "--repo", str(proj.root)], code=1)
    result = invoke(["check", "--repo", str(proj.root), "--baseline", "main", "--strict"])
    assert "error" not in result.stdout and "2 known finding(s) hidden" in result.stderr


def test_build_gates_on_new_errors_only(project: Callable[..., Project]) -> None:
    proj, _ = _base(project)
    invoke(["build", "--repo", str(proj.root)], code=1)  # refused: the known error
    published = invoke(["build", "--repo", str(proj.root), "--baseline", "main"])
    assert "published" in published.stderr
    proj.write({"knowledge/global/old.md": MOVED}).commit("new errors")
    refused = invoke(
        ["build", "--repo", str(proj.root), "--baseline", "main", "--format", "json"], code=1
    )
    assert "refused" in refused.stderr
    assert len(_json(refused.stdout)["diagnostics"]) == 2


def test_project_in_a_sub_folder_and_sarif(project: Callable[..., Project]) -> None:
    proj, _ = _base(project, prefix="analytics/")
    proj.write({"analytics/knowledge/global/old.md": MOVED}).commit("more")
    result = invoke(
        [
            "check",
            "--repo",
            str(proj.root / "analytics"),
            "--format",
            "sarif",
            "--baseline",
            "main",
        ],
        code=1,
    )
    results = json.loads(result.stdout)["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert len(results) == 2 and uris == {"analytics/knowledge/global/old.md"}


def test_uncommitted_changes_are_compared_too(project: Callable[..., Project]) -> None:
    proj, _ = _base(project)
    proj.write({"knowledge/global/new.md": "[[nowhere]]\n"})  # not committed
    document = _json(
        invoke(
            ["check", "--repo", str(proj.root), "--format", "json", "--baseline", "HEAD"], code=1
        ).stdout
    )
    assert [(d["path"], d["code"]) for d in document["diagnostics"]] == [
        ("knowledge/global/new.md", "KB103")
    ]


@pytest.mark.parametrize("ref", ["no-such-branch", "--upload-pack=touch", ""])
def test_a_bad_ref_is_exit_2_and_sarif_says_so(project: Callable[..., Project], ref: str) -> None:
    proj, _ = _base(project)
    result = invoke(
        ["check", "--repo", str(proj.root), "--format", "sarif", f"--baseline={ref}"], code=2
    )
    assert result.stderr.count("\n") == 1 and "--baseline" in result.stderr
    run = json.loads(result.stdout)["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is False


def test_shallow_clone_without_the_base_says_to_fetch(
    project: Callable[..., Project], tmp_path: Path
) -> None:
    proj, _ = _base(project)
    proj.write({"knowledge/global/old.md": MOVED}).commit("more")
    clone = tmp_path / "clone"
    subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--depth",
            "1",
            "--branch",
            "feature",
            f"file://{proj.root}",
            str(clone),
        ],
        check=True,
    )
    result = invoke(["check", "--repo", str(clone), "--baseline", "origin/main"], code=2)
    assert "git fetch" in result.stderr
    subprocess.run(
        ["git", "fetch", "-q", "--unshallow", "origin", "main:refs/remotes/origin/main"],
        cwd=clone,
        check=True,
    )
    invoke(["check", "--repo", str(clone), "--baseline", "origin/main"], code=1)


def test_the_repository_is_left_as_it_was(project: Callable[..., Project]) -> None:
    proj, _ = _base(project)
    invoke(["check", "--repo", str(proj.root)], code=1)  # its caches: .knowl/ (ignored)
    before = proj.run_git("status", "--porcelain", "--ignored")
    worktrees = proj.run_git("worktree", "list")
    invoke(["check", "--repo", str(proj.root), "--baseline", "main"], code=0)
    assert proj.run_git("worktree", "list") == worktrees
    assert proj.run_git("status", "--porcelain", "--ignored") == before
