"""`knowl check`: validate everything and write nothing but the caches, with a memo of the
last run so an unchanged tree costs little more than reading and hashing its files."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.pipeline import memos
from knowl_build.pipeline.cache import cache_place
from knowl_build.pipeline.discover import shown_path
from knowl_build.pipeline.inputs import read_inputs
from knowl_build.pipeline.stats import stat_cache
from knowl_build.support import clock, process
from knowl_build.support.trust import Sealer

# 3: dbt fingerprints cover what a definition computes; drift names its change; 4: only real
# comments are suppressions (a memo may hold the findings that one that is not hid); 5:
# Markdown links are checked, and the files outside the knowledge folder they name are noted
MEMO_FORMAT = 5


@dataclass(frozen=True, slots=True)
class CheckResult:
    diagnostics: list[Diagnostic]
    page_count: int
    semantic_file_count: int
    knowledge_exists: bool
    changed: set[str] | None  # with --changed-only: the files findings were limited to
    notices: list[str] = field(default_factory=list)  # one line each, for stderr


MEMO_CACHE = "check.json"
MEMO_SEAL = "check-memo"


def _save_memo(
    path: Path,
    key: str,
    result: CheckResult,
    outside: dict[str, str | None],
    sealer: Sealer,
    linked: dict[str, str],
) -> None:
    if any(d.code == "KB012" for d in result.diagnostics):
        return  # git could not read the history: read it again next time (it may be repaired)
    memo = {
        "format": MEMO_FORMAT,
        "key": key,
        "diagnostics": [{**d.to_json(), "subject": d.subject} for d in result.diagnostics],
        "pages": result.page_count,
        "semantic_files": result.semantic_file_count,
    }
    memos.save(path, memo, outside, linked, sealer)


@process.held()  # no cyclic collection while the run allocates
def check(
    root: Path,
    config: Config,
    *,
    changed_only: bool = False,
    use_cache: bool = True,
    today: dt.date | None = None,
    check_urls: bool = False,
) -> CheckResult:
    """`knowl check`: validate everything, write nothing but the caches (and those only when
    the project can be written: a read-only tree is checked without them, with a notice).

    Validation always covers the whole project; `changed_only` filters what is reported.
    `check_urls` asks the pages' http(s) link targets (KB110); such a run neither uses nor
    writes the memo, whose findings would hide a URL that died since (the answers cache
    has an age limit of its own)."""
    today = today or clock.today()
    caches = cache_place(root)
    notices = list(caches.notices)
    sealer = caches.sealer(MEMO_SEAL)
    remember = use_cache and sealer is not None and not check_urls
    memo_file = caches.file(MEMO_CACHE) if remember else None
    inputs = read_inputs(root, config, stat_cache(caches, root) if use_cache else None)
    key = inputs.fingerprint(config, today)
    git = inputs.discovery.git
    toplevel = git.toplevel if git is not None else None
    memo = None
    if memo_file is not None and sealer is not None:
        memo = memos.load(memo_file, MEMO_FORMAT, "key", key, toplevel, root, sealer)
    if memo is not None:
        result = CheckResult(
            [Diagnostic.from_json(d) for d in memo["diagnostics"]],
            memo["pages"],
            memo["semantic_files"],
            inputs.discovery.knowledge_exists,
            None,
            notices,
        )
    else:
        # The analysis, the rules: loaded when the memo does not answer (start-up time of
        # `knowl check` on an unchanged tree).
        from knowl_build.pipeline.analysis import analyse
        from knowl_build.pipeline.recheck import load_ledger

        rest = inputs.fingerprint(config, today, pages=False) if remember else None
        ledger = load_ledger(caches, rest, toplevel, root) if rest is not None else None
        analysis = analyse(
            root,
            config,
            use_cache=use_cache,
            today=today,
            inputs=inputs,
            caches=caches,
            check_urls=check_urls,
            ledger=ledger,
            rest=rest,
        )
        notices.extend(analysis.notices)
        result = CheckResult(
            analysis.diagnostics,
            len(analysis.pages),
            len(analysis.layer.files),
            inputs.discovery.knowledge_exists,
            None,
            notices,
        )
        if memo_file is not None and sealer is not None:
            outside = memos.affected_outside(analysis.pages, toplevel)
            linked = analysis.linked
            if inputs.changed:  # a page read after the key was taken was not what it said
                key = inputs.fingerprint(config, today)
            if not analysis.volatile:
                _save_memo(memo_file, key, result, outside, sealer, linked)
            analysis.keep_ledger(caches, toplevel)
    if changed_only and git is not None:
        changed = git.changed_files()
        if changed is not None:
            # Findings show a name that is not UTF-8 escaped; git's list has the raw bytes.
            shown = {shown_path(path) for path in changed}
            kept = [d for d in result.diagnostics if d.path in shown]
            return CheckResult(
                kept,
                result.page_count,
                result.semantic_file_count,
                result.knowledge_exists,
                changed,
                notices,
            )
    return result
