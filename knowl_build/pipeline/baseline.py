"""Adopting the gate on a repository that already has findings: `--baseline REF`.

The project is checked as it was at REF (a commit, branch or tag such as `origin/main`), in a
clone that borrows the repository's objects and checks out only the project's files, with
the same configuration; a finding of the working tree is *known* when the base has the same
finding, matched by code, path and subject (`Diagnostic.identity`, the SARIF partial
fingerprint without the occurrence), so a finding whose line moved is not new. Findings are
counted, not just matched: two broken links to the same page where the base had one is one
new finding (the later one in the file).
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from knowl_build.config import Config
from knowl_build.diagnostics import Diagnostic
from knowl_build.errors import UsageError
from knowl_build.history.git import GitFailed, GitRepo, first_line
from knowl_build.history.pages import checkout_at
from knowl_build.pipeline.cache import cache_place
from knowl_build.pipeline.check import check

PARSE_CACHE = "pages.jsonl"


@dataclass(frozen=True, slots=True)
class Baseline:
    ref: str  # as given
    commit: str  # what it resolved to
    findings: list[Diagnostic]

    def new(self, findings: list[Diagnostic]) -> tuple[list[Diagnostic], int]:
        """The findings that are not in the base, and how many known ones were hidden."""
        known = Counter(d.identity for d in self.findings)
        kept: list[Diagnostic] = []
        for diagnostic in sorted(findings):
            if known[diagnostic.identity] > 0:
                known[diagnostic.identity] -= 1
                continue
            kept.append(diagnostic)
        return kept, len(findings) - len(kept)

    def to_json(self, hidden: int) -> dict[str, object]:
        return {"ref": self.ref, "commit": self.commit, "hidden": hidden}


def load(root: Path, config: Config, ref: str) -> Baseline:
    """The findings of the project at `ref` (UsageError when it is not a revision here)."""
    repo = GitRepo.find(root)
    if repo is None:
        raise UsageError("--baseline needs a git repository: it compares against a revision")
    if not ref or ref.startswith("-"):
        raise UsageError(f"--baseline: '{ref}' is not a commit, branch or tag")
    try:
        commit = repo.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}").decode().strip()
    except GitFailed:
        hint = " (a shallow checkout: fetch it first, e.g. git fetch origin main)" * repo.shallow
        raise UsageError(f"--baseline: '{ref}' is not a commit, branch or tag here{hint}") from None
    paths = [config.knowledge_dir, config.semantics_dir, "knowl.toml", "pyproject.toml"]
    if config.dbt_project_dir is not None:
        paths.append(config.dbt_project_dir or ".")
    workdir = Path(tempfile.mkdtemp(prefix="knowl-baseline-"))
    try:
        try:
            project = checkout_at(repo, commit, paths, workdir / "repo")
        except GitFailed as exc:
            raise UsageError(f"--baseline: cannot check out '{ref}': {first_line(exc)}") from None
        _share_parse_cache(root, project)
        base = check(project, config)
        return Baseline(ref, commit, base.diagnostics)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _share_parse_cache(root: Path, project: Path) -> None:
    """Pages are cached by their content: most of the base's pages are the working tree's, so
    a copy of its parse cache spares parsing them again."""
    here = cache_place(root).folder
    if here is None or not (here / PARSE_CACHE).is_file():
        return
    there = project / ".knowl" / "cache"
    there.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(here / PARSE_CACHE, there / PARSE_CACHE)
