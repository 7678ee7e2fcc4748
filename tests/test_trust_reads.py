"""Trust, class 3: every read stays inside the project, and a page's scope is its real path.

dbt model paths that lead outside the project (`..`, absolute, a symlink) are KB050 at their
item in dbt_project.yml and nothing there is read; symlinks under knowledge/ that cross scopes
are KB008 and skipped; a user folder whose name is not a valid user name is KB004.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import SEMANTICS, Project, invoke, records

# A word that exists only outside the project: it must appear in no output and no artifact.
MARKER = "zanzibarquokka"
OUTSIDE_MODELS = f"""\
semantic_models:
  - name: leaked
    description: {MARKER} description
    model: ref('leaked')
    measures:
      - name: total
        agg: sum
        expr: {MARKER}_column
"""
TOML = "[rules]\nKB202 = 'off'\n[semantics.dbt]\nproject_dir = 'analytics_dbt'\n"
PAGE = "---\nsummary: Reads the dbt layer\n---\nExpression: << sl:shop_dbt.leaked.total.expr >>.\n"


def _artifact(root: Path) -> Path:
    out = root / ".knowl" / "build"
    return out / (out / "CURRENT").read_text().strip()


def _everything(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def _findings(stdout: str) -> list[tuple[str, str, int, int]]:
    return [
        (d["path"], d["code"], d["line"], d["column"]) for d in json.loads(stdout)["diagnostics"]
    ]


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leaked.yml").write_text(OUTSIDE_MODELS, encoding="utf-8")
    return outside


@pytest.mark.parametrize(
    "item",
    ["../../outside", "ABSOLUTE", "linked", "models/../../../outside", "~/outside"],
    ids=["dotdot", "absolute", "symlink", "normalised-dotdot", "home"],
)
def test_dbt_model_path_outside_is_refused_at_its_item(
    project: Callable[..., Project], tmp_path: Path, item: str
) -> None:
    outside = _outside(tmp_path)
    item = str(outside) if item == "ABSOLUTE" else item
    dbt_project = f"name: shop_dbt\nversion: '1.0.0'\nmodel-paths:\n  - models\n  - {item}\n"
    proj = project(
        {
            **SEMANTICS,
            "knowl.toml": TOML,
            "analytics_dbt/dbt_project.yml": dbt_project,
            "analytics_dbt/models/.keep": "",
            "knowledge/global/reads.md": PAGE,
        },
        commit=False,
    )
    (proj.root / "analytics_dbt" / "linked").symlink_to(outside, target_is_directory=True)
    proj.commit("dbt")

    result = invoke(["build", "--repo", str(proj.root), "--format", "json", "--allow-errors"])
    found = _findings(result.stdout)
    assert ("analytics_dbt/dbt_project.yml", "KB050", 5, 5) in found
    assert [f for f in found if f[0] == "analytics_dbt/dbt_project.yml"] == [
        ("analytics_dbt/dbt_project.yml", "KB050", 5, 5)
    ]
    message = next(
        d["message"]
        for d in json.loads(result.stdout)["diagnostics"]
        if d["path"] == "analytics_dbt/dbt_project.yml"
    )
    assert message.startswith(f"model-paths item '{item}' ")
    # The page's directive names an entity that would only exist if the outside was read.
    assert ("knowledge/global/reads.md", "KB106", 4, 13) in found
    assert MARKER not in result.output
    folder = _artifact(proj.root)
    assert MARKER.encode() not in _everything(folder)
    entities = json.loads((folder / "entities.json").read_text())["entities"]
    assert not any(e["name"].startswith("shop_dbt.leaked") for e in entities)
    search = invoke(["search", MARKER, "--repo", str(proj.root), "--json"])
    assert json.loads(search.stdout)["hits"] == []


def test_source_paths_are_checked_when_they_are_read(
    project: Callable[..., Project], tmp_path: Path
) -> None:
    _outside(tmp_path)
    proj = project(
        {
            **SEMANTICS,
            "knowl.toml": TOML,
            "analytics_dbt/dbt_project.yml": "name: shop_dbt\nsource-paths: ['../../outside']\n",
        }
    )
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    assert _findings(result.stdout) == [("analytics_dbt/dbt_project.yml", "KB050", 2, 16)]
    assert MARKER not in result.output


def test_dbt_paths_inside_the_project_still_read(project: Callable[..., Project]) -> None:
    """`..` that stays inside the project root is an ordinary folder of the project."""
    inside = OUTSIDE_MODELS.replace(MARKER, "shared")
    proj = project(
        {
            **SEMANTICS,
            "knowl.toml": TOML,
            "analytics_dbt/dbt_project.yml": "name: shop_dbt\nmodel-paths: ['../shared_models']\n",
            "shared_models/leaked.yml": inside,
            "knowledge/global/reads.md": PAGE,
        }
    )
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"])
    assert _findings(result.stdout) == []


def test_dbt_project_file_and_default_models_symlinked_outside(
    project: Callable[..., Project], tmp_path: Path
) -> None:
    outside = _outside(tmp_path)
    (outside / "dbt_project.yml").write_text(f"name: {MARKER}\n", encoding="utf-8")
    proj = project({**SEMANTICS, "knowl.toml": TOML, "analytics_dbt/.keep": ""}, commit=False)
    (proj.root / "analytics_dbt" / "dbt_project.yml").symlink_to(outside / "dbt_project.yml")
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"])
    assert _findings(result.stdout) == [("analytics_dbt/dbt_project.yml", "KB008", 1, 1)]

    (proj.root / "analytics_dbt" / "dbt_project.yml").unlink()
    (proj.root / "analytics_dbt" / "dbt_project.yml").write_text("name: shop_dbt\n")
    (proj.root / "analytics_dbt" / "models").symlink_to(outside, target_is_directory=True)
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"])
    assert _findings(result.stdout) == [("analytics_dbt/models", "KB008", 1, 1)]
    assert MARKER not in result.output


@pytest.mark.parametrize("key", ["knowledge_dir", "semantics_dir", "semantics.dbt.project_dir"])
def test_configured_folder_leading_outside_is_a_configuration_error(
    project: Callable[..., Project], tmp_path: Path, key: str
) -> None:
    outside = _outside(tmp_path)
    folder = {"knowledge_dir": "knowledge", "semantics_dir": "semantics"}.get(key, "analytics_dbt")
    proj = project({"knowl.toml": TOML}, commit=False)
    (proj.root / folder).symlink_to(outside, target_is_directory=True)
    result = invoke(["check", "--repo", str(proj.root)], code=2)
    assert f"knowl: error: {key} '{folder}' leads outside the project" in result.stderr
    assert MARKER not in result.output


# --- symlinks across scopes under knowledge/ ------------------------------------------------

PRIVATE = "---\nsummary: Alice's private notes\n---\nOnly alice reads about the quetzalpine.\n"
PUBLIC = "---\nsummary: Public page\n---\nEveryone reads about the marmotfjord.\n"


def test_symlinks_across_scopes_are_skipped(project: Callable[..., Project]) -> None:
    proj = project(
        {
            **SEMANTICS,
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            "knowledge/global/public.md": PUBLIC,
            "knowledge/user/alice/private.md": PRIVATE,
            "knowledge/user/bob/notes.md": "---\nsummary: Bob's notes\n---\nBob.\n",
            "docs/shared.md": "---\nsummary: Shared from docs\n---\nShared text.\n",
        },
        commit=False,
    )
    knowledge = proj.root / "knowledge"
    # Across scopes: refused.
    (knowledge / "global" / "leak.md").symlink_to("../user/alice/private.md")
    (knowledge / "global" / "alice-folder").symlink_to("../user/alice", target_is_directory=True)
    (knowledge / "user" / "bob" / "alice").symlink_to("../alice", target_is_directory=True)
    (knowledge / "user" / "bob" / "public.md").symlink_to("../../global/public.md")
    (knowledge / "user" / "mallory").symlink_to("alice", target_is_directory=True)
    (knowledge / "user" / "bob" / "everything").symlink_to("../..", target_is_directory=True)
    # Within one scope, or to a file of the project outside knowledge/: followed.
    (knowledge / "user" / "bob" / "again.md").symlink_to("notes.md")
    (knowledge / "global" / "shared.md").symlink_to("../../docs/shared.md")
    proj.commit("links")

    result = invoke(["build", "--repo", str(proj.root), "--format", "json"])
    found = _findings(result.stdout)
    assert found == [
        ("knowledge/global/alice-folder", "KB008", 1, 1),
        ("knowledge/global/leak.md", "KB008", 1, 1),
        ("knowledge/user/bob/alice", "KB008", 1, 1),
        ("knowledge/user/bob/everything", "KB008", 1, 1),
        ("knowledge/user/bob/public.md", "KB008", 1, 1),
        ("knowledge/user/mallory", "KB008", 1, 1),
    ]
    messages = {d["path"]: d["message"] for d in json.loads(result.stdout)["diagnostics"]}
    assert messages["knowledge/global/leak.md"] == (
        "symlink 'knowledge/global/leak.md' leads into the scope of user:alice from global "
        "scope and is skipped"
    )

    folder = _artifact(proj.root)
    pages = records(folder)
    assert sorted(p["path"] for p in pages) == [
        "knowledge/global/public.md",
        "knowledge/global/shared.md",
        "knowledge/user/alice/private.md",
        "knowledge/user/bob/again.md",
        "knowledge/user/bob/notes.md",
    ]
    graph = (folder / "graph.json").read_text()
    for refused in ("leak", "alice-folder", "bob/alice", "mallory", "everything", "bob/public"):
        assert refused not in graph

    # The private page is found by its owner only, under its own path.
    def hits(*args: str) -> list[tuple[str, str]]:
        answer = invoke(["search", "quetzalpine", "--repo", str(proj.root), "--json", *args])
        return [(h["page"], h["scope"]) for h in json.loads(answer.stdout)["hits"]]

    assert hits() == []
    assert hits("--user", "bob") == []
    assert hits("--user", "mallory") == []
    assert hits("--user", "alice") == [("private", "user:alice")]


# --- owner folder names -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("owner", "reason"),
    [
        ("a:b", "it contains ':'"),
        (" alice", "it starts or ends with white space"),
        ("x" * 101, "it is longer than 100 characters"),
        ("ev\u202eil", "it contains the invisible or control character U+202E"),
    ],
    ids=["colon", "space", "long", "bidi"],
)
def test_invalid_owner_folder_is_kb004_with_the_reason(
    project: Callable[..., Project], owner: str, reason: str
) -> None:
    path = f"knowledge/user/{owner}/page.md"
    proj = project({"knowl.toml": "[rules]\nKB202 = 'off'\n", path: "# Page\n"}, git=False)
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    diagnostics = [d for d in json.loads(result.stdout)["diagnostics"] if d["code"] != "KB009"]
    assert [(d["path"], d["code"], d["line"], d["column"]) for d in diagnostics] == [
        (path, "KB004", 1, 1)
    ]
    assert "which is not a valid user name: " + reason in diagnostics[0]["message"]
    assert "\x07" not in diagnostics[0]["message"] and "\u202e" not in diagnostics[0]["message"]


def test_owner_folder_with_a_control_character_is_kb007(project: Callable[..., Project]) -> None:
    """A control character in any file or folder name is refused by discovery (KB007, shown
    escaped), before the folder could be read as an owner."""
    proj = project(
        {"knowl.toml": "[rules]\nKB202 = 'off'\n", "knowledge/user/bell\x07/p.md": "# P\n"}
    )
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    assert _findings(result.stdout) == [("knowledge/user/bell\\x07", "KB007", 1, 1)]
    assert "\x07" not in result.output


def test_valid_owner_folders_are_pages(project: Callable[..., Project]) -> None:
    files: dict[str, str | bytes] = {
        "knowl.toml": "[rules]\nKB202 = 'off'\n",
        "knowledge/user/alice/p.md": "# P\n",
        "knowledge/user/Zoë Ñ/p.md": "# P\n",
        "knowledge/user/x" + "y" * 99 + "/p.md": "# P\n",
    }
    proj = project(files)
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"])
    assert _findings(result.stdout) == []


def test_hidden_owner_folders_are_not_read(project: Callable[..., Project]) -> None:
    """A folder name starting with `.` is skipped like every dot folder (SPEC 1)."""
    proj = project({"knowledge/user/.alice/p.md": "# P\n", "knowledge/global/g.md": "# G\n"})
    assert os.path.isdir(proj.root / "knowledge/user/.alice")
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"])
    assert [f[0] for f in _findings(result.stdout)] == ["knowledge/global/g.md"]


# --- symlinks to what discovery skips ----------------------------------------------------

SECRET_WORD = "correcthorsebattery"


def test_symlinks_to_hidden_and_ignored_files_are_skipped(project: Callable[..., Project]) -> None:
    """poc_symlink_hidden.sh: committed links to `.env`, to a git-ignored file, into `.git/`
    and `.knowl/`, to an ignored folder, and a folder link whose target holds an ignored file.
    Each link to what discovery skips is KB008 and nothing it reaches is read; the files of
    a followed folder link that git ignores at their real path are skipped like any ignored
    file; links to ordinary files of the project are followed as before."""
    proj = project(
        {
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            ".gitignore": "local-secrets.txt\nbuildout/\ndocs/private.md\n",
            ".env": f"DB_PASSWORD={SECRET_WORD}\n",
            ".knowl/notes.md": f"# {SECRET_WORD}\n",
            ".hidden/notes.md": f"# {SECRET_WORD}\n",
            "local-secrets.txt": f"db pw {SECRET_WORD}\n",
            "buildout/page.md": f"# {SECRET_WORD}\n",
            "docs/shared.md": "# Shared\n",
            "docs/private.md": f"# {SECRET_WORD}\n",
            "knowledge/global/fine.md": "# Fine\n",
        },
        commit=False,
    )
    glob = proj.root / "knowledge" / "global"
    for name, target in {
        "env.md": "../../.env",
        "local.md": "../../local-secrets.txt",
        "head.md": "../../.git/HEAD",
        "knowl.md": "../../.knowl/notes.md",
        "hidden": "../../.hidden",
        "built": "../../buildout",
        "docs": "../../docs",
        "shared-link.md": "../../docs/shared.md",
        "again.md": "fine.md",
    }.items():
        (glob / name).symlink_to(target)
    proj.commit("links")

    result = invoke(["build", "--repo", str(proj.root), "--format", "json"])
    diagnostics = json.loads(result.stdout)["diagnostics"]
    assert [(d["path"], d["code"], d["line"], d["column"]) for d in diagnostics] == [
        ("knowledge/global/built", "KB008", 1, 1),
        ("knowledge/global/env.md", "KB008", 1, 1),
        ("knowledge/global/head.md", "KB008", 1, 1),
        ("knowledge/global/hidden", "KB008", 1, 1),
        ("knowledge/global/knowl.md", "KB008", 1, 1),
        ("knowledge/global/local.md", "KB008", 1, 1),
    ]
    messages = {d["path"]: d["message"] for d in diagnostics}
    assert messages["knowledge/global/env.md"] == (
        "symlink 'knowledge/global/env.md' points at a hidden or ignored file and is skipped"
    )
    assert messages["knowledge/global/built"] == (
        "symlink 'knowledge/global/built' points at a hidden or ignored folder and is skipped"
    )
    folder = _artifact(proj.root)
    pages = records(folder)
    assert sorted(p["path"] for p in pages) == [
        "knowledge/global/again.md",
        "knowledge/global/docs/shared.md",
        "knowledge/global/fine.md",
        "knowledge/global/shared-link.md",
    ]
    assert SECRET_WORD.encode() not in _everything(folder)
    assert SECRET_WORD not in result.output


def test_git_answers_for_every_link_target_at_once(project: Callable[..., Project]) -> None:
    """One `git check-ignore` for the whole walk; a tracked file that an ignore rule matches
    is not ignored (git's view), unless the index cannot be used (then the rules decide)."""
    proj = project(
        {
            ".gitignore": "*.log\nsub/\n",
            "kept.log": "tracked\n",
            "a.txt": "",
            "x.log": "",
            "sub/y.md": "",
        },
        commit=False,
    )
    proj.run_git("add", "-f", "kept.log", ".gitignore", "a.txt")
    proj.commit("tracked")
    from knowl_build.history.git import GitRepo

    repo = GitRepo.find(proj.root)
    assert repo is not None
    paths = ["a.txt", "kept.log", "x.log", "sub/y.md", "sub", "missing.log"]
    assert repo.check_ignore(paths) == {"x.log", "sub/y.md", "sub", "missing.log"}
    assert repo.check_ignore(paths, index=False) == {
        "kept.log",
        "x.log",
        "sub/y.md",
        "sub",
        "missing.log",
    }
    assert repo.check_ignore(["a.txt"]) == set()  # git's exit 1: none is ignored
    assert repo.check_ignore([]) == set()
