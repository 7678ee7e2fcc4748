"""`knowl new`: a person's new page, with valid frontmatter, in the scope and folder given.

Unlike `knowl store` it reconciles with nothing: the page is the writer's to fill in. It is
checked as every write is (an error finding refuses it and nothing is written), it never
replaces a file (a page of the same id in its scope refuses it: ids are names links use), and
its `--sl-ref` entities are bound as `knowl review` binds them (the live fingerprints and
`last_validated_at`), so a later change of a measure is drift from the first commit.
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.core.errors import UsageError
from knowl_build.core.names import holds_secret, valid_user
from knowl_build.core.resolve import GLOBAL, place
from knowl_build.pipeline.discover import unread_because
from knowl_build.secrets.scanner import redact
from knowl_build.writes.common import (
    NOTHING_WRITTEN,
    Tree,
    answer_diagnostics,
    commit,
    commit_repo,
)
from knowl_build.writes.newpage import NAME_MAX, page_text, scope_folder, slug
from knowl_build.writes.pagefile import Change
from knowl_build.writes.request import Request
from knowl_build.writes.store import Outcome

_CONTROL = {*range(0x20), *range(0x7F, 0xA0)}


@dataclass(slots=True)
class NewPage:
    """What `knowl new` was asked to write."""

    title: str
    user: str | None = None
    folder: str = ""  # below the scope's folder, `/`-separated; "" for the folder itself
    name: str | None = None  # the file name without `.md` (default: a slug of the title)
    content: str = ""
    summary: str | None = None
    category: str | None = None
    usage_mode: str | None = None
    tags: list[str] = field(default_factory=list)
    sl_refs: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)


def _part_problem(part: str) -> str | None:
    if part in ("", ".", ".."):
        return "is empty, '.' or '..'"
    if part.startswith("."):
        return "starts with '.' (discovery skips hidden names)"
    if "\\" in part or any(ord(char) in _CONTROL for char in part):
        return "holds a backslash or a control character"
    if any(unicodedata.category(char) == "Cf" for char in part):
        return "holds an invisible formatting character (a zero-width space, a direction mark)"
    if part != part.rstrip(" ."):
        return "ends with a space or a dot (which some file systems drop)"
    if len(part.encode("utf-8", "surrogatepass")) > NAME_MAX:
        return f"is longer than {NAME_MAX} bytes"
    return None


def folder_parts(folder: str) -> list[str]:
    """The folder below the scope folder as its names; a UsageError (exit 2) names the part
    that cannot be a folder of pages. No part may lead out (`..`, an absolute path) or hide
    the page from discovery (`.name`)."""
    if not folder.strip("/"):
        return []
    if folder.startswith("/") or os.path.isabs(folder):
        raise UsageError(f"--folder '{folder}' must be relative to the scope's folder")
    parts = folder.strip("/").split("/")
    for part in parts:
        problem = _part_problem(part)
        if problem is not None:
            raise UsageError(f"--folder '{folder}': the name '{part}' {problem}")
    return parts


def _file_name(request: NewPage) -> str:
    if request.name is None:
        # A title holding a secret is refused (KB401); its answer must not spell the secret
        # as a file name either (lowercased, no pattern would find it again).
        return slug(redact(request.title))
    problem = _part_problem(request.name) or (
        "ends with '.md' (give the name without it)" if request.name.endswith(".md") else None
    )
    if problem is not None or "/" in request.name:
        raise UsageError(f"--name '{request.name}' {problem or 'holds a /'}")
    return request.name


def new_path(config: Config, request: NewPage) -> tuple[str, str]:
    """The page's project-relative path and its scope."""
    user = valid_user(request.user)
    parts = folder_parts(request.folder)
    scope = GLOBAL if user is None else f"user:{user}"
    name = _file_name(request)
    path = "/".join([scope_folder(config.layout, scope), *parts, f"{name}.md"])
    path = path.removeprefix("./")
    where = place(path, config.layout)
    if where is None or holds_secret(path):
        raise UsageError(f"'{path}' cannot be a page (its name holds a secret, or no scope)")
    if where.scope != scope:
        # `--folder people/alice` in a flat layout's users folder: another scope's page.
        raise UsageError(
            f"--folder {request.folder!r} is in {where.scope}'s folder, not {scope}'s: "
            "a page is written in the scope it is for"
        )
    return path, where.scope


def _store_request(request: NewPage) -> Request:
    return Request(
        category=request.category or "",
        title=request.title,
        content=request.content,
        user=valid_user(request.user),
        summary=request.summary if request.summary is not None else "",
        tags=list(request.tags),
        sl_refs=list(request.sl_refs),
        refs=list(request.refs),
        usage_mode=request.usage_mode,
    )


def plan_new(tree: Tree, request: NewPage) -> Outcome:
    """The new page checked in the tree; nothing is written here."""
    path, scope = new_path(tree.config, request)
    where = place(path, tree.config.layout)
    assert where is not None
    taken = tree.analysis.index.by_id.get((scope, where.id), [])
    if taken or os.path.lexists(tree.root / path):
        holder = taken[0].path if taken else path
        return Outcome(
            "refused",
            where.id,
            path,
            message=f"a page '{where.id}' already exists in {scope} ({holder}); give "
            "another --name, nothing was written",
        )
    skipped = unread_because(tree.root, tree.config, path)
    if skipped is not None:
        return Outcome("refused", where.id, path, message=f"{path} {skipped}; nothing was written")
    text = page_text(_store_request(request), tree, head=None)
    change = Change(path, None, text)
    analysis = tree.with_changes([change])
    findings = [d for d in analysis.diagnostics if d.path == path]
    outcome = Outcome("inserted", where.id, path, diagnostics=answer_diagnostics(findings))
    if any(d.severity == "error" for d in findings):
        outcome.action = "refused"
        outcome.message = "the new page has error findings; nothing was written"
        return outcome
    outcome.changes = [change]
    return outcome


def new(root: Path, config: Config, request: NewPage, *, do_commit: bool = False) -> Outcome:
    """Write the page (or refuse it); with `do_commit`, commit exactly that file."""
    request.user = valid_user(request.user)
    if not request.title.strip():
        raise UsageError("the title is empty")
    repo = commit_repo(root) if do_commit else None
    tree = Tree.load(root, config, request.user)
    outcome = plan_new(tree, request)
    if outcome.action != "inserted":
        if repo is not None:
            outcome.commit = NOTHING_WRITTEN
        return outcome
    written = tree.write(outcome.changes)
    if repo is not None:
        outcome.commit = commit(repo, [(written, f"New page: {request.title}")])
    return outcome
