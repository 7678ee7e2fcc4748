"""Property: a check that reuses its ledger (`pipeline.recheck`) reports what a check that
reuses nothing reports, whatever happened in between.

Random histories of pages that link to one another (ids, paths, headings, aliases, Markdown
links, another user's pages, links that break and mend), edited, added, renamed and deleted,
with definitions changing beside them, committed or not; after each round `check` with its
caches must equal `check(use_cache=False)` finding for finding, in every link resolution mode.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config import Config, SecurityConfig
from knowl_build.lsp.workspace import Workspace
from knowl_build.pipeline import cache, recheck, stats
from knowl_build.pipeline.check import check
from knowl_build.pipeline.pages import parse_page
from knowl_build.pipeline.publish import build
from knowl_build.pipeline.recheck import LEDGER_CACHE
from knowl_build.secrets.scanner import SecretScanner
from knowl_build.support import hints
from knowl_build.support.trust import machine_key
from tests.helpers import Project

WORDS = ["revenue", "order", "churn", "refund", "margin", "cohort", "segment", "funnel"]
HEADINGS = ["Overview", "Caveats", "How it is computed", "History", "Owners"]

SEEDS = range(1, 1 + int(os.environ.get("KNOWL_PROPERTY_SEEDS", "3")))


def source(name: str, expr: str) -> str:
    return (
        f"name: {name}\nconnection: db\ntable: t_{name}\ncolumns:\n  - {{ name: id }}\n"
        f'measures:\n  - {{ name: total, expr: "{expr}" }}\n'
    )


def link(rng: random.Random, names: list[str]) -> str:
    """A link to one of `names` (or to a page that never was), in one of the forms pages use,
    with a heading that may or may not be there."""
    name = rng.choice([*names, "nowhere", "Revenu"])
    heading = rng.choice(["", "", f"#{rng.choice(HEADINGS)}", "#No such heading"])
    return rng.choice(
        [
            f"[[{name}{heading}]]",
            f"[[{name.upper()}]]",
            f"[x]({name}.md{heading.lower().replace(' ', '-')})",
            f"[x](../../global/{name}.md)",
            f"![[{name}]]",
        ]
    )


def page(
    rng: random.Random,
    names: list[str],
    sources: list[str],
    alias: str = "",
    commits: tuple[str, ...] = (),
) -> str:
    """A page linking to some of `names`; with `alias`, one that an edit rarely changes; now
    and then written at one of `commits` (or one git never had), affecting a semantic file."""
    refs = ", ".join(rng.sample(names, k=min(len(names), rng.randint(0, 2))))
    governed = rng.random()
    if governed < 0.06:  # superseded by a page that may or may not be there
        refs += f"]\nstatus: superseded\nsuperseded_by: {rng.choice([*names, 'gone'])}\ntags: ["
    elif governed < 0.12:  # an exclusive claim that other pages may share
        refs += f"]\nconflict: {{key: {rng.choice(WORDS[:2])}, exclusive: true}}\ntags: ["
    if commits and rng.random() < 0.15:
        commit = rng.choice([*commits, "0123456789ab"])[:12]
        affected = f"semantics/{rng.choice(sources)}.yaml"
        refs += f"]\nsource_commit: {commit}\naffected_paths: [{affected}"
    if rng.random() < 0.1:
        alias = rng.choice(WORDS)
    aliases = f"aliases: [{alias}]\n" if alias else ""
    body = "\n\n".join(
        f"## {heading}\n\n{' '.join(rng.choice(WORDS) for _ in range(5))} "
        + " ".join(link(rng, names) for _ in range(rng.randint(0, 2)))
        for heading in rng.sample(HEADINGS, k=rng.randint(0, 3))
    )
    return (
        f"---\nsummary: {rng.choice(WORDS)}\nrefs: [{refs}]\n{aliases}"
        f"sl_refs: [db.{rng.choice(sources)}.total, db.gone.total]\n---\n"
        f"# {rng.choice(WORDS).title()}\n\nUses `<< sl:db.{rng.choice(sources)}.total.expr >>`."
        f"\n\n{body}\n"
    )


def shown(root: Path, config: Config, use_cache: bool) -> list[dict[str, object]]:
    result = check(root, config, use_cache=use_cache)
    return [{**d.to_json(), "subject": d.subject} for d in result.diagnostics]


def planned(monkeypatch: pytest.MonkeyPatch) -> list[recheck.Recheck]:
    """Every run `Recheck.settle` (or `settle_edit`, a session's) plans from now on."""
    runs: list[recheck.Recheck] = []
    settle = recheck.Recheck.settle

    def counted(run: recheck.Recheck, git: Any) -> set[str] | None:
        only = settle(run, git)
        runs.append(run)
        return only

    settle_edit = recheck.Recheck.settle_edit

    def edited(run: recheck.Recheck, git: Any, pages: set[str]) -> set[str] | None:
        only = settle_edit(run, git, pages)
        runs.append(run)
        return only

    monkeypatch.setattr(recheck.Recheck, "settle", counted)
    monkeypatch.setattr(recheck.Recheck, "settle_edit", edited)
    return runs


def sizes(runs: list[recheck.Recheck]) -> list[int | None]:
    return [None if run.only is None else len(run.only) for run in runs]


@pytest.mark.parametrize("mode", ["exact", "obsidian", "dendron"])
@pytest.mark.parametrize("seed", SEEDS)
def test_recheck_equals_a_whole_check(
    tmp_path: Path, seed: int, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stats, "SETTLE_NS", 0)  # the stat cache vouches for unchanged pages
    runs = planned(monkeypatch)
    rng = random.Random(f"{seed}-{mode}")
    proj = Project(tmp_path / "p")
    sources = ["s1", "s2"]
    pages: dict[str, str] = {}
    names = [f"p{i}" for i in range(10)]
    for i, name in enumerate(names):
        folder = "global" if i % 4 else f"user/u{i % 2}"
        path = f"knowledge/{folder}/{name}.md"
        pages[path] = page(rng, names, sources, WORDS[len(path) % 3])
    toml = f"[links]\nresolution = '{mode}'\n"
    proj.write(
        {
            **{f"semantics/{s}.yaml": source(s, "sum(x)") for s in sources},
            **pages,
            "knowl.toml": toml,
        }
    )
    commits = [proj.commit("start")]
    config = Config(link_resolution=mode, source="knowl.toml")
    assert shown(proj.root, config, True) == shown(proj.root, config, False)
    counter = 0
    for round_no in range(10):
        # Half the rounds only edit pages (what a ledger is for), the others do anything.
        if round_no == 0:  # a body edited, nothing else: the ledger answers for the rest
            path = rng.choice(sorted(pages))
            pages[path] += "\nmore words\n"
            proj.write({path: pages[path]})
        edits_only = round_no == 0 or rng.random() < 0.5
        for _ in range(rng.randint(1, 3) if round_no else 0):
            kinds = ["edit"] if edits_only else ["edit", "add", "rename", "delete", "measure"]
            action = rng.choice(kinds)
            ids = [Path(p).stem for p in pages]
            if action == "edit":
                path = rng.choice(sorted(pages))
                pages[path] = page(rng, ids, sources, WORDS[len(path) % 3], tuple(commits))
                proj.write({path: pages[path]})
            elif action == "add":
                counter += 1
                path = f"knowledge/global/new{counter}.md"
                pages[path] = page(rng, ids, sources)
                proj.write({path: pages[path]})
            elif action == "rename":
                old = rng.choice(sorted(pages))
                counter += 1
                new = f"knowledge/global/renamed{counter}.md"
                pages[new] = pages.pop(old)
                proj.remove(old).write({new: pages[new]})
            elif action == "delete" and len(pages) > 3:
                old = rng.choice(sorted(pages))
                del pages[old]
                proj.remove(old)
            elif action == "measure":
                s = rng.choice(sources)
                proj.write({f"semantics/{s}.yaml": source(s, f"sum({rng.choice(WORDS)})")})
        if rng.random() < 0.4:  # a commit of edited pages alone keeps the ledger
            commits.append(proj.commit(f"round {round_no}"))
        assert shown(proj.root, config, True) == shown(proj.root, config, False), (
            f"round {round_no}"
        )
    assert any(n is not None and n < len(pages) for n in sizes(runs)), sizes(runs)  # reused


def test_an_edit_rechecks_the_page_and_its_readers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stats, "SETTLE_NS", 0)
    runs = planned(monkeypatch)
    proj = Project(tmp_path / "p")
    proj.write(
        {
            "knowledge/global/a.md": "# A\n\n## Totals\n\nsee [[b]]\n",
            "knowledge/global/b.md": "# B\n\nsee [[a#Totals]]\n",
            "knowledge/global/c.md": "# C\n\nalone\n",
        }
    ).commit("start")
    config = Config(rules={"KB202": "off"})
    assert not check(proj.root, config).diagnostics
    proj.write({"knowledge/global/a.md": "# A\n\n## Sums\n\nsee [[b]]\n"})
    result = check(proj.root, config)
    assert runs[-1].only == {"knowledge/global/a.md", "knowledge/global/b.md"}
    assert [(d.path, d.code) for d in result.diagnostics] == [("knowledge/global/b.md", "KB105")]
    proj.write({"knowledge/global/c.md": "# C\n\nstill alone\n"})
    result = check(proj.root, config)
    assert runs[-1].only == {"knowledge/global/c.md"}  # a's finding in b is b's, reused
    assert [(d.path, d.code) for d in result.diagnostics] == [("knowledge/global/b.md", "KB105")]
    # A commit of an edit is no reason to check every page: HEAD is not in the ledger's key.
    proj.write({"knowledge/global/c.md": "# C\n\ncommitted\n"}).commit("c")
    check(proj.root, config)
    assert runs[-1].only == {"knowledge/global/c.md"}
    # A new page may be what a broken link meant: every page is checked again.
    proj.write({"knowledge/global/d.md": "# D\n"})
    check(proj.root, config)
    assert runs[-1].only is None


@pytest.mark.parametrize(("units", "plans"), [(3_000, [None]), (5_500, [1, None]), (99_000, [1])])
def test_a_spent_hint_budget_checks_every_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, units: int, plans: list[int | None]
) -> None:
    """A reused finding's hint is a whole run's only while a whole run does not spend the
    budget (each of these hints costs about 330 units). A run that spent it leaves a ledger
    that no later run reuses (3,000); a run whose reuse could have spent it checks every page
    again (5,500); with room to spare, only the page edited is checked again (99,000)."""
    monkeypatch.setattr(stats, "SETTLE_NS", 0)
    made = hints.HintBudget.__init__

    def small(self: hints.HintBudget, units: int = units, closed: bool = False) -> None:
        made(self, units, closed)

    monkeypatch.setattr(hints.HintBudget, "__init__", small)
    monkeypatch.setattr(recheck, "HINT_BUDGET", units)
    runs = planned(monkeypatch)
    proj = Project(tmp_path / "p")
    files = {
        f"knowledge/global/page{i}.md": f"# P{i}\n\n[[pag{i}x]] [[paeg{i}]]\n" for i in range(8)
    }
    proj.write(files).commit("start")
    config = Config(rules={"KB202": "off"})
    first = shown(proj.root, config, True)
    spent = any(d["hint"] == hints.BUDGET_NOTICE for d in first)
    assert spent == (units == 3_000)
    assert any("did you mean" in str(d["hint"]) for d in first)
    runs.clear()
    proj.write({"knowledge/global/page7.md": "# P7\n\n[[pag7y]] [[paeg7]]\n"})
    assert shown(proj.root, config, True) == shown(proj.root, config, False)
    assert sizes(runs) == plans


def test_a_forged_ledger_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ledger is sealed with the machine's key: one written elsewhere (committed with the
    project, say) that says what an unchanged page found is not read."""
    monkeypatch.setattr(stats, "SETTLE_NS", 0)
    proj = Project(tmp_path / "p")
    proj.write({"knowledge/global/a.md": "# A\n\n[[missing]]\n", "knowledge/global/b.md": "# B\n"})
    proj.commit("start")
    config = Config(rules={"KB202": "off"})
    first = check(proj.root, config).diagnostics
    assert [d.code for d in first] == ["KB103"]
    ledger = proj.root / ".knowl" / "cache" / LEDGER_CACHE
    held = ledger.read_bytes()
    forged = held.replace(b"points at no page", b"is fine, really")
    assert forged != held
    ledger.write_bytes(forged)
    proj.write({"knowledge/global/b.md": "# B\n\nedited\n"})
    assert check(proj.root, config).diagnostics == first
    ledger.write_bytes(b"garbage")
    proj.write({"knowledge/global/b.md": "# B\n\nedited again\n"})
    assert [d.code for d in check(proj.root, config).diagnostics] == ["KB103"]


def test_a_build_reuses_the_ledger_and_equals_a_full_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`knowl build` keeps the same ledger as `knowl check`: after a check, a build after one
    edit checks the edited page and its readers again, and its findings are a --full build's
    (which reuses nothing)."""
    monkeypatch.setattr(stats, "SETTLE_NS", 0)
    runs = planned(monkeypatch)
    proj = Project(tmp_path / "p")
    pages = {
        f"knowledge/global/p{i}.md": f"# P{i}\n\n## Part\n\n[[p{(i + 1) % 6}#Part]] [[gone{i}]]\n"
        for i in range(6)
    }
    proj.write(pages).commit("start")
    config = Config(rules={"KB202": "off"})
    check(proj.root, config)
    proj.write({"knowledge/global/p2.md": "# P2\n\n## Other\n\n[[p3#Part]] [[p9]]\n"})
    proj.commit("edit p2")  # a commit of pages alone keeps the ledger
    incremental = build(proj.root, config, allow_errors=True)
    assert sizes(runs)[-1] == 2  # p2, and p1 that links to its heading
    full = build(proj.root, config, allow_errors=True, full=True, out=tmp_path / "full")
    assert sizes(runs)[-1] is None
    assert incremental.folder is not None and full.folder is not None
    name = "diagnostics.json"
    assert (incremental.folder / name).read_bytes() == (full.folder / name).read_bytes()
    assert any(d.code == "KB105" and d.path.endswith("p1.md") for d in incremental.diagnostics)


def test_the_editors_workspace_rechecks_only_what_a_keystroke_can_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The language server keeps the ledger and a resident parse cache between analyses: a
    keystroke in one buffer checks that page and the pages that read it, decodes no cached
    page a second time, and finds what a check of the saved file finds."""
    runs = planned(monkeypatch)
    decoded: list[str] = []
    decode_page = cache.decode_page

    def counted(data: bytes | memoryview) -> Any:
        decoded.append(bytes(data)[:20].decode())
        return decode_page(data)

    monkeypatch.setattr(cache, "decode_page", counted)
    proj = Project(tmp_path / "p")
    files = {
        f"knowledge/global/p{i}.md": f"# P{i}\n\n## Part\n\n[[p{(i + 1) % 5}]]\n" for i in range(5)
    }
    proj.write({**files, "knowl.toml": "[rules]\nKB202 = 'off'\n"}).commit("start")
    check(proj.root, Config(rules={"KB202": "off"}, source="knowl.toml"))  # seeds the caches
    workspace = Workspace(proj.root)
    workspace.refresh()
    first = len(decoded)
    assert runs[-1].only == set()  # the last check's ledger, and nothing changed since
    text = "# P2\n\n## Part\n\n[[p3#Gone]]\n"
    workspace.open("knowledge/global/p2.md", text)
    changed = workspace.refresh()
    assert runs[-1].only == {"knowledge/global/p1.md", "knowledge/global/p2.md"}
    assert len(decoded) == first  # nothing decoded again (the buffer is parsed, not decoded)
    assert [d.code for d in changed["knowledge/global/p2.md"]] == ["KB105"]
    # A page not checked again still has its freshness (a hover shows it).
    assert workspace.analysis is not None
    kept = workspace.analysis.assessments.get("knowledge/global/p4.md")
    assert kept is not None and kept.value == "fresh"
    assert workspace.analysis.assessments.get("knowledge/global/none.md") is None
    workspace.open("knowledge/global/p2.md", text.replace("Gone", "Part"))
    assert workspace.refresh() == {"knowledge/global/p2.md": []}
    assert len(decoded) == first
    proj.write({"knowledge/global/p2.md": text})
    workspace.close("knowledge/global/p2.md")
    workspace.files_changed()
    assert [d.code for d in workspace.refresh()["knowledge/global/p2.md"]] == ["KB105"]


def test_a_resident_parse_cache_appends_each_entry_once(tmp_path: Path) -> None:
    """The language server's parse cache lives as long as the session: each save appends what
    is new since the last one (never an entry twice), pages stay decoded, and the decoded
    versions a buffer no longer has are let go."""
    key = machine_key()
    resident = cache.ParseCache(tmp_path, "k", machine=key, resident=True)
    scanner = SecretScanner(())
    one = parse_page(b"# One\n", SecurityConfig(), scanner)
    two = parse_page(b"# Two\n", SecurityConfig(), scanner)
    resident.put("d1", one)
    resident.save()
    resident.put("d2", two)
    assert resident.get("d1") is one
    resident.save()
    lines = (tmp_path / "pages.jsonl").read_bytes().splitlines()
    assert len(lines) == 3  # the header, d1 and d2 once each
    assert resident.get("d2") is two
    resident.save()  # d1 was not used in that run: no longer held decoded
    assert resident.decoded == {"d2": two}
    # Most of the file was not used by that run: it was written again with what was.
    again = cache.ParseCache(tmp_path, "k", machine=key)
    assert (again.get("d1"), again.get("d2")) == (None, two)
    resident.put("d3", one)
    resident.get("d2")
    resident.save()  # appended to the file written anew
    lines = (tmp_path / "pages.jsonl").read_bytes().splitlines()
    assert [line.split(b" ")[1] for line in lines[1:]] == [b"d2", b"d3"]
