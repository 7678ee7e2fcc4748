"""Paths that CI understands, and paths that open from where you stand.

GitHub resolves annotation and SARIF paths from the repository's root, so on a runner (and
from outside the work tree) a project in a sub-folder of a larger repository prints
`analytics/knowledge/...` in github and sarif output; json stays project-relative (it adds
`repo_path`). Run from inside the repository, text and github paths are given from the current
folder, as ruff and eslint give them. Without git, every format is project-relative.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from knowl_build.app.checking import rule_table
from knowl_build.core import diagnostics
from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.output import github, sarif
from tests.helpers import SEMANTICS, Project, invoke

FILES: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/a.md": "# A\n\nSee [[b]] and [[nope]].\n",
    "knowledge/global/b.md": "# B\n",
}
PAGE = "knowledge/global/a.md"


def monorepo(tmp_path: Path) -> Project:
    mono = Project(tmp_path / "mono")
    mono.write({"README.md": "# Monorepo\n", "src/app.py": "print('hi')\n"})
    mono.write({f"analytics/{path}": text for path, text in FILES.items()})
    mono.commit("monorepo")
    return mono


def test_github_annotations_and_step_summary_use_repository_paths(tmp_path: Path) -> None:
    mono = monorepo(tmp_path)
    summary = tmp_path / "summary.md"
    result = invoke(
        ["check", "--repo", str(mono.root / "analytics"), "--format", "github"],
        code=1,
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert result.stdout.splitlines() == [
        "::error file=analytics/knowledge/global/a.md,line=3,col=15,endLine=3,endColumn=22,"
        "title=KB103::[[nope]] points at no page visible from global scope"
    ]
    assert f"| `analytics/{PAGE}:3:15` | error | KB103 |" in summary.read_text()


def test_sarif_uses_repository_paths(tmp_path: Path) -> None:
    mono = monorepo(tmp_path)
    log = json.loads(
        invoke(
            ["check", "--repo", str(mono.root / "analytics"), "--format", "sarif"], code=1
        ).stdout
    )
    locations = [
        r["locations"][0]["physicalLocation"]["artifactLocation"] for r in log["runs"][0]["results"]
    ]
    assert locations == [{"uri": f"analytics/{PAGE}", "uriBaseId": "%SRCROOT%"}]


def test_sarif_file_option_uses_repository_paths_whatever_the_format(tmp_path: Path) -> None:
    mono = monorepo(tmp_path)
    out = tmp_path / "knowl.sarif"
    result = invoke(["check", "--repo", str(mono.root / "analytics"), "--sarif", str(out)], code=1)
    assert result.stdout.startswith(f"{PAGE}:3:15: error KB103")  # text, project-relative
    log = json.loads(out.read_text(encoding="utf-8"))
    [location] = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
    ]
    assert location == f"analytics/{PAGE}"


def test_json_keeps_project_paths_and_adds_the_repository_path(tmp_path: Path) -> None:
    mono = monorepo(tmp_path)
    result = invoke(["check", "--repo", str(mono.root / "analytics"), "--format", "json"], code=1)
    [finding] = json.loads(result.stdout)["diagnostics"]
    assert (finding["path"], finding["repo_path"]) == (PAGE, f"analytics/{PAGE}")


def test_text_keeps_project_paths(tmp_path: Path) -> None:
    mono = monorepo(tmp_path)
    result = invoke(["check", "--repo", str(mono.root / "analytics")], code=1)
    assert result.stdout.splitlines()[0] == (
        f"{PAGE}:3:15: error KB103 [[nope]] points at no page visible from global scope"
    )


def test_project_at_the_repository_root_is_unchanged(tmp_path: Path) -> None:
    proj = Project(tmp_path / "proj").write(FILES)
    proj.commit()
    github_out = invoke(["check", "--repo", str(proj.root), "--format", "github"], code=1).stdout
    assert github_out.startswith(f"::error file={PAGE},line=3")
    [finding] = json.loads(
        invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1).stdout
    )["diagnostics"]
    assert finding["repo_path"] == finding["path"] == PAGE


def test_without_git_every_format_is_project_relative(tmp_path: Path) -> None:
    proj = Project(tmp_path / "plain", git=False).write(FILES)
    root = str(proj.root)
    document = json.loads(invoke(["check", "--repo", root, "--format", "json"], code=1).stdout)
    rows = {(d["code"], d["path"], d["repo_path"]) for d in document["diagnostics"]}
    assert rows == {("KB009", ".", "."), ("KB103", PAGE, PAGE)}
    github_out = invoke(["check", "--repo", root, "--format", "github"], code=1).stdout
    assert "file=.,line=1" in github_out and f"file={PAGE},line=3" in github_out
    log = json.loads(invoke(["check", "--repo", root, "--format", "sarif"], code=1).stdout)
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
    }
    assert uris == {".", PAGE}


def test_project_level_findings_become_the_project_folder() -> None:
    # Findings about the whole project (KB009, KB010) sit at ".": from the repository's root
    # that is the project's folder, or "." when the project is the repository.
    finding = Diagnostic(".", 1, 1, "KB010", "warning", "git history is shallow")
    assert diagnostics.repo_path(".", "analytics/") == "analytics"
    assert diagnostics.repo_path(".", "") == "."
    assert diagnostics.repo_path(PAGE, "a/b c/") == f"a/b c/{PAGE}"
    assert github.render([finding], "analytics/").startswith(
        "::warning file=analytics,line=1,col=1,"
    )
    assert github.render([finding]).startswith("::warning file=.,line=1,col=1,")
    location = sarif.document([finding], rule_table(Config()), "analytics/")["runs"][0]["results"][
        0
    ]["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "analytics"
    [row] = diagnostics.diagnostics_document([finding], "deep/er/")["diagnostics"]
    assert row["repo_path"] == "deep/er"


def test_artifact_diagnostics_do_not_depend_on_the_repository_layout() -> None:
    finding = Diagnostic(PAGE, 1, 1, "KB103", "error", "x")
    [row] = diagnostics.diagnostics_document([finding])["diagnostics"]
    assert "repo_path" not in row


def _check_from(folder: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    """`knowl check ARGS` run as a process from `folder`: its stdout lines."""
    result = subprocess.run(
        [sys.executable, "-m", "knowl_build", "check", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "GITHUB_ACTIONS": "", **(env or {})},
    )
    assert result.returncode == 1, result.stderr
    return result.stdout.splitlines()


def test_text_paths_open_from_the_current_folder(tmp_path: Path) -> None:
    mono = monorepo(tmp_path)
    [line, *_] = _check_from(mono.root, "--repo", "analytics")
    assert line.startswith(f"analytics/{PAGE}:3:15: error KB103 ")
    assert (mono.root / line.split(":")[0]).is_file()
    (mono.root / "src/deep").mkdir()
    [line, *_] = _check_from(mono.root / "src/deep", "--repo", "../../analytics")
    assert line.startswith(f"../../analytics/{PAGE}:3:15: error KB103 ")
    assert (mono.root / "src/deep" / line.split(":")[0]).resolve().is_file()
    # In the project itself, paths are as they always were.
    [line, *_] = _check_from(mono.root / "analytics")
    assert line.startswith(f"{PAGE}:3:15: ")


def test_github_paths_from_the_current_folder_except_on_a_runner(tmp_path: Path) -> None:
    mono = monorepo(tmp_path)
    here = _check_from(mono.root / "analytics", "--format", "github")
    assert here[0].startswith(f"::error file={PAGE},line=3,col=15,")
    runner = _check_from(
        mono.root / "analytics", "--format", "github", env={"GITHUB_ACTIONS": "true"}
    )
    assert runner[0].startswith(f"::error file=analytics/{PAGE},line=3,col=15,")
    # SARIF keeps repository-root URIs wherever it runs from.
    log = json.loads("\n".join(_check_from(mono.root / "analytics", "--format", "sarif")))
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"] == f"analytics/{PAGE}"
