"""History never stops the gate: git failing on one object, or one command, is one KB012
warning naming it, the rules go on, and no git failure becomes exit 2 or an internal error.

Real repositories with real damage: a seed CSV's blob deleted from `.git/objects` (the dbt
project's history), an old version of the semantic YAML deleted, overwritten or cut short, a
tree the log needs deleted, a page renamed whose old blob is gone, partial clones whose
promisor remote is reachable or gone, and objects crafted to lie about their size.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from knowl_build.history.git import GitRepo
from knowl_build.history.log import GitHistory
from knowl_build.history.records import INCOMPLETE, History
from knowl_build.pipeline.analysis import MAX_HISTORY_PROBLEMS, history_findings
from knowl_build.rules.context import GitFacts
from knowl_build.semantic.layer import measure_fingerprint
from tests.helpers import Project, invoke

TOML = "[rules]\nKB202 = 'off'\n[semantics.dbt]\nproject_dir = 'analytics_dbt'\n"
DBT = "name: shop_dbt\nversion: '1.0.0'\nconfig-version: 2\nmodel-paths: [models]\n"
MODEL_FILE = "analytics_dbt/models/orders.yml"
MODEL = """\
version: 2
semantic_models:
  - name: orders
    model: ref('fct_orders')
    entities:
      - name: order_id
        type: primary
    measures:
      - name: order_total
        agg: sum
        expr: amount
"""
PAGE_PATH = "knowledge/global/orders.md"
PAGE = (
    "---\nsummary: Orders\nsl_refs: [shop_dbt.orders.order_total]\n"
    'meta:\n  last_validated_at: "2026-01-01T12:00:00Z"\n  bound_fingerprints:\n'
    f'    shop_dbt.orders.order_total: "{measure_fingerprint("sum(amount)")}"\n---\nBody.\n'
)
SEED = "analytics_dbt/seeds/countries.csv"
INCOMPLETE_TEXT = f"unknown ({INCOMPLETE})"


@dataclass
class Repo:
    proj: Project
    c: dict[str, str]

    @property
    def root(self) -> Path:
        return self.proj.root

    def blob(self, commit: str, path: str) -> str:
        return self.proj.run_git("rev-parse", f"{self.c[commit]}:{path}").strip()

    def object_file(self, oid: str) -> Path:
        path = self.root / ".git" / "objects" / oid[:2] / oid[2:]
        assert path.is_file(), f"{oid} is not a loose object"
        return path

    def delete(self, oid: str) -> None:
        self.object_file(oid).unlink()

    def overwrite(self, oid: str, data: bytes) -> None:
        path = self.object_file(oid)
        path.chmod(0o644)
        path.write_bytes(data)

    def where(self, commit: str, date: str, subject: str) -> str:
        return f'commit {self.c[commit][:12]} ({date}, "{subject}")'


@pytest.fixture
def dbt_repo(project: Callable[..., Project]) -> Repo:
    """A dbt project: its seed renamed and edited (rename detection reads such blobs), then the
    measure's expression changed twice."""
    proj = project(
        {
            "knowl.toml": TOML,
            ".gitignore": ".knowl/\n",
            "analytics_dbt/dbt_project.yml": DBT,
            MODEL_FILE: MODEL,
            SEED: "id,name\n1,a\n2,b\n",
            PAGE_PATH: PAGE,
        },
        commit=False,
    )
    c = {"initial": proj.commit("initial")}
    proj.run_git("mv", SEED, "analytics_dbt/seeds/country_codes.csv")
    proj.write({"analytics_dbt/seeds/country_codes.csv": "id,name\n1,a\n2,b\n3,c\n"})
    c["seed"] = proj.commit("Rename the seed")
    proj.write({MODEL_FILE: MODEL.replace("expr: amount", "expr: amount_eur")})
    c["eur"] = proj.commit("Amounts in EUR")
    proj.write({MODEL_FILE: MODEL.replace("expr: amount", "expr: amount_net")})
    c["net"] = proj.commit("Net amounts")
    return Repo(proj, c)


def findings(root: Path, command: str = "check", code: int = 0) -> list[tuple[str, str, str]]:
    """(code, path, message) of every finding, from a run without caches (the history replay
    cached by an earlier run would not read the damaged objects at all)."""
    shutil.rmtree(root / ".knowl", ignore_errors=True)
    args = [command, "--repo", str(root), "--format", "json"]
    result = invoke(args if command == "check" else [*args, "--allow-errors"], code=code)
    assert "internal error" not in result.output and "Traceback" not in result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)["diagnostics"]
    return [(r["code"], r["path"], r["message"]) for r in rows]


def full_findings(repo: Repo) -> list[tuple[str, str, str]]:
    # Each change since the bound version, the first one first (the measure is bound: KB201
    # alone, no KB203 for the same changes).
    eur = repo.where("eur", "2026-01-03", "Amounts in EUR")
    net = repo.where("net", "2026-01-04", "Net amounts")
    return [
        (
            "KB201",
            PAGE_PATH,
            f"'shop_dbt.orders.order_total' drifted: written against `sum(amount)`, now "
            f"`sum(amount_net)`; changed in {eur}, then in {net}",
        ),
    ]


def timeline_commits(root: Path, page: str = "orders") -> list[str]:
    result = invoke(["timeline", page, "--repo", str(root), "--json"])
    assert "internal error" not in result.output
    return [v["commit"] for v in json.loads(result.stdout)["versions"]]


def test_a_seed_csv_git_cannot_read_is_never_read(dbt_repo: Repo) -> None:
    before = findings(dbt_repo.root)
    assert before == full_findings(dbt_repo)
    dbt_repo.delete(dbt_repo.blob("initial", SEED))
    # The damage is real: rename detection over the dbt project reads the seed and fails.
    log = subprocess.run(
        ["git", "log", "-M", "--raw", "HEAD", "--", "analytics_dbt"],
        cwd=dbt_repo.root,
        capture_output=True,
        text=True,
    )
    assert log.returncode != 0 and "unable to read" in log.stderr
    # History rules read pages and semantic YAML only: the gate sees nothing wrong.
    assert findings(dbt_repo.root) == before
    assert findings(dbt_repo.root, "build") == before
    assert len(timeline_commits(dbt_repo.root)) == 1


def _cut_short(data: bytes) -> bytes:
    return data[: len(data) // 2]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("delete", "missing"),
        ("garbage", "missing"),  # git cannot inflate it: for git it is not there
        ("truncate", r"corrupt: fatal: unable to stream [0-9a-f]{40} to stdout"),
    ],
)
def test_a_semantic_version_git_cannot_read_is_one_warning(
    dbt_repo: Repo, damage: str, reason: str
) -> None:
    oid = dbt_repo.blob("net", MODEL_FILE)  # the last change: its commit cannot be told
    if damage == "delete":
        dbt_repo.delete(oid)
    elif damage == "garbage":
        dbt_repo.overwrite(oid, b"not an object")
    else:
        dbt_repo.overwrite(oid, _cut_short(dbt_repo.object_file(oid).read_bytes()))
    for command in ("check", "build"):
        got = findings(dbt_repo.root, command)
        assert [f[:2] for f in got] == [("KB012", "."), ("KB201", PAGE_PATH)]
        assert re.fullmatch(
            re.escape(
                f"git could not read {MODEL_FILE} in commit {dbt_repo.c['net'][:12]} (blob {oid}: "
            )
            + reason
            + re.escape("); the history rules go on without that version"),
            got[0][2],
        ), got[0][2]
        # The last change may be that version's or an uncommitted one: neither is claimed;
        # the change before it was seen.
        eur = dbt_repo.where("eur", "2026-01-03", "Amounts in EUR")
        assert got[1][2] == (
            "'shop_dbt.orders.order_total' drifted: written against `sum(amount)`, now "
            f"`sum(amount_net)`; changed in {eur}, then in {INCOMPLETE_TEXT}"
        )
    assert len(timeline_commits(dbt_repo.root)) == 1


def test_an_older_unreadable_version_keeps_the_newer_claims(dbt_repo: Repo) -> None:
    oid = dbt_repo.blob("initial", MODEL_FILE)
    dbt_repo.delete(oid)
    got = findings(dbt_repo.root)
    assert got[0] == (
        "KB012",
        ".",
        f"git could not read {MODEL_FILE} in commit {dbt_repo.c['initial'][:12]} (blob {oid}: "
        "missing); the history rules go on without that version",
    )
    # The measure's first readable version is from "eur": where it came from is unknown, the
    # change after it is seen; the bound expression was only in the unreadable version.
    net = dbt_repo.where("net", "2026-01-04", "Net amounts")
    assert got[1:] == [
        (
            "KB201",
            PAGE_PATH,
            f"'shop_dbt.orders.order_total' drifted: written against {INCOMPLETE_TEXT}, now "
            f"`sum(amount_net)`; last changed in {net}",
        ),
    ]


def test_a_log_git_cannot_read_is_one_warning(dbt_repo: Repo) -> None:
    tree = dbt_repo.proj.run_git("rev-parse", f"{dbt_repo.c['seed']}:analytics_dbt/models")
    dbt_repo.delete(tree.strip())
    expected = [
        (
            "KB012",
            ".",
            f"git log failed (fatal: unable to read tree {tree.strip()}); the history rules go "
            "on without history",
        ),
        (
            "KB201",
            PAGE_PATH,
            f"'shop_dbt.orders.order_total' drifted: written against {INCOMPLETE_TEXT}, now "
            f"`sum(amount_net)`; changed in {INCOMPLETE_TEXT}",
        ),
    ]
    assert findings(dbt_repo.root) == expected
    assert findings(dbt_repo.root, "build") == expected
    assert len(timeline_commits(dbt_repo.root)) == 1  # the page's own history is readable


def test_a_page_rename_git_cannot_detect_is_one_warning(project: Callable[..., Project]) -> None:
    old, new = "knowledge/global/old-name.md", "knowledge/global/new-name.md"
    proj = project({old: "---\nsummary: A page\n---\n" + "A line of the page.\n" * 20})
    first = proj.run_git("rev-parse", "HEAD").strip()
    proj.remove(old).write({new: "---\nsummary: A page\n---\n" + "A line of the page.\n" * 21})
    moved = proj.commit("Rename the page")
    before = timeline_commits(proj.root, "new-name")
    assert before == [moved, first]  # renames are followed
    blob = proj.run_git("rev-parse", f"{first}:{old}").strip()
    (proj.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    got = findings(proj.root)
    assert got == [
        (
            "KB012",
            ".",
            f"git could not read blob {blob} ({old} before commit {moved[:12]}) to detect "
            "renames; page history does not follow renames in this run",
        ),
        ("KB202", "knowledge/global/new-name.md", "page has no meta.last_validated_at"),
    ]
    assert timeline_commits(proj.root, "new-name") == [moved]


def _partial_clone(origin: Path, target: Path) -> Path:
    subprocess.run(
        ["git", "clone", "-q", "--filter=blob:none", f"file://{origin}", str(target)],
        check=True,
        capture_output=True,
    )
    return target


def test_partial_clones_fetch_in_one_go_or_say_what_they_lack(
    dbt_repo: Repo, tmp_path: Path
) -> None:
    dbt_repo.proj.run_git("config", "uploadpack.allowFilter", "true")
    dbt_repo.proj.run_git("config", "uploadpack.allowAnySHA1InWant", "true")
    reachable = _partial_clone(dbt_repo.root, tmp_path / "reachable")
    gone = _partial_clone(dbt_repo.root, tmp_path / "gone")
    trace = tmp_path / "trace"
    shutil.rmtree(reachable / ".knowl", ignore_errors=True)
    invoke(["check", "--repo", str(reachable)], env={"GIT_TRACE": str(trace)})
    fetches = [line for line in trace.read_text().splitlines() if "built-in: git fetch" in line]
    assert len(fetches) == 1  # every old version in one fetch, not one per blob
    assert findings(reachable) == full_findings(dbt_repo)

    lost = {commit: dbt_repo.blob(commit, MODEL_FILE) for commit in ("initial", "eur")}
    dbt_repo.root.rename(tmp_path / "moved-away")
    got = findings(gone)
    assert [f[:2] for f in got] == [("KB012", "."), ("KB012", "."), ("KB201", PAGE_PATH)]
    # Only the old versions are lost (the clone checked HEAD's out): one warning each.
    for commit, oid in lost.items():
        start = f"git could not read {MODEL_FILE} in commit {dbt_repo.c[commit][:12]} (blob {oid}: "
        problem = next(f[2] for f in got if f[2].startswith(start))
        assert "not in this partial clone, and fetching it failed: fatal:" in problem
    assert got[2][2].endswith(f"changed in {INCOMPLETE_TEXT}")


def _loose(root: Path, oid: str, data: bytes) -> None:
    path = root / ".git" / "objects" / oid[:2] / oid[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(data))


def test_objects_that_lie_about_their_size_never_stall_the_batch(
    project: Callable[..., Project], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project({"a.yaml": "a: 1\n", "b.yaml": "b: " + "x" * 5000 + "\n", "c.yaml": "c: 1\n"})
    ids = {name: proj.run_git("rev-parse", f"HEAD:{name}.yaml").strip() for name in "abc"}
    _loose(proj.root, ids["a"], b"blob 100\0" + b"short")  # says 100 bytes, holds 5
    _loose(proj.root, ids["b"], b"blob 6\0" + b"b: 1\n!")  # right size, wrong content
    repo = GitRepo.find(proj.root)
    assert repo is not None
    reader = GitHistory(repo)
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    got = reader.read_blobs([ids["a"], ids["b"], ids["c"], "0" * 40])
    assert got == {ids["c"]: b"c: 1\n"}
    assert reader.unreadable[ids["b"]] == "corrupt: its content does not match its id"
    assert reader.unreadable[ids["a"]].startswith("corrupt")
    assert reader.unreadable["0" * 40] == "missing"
    batches = [line for line in trace.read_text().splitlines() if "cat-file --batch" in line]
    assert len(batches) <= 3  # one, and one more after each corrupt object


def test_problems_past_the_limit_are_counted_in_one_more_warning() -> None:
    facts = GitFacts(History(None, {}, {}, {}, {}))
    facts.problems = [f"git could not read thing {i}" for i in range(MAX_HISTORY_PROBLEMS + 3)]
    got = history_findings(facts)
    assert [f.code for f in got] == ["KB012"] * MAX_HISTORY_PROBLEMS
    assert got[-2].message == f"git could not read thing {MAX_HISTORY_PROBLEMS - 2}"
    assert got[-1].message == "git could not read 4 more objects or commands of the history"
    assert len({f.subject for f in got}) == len(got)


def test_a_page_version_git_cannot_read_is_left_out_and_said(
    project: Callable[..., Project],
) -> None:
    from knowl_build.history.pages import page_history

    proj = project({PAGE_PATH: "---\nsummary: One\n---\nFirst.\n"})
    first = proj.run_git("rev-parse", "HEAD").strip()
    proj.write({PAGE_PATH: "---\nsummary: Two\n---\nSecond.\n"})
    second = proj.commit("Second version")
    blob = proj.run_git("rev-parse", f"{first}:{PAGE_PATH}").strip()
    (proj.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    assert timeline_commits(proj.root) == [second]
    repo = GitRepo.find(proj.root)
    assert repo is not None
    versions, problems = page_history(repo, PAGE_PATH)
    assert [v.commit.sha for v in versions] == [second]
    assert problems == [
        f"git could not read {PAGE_PATH} in commit {first[:12]} (blob {blob}: missing); "
        "that version is left out"
    ]
