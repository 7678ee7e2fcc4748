"""Malformed input is a finding at its place, never a traceback; arbitrary bytes never crash."""

from __future__ import annotations

import json
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowl_build.core.config import SecurityConfig
from knowl_build.pipeline.pages import parse_page
from knowl_build.secrets.scanner import SecretScanner
from knowl_build.semantic.load import load_semantic_layer
from tests.helpers import SEMANTICS, Project, invoke

BAD: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[security]\nmax_body_chars = 1000\n[rules]\nKB202 = 'off'\n",
    "knowledge/global/broken-yaml.md": "---\nsummary: [a\n---\nbody\n",
    "knowledge/global/unclosed.md": "---\nsummary: a\nbody without fence\n",
    "knowledge/global/binary.md": b"\x00\x01\x02binary",
    "knowledge/global/latin1.md": "r\u00e9sum\u00e9".encode("latin-1"),
    "knowledge/global/huge.md": "word " * 1000,
    "knowledge/global/list.md": "---\n- a\n- b\n---\n",
    "knowledge/global/empty.md": "",
    "knowledge/global/only-frontmatter.md": "---\nsummary: just this\n---\n",
    "knowledge/global/only-fence.md": "---",
    "knowledge/global/bomb.md": "---\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n---\n",
    "knowledge/global/tagged.md": "---\nsummary: !!python/object:os.system echo\n---\n",
    "knowledge/global/weird-keys.md": "---\n? [a, b]\n: c\n---\n",
    "semantics/bad/empty.yaml": "",
    "semantics/bad/binary.yml": b"\x00\x00",
}

EXPECTED = [
    ("knowledge/global/binary.md", "KB007"),
    ("knowledge/global/bomb.md", "KB001"),
    ("knowledge/global/broken-yaml.md", "KB001"),
    ("knowledge/global/huge.md", "KB403"),
    ("knowledge/global/latin1.md", "KB007"),
    ("knowledge/global/list.md", "KB001"),
    ("knowledge/global/only-fence.md", "KB001"),
    ("knowledge/global/tagged.md", "KB001"),
    ("knowledge/global/unclosed.md", "KB001"),
    ("knowledge/global/weird-keys.md", "KB001"),
    ("semantics/bad/binary.yml", "KB007"),
    ("semantics/bad/empty.yaml", "KB050"),
]


def test_every_bad_input_is_a_finding(project: Callable[..., Project]) -> None:
    proj = project(BAD)
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    found = [(d["path"], d["code"]) for d in json.loads(result.stdout)["diagnostics"]]
    assert found == EXPECTED
    assert "Traceback" not in result.output


_SCANNER = SecretScanner(("acme-internal",))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    parse_page(data, SecurityConfig(), _SCANNER)
    parse_page(b"---\n" + data + b"\n---\n" + data, SecurityConfig(), _SCANNER)


page_text = st.lists(
    st.sampled_from(
        [
            "---",
            "summary: x",
            "tags: [a",
            "meta:",
            "  frozen: yes",
            "[[a#b|c]]",
            "`",
            "```",
            "    code",
            "# H",
            "Title",
            "===",
            "<< sl:a.b.c >>",
            "{{ sl:x.y }}",
            "\\<<",
            "> q",
            "- item",
            "\r",
            "\t",
            "é",
            "[[",
            "]]",
            "key: &a [*a]",
            "? x",
            ": y",
            "",
        ]
    ),
    max_size=30,
).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(page_text)
def test_markdownish_text_never_crashes_and_positions_are_valid(text: str) -> None:
    parsed = parse_page(text.encode(), SecurityConfig(), _SCANNER)
    lines = text.split("\n")
    for finding in parsed.findings:
        assert finding.line >= 1 and finding.column >= 1
        assert finding.line <= max(1, len(lines))
    for link in parsed.links:
        line = lines[link.span.line - 1]
        assert line[link.span.column - 1 :].startswith(link.raw)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_semantic_files_never_crash(data: bytes) -> None:
    load_semantic_layer([("semantics/a.yaml", data), ("semantics/b.yaml", b"name: x\n" + data)])
