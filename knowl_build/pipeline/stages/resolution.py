"""The analyse stage: references resolved, git facts gathered, freshness assessed: all the
rules read, worked out once before any rule runs (mkdocs gathers first, then checks)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.core.model import Page
from knowl_build.core.resolve import PageIndex
from knowl_build.history.log import GitHistory
from knowl_build.history.replay import trace
from knowl_build.pipeline.cache import CachePlace
from knowl_build.pipeline.discover import Discovery
from knowl_build.pipeline.linked import link_settings
from knowl_build.pipeline.recheck import Recheck
from knowl_build.pipeline.stages.state import BuildState
from knowl_build.pipeline.stages.values import ParsedProject, Resolved
from knowl_build.rules.context import GitFacts, RuleContext
from knowl_build.rules.freshness import assess
from knowl_build.semantic.layer import SemanticLayer
from knowl_build.support.trust import MachineKey

HISTORY_CACHE = "history.json"


def resolve_project(
    root: Path,
    config: Config,
    discovery: Discovery,
    parsed: ParsedProject,
    caches: CachePlace,
    today: dt.date,
    recheck: Recheck | None = None,
) -> Resolved:
    """The page index (every reference resolvable), the git facts and each page's
    freshness (with `recheck`, of the pages it checks once it knows the git facts: the
    others' findings are reused): the rules' context."""
    index = page_index(root, config, discovery, parsed.pages)
    text_pages = parsed.text_pages
    facts = gather_git_facts(
        root,
        config,
        discovery,
        parsed.layer,
        text_pages,
        caches.file(HISTORY_CACHE),
        caches.key,
    )
    context = RuleContext(
        pages=text_pages,
        index=index,
        layer=parsed.layer,
        config=config,
        today=today,
        git=facts,
    )
    assessed = None
    if recheck is not None and recheck.settle(facts) is not None:
        assessed = recheck.checked(text_pages)
    return Resolved(index, facts, context, assess(context, assessed))


def page_index(root: Path, config: Config, discovery: Discovery, pages: list[Page]) -> PageIndex:
    """Every page and file by the names references resolve by."""
    return PageIndex.build(
        pages,
        discovery.other_files,
        config.layout,
        config.link_resolution,
        link_settings(root, config, discovery),
    )


def analyse(state: BuildState) -> None:
    """The build's analyse stage (`resolve_project`)."""
    discovery = state.inputs.discovery
    state.resolved = resolve_project(
        state.root, state.config, discovery, state.parsed, state.caches, state.today
    )


def gather_git_facts(
    root: Path,
    config: Config,
    discovery: Discovery,
    layer: SemanticLayer,
    pages: list[Page],
    cache: Path | None = None,
    machine: MachineKey | None = None,
) -> GitFacts | None:
    """History and the batched git answers the history rules need (None without git).

    `cache` is the history replay's cache file (None: replay without one), sealed with
    `machine` (default: this machine's key). Git failures do not stop the run: they are in
    `problems` (KB012) and the rules go on without them."""
    if discovery.git is None:
        return None

    reader = GitHistory(discovery.git)
    try:
        facts = GitFacts(
            trace(
                reader,
                config,
                layer,
                discovery.dbt,
                cache=cache,
                machine=machine,
            )
        )
        facts.shallow_depth = reader.depth()
        sources = {p.parsed.fields.source_commit for p in pages if p.parsed.fields.source_commit}
        if sources:
            # A source_commit left out of `reachable` is unknown (KB204 and KB205 stay quiet).
            facts.reachable = reader.reachable_from_head({s for s in sources if s})
            pairs = {
                (full, item.value)
                for p in pages
                if (full := facts.reachable.get(p.parsed.fields.source_commit or "")) is not None
                for item in p.parsed.fields.affected_paths
            }
            facts.changed_paths = reader.head_paths_differ(pairs, discovery.git.toplevel)
    finally:
        reader.close()
    facts.problems = list(reader.problems)
    return facts
