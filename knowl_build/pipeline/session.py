"""An analysis kept in memory and brought up to date edit by edit (the language server's).

`Session.start` analyses the project as `knowl check` does and keeps what the stages made:
the parsed pages, the page index, the semantic layer, the git facts and the ledger
(`pipeline.recheck`). `Session.update` takes the inputs after an edit. When only pages'
bytes changed, and none of the changed pages has another name, alias, scope or git facts, it
parses the changed pages alone, puts them in the index in place of what they were, and runs
the per-page rules over them and the pages that read them, the project-wide rules whole; the
layer, the other files, the history and every other page's findings stay as they were. Any
other change gives None, and the caller starts a new session. Either way the findings are a
whole analysis' (a property test holds the two to each other over random edits)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.core.model import Page
from knowl_build.history.log import GitHistory
from knowl_build.pipeline.analysis import resolve_and_check
from knowl_build.pipeline.cache import CachePlace, ParseCache
from knowl_build.pipeline.inputs import Inputs
from knowl_build.pipeline.linked import answers
from knowl_build.pipeline.pages import parse_pages
from knowl_build.pipeline.recheck import Ledger, Recheck, names_of
from knowl_build.pipeline.stages import findings, parsing
from knowl_build.pipeline.stages.values import Analysis, ParsedProject, Resolved
from knowl_build.rules.freshness import assess
from knowl_build.support import clock, process

# Past this many lookups on disk (Markdown links typed towards files outside the knowledge
# folder ask for each prefix), a new session starts with none.
MAX_LOOKUPS = 512


@dataclass(frozen=True, slots=True)
class Session:
    root: Path
    config: Config
    today: dt.date
    caches: CachePlace
    parse_cache: ParseCache
    rest: str  # `Inputs.fingerprint(..., pages=False)` of the inputs analysed
    head: str | None  # git's HEAD then
    inputs: Inputs
    project: ParsedProject
    resolved: Resolved
    analysis: Analysis

    @classmethod
    @process.held()  # no cyclic collection while it allocates (the server's collector is on)
    def start(
        cls,
        root: Path,
        config: Config,
        today: dt.date,
        inputs: Inputs,
        caches: CachePlace,
        parse_cache: ParseCache,
        ledger: Ledger | None = None,
    ) -> Session:
        """A whole analysis of `inputs` (reusing `ledger` where it applies)."""
        rest = inputs.fingerprint(config, today, pages=False)
        project = parsing.parse_project(config, inputs, caches, cache=parse_cache)
        resolved, analysis = resolve_and_check(
            root, config, inputs, project, caches, today, ledger=ledger, rest=rest
        )
        return cls(
            root,
            config,
            today,
            caches,
            parse_cache,
            rest,
            _head(inputs),
            inputs,
            project,
            resolved,
            analysis,
        )

    @process.held()
    def update(self, inputs: Inputs, today: dt.date | None = None) -> Session | None:
        """The session after an edit: `inputs` as they are now (same configuration) on `today`
        (default: the session's day). None when more than pages' bytes changed, or a changed
        page's name, aliases or git facts did, or the day."""
        if today is not None and today != self.today:
            return None
        before = self.inputs.pages
        if inputs.pages.keys() != before.keys():
            return None
        if inputs.fingerprint(self.config, self.today, pages=False) != self.rest:
            return None
        if _head(inputs) != self.head:  # a commit: the git facts are read again
            return None
        changed = {path for path, (_, d) in inputs.pages.items() if before[path][1] != d}
        if not changed:
            return self
        ledger = self.analysis.ledger
        if ledger is None or not self._outside_as_it_was(inputs, ledger):
            return None
        edited = Inputs(inputs.discovery, {path: inputs.pages[path] for path in changed})
        pages, found = parse_pages(edited, self.config, self.parse_cache)
        # The other pages are this run's too: the cache keeps them (and them decoded).
        self.parse_cache.used.update(digest for _, digest in inputs.pages.values())
        self.parse_cache.save()
        new = {page.path: page for page in pages}
        old = {page.path: page for page in self.project.pages if page.path in changed}
        if new.keys() != old.keys() or any(not _same_face(old[p], new[p]) for p in new):
            return None
        project = ParsedProject(
            self.project.layer,
            [new.get(page.path, page) for page in self.project.pages],
            {**self.project.findings, **found},
        )
        digests = {path: digest for path, (_, digest) in inputs.pages.items()}
        recheck = Recheck(self.rest, project.pages, digests, ledger)
        if recheck.settle_edit(self.resolved.facts, set(new)) is None:
            return None
        if all(_governed(old[path]) == _governed(page) for path, page in new.items()):
            recheck.governance = ledger.governance  # what governance reads is as it was
        resolved = self._resolved(project, new, recheck)
        analysis = findings.check_project(
            self.root,
            self.config,
            inputs.discovery,
            project,
            resolved,
            self.caches,
            recheck=recheck,
        )
        if not recheck.sound:
            return None
        analysis.ledger = recheck.ledger
        return replace(self, inputs=inputs, project=project, resolved=resolved, analysis=analysis)

    def _outside_as_it_was(self, inputs: Inputs, ledger: Ledger) -> bool:
        """Whether what the findings read outside the inputs is as the session saw it: the
        files outside the knowledge folder Markdown links name (created or removed since,
        they answer otherwise: a new session looks them up again), and which of the paths
        pages say a change affects differ from their `source_commit` (the working tree, or a
        page, may have changed them)."""
        asked = {**ledger.linked, **self.resolved.index.link_settings.asked}
        if len(asked) > MAX_LOOKUPS or answers(self.root, asked) != asked:
            return False
        facts = self.resolved.facts
        git = inputs.discovery.git
        if facts is None or git is None or not facts.reachable:
            return True
        pairs = {
            (full, item.value)
            for page in self.project.text_pages
            if (full := facts.reachable.get(page.parsed.fields.source_commit or "")) is not None
            for item in page.parsed.fields.affected_paths
        }
        reader = GitHistory(git)
        try:
            return reader.head_paths_differ(pairs, git.toplevel) == facts.changed_paths
        finally:
            reader.close()

    def _resolved(self, project: ParsedProject, new: dict[str, Page], recheck: Recheck) -> Resolved:
        """The index with the edited pages in place of what they were, the same git facts, a
        fresh rule context over the pages, and the freshness of the pages checked again."""
        index = self.resolved.index.with_pages(new)
        context = replace(
            self.resolved.context.fresh(), pages=project.text_pages, index=index, now=clock.now()
        )
        assessments = assess(context, recheck.checked(context.pages))
        return Resolved(index, self.resolved.facts, context, assessments)


def _same_face(old: Page, new: Page) -> bool:
    """Whether the other pages can tell the two apart without resolving to them (their names,
    aliases, whether they are text: `recheck.names_of`), and git says the same of them."""
    if names_of([old]) != names_of([new]):
        return False
    before, after = old.parsed.fields, new.parsed.fields
    return before.source_commit == after.source_commit and [
        item.value for item in before.affected_paths
    ] == [item.value for item in after.affected_paths]


def _governed(page: Page) -> tuple[object, ...]:
    """What the project-wide rules read of a page beyond its names (`rules.governance`): its
    status, successor and conflict claim, where they are written, whether it is text."""
    fields = page.parsed.fields
    anchors = fields.anchors
    places = tuple(anchors.get(key) for key in ("status", "superseded_by", "conflict"))
    return (page.parsed.text_ok, fields.status, fields.superseded_by, fields.conflict, places)


def _head(inputs: Inputs) -> str | None:
    git = inputs.discovery.git
    return git.head() if git is not None else None
