"""Which URLs the URL check may ask, and which addresses it may connect to.

Pages are untrusted (a pull request from anyone), and CI runs inside networks: a page must not
make knowl request an internal service or a cloud metadata endpoint (server-side request
forgery), nor send a credential it holds anywhere. So, before any request:

- only `http` and `https`, with a host, and no userinfo (`user@`, `user:password@`);
- no URL in which the secret scanner finds anything (KB401 reports it; it is never asked and
  never printed unredacted);
- no documentation host (RFC 2606 and 6761 names: `example.com`, `.test`, `.invalid`...):
  placeholders, never real targets;
- every address the host resolves to must be public. Loopback, private (RFC 1918, unique
  local IPv6, shared CGNAT space) and other non-global addresses are refused unless
  `[links] url_allow_private = true`; link-local addresses (`169.254.0.0/16`, `fe80::/10`:
  where cloud metadata lives), known metadata addresses, multicast, unspecified and reserved
  ones never. knowl connects to the address it checked, so a second DNS answer cannot
  change it (DNS rebinding), and each redirect's target is checked again.

Standard library only; no network here (resolution is `urlcheck`'s).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import NamedTuple
from urllib.parse import SplitResult, urlsplit

from knowl_build.core.linkpaths import excluded
from knowl_build.secrets.scanner import SecretScanner

SCHEMES = ("http", "https")

# Cloud metadata endpoints outside link-local space: Alibaba (CGNAT space), AWS over IPv6
# (unique local space), both of which url_allow_private would otherwise admit.
METADATA = frozenset(
    {
        ipaddress.ip_address("100.100.100.200"),
        ipaddress.ip_address("fd00:ec2::254"),
    }
)

# Names reserved for documentation and testing (RFC 2606, RFC 6761), and mDNS's `.local`.
DOCUMENTATION_TLDS = frozenset({"example", "invalid", "localhost", "test", "local"})
DOCUMENTATION_DOMAINS = ("example.com", "example.net", "example.org")

# Why a URL is not asked, as notices count them.
NOT_HTTP = "not-http"
CREDENTIALS = "credentials"
DOCUMENTATION = "documentation"
EXCLUDED = "excluded"
NOT_PUBLIC = "not-public"


class Target(NamedTuple):
    """A URL the check may ask: the request URL (no fragment), its scheme, host and port."""

    url: str
    scheme: str
    host: str  # lower case, IPv6 without brackets
    port: int


def target(url: str) -> Target | None:
    """The request target of an http(s) URL (None: not one, or not a valid one)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:  # a bad port, a bad IPv6 literal
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if scheme not in SCHEMES or not host:
        return None
    if port is None:
        port = 443 if scheme == "https" else 80
    request = SplitResult(parts.scheme, parts.netloc, parts.path, parts.query, "").geturl()
    return Target(request, scheme, host, port)


def has_userinfo(url: str) -> bool:
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return "@" in parts.netloc


def documentation_host(host: str) -> bool:
    """A name reserved for examples (`example.com`, `api.example.org`, `db.test`)."""
    name = host.lower().rstrip(".")
    if name.rsplit(".", 1)[-1] in DOCUMENTATION_TLDS:
        return True
    return any(name == d or name.endswith("." + d) for d in DOCUMENTATION_DOMAINS)


class Policy:
    """What the check may ask: the exclusions, the scanner, and whether private addresses
    may be asked."""

    def __init__(
        self,
        exclude: Sequence[str] = (),
        allow_private: bool = False,
        extra_patterns: tuple[str, ...] = (),
    ) -> None:
        self.exclude = tuple(exclude)  # checked by the configuration: none takes exponential time
        self.allow_private = allow_private
        self.scanner = SecretScanner(extra_patterns)

    def refusal(self, url: str) -> str | None:
        """Why `url` is not asked (None: it may be, once its addresses pass `address_allowed`)."""
        if excluded(url, self.exclude):  # as Markdown links are skipped (core/resolve.py)
            return EXCLUDED
        found = target(url)
        if found is None:
            return NOT_HTTP
        # Credentials are looked for in the URL as written, fragment included (`#token=`).
        if has_userinfo(url) or self.scanner.scan(url):
            return CREDENTIALS
        if documentation_host(found.host):
            return DOCUMENTATION
        literal = _literal(found.host)
        if literal is not None and not self.address_allowed(literal):
            return NOT_PUBLIC
        return None

    def address_allowed(self, address: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        """Whether the check may connect to `address` (see the module notes)."""
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
        if isinstance(ip, ipaddress.IPv6Address):
            if ip.scope_id:
                return False
            mapped = ip.ipv4_mapped or ip.sixtofour
            if mapped is not None:
                ip = mapped
        if ip in METADATA or ip.is_link_local or ip.is_multicast or ip.is_unspecified:
            return False
        if isinstance(ip, ipaddress.IPv4Address) and (ip.is_reserved or ip in _THIS_NETWORK):
            return False
        if ip.is_global:
            return True
        return self.allow_private and (ip.is_loopback or ip.is_private or _shared(ip))


_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: not global, not private
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")  # "this host": 0.0.0.0 reaches loopback


def _shared(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED


def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None
