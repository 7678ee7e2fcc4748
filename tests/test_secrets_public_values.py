"""Public hashes and ids are not secrets, real secrets beside them still are (issue 22, item 7):
Subresource Integrity hashes, SVG path data and the ids of keys that hold public ids, as a
table of texts that must match and texts that must not, in page bodies and in frontmatter,
each with the exact place of what it finds; and `knowl check` on a real repository."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable

import pytest

from knowl_build.core.config import SecurityConfig
from knowl_build.pipeline.pages import parse_page
from knowl_build.secrets.scanner import SecretScanner
from tests.helpers import Project, invoke
from tests.test_trust_secret_scanner import OldSecretScanner


def sri(algorithm: str, content: bytes) -> str:
    """The Subresource Integrity value of `content`, as `openssl dgst -binary | base64` and
    every CDN write it."""
    digest = hashlib.new(algorithm, content).digest()
    return f"{algorithm}-{base64.b64encode(digest).decode()}"


SHA256 = sri("sha256", b"console.log('knowl 1');\n")
SHA384 = sri("sha384", b"body { margin: 0 }\n")
SHA512 = sri("sha512", b"export default {};\n")
# Icons of our own, in the compact form optimisers write: runs of 32 and more commands and
# numbers where a coordinate is negative or a command takes one number.
ICON_MENU = "M20 18H4v-2h16v2zm0-5H4v-2h16v2zm0-5H4V6h16v2z"
ICON_DOC = "M14 2H6v20h12V8l-6-6zm2 16H8v-2h8v2zm0-4H8v-2h8v2zm-3-5V3l6 6h-6z"
ICON_PLUS = "M19 11h-6V5h-2v6H5v2h6v6h2v-6h6v-2zm-7-9C6.48-2 2 2.48 2 8"
# A Google Docs id, a revision id and a YouTube playlist of our own, shaped as theirs are.
DOC_ID = "1Qm3xR7vLp0TzKc9WbN2yHs5DfJg8AeUo4iXtV6nMqZk"
REVISION_ID = "ALBJ4Lt7Qm3xR7vLp0TzKc9WbN2yHs5DfJg8AeUo4iXtV6nMqZ_k2wRe5"
PLAYLIST = "PL3kQm7xR2vLp9TzKc0WbN5yHs8DfJg1Ae"
# Real secrets.
AWS = "AKIAQ7XR2VLP9TZKC0WB"
GITHUB = "ghp_Qm3xR7vLp0TzKc9WbN2yHs5DfJg8AeUo4iXt"
TOKEN = "Zx9Qa7WbT3kLmN0pRs2UvY4cDe6FgHj8"  # 32 characters of every class
# base64 of 64 bytes is 86 characters and `==`; the 86th holds 2 bits and 4 zero bits.
SHA512_SHAPED = "sha512-" + TOKEN * 2 + TOKEN[:21] + "Q=="

HE = "high-entropy string"

NOT_SECRETS: list[tuple[str, str]] = [
    (
        "sri-script-tag",
        f'<script src="https://cdn.example.com/app.js" integrity="{SHA384}" '
        'crossorigin="anonymous"></script>',
    ),
    ("sri-link-tag", f'<link rel="stylesheet" href="/s.css" integrity="{SHA512}">'),
    ("sri-two-hashes", f'<script src="/a.js" integrity="{SHA256} {SHA384}"></script>'),
    ("sri-markdown-prose", f"Pin the file: its hash is {SHA384}, and the old one {SHA256}."),
    ("sri-code-span", f"Set `integrity` to `{SHA512}` in the template."),
    ("sri-csp-header", f"Content-Security-Policy: script-src 'self' '{SHA256}'"),
    ("sri-json", json.dumps({"integrity": SHA512, "name": "app.js"})),
    (
        "sri-hugo-template",
        '{{ $js := resources.Get "app.js" | fingerprint "sha384" }}\n'
        f'<script src="{{{{ $js.RelPermalink }}}}" integrity="{SHA384}"></script>',
    ),
    ("sri-exact-length", SHA512_SHAPED),
    ("svg-path-attribute", f'<svg viewBox="0 0 24 24"><path d="{ICON_DOC}"/></svg>'),
    ("svg-two-paths", f'<path d="{ICON_MENU}" fill="none"/><path d="{ICON_PLUS}"/>'),
    ("svg-path-json", json.dumps({"name": "plus", "path": ICON_PLUS})),
    ("svg-path-jsx", f"<Icon d={{'{ICON_MENU}'}} />"),
    ("docs-id-yaml", f"```yaml\ndocumentId: {DOC_ID}\nrevisionId: {REVISION_ID}\n```"),
    ("docs-id-json", json.dumps({"documentId": DOC_ID, "revisionId": REVISION_ID})),
    ("docs-id-snake-case", f"document_id = '{DOC_ID}'"),
    ("docs-id-attribute", f'<div data-document-id="{DOC_ID}"></div>'),
    ("sheets-id", f"spreadsheetId: {DOC_ID}"),
    ("youtube-key", f"youtube: {PLAYLIST}"),
    ("youtube-playlist-key", f'"playlistId": "{PLAYLIST}"'),
    ("youtube-shortcode", f"{{{{< youtube {PLAYLIST} >}}}}"),
    ("youtube-shortcode-id", f'{{{{< youtube id="{PLAYLIST}" autoplay=true >}}}}'),
    ("youtube-shortcode-percent", f"{{{{% youtube id={PLAYLIST} %}}}}"),
]

# What each text holds: (kind, the matched text), in order.
SECRETS: list[tuple[str, str, list[tuple[str, str]]]] = [
    ("aws-key-as-integrity", f'<script integrity="{AWS}">', [("AWS access key id", AWS)]),
    (
        "aws-key-inside-an-sri-hash",
        f'integrity="sha384-{AWS}{SHA384[7 + 20 :]}"',
        [("AWS access key id", AWS)],
    ),
    ("sha256-too-short", f"sha256-{TOKEN}Ab3=", [(HE, f"sha256-{TOKEN}Ab3")]),
    ("sha256-without-padding", f"sha256-{TOKEN}Zx9Qa7WbT3k", [(HE, f"sha256-{TOKEN}Zx9Qa7WbT3k")]),
    (
        "sha256-bits-base64-never-writes",  # the 43rd character must hold two zero bits
        f"sha256-{TOKEN}Zx9Qa7WbT3z=",
        [(HE, f"sha256-{TOKEN}Zx9Qa7WbT3z")],
    ),
    ("sha512-too-long", SHA512_SHAPED.replace("Q==", "QQ=="), [(HE, SHA512_SHAPED[:-2] + "Q")]),
    (
        "base64url-is-not-sri",
        f"sha256-{TOKEN}_Ab3-Zx9Qa7k=",
        [(HE, f"sha256-{TOKEN}_Ab3-Zx9Qa7k")],
    ),
    ("sri-inside-a-word", f"x{SHA512_SHAPED}", [(HE, f"x{SHA512_SHAPED[:-2]}")]),
    ("token-after-a-hash", f"{SHA256} {TOKEN}", [(HE, TOKEN)]),
    ("github-token-as-document-id", f"documentId: {GITHUB}", [("GitHub token", GITHUB)]),
    ("token-after-another-key", f"docId: {DOC_ID}", [(HE, DOC_ID)]),
    ("token-after-a-longer-key", f"mydocumentId: {DOC_ID}", [(HE, DOC_ID)]),
    ("token-after-a-key-without-separator", f"documentId {DOC_ID}", [(HE, DOC_ID)]),
    ("second-word-after-a-document-id", f"documentId: {DOC_ID} {TOKEN}", [(HE, TOKEN)]),
    (
        "named-secret-after-a-document-id",
        "documentId: password: hunter2hunter2hunter2",
        [("named secret", "password: hunter2hunter2hunter2")],
    ),
    (
        "path-data-but-one-letter",
        f'<path d="{ICON_DOC.replace("V3", "K3")}"/>',
        [(HE, "16H8v-2h8v2zm0-4H8v-2h8v2zm-3-5K3l6")],
    ),
    ("token-in-a-path-attribute", f'<path d="{TOKEN}"/>', [(HE, TOKEN)]),
    ("youtube-in-prose", f"watch youtube {PLAYLIST}", [(HE, PLAYLIST)]),
]


def found(text: str) -> list[tuple[str, str]]:
    return [(m.kind, text[m.start : m.end]) for m in SecretScanner().scan(text)]


@pytest.mark.parametrize("text", [t for _, t in NOT_SECRETS], ids=[n for n, _ in NOT_SECRETS])
def test_public_values_are_not_secrets(text: str) -> None:
    assert found(text) == []
    # Each was a finding under SPEC 9's plain patterns: the case is one knowl tells apart.
    assert OldSecretScanner().scan(text) != []


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in SECRETS], ids=[c[0] for c in SECRETS]
)
def test_secrets_beside_public_values_are_found(text: str, expected: list[tuple[str, str]]) -> None:
    assert found(text) == expected


# --- In a page: frontmatter values by their key, and the body. -----------------------------

PAGE = f"""---
summary: Notes imported from Google Docs
documentId: {DOC_ID}
revisionId: "{REVISION_ID}"
youtube:
  - {PLAYLIST}
docId: {DOC_ID}
title: {TOKEN}
meta:
  documentId: {GITHUB}
---
# Notes

<script src="/app.js" integrity="{SHA384}"></script>
<svg viewBox="0 0 24 24"><path d="{ICON_DOC}"/></svg>

{{{{< youtube id="{PLAYLIST}" >}}}}

```json
{{"documentId": "{DOC_ID}", "token": "{TOKEN}"}}
```
"""


def kb401(page: str) -> list[tuple[int, int, int, int, str]]:
    parsed = parse_page(page.encode(), SecurityConfig(), SecretScanner())
    return [
        (f.line, f.column, f.end_line or 0, f.end_column or 0, f.message)
        for f in parsed.findings
        if f.code == "KB401"
    ]


def test_a_page_finds_only_the_secrets_beside_its_public_values() -> None:
    assert kb401(PAGE) == [
        (7, 8, 7, 51, "'docId' holds a secret (high-entropy string)"),
        (8, 8, 8, 39, "'title' holds a secret (high-entropy string)"),
        (10, 15, 10, 54, "'meta.documentId' holds a secret (GitHub token)"),
        (20, 74, 20, 105, "body holds a secret (high-entropy string)"),
    ]


def test_a_public_id_key_covers_its_values_only() -> None:
    # A list item, a quoted value, a folded one; the id is the value's first word.
    page = (
        "---\n"
        f"playlistId: [{PLAYLIST}, '{PLAYLIST}']\n"
        f"videoId: >\n  {PLAYLIST}\n"
        f"channelId: {PLAYLIST} {TOKEN}\n"
        "---\n"
    )
    assert kb401(page) == [(5, 47, 5, 78, "'channelId' holds a secret (high-entropy string)")]


def test_knowl_check_on_a_hugo_and_google_docs_page_is_clean(
    project: Callable[..., Project],
) -> None:
    proj = project(
        {
            "knowl.toml": '[frontmatter]\nallow = ["documentId", "revisionId", "youtube", "docId"]\n'
            "[rules]\nKB202 = 'off'\n",
            "knowledge/global/notes.md": PAGE,
        }
    )
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    rows = [
        (d["path"], d["line"], d["column"], d["code"])
        for d in json.loads(result.stdout)["diagnostics"]
    ]
    page = "knowledge/global/notes.md"
    assert [r for r in rows if r[3] == "KB401"] == [
        (page, 7, 8, "KB401"),
        (page, 8, 8, "KB401"),
        (page, 10, 15, "KB401"),
        (page, 20, 74, "KB401"),
    ]
    for secret in (TOKEN, GITHUB):
        assert secret not in result.output
    # The same page without its secrets checks clean.
    clean = (
        PAGE.replace(f"docId: {DOC_ID}\n", "")
        .replace(f"title: {TOKEN}\n", "")
        .replace(f"meta:\n  documentId: {GITHUB}\n", "")
        .replace(f', "token": "{TOKEN}"', "")
    )
    proj.write({"knowledge/global/notes.md": clean}).commit("no secrets")
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"])
    assert json.loads(result.stdout)["diagnostics"] == []
