"""What `knowl check` keeps of a run so that the next one checks only what an edit can change.

The ledger holds, for each page, the digest it was checked at, the pages its checks read
(every page a reference, link or embed of it resolved to: the link table, whose reverse
edges say who reads a page) and the findings of the rules that look at one page at a time
(references, Markdown links, freshness). When nothing but pages' bytes changed since (`rest`:
the configuration, the day, HEAD, the semantic layer, the other files; the caller compares
it) and no page was added, removed, moved or given another name or alias (`names`), those
rules run over the changed pages and the pages that read them, and every other page's
findings come from the ledger. The project-wide rules (governance, history) run whole.

Did-you-mean hints share one budget a run (support/hints.py), so a reused hint is the hint a
whole run gives only while a whole run would not spend the budget. The ledger keeps an upper
bound of what a whole run spends (`spent`); when that and what this run spent do not fit the
budget together, the run is not sound and every page is checked again."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import Page
from knowl_build.core.resolve import PageIndex, aliases_of
from knowl_build.pipeline import memos
from knowl_build.pipeline.cache import CachePlace
from knowl_build.rules.context import Emitted, GitFacts, RuleContext
from knowl_build.rules.freshness import Assessment, Assessments
from knowl_build.rules.mdlinks import check_markdown_links
from knowl_build.rules.references import check_references
from knowl_build.support.hints import HINT_BUDGET, HintBudget

# 1: the first ledger; 2: HEAD out of its key, the history and each page's git facts in;
# 3: the pages whose findings read the moment of the run, the link lookups carried on
LEDGER_FORMAT = 3
LEDGER_CACHE = "check-ledger.json"  # `knowl check` and `knowl build` keep one
LEDGER_SEAL = "check-ledger"

PageRule = Callable[[RuleContext, Iterable[Page]], Emitted]
PAGE_RULES: tuple[PageRule, ...] = (check_references, check_markdown_links)


@dataclass(slots=True)
class PageFacts:
    """One page as its last check saw it."""

    digest: str
    reads: set[str] = field(default_factory=set)  # paths of the pages its checks resolved to
    found: list[tuple[str, Finding]] = field(default_factory=list)
    # Its freshness read the moment of the run (an uncommitted change's date: now), which
    # moves with no input changing: every run checks it again.
    volatile: bool = False


@dataclass(slots=True)
class Ledger:
    rest: str  # the fingerprint of every input but the pages' bytes and HEAD
    names: str  # `names_of` the pages
    history: str  # `history_of` the git facts
    spent: int  # at least what a whole run spends of the hint budget
    pages: dict[str, PageFacts]  # every placed page, by path
    # What Markdown links' files outside the knowledge folder were, as the pages' checks
    # looked them up (a reused page's with the run that checked it): `pipeline.memos`.
    linked: dict[str, str] = field(default_factory=dict)
    # The project-wide rules' findings of the run (kept in memory only: a session reuses
    # them when no edited page changed what those rules read, `pipeline.session`).
    governance: list[tuple[str, Finding]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": LEDGER_FORMAT,
            "rest": self.rest,
            "names": self.names,
            "history": self.history,
            "spent": self.spent,
            "pages": {
                path: [
                    facts.digest,
                    sorted(facts.reads),
                    [[where, *finding.to_list()] for where, finding in facts.found],
                    facts.volatile,
                ]
                for path, facts in self.pages.items()
            },
        }

    @classmethod
    def from_json(cls, data: Any) -> Ledger | None:
        """The ledger `to_json` wrote; None for anything else."""
        if not isinstance(data, dict) or data.get("format") != LEDGER_FORMAT:
            return None
        try:
            pages = {
                path: PageFacts(
                    digest,
                    set(reads) if reads else set(),
                    [(where, _finding(item)) for where, *item in found] if found else [],
                    volatile is True,
                )
                for path, (digest, reads, found, volatile) in data["pages"].items()
            }
            held = (data["rest"], data["names"], data["history"], int(data["spent"]), pages)
            ledger = cls(*held, dict(data.get("linked") or {}))
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return ledger if _well_typed(ledger) else None

    def volatile(self) -> set[str]:
        return {path for path, facts in self.pages.items() if facts.volatile}

    def readers(self, paths: set[str]) -> set[str]:
        """The pages whose checks read one of `paths` (the reverse edges of the link table)."""
        return {path for path, facts in self.pages.items() if not facts.reads.isdisjoint(paths)}


def _well_typed(ledger: Ledger) -> bool:
    texts = [ledger.rest, ledger.names, ledger.history, *ledger.linked, *ledger.linked.values()]
    for path, facts in ledger.pages.items():
        texts += [path, facts.digest, *facts.reads, *(where for where, _ in facts.found)]
    return all(isinstance(text, str) for text in texts)


def _finding(item: list[Any]) -> Finding:
    code, line, column, message, hint, end_line, end_column, subject = item
    numbers, texts = (line, column, end_line, end_column), (code, message, hint, subject)
    if not all(n is None or type(n) is int for n in numbers) or not all(
        t is None or type(t) is str for t in texts
    ):
        raise TypeError("not a finding")
    return Finding(code, line, column, message, hint, end_line, end_column, subject)


def names_of(pages: list[Page]) -> str:
    """A digest of what the other pages' checks can read of each page without resolving to it:
    its path, id, scope, owner, path under the scope folder, whether it is text, its aliases,
    in the order of the pages (duplicates resolve by it): the `repr` of a list of tuples of
    strings, None and booleans, which no other list has."""
    named = [
        (page.path, page.id, page.scope, page.owner, page.rel, page.parsed.text_ok, *_aliases(page))
        for page in pages
    ]
    return hashlib.sha256(repr(named).encode("utf-8", "surrogatepass")).hexdigest()


def history_of(git: GitFacts | None) -> str:
    """A digest of what the per-page rules read of the history besides a page's own facts:
    each entity's past, the definitions its fingerprints were computed from, how much of the
    history git could show (a commit's date and subject never change with its id)."""
    if git is None:
        return ""
    history = git.history
    held = [history.entities, history.definitions, history.boundary, history.unknown]
    return hashlib.sha256(msgspec.json.encode(held, order="sorted")).hexdigest()


def _git_of(git: GitFacts | None, page: Page) -> str:
    """What git says of the page: the commit its `source_commit` names, and which of the
    paths it says a change affects differ at HEAD."""
    fields = page.parsed.fields
    commit = fields.source_commit
    if git is None or not commit:
        return ""
    full = git.reachable.get(commit)
    differ = sorted(
        item.value for item in fields.affected_paths if (full, item.value) in git.changed_paths
    )
    return repr((commit in git.reachable, full, differ))


def _aliases(page: Page) -> list[str]:
    return aliases_of(page) if "aliases" in page.parsed.frontmatter else []


@dataclass(slots=True)
class Recheck:
    """One run's use of the ledger: which pages it checks (`only`, once `settle` knows the git
    facts; None: all), and the ledger it leaves once the rules ran (`finish`)."""

    rest: str
    pages: list[Page]  # every placed page
    content: dict[str, str]  # each page's sha256 (of every input page at least)
    previous: Ledger | None = None  # the ledger to reuse, if it applies
    names: str = ""
    history: str = ""
    digests: dict[str, str] = field(default_factory=dict)  # each placed page's, git facts in
    only: set[str] | None = None
    facts: dict[str, PageFacts] = field(default_factory=dict)  # of the pages checked
    ledger: Ledger | None = None
    sound: bool = True
    # Set before the rules run: the governance findings to take instead of running it (a
    # session's, when no edited page changed what governance reads); after: this run's.
    governance: list[tuple[str, Finding]] | None = None

    def settle(self, git: GitFacts | None) -> set[str] | None:
        """The pages to check given the run's git facts (`only`): every page when the ledger
        does not apply, else the changed pages and the pages that read them. A page changed
        when its bytes did or what git says of it (its `source_commit`, the paths it says a
        change affects); every page, when the history of the semantic layer did."""
        self.names = names_of(self.pages)
        self.history = history_of(git)
        self.digests = {
            page.path: f"{self.content[page.path]} {_git_of(git, page)}" for page in self.pages
        }
        previous = self.previous
        if (
            previous is None
            or previous.spent > HINT_BUDGET  # a whole run spends the budget
            or previous.names != self.names
            or previous.history != self.history
            or previous.pages.keys() != self.digests.keys()
        ):
            self.previous = self.only = None
            return None
        return self._plan(previous, set(self.digests))

    def settle_edit(self, git: GitFacts | None, edited: set[str]) -> set[str] | None:
        """`settle` for a session's edit (`pipeline.session`): the caller knows that only the
        `edited` pages' bytes changed, none of them has other names or git facts, and the
        git facts are the previous run's; every other page's digest is the ledger's. None
        when the ledger cannot be reused (its run spent the hint budget)."""
        previous = self.previous
        if previous is None or previous.spent > HINT_BUDGET:
            return None
        self.names, self.history = previous.names, previous.history
        pages = {page.path: page for page in self.pages if page.path in edited}
        self.digests = {path: facts.digest for path, facts in previous.pages.items()}
        for path, page in pages.items():
            self.digests[path] = f"{self.content[path]} {_git_of(git, page)}"
        return self._plan(previous, set(pages))

    def _plan(self, previous: Ledger, candidates: set[str]) -> set[str]:
        """`only`: the candidates whose digest is not the ledger's, the pages that read them,
        and the pages whose findings read the moment of the run."""
        changed = {p for p in candidates if previous.pages[p].digest != self.digests[p]}
        self.only = changed | previous.readers(changed) | previous.volatile()
        return self.only

    def checked(self, pages: list[Page]) -> list[Page]:
        return pages if self.only is None else [page for page in pages if page.path in self.only]

    def page_findings(
        self, ctx: RuleContext, assessments: dict[str, Assessment]
    ) -> list[tuple[str, Finding]]:
        """The per-page rules' findings: run over the pages checked, taken from the ledger for
        the rest."""
        pages = self.checked(ctx.pages)
        self.facts = {page.path: PageFacts(self.digests[page.path]) for page in pages}
        walk = _Walk(ctx.index, self.facts)
        for rule in PAGE_RULES:
            for where, finding in rule(ctx, walk.pages(pages)):
                self.facts[walk.current].found.append((where, finding))
        volatile = assessments.volatile if isinstance(assessments, Assessments) else set()
        for path, facts in self.facts.items():
            if (assessment := assessments.get(path)) is not None:
                facts.found.extend((path, finding) for finding in assessment.findings)
                facts.volatile = path in volatile
        found: list[tuple[str, Finding]] = []
        for page in ctx.pages:
            checked = self.facts.get(page.path)
            if checked is None:
                assert self.previous is not None
                checked = self.previous.pages[page.path]
            found.extend(checked.found)
        return found

    def finish(self, budget: HintBudget, asked: dict[str, str]) -> None:
        """The ledger this run leaves, once every rule ran (`asked`: the link lookups on disk
        it made); whether reusing was sound."""
        spent = HINT_BUDGET - budget.units
        if self.previous is not None:
            self.sound = not budget.closed and self.previous.spent <= budget.units
            spent += self.previous.spent
        if budget.closed:
            spent = HINT_BUDGET + 1  # every later run checks every page
        pages = {
            path: self.facts.get(path) or self._reused(path, digest)
            for path, digest in self.digests.items()
        }
        # A reused page's lookups were not made again: they are the last run's (its memo
        # loaded only while they answer the same).
        linked = {**self.previous.linked, **asked} if self.previous is not None else dict(asked)
        self.ledger = Ledger(self.rest, self.names, self.history, spent, pages, linked)
        self.ledger.governance = self.governance

    def _reused(self, path: str, digest: str) -> PageFacts:
        """A page this run did not check: unchanged, or one no per-page rule looks at (not
        text)."""
        kept = self.previous.pages.get(path) if self.previous is not None else None
        return kept if kept is not None and kept.digest == digest else PageFacts(digest)


class _Walk:
    """The pages a rule goes through, each noted as the current one while the rule looks at
    it, with the index adding to its reads."""

    def __init__(self, index: PageIndex, facts: dict[str, PageFacts]) -> None:
        self.index = index
        self.facts = facts
        self.current = ""

    def pages(self, pages: list[Page]) -> Iterator[Page]:
        try:
            for page in pages:
                self.current = page.path
                self.index.reads = self.facts[page.path].reads
                yield page
        finally:
            self.index.reads = None


def load_ledger(caches: CachePlace, rest: str, toplevel: Path | None, root: Path) -> Ledger | None:
    """The ledger this machine sealed for `rest`, while the files outside the inputs it
    depends on are as they were (`pipeline.memos`); None otherwise."""
    path, sealer = caches.file(LEDGER_CACHE), caches.sealer(LEDGER_SEAL)
    if path is None or sealer is None:
        return None
    held = memos.load(path, LEDGER_FORMAT, "rest", rest, toplevel, root, sealer)
    return Ledger.from_json(held) if held is not None else None


def save_ledger(
    caches: CachePlace,
    ledger: Ledger,
    pages: list[Page],
    linked: dict[str, str],
    toplevel: Path | None,
) -> None:
    """`ledger`, sealed, with the state of the files outside the inputs it depends on: the
    paths `pages` say a change affects, and the outside files Markdown links named
    (`linked`)."""
    path, sealer = caches.file(LEDGER_CACHE), caches.sealer(LEDGER_SEAL)
    if path is not None and sealer is not None:
        outside = memos.affected_outside(pages, toplevel)
        memos.save(path, ledger.to_json(), outside, linked, sealer)
