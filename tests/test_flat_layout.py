"""`[knowledge] layout = "flat"`: the folders a repository already has, checked as they are.

Every page under `knowledge_dir` is global (no `global/` folder), user scopes exist only under
`[knowledge] users_dir`, `knowledge_dir` may be the project's root, and `[knowledge] exclude`
leaves templates and the like out. Rules, history, the graph, the reader and the writes work
as in the scoped layout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke

ENTITY = "shop_pg.orders.total_revenue"


def check(proj: Project, code: int = 0) -> list[dict[str, Any]]:
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=code)
    found: list[dict[str, Any]] = json.loads(result.stdout)["diagnostics"]
    return found


def hugo_like(tmp_path: Path) -> Project:
    proj = Project(tmp_path / "site").write(
        {
            **SEMANTICS,
            "knowl.toml": (
                'knowledge_dir = "content"\n'
                "[knowledge]\n"
                'layout = "flat"\n'
                'exclude = ["content/templates", "**/drafts"]\n'
                "[rules]\nKB202 = 'off'\n"
            ),
            "content/_index.md": "# Home\n\nSee [revenue](docs/revenue.md) and [[refunds]].\n",
            "content/docs/revenue.md": (
                f"---\nsl_refs: [{ENTITY}]\nmeta:\n  bound_fingerprints:\n"
                f"    {ENTITY}: {FP_SUM_AMOUNT}\n---\n# Revenue\n\n## Net\n"
            ),
            "content/docs/refunds.md": "# Refunds\n\nBack to [the home page](../_index.md).\n",
            "content/docs/drafts/wip.md": "[[nowhere]]\n",
            "content/templates/default.md": "---\ntitle: {{ .Name }}\n---\n[[nowhere]]\n",
        }
    )
    proj.commit("site")
    return proj


def test_every_page_under_the_folder_is_global_and_checks_clean(tmp_path: Path) -> None:
    proj = hugo_like(tmp_path)
    assert check(proj) == []
    invoke(["build", "--repo", str(proj.root)])
    shown = json.loads(invoke(["show", "--repo", str(proj.root), "revenue", "--json"]).stdout)
    assert (shown["scope"], shown["path"]) == ("global", "content/docs/revenue.md")
    assert [(b["page"], b["path"]) for b in shown["backlinks"]] == [("_index", "content/_index.md")]
    hits = json.loads(invoke(["search", "--repo", str(proj.root), "refunds", "--json"]).stdout)
    assert (hits["hits"][0]["page"], hits["hits"][0]["scope"]) == ("refunds", "global")


def test_a_broken_link_in_the_flat_layout_is_found_at_its_position(tmp_path: Path) -> None:
    proj = hugo_like(tmp_path)
    proj.write({"content/docs/refunds.md": "# Refunds\n\nSee [[missing]].\n"})
    [finding] = check(proj, code=1)
    assert (finding["path"], finding["line"], finding["column"], finding["code"]) == (
        "content/docs/refunds.md",
        3,
        5,
        "KB103",
    )


def test_excluded_folders_hold_no_pages(tmp_path: Path) -> None:
    proj = hugo_like(tmp_path)
    found = invoke(["check", "--repo", str(proj.root)]).stderr
    assert "checked 3 page(s)" in found


def test_drift_from_history_in_the_flat_layout(tmp_path: Path) -> None:
    proj = hugo_like(tmp_path)
    orders = proj.root / "semantics/shop/orders.yaml"
    orders.write_text(orders.read_text().replace('expr: "sum(amount)"', 'expr: "sum(amount)*2"'))
    proj.commit("measure changed")
    drift = [d for d in check(proj) if d["code"] == "KB201"]
    assert [d["path"] for d in drift] == ["content/docs/revenue.md"]


def root_vault(tmp_path: Path, users: bool = True) -> Project:
    table = '[knowledge]\nlayout = "flat"\n' + ('users_dir = "people"\n' if users else "")
    proj = Project(tmp_path / "vault").write(
        {
            **SEMANTICS,
            "knowl.toml": f'knowledge_dir = "."\n{table}[rules]\nKB202 = "off"\n',
            "README.md": "# Vault\n\n[[Guide]] and [the orders](semantics/shop/orders.yaml).\n",
            "notes/Guide.md": "# Guide\n",
            "people/alice/Todo.md": "# Todo\n\n[[Guide]]\n",
            ".obsidian/app.json": "{}",
            ".gitignore": "build/\n",
            "build/Out.md": "[[nowhere]]\n",
        }
    )
    proj.commit("vault")
    return proj


def test_the_root_as_knowledge_folder_with_a_users_folder(tmp_path: Path) -> None:
    proj = root_vault(tmp_path)
    assert check(proj) == []
    invoke(["build", "--repo", str(proj.root)])
    mine = json.loads(
        invoke(["show", "--repo", str(proj.root), "--user", "alice", "Todo", "--json"]).stdout
    )
    assert (mine["scope"], mine["path"]) == ("user:alice", "people/alice/Todo.md")
    # Another user, and anonymous readers, do not see alice's page.
    invoke(["show", "--repo", str(proj.root), "--user", "bob", "Todo", "--json"], code=1)
    hits = json.loads(invoke(["search", "--repo", str(proj.root), "todo", "--json"]).stdout)
    assert all(h.get("scope") != "user:alice" for h in hits["hits"])


def test_a_page_directly_in_the_users_folder_is_kb004(tmp_path: Path) -> None:
    proj = root_vault(tmp_path)
    proj.write({"people/loose.md": "# Loose\n"})
    [finding] = check(proj, code=1)
    assert (finding["code"], finding["path"]) == ("KB004", "people/loose.md")
    assert "people/<owner>/" in finding["hint"]


def test_writes_go_into_the_flat_folders(tmp_path: Path) -> None:
    proj = root_vault(tmp_path)
    store = ["store", "--repo", str(proj.root), "--json", "--no-build", "--category", "fact"]
    written = json.loads(invoke([*store, "--title", "Churn", "--content", "Churn is x."]).stdout)
    assert written["path"] == "churn.md"
    mine = json.loads(
        invoke([*store, "--user", "alice", "--title", "Mine", "--content", "Mine is y."]).stdout
    )
    assert mine["path"] == "people/alice/mine.md"
    new = json.loads(
        invoke(["new", "--repo", str(proj.root), "Plan", "--folder", "notes", "--json"]).stdout
    )
    assert new["path"] == "notes/plan.md"
    assert [d for d in check(proj) if d["severity"] == "error"] == []


def test_a_user_page_without_a_users_folder_is_refused(tmp_path: Path) -> None:
    proj = root_vault(tmp_path, users=False)
    result = invoke(["new", "--repo", str(proj.root), "Mine", "--user", "alice"], code=2)
    assert "users_dir" in result.stderr


@pytest.mark.parametrize(
    "table, problem",
    [
        ('layout = "tree"', "layout"),
        ('users_dir = "../people"', "users_dir"),
        ('users_dir = "/people"', "users_dir"),
        ("exclude = 3", "exclude"),
        ('users_dir = "people"', "users_dir"),  # needs the flat layout
    ],
)
def test_bad_layout_settings_are_configuration_errors(
    tmp_path: Path, table: str, problem: str
) -> None:
    proj = Project(tmp_path / "p").write({"knowl.toml": f"[knowledge]\n{table}\n"})
    result = invoke(["check", "--repo", str(proj.root)], code=2)
    assert problem in result.stderr and "Traceback" not in result.stderr


def test_drift_from_history_with_the_root_as_knowledge_folder(tmp_path: Path) -> None:
    proj = root_vault(tmp_path)
    proj.write(
        {
            "notes/Revenue.md": (
                f"---\nsl_refs: [{ENTITY}]\nmeta:\n  bound_fingerprints:\n"
                f"    {ENTITY}: {FP_SUM_AMOUNT}\n---\n# Revenue\n"
            )
        }
    )
    proj.commit("page")
    orders = proj.root / "semantics/shop/orders.yaml"
    orders.write_text(orders.read_text().replace('expr: "sum(amount)"', 'expr: "sum(amount)*2"'))
    proj.commit("measure changed")
    drift = [d for d in check(proj) if d["code"] == "KB201"]
    assert [d["path"] for d in drift] == ["notes/Revenue.md"]
    timeline = json.loads(
        invoke(["timeline", "--repo", str(proj.root), "Revenue", "--json"]).stdout
    )
    assert [v["path"] for v in timeline["versions"]] == ["notes/Revenue.md"]


def test_the_site_of_a_flat_vault(tmp_path: Path) -> None:
    proj = root_vault(tmp_path)
    invoke(["build", "--repo", str(proj.root), "--site"])
    site = proj.root / ".knowl" / "site"
    html = sorted(p.relative_to(site).as_posix() for p in site.rglob("pages/*.html"))
    assert html == ["pages/Guide.html", "pages/README.html"]  # alice's page is no one else's
    assert 'href="../pages/Guide.html"' in (site / "pages/README.html").read_text()
    # The site is no page of the vault: the next check reads the same pages.
    assert check(proj) == []


def test_new_never_writes_into_another_scope_or_a_folder_nothing_reads(tmp_path: Path) -> None:
    proj = root_vault(tmp_path)
    proj.write(
        {
            "knowl.toml": (proj.root / "knowl.toml")
            .read_text()
            .replace("[knowledge]\n", '[knowledge]\nexclude = ["drafts"]\n')
        }
    )
    # The users folder holds alice's scope: an anonymous --folder there is refused.
    result = invoke(
        ["new", "--repo", str(proj.root), "Planted", "--folder", "people/alice"], code=2
    )
    assert "in user:alice's folder, not global's" in result.stderr
    for folder, why in [
        ("drafts", "left out by [knowledge] exclude"),
        ("semantics", "holds no pages"),
        ("build", "ignored by git"),
    ]:
        answer = json.loads(
            invoke(
                ["new", "--repo", str(proj.root), "X", "--folder", folder, "--json"], code=1
            ).stdout
        )
        assert answer["action"] == "refused" and why in answer["message"], folder
    status = proj.run_git("status", "--porcelain", "--untracked-files=all")
    assert status.strip() == "M knowl.toml"


@pytest.mark.parametrize(
    "glob, problem",
    [("[z-a]x", "is no glob"), ("**/" * 6 + "x", "more than 4 '**'")],
)
def test_an_exclude_glob_that_cannot_work_is_a_configuration_error(
    tmp_path: Path, glob: str, problem: str
) -> None:
    proj = Project(tmp_path / "p").write(
        {"knowl.toml": f'[knowledge]\nlayout = "flat"\nexclude = [{json.dumps(glob)}]\n'}
    )
    result = invoke(["check", "--repo", str(proj.root)], code=2)
    assert problem in result.stderr and "internal error" not in result.stderr


def test_repeated_double_stars_match_in_linear_time(tmp_path: Path) -> None:
    deep = "a/" * 25
    proj = Project(tmp_path / "p").write(
        {
            "knowl.toml": (
                'knowledge_dir = "."\n[knowledge]\nlayout = "flat"\n'
                'exclude = ["**/**/**/**/x"]\n[rules]\nKB202 = "off"\n'
            ),
            f"{deep}p.md": "# P\n",
            f"{deep}x/q.md": "[[nowhere]]\n",
        }
    )
    proj.commit()
    assert check(proj) == []  # x/q.md is left out; p.md is checked


def test_the_git_folder_is_no_knowledge_folder(tmp_path: Path) -> None:
    proj = Project(tmp_path / "p").write({"knowl.toml": 'knowledge_dir = ".git"\n'})
    result = invoke(["new", "--repo", str(proj.root), "Lost"], code=2)
    assert "knowledge_dir" in result.stderr
    assert not list((proj.root / ".git").glob("*.md"))
