"""The command line: formats, streams, exit codes, global options, --changed-only, --strict."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.golden import regenerate
from tests.golden_project import FILES
from tests.helpers import SEMANTICS, Project, invoke

CLEAN: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/a.md": "---\nsl_refs: [shop_pg.orders.total_revenue]\n---\n# A\n\nSee [[b]].\n",
    "knowledge/global/b.md": "# B\n",
}


def test_golden_outputs_match() -> None:
    for name, text in regenerate.outputs().items():
        expected = (Path(regenerate.__file__).parent / name).read_text(encoding="utf-8")
        assert text == expected, f"{name} differs: run python -m tests.golden.regenerate and review"


def test_secret_never_echoed_in_any_format(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    for fmt in ("text", "json", "github", "sarif"):
        result = invoke(["check", "--repo", str(proj.root), "--format", fmt], code=1)
        assert "hunter2" not in result.output
        assert "analyst:" not in result.output
        assert "URL with credentials" in result.stdout


def test_clean_project_exit_0_and_summary_on_stderr(project: Callable[..., Project]) -> None:
    proj = project(CLEAN)
    result = invoke(["check", "--repo", str(proj.root)])
    assert result.stdout == ""
    assert "checked 2 page(s) and 1 semantic file(s): 0 errors, 0 warnings, 0 info" in result.stderr


def test_machine_formats_keep_stdout_pure(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    document = json.loads(result.stdout)
    assert document["version"] == 1
    assert set(document["summary"]) == {"error", "warning", "info"}
    keys = {
        "code",
        "severity",
        "path",
        "repo_path",
        "line",
        "column",
        "end_line",
        "end_column",
        "message",
        "hint",
        "subject",
    }
    assert all(set(d) == keys for d in document["diagnostics"])
    order = [(d["path"], d["line"], d["column"], d["code"]) for d in document["diagnostics"]]
    assert order == sorted(order)
    assert "checked" in result.stderr
    sarif = json.loads(
        invoke(["check", "--repo", str(proj.root), "--format", "sarif"], code=1).stdout
    )
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]][:3] == ["KB001", "KB002", "KB003"]
    assert {r["level"] for r in run["results"]} <= {"error", "warning", "note"}


def test_text_format(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    result = invoke(["check", "--repo", str(proj.root)], code=1)
    lines = result.stdout.splitlines()
    assert (
        "knowledge/global/revenue.md:14:51: error KB103 [[revenue-defintion]] points at no "
        "page visible from global scope"
    ) in lines
    assert "    hint: did you mean 'revenue-definition'?" in lines
    assert "\x1b[" not in result.stdout  # no colour when not a terminal


def test_github_chosen_under_actions_with_step_summary(
    project: Callable[..., Project], tmp_path: Path
) -> None:
    proj = project(FILES)
    summary = tmp_path / "summary.md"
    result = invoke(
        ["check", "--repo", str(proj.root)],
        code=1,
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert result.stdout.startswith("::")
    assert all(
        re.match(r"::(error|warning|notice) file=", line) for line in result.stdout.splitlines()
    )
    text = summary.read_text()
    assert text.startswith("### knowl check")
    assert "| `knowledge/global/revenue.md:14:51` | error | KB103 |" in text
    assert "hunter2" not in text


def test_strict_fails_on_warnings(project: Callable[..., Project]) -> None:
    proj = project({**CLEAN, "knowledge/global/b.md": "# B\n\n[[a#Nope]]\n"})
    invoke(["check", "--repo", str(proj.root)], code=0)
    invoke(["check", "--repo", str(proj.root), "--strict"], code=1)


def test_info_never_fails(project: Callable[..., Project]) -> None:
    proj = project({**CLEAN, "knowledge/user/ann/b.md": "x\n"})
    result = invoke(["check", "--repo", str(proj.root), "--strict"])
    assert "KB303" in result.stdout


def test_global_options_before_or_after_command(project: Callable[..., Project]) -> None:
    proj = project(CLEAN)
    invoke(["--repo", str(proj.root), "check"])
    invoke(["check", "--repo", str(proj.root), "-q"])
    quiet = invoke(["-q", "check", "--repo", str(proj.root)])
    assert quiet.stderr == ""


def test_missing_repo_is_usage_error(tmp_path: Path) -> None:
    result = invoke(["check", "--repo", str(tmp_path / "nope")], code=2)
    assert "does not exist" in result.stderr


def test_no_knowledge_folder_notice(tmp_path: Path) -> None:
    result = invoke(["check", "--repo", str(tmp_path)])
    assert "no knowledge/ folder in" in result.stderr
    assert "checked 0 page(s)" in result.stderr


def test_changed_only_filters_reports_not_validation(project: Callable[..., Project]) -> None:
    proj = project(CLEAN)
    # Deleting b breaks a link in a, which is unchanged: validation covers the whole graph.
    proj.remove("knowledge/global/b.md")
    full = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    assert [d["path"] for d in json.loads(full.stdout)["diagnostics"]] == ["knowledge/global/a.md"]
    changed = invoke(["check", "--repo", str(proj.root), "--changed-only", "--format", "json"])
    assert json.loads(changed.stdout)["diagnostics"] == []
    # An untracked page counts as changed.
    proj.write({"knowledge/global/new.md": "[[missing]]\n"})
    new = invoke(["check", "--repo", str(proj.root), "--changed-only", "--format", "json"], code=1)
    assert [d["path"] for d in json.loads(new.stdout)["diagnostics"]] == ["knowledge/global/new.md"]


def test_project_in_a_monorepo_subfolder(tmp_path: Path) -> None:
    mono = Project(tmp_path / "mono")
    mono.write({f"analytics/{k}": v for k, v in CLEAN.items()})
    mono.write(
        {
            "analytics/.gitignore": "knowledge/global/tmp/\n",
            "analytics/knowledge/global/tmp/x.md": "[[zz]]\n",
        }
    )
    mono.commit()
    sub = mono.root / "analytics"
    invoke(["check", "--repo", str(sub)])
    mono.write({"analytics/knowledge/global/new.md": "[[zz]]\n"})
    result = invoke(["check", "--repo", str(sub), "--changed-only", "--format", "json"], code=1)
    assert [d["path"] for d in json.loads(result.stdout)["diagnostics"]] == [
        "knowledge/global/new.md"
    ]


def test_parse_cache_is_used_and_safe(project: Callable[..., Project]) -> None:
    proj = project(CLEAN)
    invoke(["check", "--repo", str(proj.root)])
    cache = proj.root / ".knowl" / "cache" / "pages.jsonl"
    assert cache.exists()
    assert (proj.root / ".knowl" / ".gitignore").read_text() == "*\n"
    # A damaged cache is ignored, never trusted.
    cache.write_text("{not json")
    invoke(["check", "--repo", str(proj.root)])
    # A stale entry under the right hash cannot hide a change: the hash is of the content.
    proj.write({"knowledge/global/b.md": "[[gone]]\n"})
    invoke(["check", "--repo", str(proj.root)], code=1)


def test_version_and_python_m() -> None:
    from knowl_build import __version__

    assert invoke(["--version"]).stdout.strip() == f"knowl, version {__version__}"
    out = subprocess.run(
        [sys.executable, "-m", "knowl_build", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and __version__ in out.stdout


def test_rules_command_lists_every_rule() -> None:
    from knowl_build.rules.registry import RULES

    result = invoke(["rules"])
    for rule in RULES:
        assert rule.code in result.stdout


def test_rules_shows_configured_severity(tmp_path: Path) -> None:
    (tmp_path / "knowl.toml").write_text("[rules]\nKB202 = 'off'\n")
    line = next(
        row
        for row in invoke(["rules", "--repo", str(tmp_path)]).stdout.splitlines()
        if "KB202" in row
    )
    assert re.search(r"KB202\s+stale\s+warning\s+off", line)


@pytest.mark.parametrize("command", ["check", "rules"])
def test_every_command_has_help_with_example(command: str) -> None:
    result = invoke([command, "--help"])
    assert "Example" in result.stdout


def test_internal_error_has_no_traceback(
    project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    import knowl_build.pipeline.check

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(knowl_build.pipeline.check, "check", boom)
    proj = project(CLEAN)
    result = invoke(["check", "--repo", str(proj.root)], code=2)
    assert "knowl: internal error: RuntimeError: kaboom" in result.stderr
    assert "Traceback" not in result.output


def test_memo_answers_an_unchanged_tree_and_notices_every_change(
    project: Callable[..., Project],
) -> None:
    proj = project(CLEAN)
    first = invoke(["check", "--repo", str(proj.root), "--format", "json"])
    memo = proj.root / ".knowl" / "cache" / "check.json"
    assert memo.exists()
    assert invoke(["check", "--repo", str(proj.root), "--format", "json"]).stdout == first.stdout
    # A new file, a config change and another day each invalidate the memo.
    proj.write({"knowledge/global/c.md": "[[nope]]\n"})
    invoke(["check", "--repo", str(proj.root)], code=1)
    proj.remove("knowledge/global/c.md")
    invoke(["check", "--repo", str(proj.root)])
    proj.write({"knowl.toml": "[rules]\nKB202 = 'error'\n"})
    invoke(["check", "--repo", str(proj.root)], code=1)
    proj.write(
        {
            "knowl.toml": "[rules]\nKB202 = 'warning'\n",
            "knowledge/global/b.md": "---\nmeta: {last_validated_at: 2026-05-28}\n---\n",
            "knowledge/global/a.md": "---\nmeta: {last_validated_at: 2026-05-28}\n---\n",
        }
    )
    invoke(["check", "--repo", str(proj.root), "--strict"])
    invoke(
        ["check", "--repo", str(proj.root), "--strict"],
        code=1,
        env={"SOURCE_DATE_EPOCH": str(1780000000 + 200 * 86400)},
    )


def _knowl(args: list[str], *, through_click: bool) -> tuple[int, str, str, bool]:
    """`knowl ARGS` as a process, through the program (`knowl_build.cli.group`, which may
    answer a search without click) or the click group alone: its exit code, stdout, stderr
    and whether click was imported."""
    program = "knowl_build.cli.group" if through_click else "knowl_build.cli"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"from {program} import main; main()", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
    )
    lines = done.stderr.splitlines(keepends=True)
    timed = [line for line in lines if line.startswith("import time:")]
    imported = {line.rsplit("|", 1)[-1].strip() for line in timed}
    stderr = "".join(line for line in lines if not line.startswith("import time:"))
    return done.returncode, done.stdout, stderr, "click" in imported


def test_search_answers_without_click_as_click_answers(project: Callable[..., Project]) -> None:
    """A plain `knowl search` is answered without importing click (`cli.lean`) and writes what
    the click command writes; what it cannot read (help, a refused value, `--`), and a run
    that fails, click answers with its own messages and exit codes."""
    root = str(project(CLEAN).root)
    invoke(["build", "--repo", root, "-q"])
    lean = [
        ["search", "revenue", "--repo", root],
        ["search", "--repo=" + root, "orders", "--json", "--limit", "2", "--kind", "page"],
        ["search", "revenue", "--repo", root, "--user", "alice", "--status", "all", "-q"],
    ]
    clicked = [
        ["search", "revenue", "--repo", root, "--limit", "0"],
        ["search", "revenue", "--repo", root, "--kind", "nope"],
        ["search", "", "--repo", root],
        ["search", "--repo", root, "--", "-draft revenue"],
        ["search", "revenue", "--repo", root, "--limit", "2", "--limit", "3"],
        ["search", "-h"],
        ["--repo", root, "search", "revenue"],
    ]
    for args in lean + clicked:
        code, out, err, used_click = _knowl(args, through_click=False)
        assert (code, out, err) == _knowl(args, through_click=True)[:3], args
        assert used_click == (args not in lean), args
