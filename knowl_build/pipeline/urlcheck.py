"""Asking URLs: the only module of knowl that uses the network (`knowl check --check-urls`).

Standard library only: http.client over sockets this module opens itself, in a pool of
threads. Each host's URLs are asked one after another by one worker, `url_concurrency` hosts
at a time, and a pacer spaces the requests to any one host (redirects and retries included)
by `1 / url_per_host` seconds.

One URL: `HEAD`, then `GET` when HEAD answers an error (servers that refuse or mishandle
HEAD), each following at most MAX_REDIRECTS redirects by hand. Before every request, the
target passes the policy (`urlpolicy`): only http and https, and its host resolved here to
addresses that are all allowed; the connection goes to that address (TLS still checks the
certificate for the host name). No body is read: the status line and headers decide, and
the connection is closed (a huge or endless body costs nothing). Every request has a
deadline of `url_timeout` from connecting to the end of the headers, however slowly a server
sends them. A 5xx, a 429 (after its Retry-After, when at most MAX_RETRY_AFTER seconds) and no
answer are retried `url_retries` times, each wait twice the last; after HOST_SILENT URLs of a
host in a row got no answer, its other URLs are not asked.

No proxy is used (`HTTP_PROXY` is ignored): through one, the address policy would check the
proxy, not the target.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import email.utils
import errno
import http.client
import socket
import ssl
import string
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit

from knowl_build import DOCS_URL, __version__
from knowl_build.core.config import Config
from knowl_build.pipeline.urlpolicy import SCHEMES, Policy, Target, has_userinfo, target
from knowl_build.rules.urls import Answer

MAX_REDIRECTS = 5
MAX_RETRY_AFTER = 10.0  # seconds: a longer Retry-After is not waited for
# After this many URLs of one host in a row got no answer, its other URLs are not asked: a
# host that swallows connections (a tarpit) costs three timeouts, not one per link.
HOST_SILENT = 3
REDIRECTS = frozenset({301, 302, 303, 307, 308})
USER_AGENT = f"knowl-build/{__version__} (link check; +{DOCS_URL})"
# The problems of a request that is not made, as `_Stop` carries them.
NOT_PUBLIC = "its host has an address that is not public"
NOT_FOUND = "the host is not found"

Resolve = Callable[[str, int], list[str]]


@dataclass(frozen=True, slots=True)
class UrlSettings:
    """How the check asks: `[links] url_*`, and the first wait between tries (tests shorten
    it)."""

    timeout: float = 10.0
    concurrency: int = 8
    per_host: float = 2.0
    retries: int = 2
    allow_private: bool = False
    backoff: float = 1.0

    @classmethod
    def of(cls, config: Config) -> UrlSettings:
        return cls(
            timeout=config.url_timeout,
            concurrency=config.url_concurrency,
            per_host=config.url_per_host,
            retries=config.url_retries,
            allow_private=config.url_allow_private,
        )


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` has, in the resolver's order (OSError when it has none)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _Stop(Exception):
    """A request that is not made or gets no answer, with what it answered."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class _Pacer:
    """Spaces the requests to each host: one start per `interval` seconds at most."""

    def __init__(self, per_second: float) -> None:
        self.interval = 1.0 / per_second
        self.next: dict[str, float] = {}
        self.lock = threading.Lock()

    def wait(self, host: str) -> None:
        with self.lock:
            now = time.monotonic()
            slot = max(now, self.next.get(host, now))
            self.next[host] = slot + self.interval
        if slot > now:
            time.sleep(slot - now)


class Asker:
    """Asks URLs under a policy and settings; `ask_all` answers many at once."""

    def __init__(
        self,
        policy: Policy,
        settings: UrlSettings,
        resolver: Resolve = resolve,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.policy = policy
        self.settings = settings
        self.resolver = resolver
        self.tls = tls or ssl.create_default_context()
        self.pacer = _Pacer(settings.per_host)

    def ask_all(self, urls: Iterable[str]) -> tuple[dict[str, Answer], list[str]]:
        """The answer of every URL (request URLs, each asked once, one worker per host), and
        the URLs not asked because their host has an address that is not allowed."""
        by_host: dict[str, list[str]] = {}
        for url in sorted(set(urls)):
            found = target(url)
            by_host.setdefault(found.host if found else "", []).append(url)
        answers: dict[str, Answer] = {}
        workers = max(1, min(self.settings.concurrency, len(by_host)))
        if by_host:
            with concurrent.futures.ThreadPoolExecutor(workers, "knowl-url") as pool:
                for done in pool.map(self._ask_group, by_host.values()):
                    answers.update(done)
        refused = sorted(url for url, answer in answers.items() if _refused(answer))
        kept = {url: answer for url, answer in sorted(answers.items()) if not _refused(answer)}
        return kept, refused

    def _ask_group(self, urls: list[str]) -> dict[str, Answer]:
        """One host's URLs, in order, until HOST_SILENT of them in a row get no answer."""
        answers: dict[str, Answer] = {}
        silent = 0
        for url in urls:
            if silent >= HOST_SILENT:
                problem = f"its host gave none to the {HOST_SILENT} URLs asked before it"
                answers[url] = Answer(None, problem, tries=0)
                continue
            answers[url] = answer = self.ask(url)
            silent = silent + 1 if answer.status is None and not _refused(answer) else 0
        return answers

    def ask(self, url: str) -> Answer:
        """What `url` answers, after the retries its answers call for. A URL whose own host
        is refused by the policy answers `Answer(None, NOT_PUBLIC)` (not asked)."""
        tries = 0
        wait = self.settings.backoff
        while True:
            tries += 1
            answer, retry_after = self._once(url)
            if tries > self.settings.retries or not _passing(answer):
                return answer._replace(tries=tries)
            if retry_after is not None and retry_after > MAX_RETRY_AFTER:
                return answer._replace(tries=tries)
            time.sleep(max(wait, retry_after or 0.0))
            wait *= 2

    def _once(self, url: str) -> tuple[Answer, float | None]:
        """One try: HEAD, then GET when HEAD answers an error; and the Retry-After asked."""
        answer, retry_after = self._follow(url, "HEAD")
        status = answer.status
        if answer.problem is None and status is not None and status >= 400 and status != 429:
            answer, retry_after = self._follow(url, "GET")
        return answer, retry_after

    def _follow(self, url: str, method: str) -> tuple[Answer, float | None]:
        """`url` asked with `method`, its redirects followed within the policy."""
        seen = {url}
        current = url
        redirects = previous = 0
        while True:
            found = target(current)
            if found is None:  # the start was checked; a redirect's target is checked below
                return Answer(None, "not an http(s) URL"), None
            try:
                status, location, retry_after = self._request(found, method)
            except _Stop as stop:
                if stop.problem == NOT_PUBLIC and redirects:
                    problem = "redirects to an address that is not public, not followed"
                    return Answer(previous, problem, redirects - 1), None
                return Answer(None, stop.problem, redirects), None
            if status not in REDIRECTS or location is None:
                return Answer(status, None, redirects), retry_after
            following = _redirect_target(current, location, redirects)
            if following.startswith(" "):  # a problem, not a URL
                return Answer(status, following.strip(), redirects), None
            if following in seen:
                return Answer(status, "is a redirect loop", redirects), None
            previous = status
            seen.add(following)
            current = following
            redirects += 1

    def _request(self, found: Target, method: str) -> tuple[int, str | None, float | None]:
        """One request: (status, Location, Retry-After in seconds); _Stop when the address is
        refused or no answer comes."""
        timeout = self.settings.timeout
        try:
            addresses = self.resolver(found.host, found.port)
        except (OSError, UnicodeError):
            raise _Stop(NOT_FOUND) from None
        if not addresses:
            raise _Stop(NOT_FOUND)
        if not all(self.policy.address_allowed(address) for address in addresses):
            raise _Stop(NOT_PUBLIC)
        self.pacer.wait(found.host)
        conn: http.client.HTTPConnection
        if found.scheme == "https":
            conn = _TlsConnection(found.host, found.port, addresses, timeout, self.tls)
        else:
            conn = _Connection(found.host, found.port, addresses, timeout)
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            conn.abort()

        watchdog = threading.Timer(timeout, expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            conn.connect()
            if expired.is_set():  # the deadline passed while connecting
                raise TimeoutError
            conn.putrequest(method, _request_path(found.url), skip_accept_encoding=True)
            conn.putheader("User-Agent", USER_AGENT)
            conn.putheader("Accept", "*/*")
            conn.putheader("Connection", "close")
            conn.endheaders()
            response = conn.getresponse()
            status = response.status
            location = response.getheader("Location")
            retry_after = _retry_after(response.getheader("Retry-After"))
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise _Stop(_no_answer(exc, expired.is_set(), timeout)) from None
        finally:
            watchdog.cancel()
            conn.abort()  # no body is read: whatever a server sends after the headers is not
        return status, location, retry_after


class _Connection(http.client.HTTPConnection):
    """HTTP to the addresses the policy allowed, not to whatever the name resolves to next."""

    def __init__(self, host: str, port: int, addresses: list[str], timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.addresses = addresses

    def connect(self) -> None:
        self.sock = _connect(self.addresses, self.port, self.timeout)

    def abort(self) -> None:
        """Stop the connection from any thread: a blocked read returns at once."""
        sock = self.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()


class _TlsConnection(_Connection):
    default_port = http.client.HTTPS_PORT

    def __init__(
        self, host: str, port: int, addresses: list[str], timeout: float, tls: ssl.SSLContext
    ) -> None:
        super().__init__(host, port, addresses, timeout)
        self.tls = tls

    def connect(self) -> None:
        raw = _connect(self.addresses, self.port, self.timeout)
        try:
            self.sock = self.tls.wrap_socket(raw, server_hostname=self.host)
        except BaseException:
            raw.close()
            raise


def _connect(addresses: list[str], port: int, timeout: float | None) -> socket.socket:
    """A connection to the first of `addresses` that takes one."""
    problem: OSError = OSError(errno.EHOSTUNREACH, "no address")
    for address in addresses:
        try:
            return socket.create_connection((address, port), timeout)
        except OSError as exc:
            problem = exc
    raise problem


def _refused(answer: Answer) -> bool:
    """An answer of a URL that was not asked: its own host is not allowed."""
    return answer.status is None and answer.problem == NOT_PUBLIC and not answer.redirects


def _passing(answer: Answer) -> bool:
    """Whether another try may answer otherwise: no answer, a 5xx, a 429."""
    if answer.status is None:
        return answer.problem not in (NOT_PUBLIC, "not an http(s) URL")
    return answer.problem is None and (answer.status >= 500 or answer.status == 429)


def _redirect_target(current: str, location: str, redirects: int) -> str:
    """The URL a redirect leads to (no fragment), or, after a space, why it is not followed."""
    if redirects >= MAX_REDIRECTS:
        return f" redirects more than {MAX_REDIRECTS} times"
    try:
        following = urljoin(current, location.strip())
        scheme = urlsplit(following).scheme.lower()
    except ValueError:
        return " redirects to an address that is not a URL"
    if scheme not in SCHEMES:
        named = f"a {scheme}: address" if scheme.isascii() and scheme.isalnum() else "no URL"
        return f" redirects to {named}, not followed"
    if has_userinfo(following):
        return " redirects to an address with credentials, not followed"
    if target(following) is None:
        return " redirects to an address that is not a URL"
    return following.split("#", 1)[0]


# Everything printable in ASCII stays as written; spaces, controls and the rest are encoded.
_SAFE = string.punctuation


def _request_path(url: str) -> str:
    """The path and query to send, percent-encoding what HTTP cannot carry as it is."""
    parts = urlsplit(url)
    path = parts.path or "/"
    return quote(path + ("?" + parts.query if parts.query else ""), safe=_SAFE)


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (a number or an HTTP date); None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if seconds == seconds else None


def _no_answer(exc: BaseException, expired: bool, timeout: float) -> str:
    """Why no answer came, in knowl's words (never a server's)."""
    if expired or isinstance(exc, TimeoutError | socket.timeout):
        return f"timeout after {timeout:g} s"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return "its TLS certificate is not valid for the host"
    if isinstance(exc, ssl.SSLError):
        return "the TLS handshake failed"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError | http.client.RemoteDisconnected):
        return "the connection was closed before an answer"
    if isinstance(exc, http.client.HTTPException):
        return "not an HTTP answer"
    code = exc.errno if isinstance(exc, OSError) else None
    if code is not None and code in errno.errorcode:
        return f"network error ({errno.errorcode[code]})"
    return "network error"
