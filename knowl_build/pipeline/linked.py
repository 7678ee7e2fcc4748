"""Which files Markdown links may name: every file discovery found under the knowledge
folder, and, elsewhere in the project, what is there (`[logo](../../assets/logo.png)`,
`[readme](../../README.md)`).

A path outside the knowledge folder is looked up on disk once per run, never read: it must
exist, and resolve inside the project (a symlink that leads out of it is OUTSIDE, KB008); a
path into `.git/` or `.knowl/` is INTERNAL (KB008: no part of the project's files, never
looked at). A path under the knowledge folder that discovery did not find is MISSING, unless
a symlink on its way leads out of the project (OUTSIDE). What each lookup answered is kept (`asked`), so the
check memo can tell when the answer changed while no input did.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.core.layouts import nfc
from knowl_build.core.linkpaths import FILE, INTERNAL, MISSING, OUTSIDE, LinkSettings
from knowl_build.pipeline.discover import Discovery

_NEVER = (".git", ".knowl")


class ProjectFiles:
    """Answers `LinkSettings.exists` for one project."""

    def __init__(self, root: Path, knowledge_dir: str, known: list[str]) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self.knowledge = knowledge_dir
        self.known: set[str] = {knowledge_dir}
        for path in known:
            path = nfc(path)
            while path and path not in self.known:
                self.known.add(path)
                path = posixpath.dirname(path)
        self.asked: dict[str, str] = {}  # outside the knowledge folder: path -> answer

    def exists(self, path: str) -> str:
        inside = (
            self.knowledge == "."  # the knowledge folder is the project's root
            or path == self.knowledge
            or path.startswith(self.knowledge + "/")
        )
        if inside and path in self.known:
            return FILE
        found = self.asked.get(path)
        if inside and found is None:
            # Not discovered: missing, unless a symlink on its way leaves the project
            # (`etclink -> /etc`), which the message must say.
            if self.look(path) != OUTSIDE:
                return MISSING
            found = self.asked[path] = OUTSIDE
        if found is None:
            found = self.asked[path] = self.look(path)
        return found

    def look(self, path: str) -> str:
        """What is at `path` on disk (project-relative, normalised, inside the project)."""
        if not path:
            return FILE  # the project's own folder
        if any(part in _NEVER for part in path.split("/")):
            return INTERNAL
        if "\0" in path:
            return MISSING  # no file has a NUL in its name (`%00`), and os refuses to look
        full = os.path.join(self.root, path)
        real = os.path.realpath(full)
        if real != self.real_root and not real.startswith(self.real_root.rstrip(os.sep) + os.sep):
            return OUTSIDE
        return FILE if os.path.exists(full) else MISSING


def link_settings(root: Path, config: Config, discovery: Discovery) -> LinkSettings:
    """How Markdown links resolve in this project; `asked` fills with the lookups on disk."""
    known = [*discovery.pages, *discovery.other_files, *discovery.semantic_files]
    known += discovery.dbt_files
    if discovery.dbt_project_file is not None:
        known.append(discovery.dbt_project_file)
    files = ProjectFiles(root, config.knowledge_dir, known)
    return LinkSettings(files.exists, config.site_root, config.link_exclude, files.asked)


def answers(root: Path, asked: dict[str, str]) -> dict[str, str]:
    """What the lookups in `asked` answer now (the check memo holds while they are the same)."""
    files = ProjectFiles(root, "", [])
    return {path: files.look(path) for path in sorted(asked)}
