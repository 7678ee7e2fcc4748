"""A Dendron vault with `[links] resolution = "dendron"` (issue 22, item 3).

The vault is written as Dendron writes one: `dendron.yml` at the root, `root.md`, hierarchical
note names (`guide.extensions.md`, a missing parent `tutorial.md` included), Dendron's
frontmatter on every note (`id`, `desc`, `updated: 1636492098692`, `created`, `traitIds`,
`nav_order`, `config`, a task note's `status`), label-first links, `dendron://` links, note
references with ranges, offsets and positions, wildcard references, slug anchors and block
anchors. `knowl check` must find exactly the errors planted in it, at their positions; the
graph and each record's `to` follow what the checker resolved, and exact mode still reads the
same vault as knowl's own rules say.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from knowl_build.artifacts.publication import current_folder
from tests.helpers import Project, invoke, records

G = "knowledge/global"
DENDRON = '[links]\nresolution = "dendron"\n'

DENDRON_YML = """\
version: 5
workspace:
  vaults:
    - fsPath: knowledge/global
      name: notes
  journal:
    dailyDomain: journal
    dateFormat: y.MM.dd
"""

VAULT = {
    "dendron.yml": DENDRON_YML,
    f"{G}/root.md": """\
---
id: root
title: root
desc: ''
updated: 1636492098692
created: 1595352354163
nav_order: 0
config: { global: { enablePrettyRefs: false } }
---

# Welcome to the notes

- [[Getting started|tutorial.getting-started]]
- [[dendron://notes/tutorial.getting-started]]
- [[Useful ones|dendron://notes/guide.extensions#useful-extensions]]
- [[GUIDE.EXTENSIONS]] and [[Guide|guide]]
- [[Back to the top|#welcome-to-the-notes]]
""",
    f"{G}/guide.md": """\
---
id: 4RFQMNA91cRW12VJl_PFd
title: Guide
desc: Everything about the guide
updated: 1639425310320
created: 1625563944736
nav_order: 1.5
stub: false
---

See [[guide.extensions]].
""",
    f"{G}/guide.extensions.md": """\
---
id: v09i0ln42squ1cp0ssop7kg
title: Extensions
desc: ''
updated: 1661381301858
created: 1661381022541
traitIds: [journalNote]
---

## Summary

Extensions we use. ^b1_x

## Useful Extensions

## Header 2.2

## dateFormat

## dateFormat
""",
    f"{G}/tutorial.getting-started.md": """\
---
id: ulkutr6n7xi4fptsuca5gup
title: Getting Started
desc: ''
updated: 1657295043664
created: 1657292208288
---

## Install

Run it. ^install-step
""",
    f"{G}/journal.2024.01.md": """\
---
id: j1
title: '2024-01'
desc: ''
updated: 1704067200000
created: 1704067200000
---
January.
""",
    f"{G}/journal.2024.02.md": """\
---
id: j2
title: '2024-02'
desc: ''
updated: 1706745600000
created: 1706745600000
---
February.
""",
    f"{G}/task.ship-it.md": """\
---
id: sEnzNEw04L4BZ2lN00zuI
title: Ship it
desc: "A task note"
updated: 1635228981637
created: 1635228506689
status: "x"
due: "2021.10.29"
priority: "H"
owner: "kaan"
tags:
  - size.small
---
Done.
""",
    f"{G}/refs.md": """\
---
id: 5mfitxzclq6pl3hs5pz5rcd
title: References
desc: Every kind of note reference
updated: 1636492098692
created: 1636492098692
descr: a typo of desc
---

![[guide.extensions#useful-extensions,1:#*]]
![[guide.extensions#^begin:#^end]]
![[guide.extensions#summary:#^b1_x]]
![[guide.extensions#Header 2.2]] and ![[guide.extensions#header-22]]
![[guide.extensions#dateformat-1]]
![[Install|dendron://notes/tutorial.getting-started#install,1]]
![[tutorial.getting-started#^install-step]]
![[journal.2024.*]] ![[dendron://notes/journal.*]] ![[nothing.matches.*]]

| note | why |
|---|---|
| [[Extensions\\|guide.extensions]] | label first in a table |

Planted errors:

- [[guide|missing.note]]
- [[dendron://notes/missing.other]]
- [[guide.extensions#no-such-heading]]
- ![[guide.extensions#summary:#no-such-end]]
- ![[guide.extensions#^nope]]
- [[guide.extensions#dateformat-2]]
- [[guide.extension]]
""",
}

# Every page lacks `meta.last_validated_at`: KB202 says so on each, and is left out here.
PLANTED = [
    ("KB006", "refs.md", 7, 1),  # `descr`: not a key of Dendron's or knowl's
    ("KB103", "refs.md", 25, 3),  # [[guide|missing.note]]: the label is not the target
    ("KB103", "refs.md", 26, 3),  # [[dendron://notes/missing.other]]
    ("KB103", "refs.md", 31, 3),  # a dotted name is a note's, not a file's: a hint
    ("KB105", "refs.md", 27, 3),  # #no-such-heading
    ("KB105", "refs.md", 28, 3),  # the range's end
    ("KB105", "refs.md", 29, 3),  # ^nope
    ("KB105", "refs.md", 30, 3),  # only two headings share the slug `dateformat`
]


def _vault(root: Path, config: str = DENDRON, files: dict[str, str] | None = None) -> Project:
    proj = Project(root).write({**VAULT, **(files or {}), "knowl.toml": config})
    proj.commit("vault")
    return proj


def _check(proj: Project, code: int) -> list[dict[str, Any]]:
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=code)
    return [d for d in json.loads(result.stdout)["diagnostics"] if d["code"] != "KB202"]


def _positions(rows: list[dict[str, Any]]) -> list[tuple[str, str, int, int]]:
    return sorted((d["code"], d["path"].rsplit("/", 1)[-1], d["line"], d["column"]) for d in rows)


def test_check_finds_exactly_the_planted_errors(tmp_path: Path) -> None:
    rows = _check(_vault(tmp_path / "vault"), 1)
    assert _positions(rows) == PLANTED
    messages = [d["message"] for d in sorted(rows, key=lambda d: (d["line"], d["column"]))]
    assert messages == [
        "'descr' is not a known frontmatter key",
        "[[guide|missing.note]] points at no page visible from global scope",
        "[[dendron://notes/missing.other]] points at no page visible from global scope",
        "[[guide.extensions#no-such-heading]]: page 'guide.extensions' has no heading "
        "'no-such-heading'",
        "![[guide.extensions#summary:#no-such-end]]: page 'guide.extensions' has no heading "
        "'no-such-end'",
        "![[guide.extensions#^nope]]: page 'guide.extensions' has no block '^nope'",
        "[[guide.extensions#dateformat-2]]: page 'guide.extensions' has no heading 'dateformat-2'",
        "[[guide.extension]] points at no page visible from global scope",
    ]
    assert rows[-1]["hint"] == "did you mean 'guide.extensions'?"


def _records_of(proj: Project) -> dict[str, dict[str, Any]]:
    invoke(["build", "--repo", str(proj.root)])
    folder = current_folder(proj.root / ".knowl" / "build")
    assert folder is not None
    return {r["path"].rsplit("/", 1)[-1]: r for r in records(folder)}


def test_records_and_graph_follow_dendrons_resolution(tmp_path: Path) -> None:
    proj = _vault(tmp_path / "vault", DENDRON + '[rules]\nKB103 = "warning"\n')
    by_file = _records_of(proj)
    root = {
        (link["target"], link["heading"]): link.get("to") for link in by_file["root.md"]["links"]
    }
    assert root == {
        ("tutorial.getting-started", None): f"{G}/tutorial.getting-started.md",
        ("dendron://notes/tutorial.getting-started", None): f"{G}/tutorial.getting-started.md",
        ("dendron://notes/guide.extensions", "useful-extensions"): f"{G}/guide.extensions.md",
        ("GUIDE.EXTENSIONS", None): f"{G}/guide.extensions.md",
        ("guide", None): f"{G}/guide.md",
        ("", "welcome-to-the-notes"): f"{G}/root.md",
    }
    refs = [(link["target"], link.get("to")) for link in by_file["refs.md"]["links"]]
    # A wildcard reference names the notes it matches; `[[guide|missing.note]]` names none.
    assert ("journal.2024.*", f"{G}/journal.2024.01.md") in refs
    assert ("nothing.matches.*", None) in refs
    assert ("missing.note", None) in refs
    assert ("guide.extensions", f"{G}/guide.extensions.md") in refs  # the table's `\\|`
    # Dendron's id stays in the frontmatter; the page's id is its note name.
    guide = by_file["guide.md"]
    assert (guide["id"], guide["frontmatter"]["id"]) == ("guide", "4RFQMNA91cRW12VJl_PFd")
    # A task note's status is Dendron's: kept as written, the page is active for knowl.
    task = by_file["task.ship-it.md"]
    assert task["frontmatter"]["status"] == "x"
    assert task["fields"].get("status", "active") == "active"
    walk = json.loads(
        invoke(["traverse", "refs", "--repo", str(proj.root), "--depth", "1", "--json"]).stdout
    )
    assert {"journal.2024.01", "journal.2024.02", "guide.extensions"} <= {
        p["page"] for p in walk["pages"]
    }


def test_notes_of_one_name_in_two_vaults(tmp_path: Path) -> None:
    """A vault per folder: one name in two vaults is no KB005; a bare link to it is ambiguous
    (Dendron asks which), a `dendron://vault/` link is not."""
    shared = "---\nid: {0}\ntitle: Shared\ndesc: ''\nupdated: 1\ncreated: 1\n---\n{0}\n"
    proj = Project(tmp_path / "vaults").write(
        {
            "knowl.toml": DENDRON,
            f"{G}/work/shared.md": shared.format("w1"),
            f"{G}/home/shared.md": shared.format("h1"),
            f"{G}/home/start.md": "---\nid: h2\ntitle: Index\ndesc: ''\nupdated: 1\n"
            "created: 1\n---\n[[shared]]\n[[dendron://work/shared]]\n",
        }
    )
    proj.commit("vaults")
    rows = _check(proj, 0)
    assert [(d["code"], d["line"], d["column"], d["hint"]) for d in rows] == [
        ("KB108", 8, 1, "name its vault: dendron://home/shared"),
    ]
    assert rows[0]["message"] == (
        f"[[shared]] fits several pages: it resolves to {G}/home/shared.md, not {G}/work/shared.md"
    )
    links = [link.get("to") for link in _records_of(proj)["start.md"]["links"]]
    assert links == [f"{G}/home/shared.md", f"{G}/work/shared.md"]


def test_exact_mode_reads_the_vault_by_knowls_rules(tmp_path: Path) -> None:
    """The same vault without Dendron resolution: `id` is KB003 on every note, `[[a|b]]`
    names `a`, and Dendron's keys are unknown."""
    rows = _check(_vault(tmp_path / "vault", ""), 1)
    codes = [d["code"] for d in rows]
    assert codes.count("KB003") == 8
    assert [d["message"] for d in rows if d["code"] == "KB002"] == [
        "'status' value 'x' is not one of active, deprecated, rejected, archived, superseded, draft"
    ]
    broken = {d["message"].split(" ")[0] for d in rows if d["code"] == "KB103"}
    assert "[[Getting" in broken  # the label read as the target
    assert "[[guide|missing.note]]" not in broken  # names `guide`, which exists
    assert "'desc' is not a known frontmatter key" in {d["message"] for d in rows}


def test_switching_to_dendron_after_a_cached_parse(tmp_path: Path) -> None:
    """The parse cache holds the mode-independent parse; Dendron's reading of it comes
    after, so a run in exact mode first changes nothing of the Dendron run after it."""
    proj = _vault(tmp_path / "vault", "")
    _check(proj, 1)
    proj.write({"knowl.toml": DENDRON})
    assert _positions(_check(proj, 1)) == PLANTED
