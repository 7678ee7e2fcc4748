"""Shallow clones (GitHub's default checkout is one commit deep): KB010 says so once, and the
history rules say "unknown (shallow history)" instead of claims they cannot back.

One origin repository with nine history findings; clones made with `git clone --depth N
file://...` (a file URL, so the depth applies), a full clone, and a clone made whole again
with `git fetch --unshallow`.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from knowl_build.semantic.layer import measure_fingerprint
from tests.helpers import Project, invoke

ORDERS = "semantics/shop/orders.yaml"
V1 = """\
name: orders
connection: shop_pg
table: analytics.fct_orders
grain: [order_id]
columns:
  - { name: order_id, type: int }
  - { name: amount, type: decimal }
  - { name: state, type: string }
measures:
  - { name: total_revenue, expr: "sum(amount)" }
  - { name: avg_amount, expr: "avg(amount)" }
  - { name: order_count, expr: "count(order_id)" }
dimensions:
  - { name: order_state, column: state, label: State }
"""
NET = V1.replace('expr: "sum(amount)"', 'expr: "sum(amount) - sum(refunds)"')
DROPPED = NET.replace('  - { name: avg_amount, expr: "avg(amount)" }\n', "")
RELABELLED = DROPPED.replace("label: State", "label: Order state").replace(
    "count(order_id)", "count(distinct order_id)"
)
REVENUE = "knowledge/global/revenue.md"
COUNTS = "knowledge/global/counts.md"
SOURCES = "knowledge/global/sources.md"
SIDE = "knowledge/global/side.md"
HISTORY_CODES = {"KB101", "KB201", "KB203", "KB204", "KB205"}
SHALLOW = "unknown (shallow history)"
# A dimension's definition spans lines: a message names the lines that differ.
LABEL_CHANGE = "-`label: State` +`label: Order state`"
STATE_NOW = "column: state; label: Order state; name: order_state"  # its lines, on one line


def page(frontmatter: str) -> str:
    return f"---\n{frontmatter}---\nBody.\n"


@dataclass
class Origin:
    root: Path
    c: dict[str, str]  # commit name -> full id

    def clone(self, target: Path, *args: str) -> Path:
        subprocess.run(
            ["git", "clone", "-q", *args, f"file://{self.root}", str(target)],
            check=True,
            capture_output=True,
        )
        return target

    def where(self, name: str, date: str, subject: str) -> str:
        return f'commit {self.c[name][:12]} ({date}, "{subject}")'


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    """Seven commits on main and one on a side branch; every history rule has something to say."""
    proj = Project(tmp_path_factory.mktemp("shallow") / "origin")
    proj.write(
        {
            ".gitignore": ".knowl/\n",
            ORDERS: V1,
            "src/app.py": "print(1)\n",
            REVENUE: page(
                "summary: Revenue\nsl_refs: [shop_pg.orders.total_revenue, "
                "shop_pg.orders.avg_amount, shop_pg.orders.order_state]\n"
                'meta:\n  last_validated_at: "2026-01-01T12:00:00Z"\n  bound_fingerprints:\n'
                f'    shop_pg.orders.total_revenue: "{measure_fingerprint("sum(amount)")}"\n'
                f'    shop_pg.orders.order_state: "sha256:{"0" * 64}"\n'
            ),
            # No fingerprint bound: its change is KB203's (a bound one is KB201's alone).
            COUNTS: page(
                "summary: Counts\nsl_refs: [shop_pg.orders.order_count]\n"
                'meta:\n  last_validated_at: "2026-01-03T00:00:00Z"\n'
            ),
        }
    )
    c = {"initial": proj.commit("Initial knowledge")}
    proj.run_git("checkout", "-q", "-b", "side")
    proj.write({"notes.txt": "side\n"})
    c["side"] = proj.commit("Side work")
    proj.run_git("checkout", "-q", "main")
    proj.write(
        {
            SOURCES: page(
                f"summary: Sources\nsource_commit: {c['initial'][:12]}\n"
                "affected_paths: [src/app.py]\n"
            ),
            SIDE: page(f"summary: Side\nsource_commit: {c['side'][:12]}\n"),
        }
    )
    c["sources"] = proj.commit("Record sources")
    proj.write({ORDERS: NET})
    c["refunds"] = proj.commit("Net out refunds")
    proj.write({ORDERS: DROPPED})
    c["drop"] = proj.commit("Drop avg_amount")
    proj.write({"src/app.py": "print(2)\n"})
    c["app"] = proj.commit("Change the app")
    proj.write({ORDERS: RELABELLED})
    c["relabel"] = proj.commit("Relabel state, distinct count")
    proj.write({"knowledge/global/other.md": page("summary: Other\n")})
    c["head"] = proj.commit("Unrelated page")
    return Origin(proj.root, c)


def check(root: Path) -> list[dict[str, Any]]:
    """The findings of `knowl check --format json`, KB202 (staleness, not history) left out."""
    result = invoke(["check", "--repo", str(root), "--format", "json"], code=1)
    assert "internal error" not in result.output
    rows = json.loads(result.stdout)["diagnostics"]
    return [row for row in rows if row["code"] != "KB202"]


def messages(rows: list[dict[str, Any]]) -> list[tuple[str, str, int, int, str]]:
    return [(r["code"], r["path"], r["line"], r["column"], r["message"]) for r in rows]


def full_findings(o: Origin) -> list[tuple[str, str, int, int, str]]:
    relabel = o.where("relabel", "2026-01-07", "Relabel state, distinct count")
    refunds = o.where("refunds", "2026-01-04", "Net out refunds")
    return [
        (
            "KB203",
            COUNTS,
            3,
            11,
            "'shop_pg.orders.order_count' changed after the page was last validated "
            f"(2026-01-03): {relabel}: `count(order_id)` became `count(distinct order_id)`",
        ),
        (
            "KB101",
            REVENUE,
            3,
            41,
            "sl_ref 'shop_pg.orders.avg_amount' resolves to no live semantic entity; it was "
            "removed in " + o.where("drop", "2026-01-05", "Drop avg_amount"),
        ),
        (
            "KB201",
            REVENUE,
            7,
            5,
            "'shop_pg.orders.total_revenue' drifted: written against `sum(amount)`, now "
            f"`sum(amount) - sum(refunds)`; changed in {refunds}",
        ),
        (
            "KB201",
            REVENUE,
            8,
            5,
            "'shop_pg.orders.order_state' drifted: written against a definition not found in "
            f"history, now `{STATE_NOW}`; last changed in {relabel}",
        ),
        (
            "KB205",
            SIDE,
            3,
            16,
            f"source_commit '{o.c['side'][:12]}' is not a commit reachable from HEAD",
        ),
        (
            "KB204",
            SOURCES,
            4,
            18,
            f"affected path 'src/app.py' changed since source_commit {o.c['initial'][:12]}",
        ),
    ]


def kb010(depth: int, oldest: str) -> tuple[str, str, int, int, str]:
    available = f"{depth} commit{'' if depth == 1 else 's'} available, the oldest {oldest[:12]}"
    return (
        "KB010",
        ".",
        1,
        1,
        f"git history is shallow ({available}): history rules cannot see older changes; "
        f'where that matters they say "{SHALLOW}"',
    )


def test_the_origin_has_every_history_finding(origin: Origin) -> None:
    got = messages(check(origin.root))
    assert got == full_findings(origin)
    assert {row[0] for row in got} == HISTORY_CODES


def test_depth_one_clone_says_shallow_once_and_claims_nothing_it_cannot_back(
    origin: Origin, tmp_path: Path
) -> None:
    clone = origin.clone(tmp_path / "clone", "--depth", "1")
    rows = check(clone)
    shallow = [r for r in rows if r["code"] == "KB010"]
    assert len(shallow) == 1
    assert shallow[0]["severity"] == "warning"
    assert shallow[0]["hint"] == (
        "fetch the whole history: fetch-depth: 0 in actions/checkout, or run git fetch --unshallow"
    )
    assert messages(rows) == [
        kb010(1, origin.c["head"]),
        (
            "KB101",
            REVENUE,
            3,
            41,
            "sl_ref 'shop_pg.orders.avg_amount' resolves to no live semantic entity; whether "
            f"and when it was removed is {SHALLOW}",
        ),
        (
            "KB201",
            REVENUE,
            7,
            5,
            f"'shop_pg.orders.total_revenue' drifted: written against {SHALLOW}, now "
            f"`sum(amount) - sum(refunds)`; changed in {SHALLOW}",
        ),
        (
            "KB201",
            REVENUE,
            8,
            5,
            f"'shop_pg.orders.order_state' drifted: written against {SHALLOW}, now "
            f"`{STATE_NOW}`; changed in {SHALLOW}",
        ),
    ]
    claims = json.dumps(rows[1:])
    assert "not found in history" not in claims
    assert origin.c["head"][:12] not in claims  # the clone's one commit introduced nothing


def test_depth_three_clone_claims_the_changes_it_can_see(origin: Origin, tmp_path: Path) -> None:
    # HEAD, "relabel" and "app" are in the clone: the relabel is a change it saw; the refund
    # change, the removal of avg_amount and both source commits lie before it.
    clone = origin.clone(tmp_path / "clone", "--depth", "3")
    relabel = origin.where("relabel", "2026-01-07", "Relabel state, distinct count")
    assert messages(check(clone)) == [
        kb010(3, origin.c["app"]),
        (
            "KB203",
            COUNTS,
            3,
            11,
            "'shop_pg.orders.order_count' changed after the page was last validated "
            f"(2026-01-03): {relabel}: `count(order_id)` became `count(distinct order_id)`",
        ),
        (
            "KB101",
            REVENUE,
            3,
            41,
            "sl_ref 'shop_pg.orders.avg_amount' resolves to no live semantic entity; whether "
            f"and when it was removed is {SHALLOW}",
        ),
        (
            "KB201",
            REVENUE,
            7,
            5,
            f"'shop_pg.orders.total_revenue' drifted: written against {SHALLOW}, now "
            f"`sum(amount) - sum(refunds)`; changed in {SHALLOW}",
        ),
        (
            "KB201",
            REVENUE,
            8,
            5,
            f"'shop_pg.orders.order_state' drifted: written against {SHALLOW}, now "
            f"`{STATE_NOW}`; last changed in {relabel}",
        ),
    ]


def test_full_clone_gives_the_full_findings(origin: Origin, tmp_path: Path) -> None:
    clone = origin.clone(tmp_path / "clone", "--no-local")
    assert messages(check(clone)) == full_findings(origin)


def test_unshallow_replays_the_history_again(origin: Origin, tmp_path: Path) -> None:
    clone = origin.clone(tmp_path / "clone", "--depth", "1")
    assert check(clone)[0]["code"] == "KB010"  # the caches now hold the shallow answers
    assert (clone / ".knowl" / "cache" / "history.json").exists()
    subprocess.run(["git", "fetch", "-q", "--unshallow"], cwd=clone, check=True)
    assert messages(check(clone)) == full_findings(origin)


def test_shallow_build_publishes_unknown_introductions(origin: Origin, tmp_path: Path) -> None:
    shallow = origin.clone(tmp_path / "shallow", "--depth", "3")
    invoke(["build", "--repo", str(shallow), "--allow-errors"])
    folder = _current(shallow / ".knowl" / "build")
    entities = {
        e["name"]: e for e in json.loads((folder / "entities.json").read_text())["entities"]
    }
    # In the clone's oldest commit already: where they came from is unknown, not that commit.
    assert entities["shop_pg.orders.total_revenue"]["introduced_in"] is None
    assert entities["shop_pg.orders.total_revenue"]["changed_in"] is None
    # A change the clone saw is named.
    assert entities["shop_pg.orders.order_state"]["introduced_in"] is None
    assert entities["shop_pg.orders.order_state"]["changed_in"]["commit"] == origin.c["relabel"]
    findings = json.loads((folder / "diagnostics.json").read_text())["diagnostics"]
    assert [d["code"] for d in findings if d["path"] == "."] == ["KB010"]

    full = origin.clone(tmp_path / "full", "--no-local")
    invoke(["build", "--repo", str(full), "--allow-errors"])
    folder = _current(full / ".knowl" / "build")
    entities = {
        e["name"]: e for e in json.loads((folder / "entities.json").read_text())["entities"]
    }
    assert (
        entities["shop_pg.orders.total_revenue"]["introduced_in"]["commit"] == origin.c["initial"]
    )
    assert entities["shop_pg.orders.total_revenue"]["changed_in"]["commit"] == origin.c["refunds"]


def _current(out: Path) -> Path:
    from knowl_build.artifacts.publication import current_folder

    folder = current_folder(out)
    assert folder is not None
    return folder


def test_the_check_memo_follows_a_new_commit(origin: Origin, tmp_path: Path) -> None:
    # Same files, new HEAD: "uncommitted changes" must become the commit that made them.
    clone = origin.clone(tmp_path / "clone", "--no-local")
    (clone / ORDERS).write_text(RELABELLED.replace("sum(amount) - sum(refunds)", "sum(net)"))
    drift = [r for r in check(clone) if r["code"] == "KB201" and "total_revenue" in r["message"]]
    # Each change since the bound version: the committed one, then the uncommitted one.
    assert drift[0]["message"].endswith(
        "changed in "
        + origin.where("refunds", "2026-01-04", "Net out refunds")
        + ", then in uncommitted changes in the working tree"
    )
    proj = Project(clone, git=False)
    proj.run_git("commit", "-q", "-am", "Revenue is net")
    drift = [r for r in check(clone) if r["code"] == "KB201" and "total_revenue" in r["message"]]
    sha = proj.run_git("rev-parse", "HEAD").strip()
    assert drift[0]["message"].endswith(f'then in commit {sha[:12]} (2026-01-01, "Revenue is net")')
