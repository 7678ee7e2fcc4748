"""The published `knowl-check` hook, run by the real pre-commit tool in a temp repository."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers import AUTHOR, SEMANTICS, Project

ROOT = Path(__file__).resolve().parent.parent


def test_hook_definition_matches_the_spec() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "knowl-check")
    assert hook["entry"] == "knowl check"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False
    assert hook["require_serial"] is True
    import re

    pattern = re.compile(hook["files"])
    assert pattern.search("knowledge/global/a.md") and pattern.search("semantics/x/orders.yaml")
    assert pattern.search("sub/project/knowledge/global/a.md")
    assert not pattern.search("src/app.py")


@pytest.mark.skipif(shutil.which("pre-commit") is None, reason="pre-commit is a test dependency")
def test_precommit_hook_blocks_a_broken_link(tmp_path: Path) -> None:
    # pre-commit installs the hook from a git revision: use this checkout's HEAD (with the
    # working tree's changes when there are any, as `try-repo` does).
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("the project checkout has no commit")
    source = tmp_path / "knowl-build"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(source)], check=True)
    shutil.copytree(ROOT, source, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".git", ".knowl", "*.egg-info", "__pycache__",
                                                  ".venv", "bench", ".pytest_cache", ".mypy_cache"))
    subprocess.run(["git", "add", "-A"], cwd=source, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "snapshot"], cwd=source, check=True,
                   env={**os.environ, **AUTHOR})
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True,
                         check=True).stdout.strip()

    repo = Project(tmp_path / "kb")
    repo.write({
        **SEMANTICS,
        "knowl.toml": "[rules]\nKB202 = 'off'\n",
        ".pre-commit-config.yaml": (
            f"repos:\n  - repo: {source}\n    rev: {rev}\n    hooks:\n      - id: knowl-check\n"
        ),
        "knowledge/global/a.md": "# A\n",
    })
    repo.commit("start")
    env = {**os.environ, **AUTHOR, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    env.pop("GITHUB_ACTIONS", None)
    subprocess.run(["pre-commit", "install"], cwd=repo.root, check=True, env=env, capture_output=True)

    def commit() -> subprocess.CompletedProcess[str]:
        subprocess.run(["git", "add", "-A"], cwd=repo.root, check=True)
        return subprocess.run(["git", "commit", "-m", "edit"], cwd=repo.root, env=env,
                              capture_output=True, text=True)

    repo.write({"knowledge/global/b.md": "See [[a]] and [[missing-page]].\n"})
    refused = commit()
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "KB103" in refused.stdout + refused.stderr

    repo.write({"knowledge/global/b.md": "See [[a]].\n"})
    accepted = commit()
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr


def test_github_action_runs_knowl_build_with_annotations_and_uploads() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    build = next(s for s in steps if s.get("id") == "build")
    assert "knowl build" in build["run"] and "--format github" in build["run"]
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload["with"]["path"] == "${{ steps.build.outputs.folder }}"
