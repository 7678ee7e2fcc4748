"""Analysis: the whole project read, parsed, resolved and checked by every rule.

`analyse()` runs the stages `knowl check`, the writes and the language server share with
`knowl build` (`pipeline.stages`): parse (the semantic layer, the pages through the parse
cache), analyse (references, git facts, freshness), check (the rules, then severities and
suppressions)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.pipeline.cache import CachePlace, ParseCache, cache_place
from knowl_build.pipeline.inputs import Inputs, read_inputs
from knowl_build.pipeline.recheck import Ledger, Recheck
from knowl_build.pipeline.stages import findings, parsing, resolution
from knowl_build.pipeline.stages.findings import MAX_HISTORY_PROBLEMS as MAX_HISTORY_PROBLEMS
from knowl_build.pipeline.stages.findings import NO_GIT_PATH as NO_GIT_PATH
from knowl_build.pipeline.stages.findings import apply_severities as apply_severities
from knowl_build.pipeline.stages.findings import history_findings as history_findings
from knowl_build.pipeline.stages.findings import summarize_counts as summarize_counts
from knowl_build.pipeline.stages.parsing import load_layer as load_layer
from knowl_build.pipeline.stages.resolution import HISTORY_CACHE as HISTORY_CACHE
from knowl_build.pipeline.stages.resolution import gather_git_facts as gather_git_facts
from knowl_build.pipeline.stages.values import Analysis as Analysis
from knowl_build.pipeline.stages.values import Parsed, ParsedProject, Resolved
from knowl_build.support import clock, process


@process.held()  # no cyclic collection while the run allocates
def analyse(
    root: Path,
    config: Config,
    *,
    use_cache: bool = True,
    today: dt.date | None = None,
    inputs: Inputs | None = None,
    caches: CachePlace | None = None,
    parsed: Parsed | None = None,
    check_urls: bool = False,
    ledger: Ledger | None = None,
    rest: str | None = None,
    parse_cache: ParseCache | None = None,
) -> Analysis:
    """Validate the whole project: every file is read, every reference resolved.

    `caches` says where the caches live (default: `.knowl/cache/` when the project can be
    written, else none); `use_cache=False` parses every page again (the history replay
    still continues from its cache). `parsed` is called with the semantic layer and the
    placed pages, batch by batch in path order, as they are parsed. `check_urls` asks the
    pages' http(s) link targets (KB110): the only use of the network, which only `knowl
    check --check-urls` makes.

    With `rest` (`Inputs.fingerprint(..., pages=False)`), the analysis leaves a ledger
    (`Analysis.ledger`); with a `ledger` of that `rest` too, only the pages an edit can
    change since are checked again by the per-page rules (`pipeline.recheck`). A caller that
    analyses again and again (the language server) keeps the ledger and a resident
    `parse_cache` between runs."""
    inputs = inputs or read_inputs(root, config)
    caches = caches if caches is not None else cache_place(root)
    project = parsing.parse_project(
        config, inputs, caches, use_cache=use_cache, parsed=parsed, cache=parse_cache
    )
    today = today or clock.today()
    _, analysis = resolve_and_check(
        root,
        config,
        inputs,
        project,
        caches,
        today,
        ledger=ledger,
        rest=rest,
        use_cache=use_cache,
        check_urls=check_urls,
    )
    return analysis


def resolve_and_check(
    root: Path,
    config: Config,
    inputs: Inputs,
    project: ParsedProject,
    caches: CachePlace,
    today: dt.date,
    *,
    ledger: Ledger | None = None,
    rest: str | None = None,
    use_cache: bool = True,
    check_urls: bool = False,
) -> tuple[Resolved, Analysis]:
    """The analyse and check stages over the parsed project (`analyse`'s `ledger` and `rest`):
    the rules' context and the analysis, whose `ledger` is this run's. A run whose reused
    hints may not be a whole run's (`Recheck.sound`) is made again checking every page."""
    discovery = inputs.discovery
    digests = {path: digest for path, (_, digest) in inputs.pages.items()}
    previous = ledger if rest is not None and ledger is not None and ledger.rest == rest else None
    while True:
        recheck = None if rest is None else Recheck(rest, project.pages, digests, previous)
        resolved = resolution.resolve_project(
            root, config, discovery, project, caches, today, recheck
        )
        analysis = findings.check_project(
            root,
            config,
            discovery,
            project,
            resolved,
            caches,
            use_cache=use_cache,
            check_urls=check_urls,
            recheck=recheck,
        )
        if recheck is None or recheck.sound or recheck.previous is None:
            break
        previous = None  # the reused hints may not be a whole run's: check every page
    analysis.ledger = recheck.ledger if recheck is not None else None
    return resolved, analysis
