"""A new page: its file name (a slug of its title, within the file system's limit) and its\ntext (frontmatter and body)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

from knowl_build.core.errors import UsageError
from knowl_build.core.layouts import Layout
from knowl_build.core.names import valid_user
from knowl_build.core.resolve import GLOBAL, place
from knowl_build.secrets.scanner import redact
from knowl_build.writes.common import Tree, utc_now
from knowl_build.writes.pagefile import WriteRefused
from knowl_build.writes.reconcile import _SPACES
from knowl_build.writes.request import Request

_SLUG = re.compile(r"[^a-z0-9]+")


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
        ("status", request.status if request.status != "active" else None),
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


def scope_folder(layout: Layout, scope: str) -> str:
    """The folder new pages of `scope` go to; a user scope in a flat layout without
    `[knowledge] users_dir` has none (exit 2: there is no place a user's page stays theirs)."""
    folder = layout.scope_folder(scope)
    if folder is None:
        raise UsageError(
            f"no folder for {scope}'s pages: the flat layout has user scopes only under "
            "[knowledge] users_dir"
        )
    return folder


def target_path(request: Request, tree: Tree) -> str:
    """Where the new page goes: the user name is validated here, where it becomes a path, so
    no caller of the library can write outside `knowledge/user/<valid name>/` (or the flat
    layout's users folder)."""
    config = tree.config
    user = valid_user(request.user)
    scope = GLOBAL if user is None else f"user:{user}"
    folder = scope_folder(config.layout, scope)
    taken = {p.id for p in tree.analysis.pages if p.scope == scope}
    # A title holding a secret is refused (KB401); its answer must not spell the secret as a
    # file name either.
    title = redact(request.title)
    base = slug(title, max(name_limit(tree.root / folder) - _NAME_ROOM, 2 * _HASH_CHARS))
    name, n = base, 1
    while name in taken or os.path.lexists(tree.root / folder / f"{name}.md"):
        n += 1
        name = f"{base}-{n}"
    path = f"{name}.md" if folder == "." else f"{folder}/{name}.md"
    where = place(path, config.layout)
    if where is None or where.scope != scope:  # the rule above makes this impossible; stay sure
        raise WriteRefused(f"{path}: not a page of {scope}; nothing was written")
    return path
