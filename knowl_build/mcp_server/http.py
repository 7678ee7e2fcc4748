"""`knowl mcp --http`: the SDK's Streamable HTTP transport (at `/mcp`) behind a gate.

The gate answers before the SDK sees a request:

- on a loopback address, a `Host` that is not a loopback name (or the address given) is 421:
  a page a browser loaded from another name cannot reach the server by rebinding that name;
- an `Origin` whose host is not the bound host or a loopback name is 403 (no `Origin`, as
  from every non-browser client, passes);
- with `--tokens`, a request without `Authorization: Bearer <token>` naming a known token is
  401. The token decides who the request answers as (its user, left in the request's scope
  for the server); a tool's `user` argument may only repeat it.

Any address that is not loopback needs `--tokens`. The tokens file holds one token per line,
`<token> <user>` (blank lines and `#` comments aside); a token is at least 32 characters of
the bearer-token alphabet (RFC 6750: letters, digits, `-._~+/`, then `=`s), each names one
user, a user may have several (rotation). The file must be readable by its owner only
(POSIX), as ssh asks of a private key. Tokens are never logged: a refusal names the
client's address and why, and the tokens are held as their SHA-256 digests.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import logging
import os
import re
import socket
import stat
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from knowl_build.core.errors import UsageError
from knowl_build.core.names import valid_user
from knowl_build.mcp_server.session import TOKEN_USER_KEY
from knowl_build.mcp_server.text import one_line

DEFAULT_HOST = "127.0.0.1"
PATH = "/mcp"
MIN_TOKEN_CHARS = 32
MAX_TOKENS_FILE = 1 << 20  # bytes
TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
GRACEFUL_SECONDS = 3  # open streams a stop waits for

_log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


# --- the address ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int


def parse_address(text: str) -> Address:
    """`--http`'s value: `PORT`, `:PORT` (both on 127.0.0.1), `HOST:PORT` or `[IPV6]:PORT`.
    Port 0 asks the system for a free port (the line the server prints names it)."""
    value = text.strip()
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise UsageError(f"--http {one_line(text)!r}: an IPv6 address goes in brackets: [::1]:8000")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(
            f"--http {one_line(text)!r}: give PORT, :PORT or HOST:PORT, the port from 0 to 65535"
        )
    return Address(host or DEFAULT_HOST, int(port))


def _resolved(address: Address) -> list[tuple[int, tuple[Any, ...]]]:
    try:
        found = socket.getaddrinfo(
            address.host, address.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (socket.gaierror, UnicodeError) as exc:
        raise UsageError(f"--http: cannot resolve {one_line(address.host)!r} ({exc})") from None
    return [(family, sockaddr) for family, _type, _proto, _name, sockaddr in found]


def is_loopback(address: Address) -> bool:
    """Whether every address the host resolves to is a loopback one."""
    return all(
        ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0]).is_loopback
        for _family, sockaddr in _resolved(address)
    )


def check_exposure(address: Address, tokens: Tokens | None) -> bool:
    """Whether the address is loopback; one that is not needs tokens (exit 2 without)."""
    loopback = is_loopback(address)
    if not loopback and tokens is None:
        raise UsageError(
            f"--http {one_line(address.host)}: not a loopback address, so anyone on the network "
            "could read: give --tokens FILE (or serve on 127.0.0.1)"
        )
    return loopback


def listen(address: Address) -> socket.socket:
    """A socket bound to the address and listening (an error is one line, exit 2)."""
    family, sockaddr = _resolved(address)[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"--http {one_line(address.host)}:{address.port}: cannot listen ({exc.strerror})"
        ) from None
    sock.set_inheritable(True)
    return sock


# --- the tokens ----------------------------------------------------------------------------------


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Tokens:
    """The tokens file as SHA-256 digests of the tokens, each to its user."""

    users: dict[str, str]

    def user(self, token: str) -> str | None:
        return self.users.get(_digest(token))


def _check_mode(path: Path) -> None:
    if os.name != "posix":
        return
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UsageError(
            f"--tokens {path}: other users may read or change it (mode "
            f"{stat.filemode(mode)}): chmod 600 {path}"
        )


def read_tokens(path: Path) -> Tokens:
    """The tokens file, checked whole: the first problem stops the server (exit 2), named by
    file and line, never quoting a token."""
    try:
        if not path.is_file():
            raise UsageError(f"--tokens {path}: not a file")
        _check_mode(path)
        data = path.read_bytes()[: MAX_TOKENS_FILE + 1]
    except OSError as exc:
        raise UsageError(f"--tokens {path}: cannot be read ({exc.strerror})") from None
    if len(data) > MAX_TOKENS_FILE:
        raise UsageError(f"--tokens {path}: larger than {MAX_TOKENS_FILE} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"--tokens {path}: not UTF-8 text") from None
    users: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"--tokens {path}:{number}"
        fields = line.split()
        if len(fields) != 2:
            raise UsageError(f"{where}: a line is `<token> <user>`")
        token, user = fields
        if not TOKEN.fullmatch(token):
            raise UsageError(f"{where}: the token holds characters a bearer token cannot")
        if len(token) < MIN_TOKEN_CHARS:
            raise UsageError(
                f"{where}: the token is {len(token)} characters, fewer than {MIN_TOKEN_CHARS} "
                "(make one with: openssl rand -hex 32)"
            )
        digest = _digest(token)
        if digest in users:
            raise UsageError(f"{where}: the token is on an earlier line too")
        users[digest] = valid_user(user, f"{where}: the user") or ""
    if not users:
        raise UsageError(f"--tokens {path}: no token in it")
    return Tokens(users)


# --- the gate ------------------------------------------------------------------------------------


def _host_of(value: str) -> str | None:
    """The host of a `Host` header (`name[:port]`, `[v6][:port]`), lower case."""
    try:
        host = urlsplit(f"//{value}").hostname
    except ValueError:
        return None
    return host.lower() if host else None


class Gate:
    """The checks above, then the SDK's app with the token's user in the request's scope."""

    def __init__(self, app: ASGIApp, *, host: str, loopback: bool, tokens: Tokens | None):
        self.app = app
        self.hosts = LOOPBACK_NAMES | {host.lower()}
        self.loopback = loopback
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # the SDK's session manager starts and stops
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a websocket: the transport has none, and no gate
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        headers: dict[str, list[str]] = {}
        for key, value in scope.get("headers", []):
            headers.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
        refused = self._refusal(headers)
        if isinstance(refused, tuple):
            status, why = refused
            client = scope.get("client") or ("?", 0)
            _log.warning("HTTP %s refused for %s: %s", status, client[0], why)
            await _answer(send, status, why)
            return
        await self.app({**scope, TOKEN_USER_KEY: refused}, receive, send)

    def _refusal(self, headers: dict[str, list[str]]) -> tuple[int, str] | str | None:
        """(status, why) to refuse; else the token's user (None without tokens)."""
        if self.loopback:
            hosts = headers.get("host", [])
            if len(hosts) != 1 or _host_of(hosts[0]) not in self.hosts:
                return 421, "the Host header does not name this server"
        for origin in headers.get("origin", []):
            try:
                found = urlsplit(origin).hostname
            except ValueError:
                found = None
            if found is None or found.lower() not in self.hosts:
                return 403, "the Origin header is not this server's"
        if self.tokens is None:
            return None
        given = headers.get("authorization", [])
        scheme, _, token = given[0].partition(" ") if len(given) == 1 else ("", "", "")
        user = self.tokens.user(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            return 401, "no known bearer token"
        return user


async def _answer(send: Send, status: int, why: str) -> None:
    body = json.dumps({"error": why}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="knowl", error="invalid_token"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# --- serving -------------------------------------------------------------------------------------


def serve(server: Any, address: Address, tokens: Tokens | None) -> None:
    """Serve `server` (the SDK's MCPServer) at http://ADDRESS/mcp until stopped."""
    # Start-up time: uvicorn and the SDK's transport settings load only to serve HTTP.
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    loopback = check_exposure(address, tokens)
    sock = listen(address)
    # The gate checks Host and Origin, once, for every address: the SDK's own check is off.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    # Each answer one JSON body rather than an event stream: no tool sends anything before
    # its answer, and 10 concurrent clients get twice the calls answered (mcp_http_bench).
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        transport_security=security,
        host=address.host,
        json_response=True,
    )
    gate = Gate(app, host=address.host, loopback=loopback, tokens=tokens)
    config = uvicorn.Config(
        gate,
        log_config=None,  # the one-line log (`logs`), not uvicorn's own
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
        server_header=False,
    )
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    who = f"{len(set(tokens.users.values()))} user(s) by token" if tokens else "no tokens"
    writes = "writes allowed" if server.session.allow_writes else "read-only"
    sys.stderr.write(f"knowl mcp: serving http://{shown}:{port}{PATH} ({who}, {writes})\n")
    sys.stderr.flush()
    with contextlib.closing(sock):
        uvicorn.Server(config).run(sockets=[sock])
