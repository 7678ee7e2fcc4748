"""What the analysing stages hand on: the parsed project, the resolved one, the analysis."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic, Finding
from knowl_build.core.model import Page
from knowl_build.core.resolve import PageIndex
from knowl_build.history.records import History
from knowl_build.pipeline.cache import CachePlace
from knowl_build.pipeline.discover import Discovery
from knowl_build.pipeline.recheck import Ledger, save_ledger
from knowl_build.rules.context import GitFacts, RuleContext
from knowl_build.rules.freshness import Assessment
from knowl_build.semantic.layer import SemanticLayer

# What hears of the layer and each batch of placed pages as they are parsed (a build sends
# them to the index meanwhile).
Parsed = Callable[[list[Page], SemanticLayer], None]


@dataclass(frozen=True, slots=True)
class ParsedProject:
    """The parse stage's answer: the semantic layer and every page, in path order."""

    layer: SemanticLayer
    pages: list[Page]
    findings: dict[str, list[Finding]]  # each page's own findings (frontmatter, body)

    @property
    def text_pages(self) -> list[Page]:
        return [p for p in self.pages if p.parsed.text_ok]


@dataclass(frozen=True, slots=True)
class Resolved:
    """The analyse stage's answer: what the rules read (references resolved, git facts,
    freshness assessed)."""

    index: PageIndex
    facts: GitFacts | None
    context: RuleContext
    assessments: dict[str, Assessment]


@dataclass(slots=True)
class Analysis:
    """Everything one pass over the project found (the check stage's answer)."""

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
    ledger: Ledger | None = None  # what the next check reuses (`pipeline.recheck`)

    def keep_ledger(self, caches: CachePlace, toplevel: Path | None) -> None:
        """Seal the ledger in the cache for the next run; not when git could not read the
        history (KB012: the history rules' findings may be missing, and the next run reads
        it again)."""
        if self.ledger is None or any(d.code == "KB012" for d in self.diagnostics):
            return
        save_ledger(caches, self.ledger, self.pages, self.ledger.linked, toplevel)

    @property
    def linked(self) -> dict[str, str]:
        """What Markdown links' files outside the knowledge folder were: the lookups of this
        run, and of the run each reused page's findings come from."""
        asked = self.index.link_settings.asked
        return self.ledger.linked if self.ledger is not None else asked

    @property
    def volatile(self) -> bool:
        """Whether a page's findings read the moment of the run (they can change with no
        input changing: no memo may answer for them)."""
        pages = self.ledger.volatile() if self.ledger is not None else set()
        return bool(pages or getattr(self.assessments, "volatile", None))
