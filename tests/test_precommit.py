"""The published `knowl-check` hook, run by the real pre-commit tool in temp repositories:
it runs on every commit, so a change outside knowledge/ and semantics/ (a dbt metric rename)
is checked too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.helpers import AUTHOR, SEMANTICS, Project
from tests.test_dbt import DBT_PROJECT, LEGACY, TOML

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT.parent / "shared" / "schemas" / "pre-commit-hooks.schema.json"


def test_hook_definition_matches_the_spec() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "knowl-check")
    assert hook["entry"] == "knowl check"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False
    assert hook["require_serial"] is True
    # Any input can change a finding: pages, semantic files, a dbt project's YAML, knowl.toml,
    # pyproject.toml, custom folders. No `files` pattern can name them all; the hook always
    # runs (a warm check answers from its memo).
    assert hook["always_run"] is True
    assert "files" not in hook and "types" not in hook and "exclude" not in hook


def test_hooks_file_matches_the_schema() -> None:
    if not SCHEMA.is_file():
        pytest.skip(
            f"SchemaStore's pre-commit hooks schema is not here: {SCHEMA} (../shared is absent)"
        )
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.validators.validator_for(schema)(
        schema, format_checker=jsonschema.FormatChecker()
    )
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(hooks)]
    assert not errors, "\n".join(errors)


@pytest.fixture(scope="module")
def hook_source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """This checkout as a hook repository (a clone with the working tree's changes, as
    `try-repo` does), its revision, and one pre-commit home so the hook's environment is
    built once for the module. pre-commit builds one environment per repository and
    revision: when the clone has no tag of the README's release, the snapshot gets it and
    every test names the snapshot by that tag, so the README's snippet shares the
    environment the other tests built (one build of about eight seconds instead of two)."""
    if shutil.which("pre-commit") is None:
        pytest.skip("pre-commit is a test dependency")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("the project checkout has no commit")
    tmp = tmp_path_factory.mktemp("hook-source")
    source = tmp / "knowl-build"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(source)], check=True)
    shutil.copytree(
        ROOT,
        source,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns(
            ".git",
            ".knowl",
            "*.egg-info",
            "__pycache__",
            ".venv",
            "bench",
            ".pytest_cache",
            ".mypy_cache",
        ),
    )
    subprocess.run(["git", "add", "-A"], cwd=source, check=True)
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "snapshot"],
        cwd=source,
        check=True,
        env={**os.environ, **AUTHOR},
    )
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True, check=True
    ).stdout.strip()
    tag = yaml.safe_load(_readme_snippet())["repos"][0]["rev"]
    tags = subprocess.run(
        ["git", "tag", "--list", tag], cwd=source, capture_output=True, text=True, check=True
    ).stdout.split()
    if tag not in tags:
        subprocess.run(["git", "tag", tag], cwd=source, check=True)
        rev = tag
    return source, rev, tmp / "pre-commit-home"


def hooked_repo(
    root: Path,
    hook_source: tuple[Path, str, Path],
    files: dict[str, str | bytes],
    config: str | None = None,
) -> tuple[Project, Callable[[], subprocess.CompletedProcess[str]]]:
    """A repository whose first commit holds `files` and the hook's configuration (`config`,
    or one naming the hook source's revision), with the hook installed; returns it and a
    function that commits everything through the hook."""
    source, rev, home = hook_source
    repo = Project(root)
    repo.write(
        {
            **files,
            ".pre-commit-config.yaml": config
            or (
                f"repos:\n  - repo: {source}\n    rev: {rev}\n    hooks:\n      - id: knowl-check\n"
            ),
        }
    )
    repo.commit("start")
    env = {**os.environ, **AUTHOR, "PRE_COMMIT_HOME": str(home)}
    env.pop("GITHUB_ACTIONS", None)
    subprocess.run(
        ["pre-commit", "install"], cwd=repo.root, check=True, env=env, capture_output=True
    )

    def commit() -> subprocess.CompletedProcess[str]:
        subprocess.run(["git", "add", "-A"], cwd=repo.root, check=True)
        return subprocess.run(
            ["git", "commit", "-m", "edit"], cwd=repo.root, env=env, capture_output=True, text=True
        )

    return repo, commit


def test_precommit_hook_blocks_a_broken_link(
    tmp_path: Path, hook_source: tuple[Path, str, Path]
) -> None:
    repo, commit = hooked_repo(
        tmp_path / "kb",
        hook_source,
        {
            **SEMANTICS,
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            "knowledge/global/a.md": "# A\n",
        },
    )
    repo.write({"knowledge/global/b.md": "See [[a]] and [[missing-page]].\n"})
    refused = commit()
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "KB103" in refused.stdout + refused.stderr

    repo.write({"knowledge/global/b.md": "See [[a]].\n"})
    accepted = commit()
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr


def test_precommit_hook_blocks_a_dbt_metric_rename(
    tmp_path: Path, hook_source: tuple[Path, str, Path]
) -> None:
    # The commit touches only the dbt project's YAML (outside knowledge/ and semantics/): a
    # hook limited to those folders let it through while `knowl check` failed.
    page = "---\nsl_refs: [shop_dbt.metrics.total_revenue]\n---\n# Revenue\n"
    repo, commit = hooked_repo(
        tmp_path / "dbt-kb",
        hook_source,
        {
            **SEMANTICS,
            "knowl.toml": TOML,
            "analytics_dbt/dbt_project.yml": DBT_PROJECT,
            "analytics_dbt/models/marts/orders.yml": LEGACY,
            "knowledge/global/revenue.md": page,
        },
    )
    renamed = LEGACY.replace("  - name: total_revenue\n", "  - name: gross_revenue\n")
    assert renamed != LEGACY
    repo.write({"analytics_dbt/models/marts/orders.yml": renamed})
    staged = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo.root, capture_output=True, text=True, check=True
    ).stdout.split()
    assert staged == ["M", "analytics_dbt/models/marts/orders.yml"]
    refused = commit()
    assert refused.returncode != 0, refused.stdout + refused.stderr
    output = refused.stdout + refused.stderr
    assert "KB101" in output and "shop_dbt.metrics.total_revenue" in output

    # Renaming the page's reference too makes the commit pass.
    repo.write({"knowledge/global/revenue.md": page.replace("total_revenue", "gross_revenue")})
    accepted = commit()
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr


def test_eval_hook_builds_the_working_tree_and_runs_the_retrieval_tests() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "knowl-eval")
    assert hook["entry"] == "knowl eval --build"
    assert hook["language"] == "python" and hook["pass_filenames"] is False
    assert hook["require_serial"] is True and hook["always_run"] is True


def test_precommit_eval_hook_blocks_a_page_that_shadows_a_known_answer(
    tmp_path: Path, hook_source: tuple[Path, str, Path]
) -> None:
    source, rev, _ = hook_source
    config = f"repos:\n  - repo: {source}\n    rev: {rev}\n    hooks:\n      - id: knowl-eval\n"
    repo, commit = hooked_repo(
        tmp_path / "eval-kb",
        hook_source,
        {
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            "knowledge/global/revenue.md": "# Revenue\n\nCompleted order amounts.\n",
            "knowl-eval.yaml": (
                "questions:\n  - {query: completed order amounts, pages: [revenue], k: 1}\n"
            ),
        },
        config,
    )
    repo.write({"knowledge/global/orders.md": "# Completed order amounts\n\nBy day.\n"})
    refused = commit()
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "FAIL  knowl-eval.yaml:2:5: 'completed order amounts'" in refused.stdout + refused.stderr

    repo.write({"knowl-eval.yaml": "questions:\n  - {query: by day, pages: [orders], k: 1}\n"})
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


def _readme_snippet() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    marker = "# .pre-commit-config.yaml of your knowledge repository\n"
    start = readme.index(marker) + len(marker)
    return readme[start : readme.index("```", start)]


def test_readme_snippet_names_this_release() -> None:
    from knowl_build import __version__

    snippet = yaml.safe_load(_readme_snippet())
    (entry,) = snippet["repos"]
    assert entry["rev"] == f"v{__version__}"
    assert [hook["id"] for hook in entry["hooks"]] == ["knowl-check"]


def test_readme_snippet_works_when_copied(
    tmp_path: Path, hook_source: tuple[Path, str, Path]
) -> None:
    """The README's snippet as it is, with `repo:` pointing at this checkout: its `rev` is the
    release tag, which the hook repository carries (created on the snapshot by `hook_source`
    when this checkout was cloned without tags)."""
    source, _rev, _home = hook_source
    snippet = yaml.safe_load(_readme_snippet())
    snippet["repos"][0]["repo"] = str(source)
    repo, commit = hooked_repo(
        tmp_path / "kb",
        hook_source,
        {
            **SEMANTICS,
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            "knowledge/global/a.md": "# A\n",
        },
        config=yaml.safe_dump(snippet),
    )
    repo.write({"knowledge/global/b.md": "See [[missing-page]].\n"})
    refused = commit()
    assert refused.returncode != 0 and "KB103" in refused.stdout + refused.stderr
