"""`knowl store`: a governed write with Knowl's reconciliation (SPEC 7.1).

Checks first (an error finding refuses the write, and nothing is written); then the three best
BM25 candidates among the active pages of the same category and scope; the first with a
significant-token overlap of at least 0.35 is the match. A verbatim repeat is a no-op; an
explicit `--supersedes` wins; a title that restates the match's subject supersedes it (unless
it only adds negations); anything else coexists, with the `knowl supersede` command printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.core.errors import UsageError
from knowl_build.core.model import DRAFT, Page
from knowl_build.core.names import valid_user
from knowl_build.core.pageref import check_ref
from knowl_build.core.resolve import GLOBAL, place
from knowl_build.history.git import GitRepo
from knowl_build.secrets.scanner import redact
from knowl_build.writes.common import (
    NOTHING_WRITTEN,
    Committed,
    Tree,
    answer_diagnostics,
    commit,
    commit_repo,
    supersede_change,
)
from knowl_build.writes.newpage import page_text, target_path
from knowl_build.writes.pagefile import Change
from knowl_build.writes.reconcile import (
    OVERLAP,
    _adds_nothing,
    _body,
    _page_tokens_text,
    _same_subject,
    candidates,
    normalized,
    overlap,
    tokens,
)
from knowl_build.writes.request import Request, confidence_problem


@dataclass(slots=True)
class Outcome:
    action: str  # inserted | duplicate | refused
    page: str | None
    path: str | None
    superseded: str | None = None
    overlapping: str | None = None
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    message: str = ""
    # The request's argument a refusal is about (`confidence`), not the page's findings: a
    # front end whose protocol has call errors answers it as one.
    argument: str | None = None
    commit: Committed | None = None  # None: no --commit, or the write was refused

    def to_json(self) -> dict[str, Any]:
        # Page names come from titles and file names, which a secret may have reached.
        return {
            "action": self.action,
            "page": _redacted(self.page),
            "path": _redacted(self.path),
            "superseded": _redacted(self.superseded),
            "overlapping": _redacted(self.overlapping),
            "diagnostics": self.diagnostics,
        }


def _redacted(text: str | None) -> str | None:
    return None if text is None else redact(text)


# --- reconciliation --------------------------------------------------------------------------


def plan(tree: Tree, request: Request) -> Outcome:
    """Decide what the write does; nothing is written here: the new page and the supersession
    it names (refused when not possible), every check (errors refuse), the match among the
    candidates, then what the match means."""
    # The tree is the project as the writer sees it; a request for another writer would be
    # checked against the wrong view.
    request.user = valid_user(request.user)
    if request.user != tree.user:
        raise UsageError("the store request's user is not the user the tree was loaded for")
    head = _head_and_source(tree, request)
    path = target_path(request, tree)
    where = place(path, tree.config.layout)
    assert where is not None
    problem = confidence_problem(request.confidence)
    if problem is not None:
        return _refused_confidence(request, tree, head, where.id, path, problem)
    changes = [Change(path, None, page_text(request, tree, head))]
    named = _named(tree, request, where.id, path, changes)
    if isinstance(named, Outcome):
        return named
    superseded_page, named_by_draft = named

    # 1-2. Every check on the new page, the named supersession applied; errors refuse.
    analysis = tree.with_changes(changes)
    findings = [d for d in analysis.diagnostics if d.path == path]
    if any(d.severity == "error" for d in findings):
        return Outcome(
            "refused",
            where.id,
            path,
            diagnostics=answer_diagnostics(findings),
            message="the new page has error findings; nothing was written",
        )
    match = _match(tree, request, where.scope)  # 3. candidates and the match
    outcome = Outcome(
        "inserted", where.id, path, diagnostics=answer_diagnostics(findings), changes=changes
    )
    if named_by_draft is not None:
        outcome.overlapping = named_by_draft.id
        outcome.message = (
            "a draft supersedes nothing: once a person has reviewed it (knowl review), "
            f"knowl supersede {_ref(named_by_draft)} {_ref_id(where.scope, where.id)}"
        )
        return outcome
    if superseded_page is not None:
        # 5. An explicit choice always wins; a detected match is only reported.
        outcome.superseded = superseded_page.id
        if match is not None and match is not superseded_page:
            outcome.overlapping = match.id
        return outcome
    if match is None:
        return outcome
    return _with_match(tree, request, outcome, match, where.scope)


def _head_and_source(tree: Tree, request: Request) -> str | None:
    """HEAD, and the request's source commit as a full id (an unknown one is left as given:
    KB205 says so)."""
    git = GitRepo.find(tree.root)
    if request.source_commit and git is not None:
        request.source_commit = git.commit_of(request.source_commit) or request.source_commit
    return git.head() if git is not None else None


def _named(
    tree: Tree, request: Request, page_id: str, path: str, changes: list[Change]
) -> Outcome | tuple[Page | None, Page | None]:
    """The page `--supersedes` names: (superseded, None) with its change added to `changes`,
    or (None, named) for a draft, which replaces nothing until a person promotes it; a refusal
    when the named page cannot be superseded."""
    if request.supersedes is None:
        return None, None
    if request.status == DRAFT:
        return None, tree.page(request.supersedes)
    old = tree.page(request.supersedes)
    status = old.parsed.fields.status
    if status != "active":
        why = f"--supersedes names '{old.id}', which is {status}, not active"
        return Outcome("refused", page_id, path, message=why)
    if old.parsed.fields.frozen:
        return Outcome("refused", page_id, path, message=f"'{old.id}' is frozen")
    changes.append(supersede_change(tree, old, page_id))
    return old, None


def _match(tree: Tree, request: Request, scope: str) -> Page | None:
    """The first of the candidates whose significant tokens overlap the new page's enough."""
    mine = set(
        tokens(_page_tokens_text(request.title, request.content, request.reasoning, request.tags))
    )
    for candidate in candidates(tree, request, scope):
        f = candidate.parsed.fields
        theirs = set(
            tokens(_page_tokens_text(candidate.title, _body(tree, candidate), f.reasoning, f.tags))
        )
        if overlap(mine, theirs) >= OVERLAP:
            return candidate
    return None


def _with_match(tree: Tree, request: Request, outcome: Outcome, match: Page, scope: str) -> Outcome:
    """What a detected match means: a verbatim repeat is a no-op (4); the same subject is
    superseded (6), never a frozen page, and by a draft only once a person promotes it; any
    other overlap stays active beside the new page (7)."""
    new = _ref_id(scope, outcome.page or "")
    if (
        normalized(request.title) == normalized(match.title)
        and normalized(request.content) == normalized(_body(tree, match))
        and _adds_nothing(request, match)
    ):
        return Outcome(
            "duplicate",
            match.id,
            match.path,
            message=f"'{match.id}' already holds this knowledge; nothing was written",
        )
    outcome.overlapping = match.id
    if not _same_subject(request.title, match.title):
        outcome.message = (
            f"'{match.id}' overlaps; to retire it: knowl supersede {_ref(match)} {new}"
        )
        return outcome
    if request.status == DRAFT and match.parsed.fields.status != DRAFT:
        outcome.message = (
            f"'{match.id}' covers the same subject; this draft replaces it only once reviewed "
            f"(knowl review, then knowl supersede {_ref(match)} {new})"
        )
        return outcome
    if match.parsed.fields.frozen:
        outcome.message = f"'{match.id}' covers the same subject but is frozen, so it stays active"
        return outcome
    outcome.overlapping = None
    outcome.changes.append(supersede_change(tree, match, outcome.page or ""))
    outcome.superseded = match.id
    return outcome


def _refused_confidence(
    request: Request, tree: Tree, head: str | None, page: str, path: str, problem: str
) -> Outcome:
    """A confidence no page may hold: refused whatever KB002's configured severity, with the
    KB002 error the page would draw, at the value in the page as it would be written (1:1
    for a value that is no number, which has no place in it)."""
    line, column = 1, 1
    value = request.confidence
    if isinstance(value, int | float) and not isinstance(value, bool):
        for number, text in enumerate(page_text(request, tree, head).splitlines(), 1):
            if text.startswith("confidence:"):
                line, column = number, len("confidence: ") + 1
                break
    finding = Diagnostic(
        path,
        line,
        column,
        "KB002",
        "error",
        f"'confidence' {problem}",
        "give a confidence from 0 to 1, or none",
        subject="confidence",
    )
    return Outcome(
        "refused",
        page,
        path,
        diagnostics=answer_diagnostics([finding]),
        message=f"confidence {problem}; nothing was written",
        argument="confidence",
    )


def _ref(page: Page) -> str:
    return page.id if page.scope == GLOBAL else f"{page.scope}:{page.id}"


def _ref_id(scope: str, page_id: str) -> str:
    return page_id if scope == GLOBAL else f"{scope}:{page_id}"


def store(root: Path, config: Config, request: Request, *, do_commit: bool = False) -> Outcome:
    # A bad user name stops the write before anything is read or cached (exit 2); a
    # confidence no page may hold is a refusal (exit 1), answered by `plan`.
    request.user = valid_user(request.user)
    if request.supersedes is not None:
        check_ref(request.supersedes)
    repo = commit_repo(root) if do_commit else None
    tree = Tree.load(root, config, request.user)
    outcome = plan(tree, request)
    if outcome.action != "inserted":
        if outcome.action == "refused":
            outcome.changes = []
        elif repo is not None:
            outcome.commit = NOTHING_WRITTEN
        return outcome
    written = tree.write(outcome.changes)
    if repo is not None:
        outcome.commit = commit(repo, [(written, f"Store {request.category}: {request.title}")])
    return outcome
