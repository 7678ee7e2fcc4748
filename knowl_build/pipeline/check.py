"""`knowl check`: validate everything and write nothing but the caches, with a memo of the
last run so an unchanged tree costs little more than reading and hashing its files."""

from __future__ import annotations

import contextlib
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.history.objects import git_blob_id
from knowl_build.pipeline.analysis import analyse
from knowl_build.pipeline.cache import cache_place
from knowl_build.pipeline.discover import shown_path
from knowl_build.pipeline.inputs import read_inputs
from knowl_build.pipeline.linked import answers
from knowl_build.pipeline.recheck import LEDGER_FORMAT, Ledger
from knowl_build.pipeline.stats import stat_cache
from knowl_build.support import clock, process
from knowl_build.support.files import atomic_write
from knowl_build.support.trust import Sealer, read_sealed

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
# What the per-page rules found and read, page by page (`pipeline.recheck`): when the memo
# does not apply, the pages an edit cannot change keep their findings from it.
LEDGER_CACHE = "check-ledger.json"


def _outside_files(toplevel: Path | None, paths: set[str]) -> dict[str, str | None]:
    """Blob ids of files outside the inputs that findings depend on (KB204's affected paths)."""

    state: dict[str, str | None] = {}
    for path in sorted(paths):
        try:
            state[path] = git_blob_id((toplevel or Path(".")).joinpath(path).read_bytes())
        except OSError:
            state[path] = None
    return state


# The memo is sealed with the machine's key: a memo this machine did not write (one committed
# with the project, whose key anyone can compute) could say that any tree is clean.
MEMO_SEAL = "check-memo"
LEDGER_SEAL = "check-ledger"


def _load_memo(
    path: Path,
    key: str,
    toplevel: Path | None,
    sealer: Sealer,
    root: Path,
    key_name: str = "key",
    form: int = MEMO_FORMAT,
) -> dict[str, Any] | None:
    """The memo (or the ledger's file: `key_name` "rest") written for `key`, while the files
    outside the inputs that it depends on are as they were."""
    raw = read_sealed(path, sealer)
    if raw is None:
        return None
    try:
        memo = msgspec.json.decode(raw)
        if memo.get("format") != form or memo.get(key_name) != key:
            return None
        outside = memo["outside"]
        if _outside_files(toplevel, set(outside)) != outside:
            return None
        # What Markdown links' files outside the knowledge folder were (no input of the key).
        if answers(root, memo["linked"]) != memo["linked"]:
            return None
        return memo  # type: ignore[no-any-return]
    except (msgspec.DecodeError, AttributeError, KeyError, TypeError, RecursionError):
        return None


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
        "outside": outside,
        "linked": dict(sorted(linked.items())),
    }
    _write(path, memo, sealer)


def _write(path: Path, memo: dict[str, Any], sealer: Sealer) -> None:
    # A cache that cannot be written costs only speed next time: never fail a check for it.
    with contextlib.suppress(OSError):
        atomic_write(path, sealer.wrap(msgspec.json.encode(memo)))


def _load_ledger(
    path: Path, rest: str, toplevel: Path | None, sealer: Sealer, root: Path
) -> Ledger | None:
    held = _load_memo(path, rest, toplevel, sealer, root, "rest", LEDGER_FORMAT)
    return Ledger.from_json(held) if held is not None else None


def _save_ledger(
    path: Path,
    ledger: Ledger,
    outside: dict[str, str | None],
    sealer: Sealer,
    linked: dict[str, str],
) -> None:
    held = {**ledger.to_json(), "outside": outside, "linked": dict(sorted(linked.items()))}
    _write(path, held, sealer)


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
    ledger_sealer = caches.sealer(LEDGER_SEAL) if remember else None
    ledger_file = caches.file(LEDGER_CACHE) if ledger_sealer is not None else None
    inputs = read_inputs(root, config, stat_cache(caches, root) if use_cache else None)
    key = inputs.fingerprint(config, today)
    git = inputs.discovery.git
    toplevel = git.toplevel if git is not None else None
    memo = None
    if memo_file is not None and sealer is not None:
        memo = _load_memo(memo_file, key, toplevel, sealer, root)
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
        rest = ledger = None
        if ledger_file is not None and ledger_sealer is not None:
            rest = inputs.fingerprint(config, today, pages=False)
            ledger = _load_ledger(ledger_file, rest, toplevel, ledger_sealer, root)
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
            affected = {
                item.value
                for page in analysis.pages
                if page.parsed.fields.source_commit
                for item in page.parsed.fields.affected_paths
            }
            outside = _outside_files(toplevel, affected) if git else {}
            linked = analysis.index.link_settings.asked
            if inputs.changed:  # a page read after the key was taken was not what it said
                key = inputs.fingerprint(config, today)
            _save_memo(memo_file, key, result, outside, sealer, linked)
            if analysis.ledger is not None and ledger_file is not None and ledger_sealer:
                _save_ledger(ledger_file, analysis.ledger, outside, ledger_sealer, linked)
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
