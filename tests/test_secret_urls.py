"""KB401 inside URLs (issue 11, item 7): only credentials in the places they live.

Precision and recall on a corpus of real URL formats (`tests/fixtures/urls.txt`), each URL
embedded in a page four ways, before (the single expression of SPEC 9) and after; where a URL
starts and ends; which parameter names are credentials; property tests (a URL with no
credential place is never reported, a credential parameter always is, at its value); whole
pages, positions and messages."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from knowl_build.core.config import SecurityConfig
from knowl_build.core.config_loader import config_from_mapping
from knowl_build.core.diagnostics import Finding
from knowl_build.pipeline.analysis import analyse
from knowl_build.pipeline.pages import parse_page
from knowl_build.secrets.finders import SecretMatch
from knowl_build.secrets.scanner import SecretScanner, redact
from knowl_build.secrets.urls import is_credential_name, is_trivial_value
from tests.helpers import SEMANTICS, Project
from tests.test_trust_secret_scanner import PARAM, WEBHOOK, OldSecretScanner

CORPUS = Path(__file__).parent / "fixtures" / "urls.txt"
USERINFO = "URL with credentials"
_SCANNER = SecretScanner()


# --- The corpus: real URL formats, labelled by section. ---------------------------------------


@dataclass(frozen=True)
class Url:
    section: str
    url: str
    secret: bool


def load_corpus() -> list[Url]:
    urls: list[Url] = []
    section = ""
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:]
        elif line and not line.startswith("#"):
            assert section.startswith(("clean:", "secret:")), line
            urls.append(Url(section, line, section.startswith("secret:")))
    return urls


# Each URL in a page: bare at the end of a sentence, a Markdown link, an autolink, a
# frontmatter value.
EMBEDDINGS: dict[str, Callable[[str], str]] = {
    "body, bare": lambda url: f"---\nsummary: s\n---\n# Notes\n\nThe export is at {url}.\n",
    "body, [text](url)": lambda url: f"---\nsummary: s\n---\n- [the export]({url}) (weekly)\n",
    "body, <url>": lambda url: f"---\nsummary: s\n---\nSee <{url}>, then ask.\n",
    "frontmatter value": lambda url: f'---\nsummary: "Source: {url}"\n---\nBody.\n',
}


class BeforeScanner:
    """KB401 before issue 11: SPEC 9's single expression, wherever a match starts."""

    def __init__(self) -> None:
        self.old = OldSecretScanner()

    def scan(self, text: str, key: str | None = None) -> list[SecretMatch]:
        # Before issue 22 too: no key was told apart.
        return [SecretMatch(kind, start, end) for kind, start, end in self.old.scan(text)]


def kb401(page: str, scanner: SecretScanner | BeforeScanner) -> list[Finding]:
    parsed = parse_page(page.encode(), SecurityConfig(), scanner)  # type: ignore[arg-type]
    return [f for f in parsed.findings if f.code == "KB401"]


@dataclass
class Counts:
    true_positives: int = 0
    false_positives: int = 0
    false_negatives: int = 0
    true_negatives: int = 0

    @property
    def precision(self) -> float:
        flagged = self.true_positives + self.false_positives
        return self.true_positives / flagged if flagged else 1.0

    @property
    def recall(self) -> float:
        secrets = self.true_positives + self.false_negatives
        return self.true_positives / secrets if secrets else 1.0


def measure(
    scanner: SecretScanner | BeforeScanner,
) -> tuple[dict[str, Counts], list[tuple[str, Url]]]:
    """Counts per embedding, and each (embedding, URL) whose verdict is wrong."""
    counts = {name: Counts() for name in EMBEDDINGS}
    wrong: list[tuple[str, Url]] = []
    for item in load_corpus():
        for name, embed in EMBEDDINGS.items():
            flagged = bool(kb401(embed(item.url), scanner))
            c = counts[name]
            if item.secret and flagged:
                c.true_positives += 1
            elif item.secret:
                c.false_negatives += 1
                wrong.append((name, item))
            elif flagged:
                c.false_positives += 1
                wrong.append((name, item))
            else:
                c.true_negatives += 1
    return counts, wrong


def report(label: str, counts: dict[str, Counts]) -> str:
    total = Counts(
        *(sum(getattr(c, f) for c in counts.values()) for f in Counts.__dataclass_fields__)
    )
    rows = [
        f"{label}: precision {total.precision:.3f}, recall {total.recall:.3f} "
        f"(TP {total.true_positives}, FP {total.false_positives}, FN {total.false_negatives}, "
        f"TN {total.true_negatives})"
    ]
    rows += [
        f"  {name:<20} precision {c.precision:.3f}  recall {c.recall:.3f}  "
        f"FP {c.false_positives:>3}  FN {c.false_negatives:>3}"
        for name, c in counts.items()
    ]
    return "\n".join(rows)


def test_the_corpus_is_large_labelled_and_without_duplicates() -> None:
    urls = load_corpus()
    assert len(urls) >= 300
    assert sum(u.secret for u in urls) >= 60
    assert len({u.url for u in urls}) == len(urls)
    assert not [u.url for u in urls if re.search(r"\s", u.url)]


def test_precision_and_recall_on_real_urls(capsys: pytest.CaptureFixture[str]) -> None:
    after, wrong = measure(_SCANNER)
    before, _ = measure(BeforeScanner())
    urls = load_corpus()
    with capsys.disabled():
        print(
            f"\nKB401 on {len(urls)} URLs ({sum(u.secret for u in urls)} with a credential), "
            f"each embedded {len(EMBEDDINGS)} ways"
        )
        print(report("before", before))
        print(report("after", after))
        for name, item in wrong:
            print(f"  wrong after ({name}, {item.section}): {item.url[:100]}")
    for name, c in after.items():
        assert c.recall == 1.0, (name, wrong)
        assert c.precision >= 0.95, (name, wrong)
        assert c.precision > before[name].precision
    # The only clean URLs still reported are the pre-2014 Sheets links, whose `key` is the id.
    assert {item.url.split("?")[0] for _, item in wrong} == {
        "https://docs.google.com/spreadsheet/ccc",
        "https://docs.google.com/spreadsheet/pub",
    }


def test_each_credential_is_found_inside_its_url_and_redacted_there() -> None:
    for item in load_corpus():
        text = f"See {item.url} now"
        found = _SCANNER.scan(text)
        assert all(m.start >= 4 and m.end <= 4 + len(item.url) for m in found), item.url
        assert bool(found) == item.secret or item.section.startswith("clean: Google"), item.url
        if item.secret:
            redacted = redact(text)
            assert (
                "[redacted]" in redacted
                and redacted.startswith("See ")
                and redacted.endswith(" now")
            )


# --- Where a URL starts and ends, and what is reported inside it. ------------------------------

SIG = "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
DOC = "1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_aBcDe"  # a Google Docs id: high-entropy
OUT = "Zx9Kq2LmN8pR4tV6wY1aB3cD5eF7gH0jK2"  # the same kind of word, outside the URL
HE = "high-entropy string"
NAMED = "named secret"

# (text, expected as (kind, the matched text)) in order; the matched text is found from the
# end of the previous one.
CASES: list[tuple[str, list[tuple[str, str]]]] = [
    # ids in URLs are not secrets; the same words outside a URL still are
    (f"https://docs.google.com/document/d/{DOC}/edit", []),
    (f"{OUT} and https://docs.google.com/document/d/{DOC}/edit", [(HE, OUT)]),
    (f"https://docs.google.com/document/d/{DOC}/edit {OUT}", [(HE, OUT)]),
    (f"[doc](https://docs.google.com/document/d/{DOC}/edit){OUT}", [(HE, OUT)]),
    (f"<https://docs.google.com/document/d/{DOC}>{OUT}", [(HE, OUT)]),
    (f'"https://docs.google.com/document/d/{DOC}"{OUT}', [(HE, OUT)]),
    (f"'https://x.io/{DOC}'{OUT}|https://x.io/{DOC}|{OUT}]", [(HE, OUT), (HE, OUT)]),
    (f"`https://x.io/{DOC}`{OUT}", [(HE, OUT)]),
    (f"(https://x.io/{DOC}){OUT}", [(HE, OUT)]),
    (f"www.x.io/{DOC} and (www.x.io/{DOC}) but x.io/{OUT} is no URL", [(HE, OUT)]),
    (f"xwww.x.io/{OUT}", [(HE, OUT)]),
    ("https://example.com/docs/password/reset-your-account-password-now", []),
    (
        "password reset-your-account-password-now",
        [(NAMED, "password reset-your-account-password-now")],
    ),
    (f"a://{DOC}", []),
    (f"_://{OUT}", [(HE, OUT)]),
    # userinfo: as before, and with an empty user
    ("postgres://analyst:hunter2@db.internal/shop", [(USERINFO, "postgres://analyst:hunter2@")]),
    ("redis://:hunter2@cache:6379/0", [(USERINFO, "redis://:hunter2@")]),
    ("https://alice@bitbucket.org/acme/repo.git", []),
    ("jdbc:postgresql://etl:hunter2@db/x", [(USERINFO, "postgresql://etl:hunter2@")]),
    # as before, anything shaped `scheme://user:password@` is: a port, a query, then an `@`
    ("https://a.b:8080?email=alice@example.com", [(USERINFO, "https://a.b:8080?email=alice@")]),
    # credential parameters: the value is the match, whatever separates the parameters
    (f"https://b.s3.amazonaws.com/k?X-Amz-Expires=3600&X-Amz-Signature={SIG}", [(PARAM, SIG)]),
    (f"https://b.s3.amazonaws.com/k?X-Amz-Signature={SIG}&X-Amz-Expires=3600", [(PARAM, SIG)]),
    (f"https://b.s3.amazonaws.com/k?X-Amz-Signature={SIG}.", [(PARAM, SIG)]),
    (f"https://b.s3.amazonaws.com/k?X-Amz-Signature={SIG}*!?", [(PARAM, SIG)]),
    (f"[s3](https://b.s3.amazonaws.com/k?X-Amz-Signature={SIG}) ok", [(PARAM, SIG)]),
    (f"https://a.b/c?x=1&amp;sig={SIG}&amp;se=2024", [(PARAM, SIG)]),
    (f"https://a.b/c?x=1;sig={SIG};se=2024", [(PARAM, SIG)]),
    (f"https://a.b/cb#access_token={SIG}&token_type=Bearer", [(PARAM, SIG)]),
    (f"https://a.b/#/reset?token={SIG}", [(PARAM, SIG)]),
    (f"https://a.b/?next=https://c.d/?api_key={SIG}", [(PARAM, SIG)]),
    (f"https://u:p@a.b/?token={SIG}", [(USERINFO, "https://u:p@"), (PARAM, SIG)]),
    (f"https://a.b/?token=ghp_{'A1b2' * 9}", [("GitHub token", f"ghp_{'A1b2' * 9}")]),
    (f"https://ghp_{'A1b2' * 9}@github.com/acme/repo.git", [("GitHub token", f"ghp_{'A1b2' * 9}")]),
    (f"https://a.b/?key={SIG}#gid=0", [(PARAM, SIG)]),
    (f"https://a.b/?user%5Bpassword%5D={SIG}", [(PARAM, SIG)]),
    # names and values that are no credential
    (f"https://a.b/?pageToken={SIG}&publicKey={SIG}&monkey={SIG}&X-Amz-Credential={SIG}", []),
    (
        "https://a.b/?api_key=YOUR_API_KEY_HERE&token={token}&key=${KEY}&sig=xxxxxxxxxxxxxxxxxxxx",
        [],
    ),
    ("https://a.b/?api_key=0123456789abcde&token=", []),
    (f"https://a.b/x?sig{SIG}", []),
    (f"https://a.b/sig={SIG}", []),
    # webhooks: the path is the credential
    (
        "https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/Zq8XyW3vU2tS1rQ0pO9nM8lK",
        [(WEBHOOK, "T024BE7LD/B01ABCDEF12/Zq8XyW3vU2tS1rQ0pO9nM8lK")],
    ),
    (
        f"https://discord.com/api/webhooks/1234567890123456789/{DOC}?wait=true",
        [(WEBHOOK, f"1234567890123456789/{DOC}")],
    ),
    (
        "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage",
        [(WEBHOOK, "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage")],
    ),
    ("https://hooks.slack.com/services/XXX/YYY/ZZZ", []),
    ("https://hooks.slack.com.evil.io/services/T024BE7LD/B01ABCDEF12/Zq8XyW3vU2tS1rQ0pO9nM8lK", []),
    ("https://api.slack.com/messaging/webhooks#posting_with_webhooks", []),
]


@pytest.mark.parametrize("text, expected", CASES, ids=[f"case-{i}" for i in range(len(CASES))])
def test_url_rule(text: str, expected: list[tuple[str, str]]) -> None:
    spans, pos = [], 0
    for kind, matched in expected:
        start = text.index(matched, pos)
        spans.append((kind, start, start + len(matched)))
        pos = start + len(matched)
    assert [(m.kind, m.start, m.end) for m in _SCANNER.scan(text)] == spans


@pytest.mark.parametrize(
    "name, credential",
    [
        ("token", True),
        ("key", True),
        ("secret", True),
        ("password", True),
        ("pwd", True),
        ("sig", True),
        ("signature", True),
        ("access_token", True),
        ("api_key", True),
        ("X-Amz-Signature", True),
        ("X-Amz-Security-Token", True),
        ("x-goog-signature", True),
        ("client_secret", True),
        ("clientSecret", True),
        ("auth_token", True),
        ("apikey", True),
        ("apiKey", True),
        ("APIKey", True),
        ("API_KEY", True),
        ("x-api-key", True),
        ("subscription-key", True),
        ("refresh_token", True),
        ("id_token", True),
        ("private_token", True),
        ("user[password]", True),
        ("user%5Bpassword%5D", True),
        ("amp;sig", True),
        ("token2", True),
        ("auth", True),
        ("jwt", True),
        ("passphrase", True),
        ("Signature", True),
        ("pageToken", False),
        ("nextPageToken", False),
        ("continuationToken", False),
        ("sortKey", False),
        ("partitionKey", False),
        ("publicKey", False),
        ("public_key", False),
        ("spaceKey", False),
        ("projectKey", False),
        ("monkey", False),
        ("hotkey", False),
        ("turkey", False),
        ("tokens", False),
        ("X-Amz-Credential", False),
        ("X-Goog-Credential", False),
        ("Key-Pair-Id", False),
        ("token_type", False),
        ("session_state", False),
        ("state", False),
        ("code", False),
        ("rlkey", False),
        ("si", False),
        ("oauth", False),
        ("", False),
        ("=", False),
        ("42", False),
    ],
)
def test_credential_names(name: str, credential: bool) -> None:
    assert is_credential_name(name) is credential


@pytest.mark.parametrize(
    "value, trivial",
    [
        (SIG, False),
        ("0123456789abcdef", False),
        ("Qa%2FVd8lR%2BzT0%3D", False),
        ("JBSWY3DPEHPK3PXP", False),
        ("0123456789abcde", True),
        ("YOUR_API_KEY_HERE", True),
        ("${ACCESS_TOKEN_VALUE}", True),
        ("{token-goes-here-1}", True),
        ("xxxxxxxxxxxxxxxxxxxx", True),
        ("0000000000000000", True),
        ("", True),
    ],
)
def test_trivial_values(value: str, trivial: bool) -> None:
    assert is_trivial_value(value) is trivial


# --- Properties: no credential place, never reported; a credential parameter, always. ----------

TOKEN_PREFIX = re.compile(r"sk-|AKIA|gh[pousr]_|xox[abprs]-")
SEGMENT_CHARS = "abcXYZ0189-_.~%"
CONTEXTS = [
    "{}",
    "See {}.",
    "[a link]({}) and",
    "<{}>",
    '"{}"',
    "| {} |",
    "`{}`",
    "({}), then",
    "- {}\n",
]
CLEAN_NAMES = [
    "v",
    "q",
    "usp",
    "list",
    "si",
    "gid",
    "id",
    "pageToken",
    "publicKey",
    "X-Amz-Credential",
    "X-Amz-Date",
    "utm_source",
    "token_type",
    "state",
    "redirect_uri",
    "ref_",
    "tab",
    "key_id",
]
CREDENTIAL_NAMES = [
    "token",
    "key",
    "secret",
    "password",
    "pwd",
    "sig",
    "signature",
    "access_token",
    "api_key",
    "X-Amz-Signature",
    "client_secret",
    "auth_token",
    "apikey",
    "apiKey",
    "x-api-key",
    "jwt",
    "subscription-key",
    "X-Goog-Signature",
    "id_token",
    "private_token",
]

segment = st.one_of(
    st.text(alphabet=SEGMENT_CHARS, min_size=1, max_size=12),
    st.sampled_from(
        [
            "password",
            "secret",
            "api_key=",
            "password=Sup3rS3cretValue1234",
            "bearer",
            "123e4567-e89b-12d3-a456-426614174000",
            "0123456789abcdef0123456789abcdef01234567",
        ]
    ),
    st.text(alphabet="aB3xY7-_", min_size=32, max_size=60),  # high-entropy ids
)
host = st.one_of(
    st.sampled_from(
        [
            "docs.google.com",
            "www.youtube.com",
            "github.com",
            "learn.microsoft.com",
            "alice@bitbucket.org",
            "a.b:8080",
            "x.io",
        ]
    ),
    st.text(alphabet="abcxyz019-", max_size=10).map(lambda s: f"h{s}.com"),
)
clean_value = st.one_of(
    st.text(alphabet=SEGMENT_CHARS + "=/+:,", max_size=60),
    st.text(alphabet="aB3xY7-_", min_size=32, max_size=60),
)
clean_parameter = st.builds("{}={}".format, st.sampled_from(CLEAN_NAMES), clean_value)


@st.composite
def clean_urls(draw: st.DrawFn) -> str:
    start = draw(st.sampled_from(["https://", "http://", "s3://", "git+ssh://", "www."]))
    path = "/".join(draw(st.lists(segment, max_size=5)))
    url = start + draw(host) + ("/" + path if path else "")
    params = draw(st.lists(clean_parameter, max_size=4))
    if params:
        url += "?" + "&".join(params)
    if draw(st.booleans()):
        url += "#" + draw(
            st.one_of(
                st.sampled_from(["L10-L20", "gid=0", "slide=id.p", "heading=h.1x2y"]),
                clean_parameter,
            )
        )
    return url


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clean_urls(), st.sampled_from(CONTEXTS))
def test_a_url_without_a_credential_place_is_never_reported(url: str, context: str) -> None:
    assume(not TOKEN_PREFIX.search(url))
    assert _SCANNER.scan(context.format(url)) == []


credential_value = st.text(alphabet="abcXYZ0189-_.~%+/=", min_size=16, max_size=80)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    clean_urls(),
    st.sampled_from(CREDENTIAL_NAMES),
    credential_value,
    st.booleans(),
    st.sampled_from(CONTEXTS),
)
def test_a_credential_parameter_is_always_reported_at_its_value(
    url: str, name: str, value: str, in_fragment: bool, context: str
) -> None:
    # Trailing `.` and the like end the sentence, not the value (the table above shows them).
    assume(
        not TOKEN_PREFIX.search(url + value)
        and not is_trivial_value(value)
        and value[-1] not in ".:!?*"
    )
    head, hash_, tail = url.partition("#")
    if in_fragment:
        parameter = ("&" if hash_ else "#") + f"{name}={value}"
        url = url + parameter
    else:
        parameter = ("&" if "?" in head else "?") + f"{name}={value}"
        url = head + parameter + hash_ + tail
    text = context.format(url)
    start = text.index(parameter) + len(parameter) - len(value)
    found = [(m.kind, m.start, m.end) for m in _SCANNER.scan(text)]
    assert (PARAM, start, start + len(value)) in found, (text, found)


# --- Whole pages: clean links, a presigned URL at its signature, messages without values. ------

PRESIGNED = (
    "https://acme-exports.s3.amazonaws.com/exports/orders.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=ASIAY34FZKBOKMUTVV7A%2F20240115%2Fus-east-1%2Fs3%2Faws4_request"
    f"&X-Amz-Date=20240115T101010Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={SIG}"
)
GDOC = f"https://docs.google.com/document/d/{DOC}/edit?usp=sharing"
YOUTUBE = (
    "https://www.youtube.com/watch?v=dQw4w9WgXcQ&list=PLrAXtmErZgOeiKm4sgNOknGvNjby9efdf&index=2"
)
MS = "https://support.microsoft.com/en-us/office/Keyboard-shortcuts-in-Excel-1798d9d5-842a-42b8-9c99-9b7213f0040f"


def test_a_page_with_public_links_checks_clean() -> None:
    page = (
        f'---\nsummary: "Spec in {GDOC}"\ntags: [docs]\n---\n# Links\n\n'
        f"- [the spec]({GDOC})\n- talk: <{YOUTUBE}>\n- {MS}.\n\n| doc | {GDOC} |\n"
    )
    assert kb401(page, _SCANNER) == []
    assert [f.code for f in kb401(page, BeforeScanner())] == ["KB401"] * 5  # before issue 11


def test_a_presigned_url_is_reported_at_its_signature() -> None:
    page = (
        f'---\nsummary: "Export at {PRESIGNED}"\n---\n# Export\n\nDownload [orders]({PRESIGNED}).\n'
    )
    found = kb401(page, _SCANNER)
    body_line = page.splitlines()[5]
    fm_line = page.splitlines()[1]
    assert [(f.line, f.column, f.end_line, f.end_column) for f in found] == [
        (2, fm_line.index(SIG) + 1, 2, fm_line.index(SIG) + len(SIG)),
        (6, body_line.index(SIG) + 1, 6, body_line.index(SIG) + len(SIG)),
    ]
    assert [f.message for f in found] == [
        "'summary' holds a secret (credential in a URL parameter)",
        "body holds a secret (credential in a URL parameter)",
    ]
    for finding in found:
        assert SIG not in finding.message and SIG not in (finding.hint or "")
        assert finding.hint and "URL" in finding.hint


def test_messages_name_the_url_kinds_and_userinfo_keeps_its_hint() -> None:
    page = (
        "---\nsummary: s\n---\npostgres://etl:hunter2@db/x\n"
        "https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/Zq8XyW3vU2tS1rQ0pO9nM8lK\n"
    )
    found = kb401(page, _SCANNER)
    assert [(f.line, f.column, f.message) for f in found] == [
        (4, 1, "body holds a secret (URL with credentials)"),
        (5, 34, "body holds a secret (credential in a webhook URL)"),
    ]
    assert found[0].hint == "remove the value from the page (and rotate it); knowl never prints it"


def test_knowl_check_on_a_project(tmp_path: Path) -> None:
    page_path = "knowledge/global/exports.md"
    project = Project(tmp_path / "p", git=False)
    project.write(
        {
            **SEMANTICS,
            page_path: f"---\nsummary: exports\n---\n# Exports\n\n- {GDOC}\n- {YOUTUBE}\n"
            f"- {PRESIGNED}\n",
        }
    )
    analysis = analyse(
        project.root,
        config_from_mapping({"rules": {"KB202": "off"}}, "test"),
        use_cache=False,
        today=dt.date(2026, 5, 28),
    )
    found = [(d.path, d.code, d.line, d.column) for d in analysis.diagnostics if d.code == "KB401"]
    assert found == [(page_path, "KB401", 8, len("- ") + PRESIGNED.index(SIG) + 1)]
