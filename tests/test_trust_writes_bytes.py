"""Writes keep files byte-for-byte (issue 10, item 7): BOM, line endings, every untouched byte.

Every expectation is the whole file, written out literally: a write may change only the lines
it must, and must give back the byte-order mark, CRLF or lone CR line ends, tabs, trailing
spaces, comments and a missing final newline exactly as it found them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from knowl_build.core.config_loader import load_config
from knowl_build.core.layouts import Layout
from knowl_build.writes.common import Tree
from knowl_build.writes.pagefile import Change, WriteRefused, write_changes
from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke
from tests.test_fix import removed_measure

BASE: dict[str, str | bytes] = {**SEMANTICS, "knowl.toml": "[rules]\nKB202 = 'off'\n"}
NOW = b'"2026-05-28T20:26:40Z"'  # SOURCE_DATE_EPOCH=1780000000, pinned by conftest
PAGE = "knowledge/global/page.md"

# (name, page bytes before `knowl review page`, the whole file after)
REVIEW_CASES = [
    (
        "bom-lf",
        b"\xef\xbb\xbf---\ntitle: A\n---\nBody.\n",
        b"\xef\xbb\xbf---\ntitle: A\nmeta:\n  last_validated_at: " + NOW + b"\n---\nBody.\n",
    ),
    (
        "crlf",
        b"---\r\ntitle: A\r\n---\r\nBody.\r\n\r\nMore.\r\n",
        b"---\r\ntitle: A\r\nmeta:\r\n  last_validated_at: "
        + NOW
        + b"\r\n---\r\nBody.\r\n\r\nMore.\r\n",
    ),
    (
        "bom-crlf-existing-meta",
        b'\xef\xbb\xbf---\r\ntitle: A\r\nmeta:\r\n  last_validated_at: "2025-01-01T00:00:00Z"  # old\r\n'
        b"---\r\nBody.\r\n",
        b"\xef\xbb\xbf---\r\ntitle: A\r\nmeta:\r\n  last_validated_at: " + NOW + b"  # old\r\n"
        b"---\r\nBody.\r\n",
    ),
    (
        "bom-no-frontmatter",
        b"\xef\xbb\xbf# Heading\n\nBody.\n",
        b"\xef\xbb\xbf---\nmeta:\n  last_validated_at: " + NOW + b"\n---\n# Heading\n\nBody.\n",
    ),
    (
        "crlf-no-frontmatter",
        b"# Heading\r\n\r\nBody.\r\n",
        b"---\r\nmeta:\r\n  last_validated_at: " + NOW + b"\r\n---\r\n# Heading\r\n\r\nBody.\r\n",
    ),
    # SPEC 2: only \n ends a line, so a CR-only file is one line and has no frontmatter; the
    # block is added at the top (with \n) and every byte of the file follows unchanged.
    (
        "cr-only",
        b"---\rtitle: A\r---\rBody.\r",
        b"---\nmeta:\n  last_validated_at: " + NOW + b"\n---\n---\rtitle: A\r---\rBody.\r",
    ),
    (
        "no-final-newline",
        b"---\ntitle: A\n---\nBody without a final newline.",
        b"---\ntitle: A\nmeta:\n  last_validated_at: "
        + NOW
        + b"\n---\nBody without a final newline.",
    ),
    (
        "closing-fence-without-newline",
        b"---\ntitle: A\n---",
        b"---\ntitle: A\nmeta:\n  last_validated_at: " + NOW + b"\n---",
    ),
    (
        "tabs-comments-trailing-spaces",
        b"---\n"
        b"# leading comment\t with a tab\n"
        b"title: A   \n"
        b'summary: "tab\\there"\t# comment\tafter a value\n'
        b"tags: [x,  y]  # after a key\n"
        b"freshness: stale\t# set by hand\n"
        b"meta:   # meta comment\n"
        b"  last_validated_at: null\t\t# to be set\n"
        b"  frozen: false   \n"
        b"\n"
        b"---\n"
        b"Body with\ta tab and trailing spaces   \n"
        b"\t\n",
        b"---\n"
        b"# leading comment\t with a tab\n"
        b"title: A   \n"
        b'summary: "tab\\there"\t# comment\tafter a value\n'
        b"tags: [x,  y]  # after a key\n"
        b"freshness: fresh\t# set by hand\n"
        b"meta:   # meta comment\n"
        b"  last_validated_at: " + NOW + b"\t\t# to be set\n"
        b"  frozen: false   \n"
        b"\n"
        b"---\n"
        b"Body with\ta tab and trailing spaces   \n"
        b"\t\n",
    ),
    (
        "bom-crlf-flow-meta",
        b"\xef\xbb\xbf---\r\ntitle: A\t# t\r\nmeta: {}\r\n---\r\nBody.",
        b"\xef\xbb\xbf---\r\ntitle: A\t# t\r\nmeta: {last_validated_at: "
        + NOW
        + b"}\r\n---\r\nBody.",
    ),
    # An empty flow frontmatter is a mapping like any other: the key goes inside it.
    (
        "empty-flow-frontmatter",
        b"---\n{}  # nothing yet\n---\nBody.\n",
        b"---\n{meta: {last_validated_at: " + NOW + b"}}  # nothing yet\n---\nBody.\n",
    ),
    # A null `meta` counts as absent: it becomes the mapping, in block style under its key.
    (
        "meta-empty",
        b"---\ntitle: A\nmeta:\ntags: [x]\n---\nBody.\n",
        b"---\ntitle: A\nmeta:\n  last_validated_at: " + NOW + b"\ntags: [x]\n---\nBody.\n",
    ),
    (
        "meta-tilde-comment-crlf",
        b"---\r\ntitle: A\r\nmeta: ~\t# later\r\n---\r\nBody.\r\n",
        b"---\r\ntitle: A\r\nmeta:\t# later\r\n  last_validated_at: "
        + NOW
        + b"\r\n---\r\nBody.\r\n",
    ),
    (
        "meta-null-in-flow",
        b"---\n{title: A, meta: null}\n---\nBody.\n",
        b"---\n{title: A, meta: {last_validated_at: " + NOW + b"}}\n---\nBody.\n",
    ),
    (
        "freshness-empty",
        b"---\nfreshness:   # by hand\nmeta:\n  frozen: false\n---\nBody.\n",
        b"---\nfreshness: fresh   # by hand\nmeta:\n  frozen: false\n  last_validated_at: "
        + NOW
        + b"\n---\nBody.\n",
    ),
    # The last key's value is an alias: `meta` goes after the alias, not after its anchor.
    (
        "alias-last",
        b"---\ntitle: &t A\nsummary: *t\n---\nBody.\n",
        b"---\ntitle: &t A\nsummary: *t\nmeta:\n  last_validated_at: " + NOW + b"\n---\nBody.\n",
    ),
    # An anchor and its alias elsewhere do not stand in the way.
    (
        "anchor-elsewhere",
        b"---\nbase: &b {x: 1}\nother: *b\nmeta:\n  provenance: inferred\n---\nBody.\n",
        b"---\nbase: &b {x: 1}\nother: *b\nmeta:\n  provenance: inferred\n  last_validated_at: "
        + NOW
        + b"\n---\nBody.\n",
    ),
]


@pytest.mark.parametrize(
    "before, after", [c[1:] for c in REVIEW_CASES], ids=[c[0] for c in REVIEW_CASES]
)
def test_review_keeps_every_other_byte(
    project: Callable[..., Project], before: bytes, after: bytes
) -> None:
    proj = project({**BASE, PAGE: before})
    invoke(["review", "page", "--repo", str(proj.root)])
    assert (proj.root / PAGE).read_bytes() == after
    # A second review changes nothing but what it must (here: nothing at all).
    invoke(["review", "page", "--repo", str(proj.root)])
    assert (proj.root / PAGE).read_bytes() == after


SUPERSEDE_CASES = [
    (
        "bom-crlf",
        b"\xef\xbb\xbf---\r\ntitle: Old\r\nsummary: old one  # keep\r\n---\r\nOld body.\r\n",
        b"\xef\xbb\xbf---\r\ntitle: Old\r\nsummary: old one  # keep\r\nstatus: superseded\r\n"
        b"superseded_by: new\r\n---\r\nOld body.\r\n",
    ),
    (
        "existing-status-with-tab-comment",
        b"---\ntitle: Old\nstatus: active\t# was active\ntags:\n  - a   \n---\nOld body.",
        b"---\ntitle: Old\nstatus: superseded\t# was active\ntags:\n  - a   \nsuperseded_by: new\n"
        b"---\nOld body.",
    ),
    (
        "cr-only",
        b"Old body.\rSecond line.\r",
        b"---\nstatus: superseded\nsuperseded_by: new\n---\nOld body.\rSecond line.\r",
    ),
    (
        "bom-no-frontmatter-no-newline",
        b"\xef\xbb\xbfOld body.",
        b"\xef\xbb\xbf---\nstatus: superseded\nsuperseded_by: new\n---\nOld body.",
    ),
    (
        "empty-flow-frontmatter",
        b"---\n{}\n---\nOld body.\n",
        b"---\n{status: superseded, superseded_by: new}\n---\nOld body.\n",
    ),
    (
        "anchored-title-aliased-summary",
        b"---\ntitle: &t Old\nsummary: *t\nstatus: active\n---\nOld body.\n",
        b"---\ntitle: &t Old\nsummary: *t\nstatus: superseded\nsuperseded_by: new\n---\nOld body.\n",
    ),
    (
        "status-empty",
        b"---\ntitle: Old\nstatus:\n---\nOld body.\n",
        b"---\ntitle: Old\nstatus: superseded\nsuperseded_by: new\n---\nOld body.\n",
    ),
]
NEW = b"---\r\ntitle: New\r\n---\r\nNew body.\r\n"


@pytest.mark.parametrize(
    "before, after", [c[1:] for c in SUPERSEDE_CASES], ids=[c[0] for c in SUPERSEDE_CASES]
)
def test_supersede_keeps_every_other_byte(
    project: Callable[..., Project], before: bytes, after: bytes
) -> None:
    proj = project({**BASE, "knowledge/global/old.md": before, "knowledge/global/new.md": NEW})
    invoke(["supersede", "old", "new", "--repo", str(proj.root)])
    assert (proj.root / "knowledge/global/old.md").read_bytes() == after
    assert (proj.root / "knowledge/global/new.md").read_bytes() == NEW
    invoke(["check", "--repo", str(proj.root)])


def test_store_supersession_keeps_every_other_byte(project: Callable[..., Project]) -> None:
    old = (
        b"\xef\xbb\xbf---\r\ntitle: Warehouse engine\t# the subject\r\ncategory: decision\r\n"
        b"tags: [db]   \r\n---\r\nEverything moves to Snowflake.\r\n\r\n- trailing   \r\n"
    )
    proj = project({**BASE, "knowledge/global/warehouse-engine.md": old})
    args = [
        "store",
        "--repo",
        str(proj.root),
        "--category",
        "decision",
        "--title",
        "Analytics storage",
        "--content",
        "We keep PostgreSQL for analytics data.",
        "--supersedes",
        "warehouse-engine",
    ]
    invoke(args)
    assert (proj.root / "knowledge/global/warehouse-engine.md").read_bytes() == (
        b"\xef\xbb\xbf---\r\ntitle: Warehouse engine\t# the subject\r\ncategory: decision\r\n"
        b"tags: [db]   \r\nstatus: superseded\r\nsuperseded_by: analytics-storage\r\n---\r\n"
        b"Everything moves to Snowflake.\r\n\r\n- trailing   \r\n"
    )
    # The reconciliation reads bodies without translating newlines: a CRLF page with the same
    # subject is superseded, and its bytes are kept too.
    crlf = b"---\r\ncategory: decision\r\ntitle: Database choice\r\n---\r\nWe use PostgreSQL.\r\n"
    proj.write({"knowledge/global/database-choice.md": crlf})
    invoke(
        [
            "store",
            "--repo",
            str(proj.root),
            "--category",
            "decision",
            "--title",
            "Database choice for analytics",
            "--content",
            "We use PostgreSQL for analytics.",
        ]
    )
    assert (proj.root / "knowledge/global/database-choice.md").read_bytes() == (
        b"---\r\ncategory: decision\r\ntitle: Database choice\r\nstatus: superseded\r\n"
        b"superseded_by: database-choice-for-analytics\r\n---\r\nWe use PostgreSQL.\r\n"
    )
    invoke(["check", "--repo", str(proj.root)])


FIX_BEFORE = (
    b"\xef\xbb\xbf---\r\n"
    b"summary: Revenue   # the summary\r\n"
    b"sl_refs:\r\n"
    b"  - shop_pg.orders.total_revenue\t# gone soon\r\n"
    b"  - shop_pg.orders\r\n"
    b"meta:\r\n"
    b'  last_validated_at: "2026-01-01T00:00:00Z"\t# by Ann\r\n'
    b"  bound_fingerprints:\r\n"
    b'    shop_pg.orders.total_revenue: "' + FP_SUM_AMOUNT.encode() + b'"\r\n'
    b"---\r\n"
    b"# Revenue\r\n\r\nSee the orders source.   "
)
FIX_AFTER = (
    b"\xef\xbb\xbf---\r\n"
    b"summary: Revenue   # the summary\r\n"
    b"sl_refs:\r\n"
    b"  - shop_pg.orders\r\n"
    b"meta:\r\n"
    b"  last_validated_at: null\t# by Ann\r\n"
    b"  bound_fingerprints: {}\r\n"
    b"---\r\n"
    b"# Revenue\r\n\r\nSee the orders source.   "
)


def test_fix_apply_keeps_every_other_byte(project: Callable[..., Project]) -> None:
    proj = project({**BASE, "knowledge/global/revenue.md": FIX_BEFORE})
    removed_measure(proj)
    proposed = invoke(["fix", "--repo", str(proj.root)], code=1)
    # (Result.stdout turns CRLF into LF; the bytes show what was printed.)
    assert b"-  - shop_pg.orders.total_revenue\t# gone soon\r\n" in proposed.stdout_bytes
    assert (proj.root / "knowledge/global/revenue.md").read_bytes() == FIX_BEFORE
    invoke(["fix", "--repo", str(proj.root), "--apply"])
    assert (proj.root / "knowledge/global/revenue.md").read_bytes() == FIX_AFTER
    assert invoke(["fix", "--repo", str(proj.root)]).stdout == ""


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755])
def test_the_file_mode_is_kept(project: Callable[..., Project], mode: int) -> None:
    proj = project(
        {
            **BASE,
            "knowledge/global/old.md": "---\ntitle: Old\n---\nx\n",
            "knowledge/global/new.md": "---\ntitle: New\n---\ny\n",
        }
    )
    for name in ("old", "new"):
        os.chmod(proj.root / f"knowledge/global/{name}.md", mode)
    invoke(["review", "new", "--repo", str(proj.root)])
    invoke(["supersede", "old", "new", "--repo", str(proj.root)])
    for name in ("old", "new"):
        assert stat.S_IMODE(os.stat(proj.root / f"knowledge/global/{name}.md").st_mode) == mode


def test_a_symlinked_page_is_edited_through_the_link(project: Callable[..., Project]) -> None:
    target = b"---\r\ntitle: Target\r\n---\r\nBody.\r\n"
    proj = project({**BASE, "knowledge/global/real/target.md": target})
    link = proj.root / "knowledge/global/alias.md"
    link.symlink_to("real/target.md")
    proj.commit("alias")
    invoke(["review", "alias", "--repo", str(proj.root), "--commit"])
    assert link.is_symlink() and os.readlink(link) == "real/target.md"
    assert (proj.root / "knowledge/global/real/target.md").read_bytes() == (
        b"---\r\ntitle: Target\r\nmeta:\r\n  last_validated_at: " + NOW + b"\r\n---\r\nBody.\r\n"
    )
    # The commit holds the file that changed, not the unchanged link.
    assert proj.run_git("show", "--format=%s", "--name-only", "HEAD").split() == [
        "Review",
        "alias",
        "knowledge/global/real/target.md",
    ]
    assert proj.run_git("status", "--porcelain") == ""


def test_a_link_out_of_its_scope_is_never_written_through(project: Callable[..., Project]) -> None:
    plan = b"---\ntitle: Alice's plan\n---\nPrivate.\n"
    outside = b"---\ntitle: Outside\n---\nNot knowledge.\n"
    proj = project(
        {
            **BASE,
            "knowledge/user/alice/plan.md": plan,
            "docs/outside.md": outside,
            "knowledge/global/shared.md": "---\ntitle: Shared\n---\nx\n",
        }
    )
    to_alice = proj.root / "knowledge/global/evil.md"
    to_alice.symlink_to("../user/alice/plan.md")
    to_docs = proj.root / "knowledge/global/docs.md"
    to_docs.symlink_to("../../docs/outside.md")
    proj.commit("links")
    for ref in ("evil", "docs"):
        # Refused either way: as a page that leads out of its scope, or, where discovery skips
        # such links, as a page that does not exist.
        invoke(["review", ref, "--repo", str(proj.root)], code=1)
        invoke(["review", ref, "--repo", str(proj.root), "--user", "bob"], code=1)
    assert (proj.root / "knowledge/user/alice/plan.md").read_bytes() == plan
    assert (proj.root / "docs/outside.md").read_bytes() == outside
    assert to_alice.is_symlink() and to_docs.is_symlink()


def test_a_user_folder_linked_to_another_users_folder_is_not_written(
    project: Callable[..., Project],
) -> None:
    proj = project({**BASE, "knowledge/user/alice/plan.md": "---\ntitle: Plan\n---\nPrivate.\n"})
    (proj.root / "knowledge/user/bob").symlink_to("alice")
    proj.commit("bob's folder is alice's")
    before = sorted(p.name for p in (proj.root / "knowledge/user/alice").iterdir())
    result = invoke(
        [
            "store",
            "--repo",
            str(proj.root),
            "--user",
            "bob",
            "--category",
            "fact",
            "--title",
            "Bob writes",
            "--content",
            "Into whose folder?",
        ],
        code=1,
    )
    assert "outside its scope's folder" in result.stderr
    assert sorted(p.name for p in (proj.root / "knowledge/user/alice").iterdir()) == before


def test_a_file_changed_after_reading_is_not_overwritten(project: Callable[..., Project]) -> None:
    crlf = b"---\r\ntitle: A\r\n---\r\nBody.\r\n"
    proj = project({**BASE, PAGE: crlf})
    tree = Tree.load(proj.root, load_config(proj.root))
    source = tree.source(PAGE)
    assert source.data == crlf and source.text == crlf.decode()  # no newline translation
    change = Change.edit(PAGE, source, source.text.replace("title: A", "title: B"))
    # The same text once decoded with newline translation, but not the same bytes.
    (proj.root / PAGE).write_bytes(crlf.replace(b"\r\n", b"\n"))
    with pytest.raises(WriteRefused, match="changed while the write was prepared"):
        tree.write([change])
    assert (proj.root / PAGE).read_bytes() == crlf.replace(b"\r\n", b"\n")


def test_writes_land_only_on_page_paths(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    for path in (
        "knowledge/user/../../x.md",
        "knowledge/global/../../../x.md",
        "x.md",
        "knowledge/user/a.md",
        "knowledge/global/a.txt",
        "/tmp/x.md",
    ):
        with pytest.raises(WriteRefused):
            write_changes(root, Layout(), [Change(path, None, "x\n")])
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["proj"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("\ufeff---\ntitle: A\n---\nx", "\ufeff---\ntitle: B\n---\nx"),
        ("\ufeff---\r\ntitle: A\r\n---\r\n", "\ufeff---\r\ntitle: B\r\n---\r\n"),
        # Only one mark is the file's; a second one is text, so there is no frontmatter yet.
        (
            "\ufeff\ufeff---\ntitle: A\n---\n",
            "\ufeff---\ntitle: B\n---\n\ufeff---\ntitle: A\n---\n",
        ),
    ],
)
def test_the_editor_keeps_a_byte_order_mark_in_front(text: str, expected: str) -> None:
    from knowl_build.writes.edit import FrontmatterEditor

    editor = FrontmatterEditor.of(text)
    editor.set_scalar(["title"], "B")
    assert editor.result() == expected
