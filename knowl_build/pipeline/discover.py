"""Which files make the project (SPEC 1): pages, other knowledge files, semantic sources.

Files come from the file system, so new and unstaged files are checked too. Skipped: `.knowl/`,
`.git/`, paths git ignores, and every file or folder whose name starts with `.`.

Every read stays inside the project, and this module is where that is decided:

- a symlink that resolves outside the project root is skipped with KB008;
- discovery's own skips hold for what a symlink points at: a target whose real path has a
  name starting with `.` (`.env`, `.git/`, `.knowl/`) or that git ignores is skipped with
  KB008, and a file reached through a followed symlinked folder is skipped when git ignores
  its real path (as an ignored file is skipped anywhere). Whether git ignores them is asked
  once per run, for every target at once (`git check-ignore`), after the walk;
- under `knowledge/`, a symlink whose target lies in another scope (a global link to a user's
  page, a user folder linked to another user's folder, a user page linked to a global one) is
  skipped with KB008 too: a page's scope comes from its real path, never from a link;
- a file or folder whose name is not UTF-8, or holds a control character (C0, DEL, C1: an
  escape sequence or a line break in a name), is skipped with KB007; its path is shown with
  those bytes and characters escaped (`\xff`, `\x1b`), so every output format prints it as
  one harmless line;
- the configured `knowledge_dir`, `semantics_dir` and dbt `project_dir` must not lead outside
  the project through a symlink: that is a configuration error (exit 2), because skipping a
  whole configured folder would let a gate pass on zero files;
- each dbt `model-paths` item must name a folder inside the project (KB050 at its item in
  `dbt_project.yml` otherwise), and `dbt_project.yml` itself is not read through a symlink
  that leaves the project (KB008).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.core.config import Config, glob_regex
from knowl_build.core.diagnostics import Finding
from knowl_build.core.errors import ConfigError
from knowl_build.core.layouts import FLAT, Layout
from knowl_build.core.resolve import folder_scope
from knowl_build.history.git import GitFailed, GitRepo, first_line
from knowl_build.semantic.dbt import DbtProject, read_dbt_project


@dataclass(slots=True)
class Discovery:
    root: Path
    git: GitRepo | None
    knowledge_exists: bool
    pages: list[str] = field(default_factory=list)  # .md files under knowledge/
    other_files: list[str] = field(default_factory=list)  # every other file under knowledge/
    semantic_files: list[str] = field(default_factory=list)
    # KB007 (names), KB008 (symlinks) and dbt_project.yml's findings, by path
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    dbt: DbtProject | None = None
    dbt_files: list[str] = field(default_factory=list)  # the dbt project's model YAML files
    dbt_project_file: str | None = None  # dbt_project.yml when it was read

    def report(self, path: str, finding: Finding) -> None:
        self.findings.setdefault(path, []).append(finding)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_ESCAPED = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)]}


def shown_path(rel: str) -> str:
    """A path that every output can print on one line: bytes that are not UTF-8 (kept by the
    file system decoder as lone surrogates) and control characters become `\\xff` escapes."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace").translate(_ESCAPED)


def _name_problem(name: str) -> str | None:
    """Why a file or folder name is refused (KB007), or None."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "is not UTF-8"
    if _CONTROL.search(name):
        return "holds a control character"
    return None


def _leaves(rel: str) -> Finding:
    return Finding(
        "KB008",
        1,
        1,
        f"symlink '{rel}' points outside the project and is skipped",
        "knowl reads nothing outside the project root",
    )


def _skipped_target(rel: str, is_dir: bool, why: str = "") -> Finding:
    what = "folder" if is_dir else "file"
    return Finding(
        "KB008",
        1,
        1,
        f"symlink '{rel}' points at a hidden or ignored {what}{why} and is skipped",
        "a link reads nothing discovery skips: names starting with '.' (.env, .git/, .knowl/) "
        "and files git ignores",
    )


# For a symlink at `rel` whose real target is `real`: the finding that refuses it, or None.
LinkCheck = Callable[[str, str], Finding | None]


class _Walker:
    """Walks folders of one project, following only the symlinks that stay inside it."""

    def __init__(self, root: Path, discovery: Discovery, tops: tuple[str, ...] = ()) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self.discovery = discovery
        # The configured folders: walked even when their own name starts with `.`.
        self.tops = tuple(os.path.realpath(root / top) for top in tops)
        # For the ignore check after the walk, by path as walked: each followed symlink's
        # target (`links`) and the real path of it and of everything reached through it
        # (`reached`), relative to the project root.
        self.links: dict[str, tuple[str, bool]] = {}  # rel -> (real path, is a folder)
        self.reached: dict[str, str] = {}

    def inside(self, rel: str) -> bool:
        """True when project-relative `rel` resolves inside the project (symlinks followed)."""
        return _inside(os.path.realpath(os.path.join(self.root, rel)), self.real_root)

    def walk(
        self,
        top: str,
        ignored: set[str],
        wanted: Callable[[str], bool] = lambda rel: True,
        check_link: LinkCheck | None = None,
    ) -> list[str]:
        """Every regular file below `top` (project-relative) for which `wanted` holds."""
        if not self.inside(top):
            return []  # the callers refuse such a top with a finding or an error
        ignored_dirs = tuple(p for p in ignored if p.endswith("/"))
        files: list[str] = []
        seen_dirs: set[str] = set()
        stack = [(top, False)]  # (folder, reached through a symlink)
        while stack:
            rel_dir, linked = stack.pop()
            abs_dir = os.path.join(self.root, rel_dir)
            real_dir = os.path.realpath(abs_dir)
            if real_dir in seen_dirs:
                continue  # a symlink loop or a folder reached twice
            seen_dirs.add(real_dir)
            try:
                entries = sorted(os.scandir(abs_dir), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                rel = entry.name if rel_dir == "." else f"{rel_dir}/{entry.name}"
                if rel in ignored or rel + "/" in ignored or rel.startswith(ignored_dirs):
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=True)
                    is_file = not is_dir and entry.is_file(follow_symlinks=True)
                except OSError:
                    continue
                problem = _name_problem(entry.name)
                if problem is not None:
                    if is_dir or (is_file and wanted(rel)):
                        self._bad_name(rel, is_dir, problem)
                    continue
                is_link = entry.is_symlink()
                if is_link and not self._follow(rel, entry.path, is_dir, check_link):
                    continue
                if is_dir:
                    stack.append((rel, linked or is_link))
                elif is_file and wanted(rel):
                    files.append(rel)
                    if linked and not is_link:
                        self.reached[rel] = self._real(os.path.realpath(entry.path))
        files.sort()
        return files

    def _real(self, target: str) -> str:
        return os.path.relpath(target, self.real_root).replace(os.sep, "/")

    def _hidden(self, target: str) -> bool:
        """True when discovery would skip `target` (a real path inside the project) by its
        name: a name starting with `.` below the project root (or below the configured
        folder holding it), which includes .git/ and .knowl/."""
        real = self._real(target)
        if real.split("/", 1)[0] in (".git", ".knowl"):
            return True
        base = next((top for top in self.tops if _inside(target, top)), self.real_root)
        inner = os.path.relpath(target, base).replace(os.sep, "/")
        return any(part.startswith(".") for part in inner.split("/") if part != ".")

    def _follow(self, rel: str, path: str, is_dir: bool, check_link: LinkCheck | None) -> bool:
        target = os.path.realpath(path)
        if not _inside(target, self.real_root):
            self.discovery.report(rel, _leaves(rel))
            return False
        if not os.path.exists(target):
            return False
        if self._hidden(target):
            self.discovery.report(rel, _skipped_target(rel, is_dir))
            return False
        finding = check_link(rel, target) if check_link is not None else None
        if finding is not None:
            self.discovery.report(rel, finding)
            return False
        self.links[rel] = (self._real(target), is_dir)
        self.reached[rel] = self._real(target)
        return True

    def _bad_name(self, rel: str, is_dir: bool, problem: str) -> None:
        what = "folder" if is_dir else "file"
        skipped = "nothing under it is read" if is_dir else "the file is skipped"
        fix = "a UTF-8 name" if problem == "is not UTF-8" else "a name without control characters"
        self.discovery.report(
            shown_path(rel),
            Finding(
                "KB007",
                1,
                1,
                f"{what} name {problem}; {skipped}",
                f"rename the {what} with {fix}",
            ),
        )

    def refuse_ignored(self) -> None:
        """After every walk: drop what symlinks reach that git ignores, asking git once.

        A followed symlink whose target git ignores is KB008 and nothing through it is kept;
        a file reached through a symlinked folder whose real path git ignores is dropped
        without a finding, as an ignored file is anywhere. If git cannot answer (even
        without its index), every symlink is refused: a link must not read what git hides."""
        git, discovery = self.discovery.git, self.discovery
        if git is None or not self.reached:
            return
        paths = sorted(set(self.reached.values()))
        why = ""
        try:
            try:
                ignored = git.check_ignore(paths)
            except GitFailed:  # e.g. a target inside a submodule: ask the rules alone
                ignored = git.check_ignore(paths, index=False)
        except GitFailed as exc:
            ignored, why = set(paths), f" (git could not say which: {first_line(exc)})"
        refused: set[str] = set()
        for rel in sorted(self.links):
            real, is_dir = self.links[rel]
            if real in ignored and not _under(rel, refused):
                refused.add(rel)
                discovery.report(rel, _skipped_target(rel, is_dir, why))

        def kept(rel: str) -> bool:
            return self.reached.get(rel) not in ignored and not _under(rel, refused)

        discovery.pages = [rel for rel in discovery.pages if kept(rel)]
        discovery.other_files = [rel for rel in discovery.other_files if kept(rel)]
        discovery.semantic_files = [rel for rel in discovery.semantic_files if kept(rel)]
        discovery.dbt_files = [rel for rel in discovery.dbt_files if kept(rel)]
        # Findings about what lies behind a refused folder link are about nothing read.
        discovery.findings = {
            path: found
            for path, found in discovery.findings.items()
            if path in refused or not _under(path, refused)
        }


def _under(rel: str, folders: set[str]) -> bool:
    """True when `rel` is one of `folders` or lies below one."""
    parts = rel.split("/")
    return any("/".join(parts[:n]) in folders for n in range(1, len(parts) + 1))


def _scope_check(walker: _Walker, layout: Layout) -> LinkCheck:
    """Refuse a symlink under knowledge/ whose target lies in knowledge/ but not in the scope
    the link's own path gives: the scope of a page comes from its real path."""
    real_knowledge = os.path.realpath(walker.root / layout.folder)

    def check(rel: str, target: str) -> Finding | None:
        if not _inside(target, real_knowledge):
            return None  # elsewhere in the project: not any scope's page
        inner = os.path.relpath(target, real_knowledge).replace(os.sep, "/")
        here = folder_scope(layout.inner(rel) or "", layout)
        there = folder_scope("" if inner == "." else inner, layout)
        if here is not None and here == there:
            return None
        return Finding(
            "KB008",
            1,
            1,
            f"symlink '{rel}' leads into {_scope_name(there, layout)} from "
            f"{_scope_name(here, layout)} and is skipped",
            "a page's scope comes from its real path: move or copy the page instead of linking",
        )

    return check


def _scope_name(scope: str | None, layout: Layout) -> str:
    if scope is None:
        return f"{layout.folder}/ outside {layout.where_pages_go()}"
    return "global scope" if scope == "global" else f"the scope of {scope}"


def excluded_by(globs: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether `[knowledge] exclude` leaves a project-relative path out: a glob matches the
    path or one of its folders (`templates`, `templates/**` and `**/drafts` each leave out
    everything below the folder)."""
    patterns = [glob_regex(glob.rstrip("/")) for glob in globs]
    if not patterns:  # the usual case: no path's folders need listing
        return lambda rel: False

    def excluded(rel: str) -> bool:
        parts = rel.split("/")
        prefixes = ("/".join(parts[:n]) for n in range(1, len(parts) + 1))
        return any(p.fullmatch(prefix) for prefix in prefixes for p in patterns)

    return excluded


def _knowledge_skips(config: Config) -> set[str]:
    """The folders of a flat knowledge folder that are no pages of it: the semantic layer,
    the dbt project and knowl's output, when they lie inside it (`knowledge_dir = "."`)."""
    layout = config.layout
    own = [config.semantics_dir, config.out_dir]
    if config.dbt_project_dir:
        own.append(config.dbt_project_dir)
    return {
        f"{folder.strip('/')}/"
        for folder in own
        if layout.kind == FLAT and layout.inner(folder.strip("/")) is not None
    }


def _configured_folder(walker: _Walker, key: str, folder: str) -> None:
    """A configured folder (it may not exist) must not lead outside the project."""
    if not walker.inside(folder):
        raise ConfigError(
            f"{key} '{folder}' leads outside the project through a symlink; "
            "knowl reads nothing outside the project root"
        )


def discover(root: Path, config: Config) -> Discovery:
    git = GitRepo.find(root)
    knowledge = config.knowledge_dir
    semantics = config.semantics_dir
    tops = (
        knowledge,
        semantics,
        *([config.dbt_project_dir or "."] if config.dbt_project_dir is not None else []),
    )
    walker = _Walker(root, Discovery(root=root, git=git, knowledge_exists=False), tops)
    discovery = walker.discovery
    _configured_folder(walker, "knowledge_dir", knowledge)
    _configured_folder(walker, "semantics_dir", semantics)
    if config.dbt_project_dir is not None:
        _configured_folder(walker, "semantics.dbt.project_dir", config.dbt_project_dir or ".")
    discovery.knowledge_exists = (root / knowledge).is_dir()
    folders = [d for d in (knowledge, semantics) if (root / d).is_dir()]
    ignored = git.ignored([f"{d}/" for d in folders]) if git is not None and folders else set()
    if discovery.knowledge_exists:
        check = _scope_check(walker, config.layout)
        excluded = excluded_by(config.knowledge_exclude)
        skipped = ignored | _knowledge_skips(config)
        for rel in walker.walk(
            knowledge, skipped, wanted=lambda rel: not excluded(rel), check_link=check
        ):
            (discovery.pages if rel.endswith(".md") else discovery.other_files).append(rel)
    if (root / semantics).is_dir():
        discovery.semantic_files = walker.walk(
            semantics, ignored, wanted=lambda rel: rel.endswith((".yaml", ".yml"))
        )
    if config.dbt_project_dir is not None:
        _discover_dbt(walker, config, git)
    walker.refuse_ignored()
    return discovery


def _discover_dbt(walker: _Walker, config: Config, git: GitRepo | None) -> None:
    """The dbt project's dbt_project.yml and the YAML files of its model paths."""
    root, discovery = walker.root, walker.discovery
    project_dir = config.dbt_project_dir or ""
    project_file = f"{project_dir}/dbt_project.yml" if project_dir else "dbt_project.yml"
    if not walker.inside(project_file):
        discovery.report(project_file, _leaves(project_file))
        discovery.dbt = DbtProject(project_dir, config.dbt_connection or "dbt", ())
        return
    try:
        data: bytes | None = (root / project_file).read_bytes()
    except OSError:
        data = None
    else:
        discovery.dbt_project_file = project_file
    project, findings = read_dbt_project(project_dir, data, config.dbt_connection, walker.inside)
    discovery.dbt = project
    for finding in findings:
        discovery.report(project_file, finding)
    folders = []
    for folder in project.folders:
        if not walker.inside(folder):
            # Configured items were refused at their line; this is the default `models`.
            discovery.report(folder, _leaves(folder))
        elif (root / folder).is_dir():
            folders.append(folder)
    if git is not None and folders:
        ignored = git.ignored(["./" if f == "." else f"{f}/" for f in folders])
    else:
        ignored = set()
    files = {
        rel
        for folder in folders
        for rel in walker.walk(folder, ignored, wanted=project.is_model_file)
    }
    discovery.dbt_files = sorted(files)


def unread_because(root: Path, config: Config, path: str) -> str | None:
    """Why a page at project-relative `path` would not be read, or None: `[knowledge]
    exclude` leaves it out, it lies in a folder that holds no pages (the semantic layer,
    the dbt project, the output), or git ignores it. A write checks this before it writes a
    page nothing would read."""
    if excluded_by(config.knowledge_exclude)(path):
        return "is left out by [knowledge] exclude"
    if any(path.startswith(folder) for folder in _knowledge_skips(config)):
        return "lies in a folder that holds no pages (the semantic layer, dbt or the output)"
    git = GitRepo.find(root)
    if git is not None:
        try:
            if git.check_ignore([path]):
                return "is ignored by git"
        except GitFailed:
            return None
    return None
