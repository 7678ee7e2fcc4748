"""The GitHub Action: valid against SchemaStore's schema, the SARIF upload, its outputs, and
its build step's script run for real on a project in a sub-folder of a repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import SEMANTICS, Project

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT.parent / "shared" / "schemas" / "github-action.schema.json"


def action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return data


def step(predicate: Any) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in action()["runs"]["steps"] if predicate(s))
    return found


def test_action_matches_the_schema() -> None:
    if not SCHEMA.is_file():
        pytest.skip(f"SchemaStore's action schema is not here: {SCHEMA} (../shared is absent)")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.validators.validator_for(schema)(
        schema, format_checker=jsonschema.FormatChecker()
    )
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(action())]
    assert not errors, "\n".join(errors)


def test_sarif_upload_is_an_input_and_the_artifact_folder_an_output() -> None:
    data = action()
    assert data["inputs"]["upload-sarif"]["default"] == "false"  # code scanning is opt-in
    assert data["outputs"]["artifact-folder"]["value"] == "${{ steps.build.outputs.folder }}"
    assert data["outputs"]["build-id"]["value"] == "${{ steps.build.outputs.build-id }}"
    build = step(lambda s: s.get("id") == "build")
    assert "--sarif" in build["run"] and "--format github" in build["run"]
    upload = step(lambda s: str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@"))
    assert upload["uses"] == "github/codeql-action/upload-sarif@v3"
    assert upload["with"]["sarif_file"] == "${{ steps.build.outputs.sarif-file }}"
    assert upload["with"]["category"] == "${{ steps.build.outputs.sarif-category }}"
    assert "inputs.upload-sarif == 'true'" in upload["if"]
    # Findings fail the build step (exit 1) and are still uploaded; a stopped run is not.
    assert "!cancelled()" in upload["if"] and "steps.build.outputs.status != '2'" in upload["if"]


def run_build_step(project: Path, tmp_path: Path, upload: str) -> dict[str, str]:
    build = step(lambda s: s.get("id") == "build")
    outputs = tmp_path / f"outputs-{upload}"
    outputs.write_text("")
    env = {
        **os.environ,
        # The venv's console script, as `pip install` puts it on the runner's PATH.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "KNOWL_REPO": project.name,
        "KNOWL_ARGS": "--allow-errors",
        "KNOWL_OUT": str(tmp_path / "out"),
        "KNOWL_UPLOAD_SARIF": upload,
        "KNOWL_SARIF": str(tmp_path / "knowl-build.sarif"),
        "KNOWL_SARIF_CATEGORY": "",
        "GITHUB_OUTPUT": str(outputs),
    }
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", build["run"]],
        cwd=project.parent,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "::error file=analytics/knowledge/global/a.md," in proc.stdout
    return dict(line.split("=", 1) for line in outputs.read_text().splitlines())


def test_build_step_writes_the_outputs_the_upload_needs(tmp_path: Path) -> None:
    mono = Project(tmp_path / "mono")
    mono.write({f"analytics/{k}": v for k, v in SEMANTICS.items()})
    mono.write({"analytics/knowledge/global/a.md": "[[nope]]\n"})
    mono.commit()
    project = mono.root / "analytics"

    plain = run_build_step(project, tmp_path, "false")
    assert "sarif-file" not in plain
    folder = Path(plain["folder"])
    assert plain["status"] == "0"
    assert (folder / "manifest.json").is_file() and folder.name == plain["build-id"]

    outputs = run_build_step(project, tmp_path, "true")
    assert outputs["sarif-category"] == "knowl-build/analytics"
    assert Path(outputs["checkout-path"]).resolve() == mono.root.resolve()
    log = json.loads(Path(outputs["sarif-file"]).read_text())
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].startswith("analytics/knowledge/")


def test_site_is_an_input_and_its_folder_an_output_uploaded_for_pages() -> None:
    data = action()
    assert data["inputs"]["site"]["default"] == "false"  # publishing a site is opt-in
    assert data["outputs"]["site-folder"]["value"] == "${{ steps.site.outputs.folder }}"
    site = step(lambda s: s.get("id") == "site")
    # Only after a build that passed and published: a failing check never reaches Pages.
    assert site["if"] == "inputs.site == 'true' && steps.build.outputs.folder != ''"
    assert site["env"]["KNOWL_ARTIFACT"] == "${{ steps.build.outputs.folder }}"
    assert "knowl site" in site["run"] and '--artifact "$KNOWL_ARTIFACT"' in site["run"]
    upload = step(lambda s: str(s.get("uses", "")).startswith("actions/upload-pages-artifact@"))
    assert upload["uses"] == "actions/upload-pages-artifact@v3"
    assert upload["with"]["path"] == "${{ steps.site.outputs.folder }}"
    assert upload["if"] == "steps.site.outputs.folder != ''"


def test_site_step_renders_the_published_build(tmp_path: Path) -> None:
    mono = Project(tmp_path / "mono")
    mono.write({f"analytics/{k}": v for k, v in SEMANTICS.items()})
    mono.write({"analytics/knowledge/global/a.md": "# A\n\nRevenue, see [[nope]].\n"})
    mono.commit()
    project = mono.root / "analytics"
    built = run_build_step(project, tmp_path, "false")
    site = step(lambda s: s.get("id") == "site")
    outputs = tmp_path / "outputs-site"
    outputs.write_text("")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "KNOWL_REPO": project.name,
        "KNOWL_ARTIFACT": built["folder"],
        "KNOWL_SITE": str(tmp_path / "site"),
        "KNOWL_SITE_ARGS": "",
        "GITHUB_OUTPUT": str(outputs),
    }
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", site["run"]],
        cwd=project.parent,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    folder = Path(dict(line.split("=", 1) for line in outputs.read_text().splitlines())["folder"])
    assert folder == tmp_path / "site"
    for name in ("index.html", "search.html", "pages/a.html", "search/meta.json"):
        assert (folder / name).is_file(), name


def test_eval_is_an_input_run_against_the_published_build(tmp_path: Path) -> None:
    data = action()
    assert data["inputs"]["eval"]["default"] == "false"  # the retrieval tests are opt-in
    assert data["inputs"]["eval-args"]["default"] == ""
    evaluate = step(lambda s: s.get("name") == "knowl eval")
    assert evaluate["if"] == "inputs.eval == 'true' && steps.build.outputs.folder != ''"
    assert evaluate["env"]["KNOWL_ARTIFACT"] == "${{ steps.build.outputs.folder }}"

    mono = Project(tmp_path / "mono")
    mono.write({f"analytics/{k}": v for k, v in SEMANTICS.items()})
    mono.write(
        {
            "analytics/knowledge/global/a.md": "# Revenue\n\nRevenue, see [[nope]].\n",
            "analytics/knowl-eval.yaml": "questions:\n  - {query: revenue, pages: [a], k: 1}\n",
        }
    )
    mono.commit()
    project = mono.root / "analytics"
    built = run_build_step(project, tmp_path, "false")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "KNOWL_REPO": project.name,
        "KNOWL_ARTIFACT": built["folder"],
    }

    def run(args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", evaluate["run"]],
            cwd=project.parent,
            env={**env, "KNOWL_EVAL_ARGS": args},
            capture_output=True,
            text=True,
        )

    passed = run("")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 questions: 1 passed, 0 failed" in passed.stdout
    answer = run("--json --min-mrr 1")  # eval-args reach knowl eval
    assert answer.returncode == 0, answer.stdout + answer.stderr
    assert json.loads(answer.stdout)["summary"]["min_mrr"] == 1.0
