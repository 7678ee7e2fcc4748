"""The check stage: every rule over the resolved project, then severities and suppressions;
for a build, the counts, the build's identity and whether its errors refuse it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic, Finding, summarize
from knowl_build.core.model import Suppression
from knowl_build.pipeline.cache import CachePlace
from knowl_build.pipeline.discover import Discovery
from knowl_build.pipeline.recheck import Recheck, load_ledger
from knowl_build.pipeline.stages.state import BuildResult, BuildState
from knowl_build.pipeline.stages.values import Analysis, ParsedProject, Resolved
from knowl_build.pipeline.urls import check_page_urls
from knowl_build.rules.context import GitFacts
from knowl_build.rules.freshness import check_freshness
from knowl_build.rules.governance import check_governance
from knowl_build.rules.mdlinks import check_markdown_links
from knowl_build.rules.references import check_references
from knowl_build.rules.registry import severity as severity_of
from knowl_build.rules.urls import DEAD_URL

NO_GIT_PATH = "."
# Past this many, git's problems are counted in one more finding instead of listed.
MAX_HISTORY_PROBLEMS = 10
NO_GIT = Finding(
    "KB009",
    1,
    1,
    "git history is unavailable; history rules are skipped",
    "run knowl inside a git repository (with git installed) for drift and history",
)


def check_project(
    root: Path,
    config: Config,
    discovery: Discovery,
    parsed: ParsedProject,
    resolved: Resolved,
    caches: CachePlace,
    *,
    use_cache: bool = True,
    check_urls: bool = False,
    recheck: Recheck | None = None,
) -> Analysis:
    """Every finding of the run, at its severity; `check_urls` asks the pages' http(s)
    link targets (KB110): the only use of the network, which only `knowl check
    --check-urls` makes. With `recheck`, the per-page rules run over the pages it checks
    and leave its ledger (`pipeline.recheck`)."""
    context = resolved.context
    found = rule_findings(discovery, parsed, resolved, recheck)
    urls = (
        check_page_urls(context.pages, config, caches, use_cache=use_cache) if check_urls else None
    )
    if urls is not None:
        found.extend(urls.findings)
    facts = resolved.facts
    analysis = Analysis(
        root,
        config,
        discovery,
        parsed.layer,
        parsed.pages,
        resolved.index,
        facts.history if facts else None,
        resolved.assessments,
    )
    suppressions = {p.path: p.parsed.suppressions for p in context.pages if p.parsed.suppressions}
    # Without the URL check, a suppression of KB110 cannot be known to hide nothing.
    unchecked = () if check_urls else (DEAD_URL.code,)
    analysis.diagnostics = apply_severities(found, config, suppressions, unchecked)
    analysis.notices = urls.notices if urls is not None else []
    return analysis


def rule_findings(
    discovery: Discovery,
    parsed: ParsedProject,
    resolved: Resolved,
    recheck: Recheck | None = None,
) -> list[tuple[str, Finding]]:
    """The findings of discovery, of the layer and the pages as parsed, then of each rule,
    each with its file's path (`apply_severities` puts them in order)."""
    found: list[tuple[str, Finding]] = []
    for table in (discovery.findings, parsed.layer.findings, parsed.findings):
        for path, items in table.items():
            found.extend((path, f) for f in items)
    context = resolved.context
    if recheck is None:
        found.extend(check_references(context))
        found.extend(check_markdown_links(context))
        found.extend(check_freshness(context, resolved.assessments))
    else:
        found.extend(recheck.page_findings(context, resolved.assessments))
    if recheck is not None and recheck.governance is not None:
        found.extend(recheck.governance)
    else:
        governance = list(check_governance(context))
        found.extend(governance)
        if recheck is not None:
            recheck.governance = governance
    if recheck is not None:
        recheck.finish(context.hint_budget, context.index.link_settings.asked)
    if discovery.git is None:
        found.append((NO_GIT_PATH, NO_GIT))
    found.extend((NO_GIT_PATH, finding) for finding in history_findings(resolved.facts))
    return found


def check(state: BuildState) -> BuildResult | None:
    """The build's check stage (`check_project`, reusing the ledger `knowl check` and the
    builds keep but for a --full build), then its counts and identity; the refusal when
    errors block it (the build stops there and publishes nothing)."""
    state.analysis = analysis = _checked(state)
    state.counts = summarize_counts(analysis)
    state.dirty, state.build_id = _identity(state)
    gate = state.request.gate
    blocking = analysis.diagnostics if gate is None else gate(analysis.diagnostics)
    if state.request.allow_errors or not any(d.severity == "error" for d in blocking):
        return None
    state.discard()
    return BuildResult(
        analysis.diagnostics,
        "refused",
        state.build_id,
        None,
        state.counts,
        False,
        [],
        notices=state.notices,
    )


def _checked(state: BuildState) -> Analysis:
    discovery, git = state.inputs.discovery, state.git
    toplevel = git.toplevel if git is not None else None
    rest = state.inputs.fingerprint(state.config, state.today, pages=False)
    previous = None if state.request.full else load_ledger(state.caches, rest, toplevel, state.root)
    resolved = state.resolved
    while True:
        recheck = Recheck(rest, state.parsed.pages, state.content, previous)
        recheck.settle(resolved.facts)
        analysis = check_project(
            state.root,
            state.config,
            discovery,
            state.parsed,
            resolved,
            state.caches,
            recheck=recheck,
        )
        if recheck.sound or recheck.previous is None:
            break
        # The reused hints may not be a whole run's: check every page, with the budget whole.
        previous, resolved = None, replace(resolved, context=resolved.context.fresh())
    analysis.ledger = recheck.ledger
    analysis.keep_ledger(state.caches, toplevel)
    return analysis


def _identity(state: BuildState) -> tuple[bool, str]:
    """Whether the watched files differ from the commit, and the build's id."""
    config, git, head = state.config, state.git, state.head
    watched = [config.knowledge_dir, config.semantics_dir, "knowl.toml", "pyproject.toml"]
    if config.dbt_project_dir is not None:
        watched.append(config.dbt_project_dir or ".")
    dirty = head is not None and git is not None and git.dirty(watched)
    if head is None:
        return dirty, f"nogit-{state.input_hash[:12]}"
    return dirty, head[:12] + (f"-dirty-{state.input_hash[:8]}" if dirty else "")


def history_findings(facts: GitFacts | None) -> list[Finding]:
    """KB010 for a shallow clone, KB012 for each thing git could not read: at the project
    (path `.`, 1:1), like KB009."""
    if facts is None:
        return []
    found: list[Finding] = []
    if facts.shallow_depth is not None:
        found.append(_shallow(facts))
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


def _shallow(facts: GitFacts) -> Finding:
    depth = facts.shallow_depth
    available = f"{depth} commit{'' if depth == 1 else 's'} available" if depth else "depth unknown"
    boundary = facts.history.boundary
    if boundary is not None:
        available += f", the oldest {boundary[:12]}"
    return Finding(
        "KB010",
        1,
        1,
        f"git history is shallow ({available}): history rules cannot see older "
        'changes; where that matters they say "unknown (shallow history)"',
        "fetch the whole history: fetch-depth: 0 in actions/checkout, or run git fetch --unshallow",
        subject="shallow history",
    )


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
    diagnostics.extend(_unused_suppressions(config, suppressions, used, unchecked))
    diagnostics.sort()
    return diagnostics


def _unused_suppressions(
    config: Config,
    suppressions: dict[str, tuple[Suppression, ...]],
    used: set[tuple[str, int]],
    unchecked: tuple[str, ...],
) -> list[Diagnostic]:
    """KB011 for each suppression that hid nothing."""
    diagnostics = []
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
    return diagnostics


def summarize_counts(analysis: Analysis) -> dict[str, int]:
    """The manifest's counts: pages, entities, semantic files, findings by severity and
    pages by freshness."""
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
