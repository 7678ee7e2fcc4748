"""Trust: a secret in a frontmatter comment is KB401, like one in a key or a value.

`# token: ghp_…` holds no data, but it is committed with the page. Comments are scanned at
the position of the match; a comment lies outside every key and value, so nothing is
reported twice. Frontmatter that is not valid YAML (KB001) has no comments, keys or values to
tell apart: all of its text is scanned.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from knowl_build.core.config import SecurityConfig
from knowl_build.pipeline.pages import parse_page
from knowl_build.secrets.scanner import SecretScanner
from tests.helpers import Project, invoke

TOKEN = "ghp_" + "A1b2" * 9  # SPEC 9: a GitHub token
KIND = "GitHub token"
COMMENT = f"a frontmatter comment holds a secret ({KIND})"
VALUE = f"'summary' holds a secret ({KIND})"


def _findings(page: str, **config: object) -> list[tuple[str, int, int, str]]:
    parsed = parse_page(page.encode(), SecurityConfig(**config), SecretScanner())  # type: ignore[arg-type]
    return [(f.code, f.line, f.column, f.message) for f in parsed.findings]


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        (f"---\n# token: {TOKEN}\nsummary: s\n---\nbody\n", [("KB401", 2, 10, COMMENT)]),
        (f"---\nsummary: s  # {TOKEN}\n---\n", [("KB401", 2, 15, COMMENT)]),
        (f"---\ntags:\n  - a\n  # {TOKEN}\n  - b\n---\n", [("KB401", 4, 5, COMMENT)]),
        (f"---\n# only comments {TOKEN}\n---\n", [("KB401", 2, 17, COMMENT)]),
        (f"---\r\n# {TOKEN}\r\nsummary: s\r\n---\r\n", [("KB401", 2, 3, COMMENT)]),
        (
            f"---\n- a # {TOKEN}\n---\n",  # not a mapping: KB001, and the comment is scanned
            [
                ("KB001", 2, 1, "frontmatter is not a mapping of keys to values"),
                ("KB401", 2, 7, COMMENT),
            ],
        ),
        # A `#` inside a value is part of it: reported once, as the value.
        (f"---\nsummary: 's # {TOKEN}'\n---\n", [("KB401", 2, 15, VALUE)]),
        (f"---\nsummary: s#{TOKEN}\n---\n", [("KB401", 2, 12, VALUE)]),
        (f"---\nsummary: >\n  # not a comment {TOKEN}\n---\n", [("KB401", 3, 19, VALUE)]),
        (f"---\nsummary: |  # {TOKEN}\n  text\n---\n", [("KB401", 2, 15, VALUE)]),
        # A value and a comment on one line: each once.
        (
            f"---\nsummary: {TOKEN} # {TOKEN}\n---\n",
            [("KB401", 2, 10, VALUE), ("KB401", 2, 53, COMMENT)],
        ),
        # Invalid YAML: the whole frontmatter is scanned.
        (
            f"---\nsummary: [unclosed {TOKEN}\n---\n",
            [
                ("KB401", 2, 20, f"frontmatter holds a secret ({KIND})"),
                ("KB001", 3, 1, "frontmatter is invalid YAML: did not find expected ',' or ']'"),
            ],
        ),
        ("---\n# knowl: disable KB202\n# just a note\nsummary: s\n---\n", []),
    ],
)
def test_comment_secrets(page: str, expected: list[tuple[str, int, int, str]]) -> None:
    assert _findings(page) == expected


def test_reject_secrets_off_scans_no_comment() -> None:
    assert _findings(f"---\n# {TOKEN}\nsummary: s\n---\n", reject_secrets=False) == []


def test_comment_secret_fails_check_and_is_never_printed(project: Callable[..., Project]) -> None:
    proj = project(
        {
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            "knowledge/global/p.md": f"---\nsummary: s\n# deploy token: {TOKEN}\n---\nbody\n",
        }
    )
    for fmt in ("text", "json", "github", "sarif"):
        result = invoke(["check", "--repo", str(proj.root), "--format", fmt], code=1)
        assert TOKEN not in result.output
    text = invoke(["check", "--repo", str(proj.root)], code=1).stdout
    assert f"knowledge/global/p.md:3:17: error KB401 {COMMENT}" in text
    refused = invoke(["build", "--repo", str(proj.root)], code=1)
    assert "refused" in refused.stderr
