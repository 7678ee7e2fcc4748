"""The URL check (issue 22, item 2): the engine against a server on 127.0.0.1 that the test
starts, the policy that decides what may be asked, the sealed answers cache, and `knowl check
--check-urls` end to end on a real git repository.

No test reaches any other address: a guard refuses every connection to anything but
127.0.0.1, so a policy that let a request through would fail here, not reach the network."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from knowl_build.pipeline.urlcache import URL_SEAL, AnswerCache
from knowl_build.pipeline.urlcheck import MAX_REDIRECTS, Asker, UrlSettings
from knowl_build.pipeline.urlpolicy import (
    CREDENTIALS,
    DOCUMENTATION,
    EXCLUDED,
    NOT_HTTP,
    NOT_PUBLIC,
    Policy,
    documentation_host,
    target,
)
from knowl_build.rules.urls import Answer, describe
from knowl_build.support.trust import Sealer
from tests.url_server import Server

FAST = UrlSettings(
    timeout=0.3, concurrency=4, per_host=1000.0, retries=1, allow_private=True, backoff=0.01
)


@pytest.fixture(autouse=True)
def only_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection a test makes goes to 127.0.0.1, or fails the test."""
    connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            assert address[0] == "127.0.0.1", f"a test tried to connect to {address!r}"
        connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def asker(settings: UrlSettings = FAST) -> Asker:
    return Asker(Policy(allow_private=settings.allow_private), settings)


# --- the engine ---------------------------------------------------------------------------

ENGINE_CASES = [
    ("/ok", Answer(200), False),
    ("/missing", Answer(404), True),
    ("/gone", Answer(410), True),
    ("/login", Answer(401), False),
    ("/flaky", Answer(200, tries=2), False),
    ("/always-500", Answer(503, tries=2), True),
    ("/busy", Answer(200, tries=2), False),
    ("/busy-for-an-hour", Answer(429), False),
    ("/slow", Answer(None, "timeout after 0.3 s", tries=2), True),
    ("/chain/3", Answer(200, redirects=3), False),
    ("/to-file", Answer(302, "redirects to a file: address, not followed"), True),
    ("/to-ftp", Answer(301, "redirects to a ftp: address, not followed"), True),
    ("/to-metadata", Answer(302, "redirects to an address that is not public, not followed"), True),
    ("/loop-a", Answer(308, "is a redirect loop", redirects=1), True),
    ("/forever/0", Answer(302, f"redirects more than {MAX_REDIRECTS} times", MAX_REDIRECTS), True),
    ("/no-head", Answer(200), False),
]


@pytest.mark.parametrize(("path", "expected", "dead"), ENGINE_CASES)
def test_each_answer_of_the_server(server: Server, path: str, expected: Answer, dead: bool) -> None:
    answer = asker().ask(server.base + path)
    assert answer == expected
    assert answer.dead is dead


def test_what_the_server_was_asked(server: Server) -> None:
    engine = asker()
    engine.ask(server.base + "/no-head")
    engine.ask(server.base + "/missing")
    engine.ask(server.base + "/to-file")
    engine.ask(server.base + "/chain/2")
    with server.lock:
        seen = list(server.seen)
    assert seen == [
        ("HEAD", "/no-head"),
        ("GET", "/no-head"),  # HEAD refused: GET decides
        ("HEAD", "/missing"),
        ("GET", "/missing"),  # an error to HEAD is asked again with GET
        ("HEAD", "/to-file"),  # never followed
        ("HEAD", "/chain/2"),
        ("HEAD", "/chain/1"),
        ("HEAD", "/chain/0"),
    ]


def test_a_huge_body_is_never_read(server: Server) -> None:
    started = time.monotonic()
    assert asker().ask(server.base + "/huge") == Answer(200)
    assert time.monotonic() - started < 5
    time.sleep(0.2)
    with server.lock:
        assert server.sent < 64 << 20  # what socket buffers took before the close; not 1 GiB


def test_ask_all_answers_each_url_once_in_order(server: Server) -> None:
    urls = [server.base + p for p in ("/missing", "/ok", "/gone", "/ok")]
    answers, refused = asker().ask_all(urls)
    assert list(answers) == sorted(set(urls))
    assert [a.status for a in answers.values()] == [410, 404, 200]
    assert refused == []
    assert server.paths().count("/ok") == 1


def test_a_host_that_never_answers_is_given_up(server: Server) -> None:
    settings = UrlSettings(timeout=0.2, per_host=1000.0, retries=0, allow_private=True)
    urls = [f"{server.base}/slow?{i}" for i in range(5)]
    answers, _ = asker(settings).ask_all(urls)
    assert [a.problem for a in answers.values()] == ["timeout after 0.2 s"] * 3 + [
        "its host gave none to the 3 URLs asked before it"
    ] * 2
    assert (
        describe(answers[urls[4]]) == "no answer: its host gave none to the 3 URLs asked before it"
    )
    assert server.paths() == ["/slow"] * 3


def test_no_answer_from_a_closed_port() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    answer = asker().ask(f"http://127.0.0.1:{port}/")
    assert answer == Answer(None, "connection refused", tries=2)
    assert describe(answer) == "no answer: connection refused (2 tries)"


def test_loopback_is_refused_without_url_allow_private(server: Server) -> None:
    answers, refused = asker(UrlSettings(allow_private=False)).ask_all([server.base + "/ok"])
    assert (answers, refused) == ({}, [server.base + "/ok"])
    assert server.seen == []


def test_a_name_resolving_to_a_private_address_is_refused(server: Server) -> None:
    """The address is checked after resolution: a public-looking name that resolves to
    loopback (or a decimal IP such as 2130706433) is not asked."""
    policy = Policy(allow_private=False)
    resolver = {"docs.acme-corp.net": ["127.0.0.1"], "2130706433": ["127.0.0.1"]}
    engine = Asker(policy, FAST, resolver=lambda host, port: resolver[host])
    port = server.server_address[1]
    urls = [f"http://docs.acme-corp.net:{port}/ok", f"http://2130706433:{port}/ok"]
    assert engine.ask_all(urls) == ({}, sorted(urls))
    assert server.seen == []


def test_requests_to_one_host_are_paced(server: Server) -> None:
    engine = asker(UrlSettings(timeout=1, per_host=10.0, retries=0, allow_private=True))
    started = time.monotonic()
    engine.ask_all([f"{server.base}/ok?{i}" for i in range(4)])
    assert time.monotonic() - started >= 0.3  # four starts, 0.1 s apart at least
    assert server.paths() == ["/ok"] * 4


# --- the policy -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "private_ok", "public_only"),
    [
        ("93.184.216.34", True, True),
        ("2606:2800:220:1:248:1893:25c8:1946", True, True),
        ("127.0.0.1", True, False),
        ("::1", True, False),
        ("10.1.2.3", True, False),
        ("192.168.0.10", True, False),
        ("172.16.5.4", True, False),
        ("fd12:3456::1", True, False),
        ("100.64.1.1", True, False),
        ("169.254.169.254", False, False),  # cloud metadata: link-local, never
        ("::ffff:169.254.169.254", False, False),
        ("fe80::1", False, False),
        ("fd00:ec2::254", False, False),  # AWS metadata over IPv6
        ("100.100.100.200", False, False),  # Alibaba metadata
        ("0.0.0.0", False, False),
        ("0.1.2.3", False, False),
        ("::", False, False),
        ("224.0.0.1", False, False),
        ("255.255.255.255", False, False),
        ("240.0.0.1", False, False),
    ],
)
def test_which_addresses_may_be_asked(address: str, private_ok: bool, public_only: bool) -> None:
    assert Policy(allow_private=True).address_allowed(address) is private_ok
    assert Policy(allow_private=False).address_allowed(address) is public_only


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://docs.python.org/3/library/", None),
        ("HTTPS://Docs.Python.org/3/#intro", None),
        ("ftp://files.acme.net/a", NOT_HTTP),
        ("https:///nohost", NOT_HTTP),
        ("http://host:99999/", NOT_HTTP),
        ("https://user:hunter2hunter2@git.acme.net/repo", CREDENTIALS),
        ("https://deploy@git.acme.net/repo", CREDENTIALS),
        ("https://api.acme.net/v1?access_token=Zq8tR2vX9mK4pL7nB3cY6wE1", CREDENTIALS),
        ("https://api.acme.net/callback#token=Zq8tR2vX9mK4pL7nB3cY6wE1", CREDENTIALS),
        (
            "https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/abcdefghijklmnopqrstuvwx",
            CREDENTIALS,
        ),
        ("https://example.com/path", DOCUMENTATION),
        ("https://api.example.org/", DOCUMENTATION),
        ("http://db.test/", DOCUMENTATION),
        ("http://localhost:8000/", DOCUMENTATION),
        ("http://printer.local/", DOCUMENTATION),
        ("http://127.0.0.1:8080/", NOT_PUBLIC),
        ("http://[::1]/", NOT_PUBLIC),
        ("http://169.254.169.254/latest/meta-data/", NOT_PUBLIC),
        ("https://status.acme.net/", EXCLUDED),
    ],
)
def test_which_urls_may_be_asked(url: str, why: str | None) -> None:
    policy = Policy(exclude=[r"^https://status\."])
    assert policy.refusal(url) == why


def test_the_metadata_address_is_refused_even_with_private_addresses_allowed() -> None:
    policy = Policy(allow_private=True)
    assert policy.refusal("http://169.254.169.254/latest/meta-data/") == NOT_PUBLIC
    assert policy.refusal("http://127.0.0.1:8080/") is None


def test_a_target_is_the_url_without_its_fragment() -> None:
    found = target("https://Docs.Acme.net:8443/a/b?x=1#part")
    assert found is not None
    assert found == ("https://Docs.Acme.net:8443/a/b?x=1", "https", "docs.acme.net", 8443)
    assert documentation_host("Example.COM.") and not documentation_host("example.company")


# --- messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (Answer(404), "answered 404 Not Found"),
        (Answer(410, redirects=2), "answered 410 Gone after 2 redirects"),
        (Answer(503, tries=3), "answered 503 Service Unavailable (3 tries)"),
        (Answer(599), "answered 599"),
        (Answer(None, "timeout after 10 s", tries=3), "no answer: timeout after 10 s (3 tries)"),
        (
            Answer(302, "redirects to a file: address, not followed"),
            "redirects to a file: address, not followed",
        ),
    ],
)
def test_what_an_answer_says(answer: Answer, text: str) -> None:
    assert describe(answer) == text


# --- the answers cache ------------------------------------------------------------------------


def test_the_cache_keeps_lasting_answers_for_their_age(tmp_path: Any) -> None:
    path = tmp_path / "urls.json"
    sealer = Sealer(b"k" * 32, URL_SEAL)
    cache = AnswerCache(path, sealer, 1.0, now=1000.0)
    cache.put("https://a.acme.net/", Answer(200))
    cache.put("https://b.acme.net/", Answer(404, tries=1))
    cache.put("https://c.acme.net/", Answer(503, tries=3))  # passing: not kept
    cache.put("https://d.acme.net/", Answer(None, "timeout after 1 s"))  # not kept
    cache.put("https://e.acme.net/", Answer(429))  # not kept
    cache.save()
    assert b"\n" in path.read_bytes()
    later = AnswerCache(path, sealer, 1.0, now=1000.0 + 3599)
    assert later.get("https://a.acme.net/") == Answer(200)
    assert later.get("https://b.acme.net/") == Answer(404)
    assert [later.get(f"https://{h}.acme.net/") for h in "cde"] == [None, None, None]
    assert AnswerCache(path, sealer, 1.0, now=1000.0 + 3600).get("https://a.acme.net/") is None
    # A clock set back does not make an answer young.
    assert AnswerCache(path, sealer, 1.0, now=999.0).get("https://a.acme.net/") is None


def test_a_cache_sealed_by_another_key_or_changed_is_ignored(tmp_path: Any) -> None:
    path = tmp_path / "urls.json"
    sealer = Sealer(b"k" * 32, URL_SEAL)
    cache = AnswerCache(path, sealer, 1.0, now=1000.0)
    cache.put("https://a.acme.net/", Answer(404))
    cache.save()
    other = Sealer(b"o" * 32, URL_SEAL)
    assert AnswerCache(path, other, 1.0, now=1000.0).get("https://a.acme.net/") is None
    path.write_bytes(path.read_bytes().replace(b"404", b"200"))
    assert AnswerCache(path, sealer, 1.0, now=1000.0).get("https://a.acme.net/") is None


@pytest.mark.parametrize(
    "entry",
    [
        [200, None, 0],
        ["200", None, 0, 1.0],
        [200, 3, 0, 1.0],
        [200, None, -1, 1.0],
        [99, None, 0, 1.0],
        [200, None, 0, "x"],
    ],
)
def test_a_malformed_entry_empties_the_cache(tmp_path: Any, entry: list[Any]) -> None:
    import json

    path = tmp_path / "urls.json"
    sealer = Sealer(b"k" * 32, URL_SEAL)
    answers = {"https://a.acme.net/": [200, None, 0, 1000.0], "https://b.acme.net/": entry}
    path.write_bytes(sealer.wrap(json.dumps({"format": 1, "answers": answers}).encode()))
    assert AnswerCache(path, sealer, 1.0, now=1000.0).entries == {}


def test_no_cache_without_a_seal_or_an_age(tmp_path: Any) -> None:
    path = tmp_path / "urls.json"
    for cache in (
        AnswerCache(path, None, 1.0, 0.0),
        AnswerCache(path, Sealer(b"k" * 32, URL_SEAL), 0, 0.0),
    ):
        cache.put("https://a.acme.net/", Answer(200))
        cache.save()
    assert not path.exists()


def test_https_to_a_plain_http_server_is_a_failed_handshake(server: Server) -> None:
    url = server.base.replace("http://", "https://") + "/ok"
    assert asker(FAST).ask(url) == Answer(None, "the TLS handshake failed", tries=2)


# --- knowl check --check-urls, end to end -----------------------------------------------------

TOKEN = "Zq8tR2vX9mK4pL7nB3cY6wE1"
SETTINGS = """\
[links]
url_allow_private = true
url_timeout = 0.3
url_retries = 0
url_per_host = 100
"""


def links_page(base: str) -> str:
    return f"""\
---
summary: Links out.
---
# Links

- [ok]({base}/ok)
- [missing]({base}/missing#part)
- ![gone]({base}/gone)
- <{base}/to-file>
- [slow]({base}/slow)
- [placeholder](https://example.com/nothing)
- [token]({base}/secret?access_token={TOKEN})
- `{base}/in-code`
"""


def url_findings(result: Any) -> list[tuple[str, int, int, str]]:
    import json

    found = json.loads(result.stdout)["diagnostics"]
    return [
        (d["path"], d["line"], d["column"], d["message"]) for d in found if d["code"] == "KB110"
    ]


def run_check(root: Any, *args: str, code: int = 0) -> Any:
    from tests.helpers import invoke

    return invoke(["--repo", str(root), "check", "--format", "json", *args], code=code)


def test_check_urls_reports_dead_links_at_the_link(server: Server, project: Any) -> None:
    base = server.base
    proj = project({"knowl.toml": SETTINGS, "knowledge/global/links.md": links_page(base)})
    result = run_check(proj.root, "--check-urls", code=1)  # KB401: the token
    page = "knowledge/global/links.md"
    assert url_findings(result) == [
        (page, 7, 3, f"{base}/missing#part answered 404 Not Found"),
        (page, 8, 3, f"{base}/gone answered 410 Gone"),
        (page, 9, 3, f"{base}/to-file redirects to a file: address, not followed"),
        (page, 10, 3, f"{base}/slow no answer: timeout after 0.3 s"),
    ]
    # Never asked: the documentation host, the URL with a credential, code.
    assert sorted(set(server.paths())) == ["/gone", "/missing", "/ok", "/slow", "/to-file"]
    assert TOKEN not in result.stdout + result.stderr
    assert "URL check: 5 URLs checked" in result.stderr
    assert "URL check: 1 URL holding credentials were never asked" in result.stderr


def test_urls_are_never_checked_by_default(server: Server, project: Any) -> None:
    proj = project({"knowledge/global/links.md": links_page(server.base)})
    assert url_findings(run_check(proj.root, code=1)) == []
    proj.write({"knowl.toml": SETTINGS + "check_urls = true\n"})
    assert url_findings(run_check(proj.root, "--no-check-urls", code=1)) == []
    assert server.seen == []
    assert len(url_findings(run_check(proj.root, code=1))) == 4  # the configuration's


def test_loopback_needs_url_allow_private(server: Server, project: Any) -> None:
    page = f"---\nsummary: s.\n---\n[missing]({server.base}/missing)\n"
    proj = project({"knowledge/global/a.md": page})
    result = run_check(proj.root, "--check-urls")
    assert url_findings(result) == []
    assert server.seen == []
    assert "1 URL with an address that is not public were not asked" in result.stderr


def test_the_second_run_answers_from_the_cache(server: Server, project: Any) -> None:
    proj = project({"knowl.toml": SETTINGS, "knowledge/global/links.md": links_page(server.base)})
    first = url_findings(run_check(proj.root, "--check-urls", code=1))
    asked = server.paths()
    second = run_check(proj.root, "--check-urls", code=1)
    assert url_findings(second) == first
    # Lasting answers come from the cache; no answer (the timeout) is asked again.
    assert server.paths()[len(asked) :] == ["/slow"]
    assert "answered from the cache (at most 24 h old)" in second.stderr


def test_an_expired_answer_is_asked_again(server: Server, project: Any) -> None:
    import json

    from knowl_build.support.trust import machine_key

    page = f"---\nsummary: s.\n---\n[missing]({server.base}/missing)\n"
    proj = project({"knowl.toml": SETTINGS, "knowledge/global/a.md": page})
    run_check(proj.root, "--check-urls")
    assert server.paths() == ["/missing", "/missing"]  # HEAD, then GET
    path = proj.root / ".knowl" / "cache" / "urls.json"
    sealer = machine_key().sealer(URL_SEAL)
    assert sealer is not None
    data = json.loads(sealer.unwrap(path.read_bytes()) or b"")
    for entry in data["answers"].values():
        entry[3] -= 25 * 3600  # asked 25 hours ago: older than url_cache_hours
    path.write_bytes(sealer.wrap(json.dumps(data).encode()))
    result = run_check(proj.root, "--check-urls")
    assert len(url_findings(result)) == 1
    assert server.paths() == ["/missing"] * 4


def test_a_forged_cache_is_ignored(server: Server, project: Any) -> None:
    import json

    page = f"---\nsummary: s.\n---\n[ok]({server.base}/ok)\n"
    proj = project({"knowl.toml": SETTINGS, "knowledge/global/a.md": page})
    cache = proj.root / ".knowl" / "cache"
    cache.mkdir(parents=True)
    answers = {f"{server.base}/ok": [404, None, 0, time.time()]}
    forged = json.dumps({"format": 1, "answers": answers}).encode()
    (cache / "urls.json").write_bytes(b"0" * 64 + b"\n" + forged)
    assert url_findings(run_check(proj.root, "--check-urls")) == []
    assert server.paths() == ["/ok"]


def test_no_memo_hides_a_url_that_died(server: Server, project: Any) -> None:
    page = f"---\nsummary: s.\n---\n[toggle]({server.base}/toggle)\n"
    proj = project(
        {"knowl.toml": SETTINGS + "url_cache_hours = 0\n", "knowledge/global/a.md": page}
    )
    run_check(proj.root)  # a run without URLs writes the memo
    assert url_findings(run_check(proj.root, "--check-urls")) == []
    server.toggle = 404
    assert url_findings(run_check(proj.root, "--check-urls")) == [
        ("knowledge/global/a.md", 4, 1, f"{server.base}/toggle answered 404 Not Found")
    ]
    server.toggle = 200
    assert url_findings(run_check(proj.root, "--check-urls")) == []


def test_a_suppressed_dead_url_and_its_comment(server: Server, project: Any) -> None:
    page = (
        "---\nsummary: s.\n---\n<!-- knowl: disable-next-line KB110 -->\n"
        f"[missing]({server.base}/missing)\n"
    )
    proj = project({"knowl.toml": SETTINGS, "knowledge/global/a.md": page})
    checked = run_check(proj.root, "--check-urls")
    assert url_findings(checked) == []
    # Without the URL check, the comment is not "unused" (KB011): it may hide a KB110.
    unchecked = run_check(proj.root)
    assert '"KB011"' not in checked.stdout + unchecked.stdout


def test_a_baseline_knows_the_dead_urls_it_had(server: Server, project: Any) -> None:
    page = f"---\nsummary: s.\n---\n[missing]({server.base}/missing)\n"
    proj = project({"knowl.toml": SETTINGS, "knowledge/global/a.md": page})
    proj.write({"knowledge/global/a.md": page + f"\n[gone]({server.base}/gone)\n"})
    result = run_check(proj.root, "--check-urls", "--baseline", "HEAD")
    assert url_findings(result) == [
        ("knowledge/global/a.md", 6, 1, f"{server.base}/gone answered 410 Gone")
    ]


def test_links_exclude_skips_urls_too(server: Server, project: Any) -> None:
    page = f"---\nsummary: s.\n---\n[missing]({server.base}/missing)\n[gone]({server.base}/gone)\n"
    settings = SETTINGS + "exclude = ['/missing$']\n"
    proj = project({"knowl.toml": settings, "knowledge/global/a.md": page})
    result = run_check(proj.root, "--check-urls")
    assert url_findings(result) == [
        ("knowledge/global/a.md", 5, 1, f"{server.base}/gone answered 410 Gone")
    ]
    assert server.paths() == ["/gone", "/gone"]
