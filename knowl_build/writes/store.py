"""`knowl store`: a governed write with Knowl's reconciliation (SPEC 7.1).

Checks first (an error finding refuses the write, and nothing is written); then the three best
BM25 candidates among the active pages of the same category and scope; the first with a
significant-token overlap of at least 0.35 is the match. A verbatim repeat is a no-op; an
explicit `--supersedes` wins; a title that restates the match's subject supersedes it (unless
it only adds negations); anything else coexists, with the `knowl supersede` command printed.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from knowl_build.config import Config
from knowl_build.errors import UsageError
from knowl_build.model import Page
from knowl_build.names import valid_user
from knowl_build.pageref import check_ref
from knowl_build.resolve import GLOBAL, place
from knowl_build.rules.fields import normalize_conflict_key
from knowl_build.secrets import redact
from knowl_build.writes.bm25 import bm25_scores
from knowl_build.writes.common import (
    Change,
    Tree,
    WriteRefused,
    answer_diagnostics,
    commit,
    utc_now,
)
from knowl_build.writes.edit import EditError, FrontmatterEditor

STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "our",
        "the",
        "this",
        "to",
        "use",
        "uses",
        "using",
        "what",
        "with",
    ]
)
NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nor",
        "without",
        "cannot",
        "longer",
        "unable",
        "isn",
        "aren",
        "wasn",
        "weren",
        "doesn",
        "didn",
        "hasn",
        "haven",
        "hadn",
        "couldn",
        "shouldn",
        "wouldn",
    ]
)
OVERLAP = 0.35
CANDIDATES = 3
_SPLIT = re.compile(r"[^a-z0-9_]+")
_SLUG = re.compile(r"[^a-z0-9]+")
_SPACES = re.compile(r"\s+")


def tokens(text: str) -> list[str]:
    """Significant tokens: lowercased, split on [^a-z0-9_]+, 2+ characters, no stop words."""
    return [t for t in _SPLIT.split(text.lower()) if len(t) >= 2 and t not in STOP_WORDS]


def overlap(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def normalized(text: str) -> str:
    return _SPACES.sub(" ", text.lower()).strip()


# A file name must leave room for what a write adds to it: `.md` and a collision suffix `-N`
# (the temporary file a write renames into place has a short name of its own).
_SUFFIX_ROOM = len("-") + 7
_NAME_ROOM = len(".md") + _SUFFIX_ROOM
_HASH_CHARS = 8
NAME_MAX = 255  # the common limit, also where the repository may be cloned next


def name_limit(folder: Path) -> int:
    """The longest file name the file system holding `folder` (or its nearest existing
    ancestor) accepts, never more than NAME_MAX so the repository stays portable."""
    probe = folder
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    try:
        limit = os.pathconf(probe, "PC_NAME_MAX")
    except (AttributeError, OSError, ValueError):  # no pathconf (Windows) or no answer
        return NAME_MAX
    return NAME_MAX if limit <= 0 else min(limit, NAME_MAX)


def slug(title: str, max_chars: int = NAME_MAX - _NAME_ROOM) -> str:
    """The title lowercased, every run of characters other than a-z0-9 turned into `-`; an
    empty slug is `page-<hash>`, a slug longer than `max_chars` is cut and gets `-<hash>`, so
    two long titles that share a beginning still get two names."""
    digest = hashlib.sha256(title.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    text = _SLUG.sub("-", title.lower()).strip("-")
    if not text:
        return f"page-{digest}"
    if len(text) > max_chars:
        return f"{text[: max_chars - _HASH_CHARS - 1].rstrip('-')}-{digest}"
    return text


def first_sentence(content: str) -> str:
    """The content's first sentence (headings skipped when there is other text), <= 200 chars."""
    lines = content.splitlines()
    prose = [line for line in lines if not re.match(r"\s{0,3}#{1,6}(\s|$)", line)]
    text = _SPACES.sub(" ", " ".join(prose if any(p.strip() for p in prose) else lines)).strip()
    text = re.sub(r"^#{1,6}\s+", "", text)
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    sentence = match.group(1) if match else text
    return sentence[:200].rstrip()


@dataclass(slots=True)
class Request:
    """What `knowl store` was asked to write."""

    category: str
    title: str
    content: str
    user: str | None = None
    summary: str | None = None
    tags: list[str] = field(default_factory=list)
    sl_refs: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    usage_mode: str | None = None
    confidence: float | None = None
    provenance: str | None = None
    source: str | None = None
    source_commit: str | None = None
    paths: list[str] = field(default_factory=list)
    reasoning: str | None = None
    alternatives: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    conflict_key: str | None = None
    conflict_scope: dict[str, str] = field(default_factory=dict)
    exclusive: bool = False
    supersedes: str | None = None
    visibility: str | None = None


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
    commit: str | None = None

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


# --- the page text ---------------------------------------------------------------------------


class _Quoted(str):
    """A string written double-quoted (timestamps)."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    _Quoted,
    lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style='"'),
)


def page_text(request: Request, tree: Tree, head: str | None) -> str:
    """The new page: frontmatter keys in the specified order, defaults omitted; the body is the
    content verbatim with a final newline."""
    from frontmatter.default_handlers import YAMLHandler

    layer = tree.analysis.layer
    meta: dict[str, Any] = {}
    if request.provenance and request.provenance != "inferred":
        meta["provenance"] = request.provenance
    meta["last_validated_at"] = _Quoted(utc_now())
    bound = {
        name: layer.entities[name].fingerprint
        for name in request.sl_refs
        if name in layer.entities and layer.entities[name].kind == "measure"
    }
    if bound:
        meta["bound_fingerprints"] = bound
    conflict: dict[str, Any] | None = None
    if request.conflict_key is not None:
        conflict = {"key": request.conflict_key}
        if request.conflict_scope:
            conflict["scope"] = dict(request.conflict_scope)
        if request.exclusive:
            conflict["exclusive"] = True
    source_commit = request.source_commit or head
    summary = request.summary if request.summary is not None else first_sentence(request.content)
    ordered: list[tuple[str, Any]] = [
        ("title", request.title),
        ("summary", summary),
        ("category", request.category),
        ("status", None),
        ("tags", request.tags),
        ("sl_refs", request.sl_refs),
        ("refs", request.refs),
        ("usage_mode", request.usage_mode if request.usage_mode != "reference" else None),
        ("confidence", request.confidence if request.confidence not in (None, 1.0) else None),
        ("source", request.source),
        ("source_commit", source_commit),
        ("affected_paths", request.paths),
        ("conflict", conflict),
        ("visibility", request.visibility if request.visibility != "repo" else None),
        ("reasoning", request.reasoning),
        ("alternatives", request.alternatives),
        ("steps", request.steps),
        ("meta", meta),
    ]
    metadata = {key: value for key, value in ordered if value not in (None, "", [], {})}
    handler = YAMLHandler()
    yaml_text = handler.export(metadata, Dumper=_Dumper, sort_keys=False, width=1 << 30)
    body = request.content if request.content.endswith("\n") else request.content + "\n"
    return f"---\n{yaml_text}\n---\n{body}"


def target_path(request: Request, tree: Tree) -> str:
    """Where the new page goes: the user name is validated here, where it becomes a path, so
    no caller of the library can write outside `knowledge/user/<valid name>/`."""
    config = tree.config
    user = valid_user(request.user)
    folder = (
        f"{config.knowledge_dir}/global" if user is None else f"{config.knowledge_dir}/user/{user}"
    )
    scope = GLOBAL if user is None else f"user:{user}"
    taken = {p.id for p in tree.analysis.pages if p.scope == scope}
    # A title holding a secret is refused (KB401); its answer must not spell the secret as a
    # file name either.
    title = redact(request.title)
    base = slug(title, max(name_limit(tree.root / folder) - _NAME_ROOM, 2 * _HASH_CHARS))
    name, n = base, 1
    while name in taken or os.path.lexists(tree.root / folder / f"{name}.md"):
        n += 1
        name = f"{base}-{n}"
    path = f"{folder}/{name}.md"
    where = place(path, config.knowledge_dir)
    if where is None or where.scope != scope:  # the rule above makes this impossible; stay sure
        raise WriteRefused(f"{path}: not a page of {scope}; nothing was written")
    return path


# --- reconciliation --------------------------------------------------------------------------


def _page_tokens_text(
    title: str, content: str, reasoning: str | None, tags: list[str] | tuple[str, ...]
) -> str:
    return f"{title}\n{content}\n{reasoning or ''}\n{' '.join(tags)}"


def _body(tree: Tree, page: Page) -> str:
    return tree.text(page.path)[page.parsed.body_offset :]


def candidates(tree: Tree, request: Request, scope: str) -> list[Page]:
    """BM25 over the active pages of the same category and scope; the best three."""
    pool = [
        p
        for p in tree.analysis.pages
        if p.parsed.text_ok
        and p.scope == scope
        and p.parsed.fields.status == "active"
        and p.parsed.fields.category == request.category
    ]
    docs = []
    for page in pool:
        f = page.parsed.fields
        docs.append(
            Counter(tokens(_page_tokens_text(page.title, _body(tree, page), f.reasoning, f.tags)))
        )
    query = set(
        tokens(_page_tokens_text(request.title, request.content, request.reasoning, request.tags))
    )
    if not docs or not query:
        return []
    scored = [
        (score, page)
        for score, page in zip(bm25_scores(docs, query), pool, strict=True)
        if score > 0
    ]
    scored.sort(key=lambda sp: (-sp[0], sp[1].id, sp[1].path))
    return [page for _, page in scored[:CANDIDATES]]


def _adds_nothing(request: Request, match: Page) -> bool:
    f = match.parsed.fields
    conflict = None
    if request.conflict_key is not None:
        conflict = (
            normalize_conflict_key(request.conflict_key),
            tuple(sorted(request.conflict_scope.items())),
            request.exclusive,
        )
    have = (
        None
        if f.conflict is None
        else (f.conflict.normalized_key, f.conflict.scope, f.conflict.exclusive)
    )
    return all(
        (
            set(request.tags) <= set(f.tags),
            set(request.paths) <= {a.value for a in f.affected_paths},
            set(request.sl_refs) <= {r.value for r in f.sl_refs},
            set(request.refs) <= {r.value for r in f.refs},
            request.reasoning in (None, f.reasoning),
            set(request.alternatives) <= set(f.alternatives),
            set(request.steps) <= set(f.steps),
            request.source in (None, f.source),
            request.confidence in (None, f.confidence),
            conflict is None or conflict == have,
            request.usage_mode in (None, f.usage_mode),
            request.visibility in (None, f.visibility),
        )
    )


def _same_subject(new_title: str, old_title: str) -> bool:
    """The smaller significant-token set (2+ tokens) is contained in the larger, unless the
    larger adds only negation words."""
    new, old = set(tokens(new_title)), set(tokens(old_title))
    small, large = (new, old) if len(new) <= len(old) else (old, new)
    if len(small) < 2 or not small <= large:
        return False
    added = large - small
    return not (added and added <= NEGATIONS)


def check_confidence(value: object) -> None:
    """A confidence is a finite number in [0, 1], or not given: refused here, in the library,
    so that every front end refuses the same values (a NaN or an infinity from an MCP client
    or a Python caller is never written, dropped or clamped)."""
    if value is None:
        return
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if number is None or not math.isfinite(number) or not 0.0 <= number <= 1.0:
        shown = repr(value) if isinstance(value, int | float) else f"a {type(value).__name__}"
        raise WriteRefused(
            f"confidence must be a finite number in [0, 1] (never clamped), not {shown}; "
            "nothing was written"
        )


def plan(tree: Tree, request: Request) -> Outcome:
    """Decide what the write does; nothing is written here."""
    from knowl_build.history.git import GitRepo

    check_confidence(request.confidence)
    # The tree is the project as the writer sees it; a request for another writer would be
    # checked against the wrong view.
    request.user = valid_user(request.user)
    if request.user != tree.user:
        raise UsageError("the store request's user is not the user the tree was loaded for")

    git = GitRepo.find(tree.root)
    head = git.head() if git is not None else None
    if request.source_commit and git is not None:
        from knowl_build.history.git import GitFailed

        with contextlib.suppress(GitFailed):  # an unknown commit is left as given: KB205 says so
            request.source_commit = (
                git.run("rev-parse", "--verify", "-q", f"{request.source_commit}^{{commit}}")
                .decode()
                .strip()
            )
    path = target_path(request, tree)
    where = place(path, tree.config.knowledge_dir)
    assert where is not None
    text = page_text(request, tree, head)
    new_change = Change(path, None, text)
    changes = [new_change]

    superseded_page: Page | None = None
    if request.supersedes is not None:
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
        changes.append(_supersede_change(tree, superseded_page, where.id))

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
    # 6. Same subject: the new page supersedes the match (never a frozen one).
    if _same_subject(request.title, match.title):
        if match.parsed.fields.frozen:
            outcome.overlapping = match.id
            outcome.message = (
                f"'{match.id}' covers the same subject but is frozen, so it stays active"
            )
            return outcome
        change = _supersede_change(tree, match, where.id)
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


def _ref(page: Page) -> str:
    return page.id if page.scope == GLOBAL else f"{page.scope}:{page.id}"


def _ref_id(scope: str, page_id: str) -> str:
    return page_id if scope == GLOBAL else f"{scope}:{page_id}"


def _supersede_change(tree: Tree, old: Page, new_id: str) -> Change:
    """OLD's file with `status: superseded` and `superseded_by: NEW`; a layout that cannot be
    edited safely refuses the whole write (WriteRefused), so nothing is written."""
    source = tree.source(old.path)
    try:
        editor = FrontmatterEditor.of(source.text)
        editor.set_scalar(["status"], "superseded")
        editor.set_scalar(["superseded_by"], _yaml_str(new_id))
    except EditError as exc:
        raise WriteRefused(f"{old.path}: {exc}; nothing was written") from None
    return Change.edit(old.path, source, editor.result())


def _yaml_str(value: str) -> str:
    """A YAML scalar for `value`: plain when it reads back as the same string."""
    dumped = yaml.safe_dump(value, default_flow_style=True, width=1 << 30).strip()
    return dumped[:-4].rstrip() if dumped.endswith("\n...") else dumped.removesuffix("...").strip()


def store(root: Path, config: Config, request: Request, *, do_commit: bool = False) -> Outcome:
    # A bad user name stops the write before anything is read or cached (exit 2), and so
    # does a confidence no page may hold (exit 1).
    request.user = valid_user(request.user)
    check_confidence(request.confidence)
    if request.supersedes is not None:
        check_ref(request.supersedes)
    tree = Tree.load(root, config, request.user)
    outcome = plan(tree, request)
    if outcome.action != "inserted":
        if outcome.action == "refused":
            outcome.changes = []
        return outcome
    written = tree.write(outcome.changes)
    if do_commit:
        outcome.commit = commit(root, written, f"Store {request.category}: {request.title}")
    return outcome
