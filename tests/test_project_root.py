"""Run from anywhere in the project: without --repo, the project root is found upward from the
current folder (knowl.toml, [tool.knowl] in pyproject.toml, or knowledge/), as git and ruff do.
Commands that only read an artifact given by --artifact need no project at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowl_build.app.project import find_project_root
from tests.helpers import SEMANTICS, Project, invoke

FILES: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/a.md": "# A\n\nSee [[b]] and [[nope]].\n",
    "knowledge/global/b.md": "# B\n",
}


def diagnostics(result: Any) -> list[tuple[str, str]]:
    return [(d["code"], d["path"]) for d in json.loads(result.stdout)["diagnostics"]]


def test_from_a_sub_folder_the_whole_project_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = Project(tmp_path / "proj").write(FILES)
    proj.commit()
    expected = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    for folder in ("knowledge/global", "knowledge", "semantics/shop", "."):
        monkeypatch.chdir(proj.root / folder)
        result = invoke(["check", "--format", "json"], code=1)
        assert result.stdout == expected.stdout, folder
        assert "checked 2 page(s) and 1 semantic file(s)" in result.stderr


def test_a_project_inside_a_larger_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mono = Project(tmp_path / "mono")
    mono.write({"src/app.py": "print()\n", **{f"analytics/{k}": v for k, v in FILES.items()}})
    mono.commit()
    monkeypatch.chdir(mono.root / "analytics" / "knowledge" / "global")
    assert diagnostics(invoke(["check", "--format", "json"], code=1)) == [
        ("KB103", "knowledge/global/a.md")
    ]
    # github paths open from here; on a GitHub runner they start at the repository's root.
    github = invoke(["check", "--format", "github"], code=1).stdout
    assert github.startswith("::error file=../../knowledge/global/a.md,line=3,")
    runner = invoke(["check", "--format", "github"], code=1, env={"GITHUB_ACTIONS": "true"})
    assert runner.stdout.startswith("::error file=analytics/knowledge/global/a.md,line=3,")
    # From the repository's root (or beside the project) there is no project to find.
    monkeypatch.chdir(mono.root / "src")
    result = invoke(["check"], code=2)
    assert "no knowl project" in result.stderr


@pytest.mark.parametrize(
    "marker, files",
    [
        (
            "knowl.toml",
            {"knowl.toml": "knowledge_dir = 'docs/kb'\n", "docs/kb/global/a.md": "[[nope]]\n"},
        ),
        (
            "pyproject.toml",
            {
                "pyproject.toml": "[project]\nname = 'x'\n[tool.knowl]\nknowledge_dir = 'kb'\n",
                "kb/global/a.md": "[[nope]]\n",
            },
        ),
        ("knowledge/", {"knowledge/global/a.md": "[[nope]]\n"}),
    ],
)
def test_each_marker_makes_a_project_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker: str, files: dict[str, str | bytes]
) -> None:
    proj = Project(tmp_path / "proj").write({**files, "deep/er/folder/.keep": ""})
    proj.commit()
    assert find_project_root(proj.root / "deep" / "er" / "folder") == proj.root
    monkeypatch.chdir(proj.root / "deep" / "er" / "folder")
    found = diagnostics(invoke(["check", "--format", "json"], code=1))
    assert ("KB103", files_page(files)) in found, marker


def files_page(files: dict[str, str | bytes]) -> str:
    return next(path for path in files if path.endswith("a.md"))


def test_a_pyproject_without_tool_knowl_is_not_a_project(tmp_path: Path) -> None:
    proj = Project(tmp_path / "proj").write(
        {
            "knowledge/global/a.md": "# A\n",
            "tools/pyproject.toml": "[project]\nname = 'tools'\n[tool.ruff]\nline-length = 100\n",
            "tools/src/x.py": "",
        }
    )
    assert find_project_root(proj.root / "tools" / "src") == proj.root


def test_the_nearest_project_wins(tmp_path: Path) -> None:
    outer = Project(tmp_path / "outer").write(
        {
            "knowledge/global/a.md": "# A\n",
            "nested/knowl.toml": "",
            "nested/sub/.keep": "",
        }
    )
    assert find_project_root(outer.root / "nested" / "sub") == outer.root / "nested"
    assert find_project_root(outer.root / "nested") == outer.root / "nested"


def test_the_search_stops_at_the_repository_root(tmp_path: Path) -> None:
    # A knowledge/ folder above the repository (someone's notes in their home folder) is not
    # this repository's project.
    (tmp_path / "knowledge").mkdir()
    repo = Project(tmp_path / "repo").write({"src/x.py": ""})
    assert find_project_root(repo.root / "src") is None
    assert find_project_root(tmp_path / "elsewhere") == tmp_path  # outside git: no boundary


def test_no_project_is_exit_2_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Project(tmp_path / "repo").write({"src/x.py": ""})
    monkeypatch.chdir(repo.root / "src")
    for command in (["check"], ["build"], ["stale"], ["search", "x"], ["graph"], ["verify"]):
        result = invoke(command, code=2)
        [line] = result.stderr.splitlines()
        assert line.startswith(f"knowl: error: {repo.root / 'src'}: no knowl project"), command
        for named in ("knowl.toml", "[tool.knowl] in pyproject.toml", "knowledge/", "--repo"):
            assert named in line, (command, named)


def test_repo_keeps_its_meaning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # --repo names the root as given: no search upward from it, none from the current folder.
    proj = Project(tmp_path / "proj").write(FILES)
    proj.commit()
    monkeypatch.chdir(proj.root / "knowledge")
    result = invoke(["check", "--repo", str(proj.root / "semantics")])
    assert "checked 0 page(s)" in result.stderr and "no knowledge/ folder" in result.stderr


def test_artifact_readers_need_no_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = Project(tmp_path / "proj").write(
        {**FILES, "knowledge/global/a.md": "# A\n\nSee [[b]].\n"}
    )
    proj.commit()
    out = tmp_path / "artifact"
    invoke(["build", "--repo", str(proj.root), "--out", str(out)])
    artifact = str(out / (out / "CURRENT").read_text().strip())
    elsewhere = Project(tmp_path / "elsewhere")  # a repository with no project in it
    monkeypatch.chdir(elsewhere.root)
    assert json.loads(invoke(["search", "B", "--artifact", artifact, "--json"]).stdout)["hits"]
    assert (
        json.loads(invoke(["show", "a", "--artifact", artifact, "--json"]).stdout)["page_id"] == "a"
    )
    traversed = json.loads(invoke(["traverse", "a", "--artifact", artifact, "--json"]).stdout)
    assert {p["page"] for p in traversed["pages"]} == {"a", "b"}
    assert invoke(["graph", "--artifact", artifact]).stdout.startswith("{")
    assert "ok" in invoke(["verify", "--artifact", artifact]).stdout

    import knowl_build.mcp_server

    served: dict[str, Any] = {}

    class Server:
        def run(self, transport: str) -> None:
            served["transport"] = transport

    def make_server(**kwargs: Any) -> Server:
        served.update(kwargs)
        return Server()

    monkeypatch.setattr(knowl_build.mcp_server, "make_server", make_server)
    invoke(["mcp", "--artifact", artifact])
    assert served["artifact"] == Path(artifact) and served["with_repo"] is False
    assert served["transport"] == "stdio"
    # Without --artifact, the server reads the current build of the project found upward.
    monkeypatch.chdir(proj.root / "knowledge" / "global")
    invoke(["mcp"])
    assert served["artifact"] is None and served["with_repo"] is False
    assert served["locator"].reader_project().out_dir == proj.root / ".knowl" / "build"


def test_rules_show_the_project_severities_or_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = Project(tmp_path / "proj").write(FILES)
    monkeypatch.chdir(proj.root / "knowledge" / "global")
    line = next(r for r in invoke(["rules"]).stdout.splitlines() if "KB202" in r)
    assert line.split()[:4] == ["KB202", "stale", "warning", "off"]
    monkeypatch.chdir(Project(tmp_path / "none").root)
    line = next(r for r in invoke(["rules"]).stdout.splitlines() if "KB202" in r)
    assert line.split()[:4] == ["KB202", "stale", "warning", "warning"]


def test_other_project_commands_find_the_root_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = Project(tmp_path / "proj").write(FILES)
    proj.commit()
    monkeypatch.chdir(proj.root / "knowledge" / "global")
    invoke(["build", "--allow-errors", "-q"])
    assert (proj.root / ".knowl" / "build" / "CURRENT").is_file()
    assert json.loads(invoke(["search", "B", "--json"]).stdout)["hits"]
    assert json.loads(invoke(["stale", "--json"]).stdout) == {"pages": []}
    assert json.loads(invoke(["timeline", "a", "--json"]).stdout)["page"] == "a"
