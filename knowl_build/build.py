"""The pipeline: discover, parse, resolve, run the rules. `check()` is the table of contents."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build import __version__
from knowl_build.cache import ParseCache
from knowl_build.config import Config
from knowl_build.diagnostics import Diagnostic, Finding
from knowl_build.discover import Discovery, discover
from knowl_build.model import Page, ParsedPage
from knowl_build.parse.page import not_text, parse_page
from knowl_build.parse.semantics import SemanticLayer, load_semantic_layer
from knowl_build.resolve import PageIndex, place
from knowl_build.rules.context import RuleContext
from knowl_build.rules.freshness import check_freshness
from knowl_build.rules.governance import check_governance
from knowl_build.rules.references import check_references
from knowl_build.rules.security import SecretScanner

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
    diagnostics: list[Diagnostic] = field(default_factory=list)
    changed: set[str] | None = None  # with --changed-only: the files findings are limited to


def utc_today() -> dt.date:
    """Today in UTC; SOURCE_DATE_EPOCH pins it for reproducible runs."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.strip().isdigit():
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC).date()
    return dt.datetime.now(dt.UTC).date()


def _cache_key(config: Config) -> str:
    security = config.to_json()["security"]
    return hashlib.sha256(
        json.dumps([__version__, security], sort_keys=True).encode()
    ).hexdigest()


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def parse_pages(
    root: Path, discovery: Discovery, config: Config, cache: ParseCache
) -> tuple[list[Page], dict[str, list[Finding]]]:
    """Parse every page (through the cache); return placed pages and per-file findings."""
    scanner = SecretScanner(config.security.extra_patterns)
    pages: list[Page] = []
    findings: dict[str, list[Finding]] = {}
    for path in discovery.pages:
        data = _read(root / path)
        if data is None:
            parsed: ParsedPage = not_text("page")
        else:
            digest = hashlib.sha256(data).hexdigest()
            cached = cache.get(digest)
            if cached is None:
                parsed = parse_page(data, config.security, scanner)
                cache.put(digest, parsed)
            else:
                parsed = cached
        findings[path] = list(parsed.findings)
        where = place(path, config.knowledge_dir)
        if where is None:
            findings[path].insert(0, Finding(
                "KB004", 1, 1,
                f"page '{path}' is outside {config.knowledge_dir}/global/ and "
                f"{config.knowledge_dir}/user/<owner>/",
                "move it under global/ or user/<owner>/",
            ))
            continue
        pages.append(Page(path, where.id, where.scope, where.owner, where.rel, parsed))
    return pages, findings


def load_layer(root: Path, discovery: Discovery) -> SemanticLayer:
    files = []
    for path in discovery.semantic_files:
        data = _read(root / path)
        files.append((path, data if data is not None else b"\x00"))
    return load_semantic_layer(files)


def analyse(
    root: Path,
    config: Config,
    *,
    use_cache: bool = True,
    changed_only: bool = False,
    today: dt.date | None = None,
) -> Analysis:
    """Validate the whole project: every file is read, every reference resolved."""
    discovery = discover(root, config)
    layer = load_layer(root, discovery)
    cache = ParseCache(root, _cache_key(config), enabled=use_cache)
    pages, page_findings = parse_pages(root, discovery, config, cache)
    cache.save()
    index = PageIndex.build(pages, discovery.other_files, config.knowledge_dir)
    context = RuleContext(
        pages=[p for p in pages if p.parsed.text_ok],
        index=index,
        layer=layer,
        config=config,
        today=today or utc_today(),
    )

    found: list[tuple[str, Finding]] = []
    for path, items in discovery.findings.items():
        found.extend((path, f) for f in items)
    for path, items in layer.findings.items():
        found.extend((path, f) for f in items)
    for path, items in page_findings.items():
        found.extend((path, f) for f in items)
    found.extend(check_references(context))
    found.extend(check_governance(context))
    found.extend(check_freshness(context))
    if discovery.git is None:
        found.append((NO_GIT_PATH, Finding(
            "KB009", 1, 1, "git history is unavailable; history rules are skipped",
            "run knowl inside a git repository (with git installed) for drift and history",
        )))

    analysis = Analysis(root, config, discovery, layer, pages, index)
    analysis.diagnostics = apply_severities(found, config)
    if changed_only and discovery.git is not None:
        changed = discovery.git.changed_files()
        if changed is not None:
            analysis.changed = changed
            analysis.diagnostics = [d for d in analysis.diagnostics if d.path in changed]
    return analysis


def apply_severities(found: list[tuple[str, Finding]], config: Config) -> list[Diagnostic]:
    diagnostics = []
    for path, finding in found:
        severity = config.severity(finding.code)
        if severity != "off":
            diagnostics.append(finding.at(path, severity))
    diagnostics.sort()
    return diagnostics


def check(
    root: Path, config: Config, *, changed_only: bool = False, use_cache: bool = True
) -> Analysis:
    """`knowl check`: validate everything, write nothing but the parse cache."""
    return analyse(root, config, use_cache=use_cache, changed_only=changed_only)
