"""The URL check of `knowl check --check-urls`: the pages' http(s) link targets, each asked
once within the policy and the limits of a run, answered from the sealed answers cache where
it can, as KB110 findings at the links (`rules.urls`) and notices that say what was not asked.

The order of the findings and notices depends only on the pages and the answers, never on
which request finished first."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import Page
from knowl_build.pipeline.cache import CachePlace
from knowl_build.pipeline.urlcache import URL_CACHE, URL_SEAL, AnswerCache
from knowl_build.pipeline.urlpolicy import CREDENTIALS, NOT_PUBLIC, Policy, target
from knowl_build.rules.urls import Answer, dead_url_findings

if TYPE_CHECKING:  # loaded when URLs are checked: http.client and ssl cost every run 15 ms
    from knowl_build.pipeline.urlcheck import Asker


@dataclass(slots=True)
class UrlCheck:
    """KB110 findings by path, and one line per notice, for stderr."""

    findings: list[tuple[str, Finding]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def check_page_urls(
    pages: Sequence[Page],
    config: Config,
    caches: CachePlace,
    *,
    use_cache: bool = True,
    asker: Asker | None = None,
    now: float | None = None,
) -> UrlCheck:
    """Ask every http(s) link target of `pages` that the policy lets through (at most
    `url_max` per run and `url_max_per_host` per host; cached answers do not count).
    `use_cache=False` asks every URL again (and keeps the new answers)."""
    refs = [
        (page.path, ref) for page in sorted(pages, key=lambda p: p.path) for ref in page.parsed.urls
    ]
    if not refs:
        return UrlCheck()
    policy = Policy(config.link_exclude, config.url_allow_private, config.security.extra_patterns)
    if asker is None:
        # Imported here: start-up time (http.client and ssl load only when URLs are checked).
        from knowl_build.pipeline.urlcheck import Asker, UrlSettings

        asker = Asker(policy, UrlSettings.of(config))
    refused: Counter[str] = Counter()
    request_of: dict[str, str] = {}
    for url in sorted({ref.url for _, ref in refs}):
        why = policy.refusal(url)
        found = target(url)
        if why is None and found is not None:
            request_of[url] = found.url
        else:
            refused[why or "not-http"] += 1
    cache = AnswerCache(
        caches.file(URL_CACHE),
        caches.sealer(URL_SEAL),
        config.url_cache_hours,
        time.time() if now is None else now,
    )
    requests = sorted(set(request_of.values()))
    answers: dict[str, Answer] = {}
    for request in requests if use_cache else ():
        answer = cache.get(request)
        if answer is not None:
            answers[request] = answer
    from_cache = len(answers)
    asked, over = _within_limits(
        [r for r in requests if r not in answers], config.url_max, config.url_max_per_host
    )
    got, not_public = asker.ask_all(asked)
    for request, answer in got.items():
        cache.put(request, answer)
    cache.save()
    answers.update(got)
    refused[NOT_PUBLIC] += len(not_public)
    checked = [
        (path, ref.url, ref.span, answers[request_of[ref.url]])
        for path, ref in refs
        if ref.url in request_of and request_of[ref.url] in answers
    ]
    return UrlCheck(
        list(dead_url_findings(checked)),
        _notices(len(answers), from_cache, over, refused, got, config),
    )


def _within_limits(requests: list[str], most: int, per_host: int) -> tuple[list[str], int]:
    """The first requests (in URL order) within the limits of a run, and how many are over."""
    kept: list[str] = []
    hosts: Counter[str] = Counter()
    for request in requests:
        found = target(request)
        host = found.host if found is not None else ""
        if len(kept) >= most or hosts[host] >= per_host:
            continue
        hosts[host] += 1
        kept.append(request)
    return kept, len(requests) - len(kept)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def _notices(
    answered: int,
    from_cache: int,
    over: int,
    refused: Counter[str],
    got: dict[str, Answer],
    config: Config,
) -> list[str]:
    notices = []
    if answered:
        line = f"URL check: {_plural(answered, 'URL')} checked"
        if from_cache:
            line += (
                f", {from_cache} answered from the cache (at most {config.url_cache_hours:g} h old)"
            )
        notices.append(line)
    if got and all(answer.status is None for answer in got.values()):
        notices.append(
            f"URL check: none of the {_plural(len(got), 'URL')} asked answered; "
            "is the network reachable from here?"
        )
    unsure = sum(1 for answer in got.values() if answer.unsure)
    if unsure:
        notices.append(
            f"URL check: {_plural(unsure, 'URL')} answered 401, 403 or 429 (a login, or rate "
            "limiting) and are not reported"
        )
    if over:
        notices.append(
            f"URL check: {_plural(over, 'URL')} over the limits of one run were not asked "
            f"([links] url_max = {config.url_max}, url_max_per_host = {config.url_max_per_host})"
        )
    if refused[NOT_PUBLIC]:
        allow = (
            ""
            if config.url_allow_private
            else "; [links] url_allow_private = true asks loopback and private ones"
        )
        notices.append(
            f"URL check: {_plural(refused[NOT_PUBLIC], 'URL')} with an address that is not "
            f"public were not asked{allow}"
        )
    if refused[CREDENTIALS]:
        notices.append(
            f"URL check: {_plural(refused[CREDENTIALS], 'URL')} holding credentials were never "
            "asked"
        )
    return notices
