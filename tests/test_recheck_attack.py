"""Attacks on the check ledger (`pipeline.recheck`): inputs where a check that reuses the
ledger could report other than a check that reuses nothing, and ledgers that must not be
used. Each case edits a project between checks and compares `check` (caches) with
`check(use_cache=False)` diagnostic for diagnostic."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowl_build.core.config import Config
from knowl_build.pipeline import recheck, stats
from knowl_build.pipeline.check import check
from knowl_build.pipeline.recheck import LEDGER_CACHE
from tests.helpers import Project
from tests.test_recheck import planned


def shown(root: Path, config: Config, use_cache: bool) -> list[dict[str, object]]:
    result = check(root, config, use_cache=use_cache)
    return [{**d.to_json(), "subject": d.subject} for d in result.diagnostics]


def same(root: Path, config: Config) -> None:
    cached = shown(root, config, True)
    assert cached == shown(root, config, False)


@pytest.fixture(autouse=True)
def _settled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "SETTLE_NS", 0)  # the stat cache vouches for unchanged pages


QUIET = Config(rules={"KB202": "off"})


G = "knowledge/global/"
CASES: dict[str, tuple[str, dict[str, str | bytes], list[dict[str, str | bytes]]]] = {
    # An alias names the page: the reader of an alias reads the page.
    "obsidian alias heading": (
        "obsidian",
        {G + "a.md": "# A\n\n[[Alpha#New]]\n", G + "b.md": "---\naliases: [Alpha]\n---\n# B\n"},
        [{G + "b.md": "---\naliases: [Alpha]\n---\n# B\n\n## New\n"}, {G + "c.md": "# C\n"}],
    ),
    # A path tail in Obsidian mode, a block id.
    "obsidian path tail and block": (
        "obsidian",
        {
            G + "a.md": "# A\n\n[[deep/b#^blk]] ![[b#^blk]]\n",
            G + "x/deep/b.md": "# B\n\nline ^blk\n",
        },
        [{G + "x/deep/b.md": "# B\n\nline ^other\n"}, {G + "x/deep/b.md": "# B\n\nline ^blk\n"}],
    ),
    # A user page is hidden from a global one (KB104): its reader reads it all the same.
    "hidden user page": (
        "exact",
        {G + "a.md": "# A\n\n[[mine#H]]\n", "knowledge/user/u1/mine.md": "# Mine\n"},
        [{"knowledge/user/u1/mine.md": "# Mine\n\n## H\n"}],
    ),
    # A bundle's index.md is its folder's page; two pages of one id (KB005).
    "bundle and duplicate": (
        "exact",
        {
            G + "c.md": "# C\n\n[[a#Deep]] [x](a/index.md#deep) [y](a.md#deep)\n",
            G + "a.md": "# A\n",
            G + "a/index.md": "# A bundle\n",
        },
        [{G + "a/index.md": "# A bundle\n\n## Deep\n"}, {G + "a.md": "# A\n\n## Deep\n"}],
    ),
    # Markdown links: a fragment by slug, a folder, a page by relative path.
    "markdown fragments": (
        "exact",
        {
            G + "a.md": "# A\n\n[b](b.md#the-totals) [dir](sub/) [up](../global/b.md#x)\n",
            G + "b.md": "# B\n",
            G + "sub/c.md": "# C\n",
        },
        [{G + "b.md": "# B\n\n## The Totals\n\n## X\n"}, {G + "b.md": "# B\n"}],
    ),
    # Dendron: a hierarchy's note, a wildcard, a vault-qualified name.
    "dendron hierarchy": (
        "dendron",
        {
            G + "a.md": "# A\n\n[[proj.b#Head]] ![[proj.*]] [[dendron://v/proj.c#Head]]\n",
            G + "proj.b.md": "# B\n",
            G + "v/proj.c.md": "# C\n",
        },
        [{G + "proj.b.md": "# B\n\n## Head\n"}, {G + "v/proj.c.md": "# C\n\n## Head\n"}],
    ),
    # A page that stops being text, or starts again, changes what others' hints can name.
    "non-utf8 page": (
        "exact",
        {G + "a.md": "# A\n\n[[bb]] [x](b.md)\n", G + "b.md": "# B\n"},
        [{G + "b.md": b"# B \xff\xfe\n"}, {G + "b.md": "# B\n"}],
    ),
    # Heading hints come from the target's headings.
    "heading hints": (
        "exact",
        {G + "a.md": "# A\n\n[[b#Totls]]\n", G + "b.md": "# B\n\n## Totals\n"},
        [{G + "b.md": "# B\n\n## Totalz\n"}, {G + "b.md": "# B\n\n## Other\n"}],
    ),
    # Bytes change, the parse does not.
    "same parse": (
        "exact",
        {G + "a.md": "# A\n\n[[b#H]]\n", G + "b.md": "# B\n"},
        [{G + "b.md": "# B\n\n\n"}, {G + "a.md": "# A\n\n[[b#H]]\n\n"}],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_edits_that_others_read(tmp_path: Path, case: str) -> None:
    mode, files, edits = CASES[case]
    proj = Project(tmp_path / "p")
    proj.write({**files, "knowl.toml": f"[links]\nresolution = '{mode}'\n"}).commit("start")
    config = Config(link_resolution=mode, source="knowl.toml", rules={"KB202": "off"})
    same(proj.root, config)
    for edit in edits:
        proj.write(edit)
        same(proj.root, config)
    proj.commit("edits")
    same(proj.root, config)


@pytest.mark.parametrize("mode", ["exact", "obsidian", "dendron"])
def test_cases_reuse_the_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """The cases above are worth running only if a run reuses: an edit of a page nobody reads
    checks that page alone."""
    runs = planned(monkeypatch)
    proj = Project(tmp_path / "p")
    files = {G + "a.md": "# A\n\n[[b#H]] [x](b.md#h)\n", G + "b.md": "# B\n", G + "c.md": "# C\n"}
    proj.write({**files, "knowl.toml": f"[links]\nresolution = '{mode}'\n"}).commit("start")
    config = Config(link_resolution=mode, source="knowl.toml", rules={"KB202": "off"})
    same(proj.root, config)
    proj.write({G + "c.md": "# C\n\nedited\n"})
    same(proj.root, config)
    assert any(run.only == {G + "c.md"} for run in runs)
    proj.write({G + "b.md": "# B\n\n## H\n"})
    same(proj.root, config)
    assert any(run.only == {G + "a.md", G + "b.md"} for run in runs)


def test_affected_paths_outside_the_knowledge_folder(tmp_path: Path) -> None:
    """KB204 compares an affected path at HEAD with `source_commit`: an uncommitted edit of the
    file, then its commit (HEAD moves, which the ledger's key leaves out), while a page nobody
    reads is edited."""
    proj = Project(tmp_path / "p")
    proj.write({"src/app.py": "x = 1\n", G + "c.md": "# C\n"})
    base = proj.commit("start")
    proj.write(
        {
            G + "a.md": f"---\nsource_commit: {base[:10]}\naffected_paths: [src/app.py]\n---\n",
            G + "k.md": f"---\nsource_commit: {base}\naffected_paths: [{G}c.md]\n---\n# K\n",
        }
    ).commit("pages")
    same(proj.root, QUIET)
    proj.write({"src/app.py": "x = 2\n", G + "c.md": "# C\n\nedited\n"})
    same(proj.root, QUIET)
    proj.commit("app")
    same(proj.root, QUIET)
    proj.write({G + "c.md": "# C\n\nedited again\n"})
    same(proj.root, QUIET)
    proj.commit("c")
    same(proj.root, QUIET)


def test_a_ledger_of_another_project_on_this_machine(tmp_path: Path) -> None:
    """The seal is the machine's, not the project's: a ledger copied from another project of
    the same inputs but one page is used only for what its digests vouch for."""
    one, two = Project(tmp_path / "one"), Project(tmp_path / "two")
    for proj, body in ((one, "[[missing]]"), (two, "fine")):
        proj.write({G + "a.md": f"# A\n\n{body}\n", G + "b.md": "# B\n"}).commit("start")
        same(proj.root, QUIET)
    ledger = one.root / ".knowl" / "cache" / LEDGER_CACHE
    (two.root / ".knowl" / "cache" / LEDGER_CACHE).write_bytes(ledger.read_bytes())
    two.write({G + "b.md": "# B\n\nedited\n"})
    same(two.root, QUIET)
    assert not shown(two.root, QUIET, True)


def test_flat_layout_users_and_suppressions(tmp_path: Path) -> None:
    """`[knowledge] layout = "flat"`, a users folder, a suppression that stops hiding anything
    when the page it is about gains the heading (KB011), a target that looks like a secret
    (redacted in the message the ledger keeps)."""
    from knowl_build.core.config_loader import load_config  # optional: this test only

    proj = Project(tmp_path / "p")
    proj.write(
        {
            "knowl.toml": (
                'knowledge_dir = "content"\n[knowledge]\nlayout = "flat"\n'
                'users_dir = "people"\n[rules]\nKB202 = "off"\n'
            ),
            "content/_index.md": (
                "# Home\n\n<!-- knowl: disable-next-line KB105 -->\n[[docs/b#Later]]\n\n"
                "[x](docs/b.md#later) [[mine]] [[ghp_abcdefghijklmnopqrstuvwxyz0123456789]]\n"
            ),
            "content/docs/b.md": "# B\n",
            "content/people/u1/mine.md": "# Mine\n",
        }
    ).commit("start")
    config = load_config(proj.root)
    same(proj.root, config)
    proj.write({"content/docs/b.md": "# B\n\n## Later\n"})
    same(proj.root, config)
    proj.write({"content/people/u1/mine.md": "# Mine\n\nedited\n"})
    same(proj.root, config)
    proj.write({"content/docs/b.md": "# B\n"})
    same(proj.root, config)


def test_a_symlinked_page(tmp_path: Path) -> None:
    """Two paths, one file: an edit of the file changes both pages."""
    proj = Project(tmp_path / "p")
    proj.write({G + "a.md": "# A\n\n[[b#H]] [[c#H]]\n", G + "b.md": "# B\n"})
    (proj.root / G / "c.md").symlink_to("b.md")
    proj.commit("start")
    same(proj.root, QUIET)
    proj.write({G + "b.md": "# B\n\n## H\n"})
    same(proj.root, QUIET)
    proj.write({G + "b.md": "# B\n\n## I\n"})
    same(proj.root, QUIET)


def test_a_build_leaves_the_ledger_a_check_reuses(tmp_path: Path) -> None:
    """`knowl build` keeps the ledger too: a check after it, and a build after a check, must
    report what a check without caches does."""
    from knowl_build.core.config_loader import load_config  # optional: this test only
    from tests.helpers import invoke  # optional: this test only

    proj = Project(tmp_path / "p")
    proj.write(
        {
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            G + "a.md": "# A\n\n[[b#H]] [x](b.md#h) [[nowher]]\n",
            G + "b.md": "# B\n",
            G + "c.md": "# C\n\n[[a]]\n",
        }
    ).commit("start")
    config = load_config(proj.root)
    invoke(["build", "--repo", str(proj.root), "--allow-errors"])
    proj.write({G + "c.md": "# C\n\n[[a]] edited\n"})
    same(proj.root, config)
    proj.write({G + "b.md": "# B\n\n## H\n"})
    invoke(["build", "--repo", str(proj.root), "--allow-errors"])
    proj.write({G + "c.md": "# C\n\n[[a]] edited again\n"})
    same(proj.root, config)


def test_the_memo_sealed_for_its_purpose_is_no_ledger(tmp_path: Path) -> None:
    """The memo and the ledger are sealed under different purposes: a memo written over the
    ledger's file (both this machine's) is not read as a ledger."""
    proj = Project(tmp_path / "p")
    proj.write({G + "a.md": "# A\n\n[[missing]]\n", G + "b.md": "# B\n"}).commit("start")
    same(proj.root, QUIET)
    cache = proj.root / ".knowl" / "cache"
    (cache / LEDGER_CACHE).write_bytes((cache / "check.json").read_bytes())
    proj.write({G + "b.md": "# B\n\nedited\n"})
    same(proj.root, QUIET)
    assert [d["code"] for d in shown(proj.root, QUIET, True)] == ["KB103"]


@pytest.mark.parametrize("units", [700, 1_400, 2_100, 2_800, 3_500, 4_200, 6_000])
def test_a_budget_shared_with_governance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, units: int
) -> None:
    """Governance's hints (a broken `superseded_by`) charge the budget the per-page rules'
    hints do, after them in a whole run: a reused hint must still be a whole run's, whatever
    budget is left to governance and wherever the budget runs out."""
    from knowl_build.support import hints  # optional: this test only

    made = hints.HintBudget.__init__

    def small(self: hints.HintBudget, units: int = units, closed: bool = False) -> None:
        made(self, units, closed)

    monkeypatch.setattr(hints.HintBudget, "__init__", small)
    monkeypatch.setattr(recheck, "HINT_BUDGET", units)
    files = {
        G + f"page{i}.md": (
            f"---\nstatus: superseded\nsuperseded_by: pag{i}x\n---\n# P{i}\n\n[[paeg{i}]]\n"
            if i % 2
            else f"# P{i}\n\n[[pag{i}x]] [x](page{i}.md#nope) [[page{(i + 1) % 6}#Hed]]\n"
        )
        for i in range(6)
    }
    proj = Project(tmp_path / "p")
    proj.write(files).commit("start")
    same(proj.root, QUIET)
    for i in (4, 5, 1, 0):
        proj.write({G + f"page{i}.md": files[G + f"page{i}.md"] + "\nedited\n"})
        same(proj.root, QUIET)


def source(name: str, expr: str) -> str:
    return (
        f"name: {name}\nconnection: db\ntable: t_{name}\ncolumns:\n  - {{ name: id }}\n"
        f'measures:\n  - {{ name: total, expr: "{expr}" }}\n'
    )


@pytest.mark.parametrize("edit_after", [True, False])
def test_a_file_outside_the_knowledge_folder_that_a_reused_page_links(
    tmp_path: Path, edit_after: bool
) -> None:
    """A Markdown link to a file outside the knowledge folder is looked up on disk, and the
    answer kept (`asked`) so that a memo or ledger holds only while it is the same. A run that
    reuses page a's findings does not look a's link up: the ledger it leaves (another page
    edited after the file goes) and the memo (nothing else changes) must still know the
    answer a's findings depend on."""
    proj = Project(tmp_path / "p")
    proj.write(
        {
            "README.md": "readme\n",
            "knowledge/global/a.md": "# A\n\nsee [readme](../../README.md)\n",
            "knowledge/global/b.md": "# B\n",
        }
    ).commit("start")
    same(proj.root, QUIET)
    proj.write({"knowledge/global/b.md": "# B\n\nedited\n"})
    same(proj.root, QUIET)  # a is reused
    proj.remove("README.md")
    if edit_after:
        proj.write({"knowledge/global/b.md": "# B\n\nedited again\n"})
    same(proj.root, QUIET)  # a's link is broken now


def test_an_uncommitted_change_dated_now_against_a_validation_later_today(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KB203 dates an uncommitted change of a definition at the moment of the run (`ctx.now`),
    not the day the key holds: a page validated later today than the first run is, but
    earlier than the second, has a finding the second run's reused findings lack."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1893492000")  # 2030-01-01T10:00:00Z
    proj = Project(tmp_path / "p")
    proj.write(
        {
            "semantics/s1.yaml": source("s1", "sum(x)"),
            "knowledge/global/a.md": (
                "---\nsummary: a\nsl_refs: [db.s1.total]\n"
                "meta:\n  last_validated_at: 2030-01-01T11:00:00Z\n---\n# A\n"
            ),
            "knowledge/global/b.md": "# B\n",
        }
    ).commit("start")
    proj.write({"semantics/s1.yaml": source("s1", "sum(y)")})  # uncommitted
    same(proj.root, QUIET)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1893499200")  # 12:00 the same day
    proj.write({"knowledge/global/b.md": "# B\n\nedited\n"})
    assert any(d["code"] == "KB203" for d in shown(proj.root, QUIET, False))
    same(proj.root, QUIET)


def test_outside_lookups_carried_through_partial_runs_and_builds(tmp_path: Path) -> None:
    """A missing outside file that appears, a folder outside the knowledge folder that goes,
    after partial runs of `knowl check` and of `knowl build` carried the lookups on."""
    from tests.helpers import invoke  # optional: this test only

    proj = Project(tmp_path / "p")
    proj.write(
        {
            "src/keep.py": "x\n",
            G + "a.md": "# A\n\n[new](../../docs/new.md) [src](../../src/)\n",
            G + "b.md": "# B\n",
        }
    ).commit("start")
    same(proj.root, QUIET)
    for round_no in range(3):
        proj.write({G + "b.md": f"# B\n\nedit {round_no}\n"})
        same(proj.root, QUIET)
    invoke(["build", "--repo", str(proj.root), "--allow-errors"])
    proj.write({G + "b.md": "# B\n\nafter the build\n"})
    invoke(["build", "--repo", str(proj.root), "--allow-errors"])
    proj.write({"docs/new.md": "new\n"})
    same(proj.root, QUIET)  # the link mends
    proj.write({G + "b.md": "# B\n\nagain\n"})
    same(proj.root, QUIET)
    (proj.root / "src" / "keep.py").unlink()
    (proj.root / "src").rmdir()
    same(proj.root, QUIET)  # the folder link breaks
    assert [d["code"] for d in shown(proj.root, QUIET, True)] == ["KB103"]


def test_a_volatile_page_until_the_change_is_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An uncommitted definition change dated now: every run checks the page again, and once
    the change is committed (dated by its commit) the memo and the ledger answer again."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1893492000")  # 2030-01-01T10:00:00Z
    proj = Project(tmp_path / "p")
    page = "---\nsl_refs: [db.s1.total]\nmeta:\n  last_validated_at: 2030-01-01T11:00:00Z\n---\n"
    proj.write(
        {"semantics/s1.yaml": source("s1", "sum(x)"), G + "a.md": page, G + "b.md": "# B\n"}
    ).commit("start")
    proj.write({"semantics/s1.yaml": source("s1", "sum(y)")})
    same(proj.root, QUIET)
    same(proj.root, QUIET)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1893499200")  # 12:00
    same(proj.root, QUIET)  # nothing edited: no memo may answer
    proj.write({G + "b.md": "# B\n\nedited\n"})
    same(proj.root, QUIET)
    proj.commit("y")  # the change is dated 2026 by the commit: before the validation
    same(proj.root, QUIET)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1893492000")
    same(proj.root, QUIET)


def test_duplicate_ids_and_a_supersession_cycle(tmp_path: Path) -> None:
    """Two pages of one id (`d.md` and the bundle `d/index.md`, KB005), one superseded by
    `d`: no traceback (the cycle walk went by id, so the page without `superseded_by` was
    taken for the one that closes a cycle), and a page superseded by itself is a cycle."""
    proj = Project(tmp_path / "p")
    proj.write(
        {
            G + "d.md": "# D\n",
            G + "d/index.md": "---\nstatus: superseded\nsuperseded_by: d\n---\n# D2\n",
        }
    ).commit("start")
    same(proj.root, QUIET)
    codes = [d["code"] for d in shown(proj.root, QUIET, False)]
    assert "KB005" in codes


def test_a_supersession_cycle_is_reported_on_each_page_of_it(tmp_path: Path) -> None:
    proj = Project(tmp_path / "p")
    proj.write(
        {
            G + "a.md": "---\nstatus: superseded\nsuperseded_by: b\n---\n# A\n",
            G + "b.md": "---\nstatus: superseded\nsuperseded_by: a\n---\n# B\n",
            G + "c.md": "---\nstatus: superseded\nsuperseded_by: a\n---\n# C\n",
        }
    ).commit("start")
    cycles = [
        d["path"]
        for d in shown(proj.root, QUIET, False)
        if "supersession cycle" in str(d["message"])
    ]
    assert cycles == [G + "a.md", G + "b.md"]  # c leads into the cycle, it is not in it
