"""SARIF that code scanning accepts: the official 2.1.0 schema with format checking, encoded
URIs, declared base ids, partial fingerprints, help URIs, security severities, and a valid log
when the run stops (exit 2)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest

from knowl_build import DOCS_URL
from knowl_build.rules.registry import RULES
from tests.golden_project import FILES
from tests.helpers import SEMANTICS, Project, invoke

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT.parent / "shared" / "schemas" / "sarif-schema-2.1.0.json"
CONFIG = {**SEMANTICS, "knowl.toml": "[rules]\nKB202 = 'off'\n"}


@pytest.fixture(scope="module")
def validate() -> Callable[[Any], None]:
    if not SCHEMA.is_file():
        pytest.skip(f"the official SARIF schema is not here: {SCHEMA} (../shared is absent)")
    jsonschema = pytest.importorskip("jsonschema")
    checker = jsonschema.FormatChecker()
    if "uri-reference" not in checker.checkers:
        pytest.skip("uri-reference format checking needs rfc3987 (the test extra)")
    validator = jsonschema.Draft4Validator(json.loads(SCHEMA.read_text()), format_checker=checker)

    def check(log: Any) -> None:
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(log)]
        assert not errors, "\n".join(errors)

    return check


def sarif(args: list[str], code: int) -> dict[str, Any]:
    result = invoke(["check", *args, "--format", "sarif"], code=code)
    log: dict[str, Any] = json.loads(result.stdout)
    return log


def uris(log: dict[str, Any]) -> list[str]:
    return [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
    ]


def test_the_golden_project_validates(
    project: Callable[..., Project], validate: Callable[[Any], None]
) -> None:
    proj = project(FILES)
    log = sarif(["--repo", str(proj.root)], 1)
    validate(log)
    run = log["runs"][0]
    assert run["invocations"] == [{"executionSuccessful": True}]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["description"]["text"]
    assert "uri" not in run["originalUriBaseIds"]["%SRCROOT%"]  # no local path in the output
    assert str(proj.root) not in json.dumps(log)


def test_odd_file_names_in_a_sub_folder_validate(
    tmp_path: Path, validate: Callable[[Any], None]
) -> None:
    names = ["with space.md", "hash#1.md", "per%cent.md", "caf\u00e9 \u00fcber.md", "q?.md"]
    mono = Project(tmp_path / "mono")
    mono.write({f"sub dir/kb/{path}": text for path, text in CONFIG.items()})
    mono.write({f"sub dir/kb/knowledge/global/{name}": "[[nowhere]]\n" for name in names})
    mono.commit()
    log = sarif(["--repo", str(mono.root / "sub dir" / "kb")], 1)
    validate(log)
    expected = sorted(f"sub dir/kb/knowledge/global/{name}" for name in names)
    assert sorted(unquote(uri) for uri in uris(log)) == expected
    assert sorted(uris(log)) == sorted(quote(path, safe="/") for path in expected)
    assert "sub%20dir/kb/knowledge/global/hash%231.md" in uris(log)
    assert "sub%20dir/kb/knowledge/global/per%25cent.md" in uris(log)
    assert all(uri.isascii() for uri in uris(log))


def test_every_rule_has_help_and_security_rules_a_severity(
    project: Callable[..., Project], validate: Callable[[Any], None]
) -> None:
    proj = project(CONFIG)
    log = sarif(["--repo", str(proj.root)], 0)
    validate(log)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [rule.code for rule in RULES]
    for rule in rules:
        assert rule["helpUri"] == f"{DOCS_URL}/rules/#{rule['id'].lower()}"
    security = {r["id"]: r["properties"] for r in rules if "properties" in r}
    assert set(security) == {"KB401", "KB402", "KB403"}
    for properties in security.values():
        assert properties["tags"] == ["security"]
        assert isinstance(properties["security-severity"], str)
        assert 0.0 < float(properties["security-severity"]) <= 10.0
    assert float(security["KB401"]["security-severity"]) >= 7.0  # a leaked secret is high


def fingerprints(log: dict[str, Any]) -> dict[tuple[str, int], str]:
    return {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]): r[
            "partialFingerprints"
        ]["knowlFinding/v1"]
        for r in log["runs"][0]["results"]
    }


def test_fingerprints_survive_moved_lines_and_tell_repeats_apart(
    project: Callable[..., Project], validate: Callable[[Any], None]
) -> None:
    proj = project({**CONFIG, "knowledge/global/a.md": "# A\n\n[[nope]]\n\n[[nope]]\n"})
    before = fingerprints(sarif(["--repo", str(proj.root)], 1))
    assert set(before) == {("KB103", 3), ("KB103", 5)}
    assert before[("KB103", 3)] != before[("KB103", 5)]  # the first and the second [[nope]]
    # The documented recipe: code, repository path, subject (here the message, as the
    # finding has no subject of its own), occurrence of that identity in the file.
    message = "[[nope]] points at no page visible from global scope"
    for line, occurrence in ((3, "1"), (5, "2")):
        recipe = "\0".join(("KB103", "knowledge/global/a.md", message, occurrence))
        assert before[("KB103", line)] == hashlib.sha256(recipe.encode()).hexdigest()

    proj.write({"knowledge/global/a.md": "# A\n\nNew text.\nMore.\n\n[[nope]]\n\n[[nope]]\n"})
    log = sarif(["--repo", str(proj.root)], 1)
    validate(log)
    after = fingerprints(log)
    assert set(after) == {("KB103", 6), ("KB103", 8)}
    assert [after[("KB103", 6)], after[("KB103", 8)]] == [
        before[("KB103", 3)],
        before[("KB103", 5)],
    ]


def test_exit_2_still_prints_a_valid_log(
    project: Callable[..., Project], tmp_path: Path, validate: Callable[[Any], None]
) -> None:
    proj = project({**CONFIG, "knowl.toml": "[rules]\nKB999 = 'off'\n"})
    result = invoke(["check", "--repo", str(proj.root), "--format", "sarif"], code=2)
    log = json.loads(result.stdout)
    validate(log)
    [invocation] = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    [notification] = invocation["toolExecutionNotifications"]
    assert notification["level"] == "error"
    assert "KB999" in notification["message"]["text"]
    assert log["runs"][0]["results"] == []
    [line] = result.stderr.splitlines()
    assert line.startswith("knowl: error: ") and "KB999" in line

    # --sarif FILE gets the same log, whatever the format printed (here: nothing on stdout).
    out = tmp_path / "errors.sarif"
    result = invoke(["build", "--repo", str(proj.root), "--sarif", str(out)], code=2)
    assert result.stdout == ""
    assert json.loads(out.read_text()) == log


def test_exit_2_outside_a_project_and_on_internal_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, validate: Callable[[Any], None]
) -> None:
    empty = Project(tmp_path / "empty")  # a repository with no knowl project in it
    monkeypatch.chdir(empty.root)
    log = sarif([], 2)
    validate(log)
    text = log["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"]
    assert "no knowl project" in text

    import knowl_build.pipeline.check

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(knowl_build.pipeline.check, "check", boom)
    proj = Project(tmp_path / "proj").write(CONFIG)
    log = sarif(["--repo", str(proj.root)], 2)
    validate(log)
    text = log["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"]
    assert text == "internal error: RuntimeError: kaboom"


def test_sarif_file_matches_the_sarif_format_and_is_written_whole(
    project: Callable[..., Project], tmp_path: Path, validate: Callable[[Any], None]
) -> None:
    proj = project(FILES)
    folder = tmp_path / "reports"
    folder.mkdir()
    out = folder / "knowl.sarif"
    out.write_text("stale")
    github = invoke(
        ["check", "--repo", str(proj.root), "--format", "github", "--sarif", str(out)], code=1
    )
    assert github.stdout.startswith("::")
    printed = invoke(["check", "--repo", str(proj.root), "--format", "sarif"], code=1).stdout
    assert out.read_text(encoding="utf-8") == printed
    assert [p.name for p in folder.iterdir()] == ["knowl.sarif"]  # no temporary file left

    built = tmp_path / "build.sarif"
    invoke(
        [
            "build",
            "--repo",
            str(proj.root),
            "--allow-errors",
            "--format",
            "json",
            "--sarif",
            str(built),
        ]
    )
    log = json.loads(built.read_text())
    validate(log)
    assert uris(log) == uris(json.loads(printed))


def test_an_unwritable_sarif_file_is_exit_2(
    project: Callable[..., Project], tmp_path: Path, validate: Callable[[Any], None]
) -> None:
    proj = project(CONFIG)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    target = blocker / "knowl.sarif"
    result = invoke(
        ["check", "--repo", str(proj.root), "--format", "sarif", "--sarif", str(target)], code=2
    )
    validate(json.loads(result.stdout))
    assert "cannot write the SARIF log" in result.stderr


def test_a_no_op_build_fingerprints_as_the_build_that_published(
    project: Callable[..., Project], tmp_path: Path
) -> None:
    # An unchanged project publishes nothing and reports the findings the artifact recorded:
    # they keep their subjects, so code scanning sees the same alerts, not new ones.
    proj = project(FILES)
    logs = []
    for name in ("first", "no-op"):
        out = tmp_path / f"{name}.sarif"
        result = invoke(["build", "--repo", str(proj.root), "--allow-errors", "--sarif", str(out)])
        logs.append(fingerprints(json.loads(out.read_text())))
        assert ("no-op" in result.stderr) == (name == "no-op")
    checked = fingerprints(sarif(["--repo", str(proj.root)], 1))
    assert logs[0] == logs[1] == checked


def test_a_project_without_git_validates(tmp_path: Path, validate: Callable[[Any], None]) -> None:
    # KB009 is about the whole project: its location is the project's folder, ".".
    proj = Project(tmp_path / "plain", git=False).write(CONFIG)
    log = sarif(["--repo", str(proj.root)], 0)
    validate(log)
    assert uris(log) == ["."]
