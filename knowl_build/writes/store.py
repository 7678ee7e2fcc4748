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

from knowl_build.config import Config
from knowl_build.diagnostics import Diagnostic
from knowl_build.errors import UsageError
from knowl_build.history.git import GitRepo
from knowl_build.model import DRAFT, Page
from knowl_build.names import valid_user
from knowl_build.pageref import check_ref
from knowl_build.resolve import GLOBAL, place
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
    """Decide what the write does; nothing is written here."""

    # The tree is the project as the writer sees it; a request for another writer would be
    # checked against the wrong view.
    request.user = valid_user(request.user)
    if request.user != tree.user:
        raise UsageError("the store request's user is not the user the tree was loaded for")

    git = GitRepo.find(tree.root)
    head = git.head() if git is not None else None
    if request.source_commit and git is not None:
        # An unknown commit is left as given: KB205 says so.
        request.source_commit = git.commit_of(request.source_commit) or request.source_commit
    path = target_path(request, tree)
    where = place(path, tree.config.layout)
    assert where is not None
    problem = confidence_problem(request.confidence)
    if problem is not None:
        return _refused_confidence(request, tree, head, where.id, path, problem)
    text = page_text(request, tree, head)
    new_change = Change(path, None, text)
    changes = [new_change]

    superseded_page: Page | None = None
    # A draft replaces nothing until a person promotes it: the page it names is only reported.
    named_by_draft: Page | None = None
    if request.supersedes is not None and request.status == DRAFT:
        named_by_draft = tree.page(request.supersedes)
    elif request.supersedes is not None:
        superseded_page = tree.page(request.supersedes)
        if superseded_page.parsed.fields.status != "active":
            return Outcome(
                "refused",
                where.id,
                path,
                message=(
                    f"--supersedes names '{superseded_page.id}', which is "
                    f"{superseded_page.parsed.fields.status}, not active"
                ),
            )
        if superseded_page.parsed.fields.frozen:
            return Outcome("refused", where.id, path, message=f"'{superseded_page.id}' is frozen")
        changes.append(supersede_change(tree, superseded_page, where.id))

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

    # 3. Candidates and the match.
    mine = set(
        tokens(_page_tokens_text(request.title, request.content, request.reasoning, request.tags))
    )
    match = None
    for candidate in candidates(tree, request, where.scope):
        f = candidate.parsed.fields
        theirs = set(
            tokens(_page_tokens_text(candidate.title, _body(tree, candidate), f.reasoning, f.tags))
        )
        if overlap(mine, theirs) >= OVERLAP:
            match = candidate
            break

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
    # 4. A verbatim repeat that adds nothing is a no-op.
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
    # 6. Same subject: the new page supersedes the match (never a frozen one; a draft only
    # another draft: an active page stays until a person promotes the draft).
    same_subject = _same_subject(request.title, match.title)
    if same_subject and request.status == DRAFT and match.parsed.fields.status != DRAFT:
        outcome.overlapping = match.id
        outcome.message = (
            f"'{match.id}' covers the same subject; this draft replaces it only once reviewed "
            f"(knowl review, then knowl supersede {_ref(match)} {_ref_id(where.scope, where.id)})"
        )
        return outcome
    if same_subject:
        if match.parsed.fields.frozen:
            outcome.overlapping = match.id
            outcome.message = (
                f"'{match.id}' covers the same subject but is frozen, so it stays active"
            )
            return outcome
        change = supersede_change(tree, match, where.id)
        outcome.changes.append(change)
        outcome.superseded = match.id
        return outcome
    # 7. Both stay active.
    outcome.overlapping = match.id
    outcome.message = (
        f"'{match.id}' overlaps; to retire it: knowl supersede "
        f"{_ref(match)} {_ref_id(where.scope, where.id)}"
    )
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
