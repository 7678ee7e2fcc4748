"""A page's history (SPEC 8.1): `knowl timeline PAGE` and `knowl show PAGE --at REV`, read from
git (these are the reader commands that need the source tree's repository)."""

from __future__ import annotations

import difflib
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from knowl_build.app.project import Project
from knowl_build.artifacts.schema import ShowAnswer
from knowl_build.core.config import Config
from knowl_build.core.errors import UsageError
from knowl_build.core.layouts import Layout
from knowl_build.core.names import valid_user
from knowl_build.core.pageref import Named, check_ref, pick, writable
from knowl_build.core.resolve import Place, place
from knowl_build.history.git import GitFailed, GitRepo
from knowl_build.history.pages import export_tree, page_history, resolve_revision
from knowl_build.parse.frontmatter import split
from knowl_build.parse.text import decode
from knowl_build.pipeline.discover import discover
from knowl_build.pipeline.pages import parse_page
from knowl_build.pipeline.publish import build
from knowl_build.reader import Reader
from knowl_build.secrets.scanner import SecretScanner, redact


def _pick(pages: list[tuple[str, Place]], ref: str, user: str | None) -> str:
    """PAGE (`id`, `global:<id>`, `user:<owner>:<id>`, or a path under the scope folder)
    among (path, place) pairs: the path of the one page it names (`pageref.pick`)."""
    named: dict[tuple[str, str], list[Named[str]]] = defaultdict(list)
    for path, where in sorted(pages, key=lambda pw: pw[0]):
        named[(where.scope, where.id)].append(Named(path, path, where.rel))
    return pick(
        ref,
        user,
        lambda scope, page_id: named.get((scope, page_id), []),
        ids=lambda scope: [page_id for (held, page_id) in named if held == scope],
    )


def _places(paths: Iterable[str], layout: Layout) -> list[tuple[str, Place]]:
    """The pages among `paths`, with their place (scope, id, path under the scope folder)."""
    found = []
    for path in paths:
        where = place(path, layout)
        if where is not None:
            found.append((path, where))
    return found


def _working_pages(root: Path, config: Config) -> list[tuple[str, Place]]:
    return _places(discover(root, config).pages, config.layout)


def _git(root: Path) -> GitRepo:
    repo = GitRepo.find(root)
    if repo is None:
        raise UsageError(
            f"{root} is not inside a git repository (or git is not installed): "
            "page history needs git"
        )
    return repo


def readable_at(path: str, layout: Layout, user: str | None) -> bool:
    """Whether a version of a page, at `path` in its commit, is one `user` may read: a page of
    the global scope or of the user's own, as `show --at` would find it then. A version that
    was in another user's folder (or was no page at all) is not."""
    if not path.endswith(".md"):
        return False
    where = place(path, layout)
    return where is not None and writable(where.scope, user)


def timeline(project: Project, ref: str, user: str | None = None) -> dict[str, Any]:
    """Every committed version of the page, newest first, following renames: only the
    versions `user` could read when they were made (the global scope or their own), so a
    page's past in another user's folder is neither listed nor diffed against. `notices`
    says which versions git could not read (they are left out, never guessed).

    What git keeps of a page's past was never checked (KB401 reads the working tree only):
    a secret removed since is still in an old version, and an old path may have been one.
    Every text a version gives (its path, summary and diff) passes the one redaction; the
    commit's author and subject did where history read them (`history.records.Commit`)."""
    root, config = project.root, project.config
    user, ref = valid_user(user), check_ref(ref)
    repo = _git(root)
    path = _pick(_working_pages(root, config), ref, user)
    versions, problems = page_history(
        repo, path, keep=lambda old: readable_at(old, config.layout, user)
    )
    scanner = SecretScanner(config.security.extra_patterns)
    rows: list[dict[str, Any]] = []
    bodies: list[str] = []
    for version in versions:
        text = decode(version.data)
        parsed = (
            parse_page(version.data, config.security, scanner, config.code_names)
            if text is not None
            else None
        )
        body = text[split(text).body_offset :] if text is not None else ""
        bodies.append(body)
        summary = parsed.fields.summary if parsed else None
        rows.append(
            {
                **version.commit.to_json(),
                "path": redact(version.path),
                "status": parsed.fields.status if parsed else None,
                "summary": redact(summary) if summary is not None else None,
            }
        )
    for i, row in enumerate(rows):
        older = bodies[i + 1] if i + 1 < len(bodies) else None
        if older is None:
            row["diff"] = ""
        else:
            row["diff"] = redact(
                "".join(
                    difflib.unified_diff(
                        older.splitlines(keepends=True),
                        bodies[i].splitlines(keepends=True),
                        fromfile=f"a/{rows[i + 1]['path']}",
                        tofile=f"b/{row['path']}",
                    )
                )
            )
    where = place(path, config.layout)
    assert where is not None
    notices = [redact(problem) for problem in problems]
    return {"page": where.id, "scope": where.scope, "versions": rows, "notices": notices}


def _redacted(value: Any) -> Any:
    """`value` (JSON data) with every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    return value


def show_at(project: Project, ref: str, rev: str, user: str | None = None) -> ShowAnswer:
    """The page as it was at `rev`, rendered against the semantic layer as it was at `rev`.

    The project's tree at `rev` is exported to a temporary folder and built there; the answer
    is `knowl show`'s, plus the commit it was read at. As the timeline's, every text of it
    passes the one redaction: no check ever stopped a secret in a past version."""
    root, config = project.root, project.config
    user, ref = valid_user(user), check_ref(ref)
    repo = _git(root)
    try:
        commit = resolve_revision(repo, rev)
    except GitFailed as exc:
        raise UsageError(str(exc)) from None
    workdir = Path(tempfile.mkdtemp(prefix="knowl-at-"))
    try:
        tree = workdir / "tree"
        export_tree(repo, commit, [config.knowledge_dir, config.semantics_dir], tree)
        paths = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*.md"))
        _pick(_places(paths, config.layout), ref, user)  # not found: before building
        result = build(tree, config, allow_errors=True, full=True, out=workdir / "out")
        assert result.folder is not None
        with Reader.open(result.folder) as reader:
            answer = reader.show(ref, user=user)
        answer["at"] = {"rev": rev, "commit": commit}
        return cast(ShowAnswer, _redacted(answer))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
