"""What the cross-page rules read: every page, the indexes, the semantic layer, history."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import Page, Span
from knowl_build.core.resolve import PageIndex
from knowl_build.history.records import History
from knowl_build.semantic.layer import SemanticLayer
from knowl_build.support import clock
from knowl_build.support.hints import SKIPPED, HintBudget, NearNames, suggestion

Emitted = Iterator[tuple[str, Finding]]

HINT_CUTOFF = 0.75  # how close a page id or entity name must be to be suggested


def finding_at(
    code: str,
    span: Span | None,
    message: str,
    hint: str | None = None,
    subject: str | None = None,
) -> Finding:
    """A finding at `span`, or at 1:1 (the whole file) when there is none."""
    if span is None:
        return Finding(code, 1, 1, message, hint, subject=subject)
    return Finding(
        code, span.line, span.column, message, hint, span.end_line, span.end_column, subject
    )


@dataclass(slots=True)
class GitFacts:
    """What the history rules need from git, gathered in batch before the rules run."""

    history: History
    changed_paths: set[tuple[str, str]] = field(default_factory=set)  # (source_commit, path)
    reachable: dict[str, str | None] = field(default_factory=dict)  # source_commit -> full id
    shallow_depth: int | None = None  # commits available when the clone is shallow (KB010)
    problems: list[str] = field(default_factory=list)  # what git could not read (KB012)


@dataclass(slots=True)
class RuleContext:
    pages: list[Page]  # text pages only: a KB007 file draws no other finding
    index: PageIndex
    layer: SemanticLayer
    config: Config
    today: dt.date
    git: GitFacts | None = None
    now: dt.datetime = field(default_factory=clock.now)
    _page_hints: dict[tuple[str, str], str | None] = field(default_factory=dict)
    _entity_hints: dict[str, str | None] = field(default_factory=dict)
    # Built once per run: the page ids each set of visible scopes offers, the entity names.
    _page_names: dict[tuple[str, ...], NearNames] = field(default_factory=dict)
    _entity_names: NearNames | None = None
    _hint_budget: HintBudget = field(default_factory=HintBudget)
    # Whether a rule read the moment of the run (`working_tree_time`) since this was reset.
    read_now: bool = False

    def fresh(self) -> RuleContext:
        """The same context before any rule ran: no hint looked up, the budget whole."""
        return RuleContext(
            self.pages, self.index, self.layer, self.config, self.today, self.git, self.now
        )

    def working_tree_time(self) -> dt.datetime:
        """When the working tree's uncommitted changes were made, as far as the rules know:
        now. A finding that depends on it can change within a day with no input changing, so
        reading it is noted (`read_now`: such a page is checked again by every run)."""
        self.read_now = True
        return self.now

    @property
    def hint_budget(self) -> HintBudget:
        """What the run's did-you-mean lookups may still spend."""
        return self._hint_budget

    def page_hint(self, target: str, scope: str) -> str | None:
        key = (target, scope)
        if key in self._page_hints:
            return self._page_hints[key]
        visible = self.index.visible_scopes(scope)
        names = self._page_names.get(visible)
        if names is None:
            names = self._page_names[visible] = NearNames(self.index.visible_ids(scope))
        self._page_hints[key], hint = self._lookup(names, target)
        return hint

    def entity_hint(self, name: str) -> str | None:
        if name in self._entity_hints:
            return self._entity_hints[name]
        if self._entity_names is None:
            self._entity_names = NearNames(self.layer.entities)
        self._entity_hints[name], hint = self._lookup(self._entity_names, name)
        return hint

    def _lookup(self, names: NearNames, name: str) -> tuple[str | None, str | None]:
        """The hint to keep for `name`, and the hint for this finding. A lookup over the run's
        budget keeps none; the first such finding gets the notice that hints stop there
        (see support/hints.py)."""
        found = names.closest(name, HINT_CUTOFF, self._hint_budget)
        if found is SKIPPED:
            return None, self._hint_budget.notice()
        hint = suggestion(found)
        return hint, hint
