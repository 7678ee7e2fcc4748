"""Minimal edits keep every byte they do not have to change."""

from __future__ import annotations

import pytest

from knowl_build.writes.common import quoted_timestamp
from knowl_build.writes.edit import EditError, FrontmatterEditor


def edit(text: str, *ops: tuple) -> str:  # type: ignore[type-arg]
    editor = FrontmatterEditor.of(text)
    for op, *args in ops:
        getattr(editor, op)(*args)
    return editor.result()


BLOCK = """---
# a comment that must survive
title: 'Quoted title'
sl_refs:
  - a.b.c   # keep me
  - a.b.gone
  - a.b.d
meta:
  last_validated_at: 2026-01-01   # validated by Ann
  bound_fingerprints:
    a.b.gone: "sha256:00"
    a.b.c: "sha256:11"

tags: [x, y]
---
Body stays *exactly*.
"""


def test_block_list_item_and_map_entry_removed() -> None:
    out = edit(
        BLOCK,
        ("remove_list_item", ["sl_refs"], "a.b.gone"),
        ("remove_key", ["meta", "bound_fingerprints"], "a.b.gone"),
        ("set_scalar", ["meta", "last_validated_at"], "null"),
    )
    assert out == BLOCK.replace("  - a.b.gone\n", "").replace(
        '    a.b.gone: "sha256:00"\n', ""
    ).replace("last_validated_at: 2026-01-01   #", "last_validated_at: null   #")


def test_flow_collections() -> None:
    text = "---\nsl_refs: [a, b, c]\nmeta: {bound_fingerprints: {a: x, b: y}, frozen: false}\n---\n"
    assert edit(text, ("remove_list_item", ["sl_refs"], "b")) == text.replace("[a, b, c]", "[a, c]")
    assert edit(text, ("remove_list_item", ["sl_refs"], "c")) == text.replace("[a, b, c]", "[a, b]")
    assert edit(text, ("remove_list_item", ["sl_refs"], "a")) == text.replace("[a, b, c]", "[b, c]")
    assert edit(text, ("remove_key", ["meta", "bound_fingerprints"], "a")) == text.replace(
        "{a: x, b: y}", "{b: y}"
    )
    assert edit(
        text, ("set_scalar", ["meta", "last_validated_at"], '"2026-01-02T00:00:00Z"')
    ) == text.replace("frozen: false}", 'frozen: false, last_validated_at: "2026-01-02T00:00:00Z"}')


def test_last_item_leaves_an_empty_list() -> None:
    text = "---\nsl_refs:\n  - only.one\nrefs: [x]\n---\nbody\n"
    assert (
        edit(text, ("remove_list_item", ["sl_refs"], "only.one"))
        == "---\nsl_refs: []\nrefs: [x]\n---\nbody\n"
    )
    flow = "---\nsl_refs: [only.one]\n---\n"
    assert edit(flow, ("remove_list_item", ["sl_refs"], "only.one")) == "---\nsl_refs: []\n---\n"


def test_missing_keys_are_appended_in_block_style() -> None:
    text = "---\ntitle: T\nmeta:\n    provenance: inferred\nsummary: s\n---\nbody\n"
    assert edit(text, ("set_scalar", ["meta", "last_validated_at"], "null")) == (
        "---\ntitle: T\nmeta:\n    provenance: inferred\n    last_validated_at: null\nsummary: s\n---\nbody\n"
    )
    no_meta = "---\ntitle: T\n---\nbody\n"
    assert edit(
        no_meta,
        ("set_scalar", ["meta", "last_validated_at"], quoted_timestamp("2026-01-01T00:00:00Z")),
    ) == ('---\ntitle: T\nmeta:\n  last_validated_at: "2026-01-01T00:00:00Z"\n---\nbody\n')
    assert edit("# no frontmatter\n", ("set_scalar", ["status"], "superseded")) == (
        "---\nstatus: superseded\n---\n# no frontmatter\n"
    )
    assert (
        edit("---\n---\nx\n", ("set_scalar", ["status"], "superseded"))
        == "---\nstatus: superseded\n---\nx\n"
    )


def test_crlf_files_keep_crlf() -> None:
    text = "---\r\ntitle: T\r\nsl_refs:\r\n  - a\r\n  - b\r\n---\r\nbody\r\n"
    out = edit(text, ("remove_list_item", ["sl_refs"], "a"), ("set_scalar", ["status"], "active"))
    assert out == "---\r\ntitle: T\r\nsl_refs:\r\n  - b\r\nstatus: active\r\n---\r\nbody\r\n"


def test_invalid_frontmatter_is_refused() -> None:
    with pytest.raises(EditError):
        FrontmatterEditor.of("---\ntitle: [\n---\n")
    with pytest.raises(EditError):
        FrontmatterEditor.of("---\ntitle: x\n")
