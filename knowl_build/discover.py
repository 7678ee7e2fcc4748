"""Which files make the project (SPEC 1): pages, other knowledge files, semantic sources.

Files come from the file system, so new and unstaged files are checked too. Skipped: `.knowl/`,
`.git/`, paths git ignores, and every file or folder whose name starts with `.`. Symlinks that
resolve inside the project are followed; one that leaves the project is skipped with KB008.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.config import Config
from knowl_build.diagnostics import Finding
from knowl_build.history import GitRepo
from knowl_build.parse.dbt import DbtProject, read_dbt_project


@dataclass(slots=True)
class Discovery:
    root: Path
    git: GitRepo | None
    knowledge_exists: bool
    pages: list[str] = field(default_factory=list)  # .md files under knowledge/
    other_files: list[str] = field(default_factory=list)  # every other file under knowledge/
    semantic_files: list[str] = field(default_factory=list)
    findings: dict[str, list[Finding]] = field(default_factory=dict)  # KB008 by path
    dbt: DbtProject | None = None
    dbt_files: list[str] = field(default_factory=list)  # the dbt project's model YAML files


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _walk(root: Path, top: str, ignored: set[str], discovery: Discovery) -> list[str]:
    """Every regular file below `top` (project-relative), following symlinks inside the root."""
    real_root = os.path.realpath(root)
    ignored_dirs = tuple(p for p in ignored if p.endswith("/"))
    files: list[str] = []
    seen_dirs: set[str] = set()
    stack = [top]
    while stack:
        rel_dir = stack.pop()
        abs_dir = os.path.join(root, rel_dir)
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
            rel = f"{rel_dir}/{entry.name}"
            if rel in ignored or rel + "/" in ignored or rel.startswith(ignored_dirs):
                continue
            if entry.is_symlink():
                target = os.path.realpath(entry.path)
                if not _inside(target, real_root):
                    discovery.findings.setdefault(rel, []).append(
                        Finding(
                            "KB008",
                            1,
                            1,
                            f"symlink '{rel}' points outside the project and is skipped",
                        )
                    )
                    continue
                if not os.path.exists(target):
                    continue
            try:
                if entry.is_dir(follow_symlinks=True):
                    stack.append(rel)
                elif entry.is_file(follow_symlinks=True):
                    files.append(rel)
            except OSError:
                continue
    files.sort()
    return files


def discover(root: Path, config: Config) -> Discovery:
    git = GitRepo.find(root)
    knowledge = config.knowledge_dir
    semantics = config.semantics_dir
    discovery = Discovery(root=root, git=git, knowledge_exists=(root / knowledge).is_dir())
    folders = [d for d in (knowledge, semantics) if (root / d).is_dir()]
    ignored = git.ignored([f"{d}/" for d in folders]) if git is not None and folders else set()
    if discovery.knowledge_exists:
        for rel in _walk(root, knowledge, ignored, discovery):
            (discovery.pages if rel.endswith(".md") else discovery.other_files).append(rel)
    if (root / semantics).is_dir():
        discovery.semantic_files = [
            rel
            for rel in _walk(root, semantics, ignored, discovery)
            if rel.endswith((".yaml", ".yml"))
        ]
    if config.dbt_project_dir is not None:
        _discover_dbt(root, config, discovery, git)
    return discovery


def _discover_dbt(root: Path, config: Config, discovery: Discovery, git: GitRepo | None) -> None:
    """The dbt project's dbt_project.yml and the YAML files of its model paths."""
    project_dir = config.dbt_project_dir or ""
    project_file = f"{project_dir}/dbt_project.yml" if project_dir else "dbt_project.yml"
    try:
        data: bytes | None = (root / project_file).read_bytes()
    except OSError:
        data = None
    project, findings = read_dbt_project(project_dir, data, config.dbt_connection)
    discovery.dbt = project
    if findings:
        discovery.findings.setdefault(project_file, []).extend(findings)
    folders = [f"{project_dir}/{m}" if project_dir else m for m in project.model_paths]
    folders = [f for f in folders if (root / f).is_dir()]
    ignored = git.ignored([f"{f}/" for f in folders]) if git is not None and folders else set()
    files = {
        rel
        for folder in folders
        for rel in _walk(root, folder, ignored, discovery)
        if project.is_model_file(rel)
    }
    discovery.dbt_files = sorted(files)
