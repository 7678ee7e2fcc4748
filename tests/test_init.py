"""knowl init: a configuration for the repository as it is, on a fixture of each shape.

Each fixture is a small repository of its kind, as its own tool writes it; after `knowl init`
it checks with no finding (no false findings from the first run), and a broken link planted
afterwards is found (the check still checks).
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke

DENDRON_NOTE = (
    "---\nid: {id}\ntitle: {title}\ndesc: ''\nupdated: 1700000000000\ncreated: 1700000000000\n---\n"
)

SHAPES: dict[str, dict[str, str | bytes]] = {
    "obsidian": {
        ".obsidian/app.json": "{}",
        ".obsidian/templates.json": '{"folder": "Templates"}',
        "Home.md": "---\ncssclasses: [wide]\naliases: [Start]\n---\n# Home\n\n[[Guide#Setup]]\n",
        "Notes/Guide.md": "# Guide\n\n## Setup\n\nBack [[Start|home]].\n",
        "Templates/Daily.md": "# {{date}}\n\n[[Nowhere]]\n",
    },
    "dendron": {
        "dendron.yml": "version: 5\nworkspace:\n  vaults:\n    - fsPath: notes\n",
        "notes/root.md": DENDRON_NOTE.format(id="root", title="Root")
        + "[[Setup|guide.setup]] and [[guide.setup#install]]\n",
        "notes/guide.setup.md": DENDRON_NOTE.format(id="g1", title="Setup") + "## Install\n",
    },
    "hugo": {
        "hugo.toml": 'baseURL = "https://example.org/"\ntitle = "Site"\n',
        "content/_index.md": "---\ntitle: Home\nweight: 1\n---\n"
        'See [install](docs/install/) and [the post]({{< ref "blog/post.md" >}}).\n',
        "content/docs/install/index.md": "---\ntitle: Install\ndraft: false\n---\n[home](/)\n",
        "content/blog/post.md": '+++\ntitle = "Post"\n+++\nBack to [install](/docs/install/).\n',
    },
    "quartz": {
        "quartz.config.ts": "export default {}\n",
        "content/index.md": "---\ntitle: Home\n---\n[[Notes/Idea]] and [[idea-two]]\n",
        "content/Notes/Idea.md": "# Idea\n",
        "content/idea-two.md": "---\ndraft: true\n---\n# Two\n",
    },
    "mkdocs": {
        "mkdocs.yml": "site_name: x\ndocs_dir: documentation\nmarkdown_extensions:\n"
        "  - pymdownx.emoji:\n      emoji_index: !!python/name:material.extensions.emoji.twemoji\n",
        "documentation/index.md": "---\nhide: [navigation]\n---\n# Home\n\n[usage](guide/usage.md#options)\n",
        "documentation/guide/usage.md": "# Usage\n\n## Options\n\n[back](../index.md)\n",
    },
    "docusaurus": {
        "docusaurus.config.js": "module.exports = {};\n",
        "docs/intro.md": "---\nsidebar_position: 1\nslug: /\n---\n# Intro\n\n[next](tutorial/basics.md)\n",
        "docs/tutorial/basics.md": "# Basics\n",
    },
    "knowl": {
        **SEMANTICS,
        "knowledge/global/revenue.md": "---\nsl_refs: [shop_pg.orders.total_revenue]\nmeta:\n"
        '  last_validated_at: "2026-05-01T00:00:00Z"\n  bound_fingerprints:\n'
        f"    shop_pg.orders.total_revenue: {FP_SUM_AMOUNT}\n---\n# Revenue\n",
    },
    "dbt": {
        "dbt/dbt_project.yml": "name: shop\nversion: '1.0'\nmodel-paths: [models]\n",
        "dbt/models/orders.yml": "version: 2\nsemantic_models:\n  - name: orders\n"
        "    model: ref('fct_orders')\n    measures:\n      - name: revenue\n        agg: sum\n"
        "        expr: amount\n",
        "docs/metrics.md": "# Metrics\n\nRevenue is booked when an order ships.\n",
    },
    "markdown": {
        "README.md": "# Project\n\nSee [the guide](docs/guide.md).\n",
        "docs/guide.md": "---\nauthor: me\n---\n# Guide\n\n[back](../README.md)\n",
    },
}
# Where each shape keeps its pages, and a page to plant a broken link in.
PLANT = {
    "obsidian": "Notes/Guide.md",
    "dendron": "notes/guide.setup.md",
    "hugo": "content/blog/post.md",
    "quartz": "content/Notes/Idea.md",
    "mkdocs": "documentation/guide/usage.md",
    "docusaurus": "docs/tutorial/basics.md",
    "knowl": "knowledge/global/revenue.md",
    "dbt": "docs/metrics.md",
    "markdown": "docs/guide.md",
}


def repository(tmp_path: Path, shape: str) -> Project:
    proj = Project(tmp_path / shape).write(SHAPES[shape])
    proj.commit(shape)
    return proj


def check_json(proj: Project, code: int = 0) -> list[dict[str, object]]:
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=code)
    found: list[dict[str, object]] = json.loads(result.stdout)["diagnostics"]
    return found


@pytest.mark.parametrize("shape", list(SHAPES))
def test_init_gives_a_first_check_without_false_findings(tmp_path: Path, shape: str) -> None:
    proj = repository(tmp_path, shape)
    result = invoke(["init", "--repo", str(proj.root)])
    assert f"repository kind: {shape}" in result.stderr or shape in ("dbt", "markdown")
    assert "first check:" in result.stderr and "no findings" in result.stderr
    assert check_json(proj) == []
    # The check still checks: a broken link planted afterwards is found, at its line.
    page = proj.root / PLANT[shape]
    page.write_text(page.read_text() + "\n[a broken link](no-such-page.md)\n")
    found = check_json(proj, code=1)
    assert [(d["path"], d["code"]) for d in found] == [(PLANT[shape], "KB103")]


def test_the_decisions_and_the_configuration(tmp_path: Path) -> None:
    proj = repository(tmp_path, "obsidian")
    result = invoke(["init", "--repo", str(proj.root)])
    config = tomllib.loads((proj.root / "knowl.toml").read_text())
    assert config["knowledge_dir"] == "."
    assert config["knowledge"] == {"layout": "flat", "exclude": ["Templates"]}
    assert config["links"] == {"resolution": "obsidian"}
    assert config["rules"] == {"KB202": "off"}
    assert "exclude Templates/: the vault's templates folder" in result.stderr
    assert "KB202 off: no page records when a person last reviewed it yet" in result.stderr
    assert (proj.root / ".gitignore").read_text() == ".knowl/\n"


def test_frontmatter_keys_the_pages_use_are_allowed(tmp_path: Path) -> None:
    proj = repository(tmp_path, "hugo")
    invoke(["init", "--repo", str(proj.root)])
    config = tomllib.loads((proj.root / "knowl.toml").read_text())
    assert config["frontmatter"]["allow"] == ["draft", "weight"]
    assert config["links"]["site_root"] == "content"


def test_a_dbt_project_and_review_dates_in_use(tmp_path: Path) -> None:
    proj = repository(tmp_path, "dbt")
    invoke(["init", "--repo", str(proj.root)])
    config = tomllib.loads((proj.root / "knowl.toml").read_text())
    assert config["semantics"] == {"dbt": {"project_dir": "dbt"}}
    knowl = repository(tmp_path, "knowl")
    invoke(["init", "--repo", str(knowl.root)])
    text = (knowl.root / "knowl.toml").read_text()
    assert "KB202" not in text and "layout" not in text  # review dates in use; the layout kept


def test_nothing_is_replaced_without_force(tmp_path: Path) -> None:
    proj = repository(tmp_path, "markdown")
    proj.write({"knowl.toml": "# mine\n", ".gitignore": "node_modules/\n*.log"})
    result = invoke(["init", "--repo", str(proj.root)], code=2)
    assert "knowl.toml exists (--force replaces it)" in result.stderr
    assert (proj.root / "knowl.toml").read_text() == "# mine\n"
    assert (proj.root / ".gitignore").read_text() == "node_modules/\n*.log"
    invoke(["init", "--repo", str(proj.root), "--force"])
    assert (proj.root / "knowl.toml").read_text().startswith("# knowl-build configuration")
    # .gitignore is appended to, byte for byte, never replaced; a second run adds nothing.
    assert (proj.root / ".gitignore").read_text() == "node_modules/\n*.log\n.knowl/\n"
    invoke(["init", "--repo", str(proj.root), "--force"])
    assert (proj.root / ".gitignore").read_text() == "node_modules/\n*.log\n.knowl/\n"


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    proj = repository(tmp_path, "mkdocs")
    result = invoke(["init", "--repo", str(proj.root), "--dry-run", "--github", "--pre-commit"])
    assert 'knowledge_dir = "documentation"' in result.stdout
    status = proj.run_git("status", "--porcelain", "--untracked-files=all")
    assert status == ""
    assert not (proj.root / ".knowl").exists()  # no cache, no history cache either


def test_pre_commit_and_github_files(tmp_path: Path) -> None:
    proj = repository(tmp_path, "markdown")
    invoke(["init", "--repo", str(proj.root), "--pre-commit", "--github"])
    hooks = yaml.safe_load((proj.root / ".pre-commit-config.yaml").read_text())
    [hook] = hooks["repos"][0]["hooks"]
    assert (hook["id"], hook["entry"], hook["pass_filenames"]) == (
        "knowl-check",
        "knowl check",
        False,
    )
    workflow = yaml.safe_load((proj.root / ".github/workflows/knowl.yml").read_text())
    steps = workflow["jobs"]["check"]["steps"]
    assert steps[0]["with"] == {"fetch-depth": 0} and steps[-1] == {"run": "knowl check"}
    # The hook runs as written: pre-commit's own runner, on this repository.
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    proj.run_git("add", "-A")
    run = subprocess.run(
        ["pre-commit", "run", "--all-files"], cwd=proj.root, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "knowl check" in run.stdout and "Passed" in run.stdout


def test_hostile_configuration_files_are_only_read(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    proj = Project(tmp_path / "evil").write(
        {
            # A tag that would run code with an unsafe loader, and a docs_dir leading out.
            "mkdocs.yml": f'docs_dir: ../../etc\nx: !!python/object/apply:os.system ["touch {marker}"]\n',
            "docs/index.md": "# Home\n",
            "dendron.yml": "workspace:\n  vaults:\n    - fsPath: /etc\n    - fsPath: ../..\n",
        }
    )
    proj.commit("evil")
    result = invoke(["init", "--repo", str(proj.root), "--dry-run"])
    assert not marker.exists()
    # The dendron.yml vaults lead out: the workspace root is read instead.
    assert 'knowledge_dir = "."' in result.stdout
    assert "/etc" not in result.stdout


def test_a_symlink_leading_out_is_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    proj = repository(tmp_path, "markdown")
    (proj.root / ".github").symlink_to(outside)
    result = invoke(["init", "--repo", str(proj.root), "--github"], code=2)
    assert "leads out of the project" in result.stderr
    assert list(outside.iterdir()) == []
    assert not (proj.root / "knowl.toml").exists()


def test_a_templates_folder_named_like_a_glob_is_excluded_as_itself(tmp_path: Path) -> None:
    proj = repository(tmp_path, "obsidian")
    proj.write({".obsidian/templates.json": '{"folder": "*"}', "*/T.md": "[[Nowhere]]\n"})
    proj.commit("a templates folder named *")
    invoke(["init", "--repo", str(proj.root)])
    config = tomllib.loads((proj.root / "knowl.toml").read_text())
    assert config["knowledge"]["exclude"] == ["[*]"]
    # */T.md is left out (its broken link is not reported); Templates/ is a folder of pages now.
    found = check_json(proj, code=1)
    assert [d["path"] for d in found] == ["Templates/Daily.md"]


@pytest.mark.parametrize(
    "setup, args, problem",
    [
        ({".github": "a file\n"}, ["--github"], ".github is no folder"),
        ({".gitignore/x": "a folder\n"}, [], ".gitignore exists and is no file"),
    ],
)
def test_targets_that_cannot_be_written_refuse_before_anything_is_written(
    tmp_path: Path, setup: dict[str, str], args: list[str], problem: str
) -> None:
    proj = repository(tmp_path, "markdown")
    proj.write(setup)
    result = invoke(["init", "--repo", str(proj.root), *args], code=2)
    assert problem in result.stderr and "Traceback" not in result.stderr
    assert not (proj.root / "knowl.toml").exists()


def test_names_knowl_cannot_write_back_are_not_used(tmp_path: Path) -> None:
    proj = Project(tmp_path / "odd").write(
        {
            "mkdocs.yml": "docs_dir: a\\b\n",
            "a\\b/p.md": "# P\n",
            # A DEL in a key, written as YAML's escape: the key holds the character itself.
            "docs/q.md": '---\n"x\\x7fy": 1\n---\n# Q\n',
        }
    )
    proj.commit("odd names")
    result = invoke(["init", "--repo", str(proj.root), "--dry-run"])
    written = result.stdout.split("\n", 1)[1]
    config = tomllib.loads(written)  # valid TOML: the DEL of a key is escaped
    assert config["knowledge_dir"] == "docs"  # the backslashed folder is not used
    assert config["frontmatter"]["allow"] == ["x\x7fy"]
