"""The answers of the URL check: `urls.json` in the caches' folder, one entry per request URL
holding its status, its redirect count and when it was asked. Nothing else: no body, no
header, no redirect target.

An answer older than `[links] url_cache_hours` (or one from the future: a clock set back) is
asked again. Only lasting answers are kept (`Answer.lasting`); no answer, a 5xx and a 429 are
asked again on the next run. Ages are measured on the wall clock, not SOURCE_DATE_EPOCH: that
pins what a build says, not how old a cached answer is.

The file is sealed with the machine's key (`trust`), as the other caches are: one committed
with the project, or written by anyone else, is ignored, so a page cannot make a dead link
look alive, or a live one dead.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any

from knowl_build.rules.urls import Answer
from knowl_build.support.files import atomic_write
from knowl_build.support.trust import Sealer, read_sealed

URL_CACHE = "urls.json"
URL_SEAL = "url-answers"
FORMAT = 1
MAX_ENTRIES = 100_000  # past this, the oldest answers are dropped when the cache is saved
MAX_URL = 4096  # characters of a URL kept (a longer one is asked every time)


class AnswerCache:
    """The answers of earlier runs, fresh ones only; `put` and `save` keep this run's."""

    def __init__(
        self, path: Path | None, sealer: Sealer | None, max_age_hours: float, now: float
    ) -> None:
        self.path = path if sealer is not None and max_age_hours > 0 else None
        self.sealer = sealer
        self.max_age = max_age_hours * 3600.0
        self.now = now
        self.entries: dict[str, tuple[Answer, float]] = {}
        self.changed = False
        if self.path is not None:
            self._load()

    def _load(self) -> None:
        assert self.path is not None
        raw = read_sealed(self.path, self.sealer)
        if raw is None:
            return
        try:
            data = json.loads(raw)
            if data.get("format") != FORMAT:
                return
            for url, entry in data["answers"].items():
                answer, when = _entry(entry)
                if self._fresh(when):
                    self.entries[url] = (answer, when)
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            self.entries = {}

    def _fresh(self, when: float) -> bool:
        return 0 <= self.now - when < self.max_age

    def get(self, url: str) -> Answer | None:
        """The answer `url` gave less than the age limit ago, if any."""
        entry = self.entries.get(url)
        return entry[0] if entry is not None else None

    def put(self, url: str, answer: Answer) -> None:
        """Remember `answer` when it is a lasting one."""
        if self.path is None or not answer.lasting or len(url) > MAX_URL:
            return
        self.entries[url] = (answer._replace(tries=1), self.now)
        self.changed = True

    def save(self) -> None:
        """Write the answers (newest first past MAX_ENTRIES); a cache that cannot be written
        costs only time on the next run."""
        if self.path is None or self.sealer is None or not self.changed:
            return
        kept = sorted(self.entries.items(), key=lambda item: (-item[1][1], item[0]))
        answers = {
            url: [answer.status, answer.problem, answer.redirects, round(when, 3)]
            for url, (answer, when) in sorted(kept[:MAX_ENTRIES])
        }
        data = json.dumps({"format": FORMAT, "answers": answers}, separators=(",", ":"))
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, self.sealer.wrap(data.encode()))
        self.changed = False


def _entry(entry: Any) -> tuple[Answer, float]:
    """An entry as written by `save` (TypeError or ValueError for anything else)."""
    status, problem, redirects, when = entry
    if not (isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599):
        raise ValueError("status")
    if problem is not None and not isinstance(problem, str):
        raise TypeError("problem")
    if not isinstance(redirects, int) or isinstance(redirects, bool) or redirects < 0:
        raise ValueError("redirects")
    if not isinstance(when, int | float) or isinstance(when, bool) or not math.isfinite(when):
        raise ValueError("when")
    return Answer(status, problem, redirects), float(when)
