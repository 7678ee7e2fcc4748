"""Analysis: the whole project read, parsed, resolved and checked by every rule.

`analyse()` is the table of contents of the system: inputs, the semantic layer, pages
(through the parse cache), git facts, then the rules, then severities and suppressions."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build import clock, process
from knowl_build.config import Config
from knowl_build.diagnostics import Diagnostic, Finding, summarize
from knowl_build.history.log import GitHistory
from knowl_build.history.records import History
from knowl_build.history.replay import trace
from knowl_build.model import Page, Suppression
from knowl_build.pipeline.cache import CachePlace, ParseCache, cache_place
from knowl_build.pipeline.discover import Discovery
from knowl_build.pipeline.inputs import Inputs, read_inputs
from knowl_build.pipeline.linked import link_settings
from knowl_build.pipeline.pages import parse_cache_key, parse_pages
from knowl_build.pipeline.urls import check_page_urls
from knowl_build.resolve import PageIndex
from knowl_build.rules.context import GitFacts, RuleContext
from knowl_build.rules.freshness import Assessment, assess, check_freshness
from knowl_build.rules.governance import check_governance
from knowl_build.rules.mdlinks import check_markdown_links
from knowl_build.rules.references import check_references
from knowl_build.rules.registry import severity as severity_of
from knowl_build.rules.urls import DEAD_URL
from knowl_build.semantic.layer import SemanticLayer
from knowl_build.semantic.load import load_semantic_layer
from knowl_build.trust import MachineKey

NO_GIT_PATH = "."


@dataclass(slots=True)
class Analysis:
    """Everything one pass over the project found."""

    root: Path
    config: Config
    discovery: Discovery
    layer: SemanticLayer
    pages: list[Page]
    index: PageIndex
    history: History | None = None
    assessments: dict[str, Assessment] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # one line each (the URL check's)


def load_layer(inputs: Inputs) -> SemanticLayer:
    """Canonic files, and the dbt project's model files when one is configured."""
    discovery = inputs.discovery

    def data(path: str) -> bytes:
        raw = inputs.semantics[path][0]
        return raw if raw is not None else b"\x00"

    return load_semantic_layer(
        [(p, data(p)) for p in discovery.semantic_files],
        [(p, data(p)) for p in discovery.dbt_files],
        discovery.dbt,
    )


@process.held()  # no cyclic collection while the run allocates
def analyse(
    root: Path,
    config: Config,
    *,
    use_cache: bool = True,
    today: dt.date | None = None,
    inputs: Inputs | None = None,
    caches: CachePlace | None = None,
    parsed: Callable[[list[Page], SemanticLayer], None] | None = None,
    check_urls: bool = False,
) -> Analysis:
    """Validate the whole project: every file is read, every reference resolved.

    `caches` says where the caches live (default: `.knowl/cache/` when the project can be
    written, else none); `use_cache=False` parses every page again (the history replay
    still continues from its cache). `parsed` is called with the semantic layer and the
    placed pages, batch by batch in path order, as they are parsed (a build indexes them
    meanwhile). `check_urls` asks the pages' http(s) link targets (KB110): the only use of
    the network, which only `knowl check --check-urls` makes."""
    inputs = inputs or read_inputs(root, config)
    discovery = inputs.discovery
    layer = load_layer(inputs)
    caches = caches if caches is not None else cache_place(root)
    cache = ParseCache(
        caches.folder, parse_cache_key(config), enabled=use_cache, machine=caches.key
    )
    pages, page_findings = parse_pages(
        inputs,
        config,
        cache,
        None if parsed is None else (lambda batch: parsed(batch, layer)),
    )
    cache.save()
    index = PageIndex.build(
        pages,
        discovery.other_files,
        config.knowledge_dir,
        config.link_resolution,
        link_settings(root, config, discovery),
    )
    text_pages = [p for p in pages if p.parsed.text_ok]
    facts = gather_git_facts(
        root, config, discovery, layer, text_pages, caches.file(HISTORY_CACHE), caches.key
    )
    context = RuleContext(
        pages=text_pages,
        index=index,
        layer=layer,
        config=config,
        today=today or clock.today(),
        git=facts,
    )
    assessments = assess(context)

    found: list[tuple[str, Finding]] = []
    for table in (discovery.findings, layer.findings, page_findings):
        for path, items in table.items():
            found.extend((path, f) for f in items)
    found.extend(check_references(context))
    found.extend(check_markdown_links(context))
    found.extend(check_governance(context))
    found.extend(check_freshness(context, assessments))
    if discovery.git is None:
        found.append(
            (
                NO_GIT_PATH,
                Finding(
                    "KB009",
                    1,
                    1,
                    "git history is unavailable; history rules are skipped",
                    "run knowl inside a git repository (with git installed) for drift and history",
                ),
            )
        )
    found.extend((NO_GIT_PATH, finding) for finding in history_findings(facts))
    urls = check_page_urls(text_pages, config, caches, use_cache=use_cache) if check_urls else None
    if urls is not None:
        found.extend(urls.findings)

    analysis = Analysis(
        root, config, discovery, layer, pages, index, facts.history if facts else None, assessments
    )
    suppressions = {p.path: p.parsed.suppressions for p in text_pages if p.parsed.suppressions}
    # Without the URL check, a suppression of KB110 cannot be known to hide nothing.
    unchecked = () if check_urls else (DEAD_URL.code,)
    analysis.diagnostics = apply_severities(found, config, suppressions, unchecked)
    analysis.notices = urls.notices if urls is not None else []
    return analysis


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


# Past this many, git's problems are counted in one more finding instead of listed.
MAX_HISTORY_PROBLEMS = 10


def history_findings(facts: GitFacts | None) -> list[Finding]:
    """KB010 for a shallow clone, KB012 for each thing git could not read: at the project
    (path `.`, 1:1), like KB009."""
    if facts is None:
        return []
    found: list[Finding] = []
    if facts.shallow_depth is not None:
        depth = facts.shallow_depth
        available = (
            f"{depth} commit{'' if depth == 1 else 's'} available" if depth else "depth unknown"
        )
        boundary = facts.history.boundary
        if boundary is not None:
            available += f", the oldest {boundary[:12]}"
        found.append(
            Finding(
                "KB010",
                1,
                1,
                f"git history is shallow ({available}): history rules cannot see older "
                'changes; where that matters they say "unknown (shallow history)"',
                "fetch the whole history: fetch-depth: 0 in actions/checkout, or run "
                "git fetch --unshallow",
                subject="shallow history",
            )
        )
    problems = facts.problems
    if len(problems) > MAX_HISTORY_PROBLEMS:
        more = len(problems) - (MAX_HISTORY_PROBLEMS - 1)
        problems = [
            *problems[: MAX_HISTORY_PROBLEMS - 1],
            f"git could not read {more} more objects or commands of the history",
        ]
    for problem in problems:
        found.append(
            Finding(
                "KB012",
                1,
                1,
                problem,
                "repair the repository (git fsck) or fetch what is missing (git fetch); "
                "history findings may be missing until then",
                subject=problem,
            )
        )
    return found


def apply_severities(
    found: list[tuple[str, Finding]],
    config: Config,
    suppressions: dict[str, tuple[Suppression, ...]] | None = None,
    unchecked: tuple[str, ...] = (),
) -> list[Diagnostic]:
    """Findings at their configured severity ([rules], then [rules.per-path]), without those
    an inline comment suppresses; a suppression that hid nothing is KB011, unless it names a
    code in `unchecked` (a check that did not run: it may hide that code's findings)."""
    suppressions = suppressions or {}
    used: set[tuple[str, int]] = set()
    diagnostics = []
    for path, finding in found:
        hiding = suppressions.get(path, ())
        hidden = [i for i, s in enumerate(hiding) if s.covers(finding.code, finding.line)]
        if hidden:
            used.update((path, i) for i in hidden)
            continue
        severity = severity_of(config, finding.code, path)
        if severity != "off":
            diagnostics.append(finding.at(path, severity))
    for path, hiding in suppressions.items():
        severity = severity_of(config, "KB011", path)
        for i, comment in enumerate(hiding):
            if (path, i) in used or severity == "off":
                continue
            if any(code in unchecked for code in comment.codes):
                continue
            codes = " ".join(comment.codes) or "every code"
            span = comment.span
            diagnostics.append(
                Finding(
                    "KB011",
                    span.line,
                    span.column,
                    f"suppression of {codes} hides no finding",
                    "remove the comment (the finding it silenced is gone, or the code or line "
                    "is wrong)",
                    span.end_line,
                    span.end_column,
                    subject=f"suppression of {codes}",
                ).at(path, severity)
            )
    diagnostics.sort()
    return diagnostics


HISTORY_CACHE = "history.json"


def summarize_counts(analysis: Analysis) -> dict[str, int]:

    severities = summarize(analysis.diagnostics)
    freshness = {"fresh": 0, "stale": 0, "needs_review": 0}
    for page in analysis.pages:
        assessment = analysis.assessments.get(page.path)
        if assessment is not None:
            freshness[assessment.value] += 1
    return {
        "pages": sum(1 for p in analysis.pages if p.parsed.text_ok),
        "entities": len(analysis.layer.entities),
        "semantic_files": len(analysis.layer.files),
        "errors": severities["error"],
        "warnings": severities["warning"],
        "info": severities["info"],
        **freshness,
    }
