"""Trust (issue 21, item 2): `--baseline` compares a secret by what it is, not by its kind.

On a real git history, main holds a secret in a page and a branch replaces it with another in
the same place: the new one is a new finding (exit 1), while the same secret unchanged or
moved stays known (exit 0). Every rule whose finding is about a value (KB401 in a body, a
frontmatter value, key or comment, frontmatter that is not YAML, a URL's credentials; KB402's
path) is compared by a keyed digest of that value, and neither the value nor its digest
reaches any output format or any file.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.pipeline import baseline
from tests.helpers import Project, invoke

P = "knowledge/global/p.md"
TOML = "[rules]\nKB202 = 'off'\n"
KEY_A = "AKIA" + "Q7" * 8  # SPEC 9: an AWS access key id
KEY_B = "AKIA" + "Z3" * 8
TOKEN_A = "ghp_" + "A1b2" * 9
TOKEN_B = "ghp_" + "C3d4" * 9
PEM_A = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1b2C3d4E\nq9w8e7r6t5y4u3i2\n"
    "-----END RSA PRIVATE KEY-----"
)
# The same header and end, another key: lines too short to be high-entropy words, so only
# the block as a whole tells the two apart.
PEM_B = PEM_A.replace("1b2C3d4E", "9z8Y7x6W")
PUSHED = "A new paragraph\npushes everything down.\n\n"  # moves what follows two lines down


def _page(body: str, frontmatter: str = "") -> str:
    return (f"---\n{frontmatter}---\n" if frontmatter else "") + f"# P\n\n{body}\n"


# (page at main, page on the branch, the (code, line, column) reported against main)
CASES: dict[str, tuple[str, str, list[tuple[str, int, int]]]] = {
    "another key in the body is new": (
        _page(f"key {KEY_A} here"),
        _page(f"key {KEY_B} here"),
        [("KB401", 3, 5)],
    ),
    "the same key unchanged is known": (
        _page(f"key {KEY_A} here"),
        _page(f"key {KEY_A} here\n\nMore text."),
        [],
    ),
    "the same key moved is known": (
        _page(f"key {KEY_A} here"),
        _page(PUSHED + f"and now {KEY_A} is here"),
        [],
    ),
    "a second copy of the key is new": (
        _page(f"key {KEY_A} here"),
        _page(f"key {KEY_A} here\n\nagain {KEY_A}"),
        [("KB401", 5, 7)],
    ),
    "two keys swapped in place are both known": (
        _page(f"{KEY_A}\n\n{KEY_B}"),
        _page(f"{KEY_B}\n\n{KEY_A}"),
        [],
    ),
    "another key in a frontmatter value is new": (
        _page("text", f"summary: {KEY_A}\n"),
        _page("text", f"summary: {KEY_B}\n"),
        [("KB401", 2, 10)],
    ),
    "another secret key in the frontmatter is new": (
        _page("text", f"{KEY_A}: x\n"),
        _page("text", f"{KEY_B}: x\n"),
        [("KB401", 2, 1)],
    ),
    "another token in a frontmatter comment is new": (
        _page("text", f"summary: s\n# deploy token: {TOKEN_A}\n"),
        _page("text", f"summary: s\n# deploy token: {TOKEN_B}\n"),
        [("KB401", 3, 17)],
    ),
    "another key in frontmatter that is not YAML is new": (
        _page("text", f"summary: [unclosed {KEY_A}\n"),
        _page("text", f"summary: [unclosed {KEY_B}\n"),
        [("KB401", 2, 20)],
    ),
    "another password in a URL is new": (
        _page("postgres://app:Sup3rS3cretA@db.internal/x"),
        _page("postgres://app:Oth3rS3cretB@db.internal/x"),
        [("KB401", 3, 1)],
    ),
    "another credential in a URL parameter is new": (
        _page("<https://e.x/a?access_token=t0k3nValueAAAAAAAAAA>"),
        _page("<https://e.x/a?access_token=t0k3nValueBBBBBBBBBB>"),
        [("KB401", 3, 29)],
    ),
    "another named secret is new": (
        _page("password: hunter2hunter2hunter2"),
        _page("password: hunter3hunter3hunter3"),
        [("KB401", 3, 1)],
    ),
    "another private key under the same header is new": (
        _page(PEM_A),
        _page(PEM_B),
        [("KB401", 3, 1)],
    ),
    "the same private key moved is known": (
        _page(PEM_A),
        _page(PUSHED + PEM_A),
        [],
    ),
    "another sensitive path in the same field is new": (
        _page("text", "affected_paths: [config/.env]\n"),
        _page("text", "affected_paths: [deploy/.env]\n"),
        [("KB402", 2, 18)],
    ),
    "the same sensitive path moved is known": (
        _page("text", "affected_paths: [config/.env]\n"),
        _page("text", "summary: s\naffected_paths:\n  - config/.env\n"),
        [],
    ),
}


def _history(project: Callable[..., Project], main: str, branch: str, path: str = P) -> Project:
    proj = project({"knowl.toml": TOML, path: main})  # committed on main
    proj.run_git("checkout", "-q", "-b", "feature")
    proj.write({path: branch}).commit("the pull request")
    return proj


def _new(proj: Project, code: int) -> list[tuple[str, int, int]]:
    result = invoke(
        ["check", "--repo", str(proj.root), "--format", "json", "--baseline", "main"], code=code
    )
    return [(d["code"], d["line"], d["column"]) for d in json.loads(result.stdout)["diagnostics"]]


@pytest.mark.parametrize("name", list(CASES))
def test_value_findings_are_compared_by_value(project: Callable[..., Project], name: str) -> None:
    main, branch, expected = CASES[name]
    proj = _history(project, main, branch)
    assert _new(proj, int(bool(expected))) == expected


def test_a_page_named_like_a_secret_is_compared_by_value(
    project: Callable[..., Project],
) -> None:
    """Its path is redacted in every finding; the baseline still finds the file it names."""
    path = "knowledge/global/Runbook-Q7f3KzP9mW2xL8vB4nR6tY1uE5aS0dG.md"
    proj = _history(project, _page(f"key {KEY_A}"), _page(PUSHED + f"key {KEY_A}"), path)
    assert _new(proj, 0) == []
    proj.write({path: _page(f"key {KEY_B}")}).commit("another key")
    assert _new(proj, 1) == [("KB401", 3, 5)]


def test_build_gates_on_another_secret(project: Callable[..., Project]) -> None:
    proj = _history(project, _page(f"key {KEY_A}"), _page(PUSHED + f"key {KEY_A}"))
    args = ["build", "--repo", str(proj.root), "--baseline", "main"]
    assert "published" in invoke(args).stderr
    # Unchanged since: the build is a no-op, its findings read back from the artifact.
    invoke(args)
    proj.write({P: _page(f"key {KEY_B}")}).commit("another key")
    assert "refused" in invoke(args, code=1).stderr


FORMATS = ["text", "json", "sarif", "github"]


def _leaks(secret: str, key: bytes) -> list[str]:
    """The value, and every way its digest could be spelled."""
    keyed = hmac.digest(key, secret.encode(), "sha256")
    plain = hashlib.sha256(secret.encode()).digest()
    return [
        secret,
        *(d.hex() for d in (keyed, plain)),
        *(d.hex().upper() for d in (keyed, plain)),
        *(base64.b64encode(d).decode() for d in (keyed, plain)),
        *(base64.urlsafe_b64encode(d).decode().rstrip("=") for d in (keyed, plain)),
    ]


def test_no_value_or_digest_reaches_any_output_or_file(
    project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = b"k" * 32  # the comparison's key, made known to the test
    monkeypatch.setattr(baseline, "_comparison_key", lambda: key)
    proj = _history(project, _page(f"key {KEY_A}"), _page(f"key {KEY_B}\n\nand {KEY_A}"))
    leaks = _leaks(KEY_A, key) + _leaks(KEY_B, key)
    for fmt in FORMATS:
        result = invoke(
            ["check", "--repo", str(proj.root), "--format", fmt, "--baseline", "main"], code=1
        )
        assert "KB401" in result.stdout
        for leak in leaks:
            assert leak not in result.stdout and leak not in result.stderr, (fmt, leak)
    build = invoke(["build", "--repo", str(proj.root), "--baseline", "main"], code=1)
    written = [
        path.read_bytes()
        for folder in (proj.root / ".knowl", tmp_path)
        for path in folder.rglob("*")
        if path.is_file() and not path.is_symlink()
    ]
    keyed = [hmac.digest(key, s.encode(), "sha256") for s in (KEY_A, KEY_B)]
    for leak in leaks[1:]:
        assert leak not in build.stdout + build.stderr
    for data in written:
        assert all(digest not in data for digest in keyed)
        assert all(leak.encode() not in data for leak in leaks[1:] if leak not in (KEY_A, KEY_B))


def test_each_comparison_has_its_own_key(tmp_path: Path) -> None:
    """The key is made for one comparison and shown nowhere: one comparison sees the same
    value twice as equal, another comparison's digest of it is different."""
    (tmp_path / "p.md").write_text(_page(f"key {KEY_A}"), encoding="utf-8")
    finding = [Diagnostic("p.md", 3, 5, "KB401", "error", "m", end_line=3, end_column=24)]
    one, two = baseline.ValueDigests(), baseline.ValueDigests()
    assert repr(one) == "ValueDigests()"
    config = Config()
    assert one.identities(tmp_path, config, finding) == one.identities(tmp_path, config, finding)
    assert one.identities(tmp_path, config, finding) != two.identities(tmp_path, config, finding)
