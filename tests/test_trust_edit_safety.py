"""A write edits a page only when the result means what was intended (issue 10, items 4 and 7).

Offsets are not meaning: an alias shares its anchor's position, an explicit key (`? key` /
`: value`) puts the colon elsewhere, an anchored value is needed by a later alias. Every
frontmatter edit (store's supersession, supersede, review, fix --apply) is parsed again and
compared with the intended change; a layout that cannot be edited safely is a refused write:
exit 1, one line naming the page, and every file byte for byte as it was. A write that the file
system refuses (a read-only tree) is the same kind of refusal, never an internal error.
"""

from __future__ import annotations

import asyncio
import copy
import errno
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowl_build.core.config_loader import load_config
from knowl_build.parse.frontmatter import split
from knowl_build.writes.edit import EditError, FrontmatterEditor
from knowl_build.writes.request import Request
from knowl_build.writes.store import store
from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke
from tests.test_fix import removed_measure

BASE: dict[str, str | bytes] = {**SEMANTICS, "knowl.toml": "[rules]\nKB202 = 'off'\n"}
PAGE = "knowledge/global/page.md"
OLD = "knowledge/global/old.md"
NEW = b"---\ntitle: New\n---\nNew body.\n"
UNSAFE = "cannot edit this frontmatter layout safely (anchors/explicit keys)"
GONE = "shop_pg.orders.total_revenue"  # removed from the layer by `removed_measure`


def files(root: Path) -> dict[str, bytes]:
    """Every file under knowledge/, with its bytes."""
    base = root / "knowledge"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def assert_refused(proj: Project, args: list[str], page: str, before: dict[str, bytes]) -> str:
    result = invoke([*args, "--repo", str(proj.root)], code=1)
    # One line says why (fix has printed the same reason as a notice before it).
    *notices, line = result.stderr.strip().splitlines()
    assert all(n.startswith(f"knowl: notice: {page}: {UNSAFE}") for n in notices), result.stderr
    assert line.startswith("knowl: error: ") and f"{page}: {UNSAFE}" in line, line
    assert "edit it by hand" in line
    assert "internal error" not in line
    assert files(proj.root) == before  # nothing written, nothing left behind
    assert proj.run_git("status", "--porcelain") == ""
    return line


# -- supersede and store's supersession --------------------------------------------------------

SUPERSEDE_REFUSED = [
    # Replacing the value would drop the anchor `other` needs; keeping it would change `other`.
    ("anchored-status", b"---\ntitle: Old\nstatus: &st active\nother: *st\n---\nOld body.\n"),
    ("explicit-keys", b"---\n? title\n: Old\n? status\n: active\n---\nOld body.\n"),
]


@pytest.mark.parametrize(
    "before", [c[1] for c in SUPERSEDE_REFUSED], ids=[c[0] for c in SUPERSEDE_REFUSED]
)
def test_supersede_refuses_a_layout_it_cannot_edit_safely(
    project: Callable[..., Project], before: bytes
) -> None:
    proj = project({**BASE, OLD: before, "knowledge/global/new.md": NEW})
    snapshot = files(proj.root)
    assert_refused(proj, ["supersede", "old", "new"], OLD, snapshot)
    # store --supersedes makes the same edit: refused as a whole, the new page is not written.
    assert_refused(
        proj,
        [
            "store",
            "--category",
            "fact",
            "--title",
            "Brand new",
            "--content",
            "Something else entirely.",
            "--supersedes",
            "old",
        ],
        OLD,
        snapshot,
    )


# -- review -----------------------------------------------------------------------------------

REVIEW_REFUSED = [
    ("meta-explicit-key", b"---\ntitle: A\nmeta:\n  ? provenance\n  : inferred\n---\nBody.\n"),
    # `meta` is an alias: adding to it would add to `base` as well.
    ("meta-is-an-alias", b"---\nbase: &b\n  provenance: inferred\nmeta: *b\n---\nBody.\n"),
    # The date is an alias: rewriting it would rewrite the anchor's line and break the alias.
    (
        "date-through-an-alias",
        b"---\nd: &d 2020-01-01\nmeta:\n  last_validated_at: *d\n---\nBody.\n",
    ),
    ("explicit-keys", b"---\n? title\n: A\n? summary\n: s\n---\nBody.\n"),
]


@pytest.mark.parametrize(
    "before", [c[1] for c in REVIEW_REFUSED], ids=[c[0] for c in REVIEW_REFUSED]
)
def test_review_refuses_a_layout_it_cannot_edit_safely(
    project: Callable[..., Project], before: bytes
) -> None:
    proj = project({**BASE, PAGE: before, "knowledge/global/fine.md": NEW})
    line = assert_refused(proj, ["review", "fine", "page"], PAGE, files(proj.root))
    assert line.startswith("knowl: error: review refused, nothing was written: ")


# -- fix --apply ------------------------------------------------------------------------------

FIXABLE = "knowledge/global/fixable.md"
FIXABLE_TEXT = (
    f"---\nsummary: Fixable\nsl_refs:\n  - {GONE}\n  - shop_pg.orders\n---\nBody.\n".encode()
)
FIX_REFUSED = [
    ("list-anchor", f"---\nsummary: A\nsl_refs: &r\n  - {GONE}\nx: *r\n---\nBody.\n"),
    (
        "flow-list-anchor",
        f"---\nsummary: A\nsl_refs: &r [{GONE}, shop_pg.orders]\nx: *r\n---\nBody.\n",
    ),
    # Removing the item's line removes the anchor, and `meta:` must not land inside the list.
    (
        "item-anchor",
        f"---\nsummary: A\nsl_refs:\n  - &e {GONE}\n  - shop_pg.orders\nx: *e\n---\nBody.\n",
    ),
    ("explicit-key", f"---\nsummary: A\n? sl_refs\n: - {GONE}\n  - shop_pg.orders\n---\nBody.\n"),
]


@pytest.mark.parametrize(
    "before", [c[1].encode() for c in FIX_REFUSED], ids=[c[0] for c in FIX_REFUSED]
)
def test_fix_apply_refuses_a_layout_it_cannot_edit_safely(
    project: Callable[..., Project], before: bytes
) -> None:
    proj = project({**BASE, PAGE: before, FIXABLE: FIXABLE_TEXT})
    removed_measure(proj)
    snapshot = files(proj.root)
    proposed = invoke(["fix", "--repo", str(proj.root)], code=1)  # the other page's proposal
    assert f"knowl: notice: {PAGE}: {UNSAFE}" in proposed.stderr
    assert f"+++ b/{FIXABLE}" in proposed.stdout and PAGE not in proposed.stdout
    # Every proposal or none: the page that needs a person stops the whole write.
    line = assert_refused(proj, ["fix", "--apply"], PAGE, snapshot)
    assert line.endswith("; nothing was written")


FIX_HANDLED = [
    # A ref listed twice is removed twice; the last removal leaves `[]`, never a null.
    (
        "repeated-item-null-meta",
        f"---\nsummary: A\nsl_refs:\n  - {GONE}\n  - {GONE}\nmeta: ~\n---\nBody.\n",
        "---\nsummary: A\nsl_refs: []\nmeta:\n  last_validated_at: null\n---\nBody.\n",
    ),
    (
        "repeated-item-flow-empty-meta",
        f"---\nsummary: A\nsl_refs: [{GONE}, shop_pg.orders, {GONE}]\nmeta:\n---\nBody.\n",
        "---\nsummary: A\nsl_refs: [shop_pg.orders]\nmeta:\n  last_validated_at: null\n---\nBody.\n",
    ),
    (
        "bound-fingerprints-and-alias-elsewhere",
        f"---\nsummary: &s A\ntitle: *s\nsl_refs:\n- {GONE}\nmeta:\n  bound_fingerprints:\n"
        f'    {GONE}: "{FP_SUM_AMOUNT}"\n---\nBody.\n',
        "---\nsummary: &s A\ntitle: *s\nsl_refs: []\nmeta:\n  bound_fingerprints: {}\n"
        "  last_validated_at: null\n---\nBody.\n",
    ),
]


@pytest.mark.parametrize(
    "before, after", [c[1:] for c in FIX_HANDLED], ids=[c[0] for c in FIX_HANDLED]
)
def test_fix_apply_handles_repeated_refs_and_null_meta(
    project: Callable[..., Project], before: str, after: str
) -> None:
    proj = project({**BASE, PAGE: before.encode()})
    removed_measure(proj)
    invoke(["fix", "--repo", str(proj.root), "--apply"])
    assert (proj.root / PAGE).read_bytes() == after.encode()
    assert invoke(["fix", "--repo", str(proj.root)]).stdout == ""
    invoke(["check", "--repo", str(proj.root)])


# -- the editor itself ------------------------------------------------------------------------


def test_the_editor_compares_meaning_not_text() -> None:
    # A key written plain would be read as a boolean (YAML 1.1 `yes`): refused, not written.
    editor = FrontmatterEditor.of("---\nmeta:\n  frozen: false\n---\n")
    with pytest.raises(EditError, match="would change what other keys or values mean"):
        editor.set_many(["meta", "bound_fingerprints"], [("yes", '"x"')])
    assert editor.result() == "---\nmeta:\n  frozen: false\n---\n"  # a refused step changes nothing
    # Each operation works on the result of the one before.
    editor = FrontmatterEditor.of("---\nsl_refs: [a, b, a]\nmeta: ~\n---\nx\n")
    assert editor.remove_list_item(["sl_refs"], "a") and editor.remove_list_item(["sl_refs"], "a")
    assert not editor.remove_list_item(["sl_refs"], "a")
    editor.set_scalar(["meta", "last_validated_at"], "null")
    assert editor.result() == "---\nsl_refs: [b]\nmeta:\n  last_validated_at: null\n---\nx\n"
    assert EditError("x").exit_code == 1  # a refused write, not a usage error


def test_repeated_keys_edit_the_one_the_parser_reads() -> None:
    editor = FrontmatterEditor.of("---\nstatus: active\nstatus: active\n---\n")
    editor.set_scalar(["status"], "superseded")
    assert editor.result() == "---\nstatus: active\nstatus: superseded\n---\n"


# Frontmatter made of pieces that edits find hard: anchors and aliases, explicit keys, null and
# flow mappings, repeated keys, comments, block scalars.
PIECES = [
    "title: T\n",
    "summary: &s S\n",
    "other: *s\n",
    "status: active\n",
    "status: &st active\n",
    "x: *st\n",
    "sl_refs:\n  - g\n  - k\n",
    "sl_refs: [g, k, g]\n",
    "sl_refs:\n- g\n",
    "sl_refs: &r [g]\n",
    "y: *r\n",
    "sl_refs:\n  - &e g\n  - k\n",
    "z: *e\n",
    "? sl_refs\n: [g]\n",
    "? status\n: active\n",
    "meta:\n",
    "meta: ~\n",
    "meta: {}\n",
    "meta:\n  provenance: inferred\n",
    "meta: {provenance: inferred}\n",
    "meta:\n  bound_fingerprints:\n    g: x\n",
    "meta:\n  ? provenance\n  : inferred\n",
    "meta: &m\n  a: 1\n",
    "mm: *m\n",
    "# comment\n",
    "\n",
    "tags: [a, b]  # c\n",
    "freshness:\n",
    "freshness: stale # x\n",
    "k: |+\n  t\n\n",
    "f: >\n  a\n  b\n",
    "meta:\n    last_validated_at: 2020-01-01\n",
    "d: &d 2020-01-01\n",
    "meta:\n  last_validated_at: *d\n",
    "{}\n",
    "{title: T, meta: ~}\n",
    "status:\n",
    "'meta':\n  'provenance': x\n",
    "meta:  # c\n  # inner\n  provenance: p # q\n# trailing\n",
]
OPERATIONS = [
    [
        ("set_many", ["meta"], [("last_validated_at", '"NOW"')]),
        ("set_many", ["meta", "bound_fingerprints"], [("a.b", '"fp"'), ("g", '"f2"')]),
        ("set_scalar", ["freshness"], "fresh"),
    ],
    [("set_scalar", ["status"], "superseded"), ("set_scalar", ["superseded_by"], "new")],
    [
        ("remove_list_item", ["sl_refs"], "g"),
        ("remove_list_item", ["sl_refs"], "g"),
        ("remove_key", ["meta", "bound_fingerprints"], "g"),
        ("set_scalar", ["meta", "last_validated_at"], "null"),
    ],
]


def _plain(text: str) -> Any:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _intended(value: Any, operation: tuple[Any, ...]) -> None:
    """What an operation means on plain values (a null mapping counts as absent)."""
    name, path, *args = operation
    if name in ("set_many", "set_scalar"):
        items = args[0] if name == "set_many" else [(path[-1], args[0])]
        current = value
        for key in path if name == "set_many" else path[:-1]:
            if current.get(key) is None:
                current[key] = {}
            current = current[key]
        for key, literal in items:
            current[key] = _plain(literal)
        return
    current = value
    for key in path:
        current = current.get(key) if isinstance(current, dict) else None
    if name == "remove_list_item" and isinstance(current, list) and args[0] in current:
        current.remove(args[0])
    if name == "remove_key" and isinstance(current, dict):
        current.pop(args[0], None)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=5),
    crlf=st.booleans(),
    operations=st.sampled_from(OPERATIONS),
)
def test_an_edit_means_the_intended_change_or_is_refused(
    pieces: list[str], crlf: bool, operations: list[tuple[Any, ...]]
) -> None:
    """Checked with PyYAML's own loader, independently of the editor's own check: whatever
    the layout, an edit either gives exactly the intended values with the body untouched, or
    is refused (EditError); it never crashes and never writes something else."""
    text = f"---\n{''.join(pieces)}---\nbody\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    try:
        editor = FrontmatterEditor.of(text)
    except EditError:
        return  # not a mapping, or not YAML: refused as it is
    expected = copy.deepcopy(_plain(split(text).frontmatter or "") or {})
    for name, *args in operations:
        before = editor.result()
        try:
            getattr(editor, name)(*args)
        except EditError as exc:
            assert str(exc).startswith(("cannot edit", "'"))
            assert editor.result() == before  # a refused step changes nothing
            return
    for operation in operations:
        _intended(expected, operation)
    out = editor.result()
    parts = split(out)
    assert _plain(parts.frontmatter or "") == expected
    assert out[parts.body_offset :] == text[split(text).body_offset :]


# -- a tree that cannot be written ------------------------------------------------------------


def fail_creating(monkeypatch: pytest.MonkeyPatch, code: int, nth: int | None = None) -> list[str]:
    """Creating a file under a knowledge/ folder fails with `code` (every time, or only the
    `nth` time), as on a read-only mount or a full disk. Returns the paths tried."""
    real_open = os.open
    tried: list[str] = []

    def fake_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        text = os.fspath(path)
        if "/knowledge/" in text and flags & os.O_CREAT:
            tried.append(text)
            if nth is None or len(tried) == nth:
                raise OSError(code, os.strerror(code), text)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    return tried


def test_a_read_only_tree_is_a_one_line_refusal(
    project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(
        {
            **BASE,
            PAGE: b"---\ntitle: A\n---\nBody.\n",
            OLD: b"---\ntitle: Old\n---\nx\n",
            "knowledge/global/new.md": NEW,
        }
    )
    snapshot = files(proj.root)
    tried = fail_creating(monkeypatch, errno.EROFS)
    for args, path in ((["review", "page"], PAGE), (["supersede", "old", "new"], OLD)):
        result = invoke([*args, "--repo", str(proj.root)], code=1)
        assert result.stderr == (
            f"knowl: error: {path}: cannot be written (Read-only file system); "
            "nothing was written\n"
        )
        assert files(proj.root) == snapshot
    assert tried  # the write really was tried, and refused by the file system


def test_a_write_of_two_files_leaves_neither_when_one_fails(
    project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project({**BASE, OLD: b"---\ntitle: Old\n---\nOld body.\n"})
    snapshot = files(proj.root)
    with monkeypatch.context() as patch:
        tried = fail_creating(patch, errno.ENOSPC, nth=2)  # the new page is staged, OLD fails
        result = invoke(
            [
                "store",
                "--repo",
                str(proj.root),
                "--category",
                "fact",
                "--title",
                "Fresh",
                "--content",
                "A new page.",
                "--supersedes",
                "old",
            ],
            code=2,  # a full disk is no refusal by the rules (exit 1): the run could not go on
        )
    assert result.stderr.endswith(
        f"knowl: error: {OLD}: cannot be written (No space left on device); nothing was written\n"
    )
    assert len(tried) == 2 and files(proj.root) == snapshot  # the new page's file is gone too
    # A folder made for the write goes with it.
    fail_creating(monkeypatch, errno.EROFS)
    invoke(
        [
            "store",
            "--repo",
            str(proj.root),
            "--user",
            "carol",
            "--category",
            "fact",
            "--title",
            "Carol's",
            "--content",
            "Hers.",
        ],
        code=1,
    )
    assert not (proj.root / "knowledge/user").exists() and files(proj.root) == snapshot


# -- confidence -------------------------------------------------------------------------------

BAD_CONFIDENCES = [math.nan, math.inf, -math.inf, 1.5, -0.1, True]


@pytest.mark.parametrize("value", BAD_CONFIDENCES, ids=repr)
def test_a_confidence_outside_0_1_is_refused_by_the_library(
    project: Callable[..., Project], value: Any
) -> None:
    proj = project({**BASE})
    request = Request(category="fact", title="Confident", content="Sure.", confidence=value)
    outcome = store(proj.root, load_config(proj.root), request)
    # A refusal naming `confidence` (KB002), never a page with the value dropped or clamped.
    assert (outcome.action, outcome.argument, outcome.changes) == ("refused", "confidence", [])
    assert [(d["code"], d["severity"]) for d in outcome.diagnostics] == [("KB002", "error")]
    assert "confidence must be a finite number in [0, 1]" in outcome.message
    assert proj.run_git("status", "--porcelain") == ""


def test_a_confidence_outside_0_1_is_refused_by_every_front_end(
    project: Callable[..., Project],
) -> None:
    proj = project({**BASE})
    for value in ("nan", "inf", "-inf", "1.5"):
        result = invoke(
            [
                "store",
                "--repo",
                str(proj.root),
                "--category",
                "fact",
                "--title",
                "T",
                "--content",
                "c",
                "--confidence",
                value,
            ],
            code=1,
        )
        assert "confidence must be a finite number in [0, 1]" in result.stderr
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp_types import CallToolResult

    from knowl_build.app.project import Locator
    from knowl_build.mcp_server import make_server

    # In process: a JSON client may send NaN (the Python SDK's client turns it into null).
    server = make_server(
        locator=Locator(proj.root), artifact=None, with_repo=True, allow_writes=True
    )
    for number in (math.nan, math.inf, -math.inf, 2.0):
        # A tool error carrying the refusal (tests/test_seed_cases.py has its every field).
        refused = asyncio.run(
            server.call_tool(
                "store_knowledge",
                {"category": "fact", "title": "T", "content": "c", "confidence": number},
            )
        )
        assert isinstance(refused, CallToolResult) and refused.is_error
        assert "'confidence' must be a finite number in [0, 1]" in refused.content[0].text  # type: ignore[union-attr]
    assert proj.run_git("status", "--porcelain") == ""
    asyncio.run(
        server.call_tool(
            "store_knowledge",
            {"category": "fact", "title": "T", "content": "c", "confidence": 0.25},
        )
    )
    assert "confidence: 0.25\n" in (proj.root / "knowledge/global/t.md").read_text()
