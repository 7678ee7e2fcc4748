"""Issue 10, class 5: no message of any format repeats a user-supplied string that looks like
a secret. Secrets reach messages through every item a page names (a link, a ref, an sl_ref, a
key, a heading, a path, a value) and through the arguments of commands and MCP tools; each
path is driven here on a real repository and every output is searched for the secret."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from knowl_build.cli import cli
from knowl_build.core.diagnostics import Diagnostic, Finding
from knowl_build.core.errors import UsageError
from knowl_build.secrets.patterns import REDACTED
from knowl_build.secrets.scanner import redact, use_extra_patterns
from tests.helpers import SEMANTICS, Project, invoke

TOKEN = "ghp_" + "A1b2" * 9  # a GitHub token: SPEC 9's known prefix
AWS = "AKIA" + "ABCDEFGHIJKLMNOP"
# A high-entropy word of 33 characters. (`Zq8` alone would be SVG path data: a word of path
# commands and digits only, which a random token of 33 characters is with odds below 1e-10.)
ENTROPY = "Zx8" * 11

PAGES = {
    **SEMANTICS,
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/target.md": "# Target\n\n## Known heading\n",
    # Each item below quotes the secret in the finding it draws, before redaction.
    "knowledge/global/links.md": (
        "---\n"
        f"sl_refs: [shop_pg.orders.{TOKEN}]\n"
        f"refs: [{AWS}]\n"
        f"usage_mode: {TOKEN}\n"
        f"{ENTROPY}: 1\n"
        f"affected_paths: [config/{TOKEN}.env]\n"
        "status: superseded\n"
        f"superseded_by: {ENTROPY}\n"
        "---\n"
        f"# Links\n\n[[{TOKEN}]] and [[target#{AWS}]] and << sl:shop_pg.orders.{ENTROPY}.expr >>\n"
    ),
}


def _all_output(proj: Project, *args: str, code: int) -> str:
    result = invoke([*args, "--repo", str(proj.root)], code=code)
    return result.stdout + result.stderr


def _assert_clean(text: str) -> None:
    for secret in (TOKEN, AWS, ENTROPY, TOKEN.lower(), AWS.lower()):
        assert secret not in text, f"{secret!r} leaked:\n{text}"


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_findings_never_repeat_a_secret(project: Callable[..., Project], fmt: str) -> None:
    proj = project(PAGES)
    out = _all_output(proj, "check", "--format", fmt, code=1)
    _assert_clean(out)
    assert REDACTED in out
    if fmt == "json":
        codes = {d["code"] for d in json.loads(out[: out.rindex("}") + 1])["diagnostics"]}
        # The findings are all there; only the secret is gone from their messages.
        assert {"KB002", "KB006", "KB101", "KB102", "KB103", "KB105", "KB106", "KB302"} <= codes


def test_published_diagnostics_and_build_output(project: Callable[..., Project]) -> None:
    proj = project(PAGES)
    out = _all_output(proj, "build", "--allow-errors", "--format", "json", code=0)
    _assert_clean(out)
    current = proj.root / ".knowl" / "build"
    folder = current / (current / "CURRENT").read_text().strip()
    _assert_clean((folder / "diagnostics.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "args",
    [
        ["show", TOKEN],
        ["traverse", AWS],
        ["timeline", TOKEN],
        ["review", ENTROPY],
        ["supersede", TOKEN, "target"],
        ["search", "x", "--category", TOKEN],
        ["show", "target", "--user", TOKEN],
        ["store", "--category", "fact", "--title", "x", "--content", "y", "--user", AWS],
    ],
)
def test_errors_never_repeat_a_secret(project: Callable[..., Project], args: list[str]) -> None:
    proj = project(PAGES)
    invoke(["build", "--repo", str(proj.root), "--allow-errors", "-q"])
    result = CliRunner().invoke(cli, [*args, "--repo", str(proj.root)], catch_exceptions=False)
    assert result.exit_code in (1, 2), result.stdout + result.stderr
    _assert_clean(result.stdout + result.stderr)


def test_a_refused_store_names_no_secret_page(project: Callable[..., Project]) -> None:
    proj = project(PAGES)
    result = invoke(
        [
            "store",
            "--repo",
            str(proj.root),
            "--json",
            "--category",
            "fact",
            "--title",
            f"Deploy key {TOKEN}",
            "--content",
            "The key to deploy.",
        ],
        code=1,
    )
    _assert_clean(result.stdout + result.stderr)
    answer = json.loads(result.stdout)
    assert answer["action"] == "refused" and answer["diagnostics"]
    assert not list(proj.root.glob("knowledge/global/deploy-key*"))


def test_configured_patterns_are_redacted_too() -> None:
    try:
        use_extra_patterns(("acme-internal",))
        finding = Finding("KB103", 1, 1, "[[ACME-Internal-roadmap]] points at no page")
        assert "ACME-Internal" not in finding.message and REDACTED in finding.message
    finally:
        use_extra_patterns(())


def test_every_message_type_redacts_at_construction() -> None:
    finding = Finding("KB103", 1, 1, f"[[{TOKEN}]] points at no page", f"did you mean '{AWS}'?")
    assert TOKEN not in finding.message and AWS not in (finding.hint or "")
    diagnostic = Diagnostic("a.md", 1, 1, "KB103", "error", f"x {TOKEN}")
    assert TOKEN not in diagnostic.message
    assert TOKEN not in str(UsageError(f"no page '{TOKEN}'"))
    assert redact("nothing here") == "nothing here"


def test_mcp_errors_never_repeat_a_secret(project: Callable[..., Project]) -> None:
    pytest.importorskip("mcp")
    from tests.test_mcp import run

    proj = project(PAGES)
    invoke(["build", "--repo", str(proj.root), "--allow-errors", "-q"])
    calls = [
        ("read_knowledge_page", {"page": TOKEN}),
        ("search_knowledge", {"query": "x", "limit": TOKEN}),
        ("traverse_knowledge", {"pages": [AWS]}),
        ("store_knowledge", {"category": "fact", "title": f"Key {TOKEN}", "content": "k"}),
        ("supersede_knowledge", {"old": ENTROPY, "new": "target"}),
        ("search_knowledge", {"query": "x", "user": TOKEN}),
    ]

    async def body(session: Any) -> list[str]:
        texts = []
        for name, arguments in calls:
            result = await session.call_tool(name, arguments)
            texts.append(json.dumps(result.model_dump(mode="json")))
        return texts

    texts = run(["--repo", str(proj.root), "--allow-writes"], body)
    assert len(texts) == len(calls)
    for text in texts:
        _assert_clean(text)
