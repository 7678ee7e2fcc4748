"""External URLs (KB110): which answers of an http(s) link target are findings, and what they
say. The asking is done by `pipeline.urlcheck`, the only module of knowl that uses the network,
and only with `knowl check --check-urls` (or `[links] check_urls = true`).

An answer says nothing a server chose: the status's standard phrase stands for its reason
phrase, and of a redirect's `Location` only the scheme is named, so no page (through a server
it points at) can put text into a finding.
"""

from __future__ import annotations

import http
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import Span
from knowl_build.rules.rule import Rule

DEAD_URL = Rule(
    code="KB110",
    name="dead-url",
    default="warning",
    summary="an http(s) link answers an error, or nothing (only with --check-urls)",
    doc="""Only with `knowl check --check-urls` or `[links] check_urls = true`; never by
      default and never in `knowl build`. Every `http://` and `https://` target of a Markdown
      link, image or autolink is asked (HEAD, then GET when HEAD is refused; no body is read)
      and is KB110 when it answers 404, 410 or another 4xx (not 401, 403 or 429, which say
      that the page needs a login or that the client is rate limited, not that it is gone), a
      5xx after its retries, nothing at all (a timeout, a refused connection, a host not
      found, a TLS failure), or a redirect that cannot be followed: to another scheme
      (`file:`, `ftp:`; never followed), to an address that is not public, in a loop, or more
      than 5 of them. The finding points at the link and quotes the URL, redacted. Not asked:
      URLs that `[links] exclude` matches, URLs with credentials (userinfo, or a secret that
      KB401 reports), documentation hosts (`example.com`, `.test`, `.invalid`, `.localhost`,
      `.example`), and addresses that are not public (loopback and private ones only with
      `[links] url_allow_private = true`; link-local and cloud metadata addresses never).
      Answers are kept in `.knowl/cache/urls.json` for `[links] url_cache_hours`; timeouts,
      5xx and 429 are asked again on the next run. A link that is only unreachable from CI is
      silenced with `[links] exclude` or a `knowl: disable-next-line KB110` comment.""",
)

RULES: tuple[Rule, ...] = (DEAD_URL,)

# Answers that say the page may well exist, but not to this client.
UNSURE = frozenset({401, 403, 429})
MAX_SHOWN = 200  # characters of a URL quoted in a message


class Answer(NamedTuple):
    """What one URL answered. `status` is the HTTP status of the last request (None: no
    answer came); `problem` says what stopped the check, in knowl's own words (a timeout, a
    redirect not followed), None when the status says it all."""

    status: int | None
    problem: str | None = None
    redirects: int = 0
    tries: int = 1

    @property
    def dead(self) -> bool:
        """Whether the answer is a KB110 finding."""
        if self.status is None or self.problem is not None:
            return True
        return self.status >= 400 and self.status not in UNSURE

    @property
    def unsure(self) -> bool:
        return self.problem is None and self.status in UNSURE

    @property
    def lasting(self) -> bool:
        """Whether the answer may be reused on a later run: an HTTP status other than a 5xx
        or a 429 (those pass, as no answer does)."""
        return self.status is not None and self.status < 500 and self.status != 429


def describe(answer: Answer) -> str:
    """What a URL answered, as a message says it after the URL."""
    if answer.status is None:
        text = f"no answer: {answer.problem or 'unknown error'}"
    elif answer.problem is not None:
        text = answer.problem
    else:
        text = f"answered {answer.status} {phrase(answer.status)}".rstrip()
        if answer.redirects:
            text += f" after {answer.redirects} redirect{'s' * (answer.redirects > 1)}"
    if answer.tries > 1:
        text += f" ({answer.tries} tries)"
    return text


def phrase(status: int) -> str:
    """The standard phrase of an HTTP status ("" for a status HTTP does not define)."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def shown(url: str) -> str:
    """A URL as a message quotes it: cut short when long (redaction happens in Finding)."""
    return url if len(url) <= MAX_SHOWN else url[: MAX_SHOWN - 1] + "…"


def dead_url_findings(
    checked: Iterable[tuple[str, str, Span, Answer]],
) -> Iterator[tuple[str, Finding]]:
    """KB110 for each (path, url as written, span of the link, answer) whose answer is dead,
    in the order given."""
    for path, url, span, answer in checked:
        if not answer.dead:
            continue
        yield (
            path,
            Finding(
                DEAD_URL.code,
                span.line,
                span.column,
                f"{shown(url)} {describe(answer)}",
                "fix or remove the link; one that only this machine cannot reach is skipped "
                "with [links] exclude or a `knowl: disable-next-line KB110` comment",
                span.end_line,
                span.end_column,
                subject=url,
            ),
        )
